//! The TensorCore: what a program computes ([`execute`]) and how many
//! cycles it takes ([`cycle_model`]), both written from the instruction set
//! and the timing contract documented in `hw/tensorcore` (which this crate
//! does not depend on; it reads the same instruction words through
//! `config::tensorcore_isa`).
//!
//! # Results
//!
//! The state is the unified buffer (`ub_rows` x R int8), the accumulators
//! (`acc_rows` x C int32), the weight stream (weight-memory rows appended by
//! `RW` and prefetches, taken R at a time by `MM`), and the host output
//! window. Instructions run in order until `HALT`; everything is int8 x int8
//! products summed in wrapping int32, bias added wrapping, requantization
//! with [`crate::numerics::requant_int8`]. An `MM` appends its prefetch
//! before it takes its tile. Any address outside its memory, an `MM` whose
//! tile is not in the weight stream, or a read of a buffer or accumulator
//! row the program has not written (the hardware keeps whatever an earlier
//! run left there) is a [`ProgramError`].
//!
//! # Cycles
//!
//! [`cycle_model`] steps the contract cycle by cycle: the current
//! instruction's waits and transfers, the weight engine filling the MXU's
//! weight FIFO, and the MXU's weight side (FIFO of WF = next power of two
//! at least 2R rows plus a head row, the loader and its R - 1 cycle hold after a
//! first row, a tile's first row accepted only when R rows are loaded and
//! two cycles after the previous first row). Every cycle is charged to one
//! counter of [`Stats`]. The model needs no data: timing never depends on
//! values.

use crate::numerics::requant_int8;
use config::tensorcore_isa::{Activation, Instr};
use config::TensorCoreConfig;
use std::collections::VecDeque;
use std::fmt;

/// Cycles from an `ACT` row's accumulator read to its write.
const ACT_LATENCY: u64 = 4;
/// Cycles that must pass between two accepted first rows of tiles.
const FIRST_ROW_GAP: u64 = 2;

/// Why a program cannot run; names the instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramError(pub String);

impl fmt::Display for ProgramError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProgramError {}

/// The memories the host loads before a run.
#[derive(Debug, Clone, Default)]
pub struct Memories {
    /// Weight memory from row 0, rows of C int8 (the rest reads as zero).
    pub weights: Vec<i8>,
    /// Bias memory from row 0, rows of C int32 (the rest reads as zero).
    pub biases: Vec<i32>,
    /// The host input window, rows of R int8.
    pub host_in: Vec<i8>,
    /// Rows of the host output window (C int32 each).
    pub host_out_rows: usize,
}

/// Where the cycles went (they sum to `cycles`), and instructions retired.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    pub cycles: u64,
    /// The MXU accepted an activation row.
    pub mxu_busy: u64,
    /// An `MM` waited for its tile, or an instruction for room in the weight queue.
    pub stall_weights: u64,
    /// An `MM` or `RHM` waited for the activation unit's buffer writes.
    pub stall_ub: u64,
    /// An `ACT` waited for the MXU's accumulator writes.
    pub stall_drain: u64,
    /// An `ACT` moved rows through the activation unit.
    pub vpu: u64,
    /// An `RHM` moved rows from the host.
    pub host: u64,
    /// An `RW` was issued.
    pub issue: u64,
    /// A `SYNC` or `HALT` waited or retired.
    pub sync: u64,
    /// Instructions retired, `HALT` included.
    pub instructions: u64,
}

impl Stats {
    /// mxu_busy / cycles.
    pub fn mxu_busy_fraction(&self) -> f64 {
        self.mxu_busy as f64 / self.cycles as f64
    }

    /// The counters by name, in a fixed order (they sum to `cycles`).
    pub fn breakdown(&self) -> [(&'static str, u64); 8] {
        [
            ("mxu_busy", self.mxu_busy),
            ("stall_weights", self.stall_weights),
            ("stall_ub", self.stall_ub),
            ("stall_drain", self.stall_drain),
            ("vpu", self.vpu),
            ("host", self.host),
            ("issue", self.issue),
            ("sync", self.sync),
        ]
    }
}

/// Decodes a program: every word up to and including the first `HALT`.
pub fn decode(words: &[u128]) -> Result<Vec<Instr>, ProgramError> {
    let mut out = Vec::new();
    for (i, &w) in words.iter().enumerate() {
        let instr = Instr::decode(w).map_err(|e| ProgramError(format!("instruction {i}: {e}")))?;
        out.push(instr);
        if instr == Instr::Halt {
            return Ok(out);
        }
    }
    Err(ProgramError(format!(
        "the program ({} instructions) does not end with HALT",
        words.len()
    )))
}

fn check_range(
    i: usize,
    instr: &Instr,
    what: &str,
    start: u32,
    rows: u32,
    size: usize,
) -> Result<(), ProgramError> {
    if start as usize + rows as usize > size {
        return Err(ProgramError(format!(
            "instruction {i} ({instr}): {what} rows {start}..{} are outside its {size} rows",
            start as usize + rows as usize
        )));
    }
    Ok(())
}

/// Runs a program on the results side and returns the host output window
/// (row-major, `host_out_rows` x C).
pub fn execute(
    cfg: &TensorCoreConfig,
    words: &[u128],
    mem: &Memories,
) -> Result<Vec<i32>, ProgramError> {
    let instrs = decode(words)?;
    let r = cfg.rows() as usize;
    let c = cfg.cols() as usize;
    let mut ub = vec![0i8; cfg.ub_rows() as usize * r];
    let mut acc = vec![0i32; cfg.acc_rows() as usize * c];
    let mut out = vec![0i32; mem.host_out_rows * c];
    let mut stream: VecDeque<usize> = VecDeque::new();
    let host_in_rows = mem.host_in.len() / r;
    let weight_rows = cfg.weight_rows() as usize;
    let wrow = |row: usize, col: usize| mem.weights.get(row * c + col).copied().unwrap_or(0);
    let bias = |row: usize, col: usize| mem.biases.get(row * c + col).copied().unwrap_or(0);
    let mut tile = vec![0i32; r * c];
    // Rows this program has written: only those may be read.
    let mut ub_written = vec![false; cfg.ub_rows() as usize];
    let mut acc_written = vec![false; cfg.acc_rows() as usize];
    let unwritten = |i: usize,
                     instr: &Instr,
                     what: &str,
                     written: &[bool],
                     start: u32,
                     rows: u32| {
        match (start..start + rows).find(|&row| !written[row as usize]) {
            Some(row) => Err(ProgramError(format!(
                "instruction {i} ({instr}) reads {what} row {row}, which the program has not written"
            ))),
            None => Ok(()),
        }
    };
    for (i, instr) in instrs.iter().enumerate() {
        match *instr {
            Instr::Halt | Instr::Sync => {}
            Instr::ReadHost {
                host,
                ub: dst,
                rows,
            } => {
                check_range(i, instr, "host input", host, rows, host_in_rows)?;
                check_range(
                    i,
                    instr,
                    "unified buffer",
                    dst,
                    rows,
                    cfg.ub_rows() as usize,
                )?;
                let (s, d) = (host as usize * r, dst as usize * r);
                let n = rows as usize * r;
                ub[d..d + n].copy_from_slice(&mem.host_in[s..s + n]);
                ub_written[dst as usize..(dst + rows) as usize].fill(true);
            }
            Instr::ReadWeights { weight, rows } => {
                check_range(i, instr, "weight memory", weight, rows, weight_rows)?;
                stream.extend(weight as usize..(weight + rows) as usize);
            }
            Instr::Matmul {
                ub: src,
                acc: dst,
                rows,
                accumulate,
                prefetch,
            } => {
                check_range(
                    i,
                    instr,
                    "unified buffer",
                    src,
                    rows,
                    cfg.ub_rows() as usize,
                )?;
                check_range(i, instr, "accumulator", dst, rows, cfg.acc_rows() as usize)?;
                unwritten(i, instr, "unified buffer", &ub_written, src, rows)?;
                if accumulate {
                    unwritten(i, instr, "accumulator", &acc_written, dst, rows)?;
                }
                acc_written[dst as usize..(dst + rows) as usize].fill(true);
                if let Some(p) = prefetch {
                    check_range(i, instr, "weight memory", p, cfg.rows(), weight_rows)?;
                    stream.extend(p as usize..p as usize + r);
                }
                if stream.len() < r {
                    return Err(ProgramError(format!(
                        "instruction {i} ({instr}): the weight stream holds {} rows, a tile needs {r}",
                        stream.len()
                    )));
                }
                // The i-th row taken is the tile's row k = R-1-i (bottom first).
                for taken in 0..r {
                    let row = stream.pop_front().expect("checked above");
                    let k = r - 1 - taken;
                    for col in 0..c {
                        tile[k * c + col] = i32::from(wrow(row, col));
                    }
                }
                for j in 0..rows as usize {
                    let a = &ub[(src as usize + j) * r..(src as usize + j + 1) * r];
                    let out_row = &mut acc[(dst as usize + j) * c..(dst as usize + j + 1) * c];
                    if !accumulate {
                        out_row.fill(0);
                    }
                    for (k, &ak) in a.iter().enumerate() {
                        let ak = i32::from(ak);
                        for (o, &w) in out_row.iter_mut().zip(&tile[k * c..(k + 1) * c]) {
                            *o = o.wrapping_add(ak.wrapping_mul(w));
                        }
                    }
                }
            }
            Instr::Activate {
                acc: src,
                dest,
                rows,
                bias: brow,
                func,
            } => {
                check_range(i, instr, "accumulator", src, rows, cfg.acc_rows() as usize)?;
                check_range(i, instr, "bias memory", brow, 1, cfg.bias_rows() as usize)?;
                unwritten(i, instr, "accumulator", &acc_written, src, rows)?;
                match func {
                    Activation::Int32ToHost => {
                        check_range(i, instr, "host output", dest, rows, mem.host_out_rows)?
                    }
                    Activation::Requant { .. } => {
                        let ub_rows = cfg.ub_rows() as usize;
                        check_range(i, instr, "unified buffer", dest, rows, ub_rows)?;
                        ub_written[dest as usize..(dest + rows) as usize].fill(true);
                    }
                }
                for j in 0..rows as usize {
                    for col in 0..c {
                        let v = acc[(src as usize + j) * c + col]
                            .wrapping_add(bias(brow as usize, col));
                        let d = dest as usize + j;
                        match func {
                            Activation::Int32ToHost => out[d * c + col] = v,
                            Activation::Requant {
                                mult,
                                shift,
                                zp,
                                relu,
                            } => {
                                let h = requant_int8(v, mult, shift, i32::from(zp));
                                // r == c: a result column is a buffer element.
                                ub[d * r + col] = if relu { h.max(zp) } else { h };
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(out)
}

/// What the current cycle is charged to.
#[derive(Clone, Copy)]
enum Class {
    Busy,
    StallWeights,
    StallUb,
    StallDrain,
    Vpu,
    Host,
    Issue,
    Sync,
}

/// A weight read in the engine's queue.
struct Read {
    rows_left: u64,
    enqueued: u64,
}

/// The cycle model of a program (see the [module docs](self)).
pub fn cycle_model(cfg: &TensorCoreConfig, words: &[u128]) -> Result<Stats, ProgramError> {
    let instrs = decode(words)?;
    let r = u64::from(cfg.rows());
    let c = u64::from(cfg.cols());
    let wf = (2 * r).next_power_of_two();
    let queue_depth = cfg.weight_queue() as usize;
    let write_latency = r + c;
    // No event for this long means the program waits forever.
    let patience = 4 * (r + c + wf) + 64;

    let mut stats = Stats::default();
    let mut queue: VecDeque<Read> = VecDeque::new();
    // Last cycles a late write is scheduled for (-1: none yet).
    let (mut acc_busy, mut ub_busy) = (-1i64, -1i64);
    // The MXU's weight side.
    let (mut count, mut head) = (0u64, false);
    let (mut loaded, mut hold, mut since_first) = (0u64, 0u64, FIRST_ROW_GAP);
    // The current instruction's progress.
    let mut pc = 0usize;
    let mut started: Option<u64> = None;
    let mut done = 0u64;
    let mut y = 0u64;
    let mut last_event = 0u64;
    loop {
        let instr = instrs[pc];
        let yi = y as i64;
        let mut class = Class::Issue;
        let mut retire = false;
        let mut present = false;
        let mut enqueue: Option<u64> = None;
        match instr {
            Instr::ReadHost { rows, .. } => {
                if started.is_none() && yi > ub_busy {
                    started = Some(y);
                }
                match started {
                    None => class = Class::StallUb,
                    Some(y0) => {
                        class = Class::Host;
                        retire = y - y0 == u64::from(rows) - 1;
                    }
                }
            }
            Instr::ReadWeights { rows, .. } => {
                if queue.len() >= queue_depth {
                    class = Class::StallWeights;
                } else {
                    enqueue = Some(u64::from(rows));
                    retire = true;
                }
            }
            Instr::Matmul { prefetch, .. } => {
                if started.is_none() {
                    if yi <= ub_busy {
                        class = Class::StallUb;
                    } else if prefetch.is_some() && queue.len() >= queue_depth {
                        class = Class::StallWeights;
                    } else {
                        started = Some(y);
                        enqueue = prefetch.map(|_| r);
                    }
                }
                present = started.is_some();
            }
            Instr::Activate { rows, .. } => {
                if started.is_none() && yi > acc_busy {
                    started = Some(y);
                }
                match started {
                    None => class = Class::StallDrain,
                    Some(y0) => {
                        class = Class::Vpu;
                        ub_busy = (y + ACT_LATENCY) as i64;
                        retire = y - y0 == u64::from(rows) - 1;
                    }
                }
            }
            Instr::Sync | Instr::Halt => {
                class = Class::Sync;
                retire = yi > acc_busy && yi > ub_busy && queue.is_empty();
            }
        }

        // The weight engine: the oldest read seen (enqueued before y) writes
        // a row while the FIFO has room.
        let write = count < wf
            && queue
                .front()
                .is_some_and(|q| q.enqueued < y && q.rows_left > 0);
        // The MXU's weight side and its acceptance of the presented row.
        let first = present && done == 0;
        let ready = loaded == r && since_first >= FIRST_ROW_GAP;
        let accept = present && (!first || ready);
        let first_accept = accept && first;
        let loaded_now = if first_accept { 0 } else { loaded };
        let may_load = if r == 1 {
            true
        } else {
            !first_accept && hold == 0
        };
        let take = head && may_load && loaded_now < r;
        let fetch = count > 0 && (!head || take);
        count = count + u64::from(write) - u64::from(fetch);
        head = fetch || (head && !take);
        loaded = loaded_now + u64::from(take);
        hold = match (r, first_accept) {
            (1, _) => 0,
            (_, true) => r - 2,
            (_, false) => hold.saturating_sub(1),
        };
        since_first = if first_accept {
            1
        } else {
            (since_first + 1).min(FIRST_ROW_GAP)
        };
        if present {
            if accept {
                class = Class::Busy;
                done += 1;
                acc_busy = (y + write_latency) as i64;
                if let Instr::Matmul { rows, .. } = instr {
                    retire = done == u64::from(rows);
                }
            } else {
                class = Class::StallWeights;
            }
        }
        if write {
            let front = queue.front_mut().expect("a write has a read");
            front.rows_left -= 1;
            if front.rows_left == 0 {
                queue.pop_front();
            }
        }
        if let Some(rows) = enqueue {
            queue.push_back(Read {
                rows_left: rows,
                enqueued: y,
            });
        }
        match class {
            Class::Busy => stats.mxu_busy += 1,
            Class::StallWeights => stats.stall_weights += 1,
            Class::StallUb => stats.stall_ub += 1,
            Class::StallDrain => stats.stall_drain += 1,
            Class::Vpu => stats.vpu += 1,
            Class::Host => stats.host += 1,
            Class::Issue => stats.issue += 1,
            Class::Sync => stats.sync += 1,
        }
        if write || take || fetch || accept || retire || started == Some(y) {
            last_event = y;
        }
        if retire {
            stats.instructions += 1;
            if instr == Instr::Halt {
                stats.cycles = y + 1;
                return Ok(stats);
            }
            pc += 1;
            started = None;
            done = 0;
        } else if y - last_event > patience && !matches!(class, Class::Vpu | Class::Host) {
            return Err(ProgramError(format!(
                "instruction {pc} ({instr}) waits forever (cycle {y})"
            )));
        }
        y += 1;
    }
}

/// Runs a program: its host output window and its cycle counts.
pub fn run(
    cfg: &TensorCoreConfig,
    words: &[u128],
    mem: &Memories,
) -> Result<(Vec<i32>, Stats), ProgramError> {
    let out = execute(cfg, words, mem)?;
    let stats = cycle_model(cfg, words)?;
    Ok((out, stats))
}

#[cfg(test)]
mod tests {
    use super::*;
    use config::tensorcore_isa::Activation;

    fn words(instrs: &[Instr]) -> Vec<u128> {
        instrs.iter().map(Instr::encode).collect()
    }

    /// A 1x1 core, stepped by hand from the contract: RW retires in cycle 0
    /// (issue); its row is written into the FIFO in 1 (while RHM moves its
    /// row), moves to the head in 2, is loaded in 3; the MM, current from 2,
    /// has its row accepted in 4 (stall_weights 2, 3), written in 4 + 2 = 6;
    /// ACT waits through 6 (stall_drain 5, 6), reads in 7 and writes in 11;
    /// HALT waits through 11 and retires in 12.
    #[test]
    fn a_hand_stepped_program_on_a_1x1_core() {
        let cfg = TensorCoreConfig::with(1, 1, 2, 2, 2, 2, 2).unwrap();
        let program = words(&[
            Instr::ReadWeights { weight: 0, rows: 1 },
            Instr::ReadHost {
                host: 0,
                ub: 0,
                rows: 1,
            },
            Instr::Matmul {
                ub: 0,
                acc: 0,
                rows: 1,
                accumulate: false,
                prefetch: None,
            },
            Instr::Activate {
                acc: 0,
                dest: 0,
                rows: 1,
                bias: 0,
                func: Activation::Int32ToHost,
            },
            Instr::Halt,
        ]);
        let s = cycle_model(&cfg, &program).unwrap();
        assert_eq!(
            s,
            Stats {
                cycles: 13,
                mxu_busy: 1,
                stall_weights: 2,
                stall_ub: 0,
                stall_drain: 2,
                vpu: 1,
                host: 1,
                issue: 1,
                sync: 5,
                instructions: 5,
            }
        );
        let mem = Memories {
            weights: vec![-128],
            biases: vec![i32::MAX],
            host_in: vec![-128],
            host_out_rows: 1,
        };
        // -128 * -128 + (2^31 - 1) wraps.
        let out = execute(&cfg, &program, &mem).unwrap();
        assert_eq!(out, vec![16384i32.wrapping_add(i32::MAX)]);
    }

    #[test]
    fn programs_that_cannot_run_are_refused() {
        let cfg = TensorCoreConfig::with(2, 2, 2, 2, 2, 2, 2).unwrap();
        let mm = Instr::Matmul {
            ub: 0,
            acc: 0,
            rows: 1,
            accumulate: false,
            prefetch: None,
        };
        let mem = Memories::default();
        let e = execute(&cfg, &words(&[mm, Instr::Halt]), &mem).unwrap_err();
        assert!(e.0.contains("unified buffer row 0"), "{e}");
        let fill = Instr::ReadHost {
            host: 0,
            ub: 0,
            rows: 2,
        };
        let with_rows = Memories {
            host_in: vec![0; 4],
            ..Memories::default()
        };
        let e = execute(&cfg, &words(&[fill, mm, Instr::Halt]), &with_rows).unwrap_err();
        assert!(e.0.contains("weight stream"), "{e}");
        let act = Instr::Activate {
            acc: 1,
            dest: 0,
            rows: 1,
            bias: 0,
            func: Activation::Int32ToHost,
        };
        let e = execute(&cfg, &words(&[act, Instr::Halt]), &with_rows).unwrap_err();
        assert!(e.0.contains("accumulator row 1"), "{e}");
        assert!(cycle_model(&cfg, &words(&[mm, Instr::Halt])).is_err());
        let e = execute(&cfg, &words(&[mm]), &mem).unwrap_err();
        assert!(e.0.contains("HALT"), "{e}");
        let rhm = Instr::ReadHost {
            host: 0,
            ub: 1,
            rows: 2,
        };
        let e = execute(
            &cfg,
            &words(&[rhm, Instr::Halt]),
            &Memories {
                host_in: vec![0; 4],
                ..Memories::default()
            },
        )
        .unwrap_err();
        assert!(e.0.contains("unified buffer rows 1..3"), "{e}");
        assert!(decode(&[15]).is_err());
    }
}

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
//! before it takes its tile. A [`ProgramError`] is: any address outside its
//! memory; an `MM` whose tile is not in the weight stream; a read of a
//! buffer or accumulator row the program has not written (the hardware
//! keeps whatever an earlier run left there); an `MM` without the wait flag
//! reading a buffer row an `ACT` wrote since the last wait for the
//! activation unit (`MM.wait`, `RHM`, `SYNC`); an `MM.add` starting at the
//! row the previous multi-row `MM` ended on (the MXU's read-modify-write
//! rule).
//!
//! # Cycles
//!
//! [`cycle_model`] steps the contract cycle by cycle: the current
//! instruction's waits and transfers, the activation unit working through
//! the `ACT` it holds, the weight engine filling the MXU's weight FIFO, and
//! the MXU's weight side (FIFO of WF = next power of two at least 2R rows
//! plus a head row, the loader and its R - 1 cycle hold after a first row, a
//! tile's first row accepted only when R rows are loaded and two cycles
//! after the previous first row). Every cycle is charged to one of the
//! sequencer's counters of [`Stats`]; the unit's run beside them. The model
//! needs no data: timing never depends on values. The configuration's
//! `depth` D moves the two late writes only: an accepted MXU row lands
//! after the write latency of [`crate::mxu::MxuTiming`] for the MXU inside
//! (`TensorCoreConfig::mxu`, R + P + C), an `ACT` row 4 + D cycles after
//! its read ([`act_latency`]).

use crate::numerics::requant_int8;
use config::tensorcore_isa::{Activation, Instr};
use config::TensorCoreConfig;
use std::collections::VecDeque;
use std::fmt;

/// Cycles from an `ACT` row's accumulator read to its write at depth 0;
/// each depth adds one.
const ACT_LATENCY: u64 = 4;

/// Cycles from an `ACT` row's accumulator read to its write at `cfg`'s depth.
pub fn act_latency(cfg: &TensorCoreConfig) -> u64 {
    ACT_LATENCY + u64::from(cfg.depth())
}

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

/// Where the sequencer's cycles went (they sum to `cycles`), instructions
/// retired, and what the activation unit did beside it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    pub cycles: u64,
    /// The MXU accepted an activation row.
    pub mxu_busy: u64,
    /// An `MM` waited for its tile, or an instruction for room in the weight queue.
    pub stall_weights: u64,
    /// An `MM.wait` or `RHM` waited for the activation unit and its buffer writes.
    pub stall_ub: u64,
    /// An `ACT` waited for the activation unit, or an `MM` for it to read
    /// accumulator rows the `MM` writes.
    pub stall_vpu: u64,
    /// An `RHM` moved rows from the host.
    pub host: u64,
    /// An `RW` or an `ACT` was issued.
    pub issue: u64,
    /// A `SYNC` or `HALT` waited or retired.
    pub sync: u64,
    /// Instructions retired, `HALT` included.
    pub instructions: u64,
    /// Cycles the activation unit read an accumulator row (not in the sum).
    pub act_rows: u64,
    /// Cycles the activation unit held an `ACT` waiting for the MXU's
    /// accumulator writes (not in the sum).
    pub act_drain: u64,
}

impl Stats {
    /// mxu_busy / cycles.
    pub fn mxu_busy_fraction(&self) -> f64 {
        self.mxu_busy as f64 / self.cycles as f64
    }

    /// The sequencer's counters by name, in a fixed order (they sum to `cycles`).
    pub fn breakdown(&self) -> [(&'static str, u64); 7] {
        [
            ("mxu_busy", self.mxu_busy),
            ("stall_weights", self.stall_weights),
            ("stall_ub", self.stall_ub),
            ("stall_vpu", self.stall_vpu),
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
    // Buffer rows an ACT wrote since the last wait for the activation unit:
    // an MM without the wait flag may not read them.
    let mut ub_dirty = vec![false; cfg.ub_rows() as usize];
    // The previous MM's last accumulator row and its row count.
    let mut last_mm: Option<(u32, u32)> = None;
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
            // These wait for the activation unit: its writes have landed.
            Instr::Halt | Instr::Sync => ub_dirty.fill(false),
            Instr::ReadHost {
                host,
                ub: dst,
                rows,
            } => {
                ub_dirty.fill(false);
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
                wait_act,
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
                if wait_act {
                    ub_dirty.fill(false);
                }
                if let Some(row) = (src..src + rows).find(|&row| ub_dirty[row as usize]) {
                    return Err(ProgramError(format!(
                        "instruction {i} ({instr}) reads unified buffer row {row}, which an ACT \
                         may still be writing: it needs the wait flag"
                    )));
                }
                if accumulate {
                    unwritten(i, instr, "accumulator", &acc_written, dst, rows)?;
                    // The MXU's read-modify-write of a row accepted right
                    // after another to the same row would miss that one's
                    // write; the first-row gap covers one-row MMs.
                    if let Some((last, n)) = last_mm.filter(|&(last, n)| last == dst && n > 1) {
                        return Err(ProgramError(format!(
                            "instruction {i} ({instr}) adds into accumulator row {last}, the last \
                             row of the {n}-row MM before it, in the next cycle"
                        )));
                    }
                }
                last_mm = Some((dst + rows - 1, rows));
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
                        ub_dirty[dest as usize..(dest + rows) as usize].fill(true);
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
    StallVpu,
    Host,
    Issue,
    Sync,
}

/// A weight read in the engine's queue.
struct Read {
    rows_left: u64,
    enqueued: u64,
}

/// The `ACT` the activation unit holds.
struct Held {
    /// Its first accumulator row and row count.
    acc: u64,
    rows: u64,
    /// Rows read so far.
    done: u64,
    /// It may read from the first cycle after this one (`acc_busy` at hand-over).
    drain: i64,
    /// The cycle it was handed over (it is held from the next).
    handed: u64,
}

/// The cycle model of a program (see the [module docs](self)).
pub fn cycle_model(cfg: &TensorCoreConfig, words: &[u128]) -> Result<Stats, ProgramError> {
    let instrs = decode(words)?;
    let r = u64::from(cfg.rows());
    let c = u64::from(cfg.cols());
    let wf = (2 * r).next_power_of_two();
    let queue_depth = cfg.weight_queue() as usize;
    // The MXU inside at its depth: its write latency R + P + C and the gap
    // between two first rows (hw/mxu/TIMING.md, D1 and A2).
    let mxu = crate::mxu::MxuTiming::new(&cfg.mxu(), 1, 1, 1);
    let write_latency = mxu.write_latency();
    let first_row_gap = mxu.first_row_gap();
    let act_latency = act_latency(cfg);
    // No event for this long means the program waits forever.
    let patience = 4 * (r + c + wf) + 64;

    let mut stats = Stats::default();
    let mut queue: VecDeque<Read> = VecDeque::new();
    // Last cycles a late write is scheduled for (-1: none yet).
    let (mut acc_busy, mut ub_busy) = (-1i64, -1i64);
    let mut held: Option<Held> = None;
    // The MXU's weight side.
    let (mut count, mut head) = (0u64, false);
    let (mut loaded, mut hold, mut since_first) = (0u64, 0u64, first_row_gap);
    // The current instruction's progress.
    let mut pc = 0usize;
    let mut started: Option<u64> = None;
    let mut done = 0u64;
    let mut y = 0u64;
    let mut last_event = 0u64;
    loop {
        let instr = instrs[pc];
        let yi = y as i64;
        // The unit's state at the start of the cycle.
        let act_busy = held.as_ref().is_some_and(|h| h.handed < y);
        let ub_settled = !act_busy && yi > ub_busy;
        let mut class = Class::Issue;
        let mut retire = false;
        let mut present = false;
        let mut enqueue: Option<u64> = None;
        let mut hand: Option<Held> = None;
        match instr {
            Instr::ReadHost { rows, .. } => {
                if started.is_none() && ub_settled {
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
            Instr::Matmul {
                acc,
                rows,
                prefetch,
                wait_act,
                ..
            } => {
                if started.is_none() {
                    let (b, n) = (u64::from(acc), u64::from(rows));
                    let overlap = held.as_ref().is_some_and(|h| {
                        h.handed < y && h.acc + h.done < b + n && b < h.acc + h.rows
                    });
                    if wait_act && !ub_settled {
                        class = Class::StallUb;
                    } else if overlap {
                        class = Class::StallVpu;
                    } else if prefetch.is_some() && queue.len() >= queue_depth {
                        class = Class::StallWeights;
                    } else {
                        started = Some(y);
                        enqueue = prefetch.map(|_| r);
                    }
                }
                present = started.is_some();
            }
            Instr::Activate { acc, rows, .. } => {
                if act_busy {
                    class = Class::StallVpu;
                } else {
                    hand = Some(Held {
                        acc: u64::from(acc),
                        rows: u64::from(rows),
                        done: 0,
                        drain: acc_busy,
                        handed: y,
                    });
                    retire = true;
                }
            }
            Instr::Sync | Instr::Halt => {
                class = Class::Sync;
                retire = yi > acc_busy && ub_settled && queue.is_empty();
            }
        }

        // The activation unit reads one row a cycle once its drain has passed.
        let mut unit_read = false;
        if let Some(h) = held.as_mut().filter(|h| h.handed < y) {
            if yi > h.drain {
                unit_read = true;
                stats.act_rows += 1;
                ub_busy = (y + act_latency) as i64;
                h.done += 1;
            } else {
                stats.act_drain += 1;
            }
        }
        if held.as_ref().is_some_and(|h| h.done == h.rows) {
            held = None;
        }
        if let Some(h) = hand {
            held = Some(h);
        }

        // The weight engine: the oldest read seen (enqueued before y) writes
        // a row while the FIFO has room.
        let write = count < wf
            && queue
                .front()
                .is_some_and(|q| q.enqueued < y && q.rows_left > 0);
        // The MXU's weight side and its acceptance of the presented row.
        let first = present && done == 0;
        let ready = loaded == r && since_first >= first_row_gap;
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
            (since_first + 1).min(first_row_gap)
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
            Class::StallVpu => stats.stall_vpu += 1,
            Class::Host => stats.host += 1,
            Class::Issue => stats.issue += 1,
            Class::Sync => stats.sync += 1,
        }
        if write || take || fetch || accept || retire || unit_read || started == Some(y) {
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
        } else if y - last_event > patience && !matches!(class, Class::Host) {
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
    /// has its row accepted in 4 (stall_weights 2, 3), written in 4 + 2 = 6.
    /// ACT hands itself over in 5 (issue, drain 6); the unit holds it from
    /// 6, waits in 6 (act_drain), reads in 7 (act_rows) and writes in 11;
    /// HALT waits from 6 through 11 and retires in 12 (sync 6..12). Then
    /// the same at depth 1.
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
                wait_act: false,
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
                stall_vpu: 0,
                host: 1,
                issue: 2,
                sync: 7,
                instructions: 5,
                act_rows: 1,
                act_drain: 1,
            }
        );
        // At depth 1 the MXU's write lands a cycle later (4 + 3 = 7) and the
        // ACT's four plus one after its read: the unit waits in 6 and 7,
        // reads in 8, writes in 13; HALT retires in 14.
        let deep = cfg.with_depth(1).unwrap();
        assert_eq!(
            cycle_model(&deep, &program).unwrap(),
            Stats {
                cycles: 15,
                sync: 9,
                act_drain: 2,
                ..s
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
            wait_act: false,
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
        // Two rows into accumulator rows 0, 1; then an ACT into buffer row 1.
        let rw = Instr::ReadWeights { weight: 0, rows: 2 };
        let mm2 = Instr::Matmul {
            ub: 0,
            acc: 0,
            rows: 2,
            accumulate: false,
            prefetch: None,
            wait_act: false,
        };
        let act_ub = Instr::Activate {
            acc: 0,
            dest: 1,
            rows: 1,
            bias: 0,
            func: Activation::Requant {
                mult: 1 << 30,
                shift: 0,
                zp: 0,
                relu: false,
            },
        };
        let mm_at = |ub, acc, accumulate, wait_act| Instr::Matmul {
            ub,
            acc,
            rows: 1,
            accumulate,
            prefetch: Some(0),
            wait_act,
        };
        let run = |p: &[Instr]| execute(&cfg, &words(p), &with_rows);
        let e = run(&[
            fill,
            rw,
            mm2,
            act_ub,
            mm_at(1, 0, false, false),
            Instr::Halt,
        ])
        .unwrap_err();
        assert!(e.0.contains("wait flag"), "{e}");
        assert!(run(&[fill, rw, mm2, act_ub, mm_at(1, 0, false, true), Instr::Halt]).is_ok());
        assert!(run(&[
            fill,
            rw,
            mm2,
            act_ub,
            Instr::Sync,
            mm_at(1, 0, false, false),
            Instr::Halt
        ])
        .is_ok());
        // Adding into row 1, the last row of the two-row MM, right after it.
        let e = run(&[fill, rw, mm2, mm_at(0, 1, true, false), Instr::Halt]).unwrap_err();
        assert!(e.0.contains("the last row"), "{e}");
        assert!(run(&[fill, rw, mm2, mm_at(0, 0, true, false), Instr::Halt]).is_ok());
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

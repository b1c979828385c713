//! TensorCore v2's cycle model: the cycles and counters of a program, from
//! the timing contract in `hw/tensorcore2`'s crate docs, with the VPU's
//! contract ([`crate::vpu::VpuTimer`]), the EUP's latency
//! (`config::EupConfig::latency`) and the MXU's weight-side and acceptance
//! rules (`hw/mxu/TIMING.md`, as [`crate::mxu::MxuTiming`] states them).
//!
//! It steps cycle by cycle. Cycle 0 is the first cycle an instruction is
//! current; in each cycle it decides, from the state at the start of the
//! cycle, what the current instruction does, what the weight engine, the
//! MXU's weight side, the VPU and the EUP do, then moves every state on.
//! Values do not matter to timing, so none are computed: the functional
//! model is `golden::tensorcore2`.

use crate::mxu::MxuTiming;
use crate::vpu::VpuTimer;
use config::tensorcore2_isa::Instr;
use config::vpu_isa::Bundle;
use config::TensorCore2Config;
use std::collections::VecDeque;

/// A run's cycles (from cycle 0 through the cycle `HALT` retires) and its
/// counters, as the RTL's `cnt_*_o` ports count them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counters {
    pub cycles: u64,
    /// Instructions retired, `HALT` included.
    pub instructions: u64,
    /// Cycles the VPU is busy (a bundle in execute or write-back).
    pub vpu_busy: u64,
    /// Cycles in which an `MM` row is taken or an accumulator write is
    /// still to land.
    pub mxu_busy: u64,
    /// Operations entering the EUP.
    pub eup_ops: u64,
    /// Cycles the mover works on an instruction after its waits.
    pub mover: u64,
    /// Cycles mover instructions wait.
    pub wait: u64,
}

/// Where the current instruction is (the contract's phases).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Its first cycle (every instruction), where `VPU`, `RW`, `SYNC` and
    /// `HALT` also run to retirement.
    Issue,
    /// A mover instruction waiting.
    Wait,
    /// `HIN`, `HOUT`, `EUP`.
    Stream,
    /// `MM`, `RWV`: reading a row (`k` reads issued).
    RowRead,
    /// `MM`, `RWV`: offering the row.
    RowOffer,
    /// `MV`: the accumulator read's cycle.
    AccRead,
    /// `MV`: waiting for the row (cycles waited).
    AccWait,
    /// `MV`: writing element `k`.
    AccWrite,
}

/// The cycle model of `program` on `cfg`, run to its first `HALT`. Errors
/// (one line): a program without `HALT`, or one that waits forever (an `MM` whose tile is
/// never in the weight stream, an `RWV` that overfills it).
pub fn cycle_model(cfg: &TensorCore2Config, program: &[Instr]) -> Result<Counters, String> {
    // The core runs to its first HALT (it takes no word after it), as the
    // golden machine does.
    if !program.contains(&Instr::Halt) {
        return Err(format!(
            "the program ({} instructions) has no HALT",
            program.len()
        ));
    }
    let r = u64::from(cfg.rows());
    let c = u64::from(cfg.cols());
    let mxu = MxuTiming::new(&cfg.mxu(), 1, 1, 1);
    let write_latency = mxu.write_latency();
    let first_row_gap = mxu.first_row_gap();
    let loader_hold = mxu.loader_hold();
    let read_latency = mxu.read_latency();
    let wf = mxu.weight_fifo_rows();
    let eup_latency = u64::from(cfg.eup().latency());
    let queue_depth = cfg.weight_queue() as usize;
    let w = u64::from(cfg.elems());
    // Rows of R = C elements fit one word: one access moves an aligned row.
    let word_rows = r <= w;
    let patience = 4 * (r + c + wf + eup_latency + write_latency) + 256;

    let mut k = Counters::default();
    let mut vpu = VpuTimer::new(&cfg.vpu());
    // The weight queue: rows left per read, oldest first.
    let mut queue: VecDeque<u64> = VecDeque::new();
    // Cycles until the last accepted row's accumulator write has landed.
    let mut acc_wait = 0u64;
    // The MXU's weight side: FIFO rows, its head register, rows loaded for
    // the next tile, the loader's hold, cycles since the last first row.
    let (mut count, mut head) = (0u64, false);
    let (mut loaded, mut hold, mut since_first) = (0u64, 0u64, first_row_gap);
    // Cycles at which EUP results leave the unit, in order.
    let mut eup_out: VecDeque<u64> = VecDeque::new();

    let mut pc = 0usize;
    let mut phase = Phase::Issue;
    // The mover's progress: stream reads and writes, row j, element k,
    // whether a read was issued last cycle.
    let (mut rd, mut wr, mut row, mut elem) = (0u64, 0u64, 0u64, 0u64);
    let mut rd_pending = false;
    let mut y = 0u64;
    let mut last_event = 0u64;
    loop {
        let instr = program[pc];
        let vpu_busy = vpu.busy();
        let acc_idle = acc_wait == 0;
        let q_empty = queue.is_empty();
        let drained = !vpu_busy && q_empty && acc_idle;
        // The MXU's readies from the start of the cycle.
        let w_ready = count < wf;
        let tile_ready = loaded == r && since_first >= first_row_gap;

        let mut retire = false;
        let mut offered: Option<Bundle> = None;
        let mut enqueue: Option<u64> = None;
        let mut a_valid = false;
        let mut rwv_offer = false;
        let mut eup_in = false;
        let mut next_pending = false;
        let mut next_phase = phase;
        let n = count_of(&instr);
        let eup_result = eup_out.front() == Some(&y);
        // An MM's row 0 is a tile's first row for the MXU.
        let first_row = row == 0;
        match phase {
            Phase::Issue => match instr {
                Instr::Vpu { bundle } => offered = Some(Bundle::decode(bundle)),
                Instr::ReadWeights { n, .. } => {
                    if queue.len() < queue_depth {
                        enqueue = Some(u64::from(n));
                        retire = true;
                    }
                }
                Instr::Sync | Instr::Halt => retire = drained,
                _ => next_phase = Phase::Wait,
            },
            Phase::Wait => {
                let ready = !vpu_busy
                    && (!matches!(instr, Instr::ReadWeightsVmem { .. }) || q_empty)
                    && (!matches!(instr, Instr::MoveAcc { .. }) || acc_idle);
                if ready {
                    (rd, wr, row, elem) = (0, 0, 0, 0);
                    next_phase = match instr {
                        Instr::Matmul { .. } | Instr::ReadWeightsVmem { .. } => Phase::RowRead,
                        Instr::MoveAcc { .. } => Phase::AccRead,
                        _ => Phase::Stream,
                    };
                }
            }
            Phase::Stream => {
                let pairs = matches!(instr, Instr::Eup { op, .. } if op.binary());
                let reads = if pairs { 2 * n } else { n };
                let mut wrote = false;
                let mut read = false;
                match instr {
                    Instr::Eup { op, .. } => {
                        if eup_result {
                            wrote = true;
                        } else if rd < reads {
                            read = true;
                        }
                        // An operand read last cycle arrives: the element's
                        // last one enters the unit.
                        if rd_pending && (!op.binary() || rd % 2 == 0) {
                            eup_in = true;
                        }
                    }
                    _ => {
                        read = rd < reads;
                        wrote = rd_pending;
                    }
                }
                if read {
                    rd += 1;
                    next_pending = true;
                }
                if wrote {
                    wr += 1;
                    if wr == n {
                        retire = true;
                    }
                }
            }
            Phase::RowRead => {
                if elem < r {
                    // A row inside one word, from its first element: one read.
                    elem = if elem == 0 && word_rows && row_start(&instr, row).is_multiple_of(w) {
                        r
                    } else {
                        elem + 1
                    };
                    next_pending = true;
                } else {
                    next_phase = Phase::RowOffer;
                }
            }
            Phase::RowOffer => {
                let taken = if matches!(instr, Instr::Matmul { .. }) {
                    a_valid = true;
                    row > 0 || tile_ready
                } else {
                    rwv_offer = true;
                    w_ready
                };
                if taken {
                    row += 1;
                    elem = 0;
                    if row == n {
                        retire = true;
                    } else {
                        next_phase = Phase::RowRead;
                    }
                }
            }
            Phase::AccRead => next_phase = Phase::AccWait,
            Phase::AccWait => {
                elem += 1;
                if elem == read_latency {
                    elem = 0;
                    next_phase = Phase::AccWrite;
                }
            }
            Phase::AccWrite => {
                let whole = word_rows && row_start(&instr, row).is_multiple_of(w);
                if whole || elem == c - 1 {
                    elem = 0;
                    row += 1;
                    if row == n {
                        retire = true;
                    } else {
                        next_phase = Phase::AccRead;
                    }
                } else {
                    elem += 1;
                }
            }
        }

        // The VPU: the bundle offered (if any), its acceptance.
        let step = vpu.step(offered.as_ref());
        if step.accepted {
            retire = true;
        }
        // The EUP: a result leaves `latency` cycles after its operation enters.
        if eup_result {
            eup_out.pop_front();
        }
        if eup_in {
            eup_out.push_back(y + eup_latency);
        }

        // The weight engine writes the oldest read's next row while the FIFO
        // has room; RWV offers on the same port.
        let engine_write = w_ready && queue.front().is_some();
        let write = engine_write || (rwv_offer && w_ready);
        // The MXU's acceptance and weight side (v1's rules, hw/mxu/TIMING.md).
        let first = a_valid && first_row;
        let accept = a_valid && (!first || tile_ready);
        let first_accept = accept && first;
        let loaded_now = if first_accept { 0 } else { loaded };
        // L2: no load from a first row's cycle until (R - 1) L cycles after it.
        let may_load = if first_accept {
            loader_hold == 0
        } else {
            hold == 0
        };
        let take = head && may_load && loaded_now < r;
        let fetch = count > 0 && (!head || take);
        count = count + u64::from(write) - u64::from(fetch);
        head = fetch || (head && !take);
        loaded = loaded_now + u64::from(take);
        hold = if first_accept {
            loader_hold.saturating_sub(1)
        } else {
            hold.saturating_sub(1)
        };
        since_first = if first_accept {
            1
        } else {
            (since_first + 1).min(first_row_gap)
        };
        acc_wait = if accept {
            write_latency
        } else {
            acc_wait.saturating_sub(1)
        };
        if engine_write {
            let front = queue.front_mut().expect("a write has a read");
            *front -= 1;
            if *front == 0 {
                queue.pop_front();
            }
        }
        if let Some(rows) = enqueue {
            queue.push_back(rows);
        }

        // Counters of this cycle.
        k.vpu_busy += u64::from(vpu_busy);
        k.mxu_busy += u64::from(accept || !acc_idle);
        k.eup_ops += u64::from(eup_in);
        k.wait += u64::from(phase == Phase::Wait);
        k.mover += u64::from(!matches!(phase, Phase::Issue | Phase::Wait));
        if write || take || fetch || accept || retire || eup_in || eup_result || next_phase != phase
        {
            last_event = y;
        }
        rd_pending = next_pending;
        if retire {
            k.instructions += 1;
            if instr == Instr::Halt {
                k.cycles = y + 1;
                return Ok(k);
            }
            pc += 1;
            phase = Phase::Issue;
        } else {
            phase = next_phase;
            let streaming = matches!(phase, Phase::Stream | Phase::RowRead | Phase::AccWrite);
            if !streaming && !vpu_busy && y - last_event > patience {
                return Err(format!(
                    "instruction {pc} ({instr}) waits forever (cycle {y}; {phase:?}, VPU busy \
                     {vpu_busy}, weight reads queued {}, FIFO {count}, head {head}, tile rows \
                     {loaded}, accumulator writes pending {acc_wait})",
                    queue.len()
                ));
            }
        }
        y += 1;
    }
}

/// The element address where row `j` of a row instruction starts: `MM`'s
/// and `MV`'s rows go up from their first, `RWV`'s come last first.
fn row_start(instr: &Instr, j: u64) -> u64 {
    match *instr {
        Instr::Matmul { src, stride, .. } => u64::from(src) + j * u64::from(stride),
        Instr::ReadWeightsVmem { src, stride, n } => {
            u64::from(src) + (u64::from(n) - 1 - j) * u64::from(stride)
        }
        Instr::MoveAcc { dst, stride, .. } => u64::from(dst) + j * u64::from(stride),
        _ => 0,
    }
}

/// The count field of a mover instruction (1 for the others).
fn count_of(instr: &Instr) -> u64 {
    u64::from(match *instr {
        Instr::HostIn { n, .. }
        | Instr::HostOut { n, .. }
        | Instr::ReadWeights { n, .. }
        | Instr::ReadWeightsVmem { n, .. }
        | Instr::Matmul { n, .. }
        | Instr::MoveAcc { n, .. }
        | Instr::Eup { n, .. } => n,
        _ => 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_runs_to_its_first_halt() {
        let cfg = TensorCore2Config::new(2, 2, 1).unwrap();
        let to_halt = [Instr::Sync, Instr::Halt];
        let longer = [Instr::Sync, Instr::Halt, Instr::Sync, Instr::Halt];
        let k = cycle_model(&cfg, &to_halt).unwrap();
        assert_eq!(cycle_model(&cfg, &longer).unwrap(), k);
        assert_eq!((k.cycles, k.instructions), (2, 2));
        assert!(cycle_model(&cfg, &[Instr::Sync])
            .unwrap_err()
            .contains("no HALT"));
    }
}

//! The TensorCore: a sequencer that runs a quantized network through a
//! unified buffer, the MXU and an activation unit, with the next layer's
//! weights loading behind the compute.
//!
//! This crate's documentation is the TensorCore's specification: the
//! machine, its instruction set and its timing contract; the crate builds
//! the RTL to it ([`build`], registered as the `tensorcore` block).
//! `golden::tensorcore` states both the results and the cycles from this
//! text alone; `compiler` writes programs for it; the instruction words' bit
//! positions live in `config::tensorcore_isa`, shared by all four.
//!
//! # The machine
//!
//! One configuration ([`config::TensorCoreConfig`]) sizes everything. R = C
//! is the array size (the array is square: an accumulator row of C results
//! becomes one buffer row of R activations for the next layer).
//!
//! ```text
//!  host input window ──RHM──► unified buffer (ub_rows x R int8) ──MM──► MXU R x C ──► accumulators
//!                                   ▲                                   ▲               (acc_rows x C int32)
//!                                   │                                   │                     │
//!                                   └─────────── ACT (bias, requant, ReLU) ◄──────────────────┘
//!  weight memory (weight_rows x C int8) ──RW / MM prefetch──► weight queue ──► MXU weight FIFO
//!  bias memory (bias_rows x C int32) ──► ACT            ACT.i32 ──► host output window (C int32 rows)
//! ```
//!
//! - **Unified buffer (UB)**: `ub_rows` rows of R int8 activations; one row
//!   is one activation row of one k-tile (what the MXU takes per cycle).
//! - **Weight memory**: `weight_rows` rows of C int8 weights, loaded by the
//!   host before a run (it stands for HBM). A weight tile is R consecutive
//!   rows, bottom row (k = R-1) first, as the MXU's weight port takes them.
//! - **Bias memory**: `bias_rows` rows of C int32 biases, loaded by the host.
//! - **Host windows**: the input window holds rows of R int8 (the host's
//!   DMA source), the output window rows of C int32 (its destination); both
//!   are addressed with 22 bits.
//! - **MXU**: the `hw/mxu` array, int8, with `acc_rows` accumulator rows and
//!   its weight FIFO of WF = the next power of two >= 2R rows.
//! - **Activation unit**: C lanes; per accumulator row it adds the bias row
//!   and requantizes (`docs/numerics.md#requantization`) with an optional ReLU
//!   in the quantized domain, h = max(requant(acc + b), zp), or passes
//!   acc + b on as int32 to the host. It holds one `ACT` at a time and
//!   works through it beside the sequencer.
//! - **Weight engine**: a queue of up to `weight_queue` weight reads; it
//!   feeds the MXU's weight FIFO one row per cycle while the FIFO has room,
//!   independently of the sequencer, so weights load while other
//!   instructions run.
//!
//! # Instruction set
//!
//! 128-bit words, executed in order (field table in
//! `config::tensorcore_isa`). Row counts n are 1..65535. Every address must
//! lie inside its memory (a program that leaves one is refused).
//!
//! | mnemonic | fields | effect |
//! | --- | --- | --- |
//! | `RHM ub, host, n` | a = host, b = ub | UB\[ub + j\] = IN\[host + j\], j < n |
//! | `RW w, n` | a = w | append weight rows W\[w .. w + n\] to the weight stream |
//! | `MM acc, ub, n` (`.add`, `.wait`, `; RW w`) | a = ub, b = acc, d = w | take the next R rows of the weight stream as a tile T (the i-th row taken is T\[R-1-i\]); ACC\[acc + j\]\[c\] = (add ? ACC\[acc + j\]\[c\] : 0) + sum_k UB\[ub + j\]\[k\] * T\[k\]\[c\], wrapping int32; with the prefetch flag, also append W\[w .. w + R\]; `.wait` only delays it (timing contract) |
//! | `ACT.rq[.relu] ub, acc, bias, n, mult, shift, zp` | a = acc, b = ub, c = bias | v = ACC\[acc + j\]\[c\] + B\[bias\]\[c\] (wrapping); h = requant_int8(v, mult, shift, zp); with .relu h = max(h, zp); UB\[ub + j\]\[c\] = h |
//! | `ACT.i32 host, acc, bias, n` | a = acc, b = host, c = bias | OUT\[host + j\]\[c\] = ACC\[acc + j\]\[c\] + B\[bias\]\[c\] (wrapping) |
//! | `SYNC` | | wait until everything issued before has finished |
//! | `HALT` | | `SYNC`, then stop (the end of every program) |
//!
//! An `MM` appends its prefetch before it takes its tile. An `MM` whose tile
//! is not in the weight stream (fewer than R rows appended and not yet
//! taken) is a program error: the machine would wait forever. So is reading
//! a buffer or accumulator row (`MM`'s source, `MM.add`'s and `ACT`'s
//! accumulator rows) that no earlier instruction of the program wrote: the
//! memories keep whatever an earlier run left, and a reset does not clear
//! them. And an `MM.add` may not start at the accumulator row the previous
//! `MM` ended on when that one had more than one row: the MXU's
//! read-modify-write of a row accepted in the cycle after another to the
//! same row misses that one's write (the MXU's first-row gap keeps one-row
//! `MM`s apart; the compiler's passes never do it).
//!
//! # Timing contract
//!
//! Cycle 0 is the first cycle of a run. Instructions come from the host
//! port, which always has the next one ready. Exactly one instruction is
//! *current*: instruction 0 from cycle 0; an instruction *retires* in some
//! cycle y and the next is current from y + 1. Every cycle counts towards
//! exactly one of the counters named in brackets.
//!
//! Two kinds of writes land late: an MXU row accepted in cycle y is written
//! to the accumulators in cycle y + R + P + C (the MXU's write latency, P =
//! min(D, 2) at depth D, see below), and an `ACT` row read in cycle y is
//! written to the UB or the host window in cycle y + 4 + D (accumulator and
//! bias read, bias add, the multiply of the requantization, the rounding
//! shift and clamp, and D more stages). A read in cycle y sees the writes of
//! cycles before y. `acc_busy` is the last cycle an MXU write
//! is scheduled for, `ub_busy` the last cycle an `ACT` write is.
//!
//! The activation unit runs beside the sequencer: it *holds* at most one
//! `ACT`, so the next layer's matmuls run while it works through the last
//! pass's accumulator rows. `act_busy` means it holds one at the start of
//! the cycle.
//!
//! In the cycle y in which instruction I is current:
//! - `RHM n`: waits while `act_busy` or y <= `ub_busy` (the UB's write port
//!   is the unit's) \[`stall_ub`\]; then moves row j in cycle y0 + j and
//!   retires in y0 + n - 1 \[`host`\].
//! - `RW`: waits while the weight queue holds `weight_queue` reads
//!   \[`stall_weights`\]; then enqueues the read and retires in that cycle
//!   \[`issue`\].
//! - `MM n` at accumulator rows \[b, b + n): waits, with the wait flag, while
//!   `act_busy` or y <= `ub_busy` \[`stall_ub`\]; then while the unit holds an
//!   `ACT` whose rows still to read (below) meet \[b, b + n) \[`stall_vpu`\];
//!   then, with the prefetch flag, while the weight queue is full
//!   \[`stall_weights`\]. In the first cycle none holds, it enqueues its
//!   prefetch and presents its first row, which is a tile's first row for
//!   the MXU. The MXU accepts rows by its rules (below); row 0 is presented
//!   until accepted \[`stall_weights`\], rows 1 .. n-1 are accepted in the
//!   cycles that follow \[`mxu_busy` in every accepting cycle\]. It retires in
//!   the cycle of its last acceptance.
//! - `ACT`: waits while `act_busy` \[`stall_vpu`\]; then hands itself to the
//!   activation unit, with `drain` = `acc_busy` of this cycle, and retires
//!   \[`issue`\].
//! - `SYNC`, `HALT`: wait while y <= `acc_busy`, y <= `ub_busy` (the host
//!   window's writes included), `act_busy` or the weight queue is not empty,
//!   and retire in the first cycle none holds \[`sync`\]. A run's `cycles` is
//!   the cycle `HALT` retires in, plus one.
//!
//! The activation unit, in every cycle y: an `ACT` handed over in y is held
//! from y + 1. From the first cycle y0 > `drain` it reads accumulator row
//! a + j in cycle y0 + j (`ub_busy` becomes y0 + j + 4) \[unit counter
//! `act_rows`; the cycles before, `act_drain`], and it lets the `ACT` go
//! after the cycle of its last read. Its rows still to read in cycle y are
//! \[a + j, a + n), j the rows read before y.
//!
//! The weight engine, in every cycle y: a read enqueued in y is seen from
//! y + 1; the queue's occupancy counts reads from their enqueue cycle until
//! the cycle their last row is written (freed from the next cycle). If the
//! oldest read has rows left and the MXU's `w_ready` holds (its FIFO holds
//! fewer than WF rows), it writes one row into the FIFO.
//!
//! The MXU's weight side follows its own contract (`hw/mxu/TIMING.md`,
//! modelled by `golden::mxu`): a FIFO of WF rows plus a head row; a loader that takes
//! the head when fewer than R rows are loaded and it is not holding; a
//! tile's first row is accepted only when R rows are loaded and at least two
//! cycles have passed since the previous first row was accepted; accepting
//! a first row empties the loaded count and holds the loader for R - 1
//! cycles. Other rows are always accepted.
//!
//! The sequencer's counters are `mxu_busy`, `stall_weights`, `stall_ub`,
//! `stall_vpu`, `host`, `issue`, `sync` (they sum to `cycles`) and
//! `instructions` (retired, `HALT` included); the activation unit's are
//! `act_rows` and `act_drain`.
//!
//! # Pipeline depth
//!
//! `depth` D (0 to 4, [`config::TensorCoreConfig::depth`]) adds registers
//! on the longest paths; each depth keeps those of the one before. Only the
//! two late-write latencies above change, so a program computes the same
//! bits at every depth and its cycles follow from the same rules.
//!
//! | D | MXU depth (P) | activation unit registers added | `ACT` latency |
//! | --- | --- | --- | --- |
//! | 0 | 0 (0) | none | 4 |
//! | 1 | 1 (1): each PE's product | after the rounding doubling high multiply (SRDHM) | 5 |
//! | 2 | 2 (2): the PEs' multiplier operands too | the 32 x 32 multiply as four registered 17 x 17 partial products | 6 |
//! | 3 | 2 (2) | after the rounding shift (RDBPOT), before the zero point and the clamp | 7 |
//! | 4 | 2 (2) | after the zero point's addition (with the clamp's and the ReLU's bound tests), before their select | 8 |
//!
//! From depth 3 the sequencer takes its last-row index, the overlap test's
//! bounds and the unified buffer's read address from registers; from depth
//! 4 also its opcode decode, the overlap test, the first- and last-row flags
//! and whether the activation unit has settled, each set a cycle ahead, and
//! the activation unit its rounding and clamp bounds (they depend on the
//! `ACT`'s fields alone). None of these changes a cycle.
//!
//! The MXU stays at its depth 2 beyond: its depth 3 widens the gap its
//! accumulator needs between two rows of one address (`hw/mxu/TIMING.md`,
//! A3), a rule programs would have to keep.
//!
//! # The RTL and its ports
//!
//! `tensorcore_RxC_acc…` ([`top_name`]) instantiates the `hw/mxu` array and
//! holds the unified buffer, the weight and bias memories (synchronous
//! block-RAM style memories), the weight queue (registers, slot 0 the
//! oldest read), the sequencer and the activation pipeline (C lanes of
//! `hw::arith`'s requantization, 4 + D stages). Ports ([`ports`]):
//!
//! | port | width | meaning |
//! | --- | --- | --- |
//! | `instr_valid_i`, `instr_i`, `instr_ready_o` | 1, 128, 1 | the instruction stream; a word is taken when both are high, and is current from the next cycle (the contract's cycle 0 is the cycle after the first word is taken) |
//! | `hin_en_o`, `hin_addr_o`, `hin_data_i` | 1, 22, 8R | the host input window: the host answers in the same cycle |
//! | `hout_wr_o`, `hout_addr_o`, `hout_data_o` | 1, 22, 32C | the host output window's writes |
//! | `wmem_wr_i`, `wmem_addr_i`, `wmem_data_i` | 1, log2 weight_rows, 8C | host writes of the weight memory (before a run) |
//! | `bmem_wr_i`, `bmem_addr_i`, `bmem_data_i` | 1, log2 bias_rows, 32C | host writes of the bias memory |
//! | `halted_o`, `error_o` | 1, 1 | `HALT` retired; an unknown opcode was retired (sticky) |
//! | `cnt_*_o` | 32 each | the counters above, wrapping |
//! | `act_busy_o` | 1 | the activation unit holds an `ACT` |
//!
//! The contract holds for programs the golden model accepts (addresses in
//! range, row counts >= 1, every `MM`'s tile in the weight stream, reads of
//! written rows only); the RTL does not check them, it cuts addresses to
//! the memories' widths. The overlap rule keeps an `MM` from overwriting
//! accumulator rows the unit has still to read (the compiler alternates
//! passes between the accumulator's halves, so it seldom waits). An `MM`
//! that reads buffer rows an `ACT` after the last wait for the unit (an
//! `MM.wait`, `RHM`, `SYNC`) wrote must carry the wait flag; the golden
//! model refuses a program where one does not. An
//! unknown opcode retires in one cycle (`issue`) and sets `error_o`.

pub use config::tensorcore_isa;
pub use config::TensorCoreConfig;

mod block;
mod rtl;
pub mod weight_queue;
pub use block::{TensorCore, FMAX_DEPTH};
pub use rtl::{build, ports, top_name, COUNTER_BITS};

/// The activation unit's stages at a pipeline depth: four at depth 0 (read,
/// bias add, multiply, rounding shift and clamp), and at greater depths
/// registers that cut the requantization further.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActStages {
    /// The 32 x 32 multiply as four registered 17 x 17 partial products,
    /// summed in the next cycle.
    pub partials: bool,
    /// A register after the rounding doubling high multiply (SRDHM).
    pub high: bool,
    /// A register after the rounding shift (RDBPOT), before the zero point
    /// and the clamp.
    pub scaled: bool,
    /// A register after the zero point's addition, before the clamp and the
    /// ReLU.
    pub offset: bool,
}

impl ActStages {
    /// The stages at TensorCore depth `depth`.
    pub fn of(depth: u32) -> ActStages {
        ActStages {
            partials: depth >= 2,
            high: depth >= 1,
            scaled: depth >= 3,
            offset: depth >= 4,
        }
    }

    /// Cycles from an `ACT` row's accumulator read to its write (the
    /// contract's activation latency): 4 plus one per register added.
    pub fn latency(&self) -> u32 {
        4 + u32::from(self.partials)
            + u32::from(self.high)
            + u32::from(self.scaled)
            + u32::from(self.offset)
    }

    /// The cycle after the read in which the product is in its register.
    fn product_cycle(&self) -> u32 {
        3 + u32::from(self.partials)
    }

    /// The cycle in which the rounding shift's input is ready.
    fn scaled_cycle(&self) -> u32 {
        self.product_cycle() + u32::from(self.high)
    }

    /// The cycle of the zero point's addition.
    fn offset_cycle(&self) -> u32 {
        self.scaled_cycle() + u32::from(self.scaled)
    }

    /// The cycle of the clamp and the ReLU.
    fn clamp_cycle(&self) -> u32 {
        self.offset_cycle() + u32::from(self.offset)
    }
}

/// Cycles from an `ACT` row's accumulator read to its write at depth 0.
pub const ACT_LATENCY: u64 = 4;

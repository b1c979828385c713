//! TensorCore v2: a sequencer that drives the VPU, the EUP and a bf16/int8
//! MXU through one element mover, so a transformer's token step (layer
//! norms, attention over a KV cache, the MLP, the logits) runs on the core.
//!
//! This crate's documentation is the machine's specification: its parts,
//! its instruction set and its timing contract; the crate builds the RTL to
//! it ([`build`], registered as the `tensorcore2` block). The instruction
//! words' bit positions live in `config::tensorcore2_isa`, the sizes in
//! [`config::TensorCore2Config`]; `golden::tensorcore2` executes programs
//! from this text, and `compiler` writes them. `docs/tensorcore2.md` is the
//! user's guide.
//!
//! # The machine
//!
//! ```text
//!  host input window ─HIN─┐            ┌─HOUT─► host output window
//!                         ▼            │
//!   VPU bundles ──► VPU (W lanes, VMEM = unified buffer) ◄──host port── mover ◄── sequencer ◄── instructions
//!                                                                 │  │  ▲
//!                                    EUP (div, sqrt, exp ...) ◄───┘  │  │ accumulator rows (MV)
//!  weight memory ─RW─► weight engine ─┐                              ▼  │
//!                                     ├──► MXU R x R (bf16 / int8 rows) ┘
//!                     RWV (VMEM rows) ┘         ▲ activation rows (MM)
//! ```
//!
//! - **Unified buffer**: the VPU's VMEM, D words of W = lanes x sublanes
//!   32-bit elements. Instructions other than `VPU` address *elements*:
//!   element e is element e mod W of word e / W.
//! - **VPU** (`hw/vpu`, with a host write mask): runs `VPU` instructions'
//!   bundles unchanged. Its host port is the mover's.
//! - **EUP** (`hw/eup`): one operation a cycle, latency L
//!   (`config::EupConfig::latency`).
//! - **MXU** (`hw/mxu`): a bf16 array in int8 mode, R x R, `acc_rows`
//!   accumulator rows; an `MM` row is bf16 (bits 15..0 of each element,
//!   fp32 sums in the contract's tile order) or int8 (bits 7..0, wrapping
//!   int32).
//! - **Weight memory**: `weight_rows` rows of C bf16 patterns (int8 rows
//!   read their low bytes), written by the host before a run. A tile is R
//!   rows taken bottom row (k = R - 1) first, as the MXU's weight port takes
//!   them.
//! - **Weight engine**: a queue of `weight_queue` `RW` reads that writes one
//!   weight-memory row a cycle into the MXU's weight FIFO while it has room,
//!   beside everything else (as in TensorCore v1).
//! - **Mover**: runs `HIN`, `HOUT`, `RWV`, `MM`, `MV` and `EUP` one element
//!   per access of the VPU's host port, or a whole row per access where the
//!   row lies in one word from its first element.
//! - **Host windows**: the input window answers a read of element address a
//!   (`hin_en_o`, `hin_addr_o` in cycle t) on `hin_data_i` in cycle t + 1,
//!   as a synchronous memory; the output window takes writes
//!   (`hout_wr_o`, `hout_addr_o`, `hout_data_o`).
//!
//! # Instruction set
//!
//! 144-bit words executed in order (fields in `config::tensorcore2_isa`).
//! Counts n are 1..65535; element addresses and strides are in elements.
//!
//! | mnemonic | effect |
//! | --- | --- |
//! | `VPU bundle` | issue one VPU bundle |
//! | `HIN dst, src, n` | VMEM\[dst + i\] = IN\[src + i\] |
//! | `HOUT dst, src, n` | OUT\[dst + i\] = VMEM\[src + i\] |
//! | `RW row, n` | append weight-memory rows row .. row + n - 1 to the weight stream |
//! | `RWV src, s, n` | append n rows of C elements from VMEM (row j at src + j s, bits 15..0 of each), row n - 1 first and row 0 last |
//! | `MM acc, src, s, n` (`.int8`, `.add`) | take the next R rows of the weight stream as tile T (the i-th row taken is T\[R - 1 - i\]); for row j < n (R elements from src + j s): ACC\[acc + j\] = (add ? ACC\[acc + j\] : 0) + row x T |
//! | `MV dst, s, acc, n` | accumulator row acc + j into the C elements from dst + j s |
//! | `EUP op, dst, a, b, n` | VMEM\[dst + i\] = op(VMEM\[a + i\], VMEM\[b + i\]) (unary ops read only a) |
//! | `SYNC` | wait until everything issued before has finished |
//! | `HALT` | `SYNC`, then stop |
//!
//! Programs must keep these rules (the golden model refuses programs that
//! break the ones it can see; the RTL does not check them): addresses and
//! counts inside their memories; an `MM`'s tile in the weight stream; an
//! `EUP`'s destination range equal to or disjoint from each source range;
//! the weight stream holding no more rows than the MXU's weight FIFO and
//! loader take before the `MM` that takes them (an `RWV` that overfills it
//! waits forever); an `MM.add` not starting at the accumulator row the
//! previous `MM` ended on when that one had more than one row (the MXU's
//! read-modify-write rule).
//!
//! # Timing contract
//!
//! Cycle 0 is the cycle after the first instruction is taken; the host
//! always has the next instruction ready. Exactly one instruction is
//! current at a time; it *retires* in some cycle y and the next is current
//! from y + 1.
//!
//! - `VPU`: presented to the VPU from its first cycle; retires in the cycle
//!   the VPU accepts it (the VPU's own contract, `hw/vpu`).
//! - `RW`: retires in its first cycle with room in the weight queue.
//! - `SYNC`, `HALT`: retire in the first cycle in which the VPU is idle
//!   (`busy_o` low), the weight queue is empty and no accumulator write is
//!   still to land (an `MM` row accepted in cycle y lands in y + the MXU's
//!   write latency, `mxu::Timing::write_latency`).
//! - A mover instruction spends its first cycle being decoded, then waits
//!   (from its second cycle, at least one cycle) until the VPU is idle, and
//!   `RWV` also until the weight queue is empty, `MV` until every
//!   accumulator write has landed. The mover starts it in the cycle t0 after
//!   the first cycle of its wait in which that holds:
//!   - `HIN`: reads IN\[src + i\] in cycle t0 + i, writes element i in
//!     t0 + i + 1; retires in t0 + n.
//!   - `HOUT`: reads element i in t0 + i, writes OUT in t0 + i + 1; retires
//!     in t0 + n.
//!   - `EUP`: in each cycle from t0, if a result leaves the EUP it is
//!     written (element results in order); otherwise, while operands remain,
//!     the next operand is read (a0, a1, ... for unary operations; a0, b0,
//!     a1, b1, ... for div). An operand read in cycle t reaches the mover in
//!     t + 1, and an element's last operand enters the EUP then; its result
//!     leaves in t + 1 + L. It retires in the cycle of the last write.
//!   - `MM`, `RWV`: each row takes R + 1 cycles of reads (element k read in
//!     the row's k-th cycle, the last cycle receiving the last element), or
//!     2 when the row fits one word (R <= W) and starts at an element
//!     address that is a multiple of W (one read of the word, then its data),
//!     then is offered from the next cycle until the MXU takes it (`MM`:
//!     `a_ready_o`, rows of one `MM` after the first are always taken; `RWV`:
//!     `w_ready_o`); the instruction retires in the cycle its last row is
//!     taken, else the next row's reads start in the next cycle.
//!   - `MV`: per row, one cycle reading the accumulator row, the cycles
//!     until the MXU returns it (its read latency), then C cycles writing
//!     its elements, or one cycle writing them all when the row fits one
//!     word and starts at a multiple of W (a write masked to its C elements); it retires in the cycle of the last write, else the
//!     next row's read is in the next cycle.
//!
//! The weight engine, in every cycle: a read enqueued in cycle y is seen
//! from y + 1; if the oldest read has rows left and the MXU's `w_ready_o` is
//! high, it writes one row. The MXU's weight side and row acceptance follow
//! the MXU's own contract (`hw/mxu/TIMING.md`).
//!
//! `golden::tensorcore2_cycle` steps these rules (with the VPU's, the
//! EUP's and the MXU's own contracts); the RTL matches its cycles and
//! counters exactly (`tb/tests/tensorcore2_rtl.rs`).
//!
//! Counters (32 bits, wrapping): `instructions` (retired, `HALT` included),
//! `vpu_busy` (cycles the VPU's `busy_o` is high), `mxu_busy` (cycles in
//! which an `MM` row is taken or an accumulator write is still to land),
//! `eup_ops` (operations entering the EUP), `mover` (cycles the mover
//! works on an instruction after its waits), `wait` (cycles mover
//! instructions wait).
//!
//! # Ports
//!
//! | port | width | meaning |
//! | --- | --- | --- |
//! | `instr_valid_i`, `instr_i`, `instr_ready_o` | 1, 144, 1 | the instruction stream; a word is taken when both are high |
//! | `hin_en_o`, `hin_addr_o`, `hin_data_i` | 1, 24, 32 | the input window; data the cycle after the read |
//! | `hout_wr_o`, `hout_addr_o`, `hout_data_o` | 1, 24, 32 | the output window's writes |
//! | `wmem_wr_i`, `wmem_addr_i`, `wmem_data_i` | 1, log2 weight_rows, 16C | host writes of the weight memory (before a run; element c at bits 16c + 15 .. 16c) |
//! | `halted_o`, `error_o` | 1, 1 | `HALT` retired; an unknown opcode retired or the VPU met an illegal bundle (sticky) |
//! | `cnt_*_o` | 32 each | the counters above |

pub use config::tensorcore2_isa;
pub use config::TensorCore2Config;

mod block;
mod rtl;
pub use block::TensorCore2;
pub use rtl::{build, ports, top_name, SeqState, COUNTER_BITS};

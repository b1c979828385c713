//! The SparseCore: embedding lookups (gather and combine) and updates
//! (scatter-add) over a table in HBM, bit-exact to `docs/numerics.md`, section
//! "SparseCore".
//!
//! # What it computes
//!
//! A forward pass: for T tiles (tile t owns the ids with id mod T = t), each
//! tile's partial sums P_t\[s\]\[d\] = +0.0 plus mul32(g, E\[id\]\[d\]) over its
//! entries in the order it receives them, then A\[s\]\[d\] = +0.0 plus P_t\[s\]\[d\]
//! for t = 0 .. T-1. The host has already dropped padding, merged duplicate
//! (id, sample) entries, sorted them and sharded them (`golden::sparsecore_host`);
//! the block checks bounds itself: an entry whose id is outside [0, V) (or
//! whose sample is outside [0, B)) is never read, never written, and counted
//! in `invalid_o`.
//!
//! An update (`mode_i` = 1): for every id with entries, U\[d\] = +0.0 plus
//! mul32(g, G\[s\]\[d\]) over its entries in the order received, then
//! E\[id\]\[d\] = sub32(E\[id\]\[d\], mul32(lr, U\[d\])), each row written once; the
//! gradient G\[B\]\[D\] is loaded into the activation buffer first.
//!
//! # Micro-architecture
//!
//! - **Dispatcher.** The entries arrive as one stream, tile 0's list first,
//!   each list ended by a marker entry. The dispatcher writes the stream into
//!   the entry queue (`queue_depth` entries, marker included) of the tile
//!   whose list it is in, moving to the next tile after each marker (back to
//!   tile 0 after tile T-1's). `ent_ready_o` is that queue's room, so a full
//!   queue stalls the stream and never overflows.
//! - **Tiles** (T of them, `sparsecore_tile_*`), each with its own entry
//!   queue, walker, partial-sum scratchpad (TileSPMEM: 8 banks of 32-bit
//!   words, element d in bank d mod 8) and 8-wide fp32 combine unit (the
//!   shared `hw` mul32 and add32 per lane). A tile walks its own queue: an
//!   entry with an id or sample out of bounds is dropped and counted; a valid
//!   entry requests the HBM words of its row (element id x D of the
//!   row-major table onward, so a row may start and end inside a word), one
//!   word per grant. A response is rotated (once, before it is routed: one
//!   arrives per cycle) so that element d lands in bank d mod 8, and the
//!   tile adds mul32(g, E) to each covered bank in a
//!   read-modify-write on a write-first port (back-to-back updates of one
//!   word see each other).
//! - **Arbiter and tag FIFO.** One HBM read channel: each cycle the
//!   round-robin arbiter grants one requesting tile, if fewer than
//!   `hbm_inflight` reads are outstanding. The tag FIFO (`hbm_inflight` deep)
//!   holds, per read, its tile, scratchpad word, offset, lanes and gain;
//!   HBM answers in order, so its head routes each response to its tile.
//! - **Fold unit.** Eight add32 lanes fold the tiles' partial sums into the
//!   activation buffer strictly in tile order: tile t's fold starts once
//!   tile t has finished (marker taken, every response combined) and tile
//!   t-1's fold is done, while the other tiles keep walking. Tile 0's fold
//!   reads A as +0.0, which also clears what an earlier pass left.
//!
//! The partial sums of sample s, element d live in bank d mod 8 at word
//! s x ceil(D/8) + d div 8 of each tile's scratchpad; the activation buffer
//! has the same layout, 8 elements per word. Each holds `max_batch` x
//! ceil(`max_dim` / 8) words.
//!
//! Throughput: the HBM channel, one word per cycle, is the limit; with
//! several tiles requesting, one tile's list end (the stream moving on to
//! the next tile's list, the tile's last responses, its fold) overlaps with
//! the next tiles' walks.
//!
//! An update walks the tiles' lists one tile after another (the activation
//! buffer has one read port, and the stream delivers tile t + 1's list after
//! tile t's). At depth 0 it is pipelined: the walking tile accumulates each
//! id's U (one gradient word per cycle, read from the activation buffer)
//! into a slot of its scratchpad, slot after slot, while the rows of the ids
//! before it are read and written; a tile's accumulated rows wait in a row
//! queue, and their reads go out back to back, up to `hbm_inflight`, while
//! the next tiles walk. Each response reads its U on a second port of the
//! scratchpad and goes through eight shared update lanes (E - lr x U, the
//! contract's mul32 then sub32), rotated back and written to HBM with a lane
//! mask through a write queue of `hbm_inflight` words. Writes and reads
//! share the one channel: a queued write goes first, and a read counts
//! against `hbm_inflight` until its write is accepted, so the write queue
//! cannot overflow. A slot is free again once its row's last response has
//! read U; slots = min(`hbm_inflight`, scratchpad words div ceil(D/8)).
//! Ids are unique within a tile's sorted list (the host merged and sorted
//! them) and each tile owns its ids, so one row is never in flight twice;
//! neighbouring rows that share an HBM word are kept apart by the lane mask
//! (a read uses only its own row's lanes, a write writes only them).
//!
//! At the other depths an update handles one id at a time: the id's gradient
//! rows are combined into U (words 0 .. ceil(D/8) - 1 of the tile's
//! scratchpad) by the tile's own lanes, then the row is read, each word
//! combined as E - lr x U by the same lanes and written back through a write
//! queue that holds a whole row; the next id waits until the row's writes
//! are out, so each row pays the HBM latency.
//!
//! # Interface
//!
//! All ports are synchronous to `clk_i`; `rst_i` is an active-high
//! synchronous reset.
//!
//! | port | width | meaning |
//! | --- | --- | --- |
//! | `start_i` | 1 | starts a pass; accepted when `busy_o` is low |
//! | `rows_i`, `dim_i`, `batch_i` | 32, bits(max_dim), bits(max_batch) | V, D (1..=max_dim) and B (1..=max_batch), sampled at the start |
//! | `busy_o` | 1 | a pass is running (high from the cycle after the start through the last activation write) |
//! | `ent_valid_i`, `ent_ready_o` | 1, 1 | the entry stream into the tiles' entry queues (`queue_depth` entries each) |
//! | `ent_marker_i` | 1 | this entry ends the current tile's list (its other fields are ignored) |
//! | `ent_id_i`, `ent_sample_i`, `ent_gain_i` | 32, bits(max_batch - 1), 32 | the entry: int32 id, sample, fp32 gain |
//! | `hbm_rd_valid_o`, `hbm_rd_ready_i`, `hbm_rd_addr_o` | 1, 1, 28 + bits(max_dim) | a read of one 32-byte word (word address: element address div 8) |
//! | `hbm_rsp_valid_i`, `hbm_rsp_data_i` | 1, 256 | a read's data, element k at bits 32k+31..32k |
//! | `act_rd_en_i`, `act_rd_addr_i` | 1, scratchpad address | read an activation word (while idle) ... |
//! | `act_rd_data_o` | 256 | ... the cycle after: A[s][8j + k] at bits 32k+31..32k for word s x ceil(D/8) + j |
//! | `invalid_o` | 32 | entries skipped since the pass started |
//! | `mode_i`, `lr_i` | 1, 32 | 0 forward, 1 update; the learning rate (fp32), sampled at the start |
//! | `act_wr_en_i`, `act_wr_addr_i`, `act_wr_data_i` | 1, scratchpad address, 256 | write a gradient word (while `busy_o` is low), G in A's layout |
//! | `hbm_wr_valid_o`, `hbm_wr_ready_i` | 1, 1 | an HBM write (update only) ... |
//! | `hbm_wr_addr_o`, `hbm_wr_data_o`, `hbm_wr_mask_o` | as the read address, 256, 8 | ... of the lanes whose mask bit is set |
//!
//! # Protocol and timing contract
//!
//! - HBM answers reads in the order they were accepted, each with one
//!   `hbm_rsp_valid_i` cycle, at least 2 cycles after the request's
//!   handshake (a read accepted in cycle c may be answered in cycle c + 2 or
//!   later). Responses are always accepted: the block never has more reads
//!   outstanding than it has room for. A read offered while
//!   `hbm_rd_ready_i` is low stays offered, with the same address, until it
//!   is accepted; so does a write while `hbm_wr_ready_i` is low. Reads and
//!   writes share one channel: the block never offers both in one cycle.
//! - Entries may be pushed before or after `start_i`; a marker ends each of
//!   the T tiles' lists, tile 0 first. `ent_ready_o` is high in a cycle if the
//!   current tile's queue holds fewer than `queue_depth` entries; an entry
//!   pushed in cycle c reaches the head of its queue in cycle c + 2 or, if
//!   the entry before it leaves later, the cycle after it leaves; a queue
//!   has room again the cycle after an entry leaves.
//! - The walker's head is the queue's head, except with a staged walk (from
//!   depth 7, `config::sparsecore::STAGED_WALK_DEPTH`): there it is the
//!   head of a register stage of two places. In every cycle from cycle 1 of
//!   a pass in which the queue has a head, the stage held fewer than two
//!   entries at the cycle's start, and the stage has not yet loaded the
//!   tile's marker in this pass, the head leaves the queue (freeing its
//!   place) into the stage, where the walker sees it from the next cycle. So an entry reaches the walker a cycle
//!   after it reached the queue's head, and never before cycle 2; the walk
//!   rules below read "the head" as the walker's head.
//! - Cycle 0 is the cycle `start_i` is accepted; S = B x ceil(D/8).
//!
//! Forward pass:
//!
//! - Clear: cycles 1 .. S zero every tile's partial sums. From cycle S + 1
//!   every tile walks, one step per cycle on the entry at the head of its
//!   queue (none if the queue is empty): a marker is taken and ends the
//!   tile's walk; an entry with an invalid id or sample is taken and
//!   counted; a valid entry requests its row's next word, and is taken when
//!   its last word's read is accepted.
//! - Arbitration, per cycle: if fewer than `hbm_inflight` reads are
//!   outstanding and some tile requests, `hbm_rd_valid_o` is high for the
//!   lowest-numbered requesting tile at or above the pointer p, or else the
//!   lowest-numbered requesting tile (a read offered and not accepted in
//!   the cycle before keeps its tile); when the read is accepted the tile
//!   moves to its next word and p becomes that tile + 1 (mod T). p is 0
//!   at the start of a pass. A read stops counting as outstanding in the
//!   cycle after its response enters the combine, in cycle e: the cycle it
//!   arrives (e = r) at depths 0 to 3, later from depth 4 on (below). Its
//!   combine writes in cycle e + W: W = 1 + P at pipeline depth P <= 3,
//!   W = 6 + A from depth 4 on, A = min(P, 6) the adder's stages.
//! - Tile t is finished from the cycle after it took its marker, or 1 + W
//!   cycles after its last response entered if that is later (fin_t).
//! - The fold of tile t starts in cycle f_t = max(fin_t, g_t) + 1, where
//!   g_0 = S + 1 and g_t = f_(t-1) + S + A; it reads one word per cycle
//!   (f_t .. f_t + S - 1) and writes each 1 + A cycles later (A = min(P,
//!   6), the fold adder's stages). After tile T-1's fold, `busy_o` is high
//!   through cycle f_(T-1) + S + A and low from f_(T-1) + S + A + 1.
//!
//! Update pass, pipelined (depth 0):
//!
//! - Tile 0 walks from cycle 1 (an entry pushed in the start's cycle
//!   reaches the head of its queue in cycle 2), tile t + 1 from the cycle
//!   after tile t took its marker. The walking tile looks at the head of
//!   its queue once per cycle: a marker is taken, an entry with an invalid
//!   id or sample is taken and counted, and either closes the open run. A
//!   valid entry's first gradient word opens a run when no run is open or
//!   its id is not the open run's (closing the open one), and waits while
//!   every slot is held; each of its ceil(D/8) words is one accumulation
//!   step, one per cycle, and the last takes the entry.
//! - Slots: min(`hbm_inflight`, (max_batch x ceil(max_dim/8)) div
//!   ceil(D/8)) per tile, used in turn. A slot is held from the cycle after
//!   its run opens through the cycle its row's last response arrives.
//! - A run closed in cycle c puts its row into the tile's row queue: at the
//!   head from c + 2, or the cycle after the row ahead of it left. A tile
//!   whose row queue has a head requests that row's next word, even after
//!   its marker.
//! - The channel carries one transfer per cycle: `hbm_wr_valid_o` is high
//!   when the write queue has a word and no read is being held offered;
//!   otherwise reads are arbitrated as in a forward pass, with a read
//!   counting against `hbm_inflight` from its grant through the cycle its
//!   write is accepted. `hbm_rd_valid_o` and `hbm_wr_valid_o` are never high
//!   together. A row leaves its row queue with its last word's grant.
//! - A response arriving in cycle r reads U in r and is written into the
//!   write queue in r + 1; it is at the queue's head (offered) from r + 3,
//!   or the cycle after the write ahead of it was accepted.
//! - After tile T-1's marker (cycle m), `busy_o` is low from the cycle
//!   after the first cycle from m + 1 on in which every slot is free, no
//!   result is on its way to the write queue and the queue is empty: with
//!   HBM writes always ready, max(m + 1, w + 1) + 1 where w is the cycle the
//!   last write was accepted.
//!
//! Update pass at depths 1 and up (tile by tile, one id at a time): no
//! clear; tile 0 walks from cycle 1, tile t + 1 from the cycle after tile t took
//! its marker; after tile T-1's marker `busy_o` is low from the next cycle.
//! An invalid entry takes one cycle; an id's first entry one cycle, then
//! each of the id's entries ceil(D/8) cycles (one gradient word each) plus
//! one cycle that looks at the next entry (from depth 4 on an entry's first
//! word also waits, see below). Then the row's reads issue as in a forward
//! walk; each response's result is queued for writing W cycles after it
//! entered the combine, reaches `hbm_wr_valid_o` two cycles later, and the
//! walk resumes one cycle after the last read was issued or when the queue
//! has been empty for a cycle, whichever is later (4 + W cycles after the
//! last response entered with HBM writes always ready). The channel is
//! shared as in the pipelined update: a queued write is offered unless a
//! read is being held offered, and no read is offered while a write is
//! queued and none is held. Under backpressure a row's first writes can be
//! queued while its later reads still wait; wherever reads and writes do
//! not meet, the rule changes no cycle (the cycle model has no such term).
//!
//! # Pipeline depth
//!
//! `depth` (P, 0 to 7) gives each fold lane's fp32 adder A = min(P, 6)
//! stages (`hw::fp::fp32_add_unit`; its sixth is a register on the
//! operands) and each combine lane's
//! fp32 multiplier min(P, 4) stages (`hw::arith::fp32_mul_unit`); at P = 0
//! both are combinational, the design before the parameter existed. At P <= 3 the
//! combine's add is one cycle inside its read-modify-write loop; from
//! P = 4 on it has P stages (below). The multiply sits outside the combine's
//! read-modify-write loop: its operands (the gain or the learning rate, the
//! HBM word, the gradient word, an update's U read with the response) are
//! all there one cycle after the response, and the partial sum it is added
//! to is read P cycles later, so that it arrives with the product and, on
//! the scratchpad's write-first port, sees the write of the item one stage
//! ahead. The loop is then the add alone, so responses still combine one
//! per cycle, in order, and the bits are the same at every depth; only the
//! writes (and what waits for them: a tile's finish, the next fold, an
//! update's next row) come P cycles later. An update's accumulation of U
//! ends at least four cycles before the row's first response, so the
//! accumulation's deferred writes (P <= 3) are in place when the row reads
//! U.
//!
//! From P = 4 on (`config::sparsecore::STAGED_LOOP_DEPTH`) the add has A
//! stages inside the loop, so the loop no longer bounds the clock (below,
//! P stands for A = min(P, 6)):
//!
//! - Responses wait in a response ring (`hbm_inflight` words) and enter
//!   the combine from it in arrival order, one per cycle at most: a
//!   response answered in cycle r is at the ring's head from cycle r + 2,
//!   or the cycle after the one before it entered if that is later. The
//!   tags (which replace the tag FIFO here, and carry each bank's
//!   scratchpad word and write enable, computed at the grant) wait in a
//!   ring of their own and leave with their responses, so reads
//!   outstanding plus responses buffered never exceed `hbm_inflight`: the
//!   ring cannot overflow, and a read counts against `hbm_inflight` until
//!   its response enters. Both heads are registered reads at the read
//!   pointer an entry advances, so an entry drives a few pointer bits, not
//!   an enable on every bit of the head.
//! - Interlock: the head waits while an earlier response to its tile that
//!   adds into one of its partial sums (the same sample and a common
//!   element of the row, compared bank by bank on the scratchpad address)
//!   entered fewer than P + 2 cycles before (it is then in the adder, or
//!   its write is not yet readable), and the responses behind it wait too.
//!   Each partial sum's adds therefore keep the contract's order.
//! - An item entering in cycle e is multiplied in cycles e + 1 .. e + 5
//!   (four stages: the operands, the significands' DSP-sized pieces'
//!   products, the product, the rounding; then the product's register, so
//!   the multiplier's last stage and the adder's first are not one path);
//!   its partial sum is read in e + 5 through a plain registered port
//!   (block RAM where it is large), the add runs from e + 6 and writes in
//!   e + 6 + P (W = 6 + P).
//! - Update: an accumulation step into U waits like a response, so an
//!   entry's first word enters at least P + 2 cycles after the previous
//!   entry's of the same id; the row's reads (whose responses read U as
//!   they enter) wait until no accumulation step is in the pipeline, W
//!   cycles after the last one entered. A row's responses write no partial
//!   sum and never wait.
//!
//! At P = 7 (`config::sparsecore::STAGED_WALK_DEPTH`) the walk is staged
//! as well: each tile's walker takes its entries from a register stage of
//! two places (see the timing contract), each holding, besides the entry,
//! what the walker would otherwise derive from the head through long
//! paths, formed as the stage loads: the bounds check; the row's place
//! (the first word, id x D div 8, on a DSP block; the first lane; the last
//! word and lane); the first partial-sum word, sample x ceil(D/8); and,
//! for an update, whether the entry has the id of the valid entry loaded
//! before it (so whether it continues the run). So the read address is a
//! register plus the word counter, the pop a compare of the counter with a
//! register, the accumulation's address a register plus its counter, and
//! the stage loads (its enables, the queue's pop) on its fill at the
//! cycle's start, not on the walker's pop. An update keeps the row's place
//! of the run it accumulates in registers of its own. The stage loads with
//! the pass's D, V and B (from cycle 1) and stops at the marker, so the
//! next pass's entries, pushed early, wait in the queue. The price: every
//! entry reaches its walker a cycle later, which costs an update pass one
//! cycle and a forward pass none in the benchmark (the queue keeps the
//! walker fed after the first entry).
//!
//! At P = 7 the word rotations also sit next to registers on both sides: a
//! response is rotated in its tile after the stage-1 register, each lane
//! selecting its word lane on its own copy of the offset, and an update's
//! result is rotated back as it leaves the write queue (which holds it in
//! bank order with the amount). The same rotations, one cycle apart from
//! the long paths they were on; the cycles do not change. With many tiles
//! the response's rotation is one per tile instead of one shared.
//!
//! So with HBM always ready, a fixed latency L and a host that pushes
//! whenever `ent_ready_o` is high, the cycles depend on the entry lists
//! alone; `golden::sparsecore::forward_cycles` and `update_cycles` state
//! them from this contract.

pub mod block;

pub use block::SparseCore;

use config::sparsecore::WORD_ELEMS;
use config::SparseCoreConfig;
use hw::arith::{fp32_mul_logic, fp32_mul_unit, FP32_MUL};
use hw::blocks::{fifo, FifoMode};
use hw::fp::{fp32_add_logic, fp32_add_unit};
use hw::{bits_for, cat, delay, delay_taps, mux, Design, Expr, ModuleDef, RecordTy, Ty};
use std::rc::Rc;

hw::hw_enum! {
    /// The pass sequencer's state.
    pub enum PassState {
        /// Waiting for `start_i`.
        Idle,
        /// Forward: zeroing every tile's partial sums.
        Clear,
        /// Forward: tiles walking; the fold unit waits for its next tile.
        FoldWait,
        /// Forward: folding one tile's partial sums into the activation buffer.
        Fold,
        /// Update: the tiles walk one after another.
        Update,
        /// Pipelined update: every list walked, rows still in flight.
        Drain,
    }
}

hw::hw_enum! {
    /// A tile's walker state.
    pub enum TileState {
        /// Walk done (marker taken), or waiting for the pass to start.
        Idle,
        /// Walking the tile's entries.
        Walk,
        /// Update: adding one entry's gradient row into U, word by word.
        Accumulate,
        /// Update: deciding whether the next entry has the same id.
        Next,
        /// Update: reading the id's table row, one word per cycle.
        Row,
        /// Update: waiting for the row's last words to be written.
        RowWait,
    }
}

/// Port names.
pub mod ports {
    pub const START: &str = "start_i";
    pub const ROWS: &str = "rows_i";
    pub const DIM: &str = "dim_i";
    pub const BATCH: &str = "batch_i";
    pub const BUSY: &str = "busy_o";
    pub const ENT_VALID: &str = "ent_valid_i";
    pub const ENT_READY: &str = "ent_ready_o";
    pub const ENT_MARKER: &str = "ent_marker_i";
    pub const ENT_ID: &str = "ent_id_i";
    pub const ENT_SAMPLE: &str = "ent_sample_i";
    pub const ENT_GAIN: &str = "ent_gain_i";
    pub const HBM_RD_VALID: &str = "hbm_rd_valid_o";
    pub const HBM_RD_READY: &str = "hbm_rd_ready_i";
    pub const HBM_RD_ADDR: &str = "hbm_rd_addr_o";
    pub const HBM_RSP_VALID: &str = "hbm_rsp_valid_i";
    pub const HBM_RSP_DATA: &str = "hbm_rsp_data_i";
    pub const ACT_RD_EN: &str = "act_rd_en_i";
    pub const ACT_RD_ADDR: &str = "act_rd_addr_i";
    pub const ACT_RD_DATA: &str = "act_rd_data_o";
    pub const INVALID: &str = "invalid_o";
    pub const MODE: &str = "mode_i";
    pub const LR: &str = "lr_i";
    pub const ACT_WR_EN: &str = "act_wr_en_i";
    pub const ACT_WR_ADDR: &str = "act_wr_addr_i";
    pub const ACT_WR_DATA: &str = "act_wr_data_i";
    pub const HBM_WR_VALID: &str = "hbm_wr_valid_o";
    pub const HBM_WR_READY: &str = "hbm_wr_ready_i";
    pub const HBM_WR_ADDR: &str = "hbm_wr_addr_o";
    pub const HBM_WR_DATA: &str = "hbm_wr_data_o";
    pub const HBM_WR_MASK: &str = "hbm_wr_mask_o";
}

/// Bits of a 32-byte word: 8 fp32 lanes.
pub const WORD_BITS: u32 = 32 * WORD_ELEMS;

/// The top module's name for `cfg`.
pub fn top_name(cfg: &SparseCoreConfig) -> String {
    let name = format!(
        "sparsecore_t{}_d{}_b{}_q{}_f{}",
        cfg.tiles(),
        cfg.max_dim(),
        cfg.max_batch(),
        cfg.queue_depth(),
        cfg.hbm_inflight()
    );
    match cfg.depth() {
        0 => name,
        d => format!("{name}_p{d}"),
    }
}

/// Width of `dim_i`.
pub fn dim_bits(cfg: &SparseCoreConfig) -> u32 {
    bits_for(cfg.max_dim())
}

/// Width of `batch_i`.
pub fn batch_bits(cfg: &SparseCoreConfig) -> u32 {
    bits_for(cfg.max_batch())
}

/// Width of `ent_sample_i`.
pub fn sample_bits(cfg: &SparseCoreConfig) -> u32 {
    bits_for(cfg.max_batch() - 1)
}

/// Width of `hbm_rd_addr_o`: a word address into a table of up to 2^31 - 1
/// rows of `max_dim` elements.
pub fn hbm_addr_bits(cfg: &SparseCoreConfig) -> u32 {
    31 + dim_bits(cfg) - 3
}

/// Width of the row's word count ceil(D / 8) as the block computes it.
fn row_words_bits(cfg: &SparseCoreConfig) -> u32 {
    let db = dim_bits(cfg);
    if db > 3 {
        db - 2
    } else {
        1
    }
}

/// Width of a pass's word count B x ceil(D / 8) and its counter.
fn span_bits(cfg: &SparseCoreConfig) -> u32 {
    batch_bits(cfg) + row_words_bits(cfg)
}

/// The low `width` bits of `value`, through a named wire whose unused high
/// bits are waived with `reason`.
fn low_bits(m: &mut hw::ModuleBuilder, name: &str, value: Expr, width: u32, reason: &str) -> Expr {
    if value.width() == width {
        return m.wire(name, value);
    }
    let wide = m.wire(&format!("{name}_wide"), value);
    m.waive("UNUSEDSIGNAL", &format!("{name}_wide"), reason);
    m.wire(name, wide.trunc(width))
}

/// Width of `act_rd_addr_i`.
pub fn act_addr_bits(cfg: &SparseCoreConfig) -> u32 {
    bits_for(cfg.scratchpad_words() - 1)
}

/// One element of a tile's combine unit: add32(x, (neg ? -1 : 1) x
/// mul32(g, y)), the contract's fp32.
fn combine_lane(design: &mut Design) -> Rc<ModuleDef> {
    design.define("sparsecore_lane", &[], |_, m| {
        m.doc("SparseCore combine lane: add32(x, (neg ? -1 : 1) x mul32(g, y))");
        let x = m.input("x_i", Ty::u(32));
        let y = m.input("y_i", Ty::u(32));
        let g = m.input("g_i", Ty::u(32));
        let neg = m.input("neg_i", Ty::BOOL);
        let product = fp32_mul_logic(m, g, y);
        // sub32(x, p) is add32(x, -p): the sign flip, as the contract defines it.
        let addend = m.wire("addend", product ^ cat(&[neg, m.lit(Ty::u(31), 0)]));
        let sum = fp32_add_logic(m, x, addend);
        m.output("sum_o", sum);
    })
}

/// The add half of a combine lane at depth > 0: add32(x, (neg ? -1 : 1) x
/// p), p the product the lane's staged multiplier delivered.
fn combine_lane_add(design: &mut Design) -> Rc<ModuleDef> {
    design.define("sparsecore_lane_add", &[], |_, m| {
        m.doc("SparseCore combine lane's add: add32(x, (neg ? -1 : 1) x p)");
        let x = m.input("x_i", Ty::u(32));
        let p = m.input("p_i", Ty::u(32));
        let neg = m.input("neg_i", Ty::BOOL);
        let addend = m.wire("addend", p ^ cat(&[neg, m.lit(Ty::u(31), 0)]));
        let sum = fp32_add_logic(m, x, addend);
        m.output("sum_o", sum);
    })
}

/// The combine lanes' modules: one combinational lane at depth 0, else a
/// staged multiplier and the add it feeds.
enum LaneDefs {
    Combinational(Rc<ModuleDef>),
    Staged {
        mul: Rc<ModuleDef>,
        add: Rc<ModuleDef>,
    },
    /// From [`config::sparsecore::STAGED_LOOP_DEPTH`] on: the staged
    /// multiplier and a staged fp32 adder inside the loop.
    Looped {
        mul: Rc<ModuleDef>,
        add: Rc<ModuleDef>,
    },
}

/// One element of the fold unit: add32(a, p).
fn fold_lane(design: &mut Design) -> Rc<ModuleDef> {
    design.define("sparsecore_fold_lane", &[], |_, m| {
        m.doc("SparseCore fold lane: add32(a, p)");
        let a = m.input("a_i", Ty::u(32));
        let p = m.input("p_i", Ty::u(32));
        let sum = fp32_add_logic(m, a, p);
        m.output("sum_o", sum);
    })
}

/// Builds the SparseCore for `cfg` into `design`.
pub fn build(design: &mut Design, cfg: &SparseCoreConfig) -> Rc<ModuleDef> {
    let params = [
        ("tiles", cfg.tiles().to_string()),
        ("max_dim", cfg.max_dim().to_string()),
        ("max_batch", cfg.max_batch().to_string()),
        ("queue_depth", cfg.queue_depth().to_string()),
        ("hbm_inflight", cfg.hbm_inflight().to_string()),
    ];
    let mut params = params.to_vec();
    if cfg.depth() > 0 {
        params.push(("depth", cfg.depth().to_string()));
    }
    let cfg = *cfg;
    let types = Types {
        entry: entry_ty(&cfg),
        tag: tag_ty(&cfg),
        write: write_ty(&cfg),
    };
    // With the add staged inside the loop, the tags and the responses wait
    // in rings of their own instead (see `body`).
    let tag_fifo = (cfg.loop_stages() == 0)
        .then(|| fifo(design, types.tag.ty(), cfg.hbm_inflight(), FifoMode::Fwft));
    // A pipelined update's writes wait for the channel in a queue as deep
    // as the reads in flight (a read counts until its write is accepted);
    // otherwise the queue holds one row.
    let write_depth = if cfg.pipelined_update() {
        cfg.hbm_inflight()
    } else {
        max_row_words(&cfg)
    };
    let write_fifo = fifo(design, types.write.ty(), write_depth, FifoMode::Fwft);
    let update_lane = cfg.pipelined_update().then(|| combine_lane(design));
    let tile = tile_module(design, &cfg, &types);
    let fold = match cfg.add_stages() {
        0 => fold_lane(design),
        d => fp32_add_unit(design, d, false),
    };
    design.define(&top_name(&cfg), &params, |_, m| {
        m.doc("SparseCore: embedding gather, combine and scatter-add over HBM, T parallel tiles");
        let defs = Defs {
            tile,
            tag: tag_fifo,
            write: write_fifo,
            update_lane,
            fold,
        };
        body(m, &cfg, &types, &defs);
    })
}

/// An entry in a tile's queue.
fn entry_ty(cfg: &SparseCoreConfig) -> RecordTy {
    RecordTy::new(
        "sc_entry",
        &[
            ("marker", Ty::BOOL),
            ("id", Ty::u(32)),
            ("sample", Ty::u(sample_bits(cfg))),
            ("gain", Ty::u(32)),
        ],
    )
}

/// The most HBM words a row of `max_dim` elements touches.
pub fn max_row_words(cfg: &SparseCoreConfig) -> u32 {
    (7 + cfg.max_dim()).div_ceil(WORD_ELEMS)
}

/// An HBM write waiting for the port: word address, data, lane mask.
fn write_ty(cfg: &SparseCoreConfig) -> RecordTy {
    let mut fields = vec![
        ("addr", Ty::u(hbm_addr_bits(cfg))),
        ("data", Ty::u(WORD_BITS)),
        ("mask", Ty::u(WORD_ELEMS)),
    ];
    if late_rotations(cfg) {
        // The data in bank order and the rotation back to the word's
        // lanes, applied as the write leaves the queue.
        fields.push(("back", Ty::u(3)));
    }
    RecordTy::new("sc_write", &fields)
}

/// Whether the rotations between HBM words' lanes and the scratchpad's
/// banks happen next to registers on both sides (with a staged walk): a
/// response is rotated in its tile after the tile's stage-1 register (each
/// lane selecting its own word lane on its own copy of the offset), and an
/// update's result is rotated back as it leaves the write queue, instead
/// of between the response ring and the tiles and between the combine's
/// adders and the write queue.
fn late_rotations(cfg: &SparseCoreConfig) -> bool {
    cfg.staged_walk()
}

/// What the combine needs to know about an outstanding read: the tile it is
/// for, the scratchpad word of its first lanes, the row's offset in the
/// word, which lanes hold the row, and the gain.
///
/// With the add staged inside the loop, the tag holds each bank's
/// scratchpad word and write enable instead of the base, computed as the
/// read is granted, so that the interlock's compare starts at registers.
fn tag_ty(cfg: &SparseCoreConfig) -> RecordTy {
    if cfg.loop_stages() > 0 {
        return RecordTy::new(
            "sc_read_banked",
            &[
                ("tile", Ty::u(tile_bits(cfg))),
                ("bank_addr", Ty::u(WORD_ELEMS * act_addr_bits(cfg))),
                ("bank_en", Ty::u(WORD_ELEMS)),
                ("offset", Ty::u(3)),
                ("lanes", Ty::u(WORD_ELEMS)),
                ("gain", Ty::u(32)),
            ],
        );
    }
    let mut fields = vec![
        ("tile", Ty::u(tile_bits(cfg))),
        ("base", Ty::u(act_addr_bits(cfg))),
        ("offset", Ty::u(3)),
        ("lanes", Ty::u(WORD_ELEMS)),
        ("gain", Ty::u(32)),
    ];
    if cfg.pipelined_update() {
        // A pipelined update's response is written back by the shared update
        // lanes, which need its word's address, and its row's last word frees
        // the row's U slot.
        fields.push(("addr", Ty::u(hbm_addr_bits(cfg))));
        fields.push(("last", Ty::BOOL));
    }
    RecordTy::new("sc_read", &fields)
}

/// Bank b's scratchpad word for a response whose first lanes go to word
/// `base` at offset `offset`: lane b + o of the HBM word belongs to the
/// previous scratchpad word when b + o >= 8.
fn bank_addr(m: &hw::ModuleBuilder, base: Expr, offset: Expr, b: u32) -> Expr {
    let wraps = if b == 0 {
        m.lit(Ty::BOOL, 0)
    } else {
        offset.is_ge(8 - b)
    };
    base - wraps.zext(base.width())
}

/// Width of a tile number.
fn tile_bits(cfg: &SparseCoreConfig) -> u32 {
    bits_for(cfg.tiles() - 1)
}

struct Types {
    entry: RecordTy,
    tag: RecordTy,
    write: RecordTy,
}

/// The staged loop's tag and response rings: pointers with a wrap bit (a
/// slot's index is the low bits), reads held, and the two memories.
struct Ring {
    held: hw::Reg,
    tag_wr: hw::Reg,
    rsp_wr: hw::Reg,
    /// The response write pointer a cycle late: a response is readable
    /// from the cycle after its write.
    rsp_written: hw::Reg,
    rd: hw::Reg,
    tags: hw::Mem,
    rsps: hw::Mem,
}

struct Defs {
    tile: Rc<ModuleDef>,
    /// The tag FIFO, with the add in one cycle.
    tag: Option<Rc<ModuleDef>>,
    write: Rc<ModuleDef>,
    /// The pipelined update's shared lanes: E - lr x U.
    update_lane: Option<Rc<ModuleDef>>,
    fold: Rc<ModuleDef>,
}

/// `value` resized to `width` bits (zero-extended or truncated).
fn fit(value: Expr, width: u32) -> Expr {
    if value.width() >= width {
        value.trunc(width)
    } else {
        value.zext(width)
    }
}

/// Lane b of the result is lane (b + amount) mod 8 of `x`, lanes of
/// `lane_bits` bits.
fn rotate(x: Expr, lane_bits: u32, amount: Expr) -> Expr {
    let lanes = WORD_ELEMS;
    let lane = |i: u32| x.slice(lane_bits * (i % lanes), lane_bits);
    let mut out = x;
    for o in 1..lanes {
        // cat puts the highest lane first.
        let parts: Vec<Expr> = (0..lanes).rev().map(|b| lane(b + o)).collect();
        out = mux(amount.is_eq(o), cat(&parts), out);
    }
    out
}

/// `values[sel]`, for `sel` below `values.len()`.
fn select(sel: Expr, values: &[Expr]) -> Expr {
    let mut out = values[0];
    for (i, &v) in values.iter().enumerate().skip(1) {
        out = mux(sel.is_eq(i as u32), v, out);
    }
    out
}

/// The lowest set bit's index of `bits` (0 if none).
fn lowest_set(m: &hw::ModuleBuilder, bits: Expr, width: u32) -> Expr {
    let mut idx = m.lit(Ty::u(width), 0);
    for t in (0..bits.width()).rev() {
        idx = mux(bits.bit(t), m.lit(Ty::u(width), t), idx);
    }
    idx
}

/// The tile module's name for `cfg` (its widths depend on all but T).
fn tile_name(cfg: &SparseCoreConfig) -> String {
    let name = format!(
        "sparsecore_tile_d{}_b{}_q{}_f{}",
        cfg.max_dim(),
        cfg.max_batch(),
        cfg.queue_depth(),
        cfg.hbm_inflight(),
    );
    match cfg.depth() {
        0 => name,
        d => format!("{name}_p{d}"),
    }
}

/// The stages of an fp32 multiplier whose `operands` cut is registered
/// outside it, for `stages` in all: one fewer, which must leave out that cut
/// and keep the others (`FP32_MUL`'s ranking puts it last).
fn operands_outside(stages: u32) -> u32 {
    let operands = FP32_MUL.cut_number("operands");
    let (all, inner) = (FP32_MUL.active(stages), FP32_MUL.active(stages - 1));
    assert!(
        all[operands]
            && !inner[operands]
            && (0..all.len()).all(|k| k == operands || all[k] == inner[k]),
        "{stages} multiplier stages less one must drop exactly the operands cut"
    );
    stages - 1
}

/// The stages of a combine lane's fp32 multiplier unit (`fp32_mul_unit`),
/// none at depth 0 (the lane is one combinational unit). With the add
/// staged inside the loop the multiplier's operand registers are the
/// lane's own, so the unit has the other cuts.
fn combine_mul_unit_stages(cfg: &SparseCoreConfig) -> Option<u32> {
    match cfg.depth() {
        0 => None,
        _ if cfg.loop_stages() > 0 => Some(operands_outside(cfg.mul_stages())),
        _ => Some(cfg.mul_stages()),
    }
}

/// Whether the combine lanes' multipliers register the products of the
/// significands' DSP-sized pieces (`FP32_MUL`'s `partials` cut), so that
/// their product is several multiplies (the block's FPGA facts).
pub(crate) fn combine_mul_partials(cfg: &SparseCoreConfig) -> bool {
    let partials = FP32_MUL.cut_number("partials");
    combine_mul_unit_stages(cfg).is_some_and(|stages| FP32_MUL.active(stages)[partials])
}

/// SparseCores of this many tiles on have their tile held by Verilator models
/// as one copy of code for all instances ([`hw::SimLayout::Shared`]); fewer
/// are left to Verilator, which inlines them.
pub const SHARED_TILES_FROM: u32 = 2;

/// One tile: entry queue, walker, partial-sum scratchpad and combine unit.
fn tile_module(design: &mut Design, cfg: &SparseCoreConfig, types: &Types) -> Rc<ModuleDef> {
    let entry_fifo = fifo(design, types.entry.ty(), cfg.queue_depth(), FifoMode::Fwft);
    // A pipelined update's accumulated rows waiting for their reads: ids.
    let row_fifo = cfg
        .pipelined_update()
        .then(|| fifo(design, Ty::u(31), cfg.update_slots(1), FifoMode::Fwft));
    let lane = match combine_mul_unit_stages(cfg) {
        None => LaneDefs::Combinational(combine_lane(design)),
        Some(stages) if cfg.loop_stages() > 0 => LaneDefs::Looped {
            mul: fp32_mul_unit(design, stages, false),
            add: fp32_add_unit(design, cfg.loop_stages(), false),
        },
        Some(stages) => LaneDefs::Staged {
            mul: fp32_mul_unit(design, stages, false),
            add: combine_lane_add(design),
        },
    };
    let cfg = *cfg;
    let entry = types.entry.clone();
    design.define(&tile_name(&cfg), &[], |design, m| {
        m.doc("SparseCore tile: entry queue, walker, scratchpad (TileSPMEM), 8-wide fp32 combine");
        if cfg.tiles() >= SHARED_TILES_FROM {
            m.shared_code(
                "one instance per tile, up to 16: one copy of its code keeps the model's build \
                 time that of one tile",
            );
        }
        tile_body(
            design,
            m,
            &cfg,
            &entry,
            &entry_fifo,
            row_fifo.as_ref(),
            &lane,
        );
    })
}

/// Update: the gradient word of the head's sample, chunk `acc_ctr`, as the
/// tile's `acc_addr_o` (with `acc_o`); returns U's word, `acc_ctr` itself.
fn acc_address(
    m: &mut hw::ModuleBuilder,
    cfg: &SparseCoreConfig,
    sample_words: SampleWords,
    acc_ctr: Expr,
    accumulating: Expr,
    u_base: Option<Expr>,
) -> Expr {
    let sb = sample_bits(cfg);
    let nc_bits = row_words_bits(cfg);
    let aw = act_addr_bits(cfg);
    let acc_bits = (sb + nc_bits).max(nc_bits) + 1;
    let acc_addr_wide = sample_words.product().zext(acc_bits) + acc_ctr.zext(acc_bits);
    let acc_addr = low_bits(
        m,
        "acc_addr",
        acc_addr_wide,
        aw,
        "s x ceil(D/8) + j is below max_batch x ceil(max_dim/8)",
    );
    m.output("acc_o", accumulating);
    m.output("acc_addr_o", acc_addr);
    match u_base {
        Some(b) => m.wire("u_word", b + fit(acc_ctr, aw)),
        None => fit(acc_ctr, aw),
    }
}

fn tile_body(
    design: &mut Design,
    m: &mut hw::ModuleBuilder,
    cfg: &SparseCoreConfig,
    entry: &RecordTy,
    entry_fifo: &Rc<ModuleDef>,
    row_fifo: Option<&Rc<ModuleDef>>,
    lane_defs: &LaneDefs,
) {
    let lanes = WORD_ELEMS;
    // Stages of the combine's multiplier: the add (and the scratchpad write)
    // happens at stage 1 + depth.
    let depth = cfg.depth();
    let db = dim_bits(cfg);
    let bb = batch_bits(cfg);
    let sb = sample_bits(cfg);
    let aw = act_addr_bits(cfg);
    let words = cfg.scratchpad_words();
    let nc_bits = row_words_bits(cfg);
    let k_bits = bits_for(max_row_words(cfg) - 1);
    let hab = hbm_addr_bits(cfg);

    // ----------------------------------------------------------- inputs
    let start = m.input("start_i", Ty::BOOL);
    let go = m.input("go_i", Ty::BOOL);
    let clear = m.input("clear_i", Ty::BOOL);
    let clear_addr = m.input("clear_addr_i", Ty::u(aw));
    let rows = m.input("rows_i", Ty::u(32));
    let dim = m.input("dim_i", Ty::u(db));
    let batch = m.input("batch_i", Ty::u(bb));
    let row_words = m.input("row_words_i", Ty::u(nc_bits));
    // The pass's mode. With the add staged inside the loop the tile keeps
    // copies of the top's mode register, loaded with its next value, one for
    // the walker and one for the combine: one register's fanout across the
    // tile was the critical path (ECP5-85F, depth 6: the mode register to
    // the entry queue's read pointer, 15.6 ns of routing).
    let (updating, mode_next) = if cfg.loop_stages() > 0 {
        let next = m.input("mode_next_i", Ty::BOOL);
        let walk = hw::blocks::kept_register_reset(design, m, "walk_mode", next, 0);
        (walk, Some(next))
    } else {
        (m.input("mode_i", Ty::BOOL), None)
    };
    let lr = m.input("lr_i", Ty::u(32));
    let ent_valid = m.input("ent_valid_i", Ty::BOOL);
    let ent_data = m.input("ent_data_i", entry.ty());
    let grant = m.input("grant_i", Ty::BOOL);
    let rsp_valid = m.input("rsp_valid_i", Ty::BOOL);
    let rsp_data = m.input("rsp_data_i", Ty::u(WORD_BITS));
    let rsp_en = m.input("rsp_en_i", Ty::u(lanes));
    let staged = cfg.loop_stages() > 0;
    // Each bank's scratchpad word, from the base and offset, or as the tag
    // brings it with a staged loop.
    let rsp_base = if staged {
        m.input("rsp_bank_addr_i", Ty::u(lanes * aw))
    } else {
        m.input("rsp_base_i", Ty::u(aw))
    };
    let rsp_off = m.input("rsp_offset_i", Ty::u(3));
    let rsp_lanes = m.input("rsp_lanes_i", Ty::u(lanes));
    let rsp_gain = m.input("rsp_gain_i", Ty::u(32));
    let fold = m.input("fold_i", Ty::BOOL);
    let fold_addr = m.input("fold_addr_i", Ty::u(aw));
    let grad = m.input("grad_i", Ty::u(WORD_BITS));
    let pipelined = cfg.pipelined_update();
    let writes_idle = (!pipelined).then(|| m.input("writes_idle_i", Ty::BOOL));
    let rsp_last = pipelined.then(|| m.input("rsp_last_i", Ty::BOOL));

    // ------------------------------------------------------- entry queue
    let queue = m.instance("entry_queue", entry_fifo);
    m.waive(
        "UNUSEDSIGNAL",
        "entry_queue_count_o",
        "the walker needs the queue's head, not its fill level",
    );
    m.connect(queue, "in_valid_i", ent_valid);
    m.connect(queue, "in_data_i", ent_data);
    let ent_ready = m.inst_output(queue, "in_ready_o");
    m.output("ent_ready_o", ent_ready);
    let queue_valid = m.inst_output(queue, "out_valid_o");
    let queue_head = entry.unpack(m.inst_output(queue, "out_data_o"));
    // Bounds: 0 <= id < V (a negative id has bit 31 set, so it compares
    // above every V) and sample < B.
    let in_bounds = |e: &hw::Record| {
        e.get("id").is_lt(rows)
            & e.get("sample")
                .zext(sb.max(bb))
                .is_lt(batch.zext(sb.max(bb)))
    };
    // The entry the walker looks at: the queue's head, or with a staged
    // walk a register stage loaded from it (`WalkStage`).
    let (head, head_valid, entry_ok, stage) = if cfg.staged_walk() {
        let ok = in_bounds(&queue_head);
        let w = WalkStage::build(m, start, dim, row_words, &queue_head, queue_valid, ok);
        m.connect(queue, "out_ready_i", w.load);
        (w.entry.clone(), w.valid, w.ok, Some(w))
    } else {
        let ok = m.wire("entry_ok", in_bounds(&queue_head));
        (queue_head, queue_valid, ok, None)
    };
    let id = head.get("id");
    let sample = head.get("sample");
    let marker = head.get("marker");
    let sample_words = match &stage {
        Some(w) => SampleWords::Formed(w.sample_words),
        None => SampleWords::Factors(sample, row_words),
    };

    // ------------------------------------------------------------ walker
    let state = m.fsm("tile_state", TileState::Idle);
    // Update: the id whose U is being accumulated, and whether the next
    // gradient row is its first (U starts at +0.0).
    // (With a staged walk the stage tells whether an entry continues the
    // run, so the id itself is not kept.)
    let cur_id = match &stage {
        Some(_) => None,
        None => Some(m.reg_reset("cur_id", Ty::u(31), 0)),
    };
    let cur_id_q = || cur_id.expect("an unstaged walk keeps the run's id").q();
    let first = m.reg_reset("first", Ty::BOOL, 0);
    let acc_ctr = m.reg_reset("acc_ctr", Ty::u(nc_bits), 0);
    let acc_last = m.wire("acc_last", acc_ctr.q().is_eq(row_words - 1u32));

    // A pipelined update's rows: the slots of U (each ceil(D/8) scratchpad
    // words, used in turn), the rows accumulated and waiting for their reads
    // (a FIFO of ids, read in slot order) and the slots held (from a row's
    // first accumulation step until its last response enters).
    // The most slots (rows of up to 8 elements); a pass uses
    // `SparseCoreConfig::update_slots(D)` of them, as many as fit.
    let slots = cfg.update_slots(1);
    let slot_bits = bits_for(slots - 1);
    let hw_bits = aw + 2;
    let sp_words = m.lit(Ty::u(hw_bits), u64::from(words));
    let chunk_words = fit(row_words, hw_bits);
    let rows_q = row_fifo.map(|def| {
        let q = m.instance("row_queue", def);
        m.waive(
            "UNUSEDSIGNAL",
            "row_queue_count_o",
            "the slots held bound the queue's fill",
        );
        m.waive(
            "UNUSEDSIGNAL",
            "row_queue_in_ready_o",
            "a row in the queue holds a slot, and there are as many slots as places",
        );
        q
    });
    let rows_head = rows_q.map(|q| {
        (
            m.inst_output(q, "out_valid_o"),
            m.inst_output(q, "out_data_o"),
        )
    });

    // The row's place in HBM: element id x D, word w0, offset o in the word,
    // and its last word index nw - 1 = (o + D - 1) div 8. In an update the
    // row is the current id's (the queue's head is already the next entry);
    // in a forward pass it is the head's.
    // An update reads (and writes) the row of the id whose U it
    // accumulated: with a staged walk its place is kept from the stage when
    // the id's run begins (`cur_row`, loaded with `cur_id`).
    let cur_row = stage.as_ref().map(|w| {
        [
            m.reg("cur_word0", w.row.word0.ty()),
            m.reg("cur_offset", w.row.offset.ty()),
            m.reg("cur_end", w.row.end.ty()),
        ]
    });
    let row = match (&stage, cur_row) {
        (Some(w), Some([word0, offset, end])) => RowPlace {
            word0: m.wire("row_word0", mux(updating, word0.q(), w.row.word0)),
            offset: m.wire("row_offset", mux(updating, offset.q(), w.row.offset)),
            end: m.wire("row_end", mux(updating, end.q(), w.row.end)),
        },
        _ => {
            let upd_row_id = rows_head.map_or_else(cur_id_q, |(_, head_id)| head_id);
            let row_id = m.wire("row_id", mux(updating, upd_row_id, id.slice(0, 31)));
            RowPlace::of(m, "row", row_id, dim)
        }
    };
    let (w0, offset, end) = (row.word0, row.offset, row.end);
    let ew = end.ty().width;
    let k = m.reg_reset("word_k", Ty::u(k_bits), 0);
    let k_last = m.wire("word_k_last", k.q().zext(ew).is_eq(end >> 3u32));
    // The read counter after a word of the row is read.
    let k_step = mux(k_last, m.lit(Ty::u(k_bits), 0), k.q() + 1u32);
    let k_first = k.q().is_eq(0);
    // Lanes holding the row: from o in the first word, up to (o + D - 1)
    // mod 8 in the last.
    let full = m.lit(Ty::u(lanes), 0xFF);
    let lo = mux(k_first, offset, m.lit(Ty::u(3), 0));
    let hi = mux(k_last, end.slice(0, 3), m.lit(Ty::u(3), 7));
    let seven = m.lit(Ty::u(3), 7);
    let lane_mask = m.wire("lane_mask", (full << lo) & (full >> (seven - hi)));
    let base_bits = (sb + nc_bits).max(k_bits).max(aw) + 1;
    // The row being read and the slot of its U (the slots in turn, as the
    // accumulation used them).
    let reader = pipelined.then(|| {
        (
            m.reg_reset("read_slot", Ty::u(slot_bits), 0),
            m.reg_reset("read_u_base", Ty::u(aw), 0),
        )
    });
    let base_wide = if let Some((_, rd_ubase)) = reader {
        let upd = rd_ubase.q().zext(base_bits);
        mux(updating, upd, sample.mul_wide(row_words).zext(base_bits)) + k.q().zext(base_bits)
    } else {
        // U of an update sits at scratchpad words 0 .. ceil(D/8) - 1.
        let sample_base = match sample_words {
            SampleWords::Formed(product) => mux(updating, m.lit(product.ty(), 0), product),
            SampleWords::Factors(sample, row_words) => {
                let base_sample = mux(updating, m.lit(Ty::u(sb), 0), sample);
                base_sample.mul_wide(row_words)
            }
        };
        sample_base.zext(base_bits) + k.q().zext(base_bits)
    };
    let base = low_bits(
        m,
        "read_base",
        base_wide,
        aw,
        "s x ceil(D/8) + k stays below max_batch x ceil(max_dim/8) + 1; a row's word past \
         the scratchpad has every lane masked, so its wrapped address is never written",
    );

    let walking = m.wire("walking", state.is(TileState::Walk) & go);
    let row_reading = match rows_head {
        Some((valid, _)) => m.wire("row_reading", updating & valid),
        None => state.is(TileState::Row),
    };
    let req = m.wire(
        "req",
        (walking & !updating & head_valid & !marker & entry_ok) | row_reading,
    );
    m.output("req_o", req);
    m.output("req_addr_o", w0.zext(hab) + k.q().zext(hab));
    m.output("req_base_o", base);
    m.output("req_offset_o", offset);
    m.output("req_lanes_o", lane_mask);
    m.output("req_gain_o", head.get("gain"));
    if pipelined {
        m.output("req_last_o", k_last);
    }
    let read_fire = m.wire("read_fire", req & grant);
    let skip = m.wire("skip_entry", walking & head_valid & !marker & !entry_ok);
    m.output("skip_o", skip);
    let take_marker = m.wire("take_marker", walking & head_valid & marker);
    m.output("marker_o", take_marker);
    let accumulating = state.is(TileState::Accumulate);
    // With the add staged inside the loop, an accumulation step waits while
    // the adder holds an earlier step to its word, and an update's row reads
    // (which read U) wait until no step is left in the pipeline.
    let loop_wires = (cfg.loop_stages() > 0).then(|| {
        (
            m.wire_decl("acc_wait", Ty::BOOL),
            m.wire_decl("pipe_busy", Ty::BOOL),
        )
    });
    // A pipelined update's walk: an entry with an id other than the open
    // run's opens a new run in the next slot (when one is free), closing the
    // open one, as does an invalid entry or the marker; each entry's
    // gradient words are one step each, one per cycle.
    let entry_valid = m.wire(
        "upd_entry",
        walking & updating & head_valid & !marker & entry_ok,
    );
    if let (Some(w), Some(regs)) = (&stage, cur_row) {
        for (r, v) in regs.into_iter().zip([w.row.word0, w.row.offset, w.row.end]) {
            m.set_next(r, mux(entry_valid, v, r.q()));
        }
    }
    let pip = pipelined.then(|| {
        let run_open = m.reg_reset("run_open", Ty::BOOL, 0);
        let held = m.reg_reset("slots_held", Ty::u(bits_for(slots)), 0);
        // The scratchpad words of the slots held: another slot is free if
        // its ceil(D/8) words fit too.
        let held_words = m.reg_reset("slot_words_held", Ty::u(hw_bits), 0);
        let at_word0 = acc_ctr.q().is_eq(0);
        let new_run = m.wire("new_run", !run_open.q() | !id.is_eq(cur_id_q().zext(32)));
        let slot_free = m.wire(
            "slot_free",
            held.q().is_lt(slots) & !(held_words.q() + chunk_words).is_gt(sp_words),
        );
        let step = m.wire(
            "upd_step",
            entry_valid & (!(at_word0 & new_run) | slot_free),
        );
        let opening = m.wire("run_opens", step & at_word0 & new_run);
        let run_ends = m.wire("run_ends", updating & (take_marker | skip));
        Pipelined {
            run_open,
            held,
            held_words,
            step,
            opening,
            run_ends,
            closes: m.wire("run_closes", run_open.q() & (run_ends | opening)),
            first_now: mux(at_word0, new_run, first.q()),
            next_slot: m.reg_reset("next_slot", Ty::u(slot_bits), 0),
            next_ubase: m.reg_reset("next_u_base", Ty::u(aw), 0),
            cur_ubase: m.reg_reset("u_base", Ty::u(aw), 0),
        }
    });
    let (acc_step, row_go) = match (loop_wires, &pip) {
        (None, Some(p)) => (p.step, head_valid),
        (None, None) => (accumulating, head_valid),
        (Some((acc_wait, pipe_busy)), _) => (
            m.wire("acc_step", accumulating & !acc_wait.value()),
            m.wire("row_go", head_valid & !pipe_busy.value()),
        ),
    };
    let acc_sel = if pipelined { acc_step } else { accumulating };
    let u_base = pip.as_ref().map(|p| {
        m.wire(
            "step_u_base",
            mux(p.opening, p.next_ubase.q(), p.cur_ubase.q()),
        )
    });
    let pop = m.wire(
        "entry_pop",
        take_marker | skip | (read_fire & k_last & !updating) | (acc_step & acc_last),
    );
    match &stage {
        Some(w) => m.drive(w.pop, pop),
        None => m.connect(queue, "out_ready_i", pop),
    }

    // This tile's reads in flight: granted, not yet answered.
    let ob = bits_for(cfg.hbm_inflight());
    let outstanding = m.reg_reset("outstanding", Ty::u(ob), 0);
    m.set_next(
        outstanding,
        outstanding.q() + read_fire.zext(ob) - rsp_valid.zext(ob),
    );

    // --------------------------------------------------- stage 1 registers
    let s1_valid = m.reg_reset("s1_valid", Ty::BOOL, 0);
    let s1_en = m.reg("s1_en", Ty::u(lanes));
    let s1_data = m.reg("s1_data", Ty::u(WORD_BITS));
    let s1_gain = m.reg("s1_gain", Ty::u(32));
    let s1_acc = m.reg_reset("s1_acc", Ty::BOOL, 0);
    let s1_first = m.reg("s1_first", Ty::BOOL);
    let s1_off = m.reg("s1_off", Ty::u(3));
    let s1_lanes = m.reg("s1_lanes", Ty::u(lanes));
    m.set_next(s1_valid, rsp_valid);
    m.set_next(s1_en, rsp_en);
    m.set_next(s1_data, rsp_data);
    m.set_next(s1_gain, mux(acc_sel, head.get("gain"), rsp_gain));
    m.set_next(s1_acc, acc_step);
    m.set_next(s1_first, pip.as_ref().map_or(first.q(), |p| p.first_now));
    m.set_next(s1_off, rsp_off);
    m.set_next(s1_lanes, rsp_lanes);
    let s1_upd = m.wire("s1_update", s1_valid.q() & updating);

    let (sums, a_upd, a_off, a_lanes, in_flight) = if let LaneDefs::Looped { mul, add } = lane_defs
    {
        let next = mode_next.expect("a staged loop's tile takes the mode's next value");
        let updating = hw::blocks::kept_register_reset(design, m, "lane_mode", next, 0);
        // The add has A = loop_stages stages inside the read-modify-write
        // loop. An item (a response, an accumulation step) enters the
        // multiplier at stage 1; its product, registered, reaches stage
        // 1 + M (M = product_stages: the multiplier's stages and that
        // register), where the partial sum it adds to arrives (read at stage
        // M) and the add starts; the sum is written at stage K = 1 + M + A. An item
        // enters only when no earlier item writing one of its partial sums
        // is in stages 1 .. A + 1, so its read (at stage M) comes after
        // their writes, and the adds of each partial sum keep their order.
        let (acc_wait, pipe_busy) = loop_wires.expect("a staged loop");
        let m_stages = cfg.product_stages();
        let a_stages = cfg.loop_stages();
        let last = m_stages + a_stages;
        let (add_at, write_at) = (m_stages as usize, last as usize);
        // The response's word in bank order: rotated here, with late
        // rotations, lane by lane on each lane's own copy of the offset.
        let s1_word = if late_rotations(cfg) {
            let word_lanes: Vec<Expr> = (0..lanes).map(|b| s1_data.q().slice(32 * b, 32)).collect();
            let mut banks: Vec<Expr> = (0..lanes)
                .map(|b| {
                    let off = hw::blocks::kept_register(
                        design,
                        m,
                        &format!("lane{b}_rsp_offset"),
                        rsp_off,
                    );
                    let from = low_bits(
                        m,
                        &format!("lane{b}_rsp_lane"),
                        off + b,
                        3,
                        "lane (b + o) mod 8 of the word",
                    );
                    m.wire(&format!("lane{b}_rsp_word"), select(from, &word_lanes))
                })
                .collect();
            banks.reverse();
            m.wire("s1_word", cat(&banks))
        } else {
            s1_data.q()
        };
        let valid_at = delay_taps(m, "valid_stage", s1_valid.q(), last, Some(0));
        let acc_at = delay_taps(m, "acc_stage", s1_acc.q(), last, Some(0));
        let full = m.lit(Ty::u(lanes), 0xFF);
        let none = m.lit(Ty::u(lanes), 0);
        // The banks each item writes: every bank for an accumulation step,
        // the response's lanes in a forward pass, none for an update's row.
        let s1_wen = m.wire(
            "s1_wen",
            mux(
                s1_acc.q(),
                full,
                mux(s1_valid.q() & !updating, s1_en.q(), none),
            ),
        );
        let wen_at = delay_taps(m, "wen_stage", s1_wen, last, Some(0));
        let a_first = delay(m, "first_stage", s1_first.q(), m_stages, None);
        let a_data = delay(m, "data_stage", s1_word, m_stages, None);
        let add_acc = acc_at[add_at];
        let add_upd = m.wire("add_update", valid_at[add_at] & updating);
        let w_upd = m.wire("a_update", valid_at[write_at] & updating);
        let w_off = delay(m, "off_stage", s1_off.q(), last, None);
        let w_lanes = delay(m, "lanes_stage", s1_lanes.q(), last, None);
        let busy = valid_at
            .iter()
            .chain(&acc_at)
            .copied()
            .reduce(|a, b| a | b)
            .expect("a stage");
        let busy = m.wire("pipe_items", busy);
        m.drive(pipe_busy, busy);
        let acc_word = acc_address(m, cfg, sample_words, acc_ctr.q(), acc_sel, u_base);

        let zero32 = m.lit(Ty::u(32), 0);
        let mut sums = Vec::new();
        let mut psums = Vec::new();
        let mut rsp_hits = Vec::new();
        let mut acc_hits = Vec::new();
        for b in 0..lanes {
            let addr = m.wire(&format!("bank{b}_addr"), rsp_base.slice(aw * b, aw));
            let s1_addr = m.reg(&format!("s1_bank{b}_addr"), Ty::u(aw));
            m.set_next(s1_addr, mux(acc_sel, acc_word, addr));
            let addr_at = delay_taps(m, &format!("bank{b}_addr_stage"), s1_addr.q(), last, None);
            // Items in stages 1 .. A + 1 writing this bank at the word the
            // head response or the accumulation step would use.
            for k in 0..=a_stages as usize {
                let writes = wen_at[k].bit(b);
                rsp_hits.push(writes & addr_at[k].is_eq(addr) & rsp_en.bit(b));
                acc_hits.push(writes & addr_at[k].is_eq(acc_word));
            }
            let bank = m.memory_depth(&format!("psum_bank{b}"), Ty::u(32), u64::from(words));
            let add_lane = m.instance(&format!("lane{b}_add"), add);
            let sum = m.inst_output(add_lane, "sum_o");
            let write_en = clear | wen_at[write_at].bit(b);
            let write_addr = mux(clear, clear_addr, addr_at[write_at]);
            m.mem_write(bank, write_en, write_addr, mux(clear, zero32, sum));
            // A registered read (block RAM): a partial sum at stage M for
            // the add; an update's U as its response enters (stage 0), for
            // the multiplier; the fold's words.
            let read_addr = mux(updating & !acc_at[add_at - 1], addr, addr_at[add_at - 1]);
            let p = m.mem_read(bank, None, mux(fold, fold_addr, read_addr));
            let mul_lane = m.instance(&format!("lane{b}"), mul);
            let e = s1_word.slice(32 * b, 32);
            let y = mux(s1_acc.q(), grad.slice(32 * b, 32), mux(s1_upd, p, e));
            // The multiplier's operand registers (its `operands` cut), outside
            // it: the gain or learning rate is the same in every lane, and
            // Yosys would merge eight plain copies into one register whose
            // fanout reaches every lane's DSP blocks; each lane keeps its own.
            let gain = hw::blocks::kept_register(
                design,
                m,
                &format!("lane{b}_gain"),
                mux(s1_upd, lr, s1_gain.q()),
            );
            let operand = m.reg(&format!("lane{b}_operand"), Ty::u(32));
            m.set_next(operand, y);
            m.connect(mul_lane, "a_i", gain);
            m.connect(mul_lane, "b_i", operand.q());
            let product = m.reg(&format!("lane{b}_product"), Ty::u(32));
            let p_out = m.inst_output(mul_lane, "p_o");
            m.set_next(product, p_out);
            // sub32(x, p) is add32(x, -p).
            let addend = product.q() ^ cat(&[add_upd, m.lit(Ty::u(31), 0)]);
            let a_e = a_data.slice(32 * b, 32);
            let x = mux(add_acc, mux(a_first, zero32, p), mux(add_upd, a_e, p));
            m.connect(add_lane, "a_i", x);
            m.connect(add_lane, "b_i", addend);
            sums.push(sum);
            psums.push(p);
        }
        let any = |v: &[Expr]| v.iter().copied().reduce(|a, b| a | b).expect("a bank");
        let rsp_wait = m.wire("rsp_wait", !updating & any(&rsp_hits));
        m.output("rsp_wait_o", rsp_wait);
        m.drive(acc_wait, any(&acc_hits));
        sums.reverse();
        psums.reverse();
        let sums = m.wire("lane_sums", cat(&sums));
        m.output("psum_o", cat(&psums));
        (sums, w_upd, w_off, w_lanes, busy)
    } else {
        // The add stage A = 1 + depth: the stage-1 values the add and the
        // writes need, delayed by the multiplier's latency.
        let valid_at = delay_taps(m, "valid_stage", s1_valid.q(), depth, Some(0));
        let acc_at = delay_taps(m, "acc_stage", s1_acc.q(), depth, Some(0));
        let a_valid = *valid_at.last().expect("a stage");
        let a_acc = *acc_at.last().expect("a stage");
        let a_en = delay(m, "en_stage", s1_en.q(), depth, None);
        let a_first = delay(m, "first_stage", s1_first.q(), depth, None);
        let a_off = delay(m, "off_stage", s1_off.q(), depth, None);
        let a_lanes = delay(m, "lanes_stage", s1_lanes.q(), depth, None);
        let a_data = delay(m, "data_stage", s1_data.q(), depth, None);
        let a_upd = if depth == 0 {
            s1_upd
        } else {
            m.wire("a_update", a_valid & updating)
        };
        // A combine item still in the multiplier (not yet written).
        let in_flight = valid_at
            .iter()
            .copied()
            .reduce(|a, b| a | b)
            .expect("a stage");
        let acc_word = acc_address(m, cfg, sample_words, acc_ctr.q(), acc_sel, u_base);

        // ------------------------------------------- scratchpad and combine
        let zero32 = m.lit(Ty::u(32), 0);
        let mut sums = Vec::new();
        let mut psums = Vec::new();
        let mut us = Vec::new();
        for b in 0..lanes {
            // Bank b holds element d with d mod 8 = b; its lane came from word
            // lane b + o, which belongs to the previous scratchpad word when
            // b + o >= 8.
            let wraps = if b == 0 {
                m.lit(Ty::BOOL, 0)
            } else {
                rsp_off.is_ge(8 - b)
            };
            let addr = m.wire(&format!("bank{b}_addr"), rsp_base - wraps.zext(aw));
            let s1_addr = m.reg(&format!("s1_bank{b}_addr"), Ty::u(aw));
            m.set_next(s1_addr, mux(acc_sel, acc_word, addr));
            let addr_at = delay_taps(m, &format!("bank{b}_addr_stage"), s1_addr.q(), depth, None);
            let a_addr = *addr_at.last().expect("a stage");
            let bank = m.memory_depth(&format!("psum_bank{b}"), Ty::u(32), u64::from(words));
            let e = s1_data.q().slice(32 * b, 32);
            let g_lane = grad.slice(32 * b, 32);
            match lane_defs {
                LaneDefs::Combinational(lane_def) => {
                    let lane = m.instance(&format!("lane{b}"), lane_def);
                    let sum = m.inst_output(lane, "sum_o");
                    let write_en =
                        clear | s1_acc.q() | (s1_valid.q() & !updating & s1_en.q().bit(b));
                    let write_addr = mux(clear, clear_addr, s1_addr.q());
                    let write_data = mux(clear, zero32, sum);
                    m.mem_write(bank, write_en, write_addr, write_data);
                    let p = m.mem_read_write_first(
                        bank,
                        None,
                        mux(fold, fold_addr, mux(acc_sel, acc_word, addr)),
                    );
                    // accumulate: U + g x G (U read as +0 for an id's first row);
                    // update: E - lr x U; forward: P + g x E. A pipelined
                    // update's rows go to the shared update lanes instead
                    // (a response may enter with an accumulation step).
                    let upd = if pipelined {
                        m.lit(Ty::BOOL, 0)
                    } else {
                        s1_upd
                    };
                    let x = mux(s1_acc.q(), mux(s1_first.q(), zero32, p), mux(upd, e, p));
                    let y = mux(s1_acc.q(), g_lane, mux(upd, p, e));
                    m.connect(lane, "x_i", x);
                    m.connect(lane, "y_i", y);
                    m.connect(lane, "g_i", mux(upd, lr, s1_gain.q()));
                    m.connect(lane, "neg_i", upd);
                    sums.push(sum);
                    psums.push(p);
                    if pipelined {
                        // A pipelined update's response reads its U on a
                        // port of its own, while the lanes keep accumulating.
                        us.push(m.mem_read(bank, None, addr));
                    }
                }
                LaneDefs::Looped { .. } => unreachable!("the staged loop is built above"),
                LaneDefs::Staged { mul, add } => {
                    // The product's operands are all there at stage 1 (an
                    // update's U was read with the response); the add's x, a
                    // partial sum or U, is read at stage `depth` so that it
                    // arrives with the product and, on the write-first port,
                    // sees the write of the item one stage ahead: the
                    // read-modify-write loop is the add alone.
                    let add_lane = m.instance(&format!("lane{b}_add"), add);
                    let sum = m.inst_output(add_lane, "sum_o");
                    let write_en = clear | a_acc | (a_valid & !updating & a_en.bit(b));
                    let write_addr = mux(clear, clear_addr, a_addr);
                    let write_data = mux(clear, zero32, sum);
                    m.mem_write(bank, write_en, write_addr, write_data);
                    let stage_before = depth as usize - 1;
                    let read_addr = mux(
                        updating & !acc_at[stage_before],
                        addr,
                        addr_at[stage_before],
                    );
                    let p = m.mem_read_write_first(bank, None, mux(fold, fold_addr, read_addr));
                    let mul_lane = m.instance(&format!("lane{b}"), mul);
                    let y = mux(s1_acc.q(), g_lane, mux(s1_upd, p, e));
                    m.connect(mul_lane, "a_i", mux(s1_upd, lr, s1_gain.q()));
                    m.connect(mul_lane, "b_i", y);
                    let product = m.inst_output(mul_lane, "p_o");
                    let a_e = a_data.slice(32 * b, 32);
                    let x = mux(a_acc, mux(a_first, zero32, p), mux(a_upd, a_e, p));
                    m.connect(add_lane, "x_i", x);
                    m.connect(add_lane, "p_i", product);
                    m.connect(add_lane, "neg_i", a_upd);
                    sums.push(sum);
                    psums.push(p);
                }
            }
        }
        sums.reverse();
        psums.reverse();
        let sums = m.wire("lane_sums", cat(&sums));
        m.output("psum_o", cat(&psums));
        if pipelined {
            us.reverse();
            m.output("u_o", cat(&us));
        }
        (sums, a_upd, a_off, a_lanes, in_flight)
    };

    let drained = m.wire("drained", outstanding.q().is_eq(0) & !in_flight);
    if let Some(p) = pip {
        let Pipelined {
            run_open,
            held,
            held_words,
            opening,
            run_ends,
            closes,
            next_slot,
            next_ubase,
            cur_ubase,
            ..
        } = p;
        let (rd_slot, rd_ubase) = reader.expect("a pipelined tile's reader");
        let rows_q = rows_q.expect("a row queue");
        // The shared update lanes write the rows back; the tile's own
        // results of an update's responses, and their lanes, go unused.
        for (name, why) in [
            (
                "lane_sums",
                "a pipelined update's rows are computed by the shared update lanes",
            ),
            (
                "s1_update",
                "a pipelined update's rows are computed by the shared update lanes",
            ),
            (
                "s1_off_q",
                "a pipelined update's rows are written by the shared update lanes",
            ),
            (
                "s1_lanes_q",
                "a pipelined update's rows are written by the shared update lanes",
            ),
        ] {
            m.waive("UNUSEDSIGNAL", name, why);
        }
        let _ = (a_upd, a_off, a_lanes);
        let row_pop = m.wire("row_pop", read_fire & k_last & updating);
        m.connect(rows_q, "in_valid_i", closes);
        m.connect(rows_q, "in_data_i", cur_id_q());
        m.connect(rows_q, "out_ready_i", row_pop);
        // Slots are used in turn; a slot's U starts at slot x ceil(D/8), and
        // the last slot is the one after which no other fits.
        let advance = |m: &mut hw::ModuleBuilder, slot: hw::Reg, ubase: hw::Reg, when: Expr| {
            let after_next = fit(ubase.q(), hw_bits) + chunk_words + chunk_words;
            let wraps = slot.q().is_eq(slots - 1) | after_next.is_gt(sp_words);
            let zero_s = m.lit(Ty::u(slot_bits), 0);
            let zero_a = m.lit(Ty::u(aw), 0);
            let next_s = mux(wraps, zero_s, slot.q() + 1u32);
            let next_u = mux(wraps, zero_a, ubase.q() + fit(row_words, aw));
            m.set_next(slot, mux(start, zero_s, mux(when, next_s, slot.q())));
            m.set_next(ubase, mux(start, zero_a, mux(when, next_u, ubase.q())));
        };
        advance(m, rd_slot, rd_ubase, row_pop);
        advance(m, next_slot, next_ubase, opening);
        let rsp_last = rsp_last.expect("a pipelined tile's response has a last flag");
        let release = rsp_valid & rsp_last & updating;
        let hb = held.q().width();
        m.set_next(held, held.q() + opening.zext(hb) - release.zext(hb));
        let zero_w = m.lit(Ty::u(hw_bits), 0);
        m.set_next(
            held_words,
            held_words.q() + mux(opening, chunk_words, zero_w) - mux(release, chunk_words, zero_w),
        );
        m.set_next(
            run_open,
            mux(start | run_ends, m.lit(Ty::BOOL, 0), run_open.q() | opening),
        );
        m.set_next(cur_ubase, mux(opening, next_ubase.q(), cur_ubase.q()));
        m.output(
            "finished_o",
            state.is(TileState::Idle) & drained & held.q().is_eq(0),
        );
    } else {
        // Back from bank order to the word's lanes: lane l takes bank
        // (l - o) mod 8.
        let back = m.lit(Ty::u(3), 0) - a_off;
        let kw = m.reg_reset("write_k", Ty::u(k_bits), 0);
        m.output("wr_valid_o", a_upd);
        m.output("wr_addr_o", w0.zext(hab) + kw.q().zext(hab));
        if late_rotations(cfg) {
            m.output("wr_data_o", sums);
            m.output("wr_back_o", back);
        } else {
            m.output("wr_data_o", rotate(sums, 32, back));
        }
        m.output("wr_mask_o", a_lanes);
        m.output("finished_o", state.is(TileState::Idle) & drained);
        let writes_idle = writes_idle.expect("a one-row update waits for its writes");
        let row_done = m.wire("row_done", drained & writes_idle);
        let same_id = m.wire(
            "same_id",
            head_valid
                & !marker
                & entry_ok
                & match &stage {
                    Some(w) => w.same_id,
                    None => id.is_eq(cur_id_q().zext(32)),
                },
        );
        // The row's writes count from its first word; the previous row's are
        // all out when its reads start.
        let row_start = m.wire("row_start", state.is(TileState::Next) & !same_id & row_go);
        m.set_next(
            kw,
            mux(
                row_start,
                m.lit(Ty::u(k_bits), 0),
                kw.q() + a_upd.zext(k_bits),
            ),
        );
        one_row_fsm(
            m,
            state,
            &OneRow {
                start,
                read_fire,
                k,
                k_last,
                k_step,
                take_marker,
                entry_valid,
                cur_id,
                id,
                first,
                acc_ctr,
                acc_last,
                acc_step,
                staged_loop: loop_wires.is_some(),
                same_id,
                row_go,
                row_done,
            },
        );
        return;
    }
    let p = pip.expect("a pipelined walker");
    m.fsm_states(state, |t| {
        t.state(TileState::Idle, |m| {
            m.if_(start, |m| {
                m.assign(k, 0);
                m.assign(acc_ctr, 0);
                state.goto(m, TileState::Walk);
            })
            .elif(read_fire, |m| {
                m.assign(k, k_step);
            });
        })
        .state(TileState::Walk, |m| {
            m.if_(read_fire, |m| {
                m.assign(k, k_step);
            });
            m.if_(take_marker, |m| state.goto(m, TileState::Idle));
            m.if_(acc_step, |m| {
                m.assign(
                    acc_ctr,
                    mux(acc_last, m.lit(Ty::u(nc_bits), 0), acc_ctr.q() + 1u32),
                );
                m.assign(first, p.first_now);
            });
            let cur_id = cur_id.expect("a pipelined walker keeps the run's id");
            m.if_(p.opening, |m| m.assign(cur_id, id.slice(0, 31)));
        });
    });
}

/// Where a row sits in HBM: the word holding its first element (element
/// id x D, div 8), that element's lane in the word (o) and o + D - 1, whose
/// div 8 is the row's last word index and whose mod 8 its last lane.
struct RowPlace {
    word0: Expr,
    offset: Expr,
    end: Expr,
}

impl RowPlace {
    /// The place of row `row_id` (31 bits) for rows of `dim` elements, as
    /// wires named `<prefix>_elem`, `_word0`, `_offset` and `_end`.
    fn of(m: &mut hw::ModuleBuilder, prefix: &str, row_id: Expr, dim: Expr) -> RowPlace {
        let db = dim.ty().width;
        let elem_name = format!("{prefix}_elem");
        let elem = m.wire(&elem_name, row_id.mul_wide(dim));
        let word0 = m.wire(&format!("{prefix}_word0"), elem.slice(3, 31 + db - 3));
        // (id x D) mod 8 from the factors' low bits alone, so that the
        // last-word test, and through it the queue's pop, does not wait for
        // the full product (a DSP block's, a route away). Written as shifted
        // adds, not a multiply, so that synthesis keeps it in LUTs rather
        // than spend a DSP block on three bits.
        let id_low = row_id.slice(0, 3);
        let zero3 = m.lit(Ty::u(3), 0);
        let offset = (0..db.min(3))
            .map(|b| {
                let shifted = id_low << m.lit(Ty::u(2), b);
                mux(dim.bit(b), shifted, zero3)
            })
            .reduce(|a, b| a + b)
            .expect("D has at least one bit");
        let offset = m.wire(&format!("{prefix}_offset"), offset);
        m.waive(
            "UNUSEDSIGNAL",
            &elem_name,
            &format!("its low three bits are formed from the factors' low bits ({prefix}_offset)"),
        );
        let ew = db.max(3) + 1;
        let end = m.wire(
            &format!("{prefix}_end"),
            offset.zext(ew) + dim.zext(ew) - 1u32,
        );
        RowPlace { word0, offset, end }
    }
}

/// A head's sample x ceil(D/8) (its first partial-sum word): from the
/// factors, or formed ahead (a staged walk's).
#[derive(Clone, Copy)]
enum SampleWords {
    Factors(Expr, Expr),
    Formed(Expr),
}

impl SampleWords {
    fn product(self) -> Expr {
        match self {
            SampleWords::Factors(sample, row_words) => sample.mul_wide(row_words),
            SampleWords::Formed(product) => product,
        }
    }
}

/// A staged walk's register stage between a tile's entry queue and its
/// walker: two places, each holding an entry, its bounds check and its
/// row's place, so that the walker's paths (to the HBM read address, to the
/// pop) start at registers rather than run from the queue through the
/// multiply.
///
/// The places are a ring: the walker's head is the place at the read
/// pointer, which its pop advances; the queue's head loads into the place
/// at the write pointer when the stage held fewer than two entries at the
/// cycle's start. So the load (the queue's pop, and the enable of every bit
/// of a place) depends on registers alone, not on the walker's pop, and an
/// entry taken every cycle still leaves one per cycle; an entry reaches the
/// walker a cycle after it reached the queue's head. The stage loads only
/// while the pass has its D, V and B (from the cycle after the start) and
/// until it loads the marker, so that an entry of the next pass, pushed
/// before its start, is not placed with this pass's D.
struct WalkStage {
    /// The queue's pop: the stage loads.
    load: Expr,
    /// The walker takes the head (driven by the walker).
    pop: hw::Wire,
    valid: Expr,
    entry: hw::Record,
    ok: Expr,
    row: RowPlace,
    /// The entry's sample x ceil(D/8): its first partial-sum word.
    sample_words: Expr,
    /// The head has the id of the entry loaded before it, which was a
    /// valid one: in an update, when the walker looks at the head after a
    /// run's entry, whether the head continues the run.
    same_id: Expr,
}

impl WalkStage {
    #[allow(clippy::too_many_arguments)]
    fn build(
        m: &mut hw::ModuleBuilder,
        start: Expr,
        dim: Expr,
        row_words: Expr,
        head: &hw::Record,
        head_valid: Expr,
        head_ok: Expr,
    ) -> WalkStage {
        let pop = m.wire_decl("walk_pop", Ty::BOOL);
        let fetching = m.reg_reset("walk_fetching", Ty::BOOL, 0);
        let held = m.reg_reset("walk_held", Ty::u(2), 0);
        let wr = m.reg_reset("walk_wr", Ty::BOOL, 0);
        let rd = m.reg_reset("walk_rd", Ty::BOOL, 0);
        let load = m.wire("walk_load", head_valid & fetching.q() & !held.q().is_eq(2));
        let marker = head.get("marker");
        m.set_next(
            fetching,
            mux(start, m.lit(Ty::BOOL, 1), fetching.q() & !(load & marker)),
        );
        m.set_next(held, held.q() + load.zext(2) - pop.value().zext(2));
        m.set_next(wr, wr.q() ^ load);
        m.set_next(rd, rd.q() ^ pop.value());
        let place = RowPlace::of(m, "walk_next", head.get("id").slice(0, 31), dim);
        let sample_words = m.wire(
            "walk_next_sample_words",
            head.get("sample").mul_wide(row_words),
        );
        // The id of the last entry loaded, if it was a valid one.
        let last_id = m.reg("walk_last_id", Ty::u(32));
        let last_valid = m.reg_reset("walk_last_valid", Ty::BOOL, 0);
        let same_id = m.wire(
            "walk_next_same_id",
            last_valid.q() & head.get("id").is_eq(last_id.q()),
        );
        m.if_(load, |m| {
            m.assign(last_id, head.get("id"));
            m.assign(last_valid, !marker & head_ok);
        });
        let incoming = [
            head_ok,
            place.word0,
            place.offset,
            place.end,
            sample_words,
            same_id,
        ];
        let mut entries = Vec::new();
        let mut fields = Vec::new();
        for k in 0..2u32 {
            let entry = m.reg_record(&format!("walk{k}"), head.ty());
            let names = ["ok", "word0", "offset", "end", "sample_words", "same_id"];
            let regs: Vec<hw::Reg> = names
                .iter()
                .zip(&incoming)
                .map(|(name, v)| m.reg(&format!("walk{k}_{name}"), v.ty()))
                .collect();
            let here = if k == 0 { !wr.q() } else { wr.q() };
            m.if_(load & here, |m| {
                m.assign_record(&entry, head);
                for (r, v) in regs.iter().zip(&incoming) {
                    m.assign(*r, *v);
                }
            });
            entries.push(entry.q());
            fields.push(regs);
        }
        // The head: the place at the read pointer.
        let pick = |m: &mut hw::ModuleBuilder, name: &str, a: Expr, b: Expr| {
            m.wire(&format!("walk_head_{name}"), mux(rd.q(), b, a))
        };
        let record_fields: Vec<(String, Expr)> = entries[0]
            .fields()
            .zip(entries[1].fields())
            .map(|((name, a), (_, b))| (name.to_string(), pick(m, name, a, b)))
            .collect();
        let named: Vec<(&str, Expr)> = record_fields
            .iter()
            .map(|(n, v)| (n.as_str(), *v))
            .collect();
        let entry = head.ty().pack(&named);
        let field = |m: &mut hw::ModuleBuilder, i: usize, name: &str| {
            pick(m, name, fields[0][i].q(), fields[1][i].q())
        };
        let ok = field(m, 0, "ok");
        let row = RowPlace {
            word0: field(m, 1, "word0"),
            offset: field(m, 2, "offset"),
            end: field(m, 3, "end"),
        };
        let sample_words = field(m, 4, "sample_words");
        let same_id = field(m, 5, "same_id");
        m.waive(
            "UNUSEDSIGNAL",
            "walk_head_sample",
            "the walker uses the head's sample through its product, formed as the stage loads \
             (walk_head_sample_words)",
        );
        m.waive(
            "UNUSEDSIGNAL",
            "walk_head_id",
            "the walker uses the head's id through what the stage formed from it as it loaded \
             (the row's place, walk_head_same_id)",
        );
        WalkStage {
            load,
            pop,
            valid: m.wire("walk_valid", !held.q().is_eq(0)),
            entry,
            ok,
            row,
            sample_words,
            same_id,
        }
    }
}

/// A pipelined update's walker: the open run, the slots, U's bases.
#[derive(Clone, Copy)]
struct Pipelined {
    run_open: hw::Reg,
    held: hw::Reg,
    held_words: hw::Reg,
    step: Expr,
    opening: Expr,
    run_ends: Expr,
    closes: Expr,
    first_now: Expr,
    next_slot: hw::Reg,
    next_ubase: hw::Reg,
    cur_ubase: hw::Reg,
}

/// What the one-id-at-a-time update's walker needs.
struct OneRow {
    start: Expr,
    read_fire: Expr,
    k: hw::Reg,
    k_last: Expr,
    k_step: Expr,
    take_marker: Expr,
    entry_valid: Expr,
    /// The run's id (none with a staged walk).
    cur_id: Option<hw::Reg>,
    id: Expr,
    first: hw::Reg,
    acc_ctr: hw::Reg,
    acc_last: Expr,
    acc_step: Expr,
    staged_loop: bool,
    same_id: Expr,
    row_go: Expr,
    row_done: Expr,
}

/// The walker of an update that handles one id at a time (and of a forward
/// pass): accumulate the id's U, read its row, wait for its writes.
fn one_row_fsm(m: &mut hw::ModuleBuilder, state: hw::Fsm<TileState>, w: &OneRow) {
    let OneRow {
        start,
        read_fire,
        k,
        k_last,
        k_step,
        take_marker,
        entry_valid,
        cur_id,
        id,
        first,
        acc_ctr,
        acc_last,
        acc_step,
        staged_loop,
        same_id,
        row_go,
        row_done,
    } = *w;
    m.fsm_states(state, |t| {
        t.state(TileState::Idle, |m| {
            m.if_(start, |m| {
                m.assign(k, 0);
                state.goto(m, TileState::Walk);
            });
        })
        .state(TileState::Walk, |m| {
            m.if_(read_fire, |m| {
                m.assign(k, k_step);
            });
            m.if_(take_marker, |m| state.goto(m, TileState::Idle));
            m.if_(entry_valid, |m| {
                if let Some(cur_id) = cur_id {
                    m.assign(cur_id, id.slice(0, 31));
                }
                m.assign(first, 1);
                m.assign(acc_ctr, 0);
                state.goto(m, TileState::Accumulate);
            });
        })
        .state(TileState::Accumulate, |m| {
            let step = |m: &mut hw::ModuleBuilder| {
                m.assign(acc_ctr, acc_ctr.q() + 1u32);
                m.if_(acc_last, |m| {
                    m.assign(acc_ctr, 0);
                    m.assign(first, 0);
                    state.goto(m, TileState::Next);
                });
            };
            if staged_loop {
                m.if_(acc_step, step);
            } else {
                step(m);
            }
        })
        .state(TileState::Next, |m| {
            m.if_(same_id, |m| state.goto(m, TileState::Accumulate))
                .elif(row_go, |m| {
                    m.assign(k, 0);
                    state.goto(m, TileState::Row);
                });
        })
        .state(TileState::Row, |m| {
            m.if_(read_fire, |m| {
                m.if_(k_last, |m| {
                    m.assign(k, 0);
                    state.goto(m, TileState::RowWait);
                })
                .else_(|m| m.assign(k, k.q() + 1u32));
            });
        })
        .state(TileState::RowWait, |m| {
            m.if_(row_done, |m| state.goto(m, TileState::Walk));
        });
    });
}

fn body(m: &mut hw::ModuleBuilder, cfg: &SparseCoreConfig, types: &Types, defs: &Defs) {
    use ports::*;
    let lanes = WORD_ELEMS;
    let tiles = cfg.tiles();
    let db = dim_bits(cfg);
    let bb = batch_bits(cfg);
    let sb = sample_bits(cfg);
    let spb = span_bits(cfg);
    let aw = act_addr_bits(cfg);
    let words = cfg.scratchpad_words();
    let nc_bits = row_words_bits(cfg);
    let tb = tile_bits(cfg);

    // ---------------------------------------------------------------- ports
    let start = m.input(START, Ty::BOOL);
    let rows_in = m.input(ROWS, Ty::u(32));
    let dim_in = m.input(DIM, Ty::u(db));
    let batch_in = m.input(BATCH, Ty::u(bb));
    let ent_valid = m.input(ENT_VALID, Ty::BOOL);
    let ent_marker = m.input(ENT_MARKER, Ty::BOOL);
    let ent = types.entry.pack(&[
        ("marker", ent_marker),
        ("id", m.input(ENT_ID, Ty::u(32))),
        ("sample", m.input(ENT_SAMPLE, Ty::u(sb))),
        ("gain", m.input(ENT_GAIN, Ty::u(32))),
    ]);
    let rd_ready = m.input(HBM_RD_READY, Ty::BOOL);
    let rsp_valid = m.input(HBM_RSP_VALID, Ty::BOOL);
    let rsp_data = m.input(HBM_RSP_DATA, Ty::u(WORD_BITS));
    let act_rd_en = m.input(ACT_RD_EN, Ty::BOOL);
    let act_rd_addr = m.input(ACT_RD_ADDR, Ty::u(aw));
    let mode_in = m.input(MODE, Ty::BOOL);
    let lr_in = m.input(LR, Ty::u(32));
    let act_wr_en = m.input(ACT_WR_EN, Ty::BOOL);
    let act_wr_addr = m.input(ACT_WR_ADDR, Ty::u(aw));
    let act_wr_data = m.input(ACT_WR_DATA, Ty::u(WORD_BITS));
    let wr_ready = m.input(HBM_WR_READY, Ty::BOOL);

    // ------------------------------------------------------ pass parameters
    let state = m.fsm("pass_state", PassState::Idle);
    let rows = m.reg_reset("rows_q", Ty::u(32), 0);
    let dim = m.reg_reset("dim_q", Ty::u(db), 1);
    let batch = m.reg_reset("batch_q", Ty::u(bb), 1);
    let updating = m.reg_reset("mode_q", Ty::BOOL, 0);
    let lr = m.reg_reset("lr_q", Ty::u(32), 0);
    // Scratchpad words per row, ceil(D / 8), and per pass.
    let words_of = |m: &mut hw::ModuleBuilder, d: Expr| {
        if db > 3 {
            d.slice(3, db - 3).zext(nc_bits) + d.slice(0, 3).any().zext(nc_bits)
        } else {
            m.lit(Ty::u(1), 1)
        }
    };
    let loop_staged = cfg.loop_stages() > 0;
    let taken = start & state.is(PassState::Idle);
    let row_words = if loop_staged && db > 3 {
        // Sampled with D at the start, so that the tiles' accumulation
        // address (into the activation buffer's block RAM) starts from a
        // register rather than from D through the rounding add.
        let words_in = words_of(m, dim_in);
        let r = m.reg_reset("row_words_q", Ty::u(nc_bits), 1);
        m.set_next(r, mux(taken, words_in, r.q()));
        r.q()
    } else {
        let words = words_of(m, dim.q());
        m.wire("row_words", words)
    };
    let span_last = if loop_staged {
        // B x ceil(D/8) - 1 from the start's inputs into a register, so the
        // product is not on the sequencer's paths during the pass.
        let words_in = words_of(m, dim_in);
        let r = m.reg_reset("span_last_q", Ty::u(spb), 0);
        m.set_next(r, mux(taken, batch_in.mul_wide(words_in) - 1u32, r.q()));
        r.q()
    } else {
        let span = m.wire("span", batch.q().mul_wide(row_words));
        m.wire("span_last", span - 1u32)
    };
    let ctr = m.reg_reset("ctr", Ty::u(spb), 0);
    let ctr_at_last = m.wire("ctr_at_last", ctr.q().is_eq(span_last));
    let ctr_word = fit(ctr.q(), aw);
    let idle = state.is(PassState::Idle);
    let start_fire = m.wire("start_fire", start & idle);
    // The mode changes only when a pass starts; its next value is a wire of
    // its own, which the tiles' copies of the register load too.
    let mode_next = m.wire("mode_next", mux(start_fire, mode_in, updating.q()));
    m.set_next(updating, mode_next);
    // The tile being folded (forward) or walking (update).
    let fold_tile = m.reg_reset("fold_tile", Ty::u(tb), 0);
    let update_tile = m.reg_reset("update_tile", Ty::u(tb), 0);
    let last_fold = m.wire("last_fold", fold_tile.q().is_eq(tiles - 1));
    let last_update = m.wire("last_update", update_tile.q().is_eq(tiles - 1));
    let clearing = state.is(PassState::Clear);
    let folding = state.is(PassState::Fold);
    let forward_run = m.wire("forward_run", state.is(PassState::FoldWait) | folding);
    let update_run = state.is(PassState::Update);

    // ------------------------------------------------------------- tiles
    let insts: Vec<_> = (0..tiles)
        .map(|t| m.instance(&format!("tile{t}"), &defs.tile))
        .collect();
    let out = |m: &mut hw::ModuleBuilder, port: &str| -> Vec<Expr> {
        insts.iter().map(|&i| m.inst_output(i, port)).collect()
    };
    let any = |v: &[Expr]| v.iter().copied().reduce(|a, b| a | b).expect("a tile");
    let reqs = out(m, "req_o");
    let finished = out(m, "finished_o");
    let markers = out(m, "marker_o");
    let skips = out(m, "skip_o");
    let accs = out(m, "acc_o");
    let acc_addrs = out(m, "acc_addr_o");
    let psums = out(m, "psum_o");
    let pipelined = cfg.pipelined_update();
    let req_addrs = out(m, "req_addr_o");
    let req_bases = out(m, "req_base_o");
    let req_offsets = out(m, "req_offset_o");
    let req_lanes = out(m, "req_lanes_o");
    let req_gains = out(m, "req_gain_o");
    let req_lasts = if pipelined {
        out(m, "req_last_o")
    } else {
        Vec::new()
    };
    let readies = out(m, "ent_ready_o");

    // -------------------------------------------------------- dispatcher
    // The tile whose list the stream is in; a marker moves it on.
    let disp = m.reg_reset("dispatch_tile", Ty::u(tb), 0);
    let ent_ready = m.wire("ent_ready", select(disp.q(), &readies));
    m.output(ENT_READY, ent_ready);
    let ent_push = m.wire("ent_push", ent_valid & ent_ready);
    let disp_last = disp.q().is_eq(tiles - 1);
    m.set_next(
        disp,
        mux(
            ent_push & ent_marker,
            mux(disp_last, m.lit(Ty::u(tb), 0), disp.q() + 1u32),
            disp.q(),
        ),
    );

    // ----------------------------------------------------------- arbiter
    // Reads granted whose responses have not entered the combine: the tag
    // FIFO's words, or with a staged loop the count of the tag ring.
    let tag_q = defs.tag.as_ref().map(|def| m.instance("read_tags", def));
    let ring = match tag_q {
        Some(q) => {
            m.waive(
                "UNUSEDSIGNAL",
                "read_tags_count_o",
                "room for another read is the tag FIFO's in_ready_o",
            );
            Err(m.inst_output(q, "in_ready_o"))
        }
        None => {
            let inflight = cfg.hbm_inflight();
            let pw = bits_for(inflight);
            Ok(Ring {
                held: m.reg_reset("tags_held", Ty::u(pw), 0),
                tag_wr: m.reg_reset("tag_wr_ptr", Ty::u(pw), 0),
                rsp_wr: m.reg_reset("rsp_wr_ptr", Ty::u(pw), 0),
                rsp_written: m.reg_reset("rsp_written", Ty::u(pw), 0),
                rd: m.reg_reset("rsp_rd_ptr", Ty::u(pw), 0),
                tags: m.memory_depth("tag_ring", types.tag.ty(), u64::from(inflight)),
                rsps: m.memory_depth("rsp_ring", Ty::u(WORD_BITS), u64::from(inflight)),
            })
        }
    };
    let tag_room = match &ring {
        Err(room) => *room,
        Ok(r) => m.wire("tag_room", r.held.q().is_ne(cfg.hbm_inflight())),
    };
    let mut req_bits = reqs.clone();
    req_bits.reverse();
    let req_vec = m.wire("req_vec", cat(&req_bits));
    // Round robin: the lowest requesting tile at or above the pointer, else
    // the lowest requesting tile.
    let pointer = m.reg_reset("rr_pointer", Ty::u(tb), 0);
    let all = m.lit(Ty::u(tiles), (1u64 << tiles) - 1);
    let upper = m.wire("req_upper", req_vec & (all << pointer.q()));
    let pick = mux(
        upper.any(),
        lowest_set(m, upper, tb),
        lowest_set(m, req_vec, tb),
    );
    // A read offered and not accepted stays offered, unchanged, until it is
    // (valid/ready: the address must not change under a stalled request).
    // The tile keeps requesting that word until its read is accepted, and
    // the tag FIFO only gains room meanwhile, so the valid stays high too.
    let held = m.reg_reset("rd_held", Ty::BOOL, 0);
    let held_tile = m.reg("rd_held_tile", Ty::u(tb));
    let chosen = m.wire("grant_tile", mux(held.q(), held_tile.q(), pick));
    // An update shares the one channel between reads and writes: a queued
    // write goes first unless a read is being held offered. One id at a
    // time, a row's first writes can be queued while its later reads are
    // still offered (under backpressure); pipelined, a read also counts
    // against `hbm_inflight` until its write is accepted.
    let write_waiting = m.wire_decl("write_waiting", Ty::BOOL);
    let credits =
        pipelined.then(|| m.reg_reset("update_credits", Ty::u(bits_for(cfg.hbm_inflight())), 0));
    let room = match credits {
        Some(credits) => tag_room & credits.q().is_lt(cfg.hbm_inflight()),
        None => tag_room,
    };
    let read_room = m.wire("read_room", room & (!write_waiting.value() | held.q()));
    let rd_valid = m.wire("rd_valid", req_vec.any() & read_room);
    m.output(HBM_RD_VALID, rd_valid);
    m.output(HBM_RD_ADDR, select(chosen, &req_addrs));
    let fire = m.wire("read_fire", rd_valid & rd_ready);
    m.set_next(held, rd_valid & !rd_ready);
    m.set_next(held_tile, chosen);
    let chosen_last = chosen.is_eq(tiles - 1);
    m.set_next(
        pointer,
        mux(
            start_fire,
            m.lit(Ty::u(tb), 0),
            mux(
                fire,
                mux(chosen_last, m.lit(Ty::u(tb), 0), chosen + 1u32),
                pointer.q(),
            ),
        ),
    );
    if let Some(q) = tag_q {
        m.connect(q, "in_valid_i", fire);
    }
    let (tag, tag_write) = if cfg.loop_stages() > 0 {
        // The grant's fields are registered first and the banks' words
        // computed from the registers, so that neither the row's address
        // arithmetic nor the ring's write follows the other in one cycle;
        // the tag reaches its ring a cycle after the grant, long before its
        // response can enter.
        let written = m.reg_reset("grant_valid", Ty::BOOL, 0);
        m.set_next(written, fire);
        let tile_q = m.registered("grant_tile", chosen);
        let base = m.registered("grant_base", select(chosen, &req_bases));
        let offset = m.registered("grant_offset", select(chosen, &req_offsets));
        let lanes_of = m.registered("grant_lanes", select(chosen, &req_lanes));
        let gain = m.registered("grant_gain", select(chosen, &req_gains));
        let mut addrs: Vec<Expr> = (0..lanes).map(|b| bank_addr(m, base, offset, b)).collect();
        addrs.reverse();
        let tag = types.tag.pack(&[
            ("tile", tile_q),
            ("bank_addr", cat(&addrs)),
            ("bank_en", rotate(lanes_of, 1, offset)),
            ("offset", offset),
            ("lanes", lanes_of),
            ("gain", gain),
        ]);
        (tag, written.q())
    } else {
        let mut fields = vec![
            ("tile", chosen),
            ("base", select(chosen, &req_bases)),
            ("offset", select(chosen, &req_offsets)),
            ("lanes", select(chosen, &req_lanes)),
            ("gain", select(chosen, &req_gains)),
        ];
        if pipelined {
            fields.push(("addr", select(chosen, &req_addrs)));
            fields.push(("last", select(chosen, &req_lasts)));
        }
        let tag = types.tag.pack(&fields);
        (tag, fire)
    };
    let (tag_valid, tag_word, word, issue) = match (tag_q, &ring) {
        (Some(q), _) => {
            m.connect(q, "in_data_i", tag.bits());

            // ------------------------------------------------------- responses
            let tag_valid = m.inst_output(q, "out_valid_o");
            let tag_word = m.inst_output(q, "out_data_o");
            m.connect(q, "out_ready_i", rsp_valid);
            (tag_valid, tag_word, rsp_data, None)
        }
        (None, Ok(r)) => {
            // Tags and responses wait in two rings, in grant and arrival
            // order, and leave together when the response enters its tile's
            // combine: a read counts against `hbm_inflight` until then, so
            // neither ring (as deep) can overflow. Each head is one of two
            // registered memory reads, at the read pointer and one past
            // it, both addressed from the pointer's register; whether the
            // head entered, registered, chooses between them. So an entry's
            // decision reaches one register, not the rings' read addresses
            // (ECP5-85F, depth 6: the interlock through the pointer's next
            // value into the response ring's read data, 18.5 ns). A
            // response written in cycle x is read from x + 1, so it is at
            // the head from x + 2.
            let inflight = cfg.hbm_inflight();
            let slot = |p: Expr| fit(p, bits_for(inflight - 1).max(1));
            m.set_next(r.tag_wr, mux(tag_write, r.tag_wr.q() + 1u32, r.tag_wr.q()));
            m.mem_write(r.tags, tag_write, slot(r.tag_wr.q()), tag.bits());
            m.set_next(r.rsp_wr, mux(rsp_valid, r.rsp_wr.q() + 1u32, r.rsp_wr.q()));
            m.set_next(r.rsp_written, r.rsp_wr.q());
            m.mem_write(r.rsps, rsp_valid, slot(r.rsp_wr.q()), rsp_data);
            let head = m.wire("rsp_head", r.rsp_written.q().is_ne(r.rd.q()));
            let issue = m.wire_decl("rsp_issue", Ty::BOOL);
            let rd = r.rd.q();
            m.set_next(r.rd, rd + issue.value().zext(rd.width()));
            let held = r.held.q();
            let pw = held.width();
            m.set_next(r.held, held + fire.zext(pw) - issue.value().zext(pw));
            let rd_after = low_bits(
                m,
                "rsp_rd_after",
                rd + 1u32,
                bits_for(inflight - 1).max(1),
                "the slot past the read pointer: its low bits address the rings",
            );
            let entered = m.reg_reset("rsp_entered", Ty::BOOL, 0);
            m.set_next(entered, issue.value());
            let tag_stay = m.mem_read(r.tags, None, slot(rd));
            let tag_move = m.mem_read(r.tags, None, rd_after);
            let word_stay = m.mem_read(r.rsps, None, slot(rd));
            let word_move = m.mem_read(r.rsps, None, rd_after);
            let tag_word = m.wire("rsp_head_tag", mux(entered.q(), tag_move, tag_stay));
            let word = m.wire("rsp_head_word", mux(entered.q(), word_move, word_stay));
            (head, tag_word, word, Some(issue))
        }
        (None, Err(_)) => unreachable!("a tag FIFO's room comes with the FIFO"),
    };
    let rtag = types.tag.unpack(tag_word);
    let r_off = rtag.get("offset");
    let issue = issue.map(|w| {
        let waits = out(m, "rsp_wait_o");
        let go = tag_valid & !select(rtag.get("tile"), &waits);
        m.drive(w, go);
        w.value()
    });
    // Rotate the word so that lane (b + o) mod 8 lands in bank b (in the
    // tiles, with late rotations).
    let rotated = if late_rotations(cfg) {
        word
    } else {
        m.wire("rsp_rotated", rotate(word, 32, r_off))
    };
    let bank_en = if cfg.loop_stages() > 0 {
        m.wire("rsp_bank_en", rtag.get("bank_en"))
    } else {
        m.wire("rsp_bank_en", rotate(rtag.get("lanes"), 1, r_off))
    };
    // A response with no read outstanding is outside the protocol; ignored.
    let rsp_ok = issue.unwrap_or_else(|| m.wire("rsp_ok", rsp_valid & tag_valid));

    // ------------------------------------------------- activation buffer
    let acts = m.memory_depth("act_buf", Ty::u(WORD_BITS), u64::from(words));
    let acc_any = m.wire("acc_any", any(&accs));
    let act_rd = m.mem_read(
        acts,
        Some(folding | acc_any | act_rd_en),
        mux(
            folding,
            ctr_word,
            mux(acc_any, select(update_tile.q(), &acc_addrs), act_rd_addr),
        ),
    );
    m.output(ACT_RD_DATA, act_rd);

    // --------------------------------------------------------- fold unit
    // The fold adder has `depth` stages: a word read in cycle c is written
    // in c + 1 + depth.
    let depth = cfg.add_stages();
    let s1_fold = m.reg_reset("s1_fold", Ty::BOOL, 0);
    let s1_fold_first = m.reg("s1_fold_first", Ty::BOOL);
    let s1_fold_addr = m.reg("s1_fold_addr", Ty::u(aw));
    m.set_next(s1_fold, folding);
    m.set_next(s1_fold_first, fold_tile.q().is_eq(0));
    m.set_next(s1_fold_addr, ctr_word);
    let fold_at = delay_taps(m, "fold_stage", s1_fold.q(), depth, Some(0));
    let fold_write = *fold_at.last().expect("a stage");
    let fold_write_addr = delay(m, "fold_addr_stage", s1_fold_addr.q(), depth, None);
    // A fold word read and not yet written (busy), and one still before the
    // adder's last stage (the next tile's fold waits for those: its first
    // read must see the last write).
    let fold_pending = fold_at
        .iter()
        .copied()
        .reduce(|a, b| a | b)
        .expect("a stage");
    let fold_ahead = fold_at[..depth as usize]
        .iter()
        .copied()
        .reduce(|a, b| a | b);
    let p_word = if tiles == 1 {
        m.wire("fold_psum", psums[0])
    } else {
        let s1_fold_tile = m.reg("s1_fold_tile", Ty::u(tb));
        m.set_next(s1_fold_tile, fold_tile.q());
        m.wire("fold_psum", select(s1_fold_tile.q(), &psums))
    };
    let zero32 = m.lit(Ty::u(32), 0);
    let mut folded = Vec::new();
    for b in 0..lanes {
        let lane = m.instance(&format!("fold{b}"), &defs.fold);
        // A = +0.0 plus P_0, then add32 with P_1, ...
        let a = mux(s1_fold_first.q(), zero32, act_rd.slice(32 * b, 32));
        let (a_port, p_port) = if depth == 0 {
            ("a_i", "p_i")
        } else {
            ("a_i", "b_i")
        };
        m.connect(lane, a_port, a);
        m.connect(lane, p_port, p_word.slice(32 * b, 32));
        folded.push(m.inst_output(lane, "sum_o"));
    }
    folded.reverse();
    let folded = m.wire("fold_sums", cat(&folded));
    // One write port: the fold's, or the host's (gradients) while idle.
    let host_write = act_wr_en & idle & !fold_pending;
    m.mem_write(
        acts,
        fold_write | host_write,
        mux(fold_write, fold_write_addr, act_wr_addr),
        mux(fold_write, folded, act_wr_data),
    );

    // --------------------------------------------- update: HBM writes
    let wq = m.instance("write_queue", &defs.write);
    let upd_stage = if let Some(lane_def) = &defs.update_lane {
        // The pipelined update's shared lanes: a response entering in cycle
        // e has its U read (on the tile's second port) in e and is written
        // back, E - lr x U under the row's lane mask, into the queue in
        // e + 1.
        let u_valid = m.reg_reset("upd_valid", Ty::BOOL, 0);
        m.set_next(u_valid, rsp_ok & updating.q());
        let u_e = m.registered("upd_word", rotated);
        let u_addr = m.registered("upd_addr", rtag.get("addr"));
        let u_lanes = m.registered("upd_lanes", rtag.get("lanes"));
        let u_off = m.registered("upd_offset", r_off);
        let us = out(m, "u_o");
        let u = if tiles == 1 {
            us[0]
        } else {
            let u_tile = m.registered("upd_tile", rtag.get("tile"));
            select(u_tile, &us)
        };
        let mut sums = Vec::new();
        for b in 0..lanes {
            let lane = m.instance(&format!("upd_lane{b}"), lane_def);
            m.connect(lane, "x_i", u_e.slice(32 * b, 32));
            m.connect(lane, "y_i", u.slice(32 * b, 32));
            m.connect(lane, "g_i", lr.q());
            m.connect(lane, "neg_i", m.lit(Ty::BOOL, 1));
            sums.push(m.inst_output(lane, "sum_o"));
        }
        sums.reverse();
        let back = m.lit(Ty::u(3), 0) - u_off;
        let wrec = types.write.pack(&[
            ("addr", u_addr),
            ("data", rotate(cat(&sums), 32, back)),
            ("mask", u_lanes),
        ]);
        m.connect(wq, "in_valid_i", u_valid.q());
        m.connect(wq, "in_data_i", wrec.bits());
        m.waive(
            "UNUSEDSIGNAL",
            "write_queue_in_ready_o",
            "a read counts against hbm_inflight until its write is accepted, and the queue is \
             as deep",
        );
        Some(u_valid.q())
    } else {
        let wr_valids = out(m, "wr_valid_o");
        let wr_addrs = out(m, "wr_addr_o");
        let wr_datas = out(m, "wr_data_o");
        let wr_masks = out(m, "wr_mask_o");
        let mut fields = vec![
            ("addr", select(update_tile.q(), &wr_addrs)),
            ("data", select(update_tile.q(), &wr_datas)),
            ("mask", select(update_tile.q(), &wr_masks)),
        ];
        if late_rotations(cfg) {
            fields.push(("back", select(update_tile.q(), &out(m, "wr_back_o"))));
        }
        let wrec = types.write.pack(&fields);
        m.connect(wq, "in_valid_i", any(&wr_valids));
        m.connect(wq, "in_data_i", wrec.bits());
        m.waive(
            "UNUSEDSIGNAL",
            "write_queue_in_ready_o",
            "the queue holds a whole row and a row's reads wait for the previous row's writes",
        );
        None
    };
    let queued = m.inst_output(wq, "out_valid_o");
    let wout = types.write.unpack(m.inst_output(wq, "out_data_o"));
    m.drive(write_waiting, queued);
    let wr_valid = m.wire("write_offered", queued & !held.q());
    m.connect(wq, "out_ready_i", wr_ready & !held.q());
    if let Some(credits) = credits {
        let wr_fire = wr_valid & wr_ready;
        let cb = credits.q().width();
        m.set_next(
            credits,
            credits.q() + (fire & updating.q()).zext(cb) - wr_fire.zext(cb),
        );
    }
    m.output(HBM_WR_VALID, wr_valid);
    m.output(HBM_WR_ADDR, wout.get("addr"));
    if late_rotations(cfg) {
        let data = m.wire("write_word", rotate(wout.get("data"), 32, wout.get("back")));
        m.output(HBM_WR_DATA, data);
    } else {
        m.output(HBM_WR_DATA, wout.get("data"));
    }
    m.output(HBM_WR_MASK, wout.get("mask"));
    let writes_pending = m.inst_output(wq, "count_o");
    let writes_idle = m.wire("writes_idle", writes_pending.is_eq(0));

    // ------------------------------------------------- tile connections
    for (t, &inst) in insts.iter().enumerate() {
        let t32 = t as u32;
        let mine = |sel: Expr| sel.is_eq(t32);
        m.connect(inst, "start_i", start_fire);
        let go = forward_run | (update_run & mine(update_tile.q()));
        m.connect(inst, "go_i", go);
        m.connect(inst, "clear_i", clearing);
        m.connect(inst, "clear_addr_i", ctr_word);
        m.connect(inst, "rows_i", rows.q());
        m.connect(inst, "dim_i", dim.q());
        m.connect(inst, "batch_i", batch.q());
        m.connect(inst, "row_words_i", row_words);
        if cfg.loop_stages() > 0 {
            m.connect(inst, "mode_next_i", mode_next);
        } else {
            m.connect(inst, "mode_i", updating.q());
        }
        m.connect(inst, "lr_i", lr.q());
        m.connect(inst, "ent_valid_i", ent_valid & mine(disp.q()));
        m.connect(inst, "ent_data_i", ent.bits());
        m.connect(inst, "grant_i", fire & mine(chosen));
        m.connect(inst, "rsp_valid_i", rsp_ok & mine(rtag.get("tile")));
        m.connect(inst, "rsp_data_i", rotated);
        m.connect(inst, "rsp_en_i", bank_en);
        if cfg.loop_stages() > 0 {
            m.connect(inst, "rsp_bank_addr_i", rtag.get("bank_addr"));
        } else {
            m.connect(inst, "rsp_base_i", rtag.get("base"));
        }
        m.connect(inst, "rsp_offset_i", r_off);
        m.connect(inst, "rsp_lanes_i", rtag.get("lanes"));
        m.connect(inst, "rsp_gain_i", rtag.get("gain"));
        m.connect(inst, "fold_i", folding & mine(fold_tile.q()));
        m.connect(inst, "fold_addr_i", ctr_word);
        m.connect(inst, "grad_i", act_rd);
        if pipelined {
            m.connect(inst, "rsp_last_i", rtag.get("last"));
        } else {
            m.connect(inst, "writes_idle_i", writes_idle);
        }
    }

    // ----------------------------------------------------- error counter
    let invalid = m.reg_reset("invalid", Ty::u(32), 0);
    let skipped = skips
        .iter()
        .fold(m.lit(Ty::u(32), 0), |acc, &s| acc + s.zext(32));
    m.set_next(
        invalid,
        mux(start_fire, m.lit(Ty::u(32), 0), invalid.q() + skipped),
    );
    m.output(INVALID, invalid.q());

    // ------------------------------------------------------------ sequencer
    m.output(BUSY, !idle | fold_pending);
    let tile_finished = select(fold_tile.q(), &finished);
    let fold_ready = match fold_ahead {
        None => m.wire("fold_ready", tile_finished),
        Some(ahead) => m.wire("fold_ready", tile_finished & !ahead),
    };
    let update_marker = m.wire("update_marker", select(update_tile.q(), &markers));
    // Every slot free (every row's last response entered), nothing on its
    // way to the write queue and the queue empty.
    let update_drained = upd_stage.map(|stage| {
        let unfinished = any(&finished.iter().map(|&f| !f).collect::<Vec<_>>());
        m.wire("update_drained", !unfinished & !stage & writes_idle)
    });
    m.fsm_states(state, |t| {
        t.state(PassState::Idle, |m| {
            m.if_(start, |m| {
                m.assign(rows, rows_in);
                m.assign(dim, dim_in);
                m.assign(batch, batch_in);
                m.assign(ctr, 0);
                m.assign(fold_tile, 0);
                m.assign(update_tile, 0);
                m.assign(lr, lr_in);
                m.if_(mode_in, |m| state.goto(m, PassState::Update))
                    .else_(|m| state.goto(m, PassState::Clear));
            });
        })
        .state(PassState::Clear, |m| {
            m.assign(ctr, ctr.q() + 1u32);
            m.if_(ctr_at_last, |m| {
                m.assign(ctr, 0);
                state.goto(m, PassState::FoldWait);
            });
        })
        .state(PassState::FoldWait, |m| {
            m.if_(fold_ready, |m| {
                m.assign(ctr, 0);
                state.goto(m, PassState::Fold);
            });
        })
        .state(PassState::Fold, |m| {
            m.assign(ctr, ctr.q() + 1u32);
            m.if_(ctr_at_last, |m| {
                m.assign(ctr, 0);
                m.if_(last_fold, |m| state.goto(m, PassState::Idle))
                    .else_(|m| {
                        m.assign(fold_tile, fold_tile.q() + 1u32);
                        state.goto(m, PassState::FoldWait);
                    });
            });
        })
        .state(PassState::Update, |m| {
            m.if_(update_marker, |m| {
                m.if_(last_update, |m| {
                    // A pipelined update's rows may still be in flight.
                    let after = if pipelined {
                        PassState::Drain
                    } else {
                        PassState::Idle
                    };
                    state.goto(m, after);
                })
                .else_(|m| m.assign(update_tile, update_tile.q() + 1u32));
            });
        });
        if let Some(drained) = update_drained {
            t.state(PassState::Drain, |m| {
                m.if_(drained, |m| state.goto(m, PassState::Idle));
            });
        }
    });
}

/// The scratchpad word of sample `s`, row word `j` for rows of `dim`
/// elements (where `act_rd_addr_i` finds A[s][8j .. 8j + 7]).
pub fn act_word(s: u32, j: u32, dim: u32) -> u32 {
    s * SparseCoreConfig::words_per_row(dim) + j
}

//! The SparseCore: embedding lookups (gather and combine) and updates
//! (scatter-add) over a table in HBM, bit-exact to `numerics.md`, section
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
//! One sequencer serves the T tiles in turn, because one HBM channel delivers
//! at most one 32-byte word per cycle and one 8-wide combine unit consumes
//! exactly that: more tile datapaths would wait on the same channel. The
//! tiles' entry lists arrive through one entry queue, tile 0's first, each
//! ended by a marker entry. For each tile the sequencer
//!
//! 1. walks the tile's entries, issuing one HBM read per cycle for the words
//!    that hold each row (a row of D elements starts at element id x D of the
//!    row-major table, so it may start and end inside a word), with up to
//!    `hbm_inflight` reads outstanding;
//! 2. combines each response in the cycle after it arrives: the 8 lanes are
//!    rotated so that element d goes to scratchpad bank d mod 8, each bank
//!    adds mul32(g, E) to its partial sum (8 fp32 multiply-adds per cycle,
//!    read-modify-write on a write-first port, so back-to-back updates of one
//!    word see each other);
//! 3. after the tile's marker and its last response, folds the partial-sum
//!    scratchpad into the activation buffer word by word (A = add32(A, P),
//!    with A read as +0.0 for tile 0) and clears the partial sums.
//!
//! The partial sums of sample s, element d live in bank d mod 8 at word
//! s x ceil(D/8) + d div 8 of the scratchpad; the activation buffer has the
//! same layout, 8 elements per word. Both hold `max_batch` x
//! ceil(`max_dim` / 8) words.
//!
//! Throughput: one HBM word per cycle while a tile streams, so
//! ceil((o + D) / 8) cycles per entry (o = id x D mod 8), one cycle per entry
//! with an invalid id and per marker, plus per tile the drain of its last reads
//! (HBM latency + 2 cycles) and the fold (B x ceil(D/8) cycles), plus one
//! clear of B x ceil(D/8) cycles per pass.
//!
//! An update runs the same datapath the other way, one id at a time: the
//! id's gradient rows are combined into U (scratchpad words 0 ..
//! ceil(D/8) - 1, one word per cycle, read from the activation buffer), then
//! the id's table row is read from HBM, each word rotated into bank order,
//! combined as E - lr x U by the same eight lanes, rotated back and written
//! to HBM with a lane mask (so neighbouring rows sharing a word are not
//! touched) through a write queue that holds a whole row. The next id's
//! reads wait until the row's writes are out, so a row that shares a word
//! with the previous one reads it updated. Update throughput is therefore
//! latency-bound (one row's read latency per id), not bandwidth-bound.
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
//! | `ent_valid_i`, `ent_ready_o` | 1, 1 | the entry stream into the entry queue (`queue_depth` entries) |
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
//!   outstanding than it has room for.
//! - Entries may be pushed before or after `start_i`; a marker ends each of
//!   the T tiles' lists, tile 0 first. The queue stalls the host when full.
//! - Cycle 0 is the cycle `start_i` is accepted. Clear runs in cycles 1 ..
//!   S, S = B x ceil(D/8); tile 0's walk starts in cycle S + 1.
//! - In the walk, each cycle looks at the head of the queue: a marker is
//!   taken in one cycle and ends the walk; an entry with an invalid id or
//!   sample is taken in one cycle; a valid entry issues its words, one per
//!   cycle, each once `hbm_rd_ready_i` is high and fewer than `hbm_inflight`
//!   reads are outstanding. A read answered in cycle r stops counting as
//!   outstanding in cycle r + 1; its combine writes in cycle r + 1.
//! - The fold starts 2 cycles after the marker was taken, or 3 cycles after
//!   the tile's last response if that is later; it reads one word per cycle
//!   for S cycles (f .. f + S - 1) and writes each one cycle later. The next
//!   tile's walk starts in cycle f + S; after tile T-1, `busy_o` is high
//!   through cycle f + S and low from f + S + 1.
//!
//! - Update: no clear; the walk starts in cycle 1 (an entry pushed in the
//!   start's cycle reaches the head of the queue in cycle 2). A marker takes one cycle
//!   (after tile T-1's, `busy_o` is low from the next cycle); an invalid
//!   entry one cycle; an id's first entry one cycle, then each of the id's
//!   entries ceil(D/8) cycles (one gradient word each) plus one cycle that
//!   looks at the next entry. Then the row's reads issue as in a forward
//!   walk; each response's result is queued for writing in the cycle after
//!   it, reaches `hbm_wr_valid_o` two cycles later, and the walk resumes one
//!   cycle after the last read was issued or when the queue has been empty
//!   for a cycle, whichever is later (5 cycles after the last response with
//!   HBM writes always ready).
//!
//! So with HBM always ready, a fixed latency L and a host that keeps the
//! queue from running dry (a host that pushes whenever `ent_ready_o` is high
//! does), the cycles depend on the entry lists alone;
//! `golden::sparsecore::forward_cycles` and `update_cycles` state them from
//! this contract.

pub mod block;

pub use block::SparseCore;

use config::sparsecore::WORD_ELEMS;
use config::SparseCoreConfig;
use hw::arith::fp32_mul_logic;
use hw::blocks::{fifo, FifoMode};
use hw::fp::fp32_add_logic;
use hw::{bits_for, cat, mux, Design, Expr, ModuleDef, RecordTy, Ty};
use std::rc::Rc;

hw::hw_enum! {
    /// The sequencer's state.
    pub enum SeqState {
        /// Waiting for `start_i`.
        Idle,
        /// Zeroing the partial-sum scratchpad.
        Clear,
        /// Walking the current tile's entries, issuing reads.
        Walk,
        /// Waiting for the tile's last responses to be combined.
        Drain,
        /// Adding the partial sums into the activation buffer.
        Fold,
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
    format!(
        "sparsecore_t{}_d{}_b{}_q{}_f{}",
        cfg.tiles(),
        cfg.max_dim(),
        cfg.max_batch(),
        cfg.queue_depth(),
        cfg.hbm_inflight()
    )
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

/// One element of the combine unit: `x + (fold ? y : g * y)` in the
/// contract's fp32 (add32 of x and either y or mul32(g, y)).
fn combine_lane(design: &mut Design) -> Rc<ModuleDef> {
    design.define("sparsecore_lane", &[], |_, m| {
        m.doc("SparseCore combine lane: add32(x, fold ? y : (neg ? -1 : 1) x mul32(g, y))");
        let x = m.input("x_i", Ty::u(32));
        let y = m.input("y_i", Ty::u(32));
        let g = m.input("g_i", Ty::u(32));
        let fold = m.input("fold_i", Ty::BOOL);
        let neg = m.input("neg_i", Ty::BOOL);
        let product = fp32_mul_logic(m, g, y);
        // sub32(x, p) is add32(x, -p): the sign flip, as the contract defines it.
        let signed = product ^ cat(&[neg, m.lit(Ty::u(31), 0)]);
        let addend = m.wire("addend", mux(fold, y, signed));
        let sum = fp32_add_logic(m, x, addend);
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
    let cfg = *cfg;
    let entry = entry_ty(&cfg);
    let meta = meta_ty(&cfg);
    let entry_fifo = fifo(design, entry.ty(), cfg.queue_depth(), FifoMode::Fwft);
    let meta_fifo = fifo(design, meta.ty(), cfg.hbm_inflight(), FifoMode::Fwft);
    let write = write_ty(&cfg);
    let write_fifo = fifo(design, write.ty(), max_row_words(&cfg), FifoMode::Fwft);
    let lane = combine_lane(design);
    design.define(&top_name(&cfg), &params, |_, m| {
        m.doc("SparseCore: embedding gather, combine and scatter-add over HBM, T tiles on one sequencer");
        let fifos = Fifos {
            entry: entry_fifo,
            meta: meta_fifo,
            write: write_fifo,
        };
        body(m, &cfg, &entry, &meta, &write, &fifos, &lane);
    })
}

/// An entry in the queue.
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
    RecordTy::new(
        "sc_write",
        &[
            ("addr", Ty::u(hbm_addr_bits(cfg))),
            ("data", Ty::u(WORD_BITS)),
            ("mask", Ty::u(WORD_ELEMS)),
        ],
    )
}

struct Fifos {
    entry: Rc<ModuleDef>,
    meta: Rc<ModuleDef>,
    write: Rc<ModuleDef>,
}

/// What the combine needs to know about an outstanding read: the scratchpad
/// word of its first lanes, the row's offset in the word, which lanes hold
/// the row, and the gain.
fn meta_ty(cfg: &SparseCoreConfig) -> RecordTy {
    RecordTy::new(
        "sc_read",
        &[
            ("base", Ty::u(act_addr_bits(cfg))),
            ("offset", Ty::u(3)),
            ("lanes", Ty::u(WORD_ELEMS)),
            ("gain", Ty::u(32)),
        ],
    )
}

fn body(
    m: &mut hw::ModuleBuilder,
    cfg: &SparseCoreConfig,
    entry: &RecordTy,
    meta: &RecordTy,
    write: &RecordTy,
    fifos: &Fifos,
    lane_def: &Rc<ModuleDef>,
) {
    let entry_fifo = &fifos.entry;
    let meta_fifo = &fifos.meta;
    use ports::*;
    let lanes = WORD_ELEMS;
    let db = dim_bits(cfg);
    let bb = batch_bits(cfg);
    let sb = sample_bits(cfg);
    let spb = span_bits(cfg);
    let aw = act_addr_bits(cfg);
    let words = cfg.scratchpad_words();
    let nc_bits = row_words_bits(cfg);
    // Words a row may touch, minus one: ceil((7 + max_dim) / 8) - 1.
    let k_bits = bits_for((7 + cfg.max_dim()).div_ceil(WORD_ELEMS) - 1);
    let tile_bits = bits_for(cfg.tiles() - 1);

    // ---------------------------------------------------------------- ports
    let start = m.input(START, Ty::BOOL);
    let rows_in = m.input(ROWS, Ty::u(32));
    let dim_in = m.input(DIM, Ty::u(db));
    let batch_in = m.input(BATCH, Ty::u(bb));
    let ent_valid = m.input(ENT_VALID, Ty::BOOL);
    let ent = entry.pack(&[
        ("marker", m.input(ENT_MARKER, Ty::BOOL)),
        ("id", m.input(ENT_ID, Ty::u(32))),
        ("sample", m.input(ENT_SAMPLE, Ty::u(sb))),
        ("gain", m.input(ENT_GAIN, Ty::u(32))),
    ]);
    let rd_ready = m.input(HBM_RD_READY, Ty::BOOL);
    let rsp_valid = m.input(HBM_RSP_VALID, Ty::BOOL);
    let rsp_data = m.input(HBM_RSP_DATA, Ty::u(WORD_BITS));
    let act_rd_en = m.input(ACT_RD_EN, Ty::BOOL);
    let act_rd_addr = m.input(ACT_RD_ADDR, Ty::u(act_addr_bits(cfg)));
    let mode_in = m.input(MODE, Ty::BOOL);
    let lr_in = m.input(LR, Ty::u(32));
    let act_wr_en = m.input(ACT_WR_EN, Ty::BOOL);
    let act_wr_addr = m.input(ACT_WR_ADDR, Ty::u(act_addr_bits(cfg)));
    let act_wr_data = m.input(ACT_WR_DATA, Ty::u(WORD_BITS));
    let wr_ready = m.input(HBM_WR_READY, Ty::BOOL);

    // ------------------------------------------------------ pass parameters
    let state = m.fsm("seq_state", SeqState::Idle);
    let rows = m.reg_reset("rows_q", Ty::u(32), 0);
    let dim = m.reg_reset("dim_q", Ty::u(db), 1);
    let batch = m.reg_reset("batch_q", Ty::u(bb), 1);
    let updating = m.reg_reset("mode_q", Ty::BOOL, 0);
    let lr = m.reg_reset("lr_q", Ty::u(32), 0);
    // Update: the id whose U is being accumulated, and whether the next
    // gradient row is its first (U starts at +0.0).
    let cur_id = m.reg_reset("cur_id", Ty::u(31), 0);
    let first = m.reg_reset("first", Ty::BOOL, 0);
    // Scratchpad words per row, ceil(D / 8), and per pass.
    let row_words = if db > 3 {
        let whole = dim.q().slice(3, db - 3).zext(nc_bits);
        m.wire("row_words", whole + dim.q().slice(0, 3).any().zext(nc_bits))
    } else {
        m.wire("row_words", m.lit(Ty::u(1), 1))
    };
    let span = m.wire("span", batch.q().mul_wide(row_words));
    let span_last = m.wire("span_last", span - 1u32);
    let ctr = m.reg_reset("ctr", Ty::u(spb), 0);
    let ctr_at_last = m.wire("ctr_at_last", ctr.q().is_eq(span_last));
    let tile = m.reg_reset("tile", Ty::u(tile_bits), 0);
    let last_tile = m.wire("last_tile", tile.q().is_eq(cfg.tiles() - 1));
    let invalid = m.reg_reset("invalid", Ty::u(32), 0);
    m.output(INVALID, invalid.q());

    // ---------------------------------------------------------- entry queue
    let queue = m.instance("entry_queue", entry_fifo);
    m.waive(
        "UNUSEDSIGNAL",
        "entry_queue_count_o",
        "the sequencer needs the queue's head, not its fill level",
    );
    m.connect(queue, "in_valid_i", ent_valid);
    m.connect(queue, "in_data_i", ent.bits());
    let ent_ready = m.inst_output(queue, "in_ready_o");
    m.output(ENT_READY, ent_ready);
    let head_valid = m.inst_output(queue, "out_valid_o");
    let head = entry.unpack(m.inst_output(queue, "out_data_o"));
    let id = head.get("id");
    let sample = head.get("sample");
    let marker = head.get("marker");
    // Bounds: 0 <= id < V (a negative id has bit 31 set, so it compares
    // above every V) and sample < B.
    let entry_ok = m.wire(
        "entry_ok",
        id.is_lt(rows.q()) & sample.zext(sb.max(bb)).is_lt(batch.q().zext(sb.max(bb))),
    );

    // The row's place in HBM: element id x D, word w0, offset o in the word,
    // and its last word index nw - 1 = (o + D - 1) div 8.
    // In an update the row is the current id's (the queue's head is already
    // the next entry); in a forward pass it is the head's.
    let row_id = m.wire("row_id", mux(updating.q(), cur_id.q(), id.slice(0, 31)));
    let elem = m.wire("row_elem", row_id.mul_wide(dim.q()));
    let w0 = m.wire("row_word0", elem.slice(3, 31 + db - 3));
    let offset = m.wire("row_offset", elem.slice(0, 3));
    let ew = db.max(3) + 1;
    let end = m.wire("row_end", offset.zext(ew) + dim.q().zext(ew) - 1u32);
    let k = m.reg_reset("word_k", Ty::u(k_bits), 0);
    let k_last = m.wire("word_k_last", k.q().zext(ew).is_eq(end >> 3u32));
    let k_first = k.q().is_eq(0);
    // Lanes holding the row: from o in the first word, up to (o + D - 1)
    // mod 8 in the last.
    let full = m.lit(Ty::u(lanes), 0xFF);
    let lo = mux(k_first, offset, m.lit(Ty::u(3), 0));
    let hi = mux(k_last, end.slice(0, 3), m.lit(Ty::u(3), 7));
    let seven = m.lit(Ty::u(3), 7);
    let lane_mask = m.wire("lane_mask", (full << lo) & (full >> (seven - hi)));
    let base_bits = (sb + nc_bits).max(k_bits) + 1;
    // U of an update sits at scratchpad words 0 .. ceil(D/8) - 1.
    let base_sample = mux(updating.q(), m.lit(Ty::u(sb), 0), sample);
    let base_wide = base_sample.mul_wide(row_words).zext(base_bits) + k.q().zext(base_bits);
    let base = low_bits(
        m,
        "read_base",
        base_wide,
        aw,
        "s x ceil(D/8) + k stays below max_batch x ceil(max_dim/8) + 1; a row's word past \
         the scratchpad has every lane masked, so its wrapped address is never written",
    );

    let meta_q = m.instance("read_meta", meta_fifo);
    let meta_ready = m.inst_output(meta_q, "in_ready_o");
    let walking = state.is(SeqState::Walk);
    let forward_walk = walking & !updating.q();
    let row_reading = state.is(SeqState::Row);
    let want_read = m.wire(
        "want_read",
        ((forward_walk & head_valid & !marker & entry_ok) | row_reading) & meta_ready,
    );
    m.output(HBM_RD_VALID, want_read);
    let rd_addr = w0.zext(hbm_addr_bits(cfg)) + k.q().zext(hbm_addr_bits(cfg));
    m.output(HBM_RD_ADDR, rd_addr);
    let read_fire = m.wire("read_fire", want_read & rd_ready);
    m.connect(meta_q, "in_valid_i", read_fire);
    let pushed = meta.pack(&[
        ("base", base),
        ("offset", offset),
        ("lanes", lane_mask),
        ("gain", head.get("gain")),
    ]);
    m.connect(meta_q, "in_data_i", pushed.bits());
    let skip = m.wire("skip_entry", walking & head_valid & !marker & !entry_ok);
    let take_marker = m.wire("take_marker", walking & head_valid & marker);
    let accumulating = state.is(SeqState::Accumulate);
    let acc_last = m.wire("acc_last", ctr.q().is_eq(row_words.zext(spb) - 1u32));
    let pop = m.wire(
        "entry_pop",
        take_marker | skip | (read_fire & k_last & !updating.q()) | (accumulating & acc_last),
    );
    m.connect(queue, "out_ready_i", pop);

    // ------------------------------------------------- response, stage 0
    m.connect(meta_q, "out_ready_i", rsp_valid);
    let outstanding = m.inst_output(meta_q, "count_o");
    let rmeta = meta.unpack(m.inst_output(meta_q, "out_data_o"));
    let r_off = rmeta.get("offset");
    // Rotate the word so that lane (b + o) mod 8 lands in bank b.
    let r_lanes = rmeta.get("lanes");
    // Lane b of the result is lane (b + amount) mod 8 of x.
    let rotate = |x: Expr, lane_bits: u32, amount: Expr| {
        let lane = |i: u32| x.slice(lane_bits * (i % lanes), lane_bits);
        let mut out = x;
        for o in 1..lanes {
            // cat puts the highest lane first.
            let parts: Vec<Expr> = (0..lanes).rev().map(|b| lane(b + o)).collect();
            out = mux(amount.is_eq(o), cat(&parts), out);
        }
        out
    };
    let rotated = rotate(rsp_data, 32, r_off);
    let rotated = m.wire("rsp_rotated", rotated);
    let bank_en = rotate(r_lanes, 1, r_off);
    let bank_en = m.wire("rsp_bank_en", bank_en);
    let folding = state.is(SeqState::Fold);
    let r_base = rmeta.get("base");

    // --------------------------------------------------- stage 1 registers
    let s1_valid = m.reg_reset("s1_valid", Ty::BOOL, 0);
    let s1_fold = m.reg_reset("s1_fold", Ty::BOOL, 0);
    let s1_first_tile = m.reg("s1_first_tile", Ty::BOOL);
    let s1_en = m.reg("s1_en", Ty::u(lanes));
    let s1_data = m.reg("s1_data", Ty::u(WORD_BITS));
    let s1_gain = m.reg("s1_gain", Ty::u(32));
    let s1_acc = m.reg_reset("s1_acc", Ty::BOOL, 0);
    let s1_first = m.reg("s1_first", Ty::BOOL);
    let s1_off = m.reg("s1_off", Ty::u(3));
    let s1_lanes = m.reg("s1_lanes", Ty::u(lanes));
    // A response with no read outstanding is outside the protocol; ignored.
    let meta_valid = m.inst_output(meta_q, "out_valid_o");
    m.set_next(s1_valid, rsp_valid & meta_valid);
    m.set_next(s1_fold, folding);
    m.set_next(s1_first_tile, tile.q().is_eq(0));
    m.set_next(s1_en, bank_en);
    m.set_next(s1_data, rotated);
    m.set_next(
        s1_gain,
        mux(accumulating, head.get("gain"), rmeta.get("gain")),
    );
    m.set_next(s1_acc, accumulating);
    m.set_next(s1_first, first.q());
    m.set_next(s1_off, r_off);
    m.set_next(s1_lanes, r_lanes);
    let s1_upd = m.wire("s1_update", s1_valid.q() & updating.q());
    // Update: the gradient word of the head's sample, chunk ctr.
    let acc_addr_wide = sample.mul_wide(row_words).zext(spb.max(sb + nc_bits) + 1)
        + ctr.q().zext(spb.max(sb + nc_bits) + 1);
    let acc_addr = low_bits(
        m,
        "acc_addr",
        acc_addr_wide,
        aw,
        "s x ceil(D/8) + j is below max_batch x ceil(max_dim/8)",
    );

    // ------------------------------------------- scratchpads and combine
    let clearing = state.is(SeqState::Clear);
    let acts = m.memory_depth("act_buf", Ty::u(WORD_BITS), u64::from(words));
    let act_rd = m.mem_read(
        acts,
        Some(folding | accumulating | act_rd_en),
        mux(
            folding,
            ctr.q().trunc(aw),
            mux(accumulating, acc_addr, act_rd_addr),
        ),
    );
    let zero32 = m.lit(Ty::u(32), 0);
    let mut sums = Vec::new();
    for b in 0..lanes {
        // Bank b holds element d with d mod 8 = b; its lane came from word
        // lane b + o, which belongs to the previous scratchpad word when
        // b + o >= 8.
        let wraps = if b == 0 {
            m.lit(Ty::BOOL, 0)
        } else {
            r_off.is_ge(8 - b)
        };
        let addr = r_base - wraps.zext(aw);
        let addr = m.wire(&format!("bank{b}_addr"), addr);
        let s1_addr = m.reg(&format!("s1_bank{b}_addr"), Ty::u(aw));
        m.set_next(
            s1_addr,
            mux(folding | accumulating, ctr.q().trunc(aw), addr),
        );
        let bank = m.memory_depth(&format!("psum_bank{b}"), Ty::u(32), u64::from(words));
        let lane = m.instance(&format!("lane{b}"), lane_def);
        let sum = m.inst_output(lane, "sum_o");
        let write_en =
            clearing | s1_fold.q() | s1_acc.q() | (s1_valid.q() & !updating.q() & s1_en.q().bit(b));
        let write_addr = mux(clearing, ctr.q().trunc(aw), s1_addr.q());
        let write_data = mux(clearing | s1_fold.q(), zero32, sum);
        m.mem_write(bank, write_en, write_addr, write_data);
        let p = m.mem_read_write_first(
            bank,
            None,
            mux(folding | accumulating, ctr.q().trunc(aw), addr),
        );
        let a_lane = act_rd.slice(32 * b, 32);
        let a_in = mux(s1_first_tile.q(), zero32, a_lane);
        let e = s1_data.q().slice(32 * b, 32);
        // fold: A + P; accumulate: U + g x G (U read as +0 for an id's
        // first row); update: E - lr x U; forward: P + g x E.
        let x = mux(
            s1_fold.q(),
            a_in,
            mux(s1_acc.q(), mux(s1_first.q(), zero32, p), mux(s1_upd, e, p)),
        );
        let y = mux(s1_fold.q(), p, mux(s1_acc.q(), a_lane, mux(s1_upd, p, e)));
        m.connect(lane, "x_i", x);
        m.connect(lane, "y_i", y);
        m.connect(lane, "g_i", mux(s1_upd, lr.q(), s1_gain.q()));
        m.connect(lane, "fold_i", s1_fold.q());
        m.connect(lane, "neg_i", s1_upd);
        sums.push(sum);
    }
    sums.reverse();
    let sums = m.wire("lane_sums", cat(&sums));
    let fold_addr = m.reg("s1_fold_addr", Ty::u(aw));
    m.set_next(fold_addr, ctr.q().trunc(aw));
    // One write port: the fold's, or the host's (gradients) while idle.
    let idle = state.is(SeqState::Idle);
    let host_write = act_wr_en & idle & !s1_fold.q();
    m.mem_write(
        acts,
        s1_fold.q() | host_write,
        mux(s1_fold.q(), fold_addr.q(), act_wr_addr),
        mux(s1_fold.q(), sums, act_wr_data),
    );
    m.output(ACT_RD_DATA, act_rd);

    // --------------------------------------------- update: HBM writes
    // Back from bank order to the word's lanes: lane l takes bank
    // (l - o) mod 8.
    let back = m.lit(Ty::u(3), 0) - s1_off.q();
    let out_word = rotate(sums, 32, back);
    let kw = m.reg_reset("write_k", Ty::u(k_bits), 0);
    let wr_addr = w0.zext(hbm_addr_bits(cfg)) + kw.q().zext(hbm_addr_bits(cfg));
    let wq = m.instance("write_queue", &fifos.write);
    m.connect(wq, "in_valid_i", s1_upd);
    let wrec = write.pack(&[
        ("addr", wr_addr),
        ("data", out_word),
        ("mask", s1_lanes.q()),
    ]);
    m.connect(wq, "in_data_i", wrec.bits());
    m.waive(
        "UNUSEDSIGNAL",
        "write_queue_in_ready_o",
        "the queue holds a whole row and a row's reads wait for the previous row's writes",
    );
    let wr_valid = m.inst_output(wq, "out_valid_o");
    let wout = write.unpack(m.inst_output(wq, "out_data_o"));
    m.connect(wq, "out_ready_i", wr_ready);
    m.output(HBM_WR_VALID, wr_valid);
    m.output(HBM_WR_ADDR, wout.get("addr"));
    m.output(HBM_WR_DATA, wout.get("data"));
    m.output(HBM_WR_MASK, wout.get("mask"));
    let writes_pending = m.inst_output(wq, "count_o");

    // ------------------------------------------------------------ sequencer
    m.output(BUSY, !idle | s1_fold.q());
    let drained = m.wire("drained", outstanding.is_eq(0) & !s1_valid.q());
    let row_done = m.wire("row_done", drained & writes_pending.is_eq(0));
    let take_entry = m.wire(
        "take_entry",
        walking & updating.q() & head_valid & !marker & entry_ok,
    );
    let same_id = m.wire(
        "same_id",
        head_valid & !marker & entry_ok & id.is_eq(cur_id.q().zext(32)),
    );
    // The row's writes count from its first word; the previous row's are
    // all out when its reads start.
    let row_start = m.wire(
        "row_start",
        state.is(SeqState::Next) & !same_id & head_valid,
    );
    m.set_next(
        kw,
        mux(
            row_start,
            m.lit(Ty::u(k_bits), 0),
            kw.q() + s1_upd.zext(k_bits),
        ),
    );
    m.fsm_states(state, |t| {
        t.state(SeqState::Idle, |m| {
            m.if_(start, |m| {
                m.assign(rows, rows_in);
                m.assign(dim, dim_in);
                m.assign(batch, batch_in);
                m.assign(ctr, 0);
                m.assign(tile, 0);
                m.assign(invalid, 0);
                m.assign(updating, mode_in);
                m.assign(lr, lr_in);
                m.assign(k, 0);
                m.if_(mode_in, |m| state.goto(m, SeqState::Walk))
                    .else_(|m| state.goto(m, SeqState::Clear));
            });
        })
        .state(SeqState::Clear, |m| {
            m.assign(ctr, ctr.q() + 1u32);
            m.if_(ctr_at_last, |m| {
                m.assign(ctr, 0);
                state.goto(m, SeqState::Walk);
            });
        })
        .state(SeqState::Walk, |m| {
            m.if_(skip, |m| m.assign(invalid, invalid.q() + 1u32));
            m.if_(read_fire, |m| {
                m.assign(k, mux(k_last, m.lit(Ty::u(k_bits), 0), k.q() + 1u32));
            });
            m.if_(take_marker, |m| {
                m.if_(!updating.q(), |m| state.goto(m, SeqState::Drain))
                    .elif(last_tile, |m| state.goto(m, SeqState::Idle))
                    .else_(|m| m.assign(tile, tile.q() + 1u32));
            });
            m.if_(take_entry, |m| {
                m.assign(cur_id, id.slice(0, 31));
                m.assign(first, 1);
                m.assign(ctr, 0);
                state.goto(m, SeqState::Accumulate);
            });
        })
        .state(SeqState::Accumulate, |m| {
            m.assign(ctr, ctr.q() + 1u32);
            m.if_(acc_last, |m| {
                m.assign(ctr, 0);
                m.assign(first, 0);
                state.goto(m, SeqState::Next);
            });
        })
        .state(SeqState::Next, |m| {
            m.if_(same_id, |m| state.goto(m, SeqState::Accumulate))
                .elif(head_valid, |m| {
                    m.assign(k, 0);
                    state.goto(m, SeqState::Row);
                });
        })
        .state(SeqState::Row, |m| {
            m.if_(read_fire, |m| {
                m.if_(k_last, |m| {
                    m.assign(k, 0);
                    state.goto(m, SeqState::RowWait);
                })
                .else_(|m| m.assign(k, k.q() + 1u32));
            });
        })
        .state(SeqState::RowWait, |m| {
            m.if_(row_done, |m| state.goto(m, SeqState::Walk));
        })
        .state(SeqState::Drain, |m| {
            m.if_(drained, |m| {
                m.assign(ctr, 0);
                state.goto(m, SeqState::Fold);
            });
        })
        .state(SeqState::Fold, |m| {
            m.assign(ctr, ctr.q() + 1u32);
            m.if_(ctr_at_last, |m| {
                m.assign(ctr, 0);
                m.if_(last_tile, |m| state.goto(m, SeqState::Idle))
                    .else_(|m| {
                        m.assign(tile, tile.q() + 1u32);
                        state.goto(m, SeqState::Walk);
                    });
            });
        });
    });
}

/// The scratchpad word of sample `s`, row word `j` for rows of `dim`
/// elements (where `act_rd_addr_i` finds A[s][8j .. 8j + 7]).
pub fn act_word(s: u32, j: u32, dim: u32) -> u32 {
    s * SparseCoreConfig::words_per_row(dim) + j
}

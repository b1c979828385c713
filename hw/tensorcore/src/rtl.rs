//! The TensorCore's RTL: the sequencer, the weight engine, the memories, the
//! MXU instance and the activation pipeline, built to the timing contract in
//! the crate docs.
//!
//! How the contract's cycles come out of synchronous memories: every memory
//! read is issued one cycle ahead of its use. The unified buffer is read
//! (write-first, so an `ACT` write in the same cycle is seen) at the address
//! of the row the MXU is presented next cycle: the A field of next cycle's
//! instruction plus next cycle's row index. The weight memory is read at the
//! address of the row the engine writes next cycle (the head read's next
//! row, or the next read's first when the head ends, or the read being
//! enqueued when the queue is empty). The activation unit holds the word of
//! the `ACT` handed to it, counts down the accumulator writes it waits for
//! (`u_wait`, loaded from `acc_wait` at the hand-over), reads one
//! accumulator and bias row a cycle and has 4 + D stages (read, bias add,
//! multiply, rounding shift and clamp, and the registers of [`ActStages`]),
//! so it writes in cycle y + 4 + D as the contract says; its stages carry their control with them, so the next
//! `ACT` starts behind the last row of the one before.

use crate::weight_queue::WeightQueue;
use crate::ActStages;
use config::tensorcore_isa::{
    field, Opcode, FLAG_ACCUMULATE, FLAG_PREFETCH, FLAG_RELU, FLAG_TO_HOST, FLAG_WAIT_ACT,
};
use config::TensorCoreConfig;
use hw::arith::clamp_to_int8;
use hw::{bits_for, cat, delay, mux, Design, Expr, ModuleBuilder, ModuleDef, Ty};
use std::rc::Rc;

/// Port names of the TensorCore top module.
pub mod ports {
    pub const INSTR_VALID: &str = "instr_valid_i";
    pub const INSTR: &str = "instr_i";
    pub const INSTR_READY: &str = "instr_ready_o";
    pub const HIN_EN: &str = "hin_en_o";
    pub const HIN_ADDR: &str = "hin_addr_o";
    pub const HIN_DATA: &str = "hin_data_i";
    pub const HOUT_WR: &str = "hout_wr_o";
    pub const HOUT_ADDR: &str = "hout_addr_o";
    pub const HOUT_DATA: &str = "hout_data_o";
    pub const WMEM_WR: &str = "wmem_wr_i";
    pub const WMEM_ADDR: &str = "wmem_addr_i";
    pub const WMEM_DATA: &str = "wmem_data_i";
    pub const BMEM_WR: &str = "bmem_wr_i";
    pub const BMEM_ADDR: &str = "bmem_addr_i";
    pub const BMEM_DATA: &str = "bmem_data_i";
    pub const HALTED: &str = "halted_o";
    pub const ERROR: &str = "error_o";
    pub const ACT_BUSY: &str = "act_busy_o";
    /// The counters, in `golden::tensorcore::Stats` order: the sequencer's
    /// seven, instructions, the activation unit's two.
    pub const COUNTERS: [&str; 10] = [
        "cnt_busy_o",
        "cnt_stall_weights_o",
        "cnt_stall_ub_o",
        "cnt_stall_vpu_o",
        "cnt_host_o",
        "cnt_issue_o",
        "cnt_sync_o",
        "cnt_instructions_o",
        "cnt_act_rows_o",
        "cnt_act_drain_o",
    ];
}

/// Bits of a performance counter (they wrap).
pub const COUNTER_BITS: u32 = 32;

/// The Verilog name of the top module, e.g.
/// `tensorcore_8x8_acc512_ub32768_w65536_b1024_q4`, with `_d<depth>` at a
/// depth other than 0.
pub fn top_name(cfg: &TensorCoreConfig) -> String {
    let name = format!(
        "tensorcore_{}x{}_acc{}_ub{}_w{}_b{}_q{}",
        cfg.rows(),
        cfg.cols(),
        cfg.acc_rows(),
        cfg.ub_rows(),
        cfg.weight_rows(),
        cfg.bias_rows(),
        cfg.weight_queue()
    );
    match cfg.depth() {
        0 => name,
        d => format!("{name}_d{d}"),
    }
}

fn log2(v: u32) -> u32 {
    v.trailing_zeros().max(1)
}

/// Builds the TensorCore for `cfg` into `design` and returns its top module.
#[track_caller]
pub fn build(design: &mut Design, cfg: &TensorCoreConfig) -> Rc<ModuleDef> {
    let owned = cfg.params();
    let params = hw::param_refs(&owned);
    let name = top_name(cfg);
    let cfg = *cfg;
    design.define(&name, &params, |design, m| {
        m.doc(
            "TensorCore: sequencer, unified buffer, weight and bias memories, MXU, activation unit",
        );
        let mxu = mxu::build(design, &cfg.mxu());
        build_top(design, m, &cfg, &mxu);
    })
}

/// `e` (unsigned) cut or zero-extended to `width` bits.
fn fit(e: Expr, width: u32) -> Expr {
    match e.width().cmp(&width) {
        std::cmp::Ordering::Equal => e,
        std::cmp::Ordering::Greater => e.trunc(width),
        std::cmp::Ordering::Less => e.zext(width),
    }
}

/// A field of `word` as `width` bits: only the bits that are used are
/// sliced, so no intermediate carries unused bits (lint).
fn field_w(word: Expr, (lo, bits): (u32, u32), width: u32) -> Expr {
    fit(word.slice(lo, bits.min(width)), width)
}

fn field_of(word: Expr, (lo, bits): (u32, u32)) -> Expr {
    word.slice(lo, bits)
}

/// `e` through a register named `name` when `on`, else `e` itself.
fn cut(m: &mut ModuleBuilder, on: bool, name: &str, e: Expr) -> Expr {
    if on {
        let q = delay(m, name, e, 1, None);
        if e.ty().signed {
            q.as_signed()
        } else {
            q
        }
    } else {
        e
    }
}

/// The s64 product `a x b` of two s32 from four registered 17 x 17 signed
/// partial products (one ECP5 `MULT18X18D` or iCE40 `SB_MAC16` each), summed
/// after the registers: a = a_hi 2^16 + a_lo with a_lo unsigned, so
/// a b = a_hi b_hi 2^32 + (a_hi b_lo + a_lo b_hi) 2^16 + a_lo b_lo, exact in
/// 64 bits (|a b| <= 2^62).
fn partial_products_summed(m: &mut ModuleBuilder, lane: u32, a: Expr, b: Expr) -> Expr {
    let lo = |e: Expr| e.slice(0, 16).zext(17).as_signed();
    let hi = |e: Expr| e.slice(16, 16).as_signed().sext(17);
    let parts = [
        ("hh", hi(a), hi(b)),
        ("hl", hi(a), lo(b)),
        ("lh", lo(a), hi(b)),
        ("ll", lo(a), lo(b)),
    ];
    let [hh, hl, lh, ll] = parts.map(|(name, x, y)| {
        let p = delay(m, &format!("act_pp_{name}{lane}"), x.mul_wide(y), 1, None);
        p.as_signed().sext(64)
    });
    (hh << 32u32) + ((hl + lh) << 16u32) + ll
}

/// The rounding shift's result plus the zero point, in 34 bits: there the
/// addition cannot wrap before the clamp.
fn zero_point_sum(scaled: Expr, zero_point: Expr) -> Expr {
    scaled.sext(34) + zero_point.sext(34)
}

/// The rounding shift RDBPOT(x, e) of `hw::arith::rdbpot_logic` (x s32,
/// e u5), its mask and rounding threshold given as registers set from the
/// shift a cycle ahead: `mask` = 2^e - 1 and `half_up` = (mask >> 1) + 1,
/// the threshold of a negative x. The shift of an `ACT` is known long
/// before its rows arrive, so only x's shift and compare remain here.
fn rounding_shift_preset(x: Expr, e: Expr, mask: Expr, half_up: Expr) -> Expr {
    let remainder = x.as_unsigned() & mask;
    let half = mask >> 1u32;
    let round = mux(x.msb(), remainder.is_gt(half_up), remainder.is_gt(half));
    (x >> e) + round.zext(32).as_signed()
}

fn build_top(
    design: &mut Design,
    m: &mut ModuleBuilder,
    cfg: &TensorCoreConfig,
    mxu_def: &Rc<ModuleDef>,
) {
    use ports::*;
    let r = cfg.rows();
    let c = cfg.cols();
    let q = cfg.weight_queue();
    let ub_aw = log2(cfg.ub_rows());
    let acc_aw = log2(cfg.acc_rows());
    let w_aw = log2(cfg.weight_rows());
    let b_aw = log2(cfg.bias_rows());
    let addr_bits = config::tensorcore_isa::ADDR_BITS;
    let count_ty = Ty::u(16);

    let instr_valid = m.input(INSTR_VALID, Ty::BOOL);
    let instr = m.input(INSTR, Ty::u(128));
    let hin_data = m.input(HIN_DATA, Ty::u(8 * r));
    let wmem_wr = m.input(WMEM_WR, Ty::BOOL);
    let wmem_addr = m.input(WMEM_ADDR, Ty::u(w_aw));
    let wmem_data = m.input(WMEM_DATA, Ty::u(8 * c));
    let bmem_wr = m.input(BMEM_WR, Ty::BOOL);
    let bmem_addr = m.input(BMEM_ADDR, Ty::u(b_aw));
    let bmem_data = m.input(BMEM_DATA, Ty::u(32 * c));

    // ---- The current instruction: loaded from the port when the slot is
    // empty or the current one retires.
    let cur = m.reg("cur", Ty::u(128));
    let cur_valid = m.reg_reset("cur_valid", Ty::BOOL, 0);
    let halted = m.reg_reset("halted", Ty::BOOL, 0);
    let error = m.reg_reset("error", Ty::BOOL, 0);
    let retire = m.wire_decl("retire", Ty::BOOL);
    let halting = m.wire_decl("halting", Ty::BOOL);
    let slot_free = m.wire(
        "slot_free",
        (!cur_valid.q() | retire.value()) & !halted.q() & !halting.value(),
    );
    m.output(INSTR_READY, slot_free);
    let load = m.wire("load", instr_valid & slot_free);
    m.set_next(cur, mux(load, instr, cur.q()));
    let word = cur.q();
    let op = field_of(word, field::OP);
    let flag = |bit: u32| word.slice(field::FLAGS.0 + bit.trailing_zeros(), 1);
    let rows = field_of(word, field::COUNT);
    let v = cur_valid.q();
    // From depth 4 the opcode is decoded from the port as the word loads:
    // one-hot flags, each cleared when its instruction retires, so the
    // sequencer's decisions start at registers.
    let seq_decode = cfg.depth() >= 4;
    let instr_op = field_of(instr, field::OP);
    let decoded = |m: &mut ModuleBuilder, n: &str, now: Expr, at_load: Expr| {
        if seq_decode {
            let f = m.reg_reset(n, Ty::BOOL, 0);
            m.set_next(f, mux(load, at_load, f.q() & !retire.value()));
            f.q()
        } else {
            m.wire(n, v & now)
        }
    };
    let is = |m: &mut ModuleBuilder, o: Opcode, n: &str| {
        let code = u64::from(o.code());
        decoded(m, n, op.is_eq(code), instr_op.is_eq(code))
    };
    let is_rhm = is(m, Opcode::ReadHost, "is_rhm");
    let is_rw = is(m, Opcode::ReadWeights, "is_rw");
    let is_mm = is(m, Opcode::Matmul, "is_mm");
    let is_act = is(m, Opcode::Activate, "is_act");
    let is_sync = is(m, Opcode::Sync, "is_sync");
    let is_halt = is(m, Opcode::Halt, "is_halt");
    let sync_code = u64::from(Opcode::Sync.code());
    let illegal = decoded(m, "illegal", op.is_gt(sync_code), instr_op.is_gt(sync_code));

    // Progress of the current instruction.
    let started = m.reg_reset("started", Ty::BOOL, 0);
    let done = m.reg_reset("done", count_ty, 0);
    // From depth 3 the sequencer's sums come from registers loaded a cycle
    // ahead (the same values, off the path from a ready to an address).
    let seq_regs = cfg.depth() >= 3;
    let last_index = if seq_regs {
        let r = m.reg("cur_last", count_ty);
        let next = field_of(instr, field::COUNT) - m.lit(count_ty, 1);
        m.set_next(r, mux(load, next, r.q()));
        r.q()
    } else {
        rows - m.lit(count_ty, 1)
    };
    // From depth 4 the last-row test is a register too, set a cycle ahead
    // (below, once the row moves are known).
    let last_row_reg = seq_decode.then(|| m.reg("last_row", Ty::BOOL));
    let last_row = match last_row_reg {
        Some(reg) => reg.q(),
        None => m.wire("last_row", done.q().is_eq(last_index)),
    };

    // Late-write windows: nonzero while a write is still to land.
    // The MXU's write latency, R + C at depth 0 (R + P + C deeper).
    let write_latency = mxu::Timing::of(&cfg.mxu()).write_latency();
    let late_ty = Ty::u(bits_for(write_latency));
    let acc_wait = m.reg_reset("acc_wait", late_ty, 0);
    let act_ty = Ty::u(bits_for(ActStages::of(cfg.depth()).latency()));
    let ub_wait = m.reg_reset("ub_wait", act_ty, 0);
    let acc_idle = m.wire("acc_idle", acc_wait.q().is_eq(0));
    let ub_idle = m.wire("ub_idle", ub_wait.q().is_eq(0));

    // ---- The weight queue: slot 0 is the oldest read.
    let wq = WeightQueue::declare(m, q, w_aw);
    let (q_room, q_empty) = (wq.room, wq.empty);

    // ---- The activation unit's held ACT: its word, rows read, and the
    // cycles left until the MXU writes it waits for have landed.
    let uw = m.reg("u_word", Ty::u(128));
    let u_valid = m.reg_reset("u_valid", Ty::BOOL, 0);
    let u_done = m.reg_reset("u_done", count_ty, 0);
    let u_wait = m.reg_reset("u_wait", late_ty, 0);
    let u_rows = field_of(uw.q(), field::COUNT);
    let unit_go = m.wire("unit_go", u_valid.q() & u_wait.q().is_eq(0));
    let unit_last = m.wire(
        "unit_last",
        unit_go & u_done.q().is_eq(u_rows - m.lit(count_ty, 1)),
    );
    // From depth 4 a register (set below from next cycle's unit state).
    let ub_settled_reg = seq_decode.then(|| m.reg_reset("ub_settled", Ty::BOOL, 1));
    let ub_settled = match ub_settled_reg {
        Some(reg) => reg.q(),
        None => m.wire("ub_settled", !u_valid.q() & ub_idle),
    };
    // Whether the MM's accumulator rows meet the rows the unit has still to
    // read (in 18 bits: a row plus a count does not wrap).
    let w18 = |e: Expr| fit(e, 18);
    let mm_b = w18(field_w(word, field::B, acc_aw));
    let (u_from, u_to, mm_end, bounds_next) = if seq_regs {
        // The unit's bounds from the hand-over on, the MM's end from its load.
        let from = m.reg("u_from", Ty::u(18));
        let to = m.reg("u_to", Ty::u(18));
        let end = m.reg("cur_acc_end", Ty::u(18));
        let hand_a = w18(field_w(word, field::A, acc_aw));
        let one18 = m.lit(Ty::u(18), 1);
        let hand = is_act & !u_valid.q();
        let from_next = mux(hand, hand_a, mux(unit_go, from.q() + one18, from.q()));
        let to_next = mux(hand, hand_a + w18(rows), to.q());
        m.set_next(from, from_next);
        m.set_next(to, to_next);
        let instr_end = w18(field_w(instr, field::B, acc_aw)) + w18(field_of(instr, field::COUNT));
        m.set_next(end, mux(load, instr_end, end.q()));
        // The bounds' next values, for an overlap test a cycle ahead.
        let instr_b = w18(field_w(instr, field::B, acc_aw));
        let bounds_next = [
            from_next.is_lt(instr_end) & instr_b.is_lt(to_next),
            from_next.is_lt(end.q()) & mm_b.is_lt(to_next),
        ];
        (from.q(), to.q(), end.q(), Some(bounds_next))
    } else {
        (
            w18(field_w(uw.q(), field::A, acc_aw)) + w18(u_done.q()),
            w18(field_w(uw.q(), field::A, acc_aw)) + w18(u_rows),
            mm_b + w18(rows),
            None,
        )
    };
    // From depth 4 the overlap test is a register, loaded with next
    // cycle's test: the bounds' compares select by whether a word loads.
    let overlap_reg = seq_decode.then(|| m.reg_reset("overlap", Ty::BOOL, 0));
    let overlap = match overlap_reg {
        Some(reg) => reg.q(),
        None => m.wire(
            "overlap",
            u_valid.q() & u_from.is_lt(mm_end) & mm_b.is_lt(u_to),
        ),
    };

    // ---- Per-instruction behaviour (see the timing contract).
    let prefetch = flag(FLAG_PREFETCH);
    let accumulate = flag(FLAG_ACCUMULATE);
    let wait_act = flag(FLAG_WAIT_ACT);
    let rhm_go = m.wire("rhm_go", is_rhm & (started.q() | ub_settled));
    let rw_go = m.wire("rw_go", is_rw & q_room);
    let stall_ub_mm = m.wire("stall_ub_mm", is_mm & !started.q() & wait_act & !ub_settled);
    let stall_vpu_mm = m.wire(
        "stall_vpu_mm",
        is_mm & !started.q() & !stall_ub_mm & overlap,
    );
    let mm_start = m.wire(
        "mm_start",
        is_mm & !started.q() & !stall_ub_mm & !overlap & (!prefetch | q_room),
    );
    let present = m.wire("present", is_mm & (started.q() | mm_start));
    let act_hand = m.wire("act_hand", is_act & !u_valid.q());
    let drained = m.wire("drained", acc_idle & ub_settled & q_empty);
    let sync_go = m.wire("sync_go", (is_sync | is_halt) & drained);

    // ---- The MXU.
    let mx = m.instance("mxu", mxu_def);
    let a_ready = m.inst_output(mx, mxu::ports::A_READY);
    let w_ready = m.inst_output(mx, mxu::ports::W_READY);
    let accept = m.wire("accept", present & a_ready);
    let mm_done = m.wire("mm_done", accept & last_row);
    let retire_now = (rhm_go & last_row) | rw_go | mm_done | act_hand | sync_go | illegal;
    m.drive(retire, retire_now);
    let retire_e = retire.value();

    // Next cycle's instruction word and row index: the unified buffer is read
    // for them now.
    let zero16 = m.lit(count_ty, 0);
    let one16 = m.lit(count_ty, 1);
    let moved = rhm_go | accept;
    let done_next = mux(retire_e, zero16, mux(moved, done.q() + one16, done.q()));
    m.set_next(done, done_next);
    // From depth 4: whether the row presented is an instruction's first
    // (done = 0) and its last, from registers set here; a loaded word
    // starts at row 0 (the slot was empty or its instruction retires).
    let row_first = if seq_decode {
        let first = m.reg_reset("row_first", Ty::BOOL, 1);
        let wraps = done.q().is_eq(u64::from(u16::MAX));
        m.set_next(
            first,
            mux(retire_e, m.lit(Ty::BOOL, 1), mux(moved, wraps, first.q())),
        );
        first.q()
    } else {
        done.q().is_eq(0)
    };
    if let Some(reg) = last_row_reg {
        let one_row = field_of(instr, field::COUNT).is_eq(1);
        let next_last = (done.q() + one16).is_eq(last_index);
        m.set_next(reg, mux(load, one_row, mux(moved, next_last, last_row)));
    }
    m.set_next(started, !retire_e & (rhm_go | present));
    m.set_next(uw, mux(act_hand, word, uw.q()));
    let u_valid_next = act_hand | (u_valid.q() & !unit_last);
    m.set_next(u_valid, u_valid_next);
    if let Some(reg) = ub_settled_reg {
        // The unit's last write has landed next cycle unless it reads now
        // or more than one write is still to land.
        let ub_idle_next = !unit_go & ub_wait.q().is_le(1u64);
        m.set_next(reg, !u_valid_next & ub_idle_next);
    }
    if let (Some(reg), Some([loaded, kept])) = (overlap_reg, bounds_next) {
        m.set_next(reg, u_valid_next & mux(load, loaded, kept));
    }
    m.set_next(
        u_done,
        mux(
            act_hand,
            zero16,
            mux(unit_go, u_done.q() + one16, u_done.q()),
        ),
    );
    // Held from the next cycle, it may read once y > acc_busy of this cycle.
    let late_one = m.lit(late_ty, 1);
    let late_zero0 = m.lit(late_ty, 0);
    m.set_next(
        u_wait,
        mux(
            act_hand,
            mux(acc_idle, late_zero0, acc_wait.q() - late_one),
            mux(u_wait.q().is_eq(0), late_zero0, u_wait.q() - late_one),
        ),
    );
    m.output(ACT_BUSY, u_valid.q());
    m.set_next(cur_valid, load | (v & !retire_e));
    m.drive(halting, is_halt & sync_go);
    m.set_next(halted, halted.q() | (is_halt & sync_go));
    m.set_next(error, error.q() | illegal);
    m.output(HALTED, halted.q());
    m.output(ERROR, error.q());

    let next_a = mux(
        load,
        field_w(instr, field::A, ub_aw),
        field_w(word, field::A, ub_aw),
    );
    let ub_rd_addr = if seq_regs {
        // Next cycle's row of the current instruction is this cycle's or the
        // one after it (registers of the address and its successor); only a
        // newly loaded word starts over, at its A field. (When the current
        // one retires with no word to load, nothing reads the row.)
        let row = m.reg("ub_row", Ty::u(ub_aw));
        let row_next = m.reg("ub_row_next", Ty::u(ub_aw));
        let same = mux(moved, row_next.q(), row.q());
        let addr = m.wire("ub_rd_addr", mux(load, next_a, same));
        m.set_next(row, addr);
        m.set_next(row_next, addr + m.lit(Ty::u(ub_aw), 1));
        addr
    } else {
        m.wire("ub_rd_addr", next_a + fit(done_next, ub_aw))
    };

    // ---- Unified buffer: one write port (host rows or activations), one
    // write-first read port feeding the MXU.
    let ub = m.memory("ub", Ty::u(8 * r), ub_aw);
    // Row j of an instruction's range: a field plus the row index.
    let row_addr = |m: &mut ModuleBuilder, f: (u32, u32), n: &str, aw: u32| {
        let e = field_w(word, f, aw) + fit(done.q(), aw);
        m.wire(n, e)
    };
    let hin_addr = row_addr(m, field::A, "hin_addr", addr_bits);
    m.output(HIN_EN, rhm_go);
    m.output(HIN_ADDR, hin_addr);
    let rhm_ub_addr = row_addr(m, field::B, "rhm_ub_addr", ub_aw);

    // ---- Activation pipeline: read (y), bias add (y+1), multiply (y+2),
    // rounding and clamp (y+3), write (y+4).
    let u = uw.q();
    let uflag = |bit: u32| u.slice(field::FLAGS.0 + bit.trailing_zeros(), 1);
    let to_host = uflag(FLAG_TO_HOST);
    let relu = uflag(FLAG_RELU);
    let unit_row = |m: &mut ModuleBuilder, f: (u32, u32), n: &str, aw: u32| {
        let e = field_w(u, f, aw) + fit(u_done.q(), aw);
        m.wire(n, e)
    };
    let acc_rd_addr = unit_row(m, field::A, "act_acc_addr", acc_aw);
    let bmem = m.memory("bmem", Ty::u(32 * c), b_aw);
    m.mem_write(bmem, bmem_wr, bmem_addr, bmem_data);
    let bias_row = m.mem_read(bmem, Some(unit_go), field_w(u, field::C, b_aw));
    m.connect(mx, mxu::ports::ACC_RD_EN, unit_go);
    m.connect(mx, mxu::ports::ACC_RD_ADDR, acc_rd_addr);
    let acc_row = m.inst_output(mx, mxu::ports::ACC_RD_DATA);
    let act_dest = unit_row(m, field::B, "act_dest", addr_bits);
    let fd = field_of(u, field::D);
    let shift = field_of(u, field::SHIFT);
    let zp = field_of(u, field::ZP);
    // Control of stage k is the ACT cycle's, delayed k cycles.
    let st = ActStages::of(cfg.depth());
    let latency = st.latency();
    let (p_at, s_at, o_at, f_at) = (
        st.product_cycle(),
        st.scaled_cycle(),
        st.offset_cycle(),
        st.clamp_cycle(),
    );
    let d =
        |m: &mut ModuleBuilder, n: &str, e: Expr, k: u32, rst: Option<i64>| delay(m, n, e, k, rst);
    let valid4 = d(m, "act_valid_d", unit_go, latency, Some(0));
    let host4 = d(m, "act_host_d", to_host, latency, None);
    let dest4 = d(m, "act_dest_d", act_dest, latency, None);
    let mult2 = d(m, "act_mult_d", fd.as_signed(), 2, None);
    // From depth 4 the bounds of the rounding shift, the clamp and the ReLU
    // are registers beside their stages: they depend on the ACT's fields
    // alone, so only the row's own arithmetic is left in those stages.
    let act_presets = cfg.depth() >= 4;
    assert!(!act_presets || (st.scaled && st.offset));
    // The rounding shift: registered for its stage below depth 4; from 4 a
    // cycle ahead with the mask and threshold made from it, each lane
    // registering its own copies (below).
    let (round_shift, rounding) = if act_presets {
        let early = d(m, "act_shift_d", shift, s_at - 1, None);
        let ones = m.lit(Ty::u(32), u32::MAX);
        let mask = !(ones << early);
        let half_up = (mask >> 1u32) + m.lit(Ty::u(32), 1);
        (early, Some((mask, half_up)))
    } else {
        (d(m, "act_shift_d", shift, s_at, None), None)
    };
    let (zp3, floor_zp, relu3, clamp_bounds) = if act_presets {
        // The result is min(max(sum, floor), 127) with floor the zero point
        // under ReLU, else -128 (zp >= -128); with sum = scaled + zp that is
        // scaled against floor - zp and 127 - zp, tested beside the
        // addition (10 bits hold both).
        let zp_early = d(m, "act_zp_d", zp.as_signed(), o_at - 1, None).as_signed();
        let relu_early = d(m, "act_relu_d", relu, o_at - 1, None);
        let floor = mux(relu_early, zp_early, m.lit(Ty::s(8), -128));
        let below = floor.sext(10) - zp_early.sext(10);
        let above = m.lit(Ty::s(10), 127) - zp_early.sext(10);
        let zp3 = delay(m, "act_zp_sum", zp_early, 1, None).as_signed();
        let floor = delay(m, "act_floor_d", floor, f_at - o_at + 1, None).as_signed();
        let bounds = (
            delay(m, "act_clamp_below", below, 1, None).as_signed(),
            delay(m, "act_clamp_above", above, 1, None).as_signed(),
        );
        (zp3, floor, None, Some(bounds))
    } else {
        let zp3 = d(m, "act_zp_d", zp.as_signed(), o_at, None).as_signed();
        // The ReLU's floor is the zero point too, a cycle later than the sum
        // when a register separates them.
        let floor_zp = delay(m, "act_floor_d", zp3, f_at - o_at, None).as_signed();
        let relu3 = d(m, "act_relu_d", relu, f_at, None);
        (zp3, floor_zp, Some(relu3), None)
    };
    let mult3 = delay(m, "act_mult_d3", mult2, p_at - 2, None).as_signed();
    let mut q_lanes = Vec::new();
    let mut h_lanes = Vec::new();
    for lane in 0..c {
        let a = acc_row.slice(32 * lane, 32).as_signed();
        let b = bias_row.slice(32 * lane, 32).as_signed();
        let s1 = delay(m, &format!("act_sum{lane}"), a + b, 1, None).as_signed();
        let product = if st.partials {
            partial_products_summed(m, lane, s1, mult2.as_signed())
        } else {
            s1.mul_wide(mult2.as_signed())
        };
        let prod = delay(m, &format!("act_prod{lane}"), product, 1, None).as_signed();
        // (A line of several stages gets a name its stage wires cannot clash with.)
        let s2_name = match p_at - 2 {
            1 => format!("act_sum2_{lane}"),
            _ => format!("act_v{lane}"),
        };
        let s2 = delay(m, &s2_name, s1, p_at - 2, None).as_signed();
        let h = if let Some((below, above)) = clamp_bounds {
            let high = hw::arith::srdhm_from_product(m, s2, mult3, prod);
            let high = cut(m, st.high, &format!("act_high{lane}"), high);
            let (mask, half_up) = rounding.expect("presets at this depth");
            // Copies per lane: one register's fanout into every lane's
            // rounding was the critical path (ECP5-85F, the fmax preset:
            // `act_round_mask` to a lane's scaled value, 9.3 ns of 13.4
            // routing).
            let mut kept = |m: &mut ModuleBuilder, name: &str, v: Expr| {
                hw::blocks::kept_register(design, m, &format!("{name}{lane}"), v)
            };
            let shift = kept(m, "act_round_shift", round_shift);
            let mask = kept(m, "act_round_mask", mask);
            let half_up = kept(m, "act_round_half_up", half_up);
            let scaled = rounding_shift_preset(high, shift, mask, half_up);
            let scaled = cut(m, st.scaled, &format!("act_scaled{lane}"), scaled);
            // The sum's low byte is the result when no bound holds.
            let low = scaled.as_unsigned().slice(0, 8) + zp3.as_unsigned();
            let low = delay(m, &format!("act_offset{lane}"), low, 1, None).as_signed();
            let below = scaled.is_lt(below.sext(32));
            let below = delay(m, &format!("act_below{lane}"), below, 1, None);
            let above = scaled.is_gt(above.sext(32));
            let above = delay(m, &format!("act_above{lane}"), above, 1, None);
            let top = m.lit(Ty::s(8), 127);
            mux(below, floor_zp, mux(above, top, low))
        } else if st.high || st.scaled {
            let high = hw::arith::srdhm_from_product(m, s2, mult3, prod);
            let high = cut(m, st.high, &format!("act_high{lane}"), high);
            let scaled = hw::arith::rdbpot_logic(m, high, round_shift);
            let scaled = cut(m, st.scaled, &format!("act_scaled{lane}"), scaled);
            let sum = zero_point_sum(scaled, zp3);
            let sum = cut(m, st.offset, &format!("act_offset{lane}"), sum);
            clamp_to_int8(m, sum)
        } else {
            hw::arith::requant_int8_from_product(m, s2, mult3, prod, round_shift, zp3.as_signed())
        };
        let h = match relu3 {
            Some(relu3) => mux(relu3 & h.is_lt(floor_zp), floor_zp, h),
            None => h,
        };
        q_lanes.push(delay(m, &format!("act_q{lane}"), h, 1, None));
        h_lanes.push(delay(m, &format!("act_i{lane}"), s2, latency - p_at, None));
    }
    q_lanes.reverse();
    h_lanes.reverse();
    let act_q = m.wire("act_q", cat(&q_lanes));
    let act_i = m.wire("act_i", cat(&h_lanes));
    let act_ub_wr = m.wire("act_ub_wr", valid4 & !host4);
    m.output(HOUT_WR, valid4 & host4);
    m.output(HOUT_ADDR, dest4);
    m.output(HOUT_DATA, act_i);
    let ub_wr_en = rhm_go | act_ub_wr;
    let ub_wr_addr = mux(rhm_go, rhm_ub_addr, fit(dest4, ub_aw));
    let ub_wr_data = mux(rhm_go, hin_data, act_q);
    m.mem_write(ub, ub_wr_en, ub_wr_addr, ub_wr_data);
    let a_row = m.mem_read_write_first(ub, None, ub_rd_addr);

    // ---- MXU activation side.
    m.connect(mx, mxu::ports::A_VALID, present);
    m.connect(mx, mxu::ports::A_FIRST, row_first);
    m.connect(mx, mxu::ports::A_ROW, a_row);
    let mm_acc_addr = row_addr(m, field::B, "mm_acc_addr", acc_aw);
    m.connect(mx, mxu::ports::A_ACC_ADDR, mm_acc_addr);
    m.connect(mx, mxu::ports::A_ACC_ADD, accumulate);

    // Late-write windows.
    let late_full = m.lit(late_ty, u64::from(write_latency));
    let late_zero = m.lit(late_ty, 0);
    m.set_next(
        acc_wait,
        mux(
            accept,
            late_full,
            mux(acc_idle, late_zero, acc_wait.q() - m.lit(late_ty, 1)),
        ),
    );
    let act_full = m.lit(act_ty, u64::from(ActStages::of(cfg.depth()).latency()));
    let act_zero = m.lit(act_ty, 0);
    m.set_next(
        ub_wait,
        mux(
            unit_go,
            act_full,
            mux(ub_idle, act_zero, ub_wait.q() - m.lit(act_ty, 1)),
        ),
    );

    // ---- The weight engine: the oldest read writes one row a cycle while
    // the MXU's weight FIFO has room; a read enqueued now is seen next cycle.
    let enqueue = m.wire("enqueue", rw_go | (mm_start & prefetch));
    let enq_addr = m.wire(
        "enq_addr",
        mux(
            is_rw,
            field_w(word, field::A, w_aw),
            field_w(word, field::D, w_aw),
        ),
    );
    let enq_rows = m.wire("enq_rows", mux(is_rw, rows, m.lit(count_ty, u64::from(r))));
    let (w_write, w_row) = wq.engine(
        m,
        8 * c,
        (wmem_wr, wmem_addr, wmem_data),
        (enqueue, enq_addr, enq_rows),
        w_ready,
    );
    m.connect(mx, mxu::ports::W_VALID, w_write);
    m.connect(mx, mxu::ports::W_ROW, w_row);

    // ---- Counters: every cycle with an instruction current is charged to
    // one of the first seven; then instructions and the unit's two.
    let classes = [
        accept,
        (is_mm & !accept & !stall_ub_mm & !stall_vpu_mm) | (is_rw & !q_room),
        stall_ub_mm | (is_rhm & !rhm_go),
        stall_vpu_mm | (is_act & !act_hand),
        rhm_go,
        rw_go | act_hand | illegal,
        is_sync | is_halt,
        retire_e,
        unit_go,
        u_valid.q() & !unit_go,
    ];
    let cnt_ty = Ty::u(COUNTER_BITS);
    for (name, class) in COUNTERS.iter().zip(classes) {
        let reg = m.reg_reset(&name.replace("_o", "_q"), cnt_ty, 0);
        let inc = m.lit(cnt_ty, 1);
        m.set_next(reg, mux(class, reg.q() + inc, reg.q()));
        m.output(name, reg.q());
    }
    for (port, reason) in [
        (
            mxu::ports::ACC_RD_VALID,
            "the activation pipeline knows when its reads return",
        ),
        (
            mxu::ports::ACC_WR,
            "the sequencer times accumulator writes itself (acc_wait)",
        ),
        (
            mxu::ports::BUSY,
            "the sequencer times accumulator writes itself (acc_wait)",
        ),
    ] {
        m.waive("UNUSEDSIGNAL", &format!("mxu_{port}"), reason);
    }
    m.waive(
        "UNUSEDSIGNAL",
        "cur_q",
        "reserved bits of the instruction word carry nothing",
    );
    m.waive(
        "UNUSEDSIGNAL",
        "u_word_q",
        "the activation unit uses the ACT fields of the word it holds",
    );
}

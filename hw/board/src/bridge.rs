//! The command bridge: UART bytes in, MXU handshakes out, replies back.
//!
//! One state machine serves one command at a time (`PROTOCOL.md` is the
//! specification); the framing ([`crate::framing`]) receives the commands
//! and sends the replies, and this module adds the MXU's commands and states:
//!
//! ```text
//!  IDLE ─SYNC─► HDR ─7 bytes─► DECODE ─┬─► RECV (payload rows) ─┬────────────┐
//!                                      │        (a whole tile) └► W_READ ⇄ W_PUSH
//!                                      ├─► MM_START ► MM_RUN ► MM_DRAIN ──────┤
//!                                      └──────────────────────────────────────┤
//!                                                                             ▼
//!  IDLE ◄─ CRC ◄─────────────── SEND ◄─ RD_LOAD ◄─ RD_ISSUE ◄─(reads)──── REPLY
//! ```
//!
//! - **Rows are written in the cycle their last byte arrives**, so the receive
//!   path never stops listening. Activation rows go straight into the
//!   activation buffer. Weight rows go into a tile buffer (R rows), and only
//!   a complete LOAD_WEIGHTS moves the tile into the MXU's weight FIFO
//!   (`w_valid_i` until `w_ready_o`, row by row) before the reply: a command
//!   that is abandoned half way leaves no partial tile behind to shift every
//!   later tile. With at most [`MAX_QUEUED_TILES`] tiles queued the
//!   FIFO (2R rows, see the `mxu` crate) always has room.
//! - **A matmul step** reads the activation buffer one row ahead (its read port
//!   is synchronous): the first row is presented with `a_first_i` until the
//!   MXU accepts it (when the tile's weights are in place), then one row per
//!   cycle, consecutive as the MXU requires, each with the next accumulator
//!   row. The reply waits for `busy_o` to fall, so after it every result of the
//!   step is in the accumulator.
//!
//! The state machine is written as its state table ([`BridgeState`]): each
//! state lists what it does and where it goes, and every register is
//! assigned in the states that change it (it holds elsewhere). The emitted
//! Verilog names the states and lists the transitions above the state
//! register.

use crate::framing::{BridgeCore, Command, Framing, RowSource, Shape, Status, StatusFields};
use crate::protocol::{self, op, status, MAX_QUEUED_TILES, STATUS_BYTES};
use crate::uart;
use crate::BridgeConfig;
use config::ElemType;
use hw::{
    bits_for, cat, mux, Comb, Design, Expr, Fsm, FsmStates, Mem, ModuleBuilder, ModuleDef, Reg, Ty,
};
use std::rc::Rc;

/// Port names of the bridge module (the framing's).
pub use crate::framing::ports;

/// The Verilog name of the bridge for `cfg`.
pub fn bridge_name(cfg: &BridgeConfig) -> String {
    let mxu = cfg.mxu();
    format!(
        "systole_bridge_{}_{}x{}_acc{}_act{}_cpb{}",
        mxu.dtype(),
        mxu.rows(),
        mxu.cols(),
        mxu.acc_rows(),
        cfg.act_rows(),
        cfg.clocks_per_bit()
    )
}

crate::framing::bridge_states! {
    /// The bridge's states (see the module docs for the flow): the
    /// framing's, then the MXU's.
    pub enum BridgeState {
        /// Reading the first activation row of a matmul step.
        MmStart,
        /// Presenting activation rows to the MXU.
        MmRun,
        /// Waiting for the MXU's last result.
        MmDrain,
        /// Reading the next weight row of a received tile.
        WRead,
        /// Offering that row to the MXU's weight FIFO.
        WPush,
    }
}

hw::hw_enum! {
    /// Where a command's payload rows go or come from.
    pub enum PayloadTarget { Act, Weights, Acc, Status }
}

/// Builds the bridge (with its UARTs and the MXU) into `design`.
#[track_caller]
pub fn build_bridge(design: &mut Design, cfg: &BridgeConfig) -> Rc<ModuleDef> {
    let name = bridge_name(cfg);
    let owned = cfg.params();
    let params = hw::param_refs(&owned);
    let cfg = *cfg;
    design.define(&name, &params, |design, m| {
        m.doc("UART command bridge around the MXU: activation buffer, weight loading, result read-out");
        let rx = uart::uart_rx(design, cfg.clocks_per_bit());
        let tx = uart::uart_tx(design, cfg.clocks_per_bit());
        let mxu_def = mxu::build(design, &cfg.mxu());
        body(m, &cfg, &rx, &tx, &mxu_def);
    })
}

type Frame = Framing<BridgeState, PayloadTarget>;

/// Row widths of the bridge for one configuration, in bits.
#[derive(Clone, Copy)]
struct Rows {
    /// An activation row (R elements), a weight row (C elements), an
    /// accumulator row (C results).
    act: u32,
    weight: u32,
    acc: u32,
    /// The payload shift register: the longest row, or STATUS.
    sh: u32,
}

impl Rows {
    fn of(cfg: &BridgeConfig) -> Rows {
        let mxu = cfg.mxu();
        let e = mxu.dtype().operand_bits();
        let (act, weight, acc) = (mxu.rows() * e, mxu.cols() * e, mxu.cols() * 32);
        Rows {
            act,
            weight,
            acc,
            sh: act.max(acc).max(8 * STATUS_BYTES as u32),
        }
    }
}

/// The MXU bridge: the framing, the MXU's registers and port, the command
/// table, the payload's paths to and from the buffers, and the state table.
fn body(
    m: &mut ModuleBuilder,
    cfg: &BridgeConfig,
    rx_def: &Rc<ModuleDef>,
    tx_def: &Rc<ModuleDef>,
    mxu_def: &Rc<ModuleDef>,
) {
    let rows = Rows::of(cfg);
    let frame = Frame::new(
        m,
        rx_def,
        tx_def,
        Shape {
            sh_bits: rows.sh,
            timeout_log2: cfg.timeout_log2(),
            clocks_per_bit: cfg.clocks_per_bit(),
            default_target: PayloadTarget::Act,
            default_row_bytes: rows.act / 8,
        },
    );
    let regs = MxuRegs::declare(m, cfg, &frame);
    let port = MxuPort::build(m, cfg, mxu_def, &frame, &regs);
    let commands = commands(m, cfg, &frame, &regs);
    let decoded = frame.decode(m, &commands);
    let is_mm = m.wire("op_matmul", frame.opcode_is(&[op::MATMUL, op::MATMUL_ADD]));
    // The framing's row ends and `sh_in`, declared here (their place in the
    // Verilog).
    let ends = frame.row_ends(m);
    frame.shift_in(m);
    // The activation buffer's read data is there the cycle after the read;
    // the MXU's when it says so (`acc_rd_valid_o`, one or two cycles by its
    // depth).
    let is_acc = frame.target_is(PayloadTarget::Acc);
    let rd_take = m.wire("rd_take", !is_acc | port.acc_rd_valid);
    let rd_data = mux(
        frame.target_is(PayloadTarget::Acc),
        port.acc_rd_data.zext(rows.sh),
        port.abuf_row.zext(rows.sh),
    );
    let status_word = status_word(m, cfg, &frame, &regs, port.busy);
    store_rows(m, cfg, &frame, &port);
    let core = MxuCore {
        frame: &frame,
        regs,
        port,
        rows,
        tile_rows: cfg.mxu().rows(),
        status_word,
        start: is_mm & decoded.ok,
        last_row: ends.last_row,
        rd_take,
        rd_data,
    };
    frame.state_table(m, |st| {
        frame.receive_states(st, &core);
        core.weight_states(st);
        frame.reply_states(st, &core);
        core.matmul_states(st);
    });
}

/// The MXU side's registers: the matmul step's accumulator row, mode and
/// first-row flag, the weight tiles queued, and the tile row being pushed
/// to the MXU (declared among the framing's shift register, timeout counter
/// and flags).
#[derive(Clone, Copy)]
struct MxuRegs {
    acc_ptr: Reg,
    add: Reg,
    first: Reg,
    queued: Reg,
    push_cnt: Reg,
}

impl MxuRegs {
    fn declare(m: &mut ModuleBuilder, cfg: &BridgeConfig, frame: &Frame) -> MxuRegs {
        let acc_ptr = m.reg_reset("acc_ptr", Ty::u(16), 0);
        let add = m.reg_reset("add", Ty::BOOL, 0);
        let first = m.reg_reset("first", Ty::BOOL, 0);
        let queued = m.reg_reset("queued", Ty::u(2), 0);
        frame.shift_register(m);
        let push_ty = Ty::u(bits_for(cfg.mxu().rows() - 1));
        let push_cnt = m.reg_reset("push_cnt", push_ty, 0);
        frame.quiet_counter(m);
        frame.flags(m);
        MxuRegs {
            acc_ptr,
            add,
            first,
            queued,
            push_cnt,
        }
    }
}

/// The MXU and the buffers in front of it. Its inputs are combinational
/// values the state table assigns (0 in states that do not).
struct MxuPort {
    w_ready: Expr,
    a_ready: Expr,
    acc_rd_valid: Expr,
    acc_rd_data: Expr,
    busy: Expr,
    w_valid: Comb,
    a_valid: Comb,
    acc_rd_en: Comb,
    abuf_rd_en: Comb,
    wbuf_rd_en: Comb,
    abuf_rd_addr: Comb,
    /// `addr` as an activation buffer row.
    addr_lo: Expr,
    /// The activation buffer and the row it reads.
    abuf: Mem,
    abuf_row: Expr,
    /// The weight tile buffer: a whole tile is received before any of it
    /// goes to the MXU, so a command that is abandoned or refused leaves no
    /// partial tile in the weight FIFO.
    wbuf: Mem,
}

impl MxuPort {
    fn build(
        m: &mut ModuleBuilder,
        cfg: &BridgeConfig,
        mxu_def: &Rc<ModuleDef>,
        frame: &Frame,
        regs: &MxuRegs,
    ) -> MxuPort {
        use mxu::ports as mp;
        let rows = Rows::of(cfg);
        let act_aw = cfg.act_rows().trailing_zeros();
        let acc_aw = cfg.mxu().acc_rows().trailing_zeros();
        let mxu = m.instance("mxu", mxu_def);
        let w_ready = m.inst_output(mxu, mp::W_READY);
        let a_ready = m.inst_output(mxu, mp::A_READY);
        let acc_rd_valid = m.inst_output(mxu, mp::ACC_RD_VALID);
        let acc_rd_data = m.inst_output(mxu, mp::ACC_RD_DATA);
        let busy = m.inst_output(mxu, mp::BUSY);
        m.waive(
            "UNUSEDSIGNAL",
            "mxu_acc_wr_o",
            "a matmul step is complete when busy_o falls; single writes need no count",
        );
        let w_valid = m.comb_default("w_valid", Ty::BOOL, 0);
        let a_valid = m.comb_default("a_valid", Ty::BOOL, 0);
        let acc_rd_en = m.comb_default("acc_rd_en", Ty::BOOL, 0);
        let abuf_rd_en = m.comb_default("abuf_rd_en", Ty::BOOL, 0);
        let wbuf_rd_en = m.comb_default("wbuf_rd_en", Ty::BOOL, 0);
        let addr = frame.addr.q();
        let addr_lo = addr.trunc(act_aw);
        let abuf_rd_addr = m.comb_default("abuf_rd_addr", Ty::u(act_aw), addr_lo);
        let abuf = m.memory("abuf", Ty::u(rows.act), act_aw);
        let abuf_row = m.mem_read(abuf, Some(abuf_rd_en.value()), abuf_rd_addr.value());
        let wbuf_aw = bits_for(cfg.mxu().rows() - 1);
        let wbuf = m.memory("wbuf", Ty::u(rows.weight), wbuf_aw);
        let wbuf_row = m.mem_read(
            wbuf,
            Some(wbuf_rd_en.value()),
            regs.push_cnt.q().zext(wbuf_aw),
        );
        m.connect(mxu, mp::W_VALID, w_valid.value());
        m.connect(mxu, mp::W_ROW, wbuf_row);
        m.connect(mxu, mp::A_VALID, a_valid.value());
        m.connect(mxu, mp::A_FIRST, a_valid.value() & regs.first.q());
        m.connect(mxu, mp::A_ROW, abuf_row);
        m.connect(mxu, mp::A_ACC_ADDR, regs.acc_ptr.q().trunc(acc_aw));
        m.connect(mxu, mp::A_ACC_ADD, regs.add.q());
        m.connect(mxu, mp::ACC_RD_EN, acc_rd_en.value());
        m.connect(mxu, mp::ACC_RD_ADDR, addr.trunc(acc_aw));
        MxuPort {
            w_ready,
            a_ready,
            acc_rd_valid,
            acc_rd_data,
            busy,
            w_valid,
            a_valid,
            acc_rd_en,
            abuf_rd_en,
            wbuf_rd_en,
            abuf_rd_addr,
            addr_lo,
            abuf,
            abuf_row,
            wbuf,
        }
    }
}

/// The MXU bridge's command table (`PROTOCOL.md`, version 1), with the
/// range checks on the header's fields it needs.
fn commands(
    m: &mut ModuleBuilder,
    cfg: &BridgeConfig,
    frame: &Frame,
    regs: &MxuRegs,
) -> Vec<Command<PayloadTarget>> {
    use PayloadTarget as T;
    let rows = Rows::of(cfg);
    let h = frame.header(m);
    let end17 = |base: Expr| base.zext(17) + h.count.zext(17);
    let act_ok = m.wire("act_ok", h.count_ok & end17(h.addr).is_le(cfg.act_rows()));
    let acc_rows = cfg.mxu().acc_rows();
    let acc_addr_ok = m.wire("acc_addr_ok", h.count_ok & end17(h.addr).is_le(acc_rows));
    let acc_arg_ok = m.wire("acc_arg_ok", h.count_ok & end17(h.arg).is_le(acc_rows));
    let room = regs.queued.q().is_lt(MAX_QUEUED_TILES);
    let in_range = |ok: Expr| Status::Requires(ok, status::BAD_RANGE);
    vec![
        Command::new(&[op::STATUS], Status::Ok)
            .reply()
            .target(T::Status)
            .row_bytes(STATUS_BYTES as u32)
            .rows(1),
        Command::new(&[op::WRITE_ACT], in_range(act_ok)).receive(),
        Command::new(&[op::READ_ACT], in_range(act_ok)).reply(),
        // The tile is read (and dropped if refused) whatever the status; it
        // is written from row 0 of the tile buffer.
        Command::new(
            &[op::LOAD_WEIGHTS],
            Status::Requires(room, status::QUEUE_FULL),
        )
        .receive()
        .target(T::Weights)
        .row_bytes(rows.weight / 8)
        .rows(cfg.mxu().rows())
        .first_row(0),
        Command::new(
            &[op::MATMUL, op::MATMUL_ADD],
            Status::RefusedIf(vec![
                (!(act_ok & acc_arg_ok), status::BAD_RANGE),
                (regs.queued.q().is_eq(0), status::NO_WEIGHTS),
            ]),
        ),
        Command::new(&[op::READ_ACC], in_range(acc_addr_ok))
            .reply()
            .target(T::Acc)
            .row_bytes(rows.acc / 8),
    ]
}

/// The STATUS payload (version 1): the element type, the buffers' depths,
/// the weight tiles queued and the MXU's busy flag.
fn status_word(
    m: &mut ModuleBuilder,
    cfg: &BridgeConfig,
    frame: &Frame,
    regs: &MxuRegs,
    busy: Expr,
) -> Expr {
    let mxu = cfg.mxu();
    let queue = cat(&[m.lit(Ty::u(4), MAX_QUEUED_TILES), regs.queued.q().zext(4)]);
    let fields = StatusFields {
        version: protocol::VERSION,
        kind: match mxu.dtype() {
            ElemType::Int8 => 0,
            ElemType::Bf16 => 1,
        },
        rows: mxu.rows(),
        cols: mxu.cols(),
        acc_log2: mxu.acc_rows().trailing_zeros(),
        buffer_log2: cfg.act_rows().trailing_zeros(),
        byte12: queue,
        busy,
    };
    frame.status_word(m, fields)
}

/// Complete received rows are stored in the cycle their last byte arrives:
/// activation rows into the buffer, weight rows into the tile buffer.
fn store_rows(m: &mut ModuleBuilder, cfg: &BridgeConfig, frame: &Frame, port: &MxuPort) {
    let rows = Rows::of(cfg);
    let store = frame.store_row(m).value();
    let wbuf_aw = bits_for(cfg.mxu().rows() - 1);
    let act_row = frame.received_row(m, rows.act);
    m.mem_write(
        port.abuf,
        store & frame.target_is(PayloadTarget::Act),
        port.addr_lo,
        act_row,
    );
    let weight_row = frame.received_row(m, rows.weight);
    m.mem_write(
        port.wbuf,
        store & frame.target_is(PayloadTarget::Weights),
        frame.addr.q().trunc(wbuf_aw),
        weight_row,
    );
}

/// The MXU side of the bridge, as the framing's states see it.
struct MxuCore<'a> {
    frame: &'a Frame,
    regs: MxuRegs,
    port: MxuPort,
    rows: Rows,
    /// R: rows of a weight tile.
    tile_rows: u32,
    status_word: Expr,
    /// DECODE: a MATMUL or MATMUL_ADD that is carried out.
    start: Expr,
    last_row: Expr,
    /// RD_LOAD: the read row is there, and the row.
    rd_take: Expr,
    rd_data: Expr,
}

impl BridgeCore for MxuCore<'_> {
    type State = BridgeState;
    type Target = PayloadTarget;

    fn reply_word(&self) -> Expr {
        self.status_word.zext(self.rows.sh)
    }

    fn decode(&self, m: &mut ModuleBuilder) {
        m.assign(self.regs.add, self.frame.opcode.q().is_eq(op::MATMUL_ADD));
        let arg = self.frame.header(m).arg;
        m.assign(self.regs.acc_ptr, arg);
    }

    fn start(&self) -> Option<(Expr, BridgeState)> {
        Some((self.start, BridgeState::MmStart))
    }

    /// A complete weight tile goes on to the MXU's weight FIFO.
    fn received(&self, m: &mut ModuleBuilder, fsm: Fsm<BridgeState>) {
        let tile = self.frame.exec.q() & self.frame.target_is(PayloadTarget::Weights);
        m.if_(tile, |m| {
            m.assign(self.regs.push_cnt, 0);
            fsm.goto(m, BridgeState::WRead);
        })
        .else_(|m| fsm.goto(m, BridgeState::Reply));
    }

    fn reply_rows(&self) -> (PayloadTarget, RowSource) {
        (PayloadTarget::Status, RowSource::Word)
    }

    fn read_row(&self, m: &mut ModuleBuilder) {
        m.assign(
            self.port.abuf_rd_en,
            self.frame.target_is(PayloadTarget::Act),
        );
        m.assign(
            self.port.acc_rd_en,
            self.frame.target_is(PayloadTarget::Acc),
        );
    }

    fn row_read(&self) -> (Option<Expr>, Expr) {
        (Some(self.rd_take), self.rd_data)
    }
}

impl MxuCore<'_> {
    /// WREAD and WPUSH: the received tile, row by row from the tile buffer
    /// into the MXU's weight FIFO (`w_valid_i` until `w_ready_o`). With at
    /// most [`MAX_QUEUED_TILES`] tiles queued the FIFO (2R rows, see the
    /// `mxu` crate) always has room.
    fn weight_states(&self, st: &mut FsmStates<'_, BridgeState>) {
        use BridgeState as S;
        let fsm = self.frame.fsm;
        let (push_cnt, queued) = (self.regs.push_cnt, self.regs.queued);
        let push_last = push_cnt.q().is_eq(self.tile_rows - 1);
        st.state(S::WRead, |m| {
            m.assign(self.port.wbuf_rd_en, 1);
            fsm.goto(m, S::WPush);
        })
        .state(S::WPush, |m| {
            m.assign(self.port.w_valid, 1);
            m.if_(self.port.w_ready, |m| {
                m.assign(push_cnt, push_cnt.q() + 1);
                m.if_(push_last, |m| {
                    m.assign(queued, queued.q() + 1);
                    fsm.goto(m, S::Reply);
                })
                .else_(|m| fsm.goto(m, S::WRead));
            });
        });
    }

    /// MM_START, MM_RUN and MM_DRAIN: a matmul step. The activation buffer
    /// is read one row ahead (its read port is synchronous): the first row
    /// is presented with `a_first_i` until the MXU accepts it (when the
    /// tile's weights are in place), then one row per cycle, consecutive as
    /// the MXU requires, each with the next accumulator row. The reply waits
    /// for `busy_o` to fall, so after it every result of the step is in the
    /// accumulator.
    fn matmul_states(&self, st: &mut FsmStates<'_, BridgeState>) {
        use BridgeState as S;
        let fsm = self.frame.fsm;
        let (addr, rows_left) = (self.frame.addr, self.frame.rows_left);
        let r = self.regs;
        let p = &self.port;
        st.state(S::MmStart, |m| {
            m.assign(p.abuf_rd_en, 1);
            m.assign(r.first, 1);
            fsm.goto(m, S::MmRun);
        })
        .state(S::MmRun, |m| {
            // Rows are presented one per cycle, each read one ahead.
            m.assign(p.a_valid, 1);
            m.assign(p.abuf_rd_addr, p.addr_lo + 1);
            m.if_(p.a_ready, |m| {
                m.assign(p.abuf_rd_en, 1);
                m.assign(r.first, 0);
                m.assign(rows_left, rows_left.q() - 1);
                m.assign(addr, addr.q() + 1);
                m.assign(r.acc_ptr, r.acc_ptr.q() + 1);
                m.if_(r.first.q(), |m| m.assign(r.queued, r.queued.q() - 1));
                m.if_(self.last_row, |m| fsm.goto(m, S::MmDrain));
            });
        })
        .state(S::MmDrain, |m| {
            m.if_(!p.busy, |m| fsm.goto(m, S::Reply));
        });
    }
}

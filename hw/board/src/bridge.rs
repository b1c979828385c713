//! The command bridge: UART bytes in, MXU handshakes out, replies back.
//!
//! One state machine serves one command at a time (`PROTOCOL.md` is the
//! specification):
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
//! - **Shift register.** Payload bytes pass through one register `sh`, wide
//!   enough for an activation row, an accumulator row and the STATUS payload.
//!   Received bytes enter at the top and everything moves down a byte, so after
//!   a row's bytes the row sits in the top bits, first byte lowest; bytes to
//!   send leave from the bottom and everything moves down a byte. Both
//!   directions are the same shift.
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
//! - **Errors never desynchronise the stream**: every command's length follows
//!   from its header alone, a refused command's payload is read and dropped,
//!   and a command whose next byte does not come within the timeout is
//!   abandoned.
//! - **CRC.** One CRC-8 register covers the command bytes as received and the
//!   reply bytes as sent; the reply's last byte is its value, so the host
//!   detects corruption in either direction.

use crate::protocol::{self, op, status, MAX_QUEUED_TILES, STATUS_BYTES};
use crate::uart::{self, bits_for};
use crate::BridgeConfig;
use config::ElemType;
use hw::{cat, mux, Design, Expr, ModuleBuilder, ModuleDef, Ty};
use std::rc::Rc;

/// Port names of the bridge module.
pub mod ports {
    pub const UART_RX: &str = "uart_rx_i";
    pub const UART_TX: &str = "uart_tx_o";
    /// High while a command is being received, carried out or answered.
    pub const ACTIVE: &str = "active_o";
    /// High while any STATUS error flag is set.
    pub const ERROR: &str = "error_o";
}

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

// Bridge states.
const IDLE: u32 = 0;
const HDR: u32 = 1;
const DECODE: u32 = 2;
const RECV: u32 = 3;
const REPLY: u32 = 4;
const RD_ISSUE: u32 = 5;
const RD_LOAD: u32 = 6;
const SEND: u32 = 7;
const CRC: u32 = 8;
const MM_START: u32 = 9;
const MM_RUN: u32 = 10;
const MM_DRAIN: u32 = 11;
const W_READ: u32 = 12;
const W_PUSH: u32 = 13;

// Payload targets.
const T_ACT: u32 = 0;
const T_WEIGHTS: u32 = 1;
const T_ACC: u32 = 2;
const T_STATUS: u32 = 3;

/// `default`, or the value of the first case whose condition holds.
fn select(default: Expr, cases: &[(Expr, Expr)]) -> Expr {
    cases
        .iter()
        .rev()
        .fold(default, |acc, &(cond, value)| mux(cond, value, acc))
}

/// One byte of CRC-8/SMBUS (polynomial 0x07), as logic.
fn crc8_logic(crc: Expr, byte: Expr) -> Expr {
    let mut c = crc ^ byte;
    for _ in 0..8 {
        let shifted = c << 1u32;
        c = mux(c.msb(), shifted ^ 0x07u8, shifted);
    }
    c
}

/// Builds the bridge (with its UARTs and the MXU) into `design`.
#[track_caller]
pub fn build_bridge(design: &mut Design, cfg: &BridgeConfig) -> Rc<ModuleDef> {
    let name = bridge_name(cfg);
    let mut params: Vec<(&str, String)> = Vec::new();
    let owned = cfg.params();
    for (k, v) in &owned {
        params.push((k.as_str(), v.clone()));
    }
    let cfg = *cfg;
    design.define(&name, &params, |design, m| {
        m.doc("UART command bridge around the MXU: activation buffer, weight loading, result read-out");
        let rx = uart::uart_rx(design, cfg.clocks_per_bit());
        let tx = uart::uart_tx(design, cfg.clocks_per_bit());
        let mxu_def = mxu::build(design, &cfg.mxu());
        body(m, &cfg, &rx, &tx, &mxu_def);
    })
}

fn body(
    m: &mut ModuleBuilder,
    cfg: &BridgeConfig,
    rx_def: &Rc<ModuleDef>,
    tx_def: &Rc<ModuleDef>,
    mxu_def: &Rc<ModuleDef>,
) {
    use mxu::ports as mp;
    let mxu_cfg = cfg.mxu();
    let (rows, cols) = (mxu_cfg.rows(), mxu_cfg.cols());
    let e = mxu_cfg.dtype().operand_bits();
    let act_bits = rows * e;
    let w_bits = cols * e;
    let acc_bits = cols * 32;
    let sh_bits = act_bits.max(acc_bits).max(8 * STATUS_BYTES as u32);
    let act_aw = cfg.act_rows().trailing_zeros();
    let acc_aw = mxu_cfg.acc_rows().trailing_zeros();
    let bc_ty = Ty::u(bits_for(sh_bits / 8));
    let u8t = Ty::u(8);
    let u16t = Ty::u(16);
    let st_ty = Ty::u(4);
    let tgt_ty = Ty::u(2);
    let q_ty = Ty::u(2);

    // ---- The UARTs.
    let rx_pin = m.input(ports::UART_RX, Ty::BOOL);
    let rx = m.instance("rx", rx_def);
    m.connect(rx, uart::rx_ports::RX, rx_pin);
    let rx_valid = m.inst_output(rx, uart::rx_ports::VALID);
    let rx_byte = m.inst_output(rx, uart::rx_ports::DATA);
    let rx_ferr = m.inst_output(rx, uart::rx_ports::FRAME_ERR);
    let tx_valid = m.wire_decl("tx_valid", Ty::BOOL);
    let tx_data = m.wire_decl("tx_data", u8t);
    let tx = m.instance("tx", tx_def);
    m.connect(tx, uart::tx_ports::VALID, tx_valid.value());
    m.connect(tx, uart::tx_ports::DATA, tx_data.value());
    let tx_ready = m.inst_output(tx, uart::tx_ports::READY);
    let tx_pin = m.inst_output(tx, uart::tx_ports::TX);
    m.output(ports::UART_TX, tx_pin);

    // ---- Registers.
    let state = m.reg_reset("state", st_ty, IDLE);
    let hdr_cnt = m.reg_reset("hdr_cnt", Ty::u(3), 0);
    let opcode = m.reg_reset("opcode", u8t, 0);
    let fields = m.reg_reset("fields", Ty::u(48), 0);
    let crc = m.reg_reset("crc", u8t, 0);
    let status_q = m.reg_reset("status", u8t, 0);
    let target = m.reg_reset("target", tgt_ty, 0);
    let reads = m.reg_reset("reads", Ty::BOOL, 0);
    let exec = m.reg_reset("exec", Ty::BOOL, 0);
    let row_bytes = m.reg_reset("row_bytes", bc_ty, 1);
    let byte_cnt = m.reg_reset("byte_cnt", bc_ty, 0);
    let rows_left = m.reg_reset("rows_left", u16t, 0);
    let addr = m.reg_reset("addr", u16t, 0);
    let acc_ptr = m.reg_reset("acc_ptr", u16t, 0);
    let add = m.reg_reset("add", Ty::BOOL, 0);
    let first = m.reg_reset("first", Ty::BOOL, 0);
    let queued = m.reg_reset("queued", q_ty, 0);
    let sh = m.reg_reset("sh", Ty::u(sh_bits), 0);
    let push_ty = Ty::u(bits_for(rows - 1));
    let push_cnt = m.reg_reset("push_cnt", push_ty, 0);
    let quiet = m.reg_reset("quiet", Ty::u(cfg.timeout_log2()), 0);
    let f_framing = m.reg_reset("flag_framing", Ty::BOOL, 0);
    let f_stray = m.reg_reset("flag_stray", Ty::BOOL, 0);
    let f_timeout = m.reg_reset("flag_timeout", Ty::BOOL, 0);

    let s = state.q();
    let at = |k: u32| s.is_eq(k);
    let idle = m.wire("st_idle", at(IDLE));
    let hdr = m.wire("st_hdr", at(HDR));
    let decode = m.wire("st_decode", at(DECODE));
    let recv = m.wire("st_recv", at(RECV));
    let reply = m.wire("st_reply", at(REPLY));
    let rd_issue = m.wire("st_rd_issue", at(RD_ISSUE));
    let rd_load = m.wire("st_rd_load", at(RD_LOAD));
    let send = m.wire("st_send", at(SEND));
    let crc_st = m.wire("st_crc", at(CRC));
    let mm_start = m.wire("st_mm_start", at(MM_START));
    let mm_run = m.wire("st_mm_run", at(MM_RUN));
    let mm_drain = m.wire("st_mm_drain", at(MM_DRAIN));
    let w_read = m.wire("st_w_read", at(W_READ));
    let w_push = m.wire("st_w_push", at(W_PUSH));

    // ---- The MXU and the activation buffer.
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
    let abuf = m.memory("abuf", Ty::u(act_bits), act_aw);
    let tgt = target.q();
    let tgt_is = |k: u32| tgt.is_eq(k);
    let mm_accept = m.wire("mm_accept", mm_run & a_ready);
    // Read data is there the cycle after the read (the MXU also says so).
    let rd_take = m.wire("rd_take", rd_load & (!tgt_is(T_ACC) | acc_rd_valid));
    let addr_lo = addr.q().trunc(act_aw);
    let abuf_rd_en = m.wire(
        "abuf_rd_en",
        (rd_issue & tgt_is(T_ACT)) | mm_start | mm_accept,
    );
    let abuf_rd_addr = m.wire("abuf_rd_addr", mux(mm_run, addr_lo + 1, addr_lo));
    let abuf_row = m.mem_read(abuf, Some(abuf_rd_en), abuf_rd_addr);
    // The weight tile buffer: a whole tile is received before any of it goes
    // to the MXU, so a command that is abandoned or refused leaves no partial
    // tile in the weight FIFO.
    let wbuf_aw = bits_for(rows - 1);
    let wbuf = m.memory("wbuf", Ty::u(w_bits), wbuf_aw);
    let wbuf_row = m.mem_read(wbuf, Some(w_read), push_cnt.q().zext(wbuf_aw));
    m.connect(mxu, mp::W_VALID, w_push);
    m.connect(mxu, mp::W_ROW, wbuf_row);
    m.connect(mxu, mp::A_VALID, mm_run);
    m.connect(mxu, mp::A_FIRST, mm_run & first.q());
    m.connect(mxu, mp::A_ROW, abuf_row);
    m.connect(mxu, mp::A_ACC_ADDR, acc_ptr.q().trunc(acc_aw));
    m.connect(mxu, mp::A_ACC_ADD, add.q());
    m.connect(mxu, mp::ACC_RD_EN, rd_issue & tgt_is(T_ACC));
    m.connect(mxu, mp::ACC_RD_ADDR, addr.q().trunc(acc_aw));

    // ---- Header.
    let is_sync = rx_byte.is_eq(protocol::SYNC);
    let start_cmd = m.wire("start_cmd", idle & rx_valid & is_sync);
    let hdr_byte = m.wire("hdr_byte", hdr & rx_valid);
    let hdr_done = m.wire("hdr_done", hdr_byte & hdr_cnt.q().is_eq(6));
    m.set_next(hdr_cnt, mux(idle, hdr_cnt.q().lit(0), hdr_cnt.q() + 1));
    m.set_enable(hdr_cnt, idle | hdr_byte);
    m.set_next(opcode, rx_byte);
    m.set_enable(opcode, hdr_byte & hdr_cnt.q().is_eq(0));
    m.set_next(fields, cat(&[rx_byte, fields.q().slice(8, 40)]));
    m.set_enable(fields, hdr_byte & hdr_cnt.q().is_ne(0));

    // ---- Decode: checks on the header fields.
    let f = fields.q();
    let f_addr = f.slice(0, 16);
    let f_count = f.slice(16, 16);
    let f_arg = f.slice(32, 16);
    let count_ok = m.wire("count_ok", f_count.is_ne(0));
    let end17 = |base: Expr| base.zext(17) + f_count.zext(17);
    let act_ok = m.wire(
        "act_ok",
        count_ok & end17(f_addr).is_le(m.lit(Ty::u(17), cfg.act_rows())),
    );
    let acc_rows17 = m.lit(Ty::u(17), mxu_cfg.acc_rows());
    let acc_addr_ok = m.wire("acc_addr_ok", count_ok & end17(f_addr).is_le(acc_rows17));
    let acc_arg_ok = m.wire("acc_arg_ok", count_ok & end17(f_arg).is_le(acc_rows17));
    let opq = opcode.q();
    let is_op = |k: u8| opq.is_eq(k);
    let is_status = m.wire("op_status", is_op(op::STATUS));
    let is_write = m.wire("op_write_act", is_op(op::WRITE_ACT));
    let is_read_act = m.wire("op_read_act", is_op(op::READ_ACT));
    let is_load = m.wire("op_load_weights", is_op(op::LOAD_WEIGHTS));
    let is_mm = m.wire("op_matmul", is_op(op::MATMUL) | is_op(op::MATMUL_ADD));
    let is_read_acc = m.wire("op_read_acc", is_op(op::READ_ACC));
    let sb = |v: u8| opq.lit(v);
    let ok = sb(status::OK);
    let bad_range = sb(status::BAD_RANGE);
    let queue_ok = queued.q().is_lt(MAX_QUEUED_TILES);
    let mm_status = mux(
        act_ok & acc_arg_ok,
        mux(queued.q().is_eq(0), sb(status::NO_WEIGHTS), ok),
        bad_range,
    );
    let dec_status = m.wire(
        "dec_status",
        select(
            sb(status::BAD_OPCODE),
            &[
                (is_status, ok),
                (is_write | is_read_act, mux(act_ok, ok, bad_range)),
                (is_load, mux(queue_ok, ok, sb(status::QUEUE_FULL))),
                (is_mm, mm_status),
                (is_read_acc, mux(acc_addr_ok, ok, bad_range)),
            ],
        ),
    );
    let dec_ok = dec_status.is_eq(status::OK);
    let st = |k: u32| s.lit(k);
    let dec_next = select(
        st(REPLY),
        &[
            (is_write & count_ok, st(RECV)),
            (is_load, st(RECV)),
            (is_mm & dec_ok, st(MM_START)),
        ],
    );
    let tl = |k: u32| tgt.lit(k);
    let dec_target = select(
        tl(T_ACT),
        &[
            (is_load, tl(T_WEIGHTS)),
            (is_read_acc, tl(T_ACC)),
            (is_status, tl(T_STATUS)),
        ],
    );
    let bl = |k: u32| byte_cnt.q().lit(k);
    let dec_row_bytes = select(
        bl(act_bits / 8),
        &[
            (is_load, bl(w_bits / 8)),
            (is_read_acc, bl(acc_bits / 8)),
            (is_status, bl(STATUS_BYTES as u32)),
        ],
    );
    let dec_rows = mux(
        is_load,
        f_count.lit(rows),
        mux(is_status, f_count.lit(1), f_count),
    );
    m.set_next(status_q, dec_status);
    m.set_enable(status_q, decode);
    m.set_next(target, dec_target);
    m.set_enable(target, decode);
    m.set_next(reads, is_status | is_read_act | is_read_acc);
    m.set_enable(reads, decode);
    m.set_next(exec, dec_ok);
    m.set_enable(exec, decode);
    m.set_next(row_bytes, dec_row_bytes);
    m.set_enable(row_bytes, decode);
    m.set_next(add, is_op(op::MATMUL_ADD));
    m.set_enable(add, decode);

    // ---- Payload bytes in and out.
    let recv_byte = m.wire("recv_byte", recv & rx_valid);
    let tx_fire = m.wire("tx_fire", tx_valid.value() & tx_ready);
    let send_byte = m.wire("send_byte", send & tx_ready);
    let byte_step = recv_byte | send_byte;
    let row_last = byte_cnt.q().is_eq(row_bytes.q() - 1);
    let row_end = m.wire("row_end", byte_step & row_last);
    let last_row = m.wire("last_row", rows_left.q().is_eq(1));
    let recv_done = m.wire("recv_done", recv_byte & row_last & last_row);
    m.set_next(
        byte_cnt,
        mux(decode | rd_take | row_end, bl(0), byte_cnt.q() + 1),
    );
    m.set_enable(byte_cnt, decode | rd_take | byte_step);
    m.set_next(rows_left, mux(decode, dec_rows, rows_left.q() - 1));
    m.set_enable(rows_left, decode | row_end | mm_accept);
    let recv_row = m.wire("recv_row", recv_byte & row_last);
    m.set_next(
        addr,
        mux(decode, mux(is_load, f_addr.lit(0), f_addr), addr.q() + 1),
    );
    m.set_enable(addr, decode | recv_row | rd_take | mm_accept);
    m.set_next(acc_ptr, mux(decode, f_arg, acc_ptr.q() + 1));
    m.set_enable(acc_ptr, decode | mm_accept);

    // The status word (STATUS payload), least significant byte first.
    let word = {
        let version = sb(protocol::VERSION);
        let dtype = sb(match mxu_cfg.dtype() {
            ElemType::Int8 => 0,
            ElemType::Bf16 => 1,
        });
        let magic = m.lit(Ty::u(32), u32::from_le_bytes(protocol::MAGIC));
        let queue = cat(&[m.lit(Ty::u(4), MAX_QUEUED_TILES), queued.q().zext(4)]);
        let zero4 = m.lit(Ty::u(4), 0);
        let flags = cat(&[zero4, f_timeout.q(), f_stray.q(), f_framing.q(), busy]);
        cat(&[
            m.lit(u16t, cfg.clocks_per_bit()),
            flags,
            queue,
            sb(cfg.act_rows().trailing_zeros() as u8),
            sb(mxu_cfg.acc_rows().trailing_zeros() as u8),
            m.lit(u16t, cols),
            m.lit(u16t, rows),
            dtype,
            version,
            magic,
        ])
    };
    let word = m.wire("status_word", word);
    let sh_q = sh.q();
    let sh_in = m.wire("sh_in", cat(&[rx_byte, sh_q.slice(8, sh_bits - 8)]));
    let sh_out = cat(&[m.lit(u8t, 0), sh_q.slice(8, sh_bits - 8)]);
    let rd_data = mux(
        tgt_is(T_ACC),
        acc_rd_data.zext(sh_bits),
        abuf_row.zext(sh_bits),
    );
    m.set_next(
        sh,
        select(
            word.zext(sh_bits),
            &[(recv_byte, sh_in), (rd_take, rd_data), (send_byte, sh_out)],
        ),
    );
    m.set_enable(sh, decode | recv_byte | rd_take | send_byte);

    // Complete received rows: activation rows into the buffer, weight rows
    // into the holding register.
    let store = m.wire("store_row", recv_row & exec.q());
    let act_row = sh_in.slice(sh_bits - act_bits, act_bits);
    m.mem_write(abuf, store & tgt_is(T_ACT), addr_lo, act_row);
    let w_row = sh_in.slice(sh_bits - w_bits, w_bits);
    m.mem_write(
        wbuf,
        store & tgt_is(T_WEIGHTS),
        addr.q().trunc(wbuf_aw),
        w_row,
    );
    let push_go = m.wire("push_go", recv_done & exec.q() & tgt_is(T_WEIGHTS));
    let pushed = m.wire("pushed", w_push & w_ready);
    let push_last = push_cnt.q().is_eq(rows - 1);
    m.set_next(
        push_cnt,
        mux(push_go, push_cnt.q().lit(0), push_cnt.q() + 1),
    );
    m.set_enable(push_cnt, push_go | pushed);
    let tile_in = pushed & push_last;
    let first_accept = mm_accept & first.q();
    m.set_next(
        queued,
        mux(
            tile_in,
            queued.q() + 1,
            mux(first_accept, queued.q() - 1, queued.q()),
        ),
    );
    m.set_next(first, mm_start);
    m.set_enable(first, mm_start | mm_accept);

    // ---- Replies.
    m.drive(tx_valid, reply | send | crc_st);
    m.drive(
        tx_data,
        select(
            sh_q.slice(0, 8),
            &[(reply, status_q.q()), (crc_st, crc.q())],
        ),
    );
    let crc_byte = mux(tx_fire, tx_data.value(), rx_byte);
    let crc_sync = m.lit(u8t, protocol::crc8_update(0, protocol::SYNC));
    m.set_next(crc, mux(start_cmd, crc_sync, crc8_logic(crc.q(), crc_byte)));
    m.set_enable(crc, start_cmd | hdr_byte | recv_byte | (tx_fire & !crc_st));

    // ---- Timeout, flags.
    let receiving = hdr | recv;
    m.set_next(
        quiet,
        mux(receiving & !rx_valid, quiet.q() + 1, quiet.q().lit(0)),
    );
    let timed_out = m.wire("timed_out", receiving & !rx_valid & quiet.q().all());
    let clear = decode & is_status;
    let stray = rx_valid & ((idle & !is_sync) | !(idle | receiving));
    for (flag, event) in [
        (f_framing, rx_ferr),
        (f_stray, stray),
        (f_timeout, timed_out),
    ] {
        m.set_next(flag, event | (flag.q() & !clear));
    }

    // ---- Next state.
    let after_reply = mux(
        reads.q() & status_q.q().is_eq(status::OK),
        mux(tgt_is(T_STATUS), st(SEND), st(RD_ISSUE)),
        st(CRC),
    );
    let next = select(
        s,
        &[
            (start_cmd, st(HDR)),
            (hdr_done, st(DECODE)),
            (timed_out, st(IDLE)),
            (decode, dec_next),
            (push_go, st(W_READ)),
            (recv_done, st(REPLY)),
            (w_read, st(W_PUSH)),
            (pushed, mux(push_last, st(REPLY), st(W_READ))),
            (reply & tx_ready, after_reply),
            (rd_issue, st(RD_LOAD)),
            (rd_take, st(SEND)),
            (send_byte & row_last, mux(last_row, st(CRC), st(RD_ISSUE))),
            (crc_st & tx_ready, st(IDLE)),
            (mm_start, st(MM_RUN)),
            (mm_accept & last_row, st(MM_DRAIN)),
            (mm_drain & !busy, st(REPLY)),
        ],
    );
    m.set_next(state, next);

    m.output(ports::ACTIVE, !idle);
    m.output(ports::ERROR, f_framing.q() | f_stray.q() | f_timeout.q());
}

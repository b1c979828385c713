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
//!
//! The state machine is written as its state table ([`BridgeState`]): each
//! state lists what it does and where it goes, and every register is
//! assigned in the states that change it (it holds elsewhere). The emitted
//! Verilog names the states and lists the transitions above the state
//! register.

use crate::protocol::{self, op, status, MAX_QUEUED_TILES, STATUS_BYTES};
use crate::uart;
use crate::BridgeConfig;
use config::ElemType;
use hw::{bits_for, cat, mux, Design, Expr, HwEnum, ModuleBuilder, ModuleDef, Ty};
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

hw::hw_enum! {
    /// The bridge's states (see the module docs for the flow).
    pub enum BridgeState {
        /// Waiting for SYNC.
        Idle,
        /// Receiving the seven header bytes after SYNC.
        Hdr,
        /// Checking the header: status, payload target, row counts.
        Decode,
        /// Receiving payload rows.
        Recv,
        /// Sending the status byte.
        Reply,
        /// Reading the next row to send.
        RdIssue,
        /// Taking the read row into the shift register.
        RdLoad,
        /// Sending payload bytes.
        Send,
        /// Sending the CRC byte.
        Crc,
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
    use BridgeState as S;
    use PayloadTarget as T;
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

    // ---- The UARTs.
    let rx_pin = m.input(ports::UART_RX, Ty::BOOL);
    let rx = m.instance("rx", rx_def);
    m.connect(rx, uart::rx_ports::RX, rx_pin);
    let rx_valid = m.inst_output(rx, uart::rx_ports::VALID);
    let rx_byte = m.inst_output(rx, uart::rx_ports::DATA);
    let rx_ferr = m.inst_output(rx, uart::rx_ports::FRAME_ERR);
    let tx_valid = m.comb_default("tx_valid", Ty::BOOL, 0);
    let tx_data = m.comb("tx_data", u8t);
    let tx = m.instance("tx", tx_def);
    m.connect(tx, uart::tx_ports::VALID, tx_valid.value());
    m.connect(tx, uart::tx_ports::DATA, tx_data.value());
    let tx_ready = m.inst_output(tx, uart::tx_ports::READY);
    let tx_pin = m.inst_output(tx, uart::tx_ports::TX);
    m.output(ports::UART_TX, tx_pin);

    // ---- Registers.
    let fsm = m.fsm("state", S::Idle);
    let hdr_cnt = m.reg_reset("hdr_cnt", Ty::u(3), 0);
    let opcode = m.reg_reset("opcode", u8t, 0);
    let fields = m.reg_reset("fields", Ty::u(48), 0);
    let crc = m.reg_reset("crc", u8t, 0);
    let status_q = m.reg_reset("status", u8t, 0);
    let target = m.reg_reset("target", T::ty(), T::Act.index());
    let reads = m.reg_reset("reads", Ty::BOOL, 0);
    let exec = m.reg_reset("exec", Ty::BOOL, 0);
    let row_bytes = m.reg_reset("row_bytes", bc_ty, 1);
    let byte_cnt = m.reg_reset("byte_cnt", bc_ty, 0);
    let rows_left = m.reg_reset("rows_left", u16t, 0);
    let addr = m.reg_reset("addr", u16t, 0);
    let acc_ptr = m.reg_reset("acc_ptr", u16t, 0);
    let add = m.reg_reset("add", Ty::BOOL, 0);
    let first = m.reg_reset("first", Ty::BOOL, 0);
    let queued = m.reg_reset("queued", Ty::u(2), 0);
    let sh = m.reg_reset("sh", Ty::u(sh_bits), 0);
    let push_ty = Ty::u(bits_for(rows - 1));
    let push_cnt = m.reg_reset("push_cnt", push_ty, 0);
    let quiet = m.reg_reset("quiet", Ty::u(cfg.timeout_log2()), 0);
    let f_framing = m.reg_reset("flag_framing", Ty::BOOL, 0);
    let f_stray = m.reg_reset("flag_stray", Ty::BOOL, 0);
    let f_timeout = m.reg_reset("flag_timeout", Ty::BOOL, 0);

    // ---- The MXU and the buffers. Its inputs are combinational values the
    // state table assigns (0 in states that do not).
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
    let w_read = m.comb_default("wbuf_rd_en", Ty::BOOL, 0);
    let addr_lo = addr.q().trunc(act_aw);
    let abuf_rd_addr = m.comb_default("abuf_rd_addr", Ty::u(act_aw), addr_lo);
    let abuf = m.memory("abuf", Ty::u(act_bits), act_aw);
    let abuf_row = m.mem_read(abuf, Some(abuf_rd_en.value()), abuf_rd_addr.value());
    // The weight tile buffer: a whole tile is received before any of it goes
    // to the MXU, so a command that is abandoned or refused leaves no partial
    // tile in the weight FIFO.
    let wbuf_aw = bits_for(rows - 1);
    let wbuf = m.memory("wbuf", Ty::u(w_bits), wbuf_aw);
    let wbuf_row = m.mem_read(wbuf, Some(w_read.value()), push_cnt.q().zext(wbuf_aw));
    m.connect(mxu, mp::W_VALID, w_valid.value());
    m.connect(mxu, mp::W_ROW, wbuf_row);
    m.connect(mxu, mp::A_VALID, a_valid.value());
    m.connect(mxu, mp::A_FIRST, a_valid.value() & first.q());
    m.connect(mxu, mp::A_ROW, abuf_row);
    m.connect(mxu, mp::A_ACC_ADDR, acc_ptr.q().trunc(acc_aw));
    m.connect(mxu, mp::A_ACC_ADD, add.q());
    m.connect(mxu, mp::ACC_RD_EN, acc_rd_en.value());
    m.connect(mxu, mp::ACC_RD_ADDR, addr.q().trunc(acc_aw));

    // ---- Decode: the checks on the header fields, by opcode.
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
    let range = |ok: Expr| mux(ok, opq.lit(status::OK), opq.lit(status::BAD_RANGE));
    // What DECODE loads: the reply status, the payload target and row size,
    // the rows to move, whether the reply carries rows, and the next state.
    let dec_status = m.comb_default("dec_status", u8t, status::BAD_OPCODE);
    let dec_target = m.comb_default("dec_target", T::ty(), T::Act);
    let dec_row_bytes = m.comb_default("dec_row_bytes", bc_ty, act_bits / 8);
    let dec_rows = m.comb_default("dec_rows", u16t, f_count);
    let dec_reads = m.comb_default("dec_reads", Ty::BOOL, 0);
    let dec_recv = m.comb_default("dec_recv", Ty::BOOL, 0);
    m.switch(opq)
        .case(op::STATUS, |m| {
            m.assign(dec_status, status::OK);
            m.assign(dec_target, T::Status);
            m.assign(dec_row_bytes, STATUS_BYTES as u32);
            m.assign(dec_rows, 1);
            m.assign(dec_reads, 1);
        })
        .case(op::WRITE_ACT, |m| {
            m.assign(dec_status, range(act_ok));
            m.assign(dec_recv, count_ok);
        })
        .case(op::READ_ACT, |m| {
            m.assign(dec_status, range(act_ok));
            m.assign(dec_reads, 1);
        })
        .case(op::LOAD_WEIGHTS, |m| {
            let room = queued.q().is_lt(MAX_QUEUED_TILES);
            m.assign(
                dec_status,
                mux(room, opq.lit(status::OK), opq.lit(status::QUEUE_FULL)),
            );
            m.assign(dec_target, T::Weights);
            m.assign(dec_row_bytes, w_bits / 8);
            m.assign(dec_rows, rows);
            // The tile is read (and dropped if refused) whatever the status.
            m.assign(dec_recv, 1);
        })
        .cases(&[op::MATMUL, op::MATMUL_ADD], |m| {
            m.if_(!(act_ok & acc_arg_ok), |m| {
                m.assign(dec_status, status::BAD_RANGE)
            })
            .elif(queued.q().is_eq(0), |m| {
                m.assign(dec_status, status::NO_WEIGHTS)
            })
            .else_(|m| m.assign(dec_status, status::OK));
        })
        .case(op::READ_ACC, |m| {
            m.assign(dec_status, range(acc_addr_ok));
            m.assign(dec_target, T::Acc);
            m.assign(dec_row_bytes, acc_bits / 8);
            m.assign(dec_reads, 1);
        });
    let is_mm = m.wire(
        "op_matmul",
        opq.is_eq(op::MATMUL) | opq.is_eq(op::MATMUL_ADD),
    );
    let dec_ok = dec_status.value().is_eq(status::OK);

    // ---- Payload bytes and rows.
    let tgt = target.q();
    let tgt_is = |t: PayloadTarget| tgt.is_eq(t);
    let row_last = m.wire("row_last", byte_cnt.q().is_eq(row_bytes.q() - 1));
    let last_row = m.wire("last_row", rows_left.q().is_eq(1));
    let sh_q = sh.q();
    let sh_in = m.wire("sh_in", cat(&[rx_byte, sh_q.slice(8, sh_bits - 8)]));
    let sh_out = cat(&[m.lit(u8t, 0), sh_q.slice(8, sh_bits - 8)]);
    // Read data is there the cycle after the read (the MXU also says so).
    let rd_take = m.wire("rd_take", !tgt_is(T::Acc) | acc_rd_valid);
    let rd_data = mux(
        tgt_is(T::Acc),
        acc_rd_data.zext(sh_bits),
        abuf_row.zext(sh_bits),
    );
    let push_last = push_cnt.q().is_eq(rows - 1);
    // The status word (STATUS payload), least significant byte first.
    let word = {
        let sb = |v: u8| m.lit(u8t, v);
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
            sb(protocol::VERSION),
            magic,
        ])
    };
    let word = m.wire("status_word", word);
    // Complete received rows are stored in the cycle their last byte arrives:
    // activation rows into the buffer, weight rows into the tile buffer.
    let store = m.comb_default("store_row", Ty::BOOL, 0);
    m.mem_write(
        abuf,
        store.value() & tgt_is(T::Act),
        addr_lo,
        sh_in.slice(sh_bits - act_bits, act_bits),
    );
    m.mem_write(
        wbuf,
        store.value() & tgt_is(T::Weights),
        addr.q().trunc(wbuf_aw),
        sh_in.slice(sh_bits - w_bits, w_bits),
    );

    // ---- The state table.
    let crc_rx = protocol::crc8_logic(crc.q(), rx_byte);
    let crc_tx = protocol::crc8_logic(crc.q(), tx_data.value());
    // A payload byte received (RECV) or sent (SEND): count it; the row's
    // last byte ends the row.
    let byte_step = |m: &mut ModuleBuilder| {
        m.if_(row_last, |m| {
            m.assign(byte_cnt, 0);
            m.assign(rows_left, rows_left.q() - 1);
        })
        .else_(|m| m.assign(byte_cnt, byte_cnt.q() + 1));
    };
    // A byte expected while receiving: none for 2^timeout_log2 cycles
    // abandons the command.
    let timed_out = m.comb_default("timed_out", Ty::BOOL, 0);
    let wait_byte = |m: &mut ModuleBuilder| {
        m.assign(quiet, quiet.q() + 1);
        m.if_(quiet.q().all(), |m| {
            m.assign(timed_out, 1);
            fsm.goto(m, S::Idle);
        });
    };
    m.assign(quiet, 0);
    m.assign(tx_data, sh_q.slice(0, 8));
    m.fsm_states(fsm, |st| {
        st.state(S::Idle, |m| {
            m.assign(hdr_cnt, 0);
            m.if_(rx_valid & rx_byte.is_eq(protocol::SYNC), |m| {
                m.assign(crc, protocol::crc8_update(0, protocol::SYNC));
                fsm.goto(m, S::Hdr);
            });
        })
        .state(S::Hdr, |m| {
            m.if_(rx_valid, |m| {
                m.assign(hdr_cnt, hdr_cnt.q() + 1);
                m.assign(crc, crc_rx);
                m.if_(hdr_cnt.q().is_eq(0), |m| m.assign(opcode, rx_byte))
                    .else_(|m| m.assign(fields, cat(&[rx_byte, f.slice(8, 40)])));
                m.if_(hdr_cnt.q().is_eq(6), |m| fsm.goto(m, S::Decode));
            })
            .else_(wait_byte);
        })
        .state(S::Decode, |m| {
            m.assign(status_q, dec_status.value());
            m.assign(target, dec_target.value());
            m.assign(reads, dec_reads.value());
            m.assign(exec, dec_ok);
            m.assign(row_bytes, dec_row_bytes.value());
            m.assign(add, opq.is_eq(op::MATMUL_ADD));
            m.assign(byte_cnt, 0);
            m.assign(rows_left, dec_rows.value());
            // A weight tile is written from row 0 of the tile buffer.
            m.assign(
                addr,
                mux(opq.is_eq(op::LOAD_WEIGHTS), f_addr.lit(0), f_addr),
            );
            m.assign(acc_ptr, f_arg);
            m.assign(sh, word.zext(sh_bits));
            m.if_(dec_recv.value(), |m| fsm.goto(m, S::Recv))
                .elif(is_mm & dec_ok, |m| fsm.goto(m, S::MmStart))
                .else_(|m| fsm.goto(m, S::Reply));
        })
        .state(S::Recv, |m| {
            m.if_(rx_valid, |m| {
                m.assign(crc, crc_rx);
                m.assign(sh, sh_in);
                byte_step(m);
                m.if_(row_last, |m| {
                    m.assign(store, exec.q());
                    m.assign(addr, addr.q() + 1);
                    m.if_(last_row, |m| {
                        m.if_(exec.q() & tgt_is(T::Weights), |m| {
                            m.assign(push_cnt, 0);
                            fsm.goto(m, S::WRead);
                        })
                        .else_(|m| fsm.goto(m, S::Reply));
                    });
                });
            })
            .else_(wait_byte);
        })
        .state(S::WRead, |m| {
            m.assign(w_read, 1);
            fsm.goto(m, S::WPush);
        })
        .state(S::WPush, |m| {
            m.assign(w_valid, 1);
            m.if_(w_ready, |m| {
                m.assign(push_cnt, push_cnt.q() + 1);
                m.if_(push_last, |m| {
                    m.assign(queued, queued.q() + 1);
                    fsm.goto(m, S::Reply);
                })
                .else_(|m| fsm.goto(m, S::WRead));
            });
        })
        .state(S::Reply, |m| {
            m.assign(tx_valid, 1);
            m.assign(tx_data, status_q.q());
            m.if_(tx_ready, |m| {
                m.assign(crc, crc_tx);
                m.if_(reads.q() & status_q.q().is_eq(status::OK), |m| {
                    m.if_(tgt_is(T::Status), |m| fsm.goto(m, S::Send))
                        .else_(|m| fsm.goto(m, S::RdIssue));
                })
                .else_(|m| fsm.goto(m, S::Crc));
            });
        })
        .state(S::RdIssue, |m| {
            m.assign(abuf_rd_en, tgt_is(T::Act));
            m.assign(acc_rd_en, tgt_is(T::Acc));
            fsm.goto(m, S::RdLoad);
        })
        .state(S::RdLoad, |m| {
            m.if_(rd_take, |m| {
                m.assign(sh, rd_data);
                m.assign(byte_cnt, 0);
                m.assign(addr, addr.q() + 1);
                fsm.goto(m, S::Send);
            });
        })
        .state(S::Send, |m| {
            m.assign(tx_valid, 1);
            m.if_(tx_ready, |m| {
                m.assign(crc, crc_tx);
                m.assign(sh, sh_out);
                byte_step(m);
                m.if_(row_last, |m| {
                    m.if_(last_row, |m| fsm.goto(m, S::Crc))
                        .else_(|m| fsm.goto(m, S::RdIssue));
                });
            });
        })
        .state(S::Crc, |m| {
            m.assign(tx_valid, 1);
            m.assign(tx_data, crc.q());
            m.if_(tx_ready, |m| fsm.goto(m, S::Idle));
        })
        .state(S::MmStart, |m| {
            m.assign(abuf_rd_en, 1);
            m.assign(first, 1);
            fsm.goto(m, S::MmRun);
        })
        .state(S::MmRun, |m| {
            // Rows are presented one per cycle, each read one ahead.
            m.assign(a_valid, 1);
            m.assign(abuf_rd_addr, addr_lo + 1);
            m.if_(a_ready, |m| {
                m.assign(abuf_rd_en, 1);
                m.assign(first, 0);
                m.assign(rows_left, rows_left.q() - 1);
                m.assign(addr, addr.q() + 1);
                m.assign(acc_ptr, acc_ptr.q() + 1);
                m.if_(first.q(), |m| m.assign(queued, queued.q() - 1));
                m.if_(last_row, |m| fsm.goto(m, S::MmDrain));
            });
        })
        .state(S::MmDrain, |m| {
            m.if_(!busy, |m| fsm.goto(m, S::Reply));
        });
    });

    // ---- Error flags: set by their event, cleared by a STATUS command;
    // the event wins.
    let clear = fsm.is(S::Decode) & opq.is_eq(op::STATUS);
    let idle = fsm.is(S::Idle);
    let receiving = fsm.is(S::Hdr) | fsm.is(S::Recv);
    let stray = rx_valid & ((idle & rx_byte.is_ne(protocol::SYNC)) | !(idle | receiving));
    for (flag, event) in [
        (f_framing, rx_ferr),
        (f_stray, stray),
        (f_timeout, timed_out.value()),
    ] {
        m.if_(clear, |m| m.assign(flag, 0));
        m.if_(event, |m| m.assign(flag, 1));
    }

    m.output(ports::ACTIVE, !idle);
    m.output(ports::ERROR, f_framing.q() | f_stray.q() | f_timeout.q());
}

//! The TensorCore's command bridge: UART bytes in, the TensorCore's memory
//! and instruction ports out, replies back (protocol version 2,
//! `PROTOCOL.md`).
//!
//! The bridge owns the memories the TensorCore's host ports stand for: the
//! program memory (the instruction port), the host input window and the host
//! output window; it writes the core's weight and bias memories through their
//! write ports. The core itself sits beside the bridge in the board top
//! ([`crate::top`]), so that the bridge can reset it before every run (its
//! counters start at zero, its `HALT` flag clears) without resetting itself.
//!
//! ```text
//!  IDLE ─SYNC─► HDR ─7 bytes─► DECODE ─┬─► RECV (payload rows) ───────────────┐
//!                                      ├─► RUN_RESET ► RUN_PRIME ► RUN_GO ────┤
//!                                      │                   (limit) └► RUN_ABORT
//!                                      └──────────────────────────────────────┤
//!                                                                             ▼
//!  IDLE ◄─ CRC ◄─────────────── SEND ◄─ RD_LOAD ◄─ RD_ISSUE ◄─(reads)──── REPLY
//! ```
//!
//! - **Shift register, CRC, timeouts, refusals**: as in [`crate::bridge`]:
//!   payload bytes pass through one shift register `sh`, a received row is
//!   written in the cycle its last byte arrives, one CRC-8 register covers
//!   the command and the reply, a refused command's payload is read and
//!   dropped, and a command whose next byte does not come in time is
//!   abandoned.
//! - **The instruction port always has the next word ready**, as the
//!   timing contract assumes: the program memory is read one word ahead (the
//!   word after the one presented, in the cycle the core takes it), so the
//!   core's counters are those of the golden model's cycle model.
//! - **The host input window is answered in the cycle the core asks**:
//!   its memory is synchronous, so the bridge reads the row the core will
//!   ask for next cycle: the next row of the current `RHM` while it moves
//!   rows, its current row while it waits, and the A field of the word being
//!   taken when an instruction retires.
//! - **RUN** resets the core, feeds it the first n program words and waits
//!   for `halted_o`, counting cycles; past the command's cycle limit it
//!   resets the core again and answers with an error status.
//!
//! The state machine is written as its state table ([`TcBridgeState`]).

use crate::protocol::{self, op, status, COUNTER_BYTES, STATUS_BYTES, TC_INFO_BYTES};
use crate::uart;
use crate::TcBridgeConfig;
use config::tensorcore_isa::field;
use hw::{bits_for, cat, mux, Design, Expr, HwEnum, ModuleBuilder, ModuleDef, Ty};
use std::rc::Rc;

/// The TensorCore's ports the bridge drives or reads, as (core port, bridge
/// port): every core port but the clock, the reset and `act_busy_o`'s twin
/// is wired to the bridge port of the same base name, `tc_` in front and the
/// direction flipped.
pub fn core_wiring() -> Vec<(String, String)> {
    use tensorcore::ports::*;
    let mut names: Vec<&str> = vec![
        INSTR_VALID,
        INSTR,
        INSTR_READY,
        HIN_EN,
        HIN_ADDR,
        HIN_DATA,
        HOUT_WR,
        HOUT_ADDR,
        HOUT_DATA,
        WMEM_WR,
        WMEM_ADDR,
        WMEM_DATA,
        BMEM_WR,
        BMEM_ADDR,
        BMEM_DATA,
        HALTED,
        ERROR,
        ACT_BUSY,
    ];
    names.extend(COUNTERS);
    names
        .into_iter()
        .map(|n| (n.to_string(), bridge_port(n)))
        .collect()
}

/// The bridge's port wired to the core's port `core`: `instr_i` becomes
/// `tc_instr_o`.
pub fn bridge_port(core: &str) -> String {
    let (base, dir) = core.split_at(core.len() - 2);
    let flipped = if dir == "_i" { "_o" } else { "_i" };
    format!("tc_{base}{flipped}")
}

/// The Verilog name of the TensorCore bridge for `cfg`.
pub fn tc_bridge_name(cfg: &TcBridgeConfig) -> String {
    format!(
        "systole_tc_bridge_{}_p{}_in{}_out{}_cpb{}",
        tensorcore::top_name(&cfg.core()),
        cfg.program_words(),
        cfg.input_rows(),
        cfg.output_rows(),
        cfg.clocks_per_bit()
    )
}

hw::hw_enum! {
    /// The TensorCore bridge's states (see the module docs for the flow).
    pub enum TcBridgeState {
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
        /// Resetting the core before a run.
        RunReset,
        /// Reading the program's first word.
        RunPrime,
        /// Feeding the core and waiting for its HALT.
        RunGo,
        /// Resetting a core that overran the cycle limit.
        RunAbort,
    }
}

hw::hw_enum! {
    /// Where a command's payload rows go or come from.
    pub enum TcTarget { Input, Weights, Bias, Program, Output, Status, Info, Counters }
}

/// `e` (unsigned) cut or zero-extended to `width` bits.
fn fit(e: Expr, width: u32) -> Expr {
    if e.width() >= width {
        e.trunc(width)
    } else {
        e.zext(width)
    }
}

fn log2(v: u32) -> u32 {
    v.trailing_zeros()
}

/// Builds the TensorCore bridge (with its UARTs, without the core) into
/// `design`.
#[track_caller]
pub fn build_tc_bridge(design: &mut Design, cfg: &TcBridgeConfig) -> Rc<ModuleDef> {
    let name = tc_bridge_name(cfg);
    let owned = cfg.params();
    let params: Vec<(&str, String)> = owned.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    let cfg = *cfg;
    design.define(&name, &params, |design, m| {
        m.doc("UART command bridge of the TensorCore: program memory, host windows, weight and bias writes, runs");
        let rx = uart::uart_rx(design, cfg.clocks_per_bit());
        let tx = uart::uart_tx(design, cfg.clocks_per_bit());
        body(m, &cfg, &rx, &tx);
    })
}

fn body(
    m: &mut ModuleBuilder,
    cfg: &TcBridgeConfig,
    rx_def: &Rc<ModuleDef>,
    tx_def: &Rc<ModuleDef>,
) {
    use crate::bridge::ports;
    use tensorcore::ports as tp;
    use TcBridgeState as S;
    use TcTarget as T;
    let core = cfg.core();
    let (r, c) = (core.rows(), core.cols());
    let in_bits = 8 * r;
    let w_bits = 8 * c;
    let out_bits = 32 * c;
    let instr_bits = config::tensorcore_isa::INSTR_BITS;
    let sh_bits = in_bits
        .max(out_bits)
        .max(instr_bits)
        .max(8 * STATUS_BYTES as u32)
        .max(8 * TC_INFO_BYTES as u32)
        .max(8 * COUNTER_BYTES as u32);
    let in_aw = log2(cfg.input_rows());
    let out_aw = log2(cfg.output_rows());
    let p_aw = log2(cfg.program_words());
    let w_aw = log2(core.weight_rows()).max(1);
    let b_aw = log2(core.bias_rows()).max(1);
    let bc_ty = Ty::u(bits_for(sh_bits / 8));
    let u8t = Ty::u(8);
    let u16t = Ty::u(16);
    let u32t = Ty::u(32);
    let bp = |n: &str| crate::tc_bridge::bridge_port(n);

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

    // ---- The core's ports, from the bridge's side.
    let instr_ready = m.input(&bp(tp::INSTR_READY), Ty::BOOL);
    let hin_en = m.input(&bp(tp::HIN_EN), Ty::BOOL);
    let hin_addr = m.input(&bp(tp::HIN_ADDR), Ty::u(config::tensorcore_isa::ADDR_BITS));
    let hout_wr = m.input(&bp(tp::HOUT_WR), Ty::BOOL);
    let hout_addr = m.input(&bp(tp::HOUT_ADDR), Ty::u(config::tensorcore_isa::ADDR_BITS));
    let hout_data = m.input(&bp(tp::HOUT_DATA), Ty::u(out_bits));
    let halted = m.input(&bp(tp::HALTED), Ty::BOOL);
    let core_error = m.input(&bp(tp::ERROR), Ty::BOOL);
    let act_busy = m.input(&bp(tp::ACT_BUSY), Ty::BOOL);
    let counters: Vec<Expr> = tp::COUNTERS
        .iter()
        .map(|n| m.input(&bp(n), Ty::u(tensorcore::COUNTER_BITS)))
        .collect();
    for (port, reason) in [
        (
            bp(tp::HIN_ADDR),
            "the host input window is smaller than the core's 22-bit address space",
        ),
        (
            bp(tp::HOUT_ADDR),
            "the host output window is smaller than the core's 22-bit address space",
        ),
    ] {
        m.waive("UNUSEDSIGNAL", &port, reason);
    }

    // ---- Registers.
    let fsm = m.fsm("state", S::Idle);
    let hdr_cnt = m.reg_reset("hdr_cnt", Ty::u(3), 0);
    let opcode = m.reg_reset("opcode", u8t, 0);
    let fields = m.reg_reset("fields", Ty::u(48), 0);
    let crc = m.reg_reset("crc", u8t, 0);
    let status_q = m.reg_reset("status", u8t, 0);
    let target = m.reg_reset("target", T::ty(), T::Input.index());
    let reads = m.reg_reset("reads", Ty::BOOL, 0);
    let exec = m.reg_reset("exec", Ty::BOOL, 0);
    let row_bytes = m.reg_reset("row_bytes", bc_ty, 1);
    let byte_cnt = m.reg_reset("byte_cnt", bc_ty, 0);
    let rows_left = m.reg_reset("rows_left", u16t, 0);
    let addr = m.reg_reset("addr", u16t, 0);
    let sh = m.reg_reset("sh", Ty::u(sh_bits), 0);
    let quiet = m.reg_reset("quiet", Ty::u(cfg.timeout_log2()), 0);
    let pc = m.reg_reset("pc", Ty::u(17), 0);
    let run_words = m.reg_reset("run_words", Ty::u(17), 0);
    let run_limit = m.reg_reset("run_limit", u32t, 0);
    let run_cnt = m.reg_reset("run_cnt", u32t, 0);
    let f_framing = m.reg_reset("flag_framing", Ty::BOOL, 0);
    let f_stray = m.reg_reset("flag_stray", Ty::BOOL, 0);
    let f_timeout = m.reg_reset("flag_timeout", Ty::BOOL, 0);

    // ---- Combinational controls the state table assigns.
    let core_rst = m.comb_default("core_rst", Ty::BOOL, 0);
    let instr_valid = m.comb_default("instr_valid", Ty::BOOL, 0);
    let out_rd_en = m.comb_default("out_rd_en", Ty::BOOL, 0);
    let store = m.comb_default("store_row", Ty::BOOL, 0);
    let prog_rd_addr = m.comb_default("prog_rd_addr", Ty::u(p_aw), fit(pc.q(), p_aw));

    // ---- Memories: the program, the host input window, the host output
    // window.
    let prog = m.memory("prog", Ty::u(instr_bits), p_aw);
    let hin = m.memory("hin", Ty::u(in_bits), in_aw);
    let hout = m.memory("hout", Ty::u(out_bits), out_aw);
    let tgt = target.q();
    let tgt_is = |t: TcTarget| tgt.is_eq(t);
    let sh_q = sh.q();
    let sh_in = m.wire("sh_in", cat(&[rx_byte, sh_q.slice(8, sh_bits - 8)]));
    let sh_out = cat(&[m.lit(u8t, 0), sh_q.slice(8, sh_bits - 8)]);
    let top_bits = |bits: u32| sh_in.slice(sh_bits - bits, bits);
    let wr = |t: TcTarget| store.value() & tgt.is_eq(t);
    m.mem_write(
        prog,
        wr(T::Program),
        fit(addr.q(), p_aw),
        top_bits(instr_bits),
    );
    m.mem_write(hin, wr(T::Input), fit(addr.q(), in_aw), top_bits(in_bits));
    m.mem_write(hout, hout_wr, hout_addr.trunc(out_aw), hout_data);
    let out_row = m.mem_read(hout, Some(out_rd_en.value()), fit(addr.q(), out_aw));
    // The program word presented to the core (read one ahead).
    let word = m.mem_read(prog, None, prog_rd_addr.value());
    let take = m.wire("take", instr_valid.value() & instr_ready);
    // The input row the core asks for next cycle (see the module docs).
    let next_in = mux(
        take,
        word.slice(field::A.0, in_aw.max(1)),
        mux(
            hin_en,
            hin_addr.trunc(in_aw) + m.lit(Ty::u(in_aw), 1),
            hin_addr.trunc(in_aw),
        ),
    );
    let next_in = m.wire("hin_next", next_in);
    let hin_row = m.mem_read(hin, None, next_in);
    m.output(&bp(tp::INSTR_VALID), instr_valid.value());
    m.output(&bp(tp::INSTR), word);
    m.output(&bp(tp::HIN_DATA), hin_row);
    m.output(&bp(tp::WMEM_WR), wr(T::Weights));
    m.output(&bp(tp::WMEM_ADDR), fit(addr.q(), w_aw));
    m.output(&bp(tp::WMEM_DATA), top_bits(w_bits));
    m.output(&bp(tp::BMEM_WR), wr(T::Bias));
    m.output(&bp(tp::BMEM_ADDR), fit(addr.q(), b_aw));
    m.output(&bp(tp::BMEM_DATA), top_bits(out_bits));
    m.output(crate::tc_bridge::CORE_RESET, core_rst.value());

    // ---- Decode: the checks on the header fields, by opcode.
    let f = fields.q();
    let f_addr = f.slice(0, 16);
    let f_count = f.slice(16, 16);
    let f_arg = f.slice(32, 16);
    let count_ok = m.wire("count_ok", f_count.is_ne(0));
    let fits = |m: &mut ModuleBuilder, n: &str, rows: u32| {
        let end = f_addr.zext(17) + f_count.zext(17);
        let e = count_ok & end.is_le(m.lit(Ty::u(17), rows));
        m.wire(n, e)
    };
    let in_ok = fits(m, "input_ok", cfg.input_rows());
    let out_ok = fits(m, "output_ok", cfg.output_rows());
    let w_ok = fits(m, "weights_ok", core.weight_rows());
    let b_ok = fits(m, "bias_ok", core.bias_rows());
    let p_ok = fits(m, "program_ok", cfg.program_words());
    let limit = m.wire("limit", cat(&[f_arg, f_count]));
    let run_ok = m.wire(
        "run_ok",
        f_addr.is_ne(0)
            & f_addr.zext(17).is_le(m.lit(Ty::u(17), cfg.program_words()))
            & limit.is_ne(0),
    );
    let opq = opcode.q();
    let range = |ok: Expr| mux(ok, opq.lit(status::OK), opq.lit(status::BAD_RANGE));
    let dec_status = m.comb_default("dec_status", u8t, status::BAD_OPCODE);
    let dec_target = m.comb_default("dec_target", T::ty(), T::Input);
    let dec_row_bytes = m.comb_default("dec_row_bytes", bc_ty, in_bits / 8);
    let dec_rows = m.comb_default("dec_rows", u16t, f_count);
    let dec_reads = m.comb_default("dec_reads", Ty::BOOL, 0);
    let dec_recv = m.comb_default("dec_recv", Ty::BOOL, 0);
    let one_row = |m: &mut ModuleBuilder, t: TcTarget, bytes: usize| {
        m.assign(dec_status, status::OK);
        m.assign(dec_target, t);
        m.assign(dec_row_bytes, bytes as u32);
        m.assign(dec_rows, 1);
        m.assign(dec_reads, 1);
    };
    let write_rows = |m: &mut ModuleBuilder, ok: Expr, t: TcTarget, bits: u32| {
        m.assign(dec_status, range(ok));
        m.assign(dec_target, t);
        m.assign(dec_row_bytes, bits / 8);
        m.assign(dec_recv, count_ok);
    };
    m.switch(opq)
        .case(op::STATUS, |m| one_row(m, T::Status, STATUS_BYTES))
        .case(op::TC_INFO, |m| one_row(m, T::Info, TC_INFO_BYTES))
        .case(op::READ_COUNTERS, |m| {
            one_row(m, T::Counters, COUNTER_BYTES)
        })
        .case(op::WRITE_INPUT, |m| write_rows(m, in_ok, T::Input, in_bits))
        .case(op::WRITE_WEIGHTS, |m| {
            write_rows(m, w_ok, T::Weights, w_bits)
        })
        .case(op::WRITE_BIAS, |m| write_rows(m, b_ok, T::Bias, out_bits))
        .case(op::WRITE_PROGRAM, |m| {
            write_rows(m, p_ok, T::Program, instr_bits)
        })
        .case(op::READ_OUTPUT, |m| {
            m.assign(dec_status, range(out_ok));
            m.assign(dec_target, T::Output);
            m.assign(dec_row_bytes, out_bits / 8);
            m.assign(dec_reads, 1);
        })
        .case(op::RUN, |m| m.assign(dec_status, range(run_ok)));
    let dec_ok = dec_status.value().is_eq(status::OK);
    let is_run = opq.is_eq(op::RUN);

    // ---- The STATUS, TC_INFO and READ_COUNTERS payloads, least significant
    // byte first.
    let running = m.wire(
        "running",
        fsm.is(S::RunReset) | fsm.is(S::RunPrime) | fsm.is(S::RunGo) | fsm.is(S::RunAbort),
    );
    let sb = |m: &mut ModuleBuilder, v: u32| m.lit(u8t, v);
    let status_word = {
        let magic = m.lit(u32t, u32::from_le_bytes(protocol::MAGIC));
        let zero4 = m.lit(Ty::u(4), 0);
        let flags = cat(&[
            zero4,
            f_timeout.q(),
            f_stray.q(),
            f_framing.q(),
            running | act_busy,
        ]);
        let parts = [
            m.lit(u16t, cfg.clocks_per_bit()),
            flags,
            sb(m, 0),
            sb(m, log2(core.ub_rows())),
            sb(m, log2(core.acc_rows())),
            m.lit(u16t, c),
            m.lit(u16t, r),
            sb(m, u32::from(protocol::CORE_TENSORCORE)),
            sb(m, u32::from(protocol::VERSION_TC)),
            magic,
        ];
        let e = cat(&parts);
        m.wire("status_word", e)
    };
    let info_word = {
        let parts = [
            m.lit(Ty::u(24), 0),
            sb(m, tp::COUNTERS.len() as u32),
            sb(m, log2(cfg.output_rows())),
            sb(m, log2(cfg.input_rows())),
            sb(m, log2(cfg.program_words())),
            sb(m, core.weight_queue()),
            sb(m, log2(core.bias_rows())),
            sb(m, log2(core.weight_rows())),
            sb(m, log2(core.ub_rows())),
            sb(m, log2(core.acc_rows())),
            m.lit(u16t, c),
            m.lit(u16t, r),
        ];
        let e = cat(&parts);
        m.wire("info_word", e)
    };
    let counter_word = {
        let mut parts = counters.clone();
        parts.reverse();
        let e = cat(&parts);
        m.wire("counter_word", e)
    };
    let payload_word = mux(
        opq.is_eq(op::STATUS),
        status_word.zext(sh_bits),
        mux(
            opq.is_eq(op::TC_INFO),
            info_word.zext(sh_bits),
            counter_word.zext(sh_bits),
        ),
    );

    // ---- The state table.
    let crc_rx = protocol::crc8_logic(crc.q(), rx_byte);
    let crc_tx = protocol::crc8_logic(crc.q(), tx_data.value());
    let row_last = m.wire("row_last", byte_cnt.q().is_eq(row_bytes.q() - 1));
    let last_row = m.wire("last_row", rows_left.q().is_eq(1));
    let byte_step = |m: &mut ModuleBuilder| {
        m.if_(row_last, |m| {
            m.assign(byte_cnt, 0);
            m.assign(rows_left, rows_left.q() - 1);
        })
        .else_(|m| m.assign(byte_cnt, byte_cnt.q() + 1));
    };
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
    let one_pc = m.lit(Ty::u(17), 1);
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
            m.assign(byte_cnt, 0);
            m.assign(rows_left, dec_rows.value());
            m.assign(addr, f_addr);
            m.assign(run_words, f_addr.zext(17));
            m.assign(run_limit, limit);
            m.assign(sh, payload_word);
            m.if_(dec_recv.value(), |m| fsm.goto(m, S::Recv))
                .elif(is_run & dec_ok, |m| fsm.goto(m, S::RunReset))
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
                    m.if_(last_row, |m| fsm.goto(m, S::Reply));
                });
            })
            .else_(wait_byte);
        })
        .state(S::Reply, |m| {
            m.assign(tx_valid, 1);
            m.assign(tx_data, status_q.q());
            m.if_(tx_ready, |m| {
                m.assign(crc, crc_tx);
                m.if_(reads.q() & status_q.q().is_eq(status::OK), |m| {
                    m.if_(tgt_is(T::Output), |m| fsm.goto(m, S::RdIssue))
                        .else_(|m| fsm.goto(m, S::Send));
                })
                .else_(|m| fsm.goto(m, S::Crc));
            });
        })
        .state(S::RdIssue, |m| {
            m.assign(out_rd_en, 1);
            fsm.goto(m, S::RdLoad);
        })
        .state(S::RdLoad, |m| {
            m.assign(sh, out_row.zext(sh_bits));
            m.assign(byte_cnt, 0);
            m.assign(addr, addr.q() + 1);
            fsm.goto(m, S::Send);
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
        .state(S::RunReset, |m| {
            m.assign(core_rst, 1);
            m.assign(pc, 0);
            m.assign(run_cnt, 0);
            fsm.goto(m, S::RunPrime);
        })
        .state(S::RunPrime, |m| {
            // The first word is read here and presented from the next cycle.
            fsm.goto(m, S::RunGo);
        })
        .state(S::RunGo, |m| {
            m.assign(instr_valid, pc.q().is_lt(run_words.q()));
            m.if_(take, |m| {
                m.assign(pc, pc.q() + one_pc);
                m.assign(prog_rd_addr, fit(pc.q(), p_aw) + m.lit(Ty::u(p_aw), 1));
            });
            m.if_(halted, |m| {
                m.assign(
                    status_q,
                    mux(core_error, opq.lit(status::CORE_ERROR), opq.lit(status::OK)),
                );
                fsm.goto(m, S::Reply);
            })
            .elif(run_cnt.q().is_eq(run_limit.q()), |m| {
                fsm.goto(m, S::RunAbort)
            })
            .else_(|m| m.assign(run_cnt, run_cnt.q() + 1));
        })
        .state(S::RunAbort, |m| {
            m.assign(core_rst, 1);
            m.assign(status_q, status::RUN_TIMEOUT);
            fsm.goto(m, S::Reply);
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

/// The bridge's output that resets the core (with the board's reset).
pub const CORE_RESET: &str = "core_rst_o";

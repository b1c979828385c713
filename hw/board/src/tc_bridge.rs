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
//!  IDLE ─SYNC─► HDR ─7 bytes─► DECODE ─┬─► RECV (payload rows) ───────────────────────┐
//!                                      ├─► RUN_RESET ► RUN_PRIME ► RUN_LOAD ► RUN_GO ─┤
//!                                      │                              (limit) └► RUN_ABORT
//!                                      └──────────────────────────────────────────────┤
//!                                                                                     ▼
//!  IDLE ◄─ CRC ◄─────────────── SEND ◄─ RD_LOAD ◄─ RD_ISSUE ◄─(reads)──────────── REPLY
//! ```
//!
//! - **Shift register, CRC, timeouts, refusals**: the framing's
//!   ([`crate::framing`], shared with the MXU's bridge): payload bytes pass
//!   through one shift register `sh`, a received row is written in the cycle
//!   its last byte arrives, one CRC-8 register covers the command and the
//!   reply, a refused command's payload is read and dropped, and a command
//!   whose next byte does not come in time is abandoned. This module adds
//!   the version 2 command table and the run's states.
//! - **The instruction port always has the next word ready**, as the
//!   timing contract assumes, and from a register: the word presented is
//!   held in `instr_q`, and the program memory's output already holds the
//!   word after it, which `instr_q` loads in the cycle the core takes its
//!   word (the memory then reads the one after that). The memory's output
//!   thus reaches only a register, not the core's decode (on the ULX3S
//!   that path limited the clock). The core still sees its first word one
//!   cycle after its reset ends, so its counters are those of the golden
//!   model's cycle model.
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

use crate::framing::{BridgeCore, Command, Framing, RowSource, Shape, Status, StatusFields};
use crate::protocol::{self, op, status, COUNTER_BYTES, STATUS_BYTES, TC_INFO_BYTES};
use crate::uart;
use crate::TcBridgeConfig;
use config::tensorcore_isa::field;
use hw::{cat, mux, Comb, Design, Expr, FsmStates, ModuleBuilder, ModuleDef, Reg, Ty};
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

crate::framing::bridge_states! {
    /// The TensorCore bridge's states (see the module docs for the flow):
    /// the framing's, then the run's.
    pub enum TcBridgeState {
        /// Resetting the core before a run.
        RunReset,
        /// Reading the program's first word (the core held in reset).
        RunPrime,
        /// Loading the first word into the presented register, reading the
        /// second.
        RunLoad,
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
    let params = hw::param_refs(&owned);
    let cfg = *cfg;
    design.define(&name, &params, |design, m| {
        m.doc("UART command bridge of the TensorCore: program memory, host windows, weight and bias writes, runs");
        let rx = uart::uart_rx(design, cfg.clocks_per_bit());
        let tx = uart::uart_tx(design, cfg.clocks_per_bit());
        body(m, &cfg, &rx, &tx);
    })
}

type Frame = Framing<TcBridgeState, TcTarget>;

/// Row widths of the bridge for one configuration, in bits.
#[derive(Clone, Copy)]
struct Rows {
    /// A host input row (R int8), a weight row (C int8), a bias or host
    /// output row (C int32), an instruction word.
    input: u32,
    weight: u32,
    output: u32,
    instr: u32,
    /// The payload shift register: the longest row or payload.
    sh: u32,
}

impl Rows {
    fn of(cfg: &TcBridgeConfig) -> Rows {
        let core = cfg.core();
        let (input, weight, output) = (8 * core.rows(), 8 * core.cols(), 32 * core.cols());
        let instr = config::tensorcore_isa::INSTR_BITS;
        Rows {
            input,
            weight,
            output,
            instr,
            sh: input
                .max(output)
                .max(instr)
                .max(8 * STATUS_BYTES as u32)
                .max(8 * TC_INFO_BYTES as u32)
                .max(8 * COUNTER_BYTES as u32),
        }
    }
}

/// The TensorCore bridge: the framing, the core's ports, the run's
/// registers, the memories, the command table, the reply payloads, and the
/// state table.
fn body(
    m: &mut ModuleBuilder,
    cfg: &TcBridgeConfig,
    rx_def: &Rc<ModuleDef>,
    tx_def: &Rc<ModuleDef>,
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
            default_target: TcTarget::Input,
            default_row_bytes: rows.input / 8,
        },
    );
    let core = CorePorts::inputs(m, cfg);
    // The framing's registers and the run's, in their Verilog order.
    frame.shift_register(m);
    frame.quiet_counter(m);
    let run = RunRegs::declare(m);
    frame.flags(m);
    let mem = Memories::build(m, cfg, &frame, &core, &run);
    let (commands, limit) = commands(m, cfg, &frame);
    let decoded = frame.decode(m, &commands);
    let fsm = frame.fsm;
    let running = m.wire(
        "running",
        fsm.is(TcBridgeState::RunReset)
            | fsm.is(TcBridgeState::RunPrime)
            | fsm.is(TcBridgeState::RunLoad)
            | fsm.is(TcBridgeState::RunGo)
            | fsm.is(TcBridgeState::RunAbort),
    );
    let payload_word = payload_words(m, cfg, &frame, &core, running);
    let side = CoreSide {
        frame: &frame,
        core,
        run,
        mem,
        rows,
        payload_word,
        limit,
        start: frame.opcode_is(&[op::RUN]) & decoded.ok,
        program_aw: log2(cfg.program_words()),
    };
    frame.state_table(m, |st| {
        frame.receive_states(st, &side);
        frame.reply_states(st, &side);
        side.run_states(st);
    });
}

/// The core's ports, from the bridge's side: the inputs (the bridge's
/// outputs to the core are driven where they are made).
struct CorePorts {
    instr_ready: Expr,
    hin_en: Expr,
    hin_addr: Expr,
    hout_wr: Expr,
    hout_addr: Expr,
    hout_data: Expr,
    halted: Expr,
    error: Expr,
    act_busy: Expr,
    counters: Vec<Expr>,
}

impl CorePorts {
    fn inputs(m: &mut ModuleBuilder, cfg: &TcBridgeConfig) -> CorePorts {
        use tensorcore::ports as tp;
        let bp = |n: &str| bridge_port(n);
        let addr_ty = Ty::u(config::tensorcore_isa::ADDR_BITS);
        let ports = CorePorts {
            instr_ready: m.input(&bp(tp::INSTR_READY), Ty::BOOL),
            hin_en: m.input(&bp(tp::HIN_EN), Ty::BOOL),
            hin_addr: m.input(&bp(tp::HIN_ADDR), addr_ty),
            hout_wr: m.input(&bp(tp::HOUT_WR), Ty::BOOL),
            hout_addr: m.input(&bp(tp::HOUT_ADDR), addr_ty),
            hout_data: m.input(&bp(tp::HOUT_DATA), Ty::u(Rows::of(cfg).output)),
            halted: m.input(&bp(tp::HALTED), Ty::BOOL),
            error: m.input(&bp(tp::ERROR), Ty::BOOL),
            act_busy: m.input(&bp(tp::ACT_BUSY), Ty::BOOL),
            counters: tp::COUNTERS
                .iter()
                .map(|n| m.input(&bp(n), Ty::u(tensorcore::COUNTER_BITS)))
                .collect(),
        };
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
        ports
    }
}

/// A run's registers: the program counter, the words to run, the cycle
/// limit and the cycles run.
#[derive(Clone, Copy)]
struct RunRegs {
    pc: Reg,
    words: Reg,
    limit: Reg,
    cycles: Reg,
}

impl RunRegs {
    fn declare(m: &mut ModuleBuilder) -> RunRegs {
        RunRegs {
            pc: m.reg_reset("pc", Ty::u(17), 0),
            words: m.reg_reset("run_words", Ty::u(17), 0),
            limit: m.reg_reset("run_limit", Ty::u(32), 0),
            cycles: m.reg_reset("run_cnt", Ty::u(32), 0),
        }
    }
}

/// The memories the core's host ports stand for (the program, the host
/// input window, the host output window), the writes into the core's
/// weight and bias memories, and the controls the state table assigns.
struct Memories {
    core_rst: Comb,
    instr_valid: Comb,
    out_rd_en: Comb,
    prog_rd_addr: Comb,
    /// The program word presented to the core.
    instr: Reg,
    /// The program memory's output (the word after the one presented).
    prog_word: Expr,
    /// The host output row read (for READ_OUTPUT).
    out_row: Expr,
    /// The core takes the instruction word presented.
    take: Expr,
}

impl Memories {
    fn build(
        m: &mut ModuleBuilder,
        cfg: &TcBridgeConfig,
        frame: &Frame,
        core: &CorePorts,
        run: &RunRegs,
    ) -> Memories {
        use tensorcore::ports as tp;
        use TcTarget as T;
        let rows = Rows::of(cfg);
        let in_aw = log2(cfg.input_rows());
        let out_aw = log2(cfg.output_rows());
        let p_aw = log2(cfg.program_words());
        let core_rst = m.comb_default("core_rst", Ty::BOOL, 0);
        let instr_valid = m.comb_default("instr_valid", Ty::BOOL, 0);
        let out_rd_en = m.comb_default("out_rd_en", Ty::BOOL, 0);
        // The framing's `store_row`, declared here (its place in the Verilog).
        let store = frame.store_row(m);
        let prog_rd_addr = m.comb_default("prog_rd_addr", Ty::u(p_aw), fit(run.pc.q(), p_aw));
        let prog = m.memory("prog", Ty::u(rows.instr), p_aw);
        let hin = m.memory("hin", Ty::u(rows.input), in_aw);
        let hout = m.memory("hout", Ty::u(rows.output), out_aw);
        frame.shift_in(m);
        let addr = frame.addr.q();
        let wr = |t: TcTarget| store.value() & frame.target_is(t);
        let instr_row = frame.received_row(m, rows.instr);
        m.mem_write(prog, wr(T::Program), fit(addr, p_aw), instr_row);
        let input_row = frame.received_row(m, rows.input);
        m.mem_write(hin, wr(T::Input), fit(addr, in_aw), input_row);
        m.mem_write(
            hout,
            core.hout_wr,
            core.hout_addr.trunc(out_aw),
            core.hout_data,
        );
        let out_row = m.mem_read(hout, Some(out_rd_en.value()), fit(addr, out_aw));
        // The program word after the one presented (read two ahead).
        let prog_word = m.mem_read(prog, None, prog_rd_addr.value());
        let instr = m.reg("instr_q", Ty::u(rows.instr));
        let word = instr.q();
        let take = m.wire("take", instr_valid.value() & core.instr_ready);
        // The input row the core asks for next cycle (see the module docs).
        let next_in = mux(
            take,
            word.slice(field::A.0, in_aw.max(1)),
            mux(
                core.hin_en,
                core.hin_addr.trunc(in_aw) + 1u32,
                core.hin_addr.trunc(in_aw),
            ),
        );
        let next_in = m.wire("hin_next", next_in);
        let hin_row = m.mem_read(hin, None, next_in);
        let bp = |n: &str| bridge_port(n);
        let weight_row = frame.received_row(m, rows.weight);
        let bias_row = frame.received_row(m, rows.output);
        m.output(&bp(tp::INSTR_VALID), instr_valid.value());
        m.output(&bp(tp::INSTR), word);
        m.output(&bp(tp::HIN_DATA), hin_row);
        m.output(&bp(tp::WMEM_WR), wr(T::Weights));
        m.output(
            &bp(tp::WMEM_ADDR),
            fit(addr, log2(cfg.core().weight_rows()).max(1)),
        );
        m.output(&bp(tp::WMEM_DATA), weight_row);
        m.output(&bp(tp::BMEM_WR), wr(T::Bias));
        m.output(
            &bp(tp::BMEM_ADDR),
            fit(addr, log2(cfg.core().bias_rows()).max(1)),
        );
        m.output(&bp(tp::BMEM_DATA), bias_row);
        m.output(CORE_RESET, core_rst.value());
        Memories {
            core_rst,
            instr_valid,
            out_rd_en,
            prog_rd_addr,
            instr,
            prog_word,
            out_row,
            take,
        }
    }
}

/// The TensorCore bridge's command table (`PROTOCOL.md`, version 2), with
/// the range checks on the header's fields it needs; and RUN's cycle limit
/// (fields C and B).
fn commands(
    m: &mut ModuleBuilder,
    cfg: &TcBridgeConfig,
    frame: &Frame,
) -> (Vec<Command<TcTarget>>, Expr) {
    use TcTarget as T;
    let rows = Rows::of(cfg);
    let core = cfg.core();
    let h = frame.header(m);
    let fits = |m: &mut ModuleBuilder, n: &str, depth: u32| {
        let end = h.addr.zext(17) + h.count.zext(17);
        m.wire(n, h.count_ok & end.is_le(depth))
    };
    let in_ok = fits(m, "input_ok", cfg.input_rows());
    let out_ok = fits(m, "output_ok", cfg.output_rows());
    let w_ok = fits(m, "weights_ok", core.weight_rows());
    let b_ok = fits(m, "bias_ok", core.bias_rows());
    let p_ok = fits(m, "program_ok", cfg.program_words());
    let limit = m.wire("limit", cat(&[h.arg, h.count]));
    let run_ok = m.wire(
        "run_ok",
        h.addr.is_ne(0) & h.addr.zext(17).is_le(cfg.program_words()) & limit.is_ne(0),
    );
    let in_range = |ok: Expr| Status::Requires(ok, status::BAD_RANGE);
    let one_row = |op: u8, t: TcTarget, bytes: usize| {
        Command::new(&[op], Status::Ok)
            .reply()
            .target(t)
            .row_bytes(bytes as u32)
            .rows(1)
    };
    let write_rows = |op: u8, ok: Expr, t: TcTarget, bits: u32| {
        Command::new(&[op], in_range(ok))
            .receive()
            .target(t)
            .row_bytes(bits / 8)
    };
    let table = vec![
        one_row(op::STATUS, T::Status, STATUS_BYTES),
        one_row(op::TC_INFO, T::Info, TC_INFO_BYTES),
        one_row(op::READ_COUNTERS, T::Counters, COUNTER_BYTES),
        write_rows(op::WRITE_INPUT, in_ok, T::Input, rows.input),
        write_rows(op::WRITE_WEIGHTS, w_ok, T::Weights, rows.weight),
        write_rows(op::WRITE_BIAS, b_ok, T::Bias, rows.output),
        write_rows(op::WRITE_PROGRAM, p_ok, T::Program, rows.instr),
        Command::new(&[op::READ_OUTPUT], in_range(out_ok))
            .reply()
            .target(T::Output)
            .row_bytes(rows.output / 8),
        Command::new(&[op::RUN], in_range(run_ok)),
    ];
    (table, limit)
}

/// The STATUS, TC_INFO and READ_COUNTERS payloads, least significant byte
/// first; returns the one the opcode asks for, `sh_bits` wide.
fn payload_words(
    m: &mut ModuleBuilder,
    cfg: &TcBridgeConfig,
    frame: &Frame,
    ports: &CorePorts,
    running: Expr,
) -> Expr {
    let core = cfg.core();
    let (r, c) = (core.rows(), core.cols());
    let sh_bits = Rows::of(cfg).sh;
    let fields = StatusFields {
        version: protocol::VERSION_TC,
        kind: protocol::CORE_TENSORCORE,
        rows: r,
        cols: c,
        acc_log2: log2(core.acc_rows()),
        buffer_log2: log2(core.ub_rows()),
        byte12: m.lit(Ty::u(8), 0),
        busy: running | ports.act_busy,
    };
    let status_word = frame.status_word(m, fields);
    let sb = |m: &mut ModuleBuilder, v: u32| m.lit(Ty::u(8), v);
    let info_word = {
        let parts = [
            m.lit(Ty::u(16), 0),
            sb(m, core.depth()),
            sb(m, tensorcore::ports::COUNTERS.len() as u32),
            sb(m, log2(cfg.output_rows())),
            sb(m, log2(cfg.input_rows())),
            sb(m, log2(cfg.program_words())),
            sb(m, core.weight_queue()),
            sb(m, log2(core.bias_rows())),
            sb(m, log2(core.weight_rows())),
            sb(m, log2(core.ub_rows())),
            sb(m, log2(core.acc_rows())),
            m.lit(Ty::u(16), c),
            m.lit(Ty::u(16), r),
        ];
        let e = cat(&parts);
        m.wire("info_word", e)
    };
    let counter_word = {
        let mut parts = ports.counters.clone();
        parts.reverse();
        let e = cat(&parts);
        m.wire("counter_word", e)
    };
    mux(
        frame.opcode_is(&[op::STATUS]),
        status_word.zext(sh_bits),
        mux(
            frame.opcode_is(&[op::TC_INFO]),
            info_word.zext(sh_bits),
            counter_word.zext(sh_bits),
        ),
    )
}

/// The core's side of the bridge, as the framing's states see it.
struct CoreSide<'a> {
    frame: &'a Frame,
    core: CorePorts,
    run: RunRegs,
    mem: Memories,
    rows: Rows,
    payload_word: Expr,
    /// RUN's cycle limit.
    limit: Expr,
    /// DECODE: a RUN that is carried out.
    start: Expr,
    program_aw: u32,
}

impl BridgeCore for CoreSide<'_> {
    type State = TcBridgeState;
    type Target = TcTarget;

    fn reply_word(&self) -> Expr {
        self.payload_word
    }

    fn decode(&self, m: &mut ModuleBuilder) {
        let h = self.frame.header(m);
        m.assign(self.run.words, h.addr.zext(17));
        m.assign(self.run.limit, self.limit);
    }

    fn start(&self) -> Option<(Expr, TcBridgeState)> {
        Some((self.start, TcBridgeState::RunReset))
    }

    fn reply_rows(&self) -> (TcTarget, RowSource) {
        (TcTarget::Output, RowSource::Memory)
    }

    fn read_row(&self, m: &mut ModuleBuilder) {
        m.assign(self.mem.out_rd_en, 1);
    }

    fn row_read(&self) -> (Option<Expr>, Expr) {
        (None, self.mem.out_row.zext(self.rows.sh))
    }
}

impl CoreSide<'_> {
    /// RUN_RESET, RUN_PRIME, RUN_LOAD, RUN_GO and RUN_ABORT: a run, from the core's
    /// reset to its HALT or the cycle limit.
    fn run_states(&self, st: &mut FsmStates<'_, TcBridgeState>) {
        use TcBridgeState as S;
        let fsm = self.frame.fsm;
        let status_q = self.frame.status;
        let (run, mem) = (self.run, &self.mem);
        let aw = self.program_aw;
        st.state(S::RunReset, |m| {
            m.assign(mem.core_rst, 1);
            m.assign(run.pc, 0);
            m.assign(run.cycles, 0);
            fsm.goto(m, S::RunPrime);
        })
        .state(S::RunPrime, |m| {
            // The first word is read here; the core leaves its reset after
            // this cycle, as it would one cycle later without the register.
            m.assign(mem.core_rst, 1);
            fsm.goto(m, S::RunLoad);
        })
        .state(S::RunLoad, |m| {
            m.assign(mem.instr, mem.prog_word);
            m.assign(mem.prog_rd_addr, fit(run.pc.q(), aw) + 1u32);
            fsm.goto(m, S::RunGo);
        })
        .state(S::RunGo, |m| {
            m.assign(mem.instr_valid, run.pc.q().is_lt(run.words.q()));
            // The memory keeps the word after the presented one at its output.
            m.assign(mem.prog_rd_addr, fit(run.pc.q(), aw) + 1u32);
            m.if_(mem.take, |m| {
                m.assign(run.pc, run.pc.q() + 1u32);
                m.assign(mem.instr, mem.prog_word);
                m.assign(mem.prog_rd_addr, fit(run.pc.q(), aw) + 2u32);
            });
            m.if_(self.core.halted, |m| {
                let error = status_q.q().lit(status::CORE_ERROR);
                m.assign(status_q, mux(self.core.error, error, status::OK));
                fsm.goto(m, S::Reply);
            })
            .elif(run.cycles.q().is_eq(run.limit.q()), |m| {
                fsm.goto(m, S::RunAbort)
            })
            .else_(|m| m.assign(run.cycles, run.cycles.q() + 1u32));
        })
        .state(S::RunAbort, |m| {
            m.assign(mem.core_rst, 1);
            m.assign(status_q, status::RUN_TIMEOUT);
            fsm.goto(m, S::Reply);
        });
    }
}

/// The bridge's output that resets the core (with the board's reset).
pub const CORE_RESET: &str = "core_rst_o";

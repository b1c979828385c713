//! The command framing both bridges share (`PROTOCOL.md`): the UARTs, the
//! command header, the CRC, the payload shift register, the timeout, the
//! error flags, and the states that receive a command and send its reply.
//!
//! ```text
//!  IDLE ─SYNC─► HDR ─7 bytes─► DECODE ─┬─► RECV (payload rows) ─────► (core) ─┐
//!                                      ├─► (the core's own states) ───────────┤
//!                                      └──────────────────────────────────────┤
//!                                                                             ▼
//!  IDLE ◄─ CRC ◄─────────────── SEND ◄─ RD_LOAD ◄─ RD_ISSUE ◄─(reads)──── REPLY
//! ```
//!
//! - **Shift register.** Payload bytes pass through one register `sh`, wide
//!   enough for the longest row either way. Received bytes enter at the top
//!   and everything moves down a byte, so after a row's bytes the row sits in
//!   the top bits, first byte lowest; bytes to send leave from the bottom and
//!   everything moves down a byte. Both directions are the same shift.
//! - **Rows are stored in the cycle their last byte arrives**
//!   ([`Framing::store_row`]), so the receive path never stops listening.
//! - **Errors never desynchronise the stream**: every command's length follows
//!   from its header alone, a refused command's payload is read and dropped,
//!   and a command whose next byte does not come within the timeout is
//!   abandoned.
//! - **CRC.** One CRC-8 register covers the command bytes as received and the
//!   reply bytes as sent; the reply's last byte is its value, so the host
//!   detects corruption in either direction.
//!
//! A bridge brings its core: a state enum that starts with the framing's
//! states (`bridge_states!` in this module), a command table ([`Command`]: each opcode's
//! status checks and payload, which DECODE turns into its loads), and the
//! hooks of [`BridgeCore`] (what DECODE, RECV and the reply states do for
//! it). It writes its state table with [`Framing::receive_states`] and
//! [`Framing::reply_states`] around its own states.
//!
//! Each part of the framing is declared where the bridge first asks for it:
//! the UARTs and the command registers by [`Framing::new`], every other part
//! (the shift register, the timeout counter, the flags, the header checks,
//! the row counters' ends, ...) by its method. The Verilog lists signals in
//! the order they are declared, so a bridge asks for a part early to place
//! its declaration.

use crate::protocol::{self, op, status};
use crate::uart;
use hw::{
    bits_for, cat, mux, Comb, Expr, Fsm, FsmStates, HwEnum, ModuleBuilder, ModuleDef, Operand, Reg,
    Ty,
};
use std::cell::OnceCell;
use std::marker::PhantomData;
use std::rc::Rc;

/// Port names of a bridge module.
pub mod ports {
    pub const UART_RX: &str = "uart_rx_i";
    pub const UART_TX: &str = "uart_tx_o";
    /// High while a command is being received, carried out or answered.
    pub const ACTIVE: &str = "active_o";
    /// High while any STATUS error flag is set.
    pub const ERROR: &str = "error_o";
}

/// The states of a bridge's FSM that the framing drives. A bridge's state
/// enum starts with them, in this order; declare one with `bridge_states!`.
pub trait FramingState: HwEnum {
    /// Waiting for SYNC.
    const IDLE: Self;
    /// Receiving the seven header bytes after SYNC.
    const HDR: Self;
    /// Checking the header: status, payload target, row counts.
    const DECODE: Self;
    /// Receiving payload rows.
    const RECV: Self;
    /// Sending the status byte.
    const REPLY: Self;
    /// Reading the next row to send.
    const RD_ISSUE: Self;
    /// Taking the read row into the shift register.
    const RD_LOAD: Self;
    /// Sending payload bytes.
    const SEND: Self;
    /// Sending the CRC byte.
    const CRC: Self;
}

/// Declares a bridge's state enum: the framing's states ([`FramingState`]),
/// then the core's own.
macro_rules! bridge_states {
    ($(#[$meta:meta])* pub enum $name:ident {
        $($(#[$vmeta:meta])* $variant:ident),+ $(,)?
    }) => {
        hw::hw_enum! {
            $(#[$meta])*
            pub enum $name {
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
                $($(#[$vmeta])* $variant),+
            }
        }

        impl $crate::framing::FramingState for $name {
            const IDLE: Self = $name::Idle;
            const HDR: Self = $name::Hdr;
            const DECODE: Self = $name::Decode;
            const RECV: Self = $name::Recv;
            const REPLY: Self = $name::Reply;
            const RD_ISSUE: Self = $name::RdIssue;
            const RD_LOAD: Self = $name::RdLoad;
            const SEND: Self = $name::Send;
            const CRC: Self = $name::Crc;
        }
    };
}
pub(crate) use bridge_states;

/// The reply status of a command, decided in DECODE from its header.
pub enum Status {
    /// Always carried out.
    Ok,
    /// Carried out when the condition holds, else refused with the status.
    Requires(Expr, u8),
    /// Refused with the status of the first condition that holds; carried
    /// out when none does.
    RefusedIf(Vec<(Expr, u8)>),
}

/// Which way a command's payload rows go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Payload {
    None,
    /// Rows follow the header.
    Receive,
    /// Rows follow the reply's status byte.
    Reply,
}

/// One command of a bridge's command table: its opcodes, its status checks
/// and its payload. What a command leaves unsaid (its target, its row size,
/// its row count) DECODE takes from the table's defaults: the default target
/// and row size of [`Shape`], and the header's count field.
pub struct Command<T> {
    opcodes: Vec<u8>,
    status: Status,
    payload: Payload,
    target: Option<T>,
    row_bytes: Option<u32>,
    rows: Option<u32>,
    first_row: Option<u32>,
}

impl<T: HwEnum + Operand> Command<T> {
    /// A command without payload (`opcodes` share its decoding).
    pub fn new(opcodes: &[u8], status: Status) -> Command<T> {
        Command {
            opcodes: opcodes.to_vec(),
            status,
            payload: Payload::None,
            target: None,
            row_bytes: None,
            rows: None,
            first_row: None,
        }
    }

    /// Payload rows follow the header. They are read whenever there are
    /// any (a fixed row count, or a non-zero count field), and dropped when
    /// the command is refused.
    pub fn receive(mut self) -> Self {
        self.payload = Payload::Receive;
        self
    }

    /// Payload rows follow an OK reply's status byte.
    pub fn reply(mut self) -> Self {
        self.payload = Payload::Reply;
        self
    }

    /// Where the rows go or come from.
    pub fn target(mut self, target: T) -> Self {
        self.target = Some(target);
        self
    }

    /// Bytes per row.
    pub fn row_bytes(mut self, bytes: u32) -> Self {
        self.row_bytes = Some(bytes);
        self
    }

    /// A fixed row count (the header's count field is not read).
    pub fn rows(mut self, rows: u32) -> Self {
        self.rows = Some(rows);
        self
    }

    /// A fixed first row (the header's field A is not read).
    pub fn first_row(mut self, row: u32) -> Self {
        self.first_row = Some(row);
        self
    }
}

/// The sizes a bridge's framing is built for.
pub struct Shape<T> {
    /// Bits of the payload shift register: the longest row either way.
    pub sh_bits: u32,
    /// A command is abandoned after 2^this quiet cycles.
    pub timeout_log2: u32,
    /// STATUS bytes 14-15.
    pub clocks_per_bit: u32,
    /// The target and row size of a command that names none (and of an
    /// unknown opcode); the target register resets to this target.
    pub default_target: T,
    pub default_row_bytes: u32,
}

/// The UART pair, from the bridge's side.
#[derive(Clone, Copy)]
pub struct Uarts {
    /// A byte arrived (for one cycle).
    pub rx_valid: Expr,
    pub rx_byte: Expr,
    /// A byte with a low stop bit arrived (and was dropped).
    pub rx_frame_error: Expr,
    /// The byte to send, offered while `tx_valid` (assigned by the states).
    pub tx_valid: Comb,
    pub tx_data: Comb,
    /// The transmitter takes the byte offered.
    pub tx_ready: Expr,
}

impl Uarts {
    /// The receiver on the `uart_rx_i` pin and the transmitter on
    /// `uart_tx_o`.
    fn build(m: &mut ModuleBuilder, rx_def: &Rc<ModuleDef>, tx_def: &Rc<ModuleDef>) -> Uarts {
        let rx_pin = m.input(ports::UART_RX, Ty::BOOL);
        let rx = m.instance("rx", rx_def);
        m.connect(rx, uart::rx_ports::RX, rx_pin);
        let rx_valid = m.inst_output(rx, uart::rx_ports::VALID);
        let rx_byte = m.inst_output(rx, uart::rx_ports::DATA);
        let rx_frame_error = m.inst_output(rx, uart::rx_ports::FRAME_ERR);
        let tx_valid = m.comb_default("tx_valid", Ty::BOOL, 0);
        let tx_data = m.comb("tx_data", Ty::u(8));
        let tx = m.instance("tx", tx_def);
        m.connect(tx, uart::tx_ports::VALID, tx_valid.value());
        m.connect(tx, uart::tx_ports::DATA, tx_data.value());
        let tx_ready = m.inst_output(tx, uart::tx_ports::READY);
        let tx_pin = m.inst_output(tx, uart::tx_ports::TX);
        m.output(ports::UART_TX, tx_pin);
        Uarts {
            rx_valid,
            rx_byte,
            rx_frame_error,
            tx_valid,
            tx_data,
            tx_ready,
        }
    }
}

/// The header's three fields, and whether its count is non-zero.
#[derive(Clone, Copy)]
pub struct Header {
    /// Field A: the first row.
    pub addr: Expr,
    /// Field B: the row count.
    pub count: Expr,
    /// Field C.
    pub arg: Expr,
    pub count_ok: Expr,
}

/// The STATUS error flags: set by their event, cleared by STATUS.
#[derive(Clone, Copy)]
pub struct Flags {
    /// A byte arrived with a low stop bit.
    pub framing: Reg,
    /// A byte arrived outside a command.
    pub stray: Reg,
    /// A command was abandoned.
    pub timeout: Reg,
}

/// The ends of a payload row and of a command's rows.
#[derive(Clone, Copy)]
pub struct RowEnds {
    /// This byte is the row's last.
    pub row_last: Expr,
    /// This row is the command's last.
    pub last_row: Expr,
}

/// What DECODE loads for the command in the header.
#[derive(Clone, Copy)]
pub struct Decoded {
    pub status: Comb,
    pub target: Comb,
    pub row_bytes: Comb,
    pub rows: Comb,
    /// The reply carries rows.
    pub reads: Comb,
    /// Payload rows follow the header.
    pub recv: Comb,
    /// The status is OK.
    pub ok: Expr,
    /// The first row.
    pub first_row: Expr,
}

/// The STATUS payload's fields that differ between the bridges
/// (`PROTOCOL.md`; the framing adds the magic and the flags).
pub struct StatusFields {
    /// Byte 4: the protocol version.
    pub version: u8,
    /// Byte 5: the element type or core kind.
    pub kind: u8,
    /// Bytes 6-9: R and C.
    pub rows: u32,
    pub cols: u32,
    /// Bytes 10 and 11: log2 of the accumulator rows and of the buffer rows.
    pub acc_log2: u32,
    pub buffer_log2: u32,
    /// Byte 12.
    pub byte12: Expr,
    /// Flag bit 0: the core is busy.
    pub busy: Expr,
}

/// Where the rows of a reply come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowSource {
    /// The word DECODE loaded into the shift register (one row).
    Word,
    /// A memory, read a row at a time ([`BridgeCore::read_row`]).
    Memory,
}

/// What a bridge's core adds to the framing's states.
pub trait BridgeCore {
    type State: FramingState;
    type Target: HwEnum + Operand;

    /// DECODE: the word the shift register loads (`sh_bits` wide), the rows
    /// of a reply that come from it ([`RowSource::Word`]).
    fn reply_word(&self) -> Expr;

    /// DECODE: loads the core's own registers from the header.
    fn decode(&self, m: &mut ModuleBuilder);

    /// DECODE: the condition under which the command goes to the core's own
    /// states instead of replying, and the state it goes to.
    fn start(&self) -> Option<(Expr, Self::State)>;

    /// RECV, after the command's last payload row: by default the reply.
    fn received(&self, m: &mut ModuleBuilder, fsm: Fsm<Self::State>) {
        fsm.goto(m, Self::State::REPLY);
    }

    /// REPLY of a command whose reply carries rows: the rows of this target
    /// come from this source, every other target's from the other one.
    fn reply_rows(&self) -> (Self::Target, RowSource);

    /// RD_ISSUE: reads the reply row at `addr`.
    fn read_row(&self, m: &mut ModuleBuilder);

    /// RD_LOAD: the row read (`sh_bits` wide) and, for a memory that may
    /// answer later than the next cycle, its valid bit.
    fn row_read(&self) -> (Option<Expr>, Expr);
}

/// The framing of one bridge: its UARTs, its command registers and the
/// parts declared on first use.
pub struct Framing<S: FramingState, T: HwEnum + Operand> {
    pub uart: Uarts,
    pub fsm: Fsm<S>,
    hdr_cnt: Reg,
    /// The command's opcode.
    pub opcode: Reg,
    /// The header's fields A, B and C, A lowest.
    fields: Reg,
    crc: Reg,
    /// The reply's status byte.
    pub status: Reg,
    /// Where the payload rows go or come from.
    pub target: Reg,
    reads: Reg,
    /// The command is carried out (its status is OK).
    pub exec: Reg,
    row_bytes: Reg,
    byte_cnt: Reg,
    /// Payload rows still to move.
    pub rows_left: Reg,
    /// The row the next payload row goes to or comes from.
    pub addr: Reg,
    shape: Shape<T>,
    sh: OnceCell<Reg>,
    quiet: OnceCell<Reg>,
    flags: OnceCell<Flags>,
    header: OnceCell<Header>,
    decoded: OnceCell<Decoded>,
    row_ends: OnceCell<RowEnds>,
    sh_in: OnceCell<Expr>,
    store: OnceCell<Comb>,
    timed_out: OnceCell<Comb>,
    crc_rx: Expr,
    crc_tx: Expr,
    _state: PhantomData<S>,
}

impl<S: FramingState, T: HwEnum + Operand> Framing<S, T> {
    /// The UARTs, the FSM and the command registers.
    pub fn new(
        m: &mut ModuleBuilder,
        rx_def: &Rc<ModuleDef>,
        tx_def: &Rc<ModuleDef>,
        shape: Shape<T>,
    ) -> Self {
        let uart = Uarts::build(m, rx_def, tx_def);
        let u8t = Ty::u(8);
        let u16t = Ty::u(16);
        let bc_ty = Ty::u(bits_for(shape.sh_bits / 8));
        let fsm = m.fsm("state", S::IDLE);
        let hdr_cnt = m.reg_reset("hdr_cnt", Ty::u(3), 0);
        let opcode = m.reg_reset("opcode", u8t, 0);
        let fields = m.reg_reset("fields", Ty::u(48), 0);
        let crc = m.reg_reset("crc", u8t, 0);
        let status = m.reg_reset("status", u8t, 0);
        let target = m.reg_reset("target", T::ty(), shape.default_target.index());
        let reads = m.reg_reset("reads", Ty::BOOL, 0);
        let exec = m.reg_reset("exec", Ty::BOOL, 0);
        let row_bytes = m.reg_reset("row_bytes", bc_ty, 1);
        let byte_cnt = m.reg_reset("byte_cnt", bc_ty, 0);
        let rows_left = m.reg_reset("rows_left", u16t, 0);
        let addr = m.reg_reset("addr", u16t, 0);
        Framing {
            crc_rx: protocol::crc8_logic(crc.q(), uart.rx_byte),
            crc_tx: protocol::crc8_logic(crc.q(), uart.tx_data.value()),
            uart,
            fsm,
            hdr_cnt,
            opcode,
            fields,
            crc,
            status,
            target,
            reads,
            exec,
            row_bytes,
            byte_cnt,
            rows_left,
            addr,
            shape,
            sh: OnceCell::new(),
            quiet: OnceCell::new(),
            flags: OnceCell::new(),
            header: OnceCell::new(),
            decoded: OnceCell::new(),
            row_ends: OnceCell::new(),
            sh_in: OnceCell::new(),
            store: OnceCell::new(),
            timed_out: OnceCell::new(),
            _state: PhantomData,
        }
    }

    /// The payload shift register `sh`.
    pub fn shift_register(&self, m: &mut ModuleBuilder) -> Reg {
        *self
            .sh
            .get_or_init(|| m.reg_reset("sh", Ty::u(self.shape.sh_bits), 0))
    }

    /// The cycles without a byte while one is expected (`quiet`).
    pub fn quiet_counter(&self, m: &mut ModuleBuilder) -> Reg {
        *self
            .quiet
            .get_or_init(|| m.reg_reset("quiet", Ty::u(self.shape.timeout_log2), 0))
    }

    /// The STATUS error flags.
    pub fn flags(&self, m: &mut ModuleBuilder) -> Flags {
        *self.flags.get_or_init(|| Flags {
            framing: m.reg_reset("flag_framing", Ty::BOOL, 0),
            stray: m.reg_reset("flag_stray", Ty::BOOL, 0),
            timeout: m.reg_reset("flag_timeout", Ty::BOOL, 0),
        })
    }

    /// The header's fields, and the wire `count_ok`.
    pub fn header(&self, m: &mut ModuleBuilder) -> Header {
        *self.header.get_or_init(|| {
            let f = self.fields.q();
            let count = f.slice(16, 16);
            Header {
                addr: f.slice(0, 16),
                count,
                arg: f.slice(32, 16),
                count_ok: m.wire("count_ok", count.is_ne(0)),
            }
        })
    }

    /// One bit: the command's opcode is one of `opcodes`.
    pub fn opcode_is(&self, opcodes: &[u8]) -> Expr {
        let opq = self.opcode.q();
        opcodes
            .iter()
            .map(|&o| opq.is_eq(o))
            .reduce(|a, b| a | b)
            .expect("at least one opcode")
    }

    /// One bit: the payload target is `t`.
    pub fn target_is(&self, t: T) -> Expr {
        self.target.q().is_eq(t)
    }

    /// DECODE's loads for the command table `commands`, by opcode: the
    /// status (an unknown opcode is refused), the payload's target, row size
    /// and row count, its direction, and its first row.
    pub fn decode(&self, m: &mut ModuleBuilder, commands: &[Command<T>]) -> Decoded {
        let h = self.header(m);
        let opq = self.opcode.q();
        let bc_ty = self.row_bytes.q().ty();
        let dec_status = m.comb_default("dec_status", Ty::u(8), status::BAD_OPCODE);
        let dec_target = m.comb_default("dec_target", T::ty(), self.shape.default_target);
        let dec_row_bytes = m.comb_default("dec_row_bytes", bc_ty, self.shape.default_row_bytes);
        let dec_rows = m.comb_default("dec_rows", Ty::u(16), h.count);
        let dec_reads = m.comb_default("dec_reads", Ty::BOOL, 0);
        let dec_recv = m.comb_default("dec_recv", Ty::BOOL, 0);
        let mut sw = m.switch(opq);
        for c in commands {
            sw = sw.cases(c.opcodes.as_slice(), |m| {
                match &c.status {
                    Status::Ok => m.assign(dec_status, status::OK),
                    Status::Requires(ok, refusal) => {
                        m.assign(dec_status, mux(*ok, opq.lit(status::OK), *refusal))
                    }
                    Status::RefusedIf(checks) => {
                        let (first, rest) = checks.split_first().expect("a check");
                        let mut chain = m.if_(first.0, |m| m.assign(dec_status, first.1));
                        for &(cond, refusal) in rest {
                            chain = chain.elif(cond, |m| m.assign(dec_status, refusal));
                        }
                        chain.else_(|m| m.assign(dec_status, status::OK));
                    }
                }
                if let Some(t) = c.target {
                    m.assign(dec_target, t);
                }
                if let Some(b) = c.row_bytes {
                    m.assign(dec_row_bytes, b);
                }
                if let Some(r) = c.rows {
                    m.assign(dec_rows, r);
                }
                match c.payload {
                    Payload::None => {}
                    Payload::Reply => m.assign(dec_reads, 1),
                    Payload::Receive if c.rows.is_some() => m.assign(dec_recv, 1),
                    Payload::Receive => m.assign(dec_recv, h.count_ok),
                }
            });
        }
        drop(sw);
        let mut first_row = h.addr;
        for c in commands.iter().rev() {
            if let Some(row) = c.first_row {
                first_row = mux(self.opcode_is(&c.opcodes), row, first_row);
            }
        }
        let decoded = Decoded {
            status: dec_status,
            target: dec_target,
            row_bytes: dec_row_bytes,
            rows: dec_rows,
            reads: dec_reads,
            recv: dec_recv,
            ok: dec_status.value().is_eq(status::OK),
            first_row,
        };
        if self.decoded.set(decoded).is_err() {
            unreachable!("a bridge decodes its commands once");
        }
        decoded
    }

    /// The ends of the current payload row and of the command's rows.
    pub fn row_ends(&self, m: &mut ModuleBuilder) -> RowEnds {
        *self.row_ends.get_or_init(|| RowEnds {
            row_last: m.wire("row_last", self.byte_cnt.q().is_eq(self.row_bytes.q() - 1)),
            last_row: m.wire("last_row", self.rows_left.q().is_eq(1)),
        })
    }

    /// The shift register with the received byte entering at the top: a
    /// row's bytes are in its top bits after its last byte.
    pub fn shift_in(&self, m: &mut ModuleBuilder) -> Expr {
        *self.sh_in.get_or_init(|| {
            let sh_q = self.shift_register(m).q();
            let bits = self.shape.sh_bits;
            m.wire("sh_in", cat(&[self.uart.rx_byte, sh_q.slice(8, bits - 8)]))
        })
    }

    /// The received row `bits` wide (in the top bits of [`Self::shift_in`]).
    pub fn received_row(&self, m: &mut ModuleBuilder, bits: u32) -> Expr {
        let sh_bits = self.shape.sh_bits;
        self.shift_in(m).slice(sh_bits - bits, bits)
    }

    /// High in the cycle a received row is complete and the command is
    /// carried out: the bridge stores the row then (at `addr`).
    pub fn store_row(&self, m: &mut ModuleBuilder) -> Comb {
        *self
            .store
            .get_or_init(|| m.comb_default("store_row", Ty::BOOL, 0))
    }

    /// High in the cycle a command is abandoned.
    pub fn timed_out(&self, m: &mut ModuleBuilder) -> Comb {
        *self
            .timed_out
            .get_or_init(|| m.comb_default("timed_out", Ty::BOOL, 0))
    }

    /// The STATUS payload (`status_word`), least significant byte first.
    pub fn status_word(&self, m: &mut ModuleBuilder, f: StatusFields) -> Expr {
        let u8t = Ty::u(8);
        let u16t = Ty::u(16);
        let flags = self.flags(m);
        let flag_bits = cat(&[
            m.lit(Ty::u(4), 0),
            flags.timeout.q(),
            flags.stray.q(),
            flags.framing.q(),
            f.busy,
        ]);
        let word = cat(&[
            m.lit(u16t, self.shape.clocks_per_bit),
            flag_bits,
            f.byte12,
            m.lit(u8t, f.buffer_log2),
            m.lit(u8t, f.acc_log2),
            m.lit(u16t, f.cols),
            m.lit(u16t, f.rows),
            m.lit(u8t, f.kind),
            m.lit(u8t, f.version),
            m.lit(Ty::u(32), u32::from_le_bytes(protocol::MAGIC)),
        ]);
        m.wire("status_word", word)
    }

    /// A payload byte received or sent: count it; the row's last byte ends
    /// the row.
    fn byte_step(&self, m: &mut ModuleBuilder, ends: RowEnds) {
        let (byte_cnt, rows_left) = (self.byte_cnt, self.rows_left);
        m.if_(ends.row_last, |m| {
            m.assign(byte_cnt, 0);
            m.assign(rows_left, rows_left.q() - 1);
        })
        .else_(|m| m.assign(byte_cnt, byte_cnt.q() + 1));
    }

    /// A byte expected while receiving: none for 2^timeout_log2 cycles
    /// abandons the command.
    fn wait_byte(&self, m: &mut ModuleBuilder) {
        let quiet = self.quiet_counter(m);
        let timed_out = self.timed_out(m);
        m.assign(quiet, quiet.q() + 1);
        m.if_(quiet.q().all(), |m| {
            m.assign(timed_out, 1);
            self.fsm.goto(m, S::IDLE);
        });
    }

    /// The state table: `states` lists every state (calling
    /// [`Self::receive_states`] and [`Self::reply_states`] for the
    /// framing's). Then the error flags and the `active_o` and `error_o`
    /// outputs.
    pub fn state_table(&self, m: &mut ModuleBuilder, states: impl FnOnce(&mut FsmStates<'_, S>)) {
        self.row_ends(m);
        self.timed_out(m);
        let quiet = self.quiet_counter(m);
        m.assign(quiet, 0);
        let sh_q = self.shift_register(m).q();
        m.assign(self.uart.tx_data, sh_q.slice(0, 8));
        m.fsm_states(self.fsm, states);
        self.flag_updates(m);
    }

    /// IDLE, HDR, DECODE and RECV: a command's header and payload.
    pub fn receive_states<C>(&self, st: &mut FsmStates<'_, S>, core: &C)
    where
        C: BridgeCore<State = S, Target = T>,
    {
        let fsm = self.fsm;
        let u = self.uart;
        let (crc, hdr_cnt, opcode, fields) = (self.crc, self.hdr_cnt, self.opcode, self.fields);
        let crc_rx = self.crc_rx;
        st.state(S::IDLE, |m| {
            m.assign(hdr_cnt, 0);
            m.if_(u.rx_valid & u.rx_byte.is_eq(protocol::SYNC), |m| {
                m.assign(crc, protocol::crc8_update(0, protocol::SYNC));
                fsm.goto(m, S::HDR);
            });
        })
        .state(S::HDR, |m| {
            m.if_(u.rx_valid, |m| {
                m.assign(hdr_cnt, hdr_cnt.q() + 1);
                m.assign(crc, crc_rx);
                m.if_(hdr_cnt.q().is_eq(0), |m| m.assign(opcode, u.rx_byte))
                    .else_(|m| m.assign(fields, cat(&[u.rx_byte, fields.q().slice(8, 40)])));
                m.if_(hdr_cnt.q().is_eq(6), |m| fsm.goto(m, S::DECODE));
            })
            .else_(|m| self.wait_byte(m));
        })
        .state(S::DECODE, |m| self.decode_state(m, core))
        .state(S::RECV, |m| {
            let ends = self.row_ends(m);
            let (sh, sh_in, store) = (self.shift_register(m), self.shift_in(m), self.store_row(m));
            let (addr, exec) = (self.addr, self.exec);
            m.if_(u.rx_valid, |m| {
                m.assign(crc, crc_rx);
                m.assign(sh, sh_in);
                self.byte_step(m, ends);
                m.if_(ends.row_last, |m| {
                    m.assign(store, exec.q());
                    m.assign(addr, addr.q() + 1);
                    m.if_(ends.last_row, |m| core.received(m, fsm));
                });
            })
            .else_(|m| self.wait_byte(m));
        });
    }

    /// DECODE: loads the command registers (and the core's) from the
    /// header's decoding, and goes on to the payload, the core, or the reply.
    fn decode_state<C>(&self, m: &mut ModuleBuilder, core: &C)
    where
        C: BridgeCore<State = S, Target = T>,
    {
        let d = *self
            .decoded
            .get()
            .expect("the bridge decodes its commands first");
        let sh = self.shift_register(m);
        m.assign(self.status, d.status.value());
        m.assign(self.target, d.target.value());
        m.assign(self.reads, d.reads.value());
        m.assign(self.exec, d.ok);
        m.assign(self.row_bytes, d.row_bytes.value());
        m.assign(self.byte_cnt, 0);
        m.assign(self.rows_left, d.rows.value());
        m.assign(self.addr, d.first_row);
        core.decode(m);
        m.assign(sh, core.reply_word());
        let fsm = self.fsm;
        let chain = m.if_(d.recv.value(), |m| fsm.goto(m, S::RECV));
        match core.start() {
            Some((go, state)) => chain
                .elif(go, |m| fsm.goto(m, state))
                .else_(|m| fsm.goto(m, S::REPLY)),
            None => chain.else_(|m| fsm.goto(m, S::REPLY)),
        }
    }

    /// REPLY, RD_ISSUE, RD_LOAD, SEND and CRC: the status byte, the reply's
    /// rows, the CRC.
    pub fn reply_states<C>(&self, st: &mut FsmStates<'_, S>, core: &C)
    where
        C: BridgeCore<State = S, Target = T>,
    {
        let fsm = self.fsm;
        let u = self.uart;
        let (crc, crc_tx) = (self.crc, self.crc_tx);
        let (status, reads, addr, byte_cnt) = (self.status, self.reads, self.addr, self.byte_cnt);
        st.state(S::REPLY, |m| {
            m.assign(u.tx_valid, 1);
            m.assign(u.tx_data, status.q());
            m.if_(u.tx_ready, |m| {
                m.assign(crc, crc_tx);
                m.if_(reads.q() & status.q().is_eq(status::OK), |m| {
                    let (target, source) = core.reply_rows();
                    let (from_word, from_memory) = (S::SEND, S::RD_ISSUE);
                    let (then, otherwise) = match source {
                        RowSource::Word => (from_word, from_memory),
                        RowSource::Memory => (from_memory, from_word),
                    };
                    m.if_(self.target_is(target), |m| fsm.goto(m, then))
                        .else_(|m| fsm.goto(m, otherwise));
                })
                .else_(|m| fsm.goto(m, S::CRC));
            });
        })
        .state(S::RD_ISSUE, |m| {
            core.read_row(m);
            fsm.goto(m, S::RD_LOAD);
        })
        .state(S::RD_LOAD, |m| {
            let sh = self.shift_register(m);
            let (ready, row) = core.row_read();
            let load = |m: &mut ModuleBuilder| {
                m.assign(sh, row);
                m.assign(byte_cnt, 0);
                m.assign(addr, addr.q() + 1);
                fsm.goto(m, S::SEND);
            };
            match ready {
                Some(ready) => {
                    m.if_(ready, load);
                }
                None => load(m),
            }
        })
        .state(S::SEND, |m| {
            let ends = self.row_ends(m);
            let sh = self.shift_register(m);
            let sh_out = cat(&[m.lit(Ty::u(8), 0), sh.q().slice(8, self.shape.sh_bits - 8)]);
            m.assign(u.tx_valid, 1);
            m.if_(u.tx_ready, |m| {
                m.assign(crc, crc_tx);
                m.assign(sh, sh_out);
                self.byte_step(m, ends);
                m.if_(ends.row_last, |m| {
                    m.if_(ends.last_row, |m| fsm.goto(m, S::CRC))
                        .else_(|m| fsm.goto(m, S::RD_ISSUE));
                });
            });
        })
        .state(S::CRC, |m| {
            m.assign(u.tx_valid, 1);
            m.assign(u.tx_data, crc.q());
            m.if_(u.tx_ready, |m| fsm.goto(m, S::IDLE));
        });
    }

    /// The error flags: set by their event, cleared by a STATUS command (the
    /// event wins); and the `active_o` and `error_o` outputs.
    fn flag_updates(&self, m: &mut ModuleBuilder) {
        let fsm = self.fsm;
        let u = self.uart;
        let flags = self.flags(m);
        let timed_out = self.timed_out(m);
        let clear = fsm.is(S::DECODE) & self.opcode.q().is_eq(op::STATUS);
        let idle = fsm.is(S::IDLE);
        let receiving = fsm.is(S::HDR) | fsm.is(S::RECV);
        let stray = u.rx_valid & ((idle & u.rx_byte.is_ne(protocol::SYNC)) | !(idle | receiving));
        for (flag, event) in [
            (flags.framing, u.rx_frame_error),
            (flags.stray, stray),
            (flags.timeout, timed_out.value()),
        ] {
            m.if_(clear, |m| m.assign(flag, 0));
            m.if_(event, |m| m.assign(flag, 1));
        }
        m.output(ports::ACTIVE, !idle);
        m.output(
            ports::ERROR,
            flags.framing.q() | flags.stray.q() | flags.timeout.q(),
        );
    }
}

//! One end of an ICI link: the sender (replay buffer, ACK/NAK, timer,
//! credits, link state) and the receiver (CRC check, in-order acceptance,
//! NAK requests, the receive buffer) of one port. See the crate docs for the
//! protocol and the timing contract.

use crate::frame::{
    covered, crc_linear_part, crc_of_partials, crc_of_zero, crc_partials, flit_ty, frame_crc,
    frame_ty, seal, FrameKind,
};
use config::IciConfig;
use hw::blocks::{credit_counter, fifo, FifoMode};
use hw::{
    cat, mux, Design, Expr, Fsm, HwEnum, Inst, Mem, ModuleBuilder, ModuleDef, Record, Reg,
    StreamSink, Ty,
};
use std::rc::Rc;

hw::hw_enum! {
    /// The sender's link state.
    pub enum LinkState {
        /// Sending flits, acknowledgements and NAKs.
        Up,
        /// Too many replays without progress: one cycle that reports it.
        Down,
        /// Sending TRAIN frames until enough good words arrive.
        Train,
    }
}

/// Port names of the link module.
pub mod ports {
    /// The client's flits to send (a stream: `_valid_i`, `_ready_o`, fields).
    pub const TX: &str = "tx";
    /// Flits received, in order (a stream: `_valid_o`, `_ready_i`, fields).
    pub const RX: &str = "rx";
    pub const SER_WORD: &str = "ser_word_o";
    pub const SER_READY: &str = "ser_ready_i";
    pub const DES_VALID: &str = "des_valid_i";
    pub const DES_WORD: &str = "des_word_i";
    pub const LINK_UP: &str = "link_up_o";
    /// The 32-bit event counters, in this order.
    pub const COUNTERS: [&str; 8] = [
        "flits_sent_o",
        "flits_received_o",
        "crc_errors_o",
        "retransmits_o",
        "naks_sent_o",
        "naks_received_o",
        "timeouts_o",
        "link_downs_o",
    ];
    /// Protocol state, for the formal properties and for debugging.
    pub const TX_NEXT_SEQ: &str = "tx_next_seq_o";
    pub const TX_CREDITS: &str = "tx_credits_o";
    pub const TX_REMOTE_FREED: &str = "tx_remote_freed_o";
    pub const RX_EXPECTED_SEQ: &str = "rx_expected_seq_o";
    pub const RX_FREED: &str = "rx_freed_o";
    pub const RX_COUNT: &str = "rx_count_o";
    pub const RX_OVERFLOW: &str = "rx_overflow_o";
    pub const CREDIT_ERROR: &str = "credit_error_o";
}

/// The link module's Verilog name (`_c<bits>` at the end for a CRC other
/// than the default CRC-32, then `_p<depth>` for a receive pipeline).
pub fn link_name(cfg: &IciConfig) -> String {
    let crc = if cfg.crc_bits() == config::ICI_CRC_BITS {
        String::new()
    } else {
        format!("_c{}", cfg.crc_bits())
    };
    let depth = if cfg.depth() == 0 {
        String::new()
    } else {
        format!("_p{}", cfg.depth())
    };
    format!(
        "ici_link_w{}_d{}_b{}_t{}_r{}_k{}{crc}{depth}",
        cfg.flit_bytes(),
        cfg.replay_depth(),
        cfg.rx_buffer(),
        cfg.replay_timeout(),
        cfg.max_retries(),
        cfg.train_words()
    )
}

fn bits_for(max: u64) -> u32 {
    hw::bits_for(max)
}

/// A 32-bit event counter `name` that counts the cycles `event` is high.
fn counter(m: &mut ModuleBuilder, name: &str, event: Expr) -> Expr {
    let r = m.reg_reset(name, Ty::u(32), 0);
    m.set_next(r, r.q() + 1u32);
    m.set_enable(r, event);
    r.q()
}

/// `a - b` saturating at 0 (equal unsigned types).
fn sat_sub(a: Expr, b: Expr) -> Expr {
    mux(a.is_ge(b), a - b, 0)
}

/// Builds one link end for `cfg` into `design`.
#[track_caller]
pub fn link(design: &mut Design, cfg: &IciConfig) -> Rc<ModuleDef> {
    let owned = cfg.params();
    let params = hw::param_refs(&owned);
    let flit = flit_ty(cfg);
    let rx_fifo = fifo(design, flit.ty(), cfg.rx_buffer(), FifoMode::Fwft);
    let credits = credit_counter(design, cfg.rx_buffer(), cfg.rx_buffer());
    let cfg = *cfg;
    design.define(&link_name(&cfg), &params, |_, m| {
        m.doc("ICI link end: flits with sequence numbers and CRC-32, replay, ACK/NAK, credits, retraining");
        body(m, &cfg, &rx_fifo, &credits);
    })
}

/// The link end: its ports, the receiver, the sender's parts, and the
/// status outputs.
fn body(
    m: &mut ModuleBuilder,
    cfg: &IciConfig,
    rx_fifo: &Rc<ModuleDef>,
    credit_def: &Rc<ModuleDef>,
) {
    use ports::*;
    let flit = flit_ty(cfg);
    let tx = m.stream_input(TX, &flit);
    let ser_ready = m.input(SER_READY, Ty::BOOL);
    let des_valid = m.input(DES_VALID, Ty::BOOL);
    let des_word = m.input(DES_WORD, Ty::u(cfg.frame_bits()));

    let rx = Receiver::build(m, cfg, rx_fifo, des_valid, des_word);
    let regs = SenderRegs::declare(m, cfg);
    let ack = Acks::of(m, cfg, &rx, &regs);
    let credits = Credits::returned(m, cfg, credit_def, &rx, &regs);
    let sent = accept_flit(m, cfg, &tx, &regs, &credits);
    let issue = Issue::next(m, cfg, ser_ready, &rx, &regs, &ack, sent.replay);
    lane_word(m, cfg, &rx, &issue);
    next_state(m, cfg, &rx, &regs, &ack, &issue, sent.accept);

    // ------------------------------------------------------------- status
    m.output(LINK_UP, regs.up);
    let events = [
        sent.accept,
        rx.push,
        rx.bad,
        issue.retransmit,
        issue.nak_out,
        ack.nak_rx,
        ack.expire,
        ack.give_up,
    ];
    let names = [
        "cnt_flits_sent",
        "cnt_flits_received",
        "cnt_crc_errors",
        "cnt_retransmits",
        "cnt_naks_sent",
        "cnt_naks_received",
        "cnt_timeouts",
        "cnt_link_downs",
    ];
    for ((port, name), ev) in COUNTERS.iter().zip(names).zip(events) {
        let v = counter(m, name, ev);
        m.output(port, v);
    }
    m.output(TX_NEXT_SEQ, sent.next_seq);
    m.output(TX_CREDITS, credits.left);
    m.output(TX_REMOTE_FREED, regs.remote_freed.q());
    m.output(RX_EXPECTED_SEQ, rx.expected.q());
    m.output(RX_FREED, rx.freed.q());
    m.output(RX_COUNT, rx.count);
    m.output(RX_OVERFLOW, rx.overflow.q());
    m.output(CREDIT_ERROR, credits.error | credits.bad_return.q());
}

/// The receiver: checks the word that arrived in the cycle it arrives,
/// accepts the data flit the sequence expects into the receive buffer, and
/// asks for a NAK when a word is bad or a flit was lost.
struct Receiver {
    /// The arrived word's fields.
    frame: Record,
    /// A word arrived with a good / a bad CRC.
    good: Expr,
    bad: Expr,
    kind: Expr,
    /// The sequence number of the next flit to accept.
    expected: Reg,
    /// A flit enters the receive buffer.
    push: Expr,
    /// Slots freed by the client (mod 2^C), sent back as credits.
    freed: Reg,
    count: Expr,
    overflow: Reg,
    nak_request: Expr,
    /// At the split depth: the two flags of a Train frame's `seq` (the rest
    /// of the field is compared in stage 3's `ahead`).
    train_flags: Option<Expr>,
    /// At [`SPLIT_DEPTH`]: the stage that holds the checked word for the
    /// cycle the protocol acts on it.
    stage3: Option<Stage3>,
}

/// The receive pipeline's depth from which the last stage also holds what
/// the word says relative to the state it will meet (see [`Stage3`]), and
/// the sender's step is split into compares of registers.
pub const SPLIT_DEPTH: u32 = 3;

fn split(cfg: &IciConfig) -> bool {
    cfg.depth() >= SPLIT_DEPTH
}

/// The third receive stage: the checked word (valid, CRC verdict, the bits
/// the CRC covers) and, computed on its way in, its `ack`, `credit` and
/// `seq` relative to the sender's base, the last credit count seen and the
/// expected sequence number as they will be in the cycle the protocol acts
/// on it. Each of those moves only with the word acted on in the cycle
/// before, so the difference to the moved value is a choice between two
/// differences of registers (the word in stage 2 against the word in stage
/// 3, or against the unmoved value) instead of a subtraction after the
/// step that moves it.
struct Stage3 {
    valid: Reg,
    ok: Reg,
    /// The word in stage 2 (its fields are the next word's).
    next: Record,
    /// `ack` - base, `credit` - the last count, and whether that return is
    /// at most the peer's buffer; `seq` - the expected sequence number.
    acked: Reg,
    /// Whether `ack` moves the window, as far as the window decides it
    /// (`acked` is not 0 and at most the window's count): the sender's
    /// progress test with the window it will meet, formed from registers
    /// (see `next_state`).
    acked_moves: Reg,
    returned: Reg,
    return_fits: Reg,
    ahead: Reg,
}

impl Stage3 {
    fn declare(
        m: &mut ModuleBuilder,
        cfg: &IciConfig,
        valid2: Expr,
        word2: Expr,
        ok2: Expr,
    ) -> (Stage3, Expr) {
        let word_ty = Ty::u(cfg.frame_bits());
        let (s_bits, c_bits) = (cfg.seq_bits(), cfg.credit_bits());
        let valid = m.reg_reset("rx_p3_valid", Ty::BOOL, 0);
        m.set_next(valid, valid2);
        let ok = m.reg("rx_p3_crc_ok", Ty::BOOL);
        m.set_next(ok, ok2);
        let word = m.reg("rx_p3_word", Ty::u(cfg.frame_bits() - cfg.crc_bits()));
        m.set_next(word, covered(word2, cfg));
        let frame = m.wire("rx_p3_frame", word.q().zext(word_ty.width));
        m.waive(
            "UNUSEDSIGNAL",
            "rx_p3_frame",
            "its CRC field reads as 0: the CRC was checked in stage 1",
        );
        let stage = Stage3 {
            valid,
            ok,
            next: frame_ty(cfg).unpack(word2),
            acked: m.reg("rx_p3_acked", Ty::u(s_bits)),
            acked_moves: m.reg("rx_p3_acked_moves", Ty::BOOL),
            returned: m.reg("rx_p3_returned", Ty::u(c_bits)),
            return_fits: m.reg("rx_p3_return_fits", Ty::BOOL),
            ahead: m.reg("rx_p3_ahead", Ty::u(s_bits)),
        };
        (stage, frame)
    }
}

impl Receiver {
    fn build(
        m: &mut ModuleBuilder,
        cfg: &IciConfig,
        rx_fifo: &Rc<ModuleDef>,
        des_valid: Expr,
        des_word: Expr,
    ) -> Receiver {
        let flit = flit_ty(cfg);
        let (s_bits, c_bits) = (cfg.seq_bits(), cfg.credit_bits());
        let (des_valid, des_word, crc_ok) = if cfg.depth() == 0 {
            let rf = frame_ty(cfg).unpack(des_word);
            let ok = frame_crc(covered(des_word, cfg), cfg).is_eq(rf.get("crc"));
            (des_valid, des_word, ok)
        } else {
            check_pipeline(m, cfg, des_valid, des_word)
        };
        let (stage3, des_valid, des_word, crc_ok) = if split(cfg) {
            let (st, frame) = Stage3::declare(m, cfg, des_valid, des_word, crc_ok);
            let (valid, ok) = (st.valid.q(), st.ok.q());
            (Some(st), valid, frame, ok)
        } else {
            (None, des_valid, des_word, crc_ok)
        };
        let rf = frame_ty(cfg).unpack(des_word);
        let crc_ok = m.wire("rx_crc_ok", crc_ok);
        let good = m.wire("rx_good", des_valid & crc_ok);
        let bad = m.wire("rx_bad", des_valid & !crc_ok);
        let kind = rf.get("kind");
        let is_data = good & kind.is_eq(FrameKind::Data);
        let expected = m.reg_reset("rx_expected", Ty::u(s_bits), 0);
        let ahead_by = match &stage3 {
            Some(st) => m.wire("rx_ahead_by", st.ahead.q()),
            None => m.wire("rx_ahead_by", rf.get("seq") - expected.q()),
        };
        let in_order = m.wire("rx_in_order", is_data & ahead_by.is_eq(0));
        // A sequence number in the half window after the expected one: a flit
        // was lost. One in the other half is a copy of an accepted flit.
        let gap = m.wire("rx_gap", is_data & ahead_by.is_ne(0) & !ahead_by.msb());
        let fifo_inst = m.instance("rx_buffer", rx_fifo);
        let rx_flit = flit.pack(&[
            ("data", rf.get("data")),
            ("last", rf.get("last")),
            ("len", rf.get("len")),
        ]);
        let buf_ready = m.inst_output(fifo_inst, "in_ready_o");
        let push = m.wire("rx_push", in_order & buf_ready);
        m.connect(fifo_inst, "in_valid_i", in_order);
        m.connect(fifo_inst, "in_data_i", rx_flit.bits());
        let overflow = m.reg_reset("rx_overflow", Ty::BOOL, 0);
        m.set_next(overflow, overflow.q() | (in_order & !buf_ready));
        m.set_next(expected, expected.q() + push.zext(s_bits));
        if let Some(st) = &stage3 {
            // seq - (expected + 1) is seq + !expected.
            let seq2 = st.next.get("seq");
            let ahead_next = mux(push, seq2 + !expected.q(), seq2 - expected.q());
            m.set_next(st.ahead, ahead_next);
        }
        let rx_ready = m.input("rx_ready_i", Ty::BOOL);
        m.connect(fifo_inst, "out_ready_i", rx_ready);
        let out_valid = m.inst_output(fifo_inst, "out_valid_o");
        let out_data = m.inst_output(fifo_inst, "out_data_o");
        let out_flit = flit.unpack(out_data);
        m.output("rx_valid_o", out_valid);
        m.output_record(ports::RX, &out_flit);
        let pop = out_valid & rx_ready;
        let freed = m.reg_reset("rx_freed", Ty::u(c_bits), 0);
        m.set_next(freed, freed.q() + pop.zext(c_bits));
        let count = m.inst_output(fifo_inst, "count_o");
        // One NAK per expected flit: re-armed when that flit arrives.
        let nak_armed = m.reg_reset("rx_nak_armed", Ty::BOOL, 1);
        let nak_request = m.wire("rx_nak_request", (bad | gap) & nak_armed.q());
        m.set_next(nak_armed, push | (nak_armed.q() & !nak_request));
        Receiver {
            frame: rf,
            good,
            bad,
            kind,
            expected,
            push,
            freed,
            count,
            overflow,
            nak_request,
            train_flags: stage3
                .is_some()
                .then(|| des_word.slice(config::ICI_KIND_BITS, 2)),
            stage3,
        }
    }
}

/// The receive pipeline of a depth above 0: the arrived word (valid, bits)
/// and whether its CRC matches, `depth` cycles after it arrived. Stage 1
/// registers the word with the CRC's partial sums (one shallow XOR tree per
/// 32-bit part, [`crc_partials`]); their XOR and the compare follow, and at
/// depth 2 the verdict is registered too, so the protocol's logic starts
/// from a register. Every stage loads every cycle: the receiver sees the
/// lanes as if they were `depth` cycles longer.
fn check_pipeline(
    m: &mut ModuleBuilder,
    cfg: &IciConfig,
    des_valid: Expr,
    des_word: Expr,
) -> (Expr, Expr, Expr) {
    let word_ty = Ty::u(cfg.frame_bits());
    let valid1 = m.reg_reset("rx_p1_valid", Ty::BOOL, 0);
    m.set_next(valid1, des_valid);
    let word1 = m.reg("rx_p1_word", word_ty);
    m.set_next(word1, des_word);
    let partials: Vec<Expr> = crc_partials(covered(des_word, cfg), cfg)
        .into_iter()
        .enumerate()
        .map(|(k, p)| {
            let r = m.reg(&format!("rx_p1_crc{k}"), Ty::u(cfg.crc_bits()));
            m.set_next(r, p);
            r.q()
        })
        .collect();
    let crc_field = frame_ty(cfg).unpack(word1.q()).get("crc");
    let ok1 = crc_of_partials(&partials, cfg).is_eq(crc_field);
    if cfg.depth() == 1 {
        return (valid1.q(), word1.q(), ok1);
    }
    let valid2 = m.reg_reset("rx_p2_valid", Ty::BOOL, 0);
    m.set_next(valid2, valid1.q());
    // The CRC field is checked: only the bits it covers go on (the word's
    // CRC bits read as 0 from here).
    let word2 = m.reg("rx_p2_word", Ty::u(cfg.frame_bits() - cfg.crc_bits()));
    m.set_next(word2, covered(word1.q(), cfg));
    let ok2 = m.reg("rx_p2_crc_ok", Ty::BOOL);
    m.set_next(ok2, ok1);
    let frame = m.wire("rx_p2_frame", word2.q().zext(word_ty.width));
    m.waive(
        "UNUSEDSIGNAL",
        "rx_p2_frame",
        "its CRC field reads as 0: the CRC was checked in stage 1",
    );
    (valid2.q(), frame, ok2.q())
}

/// The sender's registers: the link state, the replay window (`base`, the
/// oldest unacknowledged sequence number; `count` flits held, `sent` of them
/// sent since the last rewind, `high` sent at least once), the replay timer
/// and retry count, a NAK to send, the peer's last credit count, and the
/// run of good Train frames that ends retraining.
struct SenderRegs {
    state: Fsm<LinkState>,
    up: Expr,
    base: Reg,
    count: Reg,
    sent: Reg,
    high: Reg,
    timer: Reg,
    retries: Reg,
    nak_pending: Reg,
    remote_freed: Reg,
    good_run: Reg,
}

impl SenderRegs {
    fn declare(m: &mut ModuleBuilder, cfg: &IciConfig) -> SenderRegs {
        let seq_ty = Ty::u(cfg.seq_bits());
        let off_ty = offset_ty(cfg);
        let state = m.fsm("link_state", LinkState::Up);
        SenderRegs {
            state,
            up: state.is(LinkState::Up),
            base: m.reg_reset("tx_base", seq_ty, 0),
            count: m.reg_reset("tx_count", off_ty, 0),
            sent: m.reg_reset("tx_sent", off_ty, 0),
            high: m.reg_reset("tx_high", off_ty, 0),
            timer: m.reg_reset("tx_timer", Ty::u(bits_for(cfg.replay_timeout() as u64)), 0),
            retries: m.reg_reset("tx_retries", Ty::u(8), 0),
            nak_pending: m.reg_reset("tx_nak_pending", Ty::BOOL, 0),
            remote_freed: m.reg_reset("tx_remote_freed", Ty::u(cfg.credit_bits()), 0),
            good_run: m.reg_reset("rx_good_run", Ty::u(8), 0),
        }
    }
}

/// Offsets into the replay window, 0..=D.
fn offset_ty(cfg: &IciConfig) -> Ty {
    Ty::u(bits_for(cfg.replay_depth() as u64))
}

/// `e` (unsigned) cut or zero-extended to `width` bits.
fn resize(e: Expr, width: u32) -> Expr {
    e.zext(e.width().max(width)).trunc(width)
}

/// Acknowledgements and replays: every good frame's ack field is the next
/// flit its sender expects and acknowledges everything before it; a NAK or
/// the replay timer rewinds the window, and too many rewinds without
/// progress take the link down.
struct Acks {
    /// The acknowledgement moves the window forward.
    progress: Expr,
    /// The window after the acknowledgement: its base, flits held, sent,
    /// sent at least once.
    new_base: Expr,
    /// Below the split depth (which compares registers instead).
    count1: Option<Expr>,
    sent1: Expr,
    /// Below the split depth.
    high1: Option<Expr>,
    nak_rx: Expr,
    /// The replay timer ran out.
    expire: Expr,
    rewind: Expr,
    give_up: Expr,
    /// At the split depth: what the issue decision needs besides
    /// `progress`.
    split: Option<SplitAck>,
}

/// The acknowledgement at the split depth: `ack` itself and `ack` - base as
/// an offset (meaningful with progress) and as a sequence number, the next
/// word's `ack` - base (this cycle's base) with the register its window test
/// goes to, and whether the window rewinds with and without progress (a
/// NAK; or a NAK or the timer).
#[derive(Clone, Copy)]
struct SplitAck {
    ack: Expr,
    acked: Expr,
    acked_seq: Expr,
    next_acked: Expr,
    next_moves: Reg,
    rewind_p: Expr,
    rewind_n: Expr,
}

impl Acks {
    fn of(m: &mut ModuleBuilder, cfg: &IciConfig, rx: &Receiver, regs: &SenderRegs) -> Acks {
        if split(cfg) {
            return Acks::split(m, cfg, rx, regs);
        }
        let s_bits = cfg.seq_bits();
        let (base, count, timer) = (regs.base.q(), regs.count.q(), regs.timer.q());
        let acked = m.wire("tx_acked", rx.frame.get("ack") - base);
        let acked_off = resize(acked, offset_ty(cfg).width);
        let fits = acked.zext(s_bits + 1).is_le(count.zext(s_bits + 1));
        let progress = m.wire("tx_progress", rx.good & acked.is_ne(0) & fits);
        let adv = m.wire("tx_adv", mux(progress, acked_off, 0));
        let new_base = m.wire("tx_new_base", base + mux(progress, acked, 0));
        let count1 = m.wire("tx_count1", count - adv);
        let sent1 = m.wire("tx_sent1", sat_sub(regs.sent.q(), adv));
        let high1 = m.wire("tx_high1", sat_sub(regs.high.q(), adv));
        let nak_rx = m.wire("tx_nak_rx", rx.good & rx.kind.is_eq(FrameKind::Nak));
        let expire = m.wire(
            "tx_expire",
            regs.up & count1.is_ne(0) & !progress & timer.is_eq(cfg.replay_timeout() - 1),
        );
        let rewind = m.wire("tx_rewind", regs.up & (nak_rx | expire));
        // Replays since the last progress; progress in the replay's own cycle
        // (a NAK that also acknowledges) starts the count afresh.
        let give_up = m.wire(
            "tx_give_up",
            rewind & !progress & regs.retries.q().is_ge(cfg.max_retries()),
        );
        Acks {
            progress,
            new_base,
            count1: Some(count1),
            sent1,
            high1: Some(high1),
            nak_rx,
            expire,
            rewind,
            give_up,
            split: None,
        }
    }

    /// The same rules with `ack` - base from stage 3: every compare and
    /// difference the step needs is one of registers, and the rest chooses
    /// between them by whether the acknowledgement makes progress.
    fn split(m: &mut ModuleBuilder, cfg: &IciConfig, rx: &Receiver, regs: &SenderRegs) -> Acks {
        let st = rx.stage3.as_ref().expect("stage 3 at the split depth");
        let (base, count, timer) = (regs.base.q(), regs.count.q(), regs.timer.q());
        let sent = regs.sent.q();
        let ack = rx.frame.get("ack");
        let acked = m.wire("tx_acked", st.acked.q());
        let acked_off = resize(acked, offset_ty(cfg).width);
        let progress = m.wire("tx_progress", rx.good & st.acked_moves.q());
        // base + (ack - base) is the ack itself.
        let new_base = m.wire("tx_new_base", mux(progress, ack, base));
        // The next word's ack against the base it will meet.
        let ack2 = st.next.get("ack");
        let next_acked = m.wire("tx_next_acked", ack2 - base);
        m.set_next(st.acked, mux(progress, ack2 - ack, next_acked));
        let sent1 = m.wire("tx_sent1", mux(progress, sat_sub(sent, acked_off), sent));
        let nak_rx = m.wire("tx_nak_rx", rx.good & rx.kind.is_eq(FrameKind::Nak));
        // Without progress the window keeps its count.
        let due = m.wire(
            "tx_timer_due",
            regs.up & count.is_ne(0) & timer.is_eq(cfg.replay_timeout() - 1),
        );
        let expire = m.wire("tx_expire", due & !progress);
        let rewind = m.wire("tx_rewind", regs.up & (nak_rx | expire));
        // The rewind either way, so that what follows from it can be
        // formed before progress is known and chosen by it.
        let rewind_p = regs.up & nak_rx;
        let rewind_n = regs.up & (nak_rx | due);
        let give_up = m.wire(
            "tx_give_up",
            rewind & !progress & regs.retries.q().is_ge(cfg.max_retries()),
        );
        Acks {
            progress,
            new_base,
            count1: None,
            sent1,
            high1: None,
            nak_rx,
            expire,
            rewind,
            give_up,
            split: Some(SplitAck {
                ack,
                acked: acked_off,
                acked_seq: acked,
                next_acked,
                next_moves: st.acked_moves,
                rewind_p,
                rewind_n,
            }),
        }
    }
}

/// Credits: the ack's credit field counts the slots the peer has freed
/// (mod 2^C); the difference to the last count is what came back.
struct Credits {
    counter: CreditCounter,
    /// A flit may be sent (the peer has room).
    can_send: Expr,
    left: Expr,
    error: Expr,
    /// A credit count that returned more than the peer's buffer holds.
    bad_return: Reg,
}

/// The count of credits left: the library's counter, or at the split depth
/// the same counter written out with its sums formed from registers.
enum CreditCounter {
    Library(Inst),
    Split {
        count: Reg,
        overflow: Reg,
        /// The credits returned in this cycle, when `return_ok`.
        returned: Expr,
        return_ok: Expr,
    },
}

impl Credits {
    fn returned(
        m: &mut ModuleBuilder,
        cfg: &IciConfig,
        credit_def: &Rc<ModuleDef>,
        rx: &Receiver,
        regs: &SenderRegs,
    ) -> Credits {
        if split(cfg) {
            return Credits::split(m, cfg, rx, regs);
        }
        let c_bits = cfg.credit_bits();
        let inst = m.instance("credits", credit_def);
        let credit = rx.frame.get("credit");
        let returned = m.wire("tx_returned", credit - regs.remote_freed.q());
        let ret_ty = Ty::u(bits_for(cfg.rx_buffer() as u64));
        let return_ok = m.wire(
            "tx_return_ok",
            rx.good & returned.zext(c_bits + 1).is_le(cfg.rx_buffer()),
        );
        let ret_val = mux(return_ok, resize(returned, ret_ty.width), 0);
        m.connect(inst, "return_i", ret_val);
        let can_send = m.inst_output(inst, "can_send_o");
        let left = m.inst_output(inst, "credits_o");
        let error = m.inst_output(inst, "error_o");
        let bad_return = m.reg_reset("tx_bad_return", Ty::BOOL, 0);
        m.set_next(bad_return, bad_return.q() | (rx.good & !return_ok));
        m.set_next(regs.remote_freed, credit);
        m.set_enable(regs.remote_freed, return_ok);
        Credits {
            counter: CreditCounter::Library(inst),
            can_send,
            left,
            error,
            bad_return,
        }
    }

    /// The same rules with `credit` - the last count (and whether it is at
    /// most B) from stage 3.
    fn split(m: &mut ModuleBuilder, cfg: &IciConfig, rx: &Receiver, regs: &SenderRegs) -> Credits {
        let c_bits = cfg.credit_bits();
        let b = cfg.rx_buffer();
        let st = rx.stage3.as_ref().expect("stage 3 at the split depth");
        let credit = rx.frame.get("credit");
        let returned = m.wire("tx_returned", st.returned.q());
        let return_ok = m.wire("tx_return_ok", rx.good & st.return_fits.q());
        // The next word's count against the last count it will meet.
        let credit2 = st.next.get("credit");
        let (from_this, from_last) = (credit2 - credit, credit2 - regs.remote_freed.q());
        let fits = |x: Expr| x.zext(c_bits + 1).is_le(b);
        m.set_next(st.returned, mux(return_ok, from_this, from_last));
        m.set_next(
            st.return_fits,
            mux(return_ok, fits(from_this), fits(from_last)),
        );
        let count = m.reg_reset("tx_credit_count", Ty::u(bits_for(b as u64)), b);
        let overflow = m.reg_reset("tx_credit_overflow", Ty::BOOL, 0);
        let bad_return = m.reg_reset("tx_bad_return", Ty::BOOL, 0);
        m.set_next(bad_return, bad_return.q() | (rx.good & !return_ok));
        m.set_next(regs.remote_freed, credit);
        m.set_enable(regs.remote_freed, return_ok);
        Credits {
            counter: CreditCounter::Split {
                count,
                overflow,
                returned,
                return_ok,
            },
            can_send: m.wire("tx_can_send", count.q().is_ne(0)),
            left: count.q(),
            error: overflow.q(),
            bad_return,
        }
    }

    /// A flit accepted in this cycle costs a credit.
    fn spend(&self, m: &mut ModuleBuilder, cfg: &IciConfig, accept: Expr) {
        match &self.counter {
            CreditCounter::Library(inst) => m.connect(*inst, "send_i", accept),
            CreditCounter::Split {
                count,
                overflow,
                returned,
                return_ok,
            } => {
                // As the library's counter: count + return - spend, at most
                // B, any excess an error. A flit is accepted only with a
                // credit left, so spending never underflows. Both sums come
                // from registers; the return and the spend only choose.
                let b = cfg.rx_buffer();
                let ret_w = bits_for(b as u64);
                let sum_w = bits_for(b as u64 + (1u64 << ret_w));
                let with_ret = m.wire(
                    "tx_credit_sum",
                    count.q().zext(sum_w) + resize(*returned, ret_w).zext(sum_w),
                );
                let (c, sum1) = (count.q(), with_ret.trunc(ret_w));
                let kept = mux(*return_ok, sum1, c);
                let spent = mux(*return_ok, sum1 - 1u32, c - 1u32);
                let sum = mux(accept, spent, kept);
                let over = m.wire(
                    "tx_credit_over",
                    *return_ok & mux(accept, with_ret.is_gt(b + 1), with_ret.is_gt(b)),
                );
                let full = m.lit(Ty::u(ret_w), b);
                m.set_next(*count, mux(over, full, sum));
                m.set_next(*overflow, overflow.q() | over);
            }
        }
    }
}

/// A flit accepted from the client.
struct Accepted {
    accept: Expr,
    /// The sequence number the next flit accepted gets.
    next_seq: Expr,
    /// The replay buffer: every flit until it is acknowledged.
    replay: Mem,
}

/// Accepting a flit gives it the next sequence number and a replay slot.
fn accept_flit(
    m: &mut ModuleBuilder,
    cfg: &IciConfig,
    tx: &StreamSink,
    regs: &SenderRegs,
    credits: &Credits,
) -> Accepted {
    let s_bits = cfg.seq_bits();
    let d = cfg.replay_depth();
    let count = regs.count.q();
    let tx_ready = m.wire("tx_accept_ok", regs.up & count.is_lt(d) & credits.can_send);
    m.drive(tx.ready, tx_ready);
    let accept = m.wire("tx_accept", tx.stream.valid & tx_ready);
    credits.spend(m, cfg, accept);
    let next_seq = m.wire("tx_next_seq", regs.base.q() + resize(count, s_bits));
    let flit = tx.stream.data.bits();
    // At the split depth each slot also keeps its flit's part of the frame
    // CRC, so that sealing a frame XORs that part with the header's instead
    // of running the whole CRC after the choice of the read.
    let (slot_ty, slot) = if split(cfg) {
        let crc = m.wire("tx_flit_crc", flit_crc_part(tx.stream.data.clone(), cfg));
        (Ty::u(flit.width() + cfg.crc_bits()), cat(&[crc, flit]))
    } else {
        (flit_ty(cfg).ty(), flit)
    };
    let replay = m.memory_depth("replay", slot_ty, d as u64);
    m.mem_write(replay, accept, next_seq.trunc(d.trailing_zeros()), slot);
    Accepted {
        accept,
        next_seq,
        replay,
    }
}

/// The next frame: a Train frame while retraining or echoing, a NAK, the
/// next flit not yet sent (read from the replay buffer), or Idle; loaded
/// into the frame register (`s2_*`) when the lanes take a word.
struct Issue {
    /// The window's sent count after this cycle's rewind (below the split
    /// depth).
    sent2: Option<Expr>,
    /// At the split depth: the next sent and sent-once counts.
    split_next: Option<(Expr, Expr)>,
    /// A good Train frame whose sender hears us arrived.
    got_heard: Expr,
    issue: Expr,
    retransmit: Expr,
    nak_out: Expr,
    /// The flit read for the frame register.
    read: Expr,
    kind: Reg,
    seq: Reg,
}

impl Issue {
    fn next(
        m: &mut ModuleBuilder,
        cfg: &IciConfig,
        ser_ready: Expr,
        rx: &Receiver,
        regs: &SenderRegs,
        ack: &Acks,
        replay: Mem,
    ) -> Issue {
        let s_bits = cfg.seq_bits();
        let sent2 = (!split(cfg)).then(|| m.wire("tx_sent2", mux(ack.rewind, 0, ack.sent1)));
        // A good Train frame from a retraining peer is answered with a Train
        // frame: the echoes tell the peer that words get through both ways.
        // A Train frame's seq field holds two flags: bit 1, its sender is
        // retraining; bit 0, its sender received a good Train frame in the
        // cycle before it loaded this one (it hears its peer). Only a
        // retraining sender is answered, so two sides that are both up
        // again stop.
        let echo = m.reg_reset("tx_echo", Ty::BOOL, 0);
        let got_train = m.wire("rx_got_train", rx.good & rx.kind.is_eq(FrameKind::Train));
        let train_seq = match rx.train_flags {
            Some(flags) => flags,
            None => rx.frame.get("seq"),
        };
        let got_request = m.wire("rx_got_train_request", got_train & train_seq.bit(1));
        let got_heard = m.wire("rx_got_train_heard", got_train & train_seq.bit(0));
        m.set_next(echo, got_request | (echo.q() & !ser_ready));
        let up = regs.up;
        let nak_pending = regs.nak_pending.q();
        let free = up & ser_ready & !nak_pending & !echo.q();
        let s_addr = cfg.replay_depth().trailing_zeros();
        // `issue_if_ready` is the issue where the lanes' ready also enables
        // the register it goes to.
        let (issue, issue_if_ready, issue_seq, retransmit, split_next, read) = match sent2 {
            Some(sent2) => {
                let issue = m.wire(
                    "tx_issue",
                    free & sent2.is_lt(ack.count1.expect("the window's count")),
                );
                let issue_seq = m.wire("tx_issue_seq", ack.new_base + resize(sent2, s_bits));
                let high1 = ack.high1.expect("the window's sent-once count");
                let retransmit = m.wire("tx_retransmit", issue & sent2.is_lt(high1));
                let read = m.mem_read(replay, Some(ser_ready), issue_seq.trunc(s_addr));
                (issue, issue, issue_seq, retransmit, None, read)
            }
            None => {
                // The lanes' ready reaches a few hundred enables and comes
                // from the stub's logic: it is the last choice here, between
                // the step with the lanes taking a word and the step
                // without, not an input of the issue compares.
                let free_if_ready = up & !nak_pending & !echo.q();
                let si = split_issue(m, cfg, regs, ack, free_if_ready, ser_ready);
                // The flit is read at each of the three addresses it can
                // come from, which are registers or their sum, and the
                // choice is registered beside the reads: progress and the
                // restart decide which read is the flit, not its address.
                let reads = si
                    .candidates
                    .map(|a| m.mem_read(replay, Some(ser_ready), a.trunc(s_addr)));
                let at_ack = m.reg("s2_read_at_ack", Ty::BOOL);
                let at_base = m.reg("s2_read_at_base", Ty::BOOL);
                m.set_next(at_ack, si.choice.0);
                m.set_next(at_base, si.choice.1);
                m.set_enable(at_ack, ser_ready);
                m.set_enable(at_base, ser_ready);
                let read = mux(at_ack.q(), reads[0], mux(at_base.q(), reads[1], reads[2]));
                (
                    ser_ready & si.issue_if_ready,
                    si.issue_if_ready,
                    si.issue_seq,
                    si.retransmit,
                    Some(si.next),
                    read,
                )
            }
        };
        let kind = m.reg_reset("s2_kind", FrameKind::ty(), FrameKind::Idle.index());
        let seq = m.reg_reset("s2_seq", Ty::u(s_bits), 0);
        let nak_out = m.wire("tx_nak_out", up & ser_ready & nak_pending & !echo.q());
        let kind_next = m.comb_default("s2_kind_next", FrameKind::ty(), FrameKind::Idle);
        m.if_(!up | echo.q(), |m| m.assign(kind_next, FrameKind::Train))
            .elif(nak_pending, |m| m.assign(kind_next, FrameKind::Nak))
            .elif(issue_if_ready, |m| m.assign(kind_next, FrameKind::Data));
        m.set_next(kind, kind_next.value());
        m.set_enable(kind, ser_ready);
        let flags = cat(&[!up, got_train]).zext(s_bits);
        let seq_next = m.comb_default("s2_seq_next", Ty::u(s_bits), 0);
        m.if_(!up | echo.q(), |m| m.assign(seq_next, flags))
            .elif(nak_pending, |_| {})
            .elif(issue_if_ready, |m| m.assign(seq_next, issue_seq));
        m.set_next(seq, seq_next.value());
        m.set_enable(seq, ser_ready);
        Issue {
            sent2,
            split_next,
            got_heard,
            issue,
            retransmit,
            nak_out,
            read,
            kind,
            seq,
        }
    }
}

/// The issue decision at the split depth, and the sent and sent-once
/// counts after it.
struct SplitIssue {
    /// The issue if the lanes take a word this cycle.
    issue_if_ready: Expr,
    issue_seq: Expr,
    retransmit: Expr,
    next: (Expr, Expr),
    /// The candidate flits to send: at the `ack`, at the base, at base +
    /// `sent`; and which one is sent (the restart with progress, the one
    /// without, the rest).
    candidates: [Expr; 3],
    choice: (Expr, Expr),
}

/// The issue decision at the split depth: the rules of [`Issue::next`]
/// stated with compares of registers, once for a cycle with progress and
/// once without, and chosen by progress. The window after this cycle's
/// acknowledgement and rewind holds `count1` flits of which `sent2` are
/// sent; an acknowledgement shrinks both by `acked`, so:
/// - a flit is left to send (`sent2 < count1`) when the acknowledgement
///   leaves any flit (with progress `acked != count`, without `count != 0`)
///   and either the window rewinds (`sent2` is 0) or an unsent flit was
///   there before (`sent < count`: with `sent >= acked` both drop by
///   `acked`; with `sent < acked`, `sent2` is 0);
/// - it is the flit at the new base (the `ack` with progress, the base
///   without) when the window rewinds or the acknowledgement passed every
///   sent flit (`restart`), and the one at base + `sent` otherwise;
/// - it was sent before (`sent2 < high1`) when, after a restart, a flit
///   sent before is left (`high > acked` with progress, `high != 0`
///   without), and otherwise when `sent < high`;
/// - the next sent count is the issue (0 or 1) after a restart, else
///   `sent` (less `acked` with progress) plus the issue; the sent-once
///   count grows by one when a flit not sent before is issued.
///
/// The lanes' ready (`free_if_ready` leaves it out) is the last choice:
/// the counts are formed for a cycle whose word is taken and for one whose
/// word waits, and the ready picks one, so the net with a few hundred
/// loads is one LUT from the registers it reaches.
fn split_issue(
    m: &mut ModuleBuilder,
    cfg: &IciConfig,
    regs: &SenderRegs,
    ack: &Acks,
    free_if_ready: Expr,
    ser_ready: Expr,
) -> SplitIssue {
    let s_bits = cfg.seq_bits();
    let off_bits = offset_ty(cfg).width;
    let sa = ack.split.expect("the split acknowledgement");
    let (acked, progress) = (sa.acked, ack.progress);
    let (base, count) = (regs.base.q(), regs.count.q());
    let (sent, high) = (regs.sent.q(), regs.high.q());
    let unsent = sent.is_lt(count);
    let unseen = sent.is_lt(high);
    let snd = base + resize(sent, s_bits);
    // With progress, if the lanes take a word.
    let restart_p = sa.rewind_p | sent.is_lt(acked);
    let issue_p = free_if_ready & acked.is_ne(count) & (sa.rewind_p | unsent);
    let again_p = mux(restart_p, high.is_gt(acked), unseen);
    // Without.
    let restart_n = sa.rewind_n;
    let issue_n = free_if_ready & count.is_ne(0) & (sa.rewind_n | unsent);
    let again_n = mux(restart_n, high.is_ne(0), unseen);
    let issue_if_ready = m.wire("tx_issue_if_ready", mux(progress, issue_p, issue_n));
    let issue_seq = m.wire(
        "tx_issue_seq",
        mux(
            progress,
            mux(restart_p, sa.ack, snd),
            mux(restart_n, base, snd),
        ),
    );
    let retransmit = m.wire(
        "tx_retransmit",
        ser_ready & mux(progress, issue_p & again_p, issue_n & again_n),
    );
    let one = |x: Expr| x.zext(off_bits);
    let zero = m.lit(Ty::u(off_bits), 0);
    // What the lanes' ready chooses between: the counts when a word is
    // taken, and when none is (no issue).
    let sent_taken = mux(
        progress,
        mux(
            restart_p,
            one(issue_p),
            mux(issue_p, (sent + 1u32) - acked, sent - acked),
        ),
        mux(restart_n, one(issue_n), mux(issue_n, sent + 1u32, sent)),
    );
    let sent_waits = mux(
        progress,
        mux(restart_p, zero, sent - acked),
        mux(restart_n, zero, sent),
    );
    // high1 + 1 with progress: (high - acked saturating) + 1.
    let high_ge = high.is_ge(acked);
    let high1_p = mux(high_ge, high - acked, 0);
    let high1_p1 = mux(high_ge, (high + 1u32) - acked, 1);
    let high_taken = mux(
        progress,
        mux(issue_p & !again_p, high1_p1, high1_p),
        mux(issue_n & !again_n, high + 1u32, high),
    );
    let high_waits = mux(progress, high1_p, high);
    SplitIssue {
        issue_if_ready,
        issue_seq,
        retransmit,
        next: (
            mux(ser_ready, sent_taken, sent_waits),
            mux(ser_ready, high_taken, high_waits),
        ),
        candidates: [sa.ack, base, snd],
        choice: (progress & restart_p, !progress & restart_n),
    }
}

/// The word on the lanes: the frame register, the flit read for it, and
/// this cycle's acknowledgement and credit count, sealed with its CRC.
fn lane_word(m: &mut ModuleBuilder, cfg: &IciConfig, rx: &Receiver, issue: &Issue) {
    let s2_data = issue.kind.q().is_eq(FrameKind::Data);
    let flit_bits = flit_ty(cfg).width();
    let flit_read = if split(cfg) {
        issue.read.slice(0, flit_bits)
    } else {
        issue.read
    };
    let read_flit = flit_ty(cfg).unpack(flit_read);
    let gate = |x: Expr| mux(s2_data, x, 0);
    let out = frame_ty(cfg).pack(&[
        ("kind", issue.kind.q()),
        ("seq", issue.seq.q()),
        ("ack", rx.expected.q()),
        ("credit", rx.freed.q()),
        ("last", gate(read_flit.get("last"))),
        ("len", gate(read_flit.get("len"))),
        ("data", gate(read_flit.get("data"))),
        ("crc", m.lit(Ty::u(cfg.crc_bits()), 0)),
    ]);
    if !split(cfg) {
        // `seal` computes the CRC field from the others.
        m.output(ports::SER_WORD, seal(&out, cfg));
        return;
    }
    // The CRC is affine in the frame: the header's linear part, the flit's
    // (kept with it in the replay buffer; 0 unless a Data frame), and the
    // CRC of the all-zero frame.
    let header = cat(&[
        out.get("credit"),
        out.get("ack"),
        out.get("seq"),
        out.get("kind"),
    ]);
    debug_assert_eq!(header.width(), frame_ty(cfg).offset("last"));
    let header_part = m.wire("tx_header_crc", crc_linear_part(header, 0, cfg));
    let flit_part = gate(issue.read.slice(flit_bits, cfg.crc_bits()));
    let crc = header_part ^ flit_part ^ header_part.lit(crc_of_zero(cfg));
    m.output(ports::SER_WORD, out.with("crc", crc).bits());
}

/// A flit's part of the frame CRC: the linear part of its fields where a
/// Data frame carries them.
fn flit_crc_part(flit: Record, cfg: &IciConfig) -> Expr {
    let ft = frame_ty(cfg);
    let lo = ft.offset("last");
    let fields = cat(&[flit.get("data"), flit.get("len"), flit.get("last")]);
    debug_assert_eq!(ft.offset("data") + cfg.payload_bits(), lo + fields.width());
    crc_linear_part(fields, lo, cfg)
}

/// The sender's next state: the window, the NAK to send, the replay timer,
/// and the link state machine (up, down for a cycle, retraining until
/// enough good Train frames arrive).
fn next_state(
    m: &mut ModuleBuilder,
    cfg: &IciConfig,
    rx: &Receiver,
    regs: &SenderRegs,
    ack: &Acks,
    issue: &Issue,
    accept: Expr,
) {
    let off_bits = offset_ty(cfg).width;
    let (state, up) = (regs.state, regs.up);
    let (sent, retries, good_run) = (regs.sent, regs.retries, regs.good_run);
    let (sent_next, high_next, count_next) = match (issue.sent2, issue.split_next) {
        (Some(sent2), _) => {
            let sent_next = sent2 + issue.issue.zext(off_bits);
            let high1 = ack.high1.expect("the window's sent-once count");
            let high_next = mux(issue.issue & sent2.is_eq(high1), high1 + 1u32, high1);
            let count_next = ack.count1.expect("the window's count") + accept.zext(off_bits);
            (sent_next, high_next, count_next)
        }
        (None, Some((sent_next, high_next))) => {
            let sp = ack.split.expect("the split acknowledgement");
            let count = regs.count.q();
            let held = count + accept.zext(off_bits);
            let count_next = mux(ack.progress, held - sp.acked, held);
            // The next word's window test against this step's window, with
            // x = its ack - this cycle's base: without progress it is
            // 0 < x <= count'; with it, ack' - base' = x - acked (mod 2D),
            // and as the window never exceeds D the test holds exactly
            // when acked < x <= count + accept.
            let w = cfg.seq_bits() + 1;
            let x = sp.next_acked.zext(w);
            let c = count.zext(w);
            let within = mux(accept, x.is_le(c + 1u32), x.is_le(c));
            let past_zero = mux(ack.progress, x.is_gt(sp.acked_seq.zext(w)), x.is_ne(0));
            m.set_next(sp.next_moves, within & past_zero);
            (sent_next, high_next, count_next)
        }
        (None, None) => unreachable!("an issue is either split or not"),
    };
    m.set_next(regs.base, ack.new_base);
    m.set_next(regs.count, count_next);
    m.set_next(regs.high, high_next);
    let nak_pending = regs.nak_pending.q();
    m.set_next(
        regs.nak_pending,
        (nak_pending & !issue.nak_out) | rx.nak_request,
    );
    let trained = good_run.q().is_ge(cfg.train_words());
    // The timer runs while flits wait for acknowledgement without progress.
    let timer = regs.timer.q();
    let waiting = if split(cfg) {
        // Without progress the window keeps its count.
        regs.count.q().is_ne(0)
    } else {
        ack.count1.expect("the window's count").is_ne(0)
    };
    let timer_run = up & waiting & !ack.progress & !ack.expire;
    m.set_next(regs.timer, mux(timer_run, timer + 1u32, 0));
    m.fsm_states(state, |t| {
        t.state(LinkState::Up, |m| {
            m.assign(sent, sent_next);
            m.if_(ack.progress, |m| m.assign(retries, 0));
            m.if_(ack.give_up, |m| state.goto(m, LinkState::Down))
                .elif(ack.rewind, |m| {
                    m.assign(retries, mux(ack.progress, 1, retries.q() + 1u32))
                });
        })
        .state(LinkState::Down, |m| {
            m.assign(sent, ack.sent1);
            m.assign(good_run, 0);
            state.goto(m, LinkState::Train);
        })
        .state(LinkState::Train, |m| {
            m.assign(sent, ack.sent1);
            m.if_(trained, |m| {
                // Back up: replay everything not yet acknowledged.
                m.assign(sent, 0);
                m.assign(retries, 0);
                state.goto(m, LinkState::Up);
            });
        });
    });
    // Consecutive good Train frames whose sender hears us (saturating):
    // any other word, or a cycle without one, ends the run. The Down state
    // clears it.
    let run = good_run.q();
    let run_next = mux(issue.got_heard, mux(run.is_eq(255u32), run, run + 1u32), 0);
    m.if_(!state.is(LinkState::Down), |m| m.assign(good_run, run_next));
}

//! One end of an ICI link: the sender (replay buffer, ACK/NAK, timer,
//! credits, link state) and the receiver (CRC check, in-order acceptance,
//! NAK requests, the receive buffer) of one port. See the crate docs for the
//! protocol and the timing contract.

use crate::frame::{covered, flit_ty, frame_crc, frame_ty, seal, FrameKind};
use config::IciConfig;
use hw::blocks::{credit_counter, fifo, FifoMode};
use hw::{cat, mux, Design, Expr, HwEnum, ModuleBuilder, ModuleDef, Ty};
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
/// than the default CRC-32).
pub fn link_name(cfg: &IciConfig) -> String {
    let crc = if cfg.crc_bits() == config::ICI_CRC_BITS {
        String::new()
    } else {
        format!("_c{}", cfg.crc_bits())
    };
    format!(
        "ici_link_w{}_d{}_b{}_t{}_r{}_k{}{crc}",
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
    mux(a.is_ge(b), a - b, a.lit(0))
}

/// Builds one link end for `cfg` into `design`.
#[track_caller]
pub fn link(design: &mut Design, cfg: &IciConfig) -> Rc<ModuleDef> {
    let owned = cfg.params();
    let params: Vec<(&str, String)> = owned.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    let flit = flit_ty(cfg);
    let rx_fifo = fifo(design, flit.ty(), cfg.rx_buffer(), FifoMode::Fwft);
    let credits = credit_counter(design, cfg.rx_buffer(), cfg.rx_buffer());
    let cfg = *cfg;
    design.define(&link_name(&cfg), &params, |_, m| {
        m.doc("ICI link end: flits with sequence numbers and CRC-32, replay, ACK/NAK, credits, retraining");
        body(m, &cfg, &rx_fifo, &credits);
    })
}

fn body(
    m: &mut ModuleBuilder,
    cfg: &IciConfig,
    rx_fifo: &Rc<ModuleDef>,
    credit_def: &Rc<ModuleDef>,
) {
    use ports::*;
    let flit = flit_ty(cfg);
    let frame = frame_ty(cfg);
    let s_bits = cfg.seq_bits();
    let seq_ty = Ty::u(s_bits);
    let c_bits = cfg.credit_bits();
    let d = cfg.replay_depth();
    let b = cfg.rx_buffer();
    let off_ty = Ty::u(bits_for(d as u64));
    let addr_bits = d.trailing_zeros();

    // ---------------------------------------------------------------- ports
    let tx = m.stream_input(TX, &flit);
    let ser_ready = m.input(SER_READY, Ty::BOOL);
    let des_valid = m.input(DES_VALID, Ty::BOOL);
    let des_word = m.input(DES_WORD, Ty::u(cfg.frame_bits()));

    // ------------------------------------------------------------- receiver
    // The word that arrived, checked in the cycle it arrives.
    let rf = frame.unpack(des_word);
    let crc_ok = m.wire(
        "rx_crc_ok",
        frame_crc(covered(des_word, cfg), cfg).is_eq(rf.get("crc")),
    );
    let good = m.wire("rx_good", des_valid & crc_ok);
    let bad = m.wire("rx_bad", des_valid & !crc_ok);
    let kind = rf.get("kind");
    let is_data = good & kind.is_eq(FrameKind::Data);
    let expected = m.reg_reset("rx_expected", seq_ty, 0);
    let ahead_by = m.wire("rx_ahead_by", rf.get("seq") - expected.q());
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
    let rx_ready = m.input("rx_ready_i", Ty::BOOL);
    m.connect(fifo_inst, "out_ready_i", rx_ready);
    let out_valid = m.inst_output(fifo_inst, "out_valid_o");
    let out_data = m.inst_output(fifo_inst, "out_data_o");
    let out_flit = flit.unpack(out_data);
    m.output("rx_valid_o", out_valid);
    m.output_record(RX, &out_flit);
    let pop = out_valid & rx_ready;
    let freed = m.reg_reset("rx_freed", Ty::u(c_bits), 0);
    m.set_next(freed, freed.q() + pop.zext(c_bits));
    let rx_count = m.inst_output(fifo_inst, "count_o");
    // One NAK per expected flit: re-armed when that flit arrives.
    let nak_armed = m.reg_reset("rx_nak_armed", Ty::BOOL, 1);
    let nak_request = m.wire("rx_nak_request", (bad | gap) & nak_armed.q());
    m.set_next(nak_armed, push | (nak_armed.q() & !nak_request));

    // --------------------------------------------------------------- sender
    let state = m.fsm("link_state", LinkState::Up);
    let up = state.is(LinkState::Up);
    let base = m.reg_reset("tx_base", seq_ty, 0);
    let count = m.reg_reset("tx_count", off_ty, 0);
    let sent = m.reg_reset("tx_sent", off_ty, 0);
    let high = m.reg_reset("tx_high", off_ty, 0);
    let timer = m.reg_reset("tx_timer", Ty::u(bits_for(cfg.replay_timeout() as u64)), 0);
    let retries = m.reg_reset("tx_retries", Ty::u(8), 0);
    let nak_pending = m.reg_reset("tx_nak_pending", Ty::BOOL, 0);
    let remote_freed = m.reg_reset("tx_remote_freed", Ty::u(c_bits), 0);
    let good_run = m.reg_reset("rx_good_run", Ty::u(8), 0);

    // Acknowledgements: every good frame's ack field is the next flit its
    // sender expects; it acknowledges everything before it.
    let acked = m.wire("tx_acked", rf.get("ack") - base.q());
    let acked_off = acked.zext(s_bits.max(off_ty.width)).trunc(off_ty.width);
    let fits = acked.zext(s_bits + 1).is_le(count.q().zext(s_bits + 1));
    let progress = m.wire("tx_progress", good & acked.is_ne(0) & fits);
    let zero_off = m.lit(off_ty, 0);
    let adv = m.wire("tx_adv", mux(progress, acked_off, zero_off));
    let zero_seq = m.lit(seq_ty, 0);
    let new_base = m.wire("tx_new_base", base.q() + mux(progress, acked, zero_seq));
    let count1 = m.wire("tx_count1", count.q() - adv);
    let sent1 = m.wire("tx_sent1", sat_sub(sent.q(), adv));
    let high1 = m.wire("tx_high1", sat_sub(high.q(), adv));
    let nak_rx = m.wire("tx_nak_rx", good & kind.is_eq(FrameKind::Nak));
    let timer_ty = timer.q().ty();
    let expire = m.wire(
        "tx_expire",
        up & count1.is_ne(0)
            & !progress
            & timer.q().is_eq(m.lit(timer_ty, cfg.replay_timeout() - 1)),
    );
    let rewind = m.wire("tx_rewind", up & (nak_rx | expire));
    // Replays since the last progress; progress in the replay's own cycle
    // (a NAK that also acknowledges) starts the count afresh.
    let max_retries = m.lit(Ty::u(8), cfg.max_retries());
    let give_up = m.wire(
        "tx_give_up",
        rewind & !progress & retries.q().is_ge(max_retries),
    );

    // Credits: the ack's credit field counts the slots the peer has freed
    // (mod 2^C); the difference to the last count is what came back.
    let credit_inst = m.instance("credits", credit_def);
    let returned = m.wire("tx_returned", rf.get("credit") - remote_freed.q());
    let ret_ty = Ty::u(bits_for(b as u64));
    let return_ok = m.wire(
        "tx_return_ok",
        good & returned.zext(c_bits + 1).is_le(m.lit(Ty::u(c_bits + 1), b)),
    );
    let ret_val = mux(
        return_ok,
        returned.zext(c_bits.max(ret_ty.width)).trunc(ret_ty.width),
        m.lit(ret_ty, 0),
    );
    m.connect(credit_inst, "return_i", ret_val);
    let can_send = m.inst_output(credit_inst, "can_send_o");
    let credits_left = m.inst_output(credit_inst, "credits_o");
    let credit_error = m.inst_output(credit_inst, "error_o");
    let bad_return = m.reg_reset("tx_bad_return", Ty::BOOL, 0);
    m.set_next(bad_return, bad_return.q() | (good & !return_ok));
    m.set_next(remote_freed, rf.get("credit"));
    m.set_enable(remote_freed, return_ok);

    // Accepting a flit gives it the next sequence number and a replay slot.
    let window_ok = count.q().is_lt(m.lit(off_ty, d));
    let tx_ready = m.wire("tx_accept_ok", up & window_ok & can_send);
    m.drive(tx.ready, tx_ready);
    let accept = m.wire("tx_accept", tx.stream.valid & tx_ready);
    m.connect(credit_inst, "send_i", accept);
    let next_seq = m.wire(
        "tx_next_seq",
        base.q() + count.q().zext(s_bits.max(off_ty.width)).trunc(s_bits),
    );
    let replay = m.memory_depth("replay", flit.ty(), d as u64);
    m.mem_write(
        replay,
        accept,
        next_seq.trunc(addr_bits),
        tx.stream.data.bits(),
    );

    // Issue: the next flit not yet sent goes to the frame register.
    let sent2 = m.wire("tx_sent2", mux(rewind, zero_off, sent1));
    // A good Train frame from a retraining peer is answered with a Train
    // frame: the echoes tell the peer that words get through both ways.
    // A Train frame's seq field holds two flags: bit 1, its sender is
    // retraining; bit 0, its sender received a good Train frame in the cycle
    // before it loaded this one (it hears its peer). Only a retraining
    // sender is answered, so two sides that are both up again stop.
    let echo = m.reg_reset("tx_echo", Ty::BOOL, 0);
    let got_train = m.wire("rx_got_train", good & kind.is_eq(FrameKind::Train));
    let train_seq = rf.get("seq");
    let got_request = m.wire("rx_got_train_request", got_train & train_seq.bit(1));
    let got_heard = m.wire("rx_got_train_heard", got_train & train_seq.bit(0));
    m.set_next(echo, got_request | (echo.q() & !ser_ready));
    let issue = m.wire(
        "tx_issue",
        up & ser_ready & !nak_pending.q() & !echo.q() & sent2.is_lt(count1),
    );
    let issue_seq = m.wire(
        "tx_issue_seq",
        new_base + sent2.zext(s_bits.max(off_ty.width)).trunc(s_bits),
    );
    let retransmit = m.wire("tx_retransmit", issue & sent2.is_lt(high1));
    let read = m.mem_read(replay, Some(ser_ready), issue_seq.trunc(addr_bits));
    let s2_kind = m.reg_reset("s2_kind", FrameKind::ty(), FrameKind::Idle.index());
    let s2_seq = m.reg_reset("s2_seq", seq_ty, 0);
    let nak_out = m.wire("tx_nak_out", up & ser_ready & nak_pending.q() & !echo.q());
    let kind_next = m.comb_default("s2_kind_next", FrameKind::ty(), FrameKind::Idle);
    m.if_(!up | echo.q(), |m| m.assign(kind_next, FrameKind::Train))
        .elif(nak_pending.q(), |m| m.assign(kind_next, FrameKind::Nak))
        .elif(issue, |m| m.assign(kind_next, FrameKind::Data));
    m.set_next(s2_kind, kind_next.value());
    m.set_enable(s2_kind, ser_ready);
    let flags = cat(&[!up, got_train]).zext(s_bits);
    let seq_next = m.comb_default("s2_seq_next", seq_ty, 0);
    m.if_(!up | echo.q(), |m| m.assign(seq_next, flags))
        .elif(nak_pending.q(), |_| {})
        .elif(issue, |m| m.assign(seq_next, issue_seq));
    m.set_next(s2_seq, seq_next.value());
    m.set_enable(s2_seq, ser_ready);

    // The word on the lanes: the frame register, the flit read for it, and
    // this cycle's acknowledgement and credit count.
    let s2_data = s2_kind.q().is_eq(FrameKind::Data);
    let read_flit = flit.unpack(read);
    let gate = |x: Expr| mux(s2_data, x, x.lit(0));
    let out = frame.pack(&[
        ("kind", s2_kind.q()),
        ("seq", s2_seq.q()),
        ("ack", expected.q()),
        ("credit", freed.q()),
        ("last", gate(read_flit.get("last"))),
        ("len", gate(read_flit.get("len"))),
        ("data", gate(read_flit.get("data"))),
        ("crc", m.lit(Ty::u(cfg.crc_bits()), 0)),
    ]);
    // `seal` computes the CRC field from the others.
    m.output(SER_WORD, seal(&out, cfg));

    // The next sender state.
    let sent_next = sent2 + issue.zext(off_ty.width);
    let high_next = mux(issue & sent2.is_eq(high1), high1 + 1u32, high1);
    let count_next = count1 + accept.zext(off_ty.width);
    m.set_next(base, new_base);
    m.set_next(count, count_next);
    m.set_next(high, high_next);
    m.set_next(nak_pending, (nak_pending.q() & !nak_out) | nak_request);
    let trained = good_run.q().is_ge(m.lit(Ty::u(8), cfg.train_words()));
    // The timer runs while flits wait for acknowledgement without progress.
    let timer_run = up & count1.is_ne(0) & !progress & !expire;
    m.set_next(timer, mux(timer_run, timer.q() + 1u32, m.lit(timer_ty, 0)));
    m.fsm_states(state, |t| {
        t.state(LinkState::Up, |m| {
            m.assign(sent, sent_next);
            m.if_(progress, |m| m.assign(retries, 0));
            m.if_(give_up, |m| state.goto(m, LinkState::Down))
                .elif(rewind, |m| {
                    let one = m.lit(Ty::u(8), 1);
                    m.assign(retries, mux(progress, one, retries.q() + 1u32))
                });
        })
        .state(LinkState::Down, |m| {
            m.assign(sent, sent1);
            m.assign(good_run, 0);
            state.goto(m, LinkState::Train);
        })
        .state(LinkState::Train, |m| {
            m.assign(sent, sent1);
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
    let run_next = mux(
        got_heard,
        mux(
            good_run.q().is_eq(255u32),
            good_run.q(),
            good_run.q() + 1u32,
        ),
        m.lit(Ty::u(8), 0),
    );
    m.if_(!state.is(LinkState::Down), |m| m.assign(good_run, run_next));

    // ------------------------------------------------------------- status
    m.output(LINK_UP, up);
    let events = [
        accept, push, bad, retransmit, nak_out, nak_rx, expire, give_up,
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
    m.output(TX_NEXT_SEQ, next_seq);
    m.output(TX_CREDITS, credits_left);
    m.output(TX_REMOTE_FREED, remote_freed.q());
    m.output(RX_EXPECTED_SEQ, expected.q());
    m.output(RX_FREED, freed.q());
    m.output(RX_COUNT, rx_count);
    m.output(RX_OVERFLOW, overflow.q());
    m.output(CREDIT_ERROR, credit_error | bad_return.q());
}

//! 8N1 UART receiver and transmitter, one clock domain, a fixed number of
//! clock cycles per bit (a generator parameter, at least [`MIN_CLOCKS_PER_BIT`]).
//!
//! **Receiver.** The line goes through two flip-flops (both reset to the idle
//! level, 1) before any logic sees it: the pin is asynchronous to the clock, and
//! the second flop gives the first a full cycle to settle. The first cycle in
//! which the synchronised line is low starts a frame; the receiver then counts
//! `(N-1)/2` cycles to the middle of the start bit and samples there, and every
//! `N` cycles after that (mid-bit sampling, so a sender whose clock is a few
//! percent off is still read right). A start bit that is high again at its
//! middle was a glitch and is ignored. A low stop bit is a framing error: the
//! byte is dropped, `frame_err_o` pulses, and the receiver waits for the line to
//! go high before it looks for the next start bit (so a held-low line, a break,
//! is one error, not a stream of zero bytes). After a good stop bit's middle
//! the receiver is immediately ready for the next start bit, so back-to-back
//! bytes, and a sender slightly faster than the receiver, are fine.
//!
//! **Transmitter.** A 10-bit frame register (start bit, eight data bits LSB
//! first, stop bit) shifts right once per bit time, filling with ones; the pin
//! is its bit 0, so the output is a register (no glitches) and idles high.
//! `ready_o` is high when idle and in the last cycle of a stop bit, so a byte
//! offered then starts right after it: back-to-back bytes are sent with no
//! gap, each bit exactly `N` cycles long.

use hw::{bits_for, mux, Design, ModuleBuilder, ModuleDef, Ty};
use std::rc::Rc;

hw::hw_enum! {
    /// The receiver's states.
    pub enum RxState {
        /// Waiting for the line to go low (a start bit).
        Idle,
        /// Counting to the middle of the start bit.
        Start,
        /// Sampling the eight data bits.
        Data,
        /// Sampling the stop bit.
        Stop,
        /// After a framing error: waiting for the line to go high.
        WaitHigh,
    }
}

/// The fewest clock cycles per bit the receiver's mid-bit sampling supports.
pub const MIN_CLOCKS_PER_BIT: u32 = 4;

/// Port names of [`uart_rx`].
pub mod rx_ports {
    pub const RX: &str = "rx_i";
    pub const VALID: &str = "valid_o";
    pub const DATA: &str = "data_o";
    pub const FRAME_ERR: &str = "frame_err_o";
}

/// Port names of [`uart_tx`].
pub mod tx_ports {
    pub const VALID: &str = "valid_i";
    pub const DATA: &str = "data_i";
    pub const READY: &str = "ready_o";
    pub const TX: &str = "tx_o";
}

/// Stops elaboration like the `hw` builder does, naming the caller's line.
#[track_caller]
pub(crate) fn elab_fail(message: String) -> ! {
    let loc = std::panic::Location::caller();
    std::panic::panic_any(format!(
        "{}{}:{}:{}: {message}",
        hw::ELAB_ERROR_PREFIX,
        loc.file(),
        loc.line(),
        loc.column()
    ))
}

#[track_caller]
fn check_cpb(clocks_per_bit: u32) {
    if clocks_per_bit < MIN_CLOCKS_PER_BIT {
        elab_fail(format!(
            "UART clocks per bit must be at least {MIN_CLOCKS_PER_BIT}, got {clocks_per_bit}"
        ));
    }
}

/// The receiver `uart_rx_cpb<N>`: `rx_i` (asynchronous) in; `valid_o` pulses
/// for one cycle with the byte on `data_o` (held until the next byte's data
/// bits arrive); `frame_err_o` pulses for a byte whose stop bit was low.
#[track_caller]
pub fn uart_rx(design: &mut Design, clocks_per_bit: u32) -> Rc<ModuleDef> {
    check_cpb(clocks_per_bit);
    let n = clocks_per_bit;
    let name = format!("uart_rx_cpb{n}");
    design.define(&name, &[("clocks_per_bit", n.to_string())], |_, m| {
        m.doc("UART 8N1 receiver: 2-flop synchronizer, mid-bit sampling, framing errors");
        let rx = m.input(rx_ports::RX, Ty::BOOL);
        // Two-flop synchronizer, reset to the idle level.
        let sync1 = m.reg_reset("sync1", Ty::BOOL, 1);
        m.set_next(sync1, rx);
        let sync2 = m.reg_reset("sync2", Ty::BOOL, 1);
        m.set_next(sync2, sync1.q());
        let line = sync2.q();

        let fsm = m.fsm("state", RxState::Idle);
        let cnt_ty = Ty::u(bits_for(n - 1));
        let cnt = m.reg_reset("cnt", cnt_ty, 0);
        let bit = m.reg_reset("bit_idx", Ty::u(3), 0);
        let shift = m.reg_reset("shift", Ty::u(8), 0);
        let valid = m.reg_reset("valid", Ty::BOOL, 0);
        let ferr = m.reg_reset("ferr", Ty::BOOL, 0);
        // The counter's loads for (N-1)/2 cycles, to the middle of the start
        // bit, and for a bit time (it counts down to 0).
        let (half, full) = ((n - 1) / 2 - 1, n - 1);
        // In the framing states the counter runs down to the next sample
        // point (0), where `on_sample` runs and it restarts a bit time.
        let at_sample = |m: &mut ModuleBuilder, on_sample: &dyn Fn(&mut ModuleBuilder)| {
            m.if_(cnt.q().is_eq(0), |m| {
                m.assign(cnt, full);
                on_sample(m);
            })
            .else_(|m| m.assign(cnt, cnt.q() - 1));
        };
        m.assign(valid, 0);
        m.assign(ferr, 0);
        m.fsm_states(fsm, |st| {
            st.state(RxState::Idle, |m| {
                m.if_(!line, |m| {
                    m.assign(cnt, half);
                    fsm.goto(m, RxState::Start);
                });
            })
            .state(RxState::Start, |m| {
                // A start bit that is high again at its middle was a glitch.
                at_sample(m, &|m| {
                    m.assign(bit, 0);
                    m.if_(line, |m| fsm.goto(m, RxState::Idle))
                        .else_(|m| fsm.goto(m, RxState::Data));
                });
            })
            .state(RxState::Data, |m| {
                at_sample(m, &|m| {
                    m.assign(shift, hw::cat(&[line, shift.q().slice(1, 7)]));
                    m.assign(bit, bit.q() + 1);
                    m.if_(bit.q().is_eq(7), |m| fsm.goto(m, RxState::Stop));
                });
            })
            .state(RxState::Stop, |m| {
                at_sample(m, &|m| {
                    m.assign(valid, line);
                    m.assign(ferr, !line);
                    m.if_(line, |m| fsm.goto(m, RxState::Idle))
                        .else_(|m| fsm.goto(m, RxState::WaitHigh));
                });
            })
            .state(RxState::WaitHigh, |m| {
                m.if_(line, |m| fsm.goto(m, RxState::Idle));
            });
        });
        m.output(rx_ports::VALID, valid.q());
        m.output(rx_ports::DATA, shift.q());
        m.output(rx_ports::FRAME_ERR, ferr.q());
    })
}

/// The transmitter `uart_tx_cpb<N>`: a byte on `data_i` with `valid_i` is taken
/// in a cycle when `ready_o` is high; `tx_o` is the line (idle high).
#[track_caller]
pub fn uart_tx(design: &mut Design, clocks_per_bit: u32) -> Rc<ModuleDef> {
    check_cpb(clocks_per_bit);
    let n = clocks_per_bit;
    let name = format!("uart_tx_cpb{n}");
    design.define(&name, &[("clocks_per_bit", n.to_string())], |_, m| {
        m.doc("UART 8N1 transmitter: registered output, back-to-back bytes without gaps");
        let valid = m.input(tx_ports::VALID, Ty::BOOL);
        let data = m.input(tx_ports::DATA, Ty::u(8));
        let frame = m.reg_reset("frame", Ty::u(10), 0x3ff);
        let bits_left = m.reg_reset("bits_left", Ty::u(4), 0);
        let cnt_ty = Ty::u(bits_for(n - 1));
        let cnt = m.reg_reset("cnt", cnt_ty, 0);
        let idle = bits_left.q().is_eq(0);
        let bit_end = m.wire("bit_end", !idle & cnt.q().is_eq(0));
        let ready = m.wire("ready", idle | (bits_left.q().is_eq(1) & bit_end));
        let load = m.wire("load", valid & ready);
        let one = m.lit(Ty::BOOL, 1);
        let zero = m.lit(Ty::BOOL, 0);
        let loaded = hw::cat(&[one, data, zero]);
        let shifted = hw::cat(&[one, frame.q().slice(1, 9)]);
        m.set_next(frame, mux(load, loaded, shifted));
        m.set_enable(frame, load | bit_end);
        m.set_next(bits_left, mux(load, 10, bits_left.q() - 1));
        m.set_enable(bits_left, load | bit_end);
        m.set_next(cnt, mux(load | bit_end, n - 1, cnt.q() - 1));
        m.set_enable(cnt, load | !idle);
        m.output(tx_ports::READY, ready);
        m.output(tx_ports::TX, frame.q().bit(0));
    })
}

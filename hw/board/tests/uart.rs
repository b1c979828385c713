//! The UART receiver and transmitter on the `hw` evaluator: exact frame
//! timing, back-to-back bytes, framing errors, glitches and senders whose
//! clock is a few percent off.

use board::uart::{rx_ports, tx_ports, uart_rx, uart_tx};
use hw::{Design, Evaluator};
use num_bigint::BigUint;

fn evaluator(build: impl FnOnce(&mut Design) -> std::rc::Rc<hw::ModuleDef>) -> Evaluator {
    let mut design = Design::new();
    let top = build(&mut design);
    let mut ev = Evaluator::new(&top).expect("evaluator");
    ev.set_int("rst_i", 1);
    ev.step();
    ev.set_int("rst_i", 0);
    ev
}

fn bit(ev: &Evaluator, port: &str) -> bool {
    ev.get(port) != BigUint::from(0u32)
}

/// The line levels of one 8N1 frame, one per bit: start, data LSB first, stop.
fn frame_bits(byte: u8, stop: bool) -> Vec<bool> {
    let mut v = vec![false];
    v.extend((0..8).map(|i| byte >> i & 1 == 1));
    v.push(stop);
    v
}

/// Drives the receiver's line with `levels`, each held for `cycles(i)` clock
/// cycles, then `tail` idle cycles; returns the bytes and framing errors seen.
struct RxRun {
    bytes: Vec<u8>,
    frame_errors: usize,
}

fn drive_rx(ev: &mut Evaluator, levels: &[(bool, u32)], tail: u32) -> RxRun {
    let mut run = RxRun {
        bytes: Vec::new(),
        frame_errors: 0,
    };
    let mut observe = |ev: &mut Evaluator| {
        ev.eval();
        if bit(ev, rx_ports::VALID) {
            let d = ev.get(rx_ports::DATA);
            run.bytes
                .push(d.to_u32_digits().first().copied().unwrap_or(0) as u8);
        }
        if bit(ev, rx_ports::FRAME_ERR) {
            run.frame_errors += 1;
        }
        ev.step();
    };
    for &(level, cycles) in levels {
        ev.set_int(rx_ports::RX, level as i128);
        for _ in 0..cycles {
            observe(ev);
        }
    }
    ev.set_int(rx_ports::RX, 1);
    for _ in 0..tail {
        observe(ev);
    }
    run
}

/// Line levels for `bytes` sent back to back with `period` clock cycles per
/// bit, in 1/1000 cycle steps (so a sender can be slower or faster than the
/// receiver), with `gap` idle bits between bytes.
fn waveform(bytes: &[(u8, bool)], period_milli: u64, gap: u32) -> Vec<(bool, u32)> {
    let mut out = Vec::new();
    let mut t_milli = 0u64;
    let mut emitted = 0u64;
    let mut push = |level: bool, bits: u64, t_milli: &mut u64| {
        *t_milli += bits * period_milli;
        let until = *t_milli / 1000;
        out.push((level, (until - emitted) as u32));
        emitted = until;
    };
    push(true, 2, &mut t_milli);
    for &(b, stop) in bytes {
        for level in frame_bits(b, stop) {
            push(level, 1, &mut t_milli);
        }
        if gap > 0 {
            push(true, gap as u64, &mut t_milli);
        }
    }
    out
}

#[test]
fn receiver_reads_back_to_back_bytes_at_several_speeds() {
    for n in [4u32, 5, 8, 16, 104] {
        let mut ev = evaluator(|d| uart_rx(d, n));
        let bytes: Vec<(u8, bool)> = [0x00, 0xFF, 0xA5, 0x5A, 0x01, 0x80, 0x3C]
            .iter()
            .map(|&b| (b, true))
            .collect();
        let run = drive_rx(&mut ev, &waveform(&bytes, n as u64 * 1000, 0), 4 * n);
        let want: Vec<u8> = bytes.iter().map(|b| b.0).collect();
        assert_eq!(run.bytes, want, "{n} clocks per bit");
        assert_eq!(run.frame_errors, 0, "{n} clocks per bit");
    }
}

#[test]
fn receiver_tolerates_a_sender_a_few_percent_off() {
    // Mid-bit sampling leaves half a bit over ten bits: +-3% is safe with 16
    // clocks per bit (the error the synchronizer adds is one cycle).
    let n = 16u32;
    let bytes: Vec<(u8, bool)> = (0..24u32).map(|i| ((i * 37 + 11) as u8, true)).collect();
    let want: Vec<u8> = bytes.iter().map(|b| b.0).collect();
    for period in [n as u64 * 970, n as u64 * 1030] {
        let mut ev = evaluator(|d| uart_rx(d, n));
        let run = drive_rx(&mut ev, &waveform(&bytes, period, 0), 4 * n);
        assert_eq!(run.bytes, want, "bit period {period}/1000 cycles");
    }
}

#[test]
fn a_low_stop_bit_is_a_framing_error_and_the_receiver_recovers() {
    let n = 8u32;
    let mut ev = evaluator(|d| uart_rx(d, n));
    // A good byte, a byte with a low stop bit followed by a held-low line (a
    // break), then good bytes again once the line is back high.
    let mut levels = waveform(&[(0x42, true), (0x17, false)], n as u64 * 1000, 0);
    levels.push((false, 30 * n));
    levels.extend(waveform(&[(0x99, true), (0x66, true)], n as u64 * 1000, 0));
    let run = drive_rx(&mut ev, &levels, 4 * n);
    assert_eq!(run.bytes, vec![0x42, 0x99, 0x66]);
    assert_eq!(run.frame_errors, 1, "a break is one error, not many");
}

#[test]
fn a_short_glitch_is_not_a_start_bit() {
    let n = 16u32;
    let mut ev = evaluator(|d| uart_rx(d, n));
    let mut levels = vec![(true, 3 * n), (false, n / 4), (true, 3 * n)];
    levels.extend(waveform(&[(0x5A, true)], n as u64 * 1000, 0));
    let run = drive_rx(&mut ev, &levels, 4 * n);
    assert_eq!(run.bytes, vec![0x5A]);
    assert_eq!(run.frame_errors, 0);
}

/// Runs the transmitter, offering `bytes` as soon as `ready_o` allows; returns
/// the line level of every cycle and the cycles the bytes were taken in.
fn run_tx(n: u32, bytes: &[u8], cycles: usize) -> (Vec<bool>, Vec<usize>) {
    let mut ev = evaluator(|d| uart_tx(d, n));
    let mut line = Vec::new();
    let mut taken = Vec::new();
    let mut next = 0;
    for cycle in 0..cycles {
        let offer = next < bytes.len();
        ev.set_int(tx_ports::VALID, offer as i128);
        ev.set_int(tx_ports::DATA, *bytes.get(next).unwrap_or(&0) as i128);
        ev.eval();
        line.push(bit(&ev, tx_ports::TX));
        if offer && bit(&ev, tx_ports::READY) {
            taken.push(cycle);
            next += 1;
        }
        ev.step();
    }
    (line, taken)
}

#[test]
fn transmitter_sends_exact_frames_back_to_back() {
    for n in [4u32, 7, 16] {
        let bytes = [0xA5u8, 0x00, 0xFF, 0x3C];
        let total = 10 * n as usize * bytes.len() + 20;
        let (line, taken) = run_tx(n, &bytes, total);
        // The first byte is taken at once, each later one exactly a frame later.
        let frame = 10 * n as usize;
        let expected_taken: Vec<usize> = (0..bytes.len()).map(|i| i * frame).collect();
        assert_eq!(taken, expected_taken, "{n} clocks per bit");
        // The line: idle high in the cycle the byte is taken, then the frames
        // without gaps, each bit exactly n cycles.
        assert!(line[0], "idle high");
        let mut expected = Vec::new();
        for &b in &bytes {
            for level in frame_bits(b, true) {
                expected.extend(std::iter::repeat_n(level, n as usize));
            }
        }
        assert_eq!(
            &line[1..1 + expected.len()],
            &expected[..],
            "{n} clocks per bit"
        );
        assert!(line[1 + expected.len()..].iter().all(|&l| l), "idle after");
    }
}

#[test]
fn transmitter_into_receiver_round_trips_every_byte_value() {
    let n = 5u32;
    let bytes: Vec<u8> = (0..=255).collect();
    let total = 10 * n as usize * (bytes.len() + 2);
    let (line, _) = run_tx(n, &bytes, total);
    let mut rx = evaluator(|d| uart_rx(d, n));
    let levels: Vec<(bool, u32)> = line.iter().map(|&l| (l, 1)).collect();
    let run = drive_rx(&mut rx, &levels, 4 * n);
    assert_eq!(run.bytes, bytes);
    assert_eq!(run.frame_errors, 0);
}

#[test]
#[should_panic(expected = "clocks per bit must be at least 4")]
fn too_few_clocks_per_bit_is_an_elaboration_error() {
    let mut design = Design::new();
    uart_rx(&mut design, 3);
}

//! Board tops under Verilator, reached the way a host reaches a real board.
//!
//! [`model`] builds the Verilated board top of a [`BoardBuild`] (the MXU's
//! or the TensorCore's bridge). [`WireUart`] is a `host::Transport` that
//! drives the top's receive pin bit by bit and decodes its transmit pin with
//! mid-bit sampling, cycle by cycle, so the `host::Client` that talks to a
//! real board over a serial port talks to the simulation unchanged. It can
//! also misbehave on purpose (a wrong stop bit, an off baud rate, a corrupted
//! reply byte) for the recovery tests. [`PtyBoard`] puts a wire behind the
//! master end of a pseudo-terminal, so that `host::SerialTransport`, and the
//! `systole-host` binary, open its slave end as they would a USB serial
//! adapter.

use board::{Board, BoardBuild};
use host::Transport;
use serialport::{SerialPort, TTYPort};
use sim::{Model, ModelSpec, PortId, PortSpec};
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The Verilated top of `built`, a build for `board`: its Verilog and
/// waivers, the board's pins as ports, the board clock as the clock.
pub fn model(board: Board, built: &BoardBuild) -> Model {
    let mut spec = ModelSpec::new(built.top.clone());
    for f in &built.files {
        if f.module.is_some() || f.name == hw::emit::WAIVER_FILE {
            spec = spec.source(f.name.clone(), f.text.clone());
        }
    }
    for p in board.pins() {
        spec.ports.push(match p.dir {
            board::PinDir::In => PortSpec::input(p.port, p.width()),
            board::PinDir::Out => PortSpec::output(p.port, p.width()),
        });
    }
    spec.clock = Some(board.clock_port().to_string());
    Model::build(&spec, &built.top).unwrap_or_else(|e| panic!("cannot build {}: {e}", built.top))
}

/// Decodes the transmit pin: a falling edge starts a frame, bits are sampled
/// in their middle.
#[derive(Default)]
struct Decoder {
    /// Cycles since the falling edge, while in a frame.
    t: Option<u32>,
    byte: u8,
}

/// A simulated UART wire to a board top, as a [`Transport`].
pub struct WireUart {
    model: Model,
    board: Board,
    rx: PortId,
    tx: PortId,
    cpb: u32,
    /// The host's bit period, in 1/1000 clock cycles (1000 x clocks per bit
    /// is exact; other values model a host whose baud rate is off).
    pub period_milli: u64,
    /// Level of the stop bits [`Transport::send`] sends (low makes framing
    /// errors).
    pub stop_level: bool,
    decoder: Decoder,
    received: VecDeque<u8>,
    /// Reply frames whose stop bit was low.
    pub framing_errors: usize,
    /// Reply bytes decoded so far.
    pub decoded: usize,
    /// The index (in [`WireUart::decoded`] order) of a reply byte to corrupt:
    /// its bit 4 is flipped on the way to the host.
    pub corrupt_at: Option<usize>,
    /// Time in 1/1000 cycles, for fractional bit periods.
    t_milli: u64,
}

impl WireUart {
    /// Takes the board top `model` of `board` whose UART runs at
    /// `clocks_per_bit`, releases the button, and runs through the PLL's lock
    /// and the power-on reset. The PLL's simulation model passes the
    /// oscillator through, so a simulated cycle is an oscillator cycle and
    /// time is counted at the oscillator's frequency.
    pub fn new(board: Board, model: Model, clocks_per_bit: u32) -> WireUart {
        let mut model = model;
        let (rx_name, tx_name) = board.uart_ports();
        let rx = model.port(rx_name).unwrap();
        let tx = model.port(tx_name).unwrap();
        let (button, pressed) = board.button();
        let button = model.port(button).unwrap();
        model.poke(button, u64::from(!pressed));
        model.poke(rx, 1);
        let mut wire = WireUart {
            model,
            board,
            rx,
            tx,
            cpb: clocks_per_bit,
            period_milli: 1000 * u64::from(clocks_per_bit),
            stop_level: true,
            decoder: Decoder::default(),
            received: VecDeque::new(),
            framing_errors: 0,
            decoded: 0,
            corrupt_at: None,
            t_milli: 0,
        };
        // The PLL's simulation model locks, then the power-on reset runs out.
        wire.run(board::top::SIM_RESET_CYCLES);
        assert_eq!(wire.model.peek(wire.tx), 1, "the transmit pin idles high");
        wire
    }

    /// The model's port `name` (a board pin).
    pub fn port(&self, name: &str) -> PortId {
        self.model
            .port(name)
            .unwrap_or_else(|e| panic!("the board top's pin {name}: {e}"))
    }

    /// The level of an output pin.
    pub fn peek(&self, pin: PortId) -> u64 {
        self.model.peek(pin)
    }

    /// One clock cycle: the edge, then the transmit pin into the decoder.
    fn tick(&mut self) {
        self.model.step();
        let line = self.model.peek(self.tx) == 1;
        let half = self.cpb / 2;
        match self.decoder.t {
            None => {
                if !line {
                    self.decoder.t = Some(0);
                    self.decoder.byte = 0;
                }
            }
            Some(t) => {
                let t = t + 1;
                self.decoder.t = Some(t);
                if t >= half && (t - half).is_multiple_of(self.cpb) {
                    let i = (t - half) / self.cpb;
                    match i {
                        0 if line => self.decoder.t = None, // a glitch, not a start bit
                        0 => {}
                        1..=8 => self.decoder.byte |= u8::from(line) << (i - 1),
                        _ => {
                            if line {
                                let mut byte = self.decoder.byte;
                                if self.corrupt_at == Some(self.decoded) {
                                    byte ^= 0x10;
                                }
                                self.decoded += 1;
                                self.received.push_back(byte);
                            } else {
                                self.framing_errors += 1;
                            }
                            self.decoder.t = None;
                        }
                    }
                }
            }
        }
    }

    /// Runs `cycles` clock cycles with the receive pin as it is.
    pub fn run(&mut self, cycles: u64) {
        for _ in 0..cycles {
            self.tick();
        }
    }

    /// Holds the receive pin at `level` for `bits` of the host's bit periods.
    pub fn drive(&mut self, level: bool, bits: u64) {
        self.model.poke(self.rx, u64::from(level));
        let start = self.t_milli / 1000;
        self.t_milli += bits * self.period_milli;
        let end = self.t_milli / 1000;
        self.run(end - start);
    }

    /// Sends one frame; `stop` is the stop bit's level.
    pub fn send_byte(&mut self, byte: u8, stop: bool) {
        self.drive(false, 1);
        for i in 0..8 {
            self.drive(byte >> i & 1 == 1, 1);
        }
        self.drive(stop, 1);
    }

    /// The decoded reply bytes so far, emptied.
    pub fn take_received(&mut self) -> Vec<u8> {
        self.received.drain(..).collect()
    }

    fn cycles_of(&self, d: Duration) -> u64 {
        (d.as_secs_f64() * self.board.clock_hz() as f64).ceil() as u64
    }
}

impl Transport for WireUart {
    fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        for &b in bytes {
            self.send_byte(b, self.stop_level);
        }
        Ok(())
    }

    fn recv(&mut self, buf: &mut [u8], timeout: Duration) -> io::Result<usize> {
        let mut budget = self.cycles_of(timeout);
        while self.received.is_empty() && budget > 0 {
            self.tick();
            budget -= 1;
        }
        let n = buf.len().min(self.received.len());
        for slot in buf.iter_mut().take(n) {
            *slot = self.received.pop_front().expect("counted");
        }
        Ok(n)
    }

    fn byte_time(&self) -> Duration {
        Duration::from_secs_f64(10.0 * self.cpb as f64 / self.board.clock_hz() as f64)
    }

    fn discard_input(&mut self) -> io::Result<()> {
        self.received.clear();
        Ok(())
    }
}

/// Clock cycles the board runs each time the host has sent nothing new
/// (about a millisecond of simulation), so replies keep coming while the
/// host waits.
const IDLE_CYCLES: u64 = 1000;

/// A [`WireUart`] behind the master end of a pseudo-terminal, as a board
/// behind a USB serial adapter: bytes written to the slave end
/// ([`PtyBoard::path`]) reach the top's receive pin, its transmit pin's
/// bytes come back. Runs in a thread of its own until [`PtyBoard::stop`] (or
/// until dropped).
pub struct PtyBoard {
    path: String,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<usize>>,
    // The slave end stays open so that the master does not see a hang-up
    // between the host's sessions.
    _slave: TTYPort,
}

impl PtyBoard {
    pub fn start(wire: WireUart) -> PtyBoard {
        let mut wire = wire;
        let (mut master, slave) = TTYPort::pair().expect("a pseudo-terminal");
        let path = slave.name().expect("the pseudo-terminal's name");
        let stop = Arc::new(AtomicBool::new(false));
        let stop_board = stop.clone();
        let thread = std::thread::spawn(move || {
            master.set_timeout(Duration::from_millis(1)).unwrap();
            let mut buf = [0u8; 256];
            while !stop_board.load(Ordering::Relaxed) {
                let n = match master.read(&mut buf) {
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::TimedOut => 0,
                    Err(e) => panic!("pty master: {e}"),
                };
                wire.send(&buf[..n]).unwrap();
                if n == 0 {
                    wire.run(IDLE_CYCLES);
                }
                let out = wire.take_received();
                if !out.is_empty() {
                    master.write_all(&out).unwrap();
                }
            }
            wire.framing_errors
        });
        PtyBoard {
            path,
            stop,
            thread: Some(thread),
            _slave: slave,
        }
    }

    /// The slave end's path, for the host to open.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Stops the board and returns the framing errors the wire saw in its
    /// replies.
    pub fn stop(mut self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        let thread = self.thread.take().expect("running until stopped");
        thread.join().expect("the board thread panicked")
    }
}

impl Drop for PtyBoard {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let result = t.join();
            if result.is_err() && !std::thread::panicking() {
                panic!("the board thread panicked");
            }
        }
    }
}

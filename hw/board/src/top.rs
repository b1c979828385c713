//! Board tops and constraint files.
//!
//! A board top is the only module written as text rather than built with
//! `hw`: it makes the core clock and the reset. `hw` modules get `clk_i` and
//! `rst_i` from their parent, so the one module that instantiates the PLL
//! primitive and produces a reset from nothing (a power-on counter that
//! starts from its configuration value, plus a button) has to sit above
//! them. It is a few lines, checked by the same lint, Icarus and Yosys runs
//! as the rest (with the PLL's simulation model, [`crate::pll`]).
//!
//! Both tops run everything, bridge, UARTs and core, on the PLL's output
//! ([`crate::CoreClock`]); they hold the bridge in reset until the PLL
//! reports lock, then for 2^12 core cycles (the iCE40's block RAMs need a
//! few microseconds before they work), and while the reset button is
//! pressed (through a two-flop synchronizer), with the reset itself
//! registered.

use crate::bridge::{bridge_name, ports as bp};
use crate::{Board, BridgeConfig, CoreClock, TcBridgeConfig};
use std::fmt::Write as _;

/// Bits of the power-on reset counter: reset lasts 2^12 cycles after lock.
pub const POR_BITS: u32 = 12;

/// The board top's core clock wire (the PLL's output).
pub const CORE_CLOCK: &str = "core_clk";

/// Oscillator cycles from the start of a simulation (with the PLL's
/// simulation model) until the bridge has left reset, with a few to spare:
/// the model's lock time, the lock synchronizer, the power-on count and the
/// registered reset.
pub const SIM_RESET_CYCLES: u64 = crate::pll::SIM_LOCK_CYCLES as u64 + (1 << POR_BITS) + 8;

/// Direction of a board top's port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PinDir {
    In,
    Out,
}

/// A port of a board top: name, direction, width, package pin(s), purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pin {
    pub port: &'static str,
    pub dir: PinDir,
    /// Package pins, bit 0 first (one per bit).
    pub sites: &'static [&'static str],
    pub what: &'static str,
}

impl Pin {
    pub fn width(&self) -> u32 {
        self.sites.len() as u32
    }

    /// Each bit's name in a constraint file (the port, or `port[bit]` for a
    /// bus) with its package site.
    pub fn bit_sites(&self) -> impl Iterator<Item = (String, &'static str)> + '_ {
        self.sites.iter().enumerate().map(|(bit, &site)| {
            let name = if self.width() == 1 {
                self.port.to_string()
            } else {
                format!("{}[{bit}]", self.port)
            };
            (name, site)
        })
    }
}

/// iCEBreaker v1.0 pins, from Project IceStorm's iCEBreaker example
/// constraints (YosysHQ/icestorm, `examples/icebreaker/icebreaker.pcf`):
/// CLK 35, RX 6, TX 9, BTN_N 10, LEDR_N 11, LEDG_N 37. RX and TX are the
/// FPGA's side of the FT2232H's second channel (the host's second serial port).
pub const ICEBREAKER_PINS: &[Pin] = &[
    Pin {
        port: "CLK",
        dir: PinDir::In,
        sites: &["35"],
        what: "12 MHz oscillator",
    },
    Pin {
        port: "RX",
        dir: PinDir::In,
        sites: &["6"],
        what: "UART from the FTDI (host to FPGA)",
    },
    Pin {
        port: "TX",
        dir: PinDir::Out,
        sites: &["9"],
        what: "UART to the FTDI (FPGA to host)",
    },
    Pin {
        port: "BTN_N",
        dir: PinDir::In,
        sites: &["10"],
        what: "user button, active low: reset",
    },
    Pin {
        port: "LEDR_N",
        dir: PinDir::Out,
        sites: &["11"],
        what: "red LED, active low: an error flag is set",
    },
    Pin {
        port: "LEDG_N",
        dir: PinDir::Out,
        sites: &["37"],
        what: "green LED, active low: a command is in progress",
    },
];

/// ULX3S v2/v3 pins, from the board's reference constraints (emard/ulx3s,
/// `doc/constraints/ulx3s_v20.lpf`): `clk_25mhz` G2, `ftdi_txd` M1 (FPGA
/// receives), `ftdi_rxd` L4 (FPGA transmits), `btn[1]` (FIRE1) R1, `led[7:0]`
/// H3 E1 E2 D1 D2 C1 C2 B2, `wifi_gpio0` L2.
pub const ULX3S_PINS: &[Pin] = &[
    Pin {
        port: "clk_25mhz",
        dir: PinDir::In,
        sites: &["G2"],
        what: "25 MHz oscillator",
    },
    Pin {
        port: "ftdi_txd",
        dir: PinDir::In,
        sites: &["M1"],
        what: "UART from the FTDI (host to FPGA)",
    },
    Pin {
        port: "ftdi_rxd",
        dir: PinDir::Out,
        sites: &["L4"],
        what: "UART to the FTDI (FPGA to host)",
    },
    Pin {
        port: "btn_fire1",
        dir: PinDir::In,
        sites: &["R1"],
        what: "FIRE1 button (btn[1]), active high: reset",
    },
    Pin {
        port: "led",
        dir: PinDir::Out,
        sites: &["B2", "C2", "C1", "D2", "D1", "E2", "E1", "H3"],
        what: "LEDs: 0 command in progress, 1 error flag, 7 heartbeat",
    },
    Pin {
        port: "wifi_gpio0",
        dir: PinDir::Out,
        sites: &["L2"],
        what: "ESP32 GPIO0, held high so the ESP32 does not reset the board",
    },
];

/// Sipeed Tang Nano 20K pins, from LiteX's platform of the board
/// (litex-hub/litex-boards, `litex_boards/platforms/sipeed_tang_nano_20k.py`)
/// and Apicula's example constraints (YosysHQ/apicula,
/// `examples/himbaechel/tangnano20k.cst`): 27 MHz clock 4, UART rx 70 and tx
/// 69 (the BL616's USB serial port), buttons S1 88 and S2 87 (high while
/// pressed: Apicula builds the 20K with `INV_BTN=1`), LEDs 15 to 20 (lit at
/// 0).
pub const TANGNANO20K_PINS: &[Pin] = &[
    Pin {
        port: "sys_clk",
        dir: PinDir::In,
        sites: &["4"],
        what: "27 MHz oscillator",
    },
    Pin {
        port: "uart_rx",
        dir: PinDir::In,
        sites: &["70"],
        what: "UART from the BL616 (host to FPGA)",
    },
    Pin {
        port: "uart_tx",
        dir: PinDir::Out,
        sites: &["69"],
        what: "UART to the BL616 (FPGA to host)",
    },
    Pin {
        port: "btn_s1",
        dir: PinDir::In,
        sites: &["88"],
        what: "button S1, active high: reset",
    },
    Pin {
        port: "led_n",
        dir: PinDir::Out,
        sites: &["15", "16", "17", "18", "19", "20"],
        what: "LEDs, active low: 0 command in progress, 1 error flag, 5 heartbeat",
    },
];

/// Sipeed Tang Nano 9K pins, from LiteX's platform of the board
/// (litex-hub/litex-boards, `litex_boards/platforms/sipeed_tang_nano_9k.py`):
/// 27 MHz clock 52, UART rx 18 and tx 17 (the BL702's USB serial port),
/// buttons S1 4 and S2 3 (low while pressed, on the 1.8 V bank), LEDs 10,
/// 11, 13 to 16 (lit at 0, on the 1.8 V bank).
pub const TANGNANO9K_PINS: &[Pin] = &[
    Pin {
        port: "sys_clk",
        dir: PinDir::In,
        sites: &["52"],
        what: "27 MHz oscillator",
    },
    Pin {
        port: "uart_rx",
        dir: PinDir::In,
        sites: &["18"],
        what: "UART from the BL702 (host to FPGA)",
    },
    Pin {
        port: "uart_tx",
        dir: PinDir::Out,
        sites: &["17"],
        what: "UART to the BL702 (FPGA to host)",
    },
    Pin {
        port: "btn_s1_n",
        dir: PinDir::In,
        sites: &["4"],
        what: "button S1, active low: reset",
    },
    Pin {
        port: "led_n",
        dir: PinDir::Out,
        sites: &["10", "11", "13", "14", "15", "16"],
        what: "LEDs, active low: 0 command in progress, 1 error flag, 5 heartbeat",
    },
];

pub(crate) fn header(out: &mut String, comment: &str, generator: &str, what: &str, params: &str) {
    writeln!(out, "{comment} Generated by {generator}. Do not edit.").unwrap();
    writeln!(out, "{comment}").unwrap();
    writeln!(out, "{comment} {what}").unwrap();
    writeln!(out, "{comment} Design parameters: {params}").unwrap();
}

fn port_decls(pins: &[Pin]) -> String {
    let mut out = String::new();
    for (i, p) in pins.iter().enumerate() {
        let dir = match p.dir {
            PinDir::In => "input ",
            PinDir::Out => "output",
        };
        let range = if p.width() == 1 {
            "      ".to_string()
        } else {
            format!("[{}:0]", p.width() - 1)
        };
        let comma = if i + 1 == pins.len() { " " } else { "," };
        writeln!(
            out,
            "  {dir} wire {range} {:<10}{comma} // {}",
            p.port, p.what
        )
        .unwrap();
    }
    out
}

/// The core clock, the reset logic and the bridge instance, shared by both
/// tops. `osc` is the oscillator pin, `button` a Verilog expression that is
/// 1 while the reset button is pressed (before synchronization).
fn core_text(
    core: BoardCore,
    clock: &CoreClock,
    osc: &str,
    button: &str,
    rx: &str,
    tx: &str,
) -> String {
    let n = POR_BITS;
    let clk = CORE_CLOCK;
    let mut out = String::new();
    writeln!(
        out,
        "  // The core clock: the PLL makes {} MHz from the {} MHz oscillator.\n  \
         // {}.\n  \
         // Everything below runs on it; the UART's bit time is counted in its cycles.",
        clock.mhz_text(),
        crate::pll::mhz_text(f64::from(clock.board().clock_hz())),
        clock.pll().describe()
    )
    .unwrap();
    writeln!(out, "  wire {clk};").unwrap();
    writeln!(out, "  wire pll_locked;").unwrap();
    out.push_str(&crate::pll::instance_verilog(
        &clock.pll(),
        osc,
        clk,
        "pll_locked",
    ));
    writeln!(out).unwrap();
    writeln!(
        out,
        "  // Reset: held until the PLL reports lock (LOCK through two flip-flops),\n  \
         // then for 2^{n} core cycles (the power-on counter starts again whenever\n  \
         // lock is lost; the iCE40's block RAMs need a few microseconds after\n  \
         // configuration), and while the button is pressed (through two\n  \
         // flip-flops). The reset itself is registered."
    )
    .unwrap();
    // Initial values in an `initial` block rather than on the declarations:
    // synthesis takes them as the flip-flops' configuration values either way,
    // and Verilator 5.048 warns (PROCASSINIT) on a declaration's initial value
    // for a variable an always block also assigns.
    writeln!(out, "  reg [{}:0] por_q;", n - 1).unwrap();
    writeln!(out, "  reg [1:0] lock_q;").unwrap();
    writeln!(out, "  reg [1:0] btn_q;").unwrap();
    writeln!(out, "  reg rst_q;").unwrap();
    writeln!(out, "  initial begin").unwrap();
    writeln!(out, "    por_q = {n}'d0;").unwrap();
    writeln!(out, "    lock_q = 2'b00;").unwrap();
    writeln!(out, "    btn_q = 2'b00;").unwrap();
    writeln!(out, "    rst_q = 1'b1;").unwrap();
    writeln!(out, "  end").unwrap();
    writeln!(out, "  wire por_done = &por_q;").unwrap();
    writeln!(out, "  always @(posedge {clk}) begin").unwrap();
    writeln!(out, "    lock_q <= {{lock_q[0], pll_locked}};").unwrap();
    writeln!(out, "    if (!lock_q[1]) begin").unwrap();
    writeln!(out, "      por_q <= {n}'d0;").unwrap();
    writeln!(out, "    end else if (!por_done) begin").unwrap();
    writeln!(out, "      por_q <= por_q + {n}'d1;").unwrap();
    writeln!(out, "    end").unwrap();
    writeln!(out, "    btn_q <= {{btn_q[0], {button}}};").unwrap();
    writeln!(out, "    rst_q <= !por_done | btn_q[1];").unwrap();
    writeln!(out, "  end").unwrap();
    writeln!(out).unwrap();
    writeln!(out, "  wire active;").unwrap();
    writeln!(out, "  wire error;").unwrap();
    let mut conns = vec![
        ("clk_i".to_string(), CORE_CLOCK.to_string()),
        ("rst_i".to_string(), "rst_q".to_string()),
        (bp::UART_RX.to_string(), rx.to_string()),
        (bp::UART_TX.to_string(), tx.to_string()),
        (bp::ACTIVE.to_string(), "active".to_string()),
        (bp::ERROR.to_string(), "error".to_string()),
    ];
    let bridge = match core {
        BoardCore::Mxu(cfg) => bridge_name(cfg),
        BoardCore::TensorCore(cfg) => {
            let wiring = crate::tc_bridge::core_wiring();
            let tc = cfg.core();
            writeln!(
                out,
                "  // The TensorCore beside its bridge: the bridge resets it before every run."
            )
            .unwrap();
            writeln!(out, "  wire core_rst;").unwrap();
            let widths = tensorcore_port_widths(&tc);
            for (port, _) in &wiring {
                let w = widths
                    .iter()
                    .find(|(n, _)| n == port)
                    .map_or(1, |(_, w)| *w);
                let range = if w == 1 {
                    String::new()
                } else {
                    format!(" [{}:0]", w - 1)
                };
                writeln!(out, "  wire{range} tc_{};", &port[..port.len() - 2]).unwrap();
            }
            let mut tconns = vec![
                ("clk_i".to_string(), CORE_CLOCK.to_string()),
                ("rst_i".to_string(), "rst_q | core_rst".to_string()),
            ];
            for (port, bport) in &wiring {
                let wire = format!("tc_{}", &port[..port.len() - 2]);
                tconns.push((port.clone(), wire.clone()));
                conns.push((bport.clone(), wire));
            }
            conns.push((crate::tc_bridge::CORE_RESET.to_string(), "core_rst".into()));
            writeln!(out, "  {} tc (", tensorcore::top_name(&tc)).unwrap();
            for (i, (p, v)) in tconns.iter().enumerate() {
                let comma = if i + 1 == tconns.len() { "" } else { "," };
                writeln!(out, "    .{p:<10} ({v}){comma}").unwrap();
            }
            writeln!(out, "  );").unwrap();
            crate::tc_bridge::tc_bridge_name(cfg)
        }
    };
    writeln!(out, "  {bridge} core (").unwrap();
    for (i, (p, v)) in conns.iter().enumerate() {
        let comma = if i + 1 == conns.len() { "" } else { "," };
        writeln!(out, "    .{p:<10} ({v}){comma}").unwrap();
    }
    writeln!(out, "  );").unwrap();
    out
}

/// The widths of the TensorCore's ports for `tc`, by name.
fn tensorcore_port_widths(tc: &config::TensorCoreConfig) -> Vec<(String, u32)> {
    hw::quiet_elab_errors();
    let mut design = hw::Design::new();
    let top = tensorcore::build(&mut design, tc);
    top.port_list()
        .into_iter()
        .map(|(n, _, ty)| (n, ty.width))
        .collect()
}

/// The core a board top holds: the MXU behind its bridge, or the TensorCore
/// beside its bridge.
#[derive(Debug, Clone, Copy)]
pub enum BoardCore<'a> {
    Mxu(&'a BridgeConfig),
    TensorCore(&'a TcBridgeConfig),
}

/// The Verilog of `clock`'s board's top for the bridge `cfg`.
pub fn top_verilog(clock: &CoreClock, cfg: &BridgeConfig, generator: &str, params: &str) -> String {
    board_top_verilog(clock, BoardCore::Mxu(cfg), generator, params)
}

/// The Verilog of `clock`'s board's top for the TensorCore bridge `cfg`.
pub fn tc_top_verilog(
    clock: &CoreClock,
    cfg: &TcBridgeConfig,
    generator: &str,
    params: &str,
) -> String {
    board_top_verilog(clock, BoardCore::TensorCore(cfg), generator, params)
}

fn board_top_verilog(clock: &CoreClock, cfg: BoardCore, generator: &str, params: &str) -> String {
    let board = clock.board();
    let name = board.top_name();
    let mut out = String::new();
    header(
        &mut out,
        "//",
        generator,
        &format!(
            "Module {name}: {} top: core clock from the PLL, reset, UART pins, LEDs",
            board.description()
        ),
        params,
    );
    writeln!(out, "// Pins: {}", board.pin_source()).unwrap();
    writeln!(out).unwrap();
    writeln!(out, "`default_nettype none").unwrap();
    writeln!(out).unwrap();
    writeln!(out, "module {name} (").unwrap();
    out.push_str(&port_decls(board.pins()));
    writeln!(out, ");").unwrap();
    match board {
        Board::IceBreaker => {
            out.push_str(&core_text(cfg, clock, "CLK", "!BTN_N", "RX", "TX"));
            writeln!(out).unwrap();
            writeln!(out, "  assign LEDG_N = !active;").unwrap();
            writeln!(out, "  assign LEDR_N = !error;").unwrap();
        }
        Board::Ulx3s => {
            out.push_str(&core_text(
                cfg,
                clock,
                "clk_25mhz",
                "btn_fire1",
                "ftdi_txd",
                "ftdi_rxd",
            ));
            writeln!(out).unwrap();
            let beat = heartbeat(&mut out, clock, 7);
            writeln!(out, "  assign led = {{{beat}, 5'b00000, error, active}};").unwrap();
            writeln!(
                out,
                "  // GPIO0 of the ESP32 held high keeps it from rebooting the board."
            )
            .unwrap();
            writeln!(out, "  assign wifi_gpio0 = 1'b1;").unwrap();
        }
        Board::TangNano20k | Board::TangNano9k => {
            let button = match board {
                Board::TangNano20k => "btn_s1",
                _ => "!btn_s1_n",
            };
            out.push_str(&core_text(
                cfg, clock, "sys_clk", button, "uart_rx", "uart_tx",
            ));
            writeln!(out).unwrap();
            let beat = heartbeat(&mut out, clock, 5);
            writeln!(out, "  // The LEDs are lit at 0.").unwrap();
            writeln!(out, "  assign led_n = ~{{{beat}, 3'b000, error, active}};").unwrap();
        }
    }
    writeln!(out, "endmodule").unwrap();
    writeln!(out).unwrap();
    writeln!(out, "`default_nettype wire").unwrap();
    out
}

/// A counter on the core clock whose top bit toggles every 2^(bits-1)
/// cycles (every half second to second at any core clock), for LED `led`;
/// returns the bit's expression.
fn heartbeat(out: &mut String, clock: &CoreClock, led: u32) -> String {
    let bits = 64 - (clock.hz().round() as u64).leading_zeros();
    writeln!(
        out,
        "  // Heartbeat: LED {led} blinks about once a second while the core clock runs."
    )
    .unwrap();
    writeln!(out, "  reg [{}:0] beat_q;", bits - 1).unwrap();
    writeln!(out, "  initial beat_q = {bits}'d0;").unwrap();
    writeln!(out, "  always @(posedge {CORE_CLOCK}) begin").unwrap();
    writeln!(out, "    beat_q <= beat_q + {bits}'d1;").unwrap();
    writeln!(out, "  end").unwrap();
    format!("beat_q[{}]", bits - 1)
}

/// The constraint file of `board` (`.pcf` for nextpnr-ice40, `.lpf` for
/// nextpnr-ecp5, `.cst` for nextpnr-himbaechel's Gowin back end).
pub fn constraints(clock: &CoreClock, generator: &str, params: &str) -> String {
    let board = clock.board();
    let comment = match board {
        Board::TangNano20k | Board::TangNano9k => "//",
        Board::IceBreaker | Board::Ulx3s => "#",
    };
    let mut out = String::new();
    header(
        &mut out,
        comment,
        generator,
        &format!(
            "Pins of {} on the {}.",
            board.top_name(),
            board.description()
        ),
        params,
    );
    writeln!(out, "{comment} Pins: {}", board.pin_source()).unwrap();
    writeln!(out).unwrap();
    match board {
        Board::IceBreaker => {
            for p in board.pins() {
                let pull = if p.port == "BTN_N" {
                    "-pullup yes "
                } else {
                    ""
                };
                writeln!(out, "# {}", p.what).unwrap();
                writeln!(out, "set_io {pull}{} {}", p.port, p.sites[0]).unwrap();
            }
            writeln!(
                out,
                "# The oscillator; nextpnr derives the PLL's output ({} MHz, the core clock) from it.",
                clock.mhz_text()
            )
            .unwrap();
            writeln!(out, "set_frequency CLK {}", board.clock_hz() as f64 / 1e6).unwrap();
        }
        Board::Ulx3s => {
            for p in board.pins() {
                writeln!(out, "# {}", p.what).unwrap();
                let (pull, drive) = match (p.port, p.dir) {
                    ("clk_25mhz", _) => ("NONE", ""),
                    ("btn_fire1", _) => ("DOWN", ""),
                    (_, PinDir::In) => ("UP", ""),
                    ("ftdi_rxd", _) => ("UP", " DRIVE=4"),
                    (_, PinDir::Out) => ("NONE", " DRIVE=4"),
                };
                for (comp, site) in p.bit_sites() {
                    writeln!(out, "LOCATE COMP \"{comp}\" SITE \"{site}\";").unwrap();
                    writeln!(
                        out,
                        "IOBUF PORT \"{comp}\" PULLMODE={pull} IO_TYPE=LVCMOS33{drive};"
                    )
                    .unwrap();
                }
            }
            writeln!(
                out,
                "# The oscillator; nextpnr derives the PLL's output ({} MHz, the core clock) from it.",
                clock.mhz_text()
            )
            .unwrap();
            writeln!(
                out,
                "FREQUENCY PORT \"clk_25mhz\" {} MHZ;",
                board.clock_hz() / 1_000_000
            )
            .unwrap();
        }
        Board::TangNano20k | Board::TangNano9k => {
            for p in board.pins() {
                writeln!(out, "// {}", p.what).unwrap();
                // The 9K's buttons and LEDs are on its 1.8 V bank.
                let io_type = match (board, p.port) {
                    (Board::TangNano9k, "btn_s1_n" | "led_n") => "LVCMOS18",
                    _ => "LVCMOS33",
                };
                let pull = match (p.port, p.dir) {
                    ("sys_clk", _) => "NONE",
                    ("btn_s1", _) => "DOWN",
                    (_, PinDir::In) => "UP",
                    ("uart_tx", _) => "UP",
                    (_, PinDir::Out) => "NONE",
                };
                let drive = match p.dir {
                    PinDir::In => "",
                    PinDir::Out => " DRIVE=8",
                };
                for (port, site) in p.bit_sites() {
                    writeln!(out, "IO_LOC \"{port}\" {site};").unwrap();
                    writeln!(
                        out,
                        "IO_PORT \"{port}\" IO_TYPE={io_type} PULL_MODE={pull}{drive};"
                    )
                    .unwrap();
                }
            }
            writeln!(
                out,
                "// No clock constraint here: nextpnr-himbaechel times the core clock \
                 ({} MHz, the PLL's output) at its --freq.",
                clock.mhz_text()
            )
            .unwrap();
        }
    }
    out
}

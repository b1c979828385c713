//! UART host bridges and board tops around the MXU and the TensorCore.
//!
//! A hobbyist board has a clock, an FTDI serial port and a few LEDs. This crate
//! turns the MXU into something such a board can run: a UART receiver and
//! transmitter ([`uart`]), a command bridge that owns an activation buffer and
//! drives the MXU's handshakes ([`bridge`]), and pin-level tops with their
//! constraint files for the iCEBreaker, the ULX3S and the Sipeed Tang Nano
//! 20K and 9K ([`top`]). The same
//! board top on the ULX3S runs the TensorCore instead ([`tc_bridge`],
//! [`build_tc_board`]): a bridge that holds its program memory and host
//! windows, writes its weight and bias memories and runs programs to `HALT`
//! (protocol version 2), with the core beside it.
//!
//! ```text
//!  host ──UART──► uart_rx ─► bridge FSM ─┬─► activation buffer ─► MXU a_* ─┐
//!                                        ├─► weight row ─────────► MXU w_* │
//!  host ◄─UART─── uart_tx ◄─ shift reg ◄─┴─◄ accumulator read ◄── MXU acc_* ┘
//! ```
//!
//! Design decisions:
//! - **A binary request/reply protocol** (`PROTOCOL.md`, constants in
//!   [`protocol`]): an 8-byte header (SYNC, opcode, three little-endian u16
//!   fields) and a payload whose length follows from the header. Every command
//!   gets a reply, a status byte and a CRC-8 over the whole exchange, so a host
//!   without RTS/CTS has flow control (it sends the next command after the
//!   reply) and detects corruption either way. Bad opcodes and out-of-range
//!   fields are answered with an error status, never a hang; a half-received
//!   command is dropped after a timeout (about 10,000 bit times).
//! - **The host does the tiling**, exactly as the simulator's MXU driver does:
//!   the bridge only buffers activation rows, passes weight tiles to the MXU's
//!   weight FIFO and streams one tile's rows per MATMUL command (consecutive
//!   rows, first row flagged, distinct accumulator rows: the MXU's contract is
//!   checked by the bridge, not trusted to the host). A serial link is orders
//!   of magnitude slower than the array, so simple sequencing costs nothing
//!   that matters.
//! - **One clock, one reset, from the board.** The bridge, its UARTs and the
//!   MXU are `hw` modules with the usual synchronous reset; the board top
//!   (plain Verilog, see [`top`]) makes that reset from a power-on counter and
//!   a button. The UART receiver synchronizes its pin with two flip-flops.
//! - **Everything is a generator parameter**: the array ([`config::MxuConfig`]),
//!   the activation buffer depth and the clocks per bit. Board defaults live
//!   in one table, [`Board::defaults`].
//! - **A synthesis recipe with every build** ([`yosys`]): a Yosys script and
//!   the same recipe as a Tcl file for FuseSoC, because stock Yosys flows map
//!   more multipliers to DSP blocks than the part has and, on iCE40, pack the
//!   partial-sum chain into DSP accumulators (`ice40_dsp`) in a netlist that
//!   does not simulate like the RTL.
//! - **The TensorCore beside its bridge, not inside it.** The bridge resets
//!   the core before every RUN (counters from zero, `HALT` cleared, memories
//!   kept), and an `hw` instance takes its parent's reset, so the board top
//!   instantiates both and gives the core `rst_q | core_rst`. The bridge
//!   feeds the instruction port from its program memory read one word ahead
//!   and answers the host input port from a synchronous memory read at the
//!   row the core asks for next cycle, so the core runs exactly as its timing
//!   contract says and its counters are the golden cycle model's. The
//!   TensorCore does not fit the iCEBreaker (refused with one line).
//! - **Independent host.** The `host` crate implements the protocol from
//!   `PROTOCOL.md` without depending on this crate; the tests run the host
//!   library against the Verilated board tops at the UART wire level.

pub mod bridge;
pub mod framing;
pub mod pll;
pub mod protocol;
pub mod smoke;
pub mod tc_bridge;
pub mod top;
pub mod uart;
pub mod yosys;

pub use bridge::{bridge_name, build_bridge};
pub use pll::PllSetting;
pub use tc_bridge::{build_tc_bridge, tc_bridge_name};
pub use top::{Pin, PinDir};

use config::{ConfigError, ElemType, MxuConfig, TensorCoreConfig};
use hw::{catch_elab, emit_design, Design, EmittedFile, Header};

/// Serial speed of the board tops unless another is asked for.
pub const DEFAULT_BAUD: u32 = 115_200;

/// Largest relative error between the requested baud rate and the one the
/// clock can make (clock / round(clock / baud)).
pub const MAX_BAUD_ERROR: f64 = 0.02;

/// The bridge's generator parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BridgeConfig {
    mxu: MxuConfig,
    clocks_per_bit: u32,
    act_rows: u32,
}

impl BridgeConfig {
    /// A validated configuration: `clocks_per_bit` in 4..=65535, `act_rows`
    /// (rows of the activation buffer) a power of two in 2..=65536.
    pub fn new(mxu: MxuConfig, clocks_per_bit: u32, act_rows: u32) -> Result<Self, ConfigError> {
        if !(uart::MIN_CLOCKS_PER_BIT..=u16::MAX as u32).contains(&clocks_per_bit) {
            return Err(ConfigError(format!(
                "UART clocks per bit must be between {} and {}, got {clocks_per_bit}",
                uart::MIN_CLOCKS_PER_BIT,
                u16::MAX
            )));
        }
        if !(2..=65536).contains(&act_rows) || !act_rows.is_power_of_two() {
            return Err(ConfigError(format!(
                "activation buffer rows must be a power of two between 2 and 65536, got {act_rows}"
            )));
        }
        Ok(BridgeConfig {
            mxu,
            clocks_per_bit,
            act_rows,
        })
    }

    pub fn mxu(&self) -> MxuConfig {
        self.mxu
    }

    pub fn clocks_per_bit(&self) -> u32 {
        self.clocks_per_bit
    }

    /// Rows of the activation buffer (each holds R operands).
    pub fn act_rows(&self) -> u32 {
        self.act_rows
    }

    /// The command timeout is 2^this cycles: the smallest power of two that
    /// is at least 10,240 bit times (1,024 bytes; 89 ms at 115,200 baud).
    pub fn timeout_log2(&self) -> u32 {
        timeout_log2_for(self.clocks_per_bit)
    }

    /// Clock cycles after which a half-received command is abandoned.
    pub fn timeout_cycles(&self) -> u64 {
        1u64 << self.timeout_log2()
    }

    /// Parameters as (name, value) pairs, for file headers.
    pub fn params(&self) -> Vec<(String, String)> {
        let mut p = self.mxu.params();
        p.push(("act_rows".into(), self.act_rows.to_string()));
        p.push(("clocks_per_bit".into(), self.clocks_per_bit.to_string()));
        p
    }
}

/// The command timeout of a bridge with `clocks_per_bit`: 2^this cycles,
/// the smallest power of two that is at least 10,240 bit times.
fn timeout_log2_for(clocks_per_bit: u32) -> u32 {
    let cycles = clocks_per_bit as u64 * 10 * 1024;
    64 - (cycles - 1).leading_zeros()
}

/// The TensorCore bridge's generator parameters: the core, the UART, and the
/// memories the bridge holds for the core's host ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TcBridgeConfig {
    core: TensorCoreConfig,
    clocks_per_bit: u32,
    program_words: u32,
    input_rows: u32,
    output_rows: u32,
}

impl TcBridgeConfig {
    /// A validated configuration: `clocks_per_bit` in 4..=65535; the
    /// program memory (words), the host input window (rows of R int8) and
    /// the host output window (rows of C int32) powers of two in 2..=65536;
    /// the core's weight and bias memories at most 65536 rows (the
    /// protocol's 16-bit row fields).
    pub fn new(
        core: TensorCoreConfig,
        clocks_per_bit: u32,
        program_words: u32,
        input_rows: u32,
        output_rows: u32,
    ) -> Result<Self, ConfigError> {
        if !(uart::MIN_CLOCKS_PER_BIT..=u16::MAX as u32).contains(&clocks_per_bit) {
            return Err(ConfigError(format!(
                "UART clocks per bit must be between {} and {}, got {clocks_per_bit}",
                uart::MIN_CLOCKS_PER_BIT,
                u16::MAX
            )));
        }
        for (what, v) in [
            ("program words", program_words),
            ("input window rows", input_rows),
            ("output window rows", output_rows),
        ] {
            if !(2..=65536).contains(&v) || !v.is_power_of_two() {
                return Err(ConfigError(format!(
                    "{what} must be a power of two between 2 and 65536, got {v}"
                )));
            }
        }
        for (what, v) in [
            ("weight rows", core.weight_rows()),
            ("bias rows", core.bias_rows()),
        ] {
            if v > 65536 {
                return Err(ConfigError(format!(
                    "a board build addresses at most 65536 {what} (16-bit row fields), got {v}"
                )));
            }
        }
        Ok(TcBridgeConfig {
            core,
            clocks_per_bit,
            program_words,
            input_rows,
            output_rows,
        })
    }

    pub fn core(&self) -> TensorCoreConfig {
        self.core
    }

    pub fn clocks_per_bit(&self) -> u32 {
        self.clocks_per_bit
    }

    /// Words of the program memory (128-bit instructions).
    pub fn program_words(&self) -> u32 {
        self.program_words
    }

    /// Rows of the host input window (R int8 each).
    pub fn input_rows(&self) -> u32 {
        self.input_rows
    }

    /// Rows of the host output window (C int32 each).
    pub fn output_rows(&self) -> u32 {
        self.output_rows
    }

    /// The command timeout is 2^this cycles (as [`BridgeConfig::timeout_log2`]).
    pub fn timeout_log2(&self) -> u32 {
        timeout_log2_for(self.clocks_per_bit)
    }

    /// Parameters as (name, value) pairs, for file headers.
    pub fn params(&self) -> Vec<(String, String)> {
        let mut p = self.core.params();
        p.push(("program_words".into(), self.program_words.to_string()));
        p.push(("input_rows".into(), self.input_rows.to_string()));
        p.push(("output_rows".into(), self.output_rows.to_string()));
        p.push(("clocks_per_bit".into(), self.clocks_per_bit.to_string()));
        p
    }
}

/// The TensorCore a board build gets unless the user picks another, and the
/// bridge's memories.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TcBoardDefaults {
    pub core: TensorCoreConfig,
    pub program_words: u32,
    pub input_rows: u32,
    pub output_rows: u32,
    /// The core clock (MHz) the build asks the PLL for.
    pub core_mhz: f64,
}

/// The board-independent defaults of one board: the array it gets unless the
/// user picks another, and the activation buffer depth.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BoardDefaults {
    pub rows: u32,
    pub cols: u32,
    pub dtype: ElemType,
    pub acc_rows: u32,
    pub act_rows: u32,
    /// The core clock (MHz) the build asks the PLL for.
    pub core_mhz: f64,
}

/// The boards with a top and constraints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Board {
    /// 1BitSquared iCEBreaker: Lattice iCE40 UP5K, 12 MHz, FT2232H.
    IceBreaker,
    /// Radiona ULX3S: Lattice ECP5 LFE5U-85F, 25 MHz, FT231X.
    Ulx3s,
    /// Sipeed Tang Nano 20K: Gowin GW2AR-LV18QN88C8/I7, 27 MHz, BL616.
    TangNano20k,
    /// Sipeed Tang Nano 9K: Gowin GW1NR-LV9QN88PC6/I5, 27 MHz, BL702.
    TangNano9k,
}

impl Board {
    pub const ALL: [Board; 4] = [
        Board::IceBreaker,
        Board::Ulx3s,
        Board::TangNano20k,
        Board::TangNano9k,
    ];

    /// The array each board gets by default: the largest that places and
    /// routes at the board clock with the build's own synthesis recipe
    /// ([`yosys`]: multipliers in DSPs up to the part's count, no
    /// `ice40_dsp`) and nextpnr (seed 1). iCEBreaker: int8 4x4 uses 4,330 of
    /// the UP5K's 5,280 logic cells (82%), all 8 DSPs and 20 of 30 block RAMs,
    /// Fmax 26 MHz; 5x5 needs 126% of the cells. (Yosys' stock `synth_ice40`
    /// without DSPs needs 128% for 4x4; with `-dsp` its netlist does not
    /// simulate like the RTL.)
    /// ULX3S: int8 12x12 keeps every multiplier in one of the 85F's 156 DSPs;
    /// the FPGA report (`fpga` crate) places larger MXUs with LUT multipliers.
    /// Tang Nano 20K and 9K: the largest that place and route, int8 10x10
    /// and 6x6 ([`TANGNANO20K_MXU_SIZE`], [`TANGNANO9K_MXU_SIZE`]).
    pub fn defaults(self) -> BoardDefaults {
        match self {
            Board::IceBreaker => BoardDefaults {
                rows: 4,
                cols: 4,
                dtype: ElemType::Int8,
                acc_rows: 64,
                act_rows: 256,
                core_mhz: ICEBREAKER_MXU_MHZ,
            },
            Board::Ulx3s => BoardDefaults {
                rows: 12,
                cols: 12,
                dtype: ElemType::Int8,
                acc_rows: 256,
                act_rows: 1024,
                core_mhz: ULX3S_MXU_MHZ,
            },
            Board::TangNano20k => BoardDefaults {
                rows: TANGNANO20K_MXU_SIZE,
                cols: TANGNANO20K_MXU_SIZE,
                dtype: ElemType::Int8,
                acc_rows: 256,
                act_rows: 1024,
                core_mhz: TANGNANO20K_MXU_MHZ,
            },
            Board::TangNano9k => BoardDefaults {
                rows: TANGNANO9K_MXU_SIZE,
                cols: TANGNANO9K_MXU_SIZE,
                dtype: ElemType::Int8,
                acc_rows: 256,
                act_rows: 1024,
                core_mhz: TANGNANO9K_MXU_MHZ,
            },
        }
    }

    /// The default array as an MXU configuration.
    pub fn default_mxu(self) -> MxuConfig {
        let d = self.defaults();
        MxuConfig::with_acc_rows(d.rows, d.cols, d.dtype, d.acc_rows)
            .expect("board defaults are valid")
    }

    /// The TensorCore board build's defaults, or why the board cannot take
    /// one (one line). ULX3S: a 4x4 core at pipeline depth 4 (the
    /// TensorCore's `fmax` depth; the board build closes at
    /// [`ULX3S_TC_MHZ`], where the depth-0 core closed at 28.571 MHz) with
    /// 1,024-row unified buffer and weight memory, a 1,024-word program
    /// memory and 1,024-row host windows. Tang Nano 20K: the same memories
    /// around a 6x6 core ([`TANGNANO20K_TC_SIZE`]). The iCEBreaker's UP5K has
    /// 5,280 logic cells: the bare 4x4 MXU build already uses 82% of them;
    /// the Tang Nano 9K's GW1NR-9 has too few block RAMs and LUTs.
    pub fn tensorcore_defaults(self) -> Result<TcBoardDefaults, String> {
        match self {
            Board::IceBreaker => Err(
                "the TensorCore does not fit the iCEBreaker's iCE40 UP5K (a 4x4 core needs about \
                 5,600 LUTs, the UP5K has 5,280 logic cells and the 4x4 MXU build alone uses 82%); \
                 use --board ulx3s"
                    .into(),
            ),
            Board::Ulx3s => Ok(TcBoardDefaults {
                core: TensorCoreConfig::with(4, 4, 64, 1024, 1024, 64, 4)
                    .and_then(|core| core.with_depth(ULX3S_TC_DEPTH))
                    .expect("board defaults are valid"),
                program_words: 1024,
                input_rows: 1024,
                output_rows: 1024,
                core_mhz: ULX3S_TC_MHZ,
            }),
            Board::TangNano20k => Ok(TcBoardDefaults {
                core: TensorCoreConfig::with(
                    TANGNANO20K_TC_SIZE,
                    TANGNANO20K_TC_SIZE,
                    64,
                    1024,
                    1024,
                    64,
                    4,
                )
                .and_then(|core| core.with_depth(TANGNANO20K_TC_DEPTH))
                .expect("board defaults are valid"),
                program_words: 1024,
                input_rows: 1024,
                output_rows: 1024,
                core_mhz: TANGNANO20K_TC_MHZ,
            }),
            Board::TangNano9k => Err(TANGNANO9K_TC_REFUSAL.into()),
        }
    }

    /// The name used on command lines.
    pub fn name(self) -> &'static str {
        match self {
            Board::IceBreaker => "icebreaker",
            Board::Ulx3s => "ulx3s",
            Board::TangNano20k => "tangnano20k",
            Board::TangNano9k => "tangnano9k",
        }
    }

    /// The board, FPGA and serial chip in words.
    pub fn description(self) -> &'static str {
        match self {
            Board::IceBreaker => "iCEBreaker (iCE40 UP5K-SG48, FT2232H)",
            Board::Ulx3s => "ULX3S (ECP5 LFE5U-85F-6BG381C, FT231X)",
            Board::TangNano20k => "Tang Nano 20K (Gowin GW2AR-LV18QN88C8/I7, BL616)",
            Board::TangNano9k => "Tang Nano 9K (Gowin GW1NR-LV9QN88PC6/I5, BL702)",
        }
    }

    /// Where the pin numbers come from.
    pub fn pin_source(self) -> &'static str {
        match self {
            Board::IceBreaker => {
                "Project IceStorm's iCEBreaker example, YosysHQ/icestorm examples/icebreaker/icebreaker.pcf"
            }
            Board::Ulx3s => "the ULX3S reference constraints, emard/ulx3s doc/constraints/ulx3s_v20.lpf",
            Board::TangNano20k => {
                "LiteX's Tang Nano 20K platform, litex-hub/litex-boards \
                 litex_boards/platforms/sipeed_tang_nano_20k.py, and Apicula's \
                 YosysHQ/apicula examples/himbaechel/tangnano20k.cst"
            }
            Board::TangNano9k => {
                "LiteX's Tang Nano 9K platform, litex-hub/litex-boards \
                 litex_boards/platforms/sipeed_tang_nano_9k.py"
            }
        }
    }

    /// The board oscillator's frequency.
    pub fn clock_hz(self) -> u32 {
        match self {
            Board::IceBreaker => 12_000_000,
            Board::Ulx3s => 25_000_000,
            Board::TangNano20k | Board::TangNano9k => 27_000_000,
        }
    }

    /// The Verilog name of the board top.
    pub fn top_name(self) -> &'static str {
        match self {
            Board::IceBreaker => "systole_icebreaker",
            Board::Ulx3s => "systole_ulx3s",
            Board::TangNano20k => "systole_tangnano20k",
            Board::TangNano9k => "systole_tangnano9k",
        }
    }

    /// The top's ports and their pins.
    pub fn pins(self) -> &'static [Pin] {
        match self {
            Board::IceBreaker => top::ICEBREAKER_PINS,
            Board::Ulx3s => top::ULX3S_PINS,
            Board::TangNano20k => top::TANGNANO20K_PINS,
            Board::TangNano9k => top::TANGNANO9K_PINS,
        }
    }

    /// The clock port of the top.
    pub fn clock_port(self) -> &'static str {
        self.pins()[0].port
    }

    /// The UART ports of the top: (FPGA receives, FPGA transmits).
    pub fn uart_ports(self) -> (&'static str, &'static str) {
        (self.pins()[1].port, self.pins()[2].port)
    }

    /// The reset button's port and the level that presses it.
    pub fn button(self) -> (&'static str, bool) {
        match self {
            Board::IceBreaker => ("BTN_N", false),
            Board::Ulx3s => ("btn_fire1", true),
            Board::TangNano20k => ("btn_s1", true),
            Board::TangNano9k => ("btn_s1_n", false),
        }
    }

    /// The constraint file's name.
    pub fn constraint_file(self) -> &'static str {
        match self {
            Board::IceBreaker => "icebreaker.pcf",
            Board::Ulx3s => "ulx3s.lpf",
            Board::TangNano20k => "tangnano20k.cst",
            Board::TangNano9k => "tangnano9k.cst",
        }
    }

    /// The board's Gowin device, for the Gowin boards.
    pub fn gowin_device(self) -> Option<pll::GowinDevice> {
        match self {
            Board::IceBreaker | Board::Ulx3s => None,
            Board::TangNano20k => Some(pll::GowinDevice::Gw2ar18),
            Board::TangNano9k => Some(pll::GowinDevice::Gw1nr9),
        }
    }
}

impl std::fmt::Display for Board {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Board {
    type Err = String;
    fn from_str(s: &str) -> Result<Board, String> {
        Board::ALL
            .into_iter()
            .find(|b| b.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Board::ALL.iter().map(|b| b.name()).collect();
                format!(
                    "unknown board '{s}' (expected one of: {})",
                    names.join(", ")
                )
            })
    }
}

/// The iCEBreaker MXU build's core clock unless `--core-mhz` asks for
/// another (MHz): the highest the default array (int8 4x4) closes at through
/// the build's recipe and nextpnr-ice40 (seed 1); see docs/boards.md.
pub const ICEBREAKER_MXU_MHZ: f64 = 26.25;

/// The ULX3S MXU build's core clock unless `--core-mhz` asks for another
/// (MHz): the clock the default array (int8 12x12) is known to place and
/// route at (the oscillator's, before the PLL); a higher one is not measured
/// yet (docs/boards.md).
pub const ULX3S_MXU_MHZ: f64 = 25.0;

/// The ULX3S TensorCore build's core clock unless `--core-mhz` asks for
/// another (MHz): the default core (4x4, depth [`ULX3S_TC_DEPTH`]) closes
/// at it through the build's recipe and nextpnr-ecp5 (seed 1: 80.42 MHz
/// routed against 75, with the bridge's instruction port registered), 25
/// MHz x 3; see docs/boards.md.
pub const ULX3S_TC_MHZ: f64 = 75.0;

/// The ULX3S TensorCore build's core pipeline depth unless `--depth` asks
/// for another: the TensorCore's `fmax` depth. At depth 0 the same build
/// closes at 28.571 MHz; depth 4 costs about 2,100 flip-flops and no
/// throughput the host sees (the MXU stays busy within 0.2%).
pub const ULX3S_TC_DEPTH: u32 = 4;

/// The Tang Nano 20K MXU build's array (int8, square) unless the user picks
/// another: the largest that places and routes on the GW2AR-18 with the
/// build's recipe and nextpnr-himbaechel (seed 1). int8 10x10: 10,727 LUT4s
/// and 2,894 ALUs of 20,736 LUT places (66%), 86 of 96 MULT9X9 sites, 23 of
/// 46 BSRAMs; see docs/boards.md for the larger ones tried.
pub const TANGNANO20K_MXU_SIZE: u32 = 10;

/// The Tang Nano 20K MXU build's core clock unless `--core-mhz` asks for
/// another (MHz): the default array closes at it (seed 1: 93.69 MHz routed
/// against 81), 27 MHz x 3 from the rPLL; see docs/boards.md.
pub const TANGNANO20K_MXU_MHZ: f64 = 81.0;

/// The Tang Nano 20K TensorCore build's array (square) unless the user
/// picks another: the largest that places and routes on the GW2AR-18 with
/// the build's 1,024-row memories. 6x6 takes all 46 BSRAMs; 7x7's products
/// would outnumber the MULT9X9 sites the recipe fills.
pub const TANGNANO20K_TC_SIZE: u32 = 6;

/// The Tang Nano 20K TensorCore build's core pipeline depth unless `--depth`
/// asks for another: the TensorCore's `fmax` depth, as on the ULX3S.
pub const TANGNANO20K_TC_DEPTH: u32 = 4;

/// The Tang Nano 20K TensorCore build's core clock unless `--core-mhz` asks
/// for another (MHz): the default core closes at it (seed 1: 106.96 MHz
/// routed against 81), 27 MHz x 3.
pub const TANGNANO20K_TC_MHZ: f64 = 81.0;

/// The Tang Nano 9K MXU build's array (int8, square) unless the user picks
/// another: the largest that places and routes on the GW1NR-9 (7x7 needs
/// 92% of its LUT4s besides its ALUs and does not place).
pub const TANGNANO9K_MXU_SIZE: u32 = 6;

/// The Tang Nano 9K MXU build's core clock unless `--core-mhz` asks for
/// another (MHz): the default array closes at it (seed 1: 73.87 MHz routed
/// against 67.5, the bridge's command decoder the longest path), 27 MHz x
/// 5 / 2.
pub const TANGNANO9K_MXU_MHZ: f64 = 67.5;

/// Why the Tang Nano 9K takes no TensorCore build (one line).
const TANGNANO9K_TC_REFUSAL: &str =
    "the TensorCore does not fit the Tang Nano 9K's GW1NR-9 (the 4x4 core with its board \
     memories takes 34 block RAMs and about 9,900 LUT4s and ALUs on the GW2AR-18; the GW1NR-9 \
     has 26 and 8,640); use --board tangnano20k or ulx3s";

/// The clock a board build runs at: the board's PLL set to make it from the
/// oscillator. The bridge, its UARTs and the core all run on it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CoreClock {
    board: Board,
    requested_mhz: f64,
    pll: PllSetting,
}

impl CoreClock {
    /// The PLL setting for `mhz` on `board` (as icepll or ecppll would pick
    /// it), refused in one line when the PLL cannot make it or the nearest
    /// it makes is more than [`pll::MAX_CORE_CLOCK_ERROR`] away.
    pub fn new(board: Board, mhz: f64) -> Result<CoreClock, ConfigError> {
        if !mhz.is_finite() || mhz <= 0.0 {
            return Err(ConfigError(format!(
                "the core clock must be a positive frequency in MHz, got {mhz}"
            )));
        }
        let pll = match board {
            Board::IceBreaker => {
                pll::Ice40Pll::for_output(board.clock_hz(), mhz).map(PllSetting::Ice40)
            }
            Board::Ulx3s => pll::Ecp5Pll::for_output(board.clock_hz(), mhz).map(PllSetting::Ecp5),
            Board::TangNano20k | Board::TangNano9k => pll::GowinPll::for_output(
                board.clock_hz(),
                board.gowin_device().expect("a Gowin board"),
                mhz,
            )
            .map(PllSetting::Gowin),
        }
        .map_err(|e| ConfigError(format!("--core-mhz {mhz}: {e}")))?;
        let achieved = pll.out_hz() / 1e6;
        let error = (achieved - mhz).abs() / mhz;
        if error > pll::MAX_CORE_CLOCK_ERROR {
            return Err(ConfigError(format!(
                "--core-mhz {mhz}: the {} PLL cannot make it from the {} MHz oscillator \
                 (nearest {} MHz, {:.1}% off)",
                board,
                pll::mhz_text(f64::from(board.clock_hz())),
                pll::mhz_text(pll.out_hz()),
                error * 100.0
            )));
        }
        Ok(CoreClock {
            board,
            requested_mhz: mhz,
            pll,
        })
    }

    pub fn board(&self) -> Board {
        self.board
    }

    /// The frequency asked for, MHz.
    pub fn requested_mhz(&self) -> f64 {
        self.requested_mhz
    }

    pub fn pll(&self) -> PllSetting {
        self.pll
    }

    /// The frequency the PLL makes, Hz (exact: the oscillator times a ratio
    /// of the dividers).
    pub fn hz(&self) -> f64 {
        self.pll.out_hz()
    }

    /// The frequency the PLL makes, whole Hz (for the UART's clocks per bit).
    pub fn hz_u32(&self) -> u32 {
        self.hz().round() as u32
    }

    /// The frequency the PLL makes in MHz, as a short text ("22.5").
    pub fn mhz_text(&self) -> String {
        pll::mhz_text(self.hz())
    }
}

/// Clocks per bit for `baud` on a `clock_hz` clock: the nearest integer, if
/// the rate it gives is within [`MAX_BAUD_ERROR`] of `baud` and the receiver
/// can sample it.
pub fn clocks_per_bit(clock_hz: u32, baud: u32) -> Result<u32, ConfigError> {
    if baud == 0 {
        return Err(ConfigError("baud rate must be at least 1".into()));
    }
    let cpb = ((clock_hz as u64 + baud as u64 / 2) / baud as u64) as u32;
    if cpb < uart::MIN_CLOCKS_PER_BIT {
        return Err(ConfigError(format!(
            "{baud} baud is too fast for a {} MHz clock (at most {} baud)",
            clock_hz as f64 / 1e6,
            clock_hz / uart::MIN_CLOCKS_PER_BIT
        )));
    }
    if cpb > u16::MAX as u32 {
        return Err(ConfigError(format!(
            "{baud} baud is too slow for a {} MHz clock",
            clock_hz as f64 / 1e6
        )));
    }
    let actual = clock_hz as f64 / cpb as f64;
    let error = (actual - baud as f64).abs() / baud as f64;
    if error > MAX_BAUD_ERROR {
        return Err(ConfigError(format!(
            "{baud} baud cannot be made from a {} MHz clock (nearest is {actual:.0} baud, {:.1}% off)",
            clock_hz as f64 / 1e6,
            error * 100.0
        )));
    }
    Ok(cpb)
}

/// Everything one board needs, in memory.
pub struct BoardBuild {
    /// The board top's module name.
    pub top: String,
    /// Verilog files (children first, the board top last), `waivers.vlt`,
    /// `files.f`, the constraint file, the smoke test (`<top>_tb.v`, not in
    /// `files.f`) and the FuseSoC core of the build (`<top>.core`).
    pub files: Vec<EmittedFile>,
    /// Distinct modules, the board top included.
    pub modules: usize,
}

/// Elaborates the bridge for `cfg` and writes the board top and constraints
/// for `clock`'s board around it, everything on `clock`. `header` names the
/// generator and the design parameters for every file.
pub fn build_board(
    clock: &CoreClock,
    cfg: &BridgeConfig,
    header: &Header,
) -> Result<BoardBuild, String> {
    let board = clock.board();
    hw::quiet_elab_errors();
    let (design, core) = catch_elab(|| {
        let mut design = Design::new();
        let core = build_bridge(&mut design, cfg);
        (design, core)
    })
    .map_err(|e| e.to_string())?;
    let emitted = emit_design(&design, &core, header);
    let modules = design.hierarchy(&core).len() + 1;
    let params = params_text(header);
    let top_text = top::top_verilog(clock, cfg, &header.generator, &params);
    let smoke = smoke::testbench_verilog(board, cfg, &header.generator, &params);
    let recipe = yosys::board_recipe(board, board.top_name(), &cfg.mxu);
    Ok(assemble(
        clock, emitted, top_text, smoke, recipe, header, &params, modules,
    ))
}

/// Elaborates the TensorCore and its bridge for `cfg` and writes the board
/// top (both side by side) and constraints for `clock`'s board, everything
/// on `clock`. Refuses a board the TensorCore does not fit (one line).
pub fn build_tc_board(
    clock: &CoreClock,
    cfg: &TcBridgeConfig,
    header: &Header,
) -> Result<BoardBuild, String> {
    let board = clock.board();
    board.tensorcore_defaults()?;
    hw::quiet_elab_errors();
    let (design, bridge, tc) = catch_elab(|| {
        let mut design = Design::new();
        let bridge = build_tc_bridge(&mut design, cfg);
        let tc = tensorcore::build(&mut design, &cfg.core());
        (design, bridge, tc)
    })
    .map_err(|e| e.to_string())?;
    // The two hierarchies side by side: their module files (the core's
    // first), and one waiver file with both halves.
    let core_files = emit_design(&design, &tc, header);
    let bridge_files = emit_design(&design, &bridge, header);
    let mut emitted: Vec<EmittedFile> = core_files
        .iter()
        .filter(|f| f.module.is_some())
        .cloned()
        .collect();
    for f in &bridge_files {
        if f.module.is_some() && !emitted.iter().any(|e| e.name == f.name) {
            emitted.push(f.clone());
        }
    }
    let waiver = |files: &[EmittedFile]| {
        files
            .iter()
            .find(|f| f.name == hw::emit::WAIVER_FILE)
            .expect("emit_design writes the waiver file")
            .text
            .clone()
    };
    let mut waivers = waiver(&bridge_files);
    for line in waiver(&core_files).lines() {
        if !line.starts_with("// Lint waivers for")
            && !line.starts_with("// Each waiver states")
            && line != "`verilator_config"
        {
            waivers.push_str(line);
            waivers.push('\n');
        }
    }
    emitted.push(EmittedFile {
        name: hw::emit::WAIVER_FILE.to_string(),
        module: None,
        text: waivers,
    });
    let modules = design.hierarchy(&tc).len() + design.hierarchy(&bridge).len() + 1;
    let params = params_text(header);
    let top_text = top::tc_top_verilog(clock, cfg, &header.generator, &params);
    let smoke = smoke::tc_testbench_verilog(board, cfg, &header.generator, &params);
    let core = cfg.core();
    let recipe = yosys::tc_board_recipe(board, board.top_name(), core.rows(), core.cols());
    Ok(assemble(
        clock, emitted, top_text, smoke, recipe, header, &params, modules,
    ))
}

fn params_text(header: &Header) -> String {
    let params: Vec<String> = header
        .params
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if params.is_empty() {
        "(none)".to_string()
    } else {
        params.join(" ")
    }
}

/// The files of a board build from the emitted hierarchy (module files and
/// the waiver file), the top's text, the smoke test and the synthesis recipe.
#[allow(clippy::too_many_arguments)]
fn assemble(
    clock: &CoreClock,
    emitted: Vec<EmittedFile>,
    top_text: String,
    smoke: String,
    recipe: Vec<String>,
    header: &Header,
    params: &str,
    modules: usize,
) -> BoardBuild {
    let board = clock.board();
    let mut files: Vec<EmittedFile> = emitted
        .iter()
        .filter(|f| f.module.is_some())
        .cloned()
        .collect();
    files.push(EmittedFile {
        name: format!("{}.v", board.top_name()),
        module: Some(board.top_name().to_string()),
        text: top_text,
    });
    let sources: Vec<String> = files.iter().map(|f| f.name.clone()).collect();
    let list: String = sources.iter().map(|f| format!("{f}\n")).collect();
    // The PLL's simulation model: a source for the simulators and Verilator's
    // lint, never for synthesis (not in files.f, the Yosys recipe or the
    // FuseSoC bitstream target).
    let mut model_head = String::new();
    top::header(
        &mut model_head,
        "//",
        &header.generator,
        &format!(
            "Simulation model of {} for {} (not for synthesis).",
            clock.pll().primitive(),
            board.top_name()
        ),
        params,
    );
    files.push(EmittedFile {
        name: pll::SIM_MODEL_FILE.to_string(),
        module: Some(clock.pll().primitive().to_string()),
        text: pll::sim_model_verilog(&clock.pll(), &model_head),
    });
    let mut waivers = emitted
        .iter()
        .find(|f| f.name == hw::emit::WAIVER_FILE)
        .expect("emit_design writes the waiver file")
        .clone();
    waivers.text.push_str(&format!(
        "// {}: the PLL's simulation stand-in takes the primitive's parameters and \
         inputs and ignores them, and the file is named for what it is, not after the \
         primitive\n",
        pll::SIM_MODEL_FILE
    ));
    for file in [
        pll::SIM_MODEL_FILE.to_string(),
        format!("*/{}", pll::SIM_MODEL_FILE),
    ] {
        for rule in ["UNUSEDPARAM", "UNUSEDSIGNAL", "DECLFILENAME"] {
            waivers
                .text
                .push_str(&format!("lint_off -rule {rule} -file \"{file}\"\n"));
        }
    }
    files.push(waivers);
    files.push(EmittedFile {
        name: hw::emit::FILE_LIST.to_string(),
        module: None,
        text: list,
    });
    files.push(EmittedFile {
        name: board.constraint_file().to_string(),
        module: None,
        text: top::constraints(clock, &header.generator, params),
    });
    files.push(EmittedFile {
        name: format!("{}.v", smoke::testbench_name(board)),
        module: None,
        text: smoke,
    });
    let mut script_head = String::new();
    top::header(
        &mut script_head,
        "#",
        &header.generator,
        &format!(
            "Yosys synthesis of {} for the {} (recipe: hw/board/src/yosys.rs).",
            board.top_name(),
            board.description()
        ),
        params,
    );
    files.push(EmittedFile {
        name: yosys::script_name(board),
        module: None,
        text: yosys::board_script(board, &sources, board.top_name(), &recipe, &script_head),
    });
    files.push(EmittedFile {
        name: yosys::tcl_name(board),
        module: None,
        text: yosys::board_tcl(&recipe, &script_head),
    });
    files.push(EmittedFile {
        name: format!("{}.core", board.top_name()),
        module: None,
        text: smoke::core_file(clock, &sources, &header.generator, params),
    });
    BoardBuild {
        top: board.top_name().to_string(),
        modules,
        files,
    }
}

/// The design parameters of a TensorCore board build, for file headers.
pub fn tc_board_params(
    clock: &CoreClock,
    cfg: &TcBridgeConfig,
    baud: u32,
) -> Vec<(String, String)> {
    let board = clock.board();
    let mut p = vec![
        ("board".to_string(), board.name().to_string()),
        ("osc_hz".to_string(), board.clock_hz().to_string()),
        ("core_mhz".to_string(), clock.mhz_text()),
        ("baud".to_string(), baud.to_string()),
        ("core".to_string(), "tensorcore".to_string()),
    ];
    p.extend(cfg.params());
    p
}

/// The design parameters of a board build, for file headers.
pub fn board_params(clock: &CoreClock, cfg: &BridgeConfig, baud: u32) -> Vec<(String, String)> {
    let board = clock.board();
    let mut p = vec![
        ("board".to_string(), board.name().to_string()),
        ("osc_hz".to_string(), board.clock_hz().to_string()),
        ("core_mhz".to_string(), clock.mhz_text()),
        ("baud".to_string(), baud.to_string()),
    ];
    p.extend(cfg.params());
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn board_names_round_trip_and_unknown_names_are_one_line_errors() {
        for b in Board::ALL {
            assert_eq!(b.name().parse::<Board>().unwrap(), b);
        }
        let err = "arty".parse::<Board>().unwrap_err();
        assert!(err.contains("icebreaker") && !err.contains('\n'), "{err}");
    }

    #[test]
    fn default_baud_rates_fit_the_board_clocks() {
        assert_eq!(clocks_per_bit(12_000_000, DEFAULT_BAUD).unwrap(), 104);
        assert_eq!(clocks_per_bit(25_000_000, DEFAULT_BAUD).unwrap(), 217);
        assert_eq!(clocks_per_bit(12_000_000, 1_500_000).unwrap(), 8);
        assert!(clocks_per_bit(12_000_000, 5_000_000).is_err());
        // 12 MHz / 2.2 Mbaud = 5.45 clocks: 5 gives 2.4 Mbaud, 9% off.
        assert!(clocks_per_bit(12_000_000, 2_200_000).is_err());
        assert_eq!(clocks_per_bit(12_000_000, 1_100_000).unwrap(), 11);
        assert!(clocks_per_bit(12_000_000, 0).is_err());
    }

    #[test]
    fn bridge_configs_are_validated() {
        let mxu = Board::IceBreaker.default_mxu();
        assert!(BridgeConfig::new(mxu, 3, 256).is_err());
        assert!(BridgeConfig::new(mxu, 104, 100).is_err());
        assert!(BridgeConfig::new(mxu, 104, 1).is_err());
        let c = BridgeConfig::new(mxu, 104, 256).unwrap();
        assert!(c.timeout_cycles() >= 104 * 10 * 1024);
        assert!(c.timeout_cycles() < 2 * 104 * 10 * 1024);
    }

    #[test]
    fn every_default_core_clock_is_one_the_pll_makes() {
        let mut clocks: Vec<_> = Board::ALL
            .into_iter()
            .map(|b| CoreClock::new(b, b.defaults().core_mhz))
            .collect();
        for b in Board::ALL {
            if let Ok(tc) = b.tensorcore_defaults() {
                clocks.push(CoreClock::new(b, tc.core_mhz));
            }
        }
        for clock in clocks {
            let clock = clock.unwrap();
            let off = (clock.hz() / 1e6 - clock.requested_mhz()).abs();
            assert!(off < 1e-3, "{clock:?}");
            // The default baud rate fits every default clock.
            clocks_per_bit(clock.hz_u32(), DEFAULT_BAUD).unwrap();
        }
    }

    #[test]
    fn core_clocks_the_pll_cannot_make_are_refused_in_one_line() {
        // 12 MHz x (DIVF + 1) / 2^DIVQ: 25.125 MHz is 0.5% from 25.
        let c = CoreClock::new(Board::IceBreaker, 25.0).unwrap();
        assert_eq!(c.hz(), 25.125e6);
        assert_eq!(c.mhz_text(), "25.125");
        for (board, mhz) in [
            (Board::IceBreaker, 10.0),
            (Board::Ulx3s, 48.0),
            (Board::Ulx3s, 0.0),
            (Board::Ulx3s, f64::NAN),
        ] {
            let e = CoreClock::new(board, mhz).unwrap_err().to_string();
            assert!(!e.contains('\n'), "{e}");
        }
        let e = CoreClock::new(Board::Ulx3s, 48.0).unwrap_err().to_string();
        assert!(e.contains("nearest 46.875 MHz"), "{e}");
        // 27 MHz x 26 / 7 = 100.286 MHz, 0.3% off: taken; 80 MHz (nearest
        // 81) is 1.25% off: refused.
        let c = CoreClock::new(Board::TangNano20k, 100.0).unwrap();
        assert_eq!(c.mhz_text(), "100.286");
        let e = CoreClock::new(Board::TangNano20k, 80.0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("nearest 81 MHz") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn the_gowin_boards_take_a_tensorcore_where_it_fits() {
        assert!(Board::TangNano20k.tensorcore_defaults().is_ok());
        let e = Board::TangNano9k.tensorcore_defaults().unwrap_err();
        assert!(e.contains("does not fit") && !e.contains('\n'), "{e}");
        for b in [Board::TangNano20k, Board::TangNano9k] {
            assert_eq!(b.clock_hz(), 27_000_000);
            assert!(b.gowin_device().is_some());
            assert!(b.constraint_file().ends_with(".cst"));
        }
    }

    #[test]
    fn constraints_name_every_port_of_the_top() {
        for b in Board::ALL {
            let clock = CoreClock::new(b, 30.0).unwrap();
            let text = top::constraints(&clock, "test", "x");
            for p in b.pins() {
                assert!(text.contains(p.port), "{b}: {} missing", p.port);
                for s in p.sites {
                    assert!(text.contains(s), "{b}: pin {s} missing");
                }
            }
        }
    }
}

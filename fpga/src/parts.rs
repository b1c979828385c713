//! The FPGA parts the report covers, their families and capacities.

use serde::{Deserialize, Serialize};
use std::fmt;

/// An FPGA family: decides the synthesis script, the cell names counted as
/// LUTs, flip-flops, DSPs and block RAMs, and the place-and-route tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// Lattice iCE40: Debian's Yosys (`synth_ice40`) and nextpnr-ice40.
    Ice40,
    /// Lattice ECP5: YoWASP Yosys (`synth_ecp5`) and YoWASP nextpnr-ecp5.
    Ecp5,
    /// Xilinx 7-series: Debian's Yosys (`synth_xilinx -family xc7`) only.
    Xc7,
    /// Gowin GW1N / GW2A: YoWASP Yosys (`synth_gowin`) and YoWASP
    /// nextpnr-himbaechel's Gowin back end.
    Gowin,
}

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Family::Ice40 => "ice40",
            Family::Ecp5 => "ecp5",
            Family::Xc7 => "xc7",
            Family::Gowin => "gowin",
        }
    }

    /// Whether the family's logic cells can be small RAMs (distributed
    /// RAM); without it a memory is flip-flops or block RAM.
    pub fn has_distributed_ram(self) -> bool {
        !matches!(self, Family::Ice40)
    }

    /// What one block RAM of this family is, for the report.
    pub fn bram_unit(self) -> &'static str {
        match self {
            Family::Ice40 => "SB_RAM40_4K (4 Kbit)",
            Family::Ecp5 => "DP16KD (18 Kbit)",
            Family::Xc7 => "RAMB36 (36 Kbit; a RAMB18 counts 0.5)",
            Family::Gowin => "BSRAM (18 Kbit)",
        }
    }

    /// What one DSP block of this family is, for the report.
    pub fn dsp_unit(self) -> &'static str {
        match self {
            Family::Ice40 => "SB_MAC16",
            Family::Ecp5 => "MULT18X18D",
            Family::Xc7 => "DSP48E1",
            Family::Gowin => "MULT18X18 (a MULT9X9 counts one)",
        }
    }

    /// The operand widths of one DSP block's multiplier, and whether it
    /// multiplies signed numbers only (then an unsigned operand needs a bit
    /// more): SB_MAC16 16x16 and MULT18X18D 18x18, either signedness;
    /// DSP48E1 25x18, signed.
    pub fn dsp_operand_bits(self) -> (u32, u32, bool) {
        match self {
            Family::Ice40 => (16, 16, false),
            Family::Ecp5 => (18, 18, false),
            Family::Xc7 => (25, 18, true),
            Family::Gowin => (18, 18, false),
        }
    }

    /// The narrowest operand Yosys's mapping for this family puts on a DSP
    /// block: a product with a narrower operand is left to logic. Gowin's
    /// `synth_gowin` (YoWASP Yosys 0.70) maps 3 x 3 to LUTs and 4 x 4 to a
    /// MULT9X9 (measured on the products alone); the other families here
    /// map any multiplier they are given.
    pub fn dsp_min_operand_bits(self) -> u32 {
        match self {
            Family::Gowin => 4,
            Family::Ice40 | Family::Ecp5 | Family::Xc7 => 1,
        }
    }

    /// The LUTs of this family that a bound of `lut4s` 4-input LUTs amounts
    /// to: the same on iCE40 and ECP5; four fifths as many 6-input LUTs on
    /// 7-series (measured: an int8 PE with a LUT multiplier ~175 and ~300
    /// LUT4s against ~220 LUT6s).
    pub fn luts_of_lut4s(self, lut4s: u64) -> u64 {
        match self {
            Family::Ice40 | Family::Ecp5 | Family::Gowin => lut4s,
            Family::Xc7 => lut4s * 4 / 5,
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Amounts of the four resources the report counts. Block RAM is a float
/// because a Xilinx RAMB18 is half a RAMB36.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Resources {
    pub luts: u64,
    pub ffs: u64,
    pub dsps: u64,
    pub brams: f64,
}

/// One FPGA part (device and package).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Part {
    /// Short name used in file names and on the command line.
    pub name: &'static str,
    /// The vendor's device name.
    pub device: &'static str,
    pub package: &'static str,
    /// Boards this part is on, for the reader.
    pub boards: &'static str,
    pub family: Family,
    pub capacity: Resources,
    /// nextpnr device flag (`--up5k`, `--25k`, ...); `None`: no place and route.
    pub pnr_device: Option<&'static str>,
    /// Target frequency given to nextpnr (timing-driven placement and routing).
    pub target_mhz: f64,
    /// The harness's ports on package pins, for a back end that places no
    /// IO by itself (Gowin's): the board's clock oscillator, buttons and
    /// LEDs, so that a measured build is one the board takes. Empty for
    /// the other families.
    #[serde(skip)]
    pub harness_pins: &'static [(&'static str, u32)],
}

impl Part {
    /// Whether this flow places and routes (and so measures Fmax).
    pub fn has_pnr(&self) -> bool {
        self.pnr_device.is_some()
    }
}

/// Every part of the report, smallest first within a family.
pub const PARTS: [Part; 8] = [
    Part {
        name: "ice40-up5k",
        device: "iCE40UP5K",
        package: "sg48",
        boards: "iCEBreaker, UPduino",
        family: Family::Ice40,
        capacity: Resources {
            luts: 5280,
            ffs: 5280,
            dsps: 8,
            brams: 30.0,
        },
        pnr_device: Some("--up5k"),
        target_mhz: 36.0,
        harness_pins: &[],
    },
    Part {
        name: "ice40-hx8k",
        device: "iCE40HX8K",
        package: "ct256",
        boards: "iCE40-HX8K Breakout",
        family: Family::Ice40,
        capacity: Resources {
            luts: 7680,
            ffs: 7680,
            dsps: 0,
            brams: 32.0,
        },
        pnr_device: Some("--hx8k"),
        target_mhz: 72.0,
        harness_pins: &[],
    },
    Part {
        name: "ecp5-25f",
        device: "LFE5U-25F",
        package: "CABGA381",
        boards: "ULX3S 25F",
        family: Family::Ecp5,
        capacity: Resources {
            luts: 24288,
            ffs: 24288,
            dsps: 28,
            brams: 56.0,
        },
        pnr_device: Some("--25k"),
        target_mhz: 125.0,
        harness_pins: &[],
    },
    Part {
        name: "ecp5-85f",
        device: "LFE5U-85F",
        package: "CABGA381",
        boards: "ULX3S 85F, OrangeCrab 85F",
        family: Family::Ecp5,
        capacity: Resources {
            luts: 83640,
            ffs: 83640,
            dsps: 156,
            brams: 208.0,
        },
        pnr_device: Some("--85k"),
        target_mhz: 125.0,
        harness_pins: &[],
    },
    Part {
        name: "xc7a35t",
        device: "Artix-7 XC7A35T",
        package: "-",
        boards: "Arty A7-35, Basys 3, Cmod A7-35T",
        family: Family::Xc7,
        capacity: Resources {
            luts: 20800,
            ffs: 41600,
            dsps: 90,
            brams: 50.0,
        },
        pnr_device: None,
        target_mhz: 0.0,
        harness_pins: &[],
    },
    Part {
        name: "xc7a100t",
        device: "Artix-7 XC7A100T",
        package: "-",
        boards: "Arty A7-100, Nexys A7-100T",
        family: Family::Xc7,
        capacity: Resources {
            luts: 63400,
            ffs: 126800,
            dsps: 240,
            brams: 135.0,
        },
        pnr_device: None,
        target_mhz: 0.0,
        harness_pins: &[],
    },
    Part {
        name: "gw1nr-9",
        device: "GW1NR-LV9QN88PC6/I5",
        package: "QN88",
        boards: "Tang Nano 9K",
        family: Family::Gowin,
        capacity: Resources {
            luts: 8640,
            ffs: 6480,
            dsps: 20,
            brams: 26.0,
        },
        pnr_device: Some("GW1N-9C"),
        target_mhz: 27.0,
        // Tang Nano 9K: 27 MHz on pin 52, buttons S1/S2 on 4/3, LEDs on 10/11.
        harness_pins: &[
            ("clk_i", 52),
            ("rst_i", 4),
            ("sin_i", 3),
            ("load_i", 10),
            ("sout_o", 11),
        ],
    },
    Part {
        name: "gw2ar-18",
        device: "GW2AR-LV18QN88C8/I7",
        package: "QN88",
        boards: "Tang Nano 20K",
        family: Family::Gowin,
        capacity: Resources {
            luts: 20736,
            ffs: 15552,
            dsps: 48,
            brams: 46.0,
        },
        pnr_device: Some("GW2A-18C"),
        target_mhz: 27.0,
        // Tang Nano 20K: 27 MHz on pin 4, buttons S1/S2 on 88/87, LEDs on 15/16.
        harness_pins: &[
            ("clk_i", 4),
            ("rst_i", 88),
            ("sin_i", 87),
            ("load_i", 15),
            ("sout_o", 16),
        ],
    },
];

/// The part called `name`.
pub fn part(name: &str) -> Option<&'static Part> {
    PARTS.iter().find(|p| p.name == name)
}

/// A part is read back (from a report) by its name: its figures are this
/// build's.
impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Named {
            name: String,
        }
        let named = Named::deserialize(d)?;
        part(&named.name)
            .copied()
            .ok_or_else(|| serde::de::Error::custom(format!("unknown part '{}'", named.name)))
    }
}

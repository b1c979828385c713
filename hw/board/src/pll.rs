//! The boards' PLLs: the divider settings that make a core clock from the
//! board's oscillator, computed as the open tools' PLL calculators compute
//! them, so a board build's settings are the ones a user of those tools gets.
//!
//! - **iCE40** (`SB_PLL40_PAD`, SIMPLE feedback): Project IceStorm's `icepll`
//!   (YosysHQ/icestorm, `icepll/icepll.cc`, `analyze`). F_PFD = F_IN /
//!   (DIVR + 1) in 10..133 MHz, F_VCO = F_PFD x (DIVF + 1) in 533..1066 MHz,
//!   F_OUT = F_VCO / 2^DIVQ (DIVQ 1..6) in 16..275 MHz; DIVR 0..15, DIVF
//!   0..127; the first setting (DIVR, then DIVF, then DIVQ ascending) nearest
//!   the request wins; FILTER_RANGE follows from F_PFD. Double precision, as
//!   icepll computes.
//! - **ECP5** (`EHXPLLL`, CLKOP fed back): Project Trellis' `ecppll`
//!   (YosysHQ/prjtrellis, `libtrellis/tools/ecppll.cpp`, `calc_pll_params`).
//!   F_PFD = F_IN / CLKI_DIV in 3.125..400 MHz, F_VCO = F_PFD x CLKFB_DIV x
//!   CLKOP_DIV in 400..800 MHz, F_OUT = F_VCO / CLKOP_DIV; CLKI_DIV 1..128,
//!   CLKFB_DIV 1..80, CLKOP_DIV 1..128; the nearest output wins, ties go to
//!   the VCO nearest 600 MHz; CLKOP_CPHASE puts the output half a period
//!   late, as Lattice's tools do. ecppll computes in single precision, and
//!   so does [`Ecp5Pll::for_output`]: its choice among near ties, and the
//!   phase count it truncates, depend on those roundings (25 -> 75 MHz gives
//!   CLKOP_DIV 8 and CLKOP_CPHASE 4; 25 -> 100 MHz, CLKOP_DIV 6 and
//!   CLKOP_CPHASE 2).
//!
//! - **Gowin** (`rPLL`, internal feedback): Apicula's `gowin_pll`
//!   (YosysHQ/apicula, `apycula/gowin_pll.py`, as pinned by
//!   scripts/fpga/install.sh). F_PFD = F_IN / (IDIV_SEL + 1), F_OUT = F_IN x
//!   (FBDIV_SEL + 1) / (IDIV_SEL + 1), F_VCO = F_OUT x ODIV_SEL; IDIV_SEL and
//!   FBDIV_SEL 0..63, ODIV_SEL one of 2, 4, 8, 16, 32, 48, 64, 80, 96, 112,
//!   128; the first setting (IDIV_SEL, then FBDIV_SEL, then ODIV_SEL
//!   ascending) nearest the request wins. The limits are the data sheets'
//!   the tool lists: GW2AR-18 C8/I7 (Tang Nano 20K) PFD 3..500 MHz, VCO
//!   500..1250 MHz, output 3.90625..625 MHz; GW1NR-9 C6/I5 (Tang Nano 9K) PFD
//!   3..400, VCO 400..1200, output 3.125..600. `gowin_pack` refuses a
//!   setting outside them. Double precision, as the tool computes.
//!
//! The achieved frequency is exact ([`Ice40Pll::out_hz`], [`Ecp5Pll::out_hz`]:
//! a ratio of the dividers times the oscillator): it sets the UART's clocks
//! per bit and the clock nextpnr checks timing against.

/// Largest relative difference between the requested core clock and the one
/// the PLL makes for a board build to accept it.
pub const MAX_CORE_CLOCK_ERROR: f64 = 0.01;

/// Rising edges of the oscillator after which the simulation model of the
/// PLL ([`sim_model_verilog`]) raises LOCK.
pub const SIM_LOCK_CYCLES: u32 = 64;

/// An `SB_PLL40_PAD` setting (SIMPLE feedback), as icepll prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ice40Pll {
    /// Oscillator frequency, Hz.
    pub in_hz: u32,
    pub divr: u32,
    pub divf: u32,
    pub divq: u32,
    pub filter_range: u32,
}

/// Frequency limits of the iCE40 PLL (icepll's `limit_*`), MHz.
const ICE40_IN: (f64, f64) = (10.0, 133.0);
const ICE40_PFD: (f64, f64) = (10.0, 133.0);
const ICE40_VCO: (f64, f64) = (533.0, 1066.0);
const ICE40_OUT: (f64, f64) = (16.0, 275.0);

impl Ice40Pll {
    /// icepll's search (`icepll -i IN -o OUT`, SIMPLE feedback): the setting
    /// whose output is nearest `out_mhz`, or why there is none (one line).
    pub fn for_output(in_hz: u32, out_mhz: f64) -> Result<Ice40Pll, String> {
        let f_in = f64::from(in_hz) / 1e6;
        if !(ICE40_IN.0..=ICE40_IN.1).contains(&f_in) {
            return Err(format!(
                "the iCE40 PLL takes {} to {} MHz, not {f_in} MHz",
                ICE40_IN.0, ICE40_IN.1
            ));
        }
        if !(ICE40_OUT.0..=ICE40_OUT.1).contains(&out_mhz) {
            return Err(format!(
                "the iCE40 PLL makes {} to {} MHz, not {out_mhz} MHz",
                ICE40_OUT.0, ICE40_OUT.1
            ));
        }
        let mut best: Option<(f64, u32, u32, u32)> = None;
        for divr in 0..=15u32 {
            let f_pfd = f_in / f64::from(divr + 1);
            if f_pfd < ICE40_PFD.0 || f_pfd > ICE40_PFD.1 {
                continue;
            }
            for divf in 0..=127u32 {
                let f_vco = f_pfd * f64::from(divf + 1);
                if f_vco < ICE40_VCO.0 || f_vco > ICE40_VCO.1 {
                    continue;
                }
                for divq in 1..=6u32 {
                    let fout = f_vco * (-f64::from(divq)).exp2();
                    let better = match best {
                        None => true,
                        Some((b, ..)) => (fout - out_mhz).abs() < (b - out_mhz).abs(),
                    };
                    if better {
                        best = Some((fout, divr, divf, divq));
                    }
                }
            }
        }
        let (_, divr, divf, divq) =
            best.ok_or_else(|| format!("no iCE40 PLL setting makes {out_mhz} MHz"))?;
        let f_pfd = f_in / f64::from(divr + 1);
        let filter_range = match f_pfd {
            f if f < 17.0 => 1,
            f if f < 26.0 => 2,
            f if f < 44.0 => 3,
            f if f < 66.0 => 4,
            f if f < 101.0 => 5,
            _ => 6,
        };
        Ok(Ice40Pll {
            in_hz,
            divr,
            divf,
            divq,
            filter_range,
        })
    }

    /// The output frequency, Hz: F_IN x (DIVF + 1) / ((DIVR + 1) x 2^DIVQ).
    pub fn out_hz(&self) -> f64 {
        f64::from(self.in_hz) * f64::from(self.divf + 1)
            / (f64::from(self.divr + 1) * f64::from(1u32 << self.divq))
    }

    /// The VCO's frequency, Hz.
    pub fn vco_hz(&self) -> f64 {
        f64::from(self.in_hz) * f64::from(self.divf + 1) / f64::from(self.divr + 1)
    }
}

/// An `EHXPLLL` setting (CLKOP fed back), as ecppll writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ecp5Pll {
    /// Oscillator frequency, Hz.
    pub in_hz: u32,
    pub clki_div: u32,
    pub clkfb_div: u32,
    pub clkop_div: u32,
    pub clkop_cphase: u32,
}

/// Frequency limits of the ECP5 PLL (ecppll's `*_MIN`, `*_MAX`), MHz.
const ECP5_IN: (f32, f32) = (8.0, 400.0);
const ECP5_PFD: (f32, f32) = (3.125, 400.0);
const ECP5_VCO: (f32, f32) = (400.0, 800.0);
const ECP5_OUT: (f32, f32) = (10.0, 400.0);

impl Ecp5Pll {
    /// ecppll's search (`ecppll -i IN -o OUT`), in single precision as
    /// ecppll computes: the setting whose output is nearest `out_mhz`, or
    /// why there is none (one line; ecppll only warns about frequencies
    /// outside the PLL's ranges, a board build refuses them).
    pub fn for_output(in_hz: u32, out_mhz: f64) -> Result<Ecp5Pll, String> {
        let input = (f64::from(in_hz) / 1e6) as f32;
        let output = out_mhz as f32;
        if !(ECP5_IN.0..=ECP5_IN.1).contains(&input) {
            return Err(format!(
                "the ECP5 PLL takes {} to {} MHz, not {input} MHz",
                ECP5_IN.0, ECP5_IN.1
            ));
        }
        if !(ECP5_OUT.0..=ECP5_OUT.1).contains(&output) {
            return Err(format!(
                "the ECP5 PLL makes {} to {} MHz, not {out_mhz} MHz",
                ECP5_OUT.0, ECP5_OUT.1
            ));
        }
        let mut error = f32::MAX;
        let mut best: Option<(u32, u32, u32, f32, f32)> = None;
        for input_div in 1..=128u32 {
            let fpfd = input / input_div as f32;
            if fpfd < ECP5_PFD.0 || fpfd > ECP5_PFD.1 {
                continue;
            }
            for feedback_div in 1..=80u32 {
                for output_div in 1..=128u32 {
                    let fvco = fpfd * feedback_div as f32 * output_div as f32;
                    if fvco < ECP5_VCO.0 || fvco > ECP5_VCO.1 {
                        continue;
                    }
                    let fout = fvco / output_div as f32;
                    let e = (fout - output).abs();
                    let nearer_600 = best
                        .map(|(.., best_vco)| (fvco - 600.0).abs() < (best_vco - 600.0).abs())
                        .unwrap_or(true);
                    if e < error || (e == error && nearer_600) {
                        error = e;
                        best = Some((input_div, feedback_div, output_div, fout, fvco));
                    }
                }
            }
        }
        let (clki_div, clkfb_div, clkop_div, fout, fvco) =
            best.ok_or_else(|| format!("no ECP5 PLL setting makes {out_mhz} MHz"))?;
        // ecppll: half an output period in VCO cycles, through a float
        // (`float ns_phase = 1/(fout * 1e6) * 0.5`), truncated.
        let ns_phase = (1.0 / (f64::from(fout) * 1e6) * 0.5) as f32;
        let clkop_cphase = (f64::from(ns_phase) * (f64::from(fvco) * 1e6)) as u32;
        Ok(Ecp5Pll {
            in_hz,
            clki_div,
            clkfb_div,
            clkop_div,
            clkop_cphase,
        })
    }

    /// The output frequency, Hz: F_IN x CLKFB_DIV / CLKI_DIV.
    pub fn out_hz(&self) -> f64 {
        f64::from(self.in_hz) * f64::from(self.clkfb_div) / f64::from(self.clki_div)
    }

    /// The VCO's frequency, Hz.
    pub fn vco_hz(&self) -> f64 {
        self.out_hz() * f64::from(self.clkop_div)
    }
}

/// The Gowin devices with an `rPLL` on the boards, and their PLL limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GowinDevice {
    /// GW2AR-LV18QN88C8/I7 (Tang Nano 20K).
    Gw2ar18,
    /// GW1NR-LV9QN88PC6/I5 (Tang Nano 9K).
    Gw1nr9,
}

impl GowinDevice {
    /// The rPLL's `DEVICE` parameter (Gowin's IP generator writes the
    /// family with its C suffix).
    pub fn pll_device(self) -> &'static str {
        match self {
            GowinDevice::Gw2ar18 => "GW2AR-18C",
            GowinDevice::Gw1nr9 => "GW1NR-9C",
        }
    }

    /// The part name `gowin_pll -d` takes.
    pub fn part(self) -> &'static str {
        match self {
            GowinDevice::Gw2ar18 => "GW2AR-LV18QN88C8/I7",
            GowinDevice::Gw1nr9 => "GW1NR-LV9QN88PC6/I5",
        }
    }

    /// gowin_pll's limits, MHz: (PFD, VCO, output) ranges. The PFD range
    /// is inclusive, the others exclusive, as the tool tests them.
    fn limits(self) -> [(f64, f64); 3] {
        match self {
            GowinDevice::Gw2ar18 => [(3.0, 500.0), (500.0, 1250.0), (3.90625, 625.0)],
            GowinDevice::Gw1nr9 => [(3.0, 400.0), (400.0, 1200.0), (3.125, 600.0)],
        }
    }
}

/// An `rPLL` setting (internal feedback, CLKOUT), as Apicula's gowin_pll
/// writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GowinPll {
    /// Oscillator frequency, Hz.
    pub in_hz: u32,
    pub device: GowinDevice,
    pub idiv_sel: u32,
    pub fbdiv_sel: u32,
    pub odiv_sel: u32,
}

/// The rPLL's output dividers (ODIV_SEL values), in gowin_pll's order.
const GOWIN_ODIV: [u32; 11] = [2, 4, 8, 16, 32, 48, 64, 80, 96, 112, 128];

impl GowinPll {
    /// gowin_pll's search (`gowin_pll -i IN -o OUT -d PART`): the setting
    /// whose output is nearest `out_mhz`, or why there is none (one line).
    pub fn for_output(in_hz: u32, device: GowinDevice, out_mhz: f64) -> Result<GowinPll, String> {
        let [pfd, vco, out] = device.limits();
        let f_in = f64::from(in_hz) / 1e6;
        if f_in < pfd.0 {
            return Err(format!(
                "the Gowin rPLL takes at least {} MHz, not {f_in} MHz",
                pfd.0
            ));
        }
        if out_mhz <= out.0 || out_mhz >= out.1 {
            return Err(format!(
                "the {} rPLL makes {} to {} MHz, not {out_mhz} MHz",
                device.part(),
                out.0,
                out.1
            ));
        }
        let mut min_diff = f_in;
        let mut best = None;
        for idiv in 0..64u32 {
            for fbdiv in 0..64u32 {
                for odiv in GOWIN_ODIV {
                    let f_pfd = f_in / f64::from(idiv + 1);
                    if !(pfd.0..=pfd.1).contains(&f_pfd) {
                        continue;
                    }
                    let clkout = f_in * f64::from(fbdiv + 1) / f64::from(idiv + 1);
                    if clkout <= out.0 || clkout >= out.1 {
                        continue;
                    }
                    let f_vco = f_in * f64::from(fbdiv + 1) * f64::from(odiv) / f64::from(idiv + 1);
                    if f_vco <= vco.0 || f_vco >= vco.1 {
                        continue;
                    }
                    let diff = (out_mhz - clkout).abs();
                    if diff < min_diff {
                        min_diff = diff;
                        best = Some((idiv, fbdiv, odiv));
                    }
                }
            }
        }
        let (idiv_sel, fbdiv_sel, odiv_sel) =
            best.ok_or_else(|| format!("no Gowin rPLL setting makes {out_mhz} MHz"))?;
        Ok(GowinPll {
            in_hz,
            device,
            idiv_sel,
            fbdiv_sel,
            odiv_sel,
        })
    }

    /// The output frequency, Hz: F_IN x (FBDIV_SEL + 1) / (IDIV_SEL + 1).
    pub fn out_hz(&self) -> f64 {
        f64::from(self.in_hz) * f64::from(self.fbdiv_sel + 1) / f64::from(self.idiv_sel + 1)
    }

    /// The VCO's frequency, Hz.
    pub fn vco_hz(&self) -> f64 {
        self.out_hz() * f64::from(self.odiv_sel)
    }
}

/// A board's PLL setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PllSetting {
    Ice40(Ice40Pll),
    Ecp5(Ecp5Pll),
    Gowin(GowinPll),
}

impl PllSetting {
    pub fn out_hz(&self) -> f64 {
        match self {
            PllSetting::Ice40(p) => p.out_hz(),
            PllSetting::Ecp5(p) => p.out_hz(),
            PllSetting::Gowin(p) => p.out_hz(),
        }
    }

    pub fn vco_hz(&self) -> f64 {
        match self {
            PllSetting::Ice40(p) => p.vco_hz(),
            PllSetting::Ecp5(p) => p.vco_hz(),
            PllSetting::Gowin(p) => p.vco_hz(),
        }
    }

    /// The primitive's Verilog name.
    pub fn primitive(&self) -> &'static str {
        match self {
            PllSetting::Ice40(_) => "SB_PLL40_PAD",
            PllSetting::Ecp5(_) => "EHXPLLL",
            PllSetting::Gowin(_) => "rPLL",
        }
    }

    /// The settings in words, for comments and logs.
    pub fn describe(&self) -> String {
        match self {
            PllSetting::Ice40(p) => format!(
                "SB_PLL40_PAD, SIMPLE feedback, DIVR {} DIVF {} DIVQ {} FILTER_RANGE {}, VCO {} MHz \
                 (icepll -i {} -o {})",
                p.divr,
                p.divf,
                p.divq,
                p.filter_range,
                mhz_text(p.vco_hz()),
                mhz_text(f64::from(p.in_hz)),
                mhz_text(p.out_hz())
            ),
            PllSetting::Ecp5(p) => format!(
                "EHXPLLL, CLKOP fed back, CLKI_DIV {} CLKFB_DIV {} CLKOP_DIV {} CLKOP_CPHASE {}, \
                 VCO {} MHz (ecppll -i {} -o {})",
                p.clki_div,
                p.clkfb_div,
                p.clkop_div,
                p.clkop_cphase,
                mhz_text(p.vco_hz()),
                mhz_text(f64::from(p.in_hz)),
                mhz_text(p.out_hz())
            ),
            PllSetting::Gowin(p) => format!(
                "rPLL, internal feedback, IDIV_SEL {} FBDIV_SEL {} ODIV_SEL {}, VCO {} MHz \
                 (gowin_pll -i {} -o {} -d {})",
                p.idiv_sel,
                p.fbdiv_sel,
                p.odiv_sel,
                mhz_text(p.vco_hz()),
                mhz_text(f64::from(p.in_hz)),
                mhz_text(p.out_hz()),
                p.device.part()
            ),
        }
    }
}

/// A frequency in Hz as MHz, with at most three decimals and no trailing
/// zeros ("22.5", "25", "33.333").
pub fn mhz_text(hz: f64) -> String {
    let s = format!("{:.3}", hz / 1e6);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The PLL instance of a board top: the primitive fed by the oscillator pin
/// `osc`, its output on the wire `clk`, its lock on the wire `locked`
/// (declared by the caller). The connections are those icepll (`-p -m`)
/// and ecppll write.
pub fn instance_verilog(setting: &PllSetting, osc: &str, clk: &str, locked: &str) -> String {
    match setting {
        PllSetting::Ice40(p) => format!(
            "  SB_PLL40_PAD #(\n    \
               .FEEDBACK_PATH(\"SIMPLE\"),\n    \
               .DIVR(4'd{}),\n    \
               .DIVF(7'd{}),\n    \
               .DIVQ(3'd{}),\n    \
               .FILTER_RANGE(3'd{})\n  \
             ) pll (\n    \
               .PACKAGEPIN   ({osc}),\n    \
               .PLLOUTGLOBAL ({clk}),\n    \
               .RESETB       (1'b1),\n    \
               .BYPASS       (1'b0),\n    \
               .LOCK         ({locked})\n  \
             );\n",
            p.divr, p.divf, p.divq, p.filter_range
        ),
        PllSetting::Ecp5(p) => format!(
            "  (* ICP_CURRENT=\"12\" *) (* LPF_RESISTOR=\"8\" *) (* MFG_ENABLE_FILTEROPAMP=\"1\" *) \
             (* MFG_GMCREF_SEL=\"2\" *)\n  \
             EHXPLLL #(\n    \
               .PLLRST_ENA(\"DISABLED\"),\n    \
               .INTFB_WAKE(\"DISABLED\"),\n    \
               .STDBY_ENABLE(\"DISABLED\"),\n    \
               .DPHASE_SOURCE(\"DISABLED\"),\n    \
               .OUTDIVIDER_MUXA(\"DIVA\"),\n    \
               .OUTDIVIDER_MUXB(\"DIVB\"),\n    \
               .OUTDIVIDER_MUXC(\"DIVC\"),\n    \
               .OUTDIVIDER_MUXD(\"DIVD\"),\n    \
               .CLKI_DIV({}),\n    \
               .CLKOP_ENABLE(\"ENABLED\"),\n    \
               .CLKOP_DIV({}),\n    \
               .CLKOP_CPHASE({}),\n    \
               .CLKOP_FPHASE(0),\n    \
               .FEEDBK_PATH(\"CLKOP\"),\n    \
               .CLKFB_DIV({})\n  \
             ) pll (\n    \
               .RST          (1'b0),\n    \
               .STDBY        (1'b0),\n    \
               .CLKI         ({osc}),\n    \
               .CLKOP        ({clk}),\n    \
               .CLKFB        ({clk}),\n    \
               .PHASESEL0    (1'b0),\n    \
               .PHASESEL1    (1'b0),\n    \
               .PHASEDIR     (1'b1),\n    \
               .PHASESTEP    (1'b1),\n    \
               .PHASELOADREG (1'b1),\n    \
               .PLLWAKESYNC  (1'b0),\n    \
               .ENCLKOP      (1'b0),\n    \
               .LOCK         ({locked})\n  \
             );\n",
            p.clki_div, p.clkop_div, p.clkop_cphase, p.clkfb_div
        ),
        // As gowin_pll writes it: CLKOUT only, internal feedback, every
        // dynamic control input tied off.
        PllSetting::Gowin(p) => format!(
            "  rPLL #(\n    \
               .FCLKIN(\"{}\"),\n    \
               .DEVICE(\"{}\"),\n    \
               .IDIV_SEL({}),\n    \
               .FBDIV_SEL({}),\n    \
               .ODIV_SEL({}),\n    \
               .DYN_IDIV_SEL(\"false\"),\n    \
               .DYN_FBDIV_SEL(\"false\"),\n    \
               .DYN_ODIV_SEL(\"false\"),\n    \
               .CLKFB_SEL(\"internal\")\n  \
             ) pll (\n    \
               .CLKIN   ({osc}),\n    \
               .CLKFB   (1'b0),\n    \
               .RESET   (1'b0),\n    \
               .RESET_P (1'b0),\n    \
               .FBDSEL  (6'b000000),\n    \
               .IDSEL   (6'b000000),\n    \
               .ODSEL   (6'b000000),\n    \
               .PSDA    (4'b0000),\n    \
               .DUTYDA  (4'b0000),\n    \
               .FDLY    (4'b0000),\n    \
               .CLKOUT  ({clk}),\n    \
               .LOCK    ({locked})\n  \
             );\n",
            mhz_text(f64::from(p.in_hz)),
            p.device.pll_device(),
            p.idiv_sel,
            p.fbdiv_sel,
            p.odiv_sel
        ),
    }
}

/// The rPLL inputs a board top ties off, besides CLKIN, and their widths.
pub const GOWIN_SIM_INPUTS: [(&str, u32); 9] = [
    ("CLKFB", 1),
    ("RESET", 1),
    ("RESET_P", 1),
    ("FBDSEL", 6),
    ("IDSEL", 6),
    ("ODSEL", 6),
    ("PSDA", 4),
    ("DUTYDA", 4),
    ("FDLY", 4),
];

/// The file name of a board build's PLL simulation model.
pub const SIM_MODEL_FILE: &str = "pll_sim_model.v";

/// What a PLL primitive's simulation stand-in declares: the primitive's
/// name, its parameter declarations (the ones the board top sets), its
/// oscillator input and clock output, and the other inputs the top ties
/// off with their widths. [`sim_model_verilog`] and the board tests' own
/// stand-ins are written from it.
#[derive(Debug, Clone, Copy)]
pub struct SimPrimitive {
    pub name: &'static str,
    pub params: &'static str,
    pub clk_in: &'static str,
    pub clk_out: &'static str,
    pub inputs: &'static [(&'static str, u32)],
}

/// The simulated interface of `setting`'s primitive.
pub fn sim_primitive(setting: &PllSetting) -> SimPrimitive {
    let (name, params, clk_in, clk_out, inputs): (_, _, _, _, &'static [(&'static str, u32)]) =
        match setting {
            PllSetting::Ice40(_) => (
                "SB_PLL40_PAD",
                "  parameter FEEDBACK_PATH = \"SIMPLE\";\n  \
             parameter [3:0] DIVR = 4'd0;\n  \
             parameter [6:0] DIVF = 7'd0;\n  \
             parameter [2:0] DIVQ = 3'd0;\n  \
             parameter [2:0] FILTER_RANGE = 3'd0;\n",
                "PACKAGEPIN",
                "PLLOUTGLOBAL",
                &[("RESETB", 1), ("BYPASS", 1)],
            ),
            PllSetting::Ecp5(_) => (
                "EHXPLLL",
                "  parameter PLLRST_ENA = \"DISABLED\";\n  \
             parameter INTFB_WAKE = \"DISABLED\";\n  \
             parameter STDBY_ENABLE = \"DISABLED\";\n  \
             parameter DPHASE_SOURCE = \"DISABLED\";\n  \
             parameter OUTDIVIDER_MUXA = \"DIVA\";\n  \
             parameter OUTDIVIDER_MUXB = \"DIVB\";\n  \
             parameter OUTDIVIDER_MUXC = \"DIVC\";\n  \
             parameter OUTDIVIDER_MUXD = \"DIVD\";\n  \
             parameter CLKI_DIV = 1;\n  \
             parameter CLKOP_ENABLE = \"ENABLED\";\n  \
             parameter CLKOP_DIV = 8;\n  \
             parameter CLKOP_CPHASE = 0;\n  \
             parameter CLKOP_FPHASE = 0;\n  \
             parameter FEEDBK_PATH = \"CLKOP\";\n  \
             parameter CLKFB_DIV = 1;\n",
                "CLKI",
                "CLKOP",
                &[
                    ("RST", 1),
                    ("STDBY", 1),
                    ("CLKFB", 1),
                    ("PHASESEL0", 1),
                    ("PHASESEL1", 1),
                    ("PHASEDIR", 1),
                    ("PHASESTEP", 1),
                    ("PHASELOADREG", 1),
                    ("PLLWAKESYNC", 1),
                    ("ENCLKOP", 1),
                ],
            ),
            PllSetting::Gowin(_) => (
                "rPLL",
                "  parameter FCLKIN = \"100.0\";\n  \
             parameter DEVICE = \"GW1N-1\";\n  \
             parameter IDIV_SEL = 0;\n  \
             parameter FBDIV_SEL = 0;\n  \
             parameter ODIV_SEL = 8;\n  \
             parameter DYN_IDIV_SEL = \"false\";\n  \
             parameter DYN_FBDIV_SEL = \"false\";\n  \
             parameter DYN_ODIV_SEL = \"false\";\n  \
             parameter CLKFB_SEL = \"internal\";\n",
                "CLKIN",
                "CLKOUT",
                &GOWIN_SIM_INPUTS,
            ),
        };
    SimPrimitive {
        name,
        params,
        clk_in,
        clk_out,
        inputs,
    }
}

/// A behavioural stand-in for the PLL primitive of `setting`, for
/// simulation only (Verilator and Icarus have no PLL, and the vendor models
/// are encrypted or absent): the module has the primitive's name, the
/// parameters and ports the board top uses, passes the oscillator through as
/// the output clock (so a simulated core cycle is an oscillator cycle; the
/// tests count cycles, not nanoseconds) and raises LOCK after
/// [`SIM_LOCK_CYCLES`] rising edges of the oscillator. Synthesis never reads
/// it: the board's Yosys recipe and the FuseSoC bitstream targets leave it
/// out, and the tools map the instance to the real primitive.
pub fn sim_model_verilog(setting: &PllSetting, head: &str) -> String {
    let n = SIM_LOCK_CYCLES;
    let bits = 32 - n.leading_zeros();
    let SimPrimitive {
        name,
        params,
        clk_in,
        clk_out,
        inputs: extra_in,
    } = sim_primitive(setting);
    let mut ports = vec![format!("  input  wire {clk_in}")];
    for (p, width) in extra_in {
        let range = if *width == 1 {
            String::new()
        } else {
            format!("[{}:0] ", width - 1)
        };
        ports.push(format!("  input  wire {range}{p}"));
    }
    ports.push(format!("  output wire {clk_out}"));
    ports.push("  output wire LOCK".to_string());
    format!(
        "{head}\n\
         `default_nettype none\n\n\
         // Simulation only: a stand-in for the {name} primitive, not a model of\n\
         // the PLL. The output clock is the input clock; LOCK rises after {n}\n\
         // rising edges of the input and stays high. The parameters are taken\n\
         // and ignored. Synthesis uses the real primitive.\n\
         module {name} (\n{ports}\n);\n\
         {params}\
         \x20 reg [{hi}:0] lock_count;\n\
         \x20 initial lock_count = {bits}'d0;\n\
         \x20 always @(posedge {clk_in}) begin\n\
         \x20   if (lock_count != {bits}'d{n}) lock_count <= lock_count + {bits}'d1;\n\
         \x20 end\n\
         \x20 assign {clk_out} = {clk_in};\n\
         \x20 assign LOCK = lock_count == {bits}'d{n};\n\
         endmodule\n\n\
         `default_nettype wire\n",
        ports = ports.join(",\n"),
        hi = bits - 1,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `icepll -i 12 -o F` (IceStorm's icepll, Debian's fpga-icestorm
    /// 0~20220915): requested MHz, then DIVR, DIVF, DIVQ, FILTER_RANGE and
    /// the achieved MHz it prints.
    const ICEPLL_12MHZ: &[(f64, [u32; 4], f64)] = &[
        (16.0, [0, 84, 6, 1], 15.9375),
        (20.0, [0, 52, 5, 1], 19.875),
        (22.5, [0, 59, 5, 1], 22.5),
        (25.0, [0, 66, 5, 1], 25.125),
        (30.0, [0, 79, 5, 1], 30.0),
        (33.0, [0, 87, 5, 1], 33.0),
        (40.0, [0, 52, 4, 1], 39.75),
        (48.0, [0, 63, 4, 1], 48.0),
        (50.0, [0, 66, 4, 1], 50.25),
        (100.0, [0, 66, 3, 1], 100.5),
    ];

    #[test]
    fn ice40_settings_are_icepll_s() {
        for &(out, [divr, divf, divq, filter_range], achieved) in ICEPLL_12MHZ {
            let p = Ice40Pll::for_output(12_000_000, out).unwrap();
            assert_eq!(
                (p.divr, p.divf, p.divq, p.filter_range),
                (divr, divf, divq, filter_range),
                "{out} MHz"
            );
            assert_eq!(p.out_hz(), achieved * 1e6, "{out} MHz");
            let vco = p.vco_hz() / 1e6;
            assert!((533.0..=1066.0).contains(&vco), "{out} MHz: VCO {vco}");
        }
        // The icepll README's example (12 MHz to 96 MHz, as its
        // documentation and many iCEstick projects show it).
        let p = Ice40Pll::for_output(12_000_000, 96.0).unwrap();
        assert_eq!((p.divr, p.divf, p.divq, p.filter_range), (0, 63, 3, 1));
    }

    #[test]
    fn ice40_refuses_what_the_pll_cannot_make() {
        let e = Ice40Pll::for_output(12_000_000, 15.0).unwrap_err();
        assert!(
            e.contains("16") && e.contains("275") && !e.contains('\n'),
            "{e}"
        );
        assert!(Ice40Pll::for_output(12_000_000, 300.0).is_err());
        assert!(Ice40Pll::for_output(5_000_000, 48.0).is_err());
    }

    /// `ecppll -i 25 -o F -f pll.v` (Project Trellis' ecppll, YoWASP's
    /// yowasp-ecppll build): requested MHz, then CLKI_DIV, CLKFB_DIV,
    /// CLKOP_DIV, CLKOP_CPHASE of the file it writes, and the achieved MHz
    /// and VCO it prints. 40, 50, 100 and 125 MHz also appear in published
    /// ULX3S and Colorlight designs generated by it.
    const ECPPLL_25MHZ: &[(f64, [u32; 4], f64, f64)] = &[
        (40.0, [5, 8, 15, 7], 40.0, 600.0),
        (50.0, [1, 2, 12, 5], 50.0, 600.0),
        (60.0, [5, 12, 10, 4], 60.0, 600.0),
        (75.0, [1, 3, 8, 4], 75.0, 600.0),
        (100.0, [1, 4, 6, 2], 100.0, 600.0),
        (125.0, [1, 5, 5, 2], 125.0, 625.0),
        (30.0, [5, 6, 20, 9], 30.0, 600.0),
        (33.333, [3, 4, 18, 9], 100.0 / 3.0, 600.0),
        // Many CLKOP_DIVs make 200/7 MHz; in single precision 23's output
        // is the nearest.
        (28.571, [7, 8, 23, 11], 200.0 / 7.0, 4600.0 / 7.0),
        // 26.25 MHz needs a 1 MHz PFD: the nearest is 25 MHz.
        (26.25, [1, 1, 24, 11], 25.0, 600.0),
        (48.0, [8, 15, 13, 6], 46.875, 609.375),
    ];

    #[test]
    fn ecp5_settings_are_ecppll_s() {
        for &(out, [clki, clkfb, clkop, cphase], achieved, vco) in ECPPLL_25MHZ {
            let p = Ecp5Pll::for_output(25_000_000, out).unwrap();
            assert_eq!(
                (p.clki_div, p.clkfb_div, p.clkop_div, p.clkop_cphase),
                (clki, clkfb, clkop, cphase),
                "{out} MHz"
            );
            assert!((p.out_hz() / 1e6 - achieved).abs() < 1e-9, "{out} MHz");
            assert!((p.vco_hz() / 1e6 - vco).abs() < 1e-9, "{out} MHz");
        }
    }

    #[test]
    fn ecp5_refuses_what_the_pll_cannot_make() {
        let e = Ecp5Pll::for_output(25_000_000, 5.0).unwrap_err();
        assert!(
            e.contains("10") && e.contains("400") && !e.contains('\n'),
            "{e}"
        );
        assert!(Ecp5Pll::for_output(25_000_000, 401.0).is_err());
        assert!(Ecp5Pll::for_output(4_000_000, 50.0).is_err());
    }

    /// `gowin_pll -i 27 -o F -d PART` (Apicula 0.32's gowin_pll, which
    /// scripts/fpga/install.sh installs): requested MHz, then IDIV_SEL,
    /// FBDIV_SEL, ODIV_SEL of the module it prints, and the achieved MHz.
    const GOWIN_PLL_20K: &[(f64, [u32; 3], f64)] = &[
        (13.5, [1, 0, 48], 13.5),
        (20.0, [3, 2, 32], 20.25),
        (25.0, [8, 7, 32], 24.0),
        (27.0, [0, 0, 32], 27.0),
        (30.0, [8, 9, 32], 30.0),
        (33.333, [8, 10, 16], 33.0),
        (40.0, [1, 2, 16], 40.5),
        (50.0, [6, 12, 16], 27.0 * 13.0 / 7.0),
        (54.0, [0, 1, 16], 54.0),
        (65.0, [4, 11, 8], 64.8),
        (75.0, [8, 24, 8], 75.0),
        (100.0, [6, 25, 8], 27.0 * 26.0 / 7.0),
        (125.0, [7, 36, 8], 124.875),
        (150.0, [8, 49, 4], 150.0),
    ];
    const GOWIN_PLL_9K: &[(f64, [u32; 3], f64)] = &[
        (13.5, [1, 0, 32], 13.5),
        (27.0, [0, 0, 16], 27.0),
        (30.0, [8, 9, 16], 30.0),
        (50.0, [6, 12, 8], 27.0 * 13.0 / 7.0),
        (100.0, [6, 25, 4], 27.0 * 26.0 / 7.0),
        (108.0, [0, 3, 4], 108.0),
    ];

    #[test]
    fn gowin_settings_are_gowin_pll_s() {
        for (device, table) in [
            (GowinDevice::Gw2ar18, GOWIN_PLL_20K),
            (GowinDevice::Gw1nr9, GOWIN_PLL_9K),
        ] {
            for &(out, [idiv, fbdiv, odiv], achieved) in table {
                let p = GowinPll::for_output(27_000_000, device, out).unwrap();
                assert_eq!(
                    (p.idiv_sel, p.fbdiv_sel, p.odiv_sel),
                    (idiv, fbdiv, odiv),
                    "{device:?} {out} MHz"
                );
                assert!((p.out_hz() / 1e6 - achieved).abs() < 1e-9, "{out} MHz");
            }
        }
    }

    #[test]
    fn gowin_refuses_what_the_pll_cannot_make() {
        let e = GowinPll::for_output(27_000_000, GowinDevice::Gw2ar18, 700.0).unwrap_err();
        assert!(
            e.contains("3.90625") && e.contains("625") && !e.contains('\n'),
            "{e}"
        );
        assert!(GowinPll::for_output(27_000_000, GowinDevice::Gw1nr9, 3.0).is_err());
        assert!(GowinPll::for_output(2_000_000, GowinDevice::Gw1nr9, 27.0).is_err());
    }

    #[test]
    fn mhz_text_drops_trailing_zeros() {
        assert_eq!(mhz_text(22_500_000.0), "22.5");
        assert_eq!(mhz_text(25_000_000.0), "25");
        assert_eq!(mhz_text(100e6 / 3.0), "33.333");
    }
}

//! Yosys synthesis scripts for each family and what is read back from them.
//!
//! Every script is built from the recipes in [`board::yosys`], which the board
//! builds use too: elaborate, fail on any latch, flatten, lower variable
//! shifts early ([`LOWER_VARIABLE_SHIFTS`]), leave multipliers for
//! the DSP blocks only up to the part's count (the rest become LUT logic), and
//! on iCE40 skip `ice40_dsp`, whose netlist of the MXU does not simulate like
//! the RTL (`tests/gate_level.rs`).
//!
//! The accumulator memory is marked `ram_style = "block"` so it always lands in
//! block RAM; the small weight FIFO is left to Yosys' cost model (LUT RAM on
//! ECP5 and 7-series, block RAM on iCE40, which has no LUT RAM).

use crate::design::FlowDesign;
use crate::parts::{Family, Part, Resources};
use board::yosys;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write;

/// What the synthesis of one design for one part gave.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SynthStats {
    pub resources: Resources,
    /// Multipliers left in LUT logic because the DSP budget was spent.
    pub lut_multipliers: u64,
    /// Every cell type of the final netlist and its count.
    pub cells: BTreeMap<String, u64>,
    /// ECP5 place and route: the flip-flops moved into DSP blocks
    /// ([`crate::dsp_registers`]); `resources.ffs` counts those left.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dsp_registers: Option<crate::dsp_registers::Packed>,
}

/// ECP5, before the netlist for place and route is written: the modules
/// kept apart in synthesis (`hw::ModuleBuilder::keep_hierarchy`, so that
/// Yosys does not merge their registers with equal ones) are flattened, as
/// nextpnr would flatten them (the attribute on a module or on an
/// instance), so that the DSP register pass
/// ([`crate::dsp_registers`]) sees the operand registers they hold.
pub const ECP5_FLATTEN_KEPT: &str =
    "setattr -mod -unset keep_hierarchy\nsetattr -unset keep_hierarchy\nflatten\n";

/// Lowers every variable shift (`$shl`, `$shr`, `$sshl`, `$sshr`, `$shift`,
/// `$shiftx`) to its log-depth multiplexer stages before the family's
/// synthesis, which would do the same later. Done early because Yosys's
/// SAT-based `share` pass tries to prove every pair of shifters that feed a
/// multiplexer mutually exclusive, and the fp32 units' alignment and
/// normalisation shifters (one set per lane or per tile) made it run for hours
/// (SparseCore T1: over 25 minutes; with this, 79 s). Nothing of an int8 MXU
/// changes: its only shifts are by constants.
pub const LOWER_VARIABLE_SHIFTS: &str =
    "techmap -map +/techmap.v t:$shl t:$shr t:$sshl t:$sshr t:$shift t:$shiftx\nopt_expr; opt_clean\n";

/// The Yosys script for `sources` (file names relative to the run folder) with
/// top module `top`, for `part`, for `design` (its multipliers decide the
/// DSP budget split ([`crate::design::DspPlan`]), its memories what goes to
/// block RAM). Writes `stat.json` and, for place and route, `synth.json`.
pub fn script(sources: &[String], top: &str, part: &Part, design: &FlowDesign) -> String {
    let mut s = yosys::read_command(sources);
    s.push_str(&yosys::elaborate_commands(top));
    s.push_str(LOWER_VARIABLE_SHIFTS);
    let facts = design.facts();
    let mut memories = facts.block_ram.clone();
    if !part.family.has_distributed_ram() {
        memories.extend(&facts.block_ram_without_lutram);
    }
    if !memories.is_empty() {
        let _ = writeln!(s, "setattr -set ram_style \"block\" {}", memories.join(" "));
    }
    s.push_str(&design.dsp_plan(part).commands());
    match part.family {
        Family::Ice40 if part.capacity.dsps > 0 => s.push_str(&yosys::ice40_dsp_commands(top)),
        Family::Ice40 => {
            let _ = writeln!(s, "synth_ice40 -top {top}");
        }
        Family::Ecp5 => {
            let _ = writeln!(s, "synth_ecp5 -top {top}");
        }
        Family::Xc7 => {
            let _ = writeln!(s, "synth_xilinx -flatten -family xc7 -top {top}");
        }
        Family::Gowin => {
            let _ = writeln!(s, "synth_gowin -top {top}");
        }
    }
    let _ = writeln!(s, "tee -q -o stat.json stat -json");
    if part.has_pnr() {
        if crate::dsp_registers::applies_to(part) {
            s.push_str(ECP5_FLATTEN_KEPT);
        }
        let _ = writeln!(s, "write_json synth.json");
    }
    s
}

/// Cell counts of the top module in a Yosys `stat -json` report.
pub fn parse_stat_json(text: &str) -> Result<BTreeMap<String, u64>, String> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("cannot read yosys stat -json: {e}"))?;
    let by_type = v
        .get("design")
        .and_then(|d| d.get("num_cells_by_type"))
        .or_else(|| {
            v.get("modules")
                .and_then(|m| m.as_object())
                .and_then(|m| m.values().next())
                .and_then(|m| m.get("num_cells_by_type"))
        })
        .and_then(|t| t.as_object())
        .ok_or("yosys stat -json has no num_cells_by_type")?;
    Ok(by_type
        .iter()
        .filter(|(name, _)| !name.starts_with("$scopeinfo"))
        .filter_map(|(name, n)| Some((name.clone(), n.as_u64()?)))
        .collect())
}

/// LUTs each Xilinx LUT-RAM or shift-register primitive occupies.
fn xc7_lut_cost(cell: &str) -> u64 {
    match cell {
        "LUT1" | "LUT2" | "LUT3" | "LUT4" | "LUT5" | "LUT6" | "LUT6_2" => 1,
        "SRL16E" | "SRLC16E" | "SRLC32E" | "RAM32X1S" | "RAM64X1S" => 1,
        "RAM32X1D" | "RAM64X1D" | "RAM128X1S" => 2,
        "RAM32M" | "RAM64M" | "RAM128X1D" | "RAM256X1S" => 4,
        "RAM32M16" | "RAM64M8" => 8,
        _ => 0,
    }
}

/// LUT4s each Gowin LUT, carry or LUT-RAM primitive occupies (an `ALU` is
/// one LUT of a slice in carry mode; a 16x4 shadow RAM takes a CLU's four
/// LUTs).
fn gowin_lut_cost(cell: &str) -> u64 {
    match cell {
        "LUT1" | "LUT2" | "LUT3" | "LUT4" | "ALU" => 1,
        "RAM16S1" | "RAM16SDP1" => 1,
        "RAM16S2" | "RAM16SDP2" => 2,
        "RAM16S4" | "RAM16SDP4" => 4,
        _ => 0,
    }
}

/// Cells that are latches in a family's netlist: Yosys's own, Xilinx's
/// `LDCE`/`LDPE`, and Gowin's `DL` with its variants (`DLE`, `DLC`, `DLNP`,
/// ...: `DL` and only the letters of the clear, preset, enable and negative
/// gate options, so that a name such as ECP5's `DLLDELD` is not one).
fn is_latch(cell: &str) -> bool {
    let gowin_latch = cell
        .strip_prefix("DL")
        .is_some_and(|options| options.chars().all(|c| "CEPN".contains(c)));
    cell.contains("DLATCH") || cell.starts_with("LDCE") || cell.starts_with("LDPE") || gowin_latch
}

/// LUTs, flip-flops, DSP blocks and block RAMs of a netlist of `family`.
pub fn resources(family: Family, cells: &BTreeMap<String, u64>) -> Resources {
    let sum = |f: &dyn Fn(&str) -> u64| -> u64 { cells.iter().map(|(c, n)| f(c) * n).sum() };
    match family {
        Family::Ice40 => Resources {
            luts: sum(&|c| (c == "SB_LUT4") as u64),
            ffs: sum(&|c| c.starts_with("SB_DFF") as u64),
            dsps: sum(&|c| (c == "SB_MAC16") as u64),
            brams: sum(&|c| (c == "SB_RAM40_4K") as u64) as f64,
        },
        Family::Ecp5 => Resources {
            luts: sum(&|c| match c {
                "LUT4" => 1,
                "CCU2C" | "TRELLIS_DPR16X4" => 2,
                _ => 0,
            }),
            ffs: sum(&|c| (c == "TRELLIS_FF") as u64),
            dsps: sum(&|c| (c == "MULT18X18D") as u64),
            brams: sum(&|c| (c == "DP16KD") as u64) as f64,
        },
        Family::Xc7 => Resources {
            luts: sum(&xc7_lut_cost),
            ffs: sum(&|c| matches!(c, "FDRE" | "FDSE" | "FDCE" | "FDPE") as u64),
            dsps: sum(&|c| (c == "DSP48E1") as u64),
            brams: sum(&|c| (c == "RAMB36E1") as u64) as f64
                + 0.5 * sum(&|c| (c == "RAMB18E1") as u64) as f64,
        },
        Family::Gowin => Resources {
            luts: sum(&gowin_lut_cost),
            ffs: sum(&|c| c.starts_with("DFF") as u64),
            dsps: sum(&|c| match c {
                "MULT9X9" | "MULT18X18" | "MULTALU18X18" | "MULTADDALU18X18" => 1,
                "MULT36X36" | "MULTALU36X18" => 4,
                _ => 0,
            }),
            brams: sum(&|c| {
                matches!(
                    c,
                    "DP" | "DPB"
                        | "DPX9"
                        | "DPX9B"
                        | "SDP"
                        | "SDPB"
                        | "SDPX9"
                        | "SDPX9B"
                        | "SP"
                        | "SPX9"
                        | "pROM"
                        | "pROMX9"
                ) as u64
            }) as f64,
        },
    }
}

/// Checks a final netlist: no latch, no memory or multiplier left unmapped.
pub fn check_netlist(cells: &BTreeMap<String, u64>) -> Result<(), String> {
    if let Some((c, n)) = cells.iter().find(|(c, _)| is_latch(c)) {
        return Err(format!("{n} latch cells ({c}) in the netlist"));
    }
    if let Some((c, n)) = cells.iter().find(|(c, _)| c.starts_with("$mem")) {
        return Err(format!("{n} memories ({c}) left unmapped"));
    }
    if let Some((c, n)) = cells.iter().find(|(c, _)| c.starts_with('$')) {
        return Err(format!("{n} generic cells ({c}) left unmapped"));
    }
    Ok(())
}

/// Reads a finished synthesis of `design`: the cell counts, the resources,
/// and checks (no latch, nothing unmapped, a DSP block at least for every
/// multiplier given them).
pub fn read_stats(part: &Part, stat_json: &str, design: &FlowDesign) -> Result<SynthStats, String> {
    let cells = parse_stat_json(stat_json)?;
    check_netlist(&cells)?;
    let resources = resources(part.family, &cells);
    let count = design.facts().multiplier_count();
    let want = design.dsp_plan(part).total();
    if resources.dsps < want {
        return Err(format!(
            "only {} {} blocks for {want} multipliers given DSP blocks",
            resources.dsps,
            part.family.dsp_unit()
        ));
    }
    Ok(SynthStats {
        resources,
        lut_multipliers: count - want,
        cells,
        dsp_registers: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parts::part;

    #[test]
    fn the_banked_register_file_goes_to_block_ram_only_without_distributed_ram() {
        let block = gen::find_block("vpu").unwrap();
        let table = "lanes = 1\nsublanes = 1\nunits = \"int32\"\ndepth = 6"
            .parse()
            .unwrap();
        let d = FlowDesign::of(block, &table).unwrap();
        let sources = ["vpu.v".to_string()];
        let line = |p: &str| {
            let s = script(&sources, "fpga_top", part(p).unwrap(), &d);
            s.lines()
                .find(|l| l.starts_with("setattr -set ram_style"))
                .map(str::to_string)
        };
        assert_eq!(
            line("ice40-up5k").as_deref(),
            Some("setattr -set ram_style \"block\" m:*vmem m:*rf_load m:*rf_alu")
        );
        assert_eq!(
            line("ecp5-85f").as_deref(),
            Some("setattr -set ram_style \"block\" m:*vmem")
        );
    }

    #[test]
    fn products_too_narrow_for_gowin_dsps_need_no_block() {
        // A SparseCore tile at depth 7: 8 combine lanes of four significand
        // pieces (32 blocks), and three index products, 31 x 4 (two
        // MULT18X18), 2 x 2 and 3 x 2 (logic on Gowin). Yosys 0.70 made 26
        // MULT18X18 and 8 MULT9X9 of it.
        let b = gen::find_block("sparsecore").unwrap();
        let table =
            "tiles = 1\nmax_dim = 8\nmax_batch = 4\nqueue_depth = 4\nhbm_inflight = 4\ndepth = 7";
        let design = FlowDesign::of(b, &table.parse().unwrap()).unwrap();
        let gowin = crate::parts::part("gw2ar-18").unwrap();
        let stat = |mult18: u32| {
            format!(
                r#"{{"modules":{{"\\t":{{"num_cells_by_type":{{"LUT4":100,"MULT18X18":{mult18},"MULT9X9":8}}}}}}}}"#
            )
        };
        let stats = read_stats(gowin, &stat(26), &design).unwrap();
        assert_eq!(stats.resources.dsps, 34);
        assert_eq!(stats.lut_multipliers, 2, "the 2 x 2 and 3 x 2 products");
        // A block fewer than the wide multipliers need is still an error.
        let err = read_stats(gowin, &stat(24), &design).unwrap_err();
        assert!(err.contains("blocks for 33 multipliers"), "{err}");
    }

    #[test]
    fn reads_stat_json_of_both_yosys_versions() {
        let old = r#"{"creator":"Yosys 0.23","modules":{"\\t":{"num_cells_by_type":{"SB_LUT4":10}}},
            "design":{"num_cells":12,"num_cells_by_type":{"SB_LUT4":10,"SB_DFF":2}}}"#;
        let cells = parse_stat_json(old).unwrap();
        assert_eq!(cells["SB_DFF"], 2);
        let new =
            r#"{"modules":{"\\t":{"num_cells_by_type":{"LUT4":3,"CCU2C":2,"$scopeinfo":4}}}}"#;
        let cells = parse_stat_json(new).unwrap();
        assert!(!cells.contains_key("$scopeinfo"));
        assert_eq!(resources(Family::Ecp5, &cells).luts, 7);
        assert!(parse_stat_json("{}").is_err());
    }

    #[test]
    fn counts_xilinx_resources() {
        let cells: BTreeMap<String, u64> = [
            ("LUT6", 10),
            ("RAM64M", 2),
            ("SRL16E", 1),
            ("FDRE", 7),
            ("RAMB18E1", 3),
            ("RAMB36E1", 1),
            ("DSP48E1", 4),
        ]
        .into_iter()
        .map(|(c, n)| (c.to_string(), n))
        .collect();
        let r = resources(Family::Xc7, &cells);
        assert_eq!((r.luts, r.ffs, r.dsps), (19, 7, 4));
        assert_eq!(r.brams, 2.5);
        assert!(check_netlist(&cells).is_ok());
        let mut bad = cells.clone();
        bad.insert("LDCE".into(), 1);
        assert!(check_netlist(&bad).unwrap_err().contains("latch"));
        let p = part("xc7a35t").unwrap();
        let design = |block: &str, table: &str| {
            FlowDesign::of(gen::find_block(block).unwrap(), &table.parse().unwrap()).unwrap()
        };
        let mxu = |r: u32, c: u32| design("mxu", &format!("rows = {r}\ncols = {c}"));
        assert!(script(&["a.v".into()], "t", p, &mxu(10, 10)).contains("alumacc @softmul"));
        assert!(!script(&["a.v".into()], "t", p, &mxu(9, 10)).contains("alumacc"));
        // 90 DSPs hold 22 lanes' 32x32 multipliers; the 32nd lane's is logic.
        let vpu = design("vpu", "lanes = 32\nsublanes = 1");
        let s = script(&["a.v".into()], "t", p, &vpu);
        assert!(
            s.contains("g_lane_lane?21?") && !s.contains("g_lane_lane?22?"),
            "{s}"
        );
        assert!(s.contains("m:*vmem"), "{s}");
        // Shifts are lowered after flattening and before the family's synthesis.
        let lower = s
            .find("techmap -map +/techmap.v t:$shl")
            .expect("shifts lowered");
        assert!(s.find("flatten").unwrap() < lower && lower < s.find("synth_xilinx").unwrap());
    }

    #[test]
    fn counts_gowin_resources() {
        let cells: BTreeMap<String, u64> = [
            ("LUT4", 10),
            ("ALU", 3),
            ("RAM16SDP4", 2),
            ("DFFRE", 5),
            ("DFF", 2),
            ("MULT9X9", 16),
            ("SDPB", 8),
        ]
        .into_iter()
        .map(|(c, n)| (c.to_string(), n))
        .collect();
        let r = resources(Family::Gowin, &cells);
        assert_eq!((r.luts, r.ffs, r.dsps, r.brams), (21, 7, 16, 8.0));
        assert!(check_netlist(&cells).is_ok());
        for latch in ["DL", "DLE", "DLCE", "DLNP"] {
            assert!(is_latch(latch), "{latch}");
        }
        for not_latch in ["DLLDELD", "DFFRE", "DPB"] {
            assert!(!is_latch(not_latch), "{not_latch}");
        }
        let p = part("gw2ar-18").unwrap();
        let mxu = FlowDesign::of(
            gen::find_block("mxu").unwrap(),
            &"rows = 2\ncols = 2".parse().unwrap(),
        )
        .unwrap();
        assert!(script(&["a.v".into()], "t", p, &mxu).contains("synth_gowin -top t"));
    }
}

//! The report: what every flow gave, as JSON (`report.json`) and as Markdown
//! tables (`report.md`).

use crate::flow::{fmt_bram, FlowResult};
use crate::parts::{Part, PARTS};
use crate::search::SearchResult;
use crate::shard::ShardRecord;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

/// Everything one `fpga report` run found.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// The command that reproduces the report (the output folder aside).
    pub command: String,
    pub quick: bool,
    pub seconds: f64,
    /// The commit the tools were built from (`git describe --always
    /// --dirty`), if known.
    pub commit: Option<String>,
    /// Tool name -> version line.
    pub tools: BTreeMap<String, String>,
    /// The `--param BLOCK.KEY=VALUE` settings every preset and search of
    /// the block was built with.
    pub params: Vec<String>,
    pub parts: Vec<Part>,
    pub presets: Vec<FlowResult>,
    pub not_built: Vec<String>,
    /// Every search of every block, on every part.
    pub largest: Vec<SearchResult>,
    /// A shard's report (`--shard K/N`): which part of the work it holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardRecord>,
}

impl Report {
    /// Writes `report.json` and `report.md` into `out` (each via a temporary file).
    pub fn write(&self, out: &Path) -> Result<(), String> {
        let json = serde_json::to_string_pretty(self)
            .map_err(|e| format!("cannot serialise the report: {e}"))?;
        write_atomic(&out.join("report.json"), &json)?;
        write_atomic(&out.join("report.md"), &self.markdown())
    }

    /// The Markdown form.
    pub fn markdown(&self) -> String {
        let mut s = self.intro();
        let _ = writeln!(s, "## Presets\n");
        s.push_str(&flow_table(&self.presets, true));
        for nb in &self.not_built {
            let _ = writeln!(s, "\n{nb}");
        }
        s.push_str(&largest_markdown(&self.largest));
        s.push_str(&parts_table(&self.parts));
        s
    }

    /// The title, the command, the tools and how to read the tables.
    fn intro(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "# FPGA resource and Fmax report\n");
        let params = if self.params.is_empty() {
            String::new()
        } else {
            format!(" Settings: {}.", self.params.join(", "))
        };
        let commit = match &self.commit {
            Some(c) => format!(" Commit {c}."),
            None => String::new(),
        };
        let _ = writeln!(
            s,
            "`{}`{}: {:.0} s.{commit}{params}\n",
            self.command,
            if self.quick { " (quick subset)" } else { "" },
            self.seconds,
        );
        if let Some(shard) = &self.shard {
            let _ = writeln!(
                s,
                "Shard {} of {}: {} of the {} flows and {} of the {} searches (`fpga report \
                 --merge` joins the shards' reports).\n",
                shard.index,
                shard.count,
                shard.flows.len(),
                shard.total_flows,
                shard.searches.len(),
                shard.total_searches
            );
        }
        let _ = writeln!(s, "Tools:");
        for (tool, v) in &self.tools {
            let _ = writeln!(s, "- {tool}: {v}");
        }
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "Counts are of the synthesised netlist, harness included (one flip-flop per \
             port bit of the block, see `fpga/src/harness.rs`; its FF count is in the notes). \
             Fmax is nextpnr's for `clk_i` after timing-driven place and route at the target \
             frequency; \"fits\" is by place and route for iCE40 and ECP5 and by synthesis \
             estimate (every resource <= 100 %) for Xilinx 7-series, which has no open place \
             and route here. Multipliers go to DSP blocks up to the part's DSP count, the \
             rest to LUTs; the memories each block names (the MXU's accumulator, the VPU's \
             VMEM, ...) go to block RAM. On ECP5 the flip-flops around a DSP block's \
             multiplier move into its own registers before place and route \
             (`fpga/src/dsp_registers.rs`); FFs count those left in the fabric.\n"
        );
        s
    }
}

/// The "largest per part" section: one table for every search, one row per
/// (block, search, part), then the sizes each search tried.
fn largest_markdown(largest: &[SearchResult]) -> String {
    let mut s = String::new();
    if largest.is_empty() {
        return s;
    }
    let _ = writeln!(s, "\n## Largest per part\n");
    let _ = writeln!(
        s,
        "Each block's searches: bracketed by synthesis estimates, the winner confirmed by \
         place and route where the family has it (\"largest\" is the confirmed one).\n"
    );
    let mut searches: Vec<(&str, &str, &str)> = Vec::new();
    for l in largest {
        let key = (l.block.as_str(), l.search.as_str(), l.description.as_str());
        if !searches.contains(&key) {
            searches.push(key);
        }
    }
    for (block, search, description) in &searches {
        let _ = writeln!(s, "- {block} {search}: {description}");
    }
    let _ = writeln!(
        s,
        "\n| block | search | part | largest | LUT % | FF % | DSP % | BRAM % | Fmax (MHz) | \
         by synthesis estimate | next size up |"
    );
    let _ = writeln!(
        s,
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    );
    for l in largest {
        let (u, fmax, next) = search_cells(l.result.as_ref(), &l.error, &l.next_size_up);
        let dash = || "-".to_string();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {u} | {fmax} | {} | {} |",
            l.block,
            l.search,
            l.part,
            l.size_label.clone().unwrap_or_else(dash),
            l.estimate_label.clone().unwrap_or_else(dash),
            cell(&next)
        );
    }
    let _ = writeln!(s, "\nSizes tried:\n");
    for l in largest {
        let _ = writeln!(
            s,
            "- {} {} on {} ({:.0} s): {}",
            l.block,
            l.search,
            l.part,
            l.seconds,
            l.trail.join("; ")
        );
    }
    s
}

/// The table of the parts the report covers.
fn parts_table(parts: &[Part]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "\n## Parts\n");
    let _ = writeln!(
        s,
        "| part | device | package | boards | LUTs | FFs | DSPs | BRAMs | flow | target MHz |"
    );
    let _ = writeln!(
        s,
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    );
    for p in parts {
        let flow = if p.has_pnr() {
            "synthesis, place and route"
        } else {
            "synthesis estimate"
        };
        let target = if p.has_pnr() {
            format!("{}", p.target_mhz)
        } else {
            "-".into()
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} {} | {} {} | {flow} | {target} |",
            p.name,
            p.device,
            p.package,
            p.boards,
            p.capacity.luts,
            p.capacity.ffs,
            p.capacity.dsps,
            p.family.dsp_unit(),
            fmt_bram(p.capacity.brams),
            p.family.bram_unit()
        );
    }
    s
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

/// The cells every "largest per part" row has: the winner's utilization
/// (LUT, FF, DSP and BRAM %, or dashes), its Fmax, and the next size up or,
/// when the search stopped early, why.
fn search_cells(
    result: Option<&FlowResult>,
    error: &Option<String>,
    next_size_up: &Option<String>,
) -> (String, String, String) {
    let utilization = result
        .and_then(|r| r.utilization)
        .map(|u| {
            [u.luts, u.ffs, u.dsps, u.brams]
                .map(|p| format!("{p:.0}"))
                .join(" | ")
        })
        .unwrap_or_else(|| "- | - | - | -".into());
    let fmax = result.map_or_else(|| "-".into(), fmax_cell);
    let next = error
        .as_ref()
        .map(|e| format!("search stopped: {e}"))
        .or_else(|| next_size_up.clone())
        .unwrap_or_else(|| "-".into());
    (utilization, fmax, next)
}

fn fmax_cell(r: &FlowResult) -> String {
    match &r.pnr {
        Some(p) => match p.fmax_mhz {
            Some(f) => format!("{f:.1}"),
            None => "?".into(),
        },
        None if PARTS.iter().any(|p| p.name == r.part && !p.has_pnr()) => "n/a (no P&R)".into(),
        None => "-".into(),
    }
}

/// The block's pipeline depth: its configuration's `depth` key, "-" for a
/// block whose configuration has none.
pub fn depth_cell(r: &FlowResult) -> String {
    r.design
        .config
        .get("depth")
        .cloned()
        .unwrap_or_else(|| "-".into())
}

/// Where the critical path starts and ends and how its delay splits, "-"
/// without place and route.
pub fn critical_path_cell(r: &FlowResult) -> String {
    r.pnr
        .as_ref()
        .and_then(|p| p.critical_path.as_ref())
        .map_or_else(|| "-".into(), |c| c.summary())
}

/// The Markdown table of `results`.
pub fn flow_table(results: &[FlowResult], with_design: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| {}part | depth | LUTs | FFs | DSPs | BRAMs | LUT % | FF % | DSP % | BRAM % | Fmax (MHz) | \
         critical path | fits | notes |",
        if with_design { "design | " } else { "" }
    );
    let _ = writeln!(
        s,
        "| {}--- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        if with_design { "--- | " } else { "" }
    );
    for r in results {
        let design = if with_design {
            format!("{} | ", r.design.label)
        } else {
            String::new()
        };
        let (counts, pct) = match (&r.synth, &r.utilization) {
            (Some(st), Some(u)) => (
                format!(
                    "{} | {} | {} | {}",
                    st.resources.luts,
                    st.resources.ffs,
                    st.resources.dsps,
                    fmt_bram(st.resources.brams)
                ),
                [u.luts, u.ffs, u.dsps, u.brams]
                    .map(|p| {
                        if p.is_finite() {
                            format!("{p:.0}")
                        } else {
                            "-".into()
                        }
                    })
                    .join(" | "),
            ),
            _ => ("- | - | - | -".into(), "- | - | - | -".into()),
        };
        let fits = match (r.fits, r.fit_basis.as_deref()) {
            (Some(true), Some("place and route")) => "yes",
            (Some(true), _) => "yes (estimate)",
            (Some(false), Some(b)) if b.starts_with("lower bound") => "no (bound)",
            (Some(false), _) => "no",
            (None, _) => "error",
        };
        let mut notes = Vec::new();
        if let Some(e) = &r.error {
            notes.push(format!("error: {e}"));
        }
        if let Some(w) = &r.why_not {
            notes.push(w.clone());
        }
        if let Some(st) = &r.synth {
            if st.lut_multipliers > 0 {
                notes.push(format!("{} multipliers in LUTs", st.lut_multipliers));
            }
            if let Some(p) = st.dsp_registers.filter(|p| p.removed_ffs > 0) {
                notes.push(format!(
                    "DSP registers: operands of {}, products of {} ({} FFs moved in)",
                    p.inputs, p.outputs, p.removed_ffs
                ));
            }
        }
        if r.harness_ffs > 0 {
            notes.push(format!("harness {} FFs", r.harness_ffs));
        }
        if let Some(placer) = r.pnr.as_ref().and_then(|p| p.placer.as_ref()) {
            notes.push(format!("{placer} placer"));
        }
        if let Some(weight) = r.pnr.as_ref().and_then(|p| p.timing_weight) {
            notes.push(format!("placer timing weight {weight}"));
        }
        if r.pnr.as_ref().is_some_and(|p| p.timing_ripup) {
            notes.push("timing-driven ripup".to_string());
        }
        if let Some(pnr) = &r.pnr {
            let part_target = crate::parts::part(&r.part).map(|p| p.target_mhz);
            if part_target.is_some_and(|t| t != pnr.target_mhz) {
                notes.push(format!("placed for {} MHz", pnr.target_mhz));
            }
        }
        let _ = writeln!(
            s,
            "| {design}{} | {} | {counts} | {pct} | {} | {} | {fits} | {} |",
            r.part,
            depth_cell(r),
            fmax_cell(r),
            cell(&critical_path_cell(r)),
            cell(&notes.join("; "))
        );
    }
    s
}

fn write_atomic(path: &Path, text: &str) -> Result<(), String> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::PnrResult;

    /// A placed and routed result of a 2x2 MXU on the UP5K, with `config`
    /// keys set over its configuration.
    fn routed(extra: &[(&str, &str)]) -> FlowResult {
        let mxu = gen::find_block("mxu").unwrap();
        let design = crate::FlowDesign::of(mxu, &"rows = 2\ncols = 2".parse().unwrap()).unwrap();
        let mut info = design.info();
        for (k, v) in extra {
            info.config.insert(k.to_string(), v.to_string());
        }
        let log = include_str!("../tests/data/nextpnr-ice40-up5k-mxu-int8-4x4.log");
        FlowResult {
            part: "ice40-up5k".into(),
            design: info,
            harness_ffs: 1,
            synth: None,
            synth_seconds: None,
            utilization: None,
            pnr: Some(PnrResult {
                fmax_mhz: Some(25.6),
                target_mhz: 36.0,
                utilization: BTreeMap::new(),
                seconds: 1.0,
                bitstream: None,
                critical_path: crate::timing::parse_critical_path(log),
                placer: None,
                timing_weight: None,
                timing_ripup: false,
            }),
            fits: Some(true),
            fit_basis: Some("place and route".into()),
            why_not: None,
            error: None,
            dir: "x".into(),
        }
    }

    #[test]
    fn rows_show_the_depth_and_the_critical_path() {
        // A block without a depth key shows "-".
        let mut no_depth = routed(&[]);
        no_depth.design.config.remove("depth");
        let table = flow_table(&[routed(&[("depth", "3")]), no_depth], true);
        let rows: Vec<&str> = table.lines().collect();
        let header: Vec<&str> = rows[0].split(" | ").collect();
        let cells = |row: &str| -> Vec<String> { row.split(" | ").map(str::to_string).collect() };
        let at = |name: &str| header.iter().position(|h| *h == name).unwrap();
        assert_eq!(cells(rows[2])[at("depth")], "3");
        assert_eq!(cells(rows[3])[at("depth")], "-");
        assert_eq!(
            cells(rows[2])[at("critical path")],
            "first_wave_q[3] -> g_pe_row[3].g_pe_col[0].pe.psum_d (17.1 ns logic, 22.0 ns routing)"
        );
        assert_eq!(cells(rows[2])[at("Fmax (MHz)")], "25.6");
    }
}

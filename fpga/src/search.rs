//! The searches for the largest design that fits a part: one algorithm for
//! every block's [`hw::FpgaSearch`] (the largest square int8 MXU, the
//! largest VPUs, the SparseCore with the most tiles, ...).
//!
//! Synthesis is the cheap test: the search starts from what this run already
//! knows (the presets' results), grows the size by half (for sizes that are
//! powers of two: doubles it) until a size no longer fits or the search's
//! largest size fits, and bisects between the last fit and the first miss.
//! Where the family has place and route, the winner is then placed and
//! routed; if it does not route, the search bisects again below it with place
//! and route as the test. Every size tried is recorded.

use crate::design::FlowDesign;
use crate::flow::FlowResult;
use crate::parts::Part;
use crate::runner::Runner;
use hw::{AnyBlock, FpgaSearch};
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// What one search found on one part.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SearchResult {
    /// The block's registry name and the search's name within it.
    pub block: String,
    pub search: String,
    /// What was searched, one sentence.
    pub description: String,
    pub part: String,
    /// The largest size that fits (placed and routed where the family has
    /// it); `None` if not even the smallest does or the search failed first.
    pub size: Option<u32>,
    /// The largest size that fits by synthesis estimate.
    pub estimate: Option<u32>,
    /// `size` and `estimate` as the report writes them (`8x8`, `T=4`).
    pub size_label: Option<String>,
    pub estimate_label: Option<String>,
    /// The winner's flow.
    pub result: Option<FlowResult>,
    /// Why the next size up does not fit, or why it was not tried.
    pub next_size_up: Option<String>,
    /// The sizes tried, in order, with their outcome ("12x12: fits (synthesis
    /// estimate)").
    pub trail: Vec<String>,
    /// Why the search stopped early (a tool failure, its time limit); what it
    /// found until then stands.
    pub error: Option<String>,
    pub seconds: f64,
}

/// Runs `search` of `block` on `part`; `overrides` are set over the search's
/// base configuration (the report's `--param BLOCK.KEY=VALUE`).
pub fn largest(
    runner: &Runner,
    part: &'static Part,
    block: &dyn AnyBlock,
    search: &FpgaSearch,
    overrides: &toml::Table,
) -> SearchResult {
    let start = Instant::now();
    let mut s = Search {
        runner,
        part,
        block,
        spec: search,
        overrides,
        sizes: search.sizes.all(),
        trail: Vec::new(),
    };
    let mut out = SearchResult {
        block: block.name().to_string(),
        search: search.name.to_string(),
        description: search.description.to_string(),
        part: part.name.to_string(),
        size: None,
        estimate: None,
        size_label: None,
        estimate_label: None,
        result: None,
        next_size_up: None,
        trail: Vec::new(),
        error: None,
        seconds: 0.0,
    };
    if let Err(e) = s.run(&mut out) {
        // Keep what was confirmed before the failure (or the time limit).
        let routed = part.has_pnr();
        if let Some((n, r)) = s.best_known(routed) {
            out.size = Some(n);
            out.result = Some(r);
        }
        if out.estimate.is_none() {
            out.estimate = s.best_known(false).map(|(n, _)| n);
        }
        out.error = Some(e);
    }
    out.size_label = out.size.map(|n| search.label(n));
    out.estimate_label = out.estimate.map(|n| search.label(n));
    out.trail = s.trail;
    out.seconds = start.elapsed().as_secs_f64();
    out
}

/// One search in progress. Sizes are handled by their index in `sizes`.
struct Search<'a> {
    runner: &'a Runner,
    part: &'static Part,
    block: &'a dyn AnyBlock,
    spec: &'a FpgaSearch,
    overrides: &'a toml::Table,
    sizes: Vec<u32>,
    trail: Vec<String>,
}

impl Search<'_> {
    fn design(&self, n: u32) -> Result<FlowDesign, String> {
        let mut table = self.spec.table(n);
        table.extend(self.overrides.iter().map(|(k, v)| (k.clone(), v.clone())));
        FlowDesign::of(self.block, &table).map_err(|e| format!("{}: {e}", self.spec.label(n)))
    }

    /// The result this run already has for size index `i`, if any.
    fn known(&self, i: usize) -> Option<FlowResult> {
        let d = self.design(self.sizes[i]).ok()?;
        self.runner.known(&d, self.part)
    }

    /// The largest size already known to fit (placed and routed if `routed`).
    fn best_known(&self, routed: bool) -> Option<(u32, FlowResult)> {
        (0..self.sizes.len()).rev().find_map(|i| {
            let r = self.known(i)?;
            let ok = r.fits == Some(true) && (!routed || r.pnr.is_some());
            ok.then(|| (self.sizes[i], r))
        })
    }

    /// Runs (or recalls) the flow of size index `i`; `Err` if a tool failed
    /// or the search's time is up.
    fn probe(&mut self, i: usize, pnr: bool) -> Result<FlowResult, String> {
        let name = self.spec.label(self.sizes[i]);
        let with_pnr = if pnr { " with place and route" } else { "" };
        if self.runner.past_search_deadline() {
            return Err(format!(
                "search time limit reached before trying {name}{with_pnr}"
            ));
        }
        let r = self
            .runner
            .flow(&self.design(self.sizes[i])?, self.part, pnr);
        let basis = r.fit_basis.clone().unwrap_or_default();
        match (&r.error, r.fits) {
            (Some(e), _) => {
                self.trail.push(format!("{name}: error"));
                Err(format!("{name}: {e}"))
            }
            (None, Some(true)) => {
                self.trail.push(format!("{name}: fits ({basis})"));
                Ok(r)
            }
            _ => {
                let why = r.why_not.clone().unwrap_or_default();
                self.trail.push(format!("{name}: no ({basis}: {why})"));
                Ok(r)
            }
        }
    }

    /// The index of the next size to grow to from index `i`: by half (a
    /// power of two doubles), at least one step.
    fn grow(&self, i: usize) -> usize {
        let n = self.sizes[i];
        let want = n + n.div_ceil(2);
        self.sizes
            .iter()
            .position(|&m| m >= want)
            .unwrap_or(self.sizes.len() - 1)
            .max(i + 1)
    }

    fn run(&mut self, out: &mut SearchResult) -> Result<(), String> {
        let last = self.sizes.len() - 1;
        let mut by_synth = Bracket::default();
        for i in 0..self.sizes.len() {
            if let Some(r) = self.known(i).filter(|r| r.error.is_none()) {
                by_synth.add(i, r);
            }
        }
        if by_synth.lo.is_none() && by_synth.hi.is_none() {
            let start = self.sizes.iter().position(|&n| n >= self.spec.start);
            let i = start.unwrap_or(0);
            let r = self.probe(i, false)?;
            by_synth.add(i, r);
        }
        while by_synth.hi.is_none() && by_synth.lo.is_some_and(|lo| lo < last) {
            let i = self.grow(by_synth.lo.unwrap_or(0));
            let r = self.probe(i, false)?;
            by_synth.add(i, r);
        }
        by_synth.bisect(|i| self.probe(i, false))?;
        out.estimate = by_synth.lo.map(|i| self.sizes[i]);
        // The answer is placed and routed where the family has it; why the
        // next size does not fit comes from place and route, else from
        // synthesis.
        let (answer, synth_next) = match by_synth.lo {
            Some(i) if self.part.has_pnr() => {
                let routed_before = (0..=i).rev().find(|&j| {
                    self.known(j)
                        .is_some_and(|r| r.fits == Some(true) && r.pnr.is_some())
                });
                let mut routed = Bracket {
                    lo: routed_before,
                    hi: Some(i + 1),
                    ..Bracket::default()
                };
                let r = self.probe(i, true)?;
                routed.add(i, r);
                routed.bisect(|j| self.probe(j, true))?;
                if let (Some(j), None) = (routed.lo, &routed.lo_result) {
                    // Routed before the search (a preset): recalled, not rerun.
                    routed.lo_result = Some(self.probe(j, true)?);
                }
                (routed, by_synth.hi_result)
            }
            _ => (by_synth, None),
        };
        out.size = answer.lo.map(|i| self.sizes[i]);
        out.result = answer.lo_result;
        let next = answer.hi_result.or(synth_next);
        out.next_size_up = next.map(|r| {
            let n = self
                .spec
                .size_params
                .first()
                .and_then(|p| r.design.int(p))
                .map_or_else(|| r.design.label.clone(), |n| self.spec.label(n));
            let why = r.why_not.unwrap_or_else(|| "does not fit".into());
            format!("{n}: {why}")
        });
        if answer.lo == Some(last) {
            out.next_size_up = Some(format!(
                "not tried ({} is the largest size searched)",
                self.spec.label(self.sizes[last])
            ));
        }
        Ok(())
    }
}

/// What is known about one question ("does size i fit?"): the largest size
/// index that fits and the smallest that does not, with the results that
/// say so.
#[derive(Default)]
struct Bracket {
    lo: Option<usize>,
    lo_result: Option<FlowResult>,
    hi: Option<usize>,
    hi_result: Option<FlowResult>,
}

impl Bracket {
    fn add(&mut self, i: usize, r: FlowResult) {
        if r.fits == Some(true) {
            if self.lo.is_none_or(|lo| i >= lo) {
                self.lo = Some(i);
                self.lo_result = Some(r);
            }
        } else if self.hi.is_none_or(|h| i < h) {
            self.hi = Some(i);
            self.hi_result = Some(r);
        }
    }

    /// Halves the gap between `lo` (or below the smallest size) and `hi`
    /// with `probe` until they are adjacent.
    fn bisect(
        &mut self,
        mut probe: impl FnMut(usize) -> Result<FlowResult, String>,
    ) -> Result<(), String> {
        while let Some(h) = self.hi {
            // Index -1 stands for "nothing fits", below the smallest size.
            let lo = self.lo.map_or(-1, |l| l as i64);
            if h as i64 - lo <= 1 {
                break;
            }
            let mid = ((lo + h as i64) / 2) as usize;
            let r = probe(mid)?;
            self.add(mid, r);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::FlowEnv;

    fn result(i: usize, fits: bool) -> FlowResult {
        let mxu = gen::find_block("mxu").unwrap();
        let n = i + 1;
        let table = format!("rows = {n}\ncols = {n}").parse().unwrap();
        FlowResult {
            part: "p".into(),
            design: FlowDesign::of(mxu, &table).unwrap().info(),
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
        for (i, fits) in [(8, true), (16, false), (4, true), (24, false), (12, false)] {
            b.add(i, result(i, fits));
        }
        assert_eq!((b.lo, b.hi), (Some(8), Some(12)));
        assert_eq!(b.lo_result.unwrap().design.int("rows"), Some(9));
        assert_eq!(b.hi_result.unwrap().design.int("rows"), Some(13));
    }

    #[test]
    fn bisection_finds_the_threshold_and_stops_at_the_first_error() {
        let mut b = Bracket::default();
        b.add(4, result(4, true));
        b.add(24, result(24, false));
        let mut probed = Vec::new();
        b.bisect(|i| {
            probed.push(i);
            Ok(result(i, i <= 13))
        })
        .unwrap();
        assert_eq!((b.lo, b.hi), (Some(13), Some(14)));
        assert_eq!(probed, vec![14, 9, 11, 12, 13]);
        let mut b = Bracket::default();
        b.add(4, result(4, true));
        b.add(24, result(24, false));
        let e = b.bisect(|i| Err(format!("{i}: tool failed"))).unwrap_err();
        assert_eq!(e, "14: tool failed");
        assert_eq!((b.lo, b.hi), (Some(4), Some(24)));
        // Nothing fits at the first size tried: bisection goes below it.
        let mut b = Bracket::default();
        b.add(3, result(3, false));
        let mut probed = Vec::new();
        b.bisect(|i| {
            probed.push(i);
            Ok(result(i, i == 0))
        })
        .unwrap();
        assert_eq!((b.lo, b.hi, probed), (Some(0), Some(1), vec![1, 0]));
    }

    #[test]
    fn growth_is_by_half_or_to_the_next_power_of_two() {
        let dir = tempfile::tempdir().unwrap();
        let runner = Runner::new(FlowEnv::new(
            dir.path().to_path_buf(),
            1,
            std::time::Duration::from_secs(1),
        ));
        let part = crate::parts::part("xc7a35t").unwrap();
        let (mxu, vpu) = (
            gen::find_block("mxu").unwrap(),
            gen::find_block("vpu").unwrap(),
        );
        let square = &mxu.fpga_searches()[0];
        let lanes = &vpu.fpga_searches()[0];
        let empty = toml::Table::new();
        let search = |block, spec: &'static FpgaSearch| Search {
            runner: &runner,
            part,
            block,
            spec,
            overrides: &empty,
            sizes: spec.sizes.all(),
            trail: Vec::new(),
        };
        let square: &'static FpgaSearch = Box::leak(Box::new(square.clone()));
        let lanes: &'static FpgaSearch = Box::leak(Box::new(lanes.clone()));
        let s = search(mxu, square);
        // Index i is size i + 1: 4 -> 6 -> 9 -> 14.
        assert_eq!([s.grow(3), s.grow(5), s.grow(8)], [5, 8, 13]);
        let s = search(vpu, lanes);
        // Powers of two: 1 -> 2 -> 4.
        assert_eq!([s.grow(0), s.grow(1)], [1, 2]);
    }

    #[test]
    fn a_search_stopped_by_its_time_limit_keeps_what_it_found() {
        // A limit already passed: the first probe is refused, and the search
        // ends with its reason instead of failing the whole report.
        let dir = tempfile::tempdir().unwrap();
        let mut runner = Runner::new(FlowEnv::new(
            dir.path().to_path_buf(),
            1,
            std::time::Duration::from_secs(1),
        ));
        runner.search_deadline = -1.0;
        let part = crate::parts::part("xc7a35t").unwrap();
        let vpu = gen::find_block("vpu").unwrap();
        let spec = &vpu.fpga_searches()[1];
        let r = largest(&runner, part, vpu, spec, &toml::Table::new());
        assert!(r.size.is_none() && r.next_size_up.is_none());
        assert!(
            r.error.as_deref().unwrap().contains("time limit"),
            "{:?}",
            r.error
        );
        assert_eq!((r.block.as_str(), r.search.as_str()), ("vpu", "int32"));
    }
}

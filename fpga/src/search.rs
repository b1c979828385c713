//! The search for the largest square int8 MXU that fits a part.
//!
//! Synthesis is the cheap test: the search starts from the presets' results,
//! grows the size by half until an array no longer fits (at most
//! [`MAX_SIZE`]), and bisects between the last fit and the first miss. Where
//! the family has place and route, the winner is then placed and routed; if it
//! does not route, the search bisects again below it with place and route as
//! the test. Every size tried is recorded.

use crate::flow::FlowResult;
use crate::parts::Part;
use crate::report::Largest;
use crate::runner::Runner;
use config::{ElemType, MxuConfig};
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
            .map(|c| runner.flow(&c, part, part.has_pnr()));
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
    let r = runner.flow(&cfg(n, n, acc_rows)?, part, pnr);
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

fn search(
    runner: &Runner,
    part: &'static Part,
    acc_rows: u32,
    out: &mut Largest,
) -> Result<(), String> {
    // Bracket with synthesis estimates.
    let (mut lo, mut hi) = (0u32, None::<u32>);
    let mut hi_result: Option<FlowResult> = None;
    let fits = |r: &FlowResult| r.fits == Some(true);
    for n in runner.known_square_sizes(part, acc_rows) {
        let r = probe(runner, part, n, acc_rows, false, &mut out.trail)?;
        if fits(&r) {
            lo = lo.max(n);
            out.size = Some(lo);
        } else if hi.is_none_or(|h| n < h) {
            hi = Some(n);
            hi_result = Some(r);
        }
    }
    if lo == 0 && hi.is_none() {
        let r = probe(runner, part, 4, acc_rows, false, &mut out.trail)?;
        if fits(&r) {
            lo = 4;
            out.size = Some(lo);
        } else {
            hi = Some(4);
            hi_result = Some(r);
        }
    }
    while hi.is_none() && lo < MAX_SIZE {
        let n = (lo + lo.div_ceil(2)).min(MAX_SIZE);
        let r = probe(runner, part, n, acc_rows, false, &mut out.trail)?;
        if fits(&r) {
            lo = n;
            out.size = Some(lo);
        } else {
            hi = Some(n);
            hi_result = Some(r);
        }
    }
    while let Some(h) = hi {
        if h - lo <= 1 {
            break;
        }
        let mid = (lo + h) / 2;
        let r = probe(runner, part, mid, acc_rows, false, &mut out.trail)?;
        if fits(&r) {
            lo = mid;
            out.size = Some(lo);
        } else {
            hi = Some(mid);
            hi_result = Some(r);
        }
    }
    out.estimate_size = (lo > 0).then_some(lo);
    // Confirm with place and route, bisecting below on failure.
    let mut best = None;
    if lo > 0 {
        if part.has_pnr() {
            let mut p_lo = runner.largest_square(part, acc_rows, true).unwrap_or(0);
            let mut p_hi = lo + 1;
            let mut cand = lo;
            loop {
                let r = probe(runner, part, cand, acc_rows, true, &mut out.trail)?;
                if fits(&r) {
                    p_lo = cand;
                    best = Some(r);
                } else {
                    p_hi = cand;
                    hi_result = Some(r);
                }
                if p_hi - p_lo <= 1 {
                    break;
                }
                cand = (p_lo + p_hi) / 2;
            }
            if best.is_none() && p_lo > 0 {
                best = Some(probe(runner, part, p_lo, acc_rows, true, &mut out.trail)?);
            }
            lo = p_lo;
        } else {
            best = Some(probe(runner, part, lo, acc_rows, false, &mut out.trail)?);
        }
    }
    out.size = (lo > 0).then_some(lo);
    out.result = best;
    out.next_size_up = hi_result.as_ref().map(|r| {
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
    out.non_square = non_square(
        runner,
        part,
        acc_rows,
        lo,
        hi_result.as_ref(),
        &mut out.trail,
    );
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
        let tall = cfg(2 * n, n, acc_rows).map(|c| runner.flow(&c, part, false));
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

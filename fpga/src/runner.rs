//! Runs flows once each: results are kept by (design, part), so the search
//! reuses the presets' runs, and a placed-and-routed result also answers a
//! synthesis-only question.

use crate::design::FlowDesign;
use crate::flow::{self, FlowEnv, FlowResult};
use crate::parts::Part;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

pub struct Runner {
    pub env: FlowEnv,
    start: Instant,
    /// Seconds after the start at which the search stops trying new sizes.
    pub search_deadline: f64,
    done: Mutex<HashMap<(String, &'static str), FlowResult>>,
}

impl Runner {
    pub fn new(env: FlowEnv) -> Runner {
        Runner {
            env,
            start: Instant::now(),
            search_deadline: f64::INFINITY,
            done: Mutex::new(HashMap::new()),
        }
    }

    /// Seconds since the runner started.
    pub fn elapsed(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// The flow of `design` on `part` (place and route if `pnr` and
    /// available), run now or recalled; prints one progress line when run.
    pub fn flow(&self, design: &FlowDesign, part: &'static Part, pnr: bool) -> FlowResult {
        let info = design.info();
        let key = (info.top.clone(), part.name);
        if let Some(r) = self.done.lock().unwrap().get(&key) {
            let routed_or_final = r.pnr.is_some() || r.fits != Some(true) || !part.has_pnr();
            if !pnr || routed_or_final {
                return r.clone();
            }
        }
        let what = format!("{} {}", part.name, info.label);
        println!(
            "[{:7.1}s] {what}: start{}",
            self.elapsed(),
            if pnr && part.has_pnr() {
                " (synthesis, place and route)"
            } else {
                " (synthesis)"
            }
        );
        let r = flow::run_flow(&self.env, design, part, pnr);
        println!("[{:7.1}s] {what}: {}", self.elapsed(), summary(&r));
        self.done.lock().unwrap().insert(key, r.clone());
        r
    }

    /// The result of `design` on `part` if a flow of this run has it.
    pub fn known(&self, design: &FlowDesign, part: &Part) -> Option<FlowResult> {
        let key = (design.configured().top_name(), part.name);
        self.done.lock().unwrap().get(&key).cloned()
    }

    /// Whether the search has used up its time.
    pub fn past_search_deadline(&self) -> bool {
        self.elapsed() > self.search_deadline
    }
}

/// One line: counts, Fmax, fit.
pub fn summary(r: &FlowResult) -> String {
    if let Some(e) = &r.error {
        return format!("ERROR {e}");
    }
    let mut s = String::new();
    if let (Some(st), Some(secs)) = (&r.synth, r.synth_seconds) {
        let res = &st.resources;
        s.push_str(&format!(
            "LUT {} FF {} DSP {} BRAM {} (synthesis {secs:.0} s)",
            res.luts,
            res.ffs,
            res.dsps,
            flow::fmt_bram(res.brams)
        ));
    }
    if let Some(p) = &r.pnr {
        match p.fmax_mhz {
            Some(f) => s.push_str(&format!(", Fmax {f:.1} MHz (P&R {:.0} s)", p.seconds)),
            None => s.push_str(&format!(", Fmax ? (P&R {:.0} s)", p.seconds)),
        }
        if let Some(c) = &p.critical_path {
            s.push_str(&format!(", critical path {}", c.summary()));
        }
    }
    match r.fits {
        Some(true) => s.push_str(", fits"),
        Some(false) => s.push_str(&format!(
            ", does not fit: {}",
            r.why_not.clone().unwrap_or_default()
        )),
        None => {}
    }
    s
}

//! Pipelining a unit at elaboration: a unit's logic is written once, with
//! numbered candidate cut points; a stage count chosen by the caller
//! registers the best-ranked cuts and leaves the others as plain wires.
//!
//! A unit states its candidates in a [`CutPlan`]: the cuts in datapath order
//! (cut k separates what comes before it from what comes after), and a
//! ranking, best first, by how much of the unit's longest path each cut
//! takes off (the first splits the longest path near its middle, the next
//! ones split the longest of the remaining segments, and so on). A
//! [`Pipeline`] with `stages = n` registers the first n cuts of the ranking;
//! `n = 0` is the unit as combinational logic, node for node.
//!
//! The unit's logic calls [`Pipeline::cut`] at every candidate in datapath
//! order, handing over every value that crosses the cut; it gets back the
//! registered values (at an active cut) or the same values (otherwise). An
//! optional clock enable holds every register of the pipeline, so a stalled
//! pipeline keeps its contents and its output. A register is named
//! `<prefix>_s<stage>_<value>`: the value it holds and the stage whose end
//! it marks (1 = the first register), e.g. `add_s1_sum_q`.

use crate::builder::{Expr, ModuleBuilder};
use crate::design::Design;
use crate::error::elab_error;
use crate::ir::ModuleDef;
use crate::ty::Ty;
use std::rc::Rc;

/// A unit's candidate cut points and their ranking.
#[derive(Debug, Clone, Copy)]
pub struct CutPlan {
    /// The unit's name, for messages.
    pub unit: &'static str,
    /// The candidates in datapath order, each named by what the values
    /// crossing it are (e.g. "aligned": the significands after alignment).
    pub cuts: &'static [&'static str],
    /// Cut numbers (indices into `cuts`), best first.
    pub ranking: &'static [usize],
}

impl CutPlan {
    /// The largest stage count: every candidate registered.
    pub fn max_stages(&self) -> u32 {
        self.cuts.len() as u32
    }

    /// The number of the cut named `name`.
    #[track_caller]
    pub fn cut_number(&self, name: &str) -> usize {
        self.cuts
            .iter()
            .position(|&c| c == name)
            .unwrap_or_else(|| elab_error(format!("{} has no cut named {name}", self.unit)))
    }

    /// Which cuts `stages` registers, by cut number.
    #[track_caller]
    pub fn active(&self, stages: u32) -> Vec<bool> {
        if stages > self.max_stages() {
            elab_error(format!(
                "{} has at most {} pipeline stages, not {stages}",
                self.unit,
                self.max_stages()
            ));
        }
        let mut active = vec![false; self.cuts.len()];
        for &k in &self.ranking[..stages as usize] {
            active[k] = true;
        }
        active
    }
}

/// One elaboration of a unit with some of its cuts registered.
#[derive(Debug)]
pub struct Pipeline {
    plan: CutPlan,
    prefix: String,
    active: Vec<bool>,
    enable: Option<Expr>,
    /// The next cut the logic must reach.
    next_cut: usize,
    /// Registered cuts passed so far.
    stage: u32,
}

impl Pipeline {
    /// A pipeline of `plan` with `stages` registered cuts, the best-ranked
    /// ones; registers are named after `prefix` and load only when `enable`
    /// (one bit) is high, if given.
    #[track_caller]
    pub fn new(plan: CutPlan, prefix: &str, stages: u32, enable: Option<Expr>) -> Pipeline {
        let active = plan.active(stages);
        Pipeline::with_cuts(plan, prefix, active, enable)
    }

    /// A pipeline with an explicit set of registered cuts (`active[k]` for
    /// cut k), for exploring cut placements beyond the ranking.
    #[track_caller]
    pub fn with_cuts(
        plan: CutPlan,
        prefix: &str,
        active: Vec<bool>,
        enable: Option<Expr>,
    ) -> Pipeline {
        if active.len() != plan.cuts.len() {
            elab_error(format!(
                "{} has {} cut points, not {}",
                plan.unit,
                plan.cuts.len(),
                active.len()
            ));
        }
        debug_assert!(
            {
                let mut r = plan.ranking.to_vec();
                r.sort_unstable();
                r == (0..plan.cuts.len()).collect::<Vec<_>>()
            },
            "{}: the ranking must name every cut once",
            plan.unit
        );
        Pipeline {
            plan,
            prefix: prefix.to_string(),
            active,
            enable,
            next_cut: 0,
            stage: 0,
        }
    }

    /// The unit as combinational logic from cut `from` on: for a unit whose
    /// parts are also used on their own (an adder's two halves).
    pub(crate) fn combinational_from(plan: CutPlan, from: usize) -> Pipeline {
        let mut p = Pipeline::with_cuts(plan, "", vec![false; plan.cuts.len()], None);
        p.next_cut = from;
        p
    }

    /// Whether cut `cut` is registered. A unit may hand a cheaper summary
    /// of a value across a registered cut (one bit instead of a word it
    /// would otherwise test after the cut).
    pub fn registers(&self, cut: usize) -> bool {
        self.active[cut]
    }

    /// The number of registered cuts: the unit's latency in cycles.
    pub fn latency(&self) -> u32 {
        self.active.iter().filter(|&&a| a).count() as u32
    }

    /// Candidate cut `cut` (each in datapath order, exactly once): the
    /// values crossing it, registered if the cut is active.
    #[track_caller]
    pub fn cut<const N: usize>(
        &mut self,
        m: &mut ModuleBuilder,
        cut: usize,
        values: [(&str, Expr); N],
    ) -> [Expr; N] {
        let out = self.cut_vec(m, cut, &values);
        std::array::from_fn(|k| out[k])
    }

    /// [`Pipeline::cut`] for a number of values known only at elaboration.
    #[track_caller]
    pub fn cut_vec(
        &mut self,
        m: &mut ModuleBuilder,
        cut: usize,
        values: &[(&str, Expr)],
    ) -> Vec<Expr> {
        if cut != self.next_cut {
            elab_error(format!(
                "{}: cut {cut} ({}) reached where cut {} was due",
                self.plan.unit,
                self.plan.cuts.get(cut).unwrap_or(&"?"),
                self.next_cut
            ));
        }
        self.next_cut += 1;
        if !self.active[cut] {
            return values.iter().map(|&(_, v)| v).collect();
        }
        self.stage += 1;
        let stage = self.stage;
        values
            .iter()
            .map(|&(name, v)| {
                let r = if self.prefix.is_empty() {
                    m.reg(&format!("s{stage}_{name}"), v.ty())
                } else {
                    m.reg(&format!("{}_s{stage}_{name}", self.prefix), v.ty())
                };
                m.set_next(r, v);
                if let Some(en) = self.enable {
                    m.set_enable(r, en);
                }
                r.q()
            })
            .collect()
    }

    /// Checks that the logic reached every cut, and returns the latency.
    #[track_caller]
    pub fn finish(self) -> u32 {
        if self.next_cut != self.plan.cuts.len() {
            elab_error(format!(
                "{}: the logic reached {} of its {} cut points",
                self.plan.unit,
                self.next_cut,
                self.plan.cuts.len()
            ));
        }
        self.stage
    }
}

/// What a unit's module is: its name's stem, its description, its cut
/// plan and its input ports.
#[derive(Debug, Clone, Copy)]
pub struct UnitModule<'a> {
    pub base: &'a str,
    pub doc: &'a str,
    pub plan: CutPlan,
    pub inputs: &'a [(&'a str, Ty)],
}

/// A unit as a module of its own, interned in `design` as
/// `<base>_s<stages>` (`<base>_s<stages>_en` with a clock enable `en_i`):
/// the unit's input ports, output ports as `build` returns them. `build`
/// elaborates the unit's logic with the pipeline it is given.
#[track_caller]
pub fn unit_module(
    design: &mut Design,
    unit: UnitModule<'_>,
    stages: u32,
    with_enable: bool,
    build: impl FnOnce(&mut ModuleBuilder, &mut Pipeline, &[Expr]) -> Vec<(&'static str, Expr)>,
) -> Rc<ModuleDef> {
    let UnitModule {
        base,
        doc,
        plan,
        inputs,
    } = unit;
    plan.active(stages);
    let name = format!("{base}_s{stages}{}", if with_enable { "_en" } else { "" });
    let params = [
        ("stages", stages.to_string()),
        ("enable", with_enable.to_string()),
    ];
    design.define(&name, &params, |_, m| {
        m.doc(&format!(
            "{doc}; {stages} pipeline stage(s){}",
            if with_enable {
                ", registers load while en_i is high"
            } else {
                ""
            }
        ));
        let values: Vec<Expr> = inputs.iter().map(|&(n, ty)| m.input(n, ty)).collect();
        let enable = with_enable.then(|| m.input("en_i", Ty::BOOL));
        if with_enable && stages == 0 {
            // Kept so that every depth has the same ports.
            m.waive(
                "UNUSEDSIGNAL",
                "en_i",
                "a unit without pipeline registers has nothing to hold",
            );
        }
        let mut p = Pipeline::new(plan, "", stages, enable);
        let outputs = build(m, &mut p, &values);
        p.finish();
        for (n, v) in outputs {
            m.output(n, v);
        }
    })
}

#[cfg(test)]
mod tests {
    use crate::arith::{FP32_MUL, INT_MUL};

    #[test]
    fn cuts_are_found_by_name() {
        assert_eq!(FP32_MUL.cut_number("operands"), 0);
        assert_eq!(FP32_MUL.cut_number("partials"), 1);
        assert_eq!(FP32_MUL.cut_number("rounded"), 3);
        assert_eq!(INT_MUL.cut_number("product"), 2);
    }

    #[test]
    #[should_panic(expected = "fp32_mul has no cut named sum")]
    fn an_unknown_cut_is_an_elaboration_error() {
        FP32_MUL.cut_number("sum");
    }
}

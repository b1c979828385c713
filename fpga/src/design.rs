//! The designs the flows take: any registered block with one configuration,
//! and the facts the block states about it ([`hw::FpgaFacts`]: where its
//! multipliers are, how wide, which memories belong in block RAM). The flows
//! know no block by name; what differs between blocks is in those facts.

use crate::parts::{Family, Part};
use hw::{AnyBlock, Configured, FpgaFacts, MultiplierShape, Multipliers};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A configured block the FPGA flows synthesise.
#[derive(Clone)]
pub struct FlowDesign {
    configured: Arc<dyn Configured>,
    facts: Arc<FpgaFacts>,
}

impl std::fmt::Debug for FlowDesign {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FlowDesign({})", self.configured.top_name())
    }
}

impl FlowDesign {
    /// The design of a configured block, or why the flows do not build the
    /// block (the block's own sentence). The block's facts are completed
    /// from its elaborated design: multipliers it does not state (address
    /// arithmetic, say) join as one group per shape, without owner patterns,
    /// so the DSP budget counts every multiplier Yosys will see.
    pub fn new(configured: Box<dyn Configured>) -> Result<FlowDesign, String> {
        let mut facts = configured.fpga()?;
        hw::quiet_elab_errors();
        let census = hw::catch_elab(|| {
            let mut design = hw::Design::new();
            hw::multiplier_census(&configured.elaborate(&mut design))
        })
        .map_err(|e| e.to_string())?;
        facts
            .multipliers
            .extend(unstated_multipliers(&facts, &census));
        Ok(FlowDesign {
            configured: Arc::from(configured),
            facts: Arc::new(facts),
        })
    }

    /// `block` with the typed configuration `cfg`.
    pub fn typed<B: hw::Block + Clone + Send + Sync + 'static>(
        block: &B,
        cfg: B::Config,
    ) -> Result<FlowDesign, String> {
        FlowDesign::new(hw::configured(block, cfg))
    }

    /// `block` configured by `table` (over its defaults).
    pub fn of(block: &dyn AnyBlock, table: &toml::Table) -> Result<FlowDesign, String> {
        FlowDesign::new(block.configure(table)?)
    }

    /// The configured block.
    pub fn configured(&self) -> &dyn Configured {
        self.configured.as_ref()
    }

    /// What the block says the flows need to know.
    pub fn facts(&self) -> &FpgaFacts {
        &self.facts
    }

    pub fn info(&self) -> DesignInfo {
        let config = self
            .configured
            .to_table()
            .iter()
            .map(|(k, v)| (k.clone(), value_text(v)))
            .collect();
        DesignInfo {
            top: self.configured.top_name(),
            block: self.configured.block_name().to_string(),
            label: self.configured.describe(),
            config,
        }
    }

    /// The design's files as `gen` emits them.
    pub fn generate(&self) -> Result<gen::Generated, String> {
        gen::generate_configured(self.configured.as_ref())
    }

    /// How the part's DSP blocks are shared out among the multipliers.
    pub fn dsp_plan(&self, part: &Part) -> DspPlan {
        dsp_plan(&self.facts, part)
    }

    /// A lower bound of the LUTs the design needs on `part`, when one is
    /// known, with what it counts, to skip hopeless syntheses: what the block
    /// states for its logic, plus its multipliers left to logic.
    pub fn lut_lower_bound(&self, part: &Part) -> Option<(u64, String)> {
        let plan = self.dsp_plan(part);
        let mut lut4s = self.facts.min_lut4s;
        let mut what = Vec::new();
        if self.facts.min_lut4s > 0 {
            what.push(self.facts.min_lut4s_what.clone());
        }
        for (m, given) in self.facts.multipliers.iter().zip(&plan.given) {
            let soft = m.count - given;
            if soft > 0 && m.min_lut4s_in_logic > 0 {
                lut4s += soft * m.min_lut4s_in_logic;
                what.push(format!("{soft} {} in LUTs", m.what));
            }
        }
        (lut4s > 0).then(|| (part.family.luts_of_lut4s(lut4s), what.join(" and ")))
    }
}

/// The multipliers of `census` that `facts` does not state, one group per
/// shape, without owner patterns.
pub fn unstated_multipliers(
    facts: &FpgaFacts,
    census: &BTreeMap<MultiplierShape, u64>,
) -> Vec<Multipliers> {
    census
        .iter()
        .filter_map(|(&shape, &n)| {
            let stated: u64 = facts
                .multipliers
                .iter()
                .filter(|m| m.shape() == shape)
                .map(|m| m.count)
                .sum();
            let (a, b, signed) = shape;
            (n > stated).then_some(Multipliers {
                what: "other multipliers",
                count: n - stated,
                widths: (a, b),
                signed,
                owners: None,
                min_lut4s_in_logic: 0,
            })
        })
        .collect()
}

/// The configuration a result is about, as the report shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DesignInfo {
    /// The Verilog top module (unique per configuration).
    pub top: String,
    /// The block's registry name.
    pub block: String,
    /// The configuration in one line (the block's description of it).
    pub label: String,
    /// Every key of the configuration, its value as a user writes it.
    pub config: BTreeMap<String, String>,
}

impl DesignInfo {
    /// The value of `key` as an integer, if the configuration has it.
    pub fn int(&self, key: &str) -> Option<u32> {
        self.config.get(key)?.parse().ok()
    }
}

/// A TOML value as a user writes it on a command line: names without quotes.
fn value_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// DSP blocks of `family` one multiplier of `m`'s shape takes: the operands
/// cut into pieces of the DSP's widths (an unsigned operand takes one more
/// bit on a family whose DSPs multiply signed numbers only), in the cheaper
/// orientation. An 8x8 product takes one block everywhere; a signed 32x32,
/// 2 x 2 on every family here (16x16, 18x18, 25x18); a 24x24 significand
/// product 2 x 2 of 16x16 or 18x18 and 2 of 25x18. None for a product
/// with an operand narrower than the family's DSP mapping takes
/// ([`Family::dsp_min_operand_bits`]): synthesis leaves it to logic.
pub fn dsp_blocks_per(m: &Multipliers, family: Family) -> u64 {
    if m.widths.0.min(m.widths.1) < family.dsp_min_operand_bits() {
        return 0;
    }
    let (da, db, signed_only) = family.dsp_operand_bits();
    let extra = u32::from(signed_only && !m.signed);
    let (a, b) = (m.widths.0 + extra, m.widths.1 + extra);
    let pieces = |x: u32, d: u32| u64::from(x.div_ceil(d));
    (pieces(a, da) * pieces(b, db)).min(pieces(a, db) * pieces(b, da))
}

/// How a part's DSP blocks are shared out ([`FpgaFacts::dsp_share`], each
/// multiplier taking the blocks its widths need on the part's family).
pub type DspPlan = hw::DspShare;

/// `facts`' share of `part`'s DSP blocks.
pub fn dsp_plan(facts: &FpgaFacts, part: &Part) -> DspPlan {
    let per: Vec<u64> = facts
        .multipliers
        .iter()
        .map(|m| dsp_blocks_per(m, part.family))
        .collect();
    facts.dsp_share(&per, part.capacity.dsps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parts::part;

    fn design(block: &str, table: &str) -> FlowDesign {
        let b = gen::find_block(block).unwrap();
        FlowDesign::of(b, &table.parse().unwrap()).unwrap()
    }

    #[test]
    fn dsp_blocks_per_multiplier_follow_the_family_widths() {
        let m = |w: u32, signed| Multipliers {
            what: "",
            count: 1,
            widths: (w, w),
            signed,
            owners: None,
            min_lut4s_in_logic: 0,
        };
        for f in [Family::Ice40, Family::Ecp5, Family::Xc7] {
            assert_eq!(dsp_blocks_per(&m(8, true), f), 1);
            assert_eq!(dsp_blocks_per(&m(8, false), f), 1);
            assert_eq!(dsp_blocks_per(&m(32, true), f), 4);
        }
        assert_eq!(dsp_blocks_per(&m(24, false), Family::Ice40), 4);
        assert_eq!(dsp_blocks_per(&m(24, false), Family::Ecp5), 4);
        assert_eq!(dsp_blocks_per(&m(24, false), Family::Xc7), 2);
        // Gowin's mapping leaves a product with an operand under 4 bits to
        // logic; the other families take any.
        assert_eq!(dsp_blocks_per(&m(3, false), Family::Gowin), 0);
        assert_eq!(dsp_blocks_per(&m(4, false), Family::Gowin), 1);
        assert_eq!(dsp_blocks_per(&m(2, false), Family::Ecp5), 1);
    }

    #[test]
    fn vpu_designs_name_their_lanes_and_budget_four_dsps_per_multiplier() {
        let d = design(
            "vpu",
            "lanes = 4\nsublanes = 2\nvregs = 16\nvmem_words = 256\nunits = \"int32\"",
        );
        let info = d.info();
        assert_eq!(info.top, "vpu_int32_4x2_v16_m256");
        assert_eq!(info.block, "vpu");
        assert_eq!(info.int("lanes"), Some(4));
        let up5k = part("ice40-up5k").unwrap();
        let plan = d.dsp_plan(up5k);
        assert_eq!(plan.total(), 2);
        assert_eq!(
            plan.owner_patterns,
            [
                "n:*g_lane_sub?0?.g_lane_lane?0?.*",
                "n:*g_lane_sub?0?.g_lane_lane?1?.*"
            ]
        );
        assert_eq!(d.facts().block_ram, ["m:*vmem"]);
        let (luts, what) = d.lut_lower_bound(up5k).unwrap();
        assert_eq!((luts, what.as_str()), (8_000, "8 int32 lanes"));
    }

    #[test]
    fn tensorcore_lanes_take_dsps_only_when_everything_fits() {
        let d = design("tensorcore", "rows = 4\ncols = 4");
        let ecp5 = part("ecp5-85f").unwrap();
        let up5k = part("ice40-up5k").unwrap();
        // 16 PEs and 4 lanes of 4 DSPs fit the 85F: no budget commands.
        assert!(d.dsp_plan(ecp5).commands().is_empty());
        // The UP5K's 8 DSPs take 8 PEs; the rest, lanes included, is logic.
        let plan = d.dsp_plan(up5k);
        assert_eq!(plan.given, [8, 0]);
        let cmds = plan.commands();
        assert!(
            cmds.contains("g_pe_row?1?") && cmds.contains("alumacc @softmul"),
            "{cmds}"
        );
        assert_eq!(d.facts().block_ram, ["m:*acc", "m:*ub", "m:*wmem"]);
    }

    #[test]
    fn whole_rows_take_the_dsp_blocks_before_any_half() {
        let ecp5 = part("ecp5-85f").unwrap();
        let d = design("mxu", "rows = 16\ncols = 16\ndepth = 5\nwhole_rows = 9");
        // 144 whole products, one 18x18 block each; the 12 left go to the
        // high halves of the first PEs of the rows below.
        let plan = d.dsp_plan(ecp5);
        assert_eq!(plan.given, [144, 12, 0]);
        assert_eq!(plan.owner_patterns.len(), 9 + 12);
        assert_eq!(plan.owner_patterns[0], "n:*g_pe_row?0?.*mul_whole*");
        assert_eq!(
            plan.owner_patterns[9],
            "n:*g_pe_split_row?0?.g_pe_split_col?0?.*mul_hi*"
        );
        // Every row whole: no half left.
        let d = design("mxu", "rows = 4\ncols = 4\ndepth = 4\nwhole_rows = 4");
        let m = &d.facts().multipliers;
        assert_eq!((m.len(), m[0].count, m[0].widths), (1, 16, (8, 8)));
        // No effect below depth 4: one multiplier per PE as before.
        let d = design("mxu", "rows = 4\ncols = 4\ndepth = 3\nwhole_rows = 2");
        assert_eq!(d.facts().multipliers[0].what, "processing elements");
    }

    #[test]
    fn mxu_budgets_are_the_board_builds_commands() {
        let a35t = part("xc7a35t").unwrap();
        for (r, c) in [(10u32, 10u32), (9, 10), (4, 4)] {
            let d = design("mxu", &format!("rows = {r}\ncols = {c}"));
            let want = board::yosys::dsp_budget_commands(
                u64::from(r * c),
                a35t.capacity.dsps,
                u64::from(c),
            );
            assert_eq!(d.dsp_plan(a35t).commands(), want, "{r}x{c}");
        }
        // The board builds' budget from the MXU's facts, at every depth:
        // one block per multiplier, halves and whole products included.
        for text in [
            "rows = 10\ncols = 10",
            "rows = 10\ncols = 10\ndepth = 4",
            "rows = 9\ncols = 10\ndepth = 5\nwhole_rows = 3",
            "rows = 4\ncols = 4\ndepth = 5",
        ] {
            let d = design("mxu", text);
            let cfg: config::MxuConfig = config::MxuConfig::from_toml(text).unwrap();
            let want = board::yosys::mxu_dsp_budget_commands(&cfg, a35t.capacity.dsps);
            assert_eq!(d.dsp_plan(a35t).commands(), want, "{text}");
        }
    }

    #[test]
    fn ici_designs_have_nothing_to_budget() {
        let d = design("ici", "");
        let up5k = part("ice40-up5k").unwrap();
        assert_eq!(d.dsp_plan(up5k).total(), 0);
        assert!(d.facts().block_ram.is_empty());
        assert!(d.lut_lower_bound(up5k).is_none());
        assert!(d.dsp_plan(up5k).commands().is_empty());
    }

    #[test]
    fn sparsecore_tiles_each_bring_eight_multipliers() {
        let d = design(
            "sparsecore",
            "tiles = 4\nmax_dim = 24\nmax_batch = 8\nqueue_depth = 8\nhbm_inflight = 8",
        );
        assert_eq!(d.info().top, "sparsecore_t4_d24_b8_q8_f8");
        let up5k = part("ice40-up5k").unwrap();
        let a100t = part("xc7a100t").unwrap();
        // UP5K: 8 DSP blocks, four per 24x24 multiplier.
        let plan = d.dsp_plan(up5k);
        assert_eq!(plan.total(), 2);
        assert_eq!(
            plan.owner_patterns,
            [
                "n:*tile0.lane0.* n:*tile0.?lane0.*",
                "n:*tile0.lane1.* n:*tile0.?lane1.*"
            ]
        );
        // 240 DSP48s hold all 40 (32 combine lanes, the pipelined update's
        // 8 shared lanes) at two each, and the address arithmetic the block
        // does not state (three products per tile, one outside).
        let plan = d.dsp_plan(a100t);
        assert!(plan.all);
        let other: u64 = d
            .facts()
            .multipliers
            .iter()
            .filter(|m| m.what == "other multipliers")
            .map(|m| m.count)
            .sum();
        assert_eq!(other, 13);
        assert_eq!(plan.total(), 53);
        assert_eq!(d.facts().block_ram, ["m:*act_buf", "m:*psum_bank*"]);
    }

    #[test]
    fn the_torus_is_not_built_and_says_why() {
        let torus = gen::find_block("torus").unwrap();
        let err = FlowDesign::of(torus, &toml::Table::new()).unwrap_err();
        assert!(err.contains("torus-node"), "{err}");
    }
}

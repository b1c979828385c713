//! The designs the flows take: a configuration of a registered block, with
//! what synthesis needs to know about it (where its multipliers are, which
//! memory belongs in block RAM).

use crate::parts::{Family, Part};
use config::{IciConfig, MxuConfig, SparseCoreConfig, TensorCoreConfig, TorusConfig, VpuConfig};
use serde::{Deserialize, Serialize};

/// A configured block the FPGA flows synthesise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FlowDesign {
    Mxu(MxuConfig),
    Vpu(VpuConfig),
    /// The ICI link block: two link ends joined by two serdes stubs.
    Ici(IciConfig),
    /// A SparseCore: a sequencer over T tiles.
    SparseCore(SparseCoreConfig),
    /// A TensorCore: sequencer, unified buffer, weight and bias memories,
    /// int8 MXU and activation unit.
    TensorCore(TensorCoreConfig),
    /// One ICI torus chip node: a router and six ICI link ends.
    TorusNode(TorusConfig),
}

impl From<MxuConfig> for FlowDesign {
    fn from(c: MxuConfig) -> Self {
        FlowDesign::Mxu(c)
    }
}

impl From<VpuConfig> for FlowDesign {
    fn from(c: VpuConfig) -> Self {
        FlowDesign::Vpu(c)
    }
}

impl From<IciConfig> for FlowDesign {
    fn from(c: IciConfig) -> Self {
        FlowDesign::Ici(c)
    }
}

impl From<&MxuConfig> for FlowDesign {
    fn from(c: &MxuConfig) -> Self {
        FlowDesign::Mxu(*c)
    }
}

impl From<&VpuConfig> for FlowDesign {
    fn from(c: &VpuConfig) -> Self {
        FlowDesign::Vpu(*c)
    }
}

impl From<SparseCoreConfig> for FlowDesign {
    fn from(c: SparseCoreConfig) -> Self {
        FlowDesign::SparseCore(c)
    }
}

impl From<&SparseCoreConfig> for FlowDesign {
    fn from(c: &SparseCoreConfig) -> Self {
        FlowDesign::SparseCore(*c)
    }
}

impl From<TensorCoreConfig> for FlowDesign {
    fn from(c: TensorCoreConfig) -> Self {
        FlowDesign::TensorCore(c)
    }
}

impl From<&FlowDesign> for FlowDesign {
    fn from(d: &FlowDesign) -> Self {
        *d
    }
}

/// The configuration a result is about, as the report shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DesignInfo {
    pub top: String,
    /// The block's registry name.
    #[serde(default = "mxu_name")]
    pub block: String,
    /// The MXU's element type, the VPU's units (`full`, `int32`), or the ICI
    /// link's shape (`w64-d32-b32-crc32`: flit bytes, window, receive
    /// buffer, CRC bits).
    pub dtype: String,
    /// MXU (and TensorCore) rows and columns, accumulator rows (0 for other
    /// blocks).
    pub rows: u32,
    pub cols: u32,
    pub acc_rows: u32,
    /// VPU lanes, sublanes, registers and VMEM words (0 for other blocks).
    #[serde(default)]
    pub lanes: u32,
    #[serde(default)]
    pub sublanes: u32,
    #[serde(default)]
    pub vregs: u32,
    #[serde(default)]
    pub vmem_words: u32,
    /// SparseCore tiles, longest row and largest batch (0 for other blocks).
    #[serde(default)]
    pub tiles: u32,
    #[serde(default)]
    pub max_dim: u32,
    #[serde(default)]
    pub max_batch: u32,
}

fn mxu_name() -> String {
    "mxu".into()
}

impl DesignInfo {
    pub fn of(design: impl Into<FlowDesign>) -> DesignInfo {
        match design.into() {
            FlowDesign::Mxu(c) => DesignInfo {
                top: mxu::top_name(&c),
                block: mxu_name(),
                dtype: c.dtype().to_string(),
                rows: c.rows(),
                cols: c.cols(),
                acc_rows: c.acc_rows(),
                lanes: 0,
                sublanes: 0,
                vregs: 0,
                vmem_words: 0,
                tiles: 0,
                max_dim: 0,
                max_batch: 0,
            },
            FlowDesign::Vpu(c) => DesignInfo {
                top: vpu::top_name(&c),
                block: "vpu".into(),
                dtype: c.units().to_string(),
                rows: 0,
                cols: 0,
                acc_rows: 0,
                lanes: c.lanes(),
                sublanes: c.sublanes(),
                vregs: c.vregs(),
                vmem_words: c.vmem_words(),
                tiles: 0,
                max_dim: 0,
                max_batch: 0,
            },
            FlowDesign::SparseCore(c) => DesignInfo {
                top: sparsecore::top_name(&c),
                block: "sparsecore".into(),
                dtype: "fp32".into(),
                rows: 0,
                cols: 0,
                acc_rows: 0,
                lanes: 0,
                sublanes: 0,
                vregs: 0,
                vmem_words: 0,
                tiles: c.tiles(),
                max_dim: c.max_dim(),
                max_batch: c.max_batch(),
            },
            FlowDesign::TensorCore(c) => DesignInfo {
                top: tensorcore::top_name(&c),
                block: "tensorcore".into(),
                dtype: config::ElemType::Int8.to_string(),
                rows: c.rows(),
                cols: c.cols(),
                acc_rows: c.acc_rows(),
                lanes: 0,
                sublanes: 0,
                vregs: 0,
                vmem_words: 0,
                tiles: 0,
                max_dim: 0,
                max_batch: 0,
            },
            FlowDesign::TorusNode(c) => DesignInfo {
                top: torus::node::node_name(&c),
                block: "torus-node".into(),
                dtype: format!(
                    "{}x{}x{}-v{}-d{}-b{}",
                    c.dims()[0],
                    c.dims()[1],
                    c.dims()[2],
                    c.vc_depth(),
                    c.link().replay_depth(),
                    c.link().rx_buffer()
                ),
                rows: 0,
                cols: 0,
                acc_rows: 0,
                lanes: 0,
                sublanes: 0,
                vregs: 0,
                vmem_words: 0,
                tiles: 0,
                max_dim: 0,
                max_batch: 0,
            },
            FlowDesign::Ici(c) => DesignInfo {
                top: ici::pair_name(&c),
                block: "ici".into(),
                dtype: format!(
                    "w{}-d{}-b{}-crc{}",
                    c.flit_bytes(),
                    c.replay_depth(),
                    c.rx_buffer(),
                    c.crc_bits()
                ),
                rows: 0,
                cols: 0,
                acc_rows: 0,
                lanes: 0,
                sublanes: 0,
                vregs: 0,
                vmem_words: 0,
                tiles: 0,
                max_dim: 0,
                max_batch: 0,
            },
        }
    }

    /// "int8 8x8" for an MXU, "VPU full 8x1" for a VPU, "ICI
    /// w64-d32-b32-crc32" for an ICI link pair, "SparseCore T4 D24 B8" for a
    /// SparseCore, "TensorCore int8 4x4" for a TensorCore.
    pub fn label(&self) -> String {
        if self.block == "tensorcore" {
            format!("TensorCore {} {}x{}", self.dtype, self.rows, self.cols)
        } else if self.block == "vpu" {
            format!("VPU {} {}x{}", self.dtype, self.lanes, self.sublanes)
        } else if self.block == "ici" {
            format!("ICI {}", self.dtype)
        } else if self.block == "torus-node" {
            format!("ICI torus node {}", self.dtype)
        } else if self.block == "sparsecore" {
            format!(
                "SparseCore T{} D{} B{}",
                self.tiles, self.max_dim, self.max_batch
            )
        } else {
            format!("{} {}x{}", self.dtype, self.rows, self.cols)
        }
    }

    /// Whether this is an int8 MXU with equal rows and columns and `acc_rows`
    /// accumulator rows (what the MXU search compares).
    pub fn is_square_int8_mxu(&self, acc_rows: u32) -> bool {
        self.block == "mxu"
            && self.dtype == config::ElemType::Int8.name()
            && self.rows == self.cols
            && self.acc_rows == acc_rows
    }
}

impl FlowDesign {
    pub fn info(&self) -> DesignInfo {
        DesignInfo::of(*self)
    }

    /// The design's files as `gen` emits them.
    pub fn generate(&self) -> Result<gen::Generated, String> {
        match self {
            FlowDesign::Mxu(c) => gen::generate(c),
            FlowDesign::Vpu(c) => gen::generate_block(&vpu::Vpu, c),
            FlowDesign::Ici(c) => gen::generate_block(&ici::Ici, c),
            FlowDesign::TorusNode(c) => gen::generate_block(&torus::TorusNode, c),
            FlowDesign::SparseCore(c) => gen::generate_block(&sparsecore::SparseCore, c),
            FlowDesign::TensorCore(c) => gen::generate_block(&tensorcore::TensorCore, c),
        }
    }

    /// The multipliers a DSP block can take: how many there are, and how many
    /// DSP blocks of `family` each needs. An MXU has one 8x8 (int8) or 8x8
    /// significand (bf16) multiplier per processing element, one DSP each; a
    /// VPU one signed 32x32 multiplier per lane (shared by mul_i32,
    /// requant_i8 and mul_f32), which Yosys splits into 2 x 2 DSP blocks on
    /// every family here (16x16, 18x18, 25x18). The ICI link has none to
    /// budget: its only products are the stubs' scalings of a random draw to
    /// a bit position (16 bits by a constant), left to Yosys. A SparseCore
    /// has one fp32 multiplier per combine lane, eight, each a 24x24
    /// significand product: 2 x 2 DSP blocks of 16x16 (iCE40) or 18x18
    /// (ECP5), 2 of 25x18 (7-series). A TensorCore counts its MXU's
    /// processing elements, one DSP each; its activation unit's C signed
    /// 32x32 requantization products take DSP blocks only when everything
    /// fits ([`tensorcore_lane_dsps`]), else they go to logic.
    pub fn multipliers(&self, family: Family) -> (u64, u64) {
        match self {
            FlowDesign::Mxu(c) => (u64::from(c.rows()) * u64::from(c.cols()), 1),
            FlowDesign::TensorCore(c) => (u64::from(c.rows()) * u64::from(c.cols()), 1),
            FlowDesign::Vpu(c) => (u64::from(c.elems()), 4),
            FlowDesign::Ici(_) | FlowDesign::TorusNode(_) => (0, 1),
            FlowDesign::SparseCore(_) => (
                u64::from(config::sparsecore::WORD_ELEMS),
                match family {
                    Family::Ice40 | Family::Ecp5 => 4,
                    Family::Xc7 => 2,
                },
            ),
        }
    }

    /// How many multipliers get DSP blocks on `part`: as many as fit.
    pub fn dsp_multipliers(&self, part: &Part) -> u64 {
        let (count, each) = self.multipliers(part.family);
        count.min(part.capacity.dsps / each)
    }

    /// Yosys `select` patterns naming the first `k` multiplier owners (MXU
    /// processing elements row-major, VPU lanes by element index, SparseCore
    /// combine lanes by bank) in the flattened design.
    pub fn multiplier_patterns(&self, k: u64) -> Vec<String> {
        match self {
            FlowDesign::Mxu(c) => board::yosys::pe_patterns(k, u64::from(c.cols())),
            FlowDesign::TensorCore(c) => board::yosys::pe_patterns(k, u64::from(c.cols())),
            FlowDesign::Vpu(c) => {
                let lanes = u64::from(c.lanes());
                (0..k)
                    .map(|e| format!("n:*g_lane_sub?{}?.g_lane_lane?{}?.*", e / lanes, e % lanes))
                    .collect()
            }
            FlowDesign::Ici(_) | FlowDesign::TorusNode(_) => Vec::new(),
            FlowDesign::SparseCore(_) => (0..k).map(|b| format!("n:*lane{b}.*")).collect(),
        }
    }

    /// Memories forced into block RAM (Yosys `m:` patterns): the MXU's
    /// accumulator (also inside a TensorCore, with its unified buffer and
    /// weight memory), the VPU's VMEM, the SparseCore's activation buffer and
    /// its eight partial-sum banks (scratchpad SRAM on a chip). (The VPU's
    /// register file, with four read and two write ports, fits no block RAM;
    /// Yosys builds it from logic. The SparseCore's queues are left to
    /// Yosys, which builds the small ones from LUT RAM or flip-flops.) None
    /// for the ICI link: its buffers are a few flits deep and hundreds of
    /// bits wide, so Yosys chooses.
    pub fn block_ram_memories(&self) -> Option<&'static str> {
        match self {
            FlowDesign::Mxu(_) => Some("m:*acc"),
            FlowDesign::TensorCore(_) => Some("m:*acc m:*ub m:*wmem"),
            FlowDesign::Vpu(_) => Some("m:*vmem"),
            FlowDesign::Ici(_) | FlowDesign::TorusNode(_) => None,
            FlowDesign::SparseCore(_) => Some("m:*act_buf m:*psum_bank*"),
        }
    }

    /// A lower bound of the LUTs the design needs on `part`, when one is
    /// known, with what it counts, to skip hopeless syntheses: an MXU's
    /// multipliers left to logic, a VPU's lanes; none for the ICI link or a
    /// SparseCore (its size barely depends on T, the one parameter its search
    /// varies).
    pub fn lut_lower_bound(&self, part: &Part) -> Option<(u64, String)> {
        match self {
            FlowDesign::Mxu(_) => {
                let (count, _) = self.multipliers(part.family);
                let soft = count - self.dsp_multipliers(part);
                Some((
                    soft * crate::synth::min_luts_per_lut_multiplier(part.family),
                    format!("{soft} LUT multipliers"),
                ))
            }
            FlowDesign::Vpu(c) => {
                let lanes = u64::from(c.elems());
                Some((
                    lanes * min_luts_per_vpu_lane(c.units()),
                    format!("{lanes} {} lanes", c.units()),
                ))
            }
            FlowDesign::Ici(_) | FlowDesign::TorusNode(_) => None,
            FlowDesign::SparseCore(_) => None,
            FlowDesign::TensorCore(_) => None,
        }
    }
}

/// DSP blocks a TensorCore's activation unit needs on `family`: C signed
/// 32x32 products, 2 x 2 blocks each on iCE40 (16x16) and ECP5 (18x18), 2 on
/// 7-series (25x18).
pub fn tensorcore_lane_dsps(c: &TensorCoreConfig, family: Family) -> u64 {
    let each = match family {
        Family::Ice40 | Family::Ecp5 => 4,
        Family::Xc7 => 2,
    };
    u64::from(c.cols()) * each
}

/// A safe lower bound on the LUTs one VPU lane needs, whatever the family
/// (its register file of 16 x 32 bits with four read ports, the integer ALU
/// and requantization; with `full` units the fp32 adder, product rounding,
/// conversions, and half a reduction unit with its own adder): under half of
/// what Yosys produces (measured: an int32 lane about 3,300 LUT6 on
/// 7-series).
pub fn min_luts_per_vpu_lane(units: config::VpuUnits) -> u64 {
    match units {
        config::VpuUnits::Int32 => 1_000,
        config::VpuUnits::Full => 2_500,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use config::VpuUnits;

    #[test]
    fn vpu_designs_name_their_lanes_and_budget_four_dsps_per_multiplier() {
        let c = VpuConfig::with(4, 2, 16, 256, VpuUnits::Int32).unwrap();
        let d = FlowDesign::from(c);
        let info = d.info();
        assert_eq!(info.top, "vpu_int32_4x2_v16_m256");
        assert_eq!(info.label(), "VPU int32 4x2");
        assert!(!info.is_square_int8_mxu(256));
        let up5k = crate::parts::part("ice40-up5k").unwrap();
        assert_eq!(d.dsp_multipliers(up5k), 2);
        assert_eq!(
            d.multiplier_patterns(5)[4],
            "n:*g_lane_sub?1?.g_lane_lane?0?.*"
        );
        assert_eq!(d.block_ram_memories(), Some("m:*vmem"));
        // Records written before the VPU existed read as MXU results.
        let old =
            r#"{"top":"mxu_int8_4x4_acc256","dtype":"int8","rows":4,"cols":4,"acc_rows":256}"#;
        let info: DesignInfo = serde_json::from_str(old).unwrap();
        assert!(info.is_square_int8_mxu(256));
    }

    #[test]
    fn tensorcore_designs_budget_their_processing_elements_and_lanes() {
        let c = TensorCoreConfig::with(4, 4, 64, 256, 256, 16, 4).unwrap();
        let d = FlowDesign::from(c);
        let info = d.info();
        assert_eq!(info.top, "tensorcore_4x4_acc64_ub256_w256_b16_q4");
        assert_eq!(info.label(), "TensorCore int8 4x4");
        assert!(!info.is_square_int8_mxu(64));
        let ecp5 = crate::parts::part("ecp5-85f").unwrap();
        let up5k = crate::parts::part("ice40-up5k").unwrap();
        // 16 PEs and 4 lanes of 4 DSPs fit the 85F: no budget commands.
        assert!(crate::synth::dsp_budget_commands(&d, ecp5).is_empty());
        // The UP5K's 8 DSPs take 8 PEs; the rest, lanes included, is logic.
        assert_eq!(d.dsp_multipliers(up5k), 8);
        let cmds = crate::synth::dsp_budget_commands(&d, up5k);
        assert!(
            cmds.contains("g_pe_row?1?") && cmds.contains("alumacc @softmul"),
            "{cmds}"
        );
        assert_eq!(d.block_ram_memories(), Some("m:*acc m:*ub m:*wmem"));
    }

    #[test]
    fn ici_designs_are_the_link_pair_without_multipliers() {
        let d = FlowDesign::from(IciConfig::DEFAULT);
        let info = d.info();
        assert_eq!(info.top, "ici_pair_l4_link_w64_d32_b32_t64_r16_k8");
        assert_eq!(info.label(), "ICI w64-d32-b32-crc32");
        let up5k = crate::parts::part("ice40-up5k").unwrap();
        assert_eq!(d.dsp_multipliers(up5k), 0);
        assert_eq!(d.block_ram_memories(), None);
        assert!(d.lut_lower_bound(up5k).is_none());
        assert!(crate::synth::dsp_budget_commands(&d, up5k).is_empty());
    }

    #[test]
    fn sparsecore_designs_name_their_shape_and_budget_dsps_per_family() {
        let c = config::SparseCoreConfig::with(4, 24, 8, 8, 8, 100).unwrap();
        let d = FlowDesign::from(c);
        let info = d.info();
        assert_eq!(info.top, "sparsecore_t4_d24_b8_q8_f8");
        assert_eq!(info.label(), "SparseCore T4 D24 B8");
        assert!(!info.is_square_int8_mxu(256));
        let up5k = crate::parts::part("ice40-up5k").unwrap();
        let a35t = crate::parts::part("xc7a35t").unwrap();
        // UP5K: 8 DSP blocks, four per 24x24 multiplier.
        assert_eq!(d.dsp_multipliers(up5k), 2);
        assert_eq!(d.multipliers(a35t.family), (8, 2));
        assert_eq!(d.dsp_multipliers(a35t), 8);
        assert_eq!(d.multiplier_patterns(8)[7], "n:*lane7.*");
        assert_eq!(d.block_ram_memories(), Some("m:*act_buf m:*psum_bank*"));
        assert!(d.lut_lower_bound(up5k).is_none());
    }
}

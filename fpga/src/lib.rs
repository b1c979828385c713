//! FPGA flows for Systole's generated Verilog, and one report of what each
//! preset costs on common FPGAs and how fast it runs.
//!
//! `cargo run --release -p fpga -- report` takes the presets the block
//! registry marks for the report ([`report_presets`]), elaborates each with `gen`,
//! runs it through the flow of every part and writes `report.json` and
//! `report.md` (see [`report::Report`]). Then, for each part, it searches for
//! the largest square int8 MXU, the largest VPUs and the SparseCore with the
//! most tiles that fit ([`search`]).
//!
//! # The flows
//!
//! | family | synthesis | place and route | parts |
//! | --- | --- | --- | --- |
//! | iCE40 | Debian Yosys `synth_ice40` (`-dsp` on UP5K) | nextpnr-ice40, `icepack` | UP5K sg48, HX8K ct256 |
//! | ECP5 | YoWASP Yosys `synth_ecp5` | YoWASP nextpnr-ecp5 | LFE5U-25F, LFE5U-85F (CABGA381) |
//! | Xilinx 7-series | Debian Yosys `synth_xilinx -family xc7` | none (no open tool here) | Artix-7 35T, 100T |
//!
//! `scripts/fpga/install.sh` installs the tools (apt-get for the Debian ones, a
//! venv under `build/fpga-tools` for the YoWASP ones); the report runs it when
//! a tool is missing.
//!
//! # Design decisions
//!
//! - **A harness around the block** ([`harness`]): an MXU has more port bits
//!   than a small package has pins, so the flows place a four-pin top that
//!   shifts the MXU's inputs in and its outputs out. Every MXU path then
//!   starts and ends at a flip-flop, so Fmax is the MXU's own, and nothing is
//!   optimised away. Its flip-flops are included in the counts and reported.
//! - **Multipliers to DSP blocks up to the part's DSP count, the rest to
//!   LUTs** ([`synth`]): stock Yosys maps every multiplier to a DSP and fails
//!   on parts with few; marking the surplus as LUT logic first is what a
//!   vendor tool does and is what makes the "largest MXU" figure meaningful.
//! - **The accumulator in block RAM** (`ram_style = "block"`); anything else
//!   left as a memory or any latch fails the flow.
//! - **iCE40 without `ice40_dsp`**: that Yosys pass folds the systolic
//!   partial-sum chain into SB_MAC16 accumulators, and the netlist does not
//!   simulate like the RTL (`tests/gate_level.rs`); the flow keeps SB_MAC16
//!   as plain multipliers, and that netlist matches the RTL bit for bit.
//! - **Bounded**: at most `--jobs` tools run at once (default: the number of
//!   cores), each killed after `--tool-timeout`; a failing tool becomes a
//!   one-line error in its entry, never a crash of the run.
//! - **Reruns are incremental**: a finished flow leaves `flow.json` in its
//!   folder with its result and a key over everything it depends on (the
//!   Verilog, the scripts, the nextpnr options, the tool versions); a rerun
//!   with the same key takes the record instead of the tools (`--fresh` not).
//! - **"Fits"** means placed and routed (iCE40, ECP5) or, for 7-series, every
//!   resource at most 100 % of the part after synthesis.

pub mod design;
pub mod flow;
pub mod harness;
pub mod parts;
pub mod report;
pub mod runner;
pub mod search;
pub mod synth;
pub mod tools;

use config::{IciConfig, MxuConfig, SparseCoreConfig, TensorCoreConfig, TorusConfig, VpuConfig};
pub use design::FlowDesign;

/// Accumulator rows of every FPGA preset. 256 is the depth of one iCE40 block
/// RAM (256 x 16), so a shallower accumulator saves nothing there, and ECP5
/// (512 x 36) and 7-series (512 x 36) RAMs hold it at the same count; the
/// block RAM count is set by the accumulator's width, 32 * C bits, read
/// through two ports (two copies).
pub const ACC_ROWS: u32 = 256;

/// The designs of the report, from the block registry (`gen::registry`):
/// every preset marked for the FPGA report of the blocks named in `blocks`
/// (every block when empty), or with `quick` the first such preset of each
/// block, each MXU with `acc_rows` accumulator rows. A preset of a block the
/// flows do not take is returned as a note for the report instead, so a new
/// block shows up there until the flows learn it.
pub fn report_presets(
    quick: bool,
    acc_rows: u32,
    blocks: &[String],
) -> Result<(Vec<FlowDesign>, Vec<String>), String> {
    let mut designs = Vec::new();
    let mut notes = Vec::new();
    for block in gen::registry() {
        if !blocks.is_empty() && !blocks.iter().any(|b| b == block.name()) {
            continue;
        }
        let presets = block.presets().into_iter().filter(|p| p.fpga_report);
        for preset in presets.take(if quick { 1 } else { usize::MAX }) {
            match flow_design(block.name(), preset.config.as_ref()) {
                Some(FlowDesign::Mxu(c)) => designs.push(FlowDesign::Mxu(
                    MxuConfig::with_acc_rows(c.rows(), c.cols(), c.dtype(), acc_rows)
                        .map_err(|e| e.to_string())?,
                )),
                Some(d) => designs.push(d),
                None => notes.push(format!(
                    "{} preset {}: not built (the FPGA flows do not take this block yet).",
                    block.name(),
                    preset.name
                )),
            }
        }
    }
    Ok((designs, notes))
}

/// The flow design of a configured block `block` (a registry name), or
/// `None` for a block the flows do not take. The torus block is its nodes'
/// network, so only `torus-node` is built.
pub fn flow_design(block: &str, configured: &dyn hw::Configured) -> Option<FlowDesign> {
    let any = configured.config_any();
    if let Some(c) = any.downcast_ref::<MxuConfig>() {
        Some(FlowDesign::Mxu(*c))
    } else if let Some(c) = any.downcast_ref::<VpuConfig>() {
        Some(FlowDesign::Vpu(*c))
    } else if let Some(c) = any.downcast_ref::<IciConfig>() {
        Some(FlowDesign::Ici(*c))
    } else if let Some(c) = any.downcast_ref::<SparseCoreConfig>() {
        Some(FlowDesign::SparseCore(*c))
    } else if let Some(c) = any.downcast_ref::<TensorCoreConfig>() {
        Some(FlowDesign::TensorCore(*c))
    } else if let (Some(c), "torus-node") = (any.downcast_ref::<TorusConfig>(), block) {
        Some(FlowDesign::TorusNode(*c))
    } else {
        None
    }
}

/// The parts of `--quick`: the smallest of each family.
pub const QUICK_PARTS: [&str; 3] = ["ice40-up5k", "ecp5-25f", "xc7a35t"];

#[cfg(test)]
mod tests {
    use super::*;

    fn shapes(designs: &[FlowDesign]) -> Vec<String> {
        designs.iter().map(|d| d.info().top).collect()
    }

    #[test]
    fn the_report_covers_the_registry_fpga_presets() {
        let (full, notes) = report_presets(false, ACC_ROWS, &[]).unwrap();
        assert_eq!(
            shapes(&full),
            [
                "mxu_int8_4x4_acc256",
                "mxu_int8_8x8_acc256",
                "mxu_int8_16x16_acc256",
                "mxu_bf16_4x4_acc256",
                "vpu_full_8x1_v16_m256",
                "vpu_full_4x2_v16_m256",
                "vpu_int32_8x1_v16_m256",
                "ici_pair_l2_link_w4_d8_b8_t32_r8_k4",
                "ici_pair_l4_link_w64_d32_b32_t64_r16_k8",
                "sparsecore_t1_d8_b4_q4_f4",
                "sparsecore_t4_d24_b8_q8_f8",
                "tensorcore_4x4_acc64_ub256_w256_b16_q4",
                "torus_node_4x4x4_v4",
            ]
        );
        // Every block's report presets are built.
        assert!(notes.is_empty(), "{notes:?}");
        let (quick, _) = report_presets(true, 512, &[]).unwrap();
        assert_eq!(
            shapes(&quick),
            [
                "mxu_int8_4x4_acc512",
                "vpu_full_8x1_v16_m256",
                "ici_pair_l2_link_w4_d8_b8_t32_r8_k4",
                "sparsecore_t1_d8_b4_q4_f4",
                "tensorcore_4x4_acc64_ub256_w256_b16_q4",
                "torus_node_4x4x4_v4",
            ]
        );
        let (tc_only, _) = report_presets(false, ACC_ROWS, &["tensorcore".into()]).unwrap();
        assert_eq!(tc_only.len(), 1);
        let (ici_only, _) = report_presets(false, ACC_ROWS, &["ici".into()]).unwrap();
        assert_eq!(ici_only.len(), 2);
        let (vpu_only, _) = report_presets(false, ACC_ROWS, &["vpu".into()]).unwrap();
        assert_eq!(vpu_only.len(), 3);
        let (sc_only, _) = report_presets(false, ACC_ROWS, &["sparsecore".into()]).unwrap();
        assert_eq!(sc_only.len(), 2);
        assert!(report_presets(false, 100, &[]).is_err());
    }
}

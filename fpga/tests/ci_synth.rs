//! The CI check of the FPGA flows, with Debian's tools only (Yosys, Verilator,
//! Icarus; no PyPI package, no place and route): the smallest presets through
//! the iCE40 UP5K and Artix-7 synthesis flows, checking that nothing becomes a
//! latch, that multipliers land in DSP blocks up to the part's budget and the
//! accumulator in block RAM, and that the figures are read back.

use config::{ElemType, MxuConfig};
use fpga::flow::{self, FlowEnv, FlowResult};
use fpga::parts::part;
use fpga::FlowDesign;
use std::time::Duration;

fn env(dir: &std::path::Path) -> FlowEnv {
    FlowEnv::new(dir.to_path_buf(), 2, Duration::from_secs(300))
}

fn mxu(cfg: MxuConfig) -> FlowDesign {
    FlowDesign::typed(&mxu::Mxu, cfg).unwrap()
}

fn synth(rows: u32, cols: u32, dtype: ElemType, part_name: &str) -> FlowResult {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = MxuConfig::new(rows, cols, dtype).unwrap();
    let r = flow::run_flow(&env(tmp.path()), &mxu(cfg), part(part_name).unwrap(), false);
    assert!(r.error.is_none(), "{part_name} {cfg}: {}", r.error.unwrap());
    assert_eq!(r.fits, Some(true), "{part_name} {cfg}: {:?}", r.why_not);
    r
}

#[test]
fn int8_4x4_on_up5k_uses_all_8_dsps_and_block_ram() {
    let r = synth(4, 4, ElemType::Int8, "ice40-up5k");
    let st = r.synth.unwrap();
    assert_eq!(st.resources.dsps, 8, "{:?}", st.cells);
    assert_eq!(st.lut_multipliers, 8);
    // Accumulator: 2 read ports x 128 bits / 16 bits per SB_RAM40_4K = 16.
    assert!(st.resources.brams >= 16.0, "{:?}", st.cells);
    assert!(
        st.resources.luts > 500 && st.resources.ffs > 500,
        "{:?}",
        st.resources
    );
    let u = r.utilization.unwrap();
    assert_eq!(u.dsps, 100.0);
    assert!(u.luts < 100.0);
    assert!(r.harness_ffs > 200);
}

#[test]
fn int8_4x4_on_artix7_maps_multipliers_to_dsp48_and_acc_to_bram() {
    let tmp = tempfile::tempdir().unwrap();
    let env = env(tmp.path());
    let cfg = mxu(MxuConfig::new(4, 4, ElemType::Int8).unwrap());
    let r = flow::run_flow(&env, &cfg, part("xc7a35t").unwrap(), false);
    assert!(r.error.is_none(), "{:?}", r.error);
    assert_eq!(r.fits, Some(true));
    let st = r.synth.clone().unwrap();
    assert_eq!(st.resources.dsps, 16, "{:?}", st.cells);
    assert_eq!(st.lut_multipliers, 0);
    assert!(st.resources.brams >= 2.0, "{:?}", st.cells);
    assert!(st.cells.contains_key("FDRE"));
    assert_eq!(r.fit_basis.as_deref(), Some("synthesis estimate"));
    // The 100T maps the same 16 multipliers to DSPs: the netlist is reused.
    let big = flow::run_flow(&env, &cfg, part("xc7a100t").unwrap(), false);
    assert_eq!(big.synth.unwrap().resources, st.resources);
    assert_eq!(big.synth_seconds, r.synth_seconds);
    assert!(tmp.path().join(&big.dir).join("stat.json").exists());
    assert!(big.utilization.unwrap().luts < r.utilization.unwrap().luts);
}

#[test]
fn bf16_1x1_on_artix7_maps_its_multiplier_to_a_dsp48() {
    let r = synth(1, 1, ElemType::Bf16, "xc7a35t");
    let st = r.synth.unwrap();
    assert_eq!(st.resources.dsps, 1, "{:?}", st.cells);
    assert!(st.resources.brams > 0.0, "{:?}", st.cells);
}

#[test]
fn a_latch_fails_the_flow() {
    let tmp = tempfile::tempdir().unwrap();
    let v = "module latchy(input wire clk_i, input wire en_i, input wire d_i, output reg q_o);\n\
             always @* if (en_i) q_o = d_i;\nendmodule\n";
    std::fs::write(tmp.path().join("latchy.v"), v).unwrap();
    let e = flow::synthesize(
        &env(tmp.path()),
        tmp.path(),
        &["latchy.v".into()],
        "latchy",
        part("xc7a35t").unwrap(),
        &mxu(MxuConfig::new(1, 1, ElemType::Int8).unwrap()),
    )
    .unwrap_err();
    assert!(e.starts_with("latch inferred"), "{e}");
    assert!(!e.contains('\n'), "{e}");
}

#[test]
fn harness_and_mxu_pass_verilator_lint_and_icarus() {
    let cfg = MxuConfig::with_acc_rows(2, 3, ElemType::Int8, 16).unwrap();
    let (files, _) = flow::harnessed_files(&mxu(cfg)).unwrap();
    tb::tools::verilator_lint(&files, fpga::harness::TOP).unwrap_or_else(|e| panic!("{e}"));
    tb::tools::iverilog_compile(&files, fpga::harness::TOP).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn harness_and_sparsecore_pass_verilator_lint_and_icarus() {
    let cfg = config::SparseCoreConfig::with(2, 8, 4, 4, 4, 100).unwrap();
    let design = FlowDesign::typed(&sparsecore::SparseCore, cfg).unwrap();
    let (files, harness_ffs) = flow::harnessed_files(&design).unwrap();
    // Every port bit but the clock and reset passes through the harness.
    assert!(harness_ffs > 256, "{harness_ffs}");
    tb::tools::verilator_lint(&files, fpga::harness::TOP).unwrap_or_else(|e| panic!("{e}"));
    tb::tools::iverilog_compile(&files, fpga::harness::TOP).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn harness_and_tensorcore_pass_verilator_lint_and_icarus() {
    let cfg = config::TensorCoreConfig::with(2, 2, 16, 64, 64, 16, 2).unwrap();
    let design = FlowDesign::typed(&tensorcore::TensorCore, cfg).unwrap();
    let (files, harness_ffs) = flow::harnessed_files(&design).unwrap();
    // The instruction word alone is 128 port bits.
    assert!(harness_ffs > 128, "{harness_ffs}");
    tb::tools::verilator_lint(&files, fpga::harness::TOP).unwrap_or_else(|e| panic!("{e}"));
    tb::tools::iverilog_compile(&files, fpga::harness::TOP).unwrap_or_else(|e| panic!("{e}"));
}

/// A block that registers its input keeps its register inside the harness:
/// Yosys merges equal flip-flops, and a harness chain that shifted every
/// cycle made a link of the chain equal to the block's register (bit k + 1
/// loads bit k), so the block lost it to the chain.
#[test]
fn the_harness_chain_does_not_absorb_the_blocks_input_registers() {
    let tmp = tempfile::tempdir().unwrap();
    let mut m = hw::ModuleBuilder::new("sampler");
    let a = m.input("a_i", hw::Ty::u(8));
    let r = m.reg("r", hw::Ty::u(8));
    m.set_next(r, a);
    m.output("q_o", r.q());
    let sampler = m.finish();
    std::fs::write(
        tmp.path().join("sampler.v"),
        hw::emit_module(&sampler, &hw::Header::default()),
    )
    .unwrap();
    let top = fpga::harness::harness("sampler", &fpga::harness::ports(&sampler)).unwrap();
    std::fs::write(tmp.path().join("fpga_top.v"), top).unwrap();
    let (stats, _) = flow::synthesize(
        &env(tmp.path()),
        tmp.path(),
        &["sampler.v".into(), "fpga_top.v".into()],
        fpga::harness::TOP,
        part("ice40-up5k").unwrap(),
        // Any design without multipliers (it only sets the DSP budget).
        &FlowDesign::of(gen::find_block("ici").unwrap(), &toml::Table::new()).unwrap(),
    )
    .unwrap();
    // The chain's 8 inputs, the block's 8, the 8 output links; no reset
    // register (the block has no reset, so nothing reads it).
    assert_eq!(stats.resources.ffs, 24, "{:?}", stats.cells);
}

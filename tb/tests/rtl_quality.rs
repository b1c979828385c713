//! Every preset's generated Verilog passes the tools users will run it
//! through: `verilator --lint-only -Wall` (waivers only with reasons),
//! `iverilog -g2005`, and a Yosys synthesis that infers no latch.

use config::{ElemType, MxuConfig};
use rstest::rstest;
use sim::drivers::mxu::mxu_files;
use tb::tools;

#[rstest]
#[case(ElemType::Int8, 1, 1)]
#[case(ElemType::Int8, 2, 3)]
#[case(ElemType::Int8, 3, 2)]
#[case(ElemType::Int8, 4, 4)]
#[case(ElemType::Int8, 8, 8)]
#[case(ElemType::Int8, 16, 16)]
#[case(ElemType::Bf16, 1, 1)]
#[case(ElemType::Bf16, 2, 3)]
#[case(ElemType::Bf16, 4, 4)]
#[case(ElemType::Bf16, 8, 8)]
fn mxu_passes_lint_icarus_and_yosys(#[case] dtype: ElemType, #[case] rows: u32, #[case] cols: u32) {
    let cfg = MxuConfig::new(rows, cols, dtype).unwrap();
    let (files, top) = mxu_files(&cfg).unwrap();
    tools::verilator_lint(&files, &top.name).unwrap_or_else(|e| panic!("{cfg}: {e}"));
    tools::iverilog_compile(&files, &top.name).unwrap_or_else(|e| panic!("{cfg}: {e}"));
    let synth = tools::yosys_synth(&files, &top.name).unwrap_or_else(|e| panic!("{cfg}: {e}"));
    assert_eq!(synth.latches, 0, "{cfg}: latches inferred\n{}", synth.log);
    assert!(
        synth.flip_flops > 0 && synth.cells > 0,
        "{cfg}: empty synthesis?\n{}",
        synth.log
    );
}

#[test]
fn every_waiver_states_a_reason() {
    let cfg = MxuConfig::DEFAULT;
    let (files, _) = mxu_files(&cfg).unwrap();
    let vlt = files
        .iter()
        .find(|f| f.name == hw::emit::WAIVER_FILE)
        .expect("waiver file");
    let lines: Vec<&str> = vlt.text.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        if l.starts_with("lint_off") {
            // The reason is the comment line above the waiver's pair of lines.
            let reason = lines[..i]
                .iter()
                .rev()
                .find(|p| p.starts_with("//"))
                .unwrap();
            assert!(reason.len() > 20, "waiver without a real reason: {l}");
        }
    }
}

#[test]
fn the_lint_check_itself_catches_warnings() {
    // A module with an unused input must fail the lint check.
    let mut m = hw::ModuleBuilder::new("leaky");
    let a = m.input("a_i", hw::Ty::u(4));
    let _unused = m.input("b_i", hw::Ty::u(4));
    m.output("y_o", a);
    let mut design = hw::Design::new();
    let top = design.add(m.finish());
    let files = hw::emit_design(&design, &top, &hw::Header::default());
    assert!(tools::verilator_lint(&files, "leaky").is_err());
}

//! `sim eup` end to end: float32 arrays in, every operation on the RTL and
//! the golden model, results bit for bit `golden::eup`'s; bad input gets one
//! error line, exit code 2 and no output file.

mod common;

use common::{assert_usage_error, read_f32_bits, sim, stats_of, write_npy, Case};
use config::{EupConfig, EupOp};

fn run(case: &Case, op: &str, extra: &[&str]) -> std::process::Output {
    sim()
        .args(["eup", "--op", op, "--a"])
        .arg(case.path("a.npy"))
        .arg("--out")
        .arg(case.path("y.npy"))
        .args(extra)
        .output()
        .unwrap()
}

/// Operands with every class: zeros, subnormals, infinities, NaNs with
/// payloads, the ends of the normal range, and ordinary values.
const OPERANDS: [u32; 12] = [
    0x0000_0000,
    0x8000_0000,
    0x0000_0001,
    0x807f_ffff,
    0x7f80_0000,
    0xff80_0000,
    0x7fc0_1234,
    0x0080_0000,
    0x7f7f_ffff,
    0x3f80_0000,
    0x42b1_7218,
    0xc2fc_0000,
];

#[test]
fn every_operation_on_rtl_and_golden_is_the_contract_s() {
    let case = Case::new();
    let a: Vec<f32> = OPERANDS.iter().map(|&x| f32::from_bits(x)).collect();
    let b: Vec<f32> = OPERANDS.iter().rev().map(|&x| f32::from_bits(x)).collect();
    write_npy(&case.path("a.npy"), &[3, 4], &a);
    write_npy(&case.path("b.npy"), &[3, 4], &b);
    let cfg = EupConfig::DEFAULT;
    for op in EupOp::ALL {
        let want: Vec<u32> = a
            .iter()
            .zip(&b)
            .map(|(x, y)| golden::eup::apply(op, x.to_bits(), y.to_bits()))
            .collect();
        for backend in [&["--golden"][..], &[][..]] {
            let b_path = case.path("b.npy");
            let mut extra = vec!["--stats"];
            extra.extend_from_slice(backend);
            if op.binary() {
                extra.extend(["--b", b_path.to_str().unwrap()]);
            }
            let out = run(&case, op.name(), &extra);
            assert!(
                out.status.success(),
                "{op} {backend:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(
                read_f32_bits(&case.path("y.npy")),
                (vec![3, 4], want.clone()),
                "{op} {backend:?}"
            );
            let s = stats_of(&out);
            assert_eq!(s["op"], op.name());
            assert_eq!(s["elements"], 12);
            assert_eq!(s["latency"], cfg.latency());
            assert_eq!(s["cycles"], 12 + u64::from(cfg.latency()));
        }
    }
}

#[test]
fn bad_input_is_one_line_exit_2_and_no_output() {
    let case = Case::new();
    write_npy(&case.path("a.npy"), &[4], &[1.0f32, 2.0, 3.0, 4.0]);
    write_npy(&case.path("b3.npy"), &[3], &[1.0f32, 2.0, 3.0]);
    write_npy(&case.path("i.npy"), &[4], &[1i32, 2, 3, 4]);
    let y = case.path("y.npy");
    let b3 = case.path("b3.npy");
    let ints = case.path("i.npy");
    let cases: Vec<(&str, Vec<&str>, &str)> = vec![
        ("log", vec![], "unknown EUP operation 'log'"),
        ("div", vec![], "needs --b"),
        ("exp", vec!["--b", b3.to_str().unwrap()], "div only"),
        ("div", vec!["--b", b3.to_str().unwrap()], "shape"),
        ("div", vec!["--b", ints.to_str().unwrap()], "float32"),
        ("exp", vec!["--mul-stages", "5"], "mul_stages"),
        (
            "sqrt",
            vec!["--recurrence-stages", "29"],
            "recurrence_stages",
        ),
        ("exp2", vec!["--add-stages", "-1"], "add-stages"),
    ];
    for (op, extra, message) in cases {
        let out = run(&case, op, &extra);
        assert_usage_error(&out, &format!("{op} {extra:?}"), message, &[&y]);
    }
    let out = sim()
        .args(["eup", "--op", "exp", "--a"])
        .arg(&ints)
        .arg("--out")
        .arg(&y)
        .output()
        .unwrap();
    assert_usage_error(&out, "int32 A", "float32", &[&y]);
    let out = sim()
        .args(["eup", "--op", "exp", "--a"])
        .arg(case.path("missing.npy"))
        .arg("--out")
        .arg(&y)
        .output()
        .unwrap();
    assert_usage_error(&out, "missing A", "missing.npy", &[&y]);
}

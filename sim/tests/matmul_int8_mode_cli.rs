//! `sim matmul --int8-mode` end to end: the bf16 array in int8 mode runs int8
//! operands (`--dtype int8`) and bf16 operands (`--dtype bf16`), RTL and
//! golden agreeing bit for bit and cycle for cycle at the bf16 array's
//! timing; bad input gets one error line, exit code 2 and no output file.

mod common;

use common::{assert_usage_error, read_words, sim, stats_of, write_npy, Case};
use config::{ElemType, MxuConfig};

/// `sim matmul --int8-mode --dtype <dtype>` on the case's a.npy and b.npy,
/// writing c.npy.
fn run(case: &Case, dtype: &str, extra: &[&str]) -> std::process::Output {
    sim()
        .args(["matmul", "--int8-mode", "--dtype", dtype, "--a"])
        .arg(case.path("a.npy"))
        .arg("--b")
        .arg(case.path("b.npy"))
        .arg("--out")
        .arg(case.path("c.npy"))
        .args(extra)
        .output()
        .unwrap()
}

/// The array every run here uses: bf16 4x3 at depth 2, in int8 mode.
fn array() -> MxuConfig {
    MxuConfig::new(4, 3, ElemType::Bf16)
        .and_then(|c| c.with_depth(2))
        .and_then(|c| c.with_int8_mode(true))
        .unwrap()
}

const ARRAY_FLAGS: [&str; 6] = ["--rows", "4", "--cols", "3", "--depth", "2"];

/// Runs both backends with `--stats`; checks the result against `expected`
/// (and its dtype), the cycles against the bf16 array's cycle model, and
/// the stats' fields.
fn check_both_backends(
    case: &Case,
    dtype: &str,
    (m, k, n): (usize, usize, usize),
    expected: &[u32],
) {
    let descr = if dtype == "int8" { "'<i4'" } else { "'<f4'" };
    let timing = golden::MxuTiming::new(&array(), m, k, n);
    let plain_bf16 = MxuConfig::new(4, 3, ElemType::Bf16)
        .and_then(|c| c.with_depth(2))
        .unwrap();
    assert_eq!(
        timing.total_cycles(),
        golden::MxuTiming::new(&plain_bf16, m, k, n).total_cycles()
    );
    for backend in [&["--golden"][..], &[][..]] {
        let mut args = ARRAY_FLAGS.to_vec();
        args.push("--stats");
        args.extend_from_slice(backend);
        let out = run(case, dtype, &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{dtype} {backend:?}: {err}");
        let (shape, got_descr, c) = read_words(&case.path("c.npy"));
        assert_eq!(shape, [m as u64, n as u64]);
        assert_eq!(got_descr, descr);
        assert_eq!(c, expected, "{dtype} {backend:?}");
        let s = stats_of(&out);
        assert_eq!(s["dtype"], dtype);
        assert_eq!(s["int8_mode"], true);
        assert_eq!((s["rows"].as_u64(), s["cols"].as_u64()), (Some(4), Some(3)));
        assert_eq!(s["cycles"], timing.total_cycles(), "{dtype} {backend:?}");
        assert_eq!(s["macs"], (m * k * n) as u64);
    }
}

#[test]
fn int8_operands_run_as_int8_rows() {
    let case = Case::new();
    let (m, k, n) = (7, 9, 5);
    let a: Vec<i8> = (0..m * k)
        .map(|i| {
            if i % 5 == 0 {
                -128
            } else {
                ((i * 89 + 7) % 256) as u8 as i8
            }
        })
        .collect();
    let b: Vec<i8> = (0..k * n)
        .map(|i| {
            if i % 4 == 0 {
                -128
            } else {
                ((i * 53 + 128) % 256) as u8 as i8
            }
        })
        .collect();
    write_npy(&case.path("a.npy"), &[m as u64, k as u64], &a);
    write_npy(&case.path("b.npy"), &[k as u64, n as u64], &b);
    let expected: Vec<u32> = golden::matmul_int8(&a, &b, m, k, n)
        .into_iter()
        .map(|x| x as u32)
        .collect();
    check_both_backends(&case, "int8", (m, k, n), &expected);
}

#[test]
fn bf16_operands_run_as_bf16_rows() {
    let case = Case::new();
    let (m, k, n) = (6, 10, 4);
    const SPECIAL: [u16; 6] = [0x7FC0, 0xFF80, 0x8000, 0x0001, 0x3F80, 0x0000];
    let a: Vec<u16> = (0..m * k)
        .map(|i| {
            if i % 11 == 0 {
                SPECIAL[i % 6]
            } else {
                0x3C00 + ((i * 131) % 0x800) as u16
            }
        })
        .collect();
    let b: Vec<u16> = (0..k * n)
        .map(|i| 0xBC00 + ((i * 97) % 0x800) as u16)
        .collect();
    write_npy(&case.path("a.npy"), &[m as u64, k as u64], &a);
    write_npy(&case.path("b.npy"), &[k as u64, n as u64], &b);
    // R = 4 cuts K = 10 into three tiles, as on the bf16 array.
    let expected = golden::matmul_bf16(&a, &b, m, k, n, 4);
    check_both_backends(&case, "bf16", (m, k, n), &expected);
}

#[test]
fn bad_input_is_one_line_exit_two_and_no_output() {
    let case = Case::new();
    // bf16 operand files (uint16) where --dtype int8 asks for int8 ones.
    write_npy(&case.path("a.npy"), &[2, 3], &[0x3F80u16; 6]);
    write_npy(&case.path("b.npy"), &[3, 2], &[0x3F80u16; 6]);
    let c = case.path("c.npy");
    let out = run(&case, "int8", &ARRAY_FLAGS);
    assert_usage_error(&out, "uint16 files for int8", "int8", &[&c]);
    let out = run(&case, "bf16", &["--rows", "0"]);
    assert_usage_error(&out, "--rows 0", "rows", &[&c]);
}

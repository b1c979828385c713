//! `sim vpu` end to end: .npy arrays of any shape in, RTL or golden, .npy out,
//! every operation against the contract computed here element by element;
//! bad input gets one error line, exit code 2 and no output file.

mod common;

use common::{assert_usage_error, read_words, stats_of, write_npy};
use golden::numerics as num;
use npyz::WriterBuilder;
use std::path::PathBuf;
use std::process::{Command, Output};

struct Case {
    dir: tempfile::TempDir,
}

impl Case {
    fn new() -> Case {
        Case {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    /// `sim vpu` with `args`, files named relative to the case's folder.
    fn run(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sim"));
        cmd.arg("vpu");
        for a in args {
            if a.ends_with(".npy") {
                cmd.arg(self.path(a));
            } else {
                cmd.arg(a);
            }
        }
        cmd.output().unwrap()
    }
}

/// Edge values of both kinds: fp32 specials (signed zeros, subnormals,
/// infinities, NaNs with payloads, extremes, ties) and int32 extremes.
const EDGES: &[u32] = &[
    0x0000_0000,
    0x8000_0000,
    0x0000_0001,
    0x807F_FFFF,
    0x0080_0000,
    0x7F7F_FFFF,
    0xFF7F_FFFF,
    0x7F80_0000,
    0xFF80_0000,
    0x7FC0_0000,
    0xFFC0_0001,
    0x7F80_0001,
    0x3F80_0000,
    0xBF80_0000,
    0x3F80_8000,
    0x40C0_0000,
    0x40C0_0001,
    0x4F00_0000,
    0xCF00_0000,
    0x3FC0_0000,
    0x7FFF_FFFF,
    0x0000_001F,
    0x0000_0021,
    0xFFFF_FFFF,
    0x0000_7F05,
    0x1234_5678,
];

/// `n` elements: the edges, then a deterministic mix.
fn values(n: usize, salt: u32) -> Vec<u32> {
    (0..n as u32)
        .map(|i| {
            let k = i as usize;
            if k < EDGES.len() && salt == 0 {
                EDGES[k]
            } else {
                EDGES[(k * 7 + salt as usize) % EDGES.len()]
                    ^ i.wrapping_mul(0x9E37_79B9).wrapping_add(salt) >> (i % 29)
            }
        })
        .collect()
}

/// What the contract says an elementwise operation gives, element by element.
fn contract(op: &str, a: u32, b: u32, m: u32) -> u32 {
    let (x, y) = (a as i32, b as i32);
    let flag = |t: bool| u32::from(t);
    match op {
        "add_i32" => a.wrapping_add(b),
        "sub_i32" => a.wrapping_sub(b),
        "mul_i32" => a.wrapping_mul(b),
        "min_i32" => x.min(y) as u32,
        "max_i32" => x.max(y) as u32,
        "and_i32" => a & b,
        "or_i32" => a | b,
        "xor_i32" => a ^ b,
        "not_i32" => !a,
        "shl_i32" => a << (b & 31),
        "shr_i32" => a >> (b & 31),
        "sra_i32" => (x >> (b & 31)) as u32,
        "relu_i32" => x.max(0) as u32,
        "eq_i32" => flag(a == b),
        "ne_i32" => flag(a != b),
        "lt_i32" => flag(x < y),
        "le_i32" => flag(x <= y),
        "ltu_i32" => flag(a < b),
        "leu_i32" => flag(a <= b),
        "add_f32" => num::add32(a, b),
        "sub_f32" => num::sub32(a, b),
        "mul_f32" => num::mul32(a, b),
        "min_f32" => num::min32(a, b),
        "max_f32" => num::max32(a, b),
        "relu_f32" => num::relu_f32(a),
        "relu6_f32" => num::relu6_f32(a),
        "eq_f32" => flag(num::eq_f32(a, b)),
        "ne_f32" => flag(num::ne_f32(a, b)),
        "lt_f32" => flag(num::lt_f32(a, b)),
        "le_f32" => flag(num::le_f32(a, b)),
        "cvt_i32_f32" => num::i32_to_f32(x),
        "cvt_f32_i32" => num::f32_to_i32(a) as u32,
        "cvt_f32_bf16" => u32::from(num::narrow_bf16(a)),
        "cvt_bf16_f32" => num::widen_bf16(a as u16),
        "select" => {
            if m != 0 {
                a
            } else {
                b
            }
        }
        other => panic!("no contract for {other}"),
    }
}

/// Writes A (and B, the mask) for `op` with `shape`, in the operation's types.
fn write_operands(case: &Case, op: &str, shape: &[u64]) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
    let n = shape.iter().product::<u64>() as usize;
    let a = values(n, 0);
    let b = values(n, 3);
    let mask: Vec<u32> = (0..n as u32)
        .map(|i| [0, 1, 0x7FC0_0000, 0][i as usize % 4])
        .collect();
    let float =
        op.ends_with("_f32") && op != "cvt_i32_f32" || op == "cvt_f32_i32" || op == "cvt_f32_bf16";
    let write = |name: &str, v: &[u32]| {
        if op == "cvt_bf16_f32" {
            let h: Vec<u16> = v.iter().map(|&x| (x >> 7) as u16).collect();
            write_npy(&case.path(name), shape, &h);
        } else if float {
            let f: Vec<f32> = v.iter().map(|&x| f32::from_bits(x)).collect();
            write_npy(&case.path(name), shape, &f);
        } else {
            let i: Vec<i32> = v.iter().map(|&x| x as i32).collect();
            write_npy(&case.path(name), shape, &i);
        }
    };
    write("a.npy", &a);
    write("b.npy", &b);
    let m: Vec<i32> = mask.iter().map(|&x| x as i32).collect();
    write_npy(&case.path("m.npy"), shape, &m);
    let a = if op == "cvt_bf16_f32" {
        a.iter().map(|&x| (x >> 7) & 0xFFFF).collect()
    } else {
        a
    };
    (a, b, mask)
}

const ELEMENTWISE: &[&str] = &[
    "add_i32",
    "sub_i32",
    "mul_i32",
    "min_i32",
    "max_i32",
    "and_i32",
    "or_i32",
    "xor_i32",
    "not_i32",
    "shl_i32",
    "shr_i32",
    "sra_i32",
    "relu_i32",
    "eq_i32",
    "ne_i32",
    "lt_i32",
    "le_i32",
    "ltu_i32",
    "leu_i32",
    "add_f32",
    "sub_f32",
    "mul_f32",
    "min_f32",
    "max_f32",
    "relu_f32",
    "relu6_f32",
    "eq_f32",
    "ne_f32",
    "lt_f32",
    "le_f32",
    "cvt_i32_f32",
    "cvt_f32_i32",
    "cvt_f32_bf16",
    "cvt_bf16_f32",
    "select",
];

fn unary(op: &str) -> bool {
    matches!(
        op,
        "not_i32"
            | "relu_i32"
            | "relu_f32"
            | "relu6_f32"
            | "cvt_i32_f32"
            | "cvt_f32_i32"
            | "cvt_f32_bf16"
            | "cvt_bf16_f32"
    )
}

#[test]
fn every_elementwise_op_on_both_backends_matches_the_contract() {
    let case = Case::new();
    let shape = [3u64, 11, 2];
    for op in ELEMENTWISE {
        let (a, b, mask) = write_operands(&case, op, &shape);
        let mut args = vec!["--op", op, "--a", "a.npy", "--out", "c.npy", "--stats"];
        if !unary(op) {
            args.extend(["--b", "b.npy"]);
        }
        if *op == "select" {
            args.extend(["--mask", "m.npy"]);
        }
        let mut cycles = Vec::new();
        for backend in [&["--golden"][..], &[][..]] {
            let _ = std::fs::remove_file(case.path("c.npy"));
            let mut all = args.clone();
            all.extend_from_slice(backend);
            let out = case.run(&all);
            assert!(
                out.status.success(),
                "{op}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let (got_shape, dtype, got) = read_words(&case.path("c.npy"));
            assert_eq!(got_shape, shape, "{op}");
            let want_type = match *op {
                "cvt_f32_bf16" => "'<u2'",
                "select" | "cvt_f32_i32" => "'<i4'",
                o if o.starts_with("cvt_") => "'<f4'",
                o if o.ends_with("_f32")
                    && !["eq", "ne", "lt", "le"].iter().any(|c| o.starts_with(c)) =>
                {
                    "'<f4'"
                }
                _ => "'<i4'",
            };
            assert_eq!(dtype, want_type, "{op}");
            for i in 0..a.len() {
                let want = contract(op, a[i], b[i], mask[i]);
                assert_eq!(
                    got[i], want,
                    "{op} {backend:?} element {i}: a {:#x} b {:#x}",
                    a[i], b[i]
                );
            }
            let s = stats_of(&out);
            assert_eq!(s["op"], *op);
            assert_eq!(
                (s["lanes"].as_u64(), s["sublanes"].as_u64()),
                (Some(8), Some(1))
            );
            assert_eq!(s["n"], a.len() as u64);
            let c = s["cycles"].as_u64().unwrap();
            let epc = s["elements_per_cycle"].as_f64().unwrap();
            assert!((epc - a.len() as f64 / c as f64).abs() < 1e-12);
            cycles.push(c);
        }
        assert_eq!(cycles[0], cycles[1], "{op}: golden and RTL cycles");
    }
}

#[test]
fn requantization_and_reductions_match_the_contract() {
    let case = Case::new();
    let n = 100;
    let acc: Vec<i32> = values(n, 5)
        .iter()
        .map(|&x| (x as i32) >> (x % 20))
        .collect();
    write_npy(&case.path("acc.npy"), &[10, 10], &acc);
    for backend in ["--golden", "--stats"] {
        let out = case.run(&[
            "--op",
            "requant_i8",
            "--a",
            "acc.npy",
            "--out",
            "q.npy",
            "--mult",
            "1518500250",
            "--shift",
            "5",
            "--zp",
            "-7",
            backend,
            "--lanes",
            "4",
            "--sublanes",
            "2",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (shape, dtype, got) = read_words(&case.path("q.npy"));
        assert_eq!((shape, dtype.as_str()), (vec![10, 10], "'|i1'"));
        for (i, &x) in acc.iter().enumerate() {
            let want = num::requant_int8(x, 1_518_500_250, 5, -7);
            assert_eq!(got[i] as i32, i32::from(want), "acc {x}");
        }
    }
    // Reductions: the fp32 sum depends on W, the others do not.
    let x = values(1000, 9);
    let f: Vec<f32> = x.iter().map(|&v| f32::from_bits(v)).collect();
    write_npy(&case.path("f.npy"), &[1000], &f);
    let i: Vec<i32> = x.iter().map(|&v| v as i32).collect();
    write_npy(&case.path("i.npy"), &[20, 50], &i);
    for (lanes, sublanes) in [("8", "1"), ("4", "2"), ("1", "1")] {
        let w = lanes.parse::<usize>().unwrap() * sublanes.parse::<usize>().unwrap();
        for (op, file, want) in [
            (
                "reduce_sum_f32",
                "f.npy",
                golden::vpu::reduce_sum_f32(&x, w),
            ),
            ("reduce_max_f32", "f.npy", golden::vpu::reduce_max_f32(&x)),
            ("reduce_min_f32", "f.npy", golden::vpu::reduce_min_f32(&x)),
            (
                "reduce_sum_i32",
                "i.npy",
                golden::vpu::reduce_sum_i32(&i) as u32,
            ),
            (
                "reduce_max_i32",
                "i.npy",
                golden::vpu::reduce_max_i32(&i) as u32,
            ),
            (
                "reduce_min_i32",
                "i.npy",
                golden::vpu::reduce_min_i32(&i) as u32,
            ),
        ] {
            let out = case.run(&[
                "--op",
                op,
                "--a",
                file,
                "--out",
                "r.npy",
                "--lanes",
                lanes,
                "--sublanes",
                sublanes,
            ]);
            assert!(
                out.status.success(),
                "{op}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let (shape, _, got) = read_words(&case.path("r.npy"));
            assert_eq!(shape, vec![1], "{op}");
            assert_eq!(got, vec![want], "{op} on {lanes}x{sublanes}");
        }
    }
}

#[test]
fn nan_payloads_pass_through_select_and_scalars_keep_their_shape() {
    let case = Case::new();
    let a = [f32::from_bits(0x7F80_0001), f32::from_bits(0xFFC1_2345)];
    let b = [f32::from_bits(0x0000_0001), -0.0f32];
    write_npy(&case.path("a.npy"), &[2], &a);
    write_npy(&case.path("b.npy"), &[2], &b);
    write_npy(&case.path("m.npy"), &[2], &[1i32, 1]);
    let out = case.run(&[
        "--op", "select", "--a", "a.npy", "--b", "b.npy", "--mask", "m.npy", "--out", "c.npy",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        read_words(&case.path("c.npy")).2,
        vec![0x7F80_0001, 0xFFC1_2345]
    );
    // A zero-dimensional array is one element; its result has its shape.
    write_npy(&case.path("s.npy"), &[], &[-3i32]);
    let out = case.run(&[
        "--op", "relu_i32", "--a", "s.npy", "--out", "c.npy", "--golden",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (shape, _, got) = read_words(&case.path("c.npy"));
    assert_eq!((shape, got), (vec![], vec![0]));
}

#[test]
fn op_list_names_every_operation_with_its_types() {
    let out = Case::new().run(&["--op", "list"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for op in ELEMENTWISE.iter().chain(&[
        "requant_i8",
        "reduce_sum_i32",
        "reduce_max_i32",
        "reduce_min_i32",
        "reduce_sum_f32",
        "reduce_max_f32",
        "reduce_min_f32",
    ]) {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(op))
            .unwrap_or_else(|| panic!("{op} missing from:\n{text}"));
        assert!(line.contains("->"), "{line}");
    }
    assert_eq!(text.lines().count(), ELEMENTWISE.len() + 7);
}

/// Runs `sim vpu` expecting a usage error: exit code 2, one line on stderr,
/// no panic, and no output file.
fn assert_rejected(case: &Case, args: &[&str], expect_in_message: &str) {
    let _ = std::fs::remove_file(case.path("c.npy"));
    let out = case.run(args);
    assert_usage_error(
        &out,
        &format!("{args:?}"),
        expect_in_message,
        &[&case.path("c.npy")],
    );
}

#[test]
fn bad_input_is_one_line_exit_two_and_no_output() {
    let case = Case::new();
    write_npy(&case.path("a.npy"), &[2, 3], &[1i32; 6]);
    write_npy(&case.path("f.npy"), &[2, 3], &[1f32; 6]);
    write_npy(&case.path("b.npy"), &[3, 2], &[1i32; 6]);
    write_npy(&case.path("d.npy"), &[2, 3], &[1f64; 6]);
    write_npy(&case.path("e.npy"), &[2, 0], &[0i32; 0]);
    std::fs::write(case.path("x.npy"), "not numpy").unwrap();
    let add = |b: &'static str| {
        [
            "--op", "add_i32", "--a", "a.npy", "--b", b, "--out", "c.npy",
        ]
    };
    assert_rejected(&case, &add("b.npy"), "shape mismatch");
    assert_rejected(&case, &add("f.npy"), "int32");
    assert_rejected(&case, &add("d.npy"), "int32");
    assert_rejected(&case, &add("e.npy"), "at least one element");
    assert_rejected(&case, &add("x.npy"), "not a .npy file");
    assert_rejected(&case, &add("missing.npy"), "cannot read B");
    let base = ["--a", "a.npy", "--out", "c.npy"];
    let with = |extra: &[&'static str]| {
        let mut v: Vec<&str> = base.to_vec();
        v.extend_from_slice(extra);
        v
    };
    assert_rejected(&case, &with(&["--op", "frobnicate"]), "unknown op");
    assert_rejected(&case, &with(&["--op", "add_i32"]), "needs --b");
    assert_rejected(
        &case,
        &with(&["--op", "add_f32", "--b", "f.npy"]),
        "float32",
    );
    assert_rejected(
        &case,
        &with(&["--op", "not_i32", "--b", "a.npy"]),
        "takes no --b",
    );
    assert_rejected(
        &case,
        &with(&["--op", "not_i32", "--mask", "a.npy"]),
        "takes no --mask",
    );
    assert_rejected(&case, &with(&["--op", "select", "--b", "a.npy"]), "--mask");
    assert_rejected(
        &case,
        &with(&["--op", "select", "--b", "a.npy", "--mask", "f.npy"]),
        "int32",
    );
    assert_rejected(
        &case,
        &with(&["--op", "select", "--b", "f.npy", "--mask", "a.npy"]),
        "int32",
    );
    assert_rejected(
        &case,
        &with(&["--op", "not_i32", "--mult", "5"]),
        "requant_i8 only",
    );
    let rq = |m: &'static str, s: &'static str, z: &'static str| {
        with(&["--op", "requant_i8", "--mult", m, "--shift", s, "--zp", z])
    };
    assert_rejected(&case, &rq("0", "1", "0"), "--mult");
    assert_rejected(&case, &rq("-5", "1", "0"), "--mult");
    assert_rejected(&case, &rq("2147483648", "1", "0"), "--mult");
    assert_rejected(&case, &rq("5", "32", "0"), "--shift");
    assert_rejected(&case, &rq("5", "-1", "0"), "--shift");
    assert_rejected(&case, &rq("5", "1", "128"), "--zp");
    assert_rejected(&case, &rq("5", "1", "-129"), "--zp");
    assert_rejected(&case, &rq("5", "1", "x"), "--zp");
    assert_rejected(
        &case,
        &with(&["--op", "requant_i8", "--mult", "5"]),
        "--shift",
    );
    assert_rejected(&case, &with(&["--op", "not_i32", "--lanes", "3"]), "lanes");
    assert_rejected(
        &case,
        &with(&["--op", "not_i32", "--sublanes", "0"]),
        "sublanes",
    );
    assert_rejected(&case, &["--op", "not_i32", "--out", "c.npy"], "--a");
    assert_rejected(&case, &["--op", "not_i32", "--a", "a.npy"], "--out");
    assert_rejected(&case, &with(&["--op", "reduce_sum_f32"]), "float32");
}

#[test]
fn a_failed_run_keeps_an_existing_output_intact_and_fortran_order_reads_as_values() {
    let case = Case::new();
    let a: Vec<i32> = (0..6).collect();
    write_npy(&case.path("a.npy"), &[2, 3], &a);
    let out = case.run(&[
        "--op", "not_i32", "--a", "a.npy", "--out", "c.npy", "--golden",
    ]);
    assert!(out.status.success());
    let before = std::fs::read(case.path("c.npy")).unwrap();
    let out = case.run(&[
        "--op", "not_i32", "--a", "a.npy", "--out", "c.npy", "--lanes", "5",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read(case.path("c.npy")).unwrap(), before);
    // The same 2x3 matrix column-major: the reduction's order is C order.
    let mut file = std::fs::File::create(case.path("f.npy")).unwrap();
    let mut w = npyz::WriteOptions::new()
        .default_dtype()
        .shape(&[2, 3])
        .order(npyz::Order::Fortran)
        .writer(&mut file)
        .begin_nd()
        .unwrap();
    let vals = [1.0f32, 1e8, -1e8, 3.0, 0.5, 7.0];
    for j in 0..3 {
        for i in 0..2 {
            w.push(&vals[i * 3 + j]).unwrap();
        }
    }
    w.finish().unwrap();
    let out = case.run(&[
        "--op",
        "reduce_sum_f32",
        "--a",
        "f.npy",
        "--out",
        "r.npy",
        "--lanes",
        "2",
        "--golden",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bits: Vec<u32> = vals.iter().map(|v| v.to_bits()).collect();
    assert_eq!(
        read_words(&case.path("r.npy")).2,
        vec![golden::vpu::reduce_sum_f32(&bits, 2)]
    );
}

//! The run CLI end to end: .npy in, RTL or golden, .npy out; bad input gets one
//! error line, exit code 2 and no output file.

mod common;

use common::{assert_usage_error, read_f32_bits, sim, stats_of, write_npy, Case};
use npyz::WriterBuilder;
use std::path::{Path, PathBuf};

fn read_i32(path: &Path) -> (Vec<u64>, Vec<i32>) {
    let bytes = std::fs::read(path).unwrap();
    let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
    let shape = npy.shape().to_vec();
    assert_eq!(npy.dtype().descr(), "'<i4'");
    (shape, npy.into_vec::<i32>().unwrap())
}

fn operands(case: &Case, m: usize, k: usize, n: usize) -> (Vec<i8>, Vec<i8>) {
    let a: Vec<i8> = (0..m * k)
        .map(|i| ((i * 89 + 7) % 256) as u8 as i8)
        .collect();
    let b: Vec<i8> = (0..k * n)
        .map(|i| ((i * 53 + 128) % 256) as u8 as i8)
        .collect();
    write_npy(&case.path("a.npy"), &[m as u64, k as u64], &a);
    write_npy(&case.path("b.npy"), &[k as u64, n as u64], &b);
    (a, b)
}

fn run_matmul(case: &Case, extra: &[&str]) -> std::process::Output {
    run_dtype(case, "int8", extra)
}

/// `sim matmul --dtype <dtype>` on the case's a.npy and b.npy, writing c.npy.
fn run_dtype(case: &Case, dtype: &str, extra: &[&str]) -> std::process::Output {
    sim()
        .args(["matmul", "--dtype", dtype, "--a"])
        .arg(case.path("a.npy"))
        .arg("--b")
        .arg(case.path("b.npy"))
        .arg("--out")
        .arg(case.path("c.npy"))
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn rtl_and_golden_agree_with_the_model_on_any_shape() {
    let case = Case::new();
    let (m, k, n) = (13, 11, 6);
    let (a, b) = operands(&case, m, k, n);
    let expected = golden::matmul_int8(&a, &b, m, k, n);
    for backend in [&["--golden"][..], &[][..]] {
        let mut args = vec!["--rows", "4", "--cols", "3", "--stats"];
        args.extend_from_slice(backend);
        let out = run_matmul(&case, &args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (shape, c) = read_i32(&case.path("c.npy"));
        assert_eq!(shape, vec![m as u64, n as u64]);
        assert_eq!(c, expected, "backend {backend:?}");
        let s = stats_of(&out);
        let cfg = config::MxuConfig::new(4, 3, config::ElemType::Int8).unwrap();
        let timing = golden::MxuTiming::new(&cfg, m, k, n);
        assert_eq!(s["rows"], 4);
        assert_eq!(s["cols"], 3);
        assert_eq!(s["dtype"], "int8");
        assert_eq!(s["cycles"], timing.total_cycles());
        assert_eq!(s["macs"], (m * k * n) as u64);
        let u = s["utilization"].as_f64().unwrap();
        assert!((u - timing.utilization()).abs() < 1e-12, "{u}");
    }
}

/// Runs the CLI expecting a usage error: exit code 2, one line on stderr, no
/// panic, and no output file.
fn assert_rejected(case: &Case, extra: &[&str], expect_in_message: &str) {
    let _ = std::fs::remove_file(case.path("c.npy"));
    let out = run_matmul(case, extra);
    assert_usage_error(
        &out,
        &format!("{extra:?}"),
        expect_in_message,
        &[&case.path("c.npy")],
    );
}

#[test]
fn bad_input_is_one_line_exit_two_and_no_output() {
    let case = Case::new();
    operands(&case, 3, 4, 5);
    assert_rejected(&case, &["--rows", "0"], "rows");
    assert_rejected(&case, &["--cols", "0"], "cols");
    assert_rejected(&case, &["--rows", "many"], "--rows");

    // B with the wrong inner dimension.
    write_npy(&case.path("b.npy"), &[3, 5], &[0i8; 15]);
    assert_rejected(&case, &[], "shape mismatch");

    // Wrong dtype, wrong rank, empty, not a .npy at all, missing.
    write_npy(&case.path("b.npy"), &[4, 5], &[0f64; 20]);
    assert_rejected(&case, &[], "int8");
    write_npy(&case.path("b.npy"), &[20], &[0i8; 20]);
    assert_rejected(&case, &[], "2-D");
    write_npy(&case.path("b.npy"), &[4, 0], &[0i8; 0]);
    assert_rejected(&case, &[], "at least 1");
    std::fs::write(case.path("b.npy"), "not numpy").unwrap();
    assert_rejected(&case, &[], "not a .npy file");
    std::fs::remove_file(case.path("b.npy")).unwrap();
    assert_rejected(&case, &[], "cannot read B");
}

#[test]
fn a_failed_run_keeps_an_existing_output_intact() {
    let case = Case::new();
    operands(&case, 2, 2, 2);
    let out = run_matmul(&case, &["--golden"]);
    assert!(out.status.success());
    let before = std::fs::read(case.path("c.npy")).unwrap();
    write_npy(&case.path("b.npy"), &[3, 2], &[0i8; 6]);
    let out = run_matmul(&case, &["--golden"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read(case.path("c.npy")).unwrap(), before);
}

#[test]
fn column_major_input_is_read_as_its_values() {
    // numpy's np.asfortranarray: same matrix, column-major bytes.
    let case = Case::new();
    let (m, k, n) = (3, 2, 2);
    let (a, b) = operands(&case, m, k, n);
    let mut file = std::fs::File::create(case.path("a.npy")).unwrap();
    let mut w = npyz::WriteOptions::new()
        .default_dtype()
        .shape(&[m as u64, k as u64])
        .order(npyz::Order::Fortran)
        .writer(&mut file)
        .begin_nd()
        .unwrap();
    for j in 0..k {
        for i in 0..m {
            w.push(&a[i * k + j]).unwrap();
        }
    }
    w.finish().unwrap();
    let out = run_matmul(&case, &["--golden"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        read_i32(&case.path("c.npy")).1,
        golden::matmul_int8(&a, &b, m, k, n)
    );
}

/// bf16 operands with every class of value (NaN, infinities, zeros, subnormals).
fn bf16_operands(case: &Case, m: usize, k: usize, n: usize) -> (Vec<u16>, Vec<u16>) {
    const SPECIAL: [u16; 8] = [
        0x7FC0, 0xFF80, 0x7F80, 0x8000, 0x0001, 0x3F80, 0xC0A0, 0x0000,
    ];
    let a: Vec<u16> = (0..m * k)
        .map(|i| {
            if i % 11 == 0 {
                SPECIAL[i % 8]
            } else {
                0x3C00 + ((i * 131) % 0x800) as u16
            }
        })
        .collect();
    let b: Vec<u16> = (0..k * n)
        .map(|i| {
            if i % 13 == 0 {
                SPECIAL[(i / 13) % 8]
            } else {
                0xBC00 + ((i * 97) % 0x800) as u16
            }
        })
        .collect();
    write_npy(&case.path("a.npy"), &[m as u64, k as u64], &a);
    write_npy(&case.path("b.npy"), &[k as u64, n as u64], &b);
    (a, b)
}

fn run_bf16(case: &Case, extra: &[&str]) -> std::process::Output {
    run_dtype(case, "bf16", extra)
}

#[test]
fn bf16_rtl_and_golden_agree_bit_for_bit() {
    let case = Case::new();
    let (m, k, n) = (9, 10, 5);
    let (a, b) = bf16_operands(&case, m, k, n);
    // The result depends on R: R = 4 cuts K = 10 into three tiles.
    let expected = golden::matmul_bf16(&a, &b, m, k, n, 4);
    for backend in [&["--golden"][..], &[][..]] {
        let mut args = vec!["--rows", "4", "--cols", "2", "--stats"];
        args.extend_from_slice(backend);
        let out = run_bf16(&case, &args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (shape, c) = read_f32_bits(&case.path("c.npy"));
        assert_eq!(shape, vec![m as u64, n as u64]);
        assert_eq!(c, expected, "backend {backend:?}");
        let s = stats_of(&out);
        assert_eq!(
            (s["dtype"].as_str(), s["rows"].as_u64()),
            (Some("bf16"), Some(4))
        );
    }
}

#[test]
fn bf16_needs_uint16_operands() {
    let case = Case::new();
    operands(&case, 2, 2, 2); // int8 files
    let _ = std::fs::remove_file(case.path("c.npy"));
    let out = run_bf16(&case, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("uint16"), "{err}");
    assert!(!case.path("c.npy").exists());
}

#[test]
fn long_matmuls_keep_the_array_busy_in_both_element_types() {
    // 8x8, M=256, K=N=64: the cycles the RTL reports equal the cycle model's,
    // and at least 97% of the MAC slots do useful work.
    let case = Case::new();
    let (m, k, n) = (256, 64, 64);
    for dtype in ["int8", "bf16"] {
        if dtype == "int8" {
            operands(&case, m, k, n);
        } else {
            bf16_operands(&case, m, k, n);
        }
        let stats: Vec<serde_json::Value> = [&["--golden"][..], &[][..]]
            .iter()
            .map(|backend| {
                let mut args = vec!["--rows", "8", "--cols", "8", "--stats"];
                args.extend_from_slice(backend);
                let out = run_dtype(&case, dtype, &args);
                let err = String::from_utf8_lossy(&out.stderr).into_owned();
                assert!(out.status.success(), "{err}");
                stats_of(&out)
            })
            .collect();
        assert_eq!(
            stats[0]["cycles"], stats[1]["cycles"],
            "{dtype}: RTL vs cycle model"
        );
        let u = stats[1]["utilization"].as_f64().unwrap();
        assert!(u >= 0.97, "{dtype}: utilization {u}");
    }
}

// ---------------------------------------------------------------- sim link

fn run_link(case: &Case, extra: &[&str]) -> std::process::Output {
    sim()
        .arg("link")
        .arg("--payload")
        .arg(case.path("p.npy"))
        .arg("--out")
        .arg(case.path("d.npy"))
        .args(extra)
        .output()
        .unwrap()
}

fn read_u8(path: &Path) -> (Vec<u64>, Vec<u8>) {
    let bytes = std::fs::read(path).unwrap();
    let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
    let shape = npy.shape().to_vec();
    assert_eq!(npy.dtype().descr(), "'|u1'");
    (shape, npy.into_vec::<u8>().unwrap())
}

#[test]
fn link_delivers_the_payload_byte_for_byte_with_and_without_errors() {
    let case = Case::new();
    // 1 byte, a partial flit, and a 2-D payload of several packets.
    for shape in [vec![1u64], vec![100], vec![37, 29]] {
        let n: u64 = shape.iter().product();
        let p: Vec<u8> = (0..n).map(|i| (i * 151 + 7) as u8).collect();
        write_npy(&case.path("p.npy"), &shape, &p);
        let mut cycles = Vec::new();
        for args in [
            &["--golden", "--stats"][..],
            &["--stats"][..],
            &[
                "--stats",
                "--ber",
                "1e-3",
                "--drop-rate",
                "0.01",
                "--dup-rate",
                "0.01",
                "--seed",
                "7",
            ][..],
        ] {
            let _ = std::fs::remove_file(case.path("d.npy"));
            let out = run_link(&case, args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{args:?}: {err}");
            assert_eq!(
                read_u8(&case.path("d.npy")),
                (shape.clone(), p.clone()),
                "{args:?}"
            );
            let s = stats_of(&out);
            for key in [
                "flits",
                "crc_errors",
                "retransmits",
                "naks",
                "timeouts",
                "link_downs",
                "cycles",
                "goodput",
                "backend",
            ] {
                assert!(s.get(key).is_some(), "{key} missing: {s}");
            }
            cycles.push(s["cycles"].as_u64().unwrap());
            if args.contains(&"--ber") && n > 1000 {
                assert!(s["crc_errors"].as_u64().unwrap() > 0, "{s}");
                assert_eq!(s["crc_escapes"], 0, "{s}");
            }
        }
        // The RTL takes the cycles the golden cycle model says.
        assert_eq!(cycles[0], cycles[1], "{shape:?}");
    }
}

fn assert_link_rejected(case: &Case, extra: &[&str], expect_in_message: &str) {
    let _ = std::fs::remove_file(case.path("d.npy"));
    let out = run_link(case, extra);
    assert_usage_error(
        &out,
        &format!("{extra:?}"),
        expect_in_message,
        &[&case.path("d.npy")],
    );
}

#[test]
fn link_bad_input_is_one_line_exit_two_and_no_output() {
    let case = Case::new();
    write_npy(&case.path("p.npy"), &[4], &[1u8, 2, 3, 4]);
    for (flag, v) in [
        ("--ber", "1"),
        ("--ber", "-0.1"),
        ("--drop-rate", "1.5"),
        ("--dup-rate", "NaN"),
        ("--ber", "inf"),
    ] {
        // `--ber=-0.1`: a separate `-0.1` would read as a flag.
        assert_link_rejected(&case, &[&format!("{flag}={v}")], flag);
    }
    assert_link_rejected(&case, &["--ber", "x"], "--ber");
    assert_link_rejected(&case, &["--seed=-1"], "--seed");
    assert_link_rejected(&case, &["--golden", "--drop-rate", "0.1"], "--golden");
    // Not uint8, empty, not .npy, missing.
    write_npy(&case.path("p.npy"), &[4], &[1i8, 2, 3, 4]);
    assert_link_rejected(&case, &[], "uint8");
    write_npy(&case.path("p.npy"), &[4], &[1u16, 2, 3, 4]);
    assert_link_rejected(&case, &[], "uint8");
    write_npy(&case.path("p.npy"), &[2, 2], &[1f32, 2., 3., 4.]);
    assert_link_rejected(&case, &[], "uint8");
    write_npy(&case.path("p.npy"), &[0], &[0u8; 0]);
    assert_link_rejected(&case, &[], "at least one element");
    write_npy(&case.path("p.npy"), &[3, 0], &[0u8; 0]);
    assert_link_rejected(&case, &[], "at least one element");
    std::fs::write(case.path("p.npy"), b"\x93NUMPY garbage").unwrap();
    assert_link_rejected(&case, &[], "not a .npy file");
    std::fs::write(
        case.path("p.npy"),
        [0x93u8, b'N', b'U', b'M', b'P', b'Y', 1, 0, 200, 0],
    )
    .unwrap();
    assert_link_rejected(&case, &[], "P:");
    std::fs::remove_file(case.path("p.npy")).unwrap();
    assert_link_rejected(&case, &[], "cannot read P");
}

#[test]
fn stderr_that_is_not_a_terminal_gets_no_progress_output() {
    // Long enough (32,768 cycles) for the driver to report progress several
    // times; the CLI draws a bar only on a terminal, and here stderr is a
    // pipe: it may hold the model-build notes (and the waveform's path, with
    // SYSTOLE_TRACE set) and nothing else.
    let case = Case::new();
    operands(&case, 2048, 64, 64);
    let out = run_matmul(&case, &["--rows", "8", "--cols", "8"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        !err.contains('\r') && !err.contains('\u{1b}'),
        "carriage returns or escape sequences on stderr: {err:?}"
    );
    for line in err.lines() {
        assert!(
            line.starts_with("sim: building ")
                || line.starts_with("sim: built ")
                || line.starts_with("sim: compiling the Verilator runtime")
                || line.starts_with("waveform: "),
            "unexpected stderr line {line:?}"
        );
    }
}

fn digits_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tb/data/digits")
}

/// A small model: 5 -> 3 -> 2, plus a file the tool must ignore.
fn small_model(case: &Case) -> PathBuf {
    let dir = case.path("model");
    std::fs::create_dir_all(&dir).unwrap();
    let w1: Vec<i8> = (0..15).map(|i| (i * 37 % 256) as u8 as i8).collect();
    write_npy(&dir.join("w1.npy"), &[5, 3], &w1);
    write_npy(&dir.join("b1.npy"), &[3], &[100i32, -7, 1 << 20]);
    write_npy(&dir.join("rq1.npy"), &[3], &[1 << 30, 4, -3]);
    write_npy(&dir.join("w2.npy"), &[3, 2], &[1i8, -128, 127, 3, -1, 0]);
    write_npy(&dir.join("b2.npy"), &[2], &[0i32, i32::MIN]);
    std::fs::write(dir.join("notes.txt"), "not a layer").unwrap();
    let x: Vec<i8> = (0..4 * 5).map(|i| (i * 71 % 256) as u8 as i8).collect();
    write_npy(&case.path("x.npy"), &[4, 5], &x);
    dir
}

fn run_mlp(case: &Case, model: &Path, x: &Path, extra: &[&str]) -> std::process::Output {
    sim()
        .args(["mlp", "--model"])
        .arg(model)
        .arg("--x")
        .arg(x)
        .arg("--out")
        .arg(case.path("logits.npy"))
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn mlp_golden_gives_the_digits_logits_with_stats() {
    let case = Case::new();
    let d = digits_dir();
    for size in ["4", "16"] {
        let out = run_mlp(
            &case,
            &d,
            &d.join("x_test.npy"),
            &["--golden", "--stats", "--rows", size, "--cols", size],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (shape, logits) = read_i32(&case.path("logits.npy"));
        let (eshape, expect) = read_i32(&d.join("logits_numpy.npy"));
        assert_eq!((shape, logits), (eshape, expect));
        let s = stats_of(&out);
        assert_eq!(s["backend"], "golden");
        assert_eq!(s["op"], "mlp");
        assert_eq!(s["batch"], 450);
        let parts = [
            "mxu_busy_cycles",
            "stall_weights",
            "stall_ub",
            "stall_vpu",
            "host",
            "issue",
            "sync",
        ];
        let sum: u64 = parts.iter().map(|p| s[*p].as_u64().unwrap()).sum();
        assert_eq!(sum, s["cycles"].as_u64().unwrap(), "{s}");
        assert!(s["instructions"].as_u64().unwrap() > 0);
        let busy = s["mxu_busy"].as_f64().unwrap();
        assert!(busy > 0.0 && busy < 1.0, "{s}");
    }
}

#[test]
fn mlp_rtl_and_golden_agree_bit_for_bit_and_cycle_for_cycle() {
    let case = Case::new();
    let model = small_model(&case);
    let small = [
        "--rows",
        "2",
        "--cols",
        "2",
        "--acc-rows",
        "4",
        "--ub-rows",
        "16",
        "--weight-rows",
        "64",
        "--stats",
    ];
    let rtl = run_mlp(&case, &model, &case.path("x.npy"), &small);
    assert!(
        rtl.status.success(),
        "{}",
        String::from_utf8_lossy(&rtl.stderr)
    );
    let rtl_logits = read_i32(&case.path("logits.npy"));
    assert_eq!(rtl_logits.0, vec![4, 2]);
    let mut args = small.to_vec();
    args.push("--golden");
    let gold = run_mlp(&case, &model, &case.path("x.npy"), &args);
    assert!(
        gold.status.success(),
        "{}",
        String::from_utf8_lossy(&gold.stderr)
    );
    assert_eq!(read_i32(&case.path("logits.npy")), rtl_logits);
    let (mut r, mut g) = (stats_of(&rtl), stats_of(&gold));
    assert_eq!(r["backend"], "rtl");
    assert_eq!(g["backend"], "golden");
    r.as_object_mut().unwrap().remove("backend");
    g.as_object_mut().unwrap().remove("backend");
    assert_eq!(r, g, "RTL and golden statistics differ");
}

#[test]
fn mlp_bad_input_is_one_line_naming_the_file_exit_two_and_no_output() {
    let check = |setup: &dyn Fn(&Case, &Path), extra: &[&str], expect: &str| {
        let case = Case::new();
        let model = small_model(&case);
        setup(&case, &model);
        let mut args = vec!["--golden"];
        args.extend_from_slice(extra);
        let out = run_mlp(&case, &model, &case.path("x.npy"), &args);
        assert_usage_error(&out, expect, expect, &[&case.path("logits.npy")]);
    };
    let none = |_: &Case, _: &Path| {};
    check(
        &|_, m| std::fs::remove_file(m.join("b2.npy")).unwrap(),
        &[],
        "b2.npy",
    );
    check(
        &|_, m| std::fs::remove_file(m.join("rq1.npy")).unwrap(),
        &[],
        "rq1.npy",
    );
    check(
        &|_, m| std::fs::remove_file(m.join("w1.npy")).unwrap(),
        &[],
        "w1.npy",
    );
    check(
        &|_, m| write_npy(&m.join("w1.npy"), &[5, 3], &[0i32; 15]),
        &[],
        "w1",
    );
    check(
        &|_, m| write_npy(&m.join("w2.npy"), &[4, 2], &[0i8; 8]),
        &[],
        "w2",
    );
    check(
        &|_, m| write_npy(&m.join("b1.npy"), &[4], &[0i32; 4]),
        &[],
        "b1",
    );
    check(
        &|_, m| write_npy(&m.join("b1.npy"), &[3], &[0i8; 3]),
        &[],
        "b1",
    );
    check(
        &|_, m| write_npy(&m.join("rq1.npy"), &[2], &[1i32, 2]),
        &[],
        "rq1",
    );
    check(
        &|_, m| write_npy(&m.join("rq1.npy"), &[3], &[1i32, 40, 0]),
        &[],
        "rq1",
    );
    check(
        &|c, _| write_npy(&c.path("x.npy"), &[4, 6], &[0i8; 24]),
        &[],
        "X",
    );
    check(
        &|c, _| write_npy(&c.path("x.npy"), &[4, 5], &[0i32; 20]),
        &[],
        "X",
    );
    check(&none, &["--rows", "4", "--cols", "8"], "square");
    check(
        &none,
        &["--rows", "4", "--cols", "4", "--ub-rows", "2"],
        "layer 1",
    );
    check(
        &none,
        &["--rows", "1", "--cols", "1", "--weight-rows", "16"],
        "layer 2",
    );
}

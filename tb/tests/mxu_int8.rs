//! The int8 MXU in RTL (Verilator) against the golden model, bit for bit and
//! cycle for cycle, over array shapes 1x1 .. 8x8 and matrices both smaller and
//! larger than the array.

use config::{ElemType, MxuConfig};
use rand::Rng;
use rstest::rstest;
use sim::drivers::mxu::MxuDriver;
use tb::mxu::{check_int8, random_i8};
use tb::seed::rng_for;

/// One driver per array shape per test process (a model build costs seconds).
fn driver(rows: u32, cols: u32) -> MxuDriver {
    let cfg = MxuConfig::new(rows, cols, ElemType::Int8).unwrap();
    MxuDriver::new(&cfg).unwrap_or_else(|e| panic!("cannot build the {cfg} MXU: {e}"))
}

fn filled(len: usize, v: i8) -> Vec<i8> {
    vec![v; len]
}

#[rstest]
#[case(1, 1)]
#[case(2, 3)]
#[case(3, 2)]
#[case(4, 4)]
#[case(8, 8)]
fn directed_cases(#[case] rows: u32, #[case] cols: u32) {
    let mut d = driver(rows, cols);
    let (r, c) = (rows as usize, cols as usize);
    // Shapes at, below and above the array.
    for (m, k, n) in [
        (1, 1, 1),
        (r, r, c),
        (3, r + 1, c + 2),
        (2 * r + 3, 2 * r, 2 * c + 1),
    ] {
        let name = |s: &str| format!("{s} {m}x{k}x{n}");
        check_int8(
            &mut d,
            &filled(m * k, -128),
            &filled(k * n, -128),
            (m, k, n),
            &name("-128 x -128"),
        );
        check_int8(
            &mut d,
            &filled(m * k, -128),
            &filled(k * n, 127),
            (m, k, n),
            &name("-128 x 127"),
        );
        check_int8(
            &mut d,
            &filled(m * k, 127),
            &filled(k * n, -128),
            (m, k, n),
            &name("127 x -128"),
        );
        check_int8(
            &mut d,
            &filled(m * k, 0),
            &filled(k * n, 0),
            (m, k, n),
            &name("zeros"),
        );
        let a: Vec<i8> = (0..m * k).map(|i| (i as i64 * 37 - 100) as i8).collect();
        check_int8(&mut d, &a, &filled(k * n, 0), (m, k, n), &name("A x 0"));
        // Identity: C = A.
        if k == n {
            let ident: Vec<i8> = (0..k * n).map(|i| (i / n == i % n) as i8).collect();
            check_int8(&mut d, &a, &ident, (m, k, n), &name("A x I"));
        }
    }
}

#[rstest]
#[case(1, 1)]
#[case(4, 4)]
fn int32_sums_wrap_around(#[case] rows: u32, #[case] cols: u32) {
    // 2^17 products of (-128)^2 = 2^14 sum to 2^31, one past the largest int32;
    // one more row makes it wrap twice as far.
    let mut d = driver(rows, cols);
    let k = (1 << 17) + 1;
    let (m, n) = (2, 1);
    let a = filled(m * k, -128);
    let b = filled(k * n, -128);
    check_int8(&mut d, &a, &b, (m, k, n), "wraparound");
    let expected = golden::matmul_int8(&a, &b, m, k, n);
    assert_eq!(
        expected[0],
        i32::MIN + (1 << 14),
        "the case must actually wrap"
    );
}

#[rstest]
#[case(1, 1)]
#[case(2, 3)]
#[case(3, 2)]
#[case(4, 4)]
#[case(8, 8)]
fn random_matrices(#[case] rows: u32, #[case] cols: u32) {
    let mut rng = rng_for(&format!("random_matrices_{rows}x{cols}"));
    let mut d = driver(rows, cols);
    let (r, c) = (rows as usize, cols as usize);
    for round in 0..12 {
        // Half the rounds stay within the array, half go beyond it.
        let big = round % 2 == 1;
        let m = rng.gen_range(1..=3 * r + 2);
        let k = if big {
            rng.gen_range(r + 1..=3 * r + 1)
        } else {
            rng.gen_range(1..=r)
        };
        let n = if big {
            rng.gen_range(c + 1..=3 * c + 1)
        } else {
            rng.gen_range(1..=c)
        };
        let a = random_i8(&mut rng, m * k);
        let b = random_i8(&mut rng, k * n);
        check_int8(&mut d, &a, &b, (m, k, n), &format!("random round {round}"));
    }
}

#[test]
fn long_stream_keeps_the_array_busy() {
    // The speed floor, checked here for correctness and cycle count;
    // the utilization figure itself is reported by the benchmark.
    let mut rng = rng_for("long_stream_keeps_the_array_busy");
    let mut d = driver(8, 8);
    let (m, k, n) = (256, 64, 64);
    let a = random_i8(&mut rng, m * k);
    let b = random_i8(&mut rng, k * n);
    check_int8(&mut d, &a, &b, (m, k, n), "8x8 M=256 K=N=64");
    let timing = golden::MxuTiming::new(d.config(), m, k, n);
    assert!(timing.utilization() >= 0.97, "{}", timing.utilization());
}

#[test]
fn a_wrong_expected_value_is_reported_as_a_mismatch() {
    // The checker itself must be able to fail.
    let mut d = driver(2, 2);
    let a = vec![1i8, 2, 3, 4];
    let b = vec![5i8, 6, 7, 8];
    let mut expected = golden::matmul_int8(&a, &b, 2, 2, 2);
    expected[3] += 1;
    let err = d
        .matmul_int8(&a, &b, (2, 2, 2), Some(&expected))
        .unwrap_err();
    assert!(
        matches!(
            &err,
            sim::drivers::DriverError::Mismatch { what, .. } if what == "C[1][1]"
        ),
        "{err}"
    );
}

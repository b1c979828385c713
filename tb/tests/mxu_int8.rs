//! The int8 MXU in RTL (Verilator) against the golden model, bit for bit and
//! cycle for cycle, over array shapes 1x1 .. 8x8 and matrices both smaller and
//! larger than the array, at every pipeline depth and at the `fmax` preset.

use config::{ElemType, MxuConfig};
use rand::Rng;
use rstest::rstest;
use sim::drivers::mxu::MxuDriver;
use tb::mxu::{check_int8, mxu_preset, random_i8, random_traffic};
use tb::seed::rng_for;

/// One driver per array shape per test process (a model build costs seconds).
fn driver(rows: u32, cols: u32) -> MxuDriver {
    driver_at(rows, cols, 0)
}

/// The array of `rows` x `cols` pipelined to `depth`.
fn driver_at(rows: u32, cols: u32, depth: u32) -> MxuDriver {
    let cfg = MxuConfig::new(rows, cols, ElemType::Int8)
        .and_then(|c| c.with_depth(depth))
        .unwrap();
    open(&cfg)
}

fn open(cfg: &MxuConfig) -> MxuDriver {
    MxuDriver::new(cfg).unwrap_or_else(|e| panic!("cannot build the {cfg} MXU: {e}"))
}

/// Edge values, shapes at, below and above the array, and random matrices
/// (seeded as `name`): the checks every depth gets.
fn edges_and_random(d: &mut MxuDriver, name: &str, rounds: usize) {
    let (r, c) = (d.config().rows() as usize, d.config().cols() as usize);
    for (m, k, n) in [(1, 1, 1), (r, r, c), (2 * r + 3, 2 * r, 2 * c + 1)] {
        for (x, y) in [(-128, -128), (-128, 127), (127, -128)] {
            let what = format!("{x} x {y} {m}x{k}x{n}");
            check_int8(d, &filled(m * k, x), &filled(k * n, y), (m, k, n), &what);
        }
    }
    let mut rng = rng_for(name);
    for round in 0..rounds {
        let m = rng.gen_range(1..=3 * r + 2);
        let k = rng.gen_range(1..=3 * r + 1);
        let n = rng.gen_range(1..=3 * c + 1);
        let a = random_i8(&mut rng, m * k);
        let b = random_i8(&mut rng, k * n);
        check_int8(d, &a, &b, (m, k, n), &format!("random round {round}"));
    }
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

#[rstest]
fn pipelined_arrays_keep_bits_and_cycles(
    #[values(1, 2, 3, 4, 5)] depth: u32,
    #[values((1, 1), (3, 2), (4, 4))] shape: (u32, u32),
) {
    // The product and operand registers (depths 1, 2), the accumulator's
    // input register (3), the partial products (4) and the multipliers' own
    // operand registers (5) change the latency only: the model's cycles,
    // the golden results, one row a cycle.
    let (rows, cols) = shape;
    let mut d = driver_at(rows, cols, depth);
    edges_and_random(
        &mut d,
        &format!("pipelined_arrays_{rows}x{cols}_depth{depth}"),
        8,
    );
}

#[rstest]
fn whole_rows_keep_bits_and_cycles(
    #[values(4, 5)] depth: u32,
    #[values((3, 2, 1), (3, 2, 3), (4, 4, 2))] shape: (u32, u32, u32),
) {
    // The first rows' PEs multiply with one multiplier instead of two
    // halves, registered as often: the same bits, the model's cycles.
    let (rows, cols, whole) = shape;
    let cfg = MxuConfig::new(rows, cols, ElemType::Int8)
        .and_then(|c| c.with_depth(depth))
        .and_then(|c| c.with_whole_rows(whole))
        .unwrap();
    assert!(cfg.whole_rows_in_effect());
    let mut d = open(&cfg);
    edges_and_random(
        &mut d,
        &format!("whole_rows_{rows}x{cols}_depth{depth}_whole{whole}"),
        8,
    );
}

#[test]
fn the_fmax_preset_keeps_bits_cycles_and_utilization() {
    let cfg = mxu_preset("fmax");
    assert_eq!(cfg.dtype(), ElemType::Int8);
    assert!(cfg.depth() > 0, "the fmax preset is pipelined");
    let mut d = open(&cfg);
    edges_and_random(&mut d, "the_fmax_preset", 8);
    // A long stream: the pipeline costs a few cycles per pass, not a row.
    let mut rng = rng_for("the_fmax_preset_long_stream");
    let (m, k, n) = (256, 32, 32);
    let a = random_i8(&mut rng, m * k);
    let b = random_i8(&mut rng, k * n);
    check_int8(&mut d, &a, &b, (m, k, n), "M=256 K=N=32");
    let timing = golden::MxuTiming::new(&cfg, m, k, n);
    assert!(timing.utilization() >= 0.97, "{}", timing.utilization());
}

#[rstest]
#[case(0)]
#[case(1)]
#[case(5)]
fn a_reset_in_flight_leaves_no_trace(#[case] depth: u32) {
    // The driver resets (one cycle) before each pass: what was in flight must
    // not change the next product's bits or cycles.
    let mut d = driver_at(4, 4, depth);
    let mut rng = rng_for(&format!("a_reset_in_flight_depth{depth}"));
    for round in 0..12 {
        random_traffic(&mut d, &mut rng);
        let (m, k, n) = (
            rng.gen_range(1..=9),
            rng.gen_range(1..=9),
            rng.gen_range(1..=9),
        );
        let a = random_i8(&mut rng, m * k);
        let b = random_i8(&mut rng, k * n);
        check_int8(
            &mut d,
            &a,
            &b,
            (m, k, n),
            &format!("after reset, round {round}"),
        );
    }
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

#[test]
fn depth_5_passes_lint_icarus_and_yosys() {
    // Only the int8 `fmax` preset is at depth 5, so `rtl_quality` sees no
    // bf16 array there: the same checks here, for both element types.
    // And an int8 array whose first rows keep their products whole.
    let whole = MxuConfig::new(4, 4, ElemType::Int8)
        .and_then(|c| c.with_depth(5))
        .and_then(|c| c.with_whole_rows(2))
        .unwrap();
    for cfg in ElemType::ALL
        .iter()
        .map(|&dtype| {
            MxuConfig::new(4, 4, dtype)
                .and_then(|c| c.with_depth(5))
                .unwrap()
        })
        .chain([whole])
    {
        let g = gen::generate(&cfg).unwrap_or_else(|e| panic!("{cfg}: {e}"));
        tb::tools::verilator_lint(&g.files, &g.top).unwrap_or_else(|e| panic!("{cfg}: {e}"));
        tb::tools::iverilog_compile(&g.files, &g.top).unwrap_or_else(|e| panic!("{cfg}: {e}"));
        tb::tools::yosys_latch_free(&g.files, &g.top).unwrap_or_else(|e| panic!("{cfg}: {e}"));
    }
}

/// R1 around a write: a host read in the cycle its row is written returns
/// the row as it was, one in any later cycle the new row; the answer comes
/// Lr cycles after the read (two at depth 5, whose host copy is written a
/// cycle late and bypassed). A 1x1 array: row 0 holds 3 x 5 = 15 from a
/// matmul, then a tile of weight 7 overwrites it with 2 x 7 = 14 while the
/// host reads row 0 in every cycle.
#[rstest]
#[case(0)]
#[case(3)]
#[case(5)]
fn a_read_beside_a_write_sees_the_old_row_then_the_new(#[case] depth: u32) {
    use sim::drivers::mxu::MxuPorts;
    let mut d = driver_at(1, 1, depth);
    check_int8(&mut d, &[3], &[5], (1, 1, 1), "row 0 = 15");
    // The eager host's one-row pass, as the cycle model schedules it: the
    // weight row in cycle 0, the row's acceptance and its write.
    let timing = golden::mxu::MxuTiming::new(d.config(), 1, 1, 1);
    let read_latency = timing.read_latency();
    let schedule = timing.pass_schedule(1, 1);
    let (accept, written) = (schedule.rows_accepted[0], schedule.acc_writes[0]);
    let model = d.model_mut();
    let p = MxuPorts::of(model).unwrap();
    p.reset_idle(model);
    let mut answers = Vec::new();
    let mut wrote_in = None;
    for y in 0..written + 4 + read_latency {
        model.poke(p.w_valid, u64::from(y == 0));
        model.poke(p.w_row, 7);
        model.poke(p.a_valid, u64::from(y == accept));
        model.poke(p.a_first, u64::from(y == accept));
        model.poke(p.a_row, 2);
        model.poke(p.a_addr, 0);
        model.poke(p.a_add, 0);
        let reading = y < written + 4;
        model.poke(p.rd_en, u64::from(reading));
        model.poke(p.rd_addr, 0);
        model.eval();
        if y == accept {
            assert_eq!(
                model.peek(p.a_ready),
                1,
                "depth {depth}: the first row waits"
            );
        }
        if model.peek(p.acc_wr) == 1 {
            wrote_in = Some(y);
        }
        model.step();
        model.eval();
        // After the edge ending cycle y: the answer to the read of
        // y + 1 - Lr, if any.
        if let Some(read) = (y + 1)
            .checked_sub(read_latency)
            .filter(|&r| r < written + 4)
        {
            assert_eq!(
                model.peek(p.rd_valid),
                1,
                "depth {depth}: read of cycle {read}"
            );
            answers.push((read, model.peek(p.rd_data)));
        }
    }
    assert_eq!(wrote_in, Some(written), "depth {depth}: D1");
    for (read, value) in answers {
        let want = if read <= written { 15 } else { 14 };
        assert_eq!(
            value, want,
            "depth {depth}: the read of cycle {read} (written in {written})"
        );
    }
}

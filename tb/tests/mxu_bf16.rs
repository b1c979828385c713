//! The bf16 MXU in RTL (Verilator) against the golden model, bit for bit and
//! cycle for cycle: shapes 1x1 .. 8x8 and one above 256 PEs (where the PE's
//! Verilator layout changes), K below and above R (several tiles
//! accumulated in fp32 by the accumulator), random and adversarial data, at
//! every pipeline depth and at the `bf16-fmax` preset.

use config::{ElemType, MxuConfig};
use rand::Rng;
use rstest::rstest;
use sim::drivers::mxu::MxuDriver;
use tb::mxu::{check_bf16, mxu_preset, random_bf16, random_traffic, SPECIAL_BF16};
use tb::seed::rng_for;

fn driver(rows: u32, cols: u32) -> MxuDriver {
    driver_at(rows, cols, 0)
}

/// The array of `rows` x `cols` pipelined to `depth`.
fn driver_at(rows: u32, cols: u32, depth: u32) -> MxuDriver {
    let cfg = MxuConfig::new(rows, cols, ElemType::Bf16)
        .and_then(|c| c.with_depth(depth))
        .unwrap();
    open(&cfg)
}

fn open(cfg: &MxuConfig) -> MxuDriver {
    MxuDriver::new(cfg).unwrap_or_else(|e| panic!("cannot build the {cfg} MXU: {e}"))
}

/// Every special value against every other, as single products, and summed
/// in a tile and across tiles.
fn special_products(d: &mut MxuDriver) {
    let r = d.config().rows() as usize;
    for (m, k, n) in [
        (SPECIAL_BF16.len(), 1, SPECIAL_BF16.len()),
        (5, 2 * r + 1, 3),
    ] {
        let a: Vec<u16> = (0..m * k)
            .map(|i| SPECIAL_BF16[i % SPECIAL_BF16.len()])
            .collect();
        let b: Vec<u16> = (0..k * n)
            .map(|i| SPECIAL_BF16[(i * 7 + 3) % SPECIAL_BF16.len()])
            .collect();
        check_bf16(d, &a, &b, (m, k, n), "special values");
    }
}

/// Special values against each other, across tiles, and random matrices
/// (seeded as `name`): the checks every depth gets.
fn specials_and_random(d: &mut MxuDriver, name: &str, rounds: usize) {
    let (r, c) = (d.config().rows() as usize, d.config().cols() as usize);
    special_products(d);
    let mut rng = rng_for(name);
    for round in 0..rounds {
        let m = rng.gen_range(1..=2 * r + 3);
        let k = rng.gen_range(1..=3 * r + 1);
        let n = rng.gen_range(1..=2 * c + 1);
        let a: Vec<u16> = (0..m * k).map(|_| random_bf16(&mut rng)).collect();
        let b: Vec<u16> = (0..k * n).map(|_| random_bf16(&mut rng)).collect();
        check_bf16(d, &a, &b, (m, k, n), &format!("random round {round}"));
    }
}

#[rstest]
#[case(1, 1)]
#[case(2, 3)]
#[case(4, 4)]
#[case(8, 8)]
fn random_matrices(#[case] rows: u32, #[case] cols: u32) {
    let mut rng = rng_for(&format!("bf16_random_matrices_{rows}x{cols}"));
    let mut d = driver(rows, cols);
    let (r, c) = (rows as usize, cols as usize);
    for round in 0..10 {
        // Even rounds: K within one tile; odd rounds: several tiles.
        let m = rng.gen_range(1..=2 * r + 3);
        let k = if round % 2 == 0 {
            rng.gen_range(1..=r)
        } else {
            rng.gen_range(r + 1..=3 * r + 1)
        };
        let n = rng.gen_range(1..=2 * c + 1);
        let a: Vec<u16> = (0..m * k).map(|_| random_bf16(&mut rng)).collect();
        let b: Vec<u16> = (0..k * n).map(|_| random_bf16(&mut rng)).collect();
        check_bf16(&mut d, &a, &b, (m, k, n), &format!("random round {round}"));
    }
}

#[rstest]
#[case(1, 1)]
#[case(2, 3)]
#[case(4, 4)]
fn adversarial_values(#[case] rows: u32, #[case] cols: u32) {
    let mut d = driver(rows, cols);
    let r = rows as usize;
    special_products(&mut d);
    // Exact cancellation: x*1 + (-x)*1 across the K dimension gives +0.
    let k = 2 * r;
    let a: Vec<u16> = (0..k)
        .map(|i| if i % 2 == 0 { 0x4049 } else { 0xC049 })
        .collect();
    let b = vec![0x3F80u16; k];
    check_bf16(&mut d, &a, &b, (1, k, 1), "cancellation");
    // -0 products only: the first add of +0 makes the sum +0.
    check_bf16(&mut d, &[0x8000], &[0x3F80], (1, 1, 1), "minus zero");
    // Overflow to infinity, then inf - inf = NaN across tiles.
    let k = r + 1;
    let a: Vec<u16> = (0..k)
        .map(|i| if i < r { 0x7F00 } else { 0xFF00 })
        .collect();
    let b = vec![0x7F00u16; k];
    check_bf16(&mut d, &a, &b, (1, k, 1), "overflow");
    // Underflow: products below 2^-126 flush to zero with their sign.
    let a = vec![0x0100u16; 2 * r];
    let b = vec![0x8100u16; 2 * r];
    check_bf16(&mut d, &a, &b, (2, r, 2), "underflow");
    // Ties: 1 + 2^-24 rounds to even, 1 + 3*2^-24 up.
    let a = vec![0x3F80u16, 0x3380, 0x3440];
    let b = vec![0x3F80u16, 0x3F80, 0x3F80];
    check_bf16(&mut d, &a, &b, (1, 3, 1), "ties");
}

#[rstest]
#[case(0)]
#[case(4)]
#[case(5)]
fn a_reset_in_flight_leaves_no_trace(#[case] depth: u32) {
    // The driver resets (one cycle) before each pass: what was in flight must
    // not change the next product's bits or cycles.
    let mut d = driver_at(2, 3, depth);
    let mut rng = rng_for(&format!("bf16_a_reset_in_flight_depth{depth}"));
    for round in 0..8 {
        random_traffic(&mut d, &mut rng);
        let (m, k, n) = (
            rng.gen_range(1..=7),
            rng.gen_range(1..=7),
            rng.gen_range(1..=7),
        );
        let a: Vec<u16> = (0..m * k).map(|_| random_bf16(&mut rng)).collect();
        let b: Vec<u16> = (0..k * n).map(|_| random_bf16(&mut rng)).collect();
        check_bf16(
            &mut d,
            &a,
            &b,
            (m, k, n),
            &format!("after reset, round {round}"),
        );
    }
}

#[rstest]
fn pipelined_arrays_keep_bits_and_cycles(
    #[values(1, 2, 3, 4, 5)] depth: u32,
    #[values((1, 1), (2, 3))] shape: (u32, u32),
) {
    // The product and operand registers (depths 1, 2), the accumulator's
    // input register (3), the staged multiplier and adders (4, six cycles
    // per PE) and the multiplier's own operand registers (5) change the
    // latency only.
    let (rows, cols) = shape;
    let mut d = driver_at(rows, cols, depth);
    specials_and_random(
        &mut d,
        &format!("bf16_pipelined_arrays_{rows}x{cols}_depth{depth}"),
        6,
    );
}

#[test]
fn the_fmax_preset_keeps_bits_cycles_and_utilization() {
    let cfg = mxu_preset("bf16-fmax");
    assert_eq!(cfg.dtype(), ElemType::Bf16);
    assert!(cfg.depth() > 0, "the fmax preset is pipelined");
    let mut d = open(&cfg);
    specials_and_random(&mut d, "bf16_the_fmax_preset", 6);
    let mut rng = rng_for("bf16_the_fmax_preset_long_stream");
    let (m, k, n) = (256, 32, 32);
    let a: Vec<u16> = (0..m * k).map(|_| random_bf16(&mut rng)).collect();
    let b: Vec<u16> = (0..k * n).map(|_| random_bf16(&mut rng)).collect();
    check_bf16(&mut d, &a, &b, (m, k, n), "M=256 K=N=32");
    let timing = golden::MxuTiming::new(&cfg, m, k, n);
    assert!(timing.utilization() >= 0.97, "{}", timing.utilization());
}

#[test]
fn mac_chains_from_the_reference_vectors() {
    // Chains of up to 256 products through a 4x4 array: K up to 64 tiles,
    // accumulated across tiles as the contract says for R = 4.
    let mut d = driver(4, 4);
    for row in golden::vectors::read_vectors("bf16_mac_chain.tsv", 3)
        .iter()
        .step_by(25)
    {
        let a: Vec<u16> = row.fields[0]
            .split(',')
            .map(golden::vectors::hex16)
            .collect();
        let b: Vec<u16> = row.fields[1]
            .split(',')
            .map(golden::vectors::hex16)
            .collect();
        check_bf16(
            &mut d,
            &a,
            &b,
            (1, a.len(), 1),
            &format!("mac chain line {}", row.line),
        );
    }
}

#[test]
fn long_stream_keeps_the_array_busy() {
    let mut rng = rng_for("bf16_long_stream_keeps_the_array_busy");
    let mut d = driver(8, 8);
    let (m, k, n) = (256, 64, 64);
    let a: Vec<u16> = (0..m * k).map(|_| random_bf16(&mut rng)).collect();
    let b: Vec<u16> = (0..k * n).map(|_| random_bf16(&mut rng)).collect();
    check_bf16(&mut d, &a, &b, (m, k, n), "8x8 M=256 K=N=64");
    let timing = golden::MxuTiming::new(d.config(), m, k, n);
    assert!(timing.utilization() >= 0.97, "{}", timing.utilization());
}

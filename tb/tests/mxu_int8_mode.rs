//! The bf16 MXU in int8 mode in RTL (Verilator) against the golden model,
//! bit for bit and cycle for cycle: whole int8 matmuls (operands in the low
//! bytes, the high bytes anything) and bf16 matmuls on the same arrays,
//! shapes 1x1 .. 8x8 at depths 0 and 5, with K above R so the accumulator
//! adds across k-tiles; int8 and bf16 rows interleaved within tiles; int8
//! sums that wrap int32 and bf16 special values; a reset in flight.

use config::{ElemType, MxuConfig, MXU_DEPTH_RANGE};
use golden::mxu::{accumulate, matmul_int8_low_bytes, tile_row, MxuTiming};
use rand::Rng;
use rstest::rstest;
use sim::drivers::mxu::{MxuDriver, Tile, TileRow};
use tb::mxu::{check_bf16, check_int8, random_bf16, random_i8, random_traffic, SPECIAL_BF16};
use tb::seed::rng_for;

/// The bf16 array of `rows` x `cols` at `depth`, in int8 mode.
fn driver(rows: u32, cols: u32, depth: u32) -> MxuDriver {
    let cfg = MxuConfig::new(rows, cols, ElemType::Bf16)
        .and_then(|c| c.with_depth(depth))
        .and_then(|c| c.with_int8_mode(true))
        .unwrap();
    MxuDriver::new(&cfg).unwrap_or_else(|e| panic!("cannot build the {cfg} MXU: {e}"))
}

/// The deepest pipeline the bf16 array has.
const MAX_DEPTH: u32 = *MXU_DEPTH_RANGE.end();

/// An int8 matmul on 16-bit lanes (the low bytes are the int8 operands, the
/// high bytes anything), checked bit for bit and cycle for cycle.
fn check_int8_lanes(
    d: &mut MxuDriver,
    a: &[u16],
    b: &[u16],
    dims: (usize, usize, usize),
    what: &str,
) {
    let (m, k, n) = dims;
    let expected = matmul_int8_low_bytes(a, b, m, k, n);
    let (c, stats) = d
        .matmul_int8_lanes(a, b, dims, Some(&expected))
        .unwrap_or_else(|e| panic!("{what} (M={m} K={k} N={n}) on {}: {e}", d.config()));
    assert_eq!(c, expected, "{what}: C differs (M={m} K={k} N={n})");
    let cycles = MxuTiming::new(d.config(), m, k, n).total_cycles();
    assert_eq!(
        stats.cycles, cycles,
        "{what}: RTL cycles against the cycle model"
    );
}

/// Random 16-bit lanes holding int8 operands weighted to the edges, the high
/// byte random (bf16 NaNs and infinities among them).
fn random_lanes(rng: &mut impl Rng, len: usize) -> Vec<u16> {
    random_i8(rng, len)
        .into_iter()
        .map(|x| (rng.gen::<u16>() & 0xFF00) | u16::from(x as u8))
        .collect()
}

/// A dimension above `unit` (several tiles) that is not a multiple of it
/// (a padded tile at the edge), where `unit` allows one.
fn ragged(rng: &mut impl Rng, unit: usize) -> usize {
    if unit == 1 {
        return rng.gen_range(2..=5);
    }
    unit * rng.gen_range(1..=2) + rng.gen_range(1..unit)
}

#[rstest]
fn random_matmuls_of_both_kinds(
    #[values((1, 1), (3, 3), (4, 4), (8, 8))] shape: (u32, u32),
    #[values(0, MAX_DEPTH)] depth: u32,
) {
    let (rows, cols) = shape;
    let mut d = driver(rows, cols, depth);
    let (r, c) = (rows as usize, cols as usize);
    let mut rng = rng_for(&format!("int8_mode_random_{rows}x{cols}_depth{depth}"));
    for round in 0..6 {
        let m = rng.gen_range(1..=2 * r + 3);
        let (k, n) = (ragged(&mut rng, r), ragged(&mut rng, c));
        let what = format!("round {round}");
        match round % 3 {
            0 => {
                let a = random_i8(&mut rng, m * k);
                let b = random_i8(&mut rng, k * n);
                check_int8(&mut d, &a, &b, (m, k, n), &format!("int8 {what}"));
            }
            1 => {
                let a = random_lanes(&mut rng, m * k);
                let b = random_lanes(&mut rng, k * n);
                check_int8_lanes(&mut d, &a, &b, (m, k, n), &format!("int8 lanes {what}"));
            }
            _ => {
                let a: Vec<u16> = (0..m * k).map(|_| random_bf16(&mut rng)).collect();
                let b: Vec<u16> = (0..k * n).map(|_| random_bf16(&mut rng)).collect();
                check_bf16(&mut d, &a, &b, (m, k, n), &format!("bf16 {what}"));
            }
        }
    }
}

#[rstest]
#[case(3, 2, 0)]
#[case(3, 2, 1)]
#[case(3, 2, 2)]
#[case(3, 2, 3)]
#[case(3, 2, 4)]
#[case(3, 2, 5)]
#[case(3, 3, 0)]
#[case(3, 3, MAX_DEPTH)]
fn int8_and_bf16_rows_interleaved_within_tiles(
    #[case] rows: u32,
    #[case] cols: u32,
    #[case] depth: u32,
) {
    // Three tiles of ten rows each, every row's kind drawn at random: tile 0
    // overwrites accumulator rows 0..10, the others add into them, each row
    // in its own kind (int32 or fp32), whatever the kind that wrote the row
    // before. Ten rows keep two rows aimed at one accumulator row further
    // apart than any depth's first-row gap (TIMING.md A3).
    let mut d = driver(rows, cols, depth);
    let (r, c) = (rows as usize, cols as usize);
    let mut rng = rng_for(&format!("int8_mode_interleaved_{rows}x{cols}_depth{depth}"));
    let (tiles_n, m) = (3, 10);
    let tiles: Vec<Tile> = (0..tiles_n)
        .map(|t| Tile {
            weights: (0..r * c).map(|_| random_operand(&mut rng)).collect(),
            rows: (0..m)
                .map(|i| TileRow {
                    a: (0..r).map(|_| random_operand(&mut rng)).collect(),
                    // Both kinds in every tile, the rest at random.
                    int8: match i {
                        0 => t % 2 == 0,
                        1 => t % 2 == 1,
                        _ => rng.gen(),
                    },
                    acc_row: i,
                    add: t > 0,
                })
                .collect(),
        })
        .collect();
    let mut expected = vec![vec![0u32; c]; m];
    for tile in &tiles {
        let weights: Vec<u16> = tile.weights.iter().map(|&w| w as u16).collect();
        for row in &tile.rows {
            let a: Vec<u16> = row.a.iter().map(|&x| x as u16).collect();
            let result = tile_row(&a, &weights, c, row.int8);
            for (old, new) in expected[row.acc_row].iter_mut().zip(result) {
                *old = accumulate(*old, new, row.add, row.int8);
            }
        }
    }
    let kinds: Vec<Vec<bool>> = tiles
        .iter()
        .map(|t| t.rows.iter().map(|row| row.int8).collect())
        .collect();
    let what = format!("{} with row kinds (int8: true) {kinds:?}", d.config());
    let cycles = d
        .run_tiles(&tiles)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let got = d
        .read_acc_rows(&(0..m).collect::<Vec<_>>())
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    for (i, (got, expected)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(got, expected, "{what}: accumulator row {i}");
    }
    // The pass is the bf16 array's: three k-tiles of M rows over one n-tile.
    let timing = MxuTiming::new(d.config(), m, tiles_n * r, c);
    assert_eq!(cycles, timing.pass_cycles(m as u64, 1), "{what}: cycles");
}

/// One operand lane: a random bf16 value or random bits (whose low byte an
/// int8 row reads).
fn random_operand(rng: &mut impl Rng) -> u32 {
    if rng.gen() {
        u32::from(random_bf16(rng))
    } else {
        u32::from(rng.gen::<u16>())
    }
}

#[rstest]
fn int8_edges_and_bf16_specials_on_one_array(#[values(0, MAX_DEPTH)] depth: u32) {
    let mut d = driver(4, 4, depth);
    let r = 4;
    // -128 x -128 is 2^14: 2^17 + 5 of them wrap int32 in the accumulator's
    // adds across k-tiles, beside sums of -128 x 127 and 127 x 127.
    let k = (1 << 17) + 5;
    let a: Vec<i8> = (0..2 * k).map(|i| if i < k { -128 } else { 127 }).collect();
    let b: Vec<i8> = (0..k * 3).map(|i| [-128i8, 127, -128][i % 3]).collect();
    check_int8(&mut d, &a, &b, (2, k, 3), "-128 x -128 wrapping int32");
    // The same extremes in lanes whose high bytes are bf16 NaNs, infinities
    // and subnormals: an int8 row ignores them.
    let high = [0x7F00u16, 0xFF00, 0x7F80, 0x0000, 0x8000];
    let lanes = |v: &[i8]| -> Vec<u16> {
        v.iter()
            .enumerate()
            .map(|(i, &x)| high[i % high.len()] | u16::from(x as u8))
            .collect()
    };
    let (a8, b8) = (&a[..3 * r], &b[..3 * r * 3]);
    check_int8_lanes(&mut d, &lanes(a8), &lanes(b8), (1, 3 * r, 3), "lanes");
    // bf16 special values against each other, as single products and
    // across tiles: NaNs, infinities, signed zeros, subnormals flushed.
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
        check_bf16(&mut d, &a, &b, (m, k, n), "special values");
    }
    // Underflow to signed zeros, overflow to infinity and inf - inf = NaN.
    check_bf16(
        &mut d,
        &[0x0100; 2 * 4],
        &[0x8100; 4 * 2],
        (2, r, 2),
        "underflow",
    );
    let a: Vec<u16> = (0..=r)
        .map(|i| if i < r { 0x7F00 } else { 0xFF00 })
        .collect();
    check_bf16(&mut d, &a, &vec![0x7F00; r + 1], (1, r + 1, 1), "overflow");
}

#[rstest]
fn a_reset_in_flight_leaves_no_trace(#[values(0, MAX_DEPTH)] depth: u32) {
    // Random traffic on every input (the mode bit too), then a reset: the
    // next matmul of either kind keeps its bits and cycles.
    let mut d = driver(2, 3, depth);
    let mut rng = rng_for(&format!("int8_mode_reset_in_flight_depth{depth}"));
    for round in 0..8 {
        random_traffic(&mut d, &mut rng);
        let (m, k, n) = (
            rng.gen_range(1..=7),
            rng.gen_range(1..=7),
            rng.gen_range(1..=7),
        );
        let what = format!("after reset, round {round}");
        if round % 2 == 0 {
            let a = random_lanes(&mut rng, m * k);
            let b = random_lanes(&mut rng, k * n);
            check_int8_lanes(&mut d, &a, &b, (m, k, n), &what);
        } else {
            let a: Vec<u16> = (0..m * k).map(|_| random_bf16(&mut rng)).collect();
            let b: Vec<u16> = (0..k * n).map(|_| random_bf16(&mut rng)).collect();
            check_bf16(&mut d, &a, &b, (m, k, n), &what);
        }
    }
}

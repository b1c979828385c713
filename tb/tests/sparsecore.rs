//! The SparseCore RTL against the golden model: activations bit for bit and,
//! with a fixed HBM latency, cycles exactly; under random HBM latency and
//! backpressure, bit for bit. Directed cases (the reference vectors, rows
//! straddling words for D = 1, 5, 8, 21, fp32 specials, invalid ids, empty
//! tiles) sit beside random batches with Zipf-distributed ids.

use config::SparseCoreConfig;
use golden::sparsecore::{forward, forward_cycles, update, update_cycles, Table, Timing};
use golden::sparsecore_host::{prepare, Prepared};
use golden::vectors::read_embed_forward;
use rand::{Rng, SeedableRng};
use sim::drivers::sparsecore::{HbmBehaviour, SparseCoreDriver};

/// Small configurations (Verilator builds stay quick on two cores).
fn cfg(tiles: u32, max_dim: u32, max_batch: u32) -> SparseCoreConfig {
    SparseCoreConfig::with(tiles, max_dim, max_batch, 4, 4, 6).expect("valid")
}

/// Runs one forward pass on the RTL and checks it against the golden model;
/// with a fixed latency also the cycle count. Returns the RTL's activations.
#[allow(clippy::too_many_arguments)]
fn check(
    d: &mut SparseCoreDriver,
    what: &str,
    table: &[u32],
    rows: u32,
    dim: u32,
    batch: u32,
    p: &Prepared,
    hbm: HbmBehaviour,
) -> Vec<u32> {
    let want = forward(Table::new(table, rows, dim), p, batch);
    let got = d
        .forward(table, rows, dim, batch, p, hbm)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    for (i, (&g, &w)) in got.activations.iter().zip(&want.activations).enumerate() {
        assert_eq!(
            g,
            w,
            "{what}: A[{}][{}] = {g:08x}, want {w:08x}",
            i as u32 / dim,
            i as u32 % dim
        );
    }
    assert_eq!(got.activations.len(), want.activations.len(), "{what}");
    assert_eq!(got.invalid, want.invalid, "{what}: invalid count");
    if let HbmBehaviour::Fixed(latency) = hbm {
        let timing = Timing::of(d.config(), latency);
        let model = forward_cycles(p, rows, dim, batch, timing);
        assert_eq!(got.cycles, model.cycles, "{what}: cycles");
        assert_eq!(got.words_read, model.words_read, "{what}: HBM words");
    }
    got.activations
}

/// The models these tests use: rows up to 24 elements, batches up to 8.
fn small(tiles: u32) -> SparseCoreConfig {
    cfg(tiles, 24, 8)
}

/// Runs one update pass on the RTL and checks the whole table against the
/// golden model; with a fixed latency also the cycle count.
#[allow(clippy::too_many_arguments)]
fn check_update(
    d: &mut SparseCoreDriver,
    what: &str,
    table: &[u32],
    rows: u32,
    dim: u32,
    batch: u32,
    p: &Prepared,
    grad: &[u32],
    lr: u32,
    hbm: HbmBehaviour,
) {
    let want = update(Table::new(table, rows, dim), p, grad, batch, lr);
    let got = d
        .update(table, rows, dim, batch, p, grad, lr, hbm)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(got.table.len(), want.table.len(), "{what}");
    for (i, (&g, &w)) in got.table.iter().zip(&want.table).enumerate() {
        assert_eq!(
            g,
            w,
            "{what}: E[{}][{}] = {g:08x}, want {w:08x}",
            i as u32 / dim,
            i as u32 % dim
        );
    }
    assert_eq!(got.invalid, want.invalid, "{what}: invalid count");
    // Each updated row written once, whatever the HBM does.
    assert_eq!(got.rows_written, want.rows_written, "{what}: rows written");
    if let HbmBehaviour::Fixed(latency) = hbm {
        let timing = Timing::of(d.config(), latency);
        let model = update_cycles(p, rows, dim, batch, timing);
        assert_eq!(got.words_read, model.words_read, "{what}: HBM words read");
        assert_eq!(
            got.words_written, model.words_written,
            "{what}: HBM words written"
        );
        assert_eq!(got.cycles, model.cycles, "{what}: cycles");
    }
}

#[test]
fn one_entry_one_tile() {
    let c = cfg(1, 8, 4);
    let mut d = SparseCoreDriver::new(&c).unwrap();
    let table: Vec<u32> = (0..3 * 5).map(|i| 0x3F80_0000 + (i << 16)).collect();
    let p = prepare(&[1], &[2], &[0x4000_0000], 3, 4, 1).unwrap();
    check(
        &mut d,
        "one entry",
        &table,
        3,
        5,
        4,
        &p,
        HbmBehaviour::Fixed(2),
    );
}

#[test]
fn every_reference_vector_on_the_rtl() {
    let cases = read_embed_forward();
    let mut tiles: Vec<u32> = cases.iter().map(|c| c.tiles).collect();
    tiles.sort_unstable();
    tiles.dedup();
    for t in tiles {
        let mut d = SparseCoreDriver::new(&small(t)).unwrap();
        for c in cases.iter().filter(|c| c.tiles == t) {
            let p = prepare(&c.ids, &c.samples, &c.gains, c.rows, c.batch, c.tiles).unwrap();
            let what = format!("embed_forward.tsv line {}", c.line);
            // The RTL against the golden model, then the same run's
            // activations against the file's independent oracle.
            let got = check(
                &mut d,
                &what,
                &c.table,
                c.rows,
                c.dim,
                c.batch,
                &p,
                HbmBehaviour::Fixed(3),
            );
            assert_eq!(got, c.activations, "{what}: against the file");
        }
    }
}

/// fp32 values worth meeting in tables and gains.
const SPECIALS: [u32; 10] = [
    0x0000_0000, // +0
    0x8000_0000, // -0
    0x7F80_0000, // +inf
    0xFF80_0000, // -inf
    0x7FC0_0000, // canonical NaN
    0x7F80_0001, // signalling NaN
    0xFFC1_2345, // NaN with a payload
    0x0000_0001, // subnormal (read as +0)
    0x7F7F_FFFF, // largest finite
    0x0080_0000, // smallest normal
];

/// A random fp32 value: mostly moderate magnitudes (so sums round and
/// cancel), sometimes a special one.
fn value(rng: &mut impl Rng, specials: f64) -> u32 {
    if rng.gen_bool(specials) {
        SPECIALS[rng.gen_range(0..SPECIALS.len())]
    } else {
        let sign = rng.gen::<u32>() & 0x8000_0000;
        let exp = rng.gen_range(110u32..=140) << 23;
        sign | exp | (rng.gen::<u32>() & 0x7F_FFFF)
    }
}

/// Ids drawn from a Zipf distribution (exponent 1.1) over 0..rows: a few
/// ids take most entries, so merging and repeated rows are the rule.
fn zipf(rng: &mut impl Rng, rows: u32) -> i32 {
    let weights: Vec<f64> = (0..rows)
        .map(|k| 1.0 / f64::from(k + 1).powf(1.1))
        .collect();
    let total: f64 = weights.iter().sum();
    let mut x = rng.gen::<f64>() * total;
    for (k, w) in weights.iter().enumerate() {
        if x < *w {
            return k as i32;
        }
        x -= w;
    }
    rows as i32 - 1
}

struct Batch {
    rows: u32,
    dim: u32,
    batch: u32,
    table: Vec<u32>,
    ids: Vec<i32>,
    samples: Vec<i32>,
    gains: Vec<u32>,
}

fn random_batch(rng: &mut impl Rng, max_dim: u32, max_batch: u32) -> Batch {
    let rows = rng.gen_range(1..=40);
    let dim = rng.gen_range(1..=max_dim);
    let batch = rng.gen_range(1..=max_batch);
    let specials = [0.0, 0.02, 0.2][rng.gen_range(0..3)];
    let table = (0..rows * dim).map(|_| value(rng, specials)).collect();
    let n = rng.gen_range(0..=60);
    let mut ids = Vec::new();
    let mut samples = Vec::new();
    let mut gains = Vec::new();
    for _ in 0..n {
        let r = rng.gen::<f64>();
        ids.push(if r < 0.1 {
            i32::MAX // padding
        } else if r < 0.15 {
            // invalid: past the table or negative
            [rows as i32, rows as i32 + 7, -1, i32::MIN][rng.gen_range(0..4)]
        } else {
            zipf(rng, rows)
        });
        samples.push(rng.gen_range(0..batch) as i32);
        gains.push(if rng.gen_bool(0.5) {
            0x3F80_0000
        } else {
            value(rng, specials)
        });
    }
    Batch {
        rows,
        dim,
        batch,
        table,
        ids,
        samples,
        gains,
    }
}

#[test]
fn random_zipf_batches_match_golden_bit_for_bit_and_cycle_for_cycle() {
    let mut rng = tb::seed::rng_for("random_zipf_batches");
    for tiles in [1, 3, 4] {
        let c = small(tiles);
        let mut d = SparseCoreDriver::new(&c).unwrap();
        for round in 0..tb::seed::soak_rounds(12) {
            let b = random_batch(&mut rng, 24, 8);
            let p = prepare(&b.ids, &b.samples, &b.gains, b.rows, b.batch, tiles).unwrap();
            let latency = rng.gen_range(2..=12);
            let what = format!(
                "T={tiles} round {round}: V={} D={} B={} n={} latency {latency}",
                b.rows,
                b.dim,
                b.batch,
                b.ids.len()
            );
            check(
                &mut d,
                &what,
                &b.table,
                b.rows,
                b.dim,
                b.batch,
                &p,
                HbmBehaviour::Fixed(latency),
            );
        }
    }
}

#[test]
fn random_hbm_latency_and_backpressure_change_no_bit() {
    let mut rng = tb::seed::rng_for("random_hbm");
    for tiles in [2, 4] {
        let c = small(tiles);
        let mut d = SparseCoreDriver::new(&c).unwrap();
        for round in 0..tb::seed::soak_rounds(10) {
            let b = random_batch(&mut rng, 24, 8);
            let p = prepare(&b.ids, &b.samples, &b.gains, b.rows, b.batch, tiles).unwrap();
            let min = rng.gen_range(2..=6);
            let hbm = HbmBehaviour::Random {
                min,
                max: min + rng.gen_range(0..=30),
                ready: [1.0, 0.7, 0.3][rng.gen_range(0..3)],
                seed: rng.gen(),
            };
            let what = format!("T={tiles} round {round}: D={} {hbm:?}", b.dim);
            check(&mut d, &what, &b.table, b.rows, b.dim, b.batch, &p, hbm);
        }
    }
}

#[test]
fn rows_of_1_5_8_21_and_128_elements_straddle_words() {
    let mut rng = tb::seed::rng_for("rows_straddle_words");
    let mut d = SparseCoreDriver::new(&small(2)).unwrap();
    let mut wide = SparseCoreDriver::new(&cfg(3, 128, 2)).unwrap();
    for dim in [1, 5, 8, 21, 128] {
        let rows = 17;
        let table: Vec<u32> = (0..rows * dim).map(|_| value(&mut rng, 0.0)).collect();
        // Every id once, in one sample, then every id again in the other
        // sample with a gain of 2: each row's words, whatever its offset.
        let ids: Vec<i32> = (0..rows as i32).chain(0..rows as i32).collect();
        let samples: Vec<i32> = (0..2 * rows as i32).map(|i| i / rows as i32).collect();
        let gains: Vec<u32> = (0..2 * rows)
            .map(|i| if i < rows { 0x3F80_0000 } else { 0x4000_0000 })
            .collect();
        let (driver, tiles) = if dim <= 24 {
            (&mut d, 2)
        } else {
            (&mut wide, 3)
        };
        let p = prepare(&ids, &samples, &gains, rows, 2, tiles).unwrap();
        for hbm in [
            HbmBehaviour::Fixed(2),
            HbmBehaviour::Fixed(20),
            HbmBehaviour::Random {
                min: 2,
                max: 9,
                ready: 0.5,
                seed: rng.gen(),
            },
        ] {
            check(
                driver,
                &format!("D={dim} {hbm:?}"),
                &table,
                rows,
                dim,
                2,
                &p,
                hbm,
            );
        }
    }
}

#[test]
fn empty_tiles_only_invalid_ids_and_no_entries() {
    let mut d = SparseCoreDriver::new(&small(3)).unwrap();
    let table: Vec<u32> = (0..6 * 3).map(|i| 0x3F80_0000 + i).collect();
    // Only tile 1 has entries (ids 1 and 4).
    let p = prepare(&[1, 4, 4], &[0, 1, 0], &[0x3F80_0000; 3], 6, 2, 3).unwrap();
    check(
        &mut d,
        "one busy tile",
        &table,
        6,
        3,
        2,
        &p,
        HbmBehaviour::Fixed(4),
    );
    // Only invalid ids: nothing read, all counted, A all +0.
    let p = prepare(
        &[6, -2, 100, i32::MAX],
        &[0, 1, 0, 1],
        &[0x3F80_0000; 4],
        6,
        2,
        3,
    )
    .unwrap();
    check(
        &mut d,
        "only invalid",
        &table,
        6,
        3,
        2,
        &p,
        HbmBehaviour::Fixed(4),
    );
    // No entries at all.
    let p = prepare(&[], &[], &[], 6, 2, 3).unwrap();
    check(
        &mut d,
        "no entries",
        &table,
        6,
        3,
        2,
        &p,
        HbmBehaviour::Fixed(4),
    );
}

#[test]
fn many_entries_stall_on_the_queue_and_keep_every_one() {
    // 200 entries through a 4-entry queue, HBM refusing half the requests.
    let mut rng = tb::seed::rng_for("queue_stalls");
    let mut d = SparseCoreDriver::new(&small(2)).unwrap();
    let rows = 30;
    let dim = 9;
    let table: Vec<u32> = (0..rows * dim).map(|_| value(&mut rng, 0.01)).collect();
    let ids: Vec<i32> = (0..200).map(|_| zipf(&mut rng, rows)).collect();
    let samples: Vec<i32> = (0..200).map(|_| rng.gen_range(0..8)).collect();
    let gains: Vec<u32> = (0..200).map(|_| value(&mut rng, 0.0)).collect();
    let p = prepare(&ids, &samples, &gains, rows, 8, 2).unwrap();
    check(
        &mut d,
        "fixed",
        &table,
        rows,
        dim,
        8,
        &p,
        HbmBehaviour::Fixed(7),
    );
    let hbm = HbmBehaviour::Random {
        min: 2,
        max: 40,
        ready: 0.5,
        seed: rng.gen(),
    };
    check(&mut d, "random", &table, rows, dim, 8, &p, hbm);
}

#[test]
fn update_one_id_then_random_zipf_updates() {
    let mut rng = tb::seed::rng_for("random_updates");
    let mut d = SparseCoreDriver::new(&small(1)).unwrap();
    let table: Vec<u32> = (0..4 * 5).map(|i| 0x3F80_0000 + (i << 18)).collect();
    let grad: Vec<u32> = (0..2 * 5).map(|i| 0x3E00_0000 + (i << 18)).collect();
    let p = prepare(&[2, 2], &[0, 1], &[0x3F80_0000, 0x4000_0000], 4, 2, 1).unwrap();
    check_update(
        &mut d,
        "one id",
        &table,
        4,
        5,
        2,
        &p,
        &grad,
        0x3DCC_CCCD,
        HbmBehaviour::Fixed(3),
    );
    for tiles in [1, 3] {
        let mut d = SparseCoreDriver::new(&small(tiles)).unwrap();
        for round in 0..tb::seed::soak_rounds(10) {
            let b = random_batch(&mut rng, 24, 8);
            let p = prepare(&b.ids, &b.samples, &b.gains, b.rows, b.batch, tiles).unwrap();
            let specials = [0.0, 0.05][rng.gen_range(0..2)];
            let grad: Vec<u32> = (0..b.batch * b.dim)
                .map(|_| value(&mut rng, specials))
                .collect();
            let lr = value(&mut rng, specials);
            let latency = rng.gen_range(2..=12);
            let what = format!(
                "update T={tiles} round {round}: V={} D={} B={} n={} latency {latency}",
                b.rows,
                b.dim,
                b.batch,
                b.ids.len()
            );
            check_update(
                &mut d,
                &what,
                &b.table,
                b.rows,
                b.dim,
                b.batch,
                &p,
                &grad,
                lr,
                HbmBehaviour::Fixed(latency),
            );
            let hbm = HbmBehaviour::Random {
                min: 2,
                max: 25,
                ready: 0.6,
                seed: rng.gen(),
            };
            check_update(
                &mut d,
                &format!("{what} {hbm:?}"),
                &b.table,
                b.rows,
                b.dim,
                b.batch,
                &p,
                &grad,
                lr,
                hbm,
            );
        }
    }
}

#[test]
fn update_rows_of_1_5_8_21_and_128_elements() {
    let mut rng = tb::seed::rng_for("update_rows_straddle_words");
    let mut d = SparseCoreDriver::new(&small(2)).unwrap();
    let mut wide = SparseCoreDriver::new(&cfg(1, 128, 2)).unwrap();
    for dim in [1, 5, 8, 21, 128] {
        let rows = 13;
        let table: Vec<u32> = (0..rows * dim).map(|_| value(&mut rng, 0.02)).collect();
        let grad: Vec<u32> = (0..2 * dim).map(|_| value(&mut rng, 0.02)).collect();
        // Neighbouring ids share HBM words when D is not a multiple of 8.
        let ids: Vec<i32> = (0..rows as i32).chain([3, 4, 5, 12]).collect();
        let samples: Vec<i32> = (0..ids.len() as i32).map(|i| i % 2).collect();
        let gains: Vec<u32> = (0..ids.len()).map(|_| value(&mut rng, 0.0)).collect();
        let (driver, tiles) = if dim <= 24 {
            (&mut d, 2)
        } else {
            (&mut wide, 1)
        };
        let p = prepare(&ids, &samples, &gains, rows, 2, tiles).unwrap();
        for hbm in [
            HbmBehaviour::Fixed(2),
            HbmBehaviour::Fixed(17),
            HbmBehaviour::Random {
                min: 2,
                max: 9,
                ready: 0.5,
                seed: rng.gen(),
            },
        ] {
            check_update(
                driver,
                &format!("update D={dim} {hbm:?}"),
                &table,
                rows,
                dim,
                2,
                &p,
                &grad,
                0x3F00_0000,
                hbm,
            );
        }
    }
}

#[test]
fn forward_and_update_passes_alternate_on_one_block() {
    // Nothing of one pass (partial sums, U, gradients in the activation
    // buffer, counters) leaks into the next.
    let mut rng = tb::seed::rng_for("alternating_passes");
    let mut d = SparseCoreDriver::new(&small(2)).unwrap();
    for round in 0..tb::seed::soak_rounds(6) {
        let b = random_batch(&mut rng, 24, 8);
        let p = prepare(&b.ids, &b.samples, &b.gains, b.rows, b.batch, 2).unwrap();
        let grad: Vec<u32> = (0..b.batch * b.dim)
            .map(|_| value(&mut rng, 0.02))
            .collect();
        let lr = value(&mut rng, 0.0);
        let latency = rng.gen_range(2..=9);
        let what = format!("round {round}: V={} D={} B={}", b.rows, b.dim, b.batch);
        check(
            &mut d,
            &what,
            &b.table,
            b.rows,
            b.dim,
            b.batch,
            &p,
            HbmBehaviour::Fixed(latency),
        );
        check_update(
            &mut d,
            &what,
            &b.table,
            b.rows,
            b.dim,
            b.batch,
            &p,
            &grad,
            lr,
            HbmBehaviour::Fixed(latency),
        );
    }
}

#[test]
fn sixteen_tiles_walk_in_parallel_for_every_row_length() {
    // T = 16: every tile requests at once, the arbiter takes turns, and the
    // folds follow in tile order; D = 1, 5, 8, 21 (rows straddling words),
    // Zipf batches with padding, invalid ids and fp32 specials.
    let mut rng = tb::seed::rng_for("sixteen_tiles");
    let mut d = SparseCoreDriver::new(&small(16)).unwrap();
    for dim in [1, 5, 8, 21] {
        let rows = 70;
        let table: Vec<u32> = (0..rows * dim).map(|_| value(&mut rng, 0.05)).collect();
        let n = 120;
        let ids: Vec<i32> = (0..n)
            .map(|i| match i % 17 {
                0 => i32::MAX,
                1 => rows as i32 + 3,
                _ => zipf(&mut rng, rows),
            })
            .collect();
        let samples: Vec<i32> = (0..n).map(|_| rng.gen_range(0..8)).collect();
        let gains: Vec<u32> = (0..n).map(|_| value(&mut rng, 0.05)).collect();
        let p = prepare(&ids, &samples, &gains, rows, 8, 16).unwrap();
        for hbm in [
            HbmBehaviour::Fixed(2),
            HbmBehaviour::Fixed(11),
            HbmBehaviour::Random {
                min: 2,
                max: 30,
                ready: 0.6,
                seed: rng.gen(),
            },
        ] {
            check(
                &mut d,
                &format!("T=16 D={dim} {hbm:?}"),
                &table,
                rows,
                dim,
                8,
                &p,
                hbm,
            );
        }
        let grad: Vec<u32> = (0..8 * dim).map(|_| value(&mut rng, 0.02)).collect();
        check_update(
            &mut d,
            &format!("update T=16 D={dim}"),
            &table,
            rows,
            dim,
            8,
            &p,
            &grad,
            0x3DCC_CCCD,
            HbmBehaviour::Fixed(5),
        );
    }
}

/// Forward and update passes at depth 1 and at the deepest pipeline (two
/// tiles: the staged walk under the read arbiter's round robin) and at the
/// `fmax` preset (one tile, the deepest pipeline): the same bits as the
/// golden model and, with a fixed latency, the cycles of its cycle model at
/// that depth; random latency and backpressure too (the combine's
/// write-first read must still see the write one stage ahead, even with
/// responses back to back). Depth 4 (the add staged inside the loop, the
/// walk not) is `staged_loop_interlocks_responses_to_one_sample`'s.
#[test]
fn deeper_pipelines_keep_bits_and_cycles() {
    let mut rng = tb::seed::rng_for("sparsecore_depths");
    let fmax = tb::preset(&sparsecore::SparseCore, "fmax");
    let deepest = config::sparsecore::MAX_DEPTH;
    assert_eq!(fmax.depth(), deepest);
    assert!(fmax.staged_walk());
    let configs = [
        small(2).with_depth(1).unwrap(),
        small(2).with_depth(deepest).unwrap(),
        fmax,
    ];
    deeper_pipelines(&mut rng, &configs, tb::seed::soak_rounds(4));
}

/// Entries may be pushed before the start: pushed while the block is idle
/// after a pass of another D, V and B, they are walked with the new pass's
/// (a staged walk's register stage must not place them with the old D).
/// Forward and update passes back to back on one block, the host pushing
/// for up to 12 cycles ahead of each start; bits as the golden model's (the
/// cycle model pushes from the start, so cycles are not compared here).
#[test]
fn entries_pushed_before_the_start_walk_with_the_new_pass_s_shape() {
    let mut rng = tb::seed::rng_for("sparsecore_early_entries");
    let fmax = tb::preset(&sparsecore::SparseCore, "fmax");
    let deepest = small(2).with_depth(config::sparsecore::MAX_DEPTH).unwrap();
    for c in [fmax, deepest, small(2)] {
        let mut d = SparseCoreDriver::new(&c).unwrap();
        for round in 0..tb::seed::soak_rounds(4) {
            let early = if round == 0 { 0 } else { rng.gen_range(1..=12) };
            d.set_early_pushes(early);
            let b = random_batch(&mut rng, c.max_dim(), c.max_batch());
            let p = prepare(&b.ids, &b.samples, &b.gains, b.rows, b.batch, c.tiles()).unwrap();
            let hbm = HbmBehaviour::Random {
                min: 2,
                max: 2 + rng.gen_range(0..=10),
                ready: 1.0,
                seed: rng.gen(),
            };
            let what = format!(
                "depth {} T={} round {round}: {early} cycles early, V={} D={} B={} n={}",
                c.depth(),
                c.tiles(),
                b.rows,
                b.dim,
                b.batch,
                b.ids.len()
            );
            check(&mut d, &what, &b.table, b.rows, b.dim, b.batch, &p, hbm);
            let grad: Vec<u32> = (0..b.batch * b.dim)
                .map(|_| value(&mut rng, 0.02))
                .collect();
            let lr = value(&mut rng, 0.02);
            let what = format!("update {what}");
            check_update(
                &mut d, &what, &b.table, b.rows, b.dim, b.batch, &p, &grad, lr, hbm,
            );
        }
    }
}

/// One id at a time under backpressure, a row's first writes were queued
/// while its later reads were still offered, and both were offered in one
/// cycle (found by `deeper_pipelines_keep_bits_and_cycles` with this seed:
/// depth 1, T = 2, its second round, an update of rows of 19 elements at
/// random latency with the channel ready 60 % of the time). A write now
/// waits while a read is held offered, and reads wait for queued writes.
#[test]
fn one_id_at_a_time_a_row_s_writes_and_held_reads_take_turns() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3_633_512_282_676_121_835);
    deeper_pipelines(&mut rng, &[small(2).with_depth(1).unwrap()], 2);
}

fn deeper_pipelines(
    rng: &mut rand_chacha::ChaCha8Rng,
    configs: &[SparseCoreConfig],
    rounds: usize,
) {
    for &c in configs {
        let mut d = SparseCoreDriver::new(&c).unwrap();
        for round in 0..rounds {
            let b = random_batch(rng, c.max_dim(), c.max_batch());
            let tiles = c.tiles();
            let p = prepare(&b.ids, &b.samples, &b.gains, b.rows, b.batch, tiles).unwrap();
            let latency = rng.gen_range(2..=12);
            let what = format!(
                "depth {} T={tiles} round {round}: V={} D={} B={} n={} latency {latency}",
                c.depth(),
                b.rows,
                b.dim,
                b.batch,
                b.ids.len()
            );
            let fixed = HbmBehaviour::Fixed(latency);
            let random = HbmBehaviour::Random {
                min: 2,
                max: 2 + rng.gen_range(0..=20),
                ready: [1.0, 0.6][rng.gen_range(0..2)],
                seed: rng.gen(),
            };
            for hbm in [fixed, random] {
                let what = format!("{what} {hbm:?}");
                check(&mut d, &what, &b.table, b.rows, b.dim, b.batch, &p, hbm);
            }
            let grad: Vec<u32> = (0..b.batch * b.dim).map(|_| value(rng, 0.02)).collect();
            let lr = value(rng, 0.02);
            for hbm in [fixed, random] {
                let what = format!("update {what} {hbm:?}");
                check_update(
                    &mut d, &what, &b.table, b.rows, b.dim, b.batch, &p, &grad, lr, hbm,
                );
            }
        }
    }
}

/// With the add staged inside the combine loop (depth 4 at two tiles, and
/// the `fmax` preset), batches of one sample: every response adds into the
/// same partial sums as the ones before it, so each waits for the interlock,
/// the buffer fills and holds back the reads; an update's entries all share
/// U's words. Bits and cycles as the golden model's.
#[test]
fn staged_loop_interlocks_responses_to_one_sample() {
    let mut rng = tb::seed::rng_for("sparsecore_interlock");
    let fmax = tb::preset(&sparsecore::SparseCore, "fmax");
    let staged = small(2)
        .with_depth(config::sparsecore::STAGED_LOOP_DEPTH)
        .unwrap();
    for c in [staged, fmax] {
        assert!(c.loop_stages() > 0);
        let mut d = SparseCoreDriver::new(&c).unwrap();
        for round in 0..tb::seed::soak_rounds(3) {
            let b = random_batch(&mut rng, c.max_dim(), 1);
            let p = prepare(&b.ids, &b.samples, &b.gains, b.rows, b.batch, c.tiles()).unwrap();
            let latency = rng.gen_range(2..=12);
            let what = format!(
                "depth {} T={} round {round}: V={} D={} n={} latency {latency}",
                c.depth(),
                c.tiles(),
                b.rows,
                b.dim,
                b.ids.len()
            );
            let fixed = HbmBehaviour::Fixed(latency);
            let random = HbmBehaviour::Random {
                min: 2,
                max: 2 + rng.gen_range(0..=20),
                ready: [1.0, 0.6][rng.gen_range(0..2)],
                seed: rng.gen(),
            };
            let grad: Vec<u32> = (0..b.dim).map(|_| value(&mut rng, 0.02)).collect();
            let lr = value(&mut rng, 0.02);
            for hbm in [fixed, random] {
                let what = format!("{what} {hbm:?}");
                check(&mut d, &what, &b.table, b.rows, b.dim, 1, &p, hbm);
                let what = format!("update {what}");
                check_update(
                    &mut d, &what, &b.table, b.rows, b.dim, 1, &p, &grad, lr, hbm,
                );
            }
        }
    }
}

/// The pipelined update (depth 0) on directed batches: every id equal, all
/// padding, duplicates within a sample (merged by the host) and across
/// samples, invalid ids, more distinct ids than slots (the slots wrap many
/// times) and a block whose scratchpad holds fewer slots than reads in
/// flight for long rows; each at a fixed latency (bits and cycles) and under
/// random latency with backpressure (bits), for T = 1, 2, 3 and 16 and
/// D = 1, 5, 8, 21 (128 on a wide block).
#[test]
fn pipelined_update_directed_batches() {
    let mut rng = tb::seed::rng_for("pipelined_update");
    // cfg(2, 24, 2): 6 scratchpad words, so 2 slots at D = 21 and 6 at
    // D = 8 are what bounds the rows in flight, not the 4 reads.
    let configs = [small(1), small(2), small(3), small(16), cfg(2, 24, 2)];
    for c in configs {
        assert!(c.pipelined_update());
        let mut d = SparseCoreDriver::new(&c).unwrap();
        let tiles = c.tiles();
        let batch = c.max_batch();
        for dim in [1, 5, 8, 21] {
            let rows = 40;
            let table: Vec<u32> = (0..rows * dim).map(|_| value(&mut rng, 0.02)).collect();
            let grad: Vec<u32> = (0..batch * dim).map(|_| value(&mut rng, 0.02)).collect();
            let lr = value(&mut rng, 0.0);
            let b = batch as i32;
            let cases: Vec<(&str, Vec<i32>, Vec<i32>)> = vec![
                (
                    "every id equal",
                    vec![7; 24],
                    (0..24).map(|i| i % b).collect(),
                ),
                (
                    "all padding",
                    vec![i32::MAX; 9],
                    (0..9).map(|i| i % b).collect(),
                ),
                (
                    "duplicates within and across samples",
                    [3, 3, 3, 4, 4, 3, 9, 9, 4].to_vec(),
                    [0, 0, 1 % b, 1 % b, 1 % b, 0, 0, 0, 0].to_vec(),
                ),
                (
                    "invalid ids between valid ones",
                    [5, -1, 5, 40, 6, i32::MIN, 6, 47, 5].to_vec(),
                    (0..9).map(|i| i % b).collect(),
                ),
                (
                    "more ids than slots",
                    (0..rows as i32).chain((0..rows as i32).rev()).collect(),
                    (0..2 * rows as i32).map(|i| i % b).collect(),
                ),
                (
                    "zipf",
                    (0..60).map(|_| zipf(&mut rng, rows)).collect(),
                    (0..60).map(|_| rng.gen_range(0..b)).collect(),
                ),
            ];
            for (name, ids, samples) in cases {
                let gains: Vec<u32> = (0..ids.len()).map(|_| value(&mut rng, 0.02)).collect();
                let p = prepare(&ids, &samples, &gains, rows, batch, tiles).unwrap();
                let random = HbmBehaviour::Random {
                    min: 2,
                    max: 2 + rng.gen_range(0..=30),
                    ready: [1.0, 0.6, 0.3][rng.gen_range(0..3)],
                    seed: rng.gen(),
                };
                let fixed = HbmBehaviour::Fixed(rng.gen_range(2..=40));
                for hbm in [fixed, random] {
                    check_update(
                        &mut d,
                        &format!("T={tiles} B={batch} D={dim} {name} {hbm:?}"),
                        &table,
                        rows,
                        dim,
                        batch,
                        &p,
                        &grad,
                        lr,
                        hbm,
                    );
                }
            }
        }
    }
    // D = 128: a row of 16 words, 17 when it straddles.
    let mut wide = SparseCoreDriver::new(&cfg(3, 128, 2)).unwrap();
    let rows = 11;
    let dim = 128;
    let table: Vec<u32> = (0..rows * dim).map(|_| value(&mut rng, 0.02)).collect();
    let grad: Vec<u32> = (0..2 * dim).map(|_| value(&mut rng, 0.02)).collect();
    let ids: Vec<i32> = (0..rows as i32).chain([2, 2, 5, 10, 12]).collect();
    let samples: Vec<i32> = (0..ids.len() as i32).map(|i| i % 2).collect();
    let gains: Vec<u32> = (0..ids.len()).map(|_| value(&mut rng, 0.0)).collect();
    let p = prepare(&ids, &samples, &gains, rows, 2, 3).unwrap();
    for hbm in [
        HbmBehaviour::Fixed(2),
        HbmBehaviour::Fixed(30),
        HbmBehaviour::Random {
            min: 2,
            max: 40,
            ready: 0.5,
            seed: rng.gen(),
        },
    ] {
        check_update(
            &mut wide,
            &format!("T=3 D=128 {hbm:?}"),
            &table,
            rows,
            dim,
            2,
            &p,
            &grad,
            0x3F00_0000,
            hbm,
        );
    }
}

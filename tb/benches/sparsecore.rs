//! SparseCore benchmarks: lookups per cycle and HBM bandwidth use against
//! the tile count, for rows of 8, 21 and 128 elements, with an HBM of
//! latency 100 cycles delivering one 32-byte word per cycle; Verilator build
//! times and simulation speed. Printed as Markdown tables on stdout, progress
//! on stderr; nothing here passes or fails.
//!
//! The workload: a table of 10,000 rows, a batch of 64 samples and 4,096
//! entries with Zipf-distributed ids (exponent 1.1, so duplicates merge),
//! gains of 1.0. Each tile count is a SparseCore of rows up to 128 elements
//! and batches up to 64 (128 reads in flight, the default); the same model
//! runs every D.
//!
//! Tables:
//!
//! 1. `build`: the Verilator model of each tile count, from the usual model
//!    cache: a build if it is not there (timed: the cold build), else a
//!    load. Point `SYSTOLE_CACHE_DIR` at an empty folder to time cold builds.
//! 2. `throughput`: per D and T, the merged entries, HBM words read, the
//!    RTL's cycles (start through the last activation write), lookups
//!    (merged entries) per cycle, HBM bandwidth use (useful bytes, entries x
//!    D x 4, over the peak of 32 bytes per cycle), the words read per cycle
//!    (the bus's own use, which counts the partial words at the ends of a
//!    row), and whether results and cycles equal the golden model's.
//! 3. `update`: the same entries as an update (scatter-add), per D and
//!    T = 1, 4, 8, 16: cycles, updated rows per cycle, HBM words read and
//!    written per cycle (the one channel's use: each row's words cross it
//!    once each way), and whether table and cycles equal the golden
//!    model's. At depth 0 the update keeps many rows in flight; at the
//!    deeper depths of table 4 it handles one id at a time, so each row
//!    pays the HBM latency.
//! 4. `depth`: forward and update at depth 0, at depth 3 (the deepest whose
//!    combine add is one cycle) and at the `fmax` preset's depth (5, the add
//!    staged inside the loop), per D, for T = 1 and 4: cycles and HBM
//!    bandwidth use at each depth, and depth 0's cycles over each deeper
//!    one's (what the pipeline costs in throughput).
//! 5. `sim`: simulated cycles per second of the forward runs, per T.
//!
//! `SYSTOLE_BENCH_QUICK=1` runs 512 entries instead of 4,096;
//! `SYSTOLE_BENCH_TILES=1,4` runs only those tile counts.
//!
//! ```text
//! cargo bench -p tb --bench sparsecore
//! ```

use config::SparseCoreConfig;
use golden::sparsecore::{forward, forward_cycles, update, update_cycles, Table, Timing};
use golden::sparsecore_host::{prepare, Prepared};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sim::drivers::sparsecore::{ForwardRun, HbmBehaviour, SparseCoreDriver, UpdateRun};
use sim::CacheStatus;
use std::time::{Duration, Instant};

const QUICK_ENV: &str = "SYSTOLE_BENCH_QUICK";
const TILES_ENV: &str = "SYSTOLE_BENCH_TILES";
/// The tile counts of the depth table.
const DEPTH_TILES: [u32; 2] = [1, 4];
const TILES: [u32; 5] = [1, 2, 4, 8, 16];
const DIMS: [u32; 3] = [8, 21, 128];
const ROWS: u32 = 10_000;
const BATCH: u32 = 64;
const LATENCY: u32 = 100;

/// The update's gradient (small positive fp32 values, one per sample and
/// element) and learning rate (0.1).
fn update_inputs(dim: u32) -> (Vec<u32>, u32) {
    let grad = (0..BATCH * dim).map(|i| 0x3C00_0000 + (i << 8)).collect();
    (grad, 0x3DCC_CCCD)
}

/// A forward pass of the batch on `d` at the bench's HBM latency, and
/// whether its activations, cycles and words read equal the golden model's.
fn checked_forward(
    d: &mut SparseCoreDriver,
    table: &[u32],
    dim: u32,
    p: &Prepared,
) -> (ForwardRun, bool) {
    let run = d
        .forward(table, ROWS, dim, BATCH, p, HbmBehaviour::Fixed(LATENCY))
        .unwrap_or_else(|e| panic!("forward D = {dim}, T = {}: {e}", d.config().tiles()));
    let want = forward(Table::new(table, ROWS, dim), p, BATCH);
    let model = forward_cycles(p, ROWS, dim, BATCH, Timing::of(d.config(), LATENCY));
    let same = want.activations == run.activations
        && model.cycles == run.cycles
        && model.words_read == run.words_read;
    (run, same)
}

/// An update of the batch on `d` at the bench's HBM latency, the rows the
/// golden model writes, and whether the table and cycles equal the golden
/// model's.
fn checked_update(
    d: &mut SparseCoreDriver,
    table: &[u32],
    dim: u32,
    p: &Prepared,
) -> (UpdateRun, u64, bool) {
    let (grad, lr) = update_inputs(dim);
    let run = d
        .update(
            table,
            ROWS,
            dim,
            BATCH,
            p,
            &grad,
            lr,
            HbmBehaviour::Fixed(LATENCY),
        )
        .unwrap_or_else(|e| panic!("update D = {dim}, T = {}: {e}", d.config().tiles()));
    let want = update(Table::new(table, ROWS, dim), p, &grad, BATCH, lr);
    let model = update_cycles(p, ROWS, dim, BATCH, Timing::of(d.config(), LATENCY));
    let same = want.table == run.table && model.cycles == run.cycles;
    (run, want.rows_written, same)
}

fn header(title: &str, columns: &[&str]) {
    println!("\n### {title}\n");
    println!("| {} |", columns.join(" | "));
    println!(
        "|{}|",
        columns
            .iter()
            .map(|_| " --- ")
            .collect::<Vec<_>>()
            .join("|")
    );
}

fn row(cells: &[String]) {
    println!("| {} |", cells.join(" | "));
}

/// Zipf-distributed ids over 0..rows (exponent 1.1), by inverting the
/// cumulative weights.
fn zipf_ids(rng: &mut impl Rng, rows: u32, n: usize) -> Vec<i32> {
    let mut cumulative = Vec::with_capacity(rows as usize);
    let mut total = 0.0;
    for k in 0..rows {
        total += 1.0 / f64::from(k + 1).powf(1.1);
        cumulative.push(total);
    }
    (0..n)
        .map(|_| {
            let x = rng.gen::<f64>() * total;
            cumulative
                .partition_point(|&c| c <= x)
                .min(rows as usize - 1) as i32
        })
        .collect()
}

fn main() {
    let quick = std::env::var(QUICK_ENV).is_ok_and(|v| !v.is_empty() && v != "0");
    let n: usize = if quick { 512 } else { 4096 };
    eprintln!("bench: SparseCore, {n} entries, HBM latency {LATENCY}");
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let ids = zipf_ids(&mut rng, ROWS, n);
    let samples: Vec<i32> = (0..n).map(|_| rng.gen_range(0..BATCH as i32)).collect();
    let gains = vec![0x3F80_0000u32; n];
    let tables: Vec<Vec<u32>> = DIMS
        .iter()
        .map(|&d| {
            (0..ROWS * d)
                .map(|_| (rng.gen_range(120u32..=134) << 23) | (rng.gen::<u32>() & 0x807F_FFFF))
                .collect()
        })
        .collect();

    header(
        "build: Verilator model of the SparseCore (rows up to 128, batches up to 64)",
        &["T", "top", "status", "time"],
    );
    let tiles: Vec<u32> = match std::env::var(TILES_ENV) {
        Ok(v) if !v.is_empty() => v
            .split(',')
            .map(|t| t.trim().parse().expect("SYSTOLE_BENCH_TILES: tile counts"))
            .collect(),
        _ => TILES.to_vec(),
    };
    let mut drivers = Vec::new();
    for t in tiles {
        let cfg = SparseCoreConfig::new(t, 128, BATCH).expect("valid");
        eprintln!("bench: building or loading T = {t}...");
        let start = Instant::now();
        let mut d = SparseCoreDriver::new(&cfg).unwrap_or_else(|e| panic!("T = {t}: {e}"));
        let took = start.elapsed();
        let status = match d.model_mut().cache_status() {
            CacheStatus::Built => "built (cold)",
            CacheStatus::Reused => "loaded from the cache",
        };
        row(&[
            t.to_string(),
            sparsecore::top_name(&cfg),
            status.into(),
            format!("{:.1} s", took.as_secs_f64()),
        ]);
        drivers.push((t, d, 0u64, Duration::ZERO));
    }

    header(
        &format!("throughput: HBM latency {LATENCY}, one 32-byte word per cycle, B = {BATCH}, V = {ROWS}, n = {n}"),
        &[
            "D",
            "T",
            "entries",
            "words read",
            "cycles",
            "lookups/cycle",
            "HBM bandwidth use",
            "words/cycle",
            "= golden",
        ],
    );
    for (di, &dim) in DIMS.iter().enumerate() {
        let table = &tables[di];
        for (t, d, cycles_total, wall) in drivers.iter_mut() {
            let p = prepare(&ids, &samples, &gains, ROWS, BATCH, *t).expect("valid entries");
            eprintln!("bench: D = {dim}, T = {t}...");
            let start = Instant::now();
            let (run, same) = checked_forward(d, table, dim, &p);
            *wall += start.elapsed();
            *cycles_total += run.cycles;
            let c = run.cycles as f64;
            row(&[
                dim.to_string(),
                t.to_string(),
                p.entries.to_string(),
                run.words_read.to_string(),
                run.cycles.to_string(),
                format!("{:.3}", p.entries as f64 / c),
                format!(
                    "{:.3}",
                    p.entries as f64 * f64::from(dim) * 4.0 / (32.0 * c)
                ),
                format!("{:.3}", run.words_read as f64 / c),
                if same { "yes".into() } else { "NO".into() },
            ]);
        }
    }

    header(
        &format!("update: HBM latency {LATENCY}, B = {BATCH}, V = {ROWS}, n = {n}"),
        &[
            "D",
            "T",
            "rows updated",
            "cycles",
            "rows/cycle",
            "words read + written per cycle",
            "= golden",
        ],
    );
    for (di, &dim) in DIMS.iter().enumerate() {
        let table = &tables[di];
        for (t, d, _, _) in drivers
            .iter_mut()
            .filter(|(t, ..)| [1, 4, 8, 16].contains(t))
        {
            let p = prepare(&ids, &samples, &gains, ROWS, BATCH, *t).expect("valid entries");
            eprintln!("bench: update, D = {dim}, T = {t}...");
            let (run, rows_written, same) = checked_update(d, table, dim, &p);
            let c = run.cycles as f64;
            row(&[
                dim.to_string(),
                t.to_string(),
                rows_written.to_string(),
                run.cycles.to_string(),
                format!("{:.4}", rows_written as f64 / c),
                format!("{:.3}", (run.words_read + run.words_written) as f64 / c),
                if same { "yes".into() } else { "NO".into() },
            ]);
        }
    }

    // Depth 0, the deepest depth whose combine add is one cycle, and the
    // deepest (the `fmax` preset's, the add staged inside the loop).
    let depths = [
        0,
        config::sparsecore::STAGED_LOOP_DEPTH - 1,
        config::sparsecore::MAX_DEPTH,
    ];
    let mut columns = vec!["pass".to_string(), "D".into(), "T".into()];
    columns.extend(depths.iter().map(|d| format!("cycles (depth {d})")));
    columns.extend(depths.iter().map(|d| format!("bandwidth use (depth {d})")));
    columns.extend(depths[1..].iter().map(|d| format!("ratio (depth {d})")));
    columns.push("= golden".into());
    let columns: Vec<&str> = columns.iter().map(String::as_str).collect();
    header(
        &format!(
            "depth: depths {depths:?}, HBM latency {LATENCY}, B = {BATCH}, V = {ROWS}, n = {n}"
        ),
        &columns,
    );
    for (t, shallow, _, _) in drivers.iter_mut().filter(|(t, ..)| DEPTH_TILES.contains(t)) {
        let mut deeper: Vec<SparseCoreDriver> = depths[1..]
            .iter()
            .map(|&depth| {
                let cfg = shallow.config().with_depth(depth).expect("valid");
                eprintln!("bench: building or loading T = {t} at depth {depth}...");
                SparseCoreDriver::new(&cfg).unwrap_or_else(|e| panic!("T = {t}: {e}"))
            })
            .collect();
        let p = prepare(&ids, &samples, &gains, ROWS, BATCH, *t).expect("valid entries");
        for (di, &dim) in DIMS.iter().enumerate() {
            let table = &tables[di];
            eprintln!("bench: depth, D = {dim}, T = {t}...");
            let useful = p.entries as f64 * f64::from(dim) * 4.0 / 32.0;
            // An update's bandwidth: the rows' words read and written.
            let cfg = shallow.config();
            let words = 2.0
                * update_cycles(&p, ROWS, dim, BATCH, Timing::of(cfg, LATENCY)).words_read as f64;
            for (pass, bytes) in [("forward", useful), ("update", words)] {
                let mut cycles = Vec::new();
                let mut same = true;
                for d in std::iter::once(&mut *shallow).chain(deeper.iter_mut()) {
                    let (c, run_same) = if pass == "forward" {
                        let (run, s) = checked_forward(d, table, dim, &p);
                        (run.cycles, s)
                    } else {
                        let (run, _, s) = checked_update(d, table, dim, &p);
                        (run.cycles, s)
                    };
                    same &= run_same;
                    cycles.push(c);
                }
                let mut cells = vec![pass.to_string(), dim.to_string(), t.to_string()];
                cells.extend(cycles.iter().map(|c| c.to_string()));
                cells.extend(cycles.iter().map(|&c| format!("{:.4}", bytes / c as f64)));
                cells.extend(
                    cycles[1..]
                        .iter()
                        .map(|&c| format!("{:.4}", cycles[0] as f64 / c as f64)),
                );
                cells.push(if same { "yes".into() } else { "NO".into() });
                row(&cells);
            }
        }
    }

    header(
        "sim: simulated cycles per second (the throughput runs, driver and HBM model included)",
        &["T", "cycles", "wall", "cycles/s"],
    );
    for (t, _, cycles, wall) in &drivers {
        row(&[
            t.to_string(),
            cycles.to_string(),
            format!("{:.2} s", wall.as_secs_f64()),
            format!("{:.0}", *cycles as f64 / wall.as_secs_f64()),
        ]);
    }
}

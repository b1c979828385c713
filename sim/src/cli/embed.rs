//! `sim embed` and `sim embed-update`: the SparseCore's forward pass (lookup
//! and combine) and update (scatter-add SGD) on `.npy` files.
//!
//! The entries go through the host library (`golden::sparsecore_host`:
//! padding dropped, duplicates merged, sorted, sharded by id mod T) and then
//! to the RTL (with an HBM of fixed latency, the configuration's 100 cycles)
//! or to the golden model. An id outside [0, V) is refused unless
//! `--skip-invalid` lets it through to the hardware, which skips and counts
//! it.

use super::{bad, broken, Failure};
use config::sparsecore::{MAX_BATCH, MAX_DIM, MAX_TILES};
use config::SparseCoreConfig;
use golden::sparsecore::{forward, forward_cycles, update, update_cycles, Table, Timing};
use golden::sparsecore_host::{prepare, Prepared};
use matrix::Array;
use sim::drivers::sparsecore::{HbmBehaviour, SparseCoreDriver};
use std::path::{Path, PathBuf};

/// What both commands read.
#[derive(clap::Args, Debug)]
pub struct EntryArgs {
    /// E: .npy float32 [V, D], the embedding table (V, D >= 1).
    #[arg(long, value_name = "FILE")]
    table: PathBuf,
    /// I: .npy int32 [n], the ids (2147483647 is padding).
    #[arg(long, value_name = "FILE")]
    ids: PathBuf,
    /// S: .npy int32 [n], each entry's sample, in [0, B).
    #[arg(long, value_name = "FILE")]
    samples: PathBuf,
    /// G: .npy float32 [n], each entry's gain.
    #[arg(long, value_name = "FILE")]
    gains: PathBuf,
    /// Tiles T (1..=16); tile t owns the ids with id mod T = t, and the
    /// result depends on T.
    #[arg(long, value_name = "T", default_value_t = SparseCoreConfig::DEFAULT.tiles())]
    tiles: u32,
    /// Pipeline depth (0..=6): stages of the combine's multiplier and the
    /// fold's adder; the results are the same at every depth, the cycles
    /// not.
    #[arg(long, value_name = "N", default_value_t = SparseCoreConfig::DEFAULT.depth())]
    depth: u32,
    /// Send ids outside [0, V) to the hardware, which skips and counts them,
    /// instead of refusing them.
    #[arg(long)]
    skip_invalid: bool,
    /// Use the golden model (and its cycle model) instead of the RTL.
    #[arg(long)]
    golden: bool,
    /// Print one JSON line of statistics to stdout.
    #[arg(long)]
    stats: bool,
}

#[derive(clap::Args, Debug)]
pub struct EmbedArgs {
    #[command(flatten)]
    entries: EntryArgs,
    /// B: the batch size (samples), 1..=4096.
    #[arg(long, value_name = "B")]
    batch: u32,
    /// Where to write A, float32 [B, D].
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
}

#[derive(clap::Args, Debug)]
pub struct EmbedUpdateArgs {
    #[command(flatten)]
    entries: EntryArgs,
    /// GR: .npy float32 [B, D], the gradient of the activations.
    #[arg(long, value_name = "FILE")]
    grad: PathBuf,
    /// The learning rate, a decimal number (rounded to the nearest fp32).
    #[arg(long, value_name = "LR", allow_hyphen_values = true)]
    lr: String,
    /// Where to write E2, float32 [V, D], the whole updated table.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
}

/// The inputs, read and checked.
struct Inputs {
    table: Vec<u32>,
    rows: u32,
    dim: u32,
    prepared: Prepared,
    entries_in: usize,
}

fn read_f32(path: &Path, what: &str) -> Result<Array<u32>, Failure> {
    let a: Array<f32> = matrix::read_array(path, what).map_err(bad)?;
    Ok(Array {
        shape: a.shape,
        data: a.data.into_iter().map(f32::to_bits).collect(),
    })
}

fn one_dim<T>(a: &Array<T>, what: &str) -> Result<(), Failure> {
    if a.shape.len() != 1 {
        return Err(bad(format!(
            "{what} must be a 1-D array [n], got shape {:?}",
            a.shape
        )));
    }
    Ok(())
}

fn read_inputs(args: &EntryArgs, batch: u32) -> Result<Inputs, Failure> {
    if !(1..=MAX_TILES).contains(&args.tiles) {
        return Err(bad(format!(
            "--tiles must be between 1 and {MAX_TILES}, got {}",
            args.tiles
        )));
    }
    if args.depth > config::sparsecore::MAX_DEPTH {
        return Err(bad(format!(
            "--depth must be between 0 and {}, got {}",
            config::sparsecore::MAX_DEPTH,
            args.depth
        )));
    }
    if !(1..=MAX_BATCH).contains(&batch) {
        return Err(bad(format!(
            "the batch must be between 1 and {MAX_BATCH}, got {batch}"
        )));
    }
    let e = read_f32(&args.table, "E")?;
    if e.shape.len() != 2 {
        return Err(bad(format!(
            "E must be a 2-D array [V, D], got shape {:?}",
            e.shape
        )));
    }
    let (rows, dim) = (e.shape[0], e.shape[1]);
    if rows > u64::from(config::sparsecore::MAX_ROWS) {
        return Err(bad(format!(
            "E has {rows} rows; int32 ids reach at most {}",
            config::sparsecore::MAX_ROWS
        )));
    }
    if dim > u64::from(MAX_DIM) {
        return Err(bad(format!(
            "E's rows have {dim} elements; the SparseCore takes at most {MAX_DIM}"
        )));
    }
    let (rows, dim) = (rows as u32, dim as u32);
    let ids: Array<i32> = matrix::read_array(&args.ids, "I").map_err(bad)?;
    let samples: Array<i32> = matrix::read_array(&args.samples, "S").map_err(bad)?;
    let gains = read_f32(&args.gains, "G")?;
    one_dim(&ids, "I")?;
    one_dim(&samples, "S")?;
    one_dim(&gains, "G")?;
    let prepared = prepare(
        &ids.data,
        &samples.data,
        &gains.data,
        rows,
        batch,
        args.tiles,
    )
    .map_err(|e| bad(e.to_string()))?;
    if let Some(&(position, e)) = prepared.invalid.first() {
        if !args.skip_invalid {
            return Err(bad(format!(
                "id {} at position {position} is outside [0, {rows}) (--skip-invalid lets \
                 the hardware skip it)",
                e.id
            )));
        }
    }
    Ok(Inputs {
        table: e.data,
        rows,
        dim,
        prepared,
        entries_in: ids.data.len(),
    })
}

/// The SparseCore the RTL runs on: rows up to D and batches up to B, both
/// rounded up to powers of two (at least 8 elements), so that runs of
/// similar shapes share one cached model.
fn rtl_config(tiles: u32, depth: u32, dim: u32, batch: u32) -> Result<SparseCoreConfig, Failure> {
    let max_dim = dim.next_power_of_two().clamp(8, MAX_DIM);
    let max_batch = batch.next_power_of_two().min(MAX_BATCH);
    let d = SparseCoreConfig::DEFAULT;
    SparseCoreConfig::with(
        tiles,
        max_dim,
        max_batch,
        d.queue_depth(),
        d.hbm_inflight(),
        d.hbm_latency(),
    )
    .and_then(|c| c.with_depth(depth))
    .map_err(|e| bad(e.to_string()))
}

fn write_f32(path: &Path, shape: Vec<u64>, data: &[u32]) -> Result<(), Failure> {
    matrix::write_array(
        path,
        &Array {
            shape,
            data: data
                .iter()
                .map(|&x| f32::from_bits(x))
                .collect::<Vec<f32>>(),
        },
    )
    .map_err(broken)
}

pub fn run_embed(args: &EmbedArgs) -> Result<(), Failure> {
    let a = &args.entries;
    let inp = read_inputs(a, args.batch)?;
    let cfg = rtl_config(a.tiles, a.depth, inp.dim, args.batch)?;
    let table = Table::new(&inp.table, inp.rows, inp.dim);
    let (acts, invalid, cycles, words) = if a.golden {
        let f = forward(table, &inp.prepared, args.batch);
        let timing = Timing::of(&cfg, cfg.hbm_latency());
        let c = forward_cycles(&inp.prepared, inp.rows, inp.dim, args.batch, timing);
        (f.activations, f.invalid, c.cycles, c.words_read)
    } else {
        let mut d = SparseCoreDriver::new(&cfg).map_err(|e| broken(e.to_string()))?;
        let run = d
            .forward(
                &inp.table,
                inp.rows,
                inp.dim,
                args.batch,
                &inp.prepared,
                HbmBehaviour::Fixed(cfg.hbm_latency()),
            )
            .map_err(|e| broken(e.to_string()))?;
        (run.activations, run.invalid, run.cycles, run.words_read)
    };
    write_f32(
        &args.out,
        vec![u64::from(args.batch), u64::from(inp.dim)],
        &acts,
    )?;
    if a.stats {
        let entries = inp.prepared.entries as f64;
        let useful_bytes = entries * f64::from(inp.dim) * 4.0;
        let line = serde_json::json!({
            "op": "embed",
            "backend": if a.golden { "golden" } else { "rtl" },
            "tiles": a.tiles,
            "depth": a.depth,
            "rows": inp.rows,
            "dim": inp.dim,
            "batch": args.batch,
            "n": inp.entries_in,
            "entries": inp.prepared.entries,
            "padding": inp.prepared.padding,
            "invalid": invalid,
            "cycles": cycles,
            "hbm_latency": cfg.hbm_latency(),
            "hbm_words_read": words,
            "hbm_words_written": 0,
            "rows_written": 0,
            "lookups_per_cycle": entries / cycles as f64,
            "hbm_bandwidth_use": useful_bytes / (32.0 * cycles as f64),
        });
        println!("{line}");
    }
    Ok(())
}

/// Parses the learning rate: a finite decimal, rounded to the nearest fp32.
fn parse_lr(text: &str) -> Result<u32, Failure> {
    let t = text.trim();
    let decimal = !t.is_empty()
        && t.chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E'));
    match t.parse::<f32>() {
        Ok(v) if decimal && v.is_finite() => Ok(v.to_bits()),
        _ => Err(bad(format!(
            "--lr must be a finite decimal number, got '{text}'"
        ))),
    }
}

pub fn run_update(args: &EmbedUpdateArgs) -> Result<(), Failure> {
    let a = &args.entries;
    let lr = parse_lr(&args.lr)?;
    let grad = read_f32(&args.grad, "GR")?;
    if grad.shape.len() != 2 {
        return Err(bad(format!(
            "GR must be a 2-D array [B, D], got shape {:?}",
            grad.shape
        )));
    }
    let batch = u32::try_from(grad.shape[0])
        .ok()
        .filter(|b| (1..=MAX_BATCH).contains(b))
        .ok_or_else(|| {
            bad(format!(
                "GR has {} rows; the batch must be between 1 and {MAX_BATCH}",
                grad.shape[0]
            ))
        })?;
    let inp = read_inputs(a, batch)?;
    if grad.shape[1] != u64::from(inp.dim) {
        return Err(bad(format!(
            "GR is [{}, {}] but E's rows have {} elements",
            grad.shape[0], grad.shape[1], inp.dim
        )));
    }
    let cfg = rtl_config(a.tiles, a.depth, inp.dim, batch)?;
    let timing = Timing::of(&cfg, cfg.hbm_latency());
    let (table_out, invalid, cycles, read, written, rows_written) = if a.golden {
        let u = update(
            Table::new(&inp.table, inp.rows, inp.dim),
            &inp.prepared,
            &grad.data,
            batch,
            lr,
        );
        let c = update_cycles(&inp.prepared, inp.rows, inp.dim, batch, timing);
        (
            u.table,
            u.invalid,
            c.cycles,
            c.words_read,
            c.words_written,
            u.rows_written,
        )
    } else {
        let mut d = SparseCoreDriver::new(&cfg).map_err(|e| broken(e.to_string()))?;
        let run = d
            .update(
                &inp.table,
                inp.rows,
                inp.dim,
                batch,
                &inp.prepared,
                &grad.data,
                lr,
                HbmBehaviour::Fixed(cfg.hbm_latency()),
            )
            .map_err(|e| broken(e.to_string()))?;
        (
            run.table,
            run.invalid,
            run.cycles,
            run.words_read,
            run.words_written,
            run.rows_written,
        )
    };
    write_f32(
        &args.out,
        vec![u64::from(inp.rows), u64::from(inp.dim)],
        &table_out,
    )?;
    if a.stats {
        let entries = inp.prepared.entries as f64;
        let line = serde_json::json!({
            "op": "embed-update",
            "backend": if a.golden { "golden" } else { "rtl" },
            "tiles": a.tiles,
            "depth": a.depth,
            "rows": inp.rows,
            "dim": inp.dim,
            "batch": batch,
            "n": inp.entries_in,
            "entries": inp.prepared.entries,
            "padding": inp.prepared.padding,
            "invalid": invalid,
            "cycles": cycles,
            "hbm_latency": cfg.hbm_latency(),
            "hbm_words_read": read,
            "hbm_words_written": written,
            "rows_written": rows_written,
            "lookups_per_cycle": entries / cycles as f64,
        });
        println!("{line}");
    }
    Ok(())
}

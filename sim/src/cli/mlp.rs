//! `sim mlp`: a quantized MLP (a folder of `.npy` files) on a batch of int8
//! inputs, through the compiler and the TensorCore, to int32 logits.

use super::{bad, broken, Failure};
use config::TensorCoreConfig;
use matrix::Matrix;
use sim::drivers::tensorcore::{load_model, run_golden, run_rtl, TensorCoreDriver};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct MlpArgs {
    /// Folder with w{i}.npy (int8, shape in_i x out_i), b{i}.npy (int32, out_i)
    /// and, for every layer but the last, rq{i}.npy (int32, 3: multiplier,
    /// shift, zero point). Other files are ignored.
    #[arg(long, value_name = "DIR")]
    model: PathBuf,
    /// Inputs: .npy int8 [N, in_1].
    #[arg(long, value_name = "FILE")]
    x: PathBuf,
    /// Where to write the logits: .npy int32 [N, out_L].
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Array rows R (the array is square: R = C).
    #[arg(long, value_name = "R", default_value_t = TensorCoreConfig::DEFAULT.rows())]
    rows: u32,
    /// Array columns C.
    #[arg(long, value_name = "C", default_value_t = TensorCoreConfig::DEFAULT.cols())]
    cols: u32,
    /// Accumulator rows (a power of two).
    #[arg(long, value_name = "N", default_value_t = TensorCoreConfig::DEFAULT.acc_rows())]
    acc_rows: u32,
    /// Unified-buffer rows of R int8 (a power of two).
    #[arg(long, value_name = "N", default_value_t = TensorCoreConfig::DEFAULT.ub_rows())]
    ub_rows: u32,
    /// Weight-memory rows of C int8 (a power of two).
    #[arg(long, value_name = "N", default_value_t = TensorCoreConfig::DEFAULT.weight_rows())]
    weight_rows: u32,
    /// Pipeline depth 0..=4 (docs/tensorcore.md, "Pipeline depth").
    #[arg(long, value_name = "D", default_value_t = TensorCoreConfig::DEFAULT.depth())]
    depth: u32,
    /// Run on the golden TensorCore (results and cycle model) instead of the RTL.
    #[arg(long)]
    golden: bool,
    /// Print one JSON line of statistics to stdout.
    #[arg(long)]
    stats: bool,
}

/// Runs `mlp`: reads the model and X, compiles, runs, writes the logits and,
/// with `--stats`, one JSON line.
pub fn run(args: &MlpArgs) -> Result<(), Failure> {
    let d = TensorCoreConfig::DEFAULT;
    let cfg = TensorCoreConfig::with(
        args.rows,
        args.cols,
        args.acc_rows,
        args.ub_rows,
        args.weight_rows,
        d.bias_rows(),
        d.weight_queue(),
    )
    .and_then(|c| c.with_depth(args.depth))
    .map_err(|e| bad(e.to_string()))?;
    let mlp = load_model(&args.model).map_err(bad)?;
    let x: Matrix<i8> = matrix::read(&args.x, "X").map_err(bad)?;
    if x.cols != mlp.inputs() {
        return Err(bad(format!(
            "X: {} is {}x{} but w1 takes {} inputs",
            args.x.display(),
            x.rows,
            x.cols,
            mlp.inputs()
        )));
    }
    // Compiling first refuses a model that does not fit before any model build.
    compiler::compile(&mlp, x.rows, &cfg).map_err(|e| bad(e.to_string()))?;
    let (logits, stats, program) = if args.golden {
        run_golden(&cfg, &mlp, &x.data, x.rows).map_err(broken)?
    } else {
        let mut driver = TensorCoreDriver::new(&cfg).map_err(|e| broken(e.to_string()))?;
        run_rtl(&mut driver, &mlp, &x.data, x.rows).map_err(|e| broken(e.to_string()))?
    };
    matrix::write(
        &args.out,
        &Matrix {
            rows: x.rows,
            cols: mlp.outputs(),
            data: logits,
        },
    )
    .map_err(broken)?;
    if args.stats {
        let sizes: Vec<usize> = std::iter::once(mlp.inputs())
            .chain(mlp.layers().iter().map(|l| l.outputs))
            .collect();
        let macs = program.macs;
        let line = serde_json::json!({
            "op": "mlp",
            "backend": if args.golden { "golden" } else { "rtl" },
            "rows": cfg.rows(),
            "cols": cfg.cols(),
            "acc_rows": cfg.acc_rows(),
            "ub_rows": cfg.ub_rows(),
            "depth": cfg.depth(),
            "layers": sizes,
            "batch": x.rows,
            "block_rows": program.block_rows,
            "cycles": stats.cycles,
            "mxu_busy": stats.mxu_busy_fraction(),
            "mxu_busy_cycles": stats.mxu_busy,
            "stall_weights": stats.stall_weights,
            "stall_ub": stats.stall_ub,
            "stall_vpu": stats.stall_vpu,
            "host": stats.host,
            "issue": stats.issue,
            "sync": stats.sync,
            "instructions": stats.instructions,
            "act_rows": stats.act_rows,
            "act_drain": stats.act_drain,
            "macs": macs,
            "utilization": macs as f64 / (stats.cycles as f64 * f64::from(cfg.rows() * cfg.cols())),
        });
        println!("{line}");
    }
    Ok(())
}

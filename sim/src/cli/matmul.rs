//! `sim matmul`: C = A x B on the MXU, from and to `.npy` files.

use super::{bad, broken, Failure};
use config::{ElemType, MxuConfig};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use matrix::Matrix;
use sim::drivers::mxu::{MxuDriver, Progress, ProgressReport};
use std::io::IsTerminal as _;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct MatmulArgs {
    /// Element type of A and B: int8 or bf16.
    #[arg(long, value_name = "TYPE", value_parser = parse_dtype)]
    dtype: ElemType,
    /// A: .npy matrix [M,K] (int8, or uint16 holding bf16 bit patterns).
    #[arg(long, value_name = "FILE")]
    a: PathBuf,
    /// B: .npy matrix [K,N] (int8, or uint16 holding bf16 bit patterns).
    #[arg(long, value_name = "FILE")]
    b: PathBuf,
    /// Where to write C: .npy matrix [M,N] (int32 for int8, float32 for bf16).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Array rows R.
    #[arg(long, value_name = "R", default_value_t = MxuConfig::DEFAULT.rows())]
    rows: u32,
    /// Array columns C.
    #[arg(long, value_name = "C", default_value_t = MxuConfig::DEFAULT.cols())]
    cols: u32,
    /// Accumulator rows (a power of two); larger M runs in several passes.
    #[arg(long, value_name = "N", default_value_t = MxuConfig::DEFAULT.acc_rows())]
    acc_rows: u32,
    /// Pipeline depth of the array (0 to 5; see `gen --block list`): the same
    /// results, a few cycles more latency per pass.
    #[arg(long, value_name = "D", default_value_t = MxuConfig::DEFAULT.depth())]
    depth: u32,
    /// Run on a bf16 array in int8 mode, which computes both kinds of rows:
    /// --dtype int8 streams int8 rows (each operand in the low byte of its
    /// 16-bit lane), --dtype bf16 bf16 rows. The cycles are the bf16 array's.
    #[arg(long)]
    int8_mode: bool,
    /// Compute with the golden model (cycles from its cycle model) instead of the RTL.
    #[arg(long)]
    golden: bool,
    /// Print one JSON line of statistics to stdout.
    #[arg(long)]
    stats: bool,
}

fn parse_dtype(s: &str) -> Result<ElemType, String> {
    s.parse::<ElemType>().map_err(|e| e.to_string())
}

/// Runs `matmul`: reads A and B, computes C on the RTL or the golden model,
/// writes C and, with `--stats`, one JSON line.
pub fn run(args: &MatmulArgs) -> Result<(), Failure> {
    // In int8 mode the array is the bf16 one whatever the operands are.
    let array_dtype = if args.int8_mode {
        ElemType::Bf16
    } else {
        args.dtype
    };
    let cfg = MxuConfig::with_acc_rows(args.rows, args.cols, array_dtype, args.acc_rows)
        .and_then(|c| c.with_depth(args.depth))
        .and_then(|c| c.with_int8_mode(args.int8_mode))
        .map_err(|e| bad(e.to_string()))?;
    let (m, k, n, cycles) = match args.dtype {
        ElemType::Int8 => {
            let (a, b) = operands::<i8>(args)?;
            let (m, k, n) = (a.rows, a.cols, b.cols);
            let (c, cycles) = if args.golden {
                let c = golden::matmul_int8(&a.data, &b.data, m, k, n);
                (c, golden::MxuTiming::new(&cfg, m, k, n).total_cycles())
            } else {
                let (c, stats) = driver(&cfg)?
                    .matmul_int8(&a.data, &b.data, (m, k, n), None)
                    .map_err(|e| broken(e.to_string()))?;
                (c, stats.cycles)
            };
            matrix::write(
                &args.out,
                &Matrix {
                    rows: m,
                    cols: n,
                    data: c,
                },
            )
            .map_err(broken)?;
            (m, k, n, cycles)
        }
        ElemType::Bf16 => {
            let (a, b) = operands::<u16>(args)?;
            let (m, k, n) = (a.rows, a.cols, b.cols);
            let (c, cycles) = if args.golden {
                let r = cfg.rows() as usize;
                let c = golden::matmul_bf16(&a.data, &b.data, m, k, n, r);
                (c, golden::MxuTiming::new(&cfg, m, k, n).total_cycles())
            } else {
                let (c, stats) = driver(&cfg)?
                    .matmul_bf16(&a.data, &b.data, (m, k, n), None)
                    .map_err(|e| broken(e.to_string()))?;
                (c, stats.cycles)
            };
            // float32 carries the fp32 results bit for bit (NaNs included).
            let data: Vec<f32> = c.into_iter().map(f32::from_bits).collect();
            matrix::write(
                &args.out,
                &Matrix {
                    rows: m,
                    cols: n,
                    data,
                },
            )
            .map_err(broken)?;
            (m, k, n, cycles)
        }
    };
    if args.stats {
        let macs = (m * k * n) as u64;
        let utilization = macs as f64 / (cycles as f64 * cfg.rows() as f64 * cfg.cols() as f64);
        let mut line = serde_json::json!({
            "op": "matmul",
            "backend": if args.golden { "golden" } else { "rtl" },
            "dtype": args.dtype.name(),
            "rows": cfg.rows(),
            "cols": cfg.cols(),
            "acc_rows": cfg.acc_rows(),
            "depth": cfg.depth(),
            "m": m,
            "k": k,
            "n": n,
            "cycles": cycles,
            "macs": macs,
            "utilization": utilization,
        });
        if cfg.int8_mode() {
            line["int8_mode"] = serde_json::Value::Bool(true);
        }
        println!("{line}");
    }
    Ok(())
}

/// A and B of one element type, with matching inner dimensions.
fn operands<T: matrix::Element>(args: &MatmulArgs) -> Result<(Matrix<T>, Matrix<T>), Failure> {
    let a: Matrix<T> = matrix::read(&args.a, "A").map_err(bad)?;
    let b: Matrix<T> = matrix::read(&args.b, "B").map_err(bad)?;
    matrix::check_product_shapes(&a, &b).map_err(bad)?;
    Ok((a, b))
}

/// The RTL driver for `cfg`, with a progress bar on stderr when stderr is a
/// terminal. Anywhere else (a pipe, a file, a test) stderr gets nothing more
/// than it always did: a bar redrawn in place is noise in a log.
fn driver(cfg: &MxuConfig) -> Result<MxuDriver, Failure> {
    let mut driver = MxuDriver::new(cfg).map_err(|e| broken(e.to_string()))?;
    if std::io::stderr().is_terminal() {
        driver.set_progress(Some(progress_bar()));
    }
    Ok(driver)
}

/// A progress bar over the rows the matmul streams through the array: rows
/// done and to do, the time taken and the time left. It is cleared when the
/// run ends, so the terminal keeps only the usual output.
fn progress_bar() -> ProgressReport {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} RTL matmul [{bar:30}] {human_pos}/{human_len} rows, \
             {elapsed} elapsed, {eta} left",
        )
        .expect("a valid progress template")
        .progress_chars("=> "),
    );
    Box::new(move |p: Progress| {
        bar.set_length(p.rows_total);
        bar.set_position(p.rows_done);
        if p.rows_done >= p.rows_total {
            bar.finish_and_clear();
        }
    })
}

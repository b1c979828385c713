//! The run CLI: matrix multiplications on the RTL (Verilated) or the golden model.
//!
//! ```text
//! cargo run --release -p sim -- matmul --dtype int8 --a A.npy --b B.npy --out C.npy \
//!     [--rows R --cols C] [--golden] [--stats]
//! ```

use clap::{Parser, Subcommand};
use config::{ElemType, MxuConfig};
use sim::npy::{read_matrix, write_matrix, Matrix};
use std::path::PathBuf;
use std::process::ExitCode;

/// Runs Systole's blocks on data files, in RTL simulation (Verilator) or on the golden model.
#[derive(Parser, Debug)]
#[command(name = "sim", version, about = "Runs Systole's blocks on .npy data, in RTL simulation (Verilator) or on the golden model", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// C = A x B on the MXU. A is [M,K], B is [K,N]; any M, K, N >= 1 (the tool
    /// tiles them onto the R x C array). int8 inputs give an int32 C.
    Matmul(MatmulArgs),
}

#[derive(clap::Args, Debug)]
struct MatmulArgs {
    /// Element type of A and B.
    #[arg(long, value_name = "TYPE", value_parser = parse_dtype)]
    dtype: ElemType,
    /// A: .npy matrix [M,K] (int8).
    #[arg(long, value_name = "FILE")]
    a: PathBuf,
    /// B: .npy matrix [K,N] (int8).
    #[arg(long, value_name = "FILE")]
    b: PathBuf,
    /// Where to write C: .npy matrix [M,N] (int32 for int8).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Array rows R.
    #[arg(long, value_name = "R", default_value_t = MxuConfig::DEFAULT.rows())]
    rows: u32,
    /// Array columns C.
    #[arg(long, value_name = "C", default_value_t = MxuConfig::DEFAULT.cols())]
    cols: u32,
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

/// A failure and its exit code: 2 for bad input, 1 for a failure of the tool.
struct Failure(u8, String);

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion)
                || e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            {
                print!("{e}");
                return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                    ExitCode::from(2)
                } else {
                    ExitCode::SUCCESS
                };
            }
            let text = e.to_string();
            eprintln!(
                "{} (see sim --help)",
                text.lines().next().unwrap_or("invalid arguments")
            );
            return ExitCode::from(2);
        }
    };
    let result = match cli.command {
        Command::Matmul(args) => matmul(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(code, msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(code)
        }
    }
}

fn bad(msg: impl Into<String>) -> Failure {
    Failure(2, msg.into())
}

fn matmul(args: &MatmulArgs) -> Result<(), Failure> {
    let cfg = MxuConfig::new(args.rows, args.cols, args.dtype).map_err(|e| bad(e.to_string()))?;
    let a: Matrix<i8> = read_matrix(&args.a, "A").map_err(bad)?;
    let b: Matrix<i8> = read_matrix(&args.b, "B").map_err(bad)?;
    if a.cols != b.rows {
        return Err(bad(format!(
            "shape mismatch: A is {}x{} and B is {}x{}; A's columns must equal B's rows",
            a.rows, a.cols, b.rows, b.cols
        )));
    }
    let (m, k, n) = (a.rows, a.cols, b.cols);
    let (c, cycles) = if args.golden {
        let c = golden::matmul_int8(&a.data, &b.data, m, k, n);
        (c, golden::MxuTiming::new(&cfg, m, k, n).total_cycles())
    } else {
        let mut driver = sim::mxu::MxuDriver::new(&cfg).map_err(|e| Failure(1, e.to_string()))?;
        let (c, stats) = driver
            .matmul_int8(&a.data, &b.data, (m, k, n), None)
            .map_err(|e| Failure(1, e.to_string()))?;
        (c, stats.cycles)
    };
    write_matrix(
        &args.out,
        &Matrix {
            rows: m,
            cols: n,
            data: c,
        },
    )
    .map_err(|e| Failure(1, e))?;
    if args.stats {
        let macs = (m * k * n) as u64;
        let utilization = macs as f64 / (cycles as f64 * cfg.rows() as f64 * cfg.cols() as f64);
        let line = serde_json::json!({
            "op": "matmul",
            "backend": if args.golden { "golden" } else { "rtl" },
            "dtype": cfg.dtype().name(),
            "rows": cfg.rows(),
            "cols": cfg.cols(),
            "m": m,
            "k": k,
            "n": n,
            "cycles": cycles,
            "macs": macs,
            "utilization": utilization,
        });
        println!("{line}");
    }
    Ok(())
}

//! `sim eup`: one EUP operation on every element of `.npy` arrays.
//!
//! ```text
//! sim eup --op OP --a A.npy [--b B.npy] --out Y.npy
//!     [--recurrence-stages R --mul-stages M --add-stages A] [--golden] [--stats]
//! ```
//!
//! A (and B, for div) are float32 arrays of any one shape, flattened in C
//! order and offered one element per cycle; Y has A's shape. Every bit
//! pattern goes through as it is (NaN payloads, subnormals, signed zeros):
//! the results are the contract's (docs/numerics.md, "EUP"). Everything the
//! user gave is checked before a model is built: a bad input is one error
//! line, exit code 2, and no output file.

use super::{bad, broken, Failure};
use config::{EupConfig, EupOp};
use matrix::Array;
use sim::drivers::eup::EupDriver;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct EupArgs {
    /// The operation: div (A / B), sqrt, recip (1 / A), rsqrt (1 / sqrt A),
    /// exp2, exp.
    #[arg(long, value_name = "OP")]
    op: String,
    /// A: float32 .npy array of any shape.
    #[arg(long, value_name = "FILE")]
    a: PathBuf,
    /// B: float32 .npy array of A's shape (div only).
    #[arg(long, value_name = "FILE")]
    b: Option<PathBuf>,
    /// Where to write Y, float32 of A's shape.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Pipeline registers in each digit recurrence (0..=28).
    #[arg(long, value_name = "R", allow_hyphen_values = true, default_value_t = EupConfig::DEFAULT.recurrence_stages())]
    recurrence_stages: u32,
    /// Pipeline registers in each fp32 multiply of the exp path (0..=4).
    #[arg(long, value_name = "M", allow_hyphen_values = true, default_value_t = EupConfig::DEFAULT.mul_stages())]
    mul_stages: u32,
    /// Pipeline registers in each fp32 add of the exp path (0..=6).
    #[arg(long, value_name = "A", allow_hyphen_values = true, default_value_t = EupConfig::DEFAULT.add_stages())]
    add_stages: u32,
    /// Compute with the golden model (cycles from its timing contract) instead of the RTL.
    #[arg(long)]
    golden: bool,
    /// Print one JSON line of statistics to stdout.
    #[arg(long)]
    stats: bool,
}

/// A float32 array's shape and bit patterns.
fn read_f32(path: &std::path::Path, what: &str) -> Result<(Vec<u64>, Vec<u32>), Failure> {
    let a: Array<f32> = matrix::read_array(path, what).map_err(bad)?;
    Ok((a.shape, a.data.iter().map(|x| x.to_bits()).collect()))
}

pub fn run(args: &EupArgs) -> Result<(), Failure> {
    let op: EupOp = args.op.parse().map_err(|e| bad(format!("--op: {e}")))?;
    let cfg = EupConfig::new(args.recurrence_stages, args.mul_stages, args.add_stages)
        .map_err(|e| bad(e.to_string()))?;
    let (shape, a) = read_f32(&args.a, "A")?;
    let b = match (&args.b, op.binary()) {
        (Some(path), true) => {
            let (b_shape, b) = read_f32(path, "B")?;
            if b_shape != shape {
                return Err(bad(format!(
                    "B: {} has shape {b_shape:?}; div takes B of A's shape {shape:?}",
                    path.display()
                )));
            }
            b
        }
        (None, true) => return Err(bad("--op div needs --b (the divisors)")),
        (Some(_), false) => {
            return Err(bad(format!(
                "--op {op} takes one operand; --b is read by div only"
            )))
        }
        (None, false) => vec![0; a.len()],
    };
    let (y, cycles) = if args.golden {
        // The golden model's cycle by cycle outputs: its results and timing.
        let offered: Vec<_> = a
            .iter()
            .zip(&b)
            .map(|(&a, &b)| {
                Some(golden::eup::Offered {
                    code: op.code(),
                    a,
                    b,
                })
            })
            .collect();
        let out = golden::eup::outputs(&cfg, &offered);
        let cycles = out.len() as u64;
        (out.into_iter().flatten().collect(), cycles)
    } else {
        let mut d = EupDriver::new(&cfg).map_err(|e| broken(e.to_string()))?;
        let r = d
            .run(op.code(), &a, &b, None)
            .map_err(|e| broken(e.to_string()))?;
        (r.results, r.cycles)
    };
    let out = Array {
        shape,
        data: y.iter().map(|&bits| f32::from_bits(bits)).collect(),
    };
    matrix::write_array(&args.out, &out).map_err(broken)?;
    if args.stats {
        println!(
            "{{\"op\":\"{op}\",\"backend\":\"{}\",\"elements\":{},\"cycles\":{cycles},\
             \"latency\":{},\"results_per_cycle\":{},\"recurrence_stages\":{},\
             \"mul_stages\":{},\"add_stages\":{}}}",
            if args.golden { "golden" } else { "rtl" },
            a.len(),
            cfg.latency(),
            a.len() as f64 / cycles as f64,
            cfg.recurrence_stages(),
            cfg.mul_stages(),
            cfg.add_stages()
        );
    }
    Ok(())
}

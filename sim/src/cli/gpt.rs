//! `sim gpt`: greedy generation from a transformer's model folder on
//! TensorCore v2.
//!
//! ```text
//! sim gpt --model DIR --prompt P.npy --steps N --out T.npy [--logits L.npy]
//!     [--rows R --cols C] [--lanes L --sublanes S] [--golden] [--stats]
//! ```
//!
//! The model folder is `compiler::gpt`'s format. P is int32 \[n\] (n >= 1,
//! every id below `vocab`, n + N - 1 <= `context`); T is int32 \[N\], the
//! generated tokens; L is float32 \[N, vocab\], the logits each was chosen
//! from. The compiler turns the model into a setup program and one program
//! per token step for a core of an R x R MXU and a lanes x sublanes VPU
//! (whose unified buffer and weight memory are sized to the model); the
//! RTL (or, with `--golden`, the golden machine and the cycle model) runs
//! them, and the host takes each next token from the logits (the first
//! largest, NaNs skipped). The bits depend on R and W = lanes x sublanes
//! (`docs/numerics.md`), never on the backend. Everything the user gave is
//! checked before a model is built: a bad input is one error line, exit
//! code 2, and no output file.

use super::{bad, broken, Failure};
use compiler::tensorcore2::GptProgram;
use config::GptModel;
use matrix::Array;
use sim::drivers::tensorcore2::{
    generate_golden, generate_rtl, sized_gpt_program, GptRun, RunStats,
};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct GptArgs {
    /// The model folder (config.toml and the .npy parameters).
    #[arg(long, value_name = "DIR")]
    model: PathBuf,
    /// P: the prompt, int32 [n].
    #[arg(long, value_name = "FILE")]
    prompt: PathBuf,
    /// N: tokens to generate (n + N - 1 positions must fit the context).
    #[arg(long, value_name = "N")]
    steps: usize,
    /// Where to write T, int32 [N].
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Where to write L, float32 [N, vocab].
    #[arg(long, value_name = "FILE")]
    logits: Option<PathBuf>,
    /// MXU rows R, 1..=16 (the bf16 matmuls' sum order depends on it).
    #[arg(
        long,
        value_name = "R",
        default_value_t = 8,
        allow_hyphen_values = true
    )]
    rows: i64,
    /// MXU columns C (equal to R) [default: R].
    #[arg(long, value_name = "C", allow_hyphen_values = true)]
    cols: Option<i64>,
    /// VPU lanes (a power of two; lanes x sublanes <= 128).
    #[arg(
        long,
        value_name = "L",
        default_value_t = 8,
        allow_hyphen_values = true
    )]
    lanes: i64,
    /// VPU sublanes (a power of two; the fp32 sums' order depends on W = lanes x sublanes).
    #[arg(
        long,
        value_name = "S",
        default_value_t = 1,
        allow_hyphen_values = true
    )]
    sublanes: i64,
    /// Run on the golden machine (cycles from the cycle model) instead of the RTL.
    #[arg(long)]
    golden: bool,
    /// Print one JSON line of statistics to stdout.
    #[arg(long)]
    stats: bool,
}

/// The largest MXU and VPU vector `sim gpt` takes.
const MAX_ROWS: i64 = 16;
const MAX_VECTOR: i64 = 128;

/// The sizes the user chose, checked.
fn shape(args: &GptArgs) -> Result<(u32, u32, u32), Failure> {
    if !(1..=MAX_ROWS).contains(&args.rows) {
        return Err(bad(format!(
            "--rows must be between 1 and {MAX_ROWS}, got {}",
            args.rows
        )));
    }
    if let Some(c) = args.cols {
        if c != args.rows {
            return Err(bad(format!(
                "--cols must equal --rows (the MXU is square), got {} x {c}",
                args.rows
            )));
        }
    }
    for (flag, v) in [("--lanes", args.lanes), ("--sublanes", args.sublanes)] {
        if v < 1 || !(v as u64).is_power_of_two() || v > MAX_VECTOR {
            return Err(bad(format!(
                "{flag} must be a power of two between 1 and {MAX_VECTOR}, got {v}"
            )));
        }
    }
    if args.lanes * args.sublanes > MAX_VECTOR {
        return Err(bad(format!(
            "--lanes x --sublanes must be at most {MAX_VECTOR} elements, got {} x {} = {}",
            args.lanes,
            args.sublanes,
            args.lanes * args.sublanes
        )));
    }
    if args.steps == 0 {
        return Err(bad("--steps must be at least 1"));
    }
    Ok((args.rows as u32, args.lanes as u32, args.sublanes as u32))
}

/// The prompt's token ids, checked against the model.
fn read_prompt(args: &GptArgs, model: &GptModel) -> Result<Vec<u32>, Failure> {
    let p: Array<i32> = matrix::read_array(&args.prompt, "P").map_err(bad)?;
    if p.shape.len() != 1 || p.data.is_empty() {
        return Err(bad(format!(
            "P: {} has shape {:?}, expected int32 [n] with n >= 1",
            args.prompt.display(),
            p.shape
        )));
    }
    if let Some((i, &t)) = p.data.iter().enumerate().find(|&(_, &t)| t < 0) {
        return Err(bad(format!("P: token {i} is {t}, not a token id")));
    }
    let ids: Vec<u32> = p.data.iter().map(|&t| t as u32).collect();
    let dims = model.dims;
    config::gpt::check_generation(dims.vocab(), dims.context(), &ids, args.steps)
        .map_err(|e| bad(format!("P: {e}")))?;
    Ok(ids)
}

pub fn run(args: &GptArgs) -> Result<(), Failure> {
    let sizes = shape(args)?;
    let model = compiler::gpt::load_gpt(&args.model).map_err(|e| bad(e.to_string()))?;
    let prompt = read_prompt(args, &model)?;
    let (r, l, s) = sizes;
    let program = sized_gpt_program(&model, r, l, s).map_err(bad)?;
    let measured = if args.golden {
        generate_golden(&program, &prompt, args.steps)
    } else {
        generate_rtl(&program, &prompt, args.steps)
    }
    .map_err(broken)?;
    let (tokens, logits) = (&measured.tokens, &measured.logits);
    let vocab = model.dims.vocab();
    // Everything computed: now the files.
    let t = Array {
        shape: vec![tokens.len() as u64],
        data: tokens.iter().map(|&t| t as i32).collect(),
    };
    matrix::write_array(&args.out, &t).map_err(broken)?;
    if let Some(path) = &args.logits {
        let l = Array {
            shape: vec![logits.len() as u64, vocab as u64],
            data: logits
                .iter()
                .flatten()
                .map(|&b| f32::from_bits(b))
                .collect(),
        };
        matrix::write_array(path, &l).map_err(broken)?;
    }
    if args.stats {
        print_stats(args, &program, &model, &measured);
    }
    Ok(())
}

fn print_stats(args: &GptArgs, program: &GptProgram, model: &GptModel, m: &GptRun) {
    let cfg = program.config();
    let sum = |f: fn(&RunStats) -> u64| m.steps.iter().map(f).sum::<u64>();
    let cycles = sum(|s| s.cycles);
    let steps = m.steps.len().max(1) as u64;
    let frac = |x: u64| x as f64 / cycles.max(1) as f64;
    let params = model.dims.params();
    let per_token = cycles as f64 / steps as f64;
    println!(
        "{{\"backend\":\"{}\",\"rows\":{},\"cols\":{},\"lanes\":{},\"sublanes\":{},\
         \"steps_run\":{},\"tokens\":{},\"cycles\":{cycles},\"cycles_per_token\":{per_token:.1},\
         \"setup_cycles\":{},\"mxu_busy\":{:.4},\"vpu_busy\":{:.4},\"eup_busy\":{:.4},\
         \"mover\":{:.4},\"wait\":{:.4},\"instructions_per_token\":{:.1},\"params\":{params},\
         \"cycles_per_token_per_param\":{:.4},\"vmem_words\":{},\"weight_rows\":{}}}",
        if args.golden { "golden" } else { "rtl" },
        cfg.rows(),
        cfg.cols(),
        cfg.lanes(),
        cfg.sublanes(),
        m.steps.len(),
        args.steps,
        m.setup.cycles,
        frac(sum(|s| s.mxu_busy)),
        frac(sum(|s| s.vpu_busy)),
        frac(sum(|s| s.eup_ops)),
        frac(sum(|s| s.mover)),
        frac(sum(|s| s.wait)),
        sum(|s| s.instructions) as f64 / steps as f64,
        per_token / params as f64,
        cfg.vmem_words(),
        cfg.weight_rows(),
    );
}

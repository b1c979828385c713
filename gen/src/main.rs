//! `gen`: writes the Verilog of a Systole configuration.
//!
//! `cargo run -p gen` writes the default configuration (an int8 8x8 MXU) to
//! `build/verilog/`; see `--help` for the flags.

use clap::Parser;
use config::{ElemType, MxuConfig};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Elaborates the Systole MXU and writes synthesizable Verilog-2005: one file per
/// module, a Verilator lint waiver file (waivers.vlt) and a file list (files.f).
#[derive(Parser, Debug)]
#[command(name = "gen", version, about, long_about = None)]
struct Args {
    /// Output folder (created if missing).
    #[arg(long, value_name = "DIR", default_value = "build/verilog")]
    out: PathBuf,
    /// Array rows R (the K direction). Overrides the config file.
    #[arg(long, value_name = "R")]
    rows: Option<u32>,
    /// Array columns C (the N direction). Overrides the config file.
    #[arg(long, value_name = "C")]
    cols: Option<u32>,
    /// Element type: int8 or bf16. Overrides the config file.
    #[arg(long, value_name = "TYPE", value_parser = parse_dtype)]
    dtype: Option<ElemType>,
    /// Accumulator rows (a power of two, 2..=65536). Overrides the config file.
    #[arg(long, value_name = "N")]
    acc_rows: Option<u32>,
    /// A saved configuration (TOML with `rows`, `cols`, `dtype`, `acc_rows`); flags override it.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

fn parse_dtype(s: &str) -> Result<ElemType, String> {
    s.parse::<ElemType>().map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let args = match Args::try_parse() {
        Ok(a) => a,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                print!("{e}");
                return ExitCode::SUCCESS;
            }
            // One line: clap's first line names the problem.
            let text = e.to_string();
            let first = text.lines().next().unwrap_or("invalid arguments");
            eprintln!("{first} (see gen --help)");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("error: {msg}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &Args) -> Result<(), String> {
    let base = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read config {}: {e}", path.display()))?;
            MxuConfig::from_toml(&text).map_err(|e| format!("config {}: {e}", path.display()))?
        }
        None => MxuConfig::DEFAULT,
    };
    let cfg = MxuConfig::with_acc_rows(
        args.rows.unwrap_or(base.rows()),
        args.cols.unwrap_or(base.cols()),
        args.dtype.unwrap_or(base.dtype()),
        args.acc_rows.unwrap_or(base.acc_rows()),
    )
    .map_err(|e| e.to_string())?;

    let start = Instant::now();
    let generated = gen::generate(&cfg)?;
    let paths = gen::write_files(&args.out, &generated.files)?;
    let elapsed = start.elapsed();

    println!("{}: MXU {cfg}", gen::generator_id());
    let params: Vec<String> = cfg
        .params()
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    println!("parameters: {}", params.join(" "));
    println!("top module: {}", generated.top);
    println!("wrote {}:", args.out.display());
    let (mut lines, mut bytes) = (0usize, 0usize);
    for (f, p) in generated.files.iter().zip(&paths) {
        let n = f.text.lines().count();
        lines += n;
        bytes += f.text.len();
        let what = match &f.module {
            Some(m) => format!("module {m}"),
            None => String::new(),
        };
        println!("  {:<28} {:>8} lines  {}", p.display(), n, what);
    }
    println!(
        "{} modules, {} files, {} lines, {} bytes in {:.2} s",
        generated.modules,
        generated.files.len(),
        lines,
        bytes,
        elapsed.as_secs_f64()
    );
    Ok(())
}

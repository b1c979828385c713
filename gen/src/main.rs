//! `gen`: writes the Verilog of a Systole configuration.
//!
//! `cargo run -p gen` writes the default configuration (an int8 8x8 MXU) to
//! `build/verilog/`; `cargo run -p gen -- --board icebreaker` writes the UART
//! bridge, the board top and its constraints to `build/icebreaker/`; see
//! `--help` for the flags.

use board::Board;
use clap::Parser;
use config::{ElemType, MxuConfig};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Elaborates the Systole MXU and writes synthesizable Verilog-2005: one file per
/// module, a Verilator lint waiver file (waivers.vlt) and a file list (files.f).
/// With --board, the MXU inside the UART host bridge, the board's top module and
/// its constraint file.
#[derive(Parser, Debug)]
#[command(name = "gen", version, about, long_about = None)]
struct Args {
    /// Output folder (created if missing) [default: build/verilog, or
    /// build/<BOARD> with --board].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Write a board build: icebreaker (iCE40 UP5K) or ulx3s (ECP5-85F). The
    /// array defaults to the board's (flags and --config override it).
    #[arg(long, value_name = "BOARD", value_parser = parse_board)]
    board: Option<Board>,
    /// UART speed of a board build [default: 115200].
    #[arg(long, value_name = "BAUD")]
    baud: Option<u32>,
    /// Rows of a board build's activation buffer (a power of two)
    /// [default: the board's].
    #[arg(long, value_name = "N")]
    act_rows: Option<u32>,
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

fn parse_board(s: &str) -> Result<Board, String> {
    s.parse::<Board>()
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
    if args.board.is_none() {
        for (flag, given) in [
            ("--baud", args.baud.is_some()),
            ("--act-rows", args.act_rows.is_some()),
        ] {
            if given {
                return Err(format!("{flag} applies to board builds only (add --board)"));
            }
        }
    }
    let base = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read config {}: {e}", path.display()))?;
            let cfg = MxuConfig::from_toml(&text)
                .map_err(|e| format!("config {}: {e}", path.display()))?;
            match args.board {
                // Keys the file leaves out take the board's values.
                Some(board) => {
                    let keys: toml::Table = text.parse().unwrap_or_default();
                    let d = board.default_mxu();
                    let has = |k: &str| keys.contains_key(k);
                    MxuConfig::with_acc_rows(
                        if has("rows") { cfg.rows() } else { d.rows() },
                        if has("cols") { cfg.cols() } else { d.cols() },
                        if has("dtype") { cfg.dtype() } else { d.dtype() },
                        if has("acc_rows") {
                            cfg.acc_rows()
                        } else {
                            d.acc_rows()
                        },
                    )
                    .map_err(|e| format!("config {}: {e}", path.display()))?
                }
                None => cfg,
            }
        }
        None => args.board.map_or(MxuConfig::DEFAULT, |b| b.default_mxu()),
    };
    let cfg = MxuConfig::with_acc_rows(
        args.rows.unwrap_or(base.rows()),
        args.cols.unwrap_or(base.cols()),
        args.dtype.unwrap_or(base.dtype()),
        args.acc_rows.unwrap_or(base.acc_rows()),
    )
    .map_err(|e| e.to_string())?;

    let start = Instant::now();
    let (generated, params, out) = match args.board {
        None => {
            let generated = gen::generate(&cfg)?;
            let out = args.out.clone().unwrap_or_else(|| "build/verilog".into());
            println!("{}: MXU {cfg}", gen::generator_id());
            (generated, cfg.params(), out)
        }
        Some(board) => {
            let (generated, bridge, baud) =
                gen::generate_board(board, &cfg, args.act_rows, args.baud)?;
            let out = args
                .out
                .clone()
                .unwrap_or_else(|| PathBuf::from("build").join(board.name()));
            println!(
                "{}: {} board, MXU {cfg}, {} activation rows, {baud} baud ({} clocks per bit)",
                gen::generator_id(),
                board,
                bridge.act_rows(),
                bridge.clocks_per_bit()
            );
            (generated, board::board_params(board, &bridge, baud), out)
        }
    };
    let paths = gen::write_files(&out, &generated.files)?;
    let elapsed = start.elapsed();

    let params: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    println!("parameters: {}", params.join(" "));
    println!("top module: {}", generated.top);
    println!("wrote {}:", out.display());
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

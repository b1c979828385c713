//! `gen`: writes the Verilog of a Systole configuration.
//!
//! `cargo run -p gen` writes the default configuration (an int8 8x8 MXU) to
//! `build/verilog/`; `cargo run -p gen -- --block NAME` another block;
//! `cargo run -p gen -- --board icebreaker` writes the UART bridge, the board
//! top and its constraints to `build/icebreaker/`; `--preset NAME` starts from
//! one of the block's presets; `--block list` lists every block with its
//! parameters and presets, `--help` the flags.
//!
//! The flags of a block's parameters are not written here: they are built
//! from the block's parameter list ([`hw::Block::params`]), so the command
//! line knows the block only once `--block` has been read. `main` therefore
//! looks for `--block` first, then builds the command for that block. A
//! configuration is assembled as one TOML table, each source overriding the
//! one before: the block's defaults (or the board's array, with `--board`),
//! the preset, the `--config` file, the flags. The block validates the result.

use board::Board;
use clap::{Arg, ArgMatches, CommandFactory as _, FromArgMatches as _, Parser};
use hw::{AnyBlock, Param, ParamKind};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// The flags every block has.
#[derive(Parser, Debug)]
#[command(name = "gen", version, about, long_about = None)]
struct Args {
    /// The block to generate, or `list` to list every block with its
    /// parameters [default: mxu].
    #[arg(long, value_name = "NAME")]
    block: Option<String>,
    /// Output folder (created if missing) [default: build/verilog, or
    /// build/<BOARD> with --board, build/<BOARD>-tensorcore with --board and
    /// --block tensorcore].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Write a board build of the MXU: icebreaker (iCE40 UP5K), ulx3s
    /// (ECP5-85F), tangnano20k (Gowin GW2AR-18) or tangnano9k (Gowin
    /// GW1NR-9). The array defaults to the board's (flags and --config
    /// override it). With --block tensorcore, a board build of the
    /// TensorCore (ulx3s and tangnano20k).
    #[arg(long, value_name = "BOARD", value_parser = parse_board)]
    board: Option<Board>,
    /// UART speed of a board build [default: 115200].
    #[arg(long, value_name = "BAUD")]
    baud: Option<u32>,
    /// Core clock of a board build, MHz: the board's PLL makes it from the
    /// oscillator (the nearest it can, within 1%), and the bridge and the
    /// core run on it [default: the board build's, the highest that closes].
    #[arg(long, value_name = "MHZ")]
    core_mhz: Option<f64>,
    /// Rows of a board build's activation buffer (a power of two)
    /// [default: the board's].
    #[arg(long, value_name = "N")]
    act_rows: Option<u32>,
    /// A saved configuration of the block (TOML; its keys are the
    /// parameters' names). The help text lists them.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Start from one of the block's presets (`gen --block list` shows each
    /// with its values); --config and the flags override it. With --board
    /// the preset replaces the board's default array.
    #[arg(long, value_name = "NAME")]
    preset: Option<String>,
}

fn parse_board(s: &str) -> Result<Board, String> {
    s.parse::<Board>()
}

/// What `--block` asks for.
enum Choice {
    List,
    Block(&'static dyn AnyBlock),
}

fn main() -> ExitCode {
    // A closed stdout pipe (`... | head`) ends the tool quietly, as it ends
    // other command-line tools, instead of a panic in `println!`.
    #[cfg(unix)]
    // SAFETY: restoring a signal's default action before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let argv: Vec<OsString> = std::env::args_os().collect();
    let choice = match block_arg(&argv).as_deref() {
        Some("list") => Choice::List,
        name => match gen::find_block(name.unwrap_or(gen::DEFAULT_BLOCK)) {
            Ok(b) => Choice::Block(b),
            Err(e) => {
                eprintln!("error: {e}; see gen --block list");
                return ExitCode::from(2);
            }
        },
    };
    let block = match choice {
        Choice::List => gen::find_block(gen::DEFAULT_BLOCK).expect("the default block exists"),
        Choice::Block(b) => b,
    };
    let matches = match command(block).try_get_matches_from(&argv) {
        Ok(m) => m,
        Err(e) => return gen::exit_on_cli_error(&e, "gen"),
    };
    if let Choice::List = choice {
        print!("{}", block_list());
        return ExitCode::SUCCESS;
    }
    let args = Args::from_arg_matches(&matches).expect("the command is built from Args");
    match run(&args, block, &matches) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("error: {msg}");
            ExitCode::from(2)
        }
    }
}

/// The value of `--block NAME` or `--block=NAME`, read before the command
/// exists because the block decides the command's flags. A value clap would
/// refuse (a missing one, a second `--block`) is left for clap to report.
fn block_arg(argv: &[OsString]) -> Option<String> {
    let mut it = argv.iter().skip(1).map(|a| a.to_string_lossy());
    while let Some(arg) = it.next() {
        if arg == "--" {
            break;
        }
        if arg == "--block" {
            return it.next().filter(|v| !v.starts_with('-')).map(String::from);
        }
        if let Some(v) = arg.strip_prefix("--block=") {
            return Some(v.to_string());
        }
    }
    None
}

/// The command line for `block`: the common flags and one per parameter.
fn command(block: &dyn AnyBlock) -> clap::Command {
    let keys: Vec<String> = block
        .params()
        .iter()
        .map(|p| format!("`{}`", p.name))
        .collect();
    let cmd = Args::command()
        .mut_arg("config", |a| {
            a.help(format!(
                "A saved configuration (TOML with {}); keys it leaves out take the defaults, \
                 flags override it",
                keys.join(", ")
            ))
        })
        .after_help(format!(
            "Block: {} ({}). `gen --block list` lists every block.",
            block.name(),
            block.description()
        ));
    block
        .params()
        .iter()
        .fold(cmd, |cmd, p| cmd.arg(param_arg(block, p)))
}

/// The flag of one block parameter. Values are only parsed here (an integer,
/// or one of the names); the block's configuration checks the range, so a
/// flag and a `--config` key get the same message.
fn param_arg(block: &dyn AnyBlock, p: &Param) -> Arg {
    let default = block.default_text(p).unwrap_or_else(|| "none".into());
    let arg = Arg::new(p.name)
        .long(p.flag())
        .value_name(p.value_name)
        .help(format!(
            "{}: {}, default {default}. Overrides the config file",
            p.help,
            p.kind.allowed()
        ));
    match &p.kind {
        ParamKind::Int { .. } | ParamKind::PowerOfTwo { .. } => {
            arg.value_parser(clap::value_parser!(u64).range(..=i64::MAX as u64))
        }
        ParamKind::Choice(names) => {
            let names = names.clone();
            arg.value_parser(move |s: &str| -> Result<String, String> {
                if names.contains(&s) {
                    Ok(s.to_string())
                } else {
                    Err(format!("expected one of: {}", names.join(", ")))
                }
            })
        }
    }
}

/// The flags given for `block`'s parameters, as TOML values.
fn param_flags(block: &dyn AnyBlock, matches: &ArgMatches) -> toml::Table {
    let mut table = toml::Table::new();
    for p in block.params() {
        let value = if p.kind.is_integer() {
            matches
                .get_one::<u64>(p.name)
                .map(|&v| toml::Value::Integer(v as i64))
        } else {
            matches
                .get_one::<String>(p.name)
                .map(|v| toml::Value::String(v.clone()))
        };
        if let Some(v) = value {
            table.insert(p.name.to_string(), v);
        }
    }
    table
}

/// `--block list`: every block, its parameters and its presets.
fn block_list() -> String {
    let mut out = String::new();
    for block in gen::registry() {
        let default = if block.name() == gen::DEFAULT_BLOCK {
            " (default)"
        } else {
            ""
        };
        out.push_str(&format!(
            "{}{default}: {}\n",
            block.name(),
            block.description()
        ));
        let params = block.params();
        let usage: Vec<String> = params
            .iter()
            .map(|p| format!("--{} <{}>", p.flag(), p.value_name))
            .collect();
        let width = usage.iter().map(String::len).max().unwrap_or(0);
        for (p, usage) in params.iter().zip(&usage) {
            let default = block.default_text(p).unwrap_or_else(|| "none".into());
            out.push_str(&format!(
                "  {usage:<width$}  {}; default {default}. {}\n",
                p.kind.allowed(),
                p.help
            ));
        }
        out.push_str("  presets (--preset NAME):\n");
        for preset in block.presets() {
            out.push_str(&format!(
                "    {}: {}\n",
                preset.name,
                preset_values(block, &preset.config.to_table())
            ));
        }
    }
    out
}

/// Every parameter of `block` with its value in `table`, as `name=value`
/// pairs in the block's parameter order (names unquoted, as on a command
/// line): `rows=4 cols=4 dtype=int8 acc_rows=256`.
fn preset_values(block: &dyn AnyBlock, table: &toml::Table) -> String {
    block
        .params()
        .iter()
        .filter_map(|p| {
            let value = match table.get(p.name)? {
                toml::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            Some(format!("{}={value}", p.name))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn run(args: &Args, block: &dyn AnyBlock, matches: &ArgMatches) -> Result<(), String> {
    let tc_board = block.name() == hw::Block::name(&tensorcore::TensorCore);
    match args.board {
        Some(_) if block.name() != hw::Block::name(&mxu::Mxu) && !tc_board => {
            return Err(format!(
                "--board builds the mxu or the tensorcore block, not {}",
                block.name()
            ));
        }
        Some(board) if tc_board => {
            board.tensorcore_defaults()?;
            if args.act_rows.is_some() {
                return Err(
                    "--act-rows applies to MXU board builds (the TensorCore's buffer is --ub-rows)"
                        .into(),
                );
            }
        }
        Some(_) => {}
        None => {
            for (flag, given) in [
                ("--baud", args.baud.is_some()),
                ("--core-mhz", args.core_mhz.is_some()),
                ("--act-rows", args.act_rows.is_some()),
            ] {
                if given {
                    return Err(format!("{flag} applies to board builds only (add --board)"));
                }
            }
        }
    }
    // Defaults (or the board's array), then the preset, the file, the flags.
    let mut table = match args.board {
        Some(board) if tc_board => match toml::Value::try_from(board.tensorcore_defaults()?.core) {
            Ok(toml::Value::Table(t)) => t,
            _ => unreachable!("a TensorCore configuration serialises as a table"),
        },
        Some(board) => match toml::Value::try_from(board.default_mxu()) {
            Ok(toml::Value::Table(t)) => t,
            _ => unreachable!("an MXU configuration serialises as a table"),
        },
        None => block.default_table(),
    };
    if let Some(name) = &args.preset {
        table.extend(gen::preset_table(block, name)?);
    }
    if let Some(path) = &args.config {
        table.extend(gen::read_config(path)?);
        // The file on its own must be valid, whatever the flags change.
        block
            .configure(&table)
            .map_err(|e| format!("config {}: {e}", path.display()))?;
    }
    table.extend(param_flags(block, matches));
    let configured = block.configure(&table)?;

    let start = Instant::now();
    let (generated, params, out) = match args.board {
        None => {
            let generated = gen::generate_configured(configured.as_ref())?;
            let out = args.out.clone().unwrap_or_else(|| "build/verilog".into());
            println!("{}: {}", gen::generator_id(), configured.describe());
            (generated, configured.design_params(), out)
        }
        Some(board) if tc_board => {
            let cfg = configured
                .config_any()
                .downcast_ref::<config::TensorCoreConfig>()
                .expect("the tensorcore block is configured by a TensorCoreConfig");
            let (generated, made) = gen::generate_tc_board(board, cfg, args.core_mhz, args.baud)?;
            let (bridge, clock, baud) = (made.bridge, made.clock, made.baud);
            let out = args.out.clone().unwrap_or_else(|| {
                PathBuf::from("build").join(format!("{}-tensorcore", board.name()))
            });
            println!(
                "{}: {} board, TensorCore {}, {} program words, {} input and {} output rows, core clock {} MHz, {baud} baud ({} clocks per bit)",
                gen::generator_id(),
                board,
                cfg,
                bridge.program_words(),
                bridge.input_rows(),
                bridge.output_rows(),
                clock.mhz_text(),
                bridge.clocks_per_bit()
            );
            println!("PLL: {}", clock.pll().describe());
            (
                generated,
                board::tc_board_params(&clock, &bridge, baud),
                out,
            )
        }
        Some(board) => {
            let cfg = configured
                .config_any()
                .downcast_ref::<config::MxuConfig>()
                .expect("the mxu block is configured by an MxuConfig");
            let (generated, made) =
                gen::generate_board(board, cfg, args.act_rows, args.core_mhz, args.baud)?;
            let (bridge, clock, baud) = (made.bridge, made.clock, made.baud);
            let out = args
                .out
                .clone()
                .unwrap_or_else(|| PathBuf::from("build").join(board.name()));
            println!(
                "{}: {} board, MXU {cfg}, {} activation rows, core clock {} MHz, {baud} baud ({} clocks per bit)",
                gen::generator_id(),
                board,
                bridge.act_rows(),
                clock.mhz_text(),
                bridge.clocks_per_bit()
            );
            println!("PLL: {}", clock.pll().describe());
            (generated, board::board_params(&clock, &bridge, baud), out)
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

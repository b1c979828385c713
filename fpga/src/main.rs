//! `fpga report`: every preset through every FPGA flow, plus the largest int8
//! MXU, the largest VPUs and the SparseCore with the most tiles per part; writes `report.json` and `report.md`.
//! `fpga flow`: one configuration of one block on chosen parts (what a user
//! sizing a design for a board runs), with the report's flows and fit rules.

use clap::{Args, Parser, Subcommand};
use fpga::flow::{self, FlowEnv};
use fpga::parts::{Part, PARTS};
use fpga::report::Report;
use fpga::runner::Runner;
use fpga::tools;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "fpga",
    about = "FPGA flows and resource/Fmax reports for Systole's presets"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Synthesise (and place and route) every preset for every part; write report.json and report.md.
    Report(ReportArgs),
    /// Synthesise one configuration of one block (placed and routed with --pnr where the family has it) on the given parts; print its table row per part.
    Flow(FlowArgs),
}

#[derive(Args)]
struct FlowArgs {
    /// The block (a `gen --block` name, e.g. vpu).
    #[arg(long)]
    block: String,
    /// A saved configuration of the block (TOML, as `gen --config` reads); keys it leaves out take the defaults.
    #[arg(long)]
    config: Option<PathBuf>,
    /// One parameter of the configuration, e.g. `lanes=16` or `units=int32` (repeatable; overrides --config).
    #[arg(long = "param", value_name = "KEY=VALUE")]
    params: Vec<String>,
    /// The parts (comma-separated names, e.g. xc7a100t,ecp5-85f).
    #[arg(long, value_delimiter = ',', required = true)]
    parts: Vec<String>,
    /// Place and route too (iCE40 and ECP5; the 7-series parts have synthesis estimates only).
    #[arg(long)]
    pnr: bool,
    /// Output folder (the flow's files go in <out>/<design>/<part>/).
    #[arg(long, default_value = "build/fpga")]
    out: PathBuf,
    /// Kill a tool run after this many seconds.
    #[arg(long, default_value_t = 1800)]
    tool_timeout: u64,
    /// Rerun the flow even if a finished run of the same inputs and tools is in the output folder.
    #[arg(long)]
    fresh: bool,
}

#[derive(Args)]
struct ReportArgs {
    /// A small subset: each block's first FPGA preset (int8 4x4, VPU full 8x1,
    /// SparseCore t1-d8) on the smallest part of each family, no search.
    #[arg(long)]
    quick: bool,
    /// Output folder (each flow's files go in <out>/<design>/<part>/).
    #[arg(long, default_value = "build/fpga")]
    out: PathBuf,
    /// Tools run at once (default: the number of cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// Only these parts (comma-separated names, e.g. ice40-up5k,xc7a35t).
    #[arg(long, value_delimiter = ',')]
    parts: Vec<String>,
    /// Skip the searches for the largest int8 MXU, VPUs and SparseCore per part.
    #[arg(long)]
    no_search: bool,
    /// Only these blocks' presets and searches (comma-separated registry
    /// names, e.g. vpu); default: every block.
    #[arg(long, value_delimiter = ',')]
    blocks: Vec<String>,
    /// Kill a tool run after this many seconds.
    #[arg(long, default_value_t = 1800)]
    tool_timeout: u64,
    /// Stop trying new sizes in the search after this many seconds of the
    /// run; the report then gives the largest size confirmed so far.
    #[arg(long, default_value_t = 4800)]
    search_deadline: u64,
    /// Accumulator rows of every MXU (a power of two).
    #[arg(long, default_value_t = fpga::ACC_ROWS)]
    acc_rows: u32,
    /// Rerun every flow, even those whose inputs and tools are unchanged
    /// since a finished run in the same output folder.
    #[arg(long)]
    fresh: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Cmd::Report(args) => report(&args),
        Cmd::Flow(args) => flow(&args),
    }
    .map_or_else(
        |e| {
            eprintln!("error: {e}");
            ExitCode::from(2)
        },
        |()| ExitCode::SUCCESS,
    )
}

/// The parts called `names`; the error names the known ones.
fn parts_named(names: &[String]) -> Result<Vec<&'static Part>, String> {
    names
        .iter()
        .map(|n| {
            fpga::parts::part(n).ok_or_else(|| {
                let all: Vec<_> = PARTS.iter().map(|p| p.name).collect();
                format!("unknown part '{n}' (expected one of: {})", all.join(", "))
            })
        })
        .collect()
}

/// Each tool's version line, by program name, for the tools `parts` need.
fn tool_versions(parts: &[&'static Part]) -> std::collections::BTreeMap<String, String> {
    flow::tools_for(parts)
        .into_iter()
        .map(|t| {
            (
                t.program().to_string(),
                tools::version(t).unwrap_or_else(|| "not found".into()),
            )
        })
        .collect()
}

/// `KEY=VALUE` as a TOML entry: the value as TOML (`16`, `true`), else as a string (`int32`).
fn param_entry(text: &str) -> Result<(String, toml::Value), String> {
    let (key, value) = text
        .split_once('=')
        .filter(|(k, v)| !k.trim().is_empty() && !v.trim().is_empty())
        .ok_or_else(|| format!("--param '{text}': expected KEY=VALUE, e.g. lanes=16"))?;
    let value = value.trim();
    let parsed = format!("v = {value}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(value.to_string()));
    Ok((key.trim().to_string(), parsed))
}

fn flow(args: &FlowArgs) -> Result<(), String> {
    let block = gen::find_block(&args.block)?;
    let mut table = block.default_table();
    if let Some(path) = &args.config {
        table.extend(gen::read_config(path)?);
    }
    for p in &args.params {
        let (key, value) = param_entry(p)?;
        table.insert(key, value);
    }
    let configured = block.configure(&table)?;
    let design = fpga::flow_design(block.name(), configured.as_ref()).ok_or_else(|| {
        format!(
            "the FPGA flows do not take the {} block (its nodes are `torus-node`)",
            block.name()
        )
    })?;
    let parts = parts_named(&args.parts)?;
    tools::ensure_installed(&flow::tools_for(&parts))?;
    std::fs::create_dir_all(&args.out)
        .map_err(|e| format!("cannot create {}: {e}", args.out.display()))?;
    let mut env = FlowEnv::new(args.out.clone(), 1, Duration::from_secs(args.tool_timeout));
    env.reuse = !args.fresh;
    env.tool_versions = tool_versions(&parts);
    let runner = Runner::new(env);
    println!(
        "fpga flow: {} {} on {}",
        block.name(),
        configured.describe(),
        args.parts.join(", ")
    );
    let results: Vec<_> = parts
        .iter()
        .map(|part| runner.flow(design, part, args.pnr))
        .collect();
    println!("\n{}", fpga::report::flow_table(&results, true));
    match results.iter().find_map(|r| r.error.as_ref()) {
        Some(e) => Err(format!("a flow failed: {e}")),
        None => Ok(()),
    }
}

fn report(args: &ReportArgs) -> Result<(), String> {
    let ReportArgs {
        quick,
        ref out,
        jobs,
        parts: ref part_names,
        no_search,
        ref blocks,
        tool_timeout,
        search_deadline,
        acc_rows,
        fresh,
    } = *args;
    let parts: Vec<&'static Part> = if part_names.is_empty() && quick {
        fpga::QUICK_PARTS
            .iter()
            .map(|n| fpga::parts::part(n).expect("quick parts exist"))
            .collect()
    } else if part_names.is_empty() {
        PARTS.iter().collect()
    } else {
        parts_named(part_names)?
    };
    for b in blocks {
        gen::find_block(b)?;
    }
    let wants = |block: &str| blocks.is_empty() || blocks.iter().any(|b| b == block);
    let (configs, flowless) = fpga::report_presets(quick, acc_rows, blocks)?;
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    tools::ensure_installed(&flow::tools_for(&parts))?;
    let versions = tool_versions(&parts);
    let jobs = jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
        .max(1);
    println!(
        "fpga report: {} designs x {} parts, {jobs} tools at a time, output in {}",
        configs.len(),
        parts.len(),
        out.display()
    );
    let mut env = FlowEnv::new(out.clone(), jobs, Duration::from_secs(tool_timeout));
    env.reuse = !fresh;
    env.tool_versions = versions.clone();
    let mut runner = Runner::new(env);
    runner.search_deadline = search_deadline as f64;
    // Presets: one work list, `jobs` workers.
    let work: Vec<(usize, fpga::FlowDesign, &'static Part)> = configs
        .iter()
        .flat_map(|c| parts.iter().map(move |p| (*c, *p)))
        .enumerate()
        .map(|(i, (c, p))| (i, c, p))
        .collect();
    let queue = std::sync::Mutex::new(work.clone());
    let results = std::sync::Mutex::new(Vec::new());
    // Twice as many workers as tool slots: a flow waiting for a synthesis
    // another part of its family is running holds a worker but no slot.
    std::thread::scope(|s| {
        for _ in 0..2 * jobs {
            s.spawn(|| loop {
                let item = queue.lock().unwrap().pop();
                let Some((i, cfg, part)) = item else { break };
                let r = runner.flow(cfg, part, true);
                results.lock().unwrap().push((i, r));
            });
        }
    });
    let mut presets_done = results.into_inner().unwrap();
    presets_done.sort_by_key(|(i, _)| *i);
    let presets_done: Vec<_> = presets_done.into_iter().map(|(_, r)| r).collect();
    let mut report = Report {
        command: command_line(args),
        quick,
        seconds: 0.0,
        tools: versions,
        acc_rows,
        parts: parts.iter().map(|p| **p).collect(),
        presets: presets_done,
        not_built: flowless,
        largest: Vec::new(),
        largest_vpu: Vec::new(),
        largest_sparsecore: Vec::new(),
    };
    report.seconds = runner.elapsed();
    report.write(out)?;
    if !quick && !no_search && wants("mxu") {
        println!(
            "[{:7.1}s] searching for the largest int8 MXU per part",
            runner.elapsed()
        );
        report.largest = each_in_parallel(parts.iter().copied(), |part| {
            let l = fpga::search::largest(&runner, part, acc_rows);
            let size = l.size.map_or_else(|| "none".into(), |n| format!("{n}x{n}"));
            println!(
                "[{:7.1}s] {}: largest int8 MXU {size}",
                runner.elapsed(),
                part.name
            );
            l
        });
        report.seconds = runner.elapsed();
        report.write(out)?;
    }
    if !quick && !no_search && wants("vpu") {
        println!(
            "[{:7.1}s] searching for the largest VPUs per part",
            runner.elapsed()
        );
        let searches = parts
            .iter()
            .flat_map(|p| config::VpuUnits::ALL.map(|u| (*p, u)));
        report.largest_vpu = each_in_parallel(searches, |(part, units)| {
            let l = fpga::search::largest_vpu(&runner, part, units);
            let size = l.lanes.map_or_else(|| "none".into(), |n| format!("{n}x1"));
            println!(
                "[{:7.1}s] {}: largest {units} VPU {size}",
                runner.elapsed(),
                part.name
            );
            l
        });
        report.seconds = runner.elapsed();
        report.write(out)?;
    }
    if !quick && !no_search && wants("sparsecore") {
        println!(
            "[{:7.1}s] searching for the SparseCore with the most tiles per part",
            runner.elapsed()
        );
        report.largest_sparsecore = each_in_parallel(parts.iter().copied(), |part| {
            let l = fpga::search::largest_sparsecore(&runner, part);
            let tiles = l.tiles.map_or_else(|| "none".into(), |t| t.to_string());
            println!(
                "[{:7.1}s] {}: largest SparseCore T={tiles}",
                runner.elapsed(),
                part.name
            );
            l
        });
    }
    report.seconds = runner.elapsed();
    report.write(out)?;
    let failed = report.presets.iter().filter(|r| r.error.is_some()).count();
    println!(
        "[{:7.1}s] wrote {} and {}{}",
        runner.elapsed(),
        out.join("report.json").display(),
        out.join("report.md").display(),
        if failed > 0 {
            format!(" ({failed} flows failed: see their notes)")
        } else {
            String::new()
        }
    );
    Ok(())
}

/// The command that reproduces this report (options left at their defaults omitted).
fn command_line(a: &ReportArgs) -> String {
    let defaults = Cli::parse_from(["fpga", "report"]);
    let Cmd::Report(d) = defaults.command else {
        unreachable!("parsed as a report")
    };
    let mut c = "cargo run --release -p fpga -- report".to_string();
    if a.quick {
        c.push_str(" --quick");
    }
    if a.out != d.out {
        c.push_str(&format!(" --out {}", a.out.display()));
    }
    if !a.parts.is_empty() {
        c.push_str(&format!(" --parts {}", a.parts.join(",")));
    }
    if a.no_search {
        c.push_str(" --no-search");
    }
    if !a.blocks.is_empty() {
        c.push_str(&format!(" --blocks {}", a.blocks.join(",")));
    }
    if a.tool_timeout != d.tool_timeout {
        c.push_str(&format!(" --tool-timeout {}", a.tool_timeout));
    }
    if a.search_deadline != d.search_deadline {
        c.push_str(&format!(" --search-deadline {}", a.search_deadline));
    }
    if a.acc_rows != d.acc_rows {
        c.push_str(&format!(" --acc-rows {}", a.acc_rows));
    }
    c
}

/// `search` on every item, each on its own thread (the runner bounds how many
/// tools run at once), the results in the items' order.
fn each_in_parallel<I, T, F>(items: I, search: F) -> Vec<T>
where
    I: IntoIterator,
    I::Item: Send,
    T: Send,
    F: Fn(I::Item) -> T + Sync,
{
    std::thread::scope(|s| {
        let handles: Vec<_> = items
            .into_iter()
            .map(|item| {
                let search = &search;
                s.spawn(move || search(item))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a search thread panicked"))
            .collect()
    })
}

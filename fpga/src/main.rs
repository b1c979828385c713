//! `fpga report`: every preset through every FPGA flow, plus every block's
//! "largest that fits" searches per part; writes `report.json` and `report.md`.
//! `fpga flow`: one configuration of one block on chosen parts (what a user
//! sizing a design for a board runs), with the report's flows and fit rules.

use clap::{Args, Parser, Subcommand, ValueEnum};
use fpga::flow::{self, FlowEnv};
use fpga::parts::{Part, PARTS};
use fpga::report::Report;
use fpga::runner::Runner;
use fpga::shard::{Shard, ShardRecord};
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
    /// Start from one of the block's presets (`gen --block list` shows them); --config and --param override it.
    #[arg(long, value_name = "NAME")]
    preset: Option<String>,
    /// A saved configuration of the block (TOML, as `gen --config` reads); keys it leaves out take the defaults (or the preset's).
    #[arg(long)]
    config: Option<PathBuf>,
    /// One parameter of the configuration, e.g. `lanes=16`, `units=int32` or `depth=2` (repeatable; overrides --preset and --config).
    #[arg(long = "param", value_name = "KEY=VALUE")]
    params: Vec<String>,
    /// The parts (comma-separated names, e.g. xc7a100t,ecp5-85f).
    #[arg(long, value_delimiter = ',', required = true)]
    parts: Vec<String>,
    /// Place and route too (iCE40, ECP5 and Gowin; the 7-series parts have synthesis estimates only).
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
    #[command(flatten)]
    placement: flow::Placement,
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
    /// Skip the searches for the largest design of each block per part.
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
    /// A configuration key set over every preset and search of one block,
    /// e.g. `mxu.acc_rows=512` or `mxu.depth=2` (repeatable; overrides
    /// --preset).
    #[arg(long = "param", value_name = "BLOCK.KEY=VALUE")]
    params: Vec<String>,
    /// Build each block's preset of this name (e.g. `fmax`) instead of
    /// the presets the report marks; every block the report covers must
    /// have it (restrict them with --blocks).
    #[arg(long, value_name = "NAME")]
    preset: Option<String>,
    /// Rerun every flow, even those whose inputs and tools are unchanged
    /// since a finished run in the same output folder.
    #[arg(long)]
    fresh: bool,
    #[command(flatten)]
    placement: flow::Placement,
    /// Run the K-th of N disjoint parts of the report's flows and searches
    /// (e.g. 2/4, one per machine); its report.json is for --merge.
    #[arg(long, value_name = "K/N")]
    shard: Option<String>,
    /// Join the report.json of every shard (one folder each) into the
    /// report one run gives, written to --out; no flow runs.
    #[arg(long, value_name = "DIR", num_args = 1..)]
    merge: Vec<PathBuf>,
}

fn main() -> ExitCode {
    // A closed stdout pipe (`... | head`) ends the tool quietly, as it ends
    // other command-line tools, instead of a panic in `println!`.
    #[cfg(unix)]
    // SAFETY: restoring a signal's default action before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return gen::exit_on_cli_error(&e, "fpga"),
    };
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

fn flow(args: &FlowArgs) -> Result<(), String> {
    let block = gen::find_block(&args.block)?;
    // As `gen` assembles it: the defaults, the preset, the file, the flags.
    let mut table = block.default_table();
    if let Some(name) = &args.preset {
        table.extend(fpga::preset_table(block, name)?);
    }
    if let Some(path) = &args.config {
        table.extend(gen::read_config(path)?);
    }
    for p in &args.params {
        let (key, value) = fpga::param_entry(p)?;
        fpga::check_key(block, &key, p)?;
        table.insert(key, value);
    }
    let design = fpga::FlowDesign::of(block, &table)
        .map_err(|e| format!("the FPGA flows do not build {}: {e}", block.name()))?;
    let parts = parts_named(&args.parts)?;
    tools::ensure_installed(&flow::tools_for(&parts))?;
    std::fs::create_dir_all(&args.out)
        .map_err(|e| format!("cannot create {}: {e}", args.out.display()))?;
    let mut env = FlowEnv::new(args.out.clone(), 1, Duration::from_secs(args.tool_timeout));
    env.reuse = !args.fresh;
    env.placement = args.placement;
    env.tool_versions = tool_versions(&parts);
    let runner = Runner::new(env);
    println!(
        "fpga flow: {} {} on {}",
        block.name(),
        design.configured().describe(),
        args.parts.join(", ")
    );
    let results: Vec<_> = parts
        .iter()
        .map(|part| runner.flow(&design, part, args.pnr))
        .collect();
    println!("\n{}", fpga::report::flow_table(&results, true));
    match results.iter().find_map(|r| r.error.as_ref()) {
        Some(e) => Err(format!("a flow failed: {e}")),
        None => Ok(()),
    }
}

fn report(args: &ReportArgs) -> Result<(), String> {
    if !args.merge.is_empty() {
        return merge(args);
    }
    let shard = args.shard.as_deref().map(Shard::parse).transpose()?;
    let parts = report_parts(args)?;
    for b in &args.blocks {
        gen::find_block(b)?;
    }
    let params = fpga::BlockParams::parse(&args.params)?;
    let (designs, not_built) =
        fpga::report_presets(args.quick, &args.blocks, &params, args.preset.as_deref())?;
    // The whole work list, the same in every shard: the flows, then the searches.
    let flows: Vec<(&fpga::FlowDesign, &'static Part)> = designs
        .iter()
        .flat_map(|d| parts.iter().map(move |p| (d, *p)))
        .collect();
    let searches = if args.quick || args.no_search {
        Vec::new()
    } else {
        search_units(&args.blocks, &parts)
    };
    let out = &args.out;
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    tools::ensure_installed(&flow::tools_for(&parts))?;
    let versions = tool_versions(&parts);
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
        .max(1);
    let mut record = shard.map(|s| ShardRecord::new(s, flows.len(), searches.len()));
    let my_flows: Vec<usize> = match &record {
        Some(r) => r.flows.clone(),
        None => (0..flows.len()).collect(),
    };
    let my_searches: Vec<usize> = match &record {
        Some(r) => r.searches_due(),
        None => (0..searches.len()).collect(),
    };
    println!(
        "fpga report: {} designs x {} parts, {jobs} tools at a time, output in {}{}",
        designs.len(),
        parts.len(),
        out.display(),
        match shard {
            Some(s) => format!(
                "; shard {}/{}: {} of {} flows, {} of {} searches",
                s.index,
                s.count,
                my_flows.len(),
                flows.len(),
                my_searches.len(),
                searches.len()
            ),
            None => String::new(),
        }
    );
    let mut env = FlowEnv::new(out.clone(), jobs, Duration::from_secs(args.tool_timeout));
    env.reuse = !args.fresh;
    env.placement = args.placement;
    env.tool_versions = versions.clone();
    let mut runner = Runner::new(env);
    runner.search_deadline = args.search_deadline as f64;
    let mine: Vec<_> = my_flows.iter().map(|i| flows[*i]).collect();
    let mut command = command_line(args);
    if let Some(s) = shard {
        command.push_str(&format!(" {}", s.option()));
    }
    let mut report = Report {
        command,
        quick: args.quick,
        seconds: 0.0,
        commit: commit(),
        tools: versions,
        params: params.describe(),
        parts: parts.iter().map(|p| **p).collect(),
        presets: run_presets(&runner, &mine, jobs),
        not_built,
        largest: Vec::new(),
        shard: record.clone(),
    };
    report.seconds = runner.elapsed();
    report.write(out)?;
    // Block by block, in the work list's order, each block's searches in parallel.
    let mut next = 0;
    while next < my_searches.len() {
        let block = searches[my_searches[next]].0;
        let batch: Vec<usize> = my_searches[next..]
            .iter()
            .copied()
            .take_while(|i| searches[*i].0.name() == block.name())
            .collect();
        next += batch.len();
        let items: Vec<_> = batch.iter().map(|i| &searches[*i]).collect();
        report
            .largest
            .extend(run_searches(&runner, block, &items, &params));
        if let Some(r) = record.as_mut() {
            r.searches.extend(&batch);
            report.shard = Some(r.clone());
        }
        report.seconds = runner.elapsed();
        report.write(out)?;
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

/// `--merge DIR...`: the shards' reports joined into one, written to `--out`.
fn merge(args: &ReportArgs) -> Result<(), String> {
    let defaults = Cli::parse_from(["fpga", "report"]);
    let Cmd::Report(d) = defaults.command else {
        unreachable!("parsed as a report")
    };
    let settings_given = args.quick
        || !args.parts.is_empty()
        || args.no_search
        || !args.blocks.is_empty()
        || !args.params.is_empty()
        || args.preset.is_some()
        || args.shard.is_some()
        || args.jobs.is_some()
        || args.fresh
        || args.tool_timeout != d.tool_timeout
        || args.search_deadline != d.search_deadline
        || args.placement != d.placement;
    if settings_given {
        return Err(
            "--merge takes only --out (the shards' reports hold the settings they ran with)".into(),
        );
    }
    let report = fpga::shard::merge(fpga::shard::read_reports(&args.merge)?)?;
    std::fs::create_dir_all(&args.out)
        .map_err(|e| format!("cannot create {}: {e}", args.out.display()))?;
    report.write(&args.out)?;
    println!(
        "merged {} shards: {} flows and {} searches; wrote {} and {}",
        args.merge.len(),
        report.presets.len(),
        report.largest.len(),
        args.out.join("report.json").display(),
        args.out.join("report.md").display()
    );
    Ok(())
}

/// One search of one block on one part: a unit of the report's work.
type SearchUnit = (&'static dyn hw::AnyBlock, &'static Part, hw::FpgaSearch);

/// Every search of the blocks named in `blocks` (all when empty) on every
/// part, in the order the report lists them: by block, then part.
fn search_units(blocks: &[String], parts: &[&'static Part]) -> Vec<SearchUnit> {
    let mut units = Vec::new();
    for block in gen::registry() {
        if !blocks.is_empty() && !blocks.iter().any(|b| b == block.name()) {
            continue;
        }
        let searches = block.fpga_searches();
        for part in parts {
            for search in &searches {
                units.push((block, *part, search.clone()));
            }
        }
    }
    units
}

/// The commit of the workspace the tool runs in, for the report (shards
/// of one report must share it).
fn commit() -> Option<String> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(tools::workspace_root())
        .args(["describe", "--always", "--dirty", "--abbrev=40"])
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

/// The parts a report covers: `--parts`, else the quick subset's or all.
fn report_parts(args: &ReportArgs) -> Result<Vec<&'static Part>, String> {
    if !args.parts.is_empty() {
        parts_named(&args.parts)
    } else if args.quick {
        Ok(fpga::QUICK_PARTS
            .iter()
            .map(|n| fpga::parts::part(n).expect("quick parts exist"))
            .collect())
    } else {
        Ok(PARTS.iter().collect())
    }
}

/// The flows of `work`, `jobs` tools at a time, results in order.
fn run_presets(
    runner: &Runner,
    work: &[(&fpga::FlowDesign, &'static Part)],
    jobs: usize,
) -> Vec<fpga::flow::FlowResult> {
    let queue = std::sync::Mutex::new(work.iter().copied().enumerate().collect::<Vec<_>>());
    let results = std::sync::Mutex::new(Vec::new());
    // Twice as many workers as tool slots: a flow waiting for a synthesis
    // another part of its family is running holds a worker but no slot.
    std::thread::scope(|s| {
        for _ in 0..2 * jobs {
            s.spawn(|| loop {
                let item = queue.lock().unwrap().pop();
                let Some((i, (design, part))) = item else {
                    break;
                };
                let r = runner.flow(design, part, true);
                results.lock().unwrap().push((i, r));
            });
        }
    });
    let mut done = results.into_inner().unwrap();
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// The searches `items` of `block`, in parallel (the runner bounds the
/// tools running at once), results in the items' order.
fn run_searches(
    runner: &Runner,
    block: &'static dyn hw::AnyBlock,
    items: &[&SearchUnit],
    params: &fpga::BlockParams,
) -> Vec<fpga::search::SearchResult> {
    println!(
        "[{:7.1}s] searching for the largest {} per part",
        runner.elapsed(),
        block.name()
    );
    let overrides = params.of(block.name());
    each_in_parallel(items.iter(), |(_, part, search)| {
        let l = fpga::search::largest(runner, part, block, search, &overrides);
        println!(
            "[{:7.1}s] {}: largest {} {} {}",
            runner.elapsed(),
            part.name,
            block.name(),
            search.name,
            l.size_label.as_deref().unwrap_or("none")
        );
        l
    })
}

/// The command that reproduces this report (options left at their defaults omitted).
fn command_line(a: &ReportArgs) -> String {
    let defaults = Cli::parse_from(["fpga", "report"]);
    let Cmd::Report(d) = defaults.command else {
        unreachable!("parsed as a report")
    };
    // Without --out: where a report is written does not change it, and the
    // shards of one report, each in its folder, share its command.
    let mut c = "cargo run --release -p fpga -- report".to_string();
    if a.quick {
        c.push_str(" --quick");
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
    if a.placement.placer != d.placement.placer {
        let name = a
            .placement
            .placer
            .to_possible_value()
            .expect("every placer has a name");
        c.push_str(&format!(" --placer {}", name.get_name()));
    }
    if let Some(weight) = a.placement.timing_weight {
        c.push_str(&format!(" --timing-weight {weight}"));
    }
    if let Some(mhz) = a.placement.target_mhz {
        c.push_str(&format!(" --target-mhz {mhz}"));
    }
    if a.placement.timing_ripup {
        c.push_str(" --timing-ripup");
    }
    if let Some(name) = &a.preset {
        c.push_str(&format!(" --preset {name}"));
    }
    for p in &a.params {
        c.push_str(&format!(" --param {p}"));
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

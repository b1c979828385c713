//! Systole benchmarks: how fast the tool flow and the simulation run, printed as
//! Markdown tables on stdout (progress notes go to stderr). Nothing here passes
//! or fails: the numbers are measurements, to be read and compared over time.
//!
//! Tables:
//!
//! 1. `gen`: Verilog generation of the int8 MXU from 4x4 to 256x256 with
//!    `gen::generate` (elaboration plus emission, in memory; best of a few
//!    runs), with the size of the output: files, module definitions, lines,
//!    bytes, and the PE instances the generate loops stand for (R x C).
//! 2. `build`: Verilator model builds of the 8x8 and 16x16 MXU. Cold builds
//!    run in fresh, empty cache folders (`SYSTOLE_CACHE_DIR` pointed at a
//!    temporary folder): the first build in a folder also compiles the
//!    Verilator runtime, so the 8x8 model is built twice, once in an empty
//!    folder (runtime + model) and once in a folder that holds only a copy of
//!    the runtime (model only); 16x16 is model only. The 32x32 cold build is
//!    left out unless `SYSTOLE_BENCH_BUILD_32=1`: it takes minutes (over six
//!    on two cores), as Verilator flattens the array into C++ that the
//!    compiler handles in one large unit. Cached loads are timed three ways:
//!    in a new process as its first build call (which also probes the
//!    toolchain), in a new process after another model was loaded (hashing
//!    the spec, `dlopen` and instantiation), and in the same process, where
//!    the library is already loaded.
//! 3. `sim`: simulation speed of the 8x8 and 16x16 MXU: the clock looped in C++
//!    (`Model::run_cycles_native`) with the inputs held; a plain Rust loop of
//!    poke (all inputs), eval, peek (`acc_wr_o`, `acc_rd_data_o`) and step, which is
//!    the floor of any Rust driver; both with `a_valid_i` high and `w_valid_i`
//!    high or low (a long matmul has it low in all but R of every M cycles);
//!    and `MxuDriver::matmul_int8` on a long activation stream (M = 4096, 64
//!    weight tiles). Speeds are RTL cycles per wall second and simulated MACs
//!    per second (R x C per cycle for the loops, useful M x K x N for the
//!    driver).
//! 4. `cycles`: RTL cycle counts measured by the driver next to the golden
//!    cycle model (`golden::MxuTiming::total_cycles`), with the utilization and
//!    whether C matches `golden::matmul_int8`.
//! 5. `golden`: `golden::matmul_int8` throughput for 64^3, 256^3 and 512^3.
//!
//! Run everything (about a minute on two cores, most of it C++ compilation of
//! the cold builds):
//!
//! ```text
//! cargo bench -p tb --bench systole
//! ```
//!
//! Quick mode skips the 256x256 generation and all cold builds, and uses
//! shorter measurements; cached loads then come from the usual model cache
//! (`$SYSTOLE_CACHE_DIR`, else `$CARGO_TARGET_DIR/systole-models`), so once
//! that cache holds the 8x8 and 16x16 models it takes seconds:
//!
//! ```text
//! SYSTOLE_BENCH_QUICK=1 cargo bench -p tb --bench systole
//! cargo bench -p tb --bench systole -- --quick
//! ```
//!
//! Table names given as arguments select tables (a table runs if its name
//! contains one of them), e.g. `cargo bench -p tb --bench systole -- sim golden`.
//! `SYSTOLE_TRACE` is ignored: every model is built without waveforms.

use config::{ElemType, MxuConfig};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sim::from_hw::model_spec;
use sim::mxu::{mxu_files, MxuDriver};
use sim::{BuildOptions, CacheStatus, Model, ModelSpec, Trace};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Set in a child process started by the `build` table: a comma-separated list
/// of array sizes to load from the (already filled) cache, timing each.
const CHILD_ENV: &str = "SYSTOLE_BENCH_RELOAD_CHILD";
const QUICK_ENV: &str = "SYSTOLE_BENCH_QUICK";
const CACHE_ENV: &str = "SYSTOLE_CACHE_DIR";

const TABLES: [&str; 5] = ["gen", "build", "sim", "cycles", "golden"];
const GEN_SIZES: [u32; 7] = [4, 8, 16, 32, 64, 128, 256];
const BUILD_32_ENV: &str = "SYSTOLE_BENCH_BUILD_32";
const BUILD_SIZES: [u32; 2] = [8, 16];
const BUILD_SIZES_32: [u32; 3] = [8, 16, 32];
const SIM_SIZES: [u32; 2] = [8, 16];

struct Options {
    quick: bool,
    filters: Vec<String>,
}

impl Options {
    fn from_env() -> Options {
        let mut quick = std::env::var(QUICK_ENV).is_ok_and(|v| !v.is_empty() && v != "0");
        let mut filters = Vec::new();
        for arg in std::env::args().skip(1) {
            if arg == "--quick" {
                quick = true;
            } else if !arg.starts_with('-') {
                filters.push(arg);
            }
            // Other flags (cargo passes `--bench`) are ignored.
        }
        Options { quick, filters }
    }

    fn wants(&self, table: &str) -> bool {
        self.filters.is_empty() || self.filters.iter().any(|f| table.contains(f.as_str()))
    }
}

fn main() {
    // Waveforms would make every model a different, much slower build.
    std::env::remove_var("SYSTOLE_TRACE");
    if let Ok(list) = std::env::var(CHILD_ENV) {
        reload_child(&list);
        return;
    }
    let opts = Options::from_env();
    let unknown: Vec<&String> = opts
        .filters
        .iter()
        .filter(|f| !TABLES.iter().any(|t| t.contains(f.as_str())))
        .collect();
    if !unknown.is_empty() {
        eprintln!("no table matches {unknown:?}; tables are {TABLES:?}");
    }

    println!("# Systole benchmarks\n");
    println!("{}\n", machine_line(&opts));

    // Cold builds leave their models in a temporary cache that the later tables
    // reuse; it is removed when `_cache` drops at the end.
    let mut _cache: Option<tempfile::TempDir> = None;
    if opts.wants("gen") {
        gen_table(&opts);
    }
    if opts.wants("build") {
        _cache = build_table(&opts);
    }
    if opts.wants("sim") {
        sim_table(&opts);
    }
    if opts.wants("cycles") {
        cycles_table();
    }
    if opts.wants("golden") {
        golden_table(&opts);
    }
}

// ---------------------------------------------------------------------------
// Machine information and formatting

fn machine_line(opts: &Options) -> String {
    let nproc = std::thread::available_parallelism().map_or(0, |n| n.get());
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let verilator = Command::new("verilator")
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "not found".into());
    format!(
        "Machine: nproc = {nproc} ({cpu}); {verilator}; mode: {}",
        if opts.quick { "quick" } else { "full" }
    )
}

fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 1e-3 {
        format!("{:.1} µs", s * 1e6)
    } else if s < 1.0 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}

/// `x` with an SI prefix, e.g. `12.3 M`.
fn si(x: f64) -> String {
    for (scale, prefix) in [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")] {
        if x >= scale {
            return format!("{:.2} {prefix}", x / scale);
        }
    }
    format!("{x:.1} ")
}

/// An integer with thousands separators.
fn int(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

fn header(title: &str, columns: &[&str]) {
    println!("## {title}\n");
    println!("| {} |", columns.join(" | "));
    let rule: Vec<&str> = columns.iter().map(|_| "---").collect();
    println!("| {} |", rule.join(" | "));
}

fn row(cells: &[String]) {
    println!("| {} |", cells.join(" | "));
}

/// Runs `f` at least once and then again while fewer than `max_runs` runs were
/// made and the total time stays within `budget`; returns the fastest run and
/// the last result.
fn best_of<T>(max_runs: usize, budget: Duration, mut f: impl FnMut() -> T) -> (Duration, T) {
    let started = Instant::now();
    let mut best = Duration::MAX;
    let mut runs = 0;
    loop {
        let t = Instant::now();
        let out = black_box(f());
        best = best.min(t.elapsed());
        runs += 1;
        if runs >= max_runs || started.elapsed() + best > budget {
            return (best, out);
        }
    }
}

/// Calls `run(n)` with `n` growing until one call takes about `target`, then
/// times it `reps` times with that `n`; returns `n` and the best time.
fn calibrated(target: Duration, reps: usize, mut run: impl FnMut(u64)) -> (u64, Duration) {
    let mut n = 1_000u64;
    loop {
        let t = Instant::now();
        run(n);
        let took = t.elapsed();
        if took >= Duration::from_millis(100) {
            let scale = target.as_secs_f64() / took.as_secs_f64();
            n = ((n as f64 * scale) as u64).max(1);
            break;
        }
        n *= 4;
    }
    let mut best = Duration::MAX;
    for _ in 0..reps {
        let t = Instant::now();
        run(n);
        best = best.min(t.elapsed());
    }
    (n, best)
}

fn int8(n: u32) -> MxuConfig {
    MxuConfig::new(n, n, ElemType::Int8).expect("valid MXU size")
}

fn random_i8(rng: &mut impl Rng, len: usize) -> Vec<i8> {
    (0..len).map(|_| rng.gen()).collect()
}

// ---------------------------------------------------------------------------
// 1. Verilog generation

fn gen_table(opts: &Options) {
    header(
        "1. Verilog generation (int8 MXU, `gen::generate`)",
        &[
            "array",
            "elaborate + emit (best)",
            "runs",
            "files",
            "module definitions",
            "lines",
            "bytes",
            "PE instances",
        ],
    );
    for n in GEN_SIZES {
        if opts.quick && n > 128 {
            row(&[
                format!("{n}x{n}"),
                "skipped (quick)".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                int(u64::from(n) * u64::from(n)),
            ]);
            continue;
        }
        let cfg = int8(n);
        let mut runs = 0;
        let (best, generated) = best_of(20, Duration::from_secs(2), || {
            runs += 1;
            gen::generate(&cfg)
        });
        let g = match generated {
            Ok(g) => g,
            Err(e) => {
                row(&[format!("{n}x{n}"), format!("error: {e}")]);
                continue;
            }
        };
        let lines: usize = g.files.iter().map(|f| f.text.lines().count()).sum();
        let bytes: usize = g.files.iter().map(|f| f.text.len()).sum();
        row(&[
            format!("{n}x{n}"),
            secs(best),
            runs.to_string(),
            g.files.len().to_string(),
            g.modules.to_string(),
            int(lines as u64),
            int(bytes as u64),
            int(u64::from(n) * u64::from(n)),
        ]);
    }
    println!();
}

// ---------------------------------------------------------------------------
// 2. Verilator model builds

fn mxu_spec(n: u32) -> (ModelSpec, String) {
    let cfg = int8(n);
    let (files, top) = mxu_files(&cfg);
    (model_spec(&files, &top), mxu::top_name(&cfg))
}

fn build_model(spec: &ModelSpec, label: &str) -> Model {
    Model::build_with(spec, label, &BuildOptions::new().trace(Trace::Off))
        .unwrap_or_else(|e| panic!("cannot build {label}: {e}"))
}

/// Builds the model once, timed; returns the time, the cache status and the
/// size of its shared library.
fn timed_build(n: u32) -> (Duration, CacheStatus, u64) {
    let (spec, label) = mxu_spec(n);
    let t = Instant::now();
    let model = build_model(&spec, &label);
    let took = t.elapsed();
    (took, model.cache_status(), library_bytes(model.build_dir()))
}

fn library_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".so"))
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

fn temp_cache(what: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("systole-bench-{what}-"))
        .tempdir()
        .expect("cannot create a temporary cache folder")
}

/// Copies the `runtime-*` entries (compiled Verilator runtime) of one cache
/// folder into another.
fn copy_runtime(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with("runtime-") || !entry.path().is_dir() {
            continue;
        }
        let dest = to.join(&name);
        std::fs::create_dir_all(&dest)?;
        for file in std::fs::read_dir(entry.path())? {
            let file = file?;
            if file.path().is_file() {
                std::fs::copy(file.path(), dest.join(file.file_name()))?;
            }
        }
    }
    Ok(())
}

/// The child side of the new-process reload measurement: loads each listed
/// array from the cache in order and prints `reload <n> <seconds> <status>`.
fn reload_child(list: &str) {
    for n in list.split(',').filter_map(|s| s.trim().parse::<u32>().ok()) {
        let (took, status, _) = timed_build(n);
        println!("reload {n} {} {status:?}", took.as_secs_f64());
    }
}

/// Starts this program again to load the arrays `order` from the cache in a
/// new process; returns the load time of the last one.
fn reload_in_new_process(order: &[u32], cache: &Path) -> Result<Duration, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let list: Vec<String> = order.iter().map(u32::to_string).collect();
    let out = Command::new(exe)
        .env(CHILD_ENV, list.join(","))
        .env(CACHE_ENV, cache)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "child failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let target = order.last().copied().unwrap_or(0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    for line in stdout.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if let ["reload", n, s, status] = fields[..] {
            if n.parse() == Ok(target) {
                if status != "Reused" {
                    return Err(format!("not cached ({status})"));
                }
                let s: f64 = s.parse().map_err(|_| format!("bad line {line:?}"))?;
                return Ok(Duration::from_secs_f64(s));
            }
        }
    }
    Err(format!("no timing in child output {stdout:?}"))
}

fn cold_cell(took: Duration, status: CacheStatus) -> String {
    match status {
        CacheStatus::Built => secs(took),
        CacheStatus::Reused => format!("{} (was cached!)", secs(took)),
    }
}

fn build_table(opts: &Options) -> Option<tempfile::TempDir> {
    let sizes: &[u32] = if opts.quick {
        &SIM_SIZES
    } else if std::env::var(BUILD_32_ENV).is_ok_and(|v| !v.is_empty() && v != "0") {
        &BUILD_SIZES_32
    } else {
        &BUILD_SIZES
    };
    let mut cold_full = Vec::new(); // (runtime + model) per size, if measured
    let mut cold_model = Vec::new(); // model only per size
    let mut lib_size = Vec::new();
    let cache = if opts.quick {
        // Cached loads from the usual cache; fill it first, untimed.
        for &n in sizes {
            let (took, status, bytes) = timed_build(n);
            if status == CacheStatus::Built {
                eprintln!(
                    "bench: built {n}x{n} into the model cache in {}",
                    secs(took)
                );
            }
            cold_full.push(None);
            cold_model.push(None);
            lib_size.push(bytes);
        }
        None
    } else {
        let main = temp_cache("cache");
        std::env::set_var(CACHE_ENV, main.path());
        for (i, &n) in sizes.iter().enumerate() {
            eprintln!("bench: cold build of {n}x{n}...");
            let (took, status, bytes) = timed_build(n);
            if i == 0 {
                cold_full.push(Some(cold_cell(took, status)));
                cold_model.push(None);
            } else {
                cold_full.push(None);
                cold_model.push(Some(cold_cell(took, status)));
            }
            lib_size.push(bytes);
        }
        // The first array again, model only: a fresh folder holding just the runtime.
        let second = temp_cache("model-only");
        match copy_runtime(main.path(), second.path()) {
            Ok(()) => {
                std::env::set_var(CACHE_ENV, second.path());
                eprintln!("bench: cold build of {0}x{0} (model only)...", sizes[0]);
                let (took, status, _) = timed_build(sizes[0]);
                cold_model[0] = Some(cold_cell(took, status));
            }
            Err(e) => cold_model[0] = Some(format!("error: {e}")),
        }
        std::env::set_var(CACHE_ENV, main.path());
        Some(main)
    };
    let cache_dir = match &cache {
        Some(dir) => dir.path().to_path_buf(),
        None => std::env::var_os(CACHE_ENV)
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(default_cache_dir),
    };

    header(
        "2. Verilator model build (int8 MXU)",
        &[
            "array",
            "cold: runtime + model",
            "cold: model only",
            "cached, new process, first build call",
            "cached, new process, after another load",
            "cached, same process",
            "library size",
        ],
    );
    let reps = if opts.quick { 3 } else { 5 };
    for (i, &n) in sizes.iter().enumerate() {
        let other = sizes[(i + 1) % sizes.len()];
        let first = reload_in_new_process(&[n], &cache_dir);
        let after = reload_in_new_process(&[other, n], &cache_dir);
        let same = (0..reps)
            .map(|_| timed_build(n).0)
            .min()
            .unwrap_or_default();
        let cell = |r: Result<Duration, String>| r.map_or_else(|e| format!("error: {e}"), secs);
        let skipped = || {
            if opts.quick {
                "skipped (quick)".to_string()
            } else {
                "-".to_string()
            }
        };
        row(&[
            format!("{n}x{n}"),
            cold_full[i].clone().unwrap_or_else(skipped),
            cold_model[i].clone().unwrap_or_else(skipped),
            cell(first),
            cell(after),
            secs(same),
            format!("{:.1} MiB", lib_size[i] as f64 / (1024.0 * 1024.0)),
        ]);
    }
    if let (Some(Some(full)), Some(Some(model))) = (cold_full.first(), cold_model.first()) {
        println!(
            "\nThe Verilator runtime is compiled once per cache folder: the {0}x{0} row's \
             difference ({full} vs {model}) is its cost. Cold builds run with {1} compiler \
             jobs.",
            sizes[0],
            std::thread::available_parallelism().map_or(1, |n| n.get())
        );
    }
    println!();
    cache
}

/// The cache folder `sim` uses when `SYSTOLE_CACHE_DIR` is unset.
fn default_cache_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
        .join("systole-models")
}

// ---------------------------------------------------------------------------
// 3. Simulation speed

struct MxuPorts {
    w_valid: sim::PortId,
    w_row: sim::PortId,
    a_valid: sim::PortId,
    a_first: sim::PortId,
    a_row: sim::PortId,
    c_valid: sim::PortId,
    c_row: sim::PortId,
    reset: sim::PortId,
}

impl MxuPorts {
    fn of(model: &Model) -> MxuPorts {
        use mxu::ports::*;
        let p = |name: &str| model.port(name).expect("MXU port");
        MxuPorts {
            w_valid: p(W_VALID),
            w_row: p(W_ROW),
            a_valid: p(A_VALID),
            a_first: p(A_FIRST),
            a_row: p(A_ROW),
            c_valid: p(ACC_WR),
            c_row: p(ACC_RD_DATA),
            reset: p(hw::ir::RESET),
        }
    }
}

/// Random words for a port of `width` bits.
fn random_words(rng: &mut impl Rng, width: u32) -> Vec<u32> {
    let mut words: Vec<u32> = (0..width.div_ceil(32)).map(|_| rng.gen()).collect();
    if !width.is_multiple_of(32) {
        let last = words.len() - 1;
        words[last] &= (1 << (width % 32)) - 1;
    }
    words
}

fn sim_table(opts: &Options) {
    let target = Duration::from_millis(if opts.quick { 250 } else { 1000 });
    let reps = if opts.quick { 1 } else { 3 };
    let mut rows_out = Vec::new();
    for n in SIM_SIZES {
        let (spec, label) = mxu_spec(n);
        let mut model = build_model(&spec, &label);
        let p = MxuPorts::of(&model);
        let mut rng = ChaCha8Rng::seed_from_u64(u64::from(n));
        let w_width = model.width(p.w_row);
        let a_width = model.width(p.a_row);
        let w_words = [
            random_words(&mut rng, w_width),
            random_words(&mut rng, w_width),
        ];
        let a_words = [
            random_words(&mut rng, a_width),
            random_words(&mut rng, a_width),
        ];
        let slots = f64::from(n * n);

        model.poke(p.reset, 1);
        model.step();
        model.poke(p.reset, 0);

        // The same input pattern for both loops: a_valid high with a new
        // activation row every cycle, w_valid high (weights shifting in every
        // cycle) or low (as in all but R of every M cycles of a long matmul).
        for w_valid in [1u64, 0] {
            model.poke(p.w_valid, w_valid);
            model.poke(p.a_valid, 1);
            model.poke(p.a_first, 0);
            model.poke_wide(p.w_row, &w_words[0]);
            model.poke_wide(p.a_row, &a_words[0]);
            let (cycles, best) = calibrated(target, reps, |c| model.run_cycles_native(c));
            let rate = cycles as f64 / best.as_secs_f64();
            rows_out.push([
                format!("{n}x{n}"),
                format!("C++ loop (`run_cycles_native`), a_valid=1 w_valid={w_valid} held"),
                int(cycles),
                secs(best),
                si(rate),
                si(rate * slots),
            ]);

            // Rust loop: what every driver does per cycle, minus its bookkeeping.
            let (cycles, best) = calibrated(target, reps, |c| {
                for i in 0..c {
                    let k = (i & 1) as usize;
                    model.poke(p.w_valid, w_valid);
                    model.poke_wide(p.w_row, &w_words[k]);
                    model.poke(p.a_valid, 1);
                    model.poke(p.a_first, 0);
                    model.poke_wide(p.a_row, &a_words[k]);
                    model.eval();
                    black_box(model.peek(p.c_valid));
                    black_box(model.peek_wide(p.c_row));
                    model.step();
                }
            });
            let rate = cycles as f64 / best.as_secs_f64();
            rows_out.push([
                format!("{n}x{n}"),
                format!("Rust loop: poke all, eval, peek, step; a_valid=1 w_valid={w_valid}"),
                int(cycles),
                secs(best),
                si(rate),
                si(rate * slots),
            ]);
        }
        drop(model);

        // The driver on a long stream: 64 weight tiles of 4096 rows each.
        let (m, k, nn) = (4096usize, 8 * n as usize, 8 * n as usize);
        let a = random_i8(&mut rng, m * k);
        let b = random_i8(&mut rng, k * nn);
        let mut driver = match MxuDriver::new(&int8(n)) {
            Ok(d) => d,
            Err(e) => {
                rows_out.push([
                    format!("{n}x{n}"),
                    format!("`MxuDriver::matmul_int8`: error {e}"),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                ]);
                continue;
            }
        };
        let (best, result) = best_of(reps.min(2), Duration::from_secs(10), || {
            driver.matmul_int8(&a, &b, (m, k, nn), None)
        });
        let what = format!("`MxuDriver::matmul_int8`, M={m} K={k} N={nn}");
        match result {
            Ok((_, stats)) => {
                let s = best.as_secs_f64();
                rows_out.push([
                    format!("{n}x{n}"),
                    what,
                    int(stats.cycles),
                    secs(best),
                    si(stats.cycles as f64 / s),
                    si(stats.macs as f64 / s),
                ]);
            }
            Err(e) => rows_out.push([
                format!("{n}x{n}"),
                format!("{what}: error {e}"),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
            ]),
        }
    }
    header(
        "3. Simulation speed (int8 MXU, Verilator)",
        &[
            "array",
            "method",
            "RTL cycles",
            "wall (best)",
            "cycles/s",
            "simulated MAC/s",
        ],
    );
    for r in &rows_out {
        row(r);
    }
    println!(
        "\nSimulated MAC/s: R x C per cycle for the loops (every PE multiplies each \
         cycle), useful M x K x N for the driver. The Rust loop alternates between two \
         input rows; the C++ loop holds one. Most driver cycles have w_valid low."
    );
    println!();
}

// ---------------------------------------------------------------------------
// 4. Cycle model check

fn cycles_table() {
    header(
        "4. Cycle model check (RTL vs `golden::MxuTiming`)",
        &[
            "array",
            "M x K x N",
            "tiles",
            "RTL cycles",
            "golden cycles",
            "cycles",
            "RTL utilization",
            "C vs golden",
        ],
    );
    let cases: [(u32, usize, usize, usize); 3] =
        [(8, 256, 64, 64), (8, 7, 20, 13), (16, 256, 64, 64)];
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    for (n, m, k, nn) in cases {
        let cfg = int8(n);
        let shape = format!("{m} x {k} x {nn}");
        let timing = golden::MxuTiming::new(&cfg, m, k, nn);
        let a = random_i8(&mut rng, m * k);
        let b = random_i8(&mut rng, k * nn);
        let expected = golden::matmul_int8(&a, &b, m, k, nn);
        let result = MxuDriver::new(&cfg)
            .map_err(|e| e.to_string())
            .and_then(|mut d| {
                d.matmul_int8(&a, &b, (m, k, nn), None)
                    .map_err(|e| e.to_string())
            });
        match result {
            Ok((c, stats)) => row(&[
                format!("{n}x{n}"),
                shape,
                int(stats.tiles),
                int(stats.cycles),
                int(timing.total_cycles()),
                if stats.cycles == timing.total_cycles() {
                    "equal".into()
                } else {
                    "DIFFER".into()
                },
                format!("{:.2} %", 100.0 * stats.utilization()),
                if c == expected {
                    "equal".into()
                } else {
                    "DIFFER".into()
                },
            ]),
            Err(e) => row(&[
                format!("{n}x{n}"),
                shape,
                int(timing.tile_count()),
                format!("error: {e}"),
                int(timing.total_cycles()),
                "DIFFER".into(),
                "-".into(),
                "-".into(),
            ]),
        }
    }
    println!();
}

// ---------------------------------------------------------------------------
// 5. Golden model

fn golden_table(opts: &Options) {
    header(
        "5. Golden model (`golden::matmul_int8`)",
        &["M = K = N", "MACs", "time (best)", "runs", "MAC/s"],
    );
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for n in [64usize, 256, 512] {
        let a = random_i8(&mut rng, n * n);
        let b = random_i8(&mut rng, n * n);
        let max_runs = if opts.quick { 3 } else { 20 };
        let mut runs = 0;
        let (best, _) = best_of(max_runs, Duration::from_secs(3), || {
            runs += 1;
            golden::matmul_int8(black_box(&a), black_box(&b), n, n, n)
        });
        let macs = (n * n * n) as u64;
        row(&[
            n.to_string(),
            int(macs),
            secs(best),
            runs.to_string(),
            si(macs as f64 / best.as_secs_f64()),
        ]);
    }
    println!();
}

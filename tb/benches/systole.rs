//! Systole benchmarks: how fast the tool flow and the simulation run, printed as
//! Markdown tables on stdout (progress notes go to stderr). Nothing here passes
//! or fails: the numbers are measurements, to be read and compared over time.
//!
//! Every table covers both element types of the MXU (`config::ElemType`), each
//! with the default accumulator of 256 rows: int8 (int32 sums; a partial sum
//! spends L = 1 cycle in a PE) and bf16 (fp32 sums, FTZ-RNE; L = 2, two-stage
//! adders in every PE and in the accumulator).
//!
//! Tables:
//!
//! 1. `gen`: Verilog generation of the int8 and bf16 MXU from 4x4 to 256x256
//!    with `gen::generate` (elaboration plus emission, in memory; best of a
//!    few runs), with the size of the output: files, module definitions,
//!    lines, bytes, and the PE instances the generate loops stand for (R x C).
//!    128x128 is the array of TPUv2/v3 (bf16), 256x256 that of TPUv1 (int8).
//! 2. `build`: Verilator model builds of the 8x8 and 16x16 MXU of both types.
//!    Cold builds run in fresh, empty cache folders (`SYSTOLE_CACHE_DIR`
//!    pointed at a temporary folder): the first build in a folder also
//!    compiles the Verilator runtime, so the int8 8x8 model is built twice,
//!    once in an empty folder (runtime + model) and once in a folder that
//!    holds only a copy of the runtime (model only); the others are model
//!    only. The 32x32 cold builds are left out unless `SYSTOLE_BENCH_BUILD_32`
//!    is set (`1` for both types, `int8` or `bf16` for one): they take many
//!    minutes (bf16, with its floating-point adders, about 17 on two busy
//!    cores, against 1.5 for bf16 16x16), as Verilator flattens the array into
//!    C++ (some 150 files for bf16 32x32) that the compiler works through
//!    file by file. Cached loads are timed three ways:
//!    in a new process as its first build call (which also probes the
//!    toolchain), in a new process after another model was loaded (hashing
//!    the spec, `dlopen` and instantiation), and in the same process, where
//!    the library is already loaded.
//! 3. `sim`: simulation speed of the int8 and bf16 8x8 and 16x16 MXU, with
//!    two input patterns held (`a_valid_i` high in both):
//!    - stream: `a_first_i` and `w_valid_i` low. A row is accepted every
//!      cycle, flows through the array (weights stationary) and is written to
//!      the accumulator: the steady state of a long matmul.
//!    - reload: `a_first_i` and `w_valid_i` high. Every row is a one-row tile,
//!      so the weight FIFO and the loader never rest, and a row is accepted
//!      only when the next tile is loaded.
//!
//!    Each is run with the clock looped in C++ (`Model::run_cycles_native`)
//!    and by a plain Rust loop that does per cycle what the driver does in a
//!    pass: poke its seven inputs (`w_valid_i`, `w_row_i`, `a_valid_i`,
//!    `a_first_i`, `a_row_i`, `a_acc_addr_i`, `a_acc_add_i`), eval, peek the
//!    handshakes (`w_ready_o`, `a_ready_o`, `acc_wr_o`) and step: the floor of
//!    any Rust driver. Then the driver itself on a long activation stream:
//!    `MxuDriver::matmul_int8` with M = 4096, K = N = 8R, and
//!    `MxuDriver::matmul_bf16` sized to run about a second (8x8: M = 768,
//!    K = N = 128; 16x16: M = 1024, K = N = 64), all in passes of 256 rows
//!    (the accumulator's depth), each followed by its read-out. Speeds are RTL
//!    cycles per wall second and useful simulated MACs per second: R x C per
//!    accepted row for the loops (the rows per cycle are counted on the RTL),
//!    M x K x N for the driver, whose cycles include the accumulator read-out.
//!    Both loops start from one loaded tile of random weights: bf16 simulates
//!    markedly slower with real operands than with the zeros of reset. Quick
//!    mode gives the driver a quarter of the rows.
//! 4. `cycles`: RTL cycle counts measured by the driver next to the golden
//!    cycle model (`golden::MxuTiming::total_cycles`), with the utilization and
//!    whether C matches `golden::matmul_int8` / `golden::matmul_bf16`, for both
//!    types: 8x8 and 16x16 with M = 256, K = N = 64, and two ragged shapes (one
//!    with M above the accumulator's 256 rows, so several passes), at the
//!    default pipeline depth 0; then the 8x8 case again at the depth of the
//!    `fmax` presets (`mxu::fmax_depth`). Lines below the table check the
//!    speed requirement: on the 8x8 array with M = 256, K = N = 64,
//!    utilization from RTL cycles >= 97 % and RTL cycles equal to the golden
//!    prediction, and the pipelined array's utilization within 2 % of the
//!    unpipelined one's.
//! 5. `golden`: `golden::matmul_int8` throughput for 64^3, 256^3 and 512^3,
//!    `golden::matmul_bf16` (exact soft-float) for 64^3 and 256^3.
//! 6. `speed`: simulation speed and build time before and now (`systole/speed.rs`
//!    explains the recipes): `MxuDriver` cycles/s on int8 16x16 (2048x128x128)
//!    and bf16 16x16 (2048x128x64) for four data sets (standard normal
//!    values, zeros, specials, subnormals) with the spread between them, cold
//!    builds of the int8 and bf16 16x16 models (and bf16 32x32 with
//!    `SYSTOLE_BENCH_BUILD_32`; its "before" only with `=before`: some 17
//!    minutes), and the run CLI under both releases. "Before" is measured in a
//!    child process under Debian's Verilator 5.006 (`/usr/bin/verilator`).
//! 7. `scaling`: cold model build time, build time per PE and `MxuDriver`
//!    cycles/s (and PE-cycles/s) for int8 4x4 .. 64x64 and bf16 4x4 .. 32x32.
//! 8. `reference`: the generated int8 16x16 top against a hand-written 16x16
//!    output-stationary array (`benches/reference/os_array_int8_16x16.v`), both
//!    built with the same release and options and driven from Rust with random
//!    inputs every cycle.
//!
//! Run everything (about three minutes on two cores, most of it C++
//! compilation of the cold builds, the bf16 16x16 one above all), and the
//! build table with the bf16 32x32 cold build added:
//!
//! ```text
//! cargo bench -p tb --bench systole
//! SYSTOLE_BENCH_BUILD_32=bf16 cargo bench -p tb --bench systole -- build
//! ```
//!
//! Quick mode skips the 256x256 generation, all cold builds and the scaling
//! table's 32x32 and 64x64 rows, runs the speed table with M = 512, and uses
//! shorter measurements; cached loads then come from the usual model cache
//! (`$SYSTOLE_CACHE_DIR`, else `$CARGO_TARGET_DIR/systole-models`), so once
//! that cache holds the 8x8 and 16x16 models of both types it takes seconds
//! (filling it takes minutes the first time):
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
use sim::drivers::mxu::{pack, MatmulStats, MxuDriver, MxuPorts};
use sim::{BuildOptions, CacheStatus, Model, ModelSpec, Trace};
use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use tb::mxu::{moderate_bf16, random_i8};

#[path = "systole/speed.rs"]
mod speed;

/// Set in a child process started by the `build` table: a comma-separated list
/// of arrays (`int8:8`, `bf16:16`) to load from the (already filled) cache,
/// timing each.
const CHILD_ENV: &str = "SYSTOLE_BENCH_RELOAD_CHILD";
const QUICK_ENV: &str = "SYSTOLE_BENCH_QUICK";
const CACHE_ENV: &str = "SYSTOLE_CACHE_DIR";
const BUILD_32_ENV: &str = "SYSTOLE_BENCH_BUILD_32";

const TABLES: [&str; 8] = [
    "gen",
    "build",
    "sim",
    "cycles",
    "golden",
    "speed",
    "scaling",
    "reference",
];
const DTYPES: [ElemType; 2] = [ElemType::Int8, ElemType::Bf16];
const GEN_SIZES: [u32; 7] = [4, 8, 16, 32, 64, 128, 256];
/// Sizes built (cold) and loaded (cached) by `build`, and simulated by `sim`.
const SIM_SIZES: [u32; 2] = [8, 16];

/// One MXU array: element type and size (square, default accumulator).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Array {
    dtype: ElemType,
    n: u32,
}

impl Array {
    fn new(dtype: ElemType, n: u32) -> Array {
        Array { dtype, n }
    }

    fn cfg(self) -> MxuConfig {
        MxuConfig::new(self.n, self.n, self.dtype).expect("valid MXU size")
    }

    /// `int8 8x8`.
    fn label(self) -> String {
        format!("{} {}x{}", self.dtype, self.n, self.n)
    }

    /// `int8:8`, the form passed to the reload child.
    fn token(self) -> String {
        format!("{}:{}", self.dtype, self.n)
    }

    fn parse(token: &str) -> Option<Array> {
        let (dtype, n) = token.trim().split_once(':')?;
        Some(Array::new(dtype.parse().ok()?, n.parse().ok()?))
    }
}

/// The arrays of `sizes`, int8 first.
fn arrays(sizes: &[u32]) -> Vec<Array> {
    DTYPES
        .iter()
        .flat_map(|&t| sizes.iter().map(move |&n| Array::new(t, n)))
        .collect()
}
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
    if let Ok(list) = std::env::var(speed::CHILD_ENV) {
        speed::child(&list, opts.quick);
        return;
    }
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
    if opts.wants("speed") {
        speed::speed_table(&opts);
    }
    if opts.wants("scaling") {
        speed::scaling_table(&opts);
    }
    if opts.wants("reference") {
        speed::reference_table(&opts);
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
    let verilator = sim::verilator_release().map_or_else(
        |e| format!("no Verilator ({e})"),
        |r| format!("Verilator {r}"),
    );
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

/// `len` bf16 operands of moderate magnitude (`tb::mxu::moderate_bf16`):
/// sums that round and cancel, but no overflow, NaN or subnormal.
fn moderate_bf16s(rng: &mut impl Rng, len: usize) -> Vec<u16> {
    (0..len).map(|_| moderate_bf16(rng)).collect()
}

/// Random operands of one matmul C = A x B of either element type.
struct Operands {
    dtype: ElemType,
    a_i8: Vec<i8>,
    b_i8: Vec<i8>,
    a_bf16: Vec<u16>,
    b_bf16: Vec<u16>,
    shape: (usize, usize, usize),
}

impl Operands {
    fn random(rng: &mut impl Rng, dtype: ElemType, (m, k, n): (usize, usize, usize)) -> Operands {
        let mut ops = Operands {
            dtype,
            a_i8: Vec::new(),
            b_i8: Vec::new(),
            a_bf16: Vec::new(),
            b_bf16: Vec::new(),
            shape: (m, k, n),
        };
        match dtype {
            ElemType::Int8 => {
                ops.a_i8 = random_i8(rng, m * k);
                ops.b_i8 = random_i8(rng, k * n);
            }
            ElemType::Bf16 => {
                ops.a_bf16 = moderate_bf16s(rng, m * k);
                ops.b_bf16 = moderate_bf16s(rng, k * n);
            }
        }
        ops
    }

    /// C on the RTL (bit patterns) with the driver's statistics.
    fn run(&self, driver: &mut MxuDriver) -> Result<(Vec<u32>, MatmulStats), String> {
        match self.dtype {
            ElemType::Int8 => driver
                .matmul_int8(&self.a_i8, &self.b_i8, self.shape, None)
                .map(|(c, s)| (c.into_iter().map(|x| x as u32).collect(), s)),
            ElemType::Bf16 => driver.matmul_bf16(&self.a_bf16, &self.b_bf16, self.shape, None),
        }
        .map_err(|e| e.to_string())
    }

    /// C from the golden model, as bit patterns, for an array of `rows` rows.
    fn golden(&self, rows: usize) -> Vec<u32> {
        let (m, k, n) = self.shape;
        match self.dtype {
            ElemType::Int8 => golden::matmul_int8(&self.a_i8, &self.b_i8, m, k, n)
                .into_iter()
                .map(|x| x as u32)
                .collect(),
            ElemType::Bf16 => golden::matmul_bf16(&self.a_bf16, &self.b_bf16, m, k, n, rows),
        }
    }
}

// ---------------------------------------------------------------------------
// 1. Verilog generation

fn gen_table(opts: &Options) {
    header(
        "1. Verilog generation (MXU, `gen::generate`)",
        &[
            "type",
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
    for array in arrays(&GEN_SIZES) {
        let n = array.n;
        let pes = int(u64::from(n) * u64::from(n));
        let name = [array.dtype.to_string(), format!("{n}x{n}")];
        if opts.quick && n > 128 {
            let mut cells = name.to_vec();
            cells.push("skipped (quick)".into());
            cells.extend(std::iter::repeat_n("-".to_string(), 5));
            cells.push(pes);
            row(&cells);
            continue;
        }
        let cfg = array.cfg();
        let mut runs = 0;
        let (best, generated) = best_of(20, Duration::from_secs(2), || {
            runs += 1;
            gen::generate(&cfg)
        });
        let g = match generated {
            Ok(g) => g,
            Err(e) => {
                let mut cells = name.to_vec();
                cells.push(format!("error: {e}"));
                row(&cells);
                continue;
            }
        };
        let lines: usize = g.files.iter().map(|f| f.text.lines().count()).sum();
        let bytes: usize = g.files.iter().map(|f| f.text.len()).sum();
        let mut cells = name.to_vec();
        cells.extend([
            secs(best),
            runs.to_string(),
            g.files.len().to_string(),
            g.modules.to_string(),
            int(lines as u64),
            int(bytes as u64),
            pes,
        ]);
        row(&cells);
    }
    println!();
}

// ---------------------------------------------------------------------------
// 2. Verilator model builds

fn mxu_spec(array: Array) -> (ModelSpec, String) {
    let cfg = array.cfg();
    let spec = sim::drivers::mxu::mxu_spec(&cfg).expect("the MXU elaborates");
    (spec, mxu::top_name(&cfg))
}

fn build_model(spec: &ModelSpec, label: &str) -> Model {
    Model::build_with(spec, label, &BuildOptions::new().trace(Trace::Off))
        .unwrap_or_else(|e| panic!("cannot build {label}: {e}"))
}

/// Builds the model once, timed; returns the time, the cache status and the
/// size of its shared library.
fn timed_build(array: Array) -> (Duration, CacheStatus, u64) {
    let (spec, label) = mxu_spec(array);
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
/// array from the cache in order and prints `reload <array> <seconds> <status>`.
fn reload_child(list: &str) {
    for array in list.split(',').filter_map(Array::parse) {
        let (took, status, _) = timed_build(array);
        println!("reload {} {} {status:?}", array.token(), took.as_secs_f64());
    }
}

/// Starts this program again to load the arrays `order` from the cache in a
/// new process; returns the load time of the last one.
fn reload_in_new_process(order: &[Array], cache: &Path) -> Result<Duration, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let list: Vec<String> = order.iter().map(|a| a.token()).collect();
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
    let target = order.last().map(|a| a.token()).unwrap_or_default();
    let stdout = String::from_utf8_lossy(&out.stdout);
    for line in stdout.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if let ["reload", token, s, status] = fields[..] {
            if token == target {
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

/// The arrays `build` covers: 8x8 and 16x16 of both types, plus the 32x32
/// ones `SYSTOLE_BENCH_BUILD_32` asks for (`int8`, `bf16`, or any other
/// non-empty value but `0` for both), which are built last.
fn build_arrays(opts: &Options) -> Vec<Array> {
    let mut list = arrays(&SIM_SIZES);
    if opts.quick {
        return list;
    }
    let value = std::env::var(BUILD_32_ENV).unwrap_or_default();
    let value = value.trim().to_ascii_lowercase();
    if value.is_empty() || value == "0" {
        return list;
    }
    match value.parse::<ElemType>() {
        Ok(dtype) => list.push(Array::new(dtype, 32)),
        Err(_) => list.extend(DTYPES.iter().map(|&t| Array::new(t, 32))),
    }
    list
}

fn build_table(opts: &Options) -> Option<tempfile::TempDir> {
    let list = build_arrays(opts);
    let mut cold_full = Vec::new(); // (runtime + model) per array, if measured
    let mut cold_model = Vec::new(); // model only per array
    let mut lib_size = Vec::new();
    let cache = if opts.quick {
        // Cached loads from the usual cache; fill it first, untimed.
        for &array in &list {
            let (took, status, bytes) = timed_build(array);
            if status == CacheStatus::Built {
                eprintln!(
                    "bench: built {} into the model cache in {}",
                    array.label(),
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
        for (i, &array) in list.iter().enumerate() {
            eprintln!("bench: cold build of {}...", array.label());
            let (took, status, bytes) = timed_build(array);
            eprintln!("bench: {} built in {}", array.label(), secs(took));
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
                eprintln!("bench: cold build of {} (model only)...", list[0].label());
                let (took, status, _) = timed_build(list[0]);
                cold_model[0] = Some(cold_cell(took, status));
            }
            Err(e) => cold_model[0] = Some(format!("error: {e}")),
        }
        std::env::set_var(CACHE_ENV, main.path());
        Some(main)
    };
    let cache_dir = match &cache {
        Some(dir) => dir.path().to_path_buf(),
        None => sim::verilator::cache_dir(),
    };

    header(
        "2. Verilator model build (MXU)",
        &[
            "type",
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
    for (i, &array) in list.iter().enumerate() {
        let other = list[(i + 1) % list.len()];
        let first = reload_in_new_process(&[array], &cache_dir);
        let after = reload_in_new_process(&[other, array], &cache_dir);
        let same = (0..reps)
            .map(|_| timed_build(array).0)
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
            array.dtype.to_string(),
            format!("{0}x{0}", array.n),
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
            "\nThe Verilator runtime is compiled once per cache folder: the {} row's \
             difference ({full} vs {model}) is its cost. Cold builds run with {} compiler \
             jobs. \"After another load\" loads the next row's model first.",
            list[0].label(),
            std::thread::available_parallelism().map_or(1, |n| n.get())
        );
    }
    if !opts.quick && !list.iter().any(|a| a.n == 32) {
        println!(
            "\n32x32 cold builds skipped: set {BUILD_32_ENV}=1 (or =int8, =bf16) to \
             run them."
        );
    }
    println!();
    cache
}

// ---------------------------------------------------------------------------
// 3. Simulation speed

/// A random row of `len` elements as port words (element 0 lowest): int8
/// values as `tb::mxu::random_i8` makes them, or moderate bf16 values.
fn random_row(rng: &mut impl Rng, dtype: ElemType, len: u32) -> Vec<u32> {
    let bits = dtype.operand_bits();
    let values: Vec<u32> = match dtype {
        ElemType::Int8 => random_i8(rng, len as usize)
            .into_iter()
            .map(|x| u32::from(x as u8))
            .collect(),
        ElemType::Bf16 => moderate_bf16s(rng, len as usize)
            .into_iter()
            .map(u32::from)
            .collect(),
    };
    let mut words = vec![0u32; (len * bits).div_ceil(32) as usize];
    pack(values.into_iter(), bits, &mut words);
    words
}

/// An input pattern of the raw loops: `a_valid_i` is always high.
#[derive(Clone, Copy)]
struct Pattern {
    name: &'static str,
    a_first: u64,
    w_valid: u64,
}

const PATTERNS: [Pattern; 2] = [
    // A row every cycle through stationary weights: a long matmul's steady state.
    Pattern {
        name: "stream",
        a_first: 0,
        w_valid: 0,
    },
    // One-row tiles back to back: weights move all the time.
    Pattern {
        name: "reload",
        a_first: 1,
        w_valid: 1,
    },
];

/// The driver's long stream per array: (M, K, N), in passes of 256 rows (the
/// accumulator's depth), each followed by its read-out. int8 as it always was;
/// bf16 (five to ten times slower to simulate) sized to run about a second.
/// Quick mode takes a quarter of the rows.
fn driver_shape(array: Array, quick: bool) -> (usize, usize, usize) {
    let r = array.n as usize;
    let (m, k, n) = match (array.dtype, array.n) {
        (ElemType::Int8, _) => (4096usize, 8 * r, 8 * r),
        (ElemType::Bf16, 8) => (768, 128, 128),
        (ElemType::Bf16, 16) => (1024, 64, 64),
        (ElemType::Bf16, _) => (256, 2 * r, 2 * r),
    };
    (if quick { m.div_ceil(4) } else { m }, k, n)
}

/// Resets the model, starts one tile of weight rows `w` (so the array holds
/// real weights, not the zeros of reset) and holds `pat` on its inputs, with
/// the activation row `a`, accumulator row 0 and overwrite.
fn hold_pattern(model: &mut Model, p: &MxuPorts, pat: Pattern, w: &[u32], a: &[u32]) {
    p.reset_idle(model);
    model.poke(p.w_valid, 1);
    model.poke_wide(p.w_row, w);
    model.poke(p.a_valid, 1);
    model.poke(p.a_first, 1);
    model.poke_wide(p.a_row, a);
    model.poke(p.a_addr, 0);
    model.poke(p.a_add, 0);
    for _ in 0..10_000 {
        model.eval();
        let accepted = model.peek(p.a_ready) == 1;
        model.step();
        if accepted {
            break;
        }
    }
    model.poke(p.w_valid, pat.w_valid);
    model.poke(p.a_first, pat.a_first);
}

/// Rows accepted per cycle with the inputs held as they are, counted on the
/// RTL over `cycles` cycles after a warm-up.
fn rows_per_cycle(model: &mut Model, p: &MxuPorts, cycles: u64) -> f64 {
    let mut accepted = 0u64;
    for i in 0..cycles + 256 {
        model.eval();
        if i >= 256 {
            accepted += model.peek(p.a_ready);
        }
        model.step();
    }
    accepted as f64 / cycles as f64
}

/// One row of the `sim` table.
type SimRow = [String; 7];

fn sim_error_row(array: Array, what: String) -> SimRow {
    [
        array.dtype.to_string(),
        format!("{0}x{0}", array.n),
        what,
        "-".into(),
        "-".into(),
        "-".into(),
        "-".into(),
    ]
}

/// The raw loops (C++ and Rust) on one array, both patterns.
fn loop_rows(array: Array, target: Duration, reps: usize, rows_out: &mut Vec<SimRow>) {
    let n = array.n;
    let (spec, label) = mxu_spec(array);
    let mut model = build_model(&spec, &label);
    let p = MxuPorts::of(&model).expect("MXU ports");
    let mut rng = ChaCha8Rng::seed_from_u64(u64::from(n) + 100 * (array.dtype as u64));
    let w_words = [
        random_row(&mut rng, array.dtype, n),
        random_row(&mut rng, array.dtype, n),
    ];
    let a_words = [
        random_row(&mut rng, array.dtype, n),
        random_row(&mut rng, array.dtype, n),
    ];
    let slots = f64::from(n * n);
    let acc_mask = u64::from(array.cfg().acc_rows()) - 1;

    for pat in PATTERNS {
        hold_pattern(&mut model, &p, pat, &w_words[0], &a_words[0]);
        let accept = rows_per_cycle(&mut model, &p, 4096);
        let (cycles, best) = calibrated(target, reps, |c| model.run_cycles_native(c));
        let rate = cycles as f64 / best.as_secs_f64();
        rows_out.push([
            array.dtype.to_string(),
            format!("{n}x{n}"),
            format!(
                "C++ loop (`run_cycles_native`), {} (a_first={} w_valid={} held): \
                 {accept:.3} rows/cycle",
                pat.name, pat.a_first, pat.w_valid
            ),
            int(cycles),
            secs(best),
            si(rate),
            si(rate * accept * slots),
        ]);

        // Rust loop: what the driver does per cycle of a pass, minus its bookkeeping.
        hold_pattern(&mut model, &p, pat, &w_words[0], &a_words[0]);
        let (cycles, best) = calibrated(target, reps, |c| {
            for i in 0..c {
                let k = (i & 1) as usize;
                model.poke(p.w_valid, pat.w_valid);
                model.poke_wide(p.w_row, &w_words[k]);
                model.poke(p.a_valid, 1);
                model.poke(p.a_first, pat.a_first);
                model.poke_wide(p.a_row, &a_words[k]);
                model.poke(p.a_addr, i & acc_mask);
                model.poke(p.a_add, 0);
                model.eval();
                black_box(model.peek(p.w_ready));
                black_box(model.peek(p.a_ready));
                black_box(model.peek(p.acc_wr));
                model.step();
            }
        });
        let rate = cycles as f64 / best.as_secs_f64();
        rows_out.push([
            array.dtype.to_string(),
            format!("{n}x{n}"),
            format!("Rust loop (poke 7, eval, peek 3, step), {}", pat.name),
            int(cycles),
            secs(best),
            si(rate),
            si(rate * accept * slots),
        ]);
    }
}

/// The driver on a long stream (`driver_shape`).
fn driver_row(array: Array, reps: usize, quick: bool) -> SimRow {
    let (m, k, n) = driver_shape(array, quick);
    let method = match array.dtype {
        ElemType::Int8 => "matmul_int8",
        ElemType::Bf16 => "matmul_bf16",
    };
    let what = format!("`MxuDriver::{method}`, M={m} K={k} N={n}");
    let mut rng = ChaCha8Rng::seed_from_u64(u64::from(array.n) + 7);
    let ops = Operands::random(&mut rng, array.dtype, (m, k, n));
    let mut driver = match MxuDriver::new(&array.cfg()) {
        Ok(d) => d,
        Err(e) => return sim_error_row(array, format!("{what}: error {e}")),
    };
    let (best, result) = best_of(reps.min(2), Duration::from_secs(10), || {
        ops.run(&mut driver)
    });
    match result {
        Ok((_, stats)) => {
            let s = best.as_secs_f64();
            let cycles = stats.cycles + stats.readout_cycles;
            [
                array.dtype.to_string(),
                format!("{0}x{0}", array.n),
                format!(
                    "{what} ({} tiles, {} passes, {} read-out cycles)",
                    int(stats.tiles),
                    stats.passes,
                    int(stats.readout_cycles)
                ),
                int(cycles),
                secs(best),
                si(cycles as f64 / s),
                si(stats.macs as f64 / s),
            ]
        }
        Err(e) => sim_error_row(array, format!("{what}: error {e}")),
    }
}

fn sim_table(opts: &Options) {
    let target = Duration::from_millis(if opts.quick { 250 } else { 1000 });
    let reps = if opts.quick { 1 } else { 3 };
    let mut rows_out = Vec::new();
    for array in arrays(&SIM_SIZES) {
        eprintln!("bench: simulating {}...", array.label());
        loop_rows(array, target, reps, &mut rows_out);
        rows_out.push(driver_row(array, reps, opts.quick));
    }
    header(
        "3. Simulation speed (MXU, Verilator)",
        &[
            "type",
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
        "\nStream: a row accepted every cycle through stationary weights (a long \
         matmul's steady state). Reload: one-row tiles back to back, so the weight FIFO \
         and loader never rest and a row is accepted only when the next tile is loaded \
         (rows/cycle counted on the RTL). Both start from one loaded tile of random \
         weights. The Rust loop alternates between two input rows and walks the \
         accumulator rows; the C++ loop holds one row and one address. Simulated MAC/s \
         are useful multiply-accumulates per wall second: R x C per accepted row for the \
         loops, M x K x N for the driver. The driver's RTL cycles are its pass cycles \
         plus the accumulator read-out after each pass (one row per cycle)."
    );
    println!();
}

// ---------------------------------------------------------------------------
// 4. Cycle model check

/// The speed requirement on the 8x8 array with M = 256, K = N = 64.
const REQUIRED_UTILIZATION: f64 = 0.97;
const REQUIREMENT_CASE: (u32, usize, usize, usize) = (8, 256, 64, 64);

fn cycles_table() {
    header(
        "4. Cycle model check (RTL vs `golden::MxuTiming`)",
        &[
            "type",
            "array",
            "depth",
            "M x K x N",
            "tiles",
            "passes",
            "RTL cycles",
            "golden cycles",
            "cycles",
            "RTL utilization",
            "C vs golden",
        ],
    );
    let mut requirement = Vec::new();
    let mut pipelined = Vec::new();
    for dtype in DTYPES {
        let cases: [(u32, usize, usize, usize, u32); 5] = [
            with_depth(REQUIREMENT_CASE, 0),
            (16, 256, 64, 64, 0),
            (8, 7, 20, 13, 0),
            (16, 300, 40, 20, 0),
            with_depth(REQUIREMENT_CASE, mxu::fmax_depth(dtype)),
        ];
        let mut rng = ChaCha8Rng::seed_from_u64(4 + dtype as u64);
        for (n, m, k, nn, depth) in cases {
            let array = Array::new(dtype, n);
            let cfg = array.cfg().with_depth(depth).expect("a valid depth");
            let shape = format!("{m} x {k} x {nn}");
            let timing = golden::MxuTiming::new(&cfg, m, k, nn);
            let passes = timing.passes();
            let tiles: u64 = passes.iter().map(|&(_, g)| g * timing.k_tiles()).sum();
            let ops = Operands::random(&mut rng, dtype, (m, k, nn));
            let expected = ops.golden(n as usize);
            let result = MxuDriver::new(&cfg)
                .map_err(|e| e.to_string())
                .and_then(|mut d| ops.run(&mut d));
            let golden_cycles = timing.total_cycles();
            let name = [
                dtype.to_string(),
                format!("{n}x{n}"),
                depth.to_string(),
                shape,
            ];
            let mut cells = name.to_vec();
            let requirement_case = (n, m, k, nn) == REQUIREMENT_CASE;
            match result {
                Ok((c, stats)) => {
                    let equal = stats.cycles == golden_cycles;
                    let utilization = stats.utilization();
                    if requirement_case && depth == 0 {
                        requirement.push((dtype, Some((utilization, equal))));
                    } else if requirement_case {
                        pipelined.push((dtype, Some(utilization)));
                    }
                    cells.extend([
                        int(stats.tiles),
                        stats.passes.to_string(),
                        int(stats.cycles),
                        int(golden_cycles),
                        if equal { "equal" } else { "DIFFER" }.into(),
                        format!("{:.2} %", 100.0 * utilization),
                        if c == expected { "equal" } else { "DIFFER" }.into(),
                    ]);
                }
                Err(e) => {
                    if requirement_case && depth == 0 {
                        requirement.push((dtype, None));
                    } else if requirement_case {
                        pipelined.push((dtype, None));
                    }
                    cells.extend([
                        int(tiles),
                        passes.len().to_string(),
                        format!("error: {e}"),
                        int(golden_cycles),
                        "DIFFER".into(),
                        "-".into(),
                        "-".into(),
                    ]);
                }
            }
            row(&cells);
        }
    }
    let (n, m, k, nn) = REQUIREMENT_CASE;
    println!(
        "\nRequirement ({n}x{n}, M = {m}, K = {k}, N = {nn}): utilization from RTL cycles \
         >= {:.0} % and RTL cycles equal to the golden prediction.",
        100.0 * REQUIRED_UTILIZATION
    );
    for &(dtype, outcome) in &requirement {
        let verdict = match outcome {
            Some((u, equal)) => {
                let met = u >= REQUIRED_UTILIZATION && equal;
                format!(
                    "{} (utilization {:.2} %, cycles {})",
                    if met { "met" } else { "NOT MET" },
                    100.0 * u,
                    if equal { "equal" } else { "DIFFER" }
                )
            }
            None => "NOT MET (the run failed)".into(),
        };
        println!("- {dtype}: {verdict}");
    }
    println!(
        "\nAt the `fmax` presets' depth (int8 {}, bf16 {}), the same case's utilization \
         against depth 0 (within 2 % required):",
        mxu::fmax_depth(ElemType::Int8),
        mxu::fmax_depth(ElemType::Bf16)
    );
    for (dtype, utilization) in pipelined {
        let base = requirement
            .iter()
            .find(|(t, _)| *t == dtype)
            .and_then(|(_, o)| o.map(|(u, _)| u));
        let verdict = match (utilization, base) {
            (None, _) => "NOT MET (the run failed)".into(),
            (Some(utilization), Some(base)) => {
                let change = (utilization - base) / base;
                format!(
                    "{} ({:.2} % against {:.2} %, {:+.2} %)",
                    if change.abs() <= 0.02 {
                        "met"
                    } else {
                        "NOT MET"
                    },
                    100.0 * utilization,
                    100.0 * base,
                    100.0 * change
                )
            }
            (Some(_), None) => "NOT MET (the depth 0 run failed)".into(),
        };
        println!("- {dtype}: {verdict}");
    }
    println!();
}

/// A cycles-table case (array size, M, K, N) at pipeline depth `depth`.
fn with_depth(
    (n, m, k, nn): (u32, usize, usize, usize),
    depth: u32,
) -> (u32, usize, usize, usize, u32) {
    (n, m, k, nn, depth)
}

// ---------------------------------------------------------------------------
// 5. Golden model

fn golden_table(opts: &Options) {
    header(
        "5. Golden model (`golden::matmul_int8`, `golden::matmul_bf16`)",
        &["type", "M = K = N", "MACs", "time (best)", "runs", "MAC/s"],
    );
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let cases = [
        (ElemType::Int8, 64usize),
        (ElemType::Int8, 256),
        (ElemType::Int8, 512),
        (ElemType::Bf16, 64),
        (ElemType::Bf16, 256),
    ];
    for (dtype, n) in cases {
        let ops = Operands::random(&mut rng, dtype, (n, n, n));
        let max_runs = if opts.quick { 3 } else { 20 };
        let mut runs = 0;
        // The bf16 result depends on the array's K tiling: 8 rows, as in `cycles`.
        let (best, _) = best_of(max_runs, Duration::from_secs(3), || {
            runs += 1;
            black_box(&ops).golden(8)
        });
        let macs = (n * n * n) as u64;
        row(&[
            dtype.to_string(),
            n.to_string(),
            int(macs),
            secs(best),
            runs.to_string(),
            si(macs as f64 / best.as_secs_f64()),
        ]);
    }
    println!();
}

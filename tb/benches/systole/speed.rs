//! Tables 6 to 8: simulation speed and model build time as users of the RTL
//! see them (issue 9), each number next to what it was before.
//!
//! **Recipes.** A model is built either as Systole builds it today (the
//! default Verilator release, with the model hints the generator and
//! `sim::from_hw` give: one shared copy of the bf16 PE's code, Verilator's
//! function splitting) or as it was built before them: Debian's Verilator 5.006, which
//! gets `-fno-dfg`, from the same Verilog with the hints taken out
//! ([`Recipe::Before`]). The release is chosen per process, so "before" rows
//! are measured in a child process started with `SYSTOLE_VERILATOR` pointing
//! at `/usr/bin/verilator`. The Verilog is today's in both, so the emitter's
//! cheaper sign extension counts for both columns.
//!
//! **What is measured.** Cycles per wall second of `MxuDriver` matmuls (pass
//! cycles plus read-out, best of a few runs) and of the run CLI (the wall time
//! of `sim matmul` less that of the same command with `--golden`); cold
//! builds in a fresh cache folder that already holds the Verilator runtime.

use super::{best_of, header, int, row, secs, si, temp_cache, Options};
use config::{ElemType, MxuConfig};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sim::drivers::mxu::MxuDriver;
use sim::{BuildOptions, Model, ModelSpec, Trace};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Set in the child process that measures the "before" recipe: the items to
/// measure, comma-separated; it prints `speed <item> <value>` lines.
pub const CHILD_ENV: &str = "SYSTOLE_BENCH_SPEED_CHILD";
/// The Verilator of the "before" rows: Debian's 5.006.
const BEFORE_VERILATOR: &str = "/usr/bin/verilator";

/// How a model is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recipe {
    /// Today's spec: the generator's `no_inline` lines and `sim::from_hw`'s
    /// Verilator arguments.
    Now,
    /// The same Verilog without those hints (run under 5.006 for the rows).
    Before,
}

/// The MXU spec for `cfg` under `recipe`.
pub fn spec(cfg: &MxuConfig, recipe: Recipe) -> ModelSpec {
    let mut spec = sim::drivers::mxu::mxu_spec(cfg).expect("the MXU elaborates");
    if recipe == Recipe::Before {
        strip_hints(&mut spec);
    }
    spec
}

/// Takes the model hints out of a spec: the layout requests (`no_inline`,
/// `public_flat_rd`, `split_var`, with their comments) of the Verilator configuration file, and
/// `sim::from_hw`'s arguments.
fn strip_hints(spec: &mut ModelSpec) {
    for (name, text) in &mut spec.sources {
        if name.as_str() == hw::emit::WAIVER_FILE {
            *text = text
                .lines()
                .filter(|l| {
                    !l.starts_with("no_inline")
                        && !l.starts_with("split_var")
                        && !l.contains(": buses split into one variable per element")
                        && !l.starts_with("public_flat_rd -module")
                        && !l.contains(": not inlined: ")
                        && !l.contains(": one code for all instances: ")
                })
                .map(|l| format!("{l}\n"))
                .collect();
        }
    }
    // `sim::from_hw` puts its arguments first.
    let hints = sim::from_hw::HW_VERILATOR_ARGS;
    let args = &mut spec.verilator_args;
    if args.len() >= hints.len() && args.iter().zip(hints).all(|(a, h)| a == h) {
        args.drain(..hints.len());
    }
    args.retain(|a| !sim::from_hw::SHARED_CODE_ARGS.contains(&a.as_str()));
}

fn build(spec: &ModelSpec, label: &str) -> Result<Model, String> {
    Model::build_with(spec, label, &BuildOptions::new().trace(Trace::Off))
        .map_err(|e| e.to_string())
}

fn cfg(dtype: ElemType, n: u32) -> MxuConfig {
    MxuConfig::new(n, n, dtype).expect("valid MXU size")
}

// ---------------------------------------------------------------------------
// Operands

/// The bf16 data sets of the data-dependence rows.
pub const BF16_DATA: [&str; 4] = ["normal", "zeros", "specials", "subnormals"];

/// A bf16 value drawn from the named data set: standard normal values
/// (rounded to bf16), all +0, infinities, NaNs, zeros, the largest finite and
/// smallest normal values, or subnormals (read as zeros).
fn bf16_of(rng: &mut impl Rng, data: &str) -> u16 {
    match data {
        "normal" => {
            // Box-Muller.
            let (u, v): (f64, f64) = (rng.gen_range(f64::MIN_POSITIVE..1.0), rng.gen());
            let x = (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos();
            let bits = (x as f32).to_bits();
            // Round to nearest even at the bf16 precision.
            ((bits + 0x7fff + ((bits >> 16) & 1)) >> 16) as u16
        }
        "zeros" => 0,
        "specials" => {
            const SPECIALS: [u16; 8] = [
                0x7f80, 0xff80, 0x7fc0, 0x0000, 0x8000, 0x7f7f, 0xff7f, 0x0080,
            ];
            SPECIALS[rng.gen_range(0..SPECIALS.len())]
        }
        "subnormals" => rng.gen_range(1..0x80u16) | (u16::from(rng.gen::<bool>()) << 15),
        other => panic!("unknown data set {other}"),
    }
}

/// The matmul shape of the speed rows, as in the issue: M = 2048 (512 in
/// quick mode), K = 128, N = 128 for int8 and 64 for bf16.
fn shape(dtype: ElemType, quick: bool) -> (usize, usize, usize) {
    let m = if quick { 512 } else { 2048 };
    match dtype {
        ElemType::Int8 => (m, 128, 128),
        ElemType::Bf16 => (m, 128, 64),
    }
}

// ---------------------------------------------------------------------------
// Measurements (in this process, under its Verilator)

/// Cycles per second of `MxuDriver` on a `n`x`n` array of `dtype` built with
/// `recipe`, on the `data` set (bf16) or random int8 values.
fn driver_speed(
    dtype: ElemType,
    n: u32,
    recipe: Recipe,
    data: &str,
    quick: bool,
) -> Result<f64, String> {
    let cfg = cfg(dtype, n);
    let model = build(&spec(&cfg, recipe), &mxu::top_name(&cfg))?;
    let mut driver = MxuDriver::with_model(&cfg, model).map_err(|e| e.to_string())?;
    let (m, k, nn) = shape(dtype, quick);
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let reps = if quick { 2 } else { 3 };
    let (best, cycles) = match dtype {
        ElemType::Int8 => {
            let a = tb::mxu::random_i8(&mut rng, m * k);
            let b = tb::mxu::random_i8(&mut rng, k * nn);
            best_of(reps, Duration::from_secs(60), || {
                driver
                    .matmul_int8(&a, &b, (m, k, nn), None)
                    .map(|(_, s)| s.cycles + s.readout_cycles)
            })
        }
        ElemType::Bf16 => {
            let a: Vec<u16> = (0..m * k).map(|_| bf16_of(&mut rng, data)).collect();
            let b: Vec<u16> = (0..k * nn).map(|_| bf16_of(&mut rng, data)).collect();
            best_of(reps, Duration::from_secs(60), || {
                driver
                    .matmul_bf16(&a, &b, (m, k, nn), None)
                    .map(|(_, s)| s.cycles + s.readout_cycles)
            })
        }
    };
    let cycles = cycles.map_err(|e| e.to_string())?;
    Ok(cycles as f64 / best.as_secs_f64())
}

/// Seconds of a cold build of the `n`x`n` array of `dtype` under `recipe`:
/// in a fresh cache folder that holds only the Verilator runtime, so only the
/// model's own build is timed. The runtime's object files depend on what the
/// model uses (public signals bring more of it), so the same model is first
/// built (untimed, usually just loaded) in the usual cache, whose runtime
/// entries are then copied.
pub fn cold_build(dtype: ElemType, n: u32, recipe: Recipe) -> Result<Duration, String> {
    let cfg = cfg(dtype, n);
    let spec = spec(&cfg, recipe);
    let label = mxu::top_name(&cfg);
    build(&spec, &label)?;
    let dir = temp_cache("cold");
    super::copy_runtime(&sim::verilator::cache_dir(), dir.path()).map_err(|e| e.to_string())?;
    let saved = std::env::var_os(super::CACHE_ENV);
    std::env::set_var(super::CACHE_ENV, dir.path());
    let t = Instant::now();
    let result = build(&spec, &label).map(|_| t.elapsed());
    match saved {
        Some(v) => std::env::set_var(super::CACHE_ENV, v),
        None => std::env::remove_var(super::CACHE_ENV),
    }
    result
}

/// One measurable item, by name: `int8_driver`, `bf16_driver_<data>`,
/// `int8_build`, `bf16_build`, `bf16_32_build`.
fn measure(item: &str, recipe: Recipe, quick: bool) -> Result<f64, String> {
    match item {
        "int8_driver" => driver_speed(ElemType::Int8, 16, recipe, "", quick),
        "int8_build" => cold_build(ElemType::Int8, 16, recipe).map(|d| d.as_secs_f64()),
        "bf16_build" => cold_build(ElemType::Bf16, 16, recipe).map(|d| d.as_secs_f64()),
        "bf16_32_build" => cold_build(ElemType::Bf16, 32, recipe).map(|d| d.as_secs_f64()),
        _ => match item.strip_prefix("bf16_driver_") {
            Some(data) => driver_speed(ElemType::Bf16, 16, recipe, data, quick),
            None => Err(format!("unknown item {item}")),
        },
    }
}

/// The child side: measures the listed items under the "before" recipe and
/// prints one `speed <item> <value>` (or `speed <item> error <text>`) line each.
pub fn child(list: &str, quick: bool) {
    for item in list.split(',').filter(|s| !s.is_empty()) {
        match measure(item, Recipe::Before, quick) {
            Ok(v) => println!("speed {item} {v}"),
            Err(e) => println!("speed {item} error {}", e.replace('\n', " ")),
        }
    }
}

/// Measures `items` under the "before" recipe in a child process running
/// Verilator 5.006; one result per item.
fn measure_before(items: &[String], quick: bool) -> Vec<Result<f64, String>> {
    let fail = |e: String| items.iter().map(|_| Err(e.clone())).collect();
    if !Path::new(BEFORE_VERILATOR).exists() {
        return fail(format!("{BEFORE_VERILATOR} is not installed"));
    }
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return fail(e.to_string()),
    };
    let mut cmd = Command::new(exe);
    cmd.env(CHILD_ENV, items.join(","))
        .env(sim::verilator::VERILATOR_VAR, BEFORE_VERILATOR);
    if quick {
        cmd.env(super::QUICK_ENV, "1");
    }
    let out = match cmd.output() {
        Ok(out) => out,
        Err(e) => return fail(e.to_string()),
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    items
        .iter()
        .map(|item| {
            let line = stdout
                .lines()
                .find(|l| l.split_whitespace().nth(1) == Some(item.as_str()))
                .ok_or_else(|| {
                    format!(
                        "no result from the 5.006 child: {}",
                        String::from_utf8_lossy(&out.stderr)
                            .trim()
                            .lines()
                            .last()
                            .unwrap_or("")
                    )
                })?;
            let value = line.splitn(3, ' ').nth(2).unwrap_or("");
            match value.strip_prefix("error ") {
                Some(e) => Err(e.to_string()),
                None => value.parse().map_err(|_| format!("bad line {line:?}")),
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------
// The run CLI

/// The `sim` binary of this workspace's release build, built if missing.
fn sim_binary() -> Result<PathBuf, String> {
    let exe = sim::verilator::target_dir().join("release").join("sim");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--quiet", "--release", "-p", "sim", "--bin", "sim"])
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() || !exe.is_file() {
        return Err("cargo build --release -p sim failed".into());
    }
    Ok(exe)
}

/// Writes an `.npy` matrix of `descr` (`|i1`, `<u2`) elements.
fn write_npy(path: &Path, descr: &str, (rows, cols): (usize, usize), data: &[u8]) {
    let mut header =
        format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({rows}, {cols}), }}");
    let total = 10 + header.len() + 1;
    header.push_str(&" ".repeat((64 - total % 64) % 64));
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(data);
    std::fs::write(path, bytes).expect("cannot write a benchmark .npy");
}

/// RTL cycles per second of `sim matmul` on `n`x`n` int8 or bf16 (`data`),
/// under the Verilator `verilator` (None: the default): the best wall time
/// of a few runs less the best of the same command with `--golden`, and the
/// cycles it reports plus the read-out.
fn cli_speed(
    exe: &Path,
    dtype: ElemType,
    data: &str,
    verilator: Option<&str>,
    quick: bool,
) -> Result<f64, String> {
    let dir = temp_cache("cli");
    let (m, k, n) = shape(dtype, quick);
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let (a, b) = (dir.path().join("a.npy"), dir.path().join("b.npy"));
    match dtype {
        ElemType::Int8 => {
            let bytes = |len: usize, rng: &mut ChaCha8Rng| {
                (0..len).map(|_| rng.gen::<u8>()).collect::<Vec<u8>>()
            };
            write_npy(&a, "|i1", (m, k), &bytes(m * k, &mut rng));
            write_npy(&b, "|i1", (k, n), &bytes(k * n, &mut rng));
        }
        ElemType::Bf16 => {
            let words = |len: usize, rng: &mut ChaCha8Rng| -> Vec<u8> {
                (0..len)
                    .flat_map(|_| bf16_of(rng, data).to_le_bytes())
                    .collect()
            };
            write_npy(&a, "<u2", (m, k), &words(m * k, &mut rng));
            write_npy(&b, "<u2", (k, n), &words(k * n, &mut rng));
        }
    }
    let run = |golden: bool| -> Result<(Duration, String), String> {
        let mut cmd = Command::new(exe);
        cmd.args([
            "matmul",
            "--dtype",
            dtype.name(),
            "--rows",
            "16",
            "--cols",
            "16",
            "--stats",
            "--a",
        ])
        .arg(&a)
        .arg("--b")
        .arg(&b)
        .arg("--out")
        .arg(dir.path().join(if golden { "g.npy" } else { "c.npy" }));
        if golden {
            cmd.arg("--golden");
        }
        if let Some(v) = verilator {
            cmd.env(sim::verilator::VERILATOR_VAR, v);
        }
        let t = Instant::now();
        let out = cmd.output().map_err(|e| e.to_string())?;
        let took = t.elapsed();
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
        Ok((took, String::from_utf8_lossy(&out.stdout).into_owned()))
    };
    run(false)?; // builds the model if the cache lacks it
    let reps = if quick { 3 } else { 5 };
    let mut rtl = Duration::MAX;
    let mut stats = String::new();
    for _ in 0..reps {
        let (t, s) = run(false)?;
        rtl = rtl.min(t);
        stats = s;
    }
    let golden = (0..reps)
        .map(|_| run(true).map(|r| r.0))
        .collect::<Result<Vec<_>, _>>()?;
    let golden = golden.into_iter().min().unwrap_or_default();
    let stats: serde_json::Value = serde_json::from_str(stats.trim()).map_err(|e| e.to_string())?;
    let cycles = stats["cycles"].as_u64().ok_or("no cycles in --stats")?;
    // The read-out: every row of C once, one accumulator row per cycle.
    let readout = (m * n.div_ceil(16)) as u64;
    let rtl_time = rtl.saturating_sub(golden).as_secs_f64();
    Ok((cycles + readout) as f64 / rtl_time)
}

// ---------------------------------------------------------------------------
// Table 6: before / after

fn cell(r: &Result<f64, String>, fmt: impl Fn(f64) -> String) -> String {
    match r {
        Ok(v) => fmt(*v),
        Err(e) => format!("error: {e}"),
    }
}

fn ratio(
    before: &Result<f64, String>,
    after: &Result<f64, String>,
    higher_is_better: bool,
) -> String {
    match (before, after) {
        (Ok(b), Ok(a)) if *a > 0.0 && *b > 0.0 => {
            format!("{:.2}x", if higher_is_better { a / b } else { b / a })
        }
        _ => "-".into(),
    }
}

pub fn speed_table(opts: &Options) {
    let now = sim::verilator_release().unwrap_or("unknown");
    let quick = opts.quick;
    let mut items: Vec<String> = vec!["int8_driver".into()];
    items.extend(BF16_DATA.iter().map(|d| format!("bf16_driver_{d}")));
    if !quick {
        items.extend(["int8_build".to_string(), "bf16_build".to_string()]);
    }
    let build_32 =
        !quick && std::env::var(super::BUILD_32_ENV).is_ok_and(|v| !v.is_empty() && v != "0");
    eprintln!("bench: speed, before (Verilator 5.006 child process)...");
    let before = measure_before(&items, quick);
    eprintln!("bench: speed, now (Verilator {now})...");
    let mut after: Vec<Result<f64, String>> = items
        .iter()
        .map(|i| measure(i, Recipe::Now, quick))
        .collect();
    let mut before = before;
    if build_32 {
        items.push("bf16_32_build".into());
        // 17 minutes before the change: measured when asked for twice.
        before.push(match std::env::var(super::BUILD_32_ENV).as_deref() {
            Ok("before") => measure_before(&["bf16_32_build".to_string()], quick).remove(0),
            _ => Err(format!("not measured (set {}=before)", super::BUILD_32_ENV)),
        });
        after.push(measure("bf16_32_build", Recipe::Now, quick));
    }

    let (m8, k8, n8) = shape(ElemType::Int8, quick);
    let (mb, kb, nb) = shape(ElemType::Bf16, quick);
    header(
        &format!(
            "6. Simulation speed and build time, before and now (before: Verilator 5.006, \
             -fno-dfg, no model hints; now: Verilator {now} with them)"
        ),
        &["what", "before (5.006)", &format!("now ({now})"), "gain"],
    );
    let mut bf16_rates = (Vec::new(), Vec::new());
    for (i, item) in items.iter().enumerate() {
        let (what, speed) = match item.as_str() {
            "int8_driver" => (
                format!("int8 16x16, `MxuDriver::matmul_int8` {m8}x{k8}x{n8}, cycles/s"),
                true,
            ),
            "int8_build" => ("int8 16x16 cold model build".to_string(), false),
            "bf16_build" => ("bf16 16x16 cold model build".to_string(), false),
            "bf16_32_build" => ("bf16 32x32 cold model build".to_string(), false),
            other => {
                let data = other.trim_start_matches("bf16_driver_");
                bf16_rates.0.push(before[i].clone());
                bf16_rates.1.push(after[i].clone());
                (
                    format!("bf16 16x16, `MxuDriver::matmul_bf16` {mb}x{kb}x{nb}, {data} values, cycles/s"),
                    true,
                )
            }
        };
        let fmt = |v: f64| {
            if speed {
                si(v)
            } else {
                secs(Duration::from_secs_f64(v))
            }
        };
        row(&[
            what,
            cell(&before[i], fmt),
            cell(&after[i], fmt),
            ratio(&before[i], &after[i], speed),
        ]);
    }
    let spread = |rates: &[Result<f64, String>]| -> Result<f64, String> {
        let v: Vec<f64> = rates
            .iter()
            .filter_map(|r| r.as_ref().ok().copied())
            .collect();
        if v.len() != rates.len() || v.is_empty() {
            return Err("incomplete".into());
        }
        let max = v.iter().cloned().fold(f64::MIN, f64::max);
        let min = v.iter().cloned().fold(f64::MAX, f64::min);
        Ok(max / min)
    };
    row(&[
        "bf16 data dependence: fastest / slowest of the four data sets".into(),
        cell(&spread(&bf16_rates.0), |v| format!("{v:.2}x")),
        cell(&spread(&bf16_rates.1), |v| format!("{v:.2}x")),
        "-".into(),
    ]);

    // The run CLI, on today's code under either release.
    match sim_binary() {
        Ok(exe) => {
            for (dtype, data) in [(ElemType::Int8, ""), (ElemType::Bf16, "normal")] {
                let (m, k, n) = shape(dtype, false);
                let before = cli_speed(&exe, dtype, data, Some(BEFORE_VERILATOR), quick);
                let after = cli_speed(&exe, dtype, data, None, quick);
                let what = match dtype {
                    ElemType::Int8 => format!("int8 16x16, run CLI {m}x{k}x{n}, RTL cycles/s (today's code)"),
                    ElemType::Bf16 => format!("bf16 16x16, run CLI {m}x{k}x{n}, normal values, RTL cycles/s (today's code)"),
                };
                row(&[
                    what,
                    cell(&before, si),
                    cell(&after, si),
                    ratio(&before, &after, true),
                ]);
            }
        }
        Err(e) => row(&[
            "run CLI".into(),
            format!("error: {e}"),
            "-".into(),
            "-".into(),
        ]),
    }
    println!(
        "\nDriver rows: cycles (pass cycles plus read-out) per wall second, best of {} runs; \
         \"before\" builds today's Verilog without the model hints under Verilator 5.006 (with \
         -fno-dfg) in a child process, as Systole did before them. Cold builds: a fresh cache \
         folder holding the Verilator runtime, model only. CLI rows: today's `sim matmul` under \
         each release (SYSTOLE_VERILATOR), wall time less the same command with --golden, best \
         of {} runs each. Gain: now over before (speed), before over now (build time).{}",
        if quick { 2 } else { 3 },
        if quick { 3 } else { 5 },
        if quick {
            " Quick mode: M = 512 and no cold builds."
        } else {
            ""
        },
    );
    println!();
}

// ---------------------------------------------------------------------------
// Table 7: scaling

/// The arrays of the scaling table: int8 up to 64x64, bf16 up to 32x32.
fn scaling_arrays(quick: bool) -> Vec<(ElemType, u32)> {
    let mut list: Vec<(ElemType, u32)> = [4, 8, 16, 32, 64]
        .iter()
        .map(|&n| (ElemType::Int8, n))
        .collect();
    list.extend([4, 8, 16, 32].iter().map(|&n| (ElemType::Bf16, n)));
    if quick {
        list.retain(|&(_, n)| n <= 16);
    }
    list
}

/// Cycles per second of the driver on a stream of about `target` RTL cycles
/// on a cached model (M rows through K = N = 2n: four tiles per pass).
fn scaling_speed(dtype: ElemType, n: u32, target: u64) -> Result<f64, String> {
    let cfg = cfg(dtype, n);
    let mut driver = MxuDriver::new(&cfg).map_err(|e| e.to_string())?;
    let k = 2 * n as usize;
    let m = (target as usize / 4).clamp(256, 8192);
    let mut rng = ChaCha8Rng::seed_from_u64(u64::from(n));
    let (best, cycles) = match dtype {
        ElemType::Int8 => {
            let a = tb::mxu::random_i8(&mut rng, m * k);
            let b = tb::mxu::random_i8(&mut rng, k * k);
            best_of(2, Duration::from_secs(30), || {
                driver
                    .matmul_int8(&a, &b, (m, k, k), None)
                    .map(|(_, s)| s.cycles + s.readout_cycles)
            })
        }
        ElemType::Bf16 => {
            let a: Vec<u16> = (0..m * k).map(|_| bf16_of(&mut rng, "normal")).collect();
            let b: Vec<u16> = (0..k * k).map(|_| bf16_of(&mut rng, "normal")).collect();
            best_of(2, Duration::from_secs(30), || {
                driver
                    .matmul_bf16(&a, &b, (m, k, k), None)
                    .map(|(_, s)| s.cycles + s.readout_cycles)
            })
        }
    };
    let cycles = cycles.map_err(|e| e.to_string())?;
    Ok(cycles as f64 / best.as_secs_f64())
}

pub fn scaling_table(opts: &Options) {
    let release = sim::verilator_release().unwrap_or("unknown");
    header(
        &format!(
            "7. Scaling: model build and simulation speed by array size (Verilator {release})"
        ),
        &[
            "type",
            "array",
            "PEs",
            "cold model build",
            "build per PE",
            "cycles/s (`MxuDriver`)",
            "PE-cycles/s",
        ],
    );
    for (dtype, n) in scaling_arrays(opts.quick) {
        eprintln!("bench: scaling, {dtype} {n}x{n}...");
        let pes = u64::from(n * n);
        let build = if opts.quick {
            Err("skipped (quick)".to_string())
        } else {
            cold_build(dtype, n, Recipe::Now)
        };
        // Make sure the usual cache has the model (the cold build used its own folder).
        let speed = scaling_speed(dtype, n, if opts.quick { 20_000 } else { 100_000 });
        let build_cells = match &build {
            Ok(d) => [
                secs(*d),
                format!("{:.1} ms", d.as_secs_f64() * 1e3 / pes as f64),
            ],
            Err(e) => [e.clone(), "-".into()],
        };
        row(&[
            dtype.to_string(),
            format!("{n}x{n}"),
            int(pes),
            build_cells[0].clone(),
            build_cells[1].clone(),
            cell(&speed, si),
            cell(
                &speed.as_ref().map(|s| s * pes as f64).map_err(Clone::clone),
                si,
            ),
        ]);
    }
    println!(
        "\nCold builds: a fresh cache folder holding the Verilator runtime, model only \
         (quick mode skips them). Speed: `MxuDriver` on M rows of random operands (int8) or \
         standard normal values (bf16) through K = N = 2R (four tiles per pass), read-out \
         included, best of 2, on the model from the usual cache. PE-cycles/s = cycles/s x R x C: \
         flat when the cost per PE does not grow with the array."
    );
    println!();
}

// ---------------------------------------------------------------------------
// Table 8: generated top against a hand-written array

const REFERENCE: &str = include_str!("../reference/os_array_int8_16x16.v");

/// A model and the code that pokes random inputs into it for one cycle.
type RandomDriven = (Model, Box<dyn FnMut(&mut Model, &mut ChaCha8Rng)>);

/// Cycles per second of one run of about `target`: random inputs every
/// cycle (poke, eval, peek, step).
fn random_run(driven: &mut RandomDriven, rng: &mut ChaCha8Rng, target: Duration) -> f64 {
    let (model, poke) = driven;
    let start = Instant::now();
    let mut cycles = 0u64;
    while start.elapsed() < target {
        for _ in 0..1000 {
            poke(model, rng);
            model.eval();
            model.step();
        }
        cycles += 1000;
    }
    cycles as f64 / start.elapsed().as_secs_f64()
}

/// The best cycles per second of each design over `rounds` rounds, each
/// round running every design once in turn, so that both see the same
/// background load.
fn random_drive_alternating(
    designs: &mut [RandomDriven],
    rounds: usize,
    target: Duration,
) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(21);
    let mut best = vec![0.0f64; designs.len()];
    for _ in 0..rounds {
        for (driven, best) in designs.iter_mut().zip(&mut best) {
            *best = best.max(random_run(driven, &mut rng, target));
        }
    }
    best
}

fn random_words(rng: &mut impl Rng, words: &mut [u32]) {
    for w in words.iter_mut() {
        *w = rng.gen();
    }
}

pub fn reference_table(opts: &Options) {
    let release = sim::verilator_release().unwrap_or("unknown");
    let target = Duration::from_millis(if opts.quick { 300 } else { 1000 });
    header(
        &format!(
            "8. Generated int8 16x16 MXU top against a hand-written 16x16 array (Verilator {release}, same options)"
        ),
        &["design", "cycles/s", "relative to the hand-written array"],
    );
    // The hand-written array, built like every hw design (sim::from_hw's arguments).
    let mut reference_spec = ModelSpec::new("os_array_int8_16x16")
        .source("os_array_int8_16x16.v", REFERENCE)
        .clock("clk_i")
        .input("rst_i", 1)
        .input("clear_i", 1)
        .input("a_col_i", 128)
        .input("b_row_i", 128)
        .input("acc_sel_i", 8)
        .output("acc_o", 32);
    for arg in sim::from_hw::HW_VERILATOR_ARGS {
        reference_spec = reference_spec.verilator_arg(*arg);
    }
    let reference = build(&reference_spec, "os_array_int8_16x16").map(|model| {
        let ports: Vec<sim::PortId> = ["clear_i", "a_col_i", "b_row_i", "acc_sel_i", "acc_o"]
            .iter()
            .map(|p| model.port(p).expect("reference port"))
            .collect();
        let mut words = [0u32; 4];
        let poke = move |m: &mut Model, rng: &mut ChaCha8Rng| {
            m.poke(ports[0], u64::from(rng.gen_range(0..64u32) == 0));
            random_words(rng, &mut words);
            m.poke_wide(ports[1], &words);
            random_words(rng, &mut words);
            m.poke_wide(ports[2], &words);
            m.poke(ports[3], u64::from(rng.gen::<u8>()));
            std::hint::black_box(m.peek(ports[4]));
        };
        (
            model,
            Box::new(poke) as Box<dyn FnMut(&mut Model, &mut ChaCha8Rng)>,
        )
    });
    // The generated top, every input random every cycle, its handshakes read.
    let cfg = cfg(ElemType::Int8, 16);
    let generated = build(&spec(&cfg, Recipe::Now), &mxu::top_name(&cfg)).map(|mut model| {
        let p = sim::drivers::mxu::MxuPorts::of(&model).expect("MXU ports");
        p.reset_idle(&mut model);
        let mut words = [0u32; 4];
        let poke = move |m: &mut Model, rng: &mut ChaCha8Rng| {
            let bits: u32 = rng.gen();
            m.poke(p.w_valid, u64::from(bits & 1));
            random_words(rng, &mut words);
            m.poke_wide(p.w_row, &words);
            m.poke(p.a_valid, u64::from(bits >> 1 & 1));
            m.poke(p.a_first, u64::from(bits >> 2 & 7 == 0));
            random_words(rng, &mut words);
            m.poke_wide(p.a_row, &words);
            m.poke(p.a_addr, u64::from(bits >> 8 & 0xff));
            m.poke(p.a_add, u64::from(bits >> 16 & 1));
            m.poke(p.rd_en, u64::from(bits >> 17 & 1));
            m.poke(p.rd_addr, u64::from(bits >> 24));
            std::hint::black_box((m.peek(p.w_ready), m.peek(p.a_ready), m.peek(p.acc_wr)));
        };
        (
            model,
            Box::new(poke) as Box<dyn FnMut(&mut Model, &mut ChaCha8Rng)>,
        )
    });
    let rounds = 5;
    let (reference, generated) = match (reference, generated) {
        (Ok(r), Ok(g)) => {
            let mut designs = [r, g];
            let best = random_drive_alternating(&mut designs, rounds, target);
            (Ok(best[0]), Ok(best[1]))
        }
        (r, g) => (
            r.map(|_| 0.0)
                .and(Err("not measured: the other model failed".to_string())),
            g.map(|_| 0.0)
                .and(Err("not measured: the other model failed".to_string())),
        ),
    };
    row(&[
        "hand-written output-stationary array, flat vectors (`tb/benches/reference/`)".into(),
        cell(&reference, si),
        "1.00".into(),
    ]);
    let relative = match (&reference, &generated) {
        (Ok(r), Ok(g)) => format!("{:.2}", g / r),
        _ => "-".into(),
    };
    row(&[
        "generated `mxu_int8_16x16_acc256` (weight FIFO, shadow weights, accumulator)".into(),
        cell(&generated, si),
        relative,
    ]);
    println!(
        "\nBoth driven from Rust with random inputs every cycle (poke, eval, peek, step), \
         built with the same release and Verilator options; best of {rounds} runs of {} \
         each, the two designs taking turns so that both see the same background load.",
        secs(target)
    );
    println!();
}

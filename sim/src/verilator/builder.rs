//! The build pipeline, run at most once per distinct spec:
//! Verilog -> `verilator --cc` -> C++ (+ generated shim) -> object files -> shared library.
//!
//! Only the model's own C++ is compiled per model. The Verilator runtime (`verilated.cpp`,
//! `verilated_threads.cpp`, `verilated_vcd_c.cpp` when tracing) is compiled once per
//! toolchain and flag set into a `runtime-<hash>` cache entry and linked into every model.
//! The model's generated files are compiled as a few "unity" translation units (one file that
//! `#include`s several; the optimised code in one unit per core, the run-once code in as few
//! as possible, each up to 8 MB), as Verilator's own makefile does for non-parallel builds,
//! so Verilator's large headers are parsed, and their inline functions compiled, once per unit
//! rather than once per generated file.

use super::cache::{self, BuildLock, KeyHasher};
use super::parse;
use super::shim;
use super::spec::ModelSpec;
use super::toolchain::{self, Toolchain};
use super::SimError;
use std::fs::{self, File};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// Bump when the pipeline below changes in a way that alters the built library.
const RECIPE_VERSION: u32 = 2;

/// Verilator options every model is built with (the spec's own arguments come after),
/// besides the release-specific ones of [`release_flags`].
const VERILATOR_FLAGS: &[&str] = &[
    "-O3",
    "--x-assign",
    "fast",
    "--x-initial",
    "fast",
    "--noassert",
];

/// Options for one Verilator release. `-fno-dfg` on the releases of
/// [`super::RELEASES_WITHOUT_DFG`]: their data-flow-graph optimizer folds some
/// comparisons wrongly, and a simulator that is wrong even rarely is worse than a
/// slower one. On every release, the optimizations
/// [`super::OPTIMIZATIONS_OFF`] lists for it.
fn release_flags(tc: &Toolchain) -> Vec<&'static str> {
    let mut flags = Vec::new();
    if super::RELEASES_WITHOUT_DFG.contains(&tc.release.as_str()) {
        flags.push("-fno-dfg");
    }
    for (release, off) in super::OPTIMIZATIONS_OFF {
        if *release == tc.release {
            flags.extend(off.iter().map(|(flag, _why)| *flag));
        }
    }
    flags
}

/// Largest amount of generated C++ put into one unity translation unit. Each unit parses
/// Verilator's headers and, unoptimised, emits every inline function it uses, so fewer,
/// larger units cost less CPU: a 2x2x1 torus model (3.3 MB of fast and 2.5 MB of run-once
/// C++, five and four units at 1 MB) compiled in 12 s and 5 s as one unit each against 19 s
/// and 12 s (GCC 12, 365 MB at most).
const UNITY_BYTES: u64 = 8 << 20;

/// Smallest bound on a unit of the optimised code, however many cores share it out: one
/// 4 MB unit kept the 4x4x4 torus's C++ on one core for 53 s where two units took 29 s.
const MIN_UNITY_BYTES: u64 = 1 << 20;

/// A model library ready to load.
pub(crate) struct Built {
    pub library: PathBuf,
    pub dir: PathBuf,
    pub key: String,
    pub reused: bool,
}

/// Returns the cached library for `spec`, building it first if needed.
pub(crate) fn build(spec: &ModelSpec, label: &str, trace: bool) -> Result<Built, SimError> {
    spec.validate()?;
    let tc = Toolchain::get()?;
    let cache = cache::cache_dir();
    let key = model_key(tc, spec, trace);
    let short = &key[..16];
    let entry = format!("model-{short}");
    let dir = cache.join(&entry);
    let library_name = format!("libsystole-{short}.so");
    let built = |reused| Built {
        library: dir.join(&library_name),
        dir: dir.clone(),
        key: key.clone(),
        reused,
    };
    if dir.join(&library_name).is_file() {
        return Ok(built(true));
    }
    let _lock = BuildLock::acquire(&cache, &entry)?;
    if dir.join(&library_name).is_file() {
        // Another thread or process finished it while we waited.
        return Ok(built(true));
    }

    eprintln!("sim: building Verilator model {label} ({})...", &key[..8]);
    let started = Instant::now();
    let tmp = cache::fresh_build_dir(&cache, &entry)?;
    let log = BuildLog::create(&tmp.join("build.log"))?;
    let result = build_model(tc, spec, trace, &cache, &tmp, &log, &library_name);
    drop(log);
    match result {
        Ok(()) => {
            cache::publish(&tmp, &dir)?;
            eprintln!(
                "sim: built {label} in {:.1} s ({})",
                started.elapsed().as_secs_f64(),
                dir.display()
            );
            Ok(built(false))
        }
        Err(failure) => {
            let kept = cache::keep_failed(
                &cache,
                &tmp,
                &format!("{}-{short}", cache::sanitize_label(label)),
            );
            Err(failure.into_error(kept.join("build.log")))
        }
    }
}

/// Why a model build stopped; turned into a [`SimError`] once the log has its final place.
enum Failure {
    Verilator(String),
    Ports(String),
    Compile(String),
    Other(SimError),
}

impl Failure {
    fn into_error(self, log: PathBuf) -> SimError {
        match self {
            Failure::Verilator(summary) => SimError::Verilator { summary, log },
            Failure::Ports(summary) => SimError::PortMismatch { summary, log },
            Failure::Compile(summary) => SimError::Compile { summary, log },
            Failure::Other(err) => err,
        }
    }
}

impl From<SimError> for Failure {
    fn from(err: SimError) -> Self {
        Failure::Other(err)
    }
}

fn build_model(
    tc: &Toolchain,
    spec: &ModelSpec,
    trace: bool,
    cache: &Path,
    tmp: &Path,
    log: &BuildLog,
    library_name: &str,
) -> Result<(), Failure> {
    let src = tmp.join("src");
    let obj = tmp.join("obj");
    create_dir(&src)?;
    for (name, text) in &spec.sources {
        write_file(&src.join(name), text)?;
    }

    let mut verilator = Command::new(&tc.verilator);
    verilator
        .current_dir(&src)
        .args(["--cc", "--top-module", &spec.top, "--Mdir"])
        .arg(&obj)
        .args(VERILATOR_FLAGS)
        .args(release_flags(tc))
        .args(trace.then_some("--trace"))
        .args(&spec.verilator_args)
        .args(
            spec.verilator_inputs()
                .filter(|file| !spec.verilator_args.iter().any(|arg| arg == file)),
        );
    if let Err(output) = log.run(&mut verilator)? {
        return Err(Failure::Verilator(summarize(&output, "%Error")));
    }

    let prefix = format!("V{}", spec.top);
    let header = read_file(&obj.join(format!("{prefix}.h")))?;
    let (ports, inouts) = parse::header_ports(&header);
    if let Some(mismatch) = parse::port_mismatch(&spec.ports, &ports, &inouts) {
        log.note(&format!("port list mismatch: {mismatch}"));
        return Err(Failure::Ports(mismatch));
    }
    let classes = parse::class_files(&read_file(&obj.join(format!("{prefix}_classes.mk")))?);
    if classes.fast.is_empty() {
        return Err(Failure::Other(SimError::Toolchain(format!(
            "no C++ classes listed in {prefix}_classes.mk"
        ))));
    }
    let runtime = runtime_objects(tc, trace, &classes.global, cache)?;

    write_file(&obj.join("systole_shim.cpp"), &shim::generate(spec))?;
    let cpp = |stems: &[String]| -> Vec<PathBuf> {
        stems.iter().map(|s| obj.join(format!("{s}.cpp"))).collect()
    };
    let mut fast = vec![obj.join("systole_shim.cpp")];
    fast.extend(cpp(&classes.fast));
    let mut jobs = Vec::new();
    let size_of = |f: &Path| fs::metadata(f).map_or(0, |m| m.len());
    // The optimised code is cut into as many units as compilers run at once (within the
    // bounds), so that one large model still compiles on all of them; the run-once code,
    // unoptimised and cheap, goes into as few units as the bound allows.
    let fast_total: u64 = fast.iter().map(|f| size_of(f)).sum();
    let fast_unit = fast_total
        .div_ceil(compilers() as u64)
        .clamp(MIN_UNITY_BYTES, UNITY_BYTES);
    for (kind, files, opt, unit_bytes) in [
        ("fast", fast, None, fast_unit),
        ("slow", cpp(&classes.slow), Some("-O0"), UNITY_BYTES),
    ] {
        for (i, group) in unity_groups(&files, unit_bytes, size_of)
            .into_iter()
            .enumerate()
        {
            let unity = obj.join(format!("systole_{kind}_{i}.cpp"));
            // Names relative to the unity file, so the kept folder stays readable after
            // it is renamed into the cache.
            let text: String = group
                .iter()
                .filter_map(|f| f.file_name())
                .map(|name| format!("#include \"{}\"\n", name.to_string_lossy()))
                .collect();
            write_file(&unity, &text)?;
            jobs.push(CompileJob {
                object: unity.with_extension("o"),
                source: unity,
                extra: opt.into_iter().map(String::from).collect(),
            });
        }
    }
    compile_all(tc, trace, &jobs, std::slice::from_ref(&obj), log).map_err(Failure::Compile)?;

    let mut link = tc.cxx_command();
    link.arg("-shared")
        .arg("-o")
        .arg(tmp.join(library_name))
        .args(jobs.iter().map(|j| &j.object))
        .args(&runtime)
        // Bind the library's references to its own copy of the Verilator runtime, so several
        // loaded models never resolve each other's symbols.
        .args([
            "-Wl,-Bsymbolic",
            "-Wl,--no-undefined",
            "-lpthread",
            "-latomic",
        ]);
    if let Err(output) = log.run(&mut link)? {
        return Err(Failure::Compile(summarize(&output, "error")));
    }
    for job in &jobs {
        // The library is what is kept; objects of large models are big.
        let _ = fs::remove_file(&job.object);
    }
    Ok(())
}

/// Object files of the Verilator runtime for this toolchain and flag set, compiled on first
/// use into `<cache>/runtime-<hash>/`.
fn runtime_objects(
    tc: &Toolchain,
    trace: bool,
    globals: &[String],
    cache: &Path,
) -> Result<Vec<PathBuf>, SimError> {
    let mut stems: Vec<String> = globals.to_vec();
    // Verilator 5 needs the thread support file even for single-threaded models.
    stems.push("verilated_threads".into());
    stems.sort();
    stems.dedup();

    let mut hasher = KeyHasher::new("systole-verilator-runtime");
    hash_toolchain(&mut hasher, tc);
    hasher.field(common_flags(tc, trace).join(" "));
    hasher.field(stems.join(" "));
    let key = hasher.finish();
    let entry = format!("runtime-{}", &key[..16]);
    let dir = cache.join(&entry);
    let objects: Vec<PathBuf> = stems.iter().map(|s| dir.join(format!("{s}.o"))).collect();
    if dir.is_dir() {
        return Ok(objects);
    }
    let _lock = BuildLock::acquire(cache, &entry)?;
    if dir.is_dir() {
        return Ok(objects);
    }
    eprintln!("sim: compiling the Verilator runtime (once per toolchain)...");
    let tmp = cache::fresh_build_dir(cache, &entry)?;
    let log_path = tmp.join("build.log");
    let log = BuildLog::create(&log_path)?;
    let jobs: Vec<CompileJob> = stems
        .iter()
        .map(|s| CompileJob {
            source: toolchain::runtime_source(tc, s),
            object: tmp.join(format!("{s}.o")),
            extra: Vec::new(),
        })
        .collect();
    let result = compile_all(tc, trace, &jobs, &[], &log);
    drop(log);
    match result {
        Ok(()) => {
            cache::publish(&tmp, &dir)?;
            Ok(objects)
        }
        Err(summary) => {
            let kept = cache::keep_failed(cache, &tmp, &entry);
            Err(SimError::Compile {
                summary,
                log: kept.join("build.log"),
            })
        }
    }
}

/// The cache key of a model: everything that can change the built library.
fn model_key(tc: &Toolchain, spec: &ModelSpec, trace: bool) -> String {
    let mut h = KeyHasher::new("systole-verilator-model");
    h.field(RECIPE_VERSION.to_le_bytes())
        .field(shim::SHIM_VERSION.to_le_bytes());
    hash_toolchain(&mut h, tc);
    h.field(common_flags(tc, trace).join(" "))
        .field(VERILATOR_FLAGS.join(" "))
        .field(release_flags(tc).join(" "))
        .field([u8::from(trace)])
        .field(&spec.top)
        .field((spec.sources.len() as u64).to_le_bytes());
    for (name, text) in &spec.sources {
        h.field(name).field(text);
    }
    h.field((spec.ports.len() as u64).to_le_bytes());
    for port in &spec.ports {
        h.field(&port.name)
            .field(port.width.to_le_bytes())
            .field(port.dir.as_str());
    }
    h.field(spec.clock.as_deref().unwrap_or("\0none"))
        .field((spec.verilator_args.len() as u64).to_le_bytes());
    for arg in &spec.verilator_args {
        h.field(arg);
    }
    h.finish()
}

fn hash_toolchain(h: &mut KeyHasher, tc: &Toolchain) {
    h.field(&tc.release)
        .field(&tc.verilator_version)
        .field(tc.verilator_root.as_os_str().as_encoded_bytes())
        .field(tc.cxx.as_os_str().as_encoded_bytes())
        .field(&tc.cxx_version);
    for arg in &tc.cxx_args {
        h.field(arg.as_encoded_bytes());
    }
}

/// Flags for every C++ file of a model and of the runtime. They must agree between the two,
/// which is why both cache keys include them.
fn common_flags(tc: &Toolchain, trace: bool) -> Vec<String> {
    let t = u8::from(trace);
    let mut flags: Vec<String> = [
        "-DVM_COVERAGE=0",
        "-DVM_SC=0",
        "-DVM_TRACE_FST=0",
        // The shim supplies these handlers, so errors do not end the host process.
        "-DVL_USER_FATAL",
        "-DVL_USER_FINISH",
        "-DVL_USER_STOP",
        "-faligned-new",
        // Export nothing but the shim's systole_* entry points.
        "-fvisibility=hidden",
        "-fvisibility-inlines-hidden",
        // Generated code is warning-heavy by design; real errors still fail the build.
        "-w",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    flags.push(format!("-DVM_TRACE={t}"));
    flags.push(format!("-DVM_TRACE_VCD={t}"));
    for dir in tc.include_dirs() {
        flags.push(format!("-I{}", dir.display()));
    }
    flags
}

struct CompileJob {
    source: PathBuf,
    object: PathBuf,
    /// Flags after the common ones, e.g. a lower optimisation level for run-once code.
    extra: Vec<String>,
}

/// How many compiler processes a model's build runs at once: one per core.
fn compilers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Compiles the jobs on up to [`compilers`] compiler processes. Returns the first
/// error line on failure.
fn compile_all(
    tc: &Toolchain,
    trace: bool,
    jobs: &[CompileJob],
    include: &[PathBuf],
    log: &BuildLog,
) -> Result<(), String> {
    let flags = common_flags(tc, trace);
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    let workers = compilers().min(jobs.len());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                while let Some(job) = jobs.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let mut cmd = tc.cxx_command();
                    cmd.args(&flags)
                        .args(include.iter().map(|dir| format!("-I{}", dir.display())))
                        .args(&job.extra)
                        .arg("-c")
                        .arg(&job.source)
                        .arg("-o")
                        .arg(&job.object);
                    let failure = match log.run(&mut cmd) {
                        Ok(Ok(())) => continue,
                        Ok(Err(output)) => summarize(&output, "error"),
                        Err(err) => err.to_string(),
                    };
                    failures
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(failure);
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap_or_else(|e| e.into_inner());
    match failures.into_iter().next() {
        None => Ok(()),
        Some(first) => Err(first),
    }
}

/// Splits files into groups of at most `limit` bytes (a larger file gets its own group).
fn unity_groups(
    files: &[PathBuf],
    limit: u64,
    size_of: impl Fn(&Path) -> u64,
) -> Vec<Vec<PathBuf>> {
    let mut groups: Vec<Vec<PathBuf>> = Vec::new();
    let mut size = 0;
    for file in files {
        let len = size_of(file);
        match groups.last_mut() {
            Some(group) if size + len <= limit => {
                group.push(file.clone());
                size += len;
            }
            _ => {
                groups.push(vec![file.clone()]);
                size = len;
            }
        }
    }
    groups
}

/// The first line mentioning `marker` (e.g. "%Error"), else the last non-empty line.
fn summarize(output: &str, marker: &str) -> String {
    let lines = || output.lines().map(str::trim).filter(|l| !l.is_empty());
    lines()
        .find(|line| line.to_lowercase().contains(&marker.to_lowercase()))
        .or_else(|| lines().next_back())
        .unwrap_or("no output")
        .to_string()
}

/// The build's log file: every command line with its output. Shared by parallel compiles.
struct BuildLog {
    file: Mutex<File>,
}

impl BuildLog {
    fn create(path: &Path) -> Result<BuildLog, SimError> {
        let file = File::create(path)
            .map_err(|e| SimError::io(format!("create {}", path.display()), e))?;
        Ok(BuildLog {
            file: Mutex::new(file),
        })
    }

    fn note(&self, text: &str) {
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(file, "{text}");
    }

    /// Runs `cmd` to completion and logs it. The outer error is a failure to start the
    /// command; the inner one carries the output of a command that exited unsuccessfully.
    fn run(&self, cmd: &mut Command) -> Result<Result<(), String>, SimError> {
        let started = Instant::now();
        let out = cmd
            .output()
            .map_err(|e| SimError::Toolchain(format!("cannot run {:?}: {e}", cmd.get_program())))?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        self.note(&format!(
            "$ {cmd:?}\n{text}[{} in {:.2} s]\n",
            out.status,
            started.elapsed().as_secs_f64()
        ));
        Ok(if out.status.success() {
            Ok(())
        } else {
            Err(if text.trim().is_empty() {
                out.status.to_string()
            } else {
                text
            })
        })
    }
}

fn create_dir(path: &Path) -> Result<(), SimError> {
    fs::create_dir_all(path).map_err(|e| SimError::io(format!("create {}", path.display()), e))
}

fn write_file(path: &Path, text: &str) -> Result<(), SimError> {
    fs::write(path, text).map_err(|e| SimError::io(format!("write {}", path.display()), e))
}

fn read_file(path: &Path) -> Result<String, SimError> {
    fs::read_to_string(path).map_err(|e| SimError::io(format!("read {}", path.display()), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unity_groups_respect_the_size_limit() {
        let files: Vec<PathBuf> = ["a", "b", "big", "c", "d"]
            .iter()
            .map(PathBuf::from)
            .collect();
        let size = |f: &Path| match f.to_str().unwrap() {
            "big" => UNITY_BYTES * 2,
            _ => UNITY_BYTES / 3,
        };
        let names = |groups: Vec<Vec<PathBuf>>| -> Vec<Vec<String>> {
            groups
                .iter()
                .map(|g| g.iter().map(|f| f.display().to_string()).collect())
                .collect()
        };
        assert_eq!(
            names(unity_groups(&files, UNITY_BYTES, size)),
            [vec!["a", "b"], vec!["big"], vec!["c", "d"]]
        );
        assert!(unity_groups(&[], UNITY_BYTES, size).is_empty());
    }

    #[test]
    fn summary_prefers_the_marked_line() {
        let out = "note: x\n%Error: a.v:3:1: syntax error\n%Error: Exiting\n";
        assert_eq!(summarize(out, "%Error"), "%Error: a.v:3:1: syntax error");
        assert_eq!(summarize("a\nb\n\n", "error"), "b");
        assert_eq!(summarize("", "error"), "no output");
    }
}

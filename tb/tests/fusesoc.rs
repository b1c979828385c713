//! FuseSoC runs the board builds as the README and `systole.core` say: the
//! repository core's `lint` and `sim` targets from a clean cores root (its
//! generator runs gen), and a build folder's own core. FuseSoC is the one
//! `scripts/install-tools.sh` puts in `build/fusesoc`; Verilator is the one
//! the other tests use (`sim::verilator_path`), Icarus the one on PATH.

use board::Board;
use config::{ElemType, MxuConfig};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use tb::tools::workspace_root;

fn fusesoc_bin() -> PathBuf {
    let bin = workspace_root().join("build/fusesoc/bin/fusesoc");
    assert!(
        bin.is_file(),
        "{} is missing: run scripts/install-tools.sh",
        bin.display()
    );
    bin
}

/// A PATH whose `verilator` is the suite's Verilator, ahead of the rest.
/// `dir` holds the link.
fn path_with_verilator(dir: &Path) -> std::ffi::OsString {
    let verilator = sim::verilator_path();
    let target = if verilator.components().count() > 1 {
        std::fs::canonicalize(&verilator).expect("the suite's Verilator exists")
    } else {
        // A bare name: whatever PATH finds.
        return std::env::var_os("PATH").unwrap_or_default();
    };
    let bin = dir.join("verilator-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let link = bin.join("verilator");
    if !link.exists() {
        std::os::unix::fs::symlink(&target, &link).unwrap();
    }
    let mut paths = vec![bin];
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(paths).unwrap()
}

/// `fusesoc --cores-root CORES run --build-root WORK/fusesoc ARGS` with the
/// suite's Verilator and without SYSTOLE_GEN_ARGS unless `gen_args` gives it.
fn fusesoc_run(cores: &Path, work: &Path, args: &[&str], gen_args: Option<&str>) -> Output {
    let mut cmd = Command::new(fusesoc_bin());
    cmd.arg("--cores-root")
        .arg(cores)
        .arg("run")
        .arg("--build-root")
        .arg(work.join("fusesoc"))
        .args(args)
        .current_dir(work)
        .env("PATH", path_with_verilator(work))
        .env_remove("SYSTOLE_GEN_ARGS");
    if let Some(a) = gen_args {
        cmd.env("SYSTOLE_GEN_ARGS", a);
    }
    cmd.output().expect("run fusesoc")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// What the README runs, from the repository root with nothing generated
/// first: the repository core's generator makes the iCEBreaker build, Verilator
/// lints it, and the smoke test passes under Icarus. Gen flags from
/// SYSTOLE_GEN_ARGS reach the build, and a failing generator fails the run.
#[test]
fn the_repository_core_lints_and_simulates_the_icebreaker_build() {
    let work = tempfile::tempdir().unwrap();
    let root = workspace_root();
    let core = "systole:systole:board";

    let lint = fusesoc_run(&root, work.path(), &["--target", "lint", core], None);
    assert!(lint.status.success(), "lint:\n{}", text(&lint));
    let sim = fusesoc_run(&root, work.path(), &["--target", "sim", core], None);
    let log = text(&sim);
    assert!(sim.status.success(), "sim:\n{log}");
    assert!(
        log.contains("PASS: systole_icebreaker: 20 reply bytes as expected"),
        "{log}"
    );
    // The board's default array was built.
    let d = Board::IceBreaker.defaults();
    let mxu = format!("mxu_{}_{}x{}_acc{}.v", d.dtype, d.rows, d.cols, d.acc_rows);
    let sim_dir = work
        .path()
        .join("fusesoc/systole_systole_board_0.1.0/sim-icarus");
    assert!(
        find_file(&sim_dir, &mxu),
        "{mxu} not in {}",
        sim_dir.display()
    );

    // Extra gen flags through the environment.
    let args = ["--target", "sim", core];
    let sim = fusesoc_run(
        &root,
        work.path(),
        &args,
        Some("--preset int8-2x3 --acc-rows 16"),
    );
    let log = text(&sim);
    assert!(sim.status.success(), "sim with SYSTOLE_GEN_ARGS:\n{log}");
    assert!(find_file(&sim_dir, "mxu_int8_2x3_acc16.v"), "{log}");

    // gen refuses the flags: the generator, and so FuseSoC, fails.
    let bad = fusesoc_run(&root, work.path(), &args, Some("--rows 0"));
    let log = text(&bad);
    assert!(!bad.status.success(), "a refused gen flag passed:\n{log}");
    assert!(log.contains("error: gen failed"), "{log}");
}

/// Whether a file called `name` is anywhere under `dir`.
fn find_file(dir: &Path, name: &str) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let p = e.path();
        (p.is_file() && e.file_name() == name) || (p.is_dir() && find_file(&p, name))
    })
}

/// A small iCEBreaker build written as gen writes it.
fn write_board_build(dir: &Path) {
    let board = Board::IceBreaker;
    let mxu = MxuConfig::with_acc_rows(2, 2, ElemType::Int8, 16).unwrap();
    let (generated, _) = gen::generate_board(board, &mxu, None, None, None).unwrap();
    gen::write_files(dir, &generated.files).unwrap();
}

/// A build folder's own core runs as it is: `lint` and `sim` pass, and each
/// fails when its check fails (a wrong expected reply byte; a waiver file
/// without its waivers).
#[test]
fn a_board_build_runs_its_own_targets_and_they_fail_when_the_check_fails() {
    let work = tempfile::tempdir().unwrap();
    let build = work.path().join("icebreaker");
    write_board_build(&build);
    let core = "systole:generated:icebreaker";

    let lint = fusesoc_run(&build, work.path(), &["--target", "lint", core], None);
    assert!(lint.status.success(), "lint:\n{}", text(&lint));
    let sim = fusesoc_run(&build, work.path(), &["--target", "sim", core], None);
    let log = text(&sim);
    assert!(sim.status.success(), "sim:\n{log}");
    assert!(log.contains("PASS: systole_icebreaker"), "{log}");

    let tb = build.join("systole_icebreaker_tb.v");
    let good = std::fs::read_to_string(&tb).unwrap();
    let bad = good.replace("expected[1] = 8'h53;", "expected[1] = 8'h54;");
    assert_ne!(good, bad, "the planted error must change the smoke test");
    std::fs::write(&tb, bad).unwrap();
    let sim = fusesoc_run(&build, work.path(), &["--target", "sim", core], None);
    let log = text(&sim);
    assert!(!sim.status.success(), "a wrong reply passed:\n{log}");
    assert!(
        log.contains("FAIL: reply byte 1 is 53, expected 54"),
        "{log}"
    );

    // Without its waivers the build is not lint-clean under -Wall.
    let waivers = build.join(hw::emit::WAIVER_FILE);
    std::fs::write(&waivers, "`verilator_config\n").unwrap();
    let lint = fusesoc_run(&build, work.path(), &["--target", "lint", core], None);
    let log = text(&lint);
    assert!(
        !lint.status.success(),
        "lint passed without waivers:\n{log}"
    );
    assert!(log.contains("%Warning"), "{log}");
}

/// The lines of `target`'s section in a core file from `default_tool:` (or,
/// for a target run by an edalize flow, `flow:`) on: its tool or flow and
/// their options.
fn tool_section(core: &str, target: &str) -> String {
    let mut lines = core
        .lines()
        .skip_while(|l| *l != format!("  {target}:"))
        .skip(1)
        .take_while(|l| l.starts_with("    ") || l.is_empty())
        .skip_while(|l| !l.starts_with("    default_tool:") && !l.starts_with("    flow:"))
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    lines.push('\n');
    assert!(lines.len() > 1, "no tool section for {target}");
    lines
}

/// `systole.core` and the build folders' cores run the same tools with the
/// same options (the generated core's text is the reference).
#[test]
fn the_repository_core_and_the_generated_cores_agree_on_their_targets() {
    let repo = std::fs::read_to_string(workspace_root().join("systole.core")).unwrap();
    for board in Board::ALL {
        let mxu = board.default_mxu();
        let (generated, _) = gen::generate_board(board, &mxu, None, None, None).unwrap();
        let core = generated
            .files
            .iter()
            .find(|f| f.name == format!("{}.core", board.top_name()))
            .expect("the build's core")
            .text
            .clone();
        for target in ["lint", "sim", board.name()] {
            assert_eq!(
                tool_section(&repo, target),
                tool_section(&core, target),
                "{board}: target {target}"
            );
        }
    }
}

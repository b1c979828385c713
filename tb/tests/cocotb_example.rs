//! The cocotb example (`examples/cocotb`) runs as its README says: its runner
//! generates an int8 4x4 MXU with gen, builds it under Icarus with cocotb's
//! Python runner, and every cocotb test passes. The Python is the venv
//! `scripts/install-tools.sh` makes in `build/cocotb`; the seed is this
//! test's (printed; SYSTOLE_SEED replays it, SYSTOLE_SOAK lengthens it).

use std::process::Command;
use tb::tools::{numpy_python, workspace_root};

#[test]
fn the_cocotb_example_passes_on_a_generated_mxu() {
    let root = workspace_root();
    let python = numpy_python();
    let seed = tb::seed::seed_for("the_cocotb_example_passes_on_a_generated_mxu");
    let out_dir = tempfile::tempdir().unwrap();
    let out = Command::new(&python)
        .arg(root.join("examples/cocotb/run.py"))
        .arg("--out")
        .arg(out_dir.path())
        .env("SYSTOLE_SEED", seed.to_string())
        .current_dir(&root)
        .output()
        .expect("run the cocotb example");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "the cocotb example failed:\n{log}");
    // The runner's summary: both cocotb tests ran and passed.
    let summary = format!("cocotb mxu_int8_4x4_acc16: 2 passed, 0 failed (seed {seed})");
    assert!(log.contains(&summary), "'{summary}' missing:\n{log}");
    for test in [
        "matmul_accumulates_k_tiles_and_overwrites",
        "random_tiles_match_the_model",
    ] {
        assert!(
            log.contains(&format!("{test}: seed {seed}")),
            "{test} did not run with the seed:\n{log}"
        );
    }
}

//! `fpga flow` from the command line: one configuration of one block through
//! the synthesis flow of a part, and one clear error line (exit 2) for every
//! kind of bad input.

use std::process::{Command, Output};

fn fpga(args: &[&str], out: &std::path::Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fpga"))
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .expect("the fpga binary runs")
}

#[test]
fn bad_input_gets_one_error_line_and_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 10] = [
        (
            &["--block", "nope", "--parts", "xc7a35t"],
            "unknown block 'nope'",
        ),
        (
            &["--block", "vpu", "--param", "lanes=3", "--parts", "xc7a35t"],
            "power of two",
        ),
        (
            &["--block", "vpu", "--param", "lanes", "--parts", "xc7a35t"],
            "expected KEY=VALUE",
        ),
        (
            &["--block", "vpu", "--param", "bogus=1", "--parts", "xc7a35t"],
            "--param bogus=1: block vpu has no parameter 'bogus' (its parameters: depth, host_wmask, lanes, ",
        ),
        (
            &["--block", "vpu", "--preset", "nope", "--parts", "xc7a35t"],
            "unknown preset 'nope' for block vpu (known presets: tpu-128x8, full-8x1, ",
        ),
        (&["--block", "vpu", "--parts", "xc9"], "unknown part 'xc9'"),
        (
            &["--block", "vpu", "--parts", "ecp5-85f", "--placer", "sa"],
            "invalid value 'sa' for '--placer <PLACER>' (possible values: heap, static; see fpga --help)",
        ),
        (
            &["--block", "vpu", "--parts", "xc7a35t", "--tool-timeout", "x"],
            "invalid value 'x' for '--tool-timeout",
        ),
        (
            &["--block", "torus", "--parts", "xc7a35t"],
            "do not build torus: the torus is a network of chips",
        ),
        (
            &[
                "--block",
                "vpu",
                "--config",
                "/no/such.toml",
                "--parts",
                "xc7a35t",
            ],
            "cannot read config",
        ),
    ];
    for (args, want) in cases {
        let mut all = vec!["flow"];
        all.extend_from_slice(args);
        let o = fpga(&all, tmp.path());
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
    // A pipeline depth is a parameter like any other: a block whose
    // configuration has no `depth` says so in one line.
    for block in gen::registry() {
        if block.default_table().contains_key("depth") || block.name() == "torus" {
            continue;
        }
        let o = fpga(
            &[
                "flow",
                "--block",
                block.name(),
                "--param",
                "depth=2",
                "--parts",
                "xc7a35t",
            ],
            tmp.path(),
        );
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{}: {stderr}", block.name());
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        let want = format!(
            "--param depth=2: block {} has no parameter 'depth'",
            block.name()
        );
        assert!(stderr.contains(&want), "{stderr}");
    }
    // Nothing was written for any of them.
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

/// `fpga flow` of the smallest MXU (`int8-2x3` with one column and two
/// accumulator rows) on `part`, with `extra` flags, in `dir`; it must
/// succeed. Returns its output and the table row of the part.
fn small_mxu_flow(part: &str, extra: &[&str], dir: &std::path::Path) -> (String, String) {
    let mut args = vec![
        "flow",
        "--block",
        "mxu",
        "--preset",
        "int8-2x3",
        "--param",
        "cols=1",
        "--param",
        "acc_rows=2",
        "--parts",
        part,
    ];
    args.extend_from_slice(extra);
    let o = fpga(&args, dir);
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let row = stdout
        .lines()
        .find(|l| l.contains(&format!("| {part} |")))
        .unwrap_or_else(|| panic!("no table row for the part in:\n{stdout}"))
        .to_string();
    (stdout, row)
}

#[test]
fn a_small_mxu_from_a_preset_synthesises_for_artix7_and_the_table_names_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (stdout, row) = small_mxu_flow("xc7a35t", &[], tmp.path());
    assert!(
        stdout.contains("MXU int8 2x1 (2 accumulator rows)"),
        "{stdout}"
    );
    // The preset's rows, the flags' columns; no place and route on
    // 7-series, so no critical path; the depth, or "-" without one.
    assert!(row.contains("yes (estimate)"), "{row}");
    assert!(
        row.contains("| - | yes (estimate) |"),
        "no critical path: {row}"
    );
    assert!(
        row.contains("| xc7a35t | - |") || row.contains("| xc7a35t | 0 |"),
        "{row}"
    );
    assert!(tmp
        .path()
        .join("mxu_int8_2x1_acc2/xc7a35t/stat.json")
        .is_file());
}

/// The CI's Gowin flow: a 2x1 MXU synthesised, placed and routed on the
/// Tang Nano 20K's part (tens of seconds).
#[test]
fn a_small_mxu_places_and_routes_on_gowin() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, row) = small_mxu_flow("gw2ar-18", &["--pnr"], tmp.path());
    // Placed and routed: a measured Fmax and critical path, and it fits.
    assert!(row.contains(" -> "), "no critical path: {row}");
    assert!(row.contains("| yes |"), "{row}");
}

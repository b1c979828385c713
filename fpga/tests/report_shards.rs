//! `fpga report --shard K/N` and `--merge`: the shards of a small report,
//! merged, are the report one run gives; bad shard options and mismatched
//! shards are one error line (exit 2).
//!
//! The set is two designs (the int8-1x1 presets of the MXU and the
//! TensorCore) on both Artix-7 parts: four flows, two syntheses, no place
//! and route. The whole run synthesises them; each shard then runs in a
//! copy of its flow folders, so it takes its flows' results from their
//! records as any rerun does (`flow.json`), and the tools run once.

use fpga::report::Report;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SETTINGS: [&str; 12] = [
    "report",
    "--no-search",
    "--blocks",
    "mxu,tensorcore",
    "--preset",
    "int8-1x1",
    "--param",
    "mxu.acc_rows=2",
    "--parts",
    "xc7a35t,xc7a100t",
    "--jobs",
    "2",
];

fn fpga(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fpga"))
        .args(args)
        .output()
        .expect("the fpga binary runs")
}

fn run(args: &[&str]) -> String {
    let o = fpga(args);
    let stdout = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        o.status.success(),
        "{args:?}: {stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    stdout
}

/// The one error line of a failing command.
fn error_of(args: &[&str]) -> String {
    let o = fpga(args);
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    stderr
}

fn report(dir: &Path) -> Report {
    let text = std::fs::read_to_string(dir.join("report.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The flow folders of `from` (every file but the report) copied to `to`.
fn copy_flows(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name.to_string_lossy().starts_with("report.") {
            continue;
        }
        if entry.file_type().unwrap().is_dir() {
            copy_flows(&entry.path(), &to.join(&name));
        } else {
            std::fs::copy(entry.path(), to.join(&name)).unwrap();
        }
    }
}

fn with_out<'a>(args: &[&'a str], out: &'a str) -> Vec<&'a str> {
    let mut v = args.to_vec();
    v.extend(["--out", out]);
    v
}

#[test]
fn merged_shards_are_the_report_of_one_run() {
    let tmp = tempfile::tempdir().unwrap();
    let path = |name: &str| tmp.path().join(name);
    let text = |p: &PathBuf| p.to_str().unwrap().to_string();
    let whole_dir = text(&path("whole"));
    run(&with_out(&SETTINGS, &whole_dir));
    let whole = report(&path("whole"));
    assert_eq!(whole.presets.len(), 4);
    assert!(whole.presets.iter().all(|r| r.error.is_none()), "{whole:?}");

    // Three shards of four flows: 2, 1 and 1.
    let mut dirs = Vec::new();
    for (k, flows) in [(1, 2), (2, 1), (3, 1)] {
        let dir = path(&format!("shard{k}"));
        copy_flows(&path("whole"), &dir);
        let shard = format!("{k}/3");
        let mut args = with_out(&SETTINGS, dir.to_str().unwrap()).to_vec();
        args.extend(["--shard", &shard]);
        run(&args);
        let r = report(&dir);
        assert_eq!(r.presets.len(), flows, "shard {shard}");
        assert!(r.command.ends_with(&format!(" --shard {shard}")));
        dirs.push(text(&dir));
    }
    let merged_dir = text(&path("merged"));
    let merge = |dirs: &[&str]| {
        let mut args = vec!["report", "--out", &merged_dir, "--merge"];
        args.extend_from_slice(dirs);
        args.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let (d1, d2, d3) = (dirs[0].as_str(), dirs[1].as_str(), dirs[2].as_str());
    let args = merge(&[d3, d1, d2]);
    run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let mut merged = report(&path("merged"));
    // Equal but for the run's time (the longest shard's).
    merged.seconds = whole.seconds;
    assert_eq!(
        serde_json::to_value(&merged).unwrap(),
        serde_json::to_value(&whole).unwrap()
    );
    assert_eq!(merged.markdown(), whole.markdown());
    assert!(path("merged").join("report.md").is_file());

    // Mismatched shards.
    let cases: [(Vec<String>, &str); 3] = [
        (merge(&[d1, d2]), "shards missing: 3/3"),
        (merge(&[d1, d2, d3, d2]), "shard 2/3 given twice"),
        (
            merge(&[d1, d2, d3, &whole_dir]),
            "is a whole report, not a shard's",
        ),
    ];
    for (args, want) in cases {
        let e = error_of(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(e.contains(want), "{e}");
    }
    let mut other = report(&path("shard3"));
    other.commit = Some("0123".into());
    std::fs::write(
        path("shard3").join("report.json"),
        serde_json::to_string(&other).unwrap(),
    )
    .unwrap();
    let args = merge(&[d1, d2, d3]);
    let e = error_of(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        e.contains("are not shards of one report: their commit differ"),
        "{e}"
    );
}

#[test]
fn bad_shard_and_merge_options_are_one_error_line() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let out = out.to_str().unwrap();
    for bad in ["3/2", "0/2", "a/b", "2"] {
        let e = error_of(&["report", "--shard", bad, "--out", out]);
        assert!(e.contains(&format!("--shard '{bad}': expected K/N")), "{e}");
    }
    let e = error_of(&["report", "--shard", "1/2", "--merge", out, "--out", out]);
    assert!(e.contains("--merge takes only --out"), "{e}");
    let e = error_of(&["report", "--merge", out, "--out", out]);
    assert!(e.contains("cannot read"), "{e}");
    let e = error_of(&[
        "report", "--blocks", "mxu", "--preset", "nope", "--out", out,
    ]);
    assert!(
        e.contains("unknown preset 'nope' for block mxu (known presets: "),
        "{e}"
    );
    let e = error_of(&["report", "--param", "mxu.bogus=1", "--out", out]);
    assert!(e.contains("block mxu has no parameter 'bogus'"), "{e}");
    // Nothing was written for any of them.
    assert!(!tmp.path().join("out").exists());
}

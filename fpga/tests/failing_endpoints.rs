//! `scripts/fpga/failing_endpoints.py`: endpoints past a budget, grouped by
//! net, from a nextpnr detailed timing report (a small report written here).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/fpga/failing_endpoints.py")
}

fn run(args: &[&str]) -> Output {
    Command::new("python3")
        .arg(script())
        .args(args)
        .output()
        .expect("python3 runs")
}

/// Two nets of one group (indices differ) with endpoints on both sides of
/// 10 ns, one net of another group, and a net nextpnr times from no clock
/// edge (an input pin into a reset), which is left out of the table.
const REPORT: &str = r#"{"detailed_net_timings": [
  {"net": "pe[0].p[3]", "event": "posedge clk", "endpoints": [{"delay": [9.0, 11.5]}, {"delay": [4.0, 9.5]}]},
  {"net": "pe[7].p[1]", "endpoints": [{"delay": [12.0, 12.25]}]},
  {"net": "take", "event": "posedge clk", "endpoints": [{"delay": [10.5, 10.75]}, {"delay": [1.0, 2.0]}]},
  {"net": "out_q_LSR", "event": "<async>", "endpoints": [{"delay": [17.0, 17.25]}, {"delay": [3.0, 3.5]}]}
]}"#;

#[test]
fn endpoints_past_the_budget_are_counted_by_net_group() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("detail.json");
    std::fs::write(&report, REPORT).unwrap();
    let out = run(&[report.to_str().unwrap(), "--past", "10"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("3 endpoints arrive after 10.0 ns, in 2 net groups"),
        "{text}"
    );
    assert!(
        text.contains("(1 more on nets from no clock edge, such as input pins, not counted)"),
        "{text}"
    );
    assert!(!text.contains("out_q"), "{text}");
    let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("| ")).collect();
    assert_eq!(
        rows,
        [
            "| endpoints | worst arrival (ns) | net group |",
            "| --- | --- | --- |",
            "| 2 | 12.25 | `pe[N].p[N]` |",
            "| 1 | 10.75 | `take` |",
        ],
        "{text}"
    );
}

#[test]
fn a_report_without_net_timings_is_one_error_line() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    std::fs::write(&report, r#"{"fmax": {}}"#).unwrap();
    for args in [
        vec![report.to_str().unwrap(), "--past", "10"],
        vec!["/nonexistent/detail.json", "--past", "10"],
        vec![report.to_str().unwrap(), "--past", "0"],
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("failing_endpoints: "), "{args:?}: {err}");
    }
}

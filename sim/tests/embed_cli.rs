//! `sim embed` and `sim embed-update` end to end: .npy files in, RTL or
//! golden, .npy out, checked against the golden model called here; bad input
//! gets one error line, exit code 2 and no output file.

mod common;

use common::{assert_usage_error, read_f32_bits, stats_of, write_npy};
use golden::sparsecore::{forward, update, Table};
use golden::sparsecore_host::prepare;
use std::path::PathBuf;
use std::process::{Command, Output};

struct Case {
    dir: tempfile::TempDir,
}

/// A table of 11 rows of 5 elements (NaN payloads and -0 among them), and
/// entries with padding, duplicates and one invalid id (at position 6).
const V: u32 = 11;
const D: u32 = 5;
const B: u32 = 3;
const IDS: [i32; 8] = [3, 7, i32::MAX, 3, 10, 0, 11, 7];
const SAMPLES: [i32; 8] = [0, 2, 1, 0, 1, 2, 0, 2];

fn table() -> Vec<u32> {
    (0..V * D)
        .map(|i| match i {
            7 => 0xFFC1_2345,
            12 => 0x8000_0000,
            _ => 0x3F80_0000 + i * 0x0002_3456,
        })
        .collect()
}

fn gains() -> Vec<u32> {
    vec![
        0x3F80_0000,
        0x3F00_0000,
        0x3F80_0000,
        0xC000_0000,
        0x3DCC_CCCD,
        0x3F80_0000,
        0x3F80_0000,
        0x4040_0000,
    ]
}

impl Case {
    fn new() -> Case {
        let c = Case {
            dir: tempfile::tempdir().unwrap(),
        };
        let f32s = |v: Vec<u32>| v.into_iter().map(f32::from_bits).collect::<Vec<f32>>();
        write_npy(&c.path("E.npy"), &[V as u64, D as u64], &f32s(table()));
        write_npy(&c.path("I.npy"), &[IDS.len() as u64], &IDS);
        write_npy(&c.path("S.npy"), &[SAMPLES.len() as u64], &SAMPLES);
        write_npy(&c.path("G.npy"), &[IDS.len() as u64], &f32s(gains()));
        let grad: Vec<u32> = (0..B * D).map(|i| 0x3E00_0000 + i * 0x0001_0000).collect();
        write_npy(&c.path("GR.npy"), &[B as u64, D as u64], &f32s(grad));
        c
    }
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    fn run(&self, cmd_name: &str, args: &[&str]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sim"));
        cmd.arg(cmd_name);
        for a in args {
            if a.ends_with(".npy") {
                cmd.arg(self.path(a));
            } else {
                cmd.arg(a);
            }
        }
        cmd.output().unwrap()
    }
}

const ENTRIES: [&str; 8] = [
    "--table",
    "E.npy",
    "--ids",
    "I.npy",
    "--samples",
    "S.npy",
    "--gains",
    "G.npy",
];

fn embed_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut v: Vec<&str> = ENTRIES.to_vec();
    v.extend_from_slice(&["--batch", "3", "--out", "A.npy"]);
    v.extend_from_slice(extra);
    v
}

fn expect_bad(c: &Case, cmd: &str, args: &[&str], mentions: &str) {
    let out = c.run(cmd, args);
    assert_usage_error(
        &out,
        &format!("{args:?}"),
        mentions,
        &[&c.path("A.npy"), &c.path("E2.npy")],
    );
}

#[test]
fn embed_on_the_rtl_and_golden_agree_with_the_model() {
    let c = Case::new();
    let rows_ok = |t: u32| prepare(&IDS, &SAMPLES, &gains(), V, B, t).unwrap();
    for tiles in ["1", "3"] {
        let t: u32 = tiles.parse().unwrap();
        let want = forward(Table::new(&table(), V, D), &rows_ok(t), B).activations;
        for golden in [false, true] {
            let mut extra = vec!["--tiles", tiles, "--skip-invalid", "--stats"];
            if golden {
                extra.push("--golden");
            }
            let out = c.run("embed", &embed_args(&extra));
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let (shape, got) = read_f32_bits(&c.path("A.npy"));
            assert_eq!(shape, vec![B as u64, D as u64]);
            assert_eq!(got, want, "T={tiles} golden={golden}");
            let s = stats_of(&out);
            assert_eq!(s["tiles"], t);
            assert_eq!(s["entries"], 4, "{s}");
            assert_eq!(s["invalid"], 1, "{s}");
            assert_eq!(s["backend"], if golden { "golden" } else { "rtl" });
            assert!(s["cycles"].as_u64().unwrap() > 100, "{s}");
            assert!(s["hbm_words_read"].as_u64().unwrap() >= 5, "{s}");
            assert_eq!(s["hbm_words_written"], 0);
            assert_eq!(s["rows_written"], 0);
            assert!(s["lookups_per_cycle"].as_f64().unwrap() > 0.0);
            std::fs::remove_file(c.path("A.npy")).unwrap();
        }
    }
}

#[test]
fn rtl_and_golden_report_the_same_cycles() {
    let c = Case::new();
    let mut cycles = Vec::new();
    for extra in [
        vec!["--skip-invalid", "--stats"],
        vec!["--skip-invalid", "--stats", "--golden"],
    ] {
        let out = c.run("embed", &embed_args(&extra));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let s = stats_of(&out);
        cycles.push((s["cycles"].clone(), s["hbm_words_read"].clone()));
    }
    assert_eq!(cycles[0], cycles[1]);
}

#[test]
fn update_writes_the_whole_table_on_the_rtl_and_golden() {
    let c = Case::new();
    let p = prepare(&IDS, &SAMPLES, &gains(), V, B, 2).unwrap();
    let (_, grad) = read_f32_bits(&c.path("GR.npy"));
    let lr = 0.1f32.to_bits();
    let want = update(Table::new(&table(), V, D), &p, &grad, B, lr);
    // Ids 3, 7, 10 and 0 have entries; 11 is outside the table.
    assert_eq!(want.rows_written, 4);
    let (want, want_rows) = (want.table, want.rows_written);
    let mut cycles = Vec::new();
    for golden in [false, true] {
        let mut args: Vec<&str> = ENTRIES.to_vec();
        args.extend_from_slice(&[
            "--grad",
            "GR.npy",
            "--lr",
            "0.1",
            "--out",
            "E2.npy",
            "--tiles",
            "2",
            "--skip-invalid",
            "--stats",
        ]);
        if golden {
            args.push("--golden");
        }
        let out = c.run("embed-update", &args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (shape, got) = read_f32_bits(&c.path("E2.npy"));
        assert_eq!(shape, vec![V as u64, D as u64]);
        assert_eq!(got, want, "golden={golden}");
        // The NaN payload of untouched row 1 is kept bit for bit.
        assert_eq!(got[7], 0xFFC1_2345);
        let s = stats_of(&out);
        assert_eq!(
            (s["entries"].clone(), s["invalid"].clone()),
            (4.into(), 1.into())
        );
        assert_eq!(s["backend"], if golden { "golden" } else { "rtl" });
        assert!(s["hbm_words_written"].as_u64().unwrap() >= 4, "{s}");
        assert_eq!(s["rows_written"], want_rows, "{s}");
        cycles.push((
            s["cycles"].clone(),
            s["hbm_words_read"].clone(),
            s["hbm_words_written"].clone(),
        ));
        std::fs::remove_file(c.path("E2.npy")).unwrap();
    }
    assert_eq!(cycles[0], cycles[1]);
}

#[test]
fn bad_input_gets_one_line_exit_2_and_no_output() {
    let c = Case::new();
    // The invalid id at position 6, refused without --skip-invalid.
    expect_bad(&c, "embed", &embed_args(&[]), "position 6");
    // A sample outside [0, B): B = 2 makes sample 2 (position 1) bad.
    let mut a: Vec<&str> = ENTRIES.to_vec();
    a.extend_from_slice(&["--batch", "2", "--out", "A.npy", "--skip-invalid"]);
    expect_bad(&c, "embed", &a, "position 1");
    expect_bad(&c, "embed", &embed_args(&["--tiles", "0"]), "--tiles");
    expect_bad(&c, "embed", &embed_args(&["--tiles", "17"]), "--tiles");
    let mut a: Vec<&str> = ENTRIES.to_vec();
    a.extend_from_slice(&["--batch", "0", "--out", "A.npy"]);
    expect_bad(&c, "embed", &a, "batch");
    // Wrong dtypes and shapes.
    write_npy(&c.path("Ibad.npy"), &[8], &[0f32; 8]);
    let a: Vec<&str> = embed_args(&[])
        .iter()
        .map(|&x| if x == "I.npy" { "Ibad.npy" } else { x })
        .collect();
    expect_bad(&c, "embed", &a, "I");
    write_npy(&c.path("Gshort.npy"), &[7], &[1f32; 7]);
    let a: Vec<&str> = embed_args(&["--skip-invalid"])
        .iter()
        .map(|&x| if x == "G.npy" { "Gshort.npy" } else { x })
        .collect();
    expect_bad(&c, "embed", &a, "length");
    write_npy(
        &c.path("E3.npy"),
        &[V as u64, D as u64, 1],
        &vec![0f32; (V * D) as usize],
    );
    let a: Vec<&str> = embed_args(&[])
        .iter()
        .map(|&x| if x == "E.npy" { "E3.npy" } else { x })
        .collect();
    expect_bad(&c, "embed", &a, "2-D");
    std::fs::write(c.path("junk.npy"), b"not an npy file").unwrap();
    let a: Vec<&str> = embed_args(&[])
        .iter()
        .map(|&x| if x == "S.npy" { "junk.npy" } else { x })
        .collect();
    expect_bad(&c, "embed", &a, "S");
    let a: Vec<&str> = embed_args(&[])
        .iter()
        .map(|&x| if x == "S.npy" { "missing.npy" } else { x })
        .collect();
    expect_bad(&c, "embed", &a, "S");
    // Update: a bad learning rate, a gradient of the wrong width.
    for lr in ["fast", "inf", "NaN", ""] {
        let mut a: Vec<&str> = ENTRIES.to_vec();
        a.extend_from_slice(&[
            "--grad", "GR.npy", "--lr", lr, "--out", "E2.npy", "--golden",
        ]);
        expect_bad(&c, "embed-update", &a, "--lr");
    }
    write_npy(
        &c.path("GR4.npy"),
        &[B as u64, 4],
        &vec![0f32; (B * 4) as usize],
    );
    let mut a: Vec<&str> = ENTRIES.to_vec();
    a.extend_from_slice(&[
        "--grad",
        "GR4.npy",
        "--lr",
        "0.5",
        "--out",
        "E2.npy",
        "--golden",
        "--skip-invalid",
    ]);
    expect_bad(&c, "embed-update", &a, "GR");
    // An id array of two dimensions, an empty one, a batch past the limit,
    // a negative id named by its position.
    write_npy(&c.path("I2.npy"), &[2, 4], &IDS);
    let a: Vec<&str> = embed_args(&[])
        .iter()
        .map(|&x| if x == "I.npy" { "I2.npy" } else { x })
        .collect();
    expect_bad(&c, "embed", &a, "1-D");
    write_npy(&c.path("I0.npy"), &[0], &[0i32; 0]);
    let a: Vec<&str> = embed_args(&[])
        .iter()
        .map(|&x| if x == "I.npy" { "I0.npy" } else { x })
        .collect();
    expect_bad(&c, "embed", &a, "I");
    let mut a: Vec<&str> = ENTRIES.to_vec();
    a.extend_from_slice(&["--batch", "4097", "--out", "A.npy"]);
    expect_bad(&c, "embed", &a, "batch");
    let neg = [3, 7, i32::MAX, 3, 10, 0, 5, i32::MIN];
    write_npy(&c.path("Ineg.npy"), &[8], &neg);
    let a: Vec<&str> = embed_args(&[])
        .iter()
        .map(|&x| if x == "I.npy" { "Ineg.npy" } else { x })
        .collect();
    expect_bad(&c, "embed", &a, "position 7");
    // A missing flag.
    let out = c.run("embed", &ENTRIES);
    assert_eq!(out.status.code(), Some(2));
    assert!(!c.path("A.npy").exists());
}

//! `systole-host` as users run it without a board: help, and clean one-line
//! failures for bad input (exit 2, checked before the port is opened) and for
//! a port that is not there (exit 1).

use std::path::Path;
use std::process::{Command, Output};

fn host(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_systole-host"))
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

fn write_npy<T: npyz::AutoSerialize + Copy>(path: &Path, rows: u64, cols: u64, data: &[T]) {
    use npyz::WriterBuilder;
    let mut f = std::fs::File::create(path).unwrap();
    let mut w = npyz::WriteOptions::new()
        .default_dtype()
        .shape(&[rows, cols])
        .writer(&mut f)
        .begin_nd()
        .unwrap();
    w.extend(data.iter().copied()).unwrap();
    w.finish().unwrap();
}

#[test]
fn help_lists_the_commands_and_their_flags() {
    let dir = tempfile::tempdir().unwrap();
    let out = host(dir.path(), &["--help"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("info") && text.contains("matmul"), "{text}");
    let out = host(dir.path(), &["matmul", "--help"]);
    let text = String::from_utf8_lossy(&out.stdout);
    for flag in ["--port", "--baud", "--a", "--b", "--out", "--stats"] {
        assert!(text.contains(flag), "{flag} missing:\n{text}");
    }
}

#[test]
fn failures_are_one_line_with_the_right_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_npy(&d.join("a.npy"), 2, 3, &[1i8, 2, 3, 4, 5, 6]);
    write_npy(&d.join("b.npy"), 3, 1, &[1i8, 2, 3]);
    write_npy(&d.join("b_wrong.npy"), 2, 1, &[1i8, 2]);
    write_npy(&d.join("f32.npy"), 1, 1, &[1.0f32]);
    std::fs::write(d.join("junk.npy"), "not numpy").unwrap();
    let port = ["--port", "/nonexistent/tty"];
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (vec!["frobnicate"], 2, "unrecognized subcommand"),
        (vec!["info"], 2, "--port"),
        (
            vec!["info", port[0], port[1]],
            1,
            "cannot open /nonexistent/tty",
        ),
        (
            vec![
                "matmul",
                port[0],
                port[1],
                "--a",
                "missing.npy",
                "--b",
                "b.npy",
                "--out",
                "c.npy",
            ],
            2,
            "cannot read A",
        ),
        (
            vec![
                "matmul", port[0], port[1], "--a", "junk.npy", "--b", "b.npy", "--out", "c.npy",
            ],
            2,
            "not a .npy file",
        ),
        (
            vec![
                "matmul", port[0], port[1], "--a", "f32.npy", "--b", "b.npy", "--out", "c.npy",
            ],
            2,
            "expected int8 or uint16",
        ),
        (
            vec![
                "matmul",
                port[0],
                port[1],
                "--a",
                "a.npy",
                "--b",
                "b_wrong.npy",
                "--out",
                "c.npy",
            ],
            2,
            "A's columns must equal B's rows",
        ),
        (
            vec![
                "matmul", port[0], port[1], "--a", "a.npy", "--b", "b.npy", "--out", "c.npy",
            ],
            1,
            "cannot open /nonexistent/tty",
        ),
    ];
    for (args, code, needle) in cases {
        let out = host(d, &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: '{needle}' not in {err}");
        assert!(!d.join("c.npy").exists(), "{args:?} wrote an output");
    }
}

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

fn write_vec<T: npyz::AutoSerialize + Copy>(path: &Path, data: &[T]) {
    use npyz::WriterBuilder;
    let mut f = std::fs::File::create(path).unwrap();
    let mut w = npyz::WriteOptions::new()
        .default_dtype()
        .shape(&[data.len() as u64])
        .writer(&mut f)
        .begin_nd()
        .unwrap();
    w.extend(data.iter().copied()).unwrap();
    w.finish().unwrap();
}

#[test]
fn mlp_bad_input_is_one_line_exit_2_and_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A two-layer model: 3 -> 2 -> 2.
    let model = d.join("model");
    std::fs::create_dir(&model).unwrap();
    write_npy(&model.join("w1.npy"), 3, 2, &[1i8, 2, 3, 4, 5, 6]);
    write_vec(&model.join("b1.npy"), &[0i32, 1]);
    write_vec(&model.join("rq1.npy"), &[1i32 << 30, 4, 0]);
    write_npy(&model.join("w2.npy"), 2, 2, &[1i8, 0, 0, 1]);
    write_vec(&model.join("b2.npy"), &[5i32, 6]);
    // Models with one thing wrong each.
    let broken = |name: &str, f: &dyn Fn(&Path)| {
        let m = d.join(name);
        std::fs::create_dir(&m).unwrap();
        for e in std::fs::read_dir(&model).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), m.join(e.file_name())).unwrap();
        }
        f(&m);
    };
    broken("no_rq", &|m| {
        std::fs::remove_file(m.join("rq1.npy")).unwrap()
    });
    broken("bad_w2", &|m| {
        write_npy(&m.join("w2.npy"), 3, 2, &[0i8; 6]);
    });
    broken("f32_b1", &|m| write_vec(&m.join("b1.npy"), &[0f32, 1.0]));
    std::fs::create_dir(d.join("empty")).unwrap();
    write_npy(&d.join("x.npy"), 2, 3, &[1i8, 2, 3, 4, 5, 6]);
    write_npy(&d.join("x_wide.npy"), 1, 4, &[1i8, 2, 3, 4]);
    write_npy(&d.join("x_i32.npy"), 1, 3, &[1i32, 2, 3]);
    let port = ["--port", "/nonexistent/tty"];
    let run = |m: &str, x: &str| -> Vec<String> {
        [
            "mlp", port[0], port[1], "--model", m, "--x", x, "--out", "out.npy",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let cases: Vec<(Vec<String>, i32, &str)> = vec![
        (run("missing", "x.npy"), 2, "does not exist"),
        (run("empty", "x.npy"), 2, "no w1.npy"),
        (run("no_rq", "x.npy"), 2, "rq1"),
        (run("bad_w2", "x.npy"), 2, "w2"),
        (run("f32_b1", "x.npy"), 2, "b1"),
        (run("model", "missing.npy"), 2, "X"),
        (run("model", "x_wide.npy"), 2, "takes 3 inputs"),
        (run("model", "x_i32.npy"), 2, "X"),
        // Valid input: only then is the port opened.
        (run("model", "x.npy"), 1, "cannot open /nonexistent/tty"),
    ];
    for (args, code, needle) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = host(d, &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: '{needle}' not in {err}");
        assert!(!d.join("out.npy").exists(), "{args:?} wrote an output");
    }
    let out = host(d, &["mlp", "--help"]);
    let text = String::from_utf8_lossy(&out.stdout);
    for flag in ["--port", "--model", "--x", "--out", "--stats"] {
        assert!(text.contains(flag), "{flag} missing:\n{text}");
    }
}

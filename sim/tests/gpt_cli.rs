//! `sim gpt` end to end on the trained model in `models/char-gpt`: the RTL
//! and the golden backend give the contract's tokens and logits
//! (`golden::gpt::generate`, bit for bit) and the same cycles; other R and
//! W change the bits as the contract says and still agree; bad input gets
//! one error line, exit code 2 and no output file.

mod common;

use common::{assert_usage_error, read_words, sim, stats_of, write_npy, Case};
use std::path::{Path, PathBuf};

fn model_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/char-gpt")
}

fn run(case: &Case, prompt: &str, steps: &str, extra: &[&str]) -> std::process::Output {
    sim()
        .arg("gpt")
        .arg("--model")
        .arg(model_dir())
        .arg("--prompt")
        .arg(case.path(prompt))
        .args(["--steps", steps, "--out"])
        .arg(case.path("t.npy"))
        .arg("--logits")
        .arg(case.path("l.npy"))
        .args(extra)
        .output()
        .unwrap()
}

/// The contract's generation for the model at R and W.
fn contract(prompt: &[u32], steps: usize, r: usize, w: usize) -> (Vec<u32>, Vec<u32>) {
    let model = compiler::gpt::load_gpt(&model_dir()).unwrap();
    let (tokens, logits) = golden::gpt::generate(&model, prompt, steps, r, w).unwrap();
    (tokens, logits.concat())
}

fn check(case: &Case, out: &std::process::Output, want: &(Vec<u32>, Vec<u32>), what: &str) {
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (t_shape, t_dtype, tokens) = read_words(&case.path("t.npy"));
    assert_eq!(
        (t_shape, t_dtype.as_str()),
        (vec![want.0.len() as u64], "'<i4'"),
        "{what}"
    );
    assert_eq!(tokens, want.0, "{what}: tokens");
    let (l_shape, _, logits) = read_words(&case.path("l.npy"));
    assert_eq!(l_shape, vec![want.0.len() as u64, 103], "{what}");
    assert_eq!(logits, want.1, "{what}: logits");
}

#[test]
fn rtl_and_golden_generate_the_contract_s_tokens_and_logits() {
    let case = Case::new();
    // "The " in the model's vocabulary.
    let prompt: Vec<u32> = vec![52, 71, 68, 1];
    write_npy(
        &case.path("p.npy"),
        &[4],
        &prompt.iter().map(|&t| t as i32).collect::<Vec<_>>(),
    );
    let want = contract(&prompt, 3, 8, 8);
    let mut cycles = Vec::new();
    for backend in [&["--golden"][..], &[][..]] {
        let mut extra = vec!["--stats"];
        extra.extend_from_slice(backend);
        let out = run(&case, "p.npy", "3", &extra);
        check(&case, &out, &want, &format!("{backend:?}"));
        let s = stats_of(&out);
        for key in [
            "cycles",
            "cycles_per_token",
            "mxu_busy",
            "vpu_busy",
            "eup_busy",
            "rows",
            "cols",
            "lanes",
            "sublanes",
            "backend",
        ] {
            assert!(s.get(key).is_some(), "{key} missing from {s}");
        }
        assert_eq!(
            (s["rows"].as_u64(), s["lanes"].as_u64()),
            (Some(8), Some(8))
        );
        cycles.push(s["cycles"].as_u64().unwrap());
    }
    assert_eq!(
        cycles[0], cycles[1],
        "the cycle model's cycles are the RTL's"
    );
}

#[test]
fn other_array_and_vector_sizes_give_their_own_contract_bits() {
    let case = Case::new();
    let prompt: Vec<u32> = vec![1, 2, 3];
    write_npy(&case.path("p.npy"), &[3], &[1i32, 2, 3]);
    for (r, lanes, sublanes) in [(5usize, 2usize, 2usize), (16, 16, 8), (1, 1, 1)] {
        let want = contract(&prompt, 2, r, lanes * sublanes);
        let (rs, ls, ss) = (r.to_string(), lanes.to_string(), sublanes.to_string());
        let extra = [
            "--golden",
            "--rows",
            rs.as_str(),
            "--cols",
            rs.as_str(),
            "--lanes",
            ls.as_str(),
            "--sublanes",
            ss.as_str(),
        ];
        let out = run(&case, "p.npy", "2", &extra);
        check(&case, &out, &want, &format!("R {r}, {lanes} x {sublanes}"));
    }
}

#[test]
fn bad_input_is_one_line_exit_2_and_no_output() {
    let case = Case::new();
    write_npy(&case.path("p.npy"), &[2], &[1i32, 2]);
    write_npy(&case.path("big.npy"), &[2], &[1i32, 103]);
    write_npy(&case.path("neg.npy"), &[1], &[-1i32]);
    write_npy(&case.path("f.npy"), &[2], &[1.0f32, 2.0]);
    write_npy(&case.path("m.npy"), &[1, 2], &[1i32, 2]);
    write_npy(&case.path("e.npy"), &[0], &[0i32; 0]);
    write_npy(&case.path("long.npy"), &[60], &[1i32; 60]);
    let outputs = [case.path("t.npy"), case.path("l.npy")];
    let outs: Vec<&Path> = outputs.iter().map(PathBuf::as_path).collect();
    let cases: Vec<(&str, &str, Vec<&str>, &str)> = vec![
        ("big.npy", "2", vec![], "103"),
        ("neg.npy", "2", vec![], "-1"),
        ("f.npy", "2", vec![], "int32"),
        ("m.npy", "2", vec![], "shape"),
        ("e.npy", "2", vec![], "at least one"),
        ("long.npy", "6", vec![], "context"),
        ("missing.npy", "2", vec![], "missing.npy"),
        ("p.npy", "0", vec![], "--steps"),
        ("p.npy", "2", vec!["--rows", "17"], "--rows"),
        ("p.npy", "2", vec!["--rows", "0"], "--rows"),
        ("p.npy", "2", vec!["--rows", "4", "--cols", "8"], "--cols"),
        ("p.npy", "2", vec!["--lanes", "3"], "--lanes"),
        (
            "p.npy",
            "2",
            vec!["--lanes", "64", "--sublanes", "4"],
            "128",
        ),
        ("p.npy", "2", vec!["--sublanes", "-2"], "--sublanes"),
    ];
    for (prompt, steps, extra, message) in cases {
        let out = run(&case, prompt, steps, &extra);
        assert_usage_error(&out, &format!("{prompt} {steps} {extra:?}"), message, &outs);
    }
    // A model folder with a file missing, and one with a misshapen file.
    let broken = case.path("model");
    std::fs::create_dir(&broken).unwrap();
    for entry in std::fs::read_dir(model_dir()).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), broken.join(entry.file_name())).unwrap();
    }
    std::fs::remove_file(broken.join("layer1_wq.npy")).unwrap();
    let with_model = |dir: &Path| {
        sim()
            .arg("gpt")
            .arg("--model")
            .arg(dir)
            .arg("--prompt")
            .arg(case.path("p.npy"))
            .args(["--steps", "2", "--out"])
            .arg(case.path("t.npy"))
            .output()
            .unwrap()
    };
    assert_usage_error(&with_model(&broken), "missing file", "layer1_wq", &outs);
    write_npy(&broken.join("layer1_wq.npy"), &[3], &[1u16, 2, 3]);
    assert_usage_error(&with_model(&broken), "misshapen file", "layer1_wq", &outs);
    assert_usage_error(
        &with_model(&case.path("nowhere")),
        "missing folder",
        "nowhere",
        &outs,
    );
}

//! The contract's transformer (`docs/numerics.md#transformer-step`) in its
//! two independent implementations, held to each other bit for bit: the
//! golden model (`golden::gpt`) and the numpy reference
//! (`scripts/gpt_reference.py`), on random small models for several MXU
//! R and VPU W, and on directed logits with ties, infinities and NaNs; and
//! piece by piece (layer norm, softmax, the matmul), where the bf16
//! roundings of the step do not hide their rounding differences. Also the
//! numpy reference's own check against the reference vectors, golden's
//! layer norm and softmax on hand-checked cases, and the model folder's
//! round trip through `compiler::gpt::load_gpt`.
//!
//! Random tests print their seed; `SYSTOLE_SEED` replays one.

use config::gpt::GptModel;
use golden::gpt::{generate, layernorm, softmax};
use rand::Rng;
use std::process::Command;
use tb::gpt::{
    dims, random_model, read_f32s, reference_script, run_reference, write_bf16s, write_f32s,
    write_model,
};
use tb::tools::{numpy_python, workspace_root};

const F32_NAN: u32 = 0x7FC0_0000;
const F32_INF: u32 = 0x7F80_0000;

/// Runs golden and numpy on `model`, asserting equal tokens and logit bits;
/// returns golden's result.
fn both_agree(
    model: &GptModel,
    prompt: &[u32],
    steps: usize,
    rows_r: usize,
    w: usize,
) -> (Vec<u32>, Vec<Vec<u32>>) {
    let what = format!(
        "{} prompt {prompt:?} steps {steps} R {rows_r} W {w}",
        model.dims
    );
    let golden = generate(model, prompt, steps, rows_r, w).unwrap();
    let folder = tempfile::tempdir().unwrap();
    write_model(model, folder.path()).unwrap();
    let numpy = run_reference(folder.path(), prompt, steps, rows_r, w)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    for (s, (g, n)) in golden.1.iter().zip(&numpy.1).enumerate() {
        if let Some(i) = (0..g.len()).find(|&i| g[i] != n[i]) {
            panic!(
                "{what}: step {s}, logit {i}: golden {:08x}, numpy {:08x}",
                g[i], n[i]
            );
        }
        assert_eq!(g.len(), n.len(), "{what}: step {s}: logit counts");
    }
    assert_eq!(golden.0, numpy.0, "{what}: tokens");
    golden
}

#[test]
fn golden_and_numpy_agree_on_random_models() {
    let mut rng = tb::seed::rng_for("golden_and_numpy_agree_on_random_models");
    // Heads 1 and more; d_model a multiple of R and not; d_ff odd; W above
    // and below the widths it sums.
    let cases = [
        (dims(11, 8, 1, 5, 1, 6), 1, 1, 1),
        (dims(11, 8, 1, 5, 1, 6), 3, 2, 3),
        (dims(16, 12, 3, 7, 2, 8), 8, 8, 1),
        (dims(16, 12, 3, 7, 2, 8), 5, 4, 4),
        (dims(9, 6, 2, 9, 2, 10), 16, 128, 2),
        (dims(9, 6, 2, 9, 2, 10), 3, 2, 1),
        (dims(20, 16, 4, 11, 1, 12), 16, 1, 5),
        (dims(20, 16, 4, 11, 1, 12), 8, 8, 2),
    ];
    for round in 0..tb::seed::soak_rounds(1) {
        for (i, &(dims, rows_r, w, prompt_len)) in cases.iter().enumerate() {
            let model = random_model(&mut rng, dims, (i + round) % 2 == 1);
            let prompt: Vec<u32> = (0..prompt_len)
                .map(|_| rng.gen_range(0..dims.vocab() as u32))
                .collect();
            let steps = rng.gen_range(2..=dims.context() - prompt_len + 1);
            let (tokens, _) = both_agree(&model, &prompt, steps, rows_r, w);
            println!("{dims} R {rows_r} W {w}: {prompt:?} -> {tokens:?}");
        }
    }
}

/// A model whose final layer norm has zero gains, so its output is its
/// bias (1.0 everywhere) whatever the input, and the logits are the column
/// sums of `wout` (set by the caller) on a bf16 row of ones.
fn model_with_fixed_final_row(columns: &[[u16; 4]]) -> GptModel {
    let mut rng = tb::seed::rng_for("model_with_fixed_final_row");
    let mut model = random_model(&mut rng, dims(columns.len(), 4, 2, 3, 1, 6), false);
    model.lnf_g = vec![0; 4];
    model.lnf_b = vec![1.0f32.to_bits(); 4];
    model.wout = (0..4)
        .flat_map(|k| columns.iter().map(move |c| c[k]))
        .collect();
    model
}

#[test]
fn directed_logits_with_ties_infinities_and_nans() {
    const NAN: u16 = 0x7FC1; // not the canonical pattern: widening makes it so
    const INF: u16 = 0x7F80;
    const NEG_INF: u16 = 0xFF80;
    const MAX: u16 = 0x7F7F;
    const NEG_MAX: u16 = 0xFF7F;
    let (one, two, three, half) = (0x3F80, 0x4000, 0x4040, 0x3F00);

    // Infinities: column 2 and 3 tie at +inf, before them a NaN and -inf.
    // Column 6 sums max + max - max - max: +inf for every R but 2, where
    // the tiles (+inf) + (-inf) give a NaN.
    let model = model_with_fixed_final_row(&[
        [NAN, 0, 0, 0],
        [NEG_INF, 0, 0, 0],
        [INF, 0, 0, 0],
        [INF, 0, one, 0],
        [INF, NEG_INF, 0, 0],
        [two, 0, 0, 0],
        [MAX, MAX, NEG_MAX, NEG_MAX],
        [0, 0, 0, 0],
    ]);
    for (rows_r, w) in [(1, 1), (2, 2), (3, 4), (16, 128)] {
        let (tokens, logits) = both_agree(&model, &[1, 5], 3, rows_r, w);
        assert_eq!(tokens, [2, 2, 2], "R {rows_r} W {w}");
        let l = &logits[0];
        assert_eq!(
            l[..6],
            [F32_NAN, 0xFF80_0000, F32_INF, F32_INF, F32_NAN, 0x4000_0000]
        );
        assert_eq!(
            l[6],
            if rows_r == 2 { F32_NAN } else { F32_INF },
            "R {rows_r}"
        );
        assert_eq!(l[7], 0);
    }

    // Finite ties: columns 3, 4 and 5 all sum to 3.5, column 6 to +0.0.
    let model = model_with_fixed_final_row(&[
        [NAN, 0, 0, 0],
        [NEG_INF, 0, 0, 0],
        [one, 0, 0, 0],
        [three, half, 0, 0],
        [half, three, 0, 0],
        [0, 0, three, half],
        [0x8000, 0x8000, 0x8000, 0x8000],
        [0xC000, 0, 0, 0],
    ]);
    for (rows_r, w) in [(1, 2), (4, 8)] {
        let (tokens, logits) = both_agree(&model, &[0], 4, rows_r, w);
        assert_eq!(tokens, [3, 3, 3, 3], "R {rows_r} W {w}");
        assert_eq!(logits[0][3..7], [0x4060_0000, 0x4060_0000, 0x4060_0000, 0]);
    }

    // Every logit NaN: the contract leaves it open, both models choose 0.
    let model = model_with_fixed_final_row(&[[NAN, 0, 0, 0], [0, INF, NEG_INF, 0], [0, 0, 0, NAN]]);
    let (tokens, _) = both_agree(&model, &[2, 1], 3, 2, 4);
    assert_eq!(tokens, [0, 0, 0]);
}

#[test]
fn the_numpy_reference_passes_the_reference_vectors() {
    let out = Command::new(numpy_python())
        .arg(reference_script())
        .arg("--check-vectors")
        .arg(golden::vectors::VECTOR_DIR)
        .output()
        .expect("run gpt_reference.py");
    let log =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "--check-vectors failed:\n{log}");
    assert!(log.contains("every vector agrees"), "{log}");
    for file in [
        "f32_add",
        "f32_sub",
        "f32_mul",
        "f32_min_max",
        "f32_div",
        "f32_sqrt",
        "f32_exp",
        "bf16_to_f32",
        "f32_to_bf16",
        "i32_to_f32",
        "bf16_mul",
        "bf16_mac_chain",
        "f32_reduce_sum",
    ] {
        assert!(
            log.lines().any(|l| l.starts_with(file)),
            "{file} not checked:\n{log}"
        );
    }
}

#[test]
fn the_numpy_self_check_fails_on_a_wrong_vector() {
    let copy = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(golden::vectors::VECTOR_DIR).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, copy.path().join(path.file_name().unwrap())).unwrap();
    }
    // The first data row of f32_div.tsv with its quotient's last bit flipped.
    let div = copy.path().join("f32_div.tsv");
    let text = std::fs::read_to_string(&div).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut cols: Vec<String> = lines[1].split('\t').map(str::to_string).collect();
    let q = u32::from_str_radix(&cols[2], 16).unwrap() ^ 1;
    cols[2] = format!("{q:08x}");
    lines[1] = cols.join("\t");
    std::fs::write(&div, lines.join("\n") + "\n").unwrap();
    let out = Command::new(numpy_python())
        .arg(reference_script())
        .arg("--check-vectors")
        .arg(copy.path())
        .output()
        .expect("run gpt_reference.py");
    let log = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "a wrong vector passed:\n{log}");
    assert!(log.contains("f32_div (div32): 29999 of 30000"), "{log}");
    assert!(log.contains(&format!("expected {q:08x}")), "{log}");
}

#[test]
fn the_numpy_reference_refuses_bad_input_in_one_line() {
    let mut rng = tb::seed::rng_for("the_numpy_reference_refuses_bad_input_in_one_line");
    let model = random_model(&mut rng, dims(5, 4, 1, 3, 1, 4), false);
    let folder = tempfile::tempdir().unwrap();
    write_model(&model, folder.path()).unwrap();
    for (prompt, steps, wanted) in [
        (vec![1, 5], 1, "prompt token 1 is 5"),
        (vec![1, 2], 4, "need 5 positions"),
    ] {
        let e = run_reference(folder.path(), &prompt, steps, 2, 2).unwrap_err();
        let last = e.lines().last().unwrap();
        assert!(last.starts_with("error: ") && last.contains(wanted), "{e}");
        assert_eq!(e.matches("error").count(), 1, "{e}");
    }
    std::fs::remove_file(folder.path().join("layer0_w2.npy")).unwrap();
    let e = run_reference(folder.path(), &[0], 1, 2, 2).unwrap_err();
    assert!(e.contains("layer0_w2.npy: missing"), "{e}");
}

#[test]
fn generation_checks_its_arguments() {
    let mut rng = tb::seed::rng_for("generation_checks_its_arguments");
    let model = random_model(&mut rng, dims(5, 4, 1, 3, 1, 4), false);
    let e = generate(&model, &[0, 1, 7], 1, 2, 2).unwrap_err();
    assert!(e.contains("prompt token 2 is 7"), "{e}");
    // 2 prompt tokens and 3 generated need 4 positions: the last is chosen,
    // not fed.
    assert!(generate(&model, &[0, 1], 3, 2, 2).is_ok());
    let e = generate(&model, &[0, 1], 4, 2, 2).unwrap_err();
    assert!(
        e.contains("need 5 positions") && e.contains("holds 4"),
        "{e}"
    );
    assert!(generate(&model, &[], 1, 2, 2).is_err());
    assert!(generate(&model, &[0], 0, 2, 2).is_err());
    assert!(generate(&model, &[0], 1, 0, 2).is_err());
    assert!(generate(&model, &[0], 1, 2, 3)
        .unwrap_err()
        .contains("power of two"));
}

#[test]
fn layernorm_on_a_hand_checked_case() {
    // x = 1, 2, 3, 4: the sums are exact in any order (10 and 5), so
    // mean = 2.5, d = -1.5 .. 1.5, var = 1.25, r = 1 / sqrt(1.25) with two
    // roundings. Every value is normal, where IEEE float32 arithmetic is
    // the contract's, so the host computes the expected bits.
    let x = [1.0f32, 2.0, 3.0, 4.0];
    let g = [2.0f32, 0.5, 1.0, -1.0];
    let b = [0.25f32, 0.0, -1.0, 0.5];
    let r = 1.0f32 / 1.25f32.sqrt();
    let expected: Vec<u32> = x
        .iter()
        .zip(g.iter().zip(&b))
        .map(|(&xi, (&gi, &bi))| ((xi - 2.5) * r * gi + bi).to_bits())
        .collect();
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
    for w in [1, 2, 4, 8] {
        assert_eq!(
            layernorm(&bits(&x), &bits(&g), &bits(&b), 0, w),
            expected,
            "W {w}"
        );
    }
    // Zero gains leave the biases.
    let y = layernorm(&bits(&x), &[0; 4], &bits(&b), 1e-5f32.to_bits(), 2);
    assert_eq!(y, bits(&b));
}

#[test]
fn softmax_on_hand_checked_cases() {
    // Equal inputs: every e_j = exp(0) = 1.0, z = L, p_j = recip(L).
    for (l, value) in [(2, 0x3F80_0000u32), (3, 0xC2C8_0000), (4, 0)] {
        let p = softmax(&vec![value; l], 4);
        let r = (1.0f32 / l as f32).to_bits();
        assert_eq!(p, vec![r; l], "{l} copies of {value:08x}");
    }
    // A NaN makes the maximum, and so every probability, the canonical NaN.
    assert_eq!(softmax(&[0, 0x7F80_0001, 0], 2), [F32_NAN; 3]);
    // exp(-inf - m) = +0.0: an element of -inf takes no probability.
    assert_eq!(
        softmax(&[0xFF80_0000, 0, 0], 2),
        [0, 0x3F00_0000, 0x3F00_0000]
    );
}

#[test]
fn w_changes_the_sums_of_layernorm_and_softmax() {
    // e = 1.0, exp(-17), +0.0, exp(-17), with exp(-17) in (2^-25, 2^-24]:
    // W = 1 adds each exp(-17) to 1.0 alone, which rounds back to 1.0, so
    // p_0 = 1.0; W = 2 adds the two first (lanes 1 and 3 of two chunks),
    // 1.0 + 2 exp(-17) rounds up, and p_0 is below 1.0.
    let s = [
        0,
        (-17.0f32).to_bits(),
        (-200.0f32).to_bits(),
        (-17.0f32).to_bits(),
    ];
    let p1 = softmax(&s, 1);
    let p2 = softmax(&s, 2);
    assert_eq!(p1[0], 0x3F80_0000);
    assert!(f32::from_bits(p2[0]) < 1.0, "{:08x}", p2[0]);

    // The same effect in the mean: 1 + 2^-24 + 0 + 2^-24 is 1.0 left to
    // right, 1 + 2^-23 with W = 2.
    let tiny = 2.0f32.powi(-24).to_bits();
    let x = [0x3F80_0000, tiny, 0, tiny];
    let ones = [0x3F80_0000; 4];
    assert_ne!(
        layernorm(&x, &ones, &[0; 4], 0, 1),
        layernorm(&x, &ones, &[0; 4], 0, 2)
    );
}

#[test]
fn a_written_model_folder_loads_back_equal() {
    let mut rng = tb::seed::rng_for("a_written_model_folder_loads_back_equal");
    for (dims, odd) in [
        (dims(7, 6, 3, 5, 2, 9), true),
        (dims(3, 2, 1, 1, 1, 1), false),
    ] {
        let mut model = random_model(&mut rng, dims, odd);
        // Patterns the contract reads specially must pass unchanged.
        model.tok_emb[0] = 0x7F80_0001;
        model.lnf_b[0] = 0x8000_0001;
        model.wout[0] = 0x7FC1;
        let folder = tempfile::tempdir().unwrap();
        write_model(&model, folder.path()).unwrap();
        std::fs::write(folder.path().join("vocab.json"), "[]").unwrap();
        let loaded = compiler::gpt::load_gpt(folder.path()).unwrap();
        assert_eq!(loaded, model, "{dims}");
    }
}

/// fp32 values for the pieces' tests: mostly of about `scale` (times a
/// random power of two up to 2^`spread`), and in `special` of the cases
/// (per element) a NaN, an infinity, a zero, a subnormal or a huge value.
fn piece_f32s<R: Rng>(rng: &mut R, n: usize, scale: f32, spread: i32, special: f64) -> Vec<u32> {
    let magnitude = scale * 2f32.powi(rng.gen_range(-spread..=spread));
    (0..n)
        .map(|_| {
            if rng.gen_bool(special) {
                match rng.gen_range(0..6) {
                    0 => 0x7F80_0000 | rng.gen_range(1..0x0080_0000u32),
                    1 => 0x7F80_0000 | (rng.gen::<u32>() & 0x8000_0000),
                    2 => rng.gen::<u32>() & 0x8000_0000,
                    3 => rng.gen_range(1..0x0080_0000u32) | (rng.gen::<u32>() & 0x8000_0000),
                    4 => {
                        rng.gen_range(0x7F00_0000..0x7F80_0000u32)
                            | (rng.gen::<u32>() & 0x8000_0000)
                    }
                    _ => rng.gen_range(0x0080_0000..0x0100_0000u32),
                }
            } else {
                (magnitude * rng.gen_range(-1.0f32..1.0)).to_bits()
            }
        })
        .collect()
}

/// Asserts equal bit patterns row by row, naming the first difference.
fn assert_rows_equal(what: &str, width: usize, golden: &[u32], numpy: &[u32]) {
    assert_eq!(golden.len(), numpy.len(), "{what}: lengths");
    if let Some(i) = (0..golden.len()).find(|&i| golden[i] != numpy[i]) {
        panic!(
            "{what}: row {} element {}: golden {:08x}, numpy {:08x}",
            i / width,
            i % width,
            golden[i],
            numpy[i]
        );
    }
}

/// The logits hide most rounding differences of layer norm, softmax and the
/// matmul's tiling behind the bf16 roundings after them, so each piece is
/// also held to numpy's alone, on many rows with special values. Each W
/// and R is shown to change some results, so the comparison sees the order.
#[test]
fn golden_and_numpy_agree_on_each_piece_of_the_step() {
    let mut rng = tb::seed::rng_for("golden_and_numpy_agree_on_each_piece_of_the_step");
    let batch = 40;
    // Rows whose result another W (or R) changes: each must be seen somewhere.
    let (mut softmax_w_mattered, mut layernorm_w_mattered, mut matmul_r_mattered) = (0, 0, 0);
    for &(len, w) in &[(1, 1), (5, 4), (37, 2), (37, 128), (150, 1), (150, 8)] {
        let dir = tempfile::tempdir().unwrap();
        let rows: Vec<Vec<u32>> = (0..batch)
            .map(|i| {
                let special = if i % 4 == 0 { 0.03 } else { 0.0 };
                piece_f32s(&mut rng, len, 16.0, 2, special)
            })
            .collect();
        write_f32s(dir.path(), "s", &[batch, len], &rows.concat()).unwrap();
        tb::gpt::run_reference_function("softmax", dir.path(), 1, w).unwrap();
        let golden: Vec<u32> = rows.iter().flat_map(|s| softmax(s, w)).collect();
        let what = format!("softmax of {len} with W {w}");
        assert_rows_equal(&what, len, &golden, &read_f32s(dir.path(), "p").unwrap());
        softmax_w_mattered += rows
            .iter()
            .filter(|s| softmax(s, w) != softmax(s, 1))
            .count();

        let dir = tempfile::tempdir().unwrap();
        let rows: Vec<Vec<u32>> = (0..batch)
            .map(|i| match i % 8 {
                // A constant row: the variance is 0 (then eps matters).
                0 => vec![piece_f32s(&mut rng, 1, 3.0, 4, 0.0)[0]; len],
                1 => piece_f32s(&mut rng, len, 1.0, 60, 0.05),
                _ => piece_f32s(&mut rng, len, 1.0, 8, 0.0),
            })
            .collect();
        let g = piece_f32s(&mut rng, len, 1.5, 0, 0.02);
        let b = piece_f32s(&mut rng, len, 0.5, 0, 0.02);
        let eps = if w % 4 == 0 { 0 } else { 1e-5f32.to_bits() };
        write_f32s(dir.path(), "x", &[batch, len], &rows.concat()).unwrap();
        for (name, values) in [("g", &g), ("b", &b)] {
            write_f32s(dir.path(), name, &[len], values).unwrap();
        }
        write_f32s(dir.path(), "eps", &[], &[eps]).unwrap();
        tb::gpt::run_reference_function("layernorm", dir.path(), 1, w).unwrap();
        let golden: Vec<u32> = rows
            .iter()
            .flat_map(|x| layernorm(x, &g, &b, eps, w))
            .collect();
        let what = format!("layernorm of {len} with W {w}, eps {eps:08x}");
        assert_rows_equal(&what, len, &golden, &read_f32s(dir.path(), "y").unwrap());
        layernorm_w_mattered += rows
            .iter()
            .filter(|x| layernorm(x, &g, &b, eps, w) != layernorm(x, &g, &b, eps, 1))
            .count();
    }

    // The matmul the step runs, for R below, at and above K.
    for &(m, k, n, rows_r) in &[
        (4, 9, 5, 1),
        (4, 40, 6, 3),
        (3, 64, 7, 8),
        (5, 33, 4, 16),
        (2, 7, 3, 16),
    ] {
        // bf16 elements each of its own magnitude (2^-12 .. 2^12), so that
        // the fp32 sums round; a few special values.
        let mut bf16s = |count: usize| -> Vec<u16> {
            (0..count)
                .map(|_| {
                    let bits = piece_f32s(&mut rng, 1, 1.0, 12, 0.01)[0];
                    (bits >> 16) as u16
                })
                .collect()
        };
        let a = bf16s(m * k);
        let b = bf16s(k * n);
        let dir = tempfile::tempdir().unwrap();
        for (name, rows, cols, values) in [("a", m, k, &a), ("b", k, n, &b)] {
            write_bf16s(dir.path(), name, &[rows, cols], values).unwrap();
        }
        tb::gpt::run_reference_function("matmul", dir.path(), rows_r, 1).unwrap();
        let golden = golden::mxu::matmul_bf16(&a, &b, m, k, n, rows_r);
        let what = format!("matmul {m}x{k}x{n} with R {rows_r}");
        assert_rows_equal(&what, n, &golden, &read_f32s(dir.path(), "c").unwrap());
        // R = 1 groups as a plain left fold, like one tile of K: compare
        // with tiles of 2 instead.
        let other_r = if rows_r == 2 { 3 } else { 2 };
        let other = golden::mxu::matmul_bf16(&a, &b, m, k, n, other_r);
        matmul_r_mattered += golden.iter().zip(&other).filter(|(x, y)| x != y).count();
    }
    println!(
        "results another W or R changes: softmax {softmax_w_mattered}, \
         layernorm {layernorm_w_mattered}, matmul {matmul_r_mattered}"
    );
    assert!(softmax_w_mattered > 0, "W never changed a softmax");
    assert!(layernorm_w_mattered > 0, "W never changed a layer norm");
    assert!(matmul_r_mattered > 0, "R never changed a matmul");
}

/// The trained character model of `models/char-gpt`: golden and numpy
/// generate the same text from "The " (token ids from its `vocab.json`),
/// the whole context at R = 8, W = 8 and a few tokens at R = 16, W = 1.
#[test]
fn golden_and_numpy_agree_on_the_trained_model() {
    let dir = workspace_root().join("models/char-gpt");
    let model = compiler::gpt::load_gpt(&dir).unwrap_or_else(|e| panic!("{e}"));
    let vocab = std::fs::read_to_string(dir.join("vocab.json")).unwrap();
    let chars: serde_json::Value = serde_json::from_str(&vocab).unwrap();
    let chars: Vec<char> = chars["chars"]
        .as_array()
        .expect("vocab.json lists its characters")
        .iter()
        .map(|c| c.as_str().unwrap().chars().next().unwrap())
        .collect();
    assert_eq!(chars.len(), model.dims.vocab());
    let prompt: Vec<u32> = "The "
        .chars()
        .map(|c| chars.iter().position(|&v| v == c).unwrap() as u32)
        .collect();
    let context = model.dims.context();
    for (steps, rows_r, w) in [(context - prompt.len() + 1, 8, 8), (6, 16, 1)] {
        let (tokens, _) = both_agree(&model, &prompt, steps, rows_r, w);
        let text: String = tokens.iter().map(|&t| chars[t as usize]).collect();
        println!("R {rows_r} W {w}: The {text}");
    }
}

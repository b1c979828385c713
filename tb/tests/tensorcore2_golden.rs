//! The TensorCore v2 compilers run on the golden TensorCore v2
//! (`golden::tensorcore2`): the transformer's (`compiler::tensorcore2`)
//! against the contract's transformer (`golden::gpt::generate`), the same
//! tokens and the same logits bit for bit at the same R and W, on random
//! models, the trained model, directed NaNs, infinities and zeros, every
//! array and vector width, and the compile errors; the quantized MLP's
//! (`compiler::tensorcore2_mlp`) against TensorCore v1's golden run of the
//! same model (`sim mlp`'s path), bit for bit.

use compiler::tensorcore2::compile_gpt;
use config::gpt::GptModel;
use config::TensorCore2Config;
use golden::tensorcore2_cycle::cycle_model;
use rand::Rng;
use tb::gpt::{dims, random_model};
use tb::tensorcore2::{generate_on_golden, run_mlp_on_golden};
use tb::tools::workspace_root;

/// Compiles `model` for `cfg`, runs the generation on the golden core and
/// asserts it equals `golden::gpt::generate`'s at the core's R and W; and
/// that the hardware's timing contract runs the setup and the first and
/// last steps to their end (`golden::tensorcore2_cycle`: no `RWV` or tile
/// that waits forever).
fn check(model: &GptModel, cfg: &TensorCore2Config, prompt: &[u32], steps: usize) -> Vec<u32> {
    let (r, w) = (cfg.rows() as usize, cfg.elems() as usize);
    let what = format!(
        "{} R {r} W {w} ({}x{}) prompt {prompt:?} steps {steps}",
        model.dims,
        cfg.lanes(),
        cfg.sublanes()
    );
    let expected = golden::gpt::generate(model, prompt, steps, r, w).unwrap();
    let program = compile_gpt(model, cfg).unwrap_or_else(|e| panic!("{what}: {e}"));
    let ((tokens, logits), _, _) =
        generate_on_golden(&program, prompt, steps).unwrap_or_else(|e| panic!("{what}: {e}"));
    for (s, (got, want)) in logits.iter().zip(&expected.1).enumerate() {
        assert_eq!(got.len(), want.len(), "{what}: step {s}: logit counts");
        if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
            panic!(
                "{what}: step {s}, logit {i}: TensorCore v2 {:08x}, contract {:08x}",
                got[i], want[i]
            );
        }
    }
    assert_eq!(tokens, expected.0, "{what}: tokens");
    let last = prompt.len() + steps - 2;
    let fed = |pos: usize| {
        if pos < prompt.len() {
            prompt[pos]
        } else {
            tokens[pos - prompt.len()]
        }
    };
    for (name, instrs) in [
        ("setup".to_string(), program.setup().to_vec()),
        ("step 0".to_string(), program.step(fed(0), 0)),
        (format!("step {last}"), program.step(fed(last), last)),
    ] {
        cycle_model(cfg, &instrs).unwrap_or_else(|e| panic!("{what}: {name}: {e}"));
    }
    tokens
}

fn cfg(rows: u32, lanes: u32, sublanes: u32) -> TensorCore2Config {
    TensorCore2Config::new(rows, lanes, sublanes).unwrap()
}

#[test]
fn random_models_match_the_contract() {
    let mut rng = tb::seed::rng_for("random_models_match_the_contract");
    // (R, lanes, sublanes, dims, prompt length): R from 1 to 16 and W from 1
    // to 128; d_model, d_ff and the heads' width multiples of R and W and
    // not; one and several heads and layers; contexts below and above C.
    let cases = [
        (1, 1, 1, dims(11, 8, 2, 5, 2, 6), 1),
        (2, 2, 1, dims(13, 6, 3, 9, 2, 10), 2),
        (3, 4, 1, dims(16, 12, 3, 7, 2, 8), 3),
        (5, 4, 2, dims(9, 6, 2, 9, 2, 10), 1),
        (8, 8, 1, dims(20, 12, 4, 11, 1, 12), 4),
        (16, 16, 8, dims(9, 6, 2, 9, 2, 10), 2),
        (16, 1, 1, dims(20, 16, 4, 11, 1, 12), 5),
        (3, 2, 1, dims(11, 10, 5, 7, 1, 9), 2),
        (8, 4, 4, dims(17, 20, 4, 13, 2, 20), 3),
        (2, 64, 2, dims(7, 5, 1, 3, 1, 7), 1),
        (5, 1, 1, dims(12, 15, 3, 16, 1, 11), 2),
        (1, 8, 1, dims(6, 4, 4, 4, 2, 5), 1),
    ];
    for round in 0..tb::seed::soak_rounds(1) {
        for (i, &(r, lanes, sublanes, dims, prompt_len)) in cases.iter().enumerate() {
            let model = random_model(&mut rng, dims, (i + round) % 2 == 1);
            let prompt: Vec<u32> = (0..prompt_len)
                .map(|_| rng.gen_range(0..dims.vocab() as u32))
                .collect();
            let steps = rng.gen_range(2..=dims.context() - prompt_len + 1);
            let tokens = check(&model, &cfg(r, lanes, sublanes), &prompt, steps);
            println!("{dims} R {r} {lanes}x{sublanes}: {prompt:?} -> {tokens:?}");
        }
    }
}

#[test]
fn every_array_from_1_to_16_and_every_vector_up_to_128_elements() {
    let mut rng = tb::seed::rng_for("every_array_from_1_to_16_and_every_vector_up_to_128_elements");
    let model = random_model(&mut rng, dims(7, 6, 2, 5, 1, 6), true);
    for r in 1..=16 {
        for w_log in 0..=7u32 {
            // One sublane for odd R, at most 8 lanes for even R.
            let w = 1u32 << w_log;
            let lanes = if r % 2 == 1 { w } else { w.min(8) };
            let sublanes = w / lanes;
            check(&model, &cfg(r, lanes, sublanes), &[r % 7, 3], 3);
        }
    }
}

#[test]
fn a_prompt_as_long_as_the_context() {
    let mut rng = tb::seed::rng_for("a_prompt_as_long_as_the_context");
    for (r, lanes, sublanes, dims) in [
        (3, 2, 1, dims(10, 6, 2, 5, 1, 13)),
        (8, 8, 1, dims(9, 12, 3, 10, 2, 17)),
        (16, 16, 8, dims(8, 10, 2, 6, 1, 20)),
    ] {
        let model = random_model(&mut rng, dims, true);
        let prompt: Vec<u32> = (0..dims.context())
            .map(|_| rng.gen_range(0..dims.vocab() as u32))
            .collect();
        check(&model, &cfg(r, lanes, sublanes), &prompt, 1);
    }
}

#[test]
fn two_accumulator_rows_are_enough() {
    let mut rng = tb::seed::rng_for("two_accumulator_rows_are_enough");
    // Every matmul, the scores and the logits in groups of two n-tiles.
    let model = random_model(&mut rng, dims(23, 12, 2, 17, 2, 11), false);
    for (r, lanes) in [(2, 4), (3, 1)] {
        let small = cfg(r, lanes, 1).with_memories(2048, 2, 16384).unwrap();
        check(&model, &small, &[3, 1, 4], 8);
    }
}

/// The characters of the model folder's `vocab.json`, by token id.
fn vocabulary(dir: &std::path::Path) -> Vec<String> {
    let vocab: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("vocab.json")).unwrap()).unwrap();
    vocab["chars"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_trained_model_matches_the_contract() {
    let dir = workspace_root().join("models/char-gpt");
    let model = compiler::gpt::load_gpt(&dir).unwrap();
    let chars = vocabulary(&dir);
    let prompt: Vec<u32> = "The "
        .chars()
        .map(|ch| chars.iter().position(|c| *c == ch.to_string()).unwrap() as u32)
        .collect();
    // The whole context: 4 prompt tokens and 61 generated (the last chosen,
    // not fed).
    for (r, lanes, sublanes) in [(8, 8, 1), (16, 16, 8)] {
        let tokens = check(&model, &cfg(r, lanes, sublanes), &prompt, 61);
        let text: String = tokens.iter().map(|&t| chars[t as usize].as_str()).collect();
        println!("R {r} {lanes}x{sublanes}: {text:?}");
        if r == 8 {
            // docs/tensorcore2.md's sample, from golden and numpy alike.
            assert_eq!(
                text,
                "same of the same of the same of the same of the same of the s"
            );
        }
    }
}

#[test]
fn a_vocabulary_beyond_an_instruction_count() {
    let mut rng = tb::seed::rng_for("a_vocabulary_beyond_an_instruction_count");
    // 70,000 logits: HOUT and the last RW (its 70,000 Wout rows) in two.
    let model = random_model(&mut rng, dims(70_000, 2, 1, 3, 1, 3), false);
    let big = cfg(16, 16, 8).with_memories(4096, 256, 1 << 17).unwrap();
    check(&model, &big, &[69_999, 5], 2);
}

/// The directed cases' machines: R and W with and
/// without padding lanes and padded heads.
const DIRECTED_MACHINES: [(u32, u32, u32); 5] =
    [(1, 1, 1), (3, 2, 1), (5, 4, 1), (8, 8, 1), (16, 16, 8)];

#[test]
fn equal_negative_scores_take_the_maximum_over_their_positions_only() {
    let mut rng =
        tb::seed::rng_for("equal_negative_scores_take_the_maximum_over_their_positions_only");
    // One token repeated with no position embedding: every position has the
    // same x, and with Wk = Wq each score is -2^20 |bf(q)|^2, all equal and
    // far below zero. The padding lanes of the scores' last word must not
    // count in the maximum: were they zeros (or other scores' junk), exp
    // would give 0 for every score, and p would be NaN instead of 1 / n.
    let mut model = random_model(&mut rng, dims(9, 6, 2, 7, 2, 12), false);
    model.pos_emb.fill(0);
    model.scale = (-1048576.0f32).to_bits();
    for layer in &mut model.layers {
        layer.wk = layer.wq.clone();
    }
    for (r, lanes, sublanes) in DIRECTED_MACHINES {
        for len in [1, 3, 5, 9] {
            check(&model, &cfg(r, lanes, sublanes), &vec![4; len], 2);
        }
    }
}

#[test]
fn nans_infinities_and_zeros_in_the_scores_and_layer_norms() {
    let mut rng = tb::seed::rng_for("nans_infinities_and_zeros_in_the_scores_and_layer_norms");
    let base = random_model(&mut rng, dims(10, 6, 2, 5, 2, 8), false);
    let tweak = |f: &dyn Fn(&mut GptModel)| {
        let mut m = base.clone();
        f(&mut m);
        m
    };
    let cases: Vec<(&str, GptModel)> = vec![
        // Scores of +-inf and NaN (a zero dot product).
        ("scale +inf", tweak(&|m| m.scale = 0x7F80_0000)),
        ("scale NaN", tweak(&|m| m.scale = 0x7FC0_0001)),
        // Scores of +-0 (a subnormal scale is a zero).
        ("scale subnormal", tweak(&|m| m.scale = 0x8000_0001)),
        ("scale -0", tweak(&|m| m.scale = 0x8000_0000)),
        // Huge scores: exp underflows to zero for all but the maximum.
        ("scale huge", tweak(&|m| m.scale = 0x7E00_0000)),
        // An infinite weight in Wq: some heads' scores infinite or NaN,
        // the others finite.
        (
            "Wq with +inf",
            tweak(&|m| {
                m.layers[0].wq[3] = 0x7F80;
                m.layers[1].wq[7] = 0xFF80;
            }),
        ),
        // A row of zeros with eps = 0: variance 0, rsqrt +inf, 0 x inf.
        (
            "zero row, eps 0",
            tweak(&|m| {
                m.eps = 0;
                m.tok_emb[..6].fill(0);
                m.pos_emb.fill(0);
            }),
        ),
        // Deviations whose squares underflow: variance 0 with eps 0, so
        // rsqrt gives +inf and the layer norm's outputs are +-inf, not NaN.
        (
            "tiny row, eps 0",
            tweak(&|m| {
                m.eps = 0;
                m.pos_emb.fill(0);
                for (i, v) in m.tok_emb.iter_mut().enumerate() {
                    *v = (1e-30f32 * (1.0 + (i % 7) as f32)).to_bits();
                }
            }),
        ),
        // Gains so large that some layer-norm outputs overflow to +-inf:
        // infinite activations into q, k, v and the MLP.
        (
            "huge gains",
            tweak(&|m| {
                m.layers[0].ln1_g[1] = 0x7F7F_FFFF;
                m.layers[1].ln2_g[4] = 0xFF7F_FFFF;
            }),
        ),
        // An infinite embedding: the mean and every deviation inf or NaN.
        ("tok_emb +inf", tweak(&|m| m.tok_emb[6 + 2] = 0x7F80_0000)),
        // Logits of +-inf and NaN from Wout's columns, ties among them.
        (
            "Wout with infinities",
            tweak(&|m| {
                for (k, col, value) in [
                    (0, 1, 0x7F80),
                    (2, 4, 0x7F80),
                    (1, 6, 0xFF80),
                    (3, 6, 0x7F80),
                ] {
                    m.wout[k * 10 + col] = value;
                }
            }),
        ),
        // Subnormal and negative-zero gains and biases everywhere.
        (
            "subnormal gains",
            tweak(&|m| {
                m.lnf_g.fill(0x8000_0001);
                m.lnf_b.fill(0x8000_0000);
                m.layers[1].ln2_g.fill(0x0000_0001);
            }),
        ),
    ];
    for (what, model) in &cases {
        for (r, lanes, sublanes) in DIRECTED_MACHINES {
            let tokens = check(model, &cfg(r, lanes, sublanes), &[0, 1, 2], 4);
            println!("{what}, R {r} {lanes}x{sublanes}: {tokens:?}");
        }
    }
}

#[test]
fn an_infinite_mlp_input_that_relu_zeroes() {
    let mut rng = tb::seed::rng_for("an_infinite_mlp_input_that_relu_zeroes");
    // Dimension 2 of x is far above the others, and its MLP gain is -max:
    // the second layer norm gives -inf there, every W1 column (row 2
    // positive) sums to -inf and ReLU makes u zero; the MLP adds just b2.
    // The W1 product's padding columns are -inf x 0 = NaN: they must not
    // reach W2 through u's padding.
    let mut model = random_model(&mut rng, dims(8, 5, 1, 7, 1, 6), false);
    for row in model.tok_emb.chunks_mut(5) {
        row[2] = 100.0f32.to_bits();
    }
    for row in model.pos_emb.chunks_mut(5) {
        row[2] = 0;
    }
    model.layers[0].ln2_g[2] = 0xFF7F_FFFF;
    for c in 0..7 {
        model.layers[0].w1[2 * 7 + c] = 0x3F80;
    }
    for (r, lanes, sublanes) in DIRECTED_MACHINES {
        let tokens = check(&model, &cfg(r, lanes, sublanes), &[1, 2], 4);
        println!("R {r} {lanes}x{sublanes}: {tokens:?}");
    }
}

/// The compile error of `model` on `cfg`, checked to be one line.
fn compile_error(model: &GptModel, cfg: &TensorCore2Config) -> String {
    let e = compile_gpt(model, cfg).unwrap_err().to_string();
    assert!(!e.contains('\n'), "{e}");
    e
}

#[test]
fn a_model_too_big_for_a_memory_is_refused_naming_the_part_and_the_memory() {
    let mut rng = tb::seed::rng_for("a_model_too_big_for_a_memory_is_refused");
    // At R = 8, W = 8: 56 weight rows per layer and 40 for Wout; about
    // 250 elements of working buffers, 1592 per layer (the caches).
    let model = random_model(&mut rng, dims(40, 8, 2, 8, 2, 64), false);
    let base = cfg(8, 8, 1);
    for (words, wanted) in [
        (16, "embeddings do not fit the unified buffer"),
        (64, "layer 0 does not fit the unified buffer"),
        (256, "layer 1 does not fit the unified buffer"),
    ] {
        let small = base.with_memories(words, 256, 16384).unwrap();
        let e = compile_error(&model, &small);
        println!("{e}");
        assert!(e.starts_with(wanted) && e.contains(" elements"), "{e}");
    }
    for (rows, wanted) in [
        (32, "layer 0 does not fit the weight memory"),
        (64, "layer 1 does not fit the weight memory"),
        (128, "output does not fit the weight memory"),
    ] {
        let small = base.with_memories(4096, 256, rows).unwrap();
        let e = compile_error(&model, &small);
        println!("{e}");
        assert!(e.starts_with(wanted), "{e}");
    }
    let four = TensorCore2Config::from_toml("rows = 8\nvregs = 4").unwrap();
    let e = compile_error(&model, &four);
    assert!(
        e.contains("VPU registers") && e.contains("need 8, the VPU has 4"),
        "{e}"
    );
    // What fits compiles, and its images fill what it says.
    let p = compile_gpt(&model, &base).unwrap();
    assert!(p.vmem_used() <= base.vmem_elems() as usize);
    assert!(p.weight_image().len() / 8 <= base.weight_rows() as usize);
}

#[test]
fn quantized_mlps_give_tensorcore_v1s_logits() {
    let mut rng = tb::seed::rng_for("quantized_mlps_give_tensorcore_v1s_logits");
    for round in 0..tb::seed::soak_rounds(30) {
        let (mlp, sizes) = tb::tensorcore::random_mlp(&mut rng, 4, 40);
        let size = [1u32, 2, 3, 4, 5, 8, 16][rng.gen_range(0..7)];
        let batch = rng.gen_range(1..=40);
        let x: Vec<i8> = (0..batch * sizes[0]).map(|_| rng.gen()).collect();
        let v1 =
            config::TensorCoreConfig::with(size, size, 64, 1 << 12, 1 << 16, 1 << 10, 4).unwrap();
        let (expected, _, _) = sim::drivers::tensorcore::run_golden(&v1, &mlp, &x, batch).unwrap();
        // Small accumulators and buffers cut the batch into blocks.
        let w = 1u32 << rng.gen_range(0..=7);
        let (lanes, sublanes) = (w.min(16), w / w.min(16));
        let acc_rows = 1u32 << rng.gen_range(1..=8);
        let words = (1u32 << rng.gen_range(12..=15)) / w;
        let v2 = cfg(size, lanes, sublanes)
            .with_memories(words, acc_rows, 1 << 16)
            .unwrap();
        let what = format!("round {round}: {sizes:?} batch {batch} on {v2}");
        let (logits, _, program) =
            run_mlp_on_golden(&v2, &mlp, &x, batch).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(
            logits, expected,
            "{what} (blocks of {})",
            program.block_rows
        );
        cycle_model(&v2, &program.instrs).unwrap_or_else(|e| panic!("{what}: {e}"));
    }
}

#[test]
fn quantized_mlp_edge_cases_minus_128_wraparound_saturation_and_relu() {
    use compiler::{Layer, Mlp, Requant};
    let v1 = config::TensorCoreConfig::with(4, 4, 8, 1 << 14, 1 << 16, 1 << 10, 2).unwrap();
    let same = |mlp: &Mlp, x: &[i8], batch: usize, what: &str| {
        let (expected, _, _) = sim::drivers::tensorcore::run_golden(&v1, mlp, x, batch).unwrap();
        for (r, lanes, sublanes) in [(4, 4, 1), (1, 1, 1), (16, 16, 8)] {
            let (logits, _, _) = run_mlp_on_golden(&cfg(r, lanes, sublanes), mlp, x, batch)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(logits, expected, "{what}, R {r} {lanes}x{sublanes}");
        }
        expected
    };
    // -128 x -128 over 4096 inputs is 2^26 per output; the biases wrap.
    let k = 4096;
    let wrap = Mlp::new(vec![Layer {
        inputs: k,
        outputs: 3,
        w: vec![-128; k * 3],
        b: vec![i32::MAX - (1 << 26) + 6, 0, i32::MIN],
        rq: None,
    }])
    .unwrap();
    let logits = same(&wrap, &vec![-128i8; 2 * k], 2, "wraparound");
    assert_eq!(logits[0], i32::MIN + 5);
    // Saturation both ways and the ReLU floor at the zero point.
    for zp in [-128i8, 0, 100] {
        let mlp = Mlp::new(vec![
            Layer {
                inputs: 2,
                outputs: 3,
                w: vec![127, -128, 1, 127, -128, -1],
                b: vec![1 << 20, -(1 << 20), 0],
                rq: Some(Requant {
                    mult: i32::MAX,
                    shift: 0,
                    zp,
                }),
            },
            Layer {
                inputs: 3,
                outputs: 2,
                w: vec![1, -1, 1, -1, 1, -1],
                b: vec![0, 7],
                rq: None,
            },
        ])
        .unwrap();
        let x = [127i8, 127, -128, -128, 0, 0];
        same(&mlp, &x, 3, &format!("saturation, zp {zp}"));
    }
}

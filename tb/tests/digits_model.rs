//! The quantized digits MLP in `tb/data/digits` (written by
//! `scripts/digits/train.sh`): its integer semantics computed with the golden
//! numerics give the numpy reference's logits bit for bit, and the int8
//! accuracy its metrics state; and the same files through the compiler and
//! the golden TensorCore (program results and cycle model) give those logits
//! bit for bit on several array sizes.

use std::path::{Path, PathBuf};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/digits")
}

/// A .npy file's shape and elements (C order), as i64.
fn load(name: &str) -> (Vec<usize>, Vec<i64>) {
    let path = data_dir().join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
    let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
    let descr = match npy.dtype() {
        npyz::DType::Plain(ts) => ts.to_string(),
        other => other.descr(),
    };
    let data: Vec<i64> = match descr.as_str() {
        "|i1" => npy
            .into_vec::<i8>()
            .unwrap()
            .into_iter()
            .map(i64::from)
            .collect(),
        "<i4" => npy
            .into_vec::<i32>()
            .unwrap()
            .into_iter()
            .map(i64::from)
            .collect(),
        other => panic!("{name}: unexpected dtype {other}"),
    };
    (shape, data)
}

#[test]
fn golden_numerics_give_the_numpy_reference_logits() {
    let (xs, x) = load("x_test.npy");
    let (n, mut width) = (xs[0], xs[1]);
    let mut h: Vec<i64> = x;
    let layers = (1..)
        .take_while(|i| data_dir().join(format!("w{i}.npy")).exists())
        .count();
    assert!(layers >= 2, "the model needs a hidden layer");
    for i in 1..=layers {
        let (ws, w) = load(&format!("w{i}.npy"));
        let (_, b) = load(&format!("b{i}.npy"));
        assert_eq!(ws[0], width, "w{i} rows");
        let out = ws[1];
        let rq = (i < layers).then(|| load(&format!("rq{i}.npy")).1);
        let mut next = vec![0i64; n * out];
        for r in 0..n {
            for c in 0..out {
                let dot: i64 = (0..width).map(|k| h[r * width + k] * w[k * out + c]).sum();
                // acc = wrap32(h @ w + b)
                let acc = (dot + b[c]) as i32;
                next[r * out + c] = match &rq {
                    // A hidden layer: h = max(requant(acc, rq), zero point).
                    Some(rq) => {
                        let (mult, shift, zp) = (rq[0] as i32, rq[1] as u32, rq[2] as i32);
                        i64::from(golden::numerics::requant_int8(acc, mult, shift, zp)).max(rq[2])
                    }
                    None => i64::from(acc),
                };
            }
        }
        h = next;
        width = out;
    }
    let (ls, logits) = load("logits_numpy.npy");
    assert_eq!(ls, vec![n, width]);
    assert_eq!(h, logits, "golden logits differ from the numpy reference");
    let (_, labels) = load("y_test.npy");
    let correct = (0..n)
        .filter(|&r| {
            let row = &h[r * width..(r + 1) * width];
            let best = (0..width)
                .max_by_key(|&c| (row[c], std::cmp::Reverse(c)))
                .unwrap();
            best as i64 == labels[r]
        })
        .count();
    let metrics: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data_dir().join("metrics.json")).unwrap())
            .unwrap();
    let stated = metrics["int8_accuracy"].as_f64().unwrap();
    assert_eq!(correct as f64 / n as f64, stated);
}

/// The predicted class of each row: the first largest logit.
fn accuracy(logits: &[i64], width: usize) -> f64 {
    let (_, labels) = load("y_test.npy");
    let n = labels.len();
    let correct = (0..n)
        .filter(|&r| {
            let row = &logits[r * width..(r + 1) * width];
            let best = (0..width)
                .max_by_key(|&c| (row[c], std::cmp::Reverse(c)))
                .unwrap();
            best as i64 == labels[r]
        })
        .count();
    correct as f64 / n as f64
}

#[test]
fn the_compiled_model_on_the_golden_tensorcore_gives_the_numpy_logits() {
    let mlp = sim::drivers::tensorcore::load_model(&data_dir()).unwrap();
    let (xs, x) = load("x_test.npy");
    let x: Vec<i8> = x.into_iter().map(|v| v as i8).collect();
    let (ls, expect) = load("logits_numpy.npy");
    let metrics: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data_dir().join("metrics.json")).unwrap())
            .unwrap();
    // Square arrays from 1x1 to 16x16; small accumulators and buffers force
    // several passes and batch blocks.
    for (size, acc_rows, ub_rows) in [
        (8, 512, 32768),
        (16, 512, 32768),
        (4, 64, 1024),
        (3, 32, 256),
        (1, 16, 1024),
    ] {
        let d = config::TensorCoreConfig::DEFAULT;
        let cfg = config::TensorCoreConfig::with(
            size,
            size,
            acc_rows,
            ub_rows,
            d.weight_rows(),
            d.bias_rows(),
            d.weight_queue(),
        )
        .unwrap();
        let (logits, stats, program) =
            sim::drivers::tensorcore::run_golden(&cfg, &mlp, &x, xs[0]).unwrap();
        println!(
            "{size}x{size}, acc {acc_rows}, ub {ub_rows}: blocks of {} rows, {} cycles, mxu busy {:.3}",
            program.block_rows,
            stats.cycles,
            stats.mxu_busy_fraction()
        );
        let logits: Vec<i64> = logits.into_iter().map(i64::from).collect();
        assert_eq!(logits.len(), ls[0] * ls[1]);
        assert_eq!(
            logits, expect,
            "{size}x{size}: TensorCore logits differ from numpy's"
        );
        assert_eq!(
            accuracy(&logits, ls[1]),
            metrics["int8_accuracy"].as_f64().unwrap()
        );
        let sum: u64 = stats.breakdown().iter().map(|(_, v)| v).sum();
        assert_eq!(sum, stats.cycles);
    }
}

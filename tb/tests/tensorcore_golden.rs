//! The compiler and the golden TensorCore against a direct evaluation of the
//! MLP semantics (acc = wrap32(h @ w + b); hidden layers h = max(requant(acc),
//! zp)): random shapes, batches and configurations, and directed edge cases
//! (-128 everywhere, int32 wraparound, requantization saturation, ReLU floors).
//! Also the cycle model's bookkeeping: the counters sum to the cycles, and
//! the MXU is busy exactly one cycle per streamed row.

use compiler::{Layer, Mlp, Requant};
use config::tensorcore_isa::Instr;
use config::TensorCoreConfig;
use rand::Rng;
use tb::seed::{rng_for, soak_rounds};
use tb::tensorcore::random_layer;

/// The semantics, evaluated directly with the golden numerics.
fn reference(mlp: &Mlp, x: &[i8], batch: usize) -> Vec<i32> {
    let mut h: Vec<i32> = x.iter().map(|&v| i32::from(v)).collect();
    for l in mlp.layers() {
        let mut next = vec![0i32; batch * l.outputs];
        for m in 0..batch {
            for n in 0..l.outputs {
                let mut acc = l.b[n];
                for k in 0..l.inputs {
                    acc = acc.wrapping_add(
                        h[m * l.inputs + k].wrapping_mul(i32::from(l.w[k * l.outputs + n])),
                    );
                }
                next[m * l.outputs + n] = match l.rq {
                    Some(rq) => {
                        let q = golden::requant_int8(acc, rq.mult, rq.shift, i32::from(rq.zp));
                        i32::from(q.max(rq.zp))
                    }
                    None => acc,
                };
            }
        }
        h = next;
    }
    h
}

fn check(cfg: &TensorCoreConfig, mlp: &Mlp, x: &[i8], batch: usize, what: &str) {
    let (logits, stats, program) = sim::drivers::tensorcore::run_golden(cfg, mlp, x, batch)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(logits, reference(mlp, x, batch), "{what}: logits differ");
    let sum: u64 = stats.breakdown().iter().map(|(_, v)| v).sum();
    assert_eq!(
        sum, stats.cycles,
        "{what}: counters do not sum to the cycles"
    );
    let rows: u64 = program
        .instrs
        .iter()
        .map(|i| match i {
            Instr::Matmul { rows, .. } => u64::from(*rows),
            _ => 0,
        })
        .sum();
    assert_eq!(stats.mxu_busy, rows, "{what}: busy cycles != rows streamed");
    assert_eq!(stats.instructions, program.instrs.len() as u64, "{what}");
}

#[test]
fn random_mlps_match_the_direct_evaluation() {
    let mut rng = rng_for("random_mlps_match_the_direct_evaluation");
    for round in 0..soak_rounds(40) {
        let (mlp, sizes) = tb::tensorcore::random_mlp(&mut rng, 4, 40);
        let size = [1u32, 2, 3, 4, 5, 8][rng.gen_range(0..6)];
        let acc_rows = 1u32 << rng.gen_range(1..=7);
        let ub_rows = 1u32 << rng.gen_range(6..=12);
        let weight_queue = rng.gen_range(2..=4);
        let cfg = TensorCoreConfig::with(
            size,
            size,
            acc_rows,
            ub_rows,
            1 << 16,
            1 << 10,
            weight_queue,
        )
        .unwrap();
        let batch = rng.gen_range(1..=50);
        let x: Vec<i8> = (0..batch * sizes[0]).map(|_| rng.gen()).collect();
        let what = format!("round {round}: {sizes:?} batch {batch} on {cfg}");
        match compiler::compile(&mlp, batch, &cfg) {
            // Small buffers may not hold one batch row of a wide model.
            Err(e) if e.0.contains("unified buffer") => continue,
            Err(e) => panic!("{what}: {e}"),
            Ok(_) => check(&cfg, &mlp, &x, batch, &what),
        }
    }
}

#[test]
fn edge_cases_minus_128_wraparound_saturation_and_relu() {
    let cfg = TensorCoreConfig::with(4, 4, 8, 1 << 14, 1 << 16, 1 << 10, 2).unwrap();
    // -128 x -128 summed over 4096 inputs is 2^26 per output; with a bias of
    // 2^31 - 2^26 + 5 the sum wraps to -2^31 + 5.
    let k = 4096;
    let wrap = Mlp::new(vec![Layer {
        inputs: k,
        outputs: 3,
        w: vec![-128; k * 3],
        b: vec![i32::MAX - (1 << 26) + 6, 0, i32::MIN],
        rq: None,
    }])
    .unwrap();
    let x = vec![-128i8; 2 * k];
    check(&cfg, &wrap, &x, 2, "wraparound");
    let (logits, _, _) = sim::drivers::tensorcore::run_golden(&cfg, &wrap, &x, 2).unwrap();
    assert_eq!(logits[0], i32::MIN + 5);
    assert_eq!(logits[2], (1 << 26) + i32::MIN);

    // Saturation both ways and the ReLU floor at the zero point: the hidden
    // layer's outputs are 127 (saturated), zp (negative results floored) and
    // -128 where zp = -128 lets a saturated negative through.
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
        let x = vec![127i8, 127, -128, -128, 0, 0];
        check(&cfg, &mlp, &x, 3, &format!("saturation, zp {zp}"));
    }
}

#[test]
fn weight_loads_overlap_compute_on_a_large_batch() {
    // 32-32-10 at batch 256 on 4x4: each tile streams 256 rows, far more than
    // the 2R cycles a tile takes to load, so no cycle waits for weights.
    let mut rng = rng_for("weight_loads_overlap_compute_on_a_large_batch");
    let mlp = Mlp::new(vec![
        random_layer(&mut rng, 32, 32, true),
        random_layer(&mut rng, 32, 10, false),
    ])
    .unwrap();
    let cfg = TensorCoreConfig::with(4, 4, 512, 1 << 12, 1 << 12, 64, 4).unwrap();
    let x: Vec<i8> = (0..256 * 32).map(|_| rng.gen()).collect();
    check(&cfg, &mlp, &x, 256, "32-32-10");
    let (_, stats, _) = sim::drivers::tensorcore::run_golden(&cfg, &mlp, &x, 256).unwrap();
    println!("{stats:?}");
    assert_eq!(stats.stall_weights, 0, "{stats:?}");
    // The activation unit reads its 256 x (8 + 3) rows while matmuls run;
    // the sequencer waits for it only where the next layer needs its
    // output (stall_ub) and at the end (sync): one pass's rows each.
    assert_eq!(stats.act_rows, 256 * (8 + 3), "{stats:?}");
    assert_eq!(stats.stall_vpu, 0, "{stats:?}");
    assert!(stats.stall_ub + stats.sync < 2 * (256 + 32), "{stats:?}");
    assert_eq!(stats.host, 256 * 8, "{stats:?}");
}

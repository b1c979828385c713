//! TensorCore benchmark: where the cycles of a quantized MLP go, in the
//! manner of the TPU v1 paper's table. Printed as Markdown tables on stdout;
//! nothing here passes or fails.
//!
//! Every row is run on the Verilated RTL (`sim::drivers::tensorcore`) and
//! on the golden model: the counters shown are the RTL's, and the benchmark
//! stops if they differ from the golden cycle model's or if the outputs
//! differ. The default memories (`TensorCoreConfig::new`) are used.
//!
//! 1. `digits`: the digits MLP of `tb/data/digits` (64-32-32-10) on all 450
//!    test images, on 4x4, 8x8 and 16x16 cores; the logits are checked
//!    against the numpy reference.
//! 2. `mlp784`: a 784-512-512-10 MLP with random int8 weights at batch 256 on
//!    a 16x16 core (the issue's target: at least 0.85 MXU busy).
//!
//! Every row at depth 0 and at the depth of the `fmax` preset.
//!
//! Each row: cycles, MXU busy fraction, utilization (useful MACs over
//! R x C x cycles, so padding of partial tiles counts against it), every
//! sequencer counter as a share of the cycles (they sum to 100 %), and the
//! activation unit's reading cycles, which run beside them. Then images per
//! second of simulated time at the TensorCore's own Fmax on the ECP5-85F
//! from the FPGA report (its 4x4 preset: 26.6 MHz; the larger cores have no
//! report row), and, as an upper bound, at the bare int8 MXU's Fmax (47.5 MHz
//! for 16x16, 63.3 for 8x8, 72.4 for 4x4): the TensorCore's sequencer and
//! activation unit around the array set the lower clock.
//!
//! ```text
//! cargo bench -p tb --bench tensorcore
//! ```

use compiler::{Layer, Mlp, Requant};
use config::TensorCoreConfig;
use golden::tensorcore::Stats;
use rand::{Rng, SeedableRng};
use std::path::Path;
use std::time::Instant;

/// Fmax of the bare int8 MXU on the ECP5-85F (docs/fpga.md, the FPGA report), MHz.
fn mxu_fmax_mhz(size: u32) -> Option<f64> {
    match size {
        4 => Some(72.4),
        8 => Some(63.3),
        16 => Some(47.5),
        _ => None,
    }
}

/// Fmax of the TensorCore on the ECP5-85F (FPGA report, the 4x4 preset
/// with 64 accumulator rows and 256-row memories, at depth 0), MHz. The
/// deeper cores have no measured row here.
fn tensorcore_fmax_mhz(cfg: &TensorCoreConfig) -> Option<f64> {
    match (cfg.rows(), cfg.depth()) {
        (4, 0) => Some(26.6),
        _ => None,
    }
}

fn header(title: &str) {
    let columns = [
        "model",
        "core",
        "depth",
        "batch",
        "cycles",
        "MXU busy",
        "utilization",
        "weights",
        "buffer",
        "activation (VPU)",
        "host DMA",
        "issue",
        "sync",
        "instructions",
        "VPU rows (beside)",
        "images/s at TensorCore Fmax",
        "images/s at bare-MXU Fmax (upper bound)",
    ];
    println!("\n### {title}\n");
    println!("| {} |", columns.join(" | "));
    println!("|{}|", columns.map(|_| " --- ").join("|"));
}

fn row(model: &str, cfg: &TensorCoreConfig, batch: usize, macs: u64, s: &Stats) {
    let pct = |v: u64| format!("{:.2} %", 100.0 * v as f64 / s.cycles as f64);
    let util = macs as f64 / (s.cycles as f64 * f64::from(cfg.rows() * cfg.cols()));
    let per_s = |fmax: Option<f64>| {
        fmax.map(|f| format!("{:.0}", batch as f64 * f * 1e6 / s.cycles as f64))
            .unwrap_or_else(|| "-".into())
    };
    let ips_tc = per_s(tensorcore_fmax_mhz(cfg));
    let ips = per_s(mxu_fmax_mhz(cfg.rows()));
    println!(
        "| {model} | {}x{} | {} | {batch} | {} | {:.3} | {:.3} | {} | {} | {} | {} | {} | {} | {} | {} | {ips_tc} | {ips} |",
        cfg.rows(),
        cfg.cols(),
        cfg.depth(),
        s.cycles,
        s.mxu_busy_fraction(),
        util,
        pct(s.stall_weights),
        pct(s.stall_ub),
        pct(s.stall_vpu),
        pct(s.host),
        pct(s.issue),
        pct(s.sync),
        s.instructions,
        pct(s.act_rows),
    );
}

fn random_mlp(sizes: &[usize], seed: u64) -> Mlp {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let layers = sizes.len() - 1;
    Mlp::new(
        (0..layers)
            .map(|i| Layer {
                inputs: sizes[i],
                outputs: sizes[i + 1],
                w: (0..sizes[i] * sizes[i + 1]).map(|_| rng.gen()).collect(),
                b: (0..sizes[i + 1])
                    .map(|_| rng.gen_range(-1000..1000))
                    .collect(),
                rq: (i + 1 < layers).then_some(Requant {
                    mult: 1 << 30,
                    shift: 8,
                    zp: 0,
                }),
            })
            .collect(),
    )
    .expect("a valid model")
}

/// Runs `program` on the RTL and the golden model; they must agree.
fn rtl_and_golden(
    cfg: &TensorCoreConfig,
    program: &compiler::Program,
    x: &[i8],
) -> (Vec<i32>, Stats) {
    let mem = sim::drivers::tensorcore::memories(program, x);
    let words = program.words();
    let t = Instant::now();
    let (gout, gstats) = golden::tensorcore::run(cfg, &words, &mem).expect("golden runs");
    let golden_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut driver = sim::drivers::tensorcore::TensorCoreDriver::new(cfg).expect("model builds");
    let build_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let (rout, rstats) = driver.run(&words, &mem).expect("RTL runs");
    let run_s = t.elapsed().as_secs_f64();
    assert_eq!(rout, gout, "RTL output differs from golden");
    assert_eq!(rstats, gstats, "RTL counters differ from the cycle model");
    eprintln!(
        "{cfg}: golden {golden_s:.2} s, model build/load {build_s:.1} s, RTL run {run_s:.1} s ({:.0} cycles/s)",
        rstats.cycles as f64 / run_s
    );
    (rout, rstats)
}

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/digits");
    let mlp = sim::drivers::tensorcore::load_model(&dir).expect("the digits model");
    let x: matrix::Matrix<i8> = matrix::read(&dir.join("x_test.npy"), "X").expect("x_test");
    let expect: matrix::Array<i32> =
        matrix::read_array(&dir.join("logits_numpy.npy"), "logits").expect("logits");
    let fmax_depth = fmax_depth();
    header("digits MLP 64-32-32-10, all 450 test images (RTL = golden cycle model)");
    for (size, depth) in [4, 8, 16]
        .into_iter()
        .flat_map(|size| [(size, 0), (size, fmax_depth)])
    {
        let cfg = TensorCoreConfig::new(size, size)
            .and_then(|c| c.with_depth(depth))
            .expect("a valid core");
        let program = compiler::compile(&mlp, x.rows, &cfg).expect("fits");
        let (window, stats) = rtl_and_golden(&cfg, &program, &x.data);
        assert_eq!(
            program.unpack_output(&window),
            expect.data,
            "logits differ from numpy's"
        );
        row("digits", &cfg, x.rows, program.macs, &stats);
    }

    header("784-512-512-10 MLP, random int8 weights (RTL = golden cycle model)");
    let big = random_mlp(&[784, 512, 512, 10], 1);
    let batch = 256;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
    let xb: Vec<i8> = (0..batch * 784).map(|_| rng.gen()).collect();
    for depth in [0, fmax_depth] {
        let cfg = TensorCoreConfig::new(16, 16)
            .and_then(|c| c.with_depth(depth))
            .expect("a valid core");
        let program = compiler::compile(&big, batch, &cfg).expect("fits");
        let (_, stats) = rtl_and_golden(&cfg, &program, &xb);
        row("784-512-512-10", &cfg, batch, program.macs, &stats);
    }
}

/// The depth of the TensorCore's `fmax` preset.
fn fmax_depth() -> u32 {
    use hw::Block;
    use sim::drivers::{tensorcore::TensorCoreDriver, Driver};
    <TensorCoreDriver as Driver>::Block::default()
        .presets()
        .into_iter()
        .find(|p| p.name == "fmax")
        .expect("the TensorCore has an fmax preset")
        .config
        .depth()
}

//! VPU benchmarks: sustained elements per cycle against the bound the VMEM
//! ports set, Verilator build times and simulation speed, for the 8 x 1 and
//! the TPU's 128 x 8 VPU (the configurations `sim vpu` runs: 32 registers,
//! 1024 VMEM words), and the 8 x 1 again at the `fmax` preset's depth (extra
//! execute stages). Printed as Markdown tables on stdout, progress on
//! stderr; nothing here passes or fails.
//!
//! Tables:
//!
//! 1. `build`: the Verilator model of each shape, from the usual model cache
//!    (`$SYSTOLE_CACHE_DIR`, else `$CARGO_TARGET_DIR/systole-models`): a
//!    build if it is not there (timed: the cold build), else a load. Point
//!    `SYSTOLE_CACHE_DIR` at an empty folder to time cold builds.
//! 2. `throughput`: `add_f32`, `mul_i32`, `requant_i8` and `reduce_sum_f32`
//!    over 2^20 elements, run as `sim vpu` runs them
//!    (`sim::drivers::vpu_ops`), on the RTL and on the golden model: the
//!    RTL's cycles (first bundle accepted through the last store of each
//!    program, operands already in VMEM), elements per cycle, the bound of
//!    the VMEM ports (`vpu_ops::port_bound`: one vector per cycle through the
//!    load port, so W/2 for binary operations, W for unary ones and
//!    reductions) and the fraction of it reached; whether the RTL's results
//!    and cycles equal the golden model's; and the wall time.
//! 3. `sim`: simulated cycles per second: a bundle held on the instruction
//!    port with the clock looped in C++ (`Model::run_cycles_native`), and the
//!    driver as the throughput table ran it (program cycles, host transfers
//!    and all, per wall second).
//!
//! `SYSTOLE_BENCH_QUICK=1` runs 2^16 elements instead of 2^20.
//!
//! ```text
//! cargo bench -p tb --bench vpu
//! ```

use config::vpu_isa::{Bundle, Op};
use config::VpuConfig;
use sim::drivers::vpu::VpuDriver;
use sim::drivers::vpu_ops::{self, GoldenVpu, Requant};
use sim::CacheStatus;
use std::time::{Duration, Instant};

const QUICK_ENV: &str = "SYSTOLE_BENCH_QUICK";

/// The shapes measured: (lanes, sublanes, at the `fmax` preset's depth).
const SHAPES: [(u32, u32, bool); 3] = [(8, 1, false), (8, 1, true), (128, 8, false)];

/// The `fmax` preset's extra execute stages.
fn fmax_depth() -> u32 {
    use hw::Block;
    vpu::Vpu
        .presets()
        .into_iter()
        .find(|p| p.name == "fmax")
        .expect("the VPU has an fmax preset")
        .config
        .depth()
}

/// How a shape is named in the tables: `8x1`, `8x1 d5`.
fn shape_name(cfg: &VpuConfig) -> String {
    match cfg.depth() {
        0 => format!("{}x{}", cfg.lanes(), cfg.sublanes()),
        d => format!("{}x{} d{d}", cfg.lanes(), cfg.sublanes()),
    }
}

/// The operations of the throughput table.
const OPS: [Op; 4] = [Op::AddF32, Op::MulI32, Op::RequantI8, Op::ReduceSumF32];

fn header(title: &str, columns: &[&str]) {
    println!("\n### {title}\n");
    println!("| {} |", columns.join(" | "));
    println!(
        "|{}|",
        columns
            .iter()
            .map(|_| " --- ")
            .collect::<Vec<_>>()
            .join("|")
    );
}

fn row(cells: &[String]) {
    println!("| {} |", cells.join(" | "));
}

fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 1.0 {
        format!("{:.0} ms", s * 1e3)
    } else if s < 120.0 {
        format!("{s:.1} s")
    } else {
        format!("{:.1} min", s / 60.0)
    }
}

fn si(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2} M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1} k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

/// Deterministic operands: moderate fp32 values (sums that round), int32
/// values spread over the range.
fn operands(n: usize, salt: u32) -> Vec<u32> {
    (0..n as u32)
        .map(|i| {
            let h = i
                .wrapping_mul(0x9E37_79B9)
                .wrapping_add(salt)
                .rotate_left(13);
            (h & 0x807F_FFFF) | ((0x78 + h % 16) << 23)
        })
        .collect()
}

struct Measured {
    cfg: VpuConfig,
    driver: VpuDriver,
    /// Program and host cycles the throughput runs simulated, and their wall time.
    cycles: u64,
    wall: Duration,
}

fn main() {
    let quick = std::env::var(QUICK_ENV).is_ok_and(|v| !v.is_empty() && v != "0");
    let n: usize = if quick { 1 << 16 } else { 1 << 20 };
    eprintln!("bench: VPU, {n} elements per operation");

    header(
        "build: Verilator model of the VPU",
        &["shape", "top", "status", "time"],
    );
    let mut shapes: Vec<Measured> = Vec::new();
    for (lanes, sublanes, deep) in SHAPES {
        let depth = if deep { fmax_depth() } else { 0 };
        let cfg = VpuConfig::new(lanes, sublanes)
            .and_then(|c| c.with_depth(depth))
            .expect("a valid shape");
        eprintln!("bench: building or loading the {cfg} VPU...");
        let start = Instant::now();
        let mut driver = VpuDriver::new(&cfg).unwrap_or_else(|e| panic!("{cfg}: {e}"));
        let took = start.elapsed();
        let status = match driver.model_mut().cache_status() {
            CacheStatus::Built => "built (cold)",
            CacheStatus::Reused => "loaded from the cache",
        };
        row(&[
            shape_name(&cfg),
            vpu::top_name(&cfg),
            status.into(),
            secs(took),
        ]);
        shapes.push(Measured {
            cfg,
            driver,
            cycles: 0,
            wall: Duration::ZERO,
        });
    }

    header(
        &format!("throughput: {n} elements, RTL cycles from the first bundle to the last store"),
        &[
            "shape",
            "op",
            "cycles",
            "elements/cycle",
            "port bound",
            "of bound",
            "RTL = golden",
            "wall",
        ],
    );
    for m in &mut shapes {
        let cfg = m.cfg;
        for op in OPS {
            let a = operands(n, 1);
            let b = operands(n, 2);
            let requant = (op == Op::RequantI8).then_some(Requant {
                multiplier: 1_518_500_250,
                shift: 7,
                zero_point: -3,
            });
            let inputs: Vec<&[u32]> = match vpu_ops::kind(op) {
                Some(vpu_ops::Kind::Binary) => vec![&a, &b],
                _ => vec![&a],
            };
            let run = |machine: &mut dyn vpu_ops::VpuMachine| {
                if op.is_reduction() {
                    vpu_ops::reduction(machine, op, &a)
                } else {
                    vpu_ops::elementwise(machine, op, &inputs, requant)
                }
            };
            let start_cycle = m.driver.model_mut().cycle();
            let start = Instant::now();
            let rtl = run(&mut m.driver).unwrap_or_else(|e| panic!("{op} on {cfg}: {e}"));
            let wall = start.elapsed();
            m.cycles += m.driver.model_mut().cycle() - start_cycle;
            m.wall += wall;
            let golden = run(&mut GoldenVpu::new(&cfg)).expect("the golden model runs");
            let epc = n as f64 / rtl.cycles as f64;
            let bound = vpu_ops::port_bound(&cfg, op);
            let agree = rtl.output == golden.output && rtl.cycles == golden.cycles;
            row(&[
                shape_name(&cfg),
                op.name().into(),
                rtl.cycles.to_string(),
                format!("{epc:.3}"),
                format!("{bound}"),
                format!("{:.3}", epc / bound),
                if agree { "yes" } else { "NO" }.into(),
                secs(wall),
            ]);
        }
    }

    header(
        "sim: simulated cycles per wall second",
        &[
            "shape",
            "bundle held, C++ clock loop",
            "driver (throughput runs)",
        ],
    );
    for m in &mut shapes {
        let native = native_speed(&mut m.driver);
        row(&[
            shape_name(&m.cfg),
            si(native),
            si(m.cycles as f64 / m.wall.as_secs_f64()),
        ]);
    }
}

/// Cycles per second with `add_f32` bundles (load, add, store) held on the
/// instruction port and the clock looped in C++.
fn native_speed(d: &mut VpuDriver) -> f64 {
    use vpu::ports::*;
    d.reset();
    let bundle = Bundle::op(Op::AddF32, 0, &[0, 1])
        .with_load(1, 1)
        .with_store(0, 2);
    let m = d.model_mut();
    let valid = m.port(INSTR_VALID).expect("port");
    let instr = m.port(INSTR).expect("port");
    m.poke(valid, 1);
    m.poke_wide(instr, &bundle.words());
    let mut cycles = 16u64;
    loop {
        let start = Instant::now();
        m.run_cycles_native(cycles);
        let took = start.elapsed();
        if took >= Duration::from_millis(500) || cycles >= 1 << 24 {
            m.poke(valid, 0);
            m.run_cycles_native(4);
            return cycles as f64 / took.as_secs_f64();
        }
        cycles *= 4;
    }
}

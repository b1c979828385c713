//! The order-v2 all-reduce engine's RTL (`torus::allreduce_v2`) on links of
//! a fixed latency against its cycle model (`golden::torus_v2`): the same
//! results on every chip (order v2's bits, int32 wrapping sums), taken and
//! given in the same cycles.

use config::{AllreduceV2, TorusConfig};
use golden::torus::allreduce_f32_v2;
use golden::torus_v2::{run, V2Timing};
use hw::{catch_elab, emit_design, Design, Header};
use rand::Rng;
use sim::from_hw::model_spec;
use sim::Model;

/// What the RTL gave: per chip, each element's result and cycle, and each
/// lane's take cycles.
struct RtlRun {
    results: Vec<Vec<u32>>,
    result_cycles: Vec<Vec<u64>>,
    taken: Vec<[Vec<u64>; 3]>,
    alarm: bool,
}

fn run_rtl(
    cfg: &TorusConfig,
    eng: AllreduceV2,
    hop: u32,
    credit: u32,
    v: &[Vec<u32>],
    fp: bool,
) -> RtlRun {
    hw::quiet_elab_errors();
    let (design, top) = catch_elab(|| {
        let mut d = Design::new();
        let t = torus::allreduce_v2::links_top(&mut d, cfg, &eng, hop, credit);
        (d, t)
    })
    .unwrap();
    let header = Header {
        generator: "torus_v2 test".into(),
        params: cfg.params(),
    };
    let files = emit_design(&design, &top, &header);
    let mut m = Model::build(&model_spec(&files, &top), &top.name).unwrap();
    let port = |m: &Model, n: &str| m.port(n).unwrap();
    let chips = cfg.chips();
    let n = v[0].len();
    let v_valid: Vec<[_; 3]> = (0..chips)
        .map(|c| [0, 1, 2].map(|p| port(&m, &format!("c{c}_v{p}_valid_i"))))
        .collect();
    let v_data: Vec<[_; 3]> = (0..chips)
        .map(|c| [0, 1, 2].map(|p| port(&m, &format!("c{c}_v{p}_data_i"))))
        .collect();
    let v_ready: Vec<[_; 3]> = (0..chips)
        .map(|c| [0, 1, 2].map(|p| port(&m, &format!("c{c}_v{p}_ready_o"))))
        .collect();
    let r_out: Vec<[[_; 3]; 3]> = (0..chips)
        .map(|c| {
            [0, 1, 2]
                .map(|p| ["valid", "index", "data"].map(|f| port(&m, &format!("c{c}_r{p}_{f}_o"))))
        })
        .collect();
    let reset = port(&m, hw::ir::RESET);
    let fp_port = port(&m, "fp_i");
    let alarm = port(&m, "alarm_o");
    m.poke(fp_port, u64::from(fp));
    for &port in v_valid.iter().flatten() {
        m.poke(port, 0);
    }
    m.poke(reset, 1);
    m.step();
    m.poke(reset, 0);
    let mut out = RtlRun {
        results: vec![vec![0; n]; chips],
        result_cycles: vec![vec![u64::MAX; n]; chips],
        taken: vec![[Vec::new(), Vec::new(), Vec::new()]; chips],
        alarm: false,
    };
    let mut next = vec![[0usize, 1, 2]; chips];
    let mut left = chips * n;
    let mut cycle = 0u64;
    while left > 0 {
        assert!(cycle < 200 * n as u64 + 10_000, "the RTL engine stopped");
        for c in 0..chips {
            for p in 0..3 {
                let e = next[c][p];
                m.poke(v_valid[c][p], u64::from(e < n));
                if e < n {
                    m.poke(v_data[c][p], u64::from(v[c][e]));
                }
            }
        }
        m.eval();
        for c in 0..chips {
            for p in 0..3 {
                if next[c][p] < n && m.peek(v_ready[c][p]) == 1 {
                    out.taken[c][p].push(cycle);
                    next[c][p] += 3;
                }
                let [valid, index, data] = r_out[c][p];
                if m.peek(valid) == 1 {
                    let e = m.peek(index) as usize;
                    assert!(e < n && e % 3 == p, "chip {c} lane {p}: index {e}");
                    assert_eq!(out.result_cycles[c][e], u64::MAX, "chip {c}: {e} twice");
                    out.results[c][e] = m.peek(data) as u32;
                    out.result_cycles[c][e] = cycle;
                    left -= 1;
                }
            }
        }
        m.step();
        cycle += 1;
    }
    out.alarm = m.peek(alarm) != 0;
    out
}

fn value(rng: &mut impl Rng) -> u32 {
    match rng.gen_range(0..8) {
        0 => [0, 0x8000_0000, 0x7f80_0000, 0xff80_0000, 0x7fc0_0001, 1][rng.gen_range(0..6)],
        1 => rng.gen::<u32>() & 0x807f_ffff,
        _ => (rng.gen::<u32>() & 0x8fff_ffff) | 0x3000_0000,
    }
}

/// One run on RTL and model: `eng`'s queues and adder, links of `hop` and
/// `credit` cycles, n elements per chip.
fn check(
    dims: [u32; 3],
    eng: AllreduceV2,
    (hop, credit): (u32, u32),
    n: usize,
    fp: bool,
    rng: &mut impl Rng,
) {
    let cfg = TorusConfig::with_dims(dims).unwrap();
    let v: Vec<Vec<u32>> = (0..cfg.chips())
        .map(|_| {
            (0..n)
                .map(|_| if fp { value(rng) } else { rng.gen() })
                .collect()
        })
        .collect();
    let timing = V2Timing::new(eng, hop, credit);
    let model = run(&cfg, &v, fp, timing);
    let rtl = run_rtl(&cfg, eng, hop, credit, &v, fp);
    let what = format!("{dims:?} {eng:?} hop {hop} credit {credit} n {n} fp {fp}");
    assert!(!rtl.alarm, "{what}: alarm");
    if fp {
        let want = allreduce_f32_v2(&cfg, &v);
        for (c, r) in rtl.results.iter().enumerate() {
            assert_eq!(r, &want, "{what}: chip {c}'s results");
        }
    }
    assert_eq!(rtl.results, model.results, "{what}: results");
    for c in 0..cfg.chips() {
        assert_eq!(
            rtl.taken[c], model.taken[c],
            "{what}: chip {c}'s take cycles"
        );
        assert_eq!(
            rtl.result_cycles[c], model.result_cycles[c],
            "{what}: chip {c}'s result cycles"
        );
    }
}

const DEFAULT: AllreduceV2 = AllreduceV2::DEFAULT;

/// Queues of one and two slots and a combinational adder: every stall
/// rule (credits, reservations, full queues) binds.
const TIGHT: AllreduceV2 = AllreduceV2 {
    queue: 2,
    outbound: 1,
    local: 2,
    adder_stages: 0,
};

#[test]
fn small_tori_match_the_cycle_model() {
    let mut rng = tb::seed::rng_for("small_tori_match_the_cycle_model");
    check([2, 1, 1], DEFAULT, (3, 2), 30, true, &mut rng);
    check([2, 2, 1], DEFAULT, (1, 1), 60, true, &mut rng);
    check([3, 2, 1], DEFAULT, (4, 3), 90, false, &mut rng);
}

#[test]
fn tight_queues_match_the_cycle_model() {
    let mut rng = tb::seed::rng_for("tight_queues_match_the_cycle_model");
    check([2, 2, 2], TIGHT, (5, 4), 120, true, &mut rng);
    check([3, 1, 2], TIGHT, (2, 6), 90, false, &mut rng);
}

#[test]
fn larger_tori_match_the_cycle_model() {
    let mut rng = tb::seed::rng_for("larger_tori_match_the_cycle_model");
    check([4, 2, 2], DEFAULT, (8, 8), 400, true, &mut rng);
    check([3, 3, 2], DEFAULT, (6, 9), 200, false, &mut rng);
}

/// The engine of the largest torus and a small links top pass lint, Icarus
/// and Yosys without latches.
#[test]
fn rtl_passes_lint_icarus_and_yosys() {
    hw::quiet_elab_errors();
    let build = |dims: [u32; 3], whole: bool| {
        let cfg = TorusConfig::with_dims(dims).unwrap();
        let (design, top) = catch_elab(|| {
            let mut d = Design::new();
            let t = if whole {
                torus::allreduce_v2::links_top(&mut d, &cfg, &DEFAULT, 3, 2)
            } else {
                torus::allreduce_v2::engine(&mut d, &cfg, &DEFAULT)
            };
            (d, t)
        })
        .unwrap();
        let header = Header {
            generator: "torus_v2 test".into(),
            params: cfg.params(),
        };
        (emit_design(&design, &top, &header), top.name.clone())
    };
    for (dims, whole) in [([4, 4, 4], false), ([2, 2, 1], true), ([3, 1, 1], true)] {
        let (files, top) = build(dims, whole);
        tb::tools::verilator_lint(&files, &top).unwrap_or_else(|e| panic!("{top}: {e}"));
        tb::tools::iverilog_compile(&files, &top).unwrap_or_else(|e| panic!("{top}: {e}"));
        let synth = tb::tools::yosys_synth(&files, &top).unwrap_or_else(|e| panic!("{top}: {e}"));
        assert_eq!(synth.latches, 0, "{top}: latches\n{}", synth.log);
        assert!(synth.flip_flops > 0, "{top}: empty synthesis");
    }
}

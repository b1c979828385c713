//! The order-v2 all-reduce engine's RTL (`torus::allreduce_v2`) on links of
//! a fixed latency against its cycle model (`golden::torus_v2`): the same
//! results on every chip (order v2's bits, int32 wrapping sums), taken and
//! given in the same cycles.

use config::{AllreduceV2, TorusConfig};
use golden::torus::allreduce_f32_v2;
use golden::torus_v2::{run, V2Timing};
use rand::Rng;
use sim::drivers::torus::{AllReduceRun, LaneFeed, Lanes};
use sim::drivers::PortTable;

/// The RTL engines on links of `hop` and `credit` cycles, fed and read
/// through the torus driver's lanes (`sim::drivers::torus::LaneFeed`).
fn run_rtl(
    cfg: &TorusConfig,
    eng: AllreduceV2,
    hop: u32,
    credit: u32,
    v: &[Vec<u32>],
    fp: bool,
) -> (AllReduceRun, bool) {
    let mut m = sim::drivers::module_model("torus_v2 test", cfg.params(), |d| {
        torus::allreduce_v2::links_top(d, cfg, &eng, hop, credit)
    })
    .unwrap();
    let lanes: Vec<Lanes> = (0..cfg.chips())
        .map(|c| Lanes::of(&PortTable::prefixed(&m, &format!("c{c}_"))).unwrap())
        .collect();
    let top = PortTable::new(&m);
    let [reset, fp_port, alarm] = top.array([hw::ir::RESET, "fp_i", "alarm_o"]).unwrap();
    m.poke(fp_port, u64::from(fp));
    for l in &lanes {
        l.idle(&mut m);
    }
    m.poke(reset, 1);
    m.step();
    m.poke(reset, 0);
    let mut feed = LaneFeed::new(v);
    let mut cycle = 0u64;
    while feed.left() > 0 {
        assert!(
            cycle < 200 * v[0].len() as u64 + 10_000,
            "the RTL engine stopped"
        );
        for (c, l) in lanes.iter().enumerate() {
            feed.offer(&mut m, c, l);
        }
        m.eval();
        for (c, l) in lanes.iter().enumerate() {
            feed.observe(&m, c, l, cycle).unwrap();
        }
        m.step();
        cycle += 1;
    }
    (feed.into_run(), m.peek(alarm) != 0)
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
    let (rtl, alarm) = run_rtl(&cfg, eng, hop, credit, &v, fp);
    let what = format!("{dims:?} {eng:?} hop {hop} credit {credit} n {n} fp {fp}");
    assert!(!alarm, "{what}: alarm");
    if fp {
        let want = allreduce_f32_v2(&cfg, &v);
        for (c, r) in rtl.results.iter().enumerate() {
            assert_eq!(r, &want, "{what}: chip {c}'s results");
        }
    }
    assert_eq!(rtl.results, model.results, "{what}: results");
    for c in 0..cfg.chips() {
        let mut taken = vec![0; n];
        for (p, lane) in model.taken[c].iter().enumerate() {
            for (i, &t) in lane.iter().enumerate() {
                taken[3 * i + p] = t;
            }
        }
        assert_eq!(rtl.taken[c], taken, "{what}: chip {c}'s take cycles");
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
/// and Yosys's `proc` without latches (`tb::tools::yosys_latch_free`).
#[test]
fn rtl_passes_lint_icarus_and_yosys() {
    hw::quiet_elab_errors();
    let build = |dims: [u32; 3], whole: bool| {
        let cfg = TorusConfig::with_dims(dims).unwrap();
        let (files, top) = sim::drivers::module_files("torus_v2 test", cfg.params(), |d| {
            if whole {
                torus::allreduce_v2::links_top(d, &cfg, &DEFAULT, 3, 2)
            } else {
                torus::allreduce_v2::engine(d, &cfg, &DEFAULT)
            }
        })
        .unwrap();
        (files, top.name.clone())
    };
    for (dims, whole) in [([4, 4, 4], false), ([2, 2, 1], true), ([3, 1, 1], true)] {
        let (files, top) = build(dims, whole);
        tb::tools::verilator_lint(&files, &top).unwrap_or_else(|e| panic!("{top}: {e}"));
        tb::tools::iverilog_compile(&files, &top).unwrap_or_else(|e| panic!("{top}: {e}"));
        tb::tools::yosys_latch_free(&files, &top).unwrap_or_else(|e| panic!("{top}: {e}"));
    }
}

//! The order-v2 all-reduce engine's cycle model: its results are order
//! v2's bits on every chip, its links carry the schedule's loads, it
//! cannot deadlock with the smallest queues, and it runs near the link
//! bound.

mod support;

use config::TorusConfig;
use golden::torus::{allreduce_f32_v2, v2_link_bound, v2_link_loads};
use golden::torus_v2::{run, V2Links, V2Timing};
use rand::Rng;

const SHAPES: [[u32; 3]; 7] = [
    [1, 1, 1],
    [2, 1, 1],
    [3, 1, 1],
    [2, 2, 2],
    [4, 2, 1],
    [3, 2, 2],
    [4, 4, 1],
];

/// fp32 patterns with every class: zeros, subnormals, infinities, NaNs.
fn value(rng: &mut impl Rng) -> u32 {
    match rng.gen_range(0..8) {
        0 => [
            0,
            0x8000_0000,
            0x7f80_0000,
            0xff80_0000,
            0x7fc0_0001,
            0x0000_0001,
        ][rng.gen_range(0..6)],
        1 => rng.gen::<u32>() & 0x807f_ffff,
        _ => (rng.gen::<u32>() & 0x8fff_ffff) | 0x3000_0000,
    }
}

fn vectors(cfg: &TorusConfig, n: usize, rng: &mut impl Rng) -> Vec<Vec<u32>> {
    (0..cfg.chips())
        .map(|_| (0..n).map(|_| value(rng)).collect())
        .collect()
}

#[test]
fn results_are_order_v2_on_every_chip() {
    let mut rng = support::rng("results_are_order_v2_on_every_chip", 0);
    for dims in SHAPES {
        let cfg = TorusConfig::with_dims(dims).unwrap();
        for n in [1, 2, 3, 7, 50] {
            let v = vectors(&cfg, n, &mut rng);
            let want = allreduce_f32_v2(&cfg, &v);
            let got = run(&cfg, &v, true, V2Timing::default_links());
            for (c, r) in got.results.iter().enumerate() {
                assert_eq!(r, &want, "{dims:?} n = {n}: chip {c}");
            }
        }
    }
}

#[test]
fn int32_sums_wrap() {
    let mut rng = support::rng("int32_sums_wrap", 1);
    let cfg = TorusConfig::with_dims([2, 2, 2]).unwrap();
    let n = 40;
    let v: Vec<Vec<u32>> = (0..cfg.chips())
        .map(|_| (0..n).map(|_| rng.gen()).collect())
        .collect();
    let want: Vec<u32> = (0..n)
        .map(|e| v.iter().fold(0u32, |s, c| s.wrapping_add(c[e])))
        .collect();
    let got = run(&cfg, &v, false, V2Timing::default_links());
    assert!(got.results.iter().all(|r| r == &want));
}

#[test]
fn links_carry_the_schedules_loads() {
    let mut rng = support::rng("links_carry_the_schedules_loads", 2);
    for dims in SHAPES {
        let cfg = TorusConfig::with_dims(dims).unwrap();
        let n = 61;
        let v = vectors(&cfg, n, &mut rng);
        let got = run(&cfg, &v, true, V2Timing::default_links());
        assert_eq!(got.link_flits, v2_link_loads(&cfg, n), "{dims:?}");
    }
}

#[test]
fn single_slots_do_not_deadlock() {
    let mut rng = support::rng("single_slots_do_not_deadlock", 3);
    let tight = V2Timing {
        links: V2Links::Fixed { hop: 3, credit: 2 },
        add: 4,
        queue: 1,
        outbound: 1,
        local: 1,
    };
    for dims in [[2, 2, 2], [4, 2, 1], [3, 3, 1]] {
        let cfg = TorusConfig::with_dims(dims).unwrap();
        let v = vectors(&cfg, 90, &mut rng);
        let want = allreduce_f32_v2(&cfg, &v);
        let got = run(&cfg, &v, true, tight);
        assert!(got.results.iter().all(|r| r == &want), "{dims:?}");
    }
}

#[test]
fn runs_near_the_link_bound() {
    // Fractions of the bound at the default timing: long vectors close to
    // the lane rate's (P - 1) / P, short ones paying the chains' latency.
    let mut rng = support::rng("runs_near_the_link_bound", 4);
    let mut short = Vec::new();
    for (dims, n, floor) in [
        ([2, 2, 2], 1_024, 0.5),
        ([4, 2, 2], 1_024, 0.5),
        ([4, 4, 4], 1_024, 0.5),
        ([2, 2, 2], 16_384, 0.8),
        ([4, 2, 2], 16_384, 0.8),
        ([4, 4, 4], 16_384, 0.8),
        ([4, 4, 4], 65_536, 0.8),
    ] {
        let cfg = TorusConfig::with_dims(dims).unwrap();
        let v = vectors(&cfg, n, &mut rng);
        let got = run(&cfg, &v, true, V2Timing::default_links());
        let fraction = v2_link_bound(&cfg, n) as f64 / got.cycles as f64;
        println!(
            "{dims:?} n = {n}: {} cycles, bound {}, {fraction:.3}",
            got.cycles,
            v2_link_bound(&cfg, n)
        );
        if fraction < floor {
            short.push(format!("{dims:?} n = {n}: {fraction:.3} of the bound"));
        }
    }
    assert!(short.is_empty(), "below the floor: {short:?}");
}

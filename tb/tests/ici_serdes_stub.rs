//! The serdes stub with its draws pipelined (the one under links with a
//! receive pipeline) against the plain stub: fed the same inputs, every
//! cycle, with random seeds and seed loads (zero among them), thresholds
//! that change from cycle to cycle, scripted flips, drops and duplicates
//! and resets, both make the same decisions in the same cycles: the same
//! `in_ready_o`, `out_valid_o`, `out_word_o` and counters, `corrupted_o`
//! two cycles later in the pipelined stub, whose duplicate threshold acts
//! a cycle after it is set (the plain stub is given it a cycle late).

use ici::serdes_stub::{ports as sp, serdes_stub, serdes_stub_pipelined, DRAW_WIDTH};
use rand::Rng;
use sim::verilator::{Model, PortId};

fn build(width: u32, latency: u32, pipelined: bool) -> Model {
    sim::drivers::module_model("ici_serdes_stub test", vec![], |design| {
        if pipelined {
            serdes_stub_pipelined(design, width, latency)
        } else {
            serdes_stub(design, width, latency)
        }
    })
    .unwrap_or_else(|e| panic!("cannot build the serdes stub: {e}"))
}

/// The ports both stubs have, by name.
struct Ports {
    inputs: Vec<(&'static str, u32)>,
    outputs: Vec<&'static str>,
}

fn ports(width: u32) -> Ports {
    Ports {
        inputs: vec![
            (hw::ir::RESET, 1),
            (sp::IN_WORD, width),
            (sp::SEED_LOAD, 1),
            (sp::SEED, 64),
            (sp::FLIP_THRESHOLD, DRAW_WIDTH),
            (sp::DROP_THRESHOLD, DRAW_WIDTH),
            (sp::DUP_THRESHOLD, DRAW_WIDTH),
            (sp::FORCE_FLIP, width),
            (sp::FORCE_DROP, 1),
            (sp::FORCE_DUP, 1),
        ],
        outputs: vec![
            sp::IN_READY,
            sp::OUT_VALID,
            sp::OUT_WORD,
            sp::WORDS,
            sp::DROPPED,
            sp::DUPLICATED,
        ],
    }
}

/// A random value of `bits` bits as 32-bit words; rare events stay rare.
fn random_input(rng: &mut impl Rng, name: &str, bits: u32) -> Vec<u32> {
    let words = bits.div_ceil(32) as usize;
    let mut v = vec![0u32; words];
    let fill = |v: &mut Vec<u32>, rng: &mut dyn rand::RngCore| {
        for w in v.iter_mut() {
            *w = rng.next_u32();
        }
    };
    match name {
        n if n == hw::ir::RESET => v[0] = u32::from(rng.gen_ratio(1, 50)),
        n if n == sp::SEED_LOAD => v[0] = u32::from(rng.gen_ratio(1, 20)),
        n if n == sp::SEED => {
            // A zero seed loads the replacement.
            if !rng.gen_ratio(1, 8) {
                fill(&mut v, rng);
            }
        }
        n if n == sp::FORCE_FLIP => {
            if rng.gen_ratio(1, 6) {
                let bit = rng.gen_range(0..bits);
                v[(bit / 32) as usize] |= 1 << (bit % 32);
            }
            if rng.gen_ratio(1, 20) {
                fill(&mut v, rng);
            }
        }
        n if n == sp::FORCE_DROP || n == sp::FORCE_DUP => {
            v[0] = u32::from(rng.gen_ratio(1, 10));
        }
        n if n.contains("threshold") => {
            // Mostly rare events, sometimes frequent, sometimes never.
            v[0] = match rng.gen_range(0..4) {
                0 => 0,
                1 => rng.gen_range(0..1 << 20),
                2 => rng.gen_range(0..1 << DRAW_WIDTH),
                _ => (1 << DRAW_WIDTH) - 1,
            };
        }
        _ => fill(&mut v, rng),
    }
    if !bits.is_multiple_of(32) {
        v[words - 1] &= (1u32 << (bits % 32)) - 1;
    }
    v
}

fn check(width: u32, latency: u32, cycles: u64, rng: &mut impl Rng) {
    let mut plain = build(width, latency, false);
    let mut piped = build(width, latency, true);
    let p = ports(width);
    let ids = |m: &Model, names: &mut dyn Iterator<Item = &'static str>| -> Vec<PortId> {
        names.map(|n| m.port(n).unwrap()).collect()
    };
    let (in_plain, in_piped) = (
        ids(&plain, &mut p.inputs.iter().map(|x| x.0)),
        ids(&piped, &mut p.inputs.iter().map(|x| x.0)),
    );
    let (out_plain, out_piped) = (
        ids(&plain, &mut p.outputs.iter().copied()),
        ids(&piped, &mut p.outputs.iter().copied()),
    );
    let corrupted = (
        plain.port(sp::CORRUPTED).unwrap(),
        piped.port(sp::CORRUPTED).unwrap(),
    );
    // The plain stub's corrupted count one and two cycles ago.
    let mut corrupted_before = [0u64; 2];
    // Thresholds hold for runs of cycles, and sometimes change every cycle.
    let mut held: Vec<Option<Vec<u32>>> = vec![None; p.inputs.len()];
    let (mut events, mut reset_seen) = (0u64, 0u64);
    let mut dup_threshold_before: Option<Vec<u32>> = None;
    // Resets this cycle and in the two before.
    let (mut reset_now, mut reset_last) = (false, [false; 2]);
    for t in 0..cycles {
        for (k, &(name, bits)) in p.inputs.iter().enumerate() {
            let v = if name.contains("threshold") {
                if held[k].is_none() || rng.gen_ratio(1, 30) {
                    held[k] = Some(random_input(rng, name, bits));
                }
                held[k].clone().unwrap()
            } else {
                random_input(rng, name, bits)
            };
            // The first cycle resets and loads a seed.
            let v = if t == 0 && (name == hw::ir::RESET || name == sp::SEED_LOAD) {
                vec![1]
            } else {
                v
            };
            if name == hw::ir::RESET {
                reset_now = v[0] == 1;
                reset_seen += u64::from(reset_now);
            }
            // The pipelined stub's duplicate threshold acts a cycle after
            // it is set: the plain stub sees it a cycle late.
            if name == sp::DUP_THRESHOLD {
                let late = dup_threshold_before.replace(v.clone());
                plain.poke_wide(in_plain[k], late.as_ref().unwrap_or(&v));
            } else {
                plain.poke_wide(in_plain[k], &v);
            }
            piped.poke_wide(in_piped[k], &v);
        }
        plain.eval();
        piped.eval();
        for (k, name) in p.outputs.iter().enumerate() {
            let (a, b) = (plain.peek_wide(out_plain[k]), piped.peek_wide(out_piped[k]));
            assert_eq!(
                a, b,
                "width {width}, latency {latency}, cycle {t}: {name} differs"
            );
        }
        // The pipelined stub's corrupted count is two cycles behind (both
        // read 0 from the third cycle after a reset).
        let now = plain.peek(corrupted.0);
        if t > 1 && !reset_last.iter().any(|&r| r) {
            assert_eq!(
                piped.peek(corrupted.1),
                corrupted_before[1],
                "width {width}, latency {latency}, cycle {t}: {} (two cycles later)",
                sp::CORRUPTED
            );
        }
        events += u64::from(now != corrupted_before[0]);
        corrupted_before = [now, corrupted_before[0]];
        reset_last = [reset_now, reset_last[0]];
        plain.step();
        piped.step();
    }
    // The comparison saw what it compares.
    assert!(
        events > cycles / 50,
        "only {events} corrupted-count changes"
    );
    assert!(reset_seen > 1);
}

#[test]
fn pipelined_stub_makes_the_same_decisions_in_the_same_cycles() {
    let mut rng = tb::seed::rng_for("pipelined_stub_makes_the_same_decisions_in_the_same_cycles");
    // The formal preset's 26-bit frame, the fmax preset's (a position of
    // 7 bits), and a power-of-two width; latencies 1 (the flips go onto
    // the output) to 3.
    let fmax = tb::preset(&ici::Ici, "fmax").frame_bits();
    for (width, latency) in [(26, 1), (fmax, 2), (fmax, 3), (64, 1)] {
        check(width, latency, 20_000, &mut rng);
    }
}

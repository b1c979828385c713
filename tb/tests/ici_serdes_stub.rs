//! The plain serdes stub against `golden::serdes_stub` (the documented LFSR
//! and timing, bit serial), output by output and cycle by cycle; and the
//! serdes stub with its draws pipelined (the one under links with a
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

/// Cycle `t`'s inputs, in `p.inputs` order: random, with the thresholds
/// held for runs of cycles (`held`) and sometimes changed every cycle; the
/// first cycle resets and loads a seed.
fn cycle_inputs(
    p: &Ports,
    held: &mut [Option<Vec<u32>>],
    t: u64,
    rng: &mut impl Rng,
) -> Vec<Vec<u32>> {
    p.inputs
        .iter()
        .enumerate()
        .map(|(k, &(name, bits))| {
            let v = if name.contains("threshold") {
                if held[k].is_none() || rng.gen_ratio(1, 30) {
                    held[k] = Some(random_input(rng, name, bits));
                }
                held[k].clone().unwrap()
            } else {
                random_input(rng, name, bits)
            };
            if t == 0 && (name == hw::ir::RESET || name == sp::SEED_LOAD) {
                vec![1]
            } else {
                v
            }
        })
        .collect()
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
        let values = cycle_inputs(&p, &mut held, t, rng);
        for (k, (&(name, _), v)) in p.inputs.iter().zip(values).enumerate() {
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

/// The model's inputs from the poked values.
fn model_inputs(p: &Ports, values: &[Vec<u32>]) -> golden::serdes_stub::StubInputs {
    let get = |name: &str| {
        let k = p
            .inputs
            .iter()
            .position(|x| x.0 == name)
            .expect("a stub port");
        &values[k]
    };
    golden::serdes_stub::StubInputs {
        reset: get(hw::ir::RESET)[0] == 1,
        in_word: get(sp::IN_WORD).clone(),
        seed_load: get(sp::SEED_LOAD)[0] == 1,
        seed: u64::from(get(sp::SEED)[0]) | u64::from(get(sp::SEED)[1]) << 32,
        flip_threshold: get(sp::FLIP_THRESHOLD)[0],
        drop_threshold: get(sp::DROP_THRESHOLD)[0],
        dup_threshold: get(sp::DUP_THRESHOLD)[0],
        force_flip: get(sp::FORCE_FLIP).clone(),
        force_drop: get(sp::FORCE_DROP)[0] == 1,
        force_dup: get(sp::FORCE_DUP)[0] == 1,
    }
}

/// The plain stub against `golden::serdes_stub`, written bit-serially from
/// the stub's documentation, every output in every cycle from the first
/// seed load on (random seeds, zero among them, thresholds from never to
/// always, scripted errors and resets).
fn check_against_model(width: u32, latency: u32, cycles: u64, rng: &mut impl Rng) {
    let mut rtl = build(width, latency, false);
    let p = ports(width);
    let inputs: Vec<PortId> = p.inputs.iter().map(|x| rtl.port(x.0).unwrap()).collect();
    let mut outputs: Vec<PortId> = p.outputs.iter().map(|n| rtl.port(n).unwrap()).collect();
    outputs.push(rtl.port(sp::CORRUPTED).unwrap());
    let mut model = golden::serdes_stub::SerdesStub::new(width, latency, 0);
    let mut held: Vec<Option<Vec<u32>>> = vec![None; p.inputs.len()];
    // Duplicates, invalid words out, and changes of the corrupted count.
    let mut events = [0u64; 3];
    let mut corrupted_before = 0;
    for t in 0..cycles {
        let values = cycle_inputs(&p, &mut held, t, rng);
        for (port, v) in inputs.iter().zip(&values) {
            rtl.poke_wide(*port, v);
        }
        rtl.eval();
        let inp = model_inputs(&p, &values);
        let want = model.outputs(&inp);
        // The LFSR's power-up value is unknown before the first seed load.
        if t > 0 {
            let got: Vec<Vec<u32>> = outputs.iter().map(|&o| rtl.peek_wide(o)).collect();
            let word_check = |got: &[u32]| !want.out_valid || got == want.out_word.as_slice();
            let scalars = [
                want.in_ready as u32,
                want.out_valid as u32,
                0,
                want.words,
                want.dropped,
                want.duplicated,
                want.corrupted,
            ];
            for (k, name) in p.outputs.iter().chain([&sp::CORRUPTED]).enumerate() {
                let ok = if *name == sp::OUT_WORD {
                    word_check(&got[k])
                } else {
                    got[k][0] == scalars[k]
                };
                assert!(
                    ok,
                    "width {width}, latency {latency}, cycle {t}: {name} is {:x?}, the model says {}",
                    got[k],
                    if *name == sp::OUT_WORD {
                        format!("{:x?}", want.out_word)
                    } else {
                        scalars[k].to_string()
                    }
                );
            }
            events[0] += u64::from(!want.in_ready);
            events[1] += u64::from(!want.out_valid);
            events[2] += u64::from(want.corrupted != corrupted_before);
        }
        corrupted_before = want.corrupted;
        model.step(&inp);
        rtl.step();
    }
    // The comparison saw duplicates, drops and flips.
    assert!(
        events.iter().all(|&e| e > cycles / 50),
        "too few events: {events:?}"
    );
}

#[test]
fn plain_stub_draws_and_delivers_as_its_documentation_says() {
    let mut rng = tb::seed::rng_for("plain_stub_draws_and_delivers_as_its_documentation_says");
    let default = tb::preset(&ici::Ici, "default").frame_bits();
    // The formal preset's 26-bit frame, the default frame, the torus
    // link's 120-bit words with their latency of 4, and 64 bits.
    for (width, latency) in [(26, 1), (default, 2), (120, 4), (64, 3)] {
        check_against_model(width, latency, 5_000, &mut rng);
    }
}

//! The ICI link in RTL (Verilated pair of link ends over the serdes stubs)
//! against `golden::ici`: exact delivery under any errors, and cycle for
//! cycle on an error-free link, over every preset and several receiver
//! stall patterns; directed error scripts for each recovery path; a short
//! randomized soak with a printed seed.

use config::ici::{flits_of, Flit};
use config::IciConfig;
use rand::{Rng, SeedableRng};
use sim::drivers::ici::{Faults, IciDriver, Injection, LinkRun};
use std::collections::BTreeMap;

fn driver(cfg: &IciConfig) -> IciDriver {
    IciDriver::new(cfg).unwrap_or_else(|e| panic!("cannot build the link for {cfg}: {e}"))
}

fn payload(n: usize, salt: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(salt))
        .collect()
}

/// Every preset (the fmax preset at the deepest receive pipeline, whose
/// sender's step is split), the small one at depth 1, the fmax one at
/// depth 2, and a split link the window and credits hold back.
fn presets() -> Vec<(String, IciConfig)> {
    use hw::Block;
    let mut all: Vec<(String, IciConfig)> = ici::Ici
        .presets()
        .into_iter()
        .map(|p| (p.name, p.config))
        .collect();
    all.push(("small at depth 1".into(), small().with_depth(1).unwrap()));
    all.push(("fmax at depth 2".into(), fmax().with_depth(2).unwrap()));
    all.push(("tight at depth 3".into(), tight()));
    all
}

/// A link at the split depth whose window (8) and buffer (6) are below its
/// 16-cycle round trip, so the sender waits on both; two retries and one
/// Train word.
fn tight() -> IciConfig {
    IciConfig::new(4, 8, 6, 2, 32, 2, 1)
        .and_then(|c| c.with_depth(ici::link::SPLIT_DEPTH))
        .unwrap()
}

fn fmax() -> IciConfig {
    tb::preset(&ici::Ici, "fmax")
}

/// Delivery is exact and no alarm was raised.
fn check_delivery(run: &LinkRun, a: &[Flit], b: &[Flit], what: &str) {
    assert_eq!(run.at_b, golden::ici::delivered(a), "{what}: flits at B");
    assert_eq!(run.at_a, golden::ici::delivered(b), "{what}: flits at A");
    assert!(run.alarms.is_empty(), "{what}: {:?}", run.alarms);
    // Every corrupted word that arrived was caught by the CRC.
    assert_eq!(
        run.b.crc_errors, run.ab.corrupted,
        "{what}: CRC escapes A->B"
    );
    assert_eq!(
        run.a.crc_errors, run.ba.corrupted,
        "{what}: CRC escapes B->A"
    );
}

#[test]
fn error_free_runs_match_the_cycle_model_on_every_preset() {
    type Pattern = Box<dyn Fn(u64) -> (bool, bool)>;
    let patterns: Vec<(&str, Pattern)> = vec![
        ("always ready", Box::new(|_| (true, true))),
        ("B stalls 7 of 10", Box::new(|t| (true, t % 10 >= 7))),
        (
            "both stall in bursts",
            Box::new(|t| ((t / 13) % 3 != 0, (t / 29) % 2 == 0)),
        ),
    ];
    for (name, cfg) in presets() {
        let mut d = driver(&cfg);
        let w = cfg.flit_bytes() as usize;
        for (bytes_a, bytes_b) in [(1, 0), (w * 3 + 1, w * 2), (w * 200, w * 150 + 3)] {
            for (pname, pattern) in &patterns {
                let what = format!("{name}, {bytes_a}/{bytes_b} bytes, {pname}");
                let a = flits_of(&payload(bytes_a, 1), &cfg);
                let b = flits_of(&payload(bytes_b, 2), &cfg);
                let run = d
                    .run(
                        &a,
                        &b,
                        &Faults::default(),
                        pattern.as_ref(),
                        None,
                        1_000_000,
                    )
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                check_delivery(&run, &a, &b, &what);
                let model =
                    golden::ici::cycle_model(&cfg, a.len(), b.len(), pattern.as_ref(), 1_000_000)
                        .expect("the model finishes");
                assert_eq!(run.a_tx_cycles, model.a_tx, "{what}: A's acceptances");
                assert_eq!(run.b_tx_cycles, model.b_tx, "{what}: B's acceptances");
                assert_eq!(run.b_rx_cycles, model.b_rx, "{what}: deliveries at B");
                assert_eq!(run.a_rx_cycles, model.a_rx, "{what}: deliveries at A");
                assert_eq!(run.cycles, model.cycles, "{what}: cycles");
                for c in [run.a, run.b] {
                    assert_eq!(
                        (
                            c.crc_errors,
                            c.retransmits,
                            c.naks_sent,
                            c.timeouts,
                            c.link_downs
                        ),
                        (0, 0, 0, 0, 0),
                        "{what}: {c:?}"
                    );
                }
                assert_eq!(run.a.flits_sent, a.len() as u64);
                assert_eq!(run.b.flits_received, a.len() as u64);
            }
        }
    }
}

/// Scripted errors on the A -> B direction only, by cycle.
fn scripted(events: BTreeMap<u64, Injection>) -> impl FnMut(u64) -> (Injection, Injection) {
    move |t| {
        (
            events.get(&t).cloned().unwrap_or_default(),
            Injection::default(),
        )
    }
}

fn small() -> IciConfig {
    IciConfig::new(4, 8, 8, 2, 32, 8, 4).unwrap()
}

#[test]
fn each_error_kind_is_recovered_from_as_the_protocol_says() {
    // Window and buffer above the round trip (2 x (2 + depth) + 6): A's
    // flits are on the lanes in consecutive cycles from cycle 2 on. The
    // errors are injected in the stub, before the receive pipeline, so the
    // same script holds at every depth.
    let shallow = IciConfig::new(4, 16, 16, 2, 32, 8, 4).unwrap();
    for depth in [0, 2, ici::block::FMAX_DEPTH] {
        recovers_from_each_error_kind(&shallow.with_depth(depth).unwrap());
    }
}

fn recovers_from_each_error_kind(cfg: &IciConfig) {
    let cfg = *cfg;
    let mut d = driver(&cfg);
    let a = flits_of(&payload(4 * 40, 3), &cfg);
    let b = flits_of(&payload(4 * 40, 4), &cfg);
    let ready = |_| (true, true);
    let run_with = |d: &mut IciDriver, events: Vec<(u64, Injection)>| {
        let mut s = scripted(events.into_iter().collect());
        d.run(&a, &b, &Faults::default(), &ready, Some(&mut s), 100_000)
            .unwrap()
    };
    // Flits leave A from cycle 2 on, one per cycle: cycle 10 carries one.
    let flip = |bits: Vec<u32>| Injection {
        flips: bits,
        ..Default::default()
    };
    // One flipped payload bit: CRC error, NAK, replay.
    let payload_bit = cfg.header_bits() + 5;
    let r = run_with(&mut d, vec![(10, flip(vec![payload_bit]))]);
    check_delivery(&r, &a, &b, "one flip");
    assert_eq!(
        (r.b.crc_errors, r.b.naks_sent, r.a.naks_received),
        (1, 1, 1)
    );
    assert!(r.a.retransmits > 0 && r.a.timeouts == 0, "{:?}", r.a);
    // Flips in the header fields (kind, seq, ack) and in the CRC itself.
    for bit in [0, 3, 6, cfg.frame_bits() - 1] {
        let r = run_with(&mut d, vec![(12, flip(vec![bit]))]);
        check_delivery(&r, &a, &b, &format!("flip of bit {bit}"));
        assert_eq!(r.b.crc_errors, 1, "bit {bit}");
    }
    // Four flips at once: still detected.
    let r = run_with(&mut d, vec![(12, flip(vec![1, 25, 50, 77]))]);
    check_delivery(&r, &a, &b, "four flips");
    assert_eq!(r.b.crc_errors, 1);
    // A dropped data word: the next one shows a gap, NAK, replay.
    let drop = Injection {
        drop: true,
        ..Default::default()
    };
    let r = run_with(&mut d, vec![(10, drop.clone())]);
    check_delivery(&r, &a, &b, "one drop");
    assert_eq!((r.b.naks_sent, r.b.crc_errors, r.ab.dropped), (1, 0, 1));
    // A duplicated word: the copy is dropped, nothing replayed.
    let dup = Injection {
        dup: true,
        ..Default::default()
    };
    let r = run_with(&mut d, vec![(10, dup)]);
    check_delivery(&r, &a, &b, "one duplicate");
    assert_eq!((r.ab.duplicated, r.b.naks_sent, r.a.retransmits), (1, 0, 0));
    // The last flit's word dropped: no later word shows the gap, so the
    // sender's timer replays it.
    let last_cycle = 2 + a.len() as u64 - 1;
    let r = run_with(&mut d, vec![(last_cycle, drop.clone())]);
    check_delivery(&r, &a, &b, "last flit dropped");
    assert_eq!((r.a.timeouts, r.b.naks_sent), (1, 0), "{:?} {:?}", r.a, r.b);
    // Every word lost for a long stretch: replays without progress until
    // max_retries, a link-down, retraining once words get through, and
    // everything still delivered once.
    let outage = (20..20 + 20 * u64::from(cfg.replay_timeout()))
        .map(|t| (t, drop.clone()))
        .collect();
    let r = run_with(&mut d, outage);
    check_delivery(&r, &a, &b, &format!("outage at depth {}", cfg.depth()));
    assert_eq!(r.a.link_downs, 1, "{:?}", r.a);
    assert_eq!(r.a.timeouts, u64::from(cfg.max_retries()) + 1, "{:?}", r.a);
}

#[test]
fn random_errors_never_lose_duplicate_or_reorder() {
    // The CI-sized soak: 100k flits each way at BER 1e-4, drop and duplicate
    // rates 1e-3 (SYSTOLE_SOAK multiplies the rounds).
    let seed = tb::seed::seed_for("random_errors_never_lose_duplicate_or_reorder");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    // The last round runs on the fmax preset's deeper receive pipeline.
    let fmax = fmax();
    let rounds = tb::seed::soak_rounds(4);
    let mut d = driver(&small());
    for round in 0..=rounds {
        if round == rounds {
            d = driver(&fmax);
        }
        let cfg = *d.config();
        let n = 25_000 * cfg.flit_bytes() as usize;
        let pa: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
        let pb: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
        let (a, b) = (flits_of(&pa, &cfg), flits_of(&pb, &cfg));
        let faults = Faults {
            ber: 1e-4,
            drop_rate: 1e-3,
            dup_rate: 1e-3,
            seed: rng.gen(),
        };
        let stall = rng.gen_range(0..4u64);
        let ready = move |t: u64| (t % 8 >= stall, (t / 8) % 8 >= stall);
        let run = d
            .run(&a, &b, &faults, &ready, None, 20_000_000)
            .unwrap_or_else(|e| panic!("round {round} ({faults:?}): {e}"));
        check_delivery(&run, &a, &b, &format!("round {round} ({faults:?})"));
        assert!(run.ab.corrupted > 0 && run.ab.dropped > 0 && run.ab.duplicated > 0);
        println!(
            "round {round}: {} cycles, A {:?}, B {:?}",
            run.cycles, run.a, run.b
        );
    }
}

/// Every receive stage loads every cycle, so a link at depth d behaves as
/// one at depth 0 whose stub is d cycles longer, under errors too: with the
/// same seed and script the stubs make the same errors as words enter, and
/// every acceptance, delivery and counter of both link ends matches cycle
/// for cycle. On the fmax preset this holds the split sender's step (the
/// acknowledgement, rewind and issue decision stated as compares of
/// registers) to the plain step in every recovery path the errors reach:
/// NAKs, timeouts, acknowledgements past a rewind, link-downs and
/// retraining; and on [`tight`].
#[test]
fn the_split_step_matches_the_plain_one_on_a_longer_lane_under_errors() {
    let seed =
        tb::seed::seed_for("the_split_step_matches_the_plain_one_on_a_longer_lane_under_errors");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    for deep in [fmax(), tight()] {
        split_matches_plain(&deep, &mut rng);
    }
}

fn split_matches_plain(deep: &IciConfig, rng: &mut rand_chacha::ChaCha8Rng) {
    let deep = *deep;
    assert!(deep.depth() >= ici::link::SPLIT_DEPTH);
    let plain = IciConfig::new(
        deep.flit_bytes(),
        deep.replay_depth(),
        deep.rx_buffer(),
        deep.word_latency(),
        deep.replay_timeout(),
        deep.max_retries(),
        deep.train_words(),
    )
    .unwrap();
    assert_eq!(plain.round_trip(), deep.round_trip());
    let (mut dd, mut dp) = (driver(&deep), driver(&plain));
    let w = deep.flit_bytes() as usize;
    for round in 0..6 {
        // Enough flits both ways that an outage falls inside the run.
        let (na, nb) = (rng.gen_range(500..3000) * w, rng.gen_range(500..3000) * w);
        let pa: Vec<u8> = (0..na).map(|_| rng.gen()).collect();
        let pb: Vec<u8> = (0..nb).map(|_| rng.gen()).collect();
        let (a, b) = (flits_of(&pa, &deep), flits_of(&pb, &deep));
        let faults = Faults {
            ber: [1e-4, 1e-3, 3e-3][round % 3],
            drop_rate: [1e-3, 1e-2][round % 2],
            dup_rate: [1e-3, 1e-2][(round / 2) % 2],
            seed: rng.gen(),
        };
        let stall = rng.gen_range(0..4u64);
        let ready = move |t: u64| (t % 8 >= stall, (t / 8) % 8 >= stall);
        // Odd rounds lose every word both ways for a stretch: replays up to
        // a link-down, then retraining.
        let from = rng.gen_range(50..300u64);
        let outage = (round % 2 == 1).then(|| from..from + 20 * u64::from(deep.replay_timeout()));
        let script = |t: u64| {
            let drop = Injection {
                drop: outage.as_ref().is_some_and(|o| o.contains(&t)),
                ..Default::default()
            };
            (drop.clone(), drop)
        };
        let what = format!("{deep}, round {round} ({faults:?}, stall {stall}, outage {outage:?})");
        let (mut s1, mut s2) = (script, script);
        let rd = dd
            .run(&a, &b, &faults, &ready, Some(&mut s1), 20_000_000)
            .unwrap_or_else(|e| panic!("{what}, depth {}: {e}", deep.depth()));
        let rp = dp
            .run(&a, &b, &faults, &ready, Some(&mut s2), 20_000_000)
            .unwrap_or_else(|e| panic!("{what}, depth 0: {e}"));
        check_delivery(&rd, &a, &b, &what);
        check_delivery(&rp, &a, &b, &what);
        assert_eq!(rd.a_tx_cycles, rp.a_tx_cycles, "{what}: A's acceptances");
        assert_eq!(rd.b_tx_cycles, rp.b_tx_cycles, "{what}: B's acceptances");
        assert_eq!(rd.b_rx_cycles, rp.b_rx_cycles, "{what}: deliveries at B");
        assert_eq!(rd.a_rx_cycles, rp.a_rx_cycles, "{what}: deliveries at A");
        assert_eq!((rd.a, rd.b), (rp.a, rp.b), "{what}: counters");
        assert_eq!(rd.cycles, rp.cycles, "{what}: cycles");
        assert!(
            rd.a.retransmits > 0 && rd.b.crc_errors > 0,
            "{what}: {:?}",
            rd.a
        );
        if outage.is_some() {
            // An end with nothing unacknowledged during the outage (all
            // acked, waiting for credits) has no timer running: at least
            // one end goes down.
            assert!(
                rd.a.link_downs + rd.b.link_downs > 0,
                "{what}: A {:?}, B {:?}",
                rd.a,
                rd.b
            );
        }
        println!(
            "round {round}: {} cycles, A {:?}, B {:?}",
            rd.cycles, rd.a, rd.b
        );
    }
}

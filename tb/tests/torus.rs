//! The ICI torus in RTL against `golden::torus`: the router's route and VC
//! for every position, destination and input (a router alone), exact
//! delivery of random traffic on small tori (plain and re-cabled), with
//! link errors injected, and a saturation run on a ring where one VC with
//! ties always up would deadlock; against `golden::torus_cycle` on error-free links, the cycle
//! every host packet is taken and ejected and every all-reduce element is
//! taken and comes out. Seeds are printed and taken from `SYSTOLE_SEED`.

use config::{Packet, TorusConfig, Wiring, LOCAL_PORT, TORUS_PORTS};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sim::drivers::ici::Faults;
use sim::drivers::torus::{AllReduceRun, Layout, TorusDriver, TorusRun};
use sim::Model;

/// The link flit as `hw/torus`'s crate docs state it: data, vc (1 bit, 2
/// with four VCs), packet (dx, dy, dz, tag, payload), a credit count per VC
/// from bit 0 up.
fn flit(cfg: &TorusConfig, data: bool, vc: u32, p: &Packet, credits: &[u64]) -> u64 {
    let (cb, vb) = (cfg.credit_bits(), cfg.vc_bits());
    let packet = u64::from(p.dest[0])
        | u64::from(p.dest[1]) << 2
        | u64::from(p.dest[2]) << 4
        | u64::from(p.tag) << 6
        | u64::from(p.payload) << 8;
    let mut w = u64::from(data) | u64::from(vc) << 1 | packet << (1 + vb);
    for (v, c) in credits.iter().enumerate() {
        w |= c << (41 + vb + v as u32 * cb);
    }
    w
}

fn unflit(cfg: &TorusConfig, w: u64) -> (bool, u32, Packet, Vec<u64>) {
    let (cb, vb) = (cfg.credit_bits(), cfg.vc_bits());
    let mask = (1u64 << cb) - 1;
    let p = w >> (1 + vb);
    (
        w & 1 == 1,
        (w >> 1 & ((1 << vb) - 1)) as u32,
        Packet {
            dest: [(p & 3) as u32, (p >> 2 & 3) as u32, (p >> 4 & 3) as u32],
            tag: (p >> 6 & 3) as u8,
            payload: (p >> 8) as u32,
        },
        (0..cfg.vcs())
            .map(|v| w >> (41 + vb + v * cb) & mask)
            .collect(),
    )
}

/// Every head, at every router position of a torus, goes to the port and
/// VC `golden::torus::route` names, one packet at a time.
fn check_router(cfg: &TorusConfig) {
    let mut m = sim::drivers::module_model("torus test", cfg.params(), |d| {
        torus::router::router(d, cfg)
    })
    .unwrap();
    let port = |m: &Model, n: &str| m.port(n).unwrap();
    let names = &TORUS_PORTS[..6];
    let rx_valid: Vec<_> = names
        .iter()
        .map(|n| port(&m, &format!("{n}_rx_valid_i")))
        .collect();
    let rx_data: Vec<_> = names
        .iter()
        .map(|n| port(&m, &format!("{n}_rx_data_i")))
        .collect();
    let tx_ready: Vec<_> = names
        .iter()
        .map(|n| port(&m, &format!("{n}_tx_ready_i")))
        .collect();
    let tx_valid: Vec<_> = names
        .iter()
        .map(|n| port(&m, &format!("{n}_tx_valid_o")))
        .collect();
    let tx_data: Vec<_> = names
        .iter()
        .map(|n| port(&m, &format!("{n}_tx_data_o")))
        .collect();
    let at = ["at_x_i", "at_y_i", "at_z_i"].map(|n| port(&m, n));
    let inj_valid = port(&m, "inj_valid_i");
    let inj = ["dx", "dy", "dz", "tag", "payload"].map(|f| port(&m, &format!("inj_{f}_i")));
    let ej_valid = port(&m, "ej_valid_o");
    let ej_ready = port(&m, "ej_ready_i");
    let ej_payload = port(&m, "ej_payload_o");
    let alarm = port(&m, "alarm_o");
    let reset = port(&m, hw::ir::RESET);
    let n = cfg.chips();
    let mut checked = 0;
    for c in 0..n {
        let here = cfg.coords(c);
        m.poke(reset, 1);
        for p in 0..6 {
            m.poke(rx_valid[p], 0);
            m.poke(tx_ready[p], 1);
        }
        m.poke(inj_valid, 0);
        m.poke(ej_ready, 1);
        for (k, &a) in at.iter().enumerate() {
            m.poke(a, u64::from(here[k]));
        }
        m.step();
        m.poke(reset, 0);
        for d in 0..n {
            let dest = cfg.coords(d);
            for in_port in 0..=LOCAL_PORT {
                for in_vc in 0..cfg.vcs() {
                    if in_port == LOCAL_PORT && in_vc > 0 {
                        continue;
                    }
                    let payload = (checked as u32).wrapping_mul(2_654_435_761);
                    let pk = Packet {
                        dest,
                        tag: (checked % 4) as u8,
                        payload,
                    };
                    if in_port == LOCAL_PORT {
                        m.poke(inj_valid, 1);
                        let v = [dest[0], dest[1], dest[2], u32::from(pk.tag), payload];
                        for (p, v) in inj.iter().zip(v) {
                            m.poke(*p, u64::from(v));
                        }
                    } else {
                        m.poke(rx_valid[in_port], 1);
                        let none = vec![0; cfg.vcs() as usize];
                        m.poke(rx_data[in_port], flit(cfg, true, in_vc, &pk, &none));
                    }
                    m.step();
                    m.poke(inj_valid, 0);
                    if in_port != LOCAL_PORT {
                        m.poke(rx_valid[in_port], 0);
                    }
                    let want = golden::torus::route(cfg, here, dest, in_port, in_vc);
                    let mut got = None;
                    let mut after = 0;
                    for k in 1..=8 {
                        after = k;
                        m.eval();
                        for p in 0..6 {
                            if m.peek(tx_valid[p]) == 1 {
                                let (data, vc, q, _) = unflit(cfg, m.peek(tx_data[p]));
                                if data {
                                    assert!(got.is_none(), "two outputs");
                                    assert_eq!(q, pk, "packet changed");
                                    got = Some((p, vc));
                                }
                            }
                        }
                        if m.peek(ej_valid) == 1 {
                            assert_eq!(m.peek(ej_payload) as u32, payload);
                            assert!(got.is_none(), "two outputs");
                            got = Some((LOCAL_PORT, 0));
                        }
                        m.step();
                        if got.is_some() {
                            break;
                        }
                    }
                    let got = got.unwrap_or_else(|| panic!("{cfg}: no output for {pk:?}"));
                    assert_eq!(
                        got, want,
                        "{cfg}: at {here:?} for {dest:?} from port {} VC {in_vc}",
                        TORUS_PORTS[in_port]
                    );
                    // The crate docs' timing, uncontended: a packet pushed
                    // into an input buffer at t is on its torus output at
                    // t + 2 (the buffer's fall-through, then the grant in
                    // the cycle it is the head), and at the ejection
                    // stream at t + 4 (the ejection buffer's fall-through).
                    let expect = if got.0 == LOCAL_PORT { 4 } else { 2 };
                    assert_eq!(after, expect, "{cfg}: cycles through the router for {pk:?}");
                    // Return the credit the packet took.
                    if got.0 != LOCAL_PORT {
                        let mut cr = vec![0; cfg.vcs() as usize];
                        cr[got.1 as usize] = 1;
                        m.poke(rx_valid[got.0], 1);
                        m.poke(rx_data[got.0], flit(cfg, false, 0, &pk, &cr));
                        m.step();
                        m.poke(rx_valid[got.0], 0);
                    }
                    // Let any credit-only flits go.
                    for _ in 0..3 {
                        m.step();
                    }
                    checked += 1;
                }
            }
        }
        assert_eq!(m.peek(alarm), 0, "{cfg}: router alarm");
    }
    println!("{cfg}: {checked} routes checked");
}

#[test]
fn the_router_routes_as_the_golden_model() {
    check_router(&torus::block::small([4, 4, 4]));
    check_router(&torus::block::small([3, 2, 1]));
    // Lookahead routing: the routes stored in the buffers, the same cycles.
    check_router(&torus::block::small([4, 4, 4]).with_depth(1).unwrap());
    // One VC, and four (the dateline's two classes, each split by whether
    // the packet goes on in its dimension after the hop).
    check_router(&torus::block::small([4, 4, 2]).with_vcs(1).unwrap());
    check_router(&torus::block::small([4, 4, 4]).with_vcs(4).unwrap());
    check_router(
        &torus::block::small([4, 3, 2])
            .with_vcs(4)
            .unwrap()
            .with_depth(1)
            .unwrap(),
    );
}

fn random_traffic(
    cfg: &TorusConfig,
    per_chip: usize,
    rng: &mut ChaCha8Rng,
) -> Vec<Vec<(u64, Packet)>> {
    let n = cfg.chips();
    (0..n)
        .map(|src| {
            (0..per_chip)
                .map(|i| {
                    let d = rng.gen_range(0..n);
                    let p = Packet {
                        dest: cfg.coords(d),
                        tag: rng.gen_range(0..4),
                        payload: (src as u32) << 24 | i as u32,
                    };
                    (0, p)
                })
                .collect()
        })
        .collect()
}

/// Delivery is what `golden::torus::delivered` says: per destination and
/// source, the packets in order (the payload names its source).
fn check_delivery(cfg: &TorusConfig, sent: &[Vec<(u64, Packet)>], run: &TorusRun, what: &str) {
    let plain: Vec<Vec<Packet>> = sent
        .iter()
        .map(|s| s.iter().map(|p| p.1).collect())
        .collect();
    let want = golden::torus::delivered(cfg, &plain);
    let n = cfg.chips();
    for (d, want_here) in want.iter().enumerate() {
        let mut got = vec![Vec::new(); n];
        for r in &run.received[d] {
            got[(r.packet.payload >> 24) as usize].push(r.packet);
        }
        assert_eq!(&got, want_here, "{what}: at chip {d}");
    }
    assert!(!run.alarm, "{what}: alarm");
}

/// The plain cabling, or the twisted one the tests re-cable with.
fn wiring_of(cfg: &TorusConfig, twisted: bool) -> Wiring {
    if twisted {
        Wiring::twisted(cfg, 1)
    } else {
        Wiring::identity(cfg)
    }
}

fn driver(cfg: &TorusConfig, w: &Wiring) -> TorusDriver {
    TorusDriver::new(cfg, w).unwrap_or_else(|e| panic!("cannot build {cfg}: {e}"))
}

#[test]
fn random_traffic_arrives_once_and_in_order_with_and_without_errors() {
    let seed = tb::seed::seed_for("torus_random_traffic");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let cases: Vec<(&str, TorusConfig, bool)> = vec![
        ("2x1x1", torus::block::small([2, 1, 1]), false),
        ("3x1x1", torus::block::small([3, 1, 1]), false),
        ("2x2x1 twisted", torus::block::small([2, 2, 1]), true),
    ];
    for (name, cfg, twisted) in cases {
        let wiring = wiring_of(&cfg, twisted);
        let mut d = driver(&cfg, &wiring);
        for ber in [0.0, 2e-3] {
            let sent = random_traffic(&cfg, 150, &mut rng);
            let faults = Faults {
                ber,
                seed: rng.gen(),
                ..Faults::default()
            };
            let stall = rng.gen_range(0..3u64);
            let ready = move |t: u64, c: usize| (t + c as u64) % 4 >= stall;
            let what = format!("{name}, ber {ber}");
            let run = d
                .run(&sent, &faults, &ready, 200_000)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            check_delivery(&cfg, &sent, &run, &what);
            if ber > 0.0 && cfg.chips() > 1 {
                assert!(run.crc_errors > 0, "{what}: no error was injected");
            }
            println!(
                "{what}: {} cycles, {} CRC errors, {} retransmits",
                run.cycles, run.crc_errors, run.retransmits
            );
        }
    }
}

#[test]
fn host_packets_and_an_allreduce_share_the_links() {
    // Both at once, the engine's flits first on every link: every packet
    // arrives once and in order, every chip ends with order v2's bits.
    let seed = tb::seed::seed_for("torus_shared_links");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for (name, cfg, twisted) in [
        ("2x2x1", torus::block::small([2, 2, 1]), false),
        ("3x1x1", torus::block::small([3, 1, 1]), false),
        ("2x2x1 twisted", torus::block::small([2, 2, 1]), true),
    ] {
        let wiring = wiring_of(&cfg, twisted);
        let mut d = driver(&cfg, &wiring);
        for ber in [0.0, 2e-3] {
            let sent = random_traffic(&cfg, 150, &mut rng);
            let values: Vec<Vec<u32>> = (0..cfg.chips())
                .map(|_| (0..240).map(|_| special_f32(&mut rng)).collect())
                .collect();
            let faults = Faults {
                ber,
                seed: rng.gen(),
                ..Faults::default()
            };
            let what = format!("{name}, ber {ber}");
            let (ar, packets) = d
                .allreduce_with_packets(&values, true, &sent, &faults, 400_000)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            check_delivery(&cfg, &sent, &packets, &what);
            let want = golden::torus::allreduce_f32_v2(&cfg, &values);
            for (c, r) in ar.results.iter().enumerate() {
                assert_eq!(r, &want, "{what}: chip {c}'s all-reduce");
            }
            assert!(!ar.alarm, "{what}: alarm");
            println!("{what}: both done in {} cycles", ar.cycles);
        }
    }
}

/// Everything a packet run records, counters included, as one value.
type PacketRecords = (
    Vec<Vec<sim::drivers::torus::Delivery>>,
    Vec<Vec<u64>>,
    [u64; 5],
    bool,
);

fn packet_records(p: &TorusRun) -> PacketRecords {
    let counters = [
        p.cycles,
        p.crc_errors,
        p.retransmits,
        p.link_downs,
        p.corrupted,
    ];
    (p.received.clone(), p.taken.clone(), counters, p.alarm)
}

/// Everything an all-reduce records, counters included, as one value.
type AllReduceRecords = (Vec<Vec<u32>>, Vec<Vec<u64>>, Vec<Vec<u64>>, [u64; 5], bool);

fn allreduce_records(a: &AllReduceRun) -> AllReduceRecords {
    let counters = [
        a.cycles,
        a.crc_errors,
        a.retransmits,
        a.link_downs,
        a.corrupted,
    ];
    (
        a.results.clone(),
        a.result_cycles.clone(),
        a.taken.clone(),
        counters,
        a.alarm,
    )
}

#[test]
fn the_per_chip_models_run_as_the_torus_top() {
    // The driver's default joins one model per chip itself; the torus top
    // (the Verilog `gen` writes, cabled by a wiring) must give the same
    // records, bit for bit and cycle for cycle, with errors injected and on
    // any number of threads. This also holds the top's cabling, stub seeds
    // and counter sums to the driver's.
    let seed = tb::seed::seed_for("torus_layouts");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for (name, cfg, twisted) in [
        ("2x2x1 twisted", torus::block::small([2, 2, 1]), true),
        ("3x2x1", torus::block::small([3, 2, 1]), false),
    ] {
        let wiring = wiring_of(&cfg, twisted);
        let layouts = [
            Layout::Top,
            Layout::Chips { threads: 1 },
            Layout::Chips { threads: 4 },
        ];
        let mut drivers: Vec<TorusDriver> = layouts
            .iter()
            .map(|&l| {
                TorusDriver::with_layout(&cfg, &wiring, l)
                    .unwrap_or_else(|e| panic!("cannot build {cfg} as {l:?}: {e}"))
            })
            .collect();
        for ber in [0.0, 3e-3] {
            let sent = random_traffic(&cfg, 60, &mut rng);
            let values: Vec<Vec<u32>> = (0..cfg.chips())
                .map(|_| (0..90).map(|_| special_f32(&mut rng)).collect())
                .collect();
            let faults = Faults {
                ber,
                seed: rng.gen(),
                ..Faults::default()
            };
            let stall = rng.gen_range(1..3u64);
            let ready = move |t: u64, c: usize| (t + c as u64) % 4 >= stall;
            let mut seen = Vec::new();
            for (d, layout) in drivers.iter_mut().zip(layouts) {
                let what = format!("{name}, ber {ber}, {layout:?}");
                let (ar, packets) = d
                    .allreduce_with_packets(&values, true, &sent, &faults, 400_000)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                let alone = d
                    .run(&sent, &faults, &ready, 200_000)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                check_delivery(&cfg, &sent, &alone, &what);
                seen.push((
                    what,
                    (packet_records(&packets), allreduce_records(&ar)),
                    packet_records(&alone),
                ));
            }
            let (first, rest) = seen.split_first().expect("three layouts");
            for other in rest {
                assert!(
                    first.1 == other.1,
                    "{} and {} differ (shared links)",
                    first.0,
                    other.0
                );
                assert!(
                    first.2 == other.2,
                    "{} and {} differ (packets alone)",
                    first.0,
                    other.0
                );
            }
            if ber > 0.0 {
                let errors = drivers[0]
                    .run(&sent, &faults, &ready, 200_000)
                    .expect("the top again")
                    .crc_errors;
                assert!(errors > 0, "{name}: no error was injected");
            }
            println!("{name}, ber {ber}: the three layouts agree");
        }
    }
}

#[test]
fn saturating_traffic_never_stalls_for_good() {
    // A ring of 4 where every chip sends mostly to the chip two hops on
    // (both ways round the ring are minimal: the router sends half of them
    // up and half down, and half of each cross the dateline): with one VC
    // and such packets always going up, this pattern's channel dependencies
    // would form a cycle; the router must drain it.
    let seed = tb::seed::seed_for("torus_saturation");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let cfg = torus::block::small([4, 1, 1]);
    let one_vc_ties_up = golden::torus::RoutePolicy {
        vcs: golden::torus::VcPolicy::SingleVc,
        ties: golden::torus::Ties::AlwaysUp,
    };
    assert!(!golden::torus::cdg_is_acyclic(&cfg, one_vc_ties_up));
    let mut d = driver(&cfg, &Wiring::identity(&cfg));
    let per_chip = 600;
    let sent: Vec<Vec<(u64, Packet)>> = (0..4u32)
        .map(|src| {
            (0..per_chip)
                .map(|i| {
                    let hops = if rng.gen_bool(0.8) {
                        2
                    } else {
                        rng.gen_range(1..4)
                    };
                    (
                        0,
                        Packet {
                            dest: [(src + hops) % 4, 0, 0],
                            tag: 0,
                            payload: src << 24 | i,
                        },
                    )
                })
                .collect()
        })
        .collect();
    // Receivers that stall in bursts back the traffic up into the network.
    let ready = |t: u64, c: usize| !(t / 40 + c as u64).is_multiple_of(3);
    let run = d
        .run(&sent, &Faults::default(), &ready, 100_000)
        .unwrap_or_else(|e| panic!("saturation: {e}"));
    check_delivery(&cfg, &sent, &run, "saturation");
    println!(
        "saturation: {} packets in {} cycles",
        4 * per_chip,
        run.cycles
    );
}

/// fp32 patterns with every kind of special: NaNs (quiet, signalling, any
/// payload), infinities, zeros of both signs, subnormals, the largest
/// finite values (sums overflow), and ordinary numbers over a wide range.
fn special_f32(rng: &mut ChaCha8Rng) -> u32 {
    let sign = if rng.gen_bool(0.5) { 0x8000_0000 } else { 0 };
    sign | match rng.gen_range(0..12) {
        0 => 0x7fc0_0000 | rng.gen_range(0..0x40_0000),
        1 => 0x7f80_0001 + rng.gen_range(0..0x3f_ffff),
        2 => 0x7f80_0000,
        3 => 0,
        4 | 5 => rng.gen_range(1..0x80_0000),
        6 => 0x7f7f_ffff - rng.gen_range(0..4),
        _ => rng.gen_range(0x3000_0000..0x5000_0000),
    }
}

#[test]
fn allreduce_is_bit_exact_on_every_chip_with_and_without_errors() {
    let seed = tb::seed::seed_for("torus_allreduce");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let cases: Vec<(&str, TorusConfig, bool)> = vec![
        ("1x1x1", torus::block::small([1, 1, 1]), false),
        ("2x1x1", torus::block::small([2, 1, 1]), false),
        ("3x1x1", torus::block::small([3, 1, 1]), false),
        ("2x2x1", torus::block::small([2, 2, 1]), false),
        ("2x2x1 twisted", torus::block::small([2, 2, 1]), true),
    ];
    for (name, cfg, twisted) in cases {
        let wiring = wiring_of(&cfg, twisted);
        let mut d = driver(&cfg, &wiring);
        let chips = cfg.chips();
        for (fp, ber, n) in [(true, 0.0, 150), (false, 0.0, 100), (true, 3e-3, 120)] {
            let values: Vec<Vec<u32>> = (0..chips)
                .map(|_| {
                    (0..n)
                        .map(|_| if fp { special_f32(&mut rng) } else { rng.gen() })
                        .collect()
                })
                .collect();
            let want: Vec<u32> = golden::torus::allreduce_words(&cfg, &values, fp);
            let faults = Faults {
                ber,
                seed: rng.gen(),
                ..Faults::default()
            };
            let what = format!("{name}, {}, ber {ber}", if fp { "fp32" } else { "int32" });
            let run = d
                .allreduce(&values, fp, &faults, 200_000)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(!run.alarm, "{what}: alarm");
            for (c, r) in run.results.iter().enumerate() {
                assert_eq!(r, &want, "{what}: chip {c}");
            }
            if ber > 0.0 && chips > 1 {
                assert!(run.crc_errors > 0, "{what}: no error was injected");
            }
            println!(
                "{what}: {n} elements in {} cycles, {} CRC errors, {} retransmits",
                run.cycles, run.crc_errors, run.retransmits
            );
        }
    }
}

/// The tori the cycle-model tests run, with their wirings: 1x1x1 to 4x1x1,
/// 2x2x1 plain and twisted, 2x2x1 with the router at depth 1 (lookahead
/// routing, the same cycles), 2x2x2 and 3x3x1 with VC buffers of 2, and
/// 4x2x1 (each one chip's model, seconds to build).
fn cycle_model_tori() -> Vec<(&'static str, TorusConfig, Wiring)> {
    let link = torus::block::small_link();
    let small = torus::block::small;
    let with_vc_depth_2 = |dims| TorusConfig::new(dims, 2, link).unwrap();
    let tori = vec![
        ("1x1x1", small([1, 1, 1]), false),
        ("2x1x1", small([2, 1, 1]), false),
        ("3x1x1", small([3, 1, 1]), false),
        ("2x2x1", small([2, 2, 1]), false),
        ("2x2x1 twisted", small([2, 2, 1]), true),
        (
            "2x2x1 depth 1",
            small([2, 2, 1]).with_depth(1).unwrap(),
            false,
        ),
        ("4x1x1", small([4, 1, 1]), false),
        ("4x1x1 1 VC", small([4, 1, 1]).with_vcs(1).unwrap(), false),
        ("4x1x1 4 VCs", small([4, 1, 1]).with_vcs(4).unwrap(), false),
        ("2x2x2 v2", with_vc_depth_2([2, 2, 2]), false),
        (
            "2x2x2 v2 4 VCs",
            with_vc_depth_2([2, 2, 2]).with_vcs(4).unwrap(),
            false,
        ),
        ("3x3x1 v2", with_vc_depth_2([3, 3, 1]), false),
        ("4x2x1", small([4, 2, 1]), false),
    ];
    tori.into_iter()
        .map(|(name, cfg, twisted)| {
            let wiring = wiring_of(&cfg, twisted);
            (name, cfg, wiring)
        })
        .collect()
}

/// The RTL's run against `golden::torus_cycle::packet_cycles` on the same
/// traffic: every packet taken and ejected in the model's cycle, and the
/// same run length. Returns how the model's heads waited.
fn check_packet_cycles(
    cfg: &TorusConfig,
    wiring: &Wiring,
    run: &TorusRun,
    sent: &[Vec<(u64, Packet)>],
    ej_ready: &dyn Fn(u64, usize) -> bool,
    what: &str,
) -> golden::torus_cycle::Waits {
    let model = golden::torus_cycle::packet_cycles(cfg, wiring, sent, ej_ready, 1_000_000)
        .unwrap_or_else(|| panic!("{what}: the model does not finish"));
    for c in 0..cfg.chips() {
        let got: Vec<(Packet, u64)> = run.received[c]
            .iter()
            .map(|r| (r.packet, r.cycle))
            .collect();
        first_difference(
            &got,
            &model.received[c],
            &format!("{what}: ejected at chip {c}"),
        );
        first_difference(
            &run.taken[c],
            &model.taken[c],
            &format!("{what}: taken at chip {c}"),
        );
    }
    assert_eq!(run.cycles, model.cycles, "{what}: cycles");
    model.waits
}

/// Fails at the first element where `got` and `want` differ, naming it.
fn first_difference<T: PartialEq + std::fmt::Debug>(got: &[T], want: &[T], what: &str) {
    if let Some(i) = (0..got.len().min(want.len())).find(|&i| got[i] != want[i]) {
        panic!("{what}: element {i}: RTL {:?}, model {:?}", got[i], want[i]);
    }
    assert_eq!(got.len(), want.len(), "{what}: lengths");
}

/// The destination of a packet from logical chip `src` under a traffic
/// pattern of `sim torus` (uniform, transpose, neighbor), or all to chip 0
/// (hotspot: every chip's packets compete for one ejection port).
fn pattern_dest(cfg: &TorusConfig, pattern: &str, src: usize, rng: &mut ChaCha8Rng) -> [u32; 3] {
    match pattern {
        "hotspot" => [0, 0, 0],
        _ => sim::drivers::torus::traffic_destination(cfg, pattern, src, rng)
            .unwrap_or_else(|| panic!("no traffic pattern {pattern}")),
    }
}

/// `per_chip` packets per chip under `pattern`, created in bursts (gaps of
/// 0 cycles, so packets queue at the injection port) and pauses.
fn timed_traffic(
    cfg: &TorusConfig,
    pattern: &str,
    per_chip: usize,
    rng: &mut ChaCha8Rng,
) -> Vec<Vec<(u64, Packet)>> {
    (0..cfg.chips())
        .map(|src| {
            let mut t = rng.gen_range(0..20u64);
            (0..per_chip)
                .map(|i| {
                    if rng.gen_bool(0.3) {
                        t += rng.gen_range(1..30);
                    }
                    let p = Packet {
                        dest: pattern_dest(cfg, pattern, src, rng),
                        tag: rng.gen_range(0..4),
                        payload: (src as u32) << 24 | i as u32,
                    };
                    (t, p)
                })
                .collect()
        })
        .collect()
}

#[test]
fn host_packets_leave_in_the_cycle_model_s_cycles() {
    let seed = tb::seed::seed_for("torus_packet_cycles");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut lost_arbitrations = 0;
    for (name, cfg, wiring) in cycle_model_tori() {
        let mut d = driver(&cfg, &wiring);
        let mut waits = golden::torus_cycle::Waits::default();
        for pattern in ["uniform", "transpose", "neighbor", "hotspot"] {
            let sent = timed_traffic(&cfg, pattern, 40, &mut rng);
            // Receivers that stall at random (one in `stall` cycles, some
            // not at all) back packets up into the routers.
            let stall = rng.gen_range(1..5u64);
            let salt: u64 = rng.gen();
            let ready = move |t: u64, c: usize| {
                let h = (t ^ salt ^ (c as u64) << 40).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                stall == 1 || !(h >> 32).is_multiple_of(stall)
            };
            let what = format!("{name}, {pattern}");
            let run = d
                .run(&sent, &Faults::default(), &ready, 200_000)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            check_delivery(&cfg, &sent, &run, &what);
            let w = check_packet_cycles(&cfg, &wiring, &run, &sent, &ready, &what);
            println!(
                "{what}: {} cycles as the model; head-cycles waiting for a credit {}, for an arbiter {}",
                run.cycles, w.credit, w.arbitration
            );
            waits.credit += w.credit;
            waits.arbitration += w.arbitration;
        }
        // VC buffers of 2, below the credit round trip, make heads wait
        // for credits.
        if cfg.vc_depth() == 2 {
            assert!(waits.credit > 0, "{name}: no head waited for a credit");
        }
        lost_arbitrations += waits.arbitration;
    }
    // Packets met at outputs (all-to-one traffic makes them meet at the
    // ejection port): the arbiters' order decided cycles.
    assert!(lost_arbitrations > 0, "no arbitration was lost");
}

#[test]
fn allreduce_results_come_out_in_the_cycle_model_s_cycles() {
    let seed = tb::seed::seed_for("torus_allreduce_cycles");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for (name, cfg, wiring) in cycle_model_tori() {
        let mut d = driver(&cfg, &wiring);
        for (fp, n) in [(false, 1), (true, 9), (false, 90)] {
            let values: Vec<Vec<u32>> = (0..cfg.chips())
                .map(|_| {
                    (0..n)
                        .map(|_| if fp { special_f32(&mut rng) } else { rng.gen() })
                        .collect()
                })
                .collect();
            let what = format!(
                "{name}, {}, {n} elements",
                if fp { "fp32" } else { "int32" }
            );
            let run = d
                .allreduce(&values, fp, &Faults::default(), 200_000)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let model =
                golden::torus_v2::run(&cfg, &values, fp, golden::torus_v2::V2Timing::on_torus());
            for c in 0..cfg.chips() {
                let mut taken = vec![0; n];
                for (p, lane) in model.taken[c].iter().enumerate() {
                    for (i, &t) in lane.iter().enumerate() {
                        taken[3 * i + p] = t;
                    }
                }
                first_difference(&run.taken[c], &taken, &format!("{what}: chip {c} took"));
                first_difference(
                    &run.result_cycles[c],
                    &model.result_cycles[c],
                    &format!("{what}: chip {c}'s results"),
                );
                assert_eq!(
                    run.results[c], model.results[c],
                    "{what}: chip {c}'s values"
                );
            }
            assert_eq!(run.cycles, model.cycles, "{what}: cycles");
            println!("{what}: {} cycles as the model", run.cycles);
        }
    }
}

#[test]
fn a_pod_sized_torus_reduces_in_order_v2_in_the_cycle_model_s_cycles() {
    // The benchmark's 4x4x4 torus (the default configuration, 64 chips):
    // every chip's results are order v2's bits (fp32 with specials) or the
    // wrapping sums (int32), every element taken and given in the cycle
    // model's cycles.
    let seed = tb::seed::seed_for("torus_pod");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let cfg = TorusConfig::with_dims([4, 4, 4]).unwrap();
    let mut d = driver(&cfg, &Wiring::identity(&cfg));
    for (fp, n) in [(true, 1024), (false, 200)] {
        let values: Vec<Vec<u32>> = (0..cfg.chips())
            .map(|_| {
                (0..n)
                    .map(|_| if fp { special_f32(&mut rng) } else { rng.gen() })
                    .collect()
            })
            .collect();
        let what = format!("4x4x4, {}, {n} elements", if fp { "fp32" } else { "int32" });
        let run = d
            .allreduce(&values, fp, &Faults::default(), 200_000)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(!run.alarm, "{what}: alarm");
        let want = golden::torus::allreduce_words(&cfg, &values, fp);
        let model =
            golden::torus_v2::run(&cfg, &values, fp, golden::torus_v2::V2Timing::on_torus());
        for c in 0..cfg.chips() {
            assert_eq!(run.results[c], want, "{what}: chip {c}'s values");
            first_difference(
                &run.result_cycles[c],
                &model.result_cycles[c],
                &format!("{what}: chip {c}'s results"),
            );
        }
        assert_eq!(run.cycles, model.cycles, "{what}: cycles");
        println!("{what}: {} cycles as the model", run.cycles);
    }
}

//! The stream CRC: the golden model against an independent software CRC
//! (the `crc` crate's catalog), and the RTL against the golden model, bit
//! for bit and cycle for cycle, on every preset, with random packets and
//! random producer gaps and consumer stalls.

use config::{CrcAlgorithm, StreamCrcConfig};
use golden::stream_crc::{beats_of_bytes, crc_of_bytes, packet_crc, schedule};
use rand::Rng;
use sim::drivers::stream_crc::StreamCrcDriver;
use sim::drivers::DriverError;
use tb::seed::rng_for;

/// The `crc` crate's catalog entry for an algorithm.
fn reference(a: CrcAlgorithm, bytes: &[u8]) -> u64 {
    match a {
        CrcAlgorithm::Crc8 => u64::from(crc::Crc::<u8>::new(&crc::CRC_8_SMBUS).checksum(bytes)),
        CrcAlgorithm::Crc16 => {
            u64::from(crc::Crc::<u16>::new(&crc::CRC_16_IBM_3740).checksum(bytes))
        }
        CrcAlgorithm::Crc32 => {
            u64::from(crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC).checksum(bytes))
        }
        CrcAlgorithm::Crc32c => u64::from(crc::Crc::<u32>::new(&crc::CRC_32_ISCSI).checksum(bytes)),
    }
}

#[test]
fn golden_crcs_are_the_catalogs() {
    let mut rng = rng_for("golden_crcs_are_the_catalogs");
    for a in CrcAlgorithm::ALL {
        assert_eq!(reference(a, b"123456789"), a.params().check, "{a}");
        for _ in 0..2_000 {
            let n = rng.gen_range(0..70);
            let bytes: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
            assert_eq!(
                crc_of_bytes(a, &bytes),
                reference(a, &bytes),
                "{a} {bytes:?}"
            );
        }
    }
}

/// Random packets for `cfg`: 1 to `max_beats` beats each, every bit random.
fn random_packets(
    rng: &mut impl Rng,
    cfg: &StreamCrcConfig,
    count: usize,
    max_beats: usize,
) -> Vec<Vec<Vec<u32>>> {
    let bits = cfg.beat_bits();
    let beat = |rng: &mut dyn rand::RngCore| -> Vec<u32> {
        (0..cfg.beat_words())
            .map(|w| {
                let v: u32 = rng.gen();
                let left = bits - 32 * w as u32;
                if left >= 32 {
                    v
                } else {
                    v & ((1 << left) - 1)
                }
            })
            .collect()
    };
    (0..count)
        .map(|_| {
            let n = rng.gen_range(1..=max_beats);
            (0..n).map(|_| beat(rng)).collect()
        })
        .collect()
}

/// Runs `packets` on the RTL with offer/ready patterns drawn from `rng` and
/// holds the CRCs and the cycles to the golden model.
fn check_run(
    d: &mut StreamCrcDriver,
    packets: &[Vec<Vec<u32>>],
    offer_p: f64,
    ready_p: f64,
    rng: &mut impl Rng,
) {
    let cfg = *d.config();
    let horizon = 40 * (packets.iter().map(Vec::len).sum::<usize>() + packets.len()) + 100;
    let offers: Vec<bool> = (0..horizon).map(|_| rng.gen_bool(offer_p)).collect();
    let readies: Vec<bool> = (0..horizon).map(|_| rng.gen_bool(ready_p)).collect();
    let offer = |t: u64| offers.get(t as usize).copied().unwrap_or(true);
    let ready = |t: u64| readies.get(t as usize).copied().unwrap_or(true);
    let run = d
        .run(packets, &offer, &ready, 10 * horizon as u64)
        .unwrap_or_else(|e| panic!("{cfg}: {e}"));
    let want: Vec<u64> = packets.iter().map(|p| packet_crc(&cfg, p)).collect();
    assert_eq!(run.crcs, want, "{cfg}: CRCs");
    let counts: Vec<usize> = packets.iter().map(Vec::len).collect();
    let model = schedule(&counts, &offer, &ready, 10 * horizon as u64).expect("the model ends");
    assert_eq!(
        run.schedule, model,
        "{cfg}: cycles (offer {offer_p}, ready {ready_p})"
    );
}

#[test]
fn every_preset_matches_golden_bit_for_bit_and_cycle_for_cycle() {
    let mut rng = rng_for("every_preset_matches_golden_bit_for_bit_and_cycle_for_cycle");
    let block = gen::find_block("stream-crc").unwrap();
    for preset in block.presets() {
        let cfg: StreamCrcConfig = *preset
            .config
            .config_any()
            .downcast_ref()
            .expect("the stream CRC's configuration");
        let mut d = StreamCrcDriver::new(&cfg).unwrap();
        for (offer_p, ready_p) in [(1.0, 1.0), (0.6, 0.5), (1.0, 0.2), (0.3, 1.0)] {
            let packets = random_packets(&mut rng, &cfg, 12, 9);
            check_run(&mut d, &packets, offer_p, ready_p, &mut rng);
        }
    }
}

#[test]
fn catalog_check_values_through_the_rtl_at_several_beat_widths() {
    for a in CrcAlgorithm::ALL {
        // "123456789" is 9 bytes: beats of 1, 3 and 9 bytes fill it.
        for bits in [8, 24, 72] {
            let cfg = StreamCrcConfig::new(a, bits).unwrap();
            let beats = beats_of_bytes(&cfg, b"123456789").unwrap();
            let mut d = StreamCrcDriver::new(&cfg).unwrap();
            let run = d.run(&[beats], &|_| true, &|_| true, 100).unwrap();
            assert_eq!(run.crcs, [a.params().check], "{cfg}");
        }
    }
}

#[test]
fn single_beat_packets_back_to_back_take_a_cycle_each() {
    let cfg = StreamCrcConfig::new(CrcAlgorithm::Crc16, 16).unwrap();
    let mut d = StreamCrcDriver::new(&cfg).unwrap();
    let packets: Vec<Vec<Vec<u32>>> = (0..20u32).map(|i| vec![vec![(i * 977) & 0xffff]]).collect();
    let run = d.run(&packets, &|_| true, &|_| true, 1000).unwrap();
    assert_eq!(run.schedule.taken, (0..20).collect::<Vec<u64>>());
    assert_eq!(run.schedule.delivered, (1..21).collect::<Vec<u64>>());
    let want: Vec<u64> = packets.iter().map(|p| packet_crc(&cfg, p)).collect();
    assert_eq!(run.crcs, want);
}

#[test]
fn a_consumer_that_never_takes_stalls_the_stream() {
    let cfg = StreamCrcConfig::DEFAULT;
    let mut d = StreamCrcDriver::new(&cfg).unwrap();
    let packets = vec![vec![vec![1]], vec![vec![2], vec![3]]];
    let err = d.run(&packets, &|_| true, &|_| false, 50).unwrap_err();
    // The first packet's CRC waits, so the second packet's beats are never taken.
    match err {
        DriverError::Stuck { cycles, detail } => {
            assert_eq!(cycles, 50);
            assert!(
                detail.starts_with("1 of 3 beats taken, 0 of 2 CRCs"),
                "{detail}"
            );
        }
        other => panic!("{other}"),
    }
}

#[test]
fn a_flipped_bit_changes_the_crc_and_the_check_sees_it() {
    // The comparison can fail: the RTL's CRC of a packet with one bit
    // flipped differs from the golden CRC of the original.
    let cfg = StreamCrcConfig::new(CrcAlgorithm::Crc32c, 64).unwrap();
    let mut rng = rng_for("a_flipped_bit_changes_the_crc_and_the_check_sees_it");
    let packets = random_packets(&mut rng, &cfg, 1, 4);
    let mut flipped = packets.clone();
    flipped[0][0][1] ^= 1 << rng.gen_range(0..32);
    let mut d = StreamCrcDriver::new(&cfg).unwrap();
    let run = d.run(&flipped, &|_| true, &|_| true, 100).unwrap();
    assert_ne!(run.crcs[0], packet_crc(&cfg, &packets[0]));
    assert_eq!(run.crcs[0], packet_crc(&cfg, &flipped[0]));
}

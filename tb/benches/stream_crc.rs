//! Stream CRC benchmark: beats per cycle against the bound of one, with a
//! ready consumer and with random producer gaps and consumer stalls, and the
//! Verilated model's speed, per beat width. Printed as a Markdown table on
//! stdout, progress on stderr; nothing here passes or fails.
//!
//! The workload: 2,000 packets of 1 to 64 beats (random, seed 1), every bit
//! random. Each row also says whether the RTL's CRCs and cycles equal the
//! golden model's.
//!
//! ```text
//! cargo bench -p tb --bench stream_crc
//! ```

use config::{CrcAlgorithm, StreamCrcConfig};
use golden::stream_crc::{packet_crc, schedule};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sim::drivers::stream_crc::StreamCrcDriver;
use std::time::Instant;

const PACKETS: usize = 2_000;

/// Whether the producer offers (or the consumer is ready) in cycle t.
type Pattern<'a> = &'a dyn Fn(u64) -> bool;
const MAX_BEATS: usize = 64;

fn packets(cfg: &StreamCrcConfig, rng: &mut ChaCha8Rng) -> Vec<Vec<Vec<u32>>> {
    let bits = cfg.beat_bits();
    (0..PACKETS)
        .map(|_| {
            let n = rng.gen_range(1..=MAX_BEATS);
            (0..n)
                .map(|_| {
                    (0..cfg.beat_words())
                        .map(|w| {
                            let left = bits - 32 * w as u32;
                            let v: u32 = rng.gen();
                            if left >= 32 {
                                v
                            } else {
                                v & ((1 << left) - 1)
                            }
                        })
                        .collect()
                })
                .collect()
        })
        .collect()
}

fn main() {
    println!("### stream CRC\n");
    println!(
        "| CRC | beat bits | host | beats | cycles | beats per cycle | Mbit/s at 100 MHz | equals golden | simulated cycles per second |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for (algorithm, bits) in [
        (CrcAlgorithm::Crc32, 8),
        (CrcAlgorithm::Crc32, 64),
        (CrcAlgorithm::Crc32c, 512),
    ] {
        let cfg = StreamCrcConfig::new(algorithm, bits).expect("a valid configuration");
        eprintln!("stream CRC {cfg}: building the model");
        let mut d = StreamCrcDriver::new(&cfg).expect("the model builds");
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let work = packets(&cfg, &mut rng);
        let beats: Vec<usize> = work.iter().map(Vec::len).collect();
        let total: usize = beats.iter().sum();
        let horizon = 4 * (total + PACKETS) + 100;
        let gaps: Vec<bool> = (0..horizon).map(|_| rng.gen_bool(0.8)).collect();
        let stalls: Vec<bool> = (0..horizon).map(|_| rng.gen_bool(0.5)).collect();
        let always = |_: u64| true;
        let offer_some = |t: u64| gaps.get(t as usize).copied().unwrap_or(true);
        let ready_some = |t: u64| stalls.get(t as usize).copied().unwrap_or(true);
        let hosts: [(&str, Pattern, Pattern); 2] = [
            ("always ready", &always, &always),
            ("offers 80 %, ready 50 %", &offer_some, &ready_some),
        ];
        for (name, offer, ready) in hosts {
            let start = Instant::now();
            let run = d
                .run(&work, offer, ready, 10 * horizon as u64)
                .expect("the run ends");
            let seconds = start.elapsed().as_secs_f64();
            let model =
                schedule(&beats, offer, ready, 10 * horizon as u64).expect("the model ends");
            let crcs: Vec<u64> = work.iter().map(|p| packet_crc(&cfg, p)).collect();
            let same = run.crcs == crcs && run.schedule == model;
            let per_cycle = total as f64 / run.schedule.cycles as f64;
            println!(
                "| {} | {bits} | {name} | {total} | {} | {per_cycle:.3} | {:.0} | {} | {:.0} |",
                algorithm.catalog_name(),
                run.schedule.cycles,
                per_cycle * f64::from(bits) * 100.0,
                if same { "yes" } else { "NO" },
                run.schedule.cycles as f64 / seconds
            );
        }
    }
}

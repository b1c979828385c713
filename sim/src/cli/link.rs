//! `sim link`: a byte payload through one ICI link over the serdes stub,
//! between two nodes with traffic both ways, from and to `.npy` files.
//!
//! Node A sends the payload to node B while B sends it back reversed to A;
//! both deliveries are checked, and D (what B received) is written. The link
//! is the default configuration ([`config::IciConfig::DEFAULT`]) with the
//! receive pipeline of `--depth`, the bytes cut into flits as
//! [`config::ici::flits_of`] does.

use super::{bad, broken, Failure};
use config::ici::{bytes_of, flits_of};
use config::IciConfig;
use matrix::Array;
use sim::drivers::ici::{Faults, IciDriver};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct LinkArgs {
    /// P: .npy uint8 array of any shape with at least one byte.
    #[arg(long, value_name = "FILE")]
    payload: PathBuf,
    /// Where to write D, the bytes node B received (same shape as P).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Bit error rate of the lanes, in [0, 1).
    #[arg(long, value_name = "X", default_value_t = 0.0)]
    ber: f64,
    /// Probability that a word is dropped, in [0, 1).
    #[arg(long, value_name = "P", default_value_t = 0.0)]
    drop_rate: f64,
    /// Probability that a word is duplicated, in [0, 1).
    #[arg(long, value_name = "P", default_value_t = 0.0)]
    dup_rate: f64,
    /// Seed of the stubs' LFSRs.
    #[arg(long, value_name = "S", default_value_t = 1)]
    seed: u64,
    /// Receive pipeline depth of both link ends (0..=3; each adds a cycle to the lanes' latency).
    #[arg(long, value_name = "N", default_value_t = 0)]
    depth: u32,
    /// Use the golden model (delivery and the error-free cycle model) instead of the RTL.
    #[arg(long)]
    golden: bool,
    /// Print one JSON line of statistics to stdout.
    #[arg(long)]
    stats: bool,
}

/// Cycles a run may take per flit before the tool gives up on the link
/// (a rate near 1 can make delivery take practically forever).
const CYCLES_PER_FLIT_LIMIT: u64 = 2_000;

pub fn run(args: &LinkArgs) -> Result<(), Failure> {
    for (name, v) in [
        ("--ber", args.ber),
        ("--drop-rate", args.drop_rate),
        ("--dup-rate", args.dup_rate),
    ] {
        if !(0.0..1.0).contains(&v) {
            return Err(bad(format!("{name} must be in [0, 1), got {v}")));
        }
    }
    let faulty = args.ber > 0.0 || args.drop_rate > 0.0 || args.dup_rate > 0.0;
    if args.golden && faulty {
        return Err(bad(
            "--golden models the error-free link (its cycle model); run the RTL for --ber, --drop-rate or --dup-rate",
        ));
    }
    let p = matrix::read_array::<u8>(&args.payload, "P").map_err(bad)?;
    let cfg = IciConfig::DEFAULT
        .with_depth(args.depth)
        .map_err(|e| bad(e.to_string()))?;
    let back: Vec<u8> = p.data.iter().rev().copied().collect();
    let to_b = flits_of(&p.data, &cfg);
    let to_a = flits_of(&back, &cfg);
    let ready = |_| (true, true);
    let budget = 100_000 + CYCLES_PER_FLIT_LIMIT * (to_b.len() + to_a.len()) as u64;
    let (at_b, at_a, cycles, counters) = if args.golden {
        let t = golden::ici::cycle_model(&cfg, to_b.len(), to_a.len(), &ready, budget)
            .ok_or_else(|| broken("the cycle model did not finish"))?;
        let at_b = golden::ici::delivered(&to_b);
        let at_a = golden::ici::delivered(&to_a);
        (at_b, at_a, t.cycles, None)
    } else {
        let faults = Faults {
            ber: args.ber,
            drop_rate: args.drop_rate,
            dup_rate: args.dup_rate,
            seed: args.seed,
        };
        let mut d = IciDriver::new(&cfg).map_err(|e| broken(e.to_string()))?;
        let run = d
            .run(&to_b, &to_a, &faults, &ready, None, budget)
            .map_err(|e| broken(e.to_string()))?;
        if !run.alarms.is_empty() {
            return Err(broken(format!("link alarm: {}", run.alarms.join(", "))));
        }
        let c = (run.a, run.b, run.ab, run.ba);
        (run.at_b, run.at_a, run.cycles, Some(c))
    };
    let d_bytes = bytes_of(&at_b);
    if d_bytes != p.data || bytes_of(&at_a) != back {
        return Err(broken(
            "the link delivered different bytes than were sent (a link-layer bug)",
        ));
    }
    matrix::write_array(
        &args.out,
        &Array {
            shape: p.shape.clone(),
            data: d_bytes,
        },
    )
    .map_err(broken)?;
    if args.stats {
        let raw_bits = 2.0 * f64::from(cfg.frame_bits()) * cycles as f64;
        let payload_bits = 8.0 * 2.0 * p.data.len() as f64;
        let mut line = serde_json::json!({
            "op": "link",
            "backend": if args.golden { "golden" } else { "rtl" },
            "bytes": p.data.len(),
            "flits": to_b.len() + to_a.len(),
            "frame_bits": cfg.frame_bits(),
            "depth": cfg.depth(),
            "payload_bits_per_flit": cfg.payload_bits(),
            "ber": args.ber,
            "drop_rate": args.drop_rate,
            "dup_rate": args.dup_rate,
            "seed": args.seed,
            "cycles": cycles,
            "goodput": payload_bits / raw_bits,
            "crc_errors": 0,
            "retransmits": 0,
            "naks": 0,
            "timeouts": 0,
            "link_downs": 0,
        });
        if let Some((a, b, ab, ba)) = counters {
            let o = line.as_object_mut().expect("an object");
            let sum = |f: fn(&sim::drivers::ici::LinkCounters) -> u64| f(&a) + f(&b);
            o.insert("crc_errors".into(), sum(|c| c.crc_errors).into());
            o.insert("retransmits".into(), sum(|c| c.retransmits).into());
            o.insert("naks".into(), sum(|c| c.naks_sent).into());
            o.insert("timeouts".into(), sum(|c| c.timeouts).into());
            o.insert("link_downs".into(), sum(|c| c.link_downs).into());
            o.insert(
                "words_corrupted".into(),
                (ab.corrupted + ba.corrupted).into(),
            );
            o.insert("words_dropped".into(), (ab.dropped + ba.dropped).into());
            o.insert(
                "words_duplicated".into(),
                (ab.duplicated + ba.duplicated).into(),
            );
            let escapes = (ab.corrupted + ba.corrupted) as i64 - sum(|c| c.crc_errors) as i64;
            o.insert("crc_escapes".into(), escapes.into());
        }
        println!("{line}");
    }
    Ok(())
}

//! `sim allreduce` and `sim torus`: the ICI torus on data files.
//!
//! `allreduce`: V is float32 or int32 [chips, n], chip c = x + X*(y + Y*z)
//! in logical torus coordinates; every chip's result is written as R (same
//! shape and dtype), after checking that every chip ended with the same
//! bits. `torus`: random traffic through the torus's routers, one JSON line
//! of throughput and latency.

use super::{bad, broken, Failure};
use config::{Packet, TorusConfig, Wiring};
use matrix::Array;
use rand::{Rng, SeedableRng};
use sim::drivers::ici::Faults;
use sim::drivers::torus::{traffic_destination, TorusDriver};
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct AllReduceArgs {
    /// Torus sizes XxYxZ, each 1..=4.
    #[arg(long, value_name = "XxYxZ")]
    dims: String,
    /// V: float32 or int32 .npy array [chips, n].
    #[arg(long = "in", value_name = "FILE")]
    input: PathBuf,
    /// Where to write R: every chip's result, [chips, n], V's dtype.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Wiring file: `x y z chip` per line, a permutation of the chips.
    #[arg(long, value_name = "FILE")]
    wiring: Option<PathBuf>,
    /// Bit error rate of every link's lanes, in [0, 1).
    #[arg(long, value_name = "X", default_value_t = 0.0)]
    ber: f64,
    /// Seed of the stubs' LFSRs.
    #[arg(long, value_name = "S", default_value_t = 1)]
    seed: u64,
    /// Use the golden model instead of the RTL.
    #[arg(long)]
    golden: bool,
    /// Print one JSON line of statistics to stdout (with `link_bound`, the
    /// busiest link's elements in the bandwidth-optimal schedule of
    /// all-reduce order v2, and `fraction`, that bound over the cycles).
    #[arg(long)]
    stats: bool,
}

#[derive(clap::Args, Debug)]
pub struct TorusArgs {
    /// Torus sizes XxYxZ, each 1..=4.
    #[arg(long, value_name = "XxYxZ")]
    dims: String,
    /// uniform (random destinations), transpose (chip (x,y,z) to (y,x,z)
    /// when X = Y, else to the chip of the reversed number) or neighbor
    /// (the next chip up in X).
    #[arg(long, value_name = "PATTERN")]
    traffic: String,
    /// Packets each chip sends.
    #[arg(long, value_name = "N")]
    packets: u64,
    /// Wiring file: `x y z chip` per line, a permutation of the chips.
    #[arg(long, value_name = "FILE")]
    wiring: Option<PathBuf>,
    /// Packets per chip per cycle offered, in (0, 1] (1: as fast as taken).
    #[arg(long, value_name = "R", default_value_t = 1.0)]
    rate: f64,
    /// Seed of the traffic.
    #[arg(long, value_name = "S", default_value_t = 1)]
    seed: u64,
    /// Print one JSON line of statistics to stdout (always printed).
    #[arg(long)]
    stats: bool,
}

fn config_of(dims: &str, wiring: Option<&Path>) -> Result<(TorusConfig, Wiring), Failure> {
    let dims = TorusConfig::parse_dims(dims).map_err(|e| bad(e.to_string()))?;
    let cfg = TorusConfig::with_dims(dims).map_err(|e| bad(e.to_string()))?;
    let wiring = match wiring {
        None => Wiring::identity(&cfg),
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .map_err(|e| bad(format!("cannot read the wiring file {}: {e}", p.display())))?;
            Wiring::parse(&cfg, &text).map_err(|e| bad(format!("{}: {e}", p.display())))?
        }
    };
    Ok((cfg, wiring))
}

/// Cycles a run may take per element before the tool gives up.
const CYCLES_PER_ELEMENT_LIMIT: u64 = 500;

pub fn run_allreduce(args: &AllReduceArgs) -> Result<(), Failure> {
    if !(0.0..1.0).contains(&args.ber) {
        return Err(bad(format!("--ber must be in [0, 1), got {}", args.ber)));
    }
    if args.golden && args.ber > 0.0 {
        return Err(bad(
            "--golden computes the result (link errors cannot change it); run the RTL for --ber",
        ));
    }
    let (cfg, wiring) = config_of(&args.dims, args.wiring.as_deref())?;
    let ts = matrix::dtype_of(&args.input, "V").map_err(bad)?;
    let fp = ts.ends_with("f4");
    let (shape, flat): (Vec<u64>, Vec<u32>) = if fp {
        let a: Array<f32> = matrix::read_array(&args.input, "V").map_err(bad)?;
        (a.shape, a.data.into_iter().map(f32::to_bits).collect())
    } else {
        let a: Array<i32> = matrix::read_array(&args.input, "V").map_err(|_| {
            bad(format!(
                "V: {} holds '{ts}', expected float32 or int32",
                args.input.display()
            ))
        })?;
        (a.shape, a.data.into_iter().map(|x| x as u32).collect())
    };
    let chips = cfg.chips();
    if shape.len() != 2 || shape[0] != chips as u64 {
        return Err(bad(format!(
            "V has shape {shape:?}; a {} torus needs [{chips}, n]",
            args.dims
        )));
    }
    let n = shape[1] as usize;
    let most = 3usize << config::AllreduceV2::INDEX_BITS;
    if n > most && !args.golden {
        return Err(bad(format!(
            "V has {n} elements per chip; the torus's all-reduce engine indexes at most {most}"
        )));
    }
    let values: Vec<Vec<u32>> = flat.chunks(n).map(<[u32]>::to_vec).collect();
    let (results, stats) = if args.golden {
        let r = golden::torus::allreduce_words(&cfg, &values, fp);
        (vec![r; chips], None)
    } else {
        let mut d = TorusDriver::new(&cfg, &wiring).map_err(driver_failure)?;
        let faults = Faults {
            ber: args.ber,
            seed: args.seed,
            ..Faults::default()
        };
        let budget = 100_000 + CYCLES_PER_ELEMENT_LIMIT * n as u64;
        let run = d
            .allreduce(&values, fp, &faults, budget)
            .map_err(|e| broken(e.to_string()))?;
        if run.alarm {
            return Err(broken("torus alarm (a buffer overflow or credit error)"));
        }
        (run.results.clone(), Some(run))
    };
    if results.iter().any(|r| *r != results[0]) {
        return Err(broken("the chips ended with different bits (a torus bug)"));
    }
    let data: Vec<u32> = results.concat();
    if fp {
        let a = Array {
            shape: shape.clone(),
            data: data.into_iter().map(f32::from_bits).collect::<Vec<f32>>(),
        };
        matrix::write_array(&args.out, &a).map_err(broken)?;
    } else {
        let a = Array {
            shape: shape.clone(),
            data: data.into_iter().map(|x| x as i32).collect::<Vec<i32>>(),
        };
        matrix::write_array(&args.out, &a).map_err(broken)?;
    }
    if args.stats {
        let mut line = serde_json::json!({
            "op": "allreduce",
            "backend": if args.golden { "golden" } else { "rtl" },
            "dims": args.dims,
            "chips": chips,
            "elements": n,
            "dtype": if fp { "float32" } else { "int32" },
            "ber": args.ber,
            "seed": args.seed,
            "link_bound": golden::torus::v2_link_bound(&cfg, n),
        });
        if let Some(r) = stats {
            let o = line.as_object_mut().expect("an object");
            o.insert("cycles".into(), r.cycles.into());
            let bound = golden::torus::v2_link_bound(&cfg, n) as f64;
            o.insert("fraction".into(), (bound / r.cycles.max(1) as f64).into());
            o.insert("crc_errors".into(), r.crc_errors.into());
            o.insert("retransmits".into(), r.retransmits.into());
            o.insert("link_downs".into(), r.link_downs.into());
            o.insert("words_corrupted".into(), r.corrupted.into());
        }
        println!("{line}");
    }
    Ok(())
}

pub fn run_torus(args: &TorusArgs) -> Result<(), Failure> {
    if !["uniform", "transpose", "neighbor"].contains(&args.traffic.as_str()) {
        return Err(bad(format!(
            "--traffic must be uniform, transpose or neighbor, got '{}'",
            args.traffic
        )));
    }
    if args.packets == 0 || args.packets > 1_000_000 {
        return Err(bad(format!(
            "--packets must be between 1 and 1000000, got {}",
            args.packets
        )));
    }
    if !(args.rate > 0.0 && args.rate <= 1.0) {
        return Err(bad(format!("--rate must be in (0, 1], got {}", args.rate)));
    }
    let (cfg, wiring) = config_of(&args.dims, args.wiring.as_deref())?;
    let stats = traffic(
        &cfg,
        &wiring,
        &args.traffic,
        args.packets,
        args.rate,
        args.seed,
    )?;
    println!("{stats}");
    Ok(())
}

/// Runs a traffic pattern on the RTL and returns its statistics line.
pub fn traffic(
    cfg: &TorusConfig,
    wiring: &Wiring,
    pattern: &str,
    packets: u64,
    rate: f64,
    seed: u64,
) -> Result<serde_json::Value, Failure> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let n = cfg.chips();
    let sent: Vec<Vec<(u64, Packet)>> = (0..n)
        .map(|src| {
            let mut t = 0u64;
            (0..packets)
                .map(|i| {
                    if rate < 1.0 {
                        // Bernoulli arrivals: a geometric gap.
                        while !rng.gen_bool(rate) {
                            t += 1;
                        }
                    }
                    let p = Packet {
                        dest: traffic_destination(cfg, pattern, src, &mut rng)
                            .expect("the pattern was checked"),
                        tag: 0,
                        payload: (src as u32) << 20 | i as u32,
                    };
                    let at = t;
                    t += 1;
                    (if rate < 1.0 { at } else { 0 }, p)
                })
                .collect()
        })
        .collect();
    let mut d = TorusDriver::new(cfg, wiring).map_err(driver_failure)?;
    let budget = 100_000 + 200 * packets * n as u64;
    let run = d
        .run(&sent, &Faults::default(), &|_, _| true, budget)
        .map_err(|e| broken(e.to_string()))?;
    if run.alarm {
        return Err(broken("torus alarm (a buffer overflow or credit error)"));
    }
    // Latency: from a packet's creation to its delivery (the payload names
    // the source and the packet's index there).
    let mut lat = Vec::new();
    for got in &run.received {
        for r in got {
            let (s, k) = (
                (r.packet.payload >> 20) as usize,
                (r.packet.payload & 0xf_ffff) as usize,
            );
            lat.push(r.cycle - sent[s][k].0);
        }
    }
    lat.sort_unstable();
    let mean = lat.iter().sum::<u64>() as f64 / lat.len().max(1) as f64;
    let p99 = lat
        .get((lat.len() * 99).div_ceil(100).saturating_sub(1))
        .copied()
        .unwrap_or(0);
    let total = packets * n as u64;
    Ok(serde_json::json!({
        "op": "torus",
        "dims": format!("{}x{}x{}", cfg.dims()[0], cfg.dims()[1], cfg.dims()[2]),
        "traffic": pattern,
        "packets": total,
        "offered": rate,
        "cycles": run.cycles,
        "throughput": total as f64 / run.cycles as f64 / n as f64,
        "latency_mean": mean,
        "latency_p99": p99,
        "seed": seed,
    }))
}

/// A driver that cannot start: a bad setting (`SYSTOLE_SIM_THREADS`) is the
/// user's input, anything else the model's.
fn driver_failure(e: sim::drivers::DriverError) -> Failure {
    match e {
        sim::drivers::DriverError::Input(m) => bad(m),
        e => broken(e.to_string()),
    }
}

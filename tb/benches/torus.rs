//! The ICI torus benchmark, on the default configuration of each size
//! (`config::TorusConfig::with_dims`: VC buffers of 24, links with a
//! 32-flit window and receive buffer, 4 cycles in the stub), in RTL through
//! `sim::drivers::torus`. Nothing here passes or fails; it prints Markdown
//! tables on stdout (progress on stderr) and writes the load sweep as CSV
//! for the plot.
//!
//! 1. `allreduce`: fp32 all-reduces of 1,024, 8,192 and 65,536 elements
//!    per chip (results checked against `golden::torus::allreduce_f32_v2`),
//!    cycles against the link bound: the busiest link's elements in
//!    all-reduce order v2's schedule (`golden::torus::v2_link_bound`;
//!    n(P - 1)/(3P) on a k x k x k torus, one element per link and cycle),
//!    and the model's speed on each.
//! 2. `load`: uniform random traffic, throughput (packets delivered per chip
//!    per cycle, over the whole run and, as "accepted", while every chip
//!    still injects) and latency (mean and p99, creation to delivery)
//!    against the offered load (Bernoulli arrivals per chip and cycle),
//!    written to
//!    `build/bench/torus_load.csv`; `scripts/plot_torus_load.sh` draws
//!    `docs/torus_load.png` from it.
//! 3. `build`: each model's cold Verilator build time and its simulation
//!    speed (cycles per second through the driver), printed with the
//!    tables above.
//!
//! The torus is 4x4x4 (64 chips) unless `SYSTOLE_TORUS_DIMS` says
//! otherwise (e.g. `2x2x1`), with two VCs per port unless
//! `SYSTOLE_TORUS_VCS` says 1 or 4. The driver's default layout builds one
//! chip's model (about 10 s cold for 4x4x4) and steps the chips on as many
//! threads as the machine has cores (`SYSTOLE_SIM_THREADS`).
//!
//! ```sh
//! cargo bench -p tb --bench torus                             # 4x4x4, every table
//! SYSTOLE_TORUS_DIMS=2x2x1 cargo bench -p tb --bench torus    # a small torus
//! cargo bench -p tb --bench torus -- load                     # one table
//! ```

use config::{Packet, TorusConfig, Wiring};
use rand::{Rng, SeedableRng};
use sim::drivers::ici::Faults;
use sim::drivers::torus::TorusDriver;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

const DIMS_ENV: &str = "SYSTOLE_TORUS_DIMS";
const VCS_ENV: &str = "SYSTOLE_TORUS_VCS";
const TABLES: [&str; 2] = ["allreduce", "load"];
const ELEMENTS: [usize; 3] = [1024, 8192, 65536];
const LOADS: [f64; 9] = [0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0];
/// Packets each chip sends per load point.
const PACKETS: u64 = 1000;
/// Cycles before the accepted throughput's window opens (the network
/// filling).
const WARMUP: u64 = 100;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let want = |t: &str| args.is_empty() || args.iter().any(|a| a == t);
    let dims = std::env::var(DIMS_ENV).unwrap_or_else(|_| "4x4x4".into());
    let dims = TorusConfig::parse_dims(&dims).expect("SYSTOLE_TORUS_DIMS");
    let vcs = std::env::var(VCS_ENV).map_or(Ok(config::TORUS_VCS), |v| v.parse());
    let cfg = TorusConfig::with_dims(dims)
        .and_then(|c| c.with_vcs(vcs.expect("SYSTOLE_TORUS_VCS: 1, 2 or 4")))
        .expect("a valid torus");
    let wiring = Wiring::identity(&cfg);
    eprintln!("building the {cfg} model...");
    let t = Instant::now();
    let mut d = TorusDriver::new(&cfg, &wiring).expect("the torus model");
    let build = t.elapsed().as_secs_f64();
    println!(
        "## ICI torus {}x{}x{} ({} chips)\n\nModel build (Verilator, cold unless cached): {build:.1} s\n",
        dims[0],
        dims[1],
        dims[2],
        cfg.chips()
    );
    let mut speed = Vec::new();
    if want(TABLES[0]) {
        println!(
            "| elements | chips | cycles | link bound | of bound | cycles per element | cycles/s |"
        );
        println!("| --- | --- | --- | --- | --- | --- | --- |");
        for n in ELEMENTS {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
            let values: Vec<Vec<u32>> = (0..cfg.chips())
                .map(|_| {
                    (0..n)
                        .map(|_| {
                            rng.gen_range(0x3000_0000u32..0x5000_0000)
                                | (rng.gen::<u32>() & 0x8000_0000)
                        })
                        .collect()
                })
                .collect();
            let want = golden::torus::allreduce_f32_v2(&cfg, &values);
            let t = Instant::now();
            let run = d
                .allreduce(&values, true, &Faults::default(), 10_000_000)
                .expect("the all-reduce finishes");
            let secs = t.elapsed().as_secs_f64();
            assert!(
                run.results.iter().all(|r| *r == want),
                "all-reduce mismatch"
            );
            let bound = golden::torus::v2_link_bound(&cfg, n) as f64;
            println!(
                "| {n} | {} | {} | {bound} | {:.3} | {:.3} | {:.0} |",
                cfg.chips(),
                run.cycles,
                bound / run.cycles as f64,
                run.cycles as f64 / n as f64,
                run.cycles as f64 / secs
            );
            speed.push(("all-reduce", run.cycles, secs));
        }
        println!();
    }
    if want(TABLES[1]) {
        let mut rows = Vec::new();
        println!(
            "| offered (packets/chip/cycle) | throughput | accepted | latency mean | latency p99 | cycles |"
        );
        println!("| --- | --- | --- | --- | --- | --- |");
        for &load in &LOADS {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
            let n = cfg.chips();
            let sent: Vec<Vec<(u64, Packet)>> = (0..n)
                .map(|src| {
                    let mut t = 0u64;
                    (0..PACKETS)
                        .map(|i| {
                            while !rng.gen_bool(load) {
                                t += 1;
                            }
                            let p = Packet {
                                dest: cfg.coords(rng.gen_range(0..n)),
                                tag: 0,
                                payload: (src as u32) << 20 | i as u32,
                            };
                            t += 1;
                            (t - 1, p)
                        })
                        .collect()
                })
                .collect();
            let t = Instant::now();
            let run = d
                .run(&sent, &Faults::default(), &|_, _| true, 10_000_000)
                .expect("the traffic drains");
            speed.push(("traffic", run.cycles, t.elapsed().as_secs_f64()));
            let mut lat: Vec<u64> = run
                .received
                .iter()
                .flatten()
                .map(|r| {
                    let s = (r.packet.payload >> 20) as usize;
                    let k = (r.packet.payload & 0xf_ffff) as usize;
                    r.cycle - sent[s][k].0
                })
                .collect();
            lat.sort_unstable();
            let mean = lat.iter().sum::<u64>() as f64 / lat.len() as f64;
            let p99 = lat[(lat.len() * 99).div_ceil(100) - 1];
            // Over the whole run, the drain at the end included.
            let thr = (PACKETS * n as u64) as f64 / run.cycles as f64 / n as f64;
            // Accepted: deliveries per chip and cycle while every chip still
            // injects (from a warm-up to the first chip's last injection),
            // the steady state a saturation figure describes.
            let from = WARMUP;
            let to = run.taken.iter().map(|t| *t.last().unwrap()).min().unwrap();
            let accepted = if to > from {
                let got = run
                    .received
                    .iter()
                    .flatten()
                    .filter(|r| (from..to).contains(&r.cycle))
                    .count();
                got as f64 / (to - from) as f64 / n as f64
            } else {
                f64::NAN
            };
            println!(
                "| {load} | {thr:.3} | {accepted:.3} | {mean:.1} | {p99} | {} |",
                run.cycles
            );
            eprintln!("load {load}: done");
            rows.push((load, thr, mean, p99));
        }
        println!();
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../build/bench");
        std::fs::create_dir_all(&dir).expect("build/bench");
        let path = dir.join("torus_load.csv");
        let mut f = std::fs::File::create(&path).expect("the CSV");
        writeln!(f, "offered,throughput,latency_mean,latency_p99").unwrap();
        for (l, t, m, p) in rows {
            writeln!(f, "{l},{t},{m},{p}").unwrap();
        }
        eprintln!("wrote {}", path.display());
    }
    println!("| run | cycles | seconds | cycles/s |");
    println!("| --- | --- | --- | --- |");
    for (what, cycles, secs) in speed {
        println!(
            "| {what} | {cycles} | {secs:.2} | {:.0} |",
            cycles as f64 / secs
        );
    }
}

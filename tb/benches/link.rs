//! The ICI link's reliability soak and goodput benchmark, on the default
//! configuration (`config::IciConfig::DEFAULT`: 64-byte flits in 571-bit
//! frames) in RTL: the Verilated pair of link ends over the serdes stubs
//! (`sim::drivers::ici`), traffic both ways at once, receivers always ready.
//! Nothing here passes or fails; it prints Markdown tables on stdout
//! (progress on stderr) and writes the sweep as CSV for the plot.
//!
//! 1. `soak`: `SYSTOLE_LINK_SOAK_FLITS` flits (10,000,000 by default; half
//!    each way) at a bit error rate of 1e-4 with word drop and duplicate
//!    rates of 1e-3. Every flit carries its index in the stream (bytes 0..8,
//!    or all of a narrower flit: the index's low bytes)
//!    and bytes derived from it, so the receiving side counts what the link
//!    must never do: flits lost, delivered twice, delivered out of order, or
//!    delivered with other bytes than were sent. CRC escapes are the words
//!    the stubs corrupted that arrived minus the words the receivers' CRC
//!    check rejected (expected 0: the stub flips at most four bits per word,
//!    and CRC-32 detects every such pattern on 571-bit frames). The stream
//!    is run in rounds of [`ROUND_FLITS`] flits each way, each from reset
//!    with its own stub seed (so one round's buffers stay small); the
//!    counters are the sums.
//! 2. `sweep`: goodput and retransmit rate against the bit error rate (0,
//!    1e-6, 1e-5, 1e-4, 1e-3; no drops or duplicates, so the curve shows the
//!    CRC and replay alone), written to `build/bench/ici_ber_sweep.csv`;
//!    `scripts/plot_ici_goodput.sh` draws `docs/ici_goodput.png` from it.
//!
//! Goodput is payload bits delivered per raw lane bit, both directions:
//! 512 x flits / (2 x 571 x cycles). At BER 0 it is bounded by the frame's
//! payload share, 512 / 571 = 0.897 (the header and CRC overhead, printed
//! with the table); the cycles of a round include its pipeline fill and
//! drain. The retransmit rate is retransmitted frames per flit sent.
//!
//! ```sh
//! cargo bench -p tb --bench link                          # both tables: about 10 minutes
//! SYSTOLE_BENCH_QUICK=1 cargo bench -p tb --bench link    # 200k-flit soak, 20k-flit sweep points
//! cargo bench -p tb --bench link -- sweep                 # one table
//! SYSTOLE_LINK_SOAK_FLITS=1000000 SYSTOLE_SEED=7 cargo bench -p tb --bench link -- soak
//! SYSTOLE_LINK_PRESET=fmax SYSTOLE_BENCH_QUICK=1 cargo bench -p tb --bench link -- sweep
//! SYSTOLE_LINK_PRESET=fmax SYSTOLE_LINK_DEPTH=0 SYSTOLE_BENCH_QUICK=1 cargo bench -p tb --bench link -- sweep
//! ```
//!
//! `SYSTOLE_LINK_PRESET` runs another of the `ici` block's presets instead
//! of the default, `SYSTOLE_LINK_DEPTH` another receive pipeline depth (the
//! preset's timer must still exceed the longer round trip); the sweep's CSV
//! then names both (`ici_ber_sweep_fmax_d0.csv`).
//!
//! The soak runs at about 62,000 flits a second on one core (10M flits in
//! under 3 minutes); the sweep's BER 1e-3 point, where most frames are hit,
//! takes about 4 of its 6 minutes. The soak's stub seeds start at
//! `SYSTOLE_SEED` when it is set (a fixed seed otherwise, so the table
//! reproduces); the sweep's are fixed.

use config::ici::Flit;
use config::IciConfig;
use sim::drivers::ici::{Faults, IciDriver, LinkRun};
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

const QUICK_ENV: &str = "SYSTOLE_BENCH_QUICK";
const SOAK_FLITS_ENV: &str = "SYSTOLE_LINK_SOAK_FLITS";
const PRESET_ENV: &str = "SYSTOLE_LINK_PRESET";
const DEPTH_ENV: &str = "SYSTOLE_LINK_DEPTH";
const TABLES: [&str; 2] = ["soak", "sweep"];
/// Flits each way in one round (a run from reset).
const ROUND_FLITS: usize = 50_000;
/// The soak's error rates, as issue 12 states them.
const SOAK_BER: f64 = 1e-4;
const SOAK_DROP: f64 = 1e-3;
const SOAK_DUP: f64 = 1e-3;
const SWEEP_BERS: [f64; 5] = [0.0, 1e-6, 1e-5, 1e-4, 1e-3];
/// A round may take this many cycles per flit before it counts as stuck
/// (an error-free round takes about one).
const CYCLES_PER_FLIT_LIMIT: u64 = 200;

struct Options {
    quick: bool,
    filters: Vec<String>,
}

impl Options {
    fn from_env() -> Options {
        let mut quick = std::env::var(QUICK_ENV).is_ok_and(|v| !v.is_empty() && v != "0");
        let mut filters = Vec::new();
        for arg in std::env::args().skip(1) {
            if arg == "--quick" {
                quick = true;
            } else if !arg.starts_with('-') {
                filters.push(arg);
            }
        }
        Options { quick, filters }
    }

    fn wants(&self, table: &str) -> bool {
        self.filters.is_empty() || self.filters.iter().any(|f| table.contains(f.as_str()))
    }
}

/// A 64-bit mix (SplitMix64's finaliser): the bytes of flit `index` of
/// stream `stream` after its index.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Flit `index` of a stream: the index in bytes 0..8 (little-endian; a
/// narrower flit keeps its low bytes), then
/// bytes that depend on the index and the stream, all W bytes valid;
/// packets of four flits.
fn flit(cfg: &IciConfig, stream: u64, index: u64) -> Flit {
    let w = cfg.flit_bytes() as usize;
    let mut data = Vec::with_capacity(w);
    data.extend_from_slice(&index.to_le_bytes());
    let mut k = 0u64;
    while data.len() < w {
        let word = mix(index ^ stream.rotate_left(17) ^ k.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        data.extend_from_slice(&word.to_le_bytes());
        k += 1;
    }
    data.truncate(w);
    Flit {
        data,
        last: index % 4 == 3,
        len: (w - 1) as u8,
    }
}

/// What a receiver got, judged against the stream it should have got.
#[derive(Debug, Default, Clone, Copy)]
struct Delivery {
    sent: u64,
    lost: u64,
    duplicated: u64,
    reordered: u64,
    /// Delivered with other bytes, `last` or `len` than were sent.
    altered: u64,
}

impl Delivery {
    fn add(&mut self, o: &Delivery) {
        self.sent += o.sent;
        self.lost += o.lost;
        self.duplicated += o.duplicated;
        self.reordered += o.reordered;
        self.altered += o.altered;
    }
}

/// Judges `got` against flits `first..first + n` of `stream`.
fn judge(cfg: &IciConfig, stream: u64, first: u64, n: usize, got: &[Flit]) -> Delivery {
    let index_bits = 8 * cfg.flit_bytes().min(8);
    assert!(
        index_bits == 64 || (n as u64) <= 1u64 << index_bits,
        "{}-byte flits cannot number a round of {n} flits",
        cfg.flit_bytes()
    );
    let mut seen = vec![false; n];
    let mut d = Delivery {
        sent: n as u64,
        ..Delivery::default()
    };
    let mut highest: Option<u64> = None;
    for f in got {
        // A flit narrower than 8 bytes carries the index's low bytes: the
        // index is the one of this round with those bytes.
        let bytes = f.data.len().min(8);
        let mut low = [0u8; 8];
        low[..bytes].copy_from_slice(&f.data[..bytes]);
        let low = u64::from_le_bytes(low);
        let index = if bytes == 8 {
            low
        } else {
            let modulus = 1u64 << (8 * bytes);
            first + (low.wrapping_sub(first) & (modulus - 1))
        };
        let Some(slot) = index
            .checked_sub(first)
            .filter(|&k| k < n as u64)
            .map(|k| k as usize)
        else {
            // An index this round never sent: the bytes were altered.
            d.altered += 1;
            continue;
        };
        if *f != flit(cfg, stream, index) {
            d.altered += 1;
        }
        if seen[slot] {
            d.duplicated += 1;
            continue;
        }
        seen[slot] = true;
        if highest.is_some_and(|h| index < h) {
            d.reordered += 1;
        }
        highest = Some(highest.map_or(index, |h| h.max(index)));
    }
    d.lost = seen.iter().filter(|s| !**s).count() as u64;
    d
}

/// The sums over the rounds of one setting.
#[derive(Debug, Default, Clone, Copy)]
struct Totals {
    delivery: Delivery,
    cycles: u64,
    crc_errors: u64,
    corrupted_arrived: u64,
    retransmits: u64,
    naks: u64,
    timeouts: u64,
    link_downs: u64,
    dropped: u64,
    duplicated_words: u64,
    alarms: u64,
    stuck_rounds: u64,
    seconds: f64,
}

impl Totals {
    fn add_run(&mut self, run: &LinkRun) {
        self.cycles += run.cycles;
        self.crc_errors += run.a.crc_errors + run.b.crc_errors;
        self.corrupted_arrived += run.ab.corrupted + run.ba.corrupted;
        self.retransmits += run.a.retransmits + run.b.retransmits;
        self.naks += run.a.naks_sent + run.b.naks_sent;
        self.timeouts += run.a.timeouts + run.b.timeouts;
        self.link_downs += run.a.link_downs + run.b.link_downs;
        self.dropped += run.ab.dropped + run.ba.dropped;
        self.duplicated_words += run.ab.duplicated + run.ba.duplicated;
        self.alarms += run.alarms.len() as u64;
    }

    /// Corrupted words that arrived and passed the CRC check.
    fn crc_escapes(&self) -> i64 {
        self.corrupted_arrived as i64 - self.crc_errors as i64
    }

    fn goodput(&self, cfg: &IciConfig) -> f64 {
        let delivered = self.delivery.sent - self.delivery.lost;
        let payload = delivered as f64 * f64::from(cfg.payload_bits());
        payload / (2.0 * f64::from(cfg.frame_bits()) * self.cycles as f64)
    }

    fn retransmit_rate(&self) -> f64 {
        self.retransmits as f64 / self.delivery.sent as f64
    }
}

/// Runs `flits` flits (half each way) at `faults`' rates, in rounds of
/// [`ROUND_FLITS`] each way; round r uses stub seed `faults.seed + r`.
fn soak(d: &mut IciDriver, flits: u64, faults: &Faults, label: &str) -> Totals {
    let cfg = *d.config();
    let per_way = flits / 2;
    let rounds = per_way.div_ceil(ROUND_FLITS as u64);
    let mut t = Totals::default();
    let start = Instant::now();
    let mut first = 0u64;
    for r in 0..rounds {
        let n = (per_way - first).min(ROUND_FLITS as u64) as usize;
        let to_b: Vec<Flit> = (0..n as u64).map(|i| flit(&cfg, 0, first + i)).collect();
        let to_a: Vec<Flit> = (0..n as u64).map(|i| flit(&cfg, 1, first + i)).collect();
        let round_faults = Faults {
            seed: faults.seed.wrapping_add(r),
            ..*faults
        };
        let budget = 10_000 + CYCLES_PER_FLIT_LIMIT * 2 * n as u64;
        match d.run(&to_b, &to_a, &round_faults, &|_| (true, true), None, budget) {
            Ok(run) => {
                t.add_run(&run);
                t.delivery.add(&judge(&cfg, 0, first, n, &run.at_b));
                t.delivery.add(&judge(&cfg, 1, first, n, &run.at_a));
            }
            Err(e) => {
                // Counted as lost in full: the table shows it, the run goes on.
                eprintln!("{label}: round {r} (seed {}): {e}", round_faults.seed);
                t.stuck_rounds += 1;
                t.delivery.sent += 2 * n as u64;
                t.delivery.lost += 2 * n as u64;
            }
        }
        first += n as u64;
        let done = 2 * first;
        let secs = start.elapsed().as_secs_f64();
        eprintln!(
            "{label}: round {}/{rounds}, {done} flits, {:.0} s, {:.0} flits/s",
            r + 1,
            secs,
            done as f64 / secs
        );
    }
    t.seconds = start.elapsed().as_secs_f64();
    t
}

fn soak_table(d: &mut IciDriver, quick: bool) {
    let cfg = *d.config();
    let flits = match std::env::var(SOAK_FLITS_ENV) {
        Ok(s) => s
            .trim()
            .parse::<u64>()
            .unwrap_or_else(|_| panic!("{SOAK_FLITS_ENV} must be a whole number, got '{s}'")),
        Err(_) if quick => 200_000,
        Err(_) => 10_000_000,
    };
    // A fixed default seed, so the table reproduces; SYSTOLE_SEED draws others.
    let seed = match std::env::var(tb::seed::SEED_VAR) {
        Ok(s) => s
            .trim()
            .parse::<u64>()
            .unwrap_or_else(|_| panic!("{} must be a decimal u64, got '{s}'", tb::seed::SEED_VAR)),
        Err(_) => 0x1c1_50a4,
    };
    let faults = Faults {
        ber: SOAK_BER,
        drop_rate: SOAK_DROP,
        dup_rate: SOAK_DUP,
        seed,
    };
    println!("## soak\n");
    println!(
        "{cfg}; BER {SOAK_BER:e}, drop rate {SOAK_DROP:e}, duplicate rate {SOAK_DUP:e}; \
         rounds of {ROUND_FLITS} flits each way, stub seeds from {:#x}.\n",
        faults.seed
    );
    let t = soak(d, flits, &faults, "soak");
    let del = &t.delivery;
    println!(
        "| flits | lost | duplicated | reordered | altered | CRC errors detected | CRC escapes | \
         retransmits | NAKs | timeouts | link-downs | words dropped | words duplicated | alarms | \
         stuck rounds | cycles | goodput | sim speed |"
    );
    println!("|{}", " --- |".repeat(18));
    println!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.3} | \
         {:.0} cycles/s, {:.0} flits/s ({:.0} s) |\n",
        del.sent,
        del.lost,
        del.duplicated,
        del.reordered,
        del.altered,
        t.crc_errors,
        t.crc_escapes(),
        t.retransmits,
        t.naks,
        t.timeouts,
        t.link_downs,
        t.dropped,
        t.duplicated_words,
        t.alarms,
        t.stuck_rounds,
        t.cycles,
        t.goodput(&cfg),
        t.cycles as f64 / t.seconds,
        del.sent as f64 / t.seconds,
        t.seconds
    );
}

fn sweep_table(d: &mut IciDriver, quick: bool, variant: Option<&str>) {
    let cfg = *d.config();
    let flits: u64 = if quick { 20_000 } else { 1_000_000 };
    println!("## sweep\n");
    println!(
        "{cfg}; {flits} flits per point (half each way), no drops or duplicates. \
         Goodput is payload bits per raw lane bit; the retransmit rate is retransmitted frames per flit.\n"
    );
    println!("| BER | flits | lost | duplicated | reordered | altered | CRC errors | CRC escapes | retransmits | NAKs | timeouts | link-downs | goodput | retransmit rate |");
    println!("|{}", " --- |".repeat(14));
    let mut csv = String::from("ber,flits,cycles,goodput,retransmit_rate,crc_errors,crc_escapes,retransmits,naks,timeouts,link_downs,lost,duplicated,reordered,altered\n");
    for (k, &ber) in SWEEP_BERS.iter().enumerate() {
        let faults = Faults {
            ber,
            drop_rate: 0.0,
            dup_rate: 0.0,
            seed: 0x5eed_0000 + k as u64 * 1000,
        };
        let t = soak(d, flits, &faults, &format!("sweep BER {ber:e}"));
        let del = &t.delivery;
        println!(
            "| {ber:e} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.4} | {:.2e} |",
            del.sent,
            del.lost,
            del.duplicated,
            del.reordered,
            del.altered,
            t.crc_errors,
            t.crc_escapes(),
            t.retransmits,
            t.naks,
            t.timeouts,
            t.link_downs,
            t.goodput(&cfg),
            t.retransmit_rate()
        );
        csv.push_str(&format!(
            "{ber:e},{},{},{:.6},{:.6e},{},{},{},{},{},{},{},{},{},{}\n",
            del.sent,
            t.cycles,
            t.goodput(&cfg),
            t.retransmit_rate(),
            t.crc_errors,
            t.crc_escapes(),
            t.retransmits,
            t.naks,
            t.timeouts,
            t.link_downs,
            del.lost,
            del.duplicated,
            del.reordered,
            del.altered
        ));
    }
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../build/bench");
    let quick_tag = if quick { "_quick" } else { "" };
    let path = match variant {
        None => dir.join(format!("ici_ber_sweep{quick_tag}.csv")),
        Some(v) => dir.join(format!("ici_ber_sweep_{v}{quick_tag}.csv")),
    };
    std::fs::create_dir_all(&dir).expect("create build/bench");
    let mut f = std::fs::File::create(&path).expect("create the sweep CSV");
    f.write_all(csv.as_bytes()).expect("write the sweep CSV");
    println!("\nwritten: {}\n", path.display());
}

fn main() {
    // Waveforms would make the model a different, much slower build.
    std::env::remove_var("SYSTOLE_TRACE");
    let opts = Options::from_env();
    let preset = std::env::var(PRESET_ENV).ok().filter(|v| !v.is_empty());
    let depth = std::env::var(DEPTH_ENV).ok().filter(|v| !v.is_empty());
    let mut cfg = match &preset {
        None => IciConfig::DEFAULT,
        Some(name) => {
            use hw::Block;
            ici::Ici
                .presets()
                .into_iter()
                .find(|p| &p.name == name)
                .unwrap_or_else(|| panic!("{PRESET_ENV}: no ici preset named '{name}'"))
                .config
        }
    };
    if let Some(n) = &depth {
        let n: u32 = n.parse().unwrap_or_else(|e| panic!("{DEPTH_ENV}={n}: {e}"));
        cfg = cfg
            .with_depth(n)
            .unwrap_or_else(|e| panic!("{DEPTH_ENV}={n}: {e}"));
    }
    let variant = (preset.is_some() || depth.is_some()).then(|| {
        format!(
            "{}_d{}",
            preset.as_deref().unwrap_or("default"),
            cfg.depth()
        )
    });
    println!("# ICI link benchmark\n");
    println!(
        "Frame: {} bits = {} payload + {} header + {} CRC; overhead {:.1} % (ACKs and credits ride in every frame: \
         no frames of their own). Raw lane rate: {} bits per cycle each way; goodput at BER 0 is at most {:.3} of it.\n",
        cfg.frame_bits(),
        cfg.payload_bits(),
        cfg.header_bits(),
        cfg.crc_bits(),
        100.0 * cfg.overhead(),
        cfg.frame_bits(),
        f64::from(cfg.payload_bits()) / f64::from(cfg.frame_bits())
    );
    let mut d = IciDriver::new(&cfg).unwrap_or_else(|e| panic!("cannot build the link: {e}"));
    if opts.wants("sweep") {
        sweep_table(&mut d, opts.quick, variant.as_deref());
    }
    if opts.wants("soak") {
        soak_table(&mut d, opts.quick);
    }
    if !TABLES.iter().any(|t| opts.wants(t)) {
        eprintln!("no table matches {:?}; tables are {TABLES:?}", opts.filters);
    }
}

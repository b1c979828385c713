//! EUP benchmark: results per cycle against the bound of one for each
//! operation, the latency, and the Verilated model's speed, per
//! configuration. Printed as a Markdown table on stdout, progress on stderr;
//! nothing here passes or fails.
//!
//! The workload: 100,000 operations per row, operands random (seed 1) over
//! the ranges where each operation's results are finite and normal, with
//! one in eight any bit pattern. Each row also says whether the RTL's
//! results equal the golden model's, and gives the golden model's speed.
//!
//! ```text
//! cargo bench -p tb --bench eup
//! ```

use config::{EupConfig, EupOp};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sim::drivers::eup::EupDriver;
use std::time::Instant;

const OPERATIONS: usize = 100_000;

fn operand(rng: &mut ChaCha8Rng, op: EupOp) -> u32 {
    if rng.gen_ratio(1, 8) {
        return rng.gen();
    }
    match op {
        EupOp::Exp2 => rng.gen_range(-126.0f32..128.0).to_bits(),
        EupOp::Exp => rng.gen_range(-87.0f32..88.0).to_bits(),
        EupOp::Sqrt | EupOp::Rsqrt => rng.gen_range(1e-30f32..1e30).to_bits(),
        EupOp::Div | EupOp::Recip => {
            rng.gen_range(1e-18f32..1e18).to_bits() | (u32::from(rng.gen::<bool>()) << 31)
        }
    }
}

fn main() {
    println!("### EUP\n");
    println!(
        "| configuration | op | operations | cycles | results per cycle | latency | equals golden | simulated cycles per second | golden operations per second |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for (r, m, a) in [(28, 4, 6), (14, 2, 3), (0, 0, 0)] {
        let cfg = EupConfig::new(r, m, a).expect("a valid configuration");
        eprintln!("{cfg}: building the model");
        let mut d = EupDriver::new(&cfg).expect("the model builds");
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for op in EupOp::ALL {
            let x: Vec<u32> = (0..OPERATIONS).map(|_| operand(&mut rng, op)).collect();
            let y: Vec<u32> = (0..OPERATIONS).map(|_| operand(&mut rng, op)).collect();
            let start = Instant::now();
            let want: Vec<u32> = x
                .iter()
                .zip(&y)
                .map(|(&a, &b)| golden::eup::apply(op, a, b))
                .collect();
            let golden_rate = OPERATIONS as f64 / start.elapsed().as_secs_f64();
            let start = Instant::now();
            let run = d.run(op.code(), &x, &y, None).expect("the run ends");
            let seconds = start.elapsed().as_secs_f64();
            println!(
                "| r{r}-m{m}-a{a} | {op} | {OPERATIONS} | {} | {:.4} | {} | {} | {:.0} | {:.0} |",
                run.cycles,
                OPERATIONS as f64 / run.cycles as f64,
                cfg.latency(),
                if run.results == want { "yes" } else { "NO" },
                run.cycles as f64 / seconds,
                golden_rate
            );
        }
    }
}

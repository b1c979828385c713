//! TensorCore v2 generating text: cycles per token of the trained model
//! (`models/char-gpt`, 116,864 parameters) at context 64, the MXU's, VPU's
//! and EUP's busy fractions, where the other cycles go, and cycles per token
//! per parameter beside the open design's (2.37 M cycles per token for a
//! 230 M-parameter model). Printed as a Markdown table on stdout, progress
//! on stderr; nothing here passes or fails.
//!
//! The workload: the prompt "The " (4 tokens) and 61 generated tokens, 64
//! token steps in all, the last at position 63. Cycles come from the cycle
//! model (exactly the RTL's, `tb/tests/tensorcore2_rtl.rs`); for the rows
//! marked so, the RTL runs the same generation and its tokens, logits and
//! cycles are compared, and its simulation speed is given.
//!
//! ```text
//! cargo bench -p tb --bench gpt
//! ```

use config::tensorcore2_isa::Instr;
use sim::drivers::tensorcore2::{generate_golden, generate_rtl, sized_gpt_program, RunStats};
use std::path::Path;
use std::time::Instant;

/// The open design's cycles per token per parameter: 2.37 M for 230 M.
const OPEN_DESIGN: f64 = 2.37e6 / 230e6;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/char-gpt");
    let model = compiler::gpt::load_gpt(&dir).expect("the trained model loads");
    let params = model.dims.params() as f64;
    // "The " in the model's vocabulary (scripts/gpt_text.py encode).
    let prompt = [52u32, 71, 68, 1];
    let steps = 61;
    println!("### TensorCore v2: the trained model at context 64\n");
    println!(
        "| MXU | VPU | cycles per token (mean) | at position 63 | weight rows streamed per token | MXU busy | VPU busy | EUP busy | mover | waits | cycles per token per parameter | vs the open design | RTL: same tokens, logits, cycles | RTL cycles per second |"
    );
    println!(
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    );
    for (r, lanes, sublanes, rtl) in [
        (8u32, 8u32, 1u32, true),
        (16, 16, 1, true),
        (16, 16, 8, false),
        (4, 4, 1, false),
    ] {
        eprintln!("{r}x{r}, VPU {lanes}x{sublanes}: compiling");
        let program = sized_gpt_program(&model, r, lanes, sublanes).expect("the model fits");
        let golden = generate_golden(&program, &prompt, steps).expect("the golden run ends");
        let sum = |f: fn(&RunStats) -> u64| golden.steps.iter().map(f).sum::<u64>();
        let cycles = sum(|s| s.cycles);
        let frac = |x: u64| x as f64 / cycles as f64;
        let per_token = cycles as f64 / golden.steps.len() as f64;
        let last = golden.steps.last().expect("steps ran").cycles;
        let weight_rows: u64 = program
            .step(1, 63)
            .iter()
            .map(|i| match *i {
                Instr::ReadWeights { n, .. } | Instr::ReadWeightsVmem { n, .. } => u64::from(n),
                _ => 0,
            })
            .sum();
        let (same, speed) = if rtl {
            eprintln!("{r}x{r}, VPU {lanes}x{sublanes}: the RTL");
            let start = Instant::now();
            let run = generate_rtl(&program, &prompt, steps).expect("the RTL run ends");
            let seconds = start.elapsed().as_secs_f64();
            let rtl_cycles: u64 =
                run.steps.iter().map(|s| s.cycles).sum::<u64>() + run.setup.cycles;
            let same = run.tokens == golden.tokens
                && run.logits == golden.logits
                && run.steps == golden.steps
                && run.setup == golden.setup;
            (
                if same { "yes" } else { "NO" }.to_string(),
                format!("{:.0} k", rtl_cycles as f64 / seconds / 1e3),
            )
        } else {
            ("(not run)".to_string(), String::new())
        };
        println!(
            "| {r}x{r} | {lanes}x{sublanes} | {per_token:.0} | {last} | {weight_rows} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.0}x | {same} | {speed} |",
            frac(sum(|s| s.mxu_busy)),
            frac(sum(|s| s.vpu_busy)),
            frac(sum(|s| s.eup_ops)),
            frac(sum(|s| s.mover)),
            frac(sum(|s| s.wait)),
            per_token / params,
            per_token / params / OPEN_DESIGN,
        );
    }
}

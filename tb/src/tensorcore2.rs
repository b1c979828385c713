//! Helpers the TensorCore v2 tests share: a compiled transformer's
//! generation run on the golden TensorCore v2 (`golden::tensorcore2`), the
//! host choosing each next token with `golden::gpt::argmax_first`; and a
//! compiled quantized MLP run on it.

use compiler::tensorcore2::{generate, Generation, GptProgram};
use compiler::tensorcore2_mlp::{compile_mlp, MlpProgram};
use compiler::Mlp;
use config::TensorCore2Config;
use golden::tensorcore2::{Machine, RunInfo};

/// A generation of `program` on a fresh golden machine: its weight memory
/// loaded with the program's image, the setup, then a step per fed token.
/// Returns the tokens and logits, and the runs' counts summed (the setup's
/// apart).
pub fn generate_on_golden(
    program: &GptProgram,
    prompt: &[u32],
    steps: usize,
) -> Result<(Generation, RunInfo, RunInfo), String> {
    let mut machine = Machine::new(program.config());
    machine.load_weights(0, program.weight_image());
    let mut runs: Vec<RunInfo> = Vec::new();
    let generation = generate(
        program,
        prompt,
        steps,
        |instrs, input| {
            let mut out = vec![0u32; program.output_len()];
            let info = machine
                .run(instrs, input, &mut out)
                .map_err(|e| e.to_string())?;
            runs.push(info);
            Ok(out)
        },
        golden::gpt::argmax_first,
    )?;
    let steps_total = runs[1..]
        .iter()
        .fold(RunInfo::default(), |sum, r| sum.plus(r));
    Ok((generation, runs[0], steps_total))
}

/// `mlp` compiled for a batch of X's rows (X row-major \[batch\]\[inputs\])
/// and run on a fresh golden machine: the logits, row-major
/// \[batch\]\[outputs\], what the run did, and the program.
pub fn run_mlp_on_golden(
    cfg: &TensorCore2Config,
    mlp: &Mlp,
    x: &[i8],
    batch: usize,
) -> Result<(Vec<i32>, RunInfo, MlpProgram), String> {
    let program = compile_mlp(mlp, batch, cfg).map_err(|e| e.to_string())?;
    let mut machine = Machine::new(cfg);
    machine.load_weights(0, &program.weight_image);
    let mut out = vec![0u32; program.output_len()];
    let info = machine
        .run(&program.instrs, &program.pack_input(x), &mut out)
        .map_err(|e| format!("the compiled program does not run: {e}"))?;
    Ok((program.unpack_output(&out), info, program))
}

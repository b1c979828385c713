//! The TensorCore v2 driver: the host of the Verilated core (`hw/tensorcore2`
//! documents its ports and timing). It writes the weight memory, streams a
//! program's words, answers the input window as a synchronous memory (the
//! data the cycle after the read), collects the output window's writes and
//! reads the counters when `HALT` retires. The unified buffer (the VPU's
//! VMEM) and the accumulators are memories a reset keeps, so a KV cache
//! lives across runs.

use super::{block_model, Driver, DriverError, PortTable};
use crate::verilator::{Model, PortId};
use config::tensorcore2_isa::Instr;
use config::TensorCore2Config;

/// What one run measured: its cycles (from the cycle after the first word
/// is taken through the cycle `HALT` retires) and the counters, in
/// `tensorcore2::ports::COUNTERS` order: the cycle model's type, so the two
/// compare as one value.
pub use golden::tensorcore2_cycle::Counters as RunStats;

/// A Verilated TensorCore v2 of one configuration.
pub struct TensorCore2Driver {
    cfg: TensorCore2Config,
    model: Model,
    p: Ports,
    counters: [PortId; 6],
}

impl Driver for TensorCore2Driver {
    type Block = tensorcore2::TensorCore2;
    fn open(cfg: &TensorCore2Config) -> Result<Self, DriverError> {
        TensorCore2Driver::new(cfg)
    }
}

crate::block_ports! {
    /// The core's ports on a model of it (the counters apart).
    struct Ports {
        reset: hw::ir::RESET,
        instr_valid: tensorcore2::ports::INSTR_VALID,
        instr: tensorcore2::ports::INSTR,
        instr_ready: tensorcore2::ports::INSTR_READY,
        hin_en: tensorcore2::ports::HIN_EN,
        hin_addr: tensorcore2::ports::HIN_ADDR,
        hin_data: tensorcore2::ports::HIN_DATA,
        hout_wr: tensorcore2::ports::HOUT_WR,
        hout_addr: tensorcore2::ports::HOUT_ADDR,
        hout_data: tensorcore2::ports::HOUT_DATA,
        wmem_wr: tensorcore2::ports::WMEM_WR,
        wmem_addr: tensorcore2::ports::WMEM_ADDR,
        wmem_data: tensorcore2::ports::WMEM_DATA,
        halted: tensorcore2::ports::HALTED,
        error: tensorcore2::ports::ERROR,
    }
}

impl TensorCore2Driver {
    /// Builds (or loads from the cache) the Verilated core for `cfg` and
    /// resets it.
    pub fn new(cfg: &TensorCore2Config) -> Result<TensorCore2Driver, DriverError> {
        let model = block_model(&tensorcore2::TensorCore2, cfg)?;
        let p = Ports::of(&model)?;
        let counters = PortTable::new(&model).array(tensorcore2::ports::COUNTERS)?;
        let mut d = TensorCore2Driver {
            cfg: *cfg,
            model,
            p,
            counters,
        };
        d.reset();
        Ok(d)
    }

    /// The configuration.
    pub fn config(&self) -> &TensorCore2Config {
        &self.cfg
    }

    /// The underlying model (waveforms).
    pub fn model_mut(&mut self) -> &mut Model {
        &mut self.model
    }

    /// One reset cycle with every input low: the sequencer, the queues and
    /// the counters start over; the memories keep their contents.
    pub fn reset(&mut self) {
        let p = self.p;
        self.model
            .reset_with_idle_inputs(p.reset, &[p.instr_valid, p.wmem_wr]);
    }

    /// Writes weight-memory rows from `first_row`: `rows` holds C bf16
    /// patterns per row.
    pub fn load_weights(&mut self, first_row: usize, rows: &[u16]) -> Result<(), DriverError> {
        let c = self.cfg.cols() as usize;
        let depth = self.cfg.weight_rows() as usize;
        if !rows.len().is_multiple_of(c) || first_row + rows.len() / c > depth {
            return Err(DriverError::Input(format!(
                "{} weights from row {first_row} are not whole rows of {c} inside the {depth} rows",
                rows.len()
            )));
        }
        let p = self.p;
        let mut words = vec![0u32; (16 * c).div_ceil(32)];
        for (i, row) in rows.chunks(c).enumerate() {
            super::mxu::pack(row.iter().map(|&v| u32::from(v)), 16, &mut words);
            self.model.poke(p.wmem_wr, 1);
            self.model.poke(p.wmem_addr, (first_row + i) as u64);
            self.model.poke_wide(p.wmem_data, &words);
            self.model.step();
        }
        self.model.poke(p.wmem_wr, 0);
        Ok(())
    }

    /// Resets the core, runs `program` to `HALT` with the input window
    /// `input` and writes the output window's writes into `output`.
    /// Errors: a read or write outside the windows, the error flag, or no
    /// `HALT` within `limit` cycles.
    pub fn run(
        &mut self,
        program: &[Instr],
        input: &[u32],
        output: &mut [u32],
        limit: u64,
    ) -> Result<RunStats, DriverError> {
        self.reset();
        let p = self.p;
        let words: Vec<[u32; 5]> = program.iter().map(|i| i.encode().pieces()).collect();
        let mut next = 0usize;
        let mut first_taken: Option<u64> = None;
        let mut in_read: Option<usize> = None;
        for cycle in 0..limit {
            if let Some(a) = in_read.take() {
                let v = *input.get(a).ok_or_else(|| {
                    DriverError::Protocol(format!(
                        "the core read input element {a} of {}",
                        input.len()
                    ))
                })?;
                self.model.poke(p.hin_data, u64::from(v));
            }
            self.model.eval();
            if self.model.peek(p.halted) == 1 {
                if self.model.peek(p.error) == 1 {
                    return Err(DriverError::Input(
                        "the core flagged an illegal instruction or VPU bundle".into(),
                    ));
                }
                let k: Vec<u64> = self.counters.iter().map(|&q| self.model.peek(q)).collect();
                let start = first_taken.expect("a halted core took a word");
                return Ok(RunStats {
                    cycles: cycle - start - 1,
                    instructions: k[0],
                    vpu_busy: k[1],
                    mxu_busy: k[2],
                    eup_ops: k[3],
                    mover: k[4],
                    wait: k[5],
                });
            }
            let valid = next < words.len();
            self.model.poke(p.instr_valid, u64::from(valid));
            self.model
                .poke_wide(p.instr, words.get(next).unwrap_or(&[0; 5]));
            self.model.eval();
            if self.model.peek(p.hin_en) == 1 {
                in_read = Some(self.model.peek(p.hin_addr) as usize);
            }
            if self.model.peek(p.hout_wr) == 1 {
                let a = self.model.peek(p.hout_addr) as usize;
                let len = output.len();
                let slot = output.get_mut(a).ok_or_else(|| {
                    DriverError::Protocol(format!("the core wrote output element {a} of {len}"))
                })?;
                *slot = self.model.peek(p.hout_data) as u32;
            }
            if valid && self.model.peek(p.instr_ready) == 1 {
                first_taken.get_or_insert(cycle);
                next += 1;
            }
            self.model.step();
        }
        Err(DriverError::Protocol(format!(
            "the core did not halt within {limit} cycles"
        )))
    }
}

/// A transformer compiled for the smallest core of an R x R MXU and a
/// `lanes` x `sublanes` VPU that holds it: the unified buffer and the weight
/// memory are the powers of two the compiled model needs (the default
/// accumulator and queue). Errors (one line): sizes outside the core's
/// limits, or a model that does not fit even the largest memories (the
/// compiler names the part and the memory).
pub fn sized_gpt_program(
    model: &config::GptModel,
    rows: u32,
    lanes: u32,
    sublanes: u32,
) -> Result<compiler::tensorcore2::GptProgram, String> {
    use compiler::tensorcore2::compile_gpt;
    let w = u64::from(lanes) * u64::from(sublanes);
    let base = TensorCore2Config::new(rows, lanes, sublanes).map_err(|e| e.to_string())?;
    let widest_words = ((1u64 << 24) / w.max(1)).min(1 << 20) as u32;
    let roomy = base
        .with_memories(widest_words, base.acc_rows(), 1 << 24)
        .map_err(|e| e.to_string())?;
    let trial = compile_gpt(model, &roomy).map_err(|e| e.to_string())?;
    let words = (trial.vmem_used() as u64)
        .div_ceil(w)
        .next_power_of_two()
        .max(2) as u32;
    let weight_rows = ((trial.weight_image().len() / rows as usize) as u64)
        .next_power_of_two()
        .max(2) as u32;
    let cfg = base
        .with_memories(words, base.acc_rows(), weight_rows)
        .map_err(|e| e.to_string())?;
    compile_gpt(model, &cfg).map_err(|e| e.to_string())
}

/// A generation's tokens, the logits each was chosen from, and the runs'
/// measurements: the setup program's and each token step's.
#[derive(Debug, Clone)]
pub struct GptRun {
    pub tokens: Vec<u32>,
    pub logits: Vec<Vec<u32>>,
    pub setup: RunStats,
    pub steps: Vec<RunStats>,
}

fn gpt_run(generation: (Vec<u32>, Vec<Vec<u32>>), mut runs: Vec<RunStats>) -> GptRun {
    let setup = runs.remove(0);
    GptRun {
        tokens: generation.0,
        logits: generation.1,
        setup,
        steps: runs,
    }
}

/// Greedy generation of a compiled transformer on the RTL (the host picks
/// each next token with `golden::gpt::argmax_first`).
pub fn generate_rtl(
    program: &compiler::tensorcore2::GptProgram,
    prompt: &[u32],
    steps: usize,
) -> Result<GptRun, String> {
    let mut d = TensorCore2Driver::new(program.config()).map_err(|e| e.to_string())?;
    d.load_weights(0, program.weight_image())
        .map_err(|e| e.to_string())?;
    let mut runs = Vec::new();
    let generation = compiler::tensorcore2::generate(
        program,
        prompt,
        steps,
        |instrs: &[Instr], input: &[u32]| {
            let mut out = vec![0u32; program.output_len()];
            let limit = 1000 * instrs.len() as u64 + 10_000_000;
            runs.push(
                d.run(instrs, input, &mut out, limit)
                    .map_err(|e| e.to_string())?,
            );
            Ok(out)
        },
        golden::gpt::argmax_first,
    )?;
    Ok(gpt_run(generation, runs))
}

/// The same generation on the golden machine (`golden::tensorcore2`), each
/// run's cycles and counters from the cycle model (`golden::tensorcore2_cycle`).
pub fn generate_golden(
    program: &compiler::tensorcore2::GptProgram,
    prompt: &[u32],
    steps: usize,
) -> Result<GptRun, String> {
    let cfg = *program.config();
    let mut machine = golden::tensorcore2::Machine::new(&cfg);
    machine.load_weights(0, program.weight_image());
    let mut runs = Vec::new();
    let generation = compiler::tensorcore2::generate(
        program,
        prompt,
        steps,
        |instrs: &[Instr], input: &[u32]| {
            let mut out = vec![0u32; program.output_len()];
            machine
                .run(instrs, input, &mut out)
                .map_err(|e| e.to_string())?;
            runs.push(golden::tensorcore2_cycle::cycle_model(&cfg, instrs)?);
            Ok(out)
        },
        golden::gpt::argmax_first,
    )?;
    Ok(gpt_run(generation, runs))
}

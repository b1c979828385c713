//! The TensorCore from the host's side: a quantized MLP read from its `.npy`
//! files, compiled (`compiler`), and run on a backend: the golden model
//! ([`run_golden`]: `golden::tensorcore`, results and cycle model) or the
//! Verilated RTL ([`TensorCoreDriver`], [`run_rtl`]).
//!
//! The driver is the host of the top's ports: it writes the weight and bias
//! memories through their write ports, then presents the program's words on
//! the instruction port (the next word always ready, as the timing contract
//! assumes), answers the host input port in the cycle it asks (`hin_*`),
//! collects the host output port's writes (`hout_*`), and stops when
//! `halted_o` rises. The cycles and where they went are the RTL's own
//! counters. One driver runs many programs: a reset clears the sequencer,
//! not the memories, which is why a program may read only the buffer and
//! accumulator rows it wrote (the golden model refuses any other).

use super::{block_model, Driver, DriverError, PortTable};
use crate::verilator::{Model, PortId};
use compiler::{Mlp, Program};
use config::TensorCoreConfig;
use golden::tensorcore::{Memories, Stats};

pub use compiler::load_model;

/// The memories a compiled program needs, with `x` (\[batch\]\[inputs\]) in the
/// host input window.
pub fn memories(program: &Program, x: &[i8]) -> Memories {
    Memories {
        weights: program.weight_mem.clone(),
        biases: program.bias_mem.clone(),
        host_in: program.pack_input(x),
        host_out_rows: program.host_out_rows(),
    }
}

/// Compiles `mlp` for `batch` rows of `x` and runs it on the golden
/// TensorCore: the logits (\[batch\]\[outputs\]), the counters and the program.
/// Errors (a model that does not fit) are one line.
pub fn run_golden(
    cfg: &TensorCoreConfig,
    mlp: &Mlp,
    x: &[i8],
    batch: usize,
) -> Result<(Vec<i32>, Stats, Program), String> {
    let program = compiler::compile(mlp, batch, cfg).map_err(|e| e.to_string())?;
    let (window, stats) = golden::tensorcore::run(cfg, &program.words(), &memories(&program, x))
        .map_err(|e| format!("the compiled program does not run: {e}"))?;
    Ok((program.unpack_output(&window), stats, program))
}

/// A Verilated TensorCore of one configuration.
pub struct TensorCoreDriver {
    cfg: TensorCoreConfig,
    model: Model,
    p: Ports,
    counters: [PortId; 10],
}

impl Driver for TensorCoreDriver {
    type Block = tensorcore::TensorCore;
    fn open(cfg: &TensorCoreConfig) -> Result<Self, DriverError> {
        TensorCoreDriver::new(cfg)
    }
}

crate::block_ports! {
    /// The TensorCore's ports on a model of it (the counters apart).
    struct Ports {
        reset: hw::ir::RESET,
        instr_valid: tensorcore::ports::INSTR_VALID,
        instr: tensorcore::ports::INSTR,
        instr_ready: tensorcore::ports::INSTR_READY,
        hin_en: tensorcore::ports::HIN_EN,
        hin_addr: tensorcore::ports::HIN_ADDR,
        hin_data: tensorcore::ports::HIN_DATA,
        hout_wr: tensorcore::ports::HOUT_WR,
        hout_addr: tensorcore::ports::HOUT_ADDR,
        hout_data: tensorcore::ports::HOUT_DATA,
        wmem_wr: tensorcore::ports::WMEM_WR,
        wmem_addr: tensorcore::ports::WMEM_ADDR,
        wmem_data: tensorcore::ports::WMEM_DATA,
        bmem_wr: tensorcore::ports::BMEM_WR,
        bmem_addr: tensorcore::ports::BMEM_ADDR,
        bmem_data: tensorcore::ports::BMEM_DATA,
        halted: tensorcore::ports::HALTED,
        error: tensorcore::ports::ERROR,
    }
}

/// Packs bytes (little-endian lanes) into 32-bit words.
fn words_of_bytes(bytes: impl Iterator<Item = u8>) -> Vec<u32> {
    let b: Vec<u8> = bytes.collect();
    b.chunks(4)
        .map(|ch| {
            ch.iter()
                .enumerate()
                .fold(0u32, |w, (i, &x)| w | u32::from(x) << (8 * i))
        })
        .collect()
}

impl TensorCoreDriver {
    /// Builds (or loads from the cache) the Verilated TensorCore for `cfg`.
    pub fn new(cfg: &TensorCoreConfig) -> Result<TensorCoreDriver, DriverError> {
        let model = block_model(&tensorcore::TensorCore, cfg)?;
        let p = Ports::of(&model)?;
        let counters = PortTable::new(&model).array(tensorcore::ports::COUNTERS)?;
        Ok(TensorCoreDriver {
            cfg: *cfg,
            model,
            p,
            counters,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &TensorCoreConfig {
        &self.cfg
    }

    fn reset(&mut self) {
        let p = self.p;
        self.model
            .reset_with_idle_inputs(p.reset, &[p.instr_valid, p.wmem_wr, p.bmem_wr]);
    }

    /// Loads the memories, runs `words` to `HALT` and returns the host
    /// output window (`mem.host_out_rows` x C) and the RTL's counters.
    pub fn run(
        &mut self,
        words: &[u128],
        mem: &Memories,
    ) -> Result<(Vec<i32>, Stats), DriverError> {
        let (r, c) = (self.cfg.rows() as usize, self.cfg.cols() as usize);
        let p = self.p;
        self.reset();
        for (i, row) in mem.weights.chunks(c).enumerate() {
            self.model.poke(p.wmem_wr, 1);
            self.model.poke(p.wmem_addr, i as u64);
            self.model
                .poke_wide(p.wmem_data, &words_of_bytes(row.iter().map(|&v| v as u8)));
            self.model.step();
        }
        self.model.poke(p.wmem_wr, 0);
        for (i, row) in mem.biases.chunks(c).enumerate() {
            self.model.poke(p.bmem_wr, 1);
            self.model.poke(p.bmem_addr, i as u64);
            let w: Vec<u32> = row.iter().map(|&v| v as u32).collect();
            self.model.poke_wide(p.bmem_data, &w);
            self.model.step();
        }
        self.model.poke(p.bmem_wr, 0);

        let mut out = vec![0i32; mem.host_out_rows * c];
        let host_rows = mem.host_in.len() / r;
        let mut next = 0usize;
        // Generous: the slowest instruction moves 65535 rows.
        let limit = 1_000_000_000u64;
        for _ in 0..limit {
            self.model.eval();
            if self.model.peek(p.halted) == 1 {
                if self.model.peek(p.error) == 1 {
                    return Err(DriverError::Input(
                        "the TensorCore flagged an illegal instruction".into(),
                    ));
                }
                let k: Vec<u64> = self.counters.iter().map(|&q| self.model.peek(q)).collect();
                let stats = Stats {
                    cycles: k[..7].iter().sum(),
                    mxu_busy: k[0],
                    stall_weights: k[1],
                    stall_ub: k[2],
                    stall_vpu: k[3],
                    host: k[4],
                    issue: k[5],
                    sync: k[6],
                    instructions: k[7],
                    act_rows: k[8],
                    act_drain: k[9],
                };
                return Ok((out, stats));
            }
            let valid = next < words.len();
            self.model.poke(p.instr_valid, u64::from(valid));
            let word = words.get(next).copied().unwrap_or(0);
            self.model.poke_wide(
                p.instr,
                &[
                    word as u32,
                    (word >> 32) as u32,
                    (word >> 64) as u32,
                    (word >> 96) as u32,
                ],
            );
            self.model.eval();
            if self.model.peek(p.hin_en) == 1 {
                let a = self.model.peek(p.hin_addr) as usize;
                if a >= host_rows {
                    return Err(DriverError::Protocol(format!(
                        "the TensorCore read host input row {a} of {host_rows}"
                    )));
                }
                let row = &mem.host_in[a * r..(a + 1) * r];
                self.model
                    .poke_wide(p.hin_data, &words_of_bytes(row.iter().map(|&v| v as u8)));
            }
            if self.model.peek(p.hout_wr) == 1 {
                let a = self.model.peek(p.hout_addr) as usize;
                if a >= mem.host_out_rows {
                    return Err(DriverError::Protocol(format!(
                        "the TensorCore wrote host output row {a} of {}",
                        mem.host_out_rows
                    )));
                }
                let data = self.model.peek_wide(p.hout_data);
                for (j, &w) in data.iter().take(c).enumerate() {
                    out[a * c + j] = w as i32;
                }
            }
            if valid && self.model.peek(p.instr_ready) == 1 {
                next += 1;
            }
            self.model.step();
        }
        Err(DriverError::Protocol(format!(
            "the TensorCore did not halt within {limit} cycles"
        )))
    }
}

/// Compiles `mlp` for `batch` rows of `x` and runs it on the RTL: the
/// logits (\[batch\]\[outputs\]), the RTL's counters and the program.
pub fn run_rtl(
    driver: &mut TensorCoreDriver,
    mlp: &Mlp,
    x: &[i8],
    batch: usize,
) -> Result<(Vec<i32>, Stats, Program), DriverError> {
    let cfg = *driver.config();
    let program =
        compiler::compile(mlp, batch, &cfg).map_err(|e| DriverError::Input(e.to_string()))?;
    let (window, stats) = driver.run(&program.words(), &memories(&program, x))?;
    Ok((program.unpack_output(&window), stats, program))
}

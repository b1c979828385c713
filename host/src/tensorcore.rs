//! The TensorCore commands of protocol version 2 (`PROTOCOL.md`), and whole
//! MLPs on the board's core: compiled with the `compiler` crate for the core
//! TC_INFO describes, run in batch blocks that fit the bridge's memories.

use crate::client::{Client, CoreKind, HostError};
use crate::protocol::{self, Opcode};
use crate::transport::Transport;
use compiler::{Mlp, Program};
use config::TensorCoreConfig;

/// What TC_INFO reports: the core's sizes and the bridge's memories.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcInfo {
    pub rows: u32,
    pub cols: u32,
    pub acc_rows: u32,
    pub ub_rows: u32,
    pub weight_rows: u32,
    pub bias_rows: u32,
    pub weight_queue: u32,
    /// Words of the program memory.
    pub program_words: u32,
    /// Rows of the host input window (R int8 each).
    pub input_rows: u32,
    /// Rows of the host output window (C int32 each).
    pub output_rows: u32,
    /// The core's pipeline depth: its cycle counts (the golden cycle model
    /// a run's counters are checked against) depend on it, its results not.
    pub depth: u32,
}

impl TcInfo {
    /// The core as a configuration the compiler takes.
    pub fn core(&self) -> Result<TensorCoreConfig, HostError> {
        TensorCoreConfig::with(
            self.rows,
            self.cols,
            self.acc_rows,
            self.ub_rows,
            self.weight_rows,
            self.bias_rows,
            self.weight_queue,
        )
        .and_then(|core| core.with_depth(self.depth))
        .map_err(|e| {
            HostError::NotABridge(format!("the board reports an impossible TensorCore: {e}"))
        })
    }
}

/// The core's performance counters after a RUN (READ_COUNTERS), in
/// `PROTOCOL.md`'s order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    pub mxu_busy: u64,
    pub stall_weights: u64,
    pub stall_ub: u64,
    pub stall_vpu: u64,
    pub host: u64,
    pub issue: u64,
    pub sync: u64,
    pub instructions: u64,
    pub act_rows: u64,
    pub act_drain: u64,
}

impl Counters {
    /// Cycles of the run: the sum of the sequencer's seven classes.
    pub fn cycles(&self) -> u64 {
        self.mxu_busy
            + self.stall_weights
            + self.stall_ub
            + self.stall_vpu
            + self.host
            + self.issue
            + self.sync
    }

    fn add(&mut self, o: &Counters) {
        self.mxu_busy += o.mxu_busy;
        self.stall_weights += o.stall_weights;
        self.stall_ub += o.stall_ub;
        self.stall_vpu += o.stall_vpu;
        self.host += o.host;
        self.issue += o.issue;
        self.sync += o.sync;
        self.instructions += o.instructions;
        self.act_rows += o.act_rows;
        self.act_drain += o.act_drain;
    }
}

/// The result of [`Client::run_mlp`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MlpRun {
    /// Logits, row-major \[batch\]\[outputs\].
    pub logits: Vec<i32>,
    /// The counters summed over the runs.
    pub counters: Counters,
    /// Runs (batch blocks) and the rows of the largest.
    pub runs: usize,
    pub block: usize,
}

/// A bound on a program's cycles, for RUN's limit: every row of every
/// instruction, with room for each instruction's waits.
fn cycle_limit(words: &[u128], rows: u32, cols: u32) -> u32 {
    let (lo, bits) = config::tensorcore_isa::field::COUNT;
    let per_instr = 4 * u64::from(rows + cols + 8) + 64;
    let total: u64 = words
        .iter()
        .map(|w| ((w >> lo) as u64 & ((1 << bits) - 1)) + per_instr)
        .sum();
    (8 * total + 10_000).min(u64::from(u32::MAX)) as u32
}

impl<T: Transport> Client<T> {
    fn require_tensorcore(&self, what: &str) -> Result<(), HostError> {
        if self.info().core != CoreKind::TensorCore {
            return Err(HostError::NotABridge(format!(
                "{what} needs a TensorCore board (protocol v{}); this bridge is an MXU (protocol v{}): \
                 build it with gen --board ulx3s --block tensorcore",
                protocol::VERSION_TC,
                self.info().version
            )));
        }
        Ok(())
    }

    /// TC_INFO: the core's sizes and the bridge's memories.
    pub fn tc_info(&mut self) -> Result<TcInfo, HostError> {
        self.require_tensorcore("TC_INFO")?;
        let p = self.command(Opcode::TcInfo as u8, [0; 3], &[], protocol::TC_INFO_BYTES)?;
        let u16_at = |i: usize| u32::from(u16::from_le_bytes([p[i], p[i + 1]]));
        let pow = |i: usize| -> Result<u32, HostError> {
            if p[i] > 24 {
                return Err(HostError::NotABridge(format!(
                    "TC_INFO reports 2^{} rows in byte {i}",
                    p[i]
                )));
            }
            Ok(1u32 << p[i])
        };
        Ok(TcInfo {
            rows: u16_at(0),
            cols: u16_at(2),
            acc_rows: pow(4)?,
            ub_rows: pow(5)?,
            weight_rows: pow(6)?,
            bias_rows: pow(7)?,
            weight_queue: u32::from(p[8]),
            program_words: pow(9)?,
            input_rows: pow(10)?,
            output_rows: pow(11)?,
            depth: u32::from(p[13]),
        })
    }

    /// Sends `rows` rows of `row_bytes` each (the payload `bytes`) with
    /// `op` from row `first` on, in commands of at most 65535 rows.
    fn write_rows(
        &mut self,
        op: Opcode,
        first: usize,
        bytes: &[u8],
        row_bytes: usize,
    ) -> Result<(), HostError> {
        if !bytes.len().is_multiple_of(row_bytes) {
            return Err(HostError::Shape(format!(
                "{}: {} bytes are not whole rows of {row_bytes}",
                op.name(),
                bytes.len()
            )));
        }
        let rows = bytes.len() / row_bytes;
        let mut done = 0;
        while done < rows {
            let n = (rows - done).min(u16::MAX as usize);
            let at = first + done;
            if at > u16::MAX as usize {
                return Err(HostError::Shape(format!(
                    "{}: row {at} is past the protocol's 16-bit row field",
                    op.name()
                )));
            }
            let chunk = &bytes[done * row_bytes..(done + n) * row_bytes];
            self.command(op as u8, [at as u16, n as u16, 0], chunk, 0)?;
            done += n;
        }
        Ok(())
    }

    /// WRITE_WEIGHTS: weight-memory rows (C int8 each) from row `first` on.
    pub fn write_weights(&mut self, first: usize, w: &[i8]) -> Result<(), HostError> {
        let c = self.info().cols as usize;
        let bytes: Vec<u8> = w.iter().map(|&v| v as u8).collect();
        self.write_rows(Opcode::WriteWeights, first, &bytes, c)
    }

    /// WRITE_BIAS: bias-memory rows (C int32 each) from row `first` on.
    pub fn write_bias(&mut self, first: usize, b: &[i32]) -> Result<(), HostError> {
        let c = self.info().cols as usize;
        let bytes: Vec<u8> = b.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.write_rows(Opcode::WriteBias, first, &bytes, 4 * c)
    }

    /// WRITE_PROGRAM: instruction words from word `first` on.
    pub fn write_program(&mut self, first: usize, words: &[u128]) -> Result<(), HostError> {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        self.write_rows(Opcode::WriteProgram, first, &bytes, 16)
    }

    /// WRITE_INPUT: host input window rows (R int8 each) from row `first` on.
    pub fn write_input(&mut self, first: usize, x: &[i8]) -> Result<(), HostError> {
        let r = self.info().rows as usize;
        let bytes: Vec<u8> = x.iter().map(|&v| v as u8).collect();
        self.write_rows(Opcode::WriteInput, first, &bytes, r)
    }

    /// RUN: resets the core and runs program words 0..`words` until `HALT`,
    /// at most `limit` cycles.
    pub fn run(&mut self, words: u16, limit: u32) -> Result<(), HostError> {
        self.require_tensorcore("RUN")?;
        // The bridge's clock period from its clocks per bit and the link's
        // byte time (ten bits).
        let cpb = u32::from(self.info().clocks_per_bit.max(1));
        let cycle = self.link_mut().byte_time() / (10 * cpb);
        let work = cycle * limit.max(1);
        let fields = [words, limit as u16, (limit >> 16) as u16];
        self.command_waiting(Opcode::Run as u8, fields, &[], 0, work)?;
        Ok(())
    }

    /// READ_OUTPUT: `rows` host output window rows (C int32 each) from row
    /// `first` on.
    pub fn read_output(&mut self, first: usize, rows: usize) -> Result<Vec<i32>, HostError> {
        self.require_tensorcore("READ_OUTPUT")?;
        let c = self.info().cols as usize;
        let mut out = Vec::with_capacity(rows * c);
        let mut done = 0;
        while done < rows {
            let n = (rows - done).min(u16::MAX as usize);
            let at = first + done;
            if at > u16::MAX as usize {
                return Err(HostError::Shape(format!(
                    "READ_OUTPUT: row {at} is past the protocol's 16-bit row field"
                )));
            }
            let p = self.command(
                Opcode::ReadOutput as u8,
                [at as u16, n as u16, 0],
                &[],
                n * 4 * c,
            )?;
            out.extend(
                p.chunks_exact(4)
                    .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            );
            done += n;
        }
        Ok(out)
    }

    /// READ_COUNTERS: the core's counters since the last RUN started.
    pub fn read_counters(&mut self) -> Result<Counters, HostError> {
        self.require_tensorcore("READ_COUNTERS")?;
        let p = self.command(
            Opcode::ReadCounters as u8,
            [0; 3],
            &[],
            protocol::COUNTER_BYTES,
        )?;
        let k: Vec<u64> = p
            .chunks_exact(4)
            .map(|b| u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
            .collect();
        Ok(Counters {
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
        })
    }

    /// Runs `mlp` on `x` (row-major \[batch\]\[inputs\]) on the board's
    /// TensorCore: compiles it for the core TC_INFO reports (a model that does
    /// not fit is refused with the compiler's reason, as
    /// [`HostError::Shape`]), writes the weight and bias images, and runs the
    /// batch in the largest blocks whose program, input and output fit the
    /// bridge's memories. The logits are the golden model's, bit for bit.
    pub fn run_mlp(&mut self, mlp: &Mlp, x: &[i8], batch: usize) -> Result<MlpRun, HostError> {
        self.require_tensorcore("an MLP")?;
        if batch == 0 || x.len() != batch * mlp.inputs() {
            return Err(HostError::Shape(format!(
                "X has {} values, not {batch} rows of {} inputs",
                x.len(),
                mlp.inputs()
            )));
        }
        let info = self.tc_info()?;
        let cfg = info.core()?;
        let fit_err = |e: compiler::CompileError| {
            HostError::Shape(format!(
                "the model does not fit the board's TensorCore: {e}"
            ))
        };
        // One row first: the weight and bias images do not depend on the batch.
        let one = compiler::compile(mlp, 1, &cfg).map_err(fit_err)?;
        let fits = |p: &Program| {
            p.instrs.len() <= (info.program_words as usize).min(u16::MAX as usize)
                && p.host_in_rows() <= info.input_rows as usize
                && p.host_out_rows() <= info.output_rows as usize
        };
        if !fits(&one) {
            return Err(HostError::Shape(format!(
                "the model does not fit the board's TensorCore: one input row needs {} program words \
                 (of {}), {} input rows (of {}) and {} output rows (of {})",
                one.instrs.len(),
                info.program_words,
                one.host_in_rows(),
                info.input_rows,
                one.host_out_rows(),
                info.output_rows
            )));
        }
        // The largest block that fits, by halving from the whole batch.
        let mut block = batch
            .min(info.input_rows as usize / mlp.inputs().div_ceil(cfg.rows() as usize))
            .min(info.output_rows as usize / mlp.outputs().div_ceil(cfg.cols() as usize))
            .max(1);
        let mut program = loop {
            match compiler::compile(mlp, block, &cfg) {
                Ok(p) if fits(&p) => break p,
                _ if block > 1 => block = block.div_ceil(2),
                Ok(_) => unreachable!("one row fits"),
                Err(e) => return Err(fit_err(e)),
            }
        };
        self.write_weights(0, &one.weight_mem)?;
        self.write_bias(0, &one.bias_mem)?;
        let mut logits = Vec::with_capacity(batch * mlp.outputs());
        let mut counters = Counters::default();
        let mut loaded = 0usize;
        let mut runs = 0;
        let mut start = 0;
        while start < batch {
            let n = block.min(batch - start);
            if n != program.batch {
                program = compiler::compile(mlp, n, &cfg).map_err(fit_err)?;
            }
            let words = program.words();
            if loaded != n {
                self.write_program(0, &words)?;
                loaded = n;
            }
            let xs = &x[start * mlp.inputs()..(start + n) * mlp.inputs()];
            self.write_input(0, &program.pack_input(xs))?;
            self.run(
                words.len() as u16,
                cycle_limit(&words, cfg.rows(), cfg.cols()),
            )?;
            let window = self.read_output(0, program.host_out_rows())?;
            logits.extend(program.unpack_output(&window));
            counters.add(&self.read_counters()?);
            runs += 1;
            start += n;
        }
        Ok(MlpRun {
            logits,
            counters,
            runs,
            block,
        })
    }
}

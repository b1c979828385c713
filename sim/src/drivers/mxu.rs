//! The MXU driver: runs a whole matrix multiplication on the Verilated MXU.
//!
//! The driver is the host of the MXU's interface (see the `mxu` crate docs):
//! it cuts B into R x C weight tiles (N-tile outer, K-tile inner, zero-padded
//! at the edges; zero is +0.0 for bf16, as the contract pads), writes their rows
//! into the weight FIFO whenever `w_ready_o` allows, and streams the rows of A's
//! matching column block, each tagged with its accumulator row and with "add"
//! for every K-tile after the first, starting a tile's first row as soon as
//! `a_ready_o` accepts it. It never assumes a cycle: it follows the handshakes
//! and counts accumulator writes (`acc_wr_o`) to know when a pass is done, then
//! reads the results out of the accumulator, back to back, holding
//! `acc_rd_valid_o` to the contract's read latency. The passes (as many rows of A
//! and n-tiles as the accumulator holds) and the tiles' padding come from
//! [`config::mxu_plan`], the plan the golden cycle model counts.
//!
//! The cycle count it reports is measured on the RTL (per pass, from its first
//! cycle through its last accumulator write; read-out not counted), so the
//! tests can hold it to the golden cycle model exactly.

use super::{block_files, Driver, DriverError};
use crate::from_hw::model_spec;
use crate::verilator::{Model, ModelSpec};
use config::mxu_plan::{MatmulPlan, Pass};
use config::{ElemType, MxuConfig};
use std::rc::Rc;

/// One matmul's measured cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MatmulStats {
    pub rows: u32,
    pub cols: u32,
    /// Clock cycles of the computation: summed over passes, each from its
    /// first cycle through its last accumulator write.
    pub cycles: u64,
    /// Cycles spent reading results out of the accumulator (not in `cycles`).
    pub readout_cycles: u64,
    /// Useful multiply-accumulates, M x K x N.
    pub macs: u64,
    /// Weight tiles streamed, over all passes.
    pub tiles: u64,
    /// Passes: blocks of rows of A and n-tiles that fit the accumulator.
    pub passes: u64,
}

impl MatmulStats {
    /// MACs / (cycles x R x C).
    pub fn utilization(&self) -> f64 {
        self.macs as f64 / (self.cycles as f64 * self.rows as f64 * self.cols as f64)
    }
}

/// The Verilog of the MXU for `cfg` and its top module, exactly as `gen`
/// writes it (the simulated RTL is the RTL users get).
pub fn mxu_files(
    cfg: &MxuConfig,
) -> Result<(Vec<hw::EmittedFile>, Rc<hw::ModuleDef>), DriverError> {
    block_files(&mxu::Mxu, cfg)
}

/// The Verilator model spec of the MXU for `cfg`.
pub fn mxu_spec(cfg: &MxuConfig) -> Result<ModelSpec, DriverError> {
    let (files, top) = mxu_files(cfg)?;
    Ok(model_spec(&files, &top))
}

/// Packs `values` of `bits` each (little-endian, element 0 lowest) into the
/// 32-bit words of a wide port, as [`Model::poke_wide`] takes them.
pub fn pack(values: impl Iterator<Item = u32>, bits: u32, words: &mut [u32]) {
    words.fill(0);
    let mask = if bits == 32 {
        u32::MAX
    } else {
        (1 << bits) - 1
    };
    for (i, v) in values.enumerate() {
        let bit = i as u32 * bits;
        let (w, off) = ((bit / 32) as usize, bit % 32);
        words[w] |= (v & mask) << off;
        if off + bits > 32 {
            words[w + 1] |= (v & mask) >> (32 - off);
        }
    }
}

crate::block_ports! {
    /// The MXU's ports on a model of it (names in `mxu::ports`), for the
    /// driver and for anything else that drives the model directly
    /// (benchmarks).
    pub struct MxuPorts {
        w_valid: mxu::ports::W_VALID,
        w_row: mxu::ports::W_ROW,
        w_ready: mxu::ports::W_READY,
        a_valid: mxu::ports::A_VALID,
        a_first: mxu::ports::A_FIRST,
        a_row: mxu::ports::A_ROW,
        a_addr: mxu::ports::A_ACC_ADDR,
        a_add: mxu::ports::A_ACC_ADD,
        a_ready: mxu::ports::A_READY,
        rd_en: mxu::ports::ACC_RD_EN,
        rd_addr: mxu::ports::ACC_RD_ADDR,
        rd_valid: mxu::ports::ACC_RD_VALID,
        rd_data: mxu::ports::ACC_RD_DATA,
        acc_wr: mxu::ports::ACC_WR,
        busy: mxu::ports::BUSY,
        reset: hw::ir::RESET,
    }
}

impl MxuPorts {
    /// Drives every control input of `model` low and holds reset for one
    /// cycle: the MXU is idle and empty afterwards.
    pub fn reset_idle(&self, model: &mut Model) {
        model.reset_with_idle_inputs(
            self.reset,
            &[
                self.w_valid,
                self.a_valid,
                self.a_first,
                self.a_add,
                self.rd_en,
                self.a_addr,
                self.rd_addr,
            ],
        );
    }
}

/// How far a matmul on the RTL has come, for a progress display: activation
/// rows written into the accumulator so far, of all the matmul writes (every
/// row of A once per weight tile of its pass).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub rows_done: u64,
    pub rows_total: u64,
}

/// Receives [`Progress`] while a matmul runs (see [`MxuDriver::set_progress`]).
pub type ProgressReport = Box<dyn FnMut(Progress)>;

/// Cycles between two progress reports: rare enough to cost nothing next to
/// the simulation, frequent enough (tens of milliseconds) for a smooth display.
const PROGRESS_INTERVAL: u64 = 4096;

impl Driver for MxuDriver {
    type Block = mxu::Mxu;
    fn open(cfg: &MxuConfig) -> Result<Self, DriverError> {
        MxuDriver::new(cfg)
    }
}

/// A Verilated MXU of one configuration, ready for matmuls.
pub struct MxuDriver {
    cfg: MxuConfig,
    model: Model,
    p: MxuPorts,
    progress: Option<ProgressReport>,
}

/// One matmul's operands as element bit patterns, row-major, with its plan.
struct Operands<'a> {
    a: &'a [u32],
    b: &'a [u32],
    plan: MatmulPlan,
}

impl MxuDriver {
    /// Builds (or loads from the cache) the Verilated MXU for `cfg` and resets it.
    pub fn new(cfg: &MxuConfig) -> Result<MxuDriver, DriverError> {
        let model = Model::build(&mxu_spec(cfg)?, &mxu::top_name(cfg))?;
        Self::with_model(cfg, model)
    }

    /// Drives `model`, an MXU for `cfg` built some other way than [`new`]
    /// builds it (the benchmark builds the same Verilog with other Verilator
    /// options), after a reset.
    ///
    /// [`new`]: MxuDriver::new
    pub fn with_model(cfg: &MxuConfig, model: Model) -> Result<MxuDriver, DriverError> {
        let p = MxuPorts::of(&model)?;
        let mut d = MxuDriver {
            cfg: *cfg,
            model,
            p,
            progress: None,
        };
        d.reset();
        Ok(d)
    }

    /// Reports progress to `report` during later matmuls: at their start,
    /// every few thousand cycles and at their end. `None` stops reporting.
    pub fn set_progress(&mut self, report: Option<ProgressReport>) {
        self.progress = report;
    }

    pub fn config(&self) -> &MxuConfig {
        &self.cfg
    }

    /// The underlying model (for benchmarks and waveform control).
    pub fn model_mut(&mut self) -> &mut Model {
        &mut self.model
    }

    /// Drives every input low and holds reset for one cycle.
    pub fn reset(&mut self) {
        self.p.reset_idle(&mut self.model);
    }

    /// C = A x B with int8 A (`m x k`) and B (`k x n`), int32 C (wrapping).
    /// When `expected` is given, every element is checked as it is read out,
    /// and the first difference stops the run one cycle later with
    /// [`DriverError::Mismatch`].
    pub fn matmul_int8(
        &mut self,
        a: &[i8],
        b: &[i8],
        (m, k, n): (usize, usize, usize),
        expected: Option<&[i32]>,
    ) -> Result<(Vec<i32>, MatmulStats), DriverError> {
        self.require(ElemType::Int8)?;
        let a: Vec<u32> = a.iter().map(|&x| x as u8 as u32).collect();
        let b: Vec<u32> = b.iter().map(|&x| x as u8 as u32).collect();
        let expected: Option<Vec<u32>> = expected.map(|e| e.iter().map(|&x| x as u32).collect());
        let (c, stats) = self.run(&a, &b, (m, k, n), expected.as_deref())?;
        Ok((c.into_iter().map(|x| x as i32).collect(), stats))
    }

    /// C = A x B with bf16 A and B (bit patterns) and fp32 C (bit patterns),
    /// exactly as `docs/numerics.md#bf16-matmul` defines it for this array's R.
    pub fn matmul_bf16(
        &mut self,
        a: &[u16],
        b: &[u16],
        (m, k, n): (usize, usize, usize),
        expected: Option<&[u32]>,
    ) -> Result<(Vec<u32>, MatmulStats), DriverError> {
        self.require(ElemType::Bf16)?;
        let a: Vec<u32> = a.iter().map(|&x| x as u32).collect();
        let b: Vec<u32> = b.iter().map(|&x| x as u32).collect();
        self.run(&a, &b, (m, k, n), expected)
    }

    fn require(&self, dtype: ElemType) -> Result<(), DriverError> {
        if self.cfg.dtype() == dtype {
            Ok(())
        } else {
            Err(DriverError::Input(format!(
                "this MXU is {}, not {dtype}",
                self.cfg.dtype()
            )))
        }
    }

    fn run(
        &mut self,
        a: &[u32],
        b: &[u32],
        (m, k, n): (usize, usize, usize),
        expected: Option<&[u32]>,
    ) -> Result<(Vec<u32>, MatmulStats), DriverError> {
        let shape = |e: config::ConfigError| DriverError::Input(e.to_string());
        let plan = MatmulPlan::new(&self.cfg, m, k, n).map_err(shape)?;
        plan.check_operands(a.len(), b.len()).map_err(shape)?;
        if expected.is_some_and(|e| e.len() != m * n) {
            return Err(DriverError::Input("expected C has the wrong size".into()));
        }
        let ops = Operands { a, b, plan };
        let mut c = vec![0u32; m * n];
        let mut stats = MatmulStats {
            rows: self.cfg.rows(),
            cols: self.cfg.cols(),
            cycles: 0,
            readout_cycles: 0,
            macs: (m * k * n) as u64,
            tiles: 0,
            passes: 0,
        };
        let passes = plan.passes();
        let mut progress = Progress {
            rows_done: 0,
            rows_total: passes
                .iter()
                .map(|pass| (pass.n_tiles * plan.k_tiles() * pass.rows) as u64)
                .sum(),
        };
        self.report(progress);
        for pass in passes {
            self.reset();
            stats.cycles += self.pass(&ops, &pass, &mut progress)?;
            stats.readout_cycles += self.read_out(&ops, &pass, &mut c, expected)?;
            stats.tiles += (pass.n_tiles * plan.k_tiles()) as u64;
            stats.passes += 1;
        }
        self.report(progress);
        Ok((c, stats))
    }

    fn report(&mut self, progress: Progress) {
        if let Some(report) = self.progress.as_mut() {
            report(progress);
        }
    }

    /// Streams every tile of a pass; returns its cycles (through its last
    /// accumulator write).
    fn pass(
        &mut self,
        ops: &Operands<'_>,
        pass: &Pass,
        progress: &mut Progress,
    ) -> Result<u64, DriverError> {
        let plan = &ops.plan;
        let (rows, cols) = (self.cfg.rows() as usize, self.cfg.cols() as usize);
        let bits = self.cfg.dtype().operand_bits();
        let k_tiles = plan.k_tiles();
        let tiles = k_tiles * pass.n_tiles;
        // Tile i covers k-tile i % k_tiles of the pass's n-tile i / k_tiles.
        let tile_of = |i: usize| (i / k_tiles, i % k_tiles);
        let pass_rows = pass.rows;
        let weight_rows = tiles * rows;
        let total_rows = tiles * pass_rows;
        let words = |elements: usize| (elements * bits as usize).div_ceil(32);
        let mut w_words = vec![0u32; words(cols)];
        let mut a_words = vec![0u32; words(rows)];
        let (mut pushed, mut accepted, mut written) = (0usize, 0usize, 0usize);
        let mut last_write = 0u64;
        // A loose bound: every row costs at most a tile load and the latency.
        let deadline = (tiles * (pass_rows + 4 * rows + 8) + 4 * (rows + cols) + 64) as u64;
        let p = &self.p;
        let mut cycle = 0u64;
        while written < total_rows {
            if pushed < weight_rows {
                // Row j of a tile is its B row R-1-j (bottom row first).
                let (g, kt) = tile_of(pushed / rows);
                let r = rows - 1 - pushed % rows;
                let row = (0..cols).map(|cc| {
                    plan.b_index(kt, pass.nt0 + g, r, cc)
                        .map_or(0, |i| ops.b[i])
                });
                pack(row, bits, &mut w_words);
                self.model.poke(p.w_valid, 1);
                self.model.poke_wide(p.w_row, &w_words);
            } else {
                self.model.poke(p.w_valid, 0);
            }
            if accepted < total_rows {
                let (g, kt) = tile_of(accepted / pass_rows);
                let mm = accepted % pass_rows;
                let row =
                    (0..rows).map(|rr| plan.a_index(pass.m0 + mm, kt, rr).map_or(0, |i| ops.a[i]));
                pack(row, bits, &mut a_words);
                self.model.poke(p.a_valid, 1);
                self.model.poke(p.a_first, (mm == 0) as u64);
                self.model.poke_wide(p.a_row, &a_words);
                self.model.poke(p.a_addr, pass.acc_row(g, mm) as u64);
                self.model.poke(p.a_add, (kt > 0) as u64);
            } else {
                self.model.poke(p.a_valid, 0);
                self.model.poke(p.a_first, 0);
            }
            self.model.eval();
            if pushed < weight_rows && self.model.peek(p.w_ready) == 1 {
                pushed += 1;
            }
            if accepted < total_rows && self.model.peek(p.a_ready) == 1 {
                accepted += 1;
            }
            if self.model.peek(p.acc_wr) == 1 {
                written += 1;
                last_write = cycle;
            }
            self.model.step();
            cycle += 1;
            if cycle.is_multiple_of(PROGRESS_INTERVAL) {
                if let Some(report) = self.progress.as_mut() {
                    report(Progress {
                        rows_done: progress.rows_done + written as u64,
                        ..*progress
                    });
                }
            }
            if cycle > deadline {
                return Err(DriverError::Protocol(format!(
                    "pass not finished after {cycle} cycles: {pushed}/{weight_rows} weight rows, \
                     {accepted}/{total_rows} rows accepted, {written} written"
                )));
            }
        }
        progress.rows_done += total_rows as u64;
        self.model.poke(p.w_valid, 0);
        self.model.poke(p.a_valid, 0);
        self.model.poke(p.a_first, 0);
        self.model.eval();
        if self.model.peek(p.busy) != 0 {
            return Err(DriverError::Protocol(format!(
                "busy_o still high after all {total_rows} rows were written"
            )));
        }
        Ok(last_write + 1)
    }

    /// Reads the pass's accumulator rows into C (and checks them); returns the
    /// cycles it took. The reads go back to back, one per cycle; each row is
    /// taken when it arrives, and `acc_rd_valid_o` must be high exactly Lr
    /// cycles after each read (R1, Lr from the golden cycle model).
    fn read_out(
        &mut self,
        ops: &Operands<'_>,
        pass: &Pass,
        c: &mut [u32],
        expected: Option<&[u32]>,
    ) -> Result<u64, DriverError> {
        let p = &self.p;
        let (m, k, n) = ops.plan.dims();
        let latency = golden::mxu::MxuTiming::new(&self.cfg, m, k, n).read_latency() as usize;
        let reads: Vec<(usize, usize)> = (0..pass.n_tiles)
            .flat_map(|g| (0..pass.rows).map(move |mm| (g, mm)))
            .collect();
        let mut cycles = 0u64;
        for y in 0..reads.len() + latency - 1 {
            let issue = reads.get(y);
            self.model.poke(p.rd_en, u64::from(issue.is_some()));
            if let Some(&(g, mm)) = issue {
                self.model.poke(p.rd_addr, pass.acc_row(g, mm) as u64);
            }
            self.model.step();
            cycles += 1;
            self.model.poke(p.rd_en, 0);
            self.model.eval();
            // The read answered in this cycle, if any: the one of cycle y + 1 - Lr.
            let answered = (y + 1).checked_sub(latency).and_then(|r| reads.get(r));
            if self.model.peek(p.rd_valid) != u64::from(answered.is_some()) {
                return Err(DriverError::Protocol(format!(
                    "acc_rd_valid_o is {} {} cycles after the read-out's first read; the \
                     contract (R1, Lr = {latency}) has it {}",
                    self.model.peek(p.rd_valid),
                    y + 1,
                    u8::from(answered.is_some())
                )));
            }
            let Some(&(g, mm)) = answered else {
                continue;
            };
            let data = self.model.peek_wide(p.rd_data);
            let row = pass.m0 + mm;
            for (cc, &word) in data.iter().enumerate().take(self.cfg.cols() as usize) {
                let Some(i) = ops.plan.c_index(row, pass.nt0 + g, cc) else {
                    break;
                };
                c[i] = word;
                if let Some(e) = expected {
                    if e[i] != word {
                        // One more cycle so the waveform shows the failure.
                        self.model.step();
                        self.model.flush_trace();
                        return Err(DriverError::Mismatch {
                            what: format!("C[{row}][{}]", i % ops.plan.dims().2),
                            expected: e[i],
                            got: word,
                            cycle: self.model.cycle(),
                            waveform: self.model.trace_path().map(|p| p.display().to_string()),
                        });
                    }
                }
            }
        }
        Ok(cycles)
    }
}

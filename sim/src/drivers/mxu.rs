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
//!
//! A bf16 array in int8 mode runs both kinds of matmul: [`MxuDriver::matmul_int8`]
//! places each int8 operand in the low byte of its 16-bit lane and marks every
//! row an int8 row (`a_int8_i`), [`MxuDriver::matmul_bf16`] marks none. For rows
//! of both kinds in one tile, [`MxuDriver::run_tiles`] streams tiles and rows
//! as given and [`MxuDriver::read_acc_rows`] reads the results.

use super::{block_files, Driver, DriverError};
use crate::from_hw::model_spec;
use crate::verilator::{Model, ModelSpec, PortId};
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
    /// `a_int8_i`, on an array in int8 mode.
    a_int8: Option<PortId>,
    progress: Option<ProgressReport>,
}

/// One matmul's operands as element bit patterns, row-major, with its plan
/// and the kind of its rows.
struct Operands<'a> {
    a: &'a [u32],
    b: &'a [u32],
    plan: MatmulPlan,
    /// The rows are int8 rows of an array in int8 mode.
    int8_rows: bool,
}

/// One activation row of a tile, as [`MxuDriver::run_tiles`] streams it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TileRow {
    /// The row's R operands as element bit patterns (`a[k]` multiplies the
    /// tile's row k); an int8 row of an array in int8 mode reads their low
    /// bytes.
    pub a: Vec<u32>,
    /// An int8 row (`a_int8_i` high): on an array in int8 mode only.
    pub int8: bool,
    /// The accumulator row the result goes to.
    pub acc_row: usize,
    /// Add into the accumulator row (`a_acc_add_i`) rather than overwrite it.
    pub add: bool,
}

/// A weight tile and the activation rows that use it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tile {
    /// The R x C weights as element bit patterns, W\[k\]\[c\] at `k * C + c`.
    pub weights: Vec<u32>,
    /// At least one row; distinct accumulator rows (the contract's host rule).
    pub rows: Vec<TileRow>,
}

/// What an activation row carries besides its operands.
#[derive(Debug, Clone, Copy)]
struct RowFields {
    first: bool,
    acc_row: usize,
    add: bool,
    int8: bool,
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
        let a_int8 = if cfg.int8_mode() {
            Some(model.port(mxu::ports::A_INT8)?)
        } else {
            None
        };
        let mut d = MxuDriver {
            cfg: *cfg,
            model,
            p,
            a_int8,
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
        if let Some(a_int8) = self.a_int8 {
            self.model.poke(a_int8, 0);
        }
        self.p.reset_idle(&mut self.model);
    }

    /// C = A x B with int8 A (`m x k`) and B (`k x n`), int32 C (wrapping),
    /// on an int8 array, or on a bf16 array in int8 mode as int8 rows (each
    /// operand in the low byte of its lane). When `expected` is given, every
    /// element is checked as it is read out, and the first difference stops
    /// the run one cycle later with [`DriverError::Mismatch`].
    pub fn matmul_int8(
        &mut self,
        a: &[i8],
        b: &[i8],
        (m, k, n): (usize, usize, usize),
        expected: Option<&[i32]>,
    ) -> Result<(Vec<i32>, MatmulStats), DriverError> {
        let int8_rows = self.cfg.int8_mode();
        if !int8_rows {
            self.require(ElemType::Int8)?;
        }
        let a: Vec<u32> = a.iter().map(|&x| x as u8 as u32).collect();
        let b: Vec<u32> = b.iter().map(|&x| x as u8 as u32).collect();
        let expected: Option<Vec<u32>> = expected.map(|e| e.iter().map(|&x| x as u32).collect());
        let (c, stats) = self.run(&a, &b, (m, k, n), expected.as_deref(), int8_rows)?;
        Ok((c.into_iter().map(|x| x as i32).collect(), stats))
    }

    /// C = A x B as int8 rows of a bf16 array in int8 mode, each operand a
    /// whole 16-bit lane as given: the array reads the low bytes as int8
    /// (`golden::mxu::matmul_int8_low_bytes`) and ignores the high ones.
    /// Checked against `expected` as [`MxuDriver::matmul_int8`] is.
    pub fn matmul_int8_lanes(
        &mut self,
        a: &[u16],
        b: &[u16],
        (m, k, n): (usize, usize, usize),
        expected: Option<&[i32]>,
    ) -> Result<(Vec<i32>, MatmulStats), DriverError> {
        if !self.cfg.int8_mode() {
            return Err(DriverError::Input(format!(
                "int8 rows on 16-bit lanes need a bf16 array in int8 mode, not {}",
                self.cfg
            )));
        }
        let a: Vec<u32> = a.iter().map(|&x| u32::from(x)).collect();
        let b: Vec<u32> = b.iter().map(|&x| u32::from(x)).collect();
        let expected: Option<Vec<u32>> = expected.map(|e| e.iter().map(|&x| x as u32).collect());
        let (c, stats) = self.run(&a, &b, (m, k, n), expected.as_deref(), true)?;
        Ok((c.into_iter().map(|x| x as i32).collect(), stats))
    }

    /// C = A x B with bf16 A and B (bit patterns) and fp32 C (bit patterns),
    /// exactly as `docs/numerics.md#bf16-matmul` defines it for this array's R,
    /// on a bf16 array (in int8 mode, as bf16 rows).
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
        self.run(&a, &b, (m, k, n), expected, false)
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
        int8_rows: bool,
    ) -> Result<(Vec<u32>, MatmulStats), DriverError> {
        let shape = |e: config::ConfigError| DriverError::Input(e.to_string());
        let plan = MatmulPlan::new(&self.cfg, m, k, n).map_err(shape)?;
        plan.check_operands(a.len(), b.len()).map_err(shape)?;
        if expected.is_some_and(|e| e.len() != m * n) {
            return Err(DriverError::Input("expected C has the wrong size".into()));
        }
        let ops = Operands {
            a,
            b,
            plan,
            int8_rows,
        };
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

    /// Streams `tiles` after a reset, as one pass of the eager host: the
    /// tiles' weight rows (bottom row first) from cycle 0, one per cycle
    /// while `w_ready_o` allows, and the tiles' activation rows in order,
    /// each tile's first row a first row, each row offered from the cycle
    /// after the one before was accepted. Rows of both kinds may be mixed
    /// on an array in int8 mode. The host's rules the hardware does not
    /// check are the caller's: distinct accumulator rows within a tile, and
    /// a row that adds 2 + La cycles after the write it adds to
    /// (`hw/mxu/TIMING.md` A3). Returns the pass's cycles, from its first
    /// cycle through its last accumulator write, for the golden cycle
    /// model's `pass_cycles`; [`MxuDriver::read_acc_rows`] reads the results.
    pub fn run_tiles(&mut self, tiles: &[Tile]) -> Result<u64, DriverError> {
        let (rows, cols) = (self.cfg.rows() as usize, self.cfg.cols() as usize);
        for (t, tile) in tiles.iter().enumerate() {
            let bad = |why: String| Err(DriverError::Input(format!("tile {t}: {why}")));
            if tile.weights.len() != rows * cols {
                return bad(format!(
                    "{} weights for a {rows}x{cols} array",
                    tile.weights.len()
                ));
            }
            if tile.rows.is_empty() {
                return bad("no activation row starts it".into());
            }
            for (i, row) in tile.rows.iter().enumerate() {
                if row.a.len() != rows {
                    return bad(format!("row {i} has {} operands, not {rows}", row.a.len()));
                }
                if row.acc_row >= self.cfg.acc_rows() as usize {
                    return bad(format!(
                        "row {i} writes accumulator row {}, of {}",
                        row.acc_row,
                        self.cfg.acc_rows()
                    ));
                }
                if row.int8 && self.a_int8.is_none() {
                    return bad(format!("row {i} is an int8 row, on {}", self.cfg));
                }
            }
        }
        let bits = self.cfg.dtype().operand_bits();
        let weight_row = |j: usize, words: &mut [u32]| {
            let w = &tiles[j / rows].weights;
            let k = rows - 1 - j % rows;
            pack(w[k * cols..(k + 1) * cols].iter().copied(), bits, words);
        };
        let act: Vec<(&TileRow, bool)> = tiles
            .iter()
            .flat_map(|t| t.rows.iter().enumerate().map(|(i, r)| (r, i == 0)))
            .collect();
        let act_row = |i: usize, words: &mut [u32]| {
            let (row, first) = act[i];
            pack(row.a.iter().copied(), bits, words);
            RowFields {
                first,
                acc_row: row.acc_row,
                add: row.add,
                int8: row.int8,
            }
        };
        let deadline = tiles
            .iter()
            .map(|t| (t.rows.len() + 4 * rows + 8) as u64)
            .sum::<u64>()
            + 4 * (rows + cols) as u64
            + 64;
        let mut progress = Progress {
            rows_done: 0,
            rows_total: act.len() as u64,
        };
        self.reset();
        self.stream(
            (tiles.len() * rows, weight_row),
            (act.len(), act_row),
            deadline,
            &mut progress,
        )
    }

    /// Reads accumulator rows `acc_rows` back to back (R1 checked); returns
    /// each row's C words, column 0 first.
    pub fn read_acc_rows(&mut self, acc_rows: &[usize]) -> Result<Vec<Vec<u32>>, DriverError> {
        if let Some(&r) = acc_rows
            .iter()
            .find(|&&r| r >= self.cfg.acc_rows() as usize)
        {
            return Err(DriverError::Input(format!(
                "accumulator row {r} of {}",
                self.cfg.acc_rows()
            )));
        }
        let cols = self.cfg.cols() as usize;
        let mut out = vec![Vec::new(); acc_rows.len()];
        self.read_rows(acc_rows, |r, data| {
            out[r] = data[..cols].to_vec();
            None
        })?;
        Ok(out)
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
        // Row j of a tile is its B row R-1-j (bottom row first).
        let weight_row = |j: usize, words: &mut [u32]| {
            let (g, kt) = tile_of(j / rows);
            let r = rows - 1 - j % rows;
            let row = (0..cols).map(|cc| {
                plan.b_index(kt, pass.nt0 + g, r, cc)
                    .map_or(0, |i| ops.b[i])
            });
            pack(row, bits, words);
        };
        let act_row = |i: usize, words: &mut [u32]| {
            let (g, kt) = tile_of(i / pass_rows);
            let mm = i % pass_rows;
            let row =
                (0..rows).map(|rr| plan.a_index(pass.m0 + mm, kt, rr).map_or(0, |i| ops.a[i]));
            pack(row, bits, words);
            RowFields {
                first: mm == 0,
                acc_row: pass.acc_row(g, mm),
                add: kt > 0,
                int8: ops.int8_rows,
            }
        };
        // A loose bound: every row costs at most a tile load and the latency.
        let deadline = (tiles * (pass_rows + 4 * rows + 8) + 4 * (rows + cols) + 64) as u64;
        self.stream(
            (tiles * rows, weight_row),
            (tiles * pass_rows, act_row),
            deadline,
            progress,
        )
    }

    /// Streams `weight_rows` weight rows and `total_rows` activation rows
    /// as the eager host does: each offered from the cycle after the one
    /// before was taken. `weight_row(j, words)` packs weight row j into the
    /// port's words, `act_row(i, words)` activation row i, returning what
    /// else it carries. Returns the cycles through the last accumulator
    /// write, once every row is written.
    fn stream(
        &mut self,
        (weight_rows, mut weight_row): (usize, impl FnMut(usize, &mut [u32])),
        (total_rows, mut act_row): (usize, impl FnMut(usize, &mut [u32]) -> RowFields),
        deadline: u64,
        progress: &mut Progress,
    ) -> Result<u64, DriverError> {
        let (rows, cols) = (self.cfg.rows() as usize, self.cfg.cols() as usize);
        let bits = self.cfg.dtype().operand_bits();
        let words = |elements: usize| (elements * bits as usize).div_ceil(32);
        let mut w_words = vec![0u32; words(cols)];
        let mut a_words = vec![0u32; words(rows)];
        let (mut pushed, mut accepted, mut written) = (0usize, 0usize, 0usize);
        let mut last_write = 0u64;
        let p = &self.p;
        let mut cycle = 0u64;
        while written < total_rows {
            if pushed < weight_rows {
                weight_row(pushed, &mut w_words);
                self.model.poke(p.w_valid, 1);
                self.model.poke_wide(p.w_row, &w_words);
            } else {
                self.model.poke(p.w_valid, 0);
            }
            if accepted < total_rows {
                let row = act_row(accepted, &mut a_words);
                self.model.poke(p.a_valid, 1);
                self.model.poke(p.a_first, u64::from(row.first));
                self.model.poke_wide(p.a_row, &a_words);
                self.model.poke(p.a_addr, row.acc_row as u64);
                self.model.poke(p.a_add, u64::from(row.add));
                if let Some(a_int8) = self.a_int8 {
                    self.model.poke(a_int8, u64::from(row.int8));
                }
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
    /// cycles it took.
    fn read_out(
        &mut self,
        ops: &Operands<'_>,
        pass: &Pass,
        c: &mut [u32],
        expected: Option<&[u32]>,
    ) -> Result<u64, DriverError> {
        let plan = &ops.plan;
        let n = plan.dims().2;
        let cols = self.cfg.cols() as usize;
        let reads: Vec<(usize, usize)> = (0..pass.n_tiles)
            .flat_map(|g| (0..pass.rows).map(move |mm| (g, mm)))
            .collect();
        let acc_rows: Vec<usize> = reads.iter().map(|&(g, mm)| pass.acc_row(g, mm)).collect();
        self.read_rows(&acc_rows, |r, data| {
            let (g, mm) = reads[r];
            let row = pass.m0 + mm;
            for (cc, &word) in data.iter().enumerate().take(cols) {
                let Some(i) = plan.c_index(row, pass.nt0 + g, cc) else {
                    break;
                };
                c[i] = word;
                if let Some(e) = expected {
                    if e[i] != word {
                        return Some((format!("C[{row}][{}]", i % n), e[i], word));
                    }
                }
            }
            None
        })
    }

    /// Reads accumulator rows `acc_rows` back to back, one per cycle; each
    /// row is handed to `take` (its index in `acc_rows` and its words) when
    /// it arrives, and `acc_rd_valid_o` must be high exactly Lr cycles after
    /// each read (R1, Lr from the golden cycle model). `take` returns a word
    /// that differs from its expected value (its name, the expected value and
    /// the word), which stops the read-out one cycle later with
    /// [`DriverError::Mismatch`]. Returns the cycles it took.
    fn read_rows(
        &mut self,
        acc_rows: &[usize],
        mut take: impl FnMut(usize, &[u32]) -> Option<(String, u32, u32)>,
    ) -> Result<u64, DriverError> {
        let p = &self.p;
        // R1's latency is the configuration's, whatever the matmul.
        let latency = golden::mxu::MxuTiming::new(&self.cfg, 1, 1, 1).read_latency() as usize;
        let mut cycles = 0u64;
        for y in 0..acc_rows.len() + latency - 1 {
            let issue = acc_rows.get(y);
            self.model.poke(p.rd_en, u64::from(issue.is_some()));
            if let Some(&row) = issue {
                self.model.poke(p.rd_addr, row as u64);
            }
            self.model.step();
            cycles += 1;
            self.model.poke(p.rd_en, 0);
            self.model.eval();
            // The read answered in this cycle, if any: the one of cycle y + 1 - Lr.
            let answered = (y + 1).checked_sub(latency).filter(|&r| r < acc_rows.len());
            if self.model.peek(p.rd_valid) != u64::from(answered.is_some()) {
                return Err(DriverError::Protocol(format!(
                    "acc_rd_valid_o is {} {} cycles after the read-out's first read; the \
                     contract (R1, Lr = {latency}) has it {}",
                    self.model.peek(p.rd_valid),
                    y + 1,
                    u8::from(answered.is_some())
                )));
            }
            let Some(r) = answered else {
                continue;
            };
            let data = self.model.peek_wide(p.rd_data);
            if let Some((what, expected, got)) = take(r, &data) {
                // One more cycle so the waveform shows the failure.
                self.model.step();
                self.model.flush_trace();
                return Err(DriverError::Mismatch {
                    what,
                    expected,
                    got,
                    cycle: self.model.cycle(),
                    waveform: self.model.trace_path().map(|p| p.display().to_string()),
                });
            }
        }
        Ok(cycles)
    }
}

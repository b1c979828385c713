//! The MXU driver: runs a whole matrix multiplication on the Verilated MXU.
//!
//! The driver owns the *schedule*, computed from the interface timing the
//! generator reports ([`mxu::Timing`]): it cuts B into R x C weight tiles (N-tile
//! outer, K-tile inner, zero-padded at the edges), pushes each tile's weight rows
//! in the R cycles before the tile's first activation row, streams all M rows of
//! A's matching column block one per cycle, and starts tiles every
//! max(M, 2R-1) cycles so that loading the next tile overlaps the current one.
//! Output rows are collected when the RTL raises `c_valid_o`, never at a cycle
//! the driver assumes, and K-tiles are summed into C with int32 wraparound.
//!
//! The cycle count it reports is measured on the RTL (cycle 0 is the first
//! weight push, the count ends with the cycle of the last output row), so the
//! tests can hold it to the golden cycle model exactly.

use crate::from_hw::model_spec;
use crate::verilator::{Model, PortId, SimError};
use config::{ElemType, MxuConfig};
use hw::{emit_design, Design, Header};
use std::fmt;

/// One matmul's measured cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MatmulStats {
    pub rows: u32,
    pub cols: u32,
    /// Clock cycles from the first weight push through the last output row.
    pub cycles: u64,
    /// Useful multiply-accumulates, M x K x N.
    pub macs: u64,
    /// Weight tiles streamed.
    pub tiles: u64,
}

impl MatmulStats {
    /// MACs / (cycles x R x C).
    pub fn utilization(&self) -> f64 {
        self.macs as f64 / (self.cycles as f64 * self.rows as f64 * self.cols as f64)
    }
}

/// Why a matmul on the RTL failed.
#[derive(Debug)]
pub enum DriverError {
    /// The model could not be built or loaded.
    Sim(SimError),
    /// Operand shapes do not describe a matmul.
    Shape(String),
    /// The RTL broke its interface contract (an output at an unexpected time,
    /// or missing outputs).
    Protocol(String),
    /// An output differs from the expected value. The simulation ran one more
    /// cycle after the failing one, so a waveform shows it.
    Mismatch {
        row: usize,
        col: usize,
        expected: i32,
        got: i32,
        cycle: u64,
        waveform: Option<String>,
    },
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DriverError::Sim(e) => write!(f, "{e}"),
            DriverError::Shape(s) | DriverError::Protocol(s) => f.write_str(s),
            DriverError::Mismatch {
                row,
                col,
                expected,
                got,
                cycle,
                waveform,
            } => {
                write!(
                    f,
                    "C[{row}][{col}] = {got} from the RTL, expected {expected} (output cycle {cycle})"
                )?;
                if let Some(w) = waveform {
                    write!(f, "; waveform: {w}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for DriverError {}

impl From<SimError> for DriverError {
    fn from(e: SimError) -> Self {
        DriverError::Sim(e)
    }
}

/// A Verilated MXU of one configuration, ready for matmuls.
pub struct MxuDriver {
    cfg: MxuConfig,
    timing: mxu::Timing,
    model: Model,
    w_valid: PortId,
    w_row: PortId,
    a_valid: PortId,
    a_first: PortId,
    a_row: PortId,
    c_valid: PortId,
    c_row: PortId,
    reset: PortId,
}

/// The Verilog of the MXU for `cfg`, as `gen` would write it.
pub fn mxu_files(cfg: &MxuConfig) -> (Vec<hw::EmittedFile>, std::rc::Rc<hw::ModuleDef>) {
    let mut design = Design::new();
    let top = mxu::build(&mut design, cfg);
    let header = Header {
        generator: format!("systole-sim {}", env!("CARGO_PKG_VERSION")),
        params: cfg.params(),
    };
    (emit_design(&design, &top, &header), top)
}

/// Packs `values` of `bits` each (little-endian, element 0 lowest) into words.
fn pack(values: impl Iterator<Item = u32>, bits: u32, words: &mut [u32]) {
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

impl MxuDriver {
    /// Builds (or loads from the cache) the Verilated MXU for `cfg` and resets it.
    pub fn new(cfg: &MxuConfig) -> Result<MxuDriver, DriverError> {
        let (files, top) = mxu_files(cfg);
        let spec = model_spec(&files, &top);
        let label = mxu::top_name(cfg);
        let model = Model::build(&spec, &label)?;
        let port = |name: &str| model.port(name);
        use mxu::ports::*;
        let mut d = MxuDriver {
            cfg: *cfg,
            timing: mxu::Timing::of(cfg),
            w_valid: port(W_VALID)?,
            w_row: port(W_ROW)?,
            a_valid: port(A_VALID)?,
            a_first: port(A_FIRST)?,
            a_row: port(A_ROW)?,
            c_valid: port(C_VALID)?,
            c_row: port(C_ROW)?,
            reset: port(hw::ir::RESET)?,
            model,
        };
        d.reset();
        Ok(d)
    }

    pub fn config(&self) -> &MxuConfig {
        &self.cfg
    }

    /// The underlying model (for benchmarks and waveform control).
    pub fn model_mut(&mut self) -> &mut Model {
        &mut self.model
    }

    /// Holds reset for one cycle with all valids low.
    pub fn reset(&mut self) {
        let m = &mut self.model;
        for p in [self.w_valid, self.a_valid, self.a_first] {
            m.poke(p, 0);
        }
        m.poke(self.reset, 1);
        m.step();
        m.poke(self.reset, 0);
    }

    /// C = A x B on the RTL, with A `m x k` and B `k x n` row-major int8 and C
    /// int32 (wrapping). When `expected` is given, every element of C is checked
    /// the moment its last K-tile leaves the array, and the first difference
    /// stops the run one cycle later with [`DriverError::Mismatch`].
    pub fn matmul_int8(
        &mut self,
        a: &[i8],
        b: &[i8],
        (m, k, n): (usize, usize, usize),
        expected: Option<&[i32]>,
    ) -> Result<(Vec<i32>, MatmulStats), DriverError> {
        if self.cfg.dtype() != ElemType::Int8 {
            return Err(DriverError::Shape(format!(
                "this MXU is {}, not int8",
                self.cfg.dtype()
            )));
        }
        if m == 0 || k == 0 || n == 0 {
            return Err(DriverError::Shape(format!(
                "matmul dimensions must be >= 1, got M={m} K={k} N={n}"
            )));
        }
        if a.len() != m * k || b.len() != k * n {
            return Err(DriverError::Shape(format!(
                "A has {} elements and B {}, expected {} (M x K) and {} (K x N)",
                a.len(),
                b.len(),
                m * k,
                k * n
            )));
        }
        if let Some(e) = expected {
            if e.len() != m * n {
                return Err(DriverError::Shape("expected C has the wrong size".into()));
            }
        }
        let (rows, cols) = (self.cfg.rows() as usize, self.cfg.cols() as usize);
        let k_tiles = k.div_ceil(rows);
        let n_tiles = n.div_ceil(cols);
        let tiles = k_tiles * n_tiles;
        let r = self.timing.weight_load_cycles as u64;
        let interval = (m as u64).max(self.timing.min_tile_interval as u64);
        let tile_start = |i: usize| r + i as u64 * interval;
        // Tile i covers k-tile i % k_tiles of n-tile i / k_tiles.
        let tile_of = |i: usize| (i / k_tiles, i % k_tiles);

        let mut c = vec![0i32; m * n];
        let words = |bits: usize| bits.div_ceil(32);
        let mut w_words = vec![0u32; words(cols * 8)];
        let mut a_words = vec![0u32; words(rows * 8)];
        let mut outputs_seen = 0usize;
        let total_outputs = tiles * m;
        let last_start = tile_start(tiles - 1);
        // Generous bound: the RTL must be done by the modelled end plus slack.
        let deadline = last_start + m as u64 + self.timing.latency as u64 + 8;

        let mut cycle = 0u64;
        loop {
            // Weights: tile i's rows are pushed in the R cycles before it starts
            // (cycles i*I .. i*I+R-1), bottom row first.
            let push = Some(((cycle / interval) as usize, cycle % interval))
                .filter(|&(i, off)| i < tiles && off < r);
            match push {
                Some((i, j)) => {
                    let (nt, kt) = tile_of(i);
                    let j = j as usize;
                    let kk = kt * rows + (rows - 1 - j);
                    let row = (0..cols).map(|cc| {
                        let nn = nt * cols + cc;
                        if kk < k && nn < n {
                            b[kk * n + nn] as u8 as u32
                        } else {
                            0
                        }
                    });
                    pack(row, 8, &mut w_words);
                    self.model.poke(self.w_valid, 1);
                    self.model.poke_wide(self.w_row, &w_words);
                }
                None => self.model.poke(self.w_valid, 0),
            }
            // Activations: tile i's M rows from its start cycle R + i*I.
            let stream = cycle
                .checked_sub(r)
                .map(|t| ((t / interval) as usize, t % interval))
                .filter(|&(i, off)| i < tiles && off < m as u64);
            match stream {
                Some((i, mm)) => {
                    let (_, kt) = tile_of(i);
                    let mm = mm as usize;
                    let row = (0..rows).map(|rr| {
                        let kk = kt * rows + rr;
                        if kk < k {
                            a[mm * k + kk] as u8 as u32
                        } else {
                            0
                        }
                    });
                    pack(row, 8, &mut a_words);
                    self.model.poke(self.a_valid, 1);
                    self.model.poke(self.a_first, (mm == 0) as u64);
                    self.model.poke_wide(self.a_row, &a_words);
                }
                None => {
                    self.model.poke(self.a_valid, 0);
                    self.model.poke(self.a_first, 0);
                }
            }
            self.model.eval();

            if self.model.peek(self.c_valid) == 1 {
                if outputs_seen == total_outputs {
                    return Err(DriverError::Protocol(format!(
                        "c_valid_o high in cycle {cycle} after all {total_outputs} output rows"
                    )));
                }
                let i = outputs_seen / m;
                let mm = outputs_seen % m;
                let (nt, kt) = tile_of(i);
                let out = self.model.peek_wide(self.c_row);
                for (cc, &word) in out.iter().enumerate().take(cols) {
                    let nn = nt * cols + cc;
                    if nn >= n {
                        continue;
                    }
                    let slot = &mut c[mm * n + nn];
                    *slot = slot.wrapping_add(word as i32);
                    if let (Some(exp), true) = (expected, kt == k_tiles - 1) {
                        if exp[mm * n + nn] != *slot {
                            let got = *slot;
                            // One more cycle so the waveform shows the failure.
                            self.model.step();
                            self.model.flush_trace();
                            return Err(DriverError::Mismatch {
                                row: mm,
                                col: nn,
                                expected: exp[mm * n + nn],
                                got,
                                cycle,
                                waveform: self.model.trace_path().map(|p| p.display().to_string()),
                            });
                        }
                    }
                }
                outputs_seen += 1;
                if outputs_seen == total_outputs {
                    self.model.step();
                    let stats = MatmulStats {
                        rows: rows as u32,
                        cols: cols as u32,
                        cycles: cycle + 1,
                        macs: (m * k * n) as u64,
                        tiles: tiles as u64,
                    };
                    return Ok((c, stats));
                }
            }
            self.model.step();
            cycle += 1;
            if cycle > deadline {
                return Err(DriverError::Protocol(format!(
                    "only {outputs_seen} of {total_outputs} output rows by cycle {cycle}"
                )));
            }
        }
    }
}

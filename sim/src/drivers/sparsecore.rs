//! The SparseCore driver: the host of the Verilated SparseCore's interface
//! (see the `sparsecore` crate docs) and the HBM behind it.
//!
//! The host streams each tile's entries (as `golden::sparsecore_host`
//! prepared them), each tile's list ended by a marker, from the cycle of the
//! start on, whenever the entry queue has room. The HBM model holds the table
//! row-major in 32-byte words and answers reads in order, after a fixed
//! latency or a random one (at least 2 cycles), and can refuse requests at
//! random (backpressure). The driver follows the handshakes and never assumes
//! a cycle; it reports what it measured, so tests can hold the RTL to the
//! golden cycle model.

use super::{block_model, Driver, DriverError};
use crate::verilator::Model;
use config::SparseCoreConfig;
use golden::sparsecore_host::Prepared;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

/// How the testbench's HBM behaves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HbmBehaviour {
    /// Always ready; every read answered exactly this many cycles after its
    /// handshake (at least 2): the cycle model's HBM.
    Fixed(u32),
    /// Each read answered after a latency drawn from `min ..= max` (in
    /// order, so never before the previous answer), requests accepted with
    /// probability `ready`; drawn from `seed`.
    Random {
        min: u32,
        max: u32,
        ready: f64,
        seed: u64,
    },
}

/// The table in HBM: row-major fp32 elements packed 8 to a 32-byte word.
struct Hbm {
    words: Vec<[u32; 8]>,
    behaviour: HbmBehaviour,
    rng: ChaCha8Rng,
    /// Reads accepted and not yet answered: (answer cycle, word address).
    pending: VecDeque<(u64, u64)>,
    last_answer: u64,
}

impl Hbm {
    fn new(table: &[u32], behaviour: HbmBehaviour) -> Hbm {
        let words = table
            .chunks(8)
            .map(|c| {
                let mut w = [0u32; 8];
                w[..c.len()].copy_from_slice(c);
                w
            })
            .collect();
        let seed = match behaviour {
            HbmBehaviour::Random { seed, .. } => seed,
            HbmBehaviour::Fixed(_) => 0,
        };
        Hbm {
            words,
            behaviour,
            rng: ChaCha8Rng::seed_from_u64(seed),
            pending: VecDeque::new(),
            last_answer: 0,
        }
    }

    fn ready(&mut self) -> bool {
        match self.behaviour {
            HbmBehaviour::Fixed(_) => true,
            HbmBehaviour::Random { ready, .. } => self.rng.gen_bool(ready),
        }
    }

    fn accept(&mut self, cycle: u64, addr: u64) {
        let latency = match self.behaviour {
            HbmBehaviour::Fixed(l) => u64::from(l),
            HbmBehaviour::Random { min, max, .. } => u64::from(self.rng.gen_range(min..=max)),
        };
        let answer = (cycle + latency.max(2)).max(self.last_answer + 1);
        self.last_answer = answer;
        self.pending.push_back((answer, addr));
    }

    /// A write of the lanes of `data` that `mask` selects; outside the
    /// table it is a protocol error (the block checks bounds).
    fn write(&mut self, addr: u64, data: &[u32], mask: u64) -> Result<(), String> {
        let word = self
            .words
            .get_mut(addr as usize)
            .ok_or_else(|| format!("HBM write to word {addr}, outside the table"))?;
        for (l, w) in word.iter_mut().enumerate() {
            if mask >> l & 1 == 1 {
                *w = data[l];
            }
        }
        Ok(())
    }

    /// The word answered in `cycle`, if any.
    fn answer(&mut self, cycle: u64) -> Option<[u32; 8]> {
        match self.pending.front() {
            Some(&(at, addr)) if at == cycle => {
                self.pending.pop_front();
                Some(self.words.get(addr as usize).copied().unwrap_or([0; 8]))
            }
            _ => None,
        }
    }
}

crate::block_ports! {
    /// The SparseCore's ports on a model of it.
    struct Ports {
        start: sparsecore::ports::START,
        rows: sparsecore::ports::ROWS,
        dim: sparsecore::ports::DIM,
        batch: sparsecore::ports::BATCH,
        busy: sparsecore::ports::BUSY,
        ent_valid: sparsecore::ports::ENT_VALID,
        ent_ready: sparsecore::ports::ENT_READY,
        ent_marker: sparsecore::ports::ENT_MARKER,
        ent_id: sparsecore::ports::ENT_ID,
        ent_sample: sparsecore::ports::ENT_SAMPLE,
        ent_gain: sparsecore::ports::ENT_GAIN,
        rd_valid: sparsecore::ports::HBM_RD_VALID,
        rd_ready: sparsecore::ports::HBM_RD_READY,
        rd_addr: sparsecore::ports::HBM_RD_ADDR,
        rsp_valid: sparsecore::ports::HBM_RSP_VALID,
        rsp_data: sparsecore::ports::HBM_RSP_DATA,
        act_rd_en: sparsecore::ports::ACT_RD_EN,
        act_rd_addr: sparsecore::ports::ACT_RD_ADDR,
        act_rd_data: sparsecore::ports::ACT_RD_DATA,
        invalid: sparsecore::ports::INVALID,
        mode: sparsecore::ports::MODE,
        lr: sparsecore::ports::LR,
        act_wr_en: sparsecore::ports::ACT_WR_EN,
        act_wr_addr: sparsecore::ports::ACT_WR_ADDR,
        act_wr_data: sparsecore::ports::ACT_WR_DATA,
        wr_valid: sparsecore::ports::HBM_WR_VALID,
        wr_ready: sparsecore::ports::HBM_WR_READY,
        wr_addr: sparsecore::ports::HBM_WR_ADDR,
        wr_data: sparsecore::ports::HBM_WR_DATA,
        wr_mask: sparsecore::ports::HBM_WR_MASK,
        reset: hw::ir::RESET,
    }
}

/// What one forward pass on the RTL gave and measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForwardRun {
    /// A\[B\]\[D\], fp32 bit patterns.
    pub activations: Vec<u32>,
    /// Entries the block skipped (`invalid_o`).
    pub invalid: u64,
    /// From the start's cycle through the last cycle `busy_o` was high.
    pub cycles: u64,
    /// HBM words read.
    pub words_read: u64,
}

/// What one update pass on the RTL gave and measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateRun {
    /// The whole table after the update, fp32 bit patterns.
    pub table: Vec<u32>,
    /// Entries the block skipped (`invalid_o`).
    pub invalid: u64,
    /// From the start's cycle through the last cycle `busy_o` was high.
    pub cycles: u64,
    /// HBM words read and written.
    pub words_read: u64,
    pub words_written: u64,
    /// Table rows the block wrote, counted from its writes: the writes of a
    /// row's last element (a row written twice counts twice).
    pub rows_written: u64,
}

/// A finished pass.
struct Pass {
    hbm: Hbm,
    invalid: u64,
    cycles: u64,
    words_read: u64,
    words_written: u64,
    rows_written: u64,
}

impl Driver for SparseCoreDriver {
    type Block = sparsecore::SparseCore;
    fn open(cfg: &SparseCoreConfig) -> Result<Self, DriverError> {
        SparseCoreDriver::new(cfg)
    }
}

/// A Verilated SparseCore of one configuration.
pub struct SparseCoreDriver {
    cfg: SparseCoreConfig,
    model: Model,
    p: Ports,
    early_cycles: u32,
}

impl SparseCoreDriver {
    /// Builds (or loads from the cache) the Verilated SparseCore for `cfg`
    /// and resets it.
    pub fn new(cfg: &SparseCoreConfig) -> Result<SparseCoreDriver, DriverError> {
        let model = block_model(&sparsecore::SparseCore, cfg)?;
        let p = Ports::of(&model)?;
        let mut d = SparseCoreDriver {
            cfg: *cfg,
            model,
            p,
            early_cycles: 0,
        };
        d.reset();
        Ok(d)
    }

    pub fn config(&self) -> &SparseCoreConfig {
        &self.cfg
    }

    /// From now on each pass's host pushes the stream for `cycles` cycles
    /// before it starts the pass (the contract allows entries before the
    /// start; the block must not walk them with the previous pass's D, V
    /// and B). The passes' cycle counts still run from the start, so they
    /// no longer match the cycle model, which pushes from the start.
    pub fn set_early_pushes(&mut self, cycles: u32) {
        self.early_cycles = cycles;
    }

    /// The underlying model (benchmarks, waveforms).
    pub fn model_mut(&mut self) -> &mut Model {
        &mut self.model
    }

    /// Drives every input low and holds reset for one cycle.
    pub fn reset(&mut self) {
        let p = self.p;
        self.model.reset_with_idle_inputs(
            p.reset,
            &[
                p.start,
                p.ent_valid,
                p.rd_ready,
                p.rsp_valid,
                p.act_rd_en,
                p.mode,
                p.act_wr_en,
                p.wr_ready,
            ],
        );
    }

    /// One forward pass: `table` is E\[rows\]\[dim\] (fp32 bits, row-major),
    /// `prepared` the entry lists for this configuration's tile count.
    pub fn forward(
        &mut self,
        table: &[u32],
        rows: u32,
        dim: u32,
        batch: u32,
        prepared: &Prepared,
        hbm: HbmBehaviour,
    ) -> Result<ForwardRun, DriverError> {
        let pass = self.pass(table, rows, dim, batch, prepared, hbm, None)?;
        let activations = self.read_activations(dim, batch);
        Ok(ForwardRun {
            activations,
            invalid: pass.invalid,
            cycles: pass.cycles,
            words_read: pass.words_read,
        })
    }

    /// One update pass: `grad` is G\[batch\]\[dim\], `lr` the fp32 rate; returns
    /// the whole table as HBM holds it afterwards.
    #[allow(clippy::too_many_arguments)]
    pub fn update(
        &mut self,
        table: &[u32],
        rows: u32,
        dim: u32,
        batch: u32,
        prepared: &Prepared,
        grad: &[u32],
        lr: u32,
        hbm: HbmBehaviour,
    ) -> Result<UpdateRun, DriverError> {
        if grad.len() as u64 != u64::from(batch) * u64::from(dim) {
            return Err(DriverError::Input(format!(
                "a gradient of {} elements is not {batch} rows of {dim}",
                grad.len()
            )));
        }
        self.check_shape(table, rows, dim, batch, prepared)?;
        self.write_gradient(grad, dim, batch);
        let pass = self.pass(table, rows, dim, batch, prepared, hbm, Some(lr))?;
        let mut out: Vec<u32> = pass.hbm.words.iter().flatten().copied().collect();
        out.truncate(table.len());
        Ok(UpdateRun {
            table: out,
            invalid: pass.invalid,
            cycles: pass.cycles,
            words_read: pass.words_read,
            words_written: pass.words_written,
            rows_written: pass.rows_written,
        })
    }

    /// Writes G[batch][dim] into the activation buffer (the layout of A).
    fn write_gradient(&mut self, grad: &[u32], dim: u32, batch: u32) {
        let p = self.p;
        let row_words = dim.div_ceil(8);
        self.model.poke(p.act_wr_en, 1);
        for s in 0..batch {
            let row = &grad[(s * dim) as usize..][..dim as usize];
            for j in 0..row_words {
                let mut word = [0u32; 8];
                let part = &row[(8 * j) as usize..row.len().min(8 * (j as usize + 1))];
                word[..part.len()].copy_from_slice(part);
                self.model
                    .poke(p.act_wr_addr, u64::from(sparsecore::act_word(s, j, dim)));
                self.model.poke_wide(p.act_wr_data, &word);
                self.model.step();
            }
        }
        self.model.poke(p.act_wr_en, 0);
    }

    /// Runs one pass (a forward pass, or an update with rate `lr`) to its end.
    #[allow(clippy::too_many_arguments)]
    fn pass(
        &mut self,
        table: &[u32],
        rows: u32,
        dim: u32,
        batch: u32,
        prepared: &Prepared,
        hbm: HbmBehaviour,
        lr: Option<u32>,
    ) -> Result<Pass, DriverError> {
        self.check_shape(table, rows, dim, batch, prepared)?;
        if let HbmBehaviour::Random {
            min, max, ready, ..
        } = hbm
        {
            if min < 2 || max < min || !(ready > 0.0 && ready <= 1.0) {
                return Err(DriverError::Input(format!(
                    "random HBM latency {min}..={max} (at least 2) with ready rate {ready} in (0, 1]"
                )));
            }
        }
        if let HbmBehaviour::Fixed(l) = hbm {
            if l < 2 {
                return Err(DriverError::Input(format!(
                    "HBM latency {l}: the interface needs at least 2"
                )));
            }
        }
        // The stream: each tile's entries, then its marker.
        let mut stream: Vec<Option<(u32, u32, u32)>> = Vec::new();
        for entries in &prepared.tiles {
            stream.extend(
                entries
                    .iter()
                    .map(|e| Some((e.id as u32, e.sample, e.gain))),
            );
            stream.push(None);
        }
        let mut mem = Hbm::new(table, hbm);
        let p = self.p;
        self.model.poke(p.rows, u64::from(rows));
        self.model.poke(p.dim, u64::from(dim));
        self.model.poke(p.batch, u64::from(batch));
        self.model.poke(p.mode, lr.is_some() as u64);
        self.model.poke(p.lr, u64::from(lr.unwrap_or(0)));
        let mut next = 0usize;
        let mut words_read = 0u64;
        let mut words_written = 0u64;
        let mut rows_written = 0u64;
        let mut cycle = 0u64;
        // Generous: every word at the worst latency and through the whole
        // combine pipeline (a deep one holds an update's row until its U is
        // written), plus clears and folds.
        let span = u64::from(batch) * u64::from(dim.div_ceil(8));
        let max_latency = match hbm {
            HbmBehaviour::Fixed(l) => u64::from(l),
            HbmBehaviour::Random { max, ready, .. } => u64::from(max) + (16.0 / ready) as u64,
        };
        let words_bound: u64 = stream.len() as u64 * (u64::from(dim) / 8 + 2);
        let pipeline = 4 * (u64::from(self.cfg.depth()) + 2);
        let limit = (words_bound + 4) * (max_latency + 4 + pipeline)
            + (u64::from(self.cfg.tiles()) + 1) * (span + max_latency + 8)
            + 64;
        let mut stalled_read: Option<u64> = None;
        let mut stalled_write: Option<(u64, Vec<u32>, u64)> = None;
        // Entries pushed while the block is idle, before the start.
        self.model.poke(p.start, 0);
        self.model.poke(p.rd_ready, 1);
        self.model.poke(p.wr_ready, 1);
        for early in 0..self.early_cycles {
            self.offer_entry(stream.get(next).copied());
            self.model.eval();
            if self.model.peek(p.busy) == 1
                || self.model.peek(p.rd_valid) == 1
                || self.model.peek(p.wr_valid) == 1
            {
                return Err(DriverError::Protocol(format!(
                    "{} cycles before the start: busy_o or an HBM request while idle",
                    self.early_cycles - early
                )));
            }
            if next < stream.len() && self.model.peek(p.ent_ready) == 1 {
                next += 1;
            }
            self.model.step();
        }
        loop {
            self.model.poke(p.start, (cycle == 0) as u64);
            self.offer_entry(stream.get(next).copied());
            let ready = mem.ready();
            self.model.poke(p.rd_ready, ready as u64);
            let write_ready = mem.ready();
            self.model.poke(p.wr_ready, write_ready as u64);
            match mem.answer(cycle) {
                Some(word) => {
                    self.model.poke(p.rsp_valid, 1);
                    self.model.poke_wide(p.rsp_data, &word);
                }
                None => self.model.poke(p.rsp_valid, 0),
            }
            self.model.eval();
            let busy = self.model.peek(p.busy) == 1;
            if cycle == 0 && busy {
                return Err(DriverError::Protocol(
                    "busy_o was high before the start".into(),
                ));
            }
            if cycle > 0 && !busy {
                break;
            }
            if next < stream.len() && self.model.peek(p.ent_ready) == 1 {
                next += 1;
            }
            // Valid/ready: a request offered and not taken must stay offered,
            // unchanged, until it is taken.
            let read_offer = (self.model.peek(p.rd_valid) == 1).then(|| self.model.peek(p.rd_addr));
            let write_offer = (self.model.peek(p.wr_valid) == 1).then(|| {
                (
                    self.model.peek(p.wr_addr),
                    self.model.peek_wide(p.wr_data),
                    self.model.peek(p.wr_mask),
                )
            });
            // One channel: a read and a write are never offered together.
            if read_offer.is_some() && write_offer.is_some() {
                return Err(DriverError::Protocol(format!(
                    "cycle {cycle}: an HBM read and an HBM write offered in one cycle"
                )));
            }
            if let Some(held) = stalled_read.take() {
                if read_offer != Some(held) {
                    return Err(DriverError::Protocol(format!(
                        "cycle {cycle}: the HBM read of word {held} was withdrawn or changed before it was accepted"
                    )));
                }
            }
            if let Some(held) = stalled_write.take() {
                if write_offer.as_ref() != Some(&held) {
                    return Err(DriverError::Protocol(format!(
                        "cycle {cycle}: the HBM write of word {} was withdrawn or changed before it was accepted",
                        held.0
                    )));
                }
            }
            if !ready {
                stalled_read = read_offer;
            }
            if !write_ready {
                stalled_write = write_offer;
            }
            if ready && self.model.peek(p.rd_valid) == 1 {
                mem.accept(cycle, self.model.peek(p.rd_addr));
                words_read += 1;
            }
            if write_ready && self.model.peek(p.wr_valid) == 1 {
                let addr = self.model.peek(p.wr_addr);
                let data = self.model.peek_wide(p.wr_data);
                let mask = self.model.peek(p.wr_mask);
                mem.write(addr, &data, mask)
                    .map_err(DriverError::Protocol)?;
                words_written += 1;
                // Lane k holds element 8 x addr + k of the row-major table.
                rows_written += (0..8u64)
                    .filter(|&k| {
                        mask >> k & 1 == 1 && (8 * addr + k) % u64::from(dim) == u64::from(dim) - 1
                    })
                    .count() as u64;
            }
            self.model.step();
            cycle += 1;
            if cycle > limit {
                return Err(DriverError::Protocol(format!(
                    "the pass did not end within {limit} cycles"
                )));
            }
        }
        self.model.poke(p.ent_valid, 0);
        self.model.poke(p.rsp_valid, 0);
        self.model.poke(p.rd_ready, 0);
        self.model.poke(p.wr_ready, 0);
        if next < stream.len() || !mem.pending.is_empty() {
            return Err(DriverError::Protocol(format!(
                "the pass ended with {} entries not taken and {} reads unanswered",
                stream.len() - next,
                mem.pending.len()
            )));
        }
        let invalid = self.model.peek(p.invalid);
        Ok(Pass {
            hbm: mem,
            invalid,
            cycles: cycle,
            words_read,
            words_written,
            rows_written,
        })
    }

    /// Drives the entry stream's inputs: `entry` offered (`None` inside: a
    /// marker), or nothing when the stream is exhausted.
    fn offer_entry(&mut self, entry: Option<Option<(u32, u32, u32)>>) {
        let p = self.p;
        match entry {
            Some(entry) => {
                self.model.poke(p.ent_valid, 1);
                let (id, sample, gain) = entry.unwrap_or((0, 0, 0));
                self.model.poke(p.ent_marker, entry.is_none() as u64);
                self.model.poke(p.ent_id, u64::from(id));
                self.model.poke(p.ent_sample, u64::from(sample));
                self.model.poke(p.ent_gain, u64::from(gain));
            }
            None => self.model.poke(p.ent_valid, 0),
        }
    }

    fn check_shape(
        &self,
        table: &[u32],
        rows: u32,
        dim: u32,
        batch: u32,
        prepared: &Prepared,
    ) -> Result<(), DriverError> {
        let c = &self.cfg;
        if dim == 0 || dim > c.max_dim() {
            return Err(DriverError::Input(format!(
                "D = {dim} is outside 1..={} of this SparseCore",
                c.max_dim()
            )));
        }
        if batch == 0 || batch > c.max_batch() {
            return Err(DriverError::Input(format!(
                "B = {batch} is outside 1..={} of this SparseCore",
                c.max_batch()
            )));
        }
        if rows == 0 || table.len() as u64 != u64::from(rows) * u64::from(dim) {
            return Err(DriverError::Input(format!(
                "a table of {} elements is not {rows} rows of {dim}",
                table.len()
            )));
        }
        if prepared.tiles.len() != c.tiles() as usize {
            return Err(DriverError::Input(format!(
                "entries sharded over {} tiles for a SparseCore of {}",
                prepared.tiles.len(),
                c.tiles()
            )));
        }
        Ok(())
    }

    /// Reads A[B][D] out of the activation buffer, one word per cycle.
    fn read_activations(&mut self, dim: u32, batch: u32) -> Vec<u32> {
        let p = self.p;
        let row_words = dim.div_ceil(8);
        let mut out = Vec::with_capacity((batch * dim) as usize);
        self.model.poke(p.act_rd_en, 1);
        for s in 0..batch {
            for j in 0..row_words {
                self.model
                    .poke(p.act_rd_addr, u64::from(sparsecore::act_word(s, j, dim)));
                self.model.step();
                let word = self.model.peek_wide(p.act_rd_data);
                let take = (dim - 8 * j).min(8) as usize;
                out.extend_from_slice(&word[..take]);
            }
        }
        self.model.poke(p.act_rd_en, 0);
        out
    }
}

//! The ICI link driver: two clients on a Verilated link pair (`ici::pair`),
//! one on each node, sending flits both ways at once over the serdes stubs.
//!
//! Each client offers its flits in order on `tx` whenever it has one left
//! (a flit is taken when `tx_ready_o` is high) and takes received flits on
//! `rx` when its `rx_ready` pattern says so. The driver records the cycle of
//! every transfer, so tests can hold delivery and timing to `golden::ici`.
//! Error injection: the stubs' random rates and seed ([`Faults`]), and
//! scripted errors per cycle ([`Script`]).

use super::{block_model, Driver, DriverError, PortTable};
use crate::verilator::{Model, PortId};
use config::ici::Flit;
use config::IciConfig;
use ici::link::ports as lp;
use ici_serdes_stub::ports as sp;

/// Random error rates and the seed of the stubs (both directions).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Faults {
    /// Bit error rate.
    pub ber: f64,
    /// Probability that a word is dropped.
    pub drop_rate: f64,
    /// Probability that a word is duplicated.
    pub dup_rate: f64,
    pub seed: u64,
}

/// Scripted errors of one cycle on one direction: drop the word, duplicate
/// the previous one, flip these bits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Injection {
    pub drop: bool,
    pub dup: bool,
    pub flips: Vec<u32>,
}

/// Scripted errors: cycle -> (A to B, B to A).
pub type Script<'a> = &'a mut dyn FnMut(u64) -> (Injection, Injection);

/// The counters of one link end (the `ici::link` status outputs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkCounters {
    pub flits_sent: u64,
    pub flits_received: u64,
    pub crc_errors: u64,
    pub retransmits: u64,
    pub naks_sent: u64,
    pub naks_received: u64,
    pub timeouts: u64,
    pub link_downs: u64,
}

/// The counters of one stub direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StubCounters {
    pub words: u64,
    pub dropped: u64,
    pub duplicated: u64,
    pub corrupted: u64,
}

/// What one run gave: the flits each node received and the cycles.
#[derive(Debug, Clone, Default)]
pub struct LinkRun {
    /// Flits node B received (sent by A) and node A received (sent by B).
    pub at_b: Vec<Flit>,
    pub at_a: Vec<Flit>,
    /// Cycle of each transfer: A's and B's `tx` acceptances, B's and A's
    /// `rx` deliveries.
    pub a_tx_cycles: Vec<u64>,
    pub b_tx_cycles: Vec<u64>,
    pub b_rx_cycles: Vec<u64>,
    pub a_rx_cycles: Vec<u64>,
    /// Cycles until both clients had every flit (one past the last delivery).
    pub cycles: u64,
    pub a: LinkCounters,
    pub b: LinkCounters,
    pub ab: StubCounters,
    pub ba: StubCounters,
    /// Any protocol-state alarm raised: receive buffer overflow or a credit
    /// error, at either end.
    pub alarms: Vec<String>,
}

/// The ports of one node's client side.
struct Client {
    tx_valid: PortId,
    tx_ready: PortId,
    tx_data: PortId,
    tx_last: PortId,
    tx_len: PortId,
    rx_valid: PortId,
    rx_ready: PortId,
    rx_data: PortId,
    rx_last: PortId,
    rx_len: PortId,
    counters: [PortId; 8],
    alarms: [PortId; 2],
}

struct Direction {
    flip: PortId,
    drop: PortId,
    dup: PortId,
    counters: [PortId; 4],
}

impl Driver for IciDriver {
    type Block = ici::Ici;
    fn open(cfg: &IciConfig) -> Result<Self, DriverError> {
        IciDriver::new(cfg)
    }
}

/// A Verilated ICI link pair of one configuration.
pub struct IciDriver {
    cfg: IciConfig,
    model: Model,
    a: Client,
    b: Client,
    ab: Direction,
    ba: Direction,
    reset: PortId,
    seed: PortId,
    seed_load: PortId,
    thresholds: [PortId; 3],
}

impl IciDriver {
    /// Builds (or loads from the cache) the pair for `cfg`.
    pub fn new(cfg: &IciConfig) -> Result<IciDriver, DriverError> {
        let model = block_model(&ici::Ici, cfg)?;
        let ports = PortTable::new(&model);
        let client = |node: &str| -> Result<Client, DriverError> {
            let q = PortTable::prefixed(&model, &format!("{node}_"));
            Ok(Client {
                tx_valid: q.get("tx_valid_i")?,
                tx_ready: q.get("tx_ready_o")?,
                tx_data: q.get("tx_data_i")?,
                tx_last: q.get("tx_last_i")?,
                tx_len: q.get("tx_len_i")?,
                rx_valid: q.get("rx_valid_o")?,
                rx_ready: q.get("rx_ready_i")?,
                rx_data: q.get("rx_data_o")?,
                rx_last: q.get("rx_last_o")?,
                rx_len: q.get("rx_len_o")?,
                counters: q.array(lp::COUNTERS)?,
                alarms: q.array([lp::RX_OVERFLOW, lp::CREDIT_ERROR])?,
            })
        };
        let direction = |dir: &str| -> Result<Direction, DriverError> {
            let q = PortTable::prefixed(&model, &format!("{dir}_"));
            Ok(Direction {
                flip: q.get("force_flip_i")?,
                drop: q.get("force_drop_i")?,
                dup: q.get("force_dup_i")?,
                counters: q.array([sp::WORDS, sp::DROPPED, sp::DUPLICATED, sp::CORRUPTED])?,
            })
        };
        let d = IciDriver {
            cfg: *cfg,
            a: client("a")?,
            b: client("b")?,
            ab: direction("ab")?,
            ba: direction("ba")?,
            reset: ports.get(hw::ir::RESET)?,
            seed: ports.get("seed_i")?,
            seed_load: ports.get("seed_load_i")?,
            thresholds: ports.array(["flip_threshold_i", "drop_threshold_i", "dup_threshold_i"])?,
            model,
        };
        Ok(d)
    }

    pub fn config(&self) -> &IciConfig {
        &self.cfg
    }

    /// The underlying model (for benchmarks and waveform control).
    pub fn model_mut(&mut self) -> &mut Model {
        &mut self.model
    }

    /// Resets the pair and loads the stubs' seed; cycle 0 of a run is the
    /// cycle after this.
    fn reset(&mut self, faults: &Faults) {
        let m = &mut self.model;
        for c in [&self.a, &self.b] {
            m.poke(c.tx_valid, 0);
            m.poke(c.rx_ready, 0);
        }
        for d in [&self.ab, &self.ba] {
            m.poke(d.drop, 0);
            m.poke(d.dup, 0);
            let words = vec![0u32; m.ports()[d.flip.index()].words()];
            m.poke_wide(d.flip, &words);
        }
        m.poke(self.seed, faults.seed);
        m.poke(self.seed_load, 1);
        m.poke(self.reset, 1);
        self.set_rates(faults);
        self.model.step();
        self.model.poke(self.reset, 0);
        self.model.poke(self.seed_load, 0);
    }

    fn set_rates(&mut self, faults: &Faults) {
        let w = f64::from(self.cfg.frame_bits());
        let per_slot = faults.ber * w / f64::from(ici_serdes_stub::FLIP_SLOTS);
        let values = [
            ici_serdes_stub::threshold(per_slot),
            ici_serdes_stub::threshold(faults.drop_rate),
            ici_serdes_stub::threshold(faults.dup_rate),
        ];
        for (p, v) in self.thresholds.iter().zip(values) {
            self.model.poke(*p, u64::from(v));
        }
    }

    /// Sends `a_flits` from A to B and `b_flits` from B to A at once; each
    /// client takes received flits in cycles where its `rx_ready` pattern
    /// (of the cycle) is true. Stops when both received everything, or
    /// fails after `max_cycles`. With faults, the stubs stop injecting once
    /// everything is delivered and the run drains the lanes, so the
    /// counters compare (every corrupted word that arrived was counted).
    pub fn run(
        &mut self,
        a_flits: &[Flit],
        b_flits: &[Flit],
        faults: &Faults,
        rx_ready: &dyn Fn(u64) -> (bool, bool),
        mut script: Option<Script<'_>>,
        max_cycles: u64,
    ) -> Result<LinkRun, DriverError> {
        self.reset(faults);
        let w = self.cfg.flit_bytes() as usize;
        let words = w.div_ceil(4);
        let mut run = LinkRun::default();
        let (mut next_a, mut next_b) = (0usize, 0usize);
        let mut buf = vec![0u32; words];
        let mut offered = [usize::MAX, usize::MAX];
        let flip_words = self.model.ports()[self.ab.flip.index()].words();
        let mut scripted_flips = [false, false];
        let mut cycle = 0u64;
        while run.at_b.len() < a_flits.len() || run.at_a.len() < b_flits.len() {
            if cycle >= max_cycles {
                return Err(DriverError::Stuck {
                    cycles: cycle,
                    detail: format!(
                        "the link delivered {} flits at B, {} at A",
                        run.at_b.len(),
                        run.at_a.len()
                    ),
                });
            }
            if let Some(s) = script.as_mut() {
                let (ab, ba) = s(cycle);
                for (k, (inj, dir)) in [(ab, &self.ab), (ba, &self.ba)].into_iter().enumerate() {
                    self.model.poke(dir.drop, u64::from(inj.drop));
                    self.model.poke(dir.dup, u64::from(inj.dup));
                    if !inj.flips.is_empty() || scripted_flips[k] {
                        let mut mask = vec![0u32; flip_words];
                        for &bit in &inj.flips {
                            assert!(
                                bit < self.cfg.frame_bits(),
                                "bit {bit} is outside the {}-bit word",
                                self.cfg.frame_bits()
                            );
                            mask[(bit / 32) as usize] |= 1 << (bit % 32);
                        }
                        self.model.poke_wide(dir.flip, &mask);
                        scripted_flips[k] = !inj.flips.is_empty();
                    }
                }
            }
            let (ready_a, ready_b) = rx_ready(cycle);
            // Offer the next flit of each client (poked only when it changes).
            for (k, (client, flits, next)) in
                [(&self.a, a_flits, next_a), (&self.b, b_flits, next_b)]
                    .into_iter()
                    .enumerate()
            {
                let have = next < flits.len();
                self.model.poke(client.tx_valid, u64::from(have));
                if have && offered[k] != next {
                    let f = &flits[next];
                    buf.fill(0);
                    for (i, &byte) in f.data.iter().enumerate() {
                        buf[i / 4] |= u32::from(byte) << (8 * (i % 4));
                    }
                    self.model.poke_wide(client.tx_data, &buf);
                    self.model.poke(client.tx_last, u64::from(f.last));
                    self.model.poke(client.tx_len, u64::from(f.len));
                    offered[k] = next;
                }
            }
            self.model.poke(self.a.rx_ready, u64::from(ready_a));
            self.model.poke(self.b.rx_ready, u64::from(ready_b));
            // Every handshake output comes from registers: no eval needed.
            for (k, client) in [&self.a, &self.b].into_iter().enumerate() {
                let (next, total) = if k == 0 {
                    (&mut next_a, a_flits.len())
                } else {
                    (&mut next_b, b_flits.len())
                };
                if *next < total && self.model.peek(client.tx_ready) == 1 {
                    *next += 1;
                    if k == 0 {
                        run.a_tx_cycles.push(cycle);
                    } else {
                        run.b_tx_cycles.push(cycle);
                    }
                }
                let ready = if k == 0 { ready_a } else { ready_b };
                if ready && self.model.peek(client.rx_valid) == 1 {
                    let data = self.model.peek_wide(client.rx_data);
                    let bytes = (0..w)
                        .map(|i| (data[i / 4] >> (8 * (i % 4))) as u8)
                        .collect();
                    let f = Flit {
                        data: bytes,
                        last: self.model.peek(client.rx_last) == 1,
                        len: self.model.peek(client.rx_len) as u8,
                    };
                    // A is k = 0: what it receives was sent by B.
                    if k == 0 {
                        run.at_a.push(f);
                        run.a_rx_cycles.push(cycle);
                    } else {
                        run.at_b.push(f);
                        run.b_rx_cycles.push(cycle);
                    }
                }
            }
            self.model.step();
            cycle += 1;
        }
        run.cycles = cycle;
        // Drain: no new errors, lanes empty, counters settled.
        self.set_rates(&Faults::default());
        for d in [&self.ab, &self.ba] {
            self.model.poke(d.drop, 0);
            self.model.poke(d.dup, 0);
            let zero = vec![0u32; flip_words];
            self.model.poke_wide(d.flip, &zero);
        }
        for c in [&self.a, &self.b] {
            self.model.poke(c.tx_valid, 0);
        }
        self.model
            .run_cycles_native(u64::from(self.cfg.word_latency()) + 2);
        let read = |m: &Model, ports: &[PortId]| -> Vec<u64> {
            ports.iter().map(|p| m.peek(*p)).collect()
        };
        let link = |v: Vec<u64>| LinkCounters {
            flits_sent: v[0],
            flits_received: v[1],
            crc_errors: v[2],
            retransmits: v[3],
            naks_sent: v[4],
            naks_received: v[5],
            timeouts: v[6],
            link_downs: v[7],
        };
        let stub = |v: Vec<u64>| StubCounters {
            words: v[0],
            dropped: v[1],
            duplicated: v[2],
            corrupted: v[3],
        };
        run.a = link(read(&self.model, &self.a.counters));
        run.b = link(read(&self.model, &self.b.counters));
        run.ab = stub(read(&self.model, &self.ab.counters));
        run.ba = stub(read(&self.model, &self.ba.counters));
        for (node, c) in [("A", &self.a), ("B", &self.b)] {
            if self.model.peek(c.alarms[0]) != 0 {
                run.alarms.push(format!("{node}: receive buffer overflow"));
            }
            if self.model.peek(c.alarms[1]) != 0 {
                run.alarms.push(format!("{node}: credit error"));
            }
        }
        Ok(run)
    }
}

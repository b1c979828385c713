//! The ICI torus driver. Packets: every chip's local port driven by the
//! host: each chip offers its packets in order (a packet is offered from its
//! creation cycle on) and takes every packet its router ejects when its
//! `ej_ready` pattern allows. The driver records when each packet was taken
//! and delivered, so tests hold delivery to `golden::torus::delivered` and
//! benchmarks measure latency. All-reduce ([`TorusDriver::allreduce`]): the
//! chips' engines own the local ports; each chip's vector is streamed in as
//! its engine takes it, and every result element is collected with its
//! cycle. Cycle 0 is the first cycle after reset, as in
//! `golden::torus_cycle`, whose cycles the records match on error-free runs.
//!
//! # Two layouts, one behaviour
//!
//! [`Layout::Chips`] (the default) simulates each chip's unit
//! (`torus::node::chip`: node, all-reduce engine and the serdes stubs of its
//! outgoing links) as its own instance of one small Verilated model, and
//! joins the chips here: what a chip's stubs deliver in cycle t is a
//! register (a stub's latency is at least 1), so the driver copies every
//! stub's output after the clock edge of cycle t - 1 into the neighbour's
//! lane inputs for cycle t, exactly the wires of the torus top. Chips are
//! stepped on several threads (a barrier per cycle; the copies go through a
//! double buffer, so a chip of cycle t never reads a word of cycle t + 1).
//! The model is one chip's, whatever the torus's size, so it builds in a
//! fraction of the top's time, and the threads share the cycles' work.
//!
//! [`Layout::Top`] simulates `torus::node::top`, the Verilog `gen` writes for
//! the torus, as one model; the two give the same bits in the same cycles
//! (`tb/tests/torus.rs` holds them to each other, faults included), which
//! also checks the top's cabling, seeds and sums.

use super::{Driver, DriverError, PortTable};
use crate::drivers::ici::Faults;
use crate::from_hw::{inputs_delayed, model_spec, single_instance_spec};
use crate::verilator::{Model, PortId};
use config::{Packet, TorusConfig, Wiring, TORUS_PORTS};
use hw::{catch_elab, emit_design, Design, Header};
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

/// The destination of a packet from logical chip `src` under a traffic
/// pattern of `sim torus`: `uniform` (any chip, drawn from `rng`),
/// `transpose` (x and y swapped when X = Y, else the chip at the mirrored
/// index) or `neighbor` (one step up in X, wrapping); `None` for another
/// name.
pub fn traffic_destination(
    cfg: &TorusConfig,
    pattern: &str,
    src: usize,
    rng: &mut impl rand::Rng,
) -> Option<[u32; 3]> {
    let [x, y, z] = cfg.coords(src);
    let dims = cfg.dims();
    Some(match pattern {
        "uniform" => cfg.coords(rng.gen_range(0..cfg.chips())),
        "transpose" if dims[0] == dims[1] => [y, x, z],
        "transpose" => cfg.coords(cfg.chips() - 1 - src),
        "neighbor" => [(x + 1) % dims[0], y, z],
        _ => return None,
    })
}

/// One delivery: the packet and the cycle its destination took it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivery {
    pub packet: Packet,
    pub cycle: u64,
}

/// What one run gave.
#[derive(Debug, Clone, Default)]
pub struct TorusRun {
    /// By logical destination chip, in the order taken.
    pub received: Vec<Vec<Delivery>>,
    /// By logical source chip: the cycle each packet was taken by its router.
    pub taken: Vec<Vec<u64>>,
    /// One past the cycle of the last delivery.
    pub cycles: u64,
    pub crc_errors: u64,
    pub retransmits: u64,
    pub link_downs: u64,
    /// Words the stubs delivered with flipped bits.
    pub corrupted: u64,
    /// A router buffer overflow or credit error, or a link alarm.
    pub alarm: bool,
}

/// What one all-reduce gave.
#[derive(Debug, Clone, Default)]
pub struct AllReduceRun {
    /// By logical chip: every chip's result, by element.
    pub results: Vec<Vec<u32>>,
    /// By logical chip: the cycle each element's result came out.
    pub result_cycles: Vec<Vec<u64>>,
    /// By logical chip: the cycle each element of its vector was taken.
    pub taken: Vec<Vec<u64>>,
    /// One past the cycle in which the last chip got its last element.
    pub cycles: u64,
    pub crc_errors: u64,
    pub retransmits: u64,
    pub link_downs: u64,
    pub corrupted: u64,
    pub alarm: bool,
}

/// One chip's all-reduce lanes on a model (`torus::allreduce_v2`'s ports):
/// elements in (valid, data, ready) and results out (valid, index, data).
#[derive(Debug, Clone, Copy)]
pub struct Lanes {
    valid: [PortId; 3],
    data: [PortId; 3],
    ready: [PortId; 3],
    results: [[PortId; 3]; 3],
}

impl Lanes {
    /// The lanes among `ports` (a chip's prefix on a torus: `c3_`).
    pub fn of(ports: &PortTable) -> Result<Lanes, DriverError> {
        Ok(Lanes {
            valid: ports.array(["v0_valid_i", "v1_valid_i", "v2_valid_i"])?,
            data: ports.array(["v0_data_i", "v1_data_i", "v2_data_i"])?,
            ready: ports.array(["v0_ready_o", "v1_ready_o", "v2_ready_o"])?,
            results: [
                ports.array(["r0_valid_o", "r0_index_o", "r0_data_o"])?,
                ports.array(["r1_valid_o", "r1_index_o", "r1_data_o"])?,
                ports.array(["r2_valid_o", "r2_index_o", "r2_data_o"])?,
            ],
        })
    }

    /// Nothing offered.
    pub fn idle(&self, model: &mut Model) {
        for &v in &self.valid {
            model.poke(v, 0);
        }
    }
}

/// One chip's part of an all-reduce: its vector fed into its lanes in
/// order (lane l offers elements l, l + 3, ...), its results collected,
/// each checked to come once, on its lane.
#[derive(Debug)]
struct ChipFeed<'v> {
    chip: usize,
    values: &'v [u32],
    next: [usize; 3],
    left: usize,
    results: Vec<u32>,
    result_cycles: Vec<u64>,
    taken: Vec<u64>,
}

impl<'v> ChipFeed<'v> {
    fn new(chip: usize, values: &'v [u32]) -> ChipFeed<'v> {
        let n = values.len();
        ChipFeed {
            chip,
            values,
            next: [0, 1, 2],
            left: n,
            results: vec![0; n],
            result_cycles: vec![u64::MAX; n],
            taken: vec![0; n],
        }
    }

    fn offer(&self, model: &mut Model, lanes: &Lanes) {
        for (l, &e) in self.next.iter().enumerate() {
            let have = e < self.values.len();
            model.poke(lanes.valid[l], u64::from(have));
            if have {
                model.poke(lanes.data[l], u64::from(self.values[e]));
            }
        }
    }

    fn observe(&mut self, model: &Model, lanes: &Lanes, cycle: u64) -> Result<(), DriverError> {
        let n = self.values.len();
        for (l, next) in self.next.iter_mut().enumerate() {
            if *next < n && model.peek(lanes.ready[l]) == 1 {
                self.taken[*next] = cycle;
                *next += 3;
            }
            let [valid, index, data] = lanes.results[l];
            if model.peek(valid) == 1 {
                let e = model.peek(index) as usize;
                if e >= n || e % 3 != l || self.result_cycles[e] != u64::MAX {
                    return Err(DriverError::Protocol(format!(
                        "chip {}'s lane {l} gave element {e} (of {n}) out of turn",
                        self.chip
                    )));
                }
                self.results[e] = model.peek(data) as u32;
                self.result_cycles[e] = cycle;
                self.left -= 1;
            }
        }
        Ok(())
    }
}

/// An all-reduce fed into every chip's lanes and collected from them, one
/// cycle at a time: lane l of chip c offers `values[c][l]`, `[l + 3]`, ...
/// in order; every result is checked to come once, on its lane.
#[derive(Debug)]
pub struct LaneFeed<'v> {
    chips: Vec<ChipFeed<'v>>,
}

impl<'v> LaneFeed<'v> {
    /// Before the first cycle; `values` by chip, all of one length.
    pub fn new(values: &'v [Vec<u32>]) -> LaneFeed<'v> {
        let n = values.first().map_or(0, Vec::len);
        assert!(values.iter().all(|v| v.len() == n), "vectors of one length");
        assert!(
            n <= 3 << config::AllreduceV2::INDEX_BITS,
            "the engine indexes at most 3 x 2^16 elements per chip"
        );
        LaneFeed {
            chips: values
                .iter()
                .enumerate()
                .map(|(c, v)| ChipFeed::new(c, v))
                .collect(),
        }
    }

    /// Results still to come.
    pub fn left(&self) -> usize {
        self.chips.iter().map(|c| c.left).sum()
    }

    /// Before the cycle's evaluation: chip `c`'s lanes offer their next
    /// elements.
    pub fn offer(&self, model: &mut Model, c: usize, lanes: &Lanes) {
        self.chips[c].offer(model, lanes);
    }

    /// After the cycle's evaluation: what chip `c`'s lanes took and gave in
    /// `cycle`.
    pub fn observe(
        &mut self,
        model: &Model,
        c: usize,
        lanes: &Lanes,
        cycle: u64,
    ) -> Result<(), DriverError> {
        self.chips[c].observe(model, lanes, cycle)
    }

    /// What has been taken and given (the run's cycles and counters not set).
    pub fn into_run(self) -> AllReduceRun {
        let mut run = AllReduceRun::default();
        for c in self.chips {
            run.results.push(c.results);
            run.result_cycles.push(c.result_cycles);
            run.taken.push(c.taken);
        }
        run
    }
}

/// How the driver lays the torus out in Verilator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One model of a chip's unit, instantiated per chip and joined by the
    /// driver; the chips stepped on `threads` threads (at most one per
    /// chip).
    Chips { threads: usize },
    /// The torus top `gen` writes, as one model.
    Top,
}

impl Layout {
    /// Per-chip models on as many threads as `SYSTOLE_SIM_THREADS` says, or
    /// else as the machine has cores.
    pub fn default_threads() -> Result<Layout, DriverError> {
        let threads = match std::env::var("SYSTOLE_SIM_THREADS") {
            Ok(v) => v
                .parse::<usize>()
                .ok()
                .filter(|&t| (1..=64).contains(&t))
                .ok_or_else(|| {
                    DriverError::Input(format!(
                        "SYSTOLE_SIM_THREADS must be a number from 1 to 64, got '{v}'"
                    ))
                })?,
            Err(_) => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        Ok(Layout::Chips { threads })
    }
}

const FIELDS: [&str; 5] = ["dx", "dy", "dz", "tag", "payload"];

/// A chip's host ports on the model that holds it.
struct ChipPorts {
    inj_valid: PortId,
    inj_ready: PortId,
    inj: [PortId; 5],
    ej_valid: PortId,
    ej_ready: PortId,
    ej: [PortId; 5],
    lanes: Lanes,
}

impl ChipPorts {
    fn of(q: &PortTable) -> Result<ChipPorts, DriverError> {
        let field_ports = |dir: &str| -> Result<[PortId; 5], DriverError> {
            let names =
                FIELDS.map(|f| format!("{dir}_{f}_{}", if dir == "inj" { "i" } else { "o" }));
            q.array(names.each_ref().map(String::as_str))
        };
        Ok(ChipPorts {
            inj_valid: q.get("inj_valid_i")?,
            inj_ready: q.get("inj_ready_o")?,
            inj: field_ports("inj")?,
            ej_valid: q.get("ej_valid_o")?,
            ej_ready: q.get("ej_ready_i")?,
            ej: field_ports("ej")?,
            lanes: Lanes::of(q)?,
        })
    }
}

/// What the driver sets and reads on a whole model: the torus top's
/// controls, or one chip's.
struct Controls {
    reset: PortId,
    seed_load: PortId,
    thresholds: [PortId; 3],
    /// CRC errors, retransmits, link-downs, corrupted words.
    counters: [PortId; 4],
    alarm: PortId,
    fp: PortId,
    /// The top's `seed_i`, or a chip's stub seeds and coordinates.
    seeding: Seeding,
}

enum Seeding {
    Top(PortId),
    Chip {
        /// Logical chip.
        chip: usize,
        seeds: [PortId; 6],
        at: [PortId; 3],
    },
}

/// A chip's lanes to and from its neighbours, on its own model.
struct ChipLinks {
    out_valid: [PortId; 6],
    out_word: [PortId; 6],
    des_valid: [PortId; 6],
    des_word: [PortId; 6],
    /// Per port: the logical chip whose stub feeds it and that stub's port.
    from: [(usize, usize); 6],
    /// The model registers the words it is given (a cycle late) and its
    /// stubs are a cycle shorter than the link's latency.
    early: bool,
}

/// One chip in a group: the model it is on, its logical number, its ports.
struct Slot {
    model: usize,
    chip: usize,
    ports: ChipPorts,
    links: Option<ChipLinks>,
}

/// The chips one thread steps, and their models.
struct Group {
    models: Vec<Model>,
    controls: Vec<Controls>,
    /// The models take the error rates a cycle after they are poked.
    rates_late: bool,
    slots: Vec<Slot>,
}

/// The stubs' outputs between cycles, double-buffered by cycle parity:
/// after the clock edge of cycle t every chip writes its six stubs' words
/// into buffer (t + 1) mod 2, which its neighbours read for cycle t + 1.
struct Exchange {
    /// Words per link: the valid flag, then the stub word's.
    stride: usize,
    chips: usize,
    words: Vec<AtomicU32>,
}

impl Exchange {
    fn new(chips: usize, word_bits: u32) -> Exchange {
        let stride = 1 + word_bits.div_ceil(32) as usize;
        Exchange {
            stride,
            chips,
            words: (0..2 * chips * 6 * stride)
                .map(|_| AtomicU32::new(0))
                .collect(),
        }
    }

    fn link(&self, cycle: u64, chip: usize, port: usize) -> &[AtomicU32] {
        let at = (((cycle % 2) as usize * self.chips + chip) * 6 + port) * self.stride;
        &self.words[at..at + self.stride]
    }
}

/// A barrier for the threads stepping the groups: spins briefly (a cycle's
/// work is tens of microseconds), then yields.
struct CycleBarrier {
    threads: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
}

impl CycleBarrier {
    fn new(threads: usize) -> CycleBarrier {
        CycleBarrier {
            threads,
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
        }
    }

    fn wait(&self) {
        if self.threads == 1 {
            return;
        }
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.threads {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
            return;
        }
        let mut spins = 0u32;
        while self.generation.load(Ordering::Acquire) == generation {
            if spins < 1 << 12 {
                std::hint::spin_loop();
                spins += 1;
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// What each group reports after a cycle, double-buffered by cycle parity:
/// the work its chips still wait for, or [`FAILED`].
struct Reports {
    groups: usize,
    pending: Vec<AtomicUsize>,
}

/// A group's report after a failed cycle (an error or a panic).
const FAILED: usize = usize::MAX;

impl Reports {
    fn slot(&self, cycle: u64, group: usize) -> &AtomicUsize {
        &self.pending[(cycle % 2) as usize * self.groups + group]
    }

    /// The cycle's total, or `None` if a group failed.
    fn total(&self, cycle: u64) -> Option<usize> {
        let mut sum = 0usize;
        for g in 0..self.groups {
            match self.slot(cycle, g).load(Ordering::Relaxed) {
                FAILED => return None,
                p => sum += p,
            }
        }
        Some(sum)
    }
}

/// One chip's host side in a run: its packets to send and those received,
/// and its part of the all-reduce.
struct ChipHost<'a> {
    sent: &'a [(u64, Packet)],
    next_packet: usize,
    offered: usize,
    /// Packets addressed to this chip.
    expected: usize,
    received: Vec<Delivery>,
    taken: Vec<u64>,
    feed: ChipFeed<'a>,
}

impl ChipHost<'_> {
    fn pending(&self) -> usize {
        self.expected - self.received.len() + self.feed.left
    }

    fn has_packet(&self, cycle: u64) -> bool {
        self.next_packet < self.sent.len() && self.sent[self.next_packet].0 <= cycle
    }
}

/// What every group shares while stepping.
struct Shared<'a> {
    exchange: Option<&'a Exchange>,
    barrier: &'a CycleBarrier,
    reports: &'a Reports,
    ej_ready: &'a (dyn Fn(u64, usize) -> bool + Sync),
    max_cycles: u64,
    drain: u64,
    pending: usize,
}

/// How a group's stepping ended.
enum Ended {
    /// Everything delivered after this many cycles.
    Done(u64),
    /// `max_cycles` passed.
    Stuck(u64),
    /// This group failed.
    Failed(Result<DriverError, Box<dyn std::any::Any + Send>>),
    /// Another group failed.
    Aborted,
}

impl Group {
    fn eval(&mut self) {
        for m in &mut self.models {
            m.eval();
        }
    }

    fn step(&mut self) {
        for m in &mut self.models {
            m.step();
        }
    }

    /// This cycle's inputs from the neighbours' stubs.
    fn take_links(&mut self, exchange: &Exchange, cycle: u64) {
        let mut word = vec![0u32; exchange.stride - 1];
        for s in &self.slots {
            let Some(links) = &s.links else { continue };
            let m = &mut self.models[s.model];
            for p in 0..6 {
                let (chip, port) = links.from[p];
                let src = exchange.link(cycle, chip, port);
                for (w, a) in word.iter_mut().zip(&src[1..]) {
                    *w = a.load(Ordering::Relaxed);
                }
                m.poke(
                    links.des_valid[p],
                    u64::from(src[0].load(Ordering::Relaxed)),
                );
                m.poke_wide(links.des_word[p], &word);
            }
        }
    }

    /// The stubs' words after the clock edge, for the neighbours' cycle
    /// `next`.
    fn give_links(&self, exchange: &Exchange, next: u64) {
        let mut word = vec![0u32; exchange.stride - 1];
        for s in &self.slots {
            let Some(links) = &s.links else { continue };
            let m = &self.models[s.model];
            for p in 0..6 {
                let dst = exchange.link(next, s.chip, p);
                m.peek_wide_into(links.out_word[p], &mut word);
                dst[0].store(m.peek(links.out_valid[p]) as u32, Ordering::Relaxed);
                for (a, &w) in dst[1..].iter().zip(&word) {
                    a.store(w, Ordering::Relaxed);
                }
            }
        }
    }

    fn set_rates(&mut self, cfg: &TorusConfig, faults: &Faults) {
        let w = f64::from(cfg.link().frame_bits());
        let per_slot = faults.ber * w / f64::from(ici_serdes_stub::FLIP_SLOTS);
        let values = [
            ici_serdes_stub::threshold(per_slot),
            ici_serdes_stub::threshold(faults.drop_rate),
            ici_serdes_stub::threshold(faults.dup_rate),
        ];
        for (m, c) in self.models.iter_mut().zip(&self.controls) {
            for (p, v) in c.thresholds.iter().zip(values) {
                m.poke(*p, u64::from(v));
            }
        }
    }

    /// The reset cycle: host inputs idle, seeds loaded, rates set; then the
    /// stubs' first words for cycle 0.
    fn reset(&mut self, cfg: &TorusConfig, faults: &Faults, fp: bool, exchange: Option<&Exchange>) {
        for s in &self.slots {
            let m = &mut self.models[s.model];
            m.poke(s.ports.inj_valid, 0);
            m.poke(s.ports.ej_ready, 0);
            s.ports.lanes.idle(m);
        }
        for (m, c) in self.models.iter_mut().zip(&self.controls) {
            m.poke(c.fp, 0);
            m.poke(c.seed_load, 1);
            m.poke(c.reset, 1);
            match &c.seeding {
                Seeding::Top(seed) => m.poke(*seed, faults.seed),
                Seeding::Chip { chip, seeds, at } => {
                    // Stub k = 6c + port (c logical) draws from the seed XOR
                    // k times the step, as on the torus top.
                    for (port, &p) in seeds.iter().enumerate() {
                        let k = (6 * chip + port) as u64;
                        m.poke(p, faults.seed ^ k.wrapping_mul(torus::node::STUB_SEED_STEP));
                    }
                    for (&p, v) in at.iter().zip(cfg.coords(*chip)) {
                        m.poke(p, u64::from(v));
                    }
                }
            }
        }
        self.set_rates(cfg, faults);
        // The neighbours' words a chip model takes one cycle late
        // ([`TorusDriver::chips`]): none in cycle 0, as on the top, whose
        // stubs' valid lines are reset.
        if let Some(x) = exchange {
            let zero = vec![0u32; x.stride - 1];
            for s in &self.slots {
                let Some(links) = s.links.as_ref().filter(|l| l.early) else {
                    continue;
                };
                let m = &mut self.models[s.model];
                for p in 0..6 {
                    m.poke(links.des_valid[p], 0);
                    m.poke_wide(links.des_word[p], &zero);
                }
            }
        }
        // Two reset cycles: a chip model's delayed inputs (coordinates,
        // seeds) are loaded at the first and seen in the second; the top
        // takes the same two.
        self.step();
        self.step();
        for (m, c) in self.models.iter_mut().zip(&self.controls) {
            m.poke(c.reset, 0);
            m.poke(c.seed_load, 0);
            m.poke(c.fp, u64::from(fp));
        }
        if let Some(x) = exchange {
            self.give_links(x, 0);
        }
    }

    /// One cycle with the host's inputs (`drain`: none offered or
    /// recorded).
    fn cycle(
        &mut self,
        hosts: &mut [ChipHost],
        cycle: u64,
        shared: &Shared,
        drain: bool,
    ) -> Result<(), DriverError> {
        if let Some(x) = shared.exchange {
            self.take_links(x, cycle);
        }
        for (s, h) in self.slots.iter().zip(hosts.iter_mut()) {
            let m = &mut self.models[s.model];
            if drain {
                m.poke(s.ports.inj_valid, 0);
                s.ports.lanes.idle(m);
                continue;
            }
            let have = h.has_packet(cycle);
            m.poke(s.ports.inj_valid, u64::from(have));
            if have && h.offered != h.next_packet {
                let p = h.sent[h.next_packet].1;
                let v = [
                    u64::from(p.dest[0]),
                    u64::from(p.dest[1]),
                    u64::from(p.dest[2]),
                    u64::from(p.tag),
                    u64::from(p.payload),
                ];
                for (port, v) in s.ports.inj.iter().zip(v) {
                    m.poke(*port, v);
                }
                h.offered = h.next_packet;
            }
            m.poke(
                s.ports.ej_ready,
                u64::from((shared.ej_ready)(cycle, s.chip)),
            );
            h.feed.offer(m, &s.ports.lanes);
        }
        self.eval();
        if !drain {
            for (s, h) in self.slots.iter().zip(hosts.iter_mut()) {
                let m = &self.models[s.model];
                if h.has_packet(cycle) && m.peek(s.ports.inj_ready) == 1 {
                    h.taken.push(cycle);
                    h.next_packet += 1;
                }
                if (shared.ej_ready)(cycle, s.chip) && m.peek(s.ports.ej_valid) == 1 {
                    let f = s.ports.ej.map(|p| m.peek(p));
                    h.received.push(Delivery {
                        packet: Packet {
                            dest: [f[0] as u32, f[1] as u32, f[2] as u32],
                            tag: f[3] as u8,
                            payload: f[4] as u32,
                        },
                        cycle,
                    });
                }
                h.feed.observe(m, &s.ports.lanes, cycle)?;
            }
        }
        self.step();
        if let Some(x) = shared.exchange {
            self.give_links(x, cycle + 1);
        }
        Ok(())
    }

    /// Steps this group in lockstep with the others until every group's
    /// work is done (or a group fails, or `max_cycles` pass), then drains
    /// the links for `shared.drain` cycles with the error rates at zero.
    fn run(
        &mut self,
        cfg: &TorusConfig,
        index: usize,
        hosts: &mut [ChipHost],
        shared: &Shared,
    ) -> Ended {
        let mut cycle = 0u64;
        let mut pending = shared.pending;
        let ended = loop {
            if pending == 0 {
                break Ended::Done(cycle);
            }
            if cycle >= shared.max_cycles {
                break Ended::Stuck(cycle);
            }
            let outcome =
                panic::catch_unwind(AssertUnwindSafe(|| self.cycle(hosts, cycle, shared, false)));
            let (report, failure) = match outcome {
                Ok(Ok(())) => (hosts.iter().map(ChipHost::pending).sum(), None),
                Ok(Err(e)) => (FAILED, Some(Ok(e))),
                Err(p) => (FAILED, Some(Err(p))),
            };
            shared
                .reports
                .slot(cycle, index)
                .store(report, Ordering::Relaxed);
            shared.barrier.wait();
            if let Some(f) = failure {
                break Ended::Failed(f);
            }
            match shared.reports.total(cycle) {
                Some(p) => pending = p,
                None => break Ended::Aborted,
            }
            cycle += 1;
        };
        if let Ended::Done(end) = ended {
            // The error rates are zero from the drain's second cycle: a
            // model that takes them a cycle late is told before the first.
            if self.rates_late {
                self.set_rates(cfg, &Faults::default());
            }
            // Every group takes part in every drain cycle, so a panic (a
            // model's fatal error) waits until the others are through.
            let mut failure = None;
            for k in 0..shared.drain {
                if failure.is_none() {
                    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
                        self.cycle(hosts, end + k, shared, true)
                    }));
                    match outcome {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => failure = Some(Ok(e)),
                        Err(p) => failure = Some(Err(p)),
                    }
                    if k == 0 && !self.rates_late {
                        self.set_rates(cfg, &Faults::default());
                    }
                }
                shared.barrier.wait();
            }
            if let Some(f) = failure {
                return Ended::Failed(f);
            }
        }
        ended
    }

    fn counters(&self) -> ([u64; 4], bool) {
        let mut sums = [0u64; 4];
        let mut alarm = false;
        for (m, c) in self.models.iter().zip(&self.controls) {
            for (s, &p) in sums.iter_mut().zip(&c.counters) {
                *s += m.peek(p);
            }
            alarm |= m.peek(c.alarm) != 0;
        }
        (sums, alarm)
    }
}

impl Driver for TorusDriver {
    type Block = torus::Torus;
    /// The torus as configured, cabled plainly (logical chip = physical chip).
    fn open(cfg: &TorusConfig) -> Result<Self, DriverError> {
        TorusDriver::new(cfg, &Wiring::identity(cfg))
    }
}

/// A Verilated torus of one configuration and wiring.
pub struct TorusDriver {
    cfg: TorusConfig,
    layout: Layout,
    groups: Vec<Group>,
    exchange: Option<Exchange>,
}

fn elaborate(
    params: Vec<(String, String)>,
    build: impl FnOnce(&mut Design) -> std::rc::Rc<hw::ModuleDef>,
) -> Result<(Vec<hw::EmittedFile>, std::rc::Rc<hw::ModuleDef>), DriverError> {
    hw::quiet_elab_errors();
    let (design, top) = catch_elab(|| {
        let mut design = Design::new();
        let top = build(&mut design);
        (design, top)
    })
    .map_err(|e| DriverError::Elaboration(e.to_string()))?;
    let header = Header {
        generator: format!("systole-sim {}", env!("CARGO_PKG_VERSION")),
        params,
    };
    Ok((emit_design(&design, &top, &header), top))
}

fn controls(p: &PortTable, seeding: Seeding) -> Result<Controls, DriverError> {
    Ok(Controls {
        reset: p.get(hw::ir::RESET)?,
        seed_load: p.get("seed_load_i")?,
        thresholds: p.array(["flip_threshold_i", "drop_threshold_i", "dup_threshold_i"])?,
        counters: p.array([
            "crc_errors_o",
            "retransmits_o",
            "link_downs_o",
            "corrupted_o",
        ])?,
        alarm: p.get("alarm_o")?,
        fp: p.get("fp_i")?,
        seeding,
    })
}

impl TorusDriver {
    /// Builds (or loads from the cache) the torus for `cfg` cabled by
    /// `wiring`, in the default layout ([`Layout::default_threads`]).
    pub fn new(cfg: &TorusConfig, wiring: &Wiring) -> Result<TorusDriver, DriverError> {
        TorusDriver::with_layout(cfg, wiring, Layout::default_threads()?)
    }

    /// Builds (or loads) the torus in the given layout. The wiring only
    /// matters to [`Layout::Top`], whose Verilog it cables; per-chip models
    /// are joined by logical position, which gives the same run.
    pub fn with_layout(
        cfg: &TorusConfig,
        wiring: &Wiring,
        layout: Layout,
    ) -> Result<TorusDriver, DriverError> {
        match layout {
            Layout::Top => Self::top(cfg, wiring),
            Layout::Chips { threads } => Self::chips(cfg, threads),
        }
    }

    fn top(cfg: &TorusConfig, wiring: &Wiring) -> Result<TorusDriver, DriverError> {
        let mut params = cfg.params();
        params.push(("wiring".into(), format!("{:?}", wiring.table())));
        let (files, top) = elaborate(params, |d| torus::node::top(d, cfg, wiring))?;
        let model = Model::build(&model_spec(&files, &top), &top.name)?;
        let mut slots = Vec::new();
        for c in 0..cfg.chips() {
            let q = PortTable::prefixed(&model, &format!("c{c}_"));
            slots.push(Slot {
                model: 0,
                chip: c,
                ports: ChipPorts::of(&q)?,
                links: None,
            });
        }
        // Slots by logical chip: the top's chip p sits at the wiring's
        // logical position.
        let mut by_logical: Vec<Option<Slot>> = (0..cfg.chips()).map(|_| None).collect();
        for mut s in slots {
            let logical = wiring.logical_of(s.chip);
            s.chip = logical;
            by_logical[logical] = Some(s);
        }
        let p = PortTable::new(&model);
        let controls = controls(&p, Seeding::Top(p.get("seed_i")?))?;
        Ok(TorusDriver {
            cfg: *cfg,
            layout: Layout::Top,
            groups: vec![Group {
                models: vec![model],
                controls: vec![controls],
                rates_late: false,
                slots: by_logical
                    .into_iter()
                    .map(|s| s.expect("a permutation"))
                    .collect(),
            }],
            exchange: None,
        })
    }

    fn chips(cfg: &TorusConfig, threads: usize) -> Result<TorusDriver, DriverError> {
        // One chip per model: its own code, inlined, with its wide inputs
        // behind registers (`inputs_delayed`): the coordinates, seeds and
        // error rates, poked a cycle ahead, and the neighbours' words, taken a
        // stage early from stubs one cycle shorter than the link's (a link
        // of latency 1 has no stage to spare: its words stay direct).
        let latency = cfg.link().latency();
        let early = latency >= 2;
        let stub_latency = if early { latency - 1 } else { latency };
        let (files, top) = elaborate(cfg.params(), |d| {
            torus::node::chip_with_stub_latency(d, cfg, stub_latency)
        })?;
        let delayed = |port: &str| {
            port.starts_with("at_")
                || port.ends_with("_seed_i")
                || port.ends_with("_threshold_i")
                || (early && (port.ends_with("_des_valid_i") || port.ends_with("_des_word_i")))
        };
        let spec = inputs_delayed(single_instance_spec(&files, &top), &top, delayed);
        let first = Model::build(&spec, &top.name)?;
        let n = cfg.chips();
        // The built instance is chip 0's; every other chip gets its own.
        let mut models: Vec<Model> = Vec::with_capacity(n);
        for _ in 1..n {
            models.push(first.new_instance()?);
        }
        models.insert(0, first);
        let mut models = models.into_iter();
        let threads = threads.clamp(1, n);
        let mut groups: Vec<Group> = Vec::new();
        for g in 0..threads {
            let mut group = Group {
                models: Vec::new(),
                controls: Vec::new(),
                rates_late: true,
                slots: Vec::new(),
            };
            // Contiguous logical chips per group, as even as they divide.
            for chip in g * n / threads..(g + 1) * n / threads {
                let model = models.next().expect("a model per chip");
                let p = PortTable::new(&model);
                let names = |suffix: &str| -> [String; 6] {
                    std::array::from_fn(|q| format!("{}_{suffix}", TORUS_PORTS[q]))
                };
                let list = |suffix: &str| -> Result<[PortId; 6], DriverError> {
                    let n = names(suffix);
                    p.array(n.each_ref().map(String::as_str))
                };
                let at = cfg.coords(chip);
                let links = ChipLinks {
                    out_valid: list("out_valid_o")?,
                    out_word: list("out_word_o")?,
                    des_valid: list("des_valid_i")?,
                    des_word: list("des_word_i")?,
                    // Port q's lanes come from the stub on the opposite
                    // port of the neighbour through q.
                    from: std::array::from_fn(|q| (cfg.chip(cfg.neighbour(at, q)), q ^ 1)),
                    early,
                };
                let seeding = Seeding::Chip {
                    chip,
                    seeds: list("seed_i")?,
                    at: p.array(["at_x_i", "at_y_i", "at_z_i"])?,
                };
                let controls = controls(&p, seeding)?;
                let ports = ChipPorts::of(&p)?;
                group.slots.push(Slot {
                    model: group.models.len(),
                    chip,
                    ports,
                    links: Some(links),
                });
                group.models.push(model);
                group.controls.push(controls);
            }
            groups.push(group);
        }
        Ok(TorusDriver {
            cfg: *cfg,
            layout: Layout::Chips { threads },
            groups,
            exchange: Some(Exchange::new(n, cfg.link().frame_bits())),
        })
    }

    pub fn config(&self) -> &TorusConfig {
        &self.cfg
    }

    /// The layout in use (with the thread count it settled on).
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Sends `sent[c]` from logical chip c (each with its creation cycle,
    /// non-decreasing), in order, and takes every packet a chip's router
    /// ejects in cycles where `ej_ready(cycle, chip)` holds. Stops when
    /// everything was delivered, or fails after `max_cycles`.
    pub fn run(
        &mut self,
        sent: &[Vec<(u64, Packet)>],
        faults: &Faults,
        ej_ready: &(dyn Fn(u64, usize) -> bool + Sync),
        max_cycles: u64,
    ) -> Result<TorusRun, DriverError> {
        let none = vec![Vec::new(); self.cfg.chips()];
        let (packets, _) = self.drive(sent, ej_ready, &none, false, faults, max_cycles)?;
        Ok(packets)
    }

    /// All-reduces `values` (one vector per logical chip, all of one
    /// length; fp32 patterns when `fp`, else int32 as u32), feeding each
    /// chip's lanes in order as its engine takes them.
    pub fn allreduce(
        &mut self,
        values: &[Vec<u32>],
        fp: bool,
        faults: &Faults,
        max_cycles: u64,
    ) -> Result<AllReduceRun, DriverError> {
        let none = vec![Vec::new(); self.cfg.chips()];
        let (_, run) = self.drive(&none, &|_, _| true, values, fp, faults, max_cycles)?;
        Ok(run)
    }

    /// Host packets and an all-reduce in one run, sharing the links: both
    /// as [`TorusDriver::run`] and [`TorusDriver::allreduce`] give them.
    pub fn allreduce_with_packets(
        &mut self,
        values: &[Vec<u32>],
        fp: bool,
        sent: &[Vec<(u64, Packet)>],
        faults: &Faults,
        max_cycles: u64,
    ) -> Result<(AllReduceRun, TorusRun), DriverError> {
        let (packets, run) = self.drive(sent, &|_, _| true, values, fp, faults, max_cycles)?;
        Ok((run, packets))
    }

    /// One run: packets `sent` from every logical chip and, when `values`
    /// holds vectors, an all-reduce of them; until both are done.
    fn drive(
        &mut self,
        sent: &[Vec<(u64, Packet)>],
        ej_ready: &(dyn Fn(u64, usize) -> bool + Sync),
        values: &[Vec<u32>],
        fp: bool,
        faults: &Faults,
        max_cycles: u64,
    ) -> Result<(TorusRun, AllReduceRun), DriverError> {
        let cfg = self.cfg;
        let n_chips = cfg.chips();
        assert_eq!(sent.len(), n_chips, "one packet list per chip");
        assert_eq!(values.len(), n_chips, "one vector per chip");
        // Checks the vectors as the lane feed does.
        drop(LaneFeed::new(values));
        let mut expected = vec![0usize; n_chips];
        for p in sent.iter().flatten() {
            expected[cfg.chip(p.1.dest)] += 1;
        }
        let mut hosts: Vec<ChipHost> = (0..n_chips)
            .map(|c| ChipHost {
                sent: &sent[c],
                next_packet: 0,
                offered: usize::MAX,
                expected: expected[c],
                received: Vec::new(),
                taken: Vec::new(),
                feed: ChipFeed::new(c, &values[c]),
            })
            .collect();
        let exchange = self.exchange.as_ref();
        for g in &mut self.groups {
            g.reset(&cfg, faults, fp, exchange);
        }
        let barrier = CycleBarrier::new(self.groups.len());
        let reports = Reports {
            groups: self.groups.len(),
            pending: (0..2 * self.groups.len())
                .map(|_| AtomicUsize::new(0))
                .collect(),
        };
        let shared = Shared {
            exchange,
            barrier: &barrier,
            reports: &reports,
            ej_ready,
            max_cycles,
            drain: u64::from(cfg.link().latency()) + 2,
            pending: hosts.iter().map(ChipHost::pending).sum(),
        };
        // The groups' hosts: each group's slots are in logical order, and
        // in the per-chip layout its chips are contiguous.
        let mut by_group: Vec<&mut [ChipHost]> = Vec::new();
        let mut rest: &mut [ChipHost] = &mut hosts;
        for g in &self.groups {
            debug_assert!(g.slots.windows(2).all(|w| w[1].chip == w[0].chip + 1));
            let (mine, others) = rest.split_at_mut(g.slots.len());
            by_group.push(mine);
            rest = others;
        }
        let mut groups = self.groups.iter_mut();
        let first = groups.next().expect("a group");
        let mut hosts_of = by_group.into_iter();
        let first_hosts = hosts_of.next().expect("a group");
        let endings: Vec<Ended> = std::thread::scope(|s| {
            let shared = &shared;
            let handles: Vec<_> = groups
                .zip(hosts_of)
                .enumerate()
                .map(|(i, (g, h))| s.spawn(move || g.run(&cfg, i + 1, h, shared)))
                .collect();
            let mut endings = vec![first.run(&cfg, 0, first_hosts, shared)];
            for h in handles {
                endings.push(h.join().unwrap_or_else(|p| panic::resume_unwind(p)));
            }
            endings
        });
        let mut cycles = 0;
        for e in endings {
            match e {
                Ended::Failed(Ok(err)) => return Err(err),
                Ended::Failed(Err(p)) => panic::resume_unwind(p),
                Ended::Done(c) => cycles = c,
                Ended::Stuck(c) => {
                    let total: usize = expected.iter().sum();
                    let delivered: usize = hosts.iter().map(|h| h.received.len()).sum();
                    let left: usize = hosts.iter().map(|h| h.feed.left).sum();
                    return Err(DriverError::Stuck {
                        cycles: c,
                        detail: format!(
                            "the torus delivered {delivered} of {total} packets; {left} \
                             all-reduce results never came"
                        ),
                    });
                }
                Ended::Aborted => {}
            }
        }
        let mut sums = [0u64; 4];
        let mut alarm = false;
        for g in &self.groups {
            let (s, a) = g.counters();
            for (t, v) in sums.iter_mut().zip(s) {
                *t += v;
            }
            alarm |= a;
        }
        let [crc_errors, retransmits, link_downs, corrupted] = sums;
        let mut packets = TorusRun {
            cycles,
            crc_errors,
            retransmits,
            link_downs,
            corrupted,
            alarm,
            ..TorusRun::default()
        };
        let mut ar = AllReduceRun {
            cycles,
            crc_errors,
            retransmits,
            link_downs,
            corrupted,
            alarm,
            ..AllReduceRun::default()
        };
        for h in hosts {
            packets.received.push(h.received);
            packets.taken.push(h.taken);
            ar.results.push(h.feed.results);
            ar.result_cycles.push(h.feed.result_cycles);
            ar.taken.push(h.feed.taken);
        }
        Ok((packets, ar))
    }
}

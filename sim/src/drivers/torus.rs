//! The ICI torus driver: a Verilated torus top (`torus::node::top`). Packets:
//! every chip's local port driven by the host: each chip offers its packets
//! in order (a packet is offered from its creation cycle on) and takes every
//! packet its router ejects when its `ej_ready` pattern allows. The driver
//! records when each packet was taken and delivered, so tests hold delivery
//! to `golden::torus::delivered` and benchmarks measure latency.
//! All-reduce ([`TorusDriver::allreduce`]): the chips' engines own the
//! local ports; each chip's vector is streamed in as its engine takes it,
//! and every result element is collected with its cycle. Cycle 0 is the
//! first cycle after reset, as in `golden::torus_cycle`, whose cycles the
//! records match on error-free runs.

use super::{Driver, DriverError, PortTable};
use crate::drivers::ici::Faults;
use crate::from_hw::model_spec;
use crate::verilator::{Model, PortId};
use config::{Packet, TorusConfig, Wiring};
use hw::{catch_elab, emit_design, Design, Header};

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

struct Chip {
    inj_valid: PortId,
    inj_ready: PortId,
    inj: [PortId; 5],
    ej_valid: PortId,
    ej_ready: PortId,
    ej: [PortId; 5],
    lanes: Lanes,
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

/// An all-reduce fed into every chip's lanes and collected from them, one
/// cycle at a time: lane l of chip c offers `values[c][l]`, `[l + 3]`, ...
/// in order; every result is checked to come once, on its lane.
#[derive(Debug)]
pub struct LaneFeed<'v> {
    values: &'v [Vec<u32>],
    next: Vec<[usize; 3]>,
    left: usize,
    /// What has been taken and given so far (cycles not yet set).
    pub run: AllReduceRun,
}

impl<'v> LaneFeed<'v> {
    /// Before the first cycle; `values` by chip, all of one length.
    pub fn new(values: &'v [Vec<u32>]) -> LaneFeed<'v> {
        let chips = values.len();
        let n = values.first().map_or(0, Vec::len);
        assert!(values.iter().all(|v| v.len() == n), "vectors of one length");
        assert!(
            n <= 3 << config::AllreduceV2::INDEX_BITS,
            "the engine indexes at most 3 x 2^16 elements per chip"
        );
        LaneFeed {
            values,
            next: vec![[0, 1, 2]; chips],
            left: chips * n,
            run: AllReduceRun {
                results: vec![vec![0; n]; chips],
                result_cycles: vec![vec![u64::MAX; n]; chips],
                taken: vec![vec![0; n]; chips],
                ..AllReduceRun::default()
            },
        }
    }

    /// Results still to come.
    pub fn left(&self) -> usize {
        self.left
    }

    /// Before the cycle's evaluation: chip `c`'s lanes offer their next
    /// elements.
    pub fn offer(&self, model: &mut Model, c: usize, lanes: &Lanes) {
        for (l, &e) in self.next[c].iter().enumerate() {
            let have = e < self.values[c].len();
            model.poke(lanes.valid[l], u64::from(have));
            if have {
                model.poke(lanes.data[l], u64::from(self.values[c][e]));
            }
        }
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
        let n = self.values[c].len();
        for (l, next) in self.next[c].iter_mut().enumerate() {
            if *next < n && model.peek(lanes.ready[l]) == 1 {
                self.run.taken[c][*next] = cycle;
                *next += 3;
            }
            let [valid, index, data] = lanes.results[l];
            if model.peek(valid) == 1 {
                let e = model.peek(index) as usize;
                if e >= n || e % 3 != l || self.run.result_cycles[c][e] != u64::MAX {
                    return Err(DriverError::Protocol(format!(
                        "chip {c}'s lane {l} gave element {e} (of {n}) out of turn"
                    )));
                }
                self.run.results[c][e] = model.peek(data) as u32;
                self.run.result_cycles[c][e] = cycle;
                self.left -= 1;
            }
        }
        Ok(())
    }
}

const FIELDS: [&str; 5] = ["dx", "dy", "dz", "tag", "payload"];

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
    wiring: Wiring,
    model: Model,
    /// By physical chip.
    chips: Vec<Chip>,
    reset: PortId,
    seed: PortId,
    seed_load: PortId,
    thresholds: [PortId; 3],
    counters: [PortId; 4],
    alarm: PortId,
    fp: PortId,
}

impl TorusDriver {
    /// Builds (or loads from the cache) the torus for `cfg` cabled by `wiring`.
    pub fn new(cfg: &TorusConfig, wiring: &Wiring) -> Result<TorusDriver, DriverError> {
        hw::quiet_elab_errors();
        let (design, top) = catch_elab(|| {
            let mut design = Design::new();
            let top = torus::node::top(&mut design, cfg, wiring);
            (design, top)
        })
        .map_err(|e| DriverError::Elaboration(e.to_string()))?;
        let mut params = cfg.params();
        params.push(("wiring".into(), format!("{:?}", wiring.table())));
        let header = Header {
            generator: format!("systole-sim {}", env!("CARGO_PKG_VERSION")),
            params,
        };
        let files = emit_design(&design, &top, &header);
        let model = Model::build(&model_spec(&files, &top), &top.name)?;
        let mut chips = Vec::new();
        for c in 0..cfg.chips() {
            let q = PortTable::prefixed(&model, &format!("c{c}_"));
            let field_ports = |dir: &str| -> Result<[PortId; 5], DriverError> {
                let names =
                    FIELDS.map(|f| format!("{dir}_{f}_{}", if dir == "inj" { "i" } else { "o" }));
                q.array(names.each_ref().map(String::as_str))
            };
            chips.push(Chip {
                inj_valid: q.get("inj_valid_i")?,
                inj_ready: q.get("inj_ready_o")?,
                inj: field_ports("inj")?,
                ej_valid: q.get("ej_valid_o")?,
                ej_ready: q.get("ej_ready_i")?,
                ej: field_ports("ej")?,
                lanes: Lanes::of(&q)?,
            });
        }
        let p = PortTable::new(&model);
        Ok(TorusDriver {
            cfg: *cfg,
            wiring: wiring.clone(),
            chips,
            reset: p.get(hw::ir::RESET)?,
            seed: p.get("seed_i")?,
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
            model,
        })
    }

    pub fn config(&self) -> &TorusConfig {
        &self.cfg
    }

    /// The underlying model (for benchmarks).
    pub fn model_mut(&mut self) -> &mut Model {
        &mut self.model
    }

    fn set_rates(&mut self, faults: &Faults) {
        let w = f64::from(self.cfg.link().frame_bits());
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

    fn reset(&mut self, faults: &Faults) {
        for c in &self.chips {
            self.model.poke(c.inj_valid, 0);
            self.model.poke(c.ej_ready, 0);
            c.lanes.idle(&mut self.model);
        }
        self.model.poke(self.fp, 0);
        self.model.poke(self.seed, faults.seed);
        self.model.poke(self.seed_load, 1);
        self.model.poke(self.reset, 1);
        self.set_rates(faults);
        self.model.step();
        self.model.poke(self.reset, 0);
        self.model.poke(self.seed_load, 0);
    }
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

impl TorusDriver {
    /// Sends `sent[c]` from logical chip c (each with its creation cycle,
    /// non-decreasing), in order, and takes every packet a chip's router
    /// ejects in cycles where `ej_ready(cycle, chip)` holds. Stops when
    /// everything was delivered, or fails after `max_cycles`.
    pub fn run(
        &mut self,
        sent: &[Vec<(u64, Packet)>],
        faults: &Faults,
        ej_ready: &dyn Fn(u64, usize) -> bool,
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
        ej_ready: &dyn Fn(u64, usize) -> bool,
        values: &[Vec<u32>],
        fp: bool,
        faults: &Faults,
        max_cycles: u64,
    ) -> Result<(TorusRun, AllReduceRun), DriverError> {
        let n_chips = self.cfg.chips();
        assert_eq!(sent.len(), n_chips, "one packet list per chip");
        assert_eq!(values.len(), n_chips, "one vector per chip");
        let mut feed = LaneFeed::new(values);
        self.reset(faults);
        self.model.poke(self.fp, u64::from(fp));
        let total: usize = sent.iter().map(Vec::len).sum();
        let mut packets = TorusRun {
            received: vec![Vec::new(); n_chips],
            taken: vec![Vec::new(); n_chips],
            ..TorusRun::default()
        };
        let mut next_packet = vec![0usize; n_chips];
        let mut offered = vec![usize::MAX; n_chips];
        let mut delivered = 0usize;
        let mut cycle = 0u64;
        let phys: Vec<usize> = (0..n_chips).map(|c| self.wiring.chip_at(c)).collect();
        while delivered < total || feed.left() > 0 {
            if cycle >= max_cycles {
                return Err(DriverError::Stuck {
                    cycles: cycle,
                    detail: format!(
                        "the torus delivered {delivered} of {total} packets; {} all-reduce \
                         results never came",
                        feed.left()
                    ),
                });
            }
            for c in 0..n_chips {
                let chip = &self.chips[phys[c]];
                let have = next_packet[c] < sent[c].len() && sent[c][next_packet[c]].0 <= cycle;
                self.model.poke(chip.inj_valid, u64::from(have));
                if have && offered[c] != next_packet[c] {
                    let p = sent[c][next_packet[c]].1;
                    let v = [
                        u64::from(p.dest[0]),
                        u64::from(p.dest[1]),
                        u64::from(p.dest[2]),
                        u64::from(p.tag),
                        u64::from(p.payload),
                    ];
                    for (port, v) in chip.inj.iter().zip(v) {
                        self.model.poke(*port, v);
                    }
                    offered[c] = next_packet[c];
                }
                self.model
                    .poke(chip.ej_ready, u64::from(ej_ready(cycle, c)));
                feed.offer(&mut self.model, c, &chip.lanes);
            }
            self.model.eval();
            for c in 0..n_chips {
                let chip = &self.chips[phys[c]];
                let have = next_packet[c] < sent[c].len() && sent[c][next_packet[c]].0 <= cycle;
                if have && self.model.peek(chip.inj_ready) == 1 {
                    packets.taken[c].push(cycle);
                    next_packet[c] += 1;
                }
                if ej_ready(cycle, c) && self.model.peek(chip.ej_valid) == 1 {
                    let f: Vec<u64> = chip.ej.iter().map(|p| self.model.peek(*p)).collect();
                    packets.received[c].push(Delivery {
                        packet: Packet {
                            dest: [f[0] as u32, f[1] as u32, f[2] as u32],
                            tag: f[3] as u8,
                            payload: f[4] as u32,
                        },
                        cycle,
                    });
                    delivered += 1;
                }
                feed.observe(&self.model, c, &chip.lanes, cycle)?;
            }
            self.model.step();
            cycle += 1;
        }
        // Drain the lanes with no new errors so the counters settle.
        self.set_rates(&Faults::default());
        for c in &self.chips {
            self.model.poke(c.inj_valid, 0);
            c.lanes.idle(&mut self.model);
        }
        self.model
            .run_cycles_native(u64::from(self.cfg.link().latency()) + 2);
        let v: Vec<u64> = self.counters.iter().map(|p| self.model.peek(*p)).collect();
        let alarm = self.model.peek(self.alarm) != 0;
        let mut ar = feed.run;
        packets.cycles = cycle;
        ar.cycles = cycle;
        packets.crc_errors = v[0];
        packets.retransmits = v[1];
        packets.link_downs = v[2];
        packets.corrupted = v[3];
        packets.alarm = alarm;
        ar.crc_errors = v[0];
        ar.retransmits = v[1];
        ar.link_downs = v[2];
        ar.corrupted = v[3];
        ar.alarm = alarm;
        Ok((packets, ar))
    }
}

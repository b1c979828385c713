//! The order-v2 all-reduce engine of one chip, and a top of engines joined
//! by links of a fixed latency.
//!
//! `golden::torus_v2` states the engine's rules (streams per owner
//! coordinate, one reduction and one result processor per part and stage,
//! per-stream credits) and is its cycle model; this is the same engine in
//! RTL, with the model's queues as [`stream_queue`]s and its link ports
//! bare, so that a node can put them on ICI links beside the router. The
//! top [`links_top`] joins the engines of a torus by register chains (a
//! flit `hop` cycles from send to queue, a credit `credit` cycles from pop
//! to sender), the links the cycle model assumes, and the tests hold the
//! two to the cycle.
//!
//! # Ports of the engine
//!
//! | port | width | meaning |
//! | --- | --- | --- |
//! | `at_x_i`, `at_y_i`, `at_z_i` | 2 each | the chip's logical coordinates |
//! | `fp_i` | 1 | fp32 sums (1) or int32 wrapping sums (0), for the adds that start in the cycle |
//! | `v<p>_valid_i`, `v<p>_data_i`, `v<p>_ready_o` | 1, 32, 1 | lane p (0..3): the chip's elements e = p, p + 3, ... in order; `ready` does not depend on `valid` |
//! | `r<p>_valid_o`, `r<p>_index_o`, `r<p>_data_o` | 1, 18, 32 | lane p's results, one per pulse, with their element index; no back-pressure |
//! | `<port>_tx_valid_o`, `<port>_tx_ready_i`, `<port>_tx_data_o` | 1, 1, 64 | flits to the neighbour across torus port `<port>` (`xp` .. `zm`) |
//! | `<port>_rx_valid_i`, `<port>_rx_data_i` | 1, 64 | flits from that neighbour, always taken |
//! | `<port>_pop_o` | 9 | per part p, bits 3p .. 3p + 2: a receive queue of flits from that neighbour popped (bit 3p) and its stream: one credit back |
//! | `<port>_credit_i` | 9 | credits for flits sent on `<port>`, in the same layout |
//! | `alarm_o` | 1 | sticky, set within two cycles of the event: a queue pushed while full, a queue popped in two streams at once or a credit count overrun (never in a correct design) |
//!
//! A flit, from bit 0: `data` (1), the part (2 bits), the stream (2 bits),
//! the value (32 bits) and the element's index within its part (16 bits,
//! q = e div 3); the rest is zero.

use config::{AllreduceV2, TorusConfig, TORUS_PORTS};
use hw::{bits_for, cat, mux, Design, Expr, Inst, ModuleBuilder, ModuleDef, Reg, Ty, Wire};
use std::rc::Rc;

/// Bits of an element's index on a result lane (e < 3 x 2^16).
pub const RESULT_INDEX_BITS: u32 = AllreduceV2::INDEX_BITS + 2;
const Q_BITS: u32 = AllreduceV2::INDEX_BITS;
/// A result or partial with its index: value (bits 0..32), q (32..48).
const ITEM_BITS: u32 = 32 + Q_BITS;
/// A term with its owner's coordinates: an item, then x, y, z (2 bits each).
const TERM_BITS: u32 = ITEM_BITS + 6;
/// An outbound flit's item and stream.
const OUT_BITS: u32 = ITEM_BITS + 2;
/// Bits of a flit on a link.
pub const FLIT_BITS: u32 = 64;

/// The stage dimensions of part p (`golden::torus::v2_stage_dims`).
pub fn stage_dims(p: usize) -> [usize; 3] {
    [[0, 1, 2], [1, 2, 0], [2, 0, 1]][p]
}

/// Queues for `streams` streams of `depth` words of `width` bits, named
/// `torus_v2_queue_k<streams>_d<depth>_w<width>`. Each stream's head waits
/// in a register and the words behind it in one memory (a region of `depth`
/// words per stream) with one write port and one read port: a push (one per
/// cycle, to `push_stream_i`) is the head from the next cycle when the
/// stream was empty (or held only the head, popped in that cycle), and a pop
/// with words behind the head reads the next one, which is the head from the
/// next cycle (straight from the read port's register, copied into the
/// stream's head register a cycle later). At most one stream is popped per
/// cycle (each queue has one consumer granting one stream); a second pop is
/// an alarm. `pop_i` and `reserve_i` hold a bit per stream; `has_slot_o`
/// says a stream has fewer than `depth` words and reservations at the start
/// of the cycle (a word's reservation ends with its pop), for producers whose
/// words arrive some cycles after they reserve them.
pub fn stream_queue(design: &mut Design, streams: u32, depth: u32, width: u32) -> Rc<ModuleDef> {
    let name = format!("torus_v2_queue_k{streams}_d{depth}_w{width}");
    let params = [
        ("streams", streams.to_string()),
        ("depth", depth.to_string()),
        ("width", width.to_string()),
    ];
    assert!(depth.is_power_of_two(), "queue depths are powers of two");
    design.define(&name, &params, |_, m| {
        m.doc("Order-v2 all-reduce engine: a queue per stream, with slot reservations");
        let push = m.input("push_i", Ty::BOOL);
        let push_stream = m.input("push_stream_i", Ty::u(2));
        let push_data = m.input("push_data_i", Ty::u(width));
        let pop = m.input("pop_i", Ty::u(streams));
        let reserve = m.input("reserve_i", Ty::u(streams));
        if streams == 1 {
            m.waive(
                "UNUSEDSIGNAL",
                "push_stream_i",
                "a queue of one stream has no stream to pick",
            );
        }
        // Counts with room for one past the depth: an overflow shows there.
        let cb = bits_for(depth + 1);
        // Pointer bits within a stream's region, and stream bits above them.
        let ab = depth.trailing_zeros();
        let sb = if streams > 1 {
            bits_for(streams - 1)
        } else {
            0
        };
        let mem = (depth > 1).then(|| m.memory("words", Ty::u(width), (ab + sb).max(1)));
        // A word's address: its stream's region, then its place there.
        let addr = |stream: Option<Expr>, ptr: Expr| -> Expr {
            match stream {
                Some(r) => cat(&[r, ptr]),
                None => ptr,
            }
        };
        let push_r: Vec<Expr> = (0..streams)
            .map(|r| {
                if streams == 1 {
                    push
                } else {
                    push & push_stream.is_eq(m.lit(Ty::u(2), r))
                }
            })
            .collect();
        let count: Vec<Reg> = (0..streams)
            .map(|r| m.reg_reset(&format!("s{r}_count"), Ty::u(cb), 0))
            .collect();
        let used: Vec<Reg> = (0..streams)
            .map(|r| m.reg_reset(&format!("s{r}_used"), Ty::u(cb), 0))
            .collect();
        let head: Vec<Reg> = (0..streams)
            .map(|r| m.reg(&format!("s{r}_head"), Ty::u(width)))
            .collect();
        let one = m.lit(Ty::u(cb), 1);
        // A push goes to the head register when the stream is empty after
        // this cycle's pop, else behind it into the memory.
        let to_head: Vec<Expr> = (0..streams as usize)
            .map(|r| {
                let empty =
                    count[r].q().is_eq(0u32) | (count[r].q().is_eq(one) & pop.bit(r as u32));
                m.wire(&format!("s{r}_to_head"), empty)
            })
            .collect();
        // A pop that takes the word behind the head from the memory (a
        // queue of depth 1 has none).
        let refill: Vec<Expr> = (0..if depth > 1 { streams as usize } else { 0 })
            .map(|r| {
                m.wire(
                    &format!("s{r}_refill"),
                    pop.bit(r as u32) & count[r].q().is_gt(one),
                )
            })
            .collect();
        // Pointers: where the word behind the head is (rd) and where the
        // next word behind goes (wr).
        let ptrs: Vec<(Reg, Reg)> = (0..if depth > 1 { streams } else { 0 })
            .map(|r| {
                (
                    m.reg_reset(&format!("s{r}_rd"), Ty::u(ab.max(1)), 0),
                    m.reg_reset(&format!("s{r}_wr"), Ty::u(ab.max(1)), 0),
                )
            })
            .collect();
        // The heads as seen this cycle: the read port's word for the stream
        // refilled in the last cycle, else the head register.
        let mut current: Vec<Expr> = head.iter().map(|h| h.q()).collect();
        if let Some(mem) = mem {
            let mut wr = ptrs[0].1.q();
            let mut rd = ptrs[0].0.q();
            for (r, (d, w)) in ptrs.iter().enumerate().skip(1) {
                let here = push_stream.is_eq(m.lit(Ty::u(2), r as u64));
                wr = mux(here, w.q(), wr);
                rd = mux(pop.bit(r as u32), d.q(), rd);
            }
            let mut behind = m.lit(Ty::BOOL, 0);
            for r in 0..streams as usize {
                behind = behind | (push_r[r] & !to_head[r]);
            }
            let waddr = addr((sb > 0).then(|| push_stream.slice(0, sb)), wr);
            m.mem_write(mem, behind, waddr, push_data);
            // The popped stream's next word. It was written in an earlier
            // cycle (the stream held two words or more), so the read needs
            // no bypass of this cycle's write.
            let popped = (sb > 0).then(|| {
                let mut sel = m.lit(Ty::u(sb), 0);
                for r in 1..streams {
                    sel = mux(pop.bit(r), m.lit(Ty::u(sb), u64::from(r)), sel);
                }
                sel
            });
            let any_refill = refill
                .iter()
                .copied()
                .reduce(|a, b| a | b)
                .expect("a stream");
            let word = m.mem_read(mem, Some(any_refill), addr(popped, rd));
            for r in 0..streams as usize {
                let fresh = m.reg_reset(&format!("s{r}_fresh"), Ty::BOOL, 0);
                m.set_next(fresh, refill[r]);
                current[r] = m.wire(&format!("s{r}_current"), mux(fresh.q(), word, head[r].q()));
            }
        }
        let (mut nonempty, mut slots, mut alarms) = (vec![], vec![], vec![]);
        for r in 0..streams as usize {
            let pop_r = pop.bit(r as u32);
            m.set_next(head[r], mux(push_r[r] & to_head[r], push_data, current[r]));
            if let Some(&(rd, wr)) = ptrs.get(r) {
                m.set_next(rd, mux(refill[r], rd.q() + 1u32, rd.q()));
                m.set_next(wr, mux(push_r[r] & !to_head[r], wr.q() + 1u32, wr.q()));
            }
            m.set_next(count[r], count[r].q() + push_r[r].zext(cb) - pop_r.zext(cb));
            m.set_next(
                used[r],
                used[r].q() + reserve.bit(r as u32).zext(cb) - pop_r.zext(cb),
            );
            nonempty.push(count[r].q().is_ne(0u32));
            slots.push(used[r].q().is_lt(m.lit(Ty::u(cb), depth)));
            // A push into a full stream shows as a count past the depth in
            // the next cycle: read from the register, the check is one
            // compare per stream instead of logic on every cycle's pushes
            // (a simulator spent 7 % of a torus chip's time on the latter).
            alarms.push(count[r].q().is_gt(m.lit(Ty::u(cb), depth)));
        }
        if streams > 1 {
            // Two pops in a cycle: `pop` has more than one bit set.
            alarms.push((pop & (pop - m.lit(Ty::u(streams), 1))).any());
        }
        let rev = |v: &[Expr]| cat(&v.iter().rev().copied().collect::<Vec<_>>());
        m.output("nonempty_o", rev(&nonempty));
        // A port per stream's head: one concatenation of wide heads costs a
        // simulator a wide word built and taken apart every cycle.
        for (r, h) in current.iter().enumerate() {
            m.output(&format!("s{r}_head_o"), *h);
        }
        m.output("has_slot_o", rev(&slots));
        let alarm = alarms.into_iter().reduce(|a, b| a | b).expect("a stream");
        m.output("alarm_o", alarm);
    })
}

/// One queue instance of the engine, with the terms of its controls
/// gathered until [`Queue::finish`] drives them.
struct Queue {
    streams: u32,
    width: u32,
    push: Wire,
    push_stream: Wire,
    push_data: Wire,
    pop: Vec<Wire>,
    reserve: Vec<Wire>,
    pop_terms: Vec<Vec<Expr>>,
    reserve_terms: Vec<Vec<Expr>>,
    pushed: bool,
    nonempty: Vec<Expr>,
    head: Vec<Expr>,
    has_slot: Vec<Expr>,
    alarm: Expr,
}

impl Queue {
    fn new(
        m: &mut ModuleBuilder,
        name: &str,
        def: &Rc<ModuleDef>,
        streams: u32,
        width: u32,
    ) -> Queue {
        let inst: Inst = m.instance(name, def);
        let push = m.wire_decl(&format!("{name}_push"), Ty::BOOL);
        let push_stream = m.wire_decl(&format!("{name}_push_stream"), Ty::u(2));
        let push_data = m.wire_decl(&format!("{name}_push_data"), Ty::u(width));
        let pop: Vec<Wire> = (0..streams)
            .map(|r| m.wire_decl(&format!("{name}_pop{r}"), Ty::BOOL))
            .collect();
        let reserve: Vec<Wire> = (0..streams)
            .map(|r| m.wire_decl(&format!("{name}_reserve{r}"), Ty::BOOL))
            .collect();
        m.connect(inst, "push_i", push.value());
        m.connect(inst, "push_stream_i", push_stream.value());
        m.connect(inst, "push_data_i", push_data.value());
        let vec_of = |w: &[Wire]| cat(&w.iter().rev().map(|x| x.value()).collect::<Vec<_>>());
        m.connect(inst, "pop_i", vec_of(&pop));
        m.connect(inst, "reserve_i", vec_of(&reserve));
        let ne = m.inst_output(inst, "nonempty_o");
        let hs = m.inst_output(inst, "has_slot_o");
        Queue {
            streams,
            width,
            push,
            push_stream,
            push_data,
            pop,
            reserve,
            pop_terms: vec![Vec::new(); streams as usize],
            reserve_terms: vec![Vec::new(); streams as usize],
            pushed: false,
            nonempty: (0..streams).map(|r| ne.bit(r)).collect(),
            head: (0..streams)
                .map(|r| m.inst_output(inst, &format!("s{r}_head_o")))
                .collect(),
            has_slot: (0..streams).map(|r| hs.bit(r)).collect(),
            alarm: m.inst_output(inst, "alarm_o"),
        }
    }

    /// The one producer's push.
    fn push(&mut self, m: &mut ModuleBuilder, valid: Expr, stream: Expr, data: Expr) {
        assert!(!self.pushed, "a queue has one producer");
        self.pushed = true;
        m.drive(self.push, valid);
        let stream = if stream.ty().width < 2 {
            stream.zext(2)
        } else {
            stream
        };
        m.drive(self.push_stream, stream);
        m.drive(self.push_data, data);
    }

    /// Bits `lo .. lo + width` of every stream's head.
    fn fields(&self, lo: u32, width: u32) -> Vec<Expr> {
        (0..self.streams)
            .map(|r| self.head[r as usize].slice(lo, width))
            .collect()
    }

    /// Stream `r`'s slot, selected by a stream number `sel` (or stream 0).
    fn slot_of(&self, m: &ModuleBuilder, sel: Expr) -> Expr {
        pick(m, &self.has_slot, sel)
    }

    fn finish(self, m: &mut ModuleBuilder) {
        if !self.pushed {
            m.drive(self.push, m.lit(Ty::BOOL, 0));
            m.drive(
                self.push_stream,
                m.lit(Ty::u(bits_for(self.streams - 1)), 0),
            );
            m.drive(self.push_data, m.lit(Ty::u(self.width), 0));
        }
        for (w, terms) in self.pop.iter().zip(self.pop_terms) {
            let v = terms.into_iter().reduce(|a, b| a | b);
            m.drive(*w, v.unwrap_or_else(|| m.lit(Ty::BOOL, 0)));
        }
        for (w, terms) in self.reserve.iter().zip(self.reserve_terms) {
            let v = terms.into_iter().reduce(|a, b| a | b);
            m.drive(*w, v.unwrap_or_else(|| m.lit(Ty::BOOL, 0)));
        }
    }
}

/// `values[sel]` for a 2-bit stream number `sel` (one value: itself).
fn pick(m: &ModuleBuilder, values: &[Expr], sel: Expr) -> Expr {
    let mut out = values[0];
    for (r, v) in values.iter().enumerate().skip(1) {
        out = mux(sel.is_eq(m.lit(sel.ty(), r as u64)), *v, out);
    }
    out
}

/// Round robin over `can` from the register `first`: the one-hot grant, the
/// granted index (2 bits) and whether any is granted; `first` moves past a
/// grant in cycles where `taken` holds too (a processor's step always goes;
/// a link's flit goes when the link end is ready).
fn round_robin(
    m: &mut ModuleBuilder,
    name: &str,
    can: &[Expr],
    taken: Expr,
) -> (Vec<Expr>, Expr, Expr) {
    let k = can.len();
    let ty = Ty::u(2);
    let first = m.reg_reset(&format!("{name}_first"), ty, 0);
    let mut grant = vec![m.lit(Ty::BOOL, 0); k];
    for f in 0..k {
        let here = if k == 1 {
            m.lit(Ty::BOOL, 1)
        } else {
            first.q().is_eq(m.lit(ty, f as u64))
        };
        let mut before = m.lit(Ty::BOOL, 0);
        for i in 0..k {
            let r = (f + i) % k;
            grant[r] = grant[r] | (here & can[r] & !before);
            before = before | can[r];
        }
    }
    let grant: Vec<Expr> = grant
        .iter()
        .enumerate()
        .map(|(r, g)| m.wire(&format!("{name}_grant{r}"), *g))
        .collect();
    let any = m.wire(
        &format!("{name}_go"),
        grant
            .iter()
            .copied()
            .reduce(|a, b| a | b)
            .expect("a stream"),
    );
    let mut sel = m.lit(ty, 0);
    for (r, g) in grant.iter().enumerate().skip(1) {
        sel = sel | mux(*g, m.lit(ty, r as u64), m.lit(ty, 0));
    }
    let sel = if k == 1 {
        sel
    } else {
        m.wire(&format!("{name}_sel"), sel)
    };
    let next = if k == 1 {
        m.lit(ty, 0)
    } else {
        mux(sel.is_eq(m.lit(ty, k as u64 - 1)), m.lit(ty, 0), sel + 1u32)
    };
    m.set_next(first, mux(any & taken, next, first.q()));
    (grant, sel, any)
}

/// Brings the lanes of `inst` (an engine, or an engine's [`chip`]) out as
/// ports named `outer(port)`: `v<p>_valid_i`, `v<p>_data_i` in,
/// `v<p>_ready_o`, `r<p>_valid_o`, `r<p>_index_o`, `r<p>_data_o` out.
pub fn expose_lanes(m: &mut ModuleBuilder, inst: Inst, outer: impl Fn(&str) -> String) {
    for p in 0..3 {
        for (f, ty) in [("valid", Ty::BOOL), ("data", Ty::u(32))] {
            let port = format!("v{p}_{f}_i");
            let v = m.input(&outer(&port), ty);
            m.connect(inst, &port, v);
        }
        for f in [
            "v{p}_ready_o",
            "r{p}_valid_o",
            "r{p}_index_o",
            "r{p}_data_o",
        ] {
            let port = f.replace("{p}", &p.to_string());
            let o = m.inst_output(inst, &port);
            m.output(&outer(&port), o);
        }
    }
}

/// The engine's Verilog name.
pub fn engine_name(cfg: &TorusConfig, eng: &AllreduceV2) -> String {
    let [x, y, z] = cfg.dims();
    format!(
        "torus_allreduce_v2_{x}x{y}x{z}_q{}_o{}_l{}_a{}",
        eng.queue, eng.outbound, eng.local, eng.adder_stages
    )
}

/// Builds the engine of one chip of the torus `cfg`.
#[track_caller]
pub fn engine(design: &mut Design, cfg: &TorusConfig, eng: &AllreduceV2) -> Rc<ModuleDef> {
    let dims = cfg.dims();
    let ring = |d: usize| dims[d];
    // Queue modules by (streams, depth, width).
    let recv_defs: Vec<Option<Rc<ModuleDef>>> = (0..3)
        .map(|d| (ring(d) > 1).then(|| stream_queue(design, ring(d), eng.queue, ITEM_BITS)))
        .collect();
    let term_defs: Vec<Rc<ModuleDef>> = (0..3)
        .map(|d| stream_queue(design, ring(d), eng.local, TERM_BITS))
        .collect();
    let one_def = stream_queue(design, 1, eng.local, ITEM_BITS);
    let out_def = stream_queue(design, 1, eng.outbound, OUT_BITS);
    let adder = hw::fp::fp32_add_unit(design, eng.adder_stages, false);
    let eng = *eng;
    let params = [
        ("x", dims[0].to_string()),
        ("y", dims[1].to_string()),
        ("z", dims[2].to_string()),
        ("queue", eng.queue.to_string()),
        ("outbound", eng.outbound.to_string()),
        ("local", eng.local.to_string()),
        ("adder_stages", eng.adder_stages.to_string()),
    ];
    design.define(&engine_name(cfg, &eng), &params, |_, m| {
        m.doc(
            "ICI torus all-reduce engine, order v2: streams per owner coordinate on all six links",
        );
        m.shared_code("one engine per chip, up to 64 in a torus");
        let c2 = Ty::u(2);
        let at = [
            m.input("at_x_i", c2),
            m.input("at_y_i", c2),
            m.input("at_z_i", c2),
        ];
        let fp = m.input("fp_i", Ty::BOOL);
        let lit2 = |m: &mut ModuleBuilder, v: u32| m.lit(c2, u64::from(v));

        // ------------------------------------------------------- queues
        // Receive queues by the port the flits come in on and part; the
        // port's dimension has one stream per coordinate.
        let mut recv: Vec<Vec<Option<Queue>>> = (0..6)
            .map(|port| {
                (0..3)
                    .map(|p| {
                        recv_defs[port / 2].as_ref().map(|def| {
                            let name = format!("rx_{}_p{p}", TORUS_PORTS[port]);
                            let q = Queue::new(m, &name, def, ring(port / 2), ITEM_BITS);
                            m.waive(
                                "UNUSEDSIGNAL",
                                &format!("{name}_has_slot_o"),
                                "the sender's credits keep a receive queue from overflowing",
                            );
                            if port % 2 == 1 {
                                for r in 0..ring(port / 2) {
                                    m.waive(
                                        "UNUSEDSIGNAL",
                                        &format!("{name}_s{r}_head_o"),
                                        "a partial's index is its term's",
                                    );
                                }
                            }
                            q
                        })
                    })
                    .collect()
            })
            .collect();
        let mut input: Vec<Queue> = (0..3)
            .map(|p| {
                let d = stage_dims(p)[0];
                Queue::new(m, &format!("in_p{p}"), &term_defs[d], ring(d), TERM_BITS)
            })
            .collect();
        // Stage queues of stages 2 and 3 (index 0 and 1).
        let mut stage: Vec<Vec<Queue>> = (0..3)
            .map(|p| {
                (1..3)
                    .map(|s| {
                        let d = stage_dims(p)[s];
                        let name = format!("stage_p{p}_s{}", s + 1);
                        let q = Queue::new(m, &name, &term_defs[d], ring(d), TERM_BITS);
                        if s == 2 {
                            for r in 0..ring(d) {
                                m.waive(
                                    "UNUSEDSIGNAL",
                                    &format!("{name}_s{r}_head_o"),
                                    "the last stage needs no owner coordinates",
                                );
                            }
                        }
                        q
                    })
                    .collect()
            })
            .collect();
        let mut finals: Vec<Queue> = (0..3)
            .map(|p| Queue::new(m, &format!("final_p{p}"), &one_def, 1, ITEM_BITS))
            .collect();
        // Handoff queues of result stages 1 and 2 (index 0 and 1).
        let mut handoff: Vec<Vec<Queue>> = (0..3)
            .map(|p| {
                (0..2)
                    .map(|s| {
                        let name = format!("handoff_p{p}_s{}", s + 1);
                        Queue::new(m, &name, &one_def, 1, ITEM_BITS)
                    })
                    .collect()
            })
            .collect();
        let mut outbound: Vec<Vec<Option<Queue>>> = (0..6)
            .map(|port| {
                (0..3)
                    .map(|p| {
                        (ring(port / 2) > 1).then(|| {
                            let name = format!("out_{}_p{p}", TORUS_PORTS[port]);
                            Queue::new(m, &name, &out_def, 1, OUT_BITS)
                        })
                    })
                    .collect()
            })
            .collect();

        // ------------------------------------------------------- credits
        // Per port, part and stream: slots of the neighbour's receive queue.
        // Room for one past the neighbour's queue depth, where an overrun
        // shows.
        let cb = bits_for(eng.queue + 1);
        let credit_in: Vec<Expr> = (0..6)
            .map(|port| m.input(&format!("{}_credit_i", TORUS_PORTS[port]), Ty::u(9)))
            .collect();
        let mut credit_regs: Vec<Vec<Vec<Reg>>> = Vec::new();
        let mut credit_spend: Vec<Vec<Vec<Vec<Expr>>>> = Vec::new();
        for (port, pname) in TORUS_PORTS[..6].iter().enumerate() {
            let k = ring(port / 2);
            let mut regs = Vec::new();
            for p in 0..3 {
                let v: Vec<Reg> = (0..if k > 1 { k } else { 0 })
                    .map(|r| {
                        let name = format!("credit_{pname}_p{p}_s{r}");
                        m.reg_reset(&name, Ty::u(cb), u64::from(eng.queue))
                    })
                    .collect();
                regs.push(v);
            }
            if k == 1 {
                m.waive(
                    "UNUSEDSIGNAL",
                    &format!("{pname}_credit_i"),
                    "a ring of one carries no flits",
                );
            }
            credit_regs.push(regs);
            credit_spend.push(vec![vec![Vec::new(); k as usize]; 3]);
        }
        let has_credit = |port: usize, p: usize, r: usize| credit_regs[port][p][r].q().is_ne(0u32);
        // Pops of each port's receive queues, per part: (valid, stream).
        let mut pop_out: Vec<Vec<Option<(Expr, Expr)>>> = vec![vec![None; 3]; 6];

        // ------------------------------------------------------- input lanes
        let q_ty = Ty::u(Q_BITS);
        for (p, queue) in input.iter_mut().enumerate() {
            let valid = m.input(&format!("v{p}_valid_i"), Ty::BOOL);
            let data = m.input(&format!("v{p}_data_i"), Ty::u(32));
            let q = m.reg_reset(&format!("v{p}_q"), q_ty, 0);
            let digit: Vec<Reg> = (0..3)
                .map(|d| m.reg_reset(&format!("v{p}_owner{d}"), c2, 0))
                .collect();
            let d1 = stage_dims(p)[0];
            let stream = digit[d1].q();
            let ready = m.wire(&format!("v{p}_ready"), queue.slot_of(m, stream));
            m.output(&format!("v{p}_ready_o"), ready);
            let take = m.wire(&format!("v{p}_take"), valid & ready);
            let term = cat(&[digit[2].q(), digit[1].q(), digit[0].q(), q.q(), data]);
            queue.push(m, take, stream, term);
            for r in 0..ring(d1) {
                let here = if ring(d1) == 1 {
                    take
                } else {
                    take & stream.is_eq(lit2(m, r))
                };
                queue.reserve_terms[r as usize].push(here);
            }
            m.set_next(q, mux(take, q.q() + 1u32, q.q()));
            // The owner's coordinates: q in mixed radix, x fastest.
            let mut carry = take;
            for (d, reg) in digit.iter().enumerate() {
                let last = reg.q().is_eq(lit2(m, ring(d) - 1));
                let stepped = mux(last, lit2(m, 0), reg.q() + 1u32);
                m.set_next(*reg, mux(carry, stepped, reg.q()));
                carry = carry & last;
            }
        }

        // ------------------------------------------------------- reduction
        let adder_stages = eng.adder_stages;
        for p in 0..3 {
            let order = stage_dims(p);
            for s in 0..3 {
                let d = order[s];
                let k = ring(d);
                let name = format!("red_p{p}_s{}", s + 1);
                let up = 2 * d; // flits go up on port `up`
                let rx = 2 * d + 1; // partials come in from below
                let term_q: &Queue = if s == 0 { &input[p] } else { &stage[p][s - 1] };
                // The owner's coordinates only matter where a stage follows.
                let carried = if s < 2 { TERM_BITS } else { ITEM_BITS };
                let terms: Vec<Expr> = term_q.fields(0, carried);
                let term_ne: Vec<Expr> = term_q.nonempty.clone();
                let mut can = Vec::new();
                let mut jzero = Vec::new();
                let mut jlast = Vec::new();
                for r in 0..k {
                    let (z, l) = if k == 1 {
                        (m.lit(Ty::BOOL, 1), m.lit(Ty::BOOL, 1))
                    } else {
                        (at[d].is_eq(lit2(m, (r + 1) % k)), at[d].is_eq(lit2(m, r)))
                    };
                    let partial_ok = match &recv[rx][p] {
                        Some(q) => z | q.nonempty[r as usize],
                        None => m.lit(Ty::BOOL, 1),
                    };
                    let last_ok = if s < 2 {
                        let d2 = order[s + 1];
                        let digit = terms[r as usize].slice(ITEM_BITS + 2 * d2 as u32, 2);
                        stage[p][s].slot_of(m, digit)
                    } else {
                        finals[p].has_slot[0]
                    };
                    let ok = match &outbound[up][p] {
                        Some(o) => mux(l, last_ok, o.has_slot[0] & has_credit(up, p, r as usize)),
                        None => last_ok,
                    };
                    can.push(term_ne[r as usize] & partial_ok & ok);
                    jzero.push(z);
                    jlast.push(l);
                }
                let (grant, sel, go) = round_robin(m, &name, &can, m.lit(Ty::BOOL, 1));
                let z_sel = m.wire(&format!("{name}_jzero"), pick(m, &jzero, sel));
                let l_sel = m.wire(&format!("{name}_jlast"), pick(m, &jlast, sel));
                let term = m.wire(&format!("{name}_term"), pick(m, &terms, sel));
                let partial = match &recv[rx][p] {
                    Some(q) => pick(m, &q.fields(0, 32), sel),
                    None => m.lit(Ty::u(32), 0),
                };
                let partial = m.wire(&format!("{name}_partial"), partial);
                // Pops, credits back, reservations.
                let term_q: &mut Queue = if s == 0 {
                    &mut input[p]
                } else {
                    &mut stage[p][s - 1]
                };
                for (terms, g) in term_q.pop_terms.iter_mut().zip(&grant) {
                    terms.push(*g);
                }
                if let Some(q) = recv[rx][p].as_mut() {
                    for r in 0..k as usize {
                        q.pop_terms[r].push(grant[r] & !jzero[r]);
                    }
                    pop_out[rx][p] = Some((go & !z_sel, sel));
                }
                if let Some(o) = outbound[up][p].as_mut() {
                    o.reserve_terms[0].push(go & !l_sel);
                    for r in 0..k as usize {
                        credit_spend[up][p][r].push(grant[r] & !jlast[r]);
                    }
                }
                if s < 2 {
                    let d2 = order[s + 1];
                    let digit = term.slice(ITEM_BITS + 2 * d2 as u32, 2);
                    let k2 = ring(d2);
                    for r2 in 0..k2 {
                        let here = if k2 == 1 {
                            go & l_sel
                        } else {
                            go & l_sel & digit.is_eq(lit2(m, r2))
                        };
                        stage[p][s].reserve_terms[r2 as usize].push(here);
                    }
                } else {
                    finals[p].reserve_terms[0].push(go & l_sel);
                }
                // The add: `adder_stages` registers, the sum pushed at the
                // end of the last cycle.
                let add = m.instance(&format!("{name}_add"), &adder);
                m.connect(add, "a_i", partial);
                m.connect(add, "b_i", term.slice(0, 32));
                let fsum = m.inst_output(add, "sum_o");
                let isum = partial + term.slice(0, 32);
                // The stream only matters for a flit up (rings of two or more).
                // The sum's kind travels with the add, so that what follows
                // the adder does not depend on the engine's inputs.
                let ctl = if k > 1 {
                    cat(&[fp, z_sel, l_sel, sel, term])
                } else {
                    cat(&[fp, z_sel, l_sel, term])
                };
                let stages = adder_stages;
                let valid = hw::delay(m, &format!("{name}_valid"), go, stages, Some(0));
                let ctl = hw::delay(m, &format!("{name}_ctl"), ctl, stages, None);
                let isum = hw::delay(m, &format!("{name}_isum"), isum, stages, None);
                let e_term = ctl.slice(0, carried);
                let sb = if k > 1 { 2 } else { 0 };
                let e_sel = ctl.slice(carried, sb.max(1));
                let e_last = ctl.bit(carried + sb);
                let e_zero = ctl.bit(carried + sb + 1);
                let e_fp = ctl.bit(carried + sb + 2);
                let sum = mux(e_fp, fsum, isum);
                let sum = m.wire(
                    &format!("{name}_sum"),
                    mux(e_zero, e_term.slice(0, 32), sum),
                );
                let item = cat(&[e_term.slice(32, Q_BITS), sum]);
                if let Some(o) = outbound[up][p].as_mut() {
                    o.push(m, valid & !e_last, m.lit(Ty::BOOL, 0), cat(&[e_sel, item]));
                }
                if s < 2 {
                    let d2 = order[s + 1];
                    let digit = e_term.slice(ITEM_BITS + 2 * d2 as u32, 2);
                    let entry = cat(&[e_term.slice(ITEM_BITS, 6), item]);
                    stage[p][s].push(m, valid & e_last, digit, entry);
                } else {
                    finals[p].push(m, valid & e_last, m.lit(Ty::BOOL, 0), item);
                }
            }
        }

        // ------------------------------------------------------- results
        for p in 0..3 {
            let order = stage_dims(p);
            for s in (0..3).rev() {
                let d = order[s];
                let k = ring(d);
                let name = format!("res_p{p}_s{}", s + 1);
                let down = 2 * d + 1; // results go down on port `down`
                let rx = 2 * d; // and come in from above
                let own: &Queue = if s == 2 { &finals[p] } else { &handoff[p][s] };
                let (own_ne, own_head) = (own.nonempty[0], own.head[0]);
                let mut can = Vec::new();
                let mut on_owner = Vec::new();
                let mut fwd = Vec::new();
                let mut items = Vec::new();
                for r in 0..k {
                    let (o, f) = if k == 1 {
                        (m.lit(Ty::BOOL, 1), m.lit(Ty::BOOL, 0))
                    } else {
                        (at[d].is_eq(lit2(m, r)), at[d].is_ne(lit2(m, (r + 1) % k)))
                    };
                    let (src_ok, item) = match &recv[rx][p] {
                        Some(q) => (
                            mux(o, own_ne, q.nonempty[r as usize]),
                            mux(o, own_head, q.head[r as usize]),
                        ),
                        None => (own_ne, own_head),
                    };
                    let fwd_ok = match &outbound[down][p] {
                        Some(q) => !f | (q.has_slot[0] & has_credit(down, p, r as usize)),
                        None => m.lit(Ty::BOOL, 1),
                    };
                    let hand_ok = if s > 0 {
                        handoff[p][s - 1].has_slot[0]
                    } else {
                        m.lit(Ty::BOOL, 1)
                    };
                    can.push(src_ok & fwd_ok & hand_ok);
                    on_owner.push(o);
                    fwd.push(f);
                    items.push(item);
                }
                let (grant, sel, go) = round_robin(m, &name, &can, m.lit(Ty::BOOL, 1));
                let o_sel = m.wire(&format!("{name}_own"), pick(m, &on_owner, sel));

                let item = m.wire(&format!("{name}_item"), pick(m, &items, sel));
                let own: &mut Queue = if s == 2 {
                    &mut finals[p]
                } else {
                    &mut handoff[p][s]
                };
                own.pop_terms[0].push(go & o_sel);
                if let Some(q) = recv[rx][p].as_mut() {
                    for r in 0..k as usize {
                        q.pop_terms[r].push(grant[r] & !on_owner[r]);
                    }
                    pop_out[rx][p] = Some((go & !o_sel, sel));
                }
                if let Some(o) = outbound[down][p].as_mut() {
                    let f_sel = m.wire(&format!("{name}_fwd"), pick(m, &fwd, sel));
                    let f = go & f_sel;
                    o.reserve_terms[0].push(f);
                    o.push(m, f, m.lit(Ty::BOOL, 0), cat(&[sel, item]));
                    for r in 0..k as usize {
                        credit_spend[down][p][r].push(grant[r] & fwd[r]);
                    }
                }
                if s > 0 {
                    let h = &mut handoff[p][s - 1];
                    h.reserve_terms[0].push(go);
                    h.push(m, go, m.lit(Ty::BOOL, 0), item);
                } else {
                    let valid = m.reg_reset(&format!("r{p}_valid"), Ty::BOOL, 0);
                    m.set_next(valid, go);
                    let index = m.reg(&format!("r{p}_index"), Ty::u(RESULT_INDEX_BITS));
                    let q = item.slice(32, Q_BITS).zext(RESULT_INDEX_BITS);
                    let e = (q << 1u32) + q + m.lit(Ty::u(RESULT_INDEX_BITS), p as u64);
                    m.set_next(index, e.trunc(RESULT_INDEX_BITS));
                    let data = m.reg(&format!("r{p}_data"), Ty::u(32));
                    m.set_next(data, item.slice(0, 32));
                    m.output(&format!("r{p}_valid_o"), valid.q());
                    m.output(&format!("r{p}_index_o"), index.q());
                    m.output(&format!("r{p}_data_o"), data.q());
                }
            }
        }

        // ------------------------------------------------------- links
        for port in 0..6 {
            let pname = TORUS_PORTS[port];
            let k = ring(port / 2);
            let tx_ready = m.input(&format!("{pname}_tx_ready_i"), Ty::BOOL);
            let rx_valid = m.input(&format!("{pname}_rx_valid_i"), Ty::BOOL);
            let rx_data = m.input(&format!("{pname}_rx_data_i"), Ty::u(FLIT_BITS));
            if k == 1 {
                for sig in ["tx_ready_i", "rx_valid_i", "rx_data_i"] {
                    m.waive(
                        "UNUSEDSIGNAL",
                        &format!("{pname}_{sig}"),
                        "a ring of one carries no flits",
                    );
                }
                m.output(&format!("{pname}_tx_valid_o"), m.lit(Ty::BOOL, 0));
                m.output(&format!("{pname}_tx_data_o"), m.lit(Ty::u(FLIT_BITS), 0));
                m.output(&format!("{pname}_pop_o"), m.lit(Ty::u(9), 0));
                continue;
            }
            m.waive(
                "UNUSEDSIGNAL",
                &format!("{pname}_rx_data_i"),
                "bits above the flit's fields are zero",
            );
            // Send: round robin over the parts' outbound heads.
            let avail: Vec<Expr> = (0..3)
                .map(|p| outbound[port][p].as_ref().expect("a ring").nonempty[0])
                .collect();
            let heads: Vec<Expr> = (0..3)
                .map(|p| outbound[port][p].as_ref().expect("a ring").head[0])
                .collect();
            let name = format!("link_{pname}");
            let (grant, part, any) = round_robin(m, &name, &avail, tx_ready);
            let head = m.wire(&format!("{name}_head"), pick(m, &heads, part));
            let flit = cat(&[
                head.slice(0, ITEM_BITS),
                head.slice(ITEM_BITS, 2),
                part,
                any,
            ]);
            m.output(&format!("{pname}_tx_valid_o"), any);
            m.output(&format!("{pname}_tx_data_o"), flit.zext(FLIT_BITS));
            for (p, g) in grant.iter().enumerate() {
                let o = outbound[port][p].as_mut().expect("a ring");
                o.pop_terms[0].push(*g & tx_ready);
            }
            // Receive into the queue of the flit's part and stream.
            let f_data = rx_data.bit(0);
            let f_part = rx_data.slice(1, 2);
            let f_stream = rx_data.slice(3, 2);
            let f_item = rx_data.slice(5, ITEM_BITS);
            for (p, q) in recv[port].iter_mut().enumerate() {
                let q = q.as_mut().expect("a ring");
                let here = rx_valid & f_data & f_part.is_eq(lit2(m, p as u32));
                for r in 0..k as usize {
                    q.reserve_terms[r].push(here & f_stream.is_eq(lit2(m, r as u32)));
                }
                q.push(m, here, f_stream, f_item);
            }
            // Pops back to the sender as credits.
            let mut fields = Vec::new();
            for p in (0..3).rev() {
                let (v, s) = pop_out[port][p].unwrap_or((m.lit(Ty::BOOL, 0), lit2(m, 0)));
                fields.push(s);
                fields.push(v);
            }
            m.output(&format!("{pname}_pop_o"), cat(&fields));
        }

        // ------------------------------------------------------- credits, alarm
        let mut alarms = Vec::new();
        for port in 0..6 {
            let k = ring(port / 2);
            if k == 1 {
                continue;
            }
            for p in 0..3 {
                for r in 0..k as usize {
                    let back = credit_in[port].bit(3 * p as u32)
                        & credit_in[port]
                            .slice(3 * p as u32 + 1, 2)
                            .is_eq(lit2(m, r as u32));
                    let spend = credit_spend[port][p][r]
                        .iter()
                        .copied()
                        .reduce(|a, b| a | b)
                        .unwrap_or_else(|| m.lit(Ty::BOOL, 0));
                    let reg = credit_regs[port][p][r];
                    m.set_next(reg, reg.q() + back.zext(cb) - spend.zext(cb));
                    // An overrun shows as a count past the queue's depth in
                    // the next cycle (as a queue's push while full).
                    alarms.push(reg.q().is_gt(m.lit(Ty::u(cb), u64::from(eng.queue))));
                }
            }
        }
        let all: Vec<Queue> = recv
            .into_iter()
            .flatten()
            .flatten()
            .chain(input)
            .chain(stage.into_iter().flatten())
            .chain(finals)
            .chain(handoff.into_iter().flatten())
            .chain(outbound.into_iter().flatten().flatten())
            .collect();
        for q in all {
            alarms.push(q.alarm);
            q.finish(m);
        }
        let alarm_now = alarms.into_iter().reduce(|a, b| a | b).expect("queues");
        let alarm = m.reg_reset("alarm", Ty::BOOL, 0);
        m.set_next(alarm, alarm.q() | alarm_now);
        m.output("alarm_o", alarm.q());
    })
}

/// The top's Verilog name.
pub fn links_top_name(cfg: &TorusConfig, eng: &AllreduceV2, hop: u32, credit: u32) -> String {
    engine_name(cfg, eng).replace("torus_allreduce_v2_", "torus_allreduce_v2_links_")
        + &format!("_h{hop}_c{credit}")
}

/// A torus of engines (instance `e<c>` for logical chip c) joined by links
/// of registers: a flit sent at t is on the neighbour's `rx` at
/// t + `hop` - 1 (in its queue from t + `hop`), a pop at t on the sender's
/// `credit_i` at t + `credit` - 1. Ports: `fp_i`, per chip c the engine's
/// lanes as `c<c>_v<p>_*` and `c<c>_r<p>_*`, and `alarm_o` (any engine's).
#[track_caller]
pub fn links_top(
    design: &mut Design,
    cfg: &TorusConfig,
    eng: &AllreduceV2,
    hop: u32,
    credit: u32,
) -> Rc<ModuleDef> {
    assert!(hop >= 1 && credit >= 1, "links take at least a cycle");
    let engine_def = engine(design, cfg, eng);
    let cfg = *cfg;
    let mut params: Vec<(String, String)> = cfg.params();
    params.push(("hop".into(), hop.to_string()));
    params.push(("credit".into(), credit.to_string()));
    let params = hw::param_refs(&params);
    design.define(&links_top_name(&cfg, eng, hop, credit), &params, |_, m| {
        m.doc("Order-v2 all-reduce engines of a torus, joined by links of a fixed latency");
        let fp = m.input("fp_i", Ty::BOOL);
        let n = cfg.chips();
        let engines: Vec<Inst> = (0..n)
            .map(|c| m.instance(&format!("e{c}"), &engine_def))
            .collect();
        let mut alarm = m.lit(Ty::BOOL, 0);
        for (c, &e) in engines.iter().enumerate() {
            for (axis, v) in ["x", "y", "z"].iter().zip(cfg.coords(c)) {
                m.connect(e, &format!("at_{axis}_i"), m.lit(Ty::u(2), u64::from(v)));
            }
            m.connect(e, "fp_i", fp);
            expose_lanes(m, e, |port| format!("c{c}_{port}"));
            alarm = alarm | m.inst_output(e, "alarm_o");
        }
        for (c, &e) in engines.iter().enumerate() {
            let at = cfg.coords(c);
            for port in 0..6 {
                let to = engines[cfg.chip(cfg.neighbour(at, port))];
                let (pname, peer) = (TORUS_PORTS[port], TORUS_PORTS[port ^ 1]);
                m.connect(e, &format!("{pname}_tx_ready_i"), m.lit(Ty::BOOL, 1));
                let valid = m.inst_output(e, &format!("{pname}_tx_valid_o"));
                let data = m.inst_output(e, &format!("{pname}_tx_data_o"));
                let link = format!("c{c}_{pname}");
                let valid = hw::delay(m, &format!("{link}_valid"), valid, hop - 1, Some(0));
                let data = hw::delay(m, &format!("{link}_data"), data, hop - 1, Some(0));
                m.connect(to, &format!("{peer}_rx_valid_i"), valid);
                m.connect(to, &format!("{peer}_rx_data_i"), data);
                let pops = m.inst_output(e, &format!("{pname}_pop_o"));
                let pops = hw::delay(m, &format!("{link}_pops"), pops, credit - 1, Some(0));
                m.connect(to, &format!("{peer}_credit_i"), pops);
            }
        }
        m.output("alarm_o", alarm);
    })
}

/// The bit that marks an engine's flit on a link (router flits leave it 0).
pub const ENGINE_FLIT_BIT: u32 = 63;
/// Where an engine flit carries credits: per part p, bits 3p .. 3p + 2 of
/// this field (a credit, and its stream).
pub const CREDIT_FIELD: u32 = 53;

/// The chip side of the engine's name.
pub fn chip_name(cfg: &TorusConfig, eng: &AllreduceV2) -> String {
    engine_name(cfg, eng).replace("torus_allreduce_v2_", "torus_allreduce_v2_chip_")
}

/// The engine with its credits carried in its own flits, for a node's link
/// ends: ports as the engine's, without `<port>_pop_o` and
/// `<port>_credit_i`, every flit with [`ENGINE_FLIT_BIT`] set.
///
/// Per port, the pops of its receive queues are owed to the neighbour
/// (a count per part and stream); every flit sent on that port carries, per
/// part, one credit of the lowest stream owed one ([`CREDIT_FIELD`]), and
/// when the engine has no flit to send but owes credits it sends a flit of
/// credits alone (`data` 0). A flit's credits count at the receiving
/// engine in the cycle it arrives. On links that take a flit every cycle,
/// a pop at t is a credit at the sender from t + 1 + the link's latency,
/// since each part pops at most once per cycle.
#[track_caller]
pub fn chip(design: &mut Design, cfg: &TorusConfig, eng: &AllreduceV2) -> Rc<ModuleDef> {
    let engine_def = engine(design, cfg, eng);
    let cfg = *cfg;
    let eng = *eng;
    let dims = cfg.dims();
    let params = [
        ("x", dims[0].to_string()),
        ("y", dims[1].to_string()),
        ("z", dims[2].to_string()),
    ];
    design.define(&chip_name(&cfg, &eng), &params, |_, m| {
        m.doc("Order-v2 all-reduce engine with its credits in its flits");
        let e = m.instance("engine", &engine_def);
        for name in ["at_x_i", "at_y_i", "at_z_i", "fp_i"] {
            let ty = if name == "fp_i" { Ty::BOOL } else { Ty::u(2) };
            let v = m.input(name, ty);
            m.connect(e, name, v);
        }
        expose_lanes(m, e, str::to_string);
        let cb = bits_for(eng.queue);
        let c2 = Ty::u(2);
        for (port, pname) in TORUS_PORTS[..6].iter().enumerate() {
            let k = dims[port / 2];
            let tx_ready = m.input(&format!("{pname}_tx_ready_i"), Ty::BOOL);
            let rx_valid = m.input(&format!("{pname}_rx_valid_i"), Ty::BOOL);
            let rx_data = m.input(&format!("{pname}_rx_data_i"), Ty::u(FLIT_BITS));
            let e_valid = m.inst_output(e, &format!("{pname}_tx_valid_o"));
            let e_data = m.inst_output(e, &format!("{pname}_tx_data_o"));
            let pops = m.inst_output(e, &format!("{pname}_pop_o"));
            // Receive: flits with data to the engine, credits to its counts.
            m.connect(e, &format!("{pname}_rx_valid_i"), rx_valid & rx_data.bit(0));
            m.connect(e, &format!("{pname}_rx_data_i"), rx_data);
            let credits = mux(rx_valid, rx_data.slice(CREDIT_FIELD, 9), m.lit(Ty::u(9), 0));
            m.connect(e, &format!("{pname}_credit_i"), credits);
            if k == 1 {
                m.waive(
                    "UNUSEDSIGNAL",
                    &format!("{pname}_tx_ready_i"),
                    "a ring of one carries no flits",
                );
                m.connect(e, &format!("{pname}_tx_ready_i"), m.lit(Ty::BOOL, 1));
                for out in ["tx_valid_o", "tx_data_o", "pop_o"] {
                    m.waive(
                        "UNUSEDSIGNAL",
                        &format!("engine_{pname}_{out}"),
                        "a ring of one carries no flits",
                    );
                }
                m.output(&format!("{pname}_tx_valid_o"), m.lit(Ty::BOOL, 0));
                m.output(&format!("{pname}_tx_data_o"), m.lit(Ty::u(FLIT_BITS), 0));
                continue;
            }
            m.waive(
                "UNUSEDSIGNAL",
                &format!("engine_{pname}_tx_data_o"),
                "bits above the engine's flit fields are zero",
            );
            // Owed credits per part and stream; each flit returns, per part,
            // one of the lowest stream owed one.
            let mut fields = Vec::new();
            let mut owing = m.lit(Ty::BOOL, 0);
            let mut settle = Vec::new();
            for p in 0..3u32 {
                let popped = pops.bit(3 * p);
                let popped_stream = pops.slice(3 * p + 1, 2);
                let owed: Vec<Reg> = (0..k)
                    .map(|r| m.reg_reset(&format!("{pname}_owed_p{p}_s{r}"), Ty::u(cb), 0))
                    .collect();
                let some: Vec<Expr> = owed.iter().map(|o| o.q().is_ne(0u32)).collect();
                let mut pick_r = m.lit(c2, 0);
                let mut found = m.lit(Ty::BOOL, 0);
                let mut first = Vec::new();
                for (r, s) in some.iter().enumerate() {
                    let here = *s & !found;
                    pick_r = mux(here, m.lit(c2, r as u64), pick_r);
                    first.push(here);
                    found = found | *s;
                }
                owing = owing | found;
                fields.push((found, pick_r));
                settle.push((owed, first, popped, popped_stream));
            }
            let tx_valid = m.wire(&format!("{pname}_tx_valid"), e_valid | owing);
            let sent = tx_valid & tx_ready;
            for (owed, first, popped, popped_stream) in settle {
                for (r, o) in owed.iter().enumerate() {
                    let add = popped & popped_stream.is_eq(m.lit(c2, r as u64));
                    let sub = sent & first[r];
                    m.set_next(*o, o.q() + add.zext(cb) - sub.zext(cb));
                }
            }
            let credit_bits: Vec<Expr> = fields.iter().rev().flat_map(|(v, s)| [*s, *v]).collect();
            let flit = cat(&[
                m.lit(Ty::BOOL, 1),
                m.lit(Ty::u(ENGINE_FLIT_BIT - CREDIT_FIELD - 9), 0),
                cat(&credit_bits),
                mux(
                    e_valid,
                    e_data.slice(0, CREDIT_FIELD),
                    m.lit(Ty::u(CREDIT_FIELD), 0),
                ),
            ]);
            m.connect(e, &format!("{pname}_tx_ready_i"), tx_ready);
            m.output(&format!("{pname}_tx_valid_o"), tx_valid);
            m.output(&format!("{pname}_tx_data_o"), flit);
        }
        let alarm = m.inst_output(e, "alarm_o");
        m.output("alarm_o", alarm);
    })
}

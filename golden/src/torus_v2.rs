//! The order-v2 all-reduce engine: its rules, and its cycle model on links
//! of fixed latency.
//!
//! Order v2 (`docs/numerics.md#all-reduce-order-v2`, [`crate::torus`]'s
//! `v2_*` functions) gives every element its own chains, so that a
//! reduction can keep all six links of every chip busy. This module states
//! an engine that does it and runs its rules cycle by cycle on a torus
//! whose links each carry one flit per cycle with a fixed latency
//! ([`V2Timing`]). The RTL engine is to match this model once its link
//! timing is put in `V2Timing`; until then the model measures the rules
//! against the link bound ([`crate::torus::v2_link_bound`]).
//!
//! **Streams.** Part p (elements e = p mod 3) reduces along D1, D2, D3 (its
//! stage dimensions, [`crate::torus::v2_stage_dims`]); since the three
//! parts rotate the dimensions, each dimension is one stage of each part.
//! Within a stage along d (a ring of k chips), the elements whose owner has
//! coordinate r along d form stream r: on every line they share their
//! chain, so a chip has one place j = (c_d - r - 1) mod k in all of them
//! (j = 0 starts the chain, j = k - 1, where c_d = r, ends it). A stage's
//! streams go on in parallel: consecutive elements have owners one apart,
//! and one stream in element order would make each element wait a whole
//! hop for the one before it. A flit names its part and stream; the + link
//! of d carries the reduction streams of the three parts' stages along d,
//! the - link their result streams.
//!
//! **Processors.** A chip has a reduction processor R(p, s) and a result
//! processor B(p, s) per part p and stage s; each makes at most one step
//! per cycle, for the first of its streams, round robin from the one after
//! the stream of its last step, whose step can go. A stream's steps take
//! what is at the head of its queues, so its order is the order its queues
//! are filled in.
//!
//! **Reduction step R(p, s), stream r**: its term from the head of input
//! queue (p, r) (stage 1: the chip's own element) or of stage queue
//! (p, s, r) (R(p, s - 1) fills it), and, unless j = 0, the partial of the
//! same element from the head of receive queue (+d, p, r); the sum is
//! partial + term (add32 for fp32, a wrapping add for int32), or the term
//! alone at j = 0. Unless j = k - 1 it goes to the chip above along d
//! (outbound queue (+d, p), a credit of the receiver's queue taken by the
//! step); at j = k - 1 to stage queue (p, s + 1, r'), r' the element's
//! owner's coordinate along the next stage's dimension, or after stage 3 to
//! the final queue of p (this chip owns the element). The sum enters its
//! queue `add` cycles after the step.
//!
//! **Result step B(p, s), stream r**, for stages 3, 2, 1: the result at the
//! head of the final queue of p (stage 3 at the owner, c_d = r), of handoff
//! queue (p, s) (stages 2 and 1 where c_d = r: B(p, s + 1) fills it), or
//! else of receive queue (-d, p, r) (the chip above along d sent it down).
//! Unless c_d = r + 1 (the chain's last chip) it goes to the chip below
//! (outbound queue (-d, p), with a credit); at stages 3 and 2 also to
//! handoff queue (p, s - 1); at stage 1 it leaves on result lane p with its
//! index. Outputs enter their queues, and results their lane, one cycle
//! after the step.
//!
//! **Input.** Lane p offers the chip's elements of part p in increasing e,
//! one per cycle at most; element e goes into input queue (p, r), r its
//! owner's coordinate along D1, when that queue has a slot.
//!
//! **Links.** Each of a chip's six outbound links sends at most one flit per
//! cycle, from the first part, round robin from the one after the last
//! sent, whose outbound queue has a head. A flit sent at t is at the head
//! end of the receiver's queue from t + `hop`. A receive queue has `queue`
//! slots and its sender one credit per slot, taken by the step that makes
//! the flit and back `credit` cycles after the receiver pops the slot; so a
//! flit in an outbound queue always has its slot, and one stream never
//! waits behind another on a link.
//!
//! **Queues.** Every queue has one producer and one consumer. A step counts
//! a queue's slots at the start of its cycle (a pop frees its slot from the
//! next cycle), outputs still on their way included.
//!
//! **Order.** Every reduction stream carries its elements in increasing e:
//! input queues fill in element order, R(p, 1)'s stream r sends them on in
//! that order, and R(p, s + 1)'s stage queues are filled by the one stream
//! of R(p, s) that ends chains here, in its order. So the partial at a
//! receive queue's head is the term's element. Result streams need no
//! order: each result has one source and carries its index.
//!
//! **Why it cannot deadlock, with any slot counts of at least one.** The
//! results form a tree from each owner's final queue out to the lanes, with
//! no step waiting for two results; lanes always take. So a result step
//! waits only for a slot downstream, which the steps below it free. For
//! the reductions, let e be the smallest element with a reduction step left
//! anywhere, and X one of them whose inputs' steps are done (e's steps form
//! a chain per stage: no cycle). X's stream has stepped every element
//! before e and none after (streams are in order), so X is its next step
//! and its inputs are at their queues' heads. An outbound queue drains on
//! its own (each flit in it has its slot beyond), a final queue into the
//! result tree; the receive queue or stage queue X fills holds none of its
//! stream's elements before e (all done) and none after (not made), so its
//! slots and credits are back within `credit` cycles. An input queue holds
//! only elements >= e, so the lane can put e in. So X goes.
//!
//! **Rate.** A stage-1 processor steps at most once per cycle, so an
//! all-reduce of n elements per chip takes at least n / 3 cycles plus the
//! chains' latency; the busiest link carries n (P - 1) / (3P) elements on a
//! k x k x k torus, so that lane rate leaves every link (P - 1) / P busy.

use crate::ici::LinkPair;
use crate::numerics::add32;
use crate::torus::{neighbour, v2_owner, v2_stage_dims};
use config::{AllreduceV2, TorusConfig};
use std::collections::VecDeque;

/// The links between the engines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum V2Links {
    /// Fixed latencies (`torus::allreduce_v2::links_top`): a flit sent at t
    /// is in the receiver's queue from t + `hop`; a pop at t is a credit at
    /// the sender from t + `credit` (credits travel beside the flits).
    Fixed { hop: u32, credit: u32 },
    /// The torus's ICI links (`torus::node::top`, error-free, no host
    /// packets), each cable a [`LinkPair`] of the torus's link
    /// configuration: see "ICI links" in the module docs.
    Ici,
}

/// The engine's and the links' timing and slot counts (each at least 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V2Timing {
    pub links: V2Links,
    /// Cycles from a reduction step to its sum in the next queue.
    pub add: u32,
    /// Slots of each receive queue (one per link, part and stream).
    pub queue: u32,
    /// Slots of each outbound queue (one per link and part).
    pub outbound: u32,
    /// Slots of each input, stage, final and handoff queue.
    pub local: u32,
}

impl V2Timing {
    /// The engine `engine` on links of `hop` and `credit` cycles.
    pub fn new(engine: AllreduceV2, hop: u32, credit: u32) -> V2Timing {
        V2Timing {
            links: V2Links::Fixed { hop, credit },
            add: engine.adder_stages + 1,
            queue: engine.queue,
            outbound: engine.outbound,
            local: engine.local,
        }
    }

    /// The default engine on the torus's ICI links.
    pub fn on_torus() -> V2Timing {
        V2Timing {
            links: V2Links::Ici,
            ..V2Timing::new(AllreduceV2::DEFAULT, 1, 1)
        }
    }

    /// The default engine on links of about the ICI link's error-free
    /// latency with a router hop.
    pub fn default_links() -> V2Timing {
        V2Timing::new(AllreduceV2::DEFAULT, 8, 8)
    }

    fn check(&self) {
        let (hop, credit) = match self.links {
            V2Links::Fixed { hop, credit } => (hop, credit),
            V2Links::Ici => (1, 1),
        };
        for (name, v) in [
            ("hop", hop),
            ("credit", credit),
            ("add", self.add),
            ("queue", self.queue),
            ("outbound", self.outbound),
            ("local", self.local),
        ] {
            assert!(v >= 1, "V2Timing::{name} must be at least 1");
        }
    }
}

/// What [`run`] gives: every chip's results and when they left, the
/// cycles, the flits on each link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct V2Run {
    /// Per logical chip, the result of every element.
    pub results: Vec<Vec<u32>>,
    /// Per logical chip, the cycle each element's result is on its lane.
    pub result_cycles: Vec<Vec<u64>>,
    /// Per logical chip and lane, the cycle each element was taken in.
    pub taken: Vec<[Vec<u64>; 3]>,
    /// One past the cycle of the last result.
    pub cycles: u64,
    /// Flits sent per logical chip and torus port (x+, x-, y+, y-, z+, z-).
    pub link_flits: Vec<[u64; 6]>,
}

/// A queue with one producer and one consumer: entries become visible at
/// their ready cycle; slots are counted at the start of a cycle.
#[derive(Debug, Clone)]
struct Queue {
    items: VecDeque<Entry>,
    slots: usize,
    popped_at: Option<u64>,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    ready: u64,
    element: usize,
    value: u32,
    /// The stream at the receiver (flits only).
    stream: usize,
}

impl Queue {
    fn new(slots: u32) -> Queue {
        Queue {
            items: VecDeque::new(),
            slots: slots as usize,
            popped_at: None,
        }
    }

    fn has_slot(&self, t: u64) -> bool {
        self.items.len() + usize::from(self.popped_at == Some(t)) < self.slots
    }

    fn head(&self, t: u64) -> Option<Entry> {
        self.items.front().copied().filter(|e| e.ready <= t)
    }

    fn pop(&mut self, t: u64) -> Entry {
        self.popped_at = Some(t);
        self.items.pop_front().expect("a popped queue has a head")
    }

    fn push(&mut self, entry: Entry) {
        assert!(self.items.len() < self.slots, "a push without a slot");
        self.items.push_back(entry);
    }
}

/// Credits of one stream at its sender: the count, and credits on their
/// way back with the cycle they arrive.
#[derive(Debug, Clone)]
struct Credits {
    count: u32,
    returns: VecDeque<u64>,
}

/// One chip's engine. Queues and credits are indexed by part, then stage
/// (0-based) or port, then stream.
#[derive(Debug, Clone)]
struct Chip {
    at: [u32; 3],
    next_input: [usize; 3],
    input: Vec<Vec<Queue>>,
    /// Receive queues by the port the flit was sent on.
    receive: Vec<Vec<Vec<Queue>>>,
    outbound: Vec<Vec<Queue>>,
    credits: Vec<Vec<Vec<Credits>>>,
    next_part: [usize; 6],
    /// Stage queues: index s holds stage s's terms (s = 1, 2).
    stage: Vec<Vec<Vec<Queue>>>,
    finals: Vec<Queue>,
    /// Handoff queues: index s holds result stage s's results (s = 0, 1).
    handoff: Vec<Vec<Queue>>,
    /// Round-robin pointers of the reduction and result processors.
    reduce_first: [[usize; 3]; 3],
    result_first: [[usize; 3]; 3],
    results: Vec<Option<(u32, u64)>>,
    taken: [Vec<u64>; 3],
    flits: [u64; 6],
}

impl Chip {
    /// The part whose flit goes next on `port` at `t`: the first, round
    /// robin from the one after the last sent, with an outbound head.
    fn next_part(&self, port: usize, t: u64) -> Option<usize> {
        let first = self.next_part[port];
        (0..3)
            .map(|i| (first + i) % 3)
            .find(|&p| self.outbound[port][p].head(t).is_some())
    }

    /// Part `p`'s outbound head leaves on `port` at `t`.
    fn send(&mut self, port: usize, p: usize, t: u64) -> Entry {
        self.next_part[port] = (p + 1) % 3;
        self.flits[port] += 1;
        self.outbound[port][p].pop(t)
    }
}

/// Runs the engine on every chip's vector (`v[c]`, logical chip c; all one
/// length) and gives the results, when they left, and the link loads.
/// `fp`: fp32 sums (add32), else int32 wrapping sums. Panics if the engine
/// stops making progress, which the rules above rule out.
pub fn run(cfg: &TorusConfig, v: &[Vec<u32>], fp: bool, timing: V2Timing) -> V2Run {
    timing.check();
    let chips = cfg.chips();
    assert_eq!(v.len(), chips, "one vector per chip");
    let n = v[0].len();
    assert!(v.iter().all(|x| x.len() == n), "vectors of one length");
    let dims = cfg.dims();
    let owners: Vec<[u32; 3]> = (0..n).map(|e| v2_owner(cfg, e)).collect();
    let add = |a: u32, b: u32| if fp { add32(a, b) } else { a.wrapping_add(b) };
    // Part p's stage dimensions (the same for all its elements).
    let order = v2_stage_dims;
    let ring = |p: usize, s: usize| dims[order(p)[s]] as usize;
    let queues = |slots: u32, p: usize, s: usize| vec![Queue::new(slots); ring(p, s)];
    let mut chip: Vec<Chip> = (0..chips)
        .map(|c| Chip {
            at: cfg.coords(c),
            next_input: [0, 1, 2],
            input: (0..3).map(|p| queues(timing.local, p, 0)).collect(),
            receive: (0..6)
                .map(|port| vec![vec![Queue::new(timing.queue); dims[port / 2] as usize]; 3])
                .collect(),
            outbound: vec![vec![Queue::new(timing.outbound); 3]; 6],
            credits: (0..6)
                .map(|port| {
                    let one = Credits {
                        count: timing.queue,
                        returns: VecDeque::new(),
                    };
                    vec![vec![one; dims[port / 2] as usize]; 3]
                })
                .collect(),
            next_part: [0; 6],
            stage: (0..3)
                .map(|p| (0..3).map(|s| queues(timing.local, p, s)).collect())
                .collect(),
            finals: vec![Queue::new(timing.local); 3],
            handoff: vec![vec![Queue::new(timing.local); 2]; 3],
            reduce_first: [[0; 3]; 3],
            result_first: [[0; 3]; 3],
            results: vec![None; n],
            taken: [Vec::new(), Vec::new(), Vec::new()],
            flits: [0; 6],
        })
        .collect();
    let mut left = chips * n;
    let mut t: u64 = 0;
    let mut last_progress = 0u64;
    let stall_limit = match timing.links {
        V2Links::Fixed { hop, credit } => u64::from(hop + credit + timing.add) + 16,
        V2Links::Ici => 16 * u64::from(cfg.link().word_latency() + timing.add) + 64,
    };
    // ICI links: one per cable from a chip's up port of a dimension (end 0)
    // to its neighbour's down port (end 1); by chip and port, the link and
    // end; and per chip and port, the credits owed by part and stream.
    let mut links: Vec<LinkPair<V2Flit>> = Vec::new();
    let mut port_link = vec![[(usize::MAX, 0usize); 6]; chips];
    let mut link_ends: Vec<[(usize, usize); 2]> = Vec::new();
    if timing.links == V2Links::Ici {
        for c in 0..chips {
            for d in 0..3 {
                let peer = cfg.chip(neighbour(cfg, cfg.coords(c), 2 * d));
                port_link[c][2 * d] = (links.len(), 0);
                port_link[peer][2 * d + 1] = (links.len(), 1);
                link_ends.push([(c, 2 * d), (peer, 2 * d + 1)]);
                links.push(LinkPair::new(cfg.link()));
            }
        }
    }
    let mut owed: Vec<[[[u32; 4]; 3]; 6]> = vec![[[[0; 4]; 3]; 6]; chips];
    while left > 0 {
        let mut progress = false;
        for (c, ch) in chip.iter_mut().enumerate() {
            for cr in ch.credits.iter_mut().flatten().flatten() {
                while cr.returns.front().is_some_and(|&r| r <= t) {
                    cr.returns.pop_front();
                    cr.count += 1;
                }
            }
            // Input lanes.
            for p in 0..3 {
                let e = ch.next_input[p];
                if e >= n {
                    continue;
                }
                let r = owners[e][order(p)[0]] as usize;
                if ch.input[p][r].has_slot(t) {
                    ch.input[p][r].push(Entry {
                        ready: t + 1,
                        element: e,
                        value: v[c][e],
                        stream: r,
                    });
                    ch.taken[p].push(t);
                    ch.next_input[p] = e + 3;
                    progress = true;
                }
            }
        }
        // Links: at most one flit per outbound link.
        match timing.links {
            V2Links::Ici => {
                progress |= ici_links(t, &mut chip, &mut links, &port_link, &link_ends, &mut owed);
            }
            V2Links::Fixed { hop, .. } => {
                for c in 0..chips {
                    for port in 0..6 {
                        let Some(p) = chip[c].next_part(port, t) else {
                            continue;
                        };
                        let entry = chip[c].send(port, p, t);
                        let to = cfg.chip(neighbour(cfg, chip[c].at, port));
                        chip[to].receive[port][p][entry.stream].push(Entry {
                            ready: t + u64::from(hop),
                            ..entry
                        });
                        progress = true;
                    }
                }
            }
        }
        // Processors. A pop of a receive queue returns a credit to the chip
        // that sent into it, the neighbour behind the port it came on.
        let mut credit_returns: Vec<(usize, usize, usize, usize)> = Vec::new();
        for (c, ch) in chip.iter_mut().enumerate() {
            let at = ch.at;
            for p in 0..3 {
                let o = order(p);
                // Reduction steps, stages 1 to 3.
                for s in 0..3 {
                    let d = o[s];
                    let k = dims[d] as usize;
                    let term_queue = |ch: &Chip, r: usize| -> Option<Entry> {
                        if s == 0 {
                            ch.input[p][r].head(t)
                        } else {
                            ch.stage[p][s][r].head(t)
                        }
                    };
                    let can_step = |ch: &Chip, r: usize| -> bool {
                        let Some(term) = term_queue(ch, r) else {
                            return false;
                        };
                        let j = (at[d] as usize + 2 * k - r - 1) % k;
                        let partial = j == 0 || ch.receive[2 * d][p][r].head(t).is_some();
                        let out = if j + 1 < k {
                            ch.outbound[2 * d][p].has_slot(t) && ch.credits[2 * d][p][r].count > 0
                        } else if s < 2 {
                            let r2 = owners[term.element][o[s + 1]] as usize;
                            ch.stage[p][s + 1][r2].has_slot(t)
                        } else {
                            ch.finals[p].has_slot(t)
                        };
                        partial && out
                    };
                    let first = ch.reduce_first[p][s];
                    let Some(r) = (0..k).map(|i| (first + i) % k).find(|&r| can_step(ch, r)) else {
                        continue;
                    };
                    let j = (at[d] as usize + 2 * k - r - 1) % k;
                    let term = if s == 0 {
                        ch.input[p][r].pop(t)
                    } else {
                        ch.stage[p][s][r].pop(t)
                    };
                    let e = term.element;
                    let value = if j == 0 {
                        term.value
                    } else {
                        let x = ch.receive[2 * d][p][r].pop(t);
                        assert_eq!(x.element, e, "a partial arrives in its stream's order");
                        credit_returns.push((c, 2 * d, p, r));
                        add(x.value, term.value)
                    };
                    let out = Entry {
                        ready: t + u64::from(timing.add),
                        element: e,
                        value,
                        stream: r,
                    };
                    if j + 1 < k {
                        ch.credits[2 * d][p][r].count -= 1;
                        ch.outbound[2 * d][p].push(out);
                    } else if s < 2 {
                        let r2 = owners[e][o[s + 1]] as usize;
                        ch.stage[p][s + 1][r2].push(Entry { stream: r2, ..out });
                    } else {
                        ch.finals[p].push(out);
                    }
                    ch.reduce_first[p][s] = (r + 1) % k;
                    progress = true;
                }
                // Result steps, stages 3 to 1.
                for s in (0..3).rev() {
                    let d = o[s];
                    let k = dims[d] as usize;
                    let source = |ch: &Chip, r: usize| -> Option<Entry> {
                        if at[d] as usize == r {
                            if s == 2 {
                                ch.finals[p].head(t)
                            } else {
                                ch.handoff[p][s].head(t)
                            }
                        } else {
                            ch.receive[2 * d + 1][p][r].head(t)
                        }
                    };
                    let forwards = |r: usize| at[d] as usize != (r + 1) % k;
                    let can_step = |ch: &Chip, r: usize| -> bool {
                        if source(ch, r).is_none() {
                            return false;
                        }
                        let forward = !forwards(r)
                            || (ch.outbound[2 * d + 1][p].has_slot(t)
                                && ch.credits[2 * d + 1][p][r].count > 0);
                        let handoff = s == 0 || ch.handoff[p][s - 1].has_slot(t);
                        forward && handoff
                    };
                    let first = ch.result_first[p][s];
                    let Some(r) = (0..k).map(|i| (first + i) % k).find(|&r| can_step(ch, r)) else {
                        continue;
                    };
                    let x = if at[d] as usize == r {
                        if s == 2 {
                            ch.finals[p].pop(t)
                        } else {
                            ch.handoff[p][s].pop(t)
                        }
                    } else {
                        credit_returns.push((c, 2 * d + 1, p, r));
                        ch.receive[2 * d + 1][p][r].pop(t)
                    };
                    let out = Entry {
                        ready: t + 1,
                        stream: r,
                        ..x
                    };
                    if forwards(r) {
                        ch.credits[2 * d + 1][p][r].count -= 1;
                        ch.outbound[2 * d + 1][p].push(out);
                    }
                    if s > 0 {
                        ch.handoff[p][s - 1].push(out);
                    } else {
                        assert!(ch.results[x.element].is_none(), "a result leaves once");
                        ch.results[x.element] = Some((x.value, t + 1));
                        left -= 1;
                    }
                    ch.result_first[p][s] = (r + 1) % k;
                    progress = true;
                }
            }
        }
        for (c, port, p, r) in credit_returns {
            match timing.links {
                V2Links::Fixed { credit, .. } => {
                    let from = cfg.chip(neighbour(cfg, chip[c].at, port ^ 1));
                    chip[from].credits[port][p][r]
                        .returns
                        .push_back(t + u64::from(credit));
                }
                // Owed on the port the flit came in on, from t + 1.
                V2Links::Ici => owed[c][port ^ 1][p][r] += 1,
            }
        }
        if progress {
            last_progress = t;
        }
        assert!(
            t - last_progress <= stall_limit,
            "the engine made no progress from cycle {last_progress}"
        );
        t += 1;
    }
    let result_cycles: Vec<Vec<u64>> = chip
        .iter()
        .map(|c| {
            c.results
                .iter()
                .map(|r| r.expect("every result").1)
                .collect()
        })
        .collect();
    V2Run {
        results: chip
            .iter()
            .map(|c| {
                c.results
                    .iter()
                    .map(|r| r.expect("every result").0)
                    .collect()
            })
            .collect(),
        cycles: result_cycles
            .iter()
            .flatten()
            .map(|&c| c + 1)
            .max()
            .unwrap_or(0),
        result_cycles,
        taken: chip.iter().map(|c| c.taken.clone()).collect(),
        link_flits: chip.iter().map(|c| c.flits).collect(),
    }
}

/// A flit of the engine on an ICI link: an element of a part's stream (or
/// none: credits alone), and per part a credit of one stream.
#[derive(Debug, Clone, Copy)]
struct V2Flit {
    data: Option<(usize, Entry)>,
    credits: [Option<usize>; 3],
}

/// One cycle of the ICI links: each chip offers, on each port, the first
/// part's outbound head (round robin) with, per part, a credit of the
/// lowest stream it owes on that port, or when it has no head but owes,
/// credits alone; the link end takes the offer when ready (the outbound
/// head leaves, the credits are paid). A flit a link end delivers at t is
/// in its receive queue from t + 1 and its credits count from t + 1.
fn ici_links(
    t: u64,
    chip: &mut [Chip],
    links: &mut [LinkPair<V2Flit>],
    port_link: &[[(usize, usize); 6]],
    link_ends: &[[(usize, usize); 2]],
    owed: &mut [[[[u32; 4]; 3]; 6]],
) -> bool {
    let mut progress = false;
    let mut offers: Vec<[Option<V2Flit>; 2]> = vec![[None, None]; links.len()];
    // Per link end: the sender's port and the part of its element, if any.
    type Pick = Option<(usize, Option<usize>)>;
    let mut picks: Vec<[Pick; 2]> = vec![[None, None]; links.len()];
    for (c, ch) in chip.iter().enumerate() {
        for port in 0..6 {
            let (l, k) = port_link[c][port];
            let part = ch.next_part(port, t);
            let credits: [Option<usize>; 3] =
                std::array::from_fn(|p| owed[c][port][p].iter().position(|&o| o > 0));
            if part.is_none() && credits.iter().all(Option::is_none) {
                continue;
            }
            let data = part.map(|p| (p, ch.outbound[port][p].head(t).expect("a head")));
            offers[l][k] = Some(V2Flit { data, credits });
            picks[l][k] = Some((port, part));
        }
    }
    let n_links = links.len();
    for l in 0..n_links {
        let ready = [links[l].tx_ready(0), links[l].tx_ready(1)];
        let step = links[l].step(offers[l], [true, true]);
        for k in 0..2 {
            // The sender's side.
            if let (Some((port, part)), true) = (picks[l][k], ready[k]) {
                debug_assert!(step.taken[k]);
                let c = link_ends[l][k].0;
                let flit = offers[l][k].expect("an offer");
                for (p, r) in flit.credits.iter().enumerate() {
                    if let Some(r) = r {
                        owed[c][port][p][*r] -= 1;
                    }
                }
                if let Some(p) = part {
                    chip[c].send(port, p, t);
                }
                progress = true;
            }
            // The receiver's side.
            if let Some(flit) = step.delivered[k] {
                let (c, port) = link_ends[l][k];
                let sent_on = port ^ 1;
                if let Some((p, entry)) = flit.data {
                    chip[c].receive[sent_on][p][entry.stream].push(Entry {
                        ready: t + 1,
                        ..entry
                    });
                }
                for (p, r) in flit.credits.iter().enumerate() {
                    if let Some(r) = r {
                        chip[c].credits[port][p][*r].returns.push_back(t + 1);
                    }
                }
                progress = true;
            }
        }
    }
    progress
}

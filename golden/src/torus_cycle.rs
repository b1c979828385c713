//! The ICI torus, cycle by cycle, on error-free links: when each host
//! packet is taken and ejected ([`packet_cycles`]). The all-reduce
//! engine's cycles are [`crate::torus_v2`]'s.
//!
//! The model is the documented protocol of `hw/torus` (its crate docs:
//! "The router", "Node and top", "All-reduce") and the ICI link's timing
//! contract ([`crate::ici::LinkPair`]), stepped one cycle at a time. It
//! works in logical coordinates: the serdes stubs join logical neighbours
//! whatever the wiring, so a re-cabled torus has the same timing by
//! logical chip. Its parts, and their rules, all reading the state at the
//! start of cycle t:
//!
//! - **Buffers**: every buffer (a VC input buffer, the injection and
//!   ejection buffers, the engine's receive queues) is a first-word
//!   fall-through queue. A word pushed at p is at the head from
//!   max(p + 2, q + 1), q the cycle the word before it left; a buffer takes
//!   a push when it held fewer words than its depth at the start of the
//!   cycle (a pop frees its slot from the next cycle).
//! - **Router**: 6V + 1 heads (V VCs per port, 13 with the default two),
//!   numbered in the order of the router's requesters: torus port p's VC v
//!   is head Vp + v (ports xp, xm, yp, ym, zp, zm), the injection buffer
//!   head 6V. Each head routes by
//!   [`crate::torus::route`] and asks for its output when it can go there:
//!   a torus output when its link end is ready and the output VC's credit
//!   count is above zero, the local output when the ejection buffer has
//!   room. Each output grants the first asking head at or after its
//!   priority (wrapping; 0 after reset), and its priority moves to the head
//!   after the granted one. A granted head leaves its buffer at t and is
//!   offered to the link end at t (the link end takes it, being ready), or
//!   pushed into the ejection buffer at t.
//! - **Credits**: a send on VC v of port p spends a credit at t; credits
//!   returned in a flit delivered at t count from t + 1. A pop of input
//!   buffer (p, v) at t is owed to the neighbour on p; every flit sent on p
//!   carries what was owed at the start of its cycle, and when p has no
//!   packet granted, owes something and its link end is ready, a flit of
//!   credits alone goes.
//! - **Links** ([`crate::ici::LinkPair`]): one per cable, between a chip's
//!   up port of a dimension and its neighbour's down port; the router
//!   always takes what its link end delivers.
//! - **Host** ([`packet_cycles`]): chip c offers its next packet from its
//!   creation cycle on; the injection buffer takes it when it has room.
//!   The host takes the ejection buffer's head in cycles its `ej_ready`
//!   allows.
//!
//! Cycle 0 is the first cycle after reset; a run's length is one past the
//! cycle of its last delivery. `tb/tests/torus.rs` holds the RTL to every
//! cycle this model gives.

use crate::ici::LinkPair;
use crate::torus::{neighbour, route};
use config::{Packet, TorusConfig, Wiring, LOCAL_PORT};
use std::collections::VecDeque;

/// Words of the router's injection and ejection buffers.
const LOCAL_BUFFER_DEPTH: usize = config::TORUS_LOCAL_DEPTH as usize;

/// The most VCs a torus port has ([`config::TORUS_VC_COUNTS`]).
const MAX_VCS: usize = 4;

/// A first-word fall-through buffer by the rule of the module docs.
#[derive(Debug)]
struct Fifo<T> {
    depth: usize,
    /// Words held, oldest first, with the cycle each was pushed.
    words: VecDeque<(u64, T)>,
    last_pop: Option<u64>,
}

impl<T> Fifo<T> {
    fn new(depth: usize) -> Fifo<T> {
        Fifo {
            depth,
            words: VecDeque::new(),
            last_pop: None,
        }
    }

    /// Words held at the start of cycle `t` (a pop in t still counts).
    fn count_at_start(&self, t: u64) -> usize {
        self.words.len() + usize::from(self.last_pop == Some(t))
    }

    /// Whether a push in cycle `t` is taken.
    fn room(&self, t: u64) -> bool {
        self.count_at_start(t) < self.depth
    }

    /// The head in cycle `t`, if one is out.
    fn head(&self, t: u64) -> Option<&T> {
        let (pushed, word) = self.words.front()?;
        let after_prev = self.last_pop.is_none_or(|q| t > q);
        (t >= pushed + 2 && after_prev).then_some(word)
    }

    fn pop(&mut self, t: u64) -> T {
        assert!(self.head(t).is_some(), "a pop without a head at {t}");
        self.last_pop = Some(t);
        self.words.pop_front().expect("a head").1
    }

    fn push(&mut self, t: u64, word: T) {
        assert!(self.room(t), "a push into a full buffer at {t}");
        self.words.push_back((t, word));
    }
}

/// What a router hands its link end: a packet on a VC (or none: credits
/// only) and the credits it returns per VC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkFlit {
    pub packet: Option<(u32, Packet)>,
    /// Per VC (those past the torus's count are 0).
    pub credits: [u32; MAX_VCS],
}

/// One chip's router: see the module docs.
#[derive(Debug)]
struct Router {
    at: [u32; 3],
    /// VCs per torus port (V).
    vcs: usize,
    /// Heads 0..6V the VC input buffers (Vp + v), 6V the injection buffer.
    inputs: Vec<Fifo<Packet>>,
    ejection: Fifo<Packet>,
    /// Credits of the neighbour's buffer, per torus port and VC.
    credits: [[u32; MAX_VCS]; 6],
    /// Slots freed per input port and VC, not yet sent back.
    owed: [[u32; MAX_VCS]; 6],
    /// Per output (6: local), the head with the highest priority.
    priority: [usize; 7],
    vc_depth: u32,
    waits: Waits,
}

/// Why heads that wanted to move did not, counted in head-cycles: what a
/// test reads to know that its traffic contended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Waits {
    /// A head whose torus output's link end was ready, but whose output VC
    /// had no credit.
    pub credit: u64,
    /// A head that could go but whose output granted another.
    pub arbitration: u64,
}

/// What a router did in one cycle.
#[derive(Debug)]
struct RouterCycle {
    /// The flit offered to each torus port's link end.
    offers: [Option<LinkFlit>; 6],
    /// The injection buffer took the host's (or engine's) offer.
    injected: bool,
    /// The packet taken from the ejection buffer.
    ejected: Option<Packet>,
}

impl Router {
    fn new(cfg: &TorusConfig, at: [u32; 3]) -> Router {
        let depth = cfg.vc_depth() as usize;
        let vcs = cfg.vcs() as usize;
        let mut inputs: Vec<Fifo<Packet>> = (0..6 * vcs).map(|_| Fifo::new(depth)).collect();
        inputs.push(Fifo::new(LOCAL_BUFFER_DEPTH));
        let mut credits = [[0; MAX_VCS]; 6];
        for port in &mut credits {
            port[..vcs].fill(cfg.vc_depth());
        }
        Router {
            at,
            vcs,
            inputs,
            ejection: Fifo::new(LOCAL_BUFFER_DEPTH),
            credits,
            owed: [[0; MAX_VCS]; 6],
            priority: [0; 7],
            vc_depth: cfg.vc_depth(),
            waits: Waits::default(),
        }
    }

    /// Whether the injection buffer takes an offer in cycle `t`.
    fn inj_ready(&self, t: u64) -> bool {
        self.inputs[self.injection()].room(t)
    }

    /// The injection buffer's head number, after the VC buffers'.
    fn injection(&self) -> usize {
        6 * self.vcs
    }

    /// Cycle `t`: `tx_ready` of the six link ends, the packet offered for
    /// injection, and whether the ejection buffer's head may be taken.
    fn step(
        &mut self,
        cfg: &TorusConfig,
        t: u64,
        tx_ready: [bool; 6],
        inj: Option<Packet>,
        ej_ready: bool,
    ) -> RouterCycle {
        // Everything below reads the state at the start of t.
        let (heads, injection, vcs) = (self.injection() + 1, self.injection(), self.vcs);
        let wants: Vec<Option<(usize, u32, Packet)>> = (0..heads)
            .map(|h| {
                let p = *self.inputs[h].head(t)?;
                let (in_port, in_vc) = if h == injection {
                    (LOCAL_PORT, 0)
                } else {
                    (h / vcs, (h % vcs) as u32)
                };
                let (out, vc) = route(cfg, self.at, p.dest, in_port, in_vc);
                Some((out, vc, p))
            })
            .collect();
        let injected = inj.is_some() && self.inj_ready(t);
        let ejection_room = self.ejection.room(t);
        let ejected = if ej_ready {
            self.ejection.head(t).copied()
        } else {
            None
        };
        let mut grants: [Option<usize>; 7] = [None; 7];
        for (o, grant) in grants.iter_mut().enumerate() {
            let can_go = |h: usize| match wants[h] {
                Some((out, vc, _)) if out == o => {
                    if o == LOCAL_PORT {
                        ejection_room
                    } else {
                        tx_ready[o] && self.credits[o][vc as usize] > 0
                    }
                }
                _ => false,
            };
            *grant = (0..heads)
                .map(|i| (self.priority[o] + i) % heads)
                .find(|&h| can_go(h));
            let asking = (0..heads).filter(|&h| can_go(h)).count() as u64;
            self.waits.arbitration += asking.saturating_sub(1);
        }
        for want in wants.iter().flatten() {
            let (out, vc, _) = *want;
            if out != LOCAL_PORT && tx_ready[out] && self.credits[out][vc as usize] == 0 {
                self.waits.credit += 1;
            }
        }
        let mut offers: [Option<LinkFlit>; 6] = [None; 6];
        for (o, offer) in offers.iter_mut().enumerate() {
            let owed = self.owed[o];
            *offer = match grants[o] {
                Some(h) => {
                    let (_, vc, p) = wants[h].expect("a granted head");
                    Some(LinkFlit {
                        packet: Some((vc, p)),
                        credits: owed,
                    })
                }
                None if owed.iter().any(|&c| c != 0) && tx_ready[o] => Some(LinkFlit {
                    packet: None,
                    credits: owed,
                }),
                None => None,
            };
        }

        // Updates, to the state at the start of t + 1.
        if injected {
            self.inputs[injection].push(t, inj.expect("an offer"));
        }
        if ejected.is_some() {
            self.ejection.pop(t);
        }
        let mut popped = vec![false; heads];
        for (o, grant) in grants.iter().enumerate() {
            let Some(h) = *grant else { continue };
            let p = self.inputs[h].pop(t);
            popped[h] = true;
            self.priority[o] = (h + 1) % heads;
            if o == LOCAL_PORT {
                self.ejection.push(t, p);
            } else {
                let vc = wants[h].expect("a granted head").1 as usize;
                self.credits[o][vc] -= 1;
            }
        }
        for (p, offer) in offers.iter().enumerate() {
            for v in 0..vcs {
                let kept = if offer.is_some() { 0 } else { self.owed[p][v] };
                self.owed[p][v] = kept + u32::from(popped[vcs * p + v]);
            }
        }
        RouterCycle {
            offers,
            injected,
            ejected,
        }
    }

    /// A flit its link end on `port` delivered in cycle `t`.
    fn receive(&mut self, t: u64, port: usize, flit: LinkFlit) {
        for v in 0..self.vcs {
            self.credits[port][v] += flit.credits[v];
            assert!(
                self.credits[port][v] <= self.vc_depth,
                "credits returned beyond the buffer at {:?} port {port}",
                self.at
            );
        }
        if let Some((vc, p)) = flit.packet {
            self.inputs[self.vcs * port + vc as usize].push(t, p);
        }
    }
}

/// The routers and the links between them.
#[derive(Debug)]
struct Network {
    cfg: TorusConfig,
    /// By logical chip.
    routers: Vec<Router>,
    links: Vec<LinkPair<LinkFlit>>,
    /// Per link, the (chip, port) of its ends A and B.
    link_ends: Vec<[(usize, usize); 2]>,
    /// Per chip and torus port, the (link, end) it is.
    port_link: Vec<[(usize, usize); 6]>,
}

/// What the network did at one chip's local port in a cycle.
#[derive(Debug, Clone, Copy)]
struct LocalPort {
    injected: bool,
    ejected: Option<Packet>,
}

impl Network {
    fn new(cfg: &TorusConfig) -> Network {
        let n = cfg.chips();
        let routers = (0..n).map(|c| Router::new(cfg, cfg.coords(c))).collect();
        let mut links = Vec::new();
        let mut link_ends = Vec::new();
        let mut port_link = vec![[(usize::MAX, 0); 6]; n];
        for c in 0..n {
            for d in 0..3 {
                let up = 2 * d;
                let peer = cfg.chip(neighbour(cfg, cfg.coords(c), up));
                let l = links.len();
                links.push(LinkPair::new(cfg.link()));
                link_ends.push([(c, up), (peer, up + 1)]);
                port_link[c][up] = (l, 0);
                port_link[peer][up + 1] = (l, 1);
            }
        }
        Network {
            cfg: *cfg,
            routers,
            links,
            link_ends,
            port_link,
        }
    }

    /// Cycle `t`: each chip's injection offer and ejection readiness.
    fn step(&mut self, t: u64, inj: &[Option<Packet>], ej_ready: &[bool]) -> Vec<LocalPort> {
        let mut offers: Vec<[Option<LinkFlit>; 2]> = vec![[None, None]; self.links.len()];
        let mut local = Vec::with_capacity(self.routers.len());
        for (c, router) in self.routers.iter_mut().enumerate() {
            let ends = self.port_link[c];
            let tx_ready = ends.map(|(l, k)| self.links[l].tx_ready(k));
            let out = router.step(&self.cfg, t, tx_ready, inj[c], ej_ready[c]);
            for (p, offer) in out.offers.into_iter().enumerate() {
                let (l, k) = ends[p];
                offers[l][k] = offer;
            }
            local.push(LocalPort {
                injected: out.injected,
                ejected: out.ejected,
            });
        }
        for (l, link) in self.links.iter_mut().enumerate() {
            debug_assert_eq!(link.cycle(), t);
            let step = link.step(offers[l], [true, true]);
            for k in 0..2 {
                if let Some(flit) = step.delivered[k] {
                    let (c, p) = self.link_ends[l][k];
                    self.routers[c].receive(t, p, flit);
                }
            }
        }
        local
    }
}

/// The cycles of host packet traffic by the model, by logical chip.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PacketTiming {
    /// By source: the cycle each packet was taken by the injection buffer.
    pub taken: Vec<Vec<u64>>,
    /// By destination, in the order taken: each packet and the cycle the
    /// host took it from the ejection buffer.
    pub received: Vec<Vec<(Packet, u64)>>,
    /// One past the cycle of the last delivery.
    pub cycles: u64,
    /// Summed over every router.
    pub waits: Waits,
}

/// Host packet traffic on error-free links: logical chip c offers
/// `sent[c]` in order, each from its creation cycle on, and takes the
/// packets its router ejects in cycles where `ej_ready(t, c)` holds. The
/// wiring only places the chips: by logical chip, the timing is the plain
/// torus's. `None` if not everything is delivered within `max_cycles`.
pub fn packet_cycles(
    cfg: &TorusConfig,
    wiring: &Wiring,
    sent: &[Vec<(u64, Packet)>],
    ej_ready: &dyn Fn(u64, usize) -> bool,
    max_cycles: u64,
) -> Option<PacketTiming> {
    let n = cfg.chips();
    assert_eq!(wiring.table().len(), n, "a wiring of this torus");
    assert_eq!(sent.len(), n, "one packet list per chip");
    let total: usize = sent.iter().map(Vec::len).sum();
    let mut net = Network::new(cfg);
    let mut timing = PacketTiming {
        taken: vec![Vec::new(); n],
        received: vec![Vec::new(); n],
        cycles: 0,
        waits: Waits::default(),
    };
    let mut next = vec![0usize; n];
    let mut delivered = 0;
    let mut t = 0;
    while delivered < total {
        if t >= max_cycles {
            return None;
        }
        let inj: Vec<Option<Packet>> = (0..n)
            .map(|c| match sent[c].get(next[c]) {
                Some(&(created, p)) if created <= t => Some(p),
                _ => None,
            })
            .collect();
        let ready: Vec<bool> = (0..n).map(|c| ej_ready(t, c)).collect();
        let local = net.step(t, &inj, &ready);
        for (c, port) in local.iter().enumerate() {
            if port.injected {
                timing.taken[c].push(t);
                next[c] += 1;
            }
            if let Some(p) = port.ejected {
                timing.received[c].push((p, t));
                delivered += 1;
            }
        }
        t += 1;
    }
    timing.cycles = t;
    for r in &net.routers {
        timing.waits.credit += r.waits.credit;
        timing.waits.arbitration += r.waits.arbitration;
    }
    Some(timing)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(dims: [u32; 3], vc_depth: u32) -> TorusConfig {
        let link = config::IciConfig::new(config::torus::TORUS_FLIT_BYTES, 8, 8, 2, 32, 8, 4)
            .expect("a link");
        TorusConfig::new(dims, vc_depth, link).expect("a torus")
    }

    #[test]
    fn a_lone_packet_takes_the_documented_hops() {
        // Injected at t: on the first torus output at t + 2, and each link
        // hop of the ICI contract (taken at a, at the peer's client at
        // a + 4 + L) then 2 cycles through the next router; at the
        // destination 4 cycles to the ejection stream.
        let c = cfg([3, 1, 1], 4);
        let w = Wiring::identity(&c);
        let p = Packet {
            dest: [1, 0, 0],
            tag: 0,
            payload: 7,
        };
        let mut sent = vec![Vec::new(); 3];
        sent[0].push((5, p));
        let t = packet_cycles(&c, &w, &sent, &|_, _| true, 1000).unwrap();
        let l = u64::from(c.link().latency());
        assert_eq!(t.taken[0], [5]);
        assert_eq!(t.received[1], [(p, 5 + 2 + 4 + l + 4)]);
    }
}

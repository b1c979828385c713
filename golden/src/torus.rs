//! The ICI torus: where packets go, and what an all-reduce computes.
//!
//! **Routing** ([`route`], [`path`]). Dimension-order routing with
//! wraparound: a packet corrects X first, then Y, then Z, each along the
//! shorter way round its ring (up, port 2d, when the distance up is less than
//! half the ring; down, port 2d + 1, when it is more), and leaves by the
//! local port at its destination. A destination exactly half a ring away
//! (even rings) goes up from an even coordinate and down from an odd one:
//! uniform traffic then loads both directions alike, where always going up
//! doubled the up links' share. The choice is made once, at the
//! dimension's first hop; from the next router on the way is shorter. Coordinates are logical (after any re-cabling by a
//! [`config::Wiring`]).
//!
//! **Virtual channels: the dateline rule.** Each ring has a dateline: the
//! wraparound link, from the last coordinate to 0 going up and from 0 to the
//! last going down. A packet travels on VC 0 within a dimension until it
//! crosses that dimension's dateline, and on VC 1 from the crossing until it
//! leaves the dimension; it enters every dimension (and the network) on
//! VC 0. A minimal route crosses a ring's dateline at most once, since it
//! goes at most half way round. That is the torus's default of two VCs
//! (`config::TorusConfig::vcs`). With four, those two are classes: a packet
//! of class c (0 before its dimension's dateline, 1 from the crossing) goes
//! on VC 2c + 1 if it goes on in the same dimension after the hop and on
//! VC 2c if it turns or leaves at the next router. With one, every packet
//! is on VC 0.
//!
//! **Why this is deadlock-free.** Channels are (link, VC) pairs; a packet
//! holding a buffer slot of one channel waits only for a slot of the next
//! channel on its route. Deadlock needs a cycle of such waits, a cycle of the
//! channel dependency graph (CDG). Order the channels: by dimension first
//! (a route uses dimensions in increasing order only, so no dependency goes
//! from a higher dimension to a lower one), then within a dimension and
//! direction by (VC, position along the direction measured from the
//! dateline). Within one ring direction, a VC 0 channel depends on the next
//! VC 0 channel further from the dateline or, at the dateline, on a VC 1
//! channel; a VC 1 channel depends on the next VC 1 channel, and a VC 1 route
//! never crosses the dateline again, so its position only grows. Every
//! dependency goes up in this order, so the CDG has no cycle, and with
//! finite buffers, a local port that always drains, and per-VC credits (a
//! flit never enters a buffer without a free slot), every flit eventually
//! moves. Four VCs keep the order: the class takes the place of the VC,
//! and the choice within a class changes no dependency's direction in it.
//! [`cdg_is_acyclic`] checks the graph itself for every torus up to 4x4x4
//! at each VC count. With ties split by parity, even one VC leaves no cycle on rings of
//! up to 4 (routes two hops up start only at even coordinates and two hops
//! down only at odd ones, so no chain of dependencies goes round a ring);
//! with ties always up and one VC, it finds the cycles of rings of 4 that
//! the dateline's second VC removes.
//!
//! **All-reduce** ([`allreduce_f32_v2`], [`allreduce_i32`]): fp32 sums in
//! the contract's order, int32 sums wrapping (their order does not matter).
//!
//! **All-reduce order v2** ([`allreduce_f32_v2`]): the bandwidth-optimal
//! order of `docs/numerics.md#all-reduce-order-v2`, which the torus's
//! engine runs (`crate::torus_v2`): element e's part e mod 3 picks the order of the stage
//! dimensions ([`v2_stage_dims`]), e div 3 in mixed radix its owner chip
//! ([`v2_owner`]), and every chain runs from just past the owner round its
//! ring to the owner ([`v2_chain`]). [`v2_schedule`] states the messages of
//! the schedule the order is made for (chains up over the + 1 links, the
//! result back over the - 1 links, stages in reverse);
//! [`allreduce_v2_by_schedule_f32`] runs it on values, and for every torus
//! up to 4x4x4 every chip ends with the order's sum, every message is one
//! hop, and its links carry what [`v2_link_loads`] counts.
//!

use crate::numerics::add32;
use config::{Packet, TorusConfig, LOCAL_PORT};
use std::collections::HashMap;

/// How VCs are chosen: the router's rule for the torus's VC count (one VC;
/// the dateline's two classes; or those two each split by whether the
/// packet goes on in its dimension after the hop), or a single VC whatever
/// the count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VcPolicy {
    Dateline,
    SingleVc,
}

/// Which way a destination exactly half a ring away goes: split by the
/// router's coordinate's parity (the router's rule), or always up (the
/// rule before the split, for showing the cycles it leaves with one VC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ties {
    Split,
    AlwaysUp,
}

/// A routing rule: dimension order and minimal, with these VCs and ties.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoutePolicy {
    pub vcs: VcPolicy,
    pub ties: Ties,
}

impl RoutePolicy {
    /// The router's rule.
    pub const ROUTER: RoutePolicy = RoutePolicy {
        vcs: VcPolicy::Dateline,
        ties: Ties::Split,
    };
}

/// The output port and VC of a packet for `dest`, at the router at `at`,
/// that arrived through input port `in_port` (a torus port 0..6, or
/// [`LOCAL_PORT`]) on VC `in_vc`. The local port is (`LOCAL_PORT`, 0).
pub fn route(
    cfg: &TorusConfig,
    at: [u32; 3],
    dest: [u32; 3],
    in_port: usize,
    in_vc: u32,
) -> (usize, u32) {
    route_with(cfg, at, dest, in_port, in_vc, RoutePolicy::ROUTER)
}

/// [`route`] under a routing policy.
pub fn route_with(
    cfg: &TorusConfig,
    at: [u32; 3],
    dest: [u32; 3],
    in_port: usize,
    in_vc: u32,
    policy: RoutePolicy,
) -> (usize, u32) {
    let dims = cfg.dims();
    for d in 0..3 {
        let k = dims[d];
        let up_by = (dest[d] + k - at[d]) % k;
        if up_by == 0 {
            continue;
        }
        // Half way round either way is as short: the router's own
        // coordinate's parity picks, so that such packets split evenly over
        // both directions.
        let tie_up = match policy.ties {
            Ties::Split => at[d].is_multiple_of(2),
            Ties::AlwaysUp => true,
        };
        let up = 2 * up_by < k || (2 * up_by == k && tie_up);
        let port = 2 * d + usize::from(!up);
        let crossing = if up { at[d] == k - 1 } else { at[d] == 0 };
        let same_dim = in_port != LOCAL_PORT && in_port / 2 == d;
        // The dateline class: 1 from the hop that crosses this dimension's
        // wraparound link on.
        let in_class = if cfg.vcs() == 4 { in_vc / 2 } else { in_vc };
        let class = u32::from(crossing || (same_dim && in_class == 1));
        // Hops left in this dimension after this one.
        let left = if up { up_by - 1 } else { k - up_by - 1 };
        let vc = match (policy.vcs, cfg.vcs()) {
            (VcPolicy::SingleVc, _) | (_, 1) => 0,
            (VcPolicy::Dateline, 2) => class,
            (VcPolicy::Dateline, _) => 2 * class + u32::from(left > 0),
        };
        return (port, vc);
    }
    (LOCAL_PORT, 0)
}

/// The neighbour of `at` through torus port `port`
/// ([`TorusConfig::neighbour`]).
pub fn neighbour(cfg: &TorusConfig, at: [u32; 3], port: usize) -> [u32; 3] {
    cfg.neighbour(at, port)
}

/// One hop of a route: leaving the router at `at` through `port` on `vc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Hop {
    pub at: [u32; 3],
    pub port: usize,
    pub vc: u32,
}

/// The hops from `src` to `dest`, the last one leaving by the local port.
pub fn path(cfg: &TorusConfig, src: [u32; 3], dest: [u32; 3]) -> Vec<Hop> {
    path_with(cfg, src, dest, RoutePolicy::ROUTER)
}

/// [`path`] under a routing policy.
pub fn path_with(
    cfg: &TorusConfig,
    src: [u32; 3],
    dest: [u32; 3],
    policy: RoutePolicy,
) -> Vec<Hop> {
    let mut hops = Vec::new();
    let (mut at, mut in_port, mut in_vc) = (src, LOCAL_PORT, 0);
    loop {
        let (port, vc) = route_with(cfg, at, dest, in_port, in_vc, policy);
        hops.push(Hop { at, port, vc });
        if port == LOCAL_PORT {
            return hops;
        }
        assert!(hops.len() <= 16, "a route longer than the torus allows");
        // The neighbour receives on the opposite port of the same dimension.
        at = neighbour(cfg, at, port);
        in_port = port ^ 1;
        in_vc = vc;
    }
}

/// Whether the channel dependency graph of every route between every pair
/// of chips has no cycle (a channel: a router's output port and a VC).
pub fn cdg_is_acyclic(cfg: &TorusConfig, policy: RoutePolicy) -> bool {
    let n = cfg.chips();
    let vcs = cfg.vcs() as usize;
    let id = |h: &Hop| (cfg.chip(h.at) * 7 + h.port) * vcs + h.vc as usize;
    let mut edges: HashMap<usize, Vec<usize>> = HashMap::new();
    for s in 0..n {
        for d in 0..n {
            let p = path_with(cfg, cfg.coords(s), cfg.coords(d), policy);
            for w in p.windows(2) {
                edges.entry(id(&w[0])).or_default().push(id(&w[1]));
            }
        }
    }
    // Kahn's algorithm: acyclic iff every node can be removed.
    let nodes = n * 7 * vcs;
    let mut indeg = vec![0usize; nodes];
    for v in edges.values_mut() {
        v.sort_unstable();
        v.dedup();
        for &t in v.iter() {
            indeg[t] += 1;
        }
    }
    let mut ready: Vec<usize> = (0..nodes).filter(|&k| indeg[k] == 0).collect();
    let mut removed = 0;
    while let Some(k) = ready.pop() {
        removed += 1;
        if let Some(out) = edges.get(&k) {
            for &t in out {
                indeg[t] -= 1;
                if indeg[t] == 0 {
                    ready.push(t);
                }
            }
        }
    }
    removed == nodes
}

/// What the torus delivers: every packet sent reaches its destination's
/// local port exactly once, unchanged, and packets from one source to one
/// destination arrive in the order sent (they follow one path and one VC
/// sequence through FIFOs). `sent[c]` are chip c's packets in order; the
/// result holds, for every destination chip, each source's packets to it,
/// in order: `result[dest][src]`.
pub fn delivered(cfg: &TorusConfig, sent: &[Vec<Packet>]) -> Vec<Vec<Vec<Packet>>> {
    let n = cfg.chips();
    let mut out = vec![vec![Vec::new(); n]; n];
    for (src, packets) in sent.iter().enumerate() {
        for p in packets {
            out[cfg.chip(p.dest)][src].push(*p);
        }
    }
    out
}

/// The int32 all-reduce (wrapping sums; their order does not matter).
pub fn allreduce_i32(cfg: &TorusConfig, v: &[Vec<i32>]) -> Vec<i32> {
    assert_eq!(v.len(), cfg.chips(), "one vector per chip");
    let n = v[0].len();
    assert!(v.iter().all(|c| c.len() == n), "vectors of one length");
    (0..n)
        .map(|e| v.iter().fold(0i32, |s, c| s.wrapping_add(c[e])))
        .collect()
}

/// What every chip ends with, as 32-bit words: the fp32 all-reduce in
/// order v2 when `fp` ([`allreduce_f32_v2`]), else the int32 wrapping sums
/// of the words read as int32 ([`allreduce_i32`]); the form the drivers and
/// the run CLI hold vectors in.
pub fn allreduce_words(cfg: &TorusConfig, v: &[Vec<u32>], fp: bool) -> Vec<u32> {
    if fp {
        return allreduce_f32_v2(cfg, v);
    }
    let ints: Vec<Vec<i32>> = v
        .iter()
        .map(|c| c.iter().map(|&x| x as i32).collect())
        .collect();
    allreduce_i32(cfg, &ints)
        .into_iter()
        .map(|x| x as u32)
        .collect()
}

/// The stage dimensions of order v2 for element `e`: part p = e mod 3
/// reduces along x, y, z (p = 0), y, z, x (p = 1) or z, x, y (p = 2)
/// (`docs/numerics.md#all-reduce-order-v2`).
pub fn v2_stage_dims(e: usize) -> [usize; 3] {
    match e % 3 {
        0 => [0, 1, 2],
        1 => [1, 2, 0],
        _ => [2, 0, 1],
    }
}

/// The owner chip's coordinates of element `e` in order v2: q = e div 3 in
/// mixed radix (X, Y, Z).
pub fn v2_owner(cfg: &TorusConfig, e: usize) -> [u32; 3] {
    let [xs, ys, zs] = cfg.dims().map(|d| d as usize);
    let q = e / 3;
    [q % xs, (q / xs) % ys, (q / (xs * ys)) % zs].map(|c| c as u32)
}

/// The coordinates a chain along a ring of `size` visits, in order: from
/// just past the owner's coordinate `owner`, round the ring, to the owner.
pub fn v2_chain(owner: u32, size: u32) -> impl Iterator<Item = u32> {
    (1..=size).map(move |i| (owner + i) % size)
}

/// Element `e`'s fp32 all-reduce in order v2, from `values[c]`, chip c's
/// element e (one per logical chip number).
pub fn allreduce_v2_element_f32(cfg: &TorusConfig, e: usize, values: &[u32]) -> u32 {
    assert_eq!(values.len(), cfg.chips(), "one value per chip");
    let dims = cfg.dims();
    let [d1, d2, d3] = v2_stage_dims(e);
    let owner = v2_owner(cfg, e);
    let fold = |terms: &mut dyn Iterator<Item = u32>| {
        let first = terms.next().expect("a chain has a first term");
        terms.fold(first, add32)
    };
    let value_at = |c1: u32, c2: u32, c3: u32| {
        let mut at = [0u32; 3];
        at[d1] = c1;
        at[d2] = c2;
        at[d3] = c3;
        values[cfg.chip(at)]
    };
    let stage1 =
        |c2: u32, c3: u32| fold(&mut v2_chain(owner[d1], dims[d1]).map(|c1| value_at(c1, c2, c3)));
    let stage2 = |c3: u32| fold(&mut v2_chain(owner[d2], dims[d2]).map(|c2| stage1(c2, c3)));
    fold(&mut v2_chain(owner[d3], dims[d3]).map(stage2))
}

/// The fp32 all-reduce of `v` (one vector per logical chip number, all of
/// one length) in order v2: what every chip ends with.
pub fn allreduce_f32_v2(cfg: &TorusConfig, v: &[Vec<u32>]) -> Vec<u32> {
    assert_eq!(v.len(), cfg.chips(), "one vector per chip");
    let n = v[0].len();
    assert!(v.iter().all(|c| c.len() == n), "vectors of one length");
    (0..n)
        .map(|e| {
            let values: Vec<u32> = v.iter().map(|c| c[e]).collect();
            allreduce_v2_element_f32(cfg, e, &values)
        })
        .collect()
}

/// Elements each directed link carries in order v2's schedule
/// ([`v2_schedule`]) for `n` elements per chip: every chain reduced upward (its chips but the owner
/// each send their partial over the + 1 link of the stage's dimension),
/// then the result sent back from the owner downward, stages in reverse
/// (every chip of a chain but its start forwards it over the - 1 link).
/// Indexed by logical chip and torus port (0..6: x+, x-, y+, y-, z+, z-);
/// rings of one carry nothing.
pub fn v2_link_loads(cfg: &TorusConfig, n: usize) -> Vec<[u64; 6]> {
    let mut load = vec![[0u64; 6]; cfg.chips()];
    // The schedule depends on an element's part and owner only: one
    // element of each pair, weighted by how many of the n it stands for.
    let mut weight: HashMap<(usize, [u32; 3]), (usize, u64)> = HashMap::new();
    for e in 0..n {
        weight.entry((e % 3, v2_owner(cfg, e))).or_insert((e, 0)).1 += 1;
    }
    for &(e, w) in weight.values() {
        for m in v2_schedule(cfg, e) {
            load[m.from][m.port] += w;
        }
    }
    load
}

/// One message of order v2's schedule for one element: a partial sum of
/// stage `stage` (0, 1, 2 for D1, D2, D3) or, with `stage` 3, the result,
/// from a chip to its neighbour over torus port `port` of the sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V2Message {
    pub from: usize,
    pub to: usize,
    pub port: usize,
    pub stage: u8,
}

/// The result's stage number in a [`V2Message`].
pub const V2_RESULT: u8 = 3;

/// Order v2's schedule for element `e`, in an order in which every sender
/// already has what it sends: stage by stage, each chain from the chip just
/// past the owner up (over + 1 links) to the owner's coordinate, every chip
/// adding its own term to the partial it received (left operand the
/// partial); then the result from the owner down (over - 1 links), along D3,
/// then from every chip of that line along D2, then from every chip of that
/// plane along D1, each chain stopping at the chip just past the owner's
/// coordinate. Rings of one carry nothing.
pub fn v2_schedule(cfg: &TorusConfig, e: usize) -> Vec<V2Message> {
    let dims = cfg.dims();
    let order = v2_stage_dims(e);
    let owner = v2_owner(cfg, e);
    let mut out = Vec::new();
    // The chips holding a stage's terms: the dimensions of the stages
    // before it at the owner's coordinates.
    let on_stage = |at: [u32; 3], stage: usize| order[..stage].iter().all(|&d| at[d] == owner[d]);
    for (stage, &d) in order.iter().enumerate() {
        let k = dims[d];
        for c in 0..cfg.chips() {
            let at = cfg.coords(c);
            // Each line's chain, once: from the chip at the owner's
            // coordinate + 1 along d, through k - 1 hops.
            if !on_stage(at, stage) || at[d] != (owner[d] + 1) % k {
                continue;
            }
            let mut here = at;
            for _ in 1..k {
                let next = neighbour(cfg, here, 2 * d);
                out.push(V2Message {
                    from: cfg.chip(here),
                    to: cfg.chip(next),
                    port: 2 * d,
                    stage: stage as u8,
                });
                here = next;
            }
        }
    }
    for (stage, &d) in order.iter().enumerate().rev() {
        let k = dims[d];
        for c in 0..cfg.chips() {
            let at = cfg.coords(c);
            // Each line's broadcast, once: from the chip at the owner's
            // coordinate along d, which has the result by then.
            if !on_stage(at, stage) || at[d] != owner[d] {
                continue;
            }
            let mut here = at;
            for _ in 1..k {
                let next = neighbour(cfg, here, 2 * d + 1);
                out.push(V2Message {
                    from: cfg.chip(here),
                    to: cfg.chip(next),
                    port: 2 * d + 1,
                    stage: V2_RESULT,
                });
                here = next;
            }
        }
    }
    out
}

/// Runs [`v2_schedule`] on values: element `e`'s result on every chip, from
/// `values[c]`, chip c's element e. Each chip adds its term to a partial it
/// received (or starts a chain with its term) and sends the sum on; the
/// owner's stage-3 sum is the result; a chip takes the result from the one
/// result message it receives. Panics if a chip would send what it does not
/// have, or gets the result twice or never.
pub fn allreduce_v2_by_schedule_f32(cfg: &TorusConfig, e: usize, values: &[u32]) -> Vec<u32> {
    let n = cfg.chips();
    let owner = v2_owner(cfg, e);
    // Per chip: the partial received for each stage, its stage sums, the
    // result.
    let mut received: Vec<[Option<u32>; 3]> = vec![[None; 3]; n];
    let mut result: Vec<Option<u32>> = vec![None; n];
    // The chip's sum of `stage`: its term (its element, or its previous
    // stage's sum) after the partial it received, if any.
    fn stage_sum(c: usize, stage: usize, values: &[u32], received: &[[Option<u32>; 3]]) -> u32 {
        let term = if stage == 0 {
            values[c]
        } else {
            stage_sum(c, stage - 1, values, received)
        };
        match received[c][stage] {
            Some(p) => add32(p, term),
            None => term,
        }
    }
    for m in v2_schedule(cfg, e) {
        let payload = if m.stage == V2_RESULT {
            if m.from == cfg.chip(owner) && result[m.from].is_none() {
                result[m.from] = Some(stage_sum(m.from, 2, values, &received));
            }
            result[m.from].expect("a chip forwards the result it has")
        } else {
            stage_sum(m.from, m.stage as usize, values, &received)
        };
        if m.stage == V2_RESULT {
            assert!(
                result[m.to].is_none(),
                "chip {} gets the result twice",
                m.to
            );
            result[m.to] = Some(payload);
        } else {
            let slot = &mut received[m.to][m.stage as usize];
            assert!(slot.is_none(), "chip {} gets two partials of a stage", m.to);
            *slot = Some(payload);
        }
    }
    let root = cfg.chip(owner);
    if result[root].is_none() {
        // A torus of one chip, or no result message left the owner.
        result[root] = Some(stage_sum(root, 2, values, &received));
    }
    result
        .into_iter()
        .map(|r| r.expect("every chip gets the result"))
        .collect()
}

/// Order v2's link bound for `n` elements per chip: the busiest directed
/// link's load ([`v2_link_loads`]), at one element per link and cycle.
pub fn v2_link_bound(cfg: &TorusConfig, n: usize) -> u64 {
    v2_link_loads(cfg, n)
        .iter()
        .flat_map(|l| l.iter().copied())
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vectors::{hex32, read_vectors};

    fn all_dims() -> impl Iterator<Item = TorusConfig> {
        (1..=4u32).flat_map(|x| {
            (1..=4u32).flat_map(move |y| {
                (1..=4u32).map(move |z| TorusConfig::with_dims([x, y, z]).unwrap())
            })
        })
    }

    #[test]
    fn routes_are_minimal_dimension_ordered_and_reach_their_destination() {
        for cfg in all_dims() {
            let n = cfg.chips();
            for s in 0..n {
                for d in 0..n {
                    let (src, dest) = (cfg.coords(s), cfg.coords(d));
                    let p = path(&cfg, src, dest);
                    let last = p.last().unwrap();
                    assert_eq!((last.at, last.port), (dest, LOCAL_PORT));
                    // Minimal: the ring distance in each dimension.
                    let want: u32 = (0..3)
                        .map(|k| {
                            let r = cfg.dims()[k];
                            let up = (dest[k] + r - src[k]) % r;
                            up.min(r - up)
                        })
                        .sum();
                    assert_eq!(p.len() as u32 - 1, want, "{cfg}: {src:?} -> {dest:?}");
                    // Half way round: up from an even coordinate, down
                    // from an odd one.
                    for k in 0..3 {
                        let r = cfg.dims()[k];
                        let hop = p.iter().find(|h| h.port / 2 == k && h.port != LOCAL_PORT);
                        if r % 2 == 0 && (dest[k] + r - src[k]) % r == r / 2 {
                            let hop = hop.expect("a hop along the dimension");
                            assert_eq!(hop.port % 2, (src[k] % 2) as usize, "{p:?}");
                        }
                    }
                    // Dimension order: ports never go back to a lower dimension.
                    let dims: Vec<usize> = p[..p.len() - 1].iter().map(|h| h.port / 2).collect();
                    assert!(dims.windows(2).all(|w| w[0] <= w[1]), "{p:?}");
                    // Each dimension starts on VC 0 unless its first hop
                    // crosses the dateline; VCs never go back to 0.
                    for w in p.windows(2) {
                        if w[0].port / 2 == w[1].port / 2 && w[1].port != LOCAL_PORT {
                            assert!(w[1].vc >= w[0].vc, "{p:?}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_cdg_has_no_cycle_up_to_4x4x4_and_one_vc_with_ties_up_has_some() {
        let with = |vcs, ties| RoutePolicy { vcs, ties };
        for cfg in all_dims() {
            assert!(cdg_is_acyclic(&cfg, RoutePolicy::ROUTER), "{cfg}");
            // Every VC count the router takes.
            for vcs in [1, 4] {
                let cfg = cfg.with_vcs(vcs).unwrap();
                assert!(cdg_is_acyclic(&cfg, RoutePolicy::ROUTER), "{cfg}");
            }
            // Split ties leave no route two hops up (or down) from where
            // the next hop's route would go two hops on: one VC is enough
            // on rings of up to 4.
            assert!(
                cdg_is_acyclic(&cfg, with(VcPolicy::SingleVc, Ties::Split)),
                "{cfg}"
            );
            assert!(
                cdg_is_acyclic(&cfg, with(VcPolicy::Dateline, Ties::AlwaysUp)),
                "{cfg}"
            );
        }
        // One VC with ties always up: rings of 4 have cyclic dependencies
        // (every chip's routes go two hops up); rings of 2 and 3 do not (one
        // hop each way at most).
        for (dims, acyclic) in [
            ([4, 1, 1], false),
            ([3, 3, 3], true),
            ([2, 2, 2], true),
            ([1, 4, 1], false),
        ] {
            let cfg = TorusConfig::with_dims(dims).unwrap();
            let policy = with(VcPolicy::SingleVc, Ties::AlwaysUp);
            assert_eq!(cdg_is_acyclic(&cfg, policy), acyclic, "{cfg}");
        }
    }

    #[test]
    fn the_fp32_allreduce_v2_matches_the_reference_vectors() {
        let rows = read_vectors("f32_allreduce_v2.tsv", 4);
        assert!(rows.len() >= 2000);
        for r in rows {
            let dims = TorusConfig::parse_dims(&r.fields[0]).unwrap();
            let cfg = TorusConfig::with_dims(dims).unwrap();
            let e: usize = r.fields[1].parse().unwrap();
            let values: Vec<u32> = r.fields[2].split(',').map(hex32).collect();
            let want = hex32(&r.fields[3]);
            assert_eq!(
                allreduce_v2_element_f32(&cfg, e, &values),
                want,
                "f32_allreduce_v2.tsv:{}",
                r.line
            );
        }
    }

    #[test]
    fn order_v2_chains_end_at_the_owner_and_parts_rotate_the_dimensions() {
        // The numerics doc's example: 3x1x1, e = 4: p = 1 (y, z, x), owner
        // (1, 0, 0), so x runs 2, 0, 1.
        let cfg = TorusConfig::with_dims([3, 1, 1]).unwrap();
        assert_eq!(v2_stage_dims(4), [1, 2, 0]);
        assert_eq!(v2_owner(&cfg, 4), [1, 0, 0]);
        assert_eq!(v2_chain(1, 3).collect::<Vec<_>>(), [2, 0, 1]);
        // ((1e8 + 1) - 1e8) = 0 but (1e8 - 1e8) + 1 = 1: the chain's start
        // decides which.
        let (big, one, neg) = (0x4cbe_bc20, 0x3f80_0000, 0xccbe_bc20);
        // Chips 0, 1, 2 hold 1e8, -1e8, 1. Owner 1 (e = 3..5): 2, 0, 1 gives
        // (1 + 1e8) - 1e8 = 0; owner 2 (e = 6..8): 0, 1, 2 gives 1.
        let v = [vec![big; 9], vec![neg; 9], vec![one; 9]];
        let got = allreduce_f32_v2(&cfg, &v);
        assert_eq!(&got[3..6], [0, 0, 0]);
        assert_eq!(&got[6..9], [one, one, one]);
        // Owner 0 (e = 0..2): 1, 2, 0 gives (-1e8 + 1) + 1e8 = 0.
        assert_eq!(&got[0..3], [0, 0, 0]);
        // An element of part 0 owned by the last chip follows the old order.
        let cfg = TorusConfig::with_dims([2, 3, 2]).unwrap();
        let e = 3 * 11; // q = 11 = (1, 2, 1), p = 0
        assert_eq!(v2_owner(&cfg, e), [1, 2, 1]);
        // Fixed, mixed values of many exponents (finite: the mask keeps the
        // exponent below 0xff).
        let v: Vec<Vec<u32>> = (0..12u32)
            .map(|c| {
                (0..=e as u32)
                    .map(|i| {
                        (c.wrapping_mul(0x9e37_79b9) ^ i.wrapping_mul(0x85eb_ca6b)) & 0xc7ff_ffff
                    })
                    .collect()
            })
            .collect();
        // The first order: x rows, then y, then z, each from coordinate 0.
        let fold = |terms: Vec<u32>| terms[1..].iter().fold(terms[0], |s, &t| add32(s, t));
        let row = |y: u32, z: u32| fold((0..2).map(|x| v[cfg.chip([x, y, z])][e]).collect());
        let plane = |z: u32| fold((0..3).map(|y| row(y, z)).collect());
        let first_order = fold((0..2).map(plane).collect());
        assert_eq!(allreduce_f32_v2(&cfg, &v)[e], first_order);
    }

    #[test]
    fn order_v2_link_bound_is_n_p_minus_1_over_3p_on_cubes() {
        for k in 1..=4u32 {
            let cfg = TorusConfig::with_dims([k, k, k]).unwrap();
            let p = u64::from(k * k * k);
            for n in [3 * p as usize, 1024, 65_536] {
                let want = (n as u64 * (p - 1)).div_ceil(3 * p);
                let got = v2_link_bound(&cfg, n);
                // Whole rounds of the owners give the formula exactly; a
                // partial round loads the links unevenly.
                let rest = (n % (3 * p as usize)) as u64;
                assert!(
                    got >= want && got <= want + rest,
                    "{cfg}, n = {n}: {got} vs {want}"
                );
                if n % (3 * p as usize) == 0 {
                    assert_eq!(got, want, "{cfg}, n = {n}");
                }
            }
        }
        // The numerics doc's 4x4x1: 0.5625 n on the x and y links.
        let cfg = TorusConfig::with_dims([4, 4, 1]).unwrap();
        assert_eq!(v2_link_bound(&cfg, 48 * 16), 432);
        // Every link's load counts each element's messages once: a chain of
        // k chips sends k - 1 partials up and k - 1 results down.
        let cfg = TorusConfig::with_dims([4, 2, 3]).unwrap();
        let n = 240;
        let total: u64 = v2_link_loads(&cfg, n).iter().flatten().sum();
        let p = 24u64;
        // Per element: (P - 1) partial messages up and (P - 1) down.
        assert_eq!(total, 2 * (p - 1) * n as u64);
    }

    #[test]
    fn order_v2_schedule_gives_every_chip_the_contract_sum_over_one_hop_messages() {
        for cfg in all_dims() {
            let p = cfg.chips();
            let n = 3 * p + 2;
            let mut loads = vec![[0u64; 6]; p];
            for e in 0..n {
                // Values whose sum depends on the order: big, small and
                // cancelling terms.
                let values: Vec<u32> = (0..p as u32)
                    .map(|c| {
                        let h =
                            (c ^ (e as u32).wrapping_mul(0x9e37_79b9)).wrapping_mul(0x85eb_ca6b);
                        (h & 0x8000_0000) | (0x3000_0000 + (h >> 4) % 0x2000_0000)
                    })
                    .collect();
                let want = allreduce_v2_element_f32(&cfg, e, &values);
                let got = allreduce_v2_by_schedule_f32(&cfg, e, &values);
                assert!(got.iter().all(|&r| r == want), "{cfg}, e = {e}");
                for m in v2_schedule(&cfg, e) {
                    assert_eq!(
                        neighbour(&cfg, cfg.coords(m.from), m.port),
                        cfg.coords(m.to)
                    );
                    loads[m.from][m.port] += 1;
                }
            }
            // The link loads the bound is computed from are the schedule's.
            assert_eq!(loads, v2_link_loads(&cfg, n), "{cfg}");
        }
    }

    #[test]
    fn int32_sums_wrap() {
        let cfg = TorusConfig::with_dims([2, 1, 1]).unwrap();
        assert_eq!(
            allreduce_i32(&cfg, &[vec![i32::MAX, 5], vec![1, -7]]),
            [i32::MIN, -2]
        );
    }
}

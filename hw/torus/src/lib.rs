//! The ICI torus: chip nodes on an X x Y x Z torus (each size 1..=4), each a
//! router with six torus ports and a local port, joined to its neighbours by
//! ICI link ends (`hw/ici`) over serdes stubs (`hw/ici-serdes-stub`).
//!
//! # Packets and flits
//!
//! A packet is one flit: a destination in logical torus coordinates, a
//! 2-bit tag and a 32-bit payload ([`packet_ty`], the local port's record).
//! On a link it travels in the link's 8-byte flit ([`flit_fields`], from bit
//! 0 up): `data` (1: carries a packet; 0: carries credits only), `vc` (1
//! bit; 2 with four VCs), the packet (dx, dy, dz, tag, payload), and
//! `credit0` up to `credit<V-1>`: input-buffer slots of each VC that the
//! flit's sender freed since its last flit on that port. The rest of the 64 bits is zero. The link sends every flit as a
//! packet of its own (`last` high, all bytes valid).
//!
//! # Routing and virtual channels
//!
//! Dimension-order routing with wraparound: X first, then Y, then Z, each
//! the shorter way round (up when the distance up is less than half the
//! ring, down when it is more; exactly half: up from an even coordinate,
//! down from an odd one), then out of the local port. V virtual channels
//! per port (`vcs`: 1, 2 or 4). With two, a dateline per ring (the
//! wraparound link): a packet enters each dimension on VC 0 and moves to
//! VC 1 when it crosses that dimension's dateline. With four, those two
//! classes each split by whether the packet goes on in the same dimension
//! after its next hop (VC 2 x class + 1 if it does). With one, the split
//! of half-ring distances alone keeps rings of up to 4 free of deadlock.
//! `golden::torus` states the same rules, the argument that they cannot
//! deadlock, and checks the channel dependency graph of every torus up to
//! 4x4x4 for each count.
//!
//! # The router
//!
//! | port | width | meaning |
//! | --- | --- | --- |
//! | `at_x_i`, `at_y_i`, `at_z_i` | 2 each | the router's logical coordinates |
//! | `<p>_tx_valid_o`, `<p>_tx_ready_i`, `<p>_tx_data_o` | 1, 1, 64 | flits to the link end of torus port p (`xp`, `xm`, `yp`, `ym`, `zp`, `zm`) |
//! | `<p>_rx_valid_i`, `<p>_rx_data_i` | 1, 64 | flits from it, always taken |
//! | `inj_*` | stream | packets from the chip (a 4-word FIFO) |
//! | `ej_*` | stream | packets for the chip (a 4-word FIFO) |
//! | `alarm_o` | 1 | sticky: a buffer pushed while full or a credit counter error (never in a correct design) |
//!
//! Each torus port has one input buffer per VC (`vc_depth` packets, a
//! first-word fall-through FIFO) and, per VC, a credit counter of the
//! neighbour's buffer on that port (reset to `vc_depth`). The head of each
//! of the 6V + 1 buffers (6V VC buffers and the injection FIFO) computes its
//! output port and VC; every output has a round-robin arbiter over the
//! heads that want it and can go (a torus output: the link end is ready and
//! the output VC has a credit; the local output: the ejection FIFO has
//! room). A granted head leaves its buffer in the cycle of the grant and is
//! on the output in the same cycle: a packet passes a router in one cycle
//! plus the buffer's fall-through (2 cycles from push to head): uncontended,
//! a packet pushed into an input buffer (or taken from `inj`) at t is on its
//! torus output at t + 2, and on `ej` at t + 4 (the ejection buffer's own
//! fall-through). `tb/tests/torus.rs` holds every route to these numbers. Every
//! buffer can go to a different output in the same cycle, so the allocator
//! is one arbiter per output and never wastes a grant.
//!
//! The rules that decide cycles under contention, all reading the state at
//! the start of cycle t:
//!
//! - **Buffers.** Every buffer (VC input, injection, ejection) is
//!   first-word fall-through: a word pushed at p is the head from
//!   max(p + 2, q + 1), q the cycle the word before it left. A buffer
//!   takes a push (`inj_ready`, the ejection's room) when it held fewer
//!   words than its depth at the start of t: a pop frees its slot from
//!   t + 1.
//! - **Arbiters.** The heads are numbered Vp + v for torus port p (`xp`,
//!   `xm`, `yp`, `ym`, `zp`, `zm`) and VC v, and 6V for the injection
//!   buffer. Each output grants the first head asking for it at or after
//!   its priority, wrapping; after a grant to head h its priority is
//!   h + 1 (mod 6V + 1), without a grant it stays; after reset it is 0.
//! - **Credits.** A send on an output VC spends its credit at t; the
//!   credits of a flit delivered at t count from t + 1. An input buffer
//!   popped at t owes its slot to the neighbour from t + 1: the next flit
//!   sent on that port (a packet, or credits alone when the port has no
//!   grant and its link end is ready) carries every slot owed at the start
//!   of its cycle.
//!
//! With the ICI link's timing contract (a flit taken by a link end at a is
//! at the peer's router at a + 4 + L on an error-free link), these rules
//! make `golden::torus_cycle`, the torus's cycle model, which the RTL
//! matches to the cycle on error-free links (`tb/tests/torus.rs`).
//!
//! Credits go back on the same port in the other direction: every flit a
//! router sends on port p carries the slots of p's input buffers freed since
//! the last one; when it has nothing else to send and owes credits, it sends
//! a flit of credits alone. The link end never holds a flit back from the
//! router (its receive side is always ready), so the link layer's own
//! credits never block one VC behind the other.
//!
//! # Node and top
//!
//! [`node::node`]: the router and six link ends; the node's lanes are the
//! link ends' serdes words. [`node::top`]: one node per physical chip,
//! placed at logical coordinates by a [`config::Wiring`]; every torus port
//! feeds a serdes stub that delivers to the neighbour's opposite port (the
//! stubs share the error rates; stub k's seed is `seed_i` XOR k times
//! [`node::STUB_SEED_STEP`]). A ring of size 1 joins a chip's up port to its
//! own down port; a ring of size 2 joins the two chips twice.
//!
//! Every chip of the top also has an all-reduce engine beside its router
//! (`engine_i` gives the local port to the engines, else to the host's
//! packet streams), so one Verilated model serves both.
//!
//! # All-reduce
//!
//! [`allreduce::engine`] streams: chip c takes its vector element by element
//! (`v` stream) and gives every result element once (`res_valid_o`), in
//! order. Element i flows along chains whose order is the contract's
//! (`docs/numerics.md#all-reduce`):
//!
//! 1. **X** (every row): chip (0, y, z) sends v[i] to (1, y, z) (tag 0);
//!    chip x > 0 adds its v[i] to the partial it received, left operand the
//!    partial (`add32`, or a wrapping add for int32), and sends it on; chip
//!    (X-1, y, z) holds S_x(y, z).
//! 2. **Y** (plane x = X - 1): (X-1, 0, z) sends S_x(0, z) up in Y (tag 1);
//!    each next chip adds its S_x; (X-1, Y-1, z) holds S_y(z).
//! 3. **Z** (line x = X-1, y = Y-1): the same with S_y (tag 2); the root
//!    (X-1, Y-1, Z-1) holds S.
//! 4. **Broadcast** (tag 3): the root's result goes up in Z round the line
//!    (wrapping to z = 0), every chip of that line sends it up in Y round its
//!    column, and every chip of the plane x = X-1 up in X round its row, each
//!    chain stopping before the chip it started from: every chip receives
//!    it exactly once and hands it to its host.
//!
//! One cycle does a chip's whole reduction step for an element (up to three
//! adds, when the partials it needs are at the heads of its tag queues and
//! its injection is free); its broadcast forwards go one per cycle, and take
//! the injection port before the reduction. Every hop is a neighbour, so
//! dimension-order routing sends each packet over one link.
//!
//! In cycle terms (`golden::torus_cycle::allreduce_cycles` states them as a
//! model): the engine takes every packet its router ejects into the queue
//! of its tag (first-word fall-through, W deep) in the cycle it is ejected.
//! A reduction is ready when the next element is offered, fewer than W
//! elements are in flight, and the partials the chip needs are at their
//! queues' heads; it goes (taking the element, popping the partials) when
//! the injection buffer takes its packet in a cycle with no broadcast
//! forward offered, or at the root at once, the result entering the root's
//! own result queue. While a result is at its queue's head, its forwards
//! not yet sent are offered one per cycle, Z, then Y, then X; the result
//! comes out (`res_valid_o`) and leaves the window in the cycle its last
//! forward is taken, or at once when it has none.
//!
//! **Why it cannot deadlock.** A chip starts element i only once it has the
//! result of element i - W (W = [`allreduce::WINDOW`]). A packet for chip c
//! of element i exists only if c's part of element i - W is done, so each of
//! c's four receive queues (W deep) holds at most W packets: the engine
//! always takes what its router ejects, the network always drains (its
//! channels are deadlock-free), and every injection eventually goes.
//!
//! **Rate and the link bound.** Per element, a chip of the line x = X-1,
//! y = Y-1 injects four packets (its Z partial and three forwards) and
//! ejects four (three partials and the result), through one local port of
//! one packet per cycle each way; so n elements take about 4n cycles plus
//! the chains' latency (W = 64: at four cycles per element a window covers
//! 256 cycles, about the round trip of the chains on 4x4x4; measured on
//! 4x2x2, 3.16 cycles per element where the schedule's rate is 3; on
//! 2x2x4, 4.73 where it is 4: there the chains' round trip outgrows the
//! window, so a larger window would buy the rest).
//!
//! The bound that link bandwidth sets, for comparison: every chip must
//! receive (P - 1) / P of the data it did not hold, over six links of one
//! 32-bit element per cycle each, and send as much: 2n (P - 1) / (6P)
//! cycles for a reduce-scatter and all-gather (336 for n = 1024 on 4x4x4).
//! The fixed summation order keeps each chain in one direction of one
//! ring, and the one local port limits a chip to one packet per cycle each
//! way; the chain schedule pays for both. The bench measures both numbers.

pub mod allreduce;
pub mod allreduce_v2;
pub mod block;
pub mod node;
pub mod router;

pub use block::{Torus, TorusNode};

use config::TorusConfig;
use hw::{RecordTy, Ty};

/// Bits of one logical coordinate (sizes up to 4).
pub const COORD_BITS: u32 = 2;
/// Bits of a packet's tag.
pub const TAG_BITS: u32 = 2;
/// Bits of a packet's payload.
pub const PAYLOAD_BITS: u32 = 32;

/// A packet at the local port: destination, tag, payload.
pub fn packet_ty() -> RecordTy {
    RecordTy::new(
        "packet",
        &[
            ("dx", Ty::u(COORD_BITS)),
            ("dy", Ty::u(COORD_BITS)),
            ("dz", Ty::u(COORD_BITS)),
            ("tag", Ty::u(TAG_BITS)),
            ("payload", Ty::u(PAYLOAD_BITS)),
        ],
    )
}

/// The fields of a link flit's 64 bits (from bit 0; the rest is zero).
pub fn flit_fields(cfg: &TorusConfig) -> RecordTy {
    let cb = Ty::u(cfg.credit_bits());
    let names: Vec<String> = (0..cfg.vcs()).map(|v| format!("credit{v}")).collect();
    let mut fields = vec![
        ("data", Ty::BOOL),
        ("vc", Ty::u(cfg.vc_bits())),
        ("packet", packet_ty().ty()),
    ];
    fields.extend(names.iter().map(|n| (n.as_str(), cb)));
    RecordTy::new("torus_flit", &fields)
}

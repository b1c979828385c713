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
//! stubs share the error rates; stub k, of logical chip c's port p, is
//! k = 6c + p and its seed is `seed_i` XOR k times
//! [`node::STUB_SEED_STEP`]). A ring of size 1 joins a chip's up port to its
//! own down port; a ring of size 2 joins the two chips twice.
//!
//! Every chip of the top also has an all-reduce engine on its node's links
//! beside the router, so one Verilated model serves both. A chip's node,
//! engine and the stubs of the links leaving it are one module
//! ([`node::chip`], named by [`node::chip_unit_name`]) whose code Verilator models keep once for
//! all chips.
//!
//! # All-reduce
//!
//! [`allreduce_v2`]: each chip's engine runs all-reduce order v2
//! (`docs/numerics.md#all-reduce-order-v2`) on all six links at once. Its
//! rules (streams per owner coordinate, a reduction and a result processor
//! per part and stage, per-stream credits, three lanes in and out) and why
//! it cannot deadlock are `golden::torus_v2`'s, which is also its cycle
//! model; `tb/tests/torus_v2.rs` holds the engine to it on links of fixed
//! latency and `tb/tests/torus.rs` on the torus's ICI links.
//!
//! **Sharing the links.** On each port the node gives the link end, in
//! this order: the engine's flit with an element, the router's flit, the
//! engine's flit of credits alone. An engine flit has bit 63 set (router
//! flits use at most 63 bits), and the receiving node hands it to its
//! engine; the engine's credits ride in its own flits, apart from the
//! router's VCs. So host packets take the cycles the engine's streams
//! leave on a link, and never block the engine: its flits need no router
//! buffer.
//!
//! **Rate and the link bound.** A lane takes one element per cycle, so n
//! elements per chip take at least n / 3 cycles; the busiest link carries
//! `golden::torus::v2_link_bound` elements, n (P - 1) / (3P) on a k x k x k
//! torus, so the lanes keep every link (P - 1) / P busy. The benchmark
//! measures both.

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

//! The ICI link layer: reliable, in-order, exactly-once delivery of flits
//! between two chips over lanes that flip bits and lose words.
//!
//! One link end ([`link::link`], `ici_link_*`) serves one port in both
//! directions at once: a sender and a receiver. [`pair::pair`] joins two ends
//! by two serdes stubs (`hw/ici-serdes-stub`), the block the tools check and
//! the FPGA report synthesises. A router (a chip node: six torus ports and a
//! local one) instantiates one link end per port and sees only the client
//! interface below.
//!
//! # Client interface (what a router uses)
//!
//! | port | width | meaning |
//! | --- | --- | --- |
//! | `tx_valid_i`, `tx_ready_o` | 1, 1 | a flit to send; taken when both are high |
//! | `tx_data_i`, `tx_last_i`, `tx_len_i` | 8W, 1, log2 W | payload (byte k in bits 8k+7..8k), ends a packet, valid bytes - 1 |
//! | `rx_valid_o`, `rx_ready_i` | 1, 1 | a received flit; taken when both are high |
//! | `rx_data_o`, `rx_last_o`, `rx_len_o` | 8W, 1, log2 W | as sent |
//! | `link_up_o` | 1 | low while the link is down and retraining (flits wait, none is lost) |
//! | `*_o` counters | 32 each | flits sent and received, CRC errors, retransmits, NAKs sent and received, timeouts, link-downs |
//!
//! Flits come out of `rx` exactly once each, in the order they went into the
//! peer's `tx`, with `last` and `len` as given: packets (a run of flits
//! ending with `last`) arrive whole and in order. `tx_ready_o` depends on
//! registers only (not on `tx_valid_i`), and `rx_valid_o` likewise, so
//! routers can connect streams directly. A stalled `rx_ready_i` never loses
//! anything: it stops the credits, and the peer stops sending.
//!
//! # Frame format (one serdes word)
//!
//! Fields from the least significant bit up (S = log2 D + 1 sequence bits,
//! C credit bits, see [`config::IciConfig`]):
//!
//! | field | bits | meaning |
//! | --- | --- | --- |
//! | `kind` | 2 | Idle 0, Data 1, Nak 2, Train 3 ([`frame::FrameKind`]) |
//! | `seq` | S | Data: the flit's sequence number; Train: flags (below); 0 otherwise |
//! | `ack` | S | the next sequence number the sender of this frame expects: a cumulative ACK of everything before it |
//! | `credit` | C | receive-buffer slots its sender has freed so far, mod 2^C |
//! | `last`, `len` | 1, log2 W | the flit's |
//! | `data` | 8W | the flit's payload (0 unless Data) |
//! | `crc` | 32 | CRC-32/ISO-HDLC (IEEE 802.3) of all the bits below it (`crc_bits` 16 or 8 select CRC-16/IBM-3740 or CRC-8/SMBUS) |
//!
//! The default (W = 64) is 571 bits: 512 payload, 27 header, 32 CRC, an
//! overhead of 10.3 %. ACKs and credits ride in every frame, so with traffic
//! both ways they cost no frames of their own.
//!
//! **What the CRC covers, and why: the whole frame.** A flipped payload bit
//! corrupts data; a flipped `seq` would deliver a flit in the wrong place; a
//! flipped `ack` would acknowledge flits the peer never got (silent loss) or
//! free replay slots too early; a flipped `credit` would let the sender
//! overrun the receive buffer; a flipped `kind` could turn data into a NAK.
//! A frame is used only if its CRC matches, so none of these can happen for
//! any error the CRC detects; CRC-32's Hamming distance on these frame
//! lengths (at least 5 up to 2974 bits) detects every pattern the stub can
//! make (at most four flipped bits per word), and any burst of 32 bits or
//! less. Cumulative `ack` and `credit` fields make lost and duplicated
//! frames harmless: a later frame carries the same information. The formal
//! configuration ([`config::IciConfig::FORMAL`], 26-bit frames) uses
//! CRC-8/SMBUS (x^8 + x^2 + x + 1): on those frames it detects every
//! pattern of at most three flipped bits (`tb/tests/ici_formal.rs` checks
//! all of them; some four-bit patterns escape), which is the error model its proofs assume.
//!
//! # Protocol
//!
//! **Sender.** An accepted flit gets the next sequence number and a slot in
//! the replay buffer (D flits, a window: at most D unacknowledged) and costs
//! a credit (B in all: the peer's receive buffer). Flits are sent in
//! sequence order. A good frame's `ack` A, if it lies in 1..=count ahead of
//! the oldest unacknowledged flit, frees every flit before A (progress). A
//! NAK, or a timer of `replay_timeout` cycles without progress while flits
//! are unacknowledged, *rewinds*: sending restarts at the oldest
//! unacknowledged flit (go-back-N). Credits come back as the difference
//! between a good frame's `credit` and the last one seen.
//!
//! **Receiver.** A word whose CRC fails is dropped and counted. A good Data
//! frame whose `seq` is the expected one goes into the receive buffer (B
//! flits, popped by the client); one ahead of it (within the window) means
//! a flit was lost; one behind it is a copy and is dropped. A lost or
//! corrupted flit triggers one NAK, re-armed when the expected flit arrives
//! (a lost NAK is covered by the sender's timer).
//!
//! **Link state** (the sender's, [`link::LinkState`]):
//!
//! | state | does | goes to |
//! | --- | --- | --- |
//! | Up | accepts, sends and replays flits; sends NAKs; answers each good Train frame with a Train frame | Down, on a rewind after `max_retries` rewinds without progress |
//! | Down | sends Train frames; counts a link-down; clears the Train run | Train, next cycle |
//! | Train | sends Train frames; keeps taking ACKs and credits | Up, after `train_words` consecutive good Train frames whose sender hears it; rewinds to the oldest unacknowledged flit |
//!
//! A Train frame's `seq` field carries two flags: bit 1, its sender is
//! retraining (Down or Train); bit 0, its sender received a good Train frame
//! just before (it hears its peer). A side that is Up answers each good
//! Train frame from a retraining peer with a Train frame (bit 0 set); two
//! retraining sides answer each other by their own Train frames. A run of
//! good Train frames with bit 0 set shows that words get through in both
//! directions: a side that only heard its peer could otherwise come back up
//! into a lane that still loses everything it sends. The receiver
//! keeps working in every state, and no sequence state is
//! reset by retraining, so a link that goes down and comes back still
//! delivers every flit exactly once, in order. `link_up_o` reports the state;
//! `link_downs_o` counts the falls.
//!
//! # Timing contract
//!
//! Cycles of `clk_i`; "at t" means in cycle t, registers as at its start.
//! L is the stub latency.
//!
//! Sender, at t:
//! 1. `tx_ready_o` = Up, fewer than D flits unacknowledged, a credit left.
//!    An accepted flit counts from t + 1.
//! 2. A good frame arriving at t updates the acknowledged flits and the
//!    credits (credits usable from t + 1); then a NAK arriving at t, or the
//!    timer reaching `replay_timeout` - 1, rewinds.
//! 3. If Up, the stub is ready, no NAK is pending and some accepted flit
//!    (accepted before t) is not yet sent, the first such flit is *issued*.
//! 4. The frame register loads (when the stub is ready): Train if not Up or
//!    a Train frame from a retraining peer arrived at t - 1 (an answer), else Nak if one is pending,
//!    else the issued flit as Data, else Idle. (Step 3 issues nothing when
//!    an echo or a NAK is due.)
//! 5. The word offered to the stub at t is the frame register, with `ack`
//!    and `credit` as the receiver holds them at t, sealed with its CRC.
//!    The stub takes it at t (when ready) and delivers it at t + L.
//!
//! Receiver, at t: a Data frame accepted at t is in the receive buffer at
//! t (the expected sequence number moves on at t + 1) and can be popped from
//! t + 2 (and one cycle after the flit before it was popped, if later); a
//! pop at t counts in `credit` from t + 1. A NAK requested at t is pending
//! from t + 1 and sent in the next frame register load.
//!
//! So on an error-free link a flit accepted at a is issued at a + 1 (when it
//! is next in line), on the lanes at a + 2, in the peer's buffer at a + 2 + L,
//! acknowledged at a + 3 + 2L, and its credit is back at a + 6 + 2L if popped
//! at once ([`config::IciConfig::round_trip`]). `golden::ici` states this
//! contract as a cycle model, and the RTL meets it to the cycle.
//!
//! **Receive pipeline.** At `depth` d > 0 ([`config::IciConfig::depth`])
//! each receiver acts on an arriving word d cycles after the stub delivers
//! it (stage 1 registers the word and the CRC's partial sums, stage 2 the
//! check's verdict, stage 3 the checked word again) and then acts on it as
//! above. Every stage loads every cycle, so everything in this contract
//! holds with L the stub's latency plus d
//! ([`config::IciConfig::word_latency`]): an acknowledgement, a credit or
//! a NAK takes effect d cycles later, and the replay timer must outlast the
//! longer round trip (checked).
//!
//! At d = 3 ([`link::SPLIT_DEPTH`]) stage 3 also holds the word's `ack`
//! minus the sender's base, its `credit` minus the last count seen, and its
//! `seq` minus the expected sequence number, each taken against the value
//! the register will have when the word is acted on (the one the word
//! before it leaves), so the step of steps 2 to 4 above compares registers:
//! whether the acknowledgement makes progress is one compare, and the
//! window, the issue decision, the flit to send and the credits are chosen
//! among sums of registers by it. The rules and their timing are those
//! above; only the logic that states them differs.

pub mod block;
pub mod frame;
pub mod link;
pub mod pair;

pub use block::Ici;
pub use frame::{flit_ty, frame_ty, FrameKind};
/// The lanes under the link, for tests of the stub on its own.
pub use ici_serdes_stub as serdes_stub;
pub use link::{link, link_name, LinkState};
pub use pair::{pair, pair_name};

//! The inter-chip interconnect (ICI) link layer: framing, CRC, sequence numbers,
//! ACK/NAK replay and credit flow control, over a serdes stub that can inject
//! bit errors.
//!
//! Not built yet. It will follow the pattern of `hw/mxu`: builder functions of a
//! configuration type from the `config` crate produce `hw` module definitions,
//! checked against a golden model in `golden`.

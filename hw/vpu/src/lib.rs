//! The vector processing unit (VPU): a lanes x sublanes SIMD unit on 32-bit
//! elements for activations, requantization, conversions and reductions.
//!
//! Not built yet. It will follow the pattern of `hw/mxu`: builder functions of a
//! configuration type from the `config` crate produce `hw` module definitions,
//! and a golden model in `golden` written from `numerics.md` is the reference.

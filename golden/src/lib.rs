//! Bit-exact golden models for Systole.
//!
//! This crate states, in plain Rust, what the accelerator must compute and how
//! many cycles it may take. The RTL that `hw` generates is checked against it:
//! same bit patterns out for every input, same cycle counts.
//!
//! * [`numerics`] implements every operation of the numerics contract
//!   (`docs/numerics.md`: FTZ-RNE fp32/bf16 arithmetic, conversions, int8
//!   requantization) on raw bit patterns, with exact integer arithmetic. No
//!   host floating-point operation produces a result, so the model does not
//!   inherit the host FPU's subnormal or NaN behaviour.
//! * [`mxu`] gives the matrix unit's results ([`mxu::matmul_int8`],
//!   [`mxu::matmul_bf16`]) and its cycle model ([`mxu::MxuTiming`]). The cycle
//!   model is the RTL's timing contract, not an estimate: a simulation of the
//!   generated array must finish in exactly [`mxu::MxuTiming::total_cycles`]
//!   cycles, and a mismatch is a bug on one side or the other.
//! * [`vpu`] executes the vector unit's instruction stream ([`vpu::Vpu`]),
//!   gives its cycle model ([`vpu::schedule`]) and the contract's reductions
//!   over arrays of any length.
//!
//! * [`sparsecore`] gives the SparseCore's forward (lookup and combine) and
//!   update (scatter-add) results on entry lists that [`sparsecore_host`],
//!   the host library shared with the simulator's driver, has padded, merged,
//!   sorted and sharded.
//! * [`tensorcore`] runs TensorCore programs ([`tensorcore::execute`]) and
//!   gives their cycles and where they went ([`tensorcore::cycle_model`]).
//! * [`tensorcore2`] runs TensorCore v2 programs on the VPU, EUP and MXU
//!   models joined ([`tensorcore2::Machine`]).
//! * [`eup`] gives the transcendental unit's results and timing; [`gpt`] the
//!   contract's decoder-only transformer (layer norm, softmax, the token step
//!   with its caches, greedy generation) for an MXU of R rows and a VPU of W
//!   elements.
//!
//! * [`ici`] gives what the ICI link delivers and its cycle model on an
//!   error-free link ([`ici::cycle_model`]); [`serdes_stub`] the lanes under
//!   it, with the seeded drops, duplicates and bit flips they inject.
//! * [`torus`] gives the ICI torus's routes, its channel dependency graph
//!   check and the all-reduce in the contract's order; [`torus_cycle`] its
//!   cycle model on error-free links (host packets and all-reduce);
//!   [`torus_v2`] the order-v2 all-reduce engine's rules and its cycle model
//!   on links of fixed latency.
//!
//! The models are written from the contract alone, independently of the RTL,
//! so that the two implementations can catch each other's mistakes. For the
//! same reason this crate never depends on `hw`; it shares only the
//! configuration types ([`config::MxuConfig`], [`config::VpuConfig`]), so that
//! a model cannot describe a different block than the one it is compared
//! against, and the VPU's instruction encoding (`config::vpu_isa`), so that it
//! reads the same programs. The numerics are in
//! turn checked against reference vectors from an independent exact oracle
//! and against an independent soft-float (see `tests/`).

pub mod eup;
pub mod gpt;
pub mod ici;
pub mod mxu;
pub mod numerics;
pub mod serdes_stub;
pub mod sparsecore;
pub mod sparsecore_host;
pub mod stream_crc;
pub mod tensorcore;
pub mod tensorcore2;
pub mod tensorcore2_cycle;
pub mod torus;
pub mod torus_cycle;
pub mod torus_v2;
pub mod vectors;
pub mod vpu;

pub use mxu::{matmul_bf16, matmul_cycles, matmul_int8, utilization, MxuTiming};
pub use numerics::{
    add32, bf16_mul, f32_to_i32, i32_to_f32, max32, min32, mul32, narrow_bf16, rdbpot,
    requant_int8, srdhm, sub32, widen_bf16, CANONICAL_NAN_BF16, CANONICAL_NAN_F32,
};

//! Block drivers: for each block, a typed host of its interface on a Verilated [`Model`].
//!
//! A driver builds (or loads from the cache) the model of its block for one configuration,
//! drives the block's handshakes cycle by cycle, and reports results and the cycles they
//! took, measured on the RTL, so tests can hold both to the golden model. It never assumes
//! a cycle the interface does not promise. Adding a block adds a module here.
//!
//! [`Model`]: crate::Model

pub mod ici;
pub mod mxu;
pub mod sparsecore;
pub mod tensorcore;
pub mod torus;
pub mod vpu;
pub mod vpu_ops;

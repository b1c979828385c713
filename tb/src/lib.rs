//! `tb`: the testbenches that hold the design to its references.
//!
//! Nothing here is a reference itself. The crate joins the pieces the
//! architecture keeps apart: RTL built by `hw/<block>` generators and run by
//! `sim` (Verilator) or Icarus, against the golden models in `golden`, and the
//! `hw` emitter against the `hw` evaluator. The library holds the shared
//! machinery (seeds, the external tool checks, the Icarus runner, the random
//! design generator, the simulated UART to the board tops); the tests are in `tests/`.

pub mod board;
pub mod fp;
pub mod fuzz;
pub mod gpt;
pub mod icarus;
pub mod mxu;
pub mod seed;
pub mod tensorcore;
pub mod tensorcore2;
pub mod tools;
pub mod vpu;

/// The configuration of `block`'s preset `name` (the ones the RTL checks and
/// the FPGA report use).
pub fn preset<B: hw::Block>(block: &B, name: &str) -> B::Config {
    block
        .presets()
        .into_iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("{} has no preset {name}", block.name()))
        .config
}

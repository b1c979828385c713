//! Generic Verilator harness: Verilog text plus a port list in, a running [`Model`] out.
//!
//! # Clocking convention
//! One cycle of a design clocked by the spec's `clock` (normally `clk_i`) goes:
//! 1. while the clock is low, [`Model::poke`] the cycle's inputs;
//! 2. [`Model::eval`], then [`Model::peek`] reads the cycle's combinational outputs (those
//!    that depend on this cycle's inputs; registered outputs can be read without `eval`);
//! 3. [`Model::step`] applies the rising edge: registers take their next values, and
//!    `peek` now shows them. The clock is then lowered; the falling edge is evaluated
//!    together with the next cycle's inputs (next `eval` or `step`), which makes no
//!    difference for designs clocked on the rising edge only.
//!
//! `step` evaluates pending input changes itself, so `poke`, `step` is also a full cycle when
//! the combinational outputs are not needed. Values wider than 64 bits go through
//! [`Model::poke_wide`] / [`Model::peek_wide`] as little-endian 32-bit words.
//!
//! # Waveforms
//! With tracing on (see [`Trace`]), the VCD time is 10 units (ns) per cycle: the cycle's
//! settled inputs at `10 * n`, the rising edge at `10 * n + 5`. The falling edge of the last
//! cycle is written when the model is dropped.

mod builder;
mod cache;
mod error;
mod model;
mod parse;
mod shim;
mod spec;
mod toolchain;
mod trace;

pub use cache::{cache_dir, target_dir};
pub use error::SimError;
pub use model::{BuildOptions, CacheStatus, Model, PortId};
pub use spec::{ModelSpec, PortDir, PortSpec, MAX_PORT_WIDTH};
pub use trace::Trace;

pub use toolchain::{verilator_path, DEFAULT_VERILATOR, VERILATOR_VAR};

/// The release of the Verilator every model is built with ("5.006", "5.048"),
/// probed once per process (see [`verilator_path`] for which one that is).
pub fn verilator_release() -> Result<&'static str, SimError> {
    Ok(&toolchain::Toolchain::get()?.release)
}

/// The Verilator releases whose data-flow-graph optimizer is known to
/// miscompile (5.006 folded `x >= 0` to 0 for `x == 0` in a fuzz design);
/// their models are built with `-fno-dfg`. The fuzz runs in CI on the default
/// release with the optimizer on.
pub const RELEASES_WITHOUT_DFG: &[&str] = &["5.006"];

/// Verilator optimizations turned off per release, each with the fault that
/// put it here (found by `tb/tests/hw_fuzz.rs`, whose pinned seeds replay
/// them). Turning off one pass or one peephole pattern keeps the rest of the
/// optimizer, and its speed, for every other design.
pub const OPTIMIZATIONS_OFF: &[(&str, &[(&str, &str)])] = &[
    ("5.006", &[("-fno-subst", SUBST_FAULT)]),
    (
        "5.048",
        &[
            (
                "-fno-dfg-break-cycles",
                "the cycle breaker stops with an internal error (\"TraceDriver - \
                 Unhandled vertex type: NEGATE\") on a negation in a combinational \
                 path through several instances (seed 6859787956538440806); it only \
                 removes false combinational cycles, which hw designs do not rely on",
            ),
            (
                "-fno-dfg-peephole",
                "two of its peephole patterns give wrong bits: `fold-rep` (seed \
                 18071420112026974698, two bits of one output) and \
                 `push-sel-through-shiftl` (seed 4060818615367834538, one bit); \
                 each was found by turning the patterns off half at a time, Icarus \
                 and the evaluator agree on both designs, and with the whole \
                 peephole pass off the int8 and bf16 16x16 MXUs simulate as fast",
            ),
            ("-fno-subst", SUBST_FAULT),
        ],
    ),
];

/// Why `-fno-subst` is off on both releases.
const SUBST_FAULT: &str = "the substitution of wide variables leaves a reduction over \
     a one-bit value for the C++ emitter, which stops with an internal error \
     (\"Reduction over single bit value should have been folded\") on the XOR \
     reduction of an 88-bit inverted input feeding a select (seed \
     7783741732962471996); `-fno-expand` or `-fno-gate` also avoid it, at a \
     higher cost in speed, and writing wide reductions over 64-bit pieces in \
     the Verilog instead made 5.048 miscompile another fuzz design";

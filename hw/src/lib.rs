//! `hw`: Systole's hardware-description layer.
//!
//! Hardware is described by plain Rust functions that build module definitions
//! with a [`ModuleBuilder`]; the result is an IR that two back ends consume: the
//! Verilog-2005 [`emit`]ter, and the cycle-based [`Evaluator`] that serves as the
//! emitter's reference in randomized tests.
//!
//! Design decisions:
//! - **One clock, synchronous reset.** Registers are clocked by an implicit
//!   `clk_i` and reset by an implicit active-high `rst_i`; a module gets those
//!   ports only if something inside needs them, so lint never sees an unused port.
//! - **Types are explicit.** Every value has a width and a signedness
//!   ([`Ty`]). Binary operations require equal types and wrap at that width;
//!   widening is always spelled out (`zext`, `sext`, `mul_wide`), narrowing too
//!   (`trunc`, `slice`). Any mismatch stops elaboration with the generator's
//!   source line (`#[track_caller]`), never a silent fix. Constants carry a type.
//! - **Registers** follow the `_d`/`_q` convention, with optional reset value and
//!   enable. **Memories** have synchronous read ports so synthesis infers block RAM.
//! - **Definitions are interned** by name and parameters in a [`Design`], so an
//!   array of 65,536 PEs holds one PE definition. **Instance arrays** connect
//!   ports to elements of buses (arrays of nets) through affine indices and are
//!   emitted as generate loops, keeping the Verilog of a 256x256 array small.
//! - **The emitted Verilog** is deterministic, one file per module, ANSI ports
//!   (`_i`/`_o`), every compound expression parenthesised, sized literals,
//!   `$signed` where signedness matters, no keyword as a name; lint waivers go to
//!   a `.vlt` file, each with its reason.

pub mod arith;
mod block;
pub mod blocks;
mod builder;
mod design;
pub mod emit;
mod error;
pub mod eup;
mod eval;
pub mod fp;
pub mod ir;
mod names;
pub mod pipeline;
mod ty;

pub use block::{
    configured, dsp_budget_commands, multiplier_census, AnyBlock, Block, Companions, Configured,
    DspShare, FpgaFacts, FpgaSearch, Has, MultiplierShape, Multipliers, Owners, Param, ParamKind,
    Preset, SearchSizes,
};
pub use blocks::{delay, delay_enabled, delay_taps};
pub use builder::{
    cat, enum_const_name, enum_operand, mux, mux_bitwise, Assignable, Bus, CaseLabel, Comb, Expr,
    Fsm, FsmStates, HwEnum, Idx, IfChain, Inst, InstArray, Mem, ModuleBuilder, Operand, Record,
    RecordReg, RecordTy, Reg, Stream, StreamSink, Switch, Wire,
};
pub use design::{param_refs, Design, Params};
pub use emit::{emit_design, emit_module, EmittedFile, Header};
pub use error::{catch_elab, quiet_elab_errors, ElabError, ELAB_ERROR_PREFIX};
pub use eval::Evaluator;
pub use ir::{Dir, ModuleDef, SimLayout};
pub use names::identifier_problem;
pub use pipeline::{unit_module, CutPlan, Pipeline, UnitModule};
/// The TOML crate the block trait's tables come from, for block crates that
/// write them (an [`FpgaSearch`]'s base configuration).
pub use toml;
pub use ty::{bits_for, Ty, MAX_WIDTH};

//! `sim`: runs the accelerator's Verilog under Verilator, driven from Rust.
//!
//! Three layers, each knowing less than the one above it:
//! - [`verilator`], the harness, knows no block and not even the hardware-description
//!   layer: a [`ModelSpec`] is Verilog text, the top module's name and its port list, and
//!   [`Model::build`] turns it into a running simulation. [`from_hw`] makes a spec from
//!   emitted `hw` files.
//! - [`drivers`], one module per block, are typed hosts of a block's interface on top of
//!   [`Model`] (e.g. [`drivers::mxu::MxuDriver::matmul_int8`]). A driver gets its block's
//!   Verilog from `gen`, so the simulated RTL is the RTL users get.
//! - the run CLI (`src/cli/`, one module per subcommand, behind a thin `main.rs`) reads
//!   data files and runs a driver or the golden model.
//!
//! The rest of this page is about the harness.
//!
//! # Design
//! **Built at run time, cached.** Array sizes are run-time flags of the CLI, so models cannot
//! all be compiled by a build script. `Model::build` runs `verilator --cc`, compiles the
//! generated C++ with the host compiler (found by the `cc` crate, used outside a build script
//! with target, optimisation level and output folder set explicitly; the C++ is always built
//! at `-O2`, even in debug test builds), links a shared library and loads it with
//! `libloading`. The Verilator runtime (`verilated.cpp` and friends) is compiled once per
//! toolchain and reused by every model; per model only its own C++ is compiled.
//!
//! **Cache key.** A SHA-256 of everything that can change the library: Verilator's
//! `--version` and root, the compiler, its version and flags, the shim template and build
//! recipe versions, tracing on/off, and the spec (top, sources, ports, clock, Verilator
//! arguments). The cache lives in `$SYSTOLE_CACHE_DIR`, else `$CARGO_TARGET_DIR/systole-models`,
//! else `<workspace>/target/systole-models`. Builds happen in a temporary folder inside the
//! cache and are renamed into place; a file lock per entry keeps concurrent builders (threads
//! or processes) from duplicating work. Failed builds are not cached; their folder with the
//! full `build.log` is kept under `failed/` and named in the returned [`SimError`].
//!
//! **Shim.** A generated C++ file exports a small C ABI (`systole_new`, `_eval`, `_step`,
//! ...) and, for every port, the address and size of its storage, so `poke`/`peek` are plain
//! memory accesses whose sizes follow Verilator's own types (checked at compile and load
//! time). Verilator's fatal-error and `$finish` handlers are replaced so that a design error
//! becomes a Rust panic with a message instead of ending the process.
//!
//! **Isolation.** Each library carries a private copy of the Verilator runtime: compiled with
//! hidden visibility, linked with `-Bsymbolic`, loaded with `RTLD_LOCAL`, exporting only the
//! shim. Any number of models (same or different specs) can be alive at once, each with its
//! own `VerilatedContext`, on any threads. Libraries stay loaded until the process exits.
//!
//! **Clocking and waveforms** are described in [`verilator`]: poke inputs while the clock is
//! low, `eval` then `peek` for combinational outputs, `step` for the rising edge.
//! `SYSTOLE_TRACE=1` (or a path) makes every model write a VCD waveform, printed as
//! `waveform: <path>` on stderr.

pub mod drivers;
pub mod from_hw;
pub mod verilator;

pub use verilator::{
    verilator_path, verilator_release, BuildOptions, CacheStatus, Model, ModelSpec, PortDir,
    PortId, PortSpec, SimError, Trace, OPTIMIZATIONS_OFF, RELEASES_WITHOUT_DFG,
};

//! Turning emitted `hw` designs into Verilator model specs.

use crate::verilator::{ModelSpec, PortSpec};
use hw::{Dir, EmittedFile, ModuleDef};

/// Verilator arguments every model of an emitted design is built with.
///
/// `--output-split-cfuncs`: Verilator puts the logic of a flattened array into
/// a few functions of tens of thousands of statements, and the C++ compiler's
/// time grows faster than linearly with a function's size. Split into
/// functions of at most 2,000 statements, the int8 16x16 MXU compiles in
/// about 3.5 s instead of 12.1 s (Verilator 5.048), 32x32 in 16 s and 64x64 in
/// 100 s (16 to 25 ms per PE). Smaller pieces cost simulation speed: at 200
/// statements the int8 16x16 top ran some 15 % slower with random inputs every
/// cycle than unsplit, at 2,000 close to unsplit.
pub const HW_VERILATOR_ARGS: &[&str] = &["--output-split-cfuncs", "2000"];

/// The Verilator arguments a design with a [`hw::SimLayout::Shared`] module is
/// built with. Verilator merges the instances' functions only when their
/// bodies are equal, and two of its optimizers name their temporaries per
/// instance, which keeps every instance's copy apart: the data-flow optimizer
/// (`-fno-dfg`) and the lookup tables it builds for small logic (`-fno-table`,
/// whose `__Vtableidx<N>` locals are numbered across the whole design). With
/// the tables, the 4x4x4 torus compiled a 1,200-line function of its
/// all-reduce engine 64 times: 8.1 MB of the engine's C++ against 2.2 MB, and
/// 152 s against 108 s of cold build (Verilator 5.048).
pub const SHARED_CODE_ARGS: &[&str] = &["-fno-dfg", "-fno-table"];

/// A spec for the emitted `files` of a design whose top is `top`: every Verilog
/// file and the waiver file as sources, the top's ports (clock included),
/// `clk_i` as the clock when the top has one, [`HW_VERILATOR_ARGS`], and
/// [`SHARED_CODE_ARGS`] when the design asks for shared code.
pub fn model_spec(files: &[EmittedFile], top: &ModuleDef) -> ModelSpec {
    let mut spec = ModelSpec::new(top.name.clone());
    for arg in HW_VERILATOR_ARGS {
        spec = spec.verilator_arg(*arg);
    }
    for f in files {
        if f.module.is_some() || f.name == hw::emit::WAIVER_FILE {
            spec = spec.source(f.name.clone(), f.text.clone());
        }
    }
    for (name, dir, ty) in top.port_list() {
        spec.ports.push(match dir {
            Dir::In => PortSpec::input(name, ty.width),
            Dir::Out => PortSpec::output(name, ty.width),
        });
    }
    if hw::SimLayout::any_shared(top) {
        for arg in SHARED_CODE_ARGS {
            spec = spec.verilator_arg(*arg);
        }
    }
    if top.has_clock {
        spec.clock = Some(hw::ir::CLOCK.to_string());
    }
    spec
}

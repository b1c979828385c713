//! Turning emitted `hw` designs into Verilator model specs.

use crate::verilator::{ModelSpec, PortSpec};
use hw::{Dir, EmittedFile, ModuleDef};

/// A spec for the emitted `files` of a design whose top is `top`: every Verilog
/// file and the waiver file as sources, the top's ports (clock included), and
/// `clk_i` as the clock when the top has one.
pub fn model_spec(files: &[EmittedFile], top: &ModuleDef) -> ModelSpec {
    let mut spec = ModelSpec::new(top.name.clone());
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
    if top.has_clock {
        spec.clock = Some(hw::ir::CLOCK.to_string());
    }
    spec
}

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

/// [`model_spec`] for a design that a model holds once, used as one of many
/// identical instances joined by a driver (a torus's chips): each module is in
/// it once, so the shared-code layout ([`hw::SimLayout::Shared`]: modules kept
/// apart, their inputs public, [`SHARED_CODE_ARGS`]) only costs speed. The
/// spec drops it: Verilator inlines and optimises the whole design (a 4x4x4
/// torus's chip ran some 15 % faster).
pub fn single_instance_spec(files: &[EmittedFile], top: &ModuleDef) -> ModelSpec {
    let mut spec = model_spec(files, top);
    spec.verilator_args
        .retain(|a| !SHARED_CODE_ARGS.contains(&a.as_str()));
    for (name, text) in &mut spec.sources {
        if name != hw::emit::WAIVER_FILE {
            continue;
        }
        // The shared modules: those whose inputs the layout made public.
        let shared: Vec<String> = text
            .lines()
            .filter_map(|l| l.strip_prefix("public_flat_rd -module "))
            .filter_map(|l| l.split('"').nth(1).map(str::to_string))
            .collect();
        *text = text
            .lines()
            .filter(|l| {
                let no_inline_shared = l
                    .strip_prefix("no_inline -module ")
                    .and_then(|m| m.split('"').nth(1))
                    .is_some_and(|m| shared.iter().any(|s| s == m));
                !l.starts_with("public_flat_rd -module ") && !no_inline_shared
            })
            .map(|l| format!("{l}\n"))
            .collect();
    }
    spec
}

/// Name of the wrapper [`inputs_delayed`] puts around a top.
pub fn inputs_delayed_name(top: &ModuleDef) -> String {
    format!("{}_inputs_delayed", top.name)
}

/// `spec` (a clocked design whose top is `top`) with a harness module around
/// the top, as the new top with the same ports, that passes the inputs
/// `delayed` picks through a register loaded at the clock's rising edge: a
/// value poked in cycle t is the design's input in cycle t + 1. The other
/// inputs (and the clock) go straight through.
///
/// Why: Verilator evaluates logic fed by top-level inputs ("input
/// combinational" logic) on every `eval`, and a driven cycle has two (inputs
/// settled with the clock low, then the rising edge), so a unit whose wide
/// inputs feed much logic (a torus chip's links) computes it twice per cycle,
/// and the logic fed by both inputs and registers three times. Behind the
/// harness's registers that logic is register-fed and runs once, after the
/// rising edge. (A harness loading at the falling edge would keep the
/// inputs' timing, but Verilator then evaluates all of the design's logic
/// after both edges.)
///
/// What the driver must keep: a delayed input is poked one cycle ahead. That
/// suits inputs that are constant over a run (coordinates, seeds) or that
/// the driver knows a cycle early (a serdes word taken one stage before the
/// end of a line one stage shorter); handshakes answered in the same cycle
/// stay direct.
pub fn inputs_delayed(
    mut spec: ModelSpec,
    top: &ModuleDef,
    delayed: impl Fn(&str) -> bool,
) -> ModelSpec {
    use std::fmt::Write;
    assert!(top.has_clock, "inputs_delayed needs a clocked top");
    let name = inputs_delayed_name(top);
    let range = |w: u32| {
        if w > 1 {
            format!("[{}:0] ", w - 1)
        } else {
            String::new()
        }
    };
    let mut ports = Vec::new();
    let mut body = String::new();
    let mut connections = Vec::new();
    for (port, dir, ty) in top.port_list() {
        match dir {
            Dir::In => {
                ports.push(format!("input wire {}{port}", range(ty.width)));
                if port != hw::ir::CLOCK && delayed(&port) {
                    let _ = writeln!(
                        body,
                        "  reg {}{port}_q;\n  always @(posedge {}) {port}_q <= {port};",
                        range(ty.width),
                        hw::ir::CLOCK
                    );
                    connections.push(format!(".{port}({port}_q)"));
                } else {
                    connections.push(format!(".{port}({port})"));
                }
            }
            Dir::Out => {
                ports.push(format!("output wire {}{port}", range(ty.width)));
                connections.push(format!(".{port}({port})"));
            }
        }
    }
    let text = format!(
        "// Simulation harness of the Systole `sim` crate: {top_name} with some inputs \
         delayed by a register loaded at the clock's rising edge (sim::from_hw::inputs_delayed). \
         Not part of the design.\nmodule {name} (\n  {}\n);\n{body}  {top_name} dut (\n    {}\n  );\nendmodule\n",
        ports.join(",\n  "),
        connections.join(",\n    "),
        top_name = top.name,
    );
    spec.sources.push((format!("{name}.v"), text));
    spec.top = name;
    spec
}

//! Runs an emitted design under Icarus Verilog with per-cycle stimulus and
//! returns every output in every cycle, for comparison with other simulators.
//!
//! The generated testbench follows the same clocking convention as the
//! evaluator and the Verilator harness: in each cycle the inputs are applied
//! while the clock is low, the outputs are sampled after the combinational logic
//! settles, and then the rising edge happens.

use hw::{Dir, EmittedFile, ModuleDef};
use num_bigint::BigUint;
use num_traits::Num;
use std::fmt::Write as _;
use std::process::Command;

/// The ports a testbench drives (all inputs but the clock) and samples.
pub struct TestPorts {
    pub inputs: Vec<(String, u32)>,
    pub outputs: Vec<(String, u32)>,
    pub has_clock: bool,
}

impl TestPorts {
    pub fn of(top: &ModuleDef) -> TestPorts {
        let mut inputs = Vec::new();
        let mut outputs = Vec::new();
        for (name, dir, ty) in top.port_list() {
            match dir {
                Dir::In if name == hw::ir::CLOCK => {}
                Dir::In => inputs.push((name, ty.width)),
                Dir::Out => outputs.push((name, ty.width)),
            }
        }
        TestPorts {
            inputs,
            outputs,
            has_clock: top.has_clock,
        }
    }
}

/// Simulates `files` (top module `top`) for `stimulus.len()` cycles;
/// `stimulus[c][i]` is input `i` (in [`TestPorts::of`] order) during cycle `c`.
/// Returns `outputs[c][o]`, `None` where the output has X or Z bits.
pub fn run(
    files: &[EmittedFile],
    top: &ModuleDef,
    stimulus: &[Vec<BigUint>],
) -> Result<Vec<Vec<Option<BigUint>>>, String> {
    let ports = TestPorts::of(top);
    let dir = crate::tools::write_temp(files);
    let stim_path = dir.path().join("stimulus.hex");
    let mut stim = String::new();
    for cycle in stimulus {
        let words: Vec<String> = cycle.iter().map(|v| format!("{v:x}")).collect();
        writeln!(stim, "{}", words.join(" ")).unwrap();
    }
    std::fs::write(&stim_path, stim).map_err(|e| e.to_string())?;

    let mut tb = String::new();
    writeln!(tb, "`default_nettype none").unwrap();
    writeln!(tb, "module systole_tb;").unwrap();
    if ports.has_clock {
        writeln!(tb, "  reg clk_i = 1'b0;").unwrap();
    }
    for (name, w) in &ports.inputs {
        writeln!(tb, "  reg [{}:0] {name};", w - 1).unwrap();
    }
    for (name, w) in &ports.outputs {
        writeln!(tb, "  wire [{}:0] {name};", w - 1).unwrap();
    }
    let mut conns: Vec<String> = Vec::new();
    if ports.has_clock {
        conns.push(".clk_i(clk_i)".into());
    }
    for (name, _) in ports.inputs.iter().chain(&ports.outputs) {
        conns.push(format!(".{name}({name})"));
    }
    writeln!(tb, "  {} dut ({});", top.name, conns.join(", ")).unwrap();
    writeln!(tb, "  integer fd, code, cycle;").unwrap();
    writeln!(tb, "  initial begin").unwrap();
    writeln!(tb, "    fd = $fopen(\"{}\", \"r\");", stim_path.display()).unwrap();
    writeln!(
        tb,
        "    for (cycle = 0; cycle < {}; cycle = cycle + 1) begin",
        stimulus.len()
    )
    .unwrap();
    for (name, _) in &ports.inputs {
        writeln!(tb, "      code = $fscanf(fd, \"%h\", {name});").unwrap();
    }
    writeln!(tb, "      #1;").unwrap();
    let fmt: Vec<&str> = ports.outputs.iter().map(|_| "%h").collect();
    let names: Vec<&str> = ports.outputs.iter().map(|(n, _)| n.as_str()).collect();
    if !names.is_empty() {
        writeln!(
            tb,
            "      $display(\"{}\", {});",
            fmt.join(" "),
            names.join(", ")
        )
        .unwrap();
    } else {
        writeln!(tb, "      $display(\"\");").unwrap();
    }
    if ports.has_clock {
        writeln!(tb, "      clk_i = 1'b1; #1; clk_i = 1'b0; #1;").unwrap();
    } else {
        writeln!(tb, "      #2;").unwrap();
    }
    writeln!(tb, "    end").unwrap();
    writeln!(tb, "    $finish;").unwrap();
    writeln!(tb, "  end").unwrap();
    writeln!(tb, "endmodule").unwrap();
    let tb_path = dir.path().join("systole_tb.v");
    std::fs::write(&tb_path, tb).map_err(|e| e.to_string())?;

    let vvp = dir.path().join("tb.vvp");
    let mut cmd = Command::new("iverilog");
    cmd.arg("-g2005")
        .arg("-s")
        .arg("systole_tb")
        .arg("-o")
        .arg(&vvp);
    cmd.args(crate::tools::verilog_paths(dir.path(), files));
    cmd.arg(&tb_path);
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run iverilog: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "iverilog failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let out = Command::new("vvp")
        .arg("-n")
        .arg(&vvp)
        .current_dir(dir.path())
        .output()
        .map_err(|e| format!("cannot run vvp: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut result = Vec::new();
    for line in text.lines() {
        if line.starts_with("VCD") || line.contains("$finish") {
            continue;
        }
        if result.len() == stimulus.len() {
            break;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() != ports.outputs.len() {
            return Err(format!("unexpected vvp output line: '{line}'"));
        }
        let values = fields
            .iter()
            .map(|f| BigUint::from_str_radix(f, 16).ok())
            .collect();
        result.push(values);
    }
    if result.len() != stimulus.len() {
        return Err(format!(
            "vvp produced {} cycles of output, expected {}:\n{text}{}",
            result.len(),
            stimulus.len(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(result)
}

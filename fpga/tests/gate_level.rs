//! The iCE40 netlist the recipe produces computes what the RTL computes: a
//! small MXU synthesised by the flow's Yosys script (multipliers in SB_MAC16,
//! no `ice40_dsp`) and its RTL run side by side under Icarus on the same
//! random inputs, every output bit compared every cycle wherever the RTL's is
//! 0 or 1. Yosys' stock `synth_ice40 -dsp` is run through the same bench and
//! count is printed: on Yosys 0.23 its netlist gives X on accumulator bits
//! where the RTL has 0 or 1 (also with every x constant in it replaced by 0
//! and the DSP registers starting at 0, as on the chip). A whole iCEBreaker
//! board build, its PLL primitive included (simulated by the build's PLL
//! model), goes through its own recipe and the same comparison, driven over
//! its UART pins by the build's smoke test.

use config::{ElemType, MxuConfig};
use fpga::harness::{self, Port};
use fpga::parts::part;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

const CYCLES: u32 = 3000;

/// Yosys' simulation models of the iCE40 cells.
fn ice40_cells_sim() -> PathBuf {
    tb::tools::yosys_cells_sim("ice40")
}

/// A bench driving `rtl` and `gl_top` with the same random inputs (reset for
/// four cycles first), counting output bits where the RTL is 0/1 and the
/// netlist differs; prints "mismatches N compared M".
fn bench(rtl: &str, ports: &[Port], seed: u32) -> String {
    let mut v = String::new();
    let _ = writeln!(v, "`timescale 1ns/1ps\nmodule gl_bench;");
    let _ = writeln!(v, "  reg clk_i = 1'b0;\n  reg rst_i = 1'b1;");
    let mut conns = Vec::new();
    let mut outs = Vec::new();
    for p in ports {
        if p.name == "clk_i" || p.name == "rst_i" {
            conns.push(p.name.clone());
            continue;
        }
        let w = p.width;
        if p.input {
            let _ = writeln!(v, "  reg [{}:0] {} = 0;", w - 1, p.name);
        } else {
            let _ = writeln!(v, "  wire [{}:0] rtl_{n}, gl_{n};", w - 1, n = p.name);
            outs.push((p.name.clone(), w));
        }
        conns.push(p.name.clone());
    }
    for (inst, module) in [("rtl", rtl), ("gl", "gl_top")] {
        let c: Vec<String> = ports
            .iter()
            .map(|p| {
                if p.input {
                    format!(".{n}({n})", n = p.name)
                } else {
                    format!(".{n}({inst}_{n})", n = p.name)
                }
            })
            .collect();
        let _ = writeln!(v, "  {module} {inst}_i ({});", c.join(", "));
    }
    let _ = writeln!(
        v,
        "  always #5 clk_i = !clk_i;\n  integer seed = {seed};\n  integer cycle, k;\n  \
         integer mismatches = 0;\n  integer compared = 0;"
    );
    let _ = writeln!(v, "  task check;\n  begin");
    for (n, w) in &outs {
        let _ = writeln!(
            v,
            "    for (k = 0; k < {w}; k = k + 1)\n      if (rtl_{n}[k] === 1'b0 || rtl_{n}[k] === 1'b1) begin\n        \
             compared = compared + 1;\n        if (gl_{n}[k] !== rtl_{n}[k]) begin\n          \
             if (mismatches < 5) $display(\"cycle %0d {n}[%0d]: rtl %b netlist %b\", cycle, k, rtl_{n}[k], gl_{n}[k]);\n          \
             mismatches = mismatches + 1;\n        end\n      end"
        );
    }
    let _ = writeln!(v, "  end\n  endtask");
    let _ = writeln!(
        v,
        "  initial begin\n    repeat (4) @(posedge clk_i);\n    rst_i = 1'b0;\n    \
         for (cycle = 0; cycle < {CYCLES}; cycle = cycle + 1) begin\n      @(negedge clk_i);\n      check;"
    );
    for p in ports
        .iter()
        .filter(|p| p.input && p.name != "clk_i" && p.name != "rst_i")
    {
        // Valid strobes often, data always random: the MXU streams.
        let _ = writeln!(
            v,
            "      {n} = {{$random(seed), $random(seed), $random(seed), $random(seed)}};",
            n = p.name
        );
    }
    let _ = writeln!(
        v,
        "    end\n    $display(\"mismatches %0d compared %0d\", mismatches, compared);\n    \
         $finish;\n  end\nendmodule"
    );
    v
}

/// Synthesises the MXU in `dir` with `synth` (Yosys commands after reading
/// the sources), simulates netlist against RTL; returns (mismatches, compared).
fn netlist_vs_rtl(dir: &Path, sources: &[String], top: &str, synth: &str) -> (u64, u64) {
    let script = format!(
        "{synth}\nrename {top} gl_top\nwrite_verilog -noattr gl.v\n",
        synth = synth
    );
    std::fs::write(dir.join("gl.ys"), script).unwrap();
    let out = Command::new("yosys")
        .args(["-q", "-l", "gl.log", "-s", "gl.ys"])
        .current_dir(dir)
        .output()
        .expect("yosys runs");
    assert!(
        out.status.success(),
        "{}",
        std::fs::read_to_string(dir.join("gl.log")).unwrap_or_default()
    );
    let mut args: Vec<String> = vec![
        "-g2005".into(),
        "-DNO_ICE40_DEFAULT_ASSIGNMENTS".into(),
        "-o".into(),
        "gl.vvp".into(),
        "bench.v".into(),
        "gl.v".into(),
    ];
    args.extend(sources.iter().cloned());
    args.push(ice40_cells_sim().display().to_string());
    let text = icarus_run(dir, &args);
    let last = text
        .lines()
        .find(|l| l.starts_with("mismatches "))
        .unwrap_or_else(|| panic!("no summary from the bench:\n{text}"));
    let w: Vec<&str> = last.split_whitespace().collect();
    println!("{text}");
    (w[1].parse().unwrap(), w[3].parse().unwrap())
}

/// Compiles with Icarus (`args` name the output `gl.vvp` and the sources) in
/// `dir` and runs the bench; returns what it printed.
fn icarus_run(dir: &Path, args: &[String]) -> String {
    let out = Command::new("iverilog")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("iverilog runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new("vvp")
        .args(["-n", "gl.vvp"])
        .current_dir(dir)
        .output()
        .expect("vvp runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A netlist of the recipe that matched its RTL: the run folder (kept for
/// further syntheses), the sources, the top, and the bits compared.
struct RecipeRun {
    dir: tempfile::TempDir,
    sources: Vec<String>,
    top: String,
    compared: u64,
}

/// Writes `cfg`'s MXU, synthesises it with the report's iCE40 UP5K recipe,
/// simulates the netlist against the RTL and asserts that they agree on
/// every compared bit (the seed of `test` printed for a replay).
fn recipe_matches_rtl(test: &str, cfg: MxuConfig) -> RecipeRun {
    // Icarus' $random takes a 32-bit seed.
    let seed = tb::seed::seed_for(test) as u32 & 0x7fff_ffff;
    let generated = gen::generate(&cfg).unwrap();
    let dir = tb::tools::write_temp(&generated.files);
    let sources: Vec<String> = generated
        .files
        .iter()
        .filter(|f| f.module.is_some())
        .map(|f| f.name.clone())
        .collect();
    let ports = harness::ports(generated.top_module.as_ref().unwrap());
    std::fs::write(
        dir.path().join("bench.v"),
        bench(&generated.top, &ports, seed),
    )
    .unwrap();
    let up5k = part("ice40-up5k").unwrap();
    let design = fpga::FlowDesign::typed(&mxu::Mxu, cfg).unwrap();
    let recipe = fpga::synth::script(&sources, &generated.top, up5k, &design)
        .lines()
        .filter(|l| !l.starts_with("tee ") && !l.starts_with("write_json"))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(recipe.contains("synth_ice40 -dsp") && !recipe.contains("ice40_dsp"));
    let (bad, compared) = netlist_vs_rtl(dir.path(), &sources, &generated.top, &recipe);
    assert!(
        compared > u64::from(CYCLES) * 10,
        "compared only {compared} bits"
    );
    assert_eq!(
        bad, 0,
        "the recipe's netlist differs from the RTL (seed {seed}; replay with SYSTOLE_SEED={seed})"
    );
    RecipeRun {
        dir,
        sources,
        top: generated.top,
        compared,
    }
}

#[test]
fn the_ice40_recipe_netlist_matches_the_rtl_cycle_for_cycle() {
    let cfg = MxuConfig::with_acc_rows(2, 2, ElemType::Int8, 16).unwrap();
    let RecipeRun {
        dir,
        sources,
        top,
        compared,
    } = recipe_matches_rtl(
        "the_ice40_recipe_netlist_matches_the_rtl_cycle_for_cycle",
        cfg,
    );
    let stock = format!(
        "read_verilog {}\nsynth_ice40 -dsp -top {}",
        sources.join(" "),
        top
    );
    let (stock_bad, stock_compared) = netlist_vs_rtl(dir.path(), &sources, &top, &stock);
    println!(
        "stock synth_ice40 -dsp: {stock_bad} of {stock_compared} compared bits differ \
         (the recipe: 0 of {compared})"
    );
}

/// The bf16 MXU's fp32 adders shift by data-dependent amounts: the recipe
/// lowers those shifts before synthesis, and the netlist must still be the RTL.
#[test]
fn the_ice40_recipe_netlist_of_a_bf16_mxu_with_lowered_shifts_matches_the_rtl() {
    let cfg = MxuConfig::with_acc_rows(1, 2, ElemType::Bf16, 16).unwrap();
    recipe_matches_rtl(
        "the_ice40_recipe_netlist_of_a_bf16_mxu_with_lowered_shifts_matches_the_rtl",
        cfg,
    );
}

/// Yosys' iCE40 cell models without their `SB_PLL40_PAD`, an empty
/// black box there: the board build's PLL simulation model takes its place.
fn ice40_cells_sim_without_pll() -> String {
    let text = std::fs::read_to_string(ice40_cells_sim()).expect("read cells_sim.v");
    let start = text
        .find("module SB_PLL40_PAD (")
        .expect("cells_sim.v declares SB_PLL40_PAD");
    let start = text[..start].rfind("(* blackbox *)").unwrap_or(start);
    let end =
        start + text[start..].find("endmodule").expect("SB_PLL40_PAD ends") + "endmodule".len();
    format!("{}{}", &text[..start], &text[end..])
}

/// A whole board build, PLL included, at gate level: the iCEBreaker top (a
/// 2x2 MXU behind the bridge) synthesised by the build's own recipe
/// (`yosys -s systole_icebreaker.ys`, which maps the PLL instance to the
/// UP5K's SB_PLL40_PAD), its netlist simulated under Icarus with Yosys' cell
/// models and the build's PLL simulation model, beside the RTL top: the
/// build's smoke test drives both over the UART pins and must pass on the
/// RTL, and every output pin of the netlist must equal the RTL's every cycle
/// (wherever the RTL's is 0 or 1).
#[test]
fn the_icebreaker_board_netlist_with_its_pll_matches_the_rtl_over_the_uart() {
    let board = board::Board::IceBreaker;
    let cfg = MxuConfig::with_acc_rows(2, 2, ElemType::Int8, 16).unwrap();
    // 15 clocks per bit at the board's core clock keep the simulation short.
    let baud = (board.defaults().core_mhz * 1e6 / 15.0).round() as u32;
    let (generated, made) = gen::generate_board(board, &cfg, Some(16), None, Some(baud)).unwrap();
    assert_eq!(made.bridge.clocks_per_bit(), 15);
    let dir = tb::tools::write_temp(&generated.files);
    let top = board.top_name();
    let script = board::yosys::script_name(board);
    let out = Command::new("yosys")
        .args(["-q", "-l", "gl.log", "-p"])
        .arg(format!(
            "script {script}; rename {top} gl_top; write_verilog -noattr gl.v"
        ))
        .current_dir(dir.path())
        .output()
        .expect("yosys runs");
    let log = std::fs::read_to_string(dir.path().join("gl.log")).unwrap_or_default();
    assert!(out.status.success(), "{log}");
    let netlist = std::fs::read_to_string(dir.path().join("gl.v")).unwrap();
    assert!(
        netlist.contains("SB_PLL40_PAD #("),
        "the netlist has no PLL primitive"
    );
    std::fs::write(
        dir.path().join("cells_sim.v"),
        ice40_cells_sim_without_pll(),
    )
    .unwrap();

    // The smoke test with the netlist beside the RTL top, on the same pins.
    let tb_name = board::smoke::testbench_name(board);
    let smoke = &generated
        .files
        .iter()
        .find(|f| f.name == format!("{tb_name}.v"))
        .expect("the smoke test")
        .text;
    let (rx, tx) = board.uart_ports();
    let (button, pressed) = board.button();
    let mut conns = Vec::new();
    let mut compare = String::new();
    for p in board.pins() {
        let v = if p.port == board.clock_port() {
            "clk".to_string()
        } else if p.port == rx {
            "rx_at_negedge".to_string()
        } else if p.port == button {
            format!("1'b{}", u8::from(!pressed))
        } else {
            format!("gl_{}", p.port)
        };
        if p.dir == board::PinDir::Out {
            let rtl = if p.port == tx {
                "tx".to_string()
            } else {
                format!("{}_unused", p.port)
            };
            let _ = writeln!(
                compare,
                "    if ({rtl} === 1'b0 || {rtl} === 1'b1) begin\n      \
                 gl_compared = gl_compared + 1;\n      \
                 if (gl_{p} !== {rtl}) begin\n        \
                 if (gl_mismatches < 5) $display(\"netlist {p} %b, RTL %b at %0t\", gl_{p}, {rtl}, $time);\n        \
                 gl_mismatches = gl_mismatches + 1;\n      \
                 end\n    \
                 end",
                p = p.port
            );
            let _ = writeln!(compare);
        }
        conns.push(format!(".{} ({v})", p.port));
    }
    let decls: String = board
        .pins()
        .iter()
        .filter(|p| p.dir == board::PinDir::Out)
        .map(|p| format!("  wire gl_{};\n", p.port))
        .collect();
    // The smoke test changes its receive line right at rising edges, a race
    // the RTL and the netlist's cell models may resolve differently: both
    // tops get the line half a cycle later instead.
    let beside = format!(
        "  reg rx_at_negedge = 1'b1;\n  always @(negedge clk) rx_at_negedge <= rx;\n\
         {decls}  gl_top gl ({});\n  integer gl_compared = 0;\n  integer gl_mismatches = 0;\n  \
         always @(negedge clk) begin\n{compare}  end\n",
        conns.join(", ")
    );
    let marker = "  always #1 clk = !clk;\n";
    let dut_rx = format!("    .{rx} (rx)");
    assert!(smoke.contains(marker) && smoke.contains(&dut_rx));
    let bench = smoke
        .replacen(&dut_rx, &format!("    .{rx} (rx_at_negedge)"), 1)
        .replacen(marker, &format!("{beside}{marker}"), 1)
        .replacen(
            "      $display(\"PASS:",
            "      $display(\"netlist: %0d mismatches in %0d compared pin values\", gl_mismatches, gl_compared);\n      $display(\"PASS:",
            1,
        );
    std::fs::write(dir.path().join("bench.v"), bench).unwrap();
    let mut args: Vec<String> = vec![
        "-g2005".into(),
        "-DNO_ICE40_DEFAULT_ASSIGNMENTS".into(),
        "-s".into(),
        tb_name.clone(),
        "-o".into(),
        "gl.vvp".into(),
        "bench.v".into(),
        "gl.v".into(),
        "cells_sim.v".into(),
    ];
    args.extend(
        generated
            .files
            .iter()
            .filter(|f| f.module.is_some())
            .map(|f| f.name.clone()),
    );
    let text = icarus_run(dir.path(), &args);
    println!("{text}");
    assert!(
        text.contains("PASS:") && !text.contains("FAIL"),
        "the smoke test failed:\n{text}"
    );
    let summary = text
        .lines()
        .find(|l| l.starts_with("netlist: "))
        .unwrap_or_else(|| panic!("no comparison summary:\n{text}"));
    let w: Vec<&str> = summary.split_whitespace().collect();
    let (mismatches, compared): (u64, u64) = (w[1].parse().unwrap(), w[4].parse().unwrap());
    // Four output pins over thousands of cycles.
    assert!(compared > 10_000, "compared only {compared} pin values");
    assert_eq!(
        mismatches, 0,
        "the netlist's pins differ from the RTL's:\n{text}"
    );
}

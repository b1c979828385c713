//! The iCE40 netlist the recipe produces computes what the RTL computes: a
//! small MXU synthesised by the flow's Yosys script (multipliers in SB_MAC16,
//! no `ice40_dsp`) and its RTL run side by side under Icarus on the same
//! random inputs, every output bit compared every cycle wherever the RTL's is
//! 0 or 1. Yosys' stock `synth_ice40 -dsp` is run through the same bench and
//! count is printed: on Yosys 0.23 its netlist gives X on accumulator bits
//! where the RTL has 0 or 1 (also with every x constant in it replaced by 0
//! and the DSP registers starting at 0, as on the chip).

use config::{ElemType, MxuConfig};
use fpga::harness::{self, Port};
use fpga::parts::part;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

const CYCLES: u32 = 3000;

/// Yosys' simulation models of the iCE40 cells.
fn ice40_cells_sim() -> PathBuf {
    for dir in ["/usr/share/yosys", "/usr/local/share/yosys"] {
        let p = Path::new(dir).join("ice40/cells_sim.v");
        if p.exists() {
            return p;
        }
    }
    panic!("ice40/cells_sim.v not found (Debian's yosys package installs it)");
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
    let out = Command::new("iverilog")
        .args(&args)
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
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text
        .lines()
        .find(|l| l.starts_with("mismatches "))
        .unwrap_or_else(|| panic!("no summary from the bench:\n{text}"));
    let w: Vec<&str> = last.split_whitespace().collect();
    println!("{text}");
    (w[1].parse().unwrap(), w[3].parse().unwrap())
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

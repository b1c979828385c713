//! The ECP5 DSP register pass ([`fpga::dsp_registers`]) on a design with one
//! case of each rule, synthesised by the flows' YoWASP Yosys: the blocks it
//! packs and the flip-flops it removes are counted, and the packed netlist,
//! simulated under Icarus with Yosys' ECP5 cell models and a model of
//! `MULT18X18D`'s registers (below), equals the RTL on every output bit of
//! every cycle after reset, on random inputs.

use fpga::dsp_registers;
use std::fmt::Write;
use std::path::{Path, PathBuf};

const CYCLES: u32 = 2000;

/// One case per rule; each product is an output, so none is optimised away.
const DUT: &str = r#"
module kept_reg_s8 (input wire clk_i, input wire [7:0] d_i, output reg [7:0] q_o);
  always @(posedge clk_i) q_o <= d_i;
endmodule

module dut (
  input wire clk_i,
  input wire rst_i,
  input wire signed [7:0] a_i,
  input wire signed [7:0] b_i,
  input wire [7:0] c_i,
  input wire en_i,
  output reg signed [15:0] both_o,
  output reg signed [15:0] shared_o,
  output wire signed [7:0] shared_a_o,
  output reg signed [15:0] enabled_o,
  output reg signed [15:0] chain_o,
  output reg [12:0] konst_o,
  output reg signed [15:0] reset_o,
  output reg signed [15:0] kept_o,
  output reg signed [15:0] fed_o,
  output wire signed [15:0] comb_o
);
  // The inputs registered: an operand register is packed only when it loads
  // straight from a flip-flop (or a constant), so each case's operands load
  // from these or from registers of their own.
  reg signed [7:0] a_r, b_r;
  reg [7:0] c_r;
  always @(posedge clk_i) begin a_r <= a_i; b_r <= b_i; c_r <= c_i; end
  // Operands and product registered: both packed, all six registers removed.
  reg signed [7:0] a1, b1;
  always @(posedge clk_i) begin a1 <= a_r; b1 <= b_r; both_o <= a1 * b1; end
  // An operand register that also drives an output: packed as a copy; it stays.
  reg signed [7:0] x2, a2, b2;
  always @(posedge clk_i) begin x2 <= a_i ^ 8'h5a; a2 <= x2; b2 <= b_r; shared_o <= a2 * b2; end
  assign shared_a_o = a2;
  // A product register with an enable: the operands alone.
  reg signed [7:0] x3, y3, a3, b3;
  always @(posedge clk_i) begin
    x3 <= a_i + 8'd1; y3 <= b_i - 8'd3; a3 <= x3; b3 <= y3;
    if (en_i) enabled_o <= a3 * b3;
  end
  // A product register that is the next multiplier's operand: its product
  // register taken, so the next block may not take its input.
  reg signed [7:0] x4, a4, b4;
  reg signed [15:0] p4;
  reg signed [7:0] c4;
  always @(posedge clk_i) begin
    x4 <= b_i + 8'd7; a4 <= x4; b4 <= a_r; p4 <= a4 * b4; c4 <= c_r;
    chain_o <= p4[11:4] * c4;
  end
  // An operand with constant bits (unsigned 8 x 5 with a zero top bit).
  reg [7:0] a5;
  reg [3:0] b5;
  always @(posedge clk_i) begin a5 <= c_r; b5 <= b_r[3:0]; konst_o <= a5 * {1'b0, b5}; end
  // An operand register with a synchronous reset: not packed.
  reg signed [7:0] a6, b6;
  always @(posedge clk_i) begin
    if (rst_i) begin a6 <= 0; b6 <= 0; end else begin a6 <= a_i; b6 <= c_i; end
    reset_o <= a6 * b6;
  end
  // An operand register in a module kept apart in synthesis.
  wire signed [7:0] a7;
  reg signed [7:0] y7, b7;
  (* keep_hierarchy *) kept_reg_s8 kept (.clk_i(clk_i), .d_i(c_r), .q_o(a7));
  always @(posedge clk_i) begin y7 <= b_i ^ 8'h33; b7 <= y7; kept_o <= a7 * b7; end
  // Operand registers loaded from logic (a sum, as a bias add before a
  // multiply): they stay in the fabric; the product alone is packed.
  reg signed [7:0] a8, b8;
  always @(posedge clk_i) begin a8 <= a_r + b_r; b8 <= c_r ^ 8'h0f; fed_o <= a8 * b8; end
  // No register at all: left as it is.
  assign comb_o = a_i * b_i;
endmodule
"#;

/// `MULT18X18D` as the pass configures it: A and B registered on `CLK0`
/// (`REG_INPUTA_CLK`, `REG_INPUTB_CLK`) or not, P registered on `CLK0`
/// (`REG_OUTPUT_CLK`) or not, each with clock enable `CE0` and synchronous
/// reset `RST0`; the product of A and B, each signed when its `SIGNED` pin
/// is high. Any other configuration stops the simulation.
const MULT18X18D_MODEL: &str = r#"
module MULT18X18D (
  input A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15, A16, A17,
  input B0, B1, B2, B3, B4, B5, B6, B7, B8, B9, B10, B11, B12, B13, B14, B15, B16, B17,
  input C0, C1, C2, C3, C4, C5, C6, C7, C8, C9, C10, C11, C12, C13, C14, C15, C16, C17,
  input SIGNEDA, SIGNEDB, SOURCEA, SOURCEB,
  input CLK0, CLK1, CLK2, CLK3, CE0, CE1, CE2, CE3, RST0, RST1, RST2, RST3,
  output P0, P1, P2, P3, P4, P5, P6, P7, P8, P9, P10, P11, P12, P13, P14, P15, P16, P17,
  output P18, P19, P20, P21, P22, P23, P24, P25, P26, P27, P28, P29, P30, P31, P32, P33, P34, P35
);
  parameter REG_INPUTA_CLK = "NONE";
  parameter REG_INPUTA_CE = "CE0";
  parameter REG_INPUTA_RST = "RST0";
  parameter REG_INPUTB_CLK = "NONE";
  parameter REG_INPUTB_CE = "CE0";
  parameter REG_INPUTB_RST = "RST0";
  parameter REG_OUTPUT_CLK = "NONE";
  parameter REG_OUTPUT_CE = "CE0";
  parameter REG_OUTPUT_RST = "RST0";
  parameter GSR = "ENABLED";
  parameter RESETMODE = "SYNC";
  wire [17:0] a = {A17, A16, A15, A14, A13, A12, A11, A10, A9, A8, A7, A6, A5, A4, A3, A2, A1, A0};
  wire [17:0] b = {B17, B16, B15, B14, B13, B12, B11, B10, B9, B8, B7, B6, B5, B4, B3, B2, B1, B0};
  reg [17:0] a_q = 18'd0, b_q = 18'd0;
  reg [35:0] p_q = 36'd0;
  wire [17:0] a_x = REG_INPUTA_CLK == "CLK0" ? a_q : a;
  wire [17:0] b_x = REG_INPUTB_CLK == "CLK0" ? b_q : b;
  wire [35:0] a_w = {{18{SIGNEDA & a_x[17]}}, a_x};
  wire [35:0] b_w = {{18{SIGNEDB & b_x[17]}}, b_x};
  wire [35:0] p = a_w * b_w;
  wire [35:0] p_x = REG_OUTPUT_CLK == "CLK0" ? p_q : p;
  assign {P35, P34, P33, P32, P31, P30, P29, P28, P27, P26, P25, P24, P23, P22, P21, P20, P19, P18,
          P17, P16, P15, P14, P13, P12, P11, P10, P9, P8, P7, P6, P5, P4, P3, P2, P1, P0} = p_x;
  always @(posedge CLK0) begin
    if (RST0) begin a_q <= 0; b_q <= 0; p_q <= 0; end
    else if (CE0) begin a_q <= a; b_q <= b; p_q <= p; end
  end
  initial begin
    if ((REG_INPUTA_CLK != "NONE" && REG_INPUTA_CLK != "CLK0")
        || (REG_INPUTB_CLK != "NONE" && REG_INPUTB_CLK != "CLK0")
        || (REG_OUTPUT_CLK != "NONE" && REG_OUTPUT_CLK != "CLK0")
        || REG_INPUTA_CE != "CE0" || REG_INPUTB_CE != "CE0" || REG_OUTPUT_CE != "CE0"
        || REG_INPUTA_RST != "RST0" || REG_INPUTB_RST != "RST0" || REG_OUTPUT_RST != "RST0"
        || RESETMODE != "SYNC") begin
      $display("MULT18X18D model: configuration not modelled");
      $finish;
    end
  end
endmodule
"#;

/// Output ports of `DUT` and their widths.
const OUTPUTS: &[(&str, u32)] = &[
    ("both_o", 16),
    ("shared_o", 16),
    ("shared_a_o", 8),
    ("enabled_o", 16),
    ("chain_o", 16),
    ("konst_o", 13),
    ("reset_o", 16),
    ("kept_o", 16),
    ("fed_o", 16),
    ("comb_o", 16),
];

fn bench(seed: u32) -> String {
    let mut v = String::new();
    let _ = writeln!(v, "`timescale 1ns/1ps\nmodule bench;");
    let _ = writeln!(
        v,
        "  reg clk_i = 1'b0;\n  reg rst_i = 1'b1;\n  reg [7:0] a_i = 0, b_i = 0, c_i = 0;\n  reg en_i = 1;"
    );
    let mut conns = vec![
        ".clk_i(clk_i)".to_string(),
        ".rst_i(rst_i)".into(),
        ".a_i(a_i)".into(),
        ".b_i(b_i)".into(),
        ".c_i(c_i)".into(),
        ".en_i(en_i)".into(),
    ];
    for (n, w) in OUTPUTS {
        let _ = writeln!(v, "  wire [{}:0] rtl_{n}, gl_{n};", w - 1);
    }
    for inst in ["rtl", "gl"] {
        let mut c = conns.clone();
        c.extend(OUTPUTS.iter().map(|(n, _)| format!(".{n}({inst}_{n})")));
        let module = if inst == "rtl" { "dut" } else { "gl_dut" };
        let _ = writeln!(v, "  {module} {inst}_i ({});", c.join(", "));
    }
    conns.clear();
    let _ = writeln!(
        v,
        "  always #5 clk_i = !clk_i;\n  integer seed = {seed};\n  integer cycle, k;\n  \
         integer mismatches = 0;\n  integer compared = 0;"
    );
    let _ = writeln!(
        v,
        "  initial begin\n    repeat (4) @(posedge clk_i);\n    rst_i = 1'b0;\n    \
         for (cycle = 0; cycle < {CYCLES}; cycle = cycle + 1) begin\n      @(negedge clk_i);"
    );
    // From the fourth cycle after reset: every register has loaded by then
    // (the enabled one too: `en_i` is high until the first random inputs;
    // left unloaded, the RTL's is x where the netlist's flip-flop starts at
    // 0).
    let _ = writeln!(v, "      if (cycle >= 4) begin");
    for (n, w) in OUTPUTS {
        let _ = writeln!(
            v,
            "        for (k = 0; k < {w}; k = k + 1) begin\n          compared = compared + 1;\n          \
             if (gl_{n}[k] !== rtl_{n}[k]) begin\n            \
             if (mismatches < 5) $display(\"cycle %0d {n}[%0d]: rtl %b netlist %b\", cycle, k, rtl_{n}[k], gl_{n}[k]);\n            \
             mismatches = mismatches + 1;\n          end\n        end"
        );
    }
    let _ = writeln!(v, "      end");
    let _ = writeln!(
        v,
        "      a_i = $random(seed);\n      b_i = $random(seed);\n      c_i = $random(seed);\n      \
         en_i = $random(seed);\n      rst_i = ($random(seed) & 63) == 0;"
    );
    let _ = writeln!(
        v,
        "    end\n    $display(\"mismatches %0d compared %0d\", mismatches, compared);\n    \
         $finish;\n  end\nendmodule"
    );
    v
}

#[test]
fn packed_blocks_compute_what_the_rtl_computes() {
    let Some(yosys) = fpga::tools::locate(fpga::tools::Tool::YowaspYosys) else {
        panic!("no YoWASP Yosys: scripts/fpga/install.sh installs it");
    };
    let seed =
        tb::seed::seed_for("packed_blocks_compute_what_the_rtl_computes") as u32 & 0x7fff_ffff;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("dut.v"), DUT).unwrap();
    // The flows' ECP5 netlist for place and route: synthesis, then the kept
    // modules flattened.
    let script = format!(
        "read_verilog dut.v\nsynth_ecp5 -top dut\n{}write_json synth.json\n",
        fpga::synth::ECP5_FLATTEN_KEPT
    );
    std::fs::write(d.join("synth.ys"), script).unwrap();
    tb::tools::run_in(d, &yosys, &["-q", "-s", "synth.ys"]);
    let packed = dsp_registers::pack_file(d, "dut").unwrap();
    println!("{packed:?}");
    // What each block got, named by the output its product reaches.
    let netlist: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("packed.json")).unwrap()).unwrap();
    let got = blocks_by_output(&netlist["modules"]["dut"]);
    let want: Vec<(String, bool, bool)> = [
        ("both_o", true, true),
        ("chain_o", false, true),
        ("comb_o", false, false),
        ("enabled_o", true, false),
        ("fed_o", false, true),
        // p4: its product is the chain's operand, not an output.
        ("internal", true, true),
        ("kept_o", true, true),
        ("konst_o", true, true),
        ("reset_o", false, true),
        ("shared_o", true, true),
    ]
    .iter()
    .map(|(n, i, o)| (n.to_string(), *i, *o))
    .collect();
    assert_eq!(
        got, want,
        "(output, operands packed, product packed) per block"
    );
    assert_eq!((packed.dsps, packed.inputs, packed.outputs), (10, 6, 8));
    // Every used product bit's flip-flop (16 bits for six outputs, 12 for
    // konst_o, whose top bit is a constant 0, 8 of p4) and more: the operand
    // flip-flops left without load (Yosys merges equal operand registers
    // first, so their count is not fixed here).
    assert!(packed.removed_ffs > 16 * 6 + 12 + 8, "{packed:?}");
    // The packed netlist back to Verilog, beside the RTL.
    tb::tools::run_in(
        d,
        &yosys,
        &[
            "-q",
            "-p",
            "read_json packed.json; rename dut gl_dut; write_verilog -noattr gl.v",
        ],
    );
    std::fs::write(d.join("mult18x18d.v"), MULT18X18D_MODEL).unwrap();
    std::fs::write(d.join("bench.v"), bench(seed)).unwrap();
    // Debian Yosys' ECP5 cell models (LUT4, CCU2C, TRELLIS_FF, ...).
    let cells = tb::tools::yosys_cells_sim("ecp5");
    let iverilog = PathBuf::from("iverilog");
    tb::tools::run_in(
        d,
        &iverilog,
        &[
            "-g2005",
            "-o",
            "gl.vvp",
            "bench.v",
            "dut.v",
            "gl.v",
            "mult18x18d.v",
            &cells.display().to_string(),
        ],
    );
    let text = tb::tools::run_in(d, Path::new("vvp"), &["-n", "gl.vvp"]);
    println!("{text}");
    let last = text
        .lines()
        .find(|l| l.starts_with("mismatches "))
        .unwrap_or_else(|| panic!("no summary from the bench:\n{text}"));
    let w: Vec<&str> = last.split_whitespace().collect();
    let (bad, compared): (u64, u64) = (w[1].parse().unwrap(), w[3].parse().unwrap());
    assert!(
        compared > u64::from(CYCLES) * 100,
        "compared only {compared} bits"
    );
    assert_eq!(
        bad, 0,
        "the packed netlist differs from the RTL (seed {seed}; replay with SYSTOLE_SEED={seed})"
    );
}

/// For each `MULT18X18D` of `module` (sorted): the output port its product
/// reaches, directly or through one flip-flop ("internal" if none), whether
/// its operands are registered inside, and whether its product is.
fn blocks_by_output(module: &serde_json::Value) -> Vec<(String, bool, bool)> {
    let mut port_of_bit = std::collections::HashMap::new();
    for (name, port) in module["ports"].as_object().unwrap() {
        for b in port["bits"].as_array().unwrap() {
            port_of_bit.insert(b.to_string(), name.clone());
        }
    }
    let cells = module["cells"].as_object().unwrap();
    let mut q_of_d = std::collections::HashMap::new();
    for c in cells.values() {
        if c["type"] == "TRELLIS_FF" {
            q_of_d.insert(
                c["connections"]["DI"][0].to_string(),
                c["connections"]["Q"][0].to_string(),
            );
        }
    }
    let mut out = Vec::new();
    for c in cells.values().filter(|c| c["type"] == "MULT18X18D") {
        let reaches = (0..36)
            .filter_map(|i| {
                c["connections"]
                    .get(format!("P{i}"))
                    .map(|b| b[0].to_string())
            })
            .find_map(|b| {
                port_of_bit
                    .get(&b)
                    .or_else(|| q_of_d.get(&b).and_then(|q| port_of_bit.get(q)))
                    .cloned()
            })
            .unwrap_or_else(|| "internal".into());
        let reg = |p: &str| c["parameters"].get(p).and_then(|v| v.as_str()) == Some("CLK0");
        assert_eq!(reg("REG_INPUTA_CLK"), reg("REG_INPUTB_CLK"));
        out.push((reaches, reg("REG_INPUTA_CLK"), reg("REG_OUTPUT_CLK")));
    }
    out.sort();
    out
}

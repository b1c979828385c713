//! A self-checking Verilog smoke test of a board top, and the FuseSoC core
//! that describes a board build.
//!
//! The smoke test is for people who build with their own tools: it plays
//! commands into the top's receive pin bit by bit, records what comes out of
//! the transmit pin (sampling each bit in its middle, both directions at
//! once), and compares it with the replies the protocol prescribes, computed
//! here: STATUS, and an unknown opcode that must be refused. It prints one
//! `PASS` line, or `FAIL` lines and stops with `$fatal` (a non-zero exit
//! status from Icarus' vvp). The thorough tests are in Rust (`tb/tests`).

use crate::protocol::{self, op, status};
use crate::top::{Pin, PinDir};
use crate::{Board, BridgeConfig, CoreClock, TcBridgeConfig};
use std::fmt::Write as _;

/// The smoke test's module (and file) name for `board`.
pub fn testbench_name(board: Board) -> String {
    format!("{}_tb", board.top_name())
}

/// The commands the smoke test sends and the replies it expects.
pub fn smoke_exchanges(cfg: &BridgeConfig) -> Vec<(Vec<u8>, Vec<u8>)> {
    let status_cmd = protocol::command(op::STATUS, [0; 3], &[]);
    let status_reply =
        protocol::reply(&status_cmd, status::OK, &protocol::idle_status_payload(cfg));
    let bad_cmd = protocol::command(0x7F, [0x1234, 0, 0], &[]);
    let bad_reply = protocol::reply(&bad_cmd, status::BAD_OPCODE, &[]);
    vec![(status_cmd, status_reply), (bad_cmd, bad_reply)]
}

fn bytes_init(out: &mut String, name: &str, bytes: &[u8]) {
    for (i, b) in bytes.iter().enumerate() {
        writeln!(out, "    {name}[{i}] = 8'h{b:02x};").unwrap();
    }
}

/// The commands the TensorCore board's smoke test sends and the replies it
/// expects: STATUS, TC_INFO, and an MXU command the TensorCore bridge refuses.
pub fn tc_smoke_exchanges(cfg: &TcBridgeConfig) -> Vec<(Vec<u8>, Vec<u8>)> {
    let status_cmd = protocol::command(op::STATUS, [0; 3], &[]);
    let status_reply = protocol::reply(&status_cmd, status::OK, &protocol::tc_status_payload(cfg));
    let info_cmd = protocol::command(op::TC_INFO, [0; 3], &[]);
    let info_reply = protocol::reply(&info_cmd, status::OK, &protocol::tc_info_payload(cfg));
    let bad_cmd = protocol::command(op::MATMUL, [0, 1, 0], &[]);
    let bad_reply = protocol::reply(&bad_cmd, status::BAD_OPCODE, &[]);
    vec![
        (status_cmd, status_reply),
        (info_cmd, info_reply),
        (bad_cmd, bad_reply),
    ]
}

/// The smoke test of `board`'s top for the bridge `cfg`.
pub fn testbench_verilog(
    board: Board,
    cfg: &BridgeConfig,
    generator: &str,
    params: &str,
) -> String {
    testbench_text(
        board,
        cfg.clocks_per_bit(),
        &smoke_exchanges(cfg),
        "STATUS, a refused opcode",
        generator,
        params,
    )
}

/// The smoke test of `board`'s top for the TensorCore bridge `cfg`.
pub fn tc_testbench_verilog(
    board: Board,
    cfg: &TcBridgeConfig,
    generator: &str,
    params: &str,
) -> String {
    testbench_text(
        board,
        cfg.clocks_per_bit(),
        &tc_smoke_exchanges(cfg),
        "STATUS, TC_INFO, a refused opcode",
        generator,
        params,
    )
}

/// The smoke test of `board`'s top playing `exchanges` (commands and the
/// replies expected) at `cpb` clock cycles per bit.
fn testbench_text(
    board: Board,
    cpb: u32,
    exchanges: &[(Vec<u8>, Vec<u8>)],
    what: &str,
    generator: &str,
    params: &str,
) -> String {
    let name = testbench_name(board);
    let sent: Vec<u8> = exchanges.iter().flat_map(|(c, _)| c.clone()).collect();
    let expected: Vec<u8> = exchanges.iter().flat_map(|(_, r)| r.clone()).collect();
    let mut out = String::new();
    crate::top::header(
        &mut out,
        "//",
        generator,
        &format!(
            "Module {name}: smoke test of {} over its UART pins ({what})",
            board.top_name()
        ),
        params,
    );
    writeln!(out).unwrap();
    writeln!(out, "`default_nettype none").unwrap();
    writeln!(out).unwrap();
    writeln!(out, "module {name};").unwrap();
    writeln!(out, "  localparam CPB = {cpb};").unwrap();
    writeln!(out, "  localparam N_SENT = {};", sent.len()).unwrap();
    writeln!(out, "  localparam N_EXPECTED = {};", expected.len()).unwrap();
    writeln!(out, "  reg clk = 1'b0;").unwrap();
    writeln!(out, "  reg rx = 1'b1;").unwrap();
    writeln!(out, "  wire tx;").unwrap();
    device_under_test(&mut out, board);
    writeln!(out).unwrap();
    writeln!(out, "  always #1 clk = !clk;").unwrap();
    writeln!(out).unwrap();
    byte_tables(&mut out, exchanges, &sent, &expected);
    writeln!(out).unwrap();
    out.push_str(&host_processes(
        board,
        cpb,
        exchanges.len(),
        sent.len() + expected.len(),
    ));
    out
}

/// The board top, its UART pins on the host's `rx` and `tx`, its clock on
/// `clk`, its button released, every other output on a wire of its own.
fn device_under_test(out: &mut String, board: Board) {
    let (rx_port, tx_port) = board.uart_ports();
    let (button, pressed) = board.button();
    let outputs: Vec<&Pin> = board
        .pins()
        .iter()
        .filter(|p| p.dir == PinDir::Out)
        .collect();
    for p in &outputs {
        if p.port != tx_port {
            let range = if p.width() > 1 {
                format!(" [{}:0]", p.width() - 1)
            } else {
                String::new()
            };
            writeln!(out, "  wire{range} {}_unused;", p.port).unwrap();
        }
    }
    let mut conns = Vec::new();
    for p in board.pins() {
        let v = if p.port == board.clock_port() {
            "clk".to_string()
        } else if p.port == rx_port {
            "rx".to_string()
        } else if p.port == tx_port {
            "tx".to_string()
        } else if p.port == button {
            format!("1'b{}", u8::from(!pressed))
        } else {
            format!("{}_unused", p.port)
        };
        conns.push(format!("    .{} ({v})", p.port));
    }
    writeln!(out, "  {} dut (", board.top_name()).unwrap();
    writeln!(out, "{}", conns.join(",\n")).unwrap();
    writeln!(out, "  );").unwrap();
}

/// The bytes to send and to expect, and where each exchange ends in them.
fn byte_tables(out: &mut String, exchanges: &[(Vec<u8>, Vec<u8>)], sent: &[u8], expected: &[u8]) {
    writeln!(out, "  reg [7:0] sent [0:N_SENT-1];").unwrap();
    writeln!(out, "  reg [7:0] expected [0:N_EXPECTED-1];").unwrap();
    writeln!(
        out,
        "  // Where each command ends in `sent`, and its reply in `expected`."
    )
    .unwrap();
    writeln!(out, "  integer cmd_end [0:{}];", exchanges.len() - 1).unwrap();
    writeln!(out, "  integer reply_end [0:{}];", exchanges.len() - 1).unwrap();
    writeln!(out, "  integer got = 0;").unwrap();
    writeln!(out, "  integer errors = 0;").unwrap();
    writeln!(out, "  integer i, j, k;").unwrap();
    writeln!(out, "  reg [7:0] b;").unwrap();
    writeln!(out, "  initial begin").unwrap();
    bytes_init(out, "sent", sent);
    bytes_init(out, "expected", expected);
    let (mut c_end, mut r_end) = (0, 0);
    for (i, (c, r)) in exchanges.iter().enumerate() {
        c_end += c.len();
        r_end += r.len();
        writeln!(out, "    cmd_end[{i}] = {c_end};").unwrap();
        writeln!(out, "    reply_end[{i}] = {r_end};").unwrap();
    }
    writeln!(out, "  end").unwrap();
}

/// The host (commands bit by bit, one after another, each after the whole
/// reply to the one before), its receiver (checking each reply byte), and
/// the timeout; then the end of the module. `bytes` counts the bytes both
/// ways, for the timeout.
fn host_processes(board: Board, cpb: u32, exchanges: usize, bytes: usize) -> String {
    format!(
        r#"  // The host: after the PLL's lock (its simulation model's) and the
  // power-on reset, each command bit by bit, then wait for its whole reply.
  initial begin
    repeat ({por}) @(posedge clk);
    i = 0;
    for (j = 0; j < {n}; j = j + 1) begin
      while (i < cmd_end[j]) begin
        rx = 1'b0;
        repeat (CPB) @(posedge clk);
        for (k = 0; k < 8; k = k + 1) begin
          rx = sent[i][k];
          repeat (CPB) @(posedge clk);
        end
        rx = 1'b1;
        repeat (CPB) @(posedge clk);
        i = i + 1;
      end
      while (got < reply_end[j]) @(posedge clk);
    end
    repeat (4 * CPB) @(posedge clk);
    if (errors == 0 && got == N_EXPECTED) begin
      $display("PASS: {top}: %0d reply bytes as expected", got);
      $finish;
    end else begin
      // A non-zero exit status, so scripts and FuseSoC see the failure.
      $fatal(1, "FAIL: {top}: %0d errors, %0d of %0d reply bytes", errors, got, N_EXPECTED);
    end
  end

  // The host's receiver: a falling edge starts a byte; bits are sampled in
  // their middle.
  initial begin : receiver
    integer n;
    forever begin
      @(negedge tx);
      repeat (CPB / 2) @(posedge clk);
      for (n = 0; n < 8; n = n + 1) begin
        repeat (CPB) @(posedge clk);
        b[n] = tx;
      end
      repeat (CPB) @(posedge clk);
      if (tx !== 1'b1) begin
        $display("FAIL: framing error in reply byte %0d", got);
        errors = errors + 1;
      end
      if (got >= N_EXPECTED) begin
        $display("FAIL: unexpected reply byte %h", b);
        errors = errors + 1;
      end else if (b !== expected[got]) begin
        $display("FAIL: reply byte %0d is %h, expected %h", got, b, expected[got]);
        errors = errors + 1;
      end
      got = got + 1;
    end
  end

  // Give up if the replies do not come.
  initial begin
    repeat ({limit}) @(posedge clk);
    $fatal(1, "FAIL: {top}: timeout, %0d of %0d reply bytes", got, N_EXPECTED);
  end
endmodule

`default_nettype wire
"#,
        por = crate::top::SIM_RESET_CYCLES + 16,
        n = exchanges,
        top = board.top_name(),
        limit = crate::top::SIM_RESET_CYCLES + 16 + 20 * cpb as u64 * bytes as u64,
    )
}

/// The FuseSoC core of a board build (`systole:generated:<board>`): its
/// files, and targets of its own, so a build folder runs as it is
/// (`fusesoc --cores-root DIR run --target sim systole:generated:<board>`):
/// `lint` (Verilator, all warnings, with the waiver file), `sim` (the smoke
/// test under Icarus) and the bitstream target named after the board. The
/// repository's `systole.core` has the same targets over a build its
/// generator makes (which renames this core); `tb/tests/fusesoc.rs` checks
/// the two agree.
pub fn core_file(clock: &CoreClock, sources: &[String], generator: &str, params: &str) -> String {
    let board = clock.board();
    let mut out = String::new();
    writeln!(out, "CAPI=2:").unwrap();
    writeln!(out, "# Generated by {generator}. Do not edit.").unwrap();
    writeln!(out, "# Design parameters: {params}").unwrap();
    writeln!(out, "name: systole:generated:{}:0.1.0", board.name()).unwrap();
    writeln!(
        out,
        "description: Systole board build for the {}",
        board.description()
    )
    .unwrap();
    writeln!(out).unwrap();
    writeln!(out, "filesets:").unwrap();
    writeln!(out, "  rtl:").unwrap();
    writeln!(out, "    files:").unwrap();
    for s in sources {
        writeln!(out, "      - {s}").unwrap();
    }
    writeln!(out, "    file_type: verilogSource").unwrap();
    // Simulators and Verilator's lint only: synthesis maps the PLL instance
    // to the real primitive.
    writeln!(out, "  pll_model:").unwrap();
    writeln!(out, "    files:").unwrap();
    writeln!(out, "      - {}", crate::pll::SIM_MODEL_FILE).unwrap();
    writeln!(out, "    file_type: verilogSource").unwrap();
    writeln!(out, "  waivers:").unwrap();
    writeln!(out, "    files:").unwrap();
    writeln!(out, "      - {}", hw::emit::WAIVER_FILE).unwrap();
    writeln!(out, "    file_type: vlt").unwrap();
    writeln!(out, "  smoke_test:").unwrap();
    writeln!(out, "    files:").unwrap();
    writeln!(out, "      - {}.v", testbench_name(board)).unwrap();
    writeln!(out, "    file_type: verilogSource").unwrap();
    writeln!(out, "  constraints:").unwrap();
    writeln!(out, "    files:").unwrap();
    writeln!(out, "      - {}", board.constraint_file()).unwrap();
    let ctype = match board {
        Board::IceBreaker => "PCF",
        Board::Ulx3s => "LPF",
        Board::TangNano20k | Board::TangNano9k => "CST",
    };
    writeln!(out, "    file_type: {ctype}").unwrap();
    // Read by edalize's Yosys script after the Verilog: replaces its `synth`
    // procedure with the board recipe (DSP budget; no ice40_dsp).
    writeln!(out, "  synth_recipe:").unwrap();
    writeln!(out, "    files:").unwrap();
    writeln!(out, "      - {}", crate::yosys::tcl_name(board)).unwrap();
    writeln!(out, "    file_type: tclSource").unwrap();
    writeln!(out).unwrap();
    let top = board.top_name();
    let (bitstream_flag, bitstream_tool_options) = fusesoc_bitstream_tool(clock);
    writeln!(out, "targets:").unwrap();
    // As a dependency a core contributes its default target; FuseSoC's
    // tool_* and target_* flags pick the filesets the using target needs.
    writeln!(out, "  default:").unwrap();
    writeln!(out, "    filesets:").unwrap();
    writeln!(out, "      - rtl").unwrap();
    writeln!(out, "      - \"!{bitstream_flag} ? (pll_model)\"").unwrap();
    writeln!(out, "      - \"tool_verilator ? (waivers)\"").unwrap();
    writeln!(out, "      - \"target_sim ? (smoke_test)\"").unwrap();
    writeln!(out, "      - \"{bitstream_flag} ? (constraints)\"").unwrap();
    writeln!(out, "      - \"{bitstream_flag} ? (synth_recipe)\"").unwrap();
    writeln!(out).unwrap();
    writeln!(out, "  lint:").unwrap();
    writeln!(out, "    description: {FUSESOC_LINT_DESCRIPTION}").unwrap();
    writeln!(out, "    filesets: [rtl, pll_model, waivers]").unwrap();
    writeln!(out, "    toplevel: {top}").unwrap();
    out.push_str(FUSESOC_LINT_TOOL);
    writeln!(out).unwrap();
    writeln!(out, "  sim:").unwrap();
    writeln!(out, "    description: {FUSESOC_SIM_DESCRIPTION}").unwrap();
    writeln!(out, "    filesets: [rtl, pll_model, smoke_test]").unwrap();
    writeln!(out, "    toplevel: {}", testbench_name(board)).unwrap();
    out.push_str(FUSESOC_SIM_TOOL);
    writeln!(out).unwrap();
    writeln!(out, "  {}:", board.name()).unwrap();
    writeln!(
        out,
        "    description: {}",
        fusesoc_bitstream_description(clock)
    )
    .unwrap();
    writeln!(out, "    filesets: [rtl, constraints, synth_recipe]").unwrap();
    writeln!(out, "    toplevel: {top}").unwrap();
    out.push_str(&bitstream_tool_options);
    out
}

/// The FuseSoC targets' descriptions and tool sections, as `systole.core`
/// has them too (the tool sections from `default_tool` on, indented for a
/// target).
const FUSESOC_LINT_DESCRIPTION: &str =
    "Verilator lint (all warnings) of the board build, with its waiver file";
const FUSESOC_LINT_TOOL: &str = "    default_tool: verilator
    tools:
      verilator:
        mode: lint-only
        verilator_options:
          - -Wall
";
const FUSESOC_SIM_DESCRIPTION: &str =
    "Icarus Verilog smoke test of the board top over its UART pins (fails on a wrong reply)";
const FUSESOC_SIM_TOOL: &str = "    default_tool: icarus
    tools:
      icarus:
        iverilog_options:
          - -g2005
";

fn fusesoc_bitstream_description(clock: &CoreClock) -> String {
    match clock.board() {
        Board::IceBreaker => format!(
            "iCEBreaker bitstream (iCE40 UP5K-SG48, core at {} MHz from the PLL) with Yosys and nextpnr-ice40",
            clock.mhz_text()
        ),
        Board::Ulx3s => format!(
            "ULX3S bitstream (ECP5 LFE5U-85F, core at {} MHz from the PLL) with Yosys and nextpnr-ecp5",
            clock.mhz_text()
        ),
        Board::TangNano20k => format!(
            "Tang Nano 20K bitstream (Gowin GW2AR-18, core at {} MHz from the PLL) with Yosys, nextpnr-himbaechel and gowin_pack",
            clock.mhz_text()
        ),
        Board::TangNano9k => format!(
            "Tang Nano 9K bitstream (Gowin GW1NR-9, core at {} MHz from the PLL) with Yosys, nextpnr-himbaechel and gowin_pack",
            clock.mhz_text()
        ),
    }
}

/// The FuseSoC flag set while a board's bitstream target runs, and the
/// target's tool (or flow) section: the part, the package and the core
/// clock, the PLL's output, for nextpnr (which also derives it from the
/// oscillator's constraint on iCE40 and ECP5). The Gowin boards use
/// edalize's `apicula` flow, whose `board` option names the part and its
/// family for nextpnr-himbaechel and gowin_pack (its older `apicula` tool
/// runs the nextpnr-gowin that nextpnr no longer has); a flow sets no
/// tool_* flag, so the target's own flag picks the filesets.
fn fusesoc_bitstream_tool(clock: &CoreClock) -> (String, String) {
    let mhz = clock.mhz_text();
    let (flag, section) = match clock.board() {
        board @ (Board::TangNano20k | Board::TangNano9k) => {
            return (
                format!("target_{}", board.name()),
                format!(
                    "    flow: apicula
    flow_options:
      board: {}
      nextpnr_options:
        - --freq
        - \"{mhz}\"
",
                    board.name()
                ),
            )
        }
        Board::IceBreaker => (
            "icestorm",
            format!(
                "    default_tool: icestorm
    tools:
      icestorm:
        pnr: next
        nextpnr_options:
          - --up5k
          - --package
          - sg48
          - --freq
          - \"{mhz}\"
"
            ),
        ),
        Board::Ulx3s => (
            "trellis",
            format!(
                "    default_tool: trellis
    tools:
      trellis:
        nextpnr_options:
          - --85k
          - --package
          - CABGA381
          - --speed
          - \"6\"
          - --freq
          - \"{mhz}\"
"
            ),
        ),
    };
    (format!("tool_{flag}"), section)
}

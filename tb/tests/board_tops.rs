//! Every board build's Verilog (board top, bridge, UARTs, MXU) passes the
//! tools users run it through: `verilator --lint-only -Wall` with the waiver
//! file, `iverilog -g2005`, and a Yosys synthesis that infers no latch.

use board::{Board, BridgeConfig};
use config::{ElemType, MxuConfig};
use rstest::rstest;
use tb::tools;

fn board_build(board: Board, mxu: MxuConfig, baud: u32) -> board::BoardBuild {
    let cpb = board::clocks_per_bit(board.clock_hz(), baud).unwrap();
    let cfg = BridgeConfig::new(mxu, cpb, board.defaults().act_rows).unwrap();
    let header = hw::Header {
        generator: "systole-tb".into(),
        params: board::board_params(board, &cfg, baud),
    };
    board::build_board(board, &cfg, &header).unwrap()
}

#[rstest]
#[case::icebreaker_default(Board::IceBreaker, None)]
#[case::ulx3s_default(Board::Ulx3s, None)]
#[case::icebreaker_bf16(Board::IceBreaker, Some((2, 3, ElemType::Bf16, 32)))]
#[case::ulx3s_int8_odd(Board::Ulx3s, Some((5, 3, ElemType::Int8, 64)))]
#[case::icebreaker_1x1(Board::IceBreaker, Some((1, 1, ElemType::Int8, 2)))]
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
fn the_file_list_puts_the_board_top_last_and_every_source_in_it() {
    for board in Board::ALL {
        let built = board_build(board, board.default_mxu(), board::DEFAULT_BAUD);
        let list = built
            .files
            .iter()
            .find(|f| f.name == hw::emit::FILE_LIST)
            .expect("files.f");
        let names: Vec<&str> = list.text.lines().collect();
        let sources: Vec<&str> = built
            .files
            .iter()
            .filter(|f| f.module.is_some())
            .map(|f| f.name.as_str())
            .collect();
        assert_eq!(names, sources, "{board}");
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
    let cpb = board::clocks_per_bit(board.clock_hz(), board::DEFAULT_BAUD).unwrap();
    let d = board.tensorcore_defaults().unwrap();
    let cfg = board::TcBridgeConfig::new(core, cpb, d.program_words, d.input_rows, d.output_rows)
        .unwrap();
    let header = hw::Header {
        generator: "systole-tb".into(),
        params: board::tc_board_params(board, &cfg, board::DEFAULT_BAUD),
    };
    board::build_tc_board(board, &cfg, &header).unwrap()
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
    assert!(board::build_tc_board(Board::IceBreaker, &cfg, &header).is_err());
}

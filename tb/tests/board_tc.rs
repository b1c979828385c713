//! The host library against the Verilated ULX3S TensorCore board top, at the
//! UART wire level.
//!
//! The board top (power-on reset, TensorCore bridge, UARTs, the TensorCore
//! beside it) runs under Verilator; [`WireUart`] drives the top's receive
//! pin bit by bit and decodes its transmit pin with mid-bit sampling. The
//! same `host::Client` that talks to a board over a serial port compiles
//! models for the core TC_INFO reports and runs them: the logits are checked
//! bit for bit against the golden TensorCore and numpy's reference, and the
//! core's counters, read back over the wire, against the golden cycle model.
//! A small core and few clocks per bit keep it fast.

use board::{Board, TcBridgeConfig};
use compiler::Mlp;
use config::TensorCoreConfig;
use host::protocol::{status, Opcode};
use host::{Client, CoreKind, HostError};
use rand::Rng;
use std::path::Path;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;
use tb::board::{PtyBoard, WireUart};
use tb::seed::rng_for;

/// Clocks per bit in the simulations.
const CPB: u32 = 8;

/// Reply latency allowance for the simulated link (in simulated time).
const LATENCY: Duration = Duration::from_millis(2);

const BOARD: Board = Board::Ulx3s;

/// The core and bridge the tests use: 4x4 at the board build's pipeline
/// depth, memories just large enough for the digits MLP (864 weight rows,
/// 19 bias rows) in blocks of 10 images.
fn small() -> TcBridgeConfig {
    let core = TensorCoreConfig::with(4, 4, 64, 256, 1024, 32, 4)
        .and_then(|core| core.with_depth(BOARD.tensorcore_defaults().unwrap().core.depth()))
        .unwrap();
    TcBridgeConfig::new(core, CPB, 1024, 256, 64).unwrap()
}

/// The Verilated top of the ULX3S with the TensorCore bridge `cfg`, behind a
/// wire.
fn wire(cfg: &TcBridgeConfig) -> WireUart {
    let clock =
        board::CoreClock::new(BOARD, BOARD.tensorcore_defaults().unwrap().core_mhz).unwrap();
    let header = hw::Header {
        generator: "systole-tb".into(),
        params: board::tc_board_params(&clock, cfg, clock.hz_u32() / cfg.clocks_per_bit()),
    };
    let built = board::build_tc_board(&clock, cfg, &header).unwrap_or_else(|e| panic!("{e}"));
    WireUart::new(BOARD, tb::board::model(BOARD, &built), cfg.clocks_per_bit())
}

/// The tests that talk through a pseudo-terminal wait for replies in real
/// time, as on a real port, so they run with no other simulation beside
/// them (a simulated board sharing the cores with others can miss a reply
/// timeout); the wire-level tests keep no clock and share.
static SIMULATIONS: RwLock<()> = RwLock::new(());

/// A wire-level test's share of the machine.
fn shared() -> RwLockReadGuard<'static, ()> {
    SIMULATIONS.read().unwrap_or_else(|e| e.into_inner())
}

/// A real-time test's whole machine.
fn real_time() -> RwLockWriteGuard<'static, ()> {
    SIMULATIONS.write().unwrap_or_else(|e| e.into_inner())
}

fn connect(cfg: &TcBridgeConfig) -> Client<WireUart> {
    Client::connect_with(wire(cfg), LATENCY).unwrap_or_else(|e| panic!("connect: {e}"))
}

fn refused<T: std::fmt::Debug>(r: Result<T, HostError>) -> u8 {
    match r {
        Err(HostError::Refused { status, .. }) => status,
        other => panic!("expected an error reply, got {other:?}"),
    }
}

/// Runs `mlp` on `x` on the board and on the golden TensorCore; the logits
/// must agree, and with one run the counters must be the golden cycle
/// model's.
fn agree(client: &mut Client<WireUart>, mlp: &Mlp, x: &[i8], batch: usize, what: &str) -> Vec<i32> {
    let cfg = small().core();
    let run = client
        .run_mlp(mlp, x, batch)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let (logits, stats, _) = sim::drivers::tensorcore::run_golden(&cfg, mlp, x, batch).unwrap();
    assert_eq!(run.logits, logits, "{what}: logits differ from golden");
    println!(
        "{what}: {} run(s), {} cycles on the board, {} in the golden model",
        run.runs,
        run.counters.cycles(),
        stats.cycles
    );
    if run.runs == 1 {
        let k = run.counters;
        assert_eq!(
            [
                k.cycles(),
                k.mxu_busy,
                k.stall_weights,
                k.stall_ub,
                k.stall_vpu,
                k.host,
                k.issue,
                k.sync,
                k.instructions,
                k.act_rows,
                k.act_drain
            ],
            [
                stats.cycles,
                stats.mxu_busy,
                stats.stall_weights,
                stats.stall_ub,
                stats.stall_vpu,
                stats.host,
                stats.issue,
                stats.sync,
                stats.instructions,
                stats.act_rows,
                stats.act_drain
            ],
            "{what}: the board's counters differ from the golden cycle model"
        );
    }
    run.logits
}

#[test]
fn status_and_tc_info_describe_the_core_and_the_bridge() {
    let _share = shared();
    let cfg = small();
    let mut client = connect(&cfg);
    let info = client.info();
    assert_eq!(info.core, CoreKind::TensorCore);
    assert_eq!(info.version, host::protocol::VERSION_TC);
    assert_eq!(
        (info.rows, info.cols, info.acc_rows, info.act_rows),
        (4, 4, 64, 256)
    );
    let t = client.tc_info().unwrap();
    assert_eq!(t.core().unwrap(), cfg.core());
    assert_eq!(
        (t.program_words, t.input_rows, t.output_rows),
        (1024, 256, 64)
    );
    let s = client.status().unwrap();
    assert_eq!(s.flags, 0, "no error flag after a clean start");
}

#[test]
fn digits_images_through_the_uart_match_golden_and_numpy() {
    let _share = shared();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/digits");
    let mlp = compiler::load_model(&dir).unwrap();
    let x: matrix::Matrix<i8> = matrix::read(&dir.join("x_test.npy"), "X").unwrap();
    let expect: matrix::Array<i32> =
        matrix::read_array(&dir.join("logits_numpy.npy"), "logits").unwrap();
    let n = 10;
    let mut client = connect(&small());
    let logits = agree(&mut client, &mlp, &x.data[..n * x.cols], n, "digits");
    assert_eq!(
        logits,
        expect.data[..n * mlp.outputs()],
        "digits logits differ from numpy's"
    );
    // 20 images: more than the 256-row input window holds (16 rows each),
    // so several runs, the last with a program of its own.
    let m = 20;
    let run = client.run_mlp(&mlp, &x.data[..m * x.cols], m).unwrap();
    assert!(run.runs >= 2, "{} runs", run.runs);
    assert_eq!(run.logits, expect.data[..m * mlp.outputs()]);
}

#[test]
fn random_small_mlps_through_the_uart_match_golden() {
    let _share = shared();
    let mut rng = rng_for("random_small_mlps_through_the_uart_match_golden");
    let mut client = connect(&small());
    for round in 0..2 {
        let (mlp, sizes) = tb::tensorcore::random_mlp(&mut rng, 3, 12);
        let batch = rng.gen_range(1..=7);
        let x: Vec<i8> = (0..batch * sizes[0]).map(|_| rng.gen()).collect();
        agree(
            &mut client,
            &mlp,
            &x,
            batch,
            &format!("round {round}, sizes {sizes:?}, batch {batch}"),
        );
    }
}

#[test]
fn refusals_and_bad_commands_get_error_replies_and_the_link_stays_in_sync() {
    let _share = shared();
    let cfg = small();
    let mut client = connect(&cfg);
    // A model whose weights do not fit the 1024-row weight memory.
    let mut rng = rng_for("refusals_and_bad_commands");
    let big = Mlp::new(vec![tb::tensorcore::random_layer(&mut rng, 64, 80, false)]).unwrap();
    match client.run_mlp(&big, &[0i8; 64], 1) {
        Err(HostError::Shape(m)) => {
            assert!(
                m.contains("does not fit") && m.contains("weight memory"),
                "{m}"
            );
            assert!(!m.contains('\n'), "{m}");
        }
        other => panic!("a model too big was not refused: {other:?}"),
    }
    // MXU commands are unknown to the TensorCore bridge.
    assert_eq!(
        refused(client.command(Opcode::Matmul as u8, [0, 1, 0], &[], 0)),
        status::BAD_OPCODE
    );
    assert_eq!(
        refused(client.command(0x7F, [0; 3], &[], 0)),
        status::BAD_OPCODE
    );
    // Rows outside a memory, and a count of zero: refused, payload dropped.
    assert_eq!(
        refused(client.write_input(250, &[1i8; 4 * 8])),
        status::BAD_RANGE
    );
    assert_eq!(refused(client.read_output(60, 8)), status::BAD_RANGE);
    assert_eq!(
        refused(client.write_bias(31, &[0i32; 8])),
        status::BAD_RANGE
    );
    assert_eq!(
        refused(client.command(Opcode::WriteWeights as u8, [0, 0, 0], &[], 0)),
        status::BAD_RANGE
    );
    // RUN: no words, too many words, a zero limit.
    assert_eq!(refused(client.run(0, 100)), status::BAD_RANGE);
    assert_eq!(refused(client.run(1025, 100)), status::BAD_RANGE);
    assert_eq!(refused(client.run(1, 0)), status::BAD_RANGE);
    // A program without HALT overruns its limit; one with an unknown opcode
    // halts with the core's error flag.
    use config::tensorcore_isa::Instr;
    client.write_program(0, &[Instr::Sync.encode()]).unwrap();
    assert_eq!(refused(client.run(1, 500)), status::RUN_TIMEOUT);
    client
        .write_program(0, &[0xF, Instr::Halt.encode()])
        .unwrap();
    assert_eq!(refused(client.run(2, 500)), status::CORE_ERROR);
    // SYNC then HALT: halts within a few cycles, and the counters say so.
    client
        .write_program(0, &[Instr::Sync.encode(), Instr::Halt.encode()])
        .unwrap();
    client.run(2, 100).unwrap();
    let k = client.read_counters().unwrap();
    assert_eq!((k.instructions, k.cycles()), (2, 2), "{k:?}");
    // A limit one cycle short of the run is refused, the exact one passes:
    // the limit counts the cycles from the first word's issue to HALT's flag.
    assert_eq!(refused(client.run(2, 2)), status::RUN_TIMEOUT);
    client.run(2, 3).unwrap();
    // Still in step: a model runs after all that.
    let status = client.status().unwrap();
    assert_eq!(status.flags, 0, "{:?}", status.errors());
    let mlp = Mlp::new(vec![tb::tensorcore::random_layer(&mut rng, 5, 3, false)]).unwrap();
    let x: Vec<i8> = (0..10).map(|_| rng.gen()).collect();
    agree(&mut client, &mlp, &x, 2, "after the refusals");
}

/// The digits model, its inputs and numpy's logits.
fn digits() -> (
    std::path::PathBuf,
    Mlp,
    matrix::Matrix<i8>,
    matrix::Array<i32>,
) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/digits");
    let mlp = compiler::load_model(&dir).unwrap();
    let x: matrix::Matrix<i8> = matrix::read(&dir.join("x_test.npy"), "X").unwrap();
    let expect: matrix::Array<i32> =
        matrix::read_array(&dir.join("logits_numpy.npy"), "logits").unwrap();
    (dir, mlp, x, expect)
}

#[test]
fn run_mlp_over_a_serial_port_through_a_pseudo_terminal() {
    let _alone = real_time();
    // The host side: `SerialTransport` on the slave end, with its real-time
    // reply timeouts (RUN's from the cycle limit), as on a real port.
    let board = PtyBoard::start(wire(&small()));
    let link = host::SerialTransport::open(board.path(), 115_200).unwrap();
    let mut client = Client::connect(link).unwrap_or_else(|e| panic!("connect: {e}"));
    assert_eq!(client.info().core, CoreKind::TensorCore);
    let (_, mlp, x, expect) = digits();
    let n = 3;
    let run = client
        .run_mlp(&mlp, &x.data[..n * x.cols], n)
        .unwrap_or_else(|e| panic!("through a pty: {e}"));
    assert_eq!(run.logits, expect.data[..n * mlp.outputs()]);
}

/// The `systole-host` binary of this build's profile, built if it is not
/// there (`cargo test -p tb` alone does not build other packages' binaries).
fn systole_host() -> std::path::PathBuf {
    // This test runs from <target>/<profile folder>/deps/.
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO"));
    cmd.args(["build", "--quiet", "-p", "host", "--bin", "systole-host"]);
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    let status = cmd.status().expect("cargo runs");
    assert!(
        status.success(),
        "cargo build -p host --bin systole-host failed"
    );
    let bin = profile_dir.join("systole-host");
    assert!(bin.exists(), "no {}", bin.display());
    bin
}

#[test]
fn the_systole_host_binary_runs_the_digits_model_through_a_pseudo_terminal() {
    // What a user types, end to end: `systole-host mlp` on a serial port,
    // .npy in and out, against numpy's logits; then `info`.
    let _alone = real_time();
    let bin = systole_host();
    let board = PtyBoard::start(wire(&small()));
    let (dir, mlp, x, expect) = digits();
    let n = 4;
    let tmp = tempfile::tempdir().unwrap();
    let x_path = tmp.path().join("x.npy");
    let out = tmp.path().join("logits.npy");
    let rows = matrix::Matrix {
        rows: n,
        cols: x.cols,
        data: x.data[..n * x.cols].to_vec(),
    };
    matrix::write(&x_path, &rows).unwrap();
    let run = std::process::Command::new(&bin)
        .args(["mlp", "--port", board.path(), "--model"])
        .arg(&dir)
        .arg("--x")
        .arg(&x_path)
        .arg("--out")
        .arg(&out)
        .arg("--stats")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "systole-host mlp failed: {stderr}");
    let logits: matrix::Array<i32> = matrix::read_array(&out, "logits").unwrap();
    assert_eq!(logits.shape, vec![n as u64, mlp.outputs() as u64]);
    assert_eq!(logits.data, expect.data[..n * mlp.outputs()]);
    let stats: serde_json::Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("--stats is not one JSON line ({e}): {stdout}"));
    assert!(stats["cycles"].as_u64().unwrap_or(0) > 0, "{stdout}");
    let info = std::process::Command::new(&bin)
        .args(["info", "--port", board.path()])
        .output()
        .unwrap();
    assert!(
        info.status.success(),
        "{}",
        String::from_utf8_lossy(&info.stderr)
    );
}

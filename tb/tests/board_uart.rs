//! The host library against the Verilated board tops, at the UART wire level.
//!
//! The board top (power-on reset, bridge, UARTs, MXU) runs under Verilator;
//! [`WireUart`] is a `host::Transport` that drives the top's receive pin bit by
//! bit and decodes its transmit pin with mid-bit sampling, cycle by cycle. The
//! same `host::Client` that talks to a real board over a serial port then
//! multiplies matrices of any shape, and every result is checked bit for bit
//! against the golden model. A small number of clocks per bit keeps it fast.

use board::{Board, BridgeConfig};
use config::{ElemType, MxuConfig};
use host::protocol::{flags, status};
use host::{Client, HostError, Transport};
use rand::Rng;
use std::time::Duration;
use tb::board::{PtyBoard, WireUart};
use tb::mxu::{random_bf16, random_i8};
use tb::seed::rng_for;

/// Clocks per bit in the simulations (1.5 Mbaud on the iCEBreaker's 12 MHz).
const CPB: u32 = 8;

/// Reply latency allowance for the simulated link (in simulated time).
const LATENCY: Duration = Duration::from_millis(2);

/// The Verilated top of `board` with the bridge for `cfg`, behind a wire.
fn wire(board: Board, cfg: &BridgeConfig) -> WireUart {
    let clock = board::CoreClock::new(board, board.defaults().core_mhz).unwrap();
    let header = hw::Header {
        generator: "systole-tb".into(),
        params: board::board_params(&clock, cfg, clock.hz_u32() / cfg.clocks_per_bit()),
    };
    let built = board::build_board(&clock, cfg, &header).unwrap_or_else(|e| panic!("{e}"));
    WireUart::new(board, tb::board::model(board, &built), cfg.clocks_per_bit())
}

fn bridge(rows: u32, cols: u32, dtype: ElemType, acc_rows: u32, act_rows: u32) -> BridgeConfig {
    let mxu = MxuConfig::with_acc_rows(rows, cols, dtype, acc_rows).unwrap();
    BridgeConfig::new(mxu, CPB, act_rows).unwrap()
}

/// The configuration most tests use: int8 4x4 with small buffers, so that
/// matrices a little larger than the array need several blocks of rows,
/// groups of n-tiles and re-sent activations.
fn small_int8() -> BridgeConfig {
    bridge(4, 4, ElemType::Int8, 16, 32)
}

fn connect(board: Board, cfg: &BridgeConfig) -> Client<WireUart> {
    let wire = wire(board, cfg);
    Client::connect_with(wire, LATENCY).unwrap_or_else(|e| panic!("connect: {e}"))
}

fn check_int8<T: Transport>(
    client: &mut Client<T>,
    a: &[i8],
    b: &[i8],
    dims: (usize, usize, usize),
    what: &str,
) {
    let (m, k, n) = dims;
    let expected = golden::matmul_int8(a, b, m, k, n);
    let got = client
        .matmul_int8(a, b, dims)
        .unwrap_or_else(|e| panic!("{what} (M={m} K={k} N={n}): {e}"));
    assert_eq!(got, expected, "{what}: C differs (M={m} K={k} N={n})");
}

#[test]
fn status_reports_the_array_and_buffers() {
    let cfg = small_int8();
    let mut client = connect(Board::IceBreaker, &cfg);
    let info = client.info();
    assert_eq!((info.rows, info.cols), (4, 4));
    assert_eq!(info.dtype, ElemType::Int8);
    assert_eq!((info.acc_rows, info.act_rows), (16, 32));
    assert_eq!(info.clocks_per_bit as u32, CPB);
    assert_eq!(info.max_queued as u32, board::protocol::MAX_QUEUED_TILES);
    let st = client.status().unwrap();
    assert_eq!((st.queued, st.flags), (0, 0), "{st:?}");
}

/// `rounds` random int8 matmuls of up to 40 x 14 x 14 (more rows than the
/// small buffers hold), each checked against the golden model.
fn random_int8_rounds<T: Transport>(client: &mut Client<T>, rng: &mut impl Rng, rounds: usize) {
    for round in 0..rounds {
        let m = rng.gen_range(1..=40);
        let k = rng.gen_range(1..=14);
        let n = rng.gen_range(1..=14);
        let a = random_i8(rng, m * k);
        let b = random_i8(rng, k * n);
        check_int8(client, &a, &b, (m, k, n), &format!("random round {round}"));
    }
}

#[test]
fn int8_matmuls_through_the_uart_match_golden() {
    let cfg = small_int8();
    let mut client = connect(Board::IceBreaker, &cfg);
    let mut rng = rng_for("board_uart_int8");
    // Directed: extremes, zeros, identity, shapes at, below and above the
    // array and beyond both buffers (M > 16 accumulator rows, K tiles that do
    // not all fit the 32-row activation buffer).
    for (m, k, n) in [(1, 1, 1), (4, 4, 4), (3, 5, 6), (17, 9, 7), (9, 13, 2)] {
        let name = |s: &str| format!("{s} {m}x{k}x{n}");
        check_int8(
            &mut client,
            &vec![-128; m * k],
            &vec![-128; k * n],
            (m, k, n),
            &name("-128 x -128"),
        );
        check_int8(
            &mut client,
            &vec![127; m * k],
            &vec![-128; k * n],
            (m, k, n),
            &name("127 x -128"),
        );
        check_int8(
            &mut client,
            &vec![0; m * k],
            &vec![0; k * n],
            (m, k, n),
            &name("zeros"),
        );
        if k == n {
            let a: Vec<i8> = (0..m * k).map(|i| (i as i64 * 37 - 100) as i8).collect();
            let ident: Vec<i8> = (0..k * n).map(|i| (i / n == i % n) as i8).collect();
            check_int8(&mut client, &a, &ident, (m, k, n), &name("A x I"));
        }
    }
    random_int8_rounds(&mut client, &mut rng, 6);
    // Nothing went wrong on the wire along the way.
    let st = client.status().unwrap();
    assert_eq!((st.queued, st.flags), (0, 0), "{st:?}");
    assert_eq!(client.link_mut().framing_errors, 0);
}

/// At depth 5 the MXU answers a read two cycles after it (TIMING.md R1);
/// the bridge waits for `acc_rd_valid_o`, so the same matmuls come back.
#[test]
fn a_depth_5_array_whose_reads_answer_later_still_matches_golden() {
    let mxu = MxuConfig::with_acc_rows(4, 4, ElemType::Int8, 16)
        .and_then(|c| c.with_depth(5))
        .unwrap();
    let cfg = BridgeConfig::new(mxu, CPB, 32).unwrap();
    let mut client = connect(Board::Ulx3s, &cfg);
    let mut rng = rng_for("board_uart_int8_depth5");
    check_int8(
        &mut client,
        &[-128; 17 * 9],
        &[-128; 9 * 7],
        (17, 9, 7),
        "-128 x -128 17x9x7",
    );
    random_int8_rounds(&mut client, &mut rng, 3);
}

#[test]
fn bf16_matmuls_through_the_uart_match_golden() {
    // The ULX3S top this time, with a bf16 3x2 array and small buffers.
    let cfg = bridge(3, 2, ElemType::Bf16, 8, 16);
    let mut client = connect(Board::Ulx3s, &cfg);
    let r = 3;
    let mut rng = rng_for("board_uart_bf16");
    let check = |client: &mut Client<WireUart>, a: &[u16], b: &[u16], (m, k, n), what: &str| {
        let expected = golden::matmul_bf16(a, b, m, k, n, r);
        let got = client
            .matmul_bf16(a, b, (m, k, n))
            .unwrap_or_else(|e| panic!("{what} (M={m} K={k} N={n}): {e}"));
        for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
            assert_eq!(
                g,
                e,
                "{what}: C[{}][{}] = {g:#010x}, golden {e:#010x} (M={m} K={k} N={n})",
                i / n,
                i % n
            );
        }
    };
    // Directed: ones (exact sums), infinities meeting zeros (NaN), and
    // cancellation across k-tiles (1e30 - 1e30 + 1).
    let (m, k, n) = (5, 7, 3);
    check(
        &mut client,
        &vec![0x3F80; m * k],
        &vec![0x3F80; k * n],
        (m, k, n),
        "ones",
    );
    let mut a = vec![0x3F80u16; m * k];
    a[0] = 0x7F80;
    let mut b = vec![0x0000u16; k * n];
    b[n] = 0x3F80;
    check(&mut client, &a, &b, (m, k, n), "inf x 0");
    let (m, k, n) = (2, 7, 1);
    let a = vec![0x3F80u16; m * k];
    let b = vec![0x7149, 0x3F80, 0x3F80, 0xF149, 0x3F80, 0x0000, 0x8000];
    check(&mut client, &a, &b, (m, k, n), "cancellation");
    for round in 0..6 {
        let m = rng.gen_range(1..=20);
        let k = rng.gen_range(1..=10);
        let n = rng.gen_range(1..=6);
        let a: Vec<u16> = (0..m * k).map(|_| random_bf16(&mut rng)).collect();
        let b: Vec<u16> = (0..k * n).map(|_| random_bf16(&mut rng)).collect();
        check(
            &mut client,
            &a,
            &b,
            (m, k, n),
            &format!("random round {round}"),
        );
    }
    assert_eq!(client.link_mut().framing_errors, 0);
}

#[test]
fn the_activation_buffer_reads_back_what_was_written() {
    let cfg = small_int8();
    let mut client = connect(Board::IceBreaker, &cfg);
    let mut rng = rng_for("board_uart_act_buffer");
    let rows: Vec<u16> = (0..32 * 4).map(|_| rng.gen::<u8>() as u16).collect();
    client.write_act(0, &rows).unwrap();
    assert_eq!(client.read_act(0, 32).unwrap(), rows);
    client.write_act(30, &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
    assert_eq!(
        client.read_act(29, 3).unwrap()[4..],
        [1, 2, 3, 4, 5, 6, 7, 8]
    );
}

fn refused(r: Result<impl std::fmt::Debug, HostError>) -> u8 {
    match r {
        Err(HostError::Refused { status, .. }) => status,
        other => panic!("expected an error reply, got {other:?}"),
    }
}

#[test]
fn bad_commands_get_error_replies_and_the_link_stays_in_sync() {
    let cfg = small_int8();
    let mut client = connect(Board::IceBreaker, &cfg);
    // Unknown opcodes.
    for op in [0x00, 0x08, 0x5A, 0xFF] {
        assert_eq!(
            refused(client.command(op, [0; 3], &[], 0)),
            status::BAD_OPCODE
        );
    }
    // Counts of zero and rows outside the buffers (32 activation rows, 16
    // accumulator rows). A refused WRITE_ACT's payload is still consumed.
    assert_eq!(refused(client.write_act(29, &[0; 16])), status::BAD_RANGE);
    assert_eq!(
        refused(client.command(0x02, [0, 0, 0], &[], 0)),
        status::BAD_RANGE
    );
    assert_eq!(refused(client.read_act(31, 2)), status::BAD_RANGE);
    assert_eq!(refused(client.read_act(0, 0)), status::BAD_RANGE);
    assert_eq!(refused(client.read_acc(15, 2)), status::BAD_RANGE);
    assert_eq!(refused(client.read_acc(65535, 65535)), status::BAD_RANGE);
    assert_eq!(
        refused(client.matmul_step(0, 4, 13, false)),
        status::BAD_RANGE
    );
    assert_eq!(
        refused(client.matmul_step(30, 4, 0, false)),
        status::BAD_RANGE
    );
    assert_eq!(
        refused(client.matmul_step(0, 0, 0, false)),
        status::BAD_RANGE
    );
    // A MATMUL needs a queued tile, and the queue holds two.
    assert_eq!(
        refused(client.matmul_step(0, 1, 0, false)),
        status::NO_WEIGHTS
    );
    let ident: Vec<u16> = (0..16).map(|i| (i / 4 == i % 4) as u16).collect();
    let twice: Vec<u16> = (0..16).map(|i| 2 * (i / 4 == i % 4) as u16).collect();
    client.load_weights(&ident).unwrap();
    client.load_weights(&twice).unwrap();
    assert_eq!(refused(client.load_weights(&ident)), status::QUEUE_FULL);
    assert_eq!(client.status().unwrap().queued, 2);
    // The queued tiles are used in order: A x I, then A x 2I added on top.
    let a: Vec<u16> = (0..8).map(|i| (i as i8 - 3) as u8 as u16).collect();
    client.write_act(0, &a).unwrap();
    client.matmul_step(0, 2, 0, false).unwrap();
    client.matmul_step(0, 2, 0, true).unwrap();
    let c = client.read_acc(0, 2).unwrap();
    let want: Vec<u32> = (0..8).map(|i| (3 * (i - 3)) as u32).collect();
    assert_eq!(c, want);
    let st = client.status().unwrap();
    assert_eq!((st.queued, st.flags), (0, 0), "{st:?}");
}

#[test]
fn framing_errors_and_stray_bytes_are_flagged_cleared_and_shown_on_the_led() {
    let cfg = small_int8();
    let mut client = connect(Board::IceBreaker, &cfg);
    let led_red = client.link_mut().port("LEDR_N");
    // A byte outside a command.
    client.link_mut().send(&[0x42]).unwrap();
    client.link_mut().run(20 * CPB as u64);
    assert_eq!(client.link_mut().peek(led_red), 0, "red LED on");
    let st = client.status().unwrap();
    assert_eq!(st.flags & flags::STRAY_BYTE, flags::STRAY_BYTE, "{st:?}");
    assert_eq!(
        client.link_mut().peek(led_red),
        1,
        "red LED off after STATUS"
    );
    assert_eq!(client.status().unwrap().flags, 0, "STATUS clears the flags");
    // A frame with a low stop bit.
    client.link_mut().send_byte(0xA5, false);
    client.link_mut().drive(true, 20);
    let st = client.status().unwrap();
    assert_eq!(
        st.flags & flags::FRAMING_ERROR,
        flags::FRAMING_ERROR,
        "{st:?}"
    );
    assert_eq!(client.status().unwrap().flags, 0);
}

#[test]
fn a_truncated_command_times_out_and_the_client_resyncs() {
    let cfg = small_int8();
    let mut client = connect(Board::IceBreaker, &cfg);
    // Half a WRITE_ACT: the bridge waits for the rest, then gives up.
    client.link_mut().send(&[0xA5, 0x02, 0, 0, 1, 0]).unwrap();
    let timeout = cfg.timeout_cycles();
    let wire = client.link_mut();
    wire.run(timeout / 2);
    assert!(
        wire.take_received().is_empty(),
        "no reply to half a command"
    );
    let st = client.resync().unwrap();
    assert_eq!(st.flags & flags::TIMEOUT, flags::TIMEOUT, "{st:?}");
    // A command cut short by a lost byte: the client times out, resyncs, and
    // the next matmul is right.
    let hdr = host::protocol::header(0x02, 0, 1, 0);
    client.link_mut().send(&hdr).unwrap();
    client.link_mut().send(&[1, 2, 3]).unwrap(); // one payload byte short
    let mut buf = [0u8; 4];
    assert_eq!(client.link_mut().recv(&mut buf, LATENCY).unwrap(), 0);
    client.resync().unwrap();
    check_int8(
        &mut client,
        &[1, 2, 3, 4, 5],
        &[6, 7, 8, 9, 10],
        (1, 5, 1),
        "after resync",
    );
    // Three of a tile's four rows, then silence: none of it may reach the
    // MXU, or every later tile would be shifted by three rows.
    let hdr = host::protocol::header(0x04, 0, 0, 0);
    client.link_mut().send(&hdr).unwrap();
    client.link_mut().send(&[7; 12]).unwrap();
    let st = client.resync().unwrap();
    assert_eq!(st.flags & flags::TIMEOUT, flags::TIMEOUT, "{st:?}");
    assert_eq!(st.queued, 0, "{st:?}");
    let mut rng = rng_for("board_uart_after_abandoned_tile");
    let a = random_i8(&mut rng, 5 * 9);
    let b = random_i8(&mut rng, 9 * 6);
    check_int8(&mut client, &a, &b, (5, 9, 6), "after an abandoned tile");
    // A tile left queued (say its reply was lost) is used up by resync.
    client.load_weights(&[1; 16]).unwrap();
    assert_eq!(client.resync().unwrap().queued, 1);
    assert_eq!(client.status().unwrap().queued, 0);
    check_int8(&mut client, &a, &b, (5, 9, 6), "after a drained tile");
}

#[test]
fn a_host_whose_baud_rate_is_two_percent_off_still_works() {
    let cfg = small_int8();
    for permille in [980u64, 1020] {
        let mut wire = wire(Board::IceBreaker, &cfg);
        wire.period_milli = CPB as u64 * permille;
        let mut client = Client::connect_with(wire, LATENCY).unwrap();
        check_int8(
            &mut client,
            &[1, -2, 3, -4, 5, -6, 7, -8, 9, -10],
            &[-128, 127, 0, 1, 2, -1, 3, 4, 100, -100],
            (2, 5, 2),
            &format!("host bit period {permille}/1000"),
        );
        assert_eq!(client.status().unwrap().flags, 0);
    }
}

#[test]
fn a_reply_byte_corrupted_on_the_wire_is_caught_by_the_crc() {
    let cfg = small_int8();
    let mut client = connect(Board::IceBreaker, &cfg);
    client.write_act(0, &[1, 2, 3, 4]).unwrap();
    // Flip a bit of the third byte of the next reply (a payload byte).
    let wire = client.link_mut();
    wire.corrupt_at = Some(wire.decoded + 2);
    match client.read_act(0, 1) {
        Err(HostError::Corrupt(msg)) => assert!(msg.contains("READ_ACT"), "{msg}"),
        other => panic!("expected a CRC error, got {other:?}"),
    }
    // The reply was read to its end: the next command needs no resync.
    assert_eq!(client.read_act(0, 1).unwrap(), vec![1, 2, 3, 4]);
}

#[test]
fn the_serial_port_transport_talks_to_the_board_through_a_pseudo_terminal() {
    // The board side: the Verilated top behind the master end of a pty; the
    // host side: `SerialTransport` on the slave end, as on a real port.
    let cfg = small_int8();
    let board = PtyBoard::start(wire(Board::IceBreaker, &cfg));
    let link = host::SerialTransport::open(board.path(), 115_200).unwrap();
    let mut client = Client::connect(link).unwrap_or_else(|e| panic!("connect: {e}"));
    assert_eq!((client.info().rows, client.info().cols), (4, 4));
    let mut rng = rng_for("board_uart_pty");
    let (m, k, n) = (6, 7, 5);
    let a = random_i8(&mut rng, m * k);
    let b = random_i8(&mut rng, k * n);
    check_int8(&mut client, &a, &b, (m, k, n), "through a pty");
    assert_eq!(board.stop(), 0, "framing errors");
}

#[test]
fn a_1x1_array_with_two_row_buffers_still_multiplies_anything() {
    // Every matmul is many blocks, groups and tiles here.
    let cfg = bridge(1, 1, ElemType::Int8, 2, 2);
    let mut client = connect(Board::IceBreaker, &cfg);
    let mut rng = rng_for("board_uart_1x1");
    for (m, k, n) in [(1, 1, 1), (3, 2, 3), (5, 4, 2)] {
        let a = random_i8(&mut rng, m * k);
        let b = random_i8(&mut rng, k * n);
        check_int8(&mut client, &a, &b, (m, k, n), "1x1 array");
    }
}

#[test]
fn connecting_while_the_bridge_is_inside_an_unfinished_command_recovers() {
    // An earlier host sent half a WRITE_ACT and went away.
    let cfg = small_int8();
    let mut wire = wire(Board::IceBreaker, &cfg);
    wire.send(&host::protocol::header(0x02, 0, 8, 0)).unwrap();
    wire.send(&[1, 2, 3]).unwrap();
    let mut client = Client::connect_with(wire, LATENCY).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(client.info().rows, 4);
    check_int8(&mut client, &[1, 2], &[3, 4], (1, 2, 1), "after connecting");
}

//! Host-side client of the board's UART protocol.
//!
//! The board runs the MXU or the TensorCore behind a UART command bridge
//! (`hw/board`, protocol in `hw/board/PROTOCOL.md`). This crate is the other end: a [`Client`] that
//! speaks the protocol over any [`Transport`] (a serial port here, a simulated
//! UART wire in the tests), and the `systole-host` tool built on it.
//!
//! Design decisions:
//! - **Written from the specification, not from the RTL.** The crate does not
//!   depend on `board`; the wire format is restated in [`protocol`] from
//!   `PROTOCOL.md`. The tests run this client against the Verilated board tops
//!   at the UART wire level, so the two implementations check each other.
//! - **Strict request/reply.** The client sends a command, then reads its reply
//!   to the last byte (status, payload, CRC) before it sends the next one. That
//!   is the flow control: the bridge never has to buffer more than one command,
//!   and no RTS/CTS is needed. Reply timeouts are the bytes' wire time plus a
//!   latency allowance ([`DEFAULT_LATENCY`]).
//! - **The client tiles.** [`Client::matmul_int8`] and [`Client::matmul_bf16`]
//!   multiply matrices of any shape with the plan of `config::mxu_plan`, the
//!   one the simulator's MXU driver follows (same tiles, same accumulation
//!   order), so the results are bit-exact with the golden model for the
//!   bridge's array.
//! - **The TensorCore runs compiled programs** ([`tensorcore`]): the client
//!   compiles a model with the `compiler` crate for the core the board
//!   reports (TC_INFO), loads the weight and bias images once, and runs the
//!   batch in blocks that fit the board's program memory and host windows;
//!   the core's own counters come back with READ_COUNTERS.
//! - **Errors are values with one-line messages** ([`HostError`]): an error
//!   status from the bridge, a CRC mismatch, a timeout. After a timeout or a
//!   corrupt reply, [`Client::resync`] waits out the bridge's command timeout
//!   and starts clean.
//! - **Light dependencies.** No simulator, no libudev (`serialport` without
//!   default features), so the tool builds on any machine with a serial port.

pub mod client;
pub mod protocol;
pub mod tensorcore;
pub mod transport;

pub use client::{Client, CoreKind, DeviceInfo, HostError, LinkStats, Status, DEFAULT_LATENCY};
pub use tensorcore::{Counters, MlpRun, TcInfo};
pub use transport::{SerialTransport, Transport};

//! The constants of the host protocol, as the bridge implements them.
//!
//! `PROTOCOL.md` (next to this crate's `Cargo.toml`) is the specification. The
//! `host` crate implements the other side from the same document without
//! depending on this crate, and the UART tests hold the two against each other.

/// First byte of every command.
pub const SYNC: u8 = 0xA5;
/// Bytes of every command header: SYNC, opcode, three little-endian u16 fields.
pub const HEADER_BYTES: usize = 8;
/// Protocol version reported by STATUS of the MXU bridge.
pub const VERSION: u8 = 1;
/// Protocol version reported by STATUS of the TensorCore bridge (version 2:
/// STATUS byte 5 is the core kind, and the TensorCore commands).
pub const VERSION_TC: u8 = 2;
/// STATUS byte 5, the core kind, of the TensorCore bridge (0 and 1 are the
/// int8 and bf16 MXU, as version 1's element type byte).
pub const CORE_TENSORCORE: u8 = 2;
/// Bytes of the TC_INFO payload.
pub const TC_INFO_BYTES: usize = 16;
/// Bytes of the READ_COUNTERS payload: ten u32 counters.
pub const COUNTER_BYTES: usize = 40;
/// The first four bytes of the STATUS payload.
pub const MAGIC: [u8; 4] = *b"SYST";
/// Bytes of the STATUS payload.
pub const STATUS_BYTES: usize = 16;
/// Weight tiles the bridge accepts ahead of the MATMUL commands that use them.
pub const MAX_QUEUED_TILES: u32 = 2;

/// Command opcodes.
pub mod op {
    pub const STATUS: u8 = 0x01;
    pub const WRITE_ACT: u8 = 0x02;
    pub const READ_ACT: u8 = 0x03;
    pub const LOAD_WEIGHTS: u8 = 0x04;
    pub const MATMUL: u8 = 0x05;
    pub const MATMUL_ADD: u8 = 0x06;
    pub const READ_ACC: u8 = 0x07;
    /// TensorCore bridge (version 2): its sizes.
    pub const TC_INFO: u8 = 0x10;
    pub const WRITE_WEIGHTS: u8 = 0x11;
    pub const WRITE_BIAS: u8 = 0x12;
    pub const WRITE_PROGRAM: u8 = 0x13;
    pub const WRITE_INPUT: u8 = 0x14;
    pub const RUN: u8 = 0x15;
    pub const READ_OUTPUT: u8 = 0x16;
    pub const READ_COUNTERS: u8 = 0x17;
}

/// Reply status bytes.
pub mod status {
    /// The command was carried out; its payload (if any) follows.
    pub const OK: u8 = 0x06;
    /// Unknown opcode.
    pub const BAD_OPCODE: u8 = 0xE1;
    /// A count of zero, or rows outside a buffer.
    pub const BAD_RANGE: u8 = 0xE2;
    /// LOAD_WEIGHTS while `MAX_QUEUED_TILES` tiles are already queued.
    pub const QUEUE_FULL: u8 = 0xE3;
    /// MATMUL with no weight tile queued.
    pub const NO_WEIGHTS: u8 = 0xE4;
    /// RUN: the core did not halt within the cycle limit (it was reset).
    pub const RUN_TIMEOUT: u8 = 0xE5;
    /// RUN: the core halted with its error flag set (an unknown opcode).
    pub const CORE_ERROR: u8 = 0xE6;
}

/// Bits of the STATUS flags byte (payload byte 13).
pub mod flags {
    /// The MXU has accepted rows whose results are not yet written.
    pub const MXU_BUSY: u8 = 1 << 0;
    /// The receiver saw a low stop bit since the last STATUS.
    pub const FRAMING_ERROR: u8 = 1 << 1;
    /// A byte arrived outside a command (not SYNC while idle, or during a
    /// reply) since the last STATUS; it was dropped.
    pub const STRAY_BYTE: u8 = 1 << 2;
    /// A command was abandoned because its next byte did not come in time.
    pub const TIMEOUT: u8 = 1 << 3;
}

/// CRC-8 with polynomial 0x07, initial value 0, no reflection, no final XOR
/// (CRC-8/SMBUS), one byte at a time.
pub fn crc8_update(crc: u8, byte: u8) -> u8 {
    let mut c = crc ^ byte;
    for _ in 0..8 {
        c = if c & 0x80 != 0 {
            (c << 1) ^ 0x07
        } else {
            c << 1
        };
    }
    c
}

/// CRC-8/SMBUS of `bytes`.
pub fn crc8(bytes: &[u8]) -> u8 {
    bytes.iter().fold(0, |c, &b| crc8_update(c, b))
}

/// [`crc8_update`] as logic: the bridges' CRC register's next value after
/// `byte`.
pub(crate) fn crc8_logic(crc: hw::Expr, byte: hw::Expr) -> hw::Expr {
    let mut c = crc ^ byte;
    for _ in 0..8 {
        let shifted = c << 1u32;
        c = hw::mux(c.msb(), shifted ^ 0x07u8, shifted);
    }
    c
}

/// The STATUS payload the bridge for `cfg` sends with nothing queued and no
/// flag set (`PROTOCOL.md` gives the layout).
pub fn idle_status_payload(cfg: &crate::BridgeConfig) -> [u8; STATUS_BYTES] {
    let mxu = cfg.mxu();
    let mut p = [0u8; STATUS_BYTES];
    p[0..4].copy_from_slice(&MAGIC);
    p[4] = VERSION;
    p[5] = match mxu.dtype() {
        config::ElemType::Int8 => 0,
        config::ElemType::Bf16 => 1,
    };
    p[6..8].copy_from_slice(&(mxu.rows() as u16).to_le_bytes());
    p[8..10].copy_from_slice(&(mxu.cols() as u16).to_le_bytes());
    p[10] = mxu.acc_rows().trailing_zeros() as u8;
    p[11] = cfg.act_rows().trailing_zeros() as u8;
    p[12] = (MAX_QUEUED_TILES as u8) << 4;
    p[13] = 0;
    p[14..16].copy_from_slice(&(cfg.clocks_per_bit() as u16).to_le_bytes());
    p
}

/// The STATUS payload the TensorCore bridge for `cfg` sends with no flag set.
pub fn tc_status_payload(cfg: &crate::TcBridgeConfig) -> [u8; STATUS_BYTES] {
    let core = cfg.core();
    let mut p = [0u8; STATUS_BYTES];
    p[0..4].copy_from_slice(&MAGIC);
    p[4] = VERSION_TC;
    p[5] = CORE_TENSORCORE;
    p[6..8].copy_from_slice(&(core.rows() as u16).to_le_bytes());
    p[8..10].copy_from_slice(&(core.cols() as u16).to_le_bytes());
    p[10] = core.acc_rows().trailing_zeros() as u8;
    p[11] = core.ub_rows().trailing_zeros() as u8;
    p[14..16].copy_from_slice(&(cfg.clocks_per_bit() as u16).to_le_bytes());
    p
}

/// The TC_INFO payload of the TensorCore bridge for `cfg`.
pub fn tc_info_payload(cfg: &crate::TcBridgeConfig) -> [u8; TC_INFO_BYTES] {
    let core = cfg.core();
    let lg = |v: u32| v.trailing_zeros() as u8;
    let mut p = [0u8; TC_INFO_BYTES];
    p[0..2].copy_from_slice(&(core.rows() as u16).to_le_bytes());
    p[2..4].copy_from_slice(&(core.cols() as u16).to_le_bytes());
    p[4] = lg(core.acc_rows());
    p[5] = lg(core.ub_rows());
    p[6] = lg(core.weight_rows());
    p[7] = lg(core.bias_rows());
    p[8] = core.weight_queue() as u8;
    p[9] = lg(cfg.program_words());
    p[10] = lg(cfg.input_rows());
    p[11] = lg(cfg.output_rows());
    p[12] = (COUNTER_BYTES / 4) as u8;
    p[13] = core.depth() as u8;
    p
}

/// A command: the header (fields little-endian) and the payload.
pub fn command(opcode: u8, fields: [u16; 3], payload: &[u8]) -> Vec<u8> {
    let mut out = vec![SYNC, opcode];
    for f in fields {
        out.extend_from_slice(&f.to_le_bytes());
    }
    out.extend_from_slice(payload);
    out
}

/// The full reply to `cmd` with `status` and `payload`: the status byte, the
/// payload, and the CRC over the command and both.
pub fn reply(cmd: &[u8], status: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![status];
    out.extend_from_slice(payload);
    let crc = crc8(&[cmd, &out[..]].concat());
    out.push(crc);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc8_matches_the_smbus_check_value() {
        // The catalogue check value of CRC-8/SMBUS over "123456789".
        assert_eq!(crc8(b"123456789"), 0xF4);
    }
}

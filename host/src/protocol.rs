//! The wire format of `hw/board/PROTOCOL.md`, from the host's side.

/// First byte of every command.
pub const SYNC: u8 = 0xA5;
/// Protocol version of the MXU bridge.
pub const VERSION: u8 = 1;
/// Protocol version of the TensorCore bridge (STATUS byte 5 is the core
/// kind; the TensorCore commands). This client speaks both.
pub const VERSION_TC: u8 = 2;
/// STATUS byte 5 (core kind) of a TensorCore (0 and 1: int8 and bf16 MXU).
pub const CORE_TENSORCORE: u8 = 2;
/// Bytes of the TC_INFO payload.
pub const TC_INFO_BYTES: usize = 16;
/// Bytes of the READ_COUNTERS payload: ten u32 counters.
pub const COUNTER_BYTES: usize = 40;
/// First four bytes of the STATUS payload.
pub const MAGIC: [u8; 4] = *b"SYST";
/// Bytes of the STATUS payload.
pub const STATUS_BYTES: usize = 16;
/// Byte times of silence after which the bridge has abandoned any
/// half-received command (it waits between 1,024 and 2,048).
pub const RESYNC_BYTE_TIMES: u32 = 2_100;

/// Command opcodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Opcode {
    Status = 0x01,
    WriteAct = 0x02,
    ReadAct = 0x03,
    LoadWeights = 0x04,
    Matmul = 0x05,
    MatmulAdd = 0x06,
    ReadAcc = 0x07,
    TcInfo = 0x10,
    WriteWeights = 0x11,
    WriteBias = 0x12,
    WriteProgram = 0x13,
    WriteInput = 0x14,
    Run = 0x15,
    ReadOutput = 0x16,
    ReadCounters = 0x17,
}

impl Opcode {
    pub fn name(self) -> &'static str {
        match self {
            Opcode::Status => "STATUS",
            Opcode::WriteAct => "WRITE_ACT",
            Opcode::ReadAct => "READ_ACT",
            Opcode::LoadWeights => "LOAD_WEIGHTS",
            Opcode::Matmul => "MATMUL",
            Opcode::MatmulAdd => "MATMUL_ADD",
            Opcode::ReadAcc => "READ_ACC",
            Opcode::TcInfo => "TC_INFO",
            Opcode::WriteWeights => "WRITE_WEIGHTS",
            Opcode::WriteBias => "WRITE_BIAS",
            Opcode::WriteProgram => "WRITE_PROGRAM",
            Opcode::WriteInput => "WRITE_INPUT",
            Opcode::Run => "RUN",
            Opcode::ReadOutput => "READ_OUTPUT",
            Opcode::ReadCounters => "READ_COUNTERS",
        }
    }

    /// Every opcode.
    pub const ALL: [Opcode; 15] = [
        Opcode::Status,
        Opcode::WriteAct,
        Opcode::ReadAct,
        Opcode::LoadWeights,
        Opcode::Matmul,
        Opcode::MatmulAdd,
        Opcode::ReadAcc,
        Opcode::TcInfo,
        Opcode::WriteWeights,
        Opcode::WriteBias,
        Opcode::WriteProgram,
        Opcode::WriteInput,
        Opcode::Run,
        Opcode::ReadOutput,
        Opcode::ReadCounters,
    ];
}

/// Reply status bytes.
pub mod status {
    pub const OK: u8 = 0x06;
    pub const BAD_OPCODE: u8 = 0xE1;
    pub const BAD_RANGE: u8 = 0xE2;
    pub const QUEUE_FULL: u8 = 0xE3;
    pub const NO_WEIGHTS: u8 = 0xE4;
    pub const RUN_TIMEOUT: u8 = 0xE5;
    pub const CORE_ERROR: u8 = 0xE6;

    /// What a status byte means, in words.
    pub fn describe(status: u8) -> &'static str {
        match status {
            OK => "ok",
            BAD_OPCODE => "unknown opcode",
            BAD_RANGE => "count of zero or rows outside the buffer",
            QUEUE_FULL => "weight queue full",
            NO_WEIGHTS => "no weight tile queued",
            RUN_TIMEOUT => "the TensorCore did not halt within the cycle limit",
            CORE_ERROR => "the TensorCore halted with its error flag (unknown opcode)",
            _ => "unknown status",
        }
    }
}

/// Bits of the STATUS flags byte.
pub mod flags {
    pub const MXU_BUSY: u8 = 1 << 0;
    pub const FRAMING_ERROR: u8 = 1 << 1;
    pub const STRAY_BYTE: u8 = 1 << 2;
    pub const TIMEOUT: u8 = 1 << 3;
}

/// One byte of CRC-8/SMBUS (polynomial 0x07, initial value 0).
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

/// CRC-8/SMBUS continued over `bytes`.
pub fn crc8_over(crc: u8, bytes: &[u8]) -> u8 {
    bytes.iter().fold(crc, |c, &b| crc8_update(c, b))
}

/// The 8-byte header of a command.
pub fn header(op: u8, a: u16, b: u16, c: u16) -> [u8; 8] {
    let [a0, a1] = a.to_le_bytes();
    let [b0, b1] = b.to_le_bytes();
    let [c0, c1] = c.to_le_bytes();
    [SYNC, op, a0, a1, b0, b1, c0, c1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc8_is_the_smbus_variant() {
        assert_eq!(crc8_over(0, b"123456789"), 0xF4);
    }

    #[test]
    fn header_fields_are_little_endian() {
        assert_eq!(
            header(0x05, 0x1234, 2, 0xABCD),
            [0xA5, 0x05, 0x34, 0x12, 0x02, 0x00, 0xCD, 0xAB]
        );
    }
}

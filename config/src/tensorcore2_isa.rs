//! TensorCore v2's instruction words: opcodes, flags and field positions, the
//! one spelling the compiler, the golden model and the sequencer's decoder
//! share. What each instruction does and when is documented with the
//! hardware (`hw/tensorcore2`'s crate docs and `docs/tensorcore2.md`).
//!
//! An instruction is one 144-bit word: bits 143..140 the opcode, 139..128
//! the flags, 127..0 the payload. A `VPU` instruction's payload is one VPU
//! bundle (`config::vpu_isa`), unchanged; every other instruction's payload
//! holds the fields below. Element addresses count 32-bit elements of the
//! vector memory (VMEM): element e of word w is address w x W + e.
//!
//! | bits | field | use |
//! | --- | --- | --- |
//! | 23..0 | `a` | first element address (a source) |
//! | 47..24 | `b` | second element address (a destination, or `EUP`'s second operand) |
//! | 71..48 | `c` | third address: `EUP`'s destination, a host-window element, a weight-memory row |
//! | 87..72 | `n` | rows or elements, 1..65535 |
//! | 103..88 | `s` | element stride between rows |
//! | 119..104 | `acc` | accumulator row |
//! | 122..120 | `fn` | `EUP`'s operation (`config::EupOp`'s code) |
//!
//! Fields an instruction does not use are zero.

use crate::EupOp;
use std::fmt;

/// Bits of an instruction word.
pub const INSTR_BITS: u32 = 144;
/// Bits of an element-address field (`a`, `b`, `c`).
pub const ADDR_BITS: u32 = 24;
/// Bits of the count field `n`.
pub const COUNT_BITS: u32 = 16;
/// Bits of the stride field `s`.
pub const STRIDE_BITS: u32 = 16;
/// Bits of the accumulator-row field.
pub const ACC_BITS: u32 = 16;

/// Field positions (lowest bit, width) in the 144-bit word.
pub mod field {
    pub const A: (u32, u32) = (0, 24);
    pub const B: (u32, u32) = (24, 24);
    pub const C: (u32, u32) = (48, 24);
    pub const N: (u32, u32) = (72, 16);
    pub const S: (u32, u32) = (88, 16);
    pub const ACC: (u32, u32) = (104, 16);
    pub const FN: (u32, u32) = (120, 3);
    pub const FLAGS: (u32, u32) = (128, 12);
    pub const OP: (u32, u32) = (140, 4);
}

/// `MM` flag: the activation rows are int8 (bits 7..0 of each element; int32
/// wrapping sums), else bf16 (bits 15..0; fp32 sums in the contract's order).
pub const FLAG_INT8: u32 = 1;
/// `MM` flag: add into the accumulator rows (else overwrite them).
pub const FLAG_ADD: u32 = 2;

/// The opcodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Opcode {
    Halt = 0,
    Vpu = 1,
    HostIn = 2,
    HostOut = 3,
    ReadWeights = 4,
    ReadWeightsVmem = 5,
    Matmul = 6,
    MoveAcc = 7,
    Eup = 8,
    Sync = 9,
}

impl Opcode {
    /// Every opcode, in code order.
    pub const ALL: [Opcode; 10] = [
        Opcode::Halt,
        Opcode::Vpu,
        Opcode::HostIn,
        Opcode::HostOut,
        Opcode::ReadWeights,
        Opcode::ReadWeightsVmem,
        Opcode::Matmul,
        Opcode::MoveAcc,
        Opcode::Eup,
        Opcode::Sync,
    ];

    /// The opcode's number in the `op` field.
    pub fn code(self) -> u32 {
        self as u32
    }

    /// The assembler mnemonic.
    pub fn mnemonic(self) -> &'static str {
        match self {
            Opcode::Halt => "HALT",
            Opcode::Vpu => "VPU",
            Opcode::HostIn => "HIN",
            Opcode::HostOut => "HOUT",
            Opcode::ReadWeights => "RW",
            Opcode::ReadWeightsVmem => "RWV",
            Opcode::Matmul => "MM",
            Opcode::MoveAcc => "MV",
            Opcode::Eup => "EUP",
            Opcode::Sync => "SYNC",
        }
    }

    /// The opcode with number `code`, if there is one.
    pub fn from_code(code: u32) -> Option<Opcode> {
        Opcode::ALL.into_iter().find(|o| o.code() == code)
    }
}

/// One 144-bit instruction word: `op_flags` holds bits 143..128 (opcode in
/// its top four bits, flags below), `payload` bits 127..0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Word {
    pub op_flags: u16,
    pub payload: u128,
}

impl Word {
    /// The word as five 32-bit pieces, bits 31..0 first (the last piece
    /// holds bits 143..128 in its low half).
    pub fn pieces(&self) -> [u32; 5] {
        let p = self.payload;
        [
            p as u32,
            (p >> 32) as u32,
            (p >> 64) as u32,
            (p >> 96) as u32,
            u32::from(self.op_flags),
        ]
    }

    /// The word from five 32-bit pieces, bits 31..0 first; bits 31..16 of
    /// the last piece are ignored.
    pub fn from_pieces(pieces: [u32; 5]) -> Word {
        let payload = pieces[..4]
            .iter()
            .rev()
            .fold(0u128, |acc, &x| (acc << 32) | u128::from(x));
        Word {
            op_flags: pieces[4] as u16,
            payload,
        }
    }

    /// The opcode field (bits 143..140).
    pub fn opcode_bits(&self) -> u32 {
        u32::from(self.op_flags >> 12)
    }

    /// The flags field (bits 139..128).
    pub fn flags(&self) -> u32 {
        u32::from(self.op_flags & 0x0FFF)
    }

    /// A payload field at `(lsb, width)` (a position from [`field`] below bit 128).
    pub fn get(&self, (lsb, width): (u32, u32)) -> u32 {
        ((self.payload >> lsb) & ((1u128 << width) - 1)) as u32
    }
}

/// One decoded instruction. Element addresses, counts and strides are as
/// the fields hold them; what is legal for a machine of given sizes is the
/// golden model's and the compiler's business.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Instr {
    /// Wait until everything issued before has finished, then stop.
    Halt,
    /// Wait until everything issued before has finished.
    Sync,
    /// Issue one VPU bundle (the payload, `config::vpu_isa`).
    Vpu { bundle: u128 },
    /// `HIN dst, src, n`: VMEM\[dst + i\] = IN\[src + i\], i < n.
    HostIn { dst: u32, src: u32, n: u32 },
    /// `HOUT dst, src, n`: OUT\[dst + i\] = VMEM\[src + i\], i < n.
    HostOut { dst: u32, src: u32, n: u32 },
    /// `RW row, n`: append weight-memory rows row .. row + n - 1 to the MXU's
    /// weight stream.
    ReadWeights { row: u32, n: u32 },
    /// `RWV src, stride, n`: append n weight rows from VMEM, row i the C
    /// elements from src + i x stride (bits 15..0 of each).
    ReadWeightsVmem { src: u32, stride: u32, n: u32 },
    /// `MM acc, src, stride, n` (`.int8`, `.add`): n activation rows from
    /// VMEM (row j the R elements from src + j x stride) against the next
    /// R rows of the weight stream, into accumulator rows acc + j.
    Matmul {
        acc: u32,
        src: u32,
        stride: u32,
        n: u32,
        int8: bool,
        add: bool,
    },
    /// `MV dst, stride, acc, n`: accumulator rows acc + j into VMEM, row j to
    /// the C elements from dst + j x stride.
    MoveAcc {
        dst: u32,
        stride: u32,
        acc: u32,
        n: u32,
    },
    /// `EUP op, dst, a, b, n`: VMEM\[dst + i\] = op(VMEM\[a + i\], VMEM\[b + i\])
    /// (unary operations read only a), i < n.
    Eup {
        op: EupOp,
        dst: u32,
        a: u32,
        b: u32,
        n: u32,
    },
}

/// Why a word does not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub String);

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DecodeError {}

fn check(name: &str, value: u32, bits: u32) -> u32 {
    assert!(
        bits == 32 || value < (1 << bits),
        "{name} = {value} does not fit its {bits}-bit field"
    );
    value
}

impl Instr {
    /// The opcode.
    pub fn opcode(&self) -> Opcode {
        match self {
            Instr::Halt => Opcode::Halt,
            Instr::Sync => Opcode::Sync,
            Instr::Vpu { .. } => Opcode::Vpu,
            Instr::HostIn { .. } => Opcode::HostIn,
            Instr::HostOut { .. } => Opcode::HostOut,
            Instr::ReadWeights { .. } => Opcode::ReadWeights,
            Instr::ReadWeightsVmem { .. } => Opcode::ReadWeightsVmem,
            Instr::Matmul { .. } => Opcode::Matmul,
            Instr::MoveAcc { .. } => Opcode::MoveAcc,
            Instr::Eup { .. } => Opcode::Eup,
        }
    }

    /// The instruction word.
    ///
    /// # Panics
    ///
    /// If a value does not fit its field.
    pub fn encode(&self) -> Word {
        let mut payload = 0u128;
        let mut flags = 0u32;
        let mut put = |(lsb, width): (u32, u32), name: &str, v: u32| {
            payload |= u128::from(check(name, v, width)) << lsb;
        };
        match *self {
            Instr::Halt | Instr::Sync => {}
            Instr::Vpu { bundle } => payload = bundle,
            Instr::HostIn { dst, src, n } => {
                put(field::B, "HIN destination", dst);
                put(field::C, "HIN source", src);
                put(field::N, "HIN count", n);
            }
            Instr::HostOut { dst, src, n } => {
                put(field::A, "HOUT source", src);
                put(field::C, "HOUT destination", dst);
                put(field::N, "HOUT count", n);
            }
            Instr::ReadWeights { row, n } => {
                put(field::C, "RW row", row);
                put(field::N, "RW count", n);
            }
            Instr::ReadWeightsVmem { src, stride, n } => {
                put(field::A, "RWV source", src);
                put(field::S, "RWV stride", stride);
                put(field::N, "RWV count", n);
            }
            Instr::Matmul {
                acc,
                src,
                stride,
                n,
                int8,
                add,
            } => {
                put(field::A, "MM source", src);
                put(field::S, "MM stride", stride);
                put(field::N, "MM count", n);
                put(field::ACC, "MM accumulator row", acc);
                flags = (u32::from(int8) * FLAG_INT8) | (u32::from(add) * FLAG_ADD);
            }
            Instr::MoveAcc {
                dst,
                stride,
                acc,
                n,
            } => {
                put(field::B, "MV destination", dst);
                put(field::S, "MV stride", stride);
                put(field::N, "MV count", n);
                put(field::ACC, "MV accumulator row", acc);
            }
            Instr::Eup { op, dst, a, b, n } => {
                put(field::A, "EUP first operand", a);
                put(field::B, "EUP second operand", b);
                put(field::C, "EUP destination", dst);
                put(field::N, "EUP count", n);
                put(field::FN, "EUP operation", op.code());
            }
        }
        Word {
            op_flags: ((self.opcode().code() << 12) | flags) as u16,
            payload,
        }
    }

    /// The instruction a word holds. Errors: an unknown opcode or `EUP`
    /// operation, or flags an instruction does not have.
    pub fn decode(word: Word) -> Result<Instr, DecodeError> {
        let code = word.opcode_bits();
        let op = Opcode::from_code(code)
            .ok_or_else(|| DecodeError(format!("unknown TensorCore v2 opcode {code}")))?;
        let flags = word.flags();
        let allowed = if op == Opcode::Matmul {
            FLAG_INT8 | FLAG_ADD
        } else {
            0
        };
        if flags & !allowed != 0 {
            return Err(DecodeError(format!(
                "{} does not take flags {flags:#x}",
                op.mnemonic()
            )));
        }
        let f = |pos| word.get(pos);
        Ok(match op {
            Opcode::Halt => Instr::Halt,
            Opcode::Sync => Instr::Sync,
            Opcode::Vpu => Instr::Vpu {
                bundle: word.payload,
            },
            Opcode::HostIn => Instr::HostIn {
                dst: f(field::B),
                src: f(field::C),
                n: f(field::N),
            },
            Opcode::HostOut => Instr::HostOut {
                dst: f(field::C),
                src: f(field::A),
                n: f(field::N),
            },
            Opcode::ReadWeights => Instr::ReadWeights {
                row: f(field::C),
                n: f(field::N),
            },
            Opcode::ReadWeightsVmem => Instr::ReadWeightsVmem {
                src: f(field::A),
                stride: f(field::S),
                n: f(field::N),
            },
            Opcode::Matmul => Instr::Matmul {
                acc: f(field::ACC),
                src: f(field::A),
                stride: f(field::S),
                n: f(field::N),
                int8: flags & FLAG_INT8 != 0,
                add: flags & FLAG_ADD != 0,
            },
            Opcode::MoveAcc => Instr::MoveAcc {
                dst: f(field::B),
                stride: f(field::S),
                acc: f(field::ACC),
                n: f(field::N),
            },
            Opcode::Eup => {
                let code = f(field::FN);
                let op = EupOp::from_code(code)
                    .ok_or_else(|| DecodeError(format!("unknown EUP operation {code}")))?;
                Instr::Eup {
                    op,
                    dst: f(field::C),
                    a: f(field::A),
                    b: f(field::B),
                    n: f(field::N),
                }
            }
        })
    }
}

impl fmt::Display for Instr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Instr::Halt => f.write_str("HALT"),
            Instr::Sync => f.write_str("SYNC"),
            Instr::Vpu { bundle } => write!(f, "VPU {bundle:#034x}"),
            Instr::HostIn { dst, src, n } => write!(f, "HIN {dst}, {src}, {n}"),
            Instr::HostOut { dst, src, n } => write!(f, "HOUT {dst}, {src}, {n}"),
            Instr::ReadWeights { row, n } => write!(f, "RW {row}, {n}"),
            Instr::ReadWeightsVmem { src, stride, n } => write!(f, "RWV {src}, {stride}, {n}"),
            Instr::Matmul {
                acc,
                src,
                stride,
                n,
                int8,
                add,
            } => write!(
                f,
                "MM{}{} {acc}, {src}, {stride}, {n}",
                if int8 { ".int8" } else { "" },
                if add { ".add" } else { "" }
            ),
            Instr::MoveAcc {
                dst,
                stride,
                acc,
                n,
            } => write!(f, "MV {dst}, {stride}, {acc}, {n}"),
            Instr::Eup { op, dst, a, b, n } => {
                write!(f, "EUP.{} {dst}, {a}, {b}, {n}", op.name())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_kind() -> Vec<Instr> {
        let mut v = vec![
            Instr::Halt,
            Instr::Sync,
            Instr::Vpu {
                bundle: 0xDEAD_BEEF_0123_4567_89AB_CDEF_F00D_CAFE,
            },
            Instr::HostIn {
                dst: 0xFF_FFFF,
                src: 1,
                n: 0xFFFF,
            },
            Instr::HostOut {
                dst: 7,
                src: 0xAB_CDEF,
                n: 1,
            },
            Instr::ReadWeights { row: 12345, n: 16 },
            Instr::ReadWeightsVmem {
                src: 99,
                stride: 0xFFFF,
                n: 3,
            },
            Instr::MoveAcc {
                dst: 4,
                stride: 8,
                acc: 0xFFFF,
                n: 2,
            },
        ];
        for (int8, add) in [(false, false), (true, false), (false, true), (true, true)] {
            v.push(Instr::Matmul {
                acc: 3,
                src: 1000,
                stride: 16,
                n: 5,
                int8,
                add,
            });
        }
        for op in EupOp::ALL {
            v.push(Instr::Eup {
                op,
                dst: 1,
                a: 2,
                b: 3,
                n: 4,
            });
        }
        v
    }

    #[test]
    fn every_instruction_round_trips_through_its_word_and_pieces() {
        for i in every_kind() {
            let w = i.encode();
            assert_eq!(Instr::decode(w), Ok(i), "{i}");
            assert_eq!(Word::from_pieces(w.pieces()), w, "{i}");
            assert_eq!(w.opcode_bits(), i.opcode().code());
        }
    }

    #[test]
    fn fields_sit_where_the_table_says() {
        let w = Instr::Matmul {
            acc: 0xABCD,
            src: 0x12_3456,
            stride: 0x9876,
            n: 0x5555,
            int8: true,
            add: true,
        }
        .encode();
        assert_eq!(w.payload & 0xFF_FFFF, 0x12_3456);
        assert_eq!((w.payload >> 72) & 0xFFFF, 0x5555);
        assert_eq!((w.payload >> 88) & 0xFFFF, 0x9876);
        assert_eq!((w.payload >> 104) & 0xFFFF, 0xABCD);
        assert_eq!(w.op_flags, 0x6003);
        let e = Instr::Eup {
            op: EupOp::ALL[5],
            dst: 0x11_1111,
            a: 0x22_2222,
            b: 0x33_3333,
            n: 9,
        }
        .encode();
        assert_eq!((e.payload >> 48) & 0xFF_FFFF, 0x11_1111);
        assert_eq!((e.payload >> 24) & 0xFF_FFFF, 0x33_3333);
        assert_eq!((e.payload >> 120) & 7, u128::from(EupOp::ALL[5].code()));
    }

    #[test]
    fn bad_words_are_refused() {
        let unknown = Word {
            op_flags: 0xF000,
            payload: 0,
        };
        assert!(Instr::decode(unknown).is_err());
        let flagged = Word {
            op_flags: 0x2001,
            payload: 0,
        };
        assert!(Instr::decode(flagged).unwrap_err().0.contains("HIN"));
        let bad_fn = Word {
            op_flags: 0x8000,
            payload: 7u128 << 120,
        };
        assert!(Instr::decode(bad_fn).is_err());
    }

    #[test]
    #[should_panic(expected = "does not fit")]
    fn oversized_fields_panic() {
        Instr::HostIn {
            dst: 1 << 24,
            src: 0,
            n: 1,
        }
        .encode();
    }
}

//! The TensorCore's instruction words: opcodes and field positions, the one
//! spelling the compiler, the golden model and the sequencer's decoder share.
//! What each instruction does and when is documented in `hw/tensorcore`'s
//! crate docs (the instruction set and its timing contract).
//!
//! An instruction is one 128-bit word:
//!
//! | bits | field | use |
//! | --- | --- | --- |
//! | 3..0 | `op` | opcode ([`Opcode`]) |
//! | 6..4 | `flags` | per opcode: `MM` accumulate, prefetch, wait for activations; `ACT` to host, ReLU |
//! | 11..7 | `shift` | `ACT`: requantization shift, 0..31 |
//! | 27..12 | `count` | rows moved, 1..65535 |
//! | 49..28 | `a` | source row address |
//! | 71..50 | `b` | destination row address |
//! | 87..72 | `c` | `ACT`: bias-memory row |
//! | 95..88 | `zp` | `ACT`: zero point (int8) |
//! | 127..96 | `d` | `ACT`: multiplier (int32); `MM` with prefetch: weight row of the prefetched tile |
//!
//! Fields an instruction does not use are zero.

use std::fmt;

/// Bits of an address field (`a`, `b`): memories are at most 2^22 rows.
pub const ADDR_BITS: u32 = 22;
/// Bits of the row count.
pub const COUNT_BITS: u32 = 16;
/// Bits of the bias-row field.
pub const BIAS_BITS: u32 = 16;
/// Bits of an instruction word.
pub const INSTR_BITS: u32 = 128;

/// Field positions (lowest bit, width).
pub mod field {
    pub const OP: (u32, u32) = (0, 4);
    pub const FLAGS: (u32, u32) = (4, 3);
    pub const SHIFT: (u32, u32) = (7, 5);
    pub const COUNT: (u32, u32) = (12, 16);
    pub const A: (u32, u32) = (28, 22);
    pub const B: (u32, u32) = (50, 22);
    pub const C: (u32, u32) = (72, 16);
    pub const ZP: (u32, u32) = (88, 8);
    pub const D: (u32, u32) = (96, 32);
}

/// `MM` flag: add into the accumulator rows (else overwrite them).
pub const FLAG_ACCUMULATE: u32 = 1;
/// `MM` flag: also enqueue a weight read of one tile (R rows from row `d`).
pub const FLAG_PREFETCH: u32 = 2;
/// `MM` flag: first wait until the activation unit is idle and its writes
/// have landed (the MM reads rows that earlier `ACT`s write).
pub const FLAG_WAIT_ACT: u32 = 4;
/// `ACT` flag: write acc + bias as int32 to the host output window (else
/// requantize to int8 into the unified buffer).
pub const FLAG_TO_HOST: u32 = 1;
/// `ACT` flag: after requantization, max(h, zp) (ReLU in the quantized domain).
pub const FLAG_RELU: u32 = 2;

/// The opcodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Opcode {
    Halt = 0,
    ReadHost = 1,
    ReadWeights = 2,
    Matmul = 3,
    Activate = 4,
    Sync = 5,
}

impl Opcode {
    /// Every opcode.
    pub const ALL: [Opcode; 6] = [
        Opcode::Halt,
        Opcode::ReadHost,
        Opcode::ReadWeights,
        Opcode::Matmul,
        Opcode::Activate,
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
            Opcode::ReadHost => "RHM",
            Opcode::ReadWeights => "RW",
            Opcode::Matmul => "MM",
            Opcode::Activate => "ACT",
            Opcode::Sync => "SYNC",
        }
    }

    /// The opcode with number `code`, if there is one.
    pub fn from_code(code: u32) -> Option<Opcode> {
        Opcode::ALL.into_iter().find(|o| o.code() == code)
    }
}

/// What `ACT` does with acc + bias.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Activation {
    /// requant_int8(acc + bias, mult, shift, zp), then with `relu`
    /// max(h, zp), into the unified buffer.
    Requant {
        mult: i32,
        shift: u32,
        zp: i8,
        relu: bool,
    },
    /// acc + bias (int32, wrapping) to the host output window.
    Int32ToHost,
}

/// One decoded instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Instr {
    /// Wait until everything issued before has finished, then stop.
    Halt,
    /// Wait until everything issued before has finished.
    Sync,
    /// `RHM`: host input rows `host..host+rows` into buffer rows `ub..ub+rows`.
    ReadHost { host: u32, ub: u32, rows: u32 },
    /// `RW`: enqueue a read of weight rows `weight..weight+rows` into the MXU's weight FIFO.
    ReadWeights { weight: u32, rows: u32 },
    /// `MM`: stream buffer rows `ub..ub+rows` through the next weight tile into
    /// accumulator rows `acc..acc+rows` (add or overwrite); with `prefetch`,
    /// also enqueue the read of the tile at that weight row; with `wait_act`,
    /// first wait for the activation unit to finish.
    Matmul {
        ub: u32,
        acc: u32,
        rows: u32,
        accumulate: bool,
        prefetch: Option<u32>,
        wait_act: bool,
    },
    /// `ACT`: accumulator rows `acc..acc+rows`, plus bias row `bias`, through
    /// the activation to buffer rows (or host output rows) `dest..dest+rows`.
    Activate {
        acc: u32,
        dest: u32,
        rows: u32,
        bias: u32,
        func: Activation,
    },
}

/// Why a word is not an instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub String);

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DecodeError {}

fn get(word: u128, (lo, bits): (u32, u32)) -> u32 {
    ((word >> lo) & ((1u128 << bits) - 1)) as u32
}

fn put(word: &mut u128, (lo, bits): (u32, u32), value: u32) {
    assert!(
        bits == 32 || value < (1u32 << bits),
        "field at bit {lo} is {bits} bits wide, value {value} does not fit"
    );
    *word |= u128::from(value) << lo;
}

impl Instr {
    /// The opcode.
    pub fn opcode(&self) -> Opcode {
        match self {
            Instr::Halt => Opcode::Halt,
            Instr::Sync => Opcode::Sync,
            Instr::ReadHost { .. } => Opcode::ReadHost,
            Instr::ReadWeights { .. } => Opcode::ReadWeights,
            Instr::Matmul { .. } => Opcode::Matmul,
            Instr::Activate { .. } => Opcode::Activate,
        }
    }

    /// The 128-bit word.
    ///
    /// # Panics
    ///
    /// If a field does not fit its width (a row count of 0 or above 65535,
    /// an address of 2^22 or more, a shift above 31): the compiler never
    /// builds such an instruction.
    pub fn encode(&self) -> u128 {
        let mut w = 0u128;
        put(&mut w, field::OP, self.opcode().code());
        let count = |w: &mut u128, rows: u32| {
            assert!(rows >= 1, "an instruction moves at least one row");
            put(w, field::COUNT, rows);
        };
        match *self {
            Instr::Halt | Instr::Sync => {}
            Instr::ReadHost { host, ub, rows } => {
                count(&mut w, rows);
                put(&mut w, field::A, host);
                put(&mut w, field::B, ub);
            }
            Instr::ReadWeights { weight, rows } => {
                count(&mut w, rows);
                put(&mut w, field::A, weight);
            }
            Instr::Matmul {
                ub,
                acc,
                rows,
                accumulate,
                prefetch,
                wait_act,
            } => {
                count(&mut w, rows);
                put(&mut w, field::A, ub);
                put(&mut w, field::B, acc);
                let mut flags = 0;
                if accumulate {
                    flags |= FLAG_ACCUMULATE;
                }
                if wait_act {
                    flags |= FLAG_WAIT_ACT;
                }
                if let Some(p) = prefetch {
                    flags |= FLAG_PREFETCH;
                    assert!(p < 1 << ADDR_BITS, "weight row {p} is out of range");
                    put(&mut w, field::D, p);
                }
                put(&mut w, field::FLAGS, flags);
            }
            Instr::Activate {
                acc,
                dest,
                rows,
                bias,
                func,
            } => {
                count(&mut w, rows);
                put(&mut w, field::A, acc);
                put(&mut w, field::B, dest);
                put(&mut w, field::C, bias);
                match func {
                    Activation::Int32ToHost => put(&mut w, field::FLAGS, FLAG_TO_HOST),
                    Activation::Requant {
                        mult,
                        shift,
                        zp,
                        relu,
                    } => {
                        put(&mut w, field::FLAGS, if relu { FLAG_RELU } else { 0 });
                        put(&mut w, field::SHIFT, shift);
                        put(&mut w, field::ZP, u32::from(zp as u8));
                        put(&mut w, field::D, mult as u32);
                    }
                }
            }
        }
        w
    }

    /// The instruction a word holds.
    pub fn decode(word: u128) -> Result<Instr, DecodeError> {
        let code = get(word, field::OP);
        let op = Opcode::from_code(code)
            .ok_or_else(|| DecodeError(format!("unknown opcode {code} in word {word:#034x}")))?;
        let rows = get(word, field::COUNT);
        let (a, b, flags) = (
            get(word, field::A),
            get(word, field::B),
            get(word, field::FLAGS),
        );
        if !matches!(op, Opcode::Halt | Opcode::Sync) && rows == 0 {
            return Err(DecodeError(format!(
                "{} with a row count of 0 in word {word:#034x}",
                op.mnemonic()
            )));
        }
        Ok(match op {
            Opcode::Halt => Instr::Halt,
            Opcode::Sync => Instr::Sync,
            Opcode::ReadHost => Instr::ReadHost {
                host: a,
                ub: b,
                rows,
            },
            Opcode::ReadWeights => Instr::ReadWeights { weight: a, rows },
            Opcode::Matmul => Instr::Matmul {
                ub: a,
                acc: b,
                rows,
                accumulate: flags & FLAG_ACCUMULATE != 0,
                prefetch: (flags & FLAG_PREFETCH != 0).then(|| get(word, field::D)),
                wait_act: flags & FLAG_WAIT_ACT != 0,
            },
            Opcode::Activate => Instr::Activate {
                acc: a,
                dest: b,
                rows,
                bias: get(word, field::C),
                func: if flags & FLAG_TO_HOST != 0 {
                    Activation::Int32ToHost
                } else {
                    Activation::Requant {
                        mult: get(word, field::D) as i32,
                        shift: get(word, field::SHIFT),
                        zp: get(word, field::ZP) as u8 as i8,
                        relu: flags & FLAG_RELU != 0,
                    }
                },
            },
        })
    }
}

impl fmt::Display for Instr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Instr::Halt => write!(f, "HALT"),
            Instr::Sync => write!(f, "SYNC"),
            Instr::ReadHost { host, ub, rows } => write!(f, "RHM ub[{ub}], host[{host}], {rows}"),
            Instr::ReadWeights { weight, rows } => write!(f, "RW wmem[{weight}], {rows}"),
            Instr::Matmul {
                ub,
                acc,
                rows,
                accumulate,
                prefetch,
                wait_act,
            } => {
                let op = if accumulate { "MM.add" } else { "MM" };
                let wait = if wait_act { ".wait" } else { "" };
                write!(f, "{op}{wait} acc[{acc}], ub[{ub}], {rows}")?;
                if let Some(p) = prefetch {
                    write!(f, " ; RW wmem[{p}]")?;
                }
                Ok(())
            }
            Instr::Activate {
                acc,
                dest,
                rows,
                bias,
                func,
            } => match func {
                Activation::Int32ToHost => {
                    write!(f, "ACT.i32 host[{dest}], acc[{acc}] + bias[{bias}], {rows}")
                }
                Activation::Requant {
                    mult,
                    shift,
                    zp,
                    relu,
                } => write!(
                    f,
                    "ACT.rq{} ub[{dest}], acc[{acc}] + bias[{bias}], {rows} (mult {mult}, shift {shift}, zp {zp})",
                    if relu { ".relu" } else { "" }
                ),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_instruction_round_trips() {
        let all = [
            Instr::Halt,
            Instr::Sync,
            Instr::ReadHost {
                host: (1 << 22) - 1,
                ub: 5,
                rows: 65535,
            },
            Instr::ReadWeights {
                weight: 77,
                rows: 16,
            },
            Instr::Matmul {
                ub: 3,
                acc: 9,
                rows: 1,
                accumulate: true,
                prefetch: Some((1 << 22) - 1),
                wait_act: true,
            },
            Instr::Matmul {
                ub: 3,
                acc: 9,
                rows: 1,
                accumulate: false,
                prefetch: None,
                wait_act: false,
            },
            Instr::Activate {
                acc: 1,
                dest: 2,
                rows: 3,
                bias: 65535,
                func: Activation::Requant {
                    mult: i32::MAX,
                    shift: 31,
                    zp: -128,
                    relu: true,
                },
            },
            Instr::Activate {
                acc: 1,
                dest: 2,
                rows: 3,
                bias: 4,
                func: Activation::Int32ToHost,
            },
        ];
        for i in all {
            assert_eq!(Instr::decode(i.encode()).unwrap(), i, "{i}");
        }
    }

    #[test]
    fn fields_sit_where_the_table_says() {
        let w = Instr::Activate {
            acc: 1,
            dest: 2,
            rows: 3,
            bias: 4,
            func: Activation::Requant {
                mult: 5,
                shift: 6,
                zp: -1,
                relu: true,
            },
        }
        .encode();
        let expect = 4u128
            | (2 << 4)
            | (6 << 7)
            | (3 << 12)
            | (1 << 28)
            | (2 << 50)
            | (4 << 72)
            | (0xff << 88)
            | (5 << 96);
        assert_eq!(w, expect);
    }

    #[test]
    fn illegal_words_are_refused() {
        assert!(Instr::decode(15).is_err());
        assert!(Instr::decode(Opcode::Matmul.code() as u128).is_err());
    }
}

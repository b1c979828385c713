//! The vector unit's instruction set: opcodes and the bundle encoding.
//!
//! The VPU executes a stream of 128-bit instructions ("bundles"), one issued
//! per cycle. Each bundle has three slots that execute in this order: a
//! vector load from the vector memory (VMEM) into a register, one operation
//! of the vector ALU or the cross-lane unit (XLU), and a vector store from a
//! register into VMEM. A later slot sees the results of the earlier ones, and
//! a bundle sees the results of every bundle before it: the result of a
//! program is that of executing its slots one after another.
//!
//! The encoding, the operations and their semantics are documented in the
//! `vpu` crate (`hw/vpu/src/lib.rs`), which is where the hardware decodes
//! them; the golden model (`golden::vpu`) executes them from that
//! documentation. This module holds only what every party must spell the
//! same way: the opcode numbers and the positions of the fields, so that the
//! simulator's driver, the run CLI and the tests can write programs that the
//! RTL and the golden model both read.
//!
//! | bits | field |
//! | --- | --- |
//! | 127..96 | `imm`: a 32-bit immediate (`bcast`'s value, a rotation amount) |
//! | 95..88 | ALU slot opcode (0 = `nop`) |
//! | 87..82, 81..76, 75..70, 69..64 | `vd`, `vs1`, `vs2`, `vs3` |
//! | 63 | load slot enable |
//! | 61..56 | load destination register |
//! | 55..32 | load VMEM address |
//! | 31 | store slot enable |
//! | 29..24 | store source register |
//! | 23..0 | store VMEM address |
//!
//! Bits 62 and 30 are reserved and ignored. Register fields are 6 bits; a VPU
//! with V registers uses their low log2(V) bits. Address fields are 24 bits;
//! a VMEM of D words uses their low log2(D) bits.

use std::fmt;

/// Bits of a register field.
pub const REG_BITS: u32 = 6;
/// Bits of a VMEM address field.
pub const ADDR_BITS: u32 = 24;
/// Bits of one bundle.
pub const BUNDLE_BITS: u32 = 128;

macro_rules! ops {
    ($($(#[$doc:meta])* $name:ident = $code:literal, $text:literal;)+) => {
        /// An operation of the ALU slot.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Op {
            $($(#[$doc])* $name),+
        }

        impl Op {
            /// Every operation, in opcode order.
            pub const ALL: &'static [Op] = &[$(Op::$name),+];

            /// The opcode (bits 95..88 of a bundle).
            pub fn code(self) -> u8 {
                match self {
                    $(Op::$name => $code),+
                }
            }

            /// The assembler name, e.g. `add_f32`.
            pub fn name(self) -> &'static str {
                match self {
                    $(Op::$name => $text),+
                }
            }
        }
    };
}

ops! {
    /// No operation in the ALU slot.
    Nop = 0x00, "nop";
    /// int32 `vd = vs1 + vs2`, wrapping.
    AddI32 = 0x01, "add_i32";
    SubI32 = 0x02, "sub_i32";
    /// The low 32 bits of the product.
    MulI32 = 0x03, "mul_i32";
    MinI32 = 0x04, "min_i32";
    MaxI32 = 0x05, "max_i32";
    AndI32 = 0x06, "and_i32";
    OrI32 = 0x07, "or_i32";
    XorI32 = 0x08, "xor_i32";
    /// `vd = NOT vs1`.
    NotI32 = 0x09, "not_i32";
    /// `vs1 << (vs2 AND 31)`.
    ShlI32 = 0x0A, "shl_i32";
    ShrI32 = 0x0B, "shr_i32";
    SraI32 = 0x0C, "sra_i32";
    /// `max(vs1, 0)`.
    ReluI32 = 0x0D, "relu_i32";
    EqI32 = 0x0E, "eq_i32";
    NeI32 = 0x0F, "ne_i32";
    LtI32 = 0x10, "lt_i32";
    LeI32 = 0x11, "le_i32";
    LtuI32 = 0x12, "ltu_i32";
    LeuI32 = 0x13, "leu_i32";
    /// `vd = vs1 != 0 ? vs2 : vs3`, bit patterns unchanged.
    Select = 0x14, "select";
    /// Every element of `vd` = `imm`.
    Bcast = 0x15, "bcast";
    /// int32 accumulator `vs1` to int8 with multiplier `vs2`, shift
    /// `vs3[4:0]` and zero point `vs3[15:8]`; the int8 sign-extended.
    RequantI8 = 0x16, "requant_i8";
    AddF32 = 0x20, "add_f32";
    SubF32 = 0x21, "sub_f32";
    MulF32 = 0x22, "mul_f32";
    MinF32 = 0x23, "min_f32";
    MaxF32 = 0x24, "max_f32";
    ReluF32 = 0x25, "relu_f32";
    Relu6F32 = 0x26, "relu6_f32";
    EqF32 = 0x27, "eq_f32";
    NeF32 = 0x28, "ne_f32";
    LtF32 = 0x29, "lt_f32";
    LeF32 = 0x2A, "le_f32";
    CvtI32F32 = 0x2B, "cvt_i32_f32";
    CvtF32I32 = 0x2C, "cvt_f32_i32";
    /// fp32 to bf16, in the low 16 bits (the high 16 are zero).
    CvtF32Bf16 = 0x2D, "cvt_f32_bf16";
    /// bf16 in the low 16 bits of `vs1` to fp32.
    CvtBf16F32 = 0x2E, "cvt_bf16_f32";
    /// Cross-lane: element 0 of `vd` = the fold of `vs1` in halves, others 0.
    ReduceSumI32 = 0x40, "reduce_sum_i32";
    ReduceMaxI32 = 0x41, "reduce_max_i32";
    ReduceMinI32 = 0x42, "reduce_min_i32";
    ReduceSumF32 = 0x43, "reduce_sum_f32";
    ReduceMaxF32 = 0x44, "reduce_max_f32";
    ReduceMinF32 = 0x45, "reduce_min_f32";
    /// Cross-lane: `vd[s][l] = vs1[s][(l + imm) mod lanes]`.
    RotLane = 0x48, "rot_lane";
    /// Cross-lane: `vd[s][l] = vs1[(s + imm) mod sublanes][l]`.
    RotSublane = 0x49, "rot_sublane";
    /// Cross-lane: every element of `vd` = element 0 of `vs1`.
    Splat = 0x4A, "splat";
}

impl Op {
    /// The operation with opcode `code`, if there is one.
    pub fn from_code(code: u8) -> Option<Op> {
        Op::ALL.iter().copied().find(|o| o.code() == code)
    }

    /// The operation called `name`.
    pub fn from_name(name: &str) -> Option<Op> {
        Op::ALL.iter().copied().find(|o| o.name() == name)
    }

    /// Whether the operation needs the fp32 units (so is illegal on an
    /// int32-only VPU): fp32 arithmetic and compares, the conversions, and
    /// the fp32 reductions.
    pub fn needs_fp32(self) -> bool {
        matches!(self.code(), 0x20..=0x3F | 0x43..=0x45)
    }

    /// Whether the operation runs on the cross-lane unit.
    pub fn is_cross_lane(self) -> bool {
        self.code() & 0xC0 == 0x40
    }

    /// Whether the operation is a reduction (a fold in halves, one level per
    /// cycle).
    pub fn is_reduction(self) -> bool {
        matches!(self.code(), 0x40..=0x45)
    }

    /// How many of `vs1`, `vs2`, `vs3` the operation reads (it reads the
    /// first ones).
    pub fn sources(self) -> usize {
        use Op::*;
        match self {
            Nop | Bcast => 0,
            Select | RequantI8 => 3,
            NotI32 | ReluI32 | ReluF32 | Relu6F32 | CvtI32F32 | CvtF32I32 | CvtF32Bf16
            | CvtBf16F32 | RotLane | RotSublane | Splat => 1,
            o if o.is_reduction() => 1,
            _ => 2,
        }
    }

    /// Whether the operation writes `vd`.
    pub fn writes(self) -> bool {
        self != Op::Nop
    }
}

/// The parameter element of `requant_i8` (its `vs3` operand) for `shift`
/// (0..=31, bits 4..0) and `zero_point` (-128..=127, bits 15..8 as int8):
/// what a program writes so that the hardware reads those fields.
pub fn requant_param_word(shift: u32, zero_point: i32) -> u32 {
    (shift & 31) | ((zero_point as u8 as u32) << 8)
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The ALU slot of a bundle, as encoded: the opcode is kept as a number so
/// that a bundle can also carry an opcode no operation has (an illegal
/// instruction).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct AluSlot {
    pub opcode: u8,
    pub vd: u8,
    pub vs1: u8,
    pub vs2: u8,
    pub vs3: u8,
}

impl AluSlot {
    /// The operation, if the opcode names one.
    pub fn op(&self) -> Option<Op> {
        Op::from_code(self.opcode)
    }
}

/// A load or store slot: the register and the VMEM address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MemSlot {
    pub reg: u8,
    pub addr: u32,
}

/// One instruction: a load slot, an ALU slot and a store slot, executed in
/// that order, and the immediate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Bundle {
    pub load: Option<MemSlot>,
    pub alu: AluSlot,
    pub store: Option<MemSlot>,
    pub imm: u32,
}

fn field(word: u128, lo: u32, bits: u32) -> u32 {
    ((word >> lo) & ((1u128 << bits) - 1)) as u32
}

impl Bundle {
    /// A bundle that does nothing.
    pub fn nop() -> Bundle {
        Bundle::default()
    }

    /// A bundle with only `op` in its ALU slot (unused operands 0).
    pub fn op(op: Op, vd: u8, sources: &[u8]) -> Bundle {
        Bundle::nop().with_op(op, vd, sources)
    }

    /// This bundle with `op vd, sources...` in its ALU slot.
    pub fn with_op(mut self, op: Op, vd: u8, sources: &[u8]) -> Bundle {
        let s = |i: usize| sources.get(i).copied().unwrap_or(0);
        self.alu = AluSlot {
            opcode: op.code(),
            vd,
            vs1: s(0),
            vs2: s(1),
            vs3: s(2),
        };
        self
    }

    /// This bundle with `imm` as its immediate.
    pub fn with_imm(mut self, imm: u32) -> Bundle {
        self.imm = imm;
        self
    }

    /// This bundle loading VMEM word `addr` into register `reg` first.
    pub fn with_load(mut self, reg: u8, addr: u32) -> Bundle {
        self.load = Some(MemSlot { reg, addr });
        self
    }

    /// This bundle storing register `reg` into VMEM word `addr` last.
    pub fn with_store(mut self, reg: u8, addr: u32) -> Bundle {
        self.store = Some(MemSlot { reg, addr });
        self
    }

    /// The 128-bit encoding (see the module docs). Fields wider than their
    /// slot are truncated to it.
    pub fn encode(&self) -> u128 {
        let reg = |r: u8| u128::from(r) & ((1 << REG_BITS) - 1);
        let addr = |a: u32| u128::from(a) & ((1 << ADDR_BITS) - 1);
        let mem = |slot: Option<MemSlot>| match slot {
            Some(m) => (1 << 31) | (reg(m.reg) << 24) | addr(m.addr),
            None => 0,
        };
        let a = &self.alu;
        let alu = (u128::from(a.opcode) << 24)
            | (reg(a.vd) << 18)
            | (reg(a.vs1) << 12)
            | (reg(a.vs2) << 6)
            | reg(a.vs3);
        (u128::from(self.imm) << 96) | (alu << 64) | (mem(self.load) << 32) | mem(self.store)
    }

    /// The bundle a 128-bit word encodes (reserved bits ignored).
    pub fn decode(word: u128) -> Bundle {
        let mem = |lo: u32| {
            (field(word, lo + 31, 1) == 1).then(|| MemSlot {
                reg: field(word, lo + 24, REG_BITS) as u8,
                addr: field(word, lo, ADDR_BITS),
            })
        };
        Bundle {
            store: mem(0),
            load: mem(32),
            alu: AluSlot {
                opcode: field(word, 88, 8) as u8,
                vd: field(word, 82, REG_BITS) as u8,
                vs1: field(word, 76, REG_BITS) as u8,
                vs2: field(word, 70, REG_BITS) as u8,
                vs3: field(word, 64, REG_BITS) as u8,
            },
            imm: field(word, 96, 32),
        }
    }

    /// The encoding as four little-endian 32-bit words (the form of a
    /// simulator's wide port).
    pub fn words(&self) -> [u32; 4] {
        let w = self.encode();
        [
            w as u32,
            (w >> 32) as u32,
            (w >> 64) as u32,
            (w >> 96) as u32,
        ]
    }
}

impl fmt::Display for Bundle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(l) = self.load {
            parts.push(format!("vld v{}, [{}]", l.reg, l.addr));
        }
        let a = &self.alu;
        match a.op() {
            Some(Op::Nop) => {}
            Some(op) => parts.push(format!(
                "{op} v{}, v{}, v{}, v{} #{:#x}",
                a.vd, a.vs1, a.vs2, a.vs3, self.imm
            )),
            None => parts.push(format!("opcode {:#04x}", a.opcode)),
        }
        if let Some(s) = self.store {
            parts.push(format!("vst v{}, [{}]", s.reg, s.addr));
        }
        if parts.is_empty() {
            parts.push("nop".into());
        }
        f.write_str(&parts.join(" ; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opcodes_are_unique_and_names_round_trip() {
        for (i, a) in Op::ALL.iter().enumerate() {
            for b in &Op::ALL[i + 1..] {
                assert_ne!(a.code(), b.code(), "{a} and {b}");
            }
            assert_eq!(Op::from_code(a.code()), Some(*a));
            assert_eq!(Op::from_name(a.name()), Some(*a));
        }
        assert_eq!(Op::from_code(0xFF), None);
    }

    #[test]
    fn the_encoding_puts_fields_where_the_table_says() {
        let b = Bundle::op(Op::Select, 5, &[1, 2, 63])
            .with_load(7, 0xAB_CDEF)
            .with_store(9, 3)
            .with_imm(0xDEAD_BEEF);
        let w = b.encode();
        assert_eq!(field(w, 96, 32), 0xDEAD_BEEF);
        assert_eq!(field(w, 88, 8), 0x14);
        assert_eq!(field(w, 82, 6), 5);
        assert_eq!(field(w, 64, 6), 63);
        assert_eq!(field(w, 63, 1), 1);
        assert_eq!(field(w, 56, 6), 7);
        assert_eq!(field(w, 32, 24), 0xAB_CDEF);
        assert_eq!(field(w, 31, 1), 1);
        assert_eq!(field(w, 24, 6), 9);
        assert_eq!(field(w, 0, 24), 3);
        assert_eq!(Bundle::decode(w), b);
        assert_eq!(Bundle::decode(Bundle::nop().encode()), Bundle::nop());
        // Reserved bits are ignored.
        assert_eq!(Bundle::decode(w | (1 << 62) | (1 << 30)), b);
    }

    #[test]
    fn classes() {
        assert!(Op::AddF32.needs_fp32() && Op::CvtBf16F32.needs_fp32());
        assert!(Op::ReduceSumF32.needs_fp32() && !Op::ReduceSumI32.needs_fp32());
        assert!(!Op::RequantI8.needs_fp32() && !Op::Select.needs_fp32());
        assert!(Op::Splat.is_cross_lane() && !Op::Splat.is_reduction());
        assert!(Op::ReduceMinF32.is_reduction() && !Op::AddI32.is_cross_lane());
        assert_eq!(Op::RequantI8.sources(), 3);
        assert_eq!(Op::ReduceMaxI32.sources(), 1);
        assert_eq!(Op::Bcast.sources(), 0);
    }
}

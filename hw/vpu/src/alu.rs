//! The element ALU: one 32-bit element of every lane-local operation.
//!
//! Combinational, one per lane: it computes each operation of its units on
//! the three operands and selects the one the opcode names. One signed 32 x 32
//! multiplier serves `mul_i32` (the low 32 bits of the product),
//! `requant_i8` (SRDHM's 64-bit product) and `mul_f32` (the 48-bit product of
//! the zero-extended significands); one fp32 adder serves `add_f32` and
//! `sub_f32` (b with its sign flipped); one 33-bit arithmetic right shifter
//! serves `shl_i32`, `shr_i32` and `sra_i32` (a left shift is the right shift
//! of the bit-reversed operand, reversed), so a lane has one barrel shifter
//! for them, not three, without relying on a synthesis tool to merge them.

use config::vpu_isa::Op;
use config::VpuUnits;
use hw::arith::{
    bf16_to_f32_logic, f32_to_bf16_logic, f32_to_i32_logic, fp32_compare_logic, fp32_min_max_logic,
    fp32_mul_from_product, fp32_relu6_logic, fp32_relu_logic, fp32_significand, i32_to_f32_logic,
    requant_int8_from_product,
};
use hw::{cat, mux, Design, Expr, ModuleBuilder, ModuleDef, Ty};
use std::rc::Rc;

/// The element ALU of a lane with `units`: ports `op_i` (the opcode),
/// `a_i`, `b_i`, `c_i` (vs1, vs2, vs3), `imm_i`, and `result_o`. An opcode it
/// does not implement (cross-lane operations, illegal ones) gives 0.
pub fn alu(design: &mut Design, units: VpuUnits) -> Rc<ModuleDef> {
    let name = format!("vpu_alu_{units}");
    design.define(&name, &[("units", units.to_string())], |_, m| {
        m.doc("VPU element ALU: int32, fp32 (full units), conversions, requantization");
        let op = m.input("op_i", Ty::u(8));
        let a = m.input("a_i", Ty::u(32));
        let b = m.input("b_i", Ty::u(32));
        let c = m.input("c_i", Ty::u(32));
        let imm = m.input("imm_i", Ty::u(32));
        let result = build(m, units, op, a, b, c, imm);
        m.output("result_o", result);
    })
}

/// The ALU's logic; returns its result.
fn build(
    m: &mut ModuleBuilder,
    units: VpuUnits,
    op: Expr,
    a: Expr,
    b: Expr,
    c: Expr,
    imm: Expr,
) -> Expr {
    let is = |o: Op| op.is_eq(u32::from(o.code()));
    let (sa, sb) = (a.as_signed(), b.as_signed());
    let flag = |bit: Expr| bit.zext(32);

    // The shared multiplier: significands for mul_f32, the operands otherwise.
    let (mul_a, mul_b) = if units.has_fp32() {
        let fp = is(Op::MulF32);
        let sig_a = fp32_significand(m, a).zext(32).as_signed();
        let sig_b = fp32_significand(m, b).zext(32).as_signed();
        (mux(fp, sig_a, sa), mux(fp, sig_b, sb))
    } else {
        (sa, sb)
    };
    let product = m.wire("product", mul_a.mul_wide(mul_b));

    let shift = b.slice(0, 5);
    let left = is(Op::ShlI32);
    let fill = is(Op::SraI32) & a.msb();
    let shifter_in = cat(&[fill, mux(left, reversed(a), a)]).as_signed();
    let shifter_out = m.wire("shifter_out", shifter_in >> shift);
    m.waive(
        "UNUSEDSIGNAL",
        "shifter_out",
        "bit 32 only carries the fill bit; the result is the low 32 bits",
    );
    let shifted = shifter_out.trunc(32).as_unsigned();
    let shifts = m.wire("shifts", mux(left, reversed(shifted), shifted));
    let min_i = mux(sa.is_lt(sb), a, b);
    let max_i = mux(sa.is_lt(sb), b, a);
    let zero_point = c.slice(8, 8).as_signed();
    let requant = requant_int8_from_product(m, sa, sb, product, c.slice(0, 5), zero_point);
    let requant = m.wire("requant", requant.sext(32).as_unsigned());

    let mut cases: Vec<(Op, Expr)> = vec![
        (Op::AddI32, a + b),
        (Op::SubI32, a - b),
        (Op::MulI32, product.trunc(32).as_unsigned()),
        (Op::MinI32, min_i),
        (Op::MaxI32, max_i),
        (Op::AndI32, a & b),
        (Op::OrI32, a | b),
        (Op::XorI32, a ^ b),
        (Op::NotI32, !a),
        (Op::ShlI32, shifts),
        (Op::ShrI32, shifts),
        (Op::SraI32, shifts),
        (Op::ReluI32, mux(a.msb(), 0, a)),
        (Op::EqI32, flag(a.is_eq(b))),
        (Op::NeI32, flag(a.is_ne(b))),
        (Op::LtI32, flag(sa.is_lt(sb))),
        (Op::LeI32, flag(sa.is_le(sb))),
        (Op::LtuI32, flag(a.is_lt(b))),
        (Op::LeuI32, flag(a.is_le(b))),
        (Op::Select, mux(a.is_ne(0), b, c)),
        (Op::Bcast, imm),
        (Op::RequantI8, requant),
    ];
    if units.has_fp32() {
        let b_signed = mux(is(Op::SubF32), b ^ 0x8000_0000u32, b);
        let sum = hw::fp::fp32_add_logic(m, a, b_signed);
        let sum = m.wire("fp_sum", sum);
        let fmul = fp32_mul_from_product(m, a, b, product);
        let fmul = m.wire("fp_product", fmul);
        let min_max = fp32_min_max_logic(m, a, b, is(Op::MaxF32));
        let min_max = m.wire("fp_min_max", min_max);
        let cmp = fp32_compare_logic(m, a, b);
        let relu = fp32_relu_logic(m, a);
        let relu6 = fp32_relu6_logic(m, a);
        let to_f32 = i32_to_f32_logic(m, a);
        let to_i32 = f32_to_i32_logic(m, a);
        let to_bf16 = f32_to_bf16_logic(m, a);
        let from_bf16 = bf16_to_f32_logic(m, a.slice(0, 16));
        let half_zero = m.lit(Ty::u(16), 0);
        cases.extend([
            (Op::AddF32, sum),
            (Op::SubF32, sum),
            (Op::MulF32, fmul),
            (Op::MinF32, min_max),
            (Op::MaxF32, min_max),
            (Op::ReluF32, relu),
            (Op::Relu6F32, relu6),
            (Op::EqF32, flag(cmp.eq)),
            (Op::NeF32, flag(cmp.ne)),
            (Op::LtF32, flag(cmp.lt)),
            (Op::LeF32, flag(cmp.le)),
            (Op::CvtI32F32, to_f32),
            (Op::CvtF32I32, to_i32),
            (Op::CvtF32Bf16, cat(&[half_zero, to_bf16])),
            (Op::CvtBf16F32, from_bf16),
        ]);
    }
    let result = m.comb_default("result", Ty::u(32), 0u32);
    let mut sw = m.switch(op);
    for (o, value) in cases {
        sw = sw.case(u32::from(o.code()), |m| m.assign(result, value));
    }
    sw.default(|m| m.assign(result, 0u32));
    result.value()
}

/// `x` with its bits in the opposite order (bit 0 becomes the MSB): wiring.
fn reversed(x: Expr) -> Expr {
    let bits: Vec<Expr> = (0..x.width()).map(|i| x.bit(i)).collect();
    cat(&bits)
}

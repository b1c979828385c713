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
    rdbpot_logic, requant_int8_from_product, srdhm_from_product,
};
use hw::fp::{fp32_add_stage1, fp32_add_stage2, AddStage1};
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

    let product = shared_product(m, units, is, (a, b), (sa, sb));

    let shifts = shifter(m, is, a, b);
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
        cases.extend([(Op::AddF32, sum), (Op::SubF32, sum), (Op::MulF32, fmul)]);
        let max = is(Op::MaxF32);
        cases.extend(short_fp32_ops(m, a, b, max));
    }
    let result = m.comb_default("result", Ty::u(32), 0u32);
    let mut sw = m.switch(op);
    for (o, value) in cases {
        sw = sw.case(u32::from(o.code()), |m| m.assign(result, value));
    }
    sw.default(|m| m.assign(result, 0u32));
    result.value()
}

/// The multiplier every ALU form shares: the significands for `mul_f32`,
/// the signed operands (`sa`, `sb`: `a`, `b` as signed) otherwise; the full
/// 64-bit product. `is` tells whether the bundle's operation is the given one.
fn shared_product(
    m: &mut ModuleBuilder,
    units: VpuUnits,
    is: impl Fn(Op) -> Expr,
    (a, b): (Expr, Expr),
    (sa, sb): (Expr, Expr),
) -> Expr {
    let (mul_a, mul_b) = if units.has_fp32() {
        let fp = is(Op::MulF32);
        let sig_a = fp32_significand(m, a).zext(32).as_signed();
        let sig_b = fp32_significand(m, b).zext(32).as_signed();
        (mux(fp, sig_a, sa), mux(fp, sig_b, sb))
    } else {
        (sa, sb)
    };
    m.wire("product", mul_a.mul_wide(mul_b))
}

/// shl, shr and sra by `b`'s low five bits through one 33-bit arithmetic
/// right shifter: a left shift is the right shift of the bit-reversed
/// operand, reversed back; sra fills with the sign.
fn shifter(m: &mut ModuleBuilder, is: impl Fn(Op) -> Expr, a: Expr, b: Expr) -> Expr {
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
    m.wire("shifts", mux(left, reversed(shifted), shifted))
}

fn reversed(x: Expr) -> Expr {
    let bits: Vec<Expr> = (0..x.width()).map(|i| x.bit(i)).collect();
    cat(&bits)
}

/// A register boundary of the pipelined element ALU, in dataflow order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// The operands, as forwarded (before any arithmetic).
    Operands,
    /// The shared multiplier's product, the fp32 adder between its two
    /// stages and every other operation's finished result.
    Product,
    /// SRDHM's result (the requantization's high half) and the finished
    /// results of the multiplies and the fp32 add.
    High,
    /// The requantization's rounding shift (RDBPOT), before its zero point
    /// and clamp.
    Scaled,
    /// The selected result, before the write-back and the store.
    Result,
}

/// The cuts a pipeline of `depth` extra stages registers: the first `depth`
/// of this order, each the one that shortened the longest remaining path
/// most in the FPGA flows (docs/vpu.md, "Timing"): the multiplier and the
/// requantization's chain of carries first.
pub fn cuts(depth: u32) -> Vec<Cut> {
    const ORDER: [Cut; 5] = [
        Cut::Product,
        Cut::High,
        Cut::Scaled,
        Cut::Operands,
        Cut::Result,
    ];
    assert!(
        depth as usize <= ORDER.len(),
        "the element ALU has {} cuts, not {depth}",
        ORDER.len()
    );
    ORDER[..depth as usize].to_vec()
}

/// The element ALU of a lane with `units` and `depth` >= 1 extra stages
/// (registers at [`cuts`]): ports `op_i`, `a_i`, `b_i`, `c_i`, `imm_i`,
/// `x_i` (the element's cross-lane result, passed through for the
/// cross-lane operations), `en_i` (the pipeline advances) and `result_o`,
/// the result of the operation presented `depth` advances earlier. The
/// arithmetic is [`alu`]'s, cut between today's `hw::arith` and `hw::fp`
/// functions.
pub fn alu_pipelined(design: &mut Design, units: VpuUnits, depth: u32) -> Rc<ModuleDef> {
    assert!(depth >= 1, "depth 0 is the combinational ALU");
    let name = format!("vpu_alu_{units}_d{depth}");
    let params = [("units", units.to_string()), ("depth", depth.to_string())];
    design.define(&name, &params, |_, m| {
        m.doc("VPU element ALU, pipelined: int32, fp32 (full units), conversions, requantization");
        let ports = AluPorts {
            op: m.input("op_i", Ty::u(8)),
            a: m.input("a_i", Ty::u(32)),
            b: m.input("b_i", Ty::u(32)),
            c: m.input("c_i", Ty::u(32)),
            imm: m.input("imm_i", Ty::u(32)),
            x: m.input("x_i", Ty::u(32)),
        };
        let en = m.input("en_i", Ty::BOOL);
        let result = build_pipelined(m, units, &cuts(depth), en, ports);
        m.output("result_o", result);
    })
}

struct AluPorts {
    op: Expr,
    a: Expr,
    b: Expr,
    c: Expr,
    imm: Expr,
    x: Expr,
}

/// Registers `values` (named `<cut>_<name>`, loaded when `en`) if `cut` is
/// one of `cuts`; passes them otherwise.
fn stage<const N: usize>(
    m: &mut ModuleBuilder,
    cuts: &[Cut],
    cut: Cut,
    en: Expr,
    values: [(&str, Expr); N],
) -> [Expr; N] {
    if !cuts.contains(&cut) {
        return values.map(|(_, v)| v);
    }
    let prefix = format!("{cut:?}").to_lowercase();
    values.map(|(name, v)| {
        let r = m.reg(&format!("{prefix}_{name}"), v.ty());
        m.set_next(r, v);
        m.set_enable(r, en);
        r.q()
    })
}

/// The pipelined ALU's logic, level by level between the cuts.
fn build_pipelined(
    m: &mut ModuleBuilder,
    units: VpuUnits,
    cuts: &[Cut],
    en: Expr,
    p: AluPorts,
) -> Expr {
    let [op, a, b, c, imm, x] = stage(
        m,
        cuts,
        Cut::Operands,
        en,
        [
            ("op", p.op),
            ("a", p.a),
            ("b", p.b),
            ("c", p.c),
            ("imm", p.imm),
            ("x", p.x),
        ],
    );
    let is = |op: Expr, o: Op| op.is_eq(u32::from(o.code()));
    let (sa, sb) = (a.as_signed(), b.as_signed());
    let flag = |bit: Expr| bit.zext(32);

    // Level 1: the product; every operation but the multiplies, the
    // requantization and the fp32 add finishes here.
    let is_op = |o: Op| is(op, o);
    let product = shared_product(m, units, is_op, (a, b), (sa, sb));
    let shifts = shifter(m, is_op, a, b);
    let min_i = mux(sa.is_lt(sb), a, b);
    let max_i = mux(sa.is_lt(sb), b, a);
    let mut cases: Vec<(Op, Expr)> = vec![
        (Op::AddI32, a + b),
        (Op::SubI32, a - b),
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
    ];
    cases.extend(
        Op::ALL
            .iter()
            .filter(|o| o.is_cross_lane())
            .map(|&o| (o, x)),
    );
    let add_stage1 = units.has_fp32().then(|| {
        let b_signed = mux(is(op, Op::SubF32), b ^ 0x8000_0000u32, b);
        cases.extend(short_fp32_ops(m, a, b, is(op, Op::MaxF32)));
        fp32_add_stage1(m, a, b_signed)
    });
    let simple = select(m, "simple", op, cases);
    let requant_params = cat(&[c.slice(8, 8), c.slice(0, 5)]);

    // SRDHM reads its operands only to see both at -2^31 (its saturating
    // case); without the fp32 product that one bit is all that is carried.
    let min = m.lit(Ty::s(32), i32::MIN);
    let (a, b) = if units.has_fp32() {
        let [a, b] = stage(m, cuts, Cut::Product, en, [("a", a), ("b", b)]);
        (a, b)
    } else {
        let both_min = sa.is_eq(min) & sb.is_eq(min);
        let [both_min] = stage(m, cuts, Cut::Product, en, [("both_min", both_min)]);
        let only_min = mux(both_min, min.as_unsigned(), 0u32);
        (only_min, only_min)
    };
    let [op, product, simple, requant_params] = stage(
        m,
        cuts,
        Cut::Product,
        en,
        [
            ("op", op),
            ("product", product),
            ("simple", simple),
            ("requant", requant_params),
        ],
    );
    let add_stage1 = add_stage1.map(|s1| {
        let names = ["special", "special_value", "sign", "exp", "sum"];
        let values = s1.to_vec();
        assert_eq!(values.len(), names.len(), "fp32 adder stage 1 values");
        let staged: Vec<Expr> = names
            .iter()
            .zip(values)
            .map(|(&n, v)| stage(m, cuts, Cut::Product, en, [(n, v)])[0])
            .collect();
        AddStage1::from_vec(&staged)
    });

    // Level 2: SRDHM, the integer product's low half, the fp32 product's
    // rounding and the fp32 adder's second stage.
    let high = srdhm_from_product(m, a.as_signed(), b.as_signed(), product);
    let high = m.wire("srdhm", high);
    let mut cases = vec![(Op::MulI32, product.trunc(32).as_unsigned())];
    if let Some(s1) = add_stage1 {
        let sum = fp32_add_stage2(m, &s1);
        let sum = m.wire("fp_sum", sum);
        let fmul = fp32_mul_from_product(m, a, b, product);
        let fmul = m.wire("fp_product", fmul);
        cases.extend([(Op::AddF32, sum), (Op::SubF32, sum), (Op::MulF32, fmul)]);
    }
    let finished = m.comb_default("finished", Ty::u(32), simple);
    let mut sw = m.switch(op);
    for (o, value) in cases {
        sw = sw.case(u32::from(o.code()), |m| m.assign(finished, value));
    }
    drop(sw);
    let finished = finished.value();
    let requant = is(op, Op::RequantI8);

    let [requant, high, requant_params, finished] = stage(
        m,
        cuts,
        Cut::High,
        en,
        [
            ("requant", requant),
            ("high", high),
            ("params", requant_params),
            ("finished", finished),
        ],
    );

    // Level 3: the requantization's rounding shift.
    let scaled = rdbpot_logic(m, high, requant_params.slice(0, 5));
    let scaled = m.wire("rdbpot", scaled);
    let zero_point = requant_params.slice(5, 8).as_signed();
    let [requant, scaled, zero_point, finished] = stage(
        m,
        cuts,
        Cut::Scaled,
        en,
        [
            ("requant", requant),
            ("scaled", scaled),
            ("zero_point", zero_point),
            ("finished", finished),
        ],
    );

    // Level 4: the zero point and the clamp (requant_int8_from_product
    // after RDBPOT).
    let sum = scaled.sext(34) + zero_point.sext(34);
    let below = sum.is_lt(m.lit(Ty::s(34), -128));
    let above = sum.is_gt(m.lit(Ty::s(34), 127));
    let lo = m.lit(Ty::s(8), -128);
    let hi = m.lit(Ty::s(8), 127);
    let int8 = mux(below, lo, mux(above, hi, sum.trunc(8)));
    let requantized = m.wire("requant", int8.sext(32).as_unsigned());
    let result = m.wire("result", mux(requant, requantized, finished));

    let [result] = stage(m, cuts, Cut::Result, en, [("value", result)]);
    result
}

/// The value of the case `op` names among `cases`, 0 for the others, as the
/// combinational signal `name`.
fn select(m: &mut ModuleBuilder, name: &str, op: Expr, cases: Vec<(Op, Expr)>) -> Expr {
    let result = m.comb_default(name, Ty::u(32), 0u32);
    let mut sw = m.switch(op);
    for (o, value) in cases {
        sw = sw.case(u32::from(o.code()), |m| m.assign(result, value));
    }
    sw.default(|m| m.assign(result, 0u32));
    result.value()
}

/// The fp32 operations short enough for one cycle in every ALU form:
/// min/max (`want_max` picks), compares, ReLUs and the conversions, each
/// with the operation it answers.
fn short_fp32_ops(m: &mut ModuleBuilder, a: Expr, b: Expr, want_max: Expr) -> Vec<(Op, Expr)> {
    let min_max = fp32_min_max_logic(m, a, b, want_max);
    let min_max = m.wire("fp_min_max", min_max);
    let cmp = fp32_compare_logic(m, a, b);
    let relu = fp32_relu_logic(m, a);
    let relu6 = fp32_relu6_logic(m, a);
    let to_f32 = i32_to_f32_logic(m, a);
    let to_i32 = f32_to_i32_logic(m, a);
    let to_bf16 = f32_to_bf16_logic(m, a);
    let from_bf16 = bf16_to_f32_logic(m, a.slice(0, 16));
    let half_zero = m.lit(Ty::u(16), 0);
    vec![
        (Op::MinF32, min_max),
        (Op::MaxF32, min_max),
        (Op::ReluF32, relu),
        (Op::Relu6F32, relu6),
        (Op::EqF32, cmp.eq.zext(32)),
        (Op::NeF32, cmp.ne.zext(32)),
        (Op::LtF32, cmp.lt.zext(32)),
        (Op::LeF32, cmp.le.zext(32)),
        (Op::CvtI32F32, to_f32),
        (Op::CvtF32I32, to_i32),
        (Op::CvtF32Bf16, cat(&[half_zero, to_bf16])),
        (Op::CvtBf16F32, from_bf16),
    ]
}

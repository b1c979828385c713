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
    bf16_to_f32_logic, bf16_to_f32_piped, clamp_to_int8, f32_to_bf16_logic, f32_to_bf16_piped,
    f32_to_i32_logic, f32_to_i32_piped, fp32_compare_logic, fp32_compare_piped, fp32_min_max_logic,
    fp32_min_max_piped, fp32_mul_from_product, fp32_mul_from_product_piped, fp32_relu6_logic,
    fp32_relu_clip_logic, fp32_relu_logic, fp32_significand, i32_to_f32_logic, i32_to_f32_piped,
    int_mul_registered, rdbpot_logic, rdbpot_parts, requant_int8_from_product,
    srdhm_from_product_piped, MulRegs, BF16_TO_F32, F32_TO_BF16, F32_TO_I32, FP32_MUL, FP32_ORDER,
    I32_TO_F32, SRDHM,
};
use hw::fp::{fp32_add_piped, FP32_ADD};
use hw::pipeline::{CutPlan, Pipeline};
use hw::{cat, mux, Design, Expr, ModuleBuilder, ModuleDef, Ty};
use std::rc::Rc;

/// Whether the opcode `op` is `o`.
pub(crate) fn is_op(op: Expr, o: Op) -> Expr {
    op.is_eq(u32::from(o.code()))
}

/// Whether the opcode `op` is one of `ops` (an OR of equality compares).
fn is_one_of(op: Expr, ops: impl IntoIterator<Item = Op>) -> Expr {
    ops.into_iter()
        .map(|o| is_op(op, o))
        .reduce(|x, y| x | y)
        .expect("at least one operation")
}

/// The cross-lane operations, whose element result is the cross-lane unit's.
fn cross_lane_ops() -> impl Iterator<Item = Op> {
    Op::ALL.iter().copied().filter(|o| o.is_cross_lane())
}

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
    let is = |o: Op| is_op(op, o);
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
    select(m, "result", op, cases)
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
    let (mul_a, mul_b) = multiplier_operands(m, units, is, (a, b), (sa, sb));
    m.wire("product", mul_a.mul_wide(mul_b))
}

/// The shared multiplier's operands (see [`shared_product`]).
fn multiplier_operands(
    m: &mut ModuleBuilder,
    units: VpuUnits,
    is: impl Fn(Op) -> Expr,
    (a, b): (Expr, Expr),
    (sa, sb): (Expr, Expr),
) -> (Expr, Expr) {
    if units.has_fp32() {
        let fp = is(Op::MulF32);
        let sig_a = fp32_significand(m, a).zext(32).as_signed();
        let sig_b = fp32_significand(m, b).zext(32).as_signed();
        (mux(fp, sig_a, sa), mux(fp, sig_b, sb))
    } else {
        (sa, sb)
    }
}

/// shl, shr and sra by `b`'s low five bits through one 33-bit arithmetic
/// right shifter: a left shift is the right shift of the bit-reversed
/// operand, reversed back; sra fills with the sign.
fn shifter(m: &mut ModuleBuilder, is: impl Fn(Op) -> Expr, a: Expr, b: Expr) -> Expr {
    let shift = b.slice(0, 5);
    let left = is(Op::ShlI32);
    let fill = is(Op::SraI32) & a.msb();
    let shifter_in = cat(&[fill, mux(left, a.reverse_bits(), a)]).as_signed();
    let shifter_out = m.wire("shifter_out", shifter_in >> shift);
    m.waive(
        "UNUSEDSIGNAL",
        "shifter_out",
        "bit 32 only carries the fill bit; the result is the low 32 bits",
    );
    let shifted = shifter_out.trunc(32).as_unsigned();
    m.wire("shifts", mux(left, shifted.reverse_bits(), shifted))
}

/// Where the pipelined element ALU registers at a depth: each operation
/// runs on its own staged unit (`hw::fp`, `hw::arith`) with as many stages
/// as the depth leaves it, and its result joins the carried result (one
/// 2:1 select per unit, on a decoded flag carried beside it) in the segment
/// it finishes in. Segment 0 follows the lane's operand forwarding, segment
/// `depth` leads to the write-back register; a segment `j` in between lies
/// between the `j`-th and the `j + 1`-th register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    /// Extra execute stages: registers between the operands and the result.
    pub depth: u32,
    /// Every unit but the multiplier takes its operands registered, so that
    /// segment 0 holds the forwarding and no arithmetic.
    pub operands: bool,
    /// The shared multiplier's operand registers (a DSP block's input
    /// registers).
    pub mul_input: bool,
    /// Each DSP-sized piece's product registered before the pieces' sum
    /// (`hw::arith::INT_MUL`'s `partials` cut: the blocks' output
    /// registers), so that the sum's carry chains have a segment of their
    /// own.
    pub mul_partials: bool,
    /// The multiplier's product register (after the pieces' sum).
    pub mul_product: bool,
    /// SRDHM's result, and the int32 and fp32 products' results.
    pub high: bool,
    /// RDBPOT's result, before the zero point and the clamp.
    pub scaled: bool,
    /// SRDHM's nudged sum (`hw::arith::SRDHM`'s cut), so that its 64-bit
    /// carry chain and its rounding increment have a segment each.
    pub srdhm_nudged: bool,
    /// The fp32 product's rounded fraction and exponent (`FP32_MUL`'s
    /// `rounded` cut), so that its normalising and rounding and its final
    /// select have a segment each.
    pub mul_rounded: bool,
    /// The results registered before the last segment: every unit finishes
    /// a segment earlier, and the last segment holds only the select of the
    /// carried result and the units' registered results by their registered
    /// flags.
    pub result: bool,
    /// Without the fp32 units, SRDHM's check for both operands at -2^31 on
    /// the multiplier's registered operands (segment 1) instead of behind
    /// the forwarding select (segment 0).
    pub late_min_check: bool,
    /// RDBPOT's round bit carried beside the shifted value and added with
    /// the zero point (needs `scaled`).
    pub round_with_zero_point: bool,
    /// The rotations' and the splat's result comes from the lane in the
    /// segment after the operands' (`x_late_i`, already zero for other
    /// operations) and joins the short operations' gated terms there; the
    /// operands' `x_i` then carries only the reductions' result
    /// (`crate::LATE_CROSS_LANE_FROM`; needs `operands` and
    /// `one_hot_result`).
    pub late_cross_lane: bool,
    /// The short operations split over two segments and the result an OR of
    /// zero-gated terms ([`short_ops_one_hot`]) instead of a case select and
    /// a 2:1 select per unit: the short operations' carry chain, shifter and
    /// one-hot gates in the first segment, registered, their OR in the
    /// second (the result is carried to the end either way, so the latency
    /// is the same), and every unit's result joining as its flag AND its
    /// value. Exactly one term can be nonzero, the operation's, so the OR is
    /// the select; the segment then holds a shallow OR tree, not an opcode
    /// decode followed by a chain of selects.
    pub one_hot_result: bool,
}

impl Schedule {
    /// The schedule of `depth` (1 to 7) extra stages. The multiplier's
    /// chain takes its registers in this order, each the one that took
    /// most off its longest segment in the FPGA flows (docs/vpu.md,
    /// "Timing"): the product, SRDHM's result, the operands, RDBPOT's
    /// result. The other units take registered operands from depth 3 on,
    /// when the multiplier's operands are registered too. Depth 6 adds
    /// three at once: SRDHM's nudged sum, the fp32 product's rounding and
    /// the registered result select (the segment after the product held
    /// SRDHM, the fp32 product's rounding and the select behind them).
    /// Depth 7 registers the multiplier's pieces (after depth 6, the
    /// longest paths on the ECP5 ran from the DSP blocks through the
    /// pieces' sum to the product register).
    pub fn of(depth: u32) -> Schedule {
        assert!(
            (1..=7).contains(&depth),
            "the pipelined element ALU has 1 to 7 extra stages, not {depth}"
        );
        Schedule {
            depth,
            operands: depth >= 3,
            mul_product: depth >= 1,
            mul_partials: depth >= 7,
            high: depth >= 2,
            mul_input: depth >= 3,
            scaled: depth >= 4,
            srdhm_nudged: depth >= 6,
            mul_rounded: depth >= 6,
            result: depth >= 6,
            late_min_check: depth >= 6,
            round_with_zero_point: depth >= 6,
            one_hot_result: depth >= 6,
            late_cross_lane: depth >= crate::LATE_CROSS_LANE_FROM,
        }
    }

    /// The segment in which the units other than the multiplier start.
    fn start(&self) -> u32 {
        u32::from(self.operands)
    }

    /// The stages a unit of at most `max` stages starting in the first
    /// segment gets: as many as fit before the last segment (before the
    /// segment ahead of it when the results are registered).
    fn stages(&self, max: u32) -> u32 {
        max.min(self.depth - self.start() - u32::from(self.result))
    }

    /// The last segment a unit's logic may run in.
    fn last_unit_segment(&self) -> u32 {
        self.depth - u32::from(self.result)
    }
}

/// The element ALU of a lane with `units` and `depth` >= 1 extra stages
/// (placed by [`Schedule::of`]): ports `op_i`, `a_i`, `b_i`, `c_i`, `imm_i`,
/// `x_i` (the element's cross-lane result, passed through for the
/// cross-lane operations), `en_i` (the pipeline advances) and `result_o`,
/// the result of the operation presented `depth` advances earlier. Every
/// operation gives [`alu`]'s bits.
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
            x_late: Schedule::of(depth)
                .late_cross_lane
                .then(|| m.input("x_late_i", Ty::u(32))),
        };
        let en = m.input("en_i", Ty::BOOL);
        let result = build_pipelined(m, units, Schedule::of(depth), en, ports);
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
    /// The rotations' and the splat's result, in the segment after the
    /// operands' (`Schedule::late_cross_lane`).
    x_late: Option<Expr>,
}

/// A value carried down the pipeline: its copy in each segment from the
/// one it is computed in, registers (`<name>_s<segment>`, loaded when the
/// pipeline advances) made only as far as a reader asks.
struct Carried {
    name: String,
    from: u32,
    copies: Vec<Expr>,
    en: Expr,
}

impl Carried {
    fn new(name: &str, value: Expr, from: u32, en: Expr) -> Carried {
        Carried {
            name: name.to_string(),
            from,
            copies: vec![value],
            en,
        }
    }

    /// The value in segment `seg`.
    fn at(&mut self, m: &mut ModuleBuilder, seg: u32) -> Expr {
        assert!(
            seg >= self.from,
            "{} is computed in segment {}",
            self.name,
            self.from
        );
        while self.from + (self.copies.len() as u32) <= seg {
            let j = self.from + self.copies.len() as u32;
            let last = *self.copies.last().expect("a carried value has a copy");
            let r = m.reg(&format!("{}_s{j}", self.name), last.ty());
            m.set_next(r, last);
            m.set_enable(r, self.en);
            self.copies.push(r.q());
        }
        self.copies[(seg - self.from) as usize]
    }
}

/// The operations whose results come from a staged unit rather than the
/// first segment's select.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    MulI32,
    Requant,
    AddF32,
    MulF32,
    MinMaxF32,
    CompareF32,
    I32ToF32,
    F32ToI32,
    F32ToBf16,
    Bf16ToF32,
}

impl Unit {
    const INT: [Unit; 2] = [Unit::MulI32, Unit::Requant];
    const FP: [Unit; 8] = [
        Unit::AddF32,
        Unit::MulF32,
        Unit::MinMaxF32,
        Unit::CompareF32,
        Unit::I32ToF32,
        Unit::F32ToI32,
        Unit::F32ToBf16,
        Unit::Bf16ToF32,
    ];

    fn ops(self) -> &'static [Op] {
        match self {
            Unit::MulI32 => &[Op::MulI32],
            Unit::Requant => &[Op::RequantI8],
            Unit::AddF32 => &[Op::AddF32, Op::SubF32],
            Unit::MulF32 => &[Op::MulF32],
            Unit::MinMaxF32 => &[Op::MinF32, Op::MaxF32],
            Unit::CompareF32 => &[Op::EqF32, Op::NeF32, Op::LtF32, Op::LeF32],
            Unit::I32ToF32 => &[Op::CvtI32F32],
            Unit::F32ToI32 => &[Op::CvtF32I32],
            Unit::F32ToBf16 => &[Op::CvtF32Bf16],
            Unit::Bf16ToF32 => &[Op::CvtBf16F32],
        }
    }

    fn name(self) -> &'static str {
        match self {
            Unit::MulI32 => "mul_i32",
            Unit::Requant => "requant",
            Unit::AddF32 => "add_f32",
            Unit::MulF32 => "mul_f32",
            Unit::MinMaxF32 => "min_max_f32",
            Unit::CompareF32 => "cmp_f32",
            Unit::I32ToF32 => "i32_to_f32",
            Unit::F32ToI32 => "f32_to_i32",
            Unit::F32ToBf16 => "f32_to_bf16",
            Unit::Bf16ToF32 => "bf16_to_f32",
        }
    }
}

/// Runs one unit on its own pipeline, as deep as the schedule allows
/// (`plan`'s cuts, registers named after `name`), from the operands'
/// segment; returns the segment its result is ready in and the result.
fn on_unit<T>(
    m: &mut ModuleBuilder,
    s: Schedule,
    en: Expr,
    (plan, name): (CutPlan, &str),
    build: impl FnOnce(&mut ModuleBuilder, &mut Pipeline) -> T,
) -> (u32, T) {
    let mut pipe = Pipeline::new(plan, name, s.stages(plan.max_stages()), Some(en));
    let value = build(m, &mut pipe);
    (s.start() + pipe.finish(), value)
}

/// The pipelined ALU's logic: the units, then the carried result.
fn build_pipelined(
    m: &mut ModuleBuilder,
    units: VpuUnits,
    s: Schedule,
    en: Expr,
    p: AluPorts,
) -> Expr {
    let staged: Vec<Unit> = if units.has_fp32() {
        Unit::INT.iter().chain(Unit::FP.iter()).copied().collect()
    } else {
        Unit::INT.to_vec()
    };
    // Which unit gives the result: decoded once, carried as one bit each.
    let mut flags: Vec<(Unit, Carried)> = staged
        .iter()
        .map(|&u| {
            let hit = is_one_of(p.op, u.ops().iter().copied());
            (u, Carried::new(&format!("sel_{}", u.name()), hit, 0, en))
        })
        .collect();
    let mut op = Carried::new("op", p.op, 0, en);
    let st = s.start();
    let carry = |m: &mut ModuleBuilder, name: &str, v: Expr| Carried::new(name, v, 0, en).at(m, st);
    let [a, b, c, imm, x] = [
        ("opnd_a", p.a),
        ("opnd_b", p.b),
        ("opnd_c", p.c),
        ("opnd_imm", p.imm),
        ("opnd_x", p.x),
    ]
    .map(|(name, v)| carry(m, name, v));
    let op_st = op.at(m, st);
    // Results as their units finish: (segment, unit, value).
    let mut finished: Vec<(u32, Unit, Expr)> = Vec::new();

    let last = multiplier_chain(m, units, s, en, &p, &mut finished);

    if units.has_fp32() {
        let sub = is_op(op_st, Op::SubF32);
        let b_signed = mux(sub, b ^ 0x8000_0000u32, b);
        let (seg_sum, sum) = on_unit(m, s, en, (FP32_ADD, "add"), |m, pipe| {
            fp32_add_piped(m, pipe, a, b_signed)
        });
        finished.push((seg_sum, Unit::AddF32, sum));

        let want_max = is_op(op_st, Op::MaxF32);
        let (seg_min_max, min_max) = on_unit(m, s, en, (FP32_ORDER, "min_max"), |m, pipe| {
            fp32_min_max_piped(m, pipe, a, b, want_max)
        });
        finished.push((seg_min_max, Unit::MinMaxF32, min_max));

        let (seg, cmp) = on_unit(m, s, en, (FP32_ORDER, "cmp"), |m, pipe| {
            fp32_compare_piped(m, pipe, a, b)
        });
        let op_done = op.at(m, seg);
        let flag = mux(
            is_op(op_done, Op::EqF32),
            cmp.eq,
            mux(
                is_op(op_done, Op::NeF32),
                cmp.ne,
                mux(is_op(op_done, Op::LtF32), cmp.lt, cmp.le),
            ),
        );
        finished.push((seg, Unit::CompareF32, flag.zext(32)));

        let (seg_v, v) = on_unit(m, s, en, (I32_TO_F32, "i32_to_f32"), |m, pipe| {
            i32_to_f32_piped(m, pipe, a)
        });
        finished.push((seg_v, Unit::I32ToF32, v));

        let (seg_v, v) = on_unit(m, s, en, (F32_TO_I32, "f32_to_i32"), |m, pipe| {
            f32_to_i32_piped(m, pipe, a)
        });
        finished.push((seg_v, Unit::F32ToI32, v));

        let (seg_v, v) = on_unit(m, s, en, (F32_TO_BF16, "f32_to_bf16"), |m, pipe| {
            f32_to_bf16_piped(m, pipe, a)
        });
        let half_zero = m.lit(Ty::u(16), 0);
        finished.push((seg_v, Unit::F32ToBf16, cat(&[half_zero, v])));

        let (seg_v, v) = on_unit(m, s, en, (BF16_TO_F32, "bf16_to_f32"), |m, pipe| {
            bf16_to_f32_piped(m, pipe, a.slice(0, 16))
        });
        finished.push((seg_v, Unit::Bf16ToF32, v));
    }

    let (select_seg, simple) = if s.one_hot_result {
        // The chain subtracts for every operation but add_i32.
        let subtract = !is_op(p.op, Op::AddI32);
        let subtract = Carried::new("short_subtract", subtract, 0, en).at(m, st);
        let x_late = p.x_late.inspect(|_| {
            assert!(
                s.operands && st == 1,
                "the late cross-lane result joins in segment 1"
            );
        });
        let operands = [a, b, c, imm, x];
        short_ops_one_hot(m, units, (st, en), (op_st, subtract), operands, x_late)
    } else {
        assert!(
            p.x_late.is_none(),
            "a late cross-lane result needs the one-hot result"
        );
        (st, short_ops(m, units, op_st, [a, b, c, imm, x]))
    };

    // With registered results, the units finishing in the segment before
    // the last hand their results over through a register of their own, so
    // the last segment selects among registers only.
    assert!(
        finished
            .iter()
            .all(|&(seg, u, _)| (st..=s.last_unit_segment()).contains(&seg)
                || (s.result && u == Unit::Requant && seg == s.depth)),
        "every unit finishes between the first segment and its last"
    );
    assert!(last <= s.depth, "the multiplier's chain fits the depth");
    if s.result {
        for f in finished.iter_mut().filter(|f| f.0 == s.last_unit_segment()) {
            let name = format!("{}_done", f.1.name());
            let v = Carried::new(&name, f.2, f.0, en).at(m, s.depth);
            *f = (s.depth, f.1, v);
        }
    }

    // The carried result: each unit's result replaces it in the segment
    // the unit finishes in, when the unit's flag is set.
    assert!(
        finished.iter().all(|f| f.0 >= select_seg),
        "no unit finishes before the short operations' select"
    );
    let mut result = Carried::new("result", simple, select_seg, en);
    for seg in select_seg..=s.depth {
        let mut value = result.at(m, seg);
        for &(_, unit, v) in finished.iter().filter(|f| f.0 == seg) {
            let (_, sel) = flags
                .iter_mut()
                .find(|(u, _)| *u == unit)
                .expect("every staged unit has a flag");
            let hit = sel.at(m, seg);
            value = if s.one_hot_result {
                // Only the operation's own term is nonzero (see
                // `Schedule::one_hot_result`).
                value | mux(hit, v, 0u32)
            } else {
                mux(hit, v, value)
            };
        }
        let value = m.wire(&format!("result_in_s{seg}"), value);
        result = Carried::new("result", value, seg, en);
    }
    result.at(m, s.depth)
}

/// The short operations: every operation short enough for one segment
/// after its operands, the cross-lane results passed through, selected by
/// the opcode `op` in the operands' segment. Returns the select's value.
fn short_ops(m: &mut ModuleBuilder, units: VpuUnits, op: Expr, operands: [Expr; 5]) -> Expr {
    let is = |o: Op| is_op(op, o);
    let [a, b, c, imm, x] = operands;
    let (sa, sb) = (a.as_signed(), b.as_signed());
    let flag = |bit: Expr| bit.zext(32);
    let shifts = shifter(m, is, a, b);
    let [add, sub, lt, le, ltu, leu, eq] = [
        a + b,
        a - b,
        sa.is_lt(sb),
        sa.is_le(sb),
        a.is_lt(b),
        a.is_le(b),
        a.is_eq(b),
    ];
    let mut cases: Vec<(Op, Expr)> = vec![
        (Op::AddI32, add),
        (Op::SubI32, sub),
        (Op::MinI32, mux(lt, a, b)),
        (Op::MaxI32, mux(lt, b, a)),
        (Op::AndI32, a & b),
        (Op::OrI32, a | b),
        (Op::XorI32, a ^ b),
        (Op::NotI32, !a),
        (Op::ShlI32, shifts),
        (Op::ShrI32, shifts),
        (Op::SraI32, shifts),
        (Op::ReluI32, mux(a.msb(), 0, a)),
        (Op::EqI32, flag(eq)),
        (Op::NeI32, flag(!eq)),
        (Op::LtI32, flag(lt)),
        (Op::LeI32, flag(le)),
        (Op::LtuI32, flag(ltu)),
        (Op::LeuI32, flag(leu)),
        (Op::Select, mux(a.is_ne(0), b, c)),
        (Op::Bcast, imm),
    ];
    cases.extend(cross_lane_ops().map(|o| (o, x)));
    if units.has_fp32() {
        cases.push((Op::ReluF32, fp32_relu_logic(m, a)));
        cases.push((Op::Relu6F32, fp32_relu6_logic(m, a)));
    }
    select(m, "simple", op, cases)
}

/// The short operations as [`short_ops`] computes them, split over two
/// segments and selected as an OR of zero-gated terms
/// (`Schedule::one_hot_result`): in
/// segment `st` one carry chain, the shifter and the opcode's decode run
/// side by side, and what each operation takes is registered as a gate or as
/// an already gated value: `take_a`, `take_b`, `take_c` (min, max, relu_i32
/// and select pick an operand), the bitwise operations' value, the compare's
/// flag, the fp32 ReLUs' value, `imm` for bcast and `x` for the cross-lane
/// operations, each 0 for every other operation. Segment `st + 1` ORs
/// those with the gated sum and shift. Returns the select's segment and
/// value (0 for an operation that is not a short one).
///
/// The one chain is a + b for add_i32 and a + !b + 1 = a - b for every other
/// operation (`subtract`, decoded from the opcode in segment 0 and carried),
/// so it gives sub_i32's difference and, from its carry out, the compares:
/// a < b unsigned exactly when a - b borrows, and signed the same unless the
/// signs differ, when a is less exactly when it is negative; the `le` forms
/// are the `lt` forms or equality.
fn short_ops_one_hot(
    m: &mut ModuleBuilder,
    units: VpuUnits,
    (st, en): (u32, Expr),
    (op, subtract): (Expr, Expr),
    operands: [Expr; 5],
    x_late: Option<Expr>,
) -> (u32, Expr) {
    let is = |o: Op| is_op(op, o);
    let [a, b, c, imm, x] = operands;
    let late = |m: &mut ModuleBuilder, name: &str, v: Expr| {
        let v = m.wire(&format!("{name}_in"), v);
        Carried::new(name, v, st, en).at(m, st + 1)
    };
    let gated = |bit: Expr, v: Expr| mux(bit, v, 0u32);

    // The chain and the shifter.
    let shifts = shifter(m, is, a, b);
    let addend = mux(subtract, !b, b);
    let chain = a.zext(33) + addend.zext(33) + subtract.zext(33);
    let chain = m.wire("short_chain", chain);
    let ltu = !chain.msb();
    let lt = mux(a.msb() ^ b.msb(), a.msb(), ltu);
    let eq = a.is_eq(b);
    let sum = late(m, "short_sum", chain.trunc(32));
    let shifts = late(m, "short_shifts", shifts);

    // The gates, decoded beside them.
    let sel_sum = late(m, "short_sel_sum", is_one_of(op, [Op::AddI32, Op::SubI32]));
    let shift_ops = [Op::ShlI32, Op::ShrI32, Op::SraI32];
    let sel_shift = late(m, "short_sel_shift", is_one_of(op, shift_ops));
    let nonzero = a.is_ne(0);
    let (min, max, select) = (is(Op::MinI32), is(Op::MaxI32), is(Op::Select));
    let take_a = (min & lt) | (max & !lt) | (is(Op::ReluI32) & !a.msb());
    let take_b = (min & !lt) | (max & lt) | (select & nonzero);
    let take_c = select & !nonzero;
    let take_a = late(m, "short_take_a", take_a);
    let take_b = late(m, "short_take_b", take_b);
    let take_c = late(m, "short_take_c", take_c);
    let bitwise = gated(is(Op::AndI32), a & b)
        | gated(is(Op::OrI32), a | b)
        | gated(is(Op::XorI32), a ^ b)
        | gated(is(Op::NotI32), !a);
    let bitwise = late(m, "short_bitwise", bitwise);
    let flag = (is(Op::EqI32) & eq)
        | (is(Op::NeI32) & !eq)
        | (is(Op::LtI32) & lt)
        | (is(Op::LeI32) & (lt | eq))
        | (is(Op::LtuI32) & ltu)
        | (is(Op::LeuI32) & (ltu | eq));
    let flag = late(m, "short_flag", flag);
    let imm = late(m, "short_imm", gated(is(Op::Bcast), imm));
    let x = gated(is_one_of(op, cross_lane_ops()), x);
    let x = late(m, "short_x", x_late.map_or(x, |late| x | late));
    let fp_relus = if units.has_fp32() {
        let relu = fp32_relu_clip_logic(m, a, is(Op::Relu6F32));
        let either = is_one_of(op, [Op::ReluF32, Op::Relu6F32]);
        Some(late(m, "short_fp_relu", gated(either, relu)))
    } else {
        None
    };
    let [a, b, c] = [("short_a", a), ("short_b", b), ("short_c", c)].map(|(n, v)| late(m, n, v));

    let mut value = gated(sel_sum, sum)
        | gated(sel_shift, shifts)
        | gated(take_a, a)
        | gated(take_b, b)
        | gated(take_c, c)
        | bitwise
        | flag.zext(32)
        | imm
        | x;
    if let Some(relus) = fp_relus {
        value = value | relus;
    }
    (st + 1, m.wire("simple", value))
}

/// The shared multiplier and what reads its product: the int32 product,
/// the fp32 product's rounding, and the requantization (SRDHM, RDBPOT, zero
/// point and clamp), with the registers of `s`; pushes their results to
/// `finished` and returns the segment the requantization finishes in.
fn multiplier_chain(
    m: &mut ModuleBuilder,
    units: VpuUnits,
    s: Schedule,
    en: Expr,
    p: &AluPorts,
    finished: &mut Vec<(u32, Unit, Expr)>,
) -> u32 {
    let is = |o: Op| is_op(p.op, o);
    let (sa, sb) = (p.a.as_signed(), p.b.as_signed());
    let (mul_a, mul_b) = multiplier_operands(m, units, is, (p.a, p.b), (sa, sb));
    let regs = MulRegs {
        input: s.mul_input,
        partials: s.mul_partials,
        output: s.mul_product,
    };
    let product = int_mul_registered(m, "mul", mul_a, mul_b, regs, Some(en));
    let mut seg = u32::from(s.mul_input) + u32::from(s.mul_partials) + u32::from(s.mul_product);

    // SRDHM reads its operands only to see both at -2^31 (its saturating
    // case); without the fp32 product that one bit is all that is carried.
    let min = m.lit(Ty::s(32), i32::MIN);
    let (a, b) = if units.has_fp32() {
        let a = Carried::new("mul_a", p.a, 0, en).at(m, seg);
        let b = Carried::new("mul_b", p.b, 0, en).at(m, seg);
        (a, b)
    } else if s.late_min_check {
        // The compares after the operands' register, not behind the lane's
        // forwarding select.
        let a1 = Carried::new("mul_min_a", p.a, 0, en).at(m, 1).as_signed();
        let b1 = Carried::new("mul_min_b", p.b, 0, en).at(m, 1).as_signed();
        let both_min = a1.is_eq(min) & b1.is_eq(min);
        let both_min = Carried::new("mul_both_min", both_min, 1, en).at(m, seg);
        let only_min = mux(both_min, min.as_unsigned(), 0u32);
        (only_min, only_min)
    } else {
        let both_min = sa.is_eq(min) & sb.is_eq(min);
        let both_min = Carried::new("mul_both_min", both_min, 0, en).at(m, seg);
        let only_min = mux(both_min, min.as_unsigned(), 0u32);
        (only_min, only_min)
    };
    let mut shift = Carried::new("requant_shift", p.c.slice(0, 5), 0, en);
    let mut zero_point = Carried::new("requant_zero_point", p.c.slice(8, 8), 0, en);

    let mut nudged = Pipeline::with_cuts(SRDHM, "srdhm", vec![s.srdhm_nudged], Some(en));
    let high = srdhm_from_product_piped(m, &mut nudged, a.as_signed(), b.as_signed(), product);
    let high = m.wire("srdhm", high);
    finished.push((seg, Unit::MulI32, product.trunc(32).as_unsigned()));
    if units.has_fp32() {
        // The product comes from the shared multiplier: of the fp32
        // multiplier's cuts only `rounded` may be registered.
        let mut cuts = vec![false; FP32_MUL.cuts.len()];
        cuts[FP32_MUL.cut_number("rounded")] = s.mul_rounded;
        let mut rounded = Pipeline::with_cuts(FP32_MUL, "fmul", cuts, Some(en));
        let fmul = fp32_mul_from_product_piped(m, &mut rounded, a, b, product);
        let seg_fmul = seg + rounded.finish();
        finished.push((seg_fmul, Unit::MulF32, m.wire("fp_product", fmul)));
    }
    seg += nudged.finish();
    let mut high = Carried::new("high", high, seg, en);
    seg += u32::from(s.high);
    let shift = shift.at(m, seg);
    let high = high.at(m, seg);
    let sum = if s.round_with_zero_point {
        // RDBPOT's round bit joins the zero point's addition (as its carry
        // in) in the next segment, so that its own increment is not a
        // second carry chain after the shift. The sum is exact in 34 bits
        // either way.
        let (shifted, round) = rdbpot_parts(m, high, shift);
        let shifted = m.wire("rdbpot_shifted", shifted);
        let mut shifted = Carried::new("scaled", shifted, seg, en);
        let mut round = Carried::new("scaled_round", round, seg, en);
        seg += u32::from(s.scaled);
        let zero_point = zero_point.at(m, seg).as_signed();
        shifted.at(m, seg).sext(34) + zero_point.sext(34) + round.at(m, seg).zext(34).as_signed()
    } else {
        let scaled = rdbpot_logic(m, high, shift);
        let scaled = m.wire("rdbpot", scaled);
        let mut scaled = Carried::new("scaled", scaled, seg, en);
        seg += u32::from(s.scaled);

        // The zero point and the clamp (requant_int8_from_product after RDBPOT).
        let zero_point = zero_point.at(m, seg).as_signed();
        scaled.at(m, seg).sext(34) + zero_point.sext(34)
    };
    let int8 = if s.round_with_zero_point {
        // The clamp's compares as reductions of the sum's high bits (an int8
        // has bits 33..7 all equal to its sign), not carry chains after the
        // sum's.
        let high_bits = sum.slice(7, 27);
        let negative = sum.msb();
        let (below, above) = (negative & !high_bits.all(), !negative & high_bits.any());
        let lo = m.lit(Ty::s(8), -128);
        let hi = m.lit(Ty::s(8), 127);
        mux(below, lo, mux(above, hi, sum.trunc(8)))
    } else {
        clamp_to_int8(m, sum)
    };
    // With registered results the int8 is registered, not its extension.
    let (seg, int8) = if s.result {
        let int8 = m.wire("requant_int8", int8);
        (
            seg + 1,
            Carried::new("requant_done", int8, seg, en).at(m, seg + 1),
        )
    } else {
        (seg, int8)
    };
    let requantized = m.wire("requant", int8.sext(32).as_unsigned());
    finished.push((seg, Unit::Requant, requantized));
    seg
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

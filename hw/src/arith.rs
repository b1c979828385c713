//! The numerics contract's element operations beyond [`crate::fp`], as logic:
//! the fp32 product, min/max, compares and ReLUs, the conversions between
//! int32, fp32 and bf16, and int8 requantization. The vector unit's lanes
//! and reduction units are built from these; any block may use them.
//!
//! Each function builds combinational logic in the module under
//! construction and returns its value; fp32 and bf16 values are bit patterns
//! (`u32`, `u16`), int32 values `u32` or `s32` as noted. The rules are those
//! of `docs/numerics.md#ftz-rne` (FTZ-RNE): subnormal inputs read as zeros of their sign,
//! one rounding to nearest-even as if the exponent range were unbounded,
//! tininess judged after rounding, every NaN result the canonical NaN.
//!
//! Two operations need a multiplier: the fp32 product (24 x 24 significand
//! bits) and requantization's SRDHM (32 x 32 signed). Both come in two forms:
//! one with its own multiplier, and one taking the product from outside
//! (`*_from_product`), so that a unit can share one signed 32 x 32
//! multiplier between them and `mul_i32`, as the vector lane does.
//!
//! The fp32 product, min/max, compares and conversions also come pipelined
//! (`*_piped` on a [`Pipeline`], `*_unit` as a module), each with its cut
//! points and their ranking in a [`CutPlan`]; so does an integer multiplier
//! shaped for FPGA DSP blocks ([`int_mul_registered`]).

use crate::builder::{cat, mux, Expr, ModuleBuilder};
use crate::design::Design;
use crate::fp::CANONICAL_NAN_F32;
use crate::ir::ModuleDef;
use crate::pipeline::{unit_module, CutPlan, Pipeline, UnitModule};
use crate::ty::Ty;
use std::rc::Rc;

/// The canonical bf16 NaN, the top half of [`CANONICAL_NAN_F32`].
pub const CANONICAL_NAN_BF16: u32 = 0x7FC0;
/// fp32 +6.0, the upper bound of ReLU6.
pub const F32_SIX: u32 = 0x40C0_0000;

/// The fields of an fp32 pattern and its class with subnormals read as zero
/// (rule 1).
#[derive(Debug, Clone, Copy)]
pub struct Fp32Fields {
    pub sign: Expr,
    /// Biased exponent, u8.
    pub exp: Expr,
    /// Fraction, u23.
    pub frac: Expr,
    /// Zero or subnormal.
    pub zero: Expr,
    pub inf: Expr,
    pub nan: Expr,
    /// The value after rule 1: a subnormal becomes the zero of its sign.
    pub flushed: Expr,
}

/// Splits an fp32 pattern (u32) into its fields and classes.
#[track_caller]
pub fn fp32_fields(m: &mut ModuleBuilder, x: Expr) -> Fp32Fields {
    assert_eq!(x.ty(), Ty::u(32), "fp32 values are u32 patterns");
    let sign = x.msb();
    let exp = x.slice(23, 8);
    let frac = x.slice(0, 23);
    let exp_max = exp.all();
    let frac_zero = frac.is_eq(0);
    let zero = exp.is_eq(0);
    let signed_zero = cat(&[sign, m.lit(Ty::u(31), 0)]);
    Fp32Fields {
        sign,
        exp,
        frac,
        zero,
        inf: exp_max & frac_zero,
        nan: exp_max & !frac_zero,
        flushed: mux(zero, signed_zero, x),
    }
}

/// The significand `1.frac` of a normal fp32 value, u24.
#[track_caller]
pub fn fp32_significand(m: &mut ModuleBuilder, x: Expr) -> Expr {
    cat(&[m.lit(Ty::BOOL, 1), x.slice(0, 23)])
}

/// The fp32 product `mul32(a, b)` with its own 24 x 24 multiplier.
#[track_caller]
pub fn fp32_mul_logic(m: &mut ModuleBuilder, a: Expr, b: Expr) -> Expr {
    let mut p = Pipeline::combinational_from(FP32_MUL, 0);
    fp32_mul_piped(m, &mut p, a, b)
}

/// Cut points of the fp32 multiplier: `operands` (the inputs, where a DSP
/// block's input registers are), `partials` (the products of the
/// significands' DSP-sized pieces, [`INT_MUL`]'s), `product` (the 48-bit
/// significand product, where its output registers are), `rounded` (after
/// the rounding increment and the exponent sum). The path: the 24 x 24
/// product (on an iCE40 four `SB_MAC16` and the adders that join their
/// partial products), the normalising select, the 23-bit increment, the
/// exponent sum that adds its carry, the range compares and the final
/// select. Ranking, from the critical paths nextpnr reports on an iCE40
/// UP5K (`docs/hw.md`): `product` (85 ns in all, 62 of them after the
/// product), `rounded` (the rounding and exponent from the final select;
/// 43 ns remain, the multiplier's), then `partials` (on the ECP5 the pieces'
/// sum after the DSP blocks is the longest path left in a SparseCore
/// combine lane once the product is registered; docs/sparsecore.md),
/// `operands` last (the inputs' wires off the multiplier; a caller that
/// registers its operands itself takes the unit at one stage fewer).
pub const FP32_MUL: CutPlan = CutPlan {
    unit: "fp32_mul",
    cuts: &["operands", "partials", "product", "rounded"],
    ranking: &[2, 3, 1, 0],
};

/// [`fp32_mul_logic`] on a pipeline of [`FP32_MUL`].
#[track_caller]
pub fn fp32_mul_piped(m: &mut ModuleBuilder, p: &mut Pipeline, a: Expr, b: Expr) -> Expr {
    let [a, b] = p.cut(m, 0, [("a", a), ("b", b)]);
    let sa = fp32_significand(m, a);
    let sb = fp32_significand(m, b);
    if !p.registers(1) {
        let (product, []) = mul_in_pieces(m, p, 1, sa, sb, []);
        return mul_back(m, p, MulOperands::Raw(a, b), product);
    }
    // Across the pieces' registers go the operands' signs, exponents and
    // classes, as across the product's.
    let (fa, fb) = MulOperands::Raw(a, b).classes(m);
    let (product, crossed) = mul_in_pieces(m, p, 1, sa, sb, MulClass::crossing(&fa, &fb));
    let (fa, fb) = MulClass::pair(&crossed);
    mul_back(m, p, MulOperands::Classes(fa, fb), product)
}

/// The fp32 product `mul32(a, b)`, given `product`, the u48 product of the
/// two significands ([`fp32_significand`]; only its low 48 bits are read, so
/// a wider product of the zero-extended significands serves too).
///
/// The exact product of two normal values is `P x 2^(ea + eb - 2*127 - 46)`
/// with 2^46 <= P < 2^48: it is normalised by one bit, rounded once at 24
/// bits (guard and sticky from the rest), then flushed to zero if its
/// biased exponent is below 1 after rounding, or overflowed to infinity
/// above 254.
#[track_caller]
pub fn fp32_mul_from_product(m: &mut ModuleBuilder, a: Expr, b: Expr, product: Expr) -> Expr {
    let mut p = Pipeline::combinational_from(FP32_MUL, 2);
    mul_back(m, &mut p, MulOperands::Raw(a, b), product)
}

/// [`fp32_mul_from_product`] on a pipeline of [`FP32_MUL`]: its `product`
/// and `rounded` cuts (the `operands` and `partials` cuts are passed with
/// nothing across them, as the product comes from outside, so they must not
/// be registered).
#[track_caller]
pub fn fp32_mul_from_product_piped(
    m: &mut ModuleBuilder,
    p: &mut Pipeline,
    a: Expr,
    b: Expr,
    product: Expr,
) -> Expr {
    assert!(
        !p.registers(0) && !p.registers(1),
        "the product comes from outside: nothing crosses the operands and partials cuts"
    );
    let [] = p.cut(m, 0, []);
    let [] = p.cut(m, 1, []);
    mul_back(m, p, MulOperands::Raw(a, b), product)
}

/// What the multiplier's back end gets of its operands: the operands
/// themselves, or what a registered cut carried of them.
enum MulOperands {
    Raw(Expr, Expr),
    Classes(MulClass, MulClass),
}

impl MulOperands {
    /// Both operands' classes.
    fn classes(self, m: &mut ModuleBuilder) -> (MulClass, MulClass) {
        match self {
            MulOperands::Raw(a, b) => {
                let (fa, fb) = (fp32_fields(m, a), fp32_fields(m, b));
                (MulClass::of(&fa), MulClass::of(&fb))
            }
            MulOperands::Classes(fa, fb) => (fa, fb),
        }
    }
}

/// The fp32 multiplier from its `product` cut on.
#[track_caller]
fn mul_back(
    m: &mut ModuleBuilder,
    pipe: &mut Pipeline,
    operands: MulOperands,
    product: Expr,
) -> Expr {
    assert!(product.width() >= 48, "the significand product has 48 bits");
    // Across a registered cut go the operands' signs, exponents and
    // classes (22 bits), not the operands.
    let (p48, fa, fb) = match operands {
        MulOperands::Raw(a, b) if !pipe.registers(2) => {
            let [product, a, b] = pipe.cut(m, 2, [("product", product), ("a", a), ("b", b)]);
            let p48 = product.slice(0, 48);
            let (fa, fb) = (fp32_fields(m, a), fp32_fields(m, b));
            (p48, MulClass::of(&fa), MulClass::of(&fb))
        }
        operands => {
            let (fa, fb) = operands.classes(m);
            let mut crossing = vec![("product", product.slice(0, 48))];
            crossing.extend(MulClass::crossing(&fa, &fb));
            let crossed = pipe.cut_vec(m, 2, &crossing);
            let (fa, fb) = MulClass::pair(&crossed[1..]);
            (crossed[0], fa, fb)
        }
    };
    let sign = fa.sign ^ fb.sign;
    let carry = p48.msb();
    // The product without its leading one (at bit 47 or 46): 23 fraction
    // bits, the guard bit, 23 sticky bits.
    let zero = m.lit(Ty::BOOL, 0);
    let norm = mux(carry, p48.slice(0, 47), cat(&[p48.slice(0, 46), zero]));
    let guard = norm.bit(23);
    let sticky = norm.slice(0, 23).any();
    let round_up = guard & (sticky | norm.bit(24));
    let frac = norm.slice(24, 23) + round_up.zext(23);
    // 1.11..1 rounded up is 10.0..0: the fraction wraps and the exponent steps.
    let frac_carry = frac.is_eq(0) & round_up;
    let ext = |e: Expr| e.zext(11).as_signed();
    let exp = ext(fa.exp) + ext(fb.exp) - 127 + ext(carry) + ext(frac_carry);
    let [sign, frac, exp, na, ia, za, nb, ib, zb] = pipe.cut(
        m,
        3,
        [
            ("sign", sign),
            ("frac", frac),
            ("exp", exp),
            ("nan_a", fa.nan),
            ("inf_a", fa.inf),
            ("zero_a", fa.zero),
            ("nan_b", fb.nan),
            ("inf_b", fb.inf),
            ("zero_b", fb.zero),
        ],
    );
    let finite = cat(&[sign, exp.trunc(8).as_unsigned(), frac]);
    let signed_zero = cat(&[sign, m.lit(Ty::u(31), 0)]);
    let signed_inf = cat(&[sign, m.lit(Ty::u(8), 0xff), m.lit(Ty::u(23), 0)]);
    let nan = na | nb | (ia & zb) | (za & ib);
    let inf = ia | ib | exp.is_ge(255);
    let zero = za | zb | exp.is_le(0);
    let canonical = m.lit(Ty::u(32), CANONICAL_NAN_F32);
    mux(
        nan,
        canonical,
        mux(inf, signed_inf, mux(zero, signed_zero, finite)),
    )
}

/// What the multiplier needs of an operand besides its significand.
struct MulClass {
    sign: Expr,
    exp: Expr,
    nan: Expr,
    inf: Expr,
    zero: Expr,
}

impl MulClass {
    /// Both operands' classes as they cross a registered cut (22 bits):
    /// `sign_a`, `exp_a`, `nan_a`, `inf_a`, `zero_a`, then b's.
    fn crossing(fa: &MulClass, fb: &MulClass) -> [(&'static str, Expr); 10] {
        [
            ("sign_a", fa.sign),
            ("exp_a", fa.exp),
            ("nan_a", fa.nan),
            ("inf_a", fa.inf),
            ("zero_a", fa.zero),
            ("sign_b", fb.sign),
            ("exp_b", fb.exp),
            ("nan_b", fb.nan),
            ("inf_b", fb.inf),
            ("zero_b", fb.zero),
        ]
    }

    /// The two classes back from the values of [`MulClass::crossing`].
    fn pair(v: &[Expr]) -> (MulClass, MulClass) {
        let class = |k: usize| MulClass {
            sign: v[k],
            exp: v[k + 1],
            nan: v[k + 2],
            inf: v[k + 3],
            zero: v[k + 4],
        };
        assert_eq!(v.len(), 10, "two operands' classes");
        (class(0), class(5))
    }

    fn of(f: &Fp32Fields) -> MulClass {
        MulClass {
            sign: f.sign,
            exp: f.exp,
            nan: f.nan,
            inf: f.inf,
            zero: f.zero,
        }
    }
}

/// Whether `a` is below `b` in the order of rule 7 (fp32, neither a NaN):
/// by sign, then magnitude, with -0 below +0. Takes values already flushed.
fn fp32_order_lt(a: Expr, b: Expr) -> Expr {
    let (sa, sb) = (a.msb(), b.msb());
    let (ma, mb) = (a.slice(0, 31), b.slice(0, 31));
    let same_sign_lt = mux(sa, mb.is_lt(ma), ma.is_lt(mb));
    mux(sa ^ sb, sa, same_sign_lt)
}

/// fp32 `min32(a, b)` or `max32(a, b)` (rule 7): a NaN operand gives the
/// canonical NaN; -0 is below +0; a subnormal reads, and is returned, as the
/// zero of its sign. `want_max` (one bit) picks max.
#[track_caller]
pub fn fp32_min_max_logic(m: &mut ModuleBuilder, a: Expr, b: Expr, want_max: Expr) -> Expr {
    let mut p = Pipeline::combinational_from(FP32_ORDER, 0);
    fp32_min_max_piped(m, &mut p, a, b, want_max)
}

/// Cut points of fp32 min/max and of the compares: `flushed` (after
/// classification and the flush of subnormals to zero) and `ordered`
/// (after the magnitude compare; for min/max, once the choice of operand
/// is made). The path is the exponent's zero test, the flush select, the
/// 31-bit magnitude compare (a carry chain) and a select of 32 bits (or
/// the compares' one-bit logic). Ranking: `flushed`, which takes the
/// classification and flush (about three LUT levels) off the compare, then
/// `ordered`, which takes the final select or logic (one or two).
pub const FP32_ORDER: CutPlan = CutPlan {
    unit: "fp32_order",
    cuts: &["flushed", "ordered"],
    ranking: &[0, 1],
};

/// [`fp32_min_max_logic`] on a pipeline of [`FP32_ORDER`].
#[track_caller]
pub fn fp32_min_max_piped(
    m: &mut ModuleBuilder,
    p: &mut Pipeline,
    a: Expr,
    b: Expr,
    want_max: Expr,
) -> Expr {
    let fa = fp32_fields(m, a);
    let fb = fp32_fields(m, b);
    let [flushed_a, flushed_b, nan_a, nan_b, want_max] = p.cut(
        m,
        0,
        [
            ("flushed_a", fa.flushed),
            ("flushed_b", fb.flushed),
            ("nan_a", fa.nan),
            ("nan_b", fb.nan),
            ("want_max", want_max),
        ],
    );
    let a_lt_b = fp32_order_lt(flushed_a, flushed_b);
    // Equal values after rule 1 have equal patterns, so the tie goes either way.
    let take_a = a_lt_b ^ want_max;
    let [take_a, flushed_a, flushed_b, nan_a, nan_b] = p.cut(
        m,
        1,
        [
            ("take_a", take_a),
            ("flushed_a", flushed_a),
            ("flushed_b", flushed_b),
            ("nan_a", nan_a),
            ("nan_b", nan_b),
        ],
    );
    let canonical = m.lit(Ty::u(32), CANONICAL_NAN_F32);
    mux(nan_a | nan_b, canonical, mux(take_a, flushed_a, flushed_b))
}

/// The fp32 compares of "VPU semantics", each one bit.
#[derive(Debug, Clone, Copy)]
pub struct Fp32Compare {
    pub eq: Expr,
    pub ne: Expr,
    pub lt: Expr,
    pub le: Expr,
}

/// fp32 compares: subnormals read as zero, -0 == +0; eq, lt, le are false and
/// ne is true when either operand is a NaN.
#[track_caller]
pub fn fp32_compare_logic(m: &mut ModuleBuilder, a: Expr, b: Expr) -> Fp32Compare {
    let mut p = Pipeline::combinational_from(FP32_ORDER, 0);
    fp32_compare_piped(m, &mut p, a, b)
}

/// [`fp32_compare_logic`] on a pipeline of [`FP32_ORDER`].
#[track_caller]
pub fn fp32_compare_piped(
    m: &mut ModuleBuilder,
    p: &mut Pipeline,
    a: Expr,
    b: Expr,
) -> Fp32Compare {
    let fa = fp32_fields(m, a);
    let fb = fp32_fields(m, b);
    let ordered = !(fa.nan | fb.nan);
    let both_zero = fa.zero & fb.zero;
    let [flushed_a, flushed_b, ordered, both_zero] = p.cut(
        m,
        0,
        [
            ("flushed_a", fa.flushed),
            ("flushed_b", fb.flushed),
            ("ordered", ordered),
            ("both_zero", both_zero),
        ],
    );
    let eq = ordered & (both_zero | flushed_a.is_eq(flushed_b));
    let lt = ordered & !both_zero & fp32_order_lt(flushed_a, flushed_b);
    let [eq, lt] = p.cut(m, 1, [("eq", eq), ("lt", lt)]);
    Fp32Compare {
        eq,
        ne: !eq,
        lt,
        le: lt | eq,
    }
}

/// `relu_f32(x) = max32(x, +0)`: a NaN gives the canonical NaN; negative
/// values, -0 and subnormals give +0; positive normals and +inf pass.
#[track_caller]
pub fn fp32_relu_logic(m: &mut ModuleBuilder, x: Expr) -> Expr {
    let f = fp32_fields(m, x);
    let canonical = m.lit(Ty::u(32), CANONICAL_NAN_F32);
    let zero = m.lit(Ty::u(32), 0);
    mux(f.nan, canonical, mux(f.sign | f.zero, zero, x))
}

/// `relu6_f32(x) = min32(max32(x, +0), 6.0)`.
#[track_caller]
pub fn fp32_relu6_logic(m: &mut ModuleBuilder, x: Expr) -> Expr {
    let r = fp32_relu_logic(m, x);
    // r is +0, a positive value, +inf or the canonical NaN; positive patterns
    // order as unsigned integers.
    let six = m.lit(Ty::u(32), F32_SIX);
    let is_nan = r.is_eq(CANONICAL_NAN_F32);
    mux(!is_nan & r.is_gt(six), six, r)
}

/// `relu_f32(x)` when `clip` (one bit) is low and `relu6_f32(x)` when it is
/// high, as one select on `x`'s classes: the compare against 6.0 is taken
/// on `x` itself, beside the classes, not after relu's select as in
/// [`fp32_relu6_logic`] (a positive pattern orders as an unsigned integer,
/// and every other class is decided before the compare matters). The bits
/// of [`fp32_relu_logic`] and [`fp32_relu6_logic`].
#[track_caller]
pub fn fp32_relu_clip_logic(m: &mut ModuleBuilder, x: Expr, clip: Expr) -> Expr {
    let f = fp32_fields(m, x);
    let six = m.lit(Ty::u(31), F32_SIX);
    let above_six = x.slice(0, 31).is_gt(six);
    let canonical = m.lit(Ty::u(32), CANONICAL_NAN_F32);
    mux(
        f.nan,
        canonical,
        mux(f.sign | f.zero, 0u32, mux(clip & above_six, F32_SIX, x)),
    )
}

/// Shifts `x` left until its top bit is set (if `x` is not zero), by binary
/// search over shift distances; returns the shifted value without that top
/// bit (one bit narrower than `x`) and the distance (u6 for 32 bits).
fn normalize(m: &mut ModuleBuilder, x: Expr) -> (Expr, Expr) {
    let w = x.width();
    let mut v = x;
    let mut distance = m.lit(Ty::u(crate::ty::bits_for(u64::from(w))), 0);
    for k in [16u32, 8, 4, 2].into_iter().filter(|&k| k < w) {
        let top_clear = v.slice(w - k, k).is_eq(0);
        v = mux(top_clear, v << k, v);
        distance = mux(top_clear, distance + k, distance);
    }
    // The last one-bit step drops the leading bit instead of keeping it.
    let top_clear = v.msb().is_eq(0);
    let zero = m.lit(Ty::BOOL, 0);
    let low = mux(
        top_clear,
        cat(&[v.slice(0, w - 2), zero]),
        v.slice(0, w - 1),
    );
    (low, mux(top_clear, distance + 1, distance))
}

/// int32 -> fp32 (`x` as u32 bits): round to nearest even at 24 bits.
#[track_caller]
pub fn i32_to_f32_logic(m: &mut ModuleBuilder, x: Expr) -> Expr {
    let mut p = Pipeline::combinational_from(I32_TO_F32, 0);
    i32_to_f32_piped(m, &mut p, x)
}

/// Cut points of int32 -> fp32: `magnitude` (after the negation),
/// `normalised` (after the leading-zero shift), `rounded` (after the
/// rounding increment and the exponent). The path: 32-bit negation, five
/// steps of zero test and shift, guard and sticky, the 23-bit increment,
/// the exponent, the zero select. Ranking: `normalised` (the negation and
/// the shift before it, the rounding after: the nearest to the middle),
/// `magnitude` (the negation off the shift), `rounded`.
pub const I32_TO_F32: CutPlan = CutPlan {
    unit: "i32_to_f32",
    cuts: &["magnitude", "normalised", "rounded"],
    ranking: &[1, 0, 2],
};

/// [`i32_to_f32_logic`] on a pipeline of [`I32_TO_F32`].
#[track_caller]
pub fn i32_to_f32_piped(m: &mut ModuleBuilder, p: &mut Pipeline, x: Expr) -> Expr {
    assert_eq!(x.ty(), Ty::u(32), "int32 values here are u32 patterns");
    let neg = x.msb();
    // |i32::MIN| = 2^31 fits the unsigned 32 bits.
    let mag = mux(neg, -x, x);
    let [neg, mag] = p.cut(m, 0, [("neg", neg), ("mag", mag)]);
    // `norm` holds the 31 bits below the leading one: 23 fraction bits, the
    // guard bit, 7 sticky bits.
    let (norm, lz) = normalize(m, mag);
    // Whether the input was zero: tested before the first registered cut
    // that it crosses, so that one bit crosses instead of 32.
    let early = p.registers(1) || p.registers(2);
    let zero_src = if early { mag.is_eq(0) } else { mag };
    let [neg, norm, lz, zero_src] = p.cut(
        m,
        1,
        [
            ("neg", neg),
            ("norm", norm),
            ("lz", lz),
            ("is_zero", zero_src),
        ],
    );
    let guard = norm.bit(7);
    let sticky = norm.slice(0, 7).any();
    let round_up = guard & (sticky | norm.bit(8));
    let frac = norm.slice(8, 23) + round_up.zext(23);
    let frac_carry = frac.is_eq(0) & round_up;
    // The leading one at bit 31 - lz is worth 2^(31 - lz): biased 158 - lz.
    let exp = m.lit(Ty::u(8), 158) - lz.zext(8) + frac_carry.zext(8);
    let [neg, frac, exp, zero_src] = p.cut(
        m,
        2,
        [
            ("neg", neg),
            ("frac", frac),
            ("exp", exp),
            ("is_zero", zero_src),
        ],
    );
    let zero = m.lit(Ty::u(32), 0);
    let is_zero = if early { zero_src } else { zero_src.is_eq(0) };
    mux(is_zero, zero, cat(&[neg, exp, frac]))
}

/// fp32 -> int32 (result as u32 bits): round to the nearest integer, ties to
/// even, saturate to [-2^31, 2^31 - 1]; NaN, zeros and subnormals give 0.
#[track_caller]
pub fn f32_to_i32_logic(m: &mut ModuleBuilder, x: Expr) -> Expr {
    let mut p = Pipeline::combinational_from(F32_TO_I32, 0);
    f32_to_i32_piped(m, &mut p, x)
}

/// Cut points of fp32 -> int32: `shifted` (after the exponent's compares
/// and the left and right shifts of the significand), `magnitude` (after
/// rounding the right-shifted value). The path: exponent compare, a shift
/// of up to 31 bits, the sticky OR of 25 bits, the 24-bit increment, the
/// select of the magnitude, the 32-bit negation, the saturating select.
/// Ranking: `shifted` (near the middle), `magnitude` (the negation from
/// the rounding).
pub const F32_TO_I32: CutPlan = CutPlan {
    unit: "f32_to_i32",
    cuts: &["shifted", "magnitude"],
    ranking: &[0, 1],
};

/// [`f32_to_i32_logic`] on a pipeline of [`F32_TO_I32`].
#[track_caller]
pub fn f32_to_i32_piped(m: &mut ModuleBuilder, p: &mut Pipeline, x: Expr) -> Expr {
    let f = fp32_fields(m, x);
    let sig = fp32_significand(m, x);
    // The value is sig x 2^(exp - 150). From exp = 158 on, |x| >= 2^31.
    let saturate = f.inf | f.exp.is_ge(158);
    let big = f.exp.is_ge(150);
    // exp - 150 in 0..=7, computed in three bits (150 = 6 mod 8).
    let left_by = f.exp.slice(0, 3) - m.lit(Ty::u(3), 6);
    let left = sig.zext(32) << left_by;
    // Right shifts of 1..=31 bits; from 26 on the value is below 1/4 and
    // rounds to 0, which the shift gives too.
    let right_by = mux(
        f.exp.is_le(119),
        m.lit(Ty::u(5), 31),
        // 150 - exp in 1..=30, computed in five bits (150 = 22 mod 32).
        m.lit(Ty::u(5), 22) - f.exp.slice(0, 5),
    );
    let wide = cat(&[sig, m.lit(Ty::u(26), 0)]) >> right_by;
    let [sign, nan, zero_in, saturate, big, left, wide] = p.cut(
        m,
        0,
        [
            ("sign", f.sign),
            ("nan", f.nan),
            ("zero", f.zero),
            ("saturate", saturate),
            ("big", big),
            ("left", left),
            ("wide", wide),
        ],
    );
    let int = wide.slice(26, 24);
    let half = wide.bit(25);
    let rest = wide.slice(0, 25).any();
    let rounded = int.zext(32) + (half & (rest | int.bit(0))).zext(32);
    let mag = mux(big, left, rounded);
    let [sign, nan, zero_in, saturate, mag] = p.cut(
        m,
        1,
        [
            ("sign", sign),
            ("nan", nan),
            ("zero", zero_in),
            ("saturate", saturate),
            ("mag", mag),
        ],
    );
    let zero = m.lit(Ty::u(32), 0);
    let max = m.lit(Ty::u(32), 0x7FFF_FFFFu32);
    let min = m.lit(Ty::u(32), 0x8000_0000u32);
    mux(
        nan | zero_in,
        zero,
        mux(saturate, mux(sign, min, max), mux(sign, -mag, mag)),
    )
}

/// fp32 -> bf16 (u16): rules 1-5 at 8 significand bits. A normal input never
/// rounds below 2^-126 (2^-126 is a bf16), and rounding up from the largest
/// finite bf16 carries into the exponent and gives infinity, as rule 4 says.
#[track_caller]
pub fn f32_to_bf16_logic(m: &mut ModuleBuilder, x: Expr) -> Expr {
    let mut p = Pipeline::combinational_from(F32_TO_BF16, 0);
    f32_to_bf16_piped(m, &mut p, x)
}

/// The cut point of fp32 -> bf16: `rounded`, after the round-up decision
/// (a 15-bit OR) and the 16-bit increment, before the class select.
pub const F32_TO_BF16: CutPlan = CutPlan {
    unit: "f32_to_bf16",
    cuts: &["rounded"],
    ranking: &[0],
};

/// [`f32_to_bf16_logic`] on a pipeline of [`F32_TO_BF16`].
#[track_caller]
pub fn f32_to_bf16_piped(m: &mut ModuleBuilder, p: &mut Pipeline, x: Expr) -> Expr {
    let f = fp32_fields(m, x);
    let top = x.slice(16, 16);
    let round_up = x.bit(15) & (x.slice(0, 15).any() | x.bit(16));
    let rounded = top + round_up.zext(16);
    let [nan, zero, inf, sign, top, rounded] = p.cut(
        m,
        0,
        [
            ("nan", f.nan),
            ("zero", f.zero),
            ("inf", f.inf),
            ("sign", f.sign),
            ("top", top),
            ("rounded", rounded),
        ],
    );
    let canonical = m.lit(Ty::u(16), CANONICAL_NAN_BF16);
    let signed_zero = cat(&[sign, m.lit(Ty::u(15), 0)]);
    mux(
        nan,
        canonical,
        mux(zero, signed_zero, mux(inf, top, rounded)),
    )
}

/// bf16 (u16) -> fp32: append 16 zero bits; a subnormal gives the zero of its
/// sign, a NaN the canonical NaN.
#[track_caller]
pub fn bf16_to_f32_logic(m: &mut ModuleBuilder, x: Expr) -> Expr {
    let mut p = Pipeline::combinational_from(BF16_TO_F32, 0);
    bf16_to_f32_piped(m, &mut p, x)
}

/// The cut point of bf16 -> fp32: `classified`, after the exponent and
/// fraction tests and the flush, before the NaN select.
pub const BF16_TO_F32: CutPlan = CutPlan {
    unit: "bf16_to_f32",
    cuts: &["classified"],
    ranking: &[0],
};

/// [`bf16_to_f32_logic`] on a pipeline of [`BF16_TO_F32`].
#[track_caller]
pub fn bf16_to_f32_piped(m: &mut ModuleBuilder, p: &mut Pipeline, x: Expr) -> Expr {
    assert_eq!(x.ty(), Ty::u(16), "bf16 values are u16 patterns");
    let wide = cat(&[x, m.lit(Ty::u(16), 0)]);
    let f = fp32_fields(m, wide);
    let [nan, flushed] = p.cut(m, 0, [("nan", f.nan), ("flushed", f.flushed)]);
    let canonical = m.lit(Ty::u(32), CANONICAL_NAN_F32);
    mux(nan, canonical, flushed)
}

/// SRDHM(a, b), the saturating rounding doubling high multiply, given the
/// s64 product `a x b`: `(ab + nudge) / 2^31` truncated toward zero, nudge =
/// 2^30 for ab >= 0 else 1 - 2^30; 2^31 - 1 for a = b = -2^31. s32.
#[track_caller]
pub fn srdhm_from_product(m: &mut ModuleBuilder, a: Expr, b: Expr, product: Expr) -> Expr {
    let mut p = Pipeline::combinational_from(SRDHM, 0);
    srdhm_from_product_piped(m, &mut p, a, b, product)
}

/// The cut point of SRDHM after its product: `nudged`, the quotient's bits
/// of the nudged sum, whether it rounds toward zero and the saturating
/// case, before the rounding increment and the saturating select. The
/// nudge's 64-bit carry chain runs before it, the increment after.
pub const SRDHM: CutPlan = CutPlan {
    unit: "srdhm",
    cuts: &["nudged"],
    ranking: &[0],
};

/// [`srdhm_from_product`] on a pipeline of [`SRDHM`].
#[track_caller]
pub fn srdhm_from_product_piped(
    m: &mut ModuleBuilder,
    p: &mut Pipeline,
    a: Expr,
    b: Expr,
    product: Expr,
) -> Expr {
    assert_eq!(product.ty(), Ty::s(64), "the product is s64");
    let min = m.lit(Ty::s(32), i32::MIN);
    let saturate = a.is_eq(min) & b.is_eq(min);
    let negative = product.msb();
    let nudge = mux(
        negative,
        m.lit(Ty::s(64), 1 - (1i64 << 30)),
        m.lit(Ty::s(64), 1i64 << 30),
    );
    // |ab| <= 2^62 outside the saturating case, so no sum below wraps.
    let s = product + nudge;
    // Division by 2^31 truncating toward zero: the floor, bits 62..31 (the
    // quotient fits 32 bits), plus one for a negative s with a remainder.
    let floor = s.slice(31, 32).as_signed();
    let round_toward_zero = s.msb() & s.slice(0, 31).any();
    let [floor, round_toward_zero, saturate] = p.cut(
        m,
        0,
        [
            ("floor", floor),
            ("round", round_toward_zero),
            ("saturate", saturate),
        ],
    );
    let q = floor + round_toward_zero.zext(32).as_signed();
    mux(saturate, m.lit(Ty::s(32), i32::MAX), q)
}

/// RDBPOT(x, e), the rounding divide by 2^e (x s32, e u5): remainder =
/// x AND (2^e - 1), threshold = (mask >> 1) + (x < 0); the result is
/// (x >> e) + (remainder > threshold), arithmetic shift. s32.
///
/// The compare needs no subtraction: for e >= 1 the threshold is
/// 2^(e-1) - 1 (x >= 0) or 2^(e-1) (x < 0), and the remainder, below 2^e,
/// exceeds it exactly when its bit e-1 is set and, for x < 0, some bit
/// below it too; for e = 0 the remainder is 0 and never exceeds it. So the
/// round bit is a bit select and an OR of masked bits, beside the shift and
/// its increment, and chooses between the two: one carry chain (the
/// increment) after the shift instead of two (the compare, then the
/// increment).
#[track_caller]
pub fn rdbpot_logic(m: &mut ModuleBuilder, x: Expr, e: Expr) -> Expr {
    // Both candidates, so that the increment's carry chain runs beside the
    // round bit's logic, not after it.
    let (shifted, round) = rdbpot_parts(m, x, e);
    mux(round, shifted + 1i32, shifted)
}

/// RDBPOT(x, e) as its two parts, x >> e (arithmetic, s32) and the round
/// bit to add to it ([`rdbpot_logic`] says how it is formed), for pipelines
/// that fold the addition into a later one.
#[track_caller]
pub fn rdbpot_parts(m: &mut ModuleBuilder, x: Expr, e: Expr) -> (Expr, Expr) {
    assert_eq!(
        (x.ty(), e.ty()),
        (Ty::s(32), Ty::u(5)),
        "rdbpot takes s32, u5"
    );
    // Bit e-1 of x and the bits below it are bit e of 2x and the bits below
    // that: selected by e itself, with no e - 1 (for e = 0, bit 0 of 2x is
    // 0 and no bit lies below it).
    let doubled = x.as_unsigned() << 1u32;
    let ones = m.lit(Ty::u(32), u32::MAX);
    let half_bit = (doubled & (m.lit(Ty::u(32), 1) << e)).any();
    let under_half = (doubled & !(ones << e)).any();
    let round = half_bit & (!x.msb() | under_half);
    (x >> e, round)
}

/// int8 requantization, `clamp(zp + RDBPOT(SRDHM(acc, mult), shift), -128,
/// 127)`, given the s64 product `acc x mult`: acc and mult s32, shift u5,
/// zero point s8; the result is s8.
#[track_caller]
pub fn requant_int8_from_product(
    m: &mut ModuleBuilder,
    acc: Expr,
    mult: Expr,
    product: Expr,
    shift: Expr,
    zero_point: Expr,
) -> Expr {
    assert_eq!(zero_point.ty(), Ty::s(8), "the zero point is s8");
    let high = srdhm_from_product(m, acc, mult, product);
    let scaled = rdbpot_logic(m, high, shift);
    // In 34 bits the zero point's addition cannot wrap before the clamp.
    let sum = scaled.sext(34) + zero_point.sext(34);
    clamp_to_int8(m, sum)
}

/// A 34-bit zero-point sum (s34) saturated to int8 (s8): the
/// requantization's last step.
#[track_caller]
pub fn clamp_to_int8(m: &mut ModuleBuilder, sum: Expr) -> Expr {
    assert_eq!(sum.ty(), Ty::s(34), "the clamp takes the s34 sum");
    let below = sum.is_lt(m.lit(Ty::s(34), -128));
    let above = sum.is_gt(m.lit(Ty::s(34), 127));
    let lo = m.lit(Ty::s(8), -128);
    let hi = m.lit(Ty::s(8), 127);
    mux(below, lo, mux(above, hi, sum.trunc(8)))
}

/// int8 requantization with its own signed 32 x 32 multiplier; see
/// [`requant_int8_from_product`].
#[track_caller]
pub fn requant_int8_logic(
    m: &mut ModuleBuilder,
    acc: Expr,
    mult: Expr,
    shift: Expr,
    zero_point: Expr,
) -> Expr {
    let product = acc.mul_wide(mult);
    requant_int8_from_product(m, acc, mult, product, shift, zero_point)
}

/// Cut points of an integer multiplier as FPGA DSP blocks have them:
/// `operands` (input registers), `partials` (each DSP-sized piece's
/// product, [`DSP_OPERAND_BITS`], where each block's output register is)
/// and `product` (after the pieces' sum). Ranking: `product` first (the
/// multiplier's output leaves the DSP block for the fabric, the longer
/// wires), then `operands`, then `partials` (for products wider than one
/// block: on the ECP5 the pieces' sum after the blocks, in fabric carry
/// chains, was the longest path left in a VPU lane and a SparseCore combine
/// lane once the other two were registered; docs/vpu.md).
pub const INT_MUL: CutPlan = CutPlan {
    unit: "int_mul",
    cuts: &["operands", "partials", "product"],
    ranking: &[2, 0, 1],
};

/// The widest operand one FPGA DSP block multiplies whole: the ECP5
/// `MULT18X18D`'s 18 bits (signed, or unsigned with its sign control low).
pub const DSP_OPERAND_BITS: u32 = 18;

/// The pieces a wider operand is cut into at a registered `partials` cut:
/// 16 bits, unsigned except the top piece of a signed operand. A piece
/// zero-extended to 17 signed bits fits an 18-bit port, so every pair of
/// pieces is one `MULT18X18D`; two unsigned pieces fit an iCE40 `SB_MAC16`.
pub const DSP_PIECE_BITS: u32 = 16;

/// Where an integer multiplier has registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MulRegs {
    /// Register both operands before the multiply.
    pub input: bool,
    /// Register each DSP-sized piece's product before their sum (for
    /// operands wider than [`DSP_OPERAND_BITS`]; for narrower ones the one
    /// product, a second register in front of `output`'s).
    pub partials: bool,
    /// Register the product.
    pub output: bool,
}

/// The full product `a x b` (both signed or both unsigned; the product is
/// as wide as both together), with the registers of `regs` named
/// `<prefix>_s<k>_a`, `_b`, `_partial<j>`, `_product`, each loading while
/// `enable` is high if given. Written as the DSP blocks want it, nothing
/// between the registers and the multiply, so that Yosys packs a product of up to
/// 16 x 16 bits with its registers into one iCE40 `SB_MAC16`
/// (`synth_ice40 -dsp`), and the multiply into ECP5 `MULT18X18D` blocks
/// (`synth_ecp5`; Yosys leaves the registers in the fabric there, see
/// `docs/hw.md`). Latency: one cycle per register.
#[track_caller]
pub fn int_mul_registered(
    m: &mut ModuleBuilder,
    prefix: &str,
    a: Expr,
    b: Expr,
    regs: MulRegs,
    enable: Option<Expr>,
) -> Expr {
    let cuts = vec![regs.input, regs.partials, regs.output];
    let mut p = Pipeline::with_cuts(INT_MUL, prefix, cuts, enable);
    let product = int_mul_piped(m, &mut p, a, b);
    p.finish();
    product
}

/// The full product `a x b` on a pipeline of [`INT_MUL`].
#[track_caller]
pub fn int_mul_piped(m: &mut ModuleBuilder, p: &mut Pipeline, a: Expr, b: Expr) -> Expr {
    let [a, b] = p.cut(m, 0, [("a", a), ("b", b)]);
    let (product, []) = mul_in_pieces(m, p, 1, a, b, []);
    let [product] = p.cut(m, 2, [("product", product)]);
    product
}

/// The full product `a x b` (same signedness) with cut `cut` of `p` after
/// the products of the operands' DSP-sized pieces, `extra` crossing it
/// beside them. At a registered cut an operand wider than
/// [`DSP_OPERAND_BITS`] is cut into [`DSP_PIECE_BITS`] pieces, every pair of
/// pieces is multiplied (one DSP block each) and registered, and the
/// registered products are summed after the cut (pieces that do not overlap
/// side by side, the rest in carry chains). At an unregistered cut the
/// product is one multiply, as Yosys and the simulators take it best.
#[track_caller]
fn mul_in_pieces<const N: usize>(
    m: &mut ModuleBuilder,
    p: &mut Pipeline,
    cut: usize,
    a: Expr,
    b: Expr,
    extra: [(&str, Expr); N],
) -> (Expr, [Expr; N]) {
    assert_eq!(
        a.ty().signed,
        b.ty().signed,
        "both operands signed, or both unsigned"
    );
    if !p.registers(cut) {
        return (a.mul_wide(b), p.cut(m, cut, extra));
    }
    let ty = Ty::new(a.width() + b.width(), a.ty().signed);
    let mut terms = Vec::new();
    for (shift_a, piece_a) in dsp_pieces(a) {
        for &(shift_b, piece_b) in &dsp_pieces(b) {
            terms.push((shift_a + shift_b, piece_product(piece_a, piece_b)));
        }
    }
    let names: Vec<String> = if terms.len() == 1 {
        vec!["partial".into()]
    } else {
        (0..terms.len()).map(|k| format!("partial{k}")).collect()
    };
    let mut crossing: Vec<(&str, Expr)> = names
        .iter()
        .zip(&terms)
        .map(|(n, &(_, v))| (n.as_str(), v))
        .collect();
    crossing.extend(extra);
    let registered = p.cut_vec(m, cut, &crossing);
    let (pieces, rest) = registered.split_at(terms.len());
    let terms: Vec<(u32, Expr)> = terms
        .iter()
        .zip(pieces)
        .map(|(&(s, _), &v)| (s, v))
        .collect();
    let product = sum_shifted(m, &terms, ty);
    (product, std::array::from_fn(|k| rest[k]))
}

/// An operand's pieces for DSP blocks, low first, each with its offset: the
/// operand itself up to [`DSP_OPERAND_BITS`], else [`DSP_PIECE_BITS`]-bit
/// unsigned pieces and a top piece with the operand's signedness.
fn dsp_pieces(x: Expr) -> Vec<(u32, Expr)> {
    dsp_piece_types(x.ty())
        .into_iter()
        .map(|(lo, ty)| {
            let piece = if ty.width == x.width() {
                x
            } else {
                x.slice(lo, ty.width)
            };
            (
                lo,
                if ty.signed {
                    piece.as_signed()
                } else {
                    piece.as_unsigned()
                },
            )
        })
        .collect()
}

/// [`dsp_pieces`] of an operand of type `ty`: each piece's offset and type.
fn dsp_piece_types(ty: Ty) -> Vec<(u32, Ty)> {
    if ty.width <= DSP_OPERAND_BITS {
        return vec![(0, ty)];
    }
    (0..ty.width)
        .step_by(DSP_PIECE_BITS as usize)
        .map(|lo| {
            let width = DSP_PIECE_BITS.min(ty.width - lo);
            let top = lo + width == ty.width;
            (lo, Ty::new(width, top && ty.signed))
        })
        .collect()
}

/// The operand types of the multiply of two pieces of types `a` and `b`:
/// both as they are if both are signed or both unsigned; else signed, the
/// unsigned one zero-extended by a bit (its product then has one bit more,
/// which repeats the sign, so every bit of it is read).
fn piece_operand_types(a: Ty, b: Ty) -> (Ty, Ty) {
    let widen = |t: Ty| Ty::s(t.width + 1);
    match (a.signed, b.signed) {
        (false, true) => (widen(a), b),
        (true, false) => (a, widen(b)),
        _ => (a, b),
    }
}

/// The exact product of two pieces ([`piece_operand_types`]).
fn piece_product(a: Expr, b: Expr) -> Expr {
    let (ta, tb) = piece_operand_types(a.ty(), b.ty());
    let operand = |x: Expr, t: Ty| {
        if t.width > x.width() {
            x.zext(t.width).as_signed()
        } else {
            x
        }
    };
    operand(a, ta).mul_wide(operand(b, tb))
}

/// The multiplies an `a` x `b` product of [`int_mul_piped`] (or the
/// significands' of [`fp32_mul_piped`], `u24` x `u24`) is built from, by
/// their operand types: the product itself, or with its `partials` cut
/// registered one per pair of DSP-sized pieces. For a block's FPGA facts
/// (`hw::Multipliers::per_multiply`), so they name what the netlist has.
pub fn int_mul_multiplies(a: Ty, b: Ty, partials: bool) -> Vec<(Ty, Ty)> {
    if !partials {
        return vec![(a, b)];
    }
    let pieces_b = dsp_piece_types(b);
    dsp_piece_types(a)
        .into_iter()
        .flat_map(|(_, pa)| {
            pieces_b
                .iter()
                .map(move |&(_, pb)| piece_operand_types(pa, pb))
        })
        .collect()
}

/// The sum of `terms` (value << shift each, signed or unsigned by the
/// value's type), exact in `ty` (wide enough for it). Terms that do not
/// overlap share a row side by side (a term goes above an unsigned one,
/// whose upper bits are zero); the rows are added in carry chains that
/// start at the lowest offset any row but the lowest has, below which the
/// lowest row's bits are the sum's.
fn sum_shifted(m: &mut ModuleBuilder, terms: &[(u32, Expr)], ty: Ty) -> Expr {
    let mut order: Vec<(u32, Expr)> = terms.to_vec();
    order.sort_by_key(|&(shift, _)| shift);
    // Each row: its terms, low first.
    let mut rows: Vec<Vec<(u32, Expr)>> = Vec::new();
    for (shift, value) in order {
        let fits = |row: &Vec<(u32, Expr)>| {
            let &(top_shift, top) = row.last().expect("rows are not empty");
            !top.ty().signed && top_shift + top.width() <= shift
        };
        match rows.iter_mut().find(|r| fits(r)) {
            Some(row) => row.push((shift, value)),
            None => rows.push(vec![(shift, value)]),
        }
    }
    // Each row as (offset, value): its terms side by side, zeros between,
    // signed if its top term is.
    let mut rows: Vec<(u32, Expr)> = rows
        .into_iter()
        .map(|row| {
            let low = row[0].0;
            let mut parts = Vec::new();
            let mut at = low;
            for &(shift, value) in &row {
                if shift > at {
                    parts.push(m.lit(Ty::u(shift - at), 0));
                }
                parts.push(value);
                at = shift + value.width();
            }
            parts.reverse();
            let bits = cat(&parts);
            let top = row.last().expect("rows are not empty").1;
            (
                low,
                if top.ty().signed {
                    bits.as_signed()
                } else {
                    bits
                },
            )
        })
        .collect();
    rows.sort_by_key(|&(low, _)| low);
    // Every row extended to the product's top by its own sign.
    let full = |(low, value): (u32, Expr)| value.ext(ty.width - low).as_unsigned();
    let (base_low, base) = (rows[0].0, full(rows[0]));
    let Some(&(chain_low, _)) = rows.get(1) else {
        return with_low_zeros(m, base, base_low, ty);
    };
    let chain_width = ty.width - chain_low;
    let mut sum = base.slice(chain_low - base_low, chain_width);
    for &(low, value) in &rows[1..] {
        sum = sum + with_low_zeros(m, full((low, value)), low - chain_low, Ty::u(chain_width));
    }
    let below = (chain_low > base_low).then(|| base.slice(0, chain_low - base_low));
    let bits = match below {
        Some(below) => cat(&[sum, below]),
        None => sum,
    };
    with_low_zeros(m, bits, base_low, ty)
}

/// `bits` above `zeros` zero bits, as `ty` (exactly as wide).
fn with_low_zeros(m: &mut ModuleBuilder, bits: Expr, zeros: u32, ty: Ty) -> Expr {
    let bits = if zeros == 0 {
        bits.as_unsigned()
    } else {
        cat(&[bits, m.lit(Ty::u(zeros), 0)])
    };
    assert_eq!(bits.width(), ty.width, "the sum is as wide as the product");
    if ty.signed {
        bits.as_signed()
    } else {
        bits
    }
}

/// An integer multiplier as a module `int_mul_<s|u><A>x<B>_s<stages>[_en]`
/// (`stages` of [`INT_MUL`]: 1 registers the product, 2 the operands as
/// well, 3 the pieces' products too): ports `a_i`, `b_i`, (`en_i`), `p_o` (A + B bits).
pub fn int_mul_unit(
    design: &mut Design,
    a: Ty,
    b: Ty,
    stages: u32,
    with_enable: bool,
) -> Rc<ModuleDef> {
    assert_eq!(a.signed, b.signed, "both operands signed, or both unsigned");
    let base = format!(
        "int_mul_{}{}x{}",
        if a.signed { "s" } else { "u" },
        a.width,
        b.width
    );
    let doc = "integer multiplier, full product, registers where DSP blocks have them";
    let inputs = [("a_i", a), ("b_i", b)];
    let unit = UnitModule {
        base: &base,
        doc,
        plan: INT_MUL,
        inputs: &inputs,
    };
    unit_module(design, unit, stages, with_enable, |m, p, v| {
        vec![("p_o", int_mul_piped(m, p, v[0], v[1]))]
    })
}

/// fp32 multiplication on a pipeline of `stages` ([`FP32_MUL`]) as a
/// module `fp32_mul_s<stages>[_en]`: ports `a_i`, `b_i`, (`en_i`), `p_o`.
pub fn fp32_mul_unit(design: &mut Design, stages: u32, with_enable: bool) -> Rc<ModuleDef> {
    let inputs = [("a_i", Ty::u(32)), ("b_i", Ty::u(32))];
    let doc = "fp32 multiplier, FTZ-RNE, canonical NaN (docs/numerics.md)";
    let unit = UnitModule {
        base: "fp32_mul",
        doc,
        plan: FP32_MUL,
        inputs: &inputs,
    };
    unit_module(design, unit, stages, with_enable, |m, p, v| {
        vec![("p_o", fp32_mul_piped(m, p, v[0], v[1]))]
    })
}

/// fp32 min/max on a pipeline of `stages` ([`FP32_ORDER`]) as a module
/// `fp32_min_max_s<stages>[_en]`: ports `a_i`, `b_i`, `max_i` (1: max,
/// 0: min), (`en_i`), `y_o`.
pub fn fp32_min_max_unit(design: &mut Design, stages: u32, with_enable: bool) -> Rc<ModuleDef> {
    let inputs = [("a_i", Ty::u(32)), ("b_i", Ty::u(32)), ("max_i", Ty::BOOL)];
    let doc = "fp32 min/max, -0 below +0, canonical NaN (docs/numerics.md)";
    let unit = UnitModule {
        base: "fp32_min_max",
        doc,
        plan: FP32_ORDER,
        inputs: &inputs,
    };
    unit_module(design, unit, stages, with_enable, |m, p, v| {
        vec![("y_o", fp32_min_max_piped(m, p, v[0], v[1], v[2]))]
    })
}

/// fp32 compares on a pipeline of `stages` ([`FP32_ORDER`]) as a module
/// `fp32_compare_s<stages>[_en]`: ports `a_i`, `b_i`, (`en_i`), `eq_o`,
/// `ne_o`, `lt_o`, `le_o`.
pub fn fp32_compare_unit(design: &mut Design, stages: u32, with_enable: bool) -> Rc<ModuleDef> {
    let inputs = [("a_i", Ty::u(32)), ("b_i", Ty::u(32))];
    let doc = "fp32 compares, -0 == +0, unordered with a NaN (docs/numerics.md)";
    let unit = UnitModule {
        base: "fp32_compare",
        doc,
        plan: FP32_ORDER,
        inputs: &inputs,
    };
    unit_module(design, unit, stages, with_enable, |m, p, v| {
        let c = fp32_compare_piped(m, p, v[0], v[1]);
        vec![
            ("eq_o", c.eq),
            ("ne_o", c.ne),
            ("lt_o", c.lt),
            ("le_o", c.le),
        ]
    })
}

/// A conversion on a pipeline of `stages` as a module `<name>_s<stages>[_en]`
/// with ports `x_i`, (`en_i`), `y_o`.
fn conversion_unit(
    design: &mut Design,
    unit: UnitModule<'_>,
    stages: u32,
    with_enable: bool,
    logic: fn(&mut ModuleBuilder, &mut Pipeline, Expr) -> Expr,
) -> Rc<ModuleDef> {
    unit_module(design, unit, stages, with_enable, |m, p, v| {
        vec![("y_o", logic(m, p, v[0]))]
    })
}

/// int32 -> fp32 as a module `i32_to_f32_s<stages>[_en]` ([`I32_TO_F32`]):
/// ports `x_i` (u32 bits), (`en_i`), `y_o`.
pub fn i32_to_f32_unit(design: &mut Design, stages: u32, with_enable: bool) -> Rc<ModuleDef> {
    let unit = UnitModule {
        base: "i32_to_f32",
        doc: "int32 -> fp32, round to nearest even (docs/numerics.md)",
        plan: I32_TO_F32,
        inputs: &[("x_i", Ty::u(32))],
    };
    conversion_unit(design, unit, stages, with_enable, i32_to_f32_piped)
}

/// fp32 -> int32 as a module `f32_to_i32_s<stages>[_en]` ([`F32_TO_I32`]):
/// ports `x_i`, (`en_i`), `y_o` (u32 bits).
pub fn f32_to_i32_unit(design: &mut Design, stages: u32, with_enable: bool) -> Rc<ModuleDef> {
    let unit = UnitModule {
        base: "f32_to_i32",
        doc: "fp32 -> int32, nearest even, saturating (docs/numerics.md)",
        plan: F32_TO_I32,
        inputs: &[("x_i", Ty::u(32))],
    };
    conversion_unit(design, unit, stages, with_enable, f32_to_i32_piped)
}

/// fp32 -> bf16 as a module `f32_to_bf16_s<stages>[_en]` ([`F32_TO_BF16`]):
/// ports `x_i`, (`en_i`), `y_o` (u16).
pub fn f32_to_bf16_unit(design: &mut Design, stages: u32, with_enable: bool) -> Rc<ModuleDef> {
    let unit = UnitModule {
        base: "f32_to_bf16",
        doc: "fp32 -> bf16, FTZ-RNE, canonical NaN (docs/numerics.md)",
        plan: F32_TO_BF16,
        inputs: &[("x_i", Ty::u(32))],
    };
    conversion_unit(design, unit, stages, with_enable, f32_to_bf16_piped)
}

/// bf16 -> fp32 as a module `bf16_to_f32_s<stages>[_en]` ([`BF16_TO_F32`]):
/// ports `x_i` (u16), (`en_i`), `y_o`.
pub fn bf16_to_f32_unit(design: &mut Design, stages: u32, with_enable: bool) -> Rc<ModuleDef> {
    let unit = UnitModule {
        base: "bf16_to_f32",
        doc: "bf16 -> fp32, FTZ, canonical NaN (docs/numerics.md)",
        plan: BF16_TO_F32,
        inputs: &[("x_i", Ty::u(16))],
    };
    conversion_unit(design, unit, stages, with_enable, bf16_to_f32_piped)
}

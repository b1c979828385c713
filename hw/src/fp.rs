//! Floating-point units that follow Systole's numerics contract (`docs/numerics.md`):
//! FTZ-RNE fp32 addition and the bf16 x bf16 -> fp32 product.
//!
//! The rules, in short: subnormal inputs read as zeros of their sign; the exact
//! result is rounded once to nearest-even as if the exponent range were
//! unbounded; a rounded magnitude below 2^-126 becomes a zero with the sign of
//! the exact result, one above the largest finite value an infinity; every NaN
//! result is the canonical 0x7FC00000; x + (-x) = +0.
//!
//! Each unit exists as plain logic (`*_logic`, for use inside another module)
//! and as a module definition interned in a [`Design`]. The adder is split into
//! two stages so that a pipeline register can sit between them:
//!
//! 1. decode, special cases, order the operands by magnitude, align the smaller
//!    significand (with guard, round and sticky bits) and add or subtract;
//! 2. normalise (carry or leading-zero shift), round to nearest-even, and apply
//!    overflow, underflow and the special cases.

use crate::builder::{cat, mux, mux_bitwise, Expr, ModuleBuilder};
use crate::design::Design;
use crate::ir::ModuleDef;
use crate::ty::Ty;
use std::rc::Rc;

/// The canonical quiet NaN every NaN result becomes.
pub const CANONICAL_NAN_F32: u32 = 0x7FC0_0000;

/// Fields of an fp32 or bf16 pattern: sign, biased exponent, fraction, and
/// classification with subnormals read as zero.
struct Decoded {
    sign: Expr,
    exp: Expr,
    frac: Expr,
    zero: Expr,
    inf: Expr,
    nan: Expr,
}

fn decode(x: Expr, exp_bits: u32, frac_bits: u32) -> Decoded {
    let frac = x.slice(0, frac_bits);
    let exp = x.slice(frac_bits, exp_bits);
    let sign = x.msb();
    let exp_max = exp.all();
    let frac_zero = frac.is_eq(0);
    Decoded {
        sign,
        zero: exp.is_eq(0),
        inf: exp_max & frac_zero,
        nan: exp_max & !frac_zero,
        exp,
        frac,
    }
}

/// The bf16 x bf16 -> fp32 product, `mul32(widen(a), widen(b))`. Two 8-bit
/// significands multiply to at most 16 bits, so the product is exact: it only
/// flushes below 2^-126 and overflows to infinity; nothing is ever rounded.
#[track_caller]
pub fn bf16_mul_logic(m: &mut ModuleBuilder, a: Expr, b: Expr) -> Expr {
    assert_eq!(
        (a.ty(), b.ty()),
        (Ty::u(16), Ty::u(16)),
        "bf16 operands are u16"
    );
    let da = decode(a, 8, 7);
    let db = decode(b, 8, 7);
    let sign = da.sign ^ db.sign;
    let one = m.lit(Ty::BOOL, 1);
    let product = cat(&[one, da.frac]).mul_wide(cat(&[one, db.frac])); // 16 bits
    let carry = product.msb();
    // Biased exponent of the product, signed so under- and overflow show.
    let ext = |e: Expr| e.zext(10).as_signed();
    let exp = ext(da.exp) + ext(db.exp) - 127 + carry.zext(10).as_signed();
    // Without a carry the leading one is at bit 14: shift it up by one
    // (a shift by data rather than a select, which simulators branch on).
    let pad8 = m.lit(Ty::u(8), 0);
    let normalised = product.slice(0, 15) << (!carry);
    let frac = cat(&[normalised, pad8]);
    let finite = cat(&[sign, exp.trunc(8).as_unsigned(), frac]);
    let signed_zero = cat(&[sign, m.lit(Ty::u(31), 0)]);
    let signed_inf = cat(&[sign, m.lit(Ty::u(8), 0xff), m.lit(Ty::u(23), 0)]);
    let nan = da.nan | db.nan | (da.inf & db.zero) | (da.zero & db.inf);
    let inf = da.inf | db.inf | exp.is_ge(255);
    let zero = da.zero | db.zero | exp.is_le(0);
    let canonical = m.lit(Ty::u(32), CANONICAL_NAN_F32);
    mux(
        nan,
        canonical,
        mux(inf, signed_inf, mux(zero, signed_zero, finite)),
    )
}

/// What the first adder stage hands to the second.
pub struct AddStage1 {
    /// The result is decided by a special case (NaN, infinity, zero operand).
    pub special: Expr,
    /// That result.
    pub special_value: Expr,
    /// Sign and biased exponent of the larger operand.
    pub sign: Expr,
    pub exp: Expr,
    /// The aligned significand sum: 28 bits, `1.f` at bits 26..3, guard, round
    /// and sticky below, a carry at bit 27.
    pub sum: Expr,
}

impl AddStage1 {
    /// The values in a fixed order, for a pipeline register.
    pub fn to_vec(&self) -> Vec<Expr> {
        vec![
            self.special,
            self.special_value,
            self.sign,
            self.exp,
            self.sum,
        ]
    }

    /// Rebuilds the stage from values in [`AddStage1::to_vec`] order.
    pub fn from_vec(v: &[Expr]) -> AddStage1 {
        AddStage1 {
            special: v[0],
            special_value: v[1],
            sign: v[2],
            exp: v[3],
            sum: v[4],
        }
    }
}

/// First adder stage: decode, special cases, order by magnitude, align, add.
#[track_caller]
pub fn fp32_add_stage1(m: &mut ModuleBuilder, a: Expr, b: Expr) -> AddStage1 {
    assert_eq!(
        (a.ty(), b.ty()),
        (Ty::u(32), Ty::u(32)),
        "fp32 operands are u32"
    );
    let da = decode(a, 8, 23);
    let db = decode(b, 8, 23);

    // Special cases, highest priority first.
    let nan = da.nan | db.nan | (da.inf & db.inf & (da.sign ^ db.sign));
    let canonical = m.lit(Ty::u(32), CANONICAL_NAN_F32);
    let both_zero = cat(&[da.sign & db.sign, m.lit(Ty::u(31), 0)]);
    let special_value = mux(
        nan,
        canonical,
        mux(
            da.inf,
            a,
            mux(
                db.inf,
                b,
                mux(da.zero & db.zero, both_zero, mux(da.zero, b, a)),
            ),
        ),
    );
    let special = nan | da.inf | db.inf | da.zero | db.zero;

    // Both operands are normal from here on. Only the larger one's sign
    // matters, so the smaller one is taken without it.
    // (Selects on operand data are written as bit operations: see
    // `mux_bitwise`.)
    let swap = b.slice(0, 31).is_gt(a.slice(0, 31));
    let big = mux_bitwise(swap, b, a);
    let small = mux_bitwise(swap, a.slice(0, 31), b.slice(0, 31));
    let one = m.lit(Ty::BOOL, 1);
    let guard_bits = m.lit(Ty::u(3), 0);
    let big_sig = cat(&[one, big.slice(0, 23), guard_bits]); // 27 bits
    let small_sig = cat(&[one, small.slice(0, 23), guard_bits]);
    let shift = big.slice(23, 8) - small.slice(23, 8);
    let shifted = small_sig >> shift;
    // Bits shifted out show up as a difference when shifting back.
    let sticky = (shifted << shift).is_ne(small_sig);
    let aligned = shifted | sticky.zext(27);
    let subtract = da.sign ^ db.sign;
    let sum = mux_bitwise(
        subtract,
        big_sig.zext(28) - aligned.zext(28),
        big_sig.zext(28) + aligned.zext(28),
    );
    AddStage1 {
        special,
        special_value,
        sign: big.msb(),
        exp: big.slice(23, 8),
        sum,
    }
}

/// Second adder stage: normalise, round to nearest-even, overflow/underflow.
#[track_caller]
pub fn fp32_add_stage2(m: &mut ModuleBuilder, s: &AddStage1) -> Expr {
    let sum = s.sum;
    let carry = sum.msb();
    // The normalised significand without its leading one (26 bits: 23 fraction
    // bits, guard, round, sticky). With a carry the sum shifts right by one (the
    // dropped bit joins the sticky bit); otherwise it shifts left until the
    // leading one would be at bit 26.
    let right = cat(&[sum.slice(2, 25), sum.bit(1) | sum.bit(0)]);
    let (left, zeros) = normalize_left(m, sum.slice(0, 27));
    let norm = mux_bitwise(carry, right, left);
    let exp_big = s.exp.zext(10).as_signed();
    let exp = mux_bitwise(carry, exp_big + 1, exp_big - zeros.zext(10).as_signed());

    let frac = norm.slice(3, 23);
    let guard = norm.bit(2);
    let rest = norm.bit(1) | norm.bit(0);
    let round_up = guard & (rest | frac.bit(0));
    // Rounding up from 1.11..1 gives 10.00..0: the fraction wraps to zero and
    // the exponent takes one more step.
    let frac = frac + round_up.zext(23);
    let exp = exp + (frac.is_eq(0) & round_up).zext(10).as_signed();

    let sign = s.sign;
    let finite = cat(&[sign, exp.trunc(8).as_unsigned(), frac]);
    let signed_zero = cat(&[sign, m.lit(Ty::u(31), 0)]);
    let signed_inf = cat(&[sign, m.lit(Ty::u(8), 0xff), m.lit(Ty::u(23), 0)]);
    let positive_zero = m.lit(Ty::u(32), 0);
    let cancelled = sum.is_eq(0);
    mux(
        s.special,
        s.special_value,
        mux(
            cancelled,
            positive_zero,
            mux(
                exp.is_ge(255),
                signed_inf,
                mux(exp.is_le(0), signed_zero, finite),
            ),
        ),
    )
}

/// Shifts `x` left until its most significant bit is set (if `x` is not zero),
/// by binary search over shift distances. Returns the shifted value without
/// that leading bit (one bit narrower than `x`) and the distance.
///
/// Each step shifts by k or 0, written as a shift by `top_clear * k` rather
/// than a select between the shifted and unshifted value: the same logic,
/// but simulators run it without a branch on the data. The distance is the
/// steps' flags side by side (k are distinct powers of two).
fn normalize_left(m: &mut ModuleBuilder, x: Expr) -> (Expr, Expr) {
    let w = x.width();
    assert!(w > 16 && w <= 32, "normalize_left takes 17 to 32 bits");
    let mut v = x;
    let mut flags = Vec::new();
    for k in [16u32, 8, 4, 2] {
        let top_clear = v.slice(w - k, k).is_eq(0);
        let amount = cat(&[top_clear, m.lit(Ty::u(k.trailing_zeros()), 0)]);
        v = v << amount;
        flags.push(top_clear);
    }
    // The last one-bit step drops the leading bit instead of keeping it.
    let top_clear = v.msb().is_eq(0);
    flags.push(top_clear);
    (v.slice(0, w - 1) << top_clear, cat(&flags))
}

/// The whole adder as combinational logic.
#[track_caller]
pub fn fp32_add_logic(m: &mut ModuleBuilder, a: Expr, b: Expr) -> Expr {
    let s1 = fp32_add_stage1(m, a, b);
    fp32_add_stage2(m, &s1)
}

/// Registers every value of a stage (named `<prefix>_<k>`), for pipelining.
pub fn register_stage(m: &mut ModuleBuilder, prefix: &str, values: &[Expr]) -> Vec<Expr> {
    values
        .iter()
        .enumerate()
        .map(|(k, v)| {
            let r = m.reg(&format!("{prefix}{k}"), v.ty());
            m.set_next(r, *v);
            r.q()
        })
        .collect()
}

/// The fp32 adder as a module `fp32_add_l<latency>`: ports `a_i`, `b_i`,
/// `sum_o`. `latency` is the number of register stages from inputs to the
/// (registered) output: 0 (combinational), 1 (output register) or 2 (a
/// register between the stages as well).
pub fn fp32_add(design: &mut Design, latency: u32) -> Rc<ModuleDef> {
    assert!(latency <= 2, "fp32_add latency is 0, 1 or 2");
    let name = format!("fp32_add_l{latency}");
    design.define(&name, &[("latency", latency.to_string())], |_, m| {
        m.doc("fp32 adder, FTZ-RNE, canonical NaN (docs/numerics.md)");
        let a = m.input("a_i", Ty::u(32));
        let b = m.input("b_i", Ty::u(32));
        let s1 = fp32_add_stage1(m, a, b);
        let s1 = if latency == 2 {
            AddStage1::from_vec(&register_stage(m, "stage1_", &s1.to_vec()))
        } else {
            s1
        };
        let sum = fp32_add_stage2(m, &s1);
        let out = if latency >= 1 {
            let r = m.reg("sum", Ty::u(32));
            m.set_next(r, sum);
            r.q()
        } else {
            sum
        };
        m.output("sum_o", out);
    })
}

/// The bf16 multiplier as a combinational module `bf16_mul`: ports `a_i`,
/// `b_i` (bf16 patterns), `p_o` (fp32).
pub fn bf16_mul(design: &mut Design) -> Rc<ModuleDef> {
    design.define("bf16_mul", &[], |_, m| {
        m.doc("bf16 x bf16 -> fp32 product, exact, FTZ, canonical NaN (docs/numerics.md)");
        let a = m.input("a_i", Ty::u(16));
        let b = m.input("b_i", Ty::u(16));
        let p = bf16_mul_logic(m, a, b);
        m.output("p_o", p);
    })
}

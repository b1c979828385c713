//! The numerics contract (`docs/numerics.md`) on raw bit patterns.
//!
//! Floating-point values are passed as their bit patterns: `u32` for fp32
//! (IEEE 754 binary32) and `u16` for bf16 (the top half of a binary32).
//! Integers are plain `i32`. No host floating-point operation takes part in any
//! result: every operation decodes its operands into exact integers
//! (significand and power-of-two exponent), computes the exact result, and
//! rounds it once with [`FTZ-RNE`](self#ftz-rne). That keeps the model
//! independent of the host's FPU and its treatment of subnormals and NaNs.
//!
//! # FTZ-RNE
//!
//! Every floating-point operation follows these rules (numbered as in
//! `docs/numerics.md#ftz-rne`):
//!
//! 1. A subnormal input reads as a zero of the same sign.
//! 2. The exact result is rounded once, to nearest with ties to even, at the
//!    destination precision (24 significand bits for fp32, 8 for bf16), as if
//!    the exponent range were unbounded.
//! 3. If the rounded magnitude is below 2^-126 the result is a zero with the
//!    sign of the exact result (tininess after rounding).
//! 4. If the rounded magnitude exceeds the largest finite value the result is
//!    an infinity of the same sign.
//! 5. Every NaN result is canonical: [`CANONICAL_NAN_F32`] / [`CANONICAL_NAN_BF16`].
//!    NaN inputs and invalid operations (inf - inf, 0 x inf) give it.
//! 6. x + (-x) = +0 for finite nonzero x; (+0) + (-0) = +0; (-0) + (-0) = -0;
//!    the sign of a product is the XOR of the operand signs.
//! 7. min/max: a NaN operand gives the canonical NaN; -0 orders below +0; a
//!    subnormal operand is read, and returned, as a zero of its sign.

/// The only NaN an fp32 operation produces (rule 5): quiet, positive, zero payload.
pub const CANONICAL_NAN_F32: u32 = 0x7FC0_0000;
/// The only NaN a bf16 operation produces (rule 5): the top half of [`CANONICAL_NAN_F32`].
pub const CANONICAL_NAN_BF16: u16 = 0x7FC0;
/// fp32 +infinity.
pub const F32_POS_INF: u32 = 0x7F80_0000;
/// fp32 -infinity.
pub const F32_NEG_INF: u32 = 0xFF80_0000;
/// fp32 -0.0 (the sign bit alone).
pub const F32_NEG_ZERO: u32 = 0x8000_0000;
/// The largest finite fp32, (2 - 2^-23) x 2^127.
pub const F32_MAX: u32 = 0x7F7F_FFFF;
/// The smallest positive normal fp32, 2^-126: every smaller nonzero magnitude is flushed.
pub const F32_MIN_NORMAL: u32 = 0x0080_0000;
/// bf16 +infinity.
pub const BF16_POS_INF: u16 = 0x7F80;
/// bf16 -infinity.
pub const BF16_NEG_INF: u16 = 0xFF80;
/// The largest finite bf16, (2 - 2^-7) x 2^127.
pub const BF16_MAX: u16 = 0x7F7F;

const SIGN_F32: u32 = 0x8000_0000;
const EXP_MASK_F32: u32 = 0x7F80_0000;
const FRAC_MASK_F32: u32 = 0x007F_FFFF;
/// Exponent bias shared by fp32 and bf16 (both have 8 exponent bits).
const BIAS: i32 = 127;
/// Significand bits, hidden bit included.
const PREC_F32: u32 = 24;
const PREC_BF16: u32 = 8;

/// IEEE class of a bit pattern, before rule 1 is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FpClass {
    /// +0 or -0.
    Zero,
    /// Exponent field 0, fraction nonzero; every operation reads it as a zero (rule 1).
    Subnormal,
    /// Exponent field 1..=254.
    Normal,
    /// +inf or -inf.
    Infinite,
    /// Exponent field all ones, fraction nonzero (any payload, quiet or signalling).
    Nan,
}

/// The IEEE class of an fp32 bit pattern.
pub fn classify_f32(x: u32) -> FpClass {
    match ((x & EXP_MASK_F32) >> 23, x & FRAC_MASK_F32) {
        (0, 0) => FpClass::Zero,
        (0, _) => FpClass::Subnormal,
        (0xFF, 0) => FpClass::Infinite,
        (0xFF, _) => FpClass::Nan,
        _ => FpClass::Normal,
    }
}

/// The IEEE class of a bf16 bit pattern.
pub fn classify_bf16(x: u16) -> FpClass {
    // A bf16 is the top half of an fp32 with the same fields.
    classify_f32(u32::from(x) << 16)
}

/// True for any fp32 NaN pattern.
pub fn is_nan_f32(x: u32) -> bool {
    classify_f32(x) == FpClass::Nan
}

/// Rule 1 applied to one fp32 operand: a subnormal becomes the zero of its
/// sign; every other pattern (NaNs included) is returned unchanged.
pub fn flush_f32(x: u32) -> u32 {
    match classify_f32(x) {
        FpClass::Subnormal => x & SIGN_F32,
        _ => x,
    }
}

/// An fp32 operand after rule 1, decoded into exact integers.
#[derive(Debug, Clone, Copy)]
enum Operand {
    Nan,
    Inf {
        neg: bool,
    },
    Zero {
        neg: bool,
    },
    /// The value (-1)^neg * sig * 2^exp, with 2^23 <= sig < 2^24.
    Finite {
        neg: bool,
        sig: u32,
        exp: i32,
    },
}

fn decode_f32(x: u32) -> Operand {
    let neg = x & SIGN_F32 != 0;
    let frac = x & FRAC_MASK_F32;
    match classify_f32(x) {
        FpClass::Nan => Operand::Nan,
        FpClass::Infinite => Operand::Inf { neg },
        // Rule 1: subnormals read as zeros of their sign.
        FpClass::Zero | FpClass::Subnormal => Operand::Zero { neg },
        FpClass::Normal => Operand::Finite {
            neg,
            sig: frac | (1 << 23),
            exp: ((x & EXP_MASK_F32) >> 23) as i32 - BIAS - 23,
        },
    }
}

/// Signed zero in a format whose sign bit is bit `sign_bit`.
fn signed_zero(neg: bool, sign_bit: u32) -> u32 {
    u32::from(neg) << sign_bit
}

fn inf_f32(neg: bool) -> u32 {
    if neg {
        F32_NEG_INF
    } else {
        F32_POS_INF
    }
}

/// Rounds the exact nonzero value (-1)^neg * mag * 2^exp once to `prec`
/// significand bits (rules 2-4) and packs it into a format with 8 exponent bits
/// and `prec - 1` fraction bits (fp32 for 24, bf16 for 8).
fn round_pack(neg: bool, mag: u128, exp: i32, prec: u32) -> u32 {
    debug_assert!(mag != 0);
    let frac_bits = prec - 1;
    let sign = signed_zero(neg, 8 + frac_bits);
    let width = 128 - mag.leading_zeros();
    // After this block the value is sig * 2^lsb_exp with 2^(prec-1) <= sig < 2^prec.
    let (sig, lsb_exp) = if width > prec {
        let shift = width - prec;
        let kept = mag >> shift;
        let rest = mag & ((1u128 << shift) - 1);
        let half = 1u128 << (shift - 1);
        // Rule 2: nearest, ties to even. The exponent is unbounded here, so
        // tininess below is judged on this rounded value (rule 3).
        let up = rest > half || (rest == half && kept & 1 == 1);
        let rounded = kept + u128::from(up);
        if rounded >> prec != 0 {
            // 1.11..1 rounded up to 10.00..0: one more binade.
            (rounded >> 1, exp + shift as i32 + 1)
        } else {
            (rounded, exp + shift as i32)
        }
    } else {
        (mag << (prec - width), exp - (prec - width) as i32)
    };
    // Unbiased exponent of the leading significand bit.
    let top = lsb_exp + frac_bits as i32;
    if top < 1 - BIAS {
        // Rule 3: below 2^-126 after rounding.
        return sign;
    }
    if top > BIAS {
        // Rule 4: above the largest finite value.
        return sign | (0xFF << frac_bits);
    }
    sign | (((top + BIAS) as u32) << frac_bits) | (sig as u32 & ((1 << frac_bits) - 1))
}

/// fp32 addition under FTZ-RNE.
///
/// Rules 1-5 apply; inf + (-inf) is invalid and gives [`CANONICAL_NAN_F32`].
/// Zeros follow rule 6: x + (-x) = +0 for finite nonzero x, (+0) + (-0) = +0,
/// (-0) + (-0) = -0. A sum whose rounded magnitude is below 2^-126 is a zero
/// with the sign of the exact sum (rule 3).
pub fn add32(a: u32, b: u32) -> u32 {
    match (decode_f32(a), decode_f32(b)) {
        (Operand::Nan, _) | (_, Operand::Nan) => CANONICAL_NAN_F32,
        (Operand::Inf { neg: x }, Operand::Inf { neg: y }) => {
            if x == y {
                inf_f32(x)
            } else {
                CANONICAL_NAN_F32
            }
        }
        (Operand::Inf { neg }, _) | (_, Operand::Inf { neg }) => inf_f32(neg),
        (Operand::Zero { neg: x }, Operand::Zero { neg: y }) => signed_zero(x && y, 31),
        // A normal operand plus a zero is that operand, exactly. (`b` may be a
        // subnormal read as zero, so the normal operand is returned as is.)
        (Operand::Zero { .. }, Operand::Finite { .. }) => b,
        (Operand::Finite { .. }, Operand::Zero { .. }) => a,
        (
            Operand::Finite {
                neg: na,
                sig: sa,
                exp: ea,
            },
            Operand::Finite {
                neg: nb,
                sig: sb,
                exp: eb,
            },
        ) => add_finite(na, sa, ea, nb, sb, eb),
    }
}

/// Alignment headroom for [`add_finite`]: 24 + 100 bits fit an `i128`.
const ADD_ALIGN_LIMIT: i32 = 100;

fn add_finite(na: bool, sa: u32, ea: i32, nb: bool, sb: u32, eb: i32) -> u32 {
    let ((nh, sh, eh), (nl, sl, el)) = if ea >= eb {
        ((na, sa, ea), (nb, sb, eb))
    } else {
        ((nb, sb, eb), (na, sa, ea))
    };
    // Common scale 2^base. When the smaller operand lies more than 100 bits
    // below, it is replaced by one unit at 2^base: both it and that stand-in are
    // nonzero and far below half an ulp of the larger operand, so the exact sum
    // and the stand-in sum fall between the same two rounding boundaries and
    // round identically.
    let base = el.max(eh - ADD_ALIGN_LIMIT);
    let hi = i128::from(sh) << (eh - base);
    let lo = if el >= base {
        i128::from(sl) << (el - base)
    } else {
        1
    };
    let sum = if nh { -hi } else { hi } + if nl { -lo } else { lo };
    if sum == 0 {
        // Rule 6: x + (-x) = +0.
        return 0;
    }
    round_pack(sum < 0, sum.unsigned_abs(), base, PREC_F32)
}

/// fp32 subtraction under FTZ-RNE: `a - b`, exactly `add32(a, -b)`.
///
/// Negating `b` commutes with rule 1 and cannot turn a NaN into a non-NaN, so
/// every rule of [`add32`] carries over: x - x = +0, (+0) - (+0) = +0,
/// (-0) - (+0) = -0, inf - inf is the canonical NaN.
pub fn sub32(a: u32, b: u32) -> u32 {
    add32(a, b ^ SIGN_F32)
}

/// fp32 multiplication under FTZ-RNE.
///
/// The sign of every non-NaN result is the XOR of the operand signs (rule 6).
/// 0 x inf is invalid (rule 5); a subnormal counts as a zero there too (rule 1).
/// The exact 48-bit product is rounded once (rule 2), then flushed below 2^-126
/// (rule 3) or overflowed to infinity (rule 4).
pub fn mul32(a: u32, b: u32) -> u32 {
    let neg = (a ^ b) & SIGN_F32 != 0;
    match (decode_f32(a), decode_f32(b)) {
        (Operand::Nan, _) | (_, Operand::Nan) => CANONICAL_NAN_F32,
        (Operand::Inf { .. }, Operand::Zero { .. })
        | (Operand::Zero { .. }, Operand::Inf { .. }) => CANONICAL_NAN_F32,
        (Operand::Inf { .. }, _) | (_, Operand::Inf { .. }) => inf_f32(neg),
        (Operand::Zero { .. }, _) | (_, Operand::Zero { .. }) => signed_zero(neg, 31),
        (
            Operand::Finite {
                sig: sa, exp: ea, ..
            },
            Operand::Finite {
                sig: sb, exp: eb, ..
            },
        ) => round_pack(neg, u128::from(sa) * u128::from(sb), ea + eb, PREC_F32),
    }
}

/// A non-NaN fp32 pattern's place in rule 7's order: read by rule 1 (a
/// subnormal is the zero of its sign), -0 just below +0.
pub(crate) fn rule7_order_key(x: u32) -> i64 {
    total_order_key(flush_f32(x))
}

/// Orders non-NaN fp32 patterns already flushed by rule 1, with -0 below +0.
fn total_order_key(x: u32) -> i64 {
    let mag = i64::from(x & !SIGN_F32);
    if x & SIGN_F32 != 0 {
        -mag - 1
    } else {
        mag
    }
}

/// Shared body of [`min32`] and [`max32`]: `want_max` picks the larger.
fn min_max(a: u32, b: u32, want_max: bool) -> u32 {
    if is_nan_f32(a) || is_nan_f32(b) {
        return CANONICAL_NAN_F32;
    }
    let (a, b) = (flush_f32(a), flush_f32(b));
    let a_first = if want_max {
        total_order_key(a) >= total_order_key(b)
    } else {
        total_order_key(a) <= total_order_key(b)
    };
    if a_first {
        a
    } else {
        b
    }
}

/// fp32 minimum (rule 7).
///
/// A NaN operand gives [`CANONICAL_NAN_F32`]; -0 is below +0; a subnormal operand
/// is read as the zero of its sign (rule 1) and, if chosen, returned as that zero.
pub fn min32(a: u32, b: u32) -> u32 {
    min_max(a, b, false)
}

/// fp32 maximum (rule 7).
///
/// A NaN operand gives [`CANONICAL_NAN_F32`]; +0 is above -0; a subnormal operand
/// is read as the zero of its sign (rule 1) and, if chosen, returned as that zero.
pub fn max32(a: u32, b: u32) -> u32 {
    min_max(a, b, true)
}

/// fp32 +6.0, the upper bound of [`relu6_f32`].
pub const F32_SIX: u32 = 0x40C0_0000;

/// fp32 compares ("VPU semantics"): `None` when either operand is a NaN
/// (unordered), else the order of the two values after rule 1, with -0 equal
/// to +0.
fn compare_f32(a: u32, b: u32) -> Option<std::cmp::Ordering> {
    if is_nan_f32(a) || is_nan_f32(b) {
        return None;
    }
    // After rule 1 both zeros map to the key 0 (so -0 == +0); other values
    // order by sign and magnitude.
    let key = |x: u32| -> i64 {
        let x = flush_f32(x);
        let mag = i64::from(x & !SIGN_F32);
        if x & SIGN_F32 != 0 {
            -mag
        } else {
            mag
        }
    };
    Some(key(a).cmp(&key(b)))
}

/// fp32 `a == b`: false if either is a NaN; -0 == +0; subnormals read as zero.
pub fn eq_f32(a: u32, b: u32) -> bool {
    compare_f32(a, b) == Some(std::cmp::Ordering::Equal)
}

/// fp32 `a != b`: true if either is a NaN (the negation of [`eq_f32`]).
pub fn ne_f32(a: u32, b: u32) -> bool {
    !eq_f32(a, b)
}

/// fp32 `a < b`: false if either is a NaN.
pub fn lt_f32(a: u32, b: u32) -> bool {
    compare_f32(a, b) == Some(std::cmp::Ordering::Less)
}

/// fp32 `a <= b`: false if either is a NaN.
pub fn le_f32(a: u32, b: u32) -> bool {
    matches!(
        compare_f32(a, b),
        Some(std::cmp::Ordering::Less | std::cmp::Ordering::Equal)
    )
}

/// `relu_f32(x) = max32(x, +0)` (rule 7): -0 and negative values give +0, a
/// subnormal gives +0 (read as a zero, and +0 is above -0), a NaN the
/// canonical NaN.
pub fn relu_f32(x: u32) -> u32 {
    max32(x, 0)
}

/// `relu6_f32(x) = min32(max32(x, +0), 6.0)` (rule 7).
pub fn relu6_f32(x: u32) -> u32 {
    min32(max32(x, 0), F32_SIX)
}

/// bf16 -> fp32 ("Conversions"): append 16 zero bits.
///
/// Exact for zeros, normals and infinities; a subnormal bf16 gives the zero of
/// its sign (rule 1); any NaN gives [`CANONICAL_NAN_F32`] (rule 5).
pub fn widen_bf16(x: u16) -> u32 {
    let wide = u32::from(x) << 16;
    match classify_f32(wide) {
        FpClass::Nan => CANONICAL_NAN_F32,
        FpClass::Subnormal => wide & SIGN_F32,
        _ => wide,
    }
}

/// fp32 -> bf16 ("Conversions"): rules 1-5 with an 8-bit significand.
///
/// A subnormal input gives the zero of its sign, a NaN [`CANONICAL_NAN_BF16`];
/// a normal input is rounded to nearest-even at 8 bits and becomes an infinity
/// if that exceeds [`BF16_MAX`]. (A normal input never rounds below 2^-126,
/// since 2^-126 itself is a bf16, so rule 3 never fires here.)
pub fn narrow_bf16(x: u32) -> u16 {
    let bits = match decode_f32(x) {
        Operand::Nan => u32::from(CANONICAL_NAN_BF16),
        Operand::Inf { neg } => signed_zero(neg, 15) | u32::from(BF16_POS_INF),
        Operand::Zero { neg } => signed_zero(neg, 15),
        Operand::Finite { neg, sig, exp } => round_pack(neg, u128::from(sig), exp, PREC_BF16),
    };
    bits as u16
}

/// The MXU's bf16 product: `mul32(widen_bf16(a), widen_bf16(b))` ("MXU semantics").
///
/// The exact product of two 8-bit significands has at most 16 bits, so it is
/// exact in fp32 except that rule 3 flushes it below 2^-126 and rule 4
/// overflows it to infinity.
pub fn bf16_mul(a: u16, b: u16) -> u32 {
    mul32(widen_bf16(a), widen_bf16(b))
}

/// int32 -> fp32 ("Conversions"): round to nearest even at 24 bits.
///
/// 0 gives +0; the result is never tiny and never overflows (|x| <= 2^31).
pub fn i32_to_f32(x: i32) -> u32 {
    if x == 0 {
        return 0;
    }
    round_pack(x < 0, u128::from(x.unsigned_abs()), 0, PREC_F32)
}

/// fp32 -> int32 ("Conversions"): round to the nearest integer, ties to even,
/// then saturate to `[i32::MIN, i32::MAX]`.
///
/// NaN gives 0; subnormals (rule 1) and zeros give 0; infinities saturate.
pub fn f32_to_i32(x: u32) -> i32 {
    let (neg, sig, exp) = match decode_f32(x) {
        Operand::Nan | Operand::Zero { .. } => return 0,
        Operand::Inf { neg } => return if neg { i32::MIN } else { i32::MAX },
        Operand::Finite { neg, sig, exp } => (neg, i64::from(sig), exp),
    };
    let mag: i64 = if exp >= 0 {
        // |x| >= 2^23 * 2^exp; above 2^40 it saturates whatever the bits.
        if exp > 16 {
            i64::MAX
        } else {
            sig << exp
        }
    } else if exp < -25 {
        // |x| < 2^24 * 2^-26 = 1/4: rounds to 0.
        0
    } else {
        let shift = -exp;
        let kept = sig >> shift;
        let rest = sig & ((1 << shift) - 1);
        let half = 1 << (shift - 1);
        kept + i64::from(rest > half || (rest == half && kept & 1 == 1))
    };
    let signed = if neg { -mag } else { mag };
    signed.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
}

/// `mag` * 2^`exp` plus a nonzero tail below it when `inexact`, rounded once
/// (rules 2-4): the tail only has to land below the round bit, so one more
/// bit set under `mag`'s last bit stands for it.
fn round_pack_sticky(neg: bool, mag: u128, exp: i32, inexact: bool) -> u32 {
    round_pack(neg, (mag << 1) | u128::from(inexact), exp - 1, PREC_F32)
}

/// fp32 division under FTZ-RNE ("EUP", div32): the exact quotient rounded
/// once.
///
/// A NaN operand, 0 / 0 and inf / inf give [`CANONICAL_NAN_F32`]; x / 0 is
/// an infinity and x / inf a zero, each with the XOR of the signs (so is an
/// infinity divided by a finite value, and a zero by a nonzero one).
pub fn div32(a: u32, b: u32) -> u32 {
    let neg = (a ^ b) & SIGN_F32 != 0;
    match (decode_f32(a), decode_f32(b)) {
        (Operand::Nan, _) | (_, Operand::Nan) => CANONICAL_NAN_F32,
        (Operand::Zero { .. }, Operand::Zero { .. })
        | (Operand::Inf { .. }, Operand::Inf { .. }) => CANONICAL_NAN_F32,
        (Operand::Inf { .. }, _) | (_, Operand::Zero { .. }) => inf_f32(neg),
        (Operand::Zero { .. }, _) | (_, Operand::Inf { .. }) => signed_zero(neg, 31),
        (
            Operand::Finite {
                sig: sa, exp: ea, ..
            },
            Operand::Finite {
                sig: sb, exp: eb, ..
            },
        ) => {
            // 2^23 <= sa, sb < 2^24, so the quotient of sa * 2^48 by sb has
            // 48 or 49 bits: far more than the 24 kept and the round bit.
            let num = u128::from(sa) << 48;
            let den = u128::from(sb);
            let (q, r) = (num / den, num % den);
            round_pack_sticky(neg, q, ea - eb - 48, r != 0)
        }
    }
}

/// fp32 square root under FTZ-RNE ("EUP", sqrt32): the exact root rounded
/// once.
///
/// sqrt32(+-0) = +-0 (a negative subnormal reads as -0), sqrt32(+inf) = +inf;
/// a NaN or any other negative input gives [`CANONICAL_NAN_F32`].
pub fn sqrt32(a: u32) -> u32 {
    match decode_f32(a) {
        Operand::Nan => CANONICAL_NAN_F32,
        Operand::Zero { neg } => signed_zero(neg, 31),
        Operand::Inf { neg: false } => F32_POS_INF,
        Operand::Inf { neg: true } | Operand::Finite { neg: true, .. } => CANONICAL_NAN_F32,
        Operand::Finite {
            neg: false,
            sig,
            exp,
        } => {
            // sig * 2^exp with an even exponent, scaled up by 2^80 so that
            // the integer root has 52 or 53 bits.
            let (sig, exp) = if exp % 2 != 0 {
                (u128::from(sig) << 1, exp - 1)
            } else {
                (u128::from(sig), exp)
            };
            let n = sig << 80;
            let root = n.isqrt();
            round_pack_sticky(false, root, (exp - 80) / 2, root * root != n)
        }
    }
}

/// recip(x) = div32(1.0, x) ("EUP").
pub fn recip32(x: u32) -> u32 {
    div32(F32_ONE, x)
}

/// rsqrt(x) = div32(1.0, sqrt32(x)) ("EUP"): two roundings.
pub fn rsqrt32(x: u32) -> u32 {
    div32(F32_ONE, sqrt32(x))
}

/// The Horner coefficients of exp2's polynomial, C0 .. C6 ("EUP", exp2).
pub const EXP2_COEFFS: [u32; 7] = [
    0x3f80_0000,
    0x3f31_7217,
    0x3e75_fe6a,
    0x3d63_49e2,
    0x3c1e_563b,
    0x3aa4_e577,
    0x395e_4d21,
];

/// log2(e) rounded to fp32, the factor exp applies before exp2.
pub const LOG2_E_F32: u32 = 0x3fb8_aa3b;

/// fp32 1.0.
pub const F32_ONE: u32 = 0x3f80_0000;

/// 2^t in the contract's exact sequence ("EUP", exp2): range checks, the
/// split t = i + f with i = floor(t), Horner's scheme on f from C6 down to
/// C0 with every step rounded, then the product with the exact 2^i.
pub fn exp2_32(t: u32) -> u32 {
    // Rule 1 is decode's and sub32's: a subnormal t is a zero to both.
    let i = match decode_f32(t) {
        Operand::Nan => return CANONICAL_NAN_F32,
        Operand::Inf { neg } => return if neg { 0 } else { F32_POS_INF },
        Operand::Zero { .. } => 0,
        Operand::Finite { neg, sig, exp } => floor_of(neg, sig, exp),
    };
    if i >= 128 {
        return F32_POS_INF;
    }
    if i < -126 {
        return 0;
    }
    let i = i as i32;
    let f = sub32(t, i32_to_f32(i));
    let p = EXP2_COEFFS[..6]
        .iter()
        .rev()
        .fold(EXP2_COEFFS[6], |p, &c| add32(mul32(p, f), c));
    mul32(p, ((i + BIAS) as u32) << 23)
}

/// floor((-1)^neg * sig * 2^exp), clamped to a range wider than exp2's
/// checks need (-2^20 - 1 .. 2^20).
fn floor_of(neg: bool, sig: u32, exp: i32) -> i64 {
    const LIMIT: i64 = 1 << 20;
    let sig = i64::from(sig);
    // The magnitude's floor, and whether the magnitude is an integer.
    let (mag_floor, integral) = if exp >= 0 {
        (
            if exp > 20 {
                LIMIT
            } else {
                (sig << exp).min(LIMIT)
            },
            true,
        )
    } else if exp <= -24 {
        // 2^23 <= sig < 2^24: the magnitude is below 1 and not 0.
        (0, false)
    } else {
        (sig >> -exp, sig & ((1 << -exp) - 1) == 0)
    };
    match (neg, integral) {
        (false, _) => mag_floor,
        (true, true) => -mag_floor,
        // -x's floor is -ceil(x).
        (true, false) => -mag_floor - 1,
    }
}

/// e^x = exp2(mul32(x, log2 e)) ("EUP", exp).
pub fn exp32(x: u32) -> u32 {
    exp2_32(mul32(x, LOG2_E_F32))
}

/// SRDHM, the saturating rounding doubling high multiply ("Requantization").
///
/// If `a == b == i32::MIN` the result is `i32::MAX`; otherwise, with the exact
/// 64-bit product ab, nudge = 2^30 if ab >= 0 else 1 - 2^30, and the result is
/// (ab + nudge) / 2^31 with the division truncating toward zero.
pub fn srdhm(a: i32, b: i32) -> i32 {
    if a == i32::MIN && b == i32::MIN {
        return i32::MAX;
    }
    let ab = i64::from(a) * i64::from(b);
    let nudge: i64 = if ab >= 0 { 1 << 30 } else { 1 - (1 << 30) };
    // |ab| < 2^62 here, so the sum cannot overflow; `/` truncates toward zero.
    ((ab + nudge) / (1i64 << 31)) as i32
}

/// RDBPOT, the rounding divide by a power of two ("Requantization").
///
/// mask = 2^e - 1, remainder = x AND mask, threshold = (mask >> 1) + (1 if
/// x < 0 else 0); the result is (x >> e) + (1 if remainder > threshold else 0)
/// with an arithmetic shift. This rounds to nearest, ties away from zero.
///
/// # Panics
///
/// If `e > 31` (the contract defines e in 0..=31).
pub fn rdbpot(x: i32, e: u32) -> i32 {
    assert!(e <= 31, "rdbpot: exponent {e} outside 0..=31");
    // In i64 so that e = 31 needs no special case.
    let x = i64::from(x);
    let mask = (1i64 << e) - 1;
    let remainder = x & mask;
    let threshold = (mask >> 1) + i64::from(x < 0);
    ((x >> e) + i64::from(remainder > threshold)) as i32
}

/// int32 accumulator -> int8 ("Requantization", as in gemmlowp / TFLite):
/// `clamp(zero_point + rdbpot(srdhm(acc, multiplier), shift), -128, 127)`.
///
/// The addition of `zero_point` is exact (done in 64 bits) before the clamp,
/// so no intermediate wraps. `multiplier` is normally a Q31 value in
/// [2^30, 2^31 - 1], but every int32 is accepted.
///
/// # Panics
///
/// If `shift > 31`, as [`rdbpot`].
pub fn requant_int8(acc: i32, multiplier: i32, shift: u32, zero_point: i32) -> i8 {
    let scaled = rdbpot(srdhm(acc, multiplier), shift);
    (i64::from(zero_point) + i64::from(scaled)).clamp(-128, 127) as i8
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: u32 = 0x3F80_0000;
    const TWO: u32 = 0x4000_0000;

    #[test]
    fn zero_sign_rules() {
        assert_eq!(add32(0, F32_NEG_ZERO), 0);
        assert_eq!(add32(F32_NEG_ZERO, F32_NEG_ZERO), F32_NEG_ZERO);
        assert_eq!(add32(ONE, ONE | SIGN_F32), 0);
        assert_eq!(sub32(F32_NEG_ZERO, 0), F32_NEG_ZERO);
        assert_eq!(sub32(ONE, ONE), 0);
        assert_eq!(mul32(F32_NEG_ZERO, ONE), F32_NEG_ZERO);
        assert_eq!(mul32(F32_NEG_ZERO, F32_NEG_ZERO), 0);
    }

    #[test]
    fn subnormals_read_as_zero() {
        let sub = 0x0000_0001;
        assert_eq!(add32(sub, sub), 0);
        assert_eq!(add32(sub | SIGN_F32, sub | SIGN_F32), F32_NEG_ZERO);
        assert_eq!(mul32(sub, F32_POS_INF), CANONICAL_NAN_F32);
        assert_eq!(add32(ONE, sub), ONE);
        assert_eq!(max32(sub | SIGN_F32, F32_NEG_ZERO), F32_NEG_ZERO);
        assert_eq!(min32(sub, 0), 0);
        assert_eq!(widen_bf16(0x8001), F32_NEG_ZERO);
        assert_eq!(narrow_bf16(0x807F_FFFF), 0x8000);
        assert_eq!(f32_to_i32(0x007F_FFFF), 0);
    }

    #[test]
    fn tininess_is_judged_after_rounding() {
        // 2^-126 * (1 - 2^-24) = 2^-126 - 2^-150 has 24 bits: it stays below
        // 2^-126 after rounding and is flushed.
        assert_eq!(mul32(F32_MIN_NORMAL, 0x3F7F_FFFF), 0);
        assert_eq!(mul32(F32_MIN_NORMAL | SIGN_F32, 0x3F7F_FFFF), F32_NEG_ZERO);
        // (1 + 2^-23) * 2^-126 * (1 - 2^-23) = 2^-126 * (1 - 2^-46): tiny before
        // rounding, exactly 2^-126 after it, so it survives.
        assert_eq!(mul32(0x0080_0001, 0x3F7F_FFFE), F32_MIN_NORMAL);
        // 2^-126 * (1 - d), 2^-24 < d < 2^-23 (d = 4199202 * 2^-47): at 24 bits
        // with an unbounded exponent it rounds to 2^-126 - 2^-150 and is flushed,
        // where IEEE gradual underflow would round it up to 2^-126.
        assert_eq!(mul32(0x0080_05A9, 0x3F7F_F4AE), 0);
    }

    #[test]
    fn overflow_and_nan_rules() {
        // The ulp of F32_MAX is 2^104: + 2^103 is a tie that goes to the even
        // 2^128, which overflows; + 2^102 rounds back to F32_MAX.
        assert_eq!(add32(F32_MAX, 0x7300_0000), F32_POS_INF);
        assert_eq!(add32(F32_MAX, 0x7280_0000), F32_MAX);
        assert_eq!(mul32(F32_MAX, TWO | SIGN_F32), F32_NEG_INF);
        assert_eq!(add32(F32_POS_INF, F32_NEG_INF), CANONICAL_NAN_F32);
        assert_eq!(mul32(0xFFFF_FFFF, ONE), CANONICAL_NAN_F32);
        assert_eq!(narrow_bf16(0x7F7F_FFFF), BF16_POS_INF);
        assert_eq!(narrow_bf16(0xFF81_0000), CANONICAL_NAN_BF16);
        assert_eq!(widen_bf16(0xFFC1), CANONICAL_NAN_F32);
    }

    #[test]
    fn narrowing_ties_go_to_even() {
        assert_eq!(narrow_bf16(0x3F80_8000), 0x3F80); // tie, even stays
        assert_eq!(narrow_bf16(0x3F81_8000), 0x3F82); // tie, odd rounds up
        assert_eq!(narrow_bf16(0x3F80_8001), 0x3F81);
    }

    #[test]
    fn integer_conversions() {
        assert_eq!(i32_to_f32(i32::MIN), 0xCF00_0000);
        assert_eq!(i32_to_f32(i32::MAX), 0x4F00_0000);
        assert_eq!(i32_to_f32(16_777_217), 0x4B80_0000); // 2^24 + 1 ties to even
        assert_eq!(f32_to_i32(0x3F00_0000), 0); // 0.5
        assert_eq!(f32_to_i32(0x3FC0_0000), 2); // 1.5
        assert_eq!(f32_to_i32(0x4020_0000), 2); // 2.5
        assert_eq!(f32_to_i32(0xC020_0000), -2);
        assert_eq!(f32_to_i32(0x4F00_0000), i32::MAX); // 2^31 saturates
        assert_eq!(f32_to_i32(0xCF00_0000), i32::MIN); // -2^31 is exact
        assert_eq!(f32_to_i32(F32_NEG_INF), i32::MIN);
        assert_eq!(f32_to_i32(CANONICAL_NAN_F32), 0);
    }

    #[test]
    fn requantization_edges() {
        assert_eq!(srdhm(i32::MIN, i32::MIN), i32::MAX);
        assert_eq!(srdhm(1 << 30, 1 << 30), 1 << 29);
        assert_eq!(rdbpot(5, 1), 3); // 2.5 away from zero
        assert_eq!(rdbpot(-5, 1), -3);
        assert_eq!(rdbpot(-4, 1), -2);
        assert_eq!(rdbpot(i32::MIN, 31), -1);
        assert_eq!(rdbpot(i32::MAX, 31), 1);
        assert_eq!(requant_int8(i32::MAX, i32::MAX, 0, i32::MAX), 127);
        assert_eq!(requant_int8(i32::MIN, i32::MAX, 0, i32::MIN), -128);
    }
    #[test]
    fn div32_special_cases() {
        let sub = 0x0000_0001;
        let neg_one = ONE | SIGN_F32;
        assert_eq!(div32(ONE, 0), F32_POS_INF);
        assert_eq!(div32(neg_one, 0), F32_NEG_INF);
        assert_eq!(div32(ONE, F32_NEG_ZERO), F32_NEG_INF);
        // A subnormal divisor is a zero, a subnormal dividend too.
        assert_eq!(div32(ONE, sub), F32_POS_INF);
        assert_eq!(div32(sub, ONE), 0);
        assert_eq!(div32(sub | SIGN_F32, ONE), F32_NEG_ZERO);
        assert_eq!(div32(0, 0), CANONICAL_NAN_F32);
        assert_eq!(div32(sub, F32_NEG_ZERO), CANONICAL_NAN_F32);
        assert_eq!(div32(F32_POS_INF, F32_NEG_INF), CANONICAL_NAN_F32);
        assert_eq!(div32(F32_NEG_INF, TWO), F32_NEG_INF);
        assert_eq!(div32(F32_POS_INF, 0), F32_POS_INF);
        assert_eq!(div32(neg_one, F32_POS_INF), F32_NEG_ZERO);
        assert_eq!(div32(0x7FC0_1234, ONE), CANONICAL_NAN_F32);
        assert_eq!(div32(ONE, 0xFF80_0001), CANONICAL_NAN_F32);
        // 1/3 rounds up; exact quotients stay exact.
        assert_eq!(div32(ONE, 0x4040_0000), 0x3EAA_AAAB);
        assert_eq!(div32(0x40C0_0000, TWO), 0x4040_0000);
        // Overflow to infinity, underflow to a zero of the quotient's sign.
        assert_eq!(div32(F32_MAX, 0x3F00_0000), F32_POS_INF);
        assert_eq!(div32(F32_MIN_NORMAL | SIGN_F32, TWO), F32_NEG_ZERO);
        assert_eq!(div32(F32_MIN_NORMAL, ONE), F32_MIN_NORMAL);
        assert_eq!(recip32(TWO), 0x3F00_0000);
    }

    #[test]
    fn sqrt32_special_cases() {
        assert_eq!(sqrt32(0), 0);
        assert_eq!(sqrt32(F32_NEG_ZERO), F32_NEG_ZERO);
        // A negative subnormal reads as -0.
        assert_eq!(sqrt32(0x8000_0001), F32_NEG_ZERO);
        assert_eq!(sqrt32(0x0000_0001), 0);
        assert_eq!(sqrt32(F32_POS_INF), F32_POS_INF);
        assert_eq!(sqrt32(F32_NEG_INF), CANONICAL_NAN_F32);
        assert_eq!(sqrt32(ONE | SIGN_F32), CANONICAL_NAN_F32);
        assert_eq!(sqrt32(0x7F80_0001), CANONICAL_NAN_F32);
        assert_eq!(sqrt32(0x4080_0000), TWO);
        assert_eq!(sqrt32(TWO), 0x3FB5_04F3);
        // Odd and even exponents at the ends of the range.
        assert_eq!(sqrt32(F32_MIN_NORMAL), 0x2000_0000);
        assert_eq!(sqrt32(F32_MAX), 0x5F7F_FFFF);
        assert_eq!(rsqrt32(0), F32_POS_INF);
        assert_eq!(rsqrt32(F32_NEG_ZERO), F32_NEG_INF);
        assert_eq!(rsqrt32(F32_POS_INF), 0);
        assert_eq!(rsqrt32(0x4080_0000), 0x3F00_0000);
    }

    #[test]
    fn exp2_and_exp_special_cases() {
        assert_eq!(exp2_32(0), ONE);
        assert_eq!(exp2_32(F32_NEG_ZERO), ONE);
        assert_eq!(exp2_32(0x8000_0001), ONE);
        assert_eq!(exp2_32(ONE), TWO);
        assert_eq!(exp2_32(0x42FE_0000), 0x7F00_0000); // 2^127
        assert_eq!(exp2_32(0xC2FC_0000), F32_MIN_NORMAL); // 2^-126
        assert_eq!(exp2_32(0x4300_0000), F32_POS_INF); // t = 128
        assert_eq!(exp2_32(0xC2FD_0000), 0); // t = -126.5
        assert_eq!(exp2_32(F32_POS_INF), F32_POS_INF);
        assert_eq!(exp2_32(F32_NEG_INF), 0);
        assert_eq!(exp2_32(0xFFC0_0001), CANONICAL_NAN_F32);
        assert_eq!(exp2_32(F32_MAX), F32_POS_INF);
        assert_eq!(exp2_32(F32_MAX | SIGN_F32), 0);
        // -1.5: i = -2, f = 0.5.
        assert_eq!(
            exp2_32(0xBFC0_0000),
            mul32(exp2_32(0x3F00_0000), 0x3E80_0000)
        );
        assert_eq!(exp32(0), ONE);
        assert_eq!(exp32(0x7FC0_0000), CANONICAL_NAN_F32);
        assert_eq!(exp32(F32_NEG_INF), 0);
    }
}

//! The golden numerics against an independent soft-float.
//!
//! `rustc_apfloat` (a port of LLVM's APFloat) computes IEEE results with
//! gradual underflow. The contract differs from IEEE only at the edges, so the
//! reference here wraps APFloat in those rules instead of reimplementing them:
//!
//! * inputs: subnormals are replaced by zeros of their sign (rule 1);
//! * rounding: the operation runs in a format with the destination's
//!   precision but an 11-bit exponent, so nothing an fp32 operation produces
//!   is subnormal there and the result is rounded once "as if the exponent
//!   range were unbounded" (rule 2);
//! * the rounded result is then flushed below 2^-126 (rule 3), overflowed
//!   above the largest finite value (rule 4), and any NaN made canonical (rule 5).
//!
//! Directed tests take the cross product of special values; random tests draw
//! over a million operand pairs per operation, weighted towards special classes
//! and towards ties, cancellation, overflow and underflow.

mod support;

use golden::numerics::*;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rustc_apfloat::ieee::{BFloat, IeeeFloat, Semantics, Single};
use rustc_apfloat::{Float, FloatConvert, Round};
use support::Mismatches;

/// 24-bit significand, binary64 exponent range.
struct Wide24S;
impl Semantics for Wide24S {
    const BITS: usize = 35;
    const EXP_BITS: usize = 11;
}
type Wide24 = IeeeFloat<Wide24S>;

/// 8-bit significand, binary64 exponent range.
struct Wide8S;
impl Semantics for Wide8S {
    const BITS: usize = 19;
    const EXP_BITS: usize = 11;
}
type Wide8 = IeeeFloat<Wide8S>;

const RNE: Round = Round::NearestTiesToEven;

/// Random pairs per operation.
const RANDOM_PAIRS: usize = 1 << 20;

fn exact<F: FloatConvert<T>, T: Float>(x: F) -> T {
    let mut loses_info = false;
    let r = x.convert_r(RNE, &mut loses_info).value;
    assert!(!loses_info, "conversion expected to be exact");
    r
}

/// Rule 1 on fp32 bits, outside the model under test.
fn ftz_in(x: u32) -> u32 {
    if x & 0x7F80_0000 == 0 {
        x & 0x8000_0000
    } else {
        x
    }
}

fn wide_in(x: u32) -> Wide24 {
    exact(Single::from_bits(u128::from(ftz_in(x))))
}

fn wide_in_bf16(x: u16) -> Wide24 {
    let x = if x & 0x7F80 == 0 { x & 0x8000 } else { x };
    exact(BFloat::from_bits(u128::from(x)))
}

/// Rules 3-5 on a result rounded at precision `T::PRECISION` with a wide
/// exponent, then the (now exact) move into the destination format `T`.
fn finish<W: FloatConvert<T>, T: Float + FloatConvert<W>>(r: W, canonical_nan: u128) -> u128 {
    let sign_bit = 1u128 << (T::BITS - 1);
    if r.is_nan() {
        return canonical_nan;
    }
    let sign = if r.is_negative() { sign_bit } else { 0 };
    let mag = r.abs();
    if mag.is_zero() || mag < exact::<T, W>(T::smallest_normalized()) {
        return sign;
    }
    if mag > exact::<T, W>(T::largest()) {
        return sign | T::INFINITY.to_bits();
    }
    exact::<W, T>(r).to_bits()
}

fn ref_add(a: u32, b: u32) -> u32 {
    finish::<Wide24, Single>(wide_in(a).add_r(wide_in(b), RNE).value, 0x7FC0_0000) as u32
}

fn ref_sub(a: u32, b: u32) -> u32 {
    finish::<Wide24, Single>(wide_in(a).sub_r(wide_in(b), RNE).value, 0x7FC0_0000) as u32
}

fn ref_mul(a: u32, b: u32) -> u32 {
    finish::<Wide24, Single>(wide_in(a).mul_r(wide_in(b), RNE).value, 0x7FC0_0000) as u32
}

fn ref_div(a: u32, b: u32) -> u32 {
    finish::<Wide24, Single>(wide_in(a).div_r(wide_in(b), RNE).value, 0x7FC0_0000) as u32
}

fn ref_bf16_mul(a: u16, b: u16) -> u32 {
    finish::<Wide24, Single>(
        wide_in_bf16(a).mul_r(wide_in_bf16(b), RNE).value,
        0x7FC0_0000,
    ) as u32
}

fn ref_narrow(x: u32) -> u16 {
    let mut loses_info = false;
    let r: Wide8 = wide_in(x).convert_r(RNE, &mut loses_info).value;
    finish::<Wide8, BFloat>(r, 0x7FC0) as u16
}

fn ref_i32_to_f32(x: i32) -> u32 {
    Single::from_i128_r(i128::from(x), RNE).value.to_bits() as u32
}

fn ref_f32_to_i32(x: u32) -> i32 {
    // APFloat gives 0 for NaN and saturates on overflow, as the contract does.
    let v = Single::from_bits(u128::from(ftz_in(x)));
    v.to_i128_r(32, RNE, &mut true).value as i32
}

/// Rule 7 restated on the host's total order (exact for non-NaN values).
fn ref_min_max(a: u32, b: u32) -> (u32, u32) {
    let (fa, fb) = (f32::from_bits(ftz_in(a)), f32::from_bits(ftz_in(b)));
    if fa.is_nan() || fb.is_nan() {
        return (0x7FC0_0000, 0x7FC0_0000);
    }
    let (lo, hi) = if fa.total_cmp(&fb).is_le() {
        (fa, fb)
    } else {
        (fb, fa)
    };
    (lo.to_bits(), hi.to_bits())
}

/// fp32 values at the edges of every class.
const F32_SPECIALS: &[u32] = &[
    0x0000_0000, // +0
    0x0000_0001, // smallest subnormal
    0x0040_0000, // mid subnormal
    0x007F_FFFF, // largest subnormal
    0x0080_0000, // 2^-126
    0x0080_0001,
    0x00FF_FFFF,
    0x0100_0000, // 2^-125
    0x0C80_0000, // 2^-102
    0x1F80_0000, // 2^-64
    0x2000_0000, // 2^-63
    0x3380_0000, // 2^-24
    0x33FF_FFFF,
    0x3400_0000, // 2^-23
    0x3F00_0000, // 0.5
    0x3F7F_FFFF, // 1 - 2^-24
    0x3F80_0000, // 1
    0x3F80_0001, // 1 + 2^-23
    0x3FC0_0000, // 1.5
    0x3FFF_FFFF,
    0x4000_0000, // 2
    0x4040_0000, // 3
    0x3DCC_CCCD, // 0.1
    0x4B80_0000, // 2^24
    0x4B80_0001,
    0x5F00_0000, // 2^63
    0x5F80_0000, // 2^64
    0x7280_0000, // 2^102
    0x7300_0000, // 2^103, half an ulp of F32_MAX
    0x7F00_0000, // 2^127
    0x7F7F_FFFE,
    0x7F7F_FFFF, // largest finite
    0x7F80_0000, // inf
    0x7F80_0001, // signalling NaN
    0x7FA0_0000, // signalling NaN
    0x7FC0_0000, // canonical NaN
    0x7FC0_0001, // quiet NaN with payload
    0x7FFF_FFFF, // NaN, all payload bits
];

/// The specials of both signs.
fn f32_specials() -> Vec<u32> {
    F32_SPECIALS
        .iter()
        .flat_map(|&x| [x, x | 0x8000_0000])
        .collect()
}

/// bf16 values at the edges of every class, both signs.
fn bf16_specials() -> Vec<u16> {
    const S: &[u16] = &[
        0x0000, 0x0001, 0x007F, 0x0080, 0x0081, 0x00FF, 0x0100, 0x1F80, 0x2000, 0x3F00, 0x3F7F,
        0x3F80, 0x3F81, 0x3FC0, 0x3FFF, 0x4000, 0x5F00, 0x5F80, 0x5FFF, 0x7F00, 0x7F7E, 0x7F7F,
        0x7F80, 0x7F81, 0x7FA0, 0x7FC0, 0x7FC1, 0x7FFF,
    ];
    S.iter().flat_map(|&x| [x, x | 0x8000]).collect()
}

fn binary_cross_product(name: &str, golden: fn(u32, u32) -> u32, reference: fn(u32, u32) -> u32) {
    let specials = f32_specials();
    let mut bad = Mismatches::new(format!("{name} specials"));
    for &a in &specials {
        for &b in &specials {
            let (got, want) = (golden(a, b), reference(a, b));
            bad.check(got, want, || {
                format!("{name}({a:08x}, {b:08x}) = {got:08x}, reference {want:08x}")
            });
        }
    }
    bad.finish();
}

#[test]
fn add_sub_mul_special_cross_product() {
    binary_cross_product("add32", add32, ref_add);
    binary_cross_product("sub32", sub32, ref_sub);
    binary_cross_product("mul32", mul32, ref_mul);
    binary_cross_product("div32", div32, ref_div);
    // Products at the 2^-126 edge: tiny before rounding but 2^-126 after it
    // (kept), or rounding to just below 2^-126 where IEEE gradual underflow
    // would give 2^-126 (flushed).
    let mut bad = Mismatches::new("mul32 tininess");
    for (a, b) in [
        (0x0080_0001, 0x3F7F_FFFE),
        (0x0080_05A9, 0x3F7F_F4AE),
        (0x0080_0000, 0x3F7F_FFFF),
    ] {
        for signs in [0, 0x8000_0000] {
            let (a, b) = (a ^ signs, b);
            let (got, want) = (mul32(a, b), ref_mul(a, b));
            bad.check(got, want, || {
                format!("mul32({a:08x}, {b:08x}) = {got:08x}, reference {want:08x}")
            });
        }
    }
    bad.finish();
    binary_cross_product("min32", min32, |a, b| ref_min_max(a, b).0);
    binary_cross_product("max32", max32, |a, b| ref_min_max(a, b).1);
}

#[test]
fn bf16_mul_special_cross_product() {
    let specials = bf16_specials();
    let mut bad = Mismatches::new("bf16_mul specials");
    for &a in &specials {
        for &b in &specials {
            let (got, want) = (bf16_mul(a, b), ref_bf16_mul(a, b));
            bad.check(got, want, || {
                format!("bf16_mul({a:04x}, {b:04x}) = {got:08x}, reference {want:08x}")
            });
        }
    }
    bad.finish();
}

#[test]
fn conversions_of_specials() {
    let mut bad = Mismatches::new("conversion specials");
    for a in f32_specials() {
        let (got, want) = (narrow_bf16(a), ref_narrow(a));
        bad.check(got, want, || {
            format!("narrow_bf16({a:08x}) = {got:04x}, reference {want:04x}")
        });
        let (got, want) = (f32_to_i32(a), ref_f32_to_i32(a));
        bad.check(got, want, || {
            format!("f32_to_i32({a:08x}) = {got}, reference {want}")
        });
        // Ties at the bf16 boundary around each special.
        for low in [0x7FFF, 0x8000, 0x8001, 0xFFFF] {
            let x = (a & 0xFFFF_0000) | low;
            let (got, want) = (narrow_bf16(x), ref_narrow(x));
            bad.check(got, want, || {
                format!("narrow_bf16({x:08x}) = {got:04x}, reference {want:04x}")
            });
        }
    }
    for x in [
        0,
        1,
        -1,
        i32::MIN,
        i32::MAX,
        1 << 24,
        (1 << 24) + 1,
        (1 << 24) + 3,
        -(1 << 25) - 2,
    ] {
        let (got, want) = (i32_to_f32(x), ref_i32_to_f32(x));
        bad.check(got, want, || {
            format!("i32_to_f32({x}) = {got:08x}, reference {want:08x}")
        });
    }
    bad.finish();
}

/// Random fp32 operands, drawn from classes chosen to reach every branch of
/// an FTZ-RNE implementation often.
struct F32Gen;

impl F32Gen {
    fn sign(rng: &mut ChaCha8Rng) -> u32 {
        if rng.gen() {
            0x8000_0000
        } else {
            0
        }
    }

    /// A 23-bit fraction: uniform, or with only its top few bits random (short
    /// significands make exact results and exact ties common), or all ones.
    fn frac(rng: &mut ChaCha8Rng) -> u32 {
        match rng.gen_range(0..8) {
            0..=3 => rng.gen::<u32>() & 0x7F_FFFF,
            4..=6 => {
                let keep = rng.gen_range(0..=23);
                (rng.gen::<u32>() & 0x7F_FFFF) >> (23 - keep) << (23 - keep)
            }
            _ => 0x7F_FFFF - rng.gen_range(0..4),
        }
    }

    fn with_exp(biased_exp: i32, rng: &mut ChaCha8Rng) -> u32 {
        let e = biased_exp.clamp(1, 254) as u32;
        Self::sign(rng) | (e << 23) | Self::frac(rng)
    }

    fn any(rng: &mut ChaCha8Rng) -> u32 {
        let s = Self::sign(rng);
        match rng.gen_range(0..100) {
            0..=4 => s,                                               // zero
            5..=11 => s | rng.gen_range(1..0x80_0000),                // subnormal
            12..=14 => s | 0x7F80_0000,                               // infinity
            15..=18 => s | 0x7F80_0000 | rng.gen_range(1..0x80_0000), // NaN, any payload
            19..=24 => s | (0x7F7F_FFFF - rng.gen_range(0..8)),       // near max finite
            25..=30 => s | (0x0080_0000 + rng.gen_range(0..8)),       // near min normal
            31..=40 => Self::with_exp(rng.gen_range(1..=4), rng),     // low binades
            41..=50 => Self::with_exp(rng.gen_range(251..=254), rng), // high binades
            51..=60 => rng.gen(),                                     // any bits
            _ => Self::with_exp(rng.gen_range(1..=254), rng),
        }
    }

    /// A pair for add/sub: independent, or a second operand placed to cancel,
    /// to land a tie, or to straddle the overflow or underflow edge.
    fn add_pair(rng: &mut ChaCha8Rng) -> (u32, u32) {
        let a = Self::any(rng);
        let exp_a = ((a >> 23) & 0xFF) as i32;
        let b = match rng.gen_range(0..10) {
            0..=2 => Self::any(rng),
            // Near-cancellation: -a give or take a few ulps.
            3 => (a ^ 0x8000_0000)
                .wrapping_add(rng.gen_range(0..5))
                .wrapping_sub(2),
            // Aligned a little below a: the shifted-out bits often form exact
            // halves (ties) when the fraction is short.
            4..=6 => Self::with_exp(exp_a - rng.gen_range(0..=26), rng),
            // Far below: only a sticky contribution, or none after rule 1.
            7 => Self::with_exp(exp_a - rng.gen_range(27..=260), rng),
            // Both at the top (overflow) or both at the bottom (underflow by cancellation).
            8 => Self::with_exp(rng.gen_range(250..=254), rng),
            _ => Self::with_exp(rng.gen_range(1..=3), rng),
        };
        if rng.gen() {
            (a, b)
        } else {
            (b, a)
        }
    }

    /// A pair for mul whose product often lands near 2^-126 or 2^128.
    /// Pairs whose quotient lands near 2^-126, near the largest finite value,
    /// near 1, or anywhere.
    fn div_pair(rng: &mut ChaCha8Rng) -> (u32, u32) {
        let a = Self::any(rng);
        let exp_a = ((a >> 23) & 0xFF) as i32;
        let b = match rng.gen_range(0..10) {
            0..=2 => Self::any(rng),
            // Unbiased exponent difference about -126.
            3..=4 => Self::with_exp(exp_a + 126 + rng.gen_range(-1..=2), rng),
            // Unbiased exponent difference about 127.
            5..=6 => Self::with_exp(exp_a - 127 + rng.gen_range(-2..=1), rng),
            7..=8 => Self::with_exp(exp_a + rng.gen_range(-1..=1), rng),
            _ => Self::with_exp(127 + rng.gen_range(-2..=2), rng),
        };
        (a, b)
    }

    fn mul_pair(rng: &mut ChaCha8Rng) -> (u32, u32) {
        let a = Self::any(rng);
        let exp_a = ((a >> 23) & 0xFF) as i32;
        let b = match rng.gen_range(0..10) {
            0..=2 => Self::any(rng),
            // Unbiased exponents summing to about -126 (biased sum about 1 + 127).
            3..=4 => Self::with_exp(128 - exp_a + rng.gen_range(-2..=1), rng),
            // Unbiased exponents summing to about 127 (biased sum about 381).
            5..=6 => Self::with_exp(381 - exp_a + rng.gen_range(-1..=1), rng),
            7..=8 => {
                let biased_sum = match rng.gen_range(0..3) {
                    0 => 127,
                    1 => 381,
                    _ => rng.gen_range(128..=380),
                };
                return Self::carry_pair(biased_sum, rng);
            }
            _ => Self::with_exp(127 + rng.gen_range(-2..=2), rng),
        };
        if rng.gen() {
            (a, b)
        } else {
            (b, a)
        }
    }

    /// Two normal operands whose significand product lies within 2^24 of 2^47,
    /// so that rounding often carries into the next binade. The biased
    /// exponents sum to `biased_sum`, which puts that binade edge at
    /// 2^(biased_sum - 253): 127 aims at 2^-126 (tiny before rounding but not
    /// after), 381 at 2^128 (overflow only through rounding).
    fn carry_pair(biased_sum: i32, rng: &mut ChaCha8Rng) -> (u32, u32) {
        let sig_a: u64 = rng.gen_range(0x80_0001..0x100_0000);
        let sig_b = ((1u64 << 47) / sig_a) as i64 + rng.gen_range(-1..=1);
        let sig_b = sig_b.clamp(0x80_0000, 0xFF_FFFF) as u32;
        let exp_a = rng.gen_range((biased_sum - 254).max(1)..=(biased_sum - 1).min(254));
        let exp_b = biased_sum - exp_a;
        let a = Self::sign(rng) | ((exp_a as u32) << 23) | (sig_a as u32 & 0x7F_FFFF);
        let b = Self::sign(rng) | ((exp_b as u32) << 23) | (sig_b & 0x7F_FFFF);
        (a, b)
    }
}

fn bf16_any(rng: &mut ChaCha8Rng) -> u16 {
    match rng.gen_range(0..4) {
        0 => rng.gen(),
        1 => {
            let s = bf16_specials();
            s[rng.gen_range(0..s.len())]
        }
        // Near the range edges, where the exact product under- or overflows.
        2 => (rng.gen::<u16>() & 0x807F) | (rng.gen_range(0..=12u16) << 7),
        _ => (rng.gen::<u16>() & 0x807F) | (rng.gen_range(0xF0..=0xFEu16) << 7),
    }
}

fn random_binary(
    name: &str,
    stream: u64,
    gen: fn(&mut ChaCha8Rng) -> (u32, u32),
    golden: fn(u32, u32) -> u32,
    reference: fn(u32, u32) -> u32,
) {
    let mut rng = support::rng(name, stream);
    let mut bad = Mismatches::new(format!("random {name}"));
    for _ in 0..RANDOM_PAIRS {
        let (a, b) = gen(&mut rng);
        let (got, want) = (golden(a, b), reference(a, b));
        bad.check(got, want, || {
            format!("{name}({a:08x}, {b:08x}) = {got:08x}, reference {want:08x}")
        });
    }
    bad.finish();
}

#[test]
fn random_add() {
    random_binary("add32", 1, F32Gen::add_pair, add32, ref_add);
}

#[test]
fn random_sub() {
    random_binary("sub32", 2, F32Gen::add_pair, sub32, ref_sub);
}

#[test]
fn random_mul() {
    random_binary("mul32", 3, F32Gen::mul_pair, mul32, ref_mul);
}

#[test]
fn random_div() {
    random_binary("div32", 9, F32Gen::div_pair, div32, ref_div);
}

#[test]
fn random_min_max() {
    let pair = |rng: &mut ChaCha8Rng| (F32Gen::any(rng), F32Gen::any(rng));
    random_binary("min32", 4, pair, min32, |a, b| ref_min_max(a, b).0);
    random_binary("max32", 5, pair, max32, |a, b| ref_min_max(a, b).1);
}

#[test]
fn random_bf16_mul() {
    let mut rng = support::rng("bf16_mul", 6);
    let mut bad = Mismatches::new("random bf16_mul");
    for _ in 0..RANDOM_PAIRS {
        let (a, b) = (bf16_any(&mut rng), bf16_any(&mut rng));
        let (got, want) = (bf16_mul(a, b), ref_bf16_mul(a, b));
        bad.check(got, want, || {
            format!("bf16_mul({a:04x}, {b:04x}) = {got:08x}, reference {want:08x}")
        });
    }
    bad.finish();
}

#[test]
fn random_narrow_bf16() {
    let mut rng = support::rng("narrow_bf16", 7);
    let mut bad = Mismatches::new("random narrow_bf16");
    for _ in 0..RANDOM_PAIRS {
        let mut x = F32Gen::any(&mut rng);
        if rng.gen_range(0..3) == 0 {
            // The discarded half at or next to the tie point.
            x = (x & 0xFFFF_0000) | [0x7FFF, 0x8000, 0x8001][rng.gen_range(0..3)];
        }
        let (got, want) = (narrow_bf16(x), ref_narrow(x));
        bad.check(got, want, || {
            format!("narrow_bf16({x:08x}) = {got:04x}, reference {want:04x}")
        });
    }
    bad.finish();
}

#[test]
fn random_integer_conversions() {
    let mut rng = support::rng("int_conversions", 8);
    let mut bad = Mismatches::new("random integer conversions");
    for _ in 0..RANDOM_PAIRS {
        // Integers of every magnitude, so every rounding position is exercised.
        let i = (rng.gen::<u32>() >> rng.gen_range(0..32)) as i32 * if rng.gen() { -1 } else { 1 };
        let (got, want) = (i32_to_f32(i), ref_i32_to_f32(i));
        bad.check(got, want, || {
            format!("i32_to_f32({i}) = {got:08x}, reference {want:08x}")
        });
        // Floats around the integer range, ties (x.5) included via short fractions.
        let x = F32Gen::with_exp(rng.gen_range(120..=160), &mut rng);
        let (got, want) = (f32_to_i32(x), ref_f32_to_i32(x));
        bad.check(got, want, || {
            format!("f32_to_i32({x:08x}) = {got}, reference {want}")
        });
    }
    bad.finish();
}

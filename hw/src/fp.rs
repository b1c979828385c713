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
//! and as a module definition interned in a [`Design`]; and pipelined
//! (`*_piped` on a [`Pipeline`], `*_unit` as a module), with the cut points
//! and their ranking in a [`CutPlan`] per unit ([`FP32_ADD`], [`BF16_MUL`],
//! [`BF16_MAC`]). The adder is also split into two stages, which a block may
//! put its own pipeline register between:
//!
//! 1. decode, special cases, order the operands by magnitude, align the smaller
//!    significand (with guard, round and sticky bits) and add or subtract;
//! 2. normalise (carry or leading-zero shift), round to nearest-even, and apply
//!    overflow, underflow and the special cases.

use crate::builder::{cat, mux, mux_bitwise, Expr, ModuleBuilder};
use crate::design::Design;
use crate::ir::ModuleDef;
use crate::pipeline::{unit_module, CutPlan, Pipeline, UnitModule};
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
    let mut p = Pipeline::combinational_from(BF16_MUL, 0);
    bf16_mul_piped(m, &mut p, a, b)
}

/// Cut points of the bf16 multiplier. The longest path runs through the
/// 8 x 8 significand product, the carry it produces, the exponent sum that
/// adds that carry (10 bits), the over/underflow compares on that sum, and
/// the final select. Ranking, from the critical paths nextpnr reports on an
/// iCE40 UP5K (`docs/hw.md`), where the product is one `SB_MAC16` and the
/// exponent arithmetic dominates: `exponent` first (the compares and the
/// select, 21 ns of 31, from the rest), then `product` (the multiplier
/// from the exponent sum), then `operands` (input registers: they cut only
/// the wires from the unit's sources, and sit where a DSP block's input
/// registers are).
pub const BF16_MUL: CutPlan = CutPlan {
    unit: "bf16_mul",
    cuts: &["operands", "product", "exponent"],
    ranking: &[2, 1, 0],
};

/// [`bf16_mul_logic`] on a pipeline of [`BF16_MUL`].
#[track_caller]
pub fn bf16_mul_piped(m: &mut ModuleBuilder, p: &mut Pipeline, a: Expr, b: Expr) -> Expr {
    bf16_mul_carrying(m, p, 0, a, b, &[]).0
}

/// Crosses cut `cut` with `own` values followed by `carried` ones (values
/// that only ride along, such as a MAC's addend); returns both, registered
/// or not, and the carried ones keep their names for the next cut.
fn cut_carrying(
    m: &mut ModuleBuilder,
    p: &mut Pipeline,
    cut: usize,
    own: &[(&str, Expr)],
    carried: &mut [(&str, Expr)],
) -> Vec<Expr> {
    let mut all = own.to_vec();
    all.extend_from_slice(carried);
    let out = p.cut_vec(m, cut, &all);
    for (c, &v) in carried.iter_mut().zip(&out[own.len()..]) {
        c.1 = v;
    }
    out[..own.len()].to_vec()
}

/// The bf16 product on cuts `first..first + 3` of `p`, with `carried`
/// values riding through the same registers; returns the product and the
/// carried values as they leave the last cut.
#[track_caller]
fn bf16_mul_carrying(
    m: &mut ModuleBuilder,
    p: &mut Pipeline,
    first: usize,
    a: Expr,
    b: Expr,
    carried: &[(&str, Expr)],
) -> (Expr, Vec<Expr>) {
    assert_eq!(
        (a.ty(), b.ty()),
        (Ty::u(16), Ty::u(16)),
        "bf16 operands are u16"
    );
    let mut carried = carried.to_vec();
    let ops = cut_carrying(m, p, first, &[("a", a), ("b", b)], &mut carried);
    let da = decode(ops[0], 8, 7);
    let db = decode(ops[1], 8, 7);
    let sign = da.sign ^ db.sign;
    let one = m.lit(Ty::BOOL, 1);
    let product = cat(&[one, da.frac]).mul_wide(cat(&[one, db.frac])); // 16 bits
    let class_names = ["nan_a", "inf_a", "zero_a", "nan_b", "inf_b", "zero_b"];
    let classes = [da.nan, da.inf, da.zero, db.nan, db.inf, db.zero];
    let mut own = vec![
        ("sign", sign),
        ("product", product),
        ("exp_a", da.exp),
        ("exp_b", db.exp),
    ];
    own.extend(class_names.into_iter().zip(classes));
    let out = cut_carrying(m, p, first + 1, &own, &mut carried);
    let (sign, product, exp_a, exp_b) = (out[0], out[1], out[2], out[3]);
    let classes = &out[4..];
    let carry = product.msb();
    // Biased exponent of the product, signed so under- and overflow show.
    let ext = |e: Expr| e.zext(10).as_signed();
    let exp = ext(exp_a) + ext(exp_b) - 127 + carry.zext(10).as_signed();
    // Without a carry the leading one is at bit 14: shift it up by one
    // (a shift by data rather than a select, which simulators branch on).
    let pad8 = m.lit(Ty::u(8), 0);
    let normalised = product.slice(0, 15) << (!carry);
    let mut own = vec![("sign", sign), ("exp", exp), ("normalised", normalised)];
    own.extend(class_names.into_iter().zip(classes.iter().copied()));
    let out = cut_carrying(m, p, first + 2, &own, &mut carried);
    let (sign, exp, normalised) = (out[0], out[1], out[2]);
    let [nan_a, inf_a, zero_a, nan_b, inf_b, zero_b]: [Expr; 6] =
        out[3..].try_into().expect("six class bits");
    let frac = cat(&[normalised, pad8]);
    let finite = cat(&[sign, exp.trunc(8).as_unsigned(), frac]);
    let signed_zero = cat(&[sign, m.lit(Ty::u(31), 0)]);
    let signed_inf = cat(&[sign, m.lit(Ty::u(8), 0xff), m.lit(Ty::u(23), 0)]);
    let nan = nan_a | nan_b | (inf_a & zero_b) | (zero_a & inf_b);
    let inf = inf_a | inf_b | exp.is_ge(255);
    let zero = zero_a | zero_b | exp.is_le(0);
    let canonical = m.lit(Ty::u(32), CANONICAL_NAN_F32);
    let product = mux(
        nan,
        canonical,
        mux(inf, signed_inf, mux(zero, signed_zero, finite)),
    );
    (product, carried.into_iter().map(|(_, v)| v).collect())
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

/// Cut points of the fp32 adder, in datapath order: `operands` (the two
/// inputs as they arrive, for a unit whose operands come from far away,
/// through a select or from a block RAM), `ordered` (after the
/// special cases and the magnitude compare that orders the operands, with
/// the exponent difference and each significand's lowest set bit formed
/// beside the compare), `aligned` (after the smaller significand's shift,
/// its sticky bit and, in the piped adder, the near case's difference),
/// `sum` (after the significand addition and the count of its leading
/// zeros: [`AddStage1`] and the count), `normalised` (after the
/// normalising shift), `rounded` (after the rounding increment).
///
/// Every segment is short enough for 100 MHz on an ECP5-85F at 5 stages:
/// the sticky bit is a compare of the shift with the lowest set bit, not a
/// second shifter; the leading zeros are counted by a tree, and in the
/// piped adder from the near case's difference (signs differ, exponents
/// within one: the only sums losing more than one bit), formed beside the
/// alignment shift and counted beside the addition; the rounding carry
/// into the exponent comes from the fraction before the increment. The
/// ranking is from the critical paths nextpnr reports on the 85F
/// (`docs/hw.md`): `sum` first (the two-stage adder's cut), then `aligned`
/// (with the count before the `sum` cut the front half is the longer: 70.0
/// MHz with `aligned` second against 61.4 with `normalised`), then
/// `normalised`, `ordered`, `rounded`, and `operands` last: it splits no
/// path inside the adder, and takes off the route to it (the SparseCore's
/// and the VPU fold's adders at their depth 6: the operand select to the
/// adder's first stage register, 16.9 ns of routing on the 85F).
pub const FP32_ADD: CutPlan = CutPlan {
    unit: "fp32_add",
    cuts: &[
        "operands",
        "ordered",
        "aligned",
        "sum",
        "normalised",
        "rounded",
    ],
    ranking: &[3, 2, 4, 1, 5, 0],
};

/// First adder stage: decode, special cases, order by magnitude, align, add.
#[track_caller]
pub fn fp32_add_stage1(m: &mut ModuleBuilder, a: Expr, b: Expr) -> AddStage1 {
    let mut p = Pipeline::combinational_from(FP32_ADD, 1);
    add_front(m, &mut p, 1, a, b, false, &mut []).0
}

/// The significand difference of the near case: operands of different
/// signs whose exponents differ by at most one, the only sums that can lose
/// more than one leading bit. Exact (nothing is shifted out), so it is
/// formed beside the alignment shift, and its leading zeros are counted
/// beside the addition.
#[derive(Clone, Copy)]
struct NearSum {
    /// The operands are a near case (then the sum is `difference`).
    near: Expr,
    /// The larger significand minus the smaller one (27 bits).
    difference: Expr,
}

/// The adder up to its `sum` cut, on cuts `first` and `first + 1` of `p`
/// (`carried` values ride along), and with `near_path` the [`NearSum`].
#[track_caller]
fn add_front(
    m: &mut ModuleBuilder,
    p: &mut Pipeline,
    first: usize,
    a: Expr,
    b: Expr,
    near_path: bool,
    carried: &mut [(&str, Expr)],
) -> (AddStage1, Option<NearSum>) {
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
    let small_frac = mux_bitwise(swap, da.frac, db.frac);
    // Beside the compare, not after it: the exponent difference both ways
    // (the larger exponent belongs to the larger magnitude, so the select
    // by `swap` is the right one; equal exponents give 0 either way), and
    // for each operand the lowest bit its aligned significand has set
    // (the sticky bit is then a compare of the shift with that position
    // instead of a second shifter testing the bits shifted out).
    let diff = mux_bitwise(swap, db.exp - da.exp, da.exp - db.exp);
    let lowest_small = mux_bitwise(swap, lowest_set_bit(m, da.frac), lowest_set_bit(m, db.frac));
    let out = cut_carrying(
        m,
        p,
        first,
        &[
            ("special", special),
            ("special_value", special_value),
            ("big", big),
            ("small_frac", small_frac),
            ("diff", diff),
            ("lowest_small", lowest_small),
            ("sign_a", da.sign),
            ("sign_b", db.sign),
        ],
        carried,
    );
    let [special, special_value, big, small_frac, diff, lowest_small, sign_a, sign_b]: [Expr; 8] =
        out.try_into().expect("eight values");
    let one = m.lit(Ty::BOOL, 1);
    let guard_bits = m.lit(Ty::u(3), 0);
    let big_sig = cat(&[one, big.slice(0, 23), guard_bits]); // 27 bits
    let small_sig = cat(&[one, small_frac, guard_bits]);
    let shifted = small_sig >> diff;
    // A bit is shifted out exactly when the shift passes the lowest set bit
    // (every shift of 27 or more does: the leading one is set).
    let sticky = diff.is_gt(lowest_small.zext(8));
    let aligned = shifted | sticky.zext(27);
    let subtract = sign_a ^ sign_b;
    let near = near_path.then(|| NearSum {
        near: subtract & diff.is_le(1),
        difference: big_sig - mux_bitwise(diff.bit(0), small_sig >> 1u32, small_sig),
    });
    // Past this cut only the larger operand's sign and exponent are needed.
    let big_top = if p.registers(first + 1) {
        big.slice(23, 9)
    } else {
        big
    };
    let mut own = vec![
        ("special", special),
        ("special_value", special_value),
        ("big_sign_exp", big_top),
        ("big_sig", big_sig),
        ("aligned", aligned),
        ("subtract", subtract),
    ];
    if let Some(n) = near {
        own.extend([("near", n.near), ("near_difference", n.difference)]);
    }
    let out = cut_carrying(m, p, first + 1, &own, carried);
    let [special, special_value, big_top, big_sig, aligned, subtract]: [Expr; 6] =
        out[..6].try_into().expect("six values");
    let near = near.map(|_| NearSum {
        near: out[6],
        difference: out[7],
    });
    let sum = mux_bitwise(
        subtract,
        big_sig.zext(28) - aligned.zext(28),
        big_sig.zext(28) + aligned.zext(28),
    );
    let stage1 = AddStage1 {
        special,
        special_value,
        sign: big_top.msb(),
        exp: big_top.slice(big_top.width() - 9, 8),
        sum,
    };
    (stage1, near)
}

/// The position of the lowest set bit of an aligned significand `1.f000`
/// (27 bits, fraction `frac` of 23): 3 + the trailing zeros of `1.f`, 3 to
/// 26, in 5 bits.
fn lowest_set_bit(m: &mut ModuleBuilder, frac: Expr) -> Expr {
    // Lowest bit first, the lowest set bit leads; `1.f` is never zero.
    let mut bits: Vec<Expr> = (0..23).map(|i| frac.bit(i)).collect();
    bits.push(m.lit(Ty::BOOL, 1));
    bits.resize(32, m.lit(Ty::BOOL, 0));
    let (zeros, _) = leading_zeros(&bits, false);
    zeros + 3
}

/// The leading zeros of bits 26..0 of `x` (5 bits) and whether they are all
/// zero.
fn leading_zeros_27(m: &mut ModuleBuilder, x: Expr) -> (Expr, Expr) {
    let mut bits: Vec<Expr> = (0..27).rev().map(|i| x.bit(i)).collect();
    bits.resize(32, m.lit(Ty::BOOL, 0));
    let (zeros, zero) = leading_zeros(&bits, true);
    (zeros, zero.expect("asked for"))
}

/// The leading zeros of the bits `bits` (most significant first, a power of
/// two of them, at least 2) by a tree over halves, and, if `want_zero`,
/// whether they are all zero (then the count is that of a value with only
/// its lowest bit set). Each level takes the upper half's count, or the
/// lower half's with the upper half's width added when the upper half is
/// zero: the levels work side by side, not one after the other as a
/// shift-and-test search would.
fn leading_zeros(bits: &[Expr], want_zero: bool) -> (Expr, Option<Expr>) {
    let w = bits.len();
    assert!(
        w >= 2 && w.is_power_of_two(),
        "leading_zeros takes 2^k bits"
    );
    if w == 2 {
        let (top, bottom) = (bits[0], bits[1]);
        return (!top, want_zero.then(|| !(top | bottom)));
    }
    let (high, high_zero) = leading_zeros(&bits[..w / 2], true);
    let high_zero = high_zero.expect("asked for");
    let (low, low_zero) = leading_zeros(&bits[w / 2..], want_zero);
    let count = cat(&[high_zero, mux_bitwise(high_zero, low, high)]);
    (count, low_zero.map(|low_zero| high_zero & low_zero))
}

/// Second adder stage: normalise, round to nearest-even, overflow/underflow.
#[track_caller]
pub fn fp32_add_stage2(m: &mut ModuleBuilder, s: &AddStage1) -> Expr {
    let mut p = Pipeline::combinational_from(FP32_ADD, 4);
    let zeros = sum_leading_zeros(m, s.sum);
    add_back(m, &mut p, 4, s, zeros, &mut [])
}

/// What normalising the significand sum takes from it: the leading zeros
/// below the carry bit (5 bits, for a left shift) and whether the sum
/// cancelled to zero.
#[derive(Clone, Copy)]
struct SumZeros {
    zeros: Expr,
    cancelled: Expr,
}

/// [`SumZeros`] of a 28-bit significand sum.
fn sum_leading_zeros(m: &mut ModuleBuilder, sum: Expr) -> SumZeros {
    let (zeros, low_zero) = leading_zeros_27(m, sum);
    SumZeros {
        zeros,
        cancelled: !sum.msb() & low_zero,
    }
}

/// The adder after its `sum` cut, on cuts `first` and `first + 1` of `p`,
/// with the sum's leading zeros counted before that cut.
#[track_caller]
fn add_back(
    m: &mut ModuleBuilder,
    p: &mut Pipeline,
    first: usize,
    s: &AddStage1,
    z: SumZeros,
    carried: &mut [(&str, Expr)],
) -> Expr {
    let sum = s.sum;
    let carry = sum.msb();
    // The normalised significand without its leading one (26 bits: 23 fraction
    // bits, guard, round, sticky). With a carry the sum shifts right by one (the
    // dropped bit joins the sticky bit); otherwise it shifts left until the
    // leading one is at bit 26, then drops it.
    let right = cat(&[sum.slice(2, 25), sum.bit(1) | sum.bit(0)]);
    // (The leading one, bit 26, only shifts out of the 26 bits kept.)
    let left = sum.slice(0, 26) << z.zeros;
    let norm = mux_bitwise(carry, right, left);
    let exp_big = s.exp.zext(10).as_signed();
    let exp = mux_bitwise(carry, exp_big + 1, exp_big - z.zeros.zext(10).as_signed());
    let out = cut_carrying(
        m,
        p,
        first,
        &[
            ("special", s.special),
            ("special_value", s.special_value),
            ("sign", s.sign),
            ("norm", norm),
            ("exp", exp),
            ("cancelled", z.cancelled),
        ],
        carried,
    );
    let [special, special_value, sign, norm, exp, cancelled]: [Expr; 6] =
        out.try_into().expect("six values");

    let frac = norm.slice(3, 23);
    let guard = norm.bit(2);
    let rest = norm.bit(1) | norm.bit(0);
    let round_up = guard & (rest | frac.bit(0));
    // Rounding up from 1.11..1 gives 10.00..0: the fraction wraps to zero and
    // the exponent takes one more step (known from the fraction before the
    // increment, so the two additions run side by side).
    let exp = exp + (round_up & frac.all()).zext(10).as_signed();
    let frac = frac + round_up.zext(23);
    let out = cut_carrying(
        m,
        p,
        first + 1,
        &[
            ("special", special),
            ("special_value", special_value),
            ("sign", sign),
            ("frac", frac),
            ("exp", exp),
            ("cancelled", cancelled),
        ],
        carried,
    );
    let [special, special_value, sign, frac, exp, cancelled]: [Expr; 6] =
        out.try_into().expect("six values");

    let finite = cat(&[sign, exp.trunc(8).as_unsigned(), frac]);
    let signed_zero = cat(&[sign, m.lit(Ty::u(31), 0)]);
    let signed_inf = cat(&[sign, m.lit(Ty::u(8), 0xff), m.lit(Ty::u(23), 0)]);
    let positive_zero = m.lit(Ty::u(32), 0);
    mux(
        special,
        special_value,
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

/// The whole adder on a pipeline of [`FP32_ADD`].
#[track_caller]
pub fn fp32_add_piped(m: &mut ModuleBuilder, p: &mut Pipeline, a: Expr, b: Expr) -> Expr {
    let [a, b] = p.cut(m, 0, [("a", a), ("b", b)]);
    let (s1, near) = add_front(m, p, 1, a, b, true, &mut []);
    let (s1, zeros) = add_sum_cut(m, p, 3, &s1, near, &mut []);
    add_back(m, p, 4, &s1, zeros, &mut [])
}

/// The adder's `sum` cut: [`AddStage1`] crossing cut `cut` of `p`, the
/// sum's leading zeros counted before it: from the near case's difference
/// if given (beside the addition; every other sum has at most one leading
/// zero below its carry bit, as the larger significand is at least 2^26 and
/// the smaller one, shifted by two or more, below 2^25), else from the sum.
fn add_sum_cut(
    m: &mut ModuleBuilder,
    p: &mut Pipeline,
    cut: usize,
    s: &AddStage1,
    near: Option<NearSum>,
    carried: &mut [(&str, Expr)],
) -> (AddStage1, SumZeros) {
    let z = match near {
        None => sum_leading_zeros(m, s.sum),
        Some(n) => {
            let (zeros, zero) = leading_zeros_27(m, n.difference);
            let far_zeros = (!s.sum.bit(26)).zext(5);
            SumZeros {
                zeros: mux_bitwise(n.near, zeros, far_zeros),
                cancelled: n.near & zero,
            }
        }
    };
    let names = ["special", "special_value", "sign", "exp", "sum"];
    let mut own: Vec<(&str, Expr)> = names.into_iter().zip(s.to_vec()).collect();
    own.push(("zeros", z.zeros));
    own.push(("cancelled", z.cancelled));
    let out = cut_carrying(m, p, cut, &own, carried);
    let z = SumZeros {
        zeros: out[5],
        cancelled: out[6],
    };
    (AddStage1::from_vec(&out[..5]), z)
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
        .map(|(k, v)| m.registered(&format!("{prefix}{k}"), *v))
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

/// Cut points of the MXU PE's bf16 multiply-add, `add32(psum,
/// bf16_mul(a, w))`: the multiplier's three ([`BF16_MUL`]), then the
/// adder's five inner ones ([`FP32_ADD`] without its `operands`); the addend rides through the multiplier's
/// registers. The longest path is the whole chain, the multiplier's
/// exponent and select feeding the adder's compare (208 ns on an iCE40
/// UP5K). Ranking, each cut splitting the longest segment the ones before
/// it leave, as nextpnr's critical paths showed (`docs/hw.md`): `aligned`
/// (near the middle: 121 ns remain, the adder's back half), `normalised`
/// (100 ns remain, the front), `ordered` (the multiplier from the adder's
/// alignment; 56 ns remain, the rounding), `rounded`, `sum`, `exponent`,
/// `product`, `operands`.
pub const BF16_MAC: CutPlan = CutPlan {
    unit: "bf16_mac",
    cuts: &[
        "operands",
        "product",
        "exponent",
        "ordered",
        "aligned",
        "sum",
        "normalised",
        "rounded",
    ],
    ranking: &[4, 6, 3, 7, 5, 2, 1, 0],
};

/// `add32(psum, bf16_mul(a, w))` on a pipeline of [`BF16_MAC`]: `psum`
/// u32 (fp32), `a` and `w` u16 (bf16).
#[track_caller]
pub fn bf16_mac_piped(
    m: &mut ModuleBuilder,
    p: &mut Pipeline,
    psum: Expr,
    a: Expr,
    w: Expr,
) -> Expr {
    assert_eq!(psum.ty(), Ty::u(32), "the partial sum is fp32 (u32)");
    let (product, carried) = bf16_mul_carrying(m, p, 0, a, w, &[("psum", psum)]);
    let (s1, near) = add_front(m, p, 3, carried[0], product, true, &mut []);
    let (s1, zeros) = add_sum_cut(m, p, 5, &s1, near, &mut []);
    add_back(m, p, 6, &s1, zeros, &mut [])
}

/// The fp32 adder on a pipeline of `stages` ([`FP32_ADD`]) as a module
/// `fp32_add_s<stages>[_en]`: ports `a_i`, `b_i`, (`en_i`), `sum_o`.
pub fn fp32_add_unit(design: &mut Design, stages: u32, with_enable: bool) -> Rc<ModuleDef> {
    let inputs = [("a_i", Ty::u(32)), ("b_i", Ty::u(32))];
    let doc = "fp32 adder, FTZ-RNE, canonical NaN (docs/numerics.md)";
    let unit = UnitModule {
        base: "fp32_add",
        doc,
        plan: FP32_ADD,
        inputs: &inputs,
    };
    unit_module(design, unit, stages, with_enable, |m, p, v| {
        vec![("sum_o", fp32_add_piped(m, p, v[0], v[1]))]
    })
}

/// The bf16 multiplier on a pipeline of `stages` ([`BF16_MUL`]) as a
/// module `bf16_mul_s<stages>[_en]`: ports `a_i`, `b_i`, (`en_i`), `p_o`.
pub fn bf16_mul_unit(design: &mut Design, stages: u32, with_enable: bool) -> Rc<ModuleDef> {
    let inputs = [("a_i", Ty::u(16)), ("b_i", Ty::u(16))];
    let doc = "bf16 x bf16 -> fp32 product, exact, FTZ, canonical NaN (docs/numerics.md)";
    let unit = UnitModule {
        base: "bf16_mul",
        doc,
        plan: BF16_MUL,
        inputs: &inputs,
    };
    unit_module(design, unit, stages, with_enable, |m, p, v| {
        vec![("p_o", bf16_mul_piped(m, p, v[0], v[1]))]
    })
}

/// The bf16 multiply-add on a pipeline of `stages` ([`BF16_MAC`]) as a
/// module `bf16_mac_s<stages>[_en]`: ports `psum_i` (fp32), `a_i`, `w_i`
/// (bf16), (`en_i`), `psum_o` = add32(psum_i, a_i x w_i).
pub fn bf16_mac_unit(design: &mut Design, stages: u32, with_enable: bool) -> Rc<ModuleDef> {
    let inputs = [
        ("psum_i", Ty::u(32)),
        ("a_i", Ty::u(16)),
        ("w_i", Ty::u(16)),
    ];
    let doc = "psum + bf16 x bf16, FTZ-RNE, canonical NaN (docs/numerics.md)";
    let unit = UnitModule {
        base: "bf16_mac",
        doc,
        plan: BF16_MAC,
        inputs: &inputs,
    };
    unit_module(design, unit, stages, with_enable, |m, p, v| {
        vec![("psum_o", bf16_mac_piped(m, p, v[0], v[1], v[2]))]
    })
}

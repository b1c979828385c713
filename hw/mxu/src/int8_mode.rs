//! Int8 mode of the bf16 array ([`config::MxuConfig::with_int8_mode`]):
//! one array for bf16 rows and int8 rows.
//!
//! Every activation row carries a mode bit (`a_int8_i`). A bf16 row computes
//! exactly what the bf16 array computes. An int8 row reads the low byte of
//! each 16-bit lane, of its activations and of the weights, as int8, and
//! sums the products in wrapping int32 (`docs/numerics.md`, "int8 matmul");
//! the accumulator overwrites or adds in int32. Both kinds take the bf16
//! array's cycles at the same depth, so rows of both kinds mix freely, even
//! within one tile, and the weights are the same registers for both: the
//! mode of the row passing a PE decides how it reads them.
//!
//! What a PE adds to the bf16 PE, and nothing more:
//! - The mode bit travels with the activation: skewed by row as the
//!   activations are ([`mode_skew`]), passed right by a register beside the
//!   activation's, and registered wherever the activation's product is on
//!   its way to the partial sum (one register per stage).
//! - One multiplier for both kinds: a signed 9 x 9 product. A bf16 operand
//!   enters as its significand with the hidden one, `0_1fffffff`; an int8
//!   operand as its low byte sign-extended. Bits 6..0 are the lane's bits
//!   6..0 in both cases, so the mode selects only bits 8 and 7. The bf16
//!   product is the low 16 bits (at most 255 x 255), the int8 product the
//!   same 16 bits as two's complement (-128 x 127 .. -128 x -128 fit).
//! - The int8 product leaves the multiplier in the bits of the fp32 product
//!   word that carry data (the sign and the 15 significand bits below the
//!   leading one), so it crosses the multiplier's registers and the product
//!   register in the bf16 product's flip-flops.
//! - The int32 sum is one 32-bit adder (the partial sum plus the
//!   sign-extended 16-bit product), beside the fp32 adder's first stage. It
//!   reaches the partial-sum register through the fp32 adder's special-case
//!   path, the one that returns a value unchanged (an operand that is a NaN,
//!   an infinity or beside a zero), so it rides in the adder's registers:
//!   up to depth 3 the PE owns the adder's stage boundary and sets the
//!   special case there; at depths 4 and 5 the staged adder is fed +0 and
//!   the sum as a normal number (bit 30 replaced by the inverse of bit 29,
//!   so the exponent field is neither 0 nor 255), which it returns as it
//!   is, and the one bit replaced waits beside it (one register per stage)
//!   to be put back.
//! - The accumulator forms the int32 sums of an int8 row that adds before
//!   the fp32 adders' latency and lets them wait where an overwriting row
//!   waits; the mode bit rides with the row's address and add flag.

use super::{
    multiplier_activation, multiplier_operand_registers, pass_right, pe_name, registered_if,
    weights, AccRead, ArrayBuses, Stages, Timing,
};
use config::{ElemType, MxuConfig};
use hw::fp::{AddStage1, BF16_MUL, CANONICAL_NAN_F32, FP32_ADD};
use hw::pipeline::Pipeline;
use hw::{cat, delay, mux, Design, Expr, ModuleBuilder, ModuleDef, Ty};
use std::rc::Rc;

/// What the names of an int8-mode array's top module and PE end with.
pub(crate) const NAME_SUFFIX: &str = "_i8m";

/// Row r's mode bits enter the array r·L cycles late, as its activations
/// do ([`super::activation_skew`]).
pub(crate) fn mode_skew(
    m: &mut ModuleBuilder,
    cfg: &MxuConfig,
    t: &Timing,
    buses: &ArrayBuses,
    a_int8: Expr,
) {
    let bus = buses.act_int8.expect("an int8-mode array's mode bus");
    for r in 0..cfg.rows() {
        let mode = delay(m, &format!("int8_skew{r}"), a_int8, r * t.pe_latency, None);
        m.bus_drive(bus, &[r, 0], mode);
    }
}

/// The row that waits beside the accumulator's fp32 adders ([`AccRead`]):
/// the output row, or for an int8 row that adds, the int32 sums of the
/// accumulator row and the output row, column by column (wrapping).
pub(crate) fn acc_int_sums(m: &mut ModuleBuilder, cols: u32, acc_aw: u32, read: &AccRead) -> Expr {
    let int_add = read.side.msb() & read.side.bit(acc_aw);
    let words: Vec<Expr> = (0..cols)
        .rev()
        .map(|c| {
            let old = read.old.slice(c * 32, 32);
            let new = read.new.slice(c * 32, 32);
            mux(int_add, old + new, new)
        })
        .collect();
    m.wire("acc_waiting", cat(&words))
}

/// The PE of a bf16 array in int8 mode at pipeline depth `depth`: the bf16
/// PE's registers and latencies ([`super::pe`]), a mode bit beside the
/// activation (`int8_i`, `int8_o`), one multiplier for both kinds of rows.
pub(crate) fn pe(design: &mut Design, depth: u32) -> Rc<ModuleDef> {
    let stages = Stages::of(ElemType::Bf16, depth);
    let Stages {
        product_latency,
        pe_latency,
        ..
    } = stages;
    let (name, mut params) = pe_name(ElemType::Bf16, product_latency);
    if pe_latency != 2 {
        params.push(("pe_latency", pe_latency.to_string()));
    }
    params.push(("int8_mode", "true".to_string()));
    let name = format!("{name}{NAME_SUFFIX}");
    design.define(&name, &params, |design, m| {
        let doc = match product_latency {
            0 => "bf16 PE in int8 mode: psum = add32(psum, mul(a, w)), or int32 psum + a[7:0] * w[7:0] for an int8 row; two pipeline stages",
            1 => "bf16 PE in int8 mode: psum = add32(psum, mul(a, w)), or int32 psum + a[7:0] * w[7:0] for an int8 row; product register and two adder stages",
            2 => "bf16 PE in int8 mode: psum = add32(psum, mul(a, w)), or int32 psum + a[7:0] * w[7:0] for an int8 row; operand and product registers and two adder stages",
            4 => "bf16 PE in int8 mode: psum = add32(psum, mul(a, w)), or int32 psum + a[7:0] * w[7:0] for an int8 row; operand registers, a three-stage multiplier, product register and a six-stage adder",
            _ => "bf16 PE in int8 mode: psum = add32(psum, mul(a, w)), or int32 psum + a[7:0] * w[7:0] for an int8 row; two levels of operand registers, a three-stage multiplier, product register and a six-stage adder",
        };
        m.doc(doc);
        m.shared_code(
            "many instances of a large PE: one copy of its code keeps the model within \
             the caches and its build time in proportion to the array",
        );
        let a = m.input("a_i", Ty::u(16));
        let int8 = m.input("int8_i", Ty::BOOL);
        let first = m.input("first_i", Ty::BOOL);
        let psum_in = m.input("psum_i", Ty::u(32));
        let weight = weights(m, Ty::u(16), first, product_latency);
        let (x, int8_x) = match product_latency {
            0 => (a, int8),
            _ => {
                let a_q = pass_right(m, a);
                let int8_q = pass_mode_right(m, int8);
                (
                    multiplier_activation(product_latency, a, a_q),
                    multiplier_activation(product_latency, int8, int8_q),
                )
            }
        };
        let (x, int8_x, weight) = if multiplier_operand_registers(product_latency) {
            // The activation's own register, kept as the bf16 PE keeps it,
            // holds the mode bit too.
            let both = hw::blocks::kept_register(design, m, "mul_a", cat(&[int8_x, x]));
            (
                both.slice(0, 16),
                both.bit(16),
                m.registered("mul_w", weight),
            )
        } else {
            (x, int8_x, weight)
        };
        // The multiplier's `product` and `exponent` cuts registered where
        // the bf16 PE registers them (its operands are registers already).
        let cuts = vec![false, product_latency >= 3, product_latency >= 3];
        let mut p = Pipeline::with_cuts(BF16_MUL, "mul", cuts, None);
        let (product, int8_p) = dual_product(m, &mut p, x, weight, int8_x);
        p.finish();
        let product = m.wire("product", product);
        let product = registered_if(m, product_latency >= 1, "prod", product);
        let int8_p = registered_if(m, product_latency >= 1, "prod_int8", int8_p);
        let int_sum = m.wire("int_sum", psum_in + int_product(product).sext(32).as_unsigned());
        let sum = if pe_latency > 2 {
            piped_sum(m, pe_latency - 1, psum_in, product, int8_p, int_sum)
        } else {
            // Stage 1 (this cycle): s = add32(psum, product) up to the
            // significand sum, or for an int8 row the int32 sum as the
            // special case's value; stage 2 (next cycle): normalise and
            // round into the psum register, or pass the special value.
            let s = hw::fp::fp32_add_stage1(m, psum_in, product);
            let s = AddStage1 {
                special: s.special | int8_p,
                special_value: mux(int8_p, int_sum, s.special_value),
                ..s
            };
            let s = hw::fp::register_stage(m, "stage1_", &s.to_vec());
            hw::fp::fp32_add_stage2(m, &AddStage1::from_vec(&s))
        };
        let psum = m.reg("psum", Ty::u(32));
        m.set_next(psum, sum);
        m.output("psum_o", psum.q());
        if product_latency == 0 {
            pass_right(m, a);
            pass_mode_right(m, int8);
        }
    })
}

/// The register that passes the mode bit right beside the activation;
/// returns its output.
fn pass_mode_right(m: &mut ModuleBuilder, int8: Expr) -> Expr {
    let q = m.registered("int8", int8);
    m.output("int8_o", q);
    q
}

/// The int8 product as [`dual_product`] leaves it in the product word: its
/// sign at bit 31, its bits 14..0 at bits 22..8.
fn int_product(word: Expr) -> Expr {
    cat(&[word.bit(31), word.slice(8, 15)]).as_signed()
}

/// The staged fp32 adder of depths 4 and 5 with `cuts` registered, taking
/// an int8 row's int32 sum through its special-case path: fed +0 and the
/// sum with bit 30 replaced by the inverse of bit 29 (a normal number, which
/// it returns unchanged), the replaced bit restored after it.
fn piped_sum(
    m: &mut ModuleBuilder,
    cuts: u32,
    psum_in: Expr,
    product: Expr,
    int8: Expr,
    int_sum: Expr,
) -> Expr {
    let normal = cat(&[int_sum.bit(31), !int_sum.bit(29), int_sum.slice(0, 30)]);
    // Bit 30 of the result differs from the adder's exactly when this is set.
    let fix = int8 & !(int_sum.bit(30) ^ int_sum.bit(29));
    let a = mux(int8, 0, psum_in);
    let b = mux(int8, normal, product);
    let mut p = Pipeline::new(FP32_ADD, "add", cuts, None);
    let sum = hw::fp::fp32_add_piped(m, &mut p, a, b);
    let latency = p.finish();
    let fix = delay(m, "int_fix", fix, latency, None);
    let zero = |w| m.lit(Ty::u(w), 0);
    let (high, low) = (zero(1), zero(30));
    sum ^ cat(&[high, fix, low])
}

/// The product of `x` and `w` on cuts of `p` (a pipeline of
/// [`hw::fp::BF16_MUL`]): for a bf16 row (`int8` low) `bf16_mul(x, w)` as
/// `docs/numerics.md` defines it (exact, flushed to a signed zero below
/// 2^-126, infinity above the largest finite value, the canonical NaN for a
/// NaN operand or 0 x inf; subnormal operands read as zeros); for an int8
/// row the 16-bit product of the operands' low bytes as int8, in the word's
/// bits that [`int_product`] reads. Returns the word and the mode bit, both
/// past the last cut.
fn dual_product(
    m: &mut ModuleBuilder,
    p: &mut Pipeline,
    x: Expr,
    w: Expr,
    int8: Expr,
) -> (Expr, Expr) {
    let [x, w, int8] = p.cut(m, 0, [("a", x), ("b", w), ("int8", int8)]);
    let (fx, fw) = (Fields::of(x), Fields::of(w));
    // The significand with its hidden one, 0_1fffffff, or the low byte
    // sign-extended: bits 6..0 are the lane's in both.
    let operand = |v: Expr| {
        let high = cat(&[int8 & v.bit(7), !int8 | v.bit(7)]);
        cat(&[high, v.slice(0, 7)]).as_signed()
    };
    let wide = m.wire("product_wide", operand(x).mul_wide(operand(w)));
    m.waive(
        "UNUSEDSIGNAL",
        "product_wide",
        "bits 17..16 are zero for bf16 significands and copies of bit 15 for int8 operands",
    );
    let product = wide.slice(0, 16);
    let classes = [fx.nan, fx.inf, fx.zero, fw.nan, fw.inf, fw.zero];
    let mut own = vec![
        ("sign", fx.sign ^ fw.sign),
        ("product", product),
        ("exp_a", fx.exp),
        ("exp_b", fw.exp),
        ("int8", int8),
    ];
    own.extend(CLASS_NAMES.into_iter().zip(classes));
    let out = p.cut_vec(m, 1, &own);
    let (sign, product, exp_a, exp_b, int8) = (out[0], out[1], out[2], out[3], out[4]);
    let classes = &out[5..];
    // The bf16 product is at least 2^14: a carry into bit 15 raises the
    // exponent by one, and without it the significand shifts up by one.
    let carry = product.msb();
    let ext = |e: Expr| e.zext(10).as_signed();
    let exp = ext(exp_a) + ext(exp_b) - 127 + carry.zext(10).as_signed();
    // An int8 product keeps its place, its sign bit in the sign's place.
    let normalised = product.slice(0, 15) << (!carry & !int8);
    let sign = mux(int8, product.msb(), sign);
    let mut own = vec![
        ("sign", sign),
        ("exp", exp),
        ("normalised", normalised),
        ("int8", int8),
    ];
    own.extend(CLASS_NAMES.into_iter().zip(classes.iter().copied()));
    let out = p.cut_vec(m, 2, &own);
    let (sign, exp, normalised, int8) = (out[0], out[1], out[2], out[3]);
    let [nan_a, inf_a, zero_a, nan_b, inf_b, zero_b]: [Expr; 6] =
        out[4..].try_into().expect("six class bits");
    let finite = cat(&[
        sign,
        exp.trunc(8).as_unsigned(),
        normalised,
        m.lit(Ty::u(8), 0),
    ]);
    let signed_zero = cat(&[sign, m.lit(Ty::u(31), 0)]);
    let signed_inf = cat(&[sign, m.lit(Ty::u(8), 0xff), m.lit(Ty::u(23), 0)]);
    // An int8 row's word is the finite one, whatever its exponent says.
    let bf16 = !int8;
    let nan = bf16 & (nan_a | nan_b | (inf_a & zero_b) | (zero_a & inf_b));
    let inf = bf16 & (inf_a | inf_b | exp.is_ge(255));
    let zero = bf16 & (zero_a | zero_b | exp.is_le(0));
    let canonical = m.lit(Ty::u(32), CANONICAL_NAN_F32);
    let word = mux(
        nan,
        canonical,
        mux(inf, signed_inf, mux(zero, signed_zero, finite)),
    );
    (word, int8)
}

/// Names of the operands' class bits as they cross the multiplier's cuts.
const CLASS_NAMES: [&str; 6] = ["nan_a", "inf_a", "zero_a", "nan_b", "inf_b", "zero_b"];

/// A bf16 pattern's fields and class, subnormals reading as zeros.
struct Fields {
    sign: Expr,
    exp: Expr,
    zero: Expr,
    inf: Expr,
    nan: Expr,
}

impl Fields {
    fn of(x: Expr) -> Fields {
        let exp = x.slice(7, 8);
        let frac_zero = x.slice(0, 7).is_eq(0);
        let exp_max = exp.all();
        Fields {
            sign: x.msb(),
            exp,
            zero: exp.is_eq(0),
            inf: exp_max & frac_zero,
            nan: exp_max & !frac_zero,
        }
    }
}

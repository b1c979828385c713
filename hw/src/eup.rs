//! The EUP's fp32 operations (docs/numerics.md, "EUP"): division and square
//! root correctly rounded under FTZ-RNE, and exp2 / exp in the contract's
//! exact sequence of fp32 operations.
//!
//! Division and square root run by digit recurrence, one quotient or root
//! bit per step: 25 restoring steps (24 significand bits and the round bit),
//! then the remainder's zero test is the sticky bit and the result is
//! rounded once, as the contract's exact result is. Each step is a
//! subtraction and a select, so the unit is a chain of 25 equal segments
//! with a candidate cut after each ([`DIV32`], [`SQRT32`]): with every cut
//! registered it takes an operation every cycle with a latency of 28, and a
//! stage count chosen at elaboration registers the cuts that split the
//! chain most evenly (the ranking is a bisection of it).
//!
//! exp2 is the contract's sequence: the split of t into i = floor(t) and
//! f = sub32(t, i), six Horner steps of `hw::arith`'s fp32 multiplier and
//! `hw::fp`'s fp32 adder, and the scaling by 2^i, which for the polynomial's
//! value (in [1, 2] for f in [0, 1)) is exact and is an exponent sum with
//! its range checks. Every multiply and add is its own pipelined unit
//! ([`Exp2Stages`]), so exp2 also takes an operation every cycle; exp
//! multiplies by log2 e first.

use crate::arith::{fp32_fields, fp32_mul_piped, fp32_significand, FP32_MUL};
use crate::builder::{cat, mux, Expr, ModuleBuilder};
use crate::fp::{fp32_add_piped, CANONICAL_NAN_F32, FP32_ADD};
use crate::pipeline::{unit_module, CutPlan, Pipeline, UnitModule};
use crate::{Design, ModuleDef, Ty};
use std::rc::Rc;

/// Restoring steps of division and square root: 24 significand bits and
/// the round bit.
const STEPS: usize = 25;

/// Candidate cuts shared by [`DIV32`] and [`SQRT32`], in datapath order.
const RECURRENCE_CUTS: &[&str] = &[
    "operands", "unpacked", "step1", "step2", "step3", "step4", "step5", "step6", "step7", "step8",
    "step9", "step10", "step11", "step12", "step13", "step14", "step15", "step16", "step17",
    "step18", "step19", "step20", "step21", "step22", "step23", "step24", "steps", "rounded",
];

/// The recurrence's cuts, best first: a bisection of the chain (unpacking,
/// 25 steps and the rounding, about one step's delay each, then the final
/// select), so that the first n cuts split it into n + 1 nearly equal
/// segments; the operands' cut, which splits nothing, last.
const RECURRENCE_RANKING: &[usize] = &[
    14, 7, 21, 17, 10, 3, 24, 19, 12, 5, 26, 22, 15, 8, 1, 25, 23, 20, 18, 16, 13, 11, 9, 6, 4, 2,
    27, 0,
];

/// Cut points of fp32 division: `operands`, `unpacked` (the significands
/// ordered so the quotient lies in [1, 2), the exponent and the classes),
/// `step1` .. `step24` (after each quotient bit), `steps` (after the 25th),
/// `rounded` (after the rounding increment).
pub const DIV32: CutPlan = CutPlan {
    unit: "div32",
    cuts: RECURRENCE_CUTS,
    ranking: RECURRENCE_RANKING,
};

/// Cut points of the fp32 square root, as [`DIV32`]'s: `unpacked` is the
/// radicand's significand scaled to an even exponent.
pub const SQRT32: CutPlan = CutPlan {
    unit: "sqrt32",
    cuts: RECURRENCE_CUTS,
    ranking: RECURRENCE_RANKING,
};

/// What every step of a recurrence carries besides its own state: the
/// result's sign, biased exponent (signed, before the rounding carry) and
/// the special cases decided at unpacking.
#[derive(Clone, Copy)]
struct Carried {
    sign: Expr,
    exp: Expr,
    nan: Expr,
    inf: Expr,
    zero: Expr,
}

impl Carried {
    fn values(&self) -> [(&'static str, Expr); 5] {
        [
            ("sign", self.sign),
            ("exp", self.exp),
            ("nan", self.nan),
            ("inf", self.inf),
            ("zero", self.zero),
        ]
    }

    fn from(v: &[Expr]) -> Carried {
        Carried {
            sign: v[0],
            exp: v[1],
            nan: v[2],
            inf: v[3],
            zero: v[4],
        }
    }
}

/// Passes `state` and `carried` through cut `cut`.
fn cut_with(
    m: &mut ModuleBuilder,
    p: &mut Pipeline,
    cut: usize,
    state: &[(&'static str, Expr)],
    carried: Carried,
) -> (Vec<Expr>, Carried) {
    let mut values = state.to_vec();
    values.extend(carried.values());
    let out = p.cut_vec(m, cut, &values);
    let (state, rest) = out.split_at(state.len());
    (state.to_vec(), Carried::from(rest))
}

/// The rounded result from the recurrence's result bits after the leading
/// one (23 fraction bits, then the round bit) and its sticky bit, through
/// the `rounded` cut: rules 2 to 5, with `carried`'s special cases first.
fn round_and_pack(
    m: &mut ModuleBuilder,
    p: &mut Pipeline,
    bits: Expr,
    sticky: Expr,
    carried: Carried,
) -> Expr {
    let round = bits.bit(0);
    let up = round & (sticky | bits.bit(1));
    let frac = bits.slice(1, 23) + up.zext(23);
    // 1.11..1 rounded up is 10.0..0: the fraction wraps and the exponent steps.
    let carry = frac.is_eq(0) & up;
    let exp = carried.exp + carry.zext(carried.exp.width()).as_signed();
    let carried = Carried { exp, ..carried };
    let (state, c) = cut_with(m, p, RECURRENCE_CUTS.len() - 1, &[("frac", frac)], carried);
    let frac = state[0];
    let finite = cat(&[c.sign, c.exp.trunc(8).as_unsigned(), frac]);
    let signed_zero = cat(&[c.sign, m.lit(Ty::u(31), 0)]);
    let signed_inf = cat(&[c.sign, m.lit(Ty::u(8), 0xff), m.lit(Ty::u(23), 0)]);
    let canonical = m.lit(Ty::u(32), CANONICAL_NAN_F32);
    // The operands' zero cases leave an exponent that means nothing.
    let inf = c.inf | (!c.zero & c.exp.is_ge(255));
    let zero = c.zero | c.exp.is_le(0);
    mux(
        c.nan,
        canonical,
        mux(inf, signed_inf, mux(zero, signed_zero, finite)),
    )
}

/// `div32(a, b)` as combinational logic.
#[track_caller]
pub fn div32_logic(m: &mut ModuleBuilder, a: Expr, b: Expr) -> Expr {
    let mut p = Pipeline::new(DIV32, "", 0, None);
    let q = div32_piped(m, &mut p, a, b);
    p.finish();
    q
}

/// `div32(a, b)` on a pipeline of [`DIV32`].
///
/// With both operands normal, a = sa x 2^(ea - 150) and b likewise, the
/// quotient's significand is sa / sb, or 2 sa / sb when sa < sb (then the
/// exponent is one lower), in [1, 2). Restoring division takes a bit of it
/// per step: the partial remainder r (below 2 sb) against sb, subtracted
/// when it is not below, then doubled. After 25 steps the bits are the
/// quotient truncated to 24 bits and the round bit, and r is zero exactly
/// when the quotient is.
#[track_caller]
pub fn div32_piped(m: &mut ModuleBuilder, p: &mut Pipeline, a: Expr, b: Expr) -> Expr {
    let [a, b] = p.cut(m, 0, [("a", a), ("b", b)]);
    let fa = fp32_fields(m, a);
    let fb = fp32_fields(m, b);
    let sa = fp32_significand(m, a);
    let sb = fp32_significand(m, b);
    let below = sa.is_lt(sb);
    let zero1 = m.lit(Ty::BOOL, 0);
    let r0 = mux(below, cat(&[sa, zero1]), sa.zext(25));
    let ext = |e: Expr| e.zext(11).as_signed();
    let carried = Carried {
        sign: fa.sign ^ fb.sign,
        exp: ext(fa.exp) - ext(fb.exp) + 127 - ext(below),
        nan: fa.nan | fb.nan | (fa.zero & fb.zero) | (fa.inf & fb.inf),
        inf: fa.inf | fb.zero,
        zero: fa.zero | fb.inf,
    };
    let (state, mut carried) = cut_with(m, p, 1, &[("rem", r0), ("divisor", sb)], carried);
    let (mut rem, mut divisor) = (state[0], state[1]);
    let mut bits: Option<Expr> = None;
    for step in 0..STEPS {
        let d = divisor.zext(25);
        // Below the divisor after the step, so below 2^24: doubling fits.
        // The first step always takes (the remainder starts at sb or
        // above): the quotient's leading one, which is not kept.
        let mut state = if step == 0 {
            vec![("rem", (rem - d) << 1)]
        } else {
            let take = rem.is_ge(d);
            let q = match bits {
                None => take,
                Some(q) => cat(&[q, take]),
            };
            vec![("rem", mux(take, rem - d, rem) << 1), ("quotient", q)]
        };
        // The divisor rides along while a step still needs it.
        if step + 1 < STEPS {
            state.push(("divisor", divisor));
        }
        let (state, c) = cut_with(m, p, 2 + step, &state, carried);
        rem = state[0];
        carried = c;
        if step > 0 {
            bits = Some(state[1]);
        }
        if let Some(&d) = state.last().filter(|_| step + 1 < STEPS) {
            divisor = d;
        }
    }
    let bits = bits.expect("25 steps");
    round_and_pack(m, p, bits, rem.any(), carried)
}

/// `sqrt32(a)` as combinational logic.
#[track_caller]
pub fn sqrt32_logic(m: &mut ModuleBuilder, a: Expr) -> Expr {
    let mut p = Pipeline::new(SQRT32, "", 0, None);
    let r = sqrt32_piped(m, &mut p, a);
    p.finish();
    r
}

/// `sqrt32(a)` on a pipeline of [`SQRT32`].
///
/// A positive normal a = 1.f x 2^u is read as m x 2^u' with u' = u or
/// u - 1, whichever is even, and m in [1, 4); the root is sqrt(m) x
/// 2^(u'/2) with sqrt(m) in [1, 2). The radicand N = m x 2^48 (50 bits) is
/// taken two bits per step by restoring square root: the remainder
/// (shifted in by those two bits) against 4 x root + 1, subtracted when it
/// is not below, the root gaining a one or a zero. After 25 steps the root
/// is sqrt(m) truncated to 24 bits and the round bit, and the remainder is
/// zero exactly when the root is. The result's exponent is in range for
/// every input, so only the operand's classes make specials.
#[track_caller]
pub fn sqrt32_piped(m: &mut ModuleBuilder, p: &mut Pipeline, a: Expr) -> Expr {
    let [a] = p.cut(m, 0, [("a", a)]);
    let f = fp32_fields(m, a);
    let sig = fp32_significand(m, a);
    // u = E - 127 is odd when the biased exponent E is even.
    let odd = !f.exp.bit(0);
    let radicand = mux(
        odd,
        cat(&[sig, m.lit(Ty::u(26), 0)]),
        cat(&[m.lit(Ty::BOOL, 0), sig, m.lit(Ty::u(25), 0)]),
    );
    // (u - odd) / 2 + 127 = (E - odd + 127) / 2, an even sum.
    let biased = (f.exp.zext(10) - odd.zext(10) + 127u32) >> 1;
    let carried = Carried {
        sign: f.sign,
        exp: biased.zext(11).as_signed(),
        nan: f.nan | (f.sign & !f.zero),
        inf: f.inf,
        zero: f.zero,
    };
    let (state, mut carried) = cut_with(m, p, 1, &[("radicand", radicand)], carried);
    let mut radicand = state[0];
    let mut rem = m.lit(Ty::u(28), 0);
    // The root's bits after its leading one: the first step always takes
    // (the radicand's top two bits are 01 or 1x), so the root starts as 1.
    let mut root: Option<Expr> = None;
    for step in 0..STEPS {
        // The radicand's top two bits still to come.
        let pair = radicand.slice(radicand.width() - 2, 2);
        // The remainder stays at most twice the root (below 2^26 before the
        // shift), so 28 bits hold it shifted.
        let shifted = (rem << 2) | pair.zext(28);
        let one = m.lit(Ty::BOOL, 1);
        let mut state = if step == 0 {
            vec![("rem", shifted - 1u32)]
        } else {
            // 4 x root + 1, the root with its leading one.
            let bits = match root {
                None => one,
                Some(r) => cat(&[one, r]),
            };
            let trial = cat(&[bits, m.lit(Ty::u(2), 1)]).zext(28);
            let take = shifted.is_ge(trial);
            let r = match root {
                None => take,
                Some(r) => cat(&[r, take]),
            };
            vec![("rem", mux(take, shifted - trial, shifted)), ("root", r)]
        };
        // The radicand's bits still to come ride along.
        let rest = 48 - 2 * step as u32;
        if rest > 0 {
            state.push(("radicand", radicand.slice(0, rest)));
        }
        let (state, c) = cut_with(m, p, 2 + step, &state, carried);
        rem = state[0];
        carried = c;
        if step > 0 {
            root = Some(state[1]);
        }
        if rest > 0 {
            radicand = *state.last().expect("the radicand's rest");
        }
    }
    let root = root.expect("25 steps");
    round_and_pack(m, p, root, rem.any(), carried)
}

/// fp32 division on a pipeline of `stages` ([`DIV32`]) as a module
/// `div32_s<stages>[_en]`: ports `a_i`, `b_i`, (`en_i`), `q_o`.
pub fn div32_unit(design: &mut Design, stages: u32, with_enable: bool) -> Rc<ModuleDef> {
    let inputs = [("a_i", Ty::u(32)), ("b_i", Ty::u(32))];
    let unit = UnitModule {
        base: "div32",
        doc: "fp32 division, correctly rounded, FTZ-RNE, canonical NaN (docs/numerics.md, EUP)",
        plan: DIV32,
        inputs: &inputs,
    };
    unit_module(design, unit, stages, with_enable, |m, p, v| {
        vec![("q_o", div32_piped(m, p, v[0], v[1]))]
    })
}

/// The fp32 square root on a pipeline of `stages` ([`SQRT32`]) as a module
/// `sqrt32_s<stages>[_en]`: ports `a_i`, (`en_i`), `r_o`.
pub fn sqrt32_unit(design: &mut Design, stages: u32, with_enable: bool) -> Rc<ModuleDef> {
    let inputs = [("a_i", Ty::u(32))];
    let unit = UnitModule {
        base: "sqrt32",
        doc: "fp32 square root, correctly rounded, FTZ-RNE, canonical NaN (docs/numerics.md, EUP)",
        plan: SQRT32,
        inputs: &inputs,
    };
    unit_module(design, unit, stages, with_enable, |m, p, v| {
        vec![("r_o", sqrt32_piped(m, p, v[0]))]
    })
}

/// exp2's Horner coefficients C0 .. C6 (fp32 bits), docs/numerics.md.
pub const EXP2_COEFFS: [u32; 7] = [
    0x3f80_0000,
    0x3f31_7217,
    0x3e75_fe6a,
    0x3d63_49e2,
    0x3c1e_563b,
    0x3aa4_e577,
    0x395e_4d21,
];

/// log2(e) rounded to fp32: exp(x) = exp2(mul32(x, log2 e)).
pub const LOG2_E_F32: u32 = 0x3fb8_aa3b;

/// Stage counts of exp2's pieces: every fp32 multiply ([`FP32_MUL`], 0 to
/// 4) and every fp32 add ([`FP32_ADD`], 0 to 6) of the sequence has its
/// own pipeline of that many registered cuts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exp2Stages {
    pub mul: u32,
    pub add: u32,
}

impl Exp2Stages {
    /// Every cut of every piece registered.
    pub const FULL: Exp2Stages = Exp2Stages {
        mul: FP32_MUL.cuts.len() as u32,
        add: FP32_ADD.cuts.len() as u32,
    };

    /// Registers in exp2's split of t (its input, its whole part and lost
    /// bits, its results): three once the adds are pipelined, none
    /// otherwise.
    pub fn split_registers(self) -> u32 {
        if self.add > 0 {
            3
        } else {
            0
        }
    }

    /// Registers before exp2's scaling by 2^i (the polynomial's value and
    /// i): one once the adds are pipelined, none otherwise.
    pub fn scaling_registers(self) -> u32 {
        u32::from(self.add > 0)
    }

    /// exp2's latency: the split's registers, its subtraction, six
    /// multiply-adds and the scaling's register.
    pub fn exp2_latency(self) -> u32 {
        self.split_registers() + self.add + 6 * (self.mul + self.add) + self.scaling_registers()
    }

    /// exp's latency: the multiply by log2 e, then exp2.
    pub fn exp_latency(self) -> u32 {
        self.mul + self.exp2_latency()
    }
}

/// `values` delayed by `cycles` cycles each (the stages loading while
/// `enable` is high, if given), lines named `<prefix>_<name>`.
fn delayed(
    m: &mut ModuleBuilder,
    prefix: &str,
    values: &[(&str, Expr)],
    cycles: u32,
    enable: Option<Expr>,
) -> Vec<Expr> {
    values
        .iter()
        .map(|&(name, v)| {
            let name = format!("{prefix}_{name}");
            match enable {
                Some(en) => crate::blocks::delay_enabled(m, &name, v, cycles, en),
                None => crate::blocks::delay(m, &name, v, cycles, None),
            }
        })
        .collect()
}

/// The fp32 value (sign bit `negative`) of magnitude `magnitude` (u7),
/// exactly: the leading one found among seven bits and shifted to the
/// implicit bit. Zero is +0, whatever `negative` says, as int -> fp32 gives.
fn small_int_to_f32(m: &mut ModuleBuilder, negative: Expr, magnitude: Expr) -> Expr {
    assert_eq!(magnitude.width(), 7, "a 7-bit magnitude");
    let mut lead = m.lit(Ty::u(3), 0);
    for k in 1..7u32 {
        lead = mux(magnitude.bit(k), m.lit(Ty::u(3), k), lead);
    }
    // The bits below the leading one, at the top of six: shifting them up
    // by 6 - lead pushes the leading one out.
    let below_lead = magnitude.slice(0, 6) << (m.lit(Ty::u(3), 6) - lead);
    let exp = lead.zext(8) + 127u32;
    let nonzero = magnitude.any();
    cat(&[
        negative & nonzero,
        mux(nonzero, exp, m.lit(Ty::u(8), 0)),
        below_lead,
        m.lit(Ty::u(17), 0),
    ])
}

/// `exp2_32(t)` on pipelines of `stages` (the contract's sequence: the
/// split of t, six Horner steps, the scaling by 2^i), registers loading
/// while `enable` is high, if given.
///
/// The split: t's class decides NaN, t >= 128 (+inf) and t < -126 (+0);
/// otherwise |t| < 128, so i = floor(t) comes from t's significand shifted
/// right by 150 minus its exponent (and one more below zero when bits were
/// lost), and i as fp32 (|i| <= 127) is exact; once the adds are pipelined
/// the split takes three registered steps ([`Exp2Stages::split_registers`]).
/// The polynomial's value p is
/// in [1, 2] for f in [0, 1), so mul32(p, 2^i) is p with i added to its
/// exponent, +inf past 254 and +0 below 1.
#[track_caller]
pub fn exp2_piped(
    m: &mut ModuleBuilder,
    stages: Exp2Stages,
    enable: Option<Expr>,
    t: Expr,
) -> Expr {
    // Pipelined, the split is three stages: as one, a shift, carry chains
    // and a normalisation deep, it held the EUP to 31.7 MHz on an ECP5-85F
    // (with the multiply by log2 e's last segment before it), and to 59.9
    // as two.
    // One register per step of the split once pipelined: t; its whole
    // part, lost bits and class; floor(t) and -i as fp32.
    let step = stages.split_registers() / 3;
    let t = delayed(m, "exp2_in", &[("t", t)], step, enable)[0];
    let ft = fp32_fields(m, t);
    let big = !ft.sign & ft.exp.is_ge(134);
    // |t| > 126 = 1.96875 x 2^6 (fraction 0x7c0000).
    let beyond = ft.exp.is_gt(133) | (ft.exp.is_eq(133) & ft.frac.is_gt(0x7c_0000));
    let small = ft.sign & beyond;
    let sig = fp32_significand(m, t);
    // The bits below the binary point: those under 2^(150 - E).
    let amount = m.lit(Ty::u(8), 150) - ft.exp;
    // In range (E from 127 to 133) the whole part is sig's top seven bits
    // shifted right by amount - 17.
    let whole = sig.slice(17, 7) >> (amount - 17u32).zext(32);
    let below: Vec<Expr> = (0..24u32).map(|k| sig.bit(k) & amount.is_gt(k)).collect();
    let lost = !ft.zero & cat(&below).any();
    let [t, whole, down, nan, big, small, negative] = <[Expr; 7]>::try_from(delayed(
        m,
        "split_mid",
        &[
            ("t", t),
            ("whole", whole),
            ("down", ft.sign & lost),
            ("nan", ft.nan),
            ("big", big),
            ("small", small),
            ("negative", ft.sign),
        ],
        step,
        enable,
    ))
    .expect("seven values");
    // |t| < 128 here: |i| = |floor(t)| fits in 7 bits.
    let magnitude = whole + down.zext(7);
    let floor = mux(
        negative,
        -magnitude.zext(9).as_signed(),
        magnitude.zext(9).as_signed(),
    );
    // sub32(t, i) = add32(t, -i), -i the sign-flipped i as fp32 (-0 for 0).
    let as_f32 = small_int_to_f32(m, negative, magnitude);
    let neg_i = as_f32 ^ m.lit(Ty::u(32), 0x8000_0000u32);
    let [t, neg_i, floor, nan, big, small] = <[Expr; 6]>::try_from(delayed(
        m,
        "split_out",
        &[
            ("t", t),
            ("neg_i", neg_i),
            ("i", floor),
            ("nan", nan),
            ("big", big),
            ("small", small),
        ],
        step,
        enable,
    ))
    .expect("six values");
    let mut sub = Pipeline::new(FP32_ADD, "split", stages.add, enable);
    let f = fp32_add_piped(m, &mut sub, t, neg_i);
    let latency = sub.finish();
    let flags = [("i", floor), ("nan", nan), ("big", big), ("small", small)];
    let mut carried = delayed(m, "split", &flags, latency, enable);
    let mut f = f;
    let mut p = m.lit(Ty::u(32), EXP2_COEFFS[6]);
    for k in (0..6).rev() {
        let mut mul = Pipeline::new(FP32_MUL, &format!("mul{k}"), stages.mul, enable);
        let product = fp32_mul_piped(m, &mut mul, p, f);
        let latency = mul.finish();
        let mut add = Pipeline::new(FP32_ADD, &format!("add{k}"), stages.add, enable);
        let c = m.lit(Ty::u(32), EXP2_COEFFS[k]);
        p = fp32_add_piped(m, &mut add, product, c);
        let latency = latency + add.finish();
        // f rides along while a multiply still needs it.
        let mut riding: Vec<(&str, Expr)> = flags
            .iter()
            .zip(&carried)
            .map(|(&(name, _), &v)| (name, v))
            .collect();
        if k > 0 {
            riding.push(("f", f));
        }
        let out = delayed(m, &format!("horner{k}"), &riding, latency, enable);
        carried = out[..flags.len()].to_vec();
        if k > 0 {
            f = out[flags.len()];
        }
    }
    // Pipelined, the polynomial's value waits in a register of its own
    // before the scaling: the last add's final select, the scaling and the
    // EUP's pick in one stage were its longest path (74.3 MHz on an
    // ECP5-85F; a register after the scaling instead placed at 66.6).
    let mut held = vec![("p", p)];
    held.extend(flags.iter().zip(&carried).map(|(&(name, _), &v)| (name, v)));
    let held = delayed(m, "exp2_scale", &held, stages.scaling_registers(), enable);
    let [p, i, nan, big, small] = [held[0], held[1], held[2], held[3], held[4]];
    let fp = fp32_fields(m, p);
    let exp = fp.exp.zext(10).as_signed() + i.sext(10);
    let scaled = cat(&[fp.sign, exp.trunc(8).as_unsigned(), fp.frac]);
    let inf = m.lit(Ty::u(32), 0x7f80_0000);
    let zero = m.lit(Ty::u(32), 0);
    let canonical = m.lit(Ty::u(32), CANONICAL_NAN_F32);
    // t's range decides first: outside it, i and p mean nothing.
    let in_range = mux(exp.is_ge(255), inf, mux(exp.is_le(0), zero, scaled));
    mux(nan, canonical, mux(big, inf, mux(small, zero, in_range)))
}

/// `exp32(x)` = exp2(mul32(x, log2 e)) on pipelines of `stages`.
#[track_caller]
pub fn exp_piped(m: &mut ModuleBuilder, stages: Exp2Stages, enable: Option<Expr>, x: Expr) -> Expr {
    let mut mul = Pipeline::new(FP32_MUL, "log2e", stages.mul, enable);
    let log2e = m.lit(Ty::u(32), LOG2_E_F32);
    let t = fp32_mul_piped(m, &mut mul, x, log2e);
    mul.finish();
    exp2_piped(m, stages, enable, t)
}

/// exp2 (`base` "exp2") or exp ("exp") as a module
/// `<base>_m<mul>_a<add>[_en]`: ports `x_i`, (`en_i`), `y_o`; latency
/// [`Exp2Stages::exp2_latency`] or [`Exp2Stages::exp_latency`].
fn exp_module(
    design: &mut Design,
    exp: bool,
    stages: Exp2Stages,
    with_enable: bool,
) -> Rc<ModuleDef> {
    for (plan, n) in [(FP32_MUL, stages.mul), (FP32_ADD, stages.add)] {
        plan.active(n);
    }
    let base = if exp { "exp" } else { "exp2" };
    let name = format!(
        "{base}_m{}_a{}{}",
        stages.mul,
        stages.add,
        if with_enable { "_en" } else { "" }
    );
    let params = [
        ("mul_stages", stages.mul.to_string()),
        ("add_stages", stages.add.to_string()),
        ("enable", with_enable.to_string()),
    ];
    design.define(&name, &params, |_, m| {
        m.doc(&format!(
            "fp32 {base} in the contract's sequence of fp32 operations (docs/numerics.md, EUP); \
             multiplies of {} stage(s), adds of {}{}",
            stages.mul,
            stages.add,
            if with_enable {
                ", registers load while en_i is high"
            } else {
                ""
            }
        ));
        let x = m.input("x_i", Ty::u(32));
        let enable = with_enable.then(|| m.input("en_i", Ty::BOOL));
        let latency = if exp {
            stages.exp_latency()
        } else {
            stages.exp2_latency()
        };
        if with_enable && latency == 0 {
            m.waive(
                "UNUSEDSIGNAL",
                "en_i",
                "a unit without pipeline registers has nothing to hold",
            );
        }
        let y = if exp {
            exp_piped(m, stages, enable, x)
        } else {
            exp2_piped(m, stages, enable, x)
        };
        m.output("y_o", y);
    })
}

/// exp2 as a module `exp2_m<mul>_a<add>[_en]` (ports `x_i`, (`en_i`), `y_o`).
pub fn exp2_unit(design: &mut Design, stages: Exp2Stages, with_enable: bool) -> Rc<ModuleDef> {
    exp_module(design, false, stages, with_enable)
}

/// exp as a module `exp_m<mul>_a<add>[_en]` (ports `x_i`, (`en_i`), `y_o`).
pub fn exp_unit(design: &mut Design, stages: Exp2Stages, with_enable: bool) -> Rc<ModuleDef> {
    exp_module(design, true, stages, with_enable)
}

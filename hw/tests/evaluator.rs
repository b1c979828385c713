//! Directed checks of the IR evaluator on the edge cases of every operation.
//!
//! The evaluator is the reference the emitted Verilog is fuzzed against, so its
//! own semantics are pinned down here by hand: every expected value below is
//! written out (or is a plain power of two), not computed by a second model.

use hw::*;

mod common;
use common::{evaluator, module};
use num_bigint::{BigInt, BigUint};
use num_traits::One;
use std::rc::Rc;

// ---------------------------------------------------------------------------
// Helpers.

fn p2(n: u32) -> BigUint {
    BigUint::one() << n as usize
}

/// All ones in `n` bits.
fn ones(n: u32) -> BigUint {
    p2(n) - 1u32
}

fn b(v: u128) -> BigUint {
    BigUint::from(v)
}

fn hex(s: &str) -> BigUint {
    BigUint::parse_bytes(s.replace('_', "").as_bytes(), 16).expect("hex literal")
}

/// Sets the inputs, settles, and returns the requested outputs as bit patterns.
fn run(e: &mut Evaluator, inputs: &[(&str, &BigUint)], outputs: &[&str]) -> Vec<BigUint> {
    for (name, v) in inputs {
        e.set(name, v);
    }
    e.eval();
    outputs.iter().map(|o| e.get(o)).collect()
}

// ---------------------------------------------------------------------------
// Arithmetic.

/// A module computing `a + b`, `a - b`, `a * b` and `-a` on `ty`.
fn arith(ty: Ty) -> Rc<ModuleDef> {
    module("arith", |m| {
        let a = m.input("a_i", ty);
        let b = m.input("b_i", ty);
        m.output("add_o", a + b);
        m.output("sub_o", a - b);
        m.output("mul_o", a * b);
        m.output("neg_o", -a);
    })
}

/// (a, b, a + b, a - b, a * b) as bit patterns.
type ArithCase = (BigUint, BigUint, BigUint, BigUint, BigUint);

fn check_arith(ty: Ty, cases: &[ArithCase]) {
    let def = arith(ty);
    let mut e = evaluator(&def);
    for (a, b, add, sub, mul) in cases {
        let got = run(
            &mut e,
            &[("a_i", a), ("b_i", b)],
            &["add_o", "sub_o", "mul_o"],
        );
        assert_eq!(
            got,
            vec![add.clone(), sub.clone(), mul.clone()],
            "{ty}: a={a:x} b={b:x} (add, sub, mul)"
        );
    }
}

#[test]
fn add_sub_mul_wrap_at_width_1() {
    let (z, o) = (b(0), b(1));
    check_arith(
        Ty::u(1),
        &[
            (z.clone(), z.clone(), z.clone(), z.clone(), z.clone()),
            (o.clone(), o.clone(), z.clone(), z.clone(), o.clone()),
            (z.clone(), o.clone(), o.clone(), o.clone(), z.clone()),
            (o.clone(), z.clone(), o.clone(), o.clone(), z.clone()),
        ],
    );
    // s1 holds -1 and 0: -1 + -1 = -2 wraps to 0, 0 - (-1) = 1 wraps to -1.
    check_arith(
        Ty::s(1),
        &[
            (o.clone(), o.clone(), z.clone(), z.clone(), o.clone()),
            (z.clone(), o.clone(), o.clone(), o.clone(), z.clone()),
        ],
    );
}

#[test]
fn add_sub_mul_wrap_at_width_8() {
    check_arith(
        Ty::u(8),
        &[
            // 200 + 100 = 300 = 256 + 44; 200 - 100; 200 * 100 = 20000 = 78 * 256 + 32.
            (b(200), b(100), b(44), b(100), b(32)),
            // 5 - 10 = -5 = 251; 5 * 10 = 50.
            (b(5), b(10), b(15), b(251), b(50)),
            // 255 * 255 = 65025 = 254 * 256 + 1.
            (b(255), b(255), b(254), b(0), b(1)),
            // 16 * 17 = 272 = 256 + 16.
            (b(16), b(17), b(33), b(255), b(16)),
        ],
    );
    // Signed: the same bit patterns; 127 + 1 = -128, -128 - 1 = 127,
    // -128 * -1 = 128 wraps to -128.
    check_arith(
        Ty::s(8),
        &[
            (b(0x7f), b(1), b(0x80), b(0x7e), b(0x7f)),
            (b(0x80), b(1), b(0x81), b(0x7f), b(0x80)),
            (b(0x80), b(0xff), b(0x7f), b(0x81), b(0x80)),
            (b(0x80), b(0x80), b(0), b(0), b(0)),
        ],
    );
}

#[test]
fn add_sub_mul_wrap_at_width_64() {
    let max = ones(64);
    check_arith(
        Ty::u(64),
        &[
            (max.clone(), b(1), b(0), max.clone() - 1u32, max.clone()),
            (b(0), b(1), b(1), max.clone(), b(0)),
            // 2^32 * 2^32 = 2^64 wraps to 0; (2^64-1)^2 = 2^128 - 2^65 + 1 -> 1.
            (p2(32), p2(32), p2(33), b(0), b(0)),
            (max.clone(), max.clone(), max.clone() - 1u32, b(0), b(1)),
            (p2(63), b(2), p2(63) + 2u32, p2(63) - 2u32, b(0)),
        ],
    );
}

#[test]
fn add_sub_mul_wrap_at_width_65() {
    let max = ones(65);
    check_arith(
        Ty::u(65),
        &[
            // The carry out of bit 63 lands in bit 64, which exists.
            (ones(64), b(1), p2(64), ones(64) - 1u32, ones(64)),
            (p2(64), p2(64), b(0), b(0), b(0)),
            (b(0), b(1), b(1), max.clone(), b(0)),
            // 2^32 * 2^32 = 2^64 fits; 2^33 * 2^32 = 2^65 wraps to 0.
            (p2(32), p2(32), p2(33), b(0), p2(64)),
            (p2(33), p2(32), p2(33) + p2(32), p2(32), b(0)),
            // (2^65 - 1)^2 = 2^130 - 2^66 + 1 -> 1.
            (max.clone(), max.clone(), max.clone() - 1u32, b(0), b(1)),
        ],
    );
    // s65: the most negative value is 2^64 as a pattern; -2^64 * -1 wraps to itself.
    check_arith(
        Ty::s(65),
        &[(p2(64), max.clone(), ones(64), p2(64) + 1u32, p2(64))],
    );
}

#[test]
fn add_sub_mul_wrap_at_width_128() {
    let max = ones(128);
    check_arith(
        Ty::u(128),
        &[
            (max.clone(), b(1), b(0), max.clone() - 1u32, max.clone()),
            (p2(64), p2(64), p2(65), b(0), b(0)),
            // (2^64 + 1)(2^64 - 1) = 2^128 - 1.
            (p2(64) + 1u32, p2(64) - 1u32, p2(65), b(2), max.clone()),
            (b(3), b(5), b(8), max.clone() - 1u32, b(15)),
        ],
    );
}

#[test]
fn negation_wraps_and_the_most_negative_value_is_its_own_negative() {
    let def = arith(Ty::s(8));
    let mut e = evaluator(&def);
    for (a, neg) in [
        (0x80u128, 0x80u128),
        (0x7f, 0x81),
        (0, 0),
        (1, 0xff),
        (0xff, 1),
    ] {
        let got = run(&mut e, &[("a_i", &b(a)), ("b_i", &b(0))], &["neg_o"]);
        assert_eq!(got[0], b(neg), "-{a:#x}");
    }
    let def = arith(Ty::u(65));
    let mut e = evaluator(&def);
    let got = run(&mut e, &[("a_i", &b(1)), ("b_i", &b(0))], &["neg_o"]);
    assert_eq!(got[0], ones(65));
}

// ---------------------------------------------------------------------------
// Full-width multiply.

#[test]
fn mul_wide_gives_the_full_product() {
    // (a type, b type, a, b, product) with signed values as integers.
    let cases: Vec<(Ty, Ty, BigInt, BigInt, BigInt)> = vec![
        (Ty::u(8), Ty::u(8), 255.into(), 255.into(), 65025.into()),
        (Ty::u(8), Ty::u(3), 255.into(), 7.into(), 1785.into()),
        (Ty::u(1), Ty::u(1), 1.into(), 1.into(), 1.into()),
        // The most negative value times itself: 2^(n-1) * 2^(n-1) = 2^(2n-2),
        // which only fits because the product has 2n bits.
        (
            Ty::s(8),
            Ty::s(8),
            (-128).into(),
            (-128).into(),
            16384.into(),
        ),
        (
            Ty::s(8),
            Ty::s(8),
            (-128).into(),
            127.into(),
            (-16256).into(),
        ),
        (Ty::s(8), Ty::s(8), (-1).into(), (-1).into(), 1.into()),
        (Ty::s(8), Ty::s(3), (-128).into(), (-4).into(), 512.into()),
        (Ty::s(8), Ty::s(3), 127.into(), (-4).into(), (-508).into()),
        (Ty::s(1), Ty::s(1), (-1).into(), (-1).into(), 1.into()),
        (Ty::s(1), Ty::s(8), (-1).into(), (-128).into(), 128.into()),
        (
            Ty::s(64),
            Ty::s(64),
            -BigInt::from(p2(63)),
            -BigInt::from(p2(63)),
            BigInt::from(p2(126)),
        ),
        (
            Ty::s(64),
            Ty::s(64),
            -BigInt::from(p2(63)),
            BigInt::from(p2(63)) - 1,
            -BigInt::from(p2(126)) + BigInt::from(p2(63)),
        ),
        (
            Ty::s(65),
            Ty::s(65),
            -BigInt::from(p2(64)),
            -BigInt::from(p2(64)),
            BigInt::from(p2(128)),
        ),
        (
            Ty::u(64),
            Ty::u(64),
            ones(64).into(),
            ones(64).into(),
            (BigInt::from(p2(128)) - BigInt::from(p2(65)) + 1),
        ),
    ];
    for (ta, tb, a, bv, p) in cases {
        // The product at its own width, and extended to 1, 7 and 40 more bits.
        let extra = [1u32, 7, 40];
        let def = module("mulw", |m| {
            let x = m.input("a_i", ta);
            let y = m.input("b_i", tb);
            let prod = x.mul_wide(y);
            assert_eq!(prod.ty(), Ty::new(ta.width + tb.width, ta.signed));
            m.output("p_o", prod);
            for k in extra {
                let wide = x.mul_wide_to(y, ta.width + tb.width + k);
                assert_eq!(wide.ty(), Ty::new(ta.width + tb.width + k, ta.signed));
                m.output(&format!("p{k}_o"), wide);
            }
        });
        let mut e = evaluator(&def);
        e.set("a_i", &pattern(&a, ta.width));
        e.set("b_i", &pattern(&bv, tb.width));
        e.eval();
        assert_eq!(e.get_int("p_o"), p, "{ta} {a} * {tb} {bv}");
        for k in extra {
            let w = ta.width + tb.width + k;
            assert_eq!(
                e.get(&format!("p{k}_o")),
                pattern(&p, w),
                "{ta} {a} * {tb} {bv} in {w} bits"
            );
        }
    }
}

/// The two's complement pattern of `v` in `w` bits (`v` must fit).
fn pattern(v: &BigInt, w: u32) -> BigUint {
    let m = BigInt::from(p2(w));
    let r = ((v % &m) + &m) % &m;
    r.to_biguint().unwrap()
}

// ---------------------------------------------------------------------------
// Shifts.

/// Amount types the shift tests route every amount through (when it fits).
const AMOUNT_WIDTHS: &[u32] = &[1, 4, 8, 32, 33, 41, 64, 70, 101];

/// A module with `shl{k}_o = a << n{k}_i` and `shr{k}_o = a >> n{k}_i` for every
/// amount width, plus the same shifts by the constant amounts `consts`.
fn shifter(ty: Ty, consts: &[u32]) -> Rc<ModuleDef> {
    let consts = consts.to_vec();
    module("shifter", move |m| {
        let a = m.input("a_i", ty);
        for &w in AMOUNT_WIDTHS {
            let n = m.input(&format!("n{w}_i"), Ty::u(w));
            m.output(&format!("shl{w}_o"), a << n);
            m.output(&format!("shr{w}_o"), a >> n);
        }
        for (k, &c) in consts.iter().enumerate() {
            m.output(&format!("shlc{k}_o"), a << c);
            m.output(&format!("shrc{k}_o"), a >> c);
        }
    })
}

/// Checks `a << amount` and `a >> amount` through every amount port wide enough.
fn check_shift(
    e: &mut Evaluator,
    ty: Ty,
    a: &BigUint,
    amount: &BigUint,
    shl: &BigUint,
    shr: &BigUint,
) {
    e.set("a_i", a);
    let mut tried = 0;
    for &w in AMOUNT_WIDTHS {
        if amount.bits() > w as u64 {
            continue;
        }
        // Every other amount port holds all ones, to catch a crossed wire.
        for &o in AMOUNT_WIDTHS {
            e.set(&format!("n{o}_i"), &ones(o));
        }
        e.set(&format!("n{w}_i"), amount);
        e.eval();
        assert_eq!(
            &e.get(&format!("shl{w}_o")),
            shl,
            "{ty} {a:#x} << {amount} (u{w} amount)"
        );
        assert_eq!(
            &e.get(&format!("shr{w}_o")),
            shr,
            "{ty} {a:#x} >> {amount} (u{w} amount)"
        );
        tried += 1;
    }
    assert!(tried > 0);
}

#[test]
fn shifts_of_an_unsigned_byte() {
    let ty = Ty::u(8);
    let def = shifter(ty, &[]);
    let mut e = evaluator(&def);
    let a = b(0xb5); // 1011_0101
    for (n, shl, shr) in [
        (b(0), 0xb5, 0xb5),
        (b(1), 0x6a, 0x5a),
        (b(7), 0x80, 0x01),
        (b(8), 0, 0),
        (b(9), 0, 0),
        (b(255), 0, 0),
        (p2(32), 0, 0),
        (p2(32) + 1u32, 0, 0),
        (p2(40), 0, 0),
        (p2(64), 0, 0),
        (p2(100), 0, 0),
        (ones(101), 0, 0),
    ] {
        check_shift(&mut e, ty, &a, &n, &b(shl), &b(shr));
    }
}

#[test]
fn shifts_of_a_signed_byte_are_arithmetic_to_the_right() {
    let ty = Ty::s(8);
    let def = shifter(ty, &[]);
    let mut e = evaluator(&def);
    // -75 = 0xb5: >> 1 is floor(-37.5) = -38 = 0xda; >> 7 and beyond is -1.
    let neg = b(0xb5);
    for (n, shl, shr) in [
        (b(0), 0xb5, 0xb5),
        (b(1), 0x6a, 0xda),
        (b(2), 0xd4, 0xed),
        (b(7), 0x80, 0xff),
        (b(8), 0, 0xff),
        (b(9), 0, 0xff),
        (p2(32), 0, 0xff),
        (p2(40), 0, 0xff),
        (p2(100), 0, 0xff),
    ] {
        check_shift(&mut e, ty, &neg, &n, &b(shl), &b(shr));
    }
    // -128 >> 7 = -1; a positive value shifts in zeros.
    check_shift(&mut e, ty, &b(0x80), &b(7), &b(0), &b(0xff));
    check_shift(&mut e, ty, &b(0x80), &b(6), &b(0), &b(0xfe));
    check_shift(&mut e, ty, &b(0x75), &b(7), &b(0x80), &b(0));
    for n in [b(8), b(9), p2(40)] {
        check_shift(&mut e, ty, &b(0x75), &n, &b(0), &b(0));
    }
    check_shift(&mut e, ty, &b(0x75), &b(4), &b(0x50), &b(0x07));
}

#[test]
fn shifts_of_65_and_128_bit_values() {
    let ty = Ty::u(65);
    let def = shifter(ty, &[]);
    let mut e = evaluator(&def);
    let a = p2(64) + 1u32;
    check_shift(&mut e, ty, &a, &b(1), &b(2), &p2(63));
    check_shift(&mut e, ty, &a, &b(64), &p2(64), &b(1));
    check_shift(&mut e, ty, &a, &b(65), &b(0), &b(0));
    check_shift(&mut e, ty, &a, &b(66), &b(0), &b(0));
    check_shift(&mut e, ty, &a, &p2(32), &b(0), &b(0));
    check_shift(&mut e, ty, &a, &p2(100), &b(0), &b(0));

    let ty = Ty::s(65);
    let def = shifter(ty, &[]);
    let mut e = evaluator(&def);
    let min = p2(64); // -2^64
    check_shift(&mut e, ty, &min, &b(0), &min, &min);
    check_shift(&mut e, ty, &min, &b(1), &b(0), &(p2(64) + p2(63)));
    check_shift(&mut e, ty, &min, &b(63), &b(0), &(ones(65) - 1u32));
    check_shift(&mut e, ty, &min, &b(64), &b(0), &ones(65));
    check_shift(&mut e, ty, &min, &b(65), &b(0), &ones(65));
    check_shift(&mut e, ty, &min, &p2(40), &b(0), &ones(65));
    check_shift(&mut e, ty, &min, &p2(100), &b(0), &ones(65));

    let ty = Ty::u(128);
    let def = shifter(ty, &[]);
    let mut e = evaluator(&def);
    check_shift(&mut e, ty, &b(1), &b(127), &p2(127), &b(0));
    check_shift(&mut e, ty, &b(1), &b(128), &b(0), &b(0));
    check_shift(&mut e, ty, &ones(128), &b(127), &p2(127), &b(1));
    check_shift(&mut e, ty, &ones(128), &b(129), &b(0), &b(0));
}

#[test]
fn shifts_of_one_bit_values() {
    let def = shifter(Ty::u(1), &[0, 1, 2]);
    let mut e = evaluator(&def);
    check_shift(&mut e, Ty::u(1), &b(1), &b(0), &b(1), &b(1));
    check_shift(&mut e, Ty::u(1), &b(1), &b(1), &b(0), &b(0));
    check_shift(&mut e, Ty::u(1), &b(1), &p2(40), &b(0), &b(0));
    let def = shifter(Ty::s(1), &[]);
    let mut e = evaluator(&def);
    check_shift(&mut e, Ty::s(1), &b(1), &b(1), &b(0), &b(1));
    check_shift(&mut e, Ty::s(1), &b(1), &p2(100), &b(0), &b(1));
}

#[test]
fn shifts_by_constant_amounts() {
    let consts = [0u32, 1, 7, 8, 9, 1000, u32::MAX];
    let def = shifter(Ty::s(8), &consts);
    let mut e = evaluator(&def);
    e.set("a_i", &b(0xb5));
    e.eval();
    let shl: Vec<u128> = vec![0xb5, 0x6a, 0x80, 0, 0, 0, 0];
    let shr: Vec<u128> = vec![0xb5, 0xda, 0xff, 0xff, 0xff, 0xff, 0xff];
    for k in 0..consts.len() {
        assert_eq!(e.get(&format!("shlc{k}_o")), b(shl[k]), "<< {}", consts[k]);
        assert_eq!(e.get(&format!("shrc{k}_o")), b(shr[k]), ">> {}", consts[k]);
    }
    let def = shifter(Ty::u(8), &consts);
    let mut e = evaluator(&def);
    e.set("a_i", &b(0xb5));
    e.eval();
    let shr: Vec<u128> = vec![0xb5, 0x5a, 0x01, 0, 0, 0, 0];
    for k in 0..consts.len() {
        assert_eq!(e.get(&format!("shlc{k}_o")), b(shl[k]), "<< {}", consts[k]);
        assert_eq!(e.get(&format!("shrc{k}_o")), b(shr[k]), ">> {}", consts[k]);
    }
}

// ---------------------------------------------------------------------------
// Comparisons, reductions.

/// `[eq, ne, lt, le, gt, ge]` of a and b on `ty`.
fn compare(ty: Ty, a: &BigUint, bv: &BigUint) -> [bool; 6] {
    let def = module("cmp", |m| {
        let x = m.input("a_i", ty);
        let y = m.input("b_i", ty);
        m.output("eq_o", x.is_eq(y));
        m.output("ne_o", x.is_ne(y));
        m.output("lt_o", x.is_lt(y));
        m.output("le_o", x.is_le(y));
        m.output("gt_o", x.is_gt(y));
        m.output("ge_o", x.is_ge(y));
    });
    let mut e = evaluator(&def);
    let got = run(
        &mut e,
        &[("a_i", a), ("b_i", bv)],
        &["eq_o", "ne_o", "lt_o", "le_o", "gt_o", "ge_o"],
    );
    let mut out = [false; 6];
    for (o, g) in out.iter_mut().zip(got) {
        assert!(g <= b(1), "comparison result wider than a bit");
        *o = g == b(1);
    }
    out
}

#[test]
fn signed_and_unsigned_comparisons_at_the_most_negative_value() {
    //                    eq     ne     lt     le     gt     ge
    let less = [false, true, true, true, false, false];
    let greater = [false, true, false, false, true, true];
    let equal = [true, false, false, true, false, true];
    for w in [1u32, 8, 64, 65, 128] {
        let min = p2(w - 1); // most negative as a pattern; 2^(w-1) unsigned
        let max = ones(w - 1); // most positive signed; 2^(w-1) - 1 unsigned
        let all = ones(w); // -1 signed, the largest unsigned
                           // Signed: min < max, min < -1 (except for w = 1, where min is -1), min < 0.
        assert_eq!(compare(Ty::s(w), &min, &max), less, "s{w} min vs max");
        assert_eq!(compare(Ty::s(w), &max, &min), greater, "s{w} max vs min");
        assert_eq!(compare(Ty::s(w), &min, &min), equal, "s{w} min vs min");
        assert_eq!(compare(Ty::s(w), &min, &b(0)), less, "s{w} min vs 0");
        assert_eq!(compare(Ty::s(w), &all, &b(0)), less, "s{w} -1 vs 0");
        if w > 1 {
            assert_eq!(compare(Ty::s(w), &min, &all), less, "s{w} min vs -1");
        }
        // Unsigned: the same patterns order the other way round.
        assert_eq!(
            compare(Ty::u(w), &min, &max),
            greater,
            "u{w} 2^(w-1) vs below"
        );
        assert_eq!(compare(Ty::u(w), &all, &b(0)), greater, "u{w} max vs 0");
        assert_eq!(compare(Ty::u(w), &b(0), &all), less, "u{w} 0 vs max");
    }
}

#[test]
fn reductions() {
    for w in [1u32, 8, 65] {
        let def = module("red", |m| {
            let a = m.input("a_i", Ty::s(w));
            m.output("all_o", a.all());
            m.output("any_o", a.any());
            m.output("par_o", a.parity());
        });
        let mut e = evaluator(&def);
        let mut check = |v: &BigUint, all: u8, any: u8, par: u8| {
            let got = run(&mut e, &[("a_i", v)], &["all_o", "any_o", "par_o"]);
            assert_eq!(
                got,
                vec![b(all as u128), b(any as u128), b(par as u128)],
                "w{w} {v:#x}"
            );
        };
        check(&b(0), 0, 0, 0);
        check(&ones(w), 1, 1, (w % 2) as u8);
        check(&p2(w - 1), (w == 1) as u8, 1, 1);
        if w > 1 {
            check(&(ones(w) - 1u32), 0, 1, ((w - 1) % 2) as u8);
            check(&(p2(w - 1) + 1u32), 0, 1, 0);
        }
    }
}

// ---------------------------------------------------------------------------
// Slices, concatenation, extension, truncation, casts, mux.

#[test]
fn slices_and_concatenation() {
    let def = module("bits", |m| {
        let a = m.input("a_i", Ty::u(16));
        let s = m.input("s_i", Ty::s(8));
        let w = m.input("w_i", Ty::u(70));
        m.output("mid_o", a.slice(4, 8));
        m.output("top_o", a.bit(15));
        m.output("msb_o", s.msb());
        m.output("sall_o", s.slice(0, 8));
        m.output("wtop_o", w.slice(60, 10));
        m.output("wcross_o", w.slice(30, 40));
        let nib = m.lit(Ty::u(4), 0xa);
        let one = m.lit(Ty::u(1), 1);
        m.output("cat_o", cat(&[nib, a.slice(8, 8), one]));
        let sa = m.lit(Ty::s(4), -1);
        let sb = m.lit(Ty::s(4), -8);
        let c = cat(&[sa, sb]);
        assert!(!c.ty().signed, "concatenation is unsigned");
        m.output("scat_o", c);
        m.output("wcat_o", cat(&[w, s]));
        m.output("one_o", cat(&[s]));
    });
    let mut e = evaluator(&def);
    let w = hex("2a_bcde_f012_3456_789a"); // 70 bits: bit 69 set
    let got = run(
        &mut e,
        &[("a_i", &b(0xabcd)), ("s_i", &b(0x80)), ("w_i", &w)],
        &[
            "mid_o", "top_o", "msb_o", "sall_o", "wtop_o", "wcross_o", "cat_o", "scat_o", "wcat_o",
            "one_o",
        ],
    );
    assert_eq!(got[0], b(0xbc));
    assert_eq!(got[1], b(1));
    assert_eq!(got[2], b(1));
    assert_eq!(
        got[3],
        b(0x80),
        "a full-width slice of a signed value is its bits"
    );
    assert_eq!(got[4], b(0x2ab), "bits 69..60");
    assert_eq!(got[5], hex("aa_f37b_c048"), "bits 69..30");
    // 1010 . 1010_1011 . 1 = 1_0101_0101_0111 = 0x1557.
    assert_eq!(got[6], b(0x1557));
    assert_eq!(got[7], b(0xf8));
    assert_eq!(got[8], (w.clone() << 8usize) | b(0x80));
    assert_eq!(got[9], b(0x80));
}

#[test]
fn extension_truncation_and_casts() {
    let def = module("ext", |m| {
        let u = m.input("u_i", Ty::u(8));
        let s = m.input("s_i", Ty::s(8));
        let s1 = m.input("s1_i", Ty::s(1));
        let wide = m.input("wide_i", Ty::s(16));
        m.output("zext_o", u.zext(16));
        m.output("sext_o", s.sext(16));
        m.output("sext65_o", s.sext(65));
        m.output("sext1_o", s1.sext(8));
        m.output("extu_o", u.ext(12));
        m.output("exts_o", s.ext(12));
        m.output("trs_o", wide.trunc(8));
        m.output("trs1_o", wide.trunc(1));
        m.output("tru_o", wide.as_unsigned().trunc(8));
        m.output("asigned_o", u.as_signed());
        m.output("aunsigned_o", s.as_unsigned());
        m.output("roundtrip_o", s.as_unsigned().as_signed());
        // Sign-extending the bits of an unsigned value read as signed.
        m.output("sxu_o", u.as_signed().sext(16));
        m.output("zxs_o", s.as_unsigned().zext(16));
    });
    let mut e = evaluator(&def);
    let set = |e: &mut Evaluator, u: u128, s: u128, s1: u128, wide: u128| {
        e.set("u_i", &b(u));
        e.set("s_i", &b(s));
        e.set("s1_i", &b(s1));
        e.set("wide_i", &b(wide));
        e.eval();
    };
    set(&mut e, 0xff, 0xff, 1, 0x1280);
    assert_eq!(e.get("zext_o"), b(0x00ff));
    assert_eq!(e.get("sext_o"), b(0xffff));
    assert_eq!(e.get("sext65_o"), ones(65));
    assert_eq!(e.get("sext1_o"), b(0xff));
    assert_eq!(e.get("extu_o"), b(0x0ff));
    assert_eq!(e.get("exts_o"), b(0xfff));
    assert_eq!(
        e.get_int("trs_o"),
        BigInt::from(-128),
        "0x1280 -> 0x80 = -128"
    );
    assert_eq!(e.get("trs1_o"), b(0));
    assert_eq!(e.get("tru_o"), b(0x80));
    assert_eq!(e.get_int("asigned_o"), BigInt::from(-1));
    assert_eq!(e.get_int("aunsigned_o"), BigInt::from(255));
    assert_eq!(e.get_int("roundtrip_o"), BigInt::from(-1));
    assert_eq!(e.get("sxu_o"), b(0xffff));
    assert_eq!(e.get("zxs_o"), b(0x00ff));

    set(&mut e, 0x80, 0x80, 0, 0x7fff);
    assert_eq!(e.get("zext_o"), b(0x0080));
    assert_eq!(e.get_int("sext_o"), BigInt::from(-128));
    assert_eq!(e.get("sext65_o"), ones(65) - 127u32, "-128 in 65 bits");
    assert_eq!(e.get("sext1_o"), b(0));
    assert_eq!(e.get_int("exts_o"), BigInt::from(-128));
    assert_eq!(e.get_int("trs_o"), BigInt::from(-1));
    assert_eq!(e.get("trs1_o"), b(1));
    assert_eq!(e.get_int("asigned_o"), BigInt::from(-128));

    set(&mut e, 0x7f, 0x7f, 0, 0);
    assert_eq!(e.get("sext_o"), b(0x007f));
    assert_eq!(e.get("sext65_o"), b(0x7f));
    assert_eq!(e.get("sxu_o"), b(0x007f));
}

#[test]
fn mux_selects_by_one_bit() {
    let def = module("mux", |m| {
        let s = m.input("sel_i", Ty::BOOL);
        let a = m.input("a_i", Ty::s(65));
        let c = m.input("b_i", Ty::s(65));
        m.output("y_o", mux(s, a, c));
        m.output("z_o", s.select(c, a));
        // The bitwise form gives the same values and types, signed or not.
        let bitwise = mux_bitwise(s, a, c);
        assert_eq!(bitwise.ty(), Ty::s(65));
        m.output("w_o", bitwise);
        m.output("v_o", mux_bitwise(s, a.as_unsigned(), c.as_unsigned()));
    });
    let mut e = evaluator(&def);
    let (x, y) = (p2(64), b(5));
    let ports = ["y_o", "z_o", "w_o", "v_o"];
    let got = run(
        &mut e,
        &[("sel_i", &b(1)), ("a_i", &x), ("b_i", &y)],
        &ports,
    );
    assert_eq!(got, vec![x.clone(), y.clone(), x.clone(), x.clone()]);
    let got = run(&mut e, &[("sel_i", &b(0))], &ports);
    assert_eq!(got, vec![y.clone(), x, y.clone(), y]);
}

#[test]
fn inputs_are_masked_or_wrapped_to_their_width() {
    let def = module("pass", |m| {
        let a = m.input("a_i", Ty::u(8));
        m.output("y_o", a);
    });
    let mut e = evaluator(&def);
    e.set("a_i", &b(0x1ff));
    e.eval();
    assert_eq!(e.get("y_o"), b(0xff));
    e.set_int("a_i", -1);
    e.eval();
    assert_eq!(e.get("y_o"), b(0xff));
}

// ---------------------------------------------------------------------------
// Registers.

#[test]
fn reset_wins_over_enable_and_enable_holds() {
    let def = module("regs", |m| {
        let d = m.input("d_i", Ty::s(8));
        let en = m.input("en_i", Ty::BOOL);
        let r = m.reg_reset("r", Ty::s(8), -128);
        m.set_next(r, d);
        m.set_enable(r, en);
        m.output("q_o", r.q());
        // No reset, no enable: loads every cycle and ignores rst_i.
        let p = m.reg("p", Ty::s(8));
        m.set_next(p, d);
        m.output("p_o", p.q());
        // No reset, with enable.
        let h = m.reg("h", Ty::s(8));
        m.set_next(h, d);
        m.set_enable(h, en);
        m.output("h_o", h.q());
        // Reset, no enable.
        let c = m.reg_reset("c", Ty::u(8), 0x5a);
        m.set_next(c, c.q() + 1);
        m.output("c_o", c.q());
    });
    assert!(def.has_clock && def.has_reset);
    let mut e = evaluator(&def);
    assert!(e.input_names().contains(&"rst_i".to_string()));
    // (rst, en, d) -> (q, p, h, c) after the edge.
    type Step = ((u8, u8, i128), (i128, i128, i128, i128));
    let steps: &[Step] = &[
        ((1, 1, 7), (-128, 7, 7, 0x5a)),
        ((0, 0, 9), (-128, 9, 7, 0x5b)),
        ((0, 1, 9), (9, 9, 9, 0x5c)),
        ((0, 1, -3), (-3, -3, -3, 0x5d)),
        ((1, 0, 4), (-128, 4, -3, 0x5a)),
        ((1, 1, 5), (-128, 5, 5, 0x5a)),
        ((0, 0, 6), (-128, 6, 5, 0x5b)),
    ];
    for (i, ((rst, en, d), (q, p, h, c))) in steps.iter().enumerate() {
        e.set_int("rst_i", *rst as i128);
        e.set_int("en_i", *en as i128);
        e.set_int("d_i", *d);
        let before = e.get_int("q_o");
        e.eval();
        assert_eq!(
            e.get_int("q_o"),
            before,
            "registers change only at the edge"
        );
        e.step();
        let got = [
            e.get_int("q_o"),
            e.get_int("p_o"),
            e.get_int("h_o"),
            e.get_int("c_o"),
        ];
        let want = [*q, *p, *h, *c].map(BigInt::from);
        assert_eq!(got, want, "step {i}: rst={rst} en={en} d={d}");
    }
    assert_eq!(e.cycle(), steps.len() as u64);
}

#[test]
fn a_module_with_only_unreset_registers_has_no_reset_input() {
    let def = module("noreset", |m| {
        let d = m.input("d_i", Ty::u(65));
        let r = m.reg("r", Ty::u(65));
        m.set_next(r, d);
        m.output("q_o", r.q());
    });
    assert!(def.has_clock && !def.has_reset);
    let mut e = evaluator(&def);
    assert_eq!(e.input_names(), vec!["d_i".to_string()]);
    e.set("d_i", &ones(65));
    e.step();
    assert_eq!(e.get("q_o"), ones(65));
    e.set("d_i", &p2(64));
    e.eval();
    assert_eq!(e.get("q_o"), ones(65));
    e.step();
    assert_eq!(e.get("q_o"), p2(64));
}

#[test]
fn registers_swap_simultaneously() {
    // a <= b, b <= a: both take the other's old value at the same edge.
    let def = module("swap", |m| {
        let a = m.reg_reset("a", Ty::u(8), 1);
        let c = m.reg_reset("c", Ty::u(8), 2);
        m.set_next(a, c.q());
        m.set_next(c, a.q());
        m.output("a_o", a.q());
        m.output("c_o", c.q());
    });
    let mut e = evaluator(&def);
    e.set_int("rst_i", 1);
    e.step();
    e.set_int("rst_i", 0);
    assert_eq!((e.get("a_o"), e.get("c_o")), (b(1), b(2)));
    e.step();
    assert_eq!((e.get("a_o"), e.get("c_o")), (b(2), b(1)));
    e.step();
    assert_eq!((e.get("a_o"), e.get("c_o")), (b(1), b(2)));
}

// ---------------------------------------------------------------------------
// Memories.

/// A memory of s8 words with 4-bit addresses, two write ports, a read port
/// without enable (`q0`) and one with (`q1`).
fn memory_module() -> Rc<ModuleDef> {
    module("memtest", |m| {
        let mem = m.memory("mem", Ty::s(8), 4);
        for k in 0..2 {
            let we = m.input(&format!("we{k}_i"), Ty::BOOL);
            let wa = m.input(&format!("wa{k}_i"), Ty::u(4));
            let wd = m.input(&format!("wd{k}_i"), Ty::s(8));
            m.mem_write(mem, we, wa, wd);
        }
        let ra0 = m.input("ra0_i", Ty::u(4));
        let q0 = m.mem_read(mem, None, ra0);
        m.output("q0_o", q0);
        let re1 = m.input("re1_i", Ty::BOOL);
        let ra1 = m.input("ra1_i", Ty::u(4));
        let q1 = m.mem_read(mem, Some(re1), ra1);
        m.output("q1_o", q1);
    })
}

struct MemCycle {
    we: [u8; 2],
    wa: [u8; 2],
    wd: [i128; 2],
    ra0: u8,
    re1: u8,
    ra1: u8,
}

fn mem_cycle(e: &mut Evaluator, c: MemCycle) -> (i128, i128) {
    for k in 0..2 {
        e.set_int(&format!("we{k}_i"), c.we[k] as i128);
        e.set_int(&format!("wa{k}_i"), c.wa[k] as i128);
        e.set_int(&format!("wd{k}_i"), c.wd[k]);
    }
    e.set_int("ra0_i", c.ra0 as i128);
    e.set_int("re1_i", c.re1 as i128);
    e.set_int("ra1_i", c.ra1 as i128);
    e.step();
    let q0 = e.get_int("q0_o").try_into().unwrap();
    let q1 = e.get_int("q1_o").try_into().unwrap();
    (q0, q1)
}

fn write(port: usize, addr: u8, data: i128) -> MemCycle {
    let mut c = MemCycle {
        we: [0; 2],
        wa: [0; 2],
        wd: [0; 2],
        ra0: 0,
        re1: 0,
        ra1: 0,
    };
    c.we[port] = 1;
    c.wa[port] = addr;
    c.wd[port] = data;
    c
}

#[test]
fn memory_read_during_write_returns_the_old_value() {
    let def = memory_module();
    assert!(def.has_clock && !def.has_reset);
    let mut e = evaluator(&def);
    mem_cycle(&mut e, write(0, 3, 0x11));
    // Write 0x22 to 3 while both ports read 3: both see the old 0x11.
    let mut c = write(0, 3, 0x22);
    c.ra0 = 3;
    c.re1 = 1;
    c.ra1 = 3;
    assert_eq!(mem_cycle(&mut e, c), (0x11, 0x11));
    // The next read sees the new value.
    let mut c = write(1, 4, -1);
    c.ra0 = 3;
    c.re1 = 1;
    c.ra1 = 4;
    assert_eq!(
        mem_cycle(&mut e, c),
        (0x22, 0),
        "address 4 was never written"
    );
    let mut c = write(0, 0, 0);
    c.we = [0, 0];
    c.ra0 = 4;
    assert_eq!(
        mem_cycle(&mut e, c),
        (-1, 0),
        "signed words read back signed"
    );
}

#[test]
fn memory_later_write_port_wins() {
    let def = memory_module();
    let mut e = evaluator(&def);
    let mut c = write(0, 5, 0x0a);
    c.we = [1, 1];
    c.wa = [5, 5];
    c.wd = [0x0a, 0x0b];
    mem_cycle(&mut e, c);
    let mut c = write(0, 6, 0x0c);
    c.ra0 = 5;
    assert_eq!(
        mem_cycle(&mut e, c).0,
        0x0b,
        "port 1 is written after port 0"
    );
    // Different addresses in one cycle both land.
    let mut c = write(0, 7, 0x17);
    c.we = [1, 1];
    c.wa = [7, 8];
    c.wd = [0x17, 0x18];
    mem_cycle(&mut e, c);
    let mut c = write(0, 0, 0);
    c.we = [0, 0];
    c.ra0 = 7;
    c.re1 = 1;
    c.ra1 = 8;
    assert_eq!(mem_cycle(&mut e, c), (0x17, 0x18));
    let mut c = write(0, 0, 0);
    c.we = [0, 0];
    c.ra0 = 6;
    assert_eq!(mem_cycle(&mut e, c).0, 0x0c);
}

#[test]
fn memory_read_enable_holds_the_data() {
    let def = memory_module();
    let mut e = evaluator(&def);
    mem_cycle(&mut e, write(0, 1, 0x31));
    mem_cycle(&mut e, write(0, 2, 0x32));
    let mut c = write(0, 0, 0);
    c.we = [0, 0];
    c.re1 = 1;
    c.ra1 = 1;
    assert_eq!(mem_cycle(&mut e, c).1, 0x31);
    // Enable low: new address, and the word under the old address changes;
    // the port still shows what it read.
    let mut c = write(0, 1, 0x41);
    c.re1 = 0;
    c.ra1 = 2;
    assert_eq!(mem_cycle(&mut e, c).1, 0x31);
    let mut c = write(0, 0, 0);
    c.we = [0, 0];
    c.re1 = 0;
    c.ra1 = 2;
    assert_eq!(mem_cycle(&mut e, c).1, 0x31);
    // Read data is registered: a new address shows only after the edge.
    e.set_int("re1_i", 1);
    e.set_int("ra1_i", 2);
    e.eval();
    assert_eq!(e.get_int("q1_o"), BigInt::from(0x31));
    e.step();
    assert_eq!(e.get_int("q1_o"), BigInt::from(0x32));
    e.set_int("ra1_i", 1);
    e.step();
    assert_eq!(e.get_int("q1_o"), BigInt::from(0x41));
}

#[test]
fn wide_and_one_bit_memories() {
    let def = module("memwide", |m| {
        let wide = m.memory("wide", Ty::u(70), 1);
        let bits = m.memory("bits", Ty::u(1), 3);
        let we = m.input("we_i", Ty::BOOL);
        let a = m.input("a_i", Ty::u(3));
        let d = m.input("d_i", Ty::u(70));
        m.mem_write(wide, we, a.bit(0), d);
        m.mem_write(bits, we, a, d.bit(69));
        let qw = m.mem_read(wide, None, a.bit(0));
        let qb = m.mem_read(bits, None, a);
        m.output("qw_o", qw);
        m.output("qb_o", qb);
    });
    let mut e = evaluator(&def);
    let d = p2(69) + 1u32;
    e.set_int("we_i", 1);
    e.set_int("a_i", 5);
    e.set("d_i", &d);
    e.step();
    e.set_int("we_i", 0);
    e.step();
    assert_eq!(e.get("qw_o"), d);
    assert_eq!(e.get("qb_o"), b(1));
    e.set_int("a_i", 4);
    e.step();
    assert_eq!(e.get("qw_o"), b(0), "address 0 of the 2-word memory");
    assert_eq!(e.get("qb_o"), b(0));
}

// ---------------------------------------------------------------------------
// Hierarchy.

#[test]
fn instances_pass_values_through_the_hierarchy() {
    let mut d = Design::new();
    let leaf = d.define("leaf", &[], |_, m| {
        let a = m.input("a_i", Ty::s(8));
        let r = m.reg_reset("r", Ty::s(8), 0);
        m.set_next(r, a);
        m.output("y_o", a + 1);
        m.output("q_o", r.q());
    });
    let mid = d.define("mid", &[], |_, m| {
        let a = m.input("a_i", Ty::s(8));
        let u0 = m.instance("u0", &leaf);
        m.connect(u0, "a_i", a);
        let y0 = m.inst_output(u0, "y_o");
        let u1 = m.instance("u1", &leaf);
        m.connect(u1, "a_i", y0);
        let (y, q) = (m.inst_output(u1, "y_o"), m.inst_output(u1, "q_o"));
        m.output("y_o", y);
        m.output("q_o", q);
    });
    let top = d.define("top", &[], |_, m| {
        let a = m.input("a_i", Ty::s(8));
        let u = m.instance("u", &mid);
        m.connect(u, "a_i", a);
        let (y, q) = (m.inst_output(u, "y_o"), m.inst_output(u, "q_o"));
        m.output("y_o", y);
        m.output("q_o", q);
    });
    assert!(
        top.has_clock && top.has_reset,
        "clock and reset come up from the leaves"
    );
    let mut e = evaluator(&top);
    e.set_int("rst_i", 1);
    e.set_int("a_i", 126);
    e.step();
    assert_eq!(e.get_int("y_o"), BigInt::from(-128), "126 + 1 + 1 wraps");
    assert_eq!(e.get_int("q_o"), BigInt::from(0));
    e.set_int("rst_i", 0);
    e.step();
    assert_eq!(
        e.get_int("q_o"),
        BigInt::from(127),
        "the second leaf registers 126 + 1"
    );
}

/// A combinational cell `y_o = x_i + k`, the same type in and out.
fn adder_cell(d: &mut Design, k: i64) -> Rc<ModuleDef> {
    d.define("adder_cell", &[("k", k.to_string())], |_, m| {
        let x = m.input("x_i", Ty::u(8));
        m.output("y_o", x + k);
    })
}

#[test]
fn a_combinational_chain_through_a_bus_is_not_a_loop() {
    let mut d = Design::new();
    let cell = adder_cell(&mut d, 3);
    let top = d.define("chain_top", &[], |_, m| {
        let a = m.input("a_i", Ty::u(8));
        let bus = m.bus("chain", Ty::u(8), &[8]);
        // Forward chain: elements 0 -> 1 -> 2 -> 3.
        m.bus_drive(bus, &[0], a);
        let fwd = m.instance_array("fwd", &cell, &[("i", 3)]);
        m.array_connect(fwd, "x_i", bus, &[fwd.var(0)]);
        m.array_connect(fwd, "y_o", bus, &[fwd.var(0) + 1]);
        // The parent reads element 3 and drives element 7 from it; a backward
        // chain runs 7 -> 6 -> 5 -> 4 through the same bus. A bus-level view
        // would see bus -> parent -> bus as a loop; elements do not.
        let e3 = m.bus_read(bus, &[3]);
        m.bus_drive(bus, &[7], e3 ^ 0x80u32);
        let bwd = m.instance_array("bwd", &cell, &[("j", 3)]);
        // Instance j reads element 7 - j and drives 6 - j: negative coefficients.
        m.array_connect(bwd, "x_i", bus, &[bwd.var(0) * -1 + 7]);
        m.array_connect(bwd, "y_o", bus, &[bwd.var(0) * -1 + 6]);
        m.output("mid_o", e3);
        let (end, first) = (m.bus_read(bus, &[4]), m.bus_read(bus, &[0]));
        m.output("end_o", end);
        m.output("all_o", first);
    });
    assert_eq!(
        d.modules().len(),
        2,
        "one cell definition for six instances"
    );
    let mut e = evaluator(&top);
    e.set_int("a_i", 10);
    e.eval();
    assert_eq!(e.get("mid_o"), b(19));
    assert_eq!(e.get("end_o"), b(19 + 0x80 + 9));
    e.set_int("a_i", 250);
    e.eval();
    assert_eq!(e.get("mid_o"), b(3), "250 + 9 wraps to 3");
    assert_eq!(e.get("end_o"), b(0x83 + 9));
    assert_eq!(e.get("all_o"), b(250));
}

#[test]
fn a_two_dimensional_array_joined_by_buses() {
    // Each cell passes `x + 1` east (combinationally) and registers `x + n`
    // south; rows and columns read their bus elements by (row, column).
    let mut d = Design::new();
    let cell = d.define("grid_cell", &[], |_, m| {
        let x = m.input("x_i", Ty::u(8));
        let n = m.input("n_i", Ty::u(8));
        let k = m.input("k_i", Ty::u(8));
        m.output("x_o", x + 1);
        let r = m.reg_reset("r", Ty::u(8), 0);
        m.set_next(r, x + n + k);
        m.output("s_o", r.q());
    });
    let (rows, cols) = (2u32, 3u32);
    let top = d.define("grid_top", &[], |_, m| {
        let k = m.input("k_i", Ty::u(8));
        let xs = m.bus("xs", Ty::u(8), &[rows, cols + 1]);
        let ns = m.bus("ns", Ty::u(8), &[rows + 1, cols]);
        for r in 0..rows {
            let v = m.lit(Ty::u(8), 10 * r as i64);
            m.bus_drive(xs, &[r, 0], v);
        }
        for c in 0..cols {
            let v = m.lit(Ty::u(8), 100 + c as i64);
            m.bus_drive(ns, &[0, c], v);
        }
        let g = m.instance_array("g", &cell, &[("r", rows), ("c", cols)]);
        m.array_connect(g, "x_i", xs, &[g.var(0), g.var(1)]);
        m.array_connect(g, "x_o", xs, &[g.var(0), g.var(1) + 1]);
        m.array_connect(g, "n_i", ns, &[g.var(0), g.var(1)]);
        m.array_connect(g, "s_o", ns, &[g.var(0) + 1, g.var(1)]);
        m.array_broadcast(g, "k_i", k + 0u32);
        for r in 0..rows {
            let v = m.bus_read(xs, &[r, cols]);
            m.output(&format!("e{r}_o"), v);
        }
        for c in 0..cols {
            let v = m.bus_read(ns, &[rows, c]);
            m.output(&format!("s{c}_o"), v);
        }
    });
    let mut e = evaluator(&top);
    e.set_int("rst_i", 1);
    e.set_int("k_i", 1);
    e.step();
    e.set_int("rst_i", 0);
    assert_eq!(e.get("e0_o"), b(3));
    assert_eq!(e.get("e1_o"), b(13));
    // Row 0, column c registers x = c (0 + c) plus n = 100 + c plus k = 1;
    // row 1 then adds its own x = 10 + c to that and k again.
    e.step();
    e.step();
    for c in 0..cols as u128 {
        let row0 = c + 100 + c + 1;
        assert_eq!(
            e.get(&format!("s{c}_o")),
            b(10 + c + row0 + 1),
            "column {c}"
        );
    }
}

#[test]
fn a_loop_through_instances_is_reported() {
    let mut d = Design::new();
    let inc = d.define("inc", &[], |_, m| {
        let a = m.input("a_i", Ty::u(4));
        m.output("y_o", a + 1);
    });
    let pass = d.define("pass", &[], |_, m| {
        let a = m.input("a_i", Ty::u(4));
        m.output("y_o", a);
    });
    // Through an operation in one child.
    let top = d.define("loop_top", &[], |_, m| {
        let w = m.wire_decl("w", Ty::u(4));
        let u = m.instance("u", &inc);
        m.connect(u, "a_i", w.value());
        let y = m.inst_output(u, "y_o");
        m.drive(w, y);
        m.output("y_o", y);
    });
    let err = Evaluator::new(&top).err().expect("a loop must be an error");
    assert!(err.contains("combinational loop"), "{err}");
    // Through plain connections of two children, without any operation.
    let top = d.define("alias_loop_top", &[], |_, m| {
        let u = m.instance("u", &pass);
        let v = m.instance("v", &pass);
        let yu = m.inst_output(u, "y_o");
        let yv = m.inst_output(v, "y_o");
        m.connect(u, "a_i", yv);
        m.connect(v, "a_i", yu);
        m.output("y_o", yu);
    });
    let err = Evaluator::new(&top).err().expect("a loop must be an error");
    assert!(err.contains("loop"), "{err}");
    // Through an instance array and a bus that wraps around.
    let top = d.define("ring_top", &[], |_, m| {
        let bus = m.bus("ring", Ty::u(4), &[4]);
        let arr = m.instance_array("cells", &inc, &[("i", 3)]);
        m.array_connect(arr, "a_i", bus, &[arr.var(0)]);
        m.array_connect(arr, "y_o", bus, &[arr.var(0) + 1]);
        let last = m.bus_read(bus, &[3]);
        m.bus_drive(bus, &[0], last);
        m.output("y_o", last);
    });
    let err = Evaluator::new(&top).err().expect("a loop must be an error");
    assert!(err.contains("loop"), "{err}");
    // The same ring broken by a register is fine.
    let top = d.define("ring_reg_top", &[], |_, m| {
        let bus = m.bus("ring", Ty::u(4), &[4]);
        let arr = m.instance_array("cells", &inc, &[("i", 3)]);
        m.array_connect(arr, "a_i", bus, &[arr.var(0)]);
        m.array_connect(arr, "y_o", bus, &[arr.var(0) + 1]);
        let r = m.reg_reset("r", Ty::u(4), 0);
        let last = m.bus_read(bus, &[3]);
        m.set_next(r, last);
        m.bus_drive(bus, &[0], r.q());
        m.output("y_o", r.q());
    });
    let mut e = evaluator(&top);
    e.set_int("rst_i", 1);
    e.step();
    e.set_int("rst_i", 0);
    for k in 1..=6u128 {
        e.step();
        assert_eq!(e.get("y_o"), b((3 * k) % 16));
    }
}

// ---------------------------------------------------------------------------
// Delay lines.

#[test]
fn delay_lines_of_depth_0_1_and_3() {
    let top = module("delays", |m| {
        let a = m.input("a_i", Ty::s(8));
        let d0 = delay(m, "d0", a, 0, None);
        assert_eq!(d0, a, "depth 0 is the value itself");
        m.output("d0_o", d0);
        let d1 = delay(m, "d1", a, 1, None);
        assert_eq!(d1.ty(), Ty::s(8), "the delayed value keeps its type");
        m.output("d1_o", d1);
        let d3 = delay(m, "d3", a, 3, None);
        m.output("d3_o", d3);
        let r1 = delay(m, "r1", a, 1, Some(-2));
        m.output("r1_o", r1);
        let r3 = delay(m, "r3", a, 3, Some(-2));
        m.output("r3_o", r3);
        let b3 = delay(m, "b3", a.bit(0), 3, Some(1));
        m.output("b3_o", b3);
    });
    let mut e = evaluator(&top);
    let outs = ["d0_o", "d1_o", "d3_o", "r1_o", "r3_o", "b3_o"];
    // Cycle 0 resets; inputs 10, 11, 12, ... from cycle 0 on.
    let mut seen: Vec<Vec<i128>> = Vec::new();
    for c in 0..7i128 {
        e.set_int("rst_i", (c == 0) as i128);
        e.set_int("a_i", 10 + c);
        e.eval();
        seen.push(
            outs.iter()
                .map(|o| e.get_int(o).try_into().unwrap())
                .collect(),
        );
        e.step();
    }
    // Unreset stages start at zero in the evaluator (X in Verilog): compare
    // only from the cycle they have been filled.
    for (c, row) in seen.iter().enumerate() {
        let c = c as i128;
        assert_eq!(row[0], 10 + c, "d0 in cycle {c}");
        if c >= 1 {
            assert_eq!(row[1], 10 + c - 1, "d1 in cycle {c}");
            // Reset in cycle 0 sets all stages; the value of cycle 0 is lost.
            let r1 = if c == 1 { -2 } else { 10 + c - 1 };
            assert_eq!(row[3], r1, "r1 in cycle {c}");
        }
        if c >= 3 {
            assert_eq!(row[2], 10 + c - 3, "d3 in cycle {c}");
        }
        let r3 = if (1..=3).contains(&c) { -2 } else { 10 + c - 3 };
        if c >= 1 {
            assert_eq!(row[4], r3, "r3 in cycle {c}");
            let b3 = if c <= 3 { 1 } else { (10 + c - 3) & 1 };
            assert_eq!(row[5], b3, "b3 in cycle {c}");
        }
    }
}

#[test]
fn registered_is_the_value_a_cycle_later_under_the_given_name() {
    let top = module("registered", |m| {
        let a = m.input("a_i", Ty::s(8));
        let r = m.registered("late", a);
        assert_eq!(r.ty(), Ty::s(8), "the register has the value's type");
        m.output("late_o", r);
    });
    assert!(
        top.signals
            .iter()
            .any(|s| s.name == "late" && matches!(s.kind, hw::ir::SigKind::Reg { .. })),
        "a register named as asked"
    );
    let mut e = evaluator(&top);
    let mut seen = Vec::new();
    for c in 0..5i128 {
        e.set_int("a_i", c - 2);
        e.eval();
        seen.push(i128::try_from(e.get_int("late_o")).unwrap());
        e.step();
    }
    // No reset: compare from the cycle the register has been loaded.
    assert_eq!(seen[1..], [-2, -1, 0, 1]);
}

#[test]
fn a_signed_value_read_through_an_unsigned_bus_element_compares_unsigned() {
    // The bus holds s1 elements driven by a child's s1 output; the parent
    // reads element 1 as u1 (the raw slice). The comparison must follow the
    // IR's operand type (unsigned), not the driver's (signed): 1 > 0.
    let mut design = Design::new();
    let child = design.define("pass_s1", &[], |_, m| {
        let x = m.input("x_i", Ty::s(1));
        m.output("y_o", x);
    });
    let top = design.define("bus_cmp", &[], |_, m| {
        let a = m.input("a_i", Ty::s(1));
        let bus = m.bus("b", Ty::s(1), &[2]);
        m.bus_drive(bus, &[0], a);
        let arr = m.instance_array("u", &child, &[("i", 1)]);
        m.array_connect(arr, "x_i", bus, &[arr.var(0)]);
        m.array_connect(arr, "y_o", bus, &[arr.var(0) + 1]);
        let raw = m.bus_read(bus, &[1]).as_unsigned();
        m.output("gt_o", raw.is_gt(raw.lit(0)));
        m.output("le_o", raw.is_le(raw.lit(0)));
    });
    let mut e = evaluator(&top);
    let out = run(&mut e, &[("a_i", &b(1))], &["gt_o", "le_o"]);
    assert_eq!(out, [b(1), b(0)]);
    let out = run(&mut e, &[("a_i", &b(0))], &["gt_o", "le_o"]);
    assert_eq!(out, [b(0), b(1)]);
}

#[test]
fn reverse_bits_mirrors_the_value() {
    let def = module("rev", |m| {
        let x = m.input("x_i", Ty::s(5));
        let y = x.reverse_bits();
        assert_eq!(y.ty(), Ty::u(5), "unsigned, as wide as the value");
        m.output("y_o", y);
    });
    let mut e = evaluator(&def);
    for (x, y) in [
        (0b00001, 0b10000),
        (0b10110, 0b01101),
        (0b11111, 0b11111),
        (0, 0),
    ] {
        assert_eq!(run(&mut e, &[("x_i", &b(x))], &["y_o"]), [b(y)], "{x:05b}");
    }
}

//! Integer constants where the other side of an operation gives the type:
//! the arms of `mux` and `select`, `set_next`, `drive`, comparisons. A
//! constant is the same value as `lit` of that type, and one that does not
//! fit stops elaboration at the caller's line.

use hw::*;

mod common;
use common::{elab_error, evaluator, get, line_below, module, set};

/// A mux, a select, a driven wire and a comparison, each given its constant
/// either as a literal (`literal`) or through `lit` (the form literals
/// replace), on the type `ty`, with the constants `k` and `j`.
fn constants(ty: Ty, literal: bool, k: i64, j: i64) -> ModuleDef {
    let mut m = ModuleBuilder::new("constants");
    let c = m.input("c_i", Ty::BOOL);
    let x = m.input("x_i", ty);
    let w = m.wire_decl("w", ty);
    if literal {
        m.output("mux_o", mux(c, x, k));
        m.output("mux_first_o", mux(c, k, x));
        m.output("select_o", c.select(j, x));
        m.output("bitwise_o", mux_bitwise(c, x, k));
        m.drive(w, j);
        m.output("eq_o", x.is_eq(k));
    } else {
        m.output("mux_o", mux(c, x, m.lit(ty, k)));
        m.output("mux_first_o", mux(c, m.lit(ty, k), x));
        m.output("select_o", c.select(m.lit(ty, j), x));
        m.output("bitwise_o", mux_bitwise(c, x, m.lit(ty, k)));
        m.drive(w, m.lit(ty, j));
        m.output("eq_o", x.is_eq(m.lit(ty, k)));
    }
    m.output("w_o", w.value());
    m.finish()
}

#[test]
fn a_literal_is_the_constant_of_the_other_operands_type() {
    for (ty, k, j) in [
        (Ty::u(8), 0, 255),
        (Ty::u(3), 7, 1),
        (Ty::s(8), -1, 127),
        (Ty::s(8), -128, -7),
        (Ty::BOOL, 1, 0),
    ] {
        // The same IR as the `lit` form: the same Verilog.
        let header = Header::default();
        let with_literals = emit_module(&constants(ty, true, k, j), &header);
        let with_lit = emit_module(&constants(ty, false, k, j), &header);
        assert_eq!(with_literals, with_lit, "{ty} {k} {j}");
    }
}

#[test]
fn literals_evaluate_to_their_bit_patterns() {
    // s8: -128 is 0x80, -7 is 0xf9.
    let def = constants(Ty::s(8), true, -128, -7);
    let mut e = evaluator(&def);
    set(&mut e, "x_i", 0x05);
    set(&mut e, "c_i", 1);
    e.eval();
    assert_eq!(get(&e, "mux_o"), 0x05);
    assert_eq!(get(&e, "mux_first_o"), 0x80);
    assert_eq!(get(&e, "select_o"), 0xf9);
    assert_eq!(get(&e, "bitwise_o"), 0x05);
    assert_eq!(get(&e, "w_o"), 0xf9);
    assert_eq!(get(&e, "eq_o"), 0);
    set(&mut e, "c_i", 0);
    set(&mut e, "x_i", 0x80);
    e.eval();
    assert_eq!(get(&e, "mux_o"), 0x80);
    assert_eq!(get(&e, "mux_first_o"), 0x80);
    assert_eq!(get(&e, "select_o"), 0x80);
    assert_eq!(get(&e, "bitwise_o"), 0x80);
    assert_eq!(get(&e, "eq_o"), 1);
}

#[test]
fn a_register_takes_a_literal_next_value() {
    let def = module("count_down", |m| {
        let go = m.input("go_i", Ty::BOOL);
        let r = m.reg_reset("r", Ty::s(4), 0);
        m.set_next(r, mux(go, r.q() - 1, -8));
        m.output("r_o", r.q());
    });
    let mut e = evaluator(&def);
    set(&mut e, "go_i", 0);
    e.eval();
    e.step();
    assert_eq!(get(&e, "r_o"), 0x8);
    set(&mut e, "go_i", 1);
    e.eval();
    e.step();
    assert_eq!(get(&e, "r_o"), 0x7);

    let def = module("load", |m| {
        let r = m.reg("r", Ty::u(4));
        m.set_next(r, 9);
        m.output("r_o", r.q());
    });
    let mut e = evaluator(&def);
    e.eval();
    e.step();
    assert_eq!(get(&e, "r_o"), 9);
}

/// Each call puts a constant that does not fit next to a value of type
/// `u4` or `s4`; the error names the line of the call.
#[test]
fn a_literal_that_does_not_fit_is_an_error_at_the_callers_line() {
    type Case = (&'static str, Box<dyn Fn(&mut ModuleBuilder) -> String>);
    let cases: Vec<Case> = vec![
        (
            "constant 16 does not fit in u4",
            Box::new(|m| {
                let (c, x) = (m.input("c_i", Ty::BOOL), m.input("x_i", Ty::u(4)));
                let here = line_below(1);
                let _ = mux(c, x, 16);
                here
            }),
        ),
        (
            "constant -1 does not fit in u4",
            Box::new(|m| {
                let (c, x) = (m.input("c_i", Ty::BOOL), m.input("x_i", Ty::u(4)));
                let here = line_below(1);
                let _ = c.select(-1, x);
                here
            }),
        ),
        (
            "constant 8 does not fit in s4",
            Box::new(|m| {
                let (c, x) = (m.input("c_i", Ty::BOOL), m.input("x_i", Ty::s(4)));
                let here = line_below(1);
                let _ = mux_bitwise(c, x, 8);
                here
            }),
        ),
        (
            "constant -9 does not fit in s4",
            Box::new(|m| {
                let x = m.input("x_i", Ty::s(4));
                let here = line_below(1);
                let _ = x.is_lt(-9);
                here
            }),
        ),
        (
            "constant 16 does not fit in u4",
            Box::new(|m| {
                let r = m.reg("r", Ty::u(4));
                let here = line_below(1);
                m.set_next(r, 16);
                here
            }),
        ),
        (
            "constant 200 does not fit in s4",
            Box::new(|m| {
                let w = m.wire_decl("w", Ty::s(4));
                let here = line_below(1);
                m.drive(w, 200);
                here
            }),
        ),
    ];
    for (what, f) in cases {
        let mut here = String::new();
        let msg = elab_error(|| {
            let mut m = ModuleBuilder::new("t");
            here = f(&mut m);
        });
        assert!(msg.starts_with(ELAB_ERROR_PREFIX), "{msg}");
        assert!(msg.contains(what), "expected '{what}' in '{msg}'");
        assert!(msg.contains(&here), "'{msg}' should name {here}");
    }
}

#[test]
fn the_extremes_of_a_signed_type_fit_and_one_past_them_does_not() {
    let ok = catch_elab(|| {
        let mut m = ModuleBuilder::new("t");
        let c = m.input("c_i", Ty::BOOL);
        let x = m.input("x_i", Ty::s(8));
        let _ = mux(c, x, -128);
        let _ = mux(c, 127, x);
    });
    assert!(ok.is_ok());
    for k in [-129, 128] {
        let msg = elab_error(|| {
            let mut m = ModuleBuilder::new("t");
            let c = m.input("c_i", Ty::BOOL);
            let x = m.input("x_i", Ty::s(8));
            let _ = mux(c, x, k);
        });
        assert!(
            msg.contains(&format!("constant {k} does not fit in s8")),
            "{msg}"
        );
    }
}

#[test]
fn a_mux_of_two_constants_has_no_type() {
    let mut here = String::new();
    let msg = elab_error(|| {
        let mut m = ModuleBuilder::new("t");
        let c = m.input("c_i", Ty::BOOL);
        here = line_below(1);
        let _ = mux(c, 1, 0);
    });
    assert!(msg.contains("mux of two constants"), "{msg}");
    assert!(msg.contains(&here), "'{msg}' should name {here}");
}

//! Every width or signedness mistake stops elaboration with a message that
//! names the generator's own source line.

use hw::*;

/// Runs `f` inside a fresh module builder and returns the elaboration error.
fn error_of(f: impl FnOnce(&mut ModuleBuilder)) -> String {
    quiet_elab_errors();
    let r = catch_elab(|| {
        let mut m = ModuleBuilder::new("t");
        f(&mut m);
        m.finish()
    });
    match r {
        Ok(_) => panic!("expected an elaboration error"),
        Err(e) => e.message,
    }
}

/// The message names this test file and the line of the offending call.
fn assert_points_here(msg: &str, line: u32) {
    let expected = format!("{}:{line}:", file!());
    assert!(msg.contains(&expected), "'{msg}' should name {expected}");
    assert!(msg.starts_with(ELAB_ERROR_PREFIX), "{msg}");
}

#[test]
fn adding_different_widths_names_the_callers_line() {
    let mut line = 0;
    let msg = error_of(|m| {
        let a = m.input("a_i", Ty::u(8));
        let b = m.input("b_i", Ty::u(9));
        line = line!() + 1;
        let _ = a + b;
    });
    assert_points_here(&msg, line);
    assert!(msg.contains("u8") && msg.contains("u9"), "{msg}");
}

#[test]
fn mixing_signedness_is_an_error() {
    let mut line = 0;
    let msg = error_of(|m| {
        let a = m.input("a_i", Ty::s(8));
        let b = m.input("b_i", Ty::u(8));
        line = line!() + 1;
        let _ = a.is_lt(b);
    });
    assert_points_here(&msg, line);
    let msg = error_of(|m| {
        let a = m.input("a_i", Ty::s(8));
        let b = m.input("b_i", Ty::u(8));
        let _ = a.mul_wide(b);
    });
    assert!(msg.contains("signedness"), "{msg}");
}

#[test]
fn a_full_product_narrower_than_its_operands_is_an_error() {
    let mut line = 0;
    let msg = error_of(|m| {
        let a = m.input("a_i", Ty::s(8));
        let b = m.input("b_i", Ty::s(8));
        line = line!() + 1;
        let _ = a.mul_wide_to(b, 15);
    });
    assert_points_here(&msg, line);
    assert!(msg.contains("needs 16 bits, not 15"), "{msg}");
}

#[test]
fn assigning_a_wider_value_is_an_error() {
    let mut line = 0;
    let msg = error_of(|m| {
        let a = m.input("a_i", Ty::u(9));
        let w = m.wire_decl("w", Ty::u(8));
        line = line!() + 1;
        m.drive(w, a);
    });
    assert_points_here(&msg, line);
    let msg = error_of(|m| {
        let a = m.input("a_i", Ty::u(9));
        let r = m.reg("r", Ty::u(8));
        m.set_next(r, a);
    });
    assert!(msg.contains("u8") && msg.contains("u9"), "{msg}");
}

#[test]
fn extensions_and_truncations_check_direction_and_signedness() {
    for (what, f) in [
        (
            "zext of signed",
            Box::new(|m: &mut ModuleBuilder| {
                let a = m.input("a_i", Ty::s(8));
                let _ = a.zext(16);
            }) as Box<dyn FnOnce(&mut ModuleBuilder)>,
        ),
        (
            "sext of unsigned",
            Box::new(|m: &mut ModuleBuilder| {
                let a = m.input("a_i", Ty::u(8));
                let _ = a.sext(16);
            }),
        ),
        (
            "cannot extend",
            Box::new(|m: &mut ModuleBuilder| {
                let a = m.input("a_i", Ty::u(8));
                let _ = a.zext(4);
            }),
        ),
        (
            "cannot truncate",
            Box::new(|m: &mut ModuleBuilder| {
                let a = m.input("a_i", Ty::u(8));
                let _ = a.trunc(9);
            }),
        ),
        (
            "outside",
            Box::new(|m: &mut ModuleBuilder| {
                let a = m.input("a_i", Ty::u(8));
                let _ = a.slice(4, 5);
            }),
        ),
    ] {
        let msg = error_of(f);
        assert!(msg.contains(what), "expected '{what}' in '{msg}'");
    }
}

#[test]
fn constants_must_fit_their_type() {
    let msg = error_of(|m| {
        let _ = m.lit(Ty::s(8), 128);
    });
    assert!(msg.contains("does not fit"), "{msg}");
    let msg = error_of(|m| {
        let _ = m.lit(Ty::u(8), -1);
    });
    assert!(msg.contains("does not fit"), "{msg}");
    let msg = error_of(|m| {
        let a = m.input("a_i", Ty::u(4));
        let _ = a + 16;
    });
    assert!(msg.contains("does not fit"), "{msg}");
    // The extremes fit.
    let ok = catch_elab(|| {
        let m = ModuleBuilder::new("t");
        let _ = m.lit(Ty::s(8), -128);
        let _ = m.lit(Ty::s(8), 127);
        let _ = m.lit(Ty::u(8), 255);
    });
    assert!(ok.is_ok());
}

#[test]
fn incomplete_modules_are_refused_at_finish() {
    let msg = error_of(|m| {
        let _ = m.wire_decl("w", Ty::u(8));
    });
    assert!(msg.contains("never driven"), "{msg}");
    let msg = error_of(|m| {
        let _ = m.reg("r", Ty::u(8));
    });
    assert!(msg.contains("no next value"), "{msg}");
    let msg = error_of(|m| {
        let a = m.input("a_i", Ty::u(8));
        let w = m.wire_decl("w", Ty::u(8));
        m.drive(w, a);
        m.drive(w, a);
    });
    assert!(msg.contains("already driven"), "{msg}");
    let msg = error_of(|m| {
        let a = m.input("a_i", Ty::u(8));
        let b = m.bus("b", Ty::u(8), &[2]);
        m.bus_drive(b, &[0], a);
    });
    assert!(msg.contains("no driver"), "{msg}");
    let msg = error_of(|m| {
        let a = m.input("a_i", Ty::u(8));
        let b = m.bus("b", Ty::u(8), &[1]);
        m.bus_drive(b, &[0], a);
        m.bus_drive(b, &[0], a);
    });
    assert!(msg.contains("several drivers"), "{msg}");
}

#[test]
fn combinational_loops_are_refused() {
    let msg = error_of(|m| {
        let w = m.wire_decl("w", Ty::u(8));
        let v = m.wire("v", w.value() + 1);
        m.drive(w, v);
    });
    assert!(msg.contains("combinational loop"), "{msg}");
}

#[test]
fn names_must_be_legal_unique_and_suffixed() {
    for (name, what) in [
        ("reg", "keyword"),
        ("logic", "keyword"),
        ("tmp3", "reserved"),
        ("2x", "start with a letter"),
    ] {
        let msg = error_of(|m| {
            let a = m.input("a_i", Ty::u(1));
            m.wire(name, a);
        });
        assert!(msg.contains(what), "{name}: {msg}");
    }
    let msg = error_of(|m| {
        let _ = m.input("a", Ty::u(1));
    });
    assert!(msg.contains("_i"), "{msg}");
    let msg = error_of(|m| {
        let a = m.input("a_i", Ty::u(1));
        m.output("y", a);
    });
    assert!(msg.contains("_o"), "{msg}");
    let msg = error_of(|m| {
        let a = m.input("a_i", Ty::u(1));
        m.wire("x", a);
        m.wire("x", a);
    });
    assert!(msg.contains("already used"), "{msg}");
    let msg = error_of(|m| {
        let a = m.input("a_i", Ty::u(1));
        let r = m.reg("x", Ty::u(1));
        m.set_next(r, a);
        m.wire("x_q", a);
    });
    assert!(msg.contains("already used"), "{msg}");
}

#[test]
fn values_cannot_cross_modules() {
    quiet_elab_errors();
    let r = catch_elab(|| {
        let mut outer = ModuleBuilder::new("outer");
        let a = outer.input("a_i", Ty::u(8));
        let mut inner = ModuleBuilder::new("inner");
        inner.output("y_o", a);
    });
    let msg = r.unwrap_err().message;
    assert!(msg.contains("used in module 'inner'"), "{msg}");
}

#[test]
fn bus_indices_are_checked_against_the_array_box() {
    quiet_elab_errors();
    let r = catch_elab(|| {
        let mut d = Design::new();
        let child = d.define("child", &[], |_, m| {
            let a = m.input("a_i", Ty::u(8));
            m.output("y_o", a);
        });
        d.define("parent", &[], |_, m| {
            let b = m.bus("b", Ty::u(8), &[4]);
            let arr = m.instance_array("c", &child, &[("i", 4)]);
            // i + 1 reaches 4: outside a 4-element bus.
            m.array_connect(arr, "y_o", b, &[arr.var(0) + 1]);
        });
    });
    let msg = r.unwrap_err().message;
    assert!(msg.contains("outside bus 'b'"), "{msg}");
}

#[test]
fn other_panics_are_not_swallowed() {
    let r = std::panic::catch_unwind(|| catch_elab(|| panic!("not an elaboration error")));
    assert!(r.is_err());
}

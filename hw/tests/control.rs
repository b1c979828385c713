//! Control in the builder: `if / elif / else`, `switch`, enums and FSMs.
//!
//! Each design is run in the evaluator and compared with the behaviour the
//! control statements describe, written out here in plain Rust; the errors a
//! generator can make (a value left unassigned on a path, a duplicate case
//! label, mixing `set_next` with `assign`) are checked to name the right
//! source line. The fuzz (`tb/tests/hw_fuzz.rs`) holds the emitted Verilog of
//! random nested control against the evaluator under Icarus and Verilator.

use hw::*;

mod common;
use common::*;
use std::rc::Rc;

fn verilog(def: &ModuleDef) -> String {
    emit_module(def, &Header::default())
}

#[test]
fn if_elif_else_gives_the_first_branch_whose_condition_holds() {
    let def = module("cmp3", |m| {
        let a = m.input("a_i", Ty::u(4));
        let b = m.input("b_i", Ty::u(4));
        let out = m.output_comb("out_o", Ty::u(2));
        m.if_(a.is_gt(b), |m| m.assign(out, 1))
            .elif(a.is_eq(b), |m| m.assign(out, 2))
            .else_(|m| m.assign(out, 3));
    });
    let mut e = evaluator(&def);
    for a in 0..16 {
        for b in 0..16 {
            set(&mut e, "a_i", a);
            set(&mut e, "b_i", b);
            e.eval();
            let want = if a > b {
                1
            } else if a == b {
                2
            } else {
                3
            };
            assert_eq!(get(&e, "out_o"), want, "a={a} b={b}");
        }
    }
}

#[test]
fn later_assignments_win_and_nested_branches_override_outer_ones() {
    // out = 1; if c1 { out = 2; if c2 { out = 3 } else if c3 { out = 4 } }; if c4 { out = 5 }
    let def = module("nest", |m| {
        let c: Vec<Expr> = (1..=4)
            .map(|k| m.input(&format!("c{k}_i"), Ty::BOOL))
            .collect();
        let out = m.output_comb("out_o", Ty::u(3));
        m.assign(out, 1);
        m.if_(c[0], |m| {
            m.assign(out, 2);
            m.if_(c[1], |m| m.assign(out, 3))
                .elif(c[2], |m| m.assign(out, 4));
        });
        m.if_(c[3], |m| m.assign(out, 5));
    });
    let mut e = evaluator(&def);
    for bits in 0..16u64 {
        let c = |k: u32| bits >> k & 1 == 1;
        for k in 0..4 {
            set(&mut e, &format!("c{}_i", k + 1), bits >> k & 1);
        }
        e.eval();
        let mut want = 1;
        if c(0) {
            want = 2;
            if c(1) {
                want = 3;
            } else if c(2) {
                want = 4;
            }
        }
        if c(3) {
            want = 5;
        }
        assert_eq!(get(&e, "out_o"), want, "conditions {bits:04b}");
    }
}

#[test]
fn a_register_keeps_its_value_on_paths_that_do_not_assign_it() {
    let def = module("counter", |m| {
        let clear = m.input("clear_i", Ty::BOOL);
        let step = m.input("step_i", Ty::BOOL);
        let count = m.reg_reset("count", Ty::u(8), 7);
        m.if_(clear, |m| m.assign(count, 0))
            .elif(step, |m| m.assign(count, count.q() + 1));
        m.output("count_o", count.q());
    });
    // Holding is a clock enable, not a feedback mux.
    let v = verilog(&def);
    assert!(v.contains("count_en"), "{v}");
    let mut e = evaluator(&def);
    set(&mut e, "rst_i", 1);
    e.step();
    set(&mut e, "rst_i", 0);
    let mut model = 7u64;
    for (clear, step) in [
        (0, 0),
        (0, 1),
        (0, 1),
        (1, 1),
        (0, 0),
        (0, 1),
        (1, 0),
        (0, 1),
    ] {
        set(&mut e, "clear_i", clear);
        set(&mut e, "step_i", step);
        e.eval();
        assert_eq!(get(&e, "count_o"), model);
        e.step();
        if clear == 1 {
            model = 0;
        } else if step == 1 {
            model = (model + 1) % 256;
        }
    }
}

#[test]
fn a_register_assigned_on_every_path_needs_no_enable() {
    let def = module("toggle", |m| {
        let c = m.input("c_i", Ty::BOOL);
        let r = m.reg_reset("r", Ty::u(2), 0);
        m.if_(c, |m| m.assign(r, 1)).else_(|m| m.assign(r, 2));
        m.output("r_o", r.q());
    });
    let v = verilog(&def);
    assert!(!v.contains("r_en"), "{v}");
}

#[test]
fn a_comb_default_fills_the_paths_that_do_not_assign_it() {
    let def = module("dflt", |m| {
        let c = m.input("c_i", Ty::BOOL);
        let x = m.input("x_i", Ty::u(8));
        let out = m.output_comb_default("out_o", Ty::u(8), 42);
        m.if_(c, |m| m.assign(out, x));
    });
    let mut e = evaluator(&def);
    set(&mut e, "x_i", 9);
    set(&mut e, "c_i", 0);
    e.eval();
    assert_eq!(get(&e, "out_o"), 42);
    set(&mut e, "c_i", 1);
    e.eval();
    assert_eq!(get(&e, "out_o"), 9);
}

#[test]
fn a_comb_left_unassigned_on_a_path_names_its_declaration_and_the_if() {
    let mut decl = String::new();
    let mut at_if = String::new();
    let msg = elab_error(|| {
        let mut m = ModuleBuilder::new("partial");
        let c = m.input("c_i", Ty::BOOL);
        decl = line_below(1);
        let out = m.output_comb("out_o", Ty::u(8));
        at_if = line_below(1);
        m.if_(c, |m| m.assign(out, 1));
        m.finish();
    });
    assert!(msg.contains("not assigned on every path"), "{msg}");
    assert!(msg.contains(&decl), "declaration {decl} not named: {msg}");
    assert!(msg.contains(&at_if), "if {at_if} not named: {msg}");
}

#[test]
fn a_comb_never_assigned_is_an_error_at_its_declaration() {
    let mut decl = String::new();
    let msg = elab_error(|| {
        let mut m = ModuleBuilder::new("never");
        decl = line_below(1);
        let _ = m.comb("x", Ty::u(3));
        m.finish();
    });
    assert!(
        msg.contains("never assigned") && msg.contains(&decl),
        "{msg}"
    );
}

#[test]
fn switch_takes_the_matching_case_or_the_default() {
    let def = module("sw", |m| {
        let op = m.input("op_i", Ty::u(3));
        let out = m.output_comb("out_o", Ty::u(4));
        m.switch(op)
            .case(0, |m| m.assign(out, 10))
            .cases(&[1, 5], |m| m.assign(out, 11))
            .case(7, |m| m.assign(out, 12))
            .default(|m| m.assign(out, 13));
    });
    let mut e = evaluator(&def);
    for op in 0..8 {
        set(&mut e, "op_i", op);
        e.eval();
        let want = match op {
            0 => 10,
            1 | 5 => 11,
            7 => 12,
            _ => 13,
        };
        assert_eq!(get(&e, "out_o"), want, "op={op}");
    }
}

#[test]
fn a_switch_covering_every_value_needs_no_default() {
    let def = module("full", |m| {
        let s = m.input("s_i", Ty::u(2));
        let out = m.output_comb("out_o", Ty::u(3));
        m.switch(s)
            .case(0, |m| m.assign(out, 4))
            .case(1, |m| m.assign(out, 5))
            .case(2, |m| m.assign(out, 6))
            .case(3, |m| m.assign(out, 7));
    });
    let mut e = evaluator(&def);
    for s in 0..4 {
        set(&mut e, "s_i", s);
        e.eval();
        assert_eq!(get(&e, "out_o"), 4 + s);
    }
}

#[test]
fn an_incomplete_switch_without_default_leaves_a_comb_unassigned() {
    let msg = elab_error(|| {
        let mut m = ModuleBuilder::new("nodef");
        let s = m.input("s_i", Ty::u(2));
        let out = m.output_comb("out_o", Ty::u(3));
        m.switch(s)
            .case(0, |m| m.assign(out, 4))
            .case(1, |m| m.assign(out, 5));
        m.finish();
    });
    assert!(msg.contains("the switch at"), "{msg}");
}

#[test]
fn a_duplicate_case_label_is_an_error_at_the_second_case() {
    let mut second = String::new();
    let msg = elab_error(|| {
        let mut m = ModuleBuilder::new("dup");
        let s = m.input("s_i", Ty::u(2));
        let out = m.output_comb_default("out_o", Ty::u(3), 0);
        let sw = m.switch(s).case(1, |m| m.assign(out, 4));
        second = line_below(1);
        sw.cases(&[2, 1], |m| m.assign(out, 5));
    });
    assert!(
        msg.contains("appears twice") && msg.contains(&second),
        "{msg}"
    );
}

#[test]
fn set_next_and_assign_on_one_register_is_an_error() {
    let msg = elab_error(|| {
        let mut m = ModuleBuilder::new("both");
        let r = m.reg("r", Ty::u(2));
        m.set_next(r, r.q());
        m.assign(r, 1);
    });
    assert!(msg.contains("not both"), "{msg}");
    let msg = elab_error(|| {
        let mut m = ModuleBuilder::new("both2");
        let r = m.reg("r", Ty::u(2));
        m.assign(r, 1);
        m.set_next(r, r.q());
    });
    assert!(msg.contains("not both"), "{msg}");
}

#[test]
fn a_wrongly_typed_assignment_names_the_caller() {
    let mut at = String::new();
    let msg = elab_error(|| {
        let mut m = ModuleBuilder::new("ty");
        let x = m.input("x_i", Ty::u(4));
        let out = m.output_comb("out_o", Ty::u(3));
        at = line_below(1);
        m.assign(out, x);
    });
    assert!(msg.contains(&at) && msg.contains("cannot assign"), "{msg}");
}

hw::hw_enum! {
    /// A traffic light with a pedestrian request.
    enum Light { Red, RedAmber, Green, Amber, Walk }
}

#[test]
fn enums_encode_in_declaration_order() {
    assert_eq!(Light::ty(), Ty::u(3));
    assert_eq!(Light::Walk.index(), 4);
    assert_eq!(Light::RedAmber.name(), "RedAmber");
    assert_eq!(enum_const_name(Light::RedAmber), "LIGHT_RED_AMBER");
}

/// The light: Red -> RedAmber -> Green -> (request: Amber -> Walk -> Red)
/// or (no request: Amber -> Red); `hold` freezes every state but Walk.
fn light() -> Rc<ModuleDef> {
    module("light", |m| {
        let request = m.input("request_i", Ty::BOOL);
        let hold = m.input("hold_i", Ty::BOOL);
        let fsm = m.fsm("light", Light::Red);
        let pending = m.reg_reset("pending", Ty::BOOL, 0);
        m.if_(request, |m| m.assign(pending, 1));
        m.if_(!hold, |m| {
            m.fsm_states(fsm, |s| {
                s.state(Light::Red, |m| fsm.goto(m, Light::RedAmber))
                    .state(Light::RedAmber, |m| fsm.goto(m, Light::Green))
                    .state(Light::Green, |m| fsm.goto(m, Light::Amber))
                    .state(Light::Amber, |m| {
                        m.if_(pending.q(), |m| {
                            fsm.goto(m, Light::Walk);
                            m.assign(pending, 0);
                        })
                        .else_(|m| fsm.goto(m, Light::Red));
                    });
            });
        });
        m.if_(fsm.is(Light::Walk), |m| fsm.goto(m, Light::Red));
        m.output("state_o", fsm.state());
        m.output("walk_o", fsm.is(Light::Walk));
    })
}

#[test]
fn an_fsm_follows_its_state_table() {
    let def = light();
    let mut e = evaluator(&def);
    set(&mut e, "rst_i", 1);
    e.step();
    set(&mut e, "rst_i", 0);
    let mut state = Light::Red;
    let mut pending = false;
    let pattern = [
        (0, 0),
        (0, 0),
        (1, 0),
        (0, 1),
        (0, 0),
        (0, 0),
        (0, 0),
        (0, 0),
        (0, 1),
        (0, 0),
        (1, 1),
        (0, 0),
        (0, 0),
    ];
    for (cycle, &(request, hold)) in pattern.iter().cycle().take(60).enumerate() {
        set(&mut e, "request_i", request);
        set(&mut e, "hold_i", hold);
        e.eval();
        assert_eq!(get(&e, "state_o"), state.index() as u64, "cycle {cycle}");
        assert_eq!(get(&e, "walk_o"), (state == Light::Walk) as u64);
        e.step();
        let mut next_pending = pending || request == 1;
        let next = if state == Light::Walk {
            Light::Red
        } else if hold == 1 {
            state
        } else {
            match state {
                Light::Red => Light::RedAmber,
                Light::RedAmber => Light::Green,
                Light::Green => Light::Amber,
                Light::Amber if pending => {
                    next_pending = false;
                    Light::Walk
                }
                Light::Amber => Light::Red,
                Light::Walk => unreachable!(),
            }
        };
        state = next;
        pending = next_pending;
    }
}

#[test]
fn an_fsm_is_emitted_with_named_states_and_its_transition_table() {
    let def = light();
    let v = verilog(&def);
    assert!(v.contains("localparam [2:0] LIGHT_WALK = 3'b100;"), "{v}");
    assert!(v.contains("(light_q == LIGHT_AMBER)"), "{v}");
    assert!(
        v.contains("//   LIGHT_AMBER") && v.contains("-> LIGHT_WALK, LIGHT_RED"),
        "{v}"
    );
    assert!(v.contains("(any)") && v.contains("// FSM light_q: 5 states, reset to LIGHT_RED"));
    let info = &def.fsms[0];
    assert_eq!(info.states.len(), 5);
    assert!(info.transitions.contains(&(Some(3), 4)));
    assert!(info.transitions.contains(&(None, 0)));
}

#[test]
fn a_state_listed_twice_is_an_error() {
    let msg = elab_error(|| {
        let mut m = ModuleBuilder::new("twice");
        let fsm = m.fsm("st", Light::Red);
        m.fsm_states(fsm, |s| {
            s.state(Light::Red, |m| fsm.goto(m, Light::Green))
                .state(Light::Red, |m| fsm.goto(m, Light::Amber));
        });
    });
    assert!(msg.contains("two entries"), "{msg}");
}

#[test]
fn an_fsm_table_listing_every_state_assigns_a_comb_on_every_path() {
    hw::hw_enum! { enum Three { A, B, C } }
    let def = module("three", |m| {
        let fsm = m.fsm("st", Three::A);
        let out = m.output_comb("out_o", Ty::u(2));
        m.fsm_states(fsm, |s| {
            s.state(Three::A, |m| {
                m.assign(out, 1);
                fsm.goto(m, Three::B)
            })
            .state(Three::B, |m| {
                m.assign(out, 2);
                fsm.goto(m, Three::C)
            })
            .state(Three::C, |m| {
                m.assign(out, 3);
                fsm.goto(m, Three::A)
            });
        });
    });
    let mut e = evaluator(&def);
    set(&mut e, "rst_i", 1);
    e.step();
    set(&mut e, "rst_i", 0);
    for k in 0..9 {
        e.eval();
        assert_eq!(get(&e, "out_o"), 1 + k % 3);
        e.step();
    }
}

#[test]
fn an_enum_next_to_a_value_of_another_type_is_an_error() {
    let msg = elab_error(|| {
        let mut m = ModuleBuilder::new("mixed");
        let x = m.input("x_i", Ty::u(8));
        let _ = x.is_eq(Light::Green);
    });
    assert!(msg.contains("Light::Green"), "{msg}");
}

#[test]
fn an_fsm_that_never_moves_is_an_error_at_its_declaration() {
    let mut at = String::new();
    let msg = elab_error(|| {
        let mut m = ModuleBuilder::new("still");
        at = line_below(1);
        let fsm = m.fsm("st", Light::Red);
        m.output("s_o", fsm.state());
        m.finish();
    });
    assert!(
        msg.contains(&at) && msg.contains("never changes state"),
        "{msg}"
    );
}

//! Helpers the `hw` integration tests share: building a module, running it
//! in the evaluator, and catching an elaboration error with its location.

// Each test file uses the part of these helpers it needs.
#![allow(dead_code)]

use hw::{catch_elab, quiet_elab_errors, Evaluator, ModuleBuilder, ModuleDef};
use num_bigint::BigUint;
use std::rc::Rc;

/// Builds a module definition with `f`.
pub fn module(name: &str, f: impl FnOnce(&mut ModuleBuilder)) -> Rc<ModuleDef> {
    let mut m = ModuleBuilder::new(name);
    f(&mut m);
    Rc::new(m.finish())
}

/// The evaluator of `def` (which must flatten).
pub fn evaluator(def: &ModuleDef) -> Evaluator {
    Evaluator::new(def).unwrap_or_else(|e| panic!("{e}"))
}

/// An output that fits in 64 bits.
pub fn get(e: &Evaluator, port: &str) -> u64 {
    u64::try_from(e.get(port)).expect("small value")
}

/// Sets an input from a small value.
pub fn set(e: &mut Evaluator, port: &str, v: u64) {
    e.set(port, &BigUint::from(v));
}

/// The elaboration error of `f`, which must fail.
pub fn elab_error(f: impl FnOnce()) -> String {
    quiet_elab_errors();
    match catch_elab(f) {
        Ok(()) => panic!("elaboration should have failed"),
        Err(e) => e.message,
    }
}

/// `file:line:` of the line `offset` lines below the caller.
#[track_caller]
pub fn line_below(offset: u32) -> String {
    let l = std::panic::Location::caller();
    format!("{}:{}:", l.file(), l.line() + offset)
}

//! A skid buffer: a two-entry stage that registers a stream's valid, data and
//! ready, so it cuts every combinational path through a valid/ready stream at
//! full throughput.
//!
//! | port | type | meaning |
//! | --- | --- | --- |
//! | `in_valid_i`, `in_ready_o`, `in_data_i` | 1, 1, elem | the input stream |
//! | `out_valid_o`, `out_ready_i`, `out_data_o` | 1, 1, elem | the output stream |
//!
//! Timing: a word accepted in cycle x is offered on the output from cycle
//! x + 1, in order. `out_valid_o`, `out_data_o` and `in_ready_o` come straight
//! from registers. `in_ready_o` is high while the second (skid) entry is empty,
//! so after the output stalls the input still completes the transfer it was
//! making in that cycle, into the skid entry; `in_ready_o` is high again in the
//! cycle after the output takes a word. With `out_ready_i` held high the
//! buffer passes one word per cycle. `out_data_o` is unspecified while
//! `out_valid_o` is low.

use crate::builder::mux;
use crate::ir::ModuleDef;
use crate::{Design, Ty};
use std::rc::Rc;

/// A skid buffer for words of type `elem`, named `skid_<elem>` (e.g.
/// `skid_u32`).
pub fn skid_buffer(design: &mut Design, elem: Ty) -> Rc<ModuleDef> {
    let name = format!("skid_{elem}");
    design.define(&name, &[("elem", elem.to_string())], |_, m| {
        m.doc("skid buffer: registered valid, data and ready, full throughput");
        let in_valid = m.input("in_valid_i", Ty::BOOL);
        let in_data = m.input("in_data_i", elem);
        let out_ready = m.input("out_ready_i", Ty::BOOL);
        // The output entry, and the skid entry behind it.
        let main_valid = m.reg_reset("main_valid", Ty::BOOL, 0);
        let main_data = m.reg("main_data", elem);
        let skid_valid = m.reg_reset("skid_valid", Ty::BOOL, 0);
        let skid_data = m.reg("skid_data", elem);
        let ready = m.wire("ready", !skid_valid.q());
        let push = m.wire("push", in_valid & ready);
        // The output entry can load when it is empty or handing its word on.
        let advance = m.wire("advance", !main_valid.q() | out_ready);
        m.set_next(
            main_valid,
            mux(advance, skid_valid.q() | push, main_valid.q()),
        );
        m.set_next(main_data, mux(skid_valid.q(), skid_data.q(), in_data));
        m.set_enable(main_data, advance);
        // A word arriving while the output stalls waits in the skid entry.
        m.set_next(skid_valid, !advance & (skid_valid.q() | push));
        m.set_next(skid_data, in_data);
        m.set_enable(skid_data, push & !advance);
        m.output("in_ready_o", ready);
        m.output("out_valid_o", main_valid.q());
        m.output("out_data_o", main_data.q());
    })
}

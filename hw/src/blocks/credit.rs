//! The sender side of credit-based flow control: a counter of the words the
//! receiver can still take.
//!
//! | port | type | meaning |
//! | --- | --- | --- |
//! | `send_i` | 1 | the sender sends a word this cycle, spending a credit |
//! | `return_i` | enough bits for 0..=max_return | credits the receiver returns this cycle |
//! | `credits_o` | enough bits for 0..=N | credits held |
//! | `can_send_o` | 1 | `credits_o` > 0 |
//! | `error_o` | 1 | sticky: a protocol error happened (until reset) |
//!
//! Reset sets `credits_o` to N. In every cycle the next count is `credits_o`
//! minus `send_i` plus `return_i`: a credit spent and credits returned in the
//! same cycle both count, and a credit returned in cycle t can be spent from
//! cycle t + 1. Several credits may return in one cycle (up to `max_return`,
//! the widest the port carries). Two things are errors, flagged on `error_o`
//! from the next cycle until reset, and never wrap the count:
//! - an over-return: the sum would exceed N; the count stays at N;
//! - a send with no credit (`send_i` while `credits_o` = 0): the send is not
//!   counted (returns of that cycle still are).
//!
//! All outputs come from registers.

use crate::builder::mux;
use crate::error::elab_error;
use crate::ir::ModuleDef;
use crate::ty::bits_for;
use crate::{Design, Ty};
use std::rc::Rc;

/// A credit counter starting at (and never above) `credits` (>= 1), taking up
/// to `max_return` (>= 1) credits back per cycle; named
/// `credit_counter_n<credits>_r<max_return>`.
#[track_caller]
pub fn credit_counter(design: &mut Design, credits: u32, max_return: u32) -> Rc<ModuleDef> {
    if credits == 0 || max_return == 0 {
        elab_error(format!(
            "credit counter needs credits >= 1 and max_return >= 1, got {credits} and {max_return}"
        ));
    }
    let name = format!("credit_counter_n{credits}_r{max_return}");
    let params = [
        ("credits", credits.to_string()),
        ("max_return", max_return.to_string()),
    ];
    design.define(&name, &params, |_, m| {
        m.doc("credit counter (sender side): spend on send, refill on return, flag errors");
        let count_ty = Ty::u(bits_for(credits as u64));
        let ret_ty = Ty::u(bits_for(max_return as u64));
        // Wide enough for credits + any return without wrapping.
        let sum_ty = Ty::u(bits_for(credits as u64 + (1u64 << ret_ty.width)));
        let send = m.input("send_i", Ty::BOOL);
        let ret = m.input("return_i", ret_ty);
        let count = m.reg_reset("credits", count_ty, credits);
        let error = m.reg_reset("error", Ty::BOOL, 0);
        let can_send = m.wire("can_send", count.q().is_ne(0));
        let underflow = m.wire("underflow", send & !can_send);
        let spend = send & can_send;
        let sum = m.wire(
            "sum",
            count.q().zext(sum_ty.width) + ret.zext(sum_ty.width) - spend.zext(sum_ty.width),
        );
        let overflow = m.wire("overflow", sum.is_gt(credits));
        let full = m.lit(count_ty, credits);
        m.set_next(count, mux(overflow, full, sum.trunc(count_ty.width)));
        m.set_next(error, error.q() | overflow | underflow);
        m.output("credits_o", count.q());
        m.output("can_send_o", can_send);
        m.output("error_o", error.q());
    })
}

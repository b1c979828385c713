//! A round-robin arbiter: one grant among N requesters, with rotating
//! priority so that no requester waits for more than N - 1 others.
//!
//! | port | type | meaning |
//! | --- | --- | --- |
//! | `req_i` | N | bit k: requester k requests |
//! | `grant_o` | N | one-hot: the requester granted this cycle (0 when no request) |
//!
//! The grant is combinational from `req_i` and the priority register. Priority
//! is a rotating order starting at one requester: the grant goes to the first
//! requester at or after the highest-priority one (wrapping from N - 1 to 0).
//! **Priority advances in every cycle with a grant**: if requester g is
//! granted in cycle t, requester g + 1 (mod N) has the highest priority in
//! cycle t + 1. In a cycle without request it stays. After reset requester 0
//! has the highest priority. So a requester that keeps requesting is granted
//! within N cycles, and requesters that all keep requesting are granted in
//! turn, 0, 1, ..., N - 1, 0, ...
//!
//! Implementation: the priority is a thermometer mask of the requesters at or
//! after the highest-priority one; the grant is the lowest set bit of the
//! masked requests, or of all requests when none is masked in (`x & -x`).

use crate::builder::mux;
use crate::error::elab_error;
use crate::ir::ModuleDef;
use crate::{Design, Ty};
use num_bigint::BigInt;
use std::rc::Rc;

/// A round-robin arbiter for `n` (>= 1) requesters, named `rr_arbiter_n<n>`.
#[track_caller]
pub fn round_robin_arbiter(design: &mut Design, n: u32) -> Rc<ModuleDef> {
    if n == 0 || n > 4096 {
        elab_error(format!("arbiter needs 1..=4096 requesters, got {n}"));
    }
    let name = format!("rr_arbiter_n{n}");
    design.define(&name, &[("requesters", n.to_string())], |_, m| {
        m.doc("round-robin arbiter: one-hot grant, priority rotates past each grant");
        let ty = Ty::u(n);
        let req = m.input("req_i", ty);
        let all = (BigInt::from(1) << n as usize) - 1;
        let eligible = m.reg_reset("eligible", ty, all);
        let masked = m.wire("masked", req & eligible.q());
        let pick = m.wire("pick", mux(masked.any(), masked, req));
        let grant = m.wire("grant", pick & -pick);
        // Next: the requesters strictly after the granted one.
        let through = grant | (grant - 1u32);
        m.set_next(eligible, !through);
        m.set_enable(eligible, grant.any());
        m.output("grant_o", grant);
    })
}

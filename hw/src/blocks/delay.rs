//! A delay line: a value delayed by a fixed number of cycles, inline in the
//! module that uses it.

use crate::builder::{cat, Expr, ModuleBuilder};
use num_bigint::BigInt;

/// `value` delayed by `depth` clock cycles (`depth == 0` returns `value`).
///
/// All stages live in one register `<name>` of `depth * width` bits that shifts
/// by one element per cycle, so a delay of any depth costs two lines of Verilog
/// and maps to shift-register primitives (SRLs) where the FPGA has them. With
/// `reset`, every stage resets to that value (for valid/control bits).
#[track_caller]
pub fn delay(
    m: &mut ModuleBuilder,
    name: &str,
    value: Expr,
    depth: u32,
    reset: Option<i64>,
) -> Expr {
    if depth == 0 {
        return value;
    }
    let w = value.width();
    let ty = crate::Ty::u(depth * w);
    let bits = value.as_unsigned();
    let r = match reset {
        None => m.reg(name, ty),
        Some(v) => {
            // Replicate the per-stage reset pattern across all stages.
            let stage = crate::builder::const_bits_wrapping(w, &BigInt::from(v));
            let mut all = BigInt::from(0);
            for _ in 0..depth {
                all = (all << w as usize) + BigInt::from(stage.clone());
            }
            m.reg_reset(name, ty, all)
        }
    };
    let next = if depth == 1 {
        bits
    } else {
        cat(&[r.q().slice(0, (depth - 1) * w), bits])
    };
    m.set_next(r, next);
    let out = r.q().slice((depth - 1) * w, w);
    if value.ty().signed {
        out.as_signed()
    } else {
        out
    }
}

//! The cross-lane unit's parts: a rotator of n elements and the reduction
//! unit, one level of the fold in halves per cycle.

use config::VpuUnits;
use hw::arith::fp32_min_max_logic;
use hw::{bits_for, cat, mux, Design, Expr, ModuleBuilder, ModuleDef, Ty};
use std::rc::Rc;

/// A rotator of `n` 32-bit elements (n a power of two >= 2): ports `x_i`
/// (element k at bits 32k+31..32k), `amount_i` (log2 n bits) and `y_o`, with
/// `y[k] = x[(k + amount) mod n]`. Built as log2 n levels, level i rotating
/// by 2^i or passing, so its cost grows as n log n. `shared`: why Verilator
/// models hold it as shared code, if they do (see [`crate::SHARED_CODE_FROM`]).
pub fn rotator(design: &mut Design, n: u32, shared: Option<&str>) -> Rc<ModuleDef> {
    assert!(n.is_power_of_two() && n >= 2, "rotator of {n} elements");
    let name = format!("vpu_rotate_n{n}");
    design.define(&name, &[("elements", n.to_string())], |_, m| {
        m.doc("rotates a vector of 32-bit elements by a run-time amount");
        if let Some(reason) = shared {
            m.shared_code(reason);
        }
        let levels = n.trailing_zeros();
        let x = m.input("x_i", Ty::u(32 * n));
        let amount = m.input("amount_i", Ty::u(levels));
        let mut v = x;
        for i in 0..levels {
            let k = 1u32 << i;
            // Elements k.. move down to 0..; elements ..k wrap to the top.
            let rotated = cat(&[v.slice(0, 32 * k), v.slice(32 * k, 32 * (n - k))]);
            v = m.wire(&format!("level{i}"), mux(amount.bit(i), rotated, v));
        }
        m.output("y_o", v);
    })
}

/// The reduction unit for a fold of `levels` levels (W = 2^levels elements,
/// W/2 units) with `units`.
///
/// Unit j combines two elements per cycle with the operation `op_i` (the
/// reduction opcode's low three bits: 0 sum, 1 max, 2 min of int32; 3 sum,
/// 4 max, 5 min of fp32). In level 1 (`step_i` = 0) it takes the operand's
/// elements j and j + W/2 (`a_i`, `b1_i`); in level k > 1 its own previous
/// result and unit j + W/2^k's (`b<k>_i`). `y_o` is this level's result
/// (unit 0's at the last level is the reduction), registered as `r_o` when
/// `en_i` for the next level. The operand order of each step is the
/// contract's: `acc[j] = f(acc[j], acc[j + len/2])`. `shared` as for
/// [`rotator`].
pub fn reduce_unit(
    design: &mut Design,
    levels: u32,
    units: VpuUnits,
    shared: Option<&str>,
) -> Rc<ModuleDef> {
    assert!(levels >= 1, "a fold needs at least one level");
    let name = format!("vpu_reduce_{units}_l{levels}");
    let params = [("levels", levels.to_string()), ("units", units.to_string())];
    design.define(&name, &params, |_, m| {
        m.doc("VPU reduction unit: one level of the fold in halves per cycle");
        if let Some(reason) = shared {
            m.shared_code(reason);
        }
        let word = Ty::u(32);
        let op = m.input("op_i", Ty::u(3));
        let a_first = m.input("a_i", word);
        let b: Vec<Expr> = (1..=levels)
            .map(|k| m.input(&format!("b{k}_i"), word))
            .collect();
        let (a, b, register) = if levels == 1 {
            (a_first, b[0], None)
        } else {
            let step = m.input("step_i", Ty::u(bits_for(u64::from(levels - 1))));
            let en = m.input("en_i", Ty::BOOL);
            let r = m.reg("r", word);
            m.output("r_o", r.q());
            let a = mux(step.is_eq(0), a_first, r.q());
            let mut other = b[0];
            for (k, &bk) in b.iter().enumerate().skip(1) {
                other = mux(step.is_eq(k as u64), bk, other);
            }
            (a, other, Some((r, en)))
        };
        let y = combine(m, units, op, a, b);
        let y = m.wire("y", y);
        if let Some((r, en)) = register {
            m.set_next(r, y);
            m.set_enable(r, en);
        }
        m.output("y_o", y);
    })
}

/// `f(a, b)` for the reduction operation `op`.
fn combine(m: &mut ModuleBuilder, units: VpuUnits, op: Expr, a: Expr, b: Expr) -> Expr {
    let (sa, sb) = (a.as_signed(), b.as_signed());
    let a_lt_b = sa.is_lt(sb);
    let sum = a + b;
    let max = mux(a_lt_b, b, a);
    let min = mux(a_lt_b, a, b);
    let int = mux(op.is_eq(0), sum, mux(op.is_eq(1), max, min));
    if !units.has_fp32() {
        return int;
    }
    let fsum = hw::fp::fp32_add_logic(m, a, b);
    let fminmax = fp32_min_max_logic(m, a, b, op.is_eq(4));
    mux(op.is_lt(3), int, mux(op.is_eq(3), fsum, fminmax))
}

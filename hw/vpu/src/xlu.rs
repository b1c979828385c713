//! The cross-lane unit's parts: a rotator of n elements and the reduction
//! unit, one level of the fold in halves per cycle (or, pipelined, per
//! stages + 1 cycles).

use config::VpuUnits;
use hw::arith::{fp32_min_max_logic, fp32_min_max_piped, FP32_ORDER};
use hw::fp::{fp32_add_piped, FP32_ADD};
use hw::pipeline::Pipeline;
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
/// W/2 units) with `units`, and `stages` pipeline registers in each level
/// (`VpuConfig::fold_stages`).
///
/// Unit j combines two elements per level with the operation `op_i` (the
/// reduction opcode's low three bits: 0 sum, 1 max, 2 min of int32; 3 sum,
/// 4 max, 5 min of fp32). In level 1 (`step_i` = 0) it takes the operand's
/// elements j and j + W/2 (`a_i`, `b1_i`); in level k > 1 its own previous
/// result and unit j + W/2^k's (`b<k>_i`). `y_o` is this level's result
/// (unit 0's at the last level is the reduction), registered as `r_o` when
/// `en_i` for the next level. The operand order of each step is the
/// contract's: `acc[j] = f(acc[j], acc[j + len/2])`.
///
/// With `stages` = 0 a level is one combinational cycle. With s = `stages`
/// of one or more the unit registers `a_i` and `b1_i` when `load_i` (the
/// fold's first cycle) and each level's combine has up to s registers (the fp32 adder
/// s of its `FP32_ADD` cuts, at most six, the sixth on its operands after
/// their select; min and max their `FP32_ORDER` cuts, at most two, and a
/// register on their result when that leaves one of the s; the int32
/// operations a register on their result): a level's inputs are held
/// for s + 1 cycles, so `y_o` is its result in the last of them, whatever
/// the latency of the path the operation takes. `shared` as for [`rotator`].
pub fn reduce_unit(
    design: &mut Design,
    levels: u32,
    units: VpuUnits,
    stages: u32,
    shared: Option<&str>,
) -> Rc<ModuleDef> {
    assert!(levels >= 1, "a fold needs at least one level");
    let mut name = format!("vpu_reduce_{units}_l{levels}");
    let mut params = vec![("levels", levels.to_string()), ("units", units.to_string())];
    if stages > 0 {
        name += &format!("_s{stages}");
        params.push(("stages", stages.to_string()));
    }
    design.define(&name, &params, |_, m| {
        m.doc(if stages == 0 {
            "VPU reduction unit: one level of the fold in halves per cycle"
        } else {
            "VPU reduction unit: one level of the fold in halves per stages + 1 cycles"
        });
        if let Some(reason) = shared {
            m.shared_code(reason);
        }
        let word = Ty::u(32);
        let op = m.input("op_i", Ty::u(3));
        let a_first = m.input("a_i", word);
        let b: Vec<Expr> = (1..=levels)
            .map(|k| m.input(&format!("b{k}_i"), word))
            .collect();
        let (a_first, b_first) = if stages == 0 {
            (a_first, b[0])
        } else {
            // The fold's operands, registered in its first cycle: the
            // forwarding ahead of the fold ends here.
            let load = m.input("load_i", Ty::BOOL);
            let xa = m.reg("xa", word);
            let xb = m.reg("xb", word);
            for (r, v) in [(xa, a_first), (xb, b[0])] {
                m.set_next(r, v);
                m.set_enable(r, load);
            }
            (xa.q(), xb.q())
        };
        let (a, b, register) = if levels == 1 {
            (a_first, b_first, None)
        } else {
            let step = m.input("step_i", Ty::u(bits_for(u64::from(levels - 1))));
            let en = m.input("en_i", Ty::BOOL);
            let r = m.reg("r", word);
            m.output("r_o", r.q());
            let a = mux(step.is_eq(0), a_first, r.q());
            let mut other = b_first;
            for (k, &bk) in b.iter().enumerate().skip(1) {
                other = mux(step.is_eq(k as u64), bk, other);
            }
            (a, other, Some((r, en)))
        };
        let y = combine(m, units, stages, op, a, b);
        let y = m.wire("y", y);
        if let Some((r, en)) = register {
            m.set_next(r, y);
            m.set_enable(r, en);
        }
        m.output("y_o", y);
    })
}

/// `f(a, b)` for the reduction operation `op`, the fp32 units with up to
/// `stages` registers (none at 0: the combinational functions).
fn combine(
    m: &mut ModuleBuilder,
    units: VpuUnits,
    stages: u32,
    op: Expr,
    a: Expr,
    b: Expr,
) -> Expr {
    let (sa, sb) = (a.as_signed(), b.as_signed());
    let a_lt_b = sa.is_lt(sb);
    let sum = a + b;
    let max = mux(a_lt_b, b, a);
    let min = mux(a_lt_b, a, b);
    let int = mux(op.is_eq(0), sum, mux(op.is_eq(1), max, min));
    // A level's inputs are held for stages + 1 cycles and its result is read
    // in the last, so a path with k registers may take one more when
    // k < stages: the same result in the same cycle, and the path from the
    // level's select through the combine ends at a register, not in the
    // lanes that read y_o.
    let int = if stages > 0 {
        m.registered("int_q", int)
    } else {
        int
    };
    if !units.has_fp32() {
        return int;
    }
    let (fsum, fminmax) = if stages == 0 {
        (
            hw::fp::fp32_add_logic(m, a, b),
            fp32_min_max_logic(m, a, b, op.is_eq(4)),
        )
    } else {
        let add_stages = stages.min(FP32_ADD.max_stages());
        let mut add = Pipeline::new(FP32_ADD, "sum", add_stages, None);
        let fsum = fp32_add_piped(m, &mut add, a, b);
        add.finish();
        let order_stages = stages.min(FP32_ORDER.max_stages());
        let mut order = Pipeline::new(FP32_ORDER, "minmax", order_stages, None);
        let fminmax = fp32_min_max_piped(m, &mut order, a, b, op.is_eq(4));
        order.finish();
        let fminmax = if order_stages < stages {
            m.registered("minmax_q", fminmax)
        } else {
            fminmax
        };
        (fsum, fminmax)
    };
    mux(op.is_lt(3), int, mux(op.is_eq(3), fsum, fminmax))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_fold_stages_stop_at_the_fp32_adders_cuts() {
        // VpuConfig::fold_stages caps a level's registers at the adder's
        // cuts; the configuration crate cannot see the plan.
        assert_eq!(config::vpu::MAX_FOLD_STAGES, hw::fp::FP32_ADD.max_stages());
    }
}

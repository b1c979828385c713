//! The EUP (transcendental unit): fp32 division, square root, reciprocal,
//! reciprocal square root, exp2 and exp under the numerics contract
//! (docs/numerics.md, "EUP"), one operation per cycle.
//!
//! Two paths share the unit, both fully occupied by a stream of operations:
//! - the **root path**: `hw::eup`'s square root on `a`, then its division
//!   on (a, b) for div, (1.0, a) for recip or (1.0, the root) for rsqrt
//!   (the contract's two roundings); sqrt takes the root past the division;
//! - the **exp path**: `hw::arith`'s fp32 multiply by log2 e for exp (exp2
//!   passes `a` alongside), then `hw::eup`'s exp2.
//!
//! Every operation runs on both, the result is picked by the operation
//! carried beside it, and the shorter path is delayed to the longer, so
//! every operation has the same latency ([`config::EupConfig::latency`]:
//! twice the recurrences' stages, or the multiply's plus exp2's, whichever
//! is more, then the result register) and results leave in the order
//! operations were taken.
//!
//! # Interface
//!
//! | port | width | meaning |
//! | --- | --- | --- |
//! | `clk_i`, `rst_i` | 1 | clock; synchronous reset, active high (clears the valid line only) |
//! | `valid_i` | 1 | an operation is taken this cycle |
//! | `op_i` | 3 | the operation (`config::EupOp`: 0 div, 1 sqrt, 2 recip, 3 rsqrt, 4 exp2, 5 exp; 6 and 7 give the canonical NaN) |
//! | `a_i`, `b_i` | 32, 32 | the operands (fp32 bits; `b_i` is read by div only) |
//! | `valid_o` | 1 | `y_o` holds a result |
//! | `y_o` | 32 | the result (fp32 bits) |
//!
//! # Timing contract
//!
//! An operation taken in cycle t (`valid_i` high) has its result on `y_o`
//! with `valid_o` high in cycle t + L, L = `EupConfig::latency`, for every
//! operation and every sequence of operations: the unit never stalls and
//! takes one every cycle. `y_o` in other cycles means nothing. Reset
//! clears `valid_o`'s line: no result comes out for an operation taken
//! before it. `golden::eup` states the same contract.

mod block;
pub use block::Eup;

use config::{EupConfig, EupOp};
use hw::eup::Exp2Stages;
use hw::{mux, Design, Expr, ModuleBuilder, ModuleDef, Ty};
use std::rc::Rc;

/// The top module's port names.
pub mod ports {
    pub const VALID_IN: &str = "valid_i";
    pub const OP: &str = "op_i";
    pub const A: &str = "a_i";
    pub const B: &str = "b_i";
    pub const VALID_OUT: &str = "valid_o";
    pub const Y: &str = "y_o";
}

/// fp32 1.0, the dividend of recip and rsqrt.
const F32_ONE: u32 = 0x3f80_0000;

/// The top module's name for `cfg`, e.g. `eup_r28_m4_a6`.
pub fn top_name(cfg: &EupConfig) -> String {
    format!(
        "eup_r{}_m{}_a{}",
        cfg.recurrence_stages(),
        cfg.mul_stages(),
        cfg.add_stages()
    )
}

/// Elaborates the EUP for `cfg` into `design`; returns the top module.
pub fn build(design: &mut Design, cfg: &EupConfig) -> Rc<ModuleDef> {
    let r = cfg.recurrence_stages();
    let stages = Exp2Stages {
        mul: cfg.mul_stages(),
        add: cfg.add_stages(),
    };
    let sqrt = hw::eup::sqrt32_unit(design, r, false);
    let div = hw::eup::div32_unit(design, r, false);
    let mul = hw::arith::fp32_mul_unit(design, stages.mul, false);
    let exp2 = hw::eup::exp2_unit(design, stages, false);
    let params = [
        ("recurrence_stages", r.to_string()),
        ("mul_stages", stages.mul.to_string()),
        ("add_stages", stages.add.to_string()),
    ];
    let cfg = *cfg;
    design.define(&top_name(&cfg), &params, |_, m| {
        m.doc(&format!(
            "EUP: fp32 div, sqrt, recip, rsqrt, exp2, exp (docs/numerics.md), one operation per \
             cycle, latency {}",
            cfg.latency()
        ));
        let valid = m.input(ports::VALID_IN, Ty::BOOL);
        let op = m.input(ports::OP, Ty::u(EupOp::BITS));
        let a = m.input(ports::A, Ty::u(32));
        let b = m.input(ports::B, Ty::u(32));
        let is = |op: Expr, o: EupOp| op.is_eq(o.code());
        let one = m.lit(Ty::u(32), F32_ONE);

        // The root path.
        let s = m.instance("u_sqrt", &sqrt);
        m.connect(s, "a_i", a);
        let root = m.inst_output(s, "r_o");
        let op_r = hw::delay(m, "op_root", op, r, None);
        let a_r = hw::delay(m, "a_root", a, r, None);
        let b_r = hw::delay(m, "b_root", b, r, None);
        let divides = is(op_r, EupOp::Div);
        let numerator = mux(divides, a_r, one);
        let denominator = mux(divides, b_r, mux(is(op_r, EupOp::Rsqrt), root, a_r));
        let d = m.instance("u_div", &div);
        m.connect(d, "a_i", numerator);
        m.connect(d, "b_i", denominator);
        let quotient = m.inst_output(d, "q_o");
        let root_late = hw::delay(m, "root", root, r, None);
        let op_rr = hw::delay(m, "op_div", op_r, r, None);
        let root_path = mux(is(op_rr, EupOp::Sqrt), root_late, quotient);

        // The exp path.
        let p = m.instance("u_log2e", &mul);
        m.connect(p, "a_i", a);
        let log2e = m.lit(Ty::u(32), hw::eup::LOG2_E_F32);
        m.connect(p, "b_i", log2e);
        let scaled = m.inst_output(p, "p_o");
        let op_m = hw::delay(m, "op_exp", op, stages.mul, None);
        let a_m = hw::delay(m, "a_exp", a, stages.mul, None);
        let t = mux(is(op_m, EupOp::Exp), scaled, a_m);
        let e = m.instance("u_exp2", &exp2);
        m.connect(e, "x_i", t);
        let exp_path = m.inst_output(e, "y_o");

        // Both to the longer path's latency, then the operation's pick
        // into the result register.
        let paths = cfg.latency() - 1;
        let root_wait = paths - cfg.root_path_latency();
        let root_out = hw::delay(m, "root_out", root_path, root_wait, None);
        let exp_wait = paths - cfg.exp_path_latency();
        let exp_out = hw::delay(m, "exp_out", exp_path, exp_wait, None);
        let op_out = hw::delay(m, "op_out", op, paths, None);
        let y = pick(m, op_out, root_out, exp_out);
        let result = m.registered("result", y);
        m.output(ports::Y, result);
        let valid_out = hw::delay(m, "valid", valid, cfg.latency(), Some(0));
        m.output(ports::VALID_OUT, valid_out);
    })
}

/// The result for the operation `op`: the root path's for div, sqrt, recip
/// and rsqrt (codes 0 to 3), the exp path's for exp2 and exp (4 and 5), the
/// canonical NaN for the reserved codes.
fn pick(m: &mut ModuleBuilder, op: Expr, root_path: Expr, exp_path: Expr) -> Expr {
    let nan = m.lit(Ty::u(32), hw::fp::CANONICAL_NAN_F32);
    let root_ops = op.is_lt(EupOp::Exp2.code());
    let exp_ops = op.is_le(EupOp::Exp.code());
    mux(root_ops, root_path, mux(exp_ops, exp_path, nan))
}

//! A register that synthesis keeps apart from every equal one.

use crate::{Design, Expr, ModuleBuilder};

/// `value` in a register of its own module, `kept_reg_<s|u><width>`, which
/// synthesis keeps as a module ([`ModuleBuilder::keep_hierarchy`]); returns
/// the register's output. Yosys merges flip-flops loaded from the same
/// signal, so a copy of a register placed on purpose next to the one cell
/// it feeds (a DSP block's operand, a block RAM's address) only survives
/// behind a module boundary. The instance is called `name`.
pub fn kept_register(design: &mut Design, m: &mut ModuleBuilder, name: &str, value: Expr) -> Expr {
    kept(design, m, name, value, None)
}

/// [`kept_register`] with a synchronous reset to `reset` (`rst_i`), in a
/// module `kept_reg_<s|u><width>_r<reset>`: a copy of a register that
/// resets, loaded with the same next value, so that it equals the original
/// in every cycle.
pub fn kept_register_reset(
    design: &mut Design,
    m: &mut ModuleBuilder,
    name: &str,
    value: Expr,
    reset: u64,
) -> Expr {
    kept(design, m, name, value, Some(reset))
}

fn kept(
    design: &mut Design,
    m: &mut ModuleBuilder,
    name: &str,
    value: Expr,
    reset: Option<u64>,
) -> Expr {
    let ty = value.ty();
    let sign = if ty.signed { "s" } else { "u" };
    let mut module = format!("kept_reg_{sign}{}", ty.width);
    let mut params = vec![("width", ty.width.to_string())];
    if let Some(r) = reset {
        module += &format!("_r{r}");
        params.push(("reset", r.to_string()));
    }
    let def = design.define(&module, &params, |_, r| {
        r.doc(if reset.is_some() {
            "a register with reset, kept out of synthesis's merging of equal registers"
        } else {
            "a register kept out of synthesis's merging of equal registers"
        });
        r.keep_hierarchy("a copy of a register placed on purpose, which Yosys would merge");
        let d = r.input("d_i", ty);
        let q = match reset {
            Some(v) => r.reg_reset("q", ty, v),
            None => r.reg("q", ty),
        };
        r.set_next(q, d);
        r.output("q_o", q.q());
    });
    let inst = m.instance(name, &def);
    m.connect(inst, "d_i", value);
    m.inst_output(inst, "q_o")
}

//! Ports, wires, registers, lint waivers, and finishing a definition.

use super::*;

impl ModuleBuilder {
    /// A constant in this module.
    #[track_caller]
    pub fn lit(&self, ty: Ty, value: impl Into<BigInt>) -> Expr {
        let bits = const_bits(ty, &value.into());
        push_node(self.token, Op::Const(bits), ty, vec![])
    }

    /// An input port; its name must end in `_i`.
    #[track_caller]
    pub fn input(&mut self, name: &str, ty: Ty) -> Expr {
        if !name.ends_with("_i") {
            elab_error(format!("input port '{name}' must end in '_i'"));
        }
        self.claim_name(name);
        self.add_signal(name, ty, SigKind::Input, Some(Dir::In)).1
    }

    /// An output port driven by `value`; its name must end in `_o`.
    #[track_caller]
    pub fn output(&mut self, name: &str, value: Expr) {
        let w = self.output_decl(name, value.ty);
        self.drive(w, value);
    }

    /// An output port whose driver is given later with [`drive`](Self::drive).
    #[track_caller]
    pub fn output_decl(&mut self, name: &str, ty: Ty) -> Wire {
        if !name.ends_with("_o") {
            elab_error(format!("output port '{name}' must end in '_o'"));
        }
        self.claim_name(name);
        let (sig, value) =
            self.add_signal(name, ty, SigKind::Wire { driver: None }, Some(Dir::Out));
        Wire { sig, value }
    }

    /// A named wire carrying `value`; returns the wire's value.
    #[track_caller]
    pub fn wire(&mut self, name: &str, value: Expr) -> Expr {
        let w = self.wire_decl(name, value.ty);
        self.drive(w, value);
        w.value
    }

    /// A named wire whose driver is given later with [`drive`](Self::drive).
    #[track_caller]
    pub fn wire_decl(&mut self, name: &str, ty: Ty) -> Wire {
        self.claim_name(name);
        let (sig, value) = self.add_signal(name, ty, SigKind::Wire { driver: None }, None);
        Wire { sig, value }
    }

    /// Drives a wire or output declared earlier. Each is driven exactly once.
    /// An integer constant takes the wire's type.
    #[track_caller]
    pub fn drive(&mut self, w: Wire, value: impl Operand) {
        let loc = Location::caller();
        let value = value.to_expr(w.value);
        self.own(value);
        self.own(w.value);
        self.with(|m| {
            let s = &mut m.def.signals[w.sig];
            if s.ty != value.ty {
                elab_error_at(
                    loc,
                    format!(
                        "cannot drive {} '{}' with a {} value",
                        s.ty, s.name, value.ty
                    ),
                );
            }
            match &mut s.kind {
                SigKind::Wire { driver: d @ None } => *d = Some(value.node()),
                _ => elab_error_at(loc, format!("'{}' is already driven", s.name)),
            }
        });
    }

    /// A register without reset: `<name>_q` in Verilog, next value `<name>_d`.
    #[track_caller]
    pub fn reg(&mut self, name: &str, ty: Ty) -> Reg {
        self.reg_impl(name, ty, None)
    }

    /// `value` one cycle later: a register named `name` of `value`'s type,
    /// without reset or enable, loaded every cycle; returns its output.
    #[track_caller]
    pub fn registered(&mut self, name: &str, value: Expr) -> Expr {
        let r = self.reg(name, value.ty());
        self.set_next(r, value);
        r.q()
    }

    /// A register with a synchronous reset to `reset` (active-high `rst_i`).
    #[track_caller]
    pub fn reg_reset(&mut self, name: &str, ty: Ty, reset: impl Into<BigInt>) -> Reg {
        let bits = const_bits(ty, &reset.into());
        self.reg_impl(name, ty, Some(bits))
    }

    #[track_caller]
    fn reg_impl(&mut self, name: &str, ty: Ty, reset: Option<BigUint>) -> Reg {
        if let Some(p) = identifier_problem(name) {
            elab_error(p);
        }
        for suffix in ["_q", "_d", "_en"] {
            self.claim_name(&format!("{name}{suffix}"));
        }
        let (sig, q) = self.add_signal(
            name,
            ty,
            SigKind::Reg {
                next: None,
                enable: None,
                reset,
            },
            None,
        );
        Reg { sig, q }
    }

    /// Stops elaboration if `r` is assigned procedurally: a register is
    /// driven either by `assign` or by `set_next` / `set_enable`.
    #[track_caller]
    fn not_procedural(&self, r: Reg) {
        if self.with(|m| m.ctl.is_target(r.sig)) {
            let name = self.with(|m| m.def.signals[r.sig].name.clone());
            elab_error(format!(
                "register '{name}' is assigned procedurally (assign); \
                 drive it either procedurally or with set_next / set_enable, not both"
            ));
        }
    }

    /// Sets a register's next value (once). An integer constant takes the
    /// register's type.
    #[track_caller]
    pub fn set_next(&mut self, r: Reg, value: impl Operand) {
        let loc = Location::caller();
        let value = value.to_expr(r.q);
        self.own(value);
        self.own(r.q);
        self.not_procedural(r);
        self.with(|m| {
            let s = &mut m.def.signals[r.sig];
            if s.ty != value.ty {
                elab_error_at(
                    loc,
                    format!(
                        "register '{}' is {}, its next value is {}",
                        s.name, s.ty, value.ty
                    ),
                );
            }
            match &mut s.kind {
                SigKind::Reg { next: n @ None, .. } => *n = Some(value.node()),
                _ => elab_error_at(
                    loc,
                    format!("register '{}' already has a next value", s.name),
                ),
            }
        });
    }

    /// Makes a register load its next value only when `enable` is 1 (once).
    #[track_caller]
    pub fn set_enable(&mut self, r: Reg, enable: Expr) {
        let loc = Location::caller();
        self.own(enable);
        self.own(r.q);
        self.not_procedural(r);
        if enable.ty != Ty::BOOL {
            elab_error(format!(
                "enable must be one unsigned bit, got {}",
                enable.ty
            ));
        }
        self.with(|m| {
            let s = &mut m.def.signals[r.sig];
            match &mut s.kind {
                SigKind::Reg {
                    enable: e @ None, ..
                } => *e = Some(enable.node()),
                _ => elab_error_at(loc, format!("register '{}' already has an enable", s.name)),
            }
        });
    }

    /// Waives a Verilator lint rule for one signal, with the reason it is
    /// expected (written next to the waiver in the emitted `.vlt` file).
    #[track_caller]
    pub fn waive(&mut self, rule: &str, signal: &str, reason: &str) {
        if reason.trim().is_empty() {
            elab_error(format!("waiver of {rule} for '{signal}' needs a reason"));
        }
        let known = self.with(|m| m.names.contains(signal));
        if !known {
            elab_error(format!("waiver names unknown signal '{signal}'"));
        }
        self.with(|m| {
            m.def.waivers.push(Waiver {
                rule: rule.to_string(),
                signal: signal.to_string(),
                reason: reason.to_string(),
            })
        });
    }

    /// Records `stages` (registers of one type, each loading the one before,
    /// the first loading anything) as the delay line `name`, which the
    /// emitter then writes as one shifted array. Claims the names that
    /// array needs: `<name>_q`, `<name>_d`, the loop variable `<name>_k`
    /// and the loop block `g_<name>`.
    #[track_caller]
    pub(crate) fn delay_line(&mut self, name: &str, stages: &[Reg]) {
        for n in [
            format!("{name}_q"),
            format!("{name}_d"),
            format!("{name}_k"),
            format!("g_{name}"),
        ] {
            self.claim_name(&n);
        }
        let stages = stages.iter().map(|r| r.sig).collect();
        self.with(|m| {
            m.def.delay_lines.push(crate::ir::DelayLine {
                name: name.to_string(),
                stages,
            })
        });
    }

    /// Checks the definition is complete and returns it.
    pub fn finish(self) -> ModuleDef {
        self.with(control::lower);
        let mut def = self.with(|m| std::mem::replace(&mut m.def, ModuleDef::empty("")));
        check_complete(&def, self.loc);
        let (clock, reset) = needs_clock_reset(&def);
        def.has_clock = clock;
        def.has_reset = reset;
        def
    }
}

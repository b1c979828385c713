//! Control: `if / elif / else`, `switch / case / default`, enums, FSMs, and
//! the procedural values they assign.
//!
//! Generator code describes control the way a designer thinks about it:
//!
//! ```text
//! m.if_(start, |m| m.assign(count, 0))
//!     .elif(step, |m| m.assign(count, count.q() + 1));
//! m.switch(opcode).case(3, |m| m.assign(sel, 1)).default(|m| m.assign(sel, 0));
//! ```
//!
//! Each call records a statement in a tree; nothing is lowered until
//! [`ModuleBuilder::finish`], because the last assignment on a path wins, and
//! a later statement may override an earlier one. At `finish` every assigned
//! value (a *target*: a register or a [`Comb`]) is lowered on its own into the
//! single-driver IR the emitter and the evaluator already understand: a chain
//! of `?:` muxes for the value, and, for a register, an enable that is high on
//! exactly the paths that assign it. So:
//! - a register keeps its value on a path that does not assign it (a clock
//!   enable, not a feedback mux);
//! - a [`Comb`] takes its declared default there, and one declared without a
//!   default must be assigned on every path, or `finish` stops with an
//!   elaboration error naming its declaration and the `if` or `switch` that
//!   leaves it unassigned. No latch can come out of either: the IR has no way
//!   to express one.
//!
//! Lowering works per target, walking the statement tree with the state
//! "unassigned" or "assigned (enable, value)". A branch that does not touch a
//! target passes the incoming state through unchanged, so no mux is made for
//! it; an `if` without `else` only muxes where a branch really assigns.
//!
//! A `switch` is an `if` chain over `sel == label` conditions (labels are
//! checked for duplicates). When its labels cover every value of the
//! selector, its last case is the fall-through branch, so a complete switch
//! over an enum needs no `default` and leaves no value unassigned.

use super::*;
use crate::error::loc_string;
use std::collections::BTreeMap;
use std::marker::PhantomData;

// ---------------------------------------------------------------------------
// The statement tree.

/// The control state of a module under construction.
#[derive(Debug)]
pub(super) struct Control {
    /// Open blocks, innermost last; `blocks[0]` is the module's top level.
    blocks: Vec<Vec<ProcStmt>>,
    targets: Vec<ProcTarget>,
    by_sig: BTreeMap<SigId, usize>,
    /// For each open FSM state body: (FSM index, state).
    fsm_scopes: Vec<(usize, u32)>,
}

impl Default for Control {
    fn default() -> Control {
        Control {
            blocks: vec![Vec::new()],
            targets: Vec::new(),
            by_sig: BTreeMap::new(),
            fsm_scopes: Vec::new(),
        }
    }
}

impl Control {
    /// Whether `sig` is assigned procedurally (then `set_next` may not drive it).
    pub(super) fn is_target(&self, sig: SigId) -> bool {
        self.by_sig.contains_key(&sig)
    }

    fn current(&mut self) -> &mut Vec<ProcStmt> {
        self.blocks
            .last_mut()
            .expect("the top-level block is never closed")
    }

    /// The `if` or `switch` statement that was opened last in the current block.
    fn last_if(&mut self) -> &mut ProcIf {
        match self.current().last_mut() {
            Some(ProcStmt::If(s)) => s,
            _ => unreachable!("a chain continues the statement it opened"),
        }
    }
}

// ---------------------------------------------------------------------------
// Handles.

/// A combinational value assigned procedurally (declared with
/// [`ModuleBuilder::comb`] or [`ModuleBuilder::comb_default`]). Reading it
/// gives its final value, like a Verilog wire; it is emitted as one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Comb {
    sig: SigId,
    value: Expr,
}

impl Comb {
    /// The value (as finally assigned on the path taken).
    pub fn value(&self) -> Expr {
        self.value
    }
}

/// Something [`ModuleBuilder::assign`] can assign: a register (its next
/// value) or a [`Comb`].
pub trait Assignable: Copy {
    /// The signal and its current value.
    fn target(&self) -> (SigId, Expr);
}

impl Assignable for Reg {
    fn target(&self) -> (SigId, Expr) {
        (self.sig, self.q)
    }
}

impl Assignable for Comb {
    fn target(&self) -> (SigId, Expr) {
        (self.sig, self.value)
    }
}

/// A `switch` case label: an integer of the selector's type or an enum state.
pub trait CaseLabel {
    /// The label as a constant of the selector's type (and module).
    #[track_caller]
    fn label(&self, sel: Expr) -> Expr;
}

macro_rules! int_label {
    ($($t:ty),*) => {$(
        impl CaseLabel for $t {
            #[track_caller]
            fn label(&self, sel: Expr) -> Expr {
                sel.lit(*self)
            }
        }
    )*};
}
int_label!(i8, i16, i32, i64, i128, u8, u16, u32, u64, usize);

// ---------------------------------------------------------------------------
// Enums.

/// A Rust enum usable as a hardware value: states of an FSM, opcodes, modes.
/// Declare one with [`hw_enum!`](crate::hw_enum). Variant `k` (in declaration
/// order) is encoded as the unsigned number `k` in [`HwEnum::ty`]; the emitter
/// names the encodings with `localparam`s (`<TYPE>_<VARIANT>`, upper case).
pub trait HwEnum: Copy + Eq + std::fmt::Debug + 'static {
    /// The Rust type name, e.g. `BridgeState`.
    const TYPE_NAME: &'static str;
    /// Every variant, in declaration order.
    const VARIANTS: &'static [Self];
    /// The variant's Rust name, e.g. `Idle`.
    fn name(self) -> &'static str;
    /// The variant's position in declaration order (its encoding).
    fn index(self) -> u32;
    /// The type of the encoding: as many bits as the largest index needs.
    fn ty() -> Ty {
        Ty::u(crate::ty::bits_for(Self::VARIANTS.len() as u64 - 1))
    }
}

/// Declares a Rust enum that is also a hardware enum ([`HwEnum`]): usable as
/// an operand (`m.assign(mode, Mode::Fast)`), as a `switch` case label and as
/// the states of an [`Fsm`].
///
/// ```
/// hw::hw_enum! {
///     /// Link training states.
///     pub enum LinkState { Down, Training, Up }
/// }
/// use hw::HwEnum;
/// assert_eq!(LinkState::Up.index(), 2);
/// assert_eq!(LinkState::ty(), hw::Ty::u(2));
/// ```
#[macro_export]
macro_rules! hw_enum {
    ($(#[$meta:meta])* $vis:vis enum $name:ident {
        $($(#[$vmeta:meta])* $variant:ident),+ $(,)?
    }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $crate::HwEnum for $name {
            const TYPE_NAME: &'static str = stringify!($name);
            const VARIANTS: &'static [Self] = &[$($name::$variant),+];
            fn name(self) -> &'static str {
                match self {
                    $($name::$variant => stringify!($variant)),+
                }
            }
            fn index(self) -> u32 {
                self as u32
            }
        }

        impl $crate::Operand for $name {
            #[track_caller]
            fn to_expr(self, like: $crate::Expr) -> $crate::Expr {
                $crate::enum_operand(self, like)
            }
        }

        impl $crate::CaseLabel for $name {
            #[track_caller]
            fn label(&self, sel: $crate::Expr) -> $crate::Expr {
                $crate::enum_operand(*self, sel)
            }
        }
    };
}

/// `CamelCase` as `CAMEL_CASE`.
fn upper_snake(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

/// The Verilog `localparam` name of an enum variant.
pub fn enum_const_name<S: HwEnum>(s: S) -> String {
    format!("{}_{}", upper_snake(S::TYPE_NAME), upper_snake(s.name()))
}

/// An enum variant as an operand next to `like` (used by [`hw_enum!`]).
#[doc(hidden)]
#[track_caller]
pub fn enum_operand<S: HwEnum>(s: S, like: Expr) -> Expr {
    if like.ty != S::ty() {
        elab_error(format!(
            "{}::{:?} is a {}, used next to a {} value",
            S::TYPE_NAME,
            s,
            S::ty(),
            like.ty
        ));
    }
    enum_node(like.token, s, Location::caller())
}

/// A constant node holding `s`, named by its `localparam` in the emitted
/// Verilog (declaring the enum in the module on first use).
fn enum_node<S: HwEnum>(token: u32, s: S, loc: Loc) -> Expr {
    let ty = S::ty();
    with_module(token, |m| {
        declare_enum::<S>(m, loc);
        m.def.nodes.push(Node {
            op: Op::Const(BigUint::from(s.index())),
            ty,
            args: vec![],
            loc,
        });
        let node = m.def.nodes.len() - 1;
        m.def.const_names.push((node, enum_const_name(s)));
        Expr {
            token,
            node: node as u32,
            ty,
        }
    })
}

/// Records enum `S` in the module (once), claiming its constant names.
fn declare_enum<S: HwEnum>(m: &mut Building, loc: Loc) {
    let prefix = upper_snake(S::TYPE_NAME);
    if m.def.enums.iter().any(|e| e.name == prefix) {
        return;
    }
    let mut variants = Vec::new();
    for &v in S::VARIANTS {
        let name = enum_const_name(v);
        if let Some(p) = identifier_problem(&name) {
            elab_error_at(loc, p);
        }
        if !m.names.insert(name.clone()) {
            elab_error_at(
                loc,
                format!("enum constant '{name}' clashes with a name already used in this module"),
            );
        }
        variants.push((name, v.index()));
    }
    m.def.enums.push(EnumDecl {
        name: prefix,
        ty: S::ty(),
        variants,
    });
}

// ---------------------------------------------------------------------------
// Building statements.

/// The rest of an `if` chain: [`elif`](IfChain::elif) and
/// [`else_`](IfChain::else_) branches.
pub struct IfChain<'a> {
    m: &'a mut ModuleBuilder,
}

/// A `switch` under construction: [`case`](Switch::case),
/// [`cases`](Switch::cases) and [`default`](Switch::default).
pub struct Switch<'a> {
    m: &'a mut ModuleBuilder,
    sel: Expr,
    /// Labels seen so far, with the line of their case.
    labels: BTreeMap<BigUint, Loc>,
    has_default: bool,
}

impl ModuleBuilder {
    /// Runs `body` with a fresh current block and returns its statements.
    fn run_block(&mut self, body: impl FnOnce(&mut ModuleBuilder)) -> Vec<ProcStmt> {
        self.with(|m| m.ctl.blocks.push(Vec::new()));
        body(self);
        self.with(|m| m.ctl.blocks.pop().expect("opened above"))
    }

    /// Starts an `if`, `switch` or FSM table in the current block; its
    /// branches are added to it as they are written.
    fn open_if(&mut self, what: &'static str, disjoint: bool, loc: Loc) {
        self.with(|m| {
            m.ctl.current().push(ProcStmt::If(ProcIf {
                branches: Vec::new(),
                else_body: None,
                exhaustive: false,
                what,
                disjoint,
                loc,
            }))
        });
    }

    #[track_caller]
    fn check_cond(&self, cond: Expr, what: &str) {
        self.own(cond);
        if cond.ty != Ty::BOOL {
            elab_error(format!(
                "{what} condition must be one unsigned bit, got {}",
                cond.ty
            ));
        }
    }

    /// `if cond { body }`; continue the chain with [`IfChain::elif`] and
    /// [`IfChain::else_`]. Assignments in `body` take effect when `cond` is 1.
    #[track_caller]
    pub fn if_(&mut self, cond: Expr, body: impl FnOnce(&mut ModuleBuilder)) -> IfChain<'_> {
        self.check_cond(cond, "if");
        let loc = Location::caller();
        self.open_if("if", false, loc);
        let block = self.run_block(body);
        self.with(|m| m.ctl.last_if().branches.push((cond.node(), block)));
        IfChain { m: self }
    }

    /// `switch sel { case ... }`: branches on the value of `sel`. The first case
    /// whose label equals `sel` is taken, else the default.
    #[track_caller]
    pub fn switch(&mut self, sel: Expr) -> Switch<'_> {
        self.own(sel);
        let loc = Location::caller();
        self.open_if("switch", true, loc);
        Switch {
            m: self,
            sel,
            labels: BTreeMap::new(),
            has_default: false,
        }
    }

    /// A combinational value of type `ty`, emitted as the wire `name`, that
    /// must be assigned on every path (checked at `finish`).
    #[track_caller]
    pub fn comb(&mut self, name: &str, ty: Ty) -> Comb {
        self.comb_impl(name, ty, None::<i64>, false)
    }

    /// A combinational value that takes `default` on paths that do not assign it.
    #[track_caller]
    pub fn comb_default(&mut self, name: &str, ty: Ty, default: impl Operand) -> Comb {
        self.comb_impl(name, ty, Some(default), false)
    }

    /// An output port (name ending in `_o`) assigned procedurally, on every path.
    #[track_caller]
    pub fn output_comb(&mut self, name: &str, ty: Ty) -> Comb {
        self.comb_impl(name, ty, None::<i64>, true)
    }

    /// An output port assigned procedurally, `default` where not assigned.
    #[track_caller]
    pub fn output_comb_default(&mut self, name: &str, ty: Ty, default: impl Operand) -> Comb {
        self.comb_impl(name, ty, Some(default), true)
    }

    #[track_caller]
    fn comb_impl(&mut self, name: &str, ty: Ty, default: Option<impl Operand>, port: bool) -> Comb {
        let loc = Location::caller();
        let w = if port {
            self.output_decl(name, ty)
        } else {
            self.wire_decl(name, ty)
        };
        let default = default.map(|d| {
            let e = d.to_expr(w.value);
            self.own(e);
            if e.ty != ty {
                elab_error(format!(
                    "default of '{name}' is {}, the value is {ty}",
                    e.ty
                ));
            }
            e.node()
        });
        self.with(|m| {
            m.ctl.by_sig.insert(w.sig, m.ctl.targets.len());
            m.ctl.targets.push(ProcTarget {
                sig: w.sig,
                default,
                is_reg: false,
                loc,
            });
        });
        Comb {
            sig: w.sig,
            value: w.value,
        }
    }

    /// Assigns `value` to `target` on the current path: a register's next
    /// value, or a [`Comb`]'s value. The last assignment on a path wins.
    #[track_caller]
    pub fn assign(&mut self, target: impl Assignable, value: impl Operand) {
        let loc = Location::caller();
        let (sig, current) = target.target();
        self.own(current);
        let value = value.to_expr(current);
        self.own(value);
        self.with(|m| {
            let s = &m.def.signals[sig];
            if s.ty != value.ty {
                elab_error_at(
                    loc,
                    format!(
                        "cannot assign a {} value to {} '{}'",
                        value.ty, s.ty, s.name
                    ),
                );
            }
            let index = match m.ctl.by_sig.get(&sig) {
                Some(&i) => i,
                None => {
                    // A register's first procedural assignment makes it a target.
                    match &s.kind {
                        SigKind::Reg {
                            next: None,
                            enable: None,
                            ..
                        } => {}
                        _ => elab_error_at(
                            loc,
                            format!(
                                "register '{}' already has set_next / set_enable; \
                                 drive it either procedurally or with set_next, not both",
                                s.name
                            ),
                        ),
                    }
                    m.ctl.by_sig.insert(sig, m.ctl.targets.len());
                    m.ctl.targets.push(ProcTarget {
                        sig,
                        default: None,
                        is_reg: true,
                        loc,
                    });
                    m.ctl.targets.len() - 1
                }
            };
            m.ctl.current().push(ProcStmt::Assign {
                target: index,
                value: value.node(),
            });
        });
    }

    /// An enum variant as a constant of this module.
    #[track_caller]
    pub fn enum_lit<S: HwEnum>(&self, s: S) -> Expr {
        enum_node(self.token, s, Location::caller())
    }
}

impl<'a> IfChain<'a> {
    /// `else if cond { body }`.
    #[track_caller]
    pub fn elif(self, cond: Expr, body: impl FnOnce(&mut ModuleBuilder)) -> IfChain<'a> {
        self.m.check_cond(cond, "elif");
        self.m.with(|m| {
            if m.ctl.last_if().else_body.is_some() {
                unreachable!("else_ consumes the chain");
            }
        });
        let block = self.m.run_block(body);
        self.m
            .with(|m| m.ctl.last_if().branches.push((cond.node(), block)));
        self
    }

    /// `else { body }`: ends the chain.
    pub fn else_(self, body: impl FnOnce(&mut ModuleBuilder)) {
        let block = self.m.run_block(body);
        self.m.with(|m| m.ctl.last_if().else_body = Some(block));
    }
}

impl<'a> Switch<'a> {
    /// A case taken when `sel` equals `label`.
    #[track_caller]
    pub fn case(self, label: impl CaseLabel, body: impl FnOnce(&mut ModuleBuilder)) -> Self {
        self.cases(&[label], body)
    }

    /// A case taken when `sel` equals any of `labels`.
    #[track_caller]
    pub fn cases<L: CaseLabel>(
        mut self,
        labels: &[L],
        body: impl FnOnce(&mut ModuleBuilder),
    ) -> Self {
        let loc = Location::caller();
        if labels.is_empty() {
            elab_error("a case needs at least one label".into());
        }
        if self.has_default {
            elab_error("case after default".into());
        }
        let mut cond: Option<Expr> = None;
        for l in labels {
            let k = l.label(self.sel);
            let bits = self.m.with(|m| match &m.def.nodes[k.node()].op {
                Op::Const(bits) => bits.clone(),
                _ => unreachable!("labels are constants"),
            });
            if let Some(first) = self.labels.insert(bits.clone(), loc) {
                elab_error(format!(
                    "case label {} appears twice in this switch (first at {})",
                    crate::emit::literal(self.sel.ty.with_signed(false), &bits),
                    loc_string(first)
                ));
            }
            let eq = self.sel.is_eq(k);
            cond = Some(match cond {
                None => eq,
                Some(c) => c | eq,
            });
        }
        let cond = cond.expect("at least one label");
        let block = self.m.run_block(body);
        self.m
            .with(|m| m.ctl.last_if().branches.push((cond.node(), block)));
        self
    }

    /// Taken when no case is: ends the switch.
    pub fn default(mut self, body: impl FnOnce(&mut ModuleBuilder)) {
        self.has_default = true;
        let block = self.m.run_block(body);
        self.m.with(|m| m.ctl.last_if().else_body = Some(block));
    }
}

impl Drop for Switch<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let w = self.sel.ty.width;
        let complete = !self.has_default && w < 64 && (self.labels.len() as u128) == (1u128 << w);
        if complete {
            self.m.with(|m| m.ctl.last_if().exhaustive = true);
        }
    }
}

// ---------------------------------------------------------------------------
// FSMs.

/// A finite-state machine: a state register of enum `S`. Write its
/// transitions as a table with [`ModuleBuilder::fsm_states`], one
/// [`FsmStates::state`] per state, moving with [`Fsm::goto`]. The current
/// state is [`Fsm::state`]; the emitted Verilog names every state with a
/// `localparam` and lists the transitions above the state register.
#[derive(Debug)]
pub struct Fsm<S: HwEnum> {
    reg: Reg,
    index: usize,
    _states: PhantomData<S>,
}

impl<S: HwEnum> Clone for Fsm<S> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<S: HwEnum> Copy for Fsm<S> {}

/// The state table of an FSM under construction.
pub struct FsmStates<'a, S: HwEnum> {
    m: &'a mut ModuleBuilder,
    fsm: Fsm<S>,
    seen: BTreeMap<u32, Loc>,
}

impl<S: HwEnum> Fsm<S> {
    /// The current state.
    pub fn state(&self) -> Expr {
        self.reg.q
    }

    /// One bit: the FSM is in state `s`.
    #[track_caller]
    pub fn is(&self, s: S) -> Expr {
        let k = enum_node(self.reg.q.token, s, Location::caller());
        self.reg.q.is_eq(k)
    }

    /// Moves to state `s` at the next clock edge (on the current path).
    #[track_caller]
    pub fn goto(&self, m: &mut ModuleBuilder, s: S) {
        let loc = Location::caller();
        let k = enum_node(self.reg.q.token, s, loc);
        m.assign(self.reg, k);
        m.with(|b| {
            let from = b
                .ctl
                .fsm_scopes
                .iter()
                .rev()
                .find(|(f, _)| *f == self.index)
                .map(|(_, st)| *st);
            let info = &mut b.def.fsms[self.index];
            let t = (from, s.index());
            if !info.transitions.contains(&t) {
                info.transitions.push(t);
            }
        });
    }
}

impl ModuleBuilder {
    /// An FSM over the states of `S`, held in register `name`, reset to `reset`.
    #[track_caller]
    pub fn fsm<S: HwEnum>(&mut self, name: &str, reset: S) -> Fsm<S> {
        let reg = self.reg_reset(name, S::ty(), reset.index());
        let loc = Location::caller();
        let index = self.with(|m| {
            declare_enum::<S>(m, loc);
            m.def.fsms.push(FsmInfo {
                register: name.to_string(),
                states: S::VARIANTS.iter().map(|v| enum_const_name(*v)).collect(),
                reset: reset.index(),
                transitions: Vec::new(),
            });
            // Procedural from the start: an FSM that never moves is reported
            // as such at finish.
            m.ctl.by_sig.insert(reg.sig, m.ctl.targets.len());
            m.ctl.targets.push(ProcTarget {
                sig: reg.sig,
                default: None,
                is_reg: true,
                loc,
            });
            m.def.fsms.len() - 1
        });
        Fsm {
            reg,
            index,
            _states: PhantomData,
        }
    }

    /// The FSM's state table: `table` calls [`FsmStates::state`] once per
    /// state that does something. Lowered as a `switch` on the state.
    #[track_caller]
    pub fn fsm_states<S: HwEnum>(
        &mut self,
        fsm: Fsm<S>,
        table: impl FnOnce(&mut FsmStates<'_, S>),
    ) {
        let loc = Location::caller();
        self.open_if("fsm", true, loc);
        let listed = {
            let mut states = FsmStates {
                m: self,
                fsm,
                seen: BTreeMap::new(),
            };
            table(&mut states);
            states.seen.len()
        };
        // The state register only ever holds a variant (it resets to one and
        // moves only to one), so a table listing every variant is complete:
        // its last entry also covers the unused encodings.
        if listed == S::VARIANTS.len() && listed > 0 {
            self.with(|m| m.ctl.last_if().exhaustive = true);
        }
    }
}

impl<S: HwEnum> FsmStates<'_, S> {
    /// What the FSM does in state `s`: `body` runs while in `s`.
    #[track_caller]
    pub fn state(&mut self, s: S, body: impl FnOnce(&mut ModuleBuilder)) -> &mut Self {
        let loc = Location::caller();
        if let Some(first) = self.seen.insert(s.index(), loc) {
            elab_error(format!(
                "state {}::{:?} has two entries in the state table (first at {})",
                S::TYPE_NAME,
                s,
                loc_string(first)
            ));
        }
        let cond = self.fsm.is(s);
        let index = self.fsm.index;
        self.m.with(|m| m.ctl.fsm_scopes.push((index, s.index())));
        let block = self.m.run_block(body);
        self.m.with(|m| {
            m.ctl.fsm_scopes.pop();
            m.ctl.last_if().branches.push((cond.node(), block));
        });
        self
    }
}

// ---------------------------------------------------------------------------
// Lowering.

/// A target's state on a path: unassigned, or assigned with an enable
/// (`None`: always) and a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    Unassigned,
    Assigned {
        enable: Option<NodeId>,
        value: NodeId,
    },
}

struct Lowering<'b> {
    m: &'b mut Building,
    target: usize,
    /// The first `if` / `switch` (in program order) after which the target
    /// may be unassigned on some path: named in the error for a `Comb`.
    open_at: Option<(Loc, &'static str)>,
}

impl Lowering<'_> {
    fn node(&mut self, op: Op, ty: Ty, args: Vec<NodeId>, loc: Loc) -> NodeId {
        self.m.def.nodes.push(Node { op, ty, args, loc });
        self.m.def.nodes.len() - 1
    }

    fn not(&mut self, c: NodeId, loc: Loc) -> NodeId {
        self.node(Op::Not, Ty::BOOL, vec![c], loc)
    }

    fn block(&mut self, stmts: &[ProcStmt], mut path: Path) -> Path {
        for s in stmts {
            match s {
                ProcStmt::Assign { target, value } if *target == self.target => {
                    path = Path::Assigned {
                        enable: None,
                        value: *value,
                    };
                }
                ProcStmt::Assign { .. } => {}
                ProcStmt::If(i) => {
                    if !assigns(i, self.target) {
                        continue;
                    }
                    path = self.if_stmt(i, path);
                }
            }
        }
        path
    }

    fn if_stmt(&mut self, i: &ProcIf, incoming: Path) -> Path {
        let mut branches: Vec<(NodeId, Path)> = i
            .branches
            .iter()
            .map(|(c, body)| (*c, self.block(body, incoming)))
            .collect();
        let fallthrough = if i.exhaustive && i.else_body.is_none() {
            branches.pop().expect("an exhaustive switch has cases").1
        } else {
            match &i.else_body {
                Some(body) => self.block(body, incoming),
                None => incoming,
            }
        };
        // Branches that leave the target as the fall-through path would need
        // no mux: drop them where that keeps the meaning (trailing ones; any
        // one when the conditions exclude each other), and give branches with
        // the same outcome one condition.
        if i.disjoint {
            branches.retain(|(_, p)| *p != fallthrough);
        } else {
            while branches.last().is_some_and(|(_, p)| *p == fallthrough) {
                branches.pop();
            }
        }
        let mut groups: Vec<(NodeId, Path)> = Vec::new();
        for (c, p) in branches {
            let same = if i.disjoint {
                groups.iter().position(|(_, q)| *q == p)
            } else {
                groups.len().checked_sub(1).filter(|&k| groups[k].1 == p)
            };
            match same {
                Some(k) => {
                    let either = self.node(Op::Or, Ty::BOOL, vec![groups[k].0, c], i.loc);
                    groups[k].0 = either;
                }
                None => groups.push((c, p)),
            }
        }
        let mut acc = fallthrough;
        for (c, p) in groups.into_iter().rev() {
            acc = self.merge(c, p, acc, i.loc);
        }
        let was_complete = matches!(incoming, Path::Assigned { enable: None, .. });
        let is_complete = matches!(acc, Path::Assigned { enable: None, .. });
        if !was_complete && !is_complete && self.open_at.is_none() {
            self.open_at = Some((i.loc, i.what));
        }
        acc
    }

    /// The path state after `c ? a : b`.
    fn merge(&mut self, c: NodeId, a: Path, b: Path, loc: Loc) -> Path {
        use Path::*;
        match (a, b) {
            (Unassigned, Unassigned) => Unassigned,
            _ if a == b => a,
            _ => {
                let va = match a {
                    Unassigned => None,
                    Assigned { value, .. } => Some(value),
                };
                let en_a = enable_of(a);
                let en_b = enable_of(b);
                let enable = match (en_a, en_b) {
                    (En::Always, En::Always) => None,
                    (En::Never, En::Never) => unreachable!("handled above"),
                    (En::Always, En::Never) => Some(c),
                    (En::Never, En::Always) => Some(self.not(c, loc)),
                    (En::Always, En::When(e)) => Some(self.node(Op::Or, Ty::BOOL, vec![c, e], loc)),
                    (En::When(e), En::Always) => {
                        let nc = self.not(c, loc);
                        Some(self.node(Op::Or, Ty::BOOL, vec![nc, e], loc))
                    }
                    (En::When(e), En::Never) => Some(self.node(Op::And, Ty::BOOL, vec![c, e], loc)),
                    (En::Never, En::When(e)) => {
                        let nc = self.not(c, loc);
                        Some(self.node(Op::And, Ty::BOOL, vec![nc, e], loc))
                    }
                    (En::When(x), En::When(y)) if x == y => Some(x),
                    (En::When(x), En::When(y)) => {
                        Some(self.node(Op::Mux, Ty::BOOL, vec![c, x, y], loc))
                    }
                };
                let vb = match b {
                    Unassigned => None,
                    Assigned { value, .. } => Some(value),
                };
                let value = match (va, vb) {
                    (Some(x), None) | (None, Some(x)) => x,
                    (Some(x), Some(y)) if x == y => x,
                    (Some(x), Some(y)) => {
                        let ty = self.m.def.nodes[x].ty;
                        self.node(Op::Mux, ty, vec![c, x, y], loc)
                    }
                    (None, None) => unreachable!("handled above"),
                };
                Assigned { enable, value }
            }
        }
    }
}

#[derive(Clone, Copy)]
enum En {
    Always,
    Never,
    When(NodeId),
}

fn enable_of(p: Path) -> En {
    match p {
        Path::Unassigned => En::Never,
        Path::Assigned { enable: None, .. } => En::Always,
        Path::Assigned {
            enable: Some(e), ..
        } => En::When(e),
    }
}

/// Whether any branch of `i` assigns `target`.
fn assigns(i: &ProcIf, target: usize) -> bool {
    i.branches.iter().any(|(_, b)| block_assigns(b, target))
        || i.else_body
            .as_deref()
            .is_some_and(|b| block_assigns(b, target))
}

/// Whether any statement of `b` (at any depth) assigns `target`.
pub(crate) fn block_assigns(b: &[ProcStmt], target: usize) -> bool {
    b.iter().any(|s| match s {
        ProcStmt::Assign { target: t, .. } => *t == target,
        ProcStmt::If(inner) => assigns(inner, target),
    })
}

/// Lowers every procedural target of the module into drivers (at `finish`).
pub(super) fn lower(m: &mut Building) {
    if m.ctl.blocks.len() != 1 {
        unreachable!("every control block is closed when its closure returns");
    }
    let root = std::mem::take(&mut m.ctl.blocks[0]);
    let targets = std::mem::take(&mut m.ctl.targets);
    lower_targets(m, &root, &targets);
    m.def.procedural = Procedural {
        targets,
        stmts: root,
    };
}

fn lower_targets(m: &mut Building, root: &[ProcStmt], targets: &[ProcTarget]) {
    for (index, t) in targets.iter().enumerate() {
        let start = match t.default {
            Some(d) => Path::Assigned {
                enable: None,
                value: d,
            },
            None => Path::Unassigned,
        };
        let mut l = Lowering {
            m,
            target: index,
            open_at: None,
        };
        let end = l.block(root, start);
        let open_at = l.open_at;
        let name = m.def.signals[t.sig].name.clone();
        match (t.is_reg, end) {
            (_, Path::Unassigned) => {
                let what = if t.is_reg {
                    "register"
                } else {
                    "combinational value"
                };
                if m.def.fsms.iter().any(|f| f.register == name) {
                    elab_error_at(t.loc, format!("FSM '{name}' never changes state (no goto)"))
                }
                elab_error_at(t.loc, format!("{what} '{name}' is never assigned"))
            }
            (true, Path::Assigned { enable, value }) => {
                if let SigKind::Reg {
                    next, enable: en, ..
                } = &mut m.def.signals[t.sig].kind
                {
                    *next = Some(value);
                    *en = enable;
                }
            }
            (
                false,
                Path::Assigned {
                    enable: None,
                    value,
                },
            ) => {
                if let SigKind::Wire { driver } = &mut m.def.signals[t.sig].kind {
                    *driver = Some(value);
                }
            }
            (
                false,
                Path::Assigned {
                    enable: Some(_), ..
                },
            ) => {
                let (at, what) = open_at.expect("a partial assignment comes from a branch");
                elab_error_at(
                    t.loc,
                    format!(
                        "combinational value '{name}' is not assigned on every path: \
                         the {what} at {} leaves it unassigned (add an else / default \
                         branch, or declare it with comb_default)",
                        loc_string(at)
                    ),
                )
            }
        }
    }
}

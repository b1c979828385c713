//! Building module definitions: the `ModuleBuilder` and the `Expr` handle.
//!
//! An [`Expr`] is a small `Copy` handle (module token, node index, type). The
//! node it names lives in the arena of the module being built, held in a
//! thread-local table while its [`ModuleBuilder`] is alive; operators on `Expr`
//! append nodes there. That keeps generator code close to the maths it describes
//! (`acc.q() + a.mul_wide(w).sext(32)`) while every operation is still type-checked
//! on the spot and reports the generator's own source line on a mistake.
//!
//! Building a child definition while a parent is under construction is normal
//! (definitions are built on demand by [`crate::Design::define`]); each builder
//! has its own token, and using an `Expr` of one module in another is an error.

use crate::error::{elab_error, elab_error_at};
use crate::ir::*;
use crate::names::identifier_problem;
use crate::ty::Ty;
use num_bigint::{BigInt, BigUint};
use num_traits::{One, Zero};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::panic::Location;
use std::rc::Rc;

mod checks;
mod control;
mod expr;
mod hierarchy;
mod memory;
mod module;
mod record;

use checks::{check_complete, needs_clock_reset};
pub(crate) use checks::{flat_of, for_each_index};
pub(crate) use control::block_assigns;
pub use control::{
    enum_const_name, enum_operand, Assignable, CaseLabel, Comb, Fsm, FsmStates, HwEnum, IfChain,
    Switch,
};
pub use expr::{cat, mux, mux_bitwise, Operand};
pub use record::{Record, RecordReg, RecordTy, Stream, StreamSink};

/// A value inside a module under construction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expr {
    token: u32,
    node: u32,
    ty: Ty,
}

/// A register declared with [`ModuleBuilder::reg`]; read it with [`Reg::q`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reg {
    sig: SigId,
    q: Expr,
}

/// A wire or output port declared before its driver is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wire {
    sig: SigId,
    value: Expr,
}

/// A bus: a vector of equally typed elements, each driven separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bus {
    sig: SigId,
    token: u32,
}

/// A child instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inst {
    index: usize,
    token: u32,
}

/// An array of child instances, emitted as a Verilog generate loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstArray {
    index: usize,
    token: u32,
    rank: usize,
}

/// A synchronous memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mem {
    index: usize,
    token: u32,
}

/// An affine index over an instance array's loop variables, e.g. `row + 1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Idx(pub(crate) Affine);

impl Idx {
    /// A constant index.
    pub fn konst(value: i64) -> Idx {
        Idx(Affine {
            coeffs: Vec::new(),
            offset: value,
        })
    }
}

impl std::ops::Add<i64> for Idx {
    type Output = Idx;
    fn add(mut self, rhs: i64) -> Idx {
        self.0.offset += rhs;
        self
    }
}

impl std::ops::Sub<i64> for Idx {
    type Output = Idx;
    fn sub(mut self, rhs: i64) -> Idx {
        self.0.offset -= rhs;
        self
    }
}

impl std::ops::Mul<i64> for Idx {
    type Output = Idx;
    fn mul(mut self, rhs: i64) -> Idx {
        self.0.offset *= rhs;
        for c in &mut self.0.coeffs {
            *c *= rhs;
        }
        self
    }
}

impl std::ops::Add<Idx> for Idx {
    type Output = Idx;
    fn add(self, rhs: Idx) -> Idx {
        let n = self.0.coeffs.len().max(rhs.0.coeffs.len());
        let coeff = |a: &Affine, k: usize| a.coeffs.get(k).copied().unwrap_or(0);
        Idx(Affine {
            coeffs: (0..n)
                .map(|k| coeff(&self.0, k) + coeff(&rhs.0, k))
                .collect(),
            offset: self.0.offset + rhs.0.offset,
        })
    }
}

// ---------------------------------------------------------------------------
// The thread-local table of modules under construction.

struct Building {
    token: u32,
    def: ModuleDef,
    /// Every name declared so far in this module (signals, instances, ...).
    names: BTreeSet<String>,
    /// For each signal, the node that reads it.
    sig_nodes: Vec<NodeId>,
    /// Procedural assignments (if / switch / FSM), lowered at finish.
    ctl: control::Control,
}

thread_local! {
    static BUILDING: RefCell<Vec<Building>> = const { RefCell::new(Vec::new()) };
    static NEXT_TOKEN: std::cell::Cell<u32> = const { std::cell::Cell::new(1) };
}

#[track_caller]
fn with_module<R>(token: u32, f: impl FnOnce(&mut Building) -> R) -> R {
    let loc = Location::caller();
    BUILDING.with(|b| {
        let mut b = b.borrow_mut();
        match b.iter_mut().rev().find(|m| m.token == token) {
            Some(m) => f(m),
            None => elab_error_at(
                loc,
                "expression used after its module was finished (or in another thread)".into(),
            ),
        }
    })
}

#[track_caller]
fn push_node(token: u32, op: Op, ty: Ty, args: Vec<NodeId>) -> Expr {
    let loc = Location::caller();
    with_module(token, |m| {
        m.def.nodes.push(Node { op, ty, args, loc });
        Expr {
            token,
            node: (m.def.nodes.len() - 1) as u32,
            ty,
        }
    })
}

fn module_name(token: u32) -> String {
    BUILDING.with(|b| {
        b.borrow()
            .iter()
            .find(|m| m.token == token)
            .map(|m| m.def.name.clone())
            .unwrap_or_else(|| "<finished module>".into())
    })
}

#[track_caller]
fn same_module(a: Expr, b: Expr) {
    if a.token != b.token {
        elab_error(format!(
            "operands belong to different modules ('{}' and '{}')",
            module_name(a.token),
            module_name(b.token)
        ));
    }
}

/// The bit pattern of `value` in `ty`, or an error if it does not fit.
#[track_caller]
pub(crate) fn const_bits(ty: Ty, value: &BigInt) -> BigUint {
    let w = ty.width as usize;
    let (lo, hi) = if ty.signed {
        let half = BigInt::one() << (w - 1);
        (-half.clone(), half - 1)
    } else {
        (BigInt::zero(), (BigInt::one() << w) - 1)
    };
    if value < &lo || value > &hi {
        elab_error(format!("constant {value} does not fit in {ty}"));
    }
    let modulus = BigInt::one() << w;
    let v = ((value % &modulus) + &modulus) % &modulus;
    v.to_biguint().expect("non-negative after reduction")
}

// ---------------------------------------------------------------------------
// ModuleBuilder.

/// Builds one module definition. Dropping it without [`finish`](Self::finish)
/// discards the definition.
pub struct ModuleBuilder {
    token: u32,
    loc: Loc,
}

impl Drop for ModuleBuilder {
    fn drop(&mut self) {
        // Remove our entry whether or not finish() ran (it may have panicked).
        let _ = BUILDING.try_with(|b| {
            if let Ok(mut b) = b.try_borrow_mut() {
                b.retain(|m| m.token != self.token);
            }
        });
    }
}

impl ModuleBuilder {
    /// Starts a module definition called `name` (its Verilog name).
    #[track_caller]
    pub fn new(name: &str) -> ModuleBuilder {
        if let Some(p) = identifier_problem(name) {
            elab_error(p);
        }
        let token = NEXT_TOKEN.with(|t| {
            let v = t.get();
            t.set(v + 1);
            v
        });
        let loc = Location::caller();
        BUILDING.with(|b| {
            b.borrow_mut().push(Building {
                token,
                def: ModuleDef::empty(name),

                names: BTreeSet::new(),
                sig_nodes: Vec::new(),
                ctl: control::Control::default(),
            })
        });
        ModuleBuilder { token, loc }
    }

    #[track_caller]
    fn with<R>(&self, f: impl FnOnce(&mut Building) -> R) -> R {
        with_module(self.token, f)
    }

    #[track_caller]
    fn own(&self, e: Expr) {
        if e.token != self.token {
            elab_error(format!(
                "value of module '{}' used in module '{}'",
                module_name(e.token),
                module_name(self.token)
            ));
        }
    }

    /// Records a generator parameter (shown in the module header).
    pub fn param(&mut self, name: &str, value: impl ToString) {
        let value = value.to_string();
        self.with(|m| m.def.params.push((name.to_string(), value)));
    }

    /// A one-line description for the module header.
    pub fn doc(&mut self, text: &str) {
        self.with(|m| m.def.doc = text.to_string());
    }

    /// Asks Verilator to keep this module as a C++ class of its own rather
    /// than inlining each instance into its parent, for `reason` (written next
    /// to the request in the emitted `.vlt` file). Worth it for a large module
    /// instantiated many times: a flattened array puts every instance into a
    /// few huge C++ functions that compile slowly. Verilator still specialises
    /// each instance's code; [`shared_code`](Self::shared_code) goes further.
    /// Changes nothing but Verilator models.
    #[track_caller]
    pub fn no_inline(&mut self, reason: &str) {
        let reason = request_reason("a simulation layout request", reason);
        self.with(|m| m.def.sim_layout = SimLayout::Separate { reason });
    }

    /// Asks Verilator for one copy of this module's code serving every
    /// instance (see [`SimLayout::Shared`]), for `reason`. The model's code,
    /// and so its build time and instruction-cache footprint, then grow with
    /// the number of distinct modules instead of the number of instances, at
    /// the price of copying inputs and of Verilator's data-flow optimizer.
    /// Changes nothing but Verilator models.
    #[track_caller]
    pub fn shared_code(&mut self, reason: &str) {
        let reason = request_reason("a simulation layout request", reason);
        self.with(|m| m.def.sim_layout = SimLayout::Shared { reason });
    }

    /// Asks synthesis to keep every instance of this module as an instance
    /// (`(* keep_hierarchy *)`, which Yosys honours), for `reason` (written
    /// next to the attribute). Use it where flattening would undo a register
    /// placed on purpose: Yosys merges flip-flops with the same input, so a
    /// copy of a register kept next to the one cell it feeds (a DSP block's
    /// operand) only survives behind a module boundary. Simulation is
    /// unchanged.
    #[track_caller]
    pub fn keep_hierarchy(&mut self, reason: &str) {
        let reason = request_reason("keep_hierarchy", reason);
        self.with(|m| m.def.keep_hierarchy = Some(reason));
    }

    #[track_caller]
    fn claim_name(&self, name: &str) {
        if let Some(p) = identifier_problem(name) {
            elab_error(p);
        }
        if name == CLOCK || name == RESET {
            elab_error(format!("'{name}' is the implicit clock/reset port"));
        }
        let fresh = self.with(|m| m.names.insert(name.to_string()));
        if !fresh {
            elab_error(format!("name '{name}' is already used in this module"));
        }
    }

    #[track_caller]
    fn add_signal(&self, name: &str, ty: Ty, kind: SigKind, port: Option<Dir>) -> (SigId, Expr) {
        let loc = Location::caller();
        let sig = self.with(|m| {
            m.def.signals.push(Signal {
                name: name.to_string(),
                ty,
                kind,
                port,
                loc,
            });
            if port.is_some() {
                let id = m.def.signals.len() - 1;
                m.def.ports.push(id);
            }
            m.def.signals.len() - 1
        });
        let read = push_node(self.token, Op::Sig(sig), ty, vec![]);
        self.with(|m| m.sig_nodes.push(read.node()));
        (sig, read)
    }
}

/// The `width`-bit two's complement pattern of `value` (wrapping).
pub(crate) fn const_bits_wrapping(width: u32, value: &BigInt) -> BigUint {
    let modulus = BigInt::one() << width as usize;
    let v = ((value % &modulus) + &modulus) % &modulus;
    v.to_biguint().expect("non-negative after reduction")
}

/// The reason of a request about a module (a Verilator layout, keeping it
/// for synthesis), which must say something, on one line.
#[track_caller]
fn request_reason(what: &str, reason: &str) -> String {
    // Written into a one-line comment next to the request (`waivers.vlt`,
    // the module's header).
    if reason.trim().is_empty() || reason.contains('\n') {
        elab_error(format!("{what} needs a reason on one line"));
    }
    reason.to_string()
}

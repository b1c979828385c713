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
// Expr: operations.

/// Something that can stand on the right of an operator next to an `Expr`: an
/// `Expr`, or an integer constant that takes the left operand's type.
pub trait Operand {
    #[track_caller]
    fn to_expr(self, like: Expr) -> Expr;
}

impl Operand for Expr {
    fn to_expr(self, _like: Expr) -> Expr {
        self
    }
}

macro_rules! int_operand {
    ($($t:ty),*) => {$(
        impl Operand for $t {
            #[track_caller]
            fn to_expr(self, like: Expr) -> Expr {
                like.lit(BigInt::from(self))
            }
        }
    )*};
}
int_operand!(i8, i16, i32, i64, i128, u8, u16, u32, u64, usize, BigInt);

impl Expr {
    /// The value's type.
    pub fn ty(&self) -> Ty {
        self.ty
    }

    /// Width in bits.
    pub fn width(&self) -> u32 {
        self.ty.width
    }

    pub(crate) fn node(&self) -> NodeId {
        self.node as NodeId
    }

    /// A constant of this value's type (and module).
    #[track_caller]
    pub fn lit(self, value: impl Into<BigInt>) -> Expr {
        let bits = const_bits(self.ty, &value.into());
        push_node(self.token, Op::Const(bits), self.ty, vec![])
    }

    /// A constant of another type in this value's module.
    #[track_caller]
    pub fn lit_of(self, ty: Ty, value: impl Into<BigInt>) -> Expr {
        let bits = const_bits(ty, &value.into());
        push_node(self.token, Op::Const(bits), ty, vec![])
    }

    #[track_caller]
    fn same_type_binop(self, rhs: Expr, op: Op, verb: &str) -> Expr {
        same_module(self, rhs);
        if self.ty != rhs.ty {
            elab_error(format!(
                "cannot {verb} {} and {}: operand types must be equal \
                 (extend, truncate or cast one side explicitly)",
                self.ty, rhs.ty
            ));
        }
        push_node(self.token, op, self.ty, vec![self.node(), rhs.node()])
    }

    #[track_caller]
    fn compare(self, rhs: Expr, op: Op) -> Expr {
        same_module(self, rhs);
        if self.ty != rhs.ty {
            elab_error(format!(
                "cannot compare {} with {}: operand types must be equal",
                self.ty, rhs.ty
            ));
        }
        push_node(self.token, op, Ty::BOOL, vec![self.node(), rhs.node()])
    }

    /// `self == rhs`, one unsigned bit.
    #[track_caller]
    pub fn is_eq(self, rhs: impl Operand) -> Expr {
        let rhs = rhs.to_expr(self);
        self.compare(rhs, Op::Eq)
    }

    /// `self != rhs`.
    #[track_caller]
    pub fn is_ne(self, rhs: impl Operand) -> Expr {
        let rhs = rhs.to_expr(self);
        self.compare(rhs, Op::Ne)
    }

    /// `self < rhs` (signed comparison when the operands are signed).
    #[track_caller]
    pub fn is_lt(self, rhs: impl Operand) -> Expr {
        let rhs = rhs.to_expr(self);
        self.compare(rhs, Op::Lt)
    }

    /// `self <= rhs`.
    #[track_caller]
    pub fn is_le(self, rhs: impl Operand) -> Expr {
        let rhs = rhs.to_expr(self);
        self.compare(rhs, Op::Le)
    }

    /// `self > rhs`.
    #[track_caller]
    pub fn is_gt(self, rhs: impl Operand) -> Expr {
        let rhs = rhs.to_expr(self);
        self.compare(rhs, Op::Gt)
    }

    /// `self >= rhs`.
    #[track_caller]
    pub fn is_ge(self, rhs: impl Operand) -> Expr {
        let rhs = rhs.to_expr(self);
        self.compare(rhs, Op::Ge)
    }

    /// The full product: width is the sum of the widths; both operands must have
    /// the same signedness.
    #[track_caller]
    pub fn mul_wide(self, rhs: Expr) -> Expr {
        same_module(self, rhs);
        if self.ty.signed != rhs.ty.signed {
            elab_error(format!(
                "cannot multiply {} by {}: signedness differs",
                self.ty, rhs.ty
            ));
        }
        let ty = Ty::new(self.ty.width + rhs.ty.width, self.ty.signed);
        push_node(self.token, Op::MulWide, ty, vec![self.node(), rhs.node()])
    }

    #[track_caller]
    fn shift(self, amount: Expr, op: Op) -> Expr {
        same_module(self, amount);
        if amount.ty.signed {
            elab_error(format!("shift amount must be unsigned, got {}", amount.ty));
        }
        push_node(self.token, op, self.ty, vec![self.node(), amount.node()])
    }

    #[track_caller]
    fn reduce(self, op: Op) -> Expr {
        push_node(self.token, op, Ty::BOOL, vec![self.node()])
    }

    /// AND of all bits.
    #[track_caller]
    pub fn all(self) -> Expr {
        self.reduce(Op::RedAnd)
    }

    /// OR of all bits.
    #[track_caller]
    pub fn any(self) -> Expr {
        self.reduce(Op::RedOr)
    }

    /// XOR of all bits (parity).
    #[track_caller]
    pub fn parity(self) -> Expr {
        self.reduce(Op::RedXor)
    }

    /// `width` bits starting at bit `lo`, as an unsigned value.
    #[track_caller]
    pub fn slice(self, lo: u32, width: u32) -> Expr {
        if width == 0 || lo.checked_add(width).is_none_or(|end| end > self.ty.width) {
            elab_error(format!(
                "slice [{lo} +: {width}] is outside a {}-bit value",
                self.ty.width
            ));
        }
        push_node(
            self.token,
            Op::Slice { lo },
            Ty::u(width),
            vec![self.node()],
        )
    }

    /// Bit `i`, as one unsigned bit.
    #[track_caller]
    pub fn bit(self, i: u32) -> Expr {
        self.slice(i, 1)
    }

    /// The most significant bit (the sign bit of a signed value).
    #[track_caller]
    pub fn msb(self) -> Expr {
        self.slice(self.ty.width - 1, 1)
    }

    /// Zero-extends an unsigned value to `width` bits.
    #[track_caller]
    pub fn zext(self, width: u32) -> Expr {
        if self.ty.signed {
            elab_error(format!(
                "zext of signed {}: use sext, or as_unsigned first",
                self.ty
            ));
        }
        self.extend(width, Op::Zext)
    }

    /// Sign-extends a signed value to `width` bits.
    #[track_caller]
    pub fn sext(self, width: u32) -> Expr {
        if !self.ty.signed {
            elab_error(format!(
                "sext of unsigned {}: use zext, or as_signed first",
                self.ty
            ));
        }
        self.extend(width, Op::Sext)
    }

    /// Extends to `width` bits by the value's own signedness.
    #[track_caller]
    pub fn ext(self, width: u32) -> Expr {
        if self.ty.signed {
            self.sext(width)
        } else {
            self.zext(width)
        }
    }

    #[track_caller]
    fn extend(self, width: u32, op: Op) -> Expr {
        if width < self.ty.width {
            elab_error(format!(
                "cannot extend {} to {width} bits (use trunc)",
                self.ty
            ));
        }
        if width == self.ty.width {
            return self;
        }
        let ty = Ty::new(width, self.ty.signed);
        push_node(self.token, op, ty, vec![self.node()])
    }

    /// Keeps the low `width` bits, with the same signedness.
    #[track_caller]
    pub fn trunc(self, width: u32) -> Expr {
        if width > self.ty.width {
            elab_error(format!(
                "cannot truncate {} to {width} bits (use zext/sext)",
                self.ty
            ));
        }
        if width == self.ty.width {
            return self;
        }
        let low = self.slice(0, width);
        if self.ty.signed {
            low.as_signed()
        } else {
            low
        }
    }

    /// The same bits, read as signed.
    #[track_caller]
    pub fn as_signed(self) -> Expr {
        self.cast(true)
    }

    /// The same bits, read as unsigned.
    #[track_caller]
    pub fn as_unsigned(self) -> Expr {
        self.cast(false)
    }

    #[track_caller]
    fn cast(self, signed: bool) -> Expr {
        if self.ty.signed == signed {
            return self;
        }
        // Casting back a cast returns the original value, not a cast of a cast.
        let source = with_module(self.token, |m| {
            let n = &m.def.nodes[self.node()];
            (n.op == Op::Cast).then(|| n.args[0])
        });
        if let Some(src) = source {
            return Expr {
                token: self.token,
                node: src as u32,
                ty: self.ty.with_signed(signed),
            };
        }
        push_node(
            self.token,
            Op::Cast,
            self.ty.with_signed(signed),
            vec![self.node()],
        )
    }

    /// `self ? a : b`; `self` must be one unsigned bit.
    #[track_caller]
    pub fn select(self, a: Expr, b: Expr) -> Expr {
        mux(self, a, b)
    }
}

/// `sel ? a : b` with a one-bit `sel` and equal types for `a` and `b`.
#[track_caller]
pub fn mux(sel: Expr, a: Expr, b: Expr) -> Expr {
    same_module(sel, a);
    same_module(sel, b);
    if sel.ty != Ty::BOOL {
        elab_error(format!(
            "mux select must be one unsigned bit, got {}",
            sel.ty
        ));
    }
    if a.ty != b.ty {
        elab_error(format!(
            "mux arms must have equal types, got {} and {}",
            a.ty, b.ty
        ));
    }
    push_node(
        sel.token,
        Op::Mux,
        a.ty,
        vec![sel.node(), a.node(), b.node()],
    )
}

/// Concatenation, most significant part first; the result is unsigned.
#[track_caller]
pub fn cat(parts: &[Expr]) -> Expr {
    let Some(first) = parts.first() else {
        elab_error("cat of no values".into())
    };
    let mut width = 0u32;
    for p in parts {
        same_module(*first, *p);
        width = width.saturating_add(p.ty.width);
    }
    if parts.len() == 1 {
        return first.as_unsigned();
    }
    push_node(
        first.token,
        Op::Concat,
        Ty::u(width),
        parts.iter().map(|p| p.node()).collect(),
    )
}

macro_rules! binop_trait {
    ($trait:ident, $method:ident, $op:expr, $verb:expr) => {
        impl<R: Operand> std::ops::$trait<R> for Expr {
            type Output = Expr;
            #[track_caller]
            fn $method(self, rhs: R) -> Expr {
                let rhs = rhs.to_expr(self);
                self.same_type_binop(rhs, $op, $verb)
            }
        }
    };
}

binop_trait!(Add, add, Op::Add, "add");
binop_trait!(Sub, sub, Op::Sub, "subtract");
binop_trait!(Mul, mul, Op::Mul, "multiply");
binop_trait!(BitAnd, bitand, Op::And, "AND");
binop_trait!(BitOr, bitor, Op::Or, "OR");
binop_trait!(BitXor, bitxor, Op::Xor, "XOR");

impl std::ops::Not for Expr {
    type Output = Expr;
    #[track_caller]
    fn not(self) -> Expr {
        push_node(self.token, Op::Not, self.ty, vec![self.node()])
    }
}

impl std::ops::Neg for Expr {
    type Output = Expr;
    #[track_caller]
    fn neg(self) -> Expr {
        push_node(self.token, Op::Neg, self.ty, vec![self.node()])
    }
}

/// `value << amount`: shift left by a variable unsigned amount; amounts >= the
/// width give zero.
impl std::ops::Shl<Expr> for Expr {
    type Output = Expr;
    #[track_caller]
    fn shl(self, amount: Expr) -> Expr {
        self.shift(amount, Op::Shl)
    }
}

/// `value >> amount`: arithmetic for signed values, logical for unsigned ones.
/// Amounts >= the width give all sign bits / zero.
impl std::ops::Shr<Expr> for Expr {
    type Output = Expr;
    #[track_caller]
    fn shr(self, amount: Expr) -> Expr {
        self.shift(amount, Op::Shr)
    }
}

/// `value << k` for a constant `k`.
impl std::ops::Shl<u32> for Expr {
    type Output = Expr;
    #[track_caller]
    fn shl(self, amount: u32) -> Expr {
        let a = self.lit_of(Ty::u(32), amount);
        self.shift(a, Op::Shl)
    }
}

/// `value >> k` for a constant `k` (arithmetic for signed values).
impl std::ops::Shr<u32> for Expr {
    type Output = Expr;
    #[track_caller]
    fn shr(self, amount: u32) -> Expr {
        let a = self.lit_of(Ty::u(32), amount);
        self.shift(a, Op::Shr)
    }
}

impl Reg {
    /// The register's current value.
    pub fn q(&self) -> Expr {
        self.q
    }
}

impl Wire {
    /// The wire's value.
    pub fn value(&self) -> Expr {
        self.value
    }
}

impl InstArray {
    /// Loop variable `k` of the array, for bus indices.
    #[track_caller]
    pub fn var(&self, k: usize) -> Idx {
        if k >= self.rank {
            elab_error(format!(
                "instance array has {} dimensions, no variable {k}",
                self.rank
            ));
        }
        let mut coeffs = vec![0; self.rank];
        coeffs[k] = 1;
        Idx(Affine { coeffs, offset: 0 })
    }
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
    #[track_caller]
    pub fn drive(&mut self, w: Wire, value: Expr) {
        let loc = Location::caller();
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

    /// Sets a register's next value (once).
    #[track_caller]
    pub fn set_next(&mut self, r: Reg, value: Expr) {
        let loc = Location::caller();
        self.own(value);
        self.own(r.q);
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

    /// A bus of `dims` elements of type `elem` (row-major), emitted as an array
    /// of nets (one per element). Each element must be driven exactly once, by [`bus_drive`]
    /// (Self::bus_drive) or by an instance array's output.
    #[track_caller]
    pub fn bus(&mut self, name: &str, elem: Ty, dims: &[u32]) -> Bus {
        if dims.is_empty() || dims.contains(&0) {
            elab_error(format!(
                "bus '{name}' needs non-empty dimensions, got {dims:?}"
            ));
        }
        let count: u64 = dims.iter().map(|&d| d as u64).product();
        let width = count
            .checked_mul(elem.width as u64)
            .filter(|&w| w <= crate::ty::MAX_WIDTH as u64)
            .unwrap_or_else(|| elab_error(format!("bus '{name}' is too wide")));
        self.claim_name(name);
        let (sig, _) = self.add_signal(
            name,
            Ty::u(width as u32),
            SigKind::Bus {
                elem,
                dims: dims.to_vec(),
                drives: Vec::new(),
            },
            None,
        );
        Bus {
            sig,
            token: self.token,
        }
    }

    #[track_caller]
    fn bus_flat_index(&self, bus: Bus, index: &[u32]) -> (u64, Ty, SigId) {
        let loc = Location::caller();
        if bus.token != self.token {
            elab_error("bus belongs to another module".into());
        }
        self.with(|m| {
            let s = &m.def.signals[bus.sig];
            let SigKind::Bus { elem, dims, .. } = &s.kind else {
                unreachable!("Bus handle names a bus")
            };
            if index.len() != dims.len() || index.iter().zip(dims).any(|(i, d)| i >= d) {
                elab_error_at(
                    loc,
                    format!(
                        "index {index:?} is outside bus '{}' of dimensions {dims:?}",
                        s.name
                    ),
                );
            }
            let flat = index
                .iter()
                .zip(dims)
                .fold(0u64, |acc, (&i, &d)| acc * d as u64 + i as u64);
            (flat, *elem, bus.sig)
        })
    }

    /// Reads one bus element.
    #[track_caller]
    pub fn bus_read(&mut self, bus: Bus, index: &[u32]) -> Expr {
        let (flat, elem, sig) = self.bus_flat_index(bus, index);
        let whole = self.with(|m| m.sig_nodes[sig]);
        let ty = self.with(|m| m.def.signals[sig].ty);
        let whole = Expr {
            token: self.token,
            node: whole as u32,
            ty,
        };
        let raw = whole.slice((flat * elem.width as u64) as u32, elem.width);
        if elem.signed {
            raw.as_signed()
        } else {
            raw
        }
    }

    /// Drives one bus element from the parent.
    #[track_caller]
    pub fn bus_drive(&mut self, bus: Bus, index: &[u32], value: Expr) {
        self.own(value);
        let (flat, elem, sig) = self.bus_flat_index(bus, index);
        if value.ty != elem {
            elab_error(format!(
                "bus element is {elem}, cannot drive it with {}",
                value.ty
            ));
        }
        self.with(|m| {
            if let SigKind::Bus { drives, .. } = &mut m.def.signals[sig].kind {
                drives.push((flat, value.node()));
            }
        });
    }

    /// Instantiates `module` as `name`. Connect every input with
    /// [`connect`](Self::connect); read outputs with [`inst_output`]
    /// (Self::inst_output). Outputs appear in this module as wires named
    /// `<name>_<port>`.
    #[track_caller]
    pub fn instance(&mut self, name: &str, module: &Rc<ModuleDef>) -> Inst {
        self.claim_name(name);
        let loc = Location::caller();
        let index = self.with(|m| m.def.instances.len());
        let mut conns = Vec::new();
        for &p in &module.ports {
            let port = &module.signals[p];
            match port.port {
                Some(Dir::Out) => {
                    let wire = format!("{name}_{}", port.name);
                    self.claim_name(&wire);
                    let (sig, _) = self.add_signal(
                        &wire,
                        port.ty,
                        SigKind::InstOut {
                            inst: index,
                            port: conns.len(),
                        },
                        None,
                    );
                    conns.push(Some(InstConn::Output(sig)));
                }
                _ => conns.push(None),
            }
        }
        self.with(|m| {
            m.def.instances.push(Instance {
                name: name.to_string(),
                module: module.clone(),
                conns,
                loc,
            })
        });
        Inst {
            index,
            token: self.token,
        }
    }

    #[track_caller]
    fn child_port(&self, module: &ModuleDef, port: &str) -> (usize, Ty, Dir) {
        match module.port(port) {
            Some((i, s)) => (i, s.ty, s.port.expect("port")),
            None => elab_error(format!("module '{}' has no port '{port}'", module.name)),
        }
    }

    /// Connects an input port of an instance.
    #[track_caller]
    pub fn connect(&mut self, inst: Inst, port: &str, value: Expr) {
        let loc = Location::caller();
        self.own(value);
        if inst.token != self.token {
            elab_error("instance belongs to another module".into());
        }
        let module = self.with(|m| m.def.instances[inst.index].module.clone());
        let (i, ty, dir) = self.child_port(&module, port);
        if dir != Dir::In {
            elab_error(format!("'{port}' of '{}' is an output", module.name));
        }
        if ty != value.ty {
            elab_error(format!(
                "port '{port}' of '{}' is {ty}, connected to a {} value",
                module.name, value.ty
            ));
        }
        self.with(|m| {
            let c = &mut m.def.instances[inst.index].conns[i];
            if c.is_some() {
                elab_error_at(loc, format!("port '{port}' is already connected"));
            }
            *c = Some(InstConn::Input(value.node()));
        });
    }

    /// The value of an instance's output port.
    #[track_caller]
    pub fn inst_output(&mut self, inst: Inst, port: &str) -> Expr {
        if inst.token != self.token {
            elab_error("instance belongs to another module".into());
        }
        let (module, conns) = self.with(|m| {
            let i = &m.def.instances[inst.index];
            (i.module.clone(), i.conns.clone())
        });
        let (i, ty, dir) = self.child_port(&module, port);
        if dir != Dir::Out {
            elab_error(format!("'{port}' of '{}' is an input", module.name));
        }
        let Some(InstConn::Output(sig)) = conns[i] else {
            unreachable!("outputs are bound at instantiation")
        };
        let node = self.with(|m| m.sig_nodes[sig]);
        Expr {
            token: self.token,
            node: node as u32,
            ty,
        }
    }

    /// An array of instances of `module` over the loop dimensions `dims`
    /// (name, extent), emitted as nested generate loops. Connect each port to a
    /// bus with [`array_connect`](Self::array_connect) or to one value with
    /// [`array_broadcast`](Self::array_broadcast).
    #[track_caller]
    pub fn instance_array(
        &mut self,
        name: &str,
        module: &Rc<ModuleDef>,
        dims: &[(&str, u32)],
    ) -> InstArray {
        if dims.is_empty() || dims.iter().any(|d| d.1 == 0) {
            elab_error(format!(
                "instance array '{name}' needs non-empty dimensions"
            ));
        }
        self.claim_name(name);
        for (d, _) in dims {
            self.claim_name(&format!("{name}_{d}"));
            self.claim_name(&format!("g_{name}_{d}"));
        }
        let loc = Location::caller();
        let index = self.with(|m| {
            m.def.arrays.push(InstanceArray {
                name: name.to_string(),
                module: module.clone(),
                dims: dims.iter().map(|(n, e)| (n.to_string(), *e)).collect(),
                conns: vec![None; module.ports.len()],
                loc,
            });
            m.def.arrays.len() - 1
        });
        InstArray {
            index,
            token: self.token,
            rank: dims.len(),
        }
    }

    /// Connects a port of every instance in an array to the bus element at
    /// `index` (one affine index per bus dimension over the array's variables).
    /// Input ports read the element; output ports drive it.
    #[track_caller]
    pub fn array_connect(&mut self, arr: InstArray, port: &str, bus: Bus, index: &[Idx]) {
        if arr.token != self.token || bus.token != self.token {
            elab_error("instance array or bus belongs to another module".into());
        }
        let (module, extents) = self.with(|m| {
            let a = &m.def.arrays[arr.index];
            (
                a.module.clone(),
                a.dims.iter().map(|d| d.1).collect::<Vec<_>>(),
            )
        });
        let (i, ty, _) = self.child_port(&module, port);
        let (bus_name, elem, dims) = self.with(|m| {
            let s = &m.def.signals[bus.sig];
            let SigKind::Bus { elem, dims, .. } = &s.kind else {
                unreachable!()
            };
            (s.name.clone(), *elem, dims.clone())
        });
        if elem != ty {
            elab_error(format!(
                "port '{port}' of '{}' is {ty}, bus '{bus_name}' holds {elem}",
                module.name
            ));
        }
        if index.len() != dims.len() {
            elab_error(format!(
                "bus '{bus_name}' has {} dimensions, index has {}",
                dims.len(),
                index.len()
            ));
        }
        let mut affine = Vec::new();
        for (d, idx) in index.iter().enumerate() {
            let mut a = idx.0.clone();
            if a.coeffs.len() > extents.len() {
                elab_error("index uses a variable the array does not have".into());
            }
            a.coeffs.resize(extents.len(), 0);
            // Affine: the extremes are at the corners of the loop box.
            let mut lo = a.offset;
            let mut hi = a.offset;
            for (c, e) in a.coeffs.iter().zip(&extents) {
                let span = c * (*e as i64 - 1);
                lo += span.min(0);
                hi += span.max(0);
            }
            if lo < 0 || hi >= dims[d] as i64 {
                elab_error(format!(
                    "index of dimension {d} ranges over {lo}..={hi}, outside bus '{bus_name}' \
                     (extent {})",
                    dims[d]
                ));
            }
            affine.push(a);
        }
        self.set_array_conn(
            arr,
            i,
            port,
            ArrayConn::Bus {
                bus: bus.sig,
                index: affine,
            },
        );
    }

    /// Connects an input port of every instance in an array to the same value.
    #[track_caller]
    pub fn array_broadcast(&mut self, arr: InstArray, port: &str, value: Expr) {
        self.own(value);
        if arr.token != self.token {
            elab_error("instance array belongs to another module".into());
        }
        let module = self.with(|m| m.def.arrays[arr.index].module.clone());
        let (i, ty, dir) = self.child_port(&module, port);
        if dir != Dir::In {
            elab_error(format!("cannot broadcast to output '{port}'"));
        }
        if ty != value.ty {
            elab_error(format!(
                "port '{port}' of '{}' is {ty}, broadcast value is {}",
                module.name, value.ty
            ));
        }
        self.set_array_conn(arr, i, port, ArrayConn::Broadcast(value.node()));
    }

    #[track_caller]
    fn set_array_conn(&mut self, arr: InstArray, i: usize, port: &str, conn: ArrayConn) {
        let loc = Location::caller();
        self.with(|m| {
            let c = &mut m.def.arrays[arr.index].conns[i];
            if c.is_some() {
                elab_error_at(loc, format!("port '{port}' is already connected"));
            }
            *c = Some(conn);
        });
    }

    /// A memory of 2^`addr_width` words of type `elem`, written and read
    /// synchronously (so synthesis maps it to block RAM).
    #[track_caller]
    pub fn memory(&mut self, name: &str, elem: Ty, addr_width: u32) -> Mem {
        if addr_width == 0 || addr_width > 24 {
            elab_error(format!(
                "memory '{name}': address width must be 1..=24, got {addr_width}"
            ));
        }
        self.claim_name(name);
        let loc = Location::caller();
        let index = self.with(|m| {
            m.def.memories.push(Memory {
                name: name.to_string(),
                elem,
                addr_width,
                writes: Vec::new(),
                reads: Vec::new(),
                loc,
            });
            m.def.memories.len() - 1
        });
        Mem {
            index,
            token: self.token,
        }
    }

    #[track_caller]
    fn check_addr(&self, mem: Mem, addr: Expr) -> (String, Ty) {
        self.own(addr);
        if mem.token != self.token {
            elab_error("memory belongs to another module".into());
        }
        let (name, elem, aw) = self.with(|m| {
            let mm = &m.def.memories[mem.index];
            (mm.name.clone(), mm.elem, mm.addr_width)
        });
        if addr.ty != Ty::u(aw) {
            elab_error(format!(
                "memory '{name}' takes a u{aw} address, got {}",
                addr.ty
            ));
        }
        (name, elem)
    }

    /// A write port: at the clock edge, if `enable`, `mem[addr] <= data`. Later
    /// write ports win when several write the same address in one cycle.
    #[track_caller]
    pub fn mem_write(&mut self, mem: Mem, enable: Expr, addr: Expr, data: Expr) {
        let (name, elem) = self.check_addr(mem, addr);
        self.own(enable);
        self.own(data);
        if enable.ty != Ty::BOOL {
            elab_error(format!(
                "write enable must be one unsigned bit, got {}",
                enable.ty
            ));
        }
        if data.ty != elem {
            elab_error(format!(
                "memory '{name}' holds {elem}, written with {}",
                data.ty
            ));
        }
        self.with(|m| {
            m.def.memories[mem.index].writes.push(MemWrite {
                enable: enable.node(),
                addr: addr.node(),
                data: data.node(),
            })
        });
    }

    /// A synchronous read port: at the clock edge, if `enable` (or always when
    /// `None`), the returned value becomes `mem[addr]` (the value before any write
    /// in the same cycle). Emitted as a register `<mem>_rd<k>_q`.
    #[track_caller]
    pub fn mem_read(&mut self, mem: Mem, enable: Option<Expr>, addr: Expr) -> Expr {
        let (name, elem) = self.check_addr(mem, addr);
        if let Some(e) = enable {
            self.own(e);
            if e.ty != Ty::BOOL {
                elab_error(format!(
                    "read enable must be one unsigned bit, got {}",
                    e.ty
                ));
            }
        }
        let port = self.with(|m| m.def.memories[mem.index].reads.len());
        let reg_name = format!("{name}_rd{port}_q");
        self.claim_name(&reg_name);
        let (sig, value) = self.add_signal(
            &reg_name,
            elem,
            SigKind::MemRead {
                mem: mem.index,
                port,
            },
            None,
        );
        self.with(|m| {
            m.def.memories[mem.index].reads.push(MemReadPort {
                enable: enable.map(|e| e.node()),
                addr: addr.node(),
                data: sig,
            })
        });
        value
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

    /// Checks the definition is complete and returns it.
    pub fn finish(self) -> ModuleDef {
        let mut def = self.with(|m| std::mem::replace(&mut m.def, ModuleDef::empty("")));
        check_complete(&def, self.loc);
        let (clock, reset) = needs_clock_reset(&def);
        def.has_clock = clock;
        def.has_reset = reset;
        def
    }
}

/// Every wire, output, register and instance input is driven; every bus
/// element is driven exactly once; no combinational loop inside the module.
fn check_complete(def: &ModuleDef, loc: Loc) {
    for s in &def.signals {
        match &s.kind {
            SigKind::Wire { driver: None } => {
                elab_error_at(s.loc, format!("'{}' is declared but never driven", s.name))
            }
            SigKind::Reg { next: None, .. } => elab_error_at(
                s.loc,
                format!("register '{}' has no next value (set_next)", s.name),
            ),
            _ => {}
        }
    }
    for inst in &def.instances {
        for (i, c) in inst.conns.iter().enumerate() {
            if c.is_none() {
                let port = &inst.module.signals[inst.module.ports[i]].name;
                elab_error_at(
                    inst.loc,
                    format!(
                        "input '{port}' of instance '{}' is not connected",
                        inst.name
                    ),
                );
            }
        }
    }
    for arr in &def.arrays {
        for (i, c) in arr.conns.iter().enumerate() {
            if c.is_none() {
                let port = &arr.module.signals[arr.module.ports[i]].name;
                elab_error_at(
                    arr.loc,
                    format!(
                        "port '{port}' of instance array '{}' is not connected",
                        arr.name
                    ),
                );
            }
        }
    }
    check_bus_drivers(def);
    check_local_loops(def, loc);
}

/// Counts the drivers of every bus element (parent drives plus array outputs).
fn check_bus_drivers(def: &ModuleDef) {
    for (sig, s) in def.signals.iter().enumerate() {
        let SigKind::Bus { dims, drives, elem } = &s.kind else {
            continue;
        };
        let count = (s.ty.width / elem.width) as usize;
        let mut drivers = vec![0u32; count];
        for (flat, _) in drives {
            drivers[*flat as usize] += 1;
        }
        for arr in &def.arrays {
            for (pi, c) in arr.conns.iter().enumerate() {
                let Some(ArrayConn::Bus { bus, index }) = c else {
                    continue;
                };
                let port = &arr.module.signals[arr.module.ports[pi]];
                if *bus != sig || port.port != Some(Dir::Out) {
                    continue;
                }
                for_each_index(&arr.dims, |vars| {
                    drivers[flat_of(index, dims, vars) as usize] += 1;
                });
            }
        }
        for (flat, n) in drivers.iter().enumerate() {
            if *n != 1 {
                let what = if *n == 0 {
                    "no driver"
                } else {
                    "several drivers"
                };
                elab_error_at(
                    s.loc,
                    format!(
                        "element {:?} of bus '{}' has {what}",
                        unflatten(flat as u64, dims),
                        s.name
                    ),
                );
            }
        }
    }
}

/// Calls `f` with every point of the loop box `dims`, last dimension fastest.
pub(crate) fn for_each_index(dims: &[(String, u32)], mut f: impl FnMut(&[u32])) {
    let mut vars = vec![0u32; dims.len()];
    loop {
        f(&vars);
        let mut k = dims.len();
        loop {
            if k == 0 {
                return;
            }
            k -= 1;
            vars[k] += 1;
            if vars[k] < dims[k].1 {
                break;
            }
            vars[k] = 0;
        }
    }
}

/// Flat element index of an affine bus index at loop point `vars`.
pub(crate) fn flat_of(index: &[Affine], dims: &[u32], vars: &[u32]) -> u64 {
    index
        .iter()
        .zip(dims)
        .fold(0u64, |acc, (a, &d)| acc * d as u64 + a.eval(vars) as u64)
}

fn unflatten(mut flat: u64, dims: &[u32]) -> Vec<u64> {
    let mut out = vec![0; dims.len()];
    for (k, &d) in dims.iter().enumerate().rev() {
        out[k] = flat % d as u64;
        flat /= d as u64;
    }
    out
}

/// Finds combinational loops among this module's own wires (instance paths are
/// checked by the evaluator, which sees the whole hierarchy).
fn check_local_loops(def: &ModuleDef, _loc: Loc) {
    // Node -> the wire nodes it depends on, through signal reads of wires.
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Active,
        Done,
    }
    let mut mark = vec![Mark::New; def.nodes.len()];
    let wire_driver = |n: &Node| -> Option<NodeId> {
        if let Op::Sig(s) = n.op {
            if let SigKind::Wire { driver } = def.signals[s].kind {
                return driver;
            }
        }
        None
    };
    for start in 0..def.nodes.len() {
        if mark[start] != Mark::New {
            continue;
        }
        // Iterative DFS over args plus wire drivers.
        let mut stack: Vec<(NodeId, usize)> = vec![(start, 0)];
        mark[start] = Mark::Active;
        while let Some((n, k)) = stack.pop() {
            let node = &def.nodes[n];
            let mut next = node.args.clone();
            if let Some(d) = wire_driver(node) {
                next.push(d);
            }
            if k < next.len() {
                stack.push((n, k + 1));
                let c = next[k];
                match mark[c] {
                    Mark::New => {
                        mark[c] = Mark::Active;
                        stack.push((c, 0));
                    }
                    Mark::Active => {
                        let names: Vec<String> = stack
                            .iter()
                            .filter_map(|(n, _)| match def.nodes[*n].op {
                                Op::Sig(s) => Some(def.signals[s].name.clone()),
                                _ => None,
                            })
                            .collect();
                        elab_error_at(
                            def.nodes[c].loc,
                            format!(
                                "combinational loop in module '{}' through {}",
                                def.name,
                                names.join(" -> ")
                            ),
                        );
                    }
                    Mark::Done => {}
                }
            } else {
                mark[n] = Mark::Done;
            }
        }
    }
}

/// A module needs `clk_i` if it has registers, memories or clocked children,
/// and `rst_i` if a register resets or a child needs reset.
fn needs_clock_reset(def: &ModuleDef) -> (bool, bool) {
    let mut clock = !def.memories.is_empty();
    let mut reset = false;
    for s in &def.signals {
        if let SigKind::Reg { reset: r, .. } = &s.kind {
            clock = true;
            reset |= r.is_some();
        }
    }
    let children = def
        .instances
        .iter()
        .map(|i| &i.module)
        .chain(def.arrays.iter().map(|a| &a.module));
    for m in children {
        clock |= m.has_clock;
        reset |= m.has_reset;
    }
    (clock, reset)
}

/// The `width`-bit two's complement pattern of `value` (wrapping).
pub(crate) fn const_bits_wrapping(width: u32, value: &BigInt) -> BigUint {
    let modulus = BigInt::one() << width as usize;
    let v = ((value % &modulus) + &modulus) % &modulus;
    v.to_biguint().expect("non-negative after reduction")
}

//! Operations on [`Expr`]: arithmetic, comparisons, slicing, extension, mux
//! and concatenation, each type-checked when it is written.

use super::*;

// ---------------------------------------------------------------------------
// Expr: operations.

/// A value where the other side of the operation gives the type: an `Expr`,
/// or an integer constant (or [`HwEnum`] variant) that takes that type. It
/// stands on the right of an operator or comparison (`x + 1`, `x.is_eq(3)`),
/// in either arm of a [`mux`] (`mux(c, x, 0)`), and as the value of
/// [`ModuleBuilder::assign`], [`ModuleBuilder::set_next`] and
/// [`ModuleBuilder::drive`], whose target gives the type. A constant that does
/// not fit the type stops elaboration at the caller's line.
pub trait Operand {
    /// The operand as a value of `like`'s type in `like`'s module (an `Expr`
    /// is returned as it is; the caller checks its type).
    #[track_caller]
    fn to_expr(self, like: Expr) -> Expr;

    /// The operand's own value when it has a type of its own (an `Expr`);
    /// `None` for a constant, which takes its type from the other side.
    fn typed(&self) -> Option<Expr> {
        None
    }
}

impl Operand for Expr {
    fn to_expr(self, _like: Expr) -> Expr {
        self
    }

    fn typed(&self) -> Option<Expr> {
        Some(*self)
    }
}

/// Two operands that must end up with one type, as values: a constant takes
/// the type of the other operand; two constants have none to take.
#[track_caller]
fn typed_pair(a: impl Operand, b: impl Operand, what: &str) -> (Expr, Expr) {
    match (a.typed(), b.typed()) {
        (Some(x), _) => (x, b.to_expr(x)),
        (None, Some(y)) => (a.to_expr(y), y),
        (None, None) => elab_error(format!(
            "{what} of two constants: one arm must be a value to give the other its type \
             (write one with Expr::lit or ModuleBuilder::lit)"
        )),
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
        let width = self.ty.width + rhs.ty.width;
        self.mul_wide_to(rhs, width)
    }

    /// The full product extended (by the operands' signedness) to `width`
    /// bits, at least the sum of the operands' widths: the same value as
    /// `mul_wide(rhs)` extended, as one multiplication of extended operands,
    /// which simulators evaluate with one machine multiply where the
    /// extension of a narrow product costs two more operations.
    #[track_caller]
    pub fn mul_wide_to(self, rhs: Expr, width: u32) -> Expr {
        same_module(self, rhs);
        if self.ty.signed != rhs.ty.signed {
            elab_error(format!(
                "cannot multiply {} by {}: signedness differs",
                self.ty, rhs.ty
            ));
        }
        if width < self.ty.width + rhs.ty.width {
            elab_error(format!(
                "a full product of {} and {} needs {} bits, not {width}",
                self.ty,
                rhs.ty,
                self.ty.width + rhs.ty.width
            ));
        }
        let ty = Ty::new(width, self.ty.signed);
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

    /// The bits in the opposite order (bit 0 becomes the most significant),
    /// as an unsigned value: wiring, no logic.
    pub fn reverse_bits(self) -> Expr {
        cat(&(0..self.ty.width).map(|i| self.bit(i)).collect::<Vec<_>>())
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

    /// `self ? a : b`; `self` must be one unsigned bit. Either arm may be an
    /// integer constant, which takes the other arm's type.
    #[track_caller]
    pub fn select(self, a: impl Operand, b: impl Operand) -> Expr {
        mux(self, a, b)
    }
}

/// `sel ? a : b` written as bit operations, `b ^ ((a ^ b) & {W{sel}})`: the same
/// value (and the same hardware after synthesis), for selects that are data.
/// A simulator compiles a conditional to a branch where the arms are large,
/// and a branch on random data is mispredicted half the time; this form has
/// none. Use it where the select is as good as random (signs, carries,
/// magnitude comparisons of operands), and [`mux`] elsewhere.
#[track_caller]
pub fn mux_bitwise(sel: Expr, a: impl Operand, b: impl Operand) -> Expr {
    let (a, b) = typed_pair(a, b, "mux_bitwise");
    // Checks the operands as `mux` does.
    let _ = mux(sel, a, b);
    let ty = a.ty;
    let bits = |e: Expr| e.as_unsigned();
    // `sel` repeated across the width (a sign extension of the one bit).
    let all = sel.as_signed().sext(ty.width).as_unsigned();
    let v = bits(b) ^ ((bits(a) ^ bits(b)) & all);
    if ty.signed {
        v.as_signed()
    } else {
        v
    }
}

/// `sel ? a : b` with a one-bit `sel` and equal types for `a` and `b`. Either
/// arm may be an integer constant (`mux(c, x, 0)`), which takes the other
/// arm's type.
#[track_caller]
pub fn mux(sel: Expr, a: impl Operand, b: impl Operand) -> Expr {
    let (a, b) = typed_pair(a, b, "mux");
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

//! Random designs for checking the `hw` layer: expression DAGs over every
//! operator, widths 1..=130, both signednesses, shifts by amounts far beyond the
//! width, the most negative values, registers with reset and enable, a child
//! instance and a combinational chain of instances joined by a bus.
//!
//! The generator only uses the public builder API, so everything it builds is
//! something a generator author could write. Every value it creates ends up in
//! an output port, so no operation is optimised away before it is compared.

use hw::{cat, mux, Design, Expr, ModuleBuilder, ModuleDef, Ty};
use num_bigint::{BigInt, BigUint};
use num_traits::One;
use rand::seq::SliceRandom;
use rand::Rng;
use std::rc::Rc;

/// Widths that sit on word boundaries of the simulators' value representations
/// (8/16/32/64 bits and 32-bit words), picked more often than the rest.
const EDGE_WIDTHS: &[u32] = &[
    1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 95, 96, 97, 127, 128, 129, 130,
];

/// How much to generate.
#[derive(Debug, Clone, Copy)]
pub struct FuzzSize {
    pub inputs: usize,
    pub operations: usize,
    pub registers: usize,
    /// Length of the chain of instances joined by a bus (0 = none).
    pub chain: u32,
}

impl FuzzSize {
    pub const DEFAULT: FuzzSize = FuzzSize {
        inputs: 6,
        operations: 160,
        registers: 6,
        chain: 3,
    };
}

pub fn random_width(rng: &mut impl Rng) -> u32 {
    if rng.gen_bool(0.6) {
        *EDGE_WIDTHS.choose(rng).unwrap()
    } else {
        rng.gen_range(1..=130)
    }
}

pub fn random_ty(rng: &mut impl Rng) -> Ty {
    Ty::new(random_width(rng), rng.gen_bool(0.5))
}

/// A random bit pattern of `width` bits, often one of the edge values: zero,
/// one, all ones, the most negative and the most positive two's complement value.
pub fn random_bits(rng: &mut impl Rng, width: u32) -> BigUint {
    let w = width as usize;
    let all = (BigUint::one() << w) - 1u32;
    match rng.gen_range(0..10) {
        0 => BigUint::from(0u32),
        1 => BigUint::one(),
        2 => all,
        3 => BigUint::one() << (w - 1),
        4 => (BigUint::one() << (w - 1)) - 1u32,
        5 => BigUint::from(rng.gen_range(0..=w as u64 + 2)) & all,
        _ => {
            let words: Vec<u32> = (0..w.div_ceil(32)).map(|_| rng.gen()).collect();
            BigUint::from_slice(&words) & all
        }
    }
}

/// A constant value for `ty`, as an integer, weighted to the edges.
fn random_const(rng: &mut impl Rng, ty: Ty) -> BigInt {
    let bits = random_bits(rng, ty.width);
    if ty.signed && bits.bit(ty.width as u64 - 1) {
        BigInt::from(bits) - (BigInt::one() << ty.width as usize)
    } else {
        BigInt::from(bits)
    }
}

struct Gen<'r, R: Rng> {
    rng: &'r mut R,
    pool: Vec<Expr>,
    /// Values not yet used by anything; they become outputs at the end.
    unused: Vec<Expr>,
    names: usize,
}

impl<R: Rng> Gen<'_, R> {
    fn pick(&mut self) -> Expr {
        // Prefer recent values so the DAG grows deep as well as wide.
        let n = self.pool.len();
        let i = if self.rng.gen_bool(0.5) {
            n - 1 - self.rng.gen_range(0..n.min(8))
        } else {
            self.rng.gen_range(0..n)
        };
        let e = self.pool[i];
        self.unused.retain(|u| *u != e);
        e
    }

    fn add(&mut self, e: Expr) -> Expr {
        self.pool.push(e);
        self.unused.push(e);
        e
    }

    /// `e` converted to `ty` by a random but type-correct route.
    fn fit(&mut self, e: Expr, ty: Ty) -> Expr {
        let mut v = e;
        if v.width() > ty.width {
            v = if self.rng.gen_bool(0.5) {
                v.trunc(ty.width)
            } else {
                let lo = self.rng.gen_range(0..=v.width() - ty.width);
                v.slice(lo, ty.width)
            };
        } else if v.width() < ty.width {
            v = if self.rng.gen_bool(0.5) {
                v.as_signed().sext(ty.width)
            } else {
                v.as_unsigned().zext(ty.width)
            };
        }
        if ty.signed {
            v.as_signed()
        } else {
            v.as_unsigned()
        }
    }

    fn operand_like(&mut self, ty: Ty) -> Expr {
        let e = self.pick();
        if e.ty() == ty || self.rng.gen_bool(0.3) {
            self.fit(e, ty)
        } else {
            let e2 = self.pick();
            self.fit(e2, ty)
        }
    }

    fn one_bit(&mut self) -> Expr {
        let e = self.pick();
        match self.rng.gen_range(0..4) {
            0 => e.any(),
            1 => e.parity(),
            2 => {
                let i = self.rng.gen_range(0..e.width());
                e.bit(i)
            }
            _ => {
                let other = self.operand_like(e.ty());
                e.is_lt(other)
            }
        }
    }

    fn operation(&mut self, m: &mut ModuleBuilder) {
        let a = self.pick();
        let ty = a.ty();
        let e = match self.rng.gen_range(0..24) {
            0 => a + self.operand_like(ty),
            1 => a - self.operand_like(ty),
            2 => a * self.operand_like(ty),
            3 => a & self.operand_like(ty),
            4 => a | self.operand_like(ty),
            5 => a ^ self.operand_like(ty),
            6 => !a,
            7 => -a,
            8 => {
                let b = self.operand_like(ty);
                match self.rng.gen_range(0..6) {
                    0 => a.is_eq(b),
                    1 => a.is_ne(b),
                    2 => a.is_lt(b),
                    3 => a.is_le(b),
                    4 => a.is_gt(b),
                    _ => a.is_ge(b),
                }
            }
            9 => {
                let w = random_width(self.rng)
                    .min(260u32.saturating_sub(ty.width))
                    .max(1);
                let b = self.operand_like(Ty::new(w, ty.signed));
                a.mul_wide(b)
            }
            10 | 11 => {
                // Variable shift amounts of any width, often beyond the value.
                let aw = self.rng.gen_range(1..=70);
                let amount = self.operand_like(Ty::u(aw));
                if self.rng.gen_bool(0.5) {
                    a << amount
                } else {
                    a >> amount
                }
            }
            12 => {
                let k = self.rng.gen_range(0..=ty.width + 3);
                if self.rng.gen_bool(0.5) {
                    a << k
                } else {
                    a >> k
                }
            }
            13 => match self.rng.gen_range(0..3) {
                0 => a.all(),
                1 => a.any(),
                _ => a.parity(),
            },
            14 => {
                let w = self.rng.gen_range(1..=ty.width);
                let lo = self.rng.gen_range(0..=ty.width - w);
                a.slice(lo, w)
            }
            15 => {
                let n = self.rng.gen_range(2..=3);
                let mut parts = vec![a];
                for _ in 1..n {
                    let p = self.pick();
                    if parts.iter().map(|p| p.width()).sum::<u32>() + p.width() <= 300 {
                        parts.push(p);
                    }
                }
                cat(&parts)
            }
            16 => {
                let w = ty.width + self.rng.gen_range(0..40);
                a.ext(w)
            }
            17 => {
                let w = self.rng.gen_range(1..=ty.width);
                a.trunc(w)
            }
            18 => {
                if ty.signed {
                    a.as_unsigned()
                } else {
                    a.as_signed()
                }
            }
            19 | 20 => {
                let sel = self.one_bit();
                let b = self.operand_like(ty);
                mux(sel, a, b)
            }
            21 => {
                let cty = random_ty(self.rng);
                let v = random_const(self.rng, cty);
                m.lit(cty, v)
            }
            22 => {
                // An integer operand takes the other side's type.
                let v = random_const(self.rng, ty);
                match self.rng.gen_range(0..3) {
                    0 => a + v,
                    1 => a ^ v,
                    _ => a.is_lt(v),
                }
            }
            _ => {
                self.names += 1;
                m.wire(&format!("w{}", self.names), a)
            }
        };
        self.add(e);
    }
}

/// Builds random logic into `m`: inputs, `ops` operations, `regs` registers,
/// and output ports for every value nothing else uses.
fn random_logic(
    rng: &mut impl Rng,
    m: &mut ModuleBuilder,
    extra_inputs: &[Expr],
    size: FuzzSize,
    mut hook: impl FnMut(&mut ModuleBuilder, &mut dyn FnMut() -> Expr) -> Vec<Expr>,
) {
    let mut g = Gen {
        rng,
        pool: Vec::new(),
        unused: Vec::new(),
        names: 0,
    };
    for i in 0..size.inputs {
        let ty = random_ty(g.rng);
        let e = m.input(&format!("in{i}_i"), ty);
        g.add(e);
    }
    for e in extra_inputs {
        g.add(*e);
    }
    let mut regs = Vec::new();
    for i in 0..size.registers {
        let ty = random_ty(g.rng);
        let reset = random_const(g.rng, ty);
        let r = m.reg_reset(&format!("r{i}"), ty, reset);
        regs.push(r);
        g.add(r.q());
    }
    for _ in 0..size.operations / 2 {
        g.operation(m);
    }
    // Hierarchy in the middle, so its inputs and outputs mix with the rest.
    let produced = {
        let mut pick = || g.pick();
        hook(m, &mut pick)
    };
    for e in produced {
        g.add(e);
    }
    for _ in size.operations / 2..size.operations {
        g.operation(m);
    }
    for r in regs {
        let v = g.operand_like(r.q().ty());
        m.set_next(r, v);
        if g.rng.gen_bool(0.5) {
            let en = g.one_bit();
            m.set_enable(r, en);
        }
    }
    // Every unused value reaches an output, grouped into ports of <= 256 bits.
    let mut unused = std::mem::take(&mut g.unused);
    unused.dedup();
    let mut outputs = 0;
    let mut group: Vec<Expr> = Vec::new();
    let flush = |m: &mut ModuleBuilder, group: &mut Vec<Expr>, outputs: &mut usize| {
        if !group.is_empty() {
            m.output(&format!("out{outputs}_o"), cat(group));
            *outputs += 1;
            group.clear();
        }
    };
    for e in unused {
        if group.iter().map(|x| x.width()).sum::<u32>() + e.width() > 256 {
            flush(m, &mut group, &mut outputs);
        }
        group.push(e);
    }
    flush(m, &mut group, &mut outputs);
    if outputs == 0 {
        let e = g.pick();
        m.output("out0_o", e);
    }
}

/// A random design: a top module with random logic that instantiates a random
/// child once and a chain of `size.chain` combinational cells through a bus.
pub fn random_design(rng: &mut impl Rng, size: FuzzSize) -> (Design, Rc<ModuleDef>) {
    let mut design = Design::new();
    // The child: random logic with registers, two inputs of fixed types.
    let child_size = FuzzSize {
        inputs: 2,
        operations: size.operations / 4,
        registers: 2,
        chain: 0,
    };
    let child_seed: u64 = rng.gen();
    let child = design.define("fuzz_child", &[], |_, m| {
        let mut r = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(child_seed);
        random_logic(&mut r, m, &[], child_size, |_, _| Vec::new());
    });
    // A combinational cell with one input and one output of the same type, so
    // instances can be chained element to element through a bus.
    let cell_ty = random_ty(rng);
    let cell_seed: u64 = rng.gen();
    let cell = design.define("fuzz_cell", &[], |_, m| {
        let mut r = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(cell_seed);
        let x = m.input("x_i", cell_ty);
        let k = random_const(&mut r, cell_ty);
        let y = match r.gen_range(0..4) {
            0 => x + k,
            1 => (x ^ k) >> 1u32,
            2 => -x,
            _ => x * k,
        };
        m.output("y_o", y);
    });
    let top_seed: u64 = rng.gen();
    let chain = size.chain;
    let top = design.define("fuzz_top", &[], |_, m| {
        let mut r = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(top_seed);
        random_logic(&mut r, m, &[], size, |m, pick| {
            let mut produced = Vec::new();
            let u = m.instance("u_child", &child);
            for p in ["in0_i", "in1_i"] {
                let ty = child.port(p).unwrap().1.ty;
                let v = pick();
                let v = fit_plain(v, ty);
                m.connect(u, p, v);
            }
            for &p in &child.ports {
                let s = &child.signals[p];
                if s.port == Some(hw::Dir::Out) {
                    produced.push(m.inst_output(u, &s.name));
                }
            }
            if chain > 0 {
                let bus = m.bus("chain", cell_ty, &[chain + 1]);
                let v = pick();
                m.bus_drive(bus, &[0], fit_plain(v, cell_ty));
                let arr = m.instance_array("cells", &cell, &[("i", chain)]);
                m.array_connect(arr, "x_i", bus, &[arr.var(0)]);
                m.array_connect(arr, "y_o", bus, &[arr.var(0) + 1]);
                produced.push(m.bus_read(bus, &[chain]));
                produced.push(m.bus_read(bus, &[chain / 2]));
            }
            produced
        });
    });
    (design, top)
}

/// `e` converted to `ty` deterministically (for connections).
fn fit_plain(e: Expr, ty: Ty) -> Expr {
    let v = if e.width() > ty.width {
        e.trunc(ty.width)
    } else {
        e.as_unsigned().zext(ty.width)
    };
    if ty.signed {
        v.as_signed()
    } else {
        v.as_unsigned()
    }
}

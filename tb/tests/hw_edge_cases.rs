//! Edge cases of every width-sensitive operation, through all three
//! simulators: shifts by 0, width - 1, width, width + 1 and by amounts around
//! 2^31, 2^32, 2^40 and 2^100; arithmetic and comparisons at the most negative
//! value; full-width products of the extremes.
//!
//! Each case is applied both to inputs and to constants: with constant operands
//! Verilator folds the expression at compile time with its own arithmetic
//! (`V3Number`), a different code path from the C++ it runs for inputs. (That
//! is how `8'hff << 32'hffffffff` was found to fold to `8'h7f` in Verilator
//! 5.006, which the emitter now avoids; and that Verilator 5.006 and 5.048
//! sign-extend `{{N{1'b0}}, t}` where `t = x * x` of a signed `x`, which the
//! emitter avoids by writing signed squares as unsigned products.) The design is fixed, so its Verilator
//! model is built once and then comes from the cache; the input values are
//! random, edge-weighted, and seeded.

use hw::{cat, emit_design, Design, Expr, Header, ModuleBuilder, Ty};
use num_bigint::{BigInt, BigUint};
use num_traits::One;
use rand::Rng;
use tb::fuzz::{compare_outputs, dump_files, random_bits, run_evaluator, run_verilator};
use tb::icarus::{self, TestPorts};
use tb::seed::rng_for;

/// Value types under test.
const TYPES: &[(u32, bool)] = &[
    (1, false),
    (1, true),
    (8, false),
    (8, true),
    (32, true),
    (33, true),
    (64, false),
    (65, true),
    (128, false),
];

/// Widths of the shift-amount inputs.
const AMOUNT_INPUTS: &[u32] = &[4, 31, 32, 33, 70];

fn p2(n: u32) -> BigInt {
    BigInt::one() << n as usize
}

fn ty_name(ty: Ty) -> String {
    format!("{}{}", if ty.signed { "s" } else { "u" }, ty.width)
}

/// The most negative, the all-ones and an alternating bit pattern of `ty`, as
/// integer values of that type.
fn constants(ty: Ty) -> Vec<(&'static str, BigInt)> {
    let w = ty.width;
    let (min, all) = if ty.signed {
        (-p2(w - 1), BigInt::from(-1))
    } else {
        (p2(w - 1), p2(w) - 1)
    };
    // 1011_0101 repeated, truncated to the width.
    let mut pat = BigInt::from(0);
    for i in 0..w {
        if (0xb5u32 >> (i % 8)) & 1 == 1 {
            pat += p2(i);
        }
    }
    if ty.signed && pat >= p2(w - 1) {
        pat -= p2(w);
    }
    vec![("min", min), ("ones", all), ("pat", pat)]
}

/// `a << k` / `a >> k` for every kind of amount, concatenated.
fn shifts(m: &mut ModuleBuilder, a: Expr, amounts: &[Expr]) -> Expr {
    let w = a.width();
    let mut parts = Vec::new();
    for k in [0, 1, w - 1, w, w + 1, (1 << 31) - 1, 1 << 31, u32::MAX] {
        parts.push(a << k);
        parts.push(a >> k);
    }
    for (aw, v) in [
        (31u32, p2(31) - 1),
        (32, p2(32) - 1),
        (33, p2(32)),
        (70, p2(40)),
        (101, p2(100)),
        (101, p2(31) + 3),
    ] {
        let n = m.lit(Ty::u(aw), v);
        parts.push(a << n);
        parts.push(a >> n);
    }
    for &n in amounts {
        parts.push(a << n);
        parts.push(a >> n);
    }
    cat(&parts)
}

/// Arithmetic, products and comparisons of `x` with the extremes of its type.
fn arithmetic(m: &mut ModuleBuilder, x: Expr) -> Expr {
    let ty = x.ty();
    let c = constants(ty);
    let min = m.lit(ty, c[0].1.clone());
    let ones = m.lit(ty, c[1].1.clone());
    let max = !min;
    cat(&[
        x + min,
        x - max,
        x * min,
        x * ones,
        -x,
        !x,
        x.mul_wide(min),
        x.mul_wide(max),
        x.mul_wide(ones),
        x.is_lt(max),
        x.is_lt(min),
        x.is_le(ones),
        x.is_gt(min),
        x.is_ge(max),
        x.is_eq(min),
        x.is_ne(ones),
        x.all(),
        x.any(),
        x.parity(),
        x.ext(ty.width + 7),
        x.trunc(1),
        x.msb(),
        x.as_signed().sext(ty.width + 1),
        x.as_unsigned().zext(ty.width + 1),
    ])
}

fn edge_design() -> (Design, std::rc::Rc<hw::ModuleDef>) {
    let mut d = Design::new();
    let top = d.define("edge_top", &[], |_, m| {
        let amounts: Vec<Expr> = AMOUNT_INPUTS
            .iter()
            .map(|&w| m.input(&format!("n{w}_i"), Ty::u(w)))
            .collect();
        for &(w, signed) in TYPES {
            let ty = Ty::new(w, signed);
            let name = ty_name(ty);
            let v = m.input(&format!("v_{name}_i"), ty);
            let mut sources = vec![("in".to_string(), v)];
            for (cname, value) in constants(ty) {
                sources.push((cname.to_string(), m.lit(ty, value)));
            }
            for (src, x) in sources {
                let s = shifts(m, x, &amounts);
                m.output(&format!("sh_{name}_{src}_o"), s);
                let a = arithmetic(m, x);
                m.output(&format!("ar_{name}_{src}_o"), a);
                // Squares through a named wire, zero-extended: Verilator
                // sign-extends a signed square there unless the emitter
                // writes it as an unsigned product.
                let sq = m.wire(&format!("sq_{name}_{src}"), x * x);
                m.output(&format!("sq_{name}_{src}_o"), sq.as_unsigned().zext(w + 9));
                let sqw = m.wire(&format!("sqw_{name}_{src}"), x.mul_wide(x));
                m.output(
                    &format!("sqw_{name}_{src}_o"),
                    sqw.as_unsigned().zext(2 * w + 9),
                );
            }
        }
        // A register, so the design is clocked like every other.
        let r = m.reg_reset("r", Ty::u(4), 5);
        let n4 = amounts[0];
        m.set_next(r, r.q() + n4);
        m.output("r_o", r.q());
    });
    (d, top)
}

#[test]
fn edge_cases_match_in_all_simulators() {
    let mut rng = rng_for("edge_cases_match_in_all_simulators");
    let (design, top) = edge_design();
    let header = Header {
        generator: "hw edge cases".into(),
        params: Vec::new(),
    };
    let files = emit_design(&design, &top, &header);
    let ports = TestPorts::of(&top);
    // Small shift amounts more often, so shifts by in-range amounts are seen.
    let stim: Vec<Vec<BigUint>> = (0..40)
        .map(|cycle| {
            ports
                .inputs
                .iter()
                .map(|(name, w)| match name.as_str() {
                    "rst_i" => BigUint::from((cycle == 0) as u8),
                    n if n.starts_with('n') && rng.gen_bool(0.5) => {
                        BigUint::from(rng.gen_range(0..=130u32)) & ((BigUint::one() << *w) - 1u32)
                    }
                    _ => random_bits(&mut rng, *w),
                })
                .collect()
        })
        .collect();
    let fail = |e: String| -> ! {
        panic!(
            "{e}; design written to {}",
            dump_files(&files, "systole-edge")
        )
    };
    let expected = run_evaluator(&top, &ports, &stim);
    // Constant comparisons are the point here, not a lint finding.
    let args = ["-Wno-UNSIGNED", "-Wno-CMPCONST"];
    let by_verilator = run_verilator(&files, &top, &ports, &stim, "hw_edge_cases", &args)
        .unwrap_or_else(|e| fail(e));
    compare_outputs("Verilator", &ports, &expected, &by_verilator, 1).unwrap_or_else(|e| fail(e));
    let by_icarus = icarus::run(&files, &top, &stim).unwrap_or_else(|e| fail(e));
    compare_outputs("Icarus", &ports, &expected, &by_icarus, 1).unwrap_or_else(|e| fail(e));
}

#[test]
fn no_emitted_shift_amount_reaches_2_to_the_31() {
    // Verilator 5.006 folds `K << A` wrongly for constant A >= 2^31; the
    // emitter must never write such an amount, saturated or literal.
    let (design, top) = edge_design();
    let files = emit_design(&design, &top, &Header::default());
    let text = &files[0].text;
    let mut shifts = 0;
    for op in [" << ", " >> ", " >>> "] {
        for (i, _) in text.match_indices(op) {
            shifts += 1;
            let amount = &text[i + op.len()..];
            let end = amount.find([')', ' ']).unwrap();
            let amount = &amount[..end];
            if let Some((width, digits)) = amount.split_once("'h") {
                let width: u32 = width.parse().unwrap();
                let v = BigUint::parse_bytes(digits.as_bytes(), 16).unwrap();
                assert!(
                    v < BigUint::one() << 31usize,
                    "literal shift amount {amount} (width {width}) reaches 2^31"
                );
            }
        }
    }
    assert!(shifts > 500, "only {shifts} shifts found");
    assert!(
        text.contains("31'h7fffffff"),
        "saturated amounts are written as 2^31 - 1"
    );
}

/// Two registers loaded from the same signal are one to Yosys once the
/// design is flattened; behind `keep_hierarchy` the copy survives. The MXU's
/// multiplier operand registers depend on it (`hw::ModuleBuilder::keep_hierarchy`).
#[test]
fn keep_hierarchy_keeps_a_copied_register_through_flattening() {
    let check = |keep: bool, expected: u64| {
        let mut design = Design::new();
        let copy = design.define(&format!("copy_reg_{keep}"), &[], |_, m| {
            if keep {
                m.keep_hierarchy("the copy must survive");
            }
            let d = m.input("d_i", Ty::u(8));
            let q = m.reg("q", Ty::u(8));
            m.set_next(q, d);
            m.output("q_o", q.q());
        });
        let top = design.define(&format!("two_copies_{keep}"), &[], |_, m| {
            let a = m.input("a_i", Ty::u(8));
            let first = m.reg("first", Ty::u(8));
            m.set_next(first, a);
            let u = m.instance("u", &copy);
            m.connect(u, "d_i", a);
            let copied = m.inst_output(u, "q_o");
            m.output("first_o", first.q());
            m.output("copy_o", copied);
        });
        let files = emit_design(&design, &top, &Header::default());
        // Flattened, then the flip-flops of every module (each module's
        // cells once: one instance of the copy).
        let commands = format!(
            "synth -flatten -top two_copies_{keep}; select -assert-count {expected} t:$_*DFF*"
        );
        tb::tools::yosys_commands(&files, &commands).unwrap_or_else(|e| panic!("{e}"));
    };
    // Without the request Yosys merges the copy: 8 flip-flops, not 16.
    check(false, 8);
    check(true, 16);
}

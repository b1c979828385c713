//! Every VPU operation in RTL (Verilator), one directed test per operation
//! and element type: the rows of the reference vector files (computed by an
//! oracle written apart from this project) and special values on both
//! operands, run as the run CLI runs them (`sim::drivers::vpu_ops`), checked
//! against the file, against the golden model bit for bit, and against the
//! cycle model cycle for cycle; and every operation again with extra
//! execute stages (depths 1 to 7 and the `fmax` preset's: the element ALU's
//! registers sit differently at each).

use config::vpu_isa::Op;
use config::{VpuConfig, VpuUnits};
use golden::vectors::{dec, hex16, hex32, read_vectors};
use rand::Rng;
use rstest::rstest;
use sim::drivers::vpu::VpuDriver;
use sim::drivers::vpu_ops::Requant;
use sim::drivers::vpu_ops::{kind, Kind};
use tb::seed::rng_for;
use tb::vpu::{
    check_elementwise, check_reduction, depths, driver, expect_rows, preset, random_word,
    random_words, SPECIAL_WORDS,
};

/// The shape of the directed tests: 4 lanes x 2 sublanes, every unit.
fn vpu() -> VpuDriver {
    driver(&preset("full-4x2"))
}

/// int32 values at the edges: zero, one, minus one, the extremes, shift
/// amounts around 31 and 32, sign and byte boundaries.
const INT_EDGES: &[i32] = &[
    0,
    1,
    -1,
    2,
    -2,
    31,
    32,
    33,
    63,
    -32,
    127,
    -128,
    255,
    i32::MAX,
    i32::MIN,
    i32::MAX - 1,
    i32::MIN + 1,
    0x5555_5555,
    0xAAAA_AAAAu32 as i32,
    0x0001_0000,
];

/// Every pair of edge values, then random pairs (a quarter of them special).
fn int_pairs(rng: &mut impl Rng) -> (Vec<u32>, Vec<u32>) {
    let mut a = Vec::new();
    let mut b = Vec::new();
    for &x in INT_EDGES {
        for &y in INT_EDGES {
            a.push(x as u32);
            b.push(y as u32);
        }
    }
    a.extend(random_words(rng, 3000));
    b.extend(random_words(rng, 3000));
    (a, b)
}

#[rstest]
#[case::add_i32(Op::AddI32)]
#[case::sub_i32(Op::SubI32)]
#[case::mul_i32(Op::MulI32)]
#[case::min_i32(Op::MinI32)]
#[case::max_i32(Op::MaxI32)]
#[case::and_i32(Op::AndI32)]
#[case::or_i32(Op::OrI32)]
#[case::xor_i32(Op::XorI32)]
#[case::shl_i32(Op::ShlI32)]
#[case::shr_i32(Op::ShrI32)]
#[case::sra_i32(Op::SraI32)]
#[case::eq_i32(Op::EqI32)]
#[case::ne_i32(Op::NeI32)]
#[case::lt_i32(Op::LtI32)]
#[case::le_i32(Op::LeI32)]
#[case::ltu_i32(Op::LtuI32)]
#[case::leu_i32(Op::LeuI32)]
fn int32_binary(#[case] op: Op) {
    let mut rng = rng_for(&format!("int32_binary_{op}"));
    let (a, b) = int_pairs(&mut rng);
    let mut d = vpu();
    let got = check_elementwise(&mut d, op, &[&a, &b], None, "edges and random pairs");
    // A few results stated here, apart from both models.
    let at = |x: i32, y: i32| {
        let i = INT_EDGES.iter().position(|&v| v == x).unwrap() * INT_EDGES.len()
            + INT_EDGES.iter().position(|&v| v == y).unwrap();
        got[i] as i32
    };
    match op {
        Op::AddI32 => assert_eq!(at(i32::MAX, 1), i32::MIN),
        Op::MulI32 => assert_eq!(at(i32::MIN, -1), i32::MIN),
        Op::ShlI32 => assert_eq!(at(1, 33), 2),
        Op::SraI32 => assert_eq!(at(i32::MIN, 31), -1),
        Op::ShrI32 => assert_eq!(at(i32::MIN, 31), 1),
        Op::LtuI32 => assert_eq!(at(-1, 1), 0),
        Op::LtI32 => assert_eq!(at(-1, 1), 1),
        _ => {}
    }
}

#[rstest]
#[case::not_i32(Op::NotI32)]
#[case::relu_i32(Op::ReluI32)]
fn int32_unary(#[case] op: Op) {
    let mut rng = rng_for(&format!("int32_unary_{op}"));
    let mut a: Vec<u32> = INT_EDGES.iter().map(|&x| x as u32).collect();
    a.extend(random_words(&mut rng, 2000));
    let got = check_elementwise(&mut vpu(), op, &[&a], None, "edges and random values");
    let expect = |x: u32| match op {
        Op::NotI32 => !x,
        _ => (x as i32).max(0) as u32,
    };
    assert_eq!(got, a.iter().map(|&x| expect(x)).collect::<Vec<_>>());
}

/// Every pair of special fp32 values, on both operands.
fn special_pairs() -> (Vec<u32>, Vec<u32>) {
    let mut a = Vec::new();
    let mut b = Vec::new();
    for &x in SPECIAL_WORDS {
        for &y in SPECIAL_WORDS {
            a.push(x);
            b.push(y);
        }
    }
    (a, b)
}

/// A vector file of binary fp32 operations: operands and the result column
/// `col` (counted after the operands).
fn binary_file(
    file: &str,
    columns: usize,
    col: usize,
) -> (Vec<usize>, Vec<u32>, Vec<u32>, Vec<u32>) {
    let rows = read_vectors(file, columns);
    let mut lines = Vec::new();
    let (mut a, mut b, mut want) = (Vec::new(), Vec::new(), Vec::new());
    for r in &rows {
        lines.push(r.line);
        a.push(hex32(&r.fields[0]));
        b.push(hex32(&r.fields[1]));
        want.push(hex32(&r.fields[2 + col]));
    }
    (lines, a, b, want)
}

#[rstest]
#[case::add_f32(Op::AddF32, "f32_add.tsv", 3, 0)]
#[case::sub_f32(Op::SubF32, "f32_sub.tsv", 3, 0)]
#[case::mul_f32(Op::MulF32, "f32_mul.tsv", 3, 0)]
#[case::min_f32(Op::MinF32, "f32_min_max.tsv", 4, 0)]
#[case::max_f32(Op::MaxF32, "f32_min_max.tsv", 4, 1)]
fn f32_binary(#[case] op: Op, #[case] file: &str, #[case] columns: usize, #[case] col: usize) {
    let mut d = vpu();
    let (lines, a, b, want) = binary_file(file, columns, col);
    let got = check_elementwise(&mut d, op, &[&a, &b], None, file);
    expect_rows(&format!("{op} against {file}"), &lines, &got, &want);
    let (a, b) = special_pairs();
    check_elementwise(&mut d, op, &[&a, &b], None, "special pairs");
}

#[rstest]
#[case::eq_f32(Op::EqF32, 0)]
#[case::ne_f32(Op::NeF32, 1)]
#[case::lt_f32(Op::LtF32, 2)]
#[case::le_f32(Op::LeF32, 3)]
fn f32_compare(#[case] op: Op, #[case] col: usize) {
    let mut d = vpu();
    let rows = read_vectors("f32_cmp.tsv", 6);
    let lines: Vec<usize> = rows.iter().map(|r| r.line).collect();
    let a: Vec<u32> = rows.iter().map(|r| hex32(&r.fields[0])).collect();
    let b: Vec<u32> = rows.iter().map(|r| hex32(&r.fields[1])).collect();
    let want: Vec<u32> = rows.iter().map(|r| dec(&r.fields[2 + col])).collect();
    let got = check_elementwise(&mut d, op, &[&a, &b], None, "f32_cmp.tsv");
    expect_rows(&format!("{op} against f32_cmp.tsv"), &lines, &got, &want);
    let (a, b) = special_pairs();
    check_elementwise(&mut d, op, &[&a, &b], None, "special pairs");
}

#[rstest]
#[case::relu_f32(Op::ReluF32, 0)]
#[case::relu6_f32(Op::Relu6F32, 1)]
fn f32_relu(#[case] op: Op, #[case] col: usize) {
    let mut d = vpu();
    let rows = read_vectors("f32_relu.tsv", 3);
    let lines: Vec<usize> = rows.iter().map(|r| r.line).collect();
    let x: Vec<u32> = rows.iter().map(|r| hex32(&r.fields[0])).collect();
    let want: Vec<u32> = rows.iter().map(|r| hex32(&r.fields[1 + col])).collect();
    let got = check_elementwise(&mut d, op, &[&x], None, "f32_relu.tsv");
    expect_rows(&format!("{op} against f32_relu.tsv"), &lines, &got, &want);
    check_elementwise(&mut d, op, &[SPECIAL_WORDS], None, "special values");
}

/// A vector file of conversions `input output`, as elements (bf16 in the
/// low 16 bits).
fn conversion_file(file: &str, input16: bool, output16: bool) -> (Vec<usize>, Vec<u32>, Vec<u32>) {
    let rows = read_vectors(file, 2);
    let read = |s: &str, short: bool| if short { u32::from(hex16(s)) } else { hex32(s) };
    (
        rows.iter().map(|r| r.line).collect(),
        rows.iter().map(|r| read(&r.fields[0], input16)).collect(),
        rows.iter().map(|r| read(&r.fields[1], output16)).collect(),
    )
}

#[rstest]
#[case::cvt_i32_f32(Op::CvtI32F32, "i32_to_f32.tsv", false, false)]
#[case::cvt_f32_i32(Op::CvtF32I32, "f32_to_i32.tsv", false, false)]
#[case::cvt_f32_bf16(Op::CvtF32Bf16, "f32_to_bf16.tsv", false, true)]
#[case::cvt_bf16_f32(Op::CvtBf16F32, "bf16_to_f32.tsv", true, false)]
fn conversions(#[case] op: Op, #[case] file: &str, #[case] in16: bool, #[case] out16: bool) {
    let mut d = vpu();
    let (lines, x, want) = conversion_file(file, in16, out16);
    let got = check_elementwise(&mut d, op, &[&x], None, file);
    expect_rows(&format!("{op} against {file}"), &lines, &got, &want);
    // The high half of a bf16 input is ignored.
    let mut specials = SPECIAL_WORDS.to_vec();
    specials.extend(INT_EDGES.iter().map(|&v| v as u32));
    check_elementwise(&mut d, op, &[&specials], None, "special values");
}

#[test]
fn requant_i8_per_element_parameters() {
    let mut d = vpu();
    let rows = read_vectors("requant_int8.tsv", 5);
    let lines: Vec<usize> = rows.iter().map(|r| r.line).collect();
    let acc: Vec<u32> = rows
        .iter()
        .map(|r| dec::<i32>(&r.fields[0]) as u32)
        .collect();
    let mult: Vec<u32> = rows
        .iter()
        .map(|r| dec::<i32>(&r.fields[1]) as u32)
        .collect();
    let params: Vec<u32> = rows
        .iter()
        .map(|r| config::vpu_isa::requant_param_word(dec(&r.fields[2]), dec(&r.fields[3])))
        .collect();
    let want: Vec<u32> = rows
        .iter()
        .map(|r| i32::from(dec::<i8>(&r.fields[4])) as u32)
        .collect();
    let got = check_elementwise(
        &mut d,
        Op::RequantI8,
        &[&acc, &mult, &params],
        None,
        "requant_int8.tsv",
    );
    expect_rows("requant_i8 against requant_int8.tsv", &lines, &got, &want);
}

#[test]
fn requant_i8_broadcast_parameters_at_the_edges() {
    let mut d = vpu();
    let mut rng = rng_for("requant_i8_broadcast_parameters_at_the_edges");
    let mut acc: Vec<u32> = INT_EDGES.iter().map(|&v| v as u32).collect();
    acc.extend(random_words(&mut rng, 500));
    for (multiplier, shift, zero_point) in [
        (i32::MAX, 0, 0),
        (i32::MIN, 0, 127),
        (1 << 30, 31, -128),
        (1_518_500_250, 7, -5),
        (1, 1, 3),
    ] {
        let q = Requant {
            multiplier,
            shift,
            zero_point,
        };
        let got = check_elementwise(&mut d, Op::RequantI8, &[&acc], Some(q), "edges");
        for (&a, &g) in acc.iter().zip(&got) {
            let want = golden::requant_int8(a as i32, multiplier, shift, zero_point);
            assert_eq!(g as i32, i32::from(want), "requant({a:#x}) with {q:?}");
        }
    }
}

#[test]
fn select_passes_bit_patterns() {
    let mut d = vpu();
    let mut rng = rng_for("select_passes_bit_patterns");
    let n = SPECIAL_WORDS.len() * 8;
    // Masks: zero, one, and patterns that are not 1 (a NaN, -0, the sign bit).
    let mask: Vec<u32> = (0..n)
        .map(|i| [0, 1, 0x7FC0_0001, 0x8000_0000, 0xFFFF_FFFF, 0, 2, 0][i % 8])
        .collect();
    let a: Vec<u32> = (0..n)
        .map(|i| SPECIAL_WORDS[i % SPECIAL_WORDS.len()])
        .collect();
    let b: Vec<u32> = (0..n).map(|_| random_word(&mut rng)).collect();
    let got = check_elementwise(&mut d, Op::Select, &[&mask, &a, &b], None, "specials");
    for i in 0..n {
        assert_eq!(
            got[i],
            if mask[i] != 0 { a[i] } else { b[i] },
            "element {i}"
        );
    }
}

/// The reduce_sum_f32 rows of the vector file for this VPU's W.
fn reduce_sum_rows(d: &mut VpuDriver) -> usize {
    let w = d.config().elems() as usize;
    let mut checked = 0;
    for r in read_vectors("f32_reduce_sum.tsv", 3) {
        if dec::<usize>(&r.fields[0]) != w {
            continue;
        }
        let x: Vec<u32> = r.fields[1].split(',').map(hex32).collect();
        let want = hex32(&r.fields[2]);
        let got = check_reduction(d, Op::ReduceSumF32, &x, &format!("line {}", r.line));
        assert_eq!(
            got,
            want,
            "f32_reduce_sum.tsv line {}: {} elements, W = {w}",
            r.line,
            x.len()
        );
        checked += 1;
    }
    checked
}

/// A small VPU of `lanes` x `sublanes` (4 registers, 16 VMEM words): the
/// fold's other depths, cheap to build.
fn small(lanes: u32, sublanes: u32) -> VpuConfig {
    VpuConfig::with(lanes, sublanes, 4, 16, VpuUnits::Full).unwrap()
}

#[rstest]
#[case::w1(preset("full-1x1"))]
#[case::w2(preset("full-2x1"))]
#[case::w4(small(4, 1))]
#[case::w8_4x2(preset("full-4x2"))]
#[case::w8_8x1(preset("full-8x1"))]
#[case::w16(small(8, 2))]
#[case::w32(small(32, 1))]
// 128 elements: lanes, rotators and reduction units as shared code in the
// Verilator model, as the TPU's shape is.
#[case::w128(small(16, 8))]
#[case::w8_4x2_d1(preset("full-4x2").with_depth(1).unwrap())]
#[case::w4_fmax(preset("fmax"))]
fn reduce_sum_f32_in_the_contract_order(#[case] cfg: VpuConfig) {
    let mut shape = format!("{}x{}", cfg.lanes(), cfg.sublanes());
    if cfg.depth() > 0 {
        shape += &format!("_d{}", cfg.depth());
    }
    let mut d = driver(&cfg);
    let rows = reduce_sum_rows(&mut d);
    assert!(rows >= 100, "only {rows} rows for {shape}");
    // Across VMEM tiles: the accumulator stays in its register.
    let mut rng = rng_for(&format!("reduce_sum_f32_{shape}"));
    let cfg = *d.config();
    let n = (cfg.vmem_words() * cfg.elems()) as usize * 2 + 5;
    let x = random_words(&mut rng, n);
    let got = check_reduction(&mut d, Op::ReduceSumF32, &x, "three tiles");
    assert_eq!(got, golden::vpu::reduce_sum_f32(&x, cfg.elems() as usize));
}

#[rstest]
#[case::reduce_sum_i32(Op::ReduceSumI32)]
#[case::reduce_max_i32(Op::ReduceMaxI32)]
#[case::reduce_min_i32(Op::ReduceMinI32)]
#[case::reduce_max_f32(Op::ReduceMaxF32)]
#[case::reduce_min_f32(Op::ReduceMinF32)]
fn reductions_at_the_edges(#[case] op: Op) {
    let mut d = vpu();
    let mut rng = rng_for(&format!("reductions_at_the_edges_{op}"));
    let w = d.config().elems() as usize;
    let ints = |x: &[u32]| x.iter().map(|&v| v as i32).collect::<Vec<i32>>();
    let contract = |x: &[u32]| match op {
        Op::ReduceSumI32 => golden::vpu::reduce_sum_i32(&ints(x)) as u32,
        Op::ReduceMaxI32 => golden::vpu::reduce_max_i32(&ints(x)) as u32,
        Op::ReduceMinI32 => golden::vpu::reduce_min_i32(&ints(x)) as u32,
        Op::ReduceMaxF32 => golden::vpu::reduce_max_f32(x),
        _ => golden::vpu::reduce_min_f32(x),
    };
    let mut cases: Vec<Vec<u32>> = SPECIAL_WORDS.iter().map(|&v| vec![v]).collect();
    cases.push(INT_EDGES.iter().map(|&v| v as u32).collect());
    cases.push(vec![0x8000_0000, 0, 0x8000_0001, 0x0000_0001]);
    cases.push(vec![0xFF80_0000; 3]);
    cases.push(vec![0x7F80_0000; 2 * w + 1]);
    for len in [w - 1, w, w + 1, 3 * w + 5, 700] {
        cases.push(random_words(&mut rng, len.max(1)));
    }
    for (i, x) in cases.iter().enumerate() {
        let got = check_reduction(&mut d, op, x, &format!("case {i}"));
        assert_eq!(got, contract(x), "{op} case {i}: {x:08x?}");
    }
}

#[test]
fn an_int32_only_vpu_computes_the_integer_operations() {
    for cfg in depths(&preset("int32-4x2")) {
        int32_only(&cfg);
    }
}

fn int32_only(cfg: &VpuConfig) {
    let mut d = driver(cfg);
    let mut rng = rng_for("an_int32_only_vpu_computes_the_integer_operations");
    let (a, b) = int_pairs(&mut rng);
    for op in [Op::AddI32, Op::MulI32, Op::SraI32, Op::LtI32] {
        check_elementwise(&mut d, op, &[&a, &b], None, "int32-only");
    }
    let q = Requant {
        multiplier: 1 << 30,
        shift: 3,
        zero_point: 1,
    };
    check_elementwise(&mut d, Op::RequantI8, &[&a], Some(q), "int32-only");
    for op in [Op::ReduceSumI32, Op::ReduceMaxI32, Op::ReduceMinI32] {
        check_reduction(&mut d, op, &a, "int32-only");
    }
}

/// Every operation with extra execute stages: the operand patterns of the
/// directed tests (edge pairs, special values, random words), each array
/// operation as the run CLI runs it, against the golden model bit for bit
/// and the cycle model cycle for cycle.
#[rstest]
#[case::d1(preset("full-4x2").with_depth(1).unwrap())]
#[case::d2(preset("full-4x2").with_depth(2).unwrap())]
#[case::d3(preset("full-4x2").with_depth(3).unwrap())]
#[case::d4(preset("full-4x2").with_depth(4).unwrap())]
#[case::d5(preset("full-4x2").with_depth(5).unwrap())]
#[case::d6(preset("full-4x2").with_depth(6).unwrap())]
// The rotations a cycle late, along the lanes and the sublanes.
#[case::d7(preset("full-4x2").with_depth(7).unwrap())]
#[case::fmax(preset("fmax"))]
fn every_operation_with_extra_execute_stages(#[case] cfg: VpuConfig) {
    let mut d = driver(&cfg);
    let what = format!("depth {}", cfg.depth());
    let mut rng = rng_for(&format!("every_operation_depth_{}", cfg.depth()));
    let (mut a, mut b) = int_pairs(&mut rng);
    let (sa, sb) = special_pairs();
    a.extend(sa);
    b.extend(sb);
    let n = a.len();
    let c: Vec<u32> = (0..n).map(|_| random_word(&mut rng)).collect();
    let params: Vec<u32> = (0..n)
        .map(|_| {
            config::vpu_isa::requant_param_word(rng.gen_range(0..32), rng.gen_range(-128..128))
        })
        .collect();
    for &op in Op::ALL {
        match kind(op) {
            Some(Kind::Unary) => {
                check_elementwise(&mut d, op, &[&a], None, &what);
            }
            Some(Kind::Binary) => {
                check_elementwise(&mut d, op, &[&a, &b], None, &what);
            }
            Some(Kind::Select) => {
                check_elementwise(&mut d, op, &[&c, &a, &b], None, &what);
            }
            Some(Kind::Requant) => {
                check_elementwise(&mut d, op, &[&a, &b, &params], None, &what);
                let q = Requant {
                    multiplier: (b[7] | 1) as i32 & i32::MAX,
                    shift: 5,
                    zero_point: -3,
                };
                check_elementwise(&mut d, op, &[&a], Some(q), &what);
            }
            Some(Kind::Reduction) => {
                check_reduction(&mut d, op, &a, &what);
            }
            None => {}
        }
    }
}

//! Every row of every reference vector file (from an exact oracle written
//! apart from this project) against the golden numerics.

mod support;

use golden::numerics::*;
use support::{dec, hex16, hex32, read_vectors, Mismatches, Row};

/// A named binary fp32 operation, one per result column of a vector file.
type NamedOp = (&'static str, fn(u32, u32) -> u32);

/// Checks a file of binary fp32 operations `a b result...`.
fn check_binary_f32(file: &str, min_rows: usize, ops: &[NamedOp]) {
    let rows = read_vectors(file, 2 + ops.len());
    assert!(rows.len() >= min_rows, "{file}: only {} rows", rows.len());
    let mut bad = Mismatches::new(file);
    for Row { line, fields } in &rows {
        let (a, b) = (hex32(&fields[0]), hex32(&fields[1]));
        for (col, (name, op)) in ops.iter().enumerate() {
            let want = hex32(&fields[2 + col]);
            let got = op(a, b);
            bad.check(got, want, || {
                format!("line {line}: {name}({a:08x}, {b:08x}) = {got:08x}, expected {want:08x}")
            });
        }
    }
    bad.finish();
}

#[test]
fn f32_add() {
    check_binary_f32("f32_add.tsv", 100_000, &[("add32", add32)]);
}

#[test]
fn f32_sub() {
    check_binary_f32("f32_sub.tsv", 30_000, &[("sub32", sub32)]);
}

#[test]
fn f32_mul() {
    check_binary_f32("f32_mul.tsv", 100_000, &[("mul32", mul32)]);
}

#[test]
fn f32_min_max() {
    check_binary_f32(
        "f32_min_max.tsv",
        20_000,
        &[("min32", min32), ("max32", max32)],
    );
}

#[test]
fn bf16_mul_vectors() {
    let rows = read_vectors("bf16_mul.tsv", 3);
    assert!(rows.len() >= 100_000);
    let mut bad = Mismatches::new("bf16_mul.tsv");
    for Row { line, fields } in &rows {
        let (a, b, want) = (hex16(&fields[0]), hex16(&fields[1]), hex32(&fields[2]));
        let got = bf16_mul(a, b);
        bad.check(got, want, || {
            format!("line {line}: bf16_mul({a:04x}, {b:04x}) = {got:08x}, expected {want:08x}")
        });
    }
    bad.finish();
}

#[test]
fn bf16_to_f32_every_pattern() {
    let rows = read_vectors("bf16_to_f32.tsv", 2);
    let mut seen = vec![false; 1 << 16];
    let mut bad = Mismatches::new("bf16_to_f32.tsv");
    for Row { line, fields } in &rows {
        let (a, want) = (hex16(&fields[0]), hex32(&fields[1]));
        seen[usize::from(a)] = true;
        let got = widen_bf16(a);
        bad.check(got, want, || {
            format!("line {line}: widen_bf16({a:04x}) = {got:08x}, expected {want:08x}")
        });
    }
    assert!(
        seen.iter().all(|&s| s),
        "bf16_to_f32.tsv must cover all 65536 patterns"
    );
    bad.finish();
}

#[test]
fn f32_to_bf16() {
    let rows = read_vectors("f32_to_bf16.tsv", 2);
    assert!(rows.len() >= 50_000);
    let mut bad = Mismatches::new("f32_to_bf16.tsv");
    for Row { line, fields } in &rows {
        let (a, want) = (hex32(&fields[0]), hex16(&fields[1]));
        let got = narrow_bf16(a);
        bad.check(got, want, || {
            format!("line {line}: narrow_bf16({a:08x}) = {got:04x}, expected {want:04x}")
        });
    }
    bad.finish();
}

#[test]
fn i32_to_f32_vectors() {
    let rows = read_vectors("i32_to_f32.tsv", 2);
    assert!(rows.len() >= 20_000);
    let mut bad = Mismatches::new("i32_to_f32.tsv");
    for Row { line, fields } in &rows {
        let (a, want) = (hex32(&fields[0]) as i32, hex32(&fields[1]));
        let got = i32_to_f32(a);
        bad.check(got, want, || {
            format!(
                "line {line}: i32_to_f32({:08x}) = {got:08x}, expected {want:08x}",
                a as u32
            )
        });
    }
    bad.finish();
}

#[test]
fn f32_to_i32_vectors() {
    let rows = read_vectors("f32_to_i32.tsv", 2);
    assert!(rows.len() >= 30_000);
    let mut bad = Mismatches::new("f32_to_i32.tsv");
    for Row { line, fields } in &rows {
        let (a, want) = (hex32(&fields[0]), hex32(&fields[1]) as i32);
        let got = f32_to_i32(a);
        bad.check(got, want, || {
            format!(
                "line {line}: f32_to_i32({a:08x}) = {:08x}, expected {:08x}",
                got as u32, want as u32
            )
        });
    }
    bad.finish();
}

#[test]
fn bf16_mac_chain() {
    let rows = read_vectors("bf16_mac_chain.tsv", 3);
    assert!(rows.len() >= 3_000);
    let mut bad = Mismatches::new("bf16_mac_chain.tsv");
    for Row { line, fields } in &rows {
        let a: Vec<u16> = fields[0].split(',').map(hex16).collect();
        let b: Vec<u16> = fields[1].split(',').map(hex16).collect();
        assert_eq!(
            a.len(),
            b.len(),
            "line {line}: operand lists differ in length"
        );
        let want = hex32(&fields[2]);
        let got = a
            .iter()
            .zip(&b)
            .fold(0u32, |s, (&x, &y)| add32(s, bf16_mul(x, y)));
        bad.check(got, want, || {
            format!(
                "line {line}: chain of {} = {got:08x}, expected {want:08x}",
                a.len()
            )
        });
    }
    bad.finish();
}

#[test]
fn requant_int8_vectors() {
    let rows = read_vectors("requant_int8.tsv", 5);
    assert!(rows.len() >= 50_000);
    let mut bad = Mismatches::new("requant_int8.tsv");
    for Row { line, fields } in &rows {
        let acc: i32 = dec(&fields[0]);
        let multiplier: i32 = dec(&fields[1]);
        let shift: u32 = dec(&fields[2]);
        let zero_point: i32 = dec(&fields[3]);
        let want: i8 = dec(&fields[4]);
        let got = requant_int8(acc, multiplier, shift, zero_point);
        bad.check(got, want, || {
            format!(
                "line {line}: requant_int8({acc} = {:08x}, {multiplier} = {:08x}, {shift}, {zero_point}) \
                 = {got} ({:02x}), expected {want} ({:02x})",
                acc as u32, multiplier as u32, got as u8, want as u8
            )
        });
    }
    bad.finish();
}

/// A named fp32 compare.
type NamedCompare = (&'static str, fn(u32, u32) -> bool);

#[test]
fn f32_compare_vectors() {
    let rows = read_vectors("f32_cmp.tsv", 6);
    assert!(rows.len() >= 20_000);
    let ops: [NamedCompare; 4] = [
        ("eq_f32", eq_f32),
        ("ne_f32", ne_f32),
        ("lt_f32", lt_f32),
        ("le_f32", le_f32),
    ];
    let mut bad = Mismatches::new("f32_cmp.tsv");
    for Row { line, fields } in &rows {
        let (a, b) = (hex32(&fields[0]), hex32(&fields[1]));
        for (col, (name, op)) in ops.iter().enumerate() {
            let want: u32 = dec(&fields[2 + col]);
            let got = u32::from(op(a, b));
            bad.check(got, want, || {
                format!("line {line}: {name}({a:08x}, {b:08x}) = {got}, expected {want}")
            });
        }
    }
    bad.finish();
}

/// A named unary fp32 operation, one per result column of a vector file.
type NamedUnary = (&'static str, fn(u32) -> u32);

/// Checks a file of unary fp32 operations `x result...`.
fn check_unary_f32(file: &str, min_rows: usize, ops: &[NamedUnary]) {
    let rows = read_vectors(file, 1 + ops.len());
    assert!(rows.len() >= min_rows, "{file}: only {} rows", rows.len());
    let mut bad = Mismatches::new(file);
    for Row { line, fields } in &rows {
        let x = hex32(&fields[0]);
        for (col, (name, op)) in ops.iter().enumerate() {
            let want = hex32(&fields[1 + col]);
            let got = op(x);
            bad.check(got, want, || {
                format!("line {line}: {name}({x:08x}) = {got:08x}, expected {want:08x}")
            });
        }
    }
    bad.finish();
}

#[test]
fn f32_div_vectors() {
    check_binary_f32("f32_div.tsv", 30_000, &[("div32", div32)]);
}

#[test]
fn f32_sqrt_vectors() {
    check_unary_f32(
        "f32_sqrt.tsv",
        20_000,
        &[("sqrt32", sqrt32), ("rsqrt", rsqrt32)],
    );
}

#[test]
fn f32_exp_vectors() {
    check_unary_f32("f32_exp.tsv", 30_000, &[("exp2", exp2_32), ("exp", exp32)]);
}

#[test]
fn f32_relu_vectors() {
    check_unary_f32(
        "f32_relu.tsv",
        5_000,
        &[("relu_f32", relu_f32), ("relu6_f32", relu6_f32)],
    );
}

#[test]
fn f32_reduce_sum_vectors() {
    let rows = read_vectors("f32_reduce_sum.tsv", 3);
    assert!(rows.len() >= 1_000);
    let mut bad = Mismatches::new("f32_reduce_sum.tsv");
    for Row { line, fields } in &rows {
        let w: usize = dec(&fields[0]);
        let x: Vec<u32> = fields[1].split(',').map(hex32).collect();
        let want = hex32(&fields[2]);
        let got = golden::vpu::reduce_sum_f32(&x, w);
        bad.check(got, want, || {
            format!(
                "line {line}: reduce_sum_f32 of {} elements, W = {w}: {got:08x}, expected {want:08x}",
                x.len()
            )
        });
    }
    bad.finish();
}

//! The MXU result models against directed cases and straightforward
//! restatements of `docs/numerics.md#mxu-semantics`.

mod support;

use golden::mxu::{matmul_bf16, matmul_int8};
use golden::numerics::{add32, bf16_mul, CANONICAL_NAN_F32};
use rand::Rng;
use support::{hex16, hex32, read_vectors, Mismatches, Row};

/// The int8 matmul with i64 sums reduced modulo 2^32 at the end.
fn int8_reference(a: &[i8], b: &[i8], m: usize, k: usize, n: usize) -> Vec<i32> {
    let mut c = vec![0i32; m * n];
    for i in 0..m {
        for j in 0..n {
            let sum: i64 = (0..k)
                .map(|kk| i64::from(a[i * k + kk]) * i64::from(b[kk * n + j]))
                .sum();
            c[i * n + j] = sum as i32; // truncation = reduction modulo 2^32
        }
    }
    c
}

#[test]
fn int8_extreme_products_are_exact() {
    assert_eq!(matmul_int8(&[-128], &[-128], 1, 1, 1), [16384]);
    assert_eq!(matmul_int8(&[-128], &[127], 1, 1, 1), [-16256]);
    assert_eq!(matmul_int8(&[127], &[127], 1, 1, 1), [16129]);
    assert_eq!(
        matmul_int8(&[-128, 127], &[-128, 127], 1, 2, 1),
        [16384 + 16129]
    );
}

#[test]
fn int8_zeros_and_identity() {
    let (m, k) = (5, 7);
    let a: Vec<i8> = (0..m * k).map(|x| (x as i32 * 37 - 128) as i8).collect();
    assert_eq!(matmul_int8(&a, &vec![0; k * 3], m, k, 3), vec![0; m * 3]);
    let identity: Vec<i8> = (0..k * k).map(|x| i8::from(x / k == x % k)).collect();
    let expect: Vec<i32> = a.iter().map(|&x| i32::from(x)).collect();
    assert_eq!(matmul_int8(&a, &identity, m, k, k), expect);
}

#[test]
fn int8_sums_wrap_modulo_2_pow_32() {
    // -128 * -128 = 2^14: 2^17 of them sum to 2^31, which wraps to i32::MIN;
    // 2^18 of them wrap to 0; one more -128 * 127 then goes negative.
    let k = 1 << 17;
    assert_eq!(
        matmul_int8(&vec![-128; k], &vec![-128; k], 1, k, 1),
        [i32::MIN]
    );
    let k = 1 << 18;
    assert_eq!(matmul_int8(&vec![-128; k], &vec![-128; k], 1, k, 1), [0]);
    let mut a = vec![-128; k + 1];
    let mut b = vec![-128; k + 1];
    a[k] = -128;
    b[k] = 127;
    assert_eq!(matmul_int8(&a, &b, 1, k + 1, 1), [-16256]);
    // Two columns, one wrapping and one not.
    let k = (1 << 17) + 3;
    let a = vec![-128i8; k];
    let b: Vec<i8> = (0..2 * k)
        .map(|x| if x % 2 == 0 { -128 } else { 1 })
        .collect();
    let c = matmul_int8(&a, &b, 1, k, 2);
    assert_eq!(c, int8_reference(&a, &b, 1, k, 2));
    assert_eq!(c, [(1i64 << 31) as i32 + 3 * 16384, -128 * k as i32]);
}

#[test]
fn int8_random_shapes_match_reference() {
    let mut rng = support::rng("int8_matmul", 20);
    for _ in 0..200 {
        let (m, k, n) = (
            rng.gen_range(0..20),
            rng.gen_range(0..40),
            rng.gen_range(0..20),
        );
        let a: Vec<i8> = (0..m * k).map(|_| rng.gen()).collect();
        let b: Vec<i8> = (0..k * n).map(|_| rng.gen()).collect();
        assert_eq!(
            matmul_int8(&a, &b, m, k, n),
            int8_reference(&a, &b, m, k, n),
            "m={m} k={k} n={n}"
        );
    }
}

/// "MXU semantics" for bf16, restated on explicitly zero-padded copies of A
/// and B: K padded up to a multiple of R with +0.0, one fp32 sum per tile
/// started from +0.0, tile sums folded left to right.
fn bf16_reference(a: &[u16], b: &[u16], m: usize, k: usize, n: usize, r: usize) -> Vec<u32> {
    let padded_k = k.div_ceil(r) * r;
    let a_at = |i: usize, kk: usize| if kk < k { a[i * k + kk] } else { 0 };
    let b_at = |kk: usize, j: usize| if kk < k { b[kk * n + j] } else { 0 };
    let mut c = vec![0u32; m * n];
    for i in 0..m {
        for j in 0..n {
            let tile_sums: Vec<u32> = (0..padded_k)
                .step_by(r)
                .map(|t0| {
                    (t0..t0 + r).fold(0u32, |s, kk| add32(s, bf16_mul(a_at(i, kk), b_at(kk, j))))
                })
                .collect();
            if let Some((&first, rest)) = tile_sums.split_first() {
                c[i * n + j] = rest.iter().fold(first, |acc, &s| add32(acc, s));
            }
        }
    }
    c
}

#[test]
fn bf16_single_tile_equals_reference_chains() {
    // With R = K there is one tile and no padding: C is the vector file's chain.
    // With R > K the padding adds +0.0 to the chain, which only turns -0 into +0.
    let rows = read_vectors("bf16_mac_chain.tsv", 3);
    let mut bad = Mismatches::new("bf16 matmul vs bf16_mac_chain.tsv");
    for Row { line, fields } in &rows {
        let a: Vec<u16> = fields[0].split(',').map(hex16).collect();
        let b: Vec<u16> = fields[1].split(',').map(hex16).collect();
        let chain = hex32(&fields[2]);
        let k = a.len();
        let got = matmul_bf16(&a, &b, 1, k, 1, k)[0];
        bad.check(got, chain, || {
            format!("line {line}: R=K={k}: {got:08x}, chain {chain:08x}")
        });
        let padded = if chain == 0x8000_0000 { 0 } else { chain };
        let got = matmul_bf16(&a, &b, 1, k, 1, k + 5)[0];
        bad.check(got, padded, || {
            format!(
                "line {line}: R=K+5={}: {got:08x}, expected {padded:08x}",
                k + 5
            )
        });
    }
    bad.finish();
}

#[test]
fn bf16_result_depends_on_r() {
    const ONE: u16 = 0x3F80;
    const TWO_POW_24: u16 = 0x4B80;
    // Products 2^24, 0, 1, 1. R = 4: 2^24 + 1 ties to 2^24, twice. R = 2: the
    // ones meet in their own tile first, and 2^24 + 2 is exact.
    let a = [TWO_POW_24, 0, ONE, ONE];
    let b = [ONE; 4];
    assert_eq!(matmul_bf16(&a, &b, 1, 4, 1, 4), [0x4B80_0000]);
    assert_eq!(matmul_bf16(&a, &b, 1, 4, 1, 2), [0x4B80_0001]);
    // -1.5 * 2^-126 + 2^-126 underflows to -0 (sign of the exact sum). Padding
    // rows then add +0.0, which makes it +0.
    let a = [0x80C0, 0x0080];
    let b = [ONE, ONE];
    assert_eq!(matmul_bf16(&a, &b, 1, 2, 1, 1), [0x8000_0000]);
    assert_eq!(matmul_bf16(&a, &b, 1, 2, 1, 2), [0x8000_0000]);
    assert_eq!(matmul_bf16(&a, &b, 1, 2, 1, 3), [0]);
    // Infinities of both signs in different tiles still meet: NaN.
    let a = [0x7F80, 0xFF80];
    assert_eq!(matmul_bf16(&a, &b, 1, 2, 1, 1), [CANONICAL_NAN_F32]);
    // An empty K gives +0.0 everywhere.
    assert_eq!(matmul_bf16(&[], &[], 2, 0, 2, 4), [0; 4]);
}

#[test]
fn bf16_random_shapes_match_restatement() {
    let mut rng = support::rng("bf16_matmul", 21);
    let special = [
        0x0000u16, 0x8000, 0x0001, 0x7F80, 0xFF80, 0x7FC0, 0x7F7F, 0x0080, 0x8080, 0x3F80,
    ];
    for _ in 0..100 {
        let (m, k, n) = (
            rng.gen_range(1..6),
            rng.gen_range(0..50),
            rng.gen_range(1..6),
        );
        let r = rng.gen_range(1..12);
        let elem = |rng: &mut rand_chacha::ChaCha8Rng| -> u16 {
            match rng.gen_range(0..20) {
                0 => special[rng.gen_range(0..special.len())],
                // Moderate magnitudes of both signs: real cancellation and rounding.
                1..=15 => (rng.gen::<u16>() & 0x807F) | (rng.gen_range(0x78..=0x86u16) << 7),
                _ => rng.gen(),
            }
        };
        let a: Vec<u16> = (0..m * k).map(|_| elem(&mut rng)).collect();
        let b: Vec<u16> = (0..k * n).map(|_| elem(&mut rng)).collect();
        assert_eq!(
            matmul_bf16(&a, &b, m, k, n, r),
            bf16_reference(&a, &b, m, k, n, r),
            "m={m} k={k} n={n} R={r}"
        );
    }
}

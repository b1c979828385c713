//! The EUP block against its golden model (`golden::eup`), bit for bit and
//! cycle for cycle: random streams of every operation (and the reserved
//! encodings) with gaps, on configurations where either path is the longer
//! one, with no stages at all, and with every cut registered; every result
//! cycle's `valid_o` and `y_o`, and `valid_o` low everywhere else. Reset
//! in the middle of a stream drops the operations before it.

use config::{EupConfig, EupOp};
use golden::eup::{outputs, Offered};
use rand::Rng;
use sim::drivers::eup::EupDriver;
use tb::fp::special_f32;
use tb::seed::rng_for;

/// A random operand for `code`: specials, any bits, and the ranges where
/// each operation's results are finite and normal.
fn operand(rng: &mut impl Rng, code: u32, specials: &[u32]) -> u32 {
    match rng.gen_range(0..6) {
        0 => specials[rng.gen_range(0..specials.len())],
        1 | 2 => rng.gen(),
        _ if code >= EupOp::Exp2.code() => rng.gen_range(-140.0f32..140.0).to_bits(),
        _ => rng.gen_range(1e-30f32..1e30).to_bits() ^ (u32::from(rng.gen::<bool>()) << 31),
    }
}

/// `n` cycles of random operations (every encoding, reserved ones too),
/// about one cycle in five idle.
fn random_stream(rng: &mut impl Rng, n: usize) -> Vec<Option<Offered>> {
    let specials = special_f32();
    (0..n)
        .map(|_| {
            if rng.gen_range(0..5) == 0 {
                return None;
            }
            let code = rng.gen_range(0..8);
            Some(Offered {
                code,
                a: operand(rng, code, &specials),
                b: operand(rng, code, &specials),
            })
        })
        .collect()
}

/// Fails with the first few cycles that differ.
fn check(
    what: &str,
    got: &[Option<u32>],
    want: &[Option<u32>],
    inputs: &[Option<Offered>],
    latency: usize,
) {
    assert_eq!(got.len(), want.len(), "{what}: cycles");
    let bad: Vec<String> = got
        .iter()
        .zip(want)
        .enumerate()
        .filter(|(_, (g, w))| g != w)
        .take(8)
        .map(|(t, (g, w))| {
            let input = t.checked_sub(latency).and_then(|k| inputs.get(k));
            format!("cycle {t} ({input:x?}): RTL {g:x?}, golden {w:x?}")
        })
        .collect();
    assert!(bad.is_empty(), "{what}:\n  {}", bad.join("\n  "));
}

/// Configurations: the default (every cut), none, either path the longer,
/// and odd counts.
fn configs() -> Vec<EupConfig> {
    [
        (28, 4, 6),
        (0, 0, 0),
        (28, 0, 0),
        (1, 4, 6),
        (5, 2, 3),
        (13, 1, 5),
    ]
    .into_iter()
    .map(|(r, m, a)| EupConfig::new(r, m, a).unwrap())
    .collect()
}

#[test]
fn random_streams_match_golden_bit_for_bit_and_cycle_for_cycle() {
    let mut rng = rng_for("random_streams_match_golden_bit_for_bit_and_cycle_for_cycle");
    let n = tb::seed::soak_rounds(20_000);
    for cfg in configs() {
        let mut rtl = EupDriver::new(&cfg).unwrap_or_else(|e| panic!("{e}"));
        let inputs = random_stream(&mut rng, n);
        let got = rtl.outputs(&inputs);
        check(
            &cfg.to_string(),
            &got,
            &outputs(&cfg, &inputs),
            &inputs,
            cfg.latency() as usize,
        );
    }
}

#[test]
fn every_operation_on_every_special_pair() {
    let s = special_f32();
    let cfg = EupConfig::DEFAULT;
    let mut rtl = EupDriver::new(&cfg).unwrap_or_else(|e| panic!("{e}"));
    let mut inputs = Vec::new();
    for code in 0..8 {
        for &a in &s {
            for &b in &s {
                inputs.push(Some(Offered { code, a, b }));
            }
        }
    }
    let got = rtl.outputs(&inputs);
    check(
        "specials",
        &got,
        &outputs(&cfg, &inputs),
        &inputs,
        cfg.latency() as usize,
    );
}

#[test]
fn reset_drops_the_operations_in_flight() {
    let mut rng = rng_for("reset_drops_the_operations_in_flight");
    let cfg = EupConfig::new(5, 2, 3).unwrap();
    let latency = cfg.latency() as usize;
    let mut rtl = EupDriver::new(&cfg).unwrap_or_else(|e| panic!("{e}"));
    // Operations in flight, then a reset before any comes out.
    for o in random_stream(&mut rng, latency - 2) {
        assert_eq!(rtl.cycle(o), None, "a result before its latency");
    }
    rtl.reset();
    let inputs = random_stream(&mut rng, 200);
    let got = rtl.outputs(&inputs);
    check(
        "after reset",
        &got,
        &outputs(&cfg, &inputs),
        &inputs,
        latency,
    );
}

#[test]
fn runs_of_one_operation_match_golden_and_a_wrong_expectation_is_caught() {
    let mut rng = rng_for("runs_of_one_operation_match_golden_and_a_wrong_expectation_is_caught");
    let cfg = EupConfig::new(5, 2, 3).unwrap();
    let mut rtl = EupDriver::new(&cfg).unwrap_or_else(|e| panic!("{e}"));
    let s = special_f32();
    for code in 0..8 {
        let a: Vec<u32> = (0..300).map(|_| operand(&mut rng, code, &s)).collect();
        let b: Vec<u32> = (0..300).map(|_| operand(&mut rng, code, &s)).collect();
        let want: Vec<u32> = a
            .iter()
            .zip(&b)
            .map(|(&a, &b)| golden::eup::apply_code(code, a, b))
            .collect();
        let run = rtl
            .run(code, &a, &b, Some(&want))
            .unwrap_or_else(|e| panic!("op {code}: {e}"));
        assert_eq!(run.results, want, "op {code}");
        assert_eq!(run.cycles, 300 + u64::from(cfg.latency()));
    }
    // The driver's comparison can fail: one expected result off by a bit.
    let a = [1.5f32.to_bits(); 4];
    let mut want: Vec<u32> = a
        .iter()
        .map(|&x| golden::eup::apply(EupOp::Sqrt, x, 0))
        .collect();
    want[2] ^= 1;
    let e = rtl
        .run(EupOp::Sqrt.code(), &a, &a, Some(&want))
        .unwrap_err();
    assert!(e.to_string().contains("result 2"), "{e}");
}

//! Operand patterns for the floating-point tests: every class of fp32 and
//! bf16 value with the edges of each, shared by the unit tests of every
//! depth and the combinational units.

/// fp32 patterns of every class, including the edges of each.
pub fn special_f32() -> Vec<u32> {
    vec![
        0x0000_0000,
        0x8000_0000, // zeros
        0x0000_0001,
        0x8000_0001,
        0x007F_FFFF,
        0x807F_FFFF,
        0x0040_0000, // subnormals
        0x0080_0000,
        0x8080_0000,
        0x0080_0001,
        0x00FF_FFFF, // smallest normals
        0x3F80_0000,
        0xBF80_0000,
        0x3F80_0001,
        0x3FFF_FFFF,
        0x4000_0000,
        0x3F7F_FFFF,
        0x4B80_0000,
        0x4B7F_FFFF,
        0x3300_0000,
        0x3380_0000, // 2^24, 2^-25 ties
        0x4EFF_FFFF,
        0x4F00_0000,
        0xCF00_0000, // int32 saturation edges
        0x7F7F_FFFF,
        0xFF7F_FFFF,
        0x7F7F_FFFE,
        0x7F00_0000, // largest finite
        0x7F80_0000,
        0xFF80_0000, // infinities
        0x7FC0_0000,
        0xFFC0_0000,
        0x7F80_0001,
        0xFFFF_FFFF,
        0x7FBF_FFFF, // NaNs
    ]
}

/// bf16 patterns of every class, including the edges of each.
pub fn special_bf16() -> Vec<u16> {
    vec![
        0x0000, 0x8000, 0x0001, 0x807F, 0x0040, // zeros, subnormals
        0x0080, 0x8080, 0x00FF, 0x3F80, 0xBF80, 0x3FFF, 0x4000, 0x3F81, // normals
        0x7F7F, 0xFF7F, 0x7F00, 0x1F80, 0x2000, 0x5F80, 0x6000, // under/overflow edges
        0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x7F81, // inf, NaN
    ]
}

/// A random fp32 exact square: a 12-bit significand squared, with any
/// biased exponent from 1 to 254 (its root is exact, so rounding has
/// nothing to decide and the remainder must come out zero).
pub fn exact_square_f32(rng: &mut impl rand::Rng) -> u32 {
    let s = rng.gen_range(2048u64..4096);
    let square = s * s; // 22 or 23 bits
    let lead = 63 - square.leading_zeros();
    let frac = ((square << (23 - lead)) & 0x7F_FFFF) as u32;
    (rng.gen_range(1..=254u32) << 23) | frac
}

/// A random input for exp2 or exp: anything, an integer or its neighbours
/// (the split of t into floor(t) and the rest), the range edges (-126 and
/// 128 for exp2, about +-88 and -103 for exp), small magnitudes, and the
/// range where results are finite.
pub fn exp_input_f32(rng: &mut impl rand::Rng) -> u32 {
    match rng.gen_range(0..7) {
        0 => rng.gen(),
        1 => {
            let k = rng.gen_range(-130i32..=130) as f32;
            k.to_bits()
                .wrapping_add(rng.gen_range(0..=2))
                .wrapping_sub(1)
        }
        2 => [-126.0f32, 128.0, 88.72, -87.34, -103.28][rng.gen_range(0..5)]
            .to_bits()
            .wrapping_add(rng.gen_range(0..=64))
            .wrapping_sub(32),
        3 => (rng.gen::<u32>() & 0x807F_FFFF) | (rng.gen_range(90u32..127) << 23),
        _ => rng.gen_range(-140.0f32..140.0).to_bits(),
    }
}

/// Fails, naming `what`, when any result in `got` differs from `want` of
/// its input: how many differ, and the first ten.
#[track_caller]
pub fn assert_same_bits<T: std::fmt::Debug>(
    what: &str,
    inputs: &[T],
    got: &[u32],
    want: impl Fn(&T) -> u32,
) {
    assert_eq!(inputs.len(), got.len(), "{what}: one result per input");
    let bad: Vec<String> = inputs
        .iter()
        .zip(got)
        .filter(|(i, g)| want(i) != **g)
        .map(|(i, g)| format!("{i:x?}: RTL {g:08x}, golden {:08x}", want(i)))
        .collect();
    assert!(
        bad.is_empty(),
        "{what}: {} of {} differ, e.g.\n  {}",
        bad.len(),
        inputs.len(),
        bad[..bad.len().min(10)].join("\n  ")
    );
}

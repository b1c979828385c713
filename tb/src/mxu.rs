//! Checking the MXU in RTL against the golden model.

use config::MxuConfig;
use rand::Rng;
use sim::drivers::mxu::{MatmulStats, MxuDriver};

/// The configuration of the MXU's preset `name` (as `gen --preset` takes it).
///
/// # Panics
///
/// If the MXU has no such preset.
pub fn mxu_preset(name: &str) -> MxuConfig {
    hw::Block::presets(&mxu::Mxu)
        .into_iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("the MXU has no preset {name}"))
        .config
}

/// Runs an int8 matmul on the RTL and checks C (bit for bit, as it is read
/// out) and the cycle count against the golden model. `what` names the case.
pub fn check_int8(d: &mut MxuDriver, a: &[i8], b: &[i8], dims: (usize, usize, usize), what: &str) {
    let (m, k, n) = dims;
    let expected = golden::matmul_int8(a, b, m, k, n);
    let (c, stats) = d
        .matmul_int8(a, b, dims, Some(&expected))
        .unwrap_or_else(|e| panic!("{what} (M={m} K={k} N={n}) on {}: {e}", d.config()));
    assert_eq!(c, expected, "{what}: C differs (M={m} K={k} N={n})");
    check_cycles(d, &stats, dims, what);
}

/// As [`check_int8`] for bf16 operands (bit patterns) and fp32 results.
pub fn check_bf16(
    d: &mut MxuDriver,
    a: &[u16],
    b: &[u16],
    dims: (usize, usize, usize),
    what: &str,
) {
    let (m, k, n) = dims;
    let rows = d.config().rows() as usize;
    let expected = golden::matmul_bf16(a, b, m, k, n, rows);
    let (c, stats) = d
        .matmul_bf16(a, b, dims, Some(&expected))
        .unwrap_or_else(|e| panic!("{what} (M={m} K={k} N={n}) on {}: {e}", d.config()));
    assert_eq!(c, expected, "{what}: C differs (M={m} K={k} N={n})");
    check_cycles(d, &stats, dims, what);
}

/// The RTL's cycle count equals the cycle model's exactly.
fn check_cycles(d: &MxuDriver, stats: &MatmulStats, (m, k, n): (usize, usize, usize), what: &str) {
    let timing = golden::MxuTiming::new(d.config(), m, k, n);
    assert_eq!(
        stats.cycles,
        timing.total_cycles(),
        "{what}: RTL took {} cycles, the cycle model says {} (M={m} K={k} N={n}, {})",
        stats.cycles,
        timing.total_cycles(),
        d.config()
    );
    assert_eq!(stats.macs, timing.macs());
}

/// Random int8 operands weighted to the edges: -128, 127 and 0 each an
/// eighth of the time.
pub fn random_i8(rng: &mut impl Rng, len: usize) -> Vec<i8> {
    (0..len)
        .map(|_| match rng.gen_range(0..8) {
            0 => -128,
            1 => 127,
            2 => 0,
            _ => rng.gen(),
        })
        .collect()
}

/// bf16 values that stress the contract: zeros of both signs, subnormals,
/// infinities, NaNs, the largest and smallest normals, ones and near-ties.
pub const SPECIAL_BF16: &[u16] = &[
    0x0000, 0x8000, 0x0001, 0x8001, 0x007F, // zeros, subnormals
    0x0080, 0x8080, 0x7F7F, 0xFF7F, // extreme normals
    0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x7F81, // infinities, NaNs
    0x3F80, 0xBF80, 0x3F81, 0xBF81, 0x4000, 0x3F00, // around one
    0x5F80, 0x6000, 0x1F80, 0x2000, // products near overflow / underflow
];

/// One random bf16 operand (bit pattern): a special value a tenth of the
/// time, a moderate magnitude (sums that round, cancel and tie) most of the
/// time, any pattern otherwise.
pub fn random_bf16(rng: &mut impl Rng) -> u16 {
    match rng.gen_range(0..10) {
        0 => SPECIAL_BF16[rng.gen_range(0..SPECIAL_BF16.len())],
        1..=6 => moderate_bf16(rng),
        _ => rng.gen(),
    }
}

/// One random finite bf16 value (bit pattern) of moderate magnitude, 2^-5 ..
/// 2^5 of either sign: sums of them round and cancel, but never overflow or
/// become NaN or subnormal.
pub fn moderate_bf16(rng: &mut impl Rng) -> u16 {
    let exp: u16 = rng.gen_range(0x7A..0x84);
    (rng.gen::<u16>() & 0x807F) | (exp << 7)
}

/// Random traffic on every input for a random number of cycles, so that
/// weights, activations and reads are in flight when the next run's reset
/// comes.
pub fn random_traffic(d: &mut MxuDriver, rng: &mut impl Rng) {
    use mxu::ports;
    let cycles = rng.gen_range(1..=80);
    let int8_mode = d.config().int8_mode();
    let model = d.model_mut();
    let mut inputs = vec![
        ports::W_VALID,
        ports::W_ROW,
        ports::A_VALID,
        ports::A_FIRST,
        ports::A_ROW,
        ports::A_ACC_ADDR,
        ports::A_ACC_ADD,
        ports::ACC_RD_EN,
        ports::ACC_RD_ADDR,
    ];
    if int8_mode {
        inputs.push(ports::A_INT8);
    }
    let inputs: Vec<_> = inputs
        .into_iter()
        .map(|name| model.port(name).unwrap())
        .collect();
    for _ in 0..cycles {
        for &p in &inputs {
            let width = model.width(p);
            let mut words: Vec<u32> = (0..width.div_ceil(32)).map(|_| rng.gen()).collect();
            if !width.is_multiple_of(32) {
                *words.last_mut().unwrap() &= (1u32 << (width % 32)) - 1;
            }
            model.poke_wide(p, &words);
        }
        model.step();
    }
}

//! Checking the MXU in RTL against the golden model.

use sim::mxu::{MatmulStats, MxuDriver};

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

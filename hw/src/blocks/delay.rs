//! A delay line: a value delayed by a fixed number of cycles, inline in the
//! module that uses it.

use crate::builder::{Expr, ModuleBuilder};
use num_bigint::BigInt;

/// `value` delayed by `depth` clock cycles (`depth == 0` returns `value`).
///
/// Stage k (1 = the first) is a register `<name>_<k>` of the value's width,
/// loaded from stage k - 1 every cycle. One register per stage rather than
/// one wide register shifting by an element: a simulator then copies each
/// stage as a plain value instead of shifting a vector hundreds of bits wide
/// across machine words every cycle (Verilator runs the MXU's skew and
/// deskew triangles several times faster this way), and synthesis sees the
/// same chain of flip-flops, which it maps to shift-register primitives
/// (SRLs) where the FPGA has them. With `reset`, every stage resets to that
/// value (for valid/control bits).
///
/// In Verilog a line of two or more stages is one array `<name>_q [1:depth]`
/// (stage k is `<name>_q[k]`) loaded from `<name>_d` and shifted by a
/// generate loop, so its text does not grow with its depth (a 256x256 MXU
/// has three triangles of 32,640 stages each); Verilator splits the array
/// into one variable per stage.
#[track_caller]
pub fn delay(
    m: &mut ModuleBuilder,
    name: &str,
    value: Expr,
    depth: u32,
    reset: Option<i64>,
) -> Expr {
    let taps = delay_taps(m, name, value, depth, reset);
    taps[depth as usize]
}

/// Every stage of one delay line: element k is `value` delayed by k cycles,
/// for k = 0 (`value` itself) to `depth`, built as [`delay`] builds it. For
/// a value that several consumers need at different delays, one line serves
/// them all.
#[track_caller]
pub fn delay_taps(
    m: &mut ModuleBuilder,
    name: &str,
    value: Expr,
    depth: u32,
    reset: Option<i64>,
) -> Vec<Expr> {
    line(m, name, value, depth, reset, None)
}

/// `value` delayed by `depth` cycles in which `enable` (one bit) is high:
/// the stages of [`delay`] loading only then, so the line holds with the
/// pipeline it runs beside. Written as separate registers (the emitter's
/// array form is for lines without an enable).
#[track_caller]
pub fn delay_enabled(
    m: &mut ModuleBuilder,
    name: &str,
    value: Expr,
    depth: u32,
    enable: Expr,
) -> Expr {
    line(m, name, value, depth, None, Some(enable))[depth as usize]
}

/// The taps of a delay line, its stages loading while `enable` is high.
#[track_caller]
fn line(
    m: &mut ModuleBuilder,
    name: &str,
    value: Expr,
    depth: u32,
    reset: Option<i64>,
    enable: Option<Expr>,
) -> Vec<Expr> {
    // Stages hold the value's bits; a signed value is signed again at each tap.
    let ty = crate::Ty::u(value.width());
    let reset = reset.map(|v| {
        BigInt::from(crate::builder::const_bits_wrapping(
            ty.width,
            &BigInt::from(v),
        ))
    });
    let mut taps = vec![value];
    let mut bits = value.as_unsigned();
    let mut stages = Vec::new();
    for k in 1..=depth {
        let r = match &reset {
            None => m.reg(&format!("{name}_{k}"), ty),
            Some(v) => m.reg_reset(&format!("{name}_{k}"), ty, v.clone()),
        };
        stages.push(r);
        m.set_next(r, bits);
        if let Some(en) = enable {
            m.set_enable(r, en);
        }
        bits = r.q();
        taps.push(if value.ty().signed {
            bits.as_signed()
        } else {
            bits
        });
    }
    if depth > 1 && enable.is_none() {
        m.delay_line(name, &stages);
    }
    taps
}

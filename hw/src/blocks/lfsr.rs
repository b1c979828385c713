//! A Fibonacci LFSR: a pseudo-random bit sequence from any tap polynomial,
//! any number of bits per cycle, with the ITU-T O.150 PRBS presets.
//!
//! The sequence. For taps T (the exponents of the polynomial's nonzero terms
//! other than 1, so x^7 + x^6 + 1 has T = {7, 6} and width W = max T), the
//! bits satisfy b(k) = XOR over t in T of b(k - t). The register holds the
//! last W bits: register bit j - 1 is b(k - j), for j = 1..=W. The seed is
//! the register after reset: seed bit j - 1 is the bit j steps before the
//! first output bit.
//!
//! | port | type | meaning |
//! | --- | --- | --- |
//! | `en_i` | 1 | advance by n bits at the clock edge |
//! | `out_o` | n | the next n bits: bit i is b(k + i), b(k) the oldest |
//!
//! `out_o` is an XOR of register bits (no register of its own): after reset
//! it shows b(0) .. b(n-1), and each cycle with `en_i` moves on by n bits.
//! Both the output bits and the register after n steps are computed at
//! elaboration time as GF(2) linear forms of the register (the serial
//! definition run symbolically), so the logic is one flat XOR per bit
//! however large n is.
//!
//! Lock-up. The all-zero register is the one state a linear LFSR never
//! leaves, and the only one that maps to itself: with a nonzero seed it is
//! unreachable (the step is invertible because tap W is always present). The
//! seed must be nonzero, and should the register ever hold zero anyway (a
//! simulator or FPGA starting registers at 0 without a reset), the next
//! enabled cycle reloads the seed.
//!
//! [`Prbs`] gives the O.150 polynomials (maximal length: period 2^W - 1).
//! O.150 transmits PRBS15, PRBS23 and PRBS31 inverted; `out_o` is the
//! uninverted sequence, so invert it where the standard asks.

use super::xor_of;
use crate::builder::{cat, mux};
use crate::error::elab_error;
use crate::ir::ModuleDef;
use crate::{Design, Ty};
use num_bigint::{BigInt, BigUint};
use num_traits::{One, Zero};
use std::rc::Rc;

/// The ITU-T O.150 pseudo-random bit sequences.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prbs {
    /// x^7 + x^6 + 1.
    Prbs7,
    /// x^15 + x^14 + 1.
    Prbs15,
    /// x^23 + x^18 + 1.
    Prbs23,
    /// x^31 + x^28 + 1.
    Prbs31,
}

impl Prbs {
    /// The taps (exponents other than 0 of the polynomial), highest first.
    pub fn taps(self) -> &'static [u32] {
        match self {
            Prbs::Prbs7 => &[7, 6],
            Prbs::Prbs15 => &[15, 14],
            Prbs::Prbs23 => &[23, 18],
            Prbs::Prbs31 => &[31, 28],
        }
    }
}

/// An O.150 generator giving `bits_per_cycle` bits per cycle, seeded with all
/// ones.
#[track_caller]
pub fn prbs(design: &mut Design, which: Prbs, bits_per_cycle: u32) -> Rc<ModuleDef> {
    let width = which.taps()[0];
    let seed = (BigUint::one() << width as usize) - 1u32;
    lfsr(design, which.taps(), bits_per_cycle, seed)
}

/// A Fibonacci LFSR with `taps` (see the module docs), `bits_per_cycle` (>= 1)
/// output bits per cycle and a nonzero `seed` below 2^W, named
/// `lfsr_p<polynomial in hex>_n<bits>_s<seed in hex>` (PRBS7 by 8 from all
/// ones: `lfsr_pc1_n8_s7f`).
#[track_caller]
pub fn lfsr(
    design: &mut Design,
    taps: &[u32],
    bits_per_cycle: u32,
    seed: impl Into<BigUint>,
) -> Rc<ModuleDef> {
    let seed: BigUint = seed.into();
    let width = taps.iter().copied().max().unwrap_or(0);
    let mut sorted = taps.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    if width == 0 || sorted.len() != taps.len() || sorted[0] == 0 || width > 1024 {
        elab_error(format!(
            "LFSR taps must be distinct exponents in 1..=1024, got {taps:?}"
        ));
    }
    if bits_per_cycle == 0 || bits_per_cycle > 4096 {
        elab_error(format!(
            "LFSR bits per cycle must be 1..=4096, got {bits_per_cycle}"
        ));
    }
    if seed.is_zero() || seed.bits() > width as u64 {
        elab_error(format!(
            "LFSR seed must be nonzero and below 2^{width}, got {seed:#x}"
        ));
    }
    let poly = taps
        .iter()
        .fold(BigUint::one(), |p, &t| p | (BigUint::one() << t as usize));
    let name = format!("lfsr_p{poly:x}_n{bits_per_cycle}_s{seed:x}");
    let params = [
        ("taps", format!("{taps:?}")),
        ("bits_per_cycle", bits_per_cycle.to_string()),
        ("seed", format!("{seed:#x}")),
    ];
    let taps = taps.to_vec();
    design.define(&name, &params, |_, m| {
        m.doc("Fibonacci LFSR, several bits per cycle");
        let w = width as usize;
        // Run the serial definition on linear forms over the register bits:
        // stage j (register bit j - 1) starts as variable j - 1.
        let mut stages: Vec<BigUint> = (0..w).map(|j| BigUint::one() << j).collect();
        let mut outputs = Vec::new();
        for _ in 0..bits_per_cycle {
            let new = taps
                .iter()
                .fold(BigUint::zero(), |acc, &t| acc ^ &stages[t as usize - 1]);
            outputs.push(new.clone());
            stages.pop();
            stages.insert(0, new);
        }
        let en = m.input("en_i", Ty::BOOL);
        let state = m.reg_reset("state", Ty::u(width), BigInt::from(seed.clone()));
        let q = state.q();
        let out: Vec<_> = outputs.iter().rev().map(|f| xor_of(q, f)).collect();
        m.output("out_o", cat(&out));
        let advanced: Vec<_> = stages.iter().rev().map(|f| xor_of(q, f)).collect();
        let seed_lit = m.lit(Ty::u(width), BigInt::from(seed.clone()));
        m.set_next(state, mux(q.any(), cat(&advanced), seed_lit));
        m.set_enable(state, en);
    })
}

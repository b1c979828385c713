//! A parallel CRC: any polynomial up to 64 bits, any number of data bits per
//! cycle, with the Rocksoft/reveng parameters (init, reflect-in,
//! reflect-out, final XOR), so CRC-32 (IEEE 802.3, zlib), the CRC-16 family
//! and the rest of the catalog are all expressible.
//!
//! | port | type | meaning |
//! | --- | --- | --- |
//! | `en_i` | 1 | consume `data_i` this cycle |
//! | `first_i` | 1 | (with `en_i`) `data_i` starts a new message |
//! | `data_i` | D | message bits, in transmission order (below) |
//! | `crc_o` | W | the CRC of the message so far |
//!
//! Bit order. The register holds the CRC in its unreflected form and takes
//! message bits one at a time, most significant first. Without reflect-in,
//! `data_i` is taken from bit D - 1 down to bit 0 (a multi-byte word holds
//! its first byte in the top bits); with reflect-in, from bit 0 up to bit
//! D - 1 (the first byte in bits 7..0, each byte least significant bit
//! first), which is how reflected CRCs such as CRC-32 consume bytes. Messages
//! are whole words: a message whose length is not a multiple of D needs a
//! narrower instance for its tail.
//!
//! Timing. The register resets to `init`; a cycle with `en_i` folds `data_i`
//! into it, starting from `init` instead of the register when `first_i` is
//! high. `crc_o` is the register, reflected if reflect-out, XORed with the
//! final XOR: the CRC of everything consumed since the last first word
//! (or reset), valid in the cycle after the last word is consumed.
//!
//! The next register value is a GF(2) linear function of the current one and
//! the data. It is found at elaboration time by running the serial
//! definition (shift, XOR the polynomial when the bit leaving the register
//! differs from the data bit) on linear forms, and each register bit becomes
//! one flat XOR of the inputs its form selects, not a chain of D steps.

use super::xor_of;
use crate::builder::{cat, mux, Expr};
use crate::error::elab_error;
use crate::ir::ModuleDef;
use crate::{Design, Ty};
use num_bigint::{BigInt, BigUint};
use num_traits::{One, Zero};
use std::rc::Rc;

/// A CRC algorithm in the Rocksoft/reveng parameter model (as the `crc`
/// crate's catalog names them). `poly`, `init` and `xorout` are `width`-bit
/// values; `poly` omits the x^width term.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrcSpec {
    pub width: u32,
    pub poly: u64,
    pub init: u64,
    pub refin: bool,
    pub refout: bool,
    pub xorout: u64,
}

impl CrcSpec {
    /// CRC-32/ISO-HDLC: IEEE 802.3 Ethernet, zlib, PNG.
    pub const CRC_32_ISO_HDLC: CrcSpec = CrcSpec {
        width: 32,
        poly: 0x04c1_1db7,
        init: 0xffff_ffff,
        refin: true,
        refout: true,
        xorout: 0xffff_ffff,
    };
    /// CRC-32/ISCSI (Castagnoli, CRC-32C).
    pub const CRC_32_ISCSI: CrcSpec = CrcSpec {
        width: 32,
        poly: 0x1edc_6f41,
        init: 0xffff_ffff,
        refin: true,
        refout: true,
        xorout: 0xffff_ffff,
    };
    /// CRC-16/IBM-3740, also known as CRC-16/CCITT-FALSE.
    pub const CRC_16_IBM_3740: CrcSpec = CrcSpec {
        width: 16,
        poly: 0x1021,
        init: 0xffff,
        refin: false,
        refout: false,
        xorout: 0,
    };
    /// CRC-16/ARC (IBM, LHA).
    pub const CRC_16_ARC: CrcSpec = CrcSpec {
        width: 16,
        poly: 0x8005,
        init: 0,
        refin: true,
        refout: true,
        xorout: 0,
    };
    /// CRC-8/SMBUS.
    pub const CRC_8_SMBUS: CrcSpec = CrcSpec {
        width: 8,
        poly: 0x07,
        init: 0,
        refin: false,
        refout: false,
        xorout: 0,
    };
}

/// A CRC of `spec` taking `data_width` (>= 1) bits per cycle, named
/// `crc<W>_p<poly>_i<init>_<r|n><r|n>_x<xorout>_d<D>` (hex values; r for a
/// reflected input/output), e.g. `crc32_p4c11db7_iffffffff_rr_xffffffff_d8`.
#[track_caller]
pub fn crc(design: &mut Design, spec: &CrcSpec, data_width: u32) -> Rc<ModuleDef> {
    let w = spec.width;
    if !(1..=64).contains(&w) {
        elab_error(format!("CRC width must be 1..=64, got {w}"));
    }
    let fits = |v: u64| w == 64 || v >> w == 0;
    if !fits(spec.poly) || !fits(spec.init) || !fits(spec.xorout) {
        elab_error(format!("CRC parameters must be {w}-bit values: {spec:?}"));
    }
    if data_width == 0 || data_width > 4096 {
        elab_error(format!("CRC data width must be 1..=4096, got {data_width}"));
    }
    let flag = |r: bool| if r { "r" } else { "n" };
    let name = format!(
        "crc{w}_p{:x}_i{:x}_{}{}_x{:x}_d{data_width}",
        spec.poly,
        spec.init,
        flag(spec.refin),
        flag(spec.refout),
        spec.xorout
    );
    let params = [
        ("width", w.to_string()),
        ("poly", format!("{:#x}", spec.poly)),
        ("init", format!("{:#x}", spec.init)),
        ("refin", spec.refin.to_string()),
        ("refout", spec.refout.to_string()),
        ("xorout", format!("{:#x}", spec.xorout)),
        ("data_width", data_width.to_string()),
    ];
    let spec = *spec;
    design.define(&name, &params, |_, m| {
        m.doc("parallel CRC, XOR matrix computed at elaboration");
        let next_forms = step_forms(&spec, data_width);
        let ty = Ty::u(w);
        let en = m.input("en_i", Ty::BOOL);
        let first = m.input("first_i", Ty::BOOL);
        let data = m.input("data_i", Ty::u(data_width));
        let state = m.reg_reset("state", ty, spec.init);
        let init = m.lit(ty, spec.init);
        let start = m.wire("start", mux(first, init, state.q()));
        // Variables: register bits 0..W, then data bits W..W+D.
        let inputs = m.wire("inputs", cat(&[data, start]));
        let next: Vec<_> = next_forms.iter().rev().map(|f| xor_of(inputs, f)).collect();
        m.set_next(state, cat(&next));
        m.set_enable(state, en);
        let q = state.q();
        let out = if spec.refout {
            cat(&(0..w).map(|i| q.bit(i)).collect::<Vec<_>>())
        } else {
            q
        };
        let out = if spec.xorout == 0 {
            out
        } else {
            out ^ BigInt::from(spec.xorout)
        };
        m.output("crc_o", out);
    })
}

/// The CRC of `spec` of a message that is exactly the bits of `data` (taken
/// in the order the module docs give), as combinational logic built inline
/// in `data`'s module: no register, no ports. For a frame checked or sealed
/// in the cycle it is on the wire; [`crc`] is the module for messages of
/// several words. Each CRC bit is one flat XOR of data bits (the initial
/// value and the final XOR fold into constants at elaboration).
#[track_caller]
pub fn crc_of(spec: &CrcSpec, data: Expr) -> Expr {
    let w = spec.width;
    if !(1..=64).contains(&w) || data.width() > 4096 {
        elab_error(format!(
            "crc_of needs a CRC width in 1..=64 and at most 4096 data bits, got {w} and {}",
            data.width()
        ));
    }
    let d = data.width();
    let forms = step_forms(spec, d);
    let data = data.as_unsigned();
    let init_mask = (BigUint::one() << w as usize) - 1u32;
    let bits: Vec<Expr> = forms
        .iter()
        .map(|f| {
            // Register variables hold `init`: their part of the XOR is a constant.
            let from_init = (f & &init_mask & BigUint::from(spec.init)).count_ones() % 2 == 1;
            let data_form = f >> w as usize;
            let x = xor_of(data, &data_form);
            if from_init {
                !x
            } else {
                x
            }
        })
        .collect();
    // bits[i] is register bit i; cat takes the most significant first, so
    // the reflected output (register bit i at bit w - 1 - i) is the bits in
    // order, written as one concatenation rather than a reversal of one.
    let out = if spec.refout {
        cat(&bits)
    } else {
        cat(&bits.iter().rev().copied().collect::<Vec<_>>())
    };
    if spec.xorout == 0 {
        out
    } else {
        out ^ BigInt::from(spec.xorout)
    }
}

/// The register after one word, bit by bit, as linear forms over the
/// variables (register bits 0..W, then data bits W..W+D): the serial,
/// unreflected CRC run on forms.
fn step_forms(spec: &CrcSpec, data_width: u32) -> Vec<BigUint> {
    let w = spec.width as usize;
    let var = |k: usize| BigUint::one() << k;
    let mut reg: Vec<BigUint> = (0..w).map(var).collect();
    let order: Vec<u32> = if spec.refin {
        (0..data_width).collect()
    } else {
        (0..data_width).rev().collect()
    };
    for bit in order {
        let feedback = &reg[w - 1] ^ var(w + bit as usize);
        reg.pop();
        reg.insert(0, BigUint::zero());
        for (i, r) in reg.iter_mut().enumerate() {
            if spec.poly >> i & 1 == 1 {
                *r ^= &feedback;
            }
        }
    }
    reg
}

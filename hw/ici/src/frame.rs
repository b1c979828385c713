//! The frame: what one serdes word carries, and the flit the clients see.

use config::{IciConfig, ICI_KIND_BITS};
use hw::blocks::{crc_of, CrcSpec};
use hw::{cat, Expr, HwEnum, Record, RecordTy, Ty};

hw::hw_enum! {
    /// What a frame is. Every kind carries the acknowledgement and credit
    /// fields; only `Data` carries a flit.
    pub enum FrameKind {
        /// Nothing to send: acknowledgement and credits only.
        Idle,
        /// A flit, with its sequence number.
        Data,
        /// The receiver lost a flit: replay from the acknowledged one.
        Nak,
        /// Sent while retraining after a link-down.
        Train,
    }
}

/// The CRC of every frame by default: CRC-32/ISO-HDLC (IEEE 802.3).
pub const FRAME_CRC: CrcSpec = CrcSpec::CRC_32_ISO_HDLC;

/// The frame CRC of `cfg`: [`FRAME_CRC`] for 32 bits, CRC-16/IBM-3740 for
/// 16 and CRC-8/SMBUS (polynomial 0x07) for 8, the short frames of the
/// formal configuration.
pub fn frame_crc_spec(cfg: &IciConfig) -> CrcSpec {
    match cfg.crc_bits() {
        32 => FRAME_CRC,
        16 => CrcSpec::CRC_16_IBM_3740,
        8 => CrcSpec::CRC_8_SMBUS,
        other => unreachable!("IciConfig allows no {other}-bit CRC"),
    }
}

/// A flit as the clients see it: `data` (8W bits, byte k in bits 8k..8k+7),
/// `last` (ends a packet) and `len` (valid bytes - 1, counted from byte 0).
pub fn flit_ty(cfg: &IciConfig) -> RecordTy {
    RecordTy::new(
        "flit",
        &[
            ("data", Ty::u(cfg.payload_bits())),
            ("last", Ty::BOOL),
            ("len", Ty::u(cfg.len_bits())),
        ],
    )
}

/// The frame's fields, first field in the lowest bits: kind, seq, ack,
/// credit, last, len, data, then the CRC over everything below it.
pub fn frame_ty(cfg: &IciConfig) -> RecordTy {
    assert_eq!(FrameKind::ty().width, ICI_KIND_BITS);
    RecordTy::new(
        "frame",
        &[
            ("kind", FrameKind::ty()),
            ("seq", Ty::u(cfg.seq_bits())),
            ("ack", Ty::u(cfg.seq_bits())),
            ("credit", Ty::u(cfg.credit_bits())),
            ("last", Ty::BOOL),
            ("len", Ty::u(cfg.len_bits())),
            ("data", Ty::u(cfg.payload_bits())),
            ("crc", Ty::u(cfg.crc_bits())),
        ],
    )
}

/// The bits the CRC covers: the packed frame below the CRC field.
pub fn covered(frame_bits: Expr, cfg: &IciConfig) -> Expr {
    frame_bits.slice(0, cfg.frame_bits() - cfg.crc_bits())
}

/// The CRC of a frame's covered bits.
pub fn frame_crc(covered_bits: Expr, cfg: &IciConfig) -> Expr {
    crc_of(&frame_crc_spec(cfg), covered_bits)
}

/// A frame's word with its CRC computed from the other fields of `f` (its
/// own `crc` field is not read).
pub fn seal(f: &Record, cfg: &IciConfig) -> Expr {
    let fields: Vec<Expr> = f
        .fields()
        .filter(|(name, _)| *name != "crc")
        .map(|(_, v)| v)
        .collect();
    let body = cat(&fields.iter().rev().copied().collect::<Vec<_>>());
    debug_assert_eq!(body.width(), cfg.frame_bits() - cfg.crc_bits());
    cat(&[frame_crc(body, cfg), body])
}

/// Bits of the covered frame each of the CRC's partial sums takes.
pub const CRC_PART_BITS: u32 = 32;

/// The CRC's partial sums of a frame's covered bits: the CRC is affine in
/// its message, so it is a constant XOR one linear sum per
/// [`CRC_PART_BITS`]-bit part of the message. Each sum is a shallow XOR
/// tree; a receive pipeline registers them and [`crc_of_partials`] finishes
/// the CRC in the next cycle.
pub fn crc_partials(covered_bits: Expr, cfg: &IciConfig) -> Vec<Expr> {
    let n = covered_bits.width();
    (0..n)
        .step_by(CRC_PART_BITS as usize)
        .map(|lo| {
            let width = CRC_PART_BITS.min(n - lo);
            crc_linear_part(covered_bits.slice(lo, width), lo, cfg)
        })
        .collect()
}

/// The CRC's linear part of `bits` standing at bit `lo` of a frame's
/// covered bits: the CRC of that message with every other bit 0, XOR the
/// CRC of the all-zero message ([`crc_of_zero`]). Linear parts of disjoint
/// fields XOR to the linear part of the whole.
pub fn crc_linear_part(bits: Expr, lo: u32, cfg: &IciConfig) -> Expr {
    let spec = frame_crc_spec(cfg);
    let n = cfg.frame_bits() - cfg.crc_bits();
    let width = bits.width();
    assert!(
        lo + width <= n,
        "bits {lo}..{} past the covered {n}",
        lo + width
    );
    let zero = crc_of_zero(cfg);
    // column(i): the CRC's linear part of message bit i alone.
    let column = |i: u32| {
        let mut msg = vec![false; n as usize];
        msg[i as usize] = true;
        serial_crc(&spec, &msg) ^ zero
    };
    let columns: Vec<u64> = (lo..lo + width).map(column).collect();
    let out: Vec<Expr> = (0..spec.width)
        .rev()
        .map(|j| {
            let form = (0..width)
                .filter(|&i| columns[i as usize] >> j & 1 == 1)
                .fold(0u64, |f, i| f | 1 << i);
            match form.count_ones() {
                0 => bits.lit_of(Ty::BOOL, 0),
                1 => bits.bit(form.trailing_zeros()),
                _ => (bits & bits.lit(form)).parity(),
            }
        })
        .collect();
    cat(&out)
}

/// The CRC of a frame's all-zero covered bits: with the linear parts of
/// its fields, the CRC of any frame.
pub fn crc_of_zero(cfg: &IciConfig) -> u64 {
    let n = cfg.frame_bits() - cfg.crc_bits();
    serial_crc(&frame_crc_spec(cfg), &vec![false; n as usize])
}

/// The CRC of a frame whose covered bits gave `partials`
/// ([`crc_partials`]): their XOR and the CRC of the all-zero message.
pub fn crc_of_partials(partials: &[Expr], cfg: &IciConfig) -> Expr {
    let sum = partials[1..].iter().fold(partials[0], |acc, &p| acc ^ p);
    sum ^ sum.lit(crc_of_zero(cfg))
}

/// The CRC of a message, bit by bit as [`hw::blocks::crc_of`] takes its
/// data (bit 0 first for a reflected input, the top bit first otherwise):
/// the serial definition, at elaboration.
fn serial_crc(spec: &CrcSpec, msg: &[bool]) -> u64 {
    let w = spec.width;
    let mask = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
    let mut reg = spec.init;
    let mut step = |bit: bool| {
        let feedback = (reg >> (w - 1) & 1 == 1) != bit;
        reg = (reg << 1) & mask;
        if feedback {
            reg ^= spec.poly;
        }
    };
    if spec.refin {
        msg.iter().for_each(|&b| step(b));
    } else {
        msg.iter().rev().for_each(|&b| step(b));
    }
    let out = if spec.refout {
        (0..w).fold(0, |acc, i| acc | (reg >> i & 1) << (w - 1 - i))
    } else {
        reg
    };
    out ^ spec.xorout
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_serial_crc_matches_the_catalog_check_values() {
        // The catalog's check: the CRC of the ASCII bytes "123456789".
        // A reflected CRC takes bit 0 first, each byte least significant
        // bit first; the others take the top bit first, the first byte in
        // the top bits, so their message is the serial order reversed.
        let reflected: Vec<bool> = b"123456789"
            .iter()
            .flat_map(|byte| (0..8).map(move |i| byte >> i & 1 == 1))
            .collect();
        let plain: Vec<bool> = b"123456789"
            .iter()
            .flat_map(|byte| (0..8).rev().map(move |i| byte >> i & 1 == 1))
            .rev()
            .collect();
        assert_eq!(serial_crc(&FRAME_CRC, &reflected), 0xcbf4_3926);
        assert_eq!(serial_crc(&CrcSpec::CRC_16_IBM_3740, &plain), 0x29b1);
        assert_eq!(serial_crc(&CrcSpec::CRC_8_SMBUS, &plain), 0xf4);
    }
}

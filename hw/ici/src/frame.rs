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

//! The ICI link layer's configuration ([`IciConfig`]), shared by the link
//! generator (`hw/ici`), the serdes stub (`hw/ici-serdes-stub`), the golden
//! model (`golden::ici`) and the simulator driver.
//!
//! The parameters and the frame format that follows from them:
//! - `flit_bytes` W: payload bytes per flit (a power of two, 1..=64).
//! - `replay_depth` D: flits the replay buffer holds (a power of two,
//!   2..=256); sequence numbers have log2(D) + 1 bits, so a window of D
//!   unacknowledged flits never looks like a stale acknowledgement.
//! - `rx_buffer` B: flits the receiver's buffer holds (the credits), 2..=256.
//! - `latency`: cycles a word spends in the serdes stub, 1..=64.
//! - `replay_timeout`: cycles without acknowledgement progress before the
//!   sender replays, 8..=65535; it must exceed the round trip (checked).
//! - `max_retries`: replays without progress the link tolerates before it
//!   declares the link down and retrains, 1..=255.
//! - `train_words`: consecutive good words a retraining side must receive
//!   before it sends data again, 1..=255.
//! - `crc_bits`: the frame's CRC, 32 (CRC-32/ISO-HDLC, the default), 16
//!   (CRC-16/IBM-3740) or 8 (CRC-8/SMBUS). The short ones exist for the
//!   formal configuration ([`IciConfig::FORMAL`]), whose frames are a few
//!   dozen bits: there a short CRC still has the Hamming distance the error
//!   model needs (see `hw/ici`'s crate docs), and the solver's work grows
//!   with every XOR the CRC adds.
//! - `depth`: pipeline registers in each receiver's check of an arriving
//!   word, 0..=[`ICI_MAX_DEPTH`] (0 checks the word in the cycle it
//!   arrives). Each one delays the receiver's view of the lanes by a cycle,
//!   so the link behaves as one whose stub latency is `latency + depth`
//!   ([`IciConfig::word_latency`]): the round trip grows by 2 x depth, and
//!   an acknowledgement, a credit or a NAK takes effect `depth` cycles
//!   later.

use crate::{one_line, ConfigError};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Configuration of one ICI link (both ends and both stub directions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct IciConfig {
    flit_bytes: u32,
    replay_depth: u32,
    rx_buffer: u32,
    latency: u32,
    replay_timeout: u32,
    max_retries: u32,
    train_words: u32,
    crc_bits: u32,
    depth: u32,
}

/// The deepest receive pipeline (see [`IciConfig::with_depth`]).
pub const ICI_MAX_DEPTH: u32 = 3;

/// Bits of the CRC that closes every frame unless configured otherwise
/// (CRC-32/ISO-HDLC, IEEE 802.3).
pub const ICI_CRC_BITS: u32 = 32;

/// Bits of the frame kind field.
pub const ICI_KIND_BITS: u32 = 2;

impl IciConfig {
    /// The default: 64-byte flits (a 571-bit frame, 10.3 % overhead), a
    /// 32-flit replay window and receive buffer, 4 cycles in the stub.
    pub const DEFAULT: IciConfig = IciConfig {
        flit_bytes: 64,
        replay_depth: 32,
        rx_buffer: 32,
        latency: 4,
        replay_timeout: 64,
        max_retries: 16,
        train_words: 8,
        crc_bits: ICI_CRC_BITS,
        depth: 0,
    };

    /// The small configuration the formal checks run on
    /// (`tb/tests/ici_formal.rs` says what is checked, to which depth):
    /// 1-byte flits, a 2-flit window (2-bit
    /// sequence numbers), a 2-flit receive buffer (2-bit credit counts), one
    /// cycle in the stub, the shortest replay timer the round trip allows
    /// (9 cycles), one replay before a link-down, one Train frame to come
    /// back, and CRC-8: a 26-bit frame. Every mechanism of the protocol is
    /// there, each at its smallest size, so every path (replay, NAK,
    /// timeout, link-down, retraining, wrap-around of every modular counter)
    /// is reached within a few dozen cycles.
    pub const FORMAL: IciConfig = IciConfig {
        flit_bytes: 1,
        replay_depth: 2,
        rx_buffer: 2,
        latency: 1,
        replay_timeout: 9,
        max_retries: 1,
        train_words: 1,
        crc_bits: 8,
        depth: 0,
    };

    /// A validated configuration.
    pub fn new(
        flit_bytes: u32,
        replay_depth: u32,
        rx_buffer: u32,
        latency: u32,
        replay_timeout: u32,
        max_retries: u32,
        train_words: u32,
    ) -> Result<IciConfig, ConfigError> {
        let pow2 = |name: &str, v: u32, lo: u32, hi: u32| {
            if v < lo || v > hi || !v.is_power_of_two() {
                Err(ConfigError(format!(
                    "ICI {name} must be a power of two between {lo} and {hi}, got {v}"
                )))
            } else {
                Ok(())
            }
        };
        let range = |name: &str, v: u32, lo: u32, hi: u32| {
            if v < lo || v > hi {
                Err(ConfigError(format!(
                    "ICI {name} must be between {lo} and {hi}, got {v}"
                )))
            } else {
                Ok(())
            }
        };
        pow2("flit_bytes", flit_bytes, 1, 64)?;
        pow2("replay_depth", replay_depth, 2, 256)?;
        range("rx_buffer", rx_buffer, 2, 256)?;
        range("latency", latency, 1, 64)?;
        range("replay_timeout", replay_timeout, 8, 65535)?;
        range("max_retries", max_retries, 1, 255)?;
        range("train_words", train_words, 1, 255)?;
        let cfg = IciConfig {
            flit_bytes,
            replay_depth,
            rx_buffer,
            latency,
            replay_timeout,
            max_retries,
            train_words,
            crc_bits: ICI_CRC_BITS,
            depth: 0,
        };
        cfg.check_timeout()?;
        Ok(cfg)
    }

    /// The replay timer must outlast the round trip, or every flit would be
    /// replayed before its acknowledgement could arrive.
    fn check_timeout(&self) -> Result<(), ConfigError> {
        let replay_timeout = self.replay_timeout;
        let cfg = self;
        if replay_timeout <= cfg.round_trip() {
            return Err(ConfigError(format!(
                "ICI replay_timeout must exceed the round trip of {} cycles (2 x (latency + depth) + {}), got {replay_timeout}",
                cfg.round_trip(),
                ROUND_TRIP_FIXED
            )));
        }
        Ok(())
    }

    /// This configuration with `depth` (0..=[`ICI_MAX_DEPTH`]) pipeline
    /// registers in each receiver's word check: 1 registers the word with
    /// the CRC's partial sums (the CRC over each 32-bit part of the frame),
    /// 2 also the check's verdict, so the protocol's logic starts from a
    /// register; 3 registers the checked word once more, with its `ack`,
    /// `credit` and `seq` taken relative to the state the protocol will
    /// hold when it acts on them, so the sender's step compares registers.
    /// The replay timeout must still exceed the longer round trip.
    pub fn with_depth(self, depth: u32) -> Result<IciConfig, ConfigError> {
        if depth > ICI_MAX_DEPTH {
            return Err(ConfigError(format!(
                "ICI depth must be between 0 and {ICI_MAX_DEPTH}, got {depth}"
            )));
        }
        let cfg = IciConfig { depth, ..self };
        cfg.check_timeout()?;
        Ok(cfg)
    }

    /// This configuration with a `bits`-bit frame CRC (8, 16 or 32).
    pub fn with_crc_bits(self, bits: u32) -> Result<IciConfig, ConfigError> {
        if !matches!(bits, 8 | 16 | 32) {
            return Err(ConfigError(format!(
                "ICI crc_bits must be 8, 16 or 32, got {bits}"
            )));
        }
        Ok(IciConfig {
            crc_bits: bits,
            ..self
        })
    }

    /// Payload bytes per flit, W.
    pub fn flit_bytes(&self) -> u32 {
        self.flit_bytes
    }
    /// Flits the replay buffer holds, D.
    pub fn replay_depth(&self) -> u32 {
        self.replay_depth
    }
    /// Flits the receiver's buffer holds, B (the sender's credits).
    pub fn rx_buffer(&self) -> u32 {
        self.rx_buffer
    }
    /// Cycles a word spends in the serdes stub.
    pub fn latency(&self) -> u32 {
        self.latency
    }
    /// Cycles without acknowledgement progress before a replay.
    pub fn replay_timeout(&self) -> u32 {
        self.replay_timeout
    }
    /// Replays without progress before the link is declared down.
    pub fn max_retries(&self) -> u32 {
        self.max_retries
    }
    /// Consecutive good words that end retraining.
    pub fn train_words(&self) -> u32 {
        self.train_words
    }

    /// Bits of the frame's CRC.
    pub fn crc_bits(&self) -> u32 {
        self.crc_bits
    }
    /// Pipeline registers in each receiver's word check.
    pub fn depth(&self) -> u32 {
        self.depth
    }
    /// Cycles from a word offered to the stub to the receiver acting on it:
    /// the stub's latency and the receive pipeline's depth.
    pub fn word_latency(&self) -> u32 {
        self.latency + self.depth
    }

    /// Bits of a sequence number: log2(D) + 1.
    pub fn seq_bits(&self) -> u32 {
        self.replay_depth.trailing_zeros() + 1
    }
    /// Bits of the cumulative credit (freed-slot) count: enough for 2B - 1,
    /// so a count that moved by at most B is read without ambiguity.
    pub fn credit_bits(&self) -> u32 {
        bits_for(2 * self.rx_buffer as u64 - 1)
    }
    /// Bits of the length field (valid bytes - 1): log2(W), at least 1.
    pub fn len_bits(&self) -> u32 {
        self.flit_bytes.trailing_zeros().max(1)
    }
    /// Payload bits per flit, 8W.
    pub fn payload_bits(&self) -> u32 {
        8 * self.flit_bytes
    }
    /// Header bits: kind, seq, ack, credit, last, len.
    pub fn header_bits(&self) -> u32 {
        ICI_KIND_BITS + 2 * self.seq_bits() + self.credit_bits() + 1 + self.len_bits()
    }
    /// The share of a frame that is not payload: header and CRC bits per
    /// frame bit (0.103 for the default). ACKs and credits ride in every
    /// frame's header, so they add no frames of their own.
    pub fn overhead(&self) -> f64 {
        f64::from(self.header_bits() + self.crc_bits) / f64::from(self.frame_bits())
    }
    /// Bits of one frame, the serdes word: header, payload, CRC.
    pub fn frame_bits(&self) -> u32 {
        self.header_bits() + self.payload_bits() + self.crc_bits
    }
    /// Cycles from a flit's acceptance to its credit being back at the
    /// sender on an error-free link whose receiver pops at once:
    /// 2 x [`IciConfig::word_latency`] + [`ROUND_TRIP_FIXED`]. A window D
    /// and a buffer B of at least this many flits sustain one flit per cycle.
    pub fn round_trip(&self) -> u32 {
        2 * self.word_latency() + ROUND_TRIP_FIXED
    }

    /// Parameters as (name, value) pairs, for file headers and logs; the
    /// depth only when it is not 0, so depth 0's files are the ones from
    /// before the parameter existed.
    pub fn params(&self) -> Vec<(String, String)> {
        let depth = (self.depth != 0).then_some(("depth", self.depth));
        [
            ("flit_bytes", self.flit_bytes),
            ("replay_depth", self.replay_depth),
            ("rx_buffer", self.rx_buffer),
            ("latency", self.latency),
            ("replay_timeout", self.replay_timeout),
            ("max_retries", self.max_retries),
            ("train_words", self.train_words),
            ("crc_bits", self.crc_bits),
        ]
        .into_iter()
        .chain(depth)
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    /// Parses the TOML form; missing keys take [`IciConfig::DEFAULT`]'s values.
    pub fn from_toml(text: &str) -> Result<IciConfig, ConfigError> {
        let raw: RawIciConfig =
            toml::from_str(text).map_err(|e| ConfigError(one_line(&e.to_string())))?;
        raw.validate()
    }
}

/// The fixed part of the round trip of a credit, the longest loop of the
/// protocol (see `hw/ici`'s timing contract): accepted in cycle a, the flit
/// is on the lanes at a + 2, pushed into the receive buffer at a + 2 + L,
/// popped at a + 4 + L at the earliest, its slot is in the freed count sent
/// at a + 5 + L, which arrives at a + 5 + 2L and is a credit again at
/// a + 6 + 2L.
pub const ROUND_TRIP_FIXED: u32 = 6;

fn bits_for(max: u64) -> u32 {
    (u64::BITS - max.leading_zeros()).max(1)
}

impl Default for IciConfig {
    fn default() -> Self {
        IciConfig::DEFAULT
    }
}

impl fmt::Display for IciConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}-byte flits, replay {} / rx buffer {} flits, latency {}, timeout {}, {} retries, CRC-{}",
            self.flit_bytes,
            self.replay_depth,
            self.rx_buffer,
            self.latency,
            self.replay_timeout,
            self.max_retries,
            self.crc_bits
        )?;
        if self.depth != 0 {
            write!(f, ", depth {}", self.depth)?;
        }
        Ok(())
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIciConfig {
    flit_bytes: Option<u32>,
    replay_depth: Option<u32>,
    rx_buffer: Option<u32>,
    latency: Option<u32>,
    replay_timeout: Option<u32>,
    max_retries: Option<u32>,
    train_words: Option<u32>,
    crc_bits: Option<u32>,
    depth: Option<u32>,
}

impl RawIciConfig {
    fn validate(self) -> Result<IciConfig, ConfigError> {
        let d = IciConfig::DEFAULT;
        IciConfig::new(
            self.flit_bytes.unwrap_or(d.flit_bytes),
            self.replay_depth.unwrap_or(d.replay_depth),
            self.rx_buffer.unwrap_or(d.rx_buffer),
            self.latency.unwrap_or(d.latency),
            self.replay_timeout.unwrap_or(d.replay_timeout),
            self.max_retries.unwrap_or(d.max_retries),
            self.train_words.unwrap_or(d.train_words),
        )?
        .with_crc_bits(self.crc_bits.unwrap_or(d.crc_bits))?
        .with_depth(self.depth.unwrap_or(d.depth))
    }
}

impl<'de> Deserialize<'de> for IciConfig {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        RawIciConfig::deserialize(de)?
            .validate()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_are_valid_and_the_default_frame_is_571_bits() {
        let d = IciConfig::DEFAULT;
        assert_eq!(
            IciConfig::new(64, 32, 32, 4, 64, 16, 8).unwrap(),
            d,
            "DEFAULT passes validation"
        );
        assert_eq!((d.seq_bits(), d.credit_bits(), d.len_bits()), (6, 6, 6));
        assert_eq!(d.frame_bits(), 571);
        // Issue 12's budget for headers, CRC and ACKs: under 15 %.
        assert!(d.overhead() < 0.15, "{}", d.overhead());
        let f = IciConfig::FORMAL;
        assert_eq!(
            IciConfig::from_toml(&toml::to_string(&f).unwrap()).unwrap(),
            f
        );
        assert_eq!(
            IciConfig::new(1, 2, 2, 1, 9, 1, 1)
                .unwrap()
                .with_crc_bits(8)
                .unwrap(),
            f,
            "FORMAL passes validation"
        );
        assert_eq!((f.seq_bits(), f.credit_bits(), f.len_bits()), (2, 2, 1));
        assert_eq!(f.frame_bits(), 2 + 2 * 2 + 2 + 1 + 1 + 8 + 8);
    }

    #[test]
    fn depth_lengthens_the_round_trip_and_is_listed_only_when_set() {
        let small = IciConfig::new(4, 8, 8, 2, 32, 8, 4).unwrap();
        assert_eq!(small.round_trip(), 10);
        let deep = small.with_depth(2).unwrap();
        assert_eq!((deep.word_latency(), deep.round_trip()), (4, 14));
        assert!(!small.params().iter().any(|(k, _)| k == "depth"));
        assert!(deep
            .params()
            .contains(&("depth".to_string(), "2".to_string())));
        assert_eq!(
            IciConfig::from_toml(&toml::to_string(&deep).unwrap()).unwrap(),
            deep
        );
        // The formal configuration's timer leaves no room for a deeper pipeline.
        assert!(IciConfig::FORMAL.with_depth(1).is_err());
        let deepest = IciConfig::new(4, 16, 16, 2, 32, 8, 4)
            .unwrap()
            .with_depth(ICI_MAX_DEPTH)
            .unwrap();
        assert_eq!((deepest.word_latency(), deepest.round_trip()), (5, 16));
    }

    #[test]
    fn bad_values_are_refused_in_one_line() {
        for bad in [
            "flit_bytes = 3",
            "flit_bytes = 128",
            "replay_depth = 1",
            "rx_buffer = 1",
            "latency = 0",
            "replay_timeout = 10",
            "max_retries = 0",
            "crc_bits = 12",
            "depth = 4",
            "depth = 2\nreplay_timeout = 16",
            "flit = 2",
        ] {
            let e = IciConfig::from_toml(bad).unwrap_err().to_string();
            assert!(!e.is_empty() && !e.contains('\n'), "{bad}: {e}");
        }
    }
}

/// A flit as the clients exchange it: `len` + 1 valid bytes at the start of
/// `data` (W bytes, the rest zero), and whether it ends a packet.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Flit {
    pub data: Vec<u8>,
    pub last: bool,
    pub len: u8,
}

/// Flits per packet when a byte stream is cut by [`flits_of`].
pub const PACKET_FLITS: usize = 4;

/// How a host cuts a byte stream into flits: W bytes per flit (the last
/// flit holds the remainder), packets of [`PACKET_FLITS`] flits, the last
/// packet shorter. A host-side choice shared by the run CLI, the tests and
/// the benchmarks; [`bytes_of`] is its inverse.
pub fn flits_of(bytes: &[u8], cfg: &IciConfig) -> Vec<Flit> {
    let w = cfg.flit_bytes() as usize;
    let chunks: Vec<&[u8]> = bytes.chunks(w).collect();
    let n = chunks.len();
    chunks
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut data = c.to_vec();
            data.resize(w, 0);
            Flit {
                data,
                last: i % PACKET_FLITS == PACKET_FLITS - 1 || i == n - 1,
                len: (c.len() - 1) as u8,
            }
        })
        .collect()
}

/// The bytes a run of flits carries: each flit's `len` + 1 first bytes.
pub fn bytes_of(flits: &[Flit]) -> Vec<u8> {
    flits
        .iter()
        .flat_map(|f| f.data[..f.len as usize + 1].iter().copied())
        .collect()
}

#[cfg(test)]
mod flit_tests {
    use super::*;

    #[test]
    fn cutting_and_joining_are_inverse_and_packets_end_with_last() {
        let cfg = IciConfig::new(4, 8, 8, 2, 32, 8, 4).unwrap();
        for n in [1usize, 3, 4, 5, 16, 17, 33] {
            let bytes: Vec<u8> = (0..n as u8).collect();
            let f = flits_of(&bytes, &cfg);
            assert_eq!(f.len(), n.div_ceil(4));
            assert!(f.last().unwrap().last);
            assert_eq!(bytes_of(&f), bytes);
        }
        let f = flits_of(&[7; 40], &cfg);
        let lasts: Vec<bool> = f.iter().map(|x| x.last).collect();
        assert_eq!(
            lasts,
            [false, false, false, true, false, false, false, true, false, true]
        );
    }
}

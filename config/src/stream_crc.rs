//! The stream CRC's configuration: which CRC, and how many data bits one
//! stream beat carries.

use crate::{one_line, ConfigError};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Data bits per beat: 1 to this.
pub const MAX_BEAT_BITS: u32 = 512;

/// A CRC algorithm in the Rocksoft/reveng parameter model: `poly`, `init`
/// and `xorout` are `width`-bit values, `poly` without its x^width term.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrcParams {
    pub width: u32,
    pub poly: u64,
    pub init: u64,
    /// Whether each message bit string is taken least significant bit
    /// first (see [`StreamCrcConfig`] for the beat's bit order).
    pub refin: bool,
    /// Whether the register is reflected before the final XOR.
    pub refout: bool,
    pub xorout: u64,
    /// The CRC of the nine ASCII bytes "123456789", as the catalog lists it.
    pub check: u64,
}

/// The CRCs the block offers, by the names of the reveng catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CrcAlgorithm {
    /// CRC-8/SMBUS: poly 0x07, init 0, not reflected.
    Crc8,
    /// CRC-16/IBM-3740 (also known as CRC-16/CCITT-FALSE): poly 0x1021,
    /// init 0xFFFF, not reflected.
    Crc16,
    /// CRC-32/ISO-HDLC: Ethernet, zlib, PNG.
    Crc32,
    /// CRC-32/ISCSI (Castagnoli): iSCSI, SCTP, ext4.
    Crc32c,
}

impl CrcAlgorithm {
    /// Every choice, in a fixed order.
    pub const ALL: [CrcAlgorithm; 4] = [
        CrcAlgorithm::Crc8,
        CrcAlgorithm::Crc16,
        CrcAlgorithm::Crc32,
        CrcAlgorithm::Crc32c,
    ];

    /// The name on command lines and in TOML.
    pub fn name(self) -> &'static str {
        match self {
            CrcAlgorithm::Crc8 => "crc8",
            CrcAlgorithm::Crc16 => "crc16",
            CrcAlgorithm::Crc32 => "crc32",
            CrcAlgorithm::Crc32c => "crc32c",
        }
    }

    /// The catalog's name.
    pub fn catalog_name(self) -> &'static str {
        match self {
            CrcAlgorithm::Crc8 => "CRC-8/SMBUS",
            CrcAlgorithm::Crc16 => "CRC-16/IBM-3740",
            CrcAlgorithm::Crc32 => "CRC-32/ISO-HDLC",
            CrcAlgorithm::Crc32c => "CRC-32/ISCSI",
        }
    }

    /// The catalog's parameters.
    pub fn params(self) -> CrcParams {
        match self {
            CrcAlgorithm::Crc8 => CrcParams {
                width: 8,
                poly: 0x07,
                init: 0,
                refin: false,
                refout: false,
                xorout: 0,
                check: 0xf4,
            },
            CrcAlgorithm::Crc16 => CrcParams {
                width: 16,
                poly: 0x1021,
                init: 0xffff,
                refin: false,
                refout: false,
                xorout: 0,
                check: 0x29b1,
            },
            CrcAlgorithm::Crc32 => CrcParams {
                width: 32,
                poly: 0x04c1_1db7,
                init: 0xffff_ffff,
                refin: true,
                refout: true,
                xorout: 0xffff_ffff,
                check: 0xcbf4_3926,
            },
            CrcAlgorithm::Crc32c => CrcParams {
                width: 32,
                poly: 0x1edc_6f41,
                init: 0xffff_ffff,
                refin: true,
                refout: true,
                xorout: 0xffff_ffff,
                check: 0xe306_9283,
            },
        }
    }
}

impl fmt::Display for CrcAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for CrcAlgorithm {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        CrcAlgorithm::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = CrcAlgorithm::ALL.iter().map(|a| a.name()).collect();
                ConfigError(format!(
                    "unknown CRC '{s}' (expected one of: {})",
                    names.join(", ")
                ))
            })
    }
}

/// A stream CRC: a valid/ready stream of `beat_bits`-bit beats, packets
/// ended by a last flag, in; one `algorithm` CRC per packet out.
///
/// Bit order: the CRC takes each beat as the catalog takes a message. For a
/// reflected algorithm (crc32, crc32c) bit 0 comes first, so a beat holds
/// its first byte in bits 7..0 (little-endian); otherwise the top bit comes
/// first, so a beat holds its first byte in its top eight bits (big-endian).
/// Either way a byte string has the same CRC whatever the beat width, as
/// long as its bytes fill whole beats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StreamCrcConfig {
    algorithm: CrcAlgorithm,
    beat_bits: u32,
}

impl StreamCrcConfig {
    /// CRC-32 over bytes.
    pub const DEFAULT: StreamCrcConfig = StreamCrcConfig {
        algorithm: CrcAlgorithm::Crc32,
        beat_bits: 8,
    };

    /// A validated configuration: `1 <= beat_bits <= MAX_BEAT_BITS`.
    pub fn new(algorithm: CrcAlgorithm, beat_bits: u32) -> Result<Self, ConfigError> {
        if !(1..=MAX_BEAT_BITS).contains(&beat_bits) {
            return Err(ConfigError(format!(
                "beat_bits must be in 1..={MAX_BEAT_BITS}, not {beat_bits}"
            )));
        }
        Ok(StreamCrcConfig {
            algorithm,
            beat_bits,
        })
    }

    pub fn algorithm(&self) -> CrcAlgorithm {
        self.algorithm
    }

    pub fn beat_bits(&self) -> u32 {
        self.beat_bits
    }

    /// Bits of one CRC.
    pub fn crc_bits(&self) -> u32 {
        self.algorithm.params().width
    }

    /// 32-bit words a beat takes on a simulator port.
    pub fn beat_words(&self) -> usize {
        self.beat_bits.div_ceil(32) as usize
    }

    /// Reads a TOML configuration (keys left out take the defaults).
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        let raw: RawStreamCrcConfig =
            toml::from_str(text).map_err(|e| ConfigError(one_line(&e.to_string())))?;
        raw.validate()
    }
}

impl Default for StreamCrcConfig {
    fn default() -> Self {
        StreamCrcConfig::DEFAULT
    }
}

impl fmt::Display for StreamCrcConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} over {}-bit beats",
            self.algorithm.catalog_name(),
            self.beat_bits
        )
    }
}

/// The unvalidated serde form; `Deserialize` for [`StreamCrcConfig`] goes
/// through it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStreamCrcConfig {
    algorithm: Option<CrcAlgorithm>,
    beat_bits: Option<u32>,
}

impl RawStreamCrcConfig {
    fn validate(self) -> Result<StreamCrcConfig, ConfigError> {
        let d = StreamCrcConfig::DEFAULT;
        StreamCrcConfig::new(
            self.algorithm.unwrap_or(d.algorithm),
            self.beat_bits.unwrap_or(d.beat_bits),
        )
    }
}

impl<'de> Deserialize<'de> for StreamCrcConfig {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        RawStreamCrcConfig::deserialize(de)?
            .validate()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beat_widths_are_checked_and_toml_round_trips() {
        assert!(StreamCrcConfig::new(CrcAlgorithm::Crc8, 1).is_ok());
        assert!(StreamCrcConfig::new(CrcAlgorithm::Crc8, MAX_BEAT_BITS).is_ok());
        assert!(StreamCrcConfig::new(CrcAlgorithm::Crc8, 0).is_err());
        assert!(StreamCrcConfig::new(CrcAlgorithm::Crc8, MAX_BEAT_BITS + 1).is_err());
        let c = StreamCrcConfig::new(CrcAlgorithm::Crc32c, 64).unwrap();
        let text = toml::to_string(&c).unwrap();
        assert_eq!(StreamCrcConfig::from_toml(&text).unwrap(), c);
        assert_eq!(
            StreamCrcConfig::from_toml("beat_bits = 16").unwrap(),
            StreamCrcConfig::new(CrcAlgorithm::Crc32, 16).unwrap()
        );
        for bad in ["beat_bits = 0", "algorithm = \"crc64\"", "width = 8", "[["] {
            let e = StreamCrcConfig::from_toml(bad).unwrap_err().to_string();
            assert!(!e.is_empty() && !e.contains('\n'), "{bad}: {e}");
        }
        assert_eq!(c.beat_words(), 2);
        assert_eq!(c.to_string(), "CRC-32/ISCSI over 64-bit beats");
        assert_eq!(
            "crc16".parse::<CrcAlgorithm>().unwrap(),
            CrcAlgorithm::Crc16
        );
        assert!("crc".parse::<CrcAlgorithm>().is_err());
    }
}

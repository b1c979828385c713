//! The stream CRC as a [`hw::Block`], with [`config::StreamCrcConfig`] as
//! its configuration.

use crate::{build, top_name};
use config::stream_crc::MAX_BEAT_BITS;
use config::{CrcAlgorithm, StreamCrcConfig};
use hw::{Block, Companions, Design, FpgaFacts, Has, ModuleDef, Param, ParamKind, Preset};
use std::rc::Rc;

/// The stream CRC.
#[derive(Debug, Clone, Copy, Default)]
pub struct StreamCrc;

/// The presets: (algorithm, beat bits, in the FPGA report). Bytes are the
/// common case; 1 bit and 512 bits are the generator's edges; 64 bits is a
/// typical bus; 24 bits fills beats with three bytes, not a power of two.
const PRESETS: [(CrcAlgorithm, u32, bool); 7] = [
    (CrcAlgorithm::Crc32, 8, true),
    (CrcAlgorithm::Crc32, 64, true),
    (CrcAlgorithm::Crc32c, 24, false),
    (CrcAlgorithm::Crc16, 16, false),
    (CrcAlgorithm::Crc8, 8, false),
    (CrcAlgorithm::Crc8, 1, false),
    (CrcAlgorithm::Crc32, 512, false),
];

impl Block for StreamCrc {
    type Config = StreamCrcConfig;

    fn name(&self) -> &'static str {
        "stream-crc"
    }

    fn description(&self) -> &'static str {
        "stream CRC: packets of valid/ready beats in, one CRC-8/16/32 per packet out, a beat per cycle"
    }

    fn params(&self) -> Vec<Param> {
        vec![
            Param {
                name: "algorithm",
                value_name: "CRC",
                kind: ParamKind::Choice(CrcAlgorithm::ALL.iter().map(|a| a.name()).collect()),
                help: "The CRC (crc8: CRC-8/SMBUS, crc16: CRC-16/IBM-3740, crc32: CRC-32/ISO-HDLC, crc32c: CRC-32/ISCSI)",
            },
            Param {
                name: "beat_bits",
                value_name: "B",
                kind: ParamKind::Int {
                    min: 1,
                    max: u64::from(MAX_BEAT_BITS),
                },
                help: "Data bits per beat",
            },
        ]
    }

    fn default_config(&self) -> StreamCrcConfig {
        StreamCrcConfig::DEFAULT
    }

    fn presets(&self) -> Vec<Preset<StreamCrcConfig>> {
        PRESETS
            .iter()
            .map(|&(algorithm, bits, fpga_report)| Preset {
                name: format!("{algorithm}-b{bits}"),
                config: StreamCrcConfig::new(algorithm, bits).expect("presets are valid"),
                fpga_report,
            })
            .collect()
    }

    fn top_name(&self, cfg: &StreamCrcConfig) -> String {
        top_name(cfg)
    }

    fn elaborate(&self, design: &mut Design, cfg: &StreamCrcConfig) -> Rc<ModuleDef> {
        build(design, cfg)
    }

    /// XOR logic and a few registers: nothing for DSP blocks or block RAM.
    fn fpga(&self, _: &StreamCrcConfig) -> Result<FpgaFacts, String> {
        Ok(FpgaFacts::default())
    }

    fn companions(&self) -> Companions {
        Companions {
            golden: Has::Yes("stream_crc"),
            driver: Has::Yes(()),
            tests: Has::Yes(&["stream_crc.rs"]),
        }
    }

    fn describe(&self, cfg: &StreamCrcConfig) -> String {
        format!("stream CRC {cfg}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hw::AnyBlock;

    #[test]
    fn every_parameter_is_a_key_and_presets_elaborate() {
        let keys = StreamCrc.default_table();
        for p in Block::params(&StreamCrc) {
            assert!(keys.contains_key(p.name), "{}", p.name);
        }
        for p in AnyBlock::presets(&StreamCrc) {
            let mut design = Design::new();
            assert_eq!(p.config.elaborate(&mut design).name, p.config.top_name());
        }
        let c = StreamCrc
            .configure(&"algorithm = \"crc16\"\nbeat_bits = 24".parse().unwrap())
            .unwrap();
        assert_eq!(c.top_name(), "stream_crc_crc16_b24");
        assert!(StreamCrc
            .configure(&"beat_bits = 513".parse().unwrap())
            .is_err());
    }
}

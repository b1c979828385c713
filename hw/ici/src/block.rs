//! The ICI link as a [`hw::Block`]: the pair of link ends and serdes stubs
//! ([`crate::pair()`]), configured by [`config::IciConfig`].

use crate::pair::{pair, pair_name};
use config::IciConfig;
use hw::{Block, Companions, Design, FpgaFacts, Has, ModuleDef, Param, ParamKind, Preset};
use std::rc::Rc;

/// The receive pipeline depth of the `fmax` preset: the deepest, whose
/// protocol logic starts from registers and whose sender's step compares
/// registers (`docs/ici.md`, "Pipeline depth").
pub const FMAX_DEPTH: u32 = 3;

/// The ICI link layer over its serdes stub.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ici;

impl Block for Ici {
    type Config = IciConfig;

    fn name(&self) -> &'static str {
        "ici"
    }

    fn description(&self) -> &'static str {
        "ICI link layer (CRC-checked flits, replay, ACK/NAK, credits, retraining), two ends over a serdes stub with injected errors"
    }

    fn params(&self) -> Vec<Param> {
        let int = |min: u64, max: u64| ParamKind::Int { min, max };
        let pow2 = |min: u64, max: u64| ParamKind::PowerOfTwo { min, max };
        vec![
            Param {
                name: "flit_bytes",
                value_name: "W",
                kind: pow2(1, 64),
                help: "Payload bytes per flit",
            },
            Param {
                name: "replay_depth",
                value_name: "D",
                kind: pow2(2, 256),
                help: "Flits the replay buffer holds (the window)",
            },
            Param {
                name: "rx_buffer",
                value_name: "B",
                kind: int(2, 256),
                help: "Flits the receive buffer holds (the credits)",
            },
            Param {
                name: "latency",
                value_name: "L",
                kind: int(1, 64),
                help: "Cycles a word spends in the serdes stub",
            },
            Param {
                name: "replay_timeout",
                value_name: "T",
                kind: int(8, 65535),
                help: "Cycles without acknowledgement before a replay (above the round trip)",
            },
            Param {
                name: "max_retries",
                value_name: "R",
                kind: int(1, 255),
                help: "Replays without progress before the link goes down and retrains",
            },
            Param {
                name: "train_words",
                value_name: "K",
                kind: int(1, 255),
                help: "Consecutive good words that end retraining",
            },
            Param {
                name: "crc_bits",
                value_name: "C",
                kind: pow2(8, 32),
                help: "Bits of the frame CRC: 32 (CRC-32/ISO-HDLC), 16 (CRC-16/IBM-3740) or 8 (CRC-8/SMBUS, for the formal configuration's short frames)",
            },
            Param {
                name: "depth",
                value_name: "N",
                kind: int(0, u64::from(config::ICI_MAX_DEPTH)),
                help: "Receive pipeline: 1 registers each arrived word with its CRC's partial sums, 2 the CRC check's verdict too, 3 the checked word with its ack, credit and seq relative to the state they meet, so the sender's step compares registers (each adds a cycle to the lanes' latency)",
            },
        ]
    }

    fn default_config(&self) -> IciConfig {
        IciConfig::DEFAULT
    }

    fn presets(&self) -> Vec<Preset<IciConfig>> {
        let small = IciConfig::new(4, 8, 8, 2, 32, 8, 4).expect("valid preset");
        // The small link's flits at the deepest receive pipeline, with a
        // window and a buffer of 16 flits: they cover its 16-cycle round
        // trip, so it sends a flit every cycle.
        let fmax = IciConfig::new(4, 16, 16, 2, 32, 8, 4)
            .and_then(|c| c.with_depth(FMAX_DEPTH))
            .expect("valid preset");
        // Small first: `fpga report --quick` takes each block's first report
        // preset, and the default's synthesis alone takes minutes.
        vec![
            // In the report too: the default's 571-bit frames fill no small
            // part, and a demo of recovery on a board needs one that fits.
            Preset {
                name: "small".into(),
                config: small,
                fpga_report: true,
            },
            Preset {
                name: "default".into(),
                config: IciConfig::DEFAULT,
                fpga_report: true,
            },
            Preset {
                name: "fmax".into(),
                config: fmax,
                fpga_report: true,
            },
            Preset {
                name: "formal".into(),
                config: IciConfig::FORMAL,
                fpga_report: false,
            },
        ]
    }

    fn top_name(&self, cfg: &IciConfig) -> String {
        pair_name(cfg)
    }

    /// Every parameter, but `depth` only when it is not 0: at depth 0 the
    /// generated files are the ones from before the parameter existed.
    fn design_params(&self, cfg: &IciConfig) -> Vec<(String, String)> {
        cfg.params()
    }

    fn elaborate(&self, design: &mut Design, cfg: &IciConfig) -> Rc<ModuleDef> {
        pair(design, cfg)
    }

    /// Nothing to budget: the only products are the stubs' scalings of a
    /// random draw to a bit position (16 bits by a constant), and the buffers
    /// are a few flits deep and hundreds of bits wide, so Yosys chooses.
    fn fpga(&self, _: &IciConfig) -> Result<FpgaFacts, String> {
        Ok(FpgaFacts::default())
    }

    fn companions(&self) -> Companions {
        Companions {
            golden: Has::Yes("ici"),
            driver: Has::Yes(()),
            tests: Has::Yes(&["ici_link.rs", "ici_serdes_stub.rs"]),
        }
    }

    fn describe(&self, cfg: &IciConfig) -> String {
        format!("ICI link {cfg}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hw::AnyBlock;

    #[test]
    fn every_parameter_is_a_config_key_and_presets_elaborate() {
        let keys = Ici.default_table();
        assert_eq!(Block::params(&Ici).len(), keys.len());
        assert_eq!(Ici.design_params(&IciConfig::DEFAULT).len(), keys.len() - 1);
        for p in Block::params(&Ici) {
            assert!(keys.contains_key(p.name), "{}", p.name);
        }
        for p in Block::presets(&Ici) {
            let mut design = Design::new();
            let top = Ici.elaborate(&mut design, &p.config);
            assert_eq!(top.name, Ici.top_name(&p.config));
        }
    }
}

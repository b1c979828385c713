//! The torus as [`hw::Block`]s, both configured by [`config::TorusConfig`]:
//! [`Torus`], the whole torus (plain wiring), and [`TorusNode`], one chip
//! node (router plus six link ends), the unit the FPGA report synthesises.

use crate::node::{node, node_name, top, top_name};
use config::{TorusConfig, Wiring};
use hw::{Block, Companions, Design, FpgaFacts, Has, ModuleDef, Param, ParamKind, Preset};
use std::rc::Rc;

/// The whole torus: chip nodes joined by serdes stubs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Torus;

/// One chip node: a router and six ICI link ends.
#[derive(Debug, Clone, Copy, Default)]
pub struct TorusNode;

fn params(node: bool) -> Vec<Param> {
    let pick = |torus: &'static str, node_help: &'static str| if node { node_help } else { torus };
    let int = |min: u64, max: u64| ParamKind::Int { min, max };
    vec![
        Param {
            name: "x",
            value_name: "X",
            kind: int(1, 4),
            help: pick("Chips along X", "Chips along X of the node's torus"),
        },
        Param {
            name: "y",
            value_name: "Y",
            kind: int(1, 4),
            help: pick("Chips along Y", "Chips along Y of the node's torus"),
        },
        Param {
            name: "z",
            value_name: "Z",
            kind: int(1, 4),
            help: pick("Chips along Z", "Chips along Z of the node's torus"),
        },
        Param {
            name: "vc_depth",
            value_name: "V",
            kind: int(2, 63),
            help: "Packets each virtual channel's input buffer holds (its credits)",
        },
        Param {
            name: "latency",
            value_name: "L",
            kind: int(1, 64),
            help: "Cycles a word spends in a serdes stub",
        },
        Param {
            name: "replay_depth",
            value_name: "D",
            kind: ParamKind::PowerOfTwo { min: 2, max: 256 },
            help: "Flits each link's replay buffer holds",
        },
        Param {
            name: "rx_buffer",
            value_name: "B",
            kind: int(2, 256),
            help: "Flits each link's receive buffer holds",
        },
        Param {
            name: "replay_timeout",
            value_name: "T",
            kind: int(8, 65535),
            help: "Cycles without acknowledgement before a link replays",
        },
        Param {
            name: "max_retries",
            value_name: "R",
            kind: int(1, 255),
            help: "Replays without progress before a link retrains",
        },
        Param {
            name: "train_words",
            value_name: "K",
            kind: int(1, 255),
            help: "Consecutive good words that end retraining",
        },
        Param {
            name: "vcs",
            value_name: "C",
            kind: ParamKind::PowerOfTwo { min: 1, max: 4 },
            help: "Virtual channels per torus port: 1, 2 (dateline) or 4 (dateline, and straight or turning after the next hop)",
        },
        Param {
            name: "depth",
            value_name: "N",
            kind: int(0, u64::from(config::TORUS_MAX_DEPTH)),
            help: "Router pipeline: 1 routes each flit as it enters its input buffer (the same cycles, a shorter path to the links)",
        },
    ]
}

/// A small link for the presets the checks simulate: 8 flits of window and
/// buffer, 2 cycles in the stub.
pub fn small_link() -> config::IciConfig {
    config::IciConfig::new(config::torus::TORUS_FLIT_BYTES, 8, 8, 2, 32, 8, 4).expect("valid link")
}

/// A small torus configuration for tests and presets.
pub fn small(dims: [u32; 3]) -> TorusConfig {
    TorusConfig::new(dims, 4, small_link()).expect("valid preset")
}

impl Block for Torus {
    type Config = TorusConfig;

    fn name(&self) -> &'static str {
        "torus"
    }

    fn description(&self) -> &'static str {
        "ICI torus (1..4 per dimension): dimension-order routers with 1, 2 or 4 VCs, ICI links over serdes stubs"
    }

    fn params(&self) -> Vec<Param> {
        params(false)
    }

    fn default_config(&self) -> TorusConfig {
        TorusConfig::default()
    }

    fn presets(&self) -> Vec<Preset<TorusConfig>> {
        // Small ones only: each chip is six link ends, and the checks run
        // every preset through Verilator, Icarus and Yosys.
        vec![
            Preset {
                name: "2x1x1-small".into(),
                config: small([2, 1, 1]),
                fpga_report: false,
            },
            Preset {
                name: "2x2x1-small".into(),
                config: small([2, 2, 1]),
                fpga_report: false,
            },
            // The other VC counts' routers, through the same checks.
            Preset {
                name: "2x1x1-small-vc1".into(),
                config: small([2, 1, 1]).with_vcs(1).expect("valid preset"),
                fpga_report: false,
            },
            Preset {
                name: "2x2x1-small-vc4".into(),
                config: small([2, 2, 1]).with_vcs(4).expect("valid preset"),
                fpga_report: false,
            },
        ]
    }

    fn top_name(&self, cfg: &TorusConfig) -> String {
        top_name(cfg, &Wiring::identity(cfg))
    }

    fn elaborate(&self, design: &mut Design, cfg: &TorusConfig) -> Rc<ModuleDef> {
        top(design, cfg, &Wiring::identity(cfg))
    }

    fn fpga(&self, _: &TorusConfig) -> Result<FpgaFacts, String> {
        Err(
            "the torus is a network of chips: the FPGA flows build one chip node (torus-node)"
                .into(),
        )
    }

    fn companions(&self) -> Companions {
        Companions {
            golden: Has::Yes("torus"),
            driver: Has::Yes(()),
            tests: Has::Yes(&["torus.rs"]),
        }
    }

    fn describe(&self, cfg: &TorusConfig) -> String {
        format!("ICI {cfg}")
    }
}

impl Block for TorusNode {
    type Config = TorusConfig;

    fn name(&self) -> &'static str {
        "torus-node"
    }

    fn description(&self) -> &'static str {
        "One ICI torus chip node: a router (6 torus ports + local, 1, 2 or 4 VCs) and six ICI link ends"
    }

    fn params(&self) -> Vec<Param> {
        params(true)
    }

    fn default_config(&self) -> TorusConfig {
        TorusConfig::with_dims([4, 4, 4]).expect("valid")
    }

    fn presets(&self) -> Vec<Preset<TorusConfig>> {
        vec![
            Preset {
                name: "4x4x4-small".into(),
                config: small([4, 4, 4]),
                fpga_report: true,
            },
            Preset {
                name: "fmax".into(),
                config: small([4, 4, 4])
                    .with_depth(config::TORUS_MAX_DEPTH)
                    .expect("valid preset"),
                fpga_report: true,
            },
        ]
    }

    fn top_name(&self, cfg: &TorusConfig) -> String {
        node_name(cfg)
    }

    fn elaborate(&self, design: &mut Design, cfg: &TorusConfig) -> Rc<ModuleDef> {
        node(design, cfg)
    }

    /// No multipliers; the router's buffers are a few flits deep and
    /// hundreds of bits wide, so Yosys chooses where they go.
    fn fpga(&self, _: &TorusConfig) -> Result<FpgaFacts, String> {
        Ok(FpgaFacts::default())
    }

    fn companions(&self) -> Companions {
        Companions {
            golden: Has::Yes("torus"),
            driver: Has::No {
                reason: "a node is simulated inside the torus, by the torus driver",
            },
            tests: Has::Yes(&["torus.rs"]),
        }
    }

    fn describe(&self, cfg: &TorusConfig) -> String {
        format!("ICI torus node of a {cfg}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hw::AnyBlock;

    #[test]
    fn every_parameter_is_a_config_key_and_presets_elaborate() {
        for b in [&Torus as &dyn AnyBlock, &TorusNode] {
            let keys = b.default_table();
            assert_eq!(b.params().len(), keys.len());
            let plain = b.presets().remove(0);
            assert!(!plain
                .config
                .design_params()
                .iter()
                .any(|(k, _)| k == "depth"));
            for p in b.params() {
                assert!(keys.contains_key(p.name), "{}", p.name);
            }
            for p in b.presets() {
                let mut design = Design::new();
                let top = p.config.elaborate(&mut design);
                assert_eq!(top.name, p.config.top_name());
            }
        }
    }
}

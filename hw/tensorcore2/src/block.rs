//! TensorCore v2 as a [`hw::Block`], with [`config::TensorCore2Config`] as
//! its configuration.

use crate::{build, top_name};
use config::tensorcore2::{MAX_TC2_ACC_ROWS, MAX_TC2_ARRAY, MAX_TC2_WEIGHT_ROWS};
use config::vpu::{
    MAX_DEPTH as MAX_VPU_DEPTH, MAX_LANES, MAX_SUBLANES, VMEM_WORDS_RANGE, VREGS_RANGE,
};
use config::{EupConfig, TensorCore2Config, MXU_DEPTH_RANGE};
use hw::{
    Block, Companions, Design, FpgaFacts, Has, ModuleDef, Multipliers, Param, ParamKind, Preset,
};
use std::rc::Rc;

/// TensorCore v2.
#[derive(Debug, Clone, Copy, Default)]
pub struct TensorCore2;

/// The presets: (name, R, lanes, sublanes, VMEM words, accumulator rows,
/// weight rows, MXU depth, VPU depth, EUP stages). Small memories: these
/// are the shapes the lint, Icarus and Yosys checks take (each holds a whole
/// EUP, about two minutes of Yosys, so two shapes: the smallest array, and
/// a 4x4 with the MXU's and the VPU's pipeline registers).
type PresetRow = (
    &'static str,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    EupConfig,
);
const PRESETS: [PresetRow; 2] = [
    ("small-2x2", 2, 2, 1, 64, 16, 64, 0, 0, EupConfig::DEFAULT),
    ("deep-4x4", 4, 4, 1, 256, 64, 256, 2, 4, EupConfig::DEFAULT),
];

impl Block for TensorCore2 {
    type Config = TensorCore2Config;

    fn name(&self) -> &'static str {
        "tensorcore2"
    }

    fn description(&self) -> &'static str {
        "TensorCore v2: sequencer and element mover driving the VPU, the EUP and a bf16/int8 MXU"
    }

    fn params(&self) -> Vec<Param> {
        let pow2 = |min: u32, max: u32| ParamKind::PowerOfTwo {
            min: u64::from(min),
            max: u64::from(max),
        };
        let int = |min: u32, max: u32| ParamKind::Int {
            min: u64::from(min),
            max: u64::from(max),
        };
        vec![
            Param {
                name: "rows",
                value_name: "R",
                kind: int(1, MAX_TC2_ARRAY),
                help: "MXU rows and columns (the array is square)",
            },
            Param {
                name: "lanes",
                value_name: "L",
                kind: pow2(1, MAX_LANES),
                help: "VPU lanes per sublane",
            },
            Param {
                name: "sublanes",
                value_name: "S",
                kind: pow2(1, MAX_SUBLANES),
                help: "VPU sublanes (W = lanes x sublanes elements per word)",
            },
            Param {
                name: "vregs",
                value_name: "V",
                kind: pow2(*VREGS_RANGE.start(), *VREGS_RANGE.end()),
                help: "VPU vector registers",
            },
            Param {
                name: "vmem_words",
                value_name: "D",
                kind: pow2(*VMEM_WORDS_RANGE.start(), *VMEM_WORDS_RANGE.end()),
                help: "Unified buffer (the VPU's VMEM) in words of W elements",
            },
            Param {
                name: "acc_rows",
                value_name: "N",
                kind: pow2(2, MAX_TC2_ACC_ROWS),
                help: "MXU accumulator rows (C results each)",
            },
            Param {
                name: "weight_rows",
                value_name: "N",
                kind: pow2(2, MAX_TC2_WEIGHT_ROWS),
                help: "Weight-memory rows of C bf16 patterns",
            },
            Param {
                name: "weight_queue",
                value_name: "Q",
                kind: int(2, 16),
                help: "Weight reads (RW) the weight engine holds",
            },
            Param {
                name: "mxu_depth",
                value_name: "D",
                kind: int(*MXU_DEPTH_RANGE.start(), *MXU_DEPTH_RANGE.end()),
                help: "MXU pipeline depth (docs/mxu.md)",
            },
            Param {
                name: "vpu_depth",
                value_name: "D",
                kind: int(0, MAX_VPU_DEPTH),
                help: "VPU extra execute stages (docs/vpu.md)",
            },
            Param {
                name: "eup_recurrence_stages",
                value_name: "N",
                kind: int(0, config::eup::MAX_RECURRENCE_STAGES),
                help: "EUP division and square-root recurrence stages (docs/eup.md)",
            },
            Param {
                name: "eup_mul_stages",
                value_name: "N",
                kind: int(0, config::eup::MAX_MUL_STAGES),
                help: "EUP stages per fp32 multiply",
            },
            Param {
                name: "eup_add_stages",
                value_name: "N",
                kind: int(0, config::eup::MAX_ADD_STAGES),
                help: "EUP stages per fp32 add",
            },
        ]
    }

    fn default_config(&self) -> TensorCore2Config {
        TensorCore2Config::DEFAULT
    }

    fn presets(&self) -> Vec<Preset<TensorCore2Config>> {
        PRESETS
            .iter()
            .map(
                |&(name, r, lanes, sublanes, words, acc, wrows, dm, dv, eup)| Preset {
                    name: name.to_string(),
                    config: TensorCore2Config::new(r, lanes, sublanes)
                        .and_then(|c| c.with_memories(words, acc, wrows))
                        .and_then(|c| c.with_mxu_depth(dm))
                        .and_then(|c| c.with_vpu_depth(dv))
                        .and_then(|c| c.with_eup(eup))
                        .expect("presets are valid"),
                    fpga_report: false,
                },
            )
            .collect()
    }

    fn top_name(&self, cfg: &TensorCore2Config) -> String {
        top_name(cfg)
    }

    fn elaborate(&self, design: &mut Design, cfg: &TensorCore2Config) -> Rc<ModuleDef> {
        build(design, cfg)
    }

    /// The MXU's, the VPU's and the EUP's own facts, and the mover's one
    /// 16 x 16 product (`RWV`'s last row, a + (n - 1) s).
    fn fpga(&self, cfg: &TensorCore2Config) -> Result<FpgaFacts, String> {
        let parts = [
            mxu::Mxu.fpga(&cfg.mxu())?,
            vpu::Vpu.fpga(&cfg.vpu())?,
            eup::Eup.fpga(&cfg.eup())?,
        ];
        let mut facts = FpgaFacts::default();
        let mut what = Vec::new();
        for p in parts {
            facts.multipliers.extend(p.multipliers);
            facts.block_ram.extend(p.block_ram);
            facts
                .block_ram_without_lutram
                .extend(p.block_ram_without_lutram);
            facts.min_lut4s += p.min_lut4s;
            if !p.min_lut4s_what.is_empty() {
                what.push(p.min_lut4s_what);
            }
        }
        facts.multipliers.push(Multipliers {
            what: "RWV start address",
            count: 1,
            widths: (16, 16),
            signed: false,
            owners: None,
            min_lut4s_in_logic: 0,
        });
        facts.block_ram.push("m:*wmem");
        facts.min_lut4s_what = what.join(", ");
        Ok(facts)
    }

    fn companions(&self) -> Companions {
        Companions {
            golden: Has::Yes("tensorcore2"),
            driver: Has::Yes(()),
            tests: Has::Yes(&["tensorcore2_rtl.rs", "tensorcore2_golden.rs"]),
        }
    }

    fn describe(&self, cfg: &TensorCore2Config) -> String {
        cfg.to_string()
    }

    fn design_params(&self, cfg: &TensorCore2Config) -> Vec<(String, String)> {
        cfg.params()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hw::AnyBlock;

    #[test]
    fn every_parameter_is_a_key_and_presets_elaborate_to_their_top() {
        let keys = TensorCore2.default_table();
        let params = Block::params(&TensorCore2);
        assert_eq!(params.len(), keys.len());
        for p in &params {
            assert!(keys.contains_key(p.name), "{} is not a config key", p.name);
        }
        for preset in Block::presets(&TensorCore2) {
            let mut design = Design::new();
            let top = TensorCore2.elaborate(&mut design, &preset.config);
            assert_eq!(top.name, top_name(&preset.config), "{}", preset.name);
        }
    }
}

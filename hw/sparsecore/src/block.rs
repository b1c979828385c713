//! The SparseCore as a [`hw::Block`], with [`config::SparseCoreConfig`] as
//! its configuration.

use crate::{build, top_name};
use config::sparsecore::{
    HBM_INFLIGHT_RANGE, HBM_LATENCY_RANGE, MAX_BATCH, MAX_DEPTH, MAX_DIM, MAX_TILES,
    QUEUE_DEPTH_RANGE,
};
use config::SparseCoreConfig;
use hw::{
    Block, Companions, Design, FpgaFacts, FpgaSearch, Has, ModuleDef, Multipliers, Owners, Param,
    ParamKind, Preset, SearchSizes, Ty,
};
use std::rc::Rc;

/// The SparseCore.
#[derive(Debug, Clone, Copy, Default)]
pub struct SparseCore;

/// A preset's row: (name, tiles, max D, max B, queue depth, reads in flight,
/// depth, in the FPGA report).
type PresetRow = (&'static str, u32, u32, u32, u32, u32, u32, bool);

/// The presets: (name, tiles, max D, max B, queue depth, reads in flight,
/// depth, in the FPGA report). `t4-d128` is the default; the small ones are
/// what the tests simulate; `t16-d128` is a TPU v4 SparseCore's tile count;
/// `fmax` is `t1-d8` at the deepest pipeline (one tile on an FPGA).
const PRESETS: [PresetRow; 5] = [
    ("t4-d128", 4, 128, 64, 16, 128, 0, false),
    ("t1-d8", 1, 8, 4, 4, 4, 0, true),
    ("t4-d24", 4, 24, 8, 8, 8, 0, true),
    ("t16-d128", 16, 128, 64, 16, 128, 0, false),
    ("fmax", 1, 8, 4, 4, 4, MAX_DEPTH, true),
];

impl Block for SparseCore {
    type Config = SparseCoreConfig;

    fn name(&self) -> &'static str {
        "sparsecore"
    }

    fn description(&self) -> &'static str {
        "embedding gather, combine and scatter-add over HBM: T parallel tiles, each with its scratchpad and 8-wide fp32 combine"
    }

    fn params(&self) -> Vec<Param> {
        let int = |min: u32, max: u32| ParamKind::Int {
            min: u64::from(min),
            max: u64::from(max),
        };
        let pow2 = |r: std::ops::RangeInclusive<u32>| ParamKind::PowerOfTwo {
            min: u64::from(*r.start()),
            max: u64::from(*r.end()),
        };
        vec![
            Param {
                name: "tiles",
                value_name: "T",
                kind: int(1, MAX_TILES),
                help: "Tiles (tile t owns the ids with id mod T = t)",
            },
            Param {
                name: "max_dim",
                value_name: "D",
                kind: int(1, MAX_DIM),
                help: "Longest table row, in fp32 elements",
            },
            Param {
                name: "max_batch",
                value_name: "B",
                kind: int(1, MAX_BATCH),
                help: "Largest batch, in samples",
            },
            Param {
                name: "queue_depth",
                value_name: "Q",
                kind: pow2(QUEUE_DEPTH_RANGE),
                help: "Entry queue depth per tile",
            },
            Param {
                name: "hbm_inflight",
                value_name: "N",
                kind: pow2(HBM_INFLIGHT_RANGE),
                help: "HBM reads in flight at most",
            },
            Param {
                name: "hbm_latency",
                value_name: "L",
                kind: int(*HBM_LATENCY_RANGE.start(), *HBM_LATENCY_RANGE.end()),
                help:
                    "Fixed HBM latency of the cycle model and benchmark (does not change the RTL)",
            },
            Param {
                name: "depth",
                value_name: "N",
                kind: int(0, MAX_DEPTH),
                help: "Pipeline stages of the fold lanes' adder and the combine lanes' multiplier (at most 4); from 4 on the combine's add too",
            },
        ]
    }

    fn default_config(&self) -> SparseCoreConfig {
        SparseCoreConfig::DEFAULT
    }

    fn presets(&self) -> Vec<Preset<SparseCoreConfig>> {
        let latency = SparseCoreConfig::DEFAULT.hbm_latency();
        PRESETS
            .iter()
            .map(
                |&(name, tiles, dim, batch, queue, inflight, depth, fpga_report)| Preset {
                    name: name.to_string(),
                    config: SparseCoreConfig::with(tiles, dim, batch, queue, inflight, latency)
                        .and_then(|c| c.with_depth(depth))
                        .expect("presets are valid"),
                    fpga_report,
                },
            )
            .collect()
    }

    fn top_name(&self, cfg: &SparseCoreConfig) -> String {
        top_name(cfg)
    }

    fn elaborate(&self, design: &mut Design, cfg: &SparseCoreConfig) -> Rc<ModuleDef> {
        build(design, cfg)
    }

    /// Eight combine lanes per tile, each with an fp32 multiplier (a 24x24
    /// significand product), tile by tile, and with a pipelined update eight
    /// shared update lanes; the activation buffer and the tiles' partial-sum
    /// banks in block RAM (scratchpad SRAM on a chip). The queues are left
    /// to Yosys, which builds the small ones from LUT RAM or flip-flops.
    fn fpga(&self, cfg: &SparseCoreConfig) -> Result<FpgaFacts, String> {
        let lanes = u64::from(config::sparsecore::WORD_ELEMS);
        // The significands' product, or the multiplies of its DSP-sized
        // pieces where the combine's multiplier registers them.
        let significands =
            hw::arith::int_mul_multiplies(Ty::u(24), Ty::u(24), crate::combine_mul_partials(cfg));
        let mut multipliers = Multipliers::per_multiply(
            "combine lanes",
            u64::from(cfg.tiles()) * lanes,
            &significands,
            Some(Owners {
                cols: lanes,
                row: Some("n:*tile{row}.*"),
                // Two spellings of a lane inside a flattened tile: Yosys 0.70
                // names a cell `$flatten\block.\tile0.\lane0.$mul...`, older
                // releases `tile0.lane0.`; `?` takes the backslash.
                element: "n:*tile{row}.lane{col}.* n:*tile{row}.?lane{col}.*",
            }),
        );
        if cfg.pipelined_update() {
            multipliers.push(Multipliers {
                what: "update lanes",
                count: lanes,
                widths: (24, 24),
                signed: false,
                owners: Some(Owners::indexed("n:*upd_lane{col}.*")),
                min_lut4s_in_logic: 0,
            });
        }
        Ok(FpgaFacts {
            multipliers,
            block_ram: vec!["m:*act_buf", "m:*psum_bank*"],
            block_ram_without_lutram: vec![],
            ..FpgaFacts::default()
        })
    }

    /// The SparseCore with the most tiles, at the `t4-d24` report preset's
    /// shape: rows of up to 24 elements (three HBM words, so rows that start
    /// and end inside a word), batches up to 8, an 8-entry queue and 8 reads
    /// in flight; the scratchpads (8 x 3 words) fit one block RAM deep on
    /// every part.
    fn fpga_searches(&self) -> Vec<FpgaSearch> {
        vec![FpgaSearch {
            name: "tiles",
            description: "T a power of two up to 16; rows up to 24 elements, batches up to 8, \
                          entry queue 8 deep, 8 HBM reads in flight.",
            base: hw::toml::Table::from_iter([
                ("max_dim".to_string(), hw::toml::Value::from(24)),
                ("max_batch".to_string(), hw::toml::Value::from(8)),
                ("queue_depth".to_string(), hw::toml::Value::from(8)),
                ("hbm_inflight".to_string(), hw::toml::Value::from(8)),
            ]),
            size_params: vec!["tiles"],
            sizes: SearchSizes::PowersOfTwo { max: MAX_TILES },
            start: 1,
            size_label: "T={n}",
        }]
    }

    fn companions(&self) -> Companions {
        Companions {
            golden: Has::Yes("sparsecore"),
            driver: Has::Yes(()),
            tests: Has::Yes(&["sparsecore.rs"]),
        }
    }

    fn describe(&self, cfg: &SparseCoreConfig) -> String {
        format!("SparseCore {cfg}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hw::AnyBlock;

    #[test]
    fn every_preset_elaborates() {
        for p in Block::presets(&SparseCore) {
            let mut design = Design::new();
            let top = build(&mut design, &p.config);
            assert_eq!(top.name, top_name(&p.config), "{}", p.name);
        }
    }

    #[test]
    fn the_adders_stages_stop_at_the_fp32_adders_cuts() {
        // The fold's and the combine's adders take `add_stages` stages of
        // `hw::fp::FP32_ADD`; the configuration crate cannot see the plan.
        assert_eq!(
            config::sparsecore::MAX_ADD_STAGES,
            hw::fp::FP32_ADD.max_stages()
        );
    }

    #[test]
    fn configurations_cross_the_registry_as_toml() {
        let any: &dyn AnyBlock = &SparseCore;
        let table: toml::Table = "tiles = 2\nmax_dim = 21".parse().unwrap();
        let c = any.configure(&table).unwrap();
        assert_eq!(c.top_name(), "sparsecore_t2_d21_b64_q16_f128");
        let bad: toml::Table = "tiles = 17".parse().unwrap();
        assert!(any.configure(&bad).is_err());
    }
}

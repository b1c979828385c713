//! The TensorCore as a [`hw::Block`], with [`config::TensorCoreConfig`] as
//! its configuration.

use crate::{build, top_name, ActStages};
use config::tensorcore::{MAX_TC_ACC_ROWS, MAX_TC_BIAS_ROWS, MAX_TC_MEM_ROWS, TC_DEPTH_RANGE};
use config::{TensorCoreConfig, MAX_ARRAY_DIM};
use hw::{
    Block, Companions, Design, FpgaFacts, Has, ModuleDef, Multipliers, Owners, Param, ParamKind,
    Preset,
};
use std::rc::Rc;

/// The TensorCore.
#[derive(Debug, Clone, Copy, Default)]
pub struct TensorCore;

/// The presets: (rows = cols, acc rows, buffer rows, weight rows, bias rows,
/// weight queue). Small memories: these are the shapes the lint, Icarus and
/// Yosys checks take.
const PRESETS: [(u32, u32, u32, u32, u32, u32); 3] = [
    (1, 16, 64, 64, 16, 2),
    (4, 64, 256, 256, 16, 4),
    (8, 64, 256, 256, 16, 4),
];

/// The depth of the `fmax` preset (the 4x4 report shape): the one with the
/// highest clock in place and route (`docs/tensorcore.md`, "Pipeline depth").
pub const FMAX_DEPTH: u32 = 4;

impl Block for TensorCore {
    type Config = TensorCoreConfig;

    fn name(&self) -> &'static str {
        "tensorcore"
    }

    fn description(&self) -> &'static str {
        "TensorCore: sequencer, unified buffer, weight and bias memories, int8 MXU, activation unit"
    }

    fn params(&self) -> Vec<Param> {
        let pow2 = |min: u32, max: u32| ParamKind::PowerOfTwo {
            min: u64::from(min),
            max: u64::from(max),
        };
        let dims = ParamKind::Int {
            min: 1,
            max: u64::from(MAX_ARRAY_DIM),
        };
        vec![
            Param {
                name: "rows",
                value_name: "R",
                kind: dims.clone(),
                help: "MXU rows R (the array is square: rows = cols)",
            },
            Param {
                name: "cols",
                value_name: "C",
                kind: dims,
                help: "MXU columns C (equal to rows)",
            },
            Param {
                name: "acc_rows",
                value_name: "N",
                kind: pow2(2, MAX_TC_ACC_ROWS),
                help: "Accumulator rows of the MXU inside (C int32 each)",
            },
            Param {
                name: "ub_rows",
                value_name: "N",
                kind: pow2(2, MAX_TC_MEM_ROWS),
                help: "Unified-buffer rows of R int8",
            },
            Param {
                name: "weight_rows",
                value_name: "N",
                kind: pow2(2, MAX_TC_MEM_ROWS),
                help: "Weight-memory rows of C int8",
            },
            Param {
                name: "bias_rows",
                value_name: "N",
                kind: pow2(2, MAX_TC_BIAS_ROWS),
                help: "Bias-memory rows of C int32",
            },
            Param {
                name: "weight_queue",
                value_name: "Q",
                kind: ParamKind::Int { min: 2, max: 16 },
                help: "Weight reads the weight engine holds",
            },
            Param {
                name: "depth",
                value_name: "D",
                kind: ParamKind::Int {
                    min: u64::from(*TC_DEPTH_RANGE.start()),
                    max: u64::from(*TC_DEPTH_RANGE.end()),
                },
                help: "Pipeline depth: registers in the MXU, the activation unit and the sequencer (docs/tensorcore.md)",
            },
        ]
    }

    fn default_config(&self) -> TensorCoreConfig {
        TensorCoreConfig::DEFAULT
    }

    /// The sized presets at depth 0, and `fmax`: the 4x4 report shape at
    /// [`FMAX_DEPTH`].
    fn presets(&self) -> Vec<Preset<TensorCoreConfig>> {
        let sized = PRESETS.iter().map(|&(n, acc, ub, w, b, q)| Preset {
            name: format!("int8-{n}x{n}"),
            config: TensorCoreConfig::with(n, n, acc, ub, w, b, q).expect("presets are valid"),
            // The FPGA report builds the 4x4.
            fpga_report: n == 4,
        });
        let (n, acc, ub, w, b, q) = PRESETS[1];
        let fmax = Preset {
            name: "fmax".to_string(),
            config: TensorCoreConfig::with(n, n, acc, ub, w, b, q)
                .and_then(|c| c.with_depth(FMAX_DEPTH))
                .expect("presets are valid"),
            // `fpga report --preset fmax` builds it; the full report keeps
            // one TensorCore place and route.
            fpga_report: false,
        };
        sized.chain([fmax]).collect()
    }

    fn top_name(&self, cfg: &TensorCoreConfig) -> String {
        top_name(cfg)
    }

    fn elaborate(&self, design: &mut Design, cfg: &TensorCoreConfig) -> Rc<ModuleDef> {
        build(design, cfg)
    }

    /// The MXU's processing elements first, one 8x8 multiplier each; then
    /// the activation unit's C signed 32x32 requantization products (from
    /// depth 2 four 17x17 partial products each), which
    /// the flows cannot select one by one (they sit in the top), so they
    /// take DSP blocks only when everything fits. The accumulator, the
    /// unified buffer and the weight memory in block RAM.
    fn fpga(&self, cfg: &TensorCoreConfig) -> Result<FpgaFacts, String> {
        Ok(FpgaFacts {
            multipliers: vec![
                Multipliers {
                    what: "processing elements",
                    count: u64::from(cfg.rows()) * u64::from(cfg.cols()),
                    widths: (8, 8),
                    signed: true,
                    owners: Some(Owners {
                        cols: u64::from(cfg.cols()),
                        row: Some(mxu::PE_ROW_PATTERN),
                        element: mxu::PE_PATTERN,
                    }),
                    min_lut4s_in_logic: 0,
                },
                if ActStages::of(cfg.depth()).partials {
                    Multipliers {
                        what: "requantization partial products",
                        count: 4 * u64::from(cfg.cols()),
                        widths: (17, 17),
                        signed: true,
                        owners: None,
                        min_lut4s_in_logic: 0,
                    }
                } else {
                    Multipliers {
                        what: "requantization products",
                        count: u64::from(cfg.cols()),
                        widths: (32, 32),
                        signed: true,
                        owners: None,
                        min_lut4s_in_logic: 0,
                    }
                },
            ],
            block_ram: vec!["m:*acc", "m:*ub", "m:*wmem"],
            block_ram_without_lutram: vec![],
            ..FpgaFacts::default()
        })
    }

    fn companions(&self) -> Companions {
        Companions {
            golden: Has::Yes("tensorcore"),
            driver: Has::Yes(()),
            tests: Has::Yes(&["tensorcore_rtl.rs", "tensorcore_golden.rs"]),
        }
    }

    fn describe(&self, cfg: &TensorCoreConfig) -> String {
        cfg.to_string()
    }

    /// [`TensorCoreConfig::params`]: `depth` only when it is not 0, so depth
    /// 0's files are the ones from before the parameter existed.
    fn design_params(&self, cfg: &TensorCoreConfig) -> Vec<(String, String)> {
        cfg.params()
    }
}

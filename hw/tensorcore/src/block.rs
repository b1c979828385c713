//! The TensorCore as a [`hw::Block`], with [`config::TensorCoreConfig`] as
//! its configuration.

use crate::{build, top_name};
use config::tensorcore::{MAX_TC_ACC_ROWS, MAX_TC_BIAS_ROWS, MAX_TC_MEM_ROWS};
use config::{TensorCoreConfig, MAX_ARRAY_DIM};
use hw::{Block, Design, ModuleDef, Param, ParamKind, Preset};
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
        ]
    }

    fn default_config(&self) -> TensorCoreConfig {
        TensorCoreConfig::DEFAULT
    }

    fn presets(&self) -> Vec<Preset<TensorCoreConfig>> {
        PRESETS
            .iter()
            .map(|&(n, acc, ub, w, b, q)| Preset {
                name: format!("int8-{n}x{n}"),
                config: TensorCoreConfig::with(n, n, acc, ub, w, b, q).expect("presets are valid"),
                // The FPGA report builds the 4x4.
                fpga_report: n == 4,
            })
            .collect()
    }

    fn top_name(&self, cfg: &TensorCoreConfig) -> String {
        top_name(cfg)
    }

    fn elaborate(&self, design: &mut Design, cfg: &TensorCoreConfig) -> Rc<ModuleDef> {
        build(design, cfg)
    }

    fn describe(&self, cfg: &TensorCoreConfig) -> String {
        cfg.to_string()
    }
}

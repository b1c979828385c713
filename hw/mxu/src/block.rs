//! The MXU as a [`hw::Block`]: what `gen`, the RTL checks and the FPGA report
//! need to cover it, with [`config::MxuConfig`] as its configuration.

use crate::{build, top_name};
use config::{ElemType, MxuConfig, ACC_ROWS_RANGE, MAX_ARRAY_DIM};
use hw::{Block, Design, ModuleDef, Param, ParamKind, Preset};
use std::rc::Rc;

/// The weight-stationary matrix unit.
#[derive(Debug, Clone, Copy, Default)]
pub struct Mxu;

/// The presets: (element type, rows, cols, in the FPGA report). Shapes 1x1
/// and the non-square ones are the edge cases of the generator (a single PE,
/// skews of unequal length); 4x4 to 16x16 are the sizes boards and the FPGA
/// report use. bf16 stops at 8x8 here (its PEs are large) and at 4x4 in the
/// FPGA report, the one bf16 array small FPGAs can hold.
const PRESETS: [(ElemType, u32, u32, bool); 10] = [
    (ElemType::Int8, 1, 1, false),
    (ElemType::Int8, 2, 3, false),
    (ElemType::Int8, 3, 2, false),
    (ElemType::Int8, 4, 4, true),
    (ElemType::Int8, 8, 8, true),
    (ElemType::Int8, 16, 16, true),
    (ElemType::Bf16, 1, 1, false),
    (ElemType::Bf16, 2, 3, false),
    (ElemType::Bf16, 4, 4, true),
    (ElemType::Bf16, 8, 8, false),
];

impl Block for Mxu {
    type Config = MxuConfig;

    fn name(&self) -> &'static str {
        "mxu"
    }

    fn description(&self) -> &'static str {
        "weight-stationary systolic matrix unit: int8 or bf16 operands, weight FIFO, accumulator memory"
    }

    fn params(&self) -> Vec<Param> {
        let dims = ParamKind::Int {
            min: 1,
            max: u64::from(MAX_ARRAY_DIM),
        };
        vec![
            Param {
                name: "rows",
                value_name: "R",
                kind: dims.clone(),
                help: "Array rows R (the K direction)",
            },
            Param {
                name: "cols",
                value_name: "C",
                kind: dims,
                help: "Array columns C (the N direction)",
            },
            Param {
                name: "dtype",
                value_name: "TYPE",
                kind: ParamKind::Choice(ElemType::ALL.iter().map(|t| t.name()).collect()),
                help: "Element type of the operands",
            },
            Param {
                name: "acc_rows",
                value_name: "N",
                kind: ParamKind::PowerOfTwo {
                    min: u64::from(*ACC_ROWS_RANGE.start()),
                    max: u64::from(*ACC_ROWS_RANGE.end()),
                },
                help: "Accumulator rows (each holds C results)",
            },
        ]
    }

    fn default_config(&self) -> MxuConfig {
        MxuConfig::DEFAULT
    }

    fn presets(&self) -> Vec<Preset<MxuConfig>> {
        PRESETS
            .iter()
            .map(|&(dtype, rows, cols, fpga_report)| Preset {
                name: format!("{dtype}-{rows}x{cols}"),
                config: MxuConfig::new(rows, cols, dtype).expect("presets are valid"),
                fpga_report,
            })
            .collect()
    }

    fn top_name(&self, cfg: &MxuConfig) -> String {
        top_name(cfg)
    }

    fn elaborate(&self, design: &mut Design, cfg: &MxuConfig) -> Rc<ModuleDef> {
        build(design, cfg)
    }

    fn describe(&self, cfg: &MxuConfig) -> String {
        format!("MXU {cfg}")
    }

    /// [`MxuConfig::params`], the header every MXU file has always had.
    fn design_params(&self, cfg: &MxuConfig) -> Vec<(String, String)> {
        cfg.params()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hw::AnyBlock;

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    #[test]
    fn every_parameter_is_a_key_of_the_toml_form_and_its_default_is_allowed() {
        let keys = Mxu.default_table();
        let params = Block::params(&Mxu);
        assert_eq!(params.len(), keys.len());
        for p in &params {
            assert!(keys.contains_key(p.name), "{} is not a config key", p.name);
        }
        assert_eq!(Mxu.default_text(&params[2]).as_deref(), Some("int8"));
    }

    #[test]
    fn parameter_ranges_are_the_ones_the_configuration_enforces() {
        for p in Block::params(&Mxu) {
            match p.kind {
                ParamKind::Int { min, max } | ParamKind::PowerOfTwo { min, max } => {
                    let at = |v: u64| table(&format!("{} = {v}", p.name));
                    assert!(Mxu.configure(&at(min)).is_ok(), "{} = {min}", p.name);
                    assert!(Mxu.configure(&at(max)).is_ok(), "{} = {max}", p.name);
                    assert!(Mxu.configure(&at(min - 1)).is_err(), "{} below", p.name);
                    assert!(Mxu.configure(&at(max + 1)).is_err(), "{} above", p.name);
                }
                ParamKind::Choice(names) => {
                    for n in names {
                        let t = table(&format!("{} = \"{n}\"", p.name));
                        assert!(Mxu.configure(&t).is_ok(), "{n}");
                    }
                }
            }
        }
    }

    #[test]
    fn the_erased_form_gives_what_the_typed_one_does() {
        let c = Mxu.configure(&table("rows = 3\ndtype = \"bf16\"")).unwrap();
        let cfg = MxuConfig::with_acc_rows(3, 8, ElemType::Bf16, 256).unwrap();
        assert_eq!(c.config_any().downcast_ref::<MxuConfig>(), Some(&cfg));
        assert_eq!(c.top_name(), "mxu_bf16_3x8_acc256");
        assert_eq!(c.describe(), format!("MXU {cfg}"));
        assert_eq!(c.design_params(), cfg.params());
        let mut design = Design::new();
        assert_eq!(c.elaborate(&mut design).name, c.top_name());
    }

    #[test]
    fn presets_have_unique_names_and_cover_both_element_types() {
        let presets = Block::presets(&Mxu);
        let mut names: Vec<_> = presets.iter().map(|p| p.name.clone()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), presets.len());
        for t in ElemType::ALL {
            assert!(presets
                .iter()
                .any(|p| p.config.dtype() == t && p.fpga_report));
        }
    }
}

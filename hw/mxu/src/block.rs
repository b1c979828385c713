//! The MXU as a [`hw::Block`]: what `gen`, the RTL checks and the FPGA report
//! need to cover it, with [`config::MxuConfig`] as its configuration.

use crate::{build, top_name};
use config::{ElemType, MxuConfig, ACC_ROWS_RANGE, MAX_ARRAY_DIM, MXU_DEPTH_RANGE};
use hw::{
    Block, Companions, Design, FpgaFacts, FpgaSearch, Has, ModuleDef, Multipliers, Owners, Param,
    ParamKind, Preset, SearchSizes,
};
use std::rc::Rc;

/// Yosys pattern of every cell of one row of processing elements (`{row}`),
/// in a flattened design; the board builds' DSP budget uses it too.
pub const PE_ROW_PATTERN: &str = "n:*g_pe_row?{row}?.*";
/// Yosys pattern of every cell of processing element (`{row}`, `{col}`).
pub const PE_PATTERN: &str = "n:*g_pe_row?{row}?.g_pe_col?{col}?.*";
/// The same for the int8 PEs' partial-product multipliers at depth 4
/// ([`crate::PARTIAL_PRODUCT_HIGH`], [`crate::PARTIAL_PRODUCT_LOW`]).
const HIGH_ROW_PATTERN: &str = "n:*g_pe_row?{row}?.*mul_hi*";
const HIGH_PATTERN: &str = "n:*g_pe_row?{row}?.g_pe_col?{col}?.*mul_hi*";
const LOW_ROW_PATTERN: &str = "n:*g_pe_row?{row}?.*mul_lo*";
const LOW_PATTERN: &str = "n:*g_pe_row?{row}?.g_pe_col?{col}?.*mul_lo*";
/// The whole products of the first `whole_rows` rows, and the halves of the
/// rows below them, numbered from 0 in their own instance array.
const WHOLE_ROW_PATTERN: &str = "n:*g_pe_row?{row}?.*mul_whole*";
const WHOLE_PATTERN: &str = "n:*g_pe_row?{row}?.g_pe_col?{col}?.*mul_whole*";
const SPLIT_HIGH_ROW_PATTERN: &str = "n:*g_pe_split_row?{row}?.*mul_hi*";
const SPLIT_HIGH_PATTERN: &str = "n:*g_pe_split_row?{row}?.g_pe_split_col?{col}?.*mul_hi*";
const SPLIT_LOW_ROW_PATTERN: &str = "n:*g_pe_split_row?{row}?.*mul_lo*";
const SPLIT_LOW_PATTERN: &str = "n:*g_pe_split_row?{row}?.g_pe_split_col?{col}?.*mul_lo*";

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

/// The depth of the `fmax` preset of `dtype` (a 4x4 array): the one with
/// the highest clock in place and route (`docs/mxu.md`, "Pipeline depth"):
/// int8 5 (ECP5-85F 16x16 97.9 MHz against 46.4 at depth 4; on the iCE40
/// UP5K depth 5 no longer fits, hence `ice40-fmax`), bf16 4.
pub const fn fmax_depth(dtype: ElemType) -> u32 {
    match dtype {
        ElemType::Int8 => 5,
        ElemType::Bf16 => 4,
    }
}

/// The presets with the highest clock: (name, element type, depth), 4x4
/// arrays at [`fmax_depth`], and `ice40-fmax`: the int8 4x4 at depth 4, the
/// fastest that fits an iCE40 UP5K (46.1 MHz; depth 5's extra registers,
/// which the flows leave beside the UP5K's DSP blocks rather than in them,
/// need 5,630 of its 5,280 logic cells).
const FMAX_PRESETS: [(&str, ElemType, u32); 3] = [
    ("fmax", ElemType::Int8, fmax_depth(ElemType::Int8)),
    ("bf16-fmax", ElemType::Bf16, fmax_depth(ElemType::Bf16)),
    ("ice40-fmax", ElemType::Int8, 4),
];

/// The presets of the bf16 array in int8 mode: (rows, cols, depth). The 8x8
/// is the size the mode is measured at (`docs/mxu.md`); the 3x2 at depth 5
/// has every register a depth adds (the staged adder among
/// them), on skews of unequal length.
const INT8_MODE_PRESETS: [(u32, u32, u32); 2] = [(8, 8, 0), (3, 2, 5)];

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
            Param {
                name: "depth",
                value_name: "D",
                kind: ParamKind::Int {
                    min: u64::from(*MXU_DEPTH_RANGE.start()),
                    max: u64::from(*MXU_DEPTH_RANGE.end()),
                },
                help: "Pipeline depth: 1 registers each PE's product, 2 its multiplier's operands too, 3 the accumulator adder's inputs too, 4 splits the multipliers (and the bf16 adders) into stages, 5 registers each multiplier's operands (and int8's partial products) once more",
            },
            Param {
                name: "whole_rows",
                value_name: "N",
                kind: ParamKind::Int {
                    min: 0,
                    max: u64::from(MAX_ARRAY_DIM),
                },
                help: "int8 at depth 4 and 5: the first N rows of PEs multiply with one 8x8 multiplier each (for a part's DSP blocks) instead of two half multipliers (for LUTs); at most rows, same bits and cycles",
            },
            Param {
                name: "int8_mode",
                value_name: "BOOL",
                kind: ParamKind::Choice(vec!["false", "true"]),
                help: "bf16 only: the array also computes int8 rows (input a_int8_i): int8 products of each lane's low byte, summed in wrapping int32, at the bf16 array's timing",
            },
        ]
    }

    fn default_config(&self) -> MxuConfig {
        MxuConfig::DEFAULT
    }

    fn presets(&self) -> Vec<Preset<MxuConfig>> {
        let sized = PRESETS
            .iter()
            .map(|&(dtype, rows, cols, fpga_report)| Preset {
                name: format!("{dtype}-{rows}x{cols}"),
                config: MxuConfig::new(rows, cols, dtype).expect("presets are valid"),
                fpga_report,
            });
        let fmax = FMAX_PRESETS.iter().map(|&(name, dtype, depth)| Preset {
            name: name.to_string(),
            config: MxuConfig::new(4, 4, dtype)
                .and_then(|c| c.with_depth(depth))
                .expect("presets are valid"),
            fpga_report: true,
        });
        let int8_mode = INT8_MODE_PRESETS.iter().map(|&(rows, cols, depth)| {
            let depth_name = match depth {
                0 => String::new(),
                d => format!("-d{d}"),
            };
            Preset {
                name: format!("bf16-int8-{rows}x{cols}{depth_name}"),
                config: MxuConfig::new(rows, cols, ElemType::Bf16)
                    .and_then(|c| c.with_depth(depth))
                    .and_then(|c| c.with_int8_mode(true))
                    .expect("presets are valid"),
                fpga_report: false,
            }
        });
        sized.chain(fmax).chain(int8_mode).collect()
    }

    fn top_name(&self, cfg: &MxuConfig) -> String {
        top_name(cfg)
    }

    fn elaborate(&self, design: &mut Design, cfg: &MxuConfig) -> Rc<ModuleDef> {
        build(design, cfg)
    }

    /// One multiplier per processing element (8x8: int8 operands, or bf16
    /// significands with their hidden bit), row-major; the accumulator in
    /// block RAM (32 * C bits wide, read twice). A bf16 array in int8 mode
    /// has one signed 9x9 multiplier per PE, shared by both kinds of rows.
    ///
    /// The int8 PEs of depth 4 have two multipliers each, 8 x 4 and 8 x 5
    /// (the partial products): the high ones get DSP blocks first. The
    /// first `whole_rows` rows have one 8 x 8 multiplier each, which get DSP
    /// blocks before any half.
    fn fpga(&self, cfg: &MxuConfig) -> Result<FpgaFacts, String> {
        let pes = u64::from(cfg.rows()) * u64::from(cfg.cols());
        if cfg.dtype() == ElemType::Int8 && cfg.depth() >= 4 {
            let whole_rows = if cfg.whole_rows_in_effect() {
                cfg.whole_rows()
            } else {
                0
            };
            let whole_pes = u64::from(whole_rows) * u64::from(cfg.cols());
            let (high, low) = if whole_rows > 0 {
                (
                    (SPLIT_HIGH_ROW_PATTERN, SPLIT_HIGH_PATTERN),
                    (SPLIT_LOW_ROW_PATTERN, SPLIT_LOW_PATTERN),
                )
            } else {
                (
                    (HIGH_ROW_PATTERN, HIGH_PATTERN),
                    (LOW_ROW_PATTERN, LOW_PATTERN),
                )
            };
            let half = |what, width, (row, element)| Multipliers {
                what,
                count: pes - whole_pes,
                widths: (8, width),
                signed: true,
                owners: Some(Owners {
                    cols: u64::from(cfg.cols()),
                    row: Some(row),
                    element,
                }),
                // Half a multiplier and its share of the adders.
                min_lut4s_in_logic: 50,
            };
            let mut multipliers = Vec::new();
            if whole_pes > 0 {
                multipliers.push(Multipliers {
                    what: "whole products",
                    count: whole_pes,
                    widths: (8, 8),
                    signed: true,
                    owners: Some(Owners {
                        cols: u64::from(cfg.cols()),
                        row: Some(WHOLE_ROW_PATTERN),
                        element: WHOLE_PATTERN,
                    }),
                    min_lut4s_in_logic: 100,
                });
            }
            if whole_pes < pes {
                multipliers.push(half("high partial products", 4, high));
                multipliers.push(half("low partial products", 5, low));
            }
            return Ok(FpgaFacts {
                multipliers,
                block_ram: vec!["m:*acc"],
                block_ram_without_lutram: vec![],
                ..FpgaFacts::default()
            });
        }
        // In int8 mode, bf16 significands (0_1fffffff) and int8 low bytes
        // (sign-extended) share one signed 9x9 product.
        let (width, signed) = if cfg.int8_mode() {
            (9, true)
        } else {
            (8, cfg.dtype() == ElemType::Int8)
        };
        Ok(FpgaFacts {
            multipliers: vec![Multipliers {
                what: "processing elements",
                count: u64::from(cfg.rows()) * u64::from(cfg.cols()),
                widths: (width, width),
                signed,
                owners: Some(Owners {
                    cols: u64::from(cfg.cols()),
                    row: Some(PE_ROW_PATTERN),
                    element: PE_PATTERN,
                }),
                // An 8x8 multiplier and a 32-bit adder: about half of what
                // Yosys builds (iCE40 ~175, ECP5 ~300 LUT4s).
                min_lut4s_in_logic: 100,
            }],
            block_ram: vec!["m:*acc"],
            block_ram_without_lutram: vec![],
            ..FpgaFacts::default()
        })
    }

    /// The largest square int8 array with the default accumulator depth.
    fn fpga_searches(&self) -> Vec<FpgaSearch> {
        vec![FpgaSearch {
            name: "int8",
            description: "Square int8 arrays R = C (every integer size up to 64).",
            base: hw::toml::Table::from_iter([(
                "dtype".to_string(),
                hw::toml::Value::from("int8"),
            )]),
            size_params: vec!["rows", "cols"],
            sizes: SearchSizes::Integers { max: 64 },
            start: 4,
            size_label: "{n}x{n}",
        }]
    }

    fn companions(&self) -> Companions {
        Companions {
            golden: Has::Yes("mxu"),
            driver: Has::Yes(()),
            tests: Has::Yes(&["mxu_int8.rs", "mxu_bf16.rs", "mxu_int8_mode.rs"]),
        }
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
        assert_eq!(Mxu.default_text(&params[4]).as_deref(), Some("0"));
    }

    #[test]
    fn parameter_ranges_are_the_ones_the_configuration_enforces() {
        for p in Block::params(&Mxu) {
            match p.kind {
                ParamKind::Int { min, max } | ParamKind::PowerOfTwo { min, max } => {
                    // whole_rows is at most rows: give it the most rows.
                    let rows = if p.name == "whole_rows" {
                        format!("rows = {MAX_ARRAY_DIM}\n")
                    } else {
                        String::new()
                    };
                    let at = |v: u64| table(&format!("{rows}{} = {v}", p.name));
                    assert!(Mxu.configure(&at(min)).is_ok(), "{} = {min}", p.name);
                    assert!(Mxu.configure(&at(max)).is_ok(), "{} = {max}", p.name);
                    if let Some(below) = min.checked_sub(1) {
                        assert!(Mxu.configure(&at(below)).is_err(), "{} below", p.name);
                    }
                    assert!(Mxu.configure(&at(max + 1)).is_err(), "{} above", p.name);
                }
                ParamKind::Choice(names) => {
                    // int8 mode is an option of the bf16 array only.
                    let dtype = if p.name == "int8_mode" {
                        "dtype = \"bf16\"\n"
                    } else {
                        ""
                    };
                    for n in names {
                        let t = table(&format!("{dtype}{} = \"{n}\"", p.name));
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
    fn int8_mode_is_a_flag_of_the_bf16_array_with_names_of_its_own() {
        // A command line hands the flag over as its name, a file as a boolean.
        for text in ["int8_mode = \"true\"", "int8_mode = true"] {
            let c = Mxu
                .configure(&table(&format!("dtype = \"bf16\"\n{text}")))
                .unwrap();
            assert_eq!(c.top_name(), "mxu_bf16_8x8_acc256_i8m", "{text}");
            assert_eq!(
                c.design_params().last(),
                Some(&("int8_mode".to_string(), "true".to_string()))
            );
            let err = Mxu.configure(&table(text)).err().expect("int8 refuses it");
            assert!(err.contains("bf16") && !err.contains('\n'), "{err}");
        }
        let params = Block::params(&Mxu);
        let flag = params.iter().find(|p| p.name == "int8_mode").unwrap();
        assert_eq!(Mxu.default_text(flag).as_deref(), Some("false"));
        // Its PEs differ from the bf16 array's, every other module is shared.
        let bf16 = MxuConfig::new(2, 2, ElemType::Bf16).unwrap();
        for depth in config::MXU_DEPTH_RANGE {
            let plain = bf16.with_depth(depth).unwrap();
            let dual = plain.with_int8_mode(true).unwrap();
            let names = |cfg: &MxuConfig| {
                let mut design = Design::new();
                build(&mut design, cfg);
                let mut names: Vec<String> =
                    design.modules().iter().map(|d| d.name.clone()).collect();
                names.sort();
                names
            };
            let (plain, dual) = (names(&plain), names(&dual));
            // The top and the PE; at depth 5 also the PE's kept operand
            // register, which holds the mode bit beside the activation.
            let new: Vec<&str> = dual
                .iter()
                .filter(|n| !plain.contains(n))
                .map(String::as_str)
                .collect();
            let expected = 2 + usize::from(depth == 5);
            assert_eq!(new.len(), expected, "depth {depth}: {new:?}");
            let suffixed = new.iter().filter(|n| n.ends_with("_i8m")).count();
            assert_eq!(suffixed, 2, "depth {depth}: {new:?}");
            assert!(depth < 5 || new.contains(&"kept_reg_u17"), "{new:?}");
        }
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

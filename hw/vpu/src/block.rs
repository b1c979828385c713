//! The VPU as a [`hw::Block`]: what `gen`, the RTL checks and the FPGA report
//! need to cover it, with [`config::VpuConfig`] as its configuration.

use crate::{alu, build, top_name};
use config::vpu::{MAX_DEPTH, MAX_LANES, MAX_SUBLANES, VMEM_WORDS_RANGE, VREGS_RANGE};
use config::{VpuConfig, VpuUnits};
use hw::{
    Block, Companions, Design, FpgaFacts, FpgaSearch, Has, ModuleDef, Multipliers, Owners, Param,
    ParamKind, Preset, SearchSizes, Ty,
};
use std::rc::Rc;

/// The vector processing unit.
#[derive(Debug, Clone, Copy, Default)]
pub struct Vpu;

/// The presets: (name, lanes, sublanes, registers, VMEM words, units, extra
/// execute stages, in the FPGA report). `tpu-128x8` is the TPU's shape (with the default register
/// file and VMEM, so it is the model `sim vpu --lanes 128 --sublanes 8` and
/// the benchmark run); 8x1 and 4x2 are the
/// FPGA-sized ones (full and int32-only), with 16 registers and 256 words of
/// VMEM (one block RAM deep on every family); 1x1 and 2x1 are the edge cases
/// of the generator (no reduction unit, a one-level fold, no rotators).
/// `fmax` is the full 4x1 FPGA shape with every cut of the element ALU
/// registered (the clock-speed target of docs/vpu.md, "Timing").
type PresetRow = (&'static str, u32, u32, u32, u32, VpuUnits, u32, bool);
const PRESETS: [PresetRow; 8] = [
    ("tpu-128x8", 128, 8, 32, 1024, VpuUnits::Full, 0, false),
    ("full-8x1", 8, 1, 16, 256, VpuUnits::Full, 0, true),
    ("full-4x2", 4, 2, 16, 256, VpuUnits::Full, 0, true),
    ("int32-8x1", 8, 1, 16, 256, VpuUnits::Int32, 0, true),
    ("int32-4x2", 4, 2, 16, 256, VpuUnits::Int32, 0, false),
    ("full-1x1", 1, 1, 4, 16, VpuUnits::Full, 0, false),
    ("full-2x1", 2, 1, 4, 16, VpuUnits::Full, 0, false),
    ("fmax", 4, 1, 16, 256, VpuUnits::Full, MAX_DEPTH, true),
];

impl Block for Vpu {
    type Config = VpuConfig;

    fn name(&self) -> &'static str {
        "vpu"
    }

    fn description(&self) -> &'static str {
        "vector unit: lanes x sublanes SIMD on int32/fp32, load/ALU/store bundles, cross-lane unit"
    }

    fn params(&self) -> Vec<Param> {
        let pow2 = |min: u32, max: u32| ParamKind::PowerOfTwo {
            min: u64::from(min),
            max: u64::from(max),
        };
        vec![
            Param {
                name: "lanes",
                value_name: "L",
                kind: pow2(1, MAX_LANES),
                help: "Lanes per sublane",
            },
            Param {
                name: "sublanes",
                value_name: "S",
                kind: pow2(1, MAX_SUBLANES),
                help: "Sublanes (a vector holds lanes x sublanes 32-bit elements)",
            },
            Param {
                name: "vregs",
                value_name: "V",
                kind: pow2(*VREGS_RANGE.start(), *VREGS_RANGE.end()),
                help: "Vector registers",
            },
            Param {
                name: "vmem_words",
                value_name: "D",
                kind: pow2(*VMEM_WORDS_RANGE.start(), *VMEM_WORDS_RANGE.end()),
                help: "Vector memory depth in vectors",
            },
            Param {
                name: "units",
                value_name: "UNITS",
                kind: ParamKind::Choice(VpuUnits::ALL.iter().map(|u| u.name()).collect()),
                help: "Arithmetic units: full (int32 and fp32) or int32 only",
            },
            Param {
                name: "depth",
                value_name: "N",
                kind: ParamKind::Int {
                    min: 0,
                    max: u64::from(MAX_DEPTH),
                },
                help: "Extra execute stages (pipeline registers in the element ALU)",
            },
            Param {
                name: "host_wmask",
                value_name: "BOOL",
                kind: ParamKind::Choice(vec!["false", "true"]),
                help: "A per-element write mask on the host port (input host_wmask_i): a host write changes only the elements whose bit is set",
            },
        ]
    }

    fn default_config(&self) -> VpuConfig {
        VpuConfig::DEFAULT
    }

    fn presets(&self) -> Vec<Preset<VpuConfig>> {
        PRESETS
            .iter()
            .map(
                |&(name, lanes, sublanes, vregs, words, units, depth, fpga_report)| Preset {
                    name: name.to_string(),
                    config: VpuConfig::with(lanes, sublanes, vregs, words, units)
                        .and_then(|c| c.with_depth(depth))
                        .expect("presets are valid"),
                    fpga_report,
                },
            )
            .collect()
    }

    fn top_name(&self, cfg: &VpuConfig) -> String {
        top_name(cfg)
    }

    fn elaborate(&self, design: &mut Design, cfg: &VpuConfig) -> Rc<ModuleDef> {
        build(design, cfg)
    }

    /// One signed 32x32 multiplier per lane (shared by mul_i32, requant_i8
    /// and mul_f32; four 16-bit pieces' multiplies from the depth that
    /// registers them), element order; VMEM in block RAM (the register file,
    /// four read and two write ports, fits no block RAM: logic).
    fn fpga(&self, cfg: &VpuConfig) -> Result<FpgaFacts, String> {
        let lanes = u64::from(cfg.elems());
        // A safe lower bound on one lane (its register file slice of 16 x 32
        // bits with four read ports, the integer ALU and requantization; with
        // full units the fp32 adder, product rounding, conversions and half a
        // reduction unit): under half of what Yosys builds (an int32 lane
        // about 3,300 LUT6s on 7-series).
        let per_lane = match cfg.units() {
            VpuUnits::Int32 => 1_000,
            VpuUnits::Full => 2_500,
        };
        // From the depth that registers its DSP-sized pieces, a lane's
        // product is four multiplies.
        let partials = cfg.depth() > 0 && alu::Schedule::of(cfg.depth()).mul_partials;
        let multiplies = hw::arith::int_mul_multiplies(Ty::s(32), Ty::s(32), partials);
        let owners = Owners {
            cols: u64::from(cfg.lanes()),
            row: None,
            element: "n:*g_lane_sub?{row}?.g_lane_lane?{col}?.*",
        };
        Ok(FpgaFacts {
            multipliers: Multipliers::per_multiply(
                "lane multipliers",
                lanes,
                &multiplies,
                Some(owners),
            ),
            block_ram: vec!["m:*vmem"],
            // The banked register file (depth >= 6): each bank has one write
            // port, so block RAM holds it (a copy per read port); on iCE40
            // the alternative is 16 x 32 flip-flops per bank and a 16-way
            // multiplexer per read port and bit.
            block_ram_without_lutram: vec!["m:*rf_load", "m:*rf_alu"],
            min_lut4s: lanes * per_lane,
            min_lut4s_what: format!("{lanes} {} lanes", cfg.units()),
        })
    }

    /// The largest lanes x 1 VPU of each kind of units, with the FPGA
    /// presets' 16 registers and 256 VMEM words (one block RAM deep).
    fn fpga_searches(&self) -> Vec<FpgaSearch> {
        VpuUnits::ALL
            .iter()
            .map(|&units| FpgaSearch {
                name: units.name(),
                description: if units.has_fp32() {
                    "lanes x 1 VPUs with int32 and fp32 units, 16 registers, 256 VMEM words."
                } else {
                    "lanes x 1 VPUs with int32 units only, 16 registers, 256 VMEM words."
                },
                base: hw::toml::Table::from_iter([
                    ("sublanes".to_string(), hw::toml::Value::from(1)),
                    ("vregs".to_string(), hw::toml::Value::from(16)),
                    ("vmem_words".to_string(), hw::toml::Value::from(256)),
                    ("units".to_string(), hw::toml::Value::from(units.name())),
                ]),
                size_params: vec!["lanes"],
                sizes: SearchSizes::PowersOfTwo { max: 64 },
                start: 1,
                size_label: "{n}x1",
            })
            .collect()
    }

    fn companions(&self) -> Companions {
        Companions {
            golden: Has::Yes("vpu"),
            driver: Has::Yes(()),
            tests: Has::Yes(&["vpu_ops.rs", "vpu_programs.rs"]),
        }
    }

    fn describe(&self, cfg: &VpuConfig) -> String {
        format!("VPU {cfg}")
    }

    /// Every parameter as the TOML form has it, except a depth of 0 and a
    /// `host_wmask` that is off: the files of a VPU without them are the
    /// ones from before the parameters existed.
    fn design_params(&self, cfg: &VpuConfig) -> Vec<(String, String)> {
        let mut params = vec![
            ("lanes", cfg.lanes().to_string()),
            ("sublanes", cfg.sublanes().to_string()),
            ("vregs", cfg.vregs().to_string()),
            ("vmem_words", cfg.vmem_words().to_string()),
            ("units", cfg.units().name().to_string()),
        ];
        if cfg.depth() != 0 {
            params.push(("depth", cfg.depth().to_string()));
        }
        if cfg.host_wmask() {
            params.push(("host_wmask", "true".to_string()));
        }
        params
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
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
    fn every_parameter_is_a_key_and_its_range_is_the_one_enforced() {
        let keys = Vpu.default_table();
        let params = Block::params(&Vpu);
        assert_eq!(params.len(), keys.len());
        for p in params {
            assert!(keys.contains_key(p.name), "{} is not a config key", p.name);
            match p.kind {
                ParamKind::PowerOfTwo { min, max } => {
                    let at = |v: u64| table(&format!("{} = {v}", p.name));
                    assert!(Vpu.configure(&at(min)).is_ok(), "{} = {min}", p.name);
                    assert!(Vpu.configure(&at(max)).is_ok(), "{} = {max}", p.name);
                    assert!(Vpu.configure(&at(max * 2)).is_err(), "{} above", p.name);
                    if min > 1 {
                        assert!(Vpu.configure(&at(min / 2)).is_err(), "{} below", p.name);
                    }
                }
                ParamKind::Choice(names) => {
                    for n in names {
                        let t = table(&format!("{} = \"{n}\"", p.name));
                        assert!(Vpu.configure(&t).is_ok(), "{n}");
                    }
                }
                ParamKind::Int { min, max } => {
                    let at = |v: u64| table(&format!("{} = {v}", p.name));
                    assert!(Vpu.configure(&at(min)).is_ok(), "{} = {min}", p.name);
                    assert!(Vpu.configure(&at(max)).is_ok(), "{} = {max}", p.name);
                    assert!(Vpu.configure(&at(max + 1)).is_err(), "{} above", p.name);
                }
            }
        }
    }

    #[test]
    fn presets_have_unique_names_and_elaborate_to_their_top() {
        let presets = Block::presets(&Vpu);
        let mut names: Vec<_> = presets.iter().map(|p| p.name.clone()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), presets.len());
        for u in VpuUnits::ALL {
            assert!(presets
                .iter()
                .any(|p| p.config.units() == u && p.fpga_report));
        }
        let small = presets.iter().find(|p| p.name == "full-4x2").unwrap();
        let mut design = Design::new();
        assert_eq!(
            Vpu.elaborate(&mut design, &small.config).name,
            "vpu_full_4x2_v16_m256"
        );
    }
}

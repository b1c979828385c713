//! The EUP as a [`hw::Block`], with [`config::EupConfig`] as its
//! configuration.

use crate::{build, top_name};
use config::eup::{MAX_ADD_STAGES, MAX_MUL_STAGES, MAX_RECURRENCE_STAGES};
use config::EupConfig;
use hw::arith::FP32_MUL;
use hw::{
    Block, Companions, Design, FpgaFacts, Has, ModuleDef, Multipliers, Param, ParamKind, Preset, Ty,
};
use std::rc::Rc;

/// The EUP.
#[derive(Debug, Clone, Copy, Default)]
pub struct Eup;

/// The presets: (recurrence stages, multiply stages, add stages, in the FPGA
/// report), named by their stages. The default registers every cut; half
/// the cuts is the smaller FPGA build; no stages is the generator's edge
/// (one result register); the other two make either path the longer one.
const PRESETS: [(u32, u32, u32, bool); 5] = [
    (MAX_RECURRENCE_STAGES, MAX_MUL_STAGES, MAX_ADD_STAGES, true),
    (14, 2, 3, true),
    (0, 0, 0, false),
    (1, MAX_MUL_STAGES, MAX_ADD_STAGES, false),
    (MAX_RECURRENCE_STAGES, 0, 0, false),
];

/// fp32 multiplies of the exp path: the multiply by log2 e, and the six of
/// exp2's polynomial (its scaling by 2^i is an exponent add).
const FP32_MULTIPLIES: u64 = 7;

impl Block for Eup {
    type Config = EupConfig;

    fn name(&self) -> &'static str {
        "eup"
    }

    fn description(&self) -> &'static str {
        "transcendental unit: fp32 div, sqrt, recip, rsqrt, exp2, exp, one operation per cycle"
    }

    fn params(&self) -> Vec<Param> {
        let int = |max: u32| ParamKind::Int {
            min: 0,
            max: u64::from(max),
        };
        vec![
            Param {
                name: "recurrence_stages",
                value_name: "R",
                kind: int(MAX_RECURRENCE_STAGES),
                help: "Pipeline registers in each digit recurrence (division, square root)",
            },
            Param {
                name: "mul_stages",
                value_name: "M",
                kind: int(MAX_MUL_STAGES),
                help: "Pipeline registers in each fp32 multiply of the exp path",
            },
            Param {
                name: "add_stages",
                value_name: "A",
                kind: int(MAX_ADD_STAGES),
                help: "Pipeline registers in each fp32 add of the exp path",
            },
        ]
    }

    fn default_config(&self) -> EupConfig {
        EupConfig::DEFAULT
    }

    fn presets(&self) -> Vec<Preset<EupConfig>> {
        PRESETS
            .iter()
            .map(|&(r, m, a, fpga_report)| Preset {
                name: format!("r{r}-m{m}-a{a}"),
                config: EupConfig::new(r, m, a).expect("presets are valid"),
                fpga_report,
            })
            .collect()
    }

    fn top_name(&self, cfg: &EupConfig) -> String {
        top_name(cfg)
    }

    fn elaborate(&self, design: &mut Design, cfg: &EupConfig) -> Rc<ModuleDef> {
        build(design, cfg)
    }

    /// The exp path's seven fp32 multiplies, each a 24x24 significand
    /// product (or its four DSP-sized pieces where the multiply registers
    /// them); they sit inside one pipeline and cannot be told apart, so they
    /// get DSP blocks only together. No memories: the recurrences and the
    /// delay lines are registers.
    fn fpga(&self, cfg: &EupConfig) -> Result<FpgaFacts, String> {
        let partials = FP32_MUL.active(cfg.mul_stages())[FP32_MUL.cut_number("partials")];
        let significands = hw::arith::int_mul_multiplies(Ty::u(24), Ty::u(24), partials);
        Ok(FpgaFacts {
            multipliers: Multipliers::per_multiply(
                "exp path multiplies",
                FP32_MULTIPLIES,
                &significands,
                None,
            ),
            // Two recurrences of 25 steps, each a 26-bit or wider compare and
            // select per step (at least a LUT per bit): a lower bound well
            // under what Yosys builds (6,375 LUT4s at the default on ECP5).
            min_lut4s: 2 * 25 * 26,
            min_lut4s_what: "the division's and the square root's recurrences".to_string(),
            ..FpgaFacts::default()
        })
    }

    fn companions(&self) -> Companions {
        Companions {
            golden: Has::Yes("eup"),
            driver: Has::Yes(()),
            tests: Has::Yes(&["eup.rs", "eup_units.rs"]),
        }
    }

    fn describe(&self, cfg: &EupConfig) -> String {
        cfg.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hw::AnyBlock;

    #[test]
    fn every_parameter_is_a_key_and_presets_elaborate_to_their_top() {
        let keys = Eup.default_table();
        let params = Block::params(&Eup);
        assert_eq!(params.len(), keys.len());
        for p in params {
            assert!(keys.contains_key(p.name), "{}", p.name);
            let ParamKind::Int { max, .. } = p.kind else {
                panic!("{} is a stage count", p.name)
            };
            let at = |v: u64| format!("{} = {v}", p.name).parse::<toml::Table>().unwrap();
            assert!(Eup.configure(&at(max)).is_ok(), "{} = {max}", p.name);
            assert!(Eup.configure(&at(max + 1)).is_err(), "{} above", p.name);
        }
        for p in AnyBlock::presets(&Eup) {
            let mut design = Design::new();
            assert_eq!(p.config.elaborate(&mut design).name, p.config.top_name());
        }
        assert_eq!(
            Block::presets(&Eup)[0].config,
            EupConfig::DEFAULT,
            "the first preset is the default"
        );
    }
}

//! The EUP's configuration: how many pipeline stages its division and
//! square root recurrences and its fp32 multiplies and adds take, and its
//! operations' encoding.
//!
//! The unit takes one operation per cycle whatever the stage counts; they
//! trade the latency (every operation's is the same, [`EupConfig::latency`])
//! against the clock.

use crate::{one_line, ConfigError};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Registered cuts of the division and square root recurrences, at most
/// (`hw::eup::DIV32` and `SQRT32`: the operands, the unpacking, the 25
/// steps, the rounding).
pub const MAX_RECURRENCE_STAGES: u32 = 28;
/// Registered cuts of an fp32 multiply, at most (`hw::arith::FP32_MUL`).
pub const MAX_MUL_STAGES: u32 = 4;
/// Registered cuts of an fp32 add, at most (`hw::fp::FP32_ADD`).
pub const MAX_ADD_STAGES: u32 = 6;

/// The EUP's operations, by their encoding on `op_i` (three bits; 6 and 7
/// are reserved and give the canonical NaN).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EupOp {
    /// div32(a, b).
    Div = 0,
    /// sqrt32(a).
    Sqrt = 1,
    /// recip(a) = div32(1.0, a).
    Recip = 2,
    /// rsqrt(a) = div32(1.0, sqrt32(a)).
    Rsqrt = 3,
    /// exp2(a).
    Exp2 = 4,
    /// exp(a) = exp2(mul32(a, log2 e)).
    Exp = 5,
}

impl EupOp {
    /// Every operation, by encoding.
    pub const ALL: [EupOp; 6] = [
        EupOp::Div,
        EupOp::Sqrt,
        EupOp::Recip,
        EupOp::Rsqrt,
        EupOp::Exp2,
        EupOp::Exp,
    ];

    /// Bits of the encoding.
    pub const BITS: u32 = 3;

    /// The operation's name on command lines.
    pub fn name(self) -> &'static str {
        match self {
            EupOp::Div => "div",
            EupOp::Sqrt => "sqrt",
            EupOp::Recip => "recip",
            EupOp::Rsqrt => "rsqrt",
            EupOp::Exp2 => "exp2",
            EupOp::Exp => "exp",
        }
    }

    /// Its encoding on `op_i`.
    pub fn code(self) -> u32 {
        self as u32
    }

    /// The operation an encoding names, if any.
    pub fn from_code(code: u32) -> Option<EupOp> {
        EupOp::ALL.into_iter().find(|o| o.code() == code)
    }

    /// Whether it reads its second operand.
    pub fn binary(self) -> bool {
        self == EupOp::Div
    }
}

impl fmt::Display for EupOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for EupOp {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        EupOp::ALL
            .into_iter()
            .find(|o| o.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = EupOp::ALL.iter().map(|o| o.name()).collect();
                ConfigError(format!(
                    "unknown EUP operation '{s}' (expected one of: {})",
                    names.join(", ")
                ))
            })
    }
}

/// The EUP's pipeline: the stage counts of its recurrences (division and
/// square root) and of each of its fp32 multiplies and adds (exp2's
/// sequence).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct EupConfig {
    recurrence_stages: u32,
    mul_stages: u32,
    add_stages: u32,
}

impl EupConfig {
    /// Every cut registered: one operation per cycle at the highest clock.
    pub const DEFAULT: EupConfig = EupConfig {
        recurrence_stages: MAX_RECURRENCE_STAGES,
        mul_stages: MAX_MUL_STAGES,
        add_stages: MAX_ADD_STAGES,
    };

    /// A validated configuration.
    pub fn new(
        recurrence_stages: u32,
        mul_stages: u32,
        add_stages: u32,
    ) -> Result<Self, ConfigError> {
        for (name, value, max) in [
            (
                "recurrence_stages",
                recurrence_stages,
                MAX_RECURRENCE_STAGES,
            ),
            ("mul_stages", mul_stages, MAX_MUL_STAGES),
            ("add_stages", add_stages, MAX_ADD_STAGES),
        ] {
            if value > max {
                return Err(ConfigError(format!(
                    "{name} must be in 0..={max}, not {value}"
                )));
            }
        }
        Ok(EupConfig {
            recurrence_stages,
            mul_stages,
            add_stages,
        })
    }

    pub const fn recurrence_stages(&self) -> u32 {
        self.recurrence_stages
    }

    pub const fn mul_stages(&self) -> u32 {
        self.mul_stages
    }

    pub const fn add_stages(&self) -> u32 {
        self.add_stages
    }

    /// Cycles from the square root's input to rsqrt's division's output.
    pub fn root_path_latency(&self) -> u32 {
        2 * self.recurrence_stages
    }

    /// Cycles of exp: the multiply by log2 e, exp2's split of t, its
    /// subtraction, six multiply-adds and the scaling by 2^i (the split
    /// three registers and one before the scaling once the adds are
    /// pipelined).
    pub fn exp_path_latency(&self) -> u32 {
        let split = if self.add_stages > 0 { 4 } else { 0 };
        self.mul_stages + split + self.add_stages + 6 * (self.mul_stages + self.add_stages)
    }

    /// Every operation's latency: an operation taken in cycle t has its
    /// result in cycle t + latency: the longer of the two paths, then the
    /// result register (the unit's outputs come from registers).
    pub fn latency(&self) -> u32 {
        self.root_path_latency().max(self.exp_path_latency()) + 1
    }

    /// Reads a TOML configuration (keys left out take the defaults).
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        let raw: RawEupConfig =
            toml::from_str(text).map_err(|e| ConfigError(one_line(&e.to_string())))?;
        raw.validate()
    }
}

impl Default for EupConfig {
    fn default() -> Self {
        EupConfig::DEFAULT
    }
}

impl fmt::Display for EupConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "EUP (recurrences of {} stages, multiplies of {}, adds of {}; latency {})",
            self.recurrence_stages,
            self.mul_stages,
            self.add_stages,
            self.latency()
        )
    }
}

/// The unvalidated serde form; `Deserialize` for [`EupConfig`] goes through it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEupConfig {
    recurrence_stages: Option<u32>,
    mul_stages: Option<u32>,
    add_stages: Option<u32>,
}

impl RawEupConfig {
    fn validate(self) -> Result<EupConfig, ConfigError> {
        let d = EupConfig::DEFAULT;
        EupConfig::new(
            self.recurrence_stages.unwrap_or(d.recurrence_stages),
            self.mul_stages.unwrap_or(d.mul_stages),
            self.add_stages.unwrap_or(d.add_stages),
        )
    }
}

impl<'de> Deserialize<'de> for EupConfig {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        RawEupConfig::deserialize(de)?
            .validate()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_checked_and_toml_round_trips() {
        assert_eq!(EupConfig::DEFAULT.latency(), 75);
        let none = EupConfig::new(0, 0, 0).unwrap();
        assert_eq!(none.latency(), 1);
        let c = EupConfig::new(10, 2, 3).unwrap();
        assert_eq!(c.root_path_latency(), 20);
        assert_eq!(c.exp_path_latency(), 2 + 4 + 3 + 6 * 5);
        assert_eq!(c.latency(), 40);
        assert!(EupConfig::new(29, 0, 0).is_err());
        assert!(EupConfig::new(0, 5, 0).is_err());
        assert!(EupConfig::new(0, 0, 7).is_err());
        let text = toml::to_string(&c).unwrap();
        assert_eq!(EupConfig::from_toml(&text).unwrap(), c);
        assert_eq!(
            EupConfig::from_toml("mul_stages = 1").unwrap(),
            EupConfig::new(28, 1, 6).unwrap()
        );
        for bad in ["mul_stages = 9", "stages = 1", "[["] {
            let e = EupConfig::from_toml(bad).unwrap_err().to_string();
            assert!(!e.is_empty() && !e.contains('\n'), "{bad}: {e}");
        }
    }

    #[test]
    fn operations_round_trip_through_names_and_codes() {
        for op in EupOp::ALL {
            assert_eq!(op.name().parse::<EupOp>().unwrap(), op);
            assert_eq!(EupOp::from_code(op.code()), Some(op));
            assert!(op.code() < 1 << EupOp::BITS);
        }
        assert_eq!(EupOp::from_code(6), None);
        assert!("log".parse::<EupOp>().is_err());
    }
}

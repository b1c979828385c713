//! The vector unit's configuration: its shape, register file, vector memory
//! and which arithmetic units it has.

use crate::{one_line, ConfigError};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The lane counts the generators accept: powers of two up to this.
pub const MAX_LANES: u32 = 1024;
/// The sublane counts the generators accept: powers of two up to this.
pub const MAX_SUBLANES: u32 = 64;
/// The largest vector, lanes x sublanes elements.
pub const MAX_VECTOR_ELEMS: u32 = 4096;
/// Vector registers: a power of two in this range (the instruction's register
/// fields are 6 bits wide; four registers are what the run CLI's programs
/// need at least).
pub const VREGS_RANGE: std::ops::RangeInclusive<u32> = 4..=64;
/// Vector memory depth in vector-wide words: a power of two in this range.
pub const VMEM_WORDS_RANGE: std::ops::RangeInclusive<u32> = 2..=1 << 20;
/// The largest vector memory, in elements (64 MiB of 32-bit elements).
pub const MAX_VMEM_ELEMS: u64 = 1 << 24;
/// Extra execute stages: 0 (today's single execute cycle) up to this, one
/// per pipeline cut of the element ALU (`vpu` crate docs, "Pipeline").
pub const MAX_DEPTH: u32 = 7;
/// Pipeline registers in a level of a reduction's fold at most: the fp32
/// adder's cuts (`hw::fp::FP32_ADD`; the sixth a register on the level's
/// operands after their select). A deeper VPU would only hold each level
/// longer.
pub const MAX_FOLD_STAGES: u32 = 6;

/// Which arithmetic units a VPU has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VpuUnits {
    /// int32 and fp32: every operation of the instruction set.
    Full,
    /// int32 only: no floating-point units (fp32 arithmetic, fp32 compares,
    /// conversions, fp32 reductions); their opcodes are illegal instructions.
    Int32,
}

impl VpuUnits {
    /// Every choice, in a fixed order.
    pub const ALL: [VpuUnits; 2] = [VpuUnits::Full, VpuUnits::Int32];

    /// The lowercase name used on command lines, in TOML and in module names.
    pub fn name(self) -> &'static str {
        match self {
            VpuUnits::Full => "full",
            VpuUnits::Int32 => "int32",
        }
    }

    /// Whether the fp32 units (and the conversions) are present.
    pub fn has_fp32(self) -> bool {
        self == VpuUnits::Full
    }
}

impl fmt::Display for VpuUnits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for VpuUnits {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        VpuUnits::ALL
            .into_iter()
            .find(|u| u.name() == s)
            .ok_or_else(|| ConfigError(format!("unknown VPU units '{s}' (expected full or int32)")))
    }
}

/// Configuration of the vector processing unit (VPU).
///
/// A vector holds W = `lanes` x `sublanes` 32-bit elements; element
/// `s * lanes + l` sits in lane `l` of sublane `s`. The register file holds
/// `vregs` vectors, the vector memory `vmem_words` vectors. `depth` extra
/// execute stages pipeline the element ALU (0: one execute cycle).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct VpuConfig {
    lanes: u32,
    sublanes: u32,
    vregs: u32,
    vmem_words: u32,
    units: VpuUnits,
    depth: u32,
    host_wmask: bool,
}

impl VpuConfig {
    /// What `gen --block vpu` builds and `sim vpu` runs on when given no
    /// flags: 8 lanes, one sublane, 32 registers, 1024 words of vector memory,
    /// every unit, no extra execute stages.
    pub const DEFAULT: VpuConfig = VpuConfig {
        lanes: 8,
        sublanes: 1,
        vregs: 32,
        vmem_words: 1024,
        units: VpuUnits::Full,
        depth: 0,
        host_wmask: false,
    };

    /// A validated configuration with the default register file, memory and
    /// units.
    pub fn new(lanes: u32, sublanes: u32) -> Result<Self, ConfigError> {
        let d = VpuConfig::DEFAULT;
        VpuConfig::with(lanes, sublanes, d.vregs, d.vmem_words, d.units)
    }

    /// A validated configuration: lanes and sublanes powers of two (at most
    /// [`MAX_LANES`], [`MAX_SUBLANES`], together at most [`MAX_VECTOR_ELEMS`]),
    /// `vregs` a power of two in [`VREGS_RANGE`], `vmem_words` a power of two
    /// in [`VMEM_WORDS_RANGE`] with at most [`MAX_VMEM_ELEMS`] elements in all.
    pub fn with(
        lanes: u32,
        sublanes: u32,
        vregs: u32,
        vmem_words: u32,
        units: VpuUnits,
    ) -> Result<Self, ConfigError> {
        let pow2 = |name: &str, v: u32, lo: u32, hi: u32| {
            if v.is_power_of_two() && (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(ConfigError(format!(
                    "VPU {name} must be a power of two between {lo} and {hi}, got {v}"
                )))
            }
        };
        pow2("lanes", lanes, 1, MAX_LANES)?;
        pow2("sublanes", sublanes, 1, MAX_SUBLANES)?;
        pow2("vregs", vregs, *VREGS_RANGE.start(), *VREGS_RANGE.end())?;
        pow2(
            "vmem_words",
            vmem_words,
            *VMEM_WORDS_RANGE.start(),
            *VMEM_WORDS_RANGE.end(),
        )?;
        let elems = lanes * sublanes;
        if elems > MAX_VECTOR_ELEMS {
            return Err(ConfigError(format!(
                "a VPU vector holds at most {MAX_VECTOR_ELEMS} elements, \
                 {lanes} lanes x {sublanes} sublanes is {elems}"
            )));
        }
        if u64::from(elems) * u64::from(vmem_words) > MAX_VMEM_ELEMS {
            return Err(ConfigError(format!(
                "VPU vector memory of {vmem_words} words of {elems} elements exceeds \
                 {MAX_VMEM_ELEMS} elements"
            )));
        }
        Ok(VpuConfig {
            lanes,
            sublanes,
            vregs,
            vmem_words,
            units,
            depth: 0,
            host_wmask: false,
        })
    }

    /// The same configuration with `depth` extra execute stages (0 to
    /// [`MAX_DEPTH`]).
    pub fn with_depth(&self, depth: u32) -> Result<Self, ConfigError> {
        if depth > MAX_DEPTH {
            return Err(ConfigError(format!(
                "VPU depth must be between 0 and {MAX_DEPTH}, got {depth}"
            )));
        }
        Ok(VpuConfig { depth, ..*self })
    }

    /// The same configuration with (or without) a per-element write mask on
    /// the host port (`host_wmask_i`): a host write then changes only the
    /// elements whose mask bit is set, so an element-serial mover (TensorCore
    /// v2's) writes one element without reading its word first.
    pub fn with_host_wmask(&self, host_wmask: bool) -> VpuConfig {
        VpuConfig {
            host_wmask,
            ..*self
        }
    }

    /// Whether the host port has a per-element write mask.
    pub fn host_wmask(&self) -> bool {
        self.host_wmask
    }

    /// Lanes: elements along the minor dimension of a vector.
    pub fn lanes(&self) -> u32 {
        self.lanes
    }

    /// Sublanes: elements along the major dimension of a vector.
    pub fn sublanes(&self) -> u32 {
        self.sublanes
    }

    /// W = lanes x sublanes, the elements of one vector.
    pub fn elems(&self) -> u32 {
        self.lanes * self.sublanes
    }

    /// Vector registers.
    pub fn vregs(&self) -> u32 {
        self.vregs
    }

    /// Vector memory depth in vector-wide words.
    pub fn vmem_words(&self) -> u32 {
        self.vmem_words
    }

    /// The arithmetic units.
    pub fn units(&self) -> VpuUnits {
        self.units
    }

    /// Extra execute stages: an element operation's result is ready
    /// `1 + depth` cycles after its operands (see the `vpu` crate docs).
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// The same configuration with other units.
    pub fn with_units(&self, units: VpuUnits) -> VpuConfig {
        VpuConfig { units, ..*self }
    }

    /// log2(W): the levels of a reduction's fold in halves.
    pub fn fold_levels(&self) -> u32 {
        self.elems().trailing_zeros()
    }

    /// Pipeline registers in each level of a reduction's fold: 0 at depth
    /// 0 (one combinational level per cycle), min(`depth`,
    /// [`MAX_FOLD_STAGES`]) otherwise (the fp32 adder of `hw::fp::FP32_ADD`
    /// plan at that many stages), with the fold's operands registered
    /// before the first level (`vpu` crate docs, "Pipeline").
    pub fn fold_stages(&self) -> u32 {
        self.depth.min(MAX_FOLD_STAGES)
    }

    /// Cycles a legal reduction holds the first execute stage (E): at depth
    /// 0, max(1, log2 W), one fold level per cycle; at depth d >= 1 with
    /// W >= 2, one cycle to register the operands and then s + 1 per level
    /// (the level's inputs held while its s-stage unit fills, s =
    /// [`VpuConfig::fold_stages`]), 1 + log2 W x (s + 1); W = 1 has nothing
    /// to fold: 1.
    pub fn reduction_cycles(&self) -> u32 {
        let levels = self.fold_levels();
        match (self.depth, levels) {
            (_, 0) => 1,
            (0, l) => l,
            (_, l) => 1 + l * (self.fold_stages() + 1),
        }
    }

    /// Parses the TOML form (`lanes = 8`, `sublanes = 1`, `vregs = 32`,
    /// `vmem_words = 1024`, `units = "full"`, `depth = 0`), missing keys taken from
    /// [`VpuConfig::DEFAULT`]; unknown keys are an error.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        let raw: RawVpuConfig =
            toml::from_str(text).map_err(|e| ConfigError(one_line(&e.to_string())))?;
        raw.validate()
    }

    /// The TOML form that [`VpuConfig::from_toml`] reads back.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("VpuConfig always serialises")
    }
}

impl Default for VpuConfig {
    fn default() -> Self {
        VpuConfig::DEFAULT
    }
}

impl fmt::Display for VpuConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}x{} ({} registers, {} memory words",
            self.units, self.lanes, self.sublanes, self.vregs, self.vmem_words
        )?;
        if self.depth > 0 {
            write!(f, ", depth {}", self.depth)?;
        }
        if self.host_wmask {
            f.write_str(", host write mask")?;
        }
        f.write_str(")")
    }
}

/// The unvalidated serde form; `Deserialize` for [`VpuConfig`] goes through it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVpuConfig {
    lanes: Option<u32>,
    sublanes: Option<u32>,
    vregs: Option<u32>,
    vmem_words: Option<u32>,
    units: Option<VpuUnits>,
    depth: Option<u32>,
    #[serde(default, deserialize_with = "crate::flag")]
    host_wmask: Option<bool>,
}

impl RawVpuConfig {
    fn validate(self) -> Result<VpuConfig, ConfigError> {
        let d = VpuConfig::DEFAULT;
        VpuConfig::with(
            self.lanes.unwrap_or(d.lanes),
            self.sublanes.unwrap_or(d.sublanes),
            self.vregs.unwrap_or(d.vregs),
            self.vmem_words.unwrap_or(d.vmem_words),
            self.units.unwrap_or(d.units),
        )?
        .with_depth(self.depth.unwrap_or(d.depth))
        .map(|c| c.with_host_wmask(self.host_wmask.unwrap_or(d.host_wmask)))
    }
}

impl<'de> Deserialize<'de> for VpuConfig {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        RawVpuConfig::deserialize(de)?
            .validate()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_must_be_powers_of_two_within_the_limits() {
        assert!(VpuConfig::new(8, 1).is_ok());
        assert!(VpuConfig::new(128, 8).is_ok());
        assert!(VpuConfig::new(1, 1).is_ok());
        for (l, s) in [(0, 1), (3, 1), (8, 3), (2048, 1), (1, 128), (1024, 8)] {
            assert!(VpuConfig::new(l, s).is_err(), "{l}x{s}");
        }
        assert!(VpuConfig::with(8, 1, 2, 64, VpuUnits::Full).is_err());
        assert!(VpuConfig::with(8, 1, 128, 64, VpuUnits::Full).is_err());
        assert!(VpuConfig::with(8, 1, 16, 100, VpuUnits::Full).is_err());
        assert!(VpuConfig::with(4096, 1, 16, 1 << 13, VpuUnits::Full).is_err());
        assert!(VpuConfig::with(1024, 4, 16, 4096, VpuUnits::Int32).is_ok());
    }

    #[test]
    fn toml_round_trips_and_errors_are_one_line() {
        let c = VpuConfig::with(4, 2, 16, 256, VpuUnits::Int32).unwrap();
        assert_eq!(VpuConfig::from_toml(&c.to_toml()).unwrap(), c);
        let deep = c.with_depth(MAX_DEPTH).unwrap();
        assert_eq!(VpuConfig::from_toml(&deep.to_toml()).unwrap(), deep);
        assert!(c.with_depth(MAX_DEPTH + 1).is_err());
        let masked = c.with_host_wmask(true);
        assert_eq!(VpuConfig::from_toml(&masked.to_toml()).unwrap(), masked);
        assert!(VpuConfig::from_toml("host_wmask = \"true\"")
            .unwrap()
            .host_wmask());
        assert!(!VpuConfig::from_toml("host_wmask = false")
            .unwrap()
            .host_wmask());
        let partial = VpuConfig::from_toml("lanes = 16").unwrap();
        assert_eq!((partial.lanes(), partial.sublanes()), (16, 1));
        for bad in [
            "lanes = 0",
            "lane = 4",
            "units = \"fp64\"",
            "vregs = 3",
            "depth = 8",
            "host_wmask = \"yes\"",
            "[[",
        ] {
            let err = VpuConfig::from_toml(bad).unwrap_err().to_string();
            assert!(!err.contains('\n') && !err.is_empty(), "{bad}: {err}");
        }
    }

    #[test]
    fn fold_levels_are_log2_of_the_vector() {
        assert_eq!(VpuConfig::new(1, 1).unwrap().fold_levels(), 0);
        assert_eq!(VpuConfig::new(8, 1).unwrap().fold_levels(), 3);
        assert_eq!(VpuConfig::new(128, 8).unwrap().fold_levels(), 10);
    }

    #[test]
    fn reduction_cycles_grow_with_the_fold_stages() {
        let at = |l: u32, d: u32| {
            VpuConfig::new(l, 1)
                .unwrap()
                .with_depth(d)
                .unwrap()
                .reduction_cycles()
        };
        assert_eq!((at(1, 0), at(2, 0), at(8, 0)), (1, 1, 3));
        assert_eq!((at(1, 5), at(2, 1), at(4, 5), at(8, 5)), (1, 3, 13, 19));
        // The fp32 adder's sixth cut, on each level's operands: one more
        // cycle per level.
        assert_eq!((at(1, 6), at(4, 6), at(8, 6)), (1, 15, 22));
        // Past the adder's cuts the levels keep six registers.
        assert_eq!((at(1, 7), at(4, 7), at(8, 7)), (1, 15, 22));
    }
}

//! One configuration type per block, shared by everything that must agree on it.
//!
//! The RTL generator (`hw/<block>`), the bit-exact golden model (`golden`) and the
//! simulator driver (`sim`) all take the *same* value of the same type, so a model
//! cannot silently describe a different array than the RTL it is compared against.
//! It depends on neither `hw` nor `golden`, which is why it is a crate of its own:
//! those two may not depend on each other.
//!
//! What it holds:
//! - the configuration types, their validation and their TOML form. Every
//!   constructor validates: a configuration value that exists is a legal one.
//!   Deserialised values (from `gen --config FILE`) go through the same check.
//! - the host-side decisions that several crates must make identically and
//!   that follow from a configuration alone: [`mxu_plan`], how a matmul is cut
//!   into the MXU's weight tiles and passes over its accumulator (shared by the
//!   golden cycle model, the simulator's driver and the board client). Nothing
//!   here models the RTL.
//! - [`vpu_isa`]: the vector unit's opcode numbers and bundle encoding, the
//!   spelling that the RTL's decoder, the golden model and every program
//!   writer (driver, run CLI, tests) must share. What the operations do is
//!   documented with the hardware and modelled in `golden`, each on its own.
//! - [`TensorCoreConfig`] and [`tensorcore_isa`]: the TensorCore's sizes and
//!   its sequencer's instruction words, shared in the same way by the
//!   compiler, the golden TensorCore and the hardware.
//! - [`TensorCore2Config`] and [`tensorcore2_isa`]: the same for TensorCore
//!   v2 (the VPU, the EUP and the MXU in int8 mode under one sequencer).
//! - [`EupConfig`] (the transcendental unit's pipeline) and [`gpt`]: a
//!   transformer's dimensions and parameters, the one description the
//!   model-folder loader, the golden model and the compiler share.

pub mod eup;
pub mod gpt;
pub mod ici;
pub mod mxu_plan;
pub mod sparsecore;
pub mod stream_crc;
pub mod tensorcore;
pub mod tensorcore2;
pub mod tensorcore2_isa;
pub mod tensorcore_isa;
pub mod torus;
pub mod vpu;
pub mod vpu_isa;

pub use eup::{EupConfig, EupOp};
pub use gpt::{GptDims, GptLayer, GptModel};
pub use sparsecore::SparseCoreConfig;
pub use stream_crc::{CrcAlgorithm, StreamCrcConfig};
pub use tensorcore::TensorCoreConfig;
pub use tensorcore2::TensorCore2Config;
pub use vpu::{VpuConfig, VpuUnits};

pub use ici::{IciConfig, ICI_CRC_BITS, ICI_KIND_BITS, ICI_MAX_DEPTH};
pub use torus::{
    AllreduceV2, Packet, TorusConfig, Wiring, LOCAL_PORT, TORUS_LOCAL_DEPTH, TORUS_MAX_DEPTH,
    TORUS_PORTS, TORUS_VCS, TORUS_VC_COUNTS,
};

use serde::{Deserialize, Serialize};
use std::fmt;

/// The accumulator depths the generators accept (rows of C results each).
pub const ACC_ROWS_RANGE: std::ops::RangeInclusive<u32> = 2..=65536;

/// The MXU pipeline depths the generators accept: registers added inside each
/// processing element and before the accumulator's adder, in the order
/// `hw/mxu/TIMING.md` ("Pipeline depth") lists them. 0 is the unpipelined
/// array; 4 splits the multipliers and (bf16) the fp32 adders into stages; 5
/// registers each multiplier's operands once more beside it.
pub const MXU_DEPTH_RANGE: std::ops::RangeInclusive<u32> = 0..=5;

/// The largest array dimension the generators accept. 1024 is four times the
/// TPUv1 array; larger arrays are refused rather than silently taking hours.
pub const MAX_ARRAY_DIM: u32 = 1024;

/// Why a configuration was refused. The message is one line, meant for users.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// Element type of the matrix unit's operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElemType {
    /// int8 x int8 products summed in int32 with wraparound.
    Int8,
    /// bf16 x bf16 products summed in fp32 (FTZ-RNE, `docs/numerics.md#bf16-matmul`).
    Bf16,
}

impl ElemType {
    /// Every element type, in a fixed order (for CLIs and test matrices).
    pub const ALL: [ElemType; 2] = [ElemType::Int8, ElemType::Bf16];

    /// The lowercase name used on command lines, in TOML and in module names.
    pub fn name(self) -> &'static str {
        match self {
            ElemType::Int8 => "int8",
            ElemType::Bf16 => "bf16",
        }
    }

    /// Bits of one operand element.
    pub fn operand_bits(self) -> u32 {
        match self {
            ElemType::Int8 => 8,
            ElemType::Bf16 => 16,
        }
    }

    /// Bits of one accumulator / result element (int32 or fp32).
    pub fn result_bits(self) -> u32 {
        32
    }
}

impl fmt::Display for ElemType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for ElemType {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        ElemType::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = ElemType::ALL.iter().map(|t| t.name()).collect();
                ConfigError(format!(
                    "unknown element type '{s}' (expected one of: {})",
                    names.join(", ")
                ))
            })
    }
}

/// Configuration of the weight-stationary matrix unit (MXU).
///
/// `rows` is the K direction (one weight row per array row), `cols` the N
/// direction (one output column per array column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct MxuConfig {
    rows: u32,
    cols: u32,
    dtype: ElemType,
    acc_rows: u32,
    depth: u32,
    whole_rows: u32,
    int8_mode: bool,
}

impl MxuConfig {
    /// The configuration `gen` emits when given no flags: an 8x8 int8 array
    /// with 256 accumulator rows, small enough for hobbyist FPGAs and fast to
    /// simulate.
    pub const DEFAULT: MxuConfig = MxuConfig {
        rows: 8,
        cols: 8,
        dtype: ElemType::Int8,
        acc_rows: 256,
        depth: 0,
        whole_rows: 0,
        int8_mode: false,
    };

    /// A validated configuration with the default accumulator depth:
    /// `1 <= rows, cols <= MAX_ARRAY_DIM`.
    pub fn new(rows: u32, cols: u32, dtype: ElemType) -> Result<Self, ConfigError> {
        MxuConfig::with_acc_rows(rows, cols, dtype, MxuConfig::DEFAULT.acc_rows)
    }

    /// A validated configuration; `acc_rows` must be a power of two in
    /// [`ACC_ROWS_RANGE`].
    pub fn with_acc_rows(
        rows: u32,
        cols: u32,
        dtype: ElemType,
        acc_rows: u32,
    ) -> Result<Self, ConfigError> {
        for (name, value) in [("rows", rows), ("cols", cols)] {
            if value == 0 || value > MAX_ARRAY_DIM {
                return Err(ConfigError(format!(
                    "MXU {name} must be between 1 and {MAX_ARRAY_DIM}, got {value}"
                )));
            }
        }
        if !ACC_ROWS_RANGE.contains(&acc_rows) || !acc_rows.is_power_of_two() {
            return Err(ConfigError(format!(
                "MXU acc_rows must be a power of two between {} and {}, got {acc_rows}",
                ACC_ROWS_RANGE.start(),
                ACC_ROWS_RANGE.end()
            )));
        }
        Ok(MxuConfig {
            rows,
            cols,
            dtype,
            acc_rows,
            depth: 0,
            whole_rows: 0,
            int8_mode: false,
        })
    }

    /// This configuration with pipeline depth `depth`, which must lie in
    /// [`MXU_DEPTH_RANGE`]: the registers added in each processing element
    /// (and, at the largest depth, before the accumulator's adder), as
    /// `hw/mxu/TIMING.md` places them. The results are the same bits at every
    /// depth; the latencies grow (see `mxu::Timing`).
    pub fn with_depth(self, depth: u32) -> Result<Self, ConfigError> {
        if !MXU_DEPTH_RANGE.contains(&depth) {
            return Err(ConfigError(format!(
                "MXU depth must be between {} and {}, got {depth}",
                MXU_DEPTH_RANGE.start(),
                MXU_DEPTH_RANGE.end()
            )));
        }
        Ok(MxuConfig { depth, ..self })
    }

    /// This configuration with its first `whole_rows` rows of processing
    /// elements multiplying with one 8 x 8 multiplier each where the int8
    /// PEs of depth 4 and 5 otherwise split theirs into two half multipliers
    /// (`hw/mxu/TIMING.md`). A half is half as deep in LUTs; a DSP block
    /// holds a whole product as fast, so a part's DSP blocks go furthest on
    /// whole products (the ECP5-85F's 156 hold nine rows of a 16x16 array
    /// whole, or 156 halves). At most `rows`; it changes no bit and no cycle,
    /// and nothing for bf16 or below depth 4, where every PE has one
    /// multiplier.
    pub fn with_whole_rows(self, whole_rows: u32) -> Result<Self, ConfigError> {
        if whole_rows > self.rows {
            return Err(ConfigError(format!(
                "MXU whole_rows must be at most rows ({}), got {whole_rows}",
                self.rows
            )));
        }
        Ok(MxuConfig { whole_rows, ..self })
    }

    /// This configuration with int8 mode on or off. A bf16 array in int8
    /// mode also computes int8 rows: each activation row carries a mode bit
    /// (`a_int8_i`), and a row with it set multiplies the low bytes of its
    /// lanes and of the weights as int8 and sums the products in wrapping
    /// int32 (`docs/numerics.md`, "int8 matmul"), at the bf16 array's
    /// timing. One array then serves both a quantized model and a bf16 one.
    /// Only a bf16 array has it: an int8 array computes int8 already.
    pub fn with_int8_mode(self, int8_mode: bool) -> Result<Self, ConfigError> {
        if int8_mode && self.dtype != ElemType::Bf16 {
            return Err(ConfigError(format!(
                "MXU int8_mode is an option of the bf16 array, not of dtype {}",
                self.dtype
            )));
        }
        Ok(MxuConfig { int8_mode, ..self })
    }

    /// Array rows R: the K extent of one weight tile.
    pub fn rows(&self) -> u32 {
        self.rows
    }

    /// Array columns C: the N extent of one weight tile.
    pub fn cols(&self) -> u32 {
        self.cols
    }

    /// Operand element type.
    pub fn dtype(&self) -> ElemType {
        self.dtype
    }

    /// Rows of the accumulator memory (each holds C results): the largest M
    /// one pass of a matmul can produce.
    pub fn acc_rows(&self) -> u32 {
        self.acc_rows
    }

    /// Pipeline depth: registers added in each processing element (and before
    /// the accumulator's adder); 0 is the unpipelined array.
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// Rows of processing elements (from row 0) whose product is one
    /// multiplier at int8 depths 4 and 5 ([`MxuConfig::with_whole_rows`]).
    pub fn whole_rows(&self) -> u32 {
        self.whole_rows
    }

    /// Whether the bf16 array also computes int8 rows
    /// ([`MxuConfig::with_int8_mode`]).
    pub fn int8_mode(&self) -> bool {
        self.int8_mode
    }

    /// Whether `whole_rows` changes the array: int8 at depth 4 or 5 (where
    /// the PEs split their products) with `whole_rows` above 0.
    pub fn whole_rows_in_effect(&self) -> bool {
        self.dtype == ElemType::Int8 && self.depth >= 4 && self.whole_rows > 0
    }

    /// Parameters as (name, value) pairs, in a fixed order, for file headers
    /// and logs. The depth, `whole_rows` and `int8_mode` are listed when they
    /// are not their defaults, so that the files of an array without them are
    /// the ones it has always had.
    pub fn params(&self) -> Vec<(String, String)> {
        let mut params = vec![
            ("dtype".to_string(), self.dtype.to_string()),
            ("rows".to_string(), self.rows.to_string()),
            ("cols".to_string(), self.cols.to_string()),
            ("acc_rows".to_string(), self.acc_rows.to_string()),
        ];
        if self.depth != 0 {
            params.push(("depth".to_string(), self.depth.to_string()));
        }
        if self.whole_rows != 0 {
            params.push(("whole_rows".to_string(), self.whole_rows.to_string()));
        }
        if self.int8_mode {
            params.push(("int8_mode".to_string(), "true".to_string()));
        }
        params
    }

    /// Parses the TOML form, e.g. `rows = 16`, `cols = 16`, `dtype = "int8"`,
    /// `acc_rows = 512`, `depth = 2`, `whole_rows = 9`, `int8_mode = true`,
    /// with missing keys taken from [`MxuConfig::DEFAULT`]. Unknown keys are an error so
    /// that a typo is not silently ignored.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        let raw: RawMxuConfig =
            toml::from_str(text).map_err(|e| ConfigError(one_line(&e.to_string())))?;
        raw.validate()
    }

    /// The TOML form that [`MxuConfig::from_toml`] reads back.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("MxuConfig always serialises")
    }
}

impl Default for MxuConfig {
    fn default() -> Self {
        MxuConfig::DEFAULT
    }
}

impl fmt::Display for MxuConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}x{} ({} accumulator rows",
            self.dtype, self.rows, self.cols, self.acc_rows
        )?;
        if self.depth != 0 {
            write!(f, ", depth {}", self.depth)?;
        }
        if self.whole_rows != 0 {
            write!(f, ", {} whole rows", self.whole_rows)?;
        }
        if self.int8_mode {
            f.write_str(", int8 mode")?;
        }
        f.write_str(")")
    }
}

/// The unvalidated serde form; `Deserialize` for [`MxuConfig`] goes through it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMxuConfig {
    rows: Option<u32>,
    cols: Option<u32>,
    dtype: Option<ElemType>,
    acc_rows: Option<u32>,
    depth: Option<u32>,
    whole_rows: Option<u32>,
    #[serde(default, deserialize_with = "flag")]
    int8_mode: Option<bool>,
}

/// A yes/no key: a TOML boolean, or its name as a string (`"true"`,
/// `"false"`), which is how a tool hands over a choice made on its command
/// line (`gen --int8-mode true`).
pub(crate) fn flag<'de, D: serde::Deserializer<'de>>(de: D) -> Result<Option<bool>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Flag {
        Bool(bool),
        Name(String),
    }
    match Flag::deserialize(de)? {
        Flag::Bool(b) => Ok(Some(b)),
        Flag::Name(n) => match n.as_str() {
            "true" => Ok(Some(true)),
            "false" => Ok(Some(false)),
            _ => Err(serde::de::Error::custom(format!(
                "expected true or false, got '{n}'"
            ))),
        },
    }
}

impl RawMxuConfig {
    fn validate(self) -> Result<MxuConfig, ConfigError> {
        let d = MxuConfig::DEFAULT;
        MxuConfig::with_acc_rows(
            self.rows.unwrap_or(d.rows),
            self.cols.unwrap_or(d.cols),
            self.dtype.unwrap_or(d.dtype),
            self.acc_rows.unwrap_or(d.acc_rows),
        )?
        .with_depth(self.depth.unwrap_or(d.depth))?
        .with_whole_rows(self.whole_rows.unwrap_or(d.whole_rows))?
        .with_int8_mode(self.int8_mode.unwrap_or(d.int8_mode))
    }
}

impl<'de> Deserialize<'de> for MxuConfig {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        RawMxuConfig::deserialize(de)?
            .validate()
            .map_err(serde::de::Error::custom)
    }
}

/// Joins a multi-line parser message into one line for CLI error output.
pub fn one_line(msg: &str) -> String {
    msg.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_and_oversized_dimensions_are_refused() {
        assert!(MxuConfig::new(0, 4, ElemType::Int8).is_err());
        assert!(MxuConfig::new(4, 0, ElemType::Int8).is_err());
        assert!(MxuConfig::new(MAX_ARRAY_DIM + 1, 4, ElemType::Int8).is_err());
        assert!(MxuConfig::new(1, MAX_ARRAY_DIM, ElemType::Int8).is_ok());
        assert!(MxuConfig::with_acc_rows(4, 4, ElemType::Bf16, 100).is_err());
        assert!(MxuConfig::with_acc_rows(4, 4, ElemType::Bf16, 1).is_err());
        assert!(MxuConfig::with_acc_rows(4, 4, ElemType::Bf16, 1 << 17).is_err());
        assert!(MxuConfig::with_acc_rows(4, 4, ElemType::Bf16, 64).is_ok());
        let c = MxuConfig::new(4, 4, ElemType::Int8).unwrap();
        assert_eq!(c.depth(), 0);
        assert!(c.with_depth(*MXU_DEPTH_RANGE.end()).is_ok());
        assert!(c.with_depth(MXU_DEPTH_RANGE.end() + 1).is_err());
        assert!(c.with_whole_rows(4).is_ok());
        assert!(c.with_whole_rows(5).is_err());
    }

    #[test]
    fn toml_round_trips_and_defaults_fill_missing_keys() {
        let c = MxuConfig::with_acc_rows(3, 5, ElemType::Bf16, 64)
            .unwrap()
            .with_depth(2)
            .unwrap()
            .with_whole_rows(2)
            .unwrap();
        assert_eq!(MxuConfig::from_toml(&c.to_toml()).unwrap(), c);
        let partial = MxuConfig::from_toml("rows = 16").unwrap();
        assert_eq!((partial.rows(), partial.cols()), (16, 8));
    }

    #[test]
    fn toml_errors_are_one_line() {
        for bad in [
            "rows = 0",
            "rowz = 3",
            "dtype = \"fp64\"",
            "rows = \"x\"",
            "[[[",
            "acc_rows = 3",
            "depth = 99",
            "rows = 4\nwhole_rows = 5",
            "int8_mode = true",
            "dtype = \"bf16\"\nint8_mode = \"yes\"",
            "dtype = \"bf16\"\nint8_mode = 1",
        ] {
            let err = MxuConfig::from_toml(bad).unwrap_err().to_string();
            assert!(!err.contains('\n'), "{bad}: {err}");
            assert!(!err.is_empty());
        }
    }

    #[test]
    fn int8_mode_is_a_bf16_option_named_only_when_on() {
        let int8 = MxuConfig::new(4, 4, ElemType::Int8).unwrap();
        assert!(int8.with_int8_mode(false).is_ok());
        let err = int8.with_int8_mode(true).unwrap_err().to_string();
        assert!(err.contains("bf16") && !err.contains('\n'), "{err}");
        let bf16 = MxuConfig::new(4, 4, ElemType::Bf16).unwrap();
        assert!(!bf16.int8_mode());
        let dual = bf16.with_depth(2).unwrap().with_int8_mode(true).unwrap();
        assert!(dual.int8_mode());
        assert_eq!(MxuConfig::from_toml(&dual.to_toml()).unwrap(), dual);
        // The flag's name, as a command line hands it over, reads as the flag.
        for text in ["int8_mode = true", "int8_mode = \"true\""] {
            let c = MxuConfig::from_toml(&format!("dtype = \"bf16\"\n{text}")).unwrap();
            assert!(c.int8_mode(), "{text}");
        }
        assert_eq!(
            MxuConfig::from_toml("int8_mode = \"false\"").unwrap(),
            MxuConfig::DEFAULT
        );
        // Off, the parameters (the files' headers) are what they were.
        assert_eq!(bf16.params().len(), 4);
        let last = dual.params().pop().unwrap();
        assert_eq!(last, ("int8_mode".to_string(), "true".to_string()));
        assert!(
            dual.to_string().ends_with(", depth 2, int8 mode)"),
            "{dual}"
        );
    }

    #[test]
    fn elem_type_parses_its_own_names_only() {
        for t in ElemType::ALL {
            assert_eq!(t.name().parse::<ElemType>().unwrap(), t);
        }
        assert!("INT8".parse::<ElemType>().is_err());
    }
}

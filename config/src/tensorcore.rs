//! The TensorCore's configuration: the MXU it holds and the memories around
//! it. `hw/tensorcore` documents what each memory is for and the timing
//! contract; `compiler` lays programs out in them; `golden::tensorcore` runs
//! those programs on the same sizes.

use crate::{one_line, ConfigError, ElemType, MxuConfig, ACC_ROWS_RANGE, MAX_ARRAY_DIM};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Largest accumulator depth a TensorCore takes: an instruction's row count
/// is 16 bits, and a pass over the accumulator must fit one instruction.
pub const MAX_TC_ACC_ROWS: u32 = 32768;

/// Largest size of any TensorCore memory in rows: an address field of the
/// instruction word is 22 bits (`tensorcore_isa::ADDR_BITS`).
pub const MAX_TC_MEM_ROWS: u32 = 1 << 22;

/// Largest bias memory in rows: the bias-row field is 16 bits.
pub const MAX_TC_BIAS_ROWS: u32 = 1 << 16;

/// The pipeline depths a TensorCore takes (`hw/tensorcore` documents what
/// each adds). 0 is the unpipelined design.
pub const TC_DEPTH_RANGE: std::ops::RangeInclusive<u32> = 0..=MAX_TC_DEPTH;

/// The deepest TensorCore pipeline.
pub const MAX_TC_DEPTH: u32 = 4;

/// Configuration of a TensorCore: an int8 MXU of `rows` x `cols` with
/// `acc_rows` accumulator rows, a unified buffer of `ub_rows` rows of `rows`
/// int8 activations, a weight memory of `weight_rows` rows of `cols` int8
/// weights, a bias memory of `bias_rows` rows of `cols` int32 biases, and a
/// queue of `weight_queue` pending weight reads; `depth` pipeline registers
/// (0 to [`MAX_TC_DEPTH`]) in the MXU, the activation unit and the sequencer.
///
/// The array is square (`rows == cols`): the activation unit turns one
/// accumulator row of C results into one unified-buffer row that the next
/// layer streams as R activations, so C must equal R for that row to be one
/// buffer word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct TensorCoreConfig {
    rows: u32,
    cols: u32,
    acc_rows: u32,
    ub_rows: u32,
    weight_rows: u32,
    bias_rows: u32,
    weight_queue: u32,
    depth: u32,
}

impl TensorCoreConfig {
    /// The default: an 8x8 array with 512 accumulator rows, a 32768-row
    /// unified buffer, 65536 weight rows, 1024 bias rows and a weight queue of 4.
    pub const DEFAULT: TensorCoreConfig = TensorCoreConfig {
        rows: 8,
        cols: 8,
        acc_rows: 512,
        ub_rows: 32768,
        weight_rows: 65536,
        bias_rows: 1024,
        weight_queue: 4,
        depth: 0,
    };

    /// The default memories around an R x C array.
    pub fn new(rows: u32, cols: u32) -> Result<Self, ConfigError> {
        let d = TensorCoreConfig::DEFAULT;
        TensorCoreConfig { rows, cols, ..d }.validate()
    }

    /// A validated configuration from every field.
    pub fn with(
        rows: u32,
        cols: u32,
        acc_rows: u32,
        ub_rows: u32,
        weight_rows: u32,
        bias_rows: u32,
        weight_queue: u32,
    ) -> Result<Self, ConfigError> {
        TensorCoreConfig {
            rows,
            cols,
            acc_rows,
            ub_rows,
            weight_rows,
            bias_rows,
            weight_queue,
            depth: 0,
        }
        .validate()
    }

    /// This configuration with pipeline depth `depth` (in [`TC_DEPTH_RANGE`]).
    pub fn with_depth(self, depth: u32) -> Result<Self, ConfigError> {
        TensorCoreConfig { depth, ..self }.validate()
    }

    fn validate(self) -> Result<Self, ConfigError> {
        for (name, v) in [("rows", self.rows), ("cols", self.cols)] {
            if v == 0 || v > MAX_ARRAY_DIM {
                return Err(ConfigError(format!(
                    "TensorCore {name} must be between 1 and {MAX_ARRAY_DIM}, got {v}"
                )));
            }
        }
        if self.rows != self.cols {
            return Err(ConfigError(format!(
                "the TensorCore needs a square MXU (rows == cols: one accumulator row becomes \
                 one unified-buffer row), got {}x{}",
                self.rows, self.cols
            )));
        }
        if !self.acc_rows.is_power_of_two()
            || self.acc_rows < *ACC_ROWS_RANGE.start()
            || self.acc_rows > MAX_TC_ACC_ROWS
        {
            return Err(ConfigError(format!(
                "TensorCore acc_rows must be a power of two between {} and {MAX_TC_ACC_ROWS}, got {}",
                ACC_ROWS_RANGE.start(),
                self.acc_rows
            )));
        }
        for (name, v, max) in [
            ("ub_rows", self.ub_rows, MAX_TC_MEM_ROWS),
            ("weight_rows", self.weight_rows, MAX_TC_MEM_ROWS),
            ("bias_rows", self.bias_rows, MAX_TC_BIAS_ROWS),
        ] {
            if !v.is_power_of_two() || v < 2 || v > max {
                return Err(ConfigError(format!(
                    "TensorCore {name} must be a power of two between 2 and {max}, got {v}"
                )));
            }
        }
        if !(2..=16).contains(&self.weight_queue) {
            return Err(ConfigError(format!(
                "TensorCore weight_queue must be between 2 and 16 (two tiles in flight keep the \
                 array fed), got {}",
                self.weight_queue
            )));
        }
        if !TC_DEPTH_RANGE.contains(&self.depth) {
            return Err(ConfigError(format!(
                "TensorCore depth must be between {} and {}, got {}",
                TC_DEPTH_RANGE.start(),
                TC_DEPTH_RANGE.end(),
                self.depth
            )));
        }
        Ok(self)
    }

    /// Array rows R (the K extent of a weight tile, the width of a buffer row).
    pub fn rows(&self) -> u32 {
        self.rows
    }

    /// Array columns C (the N extent of a weight tile).
    pub fn cols(&self) -> u32 {
        self.cols
    }

    /// Accumulator rows (each holds C int32 results).
    pub fn acc_rows(&self) -> u32 {
        self.acc_rows
    }

    /// Unified-buffer rows (each holds R int8 activations).
    pub fn ub_rows(&self) -> u32 {
        self.ub_rows
    }

    /// Weight-memory rows (each holds C int8 weights; a tile is R rows).
    pub fn weight_rows(&self) -> u32 {
        self.weight_rows
    }

    /// Bias-memory rows (each holds C int32 biases).
    pub fn bias_rows(&self) -> u32 {
        self.bias_rows
    }

    /// Weight reads (`RW` requests) the weight engine holds, the one in
    /// progress included.
    pub fn weight_queue(&self) -> u32 {
        self.weight_queue
    }

    /// Pipeline depth: 0 is the unpipelined design; `hw/tensorcore`'s
    /// crate docs list the registers each depth adds and the latencies.
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// The MXU inside: int8, R x C, `acc_rows` accumulator rows, at the
    /// MXU depth [`TensorCoreConfig::mxu_depth`].
    pub fn mxu(&self) -> MxuConfig {
        MxuConfig::with_acc_rows(self.rows, self.cols, ElemType::Int8, self.acc_rows)
            .and_then(|m| m.with_depth(self.mxu_depth()))
            .expect("a valid TensorCore holds a valid MXU")
    }

    /// The depth of the MXU inside: the TensorCore's, up to 2 (the MXU's
    /// product and operand registers; its depth 3 would widen the gap its
    /// accumulator's read-modify-write needs between two rows of one
    /// address, a rule the programs would have to keep).
    pub fn mxu_depth(&self) -> u32 {
        self.depth.min(2)
    }

    /// Parameters as (name, value) pairs, in a fixed order; `depth` only
    /// when it is not 0.
    pub fn params(&self) -> Vec<(String, String)> {
        [
            ("rows", self.rows),
            ("cols", self.cols),
            ("acc_rows", self.acc_rows),
            ("ub_rows", self.ub_rows),
            ("weight_rows", self.weight_rows),
            ("bias_rows", self.bias_rows),
            ("weight_queue", self.weight_queue),
            ("depth", self.depth),
        ]
        .into_iter()
        // Depth 0's files keep the header they had before depths existed.
        .filter(|&(k, v)| k != "depth" || v != 0)
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    /// Parses the TOML form; missing keys take [`TensorCoreConfig::DEFAULT`]'s
    /// values, unknown keys are an error.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        let raw: RawTensorCoreConfig =
            toml::from_str(text).map_err(|e| ConfigError(one_line(&e.to_string())))?;
        raw.validate()
    }

    /// The TOML form that [`TensorCoreConfig::from_toml`] reads back.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("TensorCoreConfig always serialises")
    }
}

impl Default for TensorCoreConfig {
    fn default() -> Self {
        TensorCoreConfig::DEFAULT
    }
}

impl fmt::Display for TensorCoreConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TensorCore int8 {}x{} ({} accumulator rows, {} buffer rows, {} weight rows, {} bias rows, weight queue {}",
            self.rows,
            self.cols,
            self.acc_rows,
            self.ub_rows,
            self.weight_rows,
            self.bias_rows,
            self.weight_queue
        )?;
        if self.depth != 0 {
            write!(f, ", depth {}", self.depth)?;
        }
        f.write_str(")")
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTensorCoreConfig {
    rows: Option<u32>,
    cols: Option<u32>,
    acc_rows: Option<u32>,
    ub_rows: Option<u32>,
    weight_rows: Option<u32>,
    bias_rows: Option<u32>,
    weight_queue: Option<u32>,
    depth: Option<u32>,
}

impl RawTensorCoreConfig {
    fn validate(self) -> Result<TensorCoreConfig, ConfigError> {
        let d = TensorCoreConfig::DEFAULT;
        TensorCoreConfig::with(
            self.rows.unwrap_or(d.rows),
            self.cols.unwrap_or(d.cols),
            self.acc_rows.unwrap_or(d.acc_rows),
            self.ub_rows.unwrap_or(d.ub_rows),
            self.weight_rows.unwrap_or(d.weight_rows),
            self.bias_rows.unwrap_or(d.bias_rows),
            self.weight_queue.unwrap_or(d.weight_queue),
        )?
        .with_depth(self.depth.unwrap_or(d.depth))
    }
}

impl<'de> Deserialize<'de> for TensorCoreConfig {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        RawTensorCoreConfig::deserialize(de)?
            .validate()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_valid_and_round_trips() {
        let d = TensorCoreConfig::DEFAULT;
        assert_eq!(TensorCoreConfig::from_toml(&d.to_toml()).unwrap(), d);
        assert_eq!(TensorCoreConfig::new(8, 8).unwrap(), d);
        assert_eq!(d.mxu().acc_rows(), 512);
        assert_eq!((d.depth(), d.mxu().depth()), (0, 0));
        let deep = d.with_depth(MAX_TC_DEPTH).unwrap();
        assert_eq!(TensorCoreConfig::from_toml(&deep.to_toml()).unwrap(), deep);
        assert_eq!(deep.mxu().depth(), deep.mxu_depth());
        assert!(d.with_depth(MAX_TC_DEPTH + 1).is_err());
        assert!(!d.params().iter().any(|(k, _)| k == "depth"));
        assert!(deep.params().iter().any(|(k, _)| k == "depth"));
    }

    #[test]
    fn bad_values_are_refused_in_one_line() {
        for bad in [
            "rows = 0",
            "rows = 4\ncols = 8",
            "acc_rows = 65536",
            "acc_rows = 100",
            "ub_rows = 3",
            "weight_rows = 0",
            "bias_rows = 8388608",
            "weight_queue = 1",
            "weight_queue = 17",
            "depth = 99",
            "colz = 4",
        ] {
            let err = TensorCoreConfig::from_toml(bad).unwrap_err().to_string();
            assert!(!err.contains('\n') && !err.is_empty(), "{bad}: {err}");
        }
        assert!(TensorCoreConfig::new(4, 8)
            .unwrap_err()
            .to_string()
            .contains("square"));
    }
}

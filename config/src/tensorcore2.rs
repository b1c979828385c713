//! TensorCore v2's configuration: the VPU that is its vector unit (whose
//! vector memory is the unified buffer), the EUP beside it, the bf16 MXU in
//! int8 mode and the memories around them. `docs/tensorcore2.md` and
//! `hw/tensorcore2` document the machine; `compiler` lays programs out in
//! it; `golden::tensorcore2` runs those programs on the same sizes.

use crate::vpu::{MAX_DEPTH as MAX_VPU_DEPTH, MAX_VMEM_ELEMS};
use crate::{
    one_line, ConfigError, ElemType, EupConfig, MxuConfig, VpuConfig, VpuUnits, ACC_ROWS_RANGE,
    MXU_DEPTH_RANGE,
};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The largest MXU a TensorCore v2 takes (R = C).
pub const MAX_TC2_ARRAY: u32 = 64;

/// Largest accumulator depth: the instructions' accumulator-row field is 16
/// bits.
pub const MAX_TC2_ACC_ROWS: u32 = 1 << 16;

/// Largest weight memory in rows: a weight-row field is 24 bits.
pub const MAX_TC2_WEIGHT_ROWS: u32 = 1 << 24;

/// Largest unified buffer in elements: an element-address field is 24 bits.
pub const MAX_TC2_VMEM_ELEMS: u64 = 1 << 24;

/// Configuration of a TensorCore v2.
///
/// - MXU: a bf16 `rows` x `rows` array in int8 mode (`MxuConfig::with_int8_mode`)
///   with `acc_rows` accumulator rows, at `mxu_depth`;
/// - VPU: `lanes` x `sublanes` elements per vector, `vregs` registers,
///   `vmem_words` words of vector memory (the unified buffer), every unit,
///   at `vpu_depth`;
/// - EUP: the three stage counts of `config::EupConfig`;
/// - the weight memory: `weight_rows` rows of C bf16 patterns (int8 rows
///   use their low bytes), and a queue of `weight_queue` pending weight reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct TensorCore2Config {
    rows: u32,
    lanes: u32,
    sublanes: u32,
    vregs: u32,
    vmem_words: u32,
    acc_rows: u32,
    weight_rows: u32,
    weight_queue: u32,
    mxu_depth: u32,
    vpu_depth: u32,
    eup_recurrence_stages: u32,
    eup_mul_stages: u32,
    eup_add_stages: u32,
}

impl TensorCore2Config {
    /// The default: an 8x8 MXU with 256 accumulator rows, an 8 x 1 VPU with
    /// 32 registers and 4096 words (32,768 elements) of unified buffer, the
    /// default EUP, 16,384 weight rows and a weight queue of 4.
    pub const DEFAULT: TensorCore2Config = TensorCore2Config {
        rows: 8,
        lanes: 8,
        sublanes: 1,
        vregs: 32,
        vmem_words: 4096,
        acc_rows: 256,
        weight_rows: 16384,
        weight_queue: 4,
        mxu_depth: 0,
        vpu_depth: 0,
        eup_recurrence_stages: EupConfig::DEFAULT.recurrence_stages(),
        eup_mul_stages: EupConfig::DEFAULT.mul_stages(),
        eup_add_stages: EupConfig::DEFAULT.add_stages(),
    };

    /// The default with an R x R MXU and a `lanes` x `sublanes` VPU whose
    /// unified buffer keeps the default's 32,768 elements (at least two words).
    pub fn new(rows: u32, lanes: u32, sublanes: u32) -> Result<Self, ConfigError> {
        let d = TensorCore2Config::DEFAULT;
        let elems = u64::from(lanes) * u64::from(sublanes);
        let words = (u64::from(d.vmem_words * d.lanes * d.sublanes) / elems.max(1)).max(2);
        TensorCore2Config {
            rows,
            lanes,
            sublanes,
            vmem_words: words.min(u64::from(u32::MAX)) as u32,
            ..d
        }
        .validate()
    }

    /// Checks every field; every constructor ends here.
    pub fn validate(self) -> Result<Self, ConfigError> {
        if !(1..=MAX_TC2_ARRAY).contains(&self.rows) {
            return Err(ConfigError(format!(
                "TensorCore v2 rows (= cols) must be between 1 and {MAX_TC2_ARRAY}, got {}",
                self.rows
            )));
        }
        // The VPU's own rules (powers of two, sizes) with its own messages.
        let vpu = VpuConfig::with(
            self.lanes,
            self.sublanes,
            self.vregs,
            self.vmem_words,
            VpuUnits::Full,
        )?
        .with_depth(self.vpu_depth)?;
        let elems = u64::from(vpu.elems()) * u64::from(self.vmem_words);
        if elems > MAX_TC2_VMEM_ELEMS.min(MAX_VMEM_ELEMS) {
            return Err(ConfigError(format!(
                "TensorCore v2 unified buffer of {elems} elements exceeds {MAX_TC2_VMEM_ELEMS}"
            )));
        }
        if !self.acc_rows.is_power_of_two()
            || self.acc_rows < *ACC_ROWS_RANGE.start()
            || self.acc_rows > MAX_TC2_ACC_ROWS
        {
            return Err(ConfigError(format!(
                "TensorCore v2 acc_rows must be a power of two between {} and {MAX_TC2_ACC_ROWS}, got {}",
                ACC_ROWS_RANGE.start(),
                self.acc_rows
            )));
        }
        if !self.weight_rows.is_power_of_two()
            || self.weight_rows < 2
            || self.weight_rows > MAX_TC2_WEIGHT_ROWS
        {
            return Err(ConfigError(format!(
                "TensorCore v2 weight_rows must be a power of two between 2 and \
                 {MAX_TC2_WEIGHT_ROWS}, got {}",
                self.weight_rows
            )));
        }
        if !(2..=16).contains(&self.weight_queue) {
            return Err(ConfigError(format!(
                "TensorCore v2 weight_queue must be between 2 and 16, got {}",
                self.weight_queue
            )));
        }
        if !MXU_DEPTH_RANGE.contains(&self.mxu_depth) {
            return Err(ConfigError(format!(
                "TensorCore v2 mxu_depth must be between {} and {}, got {}",
                MXU_DEPTH_RANGE.start(),
                MXU_DEPTH_RANGE.end(),
                self.mxu_depth
            )));
        }
        if self.vpu_depth > MAX_VPU_DEPTH {
            return Err(ConfigError(format!(
                "TensorCore v2 vpu_depth must be between 0 and {MAX_VPU_DEPTH}, got {}",
                self.vpu_depth
            )));
        }
        EupConfig::new(
            self.eup_recurrence_stages,
            self.eup_mul_stages,
            self.eup_add_stages,
        )
        .map_err(|e| ConfigError(format!("TensorCore v2 EUP: {e}")))?;
        Ok(self)
    }

    /// This configuration with the MXU at `depth`.
    pub fn with_mxu_depth(self, depth: u32) -> Result<Self, ConfigError> {
        TensorCore2Config {
            mxu_depth: depth,
            ..self
        }
        .validate()
    }

    /// This configuration with the VPU at `depth`.
    pub fn with_vpu_depth(self, depth: u32) -> Result<Self, ConfigError> {
        TensorCore2Config {
            vpu_depth: depth,
            ..self
        }
        .validate()
    }

    /// This configuration with the EUP's stages.
    pub fn with_eup(self, eup: EupConfig) -> Result<Self, ConfigError> {
        TensorCore2Config {
            eup_recurrence_stages: eup.recurrence_stages(),
            eup_mul_stages: eup.mul_stages(),
            eup_add_stages: eup.add_stages(),
            ..self
        }
        .validate()
    }

    /// This configuration with other memory sizes.
    pub fn with_memories(
        self,
        vmem_words: u32,
        acc_rows: u32,
        weight_rows: u32,
    ) -> Result<Self, ConfigError> {
        TensorCore2Config {
            vmem_words,
            acc_rows,
            weight_rows,
            ..self
        }
        .validate()
    }

    /// MXU rows R (the K extent of a weight tile).
    pub fn rows(&self) -> u32 {
        self.rows
    }

    /// MXU columns C (= R).
    pub fn cols(&self) -> u32 {
        self.rows
    }

    /// VPU lanes.
    pub fn lanes(&self) -> u32 {
        self.lanes
    }

    /// VPU sublanes.
    pub fn sublanes(&self) -> u32 {
        self.sublanes
    }

    /// W = lanes x sublanes, elements per VMEM word and per vector.
    pub fn elems(&self) -> u32 {
        self.lanes * self.sublanes
    }

    /// Words of the unified buffer (the VPU's VMEM).
    pub fn vmem_words(&self) -> u32 {
        self.vmem_words
    }

    /// Elements of the unified buffer: the range of element addresses.
    pub fn vmem_elems(&self) -> u32 {
        self.vmem_words * self.elems()
    }

    /// Accumulator rows (C results each).
    pub fn acc_rows(&self) -> u32 {
        self.acc_rows
    }

    /// Weight-memory rows (C bf16 patterns each).
    pub fn weight_rows(&self) -> u32 {
        self.weight_rows
    }

    /// Pending weight reads (`RW`) the weight engine holds.
    pub fn weight_queue(&self) -> u32 {
        self.weight_queue
    }

    /// The VPU inside.
    pub fn vpu(&self) -> VpuConfig {
        VpuConfig::with(
            self.lanes,
            self.sublanes,
            self.vregs,
            self.vmem_words,
            VpuUnits::Full,
        )
        .and_then(|v| v.with_depth(self.vpu_depth))
        .map(|v| v.with_host_wmask(true))
        .expect("a valid TensorCore v2 holds a valid VPU")
    }

    /// The EUP inside.
    pub fn eup(&self) -> EupConfig {
        EupConfig::new(
            self.eup_recurrence_stages,
            self.eup_mul_stages,
            self.eup_add_stages,
        )
        .expect("a valid TensorCore v2 holds a valid EUP")
    }

    /// The MXU inside: bf16 R x R in int8 mode, `acc_rows` rows, `mxu_depth`.
    pub fn mxu(&self) -> MxuConfig {
        MxuConfig::with_acc_rows(self.rows, self.rows, ElemType::Bf16, self.acc_rows)
            .and_then(|m| m.with_depth(self.mxu_depth))
            .and_then(|m| m.with_int8_mode(true))
            .expect("a valid TensorCore v2 holds a valid MXU")
    }

    /// Parameters as (name, value) pairs, in a fixed order (the generated
    /// files' header and the registry's parameters).
    pub fn params(&self) -> Vec<(String, String)> {
        [
            ("rows", self.rows),
            ("lanes", self.lanes),
            ("sublanes", self.sublanes),
            ("vregs", self.vregs),
            ("vmem_words", self.vmem_words),
            ("acc_rows", self.acc_rows),
            ("weight_rows", self.weight_rows),
            ("weight_queue", self.weight_queue),
            ("mxu_depth", self.mxu_depth),
            ("vpu_depth", self.vpu_depth),
            ("eup_recurrence_stages", self.eup_recurrence_stages),
            ("eup_mul_stages", self.eup_mul_stages),
            ("eup_add_stages", self.eup_add_stages),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    /// Parses the TOML form; missing keys take [`TensorCore2Config::DEFAULT`]'s
    /// values, unknown keys are an error.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        let raw: RawTensorCore2Config =
            toml::from_str(text).map_err(|e| ConfigError(one_line(&e.to_string())))?;
        raw.validate()
    }

    /// The TOML form that [`TensorCore2Config::from_toml`] reads back.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("TensorCore2Config always serialises")
    }
}

impl Default for TensorCore2Config {
    fn default() -> Self {
        TensorCore2Config::DEFAULT
    }
}

impl fmt::Display for TensorCore2Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TensorCore v2: MXU bf16/int8 {r}x{r} ({} accumulator rows, depth {}), VPU {}x{} \
             ({} registers, {} words, depth {}), EUP r{}-m{}-a{}, {} weight rows, weight queue {}",
            self.acc_rows,
            self.mxu_depth,
            self.lanes,
            self.sublanes,
            self.vregs,
            self.vmem_words,
            self.vpu_depth,
            self.eup_recurrence_stages,
            self.eup_mul_stages,
            self.eup_add_stages,
            self.weight_rows,
            self.weight_queue,
            r = self.rows,
        )
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTensorCore2Config {
    rows: Option<u32>,
    cols: Option<u32>,
    lanes: Option<u32>,
    sublanes: Option<u32>,
    vregs: Option<u32>,
    vmem_words: Option<u32>,
    acc_rows: Option<u32>,
    weight_rows: Option<u32>,
    weight_queue: Option<u32>,
    mxu_depth: Option<u32>,
    vpu_depth: Option<u32>,
    eup_recurrence_stages: Option<u32>,
    eup_mul_stages: Option<u32>,
    eup_add_stages: Option<u32>,
}

impl RawTensorCore2Config {
    fn validate(self) -> Result<TensorCore2Config, ConfigError> {
        let d = TensorCore2Config::DEFAULT;
        let rows = self.rows.unwrap_or(d.rows);
        if let Some(cols) = self.cols {
            if cols != rows {
                return Err(ConfigError(format!(
                    "TensorCore v2 needs a square MXU (cols == rows), got {rows}x{cols}"
                )));
            }
        }
        TensorCore2Config {
            rows,
            lanes: self.lanes.unwrap_or(d.lanes),
            sublanes: self.sublanes.unwrap_or(d.sublanes),
            vregs: self.vregs.unwrap_or(d.vregs),
            vmem_words: self.vmem_words.unwrap_or(d.vmem_words),
            acc_rows: self.acc_rows.unwrap_or(d.acc_rows),
            weight_rows: self.weight_rows.unwrap_or(d.weight_rows),
            weight_queue: self.weight_queue.unwrap_or(d.weight_queue),
            mxu_depth: self.mxu_depth.unwrap_or(d.mxu_depth),
            vpu_depth: self.vpu_depth.unwrap_or(d.vpu_depth),
            eup_recurrence_stages: self
                .eup_recurrence_stages
                .unwrap_or(d.eup_recurrence_stages),
            eup_mul_stages: self.eup_mul_stages.unwrap_or(d.eup_mul_stages),
            eup_add_stages: self.eup_add_stages.unwrap_or(d.eup_add_stages),
        }
        .validate()
    }
}

impl<'de> Deserialize<'de> for TensorCore2Config {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        RawTensorCore2Config::deserialize(de)?
            .validate()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_valid_and_round_trips() {
        let d = TensorCore2Config::DEFAULT;
        assert_eq!(d.validate(), Ok(d));
        assert_eq!(TensorCore2Config::from_toml(&d.to_toml()).unwrap(), d);
        assert_eq!(TensorCore2Config::new(8, 8, 1).unwrap(), d);
        assert_eq!(d.vmem_elems(), 32768);
        assert!(d.mxu().int8_mode());
        assert_eq!(d.eup(), EupConfig::DEFAULT);
        let wide = TensorCore2Config::new(16, 16, 8).unwrap();
        assert_eq!((wide.vmem_elems(), wide.elems()), (32768, 128));
        let deep = d.with_mxu_depth(5).unwrap().with_vpu_depth(7).unwrap();
        assert_eq!(TensorCore2Config::from_toml(&deep.to_toml()).unwrap(), deep);
    }

    #[test]
    fn bad_values_are_refused_in_one_line() {
        for bad in [
            "rows = 0",
            "rows = 65",
            "rows = 4\ncols = 8",
            "lanes = 3",
            "sublanes = 0",
            "vmem_words = 1000",
            "acc_rows = 100",
            "weight_rows = 1",
            "weight_queue = 1",
            "mxu_depth = 6",
            "vpu_depth = 8",
            "eup_mul_stages = 9",
            "colz = 4",
        ] {
            let err = TensorCore2Config::from_toml(bad).unwrap_err().to_string();
            assert!(!err.contains('\n') && !err.is_empty(), "{bad}: {err}");
        }
    }
}

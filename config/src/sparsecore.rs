//! The SparseCore's configuration: tiles, the largest row and batch its
//! scratchpads hold, its tiles' entry queues and how many HBM reads it keeps
//! in flight.
//!
//! The table's shape (V rows of D elements) and the batch size are run-time
//! inputs of the block, bounded here by `max_dim` and `max_batch`: one model
//! then serves every table, as one SparseCore serves every embedding table
//! of a model. V is bounded only by the id format (ids are int32, and
//! 2^31 - 1 is padding).

use crate::{one_line, ConfigError};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Tiles per SparseCore: 1 to this (16 is a TPU v4 SparseCore's).
pub const MAX_TILES: u32 = 16;
/// The longest table row the scratchpads hold, in fp32 elements.
pub const MAX_DIM: u32 = 1024;
/// The largest batch the scratchpads hold, in samples.
pub const MAX_BATCH: u32 = 4096;
/// Entry queue depth per tile: a power of two in this range (from 4 on, a
/// host that pushes whenever the queue has room keeps up with a tile).
pub const QUEUE_DEPTH_RANGE: std::ops::RangeInclusive<u32> = 4..=1024;
/// HBM reads in flight: a power of two in this range (the block's request
/// bookkeeping is a first-word fall-through FIFO, which sustains one word per
/// cycle from depth 3 on).
pub const HBM_INFLIGHT_RANGE: std::ops::RangeInclusive<u32> = 4..=256;
/// The fixed HBM latency of the cycle model and the benchmark, in cycles
/// (the interface needs at least 2, see the `sparsecore` crate docs).
pub const HBM_LATENCY_RANGE: std::ops::RangeInclusive<u32> = 2..=4096;
/// Pipeline depth: the stages of the fold lanes' fp32 adder up to
/// [`MAX_ADD_STAGES`], and of the combine lanes' fp32 multiplier (ahead of
/// their add, outside the read-modify-write loop) up to [`MAX_MUL_STAGES`],
/// 0 (combinational) to this; at [`STAGED_WALK_DEPTH`] the tiles' walkers
/// take their entries from a register stage.
pub const MAX_DEPTH: u32 = 7;
/// The fp32 adder's most stages (every cut of `hw::fp::FP32_ADD`, the last
/// a register on its operands).
pub const MAX_ADD_STAGES: u32 = 6;
/// The combine multiplier's most stages.
pub const MAX_MUL_STAGES: u32 = 4;
/// From this depth on the combine's fp32 add is staged too, `depth` stages
/// inside the read-modify-write loop, behind a response buffer and an
/// interlock (see the `sparsecore` crate docs); below it the add is one
/// cycle.
pub const STAGED_LOOP_DEPTH: u32 = 4;
/// From this depth on each tile's walker takes the entry at its queue's
/// head through a register stage that also holds the entry's row address
/// (id x D, a multiply) and bounds check, so that no path runs from the
/// queue through the multiply to the HBM read address; an entry reaches the
/// walker a cycle later (see the `sparsecore` crate docs).
pub const STAGED_WALK_DEPTH: u32 = 7;
/// The largest partial-sum scratchpad, in 32-byte words (8 fp32 each).
pub const MAX_SCRATCHPAD_WORDS: u32 = 1 << 16;
/// fp32 elements per HBM word (32 bytes) and per scratchpad word.
pub const WORD_ELEMS: u32 = 8;
/// The padding id: entries carrying it are dropped by the host.
pub const PADDING_ID: i32 = i32::MAX;
/// The largest number of rows a table may have: every non-padding int32 id.
pub const MAX_ROWS: u32 = i32::MAX as u32;

/// Configuration of the SparseCore (embedding lookup and update).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct SparseCoreConfig {
    tiles: u32,
    max_dim: u32,
    max_batch: u32,
    queue_depth: u32,
    hbm_inflight: u32,
    hbm_latency: u32,
    depth: u32,
}

impl SparseCoreConfig {
    /// What `gen --block sparsecore` builds and `sim embed` runs on when
    /// given no flags: 4 tiles, rows up to 128 elements, batches up to 64,
    /// a 16-entry queue, 128 reads in flight (enough to hide the default
    /// latency of 100 cycles at one word per cycle).
    pub const DEFAULT: SparseCoreConfig = SparseCoreConfig {
        tiles: 4,
        max_dim: 128,
        max_batch: 64,
        queue_depth: 16,
        hbm_inflight: 128,
        hbm_latency: 100,
        depth: 0,
    };

    /// A validated configuration with the default queue and HBM settings.
    pub fn new(tiles: u32, max_dim: u32, max_batch: u32) -> Result<Self, ConfigError> {
        let d = SparseCoreConfig::DEFAULT;
        SparseCoreConfig::with(
            tiles,
            max_dim,
            max_batch,
            d.queue_depth,
            d.hbm_inflight,
            d.hbm_latency,
        )
    }

    /// A validated configuration: `tiles` in 1..=[`MAX_TILES`], `max_dim` in
    /// 1..=[`MAX_DIM`], `max_batch` in 1..=[`MAX_BATCH`] with the partial-sum
    /// scratchpad (`max_batch` x ceil(`max_dim` / 8) words) at most
    /// [`MAX_SCRATCHPAD_WORDS`], `queue_depth` and `hbm_inflight` powers of two
    /// in [`QUEUE_DEPTH_RANGE`] and [`HBM_INFLIGHT_RANGE`], `hbm_latency` in
    /// [`HBM_LATENCY_RANGE`].
    pub fn with(
        tiles: u32,
        max_dim: u32,
        max_batch: u32,
        queue_depth: u32,
        hbm_inflight: u32,
        hbm_latency: u32,
    ) -> Result<Self, ConfigError> {
        let range = |name: &str, v: u32, lo: u32, hi: u32| {
            if (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(ConfigError(format!(
                    "SparseCore {name} must be between {lo} and {hi}, got {v}"
                )))
            }
        };
        let pow2 = |name: &str, v: u32, r: std::ops::RangeInclusive<u32>| {
            if v.is_power_of_two() && r.contains(&v) {
                Ok(())
            } else {
                Err(ConfigError(format!(
                    "SparseCore {name} must be a power of two between {} and {}, got {v}",
                    r.start(),
                    r.end()
                )))
            }
        };
        range("tiles", tiles, 1, MAX_TILES)?;
        range("max_dim", max_dim, 1, MAX_DIM)?;
        range("max_batch", max_batch, 1, MAX_BATCH)?;
        pow2("queue_depth", queue_depth, QUEUE_DEPTH_RANGE)?;
        pow2("hbm_inflight", hbm_inflight, HBM_INFLIGHT_RANGE)?;
        range(
            "hbm_latency",
            hbm_latency,
            *HBM_LATENCY_RANGE.start(),
            *HBM_LATENCY_RANGE.end(),
        )?;
        let words = u64::from(max_batch) * u64::from(max_dim.div_ceil(WORD_ELEMS));
        if words > u64::from(MAX_SCRATCHPAD_WORDS) {
            return Err(ConfigError(format!(
                "SparseCore scratchpad of {max_batch} samples x {max_dim} elements is {words} \
                 words, more than {MAX_SCRATCHPAD_WORDS}"
            )));
        }
        Ok(SparseCoreConfig {
            tiles,
            max_dim,
            max_batch,
            queue_depth,
            hbm_inflight,
            hbm_latency,
            depth: 0,
        })
    }

    /// The same configuration with pipeline depth `depth` (0 to
    /// [`MAX_DEPTH`]): the fold lanes' adder gets `depth` stages up to
    /// [`MAX_ADD_STAGES`] and the combine lanes' multiplier `depth` up to
    /// [`MAX_MUL_STAGES`], so a fold writes its activation word that many
    /// cycles later; from [`STAGED_LOOP_DEPTH`] on the combine's add has
    /// those stages too, and from [`STAGED_WALK_DEPTH`] on the walkers take
    /// their entries through a register stage (see the `sparsecore` crate
    /// docs).
    pub fn with_depth(&self, depth: u32) -> Result<Self, ConfigError> {
        if depth > MAX_DEPTH {
            return Err(ConfigError(format!(
                "SparseCore depth must be between 0 and {MAX_DEPTH}, got {depth}"
            )));
        }
        Ok(SparseCoreConfig { depth, ..*self })
    }

    /// The pipeline depth (see [`SparseCoreConfig::with_depth`]).
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// Stages of the fold's fp32 adder (and, from [`STAGED_LOOP_DEPTH`] on,
    /// of the combine's): the depth, at most [`MAX_ADD_STAGES`].
    pub fn add_stages(&self) -> u32 {
        self.depth.min(MAX_ADD_STAGES)
    }

    /// Whether each tile's walker takes its entries through a register
    /// stage (from [`STAGED_WALK_DEPTH`] on).
    pub fn staged_walk(&self) -> bool {
        self.depth >= STAGED_WALK_DEPTH
    }

    /// Stages of the combine lanes' multiplier: the depth, at most
    /// [`MAX_MUL_STAGES`].
    pub fn mul_stages(&self) -> u32 {
        self.depth.min(MAX_MUL_STAGES)
    }

    /// Cycles from a combine item (a response, an accumulation step) entering
    /// the combine to its add: the multiplier's stages, and with the add
    /// staged inside the loop one more, the product's register (so that the
    /// multiplier's last stage and the adder's first are not one path).
    pub fn product_stages(&self) -> u32 {
        self.mul_stages() + u32::from(self.loop_stages() > 0)
    }

    /// Stages of the combine's add inside the read-modify-write loop: the
    /// adder's stages from [`STAGED_LOOP_DEPTH`] on, else 0 (the add is one
    /// cycle).
    pub fn loop_stages(&self) -> u32 {
        if self.depth >= STAGED_LOOP_DEPTH {
            self.add_stages()
        } else {
            0
        }
    }

    /// Whether an update keeps many rows in flight (the pipelined update,
    /// built at depth 0): each tile accumulates the next ids' U into slots of
    /// its scratchpad while earlier rows are read and written. At other
    /// depths an update handles one id at a time.
    pub fn pipelined_update(&self) -> bool {
        self.depth == 0
    }

    /// U slots of a pipelined update per tile for rows of `dim` elements:
    /// one per read in flight (`hbm_inflight`), as many as fit the
    /// scratchpad at ceil(D/8) words each.
    pub fn update_slots(&self, dim: u32) -> u32 {
        self.hbm_inflight
            .min(self.scratchpad_words() / Self::words_per_row(dim))
    }

    /// T: tiles; tile t owns the ids with id mod T = t.
    pub fn tiles(&self) -> u32 {
        self.tiles
    }

    /// The longest row (D) a run may use.
    pub fn max_dim(&self) -> u32 {
        self.max_dim
    }

    /// The largest batch (B) a run may use.
    pub fn max_batch(&self) -> u32 {
        self.max_batch
    }

    /// Entries each tile's entry queue holds; the host stalls when the
    /// current tile's is full.
    pub fn queue_depth(&self) -> u32 {
        self.queue_depth
    }

    /// HBM reads the block keeps in flight at most.
    pub fn hbm_inflight(&self) -> u32 {
        self.hbm_inflight
    }

    /// The fixed HBM latency the cycle model and the benchmark assume.
    pub fn hbm_latency(&self) -> u32 {
        self.hbm_latency
    }

    /// The same configuration with another tile count.
    pub fn with_tiles(&self, tiles: u32) -> Result<SparseCoreConfig, ConfigError> {
        SparseCoreConfig::with(
            tiles,
            self.max_dim,
            self.max_batch,
            self.queue_depth,
            self.hbm_inflight,
            self.hbm_latency,
        )?
        .with_depth(self.depth)
    }

    /// The same configuration with another HBM latency.
    pub fn with_hbm_latency(&self, hbm_latency: u32) -> Result<SparseCoreConfig, ConfigError> {
        SparseCoreConfig::with(
            self.tiles,
            self.max_dim,
            self.max_batch,
            self.queue_depth,
            self.hbm_inflight,
            hbm_latency,
        )?
        .with_depth(self.depth)
    }

    /// Scratchpad words (8 fp32) one row of `dim` elements occupies: ceil(D / 8).
    pub fn words_per_row(dim: u32) -> u32 {
        dim.div_ceil(WORD_ELEMS)
    }

    /// Words of each scratchpad buffer (a tile's partial sums, the activations):
    /// `max_batch` x ceil(`max_dim` / 8).
    pub fn scratchpad_words(&self) -> u32 {
        self.max_batch * Self::words_per_row(self.max_dim)
    }

    /// Parses the TOML form (`tiles = 4`, `max_dim = 128`, `max_batch = 64`,
    /// `queue_depth = 16`, `hbm_inflight = 128`, `hbm_latency = 100`,
    /// `depth = 0`), missing
    /// keys taken from [`SparseCoreConfig::DEFAULT`]; unknown keys are an error.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        let raw: RawSparseCoreConfig =
            toml::from_str(text).map_err(|e| ConfigError(one_line(&e.to_string())))?;
        raw.validate()
    }

    /// The TOML form that [`SparseCoreConfig::from_toml`] reads back.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("SparseCoreConfig always serialises")
    }
}

impl Default for SparseCoreConfig {
    fn default() -> Self {
        SparseCoreConfig::DEFAULT
    }
}

impl fmt::Display for SparseCoreConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} tiles, D <= {}, B <= {} ({}-entry queue, {} HBM reads in flight, HBM latency {})",
            self.tiles,
            self.max_dim,
            self.max_batch,
            self.queue_depth,
            self.hbm_inflight,
            self.hbm_latency
        )?;
        if self.depth > 0 {
            write!(f, ", depth {}", self.depth)?;
        }
        Ok(())
    }
}

/// The unvalidated serde form; `Deserialize` for [`SparseCoreConfig`] goes through it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSparseCoreConfig {
    tiles: Option<u32>,
    max_dim: Option<u32>,
    max_batch: Option<u32>,
    queue_depth: Option<u32>,
    hbm_inflight: Option<u32>,
    hbm_latency: Option<u32>,
    depth: Option<u32>,
}

impl RawSparseCoreConfig {
    fn validate(self) -> Result<SparseCoreConfig, ConfigError> {
        let d = SparseCoreConfig::DEFAULT;
        SparseCoreConfig::with(
            self.tiles.unwrap_or(d.tiles),
            self.max_dim.unwrap_or(d.max_dim),
            self.max_batch.unwrap_or(d.max_batch),
            self.queue_depth.unwrap_or(d.queue_depth),
            self.hbm_inflight.unwrap_or(d.hbm_inflight),
            self.hbm_latency.unwrap_or(d.hbm_latency),
        )?
        .with_depth(self.depth.unwrap_or(d.depth))
    }
}

impl<'de> Deserialize<'de> for SparseCoreConfig {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        RawSparseCoreConfig::deserialize(de)?
            .validate()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_enforced() {
        assert!(SparseCoreConfig::new(1, 1, 1).is_ok());
        assert!(SparseCoreConfig::new(16, 1024, 512).is_ok());
        for (t, d, b) in [(0, 8, 4), (17, 8, 4), (4, 0, 4), (4, 1025, 4), (4, 8, 0)] {
            assert!(SparseCoreConfig::new(t, d, b).is_err(), "{t} {d} {b}");
        }
        // 4096 samples x 128 words is past the scratchpad limit.
        assert!(SparseCoreConfig::new(4, 1024, 4096).is_err());
        assert!(SparseCoreConfig::with(4, 8, 4, 3, 4, 10).is_err());
        assert!(SparseCoreConfig::with(4, 8, 4, 2, 4, 10).is_err());
        assert!(SparseCoreConfig::with(4, 8, 4, 4, 3, 10).is_err());
        assert!(SparseCoreConfig::with(4, 8, 4, 4, 2, 10).is_err());
        assert!(SparseCoreConfig::with(4, 8, 4, 4, 4, 1).is_err());
        assert!(SparseCoreConfig::with(4, 8, 4, 4, 512, 10).is_err());
        assert!(SparseCoreConfig::with(4, 8, 4, 4, 4, 2).is_ok());
        let c = SparseCoreConfig::new(1, 8, 4).unwrap();
        assert_eq!(c.with_depth(MAX_DEPTH).unwrap().depth(), MAX_DEPTH);
        assert!(c.with_depth(MAX_DEPTH + 1).is_err());
        assert_eq!(c.with_depth(2).unwrap().with_tiles(3).unwrap().depth(), 2);
        let staged = c.with_depth(STAGED_LOOP_DEPTH).unwrap();
        assert_eq!(staged.loop_stages(), STAGED_LOOP_DEPTH);
        assert_eq!(staged.mul_stages(), MAX_MUL_STAGES);
        assert_eq!(staged.product_stages(), MAX_MUL_STAGES + 1);
        assert_eq!(c.with_depth(2).unwrap().product_stages(), 2);
        assert_eq!(
            c.with_depth(STAGED_LOOP_DEPTH - 1).unwrap().loop_stages(),
            0
        );
        // The deepest adder, then the walk's stage on top of it.
        let walk = c.with_depth(STAGED_WALK_DEPTH).unwrap();
        assert!(walk.staged_walk());
        assert!(!c.with_depth(STAGED_WALK_DEPTH - 1).unwrap().staged_walk());
        assert_eq!(walk.add_stages(), MAX_ADD_STAGES);
        assert_eq!(walk.loop_stages(), MAX_ADD_STAGES);
        assert_eq!(
            c.with_depth(MAX_ADD_STAGES).unwrap().add_stages(),
            MAX_ADD_STAGES
        );
    }

    #[test]
    fn toml_round_trips_and_errors_are_one_line() {
        let c = SparseCoreConfig::with(3, 21, 6, 8, 16, 7).unwrap();
        assert_eq!(SparseCoreConfig::from_toml(&c.to_toml()).unwrap(), c);
        let deep = c.with_depth(2).unwrap();
        assert_eq!(SparseCoreConfig::from_toml(&deep.to_toml()).unwrap(), deep);
        let partial = SparseCoreConfig::from_toml("tiles = 16").unwrap();
        assert_eq!(partial.tiles(), 16);
        assert_eq!(partial.max_dim(), SparseCoreConfig::DEFAULT.max_dim());
        for bad in [
            "tiles = 0",
            "tile = 4",
            "queue_depth = 5",
            "max_dim = -1",
            "depth = 8",
            "[[",
        ] {
            let err = SparseCoreConfig::from_toml(bad).unwrap_err().to_string();
            assert!(!err.contains('\n') && !err.is_empty(), "{bad}: {err}");
        }
    }

    #[test]
    fn display_is_one_line_and_scratchpad_rounds_rows_up() {
        let c = SparseCoreConfig::new(2, 21, 6).unwrap();
        assert_eq!(c.scratchpad_words(), 18);
        assert_eq!(SparseCoreConfig::words_per_row(8), 1);
        assert_eq!(SparseCoreConfig::words_per_row(1), 1);
        assert_eq!(SparseCoreConfig::words_per_row(9), 2);
        assert!(!c.to_string().contains('\n'));
    }
}

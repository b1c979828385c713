//! The SparseCore's host library: what the host does to an entry list before
//! the hardware sees it (`docs/numerics.md#entry-preparation`).
//!
//! Padding entries (id 2^31 - 1) are dropped; entries with the same
//! (id, sample) are merged into one whose gain is the add32 of their gains in
//! input order; the merged entries are sorted by (id, sample) and sharded over
//! the tiles by id mod T. Entries whose id is outside [0, V) are kept apart,
//! unmerged and in input order: the hardware checks bounds itself, so when the
//! user lets them through they go to it unchanged (each to tile id mod T,
//! after that tile's valid entries) and are skipped and counted there.
//!
//! This is host code, not a model of the RTL: the golden model, the
//! simulator's driver and the run CLI all call it, so they agree on the
//! entries each tile gets. It lives here because merging needs the
//! contract's add32.

use crate::numerics::add32;
use config::sparsecore::PADDING_ID;
use std::collections::HashMap;
use std::fmt;

/// One entry as the hardware receives it: a table id, a sample and a gain
/// (fp32 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub id: i32,
    pub sample: u32,
    pub gain: u32,
}

/// An entry list after preprocessing for a table of `rows` rows, `batch`
/// samples and `tiles` tiles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    /// Per tile, in the order the tile processes them: the merged entries
    /// with valid ids sorted by (id, sample), then the entries with invalid
    /// ids in input order.
    pub tiles: Vec<Vec<Entry>>,
    /// Merged entries with valid ids, over all tiles.
    pub entries: usize,
    /// Entries with an id outside [0, V) that is not padding, with their
    /// positions in the input.
    pub invalid: Vec<(usize, Entry)>,
    /// Padding entries dropped.
    pub padding: usize,
}

impl Prepared {
    /// The tile that owns `id`: id mod T (for an invalid negative id, its
    /// Euclidean remainder, so it still lands on a tile).
    pub fn tile_of(id: i32, tiles: u32) -> usize {
        id.rem_euclid(tiles as i32) as usize
    }

    /// The row of `id` within its tile's shard: id div T.
    pub fn local_row(id: i32, tiles: u32) -> u32 {
        (id as u32) / tiles
    }

    /// Every entry any tile receives, valid or not.
    pub fn queued(&self) -> usize {
        self.tiles.iter().map(Vec::len).sum()
    }
}

/// Why an entry list cannot be prepared. Positions are 0-based indices into
/// the input arrays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrepError {
    /// The id, sample and gain arrays differ in length.
    Lengths {
        ids: usize,
        samples: usize,
        gains: usize,
    },
    /// A sample outside [0, B).
    Sample {
        position: usize,
        sample: i32,
        batch: u32,
    },
}

impl fmt::Display for PrepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrepError::Lengths {
                ids,
                samples,
                gains,
            } => write!(
                f,
                "ids, samples and gains must have one length, got {ids}, {samples} and {gains}"
            ),
            PrepError::Sample {
                position,
                sample,
                batch,
            } => write!(
                f,
                "sample {sample} at position {position} is outside [0, {batch})"
            ),
        }
    }
}

impl std::error::Error for PrepError {}

/// Whether `id` names a row of a table with `rows` rows.
pub fn id_in_table(id: i32, rows: u32) -> bool {
    id >= 0 && (id as u32) < rows
}

/// Preprocesses an entry list (rules 1 to 3 of the contract). Every sample,
/// padding entries' too, must be in [0, `batch`).
pub fn prepare(
    ids: &[i32],
    samples: &[i32],
    gains: &[u32],
    rows: u32,
    batch: u32,
    tiles: u32,
) -> Result<Prepared, PrepError> {
    assert!(tiles >= 1, "at least one tile");
    if ids.len() != samples.len() || ids.len() != gains.len() {
        return Err(PrepError::Lengths {
            ids: ids.len(),
            samples: samples.len(),
            gains: gains.len(),
        });
    }
    if let Some((position, &sample)) = samples
        .iter()
        .enumerate()
        .find(|&(_, &s)| s < 0 || s as u32 >= batch)
    {
        return Err(PrepError::Sample {
            position,
            sample,
            batch,
        });
    }
    let mut merged: HashMap<(i32, u32), u32> = HashMap::new();
    let mut invalid = Vec::new();
    let mut padding = 0;
    for (position, ((&id, &sample), &gain)) in ids.iter().zip(samples).zip(gains).enumerate() {
        let sample = sample as u32;
        if id == PADDING_ID {
            padding += 1;
        } else if !id_in_table(id, rows) {
            invalid.push((position, Entry { id, sample, gain }));
        } else {
            merged
                .entry((id, sample))
                .and_modify(|g| *g = add32(*g, gain))
                .or_insert(gain);
        }
    }
    let mut sorted: Vec<Entry> = merged
        .into_iter()
        .map(|((id, sample), gain)| Entry { id, sample, gain })
        .collect();
    sorted.sort_by_key(|e| (e.id, e.sample));
    let entries = sorted.len();
    let mut per_tile = vec![Vec::new(); tiles as usize];
    for e in sorted {
        per_tile[Prepared::tile_of(e.id, tiles)].push(e);
    }
    for &(_, e) in &invalid {
        per_tile[Prepared::tile_of(e.id, tiles)].push(e);
    }
    Ok(Prepared {
        tiles: per_tile,
        entries,
        invalid,
        padding,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: u32 = 0x3F80_0000;
    const TWO: u32 = 0x4000_0000;

    #[test]
    fn padding_is_dropped_invalid_kept_apart_duplicates_merged_in_input_order() {
        let ids = [5, PADDING_ID, 9, 5, -1, 2, 5, 9];
        let samples = [1, 0, 0, 1, 2, 0, 0, 0];
        // Gains chosen so that the merge order shows: 1e8 + 1 + (-1e8) vs other orders.
        let big = 0x4CBE_BC20; // 1e8
        let nbig = big | 0x8000_0000;
        let gains = [big, ONE, ONE, ONE, ONE, TWO, ONE, nbig];
        let p = prepare(&ids, &samples, &gains, 10, 3, 2).unwrap();
        assert_eq!(p.padding, 1);
        assert_eq!(
            p.invalid,
            vec![(
                4,
                Entry {
                    id: -1,
                    sample: 2,
                    gain: ONE
                }
            )]
        );
        assert_eq!(p.entries, 4);
        // Tile 0: id 2. Tile 1: ids 5 (samples 0, 1), 9, then the invalid -1.
        assert_eq!(
            p.tiles[0],
            vec![Entry {
                id: 2,
                sample: 0,
                gain: TWO
            }]
        );
        let t1 = &p.tiles[1];
        assert_eq!(t1.len(), 4);
        assert_eq!((t1[0].id, t1[0].sample, t1[0].gain), (5, 0, ONE));
        assert_eq!((t1[1].id, t1[1].sample), (5, 1));
        assert_eq!(t1[1].gain, add32(big, ONE));
        // add32(1, -1e8) is -1e8 exactly, not 0: input order kept.
        assert_eq!(t1[2].gain, add32(ONE, nbig));
        assert_eq!(t1[3].id, -1);
        assert_eq!(p.queued(), 5);
    }

    #[test]
    fn bad_samples_and_lengths_are_refused_with_their_position() {
        let e = prepare(&[1, 2], &[0, 3], &[ONE, ONE], 4, 3, 1).unwrap_err();
        assert_eq!(
            e,
            PrepError::Sample {
                position: 1,
                sample: 3,
                batch: 3
            }
        );
        assert!(e.to_string().contains("position 1"));
        let e = prepare(&[PADDING_ID], &[-1], &[ONE], 4, 3, 1).unwrap_err();
        assert!(matches!(e, PrepError::Sample { position: 0, .. }));
        assert!(matches!(
            prepare(&[1], &[0, 0], &[ONE], 4, 3, 1),
            Err(PrepError::Lengths { .. })
        ));
    }

    #[test]
    fn tiles_and_local_rows() {
        assert_eq!(Prepared::tile_of(13, 4), 1);
        assert_eq!(Prepared::local_row(13, 4), 3);
        assert_eq!(Prepared::tile_of(-1, 4), 3);
        assert_eq!(Prepared::tile_of(i32::MIN, 3), 1);
        assert!(id_in_table(0, 1) && !id_in_table(1, 1) && !id_in_table(-5, 10));
    }
}

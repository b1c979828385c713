//! Helpers shared by the integration tests: reading the reference vectors,
//! seeding random tests, and collecting mismatches.

#![allow(dead_code)] // each test binary uses its own subset

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::fmt::Display;
use std::hash::{BuildHasher, Hasher};

/// The reference vectors, copied into the repository so tests run from a clone.
pub const VECTOR_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tb/data/vectors/");

/// One data row of a vector file: its 1-based line number and its fields.
pub struct Row {
    pub line: usize,
    pub fields: Vec<String>,
}

/// The data rows of `name` (the `#` header and blank lines skipped), each
/// checked to have `columns` tab-separated fields.
pub fn read_vectors(name: &str, columns: usize) -> Vec<Row> {
    let path = format!("{VECTOR_DIR}{name}");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields: Vec<String> = line.split('\t').map(|f| f.trim().to_string()).collect();
        assert_eq!(
            fields.len(),
            columns,
            "{name}:{}: expected {columns} fields: {line:?}",
            i + 1
        );
        rows.push(Row {
            line: i + 1,
            fields,
        });
    }
    rows
}

pub fn hex32(s: &str) -> u32 {
    u32::from_str_radix(s, 16).unwrap_or_else(|e| panic!("bad hex {s:?}: {e}"))
}

pub fn hex16(s: &str) -> u16 {
    u16::from_str_radix(s, 16).unwrap_or_else(|e| panic!("bad hex {s:?}: {e}"))
}

pub fn dec<T: std::str::FromStr>(s: &str) -> T
where
    T::Err: Display,
{
    s.parse()
        .unwrap_or_else(|e| panic!("bad number {s:?}: {e}"))
}

/// Collects mismatches, keeps the first few messages, and fails at the end.
pub struct Mismatches {
    what: String,
    checked: u64,
    count: u64,
    shown: Vec<String>,
}

impl Mismatches {
    const SHOWN: usize = 25;

    pub fn new(what: impl Into<String>) -> Self {
        Mismatches {
            what: what.into(),
            checked: 0,
            count: 0,
            shown: Vec::new(),
        }
    }

    /// Records one comparison; `describe` runs only when `got != want`.
    pub fn check<T: PartialEq>(&mut self, got: T, want: T, describe: impl FnOnce() -> String) {
        self.checked += 1;
        if got != want {
            self.count += 1;
            if self.shown.len() < Self::SHOWN {
                self.shown.push(describe());
            }
        }
    }

    pub fn checked(&self) -> u64 {
        self.checked
    }

    /// Panics listing the first mismatches if there were any.
    pub fn finish(self) {
        assert!(self.checked > 0, "{}: nothing was checked", self.what);
        if self.count > 0 {
            panic!(
                "{}: {} of {} checks mismatched; first {}:\n  {}",
                self.what,
                self.count,
                self.checked,
                self.shown.len(),
                self.shown.join("\n  ")
            );
        }
    }
}

/// The seed of the random tests: `SYSTOLE_SEED` (decimal u64) when set,
/// otherwise a fresh one. Printed so that a failure can be replayed.
pub fn seed(test: &str) -> u64 {
    let seed = match std::env::var("SYSTOLE_SEED") {
        Ok(s) => s
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("SYSTOLE_SEED must be a decimal u64, got {s:?}: {e}")),
        Err(_) => std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish(),
    };
    println!("{test}: seed {seed} (replay with SYSTOLE_SEED={seed})");
    seed
}

/// A generator for one test: the shared seed, a stream of its own per test.
pub fn rng(test: &str, stream: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed(test));
    rng.set_stream(stream);
    rng
}

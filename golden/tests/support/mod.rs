//! Helpers shared by the integration tests: reading the reference vectors,
//! seeding random tests, and collecting mismatches.

#![allow(dead_code)] // each test binary uses its own subset

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::hash::{BuildHasher, Hasher};

#[allow(unused_imports)] // each test binary uses its own subset
pub use golden::vectors::{dec, hex16, hex32, read_vectors, Row};

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

//! Seeds for randomized tests: printed, and taken back from `SYSTOLE_SEED`.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The environment variable that replays a randomized test.
pub const SEED_VAR: &str = "SYSTOLE_SEED";

/// The seed for a randomized test: `SYSTOLE_SEED` if set (decimal u64), else a
/// fresh one. Printed either way with the test's name, so a failure can be
/// replayed with `SYSTOLE_SEED=<seed> cargo test <name>`.
pub fn seed_for(test: &str) -> u64 {
    let seed = match std::env::var(SEED_VAR) {
        Ok(s) => s
            .trim()
            .parse::<u64>()
            .unwrap_or_else(|_| panic!("{SEED_VAR} must be a decimal u64, got '{s}'")),
        Err(_) => rand::random::<u64>(),
    };
    println!("{test}: seed {seed} (replay with {SEED_VAR}={seed})");
    seed
}

/// A deterministic generator for `test`'s seed.
pub fn rng_for(test: &str) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed_for(test))
}

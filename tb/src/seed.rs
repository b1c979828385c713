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

/// The environment variable that lengthens randomized tests for a soak run.
pub const SOAK_VAR: &str = "SYSTOLE_SOAK";

/// How many times its usual number of rounds a randomized test runs:
/// `SYSTOLE_SOAK` (a whole number >= 1), else 1. A soak is then a plain test
/// run, and splits across CI runners like one (`cargo nextest run --partition`).
pub fn soak_factor() -> usize {
    match std::env::var(SOAK_VAR) {
        Ok(s) => match s.trim().parse::<usize>() {
            Ok(n) if n >= 1 => n,
            _ => panic!("{SOAK_VAR} must be a whole number >= 1, got '{s}'"),
        },
        Err(_) => 1,
    }
}

/// `base` rounds, times the soak factor.
pub fn soak_rounds(base: usize) -> usize {
    base * soak_factor()
}

/// A deterministic generator for `test`'s seed.
pub fn rng_for(test: &str) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed_for(test))
}

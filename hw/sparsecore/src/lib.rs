//! SparseCore: tiles that gather embedding rows from memory, combine them
//! (sum / mean / sqrtn folded into per-id gains) and scatter updates.
//!
//! Not built yet. It will follow the pattern of `hw/mxu`: builder functions of a
//! configuration type from the `config` crate produce `hw` module definitions,
//! checked against a golden model in `golden`.

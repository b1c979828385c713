//! The SparseCore RTL against the golden model: activations bit for bit and,
//! with a fixed HBM latency, cycles exactly; under random HBM latency and
//! backpressure, bit for bit. Directed cases (the reference vectors, rows
//! straddling words for D = 1, 5, 8, 21, fp32 specials, invalid ids, empty
//! tiles) sit beside random batches with Zipf-distributed ids.

use config::SparseCoreConfig;
use golden::sparsecore::{forward, forward_cycles, Table, Timing};
use golden::sparsecore_host::{prepare, Prepared};
use golden::vectors::read_embed_forward;
use rand::Rng;
use sim::drivers::sparsecore::{HbmBehaviour, SparseCoreDriver};

/// Small configurations (Verilator builds stay quick on two cores).
fn cfg(tiles: u32, max_dim: u32, max_batch: u32) -> SparseCoreConfig {
    SparseCoreConfig::with(tiles, max_dim, max_batch, 4, 4, 6).expect("valid")
}

/// Runs one forward pass on the RTL and checks it against the golden model;
/// with a fixed latency also the cycle count.
#[allow(clippy::too_many_arguments)]
fn check(
    d: &mut SparseCoreDriver,
    what: &str,
    table: &[u32],
    rows: u32,
    dim: u32,
    batch: u32,
    p: &Prepared,
    hbm: HbmBehaviour,
) {
    let want = forward(Table::new(table, rows, dim), p, batch);
    let got = d
        .forward(table, rows, dim, batch, p, hbm)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    for (i, (&g, &w)) in got.activations.iter().zip(&want.activations).enumerate() {
        assert_eq!(
            g,
            w,
            "{what}: A[{}][{}] = {g:08x}, want {w:08x}",
            i as u32 / dim,
            i as u32 % dim
        );
    }
    assert_eq!(got.activations.len(), want.activations.len(), "{what}");
    assert_eq!(got.invalid, want.invalid, "{what}: invalid count");
    if let HbmBehaviour::Fixed(latency) = hbm {
        let timing = Timing {
            hbm_latency: latency,
            hbm_inflight: d.config().hbm_inflight(),
        };
        let model = forward_cycles(p, rows, dim, batch, timing);
        assert_eq!(got.cycles, model.cycles, "{what}: cycles");
        assert_eq!(got.words_read, model.words_read, "{what}: HBM words");
    }
}

#[test]
fn one_entry_one_tile() {
    let c = cfg(1, 8, 4);
    let mut d = SparseCoreDriver::new(&c).unwrap();
    let table: Vec<u32> = (0..3 * 5).map(|i| 0x3F80_0000 + (i << 16)).collect();
    let p = prepare(&[1], &[2], &[0x4000_0000], 3, 4, 1).unwrap();
    check(&mut d, "one entry", &table, 3, 5, 4, &p, HbmBehaviour::Fixed(2));
}

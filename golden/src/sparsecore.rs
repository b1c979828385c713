//! The SparseCore's results, as `numerics.md` (section "SparseCore") defines
//! them, on entry lists prepared by [`crate::sparsecore_host`].
//!
//! A table is `rows` x `dim` fp32 bit patterns, row-major. Every sum is the
//! contract's, in its order: per tile, P_t[s][d] starts at +0.0 and adds
//! mul32(g, E[id][d]) over the tile's entries in sorted order; A[s][d]
//! starts at +0.0 and adds P_t[s][d] for t = 0 .. T-1. An update accumulates
//! U[d] from +0.0 over the id's entries in sorted order, then writes
//! E[id][d] = sub32(E[id][d], mul32(lr, U[d])) once. Entries whose id is
//! outside the table are skipped and counted.

use crate::numerics::{add32, mul32, sub32};
use crate::sparsecore_host::{id_in_table, Prepared};

/// A table of fp32 bit patterns, row-major.
#[derive(Debug, Clone, Copy)]
pub struct Table<'a> {
    pub data: &'a [u32],
    pub rows: u32,
    pub dim: u32,
}

impl<'a> Table<'a> {
    /// A table view; `data` must hold `rows` x `dim` elements.
    pub fn new(data: &'a [u32], rows: u32, dim: u32) -> Self {
        assert_eq!(data.len() as u64, u64::from(rows) * u64::from(dim));
        Table { data, rows, dim }
    }

    fn row(&self, id: i32) -> &'a [u32] {
        let d = self.dim as usize;
        let start = id as usize * d;
        &self.data[start..start + d]
    }
}

/// What a forward pass gives: the activations A[B][D] and how many entries
/// were skipped for ids outside the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forward {
    pub activations: Vec<u32>,
    pub invalid: u64,
}

/// Forward: lookup and combine into A[`batch`][D].
pub fn forward(table: Table, prepared: &Prepared, batch: u32) -> Forward {
    let d = table.dim as usize;
    let b = batch as usize;
    let mut acts = vec![0u32; b * d];
    let mut invalid = 0;
    for entries in &prepared.tiles {
        let mut partial = vec![0u32; b * d];
        for e in entries {
            if !id_in_table(e.id, table.rows) {
                invalid += 1;
                continue;
            }
            let row = table.row(e.id);
            let p = &mut partial[e.sample as usize * d..][..d];
            for (acc, &x) in p.iter_mut().zip(row) {
                *acc = add32(*acc, mul32(e.gain, x));
            }
        }
        for (a, &p) in acts.iter_mut().zip(&partial) {
            *a = add32(*a, p);
        }
    }
    Forward {
        activations: acts,
        invalid,
    }
}

/// What an update gives: the whole updated table and the skipped entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Update {
    pub table: Vec<u32>,
    pub invalid: u64,
    /// Rows written (each once).
    pub rows_written: u64,
}

/// Update (scatter-add SGD): `grad` is G[`batch`][D], `lr` the fp32 rate.
pub fn update(table: Table, prepared: &Prepared, grad: &[u32], batch: u32, lr: u32) -> Update {
    let d = table.dim as usize;
    assert_eq!(grad.len(), batch as usize * d);
    let mut out = table.data.to_vec();
    let mut invalid = 0;
    let mut rows_written = 0;
    for entries in &prepared.tiles {
        let mut i = 0;
        while i < entries.len() {
            let id = entries[i].id;
            if !id_in_table(id, table.rows) {
                invalid += 1;
                i += 1;
                continue;
            }
            let mut u = vec![0u32; d];
            while i < entries.len() && entries[i].id == id {
                let e = entries[i];
                let g = &grad[e.sample as usize * d..][..d];
                for (acc, &x) in u.iter_mut().zip(g) {
                    *acc = add32(*acc, mul32(e.gain, x));
                }
                i += 1;
            }
            let row = &mut out[id as usize * d..][..d];
            for (e, &ud) in row.iter_mut().zip(&u) {
                *e = sub32(*e, mul32(lr, ud));
            }
            rows_written += 1;
        }
    }
    Update {
        table: out,
        invalid,
        rows_written,
    }
}

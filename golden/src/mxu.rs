//! The matrix unit (MXU): what it computes and when.
//!
//! [`matmul_int8`] and [`matmul_bf16`] give the result of `C[M,N] = A[M,K] x B[K,N]`
//! bit for bit, following `docs/numerics.md#mxu-semantics`. All matrices are
//! row-major slices: `A[i][k]` is `a[i * k_dim + k]`, `B[k][j]` is
//! `b[k * n + j]`, `C[i][j]` is `c[i * n + j]`.
//!
//! [`MxuTiming`] is the cycle model of the weight-stationary array. It is the
//! RTL's timing contract, not an estimate: a run of the generated RTL under the
//! host protocol below must take exactly [`MxuTiming::total_cycles`] cycles.
//!
//! # Timing contract
//!
//! The array has R rows and C columns; L is the cycles a partial sum spends in
//! one PE (1 for int8, 2 for bf16) and La the accumulator adder's latency (0
//! for int8, 2 for bf16). A matmul of A\[M,K\] x B\[K,N\] has ceil(K/R) k-tiles
//! and ceil(N/C) n-tiles. It runs in passes, each over a block of P rows of A
//! and G n-tiles whose results fit the accumulator (P * G <= `acc_rows`): P =
//! min(rows of A left, `acc_rows`), G = max(1, `acc_rows` / P) (fewer for the
//! last n-tiles). M-blocks are the outer loop, n-tile groups the inner. A pass
//! runs its G * ceil(K/R) tiles, n-tile outer, k-tile inner, each streaming the
//! block's P rows; row m of the g-th n-tile of the group uses accumulator row
//! g * P + m. Cycle 0 is a pass's first cycle.
//!
//! The split into passes is the host's choice, not a rule of the hardware, so
//! the model takes it from [`config::mxu_plan`], the one plan the simulator's
//! driver and the board client follow too. Everything below, the hardware's
//! rules, is stated here from the interface contract alone.
//!
//! The host: writes the T*R weight rows in order, one per cycle whenever
//! `w_ready` is high; presents tile i's first activation row from the cycle
//! after tile i-1's last row was accepted (cycle 0 for tile 0) until it is
//! accepted, and the tile's other rows in the following cycles. Row m of a
//! k-tile > 0 adds into accumulator row m; k-tile 0 overwrites it.
//!
//! The hardware, in every cycle y (all quantities as registered at the start
//! of y unless said otherwise):
//! * The weight FIFO holds `count` rows (at most WF = the next power of two
//!   >= 2R) plus a head row; `w_ready` = count < WF.
//! * A tile is ready when R of its rows have been loaded and at least G = 2 + La
//!   cycles have passed since the previous first row was accepted. A first row
//!   is accepted only when a tile is ready; other rows always.
//! * Accepting a first row empties the loaded count; from then on the loader
//!   may not load for (R-1)*L cycles (it may in that same cycle when R = 1).
//! * The loader takes the head (loads a row) when the head is valid, loading is
//!   allowed, and fewer than R rows are loaded (counting the emptying above).
//! * The FIFO moves a row to the head when count > 0 and the head is empty or
//!   taken in y; a row written in y counts from y + 1.
//! * A row accepted in cycle y is written to the accumulator in cycle
//!   y + R*L + C - 1 + 1 + La.
//!
//! A pass ends with its last accumulator write; its cycles run from cycle 0
//! through that write. Total cycles are the sum over passes (the host reads
//! the accumulator out between passes; that is not counted). MACs = M*K*N;
//! utilization = MACs / (cycles * R * C).

use crate::numerics::{add32, bf16_mul};
use config::mxu_plan::MatmulPlan;
use config::{ElemType, MxuConfig};

/// int8 matmul: `C[i][j] = sum_k A[i][k] * B[k][j]`, each product exact in
/// int32, the sum wrapping modulo 2^32 (so the summation order is irrelevant).
///
/// `a` is A\[m\]\[k\], `b` is B\[k\]\[n\], the result C\[m\]\[n\], all row-major.
///
/// # Panics
///
/// If `a.len() != m * k` or `b.len() != k * n`.
pub fn matmul_int8(a: &[i8], b: &[i8], m: usize, k: usize, n: usize) -> Vec<i32> {
    check_shapes(a.len(), b.len(), m, k, n);
    let mut c = vec![0i32; m * n];
    if n == 0 {
        return c;
    }
    // i-k-j order: the inner loop runs along contiguous rows of B and C, which
    // the compiler vectorises.
    for (c_row, a_row) in c.chunks_exact_mut(n).zip(a.chunks_exact(k.max(1))) {
        for (&a_ik, b_row) in a_row.iter().zip(b.chunks_exact(n)) {
            let a_ik = i32::from(a_ik);
            for (c_ij, &b_kj) in c_row.iter_mut().zip(b_row) {
                *c_ij = c_ij.wrapping_add(a_ik * i32::from(b_kj));
            }
        }
    }
    c
}

/// bf16 matmul with fp32 results, exactly as `docs/numerics.md#mxu-semantics`
/// defines it for an array of `rows_r` rows.
///
/// K is cut into tiles of exactly R = `rows_r` rows; tile t covers
/// k = tR .. tR+R-1 and rows with k >= K hold +0.0 in both A and B. For each
/// output element and tile, s_t starts at +0.0 and accumulates
/// `s_t = add32(s_t, bf16_mul(A[i][k], B[k][j]))` over all R rows in ascending
/// k, padding rows included (they matter: -0 + +0 = +0). Then C = s_0 and
/// C = add32(C, s_t) for each later tile. The result therefore depends on R.
/// With K = 0 there are no tiles and every element is +0.0.
///
/// `a` and `b` hold bf16 bit patterns, row-major A\[m\]\[k\] and B\[k\]\[n\];
/// the result holds fp32 bit patterns, row-major C\[m\]\[n\].
///
/// # Panics
///
/// If `rows_r == 0`, `a.len() != m * k` or `b.len() != k * n`.
pub fn matmul_bf16(a: &[u16], b: &[u16], m: usize, k: usize, n: usize, rows_r: usize) -> Vec<u32> {
    assert!(rows_r > 0, "matmul_bf16: the array needs at least one row");
    check_shapes(a.len(), b.len(), m, k, n);
    const ZERO_BF16: u16 = 0;
    let k_tiles = k.div_ceil(rows_r);
    let mut c = vec![0u32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0u32;
            for t in 0..k_tiles {
                let mut s = 0u32;
                for kk in t * rows_r..(t + 1) * rows_r {
                    let (x, y) = if kk < k {
                        (a[i * k + kk], b[kk * n + j])
                    } else {
                        (ZERO_BF16, ZERO_BF16)
                    };
                    s = add32(s, bf16_mul(x, y));
                }
                acc = if t == 0 { s } else { add32(acc, s) };
            }
            c[i * n + j] = acc;
        }
    }
    c
}

fn check_shapes(a_len: usize, b_len: usize, m: usize, k: usize, n: usize) {
    assert_eq!(a_len, m * k, "A must hold m*k = {m}*{k} elements");
    assert_eq!(b_len, k * n, "B must hold k*n = {k}*{n} elements");
}

/// The cycle model of one matmul A\[M,K\] x B\[K,N\]; see the
/// [module docs](self#timing-contract) for the contract it states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MxuTiming {
    plan: MatmulPlan,
    rows: u64,
    cols: u64,
    pe_latency: u64,
    acc_add_latency: u64,
}

impl MxuTiming {
    /// The cycle model of `A[m,k] x B[k,n]` on the array `cfg` describes.
    ///
    /// # Panics
    ///
    /// If `m`, `k` or `n` is 0: an empty matmul issues nothing, so it has no
    /// schedule to model.
    pub fn new(cfg: &MxuConfig, m: usize, k: usize, n: usize) -> Self {
        let plan = MatmulPlan::new(cfg, m, k, n)
            .unwrap_or_else(|e| panic!("MxuTiming: {e} (they must be nonzero)"));
        let (pe_latency, acc_add_latency) = match cfg.dtype() {
            ElemType::Int8 => (1, 0),
            ElemType::Bf16 => (2, 2),
        };
        MxuTiming {
            plan,
            rows: u64::from(cfg.rows()),
            cols: u64::from(cfg.cols()),
            pe_latency,
            acc_add_latency,
        }
    }

    /// Array rows R (the K extent of a weight tile).
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Array columns C (the N extent of a weight tile).
    pub fn cols(&self) -> u64 {
        self.cols
    }

    /// Weight tiles along K: ceil(K/R).
    pub fn k_tiles(&self) -> u64 {
        self.plan.k_tiles() as u64
    }

    /// Weight tiles along N: ceil(N/C).
    pub fn n_tiles(&self) -> u64 {
        self.plan.n_tiles() as u64
    }

    /// T = ceil(K/R) * ceil(N/C), the weight tiles of the whole matmul.
    pub fn tile_count(&self) -> u64 {
        self.k_tiles() * self.n_tiles()
    }

    /// `(n_tile, k_tile)` of tile `i` of a pass: tiles run n-tile outer,
    /// k-tile inner.
    pub fn tile_coords(&self, i: u64) -> (u64, u64) {
        (i / self.k_tiles(), i % self.k_tiles())
    }

    /// The passes as (rows of A, n-tiles), in the order of the shared
    /// [`MatmulPlan`] (see the [contract](self#timing-contract)).
    pub fn passes(&self) -> Vec<(u64, u64)> {
        self.plan
            .passes()
            .iter()
            .map(|p| (p.rows as u64, p.n_tiles as u64))
            .collect()
    }

    /// Cycles from a row's acceptance to its accumulator write.
    pub fn write_latency(&self) -> u64 {
        self.rows * self.pe_latency + self.cols - 1 + 1 + self.acc_add_latency
    }

    /// The cycle each activation row of a pass of `pass_rows` rows over
    /// `n_tiles` n-tiles is accepted, in order (tile by tile), by stepping the
    /// contract's rules.
    pub fn acceptance_cycles(&self, pass_rows: u64, n_tiles: u64) -> Vec<u64> {
        let r = self.rows;
        let tiles = self.k_tiles() * n_tiles;
        let weight_rows = tiles * r;
        let total_rows = tiles * pass_rows;
        let fifo_rows = (2 * r).next_power_of_two();
        let hold_cycles = (r - 1) * self.pe_latency;
        let gap = 2 + self.acc_add_latency;

        let (mut written, mut count, mut head) = (0u64, 0u64, false);
        let (mut loaded, mut hold, mut since_first) = (0u64, 0u64, gap);
        let mut accepted = Vec::with_capacity(total_rows as usize);
        let mut y = 0u64;
        while (accepted.len() as u64) < total_rows {
            let write = written < weight_rows && count < fifo_rows;
            let first = (accepted.len() as u64).is_multiple_of(pass_rows);
            let ready = loaded == r && since_first >= gap;
            let accept = !first || ready;
            let first_accept = accept && first;
            let loaded_now = if first_accept { 0 } else { loaded };
            let may_load = if hold_cycles == 0 {
                true
            } else {
                !first_accept && hold == 0
            };
            let take = head && may_load && loaded_now < r;
            let fetch = count > 0 && (!head || take);

            if accept {
                accepted.push(y);
            }
            written += u64::from(write);
            count = count + u64::from(write) - u64::from(fetch);
            head = fetch || (head && !take);
            loaded = loaded_now + u64::from(take);
            hold = match (hold_cycles, first_accept) {
                (0, _) => 0,
                (h, true) => h - 1,
                (_, false) => hold.saturating_sub(1),
            };
            since_first = if first_accept {
                1
            } else {
                (since_first + 1).min(gap)
            };
            y += 1;
        }
        accepted
    }

    /// Cycles of one pass: through its last accumulator write.
    pub fn pass_cycles(&self, pass_rows: u64, n_tiles: u64) -> u64 {
        let last = *self
            .acceptance_cycles(pass_rows, n_tiles)
            .last()
            .expect("a pass has rows");
        last + self.write_latency() + 1
    }

    /// Cycles of the whole matmul: the sum over its passes.
    pub fn total_cycles(&self) -> u64 {
        self.passes()
            .iter()
            .map(|&(rows, n_tiles)| self.pass_cycles(rows, n_tiles))
            .sum()
    }

    /// M*K*N, the useful multiply-accumulates (padding excluded).
    pub fn macs(&self) -> u64 {
        let (m, k, n) = self.plan.dims();
        (m * k * n) as u64
    }

    /// MACs / (cycles * R * C): the fraction of the array's MAC slots over the
    /// whole run that do useful work.
    pub fn utilization(&self) -> f64 {
        self.macs() as f64 / (self.total_cycles() as f64 * (self.rows * self.cols) as f64)
    }
}

/// Total cycles of `A[m,k] x B[k,n]` on `cfg` (see [`MxuTiming::total_cycles`]).
///
/// # Panics
///
/// If a dimension is 0, as [`MxuTiming::new`].
pub fn matmul_cycles(cfg: &MxuConfig, m: usize, k: usize, n: usize) -> u64 {
    MxuTiming::new(cfg, m, k, n).total_cycles()
}

/// Array utilization of `A[m,k] x B[k,n]` on `cfg` (see
/// [`MxuTiming::utilization`]).
///
/// # Panics
///
/// If a dimension is 0, as [`MxuTiming::new`].
pub fn utilization(cfg: &MxuConfig, m: usize, k: usize, n: usize) -> f64 {
    MxuTiming::new(cfg, m, k, n).utilization()
}

#[cfg(test)]
mod tests {
    use super::*;
    use config::ElemType;

    fn cfg(rows: u32, cols: u32) -> MxuConfig {
        MxuConfig::new(rows, cols, ElemType::Int8).unwrap()
    }

    fn cfg_of(rows: u32, cols: u32, dtype: ElemType, acc_rows: u32) -> MxuConfig {
        MxuConfig::with_acc_rows(rows, cols, dtype, acc_rows).unwrap()
    }

    #[test]
    fn one_by_one_int8_single_mac() {
        // Weight written in cycle 0, head in 2 (fetched in 1), loaded in 2, so
        // the first row is accepted in 3 and written 1 + 0 + 1 + 0 = 2 later.
        let t = MxuTiming::new(&cfg(1, 1), 1, 1, 1);
        assert_eq!(t.passes(), [(1, 1)]);
        assert_eq!(t.acceptance_cycles(1, 1), [3]);
        assert_eq!(t.write_latency(), 2);
        assert_eq!(t.total_cycles(), 6);
    }

    #[test]
    fn the_first_tile_waits_for_its_r_weight_rows() {
        // 8x8: rows loaded in cycles 2..9, first row accepted in 10; then one
        // row per cycle with no gap between tiles when M is large. 256
        // accumulator rows hold one n-tile of 256 rows: 8 passes of 8 tiles.
        let t = MxuTiming::new(&cfg(8, 8), 256, 64, 64);
        assert_eq!(t.passes(), vec![(256, 1); 8]);
        let acc = t.acceptance_cycles(256, 1);
        assert_eq!(acc.len(), 8 * 256);
        assert_eq!(acc[0], 10);
        assert!(acc.windows(2).all(|w| w[1] == w[0] + 1));
        // int8 write latency 8 + 7 + 1 = 16.
        assert_eq!(t.pass_cycles(256, 1), 10 + 8 * 256 - 1 + 16 + 1);
        assert_eq!(t.total_cycles(), 8 * t.pass_cycles(256, 1));
        assert!(t.utilization() > 0.98, "{}", t.utilization());
        // With 2048 accumulator rows the whole matmul is one pass.
        let big = MxuTiming::new(&cfg_of(8, 8, ElemType::Int8, 2048), 256, 64, 64);
        assert_eq!(big.passes(), [(256, 8)]);
        assert!(big.utilization() > 0.998);
    }

    #[test]
    fn small_m_is_paced_by_the_shadow_hold_and_loading() {
        // M = 1, R = 8: after a first row in t the loader waits 7 cycles, loads
        // 8 rows in t+7 .. t+14, and the next first row is accepted in t+15.
        let t = MxuTiming::new(&cfg(8, 8), 1, 24, 8);
        let acc = t.acceptance_cycles(1, 1);
        assert_eq!(acc, [10, 25, 40]);
    }

    #[test]
    fn bf16_has_longer_latencies_and_a_wider_first_row_gap() {
        let c = cfg_of(1, 1, ElemType::Bf16, 16);
        let t = MxuTiming::new(&c, 1, 3, 1);
        // R = 1: no hold; gap 4 between first rows dominates.
        let acc = t.acceptance_cycles(1, 1);
        assert_eq!(acc[0], 3);
        assert!(acc.windows(2).all(|w| w[1] - w[0] >= 4), "{acc:?}");
        // bf16 write latency: 1*2 + 0 + 1 + 2 = 5.
        assert_eq!(t.write_latency(), 5);
    }

    #[test]
    fn m_beyond_the_accumulator_runs_in_passes() {
        // 4 accumulator rows, N = 3 on 2 columns: two n-tiles. Rows of A come
        // in blocks of 4 (one n-tile per pass), the last block of 2 rows takes
        // both n-tiles in one pass.
        let c = cfg_of(2, 2, ElemType::Int8, 4);
        let t = MxuTiming::new(&c, 10, 3, 3);
        assert_eq!(t.passes(), [(4, 1), (4, 1), (4, 1), (4, 1), (2, 2)]);
        assert_eq!(
            t.total_cycles(),
            4 * t.pass_cycles(4, 1) + t.pass_cycles(2, 2)
        );
    }

    #[test]
    #[should_panic(expected = "nonzero")]
    fn empty_matmul_has_no_schedule() {
        MxuTiming::new(&cfg(2, 2), 0, 1, 1);
    }

    #[test]
    fn int8_small_example() {
        // [1 2; 3 4] x [5 6; 7 8] = [19 22; 43 50]
        assert_eq!(
            matmul_int8(&[1, 2, 3, 4], &[5, 6, 7, 8], 2, 2, 2),
            [19, 22, 43, 50]
        );
        assert_eq!(matmul_int8(&[], &[], 2, 0, 3), [0; 6]);
    }
}

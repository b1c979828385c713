//! The matrix unit (MXU): what it computes and when.
//!
//! [`matmul_int8`] and [`matmul_bf16`] give the result of `C[M,N] = A[M,K] x B[K,N]`
//! bit for bit, following "MXU semantics" in `numerics.md`. All matrices are
//! row-major slices: `A[i][k]` is `a[i * k_dim + k]`, `B[k][j]` is
//! `b[k * n + j]`, `C[i][j]` is `c[i * n + j]`.
//!
//! [`MxuTiming`] is the cycle model of the int8 weight-stationary array. It is
//! the RTL's timing contract: a simulation of the generated RTL must take
//! exactly [`MxuTiming::total_cycles`] cycles and emit each output row in the
//! cycle [`MxuTiming::output_cycle`] names.
//!
//! # Timing contract
//!
//! * The array has R rows x C cols (R = `cfg.rows()`, C = `cfg.cols()`). A matmul
//!   of A\[M,K\] x B\[K,N\] runs T = ceil(K/R) * ceil(N/C) weight tiles, ordered
//!   n-tile outer, k-tile inner; every tile streams all M activation rows.
//! * Weights of a tile are pushed one row per cycle for R cycles. Tile 0's
//!   weights are pushed in cycles 0..R-1. Tile i's activation rows enter in
//!   cycles t_i .. t_i+M-1 with t_0 = R and t_{i+1} = t_i + I where the tile
//!   interval I = max(M, 2R-1) (double-buffered shadow weights: the next tile's
//!   R pushes must start after the current tile's switch wavefront has left the
//!   array's top rows and finish before its own first row, which costs 2R-1
//!   cycles when M is small). Tile i+1's weight pushes occupy cycles
//!   t_{i+1}-R .. t_{i+1}-1.
//! * Latency L = R + C - 1: an activation row entering in cycle t leaves as an
//!   output row in cycle t + L.
//! * Total cycles (from cycle 0 through the cycle of the last output row,
//!   inclusive) = R + (T-1)*I + M + L.
//! * MACs = M*K*N (useful products); utilization = MACs / (cycles * R * C).

use crate::numerics::{add32, bf16_mul};
use config::MxuConfig;

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

/// bf16 matmul with fp32 results, exactly as "MXU semantics" in `numerics.md`
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

/// The cycle model of one matmul A\[M,K\] x B\[K,N\] on the int8
/// weight-stationary array; see the [module docs](self#timing-contract) for the
/// contract it states. All cycle numbers count from cycle 0, the first weight
/// push of tile 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MxuTiming {
    rows: u64,
    cols: u64,
    m: u64,
    k: u64,
    n: u64,
}

impl MxuTiming {
    /// The schedule of `A[m,k] x B[k,n]` on the array `cfg` describes.
    ///
    /// # Panics
    ///
    /// If `m`, `k` or `n` is 0: an empty matmul issues nothing, so it has no
    /// schedule to model.
    pub fn new(cfg: &MxuConfig, m: usize, k: usize, n: usize) -> Self {
        assert!(
            m > 0 && k > 0 && n > 0,
            "MxuTiming: matmul dimensions must be nonzero, got m={m} k={k} n={n}"
        );
        MxuTiming {
            rows: u64::from(cfg.rows()),
            cols: u64::from(cfg.cols()),
            m: m as u64,
            k: k as u64,
            n: n as u64,
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
        self.k.div_ceil(self.rows)
    }

    /// Weight tiles along N: ceil(N/C).
    pub fn n_tiles(&self) -> u64 {
        self.n.div_ceil(self.cols)
    }

    /// T = ceil(K/R) * ceil(N/C), the number of weight tiles the matmul runs.
    pub fn tile_count(&self) -> u64 {
        self.k_tiles() * self.n_tiles()
    }

    /// `(n_tile, k_tile)` of tile `i`: tiles run n-tile outer, k-tile inner, so
    /// tile i covers columns `n_tile*C ..` and rows `k_tile*R ..` of B.
    pub fn tile_coords(&self, i: u64) -> (u64, u64) {
        (i / self.k_tiles(), i % self.k_tiles())
    }

    /// I = max(M, 2R-1), the cycles from one tile's first activation row to the
    /// next tile's. 2R-1 is the floor set by the shadow-weight double buffer:
    /// the next tile's R weight pushes must start after the current tile's
    /// switch wavefront has left the array's top rows and end before the next
    /// tile's first activation row.
    pub fn tile_interval(&self) -> u64 {
        self.m.max(2 * self.rows - 1)
    }

    /// L = R + C - 1: an activation row entering in cycle t leaves as an output
    /// row in cycle t + L.
    pub fn latency(&self) -> u64 {
        self.rows + self.cols - 1
    }

    /// t_i = R + i*I, the cycle tile `i`'s first activation row enters.
    pub fn tile_start(&self, i: u64) -> u64 {
        self.rows + i * self.tile_interval()
    }

    /// t_i - R, the first of the R cycles in which tile `i`'s weights are
    /// pushed (one weight row per cycle, through t_i - 1). Tile 0 pushes in
    /// cycles 0..R-1.
    pub fn weight_push_start(&self, i: u64) -> u64 {
        self.tile_start(i) - self.rows
    }

    /// t_i + r, the cycle activation row `r` (0-based, < M) of tile `i` enters.
    pub fn activation_cycle(&self, i: u64, r: u64) -> u64 {
        self.tile_start(i) + r
    }

    /// t_i + r + L, the cycle tile `i`'s output row `r` leaves the array.
    pub fn output_cycle(&self, i: u64, r: u64) -> u64 {
        self.activation_cycle(i, r) + self.latency()
    }

    /// R + (T-1)*I + M + L: cycles from cycle 0 through the cycle of the last
    /// output row, inclusive.
    pub fn total_cycles(&self) -> u64 {
        self.rows + (self.tile_count() - 1) * self.tile_interval() + self.m + self.latency()
    }

    /// M*K*N, the useful multiply-accumulates (padding excluded).
    pub fn macs(&self) -> u64 {
        self.m * self.k * self.n
    }

    /// MACs / (cycles * R * C): the fraction of the array's MAC slots over the
    /// whole run that do useful work.
    pub fn utilization(&self) -> f64 {
        self.macs() as f64 / (self.total_cycles() as f64 * (self.rows * self.cols) as f64)
    }
}

/// Total cycles of `A[m,k] x B[k,n]` on `cfg`: R + (T-1)*I + M + L
/// (see [`MxuTiming::total_cycles`]).
///
/// # Panics
///
/// If a dimension is 0, as [`MxuTiming::new`].
pub fn matmul_cycles(cfg: &MxuConfig, m: usize, k: usize, n: usize) -> u64 {
    MxuTiming::new(cfg, m, k, n).total_cycles()
}

/// Array utilization of `A[m,k] x B[k,n]` on `cfg`: M*K*N / (cycles * R * C)
/// (see [`MxuTiming::utilization`]).
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

    #[test]
    fn one_by_one_array_single_mac_takes_three_cycles() {
        // Push the weight (cycle 0), the activation enters (1), output (1 + L = 2).
        let t = MxuTiming::new(&cfg(1, 1), 1, 1, 1);
        assert_eq!((t.tile_count(), t.tile_interval(), t.latency()), (1, 1, 1));
        assert_eq!(t.total_cycles(), 3);
        assert_eq!(t.output_cycle(0, 0), 2);
        assert!((t.utilization() - 1.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn eight_by_eight_large_m_is_nearly_fully_used() {
        // T = 8 * 8 = 64, I = 256, L = 15: 8 + 63*256 + 256 + 15 = 16407.
        let c = cfg(8, 8);
        assert_eq!(matmul_cycles(&c, 256, 64, 64), 16407);
        // 256*64*64 / (16407 * 64) = 1048576 / 1050048.
        let u = utilization(&c, 256, 64, 64);
        assert!((u - 1_048_576.0 / 1_050_048.0).abs() < 1e-12);
        assert!((u - 0.9986).abs() < 1e-4);
    }

    #[test]
    fn small_m_is_paced_by_the_weight_double_buffer() {
        // M = 1 < 2R-1 = 15: two k-tiles, 8 + 1*15 + 1 + 15 = 39.
        let t = MxuTiming::new(&cfg(8, 8), 1, 16, 8);
        assert_eq!((t.tile_count(), t.tile_interval()), (2, 15));
        assert_eq!(t.total_cycles(), 39);
        assert_eq!(t.weight_push_start(1), 15);
        assert_eq!(t.tile_start(1), 23);
    }

    #[test]
    fn ragged_shapes_round_tiles_up() {
        // R=4, C=3, M=5, K=10, N=7: 3 k-tiles x 3 n-tiles, I = max(5, 7) = 7,
        // L = 6: 4 + 8*7 + 5 + 6 = 71.
        let t = MxuTiming::new(&cfg(4, 3), 5, 10, 7);
        assert_eq!((t.k_tiles(), t.n_tiles(), t.tile_count()), (3, 3, 9));
        assert_eq!((t.tile_interval(), t.latency()), (7, 6));
        assert_eq!(t.total_cycles(), 71);
        assert_eq!(t.tile_coords(4), (1, 1));
        assert_eq!(t.tile_coords(8), (2, 2));
        assert_eq!((t.tile_start(2), t.weight_push_start(2)), (18, 14));
        assert_eq!(t.macs(), 350);
    }

    #[test]
    fn schedule_is_consistent_with_the_total() {
        for (r, c, m, k, n) in [
            (1, 1, 1, 1, 1),
            (8, 8, 3, 17, 9),
            (4, 16, 40, 8, 33),
            (16, 4, 7, 100, 5),
        ] {
            let t = MxuTiming::new(&cfg(r, c), m, k, n);
            let last = t.tile_count() - 1;
            assert_eq!(t.output_cycle(last, m as u64 - 1) + 1, t.total_cycles());
            assert_eq!(t.weight_push_start(0), 0);
            for i in 0..last {
                // Pushes of consecutive tiles never overlap, nor do activation streams.
                assert!(t.weight_push_start(i + 1) >= t.tile_start(i));
                assert!(t.tile_start(i + 1) > t.activation_cycle(i, m as u64 - 1));
                // The next tile's pushes start no earlier than R-1 cycles after
                // the current tile's first row entered.
                assert!(t.weight_push_start(i + 1) >= t.tile_start(i) + t.rows() - 1);
            }
        }
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

//! How a host cuts a matmul into the MXU's weight tiles and passes.
//!
//! `C[M,N] = A[M,K] x B[K,N]` on an R x C array with an accumulator of
//! `acc_rows` rows runs as follows. B is cut into R x C weight tiles:
//! ceil(K/R) k-tiles by ceil(N/C) n-tiles, zero-padded at the edges (zero is
//! +0.0 for bf16, as `docs/numerics.md#bf16-matmul` pads). The rows of A are taken in blocks of
//! P = min(rows of A left, block limit) rows, where the block limit is
//! `acc_rows` (and, for a host that stages A in a buffer, at most that
//! buffer's depth). Each block runs in passes over groups of
//! G = max(1, `acc_rows` / P) n-tiles (fewer for the last group), so the
//! P x G result rows of a pass fit the accumulator: row m of the g-th n-tile
//! of a pass goes to accumulator row g * P + m. M-blocks are the outer loop,
//! n-tile groups the inner one.
//!
//! This is a decision of the host, not a property of the RTL: the array
//! computes whatever tiles it is given. It lives here, beside the
//! configuration, because three parties must make the same decision: the
//! golden cycle model (`golden::MxuTiming` counts the cycles of exactly these
//! passes), the simulator's MXU driver, and the board client
//! (`host::Client`). Sharing the plan does not weaken the independence of the
//! golden model from the RTL; the model still states the hardware's timing
//! rules on its own.

use crate::{ConfigError, MxuConfig};

/// One pass over the accumulator: rows `m0 .. m0 + rows` of A against
/// n-tiles `nt0 .. nt0 + n_tiles`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Pass {
    /// First row of A in this pass.
    pub m0: usize,
    /// Rows of A in this pass, P.
    pub rows: usize,
    /// First n-tile of this pass.
    pub nt0: usize,
    /// n-tiles in this pass, G.
    pub n_tiles: usize,
}

impl Pass {
    /// The accumulator row that row `m` (of this pass) of its `g`-th n-tile uses.
    pub fn acc_row(&self, g: usize, m: usize) -> usize {
        g * self.rows + m
    }

    /// Accumulator rows the pass fills, P x G.
    pub fn acc_rows_used(&self) -> usize {
        self.rows * self.n_tiles
    }
}

/// The tiling and passes of one matmul `A[m,k] x B[k,n]` on one array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MatmulPlan {
    rows: usize,
    cols: usize,
    acc_rows: usize,
    block_limit: usize,
    m: usize,
    k: usize,
    n: usize,
}

impl MatmulPlan {
    /// The plan of `A[m,k] x B[k,n]` on the array `cfg` describes, with
    /// blocks of at most `acc_rows` rows of A. Every dimension must be >= 1:
    /// an empty matmul issues nothing.
    pub fn new(cfg: &MxuConfig, m: usize, k: usize, n: usize) -> Result<Self, ConfigError> {
        MatmulPlan::with_block_limit(cfg, m, k, n, usize::MAX)
    }

    /// As [`MatmulPlan::new`], with blocks of A also at most `block_limit`
    /// rows (a host that stages A's rows in a buffer of that depth).
    pub fn with_block_limit(
        cfg: &MxuConfig,
        m: usize,
        k: usize,
        n: usize,
        block_limit: usize,
    ) -> Result<Self, ConfigError> {
        if m == 0 || k == 0 || n == 0 {
            return Err(ConfigError(format!(
                "matmul dimensions must be >= 1, got M={m} K={k} N={n}"
            )));
        }
        if block_limit == 0 {
            return Err(ConfigError("a block of A needs at least one row".into()));
        }
        Ok(MatmulPlan {
            rows: cfg.rows() as usize,
            cols: cfg.cols() as usize,
            acc_rows: cfg.acc_rows() as usize,
            block_limit: block_limit.min(cfg.acc_rows() as usize),
            m,
            k,
            n,
        })
    }

    /// (M, K, N).
    pub fn dims(&self) -> (usize, usize, usize) {
        (self.m, self.k, self.n)
    }

    /// Weight tiles along K: ceil(K/R).
    pub fn k_tiles(&self) -> usize {
        self.k.div_ceil(self.rows)
    }

    /// Weight tiles along N: ceil(N/C).
    pub fn n_tiles(&self) -> usize {
        self.n.div_ceil(self.cols)
    }

    /// The passes in order: M-blocks outer, n-tile groups inner.
    pub fn passes(&self) -> Vec<Pass> {
        let n_tiles = self.n_tiles();
        let mut out = Vec::new();
        let mut m0 = 0;
        while m0 < self.m {
            let rows = self.block_limit.min(self.m - m0);
            let group = (self.acc_rows / rows).max(1);
            let mut nt0 = 0;
            while nt0 < n_tiles {
                let g = group.min(n_tiles - nt0);
                out.push(Pass {
                    m0,
                    rows,
                    nt0,
                    n_tiles: g,
                });
                nt0 += g;
            }
            m0 += rows;
        }
        out
    }

    /// Checks that A holds M x K and B K x N elements.
    pub fn check_operands(&self, a_len: usize, b_len: usize) -> Result<(), ConfigError> {
        let (m, k, n) = (self.m, self.k, self.n);
        if a_len != m * k || b_len != k * n {
            return Err(ConfigError(format!(
                "A has {a_len} elements and B {b_len}, expected {} (M x K) and {} (K x N)",
                m * k,
                k * n
            )));
        }
        Ok(())
    }

    /// Where element `r` (0..R) of row `m` of A's k-tile `kt` comes from:
    /// its index in row-major A, or `None` for padding (k >= K).
    pub fn a_index(&self, m: usize, kt: usize, r: usize) -> Option<usize> {
        let kk = kt * self.rows + r;
        (kk < self.k).then(|| m * self.k + kk)
    }

    /// Where element (`r`, `c`) of weight tile (`kt`, `nt`) comes from: its
    /// index in row-major B, or `None` for padding (k >= K or n >= N).
    pub fn b_index(&self, kt: usize, nt: usize, r: usize, c: usize) -> Option<usize> {
        let (kk, nn) = (kt * self.rows + r, nt * self.cols + c);
        (kk < self.k && nn < self.n).then(|| kk * self.n + nn)
    }

    /// Where column `c` (0..C) of n-tile `nt` of result row `m` goes: its
    /// index in row-major C, or `None` past N.
    pub fn c_index(&self, m: usize, nt: usize, c: usize) -> Option<usize> {
        let nn = nt * self.cols + c;
        (nn < self.n).then(|| m * self.n + nn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ElemType;

    fn cfg(rows: u32, cols: u32, acc_rows: u32) -> MxuConfig {
        MxuConfig::with_acc_rows(rows, cols, ElemType::Int8, acc_rows).unwrap()
    }

    fn shape(plan: &MatmulPlan) -> Vec<(usize, usize)> {
        plan.passes().iter().map(|p| (p.rows, p.n_tiles)).collect()
    }

    #[test]
    fn m_beyond_the_accumulator_runs_in_blocks_and_small_blocks_group_n_tiles() {
        // 4 accumulator rows, N = 3 on 2 columns: two n-tiles. Blocks of 4
        // rows take one n-tile per pass; the last block of 2 takes both.
        let plan = MatmulPlan::new(&cfg(2, 2, 4), 10, 3, 3).unwrap();
        assert_eq!(shape(&plan), [(4, 1), (4, 1), (4, 1), (4, 1), (2, 2)]);
        let last = plan.passes()[4];
        assert_eq!((last.m0, last.nt0), (8, 0));
        assert_eq!(last.acc_row(1, 1), 3);
        for p in plan.passes() {
            assert!(p.acc_rows_used() <= 4);
        }
    }

    #[test]
    fn a_block_limit_below_the_accumulator_shortens_blocks() {
        let plan = MatmulPlan::with_block_limit(&cfg(2, 2, 8), 10, 3, 3, 4).unwrap();
        assert_eq!(shape(&plan), [(4, 2), (4, 2), (2, 2)]);
    }

    #[test]
    fn padding_is_outside_the_matrices() {
        let plan = MatmulPlan::new(&cfg(2, 2, 4), 3, 3, 3).unwrap();
        assert_eq!(plan.a_index(2, 1, 0), Some(2 * 3 + 2));
        assert_eq!(plan.a_index(2, 1, 1), None);
        assert_eq!(plan.b_index(1, 1, 0, 0), Some(2 * 3 + 2));
        assert_eq!(plan.b_index(1, 1, 0, 1), None);
        assert_eq!(plan.b_index(1, 0, 1, 0), None);
        assert_eq!(plan.c_index(1, 1, 0), Some(3 + 2));
        assert_eq!(plan.c_index(1, 1, 1), None);
    }

    #[test]
    fn empty_matmuls_and_wrong_operands_are_refused_in_one_line() {
        assert!(MatmulPlan::new(&cfg(2, 2, 4), 0, 1, 1).is_err());
        let plan = MatmulPlan::new(&cfg(2, 2, 4), 2, 3, 4).unwrap();
        assert!(plan.check_operands(6, 12).is_ok());
        let err = plan.check_operands(5, 12).unwrap_err().to_string();
        assert!(
            err.contains("expected 6 (M x K)") && !err.contains('\n'),
            "{err}"
        );
    }
}

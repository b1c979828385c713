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
//! The contract is written at the MXU's ports, in `hw/mxu/TIMING.md` (the
//! `mxu` crate's docs), as numbered rules; this model steps those rules and
//! cites them by number. It is written from that text, not from the RTL: its
//! state is what the rules speak of (rows queued in the weight FIFO, rows of
//! the next tile in place, when the last first row was accepted, rows
//! accepted), not the design's registers. The rules it applies, in short (R,
//! C the array's rows and columns, D the configuration's pipeline depth; L
//! the PE latency: 1 for int8, 2 for bf16 (6 at D = 4); P the product
//! latency, min(D, 2) (int8 3, bf16 4 at D = 4); La the accumulator adder's
//! latency: 0 for int8, 2 for bf16, one more when D >= 3 (bf16 7 at D = 4);
//! WF the next power of two >= 2R):
//!
//! * H1, H2: a row transfers in a cycle where valid and ready are both high;
//!   the readies follow from the state at the start of the cycle (and
//!   `a_ready_o` from `a_first_i`).
//! * W2: `w_ready_o` is high while fewer than WF + 1 weight rows are held (a
//!   row is held from the cycle after its write through its load).
//! * W3: rows are loaded in order, one per cycle, two cycles after their write
//!   at the earliest.
//! * L1: the loader loads rows of the next tile until R are loaded (the tile is
//!   *in place* from the next cycle); accepting a first row hands the tile to
//!   the array and the shadows start over.
//! * L2: after a first row accepted in cycle t the loader waits until
//!   t + (R-1)·L.
//! * A1, A2: other rows are accepted whenever offered; a first row only when
//!   its tile is in place and 2 + La cycles after the previous first row.
//! * D1: a row accepted in cycle t is written to the accumulator in cycle
//!   t + Ai + R·L + P + C + La (Ai, the array's input registers: 1 at D = 5,
//!   else 0); B1: `busy_o` is high from the cycle after an
//!   acceptance through its write.
//! * R1: a read in cycle y answers in cycle y + Lr: Lr = 1, and 2 at D = 5
//!   (the read row is registered once more before the port).
//!
//! The host is the eager one of the contract's closed forms (what `sim`'s
//! driver does): after a reset it offers the pass's weight rows in order, each
//! from the cycle after the one before was written, and its activation rows in
//! order, each from the cycle after the one before was accepted; cycle 0 is
//! the first cycle after the reset. Row m of a k-tile > 0 adds into
//! accumulator row m; k-tile 0 overwrites it.
//!
//! A matmul of A\[M,K\] x B\[K,N\] has ceil(K/R) k-tiles and ceil(N/C)
//! n-tiles. It runs in passes, each over a block of P rows of A and G n-tiles
//! whose results fit the accumulator (P * G <= `acc_rows`): P = min(rows of A
//! left, `acc_rows`), G = max(1, `acc_rows` / P) (fewer for the last
//! n-tiles). M-blocks are the outer loop, n-tile groups the inner. A pass runs
//! its G * ceil(K/R) tiles, n-tile outer, k-tile inner, each streaming the
//! block's P rows; row m of the g-th n-tile of the group uses accumulator row
//! g * P + m. The split into passes is the host's choice, not a rule of the
//! hardware, so the model takes it from [`config::mxu_plan`], the one plan the
//! simulator's driver and the board client follow too.
//!
//! A pass ends with its last accumulator write; its cycles run from cycle 0
//! through that write. Total cycles are the sum over passes (the host resets
//! the MXU and reads the accumulator out between passes; that is not
//! counted). MACs = M*K*N; utilization = MACs / (cycles * R * C).
//!
//! # Int8 mode
//!
//! A bf16 array in int8 mode (`MxuConfig::int8_mode`) takes a mode bit with
//! every activation row. A bf16 row computes what the bf16 array computes.
//! An int8 row reads the low byte (bits 7..0) of each 16-bit operand, of its
//! activations and of the weights, as int8, and computes the int8 matmul's
//! semantics (`docs/numerics.md`, "int8 matmul": exact products, wrapping
//! int32 sums); its accumulator write overwrites or adds in wrapping int32.
//! The timing contract is the bf16 array's at the same depth for both kinds
//! of rows, so [`MxuTiming`] of the configuration (whose element type is
//! bf16) is its cycle model. A whole matmul of one kind is
//! [`matmul_int8_low_bytes`] or [`matmul_bf16`]; rows of both kinds mixed in
//! one tile are [`tile_row`] and [`accumulate`], row by row.

use crate::numerics::{add32, bf16_mul};
use config::mxu_plan::MatmulPlan;
use config::{ElemType, MxuConfig};
use std::collections::{HashMap, VecDeque};

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

/// The int8 value an int8 row of an array in int8 mode reads from a 16-bit
/// operand: its low byte, as two's complement (bits 15..8 are ignored).
pub fn low_byte(x: u16) -> i8 {
    x as u8 as i8
}

/// The int8 matmul of the low bytes of `a` (A\[m\]\[k\]) and `b`
/// (B\[k\]\[n\]): what an array in int8 mode computes for a matmul streamed
/// as int8 rows, [`matmul_int8`] of [`low_byte`] of every operand.
///
/// # Panics
///
/// If `a.len() != m * k` or `b.len() != k * n`.
pub fn matmul_int8_low_bytes(a: &[u16], b: &[u16], m: usize, k: usize, n: usize) -> Vec<i32> {
    check_shapes(a.len(), b.len(), m, k, n);
    let low = |x: &[u16]| x.iter().map(|&v| low_byte(v)).collect::<Vec<i8>>();
    matmul_int8(&low(a), &low(b), m, k, n)
}

/// What one activation row `row` (R operands) computes with one weight tile
/// on an array in int8 mode, column by column: `tile` holds the tile's R x C
/// weights, W\[k\]\[c\] at `k * cols + c`. An int8 row (`int8`) gives
/// sum_k low(row\[k\]) x low(W\[k\]\[c\]) wrapping in int32 (as bits); a bf16
/// row the tile sum of `docs/numerics.md`, "bf16 matmul" step 3: from +0.0,
/// `add32` of each `bf16_mul(row[k], W[k][c])` in ascending k.
///
/// # Panics
///
/// If `row` is empty, `cols` is 0 or `tile.len() != row.len() * cols`.
pub fn tile_row(row: &[u16], tile: &[u16], cols: usize, int8: bool) -> Vec<u32> {
    assert!(!row.is_empty() && cols > 0, "a tile has rows and columns");
    assert_eq!(tile.len(), row.len() * cols, "the tile holds R x C weights");
    (0..cols)
        .map(|c| {
            let weights = tile.iter().skip(c).step_by(cols);
            if int8 {
                row.iter().zip(weights).fold(0i32, |s, (&a, &w)| {
                    s.wrapping_add(i32::from(low_byte(a)) * i32::from(low_byte(w)))
                }) as u32
            } else {
                row.iter()
                    .zip(weights)
                    .fold(0u32, |s, (&a, &w)| add32(s, bf16_mul(a, w)))
            }
        })
        .collect()
}

/// An accumulator row's next value, one column: the row's result `new`
/// where the row overwrites (`add` low); where it adds, `old` + `new` in
/// wrapping int32 for an int8 row, `add32(old, new)` for a bf16 row (the
/// accumulator the first operand).
pub fn accumulate(old: u32, new: u32, add: bool, int8: bool) -> u32 {
    match (add, int8) {
        (false, _) => new,
        (true, true) => old.wrapping_add(new),
        (true, false) => add32(old, new),
    }
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
    product_latency: u64,
    acc_add_latency: u64,
    input_latency: u64,
    read_latency: u64,
}

/// The cycle of every event of one pass, as the contract's rules place them
/// for the eager host (cycle 0 is the first cycle after the pass's reset).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PassSchedule {
    /// The cycle each weight row is written into the FIFO (H1, W2), in order.
    pub weight_rows_written: Vec<u64>,
    /// The cycle each weight row is loaded into the shadow registers (W3,
    /// L1 - L3), in order.
    pub weight_rows_loaded: Vec<u64>,
    /// The cycle each activation row is accepted (A1, A2), tile by tile.
    pub rows_accepted: Vec<u64>,
    /// The cycle each activation row is written into the accumulator (D1), in
    /// the order of `rows_accepted`.
    pub acc_writes: Vec<u64>,
}

impl PassSchedule {
    /// Cycles of the pass: cycle 0 through its last accumulator write.
    pub fn cycles(&self) -> u64 {
        self.acc_writes.last().map_or(0, |&w| w + 1)
    }

    /// `busy_o` in cycle `y` (B1): some row accepted before `y` is written
    /// in `y` or later.
    pub fn busy(&self, y: u64) -> bool {
        self.rows_accepted
            .iter()
            .zip(&self.acc_writes)
            .any(|(&accepted, &written)| accepted < y && y <= written)
    }

    /// Weight rows held in the FIFO in cycle `y` (W2): written before `y` and
    /// not loaded before `y`.
    pub fn weight_rows_held(&self, y: u64) -> u64 {
        let before = |cycles: &[u64]| cycles.iter().filter(|&&x| x < y).count() as u64;
        before(&self.weight_rows_written) - before(&self.weight_rows_loaded)
    }
}

/// What happens in a cycle of a pass, reported by [`MxuTiming::step_pass`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    WeightRowWritten,
    WeightRowLoaded,
    RowAccepted,
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
        // The contract's L, P and La (its "Terms" and the depth table):
        // through depth 3, L by element type alone, P = min(D, 2), La one
        // more at D = 3; depths 4 and 5 as their own rows of the table.
        let depth = u64::from(cfg.depth());
        let (pe_latency, product_latency, acc_add_latency) = match (cfg.dtype(), depth) {
            (ElemType::Int8, 0..=3) => (1, depth.min(2), u64::from(depth >= 3)),
            (ElemType::Bf16, 0..=3) => (2, depth.min(2), 2 + u64::from(depth >= 3)),
            (ElemType::Int8, 4) => (1, 3, 1),
            (ElemType::Bf16, 4) => (6, 4, 7),
            // Depth 5: depth 4 with the multiplier's operands registered
            // once more (and int8's partial products): P = 5 for both.
            (ElemType::Int8, _) => (1, 5, 1),
            (ElemType::Bf16, _) => (6, 5, 7),
        };
        // D1's Ai: at depth 5 the array's inputs wait a cycle in registers.
        let input_latency = u64::from(depth >= 5);
        // R1: the host's read row waits in one more register at depth 5.
        let read_latency = if depth >= 5 { 2 } else { 1 };
        MxuTiming {
            plan,
            rows: u64::from(cfg.rows()),
            cols: u64::from(cfg.cols()),
            pe_latency,
            product_latency,
            acc_add_latency,
            input_latency,
            read_latency,
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

    /// L: cycles a partial sum spends in one PE (1 for int8, 2 for bf16).
    pub fn pe_latency(&self) -> u64 {
        self.pe_latency
    }

    /// P: cycles from an activation's arrival at a PE to its product entering
    /// the partial sum, min(D, 2).
    pub fn product_latency(&self) -> u64 {
        self.product_latency
    }

    /// La: latency of the accumulator's adder (0 for int8, 2 for bf16; one
    /// more at depth 3).
    pub fn acc_add_latency(&self) -> u64 {
        self.acc_add_latency
    }

    /// Lr: cycles from a host read (`acc_rd_en_i`) to its row and
    /// `acc_rd_valid_o` (R1): 1, and 2 at depth 5.
    pub fn read_latency(&self) -> u64 {
        self.read_latency
    }

    /// WF, the next power of two >= 2R: the weight FIFO holds WF + 1 rows (W2).
    pub fn weight_fifo_rows(&self) -> u64 {
        (2 * self.rows).next_power_of_two()
    }

    /// Cycles the loader waits after a first row is accepted, (R-1)·L (L2).
    pub fn loader_hold(&self) -> u64 {
        (self.rows - 1) * self.pe_latency
    }

    /// Fewest cycles between the acceptances of two first rows, 2 + La (A2).
    pub fn first_row_gap(&self) -> u64 {
        2 + self.acc_add_latency
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

    /// Ai: the array's input registers, 1 at depth 5, else 0 (D1).
    pub fn input_latency(&self) -> u64 {
        self.input_latency
    }

    /// Cycles from a row's acceptance to its accumulator write (D1):
    /// Ai + R·L + P + C + La.
    pub fn write_latency(&self) -> u64 {
        self.input_latency
            + self.rows * self.pe_latency
            + self.product_latency
            + self.cols
            + self.acc_add_latency
    }

    /// Every event of a pass of `pass_rows` rows over `n_tiles` n-tiles, by
    /// stepping the contract's rules.
    pub fn pass_schedule(&self, pass_rows: u64, n_tiles: u64) -> PassSchedule {
        let mut s = PassSchedule::default();
        self.step_pass(pass_rows, n_tiles, |event, y| match event {
            Event::WeightRowWritten => s.weight_rows_written.push(y),
            Event::WeightRowLoaded => s.weight_rows_loaded.push(y),
            Event::RowAccepted => s.rows_accepted.push(y),
        });
        // D1: every row is written a fixed latency after its acceptance.
        s.acc_writes = s
            .rows_accepted
            .iter()
            .map(|&t| t + self.write_latency())
            .collect();
        s
    }

    /// The cycle each activation row of a pass of `pass_rows` rows over
    /// `n_tiles` n-tiles is accepted, in order (tile by tile), by stepping the
    /// contract's rules.
    pub fn acceptance_cycles(&self, pass_rows: u64, n_tiles: u64) -> Vec<u64> {
        let mut accepted = Vec::new();
        self.step_pass(pass_rows, n_tiles, |event, y| {
            if event == Event::RowAccepted {
                accepted.push(y);
            }
        });
        accepted
    }

    /// Cycles of one pass: through its last accumulator write.
    pub fn pass_cycles(&self, pass_rows: u64, n_tiles: u64) -> u64 {
        let mut last_accepted = None;
        self.step_pass(pass_rows, n_tiles, |event, y| {
            if event == Event::RowAccepted {
                last_accepted = Some(y);
            }
        });
        let last = last_accepted.expect("a pass has rows");
        // D1: the last row's write is the pass's last cycle.
        last + self.write_latency() + 1
    }

    /// Cycles of the whole matmul: the sum over its passes.
    pub fn total_cycles(&self) -> u64 {
        // Most passes are alike (full blocks of A); each shape is stepped once.
        let mut cycles_of: HashMap<(u64, u64), u64> = HashMap::new();
        self.passes()
            .into_iter()
            .map(|pass| {
                *cycles_of
                    .entry(pass)
                    .or_insert_with(|| self.pass_cycles(pass.0, pass.1))
            })
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

    /// Steps one pass after a reset, cycle by cycle, with the eager host, and
    /// reports each event with its cycle, until every activation row is
    /// accepted (the writes follow from D1).
    fn step_pass(&self, pass_rows: u64, n_tiles: u64, mut report: impl FnMut(Event, u64)) {
        let r = self.rows;
        let tiles = self.k_tiles() * n_tiles;
        let weight_rows = tiles * r;
        let rows = tiles * pass_rows;
        // The host's progress.
        let (mut weight_rows_written, mut rows_accepted) = (0u64, 0u64);
        // W2, W3: the rows in the weight FIFO, as the cycles they were
        // written in, oldest first.
        let mut rows_queued: VecDeque<u64> = VecDeque::new();
        // L1: rows of the next tile in the shadow registers.
        let mut next_tile_rows_loaded = 0u64;
        // A2, L2: when the last first row was accepted (Z2: none after reset).
        let mut last_first_row: Option<u64> = None;

        let mut y = 0u64;
        while rows_accepted < rows {
            // H2: both readies follow from the state at the start of y.
            // W2: fewer than WF + 1 rows held (written before y, loaded in y
            // or later).
            let w_ready = (rows_queued.len() as u64) < self.weight_fifo_rows() + 1;
            // A1, A2 (a tile is M rows, the first of them a first row).
            let first_row = rows_accepted.is_multiple_of(pass_rows);
            let tile_in_place = next_tile_rows_loaded == r;
            let gap_kept = last_first_row.is_none_or(|t| y >= t + self.first_row_gap());
            let a_ready = !first_row || (tile_in_place && gap_kept);

            // H1: the eager host offers its next rows in every cycle.
            if weight_rows_written < weight_rows && w_ready {
                weight_rows_written += 1;
                rows_queued.push_back(y);
                report(Event::WeightRowWritten, y);
            }
            if rows_accepted < rows && a_ready {
                rows_accepted += 1;
                report(Event::RowAccepted, y);
                if first_row {
                    // L1: the tile in place goes to the array; the shadows
                    // start over for the tile after it.
                    next_tile_rows_loaded = 0;
                    last_first_row = Some(y);
                }
            }

            // L2: no load from a first row's cycle until ·L after it.
            let holding = last_first_row.is_some_and(|t| y < t + self.loader_hold());
            // W3: the oldest queued row, once two cycles have passed since
            // its write (one row per cycle, in order).
            let oldest_ready = rows_queued.front().is_some_and(|&x| y >= x + 2);
            // L1, L3: load whenever allowed, until the next tile is in place.
            if !holding && next_tile_rows_loaded < r && oldest_ready {
                rows_queued.pop_front();
                next_tile_rows_loaded += 1;
                report(Event::WeightRowLoaded, y);
            }
            y += 1;
        }
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

    /// The model of a single pass of `m` rows over `k_tiles` tiles (one n-tile).
    fn one_pass(rows: u32, cols: u32, dtype: ElemType, m: u64, k_tiles: u64) -> MxuTiming {
        one_pass_at(rows, cols, dtype, 0, m, k_tiles)
    }

    /// [`one_pass`] on the array pipelined to `depth`.
    fn one_pass_at(
        rows: u32,
        cols: u32,
        dtype: ElemType,
        depth: u32,
        m: u64,
        k_tiles: u64,
    ) -> MxuTiming {
        let c = cfg_of(rows, cols, dtype, 256).with_depth(depth).unwrap();
        let t = MxuTiming::new(&c, m as usize, (k_tiles * u64::from(rows)) as usize, 1);
        assert_eq!(t.passes(), [(m, 1)]);
        t
    }

    /// The contract's closed form ("Closed forms" in `hw/mxu/TIMING.md`): the
    /// first rows' cycles and the cycles of a pass of `tiles` tiles of `m`
    /// rows each, for the eager host.
    fn closed_form(t: &MxuTiming, m: u64, tiles: u64) -> (Vec<u64>, u64) {
        let (r, c, l, la) = (t.rows(), t.cols(), t.pe_latency(), t.acc_add_latency());
        let (p, ai) = (t.product_latency(), t.input_latency());
        let period = m.max(2 + la).max(r + (r - 1) * l);
        let first_rows = (0..tiles).map(|i| r + 2 + i * period).collect();
        let cycles = r + 2 + (tiles - 1) * period + m + ai + r * l + p + c + la;
        (first_rows, cycles)
    }

    #[test]
    fn one_by_one_int8_single_mac() {
        // W3: the weight written in cycle 0 is loaded in 2, so the tile is in
        // place in 3 and its first row accepted then (A2); D1: written
        // 1 + 1 + 0 = 2 cycles later.
        let t = MxuTiming::new(&cfg(1, 1), 1, 1, 1);
        assert_eq!(t.passes(), [(1, 1)]);
        let s = t.pass_schedule(1, 1);
        assert_eq!(s.weight_rows_written, [0]);
        assert_eq!(s.weight_rows_loaded, [2]);
        assert_eq!(s.rows_accepted, [3]);
        assert_eq!(s.acc_writes, [5]);
        assert_eq!(t.write_latency(), 2);
        assert_eq!(t.total_cycles(), 6);
    }

    #[test]
    fn the_contracts_examples() {
        // The table under "Closed forms" in hw/mxu/TIMING.md.
        use ElemType::{Bf16, Int8};
        for (rows, dtype, depth, m, k_tiles, cycles) in [
            (1, Int8, 0, 1, 1, 6),
            (8, Int8, 0, 1, 3, 57),
            (8, Int8, 0, 256, 8, 2074),
            (8, Bf16, 0, 256, 8, 2084),
            (1, Bf16, 0, 1, 3, 17),
            (8, Int8, 2, 256, 8, 2076),
            (1, Int8, 3, 1, 3, 15),
            (8, Bf16, 4, 256, 8, 2125),
            (1, Bf16, 4, 1, 3, 40),
        ] {
            let t = one_pass_at(rows, rows, dtype, depth, m, k_tiles);
            assert_eq!(
                t.pass_cycles(m, 1),
                cycles,
                "{dtype} {rows}x{rows} depth {depth} M={m}"
            );
            assert_eq!(t.total_cycles(), cycles);
        }
    }

    #[test]
    fn the_closed_form_is_what_the_rules_give() {
        // Every shape up to 9 rows, both element types, every depth, M across
        // the tile period's three terms: the stepped rules and the closed form
        // agree on every first row and on the pass's cycles.
        for (dtype, depth) in ElemType::ALL
            .into_iter()
            .flat_map(|t| config::MXU_DEPTH_RANGE.map(move |d| (t, d)))
        {
            for rows in 1..=9 {
                for cols in [1, 2, 5] {
                    for m in (1..=30).chain([64, 100]) {
                        for tiles in 1..=5 {
                            let t = one_pass_at(rows, cols, dtype, depth, m, tiles);
                            let (first_rows, cycles) = closed_form(&t, m, tiles);
                            let accepted = t.acceptance_cycles(m, 1);
                            let what =
                                format!("{dtype} {rows}x{cols} depth {depth} M={m} T={tiles}");
                            let starts: Vec<u64> =
                                accepted.iter().step_by(m as usize).copied().collect();
                            assert_eq!(starts, first_rows, "{what}");
                            // A tile's rows follow its first row back to back (A1).
                            for (i, &y) in accepted.iter().enumerate() {
                                let i = i as u64;
                                assert_eq!(y, first_rows[(i / m) as usize] + i % m, "{what}");
                            }
                            assert_eq!(t.pass_cycles(m, 1), cycles, "{what}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn w2_the_fifo_holds_wf_plus_one_rows() {
        // 2x2 int8, WF = 4: rows 0..8 go in back to back (tile 0 loaded in
        // 2, 3; tile 1 in 5, 6 after the hold), then 5 rows are held and the
        // port stalls until tile 2 is loaded in 55, 56 (after t_1 = 54 and a
        // hold of 1): rows 9 and 10 go in the cycles after those loads.
        let t = one_pass(2, 2, ElemType::Int8, 50, 6);
        assert_eq!(t.weight_fifo_rows(), 4);
        let s = t.pass_schedule(50, 1);
        assert_eq!(s.weight_rows_loaded[..6], [2, 3, 5, 6, 55, 56]);
        assert_eq!(
            s.weight_rows_written[..11],
            [0, 1, 2, 3, 4, 5, 6, 7, 8, 56, 57]
        );
        let most = (0..s.cycles()).map(|y| s.weight_rows_held(y)).max();
        assert_eq!(most, Some(5));
        // H3: a stalled row goes in in the first cycle the FIFO has room.
        for (&written, &earlier) in s.weight_rows_written[1..]
            .iter()
            .zip(&s.weight_rows_written)
        {
            if written > earlier + 1 {
                assert_eq!(s.weight_rows_held(written - 1), 5);
                assert_eq!(s.weight_rows_held(written), 4);
            }
        }
    }

    #[test]
    fn w3_a_row_is_loaded_two_cycles_after_its_write() {
        // 4x4 int8: the first tile's rows, written in 0..3, load in 2..5 and
        // the tile is in place for a first row in 6 = R + 2.
        let t = one_pass(4, 4, ElemType::Int8, 1, 1);
        let s = t.pass_schedule(1, 1);
        assert_eq!(s.weight_rows_written, [0, 1, 2, 3]);
        assert_eq!(s.weight_rows_loaded, [2, 3, 4, 5]);
        assert_eq!(s.rows_accepted, [6]);
    }

    #[test]
    fn l1_l2_the_next_tile_loads_after_the_hold() {
        // int8 8x8, M = 1: after the first row in 10 the loader waits
        // (8-1)·1 = 7 cycles, loads tile 1 in 17..24, whose first row is
        // accepted in 25 (in place) rather than 12 (the gap).
        let t = one_pass(8, 8, ElemType::Int8, 1, 3);
        let s = t.pass_schedule(1, 1);
        assert_eq!(
            s.weight_rows_loaded[8..16],
            [17, 18, 19, 20, 21, 22, 23, 24]
        );
        assert_eq!(s.rows_accepted, [10, 25, 40]);
        // bf16 4x4: a hold of (4-1)·2 = 6 after the first row in 6.
        let t = one_pass(4, 4, ElemType::Bf16, 1, 2);
        assert_eq!(t.loader_hold(), 6);
        let s = t.pass_schedule(1, 1);
        assert_eq!(s.weight_rows_loaded, [2, 3, 4, 5, 12, 13, 14, 15]);
        assert_eq!(s.rows_accepted, [6, 16]);
        // L1: with M = 20 the next tile is in place long before its first
        // row is offered, and waits there: loaded in 9..12 (hold 3), taken in
        // 6 + 20 = 26.
        let t = one_pass(4, 4, ElemType::Int8, 20, 2);
        let s = t.pass_schedule(20, 1);
        assert_eq!(s.weight_rows_loaded[4..], [9, 10, 11, 12]);
        assert_eq!(s.rows_accepted[20], 26);
    }

    #[test]
    fn l2_one_row_has_no_hold() {
        // R = 1: the second tile's row loads in the cycle of the first row
        // (3); the gap, not the load, then places the second first row.
        let t = one_pass(1, 1, ElemType::Int8, 1, 2);
        assert_eq!(t.loader_hold(), 0);
        let s = t.pass_schedule(1, 1);
        assert_eq!(s.weight_rows_loaded, [2, 3]);
        assert_eq!(s.rows_accepted, [3, 5]);
    }

    #[test]
    fn depth_moves_the_writes_and_the_first_row_gap_only() {
        // The product registers (P) delay every write alike; the accumulator's
        // input register (depth 3) widens the first-row gap as La does. The
        // acceptances before that are the same at every depth: the skews do
        // not change.
        let base = one_pass(4, 4, ElemType::Int8, 5, 3);
        for depth in 1..=2 {
            let t = one_pass_at(4, 4, ElemType::Int8, depth, 5, 3);
            assert_eq!(t.product_latency(), u64::from(depth));
            assert_eq!(t.first_row_gap(), 2);
            assert_eq!(t.loader_hold(), base.loader_hold());
            assert_eq!(t.acceptance_cycles(5, 1), base.acceptance_cycles(5, 1));
            assert_eq!(
                t.pass_cycles(5, 1),
                base.pass_cycles(5, 1) + u64::from(depth)
            );
        }
        let t = one_pass_at(1, 1, ElemType::Int8, 3, 1, 3);
        assert_eq!((t.product_latency(), t.acc_add_latency()), (2, 1));
        assert_eq!(t.first_row_gap(), 3);
        assert_eq!(t.acceptance_cycles(1, 1), [3, 6, 9]);
        let t = one_pass_at(1, 1, ElemType::Bf16, 3, 1, 3);
        assert_eq!(t.first_row_gap(), 5);
        assert_eq!(t.acceptance_cycles(1, 1), [3, 8, 13]);
    }

    #[test]
    fn depth_5_adds_input_and_product_cycles_only() {
        // The multipliers' own operand registers (and int8's second
        // partial-product register): P = 5 for both types; the array's
        // input registers, Ai = 1; L and La as at depth 4, so only the
        // writes move (and reads answer a cycle later).
        for (dtype, more) in [(ElemType::Int8, 3), (ElemType::Bf16, 2)] {
            let t = one_pass_at(4, 4, dtype, 5, 5, 3);
            let d4 = one_pass_at(4, 4, dtype, 4, 5, 3);
            assert_eq!(t.product_latency(), 5, "{dtype}");
            assert_eq!(
                (t.pe_latency(), t.acc_add_latency()),
                (d4.pe_latency(), d4.acc_add_latency())
            );
            assert_eq!(t.acceptance_cycles(5, 1), d4.acceptance_cycles(5, 1));
            assert_eq!((t.input_latency(), d4.input_latency()), (1, 0));
            assert_eq!(t.write_latency(), d4.write_latency() + more);
            assert_eq!((t.read_latency(), d4.read_latency()), (2, 1));
        }
    }

    #[test]
    fn depth_4_stages_the_multipliers_and_the_bf16_adders() {
        // int8: the partial products add a product cycle, nothing else.
        let t = one_pass_at(4, 4, ElemType::Int8, 4, 5, 3);
        let d3 = one_pass_at(4, 4, ElemType::Int8, 3, 5, 3);
        assert_eq!((t.pe_latency(), t.product_latency()), (1, 3));
        assert_eq!(t.acc_add_latency(), d3.acc_add_latency());
        assert_eq!(t.acceptance_cycles(5, 1), d3.acceptance_cycles(5, 1));
        assert_eq!(t.write_latency(), d3.write_latency() + 1);
        // bf16: six cycles per PE (R·L = 24), product 4, accumulator 7.
        let t = one_pass_at(4, 4, ElemType::Bf16, 4, 5, 3);
        assert_eq!(
            (t.pe_latency(), t.product_latency(), t.acc_add_latency()),
            (6, 4, 7)
        );
        assert_eq!(t.write_latency(), 24 + 4 + 4 + 7);
        assert_eq!((t.loader_hold(), t.first_row_gap()), (18, 9));
    }

    #[test]
    fn a2_first_rows_keep_their_gap() {
        // 1x1, M = 1: each tile is in place one cycle after the first row
        // before it, so the gap 2 + La places the first rows.
        let t = one_pass(1, 1, ElemType::Int8, 1, 3);
        assert_eq!(t.first_row_gap(), 2);
        assert_eq!(t.acceptance_cycles(1, 1), [3, 5, 7]);
        let t = one_pass(1, 1, ElemType::Bf16, 1, 3);
        assert_eq!(t.first_row_gap(), 4);
        assert_eq!(t.acceptance_cycles(1, 1), [3, 7, 11]);
        // bf16 2x3, M = 2: the hold and load take 2 + 2 = 4 cycles, as
        // does the gap; the two rows of a tile cannot hide either.
        let t = one_pass(2, 3, ElemType::Bf16, 2, 3);
        assert_eq!(t.acceptance_cycles(2, 1), [4, 5, 8, 9, 12, 13]);
    }

    #[test]
    fn d1_every_row_is_written_a_fixed_latency_after_its_acceptance() {
        // R·L + P + C + La, with P = min(D, 2) and La one more at D = 3.
        use ElemType::{Bf16, Int8};
        for (rows, cols, dtype, depth, latency) in [
            (8, 8, Int8, 0, 16),
            (8, 8, Bf16, 0, 26),
            (2, 3, Int8, 0, 5),
            (2, 3, Bf16, 0, 9),
            (1, 1, Bf16, 0, 5),
            (8, 8, Int8, 1, 17),
            (8, 8, Int8, 2, 18),
            (8, 8, Int8, 3, 19),
            (8, 8, Bf16, 2, 28),
            (8, 8, Bf16, 3, 29),
            (1, 1, Int8, 3, 5),
        ] {
            let t = one_pass_at(rows, cols, dtype, depth, 3, 2);
            assert_eq!(
                t.write_latency(),
                latency,
                "{dtype} {rows}x{cols} depth {depth}"
            );
            let s = t.pass_schedule(3, 1);
            for (&accepted, &written) in s.rows_accepted.iter().zip(&s.acc_writes) {
                assert_eq!(written, accepted + latency);
            }
            assert_eq!(s.cycles(), t.pass_cycles(3, 1));
        }
    }

    #[test]
    fn b1_busy_from_the_cycle_after_an_acceptance_through_its_write() {
        // 2x2 int8, M = 1: first rows in 4 and 7 (hold 1 + load 2), written
        // in 8 and 11.
        let t = one_pass(2, 2, ElemType::Int8, 1, 2);
        let s = t.pass_schedule(1, 1);
        assert_eq!(s.rows_accepted, [4, 7]);
        assert_eq!(s.acc_writes, [8, 11]);
        let busy: Vec<u64> = (0..20).filter(|&y| s.busy(y)).collect();
        assert_eq!(busy, (5..=11).collect::<Vec<_>>());
        assert_eq!(s.cycles(), 12);
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
        // int8 write latency 8 + 8 + 0 = 16.
        assert_eq!(t.pass_cycles(256, 1), 10 + 8 * 256 - 1 + 16 + 1);
        assert_eq!(t.total_cycles(), 8 * t.pass_cycles(256, 1));
        assert!(t.utilization() > 0.98, "{}", t.utilization());
        // With 2048 accumulator rows the whole matmul is one pass.
        let big = MxuTiming::new(&cfg_of(8, 8, ElemType::Int8, 2048), 256, 64, 64);
        assert_eq!(big.passes(), [(256, 8)]);
        assert!(big.utilization() > 0.998);
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
    fn int8_mode_rows_are_the_matmuls_of_their_kind() {
        // Row by row over the k-tiles, with the accumulator as a host runs
        // it (k-tile 0 overwrites), tile_row and accumulate give the whole
        // matmuls: int8 over the low bytes and bf16 as the contract tiles it.
        let (m, k, n, r) = (3, 7, 2, 3);
        let a: Vec<u16> = (0..m * k)
            .map(|i| (i as u16).wrapping_mul(40_503))
            .collect();
        let b: Vec<u16> = (0..k * n)
            .map(|i| (i as u16).wrapping_mul(12_347) ^ 0x3F80)
            .collect();
        for int8 in [true, false] {
            let mut c = vec![0u32; m * n];
            for kt in 0..k.div_ceil(r) {
                let at = |kk: usize| kt * r + kk;
                let tile: Vec<u16> = (0..r * n)
                    .map(|i| {
                        if at(i / n) < k {
                            b[at(i / n) * n + i % n]
                        } else {
                            0
                        }
                    })
                    .collect();
                for i in 0..m {
                    let row: Vec<u16> = (0..r)
                        .map(|kk| if at(kk) < k { a[i * k + at(kk)] } else { 0 })
                        .collect();
                    for (j, new) in tile_row(&row, &tile, n, int8).into_iter().enumerate() {
                        c[i * n + j] = accumulate(c[i * n + j], new, kt > 0, int8);
                    }
                }
            }
            let expected: Vec<u32> = if int8 {
                matmul_int8_low_bytes(&a, &b, m, k, n)
                    .into_iter()
                    .map(|x| x as u32)
                    .collect()
            } else {
                matmul_bf16(&a, &b, m, k, n, r)
            };
            assert_eq!(c, expected, "int8 {int8}");
        }
    }

    #[test]
    fn int8_mode_reads_the_low_bytes_and_wraps() {
        // Bits 15..8 are ignored; -128 x -128 sums wrap in int32.
        assert_eq!(low_byte(0xA580), -128);
        assert_eq!(low_byte(0x127F), 127);
        let k = 1 << 17;
        let c = matmul_int8_low_bytes(&vec![0x0080; k], &vec![0xFF80; k], 1, k, 1);
        assert_eq!(c, [(16384i64 * k as i64) as i32]);
        assert_eq!(c, [i32::MIN]);
        assert_eq!(accumulate(i32::MAX as u32, 1, true, true), i32::MIN as u32);
        assert_eq!(accumulate(7, 9, false, true), 9);
        // A bf16 row adds in fp32: 1.0 + 1.0 = 2.0.
        assert_eq!(
            accumulate(0x3F80_0000, 0x3F80_0000, true, false),
            0x4000_0000
        );
    }

    #[test]
    fn int8_mode_has_the_bf16_arrays_timing() {
        for depth in config::MXU_DEPTH_RANGE {
            let bf16 = cfg_of(3, 2, ElemType::Bf16, 16).with_depth(depth).unwrap();
            let dual = bf16.with_int8_mode(true).unwrap();
            assert_eq!(
                MxuTiming::new(&dual, 40, 10, 5),
                MxuTiming::new(&bf16, 40, 10, 5),
                "depth {depth}"
            );
        }
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

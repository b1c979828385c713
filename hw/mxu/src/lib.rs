//! The MXU: a weight-stationary systolic array, described with `hw`.
//!
//! The array has R rows (the K direction) and C columns (the N direction). PE(r, c)
//! holds the weight B[r][c] while a stream of activation rows passes through:
//!
//! ```text
//!              w_row_i (one weight row per cycle, column c delayed c cycles)
//!                 |         |         |
//!   a_row_i[0] -> PE(0,0) -> PE(0,1) -> PE(0,2) ->     activations move right
//!   (delay 0)       |         |         |
//!   a_row_i[1] -> PE(1,0) -> PE(1,1) -> PE(1,2) ->     partial sums move down
//!   (delay 1)       |         |         |
//!                 deskew    deskew    deskew  -> c_row_o (one output row per cycle)
//!                 (C-1)     (C-2)     (0)
//! ```
//!
//! **Shadow weights.** Each PE has a shadow and an active weight register. Weight
//! rows shift down the columns into the shadow registers (bottom row first); the
//! activation row that starts a tile carries a `first` flag, and as that flag
//! passes PE(r, c) (in cycle t + r + c, with the data wavefront) the PE computes
//! with the shadow weight and copies it into the active register. So the next
//! tile's weights load while the current tile computes, with no bubble between
//! tiles once a tile has at least 2R-1 rows (see [`Timing`]).
//!
//! **Interface timing** (all counted in cycles of `clk_i`):
//! - weights: R pushes (`w_valid_i` with `w_row_i` = B[R-1], then B[R-2], ... B[0]);
//! - a tile's first activation row may enter `weight_load_cycles` = R cycles after
//!   its first weight push, i.e. the pushes occupy the R cycles just before it;
//! - the next tile's pushes may start R-1 cycles after the current tile's first
//!   row (when the `first` wavefront has left the shadow chain's top), so tiles
//!   can start every `min_tile_interval` = 2R-1 cycles;
//! - an activation row entering in cycle t leaves as `c_row_o` with `c_valid_o`
//!   in cycle t + `latency`, latency = R + C - 1.
//!
//! Numerics (int8): each PE adds the exact 16-bit product, sign-extended, to the
//! incoming 32-bit partial sum with wraparound, as `numerics.md` requires.

use config::{ElemType, MxuConfig};
use hw::{delay, Design, ModuleDef, Ty};
use std::rc::Rc;

/// Port names of the MXU top module.
pub mod ports {
    pub const W_VALID: &str = "w_valid_i";
    pub const W_ROW: &str = "w_row_i";
    pub const A_VALID: &str = "a_valid_i";
    pub const A_FIRST: &str = "a_first_i";
    pub const A_ROW: &str = "a_row_i";
    pub const C_VALID: &str = "c_valid_o";
    pub const C_ROW: &str = "c_row_o";
}

/// Interface timing of an MXU configuration, derived from the structure the
/// generator builds (see the crate docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// Cycles from an activation row entering to its output row leaving.
    pub latency: u32,
    /// Weight pushes per tile (one per array row).
    pub weight_load_cycles: u32,
    /// Smallest distance between the first rows of consecutive tiles.
    pub min_tile_interval: u32,
}

impl Timing {
    pub fn of(cfg: &MxuConfig) -> Timing {
        let (r, c) = (cfg.rows(), cfg.cols());
        Timing {
            latency: r + c - 1,
            weight_load_cycles: r,
            min_tile_interval: 2 * r - 1,
        }
    }
}

/// The Verilog name of the top module for `cfg`, e.g. `mxu_int8_8x8`.
pub fn top_name(cfg: &MxuConfig) -> String {
    format!("mxu_{}_{}x{}", cfg.dtype(), cfg.rows(), cfg.cols())
}

/// Builds the MXU for `cfg` into `design` and returns its top module.
#[track_caller]
pub fn build(design: &mut Design, cfg: &MxuConfig) -> Rc<ModuleDef> {
    let params: Vec<(&str, String)> = vec![
        ("dtype", cfg.dtype().to_string()),
        ("rows", cfg.rows().to_string()),
        ("cols", cfg.cols().to_string()),
    ];
    let name = top_name(cfg);
    let cfg = *cfg;
    design.define(&name, &params, |design, m| {
        m.doc("weight-stationary systolic array with shadow weights, skew and deskew");
        let pe = pe(design, cfg.dtype());
        let (rows, cols) = (cfg.rows(), cfg.cols());
        let op_bits = cfg.dtype().operand_bits();
        let acc_bits = cfg.dtype().result_bits();
        let op_ty = Ty::s(op_bits);
        let acc_ty = Ty::s(acc_bits);

        let w_valid = m.input(ports::W_VALID, Ty::BOOL);
        let w_row = m.input(ports::W_ROW, Ty::u(cols * op_bits));
        let a_valid = m.input(ports::A_VALID, Ty::BOOL);
        let a_first = m.input(ports::A_FIRST, Ty::BOOL);
        let a_row = m.input(ports::A_ROW, Ty::u(rows * op_bits));

        // Buses between PEs: act/first flow right, psum/weights flow down.
        let act = m.bus("act", op_ty, &[rows, cols + 1]);
        let first = m.bus("first", Ty::BOOL, &[rows, cols + 1]);
        let psum = m.bus("psum", acc_ty, &[rows + 1, cols]);
        let wchain = m.bus("wchain", op_ty, &[rows + 1, cols]);
        let wshift = m.bus("wshift", Ty::BOOL, &[cols]);

        // Row r's activations enter r cycles late, so that row m of A meets
        // the partial sum of row m coming down from above.
        let first_valid = m.wire("first_valid", a_first & a_valid);
        for r in 0..rows {
            let a = a_row.slice(r * op_bits, op_bits).as_signed();
            let a = delay(m, &format!("askew{r}"), a, r, None);
            let f = delay(m, &format!("fskew{r}"), first_valid, r, Some(0));
            m.bus_drive(act, &[r, 0], a);
            m.bus_drive(first, &[r, 0], f);
        }
        // Column c's weights shift c cycles late, matching the wavefront, so a
        // column's shadow chain is free as soon as the wavefront has passed it.
        for c in 0..cols {
            let w = w_row.slice(c * op_bits, op_bits).as_signed();
            let w = delay(m, &format!("wskew{c}"), w, c, None);
            let s = delay(m, &format!("wskew{c}_valid"), w_valid, c, Some(0));
            m.bus_drive(wchain, &[0, c], w);
            m.bus_drive(wshift, &[c], s);
            let zero = m.lit(acc_ty, 0);
            m.bus_drive(psum, &[0, c], zero);
        }

        let grid = m.instance_array("pe", &pe, &[("row", rows), ("col", cols)]);
        let (r, c) = (grid.var(0), grid.var(1));
        m.array_connect(grid, "a_i", act, &[r.clone(), c.clone()]);
        m.array_connect(grid, "a_o", act, &[r.clone(), c.clone() + 1]);
        m.array_connect(grid, "first_i", first, &[r.clone(), c.clone()]);
        m.array_connect(grid, "first_o", first, &[r.clone(), c.clone() + 1]);
        m.array_connect(grid, "psum_i", psum, &[r.clone(), c.clone()]);
        m.array_connect(grid, "psum_o", psum, &[r.clone() + 1, c.clone()]);
        m.array_connect(grid, "w_i", wchain, &[r.clone(), c.clone()]);
        m.array_connect(grid, "w_o", wchain, &[r + 1, c.clone()]);
        m.array_connect(grid, "w_shift_i", wshift, &[c]);

        // Column c's results leave the bottom c cycles after column 0's; delay
        // each by C-1-c so a whole output row appears at once.
        let mut outs = Vec::new();
        for c in 0..cols {
            let s = m.bus_read(psum, &[rows, c]);
            outs.push(delay(m, &format!("deskew{c}"), s, cols - 1 - c, None));
        }
        outs.reverse(); // column 0 in the low bits
        m.output(ports::C_ROW, hw::cat(&outs));
        let latency = Timing::of(&cfg).latency;
        let valid = delay(m, "valid_pipe", a_valid, latency, Some(0));
        m.output(ports::C_VALID, valid);

        m.waive(
            "UNUSEDSIGNAL",
            "act",
            "activations leaving the right edge of the array have no consumer",
        );
        m.waive(
            "UNUSEDSIGNAL",
            "first",
            "tile-start flags leaving the right edge of the array have no consumer",
        );
        m.waive(
            "UNUSEDSIGNAL",
            "wchain",
            "shadow weights shifted out of the bottom row have no consumer",
        );
    })
}

/// The processing element for `dtype`.
pub fn pe(design: &mut Design, dtype: ElemType) -> Rc<ModuleDef> {
    match dtype {
        ElemType::Int8 => pe_int8(design),
    }
}

fn pe_int8(design: &mut Design) -> Rc<ModuleDef> {
    design.define("mxu_pe_int8", &[("dtype", "int8".into())], |_, m| {
        m.doc("int8 PE: shadow/active weights, psum += a * w (int32, wrapping)");
        let a = m.input("a_i", Ty::s(8));
        let first = m.input("first_i", Ty::BOOL);
        let psum_in = m.input("psum_i", Ty::s(32));
        let w_in = m.input("w_i", Ty::s(8));
        let w_shift = m.input("w_shift_i", Ty::BOOL);

        let shadow = m.reg("shadow", Ty::s(8));
        m.set_next(shadow, w_in);
        m.set_enable(shadow, w_shift);

        // The tile-start flag selects the freshly loaded shadow weight for this
        // row and latches it as the active weight for the rest of the tile.
        let active = m.reg("active", Ty::s(8));
        m.set_next(active, shadow.q());
        m.set_enable(active, first);
        let weight = m.wire("weight", first.select(shadow.q(), active.q()));

        let psum = m.reg("psum", Ty::s(32));
        let product = m.wire("product", a.mul_wide(weight));
        m.set_next(psum, psum_in + product.sext(32));

        let a_q = m.reg("a", Ty::s(8));
        m.set_next(a_q, a);
        let first_q = m.reg_reset("first", Ty::BOOL, 0);
        m.set_next(first_q, first);

        m.output("a_o", a_q.q());
        m.output("first_o", first_q.q());
        m.output("psum_o", psum.q());
        m.output("w_o", shadow.q());
    })
}

//! The MXU: a weight-stationary systolic array, described with `hw`.
//!
//! The array has R rows (the K direction) and C columns (the N direction); its
//! element type is int8 (products summed in int32, wrapping) or bf16 (products
//! summed in fp32, FTZ-RNE, as `docs/numerics.md#bf16-matmul` defines).
//!
//! ```text
//!  w_row_i ─► weight FIFO ─► loader ─► shadow chains (column c delayed c cycles)
//!                                          │    │    │
//!  a_row_i ─► row skew (row r: r·L) ──►  PE(0,0) PE(0,1) ...   activations move right,
//!                                        PE(1,0) PE(1,1) ...   partial sums move down
//!                                          │    │    │
//!                                       de-skew (column c: C-1-c)
//!                                          │
//!                        accumulator memory: overwrite or add (read-modify-write)
//!                                          │
//!                                   acc_rd_* (host reads result rows)
//! ```
//!
//! **Shadow weights.** Each PE has a shadow and an active weight register. The
//! loader shifts weight rows from the FIFO down the columns into the shadow
//! registers (a tile is R rows, pushed bottom row first). The activation row
//! that starts a tile carries a `first` flag; as that flag passes PE(r, c) (in
//! cycle t + r·L + c, with the data wavefront) the PE computes with the shadow
//! weight and copies it to the active register. So the next tile loads while
//! the current one computes. All PEs with the same r·L + c see the flag in
//! the same cycle, so one delay line beside the array (tapped once per
//! wavefront) carries it, not a register in every PE.
//!
//! **Pipelining.** A PE passes its activation right after 1 cycle and its
//! partial sum down after L cycles, the PE latency: L = 1 for int8 (one
//! multiply-add), L = 2 for bf16 (the fp32 adder is split into two stages with
//! a register between them: operand ordering, alignment and significand add;
//! then normalisation, rounding and the special cases). Row r's activations
//! therefore enter r·L cycles late.
//!
//! **Pipeline depth.** [`MxuConfig::depth`] adds registers where the longest
//! paths are, the same for both element types: depth 1 registers each PE's
//! product, so the multiplier and the partial-sum adder are separate stages;
//! depth 2 also registers the multiplier's operands (the activation, and the
//! weight chosen for it, which the active weight register already holds a
//! cycle after the activation's arrival), so the multiplier runs from
//! registers to a register, as a DSP block with input and output registers
//! does; depth 3
//! also registers the accumulator row read and the output row before the
//! accumulator's adder. The product latency P (0, 1 or 2 cycles from an
//! activation's arrival at a PE to its product entering the sum) is the same
//! in every PE, so it delays every row's sums alike: the skews stay as they
//! are (the weight is still chosen as the activation arrives, so the shadow
//! swap is untouched) and only the row's latency to the accumulator grows, by
//! P, and by one more cycle of La at depth 3. Depth 4 splits the multipliers
//! into registered stages (int8: two partial products, a x w\[7:4\] and
//! a x w\[3:0\], summed a cycle later; bf16: the staged multiplier of
//! `hw::fp` at its `product` and `exponent` cuts) and, for bf16, registers
//! every cut of the fp32 adders, in the PEs (L = 6: the row skews grow with
//! it) and in the accumulator. Depth 5 gives each multiplier operand
//! registers of its own, loaded from the pass-right and active weight
//! registers (which also feed the next PE and the swap), and registers the
//! int8 partial products once more before their add: P = 5 for both types.
//! `whole_rows` keeps the first rows' int8 products whole at depths 4 and 5
//! (one 8 x 8 multiplier, registered as often as the halves, for a part's
//! DSP blocks): those rows are an instance array of their own PE module
//! (`pe`), the rows below another (`pe_split`), on the same buses.
//!
//! **Accumulator.** Every activation row carries an accumulator address and an
//! `add` flag. When its output row leaves the array (cycle T) the accumulator
//! row is read; the new value (the output, or accumulator + output, added with
//! int32 wraparound or the fp32 adder) is written in cycle T + 1 + La, where La
//! is the accumulator adder's latency (0 for int8, 2 for bf16, one more at
//! depth 3).
//!
//! **Int8 mode.** A bf16 array with [`MxuConfig::int8_mode`] also computes
//! int8 rows: a mode bit taken with each row (`a_int8_i`) travels with it
//! through the array, and its PEs (`_i8m`) read the low bytes of the lanes as
//! int8 and sum in int32, at the bf16 array's timing; the module
//! `int8_mode` says how.
//!
//! **Interface timing** is a contract of its own, stated at the ports in what
//! follows (`hw/mxu/TIMING.md`): what a host may rely on and must do, as numbered
//! rules and closed-form cycle counts. [`Timing`] holds its constants for a
//! configuration.
#![doc = ""]
#![doc = include_str!("../TIMING.md")]

use config::{ElemType, MxuConfig};
use hw::blocks::FifoMode;
use hw::pipeline::Pipeline;
use hw::{
    bits_for, cat, delay, delay_taps, mux, Bus, Design, Expr, Inst, Mem, ModuleBuilder, ModuleDef,
    Reg, Ty, Wire,
};
use std::rc::Rc;

mod block;
mod int8_mode;
pub use block::{fmax_depth, Mxu, PE_PATTERN, PE_ROW_PATTERN};

/// Port names of the MXU top module.
pub mod ports {
    pub const W_VALID: &str = "w_valid_i";
    pub const W_ROW: &str = "w_row_i";
    pub const W_READY: &str = "w_ready_o";
    pub const A_VALID: &str = "a_valid_i";
    pub const A_FIRST: &str = "a_first_i";
    pub const A_ROW: &str = "a_row_i";
    /// The row is an int8 row (an array in int8 mode only).
    pub const A_INT8: &str = "a_int8_i";
    pub const A_ACC_ADDR: &str = "a_acc_addr_i";
    pub const A_ACC_ADD: &str = "a_acc_add_i";
    pub const A_READY: &str = "a_ready_o";
    pub const ACC_RD_EN: &str = "acc_rd_en_i";
    pub const ACC_RD_ADDR: &str = "acc_rd_addr_i";
    pub const ACC_RD_VALID: &str = "acc_rd_valid_o";
    pub const ACC_RD_DATA: &str = "acc_rd_data_o";
    pub const ACC_WR: &str = "acc_wr_o";
    pub const BUSY: &str = "busy_o";
}

/// Interface timing of an MXU configuration, derived from the structure the
/// generator builds (see the crate docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// L: cycles a partial sum spends in one PE.
    pub pe_latency: u32,
    /// P: cycles from an activation's arrival at a PE to its product entering
    /// the partial sum (the product and operand registers of the depth).
    pub product_latency: u32,
    /// Ai: the array's input registers (1 at depth 5, else 0): the accepted
    /// row with its tile-start flag, and the weight FIFO's head with its take,
    /// each wait a cycle before the skews.
    pub input_latency: u32,
    /// Cycles from a row's acceptance to its output row leaving the array.
    pub array_latency: u32,
    /// La: latency of the accumulator's adder.
    pub acc_add_latency: u32,
    /// Cycles the loader may not shift after a tile's first row, (R-1)·L.
    pub shadow_hold: u32,
    /// Smallest distance between the first rows of consecutive tiles, 2 + La.
    pub first_row_gap: u32,
    /// Rows the weight FIFO holds (besides its output register).
    pub weight_fifo_rows: u32,
    /// Lr: cycles from a host read to its row and valid bit (TIMING.md R1).
    pub read_latency: u32,
}

impl Timing {
    pub fn of(cfg: &MxuConfig) -> Timing {
        let (r, c) = (cfg.rows(), cfg.cols());
        let Stages {
            pe_latency,
            product_latency,
            acc_adder_latency,
        } = Stages::of(cfg.dtype(), cfg.depth());
        let acc_add_latency = acc_adder_latency + u32::from(Timing::acc_input_register(cfg));
        let input_latency = u32::from(Timing::input_register(cfg));
        Timing {
            pe_latency,
            product_latency,
            input_latency,
            array_latency: input_latency + r * pe_latency + product_latency + c - 1,
            acc_add_latency,
            shadow_hold: (r - 1) * pe_latency,
            first_row_gap: 2 + acc_add_latency,
            weight_fifo_rows: (2 * r).next_power_of_two(),
            // The banked accumulator registers the host's row once more.
            read_latency: 1 + u32::from(banked_accumulator(cfg)),
        }
    }

    /// Cycles from a row's acceptance to its accumulator write.
    pub fn write_latency(&self) -> u32 {
        self.array_latency + 1 + self.acc_add_latency
    }

    /// Whether the accumulator row read and the output row are registered
    /// before the accumulator's adder (depth 3).
    fn acc_input_register(cfg: &MxuConfig) -> bool {
        cfg.depth() >= 3
    }

    /// Whether the array's inputs are registered (depth 5): the accepted row
    /// and its tile-start flag, the weight FIFO's head and its take. Without
    /// them the loader's take (from the FIFO's valid, the hold and the
    /// acceptance) drives column 0's 8R shadow enables in the same cycle.
    fn input_register(cfg: &MxuConfig) -> bool {
        cfg.depth() >= 5
    }
}

/// Where a depth puts the registers of the datapath, as cycle counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stages {
    /// L: the PE's partial-sum adder, input to the psum register.
    pe_latency: u32,
    /// P: from an activation's arrival to its product entering the adder.
    product_latency: u32,
    /// The accumulator's adder alone (without depth 3's input registers).
    acc_adder_latency: u32,
}

impl Stages {
    fn of(dtype: ElemType, depth: u32) -> Stages {
        let (pe_latency, acc_adder_latency) = match (dtype, depth) {
            (ElemType::Int8, _) => (1, 0),
            // The fp32 adder in two stages (a register at its `sum` cut).
            (ElemType::Bf16, 0..=3) => (2, 2),
            // Every cut of `fp::FP32_ADD` but its operands' registered, and
            // the result.
            (ElemType::Bf16, _) => (ACC_ADD_STAGES + 1, ACC_ADD_STAGES + 1),
        };
        let product_latency = match (dtype, depth) {
            (_, 0..=3) => depth.min(2),
            // Operands, the two partial products, their sum.
            (ElemType::Int8, 4) => 3,
            // Operands, the bf16 multiplier's `product` and `exponent`
            // cuts, the product.
            (ElemType::Bf16, 4) => 4,
            // Depth 4's, with the multiplier's operands registered again
            // beside it, and the int8 partial products once more before
            // their add.
            (ElemType::Int8, _) => 5,
            (ElemType::Bf16, _) => 5,
        };
        Stages {
            pe_latency,
            product_latency,
            acc_adder_latency,
        }
    }
}

/// Registered cuts of the fp32 adders (PE and accumulator) at depth 4: the
/// best five of `fp::FP32_ADD`'s ranking, all but the one on its operands
/// (the PE's operands are registers already).
const ACC_ADD_STAGES: u32 = 5;

/// Whether the multipliers are split into registered stages (depth 4):
/// int8 into two partial products, bf16 at the staged multiplier's cuts.
fn staged_multiplier(depth: u32) -> bool {
    depth >= 4
}

/// Whether each multiplier has operand registers of its own (depth 5),
/// loaded from the register that passes the activation right and from the
/// active weight register. Those two feed the next PE and the weight swap
/// as well; the multiplier's own copies feed nothing else, so placement can
/// put them beside a multiplier in a DSP block's fixed column.
fn multiplier_operand_registers(product_latency: u32) -> bool {
    product_latency >= 5
}

/// The Verilog name of the top module for `cfg`, e.g. `mxu_int8_8x8_acc256`,
/// `mxu_int8_8x8_acc256_d2` at depth 2, or `mxu_bf16_8x8_acc256_i8m` for a
/// bf16 array in int8 mode.
pub fn top_name(cfg: &MxuConfig) -> String {
    let depth = match cfg.depth() {
        0 => String::new(),
        d => format!("_d{d}"),
    };
    let whole = match cfg.whole_rows() {
        0 => String::new(),
        w => format!("_w{w}"),
    };
    let mode = if cfg.int8_mode() {
        int8_mode::NAME_SUFFIX
    } else {
        ""
    };
    format!(
        "mxu_{}_{}x{}_acc{}{depth}{whole}{mode}",
        cfg.dtype(),
        cfg.rows(),
        cfg.cols(),
        cfg.acc_rows()
    )
}

/// Operand element type as the array carries it.
fn operand_ty(dtype: ElemType) -> Ty {
    match dtype {
        ElemType::Int8 => Ty::s(8),
        ElemType::Bf16 => Ty::u(16),
    }
}

/// Partial-sum type as the array carries it (int32, or fp32 bit patterns).
fn sum_ty(dtype: ElemType) -> Ty {
    match dtype {
        ElemType::Int8 => Ty::s(32),
        ElemType::Bf16 => Ty::u(32),
    }
}

/// Builds the MXU for `cfg` into `design` and returns its top module.
#[track_caller]
pub fn build(design: &mut Design, cfg: &MxuConfig) -> Rc<ModuleDef> {
    let owned = cfg.params();
    let params = hw::param_refs(&owned);
    let name = top_name(cfg);
    let cfg = *cfg;
    design.define(&name, &params, |design, m| {
        m.doc(if cfg.int8_mode() {
            "weight-stationary systolic array: weight FIFO, shadow weights, accumulator; bf16 rows and int8 rows"
        } else {
            "weight-stationary systolic array: weight FIFO, shadow weights, accumulator"
        });
        let pe = if cfg.int8_mode() {
            int8_mode::pe(design, cfg.depth())
        } else {
            pe(design, cfg.dtype(), cfg.depth())
        };
        let whole_pe = cfg.whole_rows_in_effect().then(|| {
            pe_int8(
                design,
                Stages::of(cfg.dtype(), cfg.depth()).product_latency,
                true,
            )
        });
        let acc_adder = match cfg.dtype() {
            ElemType::Int8 => None,
            ElemType::Bf16 => Some(acc_adder(design, cfg.depth())),
        };
        let weight_fifo = weight_fifo(design, &cfg);
        let bank = banked_accumulator(&cfg).then(|| acc_bank(design, &cfg));
        let parts = Parts {
            pe: &pe,
            whole_pe: whole_pe.as_ref(),
            acc_adder: acc_adder.as_ref(),
            weight_fifo: &weight_fifo,
            acc_bank: bank.as_ref(),
        };
        build_top(m, &cfg, &parts);
    })
}

/// The modules the MXU top instantiates.
struct Parts<'a> {
    pe: &'a Rc<ModuleDef>,
    /// The PE of the first `whole_rows` rows when they differ from the
    /// others (an int8 PE with one multiplier instead of two halves).
    whole_pe: Option<&'a Rc<ModuleDef>>,
    acc_adder: Option<&'a Rc<ModuleDef>>,
    weight_fifo: &'a Rc<ModuleDef>,
    /// One column's accumulator memory, when the accumulator is banked.
    acc_bank: Option<&'a Rc<ModuleDef>>,
}

/// Whether the accumulator is one memory per column, each with its own copy
/// of the read address register (depth 5): one address register feeding
/// every block RAM of a wide accumulator is a net across the part (int8
/// 16x16 on the ECP5-85F: 12.8 ns of routing into 30 block RAMs).
fn banked_accumulator(cfg: &MxuConfig) -> bool {
    cfg.depth() >= 5
}

/// One column's accumulator memory (32-bit words), kept as a module so that
/// its read address and enable registers stay its own: the accumulating read
/// takes the address a cycle before it reads (`acc_en_d_i`, `acc_addr_d_i`)
/// and registers it here; the write port is as the unbanked memory's. The
/// host reads its own copy ([`host_copy`]), in two cycles (read latency 2),
/// so that no block RAM output travels to the port's reader in the cycle it
/// appears (the int8 16x16's critical path at 84 MHz on the ECP5-85F
/// before).
fn acc_bank(design: &mut Design, cfg: &MxuConfig) -> Rc<ModuleDef> {
    let aw = cfg.acc_rows().trailing_zeros();
    design.define(
        &format!("mxu_acc_bank_a{aw}"),
        &[("addr_bits", aw.to_string())],
        |_, m| {
            m.doc("one column of the accumulator memory with its own read address register");
            m.keep_hierarchy(
                "its read address register copies every other column's, which Yosys would merge",
            );
            let en_d = m.input("acc_en_d_i", Ty::BOOL);
            let addr_d = m.input("acc_addr_d_i", Ty::u(aw));
            let host_en = m.input("host_en_i", Ty::BOOL);
            let host_addr = m.input("host_addr_i", Ty::u(aw));
            let wr_en = m.input("wr_en_i", Ty::BOOL);
            let wr_addr = m.input("wr_addr_i", Ty::u(aw));
            let wr_data = m.input("wr_data_i", Ty::u(32));
            // No reset, so the reset does not reach every column's block
            // RAMs: the enable only lets the read register load, and what
            // it loads is used only by a valid row, which a reset clears
            // from the pipeline at the top.
            let en = m.reg("acc_en", Ty::BOOL);
            m.set_next(en, en_d);
            let addr = m.registered("acc_addr", addr_d);
            // Two copies of the column, one per read port (as synthesis
            // would make them), neither with collision logic: a row the
            // accumulating read reads in the cycle another row writes that
            // word is one that overwrites (TIMING.md A3), whose read is not
            // used; the host's copy keeps R1's promise (a read sees the old
            // word) with its own bypass.
            let mem = m.memory("acc", Ty::u(32), aw);
            m.mem_no_rw_check(
                mem,
                "a row read while its word is written does not add (TIMING.md A3), so its read is unused",
            );
            let old = m.mem_read(mem, Some(en.q()), addr);
            m.mem_write(mem, wr_en, wr_addr, wr_data);
            let host = host_copy(m, aw, (wr_en, wr_addr, wr_data), (host_en, host_addr));
            m.output("acc_data_o", old);
            m.output("host_data_o", host);
        },
    )
}

/// The host's copy of an accumulator column and its read (two cycles, R1),
/// with nothing between the block RAM's output and the register after it:
/// the copy is written a cycle late, from registers, and a read of the word
/// that delayed write stores in the read's cycle (the row written the cycle
/// before the read, which the copy does not hold yet) takes the written word
/// from a register beside it instead, chosen after the RAM's register. So
/// the copy needs no read-write collision logic from synthesis (a mux and a
/// register per bit on the RAM's output, which Yosys builds to return the
/// old word): what the RAM returns on a collision is never used. Returns the
/// row, as the writes of cycles before the read left it.
fn host_copy(
    m: &mut ModuleBuilder,
    aw: u32,
    (wr_en, wr_addr, wr_data): (Expr, Expr, Expr),
    (host_en, host_addr): (Expr, Expr),
) -> Expr {
    let late_en = m.registered("late_wr_en", wr_en);
    let late_addr = m.registered("late_wr_addr", wr_addr);
    let late_data = m.registered("late_wr_data", wr_data);
    let mem = m.memory("host_acc", Ty::u(32), aw);
    m.mem_no_rw_check(
        mem,
        "a read of the word written in its cycle takes the bypass register's word instead",
    );
    m.mem_write(mem, late_en, late_addr, late_data);
    let raw = m.mem_read(mem, Some(host_en), host_addr);
    // Like the RAM's read register, these two change only with a read.
    let hit = m.reg("bypass_hit", Ty::BOOL);
    m.set_next(hit, late_en & host_addr.is_eq(late_addr));
    m.set_enable(hit, host_en);
    let bypass = m.reg("bypass_row", Ty::u(32));
    m.set_next(bypass, late_data);
    m.set_enable(bypass, host_en);
    // The second cycle: the RAM's row into a register of its own, the
    // choice after it.
    let row = m.registered("host_row", raw);
    let hit = m.registered("bypass_hit2", hit.q());
    let bypass = m.registered("bypass_row2", bypass.q());
    mux(hit, bypass, row)
}

/// The accumulator's fp32 adder at `depth`: two stages up to depth 3
/// (`fp32_add_l2`), the five cuts of `fp::FP32_ADD` inside the adder and the result registered
/// at depth 4. Ports `a_i`, `b_i`, `sum_o`.
fn acc_adder(design: &mut Design, depth: u32) -> Rc<ModuleDef> {
    if !staged_multiplier(depth) {
        return hw::fp::fp32_add(design, 2);
    }
    let latency = Stages::of(ElemType::Bf16, depth).acc_adder_latency;
    let name = format!("mxu_acc_add_l{latency}");
    design.define(&name, &[("latency", latency.to_string())], |_, m| {
        m.doc("fp32 adder, FTZ-RNE, canonical NaN (docs/numerics.md), every cut registered, registered result");
        let a = m.input("a_i", Ty::u(32));
        let b = m.input("b_i", Ty::u(32));
        let mut p = Pipeline::new(hw::fp::FP32_ADD, "add", ACC_ADD_STAGES, None);
        let sum = hw::fp::fp32_add_piped(m, &mut p, a, b);
        p.finish();
        let sum = m.registered("sum", sum);
        m.output("sum_o", sum);
    })
}

/// The weight FIFO: the library's first-word fall-through FIFO holding
/// `weight_fifo_rows` rows in its memory plus the head in its output
/// register. Its `in_ready_o` (fewer than all rows held) equals "the memory
/// has room", because the memory is full with the output register empty only
/// for a memory of one row, and `weight_fifo_rows` >= 2.
fn weight_fifo(design: &mut Design, cfg: &MxuConfig) -> Rc<ModuleDef> {
    let t = Timing::of(cfg);
    let row = Ty::u(cfg.cols() * operand_ty(cfg.dtype()).width);
    hw::blocks::fifo(design, row, t.weight_fifo_rows + 1, FifoMode::Fwft)
}

/// The MXU top: its ports, then its parts along the data: the weight FIFO,
/// the loader, the skews into the PE grid, the de-skew, the accumulator and
/// the host's read port.
fn build_top(m: &mut ModuleBuilder, cfg: &MxuConfig, parts: &Parts) {
    use ports::*;
    let t = Timing::of(cfg);
    let (rows, cols) = (cfg.rows(), cfg.cols());
    let op_bits = operand_ty(cfg.dtype()).width;
    let acc_aw = cfg.acc_rows().trailing_zeros();

    let w_valid = m.input(W_VALID, Ty::BOOL);
    let w_row = m.input(W_ROW, Ty::u(cols * op_bits));
    let a_valid = m.input(A_VALID, Ty::BOOL);
    let a_first = m.input(A_FIRST, Ty::BOOL);
    let a_row = m.input(A_ROW, Ty::u(rows * op_bits));
    let a_int8 = cfg.int8_mode().then(|| m.input(A_INT8, Ty::BOOL));
    let a_addr = m.input(A_ACC_ADDR, Ty::u(acc_aw));
    let a_add = m.input(A_ACC_ADD, Ty::BOOL);
    let rd_en = m.input(ACC_RD_EN, Ty::BOOL);
    let rd_addr = m.input(ACC_RD_ADDR, Ty::u(acc_aw));

    let head = weight_fifo_port(m, parts.weight_fifo, w_valid, w_row);
    let loader = loader(m, cfg, &t, &head, a_valid, a_first);
    let buses = ArrayBuses::declare(m, cfg, &t);
    // Depth 5: everything entering the array waits a cycle here, the rows
    // and weights with their flags, so their relative timing is unchanged.
    let (a_row, first_accept, w_row, take) = if t.input_latency == 1 {
        (
            m.registered("a_row_in", a_row),
            m.registered("first_in", loader.first_accept),
            m.registered("w_row_in", head.row),
            m.registered("take_in", loader.take),
        )
    } else {
        (a_row, loader.first_accept, head.row, loader.take)
    };
    activation_skew(m, cfg, &t, &buses, a_row, first_accept);
    if let Some(a_int8) = a_int8 {
        let a_int8 = registered_if(m, t.input_latency == 1, "a_int8_in", a_int8);
        int8_mode::mode_skew(m, cfg, &t, &buses, a_int8);
    }
    weight_skew(m, cfg, &buses, w_row, take);
    match parts.whole_pe {
        Some(whole_pe) => {
            let whole = cfg.whole_rows();
            pe_grid(m, cfg, &t, (whole_pe, "pe", 0..whole), &buses);
            if whole < cfg.rows() {
                pe_grid(
                    m,
                    cfg,
                    &t,
                    (parts.pe, SPLIT_PE_ARRAY, whole..cfg.rows()),
                    &buses,
                );
            }
        }
        None => pe_grid(m, cfg, &t, (parts.pe, "pe", 0..cfg.rows()), &buses),
    }
    let out_row = deskew(m, cfg, &buses);
    let banked = parts.acc_bank.is_some();
    let side = RowSide::pipe(
        m,
        &t,
        acc_aw,
        banked,
        (loader.accept, a_int8, a_add, a_addr),
    );
    let data = accumulator(m, cfg, parts, out_row, &side, (rd_en, rd_addr));
    m.output(ACC_RD_DATA, data);
    let rd_valid = delay(m, "rd_valid", rd_en, t.read_latency, Some(0));
    m.output(ACC_RD_VALID, rd_valid);
}

/// The weight FIFO's head as the loader sees it.
struct FifoHead {
    valid: Expr,
    row: Expr,
    /// Driven by the loader: the head is taken this cycle.
    take: Wire,
}

/// The weight FIFO: rows written in cycle x reach the head in x + 2 at the
/// earliest, and the head is refilled in the cycle the loader takes it.
fn weight_fifo_port(
    m: &mut ModuleBuilder,
    weight_fifo: &Rc<ModuleDef>,
    w_valid: Expr,
    w_row: Expr,
) -> FifoHead {
    let wfifo = m.instance("wfifo", weight_fifo);
    m.connect(wfifo, "in_valid_i", w_valid);
    m.connect(wfifo, "in_data_i", w_row);
    let w_ready = m.inst_output(wfifo, "in_ready_o");
    m.output(ports::W_READY, w_ready);
    let valid = m.inst_output(wfifo, "out_valid_o");
    let row = m.inst_output(wfifo, "out_data_o");
    let take = m.wire_decl("take", Ty::BOOL);
    m.connect(wfifo, "out_ready_i", take.value());
    m.waive(
        "UNUSEDSIGNAL",
        "wfifo_count_o",
        "the loader needs the head's valid bit, not the FIFO's occupancy",
    );
    FifoHead { valid, row, take }
}

/// What the loader decides each cycle.
struct Loader {
    /// An activation row is accepted.
    accept: Expr,
    /// The accepted row starts a tile (it hands the loaded tile to the array).
    first_accept: Expr,
    /// The FIFO's head shifts into the shadow chains.
    take: Expr,
}

/// The loader: shifts the FIFO's head into the shadow chains, one row per
/// cycle, until a tile's R rows are loaded; accepts a tile's first row once
/// they are and the first-row gap has passed (`a_ready_o`).
fn loader(
    m: &mut ModuleBuilder,
    cfg: &MxuConfig,
    t: &Timing,
    head: &FifoHead,
    a_valid: Expr,
    a_first: Expr,
) -> Loader {
    let rows = cfg.rows();
    let loaded_ty = Ty::u(bits_for(rows));
    let loaded = m.reg_reset("loaded", loaded_ty, 0);
    let gap_ty = Ty::u(bits_for(t.first_row_gap));
    let since_first = m.reg_reset("since_first", gap_ty, t.first_row_gap);
    let tile_ready = m.wire(
        "tile_ready",
        loaded.q().is_eq(rows) & since_first.q().is_ge(t.first_row_gap),
    );
    let a_ready = m.wire("a_ready", !a_first | tile_ready);
    m.output(ports::A_READY, a_ready);
    let accept = m.wire("accept", a_valid & a_ready);
    let first_accept = m.wire("first_accept", accept & a_first);
    // Accepting a first row hands the loaded tile to the array.
    let loaded_now = mux(first_accept, 0, loaded.q());
    let may_shift = if t.shadow_hold == 0 {
        m.lit(Ty::BOOL, 1)
    } else {
        let hold = m.reg_reset("hold", Ty::u(bits_for(t.shadow_hold)), 0);
        let idle = hold.q().is_eq(0);
        m.set_next(
            hold,
            mux(first_accept, t.shadow_hold - 1, mux(idle, 0, hold.q() - 1)),
        );
        !first_accept & idle
    };
    let take = head.valid & may_shift & loaded_now.is_lt(rows);
    m.drive(head.take, take);
    m.set_next(loaded, loaded_now + take.zext(loaded_ty.width));
    let counting = since_first.q().is_lt(t.first_row_gap);
    m.set_next(
        since_first,
        mux(
            first_accept,
            1,
            mux(counting, since_first.q() + 1, t.first_row_gap),
        ),
    );
    Loader {
        accept,
        first_accept,
        take,
    }
}

/// The PE grid's buses: activations flow right, partial sums and weights
/// down. The tile-start flag reaches PE (r, c) r * latency + c cycles after
/// it is accepted, with the new tile's first activation: every PE on one
/// such wavefront sees the same flag, so one delay line (`first`, tapped per
/// wavefront) serves the whole grid instead of a flag register in every PE.
struct ArrayBuses {
    act: Bus,
    /// In int8 mode, each activation's mode bit (set: an int8 row), beside
    /// `act`.
    act_int8: Option<Bus>,
    first: Bus,
    psum: Bus,
    wchain: Bus,
    wshift: Bus,
    wavefronts: u32,
}

impl ArrayBuses {
    fn declare(m: &mut ModuleBuilder, cfg: &MxuConfig, t: &Timing) -> ArrayBuses {
        let (rows, cols) = (cfg.rows(), cfg.cols());
        let op_ty = operand_ty(cfg.dtype());
        let wavefronts = (rows - 1) * t.pe_latency + cols;
        ArrayBuses {
            act: m.bus("act", op_ty, &[rows, cols + 1]),
            act_int8: cfg
                .int8_mode()
                .then(|| m.bus("act_int8", Ty::BOOL, &[rows, cols + 1])),
            first: m.bus("first", Ty::BOOL, &[wavefronts]),
            psum: m.bus("psum", sum_ty(cfg.dtype()), &[rows + 1, cols]),
            wchain: m.bus("wchain", op_ty, &[rows + 1, cols]),
            wshift: m.bus("wshift", Ty::BOOL, &[cols]),
            wavefronts,
        }
    }
}

/// Operand `k` of a row of operands, as the array carries it.
fn operand(row: Expr, dtype: ElemType, k: u32) -> Expr {
    let op_ty = operand_ty(dtype);
    let x = row.slice(k * op_ty.width, op_ty.width);
    if op_ty.signed {
        x.as_signed()
    } else {
        x
    }
}

/// Activation skew: row r's activation enters the array r * latency cycles
/// late, and the tile-start flag runs down the wavefront line beside it.
fn activation_skew(
    m: &mut ModuleBuilder,
    cfg: &MxuConfig,
    t: &Timing,
    buses: &ArrayBuses,
    a_row: Expr,
    first_accept: Expr,
) {
    for r in 0..cfg.rows() {
        let a = operand(a_row, cfg.dtype(), r);
        let a = delay(m, &format!("askew{r}"), a, r * t.pe_latency, None);
        m.bus_drive(buses.act, &[r, 0], a);
    }
    // The wave lines (this and `wshift_wave`) have no reset: their taps sit
    // beside the PEs they drive, all over the array, and a reset reaching
    // each was the longest net of a 16x16 array. A flag from before a reset
    // is at tap j + t t cycles later, one entering after it reaches tap k at
    // least k + 1 cycles after it: the old flags pass each PE before the
    // first operand or weight that follows the reset, and they only swap or
    // shift weight registers that hold nothing valid then (the first tile
    // after a reset shifts in all R weight rows and swaps them in with its
    // first row). The loader and the valid pipes, which decide what the
    // ports show, keep their reset.
    let first_wave = delay_taps(m, "first_wave", first_accept, buses.wavefronts - 1, None);
    for (k, f) in first_wave.into_iter().enumerate() {
        m.bus_drive(buses.first, &[k as u32], f);
    }
}

/// Weight skew: column c shifts c cycles late, with the wavefront, so a
/// column's shadow chain is free as soon as the wavefront has passed it.
/// Also the partial sums entering the top row.
fn weight_skew(m: &mut ModuleBuilder, cfg: &MxuConfig, buses: &ArrayBuses, head: Expr, take: Expr) {
    let cols = cfg.cols();
    // No reset: see `first_wave` in `activation_skew`.
    let shift_wave = delay_taps(m, "wshift_wave", take, cols - 1, None);
    for c in 0..cols {
        let w = operand(head, cfg.dtype(), c);
        let w = delay(m, &format!("wskew{c}"), w, c, None);
        m.bus_drive(buses.wchain, &[0, c], w);
        m.bus_drive(buses.wshift, &[c], shift_wave[c as usize]);
        // The sums start at +0 (int32 0, or fp32 +0.0 as the contract says).
        let zero = m.lit(sum_ty(cfg.dtype()), 0);
        m.bus_drive(buses.psum, &[0, c], zero);
    }
}

/// The instance array of the PEs with two half multipliers below the
/// `whole_rows` rows (its row r is the array's row `whole_rows` + r).
pub const SPLIT_PE_ARRAY: &str = "pe_split";

/// Rows `rows` of the R x C grid of PEs on their buses, as one instance
/// array of `pe` named `name` (its row 0 is the grid's row `rows.start`).
fn pe_grid(
    m: &mut ModuleBuilder,
    cfg: &MxuConfig,
    t: &Timing,
    (pe, name, rows): (&Rc<ModuleDef>, &str, std::ops::Range<u32>),
    buses: &ArrayBuses,
) {
    let grid = m.instance_array(name, pe, &[("row", rows.len() as u32), ("col", cfg.cols())]);
    let (r, c) = (grid.var(0) + i64::from(rows.start), grid.var(1));
    m.array_connect(grid, "a_i", buses.act, &[r.clone(), c.clone()]);
    m.array_connect(grid, "a_o", buses.act, &[r.clone(), c.clone() + 1]);
    m.array_connect(
        grid,
        "first_i",
        buses.first,
        &[r.clone() * i64::from(t.pe_latency) + c.clone()],
    );
    m.array_connect(grid, "psum_i", buses.psum, &[r.clone(), c.clone()]);
    m.array_connect(grid, "psum_o", buses.psum, &[r.clone() + 1, c.clone()]);
    m.array_connect(grid, "w_i", buses.wchain, &[r.clone(), c.clone()]);
    m.array_connect(grid, "w_o", buses.wchain, &[r.clone() + 1, c.clone()]);
    m.array_connect(grid, "w_shift_i", buses.wshift, std::slice::from_ref(&c));
    if let Some(act_int8) = buses.act_int8 {
        m.array_connect(grid, "int8_i", act_int8, &[r.clone(), c.clone()]);
        m.array_connect(grid, "int8_o", act_int8, &[r.clone(), c + 1]);
    }
    if rows.end < cfg.rows() {
        return;
    }
    if buses.act_int8.is_some() {
        m.waive(
            "UNUSEDSIGNAL",
            "act_int8",
            "mode bits leaving the right edge of the array have no consumer",
        );
    }
    m.waive(
        "UNUSEDSIGNAL",
        "act",
        "activations leaving the right edge of the array have no consumer",
    );
    m.waive(
        "UNUSEDSIGNAL",
        "wchain",
        "shadow weights shifted out of the bottom row have no consumer",
    );
}

/// De-skew: column c leaves the array c cycles after column 0; delaying it
/// C-1-c cycles lines the output row up. Column 0 in the low bits.
fn deskew(m: &mut ModuleBuilder, cfg: &MxuConfig, buses: &ArrayBuses) -> Expr {
    let (rows, cols) = (cfg.rows(), cfg.cols());
    let mut outs = Vec::new();
    for c in 0..cols {
        let s = m.bus_read(buses.psum, &[rows, c]);
        outs.push(delay(m, &format!("deskew{c}"), s, cols - 1 - c, None));
    }
    outs.reverse();
    m.wire("out_row", cat(&outs))
}

/// A row's accumulator address and mode, travelling beside it through the
/// array, and the valid bits of the rows in flight.
struct RowSide {
    /// One bit per cycle of the array's latency: a row is in that stage.
    valid_pipe: Reg,
    /// The output row leaving the array is valid.
    out_valid: Expr,
    out_addr: Expr,
    out_add: Expr,
    /// In int8 mode, whether the output row is an int8 row.
    out_int8: Option<Expr>,
    /// With a banked accumulator, `out_valid` and `out_addr` a cycle early
    /// (the last stage's inputs), for the banks' registers of their own.
    early: Option<(Expr, Expr)>,
}

impl RowSide {
    fn pipe(
        m: &mut ModuleBuilder,
        t: &Timing,
        acc_aw: u32,
        banked: bool,
        (accept, a_int8, a_add, a_addr): (Expr, Option<Expr>, Expr, Expr),
    ) -> RowSide {
        let valid_pipe = m.reg_reset("valid_pipe", Ty::u(t.array_latency), 0);
        let (valid_next, early_valid) = if t.array_latency == 1 {
            (accept, accept)
        } else {
            let kept = valid_pipe.q().slice(0, t.array_latency - 1);
            (cat(&[kept, accept]), kept.msb())
        };
        m.set_next(valid_pipe, valid_next);
        let out_valid = m.wire("out_valid", valid_pipe.q().msb());
        let side_in = side_bits(a_int8, a_add, a_addr);
        let (side, early) = if banked {
            let early = delay(m, "side_pipe", side_in, t.array_latency - 1, None);
            let side = m.registered("side_last", early);
            (side, Some((early_valid, early.slice(0, acc_aw))))
        } else {
            (delay(m, "side_pipe", side_in, t.array_latency, None), None)
        };
        RowSide {
            valid_pipe,
            out_valid,
            out_addr: side.slice(0, acc_aw),
            out_add: side.bit(acc_aw),
            out_int8: a_int8.map(|_| side.msb()),
            early,
        }
    }
}

/// A row's side bits as they travel beside it: its address in the low
/// bits, the add flag above it, and in int8 mode the row's mode on top.
fn side_bits(int8: Option<Expr>, add: Expr, addr: Expr) -> Expr {
    match int8 {
        Some(int8) => cat(&[int8, add, addr]),
        None => cat(&[add, addr]),
    }
}

/// The row an accumulator adder leaves to write.
struct AccWrite {
    /// The new accumulator row.
    row: Expr,
    valid: Expr,
    /// The add flag and address the row was accepted with.
    side: Expr,
    /// Rows between the accumulator read and its write.
    pending: Expr,
}

/// The accumulator memory: the row leaving the array in cycle T reads its
/// accumulator row; the new value (the output, or the sum of both) is
/// written in T + 1 + La. Returns the host's read port's data (`host`: its
/// enable and address).
fn accumulator(
    m: &mut ModuleBuilder,
    cfg: &MxuConfig,
    parts: &Parts,
    out_row: Expr,
    side: &RowSide,
    host: (Expr, Expr),
) -> Expr {
    let acc_aw = cfg.acc_rows().trailing_zeros();
    let memory = AccMemory::new(m, cfg, parts.acc_bank, side, host);
    let old = memory.old;
    let row1 = m.reg("row1", out_row.ty());
    m.set_next(row1, out_row);
    let side1_bits = side_bits(side.out_int8, side.out_add, side.out_addr);
    let side1 = m.reg("side1", side1_bits.ty());
    m.set_next(side1, side1_bits);
    let valid1 = m.reg_reset("valid1", Ty::BOOL, 0);
    m.set_next(valid1, side.out_valid);
    let read = AccRead {
        old,
        new: row1.q(),
        side: side1.q(),
        valid: valid1.q(),
    };
    // Depth 3: the memory's read data and the output row wait a cycle in
    // registers, so the adder starts from flip-flops rather than from the
    // block RAM's output.
    let (read, read_pending) = if Timing::acc_input_register(cfg) {
        let registered = AccRead {
            old: m.registered("old2", read.old),
            new: m.registered("row2", read.new),
            side: m.registered("side2", read.side),
            valid: {
                let v = m.reg_reset("valid2", Ty::BOOL, 0);
                m.set_next(v, read.valid);
                v.q()
            },
        };
        (registered, Some(read.valid))
    } else {
        (read, None)
    };
    let la = Stages::of(cfg.dtype(), cfg.depth()).acc_adder_latency;
    let write = match parts.acc_adder {
        None => add_int32(cfg.cols(), &read),
        Some(adder) => add_fp32(m, cfg, la, adder, &read),
    };
    let new_row = m.wire("acc_new_row", write.row);
    let wr_valid = m.wire("acc_write", write.valid);
    let host = memory.write(m, wr_valid, write.side.slice(0, acc_aw), new_row);
    m.output(ports::ACC_WR, wr_valid);
    let pending = match read_pending {
        Some(v) => v | write.pending,
        None => write.pending,
    };
    m.output(ports::BUSY, side.valid_pipe.q().any() | pending);
    host
}

/// The accumulator's storage: one memory, or one bank per column.
struct AccMemory {
    /// The accumulating read's row (a cycle after the output row left the array).
    old: Expr,
    /// The host's read port: enable and address.
    host: (Expr, Expr),
    storage: AccStorage,
}

enum AccStorage {
    Memory(Mem),
    /// Each column's bank instance.
    Banks(Vec<Inst>),
}

impl AccMemory {
    fn new(
        m: &mut ModuleBuilder,
        cfg: &MxuConfig,
        bank: Option<&Rc<ModuleDef>>,
        side: &RowSide,
        host: (Expr, Expr),
    ) -> AccMemory {
        let acc_aw = cfg.acc_rows().trailing_zeros();
        let Some(bank) = bank else {
            let acc = m.memory("acc", Ty::u(cfg.cols() * 32), acc_aw);
            let old = m.mem_read(acc, Some(side.out_valid), side.out_addr);
            return AccMemory {
                old,
                host,
                storage: AccStorage::Memory(acc),
            };
        };
        let (early_valid, early_addr) = side.early.expect("a banked accumulator's early address");
        let banks: Vec<Inst> = (0..cfg.cols())
            .map(|c| {
                let b = m.instance(&format!("acc_bank{c}"), bank);
                m.connect(b, "acc_en_d_i", early_valid);
                m.connect(b, "acc_addr_d_i", early_addr);
                m.connect(b, "host_en_i", host.0);
                m.connect(b, "host_addr_i", host.1);
                b
            })
            .collect();
        let words: Vec<Expr> = banks
            .iter()
            .rev()
            .map(|&b| m.inst_output(b, "acc_data_o"))
            .collect();
        AccMemory {
            old: cat(&words),
            host,
            storage: AccStorage::Banks(banks),
        }
    }

    /// The write port, then the host's read port; returns the host's row.
    fn write(&self, m: &mut ModuleBuilder, enable: Expr, addr: Expr, row: Expr) -> Expr {
        match &self.storage {
            AccStorage::Memory(acc) => {
                m.mem_write(*acc, enable, addr, row);
                m.mem_read(*acc, Some(self.host.0), self.host.1)
            }
            AccStorage::Banks(banks) => {
                for (c, &b) in banks.iter().enumerate() {
                    m.connect(b, "wr_en_i", enable);
                    m.connect(b, "wr_addr_i", addr);
                    m.connect(b, "wr_data_i", row.slice(32 * c as u32, 32));
                }
                let words: Vec<Expr> = banks
                    .iter()
                    .rev()
                    .map(|&b| m.inst_output(b, "host_data_o"))
                    .collect();
                cat(&words)
            }
        }
    }
}

/// An accumulator row read, with the output row to add to it (one cycle
/// after the output row left the array).
struct AccRead {
    old: Expr,
    new: Expr,
    /// The side bits ([`side_bits`]): the address, the add flag above it,
    /// and in int8 mode the row's mode on top.
    side: Expr,
    valid: Expr,
}

/// int32: wrapping adds, no extra stage.
fn add_int32(cols: u32, read: &AccRead) -> AccWrite {
    let add = read.side.msb();
    let cols_sum: Vec<Expr> = (0..cols)
        .rev()
        .map(|c| {
            let o = read.old.slice(c * 32, 32);
            let n = read.new.slice(c * 32, 32);
            mux(add, o + n, n)
        })
        .collect();
    AccWrite {
        row: cat(&cols_sum),
        valid: read.valid,
        side: read.side,
        pending: read.valid,
    }
}

/// fp32: one adder per column, `la` cycles deep; the row, its side bits and
/// its valid bit wait beside them. In int8 mode an int8 row that adds takes
/// the wrapping int32 sums instead, formed before the wait and waiting in
/// the row's place.
fn add_fp32(
    m: &mut ModuleBuilder,
    cfg: &MxuConfig,
    la: u32,
    adder: &Rc<ModuleDef>,
    read: &AccRead,
) -> AccWrite {
    let cols = cfg.cols();
    let acc_aw = cfg.acc_rows().trailing_zeros();
    let acc_old = m.bus("acc_old", Ty::u(32), &[cols]);
    let acc_new = m.bus("acc_new", Ty::u(32), &[cols]);
    let acc_sum = m.bus("acc_sum", Ty::u(32), &[cols]);
    for c in 0..cols {
        m.bus_drive(acc_old, &[c], read.old.slice(c * 32, 32));
        m.bus_drive(acc_new, &[c], read.new.slice(c * 32, 32));
    }
    let adders = m.instance_array("acc_add", adder, &[("col", cols)]);
    let c = adders.var(0);
    // C = add32(C, s_t): the accumulator is the first operand.
    m.array_connect(adders, "a_i", acc_old, std::slice::from_ref(&c));
    m.array_connect(adders, "b_i", acc_new, std::slice::from_ref(&c));
    m.array_connect(adders, "sum_o", acc_sum, &[c]);
    let waiting = if cfg.int8_mode() {
        int8_mode::acc_int_sums(m, cols, acc_aw, read)
    } else {
        read.new
    };
    let row_late = delay(m, "row_late", waiting, la, None);
    let side_late = delay(m, "side_late", read.side, la, None);
    let valid_late = m.reg_reset("valid_late", Ty::u(la), 0);
    let next = if la == 1 {
        read.valid
    } else {
        cat(&[valid_late.q().slice(0, la - 1), read.valid])
    };
    m.set_next(valid_late, next);
    // The fp32 sum for a bf16 row that adds; the waiting row otherwise.
    let add = if cfg.int8_mode() {
        side_late.bit(acc_aw) & !side_late.msb()
    } else {
        side_late.bit(acc_aw)
    };
    let cols_sum: Vec<Expr> = (0..cols)
        .rev()
        .map(|c| {
            let s = m.bus_read(acc_sum, &[c]);
            mux(add, s, row_late.slice(c * 32, 32))
        })
        .collect();
    AccWrite {
        row: cat(&cols_sum),
        valid: valid_late.q().msb(),
        side: side_late,
        pending: read.valid | valid_late.q().any(),
    }
}

/// The processing element for `dtype` at pipeline depth `depth` (its
/// product latency and PE latency: [`Timing`]).
#[track_caller]
pub fn pe(design: &mut Design, dtype: ElemType, depth: u32) -> Rc<ModuleDef> {
    assert!(
        config::MXU_DEPTH_RANGE.contains(&depth),
        "MXU depth {depth} is out of range"
    );
    let stages = Stages::of(dtype, depth);
    match dtype {
        ElemType::Int8 => pe_int8(design, stages.product_latency, false),
        ElemType::Bf16 => pe_bf16(design, stages),
    }
}

/// The PE module's name and parameters: today's for product latency 0.
fn pe_name(dtype: ElemType, product_latency: u32) -> (String, Vec<(&'static str, String)>) {
    let mut params = vec![("dtype", dtype.name().to_string())];
    if product_latency == 0 {
        return (format!("mxu_pe_{dtype}"), params);
    }
    params.push(("product_latency", product_latency.to_string()));
    (format!("mxu_pe_{dtype}_p{product_latency}"), params)
}

/// Instance name of the multiplier of an int8 PE that keeps its product
/// whole where the others split it (the FPGA flows name it in their DSP
/// budget).
pub const WHOLE_PRODUCT: &str = "mul_whole";

/// a x w as one multiplier module, registered once more with `twice`: the
/// same cycles as [`split_product`], for a multiplier meant for a DSP block.
fn whole_product(
    design: &mut Design,
    m: &mut ModuleBuilder,
    a: Expr,
    w: Expr,
    twice: bool,
) -> Expr {
    let product = multiplier(design, m, WHOLE_PRODUCT, a, w);
    registered_if(m, twice, "prod_whole", product)
}

/// `a` x `b` (signed) by an instance `name` of a multiplier module of their
/// widths (`hw::arith::int_mul_unit`, product registered): a module of its
/// own, so that the FPGA flows can name it in their DSP budget.
fn multiplier(design: &mut Design, m: &mut ModuleBuilder, name: &str, a: Expr, b: Expr) -> Expr {
    let unit = hw::arith::int_mul_unit(design, a.ty(), b.ty(), 1, false);
    let inst = m.instance(name, &unit);
    m.connect(inst, "a_i", a);
    m.connect(inst, "b_i", b);
    m.inst_output(inst, "p_o")
}

/// `value`, through a register `name` when `register` is set.
fn registered_if(m: &mut ModuleBuilder, register: bool, name: &str, value: Expr) -> Expr {
    if register {
        m.registered(name, value)
    } else {
        value
    }
}

/// Instance names of the int8 PE's two partial-product multipliers at
/// depth 4 (the FPGA flows name them in their DSP budget).
pub const PARTIAL_PRODUCT_HIGH: &str = "mul_hi";
pub const PARTIAL_PRODUCT_LOW: &str = "mul_lo";

/// a x w as two registered partial products, a x w\[7:4\] (signed) and
/// a x w\[3:0\] (unsigned, as a 5-bit signed operand), each a multiplier
/// of half the depth of the 8 x 8 one, summed in the next stage:
/// a x w = 16 (a x w\[7:4\]) + a x w\[3:0\] exactly. Each half is a
/// multiplier module of its own (`hw::arith::int_mul_unit`, product
/// registered), so the FPGA flows can tell the halves apart. With
/// `twice`, each half is registered once more before the add, so a half in
/// a DSP block and the adder need not sit together.
fn split_product(
    design: &mut Design,
    m: &mut ModuleBuilder,
    a: Expr,
    w: Expr,
    twice: bool,
) -> Expr {
    let high_w = w.slice(4, 4).as_signed();
    let high = multiplier(design, m, PARTIAL_PRODUCT_HIGH, a, high_w); // s12
    let zero = m.lit(Ty::BOOL, 0);
    let low_w = cat(&[zero, w.slice(0, 4)]).as_signed();
    let low = multiplier(design, m, PARTIAL_PRODUCT_LOW, a, low_w); // s13
    let high = registered_if(m, twice, "prod_hi", high);
    let low = registered_if(m, twice, "prod_lo", low);
    let nibble = m.lit(Ty::u(4), 0);
    cat(&[high, nibble]).as_signed() + low.sext(16)
}

/// The multiplier's activation operand: with product latency 2 the register
/// that passes it right (`a_q`), one cycle after its arrival, as the weight
/// operand is then ([`weights`]).
fn multiplier_activation(product_latency: u32, a: Expr, a_q: Expr) -> Expr {
    if product_latency >= 2 {
        a_q
    } else {
        a
    }
}

/// The multiplier's operands: with product latency 5 a register of its own
/// for each ([`multiplier_operand_registers`]), otherwise `x` and `w`.
fn multiplier_operands(
    design: &mut Design,
    m: &mut ModuleBuilder,
    product_latency: u32,
    x: Expr,
    w: Expr,
) -> (Expr, Expr) {
    if multiplier_operand_registers(product_latency) {
        (
            // Its own register, not the pass-right one: they hold the same
            // activation, and merged, the multiplier (often a DSP block away
            // from the PE's logic) was fed from a register that also feeds
            // the next PE (int8 16x16 on the ECP5-85F: a 15 ns route).
            hw::blocks::kept_register(design, m, "mul_a", x),
            m.registered("mul_w", w),
        )
    } else {
        (x, w)
    }
}

/// The product as the partial-sum adder takes it: registered with product
/// latency 1 or 2.
fn product_stage(m: &mut ModuleBuilder, product_latency: u32, product: Expr) -> Expr {
    registered_if(m, product_latency >= 1, "prod", product)
}

/// The weight registers every PE has: the shadow loaded by the chain, and the
/// active one switched in by the tile-start flag. Returns the weight the
/// multiplier takes. With product latency below 2 that is the weight for the
/// activation arriving this cycle: the shadow while the flag passes (the new
/// tile's first row), the active register otherwise. With product latency 2
/// the multiplier takes its operands a cycle after the activation arrives,
/// and the weight chosen then is what the active register holds by then (the
/// flag loads it with the shadow in the arrival cycle), so the active
/// register is the weight operand's register: no select before the
/// multiplier, and no register of its own.
fn weights(m: &mut ModuleBuilder, ty: Ty, first: Expr, product_latency: u32) -> Expr {
    let w_in = m.input("w_i", ty);
    let w_shift = m.input("w_shift_i", Ty::BOOL);
    let shadow = m.reg("shadow", ty);
    m.set_next(shadow, w_in);
    m.set_enable(shadow, w_shift);
    let active = m.reg("active", ty);
    m.set_next(active, shadow.q());
    m.set_enable(active, first);
    m.output("w_o", shadow.q());
    if product_latency >= 2 {
        active.q()
    } else {
        m.wire("weight", first.select(shadow.q(), active.q()))
    }
}

/// The activation register that passes activations to the right; returns
/// its output.
fn pass_right(m: &mut ModuleBuilder, a: Expr) -> Expr {
    let a_q = m.reg("a", a.ty());
    m.set_next(a_q, a);
    m.output("a_o", a_q.q());
    a_q.q()
}

/// The int8 PE; `whole` keeps its product one multiplier at product latency
/// 3 and 4, where the PE otherwise splits it ([`split_product`]).
fn pe_int8(design: &mut Design, product_latency: u32, whole: bool) -> Rc<ModuleDef> {
    // Only a PE that splits its product (MxuConfig::whole_rows_in_effect)
    // has a whole one to keep.
    assert!(
        !whole || product_latency >= 3,
        "a whole product at product latency {product_latency}, where the PE has one anyway"
    );
    let (mut name, mut params) = pe_name(ElemType::Int8, product_latency);
    if whole {
        name.push_str("_whole");
        params.push(("product", "whole".to_string()));
    }
    design.define(&name, &params, |design, m| {
        // Inlined (no `no_inline`): the int8 PE is a few operations, which
        // Verilator folds into straight-line code across the array; calls into
        // a separate PE per instance ran slower (int8 16x16, Verilator 5.048:
        // 395 k against 482 k cycles/s through the run CLI).
        let doc = match product_latency {
            0 => "int8 PE: shadow/active weights, psum += a * w (int32, wrapping)",
            1 => "int8 PE: shadow/active weights, product register, psum += product (int32, wrapping)",
            2 => "int8 PE: shadow/active weights, operand and product registers, psum += product (int32, wrapping)",
            3 if whole => "int8 PE: shadow/active weights, operand registers, registered product, product register, psum += product (int32, wrapping)",
            3 => "int8 PE: shadow/active weights, operand registers, two registered partial products, product register, psum += product (int32, wrapping)",
            _ if whole => "int8 PE: shadow/active weights, two levels of operand registers, product registered twice, product register, psum += product (int32, wrapping)",
            _ => "int8 PE: shadow/active weights, two levels of operand registers, two partial products registered twice, product register, psum += product (int32, wrapping)",
        };
        m.doc(doc);
        let a = m.input("a_i", Ty::s(8));
        let first = m.input("first_i", Ty::BOOL);
        let psum_in = m.input("psum_i", Ty::s(32));
        let weight = weights(m, Ty::s(8), first, product_latency);
        if product_latency == 0 {
            // The exact 16-bit product, extended to 32 bits: one 32-bit multiply.
            let product = m.wire("product", a.mul_wide_to(weight, 32));
            let psum = m.reg("psum", Ty::s(32));
            m.set_next(psum, psum_in + product);
            m.output("psum_o", psum.q());
            pass_right(m, a);
            return;
        }
        let a_q = pass_right(m, a);
        let x = multiplier_activation(product_latency, a, a_q);
        let (x, weight) = multiplier_operands(design, m, product_latency, x, weight);
        // The exact 16-bit product, registered as it is: the multiplier alone
        // in its stage (a DSP block's multiplier and its output register).
        let product = if whole {
            whole_product(
                design,
                m,
                x,
                weight,
                multiplier_operand_registers(product_latency),
            )
        } else if product_latency >= 3 {
            split_product(
                design,
                m,
                x,
                weight,
                multiplier_operand_registers(product_latency),
            )
        } else {
            x.mul_wide(weight)
        };
        let product = m.wire("product", product);
        let product = product_stage(m, product_latency, product);
        let psum = m.reg("psum", Ty::s(32));
        m.set_next(psum, psum_in + product.sext(32));
        m.output("psum_o", psum.q());
    })
}

/// The bf16 PE. Flattened into the array (Verilator's choice), every
/// instance's floating-point datapath lands in a few huge C++ functions that
/// the compiler works through slowly (bf16 16x16: 64 s with Verilator 5.048),
/// so Verilator models hold it as one copy of code for all instances
/// ([`hw::SimLayout::Shared`]).
///
/// Measured with Verilator 5.048 (`MxuDriver`, 1024x128x64 of random normal
/// values, on two cores with a synthesis running on the other): against a
/// class of its own whose code Verilator specialises per instance
/// ([`hw::SimLayout::Separate`]), shared code ran 1.1 to 1.6 times as fast
/// at 4x4 and 8x8 and 1.3 to 1.8 times at 16x16 (111-118 k against 61-77 k
/// cycles/s) in alternating runs; at 32x32,
/// where 1,024 specialised copies no longer fit the processor's caches, it
/// was 1.8 times as fast even with its inputs fully `public`, and built in
/// 46 s instead of 176 s.
fn pe_bf16(design: &mut Design, stages: Stages) -> Rc<ModuleDef> {
    let Stages {
        product_latency,
        pe_latency,
        ..
    } = stages;
    let (name, mut params) = pe_name(ElemType::Bf16, product_latency);
    if pe_latency != 2 {
        params.push(("pe_latency", pe_latency.to_string()));
    }
    design.define(&name, &params, |design, m| {
        let doc = match product_latency {
            0 => "bf16 PE: psum = add32(psum, mul(a, w)), FTZ-RNE, two pipeline stages",
            1 => "bf16 PE: psum = add32(psum, mul(a, w)), FTZ-RNE, product register and two adder stages",
            2 => "bf16 PE: psum = add32(psum, mul(a, w)), FTZ-RNE, operand and product registers and two adder stages",
            4 => "bf16 PE: psum = add32(psum, mul(a, w)), FTZ-RNE, operand registers, a three-stage multiplier, product register and a six-stage adder",
            _ => "bf16 PE: psum = add32(psum, mul(a, w)), FTZ-RNE, two levels of operand registers, a three-stage multiplier, product register and a six-stage adder",
        };
        m.doc(doc);
        m.shared_code(
            "many instances of a large PE: one copy of its code keeps the model within \
             the caches and its build time in proportion to the array",
        );
        let a = m.input("a_i", Ty::u(16));
        let first = m.input("first_i", Ty::BOOL);
        let psum_in = m.input("psum_i", Ty::u(32));
        let weight = weights(m, Ty::u(16), first, product_latency);
        let x = match product_latency {
            0 => a,
            _ => {
                let a_q = pass_right(m, a);
                multiplier_activation(product_latency, a, a_q)
            }
        };
        let (x, weight) = multiplier_operands(design, m, product_latency, x, weight);
        let product = if product_latency >= 3 {
            // The operands are registered already (`a_q` and the active
            // weight): the multiplier's `product` and `exponent` cuts.
            let mut p = Pipeline::with_cuts(hw::fp::BF16_MUL, "mul", vec![false, true, true], None);
            let product = hw::fp::bf16_mul_piped(m, &mut p, x, weight);
            p.finish();
            product
        } else {
            hw::fp::bf16_mul_logic(m, x, weight)
        };
        let product = m.wire("product", product);
        let product = product_stage(m, product_latency, product);
        let sum = if pe_latency > 2 {
            // Every cut of the adder registered, then the psum register.
            let mut p = Pipeline::new(hw::fp::FP32_ADD, "add", pe_latency - 1, None);
            let sum = hw::fp::fp32_add_piped(m, &mut p, psum_in, product);
            p.finish();
            sum
        } else {
            // Stage 1 (this cycle): s = add32(psum, product) up to the
            // significand sum; stage 2 (next cycle): normalise and round
            // into the psum register.
            let stage1 = hw::fp::fp32_add_stage1(m, psum_in, product);
            let stage1 = hw::fp::register_stage(m, "stage1_", &stage1.to_vec());
            hw::fp::fp32_add_stage2(m, &hw::fp::AddStage1::from_vec(&stage1))
        };
        let psum = m.reg("psum", Ty::u(32));
        m.set_next(psum, sum);
        m.output("psum_o", psum.q());
        if product_latency == 0 {
            pass_right(m, a);
        }
    })
}

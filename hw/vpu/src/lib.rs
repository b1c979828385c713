//! The vector processing unit (VPU): a lanes x sublanes SIMD unit on 32-bit
//! elements with its own instruction stream, for everything around a matmul
//! that is not one: bias, activations, requantization and conversion of the
//! MXU's results, elementwise arithmetic and reductions.
//!
//! ```text
//!                instr_i (128-bit bundles: load | ALU | store)
//!                   │
//!   ┌─ issue ──────▼───────────────────────────────────────────────────┐
//!   │ decode, register reads (write-first), VMEM read for the load slot │
//!   └──────────────┬───────────────────────────────────────────────────┘
//!   ┌─ execute ────▼───────────────────────────────────────────────────┐
//!   │ operands forwarded ─► W element ALUs ─┐                          │
//!   │            │                          ├─► result ─► VMEM write   │
//!   │            └──► cross-lane unit ──────┘   (store slot)           │
//!   │                 rotators, reduction units (one fold level/cycle) │
//!   └──────────────┬───────────────────────────────────────────────────┘
//!   ┌─ write-back ─▼───────────────────────────────────────────────────┐
//!   │ register file: load port, ALU port                               │
//!   └──────────────────────────────────────────────────────────────────┘
//! ```
//!
//! # Machine
//!
//! A vector holds W = lanes x sublanes 32-bit elements (`config::VpuConfig`);
//! element `e = s * lanes + l` sits in lane `l` of sublane `s`. There are V
//! vector registers `v0..v(V-1)` and a vector memory (VMEM) of D vector-wide
//! words, V and D powers of two. Each lane is a module holding element `e`
//! of every register and every VMEM word, its element ALU and its
//! write-back registers; the top holds the control and the cross-lane unit.
//! Register and VMEM contents are not initialised: the host writes what a
//! program reads (reset clears the pipeline and the error flag, not the
//! storage).
//!
//! # Instructions
//!
//! One 128-bit instruction, a *bundle*, is issued per cycle. It has three
//! slots, executed in this order, each seeing the results of the ones
//! before it and of every earlier bundle:
//!
//! 1. **load**: `vd_ld = VMEM[addr_ld]`;
//! 2. **ALU**: one operation `vd = op(vs1, vs2, vs3, imm)`;
//! 3. **store**: `VMEM[addr_st] = vs_st`.
//!
//! So `vld v1, [b] ; add_f32 v2, v0, v1 ; vst v2, [a]` in one bundle adds the
//! word it loads and stores the sum: an elementwise binary operation streams
//! at one vector per two bundles, a unary one at one per bundle.
//!
//! | bits | field |
//! | --- | --- |
//! | 127..96 | `imm`, 32 bits: `bcast`'s value, a rotation amount |
//! | 95..88 | opcode of the ALU slot (table below; 0 = `nop`) |
//! | 87..82 | `vd` |
//! | 81..76, 75..70, 69..64 | `vs1`, `vs2`, `vs3` |
//! | 63 | load enable |
//! | 61..56 | load destination register |
//! | 55..32 | load VMEM address |
//! | 31 | store enable |
//! | 29..24 | store source register |
//! | 23..0 | store VMEM address |
//!
//! Bits 62 and 30 are ignored. A register field names register `r mod V`
//! (its low log2 V bits), an address field word `a mod D`. `config::vpu_isa`
//! spells these numbers for programs (`Bundle::encode`).
//!
//! ALU operations (elementwise over the W elements unless marked
//! cross-lane; arithmetic as `docs/numerics.md#vpu-semantics`; compares
//! write int32 1 or 0):
//!
//! | opcode | name | `vd[e] =` |
//! | --- | --- | --- |
//! | 0x00 | `nop` | (nothing written) |
//! | 0x01..0x03 | `add_i32` `sub_i32` `mul_i32` | vs1 + vs2, vs1 - vs2, low 32 bits of vs1 x vs2 (wrapping) |
//! | 0x04, 0x05 | `min_i32` `max_i32` | signed min, max |
//! | 0x06..0x09 | `and_i32` `or_i32` `xor_i32` `not_i32` | bitwise (`not` of vs1) |
//! | 0x0A..0x0C | `shl_i32` `shr_i32` `sra_i32` | vs1 shifted by (vs2 AND 31): left, logical right, arithmetic right |
//! | 0x0D | `relu_i32` | max(vs1, 0) |
//! | 0x0E..0x13 | `eq_i32` `ne_i32` `lt_i32` `le_i32` `ltu_i32` `leu_i32` | compares (lt, le signed; ltu, leu unsigned) |
//! | 0x14 | `select` | vs1 != 0 ? vs2 : vs3 (bit patterns unchanged) |
//! | 0x15 | `bcast` | imm (scalar broadcast) |
//! | 0x16 | `requant_i8` | clamp(zp + RDBPOT(SRDHM(vs1, vs2), sh), -128, 127), sign-extended; sh = vs3 bits 4..0, zp = vs3 bits 15..8 (int8) |
//! | 0x20..0x22 | `add_f32` `sub_f32` `mul_f32` | FTZ-RNE |
//! | 0x23, 0x24 | `min_f32` `max_f32` | rule 7 |
//! | 0x25, 0x26 | `relu_f32` `relu6_f32` | max(vs1, +0); min(max(vs1, +0), 6.0) |
//! | 0x27..0x2A | `eq_f32` `ne_f32` `lt_f32` `le_f32` | fp32 compares (NaN: only ne is true) |
//! | 0x2B, 0x2C | `cvt_i32_f32` `cvt_f32_i32` | conversions |
//! | 0x2D | `cvt_f32_bf16` | bf16 of vs1 in bits 15..0, bits 31..16 zero |
//! | 0x2E | `cvt_bf16_f32` | fp32 of the bf16 in vs1 bits 15..0 |
//! | 0x40..0x42 | `reduce_sum_i32` `reduce_max_i32` `reduce_min_i32` | cross-lane: `vd[0]` = the fold of vs1, `vd[e > 0]` = 0 |
//! | 0x43..0x45 | `reduce_sum_f32` `reduce_max_f32` `reduce_min_f32` | cross-lane, likewise (add32, max32, min32) |
//! | 0x48 | `rot_lane` | cross-lane: `vd[s][l] = vs1[s][(l + imm) mod lanes]` |
//! | 0x49 | `rot_sublane` | cross-lane: `vd[s][l] = vs1[(s + imm) mod sublanes][l]` |
//! | 0x4A | `splat` | cross-lane: `vs1[0]` |
//!
//! The fold of a reduction is the contract's: `len = W`; while len > 1,
//! `x[j] = f(x[j], x[j + len/2])` for j < len/2, `len = len/2`; the result
//! is `x[0]` (for W = 1 the element itself). A long array is reduced by
//! combining its vectors elementwise (`add_f32 acc, acc, x_c` chunk by
//! chunk, the first chunk as the initial `acc`) and folding once, which is
//! exactly the contract's order for this W.
//!
//! Any other opcode, and on an int32-only VPU (`VpuUnits::Int32`) every
//! opcode from 0x20 to 0x2E and 0x43 to 0x45, is an illegal instruction: its
//! ALU slot writes nothing and sets `error_o` until reset; its load and
//! store slots execute.
//!
//! # Pipeline
//!
//! Three stages:
//! - **issue** (the cycle a bundle is accepted on `instr_i`): decode; the
//!   register file's four read ports (vs1, vs2, vs3, store source) and the
//!   VMEM read port (load address) are synchronous and read at the end of
//!   this cycle.
//! - **execute** (the next cycle, or the next E cycles): operands, the
//!   element ALUs or the cross-lane unit, the store's VMEM write at the end
//!   of the last execute cycle.
//! - **write-back**: the load result and the ALU result are written to the
//!   register file at the end of this cycle, through two write ports (the
//!   ALU's wins when both name one register).
//!
//! Every operation takes one execute cycle (E = 1), except a reduction,
//! which folds one level per cycle: E = max(1, log2 W). During a
//! reduction's extra cycles the bundle behind it waits in the stream and the
//! write-back stage holds (rewriting its values, which changes nothing).
//! With `depth` = d >= 1 the fold is pipelined too (`VpuConfig::fold_stages`
//! = s = d, the fp32 adder's cuts, the sixth on each level's operands):
//! the reduction units register
//! their operands in the first cycle, and each level's combine holds its
//! inputs for s + 1 cycles through up to s registers (the fp32 adder's
//! `FP32_ADD` cuts, min and max's `FP32_ORDER` cuts), so E = 1 + log2 W x
//! (s + 1) for W >= 2 (`VpuConfig::reduction_cycles`).
//!
//! With `depth` = d >= 1 (`VpuConfig::depth`) there are 1 + d execute
//! stages. The first is the one above (operands forwarded, the cross-lane
//! unit, a reduction's fold, the load's data); the element ALU spans
//! 1 + d cycles (`alu::Schedule`): each operation runs on its staged
//! `hw::fp` or `hw::arith` unit with as many stages as d leaves it (the
//! shared multiplier with DSP-style operand and product registers, then
//! SRDHM, RDBPOT, zero point and clamp), and its result replaces the
//! carried result in the cycle it finishes, selected by a decoded flag
//! carried beside it; the cross-lane result rides with the short
//! operations' result. At d = 6 SRDHM's nudged sum and the fp32 product's
//! rounding are registered, and every result is registered before the last
//! stage, which only selects among registers (at d = 7 the multiplier's
//! DSP-sized pieces' products are registered before their sum as well, and
//! the rotations and the splat take the lanes' operands a cycle late, from
//! registers: `LATE_CROSS_LANE_FROM`); the register file is then
//! two banks of one write port (load, ALU) with a live value table
//! (`lane::BANKED_RF_FROM`), the same contents and write-first reads, and
//! whether execute advances is a register (`ex_holds`, high while a
//! reduction folds short of its last level), from which the register file's
//! and VMEM's read enables come directly: the ports read whenever execute
//! advances, whether or not a bundle is taken (a bubble reads nothing it
//! gets), and hold while it folds (`REGISTERED_ADVANCE_FROM`); their read
//! addresses are the host's whenever it asks to read, and a host write to
//! the register file lands a cycle later, from registers. The operands'
//! sources are chosen a cycle ahead, for the bundle on `instr_i`, and each
//! lane keeps its own registered copy (`FORWARDING_AHEAD_FROM`). The store writes
//! VMEM as its bundle leaves the last execute stage, the ALU result is
//! written back the cycle after. A load still writes back the cycle after
//! the first execute stage. While a reduction folds in the first stage,
//! every stage holds.
//!
//! # Hazards
//!
//! Any program gives the result of executing its slots in order. At depth 0
//! no hazard costs a cycle; the only interlock is a reduction's E cycles.
//! - Within a bundle, the ALU's operands come from the same bundle's load
//!   (the VMEM read data) and the store's from the same bundle's ALU result
//!   or load, when they name its register.
//! - One bundle apart (the producer in write-back while the consumer
//!   executes), operands are forwarded from the write-back registers (the
//!   ALU result before the load result).
//! - Two bundles apart (the producer writes back in the cycle the consumer
//!   reads), the register file's read ports are write-first.
//! - Through memory: a load in the cycle a store writes the same word (the
//!   bundle just ahead) reads write-first and sees the stored value; a load
//!   in the same bundle as a store reads before it.
//!
//! At depth d >= 1 an ALU result is ready 1 + d cycles after its operands,
//! so a bundle waits in the stream (`instr_ready_o` low) while a bundle in
//! execute stages 1 to d
//! - is still to write an ALU result to a register the waiting bundle reads:
//!   an operand its operation uses (`Op::sources`), or the register it
//!   stores unless its own ALU result is that register; a register its own
//!   load writes does not count (the operand is that load);
//! - or stores to the VMEM word the waiting bundle loads.
//!
//! A dependent bundle therefore issues d cycles later than at depth 0 when
//! its producer is the bundle just ahead (d - k + 1 when k bundles ahead,
//! none from k = d + 1 on); loads and results of the same bundle, a load
//! one bundle ahead, and everything d + 1 or more ahead are forwarded as at
//! depth 0 (in the first execute stage: its own load, the load writing back,
//! the ALU result writing back, the write-first register file). A load of a
//! register whose older ALU write is still in stages 1 to d cancels that
//! write (the load writes back first; no bundle between reads the register,
//! or it would have waited), so loads never wait for the results they
//! replace, and streaming programs (`vld`; op; `vst` of the result) run at
//! the same rate at every depth.
//!
//! # Timing contract
//!
//! - `instr_ready_o` is high unless `host_valid_i` is high or the execute
//!   stage holds a reduction before its last cycle, or (depth >= 1) the
//!   bundle on `instr_i` waits for a result (so it depends on `instr_i`,
//!   never on `instr_valid_i`). A bundle is accepted in a cycle with
//!   `instr_valid_i` and `instr_ready_o` high.
//! - Presented back to back from cycle 0, bundle i+1 is accepted in cycle
//!   `accept(i) + E(i)` at depth 0; at depth d, in the first cycle from then
//!   on in which it does not wait.
//! - A bundle accepted in cycle t with E execute cycles writes its store in
//!   cycle t + E + d (`store_o` high; later if a reduction behind it holds
//!   the stages) and its ALU result at the end of the cycle after.
//! - `busy_o` is high while a bundle is in an execute stage or write-back.
//!
//! `golden::vpu::schedule` states the same contract as a cycle model.
//!
//! # Host port
//!
//! The host reads and writes whole vectors of VMEM (`host_space_i` = 0) or
//! of the register file (`host_space_i` = 1) at `host_addr_i` while the unit
//! is idle: `host_ready_o` = not `busy_o`, and a pending host request holds
//! the instruction stream (the host has priority). It shares the memories'
//! ports with the load, store and write-back paths, which never use them
//! while idle. A read accepted in cycle t gives `host_rdata_o` with
//! `host_rvalid_o` in cycle t + 1; a write lands at the end of cycle t.
//!
//! # Ports
//!
//! | port | width | meaning |
//! | --- | --- | --- |
//! | `instr_valid_i`, `instr_i`, `instr_ready_o` | 1, 128, 1 | the instruction stream |
//! | `host_valid_i`, `host_ready_o` | 1, 1 | a host access (accepted when both are high) |
//! | `host_write_i`, `host_space_i`, `host_addr_i` | 1, 1, max(log2 D, log2 V) | write (1) or read, VMEM (0) or registers (1), word or register |
//! | `host_wdata_i`, `host_rdata_o`, `host_rvalid_o` | 32W, 32W, 1 | element e at bits 32e+31..32e |
//! | `host_wmask_i` | W | with `host_wmask` only: a host write of VMEM changes element e only where bit e is set (register writes ignore it) |
//! | `store_o` | 1 | a store writes VMEM this cycle |
//! | `busy_o` | 1 | a bundle is in execute or write-back |
//! | `error_o` | 1 | an illegal instruction was accepted (sticky until reset) |

use config::vpu_isa::Op;
use config::VpuConfig;
use hw::{cat, mux, Bus, Design, Expr, ModuleBuilder, ModuleDef, Ty};
use std::rc::Rc;

mod alu;
mod block;
mod lane;
mod xlu;

pub use block::Vpu;

/// Port names of the VPU top module.
pub mod ports {
    pub const INSTR_VALID: &str = "instr_valid_i";
    pub const INSTR: &str = "instr_i";
    pub const INSTR_READY: &str = "instr_ready_o";
    pub const HOST_VALID: &str = "host_valid_i";
    pub const HOST_READY: &str = "host_ready_o";
    pub const HOST_WRITE: &str = "host_write_i";
    pub const HOST_SPACE: &str = "host_space_i";
    pub const HOST_ADDR: &str = "host_addr_i";
    pub const HOST_WDATA: &str = "host_wdata_i";
    /// With `host_wmask`: bit e enables the host write of element e.
    pub const HOST_WMASK: &str = "host_wmask_i";
    pub const HOST_RDATA: &str = "host_rdata_o";
    pub const HOST_RVALID: &str = "host_rvalid_o";
    pub const STORE: &str = "store_o";
    pub const BUSY: &str = "busy_o";
    pub const ERROR: &str = "error_o";
}

hw::hw_enum! {
    /// Where an operand comes from in the execute stage.
    pub enum Fwd {
        /// The register file (read at issue, write-first).
        Rf,
        /// The load result of the bundle in write-back.
        WbLoad,
        /// The ALU result of the bundle in write-back.
        WbAlu,
        /// The load of the same bundle (VMEM read data).
        Load,
        /// The ALU result of the same bundle (store operand only).
        Alu,
    }
}

/// The Verilog name of the top module for `cfg`, e.g. `vpu_full_8x1_v32_m1024`.
/// With extra execute stages it ends in `_d<depth>`.
pub fn top_name(cfg: &VpuConfig) -> String {
    let name = format!(
        "vpu_{}_{}x{}_v{}_m{}",
        cfg.units(),
        cfg.lanes(),
        cfg.sublanes(),
        cfg.vregs(),
        cfg.vmem_words()
    );
    let name = match cfg.depth() {
        0 => name,
        d => format!("{name}_d{d}"),
    };
    if cfg.host_wmask() {
        name + "_wm"
    } else {
        name
    }
}

/// Width of `host_addr_i`: enough for a VMEM word and a register.
pub fn host_addr_bits(cfg: &VpuConfig) -> u32 {
    cfg.vmem_words()
        .trailing_zeros()
        .max(cfg.vregs().trailing_zeros())
}

/// Execute cycles of a reduction (`VpuConfig::reduction_cycles`): max(1,
/// log2 W) at depth 0, 1 + log2 W x (depth + 1) with a pipelined fold.
pub fn reduction_cycles(cfg: &VpuConfig) -> u32 {
    cfg.reduction_cycles()
}

/// Builds the VPU for `cfg` into `design` and returns its top module.
pub fn build(design: &mut Design, cfg: &VpuConfig) -> Rc<ModuleDef> {
    let mut params = vec![
        ("units", cfg.units().to_string()),
        ("lanes", cfg.lanes().to_string()),
        ("sublanes", cfg.sublanes().to_string()),
        ("vregs", cfg.vregs().to_string()),
        ("vmem_words", cfg.vmem_words().to_string()),
    ];
    if cfg.depth() > 0 {
        params.push(("depth", cfg.depth().to_string()));
    }
    if cfg.host_wmask() {
        params.push(("host_wmask", "true".to_string()));
    }
    let cfg = *cfg;
    design.define(&top_name(&cfg), &params, |design, m| {
        m.doc("vector unit: load/ALU/store bundles, forwarding, cross-lane unit");
        let parts = Parts {
            lane: lane::lane(design, &cfg),
            rot_lanes: (cfg.lanes() >= 2)
                .then(|| xlu::rotator(design, cfg.lanes(), shared_code(&cfg))),
            rot_sublanes: (cfg.sublanes() >= 2)
                .then(|| xlu::rotator(design, cfg.sublanes(), shared_code(&cfg))),
            reduce: (cfg.fold_levels() >= 1).then(|| {
                let (levels, stages) = (cfg.fold_levels(), cfg.fold_stages());
                xlu::reduce_unit(design, levels, cfg.units(), stages, shared_code(&cfg))
            }),
        };
        build_top(m, &cfg, &parts);
    })
}

/// Vectors from this many elements on have their lanes, rotators and
/// reduction units held by Verilator models as one copy of code for all
/// instances ([`hw::SimLayout::Shared`]): inlined, a 128 x 8 VPU is 174 MB of
/// C++ (hours of compiling), and already a 4 x 2 one builds in 2.5 times the
/// time and runs slower. Smaller vectors are left to Verilator, which inlines
/// them.
pub const SHARED_CODE_FROM: u32 = 4;

/// Why the repeated parts of `cfg`'s VPU are shared code, if they are.
pub(crate) fn shared_code(cfg: &VpuConfig) -> Option<&'static str> {
    (cfg.elems() >= SHARED_CODE_FROM).then_some(
        "instantiated once per element or per pair of elements: one copy of the code keeps \
         the model's C++ and its build time in proportion to the distinct modules",
    )
}

/// The child modules of the top.
struct Parts {
    lane: Rc<ModuleDef>,
    rot_lanes: Option<Rc<ModuleDef>>,
    rot_sublanes: Option<Rc<ModuleDef>>,
    reduce: Option<Rc<ModuleDef>>,
}

/// The fields of a bundle on `instr_i`.
struct Decoded {
    st_en: Expr,
    st_reg: Expr,
    st_addr: Expr,
    ld_en: Expr,
    ld_reg: Expr,
    ld_addr: Expr,
    opcode: Expr,
    vd: Expr,
    vs: [Expr; 3],
    imm: Expr,
    legal: Expr,
    /// A legal operation that writes `vd`.
    writes: Expr,
    /// A legal reduction (which takes more than one execute cycle when W > 2).
    reduction: Expr,
}

fn decode(m: &mut ModuleBuilder, cfg: &VpuConfig, instr: Expr) -> Decoded {
    let rw = cfg.vregs().trailing_zeros();
    let aw = cfg.vmem_words().trailing_zeros();
    let opcode = instr.slice(88, 8);
    let legal_codes: Vec<u32> = Op::ALL
        .iter()
        .filter(|o| cfg.units().has_fp32() || !o.needs_fp32())
        .map(|o| u32::from(o.code()))
        .collect();
    let legal = m.comb_default("legal", Ty::BOOL, 0u32);
    m.switch(opcode)
        .cases(&legal_codes, |m| m.assign(legal, 1u32))
        .default(|m| m.assign(legal, 0u32));
    let legal = legal.value();
    let reductions: Vec<u32> = Op::ALL
        .iter()
        .filter(|o| o.is_reduction())
        .map(|o| u32::from(o.code()))
        .collect();
    let is_reduction = reductions
        .iter()
        .map(|&c| opcode.is_eq(c))
        .reduce(|a, b| a | b)
        .expect("there are reductions");
    Decoded {
        st_en: instr.bit(31),
        st_reg: instr.slice(24, rw),
        st_addr: instr.slice(0, aw),
        ld_en: instr.bit(63),
        ld_reg: instr.slice(56, rw),
        ld_addr: instr.slice(32, aw),
        opcode,
        vd: instr.slice(82, rw),
        vs: [
            instr.slice(76, rw),
            instr.slice(70, rw),
            instr.slice(64, rw),
        ],
        imm: instr.slice(96, 32),
        writes: m.wire("alu_writes", legal & opcode.is_ne(0)),
        legal,
        reduction: legal & is_reduction,
    }
}

/// A register loaded with `value` when the execute stage advances.
fn stage_reg(m: &mut ModuleBuilder, name: &str, value: Expr, advance: Expr) -> Expr {
    let r = m.reg(name, value.ty());
    m.set_next(r, value);
    m.set_enable(r, advance);
    r.q()
}

/// The VPU top: its ports and decoder, the pipeline's flow, stage
/// registers and forwarding, the memory ports, the lanes and the cross-lane
/// unit.
fn build_top(m: &mut ModuleBuilder, cfg: &VpuConfig, parts: &Parts) {
    use ports::*;
    let w = cfg.elems();
    let instr_valid = m.input(INSTR_VALID, Ty::BOOL);
    let instr = m.input(INSTR, Ty::u(128));
    let host = HostPort {
        valid: m.input(HOST_VALID, Ty::BOOL),
        write: m.input(HOST_WRITE, Ty::BOOL),
        space: m.input(HOST_SPACE, Ty::BOOL),
        addr: m.input(HOST_ADDR, Ty::u(host_addr_bits(cfg))),
        wdata: m.input(HOST_WDATA, Ty::u(32 * w)),
    };
    let host_wmask = cfg.host_wmask().then(|| m.input(HOST_WMASK, Ty::u(w)));

    let d = decode(m, cfg, instr);
    m.waive(
        "UNUSEDSIGNAL",
        INSTR,
        "register fields above log2 V bits, address fields above log2 D bits and the two \
         reserved bits are ignored by the instruction set",
    );
    // With extra execute stages a bundle waits in the stream while it
    // depends on a result still in the pipeline (see `Late::hazard`).
    let hazard = (cfg.depth() > 0).then(|| m.wire_decl("hazard", Ty::BOOL));
    let flow = Flow::control(m, cfg, &d, instr_valid, host.valid, hazard);
    let st = Stages::registers(m, cfg, &d, &flow);
    if let (Some(hazard), Some(late)) = (hazard, &st.late) {
        let h = late.hazard(m, cfg, &d);
        m.drive(hazard, h);
    }
    let fwd = if cfg.depth() >= FORWARDING_AHEAD_FROM {
        Forwarding::ahead(m, &d, &flow, &st)
    } else {
        Forwarding::sources(m, &st)
    };
    let mem = MemPorts::select(m, cfg, &d, &flow, &st, &host);
    let ctl = lane_control(cfg, &d, &flow, &st, &fwd, &mem);
    let buses = LaneBuses::build(m, cfg, parts, ctl, host.wdata, host_wmask);
    cross_lane(
        m,
        cfg,
        parts,
        &buses,
        (st.op, st.imm, flow.advance),
        flow.folding,
    );

    // ---- Outputs.
    let rdata_parts: Vec<Expr> = (0..w)
        .rev()
        .map(|e| m.bus_read(buses.rdata, &[e]))
        .collect();
    m.output(HOST_RDATA, cat(&rdata_parts));
    m.output(HOST_RVALID, mem.host_rvalid);
    m.output(HOST_READY, flow.host_ready);
    m.output(INSTR_READY, flow.instr_ready);
    m.output(STORE, mem.store_now);
    m.output(BUSY, flow.busy);
    m.output(ERROR, flow.error);
}

/// The host port's inputs.
struct HostPort {
    valid: Expr,
    write: Expr,
    /// 1: the register file, 0: VMEM.
    space: Expr,
    addr: Expr,
    wdata: Expr,
}

/// The pipeline's flow: which bundle moves where this cycle.
struct Flow {
    ex_valid: Expr,
    wb_valid: Expr,
    /// The execute stage's last cycle: a reduction's last fold level, every
    /// other bundle's only cycle.
    ex_last: Expr,
    /// The execute stage takes the next bundle (and write-back this one).
    advance: Expr,
    busy: Expr,
    host_ready: Expr,
    host_accept: Expr,
    instr_ready: Expr,
    /// A bundle is accepted from `instr_i`.
    accept: Expr,
    /// A reduction is folding, and its fold step (when W > 2).
    folding: Option<Fold>,
    error: Expr,
    /// With extra execute stages: the valid bits of execute stages 2 to
    /// 1 + depth.
    late_valid: Vec<Expr>,
    /// `ex_holds`'s next value, when it is a register
    /// ([`REGISTERED_ADVANCE_FROM`] with a fold): the lanes keep copies.
    holds_next: Option<Expr>,
}

impl Flow {
    /// The valid bits of execute and write-back, the fold counter of a
    /// reduction, the handshakes with the host and the instruction port,
    /// and the error flag (set by an illegal opcode).
    fn control(
        m: &mut ModuleBuilder,
        cfg: &VpuConfig,
        d: &Decoded,
        instr_valid: Expr,
        host_valid: Expr,
        hazard: Option<hw::Wire>,
    ) -> Flow {
        let ex_cycles = reduction_cycles(cfg);
        let ex_valid = m.reg_reset("ex_valid", Ty::BOOL, 0);
        let late_valid: Vec<_> = (2..=cfg.depth() + 1)
            .map(|k| m.reg_reset(&format!("x{k}_valid"), Ty::BOOL, 0))
            .collect();
        let wb_valid = m.reg_reset("wb_valid", Ty::BOOL, 0);
        // A reduction holds the execute stage for its fold levels: `ex_multi`
        // marks one, `fold_step` counts its cycles. The execute stage's last
        // cycle is then the last level; for every other bundle its only cycle.
        let fold = (ex_cycles > 1).then(|| {
            let ty = Ty::u(hw::bits_for(u64::from(ex_cycles - 1)));
            (
                m.reg_reset("ex_multi", Ty::BOOL, 0),
                m.reg_reset("fold_step", ty, 0),
            )
        });
        let ex_last = match fold {
            Some((multi, step)) => m.wire(
                "ex_last",
                !multi.q() | step.q().is_eq(u64::from(ex_cycles - 1)),
            ),
            None => m.lit(Ty::BOOL, 1),
        };
        // At REGISTERED_ADVANCE_FROM the same signal comes from a register:
        // `ex_holds` is high exactly while a reduction sits in execute short
        // of its last level, so that the memories' read enables and the
        // handshakes start from it, not from the fold step's compare.
        let holds = advance_is_registered(cfg).then(|| m.reg_reset("ex_holds", Ty::BOOL, 0));
        let advance = match holds {
            Some(h) => m.wire("advance", !h.q()),
            None => m.wire("advance", !ex_valid.q() | ex_last),
        };
        let busy = late_valid.iter().fold(ex_valid.q(), |any, v| any | v.q());
        let busy = m.wire("busy", busy | wb_valid.q());
        let host_ready = !busy;
        let host_accept = m.wire("host_accept", host_valid & host_ready);
        let instr_ready = match hazard {
            None => m.wire("instr_ready", !host_valid & advance),
            Some(h) => m.wire("instr_ready", !host_valid & advance & !h.value()),
        };
        let accept = m.wire("accept", instr_valid & instr_ready);
        let mut holds_next = None;
        if let (Some(h), Some((_, step))) = (holds, fold) {
            // A bundle taken is held for its fold levels when it is a
            // reduction (the step is 0 outside a fold, and a reduction has
            // at least two levels); a held one until its step reaches the
            // last level.
            let more = step.q().is_ne(u64::from(ex_cycles - 2));
            let next = m.wire("ex_holds_next", mux(advance, accept & d.reduction, more));
            m.set_next(h, next);
            holds_next = Some(next);
        }

        m.if_(advance, |m| {
            m.assign(ex_valid, accept);
            let mut previous = ex_valid.q();
            for v in &late_valid {
                m.assign(*v, previous);
                previous = v.q();
            }
            m.assign(wb_valid, previous);
            if let Some((multi, _)) = fold {
                m.assign(multi, accept & d.reduction);
            }
        });
        let folding = fold.map(|(multi, step)| {
            let folding = m.wire("folding", ex_valid.q() & multi.q());
            m.if_(folding, |m| {
                m.if_(ex_last, |m| m.assign(step, 0u32))
                    .else_(|m| m.assign(step, step.q() + 1u32));
            });
            // The step's next value, as the lines above load it, for
            // registers that hold a function of the step a cycle early.
            let zero = m.lit(step.q().ty(), 0);
            let step_next = mux(folding, mux(ex_last, zero, step.q() + 1u32), step.q());
            Fold {
                folding,
                step: step.q(),
                step_next,
            }
        });
        let error = m.reg_reset("error", Ty::BOOL, 0);
        m.if_(accept & !d.legal, |m| m.assign(error, 1u32));
        Flow {
            ex_valid: ex_valid.q(),
            wb_valid: wb_valid.q(),
            ex_last,
            advance,
            busy,
            host_ready,
            host_accept,
            instr_ready,
            accept,
            folding,
            error: error.q(),
            late_valid: late_valid.iter().map(|v| v.q()).collect(),
            holds_next,
        }
    }
}

/// From this depth on the execute stage's advance is a register
/// (`ex_holds`) rather than a function of the fold step, and the register
/// file is read whenever execute advances (not only when it takes a
/// bundle: a bundle not taken leaves a bubble whose operands nothing
/// reads).
pub const REGISTERED_ADVANCE_FROM: u32 = 6;

/// Whether execute's advance is the register `ex_holds` (inverted): from
/// [`REGISTERED_ADVANCE_FROM`] on, when a reduction takes more than one
/// cycle. The lanes then keep their own copies of it.
pub(crate) fn advance_is_registered(cfg: &VpuConfig) -> bool {
    cfg.depth() >= REGISTERED_ADVANCE_FROM && reduction_cycles(cfg) > 1
}

/// From this depth on the operands' sources are chosen a cycle ahead, as
/// the bundle is offered, and each lane keeps its own copy of the choice
/// (`Forwarding::ahead`): the selects in front of its operand registers
/// come from registers beside them rather than from compares in the top.
pub const FORWARDING_AHEAD_FROM: u32 = 6;

/// From this depth on a host write to VMEM lands a cycle after it is taken,
/// from registers (its address and enable in the top, its data in each
/// lane, the register file's host data register), as the register file's
/// does from [`REGISTERED_ADVANCE_FROM`]: VMEM's write port and its
/// write-first compare no longer hang on the host's handshake (`busy`
/// across the part). Nothing can tell: the pipeline is empty when a host
/// write is taken and no bundle is taken in that cycle, so no store meets
/// it in the next, and a read in the next (a bundle's load, the host's) is
/// write-first.
pub const REGISTERED_HOST_VMEM_WRITE_FROM: u32 = 7;

/// From this depth on the rotations and the splat take the lanes' operands
/// a cycle late, from registers (each lane's `opnd_a_late_o`, loaded as
/// execute advances), and the lanes' ALUs take their result in the segment
/// after the operands' (`alu::Schedule::late_cross_lane`): a lane's VMEM
/// read data, forwarded as another lane's operand, no longer crosses the
/// rotation into that lane's operand register in the same cycle. The
/// reductions keep their path (their units register what they take). The
/// same values in the same cycles: every lane holds the same bundle.
pub const LATE_CROSS_LANE_FROM: u32 = 7;

/// Whether the rotations and the splat run a cycle late
/// ([`LATE_CROSS_LANE_FROM`]).
pub(crate) fn late_cross_lane(cfg: &VpuConfig) -> bool {
    cfg.depth() >= LATE_CROSS_LANE_FROM
}

/// A reduction folding in execute: `folding` (it holds execute), its fold
/// step and the step's next value.
#[derive(Clone, Copy)]
struct Fold {
    folding: Expr,
    step: Expr,
    step_next: Expr,
}

/// From this depth on the fold's level select, its load and its keep are
/// registers loaded from the fold step's next value (the same values a
/// cycle early) rather than compares of the step in the units' paths.
pub const REGISTERED_FOLD_LEVEL_FROM: u32 = 6;

/// The bundle in execute, and the registers the one in write-back writes.
struct Stages {
    op: Expr,
    /// The bundle's ALU operation writes `vd`.
    writes: Expr,
    vd: Expr,
    /// The operands' registers (none from `FORWARDING_AHEAD_FROM` on).
    vs: Vec<Expr>,
    imm: Expr,
    ld_en: Expr,
    ld_reg: Expr,
    st_en: Expr,
    st_reg: Expr,
    st_addr: Expr,
    wb_ld_reg: Expr,
    wb_alu_reg: Expr,
    /// Write-back writes a loaded vector / an ALU result this cycle.
    wb_ld_we: Expr,
    wb_alu_we: Expr,
    /// The execute stages after the first, with extra execute stages.
    late: Option<Late>,
}

impl Stages {
    fn registers(m: &mut ModuleBuilder, cfg: &VpuConfig, d: &Decoded, flow: &Flow) -> Stages {
        let advance = flow.advance;
        let op = stage_reg(m, "ex_op", d.opcode, advance);
        let writes = stage_reg(m, "ex_writes", d.writes, advance);
        let vd = stage_reg(m, "ex_vd", d.vd, advance);
        // From FORWARDING_AHEAD_FROM on the sources are chosen from the
        // bundle on instr_i, and nothing reads these.
        let vs: Vec<Expr> = if cfg.depth() >= FORWARDING_AHEAD_FROM {
            Vec::new()
        } else {
            (0..3)
                .map(|i| stage_reg(m, &format!("ex_vs{}", i + 1), d.vs[i], advance))
                .collect()
        };
        let imm = stage_reg(m, "ex_imm", d.imm, advance);
        let ld_en = stage_reg(m, "ex_ld_en", d.ld_en, advance);
        let ld_reg = stage_reg(m, "ex_ld_reg", d.ld_reg, advance);
        let st_en = stage_reg(m, "ex_st_en", d.st_en, advance);
        let st_reg = stage_reg(m, "ex_st_reg", d.st_reg, advance);
        let st_addr = stage_reg(m, "ex_st_addr", d.st_addr, advance);
        let wb_ld_en = stage_reg(m, "wb_ld_en", ld_en, advance);
        let wb_ld_reg = stage_reg(m, "wb_ld_reg", ld_reg, advance);
        // With extra execute stages a load still writes back the cycle after
        // the first execute stage; the ALU's write-back follows the last.
        let (wb_alu_en, wb_alu_reg, wb_ld_valid, late) = match flow.late_valid.first() {
            None => (
                stage_reg(m, "wb_alu_en", writes, advance),
                stage_reg(m, "wb_alu_reg", vd, advance),
                flow.wb_valid,
                None,
            ),
            Some(&x2_valid) => {
                let first = FirstStage {
                    writes,
                    vd,
                    st_en,
                    st_reg,
                    st_addr,
                };
                let late = Late::registers(m, cfg, d, flow, &first);
                (
                    stage_reg(m, "wb_alu_en", late.last(&late.writes), advance),
                    stage_reg(m, "wb_alu_reg", late.last(&late.vd), advance),
                    x2_valid,
                    Some(late),
                )
            }
        };
        let wb_ld_we = m.wire("wb_load_write", wb_ld_valid & wb_ld_en);
        let wb_alu_we = m.wire("wb_alu_write", flow.wb_valid & wb_alu_en);
        Stages {
            op,
            writes,
            vd,
            vs,
            imm,
            ld_en,
            ld_reg,
            st_en,
            st_reg,
            st_addr,
            wb_ld_reg,
            wb_alu_reg,
            wb_ld_we,
            wb_alu_we,
            late,
        }
    }
}

/// The first execute stage's fields that the later stages carry.
struct FirstStage {
    writes: Expr,
    vd: Expr,
    st_en: Expr,
    st_reg: Expr,
    st_addr: Expr,
}

/// The execute stages of a VPU with extra execute stages, 1 to 1 + depth:
/// what each bundle in them writes and stores, and the interlock.
struct Late {
    /// Per execute stage 1 to 1 + depth: valid, the ALU writes `vd` (and no
    /// younger load cancelled it), `vd`, store enable, store address.
    valid: Vec<Expr>,
    writes: Vec<Expr>,
    vd: Vec<Expr>,
    st_en: Vec<Expr>,
    st_addr: Vec<Expr>,
    /// The last stage's store takes its own ALU result.
    st_alu: Expr,
}

impl Late {
    /// The stage registers. A load of a register that an older bundle's ALU
    /// result in stages 1 to depth is still to write cancels that write: the
    /// load is younger but writes back first (the cycle after stage 1), and
    /// no bundle between them reads the register (it would have waited for
    /// the result, and the load behind it too).
    fn registers(
        m: &mut ModuleBuilder,
        cfg: &VpuConfig,
        d: &Decoded,
        flow: &Flow,
        first: &FirstStage,
    ) -> Late {
        let depth = cfg.depth() as usize;
        let advance = flow.advance;
        let load_now = flow.accept & d.ld_en;
        let mut valid = vec![flow.ex_valid];
        valid.extend(flow.late_valid.iter().copied());
        let mut writes = vec![first.writes];
        let mut vd = vec![first.vd];
        let mut st_en = vec![first.st_en];
        let mut st_addr = vec![first.st_addr];
        let mut st_alu = m.wire("ex_st_alu", first.writes & first.vd.is_eq(first.st_reg));
        for k in 2..=depth + 1 {
            let prev = k - 2;
            let cancelled = load_now & d.ld_reg.is_eq(vd[prev]);
            let kept = writes[prev] & !cancelled;
            writes.push(stage_reg(m, &format!("x{k}_writes"), kept, advance));
            vd.push(stage_reg(m, &format!("x{k}_vd"), vd[prev], advance));
            st_en.push(stage_reg(m, &format!("x{k}_st_en"), st_en[prev], advance));
            let addr = st_addr[prev];
            st_addr.push(stage_reg(m, &format!("x{k}_st_addr"), addr, advance));
            st_alu = stage_reg(m, &format!("x{k}_st_alu"), st_alu, advance);
        }
        Late {
            valid,
            writes,
            vd,
            st_en,
            st_addr,
            st_alu,
        }
    }

    /// The last execute stage's value of a per-stage field.
    fn last(&self, field: &[Expr]) -> Expr {
        *field.last().expect("at least one execute stage")
    }

    /// The interlock: the bundle on `instr_i` waits while an older bundle in
    /// execute stages 1 to depth is still to write a register it reads (an
    /// operand its operation uses, or the register it stores, unless its own
    /// load or, for the store, its own ALU writes it first), or to store to
    /// the VMEM word it loads. From the last execute stage on, results reach
    /// it by forwarding and write-first reads, as at depth 0.
    fn hazard(&self, m: &mut ModuleBuilder, cfg: &VpuConfig, d: &Decoded) -> Expr {
        let depth = cfg.depth() as usize;
        let pending = |reg: Expr| {
            (0..depth)
                .map(|k| self.valid[k] & self.writes[k] & self.vd[k].is_eq(reg))
                .reduce(|a, b| a | b)
                .expect("depth >= 1")
        };
        let own_load = |reg: Expr| d.ld_en & d.ld_reg.is_eq(reg);
        let reads = operand_reads(m, cfg, d.opcode);
        let mut waits = Vec::new();
        for (i, &r) in reads.iter().enumerate() {
            let wait = r & !own_load(d.vs[i]) & pending(d.vs[i]);
            waits.push(m.wire(&format!("wait_vs{}", i + 1), wait));
        }
        let own_alu = d.writes & d.vd.is_eq(d.st_reg);
        let wait_store = d.st_en & !own_alu & !own_load(d.st_reg) & pending(d.st_reg);
        waits.push(m.wire("wait_store", wait_store));
        let stored = (0..depth)
            .map(|k| self.valid[k] & self.st_en[k] & self.st_addr[k].is_eq(d.ld_addr))
            .reduce(|a, b| a | b)
            .expect("depth >= 1");
        waits.push(m.wire("wait_load", d.ld_en & stored));
        waits.into_iter().reduce(|a, b| a | b).expect("waits")
    }
}

/// Whether the operation `opcode` (legal on `cfg`) reads `vs1`, `vs2`,
/// `vs3`.
fn operand_reads(m: &mut ModuleBuilder, cfg: &VpuConfig, opcode: Expr) -> [Expr; 3] {
    [1, 2, 3].map(|n| {
        let codes: Vec<u32> = Op::ALL
            .iter()
            .filter(|o| cfg.units().has_fp32() || !o.needs_fp32())
            .filter(|o| o.sources() >= n)
            .map(|o| u32::from(o.code()))
            .collect();
        let reads = m.comb_default(&format!("reads_vs{n}"), Ty::BOOL, 0u32);
        m.switch(opcode)
            .cases(&codes, |m| m.assign(reads, 1u32))
            .default(|m| m.assign(reads, 0u32));
        reads.value()
    })
}

/// Forwarding: where each operand of the bundle in execute comes from, the
/// newest producer of its register.
struct Forwarding {
    /// Sources of `vs1`, `vs2`, `vs3`.
    abc: Vec<Expr>,
    /// Source of the register the bundle stores.
    store: Expr,
}

impl Forwarding {
    /// Where each operand comes from, judged in the (first) execute stage:
    /// the nearest older producer of its register, else the register file.
    /// At depth 0 the nearest are the bundle's own load, then the ALU result
    /// and then the load writing back now, and the store takes its own
    /// bundle's ALU result first. With extra execute stages: the bundle's
    /// own load, then the load of the bundle one ahead (writing back now),
    /// then the ALU result writing back now (its bundle depth + 1 or more
    /// ahead); ALU results between are waited for, and the store's own ALU
    /// result is taken in the last stage (`st_alu`).
    fn sources(m: &mut ModuleBuilder, st: &Stages) -> Forwarding {
        let load = (Fwd::Load, st.ld_en, st.ld_reg);
        let wb_alu = (Fwd::WbAlu, st.wb_alu_we, st.wb_alu_reg);
        let wb_load = (Fwd::WbLoad, st.wb_ld_we, st.wb_ld_reg);
        let nearest_first = if st.late.is_some() {
            [load, wb_load, wb_alu]
        } else {
            [load, wb_alu, wb_load]
        };
        let (abc, older) = Self::choose(m, nearest_first, &st.vs, st.st_reg, "fwd");
        let store = if st.late.is_some() {
            older
        } else {
            mux(st.writes & st.vd.is_eq(st.st_reg), Fwd::Alu, older)
        };
        let store = m.wire("fwd_store", store);
        Forwarding { abc, store }
    }

    /// From [`FORWARDING_AHEAD_FROM`] on: the same choice made a cycle
    /// ahead, for the bundle on `instr_i`, which each lane registers as
    /// execute advances (every register the choice reads loads only then).
    /// When it has advanced, the load writing back is the one of the bundle
    /// in execute now, the ALU result writing back that of the bundle in
    /// the last execute stage now.
    fn ahead(m: &mut ModuleBuilder, d: &Decoded, flow: &Flow, st: &Stages) -> Forwarding {
        let late = st.late.as_ref().expect("extra execute stages");
        let nearest_first = [
            (Fwd::Load, d.ld_en, d.ld_reg),
            (Fwd::WbLoad, flow.ex_valid & st.ld_en, st.ld_reg),
            (
                Fwd::WbAlu,
                late.last(&late.valid) & late.last(&late.writes),
                late.last(&late.vd),
            ),
        ];
        let (abc, store) = Self::choose(m, nearest_first, &d.vs, d.st_reg, "fwd_next");
        let store = m.wire("fwd_next_store", store);
        Forwarding { abc, store }
    }

    /// The sources of the operands `vs` (wires `<prefix>_vs1` ...) and of
    /// the stored register `st_reg`.
    fn choose(
        m: &mut ModuleBuilder,
        nearest_first: [(Fwd, Expr, Expr); 3],
        vs: &[Expr],
        st_reg: Expr,
        prefix: &str,
    ) -> (Vec<Expr>, Expr) {
        let abc = vs
            .iter()
            .enumerate()
            .map(|(i, &reg)| {
                let s = Self::source(m, nearest_first, reg);
                m.wire(&format!("{prefix}_vs{}", i + 1), s)
            })
            .collect();
        (abc, Self::source(m, nearest_first, st_reg))
    }

    /// The first of `nearest_first` (source, writes, register) that writes
    /// `reg`, else the register file.
    fn source(m: &mut ModuleBuilder, nearest_first: [(Fwd, Expr, Expr); 3], reg: Expr) -> Expr {
        let [(f0, we0, r0), (f1, we1, r1), (f2, we2, r2)] = nearest_first;
        let rf = m.enum_lit(Fwd::Rf);
        mux(
            we0 & r0.is_eq(reg),
            f0,
            mux(we1 & r1.is_eq(reg), f1, mux(we2 & r2.is_eq(reg), f2, rf)),
        )
    }
}

/// The register file's and VMEM's ports: the host's while idle, the
/// pipeline's otherwise.
struct MemPorts {
    rf_rd_en: Expr,
    rf_rd_a: Expr,
    rf_alu_we: Expr,
    rf_alu_wa: Expr,
    /// The ALU port writes the host's data (the host's write of the cycle
    /// before from `REGISTERED_ADVANCE_FROM` on).
    host_rf_write: Expr,
    vmem_rd_en: Expr,
    vmem_rd_addr: Expr,
    vmem_we: Expr,
    vmem_wa: Expr,
    /// The VMEM port writes the host's data (the host's write of the cycle
    /// before from `REGISTERED_HOST_VMEM_WRITE_FROM` on).
    host_vmem_write: Expr,
    /// The bundle in execute stores this cycle (`store_o`).
    store_now: Expr,
    /// A host read's data is on `host_rdata_o`.
    host_rvalid: Expr,
    /// The host read the register file (1) or VMEM (0).
    host_rd_rf: Expr,
}

/// A host write's enable and address a cycle late, from registers
/// `<memory>_write_q` (reset low) and `<memory>_<address>_q`, for a write
/// that lands a cycle after it is taken.
fn held_host_write(
    m: &mut ModuleBuilder,
    (memory, address): (&str, &str),
    write: Expr,
    addr: Expr,
) -> (Expr, Expr) {
    let held_write = m.reg_reset(&format!("{memory}_write_q"), Ty::BOOL, 0);
    m.set_next(held_write, write);
    let held_addr = m.reg(&format!("{memory}_{address}_q"), addr.ty());
    m.set_next(held_addr, addr);
    (held_write.q(), held_addr.q())
}

impl MemPorts {
    fn select(
        m: &mut ModuleBuilder,
        cfg: &VpuConfig,
        d: &Decoded,
        flow: &Flow,
        st: &Stages,
        host: &HostPort,
    ) -> MemPorts {
        let rw = cfg.vregs().trailing_zeros();
        let aw = cfg.vmem_words().trailing_zeros();
        let host_rf = flow.host_accept & host.space;
        let host_vmem = flow.host_accept & !host.space;
        let host_rf_read = m.wire("host_rf_read", host_rf & !host.write);
        let host_rf_write = m.wire("host_rf_write", host_rf & host.write);
        let host_vmem_read = m.wire("host_vmem_read", host_vmem & !host.write);
        let host_vmem_write = m.wire("host_vmem_write", host_vmem & host.write);
        let host_reg = host.addr.slice(0, rw);
        let host_word = host.addr.slice(0, aw);
        let (store_now, store_addr) = match &st.late {
            None => (
                m.wire("store_now", flow.ex_valid & st.st_en & flow.ex_last),
                st.st_addr,
            ),
            // The last execute stage stores as it advances (a reduction in
            // the first holds every stage).
            Some(late) => (
                m.wire(
                    "store_now",
                    late.last(&late.valid) & late.last(&late.st_en) & flow.advance,
                ),
                late.last(&late.st_addr),
            ),
        };
        // From REGISTERED_ADVANCE_FROM on a host write to the register file
        // lands a cycle after it is taken, from registers (the lanes keep
        // the data): the banks' write address and enable no longer hang on
        // the host's handshake. Nothing can tell: the pipeline is empty
        // then and takes no bundle in that cycle, so the next cycle's write
        // port is free, and a read in it (the bundle's or the host's) is
        // write-first.
        let registered = cfg.depth() >= REGISTERED_ADVANCE_FROM;
        let (rf_host_write, rf_host_reg) = if registered {
            held_host_write(m, ("host_rf", "reg"), host_rf_write, host_reg)
        } else {
            (host_rf_write, host_reg)
        };
        // The read addresses: the host's while it asks to read, from
        // REGISTERED_ADVANCE_FROM on whether or not it is served (while it
        // asks, execute takes no bundle, and the bubble's reads are not
        // used), so that they do not wait for `busy`.
        let (rf_addr_is_host, vmem_addr_is_host) = if registered {
            let asks = host.valid & !host.write;
            (asks & host.space, asks & !host.space)
        } else {
            (host_rf_read, host_vmem_read)
        };
        let (vmem_host_write, vmem_host_word) = if cfg.depth() >= REGISTERED_HOST_VMEM_WRITE_FROM {
            held_host_write(m, ("host_vmem", "word"), host_vmem_write, host_word)
        } else {
            (host_vmem_write, host_word)
        };
        let host_rvalid = m.reg_reset("host_rvalid", Ty::BOOL, 0);
        m.set_next(host_rvalid, host_rf_read | host_vmem_read);
        let host_rd_rf = m.reg("host_rd_rf", Ty::BOOL);
        m.set_next(host_rd_rf, host.space);
        m.set_enable(host_rd_rf, flow.host_accept);
        MemPorts {
            // A host read is served only while execute is empty, when it
            // advances: from REGISTERED_ADVANCE_FROM on the enable is the
            // advance alone.
            rf_rd_en: if registered {
                flow.advance
            } else {
                flow.accept | host_rf_read
            },
            rf_rd_a: mux(rf_addr_is_host, host_reg, d.vs[0]),
            rf_alu_we: st.wb_alu_we | rf_host_write,
            rf_alu_wa: mux(rf_host_write, rf_host_reg, st.wb_alu_reg),
            host_rf_write: rf_host_write,
            // As the register file's: the read register loads whenever
            // execute advances (a bubble's load is never used).
            vmem_rd_en: if registered {
                flow.advance
            } else {
                (flow.accept & d.ld_en) | host_vmem_read
            },
            vmem_rd_addr: mux(vmem_addr_is_host, host_word, d.ld_addr),
            vmem_we: store_now | vmem_host_write,
            vmem_wa: mux(vmem_host_write, vmem_host_word, store_addr),
            host_vmem_write: vmem_host_write,
            store_now,
            host_rvalid: host_rvalid.q(),
            host_rd_rf: host_rd_rf.q(),
        }
    }
}

/// The control word every lane receives (`lane_ctl`).
fn lane_control(
    cfg: &VpuConfig,
    d: &Decoded,
    flow: &Flow,
    st: &Stages,
    fwd: &Forwarding,
    mem: &MemPorts,
) -> Expr {
    let control = lane::LaneControl::of(cfg);
    let mut fields = vec![
        ("rf_rd_en", mem.rf_rd_en),
        ("rf_rd_a", mem.rf_rd_a),
        ("rf_rd_b", d.vs[1]),
        ("rf_rd_c", d.vs[2]),
        ("rf_rd_s", d.st_reg),
        ("rf_load_we", st.wb_ld_we),
        ("rf_load_wa", st.wb_ld_reg),
        ("rf_alu_we", mem.rf_alu_we),
        ("rf_alu_wa", mem.rf_alu_wa),
        ("rf_write_host", mem.host_rf_write),
        ("vmem_rd_en", mem.vmem_rd_en),
        ("vmem_rd_addr", mem.vmem_rd_addr),
        ("vmem_we", mem.vmem_we),
        ("vmem_wa", mem.vmem_wa),
        ("vmem_write_host", mem.host_vmem_write),
        ("fwd_a", fwd.abc[0]),
        ("fwd_b", fwd.abc[1]),
        ("fwd_c", fwd.abc[2]),
        ("fwd_s", fwd.store),
        ("op", st.op),
        ("imm", st.imm),
        ("host_rd_rf", mem.host_rd_rf),
    ];
    match flow.holds_next {
        Some(next) => fields.push(("holds_next", next)),
        None => fields.push(("wb_en", flow.advance)),
    }
    if let Some(late) = &st.late {
        fields.push(("st_alu", late.st_alu));
    }
    control.pack(&fields)
}

/// The lanes (element e = s * lanes + l) and the element buses between them
/// and the cross-lane unit.
struct LaneBuses {
    /// Each element's first operand.
    opnd: Bus,
    /// Each element's first operand a cycle late, from the lane's register
    /// ([`LATE_CROSS_LANE_FROM`] on).
    opnd_late: Option<Bus>,
    rot_lane: Bus,
    rot_sublane: Bus,
    reduced: Bus,
    rdata: Bus,
    /// Element 0's first operand (the splat and the trivial reduction).
    first: Expr,
}

impl LaneBuses {
    fn build(
        m: &mut ModuleBuilder,
        cfg: &VpuConfig,
        parts: &Parts,
        ctl: Expr,
        host_wdata: Expr,
        host_wmask: Option<Expr>,
    ) -> LaneBuses {
        let w = cfg.elems();
        let word = Ty::u(32);
        let opnd = m.bus("opnd", word, &[w]);
        let rot_lane = m.bus("rot_lane", word, &[w]);
        let rot_sublane = m.bus("rot_sublane", word, &[w]);
        let reduced = m.bus("reduced", word, &[w]);
        let wdata = m.bus("host_wdata", word, &[w]);
        let rdata = m.bus("host_rdata", word, &[w]);
        for e in 0..w {
            m.bus_drive(wdata, &[e], host_wdata.slice(32 * e, 32));
        }
        let wmask = host_wmask.map(|mask| {
            let bus = m.bus("host_wmask", Ty::BOOL, &[w]);
            for e in 0..w {
                m.bus_drive(bus, &[e], mask.slice(e, 1));
            }
            bus
        });
        let (lanes, sublanes) = (cfg.lanes(), cfg.sublanes());
        let arr = m.instance_array("lane", &parts.lane, &[("sub", sublanes), ("lane", lanes)]);
        let element = [arr.var(0) * i64::from(lanes) + arr.var(1)];
        let first = m.bus_read(opnd, &[0]);
        let ctl = m.wire("lane_ctl", ctl);
        m.array_broadcast(arr, "ctl_i", ctl);
        let opnd_late = late_cross_lane(cfg).then(|| {
            let late = m.bus("opnd_late", word, &[w]);
            m.array_connect(arr, "opnd_a_late_o", late, &element);
            late
        });
        let splat = match opnd_late {
            Some(late) => m.bus_read(late, &[0]),
            None => first,
        };
        m.array_broadcast(arr, "splat_i", splat);
        for (port, bus) in [
            ("opnd_a_o", opnd),
            ("rot_lane_i", rot_lane),
            ("rot_sublane_i", rot_sublane),
            ("reduce_i", reduced),
            ("host_wdata_i", wdata),
            ("host_rdata_o", rdata),
        ] {
            m.array_connect(arr, port, bus, &element);
        }
        if let Some(mask) = wmask {
            m.array_connect(arr, "host_we_i", mask, &element);
        }
        LaneBuses {
            opnd,
            opnd_late,
            rot_lane,
            rot_sublane,
            reduced,
            rdata,
            first,
        }
    }
}

/// The cross-lane unit: rotations along the lanes and along the sublanes,
/// and the reduction (into element 0 of `reduced`). From
/// [`LATE_CROSS_LANE_FROM`] on the rotations take the lanes' late operands
/// and the execute stage's immediate registered beside them.
fn cross_lane(
    m: &mut ModuleBuilder,
    cfg: &VpuConfig,
    parts: &Parts,
    buses: &LaneBuses,
    (ex_op, ex_imm, advance): (Expr, Expr, Expr),
    folding: Option<Fold>,
) {
    let w = cfg.elems();
    let (lanes, sublanes) = (cfg.lanes(), cfg.sublanes());
    // The rotators read the immediate's low log2(group) bits.
    let amount_bits = lanes.trailing_zeros().max(sublanes.trailing_zeros());
    let (rotated, ex_imm) = match buses.opnd_late {
        Some(late) if amount_bits > 0 => {
            let imm = m.reg("rot_imm_late", Ty::u(amount_bits));
            m.set_next(imm, ex_imm.slice(0, amount_bits));
            m.set_enable(imm, advance);
            (late, imm.q())
        }
        Some(late) => (late, ex_imm),
        None => (buses.opnd, ex_imm),
    };
    let elements: Vec<Expr> = (0..w).map(|e| m.bus_read(rotated, &[e])).collect();
    rotate(
        m,
        "rows",
        parts.rot_lanes.as_ref(),
        &elements,
        buses.rot_lane,
        (sublanes, lanes),
        |s, l| s * lanes + l,
        ex_imm,
    );
    rotate(
        m,
        "cols",
        parts.rot_sublanes.as_ref(),
        &elements,
        buses.rot_sublane,
        (lanes, sublanes),
        |l, s| s * lanes + l,
        ex_imm,
    );
    let result = match &parts.reduce {
        None => buses.first,
        Some(unit) => reduction(m, cfg, unit, buses.opnd, ex_op, folding),
    };
    m.bus_drive(buses.reduced, &[0], result);
    for e in 1..w {
        let zero = m.lit(Ty::u(32), 0);
        m.bus_drive(buses.reduced, &[e], zero);
    }
}

/// Rotates the vector `elements` in groups: `groups.0` groups of `groups.1`
/// elements, element k of group g being `elements[index(g, k)]`, each group
/// by `imm mod groups.1`, into the element bus `out`. One rotator module per
/// group; with groups of one element the rotation is the identity.
#[allow(clippy::too_many_arguments)]
fn rotate(
    m: &mut ModuleBuilder,
    name: &str,
    rotator: Option<&Rc<ModuleDef>>,
    elements: &[Expr],
    out: Bus,
    (groups, size): (u32, u32),
    index: impl Fn(u32, u32) -> u32,
    imm: Expr,
) {
    let Some(rotator) = rotator else {
        for (e, &v) in elements.iter().enumerate() {
            m.bus_drive(out, &[e as u32], v);
        }
        return;
    };
    let group_ty = Ty::u(32 * size);
    let input = m.bus(&format!("{name}_in"), group_ty, &[groups]);
    let output = m.bus(&format!("{name}_out"), group_ty, &[groups]);
    for g in 0..groups {
        let parts: Vec<Expr> = (0..size)
            .rev()
            .map(|k| elements[index(g, k) as usize])
            .collect();
        m.bus_drive(input, &[g], cat(&parts));
    }
    let arr = m.instance_array(&format!("rot_{name}"), rotator, &[("group", groups)]);
    let g = arr.var(0);
    m.array_connect(arr, "x_i", input, std::slice::from_ref(&g));
    m.array_connect(arr, "y_o", output, &[g]);
    m.array_broadcast(arr, "amount_i", imm.slice(0, size.trailing_zeros()));
    for g in 0..groups {
        let rotated = m.bus_read(output, &[g]);
        for k in 0..size {
            m.bus_drive(out, &[index(g, k)], rotated.slice(32 * k, 32));
        }
    }
}

/// The reduction units (W/2 of them) folding `opnd` one level per execute
/// cycle; returns the result (unit 0's output, valid in the last cycle).
fn reduction(
    m: &mut ModuleBuilder,
    cfg: &VpuConfig,
    unit: &Rc<ModuleDef>,
    opnd: Bus,
    ex_op: Expr,
    folding: Option<Fold>,
) -> Expr {
    let w = cfg.elems();
    let levels = cfg.fold_levels();
    let half = w / 2;
    let word = Ty::u(32);
    let outputs = m.bus("fold_y", word, &[half]);
    let arr = m.instance_array("fold", unit, &[("unit", half)]);
    let j = arr.var(0);
    m.array_connect(arr, "a_i", opnd, std::slice::from_ref(&j));
    m.array_connect(arr, "b1_i", opnd, &[j.clone() + i64::from(half)]);
    m.array_connect(arr, "y_o", outputs, std::slice::from_ref(&j));
    m.array_broadcast(arr, "op_i", ex_op.slice(0, 3));
    let stages = cfg.fold_stages();
    // With a pipelined fold the step counts cycles: the operands load in
    // step 0, level k (from 0) takes steps 1 + k (s + 1) to (k + 1) (s + 1),
    // and each unit keeps its level's result in the last of them.
    let piped = (stages > 0).then(|| {
        let fold = folding.expect("a pipelined fold has a step counter");
        let per_level = u64::from(stages + 1);
        let level_ty = Ty::u(hw::bits_for(u64::from(levels.max(2) - 1)));
        let level_end_of = |step: Expr| {
            (1..=u64::from(levels))
                .map(|k| step.is_eq(k * per_level))
                .reduce(|a, b| a | b)
                .expect("levels >= 1")
        };
        let level_of = |m: &ModuleBuilder, step: Expr| {
            let mut level = m.lit(level_ty, 0);
            for k in 1..u64::from(levels) {
                level = mux(step.is_gt(k * per_level), m.lit(level_ty, k), level);
            }
            level
        };
        let (at_zero, level_end, level) = if cfg.depth() >= REGISTERED_FOLD_LEVEL_FROM {
            // Each a register of the step's function, loaded from its next
            // value (the step resets to 0, and so do they, as functions of 0).
            let at_zero = m.reg_reset("fold_step_zero", Ty::BOOL, 1);
            m.set_next(at_zero, fold.step_next.is_eq(0));
            let level_end = m.reg_reset("fold_level_end", Ty::BOOL, 0);
            m.set_next(level_end, level_end_of(fold.step_next));
            let level = m.reg_reset("fold_level_q", level_ty, 0);
            let next = level_of(m, fold.step_next);
            m.set_next(level, next);
            (at_zero.q(), level_end.q(), level.q())
        } else {
            let level = level_of(m, fold.step);
            (fold.step.is_eq(0), level_end_of(fold.step), level)
        };
        let load = m.wire("fold_load", fold.folding & at_zero);
        m.array_broadcast(arr, "load_i", load);
        (fold.folding & level_end, level)
    });
    if levels >= 2 {
        // Level k reads unit j + W/2^k's previous result: up to W/2 + W/4 - 1,
        // so the partial results sit in a bus padded with zeros (never used).
        let partial = m.bus("fold_r", word, &[half + half / 2]);
        for e in half..half + half / 2 {
            let zero = m.lit(word, 0);
            m.bus_drive(partial, &[e], zero);
        }
        m.array_connect(arr, "r_o", partial, std::slice::from_ref(&j));
        for k in 2..=levels {
            m.array_connect(
                arr,
                &format!("b{k}_i"),
                partial,
                &[j.clone() + i64::from(w >> k)],
            );
        }
        let (folding, step) = match piped {
            Some((level_end, level)) => {
                (m.wire("fold_keep", level_end), m.wire("fold_level", level))
            }
            None => {
                let fold = folding.expect("a fold of two or more levels has a step counter");
                (fold.folding, fold.step)
            }
        };
        m.array_broadcast(arr, "step_i", step);
        m.array_broadcast(arr, "en_i", folding);
        m.waive(
            "UNUSEDSIGNAL",
            "fold_r",
            "the first W/4 partial results feed only their own unit, and the padding none",
        );
    }
    m.waive(
        "UNUSEDSIGNAL",
        "fold_y",
        "only unit 0's result is the reduction; the others feed the next level through r_o",
    );
    m.bus_read(outputs, &[0])
}

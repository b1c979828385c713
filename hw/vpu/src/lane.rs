//! One lane: element `s * lanes + l` of every vector register and VMEM word,
//! the operand forwarding, the element ALU and the write-back registers.
//!
//! The control (what to read, write, forward and compute) comes from the top
//! module, the same for every lane; a lane holds only data. See the crate
//! docs for the pipeline this implements.

use crate::alu::{alu, alu_pipelined};
use crate::Fwd;
use config::vpu_isa::Op;
use config::VpuConfig;
use hw::{cat, mux, Design, Expr, HwEnum, ModuleBuilder, ModuleDef, Ty};
use std::rc::Rc;

/// The lane module for `cfg` (its registers, VMEM depth and units).
pub fn lane(design: &mut Design, cfg: &VpuConfig) -> Rc<ModuleDef> {
    let mut name = format!(
        "vpu_lane_{}_v{}_m{}",
        cfg.units(),
        cfg.vregs(),
        cfg.vmem_words()
    );
    let mut params = vec![
        ("units", cfg.units().to_string()),
        ("vregs", cfg.vregs().to_string()),
        ("vmem_words", cfg.vmem_words().to_string()),
    ];
    if cfg.depth() > 0 {
        name += &format!("_d{}", cfg.depth());
        params.push(("depth", cfg.depth().to_string()));
    }
    if cfg.host_wmask() {
        name += "_wm";
        params.push(("host_wmask", "true".to_string()));
    }
    let cfg = *cfg;
    design.define(&name, &params, |design, m| {
        m.doc("VPU lane: register file and VMEM slice, forwarding, element ALU, write-back");
        if let Some(reason) = crate::shared_code(&cfg) {
            m.shared_code(reason);
        }
        if cfg.depth() == 0 {
            let alu = alu(design, cfg.units());
            build(m, &cfg, &alu);
        } else {
            let alu = alu_pipelined(design, cfg.units(), cfg.depth());
            build_pipelined(design, m, &cfg, &alu);
        }
    })
}

/// Selects an operand by its forwarding source.
fn forward(sel: Expr, sources: &[(Fwd, Expr)], rf: Expr) -> Expr {
    sources
        .iter()
        .rev()
        .fold(rf, |acc, &(f, v)| mux(sel.is_eq(f.index()), v, acc))
}

/// The control every lane receives from the top, packed into one port,
/// `ctl_i`: one port instead of two dozen, because a Verilated model copies
/// each port of each instance (1,024 lanes in a 128 x 8 VPU). Fields are
/// packed in list order from bit 0. (`splat_i`, element 0 of operand a, is a
/// port of its own: it depends on a lane's output, which depends on this
/// word, and a simulator that sees the word as one signal would see a loop.)
pub struct LaneControl {
    fields: Vec<(&'static str, u32, u32)>,
    width: u32,
}

impl LaneControl {
    /// The fields for `cfg`: name and width.
    pub fn of(cfg: &VpuConfig) -> LaneControl {
        let rw = cfg.vregs().trailing_zeros();
        let aw = cfg.vmem_words().trailing_zeros();
        let fwd = Fwd::ty().width;
        let mut list: Vec<(&'static str, u32)> = vec![
            // Register file reads in the issue cycle (or for the host): the
            // three operands and the store source.
            ("rf_rd_en", 1),
            ("rf_rd_a", rw),
            ("rf_rd_b", rw),
            ("rf_rd_c", rw),
            ("rf_rd_s", rw),
            // Register file writes: the load port and the ALU port (the host
            // writes through the ALU port).
            ("rf_load_we", 1),
            ("rf_load_wa", rw),
            ("rf_alu_we", 1),
            ("rf_alu_wa", rw),
            ("rf_write_host", 1),
            // VMEM: the load slot's (or the host's) read, the store slot's
            // (or the host's) write.
            ("vmem_rd_en", 1),
            ("vmem_rd_addr", aw),
            ("vmem_we", 1),
            ("vmem_wa", aw),
            ("vmem_write_host", 1),
            // Execute stage: operand sources (from FORWARDING_AHEAD_FROM on
            // those of the bundle it takes next), operation, write-back
            // enable.
            ("fwd_a", fwd),
            ("fwd_b", fwd),
            ("fwd_c", fwd),
            ("fwd_s", fwd),
            ("op", 8),
            ("imm", 32),
            // Host read data: the register file (1) or VMEM (0).
            ("host_rd_rf", 1),
        ];
        if crate::advance_is_registered(cfg) {
            // The top's `ex_holds` next value: the lane keeps copies of the
            // register, whose inverse is the advance (a net of every
            // pipeline register's enable, thousands in four lanes, would
            // otherwise leave one register in the top).
            list.push(("holds_next", 1));
        } else {
            list.push(("wb_en", 1));
        }
        if cfg.depth() > 0 {
            // The last execute stage's store takes its own bundle's ALU
            // result (1) or the value chosen in the first (0).
            list.push(("st_alu", 1));
        }
        let mut fields = Vec::new();
        let mut lo = 0;
        for (name, width) in list {
            fields.push((name, width, lo));
            lo += width;
        }
        LaneControl { fields, width: lo }
    }

    /// The width of `ctl_i`.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// The packed word of `values`, one per field (in any order).
    pub fn pack(&self, values: &[(&str, Expr)]) -> Expr {
        let parts: Vec<Expr> = self
            .fields
            .iter()
            .rev()
            .map(|&(name, width, _)| {
                let v = values
                    .iter()
                    .find(|(n, _)| *n == name)
                    .unwrap_or_else(|| panic!("lane control field {name} has no value"))
                    .1;
                assert_eq!(v.width(), width, "lane control field {name}");
                v.as_unsigned()
            })
            .collect();
        assert_eq!(
            values.len(),
            self.fields.len(),
            "unknown lane control fields"
        );
        cat(&parts)
    }

    /// Field `name` of the packed word `ctl`, as a named wire of module `m`.
    fn field(&self, m: &mut ModuleBuilder, ctl: Expr, name: &str) -> Expr {
        let &(_, width, lo) = self
            .fields
            .iter()
            .find(|f| f.0 == name)
            .unwrap_or_else(|| panic!("no lane control field {name}"));
        m.wire(name, ctl.slice(lo, width))
    }
}

/// What both lane forms share: the control fields, the element's inputs, the
/// register file and VMEM with their write and write-first read ports, the
/// write-back registers, and the operands of the (first) execute stage.
struct LaneFront {
    op: Expr,
    imm: Expr,
    /// A bundle leaves the execute stage(s): the write-back registers load.
    advance: Expr,
    /// The top's `ex_holds` next value, when the lane keeps copies of it.
    holds_next: Option<Expr>,
    host_reads_rf: Expr,
    fwd: Vec<Expr>,
    splat: Expr,
    rot_lane: Expr,
    rot_sublane: Expr,
    reduced: Expr,
    rf_data: Vec<Expr>,
    loaded: Expr,
    wb_load: hw::Reg,
    wb_alu: hw::Reg,
    store_data: hw::Wire,
    operands: [Expr; 3],
}

/// `copies` is the design to put the lane's kept copies of the top's
/// registers in (a pipelined lane): of `ex_holds` where the advance is that
/// register ([`crate::advance_is_registered`]), and of the operands'
/// sources, which `ctl` then gives for the bundle execute takes next
/// ([`crate::FORWARDING_AHEAD_FROM`]).
fn front(
    m: &mut ModuleBuilder,
    cfg: &VpuConfig,
    control: &LaneControl,
    ctl: Expr,
    mut copies: Option<&mut Design>,
) -> LaneFront {
    let rw = cfg.vregs().trailing_zeros();
    let aw = cfg.vmem_words().trailing_zeros();
    let word = Ty::u(32);
    let f = |m: &mut ModuleBuilder, name: &str| control.field(m, ctl, name);
    let rf_rd_en = f(m, "rf_rd_en");
    let rf_rd_addr: Vec<Expr> = ["rf_rd_a", "rf_rd_b", "rf_rd_c", "rf_rd_s"]
        .iter()
        .map(|p| f(m, p))
        .collect();
    let rf_load_we = f(m, "rf_load_we");
    let rf_load_wa = f(m, "rf_load_wa");
    let rf_alu_we = f(m, "rf_alu_we");
    let rf_alu_wa = f(m, "rf_alu_wa");
    let rf_write_host = f(m, "rf_write_host");
    let vmem_rd_en = f(m, "vmem_rd_en");
    let vmem_rd_addr = f(m, "vmem_rd_addr");
    let vmem_we = f(m, "vmem_we");
    let vmem_wa = f(m, "vmem_wa");
    let vmem_write_host = f(m, "vmem_write_host");
    let op = f(m, "op");
    let imm = f(m, "imm");
    let (advance, holds_next) = if crate::advance_is_registered(cfg) {
        let design = copies
            .as_deref_mut()
            .expect("a pipelined lane keeps copies");
        let next = f(m, "holds_next");
        let holds = hw::blocks::kept_register_reset(design, m, "holds_reg", next, 0);
        (m.wire("advance", !holds), Some(next))
    } else {
        (f(m, "wb_en"), None)
    };
    let fwd_names = ["fwd_a", "fwd_b", "fwd_c", "fwd_s"];
    let fwd: Vec<Expr> = if cfg.depth() >= crate::FORWARDING_AHEAD_FROM {
        let design = copies.expect("a pipelined lane keeps copies");
        fwd_names
            .iter()
            .map(|p| {
                let next = f(m, p);
                lane_copy(design, m, &format!("{p}_q"), next, advance)
            })
            .collect()
    } else {
        fwd_names.iter().map(|p| f(m, p)).collect()
    };
    let host_reads_rf = f(m, "host_rd_rf");
    let splat = m.input("splat_i", word);
    // The element's own inputs: the cross-lane results and the host's data.
    let rot_lane = m.input("rot_lane_i", word);
    let rot_sublane = m.input("rot_sublane_i", word);
    let reduced = m.input("reduce_i", word);
    let host_wdata = m.input("host_wdata_i", word);

    let banked = cfg.depth() >= BANKED_RF_FROM;
    let rf = (!banked).then(|| m.memory("rf", word, rw));
    let vmem = m.memory("vmem", word, aw);
    let wb_load = m.reg("wb_load", word);
    let wb_alu = m.reg("wb_alu", word);

    // The host's register write lands a cycle late from
    // REGISTERED_ADVANCE_FROM on (the top registers its address and enable).
    let rf_host_data = if cfg.depth() >= crate::REGISTERED_ADVANCE_FROM {
        let held = m.reg("host_rf_wdata_q", word);
        m.set_next(held, host_wdata);
        held.q()
    } else {
        host_wdata
    };
    // Write ports first: the write-first read ports cover the ports that exist.
    let rf_alu_data = match rf {
        Some(rf) => {
            m.mem_write(rf, rf_load_we, rf_load_wa, wb_load.q());
            let rf_alu_data = mux(rf_write_host, rf_host_data, wb_alu.q());
            m.mem_write(rf, rf_alu_we, rf_alu_wa, rf_alu_data);
            rf_alu_data
        }
        None => mux(rf_write_host, rf_host_data, wb_alu.q()),
    };
    let store_data = m.wire_decl("store_data", word);
    // The host's VMEM write lands a cycle late from
    // REGISTERED_HOST_VMEM_WRITE_FROM on, with the data held above.
    let vmem_host_data = if cfg.depth() >= crate::REGISTERED_HOST_VMEM_WRITE_FROM {
        rf_host_data
    } else {
        host_wdata
    };
    let vmem_wdata = mux(vmem_write_host, vmem_host_data, store_data.value());
    // With a host write mask, a host write changes only the elements whose
    // bit is set (held a cycle with the data where the write lands late).
    let vmem_we = if cfg.host_wmask() {
        let host_we = m.input("host_we_i", Ty::BOOL);
        let host_we = if cfg.depth() >= crate::REGISTERED_HOST_VMEM_WRITE_FROM {
            let held = m.reg("host_we_q", Ty::BOOL);
            m.set_next(held, host_we);
            held.q()
        } else {
            host_we
        };
        m.wire("vmem_we_masked", vmem_we & (!vmem_write_host | host_we))
    } else {
        vmem_we
    };
    m.mem_write(vmem, vmem_we, vmem_wa, vmem_wdata);

    // Write-first reads: an operand read in the cycle its producer writes
    // back (two bundles ahead) gets the new value; the bundle just ahead is
    // forwarded in the execute stage below.
    let rf_data: Vec<Expr> = match rf {
        Some(rf) => rf_rd_addr
            .iter()
            .map(|&addr| m.mem_read_write_first(rf, Some(rf_rd_en), addr))
            .collect(),
        None => {
            let load_port = (rf_load_we, rf_load_wa, wb_load.q());
            let alu_port = (rf_alu_we, rf_alu_wa, rf_alu_data);
            banked_rf(m, rw, load_port, alu_port, (rf_rd_en, &rf_rd_addr))
        }
    };
    // A load in the cycle a store writes the same word (the bundle ahead)
    // sees the stored value.
    let loaded = m.mem_read_write_first(vmem, Some(vmem_rd_en), vmem_rd_addr);
    let loaded = m.wire("loaded", loaded);

    // Execute: operands from the register file or forwarded.
    let earlier = [
        (Fwd::Load, loaded),
        (Fwd::WbAlu, wb_alu.q()),
        (Fwd::WbLoad, wb_load.q()),
    ];
    let names = ["opnd_a", "opnd_b", "opnd_c"];
    let operands: Vec<Expr> = (0..3)
        .map(|i| {
            let v = forward(fwd[i], &earlier, rf_data[i]);
            m.wire(names[i], v)
        })
        .collect();
    let (a, b, c) = (operands[0], operands[1], operands[2]);

    LaneFront {
        op,
        imm,
        advance,
        holds_next,
        host_reads_rf,
        fwd,
        splat,
        rot_lane,
        rot_sublane,
        reduced,
        rf_data,
        loaded,
        wb_load,
        wb_alu,
        store_data,
        operands: [a, b, c],
    }
}

/// `value` loaded as execute advances (`advance`), in a register of the
/// lane's own: a kept one, since synthesis would merge the lanes' equal
/// copies into one that drives every lane across the part.
fn lane_copy(
    design: &mut Design,
    m: &mut ModuleBuilder,
    name: &str,
    value: Expr,
    advance: Expr,
) -> Expr {
    let held = m.wire_decl(name, value.ty());
    let q = hw::blocks::kept_register(
        design,
        m,
        &format!("{name}_reg"),
        mux(advance, value, held.value()),
    );
    m.drive(held, q);
    held.value()
}

/// From this depth on the register file is two banks of one write port
/// each and a table of which bank holds each register's newest value (a
/// live value table): a memory of one write port maps to FPGA distributed
/// RAM (one copy per read port), where two write ports made it V x 32
/// flip-flops and a V-way multiplexer per read port and bit.
pub const BANKED_RF_FROM: u32 = 6;

/// The register file as two banks, `load` (the load port's writes) and
/// `alu` (the ALU's and the host's), each with the four write-first read
/// ports `reads` (enable, addresses), and the live value table `rf_lvt`,
/// written by both ports (the ALU's last, so it wins a register both write
/// in one cycle, as the single memory's last write port did) and read
/// write-first beside the banks; returns each port's value.
fn banked_rf(
    m: &mut ModuleBuilder,
    rw: u32,
    load: (Expr, Expr, Expr),
    alu: (Expr, Expr, Expr),
    (enable, addrs): (Expr, &[Expr]),
) -> Vec<Expr> {
    let word = Ty::u(32);
    let bank_load = m.memory("rf_load", word, rw);
    let bank_alu = m.memory("rf_alu", word, rw);
    let lvt = m.memory("rf_lvt", Ty::BOOL, rw);
    m.mem_write(bank_load, load.0, load.1, load.2);
    m.mem_write(bank_alu, alu.0, alu.1, alu.2);
    let (from_load, from_alu) = (m.lit(Ty::BOOL, 0), m.lit(Ty::BOOL, 1));
    m.mem_write(lvt, load.0, load.1, from_load);
    m.mem_write(lvt, alu.0, alu.1, from_alu);
    addrs
        .iter()
        .map(|&addr| {
            let newest_alu = m.mem_read_write_first(lvt, Some(enable), addr);
            let l = m.mem_read_write_first(bank_load, Some(enable), addr);
            let a = m.mem_read_write_first(bank_alu, Some(enable), addr);
            mux(newest_alu, a, l)
        })
        .collect()
}

/// Drives `target` with the cross-lane unit's result for the operations that
/// take one (rotations and splat unless `rotations` is false, when they
/// come late; reductions); others keep its default.
fn select_cross_lane(m: &mut ModuleBuilder, fr: &LaneFront, target: hw::Comb, rotations: bool) {
    let mut switch = m.switch(fr.op);
    if rotations {
        switch = switch
            .case(u32::from(Op::RotLane.code()), |m| {
                m.assign(target, fr.rot_lane)
            })
            .case(u32::from(Op::RotSublane.code()), |m| {
                m.assign(target, fr.rot_sublane)
            })
            .case(u32::from(Op::Splat.code()), |m| m.assign(target, fr.splat));
    }
    switch.cases(
        &Op::ALL
            .iter()
            .filter(|o| o.is_reduction())
            .map(|o| u32::from(o.code()))
            .collect::<Vec<_>>(),
        |m| m.assign(target, fr.reduced),
    );
}

fn build(m: &mut ModuleBuilder, cfg: &VpuConfig, alu: &Rc<ModuleDef>) {
    let word = Ty::u(32);
    let control = LaneControl::of(cfg);
    let ctl = m.input("ctl_i", Ty::u(control.width()));
    let fr = front(m, cfg, &control, ctl, None);
    let (loaded, wb_load, wb_alu) = (fr.loaded, fr.wb_load, fr.wb_alu);

    let unit = alu_unit(m, alu, &fr);
    let element = m.inst_output(unit, "result_o");
    let result = m.comb_default("result", word, element);
    select_cross_lane(m, &fr, result, true);
    let result = result.value();

    // The store sees the load and the ALU result of its own bundle.
    let store_sources = [
        (Fwd::Alu, result),
        (Fwd::Load, loaded),
        (Fwd::WbAlu, wb_alu.q()),
        (Fwd::WbLoad, wb_load.q()),
    ];
    let stored = forward(fr.fwd[3], &store_sources, fr.rf_data[3]);
    m.drive(fr.store_data, stored);
    write_back(m, &fr, result);
}

/// The ALU instance with the operands and the decoded op of the lane's front
/// connected (the ports both lanes' ALUs have).
fn alu_unit(m: &mut ModuleBuilder, alu: &Rc<ModuleDef>, fr: &LaneFront) -> hw::Inst {
    let [a, b, c] = fr.operands;
    let unit = m.instance("alu", alu);
    m.connect(unit, "op_i", fr.op);
    m.connect(unit, "a_i", a);
    m.connect(unit, "b_i", b);
    m.connect(unit, "c_i", c);
    m.connect(unit, "imm_i", fr.imm);
    unit
}

/// The write-back registers, loaded as a bundle leaves the execute stage(s),
/// and the lane's outputs.
fn write_back(m: &mut ModuleBuilder, fr: &LaneFront, result: Expr) {
    m.set_next(fr.wb_load, fr.loaded);
    m.set_enable(fr.wb_load, fr.advance);
    m.set_next(fr.wb_alu, result);
    m.set_enable(fr.wb_alu, fr.advance);

    m.output("opnd_a_o", fr.operands[0]);
    let host_rdata = mux(fr.host_reads_rf, fr.rf_data[0], fr.loaded);
    m.output("host_rdata_o", host_rdata);
}

/// The lane of a VPU with `depth` >= 1 extra execute stages: operands and
/// the store's value are forwarded in the first execute stage as at depth
/// 0 (the register file's and VMEM's ports are the same); the ALU takes
/// `depth` more cycles, the cross-lane result rides through it, and the store
/// in the last execute stage takes the ALU result or the value carried from
/// the first.
fn build_pipelined(
    design: &mut Design,
    m: &mut ModuleBuilder,
    cfg: &VpuConfig,
    alu: &Rc<ModuleDef>,
) {
    let word = Ty::u(32);
    let control = LaneControl::of(cfg);
    let ctl = m.input("ctl_i", Ty::u(control.width()));
    let fr = front(m, cfg, &control, ctl, Some(&mut *design));
    // The ALU's stages take their enable from a copy of their own.
    let alu_advance = if let Some(next) = fr.holds_next {
        let holds = hw::blocks::kept_register_reset(design, m, "alu_holds_reg", next, 0);
        m.wire("alu_advance", !holds)
    } else {
        fr.advance
    };
    let store_alu = control.field(m, ctl, "st_alu");
    let advance = fr.advance;

    // The element's cross-lane result, into the ALU's pipeline.
    let late = crate::late_cross_lane(cfg);
    let cross = m.comb_default("cross_lane", word, 0u32);
    select_cross_lane(m, &fr, cross, !late);

    let unit = alu_unit(m, alu, &fr);
    m.connect(unit, "x_i", cross.value());
    if late {
        // The rotations and the splat a cycle late (`LATE_CROSS_LANE_FROM`):
        // this lane's operand registered for the others, and the rotated
        // values this lane gets (the top's, from those registers) chosen by
        // the operation registered beside them.
        let opnd = m.reg("opnd_a_late", word);
        m.set_next(opnd, fr.operands[0]);
        m.set_enable(opnd, alu_advance);
        m.output("opnd_a_late_o", opnd.q());
        let flag = |m: &mut ModuleBuilder, name: &str, o: Op| {
            let r = m.reg(name, Ty::BOOL);
            m.set_next(r, crate::alu::is_op(fr.op, o));
            m.set_enable(r, alu_advance);
            r.q()
        };
        let rot_lane = flag(m, "late_rot_lane", Op::RotLane);
        let rot_sublane = flag(m, "late_rot_sublane", Op::RotSublane);
        let splat = flag(m, "late_splat", Op::Splat);
        let gated = |bit: Expr, v: Expr| mux(bit, v, 0u32);
        let x_late = gated(rot_lane, fr.rot_lane)
            | gated(rot_sublane, fr.rot_sublane)
            | gated(splat, fr.splat);
        m.connect(unit, "x_late_i", x_late);
    }
    m.connect(unit, "en_i", alu_advance);
    let result = m.inst_output(unit, "result_o");
    let result = m.wire("result", result);

    // The store's value from older bundles or its own load, chosen in the
    // first execute stage and carried to the last; there its own ALU
    // result takes precedence.
    let older = [
        (Fwd::Load, fr.loaded),
        (Fwd::WbAlu, fr.wb_alu.q()),
        (Fwd::WbLoad, fr.wb_load.q()),
    ];
    let mut carried = forward(fr.fwd[3], &older, fr.rf_data[3]);
    for k in 0..cfg.depth() {
        let r = m.reg(&format!("store_carry{}", k + 2), word);
        m.set_next(r, carried);
        m.set_enable(r, advance);
        carried = r.q();
    }
    m.drive(fr.store_data, mux(store_alu, result, carried));
    write_back(m, &fr, result);
}

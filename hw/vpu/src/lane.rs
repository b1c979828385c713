//! One lane: element `s * lanes + l` of every vector register and VMEM word,
//! the operand forwarding, the element ALU and the write-back registers.
//!
//! The control (what to read, write, forward and compute) comes from the top
//! module, the same for every lane; a lane holds only data. See the crate
//! docs for the pipeline this implements.

use crate::alu::alu;
use crate::Fwd;
use config::vpu_isa::Op;
use config::VpuConfig;
use hw::{mux, Design, Expr, HwEnum, ModuleBuilder, ModuleDef, Ty};
use std::rc::Rc;

/// The lane module for `cfg` (its registers, VMEM depth and units).
pub fn lane(design: &mut Design, cfg: &VpuConfig) -> Rc<ModuleDef> {
    let name = format!(
        "vpu_lane_{}_v{}_m{}",
        cfg.units(),
        cfg.vregs(),
        cfg.vmem_words()
    );
    let params = [
        ("units", cfg.units().to_string()),
        ("vregs", cfg.vregs().to_string()),
        ("vmem_words", cfg.vmem_words().to_string()),
    ];
    let cfg = *cfg;
    design.define(&name, &params, |design, m| {
        m.doc("VPU lane: register file and VMEM slice, forwarding, element ALU, write-back");
        let alu = alu(design, cfg.units());
        build(m, &cfg, &alu);
    })
}

/// Selects an operand by its forwarding source.
fn forward(sel: Expr, sources: &[(Fwd, Expr)], rf: Expr) -> Expr {
    sources
        .iter()
        .rev()
        .fold(rf, |acc, &(f, v)| mux(sel.is_eq(f.index()), v, acc))
}

fn build(m: &mut ModuleBuilder, cfg: &VpuConfig, alu: &Rc<ModuleDef>) {
    let rw = cfg.vregs().trailing_zeros();
    let aw = cfg.vmem_words().trailing_zeros();
    let word = Ty::u(32);

    // Register file reads: in the issue cycle (or for the host), one port per
    // operand and one for the store.
    let rf_rd_en = m.input("rf_rd_en_i", Ty::BOOL);
    let rf_rd_addr: Vec<Expr> = ["a", "b", "c", "s"]
        .iter()
        .map(|p| m.input(&format!("rf_rd_{p}_addr_i"), Ty::u(rw)))
        .collect();
    // Register file writes: the load port and the ALU port (the ALU's wins
    // when both write one register: it comes later in the bundle). The host
    // writes through the ALU port.
    let rf_load_we = m.input("rf_load_we_i", Ty::BOOL);
    let rf_load_wa = m.input("rf_load_wa_i", Ty::u(rw));
    let rf_alu_we = m.input("rf_alu_we_i", Ty::BOOL);
    let rf_alu_wa = m.input("rf_alu_wa_i", Ty::u(rw));
    let rf_write_host = m.input("rf_write_host_i", Ty::BOOL);
    // VMEM: one read port (the load slot, or the host) and one write port
    // (the store slot, or the host).
    let vmem_rd_en = m.input("vmem_rd_en_i", Ty::BOOL);
    let vmem_rd_addr = m.input("vmem_rd_addr_i", Ty::u(aw));
    let vmem_we = m.input("vmem_we_i", Ty::BOOL);
    let vmem_wa = m.input("vmem_wa_i", Ty::u(aw));
    let vmem_write_host = m.input("vmem_write_host_i", Ty::BOOL);
    // Execute stage.
    let fwd: Vec<Expr> = ["a", "b", "c", "s"]
        .iter()
        .map(|p| m.input(&format!("fwd_{p}_i"), Fwd::ty()))
        .collect();
    let op = m.input("op_i", Ty::u(8));
    let imm = m.input("imm_i", word);
    let wb_load_en = m.input("wb_en_i", Ty::BOOL);
    let rot_lane = m.input("rot_lane_i", word);
    let rot_sublane = m.input("rot_sublane_i", word);
    let splat = m.input("splat_i", word);
    let reduced = m.input("reduce_i", word);
    // Host port.
    let host_wdata = m.input("host_wdata_i", word);
    let host_reads_rf = m.input("host_rd_rf_i", Ty::BOOL);

    let rf = m.memory("rf", word, rw);
    let vmem = m.memory("vmem", word, aw);
    let wb_load = m.reg("wb_load", word);
    let wb_alu = m.reg("wb_alu", word);

    // Write ports first: the write-first read ports cover the ports that exist.
    m.mem_write(rf, rf_load_we, rf_load_wa, wb_load.q());
    let rf_alu_data = mux(rf_write_host, host_wdata, wb_alu.q());
    m.mem_write(rf, rf_alu_we, rf_alu_wa, rf_alu_data);
    let store_data = m.wire_decl("store_data", word);
    let vmem_wdata = mux(vmem_write_host, host_wdata, store_data.value());
    m.mem_write(vmem, vmem_we, vmem_wa, vmem_wdata);

    // Write-first reads: an operand read in the cycle its producer writes
    // back (two bundles ahead) gets the new value; the bundle just ahead is
    // forwarded in the execute stage below.
    let rf_data: Vec<Expr> = rf_rd_addr
        .iter()
        .map(|&addr| m.mem_read_write_first(rf, Some(rf_rd_en), addr))
        .collect();
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

    let unit = m.instance("alu", alu);
    m.connect(unit, "op_i", op);
    m.connect(unit, "a_i", a);
    m.connect(unit, "b_i", b);
    m.connect(unit, "c_i", c);
    m.connect(unit, "imm_i", imm);
    let element = m.inst_output(unit, "result_o");
    let result = m.comb_default("result", word, element);
    m.switch(op)
        .case(u32::from(Op::RotLane.code()), |m| {
            m.assign(result, rot_lane)
        })
        .case(u32::from(Op::RotSublane.code()), |m| {
            m.assign(result, rot_sublane)
        })
        .case(u32::from(Op::Splat.code()), |m| m.assign(result, splat))
        .cases(
            &Op::ALL
                .iter()
                .filter(|o| o.is_reduction())
                .map(|o| u32::from(o.code()))
                .collect::<Vec<_>>(),
            |m| m.assign(result, reduced),
        );
    let result = result.value();

    // The store sees the load and the ALU result of its own bundle.
    let store_sources = [
        (Fwd::Alu, result),
        (Fwd::Load, loaded),
        (Fwd::WbAlu, wb_alu.q()),
        (Fwd::WbLoad, wb_load.q()),
    ];
    let stored = forward(fwd[3], &store_sources, rf_data[3]);
    m.drive(store_data, stored);

    // Write-back registers, loaded as a bundle leaves the execute stage.
    m.set_next(wb_load, loaded);
    m.set_enable(wb_load, wb_load_en);
    m.set_next(wb_alu, result);
    m.set_enable(wb_alu, wb_load_en);

    m.output("opnd_a_o", a);
    let host_rdata = mux(host_reads_rf, rf_data[0], loaded);
    m.output("host_rdata_o", host_rdata);
}

//! A synchronous FIFO of any depth, on a memory (block RAM where the FPGA has
//! it), in two modes.
//!
//! Both modes hold up to `depth` words and have the same ports:
//!
//! | port | type | meaning |
//! | --- | --- | --- |
//! | `in_valid_i`, `in_ready_o`, `in_data_i` | 1, 1, elem | the input stream (a push) |
//! | `out_valid_o`, `out_ready_i`, `out_data_o` | 1, 1, elem | the output stream (a pop) |
//! | `count_o` | enough bits for 0..=depth | words held (pushed and not popped) |
//!
//! `count_o` is a function of registers: in the cycle after a push it counts
//! the word, in the cycle after a pop it no longer does. After reset the FIFO
//! is empty.
//!
//! **Standard mode** ([`FifoMode::Standard`]): a memory of `depth` words whose
//! read register is the output.
//! - `out_valid_o` is high when `count_o` > 0; a word pushed in cycle x makes
//!   it high in cycle x + 1 at the earliest.
//! - A pop (transfer on the output) in cycle t puts the popped word on
//!   `out_data_o` in cycle t + 1, where it stays until the next pop: the data
//!   lags its handshake by one cycle, like a classic FIFO's read port.
//!   `out_data_o` is unspecified before the first pop.
//! - `in_ready_o` = `count_o` < depth, or `out_ready_i`: a pop frees its slot
//!   for a push in the same cycle (the memory is read before it is written),
//!   so one push and one pop per cycle is sustained at every depth,
//!   including 1. The price is a combinational path from `out_ready_i` to
//!   `in_ready_o`; put a skid buffer in front where that path matters.
//!
//! **First-word fall-through** ([`FifoMode::Fwft`]): a memory of depth - 1
//! words (1 word when depth is 1) plus an output register that holds the
//! head; the output register is the memory's read register, so block RAM
//! still maps it and no path runs from `in_data_i` to `out_data_o`.
//! - `out_valid_o` is high when the output register holds the head, and
//!   `out_data_o` is the head whenever `out_valid_o` is high.
//! - A word pushed in cycle x reaches the output register in cycle x + 2 at the
//!   earliest (written in x, read in x + 1); the memory refills the output
//!   register in the cycle of a pop, so back-to-back pops see no gap.
//! - `in_ready_o` = `count_o` < depth. Every output is a function of
//!   registers alone: no combinational path crosses the FIFO.
//! - Throughput: one push and one pop per cycle from depth 3 on. With two
//!   cycles from push to `out_valid_o` and a registered `in_ready_o`, a depth
//!   of 2 sustains 2 words per 3 cycles and a depth of 1 one word per 3
//!   cycles.

use crate::builder::{mux, Expr, ModuleBuilder, Reg};
use crate::error::elab_error;
use crate::ir::ModuleDef;
use crate::ty::bits_for;
use crate::{Design, Ty};
use std::rc::Rc;

/// Where a FIFO's output data comes from; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FifoMode {
    /// The memory's read register: data one cycle after the pop.
    Standard,
    /// First-word fall-through: the head waits in an output register.
    Fwft,
}

/// A FIFO of `depth` (>= 1) words of type `elem`, named
/// `fifo_<std|fwft>_<elem>_d<depth>` (e.g. `fifo_fwft_u64_d17`). Interface and
/// timing are in the module docs.
#[track_caller]
pub fn fifo(design: &mut Design, elem: Ty, depth: u32, mode: FifoMode) -> Rc<ModuleDef> {
    if depth == 0 || depth > 1 << 24 {
        elab_error(format!("FIFO depth must be 1..=2^24, got {depth}"));
    }
    let mode_name = match mode {
        FifoMode::Standard => "std",
        FifoMode::Fwft => "fwft",
    };
    let name = format!("fifo_{mode_name}_{elem}_d{depth}");
    let params = [
        ("elem", elem.to_string()),
        ("depth", depth.to_string()),
        ("mode", mode_name.to_string()),
    ];
    design.define(&name, &params, |_, m| {
        m.doc(match mode {
            FifoMode::Standard => "synchronous FIFO, data one cycle after the pop",
            FifoMode::Fwft => "synchronous FIFO, first-word fall-through",
        });
        let count_ty = Ty::u(bits_for(depth as u64));
        let in_valid = m.input("in_valid_i", Ty::BOOL);
        let in_ready = m.output_decl("in_ready_o", Ty::BOOL);
        let in_data = m.input("in_data_i", elem);
        let out_valid = m.output_decl("out_valid_o", Ty::BOOL);
        let out_ready = m.input("out_ready_i", Ty::BOOL);
        let count = m.reg_reset("count", count_ty, 0);
        let room = count.q().is_ne(depth);
        match mode {
            FifoMode::Standard => {
                let valid = m.wire("valid", count.q().is_ne(0));
                m.drive(out_valid, valid);
                let pop = m.wire("pop", valid & out_ready);
                let ready = m.wire("ready", room | out_ready);
                m.drive(in_ready, ready);
                let push = m.wire("push", in_valid & ready);
                let mem = m.memory_depth("mem", elem, depth as u64);
                let wr = ring_pointer(m, "wr_ptr", m.mem_addr_width(mem), depth, push);
                let rd = ring_pointer(m, "rd_ptr", m.mem_addr_width(mem), depth, pop);
                m.mem_write(mem, push, wr, in_data);
                let data = m.mem_read(mem, Some(pop), rd);
                m.output("out_data_o", data);
                m.set_next(
                    count,
                    count.q() + push.zext(count_ty.width) - pop.zext(count_ty.width),
                );
            }
            FifoMode::Fwft => {
                // The memory holds what the output register does not.
                let slots = (depth - 1).max(1);
                let mem = m.memory_depth("mem", elem, slots as u64);
                let stored_ty = Ty::u(bits_for(slots as u64));
                let stored = m.reg_reset("stored", stored_ty, 0);
                let head_valid = m.reg_reset("head_valid", Ty::BOOL, 0);
                m.drive(out_valid, head_valid.q());
                let ready = m.wire("ready", room);
                m.drive(in_ready, ready);
                let push = m.wire("push", in_valid & ready);
                let pop = m.wire("pop", head_valid.q() & out_ready);
                // Refill the output register when it is empty or being
                // emptied. A push into a memory whose every slot is in use
                // happens only while that refill frees one (the head is then
                // empty, as count < depth), and the read-first memory reads
                // the slot before the push overwrites it.
                let fetch = m.wire("fetch", stored.q().is_ne(0) & (!head_valid.q() | pop));
                let wr = ring_pointer(m, "wr_ptr", m.mem_addr_width(mem), slots, push);
                let rd = ring_pointer(m, "rd_ptr", m.mem_addr_width(mem), slots, fetch);
                m.mem_write(mem, push, wr, in_data);
                let head = m.mem_read(mem, Some(fetch), rd);
                m.output("out_data_o", head);
                m.set_next(head_valid, fetch | (head_valid.q() & !pop));
                m.set_next(
                    stored,
                    stored.q() + push.zext(stored_ty.width) - fetch.zext(stored_ty.width),
                );
                m.set_next(
                    count,
                    count.q() + push.zext(count_ty.width) - pop.zext(count_ty.width),
                );
            }
        }
        m.output("count_o", count.q());
    })
}

/// A pointer over `0..slots` that advances (wrapping to 0 after the last
/// slot) in cycles where `advance` is high; returns its value.
fn ring_pointer(m: &mut ModuleBuilder, name: &str, width: u32, slots: u32, advance: Expr) -> Expr {
    let r: Reg = m.reg_reset(name, Ty::u(width), 0);
    let q = r.q();
    let zero = m.lit(Ty::u(width), 0);
    let next = mux(q.is_eq(slots - 1), zero, q + 1u32);
    m.set_next(r, next);
    m.set_enable(r, advance);
    q
}

//! TensorCore v2's RTL: the sequencer and mover (one FSM), the weight
//! engine and weight memory, and the VPU, EUP and MXU instances, built to
//! the timing contract in the crate docs.
//!
//! The mover reaches the unified buffer (the VPU's VMEM) only through the
//! VPU's host port: a read of element e is a read of its word, whose element
//! e mod W is picked from the data the port returns next cycle; a write of
//! element e is a write of its word with the element's value in every
//! element and only bit e mod W of the write mask set. So the VPU needs no
//! second port and the mover never writes an element it did not mean to.

use config::tensorcore2_isa::{field, Opcode, FLAG_ADD, FLAG_INT8};
use config::TensorCore2Config;
use hw::{bits_for, cat, mux, Design, Expr, ModuleBuilder, ModuleDef, Ty};
use std::rc::Rc;
use tensorcore::weight_queue::WeightQueue;

/// Port names of the TensorCore v2 top module.
pub mod ports {
    pub const INSTR_VALID: &str = "instr_valid_i";
    pub const INSTR: &str = "instr_i";
    pub const INSTR_READY: &str = "instr_ready_o";
    pub const HIN_EN: &str = "hin_en_o";
    pub const HIN_ADDR: &str = "hin_addr_o";
    pub const HIN_DATA: &str = "hin_data_i";
    pub const HOUT_WR: &str = "hout_wr_o";
    pub const HOUT_ADDR: &str = "hout_addr_o";
    pub const HOUT_DATA: &str = "hout_data_o";
    pub const WMEM_WR: &str = "wmem_wr_i";
    pub const WMEM_ADDR: &str = "wmem_addr_i";
    pub const WMEM_DATA: &str = "wmem_data_i";
    pub const HALTED: &str = "halted_o";
    pub const ERROR: &str = "error_o";
    /// The counters, in `golden::tensorcore2::Counters` order.
    pub const COUNTERS: [&str; 6] = [
        "cnt_instructions_o",
        "cnt_vpu_busy_o",
        "cnt_mxu_busy_o",
        "cnt_eup_ops_o",
        "cnt_mover_o",
        "cnt_wait_o",
    ];
}

/// Bits of a performance counter (they wrap).
pub const COUNTER_BITS: u32 = 32;

hw::hw_enum! {
    /// The sequencer's states (the mover's are the states after `Wait`).
    pub enum SeqState {
        /// The current instruction is decoded; `VPU`, `RW`, `SYNC` and
        /// `HALT` run here, a mover instruction moves on to `Wait`.
        Issue,
        /// A mover instruction waits for the VPU to be idle (and `RWV` for
        /// the weight engine, `MV` for the accumulator's writes).
        Wait,
        /// `HIN`, `HOUT`, `EUP`: element streams.
        Stream,
        /// `MM`, `RWV`: reading one row's elements.
        RowRead,
        /// `MM`: the row offered to the MXU; `RWV`: to its weight FIFO.
        RowOffer,
        /// `MV`: reading one accumulator row.
        AccRead,
        /// `MV`: waiting for the accumulator row's data.
        AccWait,
        /// `MV`: writing the row's elements.
        AccWrite,
        /// `HALT` retired.
        Halted,
    }
}

/// The Verilog name of the top module, e.g.
/// `tensorcore2_8x8_l8x1_v32_m4096_acc256_w16384_q4_r28m4a6`, with
/// `_dm<mxu depth>` and `_dv<vpu depth>` where they are not 0.
pub fn top_name(cfg: &TensorCore2Config) -> String {
    let eup = cfg.eup();
    let vpu = cfg.vpu();
    let mut name = format!(
        "tensorcore2_{r}x{r}_l{}x{}_v{}_m{}_acc{}_w{}_q{}_r{}m{}a{}",
        cfg.lanes(),
        cfg.sublanes(),
        vpu.vregs(),
        cfg.vmem_words(),
        cfg.acc_rows(),
        cfg.weight_rows(),
        cfg.weight_queue(),
        eup.recurrence_stages(),
        eup.mul_stages(),
        eup.add_stages(),
        r = cfg.rows(),
    );
    if cfg.mxu().depth() != 0 {
        name += &format!("_dm{}", cfg.mxu().depth());
    }
    if vpu.depth() != 0 {
        name += &format!("_dv{}", vpu.depth());
    }
    name
}

/// Builds TensorCore v2 for `cfg` into `design` and returns its top module.
#[track_caller]
pub fn build(design: &mut Design, cfg: &TensorCore2Config) -> Rc<ModuleDef> {
    let owned = cfg.params();
    let params = hw::param_refs(&owned);
    let name = top_name(cfg);
    let cfg = *cfg;
    design.define(&name, &params, |design, m| {
        m.doc(
            "TensorCore v2: sequencer and element mover, weight engine, VPU, EUP, MXU (bf16/int8)",
        );
        let parts = Parts {
            mxu: mxu::build(design, &cfg.mxu()),
            vpu: vpu::build(design, &cfg.vpu()),
            eup: eup::build(design, &cfg.eup()),
        };
        build_top(m, &cfg, &parts);
    })
}

struct Parts {
    mxu: Rc<ModuleDef>,
    vpu: Rc<ModuleDef>,
    eup: Rc<ModuleDef>,
}

/// `e` (unsigned) cut or zero-extended to `width` bits.
fn fit(e: Expr, width: u32) -> Expr {
    match e.width().cmp(&width) {
        std::cmp::Ordering::Equal => e,
        std::cmp::Ordering::Greater => e.trunc(width),
        std::cmp::Ordering::Less => e.zext(width),
    }
}

/// Element `index` (of `count` elements of `bits` each, element 0 lowest)
/// of `word`, by a tree of 2:1 multiplexers on the index's bits.
fn pick(word: Expr, index: Expr, count: u32, bits: u32) -> Expr {
    let mut level: Vec<Expr> = (0..count).map(|e| word.slice(e * bits, bits)).collect();
    let mut bit = 0;
    while level.len() > 1 {
        let sel = index.bit(bit);
        level = level
            .chunks(2)
            .map(|pair| match pair {
                [lo, hi] => mux(sel, *hi, *lo),
                [only] => *only,
                _ => unreachable!(),
            })
            .collect();
        bit += 1;
    }
    level[0]
}

/// `value` repeated `times` times (the element a masked write carries in
/// every element of the word).
fn repeat(value: Expr, times: u32) -> Expr {
    let parts: Vec<Expr> = (0..times).map(|_| value).collect();
    cat(&parts)
}

fn build_top(m: &mut ModuleBuilder, cfg: &TensorCore2Config, parts: &Parts) {
    use ports::*;
    let r = cfg.rows();
    let c = cfg.cols();
    let w = cfg.elems();
    let q = cfg.weight_queue();
    let elem_bits = w.trailing_zeros();
    let word_bits = cfg.vmem_words().trailing_zeros();
    let acc_aw = cfg.acc_rows().trailing_zeros();
    let w_aw = cfg.weight_rows().trailing_zeros();
    let addr_ty = Ty::u(config::tensorcore2_isa::ADDR_BITS);
    let count_ty = Ty::u(16);
    // Reads of an EUP stream: two per element for div.
    let reads_ty = Ty::u(17);

    let instr_valid = m.input(INSTR_VALID, Ty::BOOL);
    let instr = m.input(INSTR, Ty::u(config::tensorcore2_isa::INSTR_BITS));
    let hin_data = m.input(HIN_DATA, Ty::u(32));
    let wmem_wr = m.input(WMEM_WR, Ty::BOOL);
    let wmem_addr = m.input(WMEM_ADDR, Ty::u(w_aw));
    let wmem_data = m.input(WMEM_DATA, Ty::u(16 * c));

    // ---- The current instruction: loaded when the slot is empty or the
    // current one retires, current from the next cycle.
    let cur = m.reg("cur", instr.ty());
    let cur_valid = m.reg_reset("cur_valid", Ty::BOOL, 0);
    let retire = m.comb_default("retire", Ty::BOOL, 0);
    let fsm = m.fsm("state", SeqState::Issue);
    let halted = fsm.is(SeqState::Halted);
    let halting = m.comb_default("halting", Ty::BOOL, 0);
    let slot_free = m.wire(
        "slot_free",
        (!cur_valid.q() | retire.value()) & !halted & !halting.value(),
    );
    m.output(INSTR_READY, slot_free);
    let load = m.wire("load", instr_valid & slot_free);
    m.set_next(cur, mux(load, instr, cur.q()));
    m.set_next(cur_valid, load | (cur_valid.q() & !retire.value()));
    let word = cur.q();
    let f = |pos: (u32, u32)| word.slice(pos.0, pos.1);
    let op = f(field::OP);
    // The flags MM takes (the others are zero in a valid word).
    let flags = word.slice(field::FLAGS.0, 2);
    let (fc, fn_, s_field) = (f(field::C), f(field::FN), f(field::S));
    let n = f(field::N);
    let is = |m: &mut ModuleBuilder, o: Opcode| {
        m.wire(
            &format!("is_{}", o.mnemonic().to_lowercase()),
            cur_valid.q() & op.is_eq(u64::from(o.code())),
        )
    };
    let is_vpu = is(m, Opcode::Vpu);
    let is_hin = is(m, Opcode::HostIn);
    let is_hout = is(m, Opcode::HostOut);
    let is_rw = is(m, Opcode::ReadWeights);
    let is_rwv = is(m, Opcode::ReadWeightsVmem);
    let is_mm = is(m, Opcode::Matmul);
    let is_mv = is(m, Opcode::MoveAcc);
    let is_eup = is(m, Opcode::Eup);
    let is_sync = is(m, Opcode::Sync);
    let is_halt = is(m, Opcode::Halt);
    let last_code = u64::from(Opcode::Sync.code());
    let illegal = m.wire("illegal", cur_valid.q() & op.is_gt(last_code));
    let mover_op = m.wire(
        "mover_op",
        is_hin | is_hout | is_rwv | is_mm | is_mv | is_eup,
    );
    let int8_row = flags.bit(FLAG_INT8.trailing_zeros());
    let add_row = flags.bit(FLAG_ADD.trailing_zeros());
    let binary = m.wire(
        "eup_binary",
        fn_.is_eq(u64::from(config::EupOp::Div.code())),
    );

    // ---- The instances.
    let vpu = m.instance("vpu", &parts.vpu);
    let eup = m.instance("eup", &parts.eup);
    let mx = m.instance("mxu", &parts.mxu);
    let vpu_busy = m.inst_output(vpu, vpu::ports::BUSY);
    let vpu_instr_ready = m.inst_output(vpu, vpu::ports::INSTR_READY);
    let vpu_rdata = m.inst_output(vpu, vpu::ports::HOST_RDATA);
    let vpu_error = m.inst_output(vpu, vpu::ports::ERROR);
    let eup_valid_out = m.inst_output(eup, eup::ports::VALID_OUT);
    let eup_y = m.inst_output(eup, eup::ports::Y);
    let a_ready = m.inst_output(mx, mxu::ports::A_READY);
    let w_ready = m.inst_output(mx, mxu::ports::W_READY);
    let acc_rd_valid = m.inst_output(mx, mxu::ports::ACC_RD_VALID);
    let acc_rd_data = m.inst_output(mx, mxu::ports::ACC_RD_DATA);

    // ---- Late accumulator writes: nonzero while one is still to land.
    let write_latency = mxu::Timing::of(&cfg.mxu()).write_latency();
    let late_ty = Ty::u(bits_for(write_latency));
    let acc_wait = m.reg_reset("acc_wait", late_ty, 0);
    let acc_idle = m.wire("acc_idle", acc_wait.q().is_eq(0));

    // ---- The weight queue (slot 0 the oldest read), TensorCore v1's.
    let wq = WeightQueue::declare(m, q, w_aw);
    let (q_room, q_empty) = (wq.room, wq.empty);
    let vpu_idle = m.wire("vpu_idle", !vpu_busy);
    let drained = m.wire("drained", vpu_idle & q_empty & acc_idle);

    // ---- The mover's registers.
    // Stream: reads issued and writes done; rows: row index j, element k.
    let rd_cnt = m.reg_reset("rd_cnt", reads_ty, 0);
    let wr_cnt = m.reg_reset("wr_cnt", count_ty, 0);
    let row_j = m.reg_reset("row_j", count_ty, 0);
    let elem_k = m.reg_reset("elem_k", count_ty, 0);
    // The element address of row j's first element (MM, RWV, MV).
    // VMEM element addresses are as wide as the unified buffer reaches.
    let ew = word_bits + elem_bits;
    let vaddr = Ty::u(ew);
    // A field of the current word as a VMEM address: only the bits used
    // are sliced (lint).
    let fv = |pos: (u32, u32)| fit(word.slice(pos.0, pos.1.min(ew)), ew);
    let row_base = m.reg("row_base", vaddr);
    // A read was issued last cycle: its element in the word, and (EUP) whether it
    // was a second operand.
    let rd_pending = m.reg_reset("rd_pending", Ty::BOOL, 0);
    let rd_sel = m.reg("rd_sel", Ty::u(elem_bits.max(1)));
    if w == 1 {
        m.waive(
            "UNUSEDSIGNAL",
            "rd_sel_q",
            "a word of one element needs no element select",
        );
    }
    let rd_second = m.reg("rd_second", Ty::BOOL);
    let a_hold = m.reg("eup_a_hold", Ty::u(32));
    // A row being assembled (MM: R activations, RWV: C weights; R = C).
    let row_acc = m.reg("row_acc", Ty::u(16 * r));
    // An accumulator row being written (MV), shifted down an element per write.
    let acc_row = m.reg("acc_row", Ty::u(32 * c));
    // RWV starts at its last row: a + (n - 1) s, from a registered product.
    let n_minus_1 = n - m.lit(count_ty, 1);
    let rwv_last = m.reg("rwv_last", vaddr);
    let rwv_span = m.wire("rwv_span", n_minus_1.mul_wide(s_field));
    m.waive(
        "UNUSEDSIGNAL",
        "rwv_span",
        "a valid RWV's rows lie inside the unified buffer, below 2^24 elements",
    );
    m.set_next(rwv_last, fv(field::A) + rwv_span.trunc(ew));

    // The data a read of last cycle returns: its element of the VPU's word.
    let rd_data = m.wire("rd_data", pick(vpu_rdata, rd_sel.q(), w, 32));

    // The VPU's host port, as the mover drives it.
    let host_valid = m.comb_default("host_valid", Ty::BOOL, 0);
    let host_write = m.comb_default("host_write", Ty::BOOL, 0);
    let host_elem = m.comb_default("host_elem", vaddr, 0);
    let host_wvalue = m.comb_default("host_wvalue", Ty::u(32), 0);
    // Other outputs of the FSM.
    let vpu_valid = m.comb_default("vpu_valid", Ty::BOOL, 0);
    let enqueue = m.comb_default("enqueue", Ty::BOOL, 0);
    let hin_en = m.comb_default("hin_en", Ty::BOOL, 0);
    let hin_addr = m.comb_default("hin_addr", addr_ty, 0);
    let hout_wr = m.comb_default("hout_wr", Ty::BOOL, 0);
    let hout_addr = m.comb_default("hout_addr", addr_ty, 0);
    let hout_data = m.comb_default("hout_data", Ty::u(32), 0);
    let eup_valid = m.comb_default("eup_valid", Ty::BOOL, 0);
    let eup_a = m.comb_default("eup_a", Ty::u(32), 0);
    let eup_b = m.comb_default("eup_b", Ty::u(32), 0);
    let a_valid = m.comb_default("a_valid", Ty::BOOL, 0);
    let rwv_offer = m.comb_default("rwv_offer", Ty::BOOL, 0);
    let acc_rd_en = m.comb_default("acc_rd_en", Ty::BOOL, 0);
    let error_now = m.comb_default("error_now", Ty::BOOL, 0);
    // MV writes a whole row (one word) this cycle.
    let host_row_write = m.comb_default("host_row_write", Ty::BOOL, 0);
    // Rows of R = C elements fit one word: a row starting at an element
    // address that is a multiple of W moves in one access.
    let word_rows = r <= w;
    let row_aligned = if elem_bits == 0 {
        m.lit(Ty::BOOL, 1)
    } else {
        m.wire("row_aligned", row_base.q().slice(0, elem_bits).is_eq(0))
    };
    // The read in flight is a whole row's word.
    let rd_word = m.reg("rd_word", Ty::BOOL);
    if !word_rows {
        for (signal, reason) in [
            (
                "rd_word_q",
                "rows wider than a word move element by element",
            ),
            (
                "host_row_write",
                "rows wider than a word move element by element",
            ),
            (
                "row_aligned",
                "rows wider than a word move element by element",
            ),
        ] {
            m.waive("UNUSEDSIGNAL", signal, reason);
        }
    }

    let one16 = m.lit(count_ty, 1);
    let zero16 = m.lit(count_ty, 0);
    let read_elem = |m: &mut ModuleBuilder, addr: Expr| {
        m.assign(host_valid, 1);
        m.assign(host_elem, addr);
        m.assign(rd_pending, 1);
        m.assign(rd_sel, fit(addr, elem_bits.max(1)));
    };
    let write_elem = |m: &mut ModuleBuilder, addr: Expr, value: Expr| {
        m.assign(host_valid, 1);
        m.assign(host_write, 1);
        m.assign(host_elem, addr);
        m.assign(host_wvalue, value);
    };
    let finish = |m: &mut ModuleBuilder| {
        m.assign(retire, 1);
        fsm.goto(m, SeqState::Issue);
    };
    let last_of = |count: Expr| count.is_eq(n_minus_1);
    // Every mover state starts without a read in flight unless it issues one.
    m.assign(rd_pending, 0);

    m.fsm_states(fsm, |st| {
        st.state(SeqState::Issue, |m| {
            m.if_(is_vpu, |m| {
                m.assign(vpu_valid, 1);
                m.if_(vpu_instr_ready, |m| m.assign(retire, 1));
            })
            .elif(is_rw, |m| {
                m.if_(q_room, |m| {
                    m.assign(enqueue, 1);
                    m.assign(retire, 1);
                });
            })
            .elif(is_sync, |m| {
                m.if_(drained, |m| m.assign(retire, 1));
            })
            .elif(is_halt, |m| {
                m.if_(drained, |m| {
                    m.assign(retire, 1);
                    m.assign(halting, 1);
                    fsm.goto(m, SeqState::Halted);
                });
            })
            .elif(mover_op, |m| fsm.goto(m, SeqState::Wait))
            .elif(illegal, |m| {
                m.assign(retire, 1);
                m.assign(error_now, 1);
            });
        })
        .state(SeqState::Wait, |m| {
            let ready = vpu_idle & (!is_rwv | q_empty) & (!is_mv | acc_idle);
            m.if_(ready, |m| {
                m.assign(rd_cnt, 0);
                m.assign(wr_cnt, 0);
                m.assign(row_j, 0);
                m.assign(elem_k, 0);
                m.if_(is_mm, |m| {
                    m.assign(row_base, fv(field::A));
                    fsm.goto(m, SeqState::RowRead);
                })
                .elif(is_rwv, |m| {
                    m.assign(row_base, rwv_last.q());
                    fsm.goto(m, SeqState::RowRead);
                })
                .elif(is_mv, |m| {
                    m.assign(row_base, fv(field::B));
                    fsm.goto(m, SeqState::AccRead);
                })
                .else_(|m| fsm.goto(m, SeqState::Stream));
            });
        })
        .state(SeqState::Stream, |m| {
            let rd = rd_cnt.q();
            let reads_left = rd.is_lt(mux(binary & is_eup, fit(n, 17) + fit(n, 17), fit(n, 17)));
            let pairs = binary & is_eup;
            // Element i of the reads: rd, or rd / 2 for div's pairs.
            let elem_in = mux(pairs, rd.slice(1, 16).zext(24), rd.slice(0, 16).zext(24));
            let elem_vm = mux(
                pairs,
                fit(rd.slice(1, 16.min(ew)), ew),
                fit(rd.slice(0, 16.min(ew)), ew),
            );
            let step_rd = |m: &mut ModuleBuilder| m.assign(rd_cnt, rd + m.lit(reads_ty, 1));
            let wrote = |m: &mut ModuleBuilder| {
                m.assign(wr_cnt, wr_cnt.q() + one16);
                m.if_(last_of(wr_cnt.q()), finish);
            };
            let wr_vm = |pos: (u32, u32)| fv(pos) + fit(wr_cnt.q(), ew);
            m.if_(is_hin, |m| {
                m.if_(reads_left, |m| {
                    m.assign(hin_en, 1);
                    m.assign(hin_addr, fc + elem_in);
                    m.assign(rd_pending, 1);
                    step_rd(m);
                });
                m.if_(rd_pending.q(), |m| {
                    write_elem(m, wr_vm(field::B), hin_data);
                    wrote(m);
                });
            })
            .elif(is_hout, |m| {
                m.if_(reads_left, |m| {
                    read_elem(m, fv(field::A) + elem_vm);
                    step_rd(m);
                });
                m.if_(rd_pending.q(), |m| {
                    m.assign(hout_wr, 1);
                    m.assign(hout_addr, fc + wr_cnt.q().zext(24));
                    m.assign(hout_data, rd_data);
                    wrote(m);
                });
            })
            .else_(|m| {
                // EUP: a result leaving the unit is written at once (the
                // port's priority); otherwise the next operand is read.
                m.if_(eup_valid_out, |m| {
                    write_elem(m, wr_vm(field::C), eup_y);
                    wrote(m);
                })
                .elif(reads_left, |m| {
                    let second = binary & rd.bit(0);
                    read_elem(m, mux(second, fv(field::B), fv(field::A)) + elem_vm);
                    m.assign(rd_second, second);
                    step_rd(m);
                });
                m.if_(rd_pending.q(), |m| {
                    m.if_(binary & !rd_second.q(), |m| m.assign(a_hold, rd_data))
                        .else_(|m| {
                            m.assign(eup_valid, 1);
                            m.assign(eup_a, mux(binary, a_hold.q(), rd_data));
                            m.assign(eup_b, mux(binary, rd_data, m.lit(Ty::u(32), 0)));
                        });
                });
            });
        })
        .state(SeqState::RowRead, |m| {
            let k = elem_k.q();
            let element_read = |m: &mut ModuleBuilder| {
                read_elem(m, row_base.q() + fit(k, ew));
                m.assign(rd_word, 0);
                m.assign(elem_k, k + one16);
            };
            m.if_(k.is_lt(u64::from(r)), |m| {
                if word_rows {
                    // A row inside one word, from its first element: one read.
                    m.if_(k.is_eq(0) & row_aligned, |m| {
                        read_elem(m, row_base.q());
                        m.assign(rd_word, 1);
                        m.assign(elem_k, u64::from(r));
                    })
                    .else_(element_read);
                } else {
                    element_read(m);
                }
            })
            .else_(|m| fsm.goto(m, SeqState::RowOffer));
            m.if_(rd_pending.q(), |m| {
                let shifted = if r == 1 {
                    rd_data.slice(0, 16)
                } else {
                    cat(&[rd_data.slice(0, 16), row_acc.q().slice(16, 16 * (r - 1))])
                };
                if word_rows {
                    let whole: Vec<Expr> =
                        (0..r).rev().map(|e| vpu_rdata.slice(32 * e, 16)).collect();
                    m.if_(rd_word.q(), |m| m.assign(row_acc, cat(&whole)))
                        .else_(|m| m.assign(row_acc, shifted));
                } else {
                    m.assign(row_acc, shifted);
                }
            });
        })
        .state(SeqState::RowOffer, |m| {
            let next_row = |m: &mut ModuleBuilder, base: Expr| {
                m.assign(row_j, row_j.q() + one16);
                m.assign(elem_k, zero16);
                m.assign(row_base, base);
                m.if_(last_of(row_j.q()), finish)
                    .else_(|m| fsm.goto(m, SeqState::RowRead));
            };
            let stride = fit(s_field, ew);
            m.if_(is_mm, |m| {
                m.assign(a_valid, 1);
                m.if_(a_ready, |m| next_row(m, row_base.q() + stride));
            })
            .else_(|m| {
                m.assign(rwv_offer, 1);
                m.if_(w_ready, |m| next_row(m, row_base.q() - stride));
            });
        })
        .state(SeqState::AccRead, |m| {
            m.assign(acc_rd_en, 1);
            fsm.goto(m, SeqState::AccWait);
        })
        .state(SeqState::AccWait, |m| {
            m.if_(acc_rd_valid, |m| {
                m.assign(acc_row, acc_rd_data);
                fsm.goto(m, SeqState::AccWrite);
            });
        })
        .state(SeqState::AccWrite, |m| {
            let k = elem_k.q();
            let row_done = |m: &mut ModuleBuilder| {
                m.assign(elem_k, zero16);
                m.assign(row_j, row_j.q() + one16);
                m.assign(row_base, row_base.q() + fit(s_field, ew));
                m.if_(last_of(row_j.q()), finish)
                    .else_(|m| fsm.goto(m, SeqState::AccRead));
            };
            let element_write = |m: &mut ModuleBuilder| {
                write_elem(m, row_base.q() + fit(k, ew), acc_row.q().slice(0, 32));
                if c > 1 {
                    let zeros = m.lit(Ty::u(32), 0);
                    m.assign(acc_row, cat(&[zeros, acc_row.q().slice(32, 32 * (c - 1))]));
                }
                m.if_(k.is_eq(u64::from(c - 1)), row_done)
                    .else_(|m| m.assign(elem_k, k + one16));
            };
            if word_rows {
                // A row inside one word, from its first element: one write.
                m.if_(row_aligned, |m| {
                    write_elem(m, row_base.q(), acc_row.q().slice(0, 32));
                    m.assign(host_row_write, 1);
                    row_done(m);
                })
                .else_(element_write);
            } else {
                element_write(m);
            }
        })
        .state(SeqState::Halted, |_| {});
    });

    // ---- The VPU.
    m.connect(vpu, vpu::ports::INSTR_VALID, vpu_valid.value());
    m.connect(vpu, vpu::ports::INSTR, word.slice(0, 128));
    m.connect(vpu, vpu::ports::HOST_VALID, host_valid.value());
    m.connect(vpu, vpu::ports::HOST_WRITE, host_write.value());
    m.connect(vpu, vpu::ports::HOST_SPACE, m.lit(Ty::BOOL, 0));
    let host_addr_bits = vpu::host_addr_bits(&cfg.vpu());
    let elem_addr = host_elem.value();
    let host_word = elem_addr.slice(elem_bits, word_bits);
    m.connect(vpu, vpu::ports::HOST_ADDR, fit(host_word, host_addr_bits));
    let element_wdata = repeat(host_wvalue.value(), w);
    let element_mask = if elem_bits == 0 {
        m.lit(Ty::u(1), 1)
    } else {
        m.lit(Ty::u(w), 1) << elem_addr.slice(0, elem_bits)
    };
    let (wdata, mask) = if word_rows {
        // MV's whole rows: the C results in elements 0 .. C - 1.
        let row_data = fit(acc_row.q(), 32 * w);
        let row_mask = m.lit(Ty::u(w), (1u128 << c) - 1);
        (
            mux(host_row_write.value(), row_data, element_wdata),
            mux(host_row_write.value(), row_mask, element_mask),
        )
    } else {
        (element_wdata, element_mask)
    };
    m.connect(vpu, vpu::ports::HOST_WDATA, wdata);
    m.connect(vpu, vpu::ports::HOST_WMASK, mask);

    // ---- The EUP.
    m.connect(eup, eup::ports::VALID_IN, eup_valid.value());
    m.connect(eup, eup::ports::OP, fn_);
    m.connect(eup, eup::ports::A, eup_a.value());
    m.connect(eup, eup::ports::B, eup_b.value());

    // ---- The MXU's activation side and accumulator reads.
    let accept = m.wire("accept", a_valid.value() & a_ready);
    m.connect(mx, mxu::ports::A_VALID, a_valid.value());
    m.connect(mx, mxu::ports::A_FIRST, row_j.q().is_eq(0));
    m.connect(mx, mxu::ports::A_ROW, row_acc.q());
    m.connect(mx, mxu::ports::A_INT8, int8_row);
    let acc_row_addr =
        fit(word.slice(field::ACC.0, 16.min(acc_aw)), acc_aw) + fit(row_j.q(), acc_aw);
    m.connect(mx, mxu::ports::A_ACC_ADDR, fit(acc_row_addr, acc_aw));
    m.connect(mx, mxu::ports::A_ACC_ADD, add_row);
    m.connect(mx, mxu::ports::ACC_RD_EN, acc_rd_en.value());
    m.connect(mx, mxu::ports::ACC_RD_ADDR, fit(acc_row_addr, acc_aw));
    let late_full = m.lit(late_ty, u64::from(write_latency));
    let late_one = m.lit(late_ty, 1);
    m.set_next(
        acc_wait,
        mux(
            accept,
            late_full,
            mux(acc_idle, acc_wait.q(), acc_wait.q() - late_one),
        ),
    );

    // ---- The weight engine: the oldest read writes one row a cycle while
    // the MXU's weight FIFO has room; a read enqueued now is seen next
    // cycle. `RWV` offers its rows on the same port (it starts only with
    // the queue empty, and nothing is enqueued while it runs).
    let enqueue = enqueue.value();
    let enq_addr = m.wire("enq_addr", fit(fc, w_aw));
    let (engine_write, wmem_row) = wq.engine(
        m,
        16 * c,
        (wmem_wr, wmem_addr, wmem_data),
        (enqueue, enq_addr, n),
        w_ready,
    );
    m.connect(mx, mxu::ports::W_VALID, engine_write | rwv_offer.value());
    m.connect(
        mx,
        mxu::ports::W_ROW,
        mux(rwv_offer.value(), row_acc.q(), wmem_row),
    );

    // ---- Host windows, status and counters.
    m.output(HIN_EN, hin_en.value());
    m.output(HIN_ADDR, hin_addr.value());
    m.output(HOUT_WR, hout_wr.value());
    m.output(HOUT_ADDR, hout_addr.value());
    m.output(HOUT_DATA, hout_data.value());
    let error = m.reg_reset("error", Ty::BOOL, 0);
    m.set_next(error, error.q() | error_now.value());
    m.output(HALTED, halted);
    m.output(ERROR, error.q() | vpu_error);
    let in_wait = fsm.is(SeqState::Wait);
    let moving = !fsm.is(SeqState::Issue) & !in_wait & !halted;
    let classes = [
        retire.value(),
        vpu_busy,
        accept | !acc_idle,
        eup_valid.value(),
        moving,
        in_wait,
    ];
    let cnt_ty = Ty::u(COUNTER_BITS);
    for (name, class) in COUNTERS.iter().zip(classes) {
        let reg = m.reg_reset(&name.replace("_o", "_q"), cnt_ty, 0);
        let inc = m.lit(cnt_ty, 1);
        m.set_next(reg, mux(class, reg.q() + inc, reg.q()));
        m.output(name, reg.q());
    }
    for (port, reason) in [
        (
            vpu::ports::HOST_READY,
            "the mover waits for the VPU's busy_o to drop, which is what host_ready_o follows",
        ),
        (
            vpu::ports::HOST_RVALID,
            "the mover knows which cycle a read it issued returns",
        ),
        (
            vpu::ports::STORE,
            "the sequencer waits for the whole VPU (busy_o), not for its stores",
        ),
    ] {
        m.waive("UNUSEDSIGNAL", &format!("vpu_{port}"), reason);
    }
    for (port, reason) in [
        (
            mxu::ports::ACC_WR,
            "the sequencer times accumulator writes itself (acc_wait)",
        ),
        (
            mxu::ports::BUSY,
            "the sequencer times accumulator writes itself (acc_wait)",
        ),
    ] {
        m.waive("UNUSEDSIGNAL", &format!("mxu_{port}"), reason);
    }
    m.waive(
        "UNUSEDSIGNAL",
        "cur_q",
        "reserved bits and the flags an opcode does not take carry nothing",
    );
}

//! The weight engine both TensorCores share: a queue of pending weight-memory
//! reads (slot 0 the oldest) that writes one row a cycle into the MXU's
//! weight FIFO while it has room, beside the sequencer. A read enqueued in a
//! cycle is seen from the next; the weight memory is read one cycle ahead, at
//! the row the engine writes next cycle (the head read's next row, the next
//! read's first when the head ends, or the read being enqueued when the
//! queue is empty).

use hw::{bits_for, mux, Expr, ModuleBuilder, Reg, Ty};

/// The queue's registers: declared before the sequencer (which asks for
/// room and emptiness), driven by [`WeightQueue::engine`] after it.
pub struct WeightQueue {
    depth: u32,
    addr_bits: u32,
    qcount: Reg,
    q_addr: Vec<Reg>,
    q_rows: Vec<Reg>,
    /// The queue holds fewer than `depth` reads.
    pub room: Expr,
    /// The queue holds no read.
    pub empty: Expr,
}

impl WeightQueue {
    /// `depth` reads of 16-bit row counts at weight-memory addresses of
    /// `addr_bits`.
    pub fn declare(m: &mut ModuleBuilder, depth: u32, addr_bits: u32) -> WeightQueue {
        let qcount = m.reg_reset("qcount", Ty::u(bits_for(depth)), 0);
        let q_addr: Vec<_> = (0..depth)
            .map(|i| m.reg(&format!("q_addr{i}"), Ty::u(addr_bits)))
            .collect();
        let q_rows: Vec<_> = (0..depth)
            .map(|i| m.reg(&format!("q_rows{i}"), Ty::u(16)))
            .collect();
        let room = m.wire("q_room", qcount.q().is_lt(u64::from(depth)));
        let empty = m.wire("q_empty", qcount.q().is_eq(0));
        WeightQueue {
            depth,
            addr_bits,
            qcount,
            q_addr,
            q_rows,
            room,
            empty,
        }
    }

    /// The engine: the weight memory `wmem` (its host write port
    /// `host_write` = (enable, address, data)), the read `enqueue`d this
    /// cycle (`enq_addr`, `enq_rows`), the MXU's `w_ready`. Returns
    /// (`w_write`: the engine writes a row into the FIFO this cycle, the
    /// row).
    pub fn engine(
        &self,
        m: &mut ModuleBuilder,
        wmem_row_bits: u32,
        host_write: (Expr, Expr, Expr),
        (enqueue, enq_addr, enq_rows): (Expr, Expr, Expr),
        w_ready: Expr,
    ) -> (Expr, Expr) {
        let (q, w_aw) = (self.depth as usize, self.addr_bits);
        let (qcount, q_addr, q_rows) = (self.qcount, &self.q_addr, &self.q_rows);
        let w_write = m.wire("w_write", !self.empty & w_ready);
        let head_ends = m.wire("head_ends", w_write & q_rows[0].q().is_eq(1));
        let wmem = m.memory("wmem", Ty::u(wmem_row_bits), w_aw);
        m.mem_write(wmem, host_write.0, host_write.1, host_write.2);
        // The row the engine writes next cycle.
        let one_w = m.lit(Ty::u(w_aw), 1);
        let after_head = if q >= 2 {
            mux(qcount.q().is_ge(2u64), q_addr[1].q(), enq_addr)
        } else {
            enq_addr
        };
        let next_row = mux(
            w_write,
            mux(head_ends, after_head, q_addr[0].q() + one_w),
            mux(self.empty, enq_addr, q_addr[0].q()),
        );
        let w_row = m.mem_read(wmem, None, next_row);
        // Slots shift down when the head ends; the new read goes to the
        // first free slot after the shift.
        let one_q = m.lit(qcount.q().ty(), 1);
        let one16 = m.lit(Ty::u(16), 1);
        let after_pop = mux(head_ends, qcount.q() - one_q, qcount.q());
        m.set_next(qcount, mux(enqueue, after_pop + one_q, after_pop));
        for i in 0..q {
            let (cur_a, cur_r) = (q_addr[i].q(), q_rows[i].q());
            let (up_a, up_r) = if i + 1 < q {
                (q_addr[i + 1].q(), q_rows[i + 1].q())
            } else {
                (cur_a, cur_r)
            };
            let (kept_a, kept_r) = if i == 0 {
                (
                    mux(w_write, cur_a + one_w, cur_a),
                    mux(w_write, cur_r - one16, cur_r),
                )
            } else {
                (cur_a, cur_r)
            };
            let shifted_a = mux(head_ends, up_a, kept_a);
            let shifted_r = mux(head_ends, up_r, kept_r);
            let here = enqueue & after_pop.is_eq(i as u64);
            m.set_next(q_addr[i], mux(here, enq_addr, shifted_a));
            m.set_next(q_rows[i], mux(here, enq_rows, shifted_r));
        }
        (w_write, w_row)
    }
}

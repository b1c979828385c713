//! The all-reduce engine of one chip, on its router's local port, and the
//! all-reduce top: every chip a node with its engine. See the crate docs,
//! "All-reduce", for the schedule and why it cannot deadlock.

use crate::{packet_ty, COORD_BITS, PAYLOAD_BITS};
use config::TorusConfig;
use hw::blocks::{fifo, FifoMode};
use hw::{mux, Design, Expr, ModuleDef, Ty};
use std::rc::Rc;

/// Tags of the all-reduce's packets.
pub mod tags {
    /// A partial sum along X, to the next chip in X.
    pub const X: u32 = 0;
    /// A partial sum along Y (on the plane x = X - 1).
    pub const Y: u32 = 1;
    /// A partial sum along Z (on the line x = X - 1, y = Y - 1).
    pub const Z: u32 = 2;
    /// The result, broadcast.
    pub const RESULT: u32 = 3;
}

/// The window of every engine: elements a chip may have started without
/// having their result. It bounds what its receive queues can hold, and
/// covers the round trip of the largest torus at the engine's rate.
pub const WINDOW: u32 = 64;

/// The engine's Verilog name.
pub fn engine_name(cfg: &TorusConfig, window: u32) -> String {
    let [x, y, z] = cfg.dims();
    format!("torus_allreduce_{x}x{y}x{z}_w{window}")
}

/// Builds the engine for `cfg` with a window of `window` elements.
#[track_caller]
pub fn engine(design: &mut Design, cfg: &TorusConfig, window: u32) -> Rc<ModuleDef> {
    let q = fifo(design, Ty::u(PAYLOAD_BITS), window, FifoMode::Fwft);
    let adder = hw::fp::fp32_add(design, 0);
    let dims = cfg.dims();
    let cfg = *cfg;
    let params = [
        ("x", dims[0].to_string()),
        ("y", dims[1].to_string()),
        ("z", dims[2].to_string()),
        ("window", window.to_string()),
    ];
    design.define(&engine_name(&cfg, window), &params, |_, m| {
        m.doc("ICI torus all-reduce engine: chained partial sums X, Y, Z, then a broadcast");
        m.shared_code("one engine per chip, up to 64 in a torus");
        let pkt = packet_ty();
        let coord_ty = Ty::u(COORD_BITS);
        let at = [
            m.input("at_x_i", coord_ty),
            m.input("at_y_i", coord_ty),
            m.input("at_z_i", coord_ty),
        ];
        let fp = m.input("fp_i", Ty::BOOL);
        let word = Ty::u(PAYLOAD_BITS);
        let lit_c = |m: &mut hw::ModuleBuilder, v: u32| m.lit(coord_ty, u64::from(v));
        let first: Vec<Expr> = (0..3).map(|d| at[d].is_eq(lit_c(m, 0))).collect();
        let last: Vec<Expr> = (0..3).map(|d| at[d].is_eq(lit_c(m, dims[d] - 1))).collect();
        // The next coordinate up (a ring of one: the same, 0).
        let next: Vec<Expr> = (0..3)
            .map(|d| mux(last[d], lit_c(m, 0), at[d] + 1u32))
            .collect();

        // Receive queues, one per tag: the router's ejection stream is
        // always taken (the window bounds what can be in them).
        let ej_valid = m.input("ej_valid_i", Ty::BOOL);
        let ej = m.input_record("ej", &pkt);
        m.output("ej_ready_o", m.lit(Ty::BOOL, 1));
        for f in ["dx", "dy", "dz"] {
            m.waive(
                "UNUSEDSIGNAL",
                &format!("ej_{f}_i"),
                "a packet's destination is this chip",
            );
        }
        let mut heads = Vec::new();
        let mut pops = Vec::new();
        let mut alarms = Vec::new();
        let root = m.wire("root", last[0] & last[1] & last[2]);
        let root_push = m.wire_decl("root_push", Ty::BOOL);
        let root_sum = m.wire_decl("root_sum", word);
        for t in 0..4u32 {
            let inst = m.instance(&format!("q{t}"), &q);
            let from_net = ej_valid & ej.get("tag").is_eq(m.lit(Ty::u(2), u64::from(t)));
            let (push, data) = if t == tags::RESULT {
                (
                    from_net | root_push.value(),
                    mux(root_push.value(), root_sum.value(), ej.get("payload")),
                )
            } else {
                (from_net, ej.get("payload"))
            };
            m.connect(inst, "in_valid_i", push);
            m.connect(inst, "in_data_i", data);
            let space = m.inst_output(inst, "in_ready_o");
            alarms.push(push & !space);
            let valid = m.inst_output(inst, "out_valid_o");
            let head = m.inst_output(inst, "out_data_o");
            let pop = m.wire_decl(&format!("q{t}_pop"), Ty::BOOL);
            m.connect(inst, "out_ready_i", pop.value());
            m.waive(
                "UNUSEDSIGNAL",
                &format!("q{t}_count_o"),
                "the window, not the count, bounds the queue",
            );
            heads.push((valid, head));
            pops.push(pop);
        }

        // Window: elements this chip has started and not yet seen the result of.
        let wbits = hw::bits_for(u64::from(window));
        let inflight = m.reg_reset("inflight", Ty::u(wbits), 0);
        let window_ok = inflight.q().is_lt(m.lit(Ty::u(wbits), u64::from(window)));

        // ------------------------------------------------------- reduction
        let v_valid = m.input("v_valid_i", Ty::BOOL);
        let v = m.input("v_data_i", word);
        let add = |m: &mut hw::ModuleBuilder, name: &str, a: Expr, b: Expr| -> Expr {
            let inst = m.instance(name, &adder);
            m.connect(inst, "a_i", a);
            m.connect(inst, "b_i", b);
            let f = m.inst_output(inst, "sum_o");
            mux(fp, f, a + b)
        };
        let need = [
            m.wire("need_x", !first[0]),
            m.wire("need_y", last[0] & !first[1]),
            m.wire("need_z", last[0] & last[1] & !first[2]),
        ];
        // Left to right: the partial that arrived, plus this chip's term.
        let px = add(m, "add_x", heads[0].1, v);
        let px = m.wire("px", mux(need[0], px, v));
        let py = add(m, "add_y", heads[1].1, px);
        let py = m.wire("py", mux(need[1], py, px));
        let pz = add(m, "add_z", heads[2].1, py);
        let pz = m.wire("pz", mux(need[2], pz, py));
        let inputs_ok = (0..3)
            .map(|k| !need[k] | heads[k].0)
            .fold(v_valid & window_ok, |a, b| a & b);
        let red_ready = m.wire("red_ready", inputs_ok);
        // Where the partial goes: the next chip in X, else in Y, else in Z,
        // else (the root) into the result queue.
        let dest_x = [next[0], at[1], at[2]];
        let dest_y = [at[0], next[1], at[2]];
        let dest_z = [at[0], at[1], next[2]];
        let sel = |a: Expr, b: [Expr; 3], c: [Expr; 3]| -> [Expr; 3] {
            [mux(a, b[0], c[0]), mux(a, b[1], c[1]), mux(a, b[2], c[2])]
        };
        let dz_or = sel(!last[1], dest_y, dest_z);
        let red_dest = sel(!last[0], dest_x, dz_or);
        let red_tag = mux(
            !last[0],
            m.lit(Ty::u(2), u64::from(tags::X)),
            mux(
                !last[1],
                m.lit(Ty::u(2), u64::from(tags::Y)),
                m.lit(Ty::u(2), u64::from(tags::Z)),
            ),
        );
        let red_val = mux(!last[0], px, mux(!last[1], py, pz));
        let red_req = m.wire("red_req", red_ready & !root);

        // ------------------------------------------------------- broadcast
        // The result's forwards: along Z on the line x = X-1, y = Y-1, along
        // Y on the plane x = X-1, along X everywhere, each unless the next
        // chip is the one the chain started from (it has the result).
        let fwd_ok = |m: &mut hw::ModuleBuilder, d: usize| -> Expr {
            if dims[d] == 1 {
                return m.lit(Ty::BOOL, 0);
            }
            let k = dims[d];
            // next == k - 1 <=> at == k - 2 (k >= 2).
            at[d].is_ne(lit_c(m, k - 2))
        };
        let f_z = fwd_ok(m, 2);
        let f_y = fwd_ok(m, 1);
        let f_x = fwd_ok(m, 0);
        let fwd_need = [
            m.wire("fwd_z", last[0] & last[1] & f_z),
            m.wire("fwd_y", last[0] & f_y),
            m.wire("fwd_x", f_x),
        ];
        let done = m.reg_reset("fwd_done", Ty::u(3), 0);
        let (r_valid, r_head) = heads[3];
        let remaining: Vec<Expr> = (0..3)
            .map(|k| fwd_need[k] & !done.q().bit(k as u32))
            .collect();
        let bc_req = m.wire(
            "bc_req",
            r_valid & (remaining[0] | remaining[1] | remaining[2]),
        );
        // The first remaining forward: Z, then Y, then X.
        let pick_z = remaining[0];
        let pick_y = !remaining[0] & remaining[1];
        let bc_dest = sel(pick_z, dest_z, sel(pick_y, dest_y, dest_x));

        // ------------------------------------------------------- injection
        let inj_ready = m.input("inj_ready_i", Ty::BOOL);
        let bc_go = m.wire("bc_go", bc_req & inj_ready);
        let red_go = m.wire("red_go", red_req & !bc_req & inj_ready);
        let inj = pkt.pack(&[
            ("dx", mux(bc_req, bc_dest[0], red_dest[0])),
            ("dy", mux(bc_req, bc_dest[1], red_dest[1])),
            ("dz", mux(bc_req, bc_dest[2], red_dest[2])),
            (
                "tag",
                mux(bc_req, m.lit(Ty::u(2), u64::from(tags::RESULT)), red_tag),
            ),
            ("payload", mux(bc_req, r_head, red_val)),
        ]);
        m.output("inj_valid_o", bc_req | red_req);
        m.output_record("inj", &inj);

        // Reduction fires when its packet is taken (or, at the root, when
        // the result enters the result queue).
        let red_fire = m.wire("red_fire", red_go | (red_ready & root));
        m.drive(root_push, red_ready & root);
        m.drive(root_sum, pz);
        m.output("v_ready_o", red_fire);
        for k in 0..3 {
            m.drive(pops[k], red_fire & need[k]);
        }
        // The result leaves when its last forward goes (or at once).
        let granted: Vec<Expr> = [pick_z, pick_y, !pick_z & !pick_y]
            .iter()
            .map(|p| bc_go & *p)
            .collect();
        let left: Vec<Expr> = (0..3).map(|k| remaining[k] & !granted[k]).collect();
        let finish = m.wire("bc_finish", r_valid & !(left[0] | left[1] | left[2]));
        m.drive(pops[3], finish);
        let done_next = hw::cat(&[granted[2], granted[1], granted[0]]) | done.q();
        m.set_next(done, mux(finish, m.lit(Ty::u(3), 0), done_next));
        m.output("res_valid_o", finish);
        m.output("res_data_o", r_head);
        let one = m.lit(Ty::u(wbits), 1);
        let zero_w = m.lit(Ty::u(wbits), 0);
        m.set_next(
            inflight,
            inflight.q() + mux(red_fire, one, zero_w) - mux(finish, one, zero_w),
        );
        let alarm_now = alarms
            .into_iter()
            .reduce(|a, b| a | b)
            .expect("four queues");
        let alarm = m.reg_reset("alarm", Ty::BOOL, 0);
        m.set_next(alarm, alarm.q() | alarm_now);
        m.output("alarm_o", alarm.q());
    })
}

//! The router: six torus ports and a local port, per-VC input buffers and
//! credits, dimension-order routing with dateline VCs. See the crate docs
//! for the interface, the flit format and the timing.

use crate::{flit_fields, packet_ty, COORD_BITS};
use config::{TorusConfig, LOCAL_PORT, TORUS_PORTS, TORUS_VCS};
use hw::blocks::{credit_counter, fifo, round_robin_arbiter, FifoMode};
use hw::{cat, mux, Design, Expr, ModuleBuilder, ModuleDef, Ty};
use std::rc::Rc;

/// The router's Verilog name (`_p<depth>` at the end for a pipelined one).
pub fn router_name(cfg: &TorusConfig) -> String {
    let [x, y, z] = cfg.dims();
    let depth = if cfg.depth() == 0 {
        String::new()
    } else {
        format!("_p{}", cfg.depth())
    };
    let vcs = if cfg.vcs() == TORUS_VCS {
        String::new()
    } else {
        format!("_c{}", cfg.vcs())
    };
    format!("torus_router_{x}x{y}x{z}_v{}{vcs}{depth}", cfg.vc_depth())
}

/// Bits of a route stored with a buffered packet at depth 1: the output
/// port (3) above the output VC.
fn route_bits(cfg: &TorusConfig) -> u32 {
    3 + cfg.vc_bits()
}

/// What an input buffer holds: the packet, and at depth 1 its route above it.
fn entry_ty(cfg: &TorusConfig) -> Ty {
    let pkt = packet_ty().ty();
    if cfg.depth() == 0 {
        pkt
    } else {
        Ty::u(pkt.width + route_bits(cfg))
    }
}

/// Builds the router for `cfg`.
#[track_caller]
pub fn router(design: &mut Design, cfg: &TorusConfig) -> Rc<ModuleDef> {
    let pkt = packet_ty();
    let vc_fifo = fifo(design, entry_ty(cfg), cfg.vc_depth(), FifoMode::Fwft);
    let inj_fifo = fifo(
        design,
        entry_ty(cfg),
        config::TORUS_LOCAL_DEPTH,
        FifoMode::Fwft,
    );
    let local_fifo = fifo(design, pkt.ty(), config::TORUS_LOCAL_DEPTH, FifoMode::Fwft);
    let credits = credit_counter(design, cfg.vc_depth(), cfg.vc_depth());
    let requesters = 6 * cfg.vcs() + 1;
    let arb = round_robin_arbiter(design, requesters);
    let cfg = *cfg;
    let owned = cfg.params();
    let params = hw::param_refs(&owned);
    design.define(&router_name(&cfg), &params, |_, m| {
        m.doc("ICI torus router: 6 torus ports + local, 2 dateline VCs with credits, dimension-order routing");
        let fifos = Buffers {
            vc: vc_fifo,
            inj: inj_fifo,
            ej: local_fifo,
        };
        body(m, &cfg, &fifos, &credits, &arb);
    })
}

/// The output port (0..=6) and VC a head at `at` for `dest`, arrived on
/// input `in_port` (6: local) and `in_vc`, goes to.
fn route(
    m: &mut ModuleBuilder,
    cfg: &TorusConfig,
    at: [Expr; 3],
    dest: [Expr; 3],
    in_port: usize,
    in_vc: u32,
) -> (Expr, Expr) {
    let port_ty = Ty::u(3);
    let vc_ty = Ty::u(cfg.vc_bits());
    // From Z down to X, so X (the first dimension to correct) wins.
    let mut port = m.lit(port_ty, LOCAL_PORT as u64);
    let mut vc = m.lit(vc_ty, 0);
    for d in (0..3).rev() {
        let k = cfg.dims()[d];
        if k == 1 {
            continue;
        }
        let w = Ty::u(3);
        let t = dest[d].zext(3) + m.lit(w, k) - at[d].zext(3);
        let up_by = mux(t.is_ge(m.lit(w, k)), t - m.lit(w, k), t);
        let moving = up_by.is_ne(m.lit(w, 0));
        // Half way round (even rings): up from an even coordinate, down
        // from an odd one (`golden::torus::route`).
        let up = if k.is_multiple_of(2) {
            up_by.is_lt(m.lit(w, k / 2)) | (up_by.is_eq(m.lit(w, k / 2)) & !at[d].bit(0))
        } else {
            up_by.is_le(m.lit(w, k / 2))
        };
        let last = at[d].is_eq(m.lit(Ty::u(COORD_BITS), k - 1));
        let first = at[d].is_eq(m.lit(Ty::u(COORD_BITS), 0));
        let crossing = mux(up, last, first);
        let here = m.lit(port_ty, 2 * d as u64);
        let p = mux(up, here, here + 1u32);
        let same_dim = in_port != LOCAL_PORT && in_port / 2 == d;
        // The dateline class: 1 once the packet crossed this dimension's
        // wraparound link.
        let in_class = if cfg.vcs() == 4 { in_vc >> 1 } else { in_vc };
        let stay = m.lit(Ty::BOOL, u64::from(same_dim && in_class == 1));
        port = mux(moving, p, port);
        let out_vc = match cfg.vcs() {
            1 => m.lit(vc_ty, 0),
            2 => crossing | stay,
            _ => {
                // Whether the packet goes on in this dimension after the
                // hop: more than one hop left its way round.
                let goes_on = mux(
                    up,
                    up_by.is_ge(m.lit(w, 2)),
                    up_by.is_le(m.lit(w, u64::from(k).saturating_sub(2))),
                );
                cat(&[crossing | stay, goes_on])
            }
        };
        vc = mux(moving, out_vc, vc);
    }
    (port, vc)
}

/// The router's buffer modules: each torus input VC's, the injection
/// buffer (both hold routes at depth 1) and the ejection buffer.
struct Buffers {
    vc: Rc<ModuleDef>,
    inj: Rc<ModuleDef>,
    ej: Rc<ModuleDef>,
}

/// An input buffer's head: valid, packet, input port, input VC, and at
/// depth 1 the route stored with it (output port, output VC).
type Head = (Expr, Expr, usize, u32, Option<(Expr, Expr)>);

/// What a buffer takes in for `packet` arriving on `in_port` / `in_vc`: the
/// packet, and at depth 1 its route above it.
fn entry(
    m: &mut ModuleBuilder,
    cfg: &TorusConfig,
    at: [Expr; 3],
    packet: Expr,
    in_port: usize,
    in_vc: u32,
) -> Expr {
    if cfg.depth() == 0 {
        return packet;
    }
    let r = packet_ty().unpack(packet);
    let dest = [r.get("dx"), r.get("dy"), r.get("dz")];
    let (port, vc) = route(m, cfg, at, dest, in_port, in_vc);
    cat(&[port, vc, packet])
}

/// A buffer's head from its `out_data_o`: the packet, and at depth 1 the
/// route stored above it.
fn head_of(cfg: &TorusConfig, out: Expr) -> (Expr, Option<(Expr, Expr)>) {
    let w = packet_ty().ty().width;
    if cfg.depth() == 0 {
        return (out, None);
    }
    let vc_bits = cfg.vc_bits();
    let vc = if vc_bits == 1 {
        out.bit(w)
    } else {
        out.slice(w, vc_bits)
    };
    (out.slice(0, w), Some((out.slice(w + vc_bits, 3), vc)))
}

fn body(
    m: &mut ModuleBuilder,
    cfg: &TorusConfig,
    fifos: &Buffers,
    credit_def: &Rc<ModuleDef>,
    arb_def: &Rc<ModuleDef>,
) {
    let (vc_fifo, local_fifo) = (&fifos.vc, &fifos.ej);
    let pkt = packet_ty();
    let flit = flit_fields(cfg);
    let cb = cfg.credit_bits();
    let vcs = cfg.vcs() as usize;
    let vc_ty = Ty::u(cfg.vc_bits());
    let coord_ty = Ty::u(COORD_BITS);
    let at = [
        m.input("at_x_i", coord_ty),
        m.input("at_y_i", coord_ty),
        m.input("at_z_i", coord_ty),
    ];
    for (d, axis) in ["x", "y", "z"].iter().enumerate() {
        if cfg.dims()[d] == 1 {
            m.waive(
                "UNUSEDSIGNAL",
                &format!("at_{axis}_i"),
                "a ring of one: nothing is routed in this dimension",
            );
        }
    }

    // ---------------------------------------------------------- torus ports
    // Heads of every input buffer.
    let mut heads: Vec<Head> = Vec::new();
    let mut pops: Vec<hw::Wire> = Vec::new();
    let mut returned: Vec<Vec<Expr>> = Vec::new();
    let mut alarms: Vec<Expr> = Vec::new();
    let mut tx_ready = Vec::new();
    for (p, name) in TORUS_PORTS[..6].iter().enumerate() {
        let rx_valid = m.input(&format!("{name}_rx_valid_i"), Ty::BOOL);
        let rx_data = m.input(&format!("{name}_rx_data_i"), Ty::u(64));
        tx_ready.push(m.input(&format!("{name}_tx_ready_i"), Ty::BOOL));
        let f = flit.unpack(rx_data.slice(0, flit.width()));
        m.waive(
            "UNUSEDSIGNAL",
            &format!("{name}_rx_data_i"),
            "the flit's padding above its fields carries nothing",
        );
        let is_data = rx_valid & f.get("data");
        let mut ret = Vec::new();
        for v in 0..vcs {
            let inst = m.instance(&format!("{name}_vc{v}_buf"), vc_fifo);
            let vc_match = match (cfg.vc_bits(), v) {
                (1, 0) => !f.get("vc"),
                (1, _) => f.get("vc"),
                _ => f.get("vc").is_eq(m.lit(vc_ty, v as u64)),
            };
            let push = m.wire(&format!("{name}_vc{v}_push"), is_data & vc_match);
            m.connect(inst, "in_valid_i", push);
            let stored = entry(m, cfg, at, f.get("packet"), p, v as u32);
            m.connect(inst, "in_data_i", stored);
            let in_ready = m.inst_output(inst, "in_ready_o");
            alarms.push(push & !in_ready);
            let valid = m.inst_output(inst, "out_valid_o");
            let data = m.inst_output(inst, "out_data_o");
            let pop = m.wire_decl(&format!("{name}_vc{v}_pop"), Ty::BOOL);
            m.connect(inst, "out_ready_i", pop.value());
            m.waive(
                "UNUSEDSIGNAL",
                &format!("{name}_vc{v}_buf_count_o"),
                "credits, not the buffer's count, bound what arrives",
            );
            let (data, route) = head_of(cfg, data);
            heads.push((valid, data, p, v as u32, route));
            pops.push(pop);
            let r = f.get(&format!("credit{v}"));
            ret.push(mux(rx_valid, r, r.lit(0)));
        }
        returned.push(ret);
    }
    // Local injection.
    let inj = m.stream_input("inj", &pkt);
    let inj_fifo = m.instance("inj_buf", &fifos.inj);
    m.connect(inj_fifo, "in_valid_i", inj.stream.valid);
    let stored = entry(m, cfg, at, inj.stream.data.bits(), LOCAL_PORT, 0);
    m.connect(inj_fifo, "in_data_i", stored);
    let inj_ready = m.inst_output(inj_fifo, "in_ready_o");
    m.drive(inj.ready, inj_ready);
    let inj_valid = m.inst_output(inj_fifo, "out_valid_o");
    let inj_data = m.inst_output(inj_fifo, "out_data_o");
    let inj_pop = m.wire_decl("inj_pop", Ty::BOOL);
    m.connect(inj_fifo, "out_ready_i", inj_pop.value());
    m.waive(
        "UNUSEDSIGNAL",
        "inj_buf_count_o",
        "the injection stream's handshake is enough",
    );
    let (inj_data, inj_route) = head_of(cfg, inj_data);
    heads.push((inj_valid, inj_data, LOCAL_PORT, 0, inj_route));
    pops.push(inj_pop);

    // Local ejection buffer.
    let ej_fifo = m.instance("ej_buf", local_fifo);
    let ej_space = m.inst_output(ej_fifo, "in_ready_o");
    m.waive(
        "UNUSEDSIGNAL",
        "ej_buf_count_o",
        "the ejection stream's handshake is enough",
    );

    // ------------------------------------------------------ route and VCs
    let mut routes = Vec::new();
    for (h, (_, data, in_port, in_vc, stored)) in heads.iter().enumerate() {
        let (port, vc) = match stored {
            Some(route) => *route,
            None => {
                let r = pkt.unpack(*data);
                let dest = [r.get("dx"), r.get("dy"), r.get("dz")];
                route(m, cfg, at, dest, *in_port, *in_vc)
            }
        };
        let port = m.wire(&format!("h{h}_out_port"), port);
        let vc = m.wire(&format!("h{h}_out_vc"), vc);
        routes.push((port, vc));
    }

    // ------------------------------------------- credits of every output VC
    let mut can_send: Vec<Vec<Expr>> = Vec::new();
    let mut sends: Vec<Vec<hw::Wire>> = Vec::new();
    for (p, name) in TORUS_PORTS[..6].iter().enumerate() {
        let mut cs = Vec::new();
        let mut ss = Vec::new();
        for (v, ret) in returned[p].iter().enumerate() {
            let inst = m.instance(&format!("{name}_vc{v}_credits"), credit_def);
            let send = m.wire_decl(&format!("{name}_vc{v}_send"), Ty::BOOL);
            m.connect(inst, "send_i", send.value());
            m.connect(inst, "return_i", *ret);
            cs.push(m.inst_output(inst, "can_send_o"));
            alarms.push(m.inst_output(inst, "error_o"));
            m.waive(
                "UNUSEDSIGNAL",
                &format!("{name}_vc{v}_credits_credits_o"),
                "only whether a credit is left matters",
            );
            ss.push(send);
        }
        can_send.push(cs);
        sends.push(ss);
    }

    // ------------------------------------------ switch allocation per output
    let n_req = heads.len() as u32;
    let mut granted_by: Vec<Vec<Expr>> = vec![Vec::new(); heads.len()];
    let mut out_flits = Vec::new();
    for o in 0..=LOCAL_PORT {
        let oname = TORUS_PORTS[o];
        let mut reqs = Vec::new();
        for (h, (valid, _, _, _, _)) in heads.iter().enumerate() {
            let (port, vc) = routes[h];
            let wants = *valid & port.is_eq(m.lit(Ty::u(3), o as u64));
            let ok = if o == LOCAL_PORT {
                ej_space
            } else {
                let credit = match vcs {
                    1 => can_send[o][0],
                    2 => mux(vc, can_send[o][1], can_send[o][0]),
                    _ => (1..vcs).fold(can_send[o][0], |c, v| {
                        mux(vc.is_eq(m.lit(vc_ty, v as u64)), can_send[o][v], c)
                    }),
                };
                tx_ready[o] & credit
            };
            reqs.push(wants & ok);
        }
        let req = m.wire(
            &format!("{oname}_req"),
            cat(&reqs.iter().rev().copied().collect::<Vec<_>>()),
        );
        let inst = m.instance(&format!("{oname}_arb"), arb_def);
        m.connect(inst, "req_i", req);
        let grant = m.inst_output(inst, "grant_o");
        let grant = m.wire(&format!("{oname}_grant"), grant);
        let mut sel_pkt = m.lit(pkt.ty(), 0);
        let mut sel_vc = m.lit(vc_ty, 0);
        for (h, (_, data, _, _, _)) in heads.iter().enumerate() {
            let g = grant.bit(h as u32);
            granted_by[h].push(g);
            sel_pkt = sel_pkt | mux(g, *data, data.lit(0));
            sel_vc = if vc_ty.width == 1 {
                sel_vc | (g & routes[h].1)
            } else {
                sel_vc | mux(g, routes[h].1, routes[h].1.lit(0))
            };
        }
        debug_assert_eq!(n_req, heads.len() as u32);
        let any = m.wire(&format!("{oname}_granted"), grant.any());
        out_flits.push((any, sel_pkt, sel_vc));
    }
    for (h, pop) in pops.iter().enumerate() {
        let any = granted_by[h]
            .iter()
            .copied()
            .reduce(|a, b| a | b)
            .expect("seven outputs");
        m.drive(*pop, any);
    }

    // ---------------------------------------------------- the torus outputs
    for (p, name) in TORUS_PORTS[..6].iter().enumerate() {
        let (any, sel_pkt, sel_vc) = out_flits[p];
        for (v, send) in sends[p].iter().enumerate() {
            let on_vc = match (vcs, v) {
                (1, _) => m.lit(Ty::BOOL, 1),
                (2, 0) => !sel_vc,
                (2, _) => sel_vc,
                _ => sel_vc.is_eq(m.lit(vc_ty, v as u64)),
            };
            m.drive(*send, any & on_vc);
        }
        // Credits owed to the neighbour on this port: slots of this port's
        // input buffers freed and not yet returned. Every flit sent carries
        // all of them; a flit of credits alone goes when nothing else does.
        let mut owed = Vec::new();
        let mut pending_any = m.lit(Ty::BOOL, 0);
        let mut regs = Vec::new();
        for v in 0..vcs {
            let r = m.reg_reset(&format!("{name}_vc{v}_owed"), Ty::u(cb), 0);
            owed.push(r.q());
            pending_any = pending_any | r.q().is_ne(0u32);
            regs.push(r);
        }
        let credit_only = m.wire(
            &format!("{name}_credit_only"),
            !any & pending_any & tx_ready[p],
        );
        let valid = m.wire(&format!("{name}_tx_valid"), any | credit_only);
        let sent = valid & tx_ready[p];
        for (v, r) in regs.iter().enumerate() {
            let popped = pops[p * vcs + v].value().zext(cb);
            m.set_next(*r, mux(sent, popped, r.q() + popped));
        }
        let credit_names: Vec<String> = (0..vcs).map(|v| format!("credit{v}")).collect();
        let mut fields = vec![("data", any), ("vc", sel_vc), ("packet", sel_pkt)];
        fields.extend(
            credit_names
                .iter()
                .map(|n| n.as_str())
                .zip(owed.iter().copied()),
        );
        let word = flit.pack(&fields);
        m.output(&format!("{name}_tx_valid_o"), valid);
        m.output(&format!("{name}_tx_data_o"), word.bits().zext(64));
    }
    // Ejection.
    let (ej_any, ej_pkt, _) = out_flits[LOCAL_PORT];
    m.connect(ej_fifo, "in_valid_i", ej_any);
    m.connect(ej_fifo, "in_data_i", ej_pkt);
    let ej_ready = m.input("ej_ready_i", Ty::BOOL);
    m.connect(ej_fifo, "out_ready_i", ej_ready);
    let ej_valid = m.inst_output(ej_fifo, "out_valid_o");
    let ej_data = m.inst_output(ej_fifo, "out_data_o");
    m.output("ej_valid_o", ej_valid);
    m.output_record("ej", &pkt.unpack(ej_data));

    // A buffer pushed while full, or a credit counter over- or underflowing:
    // sticky, never set in a correct design.
    let alarm_now = alarms.into_iter().reduce(|a, b| a | b).expect("alarms");
    let alarm = m.reg_reset("alarm", Ty::BOOL, 0);
    m.set_next(alarm, alarm.q() | alarm_now);
    m.output("alarm_o", alarm.q());
}

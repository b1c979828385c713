//! A chip node (the router joined to six ICI link ends) and the torus top
//! (the nodes joined through serdes stubs, cabled by a wiring).

use crate::router::{router, router_name};
use config::{TorusConfig, Wiring, TORUS_PORTS};
use hw::{mux, Design, Dir, ModuleDef, Ty};
use ici::link::{link, ports as lp};
use ici_serdes_stub::{ports as sp, serdes_stub};
use std::rc::Rc;

/// The node's Verilog name.
pub fn node_name(cfg: &TorusConfig) -> String {
    router_name(cfg).replace("torus_router_", "torus_node_")
}

/// The link-end counters a node sums over its six ports, by output name.
pub const NODE_COUNTERS: [(&str, &str); 3] = [
    ("crc_errors_o", "crc_errors_o"),
    ("retransmits_o", "retransmits_o"),
    ("link_downs_o", "link_downs_o"),
];

/// Builds a chip node: the router, and on each torus port a link end whose
/// client side is the router's port and whose lanes are the node's
/// `<port>_ser_*` / `<port>_des_*` ports.
#[track_caller]
pub fn node(design: &mut Design, cfg: &TorusConfig) -> Rc<ModuleDef> {
    let router_def = router(design, cfg);
    let link_def = link(design, cfg.link());
    let cfg = *cfg;
    let params: Vec<(String, String)> = cfg.params();
    let params: Vec<(&str, String)> = params
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect();
    design.define(&node_name(&cfg), &params, |_, m| {
        m.doc("ICI torus chip node: a router and six ICI link ends, shared with an all-reduce engine");
        m.shared_code("one node per chip, up to 64 in a torus: one copy of its code keeps the model's build time and cache footprint those of one chip");
        let coord_ty = Ty::u(crate::COORD_BITS);
        let r = m.instance("router", &router_def);
        for axis in ["x", "y", "z"] {
            let c = m.input(&format!("at_{axis}_i"), coord_ty);
            m.connect(r, &format!("at_{axis}_i"), c);
        }
        let frame = Ty::u(cfg.link().frame_bits());
        let link_len = Ty::u(cfg.link().len_bits());
        let mut sums: Vec<Option<hw::Expr>> = vec![None; NODE_COUNTERS.len()];
        let mut alarms = Vec::new();
        let mut ups = Vec::new();
        for name in &TORUS_PORTS[..6] {
            let l = m.instance(&format!("link_{name}"), &link_def);
            // Router and all-reduce engine -> link: the engine's flits with
            // data first, then the router's, then the engine's credits
            // alone.
            let valid = m.inst_output(r, &format!("{name}_tx_valid_o"));
            let data = m.inst_output(r, &format!("{name}_tx_data_o"));
            let e_valid = m.input(&format!("{name}_etx_valid_i"), Ty::BOOL);
            let e_data = m.input(&format!("{name}_etx_data_i"), Ty::u(64));
            let e_first = m.wire(&format!("{name}_engine_first"), e_valid & e_data.bit(0));
            let e_goes = m.wire(&format!("{name}_engine_goes"), e_first | !valid);
            m.connect(l, "tx_valid_i", e_valid | valid);
            m.connect(l, "tx_data_i", mux(e_goes, e_data, data));
            m.connect(l, "tx_last_i", m.lit(Ty::BOOL, 1));
            m.connect(
                l,
                "tx_len_i",
                m.lit(link_len, u64::from(cfg.link().flit_bytes() - 1)),
            );
            let ready = m.inst_output(l, "tx_ready_o");
            m.connect(r, &format!("{name}_tx_ready_i"), ready & !e_first);
            m.output(&format!("{name}_etx_ready_o"), ready & e_goes);
            // Link -> router or engine, by the engine's flag bit: always
            // taken (credits guarantee the space).
            let rv = m.inst_output(l, "rx_valid_o");
            let rd = m.inst_output(l, "rx_data_o");
            let engine_flit = rd.bit(crate::allreduce_v2::ENGINE_FLIT_BIT);
            m.connect(r, &format!("{name}_rx_valid_i"), rv & !engine_flit);
            m.connect(r, &format!("{name}_rx_data_i"), rd);
            m.output(&format!("{name}_erx_valid_o"), rv & engine_flit);
            m.output(&format!("{name}_erx_data_o"), rd);
            m.connect(l, "rx_ready_i", m.lit(Ty::BOOL, 1));
            // Lanes.
            let ser = m.inst_output(l, lp::SER_WORD);
            m.output(&format!("{name}_ser_word_o"), ser);
            let ser_ready = m.input(&format!("{name}_ser_ready_i"), Ty::BOOL);
            m.connect(l, lp::SER_READY, ser_ready);
            let des_valid = m.input(&format!("{name}_des_valid_i"), Ty::BOOL);
            let des_word = m.input(&format!("{name}_des_word_i"), frame);
            m.connect(l, lp::DES_VALID, des_valid);
            m.connect(l, lp::DES_WORD, des_word);
            for (k, (port, _)) in NODE_COUNTERS.iter().enumerate() {
                let v = m.inst_output(l, port);
                sums[k] = Some(match sums[k] {
                    Some(s) => s + v,
                    None => v,
                });
            }
            alarms.push(m.inst_output(l, lp::RX_OVERFLOW));
            alarms.push(m.inst_output(l, lp::CREDIT_ERROR));
            ups.push(m.inst_output(l, lp::LINK_UP));
            // What the node does not use of the link end.
            for (port, dir, _) in link_def.port_list() {
                let used = [
                    "tx_ready_o",
                    "rx_valid_o",
                    "rx_data_o",
                    lp::SER_WORD,
                    lp::RX_OVERFLOW,
                    lp::CREDIT_ERROR,
                    lp::LINK_UP,
                ]
                .contains(&port.as_str())
                    || NODE_COUNTERS.iter().any(|(p, _)| *p == port);
                if dir == Dir::Out && !used {
                    m.waive(
                        "UNUSEDSIGNAL",
                        &format!("link_{name}_{port}"),
                        "status the node does not report (every flit is one packet)",
                    );
                }
            }
        }
        for ((_, out), s) in NODE_COUNTERS.iter().zip(sums) {
            m.output(out, s.expect("six links"));
        }
        let ra = m.inst_output(r, "alarm_o");
        let alarm = alarms.into_iter().fold(ra, |a, b| a | b);
        m.output("alarm_o", alarm);
        let all_up = ups.into_iter().reduce(|a, b| a & b).expect("six links");
        m.output("links_up_o", all_up);
        // The local port.
        let pkt = crate::packet_ty();
        let inj = m.stream_input("inj", &pkt);
        let ready = m.connect_stream(r, "inj", &inj.stream);
        m.drive(inj.ready, ready);
        let ej_ready = m.input("ej_ready_i", Ty::BOOL);
        let ej = m.inst_stream(r, "ej", &pkt, ej_ready);
        m.output("ej_valid_o", ej.valid);
        m.output_record("ej", &ej.data);
    })
}

/// The torus top's Verilog name.
pub fn top_name(cfg: &TorusConfig, wiring: &Wiring) -> String {
    let base = router_name(cfg).replace("torus_router_", "torus_top_");
    if wiring.is_identity() {
        base
    } else {
        // A short fingerprint of the permutation.
        let h = wiring
            .table()
            .iter()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, &p| {
                (h ^ p as u64).wrapping_mul(0x0100_0000_01b3)
            });
        format!("{base}_w{:08x}", h as u32)
    }
}

/// What stub k's seed is XORed with: k times this constant.
pub const STUB_SEED_STEP: u64 = 0x9e37_79b9_7f4a_7c15;

/// The serdes stub of a torus link, wrapped so that Verilator models keep
/// one copy of its code for the six per chip (384 on a 4x4x4 torus).
fn shared_stub(design: &mut Design, cfg: &TorusConfig) -> Rc<ModuleDef> {
    let (width, latency) = (cfg.link().frame_bits(), cfg.link().latency());
    let stub_def = serdes_stub(design, width, latency);
    let params = [
        ("width", width.to_string()),
        ("latency", latency.to_string()),
    ];
    let params: Vec<(&str, String)> = params.iter().map(|(k, v)| (*k, v.clone())).collect();
    design.define(
        &format!("torus_stub_w{width}_l{latency}"),
        &params,
        |_, m| {
            m.doc("A torus link's serdes stub, as one module for simulation models to share");
            m.shared_code("six stubs per chip, up to 384 in a torus");
            let st = m.instance("stub", &stub_def);
            m.expose_ports(st, &stub_def, str::to_string);
        },
    )
}

/// Builds the torus: physical chip p is instance `chip<p>` and sits at the
/// logical coordinates the wiring gives it; each of its torus ports is
/// joined to the neighbour's opposite port by two serdes stubs (one per
/// direction). Every chip has an order-v2 all-reduce engine (instance
/// `ar<p>`, [`crate::allreduce_v2::chip`]) on its node's links beside the
/// router.
///
/// Per physical chip p: the host's packets `c<p>_inj_*` and `c<p>_ej_*`
/// (streams), the engine's lanes `c<p>_v<l>_*` (elements in, l = 0..3) and
/// `c<p>_r<l>_*` (results out with their index, no back-pressure). `fp_i`
/// selects fp32 (1) or int32 (0) sums.
#[track_caller]
pub fn top(design: &mut Design, cfg: &TorusConfig, wiring: &Wiring) -> Rc<ModuleDef> {
    let node_def = node(design, cfg);
    let engine_def = crate::allreduce_v2::chip(design, cfg, &config::AllreduceV2::DEFAULT);
    let stub_def = shared_stub(design, cfg);
    let cfg = *cfg;
    let wiring = wiring.clone();
    let mut params: Vec<(String, String)> = cfg.params();
    params.push(("wiring".into(), format!("{:?}", wiring.table())));
    let params: Vec<(&str, String)> = params
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect();
    design.define(&top_name(&cfg, &wiring), &params, |_, m| {
        m.doc("ICI torus: chip nodes with all-reduce engines, joined by serdes stubs, cabled by a wiring");
        let n = cfg.chips();
        let seed = m.input("seed_i", Ty::u(64));
        let seed_load = m.input("seed_load_i", Ty::BOOL);
        let thr_ty = Ty::u(ici_serdes_stub::DRAW_WIDTH);
        let flip_thr = m.input("flip_threshold_i", thr_ty);
        let drop_thr = m.input("drop_threshold_i", thr_ty);
        let dup_thr = m.input("dup_threshold_i", thr_ty);
        let frame = Ty::u(cfg.link().frame_bits());
        let coord_ty = Ty::u(crate::COORD_BITS);
        // Instances by physical chip.
        let nodes: Vec<hw::Inst> = (0..n)
            .map(|p| m.instance(&format!("chip{p}"), &node_def))
            .collect();
        let pkt = crate::packet_ty();
        let fp = m.input("fp_i", Ty::BOOL);
        let mut sums: Vec<Option<hw::Expr>> = vec![None; NODE_COUNTERS.len()];
        let mut alarm = m.lit(Ty::BOOL, 0);
        let mut up = m.lit(Ty::BOOL, 1);
        let mut stub_words = None;
        let mut corrupted = None;
        for (p, &inst) in nodes.iter().enumerate() {
            let c = wiring.logical_of(p);
            let at = cfg.coords(c);
            for (axis, v) in ["x", "y", "z"].iter().zip(at) {
                m.connect(inst, &format!("at_{axis}_i"), m.lit(coord_ty, u64::from(v)));
            }
            let e = m.instance(&format!("ar{p}"), &engine_def);
            for (axis, v) in ["x", "y", "z"].iter().zip(at) {
                m.connect(e, &format!("at_{axis}_i"), m.lit(coord_ty, u64::from(v)));
            }
            m.connect(e, "fp_i", fp);
            // The host's packets.
            let inj = m.stream_input(&format!("c{p}_inj"), &pkt);
            let ready = m.connect_stream(inst, "inj", &inj.stream);
            m.drive(inj.ready, ready);
            let h_ready = m.input(&format!("c{p}_ej_ready_i"), Ty::BOOL);
            let ej = m.inst_stream(inst, "ej", &pkt, h_ready);
            m.output(&format!("c{p}_ej_valid_o"), ej.valid);
            m.output_record(&format!("c{p}_ej"), &ej.data);
            // The engine on the node's links.
            for name in &TORUS_PORTS[..6] {
                for (from, to) in [("tx_valid_o", "etx_valid_i"), ("tx_data_o", "etx_data_i")] {
                    let v = m.inst_output(e, &format!("{name}_{from}"));
                    m.connect(inst, &format!("{name}_{to}"), v);
                }
                let v = m.inst_output(inst, &format!("{name}_etx_ready_o"));
                m.connect(e, &format!("{name}_tx_ready_i"), v);
                for (from, to) in [("erx_valid_o", "rx_valid_i"), ("erx_data_o", "rx_data_i")] {
                    let v = m.inst_output(inst, &format!("{name}_{from}"));
                    m.connect(e, &format!("{name}_{to}"), v);
                }
            }
            // The engine's lanes.
            crate::allreduce_v2::expose_lanes(m, e, |port| format!("c{p}_{port}"));
            alarm = alarm | m.inst_output(e, "alarm_o");
            for (k, (_, out)) in NODE_COUNTERS.iter().enumerate() {
                let v = m.inst_output(inst, out);
                sums[k] = Some(match sums[k] {
                    Some(s) => s + v,
                    None => v,
                });
            }
            alarm = alarm | m.inst_output(inst, "alarm_o");
            up = up & m.inst_output(inst, "links_up_o");
        }
        // Stubs: one per (chip, torus port), carrying that port's words to
        // the neighbour's opposite port.
        let mut k = 0u64;
        for c in 0..n {
            let at = cfg.coords(c);
            let from = nodes[wiring.chip_at(c)];
            for (port, name) in TORUS_PORTS[..6].iter().enumerate() {
                let to = nodes[wiring.chip_at(cfg.chip(cfg.neighbour(at, port)))];
                let peer = TORUS_PORTS[port ^ 1];
                let st = m.instance(&format!("stub_c{c}_{name}"), &stub_def);
                let word = m.inst_output(from, &format!("{name}_ser_word_o"));
                m.connect(st, sp::IN_WORD, word);
                let ready = m.inst_output(st, sp::IN_READY);
                m.connect(from, &format!("{name}_ser_ready_i"), ready);
                let valid = m.inst_output(st, sp::OUT_VALID);
                let out = m.inst_output(st, sp::OUT_WORD);
                m.connect(to, &format!("{peer}_des_valid_i"), valid);
                m.connect(to, &format!("{peer}_des_word_i"), out);
                let this_seed = seed ^ m.lit(Ty::u(64), k.wrapping_mul(STUB_SEED_STEP));
                m.connect(st, sp::SEED, this_seed);
                m.connect(st, sp::SEED_LOAD, seed_load);
                m.connect(st, sp::FLIP_THRESHOLD, flip_thr);
                m.connect(st, sp::DROP_THRESHOLD, drop_thr);
                m.connect(st, sp::DUP_THRESHOLD, dup_thr);
                m.connect(st, sp::FORCE_FLIP, m.lit(frame, 0));
                m.connect(st, sp::FORCE_DROP, m.lit(Ty::BOOL, 0));
                m.connect(st, sp::FORCE_DUP, m.lit(Ty::BOOL, 0));
                let w = m.inst_output(st, sp::WORDS);
                stub_words = Some(match stub_words {
                    Some(s) => s + w,
                    None => w,
                });
                let cw = m.inst_output(st, sp::CORRUPTED);
                corrupted = Some(match corrupted {
                    Some(s) => s + cw,
                    None => cw,
                });
                for port in [sp::DROPPED, sp::DUPLICATED] {
                    m.waive(
                        "UNUSEDSIGNAL",
                        &format!("stub_c{c}_{name}_{port}"),
                        "the top reports corrupted words and word slots only",
                    );
                }
                k += 1;
            }
        }
        for ((_, out), s) in NODE_COUNTERS.iter().zip(sums) {
            m.output(out, s.expect("a chip"));
        }
        m.output("corrupted_o", corrupted.expect("a stub"));
        m.output("stub_words_o", stub_words.expect("a stub"));
        m.output("alarm_o", alarm);
        m.output("links_up_o", up);
    })
}

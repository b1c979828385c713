//! A chip node (the router joined to six ICI link ends) and the torus top
//! (the nodes joined through serdes stubs, cabled by a wiring).

use crate::router::{router, router_name};
use config::{TorusConfig, Wiring, TORUS_PORTS};
use hw::{mux, Design, Dir, Expr, ModuleDef, Ty};
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
    let owned = cfg.params();
    let params = hw::param_refs(&owned);
    design.define(&node_name(&cfg), &params, |_, m| {
        m.doc(
            "ICI torus chip node: a router and six ICI link ends, shared with an all-reduce engine",
        );
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

/// The Verilog name of one chip of the torus top: its node, its engine and
/// the stubs of its outgoing links.
pub fn chip_unit_name(cfg: &TorusConfig) -> String {
    router_name(cfg).replace("torus_router_", "torus_chip_")
}

/// One chip of the torus top: its node, its all-reduce engine on the
/// node's links beside the router ([`crate::allreduce_v2::chip`]) and the
/// serdes stubs of its six outgoing links, kept as one module so that
/// Verilator models hold one copy of the chip's code for all chips and the
/// top joins the chips with a few words per link.
///
/// Ports: the node's coordinates, packet streams (`inj`, `ej`) and
/// counters; the engine's `fp_i` and lanes; per torus port `<port>`, the
/// stub's seed `<port>_seed_i`, its output `<port>_out_valid_o`,
/// `<port>_out_word_o` (to the neighbour) and the neighbour's stub output
/// `<port>_des_valid_i`, `<port>_des_word_i`; the stubs' `seed_load_i` and
/// thresholds; `stub_words_o` and `corrupted_o`, the six stubs' sums.
#[track_caller]
pub fn chip(design: &mut Design, cfg: &TorusConfig) -> Rc<ModuleDef> {
    chip_with_stub_latency(design, cfg, cfg.link().latency())
}

/// [`chip`] with stubs of `stub_latency` (>= 1) cycles instead of the
/// link's latency, named with a `_s<stub_latency>` suffix when they differ:
/// for a simulator that adds the missing cycles between chips itself
/// (`sim::drivers::torus` registers each neighbour's word once, so it builds
/// the chip with stubs one cycle shorter).
#[track_caller]
pub fn chip_with_stub_latency(
    design: &mut Design,
    cfg: &TorusConfig,
    stub_latency: u32,
) -> Rc<ModuleDef> {
    let node_def = node(design, cfg);
    let engine_def = crate::allreduce_v2::chip(design, cfg, &config::AllreduceV2::DEFAULT);
    let width = cfg.link().frame_bits();
    let stub_def = serdes_stub(design, width, stub_latency);
    let cfg = *cfg;
    let mut owned = cfg.params();
    let mut name = chip_unit_name(&cfg);
    if stub_latency != cfg.link().latency() {
        owned.push(("stub_latency".into(), stub_latency.to_string()));
        name = format!("{name}_s{stub_latency}");
    }
    let params = hw::param_refs(&owned);
    design.define(&name, &params, |_, m| {
        m.doc("ICI torus chip: a node, its all-reduce engine and the serdes stubs of its outgoing links");
        m.shared_code("one chip per torus position, up to 64 in a torus: one copy of its code keeps the model's build time and cache footprint those of one chip");
        let coord_ty = Ty::u(crate::COORD_BITS);
        let frame = Ty::u(cfg.link().frame_bits());
        let thr_ty = Ty::u(ici_serdes_stub::DRAW_WIDTH);
        let node = m.instance("node", &node_def);
        let e = m.instance("ar", &engine_def);
        for axis in ["x", "y", "z"] {
            let c = m.input(&format!("at_{axis}_i"), coord_ty);
            m.connect(node, &format!("at_{axis}_i"), c);
            m.connect(e, &format!("at_{axis}_i"), c);
        }
        let fp = m.input("fp_i", Ty::BOOL);
        m.connect(e, "fp_i", fp);
        let pkt = crate::packet_ty();
        let inj = m.stream_input("inj", &pkt);
        let ready = m.connect_stream(node, "inj", &inj.stream);
        m.drive(inj.ready, ready);
        let ej_ready = m.input("ej_ready_i", Ty::BOOL);
        let ej = m.inst_stream(node, "ej", &pkt, ej_ready);
        m.output("ej_valid_o", ej.valid);
        m.output_record("ej", &ej.data);
        crate::allreduce_v2::expose_lanes(m, e, str::to_string);
        let seed_load = m.input(sp::SEED_LOAD, Ty::BOOL);
        let flip_thr = m.input(sp::FLIP_THRESHOLD, thr_ty);
        let drop_thr = m.input(sp::DROP_THRESHOLD, thr_ty);
        let dup_thr = m.input(sp::DUP_THRESHOLD, thr_ty);
        let (mut stub_words, mut corrupted) = (Vec::new(), Vec::new());
        for name in &TORUS_PORTS[..6] {
            for (from, to) in [("tx_valid_o", "etx_valid_i"), ("tx_data_o", "etx_data_i")] {
                let v = m.inst_output(e, &format!("{name}_{from}"));
                m.connect(node, &format!("{name}_{to}"), v);
            }
            let v = m.inst_output(node, &format!("{name}_etx_ready_o"));
            m.connect(e, &format!("{name}_tx_ready_i"), v);
            for (from, to) in [("erx_valid_o", "rx_valid_i"), ("erx_data_o", "rx_data_i")] {
                let v = m.inst_output(node, &format!("{name}_{from}"));
                m.connect(e, &format!("{name}_{to}"), v);
            }
            // The stub of the link going out on this port.
            let st = m.instance(&format!("stub_{name}"), &stub_def);
            let word = m.inst_output(node, &format!("{name}_ser_word_o"));
            m.connect(st, sp::IN_WORD, word);
            let ready = m.inst_output(st, sp::IN_READY);
            m.connect(node, &format!("{name}_ser_ready_i"), ready);
            let valid = m.inst_output(st, sp::OUT_VALID);
            let out = m.inst_output(st, sp::OUT_WORD);
            m.output(&format!("{name}_out_valid_o"), valid);
            m.output(&format!("{name}_out_word_o"), out);
            let seed = m.input(&format!("{name}_seed_i"), Ty::u(64));
            m.connect(st, sp::SEED, seed);
            m.connect(st, sp::SEED_LOAD, seed_load);
            m.connect(st, sp::FLIP_THRESHOLD, flip_thr);
            m.connect(st, sp::DROP_THRESHOLD, drop_thr);
            m.connect(st, sp::DUP_THRESHOLD, dup_thr);
            m.connect(st, sp::FORCE_FLIP, m.lit(frame, 0));
            m.connect(st, sp::FORCE_DROP, m.lit(Ty::BOOL, 0));
            m.connect(st, sp::FORCE_DUP, m.lit(Ty::BOOL, 0));
            // The link coming in on this port, from the neighbour's stub.
            let des_valid = m.input(&format!("{name}_des_valid_i"), Ty::BOOL);
            let des_word = m.input(&format!("{name}_des_word_i"), frame);
            m.connect(node, &format!("{name}_des_valid_i"), des_valid);
            m.connect(node, &format!("{name}_des_word_i"), des_word);
            stub_words.push(m.inst_output(st, sp::WORDS));
            corrupted.push(m.inst_output(st, sp::CORRUPTED));
            for port in [sp::DROPPED, sp::DUPLICATED] {
                m.waive(
                    "UNUSEDSIGNAL",
                    &format!("stub_{name}_{port}"),
                    "the top reports corrupted words and word slots only",
                );
            }
        }
        for (_, out) in NODE_COUNTERS {
            let v = m.inst_output(node, out);
            m.output(out, v);
        }
        let sum = |v: Vec<Expr>| v.into_iter().reduce(|a, b| a + b).expect("six stubs");
        m.output("stub_words_o", sum(stub_words));
        m.output("corrupted_o", sum(corrupted));
        let alarm = m.inst_output(e, "alarm_o") | m.inst_output(node, "alarm_o");
        m.output("alarm_o", alarm);
        let up = m.inst_output(node, "links_up_o");
        m.output("links_up_o", up);
    })
}

/// Builds the torus: physical chip p is instance `chip<p>` ([`chip_unit_name`])
/// and sits at the logical coordinates the wiring gives it; each of its
/// torus ports is joined to the neighbour's opposite port by two serdes
/// stubs (one per direction, each in the chip it leaves). Every chip has an
/// order-v2 all-reduce engine ([`crate::allreduce_v2::chip`]) on its node's
/// links beside the router.
///
/// Per physical chip p: the host's packets `c<p>_inj_*` and `c<p>_ej_*`
/// (streams), the engine's lanes `c<p>_v<l>_*` (elements in, l = 0..3) and
/// `c<p>_r<l>_*` (results out with their index, no back-pressure). `fp_i`
/// selects fp32 (1) or int32 (0) sums.
#[track_caller]
pub fn top(design: &mut Design, cfg: &TorusConfig, wiring: &Wiring) -> Rc<ModuleDef> {
    let chip_def = chip(design, cfg);
    let cfg = *cfg;
    let wiring = wiring.clone();
    let mut params: Vec<(String, String)> = cfg.params();
    params.push(("wiring".into(), format!("{:?}", wiring.table())));
    let params = hw::param_refs(&params);
    design.define(&top_name(&cfg, &wiring), &params, |_, m| {
        m.doc("ICI torus: chip nodes with all-reduce engines, joined by serdes stubs, cabled by a wiring");
        let n = cfg.chips();
        let seed = m.input("seed_i", Ty::u(64));
        let seed_load = m.input("seed_load_i", Ty::BOOL);
        let thr_ty = Ty::u(ici_serdes_stub::DRAW_WIDTH);
        let flip_thr = m.input("flip_threshold_i", thr_ty);
        let drop_thr = m.input("drop_threshold_i", thr_ty);
        let dup_thr = m.input("dup_threshold_i", thr_ty);
        let coord_ty = Ty::u(crate::COORD_BITS);
        let chips: Vec<hw::Inst> = (0..n)
            .map(|p| m.instance(&format!("chip{p}"), &chip_def))
            .collect();
        let pkt = crate::packet_ty();
        let fp = m.input("fp_i", Ty::BOOL);
        // The chips' counters the top reports as sums over the chips.
        let summed: Vec<&str> = NODE_COUNTERS
            .iter()
            .map(|(_, out)| *out)
            .chain(["corrupted_o", "stub_words_o"])
            .collect();
        let mut sums: Vec<Option<hw::Expr>> = vec![None; summed.len()];
        let mut alarm = m.lit(Ty::BOOL, 0);
        let mut up = m.lit(Ty::BOOL, 1);
        for (p, &inst) in chips.iter().enumerate() {
            let c = wiring.logical_of(p);
            let at = cfg.coords(c);
            for (axis, v) in ["x", "y", "z"].iter().zip(at) {
                m.connect(inst, &format!("at_{axis}_i"), m.lit(coord_ty, u64::from(v)));
            }
            m.connect(inst, "fp_i", fp);
            let inj = m.stream_input(&format!("c{p}_inj"), &pkt);
            let ready = m.connect_stream(inst, "inj", &inj.stream);
            m.drive(inj.ready, ready);
            let h_ready = m.input(&format!("c{p}_ej_ready_i"), Ty::BOOL);
            let ej = m.inst_stream(inst, "ej", &pkt, h_ready);
            m.output(&format!("c{p}_ej_valid_o"), ej.valid);
            m.output_record(&format!("c{p}_ej"), &ej.data);
            crate::allreduce_v2::expose_lanes(m, inst, |port| format!("c{p}_{port}"));
            // Stub k = 6c + port (c logical) draws from seed_i XOR k times
            // the step.
            for (port, name) in TORUS_PORTS[..6].iter().enumerate() {
                let k = (6 * c + port) as u64;
                let this_seed = seed ^ m.lit(Ty::u(64), k.wrapping_mul(STUB_SEED_STEP));
                m.connect(inst, &format!("{name}_seed_i"), this_seed);
            }
            m.connect(inst, sp::SEED_LOAD, seed_load);
            m.connect(inst, sp::FLIP_THRESHOLD, flip_thr);
            m.connect(inst, sp::DROP_THRESHOLD, drop_thr);
            m.connect(inst, sp::DUP_THRESHOLD, dup_thr);
            for (k, out) in summed.iter().enumerate() {
                let v = m.inst_output(inst, out);
                sums[k] = Some(match sums[k] {
                    Some(s) => s + v,
                    None => v,
                });
            }
            alarm = alarm | m.inst_output(inst, "alarm_o");
            up = up & m.inst_output(inst, "links_up_o");
        }
        // Chip c's stub on each port feeds the neighbour's opposite port.
        for c in 0..n {
            let at = cfg.coords(c);
            let from = chips[wiring.chip_at(c)];
            for (port, name) in TORUS_PORTS[..6].iter().enumerate() {
                let to = chips[wiring.chip_at(cfg.chip(cfg.neighbour(at, port)))];
                let peer = TORUS_PORTS[port ^ 1];
                let valid = m.inst_output(from, &format!("{name}_out_valid_o"));
                let word = m.inst_output(from, &format!("{name}_out_word_o"));
                m.connect(to, &format!("{peer}_des_valid_i"), valid);
                m.connect(to, &format!("{peer}_des_word_i"), word);
            }
        }
        for (out, s) in summed.iter().zip(sums) {
            m.output(out, s.expect("a chip"));
        }
        m.output("alarm_o", alarm);
        m.output("links_up_o", up);
    })
}

//! Two link ends joined by two serdes stubs: node A and node B of one link,
//! both directions at once. It is the block the tools check, simulate and
//! synthesise (`gen --block ici`), and the shape of the FPGA demo.
//!
//! ```text
//!  a_tx ─► link_a ──ser_word──► stub_ab ──des_word──► link_b ─► b_rx
//!  a_rx ◄─ link_a ◄─des_word── stub_ba ◄──ser_word── link_b ◄─ b_tx
//! ```
//!
//! The stubs share the error rates; stub_ab takes `seed_i` and stub_ba
//! `seed_i` XOR [`BA_SEED_XOR`], so the two directions draw differently.
//! Every status output of a link end appears with its node's prefix
//! (`a_crc_errors_o`), every stub counter with its direction's
//! (`ab_dropped_o`), and each stub's scripted error inputs likewise
//! (`ab_force_drop_i`).

use crate::frame::flit_ty;
use crate::link::{link, link_name, ports as lp};
use config::IciConfig;
use hw::{Design, Dir, ModuleDef, Ty};
use ici_serdes_stub::{ports as sp, serdes_stub, serdes_stub_pipelined};
use std::rc::Rc;

/// What stub_ba's seed is XORed with.
pub const BA_SEED_XOR: u64 = 0xa5a5_5a5a_c3c3_3c3c;

/// The pair's Verilog name.
pub fn pair_name(cfg: &IciConfig) -> String {
    format!(
        "ici_pair_l{}_{}",
        cfg.latency(),
        link_name(cfg).trim_start_matches("ici_")
    )
}

/// Builds the pair for `cfg`; returns the top module.
#[track_caller]
pub fn pair(design: &mut Design, cfg: &IciConfig) -> Rc<ModuleDef> {
    let link_def = link(design, cfg);
    // A receive pipeline is there for the clock: the stubs pipeline their
    // draws too (same decisions, same cycles). At depth 0 they are as they
    // were.
    let stub_def = if cfg.depth() >= 1 {
        serdes_stub_pipelined(design, cfg.frame_bits(), cfg.latency())
    } else {
        serdes_stub(design, cfg.frame_bits(), cfg.latency())
    };
    let owned = cfg.params();
    let params = hw::param_refs(&owned);
    let cfg = *cfg;
    design.define(&pair_name(&cfg), &params, |_, m| {
        m.doc("two ICI link ends joined by two serdes stubs (A -> B and B -> A)");
        let flit = flit_ty(&cfg);
        let word_ty = Ty::u(cfg.frame_bits());
        let seed = m.input("seed_i", Ty::u(64));
        let seed_load = m.input("seed_load_i", Ty::BOOL);
        let thr_ty = Ty::u(ici_serdes_stub::DRAW_WIDTH);
        let flip_thr = m.input("flip_threshold_i", thr_ty);
        let drop_thr = m.input("drop_threshold_i", thr_ty);
        let dup_thr = m.input("dup_threshold_i", thr_ty);
        let links = [
            m.instance("link_a", &link_def),
            m.instance("link_b", &link_def),
        ];
        let stubs = [
            m.instance("stub_ab", &stub_def),
            m.instance("stub_ba", &stub_def),
        ];
        // Client streams.
        for (node, &l) in ["a", "b"].iter().zip(&links) {
            let tx = m.stream_input(&format!("{node}_tx"), &flit);
            let ready = m.connect_stream(l, lp::TX, &tx.stream);
            m.drive(tx.ready, ready);
            let rx_ready = m.input(&format!("{node}_rx_ready_i"), Ty::BOOL);
            let rx = m.inst_stream(l, lp::RX, &flit, rx_ready);
            m.output(&format!("{node}_rx_valid_o"), rx.valid);
            m.output_record(&format!("{node}_rx"), &rx.data);
        }
        // Stubs: from link k to link 1 - k.
        for (k, (dir, &st)) in ["ab", "ba"].iter().zip(&stubs).enumerate() {
            let word = m.inst_output(links[k], lp::SER_WORD);
            m.connect(st, sp::IN_WORD, word);
            let ready = m.inst_output(st, sp::IN_READY);
            m.connect(links[k], lp::SER_READY, ready);
            let valid = m.inst_output(st, sp::OUT_VALID);
            let out = m.inst_output(st, sp::OUT_WORD);
            m.connect(links[1 - k], lp::DES_VALID, valid);
            m.connect(links[1 - k], lp::DES_WORD, out);
            let this_seed = if k == 0 { seed } else { seed ^ BA_SEED_XOR };
            m.connect(st, sp::SEED, this_seed);
            m.connect(st, sp::SEED_LOAD, seed_load);
            m.connect(st, sp::FLIP_THRESHOLD, flip_thr);
            m.connect(st, sp::DROP_THRESHOLD, drop_thr);
            m.connect(st, sp::DUP_THRESHOLD, dup_thr);
            let flip = m.input(&format!("{dir}_force_flip_i"), word_ty);
            let drop = m.input(&format!("{dir}_force_drop_i"), Ty::BOOL);
            let dup = m.input(&format!("{dir}_force_dup_i"), Ty::BOOL);
            m.connect(st, sp::FORCE_FLIP, flip);
            m.connect(st, sp::FORCE_DROP, drop);
            m.connect(st, sp::FORCE_DUP, dup);
            for port in [sp::WORDS, sp::DROPPED, sp::DUPLICATED, sp::CORRUPTED] {
                let v = m.inst_output(st, port);
                m.output(&format!("{dir}_{port}"), v);
            }
        }
        // Status of both link ends.
        let status: Vec<String> = link_def
            .port_list()
            .into_iter()
            .filter(|(name, dir, _)| {
                let stream = ["rx_valid_o", "tx_ready_o", lp::SER_WORD].contains(&name.as_str())
                    || flit.fields().any(|(f, _)| *name == format!("rx_{f}_o"));
                *dir == Dir::Out && !stream
            })
            .map(|(name, _, _)| name)
            .collect();
        for (node, &l) in ["a", "b"].iter().zip(&links) {
            for port in &status {
                let v = m.inst_output(l, port);
                m.output(&format!("{node}_{port}"), v);
            }
        }
    })
}

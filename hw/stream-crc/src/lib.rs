//! The stream CRC: a block to drop into a design wherever packets need a
//! checksum. Packets arrive as a valid/ready stream of beats, each packet's
//! last beat flagged; each packet's CRC leaves on a second valid/ready
//! stream. The CRCs are those of the reveng catalog (`config::CrcAlgorithm`:
//! CRC-8/SMBUS, CRC-16/IBM-3740, CRC-32/ISO-HDLC, CRC-32/ISCSI), computed
//! one beat per cycle by the library's parallel CRC (`hw::blocks::crc`, an
//! XOR matrix found at elaboration), so any beat width from 1 to 512 bits
//! runs at one beat per cycle.
//!
//! # Interface
//!
//! | port | width | meaning |
//! | --- | --- | --- |
//! | `clk_i`, `rst_i` | 1 | clock; synchronous reset, active high |
//! | `in_valid_i` | 1 | a beat is offered |
//! | `in_ready_o` | 1 | the block takes the offered beat this cycle |
//! | `in_data_i` | B | the beat (`beat_bits`) |
//! | `in_last_i` | 1 | the beat ends its packet |
//! | `out_valid_o` | 1 | `out_crc_o` holds a packet's CRC |
//! | `out_ready_i` | 1 | the consumer takes the CRC this cycle |
//! | `out_crc_o` | W | the CRC (8, 16 or 32 bits) |
//!
//! Bit order: a beat is a piece of the message as the catalog reads it. For
//! a reflected CRC (crc32, crc32c) bit 0 comes first, so a beat holds its
//! first byte in bits 7..0; otherwise the top bit comes first, so a beat
//! holds its first byte in its top eight bits. A byte string that fills
//! whole beats has the same CRC at every beat width.
//!
//! # Timing contract
//!
//! 1. **Transfers.** A beat is taken in a cycle where `in_valid_i` and
//!    `in_ready_o` are both high; a CRC is taken in a cycle where
//!    `out_valid_o` and `out_ready_i` are both high. Nothing else moves data.
//!    The producer may offer and withdraw a beat at will (the block does not
//!    require a held offer), and `in_ready_o` does not depend on
//!    `in_valid_i` (no combinational path from it).
//! 2. **Latency.** A packet's CRC is on `out_crc_o`, with `out_valid_o`
//!    high, from the cycle after its last beat is taken until the cycle it is
//!    taken (both included); `out_crc_o` holds still meanwhile.
//! 3. **Backpressure.** `in_ready_o` is low exactly in the cycles where a CRC
//!    waits (`out_valid_o`) and `out_ready_i` is low. So with `out_ready_i`
//!    high the block takes a beat every cycle, a packet of n beats every n
//!    cycles, and a beat can be taken in the same cycle as the previous
//!    packet's CRC.
//! 4. **Reset.** `rst_i` high for one cycle (or more) empties the block: no
//!    CRC waits, and the next beat taken starts a packet. Reset does not
//!    need to be held longer; a packet cut by reset is dropped.
//!
//! The four questions every interface answers: a transfer happens on a
//! rising clock edge where valid and ready were both high (rule 1); the
//! beat's bit order is above; reset needs one cycle (rule 4); the CRC can be
//! read any cycle `out_valid_o` is high, and stays until taken (rule 2).
//! `golden::stream_crc` computes the CRCs bit by bit from the catalog's
//! definition and steps these four rules cycle by cycle; the RTL is held to
//! both in `tb/tests/stream_crc.rs`.

mod block;
pub use block::StreamCrc;

use config::StreamCrcConfig;
use hw::blocks::CrcSpec;
use hw::{Design, ModuleDef, Ty};
use std::rc::Rc;

/// The port names, shared by the generator, the simulator driver and the
/// docs.
pub mod ports {
    pub const IN_VALID: &str = "in_valid_i";
    pub const IN_READY: &str = "in_ready_o";
    pub const IN_DATA: &str = "in_data_i";
    pub const IN_LAST: &str = "in_last_i";
    pub const OUT_VALID: &str = "out_valid_o";
    pub const OUT_READY: &str = "out_ready_i";
    pub const OUT_CRC: &str = "out_crc_o";
}

/// The top module's name: `stream_crc_<algorithm>_b<beat bits>`.
pub fn top_name(cfg: &StreamCrcConfig) -> String {
    format!("stream_crc_{}_b{}", cfg.algorithm(), cfg.beat_bits())
}

/// The library CRC's parameters for the configured algorithm.
fn spec(cfg: &StreamCrcConfig) -> CrcSpec {
    let p = cfg.algorithm().params();
    CrcSpec {
        width: p.width,
        poly: p.poly,
        init: p.init,
        refin: p.refin,
        refout: p.refout,
        xorout: p.xorout,
    }
}

/// Builds the stream CRC for `cfg` into `design`; returns its top module.
pub fn build(design: &mut Design, cfg: &StreamCrcConfig) -> Rc<ModuleDef> {
    let crc_def = hw::blocks::crc(design, &spec(cfg), cfg.beat_bits());
    let params = [
        ("algorithm", cfg.algorithm().to_string()),
        ("beat_bits", cfg.beat_bits().to_string()),
    ];
    design.define(&top_name(cfg), &params, |_, m| {
        m.doc("stream CRC: packets of beats in, one CRC per packet out");
        let in_valid = m.input(ports::IN_VALID, Ty::BOOL);
        let in_data = m.input(ports::IN_DATA, Ty::u(cfg.beat_bits()));
        let in_last = m.input(ports::IN_LAST, Ty::BOOL);
        let out_ready = m.input(ports::OUT_READY, Ty::BOOL);
        // A CRC waits from the cycle after its packet's last beat until it
        // is taken (rule 2); the next beat starts a packet after a last beat
        // or a reset.
        let waiting = m.reg_reset("waiting", Ty::BOOL, 0);
        let at_start = m.reg_reset("at_start", Ty::BOOL, 1);
        let in_ready = m.wire("in_ready", !waiting.q() | out_ready);
        let take = m.wire("take", in_valid & in_ready);
        let crc = m.instance("crc", &crc_def);
        m.connect(crc, "en_i", take);
        m.connect(crc, "first_i", at_start.q());
        m.connect(crc, "data_i", in_data);
        m.if_(take, |m| {
            m.assign(at_start, in_last);
            m.assign(waiting, in_last);
        })
        .elif(out_ready, |m| m.assign(waiting, 0));
        m.output(ports::IN_READY, in_ready);
        m.output(ports::OUT_VALID, waiting.q());
        let out = m.inst_output(crc, "crc_o");
        m.output(ports::OUT_CRC, out);
    })
}

//! The stream CRC's golden model: the CRC of a packet computed bit by bit
//! from the catalog's definition (a shift register that takes one message
//! bit per step), and the cycle model of the block's timing contract (the
//! `stream_crc` crate docs: transfers, latency, backpressure, reset), stepped
//! cycle by cycle. Neither looks at the generator: the RTL takes a whole beat
//! per cycle through an XOR matrix, this model one bit per step.

use config::stream_crc::CrcParams;
use config::{CrcAlgorithm, StreamCrcConfig};

/// The catalog's CRC of a message given as bits in the order they are sent:
/// the register starts at `init`; each bit is XORed into the register's top
/// bit, and the register shifts left, XORing in `poly` when the bit that
/// left was 1; at the end the register is reflected if `refout` and XORed
/// with `xorout`. (Reflected algorithms are defined on the same register:
/// their reflection is in the order bits are sent, see [`beat_bits`].)
pub fn crc_of_bits(p: &CrcParams, bits: impl IntoIterator<Item = bool>) -> u64 {
    let w = p.width;
    let mask = if w == 64 { u64::MAX } else { (1 << w) - 1 };
    let top = 1u64 << (w - 1);
    let mut reg = p.init & mask;
    for bit in bits {
        let leaving = (reg & top != 0) != bit;
        reg = (reg << 1) & mask;
        if leaving {
            reg ^= p.poly;
        }
    }
    if p.refout {
        reg = reg.reverse_bits() >> (64 - w);
    }
    (reg ^ p.xorout) & mask
}

/// A beat's bits in the order the CRC takes them: bit 0 first for a
/// reflected algorithm, bit `beat_bits - 1` first otherwise. `beat` holds
/// the bits in 32-bit words, least significant word first.
pub fn beat_bits(cfg: &StreamCrcConfig, beat: &[u32]) -> Vec<bool> {
    let n = cfg.beat_bits();
    let bit = |i: u32| {
        beat.get((i / 32) as usize)
            .is_some_and(|w| w >> (i % 32) & 1 == 1)
    };
    if cfg.algorithm().params().refin {
        (0..n).map(bit).collect()
    } else {
        (0..n).rev().map(bit).collect()
    }
}

/// The CRC of a packet of beats.
pub fn packet_crc(cfg: &StreamCrcConfig, beats: &[Vec<u32>]) -> u64 {
    let params = cfg.algorithm().params();
    crc_of_bits(&params, beats.iter().flat_map(|b| beat_bits(cfg, b)))
}

/// The catalog CRC of a byte string (each byte least significant bit first
/// for a reflected algorithm, most significant first otherwise).
pub fn crc_of_bytes(algorithm: CrcAlgorithm, bytes: &[u8]) -> u64 {
    let p = algorithm.params();
    let bits = bytes.iter().flat_map(|&b| {
        (0..8).map(move |i| {
            let k = if p.refin { i } else { 7 - i };
            b >> k & 1 == 1
        })
    });
    crc_of_bits(&p, bits)
}

/// A byte string cut into beats as the block's bit order places bytes: for
/// a reflected algorithm the first byte of a beat in bits 7..0, otherwise in
/// its top eight bits. The beat must be whole bytes and the string whole
/// beats; the error says which is not.
pub fn beats_of_bytes(cfg: &StreamCrcConfig, bytes: &[u8]) -> Result<Vec<Vec<u32>>, String> {
    let bits = cfg.beat_bits();
    if !bits.is_multiple_of(8) {
        return Err(format!("a beat of {bits} bits is not whole bytes"));
    }
    let per = (bits / 8) as usize;
    if !bytes.len().is_multiple_of(per) {
        return Err(format!(
            "{} bytes do not fill whole {per}-byte beats",
            bytes.len()
        ));
    }
    let reflected = cfg.algorithm().params().refin;
    Ok(bytes
        .chunks(per)
        .map(|chunk| {
            let mut words = vec![0u32; cfg.beat_words()];
            for (j, &b) in chunk.iter().enumerate() {
                // Byte j of the beat sits at byte position j (reflected) or
                // per - 1 - j (not reflected) counted from bit 0.
                let pos = if reflected { j } else { per - 1 - j };
                words[pos / 4] |= u32::from(b) << (8 * (pos % 4));
            }
            words
        })
        .collect())
}

/// When the beats and CRCs of a run moved, as the timing contract predicts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Schedule {
    /// The cycle each beat was taken, beats of all packets in order.
    pub taken: Vec<u64>,
    /// The cycle each packet's CRC was taken.
    pub delivered: Vec<u64>,
    /// Cycles from the first after reset through the last CRC's transfer.
    pub cycles: u64,
}

/// Steps the timing contract for packets of `beats[i]` beats (each at
/// least one): in cycle t (0 = the first after reset) the producer offers
/// its next beat if it has one and `offer(t)`, and the consumer is ready if
/// `ready(t)`. Rules (crate docs): a CRC waits from the cycle after its
/// last beat is taken until it is taken (rule 2); the block is ready for a
/// beat unless a CRC waits and the consumer is not ready (rule 3); data
/// moves when both sides of a stream are high (rule 1). `None` if the run
/// does not end within `max_cycles`.
pub fn schedule(
    beats: &[usize],
    offer: &dyn Fn(u64) -> bool,
    ready: &dyn Fn(u64) -> bool,
    max_cycles: u64,
) -> Option<Schedule> {
    let total: usize = beats.iter().sum();
    let mut s = Schedule::default();
    // The packet whose CRC waits, if any; the next beat's packet and its
    // beats taken so far.
    let mut waiting: Option<usize> = None;
    let (mut packet, mut in_packet) = (0usize, 0usize);
    let mut t = 0u64;
    while s.delivered.len() < beats.len() {
        if t >= max_cycles {
            return None;
        }
        let consumer = ready(t);
        let block_ready = waiting.is_none() || consumer;
        let offered = s.taken.len() < total && offer(t);
        if waiting.is_some() && consumer {
            waiting = None;
            s.delivered.push(t);
        }
        if offered && block_ready {
            s.taken.push(t);
            in_packet += 1;
            if in_packet == beats[packet] {
                // Its CRC waits from the next cycle on.
                waiting = Some(packet);
                packet += 1;
                in_packet = 0;
            }
        }
        t += 1;
    }
    s.cycles = t;
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalog_check_values() {
        for a in CrcAlgorithm::ALL {
            assert_eq!(crc_of_bytes(a, b"123456789"), a.params().check, "{a}");
        }
    }

    #[test]
    fn a_byte_string_has_the_same_crc_at_every_beat_width() {
        let bytes: Vec<u8> = (0..24u8).map(|i| i.wrapping_mul(37) ^ 0x5a).collect();
        for a in CrcAlgorithm::ALL {
            let want = crc_of_bytes(a, &bytes);
            for bits in [8, 16, 24, 32, 48, 64, 96, 192] {
                let cfg = StreamCrcConfig::new(a, bits).unwrap();
                let beats = beats_of_bytes(&cfg, &bytes).unwrap();
                assert_eq!(packet_crc(&cfg, &beats), want, "{a} {bits}");
            }
        }
        let cfg = StreamCrcConfig::new(CrcAlgorithm::Crc32, 16).unwrap();
        assert!(beats_of_bytes(&cfg, &bytes[..3]).is_err());
        let odd = StreamCrcConfig::new(CrcAlgorithm::Crc32, 12).unwrap();
        assert!(beats_of_bytes(&odd, &bytes).is_err());
    }

    #[test]
    fn bytes_sit_in_beats_by_the_bit_order() {
        let le = StreamCrcConfig::new(CrcAlgorithm::Crc32, 32).unwrap();
        let be = StreamCrcConfig::new(CrcAlgorithm::Crc16, 32).unwrap();
        assert_eq!(beats_of_bytes(&le, &[1, 2, 3, 4]).unwrap(), [[0x0403_0201]]);
        assert_eq!(beats_of_bytes(&be, &[1, 2, 3, 4]).unwrap(), [[0x0102_0304]]);
    }

    #[test]
    fn the_schedule_follows_the_contract() {
        let always = |_: u64| true;
        // Back to back: a beat a cycle, each CRC the cycle after its last beat.
        let s = schedule(&[2, 1, 3], &always, &always, 100).unwrap();
        assert_eq!(s.taken, [0, 1, 2, 3, 4, 5]);
        assert_eq!(s.delivered, [2, 3, 6]);
        assert_eq!(s.cycles, 7);
        // A consumer that is never ready before cycle 5: the first CRC waits
        // and holds the next beat back.
        let late = |t: u64| t >= 5;
        let s = schedule(&[1, 1], &always, &late, 100).unwrap();
        assert_eq!(s.taken, [0, 5]);
        assert_eq!(s.delivered, [5, 6]);
        // Gaps in the offer.
        let even = |t: u64| t.is_multiple_of(2);
        let s = schedule(&[3], &even, &always, 100).unwrap();
        assert_eq!(s.taken, [0, 2, 4]);
        assert_eq!(s.delivered, [5]);
        assert!(schedule(&[1], &|_| false, &always, 50).is_none());
    }
}

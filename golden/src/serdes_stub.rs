//! The serdes stub under an ICI link, as its documentation states it
//! (`hw/ici-serdes-stub`, "The random draws" and "Timing"): a seeded LFSR
//! that draws drops, duplicates and bit flips, and a line of fixed latency.
//!
//! Written from that text, bit serial (one LFSR step per drawn bit), so that
//! the RTL's parallel form of the LFSR, whatever shape it takes, is checked
//! against the definition and not against a copy of itself. Words are
//! `width`-bit values held as 32-bit words, least significant first.

use std::collections::VecDeque;

/// Bits of a probability draw and of a threshold.
pub const DRAW_WIDTH: u32 = 24;
/// Bits of a flip position draw.
pub const POS_WIDTH: u32 = 16;
/// Flip slots per word.
pub const FLIP_SLOTS: u32 = 4;
/// LFSR bits drawn per cycle: drop, duplicate, then per slot a flip draw
/// and a position.
pub const DRAW_BITS: u32 = 2 * DRAW_WIDTH + FLIP_SLOTS * (DRAW_WIDTH + POS_WIDTH);
/// What a zero seed loads, and what an all-zero register steps to.
pub const ZERO_SEED_REPLACEMENT: u64 = 0x9e37_79b9_7f4a_7c15;

/// One cycle's inputs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StubInputs {
    pub reset: bool,
    pub in_word: Vec<u32>,
    pub seed_load: bool,
    pub seed: u64,
    pub flip_threshold: u32,
    pub drop_threshold: u32,
    pub dup_threshold: u32,
    pub force_flip: Vec<u32>,
    pub force_drop: bool,
    pub force_dup: bool,
}

/// One cycle's outputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StubOutputs {
    pub in_ready: bool,
    pub out_valid: bool,
    /// The word in the line's last stage (meaningful when `out_valid`).
    pub out_word: Vec<u32>,
    pub words: u32,
    pub dropped: u32,
    pub duplicated: u32,
    pub corrupted: u32,
}

/// The decisions of one cycle.
struct Decisions {
    dup: bool,
    drop: bool,
    mask: Vec<u32>,
    /// The LFSR register after this cycle's draws.
    stepped: u64,
}

/// The stub's state between clock edges.
#[derive(Debug, Clone)]
pub struct SerdesStub {
    width: u32,
    /// Register bit j-1 holds b(k-j), the j-th most recent bit drawn.
    lfsr: u64,
    have_last: bool,
    last: Vec<u32>,
    /// Oldest (leaving) first: valid bit and word per stage.
    line: VecDeque<(bool, Vec<u32>)>,
    words: u32,
    dropped: u32,
    duplicated: u32,
    corrupted: u32,
}

impl SerdesStub {
    /// A stub of `width`-bit words and `latency` cycles, powered up with the
    /// LFSR register at `lfsr` and every other register at zero.
    pub fn new(width: u32, latency: u32, lfsr: u64) -> SerdesStub {
        assert!(width >= 2 && latency >= 1, "width >= 2, latency >= 1");
        let zero = vec![0; width.div_ceil(32) as usize];
        SerdesStub {
            width,
            lfsr,
            have_last: false,
            last: zero.clone(),
            line: (0..latency).map(|_| (false, zero.clone())).collect(),
            words: 0,
            dropped: 0,
            duplicated: 0,
            corrupted: 0,
        }
    }

    /// This cycle's DRAW_BITS bits, b(k) first, and the register after
    /// drawing them, stepping the LFSR one bit at a time.
    fn draws(&self) -> (Vec<bool>, u64) {
        let mut reg = self.lfsr;
        let bits = (0..DRAW_BITS)
            .map(|_| {
                // b(k) = b(k-64) ^ b(k-63) ^ b(k-61) ^ b(k-60): register
                // bits 63, 62, 60 and 59.
                let new = (reg >> 63 ^ reg >> 62 ^ reg >> 60 ^ reg >> 59) & 1;
                reg = reg << 1 | new;
                new == 1
            })
            .collect();
        (bits, reg)
    }

    fn decide(&self, inp: &StubInputs) -> Decisions {
        let (bits, stepped) = self.draws();
        // A field's bit i is the i-th bit of its stretch.
        let field = |at: u32, n: u32| -> u32 {
            (0..n).fold(0, |v, i| v | u32::from(bits[(at + i) as usize]) << i)
        };
        let dup =
            self.have_last && (inp.force_dup || field(DRAW_WIDTH, DRAW_WIDTH) < inp.dup_threshold);
        let drop = inp.force_drop || field(0, DRAW_WIDTH) < inp.drop_threshold;
        let mut mask = inp.force_flip.clone();
        for s in 0..FLIP_SLOTS {
            let at = 2 * DRAW_WIDTH + s * (DRAW_WIDTH + POS_WIDTH);
            if field(at, DRAW_WIDTH) < inp.flip_threshold {
                let pos = (u64::from(field(at + DRAW_WIDTH, POS_WIDTH)) * u64::from(self.width))
                    >> POS_WIDTH;
                mask[(pos / 32) as usize] ^= 1 << (pos % 32);
            }
        }
        Decisions {
            dup,
            drop,
            mask,
            stepped,
        }
    }

    /// The outputs in a cycle with these inputs.
    pub fn outputs(&self, inp: &StubInputs) -> StubOutputs {
        let d = self.decide(inp);
        let (out_valid, out_word) = self.line.front().cloned().expect("latency >= 1");
        StubOutputs {
            in_ready: !d.dup,
            out_valid,
            out_word,
            words: self.words,
            dropped: self.dropped,
            duplicated: self.duplicated,
            corrupted: self.corrupted,
        }
    }

    /// The clock edge at the end of a cycle with these inputs.
    pub fn step(&mut self, inp: &StubInputs) {
        let d = self.decide(inp);
        let take = !d.dup;
        let source = if d.dup { &self.last } else { &inp.in_word };
        let entering: Vec<u32> = source.iter().zip(&d.mask).map(|(w, m)| w ^ m).collect();
        let corrupted = !d.drop && d.mask.iter().any(|&m| m != 0);
        // The LFSR has no reset: it loads or steps in every cycle.
        self.lfsr = if inp.seed_load {
            if inp.seed == 0 {
                ZERO_SEED_REPLACEMENT
            } else {
                inp.seed
            }
        } else if self.lfsr == 0 {
            ZERO_SEED_REPLACEMENT
        } else {
            d.stepped
        };
        // The last word taken has no reset either.
        if take {
            self.last = inp.in_word.clone();
        }
        self.line.pop_front();
        if inp.reset {
            self.have_last = false;
            self.line.push_back((false, entering));
            for stage in &mut self.line {
                stage.0 = false;
            }
            (self.words, self.dropped, self.duplicated, self.corrupted) = (0, 0, 0, 0);
        } else {
            self.have_last |= take;
            self.line.push_back((!d.drop, entering));
            self.words = self.words.wrapping_add(1);
            self.dropped = self.dropped.wrapping_add(u32::from(d.drop));
            self.duplicated = self.duplicated.wrapping_add(u32::from(d.dup));
            self.corrupted = self.corrupted.wrapping_add(u32::from(corrupted));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quiet(width: u32) -> StubInputs {
        let words = width.div_ceil(32) as usize;
        StubInputs {
            in_word: vec![0; words],
            force_flip: vec![0; words],
            ..StubInputs::default()
        }
    }

    #[test]
    fn the_lfsr_is_the_documented_recurrence() {
        // From a seed of one bit (b(k-1) = 1, the rest 0) the first new bits
        // are 0 until the recurrence reaches that bit: b(k+59) = b(k-1) ^ ...
        // (the tap at distance 60).
        let stub = SerdesStub::new(8, 1, 1);
        let (bits, reg) = stub.draws();
        assert!(bits[..59].iter().all(|&b| !b));
        assert!(bits[59], "b(k+59) = b(k-1) through the tap at distance 60");
        // The register after the draws holds the last 64 bits drawn.
        for j in 1..=64u32 {
            assert_eq!(reg >> (j - 1) & 1 == 1, bits[(DRAW_BITS - j) as usize]);
        }
    }

    #[test]
    fn zero_registers_and_seeds_load_the_replacement() {
        let mut stub = SerdesStub::new(8, 1, 0);
        // An all-zero register draws zeros: a threshold of one fires.
        let mut inp = quiet(8);
        inp.drop_threshold = 1;
        stub.step(&inp);
        assert_eq!(stub.lfsr, ZERO_SEED_REPLACEMENT);
        let mut inp = quiet(8);
        inp.seed_load = true;
        stub.step(&inp);
        assert_eq!(stub.lfsr, ZERO_SEED_REPLACEMENT);
        inp.seed = 5;
        stub.step(&inp);
        assert_eq!(stub.lfsr, 5);
    }

    #[test]
    fn words_arrive_latency_cycles_later_with_forced_errors() {
        let mut stub = SerdesStub::new(40, 3, 1);
        let mut sent = Vec::new();
        for t in 0..12u32 {
            let mut inp = quiet(40);
            inp.in_word = vec![t * 7 + 1, t & 0xff];
            inp.force_drop = t == 4;
            inp.force_flip = if t == 6 { vec![0, 1 << 7] } else { vec![0, 0] };
            let out = stub.outputs(&inp);
            if t >= 3 {
                let (valid, word) = &sent[(t - 3) as usize];
                assert_eq!((out.out_valid, &out.out_word), (*valid, word), "cycle {t}");
            }
            let mut entering = inp.in_word.clone();
            entering[1] ^= inp.force_flip[1];
            sent.push((!inp.force_drop, entering));
            stub.step(&inp);
        }
        let out = stub.outputs(&quiet(40));
        assert_eq!((out.words, out.dropped, out.corrupted), (12, 1, 1));
    }
}

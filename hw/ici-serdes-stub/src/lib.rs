//! The serdes stub: the lanes under an ICI link, with the faults real lanes
//! have, injected on purpose.
//!
//! A *word* is what the lanes carry in one cycle: one frame of the link layer
//! striped across all lanes, `width` bits. The stub models the lanes at that
//! granularity (the link layer never sees the bit serialisation): it takes one
//! word per cycle and delivers it `latency` cycles later, and on the way it
//! may
//! - **flip bits** (bit error rate): up to [`FLIP_SLOTS`] bits per word;
//! - **drop the word**: nothing arrives in that cycle (`out_valid_o` low);
//! - **duplicate a word**: the previous word is sent again in this cycle, and
//!   the new word waits (`in_ready_o` low), as a lane retiming glitch would.
//!
//! Every decision comes from a seeded LFSR, all in synthesizable logic, so an
//! FPGA build shows the link recovering from real injected errors. Scripted
//! errors (`force_*_i`) add to the random ones for directed tests, and are
//! the free inputs of the formal proofs.
//!
//! # Ports
//!
//! | port | width | meaning |
//! | --- | --- | --- |
//! | `in_word_i`, `in_ready_o` | width, 1 | the word offered this cycle; taken when `in_ready_o` |
//! | `out_valid_o`, `out_word_o` | 1, width | the word arriving this cycle (none when low) |
//! | `seed_load_i`, `seed_i` | 1, 64 | load the LFSR with `seed_i` (0 loads [`ZERO_SEED_REPLACEMENT`]) |
//! | `flip_threshold_i` | 24 | per flip slot and word: flip one bit when the slot's draw is below it |
//! | `drop_threshold_i`, `dup_threshold_i` | 24, 24 | drop / duplicate a word when the draw is below it |
//! | `force_flip_i`, `force_drop_i`, `force_dup_i` | width, 1, 1 | scripted: XOR mask, drop, duplicate |
//! | `words_o`, `dropped_o`, `duplicated_o`, `corrupted_o` | 32 each | counts: word slots, drops, duplicates, delivered words with flipped bits |
//!
//! # The random draws
//!
//! The LFSR is a Fibonacci LFSR of 64 bits with taps {64, 63, 61, 60}
//! (maximal length): bit b(k) = b(k-64) ^ b(k-63) ^ b(k-61) ^ b(k-60); its
//! register holds the last 64 bits, register bit j-1 being b(k-j), and a
//! loaded seed is that register ([`serdes_stub`] stores the same bits
//! oldest first). Every cycle it moves on by [`DRAW_BITS`]
//! bits, b(k) .. b(k+DRAW_BITS-1), read as unsigned numbers, bit i of a
//! field being the i-th bit of its stretch:
//!
//! | bits | field |
//! | --- | --- |
//! | 0..24 | drop draw |
//! | 24..48 | duplicate draw |
//! | 48 + 40s .. 72 + 40s | flip draw of slot s (s = 0..3) |
//! | 72 + 40s .. 88 + 40s | flip position of slot s: bit (pos * width) >> 16 |
//!
//! A threshold T gives probability T / 2^24 per draw. A bit error rate e on
//! `width`-bit words is `flip_threshold = e * width / 4 * 2^24` per slot:
//! the expected flips per word are e * width, as for independent bit errors,
//! except that a word has at most four (at e * width = 0.57, the default
//! frame at 1e-3, five or more errors have probability 3e-4). Two slots that
//! pick the same bit cancel. Four flips are always detected by the link's
//! CRC-32, whose Hamming distance is at least 5 on frames up to 2974 bits.
//!
//! # Timing, in a cycle t
//!
//! 1. dup = `force_dup_i` or the duplicate draw is below its threshold, and a
//!    word has been taken since reset; `in_ready_o` = !dup.
//! 2. The word entering the line is the last word taken if dup, else
//!    `in_word_i` (which is then taken), XOR the flip mask (`force_flip_i`
//!    XOR one bit per slot whose draw is below its threshold).
//! 3. drop = `force_drop_i` or the drop draw is below its threshold: the
//!    entering word is invalid.
//! 4. The entering word leaves at t + `latency` (`out_valid_o`, `out_word_o`).
//!
//! Reset empties the line and clears the counters; the LFSR has no reset
//! and changes only by stepping or by a seed load, so a seed loaded in a
//! reset cycle stays loaded. An all-zero register (one never loaded) steps
//! to [`ZERO_SEED_REPLACEMENT`] instead of locking up.
//!
//! # Two builds
//!
//! [`serdes_stub`] computes each cycle's draws from the LFSR register in
//! that cycle, and the flip positions' scaling, decode and mask with them:
//! a long path, on an FPGA the pair's slowest. [`serdes_stub_pipelined`],
//! used under links with a receive pipeline (`depth` >= 1), registers the
//! draws a cycle ahead and applies the flips one stage into the line; it
//! makes the same decisions in the same cycles and delivers the same words,
//! except that its duplicate threshold acts a cycle after it is set, and
//! `corrupted_o` comes two cycles later (its docs say how).

use hw::{cat, delay, mux, Design, Expr, ModuleDef, Ty};
use num_bigint::BigUint;
use num_traits::{One, Zero};
use std::rc::Rc;

/// Flip slots per word: at most this many bits flip in one word.
pub const FLIP_SLOTS: u32 = 4;
/// Bits of a probability draw and of a threshold.
pub const DRAW_WIDTH: u32 = 24;
/// Bits of a flip position draw.
pub const POS_WIDTH: u32 = 16;
/// LFSR bits consumed per cycle.
pub const DRAW_BITS: u32 = 2 * DRAW_WIDTH + FLIP_SLOTS * (DRAW_WIDTH + POS_WIDTH);
/// Taps of the 64-bit LFSR.
pub const TAPS: [u32; 4] = [64, 63, 61, 60];
/// The register loaded in place of an all-zero seed (which would lock up).
pub const ZERO_SEED_REPLACEMENT: u64 = 0x9e37_79b9_7f4a_7c15;

/// Port names.
pub mod ports {
    pub const IN_WORD: &str = "in_word_i";
    pub const IN_READY: &str = "in_ready_o";
    pub const OUT_VALID: &str = "out_valid_o";
    pub const OUT_WORD: &str = "out_word_o";
    pub const SEED_LOAD: &str = "seed_load_i";
    pub const SEED: &str = "seed_i";
    pub const FLIP_THRESHOLD: &str = "flip_threshold_i";
    pub const DROP_THRESHOLD: &str = "drop_threshold_i";
    pub const DUP_THRESHOLD: &str = "dup_threshold_i";
    pub const FORCE_FLIP: &str = "force_flip_i";
    pub const FORCE_DROP: &str = "force_drop_i";
    pub const FORCE_DUP: &str = "force_dup_i";
    pub const WORDS: &str = "words_o";
    pub const DROPPED: &str = "dropped_o";
    pub const DUPLICATED: &str = "duplicated_o";
    pub const CORRUPTED: &str = "corrupted_o";
}

/// The stub's Verilog name for `width`-bit words and `latency` cycles.
pub fn stub_name(width: u32, latency: u32) -> String {
    format!("ici_serdes_stub_w{width}_l{latency}")
}

/// The LFSR's output bits as GF(2) linear forms over the bits of its
/// documented register (newest first; the serial definition run on forms).
fn lfsr_forms() -> Vec<BigUint> {
    let mut stages: Vec<BigUint> = (0..64).map(|j| BigUint::one() << j).collect();
    let mut outputs = Vec::new();
    for _ in 0..DRAW_BITS {
        let new = TAPS
            .iter()
            .fold(BigUint::zero(), |acc, &t| acc ^ &stages[t as usize - 1]);
        outputs.push(new.clone());
        stages.pop();
        stages.insert(0, new);
    }
    outputs
}

/// The `n` bits the LFSR draws after the 64 in `oldest_first` (bit i =
/// b(k-64+i)), b(k) in bit 0: b(j) = b(j-64) ^ b(j-63) ^ b(j-61) ^ b(j-60), so
/// the next 60 bits are an XOR of four 60-bit stretches of the last 64, and
/// the stretch grows 60 bits at a time.
fn stretch(oldest_first: Expr, n: u32) -> Expr {
    // Where each tap's bit sits in a window of the last 64 bits.
    let offsets: Vec<u32> = TAPS.iter().map(|&t| 64 - t).collect();
    let step = TAPS.iter().copied().min().expect("taps");
    let reach = 64 - step;
    let mut window = oldest_first;
    let mut chunks: Vec<Expr> = Vec::new();
    let mut drawn = 0;
    while drawn < n {
        let len = step.min(n - drawn);
        if let Some(&last) = chunks.last() {
            // The bits this chunk reads: the previous window's newest
            // `reach` bits, then the previous chunk's first `len`.
            let old: Expr = window.slice(step, reach);
            window = cat(&[last.slice(0, len), old]);
        }
        let chunk = offsets
            .iter()
            .map(|&o| window.slice(o, len))
            .reduce(|a, b| a ^ b)
            .expect("taps");
        chunks.push(chunk);
        drawn += len;
    }
    chunks.reverse();
    cat(&chunks)
}

/// The XOR of the bits of `x` that `form` selects.
fn xor_of(x: Expr, form: &BigUint) -> Expr {
    match form.count_ones() {
        0 => x.lit_of(Ty::BOOL, 0),
        1 => x.bit(form.trailing_zeros().expect("one bit") as u32),
        _ => (x & x.lit(num_bigint::BigInt::from(form.clone()))).parity(),
    }
}

/// A 32-bit counter register `name` that adds `inc` every cycle it is high.
fn counter(m: &mut hw::ModuleBuilder, name: &str, inc: Expr) -> Expr {
    let r = m.reg_reset(name, Ty::u(32), 0);
    m.set_next(r, r.q() + 1u32);
    m.set_enable(r, inc);
    r.q()
}

/// The stub's inputs (both forms have the same ports).
struct StubInputs {
    in_word: Expr,
    seed_load: Expr,
    seed: Expr,
    flip_thr: Expr,
    drop_thr: Expr,
    dup_thr: Expr,
    force_flip: Expr,
    force_drop: Expr,
    force_dup: Expr,
}

fn stub_inputs(m: &mut hw::ModuleBuilder, width: u32) -> StubInputs {
    use ports::*;
    let word_ty = Ty::u(width);
    let thr_ty = Ty::u(DRAW_WIDTH);
    StubInputs {
        in_word: m.input(IN_WORD, word_ty),
        seed_load: m.input(SEED_LOAD, Ty::BOOL),
        seed: m.input(SEED, Ty::u(64)),
        flip_thr: m.input(FLIP_THRESHOLD, thr_ty),
        drop_thr: m.input(DROP_THRESHOLD, thr_ty),
        dup_thr: m.input(DUP_THRESHOLD, thr_ty),
        force_flip: m.input(FORCE_FLIP, word_ty),
        force_drop: m.input(FORCE_DROP, Ty::BOOL),
        force_dup: m.input(FORCE_DUP, Ty::BOOL),
    }
}

/// The header parameters of a stub of `width`-bit words (>= 2) and
/// `latency` (>= 1) cycles.
#[track_caller]
fn stub_params(width: u32, latency: u32) -> [(&'static str, String); 2] {
    assert!(
        width >= 2 && latency >= 1,
        "stub needs width >= 2, latency >= 1"
    );
    [
        ("width", width.to_string()),
        ("latency", latency.to_string()),
    ]
}

/// A word slot's duplicate and drop, and the last word taken.
struct Slot {
    dup: Expr,
    drop: Expr,
    last: Expr,
}

/// Duplicates repeat the last word taken (once a word has been taken) and
/// the offered word waits; `(dup_asked, drop_asked)` are this slot's
/// forced-or-drawn requests.
fn slot_decisions(
    m: &mut hw::ModuleBuilder,
    in_word: Expr,
    (dup_asked, drop_asked): (Expr, Expr),
) -> Slot {
    let have_last = m.reg_reset("have_last", Ty::BOOL, 0);
    let last = m.reg("last_word", in_word.ty());
    let dup = m.wire("dup", have_last.q() & dup_asked);
    let take = m.wire("take", !dup);
    m.output(ports::IN_READY, take);
    m.set_next(last, in_word);
    m.set_enable(last, take);
    m.set_next(have_last, have_last.q() | take);
    let drop = m.wire("drop", drop_asked);
    Slot {
        dup,
        drop,
        last: last.q(),
    }
}

/// The four counters and their outputs; a word counts as corrupted when
/// `corrupted` is high.
fn counters(m: &mut hw::ModuleBuilder, drop: Expr, dup: Expr, corrupted: Expr) {
    use ports::*;
    let tick = m.lit(Ty::BOOL, 1);
    let words = counter(m, "words", tick);
    let dropped = counter(m, "dropped", drop);
    let duplicated = counter(m, "duplicated", dup);
    let corrupted = counter(m, "corrupted", corrupted);
    m.output(WORDS, words);
    m.output(DROPPED, dropped);
    m.output(DUPLICATED, duplicated);
    m.output(CORRUPTED, corrupted);
}

/// Builds the stub for `width`-bit words (>= 2) and `latency` (>= 1) cycles.
#[track_caller]
pub fn serdes_stub(design: &mut Design, width: u32, latency: u32) -> Rc<ModuleDef> {
    let params = stub_params(width, latency);
    design.define(&stub_name(width, latency), &params, |_, m| {
        use ports::*;
        m.doc("serdes stub: fixed latency, seeded LFSR bit flips, word drops and duplicates");
        let StubInputs {
            in_word,
            seed_load,
            seed,
            flip_thr,
            drop_thr,
            dup_thr,
            force_flip,
            force_drop,
            force_dup,
        } = stub_inputs(m, width);

        // The LFSR: DRAW_BITS fresh bits every cycle. Its register holds the
        // last 64 bits oldest first (bit i = b(k-64+i)), the order the draws
        // are read in, so that the draws are a few word-wide XORs of shifted
        // stretches ([`stretch`]) and need no bit-by-bit reordering; a loaded
        // seed (newest first, as documented) is reversed on the way in. No
        // reset: a seed loaded while the rest resets stays loaded.
        let lfsr = m.reg("lfsr", Ty::u(64));
        let q = lfsr.q();
        let draws = m.wire("draws", stretch(q, DRAW_BITS));
        let advanced = draws.slice(DRAW_BITS - 64, 64);
        let replacement = m.lit(Ty::u(64), ZERO_SEED_REPLACEMENT.reverse_bits());
        let loaded = mux(seed.any(), seed.reverse_bits(), replacement);
        // An all-zero register (never loaded, or powered up at zero) would
        // lock up: it is replaced as a zero seed is.
        let running = mux(q.any(), advanced, replacement);
        m.set_next(lfsr, mux(seed_load, loaded, running));

        let drop_draw = draws.slice(0, DRAW_WIDTH);
        let dup_draw = draws.slice(DRAW_WIDTH, DRAW_WIDTH);
        // The mask is built 32 bits at a time: a slot's bit is a one-hot
        // 32-bit decode of the position's low bits in the word its high bits
        // pick, so no part of the mask is a shift of a whole word.
        let words = width.div_ceil(32);
        let word_bits = |j: u32| (width - 32 * j).min(32);
        let mut mask: Vec<Expr> = (0..words)
            .map(|j| force_flip.slice(32 * j, word_bits(j)))
            .collect();
        for s in 0..FLIP_SLOTS {
            let base = 2 * DRAW_WIDTH + s * (DRAW_WIDTH + POS_WIDTH);
            let hit = draws.slice(base, DRAW_WIDTH).is_lt(flip_thr);
            let pos16 = draws.slice(base + DRAW_WIDTH, POS_WIDTH);
            let name = format!("flip_scaled{s}");
            let scaled = m.wire(&name, pos16.zext(32) * m.lit(Ty::u(32), width));
            m.waive(
                "UNUSEDSIGNAL",
                &name,
                "the position is the high half of draw x width; the low half is the fraction dropped",
            );
            let pos = scaled.slice(POS_WIDTH, 16);
            let (low, high) = (pos.slice(0, 5), pos.slice(5, 11));
            for (j, w) in mask.iter_mut().enumerate() {
                let ty = Ty::u(word_bits(j as u32));
                let here = hit & high.is_eq(m.lit(Ty::u(11), j as u64));
                *w = *w ^ mux(here, m.lit(ty, 1) << low, m.lit(ty, 0));
            }
        }
        let mask = m.wire("flip_mask", cat(&mask.into_iter().rev().collect::<Vec<_>>()));

        let Slot { dup, drop, last } = slot_decisions(
            m,
            in_word,
            (force_dup | dup_draw.is_lt(dup_thr), force_drop | drop_draw.is_lt(drop_thr)),
        );
        let entering = m.wire("entering", mux(dup, last, in_word) ^ mask);
        let valid_out = delay(m, "line_valid", !drop, latency, Some(0));
        let word_out = delay(m, "line_word", entering, latency, None);
        m.output(OUT_VALID, valid_out);
        m.output(OUT_WORD, word_out);

        counters(m, drop, dup, !drop & mask.any());
    })
}

/// The pipelined stub's Verilog name ([`serdes_stub_pipelined`]).
pub fn pipelined_stub_name(width: u32, latency: u32) -> String {
    format!("{}_p", stub_name(width, latency))
}

/// `x` times the constant `k` (32 bits), as a sum of `x` shifted by each
/// set bit of `k`: LUT adders beside the draws instead of a DSP block's
/// multiplier, which sits a route away and has no output register that
/// synthesis would use (the pipelined stub's scaled position, ECP5-85F:
/// draw register to DSP to the position's decode was the longest path).
fn times_constant(m: &mut hw::ModuleBuilder, x: Expr, k: u32) -> Expr {
    let wide = x.zext(32);
    (0..32)
        .filter(|b| k >> b & 1 == 1)
        .map(|b| wide << m.lit(Ty::u(5), b))
        .reduce(|a, b| a + b)
        .unwrap_or_else(|| m.lit(Ty::u(32), 0))
}

/// Bits of a flip position (a bit index below `width`).
fn position_bits(width: u32) -> u32 {
    (32 - (width - 1).leading_zeros()).max(1)
}

/// Builds the stub for `width`-bit words (>= 2) and `latency` (>= 1) cycles
/// with its random draws pipelined, for links whose receive pipeline is
/// deep enough to need it (`depth` >= 1): the same decisions in the same
/// cycles as [`serdes_stub`] given the duplicate threshold a cycle late,
/// the same words on the same outputs, and `corrupted_o` two cycles later.
///
/// - A register holds this cycle's draw bits (the [`DRAW_BITS`] but the
///   duplicate draw), computed in the cycle before from the last 64 bits it
///   drew (the LFSR's register after the step), or from `seed_i` in a
///   seed-load cycle; there is no separate LFSR register. Whether that
///   state is nonzero is the seed's OR in a seed-load cycle and otherwise a
///   flag set on the first clock edge (stepping never zeroes a nonzero
///   register). The drop and flip threshold compares stay in the
///   cycle, so those thresholds act in the cycle they are set, as in
///   [`serdes_stub`].
/// - The duplicate draw is not held: its verdict is, computed in the cycle
///   before from the next draw and that cycle's `dup_threshold_i`, so
///   `in_ready_o` comes from registers and `force_dup_i` only, and the
///   duplicate threshold acts from the cycle after it is set.
/// - The flips are applied one cycle into the line: its first stage is the
///   register of the last word taken (the word entering at t, before its
///   flips, as a duplicate repeats it), with each slot's verdict and scaled position
///   (`(pos * width) >> 16`, a registered product) and `force_flip_i`, and
///   the flip mask is decoded and XORed in on the way to the second stage
///   (at `latency` 1, on the way to `out_word_o`). The word leaves at
///   t + `latency` as before.
/// - `corrupted_o` counts a word from the mask of that first stage,
///   registered once more (the mask itself, whose OR enables the counter),
///   so it shows the words that entered up to three cycles before the
///   current one (the other counters: one); a drained line reads the same
///   counts.
#[track_caller]
pub fn serdes_stub_pipelined(design: &mut Design, width: u32, latency: u32) -> Rc<ModuleDef> {
    let params = stub_params(width, latency);
    design.define(&pipelined_stub_name(width, latency), &params, |_, m| {
        use ports::*;
        m.doc("serdes stub, draws and flip positions pipelined: fixed latency, seeded LFSR bit flips, word drops and duplicates");
        let word_ty = Ty::u(width);
        let StubInputs {
            in_word,
            seed_load,
            seed,
            flip_thr,
            drop_thr,
            dup_thr,
            force_flip,
            force_drop,
            force_dup,
        } = stub_inputs(m, width);

        // This cycle's draws but the duplicate draw, whose verdict is
        // registered instead (below). No reset: a seed loaded while the rest
        // resets stays loaded.
        let outs = lfsr_forms();
        let kept = DRAW_BITS - DRAW_WIDTH;
        let draws_reg = m.reg("draws", Ty::u(kept));
        let draws = draws_reg.q();
        // Draw bit i of the cycle (not in the duplicate field) in the register.
        let at = |i: u32| if i < DRAW_WIDTH { i } else { i - DRAW_WIDTH };
        // The LFSR's register after this cycle's step is the last 64 bits
        // drawn (register bit j-1 = b(k-j)), so it needs no register of its
        // own; it is all-zero exactly when the draws are (never loaded).
        let stepped = cat(&(0..64)
            .map(|i| draws.bit(at(DRAW_BITS - 64 + i)))
            .collect::<Vec<_>>());
        let next_lfsr = m.wire("next_lfsr", mux(seed_load, seed, stepped));
        // A zero seed, or a zero register stepping, loads the replacement:
        // its draws are a constant.
        let replacement_draws = outs.iter().enumerate().fold(BigUint::zero(), |acc, (i, f)| {
            let bit = (f & BigUint::from(ZERO_SEED_REPLACEMENT)).count_ones() % 2;
            acc | (BigUint::from(bit) << i)
        });
        // Stepping a nonzero register gives a nonzero one, and every load
        // is nonzero, so the register is zero only before its first clock
        // edge (powered up at zero, never loaded): a flag set on that edge
        // stands for the OR of the stepped register.
        let live = m.reg("draws_live", Ty::BOOL);
        m.set_next(live, m.lit(Ty::BOOL, 1));
        let next_running = mux(seed_load, seed.any(), live.q());
        let keeps_state = seed_load | live.q();
        // The draws the register keeps (all but the duplicate draw, whose
        // verdict is formed below), in the register's order. A draw is the
        // replacement's bit when the next state is not running: a zero
        // seed's draws are all zero, so a bit the replacement has at 0
        // needs only the never-loaded case, and only a bit it has at 1
        // waits for the seed's 64-bit OR (half the loads of that OR).
        let kept_indices = (0..DRAW_WIDTH).chain(2 * DRAW_WIDTH..DRAW_BITS);
        let next_kept = cat(&kept_indices
            .rev()
            .map(|i| {
                let f = xor_of(next_lfsr, &outs[i as usize]);
                if replacement_draws.bit(u64::from(i)) {
                    f | !next_running
                } else {
                    f & keeps_state
                }
            })
            .collect::<Vec<_>>());
        m.set_next(draws_reg, next_kept);
        let replacement_dup = m.lit(
            Ty::u(DRAW_WIDTH),
            num_bigint::BigInt::from(
                (replacement_draws >> DRAW_WIDTH) & ((BigUint::one() << DRAW_WIDTH) - 1u32),
            ),
        );
        // The duplicate verdict, a cycle ahead: the next draw against this
        // cycle's threshold, for both candidate draws, so that `in_ready_o`
        // is a register and `force_dup_i` away from the link's issue
        // decision. The threshold therefore acts from the cycle after it is
        // set.
        // The verdict is formed from the seed and from the stepped register
        // apart, and the seed load picks one after the compares: each
        // duplicate draw bit is then one XOR of four bits before the
        // compare's carry chain, not a choice of sources and then the XOR.
        let dup_field_of = |from: Expr| {
            let bits = (DRAW_WIDTH..2 * DRAW_WIDTH)
                .rev()
                .map(|i| xor_of(from, &outs[i as usize]))
                .collect::<Vec<_>>();
            cat(&bits).is_lt(dup_thr)
        };
        let replacement_hit = replacement_dup.is_lt(dup_thr);
        let dup_hit = m.reg("dup_hit", Ty::BOOL);
        m.set_next(
            dup_hit,
            mux(
                seed_load,
                mux(seed.any(), dup_field_of(seed), replacement_hit),
                mux(live.q(), dup_field_of(stepped), replacement_hit),
            ),
        );

        let drop_draw = draws.slice(0, DRAW_WIDTH);

        let Slot { dup, drop, last } = slot_decisions(
            m,
            in_word,
            (force_dup | dup_hit.q(), force_drop | drop_draw.is_lt(drop_thr)),
        );

        // The line's first stage: the word before its flips, which is the
        // last word taken (the offered word if taken, else the repeated
        // one), and what decides the flips.
        let force = m.reg("flip_force", word_ty);
        m.set_next(force, force_flip);
        let counted = m.reg_reset("flip_counted", Ty::BOOL, 0);
        m.set_next(counted, !drop);
        let pos_bits = position_bits(width);
        // Each slot's position is registered as two one-hot parts, its low
        // three bits (the verdict folded in: all zero without a flip) and
        // the rest, so that a mask bit is one AND per slot of two registers
        // that each fan out to a few bits, not a decode of the whole
        // position from registers that fan out to every bit of the word.
        let lo_bits = pos_bits.min(3);
        let groups = width.div_ceil(1 << lo_bits);
        let mut mask = force.q();
        for s in 0..FLIP_SLOTS {
            let base = at(2 * DRAW_WIDTH + s * (DRAW_WIDTH + POS_WIDTH));
            let hit = draws.slice(base, DRAW_WIDTH).is_lt(flip_thr);
            let pos16 = draws.slice(base + DRAW_WIDTH, POS_WIDTH);
            let name = format!("flip_product{s}");
            let product = times_constant(m, pos16, width);
            let product = m.wire(&name, product);
            m.waive(
                "UNUSEDSIGNAL",
                &name,
                "the position is the high half of draw x width; the low half is the fraction dropped",
            );
            let pos = product.slice(POS_WIDTH, pos_bits);
            let low = pos.slice(0, lo_bits);
            let low_hot = cat(&(0..1u32 << lo_bits)
                .rev()
                .map(|j| hit & low.is_eq(m.lit(Ty::u(lo_bits), j)))
                .collect::<Vec<_>>());
            let high_hot = if pos_bits > lo_bits {
                let high = pos.slice(lo_bits, pos_bits - lo_bits);
                cat(&(0..groups)
                    .rev()
                    .map(|g| high.is_eq(m.lit(Ty::u(pos_bits - lo_bits), g)))
                    .collect::<Vec<_>>())
            } else {
                m.lit(Ty::u(groups), 1)
            };
            let low_q = m.reg(&format!("flip_low{s}"), Ty::u(1 << lo_bits));
            m.set_next(low_q, low_hot);
            let high_q = m.reg(&format!("flip_high{s}"), Ty::u(groups));
            m.set_next(high_q, high_hot);
            let bits = cat(&(0..width)
                .rev()
                .map(|i| high_q.q().bit(i >> lo_bits) & low_q.q().bit(i & ((1 << lo_bits) - 1)))
                .collect::<Vec<_>>());
            mask = mask ^ bits;
        }
        let mask = m.wire("flip_mask", mask);
        let entering = m.wire("entering", last ^ mask);
        let valid_out = delay(m, "line_valid", !drop, latency, Some(0));
        let word_out = delay(m, "line_word", entering, latency - 1, None);
        m.output(OUT_VALID, valid_out);
        m.output(OUT_WORD, word_out);

        // The mask is registered before its OR counts, so that the flip
        // decode and the OR over the word are not one path (nor the OR and
        // the counter's carry chain).
        let held = m.reg("flip_mask_held", word_ty);
        m.set_next(held, mask);
        let held_counted = m.reg_reset("flip_mask_counted", Ty::BOOL, 0);
        m.set_next(held_counted, counted.q());
        counters(m, drop, dup, held_counted.q() & held.q().any());
    })
}

/// The threshold that fires with `probability` per draw (rounded, clamped to
/// the draw's range), for tools that set the stub's rates. The stub itself
/// is modelled, from the docs above, by `golden::serdes_stub`.
pub fn threshold(probability: f64) -> u32 {
    let t = (probability * f64::from(1u32 << DRAW_WIDTH)).round();
    t.clamp(0.0, f64::from((1u32 << DRAW_WIDTH) - 1)) as u32
}

//! The ICI link: what it delivers, and when, on an error-free link.
//!
//! **Delivery** ([`delivered`]): every flit a client sends arrives at the
//! peer's client exactly once, in the order sent, unchanged; errors on the
//! lanes change only when. A run of the RTL under any error pattern must
//! hand over exactly `delivered(sent)`, or report a link-down and still do
//! so once the link is back.
//!
//! **Cycle model** ([`cycle_model`]): the timing contract of the link
//! (`hw/ici`'s crate docs, "Timing contract") stepped cycle by cycle for two
//! nodes A and B exchanging flits over error-free lanes of latency L (the
//! stub's latency plus the receive pipeline's depth,
//! [`config::IciConfig::word_latency`]: a receiver `depth` registers
//! deep sees the lanes as `depth` cycles longer). It is
//! written from that contract in its own terms (a window of unacknowledged
//! flits, unbounded sequence numbers, lanes as queues of words in flight),
//! not from the RTL's registers. Its rules, per node and cycle t, all read
//! the state at the start of t:
//!
//! - **Client offer.** A client offers its next flit in every cycle until
//!   all are taken. It is taken when fewer than D flits are unacknowledged
//!   and a credit is left (both as at the start of t); it joins the window
//!   and costs its credit from t + 1.
//! - **Arrival.** The word the peer offered at t - L arrives at t. Its
//!   acknowledgement (the next sequence number the peer expects) removes
//!   the acknowledged flits from the window at t. Its credit count (slots
//!   the peer has freed in all) returns the difference to the last count,
//!   usable from t + 1. A flit in it with the expected sequence number
//!   enters the receive buffer at t; the expected number moves on at t + 1.
//! - **Issue.** The oldest flit of the window that was in it at the start
//!   of t and has not been sent is sent: it is in the frame register from
//!   t + 1 (else the register holds an idle frame from t + 1).
//! - **Offer to the lanes.** The word of t is the frame register's content
//!   with the expected sequence number and the freed count as at the start
//!   of t; it arrives at the peer at t + L.
//! - **Receive buffer.** A flit that entered at p can be taken from
//!   p + 2, and from one cycle after the flit before it was taken; the
//!   client takes the head in cycles its `rx_ready` is high; a take at t
//!   counts as freed from t + 1.
//!
//! The run ends when both clients have every flit; its length is one past
//! the cycle of the last take. Cycle 0 is the first cycle after reset, when
//! the lanes are empty (nothing arrives before cycle L).
//!
//! [`LinkPair`] is that model as a state machine stepped one cycle at a
//! time, for clients that decide their offer in each cycle from what they
//! see (the torus model's routers, `golden::torus_cycle`); [`cycle_model`]
//! runs it for two clients that each send a number of flits.

use config::ici::Flit;
use config::IciConfig;
use std::collections::VecDeque;

/// What the link must deliver: the sent flits, in order, once each.
pub fn delivered(sent: &[Flit]) -> Vec<Flit> {
    sent.to_vec()
}

/// The cycles of one run by the cycle model: when each client's flits were
/// taken (`*_tx`) and delivered (`*_rx`, at the receiving client).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkTiming {
    pub a_tx: Vec<u64>,
    pub b_tx: Vec<u64>,
    /// Flits B received (from A), and A received (from B).
    pub b_rx: Vec<u64>,
    pub a_rx: Vec<u64>,
    /// One past the cycle of the last delivery.
    pub cycles: u64,
}

/// A word on the lanes: maybe a flit (its sequence number and content), the
/// acknowledgement and the freed count of its sender.
#[derive(Debug, Clone)]
struct Word<T> {
    flit: Option<(u64, T)>,
    ack: u64,
    freed: u64,
}

/// One link end's protocol state.
#[derive(Debug)]
struct End<T> {
    // Sender.
    /// Unacknowledged flits, oldest first: sequence number, whether it has
    /// been sent, content.
    window: VecDeque<(u64, bool, T)>,
    next_seq: u64,
    credits: i64,
    peer_freed: u64,
    /// The frame register: the flit it holds (none: an idle frame).
    frame: Option<(u64, T)>,
    // Receiver.
    expected: u64,
    /// Flits in the receive buffer, with the cycle each entered.
    buffer: VecDeque<(u64, T)>,
    last_take: Option<u64>,
    freed: u64,
}

/// What one cycle of a [`LinkPair`] did at each end (index 0: A, 1: B).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkStep<T> {
    /// The end's client offer was taken.
    pub taken: [bool; 2],
    /// The flit the end's client took from its receive buffer.
    pub delivered: [Option<T>; 2],
}

/// Two link ends A (0) and B (1) joined by error-free lanes of latency L,
/// stepped one cycle at a time by the rules of the module docs: the cycle
/// model of one link, for a client (a test, or a router of the torus model)
/// that decides its offer in each cycle. Flits carry any content `T`.
#[derive(Debug)]
pub struct LinkPair<T> {
    replay_depth: usize,
    latency: u64,
    ends: [End<T>; 2],
    /// lanes[k]: words offered by end k, with their arrival cycle.
    lanes: [VecDeque<(u64, Word<T>)>; 2],
    cycle: u64,
}

impl<T: Clone> LinkPair<T> {
    /// Both ends just after reset: cycle 0, lanes empty.
    pub fn new(cfg: &IciConfig) -> LinkPair<T> {
        let end = || End {
            window: VecDeque::new(),
            next_seq: 0,
            credits: i64::from(cfg.rx_buffer()),
            peer_freed: 0,
            frame: None,
            expected: 0,
            buffer: VecDeque::new(),
            last_take: None,
            freed: 0,
        };
        LinkPair {
            replay_depth: cfg.replay_depth() as usize,
            latency: u64::from(cfg.word_latency()),
            ends: [end(), end()],
            lanes: [VecDeque::new(), VecDeque::new()],
            cycle: 0,
        }
    }

    /// The cycle the next [`LinkPair::step`] runs.
    pub fn cycle(&self) -> u64 {
        self.cycle
    }

    /// Whether end `k` takes a flit offered in this cycle (`tx_ready`):
    /// fewer than D flits unacknowledged and a credit left, both as at the
    /// start of the cycle.
    pub fn tx_ready(&self, k: usize) -> bool {
        let n = &self.ends[k];
        n.window.len() < self.replay_depth && n.credits > 0
    }

    /// The flit end `k`'s client can take in this cycle (`rx_valid`), if any.
    pub fn rx_head(&self, k: usize) -> Option<&T> {
        let n = &self.ends[k];
        let (entered, flit) = n.buffer.front()?;
        let after_prev = n.last_take.is_none_or(|p| self.cycle > p);
        (self.cycle >= entered + 2 && after_prev).then_some(flit)
    }

    /// Runs one cycle: end k's client offers `offer[k]` (taken when
    /// [`LinkPair::tx_ready`]) and takes its receive buffer's head when
    /// `rx_ready[k]`.
    pub fn step(&mut self, offer: [Option<T>; 2], rx_ready: [bool; 2]) -> LinkStep<T> {
        let t = self.cycle;
        let mut report = LinkStep {
            taken: [false, false],
            delivered: [None, None],
        };
        // Words offered at t, from the state at the start of t.
        let offered: Vec<Word<T>> = self
            .ends
            .iter()
            .map(|n| Word {
                flit: n.frame.clone(),
                ack: n.expected,
                freed: n.freed,
            })
            .collect();
        for (k, (offer, word)) in offer.into_iter().zip(offered).enumerate() {
            let arriving = match self.lanes[1 - k].front() {
                Some(&(at, _)) if at == t => self.lanes[1 - k].pop_front().map(|(_, w)| w),
                _ => None,
            };
            // Client offer, against the window and credits at the start of t.
            let accept = offer.is_some() && self.tx_ready(k);
            // Receive buffer: a take, from the buffer as at the start of t.
            if rx_ready[k] && self.rx_head(k).is_some() {
                let n = &mut self.ends[k];
                let (_, flit) = n.buffer.pop_front().expect("a head");
                n.last_take = Some(t);
                report.delivered[k] = Some(flit);
            }
            let n = &mut self.ends[k];
            let mut freed_next = n.freed;
            if n.last_take == Some(t) {
                freed_next += 1;
            }
            let mut expected_next = n.expected;
            let mut credits_next = n.credits;
            if let Some(w) = arriving {
                while n.window.front().is_some_and(|&(s, _, _)| s < w.ack) {
                    n.window.pop_front();
                }
                credits_next += (w.freed - n.peer_freed) as i64;
                n.peer_freed = w.freed;
                if let Some((seq, flit)) = w.flit {
                    if seq == n.expected {
                        n.buffer.push_back((t, flit));
                        expected_next += 1;
                    }
                }
            }
            // Issue: the oldest unsent flit of the window as it stands.
            let unsent = n.window.iter_mut().find(|(_, sent, _)| !*sent);
            n.frame = match unsent {
                Some((s, sent, flit)) => {
                    *sent = true;
                    Some((*s, flit.clone()))
                }
                None => None,
            };
            if accept {
                let flit = offer.expect("an accepted offer");
                n.window.push_back((n.next_seq, false, flit));
                n.next_seq += 1;
                credits_next -= 1;
                report.taken[k] = true;
            }
            n.credits = credits_next;
            n.expected = expected_next;
            n.freed = freed_next;
            self.lanes[k].push_back((t + self.latency, word));
        }
        self.cycle += 1;
        report
    }
}

/// Steps the contract until A's `a_count` flits are at B and B's `b_count`
/// flits at A; `rx_ready(t)` gives (A's, B's) `rx_ready` in cycle t. `None`
/// if that takes more than `max_cycles`.
pub fn cycle_model(
    cfg: &IciConfig,
    a_count: usize,
    b_count: usize,
    rx_ready: &dyn Fn(u64) -> (bool, bool),
    max_cycles: u64,
) -> Option<LinkTiming> {
    let counts = [a_count, b_count];
    let mut pair = LinkPair::<()>::new(cfg);
    let mut timing = LinkTiming::default();
    let mut taken = [0usize, 0usize];
    let mut received = [0usize, 0usize];
    while received[1] < a_count || received[0] < b_count {
        let t = pair.cycle();
        if t >= max_cycles {
            return None;
        }
        let ready = rx_ready(t);
        // A client offers its next flit in every cycle until all are taken.
        let offer = [0, 1].map(|k| (taken[k] < counts[k]).then_some(()));
        let step = pair.step(offer, [ready.0, ready.1]);
        for k in 0..2 {
            if step.taken[k] {
                taken[k] += 1;
                if k == 0 {
                    timing.a_tx.push(t);
                } else {
                    timing.b_tx.push(t);
                }
            }
            if step.delivered[k].is_some() {
                received[k] += 1;
                if k == 0 {
                    timing.a_rx.push(t);
                } else {
                    timing.b_rx.push(t);
                }
            }
        }
    }
    timing.cycles = pair.cycle();
    Some(timing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lone_flit_takes_four_cycles_plus_the_latency() {
        let cfg = IciConfig::DEFAULT;
        let t = cycle_model(&cfg, 1, 0, &|_| (true, true), 1000).unwrap();
        assert_eq!(t.a_tx, [0]);
        assert_eq!(t.b_rx, [4 + u64::from(cfg.latency())]);
        let deep = cfg.with_depth(2).unwrap();
        let t = cycle_model(&deep, 1, 0, &|_| (true, true), 1000).unwrap();
        assert_eq!(t.b_rx, [4 + 2 + u64::from(cfg.latency())]);
    }

    #[test]
    fn a_buffer_covering_the_round_trip_sustains_a_flit_per_cycle() {
        let cfg = IciConfig::DEFAULT;
        let n = 1000;
        let t = cycle_model(&cfg, n, n, &|_| (true, true), 100_000).unwrap();
        assert_eq!(t.cycles, n as u64 + 4 + u64::from(cfg.latency()));
        // With a buffer below the round trip, credits throttle the sender.
        let small = IciConfig::new(64, 32, 4, 4, 64, 16, 8).unwrap();
        let t = cycle_model(&small, n, 0, &|_| (true, true), 100_000).unwrap();
        assert!(t.cycles > 2 * n as u64, "{}", t.cycles);
    }

    #[test]
    fn each_receive_stage_is_a_cycle_more_on_the_lanes() {
        // The fmax preset's link (4-byte flits, window and buffer 16, stub
        // latency 2) at every depth: a lone flit arrives a cycle later per
        // stage, and at the deepest the window and buffer of 16 still
        // cover the 16-cycle round trip, so both directions run at a flit
        // per cycle.
        let base = IciConfig::new(4, 16, 16, 2, 32, 8, 4).unwrap();
        let n = 1000;
        for depth in 0..=config::ICI_MAX_DEPTH {
            let cfg = base.with_depth(depth).unwrap();
            let lane = 2 + u64::from(depth);
            assert_eq!(u64::from(cfg.word_latency()), lane);
            let t = cycle_model(&cfg, 1, 0, &|_| (true, true), 1000).unwrap();
            assert_eq!(t.b_rx, [4 + lane], "depth {depth}");
            let t = cycle_model(&cfg, n, n, &|_| (true, true), 100_000).unwrap();
            assert_eq!(t.cycles, n as u64 + 4 + lane, "depth {depth}");
        }
        // A window one short of the round trip throttles the sender.
        let short = IciConfig::new(4, 16, 15, 2, 32, 8, 4)
            .unwrap()
            .with_depth(config::ICI_MAX_DEPTH)
            .unwrap();
        let t = cycle_model(&short, n, 0, &|_| (true, true), 100_000).unwrap();
        assert!(t.cycles > n as u64 + 4 + 5, "{}", t.cycles);
    }

    #[test]
    fn a_client_that_never_takes_stops_the_sender_after_the_buffer() {
        let cfg = IciConfig::new(4, 8, 8, 2, 32, 8, 4).unwrap();
        assert!(cycle_model(&cfg, 20, 0, &|_| (true, false), 500).is_none());
    }
}

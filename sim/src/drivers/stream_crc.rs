//! The stream CRC driver: the producer and the consumer around a Verilated
//! stream CRC (see the `stream_crc` crate docs). In cycle t (0 = the first
//! after reset) the producer offers its next beat if `offer(t)`, and the
//! consumer is ready if `ready(t)`, exactly as `golden::stream_crc::schedule`
//! assumes; the driver follows the handshakes and records when every beat
//! and CRC moved, so tests hold the RTL to the cycle model. It also checks
//! the contract's one promise the cycle count cannot see: a waiting CRC
//! holds still until it is taken.

use super::{block_model, Driver, DriverError};
use crate::verilator::Model;
use config::StreamCrcConfig;
use stream_crc::ports;

crate::block_ports! {
    /// The stream CRC's ports on a model of it.
    struct Ports {
        in_valid: ports::IN_VALID,
        in_ready: ports::IN_READY,
        in_data: ports::IN_DATA,
        in_last: ports::IN_LAST,
        out_valid: ports::OUT_VALID,
        out_ready: ports::OUT_READY,
        out_crc: ports::OUT_CRC,
        reset: hw::ir::RESET,
    }
}

/// What one run gave and measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrcRun {
    /// Each packet's CRC, in order.
    pub crcs: Vec<u64>,
    /// When beats and CRCs moved, as `golden::stream_crc::Schedule` counts.
    pub schedule: golden::stream_crc::Schedule,
}

/// A Verilated stream CRC of one configuration.
pub struct StreamCrcDriver {
    cfg: StreamCrcConfig,
    model: Model,
    p: Ports,
}

impl Driver for StreamCrcDriver {
    type Block = stream_crc::StreamCrc;
    fn open(cfg: &StreamCrcConfig) -> Result<Self, DriverError> {
        StreamCrcDriver::new(cfg)
    }
}

impl StreamCrcDriver {
    /// Builds (or loads from the cache) the Verilated block for `cfg`.
    pub fn new(cfg: &StreamCrcConfig) -> Result<StreamCrcDriver, DriverError> {
        let model = block_model(&stream_crc::StreamCrc, cfg)?;
        let p = Ports::of(&model)?;
        Ok(StreamCrcDriver {
            cfg: *cfg,
            model,
            p,
        })
    }

    pub fn config(&self) -> &StreamCrcConfig {
        &self.cfg
    }

    /// Resets the block, then streams `packets` (each a list of beats, each
    /// beat `beat_words` 32-bit words, least significant first) with the
    /// producer offering when `offer(t)` and the consumer ready when
    /// `ready(t)`; gives up after `max_cycles`.
    pub fn run(
        &mut self,
        packets: &[Vec<Vec<u32>>],
        offer: &dyn Fn(u64) -> bool,
        ready: &dyn Fn(u64) -> bool,
        max_cycles: u64,
    ) -> Result<CrcRun, DriverError> {
        let words = self.cfg.beat_words();
        let beats: Vec<(&Vec<u32>, bool)> = packets
            .iter()
            .flat_map(|pk| {
                pk.iter()
                    .enumerate()
                    .map(move |(i, b)| (b, i + 1 == pk.len()))
            })
            .collect();
        if let Some(pk) = packets.iter().position(|pk| pk.is_empty()) {
            return Err(DriverError::Input(format!("packet {pk} has no beats")));
        }
        if let Some(b) = beats.iter().find(|(b, _)| b.len() != words) {
            return Err(DriverError::Input(format!(
                "a beat of {} words, not {words}",
                b.0.len()
            )));
        }
        let p = self.p;
        self.model
            .reset_with_idle_inputs(p.reset, &[p.in_valid, p.out_ready]);
        let mut run = CrcRun {
            crcs: Vec::new(),
            schedule: Default::default(),
        };
        let mut held: Option<u64> = None;
        let mut t = 0u64;
        while run.crcs.len() < packets.len() {
            if t >= max_cycles {
                return Err(DriverError::Stuck {
                    cycles: t,
                    detail: format!(
                        "{} of {} beats taken, {} of {} CRCs",
                        run.schedule.taken.len(),
                        beats.len(),
                        run.crcs.len(),
                        packets.len()
                    ),
                });
            }
            let next = beats.get(run.schedule.taken.len());
            let offered = next.is_some() && offer(t);
            let consumer = ready(t);
            self.model.poke(p.in_valid, u64::from(offered));
            if let Some((beat, last)) = next {
                self.model.poke_wide(p.in_data, beat);
                self.model.poke(p.in_last, u64::from(*last));
            }
            self.model.poke(p.out_ready, u64::from(consumer));
            self.model.eval();
            if self.model.peek(p.out_valid) == 1 {
                let crc = self.model.peek(p.out_crc);
                if held.is_some_and(|h| h != crc) {
                    return Err(DriverError::Protocol(format!(
                        "a waiting CRC changed in cycle {t} (rule 2)"
                    )));
                }
                held = Some(crc);
                if consumer {
                    run.crcs.push(crc);
                    run.schedule.delivered.push(t);
                    held = None;
                }
            }
            if offered && self.model.peek(p.in_ready) == 1 {
                run.schedule.taken.push(t);
            }
            self.model.step();
            t += 1;
        }
        run.schedule.cycles = t;
        Ok(run)
    }
}

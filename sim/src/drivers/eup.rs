//! The EUP driver: operations into a Verilated EUP, one per cycle, and its
//! results out (see the `eup` crate docs for the interface). The timing
//! contract is simple and the driver holds the RTL to it: an operation taken
//! in cycle t has its result with `valid_o` high in cycle t + L
//! (`EupConfig::latency`), and `valid_o` is low in every other cycle.

use super::{block_model, Driver, DriverError};
use crate::verilator::Model;
use config::EupConfig;
use golden::eup::Offered;

crate::block_ports! {
    /// The EUP's ports on a model of it.
    struct Ports {
        valid_in: eup::ports::VALID_IN,
        op: eup::ports::OP,
        a: eup::ports::A,
        b: eup::ports::B,
        valid_out: eup::ports::VALID_OUT,
        y: eup::ports::Y,
        reset: hw::ir::RESET,
    }
}

/// What one run of operations gave and measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EupRun {
    /// The results (fp32 bits), in the operations' order.
    pub results: Vec<u32>,
    /// Cycles from the first operation to the last result, inclusive of
    /// the cycle it came out in.
    pub cycles: u64,
}

/// A Verilated EUP of one configuration.
pub struct EupDriver {
    cfg: EupConfig,
    model: Model,
    p: Ports,
}

impl Driver for EupDriver {
    type Block = eup::Eup;
    fn open(cfg: &EupConfig) -> Result<Self, DriverError> {
        EupDriver::new(cfg)
    }
}

impl EupDriver {
    /// Builds (or loads from the cache) the Verilated EUP for `cfg`, reset.
    pub fn new(cfg: &EupConfig) -> Result<EupDriver, DriverError> {
        let model = block_model(&eup::Eup, cfg)?;
        let p = Ports::of(&model)?;
        let mut d = EupDriver {
            cfg: *cfg,
            model,
            p,
        };
        d.reset();
        Ok(d)
    }

    pub fn config(&self) -> &EupConfig {
        &self.cfg
    }

    /// The underlying model (waveforms; offering operations before a reset).
    pub fn model_mut(&mut self) -> &mut Model {
        &mut self.model
    }

    /// Resets the EUP with no operation offered.
    pub fn reset(&mut self) {
        self.model
            .reset_with_idle_inputs(self.p.reset, &[self.p.valid_in]);
    }

    /// Offers `o` (or nothing) for one cycle: sets the inputs and evaluates,
    /// returns what `valid_o` and `y_o` show in that cycle, then clocks.
    pub fn cycle(&mut self, o: Option<Offered>) -> Option<u32> {
        let p = self.p;
        let shown = o.unwrap_or(Offered {
            code: 0,
            a: 0,
            b: 0,
        });
        self.model.poke(p.valid_in, u64::from(o.is_some()));
        self.model.poke(p.op, u64::from(shown.code));
        self.model.poke(p.a, u64::from(shown.a));
        self.model.poke(p.b, u64::from(shown.b));
        self.model.eval();
        let out = (self.model.peek(p.valid_out) == 1).then(|| self.model.peek(p.y) as u32);
        self.model.step();
        out
    }

    /// What the outputs show in each cycle while `inputs` are offered one
    /// per cycle (`None`: nothing offered), then until the last one's
    /// result could come out: `golden::eup::outputs`'s form.
    pub fn outputs(&mut self, inputs: &[Option<Offered>]) -> Vec<Option<u32>> {
        let cycles = inputs.len() + self.cfg.latency() as usize;
        (0..cycles)
            .map(|t| self.cycle(inputs.get(t).copied().flatten()))
            .collect()
    }

    /// Runs operation `code` (`config::EupOp::code`; 6 and 7 are reserved)
    /// on every `(a[i], b[i])`, one per cycle, and collects the results,
    /// checking the timing contract on every cycle. With `expected`, the
    /// first result that differs stops the run with
    /// [`DriverError::Mismatch`] (its waveform when tracing is on).
    pub fn run(
        &mut self,
        code: u32,
        a: &[u32],
        b: &[u32],
        expected: Option<&[u32]>,
    ) -> Result<EupRun, DriverError> {
        if code >= 1 << config::EupOp::BITS {
            return Err(DriverError::Input(format!(
                "operation code {code} does not fit op_i's {} bits",
                config::EupOp::BITS
            )));
        }
        if a.len() != b.len() {
            return Err(DriverError::Input(format!(
                "{} first operands and {} second ones",
                a.len(),
                b.len()
            )));
        }
        let latency = u64::from(self.cfg.latency());
        let n = a.len() as u64;
        let mut results = Vec::with_capacity(a.len());
        for t in 0..n + latency {
            let offered = (t < n).then(|| Offered {
                code,
                a: a[t as usize],
                b: b[t as usize],
            });
            let out = self.cycle(offered);
            // The operation whose result is due in cycle t, if any.
            let due = t.checked_sub(latency).filter(|&i| i < n);
            match (due, out) {
                (Some(i), Some(y)) => {
                    if let Some(e) = expected.and_then(|e| e.get(i as usize)) {
                        if *e != y {
                            self.model.step();
                            self.model.flush_trace();
                            return Err(DriverError::Mismatch {
                                what: format!("result {i}"),
                                expected: *e,
                                got: y,
                                cycle: t,
                                waveform: self.model.trace_path().map(|p| p.display().to_string()),
                            });
                        }
                    }
                    results.push(y);
                }
                (None, None) => {}
                (due, _) => {
                    return Err(DriverError::Protocol(format!(
                        "valid_o is {} in cycle {t} of the run; the contract (latency {latency}) \
                         has it {}",
                        u8::from(out.is_some()),
                        u8::from(due.is_some())
                    )))
                }
            }
        }
        Ok(EupRun {
            results,
            cycles: n + latency,
        })
    }
}

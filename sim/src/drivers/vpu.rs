//! The VPU driver: the host of the Verilated VPU's interface (see the `vpu`
//! crate docs): whole vectors in and out of VMEM and the register file over
//! the host port, and programs (bundles) streamed on the instruction port.
//!
//! It follows the handshakes and never assumes a cycle: a bundle is accepted
//! when `instr_ready_o` is high, a store is counted when `store_o` is, and a
//! program is done when `busy_o` drops. It reports what it measured (the
//! cycle each bundle was accepted, each store written, the last busy cycle)
//! so the tests can hold the RTL to the golden cycle model exactly.

use super::{block_model, Driver, DriverError};
use crate::verilator::{Model, PortId};
use config::vpu_isa::Bundle;
use config::VpuConfig;

crate::block_ports! {
    /// The VPU's ports on a model of it.
    pub struct VpuPorts {
        instr_valid: vpu::ports::INSTR_VALID,
        instr: vpu::ports::INSTR,
        instr_ready: vpu::ports::INSTR_READY,
        host_valid: vpu::ports::HOST_VALID,
        host_ready: vpu::ports::HOST_READY,
        host_write: vpu::ports::HOST_WRITE,
        host_space: vpu::ports::HOST_SPACE,
        host_addr: vpu::ports::HOST_ADDR,
        host_wdata: vpu::ports::HOST_WDATA,
        host_rdata: vpu::ports::HOST_RDATA,
        host_rvalid: vpu::ports::HOST_RVALID,
        store: vpu::ports::STORE,
        busy: vpu::ports::BUSY,
        error: vpu::ports::ERROR,
        reset: hw::ir::RESET,
    }
}

/// What the RTL did while running one program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunStats {
    /// The cycle each bundle was accepted, counted from the first acceptance.
    pub accept: Vec<u64>,
    /// The cycle of each store (`store_o` high), in order.
    pub stores: Vec<u64>,
    /// The last cycle `busy_o` was high.
    pub last_busy: u64,
    /// From the first acceptance through the last store (without stores:
    /// through the last busy cycle), as `golden::vpu::Schedule::cycles`.
    pub cycles: u64,
}

/// Where a host access goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Space {
    Vmem,
    Registers,
}

impl Driver for VpuDriver {
    type Block = vpu::Vpu;
    fn open(cfg: &VpuConfig) -> Result<Self, DriverError> {
        VpuDriver::new(cfg)
    }
}

/// A Verilated VPU of one configuration.
pub struct VpuDriver {
    cfg: VpuConfig,
    model: Model,
    p: VpuPorts,
    /// `host_wmask_i`, on a VPU with a host write mask.
    wmask: Option<PortId>,
    /// `host_wdata_i` as words (W of them).
    words: Vec<u32>,
}

impl VpuDriver {
    /// Builds (or loads from the cache) the Verilated VPU for `cfg` and resets it.
    pub fn new(cfg: &VpuConfig) -> Result<VpuDriver, DriverError> {
        let model = block_model(&vpu::Vpu, cfg)?;
        let p = VpuPorts::of(&model)?;
        let wmask = if cfg.host_wmask() {
            Some(model.port(vpu::ports::HOST_WMASK)?)
        } else {
            None
        };
        let mut d = VpuDriver {
            cfg: *cfg,
            model,
            p,
            wmask,
            words: vec![0; cfg.elems() as usize],
        };
        d.reset();
        Ok(d)
    }

    pub fn config(&self) -> &VpuConfig {
        &self.cfg
    }

    /// The underlying model (benchmarks, waveforms).
    pub fn model_mut(&mut self) -> &mut Model {
        &mut self.model
    }

    /// Drives every input low and holds reset for one cycle: the pipeline is
    /// empty and the error flag clear (registers and VMEM keep their contents).
    pub fn reset(&mut self) {
        let p = self.p;
        self.model.reset_with_idle_inputs(
            p.reset,
            &[
                p.instr_valid,
                p.host_valid,
                p.host_write,
                p.host_space,
                p.host_addr,
            ],
        );
    }

    /// Whether the error flag (an illegal instruction) is set.
    pub fn error_flag(&mut self) -> bool {
        self.model.eval();
        self.model.peek(self.p.error) == 1
    }

    fn w(&self) -> usize {
        self.cfg.elems() as usize
    }

    fn depth(&self, space: Space) -> usize {
        match space {
            Space::Vmem => self.cfg.vmem_words() as usize,
            Space::Registers => self.cfg.vregs() as usize,
        }
    }

    fn check_range(&self, space: Space, start: usize, count: usize) -> Result<(), DriverError> {
        let depth = self.depth(space);
        if start + count > depth {
            return Err(DriverError::Input(format!(
                "{count} words from {start} do not fit the {depth} of {space:?}"
            )));
        }
        Ok(())
    }

    /// Waits (stepping) until the host port is ready; it is while idle.
    fn wait_host_ready(&mut self) -> Result<(), DriverError> {
        for _ in 0..1_000_000 {
            self.model.eval();
            if self.model.peek(self.p.host_ready) == 1 {
                return Ok(());
            }
            self.model.step();
        }
        Err(DriverError::Protocol("host_ready_o never came back".into()))
    }

    /// Writes `data` (whole vectors, W elements each) to consecutive words
    /// from `start`, one per cycle.
    pub fn write(&mut self, space: Space, start: usize, data: &[u32]) -> Result<(), DriverError> {
        let all = vec![true; self.w()];
        self.write_masked(space, start, data, &all)
    }

    /// As [`VpuDriver::write`], each VMEM write changing only the elements
    /// `mask` (W flags) selects, on a VPU with a host write mask (errors
    /// otherwise, unless the mask selects every element).
    pub fn write_masked(
        &mut self,
        space: Space,
        start: usize,
        data: &[u32],
        mask: &[bool],
    ) -> Result<(), DriverError> {
        let w = self.w();
        if mask.len() != w {
            return Err(DriverError::Input(format!(
                "a write mask has W = {w} flags, not {}",
                mask.len()
            )));
        }
        match self.wmask {
            Some(port) => {
                let bits: Vec<u32> = mask
                    .chunks(32)
                    .map(|c| {
                        c.iter()
                            .enumerate()
                            .fold(0u32, |acc, (i, &b)| acc | (u32::from(b) << i))
                    })
                    .collect();
                self.model.poke_wide(port, &bits);
            }
            None if mask.iter().all(|&b| b) => {}
            None => {
                return Err(DriverError::Input(
                    "this VPU has no host write mask (host_wmask)".into(),
                ))
            }
        }
        if !data.len().is_multiple_of(w) {
            return Err(DriverError::Input(format!(
                "{} elements are not whole vectors of {w}",
                data.len()
            )));
        }
        self.check_range(space, start, data.len() / w)?;
        self.wait_host_ready()?;
        let p = self.p;
        self.model.poke(p.host_valid, 1);
        self.model.poke(p.host_write, 1);
        self.model
            .poke(p.host_space, (space == Space::Registers) as u64);
        for (k, vector) in data.chunks_exact(w).enumerate() {
            self.words.copy_from_slice(vector);
            self.model.poke(p.host_addr, (start + k) as u64);
            self.model.poke_wide(p.host_wdata, &self.words);
            self.model.step();
        }
        self.model.poke(p.host_valid, 0);
        self.model.poke(p.host_write, 0);
        Ok(())
    }

    /// Reads `count` consecutive words from `start` (one request per cycle,
    /// each answered the next cycle).
    pub fn read(
        &mut self,
        space: Space,
        start: usize,
        count: usize,
    ) -> Result<Vec<u32>, DriverError> {
        self.check_range(space, start, count)?;
        self.wait_host_ready()?;
        let p = self.p;
        let mut out = Vec::with_capacity(count * self.w());
        self.model.poke(p.host_write, 0);
        self.model
            .poke(p.host_space, (space == Space::Registers) as u64);
        self.model.poke(p.host_valid, 1);
        for k in 0..count {
            self.model.poke(p.host_addr, (start + k) as u64);
            self.model.step();
            if self.model.peek(p.host_rvalid) != 1 {
                return Err(DriverError::Protocol(
                    "host_rvalid_o not set the cycle after a read".into(),
                ));
            }
            out.extend(self.model.peek_wide(p.host_rdata));
        }
        self.model.poke(p.host_valid, 0);
        Ok(out)
    }

    /// Streams `program`, one bundle per cycle as the VPU accepts them, and
    /// waits until it is idle; returns what it measured.
    pub fn run(&mut self, program: &[Bundle]) -> Result<RunStats, DriverError> {
        self.run_with_gaps(program, &[])
    }

    /// As [`VpuDriver::run`], but before offering bundle i (for each i that
    /// `gaps` covers) the driver idles `gaps[i].0` cycles with
    /// `instr_valid_i` low and `gaps[i].1` on `instr_i`, which the VPU must
    /// ignore. The accept cycles then include the gaps (the golden cycle
    /// model assumes a stream without them).
    pub fn run_with_gaps(
        &mut self,
        program: &[Bundle],
        gaps: &[(u32, [u32; 4])],
    ) -> Result<RunStats, DriverError> {
        if program.is_empty() {
            return Err(DriverError::Input("an empty program".into()));
        }
        let p = self.p;
        let mut accept = Vec::with_capacity(program.len());
        let mut stores = Vec::new();
        let mut last_busy = 0u64;
        let mut next = 0usize;
        // Cycle 0 is the first acceptance: the unit is idle and the host
        // port quiet, so the first bundle is accepted at once.
        let mut cycle = 0u64;
        // A bundle waits at most its fold levels or, with extra execute
        // stages, the depth for a result; the last drains through the stages.
        let depth = u64::from(self.cfg.depth());
        let per_bundle = u64::from(vpu::reduction_cycles(&self.cfg)) + depth;
        let idle: u64 = gaps.iter().map(|&(n, _)| u64::from(n)).sum();
        let limit = program.len() as u64 * per_bundle + 16 + depth + idle;
        let gap_before = |i: usize| gaps.get(i).map_or(0, |&(n, _)| n);
        let mut idle_left = gap_before(0);
        self.model.poke(p.host_valid, 0);
        loop {
            let offering = next < program.len() && idle_left == 0;
            if offering {
                self.model.poke(p.instr_valid, 1);
                self.model.poke_wide(p.instr, &program[next].words());
            } else {
                self.model.poke(p.instr_valid, 0);
                if next < program.len() {
                    self.model.poke_wide(p.instr, &gaps[next].1);
                }
            }
            self.model.eval();
            if offering && self.model.peek(p.instr_ready) == 1 {
                accept.push(cycle);
                next += 1;
                idle_left = gap_before(next);
            } else if idle_left > 0 {
                idle_left -= 1;
            } else if cycle == 0 {
                return Err(DriverError::Protocol(
                    "the idle VPU did not accept the first bundle".into(),
                ));
            }
            if self.model.peek(p.store) == 1 {
                stores.push(cycle);
            }
            let busy = self.model.peek(p.busy) == 1;
            if busy {
                last_busy = cycle;
            }
            // Idle after the last acceptance: every bundle has written back.
            if next == program.len() && !busy && accept.last().is_some_and(|&a| cycle > a) {
                break;
            }
            self.model.step();
            cycle += 1;
            if cycle > limit {
                return Err(DriverError::Protocol(format!(
                    "program of {} bundles not finished after {cycle} cycles ({} accepted)",
                    program.len(),
                    accept.len()
                )));
            }
        }
        self.model.poke(p.instr_valid, 0);
        let cycles = stores.last().copied().unwrap_or(last_busy) + 1;
        Ok(RunStats {
            accept,
            stores,
            last_busy,
            cycles,
        })
    }
}

//! Array operations on the VPU: how a host runs an elementwise operation or a
//! reduction over arrays of any length, on the RTL or on the golden model.
//!
//! The arrays are cut into vectors of W elements (the last one padded) and
//! the vectors into tiles that fit VMEM; for each tile the host writes the
//! operands into VMEM, runs a program, and reads the results back. The
//! programs use the bundle's three slots so that the VMEM ports are the only
//! limit:
//!
//! - unary (`relu_f32`, `requant_i8`, ...), one bundle per vector:
//!   `vld v0, [j] ; op v0, v0 (, v1, v2) ; vst v0, [j]`;
//! - binary, two bundles per vector: `vld v0, [a_j]`, then
//!   `vld v1, [b_j] ; op v0, v0, v1 ; vst v0, [a_j]`;
//! - `select`, three bundles per vector (mask, a, b);
//! - reductions, one bundle per vector: `vld v1, [j] ; combine v0, v0, v1`
//!   (the first vector initialises `v0`), and once at the end
//!   `reduce v1, v0 ; vst v1, [0]`. The accumulator stays in `v0` across
//!   tiles. Chunk by chunk and then folded, this is the contract's order.
//!
//! `requant_i8` broadcasts its multiplier into `v1` and its shift and zero
//! point into `v2` once, before the first tile.
//!
//! The cycles reported are the programs' own (first acceptance through last
//! store, summed over tiles): the operands are already in VMEM. The bound
//! the VMEM ports set is [`port_bound`].

use crate::drivers::vpu::{Space, VpuDriver};
use config::vpu_isa::{Bundle, Op};
use config::VpuConfig;

/// A VPU that runs programs: the RTL ([`VpuDriver`]) or the golden model
/// ([`GoldenVpu`]).
pub trait VpuMachine {
    fn config(&self) -> &VpuConfig;
    /// Writes whole vectors to VMEM from word `start`.
    fn write_vmem(&mut self, start: usize, data: &[u32]) -> Result<(), String>;
    /// Reads `count` words of VMEM from `start`.
    fn read_vmem(&mut self, start: usize, count: usize) -> Result<Vec<u32>, String>;
    /// Runs a program; returns its cycles (first acceptance through last
    /// store, or through the last write-back without stores).
    fn run(&mut self, program: &[Bundle]) -> Result<u64, String>;
}

impl VpuMachine for VpuDriver {
    fn config(&self) -> &VpuConfig {
        VpuDriver::config(self)
    }
    fn write_vmem(&mut self, start: usize, data: &[u32]) -> Result<(), String> {
        self.write(Space::Vmem, start, data)
            .map_err(|e| e.to_string())
    }
    fn read_vmem(&mut self, start: usize, count: usize) -> Result<Vec<u32>, String> {
        self.read(Space::Vmem, start, count)
            .map_err(|e| e.to_string())
    }
    fn run(&mut self, program: &[Bundle]) -> Result<u64, String> {
        VpuDriver::run(self, program)
            .map(|s| s.cycles)
            .map_err(|e| e.to_string())
    }
}

/// The golden model as a [`VpuMachine`]: results from `golden::vpu::Vpu`,
/// cycles from its cycle model.
pub struct GoldenVpu(pub golden::vpu::Vpu);

impl GoldenVpu {
    pub fn new(cfg: &VpuConfig) -> GoldenVpu {
        GoldenVpu(golden::vpu::Vpu::new(cfg))
    }
}

impl VpuMachine for GoldenVpu {
    fn config(&self) -> &VpuConfig {
        self.0.config()
    }
    fn write_vmem(&mut self, start: usize, data: &[u32]) -> Result<(), String> {
        let w = self.0.config().elems() as usize;
        for (k, v) in data.chunks_exact(w).enumerate() {
            self.0.set_word((start + k) as u32, v);
        }
        Ok(())
    }
    fn read_vmem(&mut self, start: usize, count: usize) -> Result<Vec<u32>, String> {
        Ok((start..start + count)
            .flat_map(|a| self.0.word(a as u32).to_vec())
            .collect())
    }
    fn run(&mut self, program: &[Bundle]) -> Result<u64, String> {
        self.0.run(program);
        Ok(golden::vpu::schedule(self.0.config(), program).cycles)
    }
}

/// How an operation of the run CLI maps onto the VPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// One input, one output element per element.
    Unary,
    /// Two inputs (a, b).
    Binary,
    /// Mask, a, b.
    Select,
    /// One int32 input, int8 output, with multiplier, shift and zero point.
    Requant,
    /// One input, one result.
    Reduction,
}

/// The kind of an ALU operation as an array operation; `None` for the ones
/// the run CLI does not offer (`nop`, `bcast`, rotations, `splat`).
pub fn kind(op: Op) -> Option<Kind> {
    use Op::*;
    match op {
        Nop | Bcast | RotLane | RotSublane | Splat => None,
        Select => Some(Kind::Select),
        RequantI8 => Some(Kind::Requant),
        o if o.is_reduction() => Some(Kind::Reduction),
        o if o.sources() == 1 => Some(Kind::Unary),
        _ => Some(Kind::Binary),
    }
}

/// Requantization parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requant {
    pub multiplier: i32,
    pub shift: u32,
    pub zero_point: i32,
}

/// Elements per cycle the VMEM ports allow for `op` on `cfg`: each port
/// moves one vector per cycle, so an operation with k input vectors per
/// output vector is bound by the load port at W / k elements per cycle.
pub fn port_bound(cfg: &VpuConfig, op: Op) -> f64 {
    let loads = match kind(op) {
        Some(Kind::Binary) => 2.0,
        Some(Kind::Select) => 3.0,
        _ => 1.0,
    };
    f64::from(cfg.elems()) / loads
}

/// The element that pads the last vector of a reduction without changing
/// its result: +0 for sums (the contract pads fp32 sums with +0.0), the
/// smallest value for max, the largest for min.
fn reduction_pad(op: Op) -> u32 {
    match op {
        Op::ReduceMaxI32 => i32::MIN as u32,
        Op::ReduceMinI32 => i32::MAX as u32,
        Op::ReduceMaxF32 => 0xFF80_0000,
        Op::ReduceMinF32 => 0x7F80_0000,
        _ => 0,
    }
}

/// The elementwise operation that combines a chunk into a reduction's
/// accumulator.
fn combine(op: Op) -> Op {
    match op {
        Op::ReduceSumI32 => Op::AddI32,
        Op::ReduceMaxI32 => Op::MaxI32,
        Op::ReduceMinI32 => Op::MinI32,
        Op::ReduceSumF32 => Op::AddF32,
        Op::ReduceMaxF32 => Op::MaxF32,
        Op::ReduceMinF32 => Op::MinF32,
        other => panic!("{other} is not a reduction"),
    }
}

/// `data` cut into vectors of `w` elements, the last padded with `pad`.
fn vectors(data: &[u32], w: usize, pad: u32) -> Vec<u32> {
    let mut v = data.to_vec();
    v.resize(data.len().div_ceil(w) * w, pad);
    v
}

/// The result of an array operation and the cycles its programs took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpRun {
    pub output: Vec<u32>,
    pub cycles: u64,
    /// Programs run (one per tile).
    pub programs: usize,
}

/// Runs the elementwise operation `op` (unary, binary, select or
/// requantization) over `inputs` (equal lengths, 1, 2 or 3 of them as the
/// operation takes) on `m`. `requant_i8` takes one input with `requant`
/// given (the parameters broadcast), or three without (accumulators,
/// multipliers, and shift and zero point packed as its vs3 reads them). The
/// output has the inputs' length; requantized int8 values are sign-extended.
pub fn elementwise(
    m: &mut dyn VpuMachine,
    op: Op,
    inputs: &[&[u32]],
    requant: Option<Requant>,
) -> Result<OpRun, String> {
    let k = match kind(op) {
        Some(Kind::Unary) => 1,
        // Parameters broadcast, or per element (accumulator, multiplier,
        // shift and zero point as `requant_i8`'s vs3 packs them).
        Some(Kind::Requant) if requant.is_some() => 1,
        Some(Kind::Requant) => 3,
        Some(Kind::Binary) => 2,
        Some(Kind::Select) => 3,
        _ => return Err(format!("{op} is not an elementwise operation")),
    };
    if inputs.len() != k {
        return Err(format!("{op} takes {k} inputs, got {}", inputs.len()));
    }
    let n = inputs[0].len();
    if n == 0 || inputs.iter().any(|x| x.len() != n) {
        return Err("the inputs must be non-empty and of one length".into());
    }
    let cfg = *m.config();
    let w = cfg.elems() as usize;
    let per_tile = cfg.vmem_words() as usize / k;
    let data: Vec<Vec<u32>> = inputs.iter().map(|x| vectors(x, w, 0)).collect();
    let nvec = data[0].len() / w;
    let mut output = Vec::with_capacity(nvec * w);
    let (mut cycles, mut programs) = (0u64, 0usize);
    let mut setup = match (op, requant) {
        (Op::RequantI8, Some(r)) => vec![
            Bundle::op(Op::Bcast, 1, &[]).with_imm(r.multiplier as u32),
            Bundle::op(Op::Bcast, 2, &[])
                .with_imm(config::vpu_isa::requant_param_word(r.shift, r.zero_point)),
        ],
        _ => Vec::new(),
    };
    for first in (0..nvec).step_by(per_tile) {
        let c = per_tile.min(nvec - first);
        for (i, x) in data.iter().enumerate() {
            m.write_vmem(i * c, &x[first * w..(first + c) * w])?;
        }
        let mut program = std::mem::take(&mut setup);
        for j in 0..c as u32 {
            let c = c as u32;
            let bundle = match k {
                1 => Bundle::op(op, 0, &[0, 1, 2]).with_load(0, j),
                2 => {
                    program.push(Bundle::nop().with_load(0, j));
                    Bundle::op(op, 0, &[0, 1]).with_load(1, c + j)
                }
                _ => {
                    program.push(Bundle::nop().with_load(0, j));
                    program.push(Bundle::nop().with_load(1, c + j));
                    Bundle::op(op, 0, &[0, 1, 2]).with_load(2, 2 * c + j)
                }
            };
            program.push(bundle.with_store(0, j));
        }
        cycles += m.run(&program)?;
        programs += 1;
        output.extend(m.read_vmem(0, c)?);
    }
    output.truncate(n);
    Ok(OpRun {
        output,
        cycles,
        programs,
    })
}

/// Runs the reduction `op` over `x` (n >= 1 elements) on `m`; the output is
/// the one result.
pub fn reduction(m: &mut dyn VpuMachine, op: Op, x: &[u32]) -> Result<OpRun, String> {
    if kind(op) != Some(Kind::Reduction) {
        return Err(format!("{op} is not a reduction"));
    }
    if x.is_empty() {
        return Err("a reduction needs at least one element".into());
    }
    let cfg = *m.config();
    let w = cfg.elems() as usize;
    let per_tile = cfg.vmem_words() as usize;
    let data = vectors(x, w, reduction_pad(op));
    let nvec = data.len() / w;
    let (mut cycles, mut programs) = (0u64, 0usize);
    for first in (0..nvec).step_by(per_tile) {
        let c = per_tile.min(nvec - first);
        m.write_vmem(0, &data[first * w..(first + c) * w])?;
        let mut program = Vec::with_capacity(c + 1);
        for j in 0..c {
            let load = Bundle::nop().with_load(1, j as u32);
            program.push(if first + j == 0 {
                // The first chunk is the accumulator: copied, or for fp32
                // max and min read by rule 7 (max32(x, x)) so that every
                // element passes through the operation whatever W is.
                match op {
                    Op::ReduceMaxF32 | Op::ReduceMinF32 => load.with_op(combine(op), 0, &[1, 1]),
                    _ => load.with_op(Op::OrI32, 0, &[1, 1]),
                }
            } else {
                load.with_op(combine(op), 0, &[0, 1])
            });
        }
        if first + c == nvec {
            program.push(Bundle::op(op, 1, &[0]).with_store(1, 0));
        }
        cycles += m.run(&program)?;
        programs += 1;
    }
    let result = m.read_vmem(0, 1)?;
    Ok(OpRun {
        output: vec![result[0]],
        cycles,
        programs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use config::VpuUnits;

    fn golden_machine(lanes: u32, words: u32) -> GoldenVpu {
        GoldenVpu::new(&VpuConfig::with(lanes, 1, 8, words, VpuUnits::Full).unwrap())
    }

    #[test]
    fn elementwise_runs_tile_by_tile_and_costs_what_the_ports_allow() {
        let mut m = golden_machine(4, 8);
        let a: Vec<u32> = (0..37).collect();
        let b: Vec<u32> = (0..37).map(|x| 1000 * x).collect();
        let r = elementwise(&mut m, Op::AddI32, &[&a, &b], None).unwrap();
        assert_eq!(r.output, (0..37).map(|x| 1001 * x).collect::<Vec<_>>());
        // 10 vectors, 4 per tile (two inputs in 8 words): 3 programs, each
        // two bundles per vector plus the last store's cycle.
        assert_eq!(r.programs, 3);
        assert_eq!(r.cycles, (2 * 4 + 1) + (2 * 4 + 1) + (2 * 2 + 1));
        assert_eq!(port_bound(m.config(), Op::AddI32), 2.0);
    }

    #[test]
    fn reductions_follow_the_contract() {
        let mut m = golden_machine(4, 4);
        let x: Vec<u32> = (0..23).map(|i| 0x3F80_0000 + i * 0x1234).collect();
        let r = reduction(&mut m, Op::ReduceSumF32, &x).unwrap();
        assert_eq!(r.output, [golden::vpu::reduce_sum_f32(&x, 4)]);
        let ints: Vec<u32> = [-5i32, -9, -3].iter().map(|&v| v as u32).collect();
        let r = reduction(&mut m, Op::ReduceMaxI32, &ints).unwrap();
        assert_eq!(r.output, [-3i32 as u32]);
        let r = reduction(&mut m, Op::ReduceMaxF32, &[0x0000_0001]).unwrap();
        assert_eq!(r.output, [0]);
    }

    #[test]
    fn requantization_broadcasts_its_parameters() {
        let mut m = golden_machine(2, 4);
        let acc = [1000u32, (-1000i32) as u32, 5];
        let q = Requant {
            multiplier: 1 << 30,
            shift: 2,
            zero_point: -3,
        };
        let r = elementwise(&mut m, Op::RequantI8, &[&acc], Some(q)).unwrap();
        let want: Vec<u32> = acc
            .iter()
            .map(|&a| i32::from(golden::requant_int8(a as i32, 1 << 30, 2, -3)) as u32)
            .collect();
        assert_eq!(r.output, want);
    }
}

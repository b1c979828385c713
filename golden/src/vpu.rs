//! The vector unit (VPU): what a program computes, and when.
//!
//! [`Vpu`] executes bundles (`config::vpu_isa::Bundle`) on a register file
//! and a vector memory, exactly as the instruction set documentation of the
//! `vpu` crate defines them and with the arithmetic of "VPU semantics" in
//! `docs/numerics.md`. [`schedule`] is the cycle model: the cycle in which the
//! hardware accepts each bundle, writes each store, and goes idle. Both are
//! written from that documentation, not from the RTL; the tests hold the
//! RTL's final register file, VMEM image and measured cycles to them.
//!
//! The contract's reductions over arrays of any length (padding, chunks of W,
//! then the fold in halves) are here too ([`reduce_sum_f32`] and friends), so
//! a program that computes one on the VPU can be checked against the
//! contract directly.
//!
//! # Machine
//!
//! W = lanes x sublanes 32-bit elements per vector; element `s * lanes + l`
//! is lane `l` of sublane `s`. V registers and D VMEM words of W elements. A
//! register field names register `r mod V`, an address field word `a mod D`
//! (V and D are powers of two, so these are the low bits).
//!
//! A bundle executes its slots in order: load (`reg = VMEM[addr]`), the ALU
//! slot, store (`VMEM[addr] = reg`). An opcode that names no operation, or
//! an fp32 operation on an int32-only VPU, is an illegal instruction: its ALU
//! slot writes nothing and sets the sticky error flag; its load and store
//! slots still execute.
//!
//! # Timing contract
//!
//! The pipeline has an issue stage, 1 + `depth` execute stages (`depth`
//! from the configuration) and a write-back stage. A bundle occupies the
//! first execute stage for E cycles: for a legal reduction at depth 0,
//! E = max(1, log2 W) (one level of the fold per cycle); at depth d >= 1,
//! E = 1 + log2 W x (s + 1) for W >= 2 with s = d (a cycle to
//! register the fold's operands, then s + 1 cycles per level, its s-stage
//! unit filling) and 1 for W = 1 (`VpuConfig::reduction_cycles`); E = 1 for
//! everything else.
//! While a reduction folds, every stage holds. Each other cycle every stage passes
//! its bundle on. A bundle's store writes VMEM in the cycle it leaves the
//! last execute stage; its ALU result is written at the end of the cycle
//! after, its load at the end of the cycle after it leaves the first
//! execute stage.
//!
//! Bundles presented back to back: bundle 0 is accepted in cycle 0, bundle
//! i+1 in the first cycle in which the stages advance and it has no hazard.
//! At depth 0 there is none: bundle i+1 is accepted in cycle
//! `accept(i) + E(i)` (every result is forwarded). At depth d >= 1 a bundle
//! waits while a bundle in execute stages 1 to d
//! - has an ALU result still to write to a register the bundle reads (an
//!   operand its operation uses, `Op::sources`; or the register it stores,
//!   unless its own ALU result is that register) and its own load does not
//!   write that register, or
//! - stores to the VMEM word the bundle loads.
//!
//! A load of a register cancels the older ALU writes to it still in stages
//! 1 to d (no bundle between reads it, or it would have waited), so loads
//! never wait for results they replace.
//!
//! The unit is busy while any stage holds a bundle. A program's cycles run
//! from its first acceptance through its last store: `store(last) + 1` (a
//! program without stores: through its last write-back).

use crate::numerics::{
    add32, eq_f32, f32_to_i32, i32_to_f32, le_f32, lt_f32, max32, min32, mul32, narrow_bf16,
    ne_f32, relu6_f32, relu_f32, requant_int8, sub32, widen_bf16,
};
use config::vpu_isa::{Bundle, Op};
use config::VpuConfig;

/// The state of a VPU: registers, vector memory, error flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vpu {
    cfg: VpuConfig,
    /// Register r, element e at `r * W + e`.
    regs: Vec<u32>,
    /// VMEM word a, element e at `a * W + e`.
    vmem: Vec<u32>,
    error: bool,
}

impl Vpu {
    /// A VPU of configuration `cfg` with every register and VMEM word zero.
    pub fn new(cfg: &VpuConfig) -> Vpu {
        let w = cfg.elems() as usize;
        Vpu {
            cfg: *cfg,
            regs: vec![0; cfg.vregs() as usize * w],
            vmem: vec![0; cfg.vmem_words() as usize * w],
            error: false,
        }
    }

    pub fn config(&self) -> &VpuConfig {
        &self.cfg
    }

    fn w(&self) -> usize {
        self.cfg.elems() as usize
    }

    fn reg_index(&self, r: u8) -> usize {
        usize::from(r) & (self.cfg.vregs() as usize - 1)
    }

    fn word_index(&self, addr: u32) -> usize {
        addr as usize & (self.cfg.vmem_words() as usize - 1)
    }

    /// Register `r` (mod V).
    pub fn reg(&self, r: u8) -> &[u32] {
        let (w, i) = (self.w(), self.reg_index(r));
        &self.regs[i * w..(i + 1) * w]
    }

    /// Sets register `r` (mod V).
    ///
    /// # Panics
    ///
    /// If `value` is not W elements long.
    pub fn set_reg(&mut self, r: u8, value: &[u32]) {
        let (w, i) = (self.w(), self.reg_index(r));
        self.regs[i * w..(i + 1) * w].copy_from_slice(value);
    }

    /// VMEM word `addr` (mod D).
    pub fn word(&self, addr: u32) -> &[u32] {
        let (w, i) = (self.w(), self.word_index(addr));
        &self.vmem[i * w..(i + 1) * w]
    }

    /// Sets VMEM word `addr` (mod D).
    ///
    /// # Panics
    ///
    /// If `value` is not W elements long.
    pub fn set_word(&mut self, addr: u32, value: &[u32]) {
        let (w, i) = (self.w(), self.word_index(addr));
        self.vmem[i * w..(i + 1) * w].copy_from_slice(value);
    }

    /// Every register, register-major (`r * W + e`).
    pub fn regs(&self) -> &[u32] {
        &self.regs
    }

    /// All of VMEM, word-major (`a * W + e`).
    pub fn vmem(&self) -> &[u32] {
        &self.vmem
    }

    /// Whether an illegal instruction has executed.
    pub fn error(&self) -> bool {
        self.error
    }

    /// Executes `program`, bundle by bundle.
    pub fn run(&mut self, program: &[Bundle]) {
        for b in program {
            self.execute(b);
        }
    }

    /// Executes one bundle: load, ALU slot, store.
    pub fn execute(&mut self, b: &Bundle) {
        if let Some(l) = b.load {
            let v = self.word(l.addr).to_vec();
            self.set_reg(l.reg, &v);
        }
        match legal_op(&self.cfg, b) {
            Some(Op::Nop) => {}
            Some(op) => {
                let a = &b.alu;
                let result = self.compute(op, a.vs1, a.vs2, a.vs3, b.imm);
                self.set_reg(a.vd, &result);
            }
            None => self.error = true,
        }
        if let Some(s) = b.store {
            let v = self.reg(s.reg).to_vec();
            self.set_word(s.addr, &v);
        }
    }

    /// The value `op` writes to `vd`.
    fn compute(&self, op: Op, vs1: u8, vs2: u8, vs3: u8, imm: u32) -> Vec<u32> {
        let (a, b, c) = (self.reg(vs1), self.reg(vs2), self.reg(vs3));
        let w = self.w();
        let (lanes, sublanes) = (self.cfg.lanes() as usize, self.cfg.sublanes() as usize);
        let map1 = |f: &dyn Fn(u32) -> u32| a.iter().map(|&x| f(x)).collect::<Vec<u32>>();
        let map2 = |f: &dyn Fn(u32, u32) -> u32| {
            a.iter()
                .zip(b)
                .map(|(&x, &y)| f(x, y))
                .collect::<Vec<u32>>()
        };
        let int = |x: u32| x as i32;
        let flag = |t: bool| u32::from(t);
        use Op::*;
        match op {
            Nop => unreachable!("nop writes nothing"),
            AddI32 => map2(&|x, y| x.wrapping_add(y)),
            SubI32 => map2(&|x, y| x.wrapping_sub(y)),
            MulI32 => map2(&|x, y| x.wrapping_mul(y)),
            MinI32 => map2(&|x, y| int(x).min(int(y)) as u32),
            MaxI32 => map2(&|x, y| int(x).max(int(y)) as u32),
            AndI32 => map2(&|x, y| x & y),
            OrI32 => map2(&|x, y| x | y),
            XorI32 => map2(&|x, y| x ^ y),
            NotI32 => map1(&|x| !x),
            ShlI32 => map2(&|x, y| x << (y & 31)),
            ShrI32 => map2(&|x, y| x >> (y & 31)),
            SraI32 => map2(&|x, y| (int(x) >> (y & 31)) as u32),
            ReluI32 => map1(&|x| int(x).max(0) as u32),
            EqI32 => map2(&|x, y| flag(x == y)),
            NeI32 => map2(&|x, y| flag(x != y)),
            LtI32 => map2(&|x, y| flag(int(x) < int(y))),
            LeI32 => map2(&|x, y| flag(int(x) <= int(y))),
            LtuI32 => map2(&|x, y| flag(x < y)),
            LeuI32 => map2(&|x, y| flag(x <= y)),
            Select => (0..w)
                .map(|e| if a[e] != 0 { b[e] } else { c[e] })
                .collect(),
            Bcast => vec![imm; w],
            RequantI8 => (0..w)
                .map(|e| {
                    let (shift, zero_point) = requant_params(c[e]);
                    i32::from(requant_int8(int(a[e]), int(b[e]), shift, zero_point)) as u32
                })
                .collect(),
            AddF32 => map2(&add32),
            SubF32 => map2(&sub32),
            MulF32 => map2(&mul32),
            MinF32 => map2(&min32),
            MaxF32 => map2(&max32),
            ReluF32 => map1(&relu_f32),
            Relu6F32 => map1(&relu6_f32),
            EqF32 => map2(&|x, y| flag(eq_f32(x, y))),
            NeF32 => map2(&|x, y| flag(ne_f32(x, y))),
            LtF32 => map2(&|x, y| flag(lt_f32(x, y))),
            LeF32 => map2(&|x, y| flag(le_f32(x, y))),
            CvtI32F32 => map1(&|x| i32_to_f32(int(x))),
            CvtF32I32 => map1(&|x| f32_to_i32(x) as u32),
            CvtF32Bf16 => map1(&|x| u32::from(narrow_bf16(x))),
            CvtBf16F32 => map1(&|x| widen_bf16(x as u16)),
            ReduceSumI32 => reduced(w, fold(a, &|x, y| x.wrapping_add(y))),
            ReduceMaxI32 => reduced(w, fold(a, &|x, y| int(x).max(int(y)) as u32)),
            ReduceMinI32 => reduced(w, fold(a, &|x, y| int(x).min(int(y)) as u32)),
            ReduceSumF32 => reduced(w, fold(a, &add32)),
            ReduceMaxF32 => reduced(w, fold(a, &max32)),
            ReduceMinF32 => reduced(w, fold(a, &min32)),
            RotLane => {
                let k = imm as usize % lanes;
                (0..w)
                    .map(|e| {
                        let (s, l) = (e / lanes, e % lanes);
                        a[s * lanes + (l + k) % lanes]
                    })
                    .collect()
            }
            RotSublane => {
                let k = imm as usize % sublanes;
                (0..w)
                    .map(|e| {
                        let (s, l) = (e / lanes, e % lanes);
                        a[((s + k) % sublanes) * lanes + l]
                    })
                    .collect()
            }
            Splat => vec![a[0]; w],
        }
    }
}

/// The shift (bits 4..0) and zero point (bits 15..8, int8) of a
/// `requant_i8` parameter element.
pub fn requant_params(p: u32) -> (u32, i32) {
    (p & 31, i32::from((p >> 8) as u8 as i8))
}

/// The operation of `b`'s ALU slot if it is legal on `cfg`; `None` for an
/// illegal instruction.
pub fn legal_op(cfg: &VpuConfig, b: &Bundle) -> Option<Op> {
    b.alu
        .op()
        .filter(|op| cfg.units().has_fp32() || !op.needs_fp32())
}

/// The fold in halves of "VPU semantics": while len > 1,
/// `x[j] = f(x[j], x[j + len/2])` for j < len/2, len = len/2. `x.len()` must
/// be a power of two.
pub fn fold(x: &[u32], f: &dyn Fn(u32, u32) -> u32) -> u32 {
    assert!(x.len().is_power_of_two(), "fold of {} elements", x.len());
    let mut acc = x.to_vec();
    let mut len = acc.len();
    while len > 1 {
        let half = len / 2;
        for j in 0..half {
            acc[j] = f(acc[j], acc[j + half]);
        }
        len = half;
    }
    acc[0]
}

/// A reduction's destination of `w` elements: the result in element 0,
/// zeros elsewhere.
fn reduced(w: usize, value: u32) -> Vec<u32> {
    let mut v = vec![0; w];
    v[0] = value;
    v
}

/// The fp32 sum of `x` (n >= 1 elements) in the contract's order for W = `w`:
/// pad with +0.0 to a multiple of W; acc = the first chunk; acc\[j\] =
/// add32(acc\[j\], chunk\[j\]) for each further chunk in order; then the fold in
/// halves. The result depends on W.
///
/// # Panics
///
/// If `x` is empty or `w` is not a power of two.
pub fn reduce_sum_f32(x: &[u32], w: usize) -> u32 {
    fold(&chunk_accumulate(x, w, 0, &add32), &add32)
}

/// The int32 sum of `x`, wrapping (order does not matter).
pub fn reduce_sum_i32(x: &[i32]) -> i32 {
    x.iter().fold(0i32, |s, &v| s.wrapping_add(v))
}

/// The largest element of `x` (n >= 1).
pub fn reduce_max_i32(x: &[i32]) -> i32 {
    *x.iter().max().expect("a reduction of at least one element")
}

/// The smallest element of `x` (n >= 1).
pub fn reduce_min_i32(x: &[i32]) -> i32 {
    *x.iter().min().expect("a reduction of at least one element")
}

/// max32 over the elements of `x` (n >= 1), each read by rule 7 (a single
/// subnormal element gives a zero of its sign, any NaN the canonical NaN);
/// order does not matter.
pub fn reduce_max_f32(x: &[u32]) -> u32 {
    assert!(!x.is_empty(), "a reduction of at least one element");
    x.iter().fold(x[0], |m, &v| max32(m, v))
}

/// min32 over the elements of `x` (n >= 1), as [`reduce_max_f32`].
pub fn reduce_min_f32(x: &[u32]) -> u32 {
    assert!(!x.is_empty(), "a reduction of at least one element");
    x.iter().fold(x[0], |m, &v| min32(m, v))
}

/// `x` padded with `pad` to a multiple of `w`, its chunks of `w` combined
/// element by element with `f` in order (the first chunk as is).
fn chunk_accumulate(x: &[u32], w: usize, pad: u32, f: &dyn Fn(u32, u32) -> u32) -> Vec<u32> {
    assert!(!x.is_empty(), "a reduction of at least one element");
    assert!(w.is_power_of_two(), "W = {w} is not a power of two");
    let mut acc = vec![pad; w];
    acc[..x.len().min(w)].copy_from_slice(&x[..x.len().min(w)]);
    for chunk in x.chunks(w).skip(1) {
        for (j, a) in acc.iter_mut().enumerate() {
            *a = f(*a, chunk.get(j).copied().unwrap_or(pad));
        }
    }
    acc
}

/// When a program runs: the cycle model of the timing contract (module docs),
/// for bundles presented back to back from cycle 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    /// The cycle each bundle is accepted.
    pub accept: Vec<u64>,
    /// The cycle each store writes VMEM, in program order.
    pub stores: Vec<u64>,
    /// The last cycle the unit is busy (the last bundle's write-back).
    pub last_busy: u64,
    /// Cycles from the first acceptance through the last store (or, without
    /// stores, through the last write-back).
    pub cycles: u64,
}

/// Cycles bundle `b` spends in the first execute stage on `cfg`.
pub fn execute_cycles(cfg: &VpuConfig, b: &Bundle) -> u64 {
    match legal_op(cfg, b) {
        Some(op) if op.is_reduction() => u64::from(cfg.reduction_cycles()),
        _ => 1,
    }
}

/// A bundle in an execute stage, as the interlock sees it.
#[derive(Debug, Clone, Copy)]
struct InFlight {
    /// Whether it stores.
    has_store: bool,
    /// The register its ALU result is still to write (none if it writes
    /// none, or a younger load cancelled the write).
    writes: Option<usize>,
    /// The VMEM word it stores.
    stores: Option<usize>,
}

/// What one cycle of [`VpuTimer::step`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VpuStep {
    /// The bundle offered in this cycle was accepted.
    pub accepted: bool,
    /// A store wrote VMEM in this cycle (`store_o`).
    pub store: bool,
}

/// The timing contract (module docs) as a machine stepped a cycle at a
/// time, for a stream that may leave gaps: a core that issues bundles
/// between other work (TensorCore v2) asks it, each cycle, whether the unit
/// is busy and whether the bundle it offers is accepted.
#[derive(Debug, Clone)]
pub struct VpuTimer {
    cfg: VpuConfig,
    /// Execute stages 1 to 1 + depth, then write-back.
    stages: Vec<Option<InFlight>>,
    /// Cycles the bundle in the first execute stage has still to fold.
    fold_left: u64,
}

impl VpuTimer {
    /// An idle unit (just reset).
    pub fn new(cfg: &VpuConfig) -> VpuTimer {
        VpuTimer {
            cfg: *cfg,
            stages: vec![None; cfg.depth() as usize + 2],
            fold_left: 0,
        }
    }

    /// `busy_o` in the coming cycle: a bundle is in execute or write-back.
    pub fn busy(&self) -> bool {
        self.stages.iter().any(Option::is_some)
    }

    /// One cycle with `offered` on the instruction port (or none).
    pub fn step(&mut self, offered: Option<&Bundle>) -> VpuStep {
        let cfg = self.cfg;
        let depth = cfg.depth() as usize;
        let reg = |r: u8| usize::from(r) & (cfg.vregs() as usize - 1);
        let word = |a: u32| a as usize & (cfg.vmem_words() as usize - 1);
        let advance = self.fold_left == 0;
        let accepted = match offered {
            Some(b) if advance => !waits(&cfg, b, &self.stages[..depth], reg, word),
            _ => false,
        };
        let mut store = false;
        if advance {
            if let Some(Some(last)) = self.stages.get(depth) {
                store = last.has_store;
            }
            let taken = offered.filter(|_| accepted);
            if let Some(l) = taken.and_then(|b| b.load) {
                for s in self.stages[..depth].iter_mut().flatten() {
                    if s.writes == Some(reg(l.reg)) {
                        s.writes = None;
                    }
                }
            }
            self.stages.rotate_right(1);
            self.stages[0] = taken.map(|b| {
                let op = legal_op(&cfg, b);
                self.fold_left = execute_cycles(&cfg, b) - 1;
                InFlight {
                    has_store: b.store.is_some(),
                    writes: op.filter(|o| o.writes()).map(|_| reg(b.alu.vd)),
                    stores: b.store.map(|s| word(s.addr)),
                }
            });
        } else {
            self.fold_left -= 1;
        }
        VpuStep { accepted, store }
    }
}

/// The cycle model of `program` on `cfg` (see the module docs).
///
/// # Panics
///
/// If `program` is empty.
pub fn schedule(cfg: &VpuConfig, program: &[Bundle]) -> Schedule {
    assert!(!program.is_empty(), "an empty program has no schedule");
    let mut timer = VpuTimer::new(cfg);
    let mut accept = Vec::with_capacity(program.len());
    let mut stores = Vec::new();
    let mut next = 0usize;
    let mut cycle = 0u64;
    let mut last_busy = 0u64;
    loop {
        let busy = timer.busy();
        if busy {
            last_busy = cycle;
        }
        if next == program.len() && !busy {
            break;
        }
        let step = timer.step(program.get(next));
        if step.accepted {
            accept.push(cycle);
            next += 1;
        }
        if step.store {
            stores.push(cycle);
        }
        cycle += 1;
    }
    // Cycles were counted from the first acceptance, which is cycle 0.
    let cycles = stores.last().map_or(last_busy, |&s| s) + 1;
    Schedule {
        accept,
        stores,
        last_busy,
        cycles,
    }
}

/// Whether bundle `b` waits in the stream behind the bundles in execute
/// stages 1 to depth (`ahead`): the interlock of the module docs.
fn waits(
    cfg: &VpuConfig,
    b: &Bundle,
    ahead: &[Option<InFlight>],
    reg: impl Fn(u8) -> usize,
    word: impl Fn(u32) -> usize,
) -> bool {
    let own_load = b.load.map(|l| reg(l.reg));
    let pending =
        |r: usize| own_load != Some(r) && ahead.iter().flatten().any(|s| s.writes == Some(r));
    let op = legal_op(cfg, b);
    let alu_reads = op.map_or(0, |o| o.sources());
    let a = &b.alu;
    let operand = [a.vs1, a.vs2, a.vs3][..alu_reads]
        .iter()
        .any(|&r| pending(reg(r)));
    let own_alu = op.filter(|o| o.writes()).map(|_| reg(a.vd));
    let store = b
        .store
        .is_some_and(|s| own_alu != Some(reg(s.reg)) && pending(reg(s.reg)));
    let memory = b.load.is_some_and(|l| {
        ahead
            .iter()
            .flatten()
            .any(|s| s.stores == Some(word(l.addr)))
    });
    operand || store || memory
}

#[cfg(test)]
mod tests {
    use super::*;
    use config::VpuUnits;

    fn cfg(lanes: u32, sublanes: u32) -> VpuConfig {
        VpuConfig::with(lanes, sublanes, 8, 16, VpuUnits::Full).unwrap()
    }

    #[test]
    fn slots_run_load_alu_store_in_order() {
        let c = cfg(2, 1);
        let mut v = Vpu::new(&c);
        v.set_word(0, &[5, 7]);
        v.set_reg(1, &[10, 20]);
        // The ALU sees the load of its own bundle, the store its ALU result.
        v.execute(
            &Bundle::op(Op::AddI32, 2, &[0, 1])
                .with_load(0, 0)
                .with_store(2, 3),
        );
        assert_eq!(v.word(3), &[15, 27]);
        // Register and address fields wrap at V and D.
        v.execute(&Bundle::nop().with_load(9, 19));
        assert_eq!(v.reg(1), &[15, 27]);
    }

    #[test]
    fn cross_lane_operations() {
        let c = cfg(4, 2);
        let mut v = Vpu::new(&c);
        v.set_reg(0, &[0, 1, 2, 3, 10, 11, 12, 13]);
        v.execute(&Bundle::op(Op::RotLane, 1, &[0]).with_imm(1));
        assert_eq!(v.reg(1), &[1, 2, 3, 0, 11, 12, 13, 10]);
        v.execute(&Bundle::op(Op::RotSublane, 1, &[0]).with_imm(3));
        assert_eq!(v.reg(1), &[10, 11, 12, 13, 0, 1, 2, 3]);
        v.execute(&Bundle::op(Op::ReduceSumI32, 1, &[0]));
        assert_eq!(v.reg(1), &[52, 0, 0, 0, 0, 0, 0, 0]);
        v.execute(&Bundle::op(Op::Splat, 2, &[1]));
        assert_eq!(v.reg(2), &[52; 8]);
    }

    #[test]
    fn illegal_instructions_write_nothing_and_set_the_flag() {
        let c = cfg(2, 1).with_units(VpuUnits::Int32);
        let mut v = Vpu::new(&c);
        v.set_word(1, &[3, 4]);
        v.execute(&Bundle::op(Op::AddF32, 0, &[0, 0]).with_load(2, 1));
        assert!(v.error());
        assert_eq!(v.reg(0), &[0, 0]);
        assert_eq!(v.reg(2), &[3, 4]);
        let mut bad = Bundle::nop();
        bad.alu.opcode = 0x7F;
        let mut v = Vpu::new(&cfg(2, 1));
        v.execute(&bad);
        assert!(v.error());
    }

    #[test]
    fn the_schedule_holds_the_issue_for_reductions_only() {
        let c = cfg(8, 1);
        let p = [
            Bundle::op(Op::AddI32, 0, &[0, 0]).with_store(0, 0),
            Bundle::op(Op::ReduceSumF32, 1, &[0]).with_store(1, 1),
            Bundle::op(Op::AddI32, 2, &[1, 1]),
        ];
        let s = schedule(&c, &p);
        assert_eq!(s.accept, [0, 1, 4]);
        assert_eq!(s.stores, [1, 4]);
        assert_eq!(s.last_busy, 6);
        assert_eq!(s.cycles, 5);
        // On an int32-only VPU the fp32 reduction is illegal: one cycle.
        let s = schedule(&c.with_units(VpuUnits::Int32), &p);
        assert_eq!(s.accept, [0, 1, 2]);
        // W = 1 and W = 2 reduce in one cycle.
        assert_eq!(execute_cycles(&cfg(1, 1), &p[1]), 1);
        assert_eq!(execute_cycles(&cfg(2, 1), &p[1]), 1);
    }

    #[test]
    fn extra_stages_delay_dependent_bundles_only() {
        let c = cfg(8, 1).with_depth(2).unwrap();
        // Independent bundles stream; the store lands 1 + depth cycles on.
        let stream = [
            Bundle::op(Op::AddI32, 0, &[1, 1]).with_store(0, 0),
            Bundle::op(Op::AddI32, 2, &[1, 1]).with_store(2, 1),
        ];
        let s = schedule(&c, &stream);
        assert_eq!(s.accept, [0, 1]);
        assert_eq!(s.stores, [3, 4]);
        assert_eq!(s.last_busy, 5);
        // A result used one bundle later costs the depth, two later one
        // cycle less; a load of the register instead cancels the write.
        let chain = [
            Bundle::op(Op::AddI32, 0, &[1, 1]),
            Bundle::op(Op::AddI32, 2, &[0, 1]),
            Bundle::op(Op::AddI32, 3, &[1, 1]),
            Bundle::op(Op::AddI32, 4, &[2, 1]),
            Bundle::op(Op::AddI32, 4, &[1, 1]),
            Bundle::nop().with_load(4, 0),
            Bundle::op(Op::AddI32, 5, &[4, 4]),
        ];
        assert_eq!(schedule(&c, &chain).accept, [0, 3, 4, 6, 7, 8, 9]);
        // A load waits for a store to its word still in the stages.
        let memory = [
            Bundle::nop().with_store(1, 3),
            Bundle::nop().with_load(1, 3),
        ];
        assert_eq!(schedule(&c, &memory).accept, [0, 3]);
        // A reduction's result: its pipelined fold (a cycle for the
        // operands, then 3 levels of 1 + depth cycles), then the depth.
        let reduce = [
            Bundle::op(Op::ReduceSumI32, 0, &[1]),
            Bundle::op(Op::Splat, 2, &[0]),
        ];
        assert_eq!(execute_cycles(&c, &reduce[0]), 10);
        assert_eq!(schedule(&c, &reduce).accept, [0, 12]);
        // The model's results do not depend on the depth.
        let mut shallow = Vpu::new(&cfg(8, 1));
        let mut deep = Vpu::new(&c);
        shallow.set_reg(1, &[1, 2, 3, 4, 5, 6, 7, 8]);
        deep.set_reg(1, &[1, 2, 3, 4, 5, 6, 7, 8]);
        shallow.run(&chain);
        deep.run(&chain);
        assert_eq!(shallow.regs(), deep.regs());
    }

    #[test]
    fn at_depth_six_the_fold_registers_its_operands_and_results_wait_longer() {
        let c = cfg(4, 1).with_depth(6).unwrap();
        let chain = [
            Bundle::op(Op::MulF32, 0, &[1, 1]),
            Bundle::op(Op::AddF32, 2, &[0, 1]).with_store(2, 0),
            Bundle::nop().with_load(3, 0),
        ];
        // The result one bundle ahead costs six cycles; the store lands
        // seven after its bundle; the load behind it waits for it.
        let s = schedule(&c, &chain);
        assert_eq!(s.accept, [0, 7, 14]);
        assert_eq!(s.stores, [14]);
        // The fold's levels take the fp32 adder's sixth cut, on their
        // operands: one cycle more per level than at depth 5 (two levels
        // for W = 4).
        let reduce = [
            Bundle::op(Op::ReduceSumF32, 0, &[1]),
            Bundle::op(Op::Splat, 2, &[0]),
        ];
        let five = cfg(4, 1).with_depth(5).unwrap();
        assert_eq!(execute_cycles(&c, &reduce[0]), 15);
        assert_eq!(execute_cycles(&five, &reduce[0]), 13);
        assert_eq!(schedule(&c, &reduce).accept, [0, 21]);
        assert_eq!(schedule(&five, &reduce).accept, [0, 18]);
    }

    #[test]
    fn the_contract_sum_pads_chunks_and_folds() {
        let one = 0x3F80_0000;
        assert_eq!(reduce_sum_f32(&[one; 5], 4), 0x40A0_0000);
        // -0 alone stays -0 for W = 1 (no addition), but padding with +0
        // turns it into +0 for W = 2.
        assert_eq!(reduce_sum_f32(&[0x8000_0000], 1), 0x8000_0000);
        assert_eq!(reduce_sum_f32(&[0x8000_0000], 2), 0);
        assert_eq!(reduce_max_f32(&[0x0000_0001]), 0);
        assert_eq!(reduce_max_i32(&[-3, -1, -2]), -1);
        assert_eq!(reduce_sum_i32(&[i32::MAX, 1]), i32::MIN);
    }
}

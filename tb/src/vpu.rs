//! Checking the VPU in RTL against the golden model: programs run on both
//! from the same register file and VMEM images, compared on the final images
//! bit for bit and on every measured cycle; random programs whose
//! read-after-write hazards cover every distance.

use config::vpu_isa::{AluSlot, Bundle, Op};
use config::VpuConfig;
use golden::vpu::{schedule, Vpu};
use rand::Rng;
use sim::drivers::vpu::{Space, VpuDriver};
use sim::drivers::vpu_ops::{self, GoldenVpu, OpRun, Requant};

/// The configuration of the VPU block's preset `name` (the ones the RTL
/// checks and the FPGA report use).
pub fn preset(name: &str) -> VpuConfig {
    crate::preset(&vpu::Vpu, name)
}

/// `cfg` at the depths every VPU check covers: 0, 1 and the `fmax`
/// preset's.
pub fn depths(cfg: &VpuConfig) -> Vec<VpuConfig> {
    let fmax = preset("fmax").depth();
    [0, 1, fmax]
        .iter()
        .map(|&d| cfg.with_depth(d).expect("valid depths"))
        .collect()
}

/// Builds the Verilated VPU for `cfg` (once per test process and shape: a
/// build costs seconds).
pub fn driver(cfg: &VpuConfig) -> VpuDriver {
    VpuDriver::new(cfg).unwrap_or_else(|e| panic!("cannot build the {cfg} VPU: {e}"))
}

/// Runs `program` on the RTL and the golden model, both starting from the
/// register file `regs` (V x W elements, register-major) and VMEM `vmem`
/// (D x W), and checks the final register file, VMEM and error flag bit for
/// bit, and the cycle of every acceptance and store and the last busy cycle
/// against the cycle model. `what` names the case in failures.
pub fn check_program(
    d: &mut VpuDriver,
    regs: &[u32],
    vmem: &[u32],
    program: &[Bundle],
    what: &str,
) {
    check_program_with_gaps(d, regs, vmem, program, &[], what);
}

/// [`check_program`] with idle cycles before the bundles and noise on
/// `instr_i` in them ([`VpuDriver::run_with_gaps`]): the same bits are
/// checked, and the cycles only when `gaps` is empty (the cycle model
/// streams the program without gaps).
pub fn check_program_with_gaps(
    d: &mut VpuDriver,
    regs: &[u32],
    vmem: &[u32],
    program: &[Bundle],
    gaps: &[(u32, [u32; 4])],
    what: &str,
) {
    let cfg = *d.config();
    let (w, v, words) = (
        cfg.elems() as usize,
        cfg.vregs() as usize,
        cfg.vmem_words() as usize,
    );
    d.reset();
    d.write(Space::Registers, 0, regs)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    d.write(Space::Vmem, 0, vmem)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let stats = d
        .run_with_gaps(program, gaps)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let got_regs = d.read(Space::Registers, 0, v).unwrap();
    let got_vmem = d.read(Space::Vmem, 0, words).unwrap();
    let got_error = d.error_flag();

    let mut model = Vpu::new(&cfg);
    for r in 0..v {
        model.set_reg(r as u8, &regs[r * w..(r + 1) * w]);
    }
    for a in 0..words {
        model.set_word(a as u32, &vmem[a * w..(a + 1) * w]);
    }
    model.run(program);
    let timing = schedule(&cfg, program);

    let listing = || {
        program
            .iter()
            .enumerate()
            .map(|(i, b)| format!("  {i:3}: {b}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    for (name, got, want) in [
        ("register", &got_regs, model.regs()),
        ("VMEM word", &got_vmem, model.vmem()),
    ] {
        if let Some(i) = (0..want.len()).find(|&i| got[i] != want[i]) {
            panic!(
                "{what} on {cfg}: {name} {} element {} is {:#010x} in the RTL, {:#010x} in the \
                 golden model\nprogram:\n{}",
                i / w,
                i % w,
                got[i],
                want[i],
                listing()
            );
        }
    }
    assert_eq!(
        got_error,
        model.error(),
        "{what} on {cfg}: error flag\nprogram:\n{}",
        listing()
    );
    if !gaps.is_empty() {
        assert_eq!(
            stats.accept.len(),
            program.len(),
            "{what} on {cfg}: bundles taken"
        );
        return;
    }
    assert_eq!(
        stats.accept,
        timing.accept,
        "{what} on {cfg}: acceptance cycles (RTL, model)\nprogram:\n{}",
        listing()
    );
    assert_eq!(
        stats.stores,
        timing.stores,
        "{what} on {cfg}: store cycles (RTL, model)\nprogram:\n{}",
        listing()
    );
    assert_eq!(
        (stats.last_busy, stats.cycles),
        (timing.last_busy, timing.cycles),
        "{what} on {cfg}: last busy cycle and cycles (RTL, model)"
    );
}

/// fp32 and int32 patterns at the edges of the contract: zeros of both
/// signs, subnormals, the extreme normals, infinities, NaNs (quiet,
/// signalling, with payloads), values around 1 and 6, and int32 extremes.
pub const SPECIAL_WORDS: &[u32] = &[
    0x0000_0000,
    0x8000_0000,
    0x0000_0001,
    0x8000_0001,
    0x007F_FFFF,
    0x807F_FFFF,
    0x0080_0000,
    0x8080_0000,
    0x7F7F_FFFF,
    0xFF7F_FFFF,
    0x7F80_0000,
    0xFF80_0000,
    0x7FC0_0000,
    0xFFC0_0001,
    0x7F80_0001,
    0x7FBF_FFFF,
    0x3F80_0000,
    0xBF80_0000,
    0x3F80_0001,
    0x3F7F_FFFF,
    0x40C0_0000,
    0x40C0_0001,
    0x4F00_0000,
    0xCF00_0000,
    0x3F00_0000,
    0x3FC0_0000,
    0x7FFF_FFFF,
    0x0000_001F,
    0x0000_0020,
    0xFFFF_FFFF,
    0x4000_0000,
    0x0000_7F05,
];

/// A random 32-bit element: a special value a quarter of the time, a small
/// integer (shift amounts, requantization parameters, masks) a quarter, a
/// moderate fp32 value a quarter (sums that round and cancel), any pattern
/// otherwise.
pub fn random_word(rng: &mut impl Rng) -> u32 {
    match rng.gen_range(0..4) {
        0 => SPECIAL_WORDS[rng.gen_range(0..SPECIAL_WORDS.len())],
        1 => rng.gen_range(-40i32..40) as u32,
        2 => (rng.gen::<u32>() & 0x807F_FFFF) | (rng.gen_range(0x78u32..0x88) << 23),
        _ => rng.gen(),
    }
}

/// `count` random elements.
pub fn random_words(rng: &mut impl Rng, count: usize) -> Vec<u32> {
    (0..count).map(|_| random_word(rng)).collect()
}

/// Read-after-write distances seen in a program: how many times a read found
/// its value written by the same bundle (0), the bundle before (1), two
/// before (2) or three or more before (3), for register reads and for loads
/// of a word a store wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HazardCounts {
    pub register: [u64; 4],
    pub memory: [u64; 4],
}

impl HazardCounts {
    pub fn add(&mut self, other: &HazardCounts) {
        for k in 0..4 {
            self.register[k] += other.register[k];
            self.memory[k] += other.memory[k];
        }
    }

    /// Whether every distance occurred for both kinds.
    pub fn covers_every_distance(&self) -> bool {
        self.register.iter().all(|&n| n > 0) && self.memory[1..].iter().all(|&n| n > 0)
    }
}

/// The hazard distances of `program` on `cfg` (register numbers mod V,
/// addresses mod D).
pub fn hazards(cfg: &VpuConfig, program: &[Bundle]) -> HazardCounts {
    let reg = |r: u8| usize::from(r) % cfg.vregs() as usize;
    let addr = |a: u32| a as usize % cfg.vmem_words() as usize;
    // Last bundle that wrote each register / word.
    let mut reg_writer = vec![None::<usize>; cfg.vregs() as usize];
    let mut word_writer = vec![None::<usize>; cfg.vmem_words() as usize];
    let mut counts = HazardCounts::default();
    let distance = |i: usize, w: Option<usize>| w.map(|w| (i - w).min(3));
    for (i, b) in program.iter().enumerate() {
        if let Some(l) = b.load {
            if let Some(k) = distance(i, word_writer[addr(l.addr)]) {
                counts.memory[k] += 1;
            }
            reg_writer[reg(l.reg)] = Some(i);
        }
        if let Some(op) = golden::vpu::legal_op(cfg, b) {
            let a = &b.alu;
            for &s in [a.vs1, a.vs2, a.vs3].iter().take(op.sources()) {
                if let Some(k) = distance(i, reg_writer[reg(s)]) {
                    counts.register[k] += 1;
                }
            }
            if op.writes() {
                reg_writer[reg(a.vd)] = Some(i);
            }
        }
        if let Some(s) = b.store {
            if let Some(k) = distance(i, reg_writer[reg(s.reg)]) {
                counts.register[k] += 1;
            }
            word_writer[addr(s.addr)] = Some(i);
        }
    }
    counts
}

/// A random program of `len` bundles for `cfg`: every operation (illegal
/// opcodes and, on an int32-only VPU, the fp32 ones included), loads and
/// stores, over a few registers and words so that results are read back at
/// every distance; sources are often the destinations of the last few
/// bundles.
pub fn random_program(cfg: &VpuConfig, rng: &mut impl Rng, len: usize) -> Vec<Bundle> {
    let regs = cfg.vregs().min(6) as u8;
    let words = cfg.vmem_words().min(6);
    let mut recent: Vec<u8> = Vec::new();
    let mut program = Vec::with_capacity(len);
    for _ in 0..len {
        let mut b = Bundle::nop();
        let pick = |rng: &mut dyn rand::RngCore, recent: &[u8]| -> u8 {
            let back = rng.gen_range(0..4usize);
            if rng.gen_bool(0.6) && back < recent.len() {
                recent[recent.len() - 1 - back]
            } else {
                rng.gen_range(0..regs)
            }
        };
        if rng.gen_bool(0.45) {
            let r = rng.gen_range(0..regs);
            b = b.with_load(r, rng.gen_range(0..words));
            recent.push(r);
        }
        let roll = rng.gen_range(0..100);
        if roll < 3 {
            // An opcode no operation has.
            let codes: Vec<u8> = (0..=255u8)
                .filter(|c| Op::from_code(*c).is_none())
                .collect();
            b.alu = AluSlot {
                opcode: codes[rng.gen_range(0..codes.len())],
                vd: rng.gen_range(0..regs),
                ..AluSlot::default()
            };
        } else if roll >= 8 {
            let op = Op::ALL[rng.gen_range(1..Op::ALL.len())];
            let sources: Vec<u8> = (0..3).map(|_| pick(rng, &recent)).collect();
            let vd = rng.gen_range(0..regs);
            b = b.with_op(op, vd, &sources);
            b.imm = if op == Op::Bcast {
                random_word(rng)
            } else {
                rng.gen()
            };
            recent.push(vd);
        }
        if rng.gen_bool(0.4) {
            let r = pick(rng, &recent);
            b = b.with_store(r, rng.gen_range(0..words));
        }
        // Registers and addresses beyond V and D wrap; use the high bits too.
        if rng.gen_bool(0.05) {
            b.alu.vs1 |= (cfg.vregs() as u8) & 0x3F;
        }
        program.push(b);
        if recent.len() > 8 {
            recent.drain(..recent.len() - 8);
        }
    }
    program
}

/// Runs the array operation `op` over `inputs` on the RTL and on the golden
/// model (the same programs); checks that the outputs agree bit for bit and
/// that the RTL took exactly the cycles the cycle model gives. Returns the
/// RTL's output.
pub fn check_elementwise(
    d: &mut VpuDriver,
    op: Op,
    inputs: &[&[u32]],
    requant: Option<Requant>,
    what: &str,
) -> Vec<u32> {
    let cfg = *d.config();
    d.reset();
    let rtl = vpu_ops::elementwise(d, op, inputs, requant)
        .unwrap_or_else(|e| panic!("{what}: {op} on {cfg}: {e}"));
    let model = vpu_ops::elementwise(&mut GoldenVpu::new(&cfg), op, inputs, requant)
        .unwrap_or_else(|e| panic!("{what}: {op} on the golden model: {e}"));
    compare(&rtl, &model, inputs, &format!("{what}: {op} on {cfg}"));
    assert!(!d.error_flag(), "{what}: {op} raised the error flag");
    rtl.output
}

/// As [`check_elementwise`] for a reduction; returns the RTL's result.
pub fn check_reduction(d: &mut VpuDriver, op: Op, x: &[u32], what: &str) -> u32 {
    let cfg = *d.config();
    d.reset();
    let rtl = vpu_ops::reduction(d, op, x).unwrap_or_else(|e| panic!("{what}: {op} on {cfg}: {e}"));
    let model = vpu_ops::reduction(&mut GoldenVpu::new(&cfg), op, x)
        .unwrap_or_else(|e| panic!("{what}: {op} on the golden model: {e}"));
    compare(&rtl, &model, &[x], &format!("{what}: {op} on {cfg}"));
    rtl.output[0]
}

fn compare(rtl: &OpRun, model: &OpRun, inputs: &[&[u32]], what: &str) {
    if let Some(i) = (0..model.output.len()).find(|&i| rtl.output[i] != model.output[i]) {
        let operands: Vec<String> = inputs
            .iter()
            .map(|x| format!("{:#010x}", x[i.min(x.len() - 1)]))
            .collect();
        panic!(
            "{what}: element {i} (operands {}) is {:#010x} in the RTL, {:#010x} in the golden model",
            operands.join(", "),
            rtl.output[i],
            model.output[i]
        );
    }
    assert_eq!(
        rtl.cycles, model.cycles,
        "{what}: the RTL took {} cycles, the cycle model says {}",
        rtl.cycles, model.cycles
    );
}

/// Checks `got` against the expected values of a reference vector file,
/// reporting the first few differences with their line numbers.
pub fn expect_rows(what: &str, lines: &[usize], got: &[u32], want: &[u32]) {
    let bad: Vec<String> = (0..want.len())
        .filter(|&i| got[i] != want[i])
        .take(10)
        .map(|i| {
            format!(
                "line {}: {:#010x}, expected {:#010x}",
                lines[i], got[i], want[i]
            )
        })
        .collect();
    assert!(bad.is_empty(), "{what}:\n{}", bad.join("\n"));
}

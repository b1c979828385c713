//! VPU programs in RTL (Verilator) against the golden model and its cycle
//! model: random instruction sequences whose read-after-write chains cover
//! every hazard distance, on several shapes; directed programs for each
//! forwarding path, the reduction interlock, the cross-lane operations,
//! illegal instructions and the host port's rules, at depth 0, 1 and the
//! `fmax` preset's depth (extra execute stages: the interlock and the
//! cancelled writes). Every check compares the final register file, VMEM
//! and error flag bit for bit and every acceptance and store cycle exactly.

use config::vpu_isa::{AluSlot, Bundle, Op};
use config::VpuConfig;
use rand::Rng;
use rstest::rstest;
use sim::drivers::vpu::{Space, VpuDriver};
use tb::seed::{rng_for, soak_rounds};
use tb::vpu::{
    check_program, depths, driver, hazards, preset, random_program, random_words, HazardCounts,
};

/// Random register file and VMEM images for `cfg`.
fn random_images(cfg: &VpuConfig, rng: &mut impl rand::Rng) -> (Vec<u32>, Vec<u32>) {
    let w = cfg.elems() as usize;
    (
        random_words(rng, cfg.vregs() as usize * w),
        random_words(rng, cfg.vmem_words() as usize * w),
    )
}

#[rstest]
#[case::full_8x1(preset("full-8x1"))]
#[case::full_4x2(preset("full-4x2"))]
#[case::int32_4x2(preset("int32-4x2"))]
#[case::full_2x1(preset("full-2x1"))]
#[case::full_1x1(preset("full-1x1"))]
// 128 elements: lanes, rotators and reduction units as shared code in the
// Verilator model, as the TPU's shape is
// (the mode Verilator warns may order evaluation wrongly; this checks it).
#[case::full_16x8(VpuConfig::with(16, 8, 8, 16, config::VpuUnits::Full).unwrap())]
// Extra execute stages: every depth on the small shapes, the fmax preset.
#[case::full_4x2_d1(preset("full-4x2").with_depth(1).unwrap())]
#[case::int32_4x2_d2(preset("int32-4x2").with_depth(2).unwrap())]
#[case::full_2x1_d3(preset("full-2x1").with_depth(3).unwrap())]
#[case::full_1x1_d4(preset("full-1x1").with_depth(4).unwrap())]
#[case::int32_4x2_d5(preset("int32-4x2").with_depth(5).unwrap())]
#[case::fmax(preset("fmax"))]
// The int32-only ALU at depth 6 (its one-hot result has no fp32 terms), the
// shape the UP5K's row is measured on.
#[case::int32_1x1_d6(
    VpuConfig::with(1, 1, 4, 16, config::VpuUnits::Int32).unwrap().with_depth(6).unwrap()
)]
fn random_programs(#[case] cfg: VpuConfig) {
    let mut shape = format!("{}_{}x{}", cfg.units(), cfg.lanes(), cfg.sublanes());
    if cfg.depth() > 0 {
        shape += &format!("_d{}", cfg.depth());
    }
    let mut rng = rng_for(&format!("random_programs_{shape}"));
    let mut d = driver(&cfg);
    let mut seen = HazardCounts::default();
    for round in 0..soak_rounds(60) {
        let (regs, vmem) = random_images(&cfg, &mut rng);
        let program = random_program(&cfg, &mut rng, 80);
        seen.add(&hazards(&cfg, &program));
        check_program(&mut d, &regs, &vmem, &program, &format!("round {round}"));
    }
    println!("{shape}: read-after-write distances 0, 1, 2, 3+: {seen:?}");
    assert!(
        seen.covers_every_distance(),
        "the random programs missed a hazard distance: {seen:?}"
    );
}

/// Idle cycles between the bundles, with random bits on `instr_i` while
/// `instr_valid_i` is low (loads, stores and writes of registers the
/// program uses among them), leave the bits of a program unchanged: the
/// pipeline's bubbles carry those fields, and no forwarding choice, write
/// or store may act on them.
#[rstest]
#[case::d0(preset("full-4x2"))]
#[case::d1(preset("full-4x2").with_depth(1).unwrap())]
#[case::fmax(preset("fmax"))]
fn bundles_offered_between_gaps_of_noise_keep_their_bits(#[case] cfg: VpuConfig) {
    let mut rng = rng_for(&format!("gaps_of_noise_d{}", cfg.depth()));
    let mut d = driver(&cfg);
    for round in 0..soak_rounds(20) {
        let (regs, vmem) = random_images(&cfg, &mut rng);
        let program = random_program(&cfg, &mut rng, 60);
        // Noise that decodes as bundles of the same kind as the program's.
        let gaps: Vec<(u32, [u32; 4])> = (0..program.len())
            .map(|_| {
                let idle = if rng.gen_bool(0.3) {
                    rng.gen_range(1..4)
                } else {
                    0
                };
                let noise = random_program(&cfg, &mut rng, 1)[0].words();
                (idle, noise)
            })
            .collect();
        tb::vpu::check_program_with_gaps(
            &mut d,
            &regs,
            &vmem,
            &program,
            &gaps,
            &format!("round {round}"),
        );
    }
}

/// `count` bundles that touch nothing the tests read.
fn gap(count: usize) -> Vec<Bundle> {
    vec![Bundle::nop(); count]
}

/// A directed check on images where register r holds `r * 1000 + e` and
/// VMEM word a holds `a * 100_000 + e`, so every forwarded value is
/// recognisable.
fn check_directed(d: &mut VpuDriver, program: &[Bundle], what: &str) {
    let cfg = *d.config();
    let w = cfg.elems() as usize;
    let regs: Vec<u32> = (0..cfg.vregs() as usize * w)
        .map(|i| (i / w * 1000 + i % w) as u32)
        .collect();
    let vmem: Vec<u32> = (0..cfg.vmem_words() as usize * w)
        .map(|i| (i / w * 100_000 + i % w) as u32)
        .collect();
    check_program(d, &regs, &vmem, program, what);
}

#[rstest]
#[case::d0(0)]
#[case::d1(1)]
#[case::fmax(preset("fmax").depth())]
fn every_forwarding_path_at_every_distance(#[case] depth: u32) {
    let mut d = driver(&preset("full-4x2").with_depth(depth).unwrap());
    for distance in 0..=depth as usize + 4 {
        // ALU result to each ALU operand and to the store.
        for operand in 0..3 {
            let mut sources = [5u8, 6, 7];
            sources[operand] = 1;
            let mut p = vec![Bundle::op(Op::AddI32, 1, &[2, 3])];
            p.extend(gap(distance.saturating_sub(1)));
            let consumer = Bundle::op(Op::Select, 4, &sources).with_store(4, 2);
            if distance == 0 {
                // Same bundle: the select reads the load of its own bundle.
                let p = [consumer.with_load(1, 3)];
                check_directed(
                    &mut d,
                    &p,
                    &format!("load to operand {operand}, same bundle"),
                );
                continue;
            }
            p.push(consumer);
            check_directed(
                &mut d,
                &p,
                &format!("ALU to operand {operand}, distance {distance}"),
            );
            // The load slot as the producer.
            p[0] = Bundle::nop().with_load(1, 5);
            check_directed(
                &mut d,
                &p,
                &format!("load to operand {operand}, distance {distance}"),
            );
            // Both slots of one bundle write the register: the ALU's wins.
            p[0] = Bundle::op(Op::SubI32, 1, &[2, 3]).with_load(1, 5);
            check_directed(
                &mut d,
                &p,
                &format!("load and ALU to operand {operand}, distance {distance}"),
            );
        }
        // To the store: from the ALU and the load of the same bundle, and earlier.
        let mut p = vec![Bundle::op(Op::MulI32, 3, &[2, 2]).with_load(2, 1)];
        p.extend(gap(distance.saturating_sub(1)));
        if distance == 0 {
            let p = [p[0].with_store(3, 4), p[0].with_store(2, 5)];
            check_directed(&mut d, &p, "ALU and load to the store, same bundle");
        } else {
            p.push(Bundle::nop().with_store(3, 4));
            p.push(Bundle::nop().with_store(2, 5));
            check_directed(
                &mut d,
                &p,
                &format!("ALU and load to the store, distance {distance}"),
            );
        }
        // Through memory: a store, then a load of the same word.
        let mut p = vec![Bundle::op(Op::XorI32, 1, &[2, 3]).with_store(1, 7)];
        p.extend(gap(distance.saturating_sub(1)));
        let reader = Bundle::op(Op::AddI32, 6, &[4, 4]).with_load(4, 7);
        if distance == 0 {
            // Same bundle: the load reads before the store writes.
            let p = [reader.with_store(1, 4)];
            check_directed(&mut d, &p, "load and store of one word, same bundle");
        } else {
            p.push(reader);
            check_directed(&mut d, &p, &format!("store to load, distance {distance}"));
        }
    }
}

#[rstest]
#[case::w8("full-8x1")]
#[case::w8_4x2("full-4x2")]
#[case::w2("full-2x1")]
#[case::w1("full-1x1")]
fn reductions_hold_the_issue_for_their_fold_levels(#[case] shape: &str) {
    for cfg in depths(&preset(shape)) {
        reductions_hold_the_issue(&cfg);
    }
}

fn reductions_hold_the_issue(cfg: &VpuConfig) {
    let mut d = driver(cfg);
    let mut program = Vec::new();
    for op in Op::ALL.iter().filter(|o| o.is_reduction()) {
        // Back to back, each result used by the next bundle, the store of
        // the reduction's own bundle, and a load in the same bundle.
        program.push(Bundle::op(*op, 2, &[1]).with_load(1, 3).with_store(2, 6));
        program.push(Bundle::op(Op::Splat, 3, &[2]).with_store(3, 7));
        program.push(Bundle::op(*op, 1, &[3]));
    }
    check_directed(&mut d, &program, "reductions");
    let timing = golden::vpu::schedule(d.config(), &program);
    let fold = u64::from(d.config().reduction_cycles());
    // The splat reads the reduction's result: at depth d it waits d more.
    assert_eq!(
        timing.accept[1],
        fold + u64::from(cfg.depth()),
        "the bundle after a reduction waits"
    );
}

#[test]
fn rotations_and_broadcasts() {
    for shape in ["full-4x2", "full-8x1", "full-1x1", "fmax"] {
        let cfg = preset(shape);
        let mut d = driver(&cfg);
        let mut program = Vec::new();
        for k in 0..=cfg.lanes().max(cfg.sublanes()) + 1 {
            program.push(
                Bundle::op(Op::RotLane, 1, &[2])
                    .with_imm(k)
                    .with_store(1, k),
            );
            program.push(Bundle::op(Op::RotSublane, 3, &[1]).with_imm(k + 1));
            program.push(Bundle::op(Op::Splat, 4, &[3]).with_store(4, k + 8));
        }
        program.push(
            Bundle::op(Op::Bcast, 5, &[])
                .with_imm(0xDEAD_BEEF)
                .with_store(5, 15),
        );
        check_directed(&mut d, &program, &format!("rotations on {shape}"));
        // One result stated outright: register 2 rotated by one lane.
        if cfg.lanes() == 4 {
            d.reset();
            let w = cfg.elems() as usize;
            let v: Vec<u32> = (0..w as u32).collect();
            d.write(Space::Registers, 2, &v).unwrap();
            d.run(&[Bundle::op(Op::RotLane, 1, &[2]).with_imm(1)])
                .unwrap();
            let got = d.read(Space::Registers, 1, 1).unwrap();
            let want: Vec<u32> = (0..w as u32).map(|e| e / 4 * 4 + (e + 1) % 4).collect();
            assert_eq!(got, want);
        }
    }
}

#[test]
fn illegal_instructions_write_nothing_and_set_the_error_flag() {
    let shapes = [
        preset("int32-4x2"),
        preset("full-4x2"),
        preset("full-4x2").with_depth(1).unwrap(),
        preset("fmax"),
    ];
    for cfg in shapes {
        let shape = cfg.to_string();
        let mut d = driver(&cfg);
        let undefined = Bundle {
            alu: AluSlot {
                opcode: 0x7F,
                vd: 1,
                vs1: 2,
                vs2: 3,
                vs3: 0,
            },
            ..Bundle::nop()
        };
        let program = [
            Bundle::op(Op::AddF32, 1, &[2, 3])
                .with_load(4, 2)
                .with_store(4, 9),
            Bundle::op(Op::ReduceSumF32, 2, &[1]).with_store(2, 10),
            undefined.with_load(5, 3),
            Bundle::op(Op::AddI32, 6, &[1, 5]).with_store(6, 11),
        ];
        check_directed(
            &mut d,
            &program,
            &format!("illegal instructions on {shape}"),
        );
        assert!(
            d.error_flag(),
            "an undefined opcode sets the flag on {shape}"
        );
        d.reset();
        assert!(!d.error_flag(), "reset clears the flag");
    }
}

#[rstest]
#[case::d0(0)]
#[case::fmax(preset("fmax").depth())]
fn the_host_waits_for_the_pipeline_and_holds_the_stream(#[case] depth: u32) {
    use vpu::ports::*;
    let cfg = preset("full-8x1").with_depth(depth).unwrap();
    // The reduction's execute cycles (the fold), `depth` more stages and
    // one write-back.
    let expected = u64::from(cfg.reduction_cycles() + depth + 1);
    let mut d = driver(&cfg);
    d.reset();
    let m = d.model_mut();
    let port = |m: &sim::Model, n: &str| m.port(n).unwrap();
    let (iv, instr, ir) = (port(m, INSTR_VALID), port(m, INSTR), port(m, INSTR_READY));
    let (hv, hr, busy) = (port(m, HOST_VALID), port(m, HOST_READY), port(m, BUSY));
    // A reduction (E execute cycles), then a host request: the host is
    // refused while the bundle is in flight, and the stream is held while
    // the host waits.
    m.poke(iv, 1);
    m.poke_wide(instr, &Bundle::op(Op::ReduceSumI32, 1, &[0]).words());
    m.eval();
    assert_eq!(m.peek(ir), 1);
    m.step();
    m.poke_wide(instr, &Bundle::op(Op::AddI32, 2, &[1, 1]).words());
    m.poke(hv, 1);
    let mut waited = 0;
    loop {
        m.eval();
        assert_eq!(m.peek(ir), 0, "the stream is held while the host waits");
        if m.peek(hr) == 1 {
            assert_eq!(m.peek(busy), 0, "the host is served only when idle");
            break;
        }
        m.step();
        waited += 1;
        assert!(waited <= expected, "the host port never became ready");
    }
    assert_eq!(waited, expected);
    m.poke(hv, 0);
    m.poke(iv, 0);
    m.step();
}

/// The host write mask (`host_wmask`): masked VMEM writes change exactly the
/// elements whose bit is set, back to back and interleaved with reads and
/// bundles, at depth 0 and at the depth where the host's VMEM write lands a
/// cycle late (the mask is held beside the data); register writes ignore it.
#[rstest]
#[case::full_4x2(preset("full-4x2"))]
#[case::full_8x1_fmax_depth(preset("full-8x1").with_depth(vpu::REGISTERED_HOST_VMEM_WRITE_FROM).unwrap())]
#[case::full_1x1(preset("full-1x1"))]
fn masked_host_writes_change_only_their_elements(#[case] cfg: VpuConfig) {
    let cfg = cfg.with_host_wmask(true);
    let shape = format!("{}x{}_d{}", cfg.lanes(), cfg.sublanes(), cfg.depth());
    let mut rng = rng_for(&format!("masked_host_writes_{shape}"));
    let mut d = driver(&cfg);
    let w = cfg.elems() as usize;
    let words = cfg.vmem_words() as usize;
    let mut expect = random_words(&mut rng, words * w);
    d.write(Space::Vmem, 0, &expect).unwrap();
    for round in 0..soak_rounds(40) {
        // A run of masked writes to random words (repeats included).
        let start = rng.gen_range(0..words);
        let count = rng.gen_range(1..=(words - start).min(6));
        for k in 0..count {
            let data = random_words(&mut rng, w);
            let mask: Vec<bool> = match rng.gen_range(0..4) {
                0 => (0..w).map(|e| e == rng.gen_range(0..w)).collect(),
                1 => vec![false; w],
                _ => (0..w).map(|_| rng.gen_bool(0.5)).collect(),
            };
            d.write_masked(Space::Vmem, start + k, &data, &mask)
                .unwrap();
            for e in 0..w {
                if mask[e] {
                    expect[(start + k) * w + e] = data[e];
                }
            }
        }
        // A bundle between host accesses: its load sees the masked words.
        let program = [
            Bundle::nop().with_load(3, start as u32),
            Bundle::nop().with_store(3, 0),
        ];
        d.run(&program).unwrap();
        expect.copy_within(start * w..(start + 1) * w, 0);
        assert_eq!(
            d.read(Space::Vmem, 0, words).unwrap(),
            expect,
            "VMEM after round {round} of masked writes on {shape}"
        );
    }
    // A register write ignores the mask: every element lands.
    let regs = random_words(&mut rng, w);
    d.write_masked(Space::Registers, 2, &regs, &vec![false; w])
        .unwrap();
    assert_eq!(
        d.read(Space::Registers, 2, 1).unwrap(),
        regs,
        "registers on {shape}"
    );
}

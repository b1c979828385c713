//! TensorCore v2's RTL (Verilator) on directed programs whose results follow
//! from the instruction set's definitions (`hw/tensorcore2`): the host
//! windows through the mover's masked element writes and element picks, the
//! EUP stream (unary and div's operand pairs, in place), matmuls whose tiles
//! come from the weight memory (`RW`) and from the unified buffer (`RWV`),
//! bf16 and int8 rows, `MM.add`, `MV` with strides, and VPU bundles between
//! them. Expected values come from the golden numerics (`golden::eup`,
//! `golden::mxu`), not from the RTL; every run's cycles and counters equal
//! the cycle model's (`golden::tensorcore2_cycle`).

use config::tensorcore2_isa::Instr;
use config::vpu_isa::{Bundle, Op};
use config::{EupOp, TensorCore2Config};
use rand::Rng;
use rstest::rstest;
use sim::drivers::tensorcore2::TensorCore2Driver;
use tb::seed::rng_for;

const LIMIT: u64 = 1_000_000;

fn preset(name: &str) -> TensorCore2Config {
    hw::Block::presets(&tensorcore2::TensorCore2)
        .into_iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no preset {name}"))
        .config
}

/// A core of one element per word and a 1x1 array: the edge of the mover's
/// element select and of the MXU.
fn tiny() -> TensorCore2Config {
    TensorCore2Config::new(1, 1, 1)
        .and_then(|c| c.with_memories(256, 16, 512))
        .unwrap()
}

/// Runs `program` on the RTL and holds its cycles and counters to the cycle
/// model's.
fn run(d: &mut TensorCore2Driver, program: &[Instr], input: &[u32], out_len: usize) -> Vec<u32> {
    let mut out = vec![0u32; out_len];
    let rtl = d
        .run(program, input, &mut out, LIMIT)
        .unwrap_or_else(|e| panic!("run failed: {e}"));
    let listing: Vec<String> = program.iter().map(|i| i.to_string()).collect();
    let model = golden::tensorcore2_cycle::cycle_model(d.config(), program)
        .unwrap_or_else(|e| panic!("cycle model: {e} in {listing:?}"));
    assert_eq!(
        rtl,
        model,
        "cycles and counters of {listing:?} on {}",
        d.config()
    );
    out
}

/// The deep preset's shape without its pipeline registers.
fn small_4x4() -> TensorCore2Config {
    TensorCore2Config::new(4, 4, 1)
        .and_then(|c| c.with_memories(256, 64, 256))
        .unwrap()
}

/// Rows wider than a word (R = 4 over W = 2): every row moves element by
/// element.
fn narrow() -> TensorCore2Config {
    TensorCore2Config::new(4, 2, 1)
        .and_then(|c| c.with_memories(512, 64, 256))
        .unwrap()
}

fn configs() -> Vec<TensorCore2Config> {
    vec![
        preset("small-2x2"),
        small_4x4(),
        preset("deep-4x4"),
        tiny(),
        narrow(),
    ]
}

#[rstest]
#[case::small_2x2(0)]
#[case::small_4x4(1)]
#[case::deep_4x4(2)]
#[case::tiny(3)]
fn host_windows_round_trip_through_masked_element_writes(#[case] which: usize) {
    let cfg = configs()[which];
    let mut rng = rng_for(&format!("tc2_windows_{which}"));
    let mut d = TensorCore2Driver::new(&cfg).unwrap();
    let elems = cfg.vmem_elems() as usize;
    let n = elems.min(40);
    let input: Vec<u32> = (0..n + 7).map(|_| rng.gen()).collect();
    // Fill, then overwrite an odd-aligned run: every element written alone.
    let dst = 3usize.min(elems - n);
    let program = [
        Instr::HostIn {
            dst: 0,
            src: 7,
            n: n as u32,
        },
        Instr::HostIn {
            dst: dst as u32,
            src: 0,
            n: 5.min(n) as u32,
        },
        Instr::HostOut {
            dst: 0,
            src: 0,
            n: n as u32,
        },
        Instr::Halt,
    ];
    let out = run(&mut d, &program, &input, n);
    let mut expect: Vec<u32> = input[7..7 + n].to_vec();
    expect[dst..dst + 5.min(n)].copy_from_slice(&input[..5.min(n)]);
    assert_eq!(out, expect, "windows on {cfg}");
    // The unified buffer keeps its contents across runs (a KV cache does).
    // The core stops at its first HALT: the HIN after it (which would read
    // outside the empty input window) is never taken.
    let out = run(
        &mut d,
        &[
            Instr::HostOut {
                dst: 0,
                src: 0,
                n: n as u32,
            },
            Instr::Halt,
            Instr::HostIn {
                dst: 0,
                src: 0,
                n: 1,
            },
            Instr::Halt,
        ],
        &[],
        n,
    );
    assert_eq!(out, expect, "the buffer across runs on {cfg}");
}

#[rstest]
#[case::small_4x4(1)]
#[case::tiny(3)]
fn eup_streams_give_the_golden_results(#[case] which: usize) {
    let cfg = configs()[which];
    let mut rng = rng_for(&format!("tc2_eup_{which}"));
    let mut d = TensorCore2Driver::new(&cfg).unwrap();
    let n = 21usize;
    let specials = [
        0u32,
        0x8000_0000,
        0x7F80_0000,
        0xFF80_0000,
        0x7FC0_0000,
        1,
        0x3F80_0000,
    ];
    let mut a: Vec<u32> = (0..n).map(|_| rng.gen()).collect();
    let b: Vec<u32> = (0..n).map(|_| rng.gen()).collect();
    a[..specials.len()].copy_from_slice(&specials);
    let input: Vec<u32> = a.iter().chain(&b).copied().collect();
    for op in EupOp::ALL {
        // In place for unary operations, into a third range for div.
        let dst = if op.binary() { 2 * n } else { 0 };
        let program = [
            Instr::HostIn {
                dst: 0,
                src: 0,
                n: 2 * n as u32,
            },
            Instr::Eup {
                op,
                dst: dst as u32,
                a: 0,
                b: n as u32,
                n: n as u32,
            },
            Instr::HostOut {
                dst: 0,
                src: dst as u32,
                n: n as u32,
            },
            Instr::Halt,
        ];
        let out = run(&mut d, &program, &input, n);
        let expect: Vec<u32> = (0..n).map(|i| golden::eup::apply(op, a[i], b[i])).collect();
        assert_eq!(out, expect, "{op} on {cfg}");
    }
}

/// `MM` against a tile from the weight memory and one from the unified
/// buffer, bf16 then int8, overwrite then add, `MV` with a stride, and a VPU
/// bundle reading what `MV` wrote.
#[rstest]
#[case::small_2x2(0)]
#[case::small_4x4(1)]
#[case::deep_4x4(2)]
#[case::tiny(3)]
#[case::narrow(4)]
fn matmuls_from_both_weight_sources(#[case] which: usize) {
    let cfg = configs()[which];
    let r = cfg.rows() as usize;
    let w = cfg.elems() as usize;
    let mut rng = rng_for(&format!("tc2_mm_{which}"));
    let mut d = TensorCore2Driver::new(&cfg).unwrap();
    let bf16 = |rng: &mut rand_chacha::ChaCha8Rng| -> u16 {
        // Finite values around 1 with both signs, and some zeros.
        if rng.gen_bool(0.1) {
            0
        } else {
            (u16::from(rng.gen_bool(0.5)) << 15) | (0x3F00 + rng.gen_range(0..0x100))
        }
    };
    // Tile T (row-major R x R) in the weight memory, bottom row first.
    let t: Vec<u16> = (0..r * r).map(|_| bf16(&mut rng)).collect();
    let stored: Vec<u16> = (0..r)
        .rev()
        .flat_map(|k| t[k * r..(k + 1) * r].to_vec())
        .collect();
    d.load_weights(0, &stored).unwrap();
    // Tile U in the unified buffer (row k at element 64 + k * (r + 1)), two
    // activation rows x0, x1 (elements 0.. and 16..).
    let u: Vec<u16> = (0..r * r).map(|_| bf16(&mut rng)).collect();
    let x: Vec<Vec<u16>> = (0..2)
        .map(|_| (0..r).map(|_| bf16(&mut rng)).collect())
        .collect();
    let mut input = vec![0u32; 64 + r * (r + 1)];
    for k in 0..r {
        input[k] = u32::from(x[0][k]);
        input[16 + k] = u32::from(x[1][k]);
        for c in 0..r {
            input[64 + k * (r + 1) + c] = u32::from(u[k * r + c]);
        }
    }
    let out_base = input.len().next_multiple_of(w);
    let program = vec![
        Instr::HostIn {
            dst: 0,
            src: 0,
            n: input.len() as u32,
        },
        Instr::ReadWeights {
            row: 0,
            n: r as u32,
        },
        Instr::Matmul {
            acc: 2,
            src: 0,
            stride: 16,
            n: 2,
            int8: false,
            add: false,
        },
        Instr::ReadWeightsVmem {
            src: 64,
            stride: (r + 1) as u32,
            n: r as u32,
        },
        Instr::Matmul {
            acc: 2,
            src: 0,
            stride: 16,
            n: 1,
            int8: false,
            add: true,
        },
        Instr::MoveAcc {
            dst: out_base as u32,
            stride: (2 * r) as u32,
            acc: 2,
            n: 2,
        },
        Instr::HostOut {
            dst: 0,
            src: out_base as u32,
            n: (4 * r) as u32,
        },
        Instr::Halt,
    ];
    let out = run(&mut d, &program, &input, 4 * r);
    let row0 = golden::mxu::tile_row(&x[0], &t, r, false);
    let row1 = golden::mxu::tile_row(&x[1], &t, r, false);
    let add = golden::mxu::tile_row(&x[0], &u, r, false);
    let acc0: Vec<u32> = row0
        .iter()
        .zip(&add)
        .map(|(&o, &n)| golden::mxu::accumulate(o, n, true, false))
        .collect();
    assert_eq!(&out[..r], &acc0[..], "MM, RWV, MM.add, MV row 0 on {cfg}");
    assert_eq!(
        &out[2 * r..3 * r],
        &row1[..],
        "MV row 1 (stride 2R) on {cfg}"
    );

    // int8 rows against the same weight-memory tile, then a VPU add of the
    // two result words (when R = W a row is one word).
    let program = vec![
        Instr::ReadWeights {
            row: 0,
            n: r as u32,
        },
        Instr::Matmul {
            acc: 0,
            src: 16,
            stride: 0,
            n: 1,
            int8: true,
            add: false,
        },
        Instr::MoveAcc {
            dst: out_base as u32,
            stride: 0,
            acc: 0,
            n: 1,
        },
        Instr::HostOut {
            dst: 0,
            src: out_base as u32,
            n: r as u32,
        },
        Instr::Halt,
    ];
    let out = run(&mut d, &program, &[], r);
    let int8 = golden::mxu::tile_row(&x[1], &t, r, true);
    assert_eq!(out, int8, "int8 row on {cfg}");

    if r == w {
        let word = out_base / w;
        let program = vec![
            Instr::Vpu {
                bundle: Bundle::nop().with_load(1, word as u32).encode(),
            },
            Instr::Vpu {
                bundle: Bundle::op(Op::AddI32, 2, &[1, 1])
                    .with_store(2, word as u32 + 1)
                    .encode(),
            },
            Instr::HostOut {
                dst: 0,
                src: (out_base + w) as u32,
                n: w as u32,
            },
            Instr::Halt,
        ];
        let doubled = run(&mut d, &program, &[], w);
        let expect: Vec<u32> = int8.iter().map(|&v| v.wrapping_add(v)).collect();
        assert_eq!(doubled, expect, "VPU bundles between moves on {cfg}");
    }
}

/// A random valid program for `cfg`: the whole unified buffer and every
/// register filled first, then a mix of every instruction (tiles from both
/// sources, bf16 and int8 rows, `.add`, strides, in-place and disjoint EUP
/// streams, random VPU bundles), ending with the buffer copied out.
fn random_program(cfg: &TensorCore2Config, rng: &mut impl Rng) -> Vec<Instr> {
    let r = cfg.rows();
    let w = cfg.elems();
    let e = cfg.vmem_elems();
    let words = cfg.vmem_words();
    let vregs = cfg.vpu().vregs();
    let mut p = vec![Instr::HostIn {
        dst: 0,
        src: 0,
        n: e,
    }];
    for reg in 0..vregs {
        p.push(Instr::Vpu {
            bundle: Bundle::nop()
                .with_load(reg as u8, rng.gen_range(0..words))
                .encode(),
        });
    }
    // Accumulator rows written so far, and the previous MM's last row.
    let mut written = vec![false; cfg.acc_rows() as usize];
    let mut prev_mm: Option<(u32, u32)> = None;
    let ops: Vec<Op> = Op::ALL.iter().copied().filter(|o| *o != Op::Nop).collect();
    for _ in 0..rng.gen_range(8..24) {
        match rng.gen_range(0..7) {
            0 => {
                let n = rng.gen_range(1..=8.min(e));
                p.push(Instr::HostIn {
                    dst: rng.gen_range(0..=e - n),
                    src: rng.gen_range(0..=e - n),
                    n,
                });
            }
            1 => {
                let op = ops[rng.gen_range(0..ops.len())];
                let reg = |rng: &mut _| rand::Rng::gen_range(rng, 0..vregs) as u8;
                let mut b =
                    Bundle::op(op, reg(rng), &[reg(rng), reg(rng), reg(rng)]).with_imm(rng.gen());
                if rng.gen_bool(0.5) {
                    b = b.with_load(reg(rng), rng.gen_range(0..words));
                }
                if rng.gen_bool(0.5) {
                    b = b.with_store(reg(rng), rng.gen_range(0..words));
                }
                p.push(Instr::Vpu { bundle: b.encode() });
            }
            2 => {
                let op = EupOp::ALL[rng.gen_range(0..EupOp::ALL.len())];
                let n = rng.gen_range(1..=12.min(e / 4));
                let quarter = e / 4;
                let a = rng.gen_range(0..=quarter - n);
                let b = quarter + rng.gen_range(0..=quarter - n);
                let dst = if rng.gen_bool(0.5) {
                    a
                } else {
                    2 * quarter + rng.gen_range(0..=quarter - n)
                };
                p.push(Instr::Eup { op, dst, a, b, n });
            }
            3 | 4 => {
                // A tile from the weight memory or from the buffer, then MM.
                if rng.gen_bool(0.5) {
                    p.push(Instr::ReadWeights {
                        row: rng.gen_range(0..=cfg.weight_rows() - r),
                        n: r,
                    });
                } else {
                    let stride = rng.gen_range(r..=2 * r);
                    p.push(Instr::ReadWeightsVmem {
                        src: rng.gen_range(0..=e - (r - 1) * stride - r),
                        stride,
                        n: r,
                    });
                }
                let n = rng.gen_range(1..=3u32);
                let stride = rng.gen_range(0..=2 * r);
                let acc = rng.gen_range(0..=cfg.acc_rows() - n);
                let mut add = rng.gen_bool(0.5) && (acc..acc + n).all(|a| written[a as usize]);
                // The MXU's read-modify-write rule (crate docs).
                if let Some((end, rows)) = prev_mm {
                    if add && rows > 1 && acc == end {
                        add = false;
                    }
                }
                p.push(Instr::Matmul {
                    acc,
                    src: rng.gen_range(0..=e - (n - 1) * stride - r),
                    stride,
                    n,
                    int8: rng.gen_bool(0.5),
                    add,
                });
                for a in acc..acc + n {
                    written[a as usize] = true;
                }
                prev_mm = Some((acc + n - 1, n));
            }
            5 => {
                let rows: Vec<u32> = (0..cfg.acc_rows())
                    .filter(|&a| written[a as usize])
                    .collect();
                if let Some(&acc) = rows.get(rng.gen_range(0..rows.len().max(1))) {
                    let stride = rng.gen_range(0..=2 * r);
                    p.push(Instr::MoveAcc {
                        dst: rng.gen_range(0..=e - stride - r),
                        stride,
                        acc,
                        n: 1 + u32::from(acc + 1 < cfg.acc_rows() && written[acc as usize + 1]),
                    });
                }
            }
            _ => p.push(Instr::Sync),
        }
    }
    let _ = w;
    p.push(Instr::HostOut {
        dst: 0,
        src: 0,
        n: e,
    });
    p.push(Instr::Halt);
    p
}

/// Random programs on the RTL against the golden machine (every result bit
/// of the unified buffer) and the cycle model (every cycle and counter).
#[rstest]
#[case::small_2x2(0)]
#[case::small_4x4(1)]
#[case::deep_4x4(2)]
#[case::tiny(3)]
#[case::narrow(4)]
fn random_programs_match_the_golden_machine_and_the_cycle_model(#[case] which: usize) {
    let cfg = configs()[which];
    let mut rng = rng_for(&format!("tc2_random_programs_{which}"));
    let mut d = TensorCore2Driver::new(&cfg).unwrap();
    let mut golden = golden::tensorcore2::Machine::new(&cfg);
    let c = cfg.cols() as usize;
    let weights: Vec<u16> = (0..cfg.weight_rows() as usize * c)
        .map(|_| rng.gen())
        .collect();
    d.load_weights(0, &weights).unwrap();
    golden.load_weights(0, &weights);
    let e = cfg.vmem_elems() as usize;
    for round in 0..tb::seed::soak_rounds(40) {
        let program = random_program(&cfg, &mut rng);
        let input: Vec<u32> = (0..e).map(|_| rng.gen()).collect();
        let mut expect = vec![0u32; e];
        golden
            .run(&program, &input, &mut expect)
            .unwrap_or_else(|err| panic!("golden refused round {round}: {err}"));
        let out = run(&mut d, &program, &input, e);
        if out != expect {
            let first = (0..e).find(|&i| out[i] != expect[i]).unwrap();
            let listing: Vec<String> = program.iter().map(|i| i.to_string()).collect();
            panic!(
                "round {round} on {cfg}: element {first} is {:#010x}, golden {:#010x}; program {listing:?}",
                out[first], expect[first]
            );
        }
    }
}

/// The quantized MLPs of TensorCore v1 compiled for v2 (the activation unit's
/// requantization and ReLU as VPU bundles) run on the RTL with v1's logits,
/// and the cycle model's cycles.
#[rstest]
#[case::small_4x4(1)]
#[case::tiny(3)]
fn quantized_mlps_on_the_rtl_give_tensorcore_v1s_logits(#[case] which: usize) {
    let cfg = configs()[which];
    let mut rng = rng_for(&format!("tc2_mlp_rtl_{which}"));
    let mut d = TensorCore2Driver::new(&cfg).unwrap();
    for round in 0..tb::seed::soak_rounds(6) {
        let (mlp, sizes) = tb::tensorcore::random_mlp(&mut rng, 3, 12);
        let batch = rng.gen_range(1..=6);
        let x: Vec<i8> = (0..batch * sizes[0]).map(|_| rng.gen()).collect();
        let r = cfg.rows();
        let v1 = config::TensorCoreConfig::with(r, r, 64, 1 << 12, 1 << 16, 1 << 10, 4).unwrap();
        let (expected, _, _) = sim::drivers::tensorcore::run_golden(&v1, &mlp, &x, batch).unwrap();
        let program = compiler::tensorcore2_mlp::compile_mlp(&mlp, batch, &cfg)
            .unwrap_or_else(|e| panic!("round {round}: {sizes:?} batch {batch}: {e}"));
        d.load_weights(0, &program.weight_image).unwrap();
        let out = run(
            &mut d,
            &program.instrs,
            &program.pack_input(&x),
            program.output_len(),
        );
        assert_eq!(
            program.unpack_output(&out),
            expected,
            "round {round}: {sizes:?} batch {batch} on {cfg}"
        );
    }
}

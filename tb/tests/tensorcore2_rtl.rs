//! TensorCore v2's RTL (Verilator) on directed programs whose results follow
//! from the instruction set's definitions (`hw/tensorcore2`): the host
//! windows through the mover's masked element writes and element picks, the
//! EUP stream (unary and div's operand pairs, in place), matmuls whose tiles
//! come from the weight memory (`RW`) and from the unified buffer (`RWV`),
//! bf16 and int8 rows, `MM.add`, `MV` with strides, and VPU bundles between
//! them. Expected values come from the golden numerics (`golden::eup`,
//! `golden::mxu`), not from the RTL.

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
        .and_then(|c| c.with_memories(256, 16, 64))
        .unwrap()
}

fn run(d: &mut TensorCore2Driver, program: &[Instr], input: &[u32], out_len: usize) -> Vec<u32> {
    let mut out = vec![0u32; out_len];
    d.run(program, input, &mut out, LIMIT)
        .unwrap_or_else(|e| panic!("run failed: {e}"));
    out
}

fn configs() -> Vec<TensorCore2Config> {
    vec![
        preset("small-2x2"),
        preset("small-4x4"),
        preset("deep-4x4"),
        tiny(),
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
    let out = run(
        &mut d,
        &[
            Instr::HostOut {
                dst: 0,
                src: 0,
                n: n as u32,
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

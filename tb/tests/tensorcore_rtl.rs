//! The TensorCore RTL against the golden TensorCore: the same compiled
//! programs give the same host output bit for bit, and the RTL's counters
//! (cycles, MXU busy, every stall class, instructions) equal the golden
//! cycle model's exactly. Random MLPs on small cores (memories small enough
//! to force several batch blocks and passes), directed edge cases, and the
//! digits model on all 450 test images.

use compiler::Mlp;
use config::tensorcore_isa::{Activation, Instr};
use config::TensorCoreConfig;
use golden::tensorcore::Memories;
use hw::Block;
use rand::Rng;
use sim::drivers::tensorcore::{load_model, memories, TensorCoreDriver};
use sim::drivers::Driver;
use std::path::Path;
use tb::seed::{rng_for, soak_rounds};
use tb::tensorcore::random_layer;

/// Runs `words` on the RTL and the golden model; both must agree.
fn agree(driver: &mut TensorCoreDriver, words: &[u128], mem: &Memories, what: &str) -> Vec<i32> {
    let cfg = *driver.config();
    let listing = || {
        for (i, w) in words.iter().enumerate() {
            println!("{i:4}: {}", Instr::decode(*w).expect("a valid program"));
        }
    };
    let (gout, gstats) = golden::tensorcore::run(&cfg, words, mem).unwrap_or_else(|e| {
        listing();
        panic!("{what}: {e}")
    });
    let (rout, rstats) = driver
        .run(words, mem)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    if rout != gout || rstats != gstats {
        listing();
    }
    assert_eq!(rout, gout, "{what}: RTL output differs from golden");
    assert_eq!(
        rstats, gstats,
        "{what}: RTL counters differ from the cycle model"
    );
    rout
}

#[test]
fn random_mlps_on_small_cores_match_golden_bits_and_cycles() {
    let mut rng = rng_for("random_mlps_on_small_cores_match_golden_bits_and_cycles");
    // 1x1 (no loader hold), 3x3 (not a power of two), 4x4; small memories.
    for (size, acc, ub, q) in [(1u32, 16u32, 64u32, 2u32), (3, 8, 128, 3), (4, 64, 256, 4)] {
        let cfg = TensorCoreConfig::with(size, size, acc, ub, 1024, 64, q).unwrap();
        random_mlps(
            &mut rng,
            &mut TensorCoreDriver::new(&cfg).unwrap(),
            soak_rounds(8),
        );
    }
}

/// `rounds` random MLPs of 1 to 3 layers of 1 to 12 units at batches of 1
/// to 40, compiled for `driver`'s core, RTL against golden.
fn random_mlps<R: Rng>(rng: &mut R, driver: &mut TensorCoreDriver, rounds: usize) {
    {
        let cfg = *driver.config();
        let mut ran = 0;
        for round in 0..rounds {
            let layers = rng.gen_range(1..=3);
            let mut sizes = vec![rng.gen_range(1..=12)];
            for _ in 0..layers {
                sizes.push(rng.gen_range(1..=12));
            }
            let mlp = Mlp::new(
                (0..layers)
                    .map(|i| random_layer(rng, sizes[i], sizes[i + 1], i + 1 < layers))
                    .collect(),
            )
            .unwrap();
            let batch = rng.gen_range(1..=40);
            let x: Vec<i8> = (0..batch * sizes[0]).map(|_| rng.gen()).collect();
            let what = format!("{cfg}, round {round}: {sizes:?} batch {batch}");
            let program = match compiler::compile(&mlp, batch, &cfg) {
                Ok(p) => p,
                Err(e) if e.0.contains("does not fit") => continue,
                Err(e) => panic!("{what}: {e}"),
            };
            agree(driver, &program.words(), &memories(&program, &x), &what);
            ran += 1;
        }
        assert!(ran > 0, "{cfg}: every model was too big");
    }
}

#[test]
fn hand_written_programs_edge_cases() {
    let cfg = TensorCoreConfig::with(4, 4, 64, 256, 1024, 64, 2).unwrap();
    edge_cases(&mut TensorCoreDriver::new(&cfg).unwrap());
}

/// The hand-written program of [`hand_written_programs_edge_cases`] on a
/// 4x4 core with a weight queue of 2.
fn edge_cases(driver: &mut TensorCoreDriver) {
    let cfg = *driver.config();
    assert_eq!((cfg.rows(), cfg.weight_queue()), (4, 2));
    // -128 everywhere, bias i32::MAX (wraps), requantization saturating to
    // both ends, ReLU at zp = -128 (passes everything) and without ReLU, and
    // a weight queue of 2 that MM prefetches fill (stall_weights).
    let mem = Memories {
        weights: vec![-128; 4 * 4 * 4],
        biases: [vec![i32::MAX; 4], vec![i32::MIN, -1, 0, 1]].concat(),
        host_in: (0..4 * 8)
            .map(|i| if i % 3 == 0 { -128 } else { 127 })
            .collect(),
        host_out_rows: 32,
    };
    // Every MM waits for the activation unit: some read what ACTs wrote.
    let mm = |ub, acc, rows, accumulate, prefetch| Instr::Matmul {
        ub,
        acc,
        rows,
        accumulate,
        prefetch,
        wait_act: true,
    };
    let act = |acc, dest, rows, bias, func| Instr::Activate {
        acc,
        dest,
        rows,
        bias,
        func,
    };
    let rq = |mult, shift, zp, relu| Activation::Requant {
        mult,
        shift,
        zp,
        relu,
    };
    let program: Vec<u128> = [
        Instr::ReadWeights { weight: 0, rows: 4 },
        Instr::ReadWeights { weight: 4, rows: 8 },
        Instr::ReadHost {
            host: 0,
            ub: 0,
            rows: 8,
        },
        mm(0, 0, 8, false, Some(12)),
        mm(0, 0, 8, true, None),
        act(0, 0, 8, 1, Activation::Int32ToHost),
        act(0, 8, 8, 0, Activation::Int32ToHost),
        act(0, 16, 8, 1, rq(i32::MAX, 0, -128, true)),
        act(0, 24, 8, 1, rq(1 << 30, 31, 5, false)),
        mm(16, 8, 8, false, None),
        mm(24, 16, 8, false, None),
        Instr::Sync,
        act(8, 16, 8, 0, Activation::Int32ToHost),
        act(16, 24, 8, 1, Activation::Int32ToHost),
        Instr::Halt,
    ]
    .iter()
    .map(Instr::encode)
    .collect();
    let out = agree(driver, &program, &mem, &format!("{cfg}: edge cases"));
    // Row 0 is [-128, 127, 127, -128], every weight -128, two k-tiles:
    // 2 * -128 * (-128 + 127 + 127 - 128) = 512 per column.
    assert_eq!(&out[..4], &[i32::MIN + 512, 511, 512, 513]);
    // Plus a bias of 2^31 - 1: wraps.
    assert_eq!(out[8 * 4], i32::MIN + 511);
}

#[test]
fn the_digits_model_on_the_rtl_gives_the_numpy_logits_and_the_golden_cycles() {
    // 4x4 with a 1024-row buffer: blocks of 42 images, 64 accumulator rows.
    let cfg = TensorCoreConfig::with(4, 4, 64, 1024, 1024, 64, 4).unwrap();
    digits(&mut TensorCoreDriver::new(&cfg).unwrap());
}

/// The digits model on all 450 test images: numpy's logits, the golden
/// model's cycles.
fn digits(driver: &mut TensorCoreDriver) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/digits");
    let mlp = load_model(&dir).unwrap();
    let x: matrix::Matrix<i8> = matrix::read(&dir.join("x_test.npy"), "X").unwrap();
    let expect: matrix::Array<i32> =
        matrix::read_array(&dir.join("logits_numpy.npy"), "logits").unwrap();
    let cfg = *driver.config();
    let program = compiler::compile(&mlp, x.rows, &cfg).unwrap();
    let window = agree(
        driver,
        &program.words(),
        &memories(&program, &x.data),
        &format!("{cfg}: digits"),
    );
    assert_eq!(
        program.unpack_output(&window),
        expect.data,
        "{cfg}: digits logits differ from numpy's"
    );
}

/// Depth 1 and the `fmax` preset's depth (the MXU's product and operand
/// registers, the activation unit's extra stages): the edge cases, random
/// MLPs, the digits model and random programs on 4x4 cores, bits and
/// cycles equal to the golden model's at that depth.
#[test]
fn pipelined_cores_match_golden_bits_and_cycles() {
    let mut rng = rng_for("pipelined_cores_match_golden_bits_and_cycles");
    let fmax = <TensorCoreDriver as Driver>::Block::default()
        .presets()
        .into_iter()
        .find(|p| p.name == "fmax")
        .expect("the TensorCore has an fmax preset")
        .config;
    assert!(fmax.depth() > 1);
    for depth in [1, fmax.depth()] {
        let cfg = TensorCoreConfig::with(4, 4, 64, 1024, 1024, 64, 2)
            .and_then(|c| c.with_depth(depth))
            .unwrap();
        let mut driver = TensorCoreDriver::new(&cfg).unwrap();
        edge_cases(&mut driver);
        digits(&mut driver);
        random_mlps(&mut rng, &mut driver, soak_rounds(3));
        let small = TensorCoreConfig::with(4, 4, 16, 32, 64, 4, 3)
            .and_then(|c| c.with_depth(depth))
            .unwrap();
        random_programs(
            &mut rng,
            &mut TensorCoreDriver::new(&small).unwrap(),
            soak_rounds(12),
        );
    }
}

/// A random program the golden model accepts: RHM, RW, MM (with and without
/// prefetch), ACT to the buffer and the host, SYNC, in any order, with
/// addresses in range and every MM's tile in the weight stream. Hazards the
/// compiler never produces (an MM right after the ACT that writes its rows,
/// an RHM behind ACT writes, an ACT right behind an MM, a full weight queue)
/// come up by chance. Queues from 2 (full after two reads) to 16.
fn random_program<R: Rng>(
    rng: &mut R,
    cfg: &TensorCoreConfig,
    host_in_rows: u32,
    host_out_rows: u32,
) -> Vec<u128> {
    let r = cfg.rows();
    let (ub, acc, wrows, brows) = (
        cfg.ub_rows(),
        cfg.acc_rows(),
        cfg.weight_rows(),
        cfg.bias_rows(),
    );
    // A prologue defines every row a later instruction may read: the whole
    // buffer from the host, then every accumulator row by one MM.
    let mut program = vec![
        Instr::ReadHost {
            host: 0,
            ub: 0,
            rows: ub,
        }
        .encode(),
        Instr::ReadWeights { weight: 0, rows: r }.encode(),
        Instr::Matmul {
            ub: 0,
            acc: 0,
            rows: acc,
            accumulate: false,
            prefetch: None,
            wait_act: false,
        }
        .encode(),
    ];
    // Buffer rows ACTs wrote since the last wait for the activation unit:
    // an MM reading one must wait too.
    let mut dirty = vec![false; ub as usize];
    // The last MM's last accumulator row and row count (the MXU's
    // back-to-back read-modify-write rule).
    let mut last_mm = (acc - 1, acc);
    assert!(host_in_rows >= ub && ub >= acc);
    let mut stream = 0u32;
    let n = |rng: &mut R, max: u32| rng.gen_range(1..=max.min(12));
    for _ in 0..rng.gen_range(5..40) {
        let instr = match rng.gen_range(0..10) {
            0 => {
                dirty.fill(false);
                let rows = n(rng, host_in_rows.min(ub));
                Instr::ReadHost {
                    host: rng.gen_range(0..=host_in_rows - rows),
                    ub: rng.gen_range(0..=ub - rows),
                    rows,
                }
            }
            1 | 2 => {
                // Whole tiles, so the stream stays aligned to tiles; at most
                // three tiles not yet taken, which the MXU's loader and
                // weight FIFO hold, so no read waits forever.
                let rows = r * rng.gen_range(1..=2);
                if stream + rows > 2 * r {
                    continue;
                }
                stream += rows;
                Instr::ReadWeights {
                    weight: rng.gen_range(0..=wrows - rows),
                    rows,
                }
            }
            3..=5 => {
                let prefetch =
                    (rng.gen_bool(0.5) && stream <= 2 * r).then(|| rng.gen_range(0..=wrows - r));
                if prefetch.is_some() {
                    stream += r;
                }
                if stream < r {
                    continue;
                }
                stream -= r;
                let rows = n(rng, ub.min(acc));
                let src = rng.gen_range(0..=ub - rows);
                let wait_act =
                    rng.gen_bool(0.2) || dirty[src as usize..(src + rows) as usize].contains(&true);
                if wait_act {
                    dirty.fill(false);
                }
                let dst = rng.gen_range(0..=acc - rows);
                let accumulate = rng.gen() && !(dst == last_mm.0 && last_mm.1 > 1);
                last_mm = (dst + rows - 1, rows);
                Instr::Matmul {
                    ub: src,
                    acc: dst,
                    rows,
                    accumulate,
                    prefetch,
                    wait_act,
                }
            }
            6..=8 => {
                let to_host = rng.gen_bool(0.3);
                let rows = n(rng, if to_host { host_out_rows } else { ub }.min(acc));
                let limit = if to_host { host_out_rows } else { ub };
                let dest = rng.gen_range(0..=limit - rows);
                if !to_host {
                    dirty[dest as usize..(dest + rows) as usize].fill(true);
                }
                Instr::Activate {
                    acc: rng.gen_range(0..=acc - rows),
                    dest,
                    rows,
                    bias: rng.gen_range(0..brows),
                    func: if to_host {
                        Activation::Int32ToHost
                    } else {
                        Activation::Requant {
                            mult: rng.gen_range(1..=i32::MAX),
                            shift: rng.gen_range(0..32),
                            zp: rng.gen(),
                            relu: rng.gen(),
                        }
                    },
                }
            }
            _ => {
                dirty.fill(false);
                Instr::Sync
            }
        };
        program.push(instr.encode());
    }
    program.push(Instr::Halt.encode());
    program
}

#[test]
fn random_programs_match_golden_bits_and_cycles() {
    let mut rng = rng_for("random_programs_match_golden_bits_and_cycles");
    for (size, q) in [(1u32, 2u32), (2, 16), (3, 2), (4, 3), (8, 2)] {
        let cfg = TensorCoreConfig::with(size, size, 16, 32, 64, 4, q).unwrap();
        let mut driver = TensorCoreDriver::new(&cfg).unwrap();
        random_programs(&mut rng, &mut driver, soak_rounds(30));
    }
}

/// `rounds` random programs ([`random_program`]) on `driver`'s core (16
/// accumulator rows, 32 buffer rows, 64 weight rows, 4 bias rows), RTL
/// against golden; most must run (a few wait forever by chance).
fn random_programs<R: Rng>(rng: &mut R, driver: &mut TensorCoreDriver, rounds: usize) {
    {
        let cfg = *driver.config();
        let size = cfg.rows();
        let (c, r) = (size as usize, size as usize);
        let mut ran = 0;
        for round in 0..rounds {
            let (hin, hout) = (32u32, 16u32);
            let words = random_program(rng, &cfg, hin, hout);
            let mem = Memories {
                weights: (0..64 * c).map(|_| rng.gen()).collect(),
                biases: (0..4 * c).map(|_| rng.gen()).collect(),
                host_in: (0..hin as usize * r).map(|_| rng.gen()).collect(),
                host_out_rows: hout as usize,
            };
            // A program whose reads cannot all enter the weight FIFO before
            // the MM that needs them waits forever; the golden model says so.
            match golden::tensorcore::cycle_model(&cfg, &words) {
                Err(e) if e.0.contains("waits forever") => continue,
                Err(e) => panic!("{cfg}, round {round}: {e}"),
                Ok(_) => {}
            }
            agree(driver, &words, &mem, &format!("{cfg}, round {round}"));
            ran += 1;
        }
        println!("{cfg}: {ran} programs");
        assert!(ran >= rounds * 2 / 3, "{cfg}: only {ran} programs ran");
    }
}

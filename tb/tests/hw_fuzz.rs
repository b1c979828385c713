//! The `hw` emitter against the `hw` evaluator: random designs are emitted as
//! Verilog and simulated by Icarus Verilog and Verilator; every output must
//! equal the evaluator's in every cycle from the one where all are defined.
//! The designs include nested `if / elif / else` chains, `switch`es and FSMs
//! ([`FuzzSize::WITH_CONTROL`]).
//!
//! Verilator 5.006 has bugs of its own that random designs hit: internal
//! errors on legal designs, and a front-end constant-folding miscompile. On
//! that release alone a round that Verilator cannot build for an internal
//! error, or where Verilator alone differs while Icarus agrees with the
//! evaluator, is *excused*: printed to stderr with the design, counted, and
//! the test fails when more than [`MAX_EXCUSED`] rounds of a run are excused.
//! Under any other release both fail the test. The seeds that found such
//! bugs are replayed by `pinned_seeds_still_behave_as_found`, on the Verilog
//! they found them in (kept in `tb/data/fuzz-pins/`, since a change of the
//! emitter can hide a fault from a regenerated design) and on today's.

use hw::{emit_design, EmittedFile, Header, ModuleDef};
use num_bigint::BigUint;
use rand::{Rng, SeedableRng};
use std::rc::Rc;
use tb::fuzz::{
    compare_outputs, dump_files, is_verilator_internal_error, random_bits, random_design,
    run_evaluator, run_verilator, verilator_miscompiles_are_known, FuzzDesign, FuzzSize,
    VERILATOR_WITH_KNOWN_MISCOMPILES,
};
use tb::icarus::{self, TestPorts};
use tb::seed::{rng_for, soak_rounds};

/// Icarus-only rounds (cheap); the Verilator test builds a model per round.
const ROUNDS: usize = 10;
const VERILATOR_ROUNDS: usize = 3;
const CYCLES: usize = 60;
/// Excused Verilator rounds a run may have before it fails, per
/// [`VERILATOR_ROUNDS`] rounds: on 5.006 about 1 in 15 random designs hits one
/// of its bugs, so two in three rounds is already unlikely, and more means the
/// excuse hides something.
const MAX_EXCUSED: usize = 1;

/// Warnings that random logic legitimately triggers under Verilator.
const VERILATOR_ARGS: &[&str] = &[
    // A chain of combinational cells through one bus vector is legal logic
    // that Verilator would merely evaluate less efficiently.
    "-Wno-UNOPTFLAT",
    // Random logic compares against constants that make the result constant.
    "-Wno-UNSIGNED",
    "-Wno-CMPCONST",
    // Random switches compare a selector against every label of its width.
    "-Wno-CASEOVERLAP",
];

/// Per-cycle inputs: reset in cycle 0 (so all three simulators start from the
/// same state; Icarus starts registers at X), and now and then later.
fn stimulus(rng: &mut impl Rng, ports: &TestPorts) -> Vec<Vec<BigUint>> {
    (0..CYCLES)
        .map(|cycle| {
            ports
                .inputs
                .iter()
                .map(|(name, w)| {
                    if name == "rst_i" {
                        BigUint::from((cycle == 0 || rng.gen_bool(0.05)) as u8)
                    } else {
                        random_bits(rng, *w)
                    }
                })
                .collect()
        })
        .collect()
}

/// One round: a random design, its Verilog and its stimulus.
struct Round {
    label: String,
    top: Rc<ModuleDef>,
    files: Vec<EmittedFile>,
    ports: TestPorts,
    stimulus: Vec<Vec<BigUint>>,
    defined_from: usize,
}

fn make_round(rng: &mut impl Rng, label: &str, size: FuzzSize) -> Round {
    let FuzzDesign {
        design,
        top,
        defined_from,
    } = random_design(rng, size);
    let header = Header {
        generator: "hw fuzz".into(),
        params: vec![("round".into(), label.into())],
    };
    let files = emit_design(&design, &top, &header);
    let ports = TestPorts::of(&top);
    let stimulus = stimulus(rng, &ports);
    Round {
        label: label.to_string(),
        top,
        files,
        ports,
        stimulus,
        defined_from,
    }
}

/// How a round ended (a failure panics).
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    /// Every simulator agreed with the evaluator.
    Agreed,
    /// Verilator 5.006 could not build or ran wrong; Icarus agreed.
    Excused(String),
}

/// Runs a round in the evaluator, Icarus and (if `verilator`) Verilator and
/// compares them.
fn run_round(r: &Round, verilator: bool) -> Outcome {
    let fail = |e: String| -> ! {
        panic!(
            "{}: {e}; design written to {}",
            r.label,
            dump_files(&r.files, &r.label)
        )
    };
    let expected = run_evaluator(&r.top, &r.ports, &r.stimulus);
    // Icarus first: it decides whether a Verilator-only difference is
    // Verilator's.
    let by_icarus = icarus::run(&r.files, &r.top, &r.stimulus).unwrap_or_else(|e| fail(e));
    compare_outputs("Icarus", &r.ports, &expected, &by_icarus, r.defined_from)
        .unwrap_or_else(|e| fail(e));
    if !verilator {
        return Outcome::Agreed;
    }
    let excuse = |what: String| -> Outcome {
        let text = format!(
            "{}: EXCUSED on Verilator {VERILATOR_WITH_KNOWN_MISCOMPILES}: {what}; Icarus agrees \
             with the evaluator; design written to {}",
            r.label,
            dump_files(&r.files, &r.label)
        );
        eprintln!("{text}");
        Outcome::Excused(text)
    };
    match run_verilator(
        &r.files,
        &r.top,
        &r.ports,
        &r.stimulus,
        "hw_fuzz",
        VERILATOR_ARGS,
    ) {
        Ok(by_verilator) => {
            match compare_outputs(
                "Verilator",
                &r.ports,
                &expected,
                &by_verilator,
                r.defined_from,
            ) {
                Ok(()) => Outcome::Agreed,
                Err(e) if verilator_miscompiles_are_known() => {
                    excuse(format!("Verilator alone differs ({e})"))
                }
                Err(e) => fail(e),
            }
        }
        // Verilator 5.006 asserts on some legal designs, e.g. `^(~x)` of a
        // 128-bit port connected to `{{127{1'b0}}, b}` and used as an enable
        // ("Reduction over single bit value should have been folded").
        Err(e) if is_verilator_internal_error(&e) && verilator_miscompiles_are_known() => {
            excuse(format!("Verilator internal error: {e}"))
        }
        Err(e) => fail(e),
    }
}

#[test]
fn emitted_verilog_matches_the_evaluator() {
    let mut rng = rng_for("emitted_verilog_matches_the_evaluator");
    for round in 0..soak_rounds(ROUNDS) {
        let label = format!("systole-fuzz-round{round}");
        // Grids of every shape up to 3x3, rows and columns 1 included.
        let size = FuzzSize {
            grid: (rng.gen_range(1..=3), rng.gen_range(1..=3)),
            ..FuzzSize::WITH_CONTROL
        };
        let r = make_round(&mut rng, &label, size);
        assert_eq!(run_round(&r, false), Outcome::Agreed);
    }
}

#[test]
fn verilated_verilog_matches_the_evaluator() {
    let mut rng = rng_for("verilated_verilog_matches_the_evaluator");
    let mut excused = Vec::new();
    let rounds = soak_rounds(VERILATOR_ROUNDS);
    let allowed = MAX_EXCUSED * rounds / VERILATOR_ROUNDS;
    // One model per round costs a C++ compile; fewer, larger rounds.
    for round in 0..rounds {
        let size = VERILATOR_SIZE;
        let label = format!("systole-fuzz-verilator-round{round}");
        let r = make_round(&mut rng, &label, size);
        if let Outcome::Excused(why) = run_round(&r, true) {
            excused.push(why);
        }
    }
    eprintln!(
        "hw_fuzz: {} of {rounds} Verilator rounds excused (at most {allowed} allowed)",
        excused.len()
    );
    assert!(
        excused.len() <= allowed,
        "{} rounds excused:\n{}",
        excused.len(),
        excused.join("\n")
    );
}

/// FNV-1a over the emitted files: a fingerprint that is stable across Rust
/// releases, to notice when a pinned design's kept Verilog is not the one
/// that was pinned.
fn fingerprint(files: &[EmittedFile]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for f in files {
        for b in f.name.bytes().chain(f.text.bytes()) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// A seed that found a Verilator bug, with the generator settings and round
/// that rebuild the design, and what the design must do now.
struct Pinned {
    seed: u64,
    round: usize,
    size: FuzzSize,
    /// [`fingerprint`] of the design's Verilog as it was found, kept in
    /// `tb/data/fuzz-pins/<seed>/`.
    fingerprint: u64,
    /// What the bug was.
    found: &'static str,
    /// Whether Verilator 5.006 still gets the design wrong (the round is
    /// excused there); every other release, and 5.006 otherwise, must agree.
    wrong_on_5006: bool,
}

/// The sizes `verilated_verilog_matches_the_evaluator` uses.
const VERILATOR_SIZE: FuzzSize = FuzzSize {
    operations: 400,
    control: 12,
    fsms: 3,
    ..FuzzSize::DEFAULT
};

/// The seeds found so far by `verilated_verilog_matches_the_evaluator`.
const PINNED: &[Pinned] = &[
    Pinned {
        // Found before procedural control joined the fuzz (400 operations,
        // `FuzzSize::DEFAULT` otherwise).
        seed: 2_329_040_420_366_817_519,
        round: 1,
        size: FuzzSize {
            operations: 400,
            ..FuzzSize::DEFAULT
        },
        fingerprint: 0xf6c5_5320_4cf3_541e,
        found: "Verilator 5.006 alone differed in one bit of an output that \
                also holds a signed product (first read as a front-end fold of \
                `-x[16:4]`); it agrees since the emitter writes signed products \
                as unsigned ones",
        wrong_on_5006: false,
    },
    Pinned {
        seed: 9_423_845_421_823_481_800,
        round: 0,
        size: VERILATOR_SIZE,
        fingerprint: 0xc8f0_b9c6_e633_607a,
        found: "Verilator 5.006 and 5.048 sign-extend `{{31{1'b0}}, t}` with \
                `t = x * x` of a signed 32-bit x; the emitter now writes signed \
                squares as unsigned products",
        wrong_on_5006: false,
    },
    Pinned {
        seed: 10_189_371_197_678_614_216,
        round: 2,
        size: VERILATOR_SIZE,
        fingerprint: 0xee13_da18_67fc_976b,
        found: "Verilator 5.006 alone computes one output differently (5.048 agrees \
                with Icarus and the evaluator)",
        wrong_on_5006: true,
    },
    Pinned {
        seed: 6_859_787_956_538_440_806,
        round: 2,
        size: VERILATOR_SIZE,
        fingerprint: 0xcca7_0c7b_61d9_0cc8,
        found: "Verilator 5.048 stopped with an internal error in its data-flow \
                cycle breaker (`TraceDriver - Unhandled vertex type: NEGATE`) on \
                a negation in a path through the grid; models are now built with \
                `-fno-dfg-break-cycles` on 5.048",
        wrong_on_5006: false,
    },
    Pinned {
        seed: 18_071_420_112_026_974_698,
        round: 1,
        size: VERILATOR_SIZE,
        fingerprint: 0x1d3b_49ed_e63a_df8a,
        found: "Verilator 5.048's data-flow peephole pattern `fold-rep` gave two \
                wrong bits in one output; models are now built with \
                `-fno-dfg-peephole` on 5.048",
        wrong_on_5006: false,
    },
    Pinned {
        seed: 4_060_818_615_367_834_538,
        round: 2,
        size: VERILATOR_SIZE,
        fingerprint: 0x6f36_b071_f2b6_ea2b,
        found: "Verilator 5.048's data-flow peephole pattern \
                `push-sel-through-shiftl` gave one wrong bit in one output (it \
                shows with the `fold-rep` pattern off, which otherwise rewrites \
                the same expression first); models are now built with \
                `-fno-dfg-peephole` on 5.048",
        wrong_on_5006: false,
    },
    Pinned {
        seed: 7_783_741_732_962_471_996,
        round: 2,
        size: VERILATOR_SIZE,
        fingerprint: 0x4933_1544_36a1_e091,
        found: "Verilator 5.006 and 5.048 stopped with an internal error \
                (\"Reduction over single bit value should have been folded\") on \
                the XOR reduction of an 88-bit inverted input feeding a select; \
                models are now built with `-fno-subst` on both",
        wrong_on_5006: false,
    },
];

/// The Verilog a pinned design was found in: the files of
/// `tb/data/fuzz-pins/<seed>/` in the order `files.f` lists them, then the
/// Verilator configuration.
fn kept_files(seed: u64) -> Vec<EmittedFile> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data/fuzz-pins")
        .join(seed.to_string());
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name))
            .unwrap_or_else(|e| panic!("{}: {e}", dir.join(name).display()))
    };
    let mut files: Vec<EmittedFile> = read(hw::emit::FILE_LIST)
        .lines()
        .map(|name| EmittedFile {
            name: name.to_string(),
            module: Some(name.trim_end_matches(".v").to_string()),
            text: read(name),
        })
        .collect();
    files.push(EmittedFile {
        name: hw::emit::WAIVER_FILE.to_string(),
        module: None,
        text: read(hw::emit::WAIVER_FILE),
    });
    files.push(EmittedFile {
        name: hw::emit::FILE_LIST.to_string(),
        module: None,
        text: read(hw::emit::FILE_LIST),
    });
    files
}

#[test]
fn pinned_seeds_still_behave_as_found() {
    for p in PINNED {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(p.seed);
        let mut round = None;
        for k in 0..=p.round {
            let label = format!("systole-fuzz-pinned-{}-round{k}", p.seed);
            round = Some(make_round(&mut rng, &label, p.size));
        }
        // Today's Verilog of the design: it must agree like any fuzz round.
        // (`run_round` panics on any difference it does not excuse.)
        let mut r = round.expect("at least one round");
        run_round(&r, true);
        // The Verilog it was found in, with the same stimulus and expected
        // outputs (the generator's design is unchanged; only its emission
        // may have moved on).
        r.files = kept_files(p.seed);
        let got = fingerprint(&r.files);
        assert_eq!(
            got, p.fingerprint,
            "seed {}: the kept Verilog in tb/data/fuzz-pins is not the pinned \
             design's (fingerprint {got:#x}): {}",
            p.seed, p.found
        );
        let outcome = run_round(&r, true);
        if p.wrong_on_5006 && verilator_miscompiles_are_known() {
            // The excuse must still be needed: if 5.006 stops showing the
            // bug here, the pin no longer tests what it was pinned for.
            assert!(
                matches!(outcome, Outcome::Excused(_)),
                "seed {}: Verilator {VERILATOR_WITH_KNOWN_MISCOMPILES} no longer shows: {}",
                p.seed,
                p.found
            );
        } else {
            assert_eq!(outcome, Outcome::Agreed);
        }
    }
}

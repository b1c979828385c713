//! The `hw` emitter against the `hw` evaluator: random designs are emitted as
//! Verilog and simulated by Icarus Verilog and Verilator; every output must
//! equal the evaluator's in every cycle.

use hw::{emit_design, Evaluator, Header};
use num_bigint::BigUint;
use rand::Rng;
use tb::fuzz::{random_bits, random_design, FuzzSize};
use tb::icarus::{self, TestPorts};
use tb::seed::rng_for;

const ROUNDS: usize = 3;
const CYCLES: usize = 60;

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

fn evaluate(top: &hw::ModuleDef, ports: &TestPorts, stim: &[Vec<BigUint>]) -> Vec<Vec<BigUint>> {
    let mut e = Evaluator::new(top).expect("random designs have no combinational loop");
    stim.iter()
        .map(|inputs| {
            for ((name, _), v) in ports.inputs.iter().zip(inputs) {
                e.set(name, v);
            }
            e.eval();
            let out = ports.outputs.iter().map(|(name, _)| e.get(name)).collect();
            e.step();
            out
        })
        .collect()
}

fn compare(
    what: &str,
    ports: &TestPorts,
    expected: &[Vec<BigUint>],
    actual: &[Vec<Option<BigUint>>],
    dump: &dyn Fn() -> String,
) {
    // Cycle 0 is the reset cycle, where Icarus still shows X registers.
    for cycle in 1..expected.len() {
        for (o, (name, _)) in ports.outputs.iter().enumerate() {
            if Some(&expected[cycle][o]) != actual[cycle][o].as_ref() {
                let got = match &actual[cycle][o] {
                    Some(v) => format!("{v:x}"),
                    None => "X/Z".into(),
                };
                panic!(
                    "{what} differs from the evaluator in cycle {cycle}, output {name}: \
                     evaluator {:x}, {what} {got}; design written to {}",
                    expected[cycle][o],
                    dump()
                );
            }
        }
    }
}

#[test]
fn emitted_verilog_matches_the_evaluator() {
    let mut rng = rng_for("emitted_verilog_matches_the_evaluator");
    for round in 0..ROUNDS {
        let (design, top) = random_design(&mut rng, FuzzSize::DEFAULT);
        let header = Header {
            generator: "hw fuzz".into(),
            params: vec![("round".into(), round.to_string())],
        };
        let files = emit_design(&design, &top, &header);
        let ports = TestPorts::of(&top);
        let stim = stimulus(&mut rng, &ports);
        let dump = || {
            let dir = std::env::temp_dir().join(format!("systole-fuzz-round{round}"));
            std::fs::create_dir_all(&dir).unwrap();
            for f in &files {
                std::fs::write(dir.join(&f.name), &f.text).unwrap();
            }
            dir.display().to_string()
        };
        let expected = evaluate(&top, &ports, &stim);
        let by_icarus =
            icarus::run(&files, &top, &stim).unwrap_or_else(|e| panic!("{e}; {}", dump()));
        compare("Icarus", &ports, &expected, &by_icarus, &dump);
    }
}

fn to_words(v: &BigUint, width: u32) -> Vec<u32> {
    let mut words = v.to_u32_digits();
    words.resize(width.div_ceil(32) as usize, 0);
    words
}

fn verilate(
    files: &[hw::EmittedFile],
    top: &hw::ModuleDef,
    ports: &TestPorts,
    stim: &[Vec<BigUint>],
) -> Vec<Vec<Option<BigUint>>> {
    let mut spec = sim::from_hw::model_spec(files, top);
    // A chain of combinational cells through one bus vector is legal logic that
    // Verilator would merely evaluate less efficiently.
    spec.verilator_args.push("-Wno-UNOPTFLAT".into());
    // Random logic compares against constants that make the result constant.
    spec.verilator_args.push("-Wno-UNSIGNED".into());
    spec.verilator_args.push("-Wno-CMPCONST".into());
    let mut model = sim::Model::build(&spec, "hw_fuzz").unwrap_or_else(|e| panic!("{e}"));
    let ins: Vec<_> = ports
        .inputs
        .iter()
        .map(|(n, _)| model.port(n).unwrap())
        .collect();
    let outs: Vec<_> = ports
        .outputs
        .iter()
        .map(|(n, _)| model.port(n).unwrap())
        .collect();
    stim.iter()
        .map(|inputs| {
            for ((p, (_, w)), v) in ins.iter().zip(&ports.inputs).zip(inputs) {
                model.poke_wide(*p, &to_words(v, *w));
            }
            model.eval();
            let out = outs
                .iter()
                .map(|p| Some(BigUint::from_slice(&model.peek_wide(*p))))
                .collect();
            model.step();
            out
        })
        .collect()
}

#[test]
fn verilated_verilog_matches_the_evaluator() {
    let mut rng = rng_for("verilated_verilog_matches_the_evaluator");
    // One model per round costs a C++ compile; fewer, larger rounds.
    for round in 0..2 {
        let size = FuzzSize {
            operations: 400,
            ..FuzzSize::DEFAULT
        };
        let (design, top) = random_design(&mut rng, size);
        let header = Header {
            generator: "hw fuzz".into(),
            params: vec![("round".into(), round.to_string())],
        };
        let files = emit_design(&design, &top, &header);
        let ports = TestPorts::of(&top);
        let stim = stimulus(&mut rng, &ports);
        let dump = || {
            let dir = std::env::temp_dir().join(format!("systole-fuzz-verilator-round{round}"));
            std::fs::create_dir_all(&dir).unwrap();
            for f in &files {
                std::fs::write(dir.join(&f.name), &f.text).unwrap();
            }
            dir.display().to_string()
        };
        let expected = evaluate(&top, &ports, &stim);
        let by_verilator = verilate(&files, &top, &ports, &stim);
        compare("Verilator", &ports, &expected, &by_verilator, &dump);
        let by_icarus =
            icarus::run(&files, &top, &stim).unwrap_or_else(|e| panic!("{e}; {}", dump()));
        compare("Icarus", &ports, &expected, &by_icarus, &dump);
    }
}

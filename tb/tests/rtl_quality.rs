//! Every preset of every registered block (`gen::registry`) generates Verilog
//! that passes the tools users will run it through: `verilator --lint-only
//! -Wall` (waivers only with reasons), `iverilog -g2005`, and Yosys's
//! `proc`, which infers every latch there is, inferring none
//! (`tb::tools::yosys_latch_free`). A block joins
//! these checks by joining the registry; nothing here names one.

use hw::EmittedFile;
use std::sync::Mutex;
use tb::tools;

/// One preset's emitted design.
struct Design {
    /// `block preset`, e.g. `mxu int8-4x4`.
    what: String,
    top: String,
    files: Vec<EmittedFile>,
}

/// Every preset of every block, elaborated and emitted as `gen` writes it.
fn every_preset() -> Vec<Design> {
    let mut out = Vec::new();
    for block in gen::registry() {
        for preset in block.presets() {
            let what = format!("{} {}", block.name(), preset.name);
            let generated = gen::generate_configured(preset.config.as_ref())
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            out.push(Design {
                what,
                top: generated.top,
                files: generated.files,
            });
        }
    }
    out
}

/// The three tools every preset goes through.
#[derive(Clone, Copy)]
enum Tool {
    Lint,
    Icarus,
    Yosys,
}

impl Tool {
    const ALL: [Tool; 3] = [Tool::Lint, Tool::Icarus, Tool::Yosys];

    fn name(self) -> &'static str {
        match self {
            Tool::Lint => "lint",
            Tool::Icarus => "icarus",
            Tool::Yosys => "yosys",
        }
    }

    /// The tool's check of one design; its complaint, in one message.
    fn check(self, d: &Design) -> Result<(), String> {
        match self {
            Tool::Lint => tools::verilator_lint(&d.files, &d.top),
            Tool::Icarus => tools::iverilog_compile(&d.files, &d.top),
            Tool::Yosys => tools::yosys_latch_free(&d.files, &d.top).map(|_| ()),
        }
    }
}

#[test]
fn every_preset_passes_lint_icarus_and_yosys() {
    let designs = every_preset();
    let names: Vec<&str> = designs.iter().map(|d| d.what.as_str()).collect();
    println!("checking {} presets: {}", designs.len(), names.join(", "));
    // The tools are external processes: run them on every core, each
    // (preset, tool) pair on its own, and report every failure rather than
    // the first. The largest designs start first (the queue pops from its
    // end), so that no big one is left to run alone at the end, and the
    // largest preset's three tools run side by side.
    let mut work: Vec<(&Design, Tool)> = designs
        .iter()
        .flat_map(|d| Tool::ALL.into_iter().map(move |t| (d, t)))
        .collect();
    work.sort_by_key(|(d, _)| d.files.iter().map(|f| f.text.len()).sum::<usize>());
    let queue = Mutex::new(work);
    let failures = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let Some((d, tool)) = queue.lock().unwrap().pop() else {
                    break;
                };
                let start = std::time::Instant::now();
                let result = tool.check(d);
                // Each check's time, so the suite's long poles are visible.
                println!(
                    "{} {}: {:.1} s",
                    d.what,
                    tool.name(),
                    start.elapsed().as_secs_f64()
                );
                if let Err(e) = result {
                    failures
                        .lock()
                        .unwrap()
                        .push(format!("{} ({}): {e}", d.what, tool.name()));
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_waiver_states_a_reason() {
    for d in every_preset() {
        let vlt = d
            .files
            .iter()
            .find(|f| f.name == hw::emit::WAIVER_FILE)
            .expect("waiver file");
        let lines: Vec<&str> = vlt.text.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            if l.starts_with("lint_off") {
                // The reason is the comment line above the waiver's pair of lines.
                let reason = lines[..i]
                    .iter()
                    .rev()
                    .find(|p| p.starts_with("//"))
                    .unwrap();
                assert!(
                    reason.len() > 20,
                    "{}: waiver without a real reason: {l}",
                    d.what
                );
            }
        }
    }
}

#[test]
fn the_lint_check_itself_catches_warnings() {
    // A module with an unused input must fail the lint check.
    let mut m = hw::ModuleBuilder::new("leaky");
    let a = m.input("a_i", hw::Ty::u(4));
    let _unused = m.input("b_i", hw::Ty::u(4));
    m.output("y_o", a);
    let mut design = hw::Design::new();
    let top = design.add(m.finish());
    let files = hw::emit_design(&design, &top, &hw::Header::default());
    assert!(tools::verilator_lint(&files, "leaky").is_err());
}

#[test]
fn the_latch_check_itself_catches_a_latch() {
    // The hw layer cannot write a latch, so the check is shown one by hand:
    // a combinational block that leaves its output unassigned when `en_i` is
    // low. The same module with the assignment in both branches passes.
    let module = |else_branch: &str| hw::EmittedFile {
        name: "latchy.v".into(),
        module: Some("latchy".into()),
        text: format!(
            "module latchy(input wire en_i, input wire d_i, output reg q_o);\n\
             always @(*) begin\n  if (en_i) q_o = d_i;{else_branch}\nend\nendmodule\n"
        ),
    };
    let latch = tools::yosys_proc(&[module("")], "latchy");
    assert!(
        latch
            .as_ref()
            .is_err_and(|e| e.contains("DLATCH") || e.contains("dlatch")),
        "{latch:?}"
    );
    let clean = tools::yosys_proc(&[module(" else q_o = 1'b0;")], "latchy");
    assert!(clean.is_ok(), "{clean:?}");
}

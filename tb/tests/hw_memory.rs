//! Memories under the real simulators: element widths 1, 8, 33 and 70, address
//! widths 1 to 6, one or two write ports, one or two read ports with and
//! without enables, a memory inside a child instantiated twice, compared
//! cycle by cycle between the evaluator, Verilator and Icarus; and the emitted
//! memories pass Verilator's lint and synthesize in Yosys as memories without
//! latches.
//!
//! Icarus starts memories and read registers at X, so the stimulus first writes
//! every address of every memory (through write port 0), then enables every
//! read port once, and only then mixes random reads and writes, with frequent
//! collisions: both write ports on one address (the later port wins) and reads
//! of the address being written (the read returns the old word). The design is
//! fixed, so its Verilator model is built once and then comes from the cache.

use hw::{emit_design, Design, EmittedFile, Header, ModuleDef, Ty};
use num_bigint::BigUint;
use rand::Rng;
use std::collections::BTreeMap;
use std::rc::Rc;
use tb::fuzz::{compare_outputs, dump_files, random_bits, run_evaluator, run_verilator};
use tb::icarus::{self, TestPorts};
use tb::seed::rng_for;
use tb::tools;

/// A memory of the test design: name, element (width, signed), address
/// width, write ports, and per read port whether it has an enable.
struct MemCfg {
    name: &'static str,
    elem: (u32, bool),
    addr_width: u32,
    writes: usize,
    reads: &'static [bool],
}

const MEMORIES: &[MemCfg] = &[
    MemCfg {
        name: "mb1",
        elem: (1, false),
        addr_width: 1,
        writes: 1,
        reads: &[false],
    },
    MemCfg {
        name: "ms8",
        elem: (8, true),
        addr_width: 4,
        writes: 2,
        reads: &[false, true],
    },
    MemCfg {
        name: "mu33",
        elem: (33, false),
        addr_width: 3,
        writes: 1,
        reads: &[true, true],
    },
    MemCfg {
        name: "ms70",
        elem: (70, true),
        addr_width: 5,
        writes: 2,
        reads: &[true],
    },
    MemCfg {
        name: "mu8",
        elem: (8, false),
        addr_width: 2,
        writes: 2,
        reads: &[false, false],
    },
    MemCfg {
        name: "mu70",
        elem: (70, false),
        addr_width: 1,
        writes: 1,
        reads: &[false, true],
    },
    MemCfg {
        name: "ms1",
        elem: (1, true),
        addr_width: 3,
        writes: 2,
        reads: &[true],
    },
    MemCfg {
        name: "mdeep",
        elem: (33, true),
        addr_width: 6,
        writes: 1,
        reads: &[false],
    },
];

/// Instances of the child module, each holding one memory.
const CHILDREN: &[&str] = &["c0", "c1"];

/// Cycles spent writing every address (the deepest memory's depth).
const INIT: usize = 64;
/// Random cycles after the first read of every port.
const RANDOM: usize = 160;

fn memory_design() -> (Design, Rc<ModuleDef>) {
    let mut d = Design::new();
    // The child: write at `a`, read at `a + 1` with an enable, data and
    // enable computed, so the clocked block holds expressions, not only ports.
    let child = d.define("mem_child", &[], |_, m| {
        let we = m.input("we_i", Ty::BOOL);
        let a = m.input("a_i", Ty::u(3));
        let data = m.input("d_i", Ty::u(8));
        let re = m.input("re_i", Ty::BOOL);
        let store = m.memory("store", Ty::u(8), 3);
        m.mem_write(store, we | data.is_eq(0), a, data ^ 0x5au32);
        let q = m.mem_read(store, Some(re), a + 1);
        m.output("q_o", q);
        m.output("sum_o", q + data);
    });
    let top = d.define("mem_top", &[], |_, m| {
        for cfg in MEMORIES {
            let elem = Ty::new(cfg.elem.0, cfg.elem.1);
            let aw = Ty::u(cfg.addr_width);
            let mem = m.memory(cfg.name, elem, cfg.addr_width);
            for j in 0..cfg.writes {
                let n = cfg.name;
                let we = m.input(&format!("{n}_we{j}_i"), Ty::BOOL);
                let wa = m.input(&format!("{n}_wa{j}_i"), aw);
                let wd = m.input(&format!("{n}_wd{j}_i"), elem);
                m.mem_write(mem, we, wa, wd);
            }
            for (r, &has_enable) in cfg.reads.iter().enumerate() {
                let n = cfg.name;
                let re = has_enable.then(|| m.input(&format!("{n}_re{r}_i"), Ty::BOOL));
                let ra = m.input(&format!("{n}_ra{r}_i"), aw);
                let q = m.mem_read(mem, re, ra);
                m.output(&format!("{n}_q{r}_o"), q);
            }
        }
        for c in CHILDREN {
            let u = m.instance(c, &child);
            for (port, ty) in [
                ("we_i", Ty::BOOL),
                ("a_i", Ty::u(3)),
                ("d_i", Ty::u(8)),
                ("re_i", Ty::BOOL),
            ] {
                let v = m.input(&format!("{c}_{port}"), ty);
                m.connect(u, port, v);
            }
            for port in ["q_o", "sum_o"] {
                let v = m.inst_output(u, port);
                m.output(&format!("{c}_child_{port}"), v);
            }
        }
    });
    (d, top)
}

/// What an input port does, from its name: (memory or child, role, port index).
fn role(name: &str) -> (&str, &str, usize) {
    let (owner, rest) = name.split_once('_').expect("owner_role_i");
    let role = rest.strip_suffix("_i").expect("an input");
    let digits = role.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    let kind = &role[..role.len() - digits.len()];
    (owner, kind, digits.parse().unwrap_or(0))
}

fn stimulus(rng: &mut impl Rng, ports: &TestPorts) -> Vec<Vec<BigUint>> {
    let mut cycles = Vec::new();
    for cycle in 0..INIT + 1 + RANDOM {
        // One address per memory this cycle that several ports share often.
        let mut hot: BTreeMap<&str, u64> = BTreeMap::new();
        // Every fourth random cycle all ports of a memory collide on purpose,
        // so same-address cases happen whatever the seed.
        let collide = cycle > INIT && cycle % 4 == 0;
        let row = ports
            .inputs
            .iter()
            .map(|(name, w)| {
                let (owner, kind, index) = role(name);
                let mask = if *w >= 64 { u64::MAX } else { (1u64 << *w) - 1 };
                // All address ports of one memory have the same width.
                let hot = *hot.entry(owner).or_insert_with(|| rng.gen::<u64>()) & mask;
                let v: u64 = match kind {
                    // Initialisation: write port 0 walks all addresses;
                    // nothing reads until every word is defined.
                    "we" if cycle < INIT => (index == 0) as u64,
                    "wa" | "a" if cycle < INIT => cycle as u64 & mask,
                    "re" if cycle < INIT => 0,
                    // First random cycle: every read port reads once.
                    "re" if cycle == INIT => 1,
                    "we" | "re" if collide => 1,
                    "wa" | "ra" | "a" if collide => hot,
                    "we" | "re" => rng.gen_bool(0.6) as u64,
                    "wa" | "ra" | "a" if rng.gen_bool(0.5) => hot,
                    "wa" | "ra" | "a" => rng.gen::<u64>() & mask,
                    "wd" | "d" => return random_bits(rng, *w),
                    other => panic!("unexpected input role '{other}' of {name}"),
                };
                BigUint::from(v)
            })
            .collect();
        cycles.push(row);
    }
    cycles
}

fn emitted() -> (Vec<EmittedFile>, Rc<ModuleDef>) {
    let (design, top) = memory_design();
    let header = Header {
        generator: "hw memory test".into(),
        params: Vec::new(),
    };
    (emit_design(&design, &top, &header), top)
}

#[test]
fn memories_match_in_all_simulators() {
    let mut rng = rng_for("memories_match_in_all_simulators");
    let (files, top) = emitted();
    let ports = TestPorts::of(&top);
    assert!(top.has_clock && !top.has_reset);
    let stim = stimulus(&mut rng, &ports);
    let fail = |e: String| -> ! {
        panic!(
            "{e}; design written to {}",
            dump_files(&files, "systole-memory")
        )
    };
    let expected = run_evaluator(&top, &ports, &stim);
    let by_verilator =
        run_verilator(&files, &top, &ports, &stim, "hw_memory", &[]).unwrap_or_else(|e| fail(e));
    compare_outputs("Verilator", &ports, &expected, &by_verilator, INIT + 1)
        .unwrap_or_else(|e| fail(e));
    let by_icarus = icarus::run(&files, &top, &stim).unwrap_or_else(|e| fail(e));
    compare_outputs("Icarus", &ports, &expected, &by_icarus, INIT + 1).unwrap_or_else(|e| fail(e));
    // The stimulus did what it promises: collisions happened, and the read
    // data changed (not a design stuck at one value).
    let (mut same_addr_rw, mut both_writes) = (0, 0);
    for cycle in &stim[INIT..] {
        let value = |n: &str| {
            let i = ports.inputs.iter().position(|(p, _)| p == n).unwrap();
            cycle[i].clone()
        };
        let one = BigUint::from(1u8);
        if value("ms8_we0_i") == one && value("ms8_ra0_i") == value("ms8_wa0_i") {
            same_addr_rw += 1;
        }
        if value("ms8_we0_i") == one
            && value("ms8_we1_i") == one
            && value("ms8_wa0_i") == value("ms8_wa1_i")
        {
            both_writes += 1;
        }
    }
    assert!(
        same_addr_rw > 10 && both_writes > 10,
        "{same_addr_rw} {both_writes}"
    );
    for (o, (name, _)) in ports.outputs.iter().enumerate() {
        let distinct: std::collections::BTreeSet<_> =
            expected[INIT + 1..].iter().map(|c| &c[o]).collect();
        assert!(distinct.len() > 1, "{name} never changes");
    }
}

#[test]
fn memories_pass_lint_icarus_and_synthesize_as_memories() {
    let (files, top) = emitted();
    tools::verilator_lint(&files, &top.name).unwrap_or_else(|e| panic!("{e}"));
    tools::iverilog_compile(&files, &top.name).unwrap_or_else(|e| panic!("{e}"));
    let synth = tools::yosys_synth(&files, &top.name).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(synth.latches, 0, "latches inferred\n{}", synth.log);
    let expected = (MEMORIES.len() + CHILDREN.len()) as u64;
    assert_eq!(
        synth.memories, expected,
        "every memory is inferred as one\n{}",
        synth.log
    );
    // Read registers merge into the memories' read ports, so cells, not
    // necessarily flip-flops, remain.
    assert!(synth.cells > 0, "{}", synth.log);
    // The declarations are plain Verilog-2005 arrays of the right shape.
    let text = &files
        .iter()
        .find(|f| f.name == "mem_top.v")
        .expect("top file")
        .text;
    for decl in [
        "reg mb1 [0:1];",
        "reg signed [7:0] ms8 [0:15];",
        "reg [32:0] mu33 [0:7];",
        "reg signed [69:0] ms70 [0:31];",
        "reg signed ms1 [0:7];",
        "reg signed [32:0] mdeep [0:63];",
    ] {
        assert!(text.contains(decl), "no '{decl}' in\n{text}");
    }
}

#[test]
fn synthesis_counts_no_memory_where_there_is_none() {
    // The memory count must come from the design, not be a constant.
    let mut d = Design::new();
    let top = d.define("no_mem", &[], |_, m| {
        let a = m.input("a_i", Ty::u(8));
        let r = m.reg_reset("r", Ty::u(8), 0);
        m.set_next(r, r.q() ^ a);
        m.output("y_o", r.q());
    });
    let files = emit_design(&d, &top, &Header::default());
    let synth = tools::yosys_synth(&files, "no_mem").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(synth.memories, 0, "{}", synth.log);
    assert_eq!(synth.flip_flops, 8, "{}", synth.log);
}

//! Memories under the real simulators, compared cycle by cycle between the
//! evaluator, Verilator and Icarus, plus lint, Icarus and Yosys checks.
//!
//! - A fixed design of power-of-two memories without initial contents:
//!   element widths 1, 8, 33 and 70, address widths 1 to 6, one or two write
//!   ports, one or two read ports with and without enables, and a memory
//!   inside a child instantiated twice. Icarus starts such memories and read
//!   registers at X, so the stimulus first writes every address of every
//!   memory (through write port 0), then enables every read port once, and
//!   only then mixes random reads and writes, with frequent collisions: both
//!   write ports on one address (the later port wins) and reads of the
//!   address being written (the read returns the old word).
//! - Random designs of memories with initial contents: any depth (1, 3, 5,
//!   100, ...), lane masks, read-first and write-first read ports, up to three
//!   write ports, ROMs. Every read port reads in cycle 0, so every output is
//!   defined from cycle 1; addresses are often out of range and often collide.
//! - Directed edge cases with expected values written out: a depth-5 memory
//!   with two masked write ports colliding on one word and on out-of-range
//!   addresses, a depth-1 memory, a ROM.

use hw::{emit_design, Design, EmittedFile, Header, ModuleDef, Ty};
use num_bigint::BigUint;
use rand::seq::SliceRandom;
use rand::Rng;
use std::collections::BTreeMap;
use std::rc::Rc;
use tb::fuzz::{compare_outputs, dump_files, random_bits, run_evaluator, run_verilator};
use tb::icarus::{self, TestPorts};
use tb::seed::{rng_for, seed_for};
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

// ---------------------------------------------------------------------------
// Random designs of memories of any depth, with masks, both read modes, ROMs.

/// One random memory: element type, depth, initial words, per write port its
/// mask width (`None`: whole words), per read port (has an enable,
/// write-first).
#[derive(Debug)]
struct RandomMem {
    name: String,
    elem: Ty,
    depth: u64,
    init: Vec<BigUint>,
    writes: Vec<Option<u32>>,
    reads: Vec<(bool, bool)>,
}

fn random_mem(rng: &mut impl Rng, k: usize) -> RandomMem {
    let width = *[1u32, 8, 12, 16, 32, 33, 64, 70].choose(rng).unwrap();
    let elem = Ty::new(width, rng.gen_bool(0.4));
    let depth = match rng.gen_range(0..8) {
        0 => 1,
        1 => 3,
        2 => 5,
        3 => 100,
        4 => 1 << rng.gen_range(1..=4),
        _ => rng.gen_range(1..=40),
    };
    let rom = rng.gen_bool(0.2);
    let writes = if rom { 0 } else { rng.gen_range(1..=3) };
    let lane_counts: Vec<u32> = [2, 3, 4, 8]
        .into_iter()
        .filter(|l| width.is_multiple_of(*l))
        .collect();
    RandomMem {
        name: format!("m{k}"),
        elem,
        depth,
        init: (0..depth).map(|_| random_bits(rng, width)).collect(),
        writes: (0..writes)
            .map(|_| match lane_counts.choose(rng) {
                Some(&l) if rng.gen_bool(0.6) => Some(l),
                _ if rng.gen_bool(0.2) => Some(1),
                _ => None,
            })
            .collect(),
        reads: (0..rng.gen_range(1..=3))
            .map(|_| (rng.gen_bool(0.5), rng.gen_bool(0.5)))
            .collect(),
    }
}

/// A top module holding `mems`; ports `<m>_we<j>_i`, `<m>_wa<j>_i`,
/// `<m>_wd<j>_i`, `<m>_wm<j>_i` (mask), `<m>_re<r>_i`, `<m>_ra<r>_i`, and
/// `<m>_q<r>_o`.
fn random_memories_top(mems: &[RandomMem]) -> (Design, Rc<ModuleDef>) {
    let mut d = Design::new();
    let top = d.define("mem_random", &[], |_, m| {
        for cfg in mems {
            let n = &cfg.name;
            let mem = m.memory_depth(n, cfg.elem, cfg.depth);
            m.mem_init(mem, cfg.init.iter().map(|w| to_value(w, cfg.elem)));
            let aw = Ty::u(m.mem_addr_width(mem));
            for (j, mask) in cfg.writes.iter().enumerate() {
                let we = m.input(&format!("{n}_we{j}_i"), Ty::BOOL);
                let wa = m.input(&format!("{n}_wa{j}_i"), aw);
                let wd = m.input(&format!("{n}_wd{j}_i"), cfg.elem);
                match mask {
                    None => m.mem_write(mem, we, wa, wd),
                    Some(lanes) => {
                        let wm = m.input(&format!("{n}_wm{j}_i"), Ty::u(*lanes));
                        m.mem_write_masked(mem, we, wa, wd, wm);
                    }
                }
            }
            for (r, &(has_enable, write_first)) in cfg.reads.iter().enumerate() {
                let re = has_enable.then(|| m.input(&format!("{n}_re{r}_i"), Ty::BOOL));
                let ra = m.input(&format!("{n}_ra{r}_i"), aw);
                let q = if write_first {
                    m.mem_read_write_first(mem, re, ra)
                } else {
                    m.mem_read(mem, re, ra)
                };
                m.output(&format!("{n}_q{r}_o"), q);
            }
        }
    });
    (d, top)
}

/// A bit pattern of `ty` as the integer `mem_init` takes.
fn to_value(bits: &BigUint, ty: Ty) -> num_bigint::BigInt {
    let v = num_bigint::BigInt::from(bits.clone());
    if ty.signed && bits.bit(ty.width as u64 - 1) {
        v - (num_bigint::BigInt::from(1) << ty.width as usize)
    } else {
        v
    }
}

/// Random cycles of `random_stimulus`.
const RANDOM_MEM_CYCLES: usize = 200;

/// Every read port reads in cycle 0; then random traffic where a quarter of
/// the cycles put every port of a memory on one address, and addresses are
/// out of range (where the depth leaves room) a fifth of the time.
fn random_stimulus<R: Rng>(
    rng: &mut R,
    ports: &TestPorts,
    mems: &[RandomMem],
) -> Vec<Vec<BigUint>> {
    let depth_of = |owner: &str| mems.iter().find(|m| m.name == owner).unwrap().depth;
    (0..RANDOM_MEM_CYCLES)
        .map(|cycle| {
            let collide = cycle % 4 == 3;
            let mut hot: BTreeMap<String, u64> = BTreeMap::new();
            ports
                .inputs
                .iter()
                .map(|(name, w)| {
                    let (owner, kind, _) = role(name);
                    let depth = depth_of(owner);
                    // All address ports of a memory have its address width.
                    let address = |rng: &mut R| {
                        let span = 1u64 << *w;
                        if depth < span && rng.gen_bool(0.2) {
                            rng.gen_range(depth..span)
                        } else {
                            rng.gen_range(0..depth)
                        }
                    };
                    let v = match kind {
                        "re" if cycle == 0 => 1,
                        "we" | "re" if collide => 1,
                        "we" | "re" => rng.gen_bool(0.6) as u64,
                        "wa" | "ra" if collide || rng.gen_bool(0.4) => {
                            *hot.entry(owner.to_string()).or_insert_with(|| address(rng))
                        }
                        "wa" | "ra" => address(rng),
                        "wd" | "wm" => return random_bits(rng, *w),
                        other => panic!("unexpected input role '{other}' of {name}"),
                    };
                    BigUint::from(v)
                })
                .collect()
        })
        .collect()
}

/// Runs `stim` through the evaluator, Icarus and Verilator and compares them
/// from cycle `from`; returns the evaluator's outputs.
fn three_way(
    files: &[EmittedFile],
    top: &ModuleDef,
    stim: &[Vec<BigUint>],
    from: usize,
    label: &str,
) -> Vec<Vec<BigUint>> {
    let ports = TestPorts::of(top);
    let fail = |e: String| -> ! {
        panic!(
            "{label}: {e}; design written to {}",
            dump_files(files, label)
        )
    };
    let expected = run_evaluator(top, &ports, stim);
    let by_icarus = icarus::run(files, top, stim).unwrap_or_else(|e| fail(e));
    compare_outputs("Icarus", &ports, &expected, &by_icarus, from).unwrap_or_else(|e| fail(e));
    let by_verilator =
        run_verilator(files, top, &ports, stim, label, &[]).unwrap_or_else(|e| fail(e));
    compare_outputs("Verilator", &ports, &expected, &by_verilator, from)
        .unwrap_or_else(|e| fail(e));
    expected
}

/// Rounds of `random_memories_match_in_all_simulators`, each a new design.
const RANDOM_ROUNDS: usize = 3;

#[test]
fn random_memories_match_in_all_simulators() {
    let seed = seed_for("random_memories_match_in_all_simulators");
    let header = Header {
        generator: "hw memory test".into(),
        params: vec![("seed".into(), seed.to_string())],
    };
    let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(seed);
    let (mut write_first, mut masked, mut odd, mut roms) = (0, 0, 0, 0);
    for round in 0..tb::seed::soak_rounds(RANDOM_ROUNDS) {
        let mems: Vec<RandomMem> = (0..rng.gen_range(3..=5))
            .map(|k| random_mem(&mut rng, k))
            .collect();
        write_first += mems.iter().flat_map(|m| &m.reads).filter(|r| r.1).count();
        masked += mems
            .iter()
            .flat_map(|m| &m.writes)
            .filter(|w| w.is_some())
            .count();
        odd += mems.iter().filter(|m| !m.depth.is_power_of_two()).count();
        roms += mems.iter().filter(|m| m.writes.is_empty()).count();
        let (design, top) = random_memories_top(&mems);
        let files = emit_design(&design, &top, &header);
        let ports = TestPorts::of(&top);
        let stim = random_stimulus(&mut rng, &ports, &mems);
        let label = format!("hw_memory_random_{round}");
        three_way(&files, &top, &stim, 1, &label);
        tools::verilator_lint(&files, &top.name).unwrap_or_else(|e| panic!("{label}: {e}"));
    }
    println!("{write_first} write-first ports, {masked} masked write ports, {odd} odd depths, {roms} ROMs");
}

// ---------------------------------------------------------------------------
// Directed edge cases.

/// A depth-5 memory of u16 words in two byte lanes (addresses 0..=7, so 5, 6
/// and 7 are out of range), write ports 0 and 1 with masks, a read-first and
/// a write-first read port on one address; a depth-1 memory of s8 written by
/// one port and read by a write-first port; and a 3-word ROM.
fn directed_top() -> (Design, Rc<ModuleDef>) {
    let mut d = Design::new();
    let top = d.define("mem_directed", &[], |_, m| {
        let mem = m.memory_depth("five", Ty::u(16), 5);
        m.mem_init(mem, [0x1111, 0x2222, 0x3333, 0x4444, 0x5555]);
        for j in 0..2 {
            let we = m.input(&format!("we{j}_i"), Ty::BOOL);
            let wa = m.input(&format!("wa{j}_i"), Ty::u(3));
            let wd = m.input(&format!("wd{j}_i"), Ty::u(16));
            let wm = m.input(&format!("wm{j}_i"), Ty::u(2));
            m.mem_write_masked(mem, we, wa, wd, wm);
        }
        let ra = m.input("ra_i", Ty::u(3));
        let old = m.mem_read(mem, None, ra);
        let new = m.mem_read_write_first(mem, None, ra);
        m.output("old_o", old);
        m.output("new_o", new);

        let one = m.memory_depth("one", Ty::s(8), 1);
        m.mem_init(one, [-5]);
        let we = m.input("one_we_i", Ty::BOOL);
        let a = m.input("one_a_i", Ty::u(1));
        let wd = m.input("one_wd_i", Ty::s(8));
        m.mem_write(one, we, a, wd);
        let q = m.mem_read_write_first(one, None, a);
        m.output("one_o", q);

        let rom = m.rom("lut", Ty::u(8), [0xa5, 0x3c, 0xff]);
        let rom_a = m.input("rom_a_i", Ty::u(2));
        let q = m.mem_read(rom, None, rom_a);
        m.output("rom_o", q);
    });
    (d, top)
}

#[test]
fn directed_memory_edge_cases() {
    let (design, top) = directed_top();
    let files = emit_design(&design, &top, &Header::default());
    let ports = TestPorts::of(&top);
    // Each cycle: the inputs, then the outputs expected in the next cycle
    // (old_o, new_o, one_o, rom_o), the read registers' values after the edge.
    struct Cycle {
        w0: (u64, u64, u64, u64),
        w1: (u64, u64, u64, u64),
        ra: u64,
        one: (u64, u64, u64),
        rom_a: u64,
        then: (u64, u64, u64, u64),
    }
    let c = |w0, w1, ra, one, rom_a, then| Cycle {
        w0,
        w1,
        ra,
        one,
        rom_a,
        then,
    };
    let idle = (0, 0, 0, 0);
    let cycles = [
        // Plain reads of the initial contents; ROM word 0; one's word is -5.
        c(idle, idle, 2, (0, 0, 0), 0, (0x3333, 0x3333, 0xfb, 0xa5)),
        // Both ports write word 1 in one cycle: port 0 both lanes, port 1 the
        // high lane only, so the high lane is port 1's and the low lane port
        // 0's. Read-first sees the old word, write-first the merged one.
        c(
            (1, 1, 0xaaaa, 3),
            (1, 1, 0xbbbb, 2),
            1,
            (1, 0, 0x17),
            1,
            (0x2222, 0xbbaa, 0x17, 0x3c),
        ),
        // The word now holds the merge; the write-first port of `one` showed
        // the new word in the cycle it was written, and holds it.
        c(idle, idle, 1, (0, 0, 0), 2, (0xbbaa, 0xbbaa, 0x17, 0xff)),
        // Out of range: writes to 5 and 7 are ignored (5 is not word 0 or 1
        // wrapped), and reads of 5 give 0 even while being written; the
        // depth-1 memory ignores address 1 and reads 0 there.
        c(
            (1, 5, 0x1234, 3),
            (1, 7, 0x5678, 3),
            5,
            (1, 1, 0x42),
            3,
            (0, 0, 0, 0),
        ),
        c(idle, idle, 7, (0, 1, 0), 0, (0, 0, 0, 0xa5)),
        c(idle, idle, 5, (0, 0, 0), 0, (0, 0, 0x17, 0xa5)),
        c(idle, idle, 0, (0, 0, 0), 0, (0x1111, 0x1111, 0x17, 0xa5)),
        // An all-zero mask writes nothing; the write-first port shows the
        // unchanged word.
        c(
            (1, 4, 0xffff, 0),
            idle,
            4,
            (0, 0, 0),
            0,
            (0x5555, 0x5555, 0x17, 0xa5),
        ),
        // The low lane only, from port 1, with port 0 writing another word.
        c(
            (1, 3, 0xeeee, 3),
            (1, 4, 0x00cd, 1),
            4,
            (0, 0, 0),
            0,
            (0x5555, 0x55cd, 0x17, 0xa5),
        ),
        c(idle, idle, 3, (0, 0, 0), 0, (0xeeee, 0xeeee, 0x17, 0xa5)),
        c(idle, idle, 3, (0, 0, 0), 0, (0xeeee, 0xeeee, 0x17, 0xa5)),
    ];
    let value = |name: &str, cy: &Cycle| -> u64 {
        match name {
            "we0_i" => cy.w0.0,
            "wa0_i" => cy.w0.1,
            "wd0_i" => cy.w0.2,
            "wm0_i" => cy.w0.3,
            "we1_i" => cy.w1.0,
            "wa1_i" => cy.w1.1,
            "wd1_i" => cy.w1.2,
            "wm1_i" => cy.w1.3,
            "ra_i" => cy.ra,
            "one_we_i" => cy.one.0,
            "one_a_i" => cy.one.1,
            "one_wd_i" => cy.one.2,
            "rom_a_i" => cy.rom_a,
            other => panic!("unexpected input {other}"),
        }
    };
    let mut stim: Vec<Vec<BigUint>> = cycles
        .iter()
        .map(|cy| {
            ports
                .inputs
                .iter()
                .map(|(n, _)| BigUint::from(value(n, cy)))
                .collect()
        })
        .collect();
    stim.push(stim[stim.len() - 1].clone());
    let outputs = three_way(&files, &top, &stim, 1, "hw_memory_directed");
    for (k, cy) in cycles.iter().enumerate() {
        let got = &outputs[k + 1];
        let want = [cy.then.0, cy.then.1, cy.then.2, cy.then.3];
        for ((name, _), (g, w)) in ports.outputs.iter().zip(got.iter().zip(want)) {
            assert_eq!(
                *g,
                BigUint::from(w),
                "{name} after cycle {k}: got {g:x}, want {w:x}"
            );
        }
    }
    // Power-of-two memories carry no guard; this one guards with the depth.
    let text = &files[0].text;
    assert!(text.contains("(wa0_i < 3'b101)"), "{text}");
    assert!(
        text.contains("((ra_i < 3'b101) ? five[ra_i] : 16'h0)"),
        "{text}"
    );
    assert!(text.contains("five[wa1_i][15:8] <= wd1_i[15:8];"), "{text}");
    assert!(text.contains("lut[2] = 8'hff;"), "{text}");
}

#[test]
fn masked_memory_and_rom_synthesize_without_latches() {
    let mut d = Design::new();
    let top = d.define("mem_bytes_rom", &[], |_, m| {
        // A 100-word, 32-bit memory with byte enables and a 256-word ROM.
        let mem = m.memory_depth("bytes", Ty::u(32), 100);
        let we = m.input("we_i", Ty::BOOL);
        let wa = m.input("wa_i", Ty::u(7));
        let wd = m.input("wd_i", Ty::u(32));
        let wm = m.input("wm_i", Ty::u(4));
        m.mem_write_masked(mem, we, wa, wd, wm);
        let ra = m.input("ra_i", Ty::u(7));
        let q = m.mem_read(mem, None, ra);
        m.output("q_o", q);
        let rom = m.rom(
            "sine",
            Ty::s(8),
            (0..256).map(|i: i32| ((i * 37) % 251) as i8),
        );
        let rom_a = m.input("rom_a_i", Ty::u(8));
        let rq = m.mem_read(rom, None, rom_a);
        m.output("rom_o", rq);
    });
    let files = emit_design(&d, &top, &Header::default());
    tools::verilator_lint(&files, &top.name).unwrap_or_else(|e| panic!("{e}"));
    tools::iverilog_compile(&files, &top.name).unwrap_or_else(|e| panic!("{e}"));
    let synth = tools::yosys_synth(&files, &top.name).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(synth.latches, 0, "{}", synth.log);
    assert_eq!(synth.memories, 2, "both stay memories\n{}", synth.log);
    // The four lane statements become one write port with byte enables, and
    // the out-of-range guard of the read joins the read port (as its
    // synchronous reset), so a block RAM takes the whole memory.
    let commands = format!(
        "synth -top {} -run :fine; \
         select -assert-count 1 t:$mem_v2 r:WR_PORTS=1 %i r:RD_PORTS=1 %i",
        top.name
    );
    if let Err(e) = tools::yosys_commands(&files, &commands) {
        panic!("the byte-enable memory is not one write port and one read port:\n{e}");
    }
}

#[test]
fn memory_misuse_is_an_elaboration_error() {
    hw::quiet_elab_errors();
    let refused = |what: &str, build: fn(&mut hw::ModuleBuilder)| {
        let err = hw::catch_elab(|| {
            let mut m = hw::ModuleBuilder::new("misuse");
            build(&mut m);
        })
        .expect_err(what);
        err.message
    };
    let e = refused("depth 0", |m| {
        m.memory_depth("z", Ty::u(8), 0);
    });
    assert!(e.contains("depth must be 1..="), "{e}");
    let e = refused("a mask width not dividing the word", |m| {
        let mem = m.memory_depth("w", Ty::u(12), 3);
        let (en, a, d) = (
            m.input("e_i", Ty::BOOL),
            m.input("a_i", Ty::u(2)),
            m.input("d_i", Ty::u(12)),
        );
        let k = m.input("k_i", Ty::u(5));
        m.mem_write_masked(mem, en, a, d, k);
    });
    assert!(e.contains("dividing the element width 12"), "{e}");
    let e = refused("a write port after a write-first read port", |m| {
        let mem = m.memory_depth("w", Ty::u(8), 3);
        let (en, a, d) = (
            m.input("e_i", Ty::BOOL),
            m.input("a_i", Ty::u(2)),
            m.input("d_i", Ty::u(8)),
        );
        m.mem_write(mem, en, a, d);
        m.mem_read_write_first(mem, None, a);
        m.mem_write(mem, en, a, d);
    });
    assert!(e.contains("already has a write-first read port"), "{e}");
    let e = refused("more initial words than the depth", |m| {
        let mem = m.memory_depth("w", Ty::u(8), 2);
        m.mem_init(mem, [1, 2, 3]);
    });
    assert!(e.contains("has 2 words, given 3"), "{e}");
    let e = refused("an initial word that does not fit", |m| {
        m.rom("w", Ty::s(4), [8]);
    });
    assert!(e.contains("does not fit"), "{e}");
    let e = refused("a wrong address width", |m| {
        let mem = m.memory_depth("w", Ty::u(8), 5);
        let a = m.input("a_i", Ty::u(2));
        m.mem_read(mem, None, a);
    });
    assert!(e.contains("takes a u3 address"), "{e}");
}

//! The block library (`hw::blocks`) against behavioural models written from
//! each block's documented interface, and the emitter against the evaluator
//! on the same stimulus under Icarus and Verilator.
//!
//! Each test puts several parameterizations of one block side by side in a
//! wrapper module (instance k's ports appear as `u<k>_<port>`), so one
//! Verilator model serves them all. Every cycle a model per instance chooses
//! that instance's inputs (random valid/ready patterns, requests, returns,
//! data) and states what each output must be, or that the interface leaves
//! it unspecified (data registers before they are written, data while not
//! valid). The evaluator must equal the model wherever the model specifies an
//! output, and Icarus and Verilator must equal the evaluator there. Reset is
//! high in cycle 0 (compared from cycle 1 on) and now and then later.
//!
//! The emitted Verilog of every wrapper also passes Verilator's lint with all
//! warnings, `iverilog -g2005`, and a Yosys synthesis without latches.

use hw::blocks::{self, CrcSpec, FifoMode, Prbs};
use hw::{emit_design, Design, EmittedFile, Header, ModuleDef, Ty};
use num_bigint::BigUint;
use num_traits::{One, ToPrimitive, Zero};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;
use tb::fuzz::{dump_files, random_bits, run_evaluator, run_verilator};
use tb::icarus::{self, TestPorts};
use tb::seed::rng_for;
use tb::tools;

/// Cycles per test.
const CYCLES: usize = 600;

/// One instance's inputs for a cycle, by port name (`in_valid_i`, ...).
type Inputs = BTreeMap<&'static str, BigUint>;
/// One instance's expected outputs for a cycle; `None`: unspecified.
type Expected = BTreeMap<&'static str, Option<BigUint>>;

/// A behavioural model of one block instance.
trait Model {
    /// Chooses this cycle's inputs, states the outputs the block must show
    /// with them, and takes the clock edge (`reset` is `rst_i` this cycle).
    fn cycle(&mut self, rng: &mut ChaCha8Rng, reset: bool) -> (Inputs, Expected);
}

fn b(v: impl Into<BigUint>) -> BigUint {
    v.into()
}

fn bit(v: bool) -> BigUint {
    BigUint::from(v as u8)
}

/// A wrapper module instantiating `blocks`, each input and output of
/// instance k brought out as `u<k>_<port>`.
fn wrapper(design: &mut Design, name: &str, blocks: &[Rc<ModuleDef>]) -> Rc<ModuleDef> {
    design.define(name, &[], |_, m| {
        for (k, def) in blocks.iter().enumerate() {
            // (The instance's outputs are wires `block<k>_<port>`.)
            let u = m.instance(&format!("block{k}"), def);
            m.expose_ports(u, def, |port| format!("u{k}_{port}"));
        }
    })
}

/// Runs `models` (one per instance of `top`) for [`CYCLES`] cycles: the
/// evaluator against the models, then Icarus and Verilator against the
/// evaluator where the models specify the outputs; then lint, Icarus and
/// Yosys on the Verilog. Returns the evaluator's outputs by top port name.
fn check(
    label: &str,
    design: &Design,
    top: &Rc<ModuleDef>,
    models: &mut [Box<dyn Model>],
    rng: &mut ChaCha8Rng,
) -> Vec<BTreeMap<String, BigUint>> {
    let header = Header {
        generator: "hw blocks test".into(),
        params: Vec::new(),
    };
    let files = emit_design(design, top, &header);
    let ports = TestPorts::of(top);
    let mut stim = Vec::new();
    let mut expected: Vec<BTreeMap<String, Option<BigUint>>> = Vec::new();
    for cycle in 0..CYCLES {
        let reset = cycle == 0 || rng.gen_bool(0.005);
        let mut ins: BTreeMap<String, BigUint> = BTreeMap::new();
        let mut exp = BTreeMap::new();
        ins.insert("rst_i".into(), bit(reset));
        for (k, model) in models.iter_mut().enumerate() {
            let (i, e) = model.cycle(rng, reset);
            ins.extend(i.into_iter().map(|(p, v)| (format!("u{k}_{p}"), v)));
            exp.extend(e.into_iter().map(|(p, v)| (format!("u{k}_{p}"), v)));
        }
        let row = ports
            .inputs
            .iter()
            .map(|(n, _)| {
                ins.remove(n)
                    .unwrap_or_else(|| panic!("{label}: no model drives {n}"))
            })
            .collect();
        assert!(
            ins.is_empty(),
            "{label}: models drive unknown ports {ins:?}"
        );
        stim.push(row);
        expected.push(exp);
    }
    let fail = |e: String| -> ! {
        panic!(
            "{label}: {e}; design written to {}",
            dump_files(&files, label)
        )
    };
    let by_eval = run_evaluator(top, &ports, &stim);
    let name_of = |o: usize| ports.outputs[o].0.clone();
    for (cycle, (got, want)) in by_eval.iter().zip(&expected).enumerate().skip(1) {
        for (o, value) in got.iter().enumerate() {
            let name = name_of(o);
            let Some(spec) = want.get(&name) else {
                fail(format!("the model states nothing about {name}"))
            };
            if let Some(w) = spec {
                if w != value {
                    fail(format!(
                        "cycle {cycle}: {name} is {value:#x} in the evaluator, the model says {w:#x}"
                    ));
                }
            }
        }
    }
    let compare = |what: &str, actual: &[Vec<Option<BigUint>>]| {
        for cycle in 1..CYCLES {
            for (o, value) in by_eval[cycle].iter().enumerate() {
                let name = name_of(o);
                if expected[cycle][&name].is_some() && actual[cycle][o].as_ref() != Some(value) {
                    fail(format!(
                        "cycle {cycle}: {name} is {:?} in {what}, {value:#x} in the evaluator",
                        actual[cycle][o]
                    ));
                }
            }
        }
    };
    let by_icarus = icarus::run(&files, top, &stim).unwrap_or_else(|e| fail(e));
    compare("Icarus", &by_icarus);
    let by_verilator =
        run_verilator(&files, top, &ports, &stim, label, &[]).unwrap_or_else(|e| fail(e));
    compare("Verilator", &by_verilator);
    tool_checks(label, &files, &top.name);
    by_eval
        .into_iter()
        .map(|row| (0..row.len()).map(name_of).zip(row).collect())
        .collect()
}

/// Lint with all warnings, Icarus in Verilog-2005 mode, Yosys without latches.
fn tool_checks(label: &str, files: &[EmittedFile], top: &str) {
    tools::verilator_lint(files, top).unwrap_or_else(|e| panic!("{label}: {e}"));
    tools::iverilog_compile(files, top).unwrap_or_else(|e| panic!("{label}: {e}"));
    let synth = tools::yosys_synth(files, top).unwrap_or_else(|e| panic!("{label}: {e}"));
    assert_eq!(synth.latches, 0, "{label}: latches\n{}", synth.log);
}

/// A random valid or ready pattern: runs of highs and lows, with a bias the
/// instance draws once (so some instances mostly stall, some mostly flow).
struct Pattern {
    bias: f64,
    last: bool,
}

impl Pattern {
    fn new(rng: &mut ChaCha8Rng) -> Pattern {
        let bias = [0.1, 0.5, 0.9, 1.0][rng.gen_range(0..4)];
        Pattern { bias, last: false }
    }

    fn next(&mut self, rng: &mut ChaCha8Rng) -> bool {
        // Keep the last value half the time: bursts and stalls of some length.
        if rng.gen_bool(0.5) {
            self.last = rng.gen_bool(self.bias);
        }
        self.last
    }
}

// ---------------------------------------------------------------------------
// FIFO.

/// The FIFO as its docs state it: a queue of at most `depth` words.
/// Standard: valid when not empty, ready when not full or popping, the popped
/// word on `out_data_o` from the next cycle. FWFT: a queue behind an output
/// register, which is refilled from the queue when empty or popped; ready
/// when fewer than `depth` words are held.
struct FifoModel {
    elem: Ty,
    depth: usize,
    mode: FifoMode,
    /// Standard: every word. FWFT: the words behind the head.
    queue: VecDeque<BigUint>,
    head: Option<BigUint>,
    /// Standard: the last popped word (on `out_data_o`).
    shown: Option<BigUint>,
    valid: Pattern,
    ready: Pattern,
    pushes: u64,
    pops: u64,
}

impl FifoModel {
    fn new(rng: &mut ChaCha8Rng, elem: Ty, depth: u32, mode: FifoMode) -> FifoModel {
        FifoModel {
            elem,
            depth: depth as usize,
            mode,
            queue: VecDeque::new(),
            head: None,
            shown: None,
            valid: Pattern::new(rng),
            ready: Pattern::new(rng),
            pushes: 0,
            pops: 0,
        }
    }
}

impl Model for FifoModel {
    fn cycle(&mut self, rng: &mut ChaCha8Rng, reset: bool) -> (Inputs, Expected) {
        let (in_valid, out_ready) = (self.valid.next(rng), self.ready.next(rng));
        let data = random_bits(rng, self.elem.width);
        let held = self.queue.len() + self.head.is_some() as usize;
        let (out_valid, out_data, in_ready) = match self.mode {
            FifoMode::Standard => (
                !self.queue.is_empty(),
                self.shown.clone(),
                held < self.depth || out_ready,
            ),
            FifoMode::Fwft => (self.head.is_some(), self.head.clone(), held < self.depth),
        };
        let ins = Inputs::from([
            ("in_valid_i", bit(in_valid)),
            ("in_data_i", data.clone()),
            ("out_ready_i", bit(out_ready)),
        ]);
        let exp = Expected::from([
            ("in_ready_o", Some(bit(in_ready))),
            ("out_valid_o", Some(bit(out_valid))),
            ("out_data_o", out_data),
            ("count_o", Some(b(held as u64))),
        ]);
        let pop = out_valid && out_ready;
        let push = in_valid && in_ready;
        match self.mode {
            FifoMode::Standard => {
                if pop {
                    self.shown = self.queue.pop_front();
                }
            }
            FifoMode::Fwft => {
                // The head is refilled before the push joins the queue.
                if self.head.is_none() || pop {
                    self.head = self.queue.pop_front();
                }
            }
        }
        if push {
            self.queue.push_back(data);
        }
        self.pushes += push as u64;
        self.pops += pop as u64;
        if reset {
            self.queue.clear();
            self.head = None;
            // The data register keeps whatever it held: unspecified.
            self.shown = None;
        }
        (ins, exp)
    }
}

#[test]
fn fifo_matches_its_model_in_all_simulators() {
    let mut rng = rng_for("fifo_matches_its_model_in_all_simulators");
    let mut design = Design::new();
    let params: &[(Ty, u32, FifoMode)] = &[
        (Ty::u(8), 1, FifoMode::Standard),
        (Ty::s(13), 3, FifoMode::Standard),
        (Ty::u(70), 5, FifoMode::Standard),
        (Ty::u(1), 16, FifoMode::Standard),
        (Ty::u(8), 1, FifoMode::Fwft),
        (Ty::u(9), 2, FifoMode::Fwft),
        (Ty::s(33), 3, FifoMode::Fwft),
        (Ty::u(16), 17, FifoMode::Fwft),
        (Ty::u(5), 100, FifoMode::Fwft),
    ];
    let defs: Vec<_> = params
        .iter()
        .map(|&(ty, d, mode)| blocks::fifo(&mut design, ty, d, mode))
        .collect();
    assert_eq!(defs[7].name, "fifo_fwft_u16_d17");
    let top = wrapper(&mut design, "fifo_bench", &defs);
    let mut models: Vec<Box<dyn Model>> = params
        .iter()
        .map(|&(ty, d, mode)| Box::new(FifoModel::new(&mut rng, ty, d, mode)) as Box<dyn Model>)
        .collect();
    check("hw_blocks_fifo", &design, &top, &mut models, &mut rng);
}

/// Sustained rates with both sides always willing, after the pipeline fills:
/// the throughput the FIFO docs promise per mode and depth.
#[test]
fn fifo_throughput_is_as_documented() {
    for (depth, mode, pushes_per_12) in [
        (1, FifoMode::Standard, 12),
        (2, FifoMode::Standard, 12),
        (1, FifoMode::Fwft, 4),
        (2, FifoMode::Fwft, 8),
        (3, FifoMode::Fwft, 12),
        (8, FifoMode::Fwft, 12),
    ] {
        let mut design = Design::new();
        let def = blocks::fifo(&mut design, Ty::u(8), depth, mode);
        let mut e = hw::Evaluator::new(&def).unwrap();
        e.set_int("rst_i", 1);
        e.step();
        e.set_int("rst_i", 0);
        e.set_int("in_valid_i", 1);
        e.set_int("out_ready_i", 1);
        let mut pushes = 0;
        let mut pops = 0;
        for cycle in 0..36 {
            e.eval();
            if cycle >= 24 {
                pushes += e.get_int("in_ready_o").to_u32().unwrap();
                pops += e.get_int("out_valid_o").to_u32().unwrap();
            }
            e.step();
        }
        assert_eq!(
            (pushes, pops),
            (pushes_per_12, pushes_per_12),
            "depth {depth} {mode:?}: pushes and pops in 12 cycles"
        );
    }
}

/// Latency from a push into an empty FIFO to `out_valid_o`: 1 cycle in
/// standard mode, 2 with first-word fall-through.
#[test]
fn fifo_latency_is_as_documented() {
    for (mode, latency) in [(FifoMode::Standard, 1), (FifoMode::Fwft, 2)] {
        let mut design = Design::new();
        let def = blocks::fifo(&mut design, Ty::u(8), 4, mode);
        let mut e = hw::Evaluator::new(&def).unwrap();
        e.set_int("rst_i", 1);
        e.step();
        e.set_int("rst_i", 0);
        e.set_int("in_valid_i", 1);
        e.set_int("in_data_i", 0x5a);
        e.step();
        e.set_int("in_valid_i", 0);
        let mut waited = 1;
        e.eval();
        while e.get_int("out_valid_o").is_zero() {
            e.step();
            waited += 1;
        }
        assert_eq!(waited, latency, "{mode:?}");
    }
}

// ---------------------------------------------------------------------------
// Skid buffer.

/// A two-entry queue: ready while it holds fewer than two words, valid while
/// it holds any, the front on `out_data_o`.
struct SkidModel {
    elem: Ty,
    queue: VecDeque<BigUint>,
    valid: Pattern,
    ready: Pattern,
}

impl Model for SkidModel {
    fn cycle(&mut self, rng: &mut ChaCha8Rng, reset: bool) -> (Inputs, Expected) {
        let (in_valid, out_ready) = (self.valid.next(rng), self.ready.next(rng));
        let data = random_bits(rng, self.elem.width);
        let in_ready = self.queue.len() < 2;
        let out_valid = !self.queue.is_empty();
        let ins = Inputs::from([
            ("in_valid_i", bit(in_valid)),
            ("in_data_i", data.clone()),
            ("out_ready_i", bit(out_ready)),
        ]);
        let exp = Expected::from([
            ("in_ready_o", Some(bit(in_ready))),
            ("out_valid_o", Some(bit(out_valid))),
            ("out_data_o", self.queue.front().cloned()),
        ]);
        if out_valid && out_ready {
            self.queue.pop_front();
        }
        if in_valid && in_ready {
            self.queue.push_back(data);
        }
        if reset {
            self.queue.clear();
        }
        (ins, exp)
    }
}

#[test]
fn skid_buffer_matches_its_model_in_all_simulators() {
    let mut rng = rng_for("skid_buffer_matches_its_model_in_all_simulators");
    let mut design = Design::new();
    let types = [Ty::u(1), Ty::u(8), Ty::s(32), Ty::u(70)];
    let defs: Vec<_> = types
        .iter()
        .map(|&t| blocks::skid_buffer(&mut design, t))
        .collect();
    let top = wrapper(&mut design, "skid_bench", &defs);
    let mut models: Vec<Box<dyn Model>> = types
        .iter()
        .map(|&elem| {
            Box::new(SkidModel {
                elem,
                queue: VecDeque::new(),
                valid: Pattern::new(&mut rng),
                ready: Pattern::new(&mut rng),
            }) as Box<dyn Model>
        })
        .collect();
    check("hw_blocks_skid", &design, &top, &mut models, &mut rng);
}

// ---------------------------------------------------------------------------
// Credit counter.

/// Credits as the docs define them: spent per send with a credit, returned
/// several at a time, capped at N with a sticky error on an over-return or a
/// send without credit.
struct CreditModel {
    n: u64,
    max_return: u64,
    credits: u64,
    error: bool,
    /// Credits in flight at the receiver, returned later.
    owed: u64,
    cycle: u64,
}

impl Model for CreditModel {
    fn cycle(&mut self, rng: &mut ChaCha8Rng, reset: bool) -> (Inputs, Expected) {
        // A well-behaved sender and receiver most of the time, with the
        // occasional send without credit and over-return.
        let send = if self.credits > 0 {
            rng.gen_bool(0.6)
        } else {
            rng.gen_bool(0.03)
        };
        // The receiver alternates between returning nothing for 100 cycles
        // (the sender runs dry) and returning promptly.
        self.cycle += 1;
        let returning = self.cycle / 100 % 2 == 1;
        let ret = if rng.gen_bool(0.02) {
            rng.gen_range(0..=self.max_return)
        } else if returning && self.owed > 0 && rng.gen_bool(0.7) {
            rng.gen_range(1..=self.owed.min(self.max_return))
        } else {
            0
        };
        let ret_width = 64 - self.max_return.leading_zeros();
        let ins = Inputs::from([("send_i", bit(send)), ("return_i", b(ret))]);
        let exp = Expected::from([
            ("credits_o", Some(b(self.credits))),
            ("can_send_o", Some(bit(self.credits > 0))),
            ("error_o", Some(bit(self.error))),
        ]);
        assert!(ret < 1 << ret_width);
        let spend = send && self.credits > 0;
        self.owed = (self.owed + spend as u64).saturating_sub(ret);
        let sum = self.credits + ret - spend as u64;
        self.error |= sum > self.n || (send && self.credits == 0);
        self.credits = sum.min(self.n);
        if reset {
            self.credits = self.n;
            self.error = false;
            self.owed = 0;
        }
        (ins, exp)
    }
}

#[test]
fn credit_counter_matches_its_model_in_all_simulators() {
    let mut rng = rng_for("credit_counter_matches_its_model_in_all_simulators");
    let mut design = Design::new();
    let params: &[(u32, u32)] = &[(1, 1), (4, 2), (5, 5), (16, 3), (40, 8)];
    let defs: Vec<_> = params
        .iter()
        .map(|&(n, r)| blocks::credit_counter(&mut design, n, r))
        .collect();
    let top = wrapper(&mut design, "credit_bench", &defs);
    let mut models: Vec<Box<dyn Model>> = params
        .iter()
        .map(|&(n, r)| {
            Box::new(CreditModel {
                n: n as u64,
                max_return: r as u64,
                credits: n as u64,
                error: false,
                owed: 0,
                cycle: 0,
            }) as Box<dyn Model>
        })
        .collect();
    let out = check("hw_blocks_credit", &design, &top, &mut models, &mut rng);
    // Both the error and the count reaching its cap and zero happened.
    for k in 0..params.len() {
        let seen = |port: &str, v: u64| out.iter().any(|row| row[&format!("u{k}_{port}")] == b(v));
        assert!(seen("error_o", 1), "instance {k} never flagged an error");
        assert!(seen("credits_o", 0), "instance {k} never ran out of credit");
    }
}

// ---------------------------------------------------------------------------
// Round-robin arbiter.

/// The docs' rule: the grant goes to the first requester at or after the
/// highest-priority one; the one after the granted requester has the highest
/// priority next cycle.
struct ArbiterModel {
    n: u32,
    first: u32,
    /// Per requester: requests often, rarely, or in bursts.
    rates: Vec<f64>,
}

impl Model for ArbiterModel {
    fn cycle(&mut self, rng: &mut ChaCha8Rng, reset: bool) -> (Inputs, Expected) {
        let req: Vec<bool> = self.rates.iter().map(|&p| rng.gen_bool(p)).collect();
        let granted = (0..self.n)
            .map(|i| (self.first + i) % self.n)
            .find(|&k| req[k as usize]);
        let mut grant = BigUint::zero();
        let mut req_bits = BigUint::zero();
        for (k, &r) in req.iter().enumerate() {
            if r {
                req_bits.set_bit(k as u64, true);
            }
        }
        if let Some(g) = granted {
            grant.set_bit(g as u64, true);
            self.first = (g + 1) % self.n;
        }
        if reset {
            self.first = 0;
        }
        (
            Inputs::from([("req_i", req_bits)]),
            Expected::from([("grant_o", Some(grant))]),
        )
    }
}

#[test]
fn round_robin_arbiter_matches_its_model_in_all_simulators() {
    let mut rng = rng_for("round_robin_arbiter_matches_its_model_in_all_simulators");
    let mut design = Design::new();
    let sizes = [1u32, 2, 3, 5, 8, 13];
    let defs: Vec<_> = sizes
        .iter()
        .map(|&n| blocks::round_robin_arbiter(&mut design, n))
        .collect();
    let top = wrapper(&mut design, "arbiter_bench", &defs);
    let mut models: Vec<Box<dyn Model>> = sizes
        .iter()
        .map(|&n| {
            let rates = (0..n)
                .map(|_| [0.05, 0.5, 0.95][rng.gen_range(0..3)])
                .collect();
            Box::new(ArbiterModel { n, first: 0, rates }) as Box<dyn Model>
        })
        .collect();
    check("hw_blocks_arbiter", &design, &top, &mut models, &mut rng);
}

/// All requesters requesting all the time are granted in turn.
#[test]
fn round_robin_arbiter_is_fair_under_full_load() {
    let mut design = Design::new();
    let def = blocks::round_robin_arbiter(&mut design, 5);
    let mut e = hw::Evaluator::new(&def).unwrap();
    e.set_int("rst_i", 1);
    e.step();
    e.set_int("rst_i", 0);
    e.set_int("req_i", 0b11111);
    let mut order = Vec::new();
    for _ in 0..10 {
        e.eval();
        order.push(e.get("grant_o").trailing_zeros().unwrap());
        e.step();
    }
    assert_eq!(order, [0, 1, 2, 3, 4, 0, 1, 2, 3, 4]);
}

// ---------------------------------------------------------------------------
// LFSR.

/// The recurrence b(k) = XOR of b(k - t) over the taps, from the seed (seed
/// bit j - 1 is b(-j)); `out_o` bit i is b(k + i).
struct LfsrModel {
    taps: Vec<u32>,
    n: u32,
    seed: BigUint,
    /// The last W bits, newest first: history[j - 1] = b(k - j).
    history: VecDeque<bool>,
    enable: Pattern,
}

impl LfsrModel {
    fn new(rng: &mut ChaCha8Rng, taps: &[u32], n: u32, seed: BigUint) -> LfsrModel {
        let mut m = LfsrModel {
            taps: taps.to_vec(),
            n,
            seed,
            history: VecDeque::new(),
            enable: Pattern::new(rng),
        };
        m.reseed();
        m
    }

    fn reseed(&mut self) {
        let w = *self.taps.iter().max().unwrap() as u64;
        self.history = (0..w).map(|j| self.seed.bit(j)).collect();
    }

    /// The next `n` bits, advancing `history`.
    fn advance(history: &mut VecDeque<bool>, taps: &[u32], n: u32) -> BigUint {
        let mut out = BigUint::zero();
        for i in 0..n {
            let bit = taps
                .iter()
                .fold(false, |acc, &t| acc ^ history[t as usize - 1]);
            out.set_bit(i as u64, bit);
            history.push_front(bit);
            history.pop_back();
        }
        out
    }
}

impl Model for LfsrModel {
    fn cycle(&mut self, rng: &mut ChaCha8Rng, reset: bool) -> (Inputs, Expected) {
        let en = self.enable.next(rng);
        let mut next = self.history.clone();
        let out = Self::advance(&mut next, &self.taps, self.n);
        if en {
            self.history = next;
        }
        if reset {
            self.reseed();
        }
        (
            Inputs::from([("en_i", bit(en))]),
            Expected::from([("out_o", Some(out))]),
        )
    }
}

#[test]
fn lfsr_matches_its_model_in_all_simulators() {
    let mut rng = rng_for("lfsr_matches_its_model_in_all_simulators");
    let mut design = Design::new();
    let mut defs = Vec::new();
    let mut models: Vec<Box<dyn Model>> = Vec::new();
    let all_ones = |w: u32| (BigUint::one() << w as usize) - 1u32;
    for (which, n) in [
        (Prbs::Prbs7, 1),
        (Prbs::Prbs7, 8),
        (Prbs::Prbs15, 16),
        (Prbs::Prbs23, 5),
        (Prbs::Prbs31, 64),
    ] {
        defs.push(blocks::prbs(&mut design, which, n));
        let w = which.taps()[0];
        models.push(Box::new(LfsrModel::new(
            &mut rng,
            which.taps(),
            n,
            all_ones(w),
        )));
    }
    // Other polynomials (x^4 + x^3 + 1, and a non-maximal x^6 + x^2 + 1), a
    // random seed, more bits per cycle than the width.
    for (taps, n) in [(&[4u32, 3][..], 9), (&[6, 2][..], 3), (&[65, 47][..], 130)] {
        let w = taps[0];
        let seed = loop {
            let s = random_bits(&mut rng, w);
            if !s.is_zero() {
                break s;
            }
        };
        defs.push(blocks::lfsr(&mut design, taps, n, seed.clone()));
        models.push(Box::new(LfsrModel::new(&mut rng, taps, n, seed)));
    }
    assert_eq!(defs[1].name, "lfsr_pc1_n8_s7f");
    let top = wrapper(&mut design, "lfsr_bench", &defs);
    check("hw_blocks_lfsr", &design, &top, &mut models, &mut rng);
}

/// PRBS7 and PRBS15 have period 2^W - 1 (maximal length), as O.150's
/// polynomials must; a non-primitive polynomial does not.
#[test]
fn prbs_periods_are_maximal() {
    let period = |def: &ModuleDef, n: u32, bits: usize| {
        let mut e = hw::Evaluator::new(def).unwrap();
        e.set_int("rst_i", 1);
        e.step();
        e.set_int("rst_i", 0);
        e.set_int("en_i", 1);
        let mut seq = Vec::new();
        while seq.len() < 2 * bits + n as usize {
            e.eval();
            let v = e.get("out_o");
            seq.extend((0..n).map(|i| v.bit(i as u64)));
            e.step();
        }
        (1..=bits)
            .find(|&p| (0..bits).all(|i| seq[i] == seq[i + p]))
            .expect("periodic")
    };
    let mut design = Design::new();
    let p7 = blocks::prbs(&mut design, Prbs::Prbs7, 1);
    assert_eq!(period(&p7, 1, 127), 127);
    let p15 = blocks::prbs(&mut design, Prbs::Prbs15, 64);
    assert_eq!(period(&p15, 64, 32767), 32767);
    // x^6 + x^2 + 1 = (x^3 + x + 1)^2 is not primitive: a shorter period.
    let short = blocks::lfsr(&mut design, &[6, 2], 1, 1u32);
    assert!(period(&short, 1, 63) < 63);
}

#[test]
fn lfsr_recovers_from_an_all_zero_register() {
    // Reset loads the seed, so zero needs a design started without reset:
    // the evaluator starts registers at 0, the state an FPGA without reset
    // could hold.
    let mut design = Design::new();
    let def = blocks::prbs(&mut design, Prbs::Prbs7, 7);
    let mut e = hw::Evaluator::new(&def).unwrap();
    e.set_int("rst_i", 0);
    e.set_int("en_i", 1);
    e.eval();
    assert_eq!(e.get("out_o"), BigUint::zero(), "register starts at zero");
    e.step();
    // The seed (all ones) is back: the next 7 bits are those after it.
    let mut rng = <ChaCha8Rng as rand::SeedableRng>::seed_from_u64(0);
    let mut model = LfsrModel::new(&mut rng, Prbs::Prbs7.taps(), 7, b(0x7fu32));
    let mut history = model.history.clone();
    let want = LfsrModel::advance(&mut history, &model.taps, 7);
    model.history = history;
    assert_eq!(e.get("out_o"), want);
}

// ---------------------------------------------------------------------------
// CRC.

/// A CRC spec from the `crc` crate's catalog entry.
fn spec_of<W: crc::Width + Into<u64> + Copy>(a: &crc::Algorithm<W>) -> CrcSpec {
    CrcSpec {
        width: a.width as u32,
        poly: a.poly.into(),
        init: a.init.into(),
        refin: a.refin,
        refout: a.refout,
        xorout: a.xorout.into(),
    }
}

/// The `crc` crate's checksum of `bytes` for the algorithm `spec` came from.
type SoftCrc = Box<dyn Fn(&[u8]) -> u64>;

fn soft_crc(name: &str) -> (CrcSpec, SoftCrc) {
    match name {
        "CRC_32_ISO_HDLC" => (
            spec_of(&crc::CRC_32_ISO_HDLC),
            Box::new(|b: &[u8]| crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC).checksum(b) as u64),
        ),
        "CRC_32_ISCSI" => (
            spec_of(&crc::CRC_32_ISCSI),
            Box::new(|b: &[u8]| crc::Crc::<u32>::new(&crc::CRC_32_ISCSI).checksum(b) as u64),
        ),
        "CRC_16_IBM_3740" => (
            spec_of(&crc::CRC_16_IBM_3740),
            Box::new(|b: &[u8]| crc::Crc::<u16>::new(&crc::CRC_16_IBM_3740).checksum(b) as u64),
        ),
        "CRC_16_ARC" => (
            spec_of(&crc::CRC_16_ARC),
            Box::new(|b: &[u8]| crc::Crc::<u16>::new(&crc::CRC_16_ARC).checksum(b) as u64),
        ),
        "CRC_8_SMBUS" => (
            spec_of(&crc::CRC_8_SMBUS),
            Box::new(|b: &[u8]| crc::Crc::<u8>::new(&crc::CRC_8_SMBUS).checksum(b) as u64),
        ),
        "CRC_5_USB" => (
            spec_of(&crc::CRC_5_USB),
            Box::new(|b: &[u8]| crc::Crc::<u8>::new(&crc::CRC_5_USB).checksum(b) as u64),
        ),
        "CRC_64_XZ" => (
            spec_of(&crc::CRC_64_XZ),
            Box::new(|b: &[u8]| crc::Crc::<u64>::new(&crc::CRC_64_XZ).checksum(b)),
        ),
        other => panic!("no catalog entry {other}"),
    }
}

/// The CRC block's output every cycle is the `crc` crate's checksum of the
/// bytes consumed since the last first word. Messages are random bytes,
/// packed into words in the block's transmission order, with random gaps.
struct CrcModel {
    spec: CrcSpec,
    data_width: u32,
    soft: SoftCrc,
    message: Vec<u8>,
    /// Words left in the current message (0: the next word starts one).
    left: u32,
}

impl Model for CrcModel {
    fn cycle(&mut self, rng: &mut ChaCha8Rng, reset: bool) -> (Inputs, Expected) {
        let expected = (self.soft)(&self.message);
        let en = rng.gen_bool(0.7);
        let first = if en {
            self.left == 0 || rng.gen_bool(0.05)
        } else {
            rng.gen_bool(0.5)
        };
        let word_bytes = (self.data_width / 8) as usize;
        let bytes: Vec<u8> = (0..word_bytes).map(|_| rng.gen()).collect();
        // Transmission order: the first byte lowest with reflect-in, highest
        // without.
        let mut word = BigUint::zero();
        for (i, &byte) in bytes.iter().enumerate() {
            let at = if self.spec.refin {
                i
            } else {
                word_bytes - 1 - i
            };
            word |= BigUint::from(byte) << (8 * at);
        }
        if en {
            if first {
                self.message.clear();
                self.left = rng.gen_range(1..=6);
            }
            self.message.extend(&bytes);
            self.left = self.left.saturating_sub(1);
        }
        if reset {
            self.message.clear();
            self.left = 0;
        }
        (
            Inputs::from([("en_i", bit(en)), ("first_i", bit(first)), ("data_i", word)]),
            Expected::from([("crc_o", Some(b(expected)))]),
        )
    }
}

#[test]
fn crc_matches_the_crc_crate_in_all_simulators() {
    let mut rng = rng_for("crc_matches_the_crc_crate_in_all_simulators");
    let mut design = Design::new();
    let params: &[(&str, u32)] = &[
        ("CRC_32_ISO_HDLC", 8),
        ("CRC_32_ISO_HDLC", 32),
        ("CRC_32_ISO_HDLC", 64),
        ("CRC_32_ISCSI", 32),
        ("CRC_16_IBM_3740", 8),
        ("CRC_16_IBM_3740", 16),
        ("CRC_16_ARC", 8),
        ("CRC_16_ARC", 32),
        ("CRC_8_SMBUS", 8),
        ("CRC_5_USB", 8),
        ("CRC_64_XZ", 64),
    ];
    let mut defs = Vec::new();
    let mut models: Vec<Box<dyn Model>> = Vec::new();
    for &(name, d) in params {
        let (spec, soft) = soft_crc(name);
        defs.push(blocks::crc(&mut design, &spec, d));
        models.push(Box::new(CrcModel {
            spec,
            data_width: d,
            soft,
            message: Vec::new(),
            left: 0,
        }));
    }
    assert_eq!(defs[0].name, "crc32_p4c11db7_iffffffff_rr_xffffffff_d8");
    let top = wrapper(&mut design, "crc_bench", &defs);
    check("hw_blocks_crc", &design, &top, &mut models, &mut rng);
}

/// The presets equal the catalog entries, and each gives the catalog's check
/// value (the CRC of "123456789") byte by byte.
#[test]
fn crc_presets_match_the_catalog_and_its_check_values() {
    for (preset, name) in [
        (CrcSpec::CRC_32_ISO_HDLC, "CRC_32_ISO_HDLC"),
        (CrcSpec::CRC_32_ISCSI, "CRC_32_ISCSI"),
        (CrcSpec::CRC_16_IBM_3740, "CRC_16_IBM_3740"),
        (CrcSpec::CRC_16_ARC, "CRC_16_ARC"),
        (CrcSpec::CRC_8_SMBUS, "CRC_8_SMBUS"),
    ] {
        let (spec, soft) = soft_crc(name);
        assert_eq!(preset, spec, "{name}");
        let mut design = Design::new();
        let def = blocks::crc(&mut design, &spec, 8);
        let mut e = hw::Evaluator::new(&def).unwrap();
        e.set_int("rst_i", 1);
        e.step();
        e.set_int("rst_i", 0);
        e.set_int("en_i", 1);
        for (i, byte) in b"123456789".iter().enumerate() {
            e.set_int("first_i", (i == 0) as i128);
            e.set_int("data_i", *byte as i128);
            e.step();
        }
        assert_eq!(e.get("crc_o"), b(soft(b"123456789")), "{name}");
    }
}

/// The XOR matrix is flat: each register bit is one reduction, so the CRC's
/// Verilog holds one `^(... & mask)` per bit rather than D chained steps.
#[test]
fn crc_logic_is_one_reduction_per_bit() {
    let mut design = Design::new();
    let def = blocks::crc(&mut design, &CrcSpec::CRC_32_ISO_HDLC, 64);
    let text = hw::emit_module(&def, &Header::default());
    let reductions = text.matches("(^(").count();
    assert_eq!(reductions, 32, "{text}");
    let lines = text.lines().count();
    assert!(lines < 120, "{lines} lines:\n{text}");
}

/// The first-word fall-through FIFO of depth N + 1 behaves exactly like the
/// MXU's former hand-written weight FIFO (a memory of N rows with pointers
/// one bit wider, ready while the memory is not full, plus an output register
/// refilled when empty or taken), cycle for cycle under random traffic, for
/// the power-of-two N >= 2 the MXU uses.
#[test]
fn fwft_fifo_matches_the_former_mxu_weight_fifo() {
    let mut rng = rng_for("fwft_fifo_matches_the_former_mxu_weight_fifo");
    for rows in [2u32, 4, 8, 16] {
        let mut design = Design::new();
        let library = blocks::fifo(&mut design, Ty::u(12), rows + 1, FifoMode::Fwft);
        let top = design.define("weight_fifo_pair", &[], |_, m| {
            let valid = m.input("in_valid_i", Ty::BOOL);
            let data = m.input("in_data_i", Ty::u(12));
            let ready_in = m.input("out_ready_i", Ty::BOOL);
            // The former structure, as the MXU built it.
            let aw = rows.trailing_zeros();
            let ptr = Ty::u(aw + 1);
            let mem = m.memory("wfifo", Ty::u(12), aw);
            let wr = m.reg_reset("wfifo_wr", ptr, 0);
            let rd = m.reg_reset("wfifo_rd", ptr, 0);
            let count = m.wire("wfifo_count", wr.q() - rd.q());
            let ready = m.wire("w_ready", count.is_ne(rows));
            let write = m.wire("wfifo_write", valid & ready);
            m.mem_write(mem, write, wr.q().trunc(aw), data);
            m.set_next(wr, wr.q() + write.zext(aw + 1));
            let head_valid = m.reg_reset("head_valid", Ty::BOOL, 0);
            let take = m.wire("take", head_valid.q() & ready_in);
            let fetch = m.wire("fetch", count.is_ne(0) & (!head_valid.q() | take));
            let head = m.mem_read(mem, Some(fetch), rd.q().trunc(aw));
            m.set_next(rd, rd.q() + fetch.zext(aw + 1));
            m.set_next(head_valid, fetch | (head_valid.q() & !take));
            m.output("old_ready_o", ready);
            m.output("old_valid_o", head_valid.q());
            m.output("old_data_o", head);
            let u = m.instance("fifo", &library);
            m.connect(u, "in_valid_i", valid);
            m.connect(u, "in_data_i", data);
            m.connect(u, "out_ready_i", ready_in);
            for port in ["in_ready_o", "out_valid_o", "out_data_o", "count_o"] {
                let v = m.inst_output(u, port);
                m.output(&format!("new_{port}"), v);
            }
        });
        let mut e = hw::Evaluator::new(&top).unwrap();
        let (mut valid, mut ready) = (Pattern::new(&mut rng), Pattern::new(&mut rng));
        e.set_int("rst_i", 1);
        e.step();
        e.set_int("rst_i", 0);
        for cycle in 0..3000 {
            e.set_int("in_valid_i", valid.next(&mut rng) as i128);
            e.set_int("out_ready_i", ready.next(&mut rng) as i128);
            e.set_int("in_data_i", rng.gen_range(0..4096));
            e.eval();
            let at = format!("N = {rows}, cycle {cycle}");
            assert_eq!(e.get("old_ready_o"), e.get("new_in_ready_o"), "{at}");
            assert_eq!(e.get("old_valid_o"), e.get("new_out_valid_o"), "{at}");
            if !e.get("old_valid_o").is_zero() {
                assert_eq!(e.get("old_data_o"), e.get("new_out_data_o"), "{at}");
            }
            if cycle % 500 == 0 {
                // New traffic mixes now and then.
                valid = Pattern::new(&mut rng);
                ready = Pattern::new(&mut rng);
            }
            e.step();
        }
    }
}

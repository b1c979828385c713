//! The Verilator harness against small hand-written designs, checked against values computed
//! in Rust. Random tests print their seed; `SYSTOLE_SEED=<n>` replays one.

use sim::verilator::{BuildOptions, CacheStatus, Model, ModelSpec, PortId, SimError, Trace};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::{Arc, Barrier};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Widths chosen to hit every Verilator storage type: CData (1, 8), SData (16), IData (32),
/// QData (64), VlWide (65, 100, 128), plus the widened sums one bit wider.
const WIDTHS: [u32; 8] = [1, 8, 16, 32, 64, 65, 100, 128];

/// `s<w>_o = a<w>_i + b<w>_i` (wrapping) and `c<w>_o` = the full (w+1)-bit sum.
fn adder_spec() -> ModelSpec {
    let mut ports = Vec::new();
    let mut body = String::new();
    let mut spec = ModelSpec::new("wide_adder");
    for w in WIDTHS {
        let range = |w: u32| {
            if w == 1 {
                String::new()
            } else {
                format!("[{}:0] ", w - 1)
            }
        };
        ports.push(format!("  input  wire {}a{w}_i", range(w)));
        ports.push(format!("  input  wire {}b{w}_i", range(w)));
        ports.push(format!("  output wire {}s{w}_o", range(w)));
        ports.push(format!("  output wire {}c{w}_o", range(w + 1)));
        body.push_str(&format!(
            "  assign s{w}_o = a{w}_i + b{w}_i;\n  assign c{w}_o = {{1'b0, a{w}_i}} + {{1'b0, b{w}_i}};\n"
        ));
        spec = spec
            .input(format!("a{w}_i"), w)
            .input(format!("b{w}_i"), w)
            .output(format!("s{w}_o"), w)
            .output(format!("c{w}_o"), w + 1);
    }
    let verilog = format!(
        "`default_nettype none\nmodule wide_adder (\n{}\n);\n{body}endmodule\n",
        ports.join(",\n")
    );
    spec.source("wide_adder.v", verilog)
}

const COUNTER_V: &str = "`default_nettype none
// A counter with synchronous reset and enable; wrap_o is combinational.
module counter #(
  parameter W = 16
) (
  input  wire         clk_i,
  input  wire         rst_i,
  input  wire         en_i,
  output wire [W-1:0] count_o,
  output wire         wrap_o
);
  reg [W-1:0] count_q;
  always @(posedge clk_i) begin
    if (rst_i) begin
      count_q <= {W{1'b0}};
    end else if (en_i) begin
      count_q <= count_q + {{(W-1){1'b0}}, 1'b1};
    end
  end
  assign count_o = count_q;
  assign wrap_o = en_i & (&count_q);
endmodule
";

/// The counter at W = 8 (set through a Verilator argument).
fn counter_spec() -> ModelSpec {
    ModelSpec::new("counter")
        .source("counter.v", COUNTER_V)
        .clock("clk_i")
        .input("rst_i", 1)
        .input("en_i", 1)
        .output("count_o", 8)
        .output("wrap_o", 1)
        .verilator_arg("-GW=8")
}

fn seed() -> u64 {
    let seed = match std::env::var("SYSTOLE_SEED") {
        Ok(text) => {
            let text = text.trim();
            match text.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => text.parse(),
            }
            .expect("SYSTOLE_SEED must be an integer")
        }
        Err(_) => SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64,
    };
    eprintln!("seed {seed} (replay with SYSTOLE_SEED={seed})");
    seed
}

/// SplitMix64: enough randomness for stimulus, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A `width`-bit value as little-endian words, biased towards edge cases.
    fn value(&mut self, width: u32) -> Vec<u32> {
        let words = width.div_ceil(32) as usize;
        let mut v: Vec<u32> = match self.next() % 8 {
            0 => vec![0; words],
            1 => vec![u32::MAX; words],
            2 => {
                let mut v = vec![0; words];
                v[0] = 1;
                v
            }
            _ => (0..words).map(|_| self.next() as u32).collect(),
        };
        truncate(&mut v, width);
        v
    }
}

fn truncate(words: &mut [u32], width: u32) {
    if !width.is_multiple_of(32) {
        let last = words.len() - 1;
        words[last] &= (1u32 << (width % 32)) - 1;
    }
}

/// `a + b` on little-endian words, truncated to `width` bits.
fn add_words(a: &[u32], b: &[u32], width: u32) -> Vec<u32> {
    let words = width.div_ceil(32) as usize;
    let mut out = Vec::with_capacity(words);
    let mut carry = 0u64;
    for i in 0..words {
        let sum = u64::from(*a.get(i).unwrap_or(&0)) + u64::from(*b.get(i).unwrap_or(&0)) + carry;
        out.push(sum as u32);
        carry = sum >> 32;
    }
    truncate(&mut out, width);
    out
}

fn to_u64(words: &[u32]) -> u64 {
    u64::from(words[0]) | words.get(1).map_or(0, |&w| u64::from(w) << 32)
}

fn temp_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("systole-sim-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn adder_matches_rust_at_every_width() {
    let mut model = Model::build(&adder_spec(), "wide_adder").unwrap();
    let ports: Vec<(u32, [PortId; 4])> = WIDTHS
        .iter()
        .map(|&w| {
            let p = |name: String| model.port(&name).unwrap();
            (
                w,
                [
                    p(format!("a{w}_i")),
                    p(format!("b{w}_i")),
                    p(format!("s{w}_o")),
                    p(format!("c{w}_o")),
                ],
            )
        })
        .collect();
    for &(w, [a, _, s, c]) in &ports {
        assert_eq!(model.width(a), w);
        assert_eq!(model.width(s), w);
        assert_eq!(model.width(c), w + 1);
    }

    let mut rng = Rng(seed());
    for iteration in 0..2000 {
        let mut expected = Vec::new();
        for &(w, [a, b, s, c]) in &ports {
            let (va, vb) = (rng.value(w), rng.value(w));
            // Ports up to 64 bits take both poke flavours.
            if w <= 64 && iteration % 2 == 0 {
                model.poke(a, to_u64(&va));
                model.poke(b, to_u64(&vb));
            } else {
                model.poke_wide(a, &va);
                model.poke_wide(b, &vb);
            }
            expected.push((s, add_words(&va, &vb, w), va.clone(), vb.clone()));
            expected.push((c, add_words(&va, &vb, w + 1), va, vb));
        }
        model.eval();
        for (port, want, va, vb) in expected {
            let got = model.peek_wide(port);
            assert_eq!(
                got,
                want,
                "{} for a={va:x?} b={vb:x?} (iteration {iteration})",
                model.ports()[port.index()].name
            );
            if model.width(port) <= 64 {
                assert_eq!(model.peek(port), to_u64(&want));
            }
        }
    }
}

#[test]
fn signed_pokes_and_peeks_use_twos_complement() {
    let mut model = Model::build(&adder_spec(), "wide_adder").unwrap();
    let (a, b, s) = (
        model.port("a8_i").unwrap(),
        model.port("b8_i").unwrap(),
        model.port("s8_o").unwrap(),
    );
    for (x, y) in [(-128i64, 127i64), (-1, -1), (100, 27), (-128, -1)] {
        model.poke_signed(a, x);
        model.poke_signed(b, y);
        model.eval();
        assert_eq!(
            model.peek_signed(s),
            i64::from((x as i8).wrapping_add(y as i8))
        );
        assert_eq!(model.peek_signed(a), x);
    }
    let a64 = model.port("a64_i").unwrap();
    model.poke_signed(a64, i64::MIN);
    assert_eq!(model.peek(a64), 1 << 63);
    // Without a clock, step only settles and counts.
    model.step();
    assert_eq!(model.cycle(), 1);
}

#[test]
fn out_of_range_pokes_panic() {
    let mut model = Model::build(&adder_spec(), "wide_adder").unwrap();
    let a8 = model.port("a8_i").unwrap();
    let s8 = model.port("s8_o").unwrap();
    let a100 = model.port("a100_i").unwrap();
    type Poke = Box<dyn Fn(&mut Model)>;
    let cases: [(&str, Poke); 5] = [
        ("too wide", Box::new(move |m| m.poke(a8, 256))),
        ("output", Box::new(move |m| m.poke(s8, 1))),
        ("signed", Box::new(move |m| m.poke_signed(a8, 128))),
        (
            "wide top bits",
            Box::new(move |m| m.poke_wide(a100, &[0, 0, 0, 1 << 4])),
        ),
        ("word count", Box::new(move |m| m.poke_wide(a100, &[0, 0]))),
    ];
    for (what, poke) in cases {
        let result = catch_unwind(AssertUnwindSafe(|| poke(&mut model)));
        assert!(result.is_err(), "{what} did not panic");
    }
    assert!(matches!(
        model.port("nope"),
        Err(SimError::UnknownPort { .. })
    ));
}

/// Drives the counter for `cycles` random cycles, checking it against a Rust model.
fn check_counter(model: &mut Model, rng: &mut Rng, cycles: u64) {
    let rst = model.port("rst_i").unwrap();
    let en = model.port("en_i").unwrap();
    let count = model.port("count_o").unwrap();
    let wrap = model.port("wrap_o").unwrap();
    let mut expected = model.peek(count);
    for _ in 0..cycles {
        let r = rng.next();
        let (reset, enable) = (r & 0xf == 0, r & 0x30 != 0);
        model.poke(rst, u64::from(reset));
        model.poke(en, u64::from(enable));
        model.eval();
        assert_eq!(model.peek(count), expected, "cycle {}", model.cycle());
        assert_eq!(
            model.peek(wrap),
            u64::from(enable && expected == 0xff),
            "cycle {}",
            model.cycle()
        );
        model.step();
        if reset {
            expected = 0;
        } else if enable {
            expected = (expected + 1) & 0xff;
        }
        // Registered outputs are visible right after the rising edge.
        assert_eq!(model.peek(count), expected, "after cycle {}", model.cycle());
    }
}

fn reset(model: &mut Model) {
    let rst = model.port("rst_i").unwrap();
    model.poke(rst, 1);
    model.step();
    model.poke(rst, 0);
}

#[test]
fn counter_counts_resets_and_wraps() {
    let mut model = Model::build(&counter_spec(), "counter").unwrap();
    let en = model.port("en_i").unwrap();
    let count = model.port("count_o").unwrap();
    let wrap = model.port("wrap_o").unwrap();
    reset(&mut model);
    assert_eq!(model.peek(count), 0);
    assert_eq!(model.cycle(), 1);
    let clk = model.port("clk_i").unwrap();
    let poke_clock = catch_unwind(AssertUnwindSafe(|| model.poke(clk, 1)));
    assert!(poke_clock.is_err(), "the clock belongs to step()");

    model.poke(en, 1);
    for i in 1..=255 {
        model.step();
        assert_eq!(model.peek(count), i);
    }
    model.eval();
    assert_eq!(model.peek(wrap), 1);
    model.step();
    assert_eq!(model.peek(count), 0, "8-bit counter wraps (W set by -GW=8)");

    // The native loop holds the inputs: 1000 more enabled cycles.
    model.run_cycles_native(1000);
    assert_eq!(model.peek(count), 1000 % 256);
    assert_eq!(model.cycle(), 1 + 256 + 1000);

    let mut rng = Rng(seed());
    check_counter(&mut model, &mut rng, 5000);
}

#[test]
fn new_instances_keep_their_own_state_on_their_own_threads() {
    // One library, several instances: each starts from zero inputs and its
    // own registers, and instances can be stepped on different threads at
    // once (the torus driver's per-chip models).
    let first = Model::build(&counter_spec(), "counter").unwrap();
    let mut models = vec![first];
    for _ in 0..3 {
        let m = models[0].new_instance().unwrap();
        assert_eq!(m.cache_status(), CacheStatus::Reused);
        assert_eq!(m.cycle(), 0);
        models.push(m);
    }
    let base = seed();
    std::thread::scope(|s| {
        for (k, m) in models.iter_mut().enumerate() {
            s.spawn(move || {
                reset(m);
                let en = m.port("en_i").unwrap();
                let count = m.port("count_o").unwrap();
                m.poke(en, 1);
                m.run_cycles_native(10 * k as u64 + 3);
                assert_eq!(m.peek(count), 10 * k as u64 + 3, "instance {k}");
                let mut rng = Rng(base ^ k as u64);
                check_counter(m, &mut rng, 2000);
            });
        }
    });
}

#[test]
fn second_build_reuses_the_cache() {
    let first = Model::build(&counter_spec(), "counter").unwrap();
    let started = Instant::now();
    let second = Model::build(&counter_spec(), "counter").unwrap();
    let reload = started.elapsed();
    eprintln!(
        "first build: {:?}; second build: {:?} in {reload:?}",
        first.cache_status(),
        second.cache_status()
    );
    assert_eq!(second.cache_status(), CacheStatus::Reused);
    assert_eq!(first.build_dir(), second.build_dir());
    assert_eq!(first.cache_key(), second.cache_key());
}

#[test]
fn concurrent_builds_of_a_new_spec_build_once() {
    // A unique comment makes a spec no earlier run has cached.
    let nonce = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let mut spec = counter_spec();
    spec.sources[0].1 = format!("// build {nonce}\n{COUNTER_V}");
    let barrier = Arc::new(Barrier::new(2));
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let (spec, barrier) = (spec.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let mut model = Model::build(&spec, "counter-fresh").unwrap();
                reset(&mut model);
                check_counter(&mut model, &mut Rng(7), 300);
                (model.cache_status(), model.build_dir().to_path_buf())
            })
        })
        .collect();
    let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let built = results
        .iter()
        .filter(|(status, _)| *status == CacheStatus::Built)
        .count();
    assert_eq!(built, 1, "{results:?}");
    assert_eq!(results[0].1, results[1].1);
    // Keep the cache free of one-off entries.
    std::fs::remove_dir_all(&results[0].1).unwrap();
}

#[test]
fn trace_writes_a_vcd_with_the_signals() {
    let path = temp_path("counter.vcd");
    let options = BuildOptions::new().trace(Trace::Vcd(path.clone()));
    let mut model = Model::build_with(&counter_spec(), "counter", &options).unwrap();
    assert_eq!(model.trace_path(), Some(path.as_path()));
    reset(&mut model);
    let en = model.port("en_i").unwrap();
    model.poke(en, 1);
    for _ in 0..20 {
        model.step();
    }
    model.run_cycles_native(10);
    assert_eq!(model.peek(model.port("count_o").unwrap()), 30);
    drop(model);

    let vcd = std::fs::read_to_string(&path).unwrap();
    for needle in [
        "$timescale",
        "clk_i",
        "rst_i",
        "en_i",
        "count_o",
        "count_q",
        "wrap_o",
    ] {
        assert!(
            vcd.contains(needle),
            "{needle} missing from {}",
            path.display()
        );
    }
    // 31 cycles: the last rising edge at 305, the final falling edge (written on drop) at 310.
    // The clock's identifier code is Verilator's choice; read it from its `$var` line.
    let clk = vcd
        .lines()
        .find_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w.len() >= 5 && w[0] == "$var" && w[4] == "clk_i").then(|| w[3].to_string())
        })
        .unwrap_or_else(|| panic!("no clk_i variable in {vcd}"));
    assert!(vcd.contains(&format!("\n#305\n1{clk}\n")), "{vcd}");
    assert!(vcd.trim_end().ends_with(&format!("#310\n0{clk}")), "{vcd}");

    // A second traced model with the same file request gets its own file.
    let second = Model::build_with(&counter_spec(), "counter", &options).unwrap();
    let second_path = temp_path("counter-1.vcd");
    assert_eq!(second.trace_path(), Some(second_path.as_path()));
    drop(second);
    let _ = std::fs::remove_file(path);
    let _ = std::fs::remove_file(second_path);
}

/// Set by `trace_follows_the_environment` for the child process it starts.
const CHILD_MARKER: &str = "SYSTOLE_SIM_TRACE_CHILD";

/// The child half of `trace_follows_the_environment`: it only runs in the child process that
/// test starts (marked by `CHILD_MARKER`); in the normal test run it returns at once.
#[test]
fn traced_by_the_environment() {
    if std::env::var_os(CHILD_MARKER).is_none() {
        return;
    }
    let mut model = Model::build(&counter_spec(), "env-counter").unwrap();
    reset(&mut model);
    model.run_cycles_native(5);
}

#[test]
fn trace_follows_the_environment() {
    // Environment variables are process-wide, so the traced run gets a process of its own.
    let dir = temp_path("env-traces");
    std::fs::create_dir_all(&dir).unwrap();
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "traced_by_the_environment", "--nocapture"])
        .env(CHILD_MARKER, "1")
        .env("SYSTOLE_TRACE", &dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let file = dir.join("env-counter-0.vcd");
    assert!(
        stderr.contains(&format!("waveform: {}", file.display())),
        "{stderr}"
    );
    assert!(std::fs::read_to_string(&file).unwrap().contains("count_o"));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn split_verilator_output_builds() {
    // Many small generated files exercise the grouping into unity translation units.
    let spec = adder_spec()
        .verilator_arg("--output-split")
        .verilator_arg("1")
        .verilator_arg("--output-split-cfuncs")
        .verilator_arg("1");
    let mut model = Model::build(&spec, "wide_adder_split").unwrap();
    let obj = model.build_dir().join("obj");
    let generated = std::fs::read_dir(&obj).unwrap().count();
    assert!(
        generated > 20,
        "only {generated} files in {}",
        obj.display()
    );
    let (a, b, c) = (
        model.port("a128_i").unwrap(),
        model.port("b128_i").unwrap(),
        model.port("c128_o").unwrap(),
    );
    let mut rng = Rng(seed());
    for _ in 0..200 {
        let (va, vb) = (rng.value(128), rng.value(128));
        model.poke_wide(a, &va);
        model.poke_wide(b, &vb);
        model.eval();
        assert_eq!(model.peek_wide(c), add_words(&va, &vb, 129));
    }
}

#[test]
fn bad_verilog_is_an_error_with_a_log() {
    let spec = ModelSpec::new("broken")
        .source(
            "broken.v",
            "module broken(input wire a_i, output wire y_o);\n assign y_o = a_i +;\nendmodule\n",
        )
        .input("a_i", 1)
        .output("y_o", 1);
    let err = Model::build(&spec, "broken").unwrap_err();
    let message = err.to_string();
    eprintln!("{message}");
    assert!(!message.contains('\n'), "one line: {message}");
    let SimError::Verilator { summary, log } = err else {
        panic!("expected a Verilator error, got {message}");
    };
    assert!(summary.contains("broken.v:2"), "{summary}");
    assert!(std::fs::read_to_string(&log).unwrap().contains("%Error"));
}

#[test]
fn port_list_mismatch_is_an_error() {
    let mut spec = counter_spec();
    spec.ports.retain(|p| p.name != "wrap_o");
    spec.ports
        .iter_mut()
        .find(|p| p.name == "count_o")
        .unwrap()
        .width = 9;
    let err = Model::build(&spec, "counter-mismatch").unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, SimError::PortMismatch { .. }), "{message}");
    assert!(
        message.contains("count_o") && message.contains("wrap_o"),
        "{message}"
    );

    let bad_clock = ModelSpec {
        clock: Some("count_o".into()),
        ..counter_spec()
    };
    assert!(matches!(
        Model::build(&bad_clock, "x"),
        Err(SimError::InvalidSpec(_))
    ));
}

const STOPPER_V: &str = "`default_nettype none
module stopper (
  input  wire       clk_i,
  input  wire       stop_i,
  input  wire       finish_i,
  output wire [7:0] n_o
);
  reg [7:0] n_q;
  always @(posedge clk_i) begin
    n_q <= n_q + 8'd1;
    if (finish_i) $finish;
    if (stop_i) $stop;
  end
  assign n_o = n_q;
endmodule
";

#[test]
fn stop_panics_and_finish_sets_a_flag_without_ending_the_process() {
    let spec = ModelSpec::new("stopper")
        .source("stopper.v", STOPPER_V)
        .clock("clk_i")
        .input("stop_i", 1)
        .input("finish_i", 1)
        .output("n_o", 8);
    let mut model = Model::build(&spec, "stopper").unwrap();
    let finish = model.port("finish_i").unwrap();
    model.poke(finish, 1);
    model.step();
    model.step();
    assert!(model.got_finish());
    model.poke(finish, 0);

    let stop = model.port("stop_i").unwrap();
    model.poke(stop, 1);
    let panic = catch_unwind(AssertUnwindSafe(|| model.step())).unwrap_err();
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(message.contains("$stop"), "{message}");
    assert!(catch_unwind(AssertUnwindSafe(|| model.eval())).is_err());
    drop(model);

    // The process and the library are still fine.
    let mut again = Model::build(&spec, "stopper").unwrap();
    again.run_cycles_native(3);
    assert_eq!(again.peek(again.port("n_o").unwrap()), 3);
}

#[test]
fn models_coexist_and_move_between_threads() {
    let mut rng = Rng(seed());
    let mut a = Model::build(&counter_spec(), "counter").unwrap();
    let mut b = Model::build(&counter_spec(), "counter").unwrap();
    let mut adder = Model::build(&adder_spec(), "wide_adder").unwrap();
    reset(&mut a);
    reset(&mut b);
    let (en_a, en_b) = (a.port("en_i").unwrap(), b.port("en_i").unwrap());
    a.poke(en_a, 1);
    a.run_cycles_native(10);
    b.poke(en_b, 1);
    b.run_cycles_native(3);
    let (a8, b8, s8) = (
        adder.port("a8_i").unwrap(),
        adder.port("b8_i").unwrap(),
        adder.port("s8_o").unwrap(),
    );
    let count = a.port("count_o").unwrap();
    adder.poke(a8, a.peek(count));
    adder.poke(b8, b.peek(count));
    adder.eval();
    assert_eq!(adder.peek(s8), 13);

    // Each model runs on its own thread, at the same time, then comes back.
    let seeds = [rng.next(), rng.next()];
    let handles: Vec<_> = [a, b]
        .into_iter()
        .zip(seeds)
        .map(|(mut model, seed)| {
            std::thread::spawn(move || {
                check_counter(&mut model, &mut Rng(seed), 3000);
                model
            })
        })
        .collect();
    let models: Vec<Model> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    for mut model in models {
        check_counter(&mut model, &mut rng, 100);
    }
}

#[test]
fn throughput_and_build_times() {
    let started = Instant::now();
    let mut model = Model::build(&counter_spec(), "counter").unwrap();
    eprintln!(
        "counter model ready in {:.3} s ({:?})",
        started.elapsed().as_secs_f64(),
        model.cache_status()
    );
    let (rst, en, count) = (
        model.port("rst_i").unwrap(),
        model.port("en_i").unwrap(),
        model.port("count_o").unwrap(),
    );
    reset(&mut model);
    const CYCLES: u64 = 200_000;
    let started = Instant::now();
    let mut sum = 0u64;
    for i in 0..CYCLES {
        model.poke(rst, 0);
        model.poke(en, i & 1);
        model.eval();
        sum += model.peek(count);
        model.step();
    }
    let rust_loop = CYCLES as f64 / started.elapsed().as_secs_f64();
    assert!(sum > 0);

    model.poke(en, 1);
    let started = Instant::now();
    model.run_cycles_native(CYCLES * 5);
    let native = (CYCLES * 5) as f64 / started.elapsed().as_secs_f64();
    eprintln!(
        "counter: {:.2} M cycles/s from a Rust loop (poke/eval/peek/step), {:.2} M cycles/s native",
        rust_loop / 1e6,
        native / 1e6
    );
}

/// An accumulator with a combinational output fed by an input and a register:
/// `acc` adds `a_i` when `en_i` (cleared by `clear_i`), `y_o = a_i ^ acc`,
/// `acc_o = acc`.
fn accumulator_files() -> (Vec<hw::EmittedFile>, std::rc::Rc<hw::ModuleDef>) {
    sim::drivers::module_files("sim model test", Vec::new(), |d| {
        d.define("acc_test", &[], |_, m| {
            let a = m.input("a_i", hw::Ty::u(70));
            let en = m.input("en_i", hw::Ty::BOOL);
            let clear = m.input("clear_i", hw::Ty::BOOL);
            let acc = m.reg("acc", hw::Ty::u(70));
            let next = hw::mux(en, acc.q() + a, acc.q());
            m.set_next(acc, hw::mux(clear, m.lit(hw::Ty::u(70), 0), next));
            m.output("y_o", a ^ acc.q());
            m.output("acc_o", acc.q());
        })
    })
    .unwrap()
}

#[test]
fn delayed_inputs_are_plain_inputs_poked_a_cycle_later() {
    // `from_hw::inputs_delayed` registers the chosen inputs (here `a_i`) at
    // the rising edge and leaves the others (`en_i`, `clear_i`) direct: the
    // wrapped model given a(t) in cycle t behaves as the plain model given
    // a(t - 1), both the output fed by the input and the register.
    let (files, top) = accumulator_files();
    let plain_spec = sim::from_hw::model_spec(&files, &top);
    let wrapped_spec = sim::from_hw::inputs_delayed(plain_spec.clone(), &top, |p| p == "a_i");
    assert_ne!(plain_spec.top, wrapped_spec.top);
    let mut plain = Model::build(&plain_spec, "acc_plain").unwrap();
    let mut wrapped = Model::build(&wrapped_spec, "acc_delayed").unwrap();
    let mut rng = Rng(seed());
    let ports = |m: &Model| ["a_i", "en_i", "y_o", "acc_o", "clear_i"].map(|n| m.port(n).unwrap());
    let (p, w) = (ports(&plain), ports(&wrapped));
    for (m, q) in [(&mut plain, p), (&mut wrapped, w)] {
        m.poke(q[4], 1);
        m.poke_wide(q[0], &[0, 0, 0]);
        m.step();
        m.poke(q[4], 0);
    }
    let mut before = [0u32; 3];
    for cycle in 0..2000 {
        let a = [
            rng.next() as u32,
            rng.next() as u32,
            rng.next() as u32 & 0x3f,
        ];
        let en = rng.next() & 1;
        plain.poke_wide(p[0], &before);
        wrapped.poke_wide(w[0], &a);
        for (m, q) in [(&mut plain, p), (&mut wrapped, w)] {
            m.poke(q[1], en);
            m.eval();
        }
        assert_eq!(
            plain.peek_wide(p[2]),
            wrapped.peek_wide(w[2]),
            "y_o, cycle {cycle}"
        );
        plain.step();
        wrapped.step();
        assert_eq!(
            plain.peek_wide(p[3]),
            wrapped.peek_wide(w[3]),
            "acc_o, cycle {cycle}"
        );
        before = a;
    }
}

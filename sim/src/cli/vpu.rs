//! `sim vpu`: one elementwise operation or reduction on the VPU, from and to
//! `.npy` arrays of any shape.
//!
//! ```text
//! sim vpu --op OP --a A.npy [--b B.npy] [--mask M.npy] [--mult M --shift S --zp Z]
//!     --out C.npy [--lanes L --sublanes S] [--depth N] [--golden] [--stats]
//! ```
//!
//! The arrays are flattened in C order, cut into vectors and VMEM tiles, and
//! run as `sim::drivers::vpu_ops` describes; the result has A's shape, a
//! reduction's shape (1,). Everything the user gave is checked before a
//! model is built: a bad input is one error line, exit code 2, and no output
//! file.

use super::{bad, broken, Failure};
use config::vpu_isa::Op;
use config::VpuConfig;
use matrix::Array;
use sim::drivers::vpu::VpuDriver;
use sim::drivers::vpu_ops::{self, GoldenVpu, Kind, OpRun, Requant, VpuMachine};
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct VpuArgs {
    /// The operation (`--op list` lists them with their types).
    #[arg(long, value_name = "OP")]
    op: String,
    /// A: .npy array of any shape (the first operand).
    #[arg(long, value_name = "FILE")]
    a: Option<PathBuf>,
    /// B: .npy array of A's shape (binary operations and select).
    #[arg(long, value_name = "FILE")]
    b: Option<PathBuf>,
    /// The mask of select: int32 .npy array of A's shape (nonzero picks A).
    #[arg(long, value_name = "FILE")]
    mask: Option<PathBuf>,
    /// requant_i8's multiplier (an int32 > 0, Q31).
    #[arg(long, value_name = "M", allow_hyphen_values = true)]
    mult: Option<i64>,
    /// requant_i8's right shift (0..31).
    #[arg(long, value_name = "S", allow_hyphen_values = true)]
    shift: Option<i64>,
    /// requant_i8's zero point (-128..127).
    #[arg(long, value_name = "Z", allow_hyphen_values = true)]
    zp: Option<i64>,
    /// Where to write the result (.npy).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Lanes of the VPU (a power of two).
    #[arg(long, value_name = "L", default_value_t = VpuConfig::DEFAULT.lanes())]
    lanes: u32,
    /// Sublanes of the VPU (a power of two); a vector holds lanes x sublanes elements.
    #[arg(long, value_name = "S", default_value_t = VpuConfig::DEFAULT.sublanes())]
    sublanes: u32,
    /// Extra execute stages of the VPU (0..=7; docs/vpu.md, "Timing").
    #[arg(long, value_name = "N", default_value_t = VpuConfig::DEFAULT.depth())]
    depth: u32,
    /// Compute with the golden model (cycles from its cycle model) instead of the RTL.
    #[arg(long)]
    golden: bool,
    /// Print one JSON line of statistics to stdout.
    #[arg(long)]
    stats: bool,
}

/// An element type of the CLI's arrays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DType {
    Int32,
    Float32,
    /// bf16 bit patterns.
    Uint16,
    Int8,
    /// int32 or float32, the same for A and B (select).
    Int32OrFloat32,
}

impl DType {
    fn name(self) -> &'static str {
        match self {
            DType::Int32 => "int32",
            DType::Float32 => "float32",
            DType::Uint16 => "uint16",
            DType::Int8 => "int8",
            DType::Int32OrFloat32 => "int32|float32",
        }
    }
}

/// An operation of the CLI: the VPU operation and the types of its arrays.
#[derive(Debug, Clone, Copy)]
struct CliOp {
    op: Op,
    kind: Kind,
    input: DType,
    output: DType,
    /// A compare: the int32 result is 0 or 1.
    compare: bool,
}

/// The operations `sim vpu` offers, in the order `--op list` prints them.
fn cli_ops() -> Vec<CliOp> {
    Op::ALL
        .iter()
        .filter_map(|&op| {
            let kind = vpu_ops::kind(op)?;
            let input = match op {
                Op::CvtI32F32 => DType::Int32,
                Op::CvtF32I32 | Op::CvtF32Bf16 => DType::Float32,
                Op::CvtBf16F32 => DType::Uint16,
                Op::Select => DType::Int32OrFloat32,
                _ if op.name().ends_with("_f32") => DType::Float32,
                _ => DType::Int32,
            };
            let compare = matches!(
                op,
                Op::EqI32
                    | Op::NeI32
                    | Op::LtI32
                    | Op::LeI32
                    | Op::LtuI32
                    | Op::LeuI32
                    | Op::EqF32
                    | Op::NeF32
                    | Op::LtF32
                    | Op::LeF32
            );
            let output = match op {
                _ if compare => DType::Int32,
                Op::CvtI32F32 | Op::CvtBf16F32 => DType::Float32,
                Op::CvtF32I32 => DType::Int32,
                Op::CvtF32Bf16 => DType::Uint16,
                Op::RequantI8 => DType::Int8,
                _ => input,
            };
            Some(CliOp {
                op,
                kind,
                input,
                output,
                compare,
            })
        })
        .collect()
}

/// One line per operation: its operands and result.
fn op_list() -> String {
    let mut out = String::new();
    for c in cli_ops() {
        let t = c.input.name();
        let operands = match c.kind {
            Kind::Unary => format!("a {t}"),
            Kind::Binary => format!("a {t}, b {t}"),
            Kind::Select => format!("mask int32, a {t}, b (a's type)"),
            Kind::Requant => format!("a {t}, --mult --shift --zp"),
            Kind::Reduction => format!("a {t}"),
        };
        let result = match c.kind {
            Kind::Reduction => format!("{} of shape (1,)", c.output.name()),
            Kind::Select => "a's type".to_string(),
            _ if c.compare => "int32 (0 or 1)".to_string(),
            _ => c.output.name().to_string(),
        };
        out.push_str(&format!("{:<15} {operands} -> {result}\n", c.op.name()));
    }
    out
}

/// An input array as 32-bit elements, with its shape and type.
struct Input {
    shape: Vec<u64>,
    dtype: DType,
    elements: Vec<u32>,
}

fn read_input(path: &Path, what: &str, want: DType) -> Result<Input, Failure> {
    let dtype = match want {
        DType::Int32OrFloat32 => {
            let ts = matrix::dtype_of(path, what).map_err(bad)?;
            if ts.ends_with("f4") {
                DType::Float32
            } else {
                DType::Int32
            }
        }
        other => other,
    };
    let (shape, elements) = match dtype {
        DType::Int32 => {
            let a: Array<i32> = matrix::read_array(path, what).map_err(bad)?;
            (a.shape, a.data.into_iter().map(|x| x as u32).collect())
        }
        DType::Float32 => {
            let a: Array<f32> = matrix::read_array(path, what).map_err(bad)?;
            (a.shape, a.data.into_iter().map(f32::to_bits).collect())
        }
        DType::Uint16 => {
            let a: Array<u16> = matrix::read_array(path, what).map_err(bad)?;
            (a.shape, a.data.into_iter().map(u32::from).collect())
        }
        DType::Int8 | DType::Int32OrFloat32 => unreachable!("not an input type"),
    };
    Ok(Input {
        shape,
        dtype,
        elements,
    })
}

fn same_shape(a: &Input, other: &Input, what: &str) -> Result<(), Failure> {
    if a.shape != other.shape {
        return Err(bad(format!(
            "shape mismatch: A has shape {:?} and {what} has shape {:?}; they must be equal",
            a.shape, other.shape
        )));
    }
    Ok(())
}

/// `requant_i8`'s parameters, checked; an error for any other operation
/// that is given one.
fn requant_params(args: &VpuArgs, op: Op) -> Result<Option<Requant>, Failure> {
    let given = [
        ("--mult", args.mult),
        ("--shift", args.shift),
        ("--zp", args.zp),
    ];
    if op != Op::RequantI8 {
        if let Some((flag, _)) = given.iter().find(|(_, v)| v.is_some()) {
            return Err(bad(format!("{flag} applies to requant_i8 only, not {op}")));
        }
        return Ok(None);
    }
    let need =
        |flag: &str, v: Option<i64>| v.ok_or_else(|| bad(format!("requant_i8 needs {flag}")));
    let multiplier = need("--mult", args.mult)?;
    let shift = need("--shift", args.shift)?;
    let zero_point = need("--zp", args.zp)?;
    if !(1..=i64::from(i32::MAX)).contains(&multiplier) {
        return Err(bad(format!(
            "--mult must be an int32 greater than 0, got {multiplier}"
        )));
    }
    if !(0..=31).contains(&shift) {
        return Err(bad(format!("--shift must be in 0..31, got {shift}")));
    }
    if !(-128..=127).contains(&zero_point) {
        return Err(bad(format!("--zp must be in -128..127, got {zero_point}")));
    }
    Ok(Some(Requant {
        multiplier: multiplier as i32,
        shift: shift as u32,
        zero_point: zero_point as i32,
    }))
}

/// Runs `sim vpu`.
pub fn run(args: &VpuArgs) -> Result<(), Failure> {
    if args.op == "list" {
        print!("{}", op_list());
        return Ok(());
    }
    let Some(c) = cli_ops().into_iter().find(|c| c.op.name() == args.op) else {
        return Err(bad(format!(
            "unknown op '{}' (sim vpu --op list lists them)",
            args.op
        )));
    };
    let op = c.op;
    let a_path = args.a.as_ref().ok_or_else(|| bad("--a is required"))?;
    let out = args.out.as_ref().ok_or_else(|| bad("--out is required"))?;
    let takes_b = matches!(c.kind, Kind::Binary | Kind::Select);
    let takes_mask = c.kind == Kind::Select;
    if args.b.is_some() && !takes_b {
        return Err(bad(format!("{op} takes no --b")));
    }
    if args.mask.is_some() && !takes_mask {
        return Err(bad(format!("{op} takes no --mask")));
    }
    let requant = requant_params(args, op)?;
    let cfg = VpuConfig::new(args.lanes, args.sublanes)
        .and_then(|c| c.with_depth(args.depth))
        .map_err(|e| bad(e.to_string()))?;

    let a = read_input(a_path, "A", c.input)?;
    let mut inputs = vec![];
    if takes_mask {
        let path = args
            .mask
            .as_ref()
            .ok_or_else(|| bad("select needs --mask"))?;
        let mask = read_input(path, "mask", DType::Int32)?;
        same_shape(&a, &mask, "the mask")?;
        inputs.push(mask.elements);
    }
    let out_dtype = if c.kind == Kind::Select {
        a.dtype
    } else {
        c.output
    };
    let shape = a.shape.clone();
    let a_dtype = a.dtype;
    if takes_b {
        let path = args
            .b
            .as_ref()
            .ok_or_else(|| bad(format!("{op} needs --b")))?;
        let b = read_input(path, "B", a_dtype)?;
        same_shape(&a, &b, "B")?;
        inputs.insert(if takes_mask { 1 } else { 0 }, a.elements);
        inputs.push(b.elements);
    } else {
        inputs.push(a.elements);
    }
    let n = inputs[0].len();

    let result = if args.golden {
        execute(&mut GoldenVpu::new(&cfg), &c, &inputs, requant)?
    } else {
        let mut d = VpuDriver::new(&cfg).map_err(|e| broken(e.to_string()))?;
        execute(&mut d, &c, &inputs, requant)?
    };
    let out_shape = if c.kind == Kind::Reduction {
        vec![1]
    } else {
        shape
    };
    write_output(out, out_shape, out_dtype, &result.output)?;
    if args.stats {
        let cycles = result.cycles;
        let line = serde_json::json!({
            "op": op.name(),
            "backend": if args.golden { "golden" } else { "rtl" },
            "lanes": cfg.lanes(),
            "sublanes": cfg.sublanes(),
            "vregs": cfg.vregs(),
            "vmem_words": cfg.vmem_words(),
            "depth": cfg.depth(),
            "n": n,
            "cycles": cycles,
            "elements_per_cycle": n as f64 / cycles as f64,
            "port_bound_elements_per_cycle": vpu_ops::port_bound(&cfg, op),
            "programs": result.programs,
        });
        println!("{line}");
    }
    Ok(())
}

fn execute(
    m: &mut dyn VpuMachine,
    c: &CliOp,
    inputs: &[Vec<u32>],
    requant: Option<Requant>,
) -> Result<OpRun, Failure> {
    let slices: Vec<&[u32]> = inputs.iter().map(Vec::as_slice).collect();
    let run = if c.kind == Kind::Reduction {
        vpu_ops::reduction(m, c.op, slices[0])
    } else {
        vpu_ops::elementwise(m, c.op, &slices, requant)
    };
    run.map_err(broken)
}

fn write_output(path: &Path, shape: Vec<u64>, dtype: DType, data: &[u32]) -> Result<(), Failure> {
    match dtype {
        DType::Int32 | DType::Int32OrFloat32 => matrix::write_array(
            path,
            &Array {
                shape,
                data: data.iter().map(|&x| x as i32).collect::<Vec<i32>>(),
            },
        ),
        // float32 carries the fp32 results bit for bit (NaNs included).
        DType::Float32 => matrix::write_array(
            path,
            &Array {
                shape,
                data: data
                    .iter()
                    .map(|&x| f32::from_bits(x))
                    .collect::<Vec<f32>>(),
            },
        ),
        DType::Uint16 => matrix::write_array(
            path,
            &Array {
                shape,
                data: data.iter().map(|&x| x as u16).collect::<Vec<u16>>(),
            },
        ),
        DType::Int8 => matrix::write_array(
            path,
            &Array {
                shape,
                data: data.iter().map(|&x| x as i8).collect::<Vec<i8>>(),
            },
        ),
    }
    .map_err(broken)
}

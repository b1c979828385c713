//! The run CLI's command line: parsing, dispatch to one module per subcommand,
//! and the exit codes (0 done, 2 bad input, 1 a failure of the tool), each
//! error one line on stderr.

mod crc;
mod embed;
mod eup;
mod gpt;
mod link;
mod matmul;
mod mlp;
mod torus;
mod vpu;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Runs Systole's blocks on data files, in RTL simulation (Verilator) or on the golden model.
#[derive(Parser, Debug)]
#[command(name = "sim", version, about = "Runs Systole's blocks on .npy data, in RTL simulation (Verilator) or on the golden model", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// C = A x B on the MXU. A is [M,K], B is [K,N]; any M, K, N >= 1 (the tool
    /// tiles them onto the R x C array). int8 A and B give an int32 C; bf16 A
    /// and B (uint16 arrays of bf16 bit patterns) give a float32 C, which
    /// depends on R as docs/numerics.md says.
    Matmul(matmul::MatmulArgs),
    /// A uint8 payload P through one ICI link over the serdes stub (errors
    /// injected at the given rates), node A to node B while B sends it back
    /// reversed; D (what B received) must equal P.
    Link(link::LinkArgs),
    /// One elementwise operation or reduction on the VPU (lanes x sublanes
    /// elements per vector). A, B and the mask are .npy arrays of any one
    /// shape; the result has A's shape (reductions: shape (1,)). `--op list`
    /// lists the operations with their operand and result types.
    Vpu(vpu::VpuArgs),
    /// Embedding lookup and combine on the SparseCore: A[s] = sum of g x E[id]
    /// over the entries (id, s, g), merged, sorted and sharded over T tiles as
    /// docs/numerics.md says (the result depends on T). E is float32 [V, D]; I and
    /// S int32 [n]; G float32 [n]; A is written as float32 [B, D].
    Embed(embed::EmbedArgs),
    /// Embedding update (scatter-add SGD): E2[id] = E[id] - lr x U[id], U[id]
    /// the sum of g x GR[s] over the id's entries. Writes the whole updated
    /// table, float32 [V, D].
    EmbedUpdate(embed::EmbedUpdateArgs),
    /// A quantized MLP on the TensorCore: the model folder's layers compiled
    /// into a program, X (int8 [N, in_1]) through it, int32 logits [N, out_L]
    /// out. Hidden layers: h = max(requant(h @ w + b), zero point).
    Mlp(mlp::MlpArgs),
    /// All-reduce over an ICI torus of XxYxZ chips (each 1..=4): V is
    /// float32 or int32 [chips, n], chip c = x + X*(y + Y*z) in logical
    /// coordinates; R (same shape and dtype) is every chip's result: fp32
    /// summed in docs/numerics.md's all-reduce order v2 (element e's part
    /// e mod 3 reduces along x, y, z in rotated order), int32 a wrapping sum.
    /// The RTL steps its chips on as many threads as the machine has cores
    /// (SYSTOLE_SIM_THREADS sets the count).
    Allreduce(torus::AllReduceArgs),
    /// Random traffic through an ICI torus's routers: throughput and latency
    /// (mean, p99) as one JSON line. The chips are stepped on as many threads
    /// as the machine has cores (SYSTOLE_SIM_THREADS sets the count).
    Torus(torus::TorusArgs),
    /// Byte packets through the stream CRC: P (uint8, a packet per row, cut
    /// to L's lengths) in, one CRC per packet out (the catalog's CRC of the
    /// bytes, whatever the beat width).
    Crc(crc::CrcArgs),
    /// One EUP operation on every element: div (A / B), sqrt, recip, rsqrt,
    /// exp2 or exp, fp32 as docs/numerics.md's EUP section says. A (and B,
    /// for div) are float32 arrays of any one shape; Y has A's shape.
    Eup(eup::EupArgs),
    /// Greedy generation from a transformer's model folder on TensorCore v2:
    /// P (int32 [n]) fed a token per step, N tokens chosen (the first
    /// largest logit); T is int32 [N], L float32 [N, vocab]. The bits
    /// depend on R and on W = lanes x sublanes (docs/numerics.md).
    Gpt(gpt::GptArgs),
}

/// A failure and its exit code: 2 for bad input, 1 for a failure of the tool.
pub struct Failure(pub u8, pub String);

/// A failure caused by the user's input (exit code 2).
pub fn bad(msg: impl Into<String>) -> Failure {
    Failure(2, msg.into())
}

/// A failure of the tool itself (exit code 1).
pub fn broken(msg: impl Into<String>) -> Failure {
    Failure(1, msg.into())
}

pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => return gen::exit_on_cli_error(&e, "sim"),
    };
    let result = match cli.command {
        Command::Matmul(args) => matmul::run(&args),
        Command::Link(args) => link::run(&args),
        Command::Vpu(args) => vpu::run(&args),
        Command::Embed(args) => embed::run_embed(&args),
        Command::EmbedUpdate(args) => embed::run_update(&args),
        Command::Mlp(args) => mlp::run(&args),
        Command::Allreduce(args) => torus::run_allreduce(&args),
        Command::Torus(args) => torus::run_torus(&args),
        Command::Crc(args) => crc::run(&args),
        Command::Eup(args) => eup::run(&args),
        Command::Gpt(args) => gpt::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(code, msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(code)
        }
    }
}

//! `systole-host`: talks to a Systole board over its serial port.
//!
//! ```text
//! systole-host info   --port /dev/ttyUSB1
//! systole-host matmul --port /dev/ttyUSB1 --a A.npy --b B.npy --out C.npy
//! systole-host mlp    --port /dev/ttyUSB0 --model DIR --x X.npy --out LOGITS.npy
//! ```

use clap::{Parser, Subcommand};
use config::ElemType;
use host::{Client, HostError, SerialTransport};
use matrix::Matrix;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Runs matrix multiplications on a Systole board (iCEBreaker, ULX3S) over its
/// USB serial port.
#[derive(Parser, Debug)]
#[command(
    name = "systole-host",
    version,
    about = "Runs matrix multiplications and quantized MLPs on a Systole board over its USB serial port",
    long_about = None
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Debug)]
struct Link {
    /// Serial port of the board (the iCEBreaker's UART is the FTDI's second
    /// port, e.g. /dev/ttyUSB1; the ULX3S has one, e.g. /dev/ttyUSB0).
    #[arg(long, value_name = "PORT")]
    port: String,
    /// Baud rate the bitstream was generated for.
    #[arg(long, value_name = "BAUD", default_value_t = 115_200)]
    baud: u32,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Prints the bridge's array, buffers and error flags (and clears them).
    Info {
        #[command(flatten)]
        link: Link,
    },
    /// C = A x B on the board. For an int8 MXU, A and B are int8 .npy
    /// matrices and C is int32; for bf16, A and B are uint16 .npy matrices of
    /// bf16 bit patterns and C is float32. Any M, K, N >= 1.
    Matmul {
        #[command(flatten)]
        link: Link,
        /// A: .npy matrix, M x K.
        #[arg(long, value_name = "FILE")]
        a: PathBuf,
        /// B: .npy matrix, K x N.
        #[arg(long, value_name = "FILE")]
        b: PathBuf,
        /// Where to write C: .npy matrix, M x N.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// Print one line of link statistics.
        #[arg(long)]
        stats: bool,
    },
    /// Runs a quantized MLP on a TensorCore board (gen --board ulx3s --block
    /// tensorcore): compiled for the board's core, int8 X in, int32 logits
    /// out, bit-exact with `sim mlp`.
    Mlp {
        #[command(flatten)]
        link: Link,
        /// Folder with w{i}.npy (int8, shape in_i x out_i), b{i}.npy (int32,
        /// out_i) and, for every layer but the last, rq{i}.npy (int32, 3:
        /// multiplier, shift, zero point), as `sim mlp` reads it.
        #[arg(long, value_name = "DIR")]
        model: PathBuf,
        /// Inputs: .npy int8 [N, in_1].
        #[arg(long, value_name = "FILE")]
        x: PathBuf,
        /// Where to write the logits: .npy int32 [N, out_L].
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// Print one JSON line: the core's counters summed over the runs,
        /// MXU busy fraction, link traffic.
        #[arg(long)]
        stats: bool,
    },
}

/// A failure and its exit code: 2 for bad input, 1 for the link or the board.
struct Failure(u8, String);

impl From<HostError> for Failure {
    fn from(e: HostError) -> Self {
        let code = if matches!(e, HostError::Shape(_)) {
            2
        } else {
            1
        };
        Failure(code, e.to_string())
    }
}

fn main() -> ExitCode {
    // A closed stdout pipe (`... | head`) ends the tool quietly, as it ends
    // other command-line tools, instead of a panic in `println!`.
    #[cfg(unix)]
    // SAFETY: restoring a signal's default action before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                    print!("{e}");
                    return ExitCode::SUCCESS;
                }
                ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                    print!("{e}");
                    return ExitCode::from(2);
                }
                ErrorKind::MissingRequiredArgument => {
                    use clap::error::{ContextKind, ContextValue};
                    let missing = match e.get(ContextKind::InvalidArg) {
                        Some(ContextValue::Strings(v)) => v.join(", "),
                        _ => "a required argument".to_string(),
                    };
                    eprintln!("error: missing {missing} (see systole-host --help)");
                    return ExitCode::from(2);
                }
                _ => {
                    let text = e.to_string();
                    let first = text.lines().next().unwrap_or("invalid arguments");
                    eprintln!("{first} (see systole-host --help)");
                    return ExitCode::from(2);
                }
            }
        }
    };
    let result = match cli.command {
        Command::Info { link } => info(&link),
        Command::Matmul {
            link,
            a,
            b,
            out,
            stats,
        } => matmul(&link, &a, &b, &out, stats),
        Command::Mlp {
            link,
            model,
            x,
            out,
            stats,
        } => mlp(&link, &model, &x, &out, stats),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(code, msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(code)
        }
    }
}

fn connect(link: &Link) -> Result<Client<SerialTransport>, Failure> {
    let port =
        SerialTransport::open(&link.port, link.baud).map_err(|e| Failure(1, e.to_string()))?;
    Ok(Client::connect(port)?)
}

fn info(link: &Link) -> Result<(), Failure> {
    let mut client = connect(link)?;
    let status = client.status()?;
    println!("bridge: {}", status.info);
    if status.info.core == host::CoreKind::TensorCore {
        let t = client.tc_info()?;
        println!(
            "tensorcore: {}x{}, {} accumulator rows, {} unified-buffer rows, {} weight rows, {} bias rows, weight queue {}, depth {}",
            t.rows, t.cols, t.acc_rows, t.ub_rows, t.weight_rows, t.bias_rows, t.weight_queue, t.depth
        );
        println!(
            "bridge memories: {} program words, {} input rows, {} output rows",
            t.program_words, t.input_rows, t.output_rows
        );
        let errors = status.errors();
        println!(
            "error flags: {}",
            if errors.is_empty() {
                "none".to_string()
            } else {
                errors.join(", ")
            }
        );
        return Ok(());
    }
    println!(
        "queued weight tiles: {} of {}",
        status.queued, status.info.max_queued
    );
    let errors = status.errors();
    if errors.is_empty() {
        println!("error flags: none");
    } else {
        println!("error flags: {}", errors.join(", "));
    }
    Ok(())
}

fn bad(msg: String) -> Failure {
    Failure(2, msg)
}

fn matmul(
    link: &Link,
    a: &std::path::Path,
    b: &std::path::Path,
    out: &std::path::Path,
    stats: bool,
) -> Result<(), Failure> {
    // Read the inputs before touching the port, so bad files fail fast; the
    // element type is checked against the board's once it is known.
    enum Operands {
        Int8(Matrix<i8>, Matrix<i8>),
        Bf16(Matrix<u16>, Matrix<u16>),
    }
    let ops = match matrix::read::<i8>(a, "A") {
        Ok(ma) => Operands::Int8(ma, matrix::read::<i8>(b, "B").map_err(bad)?),
        Err(int8_err) => match matrix::read::<u16>(a, "A") {
            Ok(ma) => Operands::Bf16(ma, matrix::read::<u16>(b, "B").map_err(bad)?),
            Err(_) => {
                return Err(bad(
                    int8_err.replace("expected int8", "expected int8 or uint16")
                ))
            }
        },
    };
    match &ops {
        Operands::Int8(ma, mb) => matrix::check_product_shapes(ma, mb).map_err(bad)?,
        Operands::Bf16(ma, mb) => matrix::check_product_shapes(ma, mb).map_err(bad)?,
    }
    let mut client = connect(link)?;
    let dtype = client.info().dtype;
    let start = Instant::now();
    let (m, n) =
        match (&ops, dtype) {
            (Operands::Int8(ma, mb), ElemType::Int8) => {
                let c = client.matmul_int8(&ma.data, &mb.data, (ma.rows, ma.cols, mb.cols))?;
                let c = Matrix {
                    rows: ma.rows,
                    cols: mb.cols,
                    data: c,
                };
                matrix::write(out, &c).map_err(|e| Failure(1, e))?;
                (ma.rows, mb.cols)
            }
            (Operands::Bf16(ma, mb), ElemType::Bf16) => {
                let c = client.matmul_bf16(&ma.data, &mb.data, (ma.rows, ma.cols, mb.cols))?;
                let c = Matrix {
                    rows: ma.rows,
                    cols: mb.cols,
                    data: c.into_iter().map(f32::from_bits).collect(),
                };
                matrix::write(out, &c).map_err(|e| Failure(1, e))?;
                (ma.rows, mb.cols)
            }
            (Operands::Int8(..), ElemType::Bf16) => return Err(bad(
                "the board's MXU is bf16: A and B must be uint16 .npy files of bf16 bit patterns"
                    .into(),
            )),
            (Operands::Bf16(..), ElemType::Int8) => {
                return Err(bad(
                    "the board's MXU is int8: A and B must be int8 .npy files".into(),
                ))
            }
        };
    if stats {
        let s = client.stats();
        println!(
            "{{\"m\":{m},\"n\":{n},\"commands\":{},\"bytes_sent\":{},\"bytes_received\":{},\"seconds\":{:.3}}}",
            s.commands,
            s.bytes_sent,
            s.bytes_received,
            start.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

fn mlp(
    link: &Link,
    model: &std::path::Path,
    x: &std::path::Path,
    out: &std::path::Path,
    stats: bool,
) -> Result<(), Failure> {
    // The model and X are read and checked before the port is opened.
    let mlp = compiler::load_model(model).map_err(bad)?;
    let xm: Matrix<i8> = matrix::read(x, "X").map_err(bad)?;
    if xm.cols != mlp.inputs() {
        return Err(bad(format!(
            "X: {} is {}x{} but w1 takes {} inputs",
            x.display(),
            xm.rows,
            xm.cols,
            mlp.inputs()
        )));
    }
    if xm.rows == 0 {
        return Err(bad(format!("X: {} has no rows", x.display())));
    }
    let mut client = connect(link)?;
    let start = Instant::now();
    let run = client.run_mlp(&mlp, &xm.data, xm.rows)?;
    matrix::write(
        out,
        &Matrix {
            rows: xm.rows,
            cols: mlp.outputs(),
            data: run.logits,
        },
    )
    .map_err(|e| Failure(1, e))?;
    if stats {
        let k = run.counters;
        let cycles = k.cycles();
        let s = client.stats();
        println!(
            "{{\"op\":\"mlp\",\"backend\":\"board\",\"batch\":{},\"runs\":{},\"block_rows\":{},\"cycles\":{cycles},\"mxu_busy\":{},\"mxu_busy_cycles\":{},\"stall_weights\":{},\"stall_ub\":{},\"stall_vpu\":{},\"host\":{},\"issue\":{},\"sync\":{},\"instructions\":{},\"act_rows\":{},\"act_drain\":{},\"commands\":{},\"bytes_sent\":{},\"bytes_received\":{},\"seconds\":{:.3}}}",
            xm.rows,
            run.runs,
            run.block,
            if cycles == 0 { 0.0 } else { k.mxu_busy as f64 / cycles as f64 },
            k.mxu_busy,
            k.stall_weights,
            k.stall_ub,
            k.stall_vpu,
            k.host,
            k.issue,
            k.sync,
            k.instructions,
            k.act_rows,
            k.act_drain,
            s.commands,
            s.bytes_sent,
            s.bytes_received,
            start.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

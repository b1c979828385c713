//! The run CLI: matrix multiplications on the RTL (Verilated) or the golden model.
//!
//! ```text
//! cargo run --release -p sim -- matmul --dtype int8 --a A.npy --b B.npy --out C.npy \
//!     [--rows R --cols C] [--acc-rows N] [--golden] [--stats]
//! cargo run --release -p sim -- vpu --op OP --a A.npy [--b B.npy] [--mask M.npy] \
//!     [--mult M --shift S --zp Z] --out C.npy [--lanes L --sublanes S] [--golden] [--stats]
//! cargo run --release -p sim -- mlp --model DIR --x X.npy --out LOGITS.npy \
//!     [--rows R --cols C] [--golden] [--stats]
//! ```
//!
//! The commands live in [`cli`], one module per subcommand.

mod cli;

fn main() -> std::process::ExitCode {
    // A closed stdout pipe (`... | head`) ends the tool quietly, as it ends
    // other command-line tools, instead of a panic in `println!`.
    #[cfg(unix)]
    // SAFETY: restoring a signal's default action before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    cli::main()
}

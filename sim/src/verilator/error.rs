//! Errors of model building and port lookup. Each displays as one line; build failures also
//! name the log file that holds the full tool output.

use std::fmt;
use std::io;
use std::path::PathBuf;

#[derive(Debug)]
#[non_exhaustive]
pub enum SimError {
    /// The spec cannot be built as given (bad names, missing clock, no Verilog file, ...).
    InvalidSpec(String),
    /// A required tool (Verilator, the C++ compiler) is missing or unusable.
    Toolchain(String),
    /// Verilator rejected the design.
    Verilator { summary: String, log: PathBuf },
    /// The spec's port list differs from the Verilated top module.
    PortMismatch { summary: String, log: PathBuf },
    /// The C++ compiler or linker failed.
    Compile { summary: String, log: PathBuf },
    /// The built shared library could not be loaded or lacks a shim symbol.
    Load { path: PathBuf, reason: String },
    /// The model could not be constructed (e.g. the waveform file could not be opened).
    Instantiate(String),
    /// No port of that name on the model.
    UnknownPort { top: String, port: String },
    /// File-system trouble around the cache or build folders.
    Io { context: String, source: io::Error },
}

impl SimError {
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Self {
        SimError::Io {
            context: context.into(),
            source,
        }
    }
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::InvalidSpec(msg) => write!(f, "invalid model spec: {msg}"),
            SimError::Toolchain(msg) => write!(f, "toolchain: {msg}"),
            SimError::Verilator { summary, log } => {
                write!(f, "verilator failed: {summary} (log: {})", log.display())
            }
            SimError::PortMismatch { summary, log } => {
                write!(f, "port list mismatch: {summary} (log: {})", log.display())
            }
            SimError::Compile { summary, log } => {
                write!(f, "C++ build failed: {summary} (log: {})", log.display())
            }
            SimError::Load { path, reason } => {
                write!(f, "cannot load model {}: {reason}", path.display())
            }
            SimError::Instantiate(msg) => write!(f, "cannot instantiate model: {msg}"),
            SimError::UnknownPort { top, port } => write!(f, "module {top} has no port {port}"),
            SimError::Io { context, source } => write!(f, "{context}: {source}"),
        }
    }
}

impl std::error::Error for SimError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SimError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

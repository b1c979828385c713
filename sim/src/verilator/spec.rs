//! What a model is built from: Verilog sources, the top module and its ports.

use super::SimError;
use std::collections::HashSet;

/// Direction of a top-level port, seen from the design.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PortDir {
    Input,
    Output,
}

impl PortDir {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            PortDir::Input => "input",
            PortDir::Output => "output",
        }
    }
}

/// One top-level port of the design.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PortSpec {
    pub name: String,
    pub width: u32,
    pub dir: PortDir,
}

impl PortSpec {
    pub fn input(name: impl Into<String>, width: u32) -> Self {
        Self {
            name: name.into(),
            width,
            dir: PortDir::Input,
        }
    }

    pub fn output(name: impl Into<String>, width: u32) -> Self {
        Self {
            name: name.into(),
            width,
            dir: PortDir::Output,
        }
    }

    /// Number of 32-bit words that hold the port's value.
    pub fn words(&self) -> usize {
        self.width.div_ceil(32) as usize
    }
}

/// Everything a Verilated model is built from. Two equal specs share one cached build.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ModelSpec {
    /// Name of the top module.
    pub top: String,
    /// `(file name, contents)` pairs, written side by side into the build folder. Files ending
    /// in `.v`, `.sv` or `.vlt` are passed to Verilator (`.vlt` files are its waiver/config
    /// files); other files (e.g. `` `include`` headers) are only written.
    pub sources: Vec<(String, String)>,
    /// Every top-level port, including the clock and reset. Checked against the Verilated
    /// top: a missing, extra or differently sized port is an error.
    pub ports: Vec<PortSpec>,
    /// The 1-bit input toggled by [`Model::step`](super::Model::step), normally `clk_i`.
    /// `None` for purely combinational designs.
    pub clock: Option<String>,
    /// Extra Verilator arguments, e.g. `-GWIDTH=8`. Verilator runs inside the folder holding
    /// the sources, so file names among `sources` can be referred to directly. Verilator's
    /// warnings stop the build unless waived (in a `.vlt` file or with `-Wno-...`).
    pub verilator_args: Vec<String>,
}

impl ModelSpec {
    /// An empty spec for top module `top`; fill it with the builder methods or the fields.
    pub fn new(top: impl Into<String>) -> Self {
        Self {
            top: top.into(),
            ..Self::default()
        }
    }

    pub fn source(mut self, file_name: impl Into<String>, text: impl Into<String>) -> Self {
        self.sources.push((file_name.into(), text.into()));
        self
    }

    pub fn input(mut self, name: impl Into<String>, width: u32) -> Self {
        self.ports.push(PortSpec::input(name, width));
        self
    }

    pub fn output(mut self, name: impl Into<String>, width: u32) -> Self {
        self.ports.push(PortSpec::output(name, width));
        self
    }

    /// Declares `name` as a 1-bit input port and as the clock.
    pub fn clock(mut self, name: impl Into<String>) -> Self {
        let name = name.into();
        self.ports.push(PortSpec::input(name.clone(), 1));
        self.clock = Some(name);
        self
    }

    pub fn verilator_arg(mut self, arg: impl Into<String>) -> Self {
        self.verilator_args.push(arg.into());
        self
    }

    /// Files handed to Verilator on its command line, in spec order.
    pub(crate) fn verilator_inputs(&self) -> impl Iterator<Item = &str> {
        self.sources
            .iter()
            .map(|(name, _)| name.as_str())
            .filter(|name| [".v", ".sv", ".vlt"].iter().any(|ext| name.ends_with(ext)))
    }

    /// The thread count asked for with `--threads N` / `--threads=N` (also
    /// spelled with one dash), if any; 0 for a value that is not a number.
    fn thread_count(&self) -> Option<u32> {
        let args = &self.verilator_args;
        args.iter().enumerate().find_map(|(i, arg)| {
            let name = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-'))?;
            if name == "threads" {
                Some(args.get(i + 1).and_then(|v| v.parse().ok()).unwrap_or(0))
            } else {
                name.strip_prefix("threads=")
                    .map(|v| v.parse().unwrap_or(0))
            }
        })
    }

    /// Rejects specs that cannot be built or would inject text into the generated C++,
    /// and multithreaded models (see [`Model`](super::Model)'s `Send`).
    pub(crate) fn validate(&self) -> Result<(), SimError> {
        let invalid = |msg: String| Err(SimError::InvalidSpec(msg));
        if !is_identifier(&self.top) {
            return invalid(format!(
                "top module name {:?} is not a plain identifier",
                self.top
            ));
        }
        let mut files = HashSet::new();
        for (name, _) in &self.sources {
            let plain = !name.is_empty()
                && name != "."
                && name != ".."
                && !name.contains(['/', '\\', '\0']);
            if !plain {
                return invalid(format!(
                    "source file name {name:?} must be a plain file name"
                ));
            }
            if !files.insert(name.as_str()) {
                return invalid(format!("source file {name:?} is listed twice"));
            }
        }
        if self.verilator_inputs().next().is_none() {
            return invalid("no .v or .sv source file".into());
        }
        let mut names = HashSet::new();
        for port in &self.ports {
            if !is_identifier(&port.name) {
                return invalid(format!(
                    "port name {:?} is not a plain identifier",
                    port.name
                ));
            }
            if port.width == 0 || port.width > MAX_PORT_WIDTH {
                return invalid(format!(
                    "port {} has width {} (allowed 1..={MAX_PORT_WIDTH})",
                    port.name, port.width
                ));
            }
            if !names.insert(port.name.as_str()) {
                return invalid(format!("port {} is listed twice", port.name));
            }
        }
        if let Some(n) = self.thread_count().filter(|&n| n != 1) {
            return invalid(format!(
                "--threads {n}: multithreaded models are refused. Model is Send on the \
                 ground that a model keeps no thread affinity, which Verilator's worker \
                 threads would break; and on two cores they ran slower (bf16 32x32: \
                 1.9 k against 7.0 k cycles/s with --threads 2, Verilator 5.048)"
            ));
        }
        if let Some(clock) = &self.clock {
            match self.ports.iter().find(|p| &p.name == clock) {
                Some(p) if p.dir == PortDir::Input && p.width == 1 => {}
                Some(_) => return invalid(format!("clock {clock} must be a 1-bit input")),
                None => return invalid(format!("clock {clock} is not among the ports")),
            }
        }
        Ok(())
    }
}

/// Widest port accepted; far beyond anything the accelerator needs, small enough that word
/// counts stay trivially in range.
pub const MAX_PORT_WIDTH: u32 = 1 << 16;

/// A C and Verilog identifier without escapes: `[A-Za-z_][A-Za-z0-9_]*`.
pub(crate) fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counter() -> ModelSpec {
        ModelSpec::new("counter")
            .source("counter.v", "module counter; endmodule")
            .clock("clk_i")
            .output("count_o", 8)
    }

    #[test]
    fn accepts_a_plain_spec() {
        counter().validate().unwrap();
    }

    #[test]
    fn rejects_bad_names_and_clocks() {
        let bad = [
            ModelSpec {
                top: "a b".into(),
                ..counter()
            },
            counter().source("../x.v", ""),
            counter().source("counter.v", ""),
            counter().output("count_o", 3),
            counter().output("x;y", 3),
            counter().output("zero", 0),
            ModelSpec {
                clock: Some("count_o".into()),
                ..counter()
            },
            ModelSpec {
                clock: Some("nope".into()),
                ..counter()
            },
            ModelSpec::new("t").source("t.vh", ""),
            counter().verilator_arg("--threads").verilator_arg("2"),
            counter().verilator_arg("-threads").verilator_arg("4"),
            counter().verilator_arg("--threads=2"),
        ];
        for spec in bad {
            assert!(
                matches!(spec.validate(), Err(SimError::InvalidSpec(_))),
                "{spec:?}"
            );
        }
    }

    #[test]
    fn one_thread_is_accepted() {
        let spec = counter().verilator_arg("--threads").verilator_arg("1");
        assert_eq!(spec.thread_count(), Some(1));
        spec.validate().unwrap();
        assert_eq!(counter().thread_count(), None);
    }

    #[test]
    fn identifiers() {
        assert!(is_identifier("clk_i"));
        assert!(is_identifier("_x9"));
        assert!(!is_identifier("9x"));
        assert!(!is_identifier(""));
        assert!(!is_identifier("a.b"));
    }
}

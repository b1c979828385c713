//! Reading Verilator's generated files: the top class header (for the real port list) and the
//! `_classes.mk` make fragment (for which C++ files to compile, and how hard to optimise them).

use super::spec::{PortDir, PortSpec};

/// Ports declared in `V<top>.h` by lines such as `VL_IN8(&a_i,7,0);` or
/// `VL_OUTW(&y_o,127,0,4);`, plus the names of inout ports, which the harness cannot drive.
pub(crate) fn header_ports(header: &str) -> (Vec<PortSpec>, Vec<String>) {
    let mut ports = Vec::new();
    let mut inouts = Vec::new();
    for line in header.lines() {
        let line = line.trim();
        let Some(rest) = line.strip_prefix("VL_") else {
            continue;
        };
        let (kind, rest) = match rest.split_once('(') {
            Some(split) => split,
            None => continue,
        };
        let dir = if kind.starts_with("INOUT") {
            None
        } else if kind.starts_with("IN") {
            Some(PortDir::Input)
        } else if kind.starts_with("OUT") {
            Some(PortDir::Output)
        } else {
            continue;
        };
        if !matches!(
            kind.trim_start_matches("INOUT")
                .trim_start_matches("IN")
                .trim_start_matches("OUT"),
            "" | "8" | "16" | "64" | "W"
        ) {
            continue;
        }
        let Some(args) = rest.strip_suffix(");") else {
            continue;
        };
        let mut fields = args.split(',').map(str::trim);
        let (Some(name), Some(msb), Some(lsb)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let Some(name) = name.strip_prefix('&') else {
            continue;
        };
        let (Ok(msb), Ok(lsb)) = (msb.parse::<i64>(), lsb.parse::<i64>()) else {
            continue;
        };
        match dir {
            Some(dir) => ports.push(PortSpec {
                name: name.to_string(),
                width: (msb - lsb).unsigned_abs() as u32 + 1,
                dir,
            }),
            None => inouts.push(name.to_string()),
        }
    }
    (ports, inouts)
}

/// C++ files of a Verilated model, split by how Verilator wants them optimised.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ClassFiles {
    /// Per-cycle code (`VM_CLASSES_FAST`, `VM_SUPPORT_FAST`): compiled with optimisation.
    pub fast: Vec<String>,
    /// Construction, initialisation and trace declarations (`*_SLOW`): run once.
    pub slow: Vec<String>,
    /// Verilator runtime files the model needs (`VM_GLOBAL_*`), e.g. `verilated`.
    pub global: Vec<String>,
}

/// Parses the `VAR += \` blocks of `V<top>_classes.mk`.
pub(crate) fn class_files(mk: &str) -> ClassFiles {
    let mut files = ClassFiles::default();
    let mut current: Option<&mut Vec<String>> = None;
    for line in mk.lines() {
        if let Some((var, rest)) = line.split_once("+=") {
            if rest.trim() == "\\" {
                current = match var.trim() {
                    "VM_CLASSES_FAST" | "VM_SUPPORT_FAST" => Some(&mut files.fast),
                    "VM_CLASSES_SLOW" | "VM_SUPPORT_SLOW" => Some(&mut files.slow),
                    "VM_GLOBAL_FAST" | "VM_GLOBAL_SLOW" => Some(&mut files.global),
                    _ => None,
                };
                continue;
            }
        }
        match (&mut current, line.trim().strip_suffix('\\')) {
            (Some(list), Some(item)) if line.starts_with(char::is_whitespace) => {
                let item = item.trim();
                if !item.is_empty() {
                    list.push(item.to_string());
                }
            }
            _ => current = None,
        }
    }
    files.global.sort();
    files.global.dedup();
    files
}

/// Differences between the spec's ports and the Verilated ones, as one line; `None` if equal.
pub(crate) fn port_mismatch(
    spec: &[PortSpec],
    actual: &[PortSpec],
    inouts: &[String],
) -> Option<String> {
    let describe = |p: &PortSpec| format!("{} ({} {})", p.name, p.dir.as_str(), p.width);
    let mut problems = Vec::new();
    for want in spec {
        match actual.iter().find(|p| p.name == want.name) {
            None => problems.push(format!("no Verilog port {}", describe(want))),
            Some(got) if got != want => problems.push(format!(
                "spec says {} but Verilog has {}",
                describe(want),
                describe(got)
            )),
            Some(_) => {}
        }
    }
    for got in actual {
        if !spec.iter().any(|p| p.name == got.name) {
            problems.push(format!("port {} missing from spec", describe(got)));
        }
    }
    for name in inouts {
        problems.push(format!("inout port {name} is not supported"));
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "
class alignas(VL_CACHE_LINE_BYTES) Vadder VL_NOT_FINAL : public VerilatedModel {
  public:
    VL_IN8(&a1_i,0,0);
    VL_IN16(&a16_i,15,0);
    VL_IN(&a32_i,31,0);
    VL_IN64(&a64_i,63,0);
    VL_INW(&a65_i,64,0,3);
    VL_OUT8(&y8_o,8,1);
    VL_OUTW(&y128_o,127,0,4);
    VL_INOUT8(&bidir,3,0);
    Vadder___024root* const rootp;
";

    #[test]
    fn reads_header_ports() {
        let (ports, inouts) = header_ports(HEADER);
        let want = [
            PortSpec::input("a1_i", 1),
            PortSpec::input("a16_i", 16),
            PortSpec::input("a32_i", 32),
            PortSpec::input("a64_i", 64),
            PortSpec::input("a65_i", 65),
            PortSpec::output("y8_o", 8),
            PortSpec::output("y128_o", 128),
        ];
        assert_eq!(ports, want);
        assert_eq!(inouts, ["bidir"]);
    }

    #[test]
    fn reports_port_differences() {
        let actual = [PortSpec::input("a", 8), PortSpec::output("b", 4)];
        assert_eq!(port_mismatch(&actual, &actual, &[]), None);
        let spec = [PortSpec::input("a", 9), PortSpec::output("c", 1)];
        let msg = port_mismatch(&spec, &actual, &[]).unwrap();
        assert!(
            msg.contains("spec says a (input 9) but Verilog has a (input 8)"),
            "{msg}"
        );
        assert!(msg.contains("no Verilog port c (output 1)"), "{msg}");
        assert!(msg.contains("port b (output 4) missing from spec"), "{msg}");
    }

    #[test]
    fn reads_class_lists() {
        let mk = "
### Switches...
VM_TRACE = 1

VM_CLASSES_FAST += \\
\tVadder \\
\tVadder___024root__DepSet_h92c160b8__0 \\

VM_CLASSES_SLOW += \\
\tVadder___024root__Slow \\

VM_SUPPORT_FAST += \\
\tVadder__Trace__0 \\

VM_SUPPORT_SLOW += \\
\tVadder__Syms \\

VM_GLOBAL_FAST += \\
\tverilated \\
\tverilated_vcd_c \\
\tverilated_threads \\

VM_GLOBAL_SLOW += \\


# Verilated -*- Makefile -*-
";
        let files = class_files(mk);
        assert_eq!(
            files.fast,
            [
                "Vadder",
                "Vadder___024root__DepSet_h92c160b8__0",
                "Vadder__Trace__0"
            ]
        );
        assert_eq!(files.slow, ["Vadder___024root__Slow", "Vadder__Syms"]);
        assert_eq!(
            files.global,
            ["verilated", "verilated_threads", "verilated_vcd_c"]
        );
    }
}

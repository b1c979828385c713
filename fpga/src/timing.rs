//! The critical path of a placed and routed design, read from nextpnr's log.
//!
//! nextpnr (nextpnr-ice40 0.4 and YoWASP nextpnr-ecp5 0.11 alike) ends its
//! log with a "Critical path report for clock '...'" per clock: the path's
//! cells and nets, one `Source` / `Net` / `Sink` line each, ending at the
//! `Setup` of the capturing cell, then a "N ns logic, M ns routing" line. The
//! flows keep the report of `clk_i` (the harness's only clock): where the
//! path starts and ends, as nextpnr names the cells and as the design's
//! hierarchy names them, and how its delay splits.

use serde::{Deserialize, Serialize};

/// One end of a critical path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathEnd {
    /// The cell as nextpnr prints it (`block.g_pe_row[3].g_pe_col[0].pe.psum_d_SB_LUT4_O_7_LC`).
    pub cell: String,
    /// The net leaving the start cell or entering the end cell.
    pub net: Option<String>,
    /// The signal in the design's hierarchy the cell belongs to: the path
    /// inside the block (`g_pe_row[3].g_pe_col[0].pe.psum_d`), or under
    /// `fpga_top.` for the harness's own cells.
    pub signal: String,
}

/// The longest register-to-register path of `clk_i`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CriticalPath {
    /// The clock as nextpnr names it, with its edges (`clk_i$SB_IO_IN_$glb_clk (posedge -> posedge)`).
    pub clock: String,
    pub from: PathEnd,
    pub to: PathEnd,
    /// The path's delay through cells and through routing, when nextpnr
    /// gives the split.
    pub logic_ns: Option<f64>,
    pub routing_ns: Option<f64>,
    /// The arrival time at the end's setup check (the path's last "total").
    pub total_ns: Option<f64>,
}

impl CriticalPath {
    /// One line for a table: `from -> to (L ns logic, R ns routing)`.
    pub fn summary(&self) -> String {
        let split = match (self.logic_ns, self.routing_ns) {
            (Some(l), Some(r)) => format!(" ({l:.1} ns logic, {r:.1} ns routing)"),
            _ => match self.total_ns {
                Some(t) => format!(" ({t:.1} ns)"),
                None => String::new(),
            },
        };
        format!("{} -> {}{split}", self.from.signal, self.to.signal)
    }
}

/// The instance name of the block in the harness (`harness.rs`).
const BLOCK_INSTANCE: &str = "block.";

/// The signal of the design a nextpnr cell name belongs to. Yosys names a
/// mapped cell after the net it drives plus the cell types and ports it went
/// through (`psum_d_SB_LUT4_O_7_LC`, `acc_q_TRELLIS_FF_Q`): the design's
/// names are lower case, the technology's upper case, so the signal ends
/// before the first `_` followed by an upper-case letter, or at a `$` of a
/// name Yosys made up (then the instance it is in stands for it). A name
/// with nothing before that stays whole.
pub fn signal_of(cell: &str) -> String {
    let (scope, inner) = match cell.strip_prefix(BLOCK_INSTANCE) {
        Some(rest) => ("", rest),
        None => (crate::harness::TOP, cell),
    };
    let bytes = inner.as_bytes();
    let mut cut = inner.len();
    for (i, &b) in bytes.iter().enumerate() {
        let tech_suffix = b == b'_' && bytes.get(i + 1).is_some_and(u8::is_ascii_uppercase);
        if tech_suffix || b == b'$' {
            cut = i;
            break;
        }
    }
    let mut signal = inner[..cut].trim_end_matches('.').to_string();
    if signal.is_empty() {
        signal = inner.to_string();
    }
    if scope.is_empty() {
        signal
    } else {
        format!("{scope}.{signal}")
    }
}

/// The cell of a `cell.PIN` name (nextpnr prints cell pins that way).
fn cell_of(pin: &str) -> &str {
    pin.rsplit_once('.').map_or(pin, |(cell, _)| cell)
}

/// The name following `keyword` on a report line, e.g. the cell pin after
/// `Source`, and the last number before it (the running total).
fn after_keyword<'a>(line: &'a str, keyword: &str) -> Option<(&'a str, Option<f64>)> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| *w == keyword)?;
    let name = words.get(at + 1)?;
    let total = words[..at].iter().rev().find_map(|w| w.parse::<f64>().ok());
    Some((name, total))
}

/// The critical path of the clock whose name contains `clk_i`, from a
/// nextpnr log (the last report of that clock if the log has several), or
/// `None` if the log has none.
pub fn parse_critical_path(log: &str) -> Option<CriticalPath> {
    let mut found = None;
    let mut lines = log.lines();
    while let Some(line) = lines.next() {
        let Some(rest) = line.split("Critical path report for clock '").nth(1) else {
            continue;
        };
        let Some((clock, edges)) = rest.split_once('\'') else {
            continue;
        };
        if !clock.contains("clk_i") {
            continue;
        }
        let mut path = PathLines::default();
        for line in lines.by_ref() {
            let text = line.trim_start_matches("Info:").trim();
            if text.is_empty() {
                break;
            }
            if let Some((l, r)) = logic_and_routing(text) {
                path.logic_routing = Some((l, r));
                break;
            }
            path.take(text);
        }
        let edges = edges.trim().trim_end_matches(':').trim();
        found = path.finish(format!("{clock} {edges}").trim()).or(found);
    }
    found
}

/// "17.1 ns logic, 22.0 ns routing".
fn logic_and_routing(text: &str) -> Option<(f64, f64)> {
    let (logic, routing) = text.split_once(" ns logic, ")?;
    let routing = routing.strip_suffix(" ns routing")?;
    Some((logic.trim().parse().ok()?, routing.trim().parse().ok()?))
}

/// The lines of one report that name the path's ends.
#[derive(Default)]
struct PathLines {
    first_source: Option<String>,
    first_net: Option<String>,
    last_net: Option<String>,
    last_sink: Option<String>,
    setup: Option<String>,
    total: Option<f64>,
    logic_routing: Option<(f64, f64)>,
}

impl PathLines {
    fn take(&mut self, text: &str) {
        // nextpnr 0.11 states each step's type first and names the setup
        // check's cell with `Source`; nextpnr 0.4 writes `Setup`.
        let setup_step = text
            .split_whitespace()
            .next()
            .is_some_and(|w| w.eq_ignore_ascii_case("setup"));
        if let Some((pin, total)) = after_keyword(text, "Source").filter(|_| setup_step) {
            self.setup = Some(pin.to_string());
            self.total = total;
        } else if let Some((pin, _)) = after_keyword(text, "Source") {
            self.first_source.get_or_insert_with(|| pin.to_string());
        } else if let Some((net, _)) = after_keyword(text, "Net") {
            self.first_net.get_or_insert_with(|| net.to_string());
            self.last_net = Some(net.to_string());
        } else if let Some((pin, _)) = after_keyword(text, "Sink") {
            self.last_sink = Some(pin.to_string());
        } else if let Some((pin, total)) = after_keyword(text, "Setup") {
            self.setup = Some(pin.to_string());
            self.total = total;
        }
    }

    fn finish(self, clock: &str) -> Option<CriticalPath> {
        let start = cell_of(self.first_source.as_deref()?).to_string();
        let end = cell_of(self.setup.as_deref().or(self.last_sink.as_deref())?).to_string();
        Some(CriticalPath {
            clock: clock.to_string(),
            from: PathEnd {
                signal: signal_of(&start),
                cell: start,
                net: self.first_net,
            },
            to: PathEnd {
                signal: signal_of(&end),
                cell: end,
                net: self.last_net,
            },
            logic_ns: self.logic_routing.map(|(l, _)| l),
            routing_ns: self.logic_routing.map(|(_, r)| r),
            total_ns: self.total,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_drop_the_technology_suffix_and_the_block_instance() {
        for (cell, signal) in [
            (
                "block.g_pe_row[3].g_pe_col[0].pe.psum_d_SB_LUT4_O_7_LC",
                "g_pe_row[3].g_pe_col[0].pe.psum_d",
            ),
            ("block.first_wave_q[3]_SB_DFFSR_Q_DFFLC", "first_wave_q[3]"),
            ("in_q_SB_DFF_Q_12_DFFLC", "fpga_top.in_q"),
            ("block.$abc$123$auto$blifparse", "$abc$123$auto$blifparse"),
            ("block.u.$auto$x", "u"),
        ] {
            assert_eq!(signal_of(cell), signal, "{cell}");
        }
    }

    #[test]
    fn reads_the_clk_i_path_of_nextpnr_ice40() {
        let log = include_str!("../tests/data/nextpnr-ice40-up5k-mxu-int8-4x4.log");
        let p = parse_critical_path(log).unwrap();
        assert_eq!(p.clock, "clk_i$SB_IO_IN_$glb_clk (posedge -> posedge)");
        assert_eq!(p.from.cell, "block.first_wave_q[3]_SB_DFFSR_Q_DFFLC");
        assert_eq!(p.from.net.as_deref(), Some("block.first[3]"));
        assert_eq!(p.from.signal, "first_wave_q[3]");
        assert_eq!(
            p.to.cell,
            "block.g_pe_row[3].g_pe_col[0].pe.psum_d_SB_LUT4_O_7_LC"
        );
        assert_eq!(
            p.to.net.as_deref(),
            Some("block.g_pe_row[3].g_pe_col[0].pe.psum_d_SB_LUT4_O_I3[31]")
        );
        assert_eq!(p.to.signal, "g_pe_row[3].g_pe_col[0].pe.psum_d");
        assert_eq!((p.logic_ns, p.routing_ns), (Some(17.1), Some(22.0)));
        assert_eq!(p.total_ns, Some(39.1));
        assert_eq!(
            p.summary(),
            "first_wave_q[3] -> g_pe_row[3].g_pe_col[0].pe.psum_d (17.1 ns logic, 22.0 ns routing)"
        );
    }

    #[test]
    fn reads_the_clk_i_path_of_nextpnr_ecp5() {
        let log = include_str!("../tests/data/nextpnr-ecp5-25f-mxu-int8-2x2.log");
        let p = parse_critical_path(log).unwrap();
        assert_eq!(p.clock, "$glbnet$clk_i$TRELLIS_IO_IN (posedge -> posedge)");
        // A block RAM of the accumulator memory to a flip-flop fed by the
        // carry chain of its read-modify-write adder.
        assert_eq!(p.from.cell, "block.acc.1.0");
        assert_eq!(p.from.net.as_deref(), Some("block.acc.1.0_DOB14[1]"));
        assert_eq!(p.from.signal, "acc.1.0");
        assert!(
            p.to.cell.ends_with("_S1_LUT4_D_Z_TRELLIS_FF_DI"),
            "{}",
            p.to.cell
        );
        assert!(p.to.net.as_deref().unwrap().ends_with("_S1_LUT4_D_Z"));
        assert_eq!(p.to.signal, "acc.1.1");
        assert_eq!((p.logic_ns, p.routing_ns), (Some(8.15), Some(4.55)));
        assert_eq!(p.total_ns, Some(12.70));
    }

    #[test]
    fn no_report_of_clk_i_is_none() {
        assert_eq!(parse_critical_path(""), None);
        let other = "Info: Critical path report for clock 'other' (posedge -> posedge):\n\
                     Info:  1.0  1.0  Source a_SB_DFF.O\n\
                     Info:  1.0  2.0  Setup b_SB_DFF.D\n\
                     Info: 1.0 ns logic, 1.0 ns routing\n";
        assert_eq!(parse_critical_path(other), None);
        assert!(parse_critical_path(&other.replace("other", "clk_i")).is_some());
    }
}

//! Puts flip-flops into the ECP5 DSP blocks' own registers.
//!
//! Yosys maps an ECP5 multiply to a `MULT18X18D` but leaves its operand and
//! product registers in the fabric (`synth_ecp5` has no pass like the
//! iCE40's `ice40_dsp`; docs/hw.md). A multiplier placed in a DSP column far
//! from its registers then pays two long routes inside one clock period:
//! register to block, and block to register. `MULT18X18D` has input
//! registers for A and B and an output register for P, and nextpnr-ecp5
//! times a block that uses them from register to register (its timing
//! classes `REGS_INPUT`, `REGS_OUTPUT`, `REGS_ALL`). This pass, run on the
//! synthesised netlist (Yosys JSON) before place and route, moves those
//! registers into the block where that changes no value:
//!
//! - **Operands.** Every bit of A (and of B) is a constant or the output of
//!   a plain flip-flop (`TRELLIS_FF`: clocked on the rising edge, no enable,
//!   no set or reset), all on one clock, each loaded from a constant or from
//!   another flip-flop (one loaded from logic stays beside that logic: moved,
//!   the logic and the route to the block would be one path). The block then
//!   takes each flip-flop's input and registers it itself on that clock; a
//!   flip-flop left with no other load is removed. Both operands are packed or neither (nextpnr
//!   times a block with one registered operand as unregistered).
//! - **Product.** Every used bit of P drives exactly one load, the input of
//!   a plain flip-flop on the same clock (the operands' clock if they are
//!   packed). The block's output register takes over each flip-flop's output
//!   net, and the flip-flops are removed.
//!
//! A block's registers then run on `CLK0` with `CE0` tied high and `RST0`
//! tied low, so they load every cycle and never reset, as the flip-flops
//! they replace did. Two differences remain, both before the first clock
//! edge after configuration: a constant operand bit reads through a register
//! that starts at 0, and the block's registers start at 0 where a plain
//! flip-flop starts at its `REGSET` value (0 for the flip-flops taken here,
//! which the pass requires). The flows' designs are reset before they are
//! used, so neither is visible.
//!
//! Nothing else changes: cells other than the packed flip-flops and the
//! blocks' parameters and clock pins are left as Yosys wrote them.

use crate::parts::{Family, Part};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

/// What the pass did to one netlist.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Packed {
    /// `MULT18X18D` blocks in the netlist.
    pub dsps: u64,
    /// Blocks whose operands are now registered inside.
    pub inputs: u64,
    /// Blocks whose product is now registered inside.
    pub outputs: u64,
    /// Fabric flip-flops removed.
    pub removed_ffs: u64,
}

/// A bit of a net in Yosys JSON: a net number or a constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Bit {
    Net(u64),
    Const(char),
}

fn bit_of(v: &Value) -> Result<Bit, String> {
    match v {
        Value::Number(n) => n
            .as_u64()
            .map(Bit::Net)
            .ok_or_else(|| format!("bad net number {n}")),
        Value::String(s) if s.len() == 1 => Ok(Bit::Const(s.chars().next().unwrap())),
        other => Err(format!("bad bit {other}")),
    }
}

fn value_of(bit: Bit) -> Value {
    match bit {
        Bit::Net(n) => Value::from(n),
        Bit::Const(c) => Value::from(c.to_string()),
    }
}

/// A Yosys string parameter as written (a string that could read as bits
/// carries a trailing space).
fn param<'a>(cell: &'a Value, name: &str) -> Option<&'a str> {
    cell.get("parameters")?
        .get(name)?
        .as_str()
        .map(|s| s.trim_end_matches(' '))
}

/// The bit on a one-bit port of `cell`, if it is connected.
fn single(cell: &Value, port: &str) -> Option<Bit> {
    match cell.get("connections")?.get(port)?.as_array()?.as_slice() {
        [bit] => bit_of(bit).ok(),
        _ => None,
    }
}

/// A plain flip-flop: its clock, data input and output, and its `GSR`.
#[derive(Debug, Clone)]
struct PlainFf {
    clock: Bit,
    d: Bit,
    q: Bit,
    gsr: String,
}

/// `cell` as a plain rising-edge flip-flop without enable, set or reset, or
/// `None`.
fn plain_ff(cell: &Value) -> Option<PlainFf> {
    if cell.get("type")?.as_str()? != "TRELLIS_FF" {
        return None;
    }
    let ok = param(cell, "CLKMUX") == Some("CLK")
        && param(cell, "CEMUX") == Some("1")
        && param(cell, "REGSET").unwrap_or("RESET") == "RESET"
        && single(cell, "LSR").is_none_or(|b| b == Bit::Const('0'))
        && single(cell, "M").is_none_or(|b| matches!(b, Bit::Const(_)));
    if !ok {
        return None;
    }
    let clock = single(cell, "CLK")?;
    if !matches!(clock, Bit::Net(_)) {
        return None;
    }
    Some(PlainFf {
        clock,
        d: single(cell, "DI")?,
        q: single(cell, "Q")?,
        gsr: param(cell, "GSR").unwrap_or("ENABLED").to_string(),
    })
}

/// How many loads each net bit has: cell input (and inout) pins, and the
/// module's output ports.
struct Loads {
    count: HashMap<Bit, u64>,
}

impl Loads {
    fn add(&mut self, bit: Bit, n: i64) {
        let c = self.count.entry(bit).or_insert(0);
        *c = c.checked_add_signed(n).expect("load count below zero");
    }
    fn of(&self, bit: Bit) -> u64 {
        self.count.get(&bit).copied().unwrap_or(0)
    }
}

/// The block's operand ports (18 bits each).
const OPERANDS: [&str; 2] = ["A", "B"];

/// Moves registers into the `MULT18X18D` blocks of module `top` of the Yosys
/// JSON `netlist`; returns the new netlist and what changed.
pub fn pack(netlist: &str, top: &str) -> Result<(String, Packed), String> {
    let mut json: Value =
        serde_json::from_str(netlist).map_err(|e| format!("netlist is not JSON: {e}"))?;
    let module = json
        .get_mut("modules")
        .and_then(|m| m.get_mut(top))
        .ok_or_else(|| format!("netlist has no module {top}"))?;
    let packed = pack_module(module)?;
    let text = serde_json::to_string(&json).map_err(|e| e.to_string())?;
    Ok((text, packed))
}

/// The pass's version, part of the flows' record keys: a change to what it
/// does reruns the ECP5 flows.
pub const VERSION: &str = "dsp-registers 2";

/// Whether the flows for `part` run the pass: ECP5, placed and routed.
pub fn applies_to(part: &Part) -> bool {
    part.family == Family::Ecp5 && part.has_pnr()
}

/// The netlist nextpnr-ecp5 reads, written beside Yosys' `synth.json`.
pub const PACKED_NETLIST: &str = "packed.json";

/// Packs `dir/synth.json` (top module `top`) into `dir/packed.json`.
pub fn pack_file(dir: &Path, top: &str) -> Result<Packed, String> {
    let from = dir.join("synth.json");
    let text = std::fs::read_to_string(&from)
        .map_err(|e| format!("cannot read {}: {e}", from.display()))?;
    let (packed_text, packed) = pack(&text, top)?;
    let to = dir.join(PACKED_NETLIST);
    // Written whole under another name first: a stopped run leaves no half file.
    let tmp = dir.join(format!("{PACKED_NETLIST}.tmp"));
    std::fs::write(&tmp, packed_text)
        .and_then(|()| std::fs::rename(&tmp, &to))
        .map_err(|e| format!("cannot write {}: {e}", to.display()))?;
    Ok(packed)
}

fn pack_module(module: &mut Value) -> Result<Packed, String> {
    let cells: &Map<String, Value> = module
        .get("cells")
        .and_then(Value::as_object)
        .ok_or("module has no cells")?;
    // Drivers and loads of every bit.
    let mut driver: HashMap<Bit, String> = HashMap::new();
    let mut loads = Loads {
        count: HashMap::new(),
    };
    for (name, cell) in cells {
        let dirs = cell.get("port_directions").and_then(Value::as_object);
        let Some(conns) = cell.get("connections").and_then(Value::as_object) else {
            continue;
        };
        for (port, bits) in conns {
            let dir = dirs
                .and_then(|d| d.get(port))
                .and_then(Value::as_str)
                .unwrap_or("input");
            for b in bits.as_array().into_iter().flatten() {
                let b = bit_of(b)?;
                if dir == "output" {
                    driver.insert(b, name.clone());
                } else {
                    loads.add(b, 1);
                }
            }
        }
    }
    if let Some(ports) = module.get("ports").and_then(Value::as_object) {
        for port in ports.values() {
            if port.get("direction").and_then(Value::as_str) != Some("input") {
                for b in port
                    .get("bits")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    loads.add(bit_of(b)?, 1);
                }
            }
        }
    }
    let ffs: BTreeMap<String, PlainFf> = cells
        .iter()
        .filter_map(|(n, c)| plain_ff(c).map(|f| (n.clone(), f)))
        .collect();
    let ff_driving = |b: Bit| -> Option<(&String, &PlainFf)> {
        let name = driver.get(&b)?;
        ffs.get_key_value(name).filter(|(_, f)| f.q == b)
    };
    // The plain flip-flops each bit feeds.
    let mut ff_by_d: HashMap<Bit, Vec<&String>> = HashMap::new();
    for (n, f) in &ffs {
        ff_by_d.entry(f.d).or_default().push(n);
    }

    // An operand flip-flop moves into the block only when it is loaded
    // straight from another flip-flop (or a constant): one fed by logic
    // stays beside that logic, else the logic and the route to the DSP
    // column become one path (the TensorCore's bias add after the
    // accumulator's block RAM read: 72.4 MHz on the ECP5-85F with it moved).
    let fed_by_register = |f: &PlainFf| match f.d {
        Bit::Const(_) => true,
        Bit::Net(_) => driver
            .get(&f.d)
            .and_then(|name| cells.get(name))
            .is_some_and(|c| c.get("type").and_then(Value::as_str) == Some("TRELLIS_FF")),
    };
    let compatible = |a: &Option<(Bit, String)>, f: &PlainFf| {
        a.as_ref().is_none_or(|(c, g)| *c == f.clock && *g == f.gsr)
    };
    // Each block's candidates: its operands' flip-flops (every bit a constant
    // or a plain flip-flop's output, on one clock) and its product's (every
    // used bit's only load a plain flip-flop's input).
    let mut plans: Vec<(String, Plan)> = Vec::new();
    let mut packed = Packed::default();
    for (name, cell) in cells {
        if cell.get("type").and_then(Value::as_str) != Some("MULT18X18D") {
            continue;
        }
        packed.dsps += 1;
        let untouched = ["INPUTA", "INPUTB", "INPUTC", "PIPELINE", "OUTPUT"]
            .iter()
            .all(|r| param(cell, &format!("REG_{r}_CLK")).unwrap_or("NONE") == "NONE");
        if !untouched {
            continue;
        }
        let mut operands = Some(Side::default());
        for port in OPERANDS
            .iter()
            .flat_map(|op| (0..18).map(move |i| format!("{op}{i}")))
        {
            let b = single(cell, &port).unwrap_or(Bit::Const('0'));
            let side = operands.as_mut().expect("operands still packable");
            match b {
                Bit::Const(_) => side.bits.push((port, b)),
                Bit::Net(_) => match ff_driving(b) {
                    Some((n, f)) if compatible(&side.timing, f) && fed_by_register(f) => {
                        side.timing = Some((f.clock, f.gsr.clone()));
                        side.ffs.push(n.clone());
                        side.bits.push((port, f.d));
                    }
                    _ => {
                        operands = None;
                        break;
                    }
                },
            }
        }
        let operands = operands.filter(|s| s.timing.is_some());
        let mut product = Some(Side::default());
        for i in 0..36 {
            let Some(b @ Bit::Net(_)) = single(cell, &format!("P{i}")) else {
                continue;
            };
            if loads.of(b) == 0 {
                continue;
            }
            let side = product.as_mut().unwrap();
            let only = ff_by_d
                .get(&b)
                .filter(|v| v.len() == 1 && loads.of(b) == 1)
                .map(|v| (v[0], &ffs[v[0]]));
            match only {
                Some((n, f)) if compatible(&side.timing, f) => {
                    side.timing = Some((f.clock, f.gsr.clone()));
                    side.ffs.push(n.clone());
                    side.bits.push((format!("P{i}"), f.q));
                }
                _ => {
                    product = None;
                    break;
                }
            }
        }
        let product = product.filter(|s| s.timing.is_some());
        // Operands and product on different clocks: the product alone.
        let operands = operands.filter(|o| product.as_ref().is_none_or(|p| p.timing == o.timing));
        if operands.is_some() || product.is_some() {
            plans.push((name.clone(), Plan { operands, product }));
        }
    }
    // A product's flip-flop is removed and its output driven by the block, so
    // no block may take that flip-flop's input (the old product) as an
    // operand.
    let product_ffs: HashSet<String> = plans
        .iter()
        .filter_map(|(_, p)| p.product.as_ref())
        .flat_map(|s| s.ffs.iter().cloned())
        .collect();
    for (_, plan) in &mut plans {
        if plan
            .operands
            .as_ref()
            .is_some_and(|o| o.ffs.iter().any(|n| product_ffs.contains(n)))
        {
            plan.operands = None;
        }
    }
    plans.retain(|(_, p)| p.operands.is_some() || p.product.is_some());
    // Operand flip-flops left with no load.
    let mut removed = product_ffs.clone();
    let mut operand_ffs = HashSet::new();
    for (name, plan) in &plans {
        let Some(o) = &plan.operands else { continue };
        let cell = &cells[name];
        for (port, new) in &o.bits {
            loads.add(single(cell, port).unwrap_or(Bit::Const('0')), -1);
            loads.add(*new, 1);
        }
        operand_ffs.extend(o.ffs.iter().cloned());
    }
    for n in operand_ffs {
        if loads.of(ffs[&n].q) == 0 {
            removed.insert(n);
        }
    }
    packed.inputs = plans.iter().filter(|(_, p)| p.operands.is_some()).count() as u64;
    packed.outputs = plans.iter().filter(|(_, p)| p.product.is_some()).count() as u64;
    packed.removed_ffs = removed.len() as u64;

    let cells = module
        .get_mut("cells")
        .and_then(Value::as_object_mut)
        .ok_or("module has no cells")?;
    for n in &removed {
        cells.remove(n);
    }
    for (name, plan) in plans {
        plan.apply(cells.get_mut(&name).expect("block still there"));
    }
    Ok(packed)
}

/// One side of a block to pack: its flip-flops' clock and `GSR`, the
/// flip-flops, and the block's new port bits (`A0`, ..., `P35`).
#[derive(Debug, Default)]
struct Side {
    timing: Option<(Bit, String)>,
    ffs: Vec<String>,
    bits: Vec<(String, Bit)>,
}

/// What to pack into one block.
#[derive(Debug)]
struct Plan {
    operands: Option<Side>,
    product: Option<Side>,
}

impl Plan {
    fn apply(self, cell: &mut Value) {
        let (clock, gsr) = self
            .operands
            .iter()
            .chain(&self.product)
            .find_map(|s| s.timing.clone())
            .expect("a planned side has its timing");
        let mut registers = Vec::new();
        if self.operands.is_some() {
            registers.extend(["REG_INPUTA", "REG_INPUTB"]);
        }
        if self.product.is_some() {
            registers.push("REG_OUTPUT");
        }
        let cell = cell.as_object_mut().expect("a cell is an object");
        let params = cell
            .entry("parameters")
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
            .expect("parameters are an object");
        for r in registers {
            for (what, v) in [("CLK", "CLK0"), ("CE", "CE0"), ("RST", "RST0")] {
                params.insert(format!("{r}_{what}"), Value::from(v));
            }
        }
        params.insert("GSR".into(), Value::from(gsr));
        params.insert("RESETMODE".into(), Value::from("SYNC"));
        let conns = cell
            .get_mut("connections")
            .and_then(Value::as_object_mut)
            .expect("a block has connections");
        for side in self.operands.iter().chain(&self.product) {
            for (port, b) in &side.bits {
                conns.insert(port.clone(), Value::Array(vec![value_of(*b)]));
            }
        }
        for (port, b) in [
            ("CLK0", clock),
            ("CE0", Bit::Const('1')),
            ("RST0", Bit::Const('0')),
        ] {
            conns.insert(port.to_string(), Value::Array(vec![value_of(b)]));
        }
        if let Some(dirs) = cell
            .get_mut("port_directions")
            .and_then(Value::as_object_mut)
        {
            for port in ["CLK0", "CE0", "RST0"] {
                dirs.insert(port.to_string(), Value::from("input"));
            }
        }
    }
}

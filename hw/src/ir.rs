//! The intermediate representation: what a finished module definition holds.
//!
//! A definition owns an arena of expression nodes and a table of signals. Nodes
//! only point backwards in the arena (an operation is created after its operands),
//! so the arena order is a valid evaluation order for everything except signal
//! reads, which may refer to wires and registers driven later; the evaluator and
//! the emitter resolve those through the signal table.

use crate::ty::Ty;
use num_bigint::BigUint;
use std::panic::Location;
use std::rc::Rc;

pub type NodeId = usize;
pub type SigId = usize;

/// A source location in the generator, kept for error messages.
pub type Loc = &'static Location<'static>;

/// Operations. Operand types are checked by the builder; see each variant for
/// the rule. "Same type" means equal width and equal signedness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// A constant bit pattern (two's complement for signed types).
    Const(BigUint),
    /// The current value of a signal.
    Sig(SigId),
    /// Wrapping arithmetic on two operands of the same type.
    Add,
    Sub,
    Mul,
    /// Full product of two operands of the same signedness, extended to the
    /// result's width, which is at least the sum of theirs.
    MulWide,
    And,
    Or,
    Xor,
    Not,
    Neg,
    /// Shift left; the amount (second operand) is any unsigned value; >= width gives 0.
    Shl,
    /// Shift right: arithmetic when the operand is signed, logical otherwise.
    Shr,
    /// Comparisons of two operands of the same type; the result is one unsigned bit.
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// Reductions to one unsigned bit.
    RedAnd,
    RedOr,
    RedXor,
    /// `width` bits starting at bit `lo`, unsigned.
    Slice {
        lo: u32,
    },
    /// Concatenation, first operand most significant; unsigned.
    Concat,
    /// Zero extension of an unsigned value / sign extension of a signed value.
    Zext,
    Sext,
    /// The same bits read with the other signedness.
    Cast,
    /// `sel ? a : b` with a one-bit `sel` and `a`, `b` of the same type.
    Mux,
}

#[derive(Debug, Clone)]
pub struct Node {
    pub op: Op,
    pub ty: Ty,
    pub args: Vec<NodeId>,
    pub loc: Loc,
}

/// Direction of a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    In,
    Out,
}

/// An affine index into one dimension of a bus: `sum(coeffs[k] * var[k]) + offset`
/// over the loop variables of an instance array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Affine {
    pub coeffs: Vec<i64>,
    pub offset: i64,
}

impl Affine {
    pub fn eval(&self, vars: &[u32]) -> i64 {
        self.coeffs
            .iter()
            .zip(vars)
            .map(|(c, v)| c * *v as i64)
            .sum::<i64>()
            + self.offset
    }
}

/// How a port of an instance array is connected.
#[derive(Debug, Clone)]
pub enum ArrayConn {
    /// To the bus element at the given per-dimension affine indices.
    Bus { bus: SigId, index: Vec<Affine> },
    /// (Inputs only) the same value to every instance.
    Broadcast(NodeId),
}

#[derive(Debug, Clone)]
pub enum SigKind {
    /// A module input port.
    Input,
    /// A named wire or an output port, driven by one expression.
    Wire { driver: Option<NodeId> },
    /// A register: `_q` holds the value, `_d` the next value.
    Reg {
        next: Option<NodeId>,
        enable: Option<NodeId>,
        reset: Option<BigUint>,
    },
    /// A child instance's output port, seen in the parent as a wire.
    InstOut { inst: usize, port: usize },
    /// The registered data of a synchronous memory read port.
    MemRead { mem: usize, port: usize },
    /// `dims` elements of type `elem` (row-major), each driven separately (by the
    /// parent or by an instance array). In the IR its value is the elements
    /// concatenated, read only through element-aligned slices; the emitter writes
    /// it as an array of nets.
    Bus {
        elem: Ty,
        dims: Vec<u32>,
        /// Parent-driven elements: (flat element index, expression).
        drives: Vec<(u64, NodeId)>,
    },
}

#[derive(Debug, Clone)]
pub struct Signal {
    pub name: String,
    pub ty: Ty,
    pub kind: SigKind,
    /// Whether this signal is a port of the module, and its direction.
    pub port: Option<Dir>,
    pub loc: Loc,
}

#[derive(Debug, Clone)]
pub struct Instance {
    pub name: String,
    pub module: Rc<ModuleDef>,
    /// Per child port (in the child's port order): the driving node for inputs,
    /// the parent `InstOut` signal for outputs.
    pub conns: Vec<Option<InstConn>>,
    pub loc: Loc,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstConn {
    Input(NodeId),
    Output(SigId),
}

#[derive(Debug, Clone)]
pub struct InstanceArray {
    pub name: String,
    pub module: Rc<ModuleDef>,
    /// Loop dimensions: (name, extent).
    pub dims: Vec<(String, u32)>,
    /// Per child port, in the child's port order.
    pub conns: Vec<Option<ArrayConn>>,
    pub loc: Loc,
}

#[derive(Debug, Clone)]
pub struct MemWrite {
    pub enable: NodeId,
    pub addr: NodeId,
    pub data: NodeId,
    /// Per-lane write enables: bit k writes lane k (bits `k*L .. k*L+L-1`,
    /// L = element width / mask width) of the word. `None` writes every bit.
    pub mask: Option<NodeId>,
}

#[derive(Debug, Clone)]
pub struct MemReadPort {
    pub enable: Option<NodeId>,
    pub addr: NodeId,
    /// The `MemRead` signal holding the registered data.
    pub data: SigId,
    /// Whether the builder lowered this port to write-first: the port itself
    /// is read-first like every other (the back ends see no difference), and
    /// the value handed to the generator merges registered copies of the
    /// memory's write ports over it. Recorded so that no write port can be
    /// added after such a port (its bypass would miss it).
    pub write_first: bool,
}

/// A synchronous memory of `depth` words.
///
/// Out-of-range addresses (possible only when `depth` is not a power of two):
/// a write to an address >= `depth` is ignored, and a read of one loads 0 into
/// the read register. The emitter guards those accesses only when `depth` is
/// not a power of two.
#[derive(Debug, Clone)]
pub struct Memory {
    pub name: String,
    pub elem: Ty,
    /// Address width: the fewest bits that can address `depth` words, at least 1.
    pub addr_width: u32,
    /// Number of words, >= 1 (not necessarily a power of two).
    pub depth: u64,
    /// Initial contents (exactly `depth` bit patterns), or `None` for a memory
    /// that starts undefined (0 in the evaluator, X in four-valued simulators).
    pub init: Option<Vec<BigUint>>,
    pub writes: Vec<MemWrite>,
    pub reads: Vec<MemReadPort>,
    /// Why no read of this memory relies on the word written in the same
    /// cycle, when that was declared: synthesis may then return any value for
    /// such a read (`(* no_rw_check *)`), and needs no collision logic.
    pub no_rw_check: Option<String>,
    pub loc: Loc,
}

impl Memory {
    /// Whether addresses can exceed the last word (`depth` is not `2^addr_width`).
    pub fn has_out_of_range_addresses(&self) -> bool {
        self.depth != 1u64 << self.addr_width
    }
}

/// How Verilator models hold a module's instances.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SimLayout {
    /// Verilator decides; it flattens small modules into their parents.
    #[default]
    Auto,
    /// Not inlined (`no_inline`): the module stays a C++ class of its own,
    /// but Verilator still specialises each instance's code, which reads the
    /// variables that drive the instance's inputs directly.
    Separate { reason: String },
    /// One copy of the code for all instances: not inlined, and the data
    /// inputs `public`, so that every instance reads its own copies of its
    /// inputs, its functions come out identical and Verilator merges them.
    /// Models of designs holding such a module are built without Verilator's
    /// data-flow optimizer, whose temporaries are numbered per instance and
    /// would keep the functions apart (`sim::from_hw`).
    Shared { reason: String },
}

impl SimLayout {
    /// Whether some module of `top`'s hierarchy (`top` included) is
    /// [`SimLayout::Shared`].
    pub fn any_shared(top: &ModuleDef) -> bool {
        matches!(top.sim_layout, SimLayout::Shared { .. })
            || top.instances.iter().any(|i| Self::any_shared(&i.module))
            || top.arrays.iter().any(|a| Self::any_shared(&a.module))
    }
}

/// A lint waiver the emitter writes into the Verilator configuration file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiver {
    /// Verilator rule, e.g. `UNUSEDSIGNAL`.
    pub rule: String,
    /// The signal the waiver is about.
    pub signal: String,
    /// Why the warning is expected and harmless.
    pub reason: String,
}

/// Procedural logic (`if`, `switch`, FSM tables) as written. The builder
/// lowers it into signal drivers at `finish`; the definition keeps it so the
/// evaluator can interpret it directly, independently of that lowering.
#[derive(Debug, Clone, Default)]
pub struct Procedural {
    pub targets: Vec<ProcTarget>,
    /// The module's top-level statements, in program order.
    pub stmts: Vec<ProcStmt>,
}

/// A procedurally assigned register or combinational value.
#[derive(Debug, Clone)]
pub struct ProcTarget {
    pub sig: SigId,
    /// A combinational value's default (registers hold instead).
    pub default: Option<NodeId>,
    pub is_reg: bool,
    pub loc: Loc,
}

#[derive(Debug, Clone)]
pub enum ProcStmt {
    /// `targets[target] = value`; the last assignment on a path wins.
    Assign {
        target: usize,
        value: NodeId,
    },
    If(ProcIf),
}

/// An `if` chain, a `switch` or an FSM state table: the first branch whose
/// condition holds is taken, else the `else` body (if any).
#[derive(Debug, Clone)]
pub struct ProcIf {
    /// Branches: condition (one bit) and body.
    pub branches: Vec<(NodeId, Vec<ProcStmt>)>,
    pub else_body: Option<Vec<ProcStmt>>,
    /// The conditions cover every case (a switch over all selector values,
    /// an FSM table over all states): when none holds, the last branch is
    /// taken.
    pub exhaustive: bool,
    /// The conditions exclude each other (switch labels, FSM states).
    pub disjoint: bool,
    /// "if", "switch" or "fsm", for messages.
    pub what: &'static str,
    pub loc: Loc,
}

/// An enum used in a module: its constants are emitted as `localparam`s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnumDecl {
    /// The enum's name in upper snake case (the constants' prefix).
    pub name: String,
    pub ty: Ty,
    /// Constant name and encoding, in declaration order.
    pub variants: Vec<(String, u32)>,
}

/// What an FSM declared with the builder's FSM helper looks like, for the
/// emitted state table and for tests that inspect it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsmInfo {
    /// The state register's name (`<register>_q` in Verilog).
    pub register: String,
    /// The states' constant names, by encoding.
    pub states: Vec<String>,
    /// The reset state's encoding.
    pub reset: u32,
    /// (from, to) encodings of every transition written, in program order;
    /// `from` is `None` for a transition written outside the state table.
    pub transitions: Vec<(Option<u32>, u32)>,
}

/// What a module definition is made of. Built by `ModuleBuilder`, immutable after.
#[derive(Debug, Clone)]
pub struct ModuleDef {
    /// The Verilog module name; unique within a design.
    pub name: String,
    /// Generator parameters (name, value) that produced this definition.
    pub params: Vec<(String, String)>,
    /// One-line description, emitted in the module's header comment.
    pub doc: String,
    pub nodes: Vec<Node>,
    pub signals: Vec<Signal>,
    /// Port signals, in declaration order.
    pub ports: Vec<SigId>,
    pub instances: Vec<Instance>,
    pub arrays: Vec<InstanceArray>,
    pub memories: Vec<Memory>,
    pub waivers: Vec<Waiver>,
    /// How Verilator models hold the module's instances (emitted into the
    /// Verilator configuration file). Simulation only: the Verilog and what
    /// synthesis makes of it are unchanged.
    pub sim_layout: SimLayout,
    /// Why synthesis must keep this module's instances as instances
    /// (`(* keep_hierarchy *)`), if it must: optimisations then stop at their
    /// ports. `None` lets synthesis flatten it like any other module.
    pub keep_hierarchy: Option<String>,
    /// Enums whose constants the module uses.
    pub enums: Vec<EnumDecl>,
    /// Constant nodes written by name (an enum constant), in creation order.
    pub const_names: Vec<(NodeId, String)>,
    /// FSMs declared with the FSM helper.
    pub fsms: Vec<FsmInfo>,
    /// Register chains built by the delay-line helper (emitted compactly).
    pub delay_lines: Vec<DelayLine>,
    /// Procedural statements (already lowered into the signals' drivers).
    pub procedural: Procedural,
    /// Whether the module has a clock / a synchronous reset input (derived at
    /// finish: only when something inside needs it, so lint sees no unused port).
    pub has_clock: bool,
    pub has_reset: bool,
}

impl ModuleDef {
    /// A definition with nothing in it yet.
    pub(crate) fn empty(name: &str) -> ModuleDef {
        ModuleDef {
            name: name.to_string(),
            params: Vec::new(),
            doc: String::new(),
            nodes: Vec::new(),
            signals: Vec::new(),
            ports: Vec::new(),
            instances: Vec::new(),
            arrays: Vec::new(),
            memories: Vec::new(),
            waivers: Vec::new(),
            sim_layout: SimLayout::Auto,
            keep_hierarchy: None,
            enums: Vec::new(),
            const_names: Vec::new(),
            fsms: Vec::new(),
            delay_lines: Vec::new(),
            procedural: Procedural::default(),
            has_clock: false,
            has_reset: false,
        }
    }

    /// Finds a port by name.
    pub fn port(&self, name: &str) -> Option<(usize, &Signal)> {
        self.ports
            .iter()
            .enumerate()
            .map(|(i, &s)| (i, &self.signals[s]))
            .find(|(_, s)| s.name == name)
    }

    /// Ports as (name, direction, type), including the implicit `clk_i` / `rst_i`
    /// (first, when present), in the order the emitter writes them.
    pub fn port_list(&self) -> Vec<(String, Dir, Ty)> {
        let mut out = Vec::new();
        if self.has_clock {
            out.push((CLOCK.to_string(), Dir::In, Ty::BOOL));
        }
        if self.has_reset {
            out.push((RESET.to_string(), Dir::In, Ty::BOOL));
        }
        for &p in &self.ports {
            let s = &self.signals[p];
            out.push((s.name.clone(), s.port.expect("port signal"), s.ty));
        }
        out
    }
}

/// A chain of registers of one type, reset and no enable, where stage k + 1
/// loads stage k every cycle and the first stage loads any value. The
/// registers are ordinary registers in the IR (the evaluator needs nothing
/// else); the emitter writes the chain as one array `<name>_q [1:depth]`
/// shifted by a generate loop, so a line's Verilog does not grow with its
/// depth.
#[derive(Debug, Clone)]
pub struct DelayLine {
    pub name: String,
    /// The stage registers, first (loaded from the input) to last.
    pub stages: Vec<SigId>,
}

/// Name of the implicit clock input.
pub const CLOCK: &str = "clk_i";
/// Name of the implicit synchronous reset input (active high).
pub const RESET: &str = "rst_i";

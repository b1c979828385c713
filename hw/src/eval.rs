//! The IR evaluator: a cycle-based simulator of a module hierarchy on values of
//! any width.
//!
//! It is the reference the Verilog emitter is checked against, so it is written
//! for obviousness, not speed: the hierarchy is flattened into one graph of
//! nodes (instances and instance arrays expanded, wires and ports resolved to the
//! node that drives them, each bus element resolved to its own driver), sorted
//! once into evaluation order, and every value is an arbitrary-precision bit
//! pattern masked to its width. Registers update at `step`, memories are read
//! before they are written in the same cycle, as in the emitted Verilog; an
//! address past a memory's last word reads 0 and is not written.
//!
//! Procedural logic (`if`, `switch`, FSM tables) is *interpreted* from the
//! statements as written (the first branch whose condition holds is taken;
//! the last assignment on the path wins), not read from the drivers the
//! builder lowered it into. The emitted Verilog holds the lowering, so the
//! fuzz that compares the two checks the lowering as well as the emitter.

use crate::builder::{block_assigns, flat_of, for_each_index};
use crate::ir::*;
use crate::ty::Ty;
use num_bigint::{BigInt, BigUint};
use num_traits::{One, ToPrimitive, Zero};
use std::collections::BTreeMap;
use std::rc::Rc;

#[derive(Debug, Clone)]
enum FOp {
    Input,
    Const(BigUint),
    RegQ(usize),
    MemRd(usize),
    /// Resolved away before evaluation.
    Alias(Option<usize>),
    Op(Op),
    /// A comparison, and whether its operands are signed.
    Compare(Op, bool),
    /// A procedural target's value or enable, by interpreting its statements.
    Proc(Rc<FProc>, ProcWant),
}

/// The statements that decide one procedural target, pruned to the ones
/// that can matter to it. Values and conditions are *slots*: indices into
/// the node's `args`, so resolving aliases renames them with the args.
#[derive(Debug)]
struct FProc {
    stmts: Vec<FStmt>,
    default: Option<usize>,
}

#[derive(Debug)]
enum FStmt {
    Assign(usize),
    If {
        branches: Vec<(usize, Vec<FStmt>)>,
        else_body: Option<Vec<FStmt>>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ProcWant {
    /// The value assigned on the path taken (a register's next value).
    Value,
    /// Whether the path taken assigns the target (a register's enable).
    Assigned,
}

/// Builds the statements of procedural target `t` (of a definition whose
/// nodes map to flattened nodes by `node_map`), collecting the flattened
/// nodes they read into `deps`.
struct ProcBuilder<'a> {
    t: usize,
    node_map: &'a [usize],
    deps: Vec<usize>,
}

impl ProcBuilder<'_> {
    fn slot(&mut self, node: NodeId) -> usize {
        let f = self.node_map[node];
        match self.deps.iter().position(|&d| d == f) {
            Some(k) => k,
            None => {
                self.deps.push(f);
                self.deps.len() - 1
            }
        }
    }

    fn block(&mut self, stmts: &[ProcStmt]) -> Vec<FStmt> {
        let mut out = Vec::new();
        for s in stmts {
            match s {
                ProcStmt::Assign { target, value } if *target == self.t => {
                    out.push(FStmt::Assign(self.slot(*value)))
                }
                ProcStmt::Assign { .. } => {}
                ProcStmt::If(i) => {
                    let assigns = |b: &[ProcStmt]| block_assigns(b, self.t);
                    if !i.branches.iter().any(|(_, b)| assigns(b))
                        && !i.else_body.as_deref().is_some_and(assigns)
                    {
                        continue;
                    }
                    // A complete switch or FSM table takes its last branch
                    // when no condition holds: that branch is its `else`.
                    let mut branches: Vec<&(NodeId, Vec<ProcStmt>)> = i.branches.iter().collect();
                    let mut else_body = i.else_body.as_deref();
                    if i.exhaustive && else_body.is_none() {
                        else_body = branches.pop().map(|(_, b)| b.as_slice());
                    }
                    // A branch that does not assign the target leaves it as
                    // not taking the statement would, unless taking it skips
                    // an `else` that does: such branches need no condition
                    // when they come last, or when no two can hold at once.
                    if !else_body.is_some_and(assigns) {
                        else_body = None;
                        if i.disjoint {
                            branches.retain(|(_, b)| assigns(b));
                        } else {
                            while branches.last().is_some_and(|(_, b)| !assigns(b)) {
                                branches.pop();
                            }
                        }
                    }
                    let branches = branches
                        .into_iter()
                        .map(|(c, b)| (self.slot(*c), self.block(b)))
                        .collect();
                    let else_body = else_body.map(|b| self.block(b));
                    out.push(FStmt::If {
                        branches,
                        else_body,
                    });
                }
            }
        }
        out
    }
}

#[derive(Debug, Clone)]
struct FNode {
    op: FOp,
    ty: Ty,
    args: Vec<usize>,
    /// Hierarchical name, for error messages (signals only).
    name: Option<String>,
}

#[derive(Debug, Clone)]
struct FReg {
    next: usize,
    enable: Option<usize>,
    reset: Option<BigUint>,
}

/// A write port: enable, address, data, and the lane mask if any.
#[derive(Debug, Clone)]
struct FWrite {
    enable: usize,
    addr: usize,
    data: usize,
    mask: Option<usize>,
}

#[derive(Debug, Clone)]
struct FMem {
    elem: Ty,
    /// Every word, `depth` of them; addresses past the end read 0 and are
    /// never written.
    words: Vec<BigUint>,
    writes: Vec<FWrite>,
    /// (enable, addr, index into `mem_reads`).
    reads: Vec<(Option<usize>, usize, usize)>,
}

/// A flattened, runnable copy of a module hierarchy.
pub struct Evaluator {
    nodes: Vec<FNode>,
    order: Vec<usize>,
    values: Vec<BigUint>,
    regs: Vec<FReg>,
    reg_state: Vec<BigUint>,
    mems: Vec<FMem>,
    mem_reads: Vec<BigUint>,
    reset: Option<usize>,
    inputs: BTreeMap<String, usize>,
    outputs: BTreeMap<String, usize>,
    cycle: u64,
}

fn mask(width: u32) -> BigUint {
    (BigUint::one() << width as usize) - 1u32
}

fn to_signed(v: &BigUint, width: u32) -> BigInt {
    if v.bit(width as u64 - 1) {
        BigInt::from(v.clone()) - (BigInt::one() << width as usize)
    } else {
        BigInt::from(v.clone())
    }
}

fn from_signed(v: &BigInt, width: u32) -> BigUint {
    crate::builder::const_bits_wrapping(width, v)
}

struct Flattener {
    nodes: Vec<FNode>,
    regs: Vec<FReg>,
    mems: Vec<FMem>,
    mem_reads: usize,
    reset: Option<usize>,
}

impl Flattener {
    fn push(&mut self, op: FOp, ty: Ty, args: Vec<usize>, name: Option<String>) -> usize {
        self.nodes.push(FNode { op, ty, args, name });
        self.nodes.len() - 1
    }

    /// Flattens one instance of `def`; `port_nodes[i]` is the node driving input
    /// port `i`. Returns the node of every port (outputs resolved).
    fn flatten(&mut self, def: &ModuleDef, port_nodes: &[Option<usize>], path: &str) -> Vec<usize> {
        let qual = |n: &str| {
            if path.is_empty() {
                n.to_string()
            } else {
                format!("{path}.{n}")
            }
        };
        let mut sig_node = vec![usize::MAX; def.signals.len()];
        let mut bus_elems: BTreeMap<SigId, Vec<usize>> = BTreeMap::new();
        let mut reg_index = BTreeMap::new();
        let mut port_of_sig = BTreeMap::new();
        for (i, &p) in def.ports.iter().enumerate() {
            port_of_sig.insert(p, i);
        }
        for (sid, s) in def.signals.iter().enumerate() {
            let name = Some(qual(&s.name));
            sig_node[sid] = match &s.kind {
                SigKind::Input => port_nodes[port_of_sig[&sid]].expect("input connected"),
                SigKind::Wire { .. } | SigKind::InstOut { .. } => {
                    self.push(FOp::Alias(None), s.ty, vec![], name)
                }
                SigKind::Reg { reset, .. } => {
                    self.regs.push(FReg {
                        next: usize::MAX,
                        enable: None,
                        reset: reset.clone(),
                    });
                    reg_index.insert(sid, self.regs.len() - 1);
                    self.push(FOp::RegQ(self.regs.len() - 1), s.ty, vec![], name)
                }
                SigKind::MemRead { .. } => {
                    self.mem_reads += 1;
                    self.push(FOp::MemRd(self.mem_reads - 1), s.ty, vec![], name)
                }
                SigKind::Bus { elem, .. } => {
                    let count = (s.ty.width / elem.width) as usize;
                    let elems: Vec<usize> = (0..count)
                        .map(|k| {
                            self.push(
                                FOp::Alias(None),
                                Ty::u(elem.width),
                                vec![],
                                Some(format!("{}[{k}]", qual(&s.name))),
                            )
                        })
                        .collect();
                    // Whole-bus value: elements concatenated, highest first.
                    let whole = self.push(
                        FOp::Op(Op::Concat),
                        s.ty,
                        elems.iter().rev().copied().collect(),
                        name,
                    );
                    bus_elems.insert(sid, elems);
                    whole
                }
            };
        }

        let mut node_map = vec![usize::MAX; def.nodes.len()];
        for (n, node) in def.nodes.iter().enumerate() {
            node_map[n] = match &node.op {
                Op::Sig(s) => sig_node[*s],
                Op::Const(bits) => self.push(FOp::Const(bits.clone()), node.ty, vec![], None),
                Op::Slice { lo } => {
                    // A slice that is exactly one bus element reads that element's
                    // driver directly, so buses never create false loops.
                    let src = &def.nodes[node.args[0]];
                    let elem_hit = match (&src.op, self_bus_elem(def, src, *lo, node.ty.width)) {
                        (Op::Sig(s), Some(k)) => Some(bus_elems[s][k]),
                        _ => None,
                    };
                    match elem_hit {
                        Some(e) => e,
                        None => self.push(
                            FOp::Op(node.op.clone()),
                            node.ty,
                            vec![node_map[node.args[0]]],
                            None,
                        ),
                    }
                }
                op @ (Op::Eq | Op::Ne | Op::Lt | Op::Le | Op::Gt | Op::Ge) => {
                    // The operands' signedness is the IR's: a resolved
                    // operand may be another signal of the same width but
                    // the other signedness (a signed child port read
                    // through an unsigned bus element).
                    let signed = def.nodes[node.args[0]].ty.signed;
                    let args = node.args.iter().map(|&a| node_map[a]).collect();
                    self.push(FOp::Compare(op.clone(), signed), node.ty, args, None)
                }
                op => {
                    let args = node.args.iter().map(|&a| node_map[a]).collect();
                    self.push(FOp::Op(op.clone()), node.ty, args, None)
                }
            };
        }

        for (sid, s) in def.signals.iter().enumerate() {
            match &s.kind {
                SigKind::Wire { driver: Some(d) } => {
                    self.nodes[sig_node[sid]].op = FOp::Alias(Some(node_map[*d]))
                }
                SigKind::Reg { next, enable, .. } => {
                    let r = &mut self.regs[reg_index[&sid]];
                    r.next = node_map[next.expect("checked")];
                    r.enable = enable.map(|e| node_map[e]);
                }
                SigKind::Bus { drives, .. } => {
                    for (flat, d) in drives {
                        let e = bus_elems[&sid][*flat as usize];
                        self.nodes[e].op = FOp::Alias(Some(node_map[*d]));
                    }
                }
                _ => {}
            }
        }

        // Procedural targets: interpreted from their statements, not taken
        // from the drivers their lowering produced.
        let procedural = &def.procedural;
        for (t, target) in procedural.targets.iter().enumerate() {
            let mut b = ProcBuilder {
                t,
                node_map: &node_map,
                deps: Vec::new(),
            };
            let stmts = b.block(&procedural.stmts);
            let default = target.default.map(|d| b.slot(d));
            let deps = b.deps;
            let program = Rc::new(FProc { stmts, default });
            let ty = def.signals[target.sig].ty;
            let name = Some(qual(&def.signals[target.sig].name));
            let value = self.push(
                FOp::Proc(program.clone(), ProcWant::Value),
                ty,
                deps.clone(),
                name.clone(),
            );
            if target.is_reg {
                let assigned =
                    self.push(FOp::Proc(program, ProcWant::Assigned), Ty::BOOL, deps, name);
                let r = &mut self.regs[reg_index[&target.sig]];
                r.next = value;
                r.enable = Some(assigned);
            } else {
                self.nodes[sig_node[target.sig]].op = FOp::Alias(Some(value));
            }
        }

        for inst in &def.instances {
            let child = &inst.module;
            let inputs: Vec<Option<usize>> = inst
                .conns
                .iter()
                .map(|c| match c {
                    Some(InstConn::Input(n)) => Some(node_map[*n]),
                    _ => None,
                })
                .collect();
            let ports = self.flatten(child, &inputs, &qual(&inst.name));
            for (i, c) in inst.conns.iter().enumerate() {
                if let Some(InstConn::Output(s)) = c {
                    self.nodes[sig_node[*s]].op = FOp::Alias(Some(ports[i]));
                }
            }
        }

        for arr in &def.arrays {
            let child = &arr.module;
            for_each_index(&arr.dims, |vars| {
                let elem_of = |bus: SigId, index: &[Affine]| {
                    let SigKind::Bus { dims, .. } = &def.signals[bus].kind else {
                        unreachable!()
                    };
                    bus_elems[&bus][flat_of(index, dims, vars) as usize]
                };
                let inputs: Vec<Option<usize>> = arr
                    .conns
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        let is_in = child.signals[child.ports[i]].port == Some(Dir::In);
                        match c.as_ref().expect("checked") {
                            ArrayConn::Broadcast(n) => Some(node_map[*n]),
                            ArrayConn::Bus { bus, index } if is_in => Some(elem_of(*bus, index)),
                            ArrayConn::Bus { .. } => None,
                        }
                    })
                    .collect();
                let label: Vec<String> = vars.iter().map(|v| v.to_string()).collect();
                let ports = self.flatten(
                    child,
                    &inputs,
                    &qual(&format!("{}[{}]", arr.name, label.join("]["))),
                );
                for (i, c) in arr.conns.iter().enumerate() {
                    let is_out = child.signals[child.ports[i]].port == Some(Dir::Out);
                    if let (true, Some(ArrayConn::Bus { bus, index })) = (is_out, c) {
                        let e = elem_of(*bus, index);
                        self.nodes[e].op = FOp::Alias(Some(ports[i]));
                    }
                }
            });
        }

        for m in &def.memories {
            let mut fm = FMem {
                elem: m.elem,
                words: m
                    .init
                    .clone()
                    .unwrap_or_else(|| vec![BigUint::zero(); m.depth as usize]),
                writes: Vec::new(),
                reads: Vec::new(),
            };
            for w in &m.writes {
                fm.writes.push(FWrite {
                    enable: node_map[w.enable],
                    addr: node_map[w.addr],
                    data: node_map[w.data],
                    mask: w.mask.map(|k| node_map[k]),
                });
            }
            for r in &m.reads {
                let FOp::MemRd(k) = self.nodes[sig_node[r.data]].op else {
                    unreachable!()
                };
                fm.reads
                    .push((r.enable.map(|e| node_map[e]), node_map[r.addr], k));
            }
            self.mems.push(fm);
        }

        def.ports.iter().map(|&p| sig_node[p]).collect()
    }
}

/// Runs procedural statements: `current` ends as the slot of the value
/// assigned last on the path the conditions select (or stays as it was).
fn run_proc<'v>(
    stmts: &[FStmt],
    current: &mut Option<usize>,
    value: &dyn Fn(usize) -> &'v BigUint,
) {
    for s in stmts {
        match s {
            FStmt::Assign(slot) => *current = Some(*slot),
            FStmt::If {
                branches,
                else_body,
            } => match branches.iter().find(|(c, _)| !value(*c).is_zero()) {
                Some((_, body)) => run_proc(body, current, value),
                None => {
                    if let Some(body) = else_body {
                        run_proc(body, current, value)
                    }
                }
            },
        }
    }
}

/// If `src` is a bus signal and `[lo +: width]` is exactly one of its elements,
/// that element's flat index.
fn self_bus_elem(def: &ModuleDef, src: &Node, lo: u32, width: u32) -> Option<usize> {
    let Op::Sig(s) = src.op else { return None };
    let SigKind::Bus { elem, .. } = &def.signals[s].kind else {
        return None;
    };
    (width == elem.width && lo.is_multiple_of(elem.width)).then_some((lo / elem.width) as usize)
}

impl Evaluator {
    /// Flattens `top` (and everything it instantiates) for evaluation. Fails on
    /// a combinational loop, naming the signals on it.
    pub fn new(top: &ModuleDef) -> Result<Evaluator, String> {
        let mut f = Flattener {
            nodes: Vec::new(),
            regs: Vec::new(),
            mems: Vec::new(),
            mem_reads: 0,
            reset: None,
        };
        let mut inputs = BTreeMap::new();
        let mut port_nodes = Vec::new();
        if top.has_reset {
            let r = f.push(FOp::Input, Ty::BOOL, vec![], Some(RESET.into()));
            f.reset = Some(r);
            inputs.insert(RESET.to_string(), r);
        }
        for &p in &top.ports {
            let s = &top.signals[p];
            if s.port == Some(Dir::In) {
                let n = f.push(FOp::Input, s.ty, vec![], Some(s.name.clone()));
                inputs.insert(s.name.clone(), n);
                port_nodes.push(Some(n));
            } else {
                port_nodes.push(None);
            }
        }
        let ports = f.flatten(top, &port_nodes, "");
        let mut outputs = BTreeMap::new();
        for (i, &p) in top.ports.iter().enumerate() {
            let s = &top.signals[p];
            if s.port == Some(Dir::Out) {
                outputs.insert(s.name.clone(), ports[i]);
            }
        }

        // Resolve aliases to the node that computes the value.
        let n = f.nodes.len();
        let mut target: Vec<usize> = (0..n).collect();
        for (i, resolved) in target.iter_mut().enumerate() {
            let mut t = i;
            let mut hops = 0;
            while let FOp::Alias(next) = &f.nodes[t].op {
                match next {
                    Some(x) => t = *x,
                    None => {
                        return Err(format!(
                            "'{}' has no driver",
                            f.nodes[t].name.clone().unwrap_or_default()
                        ))
                    }
                }
                hops += 1;
                if hops > n {
                    return Err(format!(
                        "combinational loop through '{}'",
                        f.nodes[i].name.clone().unwrap_or_default()
                    ));
                }
            }
            *resolved = t;
        }
        for node in &mut f.nodes {
            for a in &mut node.args {
                *a = target[*a];
            }
        }
        for r in &mut f.regs {
            r.next = target[r.next];
            r.enable = r.enable.map(|e| target[e]);
        }
        for m in &mut f.mems {
            for w in &mut m.writes {
                w.enable = target[w.enable];
                w.addr = target[w.addr];
                w.data = target[w.data];
                w.mask = w.mask.map(|k| target[k]);
            }
            for r in &mut m.reads {
                *r = (r.0.map(|e| target[e]), target[r.1], r.2);
            }
        }
        for v in outputs.values_mut() {
            *v = target[*v];
        }

        // Evaluation order: depth-first post-order over operands.
        let mut state = vec![0u8; n]; // 0 new, 1 on stack, 2 done
        let mut order = Vec::new();
        for start in 0..n {
            if state[start] != 0 || matches!(f.nodes[start].op, FOp::Alias(_)) {
                continue;
            }
            let mut stack = vec![(start, 0usize)];
            state[start] = 1;
            while let Some((v, k)) = stack.pop() {
                if k < f.nodes[v].args.len() {
                    stack.push((v, k + 1));
                    let c = f.nodes[v].args[k];
                    match state[c] {
                        0 => {
                            state[c] = 1;
                            stack.push((c, 0));
                        }
                        1 => {
                            let names: Vec<String> = stack
                                .iter()
                                .filter_map(|(x, _)| f.nodes[*x].name.clone())
                                .collect();
                            return Err(format!(
                                "combinational loop through {}",
                                names.join(" -> ")
                            ));
                        }
                        _ => {}
                    }
                } else {
                    state[v] = 2;
                    order.push(v);
                }
            }
        }

        let reg_state = f.regs.iter().map(|_| BigUint::zero()).collect();
        let mut e = Evaluator {
            values: vec![BigUint::zero(); n],
            order,
            regs: f.regs,
            reg_state,
            mems: f.mems,
            mem_reads: vec![BigUint::zero(); f.mem_reads],
            reset: f.reset,
            nodes: f.nodes,
            inputs,
            outputs,
            cycle: 0,
        };
        e.eval();
        Ok(e)
    }

    /// Names of the inputs (including `rst_i` when present).
    pub fn input_names(&self) -> Vec<String> {
        self.inputs.keys().cloned().collect()
    }

    /// Sets an input to a bit pattern (masked to the port's width).
    pub fn set(&mut self, port: &str, value: &BigUint) {
        let n = *self
            .inputs
            .get(port)
            .unwrap_or_else(|| panic!("no input port '{port}'"));
        self.values[n] = value & mask(self.nodes[n].ty.width);
    }

    /// Sets an input from an integer (wrapped to the port's width).
    pub fn set_int(&mut self, port: &str, value: i128) {
        let n = *self
            .inputs
            .get(port)
            .unwrap_or_else(|| panic!("no input port '{port}'"));
        let bits = from_signed(&BigInt::from(value), self.nodes[n].ty.width);
        self.values[n] = bits;
    }

    /// The bit pattern of an output (after the last `eval` or `step`).
    pub fn get(&self, port: &str) -> BigUint {
        let n = *self
            .outputs
            .get(port)
            .unwrap_or_else(|| panic!("no output port '{port}'"));
        self.values[n].clone()
    }

    /// An output read by its type: two's complement for signed ports.
    pub fn get_int(&self, port: &str) -> BigInt {
        let n = self.outputs[port];
        let ty = self.nodes[n].ty;
        if ty.signed {
            to_signed(&self.values[n], ty.width)
        } else {
            BigInt::from(self.values[n].clone())
        }
    }

    /// Clock cycles stepped so far.
    pub fn cycle(&self) -> u64 {
        self.cycle
    }

    /// Settles combinational logic for the current inputs and state.
    pub fn eval(&mut self) {
        for i in 0..self.order.len() {
            let n = self.order[i];
            let v = self.compute(n);
            if let Some(v) = v {
                self.values[n] = v;
            }
        }
    }

    fn compute(&self, n: usize) -> Option<BigUint> {
        let node = &self.nodes[n];
        let w = node.ty.width;
        let arg = |k: usize| &self.values[node.args[k]];
        let arg_ty = |k: usize| self.nodes[node.args[k]].ty;
        Some(match &node.op {
            FOp::Input | FOp::Alias(_) => return None,
            FOp::Const(c) => c.clone(),
            FOp::RegQ(r) => self.reg_state[*r].clone(),
            FOp::MemRd(r) => self.mem_reads[*r].clone(),
            FOp::Proc(program, want) => {
                let mut current = program.default;
                run_proc(&program.stmts, &mut current, &|slot| {
                    &self.values[node.args[slot]]
                });
                match want {
                    ProcWant::Value => current
                        .map(|slot| arg(slot).clone())
                        .unwrap_or_else(BigUint::zero),
                    ProcWant::Assigned => BigUint::from(current.is_some() as u8),
                }
            }
            FOp::Compare(op, signed) => {
                let width = arg_ty(0).width;
                let ord = if *signed {
                    to_signed(arg(0), width).cmp(&to_signed(arg(1), width))
                } else {
                    arg(0).cmp(arg(1))
                };
                let r = match op {
                    Op::Eq => ord.is_eq(),
                    Op::Ne => ord.is_ne(),
                    Op::Lt => ord.is_lt(),
                    Op::Le => ord.is_le(),
                    Op::Gt => ord.is_gt(),
                    _ => ord.is_ge(),
                };
                BigUint::from(r as u8)
            }
            FOp::Op(op) => match op {
                Op::Const(_) | Op::Sig(_) => unreachable!("resolved when flattening"),
                Op::Add => (arg(0) + arg(1)) & mask(w),
                Op::Sub => ((arg(0) + (BigUint::one() << w as usize)) - arg(1)) & mask(w),
                Op::Mul => (arg(0) * arg(1)) & mask(w),
                Op::MulWide => {
                    if node.ty.signed {
                        let p =
                            to_signed(arg(0), arg_ty(0).width) * to_signed(arg(1), arg_ty(1).width);
                        from_signed(&p, w)
                    } else {
                        arg(0) * arg(1)
                    }
                }
                Op::And => arg(0) & arg(1),
                Op::Or => arg(0) | arg(1),
                Op::Xor => arg(0) ^ arg(1),
                Op::Not => arg(0) ^ mask(w),
                Op::Neg => ((BigUint::one() << w as usize) - arg(0)) & mask(w),
                Op::Shl => match arg(1).to_u64().filter(|&s| s < w as u64) {
                    Some(s) => (arg(0) << s as usize) & mask(w),
                    None => BigUint::zero(),
                },
                Op::Shr => {
                    let amount = arg(1).to_u64().filter(|&s| s < w as u64);
                    if node.ty.signed {
                        let v = to_signed(arg(0), w);
                        let s = amount.unwrap_or(w as u64);
                        // Arithmetic shift: floor division; shifting by >= w
                        // leaves only copies of the sign bit.
                        let shifted = v >> s.min(w as u64) as usize;
                        from_signed(&shifted, w)
                    } else {
                        match amount {
                            Some(s) => arg(0) >> s as usize,
                            None => BigUint::zero(),
                        }
                    }
                }
                Op::Eq | Op::Ne | Op::Lt | Op::Le | Op::Gt | Op::Ge => {
                    unreachable!("flattened into FOp::Compare")
                }
                Op::RedAnd => BigUint::from((*arg(0) == mask(arg_ty(0).width)) as u8),
                Op::RedOr => BigUint::from((!arg(0).is_zero()) as u8),
                Op::RedXor => BigUint::from((arg(0).count_ones() % 2) as u8),
                Op::Slice { lo } => (arg(0) >> *lo as usize) & mask(w),
                Op::Concat => {
                    let mut acc = BigUint::zero();
                    for k in 0..node.args.len() {
                        acc = (acc << arg_ty(k).width as usize) | arg(k);
                    }
                    acc
                }
                Op::Zext | Op::Cast => arg(0).clone(),
                Op::Sext => from_signed(&to_signed(arg(0), arg_ty(0).width), w),
                Op::Mux => {
                    if arg(0).is_zero() {
                        arg(2).clone()
                    } else {
                        arg(1).clone()
                    }
                }
            },
        })
    }

    /// One rising clock edge with the current inputs, then settles.
    pub fn step(&mut self) {
        self.eval();
        let resetting = self.reset.is_some_and(|r| !self.values[r].is_zero());
        let mut next = self.reg_state.clone();
        for (i, r) in self.regs.iter().enumerate() {
            match (&r.reset, resetting) {
                (Some(v), true) => next[i] = v.clone(),
                _ => {
                    let enabled = r.enable.is_none_or(|e| !self.values[e].is_zero());
                    if enabled {
                        next[i] = self.values[r.next].clone();
                    }
                }
            }
        }
        let mut reads = self.mem_reads.clone();
        for m in &mut self.mems {
            for &(en, addr, k) in &m.reads {
                if en.is_none_or(|e| !self.values[e].is_zero()) {
                    let a = self.values[addr].to_usize().expect("address fits");
                    reads[k] = m.words.get(a).cloned().unwrap_or_default();
                }
            }
            for w in &m.writes {
                if self.values[w.enable].is_zero() {
                    continue;
                }
                let a = self.values[w.addr].to_usize().expect("address fits");
                let Some(word) = m.words.get_mut(a) else {
                    continue; // out of range: ignored
                };
                let data = &self.values[w.data];
                let width = m.elem.width;
                // The bits this port writes: every bit, or the masked lanes.
                let written = match w.mask {
                    None => mask(width),
                    Some(k) => {
                        let lanes = self.nodes[k].ty.width;
                        let lane = width / lanes;
                        let mut bits = BigUint::zero();
                        for l in 0..lanes {
                            if self.values[k].bit(l as u64) {
                                bits |= mask(lane) << (l * lane) as usize;
                            }
                        }
                        bits
                    }
                };
                *word = (&*word & (mask(width) ^ &written)) | (data & &written);
            }
        }
        self.reg_state = next;
        self.mem_reads = reads;
        self.cycle += 1;
        self.eval();
    }
}

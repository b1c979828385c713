//! Checks a finished definition must pass: every signal driven, every bus
//! element driven once, no combinational loop; and the clock/reset ports it needs.

use super::*;

/// Every wire, output, register and instance input is driven; every bus
/// element is driven exactly once; no combinational loop inside the module.
pub(super) fn check_complete(def: &ModuleDef, loc: Loc) {
    for s in &def.signals {
        match &s.kind {
            SigKind::Wire { driver: None } => {
                elab_error_at(s.loc, format!("'{}' is declared but never driven", s.name))
            }
            SigKind::Reg { next: None, .. } => elab_error_at(
                s.loc,
                format!("register '{}' has no next value (set_next)", s.name),
            ),
            _ => {}
        }
    }
    for inst in &def.instances {
        for (i, c) in inst.conns.iter().enumerate() {
            if c.is_none() {
                let port = &inst.module.signals[inst.module.ports[i]].name;
                elab_error_at(
                    inst.loc,
                    format!(
                        "input '{port}' of instance '{}' is not connected",
                        inst.name
                    ),
                );
            }
        }
    }
    for arr in &def.arrays {
        for (i, c) in arr.conns.iter().enumerate() {
            if c.is_none() {
                let port = &arr.module.signals[arr.module.ports[i]].name;
                elab_error_at(
                    arr.loc,
                    format!(
                        "port '{port}' of instance array '{}' is not connected",
                        arr.name
                    ),
                );
            }
        }
    }
    check_bus_drivers(def);
    check_local_loops(def, loc);
}

/// Counts the drivers of every bus element (parent drives plus array outputs).
fn check_bus_drivers(def: &ModuleDef) {
    for (sig, s) in def.signals.iter().enumerate() {
        let SigKind::Bus { dims, drives, elem } = &s.kind else {
            continue;
        };
        let count = (s.ty.width / elem.width) as usize;
        let mut drivers = vec![0u32; count];
        for (flat, _) in drives {
            drivers[*flat as usize] += 1;
        }
        for arr in &def.arrays {
            for (pi, c) in arr.conns.iter().enumerate() {
                let Some(ArrayConn::Bus { bus, index }) = c else {
                    continue;
                };
                let port = &arr.module.signals[arr.module.ports[pi]];
                if *bus != sig || port.port != Some(Dir::Out) {
                    continue;
                }
                for_each_index(&arr.dims, |vars| {
                    drivers[flat_of(index, dims, vars) as usize] += 1;
                });
            }
        }
        for (flat, n) in drivers.iter().enumerate() {
            if *n != 1 {
                let what = if *n == 0 {
                    "no driver"
                } else {
                    "several drivers"
                };
                elab_error_at(
                    s.loc,
                    format!(
                        "element {:?} of bus '{}' has {what}",
                        unflatten(flat as u64, dims),
                        s.name
                    ),
                );
            }
        }
    }
}

/// Calls `f` with every point of the loop box `dims`, last dimension fastest.
pub(crate) fn for_each_index(dims: &[(String, u32)], mut f: impl FnMut(&[u32])) {
    let mut vars = vec![0u32; dims.len()];
    loop {
        f(&vars);
        let mut k = dims.len();
        loop {
            if k == 0 {
                return;
            }
            k -= 1;
            vars[k] += 1;
            if vars[k] < dims[k].1 {
                break;
            }
            vars[k] = 0;
        }
    }
}

/// Flat element index of an affine bus index at loop point `vars`.
pub(crate) fn flat_of(index: &[Affine], dims: &[u32], vars: &[u32]) -> u64 {
    index
        .iter()
        .zip(dims)
        .fold(0u64, |acc, (a, &d)| acc * d as u64 + a.eval(vars) as u64)
}

fn unflatten(mut flat: u64, dims: &[u32]) -> Vec<u64> {
    let mut out = vec![0; dims.len()];
    for (k, &d) in dims.iter().enumerate().rev() {
        out[k] = flat % d as u64;
        flat /= d as u64;
    }
    out
}

/// Finds combinational loops among this module's own wires (instance paths are
/// checked by the evaluator, which sees the whole hierarchy).
fn check_local_loops(def: &ModuleDef, _loc: Loc) {
    // Node -> the wire nodes it depends on, through signal reads of wires.
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Active,
        Done,
    }
    let mut mark = vec![Mark::New; def.nodes.len()];
    let wire_driver = |n: &Node| -> Option<NodeId> {
        if let Op::Sig(s) = n.op {
            if let SigKind::Wire { driver } = def.signals[s].kind {
                return driver;
            }
        }
        None
    };
    for start in 0..def.nodes.len() {
        if mark[start] != Mark::New {
            continue;
        }
        // Iterative DFS over args plus wire drivers.
        let mut stack: Vec<(NodeId, usize)> = vec![(start, 0)];
        mark[start] = Mark::Active;
        while let Some((n, k)) = stack.pop() {
            let node = &def.nodes[n];
            let mut next = node.args.clone();
            if let Some(d) = wire_driver(node) {
                next.push(d);
            }
            if k < next.len() {
                stack.push((n, k + 1));
                let c = next[k];
                match mark[c] {
                    Mark::New => {
                        mark[c] = Mark::Active;
                        stack.push((c, 0));
                    }
                    Mark::Active => {
                        let names: Vec<String> = stack
                            .iter()
                            .filter_map(|(n, _)| match def.nodes[*n].op {
                                Op::Sig(s) => Some(def.signals[s].name.clone()),
                                _ => None,
                            })
                            .collect();
                        elab_error_at(
                            def.nodes[c].loc,
                            format!(
                                "combinational loop in module '{}' through {}",
                                def.name,
                                names.join(" -> ")
                            ),
                        );
                    }
                    Mark::Done => {}
                }
            } else {
                mark[n] = Mark::Done;
            }
        }
    }
}

/// A module needs `clk_i` if it has registers, memories or clocked children,
/// and `rst_i` if a register resets or a child needs reset.
pub(super) fn needs_clock_reset(def: &ModuleDef) -> (bool, bool) {
    let mut clock = !def.memories.is_empty();
    let mut reset = false;
    for s in &def.signals {
        if let SigKind::Reg { reset: r, .. } = &s.kind {
            clock = true;
            reset |= r.is_some();
        }
    }
    let children = def
        .instances
        .iter()
        .map(|i| &i.module)
        .chain(def.arrays.iter().map(|a| &a.module));
    for m in children {
        clock |= m.has_clock;
        reset |= m.has_reset;
    }
    (clock, reset)
}

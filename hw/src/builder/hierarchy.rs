//! Buses, child instances and instance arrays.

use super::*;

impl ModuleBuilder {
    /// A bus of `dims` elements of type `elem` (row-major), emitted as an array
    /// of nets (one per element). Each element must be driven exactly once,
    /// by [`bus_drive`](Self::bus_drive) or by an instance array's output.
    #[track_caller]
    pub fn bus(&mut self, name: &str, elem: Ty, dims: &[u32]) -> Bus {
        if dims.is_empty() || dims.contains(&0) {
            elab_error(format!(
                "bus '{name}' needs non-empty dimensions, got {dims:?}"
            ));
        }
        let count: u64 = dims.iter().map(|&d| d as u64).product();
        let width = count
            .checked_mul(elem.width as u64)
            .filter(|&w| w <= crate::ty::MAX_WIDTH as u64)
            .unwrap_or_else(|| elab_error(format!("bus '{name}' is too wide")));
        self.claim_name(name);
        let (sig, _) = self.add_signal(
            name,
            Ty::u(width as u32),
            SigKind::Bus {
                elem,
                dims: dims.to_vec(),
                drives: Vec::new(),
            },
            None,
        );
        Bus {
            sig,
            token: self.token,
        }
    }

    #[track_caller]
    fn bus_flat_index(&self, bus: Bus, index: &[u32]) -> (u64, Ty, SigId) {
        let loc = Location::caller();
        if bus.token != self.token {
            elab_error("bus belongs to another module".into());
        }
        self.with(|m| {
            let s = &m.def.signals[bus.sig];
            let SigKind::Bus { elem, dims, .. } = &s.kind else {
                unreachable!("Bus handle names a bus")
            };
            if index.len() != dims.len() || index.iter().zip(dims).any(|(i, d)| i >= d) {
                elab_error_at(
                    loc,
                    format!(
                        "index {index:?} is outside bus '{}' of dimensions {dims:?}",
                        s.name
                    ),
                );
            }
            let flat = index
                .iter()
                .zip(dims)
                .fold(0u64, |acc, (&i, &d)| acc * d as u64 + i as u64);
            (flat, *elem, bus.sig)
        })
    }

    /// Reads one bus element.
    #[track_caller]
    pub fn bus_read(&mut self, bus: Bus, index: &[u32]) -> Expr {
        let (flat, elem, sig) = self.bus_flat_index(bus, index);
        let whole = self.with(|m| m.sig_nodes[sig]);
        let ty = self.with(|m| m.def.signals[sig].ty);
        let whole = Expr {
            token: self.token,
            node: whole as u32,
            ty,
        };
        let raw = whole.slice((flat * elem.width as u64) as u32, elem.width);
        if elem.signed {
            raw.as_signed()
        } else {
            raw
        }
    }

    /// Drives one bus element from the parent.
    #[track_caller]
    pub fn bus_drive(&mut self, bus: Bus, index: &[u32], value: Expr) {
        self.own(value);
        let (flat, elem, sig) = self.bus_flat_index(bus, index);
        if value.ty != elem {
            elab_error(format!(
                "bus element is {elem}, cannot drive it with {}",
                value.ty
            ));
        }
        self.with(|m| {
            if let SigKind::Bus { drives, .. } = &mut m.def.signals[sig].kind {
                drives.push((flat, value.node()));
            }
        });
    }

    /// Instantiates `module` as `name`. Connect every input with
    /// [`connect`](Self::connect); read outputs with
    /// [`inst_output`](Self::inst_output). Outputs appear in this module as wires named
    /// `<name>_<port>`.
    #[track_caller]
    pub fn instance(&mut self, name: &str, module: &Rc<ModuleDef>) -> Inst {
        self.claim_name(name);
        let loc = Location::caller();
        let index = self.with(|m| m.def.instances.len());
        let mut conns = Vec::new();
        for &p in &module.ports {
            let port = &module.signals[p];
            match port.port {
                Some(Dir::Out) => {
                    let wire = format!("{name}_{}", port.name);
                    self.claim_name(&wire);
                    let (sig, _) = self.add_signal(
                        &wire,
                        port.ty,
                        SigKind::InstOut {
                            inst: index,
                            port: conns.len(),
                        },
                        None,
                    );
                    conns.push(Some(InstConn::Output(sig)));
                }
                _ => conns.push(None),
            }
        }
        self.with(|m| {
            m.def.instances.push(Instance {
                name: name.to_string(),
                module: module.clone(),
                conns,
                loc,
            })
        });
        Inst {
            index,
            token: self.token,
        }
    }

    #[track_caller]
    fn child_port(&self, module: &ModuleDef, port: &str) -> (usize, Ty, Dir) {
        match module.port(port) {
            Some((i, s)) => (i, s.ty, s.port.expect("port")),
            None => {
                let names: Vec<String> = module.port_list().into_iter().map(|p| p.0).collect();
                elab_error(format!(
                    "module '{}' has no port '{port}' (ports: {})",
                    module.name,
                    names.join(", ")
                ))
            }
        }
    }

    /// Connects an input port of an instance.
    #[track_caller]
    pub fn connect(&mut self, inst: Inst, port: &str, value: Expr) {
        let loc = Location::caller();
        self.own(value);
        if inst.token != self.token {
            elab_error("instance belongs to another module".into());
        }
        let module = self.with(|m| m.def.instances[inst.index].module.clone());
        let (i, ty, dir) = self.child_port(&module, port);
        if dir != Dir::In {
            elab_error(format!("'{port}' of '{}' is an output", module.name));
        }
        if ty != value.ty {
            elab_error(format!(
                "port '{port}' of '{}' is {ty}, connected to a {} value",
                module.name, value.ty
            ));
        }
        self.with(|m| {
            let c = &mut m.def.instances[inst.index].conns[i];
            if c.is_some() {
                elab_error_at(loc, format!("port '{port}' is already connected"));
            }
            *c = Some(InstConn::Input(value.node()));
        });
    }

    /// The value of an instance's output port.
    #[track_caller]
    pub fn inst_output(&mut self, inst: Inst, port: &str) -> Expr {
        if inst.token != self.token {
            elab_error("instance belongs to another module".into());
        }
        let (module, conns) = self.with(|m| {
            let i = &m.def.instances[inst.index];
            (i.module.clone(), i.conns.clone())
        });
        let (i, ty, dir) = self.child_port(&module, port);
        if dir != Dir::Out {
            elab_error(format!("'{port}' of '{}' is an input", module.name));
        }
        let Some(InstConn::Output(sig)) = conns[i] else {
            unreachable!("outputs are bound at instantiation")
        };
        let node = self.with(|m| m.sig_nodes[sig]);
        Expr {
            token: self.token,
            node: node as u32,
            ty,
        }
    }

    /// Brings every port of `inst` (an instance of `module`) but its clock
    /// and reset out as a port of this module, named `outer(port)`: inputs
    /// in, outputs out. For wrappers that only re-package a module.
    #[track_caller]
    pub fn expose_ports(
        &mut self,
        inst: Inst,
        module: &Rc<ModuleDef>,
        outer: impl Fn(&str) -> String,
    ) {
        for (port, dir, ty) in module.port_list() {
            if port == CLOCK || port == RESET {
                continue;
            }
            match dir {
                Dir::In => {
                    let v = self.input(&outer(&port), ty);
                    self.connect(inst, &port, v);
                }
                Dir::Out => {
                    let v = self.inst_output(inst, &port);
                    self.output(&outer(&port), v);
                }
            }
        }
    }

    /// An array of instances of `module` over the loop dimensions `dims`
    /// (name, extent), emitted as nested generate loops. Connect each port to a
    /// bus with [`array_connect`](Self::array_connect) or to one value with
    /// [`array_broadcast`](Self::array_broadcast).
    #[track_caller]
    pub fn instance_array(
        &mut self,
        name: &str,
        module: &Rc<ModuleDef>,
        dims: &[(&str, u32)],
    ) -> InstArray {
        if dims.is_empty() || dims.iter().any(|d| d.1 == 0) {
            elab_error(format!(
                "instance array '{name}' needs non-empty dimensions"
            ));
        }
        self.claim_name(name);
        for (d, _) in dims {
            self.claim_name(&format!("{name}_{d}"));
            self.claim_name(&format!("g_{name}_{d}"));
        }
        let loc = Location::caller();
        let index = self.with(|m| {
            m.def.arrays.push(InstanceArray {
                name: name.to_string(),
                module: module.clone(),
                dims: dims.iter().map(|(n, e)| (n.to_string(), *e)).collect(),
                conns: vec![None; module.ports.len()],
                loc,
            });
            m.def.arrays.len() - 1
        });
        InstArray {
            index,
            token: self.token,
            rank: dims.len(),
        }
    }

    /// Connects a port of every instance in an array to the bus element at
    /// `index` (one affine index per bus dimension over the array's variables).
    /// Input ports read the element; output ports drive it.
    #[track_caller]
    pub fn array_connect(&mut self, arr: InstArray, port: &str, bus: Bus, index: &[Idx]) {
        if arr.token != self.token || bus.token != self.token {
            elab_error("instance array or bus belongs to another module".into());
        }
        let (module, extents) = self.with(|m| {
            let a = &m.def.arrays[arr.index];
            (
                a.module.clone(),
                a.dims.iter().map(|d| d.1).collect::<Vec<_>>(),
            )
        });
        let (i, ty, _) = self.child_port(&module, port);
        let (bus_name, elem, dims) = self.with(|m| {
            let s = &m.def.signals[bus.sig];
            let SigKind::Bus { elem, dims, .. } = &s.kind else {
                unreachable!()
            };
            (s.name.clone(), *elem, dims.clone())
        });
        if elem != ty {
            elab_error(format!(
                "port '{port}' of '{}' is {ty}, bus '{bus_name}' holds {elem}",
                module.name
            ));
        }
        if index.len() != dims.len() {
            elab_error(format!(
                "bus '{bus_name}' has {} dimensions, index has {}",
                dims.len(),
                index.len()
            ));
        }
        let mut affine = Vec::new();
        for (d, idx) in index.iter().enumerate() {
            let mut a = idx.0.clone();
            if a.coeffs.len() > extents.len() {
                elab_error("index uses a variable the array does not have".into());
            }
            a.coeffs.resize(extents.len(), 0);
            // Affine: the extremes are at the corners of the loop box.
            let mut lo = a.offset;
            let mut hi = a.offset;
            for (c, e) in a.coeffs.iter().zip(&extents) {
                let span = c * (*e as i64 - 1);
                lo += span.min(0);
                hi += span.max(0);
            }
            if lo < 0 || hi >= dims[d] as i64 {
                elab_error(format!(
                    "index of dimension {d} ranges over {lo}..={hi}, outside bus '{bus_name}' \
                     (extent {})",
                    dims[d]
                ));
            }
            affine.push(a);
        }
        self.set_array_conn(
            arr,
            i,
            port,
            ArrayConn::Bus {
                bus: bus.sig,
                index: affine,
            },
        );
    }

    /// Connects an input port of every instance in an array to the same value.
    #[track_caller]
    pub fn array_broadcast(&mut self, arr: InstArray, port: &str, value: Expr) {
        self.own(value);
        if arr.token != self.token {
            elab_error("instance array belongs to another module".into());
        }
        let module = self.with(|m| m.def.arrays[arr.index].module.clone());
        let (i, ty, dir) = self.child_port(&module, port);
        if dir != Dir::In {
            elab_error(format!("cannot broadcast to output '{port}'"));
        }
        if ty != value.ty {
            elab_error(format!(
                "port '{port}' of '{}' is {ty}, broadcast value is {}",
                module.name, value.ty
            ));
        }
        self.set_array_conn(arr, i, port, ArrayConn::Broadcast(value.node()));
    }

    #[track_caller]
    fn set_array_conn(&mut self, arr: InstArray, i: usize, port: &str, conn: ArrayConn) {
        let loc = Location::caller();
        self.with(|m| {
            let c = &mut m.def.arrays[arr.index].conns[i];
            if c.is_some() {
                elab_error_at(loc, format!("port '{port}' is already connected"));
            }
            *c = Some(conn);
        });
    }
}

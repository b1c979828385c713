//! Synchronous memories: declaration, write ports, read ports.

use super::*;

impl ModuleBuilder {
    /// A memory of 2^`addr_width` words of type `elem`, written and read
    /// synchronously (so synthesis maps it to block RAM).
    #[track_caller]
    pub fn memory(&mut self, name: &str, elem: Ty, addr_width: u32) -> Mem {
        if addr_width == 0 || addr_width > 24 {
            elab_error(format!(
                "memory '{name}': address width must be 1..=24, got {addr_width}"
            ));
        }
        self.claim_name(name);
        let loc = Location::caller();
        let index = self.with(|m| {
            m.def.memories.push(Memory {
                name: name.to_string(),
                elem,
                addr_width,
                writes: Vec::new(),
                reads: Vec::new(),
                loc,
            });
            m.def.memories.len() - 1
        });
        Mem {
            index,
            token: self.token,
        }
    }

    #[track_caller]
    fn check_addr(&self, mem: Mem, addr: Expr) -> (String, Ty) {
        self.own(addr);
        if mem.token != self.token {
            elab_error("memory belongs to another module".into());
        }
        let (name, elem, aw) = self.with(|m| {
            let mm = &m.def.memories[mem.index];
            (mm.name.clone(), mm.elem, mm.addr_width)
        });
        if addr.ty != Ty::u(aw) {
            elab_error(format!(
                "memory '{name}' takes a u{aw} address, got {}",
                addr.ty
            ));
        }
        (name, elem)
    }

    /// A write port: at the clock edge, if `enable`, `mem[addr] <= data`. Later
    /// write ports win when several write the same address in one cycle.
    #[track_caller]
    pub fn mem_write(&mut self, mem: Mem, enable: Expr, addr: Expr, data: Expr) {
        let (name, elem) = self.check_addr(mem, addr);
        self.own(enable);
        self.own(data);
        if enable.ty != Ty::BOOL {
            elab_error(format!(
                "write enable must be one unsigned bit, got {}",
                enable.ty
            ));
        }
        if data.ty != elem {
            elab_error(format!(
                "memory '{name}' holds {elem}, written with {}",
                data.ty
            ));
        }
        self.with(|m| {
            m.def.memories[mem.index].writes.push(MemWrite {
                enable: enable.node(),
                addr: addr.node(),
                data: data.node(),
            })
        });
    }

    /// A synchronous read port: at the clock edge, if `enable` (or always when
    /// `None`), the returned value becomes `mem[addr]` (the value before any write
    /// in the same cycle). Emitted as a register `<mem>_rd<k>_q`.
    #[track_caller]
    pub fn mem_read(&mut self, mem: Mem, enable: Option<Expr>, addr: Expr) -> Expr {
        let (name, elem) = self.check_addr(mem, addr);
        if let Some(e) = enable {
            self.own(e);
            if e.ty != Ty::BOOL {
                elab_error(format!(
                    "read enable must be one unsigned bit, got {}",
                    e.ty
                ));
            }
        }
        let port = self.with(|m| m.def.memories[mem.index].reads.len());
        let reg_name = format!("{name}_rd{port}_q");
        self.claim_name(&reg_name);
        let (sig, value) = self.add_signal(
            &reg_name,
            elem,
            SigKind::MemRead {
                mem: mem.index,
                port,
            },
            None,
        );
        self.with(|m| {
            m.def.memories[mem.index].reads.push(MemReadPort {
                enable: enable.map(|e| e.node()),
                addr: addr.node(),
                data: sig,
            })
        });
        value
    }
}

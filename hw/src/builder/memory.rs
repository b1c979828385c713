//! Synchronous memories: declaration, initial contents, write ports (whole
//! words or lanes under a mask), read ports (read-first or write-first).
//!
//! Semantics, identical in the evaluator and the emitted Verilog:
//! - A memory has `depth` words, any depth >= 1; its addresses are the fewest
//!   bits that reach the last word (at least one). When the depth is not a
//!   power of two, an address >= depth is out of range: a write there is
//!   ignored and a read there loads 0. (Power-of-two memories have no such
//!   addresses and their Verilog carries no guard.)
//! - All write ports write at the clock edge; when several write the same
//!   word (or lane) in one cycle the port declared last wins.
//! - A read port is a register loaded at the clock edge (when enabled).
//!   Read-first ports load the word as it was before the edge's writes.
//!   Write-first ports load what the word holds after them, lane by lane.
//! - Initial contents, when given, are the words at time zero in every
//!   simulator and in synthesis (an `initial` block); otherwise the evaluator
//!   starts at zero and four-valued simulators at X.
//!
//! Write-first is lowered here, not in the back ends: the port is a read-first
//! port, and for each write port a register remembers (when the read port
//! loads) whether that port wrote the address being read, in which lanes, and
//! with what data; the returned value overlays those lanes on the read data,
//! later ports on top. The memory itself stays read-first, which every FPGA
//! block RAM offers, and the bypass is a mux after the RAM's output register.

use super::*;

/// Deepest memory the builder accepts (24 address bits).
const MAX_DEPTH: u64 = 1 << 24;

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
        self.add_memory(name, elem, 1u64 << addr_width)
    }

    /// A memory of `depth` words of type `elem` (any depth in 1..=2^24). Its
    /// address is [`mem_addr_width`](Self::mem_addr_width) bits wide; when
    /// `depth` is not a power of two, writes to addresses >= `depth` are
    /// ignored and reads of them give 0.
    #[track_caller]
    pub fn memory_depth(&mut self, name: &str, elem: Ty, depth: u64) -> Mem {
        if depth == 0 || depth > MAX_DEPTH {
            elab_error(format!(
                "memory '{name}': depth must be 1..={MAX_DEPTH}, got {depth}"
            ));
        }
        self.add_memory(name, elem, depth)
    }

    /// A read-only memory holding `words` (its depth is their number): a
    /// memory with initial contents and no write port. Read it with
    /// [`mem_read`](Self::mem_read).
    #[track_caller]
    pub fn rom<V: Into<BigInt>>(
        &mut self,
        name: &str,
        elem: Ty,
        words: impl IntoIterator<Item = V>,
    ) -> Mem {
        let words: Vec<BigInt> = words.into_iter().map(Into::into).collect();
        let mem = self.memory_depth(name, elem, words.len() as u64);
        self.mem_init(mem, words);
        mem
    }

    /// Sets a memory's initial contents (once): word k starts as `words[k]`
    /// (a value of the element type, as for [`lit`](Self::lit)); words past
    /// the end of `words` start at 0.
    #[track_caller]
    pub fn mem_init<V: Into<BigInt>>(&mut self, mem: Mem, words: impl IntoIterator<Item = V>) {
        self.own_mem(mem);
        let (name, elem, depth) = self.with(|m| {
            let mm = &m.def.memories[mem.index];
            (mm.name.clone(), mm.elem, mm.depth)
        });
        let mut bits: Vec<BigUint> = words
            .into_iter()
            .map(|w| const_bits(elem, &w.into()))
            .collect();
        if bits.len() as u64 > depth {
            elab_error(format!(
                "memory '{name}' has {depth} words, given {} initial values",
                bits.len()
            ));
        }
        bits.resize(depth as usize, BigUint::zero());
        self.with(|m| {
            let mm = &mut m.def.memories[mem.index];
            if mm.init.is_some() {
                elab_error(format!("memory '{name}' already has initial contents"));
            }
            mm.init = Some(bits);
        });
    }

    /// Declares that no read of `mem` uses a word in the cycle it is written
    /// (for `reason`, written next to the attribute): synthesis may then give
    /// such a read any value (`(* no_rw_check *)`, which Yosys honours), and
    /// builds no logic around the block RAM to return the old word, which on
    /// an FPGA part whose RAMs leave a read-write collision undefined is a
    /// mux and a register per bit between the RAM's output and its reader.
    /// Simulation is unchanged (read-first). A memory with a write-first
    /// read port cannot be declared so: its bypass relies on the old word.
    #[track_caller]
    pub fn mem_no_rw_check(&mut self, mem: Mem, reason: &str) {
        self.own_mem(mem);
        let reason = request_reason("mem_no_rw_check", reason);
        let (name, write_first) = self.with(|m| {
            let mm = &m.def.memories[mem.index];
            (mm.name.clone(), mm.reads.iter().any(|r| r.write_first))
        });
        if write_first {
            elab_error(format!(
                "memory '{name}' has a write-first read port, whose bypass needs the old word: \
                 it cannot be declared free of read-write collisions"
            ));
        }
        self.with(|m| m.def.memories[mem.index].no_rw_check = Some(reason));
    }

    /// The width of `mem`'s addresses.
    #[track_caller]
    pub fn mem_addr_width(&self, mem: Mem) -> u32 {
        self.own_mem(mem);
        self.with(|m| m.def.memories[mem.index].addr_width)
    }

    #[track_caller]
    fn add_memory(&mut self, name: &str, elem: Ty, depth: u64) -> Mem {
        self.claim_name(name);
        let addr_width = (u64::BITS - (depth - 1).leading_zeros()).max(1);
        let loc = Location::caller();
        let index = self.with(|m| {
            m.def.memories.push(Memory {
                name: name.to_string(),
                elem,
                addr_width,
                depth,
                init: None,
                writes: Vec::new(),
                reads: Vec::new(),
                no_rw_check: None,
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
    fn own_mem(&self, mem: Mem) {
        if mem.token != self.token {
            elab_error("memory belongs to another module".into());
        }
    }

    #[track_caller]
    fn check_addr(&self, mem: Mem, addr: Expr) -> (String, Ty) {
        self.own(addr);
        self.own_mem(mem);
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
        self.add_write(mem, enable, addr, data, None);
    }

    /// A write port with lane enables: at the clock edge, if `enable`, lane k
    /// of `mem[addr]` (bits `k*L .. k*L+L-1`, L = element width / mask width)
    /// takes lane k of `data` where bit k of `mask` is 1; other lanes keep
    /// their value. The mask width must divide the element width (a u4 mask on
    /// a 32-bit word is a byte-enable port). Later ports win lane by lane.
    #[track_caller]
    pub fn mem_write_masked(&mut self, mem: Mem, enable: Expr, addr: Expr, data: Expr, mask: Expr) {
        self.own(mask);
        let elem = self.with(|m| m.def.memories[mem.index].elem);
        if mask.ty.signed || !elem.width.is_multiple_of(mask.ty.width) {
            elab_error(format!(
                "write mask must be unsigned with a width dividing the element width {}, got {}",
                elem.width, mask.ty
            ));
        }
        self.add_write(mem, enable, addr, data, Some(mask));
    }

    #[track_caller]
    fn add_write(&mut self, mem: Mem, enable: Expr, addr: Expr, data: Expr, mask: Option<Expr>) {
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
        let bypassed = self.with(|m| {
            m.def.memories[mem.index]
                .reads
                .iter()
                .any(|r| r.write_first)
        });
        if bypassed {
            elab_error(format!(
                "memory '{name}' already has a write-first read port: declare its write \
                 ports first (the port's bypass covers the write ports that exist when it is made)"
            ));
        }
        self.with(|m| {
            m.def.memories[mem.index].writes.push(MemWrite {
                enable: enable.node(),
                addr: addr.node(),
                data: data.node(),
                mask: mask.map(|k| k.node()),
            })
        });
    }

    /// A synchronous read port: at the clock edge, if `enable` (or always when
    /// `None`), the returned value becomes `mem[addr]` (the value before any write
    /// in the same cycle). Emitted as a register `<mem>_rd<k>_q`.
    #[track_caller]
    pub fn mem_read(&mut self, mem: Mem, enable: Option<Expr>, addr: Expr) -> Expr {
        self.add_read(mem, enable, addr, false)
    }

    /// A write-first synchronous read port: like [`mem_read`](Self::mem_read),
    /// but a word written in the cycle it is read is returned as written: lane
    /// by lane under write masks, the last declared write port winning, and 0
    /// for an out-of-range address. Covers the write ports declared before it;
    /// declaring another write port afterwards is an error.
    ///
    /// Lowered to a read-first port `<mem>_rd<k>` plus, per write port j,
    /// registers `<mem>_rd<k>_wf<j>_hit` (lanes written at the read address)
    /// and `<mem>_rd<k>_wf<j>_data`, loaded whenever the port reads.
    #[track_caller]
    pub fn mem_read_write_first(&mut self, mem: Mem, enable: Option<Expr>, addr: Expr) -> Expr {
        let (writes, elem, depth, in_range_only) = self.with(|m| {
            let mm = &m.def.memories[mem.index];
            (
                mm.writes.clone(),
                mm.elem,
                mm.depth,
                mm.has_out_of_range_addresses(),
            )
        });
        let port = self.with(|m| m.def.memories[mem.index].reads.len());
        let name = self.with(|m| m.def.memories[mem.index].name.clone());
        let raw = self.add_read(mem, enable, addr, true);
        let token = self.token;
        let expr = |n: NodeId| {
            let ty = with_module(token, |m| m.def.nodes[n].ty);
            Expr {
                token,
                node: n as u32,
                ty,
            }
        };
        let in_range = in_range_only.then(|| addr.is_lt(depth));
        let mut value = raw.as_unsigned();
        for (j, w) in writes.iter().enumerate() {
            let (we, wa, wd) = (expr(w.enable), expr(w.addr), expr(w.data));
            let mut hit = we & wa.is_eq(addr);
            if let Some(ok) = in_range {
                hit = hit & ok;
            }
            let lanes = w.mask.map_or(1, |k| expr(k).width());
            let lane_hits = match w.mask {
                None => hit,
                Some(k) => {
                    let k = expr(k);
                    let all = cat(&vec![hit; lanes as usize]);
                    all & k
                }
            };
            let prefix = format!("{name}_rd{port}_wf{j}");
            let hit_q = self.reg(&format!("{prefix}_hit"), Ty::u(lanes));
            self.set_next(hit_q, lane_hits);
            let data_q = self.reg(&format!("{prefix}_data"), Ty::u(elem.width));
            self.set_next(data_q, wd.as_unsigned());
            if let Some(e) = enable {
                self.set_enable(hit_q, e);
                self.set_enable(data_q, e);
            }
            let lane = elem.width / lanes;
            let parts: Vec<Expr> = (0..lanes)
                .rev()
                .map(|l| {
                    mux(
                        hit_q.q().bit(l),
                        data_q.q().slice(l * lane, lane),
                        value.slice(l * lane, lane),
                    )
                })
                .collect();
            value = cat(&parts);
        }
        if elem.signed {
            value.as_signed()
        } else {
            value
        }
    }

    #[track_caller]
    fn add_read(&mut self, mem: Mem, enable: Option<Expr>, addr: Expr, write_first: bool) -> Expr {
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
        if write_first && self.with(|m| m.def.memories[mem.index].no_rw_check.is_some()) {
            elab_error(format!(
                "memory '{name}' is declared free of read-write collisions (mem_no_rw_check): \
                 a write-first read port needs the old word"
            ));
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
                write_first,
            })
        });
        value
    }
}

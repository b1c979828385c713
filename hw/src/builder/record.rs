//! Records (named fields) and valid/ready streams.
//!
//! A [`RecordTy`] is a list of named, typed fields. A [`Record`] value keeps
//! one [`Expr`] per field, so a record port or register is one Verilog signal
//! per field (`hdr_seq_i`, `hdr_len_i`; `flit_crc_q`), readable in the
//! Verilog and in a waveform, while [`Record::bits`] packs it into one word
//! for a memory or a FIFO: the first field in the least significant bits,
//! each next field above it. [`RecordTy::unpack`] is the inverse.
//!
//! A *stream* named `s` is the valid/ready handshake plus a record payload:
//! `s_valid`, `s_ready` and one port per field `s_<field>`, with `_i`/`_o`
//! by direction. A transfer happens in a cycle where valid and ready are both
//! high; valid must not depend on ready. [`ModuleBuilder::stream_input`],
//! [`ModuleBuilder::stream_output`], [`ModuleBuilder::connect_stream`],
//! [`ModuleBuilder::inst_stream`] and [`ModuleBuilder::pipe`] make and join
//! the ports in one call. Every field and port name is checked when used: a
//! wrong one is an elaboration error at the caller's line that lists the
//! names there are.

use super::*;
use std::fmt;

/// A record type: named fields, packed first field lowest.
#[derive(Clone, PartialEq, Eq)]
pub struct RecordTy {
    inner: Rc<RecordInner>,
}

#[derive(PartialEq, Eq)]
struct RecordInner {
    name: String,
    fields: Vec<(String, Ty)>,
}

impl fmt::Debug for RecordTy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "record {} {{", self.inner.name)?;
        for (i, (n, t)) in self.inner.fields.iter().enumerate() {
            let sep = if i == 0 { " " } else { ", " };
            write!(f, "{sep}{n}: {t}")?;
        }
        write!(f, " }}")
    }
}

impl RecordTy {
    /// A record type called `name` with `fields` (name, type), in packing
    /// order. Field names must be identifiers, distinct, and not `valid` or
    /// `ready` (so any record can be a stream payload).
    #[track_caller]
    pub fn new(name: &str, fields: &[(&str, Ty)]) -> RecordTy {
        if fields.is_empty() {
            elab_error(format!("record '{name}' needs at least one field"));
        }
        let mut seen = BTreeSet::new();
        for (f, _) in fields {
            if let Some(p) = identifier_problem(f) {
                elab_error(format!("record '{name}': {p}"));
            }
            if matches!(*f, "valid" | "ready") {
                elab_error(format!(
                    "record '{name}': field name '{f}' is reserved for stream handshakes"
                ));
            }
            if !seen.insert(*f) {
                elab_error(format!("record '{name}' has two fields named '{f}'"));
            }
        }
        let width: u64 = fields.iter().map(|(_, t)| t.width as u64).sum();
        if width > crate::ty::MAX_WIDTH as u64 {
            elab_error(format!("record '{name}' is too wide ({width} bits)"));
        }
        RecordTy {
            inner: Rc::new(RecordInner {
                name: name.to_string(),
                fields: fields.iter().map(|(n, t)| (n.to_string(), *t)).collect(),
            }),
        }
    }

    /// A record with one field `data` of type `ty`: the payload of a plain
    /// data stream (ports `<stream>_data_i` / `_o`).
    #[track_caller]
    pub fn data(ty: Ty) -> RecordTy {
        RecordTy::new("data", &[("data", ty)])
    }

    /// The record type's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The fields (name, type) in packing order.
    pub fn fields(&self) -> impl Iterator<Item = (&str, Ty)> {
        self.inner.fields.iter().map(|(n, t)| (n.as_str(), *t))
    }

    /// Total width of the packed record.
    pub fn width(&self) -> u32 {
        self.inner.fields.iter().map(|(_, t)| t.width).sum()
    }

    /// The packed type (unsigned, [`width`](Self::width) bits): the type of
    /// a memory word or FIFO element holding the record.
    pub fn ty(&self) -> Ty {
        Ty::u(self.width())
    }

    #[track_caller]
    fn index(&self, field: &str) -> usize {
        match self.inner.fields.iter().position(|(n, _)| n == field) {
            Some(i) => i,
            None => {
                let names: Vec<&str> = self.fields().map(|(n, _)| n).collect();
                elab_error(format!(
                    "record '{}' has no field '{field}' (fields: {})",
                    self.inner.name,
                    names.join(", ")
                ))
            }
        }
    }

    /// The type of `field`.
    #[track_caller]
    pub fn field_ty(&self, field: &str) -> Ty {
        self.inner.fields[self.index(field)].1
    }

    /// The bit offset of `field` in the packed record.
    #[track_caller]
    pub fn offset(&self, field: &str) -> u32 {
        let i = self.index(field);
        self.inner.fields[..i].iter().map(|(_, t)| t.width).sum()
    }

    /// A record value from every field's value, each given exactly once.
    #[track_caller]
    pub fn pack(&self, values: &[(&str, Expr)]) -> Record {
        let mut fields: Vec<Option<Expr>> = vec![None; self.inner.fields.len()];
        for (name, v) in values {
            let i = self.index(name);
            let ty = self.inner.fields[i].1;
            if v.ty != ty {
                elab_error(format!(
                    "field '{name}' of record '{}' is {ty}, given a {} value",
                    self.inner.name, v.ty
                ));
            }
            if fields[i].replace(*v).is_some() {
                elab_error(format!("field '{name}' is given twice"));
            }
        }
        let first = values.first().map(|(_, v)| *v);
        let fields = fields
            .into_iter()
            .zip(&self.inner.fields)
            .map(|(v, (n, _))| {
                v.unwrap_or_else(|| {
                    elab_error(format!(
                        "field '{n}' of record '{}' is not given",
                        self.inner.name
                    ))
                })
            })
            .collect::<Vec<_>>();
        if let Some(first) = first {
            for f in &fields {
                same_module(first, *f);
            }
        }
        Record {
            ty: self.clone(),
            fields,
        }
    }

    /// The record packed in `bits` (of the packed type).
    #[track_caller]
    pub fn unpack(&self, bits: Expr) -> Record {
        if bits.ty.width != self.width() {
            elab_error(format!(
                "record '{}' is {} bits, unpacked from a {} value",
                self.inner.name,
                self.width(),
                bits.ty
            ));
        }
        let raw = bits.as_unsigned();
        let mut lo = 0;
        let fields = self
            .inner
            .fields
            .iter()
            .map(|(_, t)| {
                let v = if t.width == raw.ty.width {
                    raw
                } else {
                    raw.slice(lo, t.width)
                };
                lo += t.width;
                if t.signed {
                    v.as_signed()
                } else {
                    v
                }
            })
            .collect();
        Record {
            ty: self.clone(),
            fields,
        }
    }
}

/// A record value: one [`Expr`] per field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    ty: RecordTy,
    fields: Vec<Expr>,
}

impl Record {
    /// The record's type.
    pub fn ty(&self) -> &RecordTy {
        &self.ty
    }

    /// The value of `field`.
    #[track_caller]
    pub fn get(&self, field: &str) -> Expr {
        self.fields[self.ty.index(field)]
    }

    /// The same record with `field` replaced by `value`.
    #[track_caller]
    pub fn with(&self, field: &str, value: Expr) -> Record {
        let i = self.ty.index(field);
        let ty = self.ty.inner.fields[i].1;
        if value.ty != ty {
            elab_error(format!(
                "field '{field}' of record '{}' is {ty}, given a {} value",
                self.ty.inner.name, value.ty
            ));
        }
        same_module(self.fields[0], value);
        let mut r = self.clone();
        r.fields[i] = value;
        r
    }

    /// The packed word: first field in the least significant bits.
    #[track_caller]
    pub fn bits(&self) -> Expr {
        let parts: Vec<Expr> = self.fields.iter().rev().copied().collect();
        cat(&parts)
    }

    /// `(name, value)` of every field, in packing order.
    pub fn fields(&self) -> impl Iterator<Item = (&str, Expr)> {
        self.ty
            .fields()
            .map(|(n, _)| n)
            .zip(self.fields.iter().copied())
    }
}

/// A register holding a record: one register per field, `<name>_<field>`.
#[derive(Clone, Debug)]
pub struct RecordReg {
    ty: RecordTy,
    regs: Vec<Reg>,
}

impl RecordReg {
    /// The current value.
    pub fn q(&self) -> Record {
        Record {
            ty: self.ty.clone(),
            fields: self.regs.iter().map(|r| r.q).collect(),
        }
    }

    /// The register of one field (to [`assign`](ModuleBuilder::assign) it).
    #[track_caller]
    pub fn field(&self, field: &str) -> Reg {
        self.regs[self.ty.index(field)]
    }
}

/// A valid/ready stream: a valid bit and a record payload. Its ready signal
/// travels the other way and is handled by the calls that make streams.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stream {
    pub valid: Expr,
    pub data: Record,
}

/// The receiving end of an input stream port: the stream and the `ready`
/// output, which the module drives with [`ModuleBuilder::drive`].
#[derive(Clone, Debug)]
pub struct StreamSink {
    pub stream: Stream,
    pub ready: Wire,
}

fn port_name(prefix: &str, field: &str, dir: Dir) -> String {
    let suffix = match dir {
        Dir::In => "i",
        Dir::Out => "o",
    };
    format!("{prefix}_{field}_{suffix}")
}

impl ModuleBuilder {
    /// Input ports `<prefix>_<field>_i`, one per field of `ty`.
    #[track_caller]
    pub fn input_record(&mut self, prefix: &str, ty: &RecordTy) -> Record {
        let fields = ty
            .fields()
            .map(|(f, t)| self.input(&port_name(prefix, f, Dir::In), t))
            .collect();
        Record {
            ty: ty.clone(),
            fields,
        }
    }

    /// Output ports `<prefix>_<field>_o` driven by `value`'s fields.
    #[track_caller]
    pub fn output_record(&mut self, prefix: &str, value: &Record) {
        for (f, v) in value.fields() {
            self.output(&port_name(prefix, f, Dir::Out), v);
        }
    }

    /// A record register without reset (one register per field).
    #[track_caller]
    pub fn reg_record(&mut self, name: &str, ty: &RecordTy) -> RecordReg {
        let regs = ty
            .fields()
            .map(|(f, t)| self.reg(&format!("{name}_{f}"), t))
            .collect();
        RecordReg {
            ty: ty.clone(),
            regs,
        }
    }

    /// A record register with a synchronous reset: fields named in `reset`
    /// reset to the given value, the others to 0.
    #[track_caller]
    pub fn reg_record_reset(
        &mut self,
        name: &str,
        ty: &RecordTy,
        reset: &[(&str, i64)],
    ) -> RecordReg {
        let mut values = vec![0i64; ty.inner.fields.len()];
        for (f, v) in reset {
            values[ty.index(f)] = *v;
        }
        let regs = ty
            .fields()
            .zip(values)
            .map(|((f, t), v)| self.reg_reset(&format!("{name}_{f}"), t, v))
            .collect();
        RecordReg {
            ty: ty.clone(),
            regs,
        }
    }

    /// Assigns every field of `reg` from `value` on the current path.
    #[track_caller]
    pub fn assign_record(&mut self, reg: &RecordReg, value: &Record) {
        if reg.ty != value.ty {
            elab_error(format!(
                "cannot assign a {:?} to a register of {:?}",
                value.ty, reg.ty
            ));
        }
        for (r, v) in reg.regs.iter().zip(&value.fields) {
            self.assign(*r, *v);
        }
    }

    /// Connects child inputs `<prefix>_<field>_i` to `value`'s fields.
    #[track_caller]
    pub fn connect_record(&mut self, inst: Inst, prefix: &str, value: &Record) {
        for (f, v) in value.fields() {
            self.connect(inst, &port_name(prefix, f, Dir::In), v);
        }
    }

    /// The child outputs `<prefix>_<field>_o` as a record of type `ty`.
    #[track_caller]
    pub fn inst_output_record(&mut self, inst: Inst, prefix: &str, ty: &RecordTy) -> Record {
        let fields = ty
            .fields()
            .map(|(f, t)| {
                let v = self.inst_output(inst, &port_name(prefix, f, Dir::Out));
                if v.ty != t {
                    elab_error(format!(
                        "port '{}' is {}, field '{f}' of record '{}' is {t}",
                        port_name(prefix, f, Dir::Out),
                        v.ty,
                        ty.name()
                    ));
                }
                v
            })
            .collect();
        Record {
            ty: ty.clone(),
            fields,
        }
    }

    /// An input stream port `name` carrying `payload`: inputs `name_valid_i`
    /// and `name_<field>_i`, and the output `name_ready_o`, which the module
    /// drives (with [`drive`](Self::drive)) from the returned sink.
    #[track_caller]
    pub fn stream_input(&mut self, name: &str, payload: &RecordTy) -> StreamSink {
        let valid = self.input(&format!("{name}_valid_i"), Ty::BOOL);
        let data = self.input_record(name, payload);
        let ready = self.output_decl(&format!("{name}_ready_o"), Ty::BOOL);
        StreamSink {
            stream: Stream { valid, data },
            ready,
        }
    }

    /// An output stream port `name` sending `stream`: outputs `name_valid_o`
    /// and `name_<field>_o`; returns the input `name_ready_i`.
    #[track_caller]
    pub fn stream_output(&mut self, name: &str, stream: &Stream) -> Expr {
        self.output(&format!("{name}_valid_o"), stream.valid);
        self.output_record(name, &stream.data);
        self.input(&format!("{name}_ready_i"), Ty::BOOL)
    }

    /// Sends `stream` into the input stream port `name` of a child; returns
    /// the child's ready.
    #[track_caller]
    pub fn connect_stream(&mut self, inst: Inst, name: &str, stream: &Stream) -> Expr {
        self.connect(inst, &format!("{name}_valid_i"), stream.valid);
        self.connect_record(inst, name, &stream.data);
        self.inst_output(inst, &format!("{name}_ready_o"))
    }

    /// The output stream port `name` of a child, carrying `payload`, with its
    /// ready input driven by `ready`.
    #[track_caller]
    pub fn inst_stream(
        &mut self,
        inst: Inst,
        name: &str,
        payload: &RecordTy,
        ready: Expr,
    ) -> Stream {
        self.connect(inst, &format!("{name}_ready_i"), ready);
        let valid = self.inst_output(inst, &format!("{name}_valid_o"));
        let data = self.inst_output_record(inst, name, payload);
        Stream { valid, data }
    }

    /// Joins the output stream `from_port` of child `from` to the input
    /// stream `to_port` of child `to` (valid and payload forward, ready back).
    #[track_caller]
    pub fn pipe(
        &mut self,
        from: Inst,
        from_port: &str,
        to: Inst,
        to_port: &str,
        payload: &RecordTy,
    ) {
        let (from_name, to_name) = self.with(|m| {
            (
                m.def.instances[from.index].name.clone(),
                m.def.instances[to.index].name.clone(),
            )
        });
        let ready = self.wire_decl(
            &format!("{from_name}_{from_port}_to_{to_name}_ready"),
            Ty::BOOL,
        );
        let s = self.inst_stream(from, from_port, payload, ready.value);
        let r = self.connect_stream(to, to_port, &s);
        self.drive(ready, r);
    }
}

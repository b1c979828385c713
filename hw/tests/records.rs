//! Records and streams: packing, ports, registers, memory words, bulk
//! connections, and the errors a wrong field or port name gives.

use hw::*;

mod common;
use common::*;
use std::rc::Rc;

fn header() -> RecordTy {
    RecordTy::new(
        "header",
        &[("kind", Ty::u(2)), ("len", Ty::u(5)), ("delta", Ty::s(4))],
    )
}

#[test]
fn fields_pack_first_field_lowest() {
    let h = header();
    assert_eq!(h.width(), 11);
    assert_eq!(h.offset("kind"), 0);
    assert_eq!(h.offset("len"), 2);
    assert_eq!(h.offset("delta"), 7);
    assert_eq!(h.field_ty("delta"), Ty::s(4));
    let mut m = ModuleBuilder::new("pack");
    let r = m.input_record("h", &h);
    m.output("packed_o", r.bits());
    let back = h.unpack(r.bits());
    m.output("delta_o", back.get("delta"));
    m.output("len_o", back.get("len"));
    let def = m.finish();
    let names: Vec<String> = def.port_list().into_iter().map(|p| p.0).collect();
    assert_eq!(
        names,
        [
            "h_kind_i",
            "h_len_i",
            "h_delta_i",
            "packed_o",
            "delta_o",
            "len_o"
        ]
    );
    let mut e = evaluator(&def);
    set(&mut e, "h_kind_i", 0b10);
    set(&mut e, "h_len_i", 0b10011);
    e.set_int("h_delta_i", -3);
    e.eval();
    // delta (1101) | len (10011) | kind (10)
    assert_eq!(get(&e, "packed_o"), (0b1101 << 7) | (0b10011 << 2) | 0b10);
    assert_eq!(e.get_int("delta_o"), (-3).into());
    assert_eq!(get(&e, "len_o"), 0b10011);
}

#[test]
fn a_record_register_is_one_register_per_field_and_a_memory_holds_packed_records() {
    let h = header();
    let mut m = ModuleBuilder::new("store");
    let we = m.input("we_i", Ty::BOOL);
    let addr = m.input("addr_i", Ty::u(2));
    let value = m.input_record("w", &h);
    let mem = m.memory("store", h.ty(), 2);
    m.mem_write(mem, we, addr, value.bits());
    let read = h.unpack(m.mem_read(mem, None, addr));
    let last = m.reg_record_reset("last", &h, &[("len", 7)]);
    m.if_(we, |m| m.assign_record(&last, &value));
    m.output_record("r", &read);
    m.output_record("last", &last.q());
    let def = m.finish();
    let v = emit_module(&def, &Header::default());
    assert!(v.contains("reg [4:0] last_len_q;"), "{v}");
    let mut e = evaluator(&def);
    set(&mut e, "rst_i", 1);
    e.step();
    set(&mut e, "rst_i", 0);
    e.eval();
    assert_eq!(get(&e, "last_len_o"), 7);
    set(&mut e, "we_i", 1);
    set(&mut e, "addr_i", 2);
    set(&mut e, "w_kind_i", 3);
    set(&mut e, "w_len_i", 17);
    e.set_int("w_delta_i", -8);
    e.step();
    set(&mut e, "we_i", 0);
    e.step();
    e.eval();
    assert_eq!(get(&e, "r_kind_o"), 3);
    assert_eq!(get(&e, "r_len_o"), 17);
    assert_eq!(e.get_int("r_delta_o"), (-8).into());
    assert_eq!(get(&e, "last_len_o"), 17);
}

#[test]
fn a_wrong_field_name_is_an_error_at_the_callers_line_listing_the_fields() {
    let mut at = String::new();
    let msg = elab_error(|| {
        let mut m = ModuleBuilder::new("wrong");
        let r = m.input_record("h", &header());
        at = line_below(1);
        let _ = r.get("length");
    });
    assert!(msg.contains(&at), "{msg}");
    assert!(
        msg.contains("no field 'length' (fields: kind, len, delta)"),
        "{msg}"
    );
}

#[test]
fn pack_needs_every_field_once_with_its_type() {
    let msg = elab_error(|| {
        let mut m = ModuleBuilder::new("p1");
        let a = m.input("a_i", Ty::u(2));
        let _ = header().pack(&[("kind", a)]);
    });
    assert!(
        msg.contains("'len' of record 'header' is not given"),
        "{msg}"
    );
    let msg = elab_error(|| {
        let mut m = ModuleBuilder::new("p2");
        let a = m.input("a_i", Ty::u(3));
        let _ = header().pack(&[("kind", a)]);
    });
    assert!(msg.contains("is u2, given a u3"), "{msg}");
    let msg = elab_error(|| {
        let _ = RecordTy::new("bad", &[("valid", Ty::BOOL)]);
    });
    assert!(msg.contains("reserved"), "{msg}");
}

/// A one-entry register slice between two streams of `payload` (not full
/// throughput: enough to move data through the bulk connections).
fn slice(design: &mut Design, payload: &RecordTy) -> Rc<ModuleDef> {
    let payload = payload.clone();
    design.define("slice", &[], move |_, m| {
        let input = m.stream_input("in", &payload);
        let full = m.reg_reset("full", Ty::BOOL, 0);
        let held = m.reg_record("held", &payload);
        let out_ready = m.wire_decl("out_ready", Ty::BOOL);
        let take = m.wire("take", input.stream.valid & !full.q());
        m.drive(input.ready, !full.q());
        m.if_(take, |m| {
            m.assign(full, 1);
            m.assign_record(&held, &input.stream.data);
        })
        .elif(out_ready.value(), |m| m.assign(full, 0));
        let out = Stream {
            valid: full.q(),
            data: held.q(),
        };
        let ready = m.stream_output("out", &out);
        m.drive(out_ready, ready);
    })
}

#[test]
fn streams_connect_in_bulk_and_carry_their_payload() {
    let payload = RecordTy::new("word", &[("data", Ty::u(8)), ("last", Ty::BOOL)]);
    let mut design = Design::new();
    let child = slice(&mut design, &payload);
    let names: Vec<String> = child.port_list().into_iter().map(|p| p.0).collect();
    assert_eq!(
        names,
        [
            "clk_i",
            "rst_i",
            "in_valid_i",
            "in_data_i",
            "in_last_i",
            "in_ready_o",
            "out_valid_o",
            "out_data_o",
            "out_last_o",
            "out_ready_i"
        ]
    );
    let top = design.define("two", &[], |_, m| {
        let src = m.stream_input("src", &payload);
        let a = m.instance("a", &child);
        let b = m.instance("b", &child);
        let ready = m.connect_stream(a, "in", &src.stream);
        m.drive(src.ready, ready);
        m.pipe(a, "out", b, "in", &payload);
        let sink_ready = m.wire_decl("sink_ready", Ty::BOOL);
        let s = m.inst_stream(b, "out", &payload, sink_ready.value());
        let r = m.stream_output("dst", &s);
        m.drive(sink_ready, r);
    });
    let mut e = evaluator(&top);
    set(&mut e, "rst_i", 1);
    e.step();
    set(&mut e, "rst_i", 0);
    // Send 0..20 with `last` on multiples of 3; take every other cycle.
    let mut sent = 0u64;
    let mut got = Vec::new();
    for cycle in 0..200u64 {
        set(&mut e, "src_valid_i", (sent < 20) as u64);
        set(&mut e, "src_data_i", sent);
        set(&mut e, "src_last_i", sent.is_multiple_of(3) as u64);
        set(&mut e, "dst_ready_i", cycle % 2);
        e.eval();
        if get(&e, "dst_valid_o") == 1 && cycle % 2 == 1 {
            got.push((get(&e, "dst_data_o"), get(&e, "dst_last_o")));
        }
        if sent < 20 && get(&e, "src_ready_o") == 1 {
            sent += 1;
        }
        e.step();
    }
    let want: Vec<(u64, u64)> = (0..20u64)
        .map(|k| (k, k.is_multiple_of(3) as u64))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn a_stream_connected_to_a_missing_port_is_an_error_at_the_callers_line() {
    let payload = RecordTy::new("word", &[("data", Ty::u(8)), ("last", Ty::BOOL)]);
    let other = RecordTy::new("word", &[("data", Ty::u(8)), ("first", Ty::BOOL)]);
    let mut at = String::new();
    let msg = elab_error(|| {
        let mut design = Design::new();
        let child = slice(&mut design, &payload);
        design.define("bad", &[], |_, m| {
            let src = m.input_record("s", &other);
            let valid = m.input("s_valid_i", Ty::BOOL);
            let a = m.instance("a", &child);
            at = line_below(1);
            let _ = m.connect_stream(a, "in", &Stream { valid, data: src });
        });
    });
    assert!(msg.contains(&at), "{msg}");
    assert!(msg.contains("has no port 'in_first_i'"), "{msg}");
}

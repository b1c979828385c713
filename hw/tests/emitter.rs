//! The structure of the emitted Verilog: deterministic, one definition per
//! distinct module, plain identifiers only, every binary operator in its own
//! parentheses, the header on every file, and no keyword as a name.
//!
//! Semantics (that the text computes what the evaluator computes) are checked
//! under Icarus and Verilator in `tb/tests/hw_*.rs`; these checks need no tool.

use hw::*;
use num_bigint::BigInt;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

// ---------------------------------------------------------------------------
// A small random design generator using every operation of the builder.

const WIDTHS: &[u32] = &[1, 2, 4, 7, 8, 31, 32, 33, 64, 65, 100];

fn rand_ty(rng: &mut impl Rng) -> Ty {
    Ty::new(*WIDTHS.choose(rng).unwrap(), rng.gen_bool(0.5))
}

fn rand_value(rng: &mut impl Rng, ty: Ty) -> BigInt {
    let w = ty.width as usize;
    let v: u128 = rng.gen();
    let bits: BigInt = BigInt::from(v) & ((BigInt::from(1) << w) - 1);
    if ty.signed && bits.bit(w as u64 - 1) {
        bits - (BigInt::from(1) << w)
    } else {
        bits
    }
}

/// `e` converted to `ty` (truncated or extended, then cast).
fn fit(e: Expr, ty: Ty) -> Expr {
    let v = if e.width() >= ty.width {
        e.trunc(ty.width)
    } else {
        e.ext(ty.width)
    };
    if ty.signed {
        v.as_signed()
    } else {
        v.as_unsigned()
    }
}

/// Random logic over `inputs` with registers, a memory and a delay line; every
/// value ends in an output so nothing is dropped as dead.
fn random_body(rng: &mut ChaCha8Rng, m: &mut ModuleBuilder, inputs: Vec<Expr>, ops: usize) {
    let mut pool = inputs;
    let r0 = m.reg_reset("acc", Ty::s(33), -5);
    let r1 = m.reg("plain", Ty::u(65));
    pool.push(r0.q());
    pool.push(r1.q());
    let mem = m.memory("ram", Ty::s(9), 3);
    let mut names = 0;
    for _ in 0..ops {
        let n = pool.len();
        let mut a = pool[n - 1 - rng.gen_range(0..n.min(6))];
        if a.width() > 150 {
            // Keep widths bounded: concatenations and extensions compound.
            a = a.trunc(rng.gen_range(1..=70));
        }
        let b0 = *pool.choose(rng).unwrap();
        let b = fit(b0, a.ty());
        let e = match rng.gen_range(0..27) {
            0 => a + b,
            1 => a - b,
            2 => a * b,
            3 => a & b,
            4 => a | b,
            5 => a ^ b,
            6 => !a,
            7 => -a,
            8 => a.is_eq(b),
            9 => a.is_ne(b),
            10 => a.is_lt(b),
            11 => a.is_le(b),
            12 => a.is_gt(b) | a.is_ge(b),
            13 => {
                let b = fit(b0, Ty::new(rng.gen_range(1..=40), a.ty().signed));
                match rng.gen_range(0..3) {
                    0 => a.mul_wide(b),
                    k => a.mul_wide_to(b, a.width() + b.width() + k * 17 - 16),
                }
            }
            14 => a << fit(b0, Ty::u(*[3u32, 32, 33, 70].choose(rng).unwrap())),
            15 => a >> fit(b0, Ty::u(*[3u32, 32, 33, 70].choose(rng).unwrap())),
            16 => (a << rng.gen_range(0..=a.width() + 1)) ^ (a >> rng.gen_range(0..=a.width())),
            17 => a.all() ^ a.any() ^ a.parity(),
            18 => {
                let w = rng.gen_range(1..=a.width());
                a.slice(rng.gen_range(0..=a.width() - w), w)
            }
            19 => cat(&[a, b0, a]),
            20 => a.ext(a.width() + rng.gen_range(1..20)),
            21 => a.trunc(rng.gen_range(1..=a.width())),
            22 => {
                if a.ty().signed {
                    a.as_unsigned()
                } else {
                    a.as_signed()
                }
            }
            23 => mux(b0.any(), a, b),
            24 => {
                let ty = rand_ty(rng);
                m.lit(ty, rand_value(rng, ty)) + rand_value(rng, ty)
            }
            25 => {
                names += 1;
                m.wire(&format!("w{names}"), a)
            }
            _ => {
                names += 1;
                let reset = rng.gen_bool(0.5).then_some(1i64);
                delay(m, &format!("dl{names}"), a, rng.gen_range(0..4), reset)
            }
        };
        pool.push(e);
    }
    let pick = |rng: &mut ChaCha8Rng, ty: Ty| fit(*pool[pool.len() / 2..].choose(rng).unwrap(), ty);
    let v = pick(rng, Ty::s(33));
    m.set_next(r0, v);
    let en = pick(rng, Ty::BOOL);
    m.set_enable(r0, en);
    let v = pick(rng, Ty::u(65));
    m.set_next(r1, v);
    let (we, wa, wd) = (
        pick(rng, Ty::BOOL),
        pick(rng, Ty::u(3)),
        pick(rng, Ty::s(9)),
    );
    m.mem_write(mem, we, wa, wd);
    let (re, ra) = (pick(rng, Ty::BOOL), pick(rng, Ty::u(3)));
    let q = m.mem_read(mem, Some(re), ra);
    pool.push(q);
    // Everything into outputs of at most 200 bits.
    let mut group = Vec::new();
    let mut outs = 0;
    let mut width = 0;
    for e in pool {
        if width + e.width() > 200 && !group.is_empty() {
            m.output(&format!("o{outs}_o"), cat(&group));
            outs += 1;
            group.clear();
            width = 0;
        }
        width += e.width();
        group.push(e);
    }
    m.output(&format!("o{outs}_o"), cat(&group));
}

/// A random design: a leaf with random logic, a combinational cell, and a top
/// with a leaf instance, a chain of cells through a bus and a 2-D grid.
fn random_design(seed: u64) -> (Design, Rc<ModuleDef>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut d = Design::new();
    let leaf_ty = rand_ty(&mut rng);
    let leaf_seed: u64 = rng.gen();
    let leaf = d.define("leaf", &[("seed", leaf_seed.to_string())], |_, m| {
        let mut r = ChaCha8Rng::seed_from_u64(leaf_seed);
        let a = m.input("a_i", leaf_ty);
        let b = m.input("b_i", Ty::u(7));
        random_body(&mut r, m, vec![a, b], 30);
    });
    let cell_ty = rand_ty(&mut rng);
    let k = rand_value(&mut rng, cell_ty);
    let cell = d.define("pcell", &[], |_, m| {
        let x = m.input("x_i", cell_ty);
        let y = m.input("y_i", Ty::BOOL);
        let g = m.input("g_i", cell_ty);
        m.output("x_o", (x + k.clone()) ^ g);
        m.output("y_o", y ^ x.parity());
    });
    let top = d.define("top", &[], |_, m| {
        let a = m.input("a_i", rand_ty(&mut rng));
        let b = m.input("b_i", rand_ty(&mut rng));
        let u = m.instance("u_leaf", &leaf);
        m.connect(u, "a_i", fit(a, leaf_ty));
        m.connect(u, "b_i", fit(b, Ty::u(7)));
        let mut inputs = vec![a, b];
        for (name, dir, _) in leaf.port_list() {
            if dir == Dir::Out {
                inputs.push(m.inst_output(u, &name));
            }
        }
        // Grid: x flows along rows, y (one-bit elements) down columns.
        let (rows, cols) = (2, 3);
        let xs = m.bus("xs", cell_ty, &[rows, cols + 1]);
        let ys = m.bus("ys", Ty::BOOL, &[rows + 1, cols]);
        for r in 0..rows {
            m.bus_drive(
                xs,
                &[r, 0],
                fit(inputs[(r as usize) % inputs.len()], cell_ty),
            );
        }
        for c in 0..cols {
            m.bus_drive(ys, &[0, c], a.bit(0) ^ b.bit(0));
        }
        let g = m.instance_array("grid", &cell, &[("r", rows), ("c", cols)]);
        m.array_connect(g, "x_i", xs, &[g.var(0), g.var(1)]);
        m.array_connect(g, "x_o", xs, &[g.var(0), g.var(1) + 1]);
        m.array_connect(g, "y_i", ys, &[g.var(0), g.var(1)]);
        m.array_connect(g, "y_o", ys, &[g.var(0) + 1, g.var(1)]);
        m.array_broadcast(g, "g_i", fit(a + a, cell_ty));
        for r in 0..rows {
            inputs.push(m.bus_read(xs, &[r, cols]));
        }
        for c in 0..cols {
            inputs.push(m.bus_read(ys, &[rows, c]));
        }
        // A chain running backwards through a one-dimensional bus.
        let n = 4;
        let chain = m.bus("chain", cell_ty, &[n + 1]);
        m.bus_drive(chain, &[n], fit(b, cell_ty));
        let ch = m.instance_array("ch", &cell, &[("i", n)]);
        m.array_connect(ch, "x_i", chain, &[ch.var(0) * -1 + n as i64]);
        m.array_connect(ch, "x_o", chain, &[ch.var(0) * -1 + (n as i64 - 1)]);
        let one_bits = m.bus("one_bits", Ty::BOOL, &[n]);
        m.array_connect(ch, "y_i", one_bits, &[ch.var(0)]);
        let ones_out = m.bus("ones_out", Ty::BOOL, &[n]);
        m.array_connect(ch, "y_o", ones_out, &[ch.var(0)]);
        for i in 0..n {
            m.bus_drive(one_bits, &[i], a.bit(0));
        }
        m.array_broadcast(ch, "g_i", fit(b, cell_ty));
        inputs.push(m.bus_read(chain, &[0]));
        inputs.push(m.bus_read(ones_out, &[n - 1]));
        let seed: u64 = rng.gen();
        let mut r = ChaCha8Rng::seed_from_u64(seed);
        random_body(&mut r, m, inputs, 40);
    });
    (d, top)
}

fn header() -> Header {
    Header {
        generator: "emitter-test 1.0".into(),
        params: vec![("rows".into(), "2".into()), ("mode".into(), "x".into())],
    }
}

fn verilog_files(files: &[EmittedFile]) -> impl Iterator<Item = &EmittedFile> {
    files.iter().filter(|f| f.module.is_some())
}

// ---------------------------------------------------------------------------
// Text checks.

/// The text with `//` comments removed.
fn code_of(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[derive(Debug, PartialEq)]
enum Tok {
    Word(String),
    Op(String),
    Open(char),
    Close(char),
    Comma,
}

const OPERATORS: &[&str] = &[
    ">>>", "<<<", "===", "!==", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "**", "+:", "-:",
    "~&", "~|", "~^", "^~", "+", "-", "*", "/", "%", "&", "|", "^", "~", "!", "<", ">", "?", ":",
    "=",
];

fn tokens(s: &str) -> Result<Vec<Tok>, String> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '\'' {
            let start = i;
            while i < b.len() && {
                let c = b[i] as char;
                c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '\''
            } {
                i += 1;
            }
            out.push(Tok::Word(s[start..i].to_string()));
        } else if "({[".contains(c) {
            out.push(Tok::Open(c));
            i += 1;
        } else if ")}]".contains(c) {
            out.push(Tok::Close(c));
            i += 1;
        } else if c == ',' {
            out.push(Tok::Comma);
            i += 1;
        } else {
            let op = OPERATORS
                .iter()
                .find(|op| s[i..].starts_with(*op))
                .ok_or_else(|| format!("unexpected character '{c}' in '{s}'"))?;
            out.push(Tok::Op(op.to_string()));
            i += op.len();
        }
    }
    Ok(out)
}

/// Checks one expression: at the top level and inside braces, brackets and
/// `$signed(...)` no binary operator; inside a plain parenthesised group at most
/// one (a `? :` counts as one). Brackets may hold `:` and `+:` (part-selects).
fn check_expression(expr: &str) -> Result<(), String> {
    let toks = tokens(expr)?;
    // Per open group: (kind, binary operators seen, whether the group is a call).
    let mut stack: Vec<(char, u32, bool)> = vec![('^', 0, false)];
    let mut prev_is_operand = false;
    let mut prev_word: Option<String> = None;
    for t in &toks {
        match t {
            Tok::Word(w) => {
                prev_is_operand = true;
                prev_word = Some(w.clone());
                continue;
            }
            Tok::Open(c) => {
                let call = *c == '(' && prev_word.as_deref().is_some_and(|w| w.starts_with('$'));
                stack.push((*c, 0, call));
                prev_is_operand = false;
            }
            Tok::Close(c) => {
                let (open, _, _) = stack.pop().ok_or_else(|| format!("unbalanced '{expr}'"))?;
                let want = match c {
                    ')' => '(',
                    '}' => '{',
                    _ => '[',
                };
                if open != want || stack.is_empty() {
                    return Err(format!("unbalanced '{expr}'"));
                }
                prev_is_operand = true;
            }
            Tok::Comma => prev_is_operand = false,
            Tok::Op(op) => {
                let (kind, count, call) = stack.last_mut().unwrap();
                let binary = prev_is_operand;
                let counted = match op.as_str() {
                    ":" if *kind == '(' => false, // the second half of `? :`
                    ":" | "+:" if *kind == '[' => false,
                    _ => binary,
                };
                if counted {
                    *count += 1;
                    let allowed = if *kind == '(' && !*call { 1 } else { 0 };
                    if *count > allowed {
                        return Err(format!(
                            "operator '{op}' is not in its own parentheses in '{expr}'"
                        ));
                    }
                } else if !binary && !["-", "~", "&", "|", "^", "!"].contains(&op.as_str()) {
                    return Err(format!("'{op}' used as a unary operator in '{expr}'"));
                }
                prev_is_operand = false;
            }
        }
        prev_word = None;
    }
    if stack.len() != 1 {
        return Err(format!("unbalanced '{expr}'"));
    }
    Ok(())
}

/// Every expression in a module's text: right-hand sides of continuous and
/// non-blocking assignments, `if` conditions, port connections.
fn expressions(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in code_of(text).lines() {
        let l = line.trim();
        if let Some(rest) = l.strip_prefix("assign ") {
            let (_, rhs) = rest.split_once(" = ").expect("assign has '='");
            out.push(rhs.strip_suffix(';').expect("assign ends with ';'").into());
        } else if let Some(cond) = l
            .strip_prefix("if ")
            .or_else(|| l.strip_prefix("end else if "))
        {
            out.push(cond.strip_suffix(" begin").expect("if ... begin").into());
        } else if l.starts_with('.') {
            let (_, conn) = l.split_once(' ').expect("port connection");
            let conn = conn.trim_start().trim_end_matches(',');
            out.push(conn.to_string());
        } else if let Some((lhs, rhs)) = l.split_once(" <= ") {
            out.push(
                rhs.strip_suffix(';')
                    .expect("statement ends with ';'")
                    .into(),
            );
            // The memory address on the left-hand side.
            if let Some((_, addr)) = lhs.split_once('[') {
                out.push(format!("[{addr}"));
            }
        }
    }
    out
}

/// Names a module's text declares: module, ports, nets, variables, genvars,
/// generate block labels, instances.
fn declared_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let last_word = |s: &str| {
        s.trim_end_matches([';', ',', ' '])
            .rsplit([' ', ']'])
            .next()
            .unwrap()
            .to_string()
    };
    for line in code_of(text).lines() {
        let l = line.trim();
        // An attribute for synthesis (`(* mem2reg *) reg ...`).
        let l = match l.strip_prefix("(* ") {
            Some(rest) => rest.split_once(" *) ").expect("attribute closes").1,
            None => l,
        };
        let first = l.split_whitespace().next().unwrap_or("");
        match first {
            "module" => names.push(
                l.split_whitespace()
                    .nth(1)
                    .unwrap()
                    .trim_end_matches(';')
                    .into(),
            ),
            "input" | "output" | "genvar" => names.push(last_word(l)),
            "wire" | "reg" => {
                // `reg [8:0] ram [0:7];` declares `ram`, a delay line's
                // `reg [7:0] d_q [1:3];` `d_q`.
                let decl = l.trim_end_matches(';');
                let array = [" [0:", " [1:"].iter().find_map(|a| decl.rfind(a));
                let decl = match array {
                    Some(i) if decl.ends_with(']') => &decl[..i],
                    _ => decl,
                };
                names.push(last_word(decl));
            }
            "for" => names.push(l.rsplit(' ').next().unwrap().into()),
            _ => {
                // `child name (` or `child name ();` opens an instance.
                let words: Vec<&str> = l.split_whitespace().collect();
                if words.len() >= 3 && (words[2] == "(" || words[2] == "();") {
                    names.push(words[1].into());
                }
            }
        }
    }
    names
}

/// Verilog-2005 keywords (IEEE 1364-2005, Annex B), written out independently
/// of the list in `hw`.
const VERILOG_2005_KEYWORDS: &str = "always and assign automatic begin buf bufif0 bufif1 case \
    casex casez cell cmos config deassign default defparam design disable edge else end endcase \
    endconfig endfunction endgenerate endmodule endprimitive endspecify endtable endtask event \
    for force forever fork function generate genvar highz0 highz1 if ifnone incdir include \
    initial inout input instance integer join large liblist library localparam macromodule \
    medium module nand negedge nmos nor noshowcancelled not notif0 notif1 or output parameter \
    pmos posedge primitive pull0 pull1 pulldown pullup pulsestyle_onevent pulsestyle_ondetect \
    rcmos real realtime reg release repeat rnmos rpmos rtran rtranif0 rtranif1 scalared \
    showcancelled signed small specify specparam strong0 strong1 supply0 supply1 table task \
    time tran tranif0 tranif1 tri tri0 tri1 triand trior trireg unsigned use uwire vectored \
    wait wand weak0 weak1 while wire wor xnor xor";

/// A few SystemVerilog keywords that tools reading `.v` files in SV mode reject.
const SV_KEYWORDS: &str = "logic bit byte int shortint longint always_ff always_comb \
    always_latch interface class package import export return break continue unique priority \
    final type typedef struct union enum string void var";

fn keywords() -> Vec<&'static str> {
    VERILOG_2005_KEYWORDS
        .split_whitespace()
        .chain(SV_KEYWORDS.split_whitespace())
        .collect()
}

/// All structural checks on one module file.
fn check_module_text(f: &EmittedFile) -> Result<(), String> {
    let code = code_of(&f.text);
    // Plain identifiers: no escaped names, `$` only in `$signed`/`$unsigned`,
    // backquotes only in `default_nettype` directives.
    if code.contains('\\') {
        return Err(format!("{}: escaped identifier", f.name));
    }
    for (i, _) in code.match_indices('$') {
        let rest = &code[i..];
        if !(rest.starts_with("$signed(") || rest.starts_with("$unsigned(")) {
            let end = rest.find(|c: char| !c.is_ascii_alphanumeric() && c != '$' && c != '_');
            return Err(format!(
                "{}: '{}' is not a plain identifier",
                f.name,
                &rest[..end.unwrap_or(rest.len())]
            ));
        }
    }
    for l in code.lines().filter(|l| l.contains('`')) {
        if !l.starts_with("`default_nettype ") {
            return Err(format!("{}: unexpected directive '{l}'", f.name));
        }
    }
    for e in expressions(&f.text) {
        check_expression(&e).map_err(|m| format!("{}: {m}", f.name))?;
    }
    let names = declared_names(&f.text);
    let kws = keywords();
    let mut seen = BTreeSet::new();
    for n in &names {
        if !n.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            || !n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(format!("{}: declared name '{n}' is not plain", f.name));
        }
        if kws.contains(&n.as_str()) {
            return Err(format!("{}: keyword '{n}' used as a name", f.name));
        }
        if !seen.insert(n.clone()) {
            return Err(format!("{}: '{n}' is declared twice", f.name));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Tests.

#[test]
fn the_expression_checker_itself_catches_unparenthesised_operators() {
    for ok in [
        "(a + b)",
        "((a + b) * c)",
        "$signed({{3{x[4]}}, x})",
        "(s ? (a - b) : c)",
        "(~a)",
        "(|x[69:32])",
        "((|x[69:32]) ? 32'hffffffff : x[31:0])",
        "{a, (b ^ c), 4'b1010}",
        "bus[(((g_r * 3) + g_c) + 1)]",
        "$unsigned(tmp3)",
    ] {
        check_expression(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
    for bad in [
        "a + b",
        "(a + b + c)",
        "(a + b) * c",
        "{a + b, c}",
        "$signed(a + b)",
        "(s ? a + b : c)",
        "x[a + 1]",
        "(a < b) | c",
        "((a ? b : c) ? d : e) ? f : g",
    ] {
        let r = check_expression(bad);
        assert!(r.is_err(), "'{bad}' should be refused");
    }
}

#[test]
fn random_designs_have_parenthesised_operators_and_plain_unique_names() {
    let mut all = String::new();
    for seed in 0..12 {
        let (d, top) = random_design(seed);
        let files = emit_design(&d, &top, &header());
        let mut assigns = 0;
        for f in verilog_files(&files) {
            check_module_text(f).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", f.text));
            assigns += expressions(&f.text).len();
        }
        assert!(
            assigns > 50,
            "seed {seed}: only {assigns} expressions found"
        );
        all.extend(verilog_files(&files).map(|f| f.text.as_str()));
    }
    // Every kind of expression the emitter writes shows up somewhere.
    for needle in [
        " + ",
        " - ",
        " * ",
        " & ",
        " | ",
        " ^ ",
        " == ",
        " != ",
        " < ",
        " <= ",
        " > ",
        " >= ",
        " << ",
        " >> ",
        "(~",
        "(-",
        "(&",
        "(|",
        "(^",
        "$signed(",
        "$unsigned(",
        " ? ",
        "{1'b0}}",
        "generate",
        "(* mem2reg *) reg",
    ] {
        assert!(all.contains(needle), "no '{needle}' in the text");
    }
}

#[test]
fn emission_is_deterministic() {
    for seed in [1u64, 7, 42] {
        let (d1, t1) = random_design(seed);
        let first = emit_design(&d1, &t1, &header());
        // Other designs built in between must not change anything.
        let (d2, t2) = random_design(seed + 1000);
        let other = emit_design(&d2, &t2, &header());
        assert_ne!(first, other);
        let (d3, t3) = random_design(seed);
        let again = emit_design(&d3, &t3, &header());
        assert_eq!(first.len(), again.len());
        for (a, b) in first.iter().zip(&again) {
            assert_eq!(a.name, b.name);
            assert!(
                a.text == b.text,
                "seed {seed}: {} differs between builds",
                a.name
            );
        }
        // Emitting the same design twice also gives the same text.
        assert_eq!(first, emit_design(&d1, &t1, &header()));
    }
}

#[test]
fn one_definition_per_distinct_module() {
    let mut d = Design::new();
    let pe = |d: &mut Design, w: u32| {
        d.define(
            &format!("pe_w{w}"),
            &[("width", w.to_string())],
            move |_, m| {
                m.doc("a processing element");
                let a = m.input("a_i", Ty::u(w));
                let r = m.reg_reset("acc", Ty::u(w), 0);
                m.set_next(r, r.q() + a);
                m.output("y_o", r.q());
            },
        )
    };
    let row = |d: &mut Design, n: u32| {
        let p8 = pe(d, 8);
        let p4 = pe(d, 4);
        d.define(
            &format!("row_n{n}"),
            &[("n", n.to_string())],
            move |_, m| {
                let a = m.input("a_i", Ty::u(8));
                let mut acc = a;
                for i in 0..n {
                    let u = m.instance(&format!("pe{i}"), &p8);
                    m.connect(u, "a_i", acc);
                    acc = m.inst_output(u, "y_o");
                    let v = m.instance(&format!("small{i}"), &p4);
                    m.connect(v, "a_i", a.trunc(4));
                    let y = m.inst_output(v, "y_o");
                    m.output(&format!("s{i}_o"), y);
                }
                let bus = m.bus("b", Ty::u(8), &[n]);
                let arr = m.instance_array("arr", &p8, &[("i", n)]);
                m.array_broadcast(arr, "a_i", acc);
                m.array_connect(arr, "y_o", bus, &[arr.var(0)]);
                let last = m.bus_read(bus, &[n - 1]);
                m.output("y_o", last);
            },
        )
    };
    let r3 = row(&mut d, 3);
    let r5 = row(&mut d, 5);
    let r3_again = row(&mut d, 3);
    assert!(
        Rc::ptr_eq(&r3, &r3_again),
        "the same key returns the same definition"
    );
    let top = d.define("top", &[], |_, m| {
        let a = m.input("a_i", Ty::u(8));
        for (i, r) in [&r3, &r5, &r3].into_iter().enumerate() {
            let u = m.instance(&format!("row{i}"), r);
            m.connect(u, "a_i", a);
            let y = m.inst_output(u, "y_o");
            m.output(&format!("y{i}_o"), y);
        }
    });
    let files = emit_design(&d, &top, &header());
    let expect = ["pe_w8", "pe_w4", "row_n3", "row_n5", "top"];
    let mut defined: BTreeMap<String, usize> = BTreeMap::new();
    for f in verilog_files(&files) {
        let code = code_of(&f.text);
        let modules: Vec<&str> = code
            .lines()
            .filter(|l| l.starts_with("module "))
            .map(|l| l.split_whitespace().nth(1).unwrap().trim_end_matches(';'))
            .collect();
        assert_eq!(modules.len(), 1, "{}: one module per file", f.name);
        assert_eq!(code.matches("endmodule").count(), 1);
        assert_eq!(f.name, format!("{}.v", modules[0]));
        assert_eq!(f.module.as_deref(), Some(modules[0]));
        *defined.entry(modules[0].to_string()).or_default() += 1;
    }
    assert_eq!(defined.len(), expect.len(), "{defined:?}");
    for name in expect {
        assert_eq!(defined.get(name), Some(&1), "{name}: {defined:?}");
    }
    // The file list names each source once, children before parents.
    let list = &files
        .iter()
        .find(|f| f.name == emit::FILE_LIST)
        .unwrap()
        .text;
    let order: Vec<&str> = list.lines().collect();
    assert_eq!(order.len(), expect.len());
    let pos = |n: &str| order.iter().position(|l| *l == format!("{n}.v")).unwrap();
    assert!(pos("pe_w8") < pos("row_n3") && pos("pe_w4") < pos("row_n5"));
    assert!(pos("row_n3") < pos("top") && pos("row_n5") < pos("top"));
    assert_eq!(order.last(), Some(&"top.v"));
    // Instances refer to the definitions by name.
    let top_text = &files.iter().find(|f| f.name == "top.v").unwrap().text;
    assert_eq!(top_text.matches("row_n3 row").count(), 2);
    assert_eq!(top_text.matches("row_n5 row").count(), 1);
}

#[test]
fn a_name_cannot_stand_for_two_parameter_sets() {
    quiet_elab_errors();
    let r = catch_elab(|| {
        let mut d = Design::new();
        for w in [4, 8] {
            d.define("pe", &[("width", w.to_string())], |_, m| {
                let a = m.input("a_i", Ty::u(w));
                m.output("y_o", a);
            });
        }
    });
    let msg = r.unwrap_err().message;
    assert!(msg.contains("two parameter sets"), "{msg}");
}

#[test]
fn every_file_has_the_header() {
    let (d, top) = random_design(3);
    let files = emit_design(&d, &top, &header());
    let mut n = 0;
    for f in verilog_files(&files) {
        let def = d.module(f.module.as_deref().unwrap()).unwrap();
        let lines: Vec<&str> = f.text.lines().collect();
        assert_eq!(
            lines[0], "// Generated by emitter-test 1.0. Do not edit.",
            "{}",
            f.name
        );
        assert_eq!(lines[1], "//");
        assert!(
            lines[2].starts_with(&format!("// Module {}", def.name)),
            "{}",
            lines[2]
        );
        let params = if def.params.is_empty() {
            "(none)".to_string()
        } else {
            def.params
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(lines[3], format!("// Module parameters: {params}"));
        assert_eq!(lines[4], "// Design parameters: rows=2 mode=x");
        assert!(lines.contains(&"`default_nettype none"), "{}", f.name);
        assert_eq!(lines.last(), Some(&"`default_nettype wire"), "{}", f.name);
        // The directive comes before the module, its reset after it.
        let none = lines
            .iter()
            .position(|l| *l == "`default_nettype none")
            .unwrap();
        let module = lines.iter().position(|l| l.starts_with("module ")).unwrap();
        let end = lines.iter().position(|l| *l == "endmodule").unwrap();
        assert!(none < module && module < end && end < lines.len() - 1);
        n += 1;
    }
    assert_eq!(n, d.hierarchy(&top).len());
    // Doc strings reach the header; parameters with their values too.
    let leaf = files.iter().find(|f| f.name == "leaf.v").unwrap();
    assert!(leaf
        .text
        .lines()
        .nth(3)
        .unwrap()
        .starts_with("// Module parameters: seed="));
    let mut m = ModuleBuilder::new("documented");
    m.doc("adds one");
    let a = m.input("a_i", Ty::u(3));
    m.output("y_o", a + 1);
    let text = emit_module(&m.finish(), &Header::default());
    assert!(text.contains("// Module documented: adds one\n"), "{text}");
    assert!(text.contains("// Design parameters: (none)\n"), "{text}");
}

#[test]
fn the_waiver_file_and_file_list_are_emitted() {
    let mut d = Design::new();
    let top = d.define("waived", &[], |_, m| {
        let a = m.input("a_i", Ty::u(8));
        let w = m.wire("low", a.slice(0, 4));
        m.waive("UNUSEDSIGNAL", "a_i", "only the low nibble matters here");
        m.output("y_o", w);
    });
    let files = emit_design(&d, &top, &header());
    let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, vec!["waived.v", emit::WAIVER_FILE, emit::FILE_LIST]);
    let vlt = &files[1].text;
    assert!(vlt.contains("`verilator_config"));
    assert!(
        vlt.contains("// waived.a_i: only the low nibble matters here"),
        "{vlt}"
    );
    assert!(vlt.contains("lint_off -rule UNUSEDSIGNAL -file \"waived.v\" -match \"*'a_i'*\""));
}

#[test]
fn no_inline_requests_reach_the_verilator_configuration() {
    quiet_elab_errors();
    let mut d = Design::new();
    let leaf = d.define("big_leaf", &[], |_, m| {
        m.no_inline("instantiated many times");
        let a = m.input("a_i", Ty::u(8));
        m.output("y_o", a + 1);
    });
    let top = d.define("holder", &[], |_, m| {
        let a = m.input("a_i", Ty::u(8));
        let u = m.instance("u", &leaf);
        m.connect(u, "a_i", a);
        let y = m.inst_output(u, "y_o");
        m.output("y_o", y);
    });
    let files = emit_design(&d, &top, &header());
    let vlt = &files
        .iter()
        .find(|f| f.name == emit::WAIVER_FILE)
        .unwrap()
        .text;
    assert!(
        vlt.contains(
            "// big_leaf: not inlined: instantiated many times\nno_inline -module \"big_leaf\"\n"
        ),
        "{vlt}"
    );
    assert!(!vlt.contains("\"holder\""), "{vlt}");
    // The Verilog itself does not change.
    let leaf_text = &files.iter().find(|f| f.name == "big_leaf.v").unwrap().text;
    assert!(!leaf_text.contains("inline"), "{leaf_text}");
    // Shared code: not inlined, and every input public, read-only (clock and reset too).
    let mut d = Design::new();
    let leaf = d.define("shared_leaf", &[], |_, m| {
        m.shared_code("one copy for all");
        let a = m.input("a_i", Ty::u(8));
        let r = m.reg("r", Ty::u(8));
        m.set_next(r, a);
        m.output("y_o", r.q());
    });
    let top = d.define("holder2", &[], |_, m| {
        let a = m.input("a_i", Ty::u(8));
        let u = m.instance("u", &leaf);
        m.connect(u, "a_i", a);
        let y = m.inst_output(u, "y_o");
        m.output("y_o", y);
    });
    assert!(SimLayout::any_shared(&top));
    let files = emit_design(&d, &top, &header());
    let vlt = &files
        .iter()
        .find(|f| f.name == emit::WAIVER_FILE)
        .unwrap()
        .text;
    for line in [
        "// shared_leaf: one code for all instances: one copy for all",
        "no_inline -module \"shared_leaf\"",
        "public_flat_rd -module \"shared_leaf\" -var \"clk_i\"",
        "public_flat_rd -module \"shared_leaf\" -var \"a_i\"",
    ] {
        assert!(vlt.lines().any(|l| l == line), "{line} missing: {vlt}");
    }
    assert!(!vlt.contains("-var \"y_o\""), "{vlt}");
    // A request needs its reason, like a waiver.
    let err = catch_elab(|| {
        let mut m = ModuleBuilder::new("unexplained");
        m.no_inline(" ");
        m.finish()
    });
    assert!(err.is_err());
}

#[test]
fn keep_hierarchy_marks_only_its_module() {
    quiet_elab_errors();
    let mut d = Design::new();
    let kept = d.define("kept_reg", &[], |_, m| {
        m.keep_hierarchy("a copy of a register that synthesis must not merge");
        let a = m.input("d_i", Ty::u(8));
        let r = m.reg("q", Ty::u(8));
        m.set_next(r, a);
        m.output("q_o", r.q());
    });
    let top = d.define("holder3", &[], |_, m| {
        let a = m.input("a_i", Ty::u(8));
        let u = m.instance("u", &kept);
        m.connect(u, "d_i", a);
        let y = m.inst_output(u, "q_o");
        m.output("y_o", y);
    });
    let files = emit_design(&d, &top, &header());
    let text = |name: &str| &files.iter().find(|f| f.name == name).unwrap().text;
    let kept_text = text("kept_reg.v");
    assert!(
        kept_text.contains(
            "// Kept as a module by synthesis: a copy of a register that synthesis must not merge\n\
             (* keep_hierarchy *)\nmodule kept_reg ("
        ),
        "{kept_text}"
    );
    assert!(!text("holder3.v").contains("keep_hierarchy"));
    // A request needs its reason, on one line.
    for reason in [" ", "two\nlines"] {
        let err = catch_elab(|| {
            let mut m = ModuleBuilder::new("unexplained");
            m.keep_hierarchy(reason);
            m.finish()
        });
        assert!(err.is_err(), "{reason:?}");
    }
}

#[test]
fn verilog_keywords_are_refused_as_names() {
    quiet_elab_errors();
    let kws = keywords();
    assert!(kws.len() > 120);
    for kw in kws {
        assert!(identifier_problem(kw).is_some(), "'{kw}' accepted");
        let as_module = catch_elab(|| ModuleBuilder::new(kw).finish());
        assert!(as_module.is_err(), "module '{kw}' accepted");
        type Use = fn(&mut ModuleBuilder, &str, Expr);
        let uses: [(&str, Use); 6] = [
            ("wire", |m, n, a| {
                m.wire(n, a);
            }),
            ("reg", |m, n, a| {
                let r = m.reg(n, a.ty());
                m.set_next(r, a);
            }),
            ("memory", |m, n, _| {
                m.memory(n, Ty::u(8), 2);
            }),
            ("bus", |m, n, _| {
                m.bus(n, Ty::u(8), &[2]);
            }),
            ("instance", |m, n, _| {
                let mut d = Design::new();
                let child = d.define("child", &[], |_, c| {
                    let x = c.input("x_i", Ty::u(1));
                    c.output("y_o", x);
                });
                m.instance(n, &child);
            }),
            ("instance array", |m, n, _| {
                let mut d = Design::new();
                let child = d.define("child", &[], |_, c| {
                    let x = c.input("x_i", Ty::u(1));
                    c.output("y_o", x);
                });
                m.instance_array(n, &child, &[("i", 2)]);
            }),
        ];
        for (what, f) in uses {
            let r = catch_elab(|| {
                let mut m = ModuleBuilder::new("t");
                let a = m.input("a_i", Ty::u(1));
                f(&mut m, kw, a);
            });
            let msg = r
                .err()
                .unwrap_or_else(|| panic!("{what} '{kw}' accepted"))
                .message;
            assert!(msg.contains("keyword"), "{what} '{kw}': {msg}");
        }
    }
    // Case matters in Verilog: these are plain names.
    for ok in ["Reg", "WIRE", "Module", "regs", "wire2"] {
        assert!(identifier_problem(ok).is_none(), "'{ok}' refused");
    }
}

#[test]
fn generated_names_cannot_be_taken_by_the_user() {
    quiet_elab_errors();
    let clashes: [fn(&mut ModuleBuilder, Expr); 5] = [
        |m, a| {
            let r = m.reg("r", Ty::u(1));
            m.set_next(r, a);
            m.wire("r_d", a);
        },
        |m, a| {
            m.wire("r_en", a);
            let r = m.reg("r", Ty::u(1));
            m.set_next(r, a);
        },
        |m, a| {
            let mem = m.memory("ram", Ty::u(1), 1);
            m.wire("ram_rd0_q", a);
            m.mem_read(mem, None, a);
        },
        |m, a| {
            m.wire("tmp0", a);
        },
        |m, _| {
            let _ = m.input("clk_i", Ty::u(1));
        },
    ];
    for (i, f) in clashes.into_iter().enumerate() {
        let r = catch_elab(|| {
            let mut m = ModuleBuilder::new("t");
            let a = m.input("a_i", Ty::u(1));
            f(&mut m, a);
            m.finish()
        });
        assert!(r.is_err(), "clash {i} accepted");
    }
}

#[test]
fn a_memory_free_of_collisions_carries_the_attribute_and_its_reason() {
    quiet_elab_errors();
    let mut d = Design::new();
    let top = d.define("two_copies", &[], |_, m| {
        let en = m.input("en_i", Ty::BOOL);
        let addr = m.input("addr_i", Ty::u(4));
        let data = m.input("data_i", Ty::u(8));
        let free = m.memory("free", Ty::u(8), 4);
        m.mem_no_rw_check(free, "no read uses the word written in its cycle");
        m.mem_write(free, en, addr, data);
        let a = m.mem_read(free, None, addr);
        let checked = m.memory("checked", Ty::u(8), 4);
        m.mem_write(checked, en, addr, data);
        let b = m.mem_read(checked, None, addr);
        m.output("a_o", a);
        m.output("b_o", b);
    });
    let files = emit_design(&d, &top, &header());
    let text = &files
        .iter()
        .find(|f| f.name == "two_copies.v")
        .unwrap()
        .text;
    assert!(
        text.contains(
            "  // No read-write collision logic: no read uses the word written in its cycle\n  \
             (* no_rw_check *)\n  reg [7:0] free [0:15];\n  reg [7:0] checked [0:15];"
        ),
        "{text}"
    );
    assert_eq!(text.matches("no_rw_check").count(), 1, "{text}");
    // A write-first port needs the old word, in either order of requests.
    let err = catch_elab(|| {
        let mut m = ModuleBuilder::new("first_then_free");
        let addr = m.input("addr_i", Ty::u(4));
        let mem = m.memory("mem", Ty::u(8), 4);
        let v = m.mem_read_write_first(mem, None, addr);
        m.output("v_o", v);
        m.mem_no_rw_check(mem, "a reason");
        m.finish()
    });
    assert!(err.is_err());
    let err = catch_elab(|| {
        let mut m = ModuleBuilder::new("free_then_first");
        let addr = m.input("addr_i", Ty::u(4));
        let mem = m.memory("mem", Ty::u(8), 4);
        m.mem_no_rw_check(mem, "a reason");
        let v = m.mem_read_write_first(mem, None, addr);
        m.output("v_o", v);
        m.finish()
    });
    assert!(err.is_err());
    // The reason is one line.
    let err = catch_elab(|| {
        let mut m = ModuleBuilder::new("unexplained_memory");
        let mem = m.memory("mem", Ty::u(8), 4);
        m.mem_no_rw_check(mem, "two\nlines");
        m.finish()
    });
    assert!(err.is_err());
}

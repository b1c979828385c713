//! Identifier rules: what a Rust-side name may be so that it survives into
//! Verilog unchanged and never collides with a keyword or a generated name.

/// Verilog-2005 and SystemVerilog-2017 keywords (a name that is a keyword in either
/// would break a tool that reads the file in SystemVerilog mode, as Verilator and
/// Yosys' `-sv` may).
const KEYWORDS: &[&str] = &[
    "accept_on", "alias", "always", "always_comb", "always_ff", "always_latch", "and",
    "assert", "assign", "assume", "automatic", "before", "begin", "bind", "bins", "binsof",
    "bit", "break", "buf", "bufif0", "bufif1", "byte", "case", "casex", "casez", "cell",
    "chandle", "checker", "class", "clocking", "cmos", "config", "const", "constraint",
    "context", "continue", "cover", "covergroup", "coverpoint", "cross", "deassign",
    "default", "defparam", "design", "disable", "dist", "do", "edge", "else", "end",
    "endcase", "endchecker", "endclass", "endclocking", "endconfig", "endfunction",
    "endgenerate", "endgroup", "endinterface", "endmodule", "endpackage", "endprimitive",
    "endprogram", "endproperty", "endspecify", "endsequence", "endtable", "endtask",
    "enum", "event", "eventually", "expect", "export", "extends", "extern", "final",
    "first_match", "for", "force", "foreach", "forever", "fork", "forkjoin", "function",
    "generate", "genvar", "global", "highz0", "highz1", "if", "iff", "ifnone",
    "ignore_bins", "illegal_bins", "implements", "implies", "import", "incdir", "include",
    "initial", "inout", "input", "inside", "instance", "int", "integer", "interconnect",
    "interface", "intersect", "join", "join_any", "join_none", "large", "let", "liblist",
    "library", "local", "localparam", "logic", "longint", "macromodule", "matches",
    "medium", "modport", "module", "nand", "negedge", "nettype", "new", "nexttime", "nmos",
    "nor", "noshowcancelled", "not", "notif0", "notif1", "null", "or", "output", "package",
    "packed", "parameter", "pmos", "posedge", "primitive", "priority", "program",
    "property", "protected", "pull0", "pull1", "pulldown", "pullup",
    "pulsestyle_ondetect", "pulsestyle_onevent", "pure", "rand", "randc", "randcase",
    "randsequence", "rcmos", "real", "realtime", "ref", "reg", "reject_on", "release",
    "repeat", "restrict", "return", "rnmos", "rpmos", "rtran", "rtranif0", "rtranif1",
    "s_always", "s_eventually", "s_nexttime", "s_until", "s_until_with", "scalared",
    "sequence", "shortint", "shortreal", "showcancelled", "signed", "small", "soft",
    "solve", "specify", "specparam", "static", "string", "strong", "strong0", "strong1",
    "struct", "super", "supply0", "supply1", "sync_accept_on", "sync_reject_on", "table",
    "tagged", "task", "this", "throughout", "time", "timeprecision", "timeunit", "tran",
    "tranif0", "tranif1", "tri", "tri0", "tri1", "triand", "trior", "trireg", "type",
    "typedef", "union", "unique", "unique0", "unsigned", "until", "until_with", "untyped",
    "use", "uwire", "var", "vectored", "virtual", "void", "wait", "wait_order", "wand",
    "weak", "weak0", "weak1", "while", "wildcard", "wire", "with", "within", "wor", "xnor",
    "xor",
];

/// Prefix of emitter-generated temporaries; user names may not take this form.
pub const TEMP_PREFIX: &str = "tmp";

/// Why `name` cannot be used as a Verilog identifier, or `None` if it can.
pub fn identifier_problem(name: &str) -> Option<String> {
    let mut chars = name.chars();
    match chars.next() {
        None => return Some("a name must not be empty".into()),
        Some(c) if !c.is_ascii_alphabetic() => {
            return Some(format!("name '{name}' must start with a letter"))
        }
        _ => {}
    }
    if !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Some(format!(
            "name '{name}' may only contain ASCII letters, digits and '_'"
        ));
    }
    if KEYWORDS.binary_search(&name).is_ok() {
        return Some(format!("name '{name}' is a Verilog/SystemVerilog keyword"));
    }
    if let Some(rest) = name.strip_prefix(TEMP_PREFIX) {
        if !rest.is_empty() && rest.chars().all(|c| c.is_ascii_digit()) {
            return Some(format!("name '{name}' is reserved for generated temporaries"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyword_table_is_sorted_for_binary_search() {
        assert!(KEYWORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn identifiers() {
        assert!(identifier_problem("acc").is_none());
        assert!(identifier_problem("a_b9").is_none());
        assert!(identifier_problem("reg").is_some());
        assert!(identifier_problem("logic").is_some());
        assert!(identifier_problem("9a").is_some());
        assert!(identifier_problem("_a").is_some());
        assert!(identifier_problem("a$b").is_some());
        assert!(identifier_problem("tmp12").is_some());
        assert!(identifier_problem("tmpfoo").is_none());
    }
}

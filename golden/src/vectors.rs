//! The reference vectors of the numerics contract (`tb/data/vectors/*.tsv`,
//! computed by an exact oracle written apart from this project), for the tests
//! that hold the golden model and the RTL to them.

use std::fmt::Display;

/// The reference vectors, copied into the repository so tests run from a clone.
pub const VECTOR_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tb/data/vectors/");

/// One data row of a vector file: its 1-based line number and its fields.
pub struct Row {
    pub line: usize,
    pub fields: Vec<String>,
}

/// The data rows of `name` (the `#` header and blank lines skipped), each
/// checked to have `columns` tab-separated fields.
pub fn read_vectors(name: &str, columns: usize) -> Vec<Row> {
    let path = format!("{VECTOR_DIR}{name}");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields: Vec<String> = line.split('\t').map(|f| f.trim().to_string()).collect();
        assert_eq!(
            fields.len(),
            columns,
            "{name}:{}: expected {columns} fields: {line:?}",
            i + 1
        );
        rows.push(Row {
            line: i + 1,
            fields,
        });
    }
    rows
}

pub fn hex32(s: &str) -> u32 {
    u32::from_str_radix(s, 16).unwrap_or_else(|e| panic!("bad hex {s:?}: {e}"))
}

pub fn hex16(s: &str) -> u16 {
    u16::from_str_radix(s, 16).unwrap_or_else(|e| panic!("bad hex {s:?}: {e}"))
}

pub fn dec<T: std::str::FromStr>(s: &str) -> T
where
    T::Err: Display,
{
    s.parse()
        .unwrap_or_else(|e| panic!("bad number {s:?}: {e}"))
}

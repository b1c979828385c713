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

/// One case of `embed_forward.tsv`: a table, an entry list and the expected
/// activations for a batch and a tile count.
pub struct EmbedCase {
    pub line: usize,
    pub rows: u32,
    pub dim: u32,
    pub batch: u32,
    pub tiles: u32,
    pub table: Vec<u32>,
    pub ids: Vec<i32>,
    pub samples: Vec<i32>,
    pub gains: Vec<u32>,
    pub activations: Vec<u32>,
}

/// Every case of `embed_forward.tsv`.
pub fn read_embed_forward() -> Vec<EmbedCase> {
    let list = |s: &str, sep: char| -> Vec<String> {
        if s.is_empty() {
            Vec::new()
        } else {
            s.split(sep).map(str::to_string).collect()
        }
    };
    let hex_matrix = |s: &str| -> Vec<u32> {
        list(s, ';')
            .iter()
            .flat_map(|row| list(row, ','))
            .map(|x| hex32(&x))
            .collect()
    };
    read_vectors("embed_forward.tsv", 8)
        .into_iter()
        .map(|row| {
            let f = &row.fields;
            let (v, d) = f[0].split_once('x').expect("VxD");
            let case = EmbedCase {
                line: row.line,
                rows: dec(v),
                dim: dec(d),
                batch: dec(&f[1]),
                tiles: dec(&f[2]),
                table: hex_matrix(&f[3]),
                ids: list(&f[4], ',').iter().map(|x| dec(x)).collect(),
                samples: list(&f[5], ',').iter().map(|x| dec(x)).collect(),
                gains: list(&f[6], ',').iter().map(|x| hex32(x)).collect(),
                activations: hex_matrix(&f[7]),
            };
            assert_eq!(
                case.table.len() as u32,
                case.rows * case.dim,
                "line {}",
                row.line
            );
            assert_eq!(
                case.activations.len() as u32,
                case.batch * case.dim,
                "line {}",
                row.line
            );
            case
        })
        .collect()
}

//! Helpers the run CLI's end-to-end tests share.

use npyz::WriterBuilder;
use std::path::Path;
use std::process::Output;

/// Writes `data` as a C-order .npy array of `shape`, as numpy would.
pub fn write_npy<T: npyz::AutoSerialize + Copy>(path: &Path, shape: &[u64], data: &[T]) {
    let mut file = std::fs::File::create(path).unwrap();
    let mut w = npyz::WriteOptions::new()
        .default_dtype()
        .shape(shape)
        .writer(&mut file)
        .begin_nd()
        .unwrap();
    w.extend(data.iter().copied()).unwrap();
    w.finish().unwrap();
}

/// The JSON object of `--stats`: the last line of stdout.
pub fn stats_of(out: &Output) -> serde_json::Value {
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().expect("a stats line");
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON: {line}: {e}"))
}

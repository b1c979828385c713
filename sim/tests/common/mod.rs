//! Helpers the run CLI's end-to-end tests share.

use npyz::WriterBuilder;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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

/// A usage error as every run command must report it: exit code 2, one line
/// on stderr naming `expect_in_message`, no panic, and none of `outputs`
/// written. `what` labels the run in failure messages.
pub fn assert_usage_error(out: &Output, what: &str, expect_in_message: &str, outputs: &[&Path]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{what}: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{what}: one line expected: {err}"
    );
    assert!(!err.contains("panicked"), "{what}: {err}");
    assert!(
        err.contains(expect_in_message),
        "{what}: '{expect_in_message}' not in '{err}'"
    );
    for path in outputs {
        assert!(
            !path.exists(),
            "{what}: an output file was left behind: {}",
            path.display()
        );
    }
}

/// The `sim` binary under test.
// Not every test file that shares this module runs the binary this way.
#[allow(dead_code)]
pub fn sim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sim"))
}

/// A temporary folder for one test's files.
#[allow(dead_code)]
pub struct Case {
    dir: tempfile::TempDir,
}

#[allow(dead_code)]
impl Case {
    pub fn new() -> Case {
        Case {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// A .npy file's shape, dtype (numpy's descr, e.g. `'<f4'`) and elements as
/// 32-bit words: int32 and float32 bit patterns as they are, uint16 and int8
/// widened (int8 sign-extended).
#[allow(dead_code)]
pub fn read_words(path: &Path) -> (Vec<u64>, String, Vec<u32>) {
    let bytes = std::fs::read(path).unwrap();
    let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
    let shape = npy.shape().to_vec();
    let dtype = npy.dtype().descr();
    let data: Vec<u32> = match dtype.as_str() {
        "'<i4'" => npy
            .into_vec::<i32>()
            .unwrap()
            .into_iter()
            .map(|x| x as u32)
            .collect(),
        "'<f4'" => npy
            .into_vec::<f32>()
            .unwrap()
            .into_iter()
            .map(f32::to_bits)
            .collect(),
        "'<u2'" => npy
            .into_vec::<u16>()
            .unwrap()
            .into_iter()
            .map(u32::from)
            .collect(),
        "'|i1'" => npy
            .into_vec::<i8>()
            .unwrap()
            .into_iter()
            .map(|x| x as i32 as u32)
            .collect(),
        other => panic!("unexpected result type {other}"),
    };
    (shape, dtype, data)
}

/// A float32 .npy file's shape and bit patterns.
#[allow(dead_code)]
pub fn read_f32_bits(path: &Path) -> (Vec<u64>, Vec<u32>) {
    let (shape, descr, bits) = read_words(path);
    assert_eq!(descr, "'<f4'", "{}", path.display());
    (shape, bits)
}

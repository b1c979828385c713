//! Matrices in `.npy` files: int8 or uint16 (bf16 bit patterns) in, int32 or
//! float32 out. Errors are one line; outputs are written to a temporary file
//! and renamed into place, so a failed run never leaves a partial file.

use std::io::Write as _;
use std::path::Path;

/// A row-major matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix<T> {
    pub rows: usize,
    pub cols: usize,
    pub data: Vec<T>,
}

/// Element types read from `.npy` files, with their accepted type strings.
pub trait Element: npyz::Deserialize + Copy {
    const NAME: &'static str;
    const TYPE_STRS: &'static [&'static str];
}

impl Element for i8 {
    const NAME: &'static str = "int8";
    const TYPE_STRS: &'static [&'static str] = &["|i1", "<i1", ">i1"];
}

impl Element for u16 {
    const NAME: &'static str = "uint16";
    const TYPE_STRS: &'static [&'static str] = &["<u2", ">u2"];
}

/// Reads a 2-D matrix; `what` names it in messages ("A").
pub fn read<T: Element>(path: &Path, what: &str) -> Result<Matrix<T>, String> {
    let bytes = std::fs::read(path)
        .map_err(|e| format!("cannot read {what} from {}: {e}", path.display()))?;
    let npy = npyz::NpyFile::new(&bytes[..])
        .map_err(|e| format!("{what}: {} is not a .npy file ({e})", path.display()))?;
    let dtype = match npy.dtype() {
        npyz::DType::Plain(ts) => ts.to_string(),
        other => other.descr(),
    };
    if !T::TYPE_STRS.contains(&dtype.as_str()) {
        return Err(format!(
            "{what}: {} holds '{dtype}', expected {} ('{}')",
            path.display(),
            T::NAME,
            T::TYPE_STRS[0]
        ));
    }
    let shape = npy.shape().to_vec();
    if shape.len() != 2 || shape[0] == 0 || shape[1] == 0 {
        return Err(format!(
            "{what}: {} has shape {shape:?}, expected a non-empty 2-D matrix",
            path.display()
        ));
    }
    let (rows, cols) = (shape[0] as usize, shape[1] as usize);
    let fortran = npy.order() == npyz::Order::Fortran;
    let flat: Vec<T> = npy
        .into_vec()
        .map_err(|e| format!("{what}: cannot read the data of {} ({e})", path.display()))?;
    if flat.len() != rows * cols {
        return Err(format!("{what}: {} is truncated", path.display()));
    }
    let data = if fortran {
        (0..rows * cols)
            .map(|x| flat[(x % cols) * rows + x / cols])
            .collect()
    } else {
        flat
    };
    Ok(Matrix { rows, cols, data })
}

/// Writes a 2-D matrix atomically.
pub fn write<T: npyz::AutoSerialize + Copy>(path: &Path, m: &Matrix<T>) -> Result<(), String> {
    use npyz::WriterBuilder;
    let fail = |e: &dyn std::fmt::Display| format!("cannot write {}: {e}", path.display());
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(&dir).map_err(|e| fail(&e))?;
    {
        let mut writer = npyz::WriteOptions::new()
            .default_dtype()
            .shape(&[m.rows as u64, m.cols as u64])
            .writer(tmp.as_file_mut())
            .begin_nd()
            .map_err(|e| fail(&e))?;
        writer
            .extend(m.data.iter().copied())
            .map_err(|e| fail(&e))?;
        writer.finish().map_err(|e| fail(&e))?;
    }
    tmp.as_file_mut().flush().map_err(|e| fail(&e))?;
    tmp.persist(path).map_err(|e| fail(&e.error))?;
    Ok(())
}

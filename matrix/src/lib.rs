//! `matrix`: row-major matrices and their `.npy` files, shared by the tools
//! that take matrices from users (the run CLI in `sim`, `systole-host`).
//!
//! Inputs are int8 or uint16 (bf16 bit patterns), in C or Fortran order;
//! outputs int32 or float32. Every error is one line naming the file and what
//! was expected. Outputs are written to a temporary file next to the
//! destination and renamed into place, so a failed run never leaves a partial
//! file or damages an existing one.

use std::io::Write as _;
use std::path::Path;

/// A row-major matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix<T> {
    pub rows: usize,
    pub cols: usize,
    pub data: Vec<T>,
}

/// Element types the CLI reads, with their accepted numpy type strings.
pub trait Element: npyz::Deserialize + Copy {
    /// numpy's name for the type, for messages.
    const NAME: &'static str;
    /// Accepted type strings (byte orders).
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

/// Reads a 2-D matrix of `T` from `path`; `what` names it in messages ("A").
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
    let shape: Vec<u64> = npy.shape().to_vec();
    if shape.len() != 2 {
        return Err(format!(
            "{what}: {} has shape {shape:?}, expected a 2-D matrix",
            path.display()
        ));
    }
    let (rows, cols) = (shape[0] as usize, shape[1] as usize);
    if rows == 0 || cols == 0 {
        return Err(format!(
            "{what}: {} is {rows}x{cols}; every dimension must be at least 1",
            path.display()
        ));
    }
    let fortran = npy.order() == npyz::Order::Fortran;
    let flat: Vec<T> = npy
        .into_vec::<T>()
        .map_err(|e| format!("{what}: cannot read the data of {} ({e})", path.display()))?;
    if flat.len() != rows * cols {
        return Err(format!("{what}: {} is truncated", path.display()));
    }
    let data = if fortran {
        // Column-major on disk: element (i, j) is at j * rows + i.
        (0..rows * cols)
            .map(|x| flat[(x % cols) * rows + x / cols])
            .collect()
    } else {
        flat
    };
    Ok(Matrix { rows, cols, data })
}

/// Checks that A (M x K) and B (K x N) can be multiplied; the error is one line.
pub fn check_product_shapes<T, U>(a: &Matrix<T>, b: &Matrix<U>) -> Result<(), String> {
    if a.cols != b.rows {
        return Err(format!(
            "shape mismatch: A is {}x{} and B is {}x{}; A's columns must equal B's rows",
            a.rows, a.cols, b.rows, b.cols
        ));
    }
    Ok(())
}

/// Writes a 2-D matrix atomically (temporary file, then rename).
pub fn write<T: npyz::AutoSerialize + Copy>(path: &Path, m: &Matrix<T>) -> Result<(), String> {
    use npyz::WriterBuilder;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(&dir)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    {
        let mut writer = npyz::WriteOptions::new()
            .default_dtype()
            .shape(&[m.rows as u64, m.cols as u64])
            .writer(tmp.as_file_mut())
            .begin_nd()
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        writer
            .extend(m.data.iter().copied())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        writer
            .finish()
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    tmp.as_file_mut()
        .flush()
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    tmp.persist(path)
        .map_err(|e| format!("cannot write {}: {}", path.display(), e.error))?;
    Ok(())
}

/// A uint8 array of any shape (C order), e.g. a payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bytes {
    pub shape: Vec<u64>,
    pub data: Vec<u8>,
}

/// Reads a uint8 array of any shape with at least one element from `path`
/// (Fortran order is read as its values in C order); `what` names it in
/// messages.
pub fn read_bytes(path: &Path, what: &str) -> Result<Bytes, String> {
    let bytes = std::fs::read(path)
        .map_err(|e| format!("cannot read {what} from {}: {e}", path.display()))?;
    let npy = npyz::NpyFile::new(&bytes[..])
        .map_err(|e| format!("{what}: {} is not a .npy file ({e})", path.display()))?;
    let dtype = match npy.dtype() {
        npyz::DType::Plain(ts) => ts.to_string(),
        other => other.descr(),
    };
    if !["|u1", "<u1", ">u1"].contains(&dtype.as_str()) {
        return Err(format!(
            "{what}: {} holds '{dtype}', expected uint8 ('|u1')",
            path.display()
        ));
    }
    let shape: Vec<u64> = npy.shape().to_vec();
    let len: u64 = shape.iter().product();
    if len == 0 {
        return Err(format!(
            "{what}: {} has shape {shape:?}; it must hold at least one byte",
            path.display()
        ));
    }
    let fortran = npy.order() == npyz::Order::Fortran;
    let flat: Vec<u8> = npy
        .into_vec::<u8>()
        .map_err(|e| format!("{what}: cannot read the data of {} ({e})", path.display()))?;
    if flat.len() as u64 != len {
        return Err(format!("{what}: {} is truncated", path.display()));
    }
    let data = if fortran && shape.len() > 1 {
        // Element with C index (i0, .., ik) sits at the Fortran offset.
        let dims: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
        (0..flat.len())
            .map(|c| {
                let (mut rest, mut f, mut stride) = (c, 0usize, 1usize);
                let mut idx = vec![0usize; dims.len()];
                for k in (0..dims.len()).rev() {
                    idx[k] = rest % dims[k];
                    rest /= dims[k];
                }
                for k in 0..dims.len() {
                    f += idx[k] * stride;
                    stride *= dims[k];
                }
                flat[f]
            })
            .collect()
    } else {
        flat
    };
    Ok(Bytes { shape, data })
}

/// Writes a uint8 array of any shape atomically (temporary file, then rename).
pub fn write_bytes(path: &Path, b: &Bytes) -> Result<(), String> {
    use npyz::WriterBuilder;
    let err = |e: &dyn std::fmt::Display| format!("cannot write {}: {e}", path.display());
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(&dir).map_err(|e| err(&e))?;
    {
        let mut writer = npyz::WriteOptions::new()
            .default_dtype()
            .shape(&b.shape)
            .writer(tmp.as_file_mut())
            .begin_nd()
            .map_err(|e| err(&e))?;
        writer.extend(b.data.iter().copied()).map_err(|e| err(&e))?;
        writer.finish().map_err(|e| err(&e))?;
    }
    tmp.as_file_mut().flush().map_err(|e| err(&e))?;
    tmp.persist(path).map_err(|e| err(&e.error))?;
    Ok(())
}

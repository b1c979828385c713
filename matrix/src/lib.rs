//! `matrix`: row-major matrices and their `.npy` files, shared by the tools
//! that take matrices from users (the run CLI in `sim`, `systole-host`).
//!
//! Matrices ([`read`], [`write()`]) are 2-D: inputs int8 or uint16 (bf16 bit
//! patterns), outputs int32 or float32. Arrays ([`read_array`],
//! [`write_array`]) have any shape, for elementwise tools: int8, uint16,
//! uint8, int32 or float32 (whose bit patterns, NaN payloads included, are kept).
//! Both are read in C or Fortran order. Every error is one line naming the file and what
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

impl Element for u8 {
    const NAME: &'static str = "uint8";
    const TYPE_STRS: &'static [&'static str] = &["|u1", "<u1", ">u1"];
}

impl Element for u16 {
    const NAME: &'static str = "uint16";
    const TYPE_STRS: &'static [&'static str] = &["<u2", ">u2"];
}

impl Element for i32 {
    const NAME: &'static str = "int32";
    const TYPE_STRS: &'static [&'static str] = &["<i4", ">i4"];
}

impl Element for f32 {
    const NAME: &'static str = "float32";
    const TYPE_STRS: &'static [&'static str] = &["<f4", ">f4"];
}

/// An array of any shape, its elements in C (row-major) order.
#[derive(Debug, Clone, PartialEq)]
pub struct Array<T> {
    pub shape: Vec<u64>,
    pub data: Vec<T>,
}

/// The element type string of the `.npy` file at `path` (e.g. `<i4`), for
/// tools that accept several types; `what` names the file in messages.
pub fn dtype_of(path: &Path, what: &str) -> Result<String, String> {
    let bytes = std::fs::read(path)
        .map_err(|e| format!("cannot read {what} from {}: {e}", path.display()))?;
    let npy = npyz::NpyFile::new(&bytes[..])
        .map_err(|e| format!("{what}: {} is not a .npy file ({e})", path.display()))?;
    Ok(match npy.dtype() {
        npyz::DType::Plain(ts) => ts.to_string(),
        other => other.descr(),
    })
}

/// Reads an array of `T` of any shape with at least one element from `path`;
/// `what` names it in messages ("A"). Fortran-order files are returned in
/// C order.
pub fn read_array<T: Element>(path: &Path, what: &str) -> Result<Array<T>, String> {
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
    let size = shape
        .iter()
        .try_fold(1u64, |n, &d| n.checked_mul(d))
        .ok_or_else(|| {
            format!(
                "{what}: {} has an impossible shape {shape:?}",
                path.display()
            )
        })?;
    if size == 0 {
        return Err(format!(
            "{what}: {} has shape {shape:?}; it must hold at least one element",
            path.display()
        ));
    }
    let fortran = npy.order() == npyz::Order::Fortran;
    let flat: Vec<T> = npy
        .into_vec::<T>()
        .map_err(|e| format!("{what}: cannot read the data of {} ({e})", path.display()))?;
    if flat.len() as u64 != size {
        return Err(format!("{what}: {} is truncated", path.display()));
    }
    let data = if fortran && shape.len() > 1 {
        from_fortran(&flat, &shape)
    } else {
        flat
    };
    Ok(Array { shape, data })
}

/// `flat`, an array of `shape` in Fortran (column-major) order, in C order.
fn from_fortran<T: Copy>(flat: &[T], shape: &[u64]) -> Vec<T> {
    // The Fortran stride of each dimension: the product of those before it.
    let mut strides = Vec::with_capacity(shape.len());
    let mut s = 1u64;
    for &d in shape {
        strides.push(s);
        s *= d;
    }
    let mut index = vec![0u64; shape.len()];
    let mut out = Vec::with_capacity(flat.len());
    for _ in 0..flat.len() {
        let offset: u64 = index.iter().zip(&strides).map(|(i, s)| i * s).sum();
        out.push(flat[offset as usize]);
        // The next multi-index in C order: the last dimension fastest.
        for k in (0..shape.len()).rev() {
            index[k] += 1;
            if index[k] < shape[k] {
                break;
            }
            index[k] = 0;
        }
    }
    out
}

/// Writes an array of any shape atomically (temporary file, then rename).
pub fn write_array<T: npyz::AutoSerialize + Copy>(path: &Path, a: &Array<T>) -> Result<(), String> {
    write_shaped(path, &a.shape, &a.data)
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
    write_shaped(path, &[m.rows as u64, m.cols as u64], &m.data)
}

/// Writes `data` with `shape` to a temporary file next to `path`, then
/// renames it into place.
fn write_shaped<T: npyz::AutoSerialize + Copy>(
    path: &Path,
    shape: &[u64],
    data: &[T],
) -> Result<(), String> {
    use npyz::WriterBuilder;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(&dir)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    {
        // Buffered: the writer emits each element on its own.
        let mut out = std::io::BufWriter::new(tmp.as_file_mut());
        let mut writer = npyz::WriteOptions::new()
            .default_dtype()
            .shape(shape)
            .writer(&mut out)
            .begin_nd()
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        writer
            .extend(data.iter().copied())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        writer
            .finish()
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        out.flush()
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    tmp.as_file_mut()
        .flush()
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    tmp.persist(path)
        .map_err(|e| format!("cannot write {}: {}", path.display(), e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fortran_order_becomes_c_order_in_any_rank() {
        // A 2x3x2 array whose C-order values are 0..12, stored column-major.
        let shape = [2u64, 3, 2];
        let mut fortran = vec![0u32; 12];
        for i in 0..2 {
            for j in 0..3 {
                for k in 0..2 {
                    fortran[i + 2 * j + 6 * k] = (i * 6 + j * 2 + k) as u32;
                }
            }
        }
        assert_eq!(
            from_fortran(&fortran, &shape),
            (0..12).collect::<Vec<u32>>()
        );
    }

    #[test]
    fn arrays_round_trip_with_their_shape_and_bits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.npy");
        let nan = f32::from_bits(0x7F80_0001);
        let a = Array {
            shape: vec![1, 2, 2],
            data: vec![1.5f32, nan, -0.0, 3.0],
        };
        write_array(&path, &a).unwrap();
        let b: Array<f32> = read_array(&path, "X").unwrap();
        assert_eq!(b.shape, a.shape);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&b.data), bits(&a.data));
        assert_eq!(dtype_of(&path, "X").unwrap(), "<f4");
        assert!(read_array::<i32>(&path, "X").unwrap_err().contains("int32"));
        let empty = Array::<i32> {
            shape: vec![3, 0],
            data: vec![],
        };
        write_array(&path, &empty).unwrap();
        assert!(read_array::<i32>(&path, "X")
            .unwrap_err()
            .contains("at least one"));
    }
}

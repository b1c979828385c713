//! Reads a transformer's model folder into a [`GptModel`]
//! (`docs/numerics.md#transformer-step` defines what the model computes).
//!
//! # The model folder
//!
//! - `config.toml`: the integer keys `vocab`, `d_model`, `heads`, `d_ff`,
//!   `layers`, `context` and nothing else ([`GptDims::from_toml`]);
//! - `eps.npy`, `scale.npy`: float32 scalars (shape `()` or `(1,)`);
//! - `tok_emb.npy`: float32 \[vocab, d_model\]; `pos_emb.npy`: float32
//!   \[context, d_model\];
//! - for each layer l: `layer{l}_ln1_g`, `layer{l}_ln1_b`, `layer{l}_ln2_g`,
//!   `layer{l}_ln2_b`, `layer{l}_b2`: float32 \[d_model\];
//!   `layer{l}_wq`, `_wk`, `_wv`, `_wo`: uint16 (bf16 bit patterns)
//!   \[d_model, d_model\]; `layer{l}_w1`: uint16 \[d_model, d_ff\];
//!   `layer{l}_b1`: float32 \[d_ff\]; `layer{l}_w2`: uint16 \[d_ff, d_model\]
//!   (each a `.npy` file);
//! - `lnf_g.npy`, `lnf_b.npy`: float32 \[d_model\]; `wout.npy`: uint16
//!   \[d_model, vocab\].
//!
//! Other files in the folder (a vocabulary, notes) are ignored. float32
//! values are kept as bit patterns (NaN payloads and subnormals included):
//! what they mean is the contract's business, not the loader's.
//!
//! Every error is one line naming the file and the problem: missing, the
//! wrong dtype (the one found and the one expected), or the wrong shape
//! (both shapes).

use crate::CompileError;
use config::gpt::{GptDims, GptLayer, GptModel};
use std::path::Path;

/// Reads the model folder `dir` (format in the [module docs](self)).
pub fn load_gpt(dir: &Path) -> Result<GptModel, CompileError> {
    load(dir).map_err(CompileError)
}

fn load(dir: &Path) -> Result<GptModel, String> {
    if !dir.is_dir() {
        return Err(format!("model folder {} does not exist", dir.display()));
    }
    let config_path = dir.join("config.toml");
    if !config_path.is_file() {
        return Err(format!("{}: missing", config_path.display()));
    }
    let text = std::fs::read_to_string(&config_path)
        .map_err(|e| format!("{}: cannot read it ({e})", config_path.display()))?;
    let dims = GptDims::from_toml(&text).map_err(|e| format!("{}: {e}", config_path.display()))?;
    let (v, d, f, t) = (dims.vocab(), dims.d_model(), dims.d_ff(), dims.context());
    let folder = Folder { dir };

    let eps = folder.scalar_f32("eps")?;
    let scale = folder.scalar_f32("scale")?;
    let tok_emb = folder.f32s("tok_emb", &[v, d])?;
    let pos_emb = folder.f32s("pos_emb", &[t, d])?;
    let mut layers = Vec::with_capacity(dims.layers());
    for l in 0..dims.layers() {
        let name = |part: &str| format!("layer{l}_{part}");
        layers.push(GptLayer {
            ln1_g: folder.f32s(&name("ln1_g"), &[d])?,
            ln1_b: folder.f32s(&name("ln1_b"), &[d])?,
            ln2_g: folder.f32s(&name("ln2_g"), &[d])?,
            ln2_b: folder.f32s(&name("ln2_b"), &[d])?,
            wq: folder.bf16s(&name("wq"), &[d, d])?,
            wk: folder.bf16s(&name("wk"), &[d, d])?,
            wv: folder.bf16s(&name("wv"), &[d, d])?,
            wo: folder.bf16s(&name("wo"), &[d, d])?,
            w1: folder.bf16s(&name("w1"), &[d, f])?,
            b1: folder.f32s(&name("b1"), &[f])?,
            w2: folder.bf16s(&name("w2"), &[f, d])?,
            b2: folder.f32s(&name("b2"), &[d])?,
        });
    }
    let model = GptModel {
        dims,
        eps,
        scale,
        tok_emb,
        pos_emb,
        layers,
        lnf_g: folder.f32s("lnf_g", &[d])?,
        lnf_b: folder.f32s("lnf_b", &[d])?,
        wout: folder.bf16s("wout", &[d, v])?,
    };
    // The reads above give every vector its shape; this states it once more
    // in the model's own terms.
    model.check_shapes()?;
    Ok(model)
}

/// The `.npy` files of one model folder.
struct Folder<'a> {
    dir: &'a Path,
}

impl Folder<'_> {
    /// `name.npy` as an array of `T` (its dtype checked), with the file's
    /// path for messages; a missing file is named as such.
    fn read<T: matrix::Element>(
        &self,
        name: &str,
    ) -> Result<(matrix::Array<T>, std::path::PathBuf), String> {
        let path = self.dir.join(format!("{name}.npy"));
        if !path.is_file() {
            return Err(format!("{}: missing", path.display()));
        }
        let array = matrix::read_array::<T>(&path, name)?;
        Ok((array, path))
    }

    /// `name.npy`: float32 of `shape`, as bit patterns.
    fn f32s(&self, name: &str, shape: &[usize]) -> Result<Vec<u32>, String> {
        let (array, path) = self.read::<f32>(name)?;
        check_shape(&path, &array.shape, shape)?;
        Ok(array.data.iter().map(|x| x.to_bits()).collect())
    }

    /// `name.npy`: uint16 (bf16 bit patterns) of `shape`.
    fn bf16s(&self, name: &str, shape: &[usize]) -> Result<Vec<u16>, String> {
        let (array, path) = self.read::<u16>(name)?;
        check_shape(&path, &array.shape, shape)?;
        Ok(array.data)
    }

    /// `name.npy`: one float32, of shape `()` or `(1,)`.
    fn scalar_f32(&self, name: &str) -> Result<u32, String> {
        let (array, path) = self.read::<f32>(name)?;
        if !(array.shape.is_empty() || array.shape == [1]) {
            return Err(format!(
                "{}: has shape {}, expected a scalar: () or (1,)",
                path.display(),
                shape_text(&array.shape)
            ));
        }
        Ok(array.data[0].to_bits())
    }
}

fn check_shape(path: &Path, found: &[u64], expected: &[usize]) -> Result<(), String> {
    let expected: Vec<u64> = expected.iter().map(|&n| n as u64).collect();
    if found == expected.as_slice() {
        Ok(())
    } else {
        Err(format!(
            "{}: has shape {}, expected {}",
            path.display(),
            shape_text(found),
            shape_text(&expected)
        ))
    }
}

/// A shape as numpy prints it: `(3, 4)`, `(5,)`, `()`.
fn shape_text(shape: &[u64]) -> String {
    match shape {
        [n] => format!("({n},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use matrix::Array;

    /// Writes a complete, valid folder for `dims` (values are arbitrary
    /// distinct patterns), returning it.
    fn write_folder(dims: &GptDims) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::write(p.join("config.toml"), dims.to_toml()).unwrap();
        let (v, d, f, t) = (dims.vocab(), dims.d_model(), dims.d_ff(), dims.context());
        let mut counter = 0u32;
        let mut f32s = |name: &str, shape: &[usize]| {
            let n: usize = shape.iter().product();
            let data = (0..n)
                .map(|_| {
                    counter += 1;
                    f32::from_bits(0x3f80_0000 + counter)
                })
                .collect();
            let shape = shape.iter().map(|&x| x as u64).collect();
            matrix::write_array(&p.join(format!("{name}.npy")), &Array { shape, data }).unwrap();
        };
        f32s("eps", &[]);
        f32s("scale", &[1]);
        f32s("tok_emb", &[v, d]);
        f32s("pos_emb", &[t, d]);
        for l in 0..dims.layers() {
            for part in ["ln1_g", "ln1_b", "ln2_g", "ln2_b", "b2"] {
                f32s(&format!("layer{l}_{part}"), &[d]);
            }
            f32s(&format!("layer{l}_b1"), &[f]);
        }
        f32s("lnf_g", &[d]);
        f32s("lnf_b", &[d]);
        let bf16s = |name: &str, shape: &[usize]| {
            let n: usize = shape.iter().product();
            let data = (0..n).map(|i| 0x3f00 + i as u16).collect();
            let shape = shape.iter().map(|&x| x as u64).collect();
            matrix::write_array(&p.join(format!("{name}.npy")), &Array { shape, data }).unwrap();
        };
        for l in 0..dims.layers() {
            for part in ["wq", "wk", "wv", "wo"] {
                bf16s(&format!("layer{l}_{part}"), &[d, d]);
            }
            bf16s(&format!("layer{l}_w1"), &[d, f]);
            bf16s(&format!("layer{l}_w2"), &[f, d]);
        }
        bf16s("wout", &[d, v]);
        dir
    }

    fn dims() -> GptDims {
        GptDims::new(5, 4, 2, 3, 2, 6).unwrap()
    }

    fn load_err(dir: &Path) -> String {
        let e = load_gpt(dir).unwrap_err().0;
        assert!(!e.contains('\n'), "not one line: {e}");
        e
    }

    #[test]
    fn a_complete_folder_loads_with_its_values() {
        let dims = dims();
        let dir = write_folder(&dims);
        // Files the format does not name are ignored.
        std::fs::write(dir.path().join("vocab.txt"), "a\nb\n").unwrap();
        let model = load_gpt(dir.path()).unwrap();
        assert_eq!(model.dims, dims);
        assert_eq!(model.eps, 0x3f80_0001);
        assert_eq!(model.scale, 0x3f80_0002);
        assert_eq!(model.tok_emb[0], 0x3f80_0003);
        assert_eq!(model.layers.len(), 2);
        assert_eq!(model.layers[1].wq[5], 0x3f05);
        assert_eq!(model.wout.len(), 4 * 5);
        model.check_shapes().unwrap();
    }

    #[test]
    fn a_missing_folder_or_file_is_named() {
        let e = load_err(Path::new("/nonexistent/gpt-model"));
        assert!(e.contains("/nonexistent/gpt-model") && e.contains("does not exist"));
        let dir = write_folder(&dims());
        std::fs::remove_file(dir.path().join("layer1_wv.npy")).unwrap();
        let e = load_err(dir.path());
        assert!(e.ends_with("layer1_wv.npy: missing"), "{e}");
        std::fs::remove_file(dir.path().join("config.toml")).unwrap();
        let e = load_err(dir.path());
        assert!(e.ends_with("config.toml: missing"), "{e}");
    }

    #[test]
    fn config_errors_name_the_file_and_the_key() {
        let dims = dims();
        let dir = write_folder(&dims);
        let path = dir.path().join("config.toml");
        let good = dims.to_toml();
        for (text, wanted) in [
            (good.replace("d_ff = 3\n", ""), "missing key 'd_ff'"),
            (
                good.replace("heads = 2", "heads = \"two\""),
                "key 'heads' must be an integer",
            ),
            (
                good.replace("layers = 2", "layers = 0"),
                "'layers' = 0 is out of range",
            ),
            (format!("{good}dropout = 1\n"), "unknown key 'dropout'"),
            (
                good.replace("heads = 2", "heads = 3"),
                "heads = 3 does not divide d_model = 4",
            ),
        ] {
            std::fs::write(&path, text).unwrap();
            let e = load_err(dir.path());
            assert!(e.contains("config.toml: ") && e.contains(wanted), "{e}");
        }
    }

    #[test]
    fn a_wrong_dtype_names_the_file_and_both_dtypes() {
        let dir = write_folder(&dims());
        // A weight matrix written as float32, and an embedding as uint16.
        let wq = Array {
            shape: vec![4, 4],
            data: vec![0f32; 16],
        };
        matrix::write_array(&dir.path().join("layer0_wq.npy"), &wq).unwrap();
        let e = load_err(dir.path());
        assert!(
            e.contains("layer0_wq.npy") && e.contains("'<f4'") && e.contains("uint16"),
            "{e}"
        );
        let emb = Array {
            shape: vec![5, 4],
            data: vec![0u16; 20],
        };
        matrix::write_array(&dir.path().join("tok_emb.npy"), &emb).unwrap();
        let e = load_err(dir.path());
        assert!(
            e.contains("tok_emb.npy") && e.contains("'<u2'") && e.contains("float32"),
            "{e}"
        );
    }

    #[test]
    fn a_wrong_shape_names_the_file_and_both_shapes() {
        let dir = write_folder(&dims());
        let w1 = Array {
            shape: vec![3, 4],
            data: vec![0u16; 12],
        };
        matrix::write_array(&dir.path().join("layer1_w1.npy"), &w1).unwrap();
        let e = load_err(dir.path());
        assert!(
            e.ends_with("layer1_w1.npy: has shape (3, 4), expected (4, 3)"),
            "{e}"
        );
        let b1 = Array {
            shape: vec![1, 3],
            data: vec![0f32; 3],
        };
        matrix::write_array(&dir.path().join("layer0_b1.npy"), &b1).unwrap();
        let e = load_err(dir.path());
        assert!(
            e.ends_with("layer0_b1.npy: has shape (1, 3), expected (3,)"),
            "{e}"
        );
        let eps = Array {
            shape: vec![2],
            data: vec![0f32; 2],
        };
        matrix::write_array(&dir.path().join("eps.npy"), &eps).unwrap();
        let e = load_err(dir.path());
        assert!(
            e.ends_with("eps.npy: has shape (2,), expected a scalar: () or (1,)"),
            "{e}"
        );
    }

    #[test]
    fn a_file_that_is_not_npy_is_named() {
        let dir = write_folder(&dims());
        std::fs::write(dir.path().join("lnf_b.npy"), "not an array").unwrap();
        let e = load_err(dir.path());
        assert!(
            e.contains("lnf_b.npy") && e.contains("not a .npy file"),
            "{e}"
        );
    }
}

//! Helpers the transformer tests share: random models, the model folder
//! (the format `compiler::gpt::load_gpt` reads) written from a
//! [`GptModel`], and runs of the independent numpy reference,
//! `scripts/gpt_reference.py` (a whole generation, or one piece of the
//! step), under the Python of `build/cocotb` (made by
//! `scripts/install-tools.sh`).

use crate::tools::{numpy_python, workspace_root};
use config::gpt::{GptDims, GptLayer, GptModel};
use matrix::Array;
use rand::Rng;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `scripts/gpt_reference.py`.
/// Valid dimensions (panics on invalid ones: tests choose them).
pub fn dims(
    vocab: usize,
    d: usize,
    heads: usize,
    d_ff: usize,
    layers: usize,
    context: usize,
) -> GptDims {
    GptDims::new(vocab, d, heads, d_ff, layers, context).expect("valid dimensions")
}

pub fn reference_script() -> PathBuf {
    workspace_root().join("scripts/gpt_reference.py")
}

/// Writes `dir/<name>.npy`: float32 of `shape` with the bit patterns `values`.
pub fn write_f32s(dir: &Path, name: &str, shape: &[usize], values: &[u32]) -> Result<(), String> {
    let array = Array {
        shape: shape.iter().map(|&n| n as u64).collect(),
        data: values.iter().map(|&b| f32::from_bits(b)).collect(),
    };
    matrix::write_array(&dir.join(format!("{name}.npy")), &array)
}

/// Writes `dir/<name>.npy`: uint16 (bf16 bit patterns) of `shape`.
pub fn write_bf16s(dir: &Path, name: &str, shape: &[usize], values: &[u16]) -> Result<(), String> {
    let array = Array {
        shape: shape.iter().map(|&n| n as u64).collect(),
        data: values.to_vec(),
    };
    matrix::write_array(&dir.join(format!("{name}.npy")), &array)
}

/// The bit patterns of the float32 array `dir/<name>.npy`.
pub fn read_f32s(dir: &Path, name: &str) -> Result<Vec<u32>, String> {
    let array: Array<f32> = matrix::read_array(&dir.join(format!("{name}.npy")), name)?;
    Ok(array.data.iter().map(|x| x.to_bits()).collect())
}

/// Writes `model` as a model folder in `dir` (which must exist):
/// `config.toml` and one `.npy` per parameter, bit patterns unchanged.
/// `eps.npy` gets shape `()` and `scale.npy` shape `(1,)`, the two forms a
/// scalar may take.
pub fn write_model(model: &GptModel, dir: &Path) -> Result<(), String> {
    model.check_shapes()?;
    let dims = model.dims;
    let (v, d, f, t) = (dims.vocab(), dims.d_model(), dims.d_ff(), dims.context());
    std::fs::write(dir.join("config.toml"), dims.to_toml())
        .map_err(|e| format!("cannot write {}: {e}", dir.join("config.toml").display()))?;
    write_f32s(dir, "eps", &[], &[model.eps])?;
    write_f32s(dir, "scale", &[1], &[model.scale])?;
    write_f32s(dir, "tok_emb", &[v, d], &model.tok_emb)?;
    write_f32s(dir, "pos_emb", &[t, d], &model.pos_emb)?;
    for (l, layer) in model.layers.iter().enumerate() {
        let name = |part: &str| format!("layer{l}_{part}");
        write_f32s(dir, &name("ln1_g"), &[d], &layer.ln1_g)?;
        write_f32s(dir, &name("ln1_b"), &[d], &layer.ln1_b)?;
        write_f32s(dir, &name("ln2_g"), &[d], &layer.ln2_g)?;
        write_f32s(dir, &name("ln2_b"), &[d], &layer.ln2_b)?;
        write_bf16s(dir, &name("wq"), &[d, d], &layer.wq)?;
        write_bf16s(dir, &name("wk"), &[d, d], &layer.wk)?;
        write_bf16s(dir, &name("wv"), &[d, d], &layer.wv)?;
        write_bf16s(dir, &name("wo"), &[d, d], &layer.wo)?;
        write_bf16s(dir, &name("w1"), &[d, f], &layer.w1)?;
        write_f32s(dir, &name("b1"), &[f], &layer.b1)?;
        write_bf16s(dir, &name("w2"), &[f, d], &layer.w2)?;
        write_f32s(dir, &name("b2"), &[d], &layer.b2)?;
    }
    write_f32s(dir, "lnf_g", &[d], &model.lnf_g)?;
    write_f32s(dir, "lnf_b", &[d], &model.lnf_b)?;
    write_bf16s(dir, "wout", &[d, v], &model.wout)
}

/// Random fp32 values of about `scale` in magnitude; with `odd` set, about
/// 2% are awkward instead: subnormals (zeros to the contract), -0.0, or
/// values near 2^-126, whose products underflow.
fn random_f32s<R: Rng>(rng: &mut R, n: usize, center: f32, scale: f32, odd: bool) -> Vec<u32> {
    (0..n)
        .map(|_| {
            if odd && rng.gen_bool(0.02) {
                match rng.gen_range(0..3) {
                    0 => rng.gen_range(1..0x0080_0000u32) | (rng.gen::<u32>() & 0x8000_0000),
                    1 => 0x8000_0000,
                    _ => rng.gen_range(0x0080_0000..0x0200_0000u32),
                }
            } else {
                (center + scale * rng.gen_range(-1.0f32..1.0)).to_bits()
            }
        })
        .collect()
}

/// Random bf16 weights of about `scale` in magnitude (the top half of an
/// fp32: any bf16 pattern is a weight), with about 2% awkward ones as in
/// [`random_f32s`] when `odd` is set.
fn random_bf16s<R: Rng>(rng: &mut R, n: usize, scale: f32, odd: bool) -> Vec<u16> {
    random_f32s(rng, n, 0.0, scale, odd)
        .into_iter()
        .map(|b| (b >> 16) as u16)
        .collect()
}

/// A random model of `dims`: embeddings of about 1, weights of about
/// 1/sqrt(fan-in), gains near 1, small biases, eps 1e-5, scale 1/sqrt(Dh).
/// With `odd` set, about 2% of the parameters are subnormal (zeros to the
/// contract), -0.0 or near 2^-126 (their products underflow); never a NaN
/// or an infinity.
pub fn random_model<R: Rng>(rng: &mut R, dims: GptDims, odd: bool) -> GptModel {
    let (v, d, f, t) = (dims.vocab(), dims.d_model(), dims.d_ff(), dims.context());
    let fan = |n: usize| 1.5 / (n as f32).sqrt();
    let layers = (0..dims.layers())
        .map(|_| GptLayer {
            ln1_g: random_f32s(rng, d, 1.0, 0.2, odd),
            ln1_b: random_f32s(rng, d, 0.0, 0.2, odd),
            ln2_g: random_f32s(rng, d, 1.0, 0.2, odd),
            ln2_b: random_f32s(rng, d, 0.0, 0.2, odd),
            wq: random_bf16s(rng, d * d, fan(d), odd),
            wk: random_bf16s(rng, d * d, fan(d), odd),
            wv: random_bf16s(rng, d * d, fan(d), odd),
            wo: random_bf16s(rng, d * d, fan(d), odd),
            w1: random_bf16s(rng, d * f, fan(d), odd),
            b1: random_f32s(rng, f, 0.0, 0.2, odd),
            w2: random_bf16s(rng, f * d, fan(f), odd),
            b2: random_f32s(rng, d, 0.0, 0.2, odd),
        })
        .collect();
    GptModel {
        dims,
        eps: 1e-5f32.to_bits(),
        scale: (1.0 / (dims.head_width() as f32).sqrt()).to_bits(),
        tok_emb: random_f32s(rng, v * d, 0.0, 1.0, odd),
        pos_emb: random_f32s(rng, t * d, 0.0, 0.5, odd),
        layers,
        lnf_g: random_f32s(rng, d, 1.0, 0.2, odd),
        lnf_b: random_f32s(rng, d, 0.0, 0.2, odd),
        wout: random_bf16s(rng, d * v, fan(d), odd),
    }
}

fn run_script(args: &[&std::ffi::OsStr]) -> Result<(), String> {
    let out = Command::new(numpy_python())
        .arg(reference_script())
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", numpy_python().display()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "gpt_reference.py failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// Runs one piece of the step in the numpy reference (`--function NAME
/// DIR`: `layernorm`, `softmax` or `matmul`) on the `.npy` inputs already
/// in `dir`, with the MXU's R = `rows_r` and the VPU's W = `w`; the result
/// is written into `dir` (the script's `run_function` names the files).
pub fn run_reference_function(
    name: &str,
    dir: &Path,
    rows_r: usize,
    w: usize,
) -> Result<(), String> {
    let (rows, w) = (rows_r.to_string(), w.to_string());
    run_script(&[
        "--function".as_ref(),
        name.as_ref(),
        dir.as_os_str(),
        "--rows".as_ref(),
        rows.as_ref(),
        "--w".as_ref(),
        w.as_ref(),
    ])
}

/// What a generation gave: the tokens, and for each the logits (fp32 bit
/// patterns) it was chosen from.
pub type Generation = (Vec<u32>, Vec<Vec<u32>>);

/// Runs `scripts/gpt_reference.py` on the model folder `model_dir`: the
/// prompt, `steps` tokens, the MXU's R = `rows_r`, the VPU's W = `w`.
/// Errors carry the script's output.
pub fn run_reference(
    model_dir: &Path,
    prompt: &[u32],
    steps: usize,
    rows_r: usize,
    w: usize,
) -> Result<Generation, String> {
    let work = tempfile::tempdir().map_err(|e| format!("temporary folder: {e}"))?;
    let prompt_path = work.path().join("prompt.npy");
    let tokens_path = work.path().join("tokens.npy");
    let logits_path = work.path().join("logits.npy");
    let prompt_array = Array {
        shape: vec![prompt.len() as u64],
        data: prompt.iter().map(|&t| t as i32).collect(),
    };
    matrix::write_array(&prompt_path, &prompt_array)?;
    let (steps_text, rows, w) = (steps.to_string(), rows_r.to_string(), w.to_string());
    run_script(&[
        "--model".as_ref(),
        model_dir.as_os_str(),
        "--prompt".as_ref(),
        prompt_path.as_os_str(),
        "--steps".as_ref(),
        steps_text.as_ref(),
        "--out".as_ref(),
        tokens_path.as_os_str(),
        "--logits".as_ref(),
        logits_path.as_os_str(),
        "--rows".as_ref(),
        rows.as_ref(),
        "--w".as_ref(),
        w.as_ref(),
    ])?;
    let tokens: Array<i32> = matrix::read_array(&tokens_path, "tokens")?;
    let logits: Array<f32> = matrix::read_array(&logits_path, "logits")?;
    if tokens.shape != [steps as u64] || logits.shape.len() != 2 || logits.shape[0] != steps as u64
    {
        return Err(format!(
            "gpt_reference.py wrote tokens of shape {:?} and logits of shape {:?} for {steps} steps",
            tokens.shape, logits.shape
        ));
    }
    let vocab = logits.shape[1] as usize;
    Ok((
        tokens.data.iter().map(|&t| t as u32).collect(),
        logits
            .data
            .chunks(vocab)
            .map(|row| row.iter().map(|x| x.to_bits()).collect())
            .collect(),
    ))
}

//! The TensorCore from the host's side: a quantized MLP read from its `.npy`
//! files, compiled (`compiler`), and run on a backend. The golden backend
//! ([`run_golden`]) runs the program on `golden::tensorcore`: results and
//! cycle model. There is no RTL TensorCore yet, so there is no Verilated
//! backend ([`RTL_MISSING`] says so).

use compiler::{Layer, Mlp, Program, Requant};
use config::TensorCoreConfig;
use golden::tensorcore::{Memories, Stats};
use std::path::Path;

/// What the run CLI says when asked for the RTL TensorCore.
pub const RTL_MISSING: &str =
    "the TensorCore RTL is not built yet (hw/tensorcore holds its specification); run with --golden";

/// Reads an MLP from `dir`: for i = 1, 2, ... while `w{i}.npy` exists,
/// `w{i}.npy` int8 [in_i, out_i], `b{i}.npy` int32 [out_i], and for every
/// layer but the last `rq{i}.npy` int32 [3] = (multiplier, shift, zero
/// point). Other files are ignored. Every error is one line naming the file.
pub fn load_model(dir: &Path) -> Result<Mlp, String> {
    if !dir.is_dir() {
        return Err(format!("model folder {} does not exist", dir.display()));
    }
    let count = (1..)
        .take_while(|i| dir.join(format!("w{i}.npy")).exists())
        .count();
    if count == 0 {
        return Err(format!(
            "model folder {} holds no w1.npy (the first layer's weights)",
            dir.display()
        ));
    }
    let mut layers = Vec::with_capacity(count);
    let mut prev_out: Option<usize> = None;
    for i in 1..=count {
        let wpath = dir.join(format!("w{i}.npy"));
        let w = matrix::read::<i8>(&wpath, &format!("w{i}"))?;
        if let Some(p) = prev_out {
            if w.rows != p {
                return Err(format!(
                    "w{i}: {} is {}x{} but layer {} gives {p} outputs",
                    wpath.display(),
                    w.rows,
                    w.cols,
                    i - 1
                ));
            }
        }
        let bpath = dir.join(format!("b{i}.npy"));
        let b = matrix::read_array::<i32>(&bpath, &format!("b{i}"))?;
        if b.shape != [w.cols as u64] {
            return Err(format!(
                "b{i}: {} has shape {:?}, expected [{}] (w{i} has {} columns)",
                bpath.display(),
                b.shape,
                w.cols,
                w.cols
            ));
        }
        let rq = if i < count {
            let rpath = dir.join(format!("rq{i}.npy"));
            let rq = matrix::read_array::<i32>(&rpath, &format!("rq{i}"))?;
            if rq.shape != [3] {
                return Err(format!(
                    "rq{i}: {} has shape {:?}, expected [3] (multiplier, shift, zero point)",
                    rpath.display(),
                    rq.shape
                ));
            }
            Some(
                Requant::from_i32s(rq.data[0], rq.data[1], rq.data[2])
                    .map_err(|e| format!("rq{i}: {}: {e}", rpath.display()))?,
            )
        } else {
            None
        };
        prev_out = Some(w.cols);
        layers.push(Layer {
            inputs: w.rows,
            outputs: w.cols,
            w: w.data,
            b: b.data,
            rq,
        });
    }
    Mlp::new(layers).map_err(|e| e.to_string())
}

/// The memories a compiled program needs, with `x` ([batch][inputs]) in the
/// host input window.
pub fn memories(program: &Program, x: &[i8]) -> Memories {
    Memories {
        weights: program.weight_mem.clone(),
        biases: program.bias_mem.clone(),
        host_in: program.pack_input(x),
        host_out_rows: program.host_out_rows(),
    }
}

/// Compiles `mlp` for `batch` rows of `x` and runs it on the golden
/// TensorCore: the logits ([batch][outputs]), the counters and the program.
/// Errors (a model that does not fit) are one line.
pub fn run_golden(
    cfg: &TensorCoreConfig,
    mlp: &Mlp,
    x: &[i8],
    batch: usize,
) -> Result<(Vec<i32>, Stats, Program), String> {
    let program = compiler::compile(mlp, batch, cfg).map_err(|e| e.to_string())?;
    let (window, stats) = golden::tensorcore::run(cfg, &program.words(), &memories(&program, x))
        .map_err(|e| format!("the compiled program does not run: {e}"))?;
    Ok((program.unpack_output(&window), stats, program))
}

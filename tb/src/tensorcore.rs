//! Helpers the TensorCore tests share.

use compiler::{Layer, Requant};
use rand::Rng;

/// A random layer of `inputs` x `outputs`: any int8 weights, mostly small
/// biases and sometimes any int32 (so the accumulation wraps), and for a
/// hidden layer a requantization with a multiplier in [2^30, 2^31), a shift
/// up to 12 and any zero point.
pub fn random_layer<R: Rng>(rng: &mut R, inputs: usize, outputs: usize, hidden: bool) -> Layer {
    Layer {
        inputs,
        outputs,
        w: (0..inputs * outputs).map(|_| rng.gen::<i8>()).collect(),
        // Mostly small biases, sometimes any int32 (wraparound).
        b: (0..outputs)
            .map(|_| {
                if rng.gen_bool(0.2) {
                    rng.gen::<i32>()
                } else {
                    rng.gen_range(-5000..5000)
                }
            })
            .collect(),
        rq: hidden.then(|| Requant {
            mult: rng.gen_range(1 << 30..=i32::MAX),
            shift: rng.gen_range(0..=12),
            zp: rng.gen::<i8>(),
        }),
    }
}

/// A random MLP of 1 to `max_layers` layers ([`random_layer`]), each width
/// from 1 to `max_width`, with its widths (input first) for messages.
pub fn random_mlp<R: Rng>(
    rng: &mut R,
    max_layers: usize,
    max_width: usize,
) -> (compiler::Mlp, Vec<usize>) {
    let layers = rng.gen_range(1..=max_layers);
    let sizes: Vec<usize> = (0..=layers).map(|_| rng.gen_range(1..=max_width)).collect();
    let mlp = compiler::Mlp::new(
        (0..layers)
            .map(|i| random_layer(rng, sizes[i], sizes[i + 1], i + 1 < layers))
            .collect(),
    )
    .expect("random layers chain");
    (mlp, sizes)
}

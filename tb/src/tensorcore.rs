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

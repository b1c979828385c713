//! The EUP's golden model, from the contract and the unit's documented
//! timing: each operation's result (docs/numerics.md, "EUP"), and when it
//! comes out. The unit takes one operation per cycle; one taken in cycle t
//! has its result in cycle t + [`EupConfig::latency`], the same for every
//! operation, so results leave in the order operations were taken.

use crate::numerics::{div32, exp2_32, exp32, recip32, rsqrt32, sqrt32, CANONICAL_NAN_F32};
use config::{EupConfig, EupOp};

/// `op` on `a` (and `b`, read by `div` only).
pub fn apply(op: EupOp, a: u32, b: u32) -> u32 {
    match op {
        EupOp::Div => div32(a, b),
        EupOp::Sqrt => sqrt32(a),
        EupOp::Recip => recip32(a),
        EupOp::Rsqrt => rsqrt32(a),
        EupOp::Exp2 => exp2_32(a),
        EupOp::Exp => exp32(a),
    }
}

/// The result for the encoding `code` on `op_i`: a reserved encoding gives
/// the canonical NaN.
pub fn apply_code(code: u32, a: u32, b: u32) -> u32 {
    EupOp::from_code(code).map_or(CANONICAL_NAN_F32, |op| apply(op, a, b))
}

/// One operation offered to the unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offered {
    pub code: u32,
    pub a: u32,
    pub b: u32,
}

/// The unit's outputs, cycle by cycle, for `inputs` (one entry per cycle
/// from cycle 0: an operation taken, or none), until the last result:
/// `Some(result)` in the cycles where `valid_o` is high.
pub fn outputs(cfg: &EupConfig, inputs: &[Option<Offered>]) -> Vec<Option<u32>> {
    let latency = cfg.latency() as usize;
    let mut out = vec![None; inputs.len() + latency];
    for (t, input) in inputs.iter().enumerate() {
        if let Some(o) = input {
            out[t + latency] = Some(apply_code(o.code, o.a, o.b));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_out_in_order_after_the_latency() {
        // The root path (2 x 9) is the longer (exp's is 1 + 4 + 1 + 6 x 2),
        // then the result register.
        let cfg = EupConfig::new(8, 1, 1).unwrap();
        assert_eq!(cfg.latency(), 19);
        let cfg = EupConfig::new(9, 1, 1).unwrap();
        assert_eq!(cfg.latency(), 19);
        let one = 0x3f80_0000;
        let four = 0x4080_0000;
        let inputs = [
            Some(Offered {
                code: 0,
                a: one,
                b: four,
            }),
            None,
            Some(Offered {
                code: 3,
                a: four,
                b: 0,
            }),
            Some(Offered {
                code: 7,
                a: one,
                b: one,
            }),
        ];
        let out = outputs(&cfg, &inputs);
        assert_eq!(out.len(), 23);
        assert_eq!(out[19], Some(0x3e80_0000)); // 1 / 4
        assert_eq!(out[20], None);
        assert_eq!(out[21], Some(0x3f00_0000)); // 1 / sqrt(4)
        assert_eq!(out[22], Some(CANONICAL_NAN_F32));
        assert!(out[..19].iter().all(Option::is_none));
        assert_eq!(apply(EupOp::Exp2, 0x4040_0000, 0), 0x4100_0000); // 2^3
    }
}

//! The block library: reusable structures built from the `hw` primitives.
//!
//! Most blocks are module generators: a function that takes the [`Design`]
//! and the block's parameters and returns the definition (interned by
//! [`Design::define`], so every parameter set is defined once and its module
//! name carries the parameters). [`delay`] is the exception: it builds inline
//! into the module that calls it.
//!
//! Conventions shared by the generators:
//! - All ports are synchronous to `clk_i`; registers that need a known value
//!   reset synchronously on `rst_i` (active high). Data registers do not
//!   reset, so their value is unspecified until the interface says it is
//!   meaningful.
//! - Streams use valid/ready: an input stream `in` has `in_valid_i`,
//!   `in_ready_o` and `in_data_i`; an output stream `out` has `out_valid_o`,
//!   `out_ready_i` and `out_data_o`. A transfer happens in a cycle where valid
//!   and ready are both high. No block's valid depends on its ready input.
//! - Whatever can be computed at elaboration time is (the CRC and LFSR XOR
//!   matrices), so the hardware is flat logic of registers.
//!
//! [`Design`]: crate::Design
//! [`Design::define`]: crate::Design::define

mod arbiter;
mod crc;
mod credit;
mod delay;
mod fifo;
mod kept;
mod lfsr;
mod skid;

pub use arbiter::round_robin_arbiter;
pub use crc::{crc, crc_of, CrcSpec};
pub use credit::credit_counter;
pub use delay::{delay, delay_enabled, delay_taps};
pub use fifo::{fifo, FifoMode};
pub use kept::{kept_register, kept_register_reset};
pub use lfsr::{lfsr, prbs, Prbs};
pub use skid::skid_buffer;

use crate::Ty;

/// The XOR of the bits of `x` selected by `form` (a GF(2) linear form over
/// the bits of `x`), as one flat reduction: a single bit is used directly,
/// an empty form is the constant 0.
#[track_caller]
fn xor_of(x: crate::Expr, form: &num_bigint::BigUint) -> crate::Expr {
    match form.count_ones() {
        0 => x.lit_of(Ty::BOOL, 0),
        1 => x.bit(form.trailing_zeros().expect("one bit set") as u32),
        _ => (x & x.lit(num_bigint::BigInt::from(form.clone()))).parity(),
    }
}

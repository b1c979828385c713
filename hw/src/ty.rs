//! Value types: a width in bits and a signedness.

use std::fmt;

/// The widest value the layer accepts. Generous enough for the buses that
/// connect a 1024x1024 array, small enough to catch a runaway width computation.
pub const MAX_WIDTH: u32 = 1 << 24;

/// Bits needed to hold every number in `0..=max` (at least 1).
pub fn bits_for(max: impl Into<u64>) -> u32 {
    (64 - max.into().leading_zeros()).max(1)
}

/// The type of every value: width (>= 1 bit) and signedness (two's complement).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ty {
    pub width: u32,
    pub signed: bool,
}

impl Ty {
    /// One unsigned bit: conditions, enables, flags.
    pub const BOOL: Ty = Ty {
        width: 1,
        signed: false,
    };

    /// Unsigned `width` bits.
    #[track_caller]
    pub fn u(width: u32) -> Ty {
        Ty::new(width, false)
    }

    /// Signed (two's complement) `width` bits.
    #[track_caller]
    pub fn s(width: u32) -> Ty {
        Ty::new(width, true)
    }

    #[track_caller]
    pub fn new(width: u32, signed: bool) -> Ty {
        if width == 0 || width > MAX_WIDTH {
            crate::error::elab_error(format!(
                "width must be between 1 and {MAX_WIDTH} bits, got {width}"
            ));
        }
        Ty { width, signed }
    }

    /// The same width with the other signedness.
    pub fn with_signed(self, signed: bool) -> Ty {
        Ty { signed, ..self }
    }

    /// Smallest value representable, as i128 when it fits (widths <= 127).
    pub fn min_i128(self) -> Option<i128> {
        if self.width > 127 {
            return None;
        }
        Some(if self.signed {
            -(1i128 << (self.width - 1))
        } else {
            0
        })
    }

    /// Largest value representable, as i128 when it fits (widths <= 127).
    pub fn max_i128(self) -> Option<i128> {
        if self.width > 127 {
            return None;
        }
        Some(if self.signed {
            (1i128 << (self.width - 1)) - 1
        } else {
            (1i128 << self.width) - 1
        })
    }
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", if self.signed { "s" } else { "u" }, self.width)
    }
}

//! Operand patterns for the floating-point tests: every class of fp32 and
//! bf16 value with the edges of each, shared by the unit tests of every
//! depth and the combinational units.

/// fp32 patterns of every class, including the edges of each.
pub fn special_f32() -> Vec<u32> {
    vec![
        0x0000_0000,
        0x8000_0000, // zeros
        0x0000_0001,
        0x8000_0001,
        0x007F_FFFF,
        0x807F_FFFF,
        0x0040_0000, // subnormals
        0x0080_0000,
        0x8080_0000,
        0x0080_0001,
        0x00FF_FFFF, // smallest normals
        0x3F80_0000,
        0xBF80_0000,
        0x3F80_0001,
        0x3FFF_FFFF,
        0x4000_0000,
        0x3F7F_FFFF,
        0x4B80_0000,
        0x4B7F_FFFF,
        0x3300_0000,
        0x3380_0000, // 2^24, 2^-25 ties
        0x4EFF_FFFF,
        0x4F00_0000,
        0xCF00_0000, // int32 saturation edges
        0x7F7F_FFFF,
        0xFF7F_FFFF,
        0x7F7F_FFFE,
        0x7F00_0000, // largest finite
        0x7F80_0000,
        0xFF80_0000, // infinities
        0x7FC0_0000,
        0xFFC0_0000,
        0x7F80_0001,
        0xFFFF_FFFF,
        0x7FBF_FFFF, // NaNs
    ]
}

/// bf16 patterns of every class, including the edges of each.
pub fn special_bf16() -> Vec<u16> {
    vec![
        0x0000, 0x8000, 0x0001, 0x807F, 0x0040, // zeros, subnormals
        0x0080, 0x8080, 0x00FF, 0x3F80, 0xBF80, 0x3FFF, 0x4000, 0x3F81, // normals
        0x7F7F, 0xFF7F, 0x7F00, 0x1F80, 0x2000, 0x5F80, 0x6000, // under/overflow edges
        0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x7F81, // inf, NaN
    ]
}

//! The element types the format stores, and their bit fields.

use serde::{Deserialize, Serialize};

/// Element types the format stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Dtype {
    /// bfloat16: 1 sign, 8 exponent, 7 mantissa bits.
    Bf16,
    /// IEEE binary16: 1 sign, 5 exponent, 10 mantissa bits.
    Fp16,
    /// IEEE binary32: 1 sign, 8 exponent, 23 mantissa bits.
    Fp32,
}

impl Dtype {
    /// Every dtype, in code order.
    pub const ALL: [Dtype; 3] = [Dtype::Bf16, Dtype::Fp16, Dtype::Fp32];

    /// The code stored in the stream header.
    pub const fn code(self) -> u8 {
        match self {
            Dtype::Bf16 => 1,
            Dtype::Fp16 => 2,
            Dtype::Fp32 => 3,
        }
    }

    /// The dtype of a stream-header code.
    pub const fn from_code(code: u8) -> Option<Dtype> {
        match code {
            1 => Some(Dtype::Bf16),
            2 => Some(Dtype::Fp16),
            3 => Some(Dtype::Fp32),
            _ => None,
        }
    }

    /// Bytes per element.
    pub const fn element_bytes(self) -> usize {
        match self {
            Dtype::Bf16 | Dtype::Fp16 => 2,
            Dtype::Fp32 => 4,
        }
    }

    /// Exponent bits `E`.
    pub const fn exponent_bits(self) -> u32 {
        match self {
            Dtype::Bf16 | Dtype::Fp32 => 8,
            Dtype::Fp16 => 5,
        }
    }

    /// Mantissa bits `M`.
    pub const fn mantissa_bits(self) -> u32 {
        match self {
            Dtype::Bf16 => 7,
            Dtype::Fp16 => 10,
            Dtype::Fp32 => 23,
        }
    }

    /// Lower-case name (`bf16`, `fp16`, `fp32`).
    pub const fn name(self) -> &'static str {
        match self {
            Dtype::Bf16 => "bf16",
            Dtype::Fp16 => "fp16",
            Dtype::Fp32 => "fp32",
        }
    }
}

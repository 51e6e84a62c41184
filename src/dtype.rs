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
    /// OCP float8 e4m3fn: 1 sign, 4 exponent, 3 mantissa bits (format version 1.1).
    E4m3,
    /// OCP float8 e5m2: 1 sign, 5 exponent, 2 mantissa bits (format version 1.1).
    E5m2,
}

impl Dtype {
    /// Every dtype this build codes, in code order (the FP8 ones with the feature `fp8`).
    #[cfg(feature = "fp8")]
    pub const ALL: [Dtype; 5] = [
        Dtype::Bf16,
        Dtype::Fp16,
        Dtype::Fp32,
        Dtype::E4m3,
        Dtype::E5m2,
    ];
    /// Every dtype this build codes, in code order (the FP8 ones with the feature `fp8`).
    #[cfg(not(feature = "fp8"))]
    pub const ALL: [Dtype; 3] = [Dtype::Bf16, Dtype::Fp16, Dtype::Fp32];

    /// The code stored in the stream header.
    pub const fn code(self) -> u8 {
        match self {
            Dtype::Bf16 => 1,
            Dtype::Fp16 => 2,
            Dtype::Fp32 => 3,
            Dtype::E4m3 => 4,
            Dtype::E5m2 => 5,
        }
    }

    /// The dtype of a stream-header code, if this build codes it.
    pub const fn from_code(code: u8) -> Option<Dtype> {
        match code {
            1 => Some(Dtype::Bf16),
            2 => Some(Dtype::Fp16),
            3 => Some(Dtype::Fp32),
            #[cfg(feature = "fp8")]
            4 => Some(Dtype::E4m3),
            #[cfg(feature = "fp8")]
            5 => Some(Dtype::E5m2),
            _ => None,
        }
    }

    /// Whether this build codes the dtype (the FP8 ones need the feature `fp8`).
    pub const fn coded(self) -> bool {
        Dtype::from_code(self.code()).is_some()
    }

    /// Bytes per element.
    pub const fn element_bytes(self) -> usize {
        match self {
            Dtype::Bf16 | Dtype::Fp16 => 2,
            Dtype::Fp32 => 4,
            Dtype::E4m3 | Dtype::E5m2 => 1,
        }
    }

    /// Exponent bits `E`.
    pub const fn exponent_bits(self) -> u32 {
        match self {
            Dtype::Bf16 | Dtype::Fp32 => 8,
            Dtype::Fp16 | Dtype::E5m2 => 5,
            Dtype::E4m3 => 4,
        }
    }

    /// Mantissa bits `M`.
    pub const fn mantissa_bits(self) -> u32 {
        match self {
            Dtype::Bf16 => 7,
            Dtype::Fp16 => 10,
            Dtype::Fp32 => 23,
            Dtype::E4m3 => 3,
            Dtype::E5m2 => 2,
        }
    }

    /// The stream format's minor version that first holds this dtype, written in the stream
    /// header of its streams (FORMAT.md section 8): 1 for the FP8 dtypes, 0 for the others, so
    /// their streams stay byte for byte those of version 1.0.
    pub const fn version_minor(self) -> u8 {
        match self {
            Dtype::Bf16 | Dtype::Fp16 | Dtype::Fp32 => 0,
            Dtype::E4m3 | Dtype::E5m2 => 1,
        }
    }

    /// Lower-case name (`bf16`, `fp16`, `fp32`, `e4m3`, `e5m2`).
    pub const fn name(self) -> &'static str {
        match self {
            Dtype::Bf16 => "bf16",
            Dtype::Fp16 => "fp16",
            Dtype::Fp32 => "fp32",
            Dtype::E4m3 => "e4m3",
            Dtype::E5m2 => "e5m2",
        }
    }
}

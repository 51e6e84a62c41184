//! Typed helpers over `half::bf16`, `half::f16` and `f32` slices (no copies: bytemuck views).

use half::{bf16, f16};

use crate::error::{Error, Result};
use crate::format::Dtype;
use crate::frame::EncodeOptions;
use crate::oneshot::{decode, encode};

fn decode_typed(stream: &[u8], out: &mut [u8], dtype: Dtype) -> Result<usize> {
    let info = crate::oneshot::read_header(stream)?;
    if info.dtype != dtype {
        return Err(Error::DtypeMismatch {
            stream: info.dtype,
            requested: dtype,
        });
    }
    Ok(decode(stream, out)? / dtype.element_bytes())
}

macro_rules! typed_pair {
    ($encode:ident, $decode:ident, $t:ty, $dtype:expr, $name:literal) => {
        #[doc = concat!("Encodes ", $name, " values with `options` (its dtype is set to ", $name, "); returns the stream length.")]
        pub fn $encode(options: EncodeOptions, values: &[$t], out: &mut [u8]) -> Result<usize> {
            encode(&EncodeOptions { dtype: $dtype, ..options }, bytemuck::cast_slice(values), out)
        }

        #[doc = concat!("Decodes a ", $name, " stream into `out`; returns the number of values.")]
        pub fn $decode(stream: &[u8], out: &mut [$t]) -> Result<usize> {
            decode_typed(stream, bytemuck::cast_slice_mut(out), $dtype)
        }
    };
}

typed_pair!(encode_bf16, decode_bf16, bf16, Dtype::Bf16, "bf16");
typed_pair!(encode_f16, decode_f16, f16, Dtype::Fp16, "fp16");
typed_pair!(encode_f32, decode_f32, f32, Dtype::Fp32, "fp32");

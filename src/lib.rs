//! # enec: lossless compression of AI model weights
//!
//! bf16, fp16, fp32 and FP8 (e4m3, e5m2) tensors are cut into frames; in each frame the exponents (where the
//! redundancy of float weights lives) are coded with fixed-length bit planes, and the sign and
//! mantissa bits are stored as they are. Decoding is a handful of shifts, masks, one prefix count
//! and a table lookup per element: branch-free enough to vectorize on a CPU and to run as an
//! accelerator kernel. The byte format is specified in `FORMAT.md` and versioned.
//!
//! The core is `#![no_std]` and never allocates: the encoder and decoder work between caller
//! slices with fixed stack scratch (measured by `examples/stack_usage.rs` on x86_64 with the
//! portable kernels: at most 19 KiB to decode, 41 KiB to encode).
//!
//! ```
//! use enec::{decode, encode, max_encoded_size, read_header, Dtype, EncodeOptions};
//!
//! let weights: Vec<half::bf16> = (0..5000).map(|i| half::bf16::from_f32((i as f32).sin() * 0.02)).collect();
//! let input: &[u8] = bytemuck::cast_slice(&weights);
//! let options = EncodeOptions::new(Dtype::Bf16);
//! let mut stream = vec![0u8; max_encoded_size(&options, input.len())?];
//! let len = encode(&options, input, &mut stream)?;
//! assert!(len < input.len());
//!
//! let info = read_header(&stream[..len])?;
//! assert_eq!(info.element_count, 5000);
//! let mut restored = vec![0u8; info.decoded_bytes() as usize];
//! decode(&stream[..len], &mut restored)?;
//! assert_eq!(restored, input);
//! # Ok::<(), enec::Error>(())
//! ```
#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(unsafe_code)] // allowed in `frame::dispatch` and `simd` only: the run-time chosen SIMD kernels
#![warn(missing_docs)]
#![warn(clippy::undocumented_unsafe_blocks)]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

#[cfg(feature = "std")]
pub mod checkpoint;
pub mod checksum;
pub mod container;
mod dtype;
mod error;
pub mod format;
mod frame;
mod frames;
pub mod io;
mod kernels;
mod oneshot;
#[cfg(feature = "std")]
pub mod parallel;
mod simd;
pub mod streaming;
mod typed;
pub mod wrapped;

pub use error::{Error, Result};
pub use format::{max_encoded_len, Dtype, FrameCoding, StreamInfo};
pub use frame::dispatch::{kernels_in_use, simd_in_use};
pub use frame::{Coding, EncodeOptions};
pub use frames::{frames, FrameInfo, Frames};
pub use oneshot::{decode, encode, max_encoded_size, read_header};
#[cfg(feature = "alloc")]
pub use oneshot::{decode_to_vec, encode_to_vec};
pub use streaming::{Decoder, Encoder, Progress, Status};
pub use typed::{decode_bf16, decode_f16, decode_f32, encode_bf16, encode_f16, encode_f32};

/// Not part of the API (feature `internals`, off by default, with no stability promise): the
/// door through which this crate's own tests, fuzz targets and examples reach the block kernels,
/// the frame layout arithmetic and the single-frame calls with their choice of stores.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod internals {
    /// The block kernels (FORMAT.md sections 5-7).
    pub mod kernels {
        pub use crate::kernels::*;
    }

    /// The format's frame internals beside its public constants.
    pub mod format {
        pub use crate::format::constants::*;
        pub use crate::format::header::*;
        pub use crate::format::layout::*;
        pub use crate::format::plane::*;
    }

    /// One frame at a time, with a choice of stores.
    pub mod frame {
        pub use crate::frame::dispatch::{decode_frame_portable, encode_frame_portable};
        pub use crate::frame::{
            decode_frame, decode_frame_with, encode_frame, max_frame_bytes, Stores,
            STREAMING_STORES_FROM,
        };
    }
}

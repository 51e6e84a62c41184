//! One frame: choose its parameters, encode it, decode it (FORMAT.md sections 4 and 7).
//!
//! Frames are independent, so a parallel encoder or decoder calls these directly on each frame
//! (see [`crate::frames`] to find them in a stream).

mod decode;
pub(crate) mod dispatch;
mod encode;
mod groups;
mod options;
mod ranked;
mod scratch;

pub(crate) use decode::check_frame_header;
pub use options::Stores;
#[cfg(feature = "internals")]
pub use options::STREAMING_STORES_FROM;
pub use options::{max_frame_bytes, Coding, EncodeOptions};

use crate::error::Result;
use crate::format::Dtype;

/// Encodes one frame of whole elements (`input.len()` a multiple of the element size, at most
/// 65,536 elements) into `out`, returning the bytes written. `out` needs room for the chosen
/// frame; [`max_frame_bytes`] always suffices.
pub fn encode_frame(
    dtype: Dtype,
    coding: Coding,
    checksums: bool,
    input: &[u8],
    out: &mut [u8],
) -> Result<usize> {
    encode_frame_before(dtype, coding, checksums, input, &[], out)
}

/// [`encode_frame`] of a frame that `next` follows in memory (the input after this frame, or
/// empty): the encoder fetches the first `input.len()` bytes of `next` into the cache while it
/// writes this frame, so a caller that encodes frames one after another (on each thread) finds
/// the next one in the cache rather than in memory. The bytes written do not depend on `next`.
pub(crate) fn encode_frame_before(
    dtype: Dtype,
    coding: Coding,
    checksums: bool,
    input: &[u8],
    next: &[u8],
    out: &mut [u8],
) -> Result<usize> {
    let elements = encode::frame_elements(dtype, input)?;
    dispatch::encode_frame(dtype, coding, checksums, input, next, elements, out)
}

/// Decodes frame `index` of a stream (`elements` is what the stream header says this frame
/// holds) into the start of `out`. Returns the frame's size in bytes. `frame` may extend past the
/// frame's end (the rest of the stream).
pub fn decode_frame(
    dtype: Dtype,
    checksums: bool,
    index: u32,
    elements: usize,
    frame: &[u8],
    out: &mut [u8],
) -> Result<usize> {
    decode_frame_with(
        dtype,
        checksums,
        index,
        elements,
        frame,
        out,
        Stores::Cached,
    )
}

/// [`decode_frame`] with a choice of [`Stores`] (the bytes written are the same).
pub fn decode_frame_with(
    dtype: Dtype,
    checksums: bool,
    index: u32,
    elements: usize,
    frame: &[u8],
    out: &mut [u8],
    stores: Stores,
) -> Result<usize> {
    dispatch::decode_frame(dtype, checksums, index, elements, frame, out, stores)
}

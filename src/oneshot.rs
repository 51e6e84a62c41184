//! Whole streams in one call, between caller slices (FORMAT.md sections 1 and 3).

use crate::error::{Error, Result};
use crate::format::{max_encoded_len, StreamInfo, STREAM_HEADER_BYTES};
use crate::frame::{EncodeOptions, Stores};
use crate::frames::{check_stream_end, decode_frames};
use crate::wrapped::FrameEncoder;

/// The largest stream [`encode`] can write for `input_bytes` bytes of input with `options`.
pub fn max_encoded_size(options: &EncodeOptions, input_bytes: usize) -> Result<usize> {
    let eb = options.dtype.element_bytes();
    if !input_bytes.is_multiple_of(eb) {
        return Err(Error::PartialElement {
            len: input_bytes as u64,
            element_bytes: eb as u8,
        });
    }
    max_encoded_len(options.dtype, (input_bytes / eb) as u64, options.frame_log2)
}

/// Encodes `input` (little-endian elements of `options.dtype`) into `out` and returns the stream
/// length. An `out` of [`max_encoded_size`] bytes always suffices.
pub fn encode(options: &EncodeOptions, input: &[u8], out: &mut [u8]) -> Result<usize> {
    let bound = max_encoded_size(options, input.len())?;
    let encoder = FrameEncoder::new(options, input)?;
    let too_small = Error::OutputTooSmall {
        needed: bound as u64,
    };
    out.get_mut(..STREAM_HEADER_BYTES)
        .ok_or(too_small)?
        .copy_from_slice(&encoder.header());
    let mut at = STREAM_HEADER_BYTES;
    for index in 0..encoder.frame_count() {
        let dst = out.get_mut(at..).ok_or(too_small)?;
        at += encoder.encode_frame(index, dst).map_err(|e| match e {
            Error::OutputTooSmall { .. } => too_small,
            other => other,
        })?;
    }
    Ok(at)
}

/// Reads the stream header: dtype, element count, frame length and count, checksums.
pub fn read_header(stream: &[u8]) -> Result<StreamInfo> {
    StreamInfo::parse(stream)
}

/// Decodes a whole stream into `out` (which needs [`StreamInfo::decoded_bytes`] bytes) and
/// returns the decoded length. The stream must end exactly after its last frame. Outputs of
/// 8 MiB or more are written with non-temporal stores where the kernels have them (the same
/// bytes, bypassing the cache, which such an output would leave anyway).
pub fn decode(stream: &[u8], out: &mut [u8]) -> Result<usize> {
    let info = StreamInfo::parse(stream)?;
    let total = usize::try_from(info.decoded_bytes()).map_err(|_| Error::TooLarge)?;
    let out = out.get_mut(..total).ok_or(Error::OutputTooSmall {
        needed: total as u64,
    })?;
    let stores = Stores::for_output(total as u64);
    let end = decode_frames(
        stream,
        &info,
        STREAM_HEADER_BYTES,
        0..info.frame_count,
        out,
        stores,
    )?;
    check_stream_end(stream, end)?;
    Ok(total)
}

/// Encodes `input` into a new `Vec` of exactly the stream's length (feature `alloc`).
#[cfg(feature = "alloc")]
pub fn encode_to_vec(options: &EncodeOptions, input: &[u8]) -> Result<alloc::vec::Vec<u8>> {
    let mut out = alloc::vec![0u8; max_encoded_size(options, input.len())?];
    let len = encode(options, input, &mut out)?;
    out.truncate(len);
    Ok(out)
}

/// Decodes a whole stream into a new `Vec` (feature `alloc`). The size comes from the stream
/// header, so a hostile header can ask for a large allocation: check
/// [`read_header`]`(stream)?.decoded_bytes()` first where that matters.
#[cfg(feature = "alloc")]
pub fn decode_to_vec(stream: &[u8]) -> Result<alloc::vec::Vec<u8>> {
    let info = StreamInfo::parse(stream)?;
    let total = usize::try_from(info.decoded_bytes()).map_err(|_| Error::TooLarge)?;
    let mut out = alloc::vec![0u8; total];
    decode(stream, &mut out)?;
    Ok(out)
}

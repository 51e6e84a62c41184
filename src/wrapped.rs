//! Building blocks for writers and readers that lay out enec streams themselves: a container
//! format of their own, a pipeline that writes frames as they are ready, a reader that decodes
//! frames on threads or on an accelerator. Between the one-shot calls ([`crate::encode`],
//! [`crate::decode`]) and the frame internals, and what the `enec` tool and the C ABI are built
//! on.
//!
//! A stream is its header ([`FrameEncoder::header`]) followed by its frames in order, each
//! encoded independently ([`FrameEncoder::encode_frame`]); a reader finds the frames by their
//! headers ([`FrameDecoder::frames`]) and decodes any of them alone
//! ([`FrameDecoder::decode_frame`]). For whole streams on threads, see [`crate::parallel`].
//!
//! ```
//! use enec::wrapped::{FrameDecoder, FrameEncoder};
//! use enec::{Dtype, EncodeOptions};
//!
//! let weights: Vec<half::bf16> = (0..40_000).map(|i| half::bf16::from_f32((i as f32).cos() * 0.01)).collect();
//! let input: &[u8] = bytemuck::cast_slice(&weights);
//! let encoder = FrameEncoder::new(&EncodeOptions::new(Dtype::Bf16), input)?;
//! let mut stream = encoder.header().to_vec();
//! let mut frame = vec![0u8; encoder.max_frame_bytes()];
//! for index in 0..encoder.frame_count() {
//!     let len = encoder.encode_frame(index, &mut frame)?;
//!     stream.extend_from_slice(&frame[..len]);
//! }
//! let options = EncodeOptions::new(Dtype::Bf16);
//! let mut whole = vec![0u8; enec::max_encoded_size(&options, input.len())?];
//! let len = enec::encode(&options, input, &mut whole)?;
//! assert_eq!(stream, whole[..len]); // the one-shot encoder's bytes
//!
//! let decoder = FrameDecoder::new(&stream)?;
//! let mut restored = vec![0u8; input.len()];
//! for frame in decoder.frames() {
//!     let frame = frame?;
//!     decoder.decode_frame(&frame, &mut restored[decoder.output_range(&frame)])?;
//! }
//! assert_eq!(restored, input);
//! # Ok::<(), enec::Error>(())
//! ```

use core::ops::Range;

use crate::error::{Error, Result};
use crate::format::{StreamInfo, STREAM_HEADER_BYTES};
pub use crate::frame::max_frame_bytes;
use crate::frame::EncodeOptions;
use crate::frame::{encode_frame_before, Stores};
use crate::frames::{decode_frames, FrameInfo, Frames};

/// The checksum a container stores for a piece kept verbatim (FORMAT.md section 9): xxHash32
/// with seed 0, as in the frames.
pub fn piece_checksum(bytes: &[u8]) -> u32 {
    crate::checksum::h32(bytes)
}

/// Encodes the frames of one input, each on its own (so on any thread, in any order), into the
/// bytes [`crate::encode`] writes.
#[derive(Clone, Copy, Debug)]
pub struct FrameEncoder<'a> {
    options: EncodeOptions,
    info: StreamInfo,
    input: &'a [u8],
    frame_bytes: usize,
}

impl<'a> FrameEncoder<'a> {
    /// An encoder of `input` (little-endian elements of `options.dtype`).
    pub fn new(options: &EncodeOptions, input: &'a [u8]) -> Result<FrameEncoder<'a>> {
        let eb = options.dtype.element_bytes();
        if !input.len().is_multiple_of(eb) {
            return Err(Error::PartialElement {
                len: input.len() as u64,
                element_bytes: eb as u8,
            });
        }
        let info = StreamInfo::new(
            options.dtype,
            options.frame_log2,
            options.checksums,
            (input.len() / eb) as u64,
        )?;
        Ok(FrameEncoder {
            options: *options,
            info,
            input,
            frame_bytes: info.frame_len() * eb,
        })
    }

    /// What the stream header says.
    pub fn info(&self) -> &StreamInfo {
        &self.info
    }

    /// The stream header: the first 32 bytes of the stream.
    pub fn header(&self) -> [u8; STREAM_HEADER_BYTES] {
        self.info.to_bytes()
    }

    /// Number of frames.
    pub fn frame_count(&self) -> u32 {
        self.info.frame_count
    }

    /// The most bytes any frame of this stream takes: room enough for [`Self::encode_frame`].
    pub fn max_frame_bytes(&self) -> usize {
        max_frame_bytes(self.options.dtype, self.info.frame_len())
    }

    /// The input bytes of frame `index`.
    pub fn frame_input(&self, index: u32) -> &'a [u8] {
        let start = (index as usize).saturating_mul(self.frame_bytes);
        let end = start.saturating_add(self.frame_bytes).min(self.input.len());
        self.input.get(start..end).unwrap_or(&[])
    }

    /// Encodes frame `index` into `out` and returns its size. While it writes, it fetches the
    /// next frame's input into the cache, so a thread that encodes frames in order finds each in
    /// the cache. `out` needs room for the chosen frame; [`Self::max_frame_bytes`] always
    /// suffices. An `index` past the last frame gives [`Error::InvalidFrameLength`] (of 0).
    pub fn encode_frame(&self, index: u32, out: &mut [u8]) -> Result<usize> {
        let frame = self.frame_input(index);
        let end = (index as usize).saturating_mul(self.frame_bytes) + frame.len();
        let next = self.input.get(end..).unwrap_or(&[]);
        let o = &self.options;
        encode_frame_before(o.dtype, o.coding, o.checksums, frame, next, out)
    }
}

/// Finds and decodes the frames of one stream, each on its own.
#[derive(Clone, Copy, Debug)]
pub struct FrameDecoder<'a> {
    stream: &'a [u8],
    info: StreamInfo,
}

impl<'a> FrameDecoder<'a> {
    /// A decoder of `stream` (its header is checked here).
    pub fn new(stream: &'a [u8]) -> Result<FrameDecoder<'a>> {
        Ok(FrameDecoder {
            stream,
            info: StreamInfo::parse(stream)?,
        })
    }

    /// What the stream header says.
    pub fn info(&self) -> &StreamInfo {
        &self.info
    }

    /// The stream's frames, found by their headers (nothing is decoded); stops after the first
    /// error. The last frame must end where the stream does: check [`Self::trailing_bytes`].
    pub fn frames(&self) -> Frames<'a> {
        Frames::new(self.stream, self.info)
    }

    /// Bytes of the stream after the frame `last` (the last one), which a whole stream has none
    /// of ([`Error::TrailingData`]).
    pub fn trailing_bytes(&self, last: &FrameInfo) -> usize {
        self.stream.len().saturating_sub(last.offset + last.bytes)
    }

    /// Where frame `frame`'s decoded bytes go in the decoded stream.
    pub fn output_range(&self, frame: &FrameInfo) -> Range<usize> {
        let start = frame.index as usize * self.info.frame_len() * self.info.dtype.element_bytes();
        start..start + frame.elements * self.info.dtype.element_bytes()
    }

    /// Decodes `frame` into the start of `out`, verifying its checksum; returns the bytes written
    /// (`output_range(frame).len()`).
    pub fn decode_frame(&self, frame: &FrameInfo, out: &mut [u8]) -> Result<usize> {
        let frames = frame.index..frame.index.saturating_add(1);
        decode_frames(
            self.stream,
            &self.info,
            frame.offset,
            frames,
            out,
            Stores::Cached,
        )?;
        Ok(frame.elements * self.info.dtype.element_bytes())
    }
}

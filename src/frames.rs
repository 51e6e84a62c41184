//! A stream's frames in order: the one walk that the whole-stream decoder ([`crate::decode`]),
//! the parallel decoders, the frame-by-frame decoder ([`crate::wrapped::FrameDecoder`]), the
//! container and `info` tools share. [`Frames`] finds frames by their headers alone;
//! [`decode_frames`] decodes a run of them. Both report errors in stream positions, as
//! [`crate::decode`] does.

use core::ops::Range;

use crate::error::{Error, Result};
use crate::format::{FrameCoding, StreamInfo, STREAM_HEADER_BYTES};
use crate::frame::{check_frame_header, decode_frame_with, Stores};

/// Where a frame lies in a stream, read from its header alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FrameInfo {
    /// Frame number, from 0.
    pub index: u32,
    /// Byte offset of the frame in the stream.
    pub offset: usize,
    /// Size of the frame in bytes.
    pub bytes: usize,
    /// Elements in the frame.
    pub elements: usize,
    /// Coding of the frame.
    pub coding: FrameCoding,
}

/// Iterates over a stream's frames by their headers without decoding them (for parallel
/// decoders and `info` tools). Stops after the first error.
pub fn frames(stream: &[u8]) -> Result<Frames<'_>> {
    Ok(Frames::new(stream, StreamInfo::parse(stream)?))
}

/// Iterator returned by [`frames`].
pub struct Frames<'a> {
    stream: &'a [u8],
    info: StreamInfo,
    index: u32,
    offset: usize,
    failed: bool,
}

impl Frames<'_> {
    /// The frames of `stream`, whose parsed header is `info`.
    pub(crate) fn new(stream: &[u8], info: StreamInfo) -> Frames<'_> {
        Frames {
            stream,
            info,
            index: 0,
            offset: STREAM_HEADER_BYTES,
            failed: false,
        }
    }

    /// The stream header.
    pub fn info(&self) -> &StreamInfo {
        &self.info
    }

    #[cfg(feature = "std")] // the parallel decoders
    /// Where the next frame starts (after the last one: where the stream should end).
    pub(crate) fn offset(&self) -> usize {
        self.offset
    }

    #[cfg(feature = "std")] // the parallel decoders
    /// Whether every frame has been found.
    pub(crate) fn finished(&self) -> bool {
        !self.failed && self.index >= self.info.frame_count
    }

    #[cfg(feature = "std")] // the parallel decoders
    /// [`Error::TrailingData`] when the stream goes on after its last frame (call once
    /// [`Self::finished`]).
    pub(crate) fn check_end(&self) -> Result<()> {
        check_stream_end(self.stream, self.offset)
    }
}

/// [`Error::TrailingData`] when `stream` goes on after `end`, where its last frame ends.
pub(crate) fn check_stream_end(stream: &[u8], end: usize) -> Result<()> {
    match stream.len().checked_sub(end) {
        Some(0) | None => Ok(()),
        Some(extra) => Err(Error::TrailingData {
            extra: extra as u64,
        }),
    }
}

/// Decodes frames `frames` of `stream` (whose header is `info`), the first of them at byte
/// `offset`, one after another into `out` (each frame's elements, in order); returns where the
/// last one ends. Errors are [`crate::decode`]'s, truncation counted from the stream's start.
pub(crate) fn decode_frames(
    stream: &[u8],
    info: &StreamInfo,
    offset: usize,
    frames: Range<u32>,
    out: &mut [u8],
    stores: Stores,
) -> Result<usize> {
    let (dtype, checksums) = (info.dtype, info.checksums);
    let mut at = offset;
    let mut rest = out;
    for index in frames {
        let frame = stream.get(at..).unwrap_or(&[]);
        let elements = info.frame_elements(index);
        at += decode_frame_with(dtype, checksums, index, elements, frame, rest, stores)
            .map_err(|e| at_offset(e, at, stream.len()))?;
        // The frame wrote `elements` elements: the rest of `out` is the next frame's.
        let written = elements * dtype.element_bytes();
        rest = core::mem::take(&mut rest)
            .get_mut(written..)
            .unwrap_or(&mut []);
    }
    Ok(at)
}

/// An error of the frame at byte `at` of a stream of `stream_len` bytes, as [`crate::decode`]
/// reports it: truncation counted from the start of the stream.
fn at_offset(error: Error, at: usize, stream_len: usize) -> Error {
    match error {
        Error::Truncated { needed, .. } => Error::Truncated {
            needed: (at as u64).saturating_add(needed),
            available: stream_len as u64,
        },
        other => other,
    }
}

impl Iterator for Frames<'_> {
    type Item = Result<FrameInfo>;

    fn next(&mut self) -> Option<Result<FrameInfo>> {
        if self.failed || self.index >= self.info.frame_count {
            return None;
        }
        let rest = self.stream.get(self.offset..).unwrap_or(&[]);
        let elements = self.info.frame_elements(self.index);
        let checked = check_frame_header(
            self.info.dtype,
            self.info.checksums,
            self.index,
            elements,
            rest,
        )
        .map_err(|e| at_offset(e, self.offset, self.stream.len()));
        let result = checked.and_then(|(h, layout)| {
            let bytes = layout.bytes;
            if rest.len() < bytes {
                return Err(Error::Truncated {
                    needed: (self.offset + bytes) as u64,
                    available: self.stream.len() as u64,
                });
            }
            Ok(FrameInfo {
                index: self.index,
                offset: self.offset,
                bytes,
                elements,
                coding: h.params.coding(),
            })
        });
        match &result {
            Ok(f) => {
                self.offset += f.bytes;
                self.index += 1;
            }
            Err(_) => self.failed = true,
        }
        Some(result)
    }
}

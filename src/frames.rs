//! A stream's frames, read from their headers without decoding them: the walk that parallel
//! decoders, the frame-by-frame decoder and `info` tools share.

use crate::error::{Error, Result};
use crate::format::{FrameCoding, StreamInfo, STREAM_HEADER_BYTES};
use crate::frame::check_frame_header;

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
        .map_err(|e| match e {
            // In stream positions, as `decode` reports it.
            Error::Truncated { needed, .. } => Error::Truncated {
                needed: (self.offset as u64).saturating_add(needed),
                available: self.stream.len() as u64,
            },
            other => other,
        });
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

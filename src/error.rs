//! The codec's error. Every variant says what went wrong and, where it helps, where.
//!
//! One story for the whole crate: every stream, frame, streaming and I/O call returns [`Error`]
//! (the `std::io` adapters wrap it in an `std::io::Error`). The checkpoint container, a layer
//! above streams, returns [`crate::container::ContainerError`], which says where in the container
//! a fault lies and nests this `Error` when an entry's enec stream fails to decode
//! (`ContainerError::Stream`, also its `source()`).

use core::fmt;

use crate::dtype::Dtype;

/// Everything that can go wrong while encoding or decoding a stream.
///
/// Decoding never panics: malformed, truncated or hostile input always ends in one of these.
#[non_exhaustive]
#[allow(missing_docs)] // the fields are named in each variant's description
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Error {
    /// The input ended before the structure it announced: `needed` bytes at least, `available` present.
    Truncated { needed: u64, available: u64 },
    /// The input does not start with the enec magic `ENEC`.
    BadMagic,
    /// The stream was written by a format version this decoder does not read.
    UnsupportedVersion { major: u8, minor: u8 },
    /// The stream names a dtype code this decoder does not know.
    UnsupportedDtype(u8),
    /// The stream header sets flag bits this decoder does not know.
    UnsupportedFlags(u8),
    /// The stream header is inconsistent (reserved bytes, frame count, frame length) or its check failed.
    CorruptHeader(&'static str),
    /// Frame `frame` uses a coding id this decoder does not know.
    UnsupportedCoding { frame: u32, coding: u8 },
    /// Frame `frame` is malformed; `reason` says how.
    CorruptFrame { frame: u32, reason: &'static str },
    /// Frame `frame` decoded to bytes whose checksum differs from the one stored.
    ChecksumMismatch { frame: u32 },
    /// The input continues `extra` bytes after the last frame.
    TrailingData { extra: u64 },
    /// The output buffer is too small: `needed` bytes are required.
    OutputTooSmall { needed: u64 },
    /// The input to encode is not a whole number of `element_bytes`-byte elements.
    PartialElement { len: u64, element_bytes: u8 },
    /// A frame length that is not a power of two between 1,024 and 65,536 elements.
    InvalidFrameLength(u32),
    /// The element count cannot be represented (more than `u32::MAX` frames, or more bytes than `usize`).
    TooLarge,
    /// A typed helper was asked for one dtype and the stream holds another.
    DtypeMismatch { stream: Dtype, requested: Dtype },
    /// Frame `frame` needs `bytes` bytes of a streaming encoder's or decoder's buffer (its
    /// compressed and decoded sizes together), more than its fixed `capacity`.
    FrameTooLarge {
        frame: u32,
        bytes: u64,
        capacity: u64,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Error::Truncated { needed, available } => write!(
                f,
                "input is truncated: needs at least {needed} bytes, has {available}"
            ),
            Error::BadMagic => f.write_str("not an enec stream (magic bytes `ENEC` missing)"),
            Error::UnsupportedVersion { major, minor } => write!(
                f,
                "enec format version {major}.{minor} is not supported by this decoder (reads 1.x)"
            ),
            Error::UnsupportedDtype(code) => {
                write!(f, "unknown dtype code {code} in stream header")
            }
            Error::UnsupportedFlags(flags) => {
                write!(f, "unknown flag bits {flags:#04x} in stream header")
            }
            Error::CorruptHeader(why) => write!(f, "corrupt stream header: {why}"),
            Error::UnsupportedCoding { frame, coding } => {
                write!(f, "frame {frame} uses unknown coding id {coding}")
            }
            Error::CorruptFrame { frame, reason } => {
                write!(f, "frame {frame} is corrupt: {reason}")
            }
            Error::ChecksumMismatch { frame } => write!(
                f,
                "checksum mismatch in frame {frame}: the stream is corrupt"
            ),
            Error::TrailingData { extra } => {
                write!(f, "{extra} unexpected bytes after the last frame")
            }
            Error::OutputTooSmall { needed } => {
                write!(f, "output buffer too small: {needed} bytes needed")
            }
            Error::PartialElement { len, element_bytes } => write!(
                f,
                "input of {len} bytes is not a whole number of {element_bytes}-byte elements"
            ),
            Error::InvalidFrameLength(len) => write!(
                f,
                "frame length {len} is not a power of two between 1024 and 65536"
            ),
            Error::TooLarge => f.write_str("element count too large for this platform or format"),
            Error::DtypeMismatch { stream, requested } => write!(
                f,
                "stream holds {} elements, {} were requested",
                stream.name(),
                requested.name()
            ),
            Error::FrameTooLarge {
                frame,
                bytes,
                capacity,
            } => write!(
                f,
                "frame {frame} needs {bytes} bytes of streaming buffer, more than this codec's \
                 capacity of {capacity} bytes (size it with enec::streaming::capacity_for)"
            ),
        }
    }
}

impl core::error::Error for Error {}

/// Result alias of the crate.
pub type Result<T> = core::result::Result<T, Error>;

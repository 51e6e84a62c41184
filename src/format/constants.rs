//! The numbers of format version 1 (FORMAT.md sections 2-4) that every other part derives from.

/// `ENEC`.
pub const MAGIC: [u8; 4] = *b"ENEC";
/// Format version written by this crate.
pub const VERSION_MAJOR: u8 = 1;
/// The newest format minor version this crate knows. A stream's header carries the minor version
/// its dtype needs ([`crate::Dtype::version_minor`]), so streams of version 1.0's dtypes are
/// written exactly as version 1.0 wrote them.
pub const VERSION_MINOR: u8 = 1;
/// Size of the stream header.
pub const STREAM_HEADER_BYTES: usize = 32;
/// Size of a frame header.
pub const FRAME_HEADER_BYTES: usize = 32;
/// Frames and every section inside a frame start at multiples of this many bytes.
pub const ALIGN: usize = 32;
/// Smallest frame length, as a power of two.
pub const MIN_FRAME_LOG2: u8 = 10;
/// Largest frame length, as a power of two.
pub const MAX_FRAME_LOG2: u8 = 16;
/// Default frame length, as a power of two (16,384 elements).
pub const DEFAULT_FRAME_LOG2: u8 = 14;
/// Largest frame length in elements.
pub const MAX_FRAME_LEN: usize = 1 << MAX_FRAME_LOG2;
/// Elements per group of the `groups` coding.
pub const GROUP_LEN: usize = 16;

/// Stream-header flag bit: every frame carries a checksum.
pub(super) const FLAG_CHECKSUMS: u8 = 1;

/// `x` rounded up to a multiple of [`ALIGN`].
pub const fn pad32(x: usize) -> usize {
    (x + (ALIGN - 1)) & !(ALIGN - 1)
}

/// Most escape levels of the `ranked` coding.
pub const MAX_LEVELS: usize = 3;

/// Largest exponent alphabet (8 exponent bits).
pub const MAX_SYMBOLS: usize = 256;

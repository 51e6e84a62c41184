//! The fixed-layout parts of format version 1 (FORMAT.md sections 2-4): the constants, the
//! stream header, the frame header, and the frame layout (where each section of a frame lies).
//! Public: the constants and the stream header, what a reader that lays out streams itself
//! needs; the frame internals are the crate's own.
//!
//! Everything here is what a device kernel reads too, so it is plain little-endian fields at
//! fixed offsets; parsing checks every field, and every size is computed with checked arithmetic.

pub(crate) mod constants;
pub(crate) mod header;
pub(crate) mod layout;
pub(crate) mod plane;

pub use constants::{
    DEFAULT_FRAME_LOG2, FRAME_HEADER_BYTES, MAGIC, MAX_FRAME_LEN, MAX_FRAME_LOG2, MIN_FRAME_LOG2,
    STREAM_HEADER_BYTES, VERSION_MAJOR, VERSION_MINOR,
};
pub use header::{FrameCoding, StreamInfo};
pub use layout::max_encoded_len;

pub(crate) use constants::{pad32, ALIGN, GROUP_LEN, MAX_LEVELS, MAX_SYMBOLS};
pub(crate) use header::{FrameHeader, FrameParams, GroupsParams, RankedParams};
pub(crate) use layout::{frame_bytes, ranked_exponent_bytes, ranked_fixed_bytes, FrameLayout};
pub(crate) use plane::{Plane, SubPlane};

pub use crate::dtype::Dtype;

//! The fixed-layout parts of format version 1 (FORMAT.md sections 2-4): the constants, the
//! stream header, the frame header, and the frame layout (where each section of a frame lies).
//!
//! Everything here is what a device kernel reads too, so it is plain little-endian fields at
//! fixed offsets; parsing checks every field, and every size is computed with checked arithmetic.

mod constants;
mod header;
mod layout;
mod plane;

pub use constants::{
    pad32, ALIGN, DEFAULT_FRAME_LOG2, FRAME_HEADER_BYTES, GROUP_LEN, MAGIC, MAX_FRAME_LEN,
    MAX_FRAME_LOG2, MAX_LEVELS, MAX_SYMBOLS, MIN_FRAME_LOG2, STREAM_HEADER_BYTES, VERSION_MAJOR,
    VERSION_MINOR,
};
pub use header::{FrameCoding, FrameHeader, FrameParams, GroupsParams, RankedParams, StreamInfo};
pub use layout::{frame_bytes, max_encoded_len, ranked_frame_bytes, FrameLayout};
pub(crate) use layout::{ranked_exponent_bytes, ranked_fixed_bytes};
pub use plane::{Plane, Run, SubPlane};

pub use crate::dtype::Dtype;

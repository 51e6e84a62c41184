//! What a caller chooses: the stream's encoding options, the exponent coding to try per frame,
//! the kind of stores when decoding; and the most bytes a frame can take.

use crate::error::{Error, Result};
use crate::format::{pad32, Dtype, DEFAULT_FRAME_LOG2, FRAME_HEADER_BYTES};

/// Which exponent coding the writer wants.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Coding {
    /// Per frame, the smallest of ranked, groups and stored. Searching the groups parameters
    /// costs about a tenth of the encoder's time and, on real weights, rarely wins a frame.
    Auto,
    /// The ENEC paper's groups coding (or stored where that is smaller).
    Groups,
    /// The ranked escape-level coding (or stored where that is smaller): the default.
    #[default]
    Ranked,
}

/// How a decoder writes its output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Stores {
    /// Through the cache: for output that is read soon (streaming, a DMA staging buffer).
    #[default]
    Cached,
    /// Non-temporal where the kernels have them (x86_64 with AVX-512: the ranked coding's
    /// level-0 step, on whole cache lines, so only into an output that starts on a 64-byte
    /// boundary; other outputs are written through the cache): for large output read later,
    /// such as a whole checkpoint decoded into memory. It skips the read for ownership of every
    /// output line. [`crate::decode`] chooses it for outputs of [`STREAMING_STORES_FROM`] bytes
    /// or more.
    Streaming,
}

impl Stores {
    /// What [`crate::decode`] uses for a whole output of `bytes` bytes.
    pub fn for_output(bytes: u64) -> Stores {
        if bytes >= STREAMING_STORES_FROM as u64 {
            Stores::Streaming
        } else {
            Stores::Cached
        }
    }
}

/// Output size from which [`crate::decode`] writes with [`Stores::Streaming`]: larger than the
/// caches of the CPUs that have such stores, so the output would leave them anyway.
pub const STREAMING_STORES_FROM: usize = 8 << 20;

/// The most bytes one frame of `elements` elements can take (a stored frame).
pub fn max_frame_bytes(dtype: Dtype, elements: usize) -> usize {
    FRAME_HEADER_BYTES + pad32(elements * dtype.element_bytes())
}

/// What the writer chooses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct EncodeOptions {
    /// Element type of the input.
    pub dtype: Dtype,
    /// Frame length as a power of two, 10..=16 (1,024 to 65,536 elements; default 14: 16,384).
    pub frame_log2: u8,
    /// Exponent coding (default: ranked, or stored where smaller).
    pub coding: Coding,
    /// Store a checksum of every frame's decoded bytes (default: on).
    pub checksums: bool,
}

impl EncodeOptions {
    /// Defaults for `dtype`: 16,384-element frames, the ranked coding, checksums on.
    pub const fn new(dtype: Dtype) -> EncodeOptions {
        EncodeOptions {
            dtype,
            frame_log2: DEFAULT_FRAME_LOG2,
            coding: Coding::Ranked,
            checksums: true,
        }
    }

    /// With a frame length of `elements` (a power of two, 1,024 ..= 65,536).
    pub fn frame_len(self, elements: u32) -> Result<EncodeOptions> {
        if !elements.is_power_of_two() || !(1024..=65536).contains(&elements) {
            return Err(Error::InvalidFrameLength(elements));
        }
        Ok(EncodeOptions {
            frame_log2: elements.trailing_zeros() as u8,
            ..self
        })
    }

    /// With this coding.
    pub const fn coding(self, coding: Coding) -> EncodeOptions {
        EncodeOptions { coding, ..self }
    }

    /// With checksums on or off.
    pub const fn checksums(self, on: bool) -> EncodeOptions {
        EncodeOptions {
            checksums: on,
            ..self
        }
    }
}

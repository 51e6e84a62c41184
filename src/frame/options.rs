//! What a caller chooses per frame: the exponent coding to try when encoding, the kind of stores
//! when decoding; and the most bytes a frame can take.

use crate::format::{pad32, Dtype, FRAME_HEADER_BYTES};

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

/// Output size from which [`crate::decode`] writes with [`Stores::Streaming`]: larger than the
/// caches of the CPUs that have such stores, so the output would leave them anyway.
pub const STREAMING_STORES_FROM: usize = 8 << 20;

/// The most bytes one frame of `elements` elements can take (a stored frame).
pub fn max_frame_bytes(dtype: Dtype, elements: usize) -> usize {
    FRAME_HEADER_BYTES + pad32(elements * dtype.element_bytes())
}

//! The block kernels: the whole per-frame algorithm as small pure functions over slices.
//!
//! One file per idea, each depending only on those before it: `fields` (an element's split into
//! exponent and residual), `planes` (hierarchical-halving packing of bit planes), `masks` (the
//! decoder's escape scan), `stats` (what the encoder learns in its first pass), then one file per
//! exponent coding: `ranked` (frequency-ranked symbols with escape levels) and `groups` (the ENEC
//! paper's linear transform over interleaved groups). A new coding adds its file here, its
//! writer and reader in `frame/`, and vector versions of its hot steps in `simd/`. The frame layer
//! (`frame/`) only sequences these calls; the device kernels in `ffi/` mirror them by name.
//!
//! Nothing here allocates; scratch is fixed arrays on the stack, sized by [`CHUNK`] (the frame
//! loops' step) and by the largest frame (the encoder's group ranges, 8 KiB).
//!
//! `crate::simd` holds AVX2, AVX-512 and NEON versions of the hot kernels (same results, tested
//! against these).

/// Bare-metal targets (`target_os = "none"`: microcontrollers, where flash is scarce) decode with
/// the compact form of the loops that the vectorizing forms outgrow: the symbol lookup, the
/// escape expansion, the plane unpacking and the 2-byte merge. Both forms give the same bytes.
pub(crate) const COMPACT: bool = cfg!(target_os = "none");

mod fields;
mod groups;
mod masks;
mod planes;
mod ranked;
mod stats;

pub use crate::format::constants::MAX_SYMBOLS;
pub use crate::format::plane::Plane;
#[cfg(any(test, feature = "internals"))]
pub use crate::format::{constants::MAX_LEVELS, plane::Run, plane::SubPlane};
pub use fields::*;
pub use groups::*;
pub use masks::*;
pub use planes::*;
pub use ranked::*;
pub use stats::*;

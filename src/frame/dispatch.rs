//! Runtime choice of instruction set for the per-frame element loops.
//!
//! The frame loops (`encode.rs`, `decode.rs`) are generic over [`crate::simd::Isa`]. With the
//! `std` feature on x86_64 they are compiled a second time with AVX2 (and BMI1/2, LZCNT, POPCNT)
//! enabled, over the kernels of `simd/` (AVX2, and AVX-512 where the CPU has
//! F/BW/VL/VBMI/VBMI2/BITALG and GFNI), and chosen at run time when the CPU has them; on aarch64
//! they are compiled over the NEON kernels of `simd/`, chosen the same way; everything else
//! (no_std builds, other architectures) runs the portable kernels. All produce identical bytes:
//! `src/simd/tests.rs` compares each kernel, `tests/dispatch.rs` whole frames.
#![allow(unsafe_code)]

use super::decode::decode_frame_impl;
use super::encode::encode_frame_impl;
#[cfg(any(test, feature = "internals"))]
use super::encode::frame_elements;
use super::options::{Coding, Stores};
use crate::error::Result;
use crate::format::Dtype;
use crate::simd::Portable;

#[cfg(all(feature = "std", target_arch = "x86_64"))]
mod x86 {
    use super::*;
    use crate::simd::Avx2;

    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn encode_frame(
        isa: Avx2,
        dtype: Dtype,
        coding: Coding,
        checksums: bool,
        input: &[u8],
        next: &[u8],
        elements: usize,
        out: &mut [u8],
    ) -> Result<usize> {
        encode_frame_impl(isa, dtype, coding, checksums, input, next, elements, out)
    }

    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn decode_frame(
        isa: Avx2,
        dtype: Dtype,
        checksums: bool,
        index: u32,
        elements: usize,
        frame: &[u8],
        out: &mut [u8],
        stores: Stores,
    ) -> Result<usize> {
        let decoded = decode_frame_impl(isa, dtype, checksums, index, elements, frame, out, stores);
        if stores == Stores::Streaming {
            // Non-temporal stores are weakly ordered: make them visible before the caller (or
            // another thread it signals) reads the output.
            core::arch::x86_64::_mm_sfence();
        }
        decoded
    }
}

#[cfg(all(feature = "std", target_arch = "aarch64"))]
mod aarch64 {
    use super::*;
    use crate::simd::Neon;

    #[target_feature(enable = "neon")]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn encode_frame(
        isa: Neon,
        dtype: Dtype,
        coding: Coding,
        checksums: bool,
        input: &[u8],
        next: &[u8],
        elements: usize,
        out: &mut [u8],
    ) -> Result<usize> {
        encode_frame_impl(isa, dtype, coding, checksums, input, next, elements, out)
    }

    #[target_feature(enable = "neon")]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn decode_frame(
        isa: Neon,
        dtype: Dtype,
        checksums: bool,
        index: u32,
        elements: usize,
        frame: &[u8],
        out: &mut [u8],
        stores: Stores,
    ) -> Result<usize> {
        // (The NEON kernels store through the cache whatever `stores` asks.)
        decode_frame_impl(isa, dtype, checksums, index, elements, frame, out, stores)
    }
}

/// The NEON kernels, unless `ENEC_PORTABLE=1` asks for the baseline (every aarch64 CPU has
/// NEON; the token is asked for all the same).
#[cfg(all(feature = "std", target_arch = "aarch64"))]
fn neon() -> Option<crate::simd::Neon> {
    static CHOICE: std::sync::OnceLock<Option<crate::simd::Neon>> = std::sync::OnceLock::new();
    *CHOICE.get_or_init(|| {
        crate::simd::Neon::detect()
            .filter(|_| std::env::var_os("ENEC_PORTABLE").is_none_or(|v| v != "1"))
    })
}

/// The AVX2 kernels, when this CPU has them and `ENEC_PORTABLE=1` does not ask for the baseline.
#[cfg(all(feature = "std", target_arch = "x86_64"))]
fn avx2() -> Option<crate::simd::Avx2> {
    static CHOICE: std::sync::OnceLock<Option<crate::simd::Avx2>> = std::sync::OnceLock::new();
    *CHOICE.get_or_init(|| {
        crate::simd::Avx2::detect()
            .filter(|_| std::env::var_os("ENEC_PORTABLE").is_none_or(|v| v != "1"))
    })
}

/// Whether SIMD kernels are in use: with the `std` feature, the AVX2 ones on an x86_64 CPU that
/// has AVX2 and the NEON ones on aarch64, unless the environment variable `ENEC_PORTABLE=1`
/// (read once) asks for the portable ones, to compare the two in tests and benchmarks.
pub fn simd_in_use() -> bool {
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    {
        avx2().is_some()
    }
    #[cfg(all(feature = "std", target_arch = "aarch64"))]
    {
        neon().is_some()
    }
    #[cfg(not(all(feature = "std", any(target_arch = "x86_64", target_arch = "aarch64"))))]
    false
}

/// Which kernels run: `"AVX2+AVX-512"` (the AVX2 kernels, with AVX-512 versions of the hot ones
/// where the CPU has F, BW, VL, VBMI, VBMI2, BITALG and GFNI and `ENEC_NO_AVX512=1` is not set),
/// `"AVX2"`, `"NEON"` (aarch64), or `"portable"`.
pub fn kernels_in_use() -> &'static str {
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    if let Some(isa) = avx2() {
        return if isa.avx512() { "AVX2+AVX-512" } else { "AVX2" };
    }
    #[cfg(all(feature = "std", target_arch = "aarch64"))]
    if neon().is_some() {
        return "NEON";
    }
    "portable"
}

pub(crate) fn encode_frame(
    dtype: Dtype,
    coding: Coding,
    checksums: bool,
    input: &[u8],
    next: &[u8],
    elements: usize,
    out: &mut [u8],
) -> Result<usize> {
    let (c, e) = (coding, elements);
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    if let Some(isa) = avx2() {
        // SAFETY: the token exists only when this CPU has every feature the x86 functions are
        // compiled for; they are otherwise ordinary safe functions.
        return unsafe { x86::encode_frame(isa, dtype, c, checksums, input, next, e, out) };
    }
    #[cfg(all(feature = "std", target_arch = "aarch64"))]
    if let Some(isa) = neon() {
        // SAFETY: the token exists only when this CPU has NEON, the feature the aarch64
        // functions are compiled for.
        return unsafe { aarch64::encode_frame(isa, dtype, c, checksums, input, next, e, out) };
    }
    encode_frame_impl(Portable, dtype, c, checksums, input, next, e, out)
}

pub(crate) fn decode_frame(
    dtype: Dtype,
    checksums: bool,
    index: u32,
    elements: usize,
    frame: &[u8],
    out: &mut [u8],
    stores: Stores,
) -> Result<usize> {
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    if let Some(isa) = avx2() {
        // SAFETY: as in `encode_frame`: the CPU has the features `x86::decode_frame` needs.
        return unsafe {
            x86::decode_frame(isa, dtype, checksums, index, elements, frame, out, stores)
        };
    }
    #[cfg(all(feature = "std", target_arch = "aarch64"))]
    if let Some(isa) = neon() {
        // SAFETY: as in `encode_frame`: the CPU has NEON, which `aarch64::decode_frame` needs.
        return unsafe {
            aarch64::decode_frame(isa, dtype, checksums, index, elements, frame, out, stores)
        };
    }
    decode_frame_impl(
        Portable, dtype, checksums, index, elements, frame, out, stores,
    )
}

#[cfg(any(test, feature = "internals"))]
/// [`crate::frame::encode_frame`] on the baseline compilation, whatever the CPU: for tests that
/// check both compilations write the same bytes.
#[doc(hidden)]
pub fn encode_frame_portable(
    dtype: Dtype,
    coding: Coding,
    checksums: bool,
    input: &[u8],
    out: &mut [u8],
) -> Result<usize> {
    let elements = frame_elements(dtype, input)?;
    encode_frame_impl(
        Portable,
        dtype,
        coding,
        checksums,
        input,
        &[],
        elements,
        out,
    )
}

#[cfg(any(test, feature = "internals"))]
/// [`crate::frame::decode_frame`] on the baseline compilation, whatever the CPU.
#[doc(hidden)]
pub fn decode_frame_portable(
    dtype: Dtype,
    checksums: bool,
    index: u32,
    elements: usize,
    frame: &[u8],
    out: &mut [u8],
) -> Result<usize> {
    decode_frame_impl(
        Portable,
        dtype,
        checksums,
        index,
        elements,
        frame,
        out,
        Stores::Cached,
    )
}

//! The decoder of one frame, generic over the instruction set: the header check, then the
//! frame's coding's reader.

use super::groups::read_groups;
use super::options::Stores;
use super::ranked::read_ranked;
use super::scratch::Ahead;
use crate::checksum::H32;
use crate::error::{Error, Result};
use crate::format::{
    Dtype, FrameHeader, FrameLayout, FrameParams, FRAME_HEADER_BYTES, MAX_FRAME_LEN,
};
use crate::kernels::Fields;
use crate::simd::Isa;

/// Reads frame `index`'s header (the first 32 bytes of `frame`) and checks it against the stream
/// header (`elements` in this frame, whether checksums are on) and against itself (its size must
/// follow from its parameters). Returns the header and the frame's layout; `layout.bytes` is
/// where the next frame starts. Used by every reader, so they all refuse the same frames.
pub(crate) fn check_frame_header(
    dtype: Dtype,
    checksums: bool,
    index: u32,
    elements: usize,
    frame: &[u8],
) -> Result<(FrameHeader, FrameLayout)> {
    let corrupt = |reason| Error::CorruptFrame {
        frame: index,
        reason,
    };
    if elements == 0 || elements > MAX_FRAME_LEN {
        return Err(Error::InvalidFrameLength(
            elements.try_into().unwrap_or(u32::MAX),
        ));
    }
    let header = FrameHeader::parse(frame, dtype, index)?;
    if header.elements as usize != elements {
        return Err(corrupt("element count differs from the stream header's"));
    }
    let layout = FrameLayout::new(dtype, elements, header.dead_bits, &header.params);
    if layout.bytes != header.frame_bytes as usize {
        return Err(corrupt("frame size does not match its parameters"));
    }
    if !checksums && header.checksum != 0 {
        return Err(corrupt("checksum present in a stream without checksums"));
    }
    Ok((header, layout))
}

/// `decode_frame`'s body; `#[inline(always)]` down to the kernels so that `dispatch`
/// can compile it once per instruction set.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn decode_frame_impl<I: Isa>(
    isa: I,
    dtype: Dtype,
    checksums: bool,
    index: u32,
    elements: usize,
    frame: &[u8],
    out: &mut [u8],
    stores: Stores,
) -> Result<usize> {
    if !dtype.coded() {
        return Err(Error::UnsupportedDtype(dtype.code()));
    }
    let (header, layout) = check_frame_header(dtype, checksums, index, elements, frame)?;
    let corrupt = |reason| Error::CorruptFrame {
        frame: index,
        reason,
    };
    // The next frame's bytes (about as many as this one's), to prefetch while this one decodes:
    // from memory, a frame's planes are too many short streams for the hardware prefetchers.
    let ahead = frame
        .get(layout.bytes..frame.len().min(2 * layout.bytes))
        .unwrap_or(&[]);
    let ahead = Ahead::new(ahead, elements);
    let frame = frame.get(..layout.bytes).ok_or(Error::Truncated {
        needed: layout.bytes as u64,
        available: frame.len() as u64,
    })?;
    let bytes = elements * dtype.element_bytes();
    let out = out.get_mut(..bytes).ok_or(Error::OutputTooSmall {
        needed: bytes as u64,
    })?;
    let fields = Fields::new(dtype, header.dead_bits.into());
    // The decoders hash their output chunk by chunk, while it is in cache.
    let mut hashed = H32::new();
    let hash = checksums.then_some(&mut hashed);
    let result = match (header.params, dtype.element_bytes()) {
        (FrameParams::Stored, _) => {
            out.copy_from_slice(&frame[FRAME_HEADER_BYTES..FRAME_HEADER_BYTES + bytes]);
            if let Some(hash) = hash {
                hash.update(out);
            }
            Ok(())
        }
        // Residuals in the narrowest lanes that hold them: 8 bits for 1-byte elements, 16 for
        // 2-byte ones.
        #[cfg(feature = "fp8")]
        (FrameParams::Ranked(r), 1) => {
            read_ranked::<1, u8, I>(isa, frame, &fields, &r, &layout, out, hash, &ahead, stores)
        }
        (FrameParams::Ranked(r), 2) => {
            read_ranked::<2, u16, I>(isa, frame, &fields, &r, &layout, out, hash, &ahead, stores)
        }
        (FrameParams::Ranked(r), _) => {
            read_ranked::<4, u32, I>(isa, frame, &fields, &r, &layout, out, hash, &ahead, stores)
        }
        #[cfg(feature = "fp8")]
        (FrameParams::Groups(g), 1) => {
            read_groups::<1, u8, I>(isa, frame, &fields, &g, &layout, out, hash, &ahead, stores)
        }
        (FrameParams::Groups(g), 2) => {
            read_groups::<2, u16, I>(isa, frame, &fields, &g, &layout, out, hash, &ahead, stores)
        }
        (FrameParams::Groups(g), _) => {
            read_groups::<4, u32, I>(isa, frame, &fields, &g, &layout, out, hash, &ahead, stores)
        }
    };
    result.map_err(corrupt)?;
    if checksums && hashed.finish() != header.checksum {
        return Err(Error::ChecksumMismatch { frame: index });
    }
    Ok(layout.bytes)
}

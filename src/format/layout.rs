//! Where each section of a frame lies (FORMAT.md 4.4), and the size of frames and streams.

use super::constants::*;
use super::header::{FrameParams, StreamInfo};
use super::plane::Plane;
use crate::dtype::Dtype;
use crate::error::{Error, Result};

/// Where each section of a frame lies (offsets from the frame start), derived from its header.
#[derive(Clone, Copy, Debug, Default)]
pub struct FrameLayout {
    /// Symbol table offset and length (ranked only; length 0 otherwise).
    pub table: (usize, usize),
    /// Sign and mantissa residuals.
    pub residual: Plane,
    /// groups: flags, low, high. ranked: level 1..=L, then the exponent level.
    pub planes: [Plane; MAX_LEVELS + 1],
    /// Number of entries of `planes` in use.
    pub plane_count: usize,
    /// Total frame size, header included.
    pub bytes: usize,
}

/// One section of a frame body, in stream order.
enum Section {
    /// Bytes copied verbatim (stored frames, the ranked symbol table).
    Bytes(usize),
    /// A bit plane: width, count.
    Plane(u32, usize),
}

/// Visits the sections of a frame's body in order: the single definition of where things lie,
/// shared by the layout (decoder, writer) and the size (encoder's parameter search).
fn sections(
    dtype: Dtype,
    elements: usize,
    dead_bits: u8,
    params: &FrameParams,
    mut visit: impl FnMut(Section),
) {
    let residual_width = 1 + dtype.mantissa_bits() - u32::from(dead_bits);
    match params {
        FrameParams::Stored => visit(Section::Bytes(elements * dtype.element_bytes())),
        FrameParams::Groups(g) => {
            let groups = elements.div_ceil(GROUP_LEN);
            visit(Section::Plane(residual_width, elements));
            visit(Section::Plane(1, groups));
            visit(Section::Plane(g.low.into(), GROUP_LEN * groups));
            let high = u32::from(g.width - g.low.min(g.width));
            visit(Section::Plane(high, GROUP_LEN * g.flagged as usize));
        }
        FrameParams::Ranked(r) => {
            visit(Section::Bytes(r.table_len()));
            visit(Section::Plane(residual_width, elements));
            let levels = usize::from(r.levels).min(MAX_LEVELS);
            let mut count = elements;
            for j in 0..levels {
                visit(Section::Plane(r.widths[j].into(), count));
                count = r.counts[j] as usize;
            }
            visit(Section::Plane(dtype.exponent_bits(), count));
        }
    }
}

/// Total size of a frame with these parameters, header and padding included.
pub fn frame_bytes(dtype: Dtype, elements: usize, dead_bits: u8, params: &FrameParams) -> usize {
    let mut bytes = FRAME_HEADER_BYTES;
    sections(dtype, elements, dead_bits, params, |section| {
        bytes += match section {
            Section::Bytes(n) => pad32(n),
            Section::Plane(width, count) => Plane::bytes(width, count),
        }
    });
    bytes
}

#[cfg(any(test, feature = "internals"))]
/// [`frame_bytes`] of a ranked frame, from its parameters' parts: the encoder's width search
/// asks this some tens of times per frame. Always equal to `frame_bytes` (`tests/kernels.rs`).
#[inline]
pub fn ranked_frame_bytes(
    dtype: Dtype,
    elements: usize,
    dead_bits: u8,
    levels: u8,
    widths: [u8; MAX_LEVELS],
    counts: [u32; MAX_LEVELS],
) -> usize {
    ranked_fixed_bytes(dtype, elements, dead_bits)
        + ranked_exponent_bytes(dtype, elements, levels, widths, counts)
}

/// The part of [`ranked_frame_bytes`] that the exponent coding does not change: the header and
/// the residual plane.
#[inline]
pub(crate) fn ranked_fixed_bytes(dtype: Dtype, elements: usize, dead_bits: u8) -> usize {
    let residual = 1 + dtype.mantissa_bits() - u32::from(dead_bits);
    FRAME_HEADER_BYTES + Plane::bytes(residual, elements)
}

/// The rest of [`ranked_frame_bytes`]: symbol table, level planes and exponent plane (what the
/// width search compares).
#[inline]
pub(crate) fn ranked_exponent_bytes(
    dtype: Dtype,
    elements: usize,
    levels: u8,
    widths: [u8; MAX_LEVELS],
    counts: [u32; MAX_LEVELS],
) -> usize {
    let (mut bytes, mut symbols, mut count) = (0, 0, elements);
    for (&width, &next) in widths.iter().zip(&counts).take(usize::from(levels)) {
        symbols += (1usize << width) - 1;
        bytes += Plane::bytes(width.into(), count);
        count = next as usize;
    }
    bytes + pad32(symbols) + Plane::bytes(dtype.exponent_bits(), count)
}

impl FrameLayout {
    /// The layout of a frame of `elements` elements with these parameters (stored frames have
    /// no planes: their body is the elements verbatim).
    pub fn new(dtype: Dtype, elements: usize, dead_bits: u8, params: &FrameParams) -> FrameLayout {
        let mut layout = FrameLayout::default();
        let mut at = FRAME_HEADER_BYTES;
        let mut residual_done = false;
        sections(
            dtype,
            elements,
            dead_bits,
            params,
            |section| match section {
                Section::Bytes(n) => {
                    layout.table = (at, n);
                    at += pad32(n);
                }
                Section::Plane(width, count) => {
                    let plane = Plane::at(at, width, count);
                    at = plane.end();
                    if residual_done {
                        layout.planes[layout.plane_count] = plane;
                        layout.plane_count += 1;
                    } else {
                        layout.residual = plane;
                        residual_done = true;
                    }
                }
            },
        );
        if matches!(params, FrameParams::Stored) {
            layout.table = (0, 0);
        }
        layout.bytes = at;
        layout
    }

    /// The padding of a frame with planes, the bytes no section fills (FORMAT.md 4.4, 4.5:
    /// zeros): after the table and after each sub-plane's words.
    pub fn padding(&self) -> impl Iterator<Item = core::ops::Range<usize>> + '_ {
        let (at, len) = self.table;
        let planes = core::iter::once(&self.residual).chain(&self.planes[..self.plane_count]);
        let subs = planes.flat_map(|plane| plane.subs());
        core::iter::once(at + len..at + pad32(len)).chain(subs.map(|sub| {
            let words = sub.offset + 2 * sub.words;
            words..sub.offset + pad32(2 * sub.words)
        }))
    }
}

/// Size in bytes of a stream of `element_count` elements when every frame is stored: the largest
/// an encoder ever writes (FORMAT.md section 7).
pub fn max_encoded_len(dtype: Dtype, element_count: u64, frame_log2: u8) -> Result<usize> {
    let info = StreamInfo::new(dtype, frame_log2, true, element_count)?;
    let eb = dtype.element_bytes() as u64;
    let full = u64::from(info.frame_count.saturating_sub(1));
    let last = info.frame_elements(info.frame_count.saturating_sub(1)) as u64;
    let frame_body =
        |n: u64| (n * eb).div_ceil(ALIGN as u64) * ALIGN as u64 + FRAME_HEADER_BYTES as u64;
    let total = if info.frame_count == 0 {
        STREAM_HEADER_BYTES as u64
    } else {
        full.checked_mul(frame_body(1u64 << frame_log2))
            .and_then(|x| x.checked_add(frame_body(last)))
            .and_then(|x| x.checked_add(STREAM_HEADER_BYTES as u64))
            .ok_or(Error::TooLarge)?
    };
    usize::try_from(total).map_err(|_| Error::TooLarge)
}

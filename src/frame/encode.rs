//! The encoder of one frame, generic over the instruction set: statistics, the choice of coding,
//! then the chosen coding's writer.

use super::groups::{choose_groups_params, write_groups};
use super::options::{max_frame_bytes, Coding};
use super::ranked::{choose_ranked_params, write_ranked};
use super::scratch::Ahead;
use crate::checksum::H32;
use crate::error::{Error, Result};
use crate::format::{
    frame_bytes, Dtype, FrameHeader, FrameLayout, FrameParams, GroupsParams, RankedParams,
    FRAME_HEADER_BYTES, MAX_FRAME_LEN,
};
use crate::kernels::{Fields, FrameStats, GroupRanges, Ranking, CHUNK};
use crate::simd::Isa;

/// The elements of a frame of `input` bytes, if it is one: whole elements, 1 to
/// [`MAX_FRAME_LEN`] of them.
pub(super) fn frame_elements(dtype: Dtype, input: &[u8]) -> Result<usize> {
    let eb = dtype.element_bytes();
    if !input.len().is_multiple_of(eb) {
        return Err(Error::PartialElement {
            len: input.len() as u64,
            element_bytes: eb as u8,
        });
    }
    let elements = input.len() / eb;
    if elements == 0 || elements > MAX_FRAME_LEN {
        return Err(Error::InvalidFrameLength(elements as u32));
    }
    Ok(elements)
}

/// A frame's coding as chosen, with what writing it needs.
enum Plan<'a> {
    Stored,
    Ranked(RankedParams, &'a Ranking),
    Groups(GroupsParams, &'a GroupRanges),
}

/// The encoder's element loops; `#[inline(always)]` down to the kernels so that
/// `dispatch` can compile them once per instruction set.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn encode_frame_impl<I: Isa>(
    isa: I,
    dtype: Dtype,
    coding: Coding,
    checksums: bool,
    input: &[u8],
    next: &[u8],
    elements: usize,
    out: &mut [u8],
) -> Result<usize> {
    let (c, e) = (coding, elements);
    match dtype.element_bytes() {
        _ if !dtype.coded() => Err(Error::UnsupportedDtype(dtype.code())),
        #[cfg(feature = "fp8")]
        1 => encode_elements::<1, I>(isa, dtype, c, checksums, input, next, e, out),
        2 => encode_elements::<2, I>(isa, dtype, c, checksums, input, next, e, out),
        _ => encode_elements::<4, I>(isa, dtype, c, checksums, input, next, e, out),
    }
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn encode_elements<const B: usize, I: Isa>(
    isa: I,
    dtype: Dtype,
    coding: Coding,
    checksums: bool,
    input: &[u8],
    next: &[u8],
    elements: usize,
    out: &mut [u8],
) -> Result<usize> {
    // One pass over the elements: exponent histogram, mantissa OR, checksum and, when the
    // groups coding is a candidate, each group's exponent range.
    let exponent_fields = Fields::new(dtype, 0);
    let mut stats = FrameStats::new(elements);
    let mut ranges = GroupRanges::new(elements);
    let mut x = [0u8; CHUNK];
    let mut hashed = H32::new();
    // The frame's output (at most as many bytes as its input, less when it compresses), fetched
    // while the statistics run: from memory, the packing below otherwise waits on each of its
    // lines. (A read prefetch: `prefetchw` measured slower here.)
    let ahead = Ahead::new(&out[..out.len().min(input.len())], elements);
    // The next frame's input, fetched while this one is written (the writing is compute-bound,
    // the statistics pass bandwidth-bound).
    let following = Ahead::new(&next[..next.len().min(input.len())], elements);
    for start in (0..elements).step_by(CHUNK) {
        let len = CHUNK.min(elements - start);
        isa.prefetch(ahead.share(start, len));
        let run = &input[B * start..B * (start + len)];
        let hash = checksums.then_some(&mut hashed);
        isa.exponent_stats::<B>(&exponent_fields, run, &mut x[..len], &mut stats, hash);
        if coding != Coding::Ranked {
            ranges.add(start, &x[..len]);
        }
    }
    stats.finish();
    let dead_bits = stats.dead_bits(dtype) as u8;
    let size_of = |params: &FrameParams| frame_bytes(dtype, elements, dead_bits, params);

    let stored = (Plan::Stored, max_frame_bytes(dtype, elements));
    let ranking = (coding != Coding::Groups)
        .then(|| Ranking::new(&stats.histogram, 1 << dtype.exponent_bits()));
    let ranked = ranking.as_ref().map(|ranking| {
        let (params, bytes) = choose_ranked_params(ranking, elements, dtype, dead_bits);
        (Plan::Ranked(params, ranking), bytes)
    });
    // Groups matters only below the size that would beat it: ranked's (which wins ties) and
    // one past stored's (which loses them).
    let beat = ranked
        .as_ref()
        .map_or(usize::MAX, |r| r.1)
        .min(stored.1 + 1);
    let groups = (coding != Coding::Ranked).then(|| {
        match choose_groups_params(isa, &ranges, &stats, dtype, &size_of, beat) {
            (FrameParams::Groups(params), bytes) => (Plan::Groups(params, &ranges), bytes),
            (_, bytes) => (Plan::Stored, bytes),
        }
    });
    // Ties: ranked, then groups, then stored (FORMAT.md 7.5).
    let mut best = stored;
    for candidate in [groups, ranked].into_iter().flatten() {
        if candidate.1 <= best.1 {
            best = candidate;
        }
    }
    let (plan, bytes) = best;
    let params = match plan {
        Plan::Stored => FrameParams::Stored,
        Plan::Ranked(params, _) => FrameParams::Ranked(params),
        Plan::Groups(params, _) => FrameParams::Groups(params),
    };
    let dead_bits = if params == FrameParams::Stored {
        0
    } else {
        dead_bits
    };
    let out = out.get_mut(..bytes).ok_or(Error::OutputTooSmall {
        needed: bytes as u64,
    })?;
    let header = FrameHeader {
        frame_bytes: bytes as u32,
        checksum: if checksums { hashed.finish() } else { 0 },
        elements: elements as u32,
        dead_bits,
        params,
    };
    out[..FRAME_HEADER_BYTES].copy_from_slice(&header.to_bytes());
    let layout = FrameLayout::new(dtype, elements, dead_bits, &params);
    let fields = Fields::new(dtype, dead_bits.into());
    // Nothing is zeroed ahead (the whole frame cost 4% of encoding in cache): the header, the
    // table and the planes' words are written whole (a word's first field is stored, not ORed:
    // `kernels::pack_range`), the padding is zeroed here (a stored frame has none of these).
    layout.padding().for_each(|pad| out[pad].fill(0));
    match plan {
        Plan::Stored => {
            let (body, padding) = out[FRAME_HEADER_BYTES..].split_at_mut(input.len());
            body.copy_from_slice(input);
            padding.fill(0);
        }
        Plan::Ranked(r, ranking) => {
            let (f, a) = (&fields, &following);
            if B == 1 {
                write_ranked::<B, u8, I>(isa, input, elements, f, &r, ranking, &layout, a, out)
            } else if B == 2 {
                write_ranked::<B, u16, I>(isa, input, elements, f, &r, ranking, &layout, a, out)
            } else {
                write_ranked::<B, u32, I>(isa, input, elements, f, &r, ranking, &layout, a, out)
            }
        }
        Plan::Groups(g, ranges) => {
            let (f, a) = (&fields, &following);
            if B == 1 {
                write_groups::<B, u8, I>(isa, input, elements, f, &g, ranges, &layout, a, out)
            } else if B == 2 {
                write_groups::<B, u16, I>(isa, input, elements, f, &g, ranges, &layout, a, out)
            } else {
                write_groups::<B, u32, I>(isa, input, elements, f, &g, ranges, &layout, a, out)
            }
        }
    }
    Ok(bytes)
}

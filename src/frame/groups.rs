//! The `groups` coding of one frame (FORMAT.md 4.2, 7.3): choosing its parameters, writing its
//! planes, reading them back.

use super::options::Stores;
use super::scratch::{Ahead, ESCAPED_SLACK, SLACK};
use crate::checksum::{self, H32};
use crate::format::{
    Dtype, FrameLayout, FrameParams, GroupsParams, Plane, GROUP_LEN, MAX_FRAME_LEN,
};
use crate::kernels::{
    groups_flags, groups_split, groups_width, Fields, FrameStats, GroupRanges, Lane, CHUNK,
    GROUPS_BASES,
};
use crate::simd::{Escapes, Isa};

/// The first smallest groups candidate (FORMAT.md 7.3) when it is smaller than `beat` (the size
/// it must undercut to be chosen); otherwise a candidate of at least `beat`, or stored at
/// `usize::MAX`. A candidate costs at least the frame without its high plane, so low widths
/// whose low plane alone reaches `beat` are not counted at all.
#[inline(always)]
pub(super) fn choose_groups_params<I: Isa>(
    isa: I,
    ranges: &GroupRanges,
    stats: &FrameStats,
    dtype: Dtype,
    size_of: &impl Fn(&FrameParams) -> usize,
    beat: usize,
) -> (FrameParams, usize) {
    let e = dtype.exponent_bits();
    let elements = stats.elements;
    let groups = elements.div_ceil(GROUP_LEN) as u32;
    let (lo, hi) = stats.exponent_range();
    let mode = stats.mode();
    let first = lo.max(mode.saturating_sub(3));
    let last = hi.min(mode + 8);
    let candidates = (last - first + 1) as usize;
    debug_assert!(candidates <= GROUPS_BASES);
    // Header, residual plane and flags plane (FORMAT.md 4.2, 4.4).
    let no_groups = FrameParams::Groups(GroupsParams {
        base: 0,
        width: 0,
        low: 0,
        flagged: 0,
    });
    let fixed = size_of(&no_groups);
    // The low widths that may still beat `beat` with flagged groups (`m < n <= E`), and the
    // widest of them. Not a prefix of the widths: padding can make a wider plane smaller (a
    // 3-bit plane is two padded sub-planes, a 4-bit one is one).
    let counted = |low: u32| fixed + Plane::bytes(low, GROUP_LEN * groups as usize) < beat;
    let widest = (0..e).rev().find(|&low| counted(low));
    let unflagged = match widest {
        Some(widest) => isa.groups_unflagged(ranges, first, candidates, widest),
        None => [[0; 9]; GROUPS_BASES],
    };
    let mut best = (FrameParams::Stored, usize::MAX);
    for (c, row) in unflagged.iter().enumerate().take(candidates) {
        let base = first + c as u32;
        let width = groups_width(base, lo, hi, e);
        for low in 0..=width {
            if low < width && !counted(low) {
                // Its low plane alone costs at least `beat`.
                continue;
            }
            let flagged = if low == width {
                0
            } else {
                groups - row[low as usize]
            };
            // The low and high planes: the rest of the frame is the same for every candidate.
            let bytes = fixed
                + Plane::bytes(low, GROUP_LEN * groups as usize)
                + Plane::bytes(width - low, GROUP_LEN * flagged as usize);
            if bytes < best.1 {
                let params = FrameParams::Groups(GroupsParams {
                    base: base as u8,
                    width: width as u8,
                    low: low as u8,
                    flagged,
                });
                best = (params, bytes);
            }
        }
    }
    debug_assert!(best.0 == FrameParams::Stored || size_of(&best.0) == best.1);
    best
}

/// The decoder's steps in reverse, a chunk of elements at a time (a chunk stays inside one row of
/// the interleave, so its groups are consecutive): residuals, the low bits of every `y`, and the
/// high bits of the flagged groups' elements, compacted in element order.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn write_groups<const B: usize, L: Lane, I: Isa>(
    isa: I,
    input: &[u8],
    elements: usize,
    fields: &Fields,
    params: &GroupsParams,
    ranges: &GroupRanges,
    layout: &FrameLayout,
    ahead: &Ahead,
    out: &mut [u8],
) {
    let groups = elements.div_ceil(GROUP_LEN);
    let (base, width, low) = (
        u32::from(params.base),
        u32::from(params.width),
        u32::from(params.low),
    );
    // The flags a chunk of groups at a time: packed as their plane and kept as a set.
    let mut flags = FlagSet::new();
    let mut bits = [0u8; CHUNK];
    for first in (0..groups).step_by(CHUNK) {
        let len = CHUNK.min(groups - first);
        let (min, max) = (
            &ranges.min[first..first + len],
            &ranges.max[first..first + len],
        );
        groups_flags(min, max, base, width, low, &mut bits[..len]);
        isa.pack(out, &layout.planes[0], first, &bits[..len]);
        flags.set_run(isa, first, &bits[..len]);
    }
    // Elements past the last stay zero in the low and high planes (their `y` is 0).
    let mut residual = [L::default(); CHUNK];
    let mut x = [0u8; CHUNK];
    let mut high = [0u8; CHUNK];
    let mut compact = [0u8; CHUNK + SLACK];
    let mut next_high = 0;
    let mut start = 0;
    while start < elements {
        let first_group = start % groups;
        let len = CHUNK.min(elements - start).min(groups - first_group);
        isa.prefetch(ahead.share(start, len));
        isa.split_load::<B, L>(
            fields,
            &input[B * start..B * (start + len)],
            &mut x[..len],
            &mut residual[..len],
        );
        isa.pack(out, &layout.residual, start, &residual[..len]);
        // x becomes y's low bits, `high` its high bits.
        groups_split(&mut x[..len], &mut high[..len], base, width, low);
        isa.pack(out, &layout.planes[1], start, &x[..len]);
        let flagged = isa.compress(&flags.masks(first_group, len), &high[..len], &mut compact);
        isa.pack(out, &layout.planes[2], next_high, &compact[..flagged]);
        next_high += flagged;
        start += len;
    }
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn read_groups<const B: usize, L: Lane, I: Isa>(
    isa: I,
    frame: &[u8],
    fields: &Fields,
    params: &GroupsParams,
    layout: &FrameLayout,
    out: &mut [u8],
    mut hash: Option<&mut H32>,
    ahead: &Ahead,
    stores: Stores,
) -> core::result::Result<(), &'static str> {
    let elements = layout.residual.count;
    let groups = layout.planes[0].count;
    let mut flags = FlagSet::new();
    let mut bits = [0u8; CHUNK];
    for start in (0..groups).step_by(CHUNK) {
        let len = CHUNK.min(groups - start);
        isa.unpack(frame, &layout.planes[0], start, &mut bits[..len]);
        flags.set_run(isa, start, &bits[..len]);
    }
    if flags.count() != params.flagged {
        return Err("flag count differs from the header's");
    }
    let high_plane = &layout.planes[2];
    let mut next_high = 0;
    let mut highs = [0u8; CHUNK + ESCAPED_SLACK];
    let mut start = 0;
    while start < elements {
        // A chunk stays inside one row of groups, so its groups are consecutive.
        let first_group = start % groups;
        let len = CHUNK.min(elements - start).min(groups - first_group);
        isa.prefetch(ahead.share(start, len));
        let masks = flags.masks(first_group, len);
        let flagged: usize = masks.iter().map(|m| m.count_ones() as usize).sum();
        if next_high + flagged > high_plane.count {
            return Err("flags ask for more high bits than stored");
        }
        isa.unpack(frame, high_plane, next_high, &mut highs[..flagged]);
        next_high += flagged;
        let highs = Escapes {
            values: &highs,
            count: flagged,
        };
        // The chunk may hash its own output where the hash has caught up with it.
        let caught_up =
            |h: &&mut H32| h.len() == B * start && h.len().is_multiple_of(checksum::BLOCK);
        let chunk_hash = hash.as_deref_mut().filter(caught_up);
        isa.groups_chunk::<B, L>(
            fields,
            frame,
            &layout.planes[1],
            &layout.residual,
            start,
            params,
            &masks,
            highs,
            &mut out[B * start..B * (start + len)],
            chunk_hash,
            stores == Stores::Streaming,
        )
        .filter(|&taken| taken == flagged)
        .ok_or("flags ask for more high bits than stored")?;
        start += len;
        if let Some(hash) = hash.as_deref_mut() {
            hash.follow(out, B * start);
        }
    }
    Ok(())
}

/// One bit per group (at most 4,096 groups per frame).
struct FlagSet([u64; MAX_FRAME_LEN / GROUP_LEN / 64]);

impl FlagSet {
    fn new() -> FlagSet {
        FlagSet([0; MAX_FRAME_LEN / GROUP_LEN / 64])
    }
    /// Sets the flags `first..first + bits.len()` from one byte per group (1: flagged);
    /// `first` is a multiple of 64 (a chunk's start), so they are whole words of the set.
    fn set_run<I: Isa>(&mut self, isa: I, first: usize, bits: &[u8]) {
        let words = &mut self.0[first / 64..(first + bits.len()).div_ceil(64)];
        isa.escape_masks(bits, 1, words);
    }
    fn count(&self) -> u32 {
        self.0.iter().map(|w| w.count_ones()).sum()
    }
    /// Flags `first..first + len` (`len <= CHUNK`) as masks of 64. (Inlined: out of line, the
    /// 16-byte copy of its result waits on its 8-byte stores, a store-forwarding stall.)
    #[inline(always)]
    fn masks(&self, first: usize, len: usize) -> [u64; CHUNK / 64] {
        let mut masks = [0u64; CHUNK / 64];
        let (word, shift) = (first / 64, first % 64);
        for (i, m) in masks.iter_mut().enumerate().take(len.div_ceil(64)) {
            let lo = self.0.get(word + i).copied().unwrap_or(0) >> shift;
            let hi = if shift == 0 {
                0
            } else {
                self.0.get(word + i + 1).copied().unwrap_or(0) << (64 - shift)
            };
            let keep = (len - 64 * i).min(64);
            *m = (lo | hi)
                & if keep == 64 {
                    u64::MAX
                } else {
                    (1u64 << keep) - 1
                };
        }
        masks
    }
}

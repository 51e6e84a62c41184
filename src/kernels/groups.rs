//! The `groups` coding: the ENEC paper's transform `y = (b - x) mod 2^n` over interleaved groups
//! of 16 with two bit widths (FORMAT.md 4.2): the transform, the flags, and the statistics its
//! parameter search reads.

#[cfg(any(test, feature = "internals"))]
use super::fields::{exponents, Fields, CHUNK};
use crate::format::{GROUP_LEN, MAX_FRAME_LEN, MAX_SYMBOLS};

/// Forward transform `y = (b - x) mod 2^n`.
#[inline(always)]
pub fn groups_forward(x: u32, base: u32, n: u32) -> u32 {
    base.wrapping_sub(x) & ((1 << n) - 1)
}

/// Inverse transform `x = (b - sext_n(y)) mod 2^E`, branch-free.
#[inline(always)]
pub fn groups_inverse(y: u32, base: u32, n: u32, e: u32) -> u32 {
    let half = 1u32 << (n - 1);
    let signed = (y ^ half).wrapping_sub(half); // sign-extends the n-bit y (mod 2^32)
    base.wrapping_sub(signed) & ((1 << e) - 1)
}

/// Smallest `n` in `1..=E` whose window `[b - 2^(n-1) + 1, b + 2^(n-1)]` holds `lo..=hi`
/// (or `E`, which holds everything modulo `2^E`).
pub fn groups_width(base: u32, lo: u32, hi: u32, e: u32) -> u32 {
    (1..e)
        .find(|&n| {
            let half = 1i64 << (n - 1);
            i64::from(base) - half < i64::from(lo) && i64::from(hi) <= i64::from(base) + half
        })
        .unwrap_or(e)
}

/// Whether a group needs its high bits: some element outside `(b - 2^m, b]` (only for `m < n`).
#[inline(always)]
pub fn group_flagged(gmin: u32, gmax: u32, base: u32, low: u32) -> bool {
    gmax > base || i64::from(gmin) <= i64::from(base) - (1i64 << low)
}

// The three below compute the definitions above over runs in bytes: every step is a ring
// operation or a compare, so modulo 2^8 they give the low byte of the u32 results, and the
// loops vectorize (the u32 forms did not).

/// [`group_flagged`] of a run of groups from their exponent ranges, 1 or 0 per group (never
/// flagged when `low == n`).
#[inline(always)]
pub fn groups_flags(min: &[u8], max: &[u8], base: u32, n: u32, low: u32, flags: &mut [u8]) {
    // Flagged when the largest exponent is above `base` or the smallest below `lowest`.
    let lowest = (i64::from(base) - (1i64 << low) + 1).max(0) as u8;
    for ((flag, &gmin), &gmax) in flags.iter_mut().zip(min).zip(max) {
        *flag = u8::from(low < n && (u32::from(gmax) > base || gmin < lowest));
        debug_assert_eq!(
            *flag != 0,
            low < n && group_flagged(gmin.into(), gmax.into(), base, low)
        );
    }
}

/// [`groups_forward`] of a run of exponents, split at bit `low`: each `x` becomes its `y`'s low
/// bits, `high` gets the high bits.
#[inline(always)]
pub fn groups_split(x: &mut [u8], high: &mut [u8], base: u32, n: u32, low: u32) {
    let (base8, y_mask, low_mask) = (
        base as u8,
        ((1u32 << n) - 1) as u8,
        ((1u32 << low) - 1) as u8,
    );
    for (x, h) in x.iter_mut().zip(high) {
        let y = base8.wrapping_sub(*x) & y_mask;
        debug_assert_eq!(u32::from(y), groups_forward(u32::from(*x), base, n));
        *x = y & low_mask;
        *h = (u16::from(y) >> low) as u8;
    }
}

/// [`groups_inverse`] on bytes (`n, E <= 8`), in the form every kernel computes it:
/// `x = ((b + half) - (y ^ half)) & mask`, since `b - sext(y) = (b + half) - (y ^ half)` with
/// `half = 2^(n-1)`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GroupsBytes {
    /// `2^(n-1)`.
    pub half: u8,
    /// `b + 2^(n-1)` (mod 2^8).
    pub base_half: u8,
    /// `2^E - 1`.
    pub mask: u8,
}

impl GroupsBytes {
    /// The constants for base `b`, width `n` (`1..=8`) and exponent width `E` (`<= 8`).
    pub fn new(base: u32, n: u32, e: u32) -> GroupsBytes {
        let half = 1u8.wrapping_shl(n - 1);
        GroupsBytes {
            half,
            base_half: (base as u8).wrapping_add(half),
            mask: ((1u32 << e) - 1) as u8,
        }
    }

    /// The exponent of `y`.
    #[inline(always)]
    pub fn inverse(self, y: u8) -> u8 {
        self.base_half.wrapping_sub(y ^ self.half) & self.mask
    }
}

/// [`groups_inverse`] of a run of `y`: each becomes its exponent.
#[inline(always)]
pub fn groups_inverse_run(y: &mut [u8], base: u32, n: u32, e: u32) {
    let bytes = GroupsBytes::new(base, n, e);
    for y in y.iter_mut() {
        let x = bytes.inverse(*y);
        debug_assert_eq!(u32::from(x), groups_inverse(u32::from(*y), base, n, e));
        *y = x;
    }
}

/// Number of base candidates of the groups search: `b` in `mode - 3 ..= mode + 8`.
pub const GROUPS_BASES: usize = 12;

/// Per group of frame elements `t, t + G, t + 2G, ...` (`G` groups): the smallest and largest
/// exponent. Gathered a row of the interleave at a time, so the loop runs over contiguous
/// elements and vectorizes.
pub struct GroupRanges {
    /// Smallest exponent of each group.
    pub min: [u8; MAX_GROUPS],
    /// Largest exponent of each group.
    pub max: [u8; MAX_GROUPS],
    /// Number of groups `G`.
    pub groups: usize,
}

/// Most groups in a frame.
pub const MAX_GROUPS: usize = MAX_FRAME_LEN / GROUP_LEN;

impl GroupRanges {
    #[cfg(any(test, feature = "internals"))]
    /// The ranges of the groups of a frame of `elements` elements (at most [`MAX_FRAME_LEN`]).
    #[inline(always)]
    pub fn gather<const B: usize>(frame: &[u8], elements: usize, fields: &Fields) -> GroupRanges {
        let mut ranges = GroupRanges::new(elements);
        let mut x = [0u8; CHUNK];
        for start in (0..elements).step_by(CHUNK) {
            let len = CHUNK.min(elements - start);
            exponents::<B>(fields, &frame[B * start..B * (start + len)], &mut x[..len]);
            ranges.add(start, &x[..len]);
        }
        ranges
    }

    /// No elements yet, for a frame of `elements` (see [`GroupRanges::add`]).
    pub fn new(elements: usize) -> GroupRanges {
        GroupRanges {
            min: [u8::MAX; MAX_GROUPS],
            max: [0; MAX_GROUPS],
            groups: elements.div_ceil(GROUP_LEN).min(MAX_GROUPS),
        }
    }

    /// Adds the exponents `x` of elements `start..start + x.len()`. Element `i` is in group
    /// `i mod G`, so a run of elements is a few runs of consecutive groups.
    #[inline(always)]
    pub fn add(&mut self, start: usize, x: &[u8]) {
        let groups = self.groups;
        let mut done = 0;
        while done < x.len() {
            let t = (start + done) % groups;
            let run = (groups - t).min(x.len() - done);
            let (min, max) = (&mut self.min[t..t + run], &mut self.max[t..t + run]);
            for ((lo, hi), &x) in min.iter_mut().zip(max.iter_mut()).zip(&x[done..done + run]) {
                *lo = (*lo).min(x);
                *hi = (*hi).max(x);
            }
            done += run;
        }
    }

    /// For each base candidate `b = first + c` and each low width `m`, the number of groups
    /// that are *not* flagged (every exponent in `(b - 2^m, b]`): `unflagged[c][m]`.
    ///
    /// One pass over the groups counts them by key: (first candidate their largest exponent
    /// fits under, smallest exponent `lo`); weights have a few dozen distinct keys. A group
    /// fits under every later candidate too, and there is unflagged from `m = bitlength(b - lo)`
    /// on, so each distinct key adds its count at one `m` per candidate, and running sums over
    /// `m` finish the table.
    pub fn unflagged(&self, first: u32, candidates: usize) -> [[u32; 9]; GROUPS_BASES] {
        let candidates = candidates.min(GROUPS_BASES);
        // Keys `c << 8 | lo`, `c = GROUPS_BASES` for groups that fit under no candidate.
        const KEYS: usize = (GROUPS_BASES + 1) * MAX_SYMBOLS;
        let mut count = [0u16; KEYS];
        let mut present = [0u64; KEYS / 64];
        let (min, max) = (&self.min[..self.groups], &self.max[..self.groups]);
        for (&lo, &hi) in min.iter().zip(max) {
            let c = u32::from(hi).saturating_sub(first).min(GROUPS_BASES as u32);
            let key = (c << 8 | u32::from(lo)) as usize;
            count[key] += 1;
            present[key / 64] |= 1 << (key % 64);
        }
        let keys = present.iter().enumerate().flat_map(|(w, &bits)| {
            let mut bits = bits;
            core::iter::from_fn(move || {
                if bits == 0 {
                    return None;
                }
                let key = 64 * w + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                Some(key)
            })
        });
        // starting[c][m]: groups unflagged for candidate c from low width m on.
        let mut starting = [[0u32; 9]; GROUPS_BASES];
        for key in keys {
            let (fits_from, lo) = (key >> 8, (key & 0xFF) as u32);
            let groups = u32::from(count[key]);
            for (c, row) in starting
                .iter_mut()
                .enumerate()
                .take(candidates)
                .skip(fits_from)
            {
                // `lo <= largest <= b`; none is unflagged when `b - lo >= 2^8`.
                let below = first + c as u32 - lo;
                if let Some(at) = row.get_mut((u32::BITS - below.leading_zeros()) as usize) {
                    *at += groups;
                }
            }
        }
        let mut unflagged = [[0u32; 9]; GROUPS_BASES];
        for (row, start) in unflagged.iter_mut().zip(&starting).take(candidates) {
            let mut sum = 0;
            for (u, &s) in row.iter_mut().zip(start) {
                sum += s;
                *u = sum;
            }
        }
        unflagged
    }
}

#[cfg(any(test, feature = "internals"))]
/// [`GroupRanges::unflagged`] of a frame's groups.
pub fn groups_unflagged<const B: usize>(
    frame: &[u8],
    elements: usize,
    fields: &Fields,
    first: u32,
    candidates: usize,
) -> [[u32; 9]; GROUPS_BASES] {
    GroupRanges::gather::<B>(frame, elements, fields).unflagged(first, candidates)
}

//! Where a chunk's code and residual planes lie in the frame: the word offsets, shifts and
//! masks the one-pass decoder steps read them by, checked once per chunk so that the steps
//! themselves need no bounds checks.

use super::*;

/// A sub-plane read across its rows, for [`level_chunk512`]: where the next value's field
/// is, the words per row, and where the field goes in the value.
#[derive(Clone, Copy)]
pub(super) struct RowCursor {
    /// Byte offset of the sub-plane's first word in the frame.
    pub(super) offset: usize,
    /// Words per row `W` (at least 32, so a step of 32 values crosses at most one row end).
    pub(super) words: usize,
    /// Field width `p`.
    pub(super) bits: u32,
    /// The next value's word and the bit of its row (`word = W` after a block that ended
    /// the row exactly: the next step takes all its lanes from the next row).
    pub(super) word: usize,
    pub(super) bit: u32,
    /// The field's place in the value and its mask.
    pub(super) place: u32,
    pub(super) mask: u16,
}

impl RowCursor {
    /// The next value's word as [`fields32`] reads it.
    #[inline(always)]
    pub(super) fn shifts(&self) -> SubShifts {
        sub_shifts(self.offset + 2 * self.word, self.bit, self.place, self.mask)
    }
}

/// A sub-plane's words as [`fields32`] and [`fields32_wide`] read them: the byte offset of
/// the first word, the left rotation that takes a field from its bit to its place in the
/// value, and the field's mask at its place, for 16-bit values (in both words of a 32-bit
/// lane) and for values widened to 32 bits.
#[derive(Clone, Copy)]
pub(super) struct SubShifts {
    pub(super) offset: usize,
    pub(super) rotate: u32,
    pub(super) placed: u32,
    pub(super) placed_wide: u32,
}

/// One sub-plane's [`SubShifts`].
#[inline]
pub(super) fn sub_shifts(offset: usize, take: u32, place: u32, mask: u16) -> SubShifts {
    let placed_wide = u32::from(mask) << place;
    let placed = u32::from(placed_wide as u16);
    SubShifts {
        offset,
        rotate: place.wrapping_sub(take) & 31,
        placed: placed | placed << 16,
        placed_wide,
    }
}

/// Per sub-plane of a plane, as [`residual_words`] finds them: byte offset of the chunk's
/// first word, bit to take, bit to place at, field mask.
pub(super) type PlaneWords = [(usize, u32, u32, u16); 5];

/// The words of both planes of a level-0 chunk's first `blocks` elements, when its one-pass
/// steps can run: `blocks > 0`, each sub-plane of both planes one run of words
/// ([`residual_words`]), `slack` readable queue bytes past the queued exponents, and the hash
/// at a block boundary. None: the separate steps.
// Always inlined: called out of line, it costs about 5% of decoding in cache.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn one_pass_words(
    frame: &[u8],
    plane: &Plane,
    residual: &Plane,
    start: usize,
    blocks: usize,
    deeper: &Escapes<'_>,
    hash: &Option<&mut H32>,
    slack: usize,
) -> Option<(PlaneWords, PlaneWords)> {
    let fits = blocks > 0 && deeper.values.len() >= deeper.count + slack && at_block(hash);
    if !fits {
        return None;
    }
    Some((
        residual_words(frame, plane, start, blocks)?,
        residual_words(frame, residual, start, blocks)?,
    ))
}

/// A chunk's last entries (`out`) after one-pass steps that took `k` queued exponents:
/// `steps` (the separate steps), from the next queued exponent on. Returns the chunk's
/// total taken.
#[inline(always)]
pub(super) fn rest_steps<'a>(
    k: usize,
    deeper: Escapes<'a>,
    out: &mut [u8],
    steps: impl FnOnce(Escapes<'a>, &mut [u8]) -> Option<usize>,
) -> Option<usize> {
    if out.is_empty() {
        return Some(k);
    }
    let rest = Escapes {
        values: &deeper.values[k..],
        count: deeper.count - k,
    };
    Some(k + steps(rest, out)?)
}

/// Where the fields of values `start..start + n` are, when every sub-plane holds them in one
/// run of words inside `frame`: per sub-plane, the byte offset of the first word, the field's
/// bit in a word, its bit in a value, and the field mask (decoders take from the first bit and
/// place at the second, encoders the other way round).
#[inline(always)]
pub(super) fn residual_words(
    frame: &[u8],
    plane: &Plane,
    start: usize,
    n: usize,
) -> Option<PlaneWords> {
    let mut words = [(0, 0, 0, 0); 5];
    for (slot, sub) in words.iter_mut().zip(plane.subs()) {
        let run = sub.runs(start, n).next()?;
        let offset = sub.offset + 2 * run.word;
        if run.len < n || offset + 2 * n > frame.len() {
            return None;
        }
        *slot = (offset, run.bit, sub.shift, ((1u32 << sub.bits) - 1) as u16);
    }
    Some(words)
}

/// [`RowCursor`]s at value `start` of the sub-planes of `plane`, when it has `N` of them,
/// each with rows of at least 32 words and all its words inside `frame`.
#[inline]
pub(super) fn row_cursors<const N: usize>(
    frame: &[u8],
    plane: &Plane,
    start: usize,
) -> Option<[RowCursor; N]> {
    if plane.len != N {
        return None;
    }
    let mut cursors = [RowCursor {
        offset: 0,
        words: 0,
        bits: 0,
        word: 0,
        bit: 0,
        place: 0,
        mask: 0,
    }; N];
    for (cursor, sub) in cursors.iter_mut().zip(plane.subs()) {
        if sub.words < 32 || sub.offset + 2 * sub.words > frame.len() {
            return None;
        }
        let run = sub.runs(start, 1).next()?;
        *cursor = RowCursor {
            offset: sub.offset,
            words: sub.words,
            bits: sub.bits,
            word: run.word,
            bit: run.bit,
            place: sub.shift,
            mask: ((1u32 << sub.bits) - 1) as u16,
        };
    }
    Some(cursors)
}

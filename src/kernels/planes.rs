//! Packing values into bit planes and reading them back (FORMAT.md 4.5; where a plane's bytes
//! lie is `format::Plane`).

use super::fields::Lane;
use crate::format::{Plane, SubPlane};

#[cfg(any(test, feature = "internals"))]
#[inline(always)]
fn word(frame: &[u8], offset: usize, j: usize) -> u16 {
    u16::from_le_bytes([frame[offset + 2 * j], frame[offset + 2 * j + 1]])
}

#[cfg(any(test, feature = "internals"))]
#[inline(always)]
fn or_word(frame: &mut [u8], offset: usize, j: usize, v: u16) {
    let w = word(frame, offset, j) | v;
    frame[offset + 2 * j..offset + 2 * j + 2].copy_from_slice(&w.to_le_bytes());
}

#[cfg(any(test, feature = "internals"))]
/// Hierarchical halving on 16-bit lanes: packs `lanes.len()` fields of `bits` bits into the first
/// `lanes.len() * bits / 16` lanes, field `i` landing in lane `i mod W` at bit `(i div W) * bits`.
/// Every round ORs the upper half onto the lower half with one shift, so it vectorizes as whole
/// registers; `lanes.len()` must be `W * 16 / bits` with `W` a multiple of... any `W >= 1`.
/// This is the reference the sequential [`PlaneWriter`] and the device kernels must agree with.
pub fn pack_halving(lanes: &mut [u16], bits: u32) -> usize {
    let mut len = lanes.len();
    let words = len * bits as usize / 16;
    while len > words {
        let half = len / 2;
        let shift = (half / words) as u32 * bits;
        for i in 0..half {
            lanes[i] |= lanes[i + half] << shift;
        }
        len = half;
    }
    words
}

#[cfg(any(test, feature = "internals"))]
/// Packs a whole plane whose values can be computed by index: word `j` of each sub-plane gathers
/// the fields of values `j, j + W, j + 2W, ...` (the layout hierarchical halving produces),
/// a run of words at a time so the inner loop is contiguous and vectorizes. Overwrites the plane.
#[inline(always)]
pub fn pack_plane(frame: &mut [u8], plane: &Plane, value: impl Fn(usize) -> u32) {
    const RUN: usize = 64;
    for sub in plane.subs() {
        let mask = (1u32 << sub.bits) - 1;
        for first_word in (0..sub.words).step_by(RUN) {
            let run = RUN.min(sub.words - first_word);
            let mut acc = [0u32; RUN];
            for slot in 0..(16 / sub.bits) as usize {
                let first = first_word + slot * sub.words;
                let valid = plane.count.saturating_sub(first).min(run);
                let shift = slot as u32 * sub.bits;
                for (q, a) in acc[..valid].iter_mut().enumerate() {
                    *a |= ((value(first + q) >> sub.shift) & mask) << shift;
                }
            }
            let bytes =
                &mut frame[sub.offset + 2 * first_word..sub.offset + 2 * (first_word + run)];
            for (b, a) in bytes.chunks_exact_mut(2).zip(&acc[..run]) {
                b.copy_from_slice(&(*a as u16).to_le_bytes());
            }
        }
    }
}

#[cfg(any(test, feature = "internals"))]
/// Writes the values of one plane in order (the scatter form of hierarchical halving). The
/// plane's bytes must be zero beforehand.
pub struct PlaneWriter {
    plane: Plane,
    /// Per sub-plane: next word and bit position.
    cursor: [(usize, u32); 5],
}

#[cfg(any(test, feature = "internals"))]
impl PlaneWriter {
    /// A writer for `plane`, starting at value 0.
    pub fn new(plane: Plane) -> PlaneWriter {
        PlaneWriter {
            plane,
            cursor: [(0, 0); 5],
        }
    }

    /// Appends the next value (`< 2^width`).
    #[inline(always)]
    pub fn push(&mut self, frame: &mut [u8], value: u32) {
        for (sub, (j, bit)) in self.plane.subs().iter().zip(self.cursor.iter_mut()) {
            let field = (value >> sub.shift) & ((1 << sub.bits) - 1);
            or_word(frame, sub.offset, *j, (field << *bit) as u16);
            *j += 1;
            if *j == sub.words {
                *j = 0;
                *bit += sub.bits;
            }
        }
    }
}

/// Reads values `start..start + out.len()` of a plane into `out` (contiguous words, one constant
/// shift per run: the loop the compiler vectorizes). The caller guarantees the range is inside
/// the plane and the plane inside `frame`. The first sub-plane's fields are stored and the
/// others ORed in, so `out` needs no zeroing; fields are cut to 16 bits before they are shifted
/// into the lane (they are at most 16 bits wide), so 2-byte lanes compute in 2-byte lanes.
#[inline(always)]
pub fn unpack_range<L: Lane>(frame: &[u8], plane: &Plane, start: usize, out: &mut [L]) {
    if out.is_empty() {
        return;
    }
    let subs = plane.subs();
    if subs.is_empty() || super::COMPACT {
        // The compact form zeroes `out` and ORs every sub-plane in.
        out.fill(L::default());
    }
    for (s, sub) in subs.iter().enumerate() {
        let (mask, shift) = field_mask::<L>(sub);
        for run in sub.runs(start, out.len()) {
            let words = &frame[sub.offset + 2 * run.word..sub.offset + 2 * (run.word + run.len)];
            let out = &mut out[run.done..run.done + run.len];
            if s == 0 && !super::COMPACT {
                unpack_run::<L, false>(words, run.bit, mask, shift, out);
            } else {
                unpack_run::<L, true>(words, run.bit, mask, shift, out);
            }
        }
    }
}

/// The mask and shift of a sub-plane's fields in an `L` lane: no bits where they lie above the
/// lane (a lane narrower than the plane's values keeps their low bits), so that the shifts stay
/// below the lane's width.
#[inline(always)]
fn field_mask<L: Lane>(sub: &SubPlane) -> (u16, u32) {
    if sub.shift >= L::BITS {
        (0, 0)
    } else {
        (((1u32 << sub.bits) - 1) as u16, sub.shift)
    }
}

/// One run of [`unpack_range`]: `out[i]` (ORed into where `OR`) gets the field at `bit` of word
/// `i` of `words`, shifted left by `shift`.
#[inline(always)]
fn unpack_run<L: Lane, const OR: bool>(
    words: &[u8],
    bit: u32,
    mask: u16,
    shift: u32,
    out: &mut [L],
) {
    for (o, w) in out.iter_mut().zip(words.as_chunks::<2>().0) {
        let f = L::field(u16::from_le_bytes(*w) >> bit & mask, shift);
        *o = if OR { o.or(f) } else { f };
    }
}

/// The inverse of [`unpack_range`]: writes values `start..start + values.len()` into a plane
/// (contiguous words, one constant shift per run, like the decoder's loop) that holds values
/// `..start` already, written the same way. A value's field at bit 0 is the first in its word
/// (value `i` sits at bit `(i div W) * p`): it is stored, over whatever the word held; the
/// others are ORed in. So the words need no zeroing beforehand, only the padding after them.
#[inline(always)]
pub fn pack_range<L: Lane>(frame: &mut [u8], plane: &Plane, start: usize, values: &[L]) {
    if values.is_empty() {
        return;
    }
    for sub in plane.subs() {
        let (mask, shift) = field_mask::<L>(sub);
        for run in sub.runs(start, values.len()) {
            let at = sub.offset + 2 * run.word;
            let words = &mut frame[at..at + 2 * run.len];
            let values = &values[run.done..run.done + run.len];
            if run.bit == 0 {
                pack_run::<L, false>(words, run.bit, mask, shift, values);
            } else {
                pack_run::<L, true>(words, run.bit, mask, shift, values);
            }
        }
    }
}

/// One run of [`pack_range`]: word `i` of `words` gets (ORed in where `OR`, else stored) the
/// field of `values[i]` from its bit `shift`, at `bit`; in 16-bit lanes (the field's bits are
/// those of the 32-bit computation cut to 16).
#[inline(always)]
fn pack_run<L: Lane, const OR: bool>(
    words: &mut [u8],
    bit: u32,
    mask: u16,
    shift: u32,
    values: &[L],
) {
    for (w, &v) in words.as_chunks_mut::<2>().0.iter_mut().zip(values) {
        let field = (v.bits16(shift) & mask) << bit;
        let old = if OR { u16::from_le_bytes(*w) } else { 0 };
        *w = (old | field).to_le_bytes();
    }
}

#[cfg(any(test, feature = "internals"))]
/// Reads the values of one plane in order, one at a time (for the compacted escape planes).
/// Reading past `count` yields 0 and is reported by [`PlaneReader::overran`].
pub struct PlaneReader {
    plane: Plane,
    cursor: [(usize, u32); 5],
    next: usize,
}

#[cfg(any(test, feature = "internals"))]
impl PlaneReader {
    /// A reader of `plane` at value 0.
    pub fn new(plane: Plane) -> PlaneReader {
        PlaneReader {
            plane,
            cursor: [(0, 0); 5],
            next: 0,
        }
    }

    /// The next value.
    #[inline(always)]
    pub fn next(&mut self, frame: &[u8]) -> u32 {
        if self.next >= self.plane.count {
            self.next = self.plane.count + 1;
            return 0;
        }
        self.next += 1;
        let mut v = 0;
        for (sub, (j, bit)) in self.plane.subs().iter().zip(self.cursor.iter_mut()) {
            let field = (u32::from(word(frame, sub.offset, *j)) >> *bit) & ((1 << sub.bits) - 1);
            v |= field << sub.shift;
            *j += 1;
            if *j == sub.words {
                *j = 0;
                *bit += sub.bits;
            }
        }
        v
    }

    /// Values the plane holds.
    pub fn count(&self) -> usize {
        self.plane.count
    }

    /// Values read so far.
    pub fn consumed(&self) -> usize {
        self.next.min(self.plane.count)
    }

    /// Whether more values were asked for than the plane holds.
    pub fn overran(&self) -> bool {
        self.next > self.plane.count
    }
}

//! Packing values into bit planes and reading them back (FORMAT.md 4.5; where a plane's bytes
//! lie is `format::Plane`).

use super::fields::Lane;
use crate::format::Plane;

#[inline(always)]
fn word(frame: &[u8], offset: usize, j: usize) -> u16 {
    u16::from_le_bytes([frame[offset + 2 * j], frame[offset + 2 * j + 1]])
}

#[inline(always)]
fn or_word(frame: &mut [u8], offset: usize, j: usize, v: u16) {
    let w = word(frame, offset, j) | v;
    frame[offset + 2 * j..offset + 2 * j + 2].copy_from_slice(&w.to_le_bytes());
}

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

/// Writes the values of one plane in order (the scatter form of hierarchical halving). The
/// plane's bytes must be zero beforehand.
pub struct PlaneWriter {
    plane: Plane,
    /// Per sub-plane: next word and bit position.
    cursor: [(usize, u32); 5],
}

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
/// the plane and the plane inside `frame`.
#[inline(always)]
pub fn unpack_range<L: Lane>(frame: &[u8], plane: &Plane, start: usize, out: &mut [L]) {
    out.fill(L::default());
    if out.is_empty() {
        return;
    }
    for sub in plane.subs() {
        let mask = (1u32 << sub.bits) - 1;
        for run in sub.runs(start, out.len()) {
            let words = &frame[sub.offset + 2 * run.word..sub.offset + 2 * (run.word + run.len)];
            for (o, w) in out[run.done..run.done + run.len]
                .iter_mut()
                .zip(words.chunks_exact(2))
            {
                let w = u32::from(u16::from_le_bytes([w[0], w[1]]));
                *o = o.or_field(((w >> run.bit) & mask) << sub.shift);
            }
        }
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
        let mask = (1u32 << sub.bits) - 1;
        for run in sub.runs(start, values.len()) {
            let at = sub.offset + 2 * run.word;
            let words = &mut frame[at..at + 2 * run.len];
            let keep: u16 = if run.bit == 0 { 0 } else { u16::MAX };
            for (w, v) in words
                .chunks_exact_mut(2)
                .zip(&values[run.done..run.done + run.len])
            {
                let field = ((v.get() >> sub.shift) & mask) << run.bit;
                let old = u16::from_le_bytes([w[0], w[1]]) & keep;
                w.copy_from_slice(&(old | field as u16).to_le_bytes());
            }
        }
    }
}

/// Reads the values of one plane in order, one at a time (for the compacted escape planes).
/// Reading past `count` yields 0 and is reported by [`PlaneReader::overran`].
pub struct PlaneReader {
    plane: Plane,
    cursor: [(usize, u32); 5],
    next: usize,
}

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

//! Where a bit plane's bytes lie (FORMAT.md 4.5): the sub-planes of a plane and the runs of
//! values that share one bit offset. The kernels that pack and unpack planes walk these.

use super::constants::pad32;

/// One power-of-two-wide slice of a plane: field `i` sits in u16 word `i mod words` at bit
/// `(i div words) * bits`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SubPlane {
    /// Byte offset of the first word from the frame start.
    pub offset: usize,
    /// Number of u16 words `W = ceil(count * bits / 16)`.
    pub words: usize,
    /// Field width `p` (1, 2, 4, 8 or 16).
    pub bits: u32,
    /// Position `o` of this field inside the plane's values.
    pub shift: u32,
}

/// Consecutive values of a sub-plane that share one bit offset: the `len` values from
/// `start + done` on sit in words `word..word + len`, at bit `bit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    /// First word.
    pub word: usize,
    /// Bit offset of the fields in those words.
    pub bit: u32,
    /// Values before this run (from `start`).
    pub done: usize,
    /// Values in this run.
    pub len: usize,
}

impl SubPlane {
    /// The runs that hold values `start..start + count`, in order: every reader and writer of
    /// a range of a plane walks these (value `i` is in word `i mod W` at bit `(i div W) * p`).
    #[inline(always)]
    pub fn runs(&self, start: usize, count: usize) -> impl Iterator<Item = Run> {
        let (words, bits) = (self.words, self.bits);
        let (mut word, mut bit) = match words {
            0 => (0, 0),
            _ => (start % words, (start / words) as u32 * bits),
        };
        let mut done = 0;
        core::iter::from_fn(move || {
            if done >= count || words == 0 {
                return None;
            }
            let run = Run {
                word,
                bit,
                done,
                len: (words - word).min(count - done),
            };
            done += run.len;
            word = 0;
            bit += bits;
            Some(run)
        })
    }
}

/// A plane of `count` values of `width` bits, stored as one sub-plane per set bit of `width`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Plane {
    /// Sub-planes, ascending width; `subs[..len]` are used.
    pub subs: [SubPlane; 5],
    /// Number of sub-planes.
    pub len: usize,
    /// Number of values.
    pub count: usize,
    /// Value width in bits (0..=24).
    pub width: u32,
    /// Offset just past the last sub-plane's padding.
    end: usize,
}

impl Plane {
    /// The plane of `count` `width`-bit values starting at byte `offset` (a multiple of 32).
    pub fn at(offset: usize, width: u32, count: usize) -> Plane {
        let mut plane = Plane {
            count,
            width,
            end: offset,
            ..Plane::default()
        };
        for bits in [1u32, 2, 4, 8, 16] {
            if width & bits != 0 {
                let words = (count * bits as usize).div_ceil(16);
                plane.subs[plane.len] = SubPlane {
                    offset: plane.end,
                    words,
                    bits,
                    shift: width & (bits - 1),
                };
                plane.len += 1;
                plane.end += pad32(2 * words);
            }
        }
        plane
    }

    /// Byte offset just past this plane.
    pub fn end(&self) -> usize {
        self.end
    }

    /// Bytes a plane of `count` `width`-bit values occupies, padding included.
    #[inline]
    pub fn bytes(width: u32, count: usize) -> usize {
        // A sub-plane of `p = 2^k` bits: `pad32(2 * ceil(count * p / 16))`, which is
        // `32 * ceil(count * p / 256)`; summed without a branch (the ranked parameter search
        // calls this in its inner loop).
        (0..5)
            .map(|k| (width as usize >> k & 1) * 32 * (count << k).div_ceil(256))
            .sum()
    }

    /// A lower bound of [`Plane::bytes`] that never decreases with `width`: the sub-planes'
    /// bits as one (`ceil(a) + ceil(b) >= ceil(a + b)`).
    #[inline]
    pub fn bytes_at_least(width: u32, count: usize) -> usize {
        32 * (count * width as usize).div_ceil(256)
    }

    pub(crate) fn subs(&self) -> &[SubPlane] {
        &self.subs[..self.len]
    }
}

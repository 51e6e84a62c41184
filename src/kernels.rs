//! The block kernels: the whole per-frame algorithm as small pure functions over slices.
//!
//! Read this file top to bottom to see the codec: element fields (split/merge), bit planes
//! (hierarchical-halving packing), the two exponent codings (`groups`: the ENEC paper's linear
//! transform and interleaved groups; `ranked`: frequency-ranked symbols with escape levels), and
//! the statistics from which the encoder chooses each frame's parameters. The frame layer
//! (`frame.rs`) only sequences these calls; the device kernels in `ffi/` mirror them by name.
//!
//! Nothing here allocates; scratch is fixed arrays on the stack, sized by [`CHUNK`] (the frame
//! loops' step) and by the largest frame (the encoder's group ranges, 8 KiB).
//!
//! `crate::simd` holds AVX2 and AVX-512 versions of the hot kernels (same results, tested
//! against these).

use crate::format::pad32;
use crate::format::{Dtype, GROUP_LEN, MAX_FRAME_LEN};
pub use crate::format::{Plane, Run, SubPlane, MAX_LEVELS};

/// Elements the frame loops process per step; sizes their stack scratch (the decoder's is about
/// `CHUNK * 20` bytes, `examples/stack_usage.rs`).
pub const CHUNK: usize = 1024;

/// Largest exponent alphabet (8 exponent bits).
pub const MAX_SYMBOLS: usize = 256;

// ---------------------------------------------------------------------------------------------
// Element fields
// ---------------------------------------------------------------------------------------------

/// How an element splits into exponent and residual (sign and the live mantissa bits).
#[derive(Clone, Copy, Debug)]
pub struct Fields {
    /// Exponent bits `E`.
    pub e: u32,
    /// Mantissa bits `M`.
    pub m: u32,
    /// Dead low mantissa bits `k` (not stored).
    pub k: u32,
}

impl Fields {
    /// Fields of `dtype` with `k` dead bits.
    pub fn new(dtype: Dtype, k: u32) -> Fields {
        Fields {
            e: dtype.exponent_bits(),
            m: dtype.mantissa_bits(),
            k,
        }
    }

    /// Width of the residual: sign plus live mantissa bits.
    #[inline(always)]
    pub fn residual_bits(&self) -> u32 {
        1 + self.m - self.k
    }

    /// Splits an element into (exponent, residual).
    #[inline(always)]
    pub fn split(&self, u: u32) -> (u32, u32) {
        let x = (u >> self.m) & ((1 << self.e) - 1);
        let sign = u >> (self.e + self.m);
        let mant = u & ((1 << self.m) - 1);
        (x, (sign << (self.m - self.k)) | (mant >> self.k))
    }

    /// Joins an exponent and a residual back into an element.
    #[inline(always)]
    pub fn merge(&self, x: u32, r: u32) -> u32 {
        let live = self.m - self.k;
        ((r >> live) << (self.e + self.m)) | (x << self.m) | ((r & ((1 << live) - 1)) << self.k)
    }
}

/// Reads element `i` of a little-endian array of `B`-byte elements (2 or 4).
#[inline(always)]
pub fn load<const B: usize>(bytes: &[u8], i: usize) -> u32 {
    let b = &bytes[B * i..B * i + B];
    if B == 2 {
        u32::from(u16::from_le_bytes([b[0], b[1]]))
    } else {
        u32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }
}

/// Writes element `i` of a little-endian array of `B`-byte elements (2 or 4).
#[inline(always)]
pub fn store<const B: usize>(bytes: &mut [u8], i: usize, u: u32) {
    bytes[B * i..B * i + B].copy_from_slice(&u.to_le_bytes()[..B]);
}

/// Merges a run of exponents and residuals into elements and stores them little-endian
/// (`out.len() == B * x.len()`).
#[inline(always)]
pub fn merge_store<const B: usize, L: Lane>(fields: &Fields, x: &[u8], r: &[L], out: &mut [u8]) {
    for ((o, &x), &r) in out.chunks_exact_mut(B).zip(x).zip(r) {
        let u = fields.merge(u32::from(x), r.get());
        o.copy_from_slice(&u.to_le_bytes()[..B]);
    }
}

/// The last step of decoding a run of at most [`CHUNK`] elements: their exponents from the first
/// level's codes ([`lookup`]), the escaped ones from the next level's exponents `deeper`
/// ([`expand`] by `masks`), merged with the residuals and stored ([`merge_store`]).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn resolve_store<const B: usize, L: Lane>(
    fields: &Fields,
    codes: &[u8],
    table: &[u8; MAX_SYMBOLS],
    symbols: usize,
    masks: &[u64],
    deeper: &[u8],
    r: &[L],
    out: &mut [u8],
) {
    let mut x = [0u8; CHUNK];
    let x = &mut x[..codes.len()];
    lookup(codes, table, symbols, x);
    expand(masks, deeper, x);
    merge_store::<B, L>(fields, x, r, out);
}

// ---------------------------------------------------------------------------------------------
// Bit planes (FORMAT.md 4.5)
// ---------------------------------------------------------------------------------------------

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

/// Lane types a plane can be unpacked into (the value must fit).
pub trait Lane: bytemuck::Pod + Default {
    /// Width in bits.
    const BITS: u32;
    /// ORs a field (already shifted into place) into the lane.
    fn or_field(self, field: u32) -> Self;
    /// The lane's value.
    fn get(self) -> u32;
    /// A lane holding the low bits of `v`.
    fn truncate(v: u32) -> Self;
}

macro_rules! lane {
    ($($t:ty),*) => {$(
        impl Lane for $t {
            const BITS: u32 = <$t>::BITS;
            #[inline(always)]
            fn or_field(self, field: u32) -> Self {
                self | field as $t
            }
            #[inline(always)]
            fn get(self) -> u32 {
                self.into()
            }
            #[inline(always)]
            fn truncate(v: u32) -> Self {
                v as $t
            }
        }
    )*};
}
lane!(u8, u16, u32);

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

/// The exponents of a run of little-endian `B`-byte elements (`input.len() == B * x.len()`).
#[inline(always)]
pub fn exponents<const B: usize>(fields: &Fields, input: &[u8], x: &mut [u8]) {
    for (x, e) in x.iter_mut().zip(input.chunks_exact(B)) {
        *x = fields.split(load::<B>(e, 0)).0 as u8;
    }
}

/// Splits a run of little-endian `B`-byte elements (`input.len() == B * x.len()`) into their
/// exponents and residuals.
#[inline(always)]
pub fn split_load<const B: usize, L: Lane>(
    fields: &Fields,
    input: &[u8],
    x: &mut [u8],
    r: &mut [L],
) {
    for ((e, x), r) in input.chunks_exact(B).zip(x.iter_mut()).zip(r.iter_mut()) {
        let u = if B == 2 {
            u32::from(u16::from_le_bytes([e[0], e[1]]))
        } else {
            u32::from_le_bytes([e[0], e[1], e[2], e[3]])
        };
        let (xe, re) = fields.split(u);
        *x = xe as u8;
        *r = L::truncate(re);
    }
}

// ---------------------------------------------------------------------------------------------
// Escape masks and expansion (the decoder's prefix scan)
// ---------------------------------------------------------------------------------------------

/// Bit `q % 64` of `masks[q / 64]` is set when `codes[q] == escape`; returns how many are set.
/// Eight codes at a time in a u64 (SWAR): portable, branch-free, no table.
#[inline(always)]
pub fn escape_masks(codes: &[u8], escape: u8, masks: &mut [u64]) -> usize {
    const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    const GATHER: u64 = 0x0102_0408_1020_4080; // moves bit 8k+7 of each byte to bit 56+k
    let splat = u64::from(escape) * 0x0101_0101_0101_0101;
    let eq_bits = |eight: u64| {
        let x = eight ^ splat; // zero bytes where code == escape
        let zero = !(((x & LOW7) + LOW7) | x | LOW7); // bit 7 of each zero byte
        (zero >> 7).wrapping_mul(GATHER) >> 56
    };
    let mut total = 0;
    masks.fill(0);
    for (block, mask) in codes.chunks(64).zip(masks.iter_mut()) {
        let mut m = 0u64;
        let mut eights = block.chunks_exact(8);
        for (b, e) in (&mut eights).enumerate() {
            let v = u64::from_le_bytes([e[0], e[1], e[2], e[3], e[4], e[5], e[6], e[7]]);
            m |= eq_bits(v) << (8 * b);
        }
        let rest = eights.remainder();
        if !rest.is_empty() {
            let mut last = [!escape; 8];
            last[..rest.len()].copy_from_slice(rest);
            m |= eq_bits(u64::from_le_bytes(last)) << (block.len() - rest.len());
        }
        *mask = m;
        total += m.count_ones() as usize;
    }
    total
}

/// `out[q] = table[codes[q]]`: the symbol lookup (codes are below the table length by
/// construction). Small tables (the usual 2- to 4-bit codes) use a chain of compares and
/// selects, which vectorizes; larger ones a plain gather.
#[inline(always)]
pub fn lookup(codes: &[u8], table: &[u8; MAX_SYMBOLS], symbols: usize, out: &mut [u8]) {
    if symbols <= 16 {
        out.fill(0);
        for (v, &x) in (0u8..).zip(&table[..symbols]) {
            for (o, &c) in out.iter_mut().zip(codes) {
                *o = if c == v { x } else { *o };
            }
        }
    } else {
        for (o, &c) in out.iter_mut().zip(codes) {
            *o = table[usize::from(c)];
        }
    }
}

/// Expansion: the `k`-th set bit of `masks` (in element order) receives `values[k]`. This is the
/// prefix count of the escape flags: an escaped element's entry in the next level is the number
/// of escaped elements before it. Returns the number of values used.
#[inline(always)]
pub fn expand<T: Copy>(masks: &[u64], values: &[T], out: &mut [T]) -> usize {
    let mut k = 0;
    for (b, &mask) in masks.iter().enumerate() {
        let mut m = mask;
        while m != 0 {
            let q = 64 * b + m.trailing_zeros() as usize;
            out[q] = values[k];
            k += 1;
            m &= m - 1;
        }
    }
    k
}

/// The inverse of [`expand`]: the values at the set bits of `masks`, in element order, go to
/// the front of `out`. Returns how many.
#[inline(always)]
pub fn compress<T: Copy>(masks: &[u64], values: &[T], out: &mut [T]) -> usize {
    let mut k = 0;
    for (b, &mask) in masks.iter().enumerate() {
        let mut m = mask;
        while m != 0 {
            out[k] = values[64 * b + m.trailing_zeros() as usize];
            k += 1;
            m &= m - 1;
        }
    }
    k
}

/// One escape level of the ranked coding, as the encoder sees it: the level's symbols
/// (distinct exponents, in rank order) and, for every exponent value, its code there: its
/// position among the symbols, or the escape code (the number of symbols) when it is not one.
#[derive(Clone, Debug)]
pub struct LevelCodes<'a> {
    /// The level's symbols (at most `2^E - 1`), in rank order.
    pub symbols: &'a [u8],
    /// `code[x]`: the code of exponent `x`.
    pub code: [u8; MAX_SYMBOLS],
}

impl<'a> LevelCodes<'a> {
    /// The codes of a level with these `symbols` (distinct; fewer than [`MAX_SYMBOLS`]).
    pub fn new(symbols: &'a [u8]) -> LevelCodes<'a> {
        let mut code = [symbols.len() as u8; MAX_SYMBOLS];
        for (s, &symbol) in (0u8..).zip(symbols) {
            code[usize::from(symbol)] = s;
        }
        LevelCodes { symbols, code }
    }

    /// The escape code: all ones in the level's width.
    pub fn escape(&self) -> u8 {
        self.symbols.len() as u8
    }
}

/// The encoder's side of [`lookup`]: `out[q]` is the code of `x[q]` at this level.
#[inline(always)]
pub fn rank_codes(x: &[u8], level: &LevelCodes, out: &mut [u8]) {
    for (o, &v) in out.iter_mut().zip(x) {
        *o = level.code[usize::from(v)];
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

// ---------------------------------------------------------------------------------------------
// Statistics (one pass over a frame)
// ---------------------------------------------------------------------------------------------

/// What the encoder learns about a frame in its first pass.
#[derive(Clone, Debug)]
pub struct FrameStats {
    /// Exponent histogram.
    pub histogram: [u32; MAX_SYMBOLS],
    /// OR of every element's mantissa.
    pub mantissa_or: u32,
    /// Elements.
    pub elements: usize,
    /// Three more histograms, summed into `histogram` by `finish`.
    parts: [[u32; MAX_SYMBOLS]; 3],
    /// Whether `parts` holds any count.
    parts_used: bool,
    /// Elements added so far.
    pub(crate) counted: usize,
    /// See [`FrameStats::frequent`]: not chosen yet, or chosen (and maybe none).
    frequent: Option<Option<u8>>,
}

/// How many exponents a vector kernel counts by compares (see [`FrameStats::frequent`]).
pub const FREQUENT: usize = 8;

/// Elements of a frame counted one by one before [`FrameStats::frequent`] chooses.
pub const SAMPLE: usize = 64;

impl FrameStats {
    /// Statistics of no elements yet, for a frame of `elements`: [`FrameStats::add`] every run
    /// of elements, then [`FrameStats::finish`].
    pub fn new(elements: usize) -> FrameStats {
        FrameStats {
            histogram: [0; MAX_SYMBOLS],
            mantissa_or: 0,
            elements,
            parts: [[0; MAX_SYMBOLS]; 3],
            parts_used: false,
            counted: 0,
            frequent: None,
        }
    }

    /// The first of [`FREQUENT`] consecutive exponent values around the most frequent one so
    /// far (from 5 below it), chosen once [`SAMPLE`] elements were added, when they cover at
    /// least 3/4 of them (typical of weights, whose exponents crowd a few neighbouring values);
    /// else None. Vector kernels count these by compares and the others one by one; any choice
    /// gives the same histogram.
    pub fn frequent(&mut self) -> Option<u8> {
        if let Some(chosen) = self.frequent {
            return chosen;
        }
        if self.counted < SAMPLE {
            return None;
        }
        // The histogram itself unless runs were counted in parts (not copied: the usual case,
        // the first elements, counted in the histogram alone).
        let mut merged;
        let counts = if self.parts_used {
            merged = self.histogram;
            for part in &self.parts {
                for (c, &p) in merged.iter_mut().zip(part) {
                    *c += p;
                }
            }
            &merged
        } else {
            &self.histogram
        };
        let mode = first_max(counts);
        // More room below the mode than above: magnitudes of weights trail off toward zero and
        // end sharply above (MiniLM bf16: 2.2% of exponents outside `mode - 5 ..= mode + 2`,
        // 6.8% outside `mode - 3 ..= mode + 4`).
        let first = mode.saturating_sub(5).min(MAX_SYMBOLS - FREQUENT);
        let covered: u32 = counts[first..first + FREQUENT].iter().sum();
        let chosen = (4 * covered as usize >= 3 * self.counted).then_some(first as u8);
        self.frequent = Some(chosen);
        chosen
    }

    /// Adds a run of elements (`input`, little-endian) and their exponents `x`.
    #[inline(always)]
    pub fn add<const B: usize>(&mut self, fields: &Fields, input: &[u8], x: &[u8]) {
        // Four histograms, element i counted in the `i % 4`-th: runs of one exponent (the mode
        // is a third of a frame) would otherwise wait on the previous increment of one counter.
        // Short runs (the vector kernels' first and last few) go to the first alone, so that
        // frames counted by those need no merging.
        let short = x.len() <= SAMPLE;
        self.parts_used |= !short;
        let [p1, p2, p3] = &mut self.parts;
        let split = if short { 0 } else { x.len() / 4 * 4 };
        for four in x[..split].chunks_exact(4) {
            self.histogram[usize::from(four[0])] += 1;
            p1[usize::from(four[1])] += 1;
            p2[usize::from(four[2])] += 1;
            p3[usize::from(four[3])] += 1;
        }
        for &x in &x[split..] {
            self.histogram[usize::from(x)] += 1;
        }
        let or = input.chunks_exact(B).fold(0, |or, e| or | load::<B>(e, 0));
        self.mantissa_or |= or & ((1 << fields.m) - 1);
        self.counted += x.len();
    }

    /// Completes the histogram after the last [`FrameStats::add`].
    pub fn finish(&mut self) {
        if !core::mem::take(&mut self.parts_used) {
            return;
        }
        for part in &mut self.parts {
            for (h, c) in self.histogram.iter_mut().zip(part.iter_mut()) {
                *h += core::mem::take(c);
            }
        }
    }

    /// Dead low mantissa bits: trailing zeros of the mantissa OR, at most `M`.
    pub fn dead_bits(&self, dtype: Dtype) -> u32 {
        self.mantissa_or.trailing_zeros().min(dtype.mantissa_bits())
    }

    /// Smallest and largest exponent present.
    pub fn exponent_range(&self) -> (u32, u32) {
        let lo = self.histogram.iter().position(|&c| c > 0).unwrap_or(0);
        let hi = self.histogram.iter().rposition(|&c| c > 0).unwrap_or(0);
        (lo as u32, hi as u32)
    }

    /// Most frequent exponent (the smallest on ties).
    pub fn mode(&self) -> u32 {
        first_max(&self.histogram) as u32
    }
}

/// The index of the first largest count: the largest found first (a loop that vectorizes),
/// then its place (a compare per count and a branch taken once, where keeping the best so far
/// waited on each count).
fn first_max(counts: &[u32; MAX_SYMBOLS]) -> usize {
    let max = counts.iter().copied().max().unwrap_or(0);
    counts.iter().position(|&c| c == max).unwrap_or(0)
}

// ---------------------------------------------------------------------------------------------
// The `ranked` coding: frequency-ranked exponents, escape levels of fixed width
// ---------------------------------------------------------------------------------------------

/// Ranking of the exponent alphabet: `order[r]` is the exponent of rank `r` (count descending,
/// value ascending on ties).
#[derive(Clone, Debug)]
pub struct Ranking {
    /// Exponent of each rank.
    pub order: [u8; MAX_SYMBOLS],
    /// `covered[s]`: elements whose rank is below `s` (`s` in `0..=alphabet`).
    pub covered: [u32; MAX_SYMBOLS + 1],
}

impl Ranking {
    /// Ranks the `alphabet` exponent values by their counts in `histogram`.
    pub fn new(histogram: &[u32; MAX_SYMBOLS], alphabet: usize) -> Ranking {
        // The values present first, by count descending and ties by value ascending: sorted by
        // the keys `(!count, value)` (distinct, so an unstable sort gives the one answer); then
        // the absent ones ascending, then the values past the alphabet. Exponents crowd a few
        // neighbouring values: only `lo..hi`, from the first present value to the last, is
        // looked at one by one, without a branch on each count (mispredicted often enough, in
        // loops over the whole alphabet, to cost several percent of encoding).
        let counts = &histogram[..alphabet];
        let (lo, hi) = present_range(counts);
        let mut keys = [0u64; MAX_SYMBOLS];
        let mut gaps = [0u8; MAX_SYMBOLS];
        let (mut present, mut missing) = (0, 0);
        for (x, &c) in counts.iter().enumerate().take(hi).skip(lo) {
            // Written to both lists, kept in one.
            keys[present] = u64::from(!c) << 8 | x as u64;
            gaps[missing] = x as u8;
            present += usize::from(c > 0);
            missing += usize::from(c == 0);
        }
        keys[..present].sort_unstable();
        let mut order = [0u8; MAX_SYMBOLS];
        for (slot, key) in order.iter_mut().zip(&keys[..present]) {
            *slot = *key as u8;
        }
        // The absent ones: below `lo`, the gaps, and from `hi` (`present + missing = hi - lo`,
        // so these last stay in place).
        for (slot, x) in order[present..present + lo].iter_mut().zip(0..lo) {
            *slot = x as u8;
        }
        order[present + lo..hi].copy_from_slice(&gaps[..missing]);
        for (slot, x) in order[hi..].iter_mut().zip(hi..) {
            *slot = x as u8;
        }
        let mut covered = [0u32; MAX_SYMBOLS + 1];
        let mut total = 0;
        for (sum, key) in covered[1..].iter_mut().zip(&keys[..present]) {
            total += !(key >> 8) as u32;
            *sum = total;
        }
        covered[present + 1..].fill(total);
        Ranking { order, covered }
    }

    /// The rank of exponent `x`: its place in `order` (the encoder needs only `order`, whose
    /// first symbols are the level tables; an inverse table cost 1% of encoding).
    pub fn rank(&self, x: u8) -> usize {
        self.order
            .iter()
            .position(|&o| o == x)
            .unwrap_or(MAX_SYMBOLS)
    }
}

/// The first present value and one past the last (`(len, len)` when none is): looked for eight
/// counts at a time (one OR of eight, which vectorizes), then inside those eight.
fn present_range(counts: &[u32]) -> (usize, usize) {
    let any = |eight: &[u32; 8]| eight.iter().fold(0, |or, &c| or | c) != 0;
    let (eights, rest) = counts.as_chunks::<8>();
    let tail = 8 * eights.len();
    let lo = match eights.iter().position(any) {
        Some(i) => 8 * i,
        None => tail,
    };
    let hi = match (rest.iter().any(|&c| c > 0), eights.iter().rposition(any)) {
        (true, _) => counts.len(),
        (false, Some(i)) => 8 * i + 8,
        (false, None) => lo,
    };
    // Narrowed to the present values inside the first and last eight.
    let lo = lo
        + counts[lo..hi]
            .iter()
            .position(|&c| c > 0)
            .unwrap_or(hi - lo);
    let hi = counts[lo..hi]
        .iter()
        .rposition(|&c| c > 0)
        .map_or(lo, |i| lo + i + 1);
    if lo == hi {
        return (counts.len(), counts.len());
    }
    (lo, hi)
}

/// What the parts of a ranked frame cost, for [`choose_ranked`]. The frame bytes of FORMAT.md
/// 4.4 are one such cost (padded planes and table); tests use others.
pub trait RankedCost {
    /// A plane of `count` values of `width` bits (0 when `count` is 0).
    fn plane(&self, width: u32, count: usize) -> usize;
    /// A symbol table of `symbols` entries; never smaller for more entries.
    fn table(&self, symbols: usize) -> usize;
    /// A lower bound of [`RankedCost::plane`] that never decreases with `width` (0, the
    /// default, is one): the search stops widening a level once this bound rules it out.
    fn plane_at_least(&self, _width: u32, _count: usize) -> usize {
        0
    }
}

/// The ranked parameters that minimise the cost of the level planes, the symbol table and the
/// exponent plane over `L = 1..=3` and widths in `1..=E`, the first minimum in the order of
/// FORMAT.md 7.2 (`L` ascending, then widths lexicographic). Returns the levels, widths, the
/// counts `c2..c4` and the cost.
///
/// One walk over the width tuples visits, under each prefix, the tuple that stops there and
/// then its extensions, adding one plane at a time; the first minimum of FORMAT.md's order is
/// then the smallest (cost, `L`) seen first. An extension is skipped, without changing the
/// result, when its prefix's planes and table already cost at least the best so far (every
/// extension costs at least that). Widths whose symbols exceed the alphabet end their loop, and
/// so does a width whose plane's lower bound ([`RankedCost::plane_at_least`]) and table already
/// cost at least the best so far: neither decreases with the width, so no wider one can win.
pub fn choose_ranked(
    ranking: &Ranking,
    elements: usize,
    e: u32,
    cost: &impl RankedCost,
) -> (u8, [u8; MAX_LEVELS], [u32; MAX_LEVELS], usize) {
    let alphabet = 1usize << e;
    // Elements whose rank is at least `start`.
    let beyond = |start: usize| elements as u32 - ranking.covered[start.min(alphabet)];
    let symbols = |w: u32| (1usize << w) - 1;
    let exponents = |count: u32| cost.plane(e, count as usize);
    let mut best = (0u8, [0u8; MAX_LEVELS], [0u32; MAX_LEVELS], usize::MAX);
    // Whether a tuple of `levels` levels that costs `size` comes before the best so far.
    let before = |size: usize, levels: u8, best: &(u8, _, _, usize)| {
        size < best.3 || (size == best.3 && levels < best.0)
    };
    for w1 in 1..=e {
        let s1 = symbols(w1);
        let a1 = cost.plane(w1, elements);
        let c2 = beyond(s1);
        let size = a1 + cost.table(s1) + exponents(c2);
        if before(size, 1, &best) {
            best = (1, [w1 as u8, 0, 0], [c2, 0, 0], size);
        }
        if !before(a1 + cost.table(s1), 2, &best) {
            continue;
        }
        for w2 in 1..=e {
            let s2 = s1 + symbols(w2);
            if s2 > alphabet
                || !before(
                    a1 + cost.plane_at_least(w2, c2 as usize) + cost.table(s2),
                    2,
                    &best,
                )
            {
                break;
            }
            let a2 = a1 + cost.plane(w2, c2 as usize);
            let c3 = beyond(s2);
            let size = a2 + cost.table(s2) + exponents(c3);
            if before(size, 2, &best) {
                best = (2, [w1 as u8, w2 as u8, 0], [c2, c3, 0], size);
            }
            if !before(a2 + cost.table(s2), 3, &best) {
                continue;
            }
            for w3 in 1..=e {
                let s3 = s2 + symbols(w3);
                if s3 > alphabet
                    || !before(
                        a2 + cost.plane_at_least(w3, c3 as usize) + cost.table(s3),
                        3,
                        &best,
                    )
                {
                    break;
                }
                let c4 = beyond(s3);
                let size = a2 + cost.plane(w3, c3 as usize) + cost.table(s3) + exponents(c4);
                if before(size, 3, &best) {
                    best = (3, [w1 as u8, w2 as u8, w3 as u8], [c2, c3, c4], size);
                }
            }
        }
    }
    best
}

/// The cost of a ranked frame's parts in bytes (FORMAT.md 4.4).
pub struct FrameBytes;

impl RankedCost for FrameBytes {
    #[inline(always)]
    fn plane(&self, width: u32, count: usize) -> usize {
        Plane::bytes(width, count)
    }
    #[inline(always)]
    fn table(&self, symbols: usize) -> usize {
        pad32(symbols)
    }
    #[inline(always)]
    fn plane_at_least(&self, width: u32, count: usize) -> usize {
        Plane::bytes_at_least(width, count)
    }
}

// ---------------------------------------------------------------------------------------------
// The `groups` coding: y = (b - x) mod 2^n, interleaved groups of 16, two bit widths
// ---------------------------------------------------------------------------------------------

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
pub struct GroupsBytes {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `present_range` agrees with a scan one count at a time, on every length up to 40 and
    /// every placement of up to two present values.
    #[test]
    fn present_range_finds_the_first_and_last() {
        for len in 0..40usize {
            for a in 0..=len {
                for b in a..=len {
                    let mut counts = [0u32; 40];
                    for at in [a, b].into_iter().filter(|&at| at < len) {
                        counts[at] = 1 + at as u32;
                    }
                    let counts = &counts[..len];
                    let want = match counts.iter().position(|&c| c > 0) {
                        Some(lo) => (lo, counts.iter().rposition(|&c| c > 0).unwrap() + 1),
                        None => (len, len),
                    };
                    assert_eq!(present_range(counts), want, "len {len} at {a}, {b}");
                }
            }
        }
    }
}

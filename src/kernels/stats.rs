//! The statistics the encoder gathers in one pass over a frame, from which it chooses the
//! frame's coding and parameters.

use super::fields::{load, Fields};
use crate::format::{Dtype, MAX_SYMBOLS};

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
    #[cfg_attr(not(all(feature = "std", target_arch = "x86_64")), allow(dead_code))]
    // x86 kernels only
    frequent: Option<Option<u8>>,
}

/// How many exponents a vector kernel counts by compares (see [`FrameStats::frequent`]).
#[cfg_attr(not(all(feature = "std", target_arch = "x86_64")), allow(dead_code))] // x86 kernels only
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
    #[cfg_attr(not(all(feature = "std", target_arch = "x86_64")), allow(dead_code))] // x86 kernels only
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
        // The OR of the elements from the OR of their 8-byte words (a loop that vectorizes),
        // folded to one element.
        let (words, rest) = input.as_chunks::<8>();
        let or = words.iter().fold(0, |or, w| or | u64::from_le_bytes(*w));
        let or = (0..8 / B).fold(0, |acc, i| acc | (or >> (8 * B * i)) as u32);
        let or = rest.chunks_exact(B).fold(or, |or, e| or | load::<B>(e, 0));
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

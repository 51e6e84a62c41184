//! One frame: choose its parameters, encode it, decode it (FORMAT.md sections 4 and 7).
//!
//! Frames are independent, so a parallel encoder or decoder calls these directly on each frame
//! (see [`crate::frames`] to find them in a stream).

use crate::checksum::{self, H32};
use crate::error::{Error, Result};
use crate::format::{
    frame_bytes, pad32, ranked_exponent_bytes, ranked_fixed_bytes, Dtype, FrameHeader, FrameLayout,
    FrameParams, GroupsParams, RankedParams, FRAME_HEADER_BYTES, GROUP_LEN, MAX_FRAME_LEN,
};
use crate::kernels::{
    choose_ranked, groups_flags, groups_split, groups_width, Fields, FrameStats, GroupRanges, Lane,
    LevelCodes, Plane, RankedCost, Ranking, CHUNK, GROUPS_BASES, MAX_LEVELS, MAX_SYMBOLS,
};
use crate::simd::{Escapes, Isa};

/// Which exponent coding the writer wants.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Coding {
    /// Per frame, the smallest of ranked, groups and stored. Searching the groups parameters
    /// costs about a tenth of the encoder's time and, on real weights, rarely wins a frame.
    Auto,
    /// The ENEC paper's groups coding (or stored where that is smaller).
    Groups,
    /// The ranked escape-level coding (or stored where that is smaller): the default.
    #[default]
    Ranked,
}

/// Slack after a scratch array of values to expand, so the vector expansion may read 32 at a time.
const SLACK: usize = 32;

/// The most bytes one frame of `elements` elements can take (a stored frame).
pub fn max_frame_bytes(dtype: Dtype, elements: usize) -> usize {
    FRAME_HEADER_BYTES + pad32(elements * dtype.element_bytes())
}

/// Encodes one frame of whole elements (`input.len()` a multiple of the element size, at most
/// 65,536 elements) into `out`, returning the bytes written. `out` needs room for the chosen
/// frame; [`max_frame_bytes`] always suffices.
pub fn encode_frame(
    dtype: Dtype,
    coding: Coding,
    checksums: bool,
    input: &[u8],
    out: &mut [u8],
) -> Result<usize> {
    encode_frame_before(dtype, coding, checksums, input, &[], out)
}

/// [`encode_frame`] of a frame that `next` follows in memory (the input after this frame, or
/// empty): the encoder fetches the first `input.len()` bytes of `next` into the cache while it
/// writes this frame, so a caller that encodes frames one after another (on each thread) finds
/// the next one in the cache rather than in memory. The bytes written do not depend on `next`.
pub fn encode_frame_before(
    dtype: Dtype,
    coding: Coding,
    checksums: bool,
    input: &[u8],
    next: &[u8],
    out: &mut [u8],
) -> Result<usize> {
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
    crate::dispatch::encode_frame(dtype, coding, checksums, input, next, elements, out)
}

/// The frames of `input`, `frame_bytes` each (the last one may be shorter; `frame_bytes` is not
/// 0), each with the input after it: what a loop over frames passes to [`encode_frame_before`].
///
/// ```
/// let input = [1u8, 2, 3, 4, 5];
/// let pairs: Vec<_> = enec::frame::frames_and_rest(&input, 2).collect();
/// let expected: [(&[u8], &[u8]); 3] = [(&[1, 2], &[3, 4, 5]), (&[3, 4], &[5]), (&[5], &[])];
/// assert_eq!(pairs, expected);
/// ```
pub fn frames_and_rest(input: &[u8], frame_bytes: usize) -> impl Iterator<Item = (&[u8], &[u8])> {
    input
        .chunks(frame_bytes)
        .enumerate()
        .map(move |(i, frame)| {
            let (_, rest) = input.split_at(i * frame_bytes + frame.len());
            (frame, rest)
        })
}

/// The encoder's element loops; `#[inline(always)]` down to the kernels so that
/// [`crate::dispatch`] can compile them once per instruction set.
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
            if B == 2 {
                write_ranked::<B, u16, I>(isa, input, elements, f, &r, ranking, &layout, a, out)
            } else {
                write_ranked::<B, u32, I>(isa, input, elements, f, &r, ranking, &layout, a, out)
            }
        }
        Plan::Groups(g, ranges) => {
            let (f, a) = (&fields, &following);
            if B == 2 {
                write_groups::<B, u16, I>(isa, input, elements, f, &g, ranges, &layout, a, out)
            } else {
                write_groups::<B, u32, I>(isa, input, elements, f, &g, ranges, &layout, a, out)
            }
        }
    }
    Ok(bytes)
}

/// The cost of a ranked frame's parts in bytes (FORMAT.md 4.4).
struct FrameBytes;

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

#[inline(always)]
fn choose_ranked_params(
    ranking: &Ranking,
    elements: usize,
    dtype: Dtype,
    dead_bits: u8,
) -> (RankedParams, usize) {
    let fixed = ranked_fixed_bytes(dtype, elements, dead_bits);
    let (levels, widths, counts, bytes) =
        choose_ranked(ranking, elements, dtype.exponent_bits(), &FrameBytes);
    debug_assert_eq!(
        bytes,
        ranked_exponent_bytes(dtype, elements, levels, widths, counts)
    );
    (
        RankedParams {
            levels,
            widths,
            counts,
        },
        fixed + bytes,
    )
}

/// A frame's coding as chosen, with what writing it needs.
enum Plan<'a> {
    Stored,
    Ranked(RankedParams, &'a Ranking),
    Groups(GroupsParams, &'a GroupRanges),
}

/// The first smallest groups candidate (FORMAT.md 7.3) when it is smaller than `beat` (the size
/// it must undercut to be chosen); otherwise a candidate of at least `beat`, or stored at
/// `usize::MAX`. A candidate costs at least the frame without its high plane, so low widths
/// whose low plane alone reaches `beat` are not counted at all.
#[inline(always)]
fn choose_groups_params<I: Isa>(
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

/// The decoder's steps in reverse, a chunk of elements at a time: split the elements, pack the
/// residuals, then per level turn the exponents that reach it into codes, pack them after the
/// level's earlier entries, and pass the escaped ones (compacted, in element order) down.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn write_ranked<const B: usize, L: Lane, I: Isa>(
    isa: I,
    input: &[u8],
    elements: usize,
    fields: &Fields,
    params: &RankedParams,
    ranking: &Ranking,
    layout: &FrameLayout,
    ahead: &Ahead,
    out: &mut [u8],
) {
    let levels = usize::from(params.levels);
    let starts = params.rank_starts();
    let level_codes: [LevelCodes; MAX_LEVELS] = core::array::from_fn(|level| {
        let escape = ((1usize << params.widths[level]) - 1).min(MAX_SYMBOLS - 1);
        let start = starts[level].min(MAX_SYMBOLS - escape);
        LevelCodes::new(&ranking.order[start..start + escape])
    });
    let (table_at, table_len) = layout.table;
    out[table_at..table_at + table_len].copy_from_slice(&ranking.order[..table_len]);
    let mut residual = [L::default(); CHUNK];
    // Per level: the exponents that reach it, queued until there is a chunk's worth (or the
    // frame ends), so the deeper levels, which see a tenth of the elements or less, run on
    // whole chunks too (a few short runs per chunk cost more in calls than in work). Before a
    // level runs its queue is under a chunk and the one below it appends at most a chunk.
    let mut xs = [[0u8; 2 * CHUNK + SLACK]; MAX_LEVELS + 1];
    let mut queued = [0usize; MAX_LEVELS + 1];
    let mut codes = [0u8; CHUNK];
    // Next free entry of each plane.
    let mut next = [0usize; MAX_LEVELS + 1];
    for start in (0..elements).step_by(CHUNK) {
        let len = CHUNK.min(elements - start);
        isa.prefetch(ahead.share(start, len));
        isa.split_pack::<B, L>(
            fields,
            &input[B * start..B * (start + len)],
            &mut xs[0][..len],
            &mut residual[..len],
            out,
            &layout.residual,
            start,
        );
        queued[0] = len;
        let last = start + len == elements;
        // One chunk of a level at a time, from the top, until no level has a chunk (or, at the
        // frame's end, anything) left.
        let mut ran = true;
        while ran {
            ran = false;
            for level in 0..=levels {
                let n = queued[level];
                if n == 0 || (n < CHUNK && level > 0 && !last) {
                    continue;
                }
                ran = true;
                let m = n.min(CHUNK);
                let plane = &layout.planes[level];
                let (upper, lower) = xs.split_at_mut(level + 1);
                let x = &mut upper[level];
                if level == levels {
                    // The last level stores the exponents themselves.
                    isa.pack(out, plane, next[level], &x[..m]);
                } else {
                    let more = &mut lower[0][queued[level + 1]..];
                    let escaped =
                        isa.level_codes(&x[..m], &level_codes[level], &mut codes[..m], more);
                    isa.pack(out, plane, next[level], &codes[..m]);
                    queued[level + 1] += escaped;
                }
                next[level] += m;
                x.copy_within(m..n, 0);
                queued[level] = n - m;
            }
        }
    }
    debug_assert!((0..=levels).all(|j| next[j] == layout.planes[j].count));
}

/// The decoder's steps in reverse, a chunk of elements at a time (a chunk stays inside one row of
/// the interleave, so its groups are consecutive): residuals, the low bits of every `y`, and the
/// high bits of the flagged groups' elements, compacted in element order.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn write_groups<const B: usize, L: Lane, I: Isa>(
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
    /// 16-byte copy of its result waited on its 8-byte stores; groups decoding 1.02-1.03x.)
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

/// Reads frame `index`'s header (the first 32 bytes of `frame`) and checks it against the stream
/// header (`elements` in this frame, whether checksums are on) and against itself (its size must
/// follow from its parameters). Returns the header and the frame's layout; `layout.bytes` is
/// where the next frame starts. Used by every reader, so they all refuse the same frames.
pub fn check_frame_header(
    dtype: Dtype,
    checksums: bool,
    index: u32,
    elements: usize,
    frame: &[u8],
) -> Result<(FrameHeader, FrameLayout)> {
    let corrupt = |reason| Error::CorruptFrame {
        frame: index,
        reason,
    };
    if elements == 0 || elements > MAX_FRAME_LEN {
        return Err(Error::InvalidFrameLength(
            elements.try_into().unwrap_or(u32::MAX),
        ));
    }
    let header = FrameHeader::parse(frame, dtype, index)?;
    if header.elements as usize != elements {
        return Err(corrupt("element count differs from the stream header's"));
    }
    let layout = FrameLayout::new(dtype, elements, header.dead_bits, &header.params);
    if layout.bytes != header.frame_bytes as usize {
        return Err(corrupt("frame size does not match its parameters"));
    }
    if !checksums && header.checksum != 0 {
        return Err(corrupt("checksum present in a stream without checksums"));
    }
    Ok((header, layout))
}

/// How a decoder writes its output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Stores {
    /// Through the cache: for output that is read soon (streaming, a DMA staging buffer).
    #[default]
    Cached,
    /// Non-temporal where the kernels have them (x86_64 with AVX-512: the ranked coding's
    /// level-0 step, on whole cache lines, so only into an output that starts on a 64-byte
    /// boundary; other outputs are written through the cache): for large output read later,
    /// such as a whole checkpoint decoded into memory. It skips the read for ownership of every
    /// output line. [`crate::decode`] chooses it for outputs of [`STREAMING_STORES_FROM`] bytes
    /// or more.
    Streaming,
}

/// Output size from which [`crate::decode`] writes with [`Stores::Streaming`]: larger than the
/// caches of the CPUs that have such stores, so the output would leave them anyway.
pub const STREAMING_STORES_FROM: usize = 8 << 20;

/// Decodes frame `index` of a stream (`elements` is what the stream header says this frame
/// holds) into the start of `out`. Returns the frame's size in bytes. `frame` may extend past the
/// frame's end (the rest of the stream).
pub fn decode_frame(
    dtype: Dtype,
    checksums: bool,
    index: u32,
    elements: usize,
    frame: &[u8],
    out: &mut [u8],
) -> Result<usize> {
    decode_frame_with(
        dtype,
        checksums,
        index,
        elements,
        frame,
        out,
        Stores::Cached,
    )
}

/// [`decode_frame`] with a choice of [`Stores`] (the bytes written are the same).
pub fn decode_frame_with(
    dtype: Dtype,
    checksums: bool,
    index: u32,
    elements: usize,
    frame: &[u8],
    out: &mut [u8],
    stores: Stores,
) -> Result<usize> {
    crate::dispatch::decode_frame(dtype, checksums, index, elements, frame, out, stores)
}

/// [`decode_frame`]'s body; `#[inline(always)]` down to the kernels so that [`crate::dispatch`]
/// can compile it once per instruction set.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn decode_frame_impl<I: Isa>(
    isa: I,
    dtype: Dtype,
    checksums: bool,
    index: u32,
    elements: usize,
    frame: &[u8],
    out: &mut [u8],
    stores: Stores,
) -> Result<usize> {
    let (header, layout) = check_frame_header(dtype, checksums, index, elements, frame)?;
    let corrupt = |reason| Error::CorruptFrame {
        frame: index,
        reason,
    };
    // The next frame's bytes (about as many as this one's), to prefetch while this one decodes:
    // from memory, a frame's planes are too many short streams for the hardware prefetchers.
    let ahead = frame
        .get(layout.bytes..frame.len().min(2 * layout.bytes))
        .unwrap_or(&[]);
    let ahead = Ahead::new(ahead, elements);
    let frame = frame.get(..layout.bytes).ok_or(Error::Truncated {
        needed: layout.bytes as u64,
        available: frame.len() as u64,
    })?;
    let bytes = elements * dtype.element_bytes();
    let out = out.get_mut(..bytes).ok_or(Error::OutputTooSmall {
        needed: bytes as u64,
    })?;
    let fields = Fields::new(dtype, header.dead_bits.into());
    // The decoders hash their output chunk by chunk, while it is in cache.
    let mut hashed = H32::new();
    let hash = checksums.then_some(&mut hashed);
    let result = match (header.params, dtype.element_bytes()) {
        (FrameParams::Stored, _) => {
            out.copy_from_slice(&frame[FRAME_HEADER_BYTES..FRAME_HEADER_BYTES + bytes]);
            if let Some(hash) = hash {
                hash.update(out);
            }
            Ok(())
        }
        // Residuals in the narrowest lanes that hold them: 16 bits for 2-byte elements.
        (FrameParams::Ranked(r), 2) => {
            read_ranked::<2, u16, I>(isa, frame, &fields, &r, &layout, out, hash, &ahead, stores)
        }
        (FrameParams::Ranked(r), _) => {
            read_ranked::<4, u32, I>(isa, frame, &fields, &r, &layout, out, hash, &ahead, stores)
        }
        (FrameParams::Groups(g), 2) => {
            read_groups::<2, u16, I>(isa, frame, &fields, &g, &layout, out, hash, &ahead, stores)
        }
        (FrameParams::Groups(g), _) => {
            read_groups::<4, u32, I>(isa, frame, &fields, &g, &layout, out, hash, &ahead, stores)
        }
    };
    result.map_err(corrupt)?;
    if checksums && hashed.finish() != header.checksum {
        return Err(Error::ChecksumMismatch { frame: index });
    }
    Ok(layout.bytes)
}

/// Bytes to prefetch while a frame is coded, spread over its elements: each chunk fetches its
/// share.
struct Ahead<'a> {
    bytes: &'a [u8],
    /// Bytes per element in 32.32 fixed point (one division per frame, not two per chunk).
    per_element: u64,
}

impl<'a> Ahead<'a> {
    fn new(bytes: &'a [u8], elements: usize) -> Ahead<'a> {
        // Frames are far below 2^32 bytes: no overflow, and `at(elements) <= bytes.len()`.
        let per_element = ((bytes.len() as u64) << 32) / elements.max(1) as u64;
        Ahead { bytes, per_element }
    }

    /// The share of elements `start..start + len` (of the frame's `elements`).
    fn share(&self, start: usize, len: usize) -> &'a [u8] {
        let at = |i: usize| ((i as u64 * self.per_element) >> 32) as usize;
        self.bytes.get(at(start)..at(start + len)).unwrap_or(&[])
    }
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn read_ranked<const B: usize, L: Lane, I: Isa>(
    isa: I,
    frame: &[u8],
    fields: &Fields,
    params: &RankedParams,
    layout: &FrameLayout,
    out: &mut [u8],
    mut hash: Option<&mut H32>,
    ahead: &Ahead,
    stores: Stores,
) -> core::result::Result<(), &'static str> {
    let levels = usize::from(params.levels);
    let starts = params.rank_starts();
    let (table_at, table_len) = layout.table;
    let symbols = &frame[table_at..table_at + table_len];
    if symbols.iter().any(|&x| u32::from(x) >> fields.e != 0) {
        return Err("symbol table entry exceeds the exponent width");
    }
    let mut luts = [[0u8; MAX_SYMBOLS]; MAX_LEVELS];
    let mut escapes = [0u8; MAX_LEVELS];
    for j in 0..levels {
        let escape = (1usize << params.widths[j]) - 1;
        escapes[j] = escape as u8;
        luts[j][..escape].copy_from_slice(&symbols[starts[j]..starts[j] + escape]);
    }
    let mut escaped = Escaped::new();
    let elements = layout.residual.count;
    for start in (0..elements).step_by(CHUNK) {
        let len = CHUNK.min(elements - start);
        isa.prefetch(ahead.share(start, len));
        escaped.refill(isa, frame, layout, levels, &luts, &escapes)?;
        let pending = escaped.pending(0);
        let taken = isa
            .ranked_chunk::<B, L>(
                fields,
                frame,
                &layout.planes[0],
                &layout.residual,
                start,
                &luts[0],
                escapes[0],
                pending,
                &mut out[B * start..B * (start + len)],
                hash.as_deref_mut(),
                stores == Stores::Streaming,
            )
            .filter(|&taken| taken <= pending.count)
            .ok_or("more escapes than entries in the next level")?;
        escaped.heads[0] += taken;
    }
    let planes = &layout.planes[1..=levels];
    if !escaped.drained()
        || escaped.next[1..=levels]
            .iter()
            .zip(planes)
            .any(|(&n, plane)| n != plane.count)
    {
        return Err("escape counts do not match the level planes");
    }
    Ok(())
}

/// Per code level, the exponents of its escaped entries in order, decoded ahead of the entries
/// that need them: queue `j` holds those of plane `j`'s escapes, filled from plane `j + 1` (the
/// exponent plane for the last code level, else a code plane whose own escapes take from queue
/// `j + 1`). The level-0 step takes from queue 0, so it can unpack its codes, find its escapes
/// and place their exponents in one pass; each deeper level is one such pass too.
struct Escaped {
    /// Queue `j`: `queues[j][heads[j]..tails[j]]`, then [`ESCAPED_SLACK`] readable bytes.
    queues: [[u8; 2 * CHUNK + ESCAPED_SLACK]; MAX_LEVELS],
    heads: [usize; MAX_LEVELS],
    tails: [usize; MAX_LEVELS],
    /// Next unread entry of each plane (plane 0, element order, is the level-0 step's).
    next: [usize; MAX_LEVELS + 1],
}

/// Readable bytes after the last queued exponent: vector steps load 64 at a time.
const ESCAPED_SLACK: usize = 64;

impl Escaped {
    fn new() -> Escaped {
        Escaped {
            queues: [[0; 2 * CHUNK + ESCAPED_SLACK]; MAX_LEVELS],
            heads: [0; MAX_LEVELS],
            tails: [0; MAX_LEVELS],
            next: [0; MAX_LEVELS + 1],
        }
    }

    /// Queue `level`'s exponents and the slack after them.
    fn pending(&self, level: usize) -> Escapes<'_> {
        Escapes {
            values: &self.queues[level][self.heads[level]..],
            count: self.tails[level] - self.heads[level],
        }
    }

    /// Whether every queue was taken to its end.
    fn drained(&self) -> bool {
        self.heads == self.tails
    }

    /// Tops every queue up to at least [`CHUNK`] exponents (the most one chunk of entries can
    /// take), or all that its plane has left; the deepest first, since each takes from the one
    /// below it.
    #[inline(always)]
    fn refill<I: Isa>(
        &mut self,
        isa: I,
        frame: &[u8],
        layout: &FrameLayout,
        levels: usize,
        luts: &[[u8; MAX_SYMBOLS]; MAX_LEVELS],
        escapes: &[u8; MAX_LEVELS],
    ) -> core::result::Result<(), &'static str> {
        for level in (0..levels).rev() {
            let (plane, start) = (&layout.planes[level + 1], self.next[level + 1]);
            let (head, tail) = (self.heads[level], self.tails[level]);
            let left = plane.count - start.min(plane.count);
            if tail - head >= CHUNK || left == 0 {
                continue;
            }
            let n = CHUNK.min(left);
            let (upper, lower) = self.queues.split_at_mut(level + 1);
            let queue = &mut upper[level];
            queue.copy_within(head..tail, 0);
            let queued = &mut queue[tail - head..tail - head + n];
            if level + 1 == levels {
                // The exponent plane: the exponents themselves.
                isa.unpack(frame, plane, start, queued);
            } else {
                let deeper = Escapes {
                    values: &lower[0][self.heads[level + 1]..],
                    count: self.tails[level + 1] - self.heads[level + 1],
                };
                let (table, escape) = (&luts[level + 1], escapes[level + 1]);
                let taken = isa
                    .level_chunk(frame, plane, start, table, escape, deeper, queued)
                    .filter(|&taken| taken <= deeper.count)
                    .ok_or("more escapes than entries in the next level")?;
                self.heads[level + 1] += taken;
            }
            self.next[level + 1] += n;
            (self.heads[level], self.tails[level]) = (0, tail - head + n);
        }
        Ok(())
    }
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn read_groups<const B: usize, L: Lane, I: Isa>(
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

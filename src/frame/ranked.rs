//! The `ranked` coding of one frame (FORMAT.md 4.3, 7.2): choosing its parameters, writing its
//! planes, reading them back.

use super::options::Stores;
use super::scratch::{Ahead, ESCAPED_SLACK, SLACK};
use crate::checksum::H32;
use crate::format::{
    ranked_exponent_bytes, ranked_fixed_bytes, Dtype, FrameLayout, RankedParams, MAX_LEVELS,
};
use crate::kernels::{
    choose_ranked, Fields, FrameBytes, Lane, LevelCodes, Ranking, CHUNK, MAX_SYMBOLS,
};
use crate::simd::{Escapes, Isa};

/// The smallest ranked parameters of a frame ([`choose_ranked`] over the frame's bytes) and the
/// frame's size with them.
#[inline(always)]
pub(super) fn choose_ranked_params(
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

/// The decoder's steps in reverse, a chunk of elements at a time: split the elements, pack the
/// residuals, then per level turn the exponents that reach it into codes, pack them after the
/// level's earlier entries, and pass the escaped ones (compacted, in element order) down.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn write_ranked<const B: usize, L: Lane, I: Isa>(
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
    // Where a kernel packs the whole residual plane in one pass (each word stored once, not
    // rewritten per field), the chunks only split off the exponents.
    let packed = isa.pack_residuals::<B>(fields, input, out, &layout.residual);
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
        let run = &input[B * start..B * (start + len)];
        if packed {
            isa.exponents::<B>(fields, run, &mut xs[0][..len]);
        } else {
            isa.split_pack::<B, L>(
                fields,
                run,
                &mut xs[0][..len],
                &mut residual[..len],
                out,
                &layout.residual,
                start,
            );
        }
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

#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn read_ranked<const B: usize, L: Lane, I: Isa>(
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

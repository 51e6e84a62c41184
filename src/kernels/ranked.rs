//! The `ranked` coding: exponents ranked by frequency, coded in escape levels of fixed width
//! (FORMAT.md 4.3): the ranking, the choice of levels and widths, the codes of a level, and the
//! decoder's last step.

use super::fields::{merge_store, Fields, Lane, CHUNK};
use super::masks::expand;
use crate::format::{pad32, Plane, MAX_LEVELS, MAX_SYMBOLS};

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

    #[cfg(any(test, feature = "internals"))]
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
pub(crate) struct FrameBytes;

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

/// `out[q] = table[codes[q]]`: the symbol lookup (codes are below the table length by
/// construction). Small tables (the usual 2- to 4-bit codes) are looked up by compares, one
/// per entry of a table of 4, 8 or 16 (a code past `symbols` gives 0), ORed in a loop that
/// vectorizes; larger ones by a plain gather.
#[inline(always)]
pub fn lookup(codes: &[u8], table: &[u8; MAX_SYMBOLS], symbols: usize, out: &mut [u8]) {
    if super::COMPACT {
        for (o, &c) in out.iter_mut().zip(codes) {
            *o = table[usize::from(c)];
        }
        return;
    }
    match symbols {
        0..=4 => lookup_small::<4>(codes, table, symbols, out),
        5..=8 => lookup_small::<8>(codes, table, symbols, out),
        9..=16 => lookup_small::<16>(codes, table, symbols, out),
        _ => {
            for (o, &c) in out.iter_mut().zip(codes) {
                *o = table[usize::from(c)];
            }
        }
    }
}

/// [`lookup`] of a table of at most `N` symbols.
#[inline(always)]
fn lookup_small<const N: usize>(
    codes: &[u8],
    table: &[u8; MAX_SYMBOLS],
    symbols: usize,
    out: &mut [u8],
) {
    let mut small = [0u8; N];
    small[..symbols].copy_from_slice(&table[..symbols]);
    for (o, &c) in out.iter_mut().zip(codes) {
        let mut x = 0;
        for (v, &s) in (0u8..).zip(&small) {
            x |= if c == v { s } else { 0 };
        }
        *o = x;
    }
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
        // `enumerate`, not `(0u8..).zip`: with 255 symbols the u8 range would step past 255.
        for (s, &symbol) in symbols.iter().enumerate() {
            code[usize::from(symbol)] = s as u8;
        }
        LevelCodes { symbols, code }
    }

    /// The escape code: all ones in the level's width.
    pub fn escape(&self) -> u8 {
        self.symbols.len() as u8
    }
}

/// The encoder's side of [`lookup`]: `out[q]` is the code of `x[q]` at this level. Levels of
/// at most 15 symbols (built by [`LevelCodes::new`]) are coded by compares with the symbols in
/// a loop that vectorizes, larger ones by the table.
#[inline(always)]
pub fn rank_codes(x: &[u8], level: &LevelCodes, out: &mut [u8]) {
    match level.symbols.len() {
        1..=3 => rank_codes_small::<4>(x, level, out),
        4..=7 => rank_codes_small::<8>(x, level, out),
        8..=15 => rank_codes_small::<16>(x, level, out),
        _ => {
            for (o, &v) in out.iter_mut().zip(x) {
                *o = level.code[usize::from(v)];
            }
        }
    }
}

/// [`rank_codes`] of a level of fewer than `N` symbols: the escape code, XORed with
/// `s ^ escape` where `x` is symbol `s` (the symbols are distinct; the slots past them repeat
/// symbol 0 and its term, so an OR of the matches is the one term).
#[inline(always)]
fn rank_codes_small<const N: usize>(x: &[u8], level: &LevelCodes, out: &mut [u8]) {
    let escape = level.escape();
    let (mut symbols, mut terms) = ([level.symbols[0]; N], [escape; N]);
    for (s, (symbol, term)) in (0u8..).zip(symbols.iter_mut().zip(&mut terms)) {
        if let Some(&v) = level.symbols.get(usize::from(s)) {
            (*symbol, *term) = (v, s ^ escape);
        }
    }
    for (o, &v) in out.iter_mut().zip(x) {
        let mut t = 0;
        for (&symbol, &term) in symbols.iter().zip(&terms) {
            t |= if v == symbol { term } else { 0 };
        }
        *o = escape ^ t;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A level of 255 symbols (the most a level holds) codes each symbol by its rank and every
    /// other exponent as the escape, 255.
    #[test]
    fn level_codes_of_255_symbols() {
        let symbols: [u8; 255] = core::array::from_fn(|i| (i as u8).wrapping_add(7));
        let level = LevelCodes::new(&symbols);
        for (rank, &symbol) in symbols.iter().enumerate() {
            assert_eq!(level.code[usize::from(symbol)], rank as u8);
        }
        assert_eq!(level.code[6], 255);
        assert_eq!(level.escape(), 255);
    }

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

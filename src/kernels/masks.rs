//! Escape masks and expansion: the decoder's prefix scan, which finds the elements a level
//! escapes and moves values to and from them.

/// Bit `q % 64` of `masks[q / 64]` is set when `codes[q] == escape`; returns how many are set.
/// Per 64 codes, a compare loop (which vectorizes) writes one flag byte per code, then eight
/// flags at a time become eight mask bits by one multiply (SWAR): portable, branch-free, no
/// table.
#[inline(always)]
pub fn escape_masks(codes: &[u8], escape: u8, masks: &mut [u64]) -> usize {
    let mut total = 0;
    masks.fill(0);
    for (block, mask) in codes.chunks(64).zip(masks.iter_mut()) {
        let mut flags = [0u8; 64];
        for (f, &c) in flags.iter_mut().zip(block) {
            *f = u8::from(c == escape);
        }
        *mask = flag_bits(&flags);
        total += mask.count_ones() as usize;
    }
    total
}

/// Bit `q` set where `flags[q]` (0 or 1) is 1.
#[inline(always)]
pub(crate) fn flag_bits(flags: &[u8; 64]) -> u64 {
    // Moves bit 8k of each byte to bit 56 + k (the products of the other pairs stay below bit
    // 56 or above bit 63, and carry nothing into them).
    const GATHER: u64 = 0x0102_0408_1020_4080;
    let mut m = 0u64;
    for (b, eight) in flags.as_chunks::<8>().0.iter().enumerate() {
        m |= (u64::from_le_bytes(*eight).wrapping_mul(GATHER) >> 56) << (8 * b);
    }
    m
}

/// Expansion: the `k`-th set bit of `masks` (in element order) receives `values[k]`. This is the
/// prefix count of the escape flags: an escaped element's entry in the next level is the number
/// of escaped elements before it. Returns the number of values used.
#[inline(always)]
pub fn expand<T: Copy>(masks: &[u64], values: &[T], out: &mut [T]) -> usize {
    // The compact form has only the second loop.
    let whole = if super::COMPACT {
        0
    } else {
        (out.len() / 64).min(masks.len())
    };
    let mut k = 0;
    if !super::COMPACT {
        for (&mask, block) in masks.iter().zip(out.as_chunks_mut::<64>().0) {
            // A whole block: its index needs no bounds check.
            let mut m = mask;
            while m != 0 {
                block[m.trailing_zeros() as usize & 63] = values[k];
                k += 1;
                m &= m - 1;
            }
        }
    }
    for (b, &mask) in masks.iter().enumerate().skip(whole) {
        let mut m = mask;
        while m != 0 {
            out[64 * b + m.trailing_zeros() as usize] = values[k];
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
    let whole = (values.len() / 64).min(masks.len());
    let mut k = 0;
    for (&mask, block) in masks.iter().zip(values.as_chunks::<64>().0) {
        // A whole block: one bounds check for its places in `out`, none for its indices.
        let count = mask.count_ones() as usize;
        let mut m = mask;
        for o in &mut out[k..k + count] {
            *o = block[m.trailing_zeros() as usize & 63];
            m &= m.wrapping_sub(1);
        }
        k += count;
    }
    for (b, &mask) in masks.iter().enumerate().skip(whole) {
        let mut m = mask;
        while m != 0 {
            out[k] = values[64 * b + m.trailing_zeros() as usize];
            k += 1;
            m &= m - 1;
        }
    }
    k
}

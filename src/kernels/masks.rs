//! Escape masks and expansion: the decoder's prefix scan, which finds the elements a level
//! escapes and moves values to and from them.

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

//! `h32`: the frame checksum (FORMAT.md section 6).
//!
//! XXH32's round function run in 32 independent lanes over 128-byte blocks, so it vectorizes on a
//! CPU (four AVX2 registers), a GPU warp or an NPU vector unit, unlike XXH32's four lanes.

const P1: u32 = 0x9E37_79B1;
const P2: u32 = 0x85EB_CA77;
const P3: u32 = 0xC2B2_AE3D;
const P4: u32 = 0x27D4_EB2F;
const P5: u32 = 0x1656_67B1;

/// Lanes, and bytes per block.
const LANES: usize = 32;
const BLOCK: usize = LANES * 4;

#[inline(always)]
fn round(acc: &mut [u32; LANES], block: &[u8; BLOCK]) {
    for (j, a) in acc.iter_mut().enumerate() {
        let w = u32::from_le_bytes([
            block[4 * j],
            block[4 * j + 1],
            block[4 * j + 2],
            block[4 * j + 3],
        ]);
        *a = a
            .wrapping_add(w.wrapping_mul(P2))
            .rotate_left(13)
            .wrapping_mul(P1);
    }
}

/// The checksum of `bytes` (at most 4 GiB: the length enters the hash modulo 2^32).
#[inline(always)]
pub fn h32(bytes: &[u8]) -> u32 {
    let mut acc = [0u32; LANES];
    for (j, a) in acc.iter_mut().enumerate() {
        *a = P5.wrapping_add(j as u32);
    }
    let mut blocks = bytes.chunks_exact(BLOCK);
    for block in &mut blocks {
        // chunks_exact guarantees the length; the conversion cannot fail.
        if let Ok(block) = <&[u8; BLOCK]>::try_from(block) {
            round(&mut acc, block);
        }
    }
    let rest = blocks.remainder();
    if !rest.is_empty() {
        let mut last = [0u8; BLOCK];
        last[..rest.len()].copy_from_slice(rest);
        round(&mut acc, &last);
    }
    let mut h = (bytes.len() as u32).wrapping_add(P5);
    for a in acc {
        h = h
            .wrapping_add(a.wrapping_mul(P3))
            .rotate_left(17)
            .wrapping_mul(P4);
    }
    h ^= h >> 15;
    h = h.wrapping_mul(P2);
    h ^= h >> 13;
    h = h.wrapping_mul(P3);
    h ^= h >> 16;
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_vectors() {
        // Pinned values: FORMAT.md quotes them; any change here is a format change.
        // Cross-checked with an independent Python implementation of FORMAT.md section 6.
        assert_eq!(h32(b""), 0xF763_BABE);
        assert_eq!(h32(b"enec"), 0xF008_6A89);
        let ramp: [u8; 512] = core::array::from_fn(|i| i as u8);
        assert_eq!(h32(&ramp), 0x5779_B469);
    }

    #[test]
    fn length_and_position_matter() {
        assert_ne!(h32(&[0u8; 4]), h32(&[0u8; 5]));
        assert_ne!(
            h32(&[1, 0, 0, 0, 0, 0, 0, 0]),
            h32(&[0, 0, 0, 0, 1, 0, 0, 0])
        );
        let mut a = [7u8; 300];
        let base = h32(&a);
        for i in 0..a.len() {
            for bit in 0..8 {
                a[i] ^= 1 << bit;
                assert_ne!(h32(&a), base, "flip of byte {i} bit {bit} undetected");
                a[i] ^= 1 << bit;
            }
        }
    }
}

//! `h32`: the frame checksum (FORMAT.md section 6).
//!
//! XXH32's round function run in 32 independent lanes over 128-byte blocks, so it vectorizes on a
//! CPU (four AVX2 registers), a GPU warp or an NPU vector unit, unlike XXH32's four lanes.

pub(crate) const P1: u32 = 0x9E37_79B1;
pub(crate) const P2: u32 = 0x85EB_CA77;
const P3: u32 = 0xC2B2_AE3D;
const P4: u32 = 0x27D4_EB2F;
const P5: u32 = 0x1656_67B1;

/// Lanes, and bytes per block.
pub(crate) const LANES: usize = 32;
pub(crate) const BLOCK: usize = LANES * 4;

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

/// `h32` computed piece by piece: [`H32::update`] with the bytes in order (every piece but the
/// last a whole number of 128-byte blocks), then [`H32::finish`]. A decoder hashes each chunk of
/// output while it is still in L1 instead of reading the whole frame back.
#[derive(Clone, Debug)]
pub struct H32 {
    /// The 32 lane accumulators (public to the crate so a vector kernel can run the rounds in its
    /// registers and store them back).
    pub(crate) acc: [u32; LANES],
    /// Bytes hashed so far.
    pub(crate) len: usize,
}

impl Default for H32 {
    fn default() -> H32 {
        H32::new()
    }
}

impl H32 {
    /// The state before any byte.
    pub fn new() -> H32 {
        H32 {
            acc: core::array::from_fn(|j| P5.wrapping_add(j as u32)),
            len: 0,
        }
    }

    /// Hashes the next `bytes`. Only the last piece may end inside a block (it is zero-padded as
    /// FORMAT.md says); a piece after it would hash differently from the whole.
    #[inline(always)]
    pub fn update(&mut self, bytes: &[u8]) {
        debug_assert!(
            self.len.is_multiple_of(BLOCK),
            "h32: a piece after a partial block"
        );
        let mut blocks = bytes.chunks_exact(BLOCK);
        for block in &mut blocks {
            // chunks_exact guarantees the length; the conversion cannot fail.
            if let Ok(block) = <&[u8; BLOCK]>::try_from(block) {
                round(&mut self.acc, block);
            }
        }
        let rest = blocks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; BLOCK];
            last[..rest.len()].copy_from_slice(rest);
            round(&mut self.acc, &last);
        }
        self.len += bytes.len();
    }

    /// Hashes `out[self.len()..upto]`, where `out` is the output being checked, hashed so far
    /// from its start: whole blocks only, unless `upto` is the end of `out`. For writers whose
    /// pieces do not end on block boundaries.
    pub fn follow(&mut self, out: &[u8], upto: usize) {
        let upto = if upto >= out.len() {
            out.len()
        } else {
            upto / BLOCK * BLOCK
        };
        if upto > self.len {
            self.update(&out[self.len..upto]);
        }
    }

    /// Bytes hashed so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no byte was hashed yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The checksum of every byte passed to [`H32::update`] (at most 4 GiB: the length enters
    /// the hash modulo 2^32).
    pub fn finish(&self) -> u32 {
        let mut h = (self.len as u32).wrapping_add(P5);
        for &a in &self.acc {
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
}

/// The checksum of `bytes` (at most 4 GiB: the length enters the hash modulo 2^32).
#[inline(always)]
pub fn h32(bytes: &[u8]) -> u32 {
    let mut state = H32::new();
    state.update(bytes);
    state.finish()
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

    #[test]
    fn pieces_hash_as_the_whole() {
        let bytes: [u8; 1000] = core::array::from_fn(|i| (i * 7 + 3) as u8);
        for cut in [0, 128, 256, 896] {
            for end in [cut, cut + 1, cut + 100, 1000] {
                let mut state = H32::new();
                state.update(&bytes[..cut]);
                state.update(&bytes[cut..end]);
                assert_eq!(state.finish(), h32(&bytes[..end]), "cut {cut} end {end}");
            }
        }
        let mut state = H32::new();
        for upto in [5, 127, 300, 640, 641, 999, 1000] {
            state.follow(&bytes, upto);
            assert_eq!(
                state.len(),
                if upto == 1000 { 1000 } else { upto / 128 * 128 }
            );
        }
        assert_eq!(state.finish(), h32(&bytes));
    }
}

// h32 (FORMAT.md section 6, src/checksum.rs) with its 32 lanes on the vector unit.
//
// The A2 documentation does not promise a wrapping 32-bit multiply, so every value mod 2^32 is
// held as two 16-bit halves H:L in int32 lanes and every product is split so that it stays below
// 2^24 (a half times one byte p0..p3 of the constant; in the round, L p2 + (L p1 >> 8) is one
// product by p1 + 256 p2, below 2^31 for P1): exact in int32, with no overflow, which the CPU
// model checks on every instruction. For x = H:L and P = p3 p2 p1 p0 (bytes):
//   low  = L p0 + ((L p1 & 0xFF) << 8)                                   (< 2^25; its bits 0..15)
//   high = low >> 16 + (L p1 >> 8) + H p0 + L p2 + (((H p1 + L p3) & 0xFF) << 8)   (mod 2^16)
// The carry low >> 16 and the reduction mod 2^16 are left to the next consumer: a product is
// kept as the pair (low, high - low >> 16), worth low + 2^16 high mod 2^32 (both below 2^27), and
// the round reduces acc + product (carry, mask) once, before the rotation needs exact halves.
// The products w * P2 of a batch of input words are computed at once (mul_planar); only the lane
// update acc = rotl(acc + w * P2, 13) * P1 is serial, one 128-byte block at a time, 19 vector
// instructions on [L0..L31 | H0..H31] (round). The final partial block (if any) and the closing
// avalanche run on the scalar unit (H32 of enec_common.h), which the lanes are handed to.
#pragma once

#include "enec_common.h"

namespace enec {

class H32Vector {
public:
    static constexpr uint32_t BATCH = 256;  // input words multiplied by P2 per step (8 blocks)
    // Lanes (int32): acc, seed, r, s, t, x, z (64 each), e0, e1, carry (32 each), mask (BATCH),
    // and the batch: wl, wh, pl, ph, ta, tb, tc, td (BATCH each).
    static constexpr uint32_t LANES = 7 * 64 + 3 * 32 + 9 * BATCH;
    static constexpr uint32_t UB_BYTES = LANES * sizeof(int32_t);

    // Once per core: carves the state out of `ub` (UB_BYTES) and writes the constants.
    __aicore__ inline void setup(const LocalTensor<int32_t>& ub) {
        LocalTensor<int32_t>* const parts[] = {&acc, &seed, &r, &s, &t, &x, &z, &e0, &e1, &carry,
                                               &mask, &wl, &wh, &pl, &ph, &ta, &tb, &tc, &td};
        const uint32_t sizes[] = {64, 64, 64, 64, 64, 64, 64, 32, 32, 32,
                                  BATCH, BATCH, BATCH, BATCH, BATCH, BATCH, BATCH, BATCH, BATCH};
        uint32_t at = 0;
        static_assert(sizeof(sizes) / sizeof(sizes[0]) == sizeof(parts) / sizeof(parts[0]), "one size per part");
        for (uint32_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            *parts[i] = ub[at];
            at += sizes[i];
        }
        for (uint32_t j = 0; j < 32; j++) {
            seed.SetValue(j, int32_t((P5 + j) & 0xFFFF));
            seed.SetValue(32 + j, int32_t((P5 + j) >> 16));
        }
        AscendC::Duplicate(mask.ReinterpretCast<uint32_t>(), uint32_t(0xFFFF), int32_t(BATCH));
    }

    __aicore__ inline void init() {
        AscendC::Adds(acc, seed, int32_t(0), int32_t(64));
        len = 0;
        handedOver = false;
    }

    // Feeds `n` bytes; every call but the last must feed a multiple of 128 bytes.
    __aicore__ inline void feed(const LocalTensor<uint8_t>& bytes, uint32_t n) {
        uint32_t words = n / 128 * 32;
        LocalTensor<uint32_t> in = bytes.ReinterpretCast<uint32_t>();
        for (uint32_t w0 = 0; w0 < words; w0 += BATCH) {
            uint32_t nb = min_u32(BATCH, words - w0);
            LocalTensor<uint32_t> lo = wl.ReinterpretCast<uint32_t>(), hi = wh.ReinterpretCast<uint32_t>();
            AscendC::ShiftLeft(lo, in[w0], uint32_t(16), int32_t(nb));
            AscendC::ShiftRight(lo, lo, uint32_t(16), int32_t(nb));
            AscendC::ShiftRight(hi, in[w0], uint32_t(16), int32_t(nb));
            mul_planar(pl, ph, wl, wh, P2, nb);
            for (uint32_t k = 0; k < nb; k += 32) round(pl[k], ph[k]);
        }
        len += words * 4;
        uint32_t rest = n - words * 4;
        if (rest != 0) {
            hand_over();
            scalar.feed(bytes[words * 4], rest);
        }
    }

    __aicore__ inline uint32_t finish() {
        if (!handedOver) hand_over();
        return scalar.finish();
    }

private:
    // The lanes to the scalar H32 (64 scalar loads), for the last partial block and the end.
    __aicore__ inline void hand_over() {
        for (uint32_t j = 0; j < 32; j++)
            scalar.acc[j] = uint32_t(acc.GetValue(j)) + (uint32_t(acc.GetValue(32 + j)) << 16);
        scalar.len = len;
        handedOver = true;
    }

    __aicore__ inline static void and_mask(const LocalTensor<int32_t>& dst, const LocalTensor<int32_t>& src,
                                           const LocalTensor<int32_t>& m, uint32_t lanes) {
        AscendC::And(dst.ReinterpretCast<uint16_t>(), src.ReinterpretCast<uint16_t>(), m.ReinterpretCast<uint16_t>(),
                     int32_t(2 * lanes));
    }

    __aicore__ inline static void shl(const LocalTensor<int32_t>& dst, const LocalTensor<int32_t>& src, uint32_t k,
                                      uint32_t lanes) {
        AscendC::ShiftLeft(dst.ReinterpretCast<uint32_t>(), src.ReinterpretCast<uint32_t>(), k, int32_t(lanes));
    }

    __aicore__ inline static void shr(const LocalTensor<int32_t>& dst, const LocalTensor<int32_t>& src, uint32_t k,
                                      uint32_t lanes) {
        AscendC::ShiftRight(dst.ReinterpretCast<uint32_t>(), src.ReinterpretCast<uint32_t>(), k, int32_t(lanes));
    }

    // (dL, dH) = (sL, sH) * P mod 2^32 on n lanes of 16-bit halves (dL, dH distinct from sL, sH).
    __aicore__ inline void mul_planar(const LocalTensor<int32_t>& dL, const LocalTensor<int32_t>& dH,
                                      const LocalTensor<int32_t>& sL, const LocalTensor<int32_t>& sH, uint32_t P,
                                      uint32_t n) {
        int32_t q0 = int32_t(P & 0xFF), q1 = int32_t((P >> 8) & 0xFF), Q0 = int32_t((P >> 16) & 0xFF),
                Q1 = int32_t(P >> 24);
        AscendC::Muls(ta, sL, q0, int32_t(n));  // a = L p0 < 2^24
        AscendC::Muls(tb, sL, q1, int32_t(n));  // b = L p1 < 2^24
        shl(tc, tb, 24, n);
        shr(tc, tc, 16, n);                     // (b & 0xFF) << 8
        AscendC::Add(dL, ta, tc, int32_t(n));   // the low 24 bits of L (p0 + 256 p1), unreduced
        shr(tc, tb, 8, n);
        AscendC::Muls(tb, sH, q0, int32_t(n));  // H p0
        AscendC::Add(tc, tc, tb, int32_t(n));
        AscendC::Muls(tb, sL, Q0, int32_t(n));  // L p2
        AscendC::Add(tc, tc, tb, int32_t(n));
        AscendC::Muls(tb, sH, q1, int32_t(n));  // H p1 and L p3 count only by their low byte
        AscendC::Muls(td, sL, Q1, int32_t(n));
        AscendC::Add(tb, tb, td, int32_t(n));
        shl(tb, tb, 24, n);
        shr(tb, tb, 16, n);
        AscendC::Add(dH, tc, tb, int32_t(n));
    }

    // One block: acc = rotl(acc + (pL, pH), 13) * P1 on [L | H] (32 lanes each).
    __aicore__ inline void round(const LocalTensor<int32_t>& pL, const LocalTensor<int32_t>& pH) {
        LocalTensor<int32_t> L = acc, H = acc[32];
        AscendC::Add(L, L, pL, 32);
        AscendC::Add(H, H, pH, 32);
        shr(carry, L, 16, 32);
        AscendC::Add(H, H, carry, 32);
        and_mask(acc, acc, mask, 64);
        // rotl 13: low = (L << 13 & 0xFFFF) | H >> 3, high = (H << 13 & 0xFFFF) | L >> 3; the
        // lanes are below 2^16, so a uint16 shift of their low halves drops the bits past 16.
        AscendC::ShiftLeft(s.ReinterpretCast<uint16_t>(), acc.ReinterpretCast<uint16_t>(), uint16_t(13), 128);
        shr(t, acc, 3, 64);
        AscendC::Or(r.ReinterpretCast<uint16_t>(), s.ReinterpretCast<uint16_t>(), t[32].ReinterpretCast<uint16_t>(),
                    64);
        AscendC::Or(r[32].ReinterpretCast<uint16_t>(), s[32].ReinterpretCast<uint16_t>(),
                    t.ReinterpretCast<uint16_t>(), 64);
        // * P1, both halves per instruction where the constant byte is shared (mul_planar's terms)
        int32_t q0 = int32_t(P1 & 0xFF), q1 = int32_t((P1 >> 8) & 0xFF), Q1 = int32_t(P1 >> 24);
        AscendC::Muls(x, r, q1, 64);  // [L p1 | H p1]
        AscendC::Muls(z, r, q0, 64);  // [L p0 | H p0]
        AscendC::Muls(e1, r, Q1, 32);
        AscendC::Add(x[32], x[32], e1, 32);  // [L p1 | H p1 + L p3]
        // L p2 + (L p1 >> 8) = (L (p1 + 256 p2)) >> 8, one product below 2^31 for this P1
        static_assert(((P1 >> 8) & 0xFFFF) < 0x8000, "L * (p1 + 256 p2) must stay below 2^31");
        AscendC::Muls(e0, r, int32_t((P1 >> 8) & 0xFFFF), 32);
        shr(e0, e0, 8, 32);
        shl(s, x, 24, 64);
        shr(s, s, 16, 64);
        AscendC::Add(acc, z, s, 64);  // [low 24 bits | H p0 + (H p1 + L p3 & 0xFF) << 8]
        AscendC::Add(acc[32], acc[32], e0, 32);
    }

    LocalTensor<int32_t> acc, seed, r, s, t, x, z, e0, e1, carry, mask, wl, wh, pl, ph, ta, tb, tc, td;
    H32 scalar;
    uint32_t len = 0;
    bool handedOver = false;
};

}  // namespace enec

// h32 (FORMAT.md section 6, src/checksum.rs) with its 32 lanes on the vector unit.
//
// The A2 documentation does not promise a wrapping 32-bit multiply, so every value mod 2^32 is
// held as two 16-bit halves H:L in int32 lanes and every product is split so that it stays exact
// in int32, with no overflow, which the CPU model checks on every instruction. A value is kept
// as a pair (low, high) worth low + 2^16 high mod 2^32, low >= 0: the carry low >> 16 and the
// reduction mod 2^16 wait for the round's addition, which does them once for acc + product
// before the rotation needs exact halves.
//   mul_planar (x * P2, P2 = p3 p2 p1 p0 in bytes = C0 + 2^16 C1 in 16-bit halves):
//     low  = L p0 + ((L p1 & 0xFF) << 8)                                     (< 2^25)
//     high = ((L p1 >> 8) + H C0 + L C1) mod 2^16                            (< 2^16)
//   round (x * P1, P1 = C0 + 2^16 C1 in 16-bit halves, both products below 2^31 for P1):
//     low  = L C0,  high = H C0 + L C1  (C1 taken mod 2^16, as C1 - 2^16 when negative is smaller)
// The products w * P2 of a batch of input words are computed at once (mul_planar); only the lane
// update acc = rotl(acc + w * P2, 13) * P1 is serial, one 128-byte block at a time, 11 vector
// instructions on [L0..L31 | H0..H31] with the products gathered by block (blockwise), else 12. The final partial block (if any) and the closing
// avalanche run on the scalar unit (H32 of enec_common.h), which the lanes are handed to.
#pragma once

#include "enec_common.h"

namespace enec {

class H32Vector {
public:
    static constexpr uint32_t BATCH = 512;  // input words multiplied by P2 per step (16 blocks)
    // Lanes (int32): acc, seed, r, s, t (64 each), e0, carry (32 each), mask (BATCH),
    // and the batch: wl, wh, pl, ph, tb, tc (BATCH each).
    static constexpr uint32_t LANES = 5 * 64 + 2 * 32 + 7 * BATCH;
    static constexpr uint32_t UB_BYTES = LANES * sizeof(int32_t);
    // The optional block table (blockwise): 2 * BATCH u32 Gather offsets.
    static constexpr uint32_t BLOCK_TABLE_BYTES = 2 * BATCH * sizeof(uint32_t);

    // Once per core: carves the state out of `ub` (UB_BYTES) and writes the constants.
    __aicore__ inline void setup(const LocalTensor<int32_t>& ub) {
        LocalTensor<int32_t>* const parts[] = {&acc, &seed, &r, &s, &t, &e0, &carry,
                                               &mask, &wl, &wh, &pl, &ph, &tb, &tc};
        const uint32_t sizes[] = {64, 64, 64, 64, 64, 32, 32,
                                  BATCH, BATCH, BATCH, BATCH, BATCH, BATCH, BATCH};
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

    // Optional, once per core after setup: with `table` (BLOCK_TABLE_BYTES), each batch's
    // products are gathered into [pL | pH] per 32-word block (one Gather per batch), so that the
    // round adds them with one instruction instead of two. The table: lane i = 64 b + m takes
    // product lane 32 b + m of pl (m < 32) or of ph (m >= 32; ph follows pl at BATCH lanes):
    // byte offset 4 (i - 32 b + (m >= 32) (BATCH - 32)).
    __aicore__ inline void blockwise(const LocalTensor<uint32_t>& table) {
        LocalTensor<int32_t> o = table.ReinterpretCast<int32_t>(), b = tb, m = wl;  // tb | tc, wl | wh: 2 * BATCH
        AscendC::CreateVecIndex(o, int32_t(0), 2 * BATCH);
        shr(b, o, 6, 2 * BATCH);
        shl(b, b, 5, 2 * BATCH);   // 32 b
        shl(m, o, 26, 2 * BATCH);
        shr(m, m, 31, 2 * BATCH);  // (m >= 32) = bit 5 of i
        AscendC::Muls(m, m, int32_t(BATCH - 32), int32_t(2 * BATCH));
        AscendC::Sub(o, o, b, int32_t(2 * BATCH));
        AscendC::Add(o, o, m, int32_t(2 * BATCH));
        shl(o, o, 2, 2 * BATCH);
        blocks = table;
        byBlock = true;
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
            mul_planar<P2>(pl, ph, wl, wh, nb);
            if (byBlock) {  // the inputs are spent: wl | wh takes the products by block
                AscendC::Gather(wl, pl, blocks, uint32_t(0), 2 * nb);
                for (uint32_t k = 0; k < nb; k += 32) {
                    AscendC::Add(acc, acc, wl[2 * k], 64);
                    round();
                }
            } else {
                for (uint32_t k = 0; k < nb; k += 32) {
                    AscendC::Add(acc, acc, pl[k], 32);
                    AscendC::Add(acc[32], acc[32], ph[k], 32);
                    round();
                }
            }
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

    // A 16-bit half of a constant as the int32 it counts as mod 2^16 with the smaller magnitude.
    __aicore__ static constexpr int32_t half16(uint32_t h) { return int32_t(h) - (h >= 0x8000 ? 0x10000 : 0); }

    // (dL, dH) = (sL, sH) * P mod 2^32 on n lanes of 16-bit halves (dL, dH distinct from sL, sH):
    // dL = L p0 + ((L p1 & 0xFF) << 8) (< 2^25), dH = ((L p1 >> 8) + H C0 + L C1) mod 2^16 with
    // C0, C1 the halves of P (half16), reduced after each product so that no sum leaves int32.
    template <uint32_t P>
    __aicore__ inline void mul_planar(const LocalTensor<int32_t>& dL, const LocalTensor<int32_t>& dH,
                                      const LocalTensor<int32_t>& sL, const LocalTensor<int32_t>& sH, uint32_t n) {
        constexpr int32_t q0 = int32_t(P & 0xFF), q1 = int32_t((P >> 8) & 0xFF);
        constexpr int32_t c0 = half16(P & 0xFFFF), c1 = half16(P >> 16);
        static_assert(int64_t(0xFFFF) * (c0 < 0 ? -c0 : c0) + 0xFFFF < (int64_t(1) << 31) &&
                          int64_t(0xFFFF) * (c1 < 0 ? -c1 : c1) + 0xFFFF < (int64_t(1) << 31),
                      "mul_planar: a product and its addend stay in int32");
        AscendC::Muls(dL, sL, q0, int32_t(n));  // a = L p0 < 2^24
        AscendC::Muls(tb, sL, q1, int32_t(n));  // b = L p1 < 2^24
        shl(tc, tb, 24, n);
        shr(tc, tc, 16, n);                     // (b & 0xFF) << 8
        AscendC::Add(dL, dL, tc, int32_t(n));   // the low 24 bits of L (p0 + 256 p1), unreduced
        shr(tc, tb, 8, n);                      // b >> 8
        AscendC::Muls(tb, sH, c0, int32_t(n));
        AscendC::Add(tc, tc, tb, int32_t(n));
        and_mask(tc, tc, mask, n);
        AscendC::Muls(tb, sL, c1, int32_t(n));
        AscendC::Add(dH, tc, tb, int32_t(n));
        and_mask(dH, dH, mask, n);
    }

    // One block, its products already added to acc: acc = rotl(acc, 13) * P1 on [L | H] (32
    // lanes each).
    __aicore__ inline void round() {
        LocalTensor<int32_t> L = acc, H = acc[32];
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
        // * P1 = C0 + 2^16 C1 (16-bit halves of the constant): r P1 = rL C0 + 2^16 (rH C0 + rL C1)
        // mod 2^32, and C1 counts mod 2^16 there, so it is taken as C1 - 2^16 (negative) when
        // that is smaller. Both products are exact in int32 for P1 (the bounds below), the low
        // one non-negative; the next round's addition carries and reduces them.
        AscendC::Muls(acc, r, C0, 64);  // [rL C0 | rH C0]
        AscendC::Muls(e0, r, C1, 32);   // rL C1
        AscendC::Add(acc[32], acc[32], e0, 32);
    }

    static constexpr int32_t C0 = int32_t(P1 & 0xFFFF);
    static constexpr int32_t C1 = int32_t(P1 >> 16) - ((P1 >> 31) != 0 ? 0x10000 : 0);
    // acc + product before the reduction: L <= 0xFFFF C0 + a product's low part (mul_planar:
    // below 2^25), H <= 0xFFFF (C0 + max(C1, 0)) + a high part (below 2^16; 2^26 allowed) + the
    // carry (2^16), H >= 0xFFFF min(C1, 0).
    static_assert(int64_t(0xFFFF) * C0 + (int64_t(1) << 25) < (int64_t(1) << 31), "round: L overflows");
    static_assert(int64_t(0xFFFF) * (C0 + (C1 > 0 ? C1 : 0)) + (int64_t(1) << 26) + 0x10000 < (int64_t(1) << 31),
                  "round: H overflows");
    static_assert(int64_t(0xFFFF) * (C1 < 0 ? C1 : 0) > -(int64_t(1) << 31), "round: H underflows");

    LocalTensor<int32_t> acc, seed, r, s, t, e0, carry, mask, wl, wh, pl, ph, tb, tc;
    LocalTensor<uint32_t> blocks;
    bool byBlock = false;
    H32 scalar;
    uint32_t len = 0;
    bool handedOver = false;
};

}  // namespace enec

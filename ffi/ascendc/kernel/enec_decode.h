// The enec decode kernel (mirror of src/frame.rs decode_frame). See enec_kernel.cpp.
#pragma once

#include "enec_common.h"

namespace enec {

// ---------------------------------------------------------------------------------------------
// The decoder
// ---------------------------------------------------------------------------------------------

class KernelDecode {
public:
    __aicore__ inline KernelDecode() {}

    __aicore__ inline void Init(GM_ADDR stream, GM_ADDR offsets, GM_ADDR out, GM_ADDR status,
                                const EnecDecodeTiling& t) {
        tiling = t;
        dt = dtype_of(t.dtype);
        frameLen = 1u << t.frameLog2;
        streamGm.SetGlobalBuffer((__gm__ uint8_t*)stream, t.streamBytes);
        offsetsGm.SetGlobalBuffer((__gm__ uint64_t*)offsets, t.frameCount);
        outGm.SetGlobalBuffer((__gm__ uint8_t*)out, t.elementCount * dt.eb);
        statusGm.SetGlobalBuffer((__gm__ uint32_t*)status, t.frameCount);

        pipe.InitBuffer(inQue, BUFFER_NUM, RUN_WORDS * sizeof(uint16_t));
        pipe.InitBuffer(outQue, BUFFER_NUM, TILE * sizeof(uint32_t));
        pipe.InitBuffer(passQue, BUFFER_NUM, TILE * sizeof(uint32_t));
        pipe.InitBuffer(statusBuf, 32);
        pipe.InitBuffer(headerBuf, HEADER_BYTES + 256);
        pipe.InitBuffer(tableBuf, TABLE_SLOTS * sizeof(uint16_t));
        pipe.InitBuffer(pairBuf, 2 * TILE * sizeof(uint16_t));   // residual lo | hi
        pipe.InitBuffer(xBuf, TILE * sizeof(uint16_t));          // codes, then exponents
        pipe.InitBuffer(wideBuf, 2 * TILE * sizeof(uint16_t));   // widening scratch | zeros
        pipe.InitBuffer(levelBuf, MAX_LEVELS * TILE * sizeof(uint16_t));
        pipe.InitBuffer(spanBuf, RUN_WORDS * sizeof(uint16_t));
        pipe.InitBuffer(offsBuf, TILE * sizeof(uint32_t));
        pipe.InitBuffer(wordBuf, TILE * sizeof(uint32_t));
        pipe.InitBuffer(ilvBuf, 2 * TILE * sizeof(uint32_t));
        pipe.InitBuffer(dlvBuf, 2 * TILE * sizeof(uint32_t));
        pipe.InitBuffer(halfBuf, 2 * TILE * sizeof(half));
        pipe.InitBuffer(maskBuf, MAX_LEVELS * TILE / 8);
        pipe.InitBuffer(groupBuf, 3 * (MAX_GROUPS + 16) * sizeof(uint16_t));

        ilv = ilvBuf.Get<uint32_t>();
        build_offsets(ilv, dlvBuf.Get<uint32_t>());
        LocalTensor<uint16_t> wide = wideBuf.Get<uint16_t>();
        AscendC::Duplicate(wide[TILE], uint16_t(0), int32_t(TILE));
    }

    __aicore__ inline void Process() {
        for (uint32_t f = uint32_t(AscendC::GetBlockIdx()); f < tiling.frameCount;
             f += uint32_t(AscendC::GetBlockNum())) {
            store_word(statusGm, f, statusBuf.Get<uint32_t>(), DecodeFrame(f));
        }
    }

private:
    // decode_frame (src/frame.rs)
    __aicore__ inline uint32_t DecodeFrame(uint32_t f) {
        frameOff = offsetsGm.GetValue(f);
        uint64_t firstElement = uint64_t(f) << tiling.frameLog2;
        uint64_t left = tiling.elementCount - firstElement;
        elements = uint32_t(left < frameLen ? left : frameLen);
        outOff = firstElement * dt.eb;
        if (frameOff % 32 != 0 || frameOff + HEADER_BYTES > tiling.streamBytes) return ENEC_FRAME_TRUNCATED;

        LocalTensor<uint8_t> header = headerBuf.Get<uint8_t>();
        AscendC::DataCopy(header, streamGm[frameOff], HEADER_BYTES);
        sync_pipes<AscendC::HardEvent::MTE2_S>();
        uint32_t frameBytes = 0, checksum = 0;
        uint32_t st = parse_frame_header(header, dt, elements, params, frameBytes, checksum);
        if (st != ENEC_FRAME_OK) return st;
        layout = frame_layout(dt, elements, params);
        if (layout.bytes != frameBytes) return ENEC_FRAME_CORRUPT;
        if (frameOff + frameBytes > tiling.streamBytes) return ENEC_FRAME_TRUNCATED;
        if (tiling.checksums == 0 && checksum != 0) return ENEC_FRAME_CORRUPT;
        frameGm = streamGm[frameOff];
        frameWords.SetGlobalBuffer((__gm__ uint16_t*)frameGm.GetPhyAddr(), frameBytes / 2);
        hash.init();

        if (params.coding == CODING_STORED) {
            DecodeStored();
        } else if (params.coding == CODING_RANKED) {
            st = DecodeRanked();
        } else {
            st = DecodeGroups();
        }
        if (st != ENEC_FRAME_OK) return st;
        if (tiling.checksums != 0 && hash.finish() != checksum) return ENEC_FRAME_CHECKSUM_MISMATCH;
        return ENEC_FRAME_OK;
    }

    // Stored frames move GM -> UB -> GM through a VECIN -> VECOUT queue (MTE2 fills, MTE3
    // drains); the scalar unit reads the tile for the checksum in between.
    __aicore__ inline void DecodeStored() {
        for (uint32_t s = 0; s < elements; s += TILE) {
            uint32_t len = min_u32(TILE, elements - s);
            uint32_t bytes = len * dt.eb;
            LocalTensor<uint8_t> tile = passQue.AllocTensor<uint8_t>();
            CopyBytesIn(tile, frameGm[HEADER_BYTES + s * dt.eb], bytes);
            if (tiling.checksums != 0) {
                sync_pipes<AscendC::HardEvent::MTE2_S>();
                hash.feed(tile, bytes);
            }
            passQue.EnQue(tile);
            CopyOut(passQue, s, bytes);
        }
    }

    // read_ranked (src/frame.rs). Per tile: level-1 codes by vector unpack; escapes counted with a
    // Compare mask; the compacted entries of the deeper levels unpacked by vector; symbols looked
    // up with Gather; escaped entries patched from the next level by walking the mask's set bits
    // (scalar: A2 has no vector "expand"); merged with the residual by vector ops.
    __aicore__ inline uint32_t DecodeRanked() {
        uint32_t s[MAX_LEVELS + 1];
        rank_starts(params, s);
        // Symbol table: T bytes at offset 32, widened to u16 entries (scalar, at most 256).
        LocalTensor<uint8_t> raw = headerBuf.Get<uint8_t>()[HEADER_BYTES];
        LocalTensor<uint16_t> table = tableBuf.Get<uint16_t>();
        AscendC::Duplicate(table, uint16_t(0), int32_t(TABLE_SLOTS));
        if (layout.tableLen > 0) {
            AscendC::DataCopy(raw, frameGm[layout.tableAt], pad32(layout.tableLen));
            sync_pipes<AscendC::HardEvent::MTE2_S>();
        }
        for (uint32_t r = 0; r < layout.tableLen; r++) {
            uint32_t x = raw.GetValue(r);
            if ((x >> dt.e) != 0) return ENEC_FRAME_CORRUPT;  // symbol table entry exceeds E
            table.SetValue(r, uint16_t(x));
        }
        uint32_t levels = params.levels;
        uint32_t cursor[MAX_LEVELS + 1] = {0, 0, 0, 0};
        LocalTensor<uint16_t> pair = pairBuf.Get<uint16_t>();
        LocalTensor<uint16_t> codes = xBuf.Get<uint16_t>();  // level 1, then exponents
        LocalTensor<uint16_t> lvl = levelBuf.Get<uint16_t>();
        LocalTensor<uint8_t> masks = maskBuf.Get<uint8_t>();
        for (uint32_t start = 0; start < elements; start += TILE) {
            uint32_t len = min_u32(TILE, elements - start);
            unpack_range(layout.residual, start, len, pair, pair[TILE]);
            // buf[j]: entries of level j + 1 in this tile (j = levels: the exponent level).
            LocalTensor<uint16_t> buf[MAX_LEVELS + 1];
            uint32_t n[MAX_LEVELS + 1];
            buf[0] = codes;
            n[0] = len;
            unpack_range(layout.planes[0], start, len, codes, codes);
            for (uint32_t j = 0; j < levels; j++) {
                uint32_t escape = (1u << params.widths[j]) - 1;
                n[j + 1] = build_mask(buf[j], n[j], escape, AscendC::CMPMODE::EQ, Halves(0), Halves(1),
                                      masks[j * (TILE / 8)]);
                buf[j + 1] = lvl[j * TILE];
                const Plane& next = layout.planes[j + 1];
                if (cursor[j + 1] + n[j + 1] > next.count) return ENEC_FRAME_CORRUPT;  // reader overran
                if (n[j + 1] > 0) unpack_range(next, cursor[j + 1], n[j + 1], buf[j + 1], buf[j + 1]);
                cursor[j + 1] += n[j + 1];
            }
            // Bottom-up: level j's codes become exponents; escaped ones take level j + 1's.
            for (uint32_t jj = levels; jj > 0; jj--) {
                uint32_t j = jj - 1;
                lookup(buf[j], buf[j], n[j], s[j], table, wideBuf.Get<uint16_t>(), offsBuf.Get<uint32_t>(), ilv);
                sync_pipes<AscendC::HardEvent::V_S>();
                expand(buf[j], n[j], masks[j * (TILE / 8)], buf[j + 1]);
            }
            MergeOut(start, len, codes, pair);
        }
        for (uint32_t j = 1; j <= levels; j++)
            if (cursor[j] != layout.planes[j].count) return ENEC_FRAME_CORRUPT;  // escape counts differ
        return ENEC_FRAME_OK;
    }

    // read_groups (src/frame.rs). Flags unpacked once per frame (vector), their prefix count and
    // the list of flagged groups built by scalar code (at most 4,096 groups). Per tile: low bits by
    // vector unpack; the high bits of flagged positions (a compacted plane, unpacked by vector)
    // ORed in by walking the flagged groups (scalar: an expand); then groups_inverse and merge as
    // vector ops.
    __aicore__ inline uint32_t DecodeGroups() {
        uint32_t groups = (elements + 15) / 16;
        LocalTensor<uint16_t> g = groupBuf.Get<uint16_t>();
        LocalTensor<uint16_t> flags = g;                             // MAX_GROUPS + 16
        LocalTensor<uint16_t> flagged = g[MAX_GROUPS + 16];          // list of flagged t
        LocalTensor<uint16_t> before = g[2 * (MAX_GROUPS + 16)];     // flagged groups before t
        for (uint32_t t0 = 0; t0 < groups; t0 += TILE)
            unpack_range(layout.planes[0], t0, min_u32(TILE, groups - t0), flags[t0], flags[t0]);
        sync_pipes<AscendC::HardEvent::V_S>();
        uint32_t count = 0;
        for (uint32_t t = 0; t < groups; t++) {
            before.SetValue(t, uint16_t(count));
            if (flags.GetValue(t) != 0) {
                flagged.SetValue(count, uint16_t(t));
                count++;
            }
        }
        if (count != params.flagged) return ENEC_FRAME_CORRUPT;  // flag count differs from the header's
        const uint32_t low = params.low;
        LocalTensor<uint16_t> pair = pairBuf.Get<uint16_t>();
        LocalTensor<uint16_t> y = xBuf.Get<uint16_t>();
        LocalTensor<uint16_t> high = levelBuf.Get<uint16_t>();
        uint32_t highCursor = 0;
        for (uint32_t start = 0; start < elements; start += TILE) {
            uint32_t len = min_u32(TILE, elements - start);
            unpack_range(layout.residual, start, len, pair, pair[TILE]);
            unpack_range(layout.planes[1], start, len, y, y);
            if (params.flagged != 0) {
                // Flagged positions in [start, start + len), in position order: for each member r,
                // the flagged groups t in the tile's t-range.
                uint32_t n = 0;
                for (uint32_t i = start; i < start + len;) {
                    uint32_t r = i / groups, t = i % groups;
                    uint32_t tEnd = min_u32(groups, t + (start + len - i));
                    n += (tEnd == groups ? count : before.GetValue(tEnd)) - before.GetValue(t);
                    i += tEnd - t;
                    (void)r;
                }
                if (n > 0) {
                    if (highCursor + n > layout.planes[2].count) return ENEC_FRAME_CORRUPT;
                    unpack_range(layout.planes[2], highCursor, n, high, high);
                    sync_pipes<AscendC::HardEvent::V_S>();
                    uint32_t q = 0;
                    for (uint32_t i = start; i < start + len;) {
                        uint32_t r = i / groups, t = i % groups;
                        uint32_t tEnd = min_u32(groups, t + (start + len - i));
                        uint32_t kEnd = tEnd == groups ? count : before.GetValue(tEnd);
                        for (uint32_t k = before.GetValue(t); k < kEnd; k++) {
                            uint32_t pos = r * groups + flagged.GetValue(k) - start;
                            y.SetValue(pos, uint16_t(y.GetValue(pos) | (high.GetValue(q) << low)));
                            q++;
                        }
                        i += tEnd - t;
                    }
                    highCursor += n;
                }
            }
            groups_inverse(y, len, params.base, params.width, dt.e);
            MergeOut(start, len, y, pair);
        }
        return ENEC_FRAME_OK;
    }

    // unpack_range (src/kernels.rs): values [start, start + count) of `plane` into lo (bits 0..16)
    // and hi (bits 16..24, planes wider than 16 bits only). For each sub-plane, the values sit in
    // runs of consecutive words with one constant shift per run: a run is copied in (DataCopy when
    // aligned, else DataCopyPad with left padding so that it lines up with the output lanes), its
    // field extracted with two shifts and ORed into place: all uint16 vector ops.
    __aicore__ inline void unpack_range(const Plane& plane, uint32_t start, uint32_t count,
                                        const LocalTensor<uint16_t>& lo, const LocalTensor<uint16_t>& hi) {
        uint32_t zeroed = round_up(count, 128);
        AscendC::Duplicate(lo, uint16_t(0), int32_t(zeroed));
        if (plane.width > 16) AscendC::Duplicate(hi, uint16_t(0), int32_t(zeroed));
        for (uint32_t k = 0; k < plane.len; k++) {
            const SubPlane& sub = plane.subs[k];
            uint32_t j = start % sub.words;
            uint32_t bit = (start / sub.words) * sub.bits;
            uint32_t done = 0;
            while (done < count) {
                uint32_t run = min_u32(sub.words - j, count - done);
                uint32_t lead = done % 16;  // lanes of padding so the run lines up with lo[done]
                LocalTensor<uint16_t> words = inQue.AllocTensor<uint16_t>();
                CopyWordsIn(words, sub.offset / 2 + j, run, lead);
                inQue.EnQue(words);
                words = inQue.DeQue<uint16_t>();
                uint32_t n = lead + run;
                // field = (w >> bit) & (2^p - 1)
                AscendC::ShiftLeft(words, words, uint16_t(16 - bit - sub.bits), int32_t(n));
                AscendC::ShiftRight(words, words, uint16_t(16 - sub.bits), int32_t(n));
                uint32_t o = sub.shift;
                uint32_t at = done - lead;
                if (o + sub.bits <= 16) {
                    AscendC::ShiftLeft(words, words, uint16_t(o), int32_t(n));
                    AscendC::Or(lo[at], lo[at], words, int32_t(n));
                } else if (o >= 16) {
                    AscendC::ShiftLeft(words, words, uint16_t(o - 16), int32_t(n));
                    AscendC::Or(hi[at], hi[at], words, int32_t(n));
                } else {  // the field straddles bit 16
                    LocalTensor<uint16_t> span = spanBuf.Get<uint16_t>();
                    AscendC::ShiftLeft(span, words, uint16_t(o), int32_t(n));
                    AscendC::Or(lo[at], lo[at], span, int32_t(n));
                    AscendC::ShiftRight(span, words, uint16_t(16 - o), int32_t(n));
                    AscendC::Or(hi[at], hi[at], span, int32_t(n));
                }
                inQue.FreeTensor(words);
                done += run;
                j = 0;
                bit += sub.bits;
            }
        }
    }

    // `run` plane words starting at word `word` of the frame into dst[lead ..].
    __aicore__ inline void CopyWordsIn(const LocalTensor<uint16_t>& dst, uint32_t word, uint32_t run, uint32_t lead) {
        if (lead == 0 && word % 16 == 0 && run % 16 == 0) {
            AscendC::DataCopy(dst, frameWords[word], run);
        } else {
            AscendC::DataCopyExtParams copy(1, run * 2, 0, 0, 0);
            AscendC::DataCopyPadExtParams<uint16_t> pad(true, uint8_t(lead), 0, 0);
            AscendC::DataCopyPad(dst, frameWords[word], copy, pad);
        }
    }

    __aicore__ inline void CopyBytesIn(const LocalTensor<uint8_t>& dst, const GlobalTensor<uint8_t>& src,
                                       uint32_t bytes) {
        if (bytes % 32 == 0) {
            AscendC::DataCopy(dst, src, bytes);
        } else {
            AscendC::DataCopyExtParams copy(1, bytes, 0, 0, 0);
            AscendC::DataCopyPadExtParams<uint8_t> pad(false, 0, 0, 0);
            AscendC::DataCopyPad(dst, src, copy, pad);
        }
    }

    // Escaped entries (set bits of `mask`) take the next entries of `next`, in order.
    __aicore__ inline void expand(const LocalTensor<uint16_t>& v, uint32_t n, const LocalTensor<uint8_t>& mask,
                                  const LocalTensor<uint16_t>& next) {
        LocalTensor<uint64_t> words = mask.ReinterpretCast<uint64_t>();
        uint32_t k = 0;
        for (uint32_t w = 0; w * 64 < n; w++) {
            uint64_t bits = words.GetValue(w);
            uint32_t valid = n - w * 64;
            if (valid < 64) bits &= (uint64_t(1) << valid) - 1;
            while (bits != 0) {
                uint32_t b = uint32_t(AscendC::ScalarGetSFFValue<1>(bits));
                v.SetValue(w * 64 + b, next.GetValue(k++));
                bits &= bits - 1;
            }
        }
    }

    // groups_inverse (src/kernels.rs): x = (b - sext_n(y)) mod 2^E, int16 lanes, no overflow:
    // sext_n(y) = ((y + 2^(n-1)) mod 2^n) - 2^(n-1).
    __aicore__ inline void groups_inverse(const LocalTensor<uint16_t>& y, uint32_t n, uint32_t base, uint32_t width,
                                          uint32_t e) {
        LocalTensor<int16_t> v = y.ReinterpretCast<int16_t>();
        LocalTensor<int16_t> zeros = wideBuf.Get<int16_t>()[TILE];
        int16_t mid = int16_t(1u << (width - 1));
        AscendC::Adds(v, v, mid, int32_t(n));
        keep_low_bits(y, width, n);
        AscendC::Adds(v, v, int16_t(-mid), int32_t(n));
        AscendC::Sub(v, zeros, v, int32_t(n));
        AscendC::Adds(v, v, int16_t(base), int32_t(n));
        keep_low_bits(y, e, n);
    }

    // merge (src/kernels.rs Fields::merge) of exponents x and residuals (lo, hi) into the output
    // tile, then out to GM. With v = r << k: u = (v & (2^M - 1)) | (x << M) | ((v >> M) << (E + M)).
    __aicore__ inline void MergeOut(uint32_t start, uint32_t len, const LocalTensor<uint16_t>& x,
                                    const LocalTensor<uint16_t>& pair) {
        const uint32_t k = params.dead, M = dt.m, E = dt.e;
        LocalTensor<uint16_t> lo = pair;
        if (dt.eb == 2) {
            LocalTensor<uint16_t> out = outQue.AllocTensor<uint16_t>();
            LocalTensor<uint16_t> sign = spanBuf.Get<uint16_t>();
            if (k > 0) AscendC::ShiftLeft(lo, lo, uint16_t(k), int32_t(len));
            AscendC::ShiftRight(sign, lo, uint16_t(M), int32_t(len));
            AscendC::ShiftLeft(sign, sign, uint16_t(E + M), int32_t(len));
            keep_low_bits(lo, M, len);
            AscendC::ShiftLeft(out, x, uint16_t(M), int32_t(len));
            AscendC::Or(out, out, lo, int32_t(len));
            AscendC::Or(out, out, sign, int32_t(len));
            FeedHash(out.ReinterpretCast<uint8_t>(), len * 2);
            outQue.EnQue(out);
        } else {
            LocalTensor<uint32_t> out = outQue.AllocTensor<uint32_t>();
            LocalTensor<uint32_t> tmp = wordBuf.Get<uint32_t>();
            interleave(out, pair, ilv, len);  // r = hi << 16 | lo
            if (k > 0) AscendC::ShiftLeft(out, out, uint32_t(k), int32_t(len));
            AscendC::ShiftRight(tmp, out, uint32_t(M), int32_t(len));
            AscendC::ShiftLeft(tmp, tmp, uint32_t(E + M), int32_t(len));
            keep_low_bits32(out, M, len);
            AscendC::Or(out.ReinterpretCast<uint16_t>(), out.ReinterpretCast<uint16_t>(),
                        tmp.ReinterpretCast<uint16_t>(), int32_t(2 * len));
            // widen x through the scratch (zeros behind it), shift into place, OR.
            LocalTensor<uint16_t> wide = wideBuf.Get<uint16_t>();
            AscendC::Adds(wide.ReinterpretCast<int16_t>(), x.ReinterpretCast<int16_t>(), int16_t(0), int32_t(len));
            interleave(tmp, wide, ilv, len);
            AscendC::ShiftLeft(tmp, tmp, uint32_t(M), int32_t(len));
            AscendC::Or(out.ReinterpretCast<uint16_t>(), out.ReinterpretCast<uint16_t>(),
                        tmp.ReinterpretCast<uint16_t>(), int32_t(2 * len));
            FeedHash(out.ReinterpretCast<uint8_t>(), len * 4);
            outQue.EnQue(out);
        }
        CopyOut(outQue, start, len * dt.eb);
    }

    // The checksum (scalar, see H32) reads the decoded tile once the vector unit has written it.
    __aicore__ inline void FeedHash(const LocalTensor<uint8_t>& bytes, uint32_t n) {
        if (tiling.checksums == 0) return;
        sync_pipes<AscendC::HardEvent::V_S>();
        hash.feed(bytes, n);
    }

    // The enqueued tile of `que` (VECOUT or VECIN -> VECOUT) out to the frame's output at `start`.
    template <class Que>
    __aicore__ inline void CopyOut(Que& que, uint32_t start, uint32_t bytes) {
        LocalTensor<uint8_t> out = que.template DeQue<uint8_t>();
        GlobalTensor<uint8_t> dst = outGm[outOff + uint64_t(start) * dt.eb];
        if (bytes % 32 == 0) {
            AscendC::DataCopy(dst, out, bytes);
        } else {
            AscendC::DataCopyExtParams copy(1, bytes, 0, 0, 0);
            AscendC::DataCopyPad(dst, out, copy);
        }
        que.FreeTensor(out);
    }

    __aicore__ inline LocalTensor<half> Halves(uint32_t which) {
        return halfBuf.Get<half>()[which * TILE];
    }

    AscendC::TPipe pipe;
    AscendC::TQue<TPosition::VECIN, BUFFER_NUM> inQue;
    AscendC::TQue<TPosition::VECOUT, BUFFER_NUM> outQue;
    AscendC::TQueBind<TPosition::VECIN, TPosition::VECOUT, BUFFER_NUM> passQue;
    AscendC::TBuf<TPosition::VECCALC> statusBuf, headerBuf, tableBuf, pairBuf, xBuf, wideBuf, levelBuf, spanBuf, offsBuf, wordBuf,
        ilvBuf, dlvBuf, halfBuf, maskBuf, groupBuf;
    LocalTensor<uint32_t> ilv;
    GlobalTensor<uint8_t> streamGm, outGm, frameGm;
    GlobalTensor<uint16_t> frameWords;
    GlobalTensor<uint64_t> offsetsGm;
    GlobalTensor<uint32_t> statusGm;
    EnecDecodeTiling tiling;
    Dtype dt;
    uint32_t frameLen = 0, elements = 0;
    uint64_t frameOff = 0, outOff = 0;
    Params params;
    Layout layout;
    H32 hash;
};

}  // namespace enec

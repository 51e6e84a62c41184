// The enec decode kernel (mirror of src/frame/ decode_frame). See enec_kernel.cpp.
#pragma once

#include "enec_common.h"
#include "enec_h32_vector.h"

namespace enec {

// ---------------------------------------------------------------------------------------------
// The decoder
// ---------------------------------------------------------------------------------------------

// The runs of values [start, start + count) of a plane (unpack_range, src/kernels/): in each
// sub-plane, value v sits at word v mod W, bit (v div W) * p, so the values are runs of
// consecutive words with one bit position each. `lead` lanes of padding line a run up with the
// output lane `done` (a multiple of 16 lanes apart: operands start 32-byte aligned).
struct RunWalk {
    const Plane* plane;
    uint32_t start, count;
    uint32_t k = 0, j = 0, bit = 0, done = 0, run = 0, lead = 0;
    __aicore__ inline RunWalk(const Plane& p, uint32_t s, uint32_t c) : plane(&p), start(s), count(c) {
        if (count == 0) k = plane->len;
        BeginSub();
    }
    __aicore__ inline bool Valid() const { return k < plane->len; }
    __aicore__ inline const SubPlane& Sub() const { return plane->subs[k]; }
    __aicore__ inline uint32_t Word() const { return Sub().offset / 2 + j; }  // in the frame's u16 words
    __aicore__ inline void Next() {
        done += run;
        j = 0;
        bit += Sub().bits;
        if (done < count) {
            SetRun();
        } else {
            k++;
            BeginSub();
        }
    }

private:
    __aicore__ inline void BeginSub() {
        if (!Valid()) return;
        j = start % Sub().words;
        bit = (start / Sub().words) * Sub().bits;
        done = 0;
        SetRun();
    }
    __aicore__ inline void SetRun() {
        run = min_u32(Sub().words - j, count - done);
        lead = done % 16;
    }
};

// A frame of at most CACHE_BYTES bytes (all frames of 2^14 elements or fewer, any dtype: a coded
// frame is no larger than the stored one, 32 + 2^14 * 4 bytes) is copied GM -> UB whole, in one
// DMA, and every plane word is read from there: each byte of the frame comes in once. The
// format places value v of a p-bit sub-plane at word v mod W, so a tile of consecutive values
// uses p bits of each of its words and the other tiles of the frame use the rest; copying runs
// of words per tile instead copies each word 16 / p times. Of a larger frame, the sub-planes of
// fewer than 16 bits that fit are cached, narrowest first; the runs of the others are copied in
// per tile (unpack_range through inQue).
constexpr uint32_t CACHE_BYTES = HEADER_BYTES + TILE * 64;

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
        pipe.InitBuffer(cacheQue, 1, CACHE_BYTES);  // the frame; stored frames' tiles
        pipe.InitBuffer(gatherBuf, RUN_WORDS * sizeof(uint16_t));
        pipe.InitBuffer(laneBytesBuf, TILE * sizeof(uint32_t));
        pipe.InitBuffer(statusBuf, 32);
        pipe.InitBuffer(headerBuf, HEADER_BYTES + 256);
        // The symbol table and, behind it, the entries of the deeper levels (+ the lane past a full
        // level): one Gather source for every entry a lane can end up with (DecodeRanked).
        pipe.InitBuffer(tableBuf, (TABLE_SLOTS + MAX_LEVELS * TILE + 16) * sizeof(uint16_t));
        pipe.InitBuffer(pairBuf, 2 * TILE * sizeof(uint16_t));   // residual lo | hi
        pipe.InitBuffer(xBuf, TILE * sizeof(uint16_t));          // codes, then exponents
        pipe.InitBuffer(wideBuf, 2 * TILE * sizeof(uint16_t));   // widening scratch | zeros
        pipe.InitBuffer(spanBuf, RUN_WORDS * sizeof(uint16_t));
        pipe.InitBuffer(offsBuf, TILE * sizeof(uint32_t));
        pipe.InitBuffer(wordBuf, TILE * sizeof(uint32_t));
        pipe.InitBuffer(ilvBuf, 2 * TILE * sizeof(uint32_t));
        pipe.InitBuffer(flagBuf, (MAX_GROUPS + 16) * sizeof(uint16_t));
        // escape / flag lanes, 0 or 1, each level behind ESC_LEAD zero lanes (Ranks)
        pipe.InitBuffer(escBuf, MAX_LEVELS * (ESC_LEAD + TILE) * sizeof(int16_t));
        pipe.InitBuffer(rankBuf, MAX_LEVELS * TILE * sizeof(int16_t));    // their exclusive prefix sums
        pipe.InitBuffer(scanBuf, 2 * (Scan::LEAD + TILE) * sizeof(int16_t));
        pipe.InitBuffer(iotaBuf, TILE * sizeof(int32_t));
        pipe.InitBuffer(modBuf, 2 * TILE * sizeof(int32_t));
        if (t.checksums != 0) {
            pipe.InitBuffer(h32Buf, H32Vector::UB_BYTES);
            pipe.InitBuffer(h32BlockBuf, H32Vector::BLOCK_TABLE_BYTES);
            hash.setup(h32Buf.Get<int32_t>());
            hash.blockwise(h32BlockBuf.Get<uint32_t>());
        }

        ilv = ilvBuf.Get<uint32_t>();
        build_offsets(ilv, modBuf.Get<uint32_t>());  // modBuf: scratch (decode needs no dlv)
        LocalTensor<int32_t> laneBytes = laneBytesBuf.Get<int32_t>();
        AscendC::CreateVecIndex(laneBytes, int32_t(0), TILE);
        AscendC::ShiftLeft(laneBytes, laneBytes, int32_t(1), int32_t(TILE));  // 2 * q: u16 lane q
        LocalTensor<int16_t> sb = scanBuf.Get<int16_t>();
        scan.init(sb, sb[Scan::LEAD + TILE], laneBytesBuf.Get<uint32_t>());
        AscendC::CreateVecIndex(iotaBuf.Get<int32_t>(), int32_t(0), TILE);
        LocalTensor<uint16_t> wide = wideBuf.Get<uint16_t>();
        AscendC::Duplicate(wide[TILE], uint16_t(0), int32_t(TILE));
        // Levels' lanes past their entries are read (and masked off) by Expand: small values.
        AscendC::Duplicate(tableBuf.Get<uint16_t>(), uint16_t(0), int32_t(TABLE_SLOTS + MAX_LEVELS * TILE + 16));
        AscendC::Duplicate(escBuf.Get<int16_t>(), int16_t(0), int32_t(MAX_LEVELS * (ESC_LEAD + TILE)));
    }

    __aicore__ inline void Process() {
        for (uint32_t f = uint32_t(AscendC::GetBlockIdx()); f < tiling.frameCount;
             f += uint32_t(AscendC::GetBlockNum())) {
            store_word(statusGm, f, statusBuf.Get<uint32_t>(), DecodeFrame(f));
        }
    }

private:
    // decode_frame (src/frame/)
    __aicore__ inline uint32_t DecodeFrame(uint32_t f) {
        frameOff = offsetsGm.GetValue(f);
        uint64_t firstElement = uint64_t(f) << tiling.frameLog2;
        uint64_t left = tiling.elementCount - firstElement;
        elements = uint32_t(left < frameLen ? left : frameLen);
        outOff = firstElement * dt.eb;
        if (frameOff % 32 != 0 || frameOff + HEADER_BYTES > tiling.streamBytes) return ENEC_FRAME_TRUNCATED;

        LocalTensor<uint8_t> header = headerBuf.Get<uint8_t>();
        AscendC::DataCopy(header, streamGm[frameOff], HEADER_BYTES);
        uint32_t frameBytes = 0, checksum = 0;
        uint32_t st = parse_frame_header(header, dt, elements, params, frameBytes, checksum);
        if (st != ENEC_FRAME_OK) return st;
        layout = frame_layout(dt, elements, params);
        if (layout.bytes != frameBytes) return ENEC_FRAME_CORRUPT;
        if (frameOff + frameBytes > tiling.streamBytes) return ENEC_FRAME_TRUNCATED;
        if (tiling.checksums == 0 && checksum != 0) return ENEC_FRAME_CORRUPT;
        frameGm = streamGm[frameOff];
        frameWords.SetGlobalBuffer((__gm__ uint16_t*)frameGm.GetPhyAddr(), frameBytes / 2);
        if (tiling.checksums != 0) hash.init();

        if (params.coding == CODING_STORED) {
            DecodeStored();
        } else {
            cache = cacheQue.AllocTensor<uint16_t>();
            FillCache(frameBytes);
            cacheQue.EnQue(cache);
            cache = cacheQue.DeQue<uint16_t>();
            st = params.coding == CODING_RANKED ? DecodeRanked() : DecodeGroups();
            cacheQue.FreeTensor(cache);
            cached = false;
        }
        if (st != ENEC_FRAME_OK) return st;
        if (tiling.checksums != 0 && hash.finish() != checksum) return ENEC_FRAME_CHECKSUM_MISMATCH;
        return ENEC_FRAME_OK;
    }

    // The cache (words 16.. of `cache`; the lead lanes of a run may read the 16 below): the whole
    // frame if it fits (cache word = frame word; the header is in headerBuf), else sub-planes of
    // fewer than 16 bits, narrowest first (the most reads saved per byte), as many as fit.
    // cacheAt[plane][sub] = the cache word of the sub-plane's word 0, or NOT_CACHED.
    __aicore__ inline void FillCache(uint32_t frameBytes) {
        cached = frameBytes <= CACHE_BYTES;
        uint32_t used = HEADER_BYTES / 2, visited = 0;
        if (cached) AscendC::DataCopy(cache[used], frameWords[used], (frameBytes - HEADER_BYTES) / 2);
        for (uint32_t i = 0; i <= MAX_LEVELS + 1; i++)
            for (uint32_t k = 0; k < 5; k++) cacheAt[i][k] = NOT_CACHED;
        // Cached whole: one pass sets every sub-plane. Else passes for 1, 2, 4, 8 bits (a 16-bit
        // sub-plane's words are each read once anyway).
        for (uint32_t bits = cached ? 16 : 1; bits <= (cached ? 16u : 8u); bits <<= 1) {
            for (uint32_t i = 0; i <= layout.planeCount; i++) {
                const Plane& plane = i == 0 ? layout.residual : layout.planes[i - 1];
                for (uint32_t k = 0; k < plane.len; k++) {
                    const SubPlane& sub = plane.subs[k];
                    visited++;
                    if (cached) {
                        cacheAt[i][k] = sub.offset / 2;
                        continue;
                    }
                    if (sub.bits != bits) continue;
                    uint32_t words = pad32(2 * sub.words) / 2;
                    if (words == 0 || 2 * (used + words) > CACHE_BYTES) continue;
                    AscendC::DataCopy(cache[used], frameWords[sub.offset / 2], words);
                    cacheAt[i][k] = used;
                    used += words;
                }
            }
        }
        ENEC_SCALAR_OPS(6 * visited);
    }

    // Stored frames move GM -> UB (MTE2, a VECIN queue) -> UB (V: the checksum reads the tile,
    // one Adds copies it into a VECOUT tile) -> GM (MTE3): the queues order every pipe pair.
    __aicore__ inline void DecodeStored() {
        for (uint32_t s = 0; s < elements; s += TILE) {
            uint32_t len = min_u32(TILE, elements - s);
            uint32_t bytes = len * dt.eb;
            LocalTensor<uint8_t> in = cacheQue.AllocTensor<uint8_t>();
            CopyBytesIn(in, frameGm[HEADER_BYTES + s * dt.eb], bytes);
            cacheQue.EnQue(in);
            in = cacheQue.DeQue<uint8_t>();
            FeedHash(in, bytes);
            LocalTensor<int16_t> out = outQue.AllocTensor<int16_t>();
            AscendC::Adds(out, in.ReinterpretCast<int16_t>(), int16_t(0), int32_t(pad32(bytes) / 2));
            cacheQue.FreeTensor(in);
            outQue.EnQue(out);
            CopyOut(outQue, s, bytes);
        }
    }

    // read_ranked (src/frame/). Per tile: level-1 codes by vector unpack; escape lanes and their
    // ranks by vector prefix sums (one scalar read of the count per level); the compacted entries
    // of the deeper levels unpacked by vector; symbols looked up with Gather; escaped entries
    // replaced by the next level's entry at their rank (Expand); merged with the residual.
    __aicore__ inline uint32_t DecodeRanked() {
        uint32_t s[MAX_LEVELS + 1];
        rank_starts(params, s);
        // Symbol table: T bytes at offset 32, widened to u16 entries (scalar, at most 256).
        LocalTensor<uint8_t> raw = cached ? cache.ReinterpretCast<uint8_t>()[layout.tableAt]
                                          : headerBuf.Get<uint8_t>()[HEADER_BYTES];
        LocalTensor<uint16_t> table = tableBuf.Get<uint16_t>();
        AscendC::Duplicate(table, uint16_t(0), int32_t(TABLE_SLOTS));
        if (layout.tableLen > 0) {
            if (!cached) AscendC::DataCopy(raw, frameGm[layout.tableAt], pad32(layout.tableLen));
            if (dt.e < 8) {  // entries must fit E bits (8-bit exponents: every byte does)
                for (uint32_t r = 0; r < layout.tableLen; r++)
                    if ((uint32_t(raw.GetValue(r)) >> dt.e) != 0) return ENEC_FRAME_CORRUPT;
            }
            // Bytes to u16 entries (widen_bytes).
            if (!cached) {  // the table came in through headerBuf (a TBuf: no queue event)
                sync_pipes<AscendC::HardEvent::MTE2_V>();
            }
            // Entries from tableLen to the 32-byte padding hold padding bytes: no lane indexes
            // them (escape lanes take the next level's entry instead).
            widen_bytes(table, raw.ReinterpretCast<uint16_t>(), pairBuf.Get<uint16_t>(), ilv,
                        pad32(layout.tableLen) / 2);
        }
        uint32_t levels = params.levels;
        uint32_t cursor[MAX_LEVELS + 1] = {0, 0, 0, 0};
        LocalTensor<uint16_t> pair = pairBuf.Get<uint16_t>();
        LocalTensor<uint16_t> codes = xBuf.Get<uint16_t>();  // level 1, then exponents
        LocalTensor<uint16_t> lvl = Levels();
        for (uint32_t start = 0; start < elements; start += TILE) {
            uint32_t len = min_u32(TILE, elements - start);
            unpack_range(layout.residual, start, len, pair, pair[TILE]);
            unpack_range(layout.planes[0], start, len, codes, codes);
            // buf[j]: entries of level j + 1 in this tile (j = levels: the exponent level).
            LocalTensor<uint16_t> buf[MAX_LEVELS + 1];
            uint32_t n[MAX_LEVELS + 1];
            buf[0] = codes;
            n[0] = len;
            for (uint32_t j = 0; j < levels; j++) {
                // escape lanes: code == 2^w - 1  <=>  (code + 1) >> w == 1 (codes are < 2^w)
                n[j + 1] = 0;
                if (n[j] > 0) {
                    LocalTensor<int16_t> esc = Escapes(j);
                    AscendC::Adds(esc, buf[j].ReinterpretCast<int16_t>(), int16_t(1), int32_t(n[j]));
                    AscendC::ShiftRight(esc.ReinterpretCast<uint16_t>(), esc.ReinterpretCast<uint16_t>(),
                                        uint16_t(params.widths[j]), int32_t(n[j]));
                    n[j + 1] = Ranks(j, n[j]);
                }
                buf[j + 1] = lvl[j * TILE];
                const Plane& next = layout.planes[j + 1];
                if (cursor[j + 1] + n[j + 1] > next.count) return ENEC_FRAME_CORRUPT;  // reader overran
                if (n[j + 1] > 0) unpack_range(next, cursor[j + 1], n[j + 1], buf[j + 1], buf[j + 1]);
                cursor[j + 1] += n[j + 1];
            }
            // Bottom-up, in entries of tableBuf: a lane of level j stands for entry s[j] + code, an
            // escape lane (code K = 2^w - 1) for the entry of level j + 1 at its rank (the last
            // level's entries are exponents: entry LEVELS_AT + (levels - 1) * TILE + rank). Level
            // j's lanes become u = entry - s[j] (code + (entry - s[j] - K) on escape lanes), so
            // one lookup of level 0 reads every exponent.
            for (uint32_t jj = levels; jj > 0; jj--) {
                uint32_t j = jj - 1;
                if (n[j] == 0 || n[j + 1] == 0) continue;
                const int32_t k = int32_t((1u << params.widths[j]) - 1);
                LocalTensor<int16_t> got = spanBuf.Get<int16_t>();
                if (jj == levels) {
                    AscendC::Adds(got, RanksOf(j), int16_t(int32_t(LEVELS_AT + j * TILE) - int32_t(s[j]) - k),
                                  int32_t(n[j]));
                } else {
                    lookup(got.ReinterpretCast<uint16_t>(), RanksOf(j).ReinterpretCast<uint16_t>(), n[j], 0,
                           buf[j + 1], wideBuf.Get<uint16_t>(), offsBuf.Get<uint32_t>(), ilv);
                    AscendC::Adds(got, got, int16_t(int32_t(s[j + 1]) - int32_t(s[j]) - k), int32_t(n[j]));
                }
                LocalTensor<int16_t> mask = modBuf.Get<int16_t>();
                AscendC::Sub(mask, wideBuf.Get<int16_t>()[TILE], Escapes(j), int32_t(n[j]));
                AscendC::And(got.ReinterpretCast<uint16_t>(), got.ReinterpretCast<uint16_t>(),
                             mask.ReinterpretCast<uint16_t>(), int32_t(n[j]));
                AscendC::Add(buf[j].ReinterpretCast<int16_t>(), buf[j].ReinterpretCast<int16_t>(), got, int32_t(n[j]));
            }
            if (levels > 0)
                lookup(codes, codes, len, s[0], table, wideBuf.Get<uint16_t>(), offsBuf.Get<uint32_t>(), ilv);
            MergeOut(start, len, codes, pair);
        }
        for (uint32_t j = 1; j <= levels; j++)
            if (cursor[j] != layout.planes[j].count) return ENEC_FRAME_CORRUPT;  // escape counts differ
        return ENEC_FRAME_OK;
    }

    // read_groups (src/frame/). Flags unpacked once per frame (vector) and counted by prefix
    // sums. Per tile: low bits by vector unpack; each position's flag gathered from its group
    // (t = i mod groups, offsets reduced on the vector unit); the high bits of flagged positions (a
    // compacted plane, unpacked by vector) expanded into place by prefix sums and a Gather; then
    // groups_inverse and merge as vector ops.
    __aicore__ inline uint32_t DecodeGroups() {
        uint32_t groups = (elements + 15) / 16;
        LocalTensor<uint16_t> flags = flagBuf.Get<uint16_t>();
        uint32_t count = 0;
        for (uint32_t t0 = 0; t0 < groups; t0 += TILE) {
            uint32_t m = min_u32(TILE, groups - t0);
            unpack_range(layout.planes[0], t0, m, flags[t0], flags[t0]);
            LocalTensor<int16_t> e = flags[t0].ReinterpretCast<int16_t>();
            LocalTensor<int16_t> incl = scan.inclusive(e, m);
            AscendC::Sub(ChunkRanks(t0 / TILE), incl, e, int32_t(m));
            chunkTotal[t0 / TILE] = Total(incl, m);
            count += chunkTotal[t0 / TILE];
        }
        if (count != params.flagged) return ENEC_FRAME_CORRUPT;  // flag count differs from the header's
        const uint32_t low = params.low;
        LocalTensor<uint16_t> pair = pairBuf.Get<uint16_t>();
        LocalTensor<uint16_t> y = xBuf.Get<uint16_t>();
        LocalTensor<uint16_t> high = Levels();
        uint32_t highCursor = 0;
        for (uint32_t start = 0; start < elements; start += TILE) {
            uint32_t len = min_u32(TILE, elements - start);
            unpack_range(layout.residual, start, len, pair, pair[TILE]);
            unpack_range(layout.planes[1], start, len, y, y);
            if (params.flagged != 0) {
                // A tile whose groups are one whole chunk of the flags (every tile of a frame of
                // 2^14 or more elements: groups is then a multiple of TILE) takes the chunk's flags
                // and ranks as they are; any other gathers its flags and counts them.
                const uint32_t t0 = start % groups;
                const bool chunk = t0 % TILE == 0 && len == min_u32(TILE, groups - t0);
                LocalTensor<int16_t> esc = Escapes(0), ranks = RanksOf(0);
                uint32_t n = 0;
                if (chunk) {
                    esc = flags[t0].ReinterpretCast<int16_t>();
                    ranks = ChunkRanks(t0 / TILE);
                    n = chunkTotal[t0 / TILE];
                } else {
                    GroupOffsets(t0, len, groups);
                    AscendC::Gather(esc.ReinterpretCast<uint16_t>(), flags, modBuf.Get<uint32_t>(), uint32_t(0), len);
                    n = Ranks(0, len);
                }
                if (n > 0) {
                    if (highCursor + n > layout.planes[2].count) return ENEC_FRAME_CORRUPT;
                    unpack_range(layout.planes[2], highCursor, n, high, high);
                    Expand(y, esc, ranks, len, high, low);
                    highCursor += n;
                }
            }
            groups_inverse(y, len, params.base, params.width, dt.e);
            MergeOut(start, len, y, pair);
        }
        return ENEC_FRAME_OK;
    }

    // The escape (or flag) lanes of level j, and their exclusive prefix sums.
    static constexpr uint32_t ESC_LEAD = 16;
    __aicore__ inline LocalTensor<int16_t> EscapesLed(uint32_t j) {
        return escBuf.Get<int16_t>()[j * (ESC_LEAD + TILE)];
    }
    __aicore__ inline LocalTensor<int16_t> Escapes(uint32_t j) { return EscapesLed(j)[ESC_LEAD]; }
    __aicore__ inline LocalTensor<int16_t> RanksOf(uint32_t j) { return rankBuf.Get<int16_t>()[j * TILE]; }

    // The lanes of the ranked levels and the groups high bits, behind the symbol table.
    static constexpr uint32_t LEVELS_AT = TABLE_SLOTS;
    __aicore__ inline LocalTensor<uint16_t> Levels() { return tableBuf.Get<uint16_t>()[LEVELS_AT]; }

    // The exclusive prefix sums of chunk c (flags [c * TILE, (c + 1) * TILE)) of the group flags,
    // kept for the frame in lanes DecodeGroups leaves alone (levels 1 and 2 of rankBuf and escBuf:
    // MAX_GROUPS / TILE = 4 chunks).
    __aicore__ inline LocalTensor<int16_t> ChunkRanks(uint32_t c) {
        return c < 2 ? RanksOf(1 + c) : Escapes(c - 1);
    }
    static_assert(MAX_GROUPS <= 2 * (MAX_LEVELS - 1) * TILE, "ChunkRanks holds every chunk of the flags");

    // Prefix sums of Escapes(j)[0..n): the exclusive ones into RanksOf(j); returns the total.
    __aicore__ inline uint32_t Ranks(uint32_t j, uint32_t n) {
        LocalTensor<int16_t> incl = scan.inclusive_led(EscapesLed(j), ESC_LEAD, n);
        AscendC::Sub(RanksOf(j), incl, Escapes(j), int32_t(n));
        return Total(incl, n);
    }

    // Lane n - 1 of inclusive prefix sums: the one scalar read a scan needs.
    __aicore__ inline uint32_t Total(const LocalTensor<int16_t>& incl, uint32_t n) {
        return uint32_t(incl.GetValue(n - 1));
    }

    // For the lanes q < n with esc[q] = 1: the next entry of `next` (at ranks[q]), shifted left
    // by `shift`, is ORed into v[q] (the groups high bits). A Gather by rank, then a mask from the
    // escape lanes (0 - e: all ones or zero).
    __aicore__ inline void Expand(const LocalTensor<uint16_t>& v, const LocalTensor<int16_t>& esc,
                                  const LocalTensor<int16_t>& ranks, uint32_t n, const LocalTensor<uint16_t>& next,
                                  uint32_t shift) {
        LocalTensor<uint16_t> got = spanBuf.Get<uint16_t>();
        LocalTensor<int16_t> mask = modBuf.Get<int16_t>();
        LocalTensor<int16_t> zeros = wideBuf.Get<int16_t>()[TILE];
        lookup(got, ranks.ReinterpretCast<uint16_t>(), n, 0, next, wideBuf.Get<uint16_t>(),
               offsBuf.Get<uint32_t>(), ilv);
        AscendC::Sub(mask, zeros, esc, int32_t(n));
        LocalTensor<uint16_t> m = mask.ReinterpretCast<uint16_t>();
        if (shift > 0) AscendC::ShiftLeft(got, got, uint16_t(shift), int32_t(n));
        AscendC::And(got, got, m, int32_t(n));
        AscendC::Or(v, v, got, int32_t(n));
    }

    // modBuf (u32 lanes) = byte offsets 2 * ((t0 + q) mod groups), q < n, for a Gather from the
    // flags: t0 + q < groups + TILE, reduced by conditional subtraction of groups * 2^k, k
    // descending (d = o - c; o = d + (c & (d >> 31))). A2 has no vector integer division.
    __aicore__ inline void GroupOffsets(uint32_t t0, uint32_t n, uint32_t groups) {
        LocalTensor<int32_t> o = modBuf.Get<int32_t>(), c = modBuf.Get<int32_t>()[TILE];
        AscendC::Adds(o, iotaBuf.Get<int32_t>(), int32_t(t0), int32_t(n));
        uint32_t k = 0;
        while ((groups << (k + 1)) <= t0 + n - 1) k++;
        for (uint32_t kk = k + 1; kk > 0; kk--) {
            int32_t step = int32_t(groups << (kk - 1));
            if (uint32_t(step) > t0 + n - 1) continue;
            AscendC::Adds(o, o, int32_t(-step), int32_t(n));
            AscendC::ShiftRight(c, o, int32_t(31), int32_t(n));
            LocalTensor<int32_t> d = wordBuf.Get<int32_t>();
            AscendC::Duplicate(d, step, int32_t(n));
            AscendC::And(c.ReinterpretCast<uint16_t>(), c.ReinterpretCast<uint16_t>(), d.ReinterpretCast<uint16_t>(),
                         int32_t(2 * n));
            AscendC::Add(o, o, c, int32_t(n));
        }
        AscendC::ShiftLeft(o, o, int32_t(1), int32_t(n));
    }

    // unpack_range (src/kernels/): values [start, start + count) of `plane` into lo (bits 0..16)
    // and hi (bits 16..24, planes wider than 16 bits only). A run of words of a cached sub-plane
    // is read where it lies if it starts 32-byte aligned with no lead lanes, else gathered from
    // the cache (one Gather: lane q from byte 2 * (word - lead + q); the lead lanes then zeroed);
    // the runs of the others are copied in through inQue (two buffers: run k + 1 comes in while
    // run k is computed).
    __aicore__ inline void unpack_range(const Plane& plane, uint32_t start, uint32_t count,
                                        const LocalTensor<uint16_t>& lo, const LocalTensor<uint16_t>& hi) {
        // A first sub-plane (shift 0) whose one run covers all `count` lanes, a multiple of 128 (the
        // lanes ZeroFields would clear), writes lo instead of ORing into zeros.
        const SubPlane& first = plane.subs[0];
        const bool assign =
            plane.len > 0 && first.words > 0 && count % 128 == 0 && first.words - start % first.words >= count;
        ZeroFields(plane, count, lo, hi, !assign);
        const uint32_t i = &plane == &layout.residual ? 0 : uint32_t(&plane - layout.planes) + 1;
        for (RunWalk w(plane, start, count); w.Valid(); w.Next()) {
            if (cacheAt[i][w.k] != NOT_CACHED) {
                LocalTensor<uint16_t> words = gatherBuf.Get<uint16_t>();
                uint32_t word = cacheAt[i][w.k] + w.j;
                if (w.lead == 0 && word % 16 == 0) {  // 32-byte aligned: an operand as it is
                    ExtractRun(w, cache[word], words, lo, hi, assign && w.k == 0);
                    continue;
                }
                AscendC::Gather(words, cache, laneBytesBuf.Get<uint32_t>(), 2 * (word - w.lead), w.lead + w.run);
                if (w.lead > 0) AscendC::Duplicate(words, uint16_t(0), int32_t(w.lead));
                ExtractRun(w, words, words, lo, hi, assign && w.k == 0);
                continue;
            }
            LocalTensor<uint16_t> words = inQue.AllocTensor<uint16_t>();
            CopyWordsIn(words, w.Word(), w.run, w.lead);
            inQue.EnQue(words);
            words = inQue.DeQue<uint16_t>();
            ExtractRun(w, words, words, lo, hi, assign && w.k == 0);
            inQue.FreeTensor(words);
        }
    }

    __aicore__ inline void ZeroFields(const Plane& plane, uint32_t count, const LocalTensor<uint16_t>& lo,
                                      const LocalTensor<uint16_t>& hi, bool zeroLo = true) {
        uint32_t zeroed = round_up(count, 128);
        if (zeroLo) AscendC::Duplicate(lo, uint16_t(0), int32_t(zeroed));
        if (plane.width > 16) AscendC::Duplicate(hi, uint16_t(0), int32_t(zeroed));
    }

    // One run of words (at src[lead ..], lined up with lo[done]): its field extracted with two
    // shifts and ORed into place, all uint16 vector ops. `words` is scratch (it may be src; src
    // is not written otherwise); shifts by 0 are left out. `assign` (a run of all the lanes, no
    // lead, shift 0): the field is written to lo, not ORed in.
    __aicore__ inline void ExtractRun(const RunWalk& w, const LocalTensor<uint16_t>& src,
                                      const LocalTensor<uint16_t>& words, const LocalTensor<uint16_t>& lo,
                                      const LocalTensor<uint16_t>& hi, bool assign) {
        const SubPlane& sub = w.Sub();
        uint32_t n = w.lead + w.run;
        LocalTensor<uint16_t> cur = src;
        if (assign) {  // bits < 16 whenever the left shift is needed
            if (w.bit + sub.bits < 16) {
                AscendC::ShiftLeft(words, cur, uint16_t(16 - w.bit - sub.bits), int32_t(n));
                cur = words;
            }
            if (sub.bits < 16) {
                AscendC::ShiftRight(lo, cur, uint16_t(16 - sub.bits), int32_t(n));
            } else {
                AscendC::Adds(lo.ReinterpretCast<int16_t>(), cur.ReinterpretCast<int16_t>(), int16_t(0), int32_t(n));
            }
            return;
        }
        // field = (w >> bit) & (2^p - 1)
        if (w.bit + sub.bits < 16) {
            AscendC::ShiftLeft(words, cur, uint16_t(16 - w.bit - sub.bits), int32_t(n));
            cur = words;
        }
        if (sub.bits < 16) {
            AscendC::ShiftRight(words, cur, uint16_t(16 - sub.bits), int32_t(n));
            cur = words;
        }
        uint32_t o = sub.shift;
        uint32_t at = w.done - w.lead;
        if (o + sub.bits <= 16) {
            if (o > 0) {
                AscendC::ShiftLeft(words, cur, uint16_t(o), int32_t(n));
                cur = words;
            }
            AscendC::Or(lo[at], lo[at], cur, int32_t(n));
        } else if (o >= 16) {
            if (o > 16) {
                AscendC::ShiftLeft(words, cur, uint16_t(o - 16), int32_t(n));
                cur = words;
            }
            AscendC::Or(hi[at], hi[at], cur, int32_t(n));
        } else {  // the field straddles bit 16
            LocalTensor<uint16_t> span = spanBuf.Get<uint16_t>();
            AscendC::ShiftLeft(span, cur, uint16_t(o), int32_t(n));
            AscendC::Or(lo[at], lo[at], span, int32_t(n));
            AscendC::ShiftRight(span, cur, uint16_t(16 - o), int32_t(n));
            AscendC::Or(hi[at], hi[at], span, int32_t(n));
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

    // groups_inverse (src/kernels/): x = (b - sext_n(y)) mod 2^E, int16 lanes, no overflow:
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

    // merge (src/kernels/ Fields::merge) of exponents x and residuals (lo, hi) into the output
    // tile, then out to GM. With v = r << k: u = (v & (2^M - 1)) | (x << M) | ((v >> M) << (E + M)).
    // bf16 / fp16 / FP8 elements are merged one per u16 lane (FP8 into wordBuf, then narrowed to
    // bytes: NarrowBytes).
    __aicore__ inline void MergeOut(uint32_t start, uint32_t len, const LocalTensor<uint16_t>& x,
                                    const LocalTensor<uint16_t>& pair) {
        const uint32_t k = params.dead, M = dt.m, E = dt.e;
        LocalTensor<uint16_t> lo = pair;
        if (dt.eb <= 2) {
            LocalTensor<uint16_t> out = outQue.AllocTensor<uint16_t>();
            LocalTensor<uint16_t> u = dt.eb == 2 ? out : wordBuf.Get<uint16_t>();
            LocalTensor<uint16_t> sign = spanBuf.Get<uint16_t>();
            if (k > 0) AscendC::ShiftLeft(lo, lo, uint16_t(k), int32_t(len));
            AscendC::ShiftRight(sign, lo, uint16_t(M), int32_t(len));
            AscendC::ShiftLeft(sign, sign, uint16_t(E + M), int32_t(len));
            keep_low_bits(lo, M, len);
            AscendC::ShiftLeft(u, x, uint16_t(M), int32_t(len));
            AscendC::Or(u, u, lo, int32_t(len));
            AscendC::Or(u, u, sign, int32_t(len));
            if (dt.eb == 1) NarrowBytes(out, u, len);
            FeedHash(out.ReinterpretCast<uint8_t>(), len * dt.eb);
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

    // FP8 elements from u16 lanes (each < 256) to bytes: word j of `out` = u[2 j] | u[2 j + 1] << 8,
    // j < ceil(len / 2) (for odd len the last word's high byte is never copied out or hashed).
    // Two Gathers pick the even and the odd lanes (byte offsets 4 j and 4 j + 2, built in offsBuf),
    // a shift and an Or pair them.
    __aicore__ inline void NarrowBytes(const LocalTensor<uint16_t>& out, const LocalTensor<uint16_t>& u, uint32_t len) {
        const uint32_t words = (len + 1) / 2;
        LocalTensor<int32_t> even = offsBuf.Get<int32_t>(), odd = even[TILE / 2];
        LocalTensor<uint16_t> high = spanBuf.Get<uint16_t>();
        AscendC::CreateVecIndex(even, int32_t(0), words);
        AscendC::ShiftLeft(even, even, int32_t(2), int32_t(words));
        AscendC::Adds(odd, even, int32_t(2), int32_t(words));
        AscendC::Gather(out, u, even.ReinterpretCast<uint32_t>(), uint32_t(0), words);
        AscendC::Gather(high, u, odd.ReinterpretCast<uint32_t>(), uint32_t(0), words);
        AscendC::ShiftLeft(high, high, uint16_t(8), int32_t(words));
        AscendC::Or(out, out, high, int32_t(words));
    }

    // The checksum (H32Vector) of a decoded tile, read by the vector unit where it was written.
    __aicore__ inline void FeedHash(const LocalTensor<uint8_t>& bytes, uint32_t n) {
        if (tiling.checksums != 0) hash.feed(bytes, n);
    }

    // The enqueued tile of `que` (VECOUT) out to the frame's output at `start`.
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

    AscendC::TPipe pipe;
    AscendC::TQue<TPosition::VECIN, BUFFER_NUM> inQue;
    AscendC::TQue<TPosition::VECOUT, BUFFER_NUM> outQue;
    AscendC::TQue<TPosition::VECIN, 1> cacheQue;  // the frame (CACHE_BYTES), or a stored frame's tile
    AscendC::TBuf<TPosition::VECCALC> tableBuf, pairBuf, xBuf, wideBuf, spanBuf, offsBuf, wordBuf, ilvBuf,
        flagBuf, escBuf, rankBuf, scanBuf, iotaBuf, modBuf, h32Buf, h32BlockBuf, gatherBuf,
        laneBytesBuf;
    // Filled by DataCopy (GM -> VECIN) / copied out by DataCopyPad (VECOUT -> GM).
    AscendC::TBuf<TPosition::VECIN> headerBuf;
    AscendC::TBuf<TPosition::VECOUT> statusBuf;
    Scan scan;
    LocalTensor<uint32_t> ilv;
    GlobalTensor<uint8_t> streamGm, outGm, frameGm;
    GlobalTensor<uint16_t> frameWords;
    LocalTensor<uint16_t> cache;  // the cached words of the frame being decoded
    bool cached = false;          // the whole frame is in the cache
    static constexpr uint32_t NOT_CACHED = 0xFFFFFFFFu;
    uint32_t cacheAt[MAX_LEVELS + 2][5];
    uint32_t chunkTotal[MAX_GROUPS / TILE];  // flags set in chunk c (ChunkRanks)
    GlobalTensor<uint64_t> offsetsGm;
    GlobalTensor<uint32_t> statusGm;
    EnecDecodeTiling tiling;
    Dtype dt;
    uint32_t frameLen = 0, elements = 0;
    uint64_t frameOff = 0, outOff = 0;
    Params params;
    Layout layout;
    H32Vector hash;
};

}  // namespace enec

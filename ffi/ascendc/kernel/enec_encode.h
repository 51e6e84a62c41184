// The enec encode kernel (mirror of src/frame.rs encode_frame) and the frame concatenation
// kernel. See enec_kernel.cpp for the overview.
//
// Per frame, three passes over the input, TILE elements at a time:
//   A. statistics (FrameStats::gather): exponents split off by vector ops; the histogram and the
//      per-group exponent ranges are scalar (a scatter); the mantissa OR is a vector OR
//      accumulation; h32 of the input (scalar).
//   then the parameter choice (choose_ranked / the groups search / stored), scalar, exactly as
//   FORMAT.md section 7 and src/frame.rs: a few hundred layout-size evaluations per frame;
//   B. split into planes: residuals and element-indexed codes by vector ops, staged as unpacked
//      u16 values in this core's GM workspace; the compacted planes (escape levels, exponent
//      level, high bits of flagged groups) gathered by walking a Compare mask (scalar: A2 has no
//      vector compress for a data-dependent mask in this kernel) and appended to the workspace;
//   C. pack every plane from the workspace with hierarchical halving (pack_halving: vector
//      ShiftLeft + Or on uint16) word chunk by word chunk, straight into the frame's slot in GM.
#pragma once

#include "enec_common.h"

namespace enec {

// Workspace stages (unpacked u16 values of one plane each).
enum Stage : uint32_t { ST_RES_LO = 0, ST_RES_HI = 1, ST_P0 = 2, ST_P1 = 3, ST_P2 = 4, ST_P3 = 5 };
constexpr uint32_t GROUPS_BASES = 12;

class KernelEncode {
public:
    __aicore__ inline KernelEncode() {}

    __aicore__ inline void Init(GM_ADDR input, GM_ADDR slots, GM_ADDR sizes, GM_ADDR streamHeader,
                                GM_ADDR workspace, const EnecEncodeTiling& t) {
        tiling = t;
        dt = dtype_of(t.dtype);
        frameLen = 1u << t.frameLog2;
        stageElems = frameLen + 16;
        inGm.SetGlobalBuffer((__gm__ uint8_t*)input, t.elementCount * dt.eb);
        slotsGm.SetGlobalBuffer((__gm__ uint8_t*)slots, uint64_t(t.frameCount) * t.slotBytes);
        sizesGm.SetGlobalBuffer((__gm__ uint32_t*)sizes, t.frameCount);
        headerGm.SetGlobalBuffer((__gm__ uint8_t*)streamHeader, HEADER_BYTES);
        wsGm.SetGlobalBuffer((__gm__ uint16_t*)(workspace + uint64_t(AscendC::GetBlockIdx()) * t.workspaceBytesPerCore),
                             uint64_t(ENEC_ENCODE_STAGES) * stageElems);

        pipe.InitBuffer(inQue, BUFFER_NUM, TILE * sizeof(uint32_t));
        pipe.InitBuffer(outQue, BUFFER_NUM, TILE * sizeof(uint16_t));
        pipe.InitBuffer(pairBuf, 2 * TILE * sizeof(uint16_t));   // residual lo | hi
        pipe.InitBuffer(xBuf, TILE * sizeof(uint16_t));          // exponents, then groups y
        pipe.InitBuffer(rankBuf, TILE * sizeof(uint16_t));
        pipe.InitBuffer(wideBuf, 2 * TILE * sizeof(uint16_t));   // widening scratch | zeros
        pipe.InitBuffer(wordBuf, 2 * TILE * sizeof(uint32_t));   // two u32 temporaries
        pipe.InitBuffer(offsBuf, TILE * sizeof(uint32_t));
        pipe.InitBuffer(ilvBuf, 2 * TILE * sizeof(uint32_t));
        pipe.InitBuffer(dlvBuf, 2 * TILE * sizeof(uint32_t));
        pipe.InitBuffer(halfBuf, 2 * TILE * sizeof(half));
        pipe.InitBuffer(maskBuf, TILE / 8);
        pipe.InitBuffer(accBuf, 2 * TILE * sizeof(uint16_t));    // mantissa OR accumulator
        pipe.InitBuffer(statBuf, (256 + 260 + 12 * 9) * sizeof(uint32_t));  // histogram, covered, unflagged
        pipe.InitBuffer(rankTabBuf, TABLE_SLOTS * sizeof(uint16_t));
        pipe.InitBuffer(byteBuf, 256 + 256 + HEADER_BYTES);      // order | table out | header
        pipe.InitBuffer(groupBuf, 3 * (MAX_GROUPS + 16) * sizeof(uint16_t));
        pipe.InitBuffer(packTmpBuf, TILE * sizeof(uint16_t));
        pipe.InitBuffer(compactBuf, TILE * sizeof(uint16_t));
        pipe.InitBuffer(sizeBuf, 32);
        pipe.InitBuffer(passQue, BUFFER_NUM, TILE * sizeof(uint32_t));

        ilv = ilvBuf.Get<uint32_t>();
        dlv = dlvBuf.Get<uint32_t>();
        build_offsets(ilv, dlv);
        AscendC::Duplicate(wideBuf.Get<uint16_t>()[TILE], uint16_t(0), int32_t(TILE));
    }

    __aicore__ inline void Process() {
        if (AscendC::GetBlockIdx() == 0) WriteStreamHeader();
        for (uint32_t f = uint32_t(AscendC::GetBlockIdx()); f < tiling.frameCount;
             f += uint32_t(AscendC::GetBlockNum())) {
            store_word(sizesGm, f, sizeBuf.Get<uint32_t>(), EncodeFrame(f));
        }
    }

private:
    // StreamInfo::to_bytes (src/format.rs).
    __aicore__ inline void WriteStreamHeader() {
        LocalTensor<uint8_t> h = byteBuf.Get<uint8_t>()[512];
        for (uint32_t i = 0; i < HEADER_BYTES; i++) h.SetValue(i, 0);
        h.SetValue(0, 'E');
        h.SetValue(1, 'N');
        h.SetValue(2, 'E');
        h.SetValue(3, 'C');
        h.SetValue(4, 1);
        h.SetValue(5, 0);
        h.SetValue(6, uint8_t(tiling.dtype));
        h.SetValue(7, uint8_t(tiling.frameLog2));
        h.SetValue(8, uint8_t(tiling.checksums ? 1 : 0));
        put_u32(h, 12, tiling.frameCount);
        put_u32(h, 16, uint32_t(tiling.elementCount));
        put_u32(h, 20, uint32_t(tiling.elementCount >> 32));
        H32 check;
        check.init();
        check.feed(h, 28);
        put_u32(h, 28, check.finish());
        AscendC::PipeBarrier<PIPE_ALL>();  // scalar -> MTE3
        AscendC::DataCopy(headerGm, h, HEADER_BYTES);
    }

    __aicore__ inline static void put_u32(const LocalTensor<uint8_t>& b, uint32_t at, uint32_t v) {
        for (uint32_t k = 0; k < 4; k++) b.SetValue(at + k, uint8_t(v >> (8 * k)));
    }

    // encode_frame (src/frame.rs). Returns the frame size.
    __aicore__ inline uint32_t EncodeFrame(uint32_t f) {
        uint64_t firstElement = uint64_t(f) << tiling.frameLog2;
        uint64_t left = tiling.elementCount - firstElement;
        elements = uint32_t(left < frameLen ? left : frameLen);
        inOff = firstElement * dt.eb;
        slotOff = uint64_t(f) * tiling.slotBytes;
        groups = (elements + 15) / 16;

        frame_stats();
        uint32_t dead = mantissaOr == 0 ? dt.m : min_u32(uint32_t(AscendC::ScalarGetSFFValue<1>(mantissaOr)), dt.m);

        // Candidates, FORMAT.md 7.2-7.5: ties go to ranked, then groups, then stored.
        Params stored;
        clear_params(stored);
        uint32_t storedBytes = HEADER_BYTES + pad32(elements * dt.eb);
        Params best = stored;
        uint32_t bestBytes = storedBytes;
        ranking_new();
        Params groupsP, rankedP;
        uint32_t groupsBytes = 0xFFFFFFFFu, rankedBytes = 0xFFFFFFFFu;
        if (tiling.coding != CODING_RANKED) groupsBytes = choose_groups(dead, groupsP);
        if (tiling.coding != CODING_GROUPS) rankedBytes = choose_ranked(dead, rankedP);
        if (tiling.coding != CODING_RANKED && groupsBytes <= bestBytes) {
            best = groupsP;
            bestBytes = groupsBytes;
        }
        if (tiling.coding != CODING_GROUPS && rankedBytes <= bestBytes) {
            best = rankedP;
            bestBytes = rankedBytes;
        }
        params = best;
        layout = frame_layout(dt, elements, params);

        frameGm = slotsGm[slotOff];
        frameWords.SetGlobalBuffer((__gm__ uint16_t*)frameGm.GetPhyAddr(), layout.bytes / 2);
        WriteFrameHeader();
        if (params.coding == CODING_STORED) {
            WriteStored();
        } else {
            if (!SplitPlanes()) return 0;  // internal inconsistency: the host reports size 0
            AscendC::PipeBarrier<PIPE_ALL>();  // workspace writes before reads
            PackPlanes();
        }
        return layout.bytes;
    }

    __aicore__ inline static void clear_params(Params& p) {
        p.coding = CODING_STORED;
        p.dead = 0;
        p.base = p.width = p.low = p.flagged = 0;
        p.levels = 0;
        for (uint32_t j = 0; j < MAX_LEVELS; j++) p.widths[j] = p.counts[j] = 0;
    }

    __aicore__ inline void LoadTile(uint32_t start, uint32_t len) {
        LocalTensor<uint8_t> tile = inQue.AllocTensor<uint8_t>();
        CopyTileIn(tile, start, len);
        inQue.EnQue(tile);
    }

    __aicore__ inline void CopyTileIn(const LocalTensor<uint8_t>& tile, uint32_t start, uint32_t len) {
        uint32_t bytes = len * dt.eb;
        GlobalTensor<uint8_t> src = inGm[inOff + uint64_t(start) * dt.eb];
        if (bytes % 32 == 0) {
            AscendC::DataCopy(tile, src, bytes);
        } else {
            AscendC::DataCopyExtParams copy(1, bytes, 0, 0, 0);
            AscendC::DataCopyPadExtParams<uint8_t> pad(false, 0, 0, 0);
            AscendC::DataCopyPad(tile, src, copy, pad);
        }
    }

    // x (u16) of the tile's elements: vector shifts; fp32 narrows the u32 lanes with Gather.
    __aicore__ inline void exponents(const LocalTensor<uint8_t>& tile, uint32_t len, const LocalTensor<uint16_t>& x) {
        if (dt.eb == 2) {
            LocalTensor<uint16_t> u = tile.ReinterpretCast<uint16_t>();
            AscendC::ShiftLeft(x, u, uint16_t(1), int32_t(len));
            AscendC::ShiftRight(x, x, uint16_t(dt.m + 1), int32_t(len));
        } else {
            LocalTensor<uint32_t> u = tile.ReinterpretCast<uint32_t>();
            LocalTensor<uint32_t> w = wordBuf.Get<uint32_t>();
            AscendC::ShiftLeft(w, u, uint32_t(1), int32_t(len));
            AscendC::ShiftRight(w, w, uint32_t(24), int32_t(len));
            AscendC::Gather(x, w.ReinterpretCast<uint16_t>(), dlv, uint32_t(0), len);
        }
    }

    // FrameStats::gather + group_range for every group + h32 of the input, in one pass.
    __aicore__ inline void frame_stats() {
        LocalTensor<uint32_t> hist = statBuf.Get<uint32_t>();
        LocalTensor<uint16_t> g = groupBuf.Get<uint16_t>();
        LocalTensor<uint16_t> gmin = g, gmax = g[MAX_GROUPS + 16];
        LocalTensor<uint16_t> acc = accBuf.Get<uint16_t>();
        LocalTensor<uint16_t> x = xBuf.Get<uint16_t>();
        AscendC::Duplicate(acc, uint16_t(0), int32_t(2 * TILE));
        AscendC::Duplicate(gmin, uint16_t(0xFFFF), int32_t(round_up(groups, 16)));
        AscendC::Duplicate(gmax, uint16_t(0), int32_t(round_up(groups, 16)));
        AscendC::PipeBarrier<PIPE_ALL>();
        for (uint32_t i = 0; i < 256; i++) hist.SetValue(i, 0);
        hash.init();
        uint32_t t = 0;
        for (uint32_t start = 0; start < elements; start += TILE) {
            uint32_t len = min_u32(TILE, elements - start);
            LoadTile(start, len);
            LocalTensor<uint8_t> tile = inQue.DeQue<uint8_t>();
            exponents(tile, len, x);
            AscendC::Or(acc, acc, tile.ReinterpretCast<uint16_t>(), int32_t(len * dt.eb / 2));
            AscendC::PipeBarrier<PIPE_ALL>();  // vector -> scalar
            hash.feed(tile, len * dt.eb);
            // Scalar: the histogram is a scatter-add, and the group ranges ride along.
            for (uint32_t q = 0; q < len; q++) {
                uint32_t e = x.GetValue(q);
                hist.SetValue(e, hist.GetValue(e) + 1);
                if (e < gmin.GetValue(t)) gmin.SetValue(t, uint16_t(e));
                if (e > gmax.GetValue(t)) gmax.SetValue(t, uint16_t(e));
                t = t + 1 == groups ? 0 : t + 1;
            }
            inQue.FreeTensor(tile);
        }
        inputHash = hash.finish();
        uint32_t mor = 0;
        for (uint32_t i = 0; i < 2 * TILE; i++) {
            uint32_t lane = acc.GetValue(i);
            mor |= (dt.eb == 4 && (i & 1)) ? lane << 16 : lane;
        }
        mantissaOr = mor & ((1u << dt.m) - 1);
    }

    // Ranking::new (src/kernels.rs): order by count descending, value ascending (stable
    // insertion sort), rank = inverse, covered = prefix sums of the ordered counts.
    __aicore__ inline void ranking_new() {
        LocalTensor<uint32_t> hist = statBuf.Get<uint32_t>();
        LocalTensor<uint32_t> covered = hist[256];
        LocalTensor<uint8_t> order = byteBuf.Get<uint8_t>();
        LocalTensor<uint16_t> rank = rankTabBuf.Get<uint16_t>();
        uint32_t alphabet = 1u << dt.e;
        for (uint32_t x = 0; x < 256; x++) order.SetValue(x, uint8_t(x));
        for (uint32_t i = 1; i < alphabet; i++) {
            uint32_t j = i;
            while (j > 0 && hist.GetValue(order.GetValue(j - 1)) < hist.GetValue(order.GetValue(j))) {
                uint8_t a = order.GetValue(j - 1);
                order.SetValue(j - 1, order.GetValue(j));
                order.SetValue(j, a);
                j--;
            }
        }
        for (uint32_t r = 0; r < TABLE_SLOTS; r++) rank.SetValue(r, 0);
        covered.SetValue(0, 0);
        for (uint32_t r = 0; r < alphabet; r++) {
            uint32_t x = order.GetValue(r);
            rank.SetValue(x, uint16_t(r));
            covered.SetValue(r + 1, covered.GetValue(r) + hist.GetValue(x));
        }
        for (uint32_t s = alphabet + 1; s <= 256; s++) covered.SetValue(s, covered.GetValue(alphabet));
    }

    // choose_ranked (src/kernels.rs): L = 1..3, widths in lexicographic order over 1..E, skipping
    // S_L > 2^E; the first smallest frame wins.
    __aicore__ inline uint32_t choose_ranked(uint32_t dead, Params& best) {
        LocalTensor<uint32_t> covered = statBuf.Get<uint32_t>()[256];
        uint32_t alphabet = 1u << dt.e;
        uint32_t bestBytes = 0xFFFFFFFFu;
        clear_params(best);
        Params p;
        for (uint32_t levels = 1; levels <= MAX_LEVELS; levels++) {
            uint32_t total = 1;
            for (uint32_t j = 0; j < levels; j++) total *= dt.e;
            for (uint32_t index = 0; index < total; index++) {
                clear_params(p);
                p.coding = CODING_RANKED;
                p.dead = dead;
                p.levels = levels;
                uint32_t rest = index;
                for (uint32_t jj = levels; jj > 0; jj--) {
                    p.widths[jj - 1] = rest % dt.e + 1;
                    rest /= dt.e;
                }
                uint32_t start = 0;
                for (uint32_t j = 0; j < levels; j++) {
                    start += (1u << p.widths[j]) - 1;
                    p.counts[j] = elements - covered.GetValue(min_u32(start, alphabet));
                }
                if (start > alphabet) continue;
                uint32_t bytes = frame_layout(dt, elements, p).bytes;
                if (bytes < bestBytes) {
                    bestBytes = bytes;
                    best = p;
                }
            }
        }
        return bestBytes;
    }

    // groups_width (src/kernels.rs)
    __aicore__ inline static uint32_t groups_width(uint32_t base, uint32_t lo, uint32_t hi, uint32_t e) {
        for (uint32_t n = 1; n < e; n++) {
            int32_t mid = int32_t(1) << (n - 1);
            if (int32_t(base) - mid < int32_t(lo) && int32_t(hi) <= int32_t(base) + mid) return n;
        }
        return e;
    }

    // group_flagged (src/kernels.rs)
    __aicore__ inline static bool group_flagged(uint32_t gmin, uint32_t gmax, uint32_t base, uint32_t low) {
        return gmax > base || int32_t(gmin) <= int32_t(base) - (int32_t(1) << low);
    }

    // groups_unflagged (src/kernels.rs): unflagged[c][m] for base first + c, cumulative in m.
    __aicore__ inline void groups_unflagged(uint32_t first, uint32_t candidates, const LocalTensor<uint32_t>& u) {
        LocalTensor<uint16_t> g = groupBuf.Get<uint16_t>();
        LocalTensor<uint16_t> gmin = g, gmax = g[MAX_GROUPS + 16];
        for (uint32_t i = 0; i < GROUPS_BASES * 9; i++) u.SetValue(i, 0);
        for (uint32_t t = 0; t < groups; t++) {
            uint32_t lo = gmin.GetValue(t), hi = gmax.GetValue(t);
            for (uint32_t c = 0; c < candidates; c++) {
                uint32_t base = first + c;
                if (hi <= base) {
                    uint32_t d = base - lo, m = 0;
                    while ((d >> m) != 0) m++;  // bit length
                    if (m <= 8) u.SetValue(c * 9 + m, u.GetValue(c * 9 + m) + 1);
                }
            }
        }
        for (uint32_t c = 0; c < GROUPS_BASES; c++)
            for (uint32_t m = 1; m < 9; m++) u.SetValue(c * 9 + m, u.GetValue(c * 9 + m) + u.GetValue(c * 9 + m - 1));
    }

    // The groups search of frame.rs choose_groups_params (FORMAT.md 7.3).
    __aicore__ inline uint32_t choose_groups(uint32_t dead, Params& best) {
        LocalTensor<uint32_t> hist = statBuf.Get<uint32_t>();
        LocalTensor<uint32_t> unflagged = hist[256 + 260];
        uint32_t lo = 0, hi = 0, mode = 0;
        bool seen = false;
        for (uint32_t x = 0; x < 256; x++) {
            uint32_t c = hist.GetValue(x);
            if (c > 0) {
                if (!seen) lo = x;
                seen = true;
                hi = x;
            }
            if (c > hist.GetValue(mode)) mode = x;
        }
        uint32_t first = max_u32(lo, mode >= 3 ? mode - 3 : 0);
        uint32_t last = min_u32(hi, mode + 8);
        uint32_t candidates = last - first + 1;
        groups_unflagged(first, candidates, unflagged);
        uint32_t bestBytes = 0xFFFFFFFFu;
        clear_params(best);
        Params p;
        for (uint32_t c = 0; c < candidates; c++) {
            uint32_t base = first + c;
            uint32_t width = groups_width(base, lo, hi, dt.e);
            for (uint32_t low = 0; low <= width; low++) {
                clear_params(p);
                p.coding = CODING_GROUPS;
                p.dead = dead;
                p.base = base;
                p.width = width;
                p.low = low;
                p.flagged = low == width ? 0 : groups - unflagged.GetValue(c * 9 + low);
                uint32_t bytes = frame_layout(dt, elements, p).bytes;
                if (bytes < bestBytes) {
                    bestBytes = bytes;
                    best = p;
                }
            }
        }
        return bestBytes;
    }

    // FrameHeader::to_bytes (src/format.rs)
    __aicore__ inline void WriteFrameHeader() {
        LocalTensor<uint8_t> h = byteBuf.Get<uint8_t>()[512];
        for (uint32_t i = 0; i < HEADER_BYTES; i++) h.SetValue(i, 0);
        put_u32(h, 0, layout.bytes);
        put_u32(h, 4, tiling.checksums ? inputHash : 0);
        put_u32(h, 8, elements);
        h.SetValue(12, uint8_t(params.coding));
        h.SetValue(13, uint8_t(params.dead));
        if (params.coding == CODING_GROUPS) {
            h.SetValue(16, uint8_t(params.base));
            h.SetValue(17, uint8_t(params.width));
            h.SetValue(18, uint8_t(params.low));
            put_u32(h, 20, params.flagged);
        } else if (params.coding == CODING_RANKED) {
            h.SetValue(16, uint8_t(params.levels));
            for (uint32_t j = 0; j < MAX_LEVELS; j++) {
                h.SetValue(17 + j, uint8_t(params.widths[j]));
                put_u32(h, 20 + 4 * j, params.counts[j]);
            }
        }
        AscendC::PipeBarrier<PIPE_ALL>();
        AscendC::DataCopy(frameGm, h, HEADER_BYTES);
    }

    __aicore__ inline void WriteStored() {
        for (uint32_t start = 0; start < elements; start += TILE) {
            uint32_t len = min_u32(TILE, elements - start);
            uint32_t bytes = len * dt.eb;
            // GM -> UB -> GM: a VECIN -> VECOUT queue orders MTE2 before MTE3.
            LocalTensor<uint8_t> tile = passQue.AllocTensor<uint8_t>();
            CopyTileIn(tile, start, len);
            if (bytes % 32 != 0) {
                sync_pipes<AscendC::HardEvent::MTE2_S>();
                for (uint32_t i = bytes; i < pad32(bytes); i++) tile.SetValue(i, 0);  // zero padding
            }
            passQue.EnQue(tile);
            tile = passQue.DeQue<uint8_t>();
            AscendC::DataCopy(frameGm[HEADER_BYTES + start * dt.eb], tile, pad32(bytes));
            passQue.FreeTensor(tile);
        }
    }

    // split (src/kernels.rs Fields::split) of a tile into residual lo/hi and exponents, vector:
    // r = ((u & (2^M - 1)) | ((u >> (E + M)) << M)) >> k.
    __aicore__ inline void split(const LocalTensor<uint8_t>& tile, uint32_t len, const LocalTensor<uint16_t>& pair,
                                 const LocalTensor<uint16_t>& x) {
        const uint32_t k = params.dead, M = dt.m, E = dt.e;
        exponents(tile, len, x);
        if (dt.eb == 2) {
            LocalTensor<uint16_t> u = tile.ReinterpretCast<uint16_t>();
            LocalTensor<uint16_t> lo = pair, sign = pair[TILE];
            AscendC::ShiftRight(sign, u, uint16_t(E + M), int32_t(len));
            AscendC::ShiftLeft(sign, sign, uint16_t(M), int32_t(len));
            AscendC::ShiftLeft(lo, u, uint16_t(16 - M), int32_t(len));
            AscendC::ShiftRight(lo, lo, uint16_t(16 - M), int32_t(len));
            AscendC::Or(lo, lo, sign, int32_t(len));
            if (k > 0) AscendC::ShiftRight(lo, lo, uint16_t(k), int32_t(len));
        } else {
            LocalTensor<uint32_t> u = tile.ReinterpretCast<uint32_t>();
            LocalTensor<uint32_t> w0 = wordBuf.Get<uint32_t>(), w1 = wordBuf.Get<uint32_t>()[TILE];
            AscendC::ShiftRight(w0, u, uint32_t(E + M), int32_t(len));
            AscendC::ShiftLeft(w0, w0, uint32_t(M), int32_t(len));
            AscendC::ShiftLeft(w1, u, uint32_t(32 - M), int32_t(len));
            AscendC::ShiftRight(w1, w1, uint32_t(32 - M), int32_t(len));
            AscendC::Or(w1.ReinterpretCast<uint16_t>(), w1.ReinterpretCast<uint16_t>(), w0.ReinterpretCast<uint16_t>(),
                        int32_t(2 * len));
            if (k > 0) AscendC::ShiftRight(w1, w1, uint32_t(k), int32_t(len));
            AscendC::Gather(pair, w1.ReinterpretCast<uint16_t>(), dlv, uint32_t(0), len);           // low halves
            AscendC::Gather(pair[TILE], w1.ReinterpretCast<uint16_t>(), dlv[TILE], uint32_t(0), len);  // high halves
        }
    }

    // groups_forward (src/kernels.rs): y = (b - x) mod 2^n, int16 lanes (no overflow).
    __aicore__ inline void groups_forward(const LocalTensor<uint16_t>& x, uint32_t len) {
        LocalTensor<int16_t> v = x.ReinterpretCast<int16_t>();
        LocalTensor<int16_t> zeros = wideBuf.Get<int16_t>()[TILE];
        AscendC::Sub(v, zeros, v, int32_t(len));
        AscendC::Adds(v, v, int16_t(params.base), int32_t(len));
        keep_low_bits(x, params.width, len);
    }

    __aicore__ inline GlobalTensor<uint16_t> StageGm(uint32_t stage, uint32_t at) {
        return wsGm[uint64_t(stage) * stageElems + at];
    }

    // Writes n u16 values to a workspace stage at value index `at`.
    __aicore__ inline void Stage(uint32_t stage, uint32_t at, const LocalTensor<uint16_t>& v, uint32_t n) {
        if (n == 0) return;
        sync_pipes<AscendC::HardEvent::V_MTE3>();
        if (at % 16 == 0 && n % 16 == 0) {
            AscendC::DataCopy(StageGm(stage, at), v, n);
        } else {
            AscendC::DataCopyExtParams copy(1, n * 2, 0, 0, 0);
            AscendC::DataCopyPad(StageGm(stage, at), v, copy);
        }
        sync_pipes<AscendC::HardEvent::MTE3_V>();  // v is rewritten by the next tile
    }

    // Compacts the entries whose mask bit is set, in order, into compactBuf (scalar walk of the
    // set bits). The staged value of entry q is min(rank[q] - first, escape) (an escape level,
    // rank_codes) or x[q] (the exponent level).
    __aicore__ inline uint32_t Compact(const LocalTensor<uint8_t>& mask, uint32_t n, bool exponentLevel,
                                       uint32_t first, uint32_t escape) {
        LocalTensor<uint16_t> out = compactBuf.Get<uint16_t>();
        LocalTensor<uint16_t> rank = rankBuf.Get<uint16_t>();
        LocalTensor<uint16_t> x = xBuf.Get<uint16_t>();
        LocalTensor<uint64_t> words = mask.ReinterpretCast<uint64_t>();
        uint32_t k = 0;
        for (uint32_t w = 0; w * 64 < n; w++) {
            uint64_t bits = words.GetValue(w);
            uint32_t valid = n - w * 64;
            if (valid < 64) bits &= (uint64_t(1) << valid) - 1;
            while (bits != 0) {
                uint32_t q = w * 64 + uint32_t(AscendC::ScalarGetSFFValue<1>(bits));
                uint32_t v = exponentLevel ? uint32_t(x.GetValue(q)) : min_u32(rank.GetValue(q) - first, escape);
                out.SetValue(k++, uint16_t(v));
                bits &= bits - 1;
            }
        }
        return k;
    }

    // Pass B. Returns false if the escape counts disagree with the chosen parameters (cannot
    // happen unless the kernel is wrong).
    __aicore__ inline bool SplitPlanes() {
        LocalTensor<uint16_t> pair = pairBuf.Get<uint16_t>();
        LocalTensor<uint16_t> x = xBuf.Get<uint16_t>();
        LocalTensor<uint16_t> rank = rankBuf.Get<uint16_t>();
        LocalTensor<uint16_t> wide = wideBuf.Get<uint16_t>();
        LocalTensor<uint8_t> mask = maskBuf.Get<uint8_t>();
        LocalTensor<uint16_t> compact = compactBuf.Get<uint16_t>();
        LocalTensor<half> hv = halfBuf.Get<half>(), hc = hv[TILE];
        bool wideResidual = layout.residual.width > 16;
        uint32_t cursor[MAX_LEVELS + 1] = {0, 0, 0, 0};
        uint32_t s[MAX_LEVELS + 1];
        rank_starts(params, s);

        // groups: flags per group (scalar group_flagged), the prefix count and the flagged list.
        LocalTensor<uint16_t> g = groupBuf.Get<uint16_t>();
        LocalTensor<uint16_t> gmin = g, gmax = g[MAX_GROUPS + 16], flags = g[2 * (MAX_GROUPS + 16)];
        LocalTensor<uint16_t> before = gmin, flagged = gmax;  // reuse once the flags are known
        uint32_t flaggedCount = 0;
        if (params.coding == CODING_GROUPS) {
            for (uint32_t t = 0; t < groups; t++) {
                bool on = params.low < params.width &&
                          group_flagged(gmin.GetValue(t), gmax.GetValue(t), params.base, params.low);
                flags.SetValue(t, uint16_t(on));
            }
            for (uint32_t t = 0; t < groups; t++) {
                before.SetValue(t, uint16_t(flaggedCount));
                if (flags.GetValue(t) != 0) flagged.SetValue(flaggedCount++, uint16_t(t));
            }
            if (flaggedCount != params.flagged) return false;
            AscendC::PipeBarrier<PIPE_ALL>();
            Stage(ST_P0, 0, flags, groups);
        }

        for (uint32_t start = 0; start < elements; start += TILE) {
            uint32_t len = min_u32(TILE, elements - start);
            LoadTile(start, len);
            LocalTensor<uint8_t> tile = inQue.DeQue<uint8_t>();
            split(tile, len, pair, x);
            inQue.FreeTensor(tile);
            Stage(ST_RES_LO, start, pair, len);
            if (wideResidual) Stage(ST_RES_HI, start, pair[TILE], len);
            if (params.coding == CODING_RANKED) {
                AscendC::Duplicate(rank, uint16_t(0), int32_t(round_up(len, 128)));
                lookup(rank, x, len, 0, rankTabBuf.Get<uint16_t>(), wide, offsBuf.Get<uint32_t>(), ilv);
                // level 1: min(rank, escape)
                uint32_t escape1 = (1u << params.widths[0]) - 1;
                AscendC::Mins(wide.ReinterpretCast<int16_t>(), rank.ReinterpretCast<int16_t>(), int16_t(escape1),
                              int32_t(len));
                Stage(ST_P0, start, wide, len);
                // levels 2..L (rank_codes) and the exponent level: entries of the elements whose
                // rank is at least S_j, compacted in element order.
                for (uint32_t j = 1; j <= params.levels; j++) {
                    uint32_t n = build_mask(rank, len, s[j], AscendC::CMPMODE::GE, hv, hc, mask);
                    if (n == 0) continue;
                    uint32_t escape = j < params.levels ? (1u << params.widths[j]) - 1 : 0;
                    uint32_t k = Compact(mask, len, j == params.levels, s[j], escape);
                    if (cursor[j] + k > layout.planes[j].count) return false;
                    AscendC::PipeBarrier<PIPE_ALL>();
                    Stage(ST_P0 + j, cursor[j], compact, k);
                    cursor[j] += k;
                }
            } else {
                groups_forward(x, len);
                AscendC::Adds(wide.ReinterpretCast<int16_t>(), x.ReinterpretCast<int16_t>(), int16_t(0), int32_t(len));
                keep_low_bits(wide, params.low, len);
                Stage(ST_P1, start, wide, len);
                if (params.flagged != 0) {
                    AscendC::PipeBarrier<PIPE_ALL>();
                    uint32_t k = 0;
                    for (uint32_t i = start; i < start + len;) {
                        uint32_t r = i / groups, t = i % groups;
                        uint32_t tEnd = min_u32(groups, t + (start + len - i));
                        uint32_t kEnd = tEnd == groups ? flaggedCount : before.GetValue(tEnd);
                        for (uint32_t fk = before.GetValue(t); fk < kEnd; fk++) {
                            uint32_t pos = r * groups + flagged.GetValue(fk) - start;
                            compact.SetValue(k++, uint16_t(x.GetValue(pos) >> params.low));
                        }
                        i += tEnd - t;
                    }
                    if (cursor[2] + k > layout.planes[2].count) return false;
                    AscendC::PipeBarrier<PIPE_ALL>();
                    Stage(ST_P2, cursor[2], compact, k);
                    cursor[2] += k;
                }
            }
        }
        if (params.coding == CODING_RANKED) {
            for (uint32_t j = 1; j <= params.levels; j++)
                if (cursor[j] != layout.planes[j].count) return false;
        }
        highValid = cursor[2];
        return true;
    }

    // Pass C: every plane from its stage.
    __aicore__ inline void PackPlanes() {
        bool wideResidual = layout.residual.width > 16;
        pack_plane(layout.residual, ST_RES_LO, wideResidual, elements);
        if (params.coding == CODING_RANKED) {
            WriteTable();
            pack_plane(layout.planes[0], ST_P0, false, elements);
            for (uint32_t j = 1; j <= params.levels; j++)
                pack_plane(layout.planes[j], ST_P0 + j, false, layout.planes[j].count);
        } else {
            pack_plane(layout.planes[0], ST_P0, false, groups);
            pack_plane(layout.planes[1], ST_P1, false, elements);  // positions >= N are zero
            pack_plane(layout.planes[2], ST_P2, false, highValid);  // so are their high bits
        }
    }

    __aicore__ inline void WriteTable() {
        LocalTensor<uint8_t> order = byteBuf.Get<uint8_t>();
        LocalTensor<uint8_t> out = order[256];
        uint32_t len = layout.tableLen;
        for (uint32_t r = 0; r < pad32(len); r++) out.SetValue(r, r < len ? order.GetValue(r) : uint8_t(0));
        AscendC::PipeBarrier<PIPE_ALL>();
        AscendC::DataCopy(frameGm[layout.tableAt], out, pad32(len));
    }

    // Values [v0, v0 + n) of a stage into dst (any alignment of v0).
    __aicore__ inline void LoadStage(const LocalTensor<uint16_t>& dst, uint32_t stage, uint32_t v0, uint32_t n) {
        if (v0 % 16 == 0 && n % 16 == 0) {
            AscendC::DataCopy(dst, StageGm(stage, v0), n);
        } else {
            AscendC::DataCopyExtParams copy(1, n * 2, 0, 0, 0);
            AscendC::DataCopyPadExtParams<uint16_t> pad(false, 0, 0, 0);
            AscendC::DataCopyPad(dst, StageGm(stage, v0), copy, pad);
        }
    }

    // pack_halving (src/kernels.rs) on `len` lanes into `words` lanes, p-bit fields:
    // lanes[i] |= lanes[i + half] << ((half / words) * p), half = len / 2 down to words.
    __aicore__ inline void pack_halving(const LocalTensor<uint16_t>& lanes, uint32_t len, uint32_t words, uint32_t p) {
        LocalTensor<uint16_t> tmp = packTmpBuf.Get<uint16_t>();
        while (len > words) {
            uint32_t halfLen = len / 2;
            uint16_t shift = uint16_t((halfLen / words) * p);
            AscendC::ShiftLeft(tmp, lanes[halfLen], shift, int32_t(halfLen));
            AscendC::Or(lanes, lanes, tmp, int32_t(halfLen));
            len = halfLen;
        }
    }

    // Packs the first `valid` values of a stage (zeros up to the plane's count) into the plane's
    // sub-planes, one chunk of TW words at a time: the chunk's 16/p rows of values are loaded
    // side by side and folded by pack_halving, then written out with one aligned DataCopy
    // (including the sub-plane's zero padding).
    __aicore__ inline void pack_plane(const Plane& plane, uint32_t stage, bool wideValues, uint32_t valid) {
        for (uint32_t k = 0; k < plane.len; k++) {
            const SubPlane& sub = plane.subs[k];
            uint32_t p = sub.bits, rows = 16 / p, chunk = TILE / rows, W = sub.words, o = sub.shift;
            for (uint32_t j0 = 0; j0 < W; j0 += chunk) {
                uint32_t tw = min_u32(chunk, W - j0), twa = round_up(tw, 16);
                LocalTensor<uint16_t> lanes = outQue.AllocTensor<uint16_t>();
                AscendC::Duplicate(lanes, uint16_t(0), int32_t(rows * twa));
                for (uint32_t q = 0; q < rows; q++) {
                    uint32_t v0 = q * W + j0;
                    if (v0 >= valid) break;
                    uint32_t nv = min_u32(tw, valid - v0);
                    LocalTensor<uint16_t> lo = inQue.AllocTensor<uint16_t>();
                    LoadStage(lo, stage, v0, nv);
                    inQue.EnQue(lo);
                    LocalTensor<uint16_t> hi;
                    bool needHi = wideValues && o + p > 16;
                    if (needHi) {
                        hi = inQue.AllocTensor<uint16_t>();
                        LoadStage(hi, ST_RES_HI, v0, nv);
                        inQue.EnQue(hi);
                    }
                    lo = inQue.DeQue<uint16_t>();
                    if (needHi) hi = inQue.DeQue<uint16_t>();
                    // the sub-plane's field of each value
                    LocalTensor<uint16_t> field = lo;
                    if (o + p <= 16) {
                        AscendC::ShiftLeft(lo, lo, uint16_t(16 - o - p), int32_t(nv));
                        AscendC::ShiftRight(lo, lo, uint16_t(16 - p), int32_t(nv));
                    } else if (o >= 16) {
                        AscendC::ShiftLeft(hi, hi, uint16_t(32 - o - p), int32_t(nv));
                        AscendC::ShiftRight(hi, hi, uint16_t(16 - p), int32_t(nv));
                        field = hi;
                    } else {
                        AscendC::ShiftRight(lo, lo, uint16_t(o), int32_t(nv));
                        AscendC::ShiftLeft(hi, hi, uint16_t(16 - o), int32_t(nv));
                        AscendC::Or(lo, lo, hi, int32_t(nv));
                        keep_low_bits(lo, p, nv);
                    }
                    AscendC::Or(lanes[q * twa], lanes[q * twa], field, int32_t(nv));
                    inQue.FreeTensor(lo);
                    if (needHi) inQue.FreeTensor(hi);
                }
                pack_halving(lanes, rows * twa, twa, p);
                outQue.EnQue(lanes);
                lanes = outQue.DeQue<uint16_t>();
                AscendC::DataCopy(frameWords[sub.offset / 2 + j0], lanes, twa);
                outQue.FreeTensor(lanes);
            }
        }
    }

    AscendC::TPipe pipe;
    AscendC::TQue<TPosition::VECIN, BUFFER_NUM> inQue;
    AscendC::TQue<TPosition::VECOUT, BUFFER_NUM> outQue;
    AscendC::TQueBind<TPosition::VECIN, TPosition::VECOUT, BUFFER_NUM> passQue;
    AscendC::TBuf<TPosition::VECCALC> sizeBuf, pairBuf, xBuf, rankBuf, wideBuf, wordBuf, offsBuf, ilvBuf, dlvBuf, halfBuf,
        maskBuf, accBuf, statBuf, rankTabBuf, byteBuf, groupBuf, packTmpBuf, compactBuf;
    LocalTensor<uint32_t> ilv, dlv;
    GlobalTensor<uint8_t> inGm, slotsGm, headerGm, frameGm;
    GlobalTensor<uint16_t> wsGm, frameWords;
    GlobalTensor<uint32_t> sizesGm;
    EnecEncodeTiling tiling;
    Dtype dt;
    uint32_t frameLen = 0, stageElems = 0, elements = 0, groups = 0, highValid = 0;
    uint32_t mantissaOr = 0, inputHash = 0;
    uint64_t inOff = 0, slotOff = 0;
    Params params;
    Layout layout;
    H32 hash;
};

}  // namespace enec

// The enec encode kernel (mirror of src/frame/ encode_frame). See enec_kernel.cpp for the
// overview.
//
// Per frame, over chunks of at most TILE consecutive elements, each copied in while the previous
// one is computed (a VECIN queue of depth 2), results copied out while the next is computed (a
// VECOUT queue of depth 2):
//   A. statistics (FrameStats::gather), vector: exponents by shifts; the histogram by one
//      Compare + GatherMask count per exponent value of a span of HIST_SPAN elements
//      (ReduceMin/ReduceMax give the span's range); the mantissa OR by Or accumulation; the
//      per-group exponent ranges by element-wise Min/Max (interleaved groups: group t of row r is
//      element r * G + t, so a row is G contiguous groups); h32 of the input (H32Vector).
//   then the parameter choice (choose_ranked / the groups search / stored), scalar, exactly as
//   FORMAT.md section 7: the groups search counts unflagged groups with Compare + GatherMask;
//   B. split into planes, vector: residuals and element-indexed codes by shifts, ranks by Gather,
//      the compacted planes (escape levels, exponent level, high bits of flagged groups) by
//      GatherMask, staged as unpacked u16 values in this core's GM workspace; groups frames are
//      walked row by row so a chunk's groups are contiguous;
//   C. pack every plane from the workspace with hierarchical halving (pack_halving: vector
//      ShiftLeft + Or on uint16), sub-plane chunk by chunk, straight into the frame's slot in GM.
// Pipes are ordered by the queues' events and one MTE3 -> MTE2 flag per frame (pass B's
// workspace writes before pass C's reads); no PIPE_ALL. The frame size leaves through UB and
// DataCopyPad (store_word: no scalar write into a GM line another core writes).
#pragma once

#include "enec_common.h"
#include "enec_h32_vector.h"

namespace enec {

// Workspace stages (unpacked u16 values of one plane each).
enum Stage : uint32_t { ST_RES_LO = 0, ST_RES_HI = 1, ST_P0 = 2, ST_P1 = 3, ST_P2 = 4, ST_P3 = 5 };
constexpr uint32_t GROUPS_BASES = 12;
constexpr uint32_t GROUPS_LOWS = 9;                // low widths 0 ..= 8
constexpr uint32_t OUT_SLOTS = ENEC_ENCODE_STAGES;  // one VECOUT slot of TILE values per stage
constexpr int16_t NO_GROUP_MIN = 2047;             // above every exponent, exact in half
constexpr uint32_t HIST_SPAN = 4 * TILE;           // exponents per histogram count

// A run of consecutive positions of a frame: [pos, pos + len); `group` is the group of pos when
// the walk goes by rows (interleaved groups), else 0.
struct Chunk {
    uint32_t pos, len, group;
};

// The chunks of a frame in position order: plain tiles, or row by row (each row of G positions
// cut into tiles, so a chunk covers the contiguous groups [group, group + len) and `group` is a
// multiple of TILE). Positions >= N (virtual) are never visited.
struct ChunkWalk {
    uint32_t elements = 0, groups = 0, row = 0, col = 0;
    bool byRows = false;
    __aicore__ inline void start(uint32_t n, uint32_t g, bool rows) {
        elements = n;
        groups = g;
        byRows = rows;
        row = col = 0;
    }
    __aicore__ inline bool next(Chunk& c) {
        if (!byRows) {
            if (col >= elements) return false;
            c.pos = col;
            c.len = min_u32(TILE, elements - col);
            c.group = 0;
            col += c.len;
            return true;
        }
        if (row >= 16) return false;
        uint32_t pos = row * groups + col;
        if (pos >= elements) return false;
        c.pos = pos;
        c.len = min_u32(min_u32(TILE, groups - col), elements - pos);
        c.group = col;
        col += TILE;
        if (col >= groups) {
            col = 0;
            row++;
        }
        return true;
    }
};

// One chunk of one sub-plane in pass C: words [j0, j0 + tw) of sub-plane `sub` of plane `plane`.
struct PackJob {
    uint32_t plane, sub, j0;
};

// A plane to pack: its layout, the workspace stage holding its values, whether its values are
// wider than 16 bits (the high halves in ST_RES_HI), and how many values were staged (the rest
// of the plane's count is zero).
struct PackPlane {
    const Plane* plane;
    uint32_t stage;
    bool wide;
    uint32_t valid;
};

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
        pipe.InitBuffer(outQue, BUFFER_NUM, OUT_SLOTS * TILE * sizeof(uint16_t));
        pipe.InitBuffer(xBuf, TILE * sizeof(uint16_t));          // exponents, then groups y
        pipe.InitBuffer(xhBuf, HIST_SPAN * sizeof(half));        // exponents or ranks as half
        pipe.InitBuffer(rankBuf, TILE * sizeof(uint16_t));
        pipe.InitBuffer(wideBuf, 2 * TILE * sizeof(uint16_t));   // scratch | zeros
        pipe.InitBuffer(wordBuf, 2 * TILE * sizeof(uint32_t));   // two u32 temporaries
        pipe.InitBuffer(offsBuf, TILE * sizeof(uint32_t));
        pipe.InitBuffer(ilvBuf, 2 * TILE * sizeof(uint32_t));
        pipe.InitBuffer(dlvBuf, 2 * TILE * sizeof(uint32_t));
        pipe.InitBuffer(cmpBuf, max_u32(MAX_GROUPS, HIST_SPAN) * sizeof(half));  // Compare's second operand
        pipe.InitBuffer(maskBuf, 3 * max_u32(MAX_GROUPS, HIST_SPAN) / 8);  // three bit masks
        pipe.InitBuffer(accBuf, 2 * TILE * sizeof(uint16_t));    // mantissa OR accumulator
        pipe.InitBuffer(histBuf, 256 * sizeof(uint32_t));
        pipe.InitBuffer(reduceBuf, 2 * 16 * sizeof(half));       // ReduceMax | ReduceMin results
        pipe.InitBuffer(rankTabBuf, TABLE_SLOTS * sizeof(uint16_t));
        pipe.InitBuffer(byteBuf, 256 + 2 * HEADER_BYTES);        // table | frame header | stream header
        pipe.InitBuffer(sizeBuf, 32);
        pipe.InitBuffer(rangeBuf, 2 * MAX_GROUPS * sizeof(int16_t));  // group min | max
        pipe.InitBuffer(rangeHalfBuf, 2 * MAX_GROUPS * sizeof(half));  // also ReduceMax's work in pass A
        pipe.InitBuffer(flagMaskBuf, MAX_GROUPS / 8);
        pipe.InitBuffer(packTmpBuf, TILE * sizeof(uint16_t));
        pipe.InitBuffer(scratchBuf, max_u32(MAX_GROUPS, HIST_SPAN) * sizeof(uint16_t));  // GatherMask output when only its count counts
        pipe.InitBuffer(h32Buf, H32Vector::UB_BYTES);

        ilv = ilvBuf.Get<uint32_t>();
        dlv = dlvBuf.Get<uint32_t>();
        build_offsets(ilv, dlv);
        hash.setup(h32Buf.Get<int32_t>());
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
    // StreamInfo::to_bytes (src/format/).
    __aicore__ inline void WriteStreamHeader() {
        LocalTensor<uint8_t> h = byteBuf.Get<uint8_t>()[256 + HEADER_BYTES];
        for (uint32_t i = 0; i < HEADER_BYTES; i += 4) put_u32(h, i, 0);
        put_u32(h, 0, 0x43454E45u);  // "ENEC"
        put_u32(h, 4, 1u | (dt.minor << 8) | (uint32_t(tiling.dtype) << 16) | (uint32_t(tiling.frameLog2) << 24));
        put_u32(h, 8, tiling.checksums ? 1 : 0);
        put_u32(h, 12, tiling.frameCount);
        put_u32(h, 16, uint32_t(tiling.elementCount));
        put_u32(h, 20, uint32_t(tiling.elementCount >> 32));
        H32 check;
        check.init();
        check.feed(h, 28);
        put_u32(h, 28, check.finish());
        AscendC::DataCopy(headerGm, h, HEADER_BYTES);
    }

    // One u32 at a 4-byte aligned offset: one scalar access instead of four.
    __aicore__ inline static void put_u32(const LocalTensor<uint8_t>& b, uint32_t at, uint32_t v) {
        b.ReinterpretCast<uint32_t>().SetValue(at / 4, v);
    }

    // encode_frame (src/frame/). Returns the frame size (0: internal inconsistency).
    __aicore__ inline uint32_t EncodeFrame(uint32_t f) {
        uint64_t firstElement = uint64_t(f) << tiling.frameLog2;
        uint64_t left = tiling.elementCount - firstElement;
        elements = uint32_t(left < frameLen ? left : frameLen);
        inOff = firstElement * dt.eb;
        groups = (elements + 15) / 16;
        bool wantGroups = tiling.coding != CODING_RANKED, wantRanked = tiling.coding != CODING_GROUPS;

        // No barrier against the previous frame: its last workspace read (MTE2) is ordered
        // before its last copy-out (MTE3) through the queues (MTE2 -> V -> MTE3), and MTE3 runs
        // in order, so this frame's staging (MTE3) comes after every one of those reads.
        frame_stats(wantGroups);
        uint32_t dead = mantissaOr == 0 ? dt.m : min_u32(uint32_t(AscendC::ScalarGetSFFValue<1>(mantissaOr)), dt.m);

        // Candidates, FORMAT.md 7.2-7.5: ties go to ranked, then groups, then stored.
        Params best;
        clear_params(best);
        uint32_t bestBytes = HEADER_BYTES + pad32(elements * dt.eb);
        Params groupsP, rankedP;
        clear_params(groupsP);
        clear_params(rankedP);
        uint32_t groupsBytes = 0xFFFFFFFFu, rankedBytes = 0xFFFFFFFFu;
        if (wantGroups) groupsBytes = choose_groups(dead, groupsP);
        if (wantRanked) {
            ranking_new();
            rankedBytes = choose_ranked(dead, rankedP);
        }
        if (wantGroups && groupsBytes <= bestBytes) {
            best = groupsP;
            bestBytes = groupsBytes;
        }
        if (wantRanked && rankedBytes <= bestBytes) {
            best = rankedP;
            bestBytes = rankedBytes;
        }
        params = best;
        layout = frame_layout(dt, elements, params);

        frameGm = slotsGm[uint64_t(f) * tiling.slotBytes];
        frameWords.SetGlobalBuffer((__gm__ uint16_t*)frameGm.GetPhyAddr(), layout.bytes / 2);
        WriteFrameHeader();
        if (params.coding == CODING_STORED) {
            WriteStored();
            return layout.bytes;
        }
        bool ok = SplitPlanes();
        // Pass B's workspace writes (MTE3) before pass C's reads (MTE2).
        sync_pipes<AscendC::HardEvent::MTE3_MTE2>();
        if (!ok) return 0;
        PackPlanes();
        return layout.bytes;
    }

    __aicore__ inline static void clear_params(Params& p) {
        p.coding = CODING_STORED;
        p.dead = 0;
        p.base = p.width = p.low = p.flagged = 0;
        p.levels = 0;
        for (uint32_t j = 0; j < MAX_LEVELS; j++) p.widths[j] = p.counts[j] = 0;
    }

    // ---------------------------------------------------------------------------------------
    // Copy-in, double buffered
    // ---------------------------------------------------------------------------------------

    __aicore__ inline void LoadChunk(const Chunk& c) {
        LocalTensor<uint8_t> tile = inQue.AllocTensor<uint8_t>();
        uint32_t bytes = c.len * dt.eb;
        uint64_t at = inOff + uint64_t(c.pos) * dt.eb;
        GlobalTensor<uint8_t> src = inGm[at];
        if (bytes % 32 == 0 && at % 32 == 0) {
            AscendC::DataCopy(tile, src, bytes);
        } else {
            AscendC::DataCopyExtParams copy(1, bytes, 0, 0, 0);
            AscendC::DataCopyPadExtParams<uint8_t> pad(false, 0, 0, 0);
            AscendC::DataCopyPad(tile, src, copy, pad);
        }
        inQue.EnQue(tile);
    }

    enum ChunkPass : uint32_t { PASS_STATS, PASS_RANGES, PASS_SPLIT, PASS_STORED };

    // Runs `pass` over every chunk of the walk; chunk i + 1 is copied in before chunk i is
    // computed, so MTE2 and V overlap.
    __aicore__ inline void ForEachChunk(ChunkWalk walk, ChunkPass pass) {
        Chunk cur, next;
        if (!walk.next(cur)) return;
        LoadChunk(cur);
        bool more;
        do {
            more = walk.next(next);
            if (more) LoadChunk(next);
            LocalTensor<uint8_t> tile = inQue.DeQue<uint8_t>();
            if (pass == PASS_STATS) StatsChunk(cur, tile);
            else if (pass == PASS_RANGES) RangesChunk(cur, tile);
            else if (pass == PASS_SPLIT) SplitChunk(cur, tile);
            else StoredChunk(cur, tile);
            inQue.FreeTensor(tile);
            cur = next;
        } while (more);
    }

    // ---------------------------------------------------------------------------------------
    // Pass A: statistics
    // ---------------------------------------------------------------------------------------

    // The chunk's elements as u16 lanes: bf16 / fp16 the tile itself; FP8 each byte widened
    // into a lane (widen_bytes: the lanes at wordBuf's u16 lane 2 * TILE, the byte pairs below
    // them). fp32: the tile's u16 halves.
    __aicore__ inline LocalTensor<uint16_t> lanes16(const LocalTensor<uint8_t>& tile, uint32_t len) {
        if (dt.eb != 1) return tile.ReinterpretCast<uint16_t>();
        LocalTensor<uint16_t> w = wordBuf.Get<uint16_t>();
        widen_bytes(w[2 * TILE], tile.ReinterpretCast<uint16_t>(), w, ilv, (len + 1) / 2);
        return w[2 * TILE];
    }

    // x (u16) of the chunk's elements: vector shifts (an element of 16 or 8 bits per u16 lane:
    // the sign dropped by the left shift); fp32 narrows the u32 lanes with Gather. Lanes [len,
    // round_up(len, 128)) are 0 (Compare works on whole 256-byte repeats). Returns lanes16.
    __aicore__ inline LocalTensor<uint16_t> exponents(const LocalTensor<uint8_t>& tile, uint32_t len,
                                                      const LocalTensor<uint16_t>& x) {
        if (len % 128 != 0) AscendC::Duplicate(x, uint16_t(0), int32_t(round_up(len, 128)));
        LocalTensor<uint16_t> u = lanes16(tile, len);
        if (dt.eb <= 2) {
            AscendC::ShiftLeft(x, u, uint16_t(16 - dt.e - dt.m), int32_t(len));
            AscendC::ShiftRight(x, x, uint16_t(16 - dt.e), int32_t(len));
        } else {
            LocalTensor<uint32_t> w = wordBuf.Get<uint32_t>();
            AscendC::ShiftLeft(w, tile.ReinterpretCast<uint32_t>(), uint32_t(1), int32_t(len));
            AscendC::ShiftRight(w, w, uint32_t(24), int32_t(len));
            AscendC::Gather(x, w.ReinterpretCast<uint16_t>(), dlv, uint32_t(0), len);
        }
        return u;
    }

    // Number of the first n lanes whose mask bit is set (GatherMask's kept count).
    __aicore__ inline uint32_t count_set(const LocalTensor<uint8_t>& mask, uint32_t n) {
        uint64_t kept = 0;
        AscendC::GatherMask(scratchBuf.Get<uint16_t>(), scratchBuf.Get<uint16_t>(), mask.ReinterpretCast<uint16_t>(),
                            true, n, AscendC::GatherMaskParams(1, 1, 0, 0), kept);
        return uint32_t(kept);
    }

    // FrameStats::gather + the group ranges (when groups is a candidate) + h32 of the input.
    __aicore__ inline void frame_stats(bool wantGroups) {
        LocalTensor<int16_t> range = rangeBuf.Get<int16_t>();
        AscendC::Duplicate(accBuf.Get<uint16_t>(), uint16_t(0), int32_t(2 * TILE));
        AscendC::Duplicate(histBuf.Get<uint32_t>(), uint32_t(0), int32_t(256));
        if (wantGroups) {
            uint32_t lanes = round_up(groups, 128);
            AscendC::Duplicate(range, NO_GROUP_MIN, int32_t(lanes));
            AscendC::Duplicate(range[MAX_GROUPS], int16_t(0), int32_t(lanes));
        }
        // With G a multiple of 16 every row starts 32-byte aligned in a plain tile, so the ranges
        // ride along with the statistics; otherwise (a short last frame) a walk by rows.
        rangesInStats = wantGroups && groups % 16 == 0;
        if (tiling.checksums) hash.init();
        frameLo = 0xFFFFFFFFu;
        frameHi = 0;
        histFill = 0;
        ChunkWalk walk;
        walk.start(elements, groups, false);
        ForEachChunk(walk, PASS_STATS);
        if (wantGroups && !rangesInStats) {
            walk.start(elements, groups, true);
            ForEachChunk(walk, PASS_RANGES);
        }
        if (tiling.checksums) inputHash = hash.finish();

        // Fold the OR accumulator to 16 lanes (lane parity, and with it the fp32 half, is kept).
        LocalTensor<uint16_t> acc = accBuf.Get<uint16_t>();
        for (uint32_t lanes = TILE; lanes >= 16; lanes /= 2) AscendC::Or(acc, acc, acc[lanes], int32_t(lanes));
        uint32_t mor = 0;
        for (uint32_t i = 0; i < 16; i++) {
            uint32_t lane = acc.GetValue(i);
            mor |= (dt.eb == 4 && (i & 1)) ? lane << 16 : lane;
        }
        mantissaOr = mor & ((1u << dt.m) - 1);
    }

    __aicore__ inline void StatsChunk(const Chunk& c, const LocalTensor<uint8_t>& tile) {
        uint32_t len = c.len;
        LocalTensor<uint16_t> x = xBuf.Get<uint16_t>();
        LocalTensor<uint16_t> u = exponents(tile, len, x);
        AscendC::Or(accBuf.Get<uint16_t>(), accBuf.Get<uint16_t>(), u, int32_t(dt.eb == 4 ? 2 * len : len));
        if (tiling.checksums) hash.feed(tile, len * dt.eb);
        // The histogram is counted over HIST_SPAN exponents at a time (fewer instructions per
        // value); they collect as half in xh.
        AscendC::Cast(xhBuf.Get<half>()[histFill], x.ReinterpretCast<int16_t>(), AscendC::RoundMode::CAST_NONE,
                      round_up(len, 128));
        histFill += len;
        if (histFill == HIST_SPAN || c.pos + len == elements) {
            count_histogram(histFill);
            histFill = 0;
        }

        if (rangesInStats) {
            // Row segments of the chunk: positions [a, a + n) of row r are groups [a - rG, ...).
            for (uint32_t a = c.pos; a < c.pos + len;) {
                uint32_t t0 = a % groups, n = min_u32(groups - t0, c.pos + len - a);
                fold_ranges(t0, x[a - c.pos], n);
                a += n;
            }
        }
    }

    // Adds the exponents xh[0..n) to the histogram: their range (ReduceMin/ReduceMax), then one
    // Compare + GatherMask count per value in it.
    __aicore__ inline void count_histogram(uint32_t n) {
        uint32_t lanes = round_up(n, 128);
        LocalTensor<half> xh = xhBuf.Get<half>(), cmp = cmpBuf.Get<half>();
        LocalTensor<half> red = reduceBuf.Get<half>(), work = rangeHalfBuf.Get<half>();
        LocalTensor<uint8_t> mask = maskBuf.Get<uint8_t>();
        AscendC::ReduceMax(red, xh, work, int32_t(n));
        AscendC::ReduceMin(red[16], xh, work, int32_t(n));
        uint32_t hi = uint32_t(float(red.GetValue(0))), lo = uint32_t(float(red.GetValue(16)));
        frameLo = min_u32(frameLo, lo);
        frameHi = max_u32(frameHi, hi);
        LocalTensor<uint32_t> hist = histBuf.Get<uint32_t>();
        for (uint32_t v = lo; v <= hi; v++) {
            AscendC::Duplicate(cmp, half(float(v)), int32_t(lanes));
            AscendC::Compare(mask, xh, cmp, AscendC::CMPMODE::EQ, lanes);
            uint32_t k = count_set(mask, n);
            if (k != 0) hist.SetValue(v, hist.GetValue(v) + k);
        }
    }

    // Group ranges of a walk by rows (the chunk's groups are [c.group, c.group + len)).
    __aicore__ inline void RangesChunk(const Chunk& c, const LocalTensor<uint8_t>& tile) {
        LocalTensor<uint16_t> x = xBuf.Get<uint16_t>();
        exponents(tile, c.len, x);
        fold_ranges(c.group, x, c.len);
    }

    // gmin/gmax of groups [t0, t0 + n) take in the exponents x[0..n) (one per group).
    __aicore__ inline void fold_ranges(uint32_t t0, const LocalTensor<uint16_t>& x, uint32_t n) {
        LocalTensor<int16_t> gmin = rangeBuf.Get<int16_t>()[t0], gmax = rangeBuf.Get<int16_t>()[MAX_GROUPS + t0];
        LocalTensor<int16_t> v = x.ReinterpretCast<int16_t>();
        AscendC::Min(gmin, gmin, v, int32_t(n));
        AscendC::Max(gmax, gmax, v, int32_t(n));
    }

    // ---------------------------------------------------------------------------------------
    // Parameter choice (scalar, per frame)
    // ---------------------------------------------------------------------------------------

    // Ranking::new (src/kernels/): order by count descending, value ascending, rank = inverse,
    // covered = prefix sums of the ordered counts. Only the `present` values with a nonzero count
    // are sorted (stable insertion sort); the absent ones follow in ascending order
    // (table_entry).
    __aicore__ inline void ranking_new() {
        LocalTensor<uint32_t> hist = histBuf.Get<uint32_t>();
        LocalTensor<uint16_t> rank = rankTabBuf.Get<uint16_t>();
        present = 0;
        for (uint32_t v = frameLo; v <= frameHi; v++) {
            uint32_t c = hist.GetValue(v);
            if (c == 0) continue;
            uint32_t j = present++;
            while (j > 0 && orderCount[j - 1] < c) {
                order[j] = order[j - 1];
                orderCount[j] = orderCount[j - 1];
                j--;
                ENEC_SCALAR_OPS(7);
            }
            ENEC_SCALAR_OPS(6);
            order[j] = uint8_t(v);
            orderCount[j] = c;
        }
        covered[0] = 0;
        for (uint32_t r = 0; r < present; r++) {
            rank.SetValue(order[r], uint16_t(r));  // only present exponents are ever looked up
            covered[r + 1] = covered[r] + orderCount[r];
        }
    }

    // Exponents covered by the first s ranks.
    __aicore__ inline uint32_t covered_by(uint32_t s) const { return s >= present ? elements : covered[s]; }

    // choose_ranked (src/kernels/): L = 1..3, widths in lexicographic order over 1..E, skipping
    // S_L > 2^E; the first smallest frame wins. A candidate's size is frame_layout(..).bytes,
    // summed here plane by plane so that the planes a width prefix fixes are sized once:
    // header + pad32(S_L) + residual + level planes + exponent plane.
    __aicore__ inline uint32_t choose_ranked(uint32_t dead, Params& best) {
        const uint32_t E = dt.e, alphabet = 1u << E;
        const uint32_t fixed = HEADER_BYTES + plane_bytes(1 + dt.m - dead, elements);
        uint32_t first[9];  // level 1's plane (all elements) per width
        for (uint32_t w = 1; w <= E; w++) first[w] = plane_bytes(w, elements);
        uint32_t bestBytes = 0xFFFFFFFFu;
        clear_params(best);
        uint32_t widths[MAX_LEVELS];
        for (uint32_t levels = 1; levels <= MAX_LEVELS; levels++) {
            for (uint32_t w0 = 1; w0 <= E; w0++) {
                widths[0] = w0;
                uint32_t s1 = (1u << w0) - 1, c1 = elements - covered_by(s1);
                uint32_t b0 = fixed + first[w0];
                ENEC_SCALAR_OPS(10);
                if (levels == 1) {
                    consider_ranked(dead, 1, widths, s1, b0 + plane_bytes(E, c1), alphabet, bestBytes, best);
                    continue;
                }
                for (uint32_t w1 = 1; w1 <= E; w1++) {
                    widths[1] = w1;
                    uint32_t s2 = s1 + (1u << w1) - 1;
                    ENEC_SCALAR_OPS(6);
                    if (s2 > alphabet) continue;  // so is every S_3 past it
                    uint32_t c2 = elements - covered_by(s2), b1 = b0 + plane_bytes(w1, c1);
                    ENEC_SCALAR_OPS(4);
                    if (levels == 2) {
                        consider_ranked(dead, 2, widths, s2, b1 + plane_bytes(E, c2), alphabet, bestBytes, best);
                        continue;
                    }
                    for (uint32_t w2 = 1; w2 <= E; w2++) {
                        widths[2] = w2;
                        uint32_t s3 = s2 + (1u << w2) - 1, c3 = elements - covered_by(s3);
                        ENEC_SCALAR_OPS(10);
                        if (s3 > alphabet) continue;  // (consider_ranked would skip it too)
                        consider_ranked(dead, 3, widths, s3, b1 + plane_bytes(w2, c2) + plane_bytes(E, c3), alphabet,
                                        bestBytes, best);
                    }
                }
            }
        }
        return bestBytes;
    }

    // One candidate of choose_ranked: `planes` are its plane bytes past the table.
    __aicore__ inline void consider_ranked(uint32_t dead, uint32_t levels, const uint32_t* widths, uint32_t start,
                                           uint32_t planes, uint32_t alphabet, uint32_t& bestBytes, Params& best) {
        ENEC_SCALAR_OPS(6);
        if (start > alphabet) return;
        uint32_t bytes = planes + pad32(start);
        if (bytes >= bestBytes) return;
        bestBytes = bytes;
        clear_params(best);
        best.coding = CODING_RANKED;
        best.dead = dead;
        best.levels = levels;
        uint32_t at = 0;
        for (uint32_t j = 0; j < levels; j++) {
            best.widths[j] = widths[j];
            at += (1u << widths[j]) - 1;
            best.counts[j] = elements - covered_by(at);
        }
        ENEC_SCALAR_OPS(20 + 8 * levels);
    }

    // groups_width (src/kernels/)
    __aicore__ inline static uint32_t groups_width(uint32_t base, uint32_t lo, uint32_t hi, uint32_t e) {
        for (uint32_t n = 1; n < e; n++) {
            int32_t mid = int32_t(1) << (n - 1);
            ENEC_SCALAR_OPS(7);
            if (int32_t(base) - mid < int32_t(lo) && int32_t(hi) <= int32_t(base) + mid) return n;
        }
        return e;
    }

    // groups_unflagged (src/kernels/) for base first + c and low widths m < width: a group is
    // unflagged when gmax <= base and gmin > base - 2^m (group_flagged negated). Two Compares, an
    // And of the masks and a GatherMask count per (base, m).
    __aicore__ inline void groups_unflagged(uint32_t first, uint32_t candidates, uint32_t lo, uint32_t hi) {
        uint32_t lanes = round_up(groups, 128);
        LocalTensor<int16_t> range = rangeBuf.Get<int16_t>();
        LocalTensor<half> gminH = rangeHalfBuf.Get<half>(), gmaxH = gminH[MAX_GROUPS], cmp = cmpBuf.Get<half>();
        LocalTensor<uint8_t> below = maskBuf.Get<uint8_t>(), above = below[MAX_GROUPS / 8], both = below[MAX_GROUPS / 4];
        AscendC::Cast(gminH, range, AscendC::RoundMode::CAST_NONE, lanes);
        AscendC::Cast(gmaxH, range[MAX_GROUPS], AscendC::RoundMode::CAST_NONE, lanes);
        for (uint32_t c = 0; c < candidates; c++) {
            uint32_t base = first + c, width = groups_width(base, lo, hi, dt.e);
            AscendC::Duplicate(cmp, half(float(base)), int32_t(lanes));
            AscendC::Compare(below, gmaxH, cmp, AscendC::CMPMODE::LE, lanes);
            for (uint32_t m = 0; m < width; m++) {
                AscendC::Duplicate(cmp, half(float(int32_t(base) - (int32_t(1) << m))), int32_t(lanes));
                AscendC::Compare(above, gminH, cmp, AscendC::CMPMODE::GT, lanes);
                AscendC::And(both.ReinterpretCast<uint16_t>(), below.ReinterpretCast<uint16_t>(),
                             above.ReinterpretCast<uint16_t>(), int32_t(lanes / 16));
                unflagged[c][m] = count_set(both, groups);
            }
        }
    }

    // The groups search of frame.rs choose_groups_params (FORMAT.md 7.3).
    __aicore__ inline uint32_t choose_groups(uint32_t dead, Params& best) {
        LocalTensor<uint32_t> hist = histBuf.Get<uint32_t>();
        uint32_t lo = frameLo, hi = frameHi, mode = lo, modeCount = hist.GetValue(lo);
        for (uint32_t x = lo + 1; x <= hi; x++) {
            uint32_t c = hist.GetValue(x);
            if (c > modeCount) {
                mode = x;
                modeCount = c;
            }
        }
        uint32_t first = max_u32(lo, mode >= 3 ? mode - 3 : 0);
        uint32_t last = min_u32(hi, mode + 8);
        uint32_t candidates = last - first + 1;
        groups_unflagged(first, candidates, lo, hi);
        uint32_t bestBytes = 0xFFFFFFFFu;
        clear_params(best);
        // frame_layout(..).bytes of a groups frame, plane by plane: header, residual and the flag
        // plane are the same for every candidate.
        const uint32_t fixed = HEADER_BYTES + plane_bytes(1 + dt.m - dead, elements) + plane_bytes(1, groups);
        for (uint32_t c = 0; c < candidates; c++) {
            uint32_t base = first + c;
            uint32_t width = groups_width(base, lo, hi, dt.e);
            for (uint32_t low = 0; low <= width; low++) {
                uint32_t flagged = low == width ? 0 : groups - unflagged[c][low];
                uint32_t bytes = fixed + plane_bytes(low, 16 * groups) + plane_bytes(width - low, 16 * flagged);
                ENEC_SCALAR_OPS(12);  // the flagged count, the sum, the test
                if (bytes < bestBytes) {
                    bestBytes = bytes;
                    clear_params(best);
                    best.coding = CODING_GROUPS;
                    best.dead = dead;
                    best.base = base;
                    best.width = width;
                    best.low = low;
                    best.flagged = flagged;
                    ENEC_SCALAR_OPS(24);
                }
            }
        }
        return bestBytes;
    }

    // FrameHeader::to_bytes (src/format/), a u32 at a time.
    __aicore__ inline void WriteFrameHeader() {
        LocalTensor<uint8_t> h = byteBuf.Get<uint8_t>()[256];
        put_u32(h, 0, layout.bytes);
        put_u32(h, 4, tiling.checksums ? inputHash : 0);
        put_u32(h, 8, elements);
        put_u32(h, 12, params.coding | (params.dead << 8));
        uint32_t w[4] = {0, 0, 0, 0};
        if (params.coding == CODING_GROUPS) {
            w[0] = params.base | (params.width << 8) | (params.low << 16);
            w[1] = params.flagged;
        } else if (params.coding == CODING_RANKED) {
            w[0] = params.levels | (params.widths[0] << 8) | (params.widths[1] << 16) | (params.widths[2] << 24);
            for (uint32_t j = 0; j < MAX_LEVELS; j++) w[1 + j] = params.counts[j];
        }
        for (uint32_t j = 0; j < 4; j++) put_u32(h, 16 + 4 * j, w[j]);
        AscendC::DataCopy(frameGm, h, HEADER_BYTES);
    }

    // Stored: the input bytes, zero padded to 32, copied through the vector unit (VECIN -> VECOUT).
    __aicore__ inline void WriteStored() {
        ChunkWalk walk;
        walk.start(elements, groups, false);
        ForEachChunk(walk, PASS_STORED);
    }

    __aicore__ inline void StoredChunk(const Chunk& c, const LocalTensor<uint8_t>& tile) {
        uint32_t bytes = c.len * dt.eb, padded = pad32(bytes);
        LocalTensor<int16_t> out = outQue.AllocTensor<int16_t>();
        if (padded != bytes) AscendC::Duplicate(out, int16_t(0), int32_t(padded / 2));
        AscendC::Adds(out, tile.ReinterpretCast<int16_t>(), int16_t(0), int32_t((bytes + 1) / 2));
        if (bytes % 2 != 0) {
            // An odd count of FP8 bytes (the stream's last chunk only): the last word's high byte
            // came from past the input; it is the padding's first byte, 0. A scalar write after
            // V (automatic), before the copy-out (S -> MTE3, the SetFlag page's example).
            out.ReinterpretCast<uint8_t>().SetValue(bytes, uint8_t(0));
            sync_pipes<AscendC::HardEvent::S_MTE3>();
        }
        outQue.EnQue(out);
        out = outQue.DeQue<int16_t>();
        AscendC::DataCopy(frameGm[HEADER_BYTES + c.pos * dt.eb], out.ReinterpretCast<uint8_t>(), padded);
        outQue.FreeTensor(out);
    }

    // ---------------------------------------------------------------------------------------
    // Pass B: split into planes, staged in the workspace
    // ---------------------------------------------------------------------------------------

    // split (src/kernels/ Fields::split) of a chunk into residual lo/hi and exponents, vector:
    // r = ((u & (2^M - 1)) | ((u >> (E + M)) << M)) >> k. `pair` holds lo at 0, hi at TILE.
    __aicore__ inline void split(const LocalTensor<uint8_t>& tile, uint32_t len, const LocalTensor<uint16_t>& pair,
                                 const LocalTensor<uint16_t>& x) {
        const uint32_t k = params.dead, M = dt.m, E = dt.e;
        LocalTensor<uint16_t> lanes = exponents(tile, len, x);
        if (dt.eb <= 2) {  // one element per u16 lane (lanes16)
            LocalTensor<uint16_t> u = lanes;
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

    // groups_forward (src/kernels/): y = (b - x) mod 2^n, int16 lanes (no overflow).
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

    // Writes n u16 values (a VECOUT tensor) to a workspace stage at value index `at`.
    __aicore__ inline void Stage(uint32_t stage, uint32_t at, const LocalTensor<uint16_t>& v, uint32_t n) {
        if (n == 0) return;
        if (at % 16 == 0 && n % 16 == 0) {
            AscendC::DataCopy(StageGm(stage, at), v, n);
        } else {
            AscendC::DataCopyExtParams copy(1, n * 2, 0, 0, 0);
            AscendC::DataCopyPad(StageGm(stage, at), v, copy);
        }
    }

    // group_flagged (src/kernels/) for every group, vector: flags[t] = (gmax > b) | (gmin <= b -
    // 2^m) as 0/1 from the sign bits of b - gmax and gmin - (b - 2^m + 1); staged as the flags
    // plane, and as the bit mask the high plane's GatherMask takes. Returns the flagged count.
    __aicore__ inline uint32_t flag_groups() {
        uint32_t lanes = round_up(groups, 128);
        LocalTensor<uint16_t> flags = outQue.AllocTensor<uint16_t>();
        if (params.low < params.width) {
            LocalTensor<int16_t> range = rangeBuf.Get<int16_t>(), gmin = range, gmax = range[MAX_GROUPS];
            LocalTensor<int16_t> t = wordBuf.Get<int16_t>(), f = flags.ReinterpretCast<int16_t>();
            LocalTensor<half> fh = rangeHalfBuf.Get<half>(), cmp = cmpBuf.Get<half>();
            AscendC::Duplicate(t, int16_t(params.base), int32_t(lanes));
            AscendC::Sub(t, t, gmax, int32_t(lanes));
            AscendC::ShiftRight(flags, t.ReinterpretCast<uint16_t>(), uint16_t(15), int32_t(lanes));
            AscendC::Adds(t, gmin, int16_t(-(int32_t(params.base) - (int32_t(1) << params.low) + 1)), int32_t(lanes));
            AscendC::ShiftRight(t.ReinterpretCast<uint16_t>(), t.ReinterpretCast<uint16_t>(), uint16_t(15),
                                int32_t(lanes));
            AscendC::Or(flags, flags, t.ReinterpretCast<uint16_t>(), int32_t(lanes));
            AscendC::Cast(fh, f, AscendC::RoundMode::CAST_NONE, lanes);
            AscendC::Duplicate(cmp, half(1.0f), int32_t(lanes));
            AscendC::Compare(flagMaskBuf.Get<uint8_t>(), fh, cmp, AscendC::CMPMODE::EQ, lanes);
        } else {
            AscendC::Duplicate(flags, uint16_t(0), int32_t(lanes));
        }
        outQue.EnQue(flags);
        flags = outQue.DeQue<uint16_t>();
        Stage(ST_P0, 0, flags, groups);
        outQue.FreeTensor(flags);
        return params.low < params.width ? count_set(flagMaskBuf.Get<uint8_t>(), groups) : 0;
    }

    // Pass B. Returns false if the escape / flag counts disagree with the chosen parameters
    // (cannot happen unless the kernel is wrong).
    __aicore__ inline bool SplitPlanes() {
        for (uint32_t j = 0; j <= MAX_LEVELS; j++) cursor[j] = 0;
        splitOk = true;
        rank_starts(params, starts);
        bool byRows = params.coding == CODING_GROUPS;
        if (byRows && flag_groups() != params.flagged) splitOk = false;
        ChunkWalk walk;
        walk.start(elements, groups, byRows);
        ForEachChunk(walk, PASS_SPLIT);
        if (params.coding == CODING_RANKED) {
            for (uint32_t j = 1; j <= params.levels; j++)
                if (cursor[j] != layout.planes[j].count) splitOk = false;
        }
        highValid = cursor[2];
        return splitOk;
    }

    // Appends a compacted run to a stage.
    __aicore__ inline void StageCompacted(uint32_t j, const LocalTensor<uint16_t>& v, uint32_t n) {
        if (cursor[j] + n > layout.planes[j].count) {
            splitOk = false;
            return;
        }
        Stage(ST_P0 + j, cursor[j], v, n);
        cursor[j] += n;
    }

    __aicore__ inline void SplitChunk(const Chunk& c, const LocalTensor<uint8_t>& tile) {
        uint32_t len = c.len, lanes = round_up(len, 128);
        LocalTensor<uint16_t> out = outQue.AllocTensor<uint16_t>();
        LocalTensor<uint16_t> x = xBuf.Get<uint16_t>(), wide = wideBuf.Get<uint16_t>();
        LocalTensor<uint8_t> mask = maskBuf.Get<uint8_t>();
        LocalTensor<uint16_t> codes = out[ST_P0 * TILE];
        uint32_t kept[MAX_LEVELS + 1] = {0, 0, 0, 0};
        split(tile, len, out, x);
        if (params.coding == CODING_RANKED) {
            LocalTensor<uint16_t> rank = rankBuf.Get<uint16_t>();
            LocalTensor<half> rh = xhBuf.Get<half>(), cmp = cmpBuf.Get<half>();
            if (len != lanes) AscendC::Duplicate(rank, uint16_t(0), int32_t(lanes));
            lookup(rank, x, len, 0, rankTabBuf.Get<uint16_t>(), wide, offsBuf.Get<uint32_t>(), ilv);
            AscendC::Mins(codes.ReinterpretCast<int16_t>(), rank.ReinterpretCast<int16_t>(),
                          int16_t((1u << params.widths[0]) - 1), int32_t(len));
            AscendC::Cast(rh, rank.ReinterpretCast<int16_t>(), AscendC::RoundMode::CAST_NONE, lanes);
            // Levels 2..L (rank_codes: min(rank - S_j, escape)) and the exponent level (x): the
            // entries of the elements whose rank is at least S_j, in element order.
            for (uint32_t j = 1; j <= params.levels; j++) {
                AscendC::Duplicate(cmp, half(float(starts[j])), int32_t(lanes));
                AscendC::Compare(mask, rh, cmp, AscendC::CMPMODE::GE, lanes);
                LocalTensor<uint16_t> values = x;
                if (j < params.levels) {
                    values = wide;
                    AscendC::Adds(wide.ReinterpretCast<int16_t>(), rank.ReinterpretCast<int16_t>(),
                                  int16_t(-int32_t(starts[j])), int32_t(len));
                    AscendC::Mins(wide.ReinterpretCast<int16_t>(), wide.ReinterpretCast<int16_t>(),
                                  int16_t((1u << params.widths[j]) - 1), int32_t(len));
                }
                uint64_t n = 0;
                AscendC::GatherMask(out[(ST_P0 + j) * TILE], values, mask.ReinterpretCast<uint16_t>(), true, len,
                                    AscendC::GatherMaskParams(1, 1, 0, 0), n);
                kept[j] = uint32_t(n);
            }
        } else {
            groups_forward(x, len);
            // low bits of every position; high bits of the positions of flagged groups
            uint32_t low = params.low;
            if (low == 0) {
                AscendC::Duplicate(out[ST_P1 * TILE], uint16_t(0), int32_t(len));
            } else {
                AscendC::ShiftLeft(out[ST_P1 * TILE], x, uint16_t(16 - low), int32_t(len));
                AscendC::ShiftRight(out[ST_P1 * TILE], out[ST_P1 * TILE], uint16_t(16 - low), int32_t(len));
            }
            if (params.flagged != 0) {
                AscendC::ShiftRight(wide, x, uint16_t(low), int32_t(len));
                uint64_t n = 0;
                AscendC::GatherMask(out[ST_P2 * TILE], wide, flagMaskBuf.Get<uint16_t>()[c.group / 16], true, len,
                                    AscendC::GatherMaskParams(1, 1, 0, 0), n);
                kept[2] = uint32_t(n);
            }
        }
        outQue.EnQue(out);
        out = outQue.DeQue<uint16_t>();
        Stage(ST_RES_LO, c.pos, out, len);
        if (layout.residual.width > 16) Stage(ST_RES_HI, c.pos, out[ST_RES_HI * TILE], len);
        if (params.coding == CODING_RANKED) {
            Stage(ST_P0, c.pos, codes, len);
            for (uint32_t j = 1; j <= params.levels; j++) StageCompacted(j, out[(ST_P0 + j) * TILE], kept[j]);
        } else {
            Stage(ST_P1, c.pos, out[ST_P1 * TILE], len);
            StageCompacted(2, out[ST_P2 * TILE], kept[2]);
        }
        outQue.FreeTensor(out);
    }

    // ---------------------------------------------------------------------------------------
    // Pass C: pack the planes
    // ---------------------------------------------------------------------------------------

    __aicore__ inline void WriteTable() {
        LocalTensor<uint32_t> out = byteBuf.Get<uint32_t>();
        LocalTensor<uint32_t> hist = histBuf.Get<uint32_t>();
        uint32_t len = layout.tableLen, absent = 0, word = 0;
        for (uint32_t r = 0; r < pad32(len); r++) {
            uint32_t v = 0;
            if (r < len && r < present) {
                v = order[r];
            } else if (r < len) {
                // the absent exponents in ascending order
                while (absent >= frameLo && absent <= frameHi && hist.GetValue(absent) != 0) absent++;
                v = absent++;
            }
            word |= v << (8 * (r % 4));
            if (r % 4 == 3) {
                out.SetValue(r / 4, word);
                word = 0;
            }
        }
        AscendC::DataCopy(frameGm[layout.tableAt], byteBuf.Get<uint8_t>(), pad32(len));
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

    // pack_halving (src/kernels/) on `len` lanes into `words` lanes, p-bit fields:
    // lanes[i] |= lanes[i + half] << ((half / words) * p), half = len / 2 down to `until`
    // (words, or 2 * words to leave the last round to the caller).
    __aicore__ inline void pack_halving(const LocalTensor<uint16_t>& lanes, uint32_t len, uint32_t words, uint32_t p,
                                        uint32_t until) {
        LocalTensor<uint16_t> tmp = packTmpBuf.Get<uint16_t>();
        while (len > until) {
            uint32_t halfLen = len / 2;
            uint16_t shift = uint16_t((halfLen / words) * p);
            AscendC::ShiftLeft(tmp, lanes[halfLen], shift, int32_t(halfLen));
            AscendC::Or(lanes, lanes, tmp, int32_t(halfLen));
            len = halfLen;
        }
    }

    // The geometry of a pack job: p-bit fields, rows = 16 / p rows of tw words (twa padded to
    // 16) per chunk, row q holding values [q * W + j0, ...) of which `valid` exist.
    struct JobShape {
        uint32_t p, rows, tw, twa, W, o;
        bool needHi;
    };

    __aicore__ inline JobShape shape_of(const PackJob& job) {
        const PackPlane& pp = packPlanes[job.plane];
        const SubPlane& sub = pp.plane->subs[job.sub];
        JobShape s;
        s.p = sub.bits;
        s.rows = 16 / s.p;
        s.W = sub.words;
        s.o = sub.shift;
        s.tw = min_u32(TILE / s.rows, s.W - job.j0);
        s.twa = round_up(s.tw, 16);
        s.needHi = pp.wide && s.o + s.p > 16;
        return s;
    }

    // Values of row q of a job that were staged (0: none, the row stays zero).
    __aicore__ inline uint32_t row_values(const PackJob& job, const JobShape& s, uint32_t q) {
        uint32_t v0 = q * s.W + job.j0, valid = packPlanes[job.plane].valid;
        return v0 >= valid ? 0 : min_u32(s.tw, valid - v0);
    }

    __aicore__ inline bool first_job(PackJob& job) {
        job.plane = 0;
        job.sub = 0;
        job.j0 = 0;
        return settle_job(job);
    }

    // Moves `job` forward to the next job that has words (sub-planes of 0 words have none).
    __aicore__ inline bool settle_job(PackJob& job) {
        while (job.plane < packPlaneCount) {
            const Plane* plane = packPlanes[job.plane].plane;
            if (job.sub < plane->len && job.j0 < plane->subs[job.sub].words) return true;
            if (job.sub < plane->len && job.j0 != 0) {
                job.sub++;
                job.j0 = 0;
            } else if (job.sub < plane->len && plane->subs[job.sub].words == 0) {
                job.sub++;
            } else {
                job.plane++;
                job.sub = 0;
                job.j0 = 0;
            }
        }
        return false;
    }

    __aicore__ inline bool next_job(PackJob& job) {
        job.j0 += TILE / (16 / packPlanes[job.plane].plane->subs[job.sub].bits);
        return settle_job(job);
    }

    // Copy-in of a job: its rows' low halves at q * twa, high halves at TILE + q * twa.
    __aicore__ inline void LoadJob(const PackJob& job) {
        JobShape s = shape_of(job);
        LocalTensor<uint16_t> in = inQue.AllocTensor<uint16_t>();
        for (uint32_t q = 0; q < s.rows; q++) {
            uint32_t nv = row_values(job, s, q);
            if (nv == 0) break;
            LoadStage(in[q * s.twa], packPlanes[job.plane].stage, q * s.W + job.j0, nv);
            if (s.needHi) LoadStage(in[TILE + q * s.twa], ST_RES_HI, q * s.W + job.j0, nv);
        }
        inQue.EnQue(in);
    }

    // Packs one job: each row's field [o, o + p) of its values, folded by pack_halving into the
    // job's words (rows not full are Or-ed into zeroed lanes first) and written out with one
    // aligned DataCopy (the sub-plane's zero padding included).
    __aicore__ inline void PackJobWords(const PackJob& job, const LocalTensor<uint16_t>& in) {
        JobShape s = shape_of(job);
        uint32_t p = s.p, n = s.rows * s.twa;
        LocalTensor<uint16_t> lanes = outQue.AllocTensor<uint16_t>();
        bool full = s.tw == s.twa && row_values(job, s, s.rows - 1) == s.tw;
        if (full) {
            // Every row full and the rows contiguous: one field extraction over all of them,
            // halving in place, the last round into the VECOUT tensor.
            LocalTensor<uint16_t> field = extract_field(in, s, n);
            if (s.rows == 1) {
                AscendC::ShiftLeft(lanes, field, uint16_t(0), int32_t(s.twa));
            } else {
                pack_halving(field, n, s.twa, p, 2 * s.twa);
                LocalTensor<uint16_t> tmp = packTmpBuf.Get<uint16_t>();
                AscendC::ShiftLeft(tmp, field[s.twa], uint16_t(p), int32_t(s.twa));
                AscendC::Or(lanes, field, tmp, int32_t(s.twa));
            }
        } else {
            AscendC::Duplicate(lanes, uint16_t(0), int32_t(n));
            for (uint32_t q = 0; q < s.rows; q++) {
                uint32_t nv = row_values(job, s, q);
                if (nv == 0) break;
                LocalTensor<uint16_t> field = extract_field(in[q * s.twa], s, nv);
                AscendC::Or(lanes[q * s.twa], lanes[q * s.twa], field, int32_t(nv));
            }
            pack_halving(lanes, n, s.twa, p, s.twa);
        }
        outQue.EnQue(lanes);
        lanes = outQue.DeQue<uint16_t>();
        const SubPlane& sub = packPlanes[job.plane].plane->subs[job.sub];
        AscendC::DataCopy(frameWords[sub.offset / 2 + job.j0], lanes, s.twa);
        outQue.FreeTensor(lanes);
    }

    // The sub-plane's field [o, o + p) of the n values at `lo` (their high halves, for values
    // wider than 16 bits, TILE lanes further), extracted in place; returns where it is.
    __aicore__ inline LocalTensor<uint16_t> extract_field(const LocalTensor<uint16_t>& lo, const JobShape& s,
                                                          uint32_t n) {
        uint32_t p = s.p, o = s.o;
        if (o + p <= 16) {
            AscendC::ShiftLeft(lo, lo, uint16_t(16 - o - p), int32_t(n));
            AscendC::ShiftRight(lo, lo, uint16_t(16 - p), int32_t(n));
            return lo;
        }
        LocalTensor<uint16_t> hi = lo[TILE];
        if (o >= 16) {
            AscendC::ShiftLeft(hi, hi, uint16_t(32 - o - p), int32_t(n));
            AscendC::ShiftRight(hi, hi, uint16_t(16 - p), int32_t(n));
            return hi;
        }
        AscendC::ShiftRight(lo, lo, uint16_t(o), int32_t(n));
        AscendC::ShiftLeft(hi, hi, uint16_t(16 - o), int32_t(n));
        AscendC::Or(lo, lo, hi, int32_t(n));
        keep_low_bits(lo, p, n);
        return lo;
    }

    __aicore__ inline void AddPackPlane(const Plane& plane, uint32_t stage, bool wide, uint32_t valid) {
        PackPlane& pp = packPlanes[packPlaneCount++];
        pp.plane = &plane;
        pp.stage = stage;
        pp.wide = wide;
        pp.valid = valid;
    }

    // Pass C: every plane from its stage, job i + 1 copied in while job i is packed.
    __aicore__ inline void PackPlanes() {
        packPlaneCount = 0;
        AddPackPlane(layout.residual, ST_RES_LO, layout.residual.width > 16, elements);
        if (params.coding == CODING_RANKED) {
            WriteTable();
            AddPackPlane(layout.planes[0], ST_P0, false, elements);
            for (uint32_t j = 1; j <= params.levels; j++)
                AddPackPlane(layout.planes[j], ST_P0 + j, false, layout.planes[j].count);
        } else {
            AddPackPlane(layout.planes[0], ST_P0, false, groups);
            AddPackPlane(layout.planes[1], ST_P1, false, elements);  // positions >= N are zero
            AddPackPlane(layout.planes[2], ST_P2, false, highValid);  // so are their high bits
        }
        PackJob cur, next;
        if (!first_job(cur)) return;
        LoadJob(cur);
        bool more;
        do {
            next = cur;
            more = next_job(next);
            if (more) LoadJob(next);
            LocalTensor<uint16_t> in = inQue.DeQue<uint16_t>();
            PackJobWords(cur, in);
            inQue.FreeTensor(in);
            cur = next;
        } while (more);
    }

    AscendC::TPipe pipe;
    AscendC::TQue<TPosition::VECIN, BUFFER_NUM> inQue;
    AscendC::TQue<TPosition::VECOUT, BUFFER_NUM> outQue;
    AscendC::TBuf<TPosition::VECCALC> xBuf, xhBuf, rankBuf, wideBuf, wordBuf, offsBuf, ilvBuf, dlvBuf, cmpBuf, maskBuf,
        accBuf, histBuf, reduceBuf, rankTabBuf, rangeBuf, rangeHalfBuf, flagMaskBuf, packTmpBuf, scratchBuf, h32Buf;
    // Copied out by DataCopy / DataCopyPad: the data path is VECOUT -> GM.
    AscendC::TBuf<TPosition::VECOUT> byteBuf, sizeBuf;
    LocalTensor<uint32_t> ilv, dlv;
    GlobalTensor<uint8_t> inGm, slotsGm, headerGm, frameGm;
    GlobalTensor<uint16_t> wsGm, frameWords;
    GlobalTensor<uint32_t> sizesGm;
    EnecEncodeTiling tiling;
    Dtype dt;
    uint32_t frameLen = 0, stageElems = 0, elements = 0, groups = 0, highValid = 0;
    uint32_t mantissaOr = 0, inputHash = 0, frameLo = 0, frameHi = 0, histFill = 0;
    uint64_t inOff = 0;
    bool rangesInStats = false, splitOk = true;
    Params params;
    Layout layout;
    H32Vector hash;
    // Per-frame scalar state of the parameter choice (registers / stack, not UB).
    uint32_t present = 0;
    uint8_t order[256];
    uint32_t orderCount[256], covered[257];
    uint32_t unflagged[GROUPS_BASES][GROUPS_LOWS];
    uint32_t starts[MAX_LEVELS + 1], cursor[MAX_LEVELS + 1];
    PackPlane packPlanes[MAX_LEVELS + 2];
    uint32_t packPlaneCount = 0;
};

}  // namespace enec

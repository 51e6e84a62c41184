// Shared device code of the enec AscendC kernels: format-v1 layout, h32, vector building blocks.
// See enec_kernel.cpp for the overview.
#pragma once

#include "kernel_operator.h"
#include "enec_tiling.h"

namespace enec {

using AscendC::GlobalTensor;
using AscendC::LocalTensor;
using AscendC::TPosition;

constexpr uint32_t TILE = 1024;           // elements per vector step (multiple of 128 for Compare)
constexpr uint32_t RUN_WORDS = TILE + 16; // one copied run of plane words plus left padding
constexpr uint32_t BUFFER_NUM = 2;        // double buffering
constexpr uint32_t MAX_LEVELS = 3;
constexpr uint32_t MAX_GROUPS = 4096;     // 65,536 / 16
constexpr uint32_t HEADER_BYTES = 32;
constexpr uint32_t TABLE_SLOTS = 512;     // symbol / rank table, zero padded past 2^E

// Orders the earlier instructions of event E's source pipe before the later ones of its
// destination pipe (a SetFlag/WaitFlag pair): the targeted replacement for PipeBarrier<PIPE_ALL>.
// Used only between V, MTE2 and MTE3 where a TBuf gets no queue events, and for S -> MTE3 in
// store_word (the SetFlag page's own example: a SetValue before a DataCopy out). The orderings
// between the scalar unit and a pipe's earlier work (MTE2 -> S, MTE3 -> S, V -> S) and within V
// are the BiSheng compiler's automatic synchronisation (--cce-auto-sync, on by default for kernel
// launch and custom operator projects; "Automatic Synchronization" in the BiSheng compiler
// guide), so the kernels add no flags of those kinds; the CPU model applies them the same way.
template <AscendC::HardEvent E>
__aicore__ inline void sync_pipes() {
    AscendC::TEventID id = AscendC::GetTPipePtr()->FetchEventID(E);
    AscendC::SetFlag<E>(id);
    AscendC::WaitFlag<E>(id);
}

// Register-level scalar work (no UB or GM access) in the loops where it adds up: the CPU model
// counts it (R7, a hand count of the C-level operations of each loop body); CANN: nothing.
#ifndef ENEC_SCALAR_OPS
#define ENEC_SCALAR_OPS(n) ((void)0)
#endif

__aicore__ inline uint32_t pad32(uint32_t x) { return (x + 31u) & ~31u; }
__aicore__ inline uint32_t round_up(uint32_t x, uint32_t m) { return (x + m - 1) / m * m; }
__aicore__ inline uint32_t min_u32(uint32_t a, uint32_t b) { return a < b ? a : b; }
__aicore__ inline uint32_t max_u32(uint32_t a, uint32_t b) { return a > b ? a : b; }

// ---------------------------------------------------------------------------------------------
// Dtypes and frame layout (mirror of src/format/: Dtype, Plane::at, FrameLayout::new)
// ---------------------------------------------------------------------------------------------

struct Dtype {
    uint32_t code;   // 1 bf16, 2 fp16, 3 fp32, 4 e4m3, 5 e5m2 (FORMAT.md section 2)
    uint32_t e;      // exponent bits E
    uint32_t m;      // mantissa bits M
    uint32_t eb;     // element bytes
    uint32_t minor;  // the format minor version that brought the dtype (stream header byte 5)
};

__aicore__ inline Dtype dtype_of(uint32_t code) {
    Dtype d;
    d.code = code;
    d.minor = 0;
    if (code == 1) { d.e = 8; d.m = 7; d.eb = 2; }
    else if (code == 2) { d.e = 5; d.m = 10; d.eb = 2; }
    else if (code == 4) { d.e = 4; d.m = 3; d.eb = 1; d.minor = 1; }
    else if (code == 5) { d.e = 5; d.m = 2; d.eb = 1; d.minor = 1; }
    else { d.e = 8; d.m = 23; d.eb = 4; }
    return d;
}

struct SubPlane {
    uint32_t offset;  // bytes from the frame start
    uint32_t words;   // W = ceil(count * bits / 16)
    uint32_t bits;    // p
    uint32_t shift;   // o
};

struct Plane {
    SubPlane subs[5];
    uint32_t len;
    uint32_t count;
    uint32_t width;
    uint32_t end;
};

__aicore__ inline Plane plane_at(uint32_t offset, uint32_t width, uint32_t count) {
    Plane p;
    p.len = 0;
    p.count = count;
    p.width = width;
    p.end = offset;
    for (uint32_t bits = 1; bits <= 16; bits <<= 1) {
        if ((width & bits) != 0) {
            uint32_t words = (count * bits + 15) / 16;
            p.subs[p.len].offset = p.end;
            p.subs[p.len].words = words;
            p.subs[p.len].bits = bits;
            p.subs[p.len].shift = width & (bits - 1);
            p.len++;
            p.end += pad32(2 * words);
        }
    }
    ENEC_SCALAR_OPS(24 + 11 * p.len);  // 5 tests of `width`, 11 per sub-plane
    return p;
}

// plane_at(offset, width, count).end - offset: the plane's bytes.
__aicore__ inline uint32_t plane_bytes(uint32_t width, uint32_t count) {
    uint32_t bytes = 0, subs = 0;
    for (uint32_t bits = 1; bits <= 16; bits <<= 1) {
        if ((width & bits) != 0) {
            bytes += pad32(2 * ((count * bits + 15) / 16));
            subs++;
        }
    }
    ENEC_SCALAR_OPS(20 + 7 * subs);  // 5 tests of `width`, 7 per sub-plane
    return bytes;
}

enum Coding : uint32_t { CODING_STORED = 0, CODING_GROUPS = 1, CODING_RANKED = 2 };

struct Params {
    uint32_t coding;
    uint32_t dead;      // k
    uint32_t base, width, low, flagged;          // groups
    uint32_t levels, widths[MAX_LEVELS], counts[MAX_LEVELS];  // ranked
};

__aicore__ inline void rank_starts(const Params& p, uint32_t s[MAX_LEVELS + 1]) {
    s[0] = 0;
    for (uint32_t j = 0; j < MAX_LEVELS; j++)
        s[j + 1] = j < p.levels ? s[j] + (1u << p.widths[j]) - 1 : s[j];
}

struct Layout {
    uint32_t tableAt, tableLen;
    Plane residual;
    Plane planes[MAX_LEVELS + 1];
    uint32_t planeCount;
    uint32_t bytes;
};

__aicore__ inline Layout frame_layout(const Dtype& d, uint32_t elements, const Params& p) {
    Layout l;
    l.tableAt = HEADER_BYTES;
    l.tableLen = 0;
    l.planeCount = 0;
    l.residual = plane_at(HEADER_BYTES, 0, 0);
    uint32_t at = HEADER_BYTES;
    uint32_t residualWidth = 1 + d.m - p.dead;
    if (p.coding == CODING_STORED) {
        l.bytes = at + pad32(elements * d.eb);
        return l;
    }
    if (p.coding == CODING_GROUPS) {
        l.residual = plane_at(at, residualWidth, elements);
        at = l.residual.end;
        uint32_t groups = (elements + 15) / 16;
        l.planes[0] = plane_at(at, 1, groups);
        at = l.planes[0].end;
        l.planes[1] = plane_at(at, p.low, 16 * groups);
        at = l.planes[1].end;
        l.planes[2] = plane_at(at, p.width - min_u32(p.low, p.width), 16 * p.flagged);
        at = l.planes[2].end;
        l.planeCount = 3;
    } else {
        uint32_t s[MAX_LEVELS + 1];
        rank_starts(p, s);
        l.tableLen = s[p.levels];
        at += pad32(l.tableLen);
        l.residual = plane_at(at, residualWidth, elements);
        at = l.residual.end;
        uint32_t count = elements;
        for (uint32_t j = 0; j < p.levels; j++) {
            l.planes[j] = plane_at(at, p.widths[j], count);
            at = l.planes[j].end;
            count = p.counts[j];
        }
        l.planes[p.levels] = plane_at(at, d.e, count);
        at = l.planes[p.levels].end;
        l.planeCount = p.levels + 1;
    }
    ENEC_SCALAR_OPS(12 + 4 * l.planeCount);
    l.bytes = at;
    return l;
}

// ---------------------------------------------------------------------------------------------
// h32 (src/checksum.rs), scalar: XXH32 rounds in 32 lanes over 128-byte blocks.
// Scalar because the documentation promises no wrapping 32-bit vector multiply; one built from
// exact 8x16-bit products would take more vector instructions per 128-byte block than this loop.
// ---------------------------------------------------------------------------------------------

constexpr uint32_t P1 = 0x9E3779B1u, P2 = 0x85EBCA77u, P3 = 0xC2B2AE3Du, P4 = 0x27D4EB2Fu, P5 = 0x165667B1u;

__aicore__ inline uint32_t rotl32(uint32_t x, uint32_t r) { return (x << r) | (x >> (32 - r)); }

struct H32 {
    uint32_t acc[32];
    uint32_t len;
    __aicore__ inline void init() {
        for (uint32_t j = 0; j < 32; j++) acc[j] = P5 + j;
        len = 0;
    }
    // Feeds `n` bytes; every call but the last must feed a multiple of 128 bytes. Two lanes per
    // scalar load (64-bit words, little-endian: the low half is the even lane).
    __aicore__ inline void feed(const LocalTensor<uint8_t>& bytes, uint32_t n) {
        LocalTensor<uint64_t> pairs = bytes.ReinterpretCast<uint64_t>();
        uint32_t full = n / 128;
        for (uint32_t b = 0; b < full; b++)
            for (uint32_t j = 0; j < 32; j += 2) {
                uint64_t w = pairs.GetValue(b * 16 + j / 2);
                acc[j] = rotl32(acc[j] + uint32_t(w) * P2, 13) * P1;
                acc[j + 1] = rotl32(acc[j + 1] + uint32_t(w >> 32) * P2, 13) * P1;
            }
        uint32_t rest = n - full * 128;
        if (rest != 0) {
            for (uint32_t j = 0; j < 32; j++) {
                uint32_t w = 0;
                for (uint32_t k = 0; k < 4; k++) {
                    uint32_t at = full * 128 + 4 * j + k;
                    if (at < n) w |= uint32_t(bytes.GetValue(at)) << (8 * k);
                }
                acc[j] = rotl32(acc[j] + w * P2, 13) * P1;
            }
        }
        len += n;
    }
    __aicore__ inline uint32_t finish() const {
        uint32_t h = len + P5;
        for (uint32_t j = 0; j < 32; j++) h = rotl32(h + acc[j] * P3, 17) * P4;
        h ^= h >> 15;
        h *= P2;
        h ^= h >> 13;
        h *= P3;
        h ^= h >> 16;
        return h;
    }
};

// ---------------------------------------------------------------------------------------------
// Frame header (src/format/ FrameHeader::parse + the checks of frame/decode.rs)
// ---------------------------------------------------------------------------------------------

__aicore__ inline uint32_t u32_at(const LocalTensor<uint8_t>& b, uint32_t at) {
    return uint32_t(b.GetValue(at)) | (uint32_t(b.GetValue(at + 1)) << 8) | (uint32_t(b.GetValue(at + 2)) << 16) |
           (uint32_t(b.GetValue(at + 3)) << 24);
}

// Returns an EnecFrameStatus; fills `p`, `frameBytes`, `checksum`.
__aicore__ inline uint32_t parse_frame_header(const LocalTensor<uint8_t>& b, const Dtype& d, uint32_t elements,
                                              Params& p, uint32_t& frameBytes, uint32_t& checksum) {
    frameBytes = u32_at(b, 0);
    checksum = u32_at(b, 4);
    uint32_t n = u32_at(b, 8);
    p.coding = b.GetValue(12);
    p.dead = b.GetValue(13);
    p.base = p.width = p.low = p.flagged = 0;
    p.levels = 0;
    for (uint32_t j = 0; j < MAX_LEVELS; j++) p.widths[j] = p.counts[j] = 0;
    if (p.dead > d.m) return ENEC_FRAME_CORRUPT;
    if (b.GetValue(14) != 0 || b.GetValue(15) != 0) return ENEC_FRAME_CORRUPT;
    if (p.coding == CODING_STORED) {
        if (p.dead != 0) return ENEC_FRAME_CORRUPT;
        for (uint32_t i = 16; i < 32; i++)
            if (b.GetValue(i) != 0) return ENEC_FRAME_CORRUPT;
    } else if (p.coding == CODING_GROUPS) {
        p.base = b.GetValue(16);
        p.width = b.GetValue(17);
        p.low = b.GetValue(18);
        p.flagged = u32_at(b, 20);
        if (p.base >= (1u << d.e) || p.width == 0 || p.width > d.e || p.low > p.width) return ENEC_FRAME_CORRUPT;
        if (b.GetValue(19) != 0) return ENEC_FRAME_CORRUPT;
        for (uint32_t i = 24; i < 32; i++)
            if (b.GetValue(i) != 0) return ENEC_FRAME_CORRUPT;
        if (p.flagged > (n + 15) / 16) return ENEC_FRAME_CORRUPT;
        if (p.low == p.width && p.flagged != 0) return ENEC_FRAME_CORRUPT;
    } else if (p.coding == CODING_RANKED) {
        p.levels = b.GetValue(16);
        if (p.levels < 1 || p.levels > MAX_LEVELS) return ENEC_FRAME_CORRUPT;
        for (uint32_t j = 0; j < MAX_LEVELS; j++) {
            p.widths[j] = b.GetValue(17 + j);
            p.counts[j] = u32_at(b, 20 + 4 * j);
            bool used = j < p.levels;
            if ((used && (p.widths[j] == 0 || p.widths[j] > d.e)) || (!used && p.widths[j] != 0))
                return ENEC_FRAME_CORRUPT;
            if (j >= p.levels && p.counts[j] != 0) return ENEC_FRAME_CORRUPT;
        }
        uint32_t s[MAX_LEVELS + 1];
        rank_starts(p, s);
        if (s[p.levels] > (1u << d.e)) return ENEC_FRAME_CORRUPT;
        uint32_t prev = n;
        for (uint32_t j = 0; j < p.levels; j++) {
            if (p.counts[j] > prev) return ENEC_FRAME_CORRUPT;
            prev = p.counts[j];
        }
    } else {
        return ENEC_FRAME_UNSUPPORTED_CODING;
    }
    if (n != elements || elements == 0) return ENEC_FRAME_CORRUPT;
    return ENEC_FRAME_OK;
}

// dst[i] = value through the 32-byte UB buffer `word` and a DMA write. Per-frame words (decode
// status, encode sizes) written by different cores share cache lines, so a scalar GM write
// (through the data cache, which writes whole lines back) could undo another core's word.
__aicore__ inline void store_word(const GlobalTensor<uint32_t>& dst, uint32_t i, const LocalTensor<uint32_t>& word,
                                  uint32_t value) {
    word.SetValue(0, value);  // after the previous word has left: MTE3 -> S is automatic
    sync_pipes<AscendC::HardEvent::S_MTE3>();
    AscendC::DataCopyExtParams copy(1, sizeof(uint32_t), 0, 0, 0);
    AscendC::DataCopyPad(dst[i], word, copy);
}

// ---------------------------------------------------------------------------------------------
// Vector building blocks shared by both kernels
// ---------------------------------------------------------------------------------------------

// x & (2^bits - 1) on uint16 lanes with two constant shifts (no mask tensor needed).
__aicore__ inline void keep_low_bits(const LocalTensor<uint16_t>& v, uint32_t bits, uint32_t n) {
    if (bits >= 16) return;
    if (bits == 0) {
        AscendC::Duplicate(v, uint16_t(0), int32_t(n));
        return;
    }
    AscendC::ShiftLeft(v, v, uint16_t(16 - bits), int32_t(n));
    AscendC::ShiftRight(v, v, uint16_t(16 - bits), int32_t(n));
}

__aicore__ inline void keep_low_bits32(const LocalTensor<uint32_t>& v, uint32_t bits, uint32_t n) {
    if (bits >= 32) return;
    AscendC::ShiftLeft(v, v, uint32_t(32 - bits), int32_t(n));
    AscendC::ShiftRight(v, v, uint32_t(32 - bits), int32_t(n));
}

// Gather offset tables, built once per core by vector ops (2 * TILE entries each):
//   ilv[k]        interleave: lane k of a u32 array viewed as u16 takes lane k/2 of the low source
//                 (bytes 0..2*TILE) for even k and of the high source (bytes 2*TILE..) for odd k:
//                 ilv[k] = k + (k & 1) * (2 * TILE - 1);
//   dlv[i]        deinterleave even: u16 lane 2i of a u32 array (its low half);
//   dlv[TILE + i] deinterleave odd: u16 lane 2i + 1 (its high half).
__aicore__ inline void build_offsets(const LocalTensor<uint32_t>& ilv, const LocalTensor<uint32_t>& dlv) {
    static_assert(TILE == 1024, "ilv's shift assumes 2 * TILE = 2^11");
    LocalTensor<int32_t> k = ilv.ReinterpretCast<int32_t>(), odd = dlv.ReinterpretCast<int32_t>();
    AscendC::CreateVecIndex(k, int32_t(0), 2 * TILE);
    AscendC::Duplicate(odd, int32_t(1), int32_t(2 * TILE));  // dlv is scratch until its own turn
    AscendC::And(odd.ReinterpretCast<uint16_t>(), k.ReinterpretCast<uint16_t>(), odd.ReinterpretCast<uint16_t>(),
                 int32_t(4 * TILE));  // k & 1 (bitwise on the u16 halves of each lane)
    AscendC::Sub(k, k, odd, int32_t(2 * TILE));
    AscendC::ShiftLeft(odd, odd, int32_t(11), int32_t(2 * TILE));
    AscendC::Add(k, k, odd, int32_t(2 * TILE));
    LocalTensor<int32_t> d = dlv.ReinterpretCast<int32_t>();
    AscendC::CreateVecIndex(d, int32_t(0), TILE);
    AscendC::ShiftLeft(d, d, int32_t(2), int32_t(TILE));
    AscendC::Adds(d[TILE], d, int32_t(2), int32_t(TILE));
}

// Prefix sums on the vector unit (Hillis-Steele, log2(n) steps of one Add each): A2 has no scan
// instruction for 16-bit integers. The two ping-pong buffers hold LEAD = TILE / 2 zero lanes
// before the data, so every lane before the start reads zero and a step is one instruction on
// all n lanes: shifts by 1, 2, 4, 8 lanes are Gathers into the destination (an operand may not
// start off a 32-byte boundary, their offsets 2 q with the base address 2 (LEAD - d)) followed by
// an in-place Add, shifts by 16 .. TILE / 2 are plain offset operands (src[LEAD - d ..]).
struct Scan {
    static constexpr uint32_t LEAD = TILE / 2;
    LocalTensor<int16_t> a, b;        // LEAD + TILE lanes each
    LocalTensor<uint32_t> laneBytes;  // TILE: laneBytes[q] = 2 q

    // Buffers: `ping`, `pong` of (LEAD + TILE) int16; `bytes`, the byte offsets 2 q of TILE lanes.
    __aicore__ inline void init(const LocalTensor<int16_t>& ping, const LocalTensor<int16_t>& pong,
                                const LocalTensor<uint32_t>& bytes) {
        a = ping;
        b = pong;
        laneBytes = bytes;
        AscendC::Duplicate(a, int16_t(0), int32_t(LEAD));
        AscendC::Duplicate(b, int16_t(0), int32_t(LEAD));
    }

    // Inclusive prefix sums of e[0..n) (non-negative, total < 2^15), n <= TILE. Returns the view
    // holding them; a scalar read of lane n - 1 (after a V -> S sync) is the total.
    __aicore__ inline LocalTensor<int16_t> inclusive(const LocalTensor<int16_t>& e, uint32_t n) {
        AscendC::Adds(a[LEAD], e, int16_t(0), int32_t(n));
        return steps(a, b, 1, 0, n);
    }

    // The same for e = led[lead ..] with zeros in led[lead - 1] (1 <= lead, lead % 16 == 0): the
    // first step reads e where it lies, with no copy into the ping-pong buffers.
    __aicore__ inline LocalTensor<int16_t> inclusive_led(const LocalTensor<int16_t>& led, uint32_t lead,
                                                         uint32_t n) {
        LocalTensor<int16_t> e = led[lead];
        if (n == 1) {
            AscendC::Adds(a[LEAD], e, int16_t(0), int32_t(n));
            return a[LEAD];
        }
        AscendC::Gather(a[LEAD], led, laneBytes, uint32_t(2 * (lead - 1)), n);
        AscendC::Add(a[LEAD], a[LEAD], e, int32_t(n));
        return steps(a, b, 2, 1, n);
    }

private:
    // The doubling steps from d on (k: the Gather step of d = 2^k), the sums so far in src.
    __aicore__ inline LocalTensor<int16_t> steps(LocalTensor<int16_t> src, LocalTensor<int16_t> dst, uint32_t d,
                                                 uint32_t k, uint32_t n) {
        for (; k < 4 && d < n; k++, d <<= 1) {
            AscendC::Gather(dst[LEAD], src, laneBytes, uint32_t(2 * (LEAD - d)), n);
            AscendC::Add(dst[LEAD], dst[LEAD], src[LEAD], int32_t(n));
            LocalTensor<int16_t> t = src;
            src = dst;
            dst = t;
        }
        for (; d < n; d <<= 1) {
            AscendC::Add(dst[LEAD], src[LEAD], src[LEAD - d], int32_t(n));
            LocalTensor<int16_t> t = src;
            src = dst;
            dst = t;
        }
        return src[LEAD];
    }
};

// u32 lanes from two u16 arrays: dst[i] = hi[i] << 16 | lo[i], where `pair` holds lo at lanes
// 0..TILE and hi at lanes TILE..2*TILE. With hi = zeros this is the u16 -> u32 widening.
__aicore__ inline void interleave(const LocalTensor<uint32_t>& dst, const LocalTensor<uint16_t>& pair,
                                  const LocalTensor<uint32_t>& ilv, uint32_t n) {
    AscendC::Gather(dst.ReinterpretCast<uint16_t>(), pair, ilv, uint32_t(0), uint32_t(2 * n));
}

// Bytes to u16 lanes: dst[i] = byte i of the `words` u16 words at `src` (little-endian: the low
// byte of word j is byte 2 j), i < 2 * words <= 2 * TILE. The low bytes go to pair[0..words), the
// high bytes to pair[TILE..TILE + words) (two shifts each, A2 has no byte lanes), then interleave
// puts them in byte order. Used for the symbol table and for FP8 elements (one per lane).
__aicore__ inline void widen_bytes(const LocalTensor<uint16_t>& dst, const LocalTensor<uint16_t>& src,
                                   const LocalTensor<uint16_t>& pair, const LocalTensor<uint32_t>& ilv,
                                   uint32_t words) {
    AscendC::ShiftLeft(pair, src, uint16_t(8), int32_t(words));
    AscendC::ShiftRight(pair, pair, uint16_t(8), int32_t(words));
    AscendC::ShiftRight(pair[TILE], src, uint16_t(8), int32_t(words));
    interleave(dst.ReinterpretCast<uint32_t>(), pair, ilv, words);
}

// Escape / participation mask: bit q of `mask` = (v[q] `mode` value), q < n. Returns the number
// of set bits among the first n. v holds small non-negative integers (< 2048): exact in half.
__aicore__ inline uint32_t build_mask(const LocalTensor<uint16_t>& v, uint32_t n, uint32_t value,
                                      AscendC::CMPMODE mode, const LocalTensor<half>& hv,
                                      const LocalTensor<half>& hc, const LocalTensor<uint8_t>& mask) {
    if (n == 0) return 0;
    uint32_t n128 = round_up(n, 128);
    AscendC::Cast(hv, v.ReinterpretCast<int16_t>(), AscendC::RoundMode::CAST_NONE, n128);
    AscendC::Duplicate(hc, half(float(value)), int32_t(n128));
    AscendC::Compare(mask, hv, hc, mode, n128);
    LocalTensor<uint64_t> words = mask.ReinterpretCast<uint64_t>();
    uint32_t count = 0;
    for (uint32_t w = 0; w * 64 < n; w++) {
        uint64_t bits = words.GetValue(w);
        uint32_t valid = n - w * 64;
        if (valid < 64) bits &= (uint64_t(1) << valid) - 1;
        count += uint32_t(AscendC::ScalarGetCountOfValue<1>(bits));
    }
    return count;
}

// dst[q] = table[first + src[q]] for q < n (src and dst may be the same tensor): byte offsets
// src * 2 widened to u32 lanes through `wide` (zeros at wide[TILE..)), then one Gather from the
// u16 table with the base address 2 * first.
__aicore__ inline void lookup(const LocalTensor<uint16_t>& dst, const LocalTensor<uint16_t>& src, uint32_t n,
                              uint32_t first, const LocalTensor<uint16_t>& table, const LocalTensor<uint16_t>& wide,
                              const LocalTensor<uint32_t>& offs, const LocalTensor<uint32_t>& ilv) {
    if (n == 0) return;
    AscendC::ShiftLeft(wide, src, uint16_t(1), int32_t(n));
    interleave(offs, wide, ilv, n);
    AscendC::Gather(dst, table, offs, uint32_t(2 * first), n);
}

}  // namespace enec

// Decode of column frames (column_frame in decode_columns.cuh), one warp per frame: the
// default path for every batch whose escape arrays fit kWarpEscapeCap bytes a frame (the
// column kernel takes the others).
//
// Why a warp: a frame's 32 lanes need no block barrier anywhere (only __syncwarp), so the four
// frames of a block and the frames of the other blocks on an SM run independently and hide each
// other's latency; the header prologue stalls one warp, not a block.
//
// A step decodes 1,024 consecutive elements: lane t takes octets u = 128 s + 32 j + t (j = 0..3)
// of the frame's N / 8 octets in element order; octet u is row r = u div (C / 8), columns
// 8 g .. 8 g + 7 (g = u mod (C / 8)), so its fields of every column-laid plane are one aligned
// 16-byte load per sub-plane (decode_columns.cuh: why columns). One 64-bit warp scan of the four
// octets' escape counts (16-bit counters) gives each octet its first entry in the resolved
// level-2 array. Each group of 32 octets goes to global memory and to a staging area in shared
// memory, from which lane t hashes word t of each 128-byte block: the warp's lanes are h32's
// lanes.
#pragma once

namespace enec {
namespace dev {

constexpr uint32_t kWarpFrames = 4;               // warps per block, one frame each
constexpr uint32_t kWarpThreads = 32 * kWarpFrames;
constexpr uint32_t kWarpStep = 1024;              // elements per step: 4 octets per lane
constexpr uint32_t kWarpStage = 256;              // elements staged for hashing at a time
constexpr uint32_t kWarpEscapeCap = 12 * 1024;    // escape-array bytes per frame, at most

struct WarpShared {
  FrameHeader h;
  Layout lay;
  uint32_t status;
  uint32_t esc_at[kColMaxEscapeLevels + 1];  // byte offset of each escape level's array
  uint8_t table[272];  // the symbol table, zero past its end (8-byte windows stay inside)
};

// Dynamic shared memory: `stride` bytes per warp, the staging area (kWarpStage elements of the
// widest dtype) at 0, the escape arrays at `esc` (esc_cap bytes).
struct WarpSmem {
  uint32_t stride;
  uint32_t esc;
  uint32_t esc_cap;
};

// A column-laid plane of N values (N a multiple of 1,024, C = N / 16): every sub-plane of p bits
// is 2 C p bytes (a multiple of 128, so no padding), hence sub-plane p of a plane of width w
// starting at `base` sits at base + 2 C (w & (p - 1)), its fields shifted by w & (p - 1).
struct ColPlane {
  uint32_t base, width;
};

// Fields of elements (r, 8 g .. 8 g + 7) as in col_fields, for a register-held plane. W: the
// plane's width when known at compile time (its sub-plane tests fold away), else 0.
template <bool SKIP16, uint32_t W>
ENEC_DEV void colp_fields(const uint8_t* fb, const ColPlane& pl, uint32_t C, uint32_t r,
                          uint32_t g, uint32_t (&v)[4]) {
  const uint32_t width = W ? W : pl.width;
  v[0] = v[1] = v[2] = v[3] = 0;
#pragma unroll
  for (uint32_t p = 1; p <= (SKIP16 ? 8u : 16u); p <<= 1) {
    if (width & p) {
      const uint32_t o = width & (p - 1);
      const uint32_t set = r & (p - 1), bit = r & (0u - p);
      const uint32_t mask = ((1u << p) - 1) * 0x10001u;
      const uint4 w = *(const uint4*)(fb + pl.base + 2 * (C * o + 8 * g + C * set));
      v[0] |= ((w.x >> bit) & mask) << o;
      v[1] |= ((w.y >> bit) & mask) << o;
      v[2] |= ((w.z >> bit) & mask) << o;
      v[3] |= ((w.w >> bit) & mask) << o;
    }
  }
}

// Prefetches into L1 the lines colp_fields reads for elements (r, 8 g .. 8 g + 7).
template <uint32_t W>
ENEC_DEV void colp_prefetch(const uint8_t* fb, const ColPlane& pl, uint32_t C, uint32_t r,
                            uint32_t g) {
  const uint32_t width = W ? W : pl.width;
#pragma unroll
  for (uint32_t p = 1; p <= 16u; p <<= 1) {
    if (width & p) {
      const uint32_t o = width & (p - 1), set = r & (p - 1);
      prefetch_l1(fb + pl.base + 2 * (C * o + 8 * g + C * set));
    }
  }
}

// Exclusive prefix sum over the warp; total: the sum of all lanes.
template <class T>
ENEC_DEV T warp_excl_scan(T v, T& total) {
  const uint32_t lane = threadIdx.x & 31;
  T incl = v;
#pragma unroll
  for (uint32_t d = 1; d < 32; d <<= 1) {
    const T t = __shfl_up_sync(kFull, incl, d);
    if (lane >= d) incl += t;
  }
  total = __shfl_sync(kFull, incl, 31);
  return incl - v;
}

// Exponent bytes of an octet from its level-1 codes c (escaped elements get garbage, replaced
// by warp_octet).
template <uint32_t W1>
ENEC_DEV void warp_exponents(const WarpShared& S, const uint32_t (&c)[4], bool small, uint32_t t0,
                             uint32_t t1, uint32_t& xlo, uint32_t& xhi) {
  if (W1 ? W1 <= 3 : small) {
    const uint32_t s01 = (c[0] | (c[0] >> 12)) & 0xffu, s23 = (c[1] | (c[1] >> 12)) & 0xffu;
    const uint32_t s45 = (c[2] | (c[2] >> 12)) & 0xffu, s67 = (c[3] | (c[3] >> 12)) & 0xffu;
    xlo = byte_perm(t0, t1, s01 | (s23 << 8));
    xhi = byte_perm(t0, t1, s45 | (s67 << 8));
  } else {
    xlo = xhi = 0;
#pragma unroll
    for (uint32_t q = 0; q < 8; q++) {
      const uint32_t code = (c[q >> 1] >> (16 * (q & 1))) & 0xffffu;
      const uint32_t x = S.table[code & 0xffu];
      if (q < 4) xlo |= x << (8 * q);
      else xhi |= x << (8 * (q - 4));
    }
  }
}

// Output words of octet (r, g) of a ranked frame: its exponent bytes xlo:xhi (escaped elements
// take consecutive entries of X from `first`) merged with the residuals.
template <int DT, uint32_t RW>
ENEC_DEV void warp_octet(const uint8_t* fb, const WarpShared& S, const ColPlane& res,
                         uint32_t C, uint32_t r, uint32_t g, uint32_t xlo, uint32_t xhi,
                         uint32_t mask8, const uint8_t* X,
                         uint32_t first, uint32_t (&out)[2 * DT_<DT>::EB]) {
  constexpr int EB = DT_<DT>::EB;
  const uint32_t k = S.h.dead_bits;
  if (mask8) {
    const uint32_t* wp = (const uint32_t*)(X + (first & ~3u));
    const uint32_t a = wp[0], b = wp[1], d = wp[2];
    const uint32_t sh = 8 * (first & 3);
    col_take_escapes(mask8, funnel_r(a, b, sh), funnel_r(b, d, sh), xlo, xhi);
  }
  if (EB == 2) {
    uint32_t rr[4], o4[4];
    colp_fields<false, RW>(fb, res, C, r, g, rr);
    col_merge16<DT>(xlo, xhi, rr, k, o4);
#pragma unroll
    for (int q = 0; q < 4; q++) out[q] = o4[q];
  } else {
    uint32_t rr[4];
    colp_fields<true, RW>(fb, res, C, r, g, rr);
    const uint32_t rw = RW ? RW : res.width;
    uint32_t hi16[4] = {0, 0, 0, 0}, o16 = 0;
    if (rw & 16) {
      o16 = rw & 15;
      const uint4 w = *(const uint4*)(fb + res.base + 2 * (C * o16 + 8 * g + C * r));
      hi16[0] = w.x; hi16[1] = w.y; hi16[2] = w.z; hi16[3] = w.w;
    }
    const uint32_t live = DT_<DT>::M - k, lm = (1u << live) - 1;
#pragma unroll
    for (uint32_t q = 0; q < 8; q++) {
      const uint32_t h = 16 * (q & 1);
      const uint32_t rv = ((rr[q >> 1] >> h) & 0xffffu) | (((hi16[q >> 1] >> h) & 0xffffu) << o16);
      const uint32_t x = ((q < 4 ? xlo : xhi) >> (8 * (q & 3))) & 0xffu;
      out[q] = ((rv >> live) << 31) | (x << 23) | ((rv & lm) << k);
    }
  }
}

// The elements of a ranked frame, step by step (see the top of this file); returns the number of
// level-1 escapes met, to check against c2. W1, RW: the level-1 and residual widths when the
// caller dispatched on them (their sub-plane tests fold away), else 0.
// ROW: N is 16,384 (the default frame length), so a step is exactly one row (C = 1,024, 128
// octets): the row is warp-uniform and lane t's octets of a step sit at fixed offsets from
// pointers advanced by 16 t once, which saves the per-octet division and address arithmetic.
template <int DT, uint32_t W1, uint32_t RW, bool ROW>
ENEC_DEV uint32_t warp_rows(const uint8_t* fb, const WarpShared& S, const ColPlane& l1,
                            const ColPlane& res, uint32_t N, const uint8_t* X, uint32_t c2,
                            uint8_t* dst, bool vec, bool hashing, uint32_t* stage,
                            uint32_t& acc) {
  constexpr int EB = DT_<DT>::EB;
  constexpr int NW = 2 * EB;  // output words per octet
  const uint32_t lane = threadIdx.x & 31;
  const uint32_t m1 = W1 ? W1 : l1.width;
  if (ROW) {
    N = kColMaxElements;
    fb += 16 * lane;
    dst += 8 * EB * lane;
  }
  const uint32_t C = N / 16, per_row = C / 8;
  // u div per_row as a multiply-high: per_row <= 128 and u < 2,048, so ceil(2^32 / per_row)
  // is exact.
  const uint32_t rdiv = (uint32_t)((0x100000000ull + per_row - 1) / per_row);
  const bool small = m1 <= 3;
  const uint32_t t0 = ((const uint32_t*)S.table)[0], t1 = ((const uint32_t*)S.table)[1];
  uint32_t base = 0;
  for (uint32_t s = 0; s < N / kWarpStep; s++) {
    // The level-1 codes of the four octets, their loads in flight together; the exponents
    // before the scan, so that only two words per octet stay live across it.
    uint32_t c[4][4], x[4][2], mask[4], r[4], g[4];
    uint64_t cnt = 0;
#pragma unroll
    for (uint32_t j = 0; j < 4; j++) {
      const uint32_t u = 128 * s + 32 * j + lane;
      if (ROW) {
        r[j] = s;
        g[j] = 32 * j;
      } else {
        r[j] = (uint32_t)(((uint64_t)u * rdiv) >> 32);
        g[j] = u - r[j] * per_row;
      }
      // The residuals are read after the scan: their lines start towards L1 now, so the four
      // octets wait for memory once, not once each.
      colp_prefetch<RW>(fb, res, C, r[j], g[j]);
      colp_fields<false, W1>(fb, l1, C, r[j], g[j], c[j]);
      // And the next step's level-1 codes.
      if (s + 1 < N / kWarpStep) {
        if (ROW) {
          colp_prefetch<W1>(fb, l1, C, s + 1, 32 * j);
        } else {
          const uint32_t un = u + 128, rn = (uint32_t)(((uint64_t)un * rdiv) >> 32);
          colp_prefetch<W1>(fb, l1, C, rn, un - rn * per_row);
        }
      }
    }
#pragma unroll
    for (uint32_t j = 0; j < 4; j++) {
      mask[j] = col_escapes(c[j], m1);
      cnt |= (uint64_t)__popc(mask[j]) << (16 * j);
      warp_exponents<W1>(S, c[j], small, t0, t1, x[j][0], x[j][1]);
    }
    uint64_t all;
    const uint64_t before = warp_excl_scan(cnt, all);
    uint32_t first = base;
#pragma unroll
    for (uint32_t j = 0; j < 4; j++) {
      // Past the array's end only on corrupt input (caught by the caller): stay inside its
      // padding.
      uint32_t at = first + (uint32_t)((before >> (16 * j)) & 0xffffu);
      at = at < c2 ? at : c2;
      uint32_t out[NW];
      warp_octet<DT, RW>(fb, S, res, C, r[j], g[j], x[j][0], x[j][1], mask[j], X, at, out);
      col_store<NW>(dst + (size_t)(r[j] * C + 8 * g[j]) * EB, vec, out);
      if (hashing) {
        // The group's 32 octets are 8 EB consecutive 128-byte blocks: lane t hashes word t
        // of each.
        col_ring_put<NW>((uint8_t*)stage + lane * 8 * EB, out);
        __syncwarp();
#pragma unroll
        for (uint32_t b = 0; b < kWarpStage * EB / 128; b++) acc = h32_round(acc, stage[32 * b + lane]);
        __syncwarp();
      }
      first += (uint32_t)((all >> (16 * j)) & 0xffffu);
    }
    base = first;
  }
  return base;
}

// The general steps (any widths, any column frame length) out of line, so that the register
// budget that lets six blocks share an SM is the specialised steps' alone. Returns the number of
// level-1 escapes met and the lane's hash accumulator.
template <int DT>
ENEC_DEV_OUTLINE uint2 warp_rows_general(const uint8_t* fb, const WarpShared& S, ColPlane l1,
                                         ColPlane res, uint32_t N, const uint8_t* X, uint32_t c2,
                                         uint8_t* dst, bool vec, bool hashing, uint32_t* stage,
                                         uint32_t acc) {
  const uint32_t base =
      warp_rows<DT, 0, 0, false>(fb, S, l1, res, N, X, c2, dst, vec, hashing, stage, acc);
  return make_uint2(base, acc);
}

// One frame by one warp. Status: 0 or the frame's error.
template <int DT, bool VERIFY>
ENEC_DEV void warp_frame(const enec_cuda_frame& fr, uint32_t f, const WarpSmem& L,
                         uint32_t* status, WarpShared& S, uint8_t* mine) {
  constexpr int EB = DT_<DT>::EB;
  const uint32_t lane = threadIdx.x & 31;
  const uint8_t* fb = (const uint8_t*)fr.src;
  DtypeInfo d = {8, 7, 2};
  dtype_info(DT, &d);
  if (lane == 0) {
    uint32_t err = frame_prologue(fr, fb, d, S.h, S.lay);
    if (!err && S.h.coding == kRanked) err = escape_layout(S.h, S.lay, S.esc_at, L.esc_cap);
    S.status = err;
  }
  __syncwarp();
  if (S.status != 0) {
    if (lane == 0) status[f] = S.status;
    return;
  }
  const uint32_t N = fr.elements;
  const bool ranked = S.h.coding == kRanked;
  if (ranked) {
    bool bad = false;
    for (uint32_t t = lane; t < sizeof S.table; t += 32) {
      const uint8_t x = t < S.lay.table_len ? fb[S.lay.table_at + t] : 0;
      S.table[t] = x;
      bad |= (x >> d.e) != 0;
    }
    if (__any_sync(kFull, bad)) {
      if (lane == 0) status[f] = kErrTable;
      return;
    }
    __syncwarp();
  }
  const bool hashing = VERIFY && fr.checksums;
  uint8_t* dst = (uint8_t*)fr.dst;
  const bool vec = (((uintptr_t)dst) & 15) == 0;
  uint32_t acc = kP5 + lane;
  uint32_t err = 0;
  if (!ranked) {
    // Stored: 128-byte blocks, lane t copies (and hashes) word t of each.
    const uint8_t* body = fb + kFrameHeaderBytes;
    for (uint32_t b = 0; b < N * EB / 128; b++) {
      const uint32_t w = ((const uint32_t*)body)[32 * b + lane];
      uint8_t* o = dst + 128 * b + 4 * lane;
      if (vec) {
        *(uint32_t*)o = w;
      } else {
        for (int i = 0; i < 4; i++) o[i] = (uint8_t)(w >> (8 * i));
      }
      if (hashing) acc = h32_round(acc, w);
    }
  } else {
    uint8_t* esc = mine + L.esc;
    uint32_t* stage = (uint32_t*)mine;
    const auto scan = [](uint32_t v, uint32_t& total) { return warp_excl_scan(v, total); };
    if (!escape_levels<32>(fb, S, esc, lane, scan, [] { __syncwarp(); })) {
      if (lane == 0) status[f] = kErrEscapes;
      return;
    }
    const uint8_t* X = esc + S.esc_at[1];
    const uint32_t c2 = S.lay.planes[1].count, m1 = S.h.widths[0];
    const ColPlane l1 = {S.lay.planes[0].s[0].offset, m1};
    const ColPlane res = {S.lay.residual.len ? S.lay.residual.s[0].offset : 0, S.lay.residual.width};
    const uint32_t shape = m1 | (res.width << 8);
    uint32_t base;
    // The common shapes at the default frame length get steps specialised on both; anything
    // else takes the general steps.
    const bool full = N == kColMaxElements;
#define ENEC_WARP_ROWS(w1, rw, row) \
  warp_rows<DT, w1, rw, row>(fb, S, l1, res, N, X, c2, dst, vec, hashing, stage, acc)
    if (full && DT == 1 && shape == (2 | 8 << 8)) base = ENEC_WARP_ROWS(2, 8, true);
    else if (full && DT == 1 && shape == (3 | 8 << 8)) base = ENEC_WARP_ROWS(3, 8, true);
    else if (full && DT == 2 && shape == (2 | 11 << 8)) base = ENEC_WARP_ROWS(2, 11, true);
    else if (full && DT == 2 && shape == (3 | 11 << 8)) base = ENEC_WARP_ROWS(3, 11, true);
    else if (full && DT == 3 && shape == (2 | 24 << 8)) base = ENEC_WARP_ROWS(2, 24, true);
    else if (full && DT == 3 && shape == (3 | 24 << 8)) base = ENEC_WARP_ROWS(3, 24, true);
    else {
      const uint2 ba = warp_rows_general<DT>(fb, S, l1, res, N, X, c2, dst, vec, hashing, stage, acc);
      base = ba.x;
      acc = ba.y;
    }
#undef ENEC_WARP_ROWS
    if (base != c2) err = kErrEscapes;
  }
  if (hashing) {
    const uint32_t h = warp_h32_finish(acc, N * EB);
    if (h != S.h.checksum && err == 0) err = kErrChecksum;
  }
  if (lane == 0) status[f] = err;
}

// Blocks per SM the register budget aims at (80 registers for six on sm_90). Shared memory
// decides below that: MiniLM's escape arrays take about 37 KB a block, so five fit in sm_90's
// 228 KB (and four in sm_80's 164 KB); batches with smaller escape arrays fit six.
#if defined(ENEC_WARP_BLOCKS)
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define ENEC_WARP_BLOCKS 4
#else
#define ENEC_WARP_BLOCKS 6
#endif

template <bool VERIFY>
__global__ void __launch_bounds__(kWarpThreads, ENEC_WARP_BLOCKS)
    decode_warp_kernel(const enec_cuda_frame* frames, uint32_t n, WarpSmem L, uint32_t* status) {
  __shared__ WarpShared S[kWarpFrames];
  const uint32_t w = threadIdx.x >> 5;
  const uint32_t f = blockIdx.x * kWarpFrames + w;
  if (f >= n) return;
  const enec_cuda_frame fr = frames[f];
  if (!column_frame(fr.dtype, fr.elements, fr.coding)) return;  // the general kernel's
  uint8_t* mine = dyn_smem() + w * L.stride;
  if (fr.dtype == ENEC_CUDA_BF16) {
    warp_frame<1, VERIFY>(fr, f, L, status, S[w], mine);
  } else if (fr.dtype == ENEC_CUDA_FP16) {
    warp_frame<2, VERIFY>(fr, f, L, status, S[w], mine);
  } else if (fr.dtype == ENEC_CUDA_FP32) {
    warp_frame<3, VERIFY>(fr, f, L, status, S[w], mine);
  } else if ((threadIdx.x & 31) == 0) {
    status[f] = kErrHeader;
  }
}

}  // namespace dev
}  // namespace enec

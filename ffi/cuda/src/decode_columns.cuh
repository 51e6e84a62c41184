// Decode of "column" frames: ranked and stored frames whose element count N is a multiple of
// 1,024 and at most 16,384 (every frame at the default frame length but a stream's ragged last
// one). Other frames go to the general kernel (decode_kernel in kernels.cuh).
//
// Why columns: with N a multiple of 16, a sub-plane of p-bit fields has W = (N / 16) * p words,
// so element i = j + C * r (C = N / 16 columns, r = 0..15 rows) sits in word j + C * (r mod p) at
// bit (r div p) * p. A thread that owns 8 adjacent columns reads every field of its 128 elements
// with aligned 16-byte loads, no division, and each row r is a contiguous run of C elements, so
// rows come out in element order for the checksum.
//
// Per frame, one block of 128 decoding threads (one column octet each) and, with checksums, one
// hashing warp:
//   (1) escape planes (levels 2..L and the exponent level): fields are scattered into byte
//       arrays in smem, then resolved deepest level first, so that entry e of the level-2 array
//       holds the final exponent of the e-th level-1 escape;
//   (2) a pre-pass over the level-1 codes: each thread's escape mask per row, one packed block
//       scan for all 16 rows (16-bit counters), giving each (row, octet) its first escape entry;
//   (3) row by row: level-1 codes to exponents with byte_perm on the table (m1 <= 3), escaped
//       elements take consecutive entries of the level-2 array through one byte_perm over an
//       8-byte window, the residuals are merged two elements per 32-bit word, 16-byte stores, and
//       the row goes through the ring to the hashing warp.
#pragma once

namespace enec {
namespace dev {

constexpr uint32_t kColThreads = 128;
constexpr uint32_t kColWarps = kColThreads / 32;
constexpr uint32_t kColAll = kColThreads + kHashThreads;
constexpr uint32_t kColUnit = kColThreads * 8;  // elements per ring slot: at most one row
constexpr uint32_t kColRows = 16;
constexpr uint32_t kColMaxElements = kColUnit * kColRows;  // 16,384
constexpr uint32_t kColMaxEscapeLevels = kMaxLevels;       // arrays of levels 2..L + exponents

// Frames the column and warp kernels decode (16- and 32-bit dtypes); the general kernel takes
// every other one, FP8 frames among them.
ENEC_HD bool column_frame(uint32_t dtype, uint32_t elements, uint32_t coding) {
  return dtype <= ENEC_CUDA_FP32 && coding != kGroups && elements % kColUnit == 0 &&
         elements <= kColMaxElements && elements != 0;
}

struct ColShared {
  FrameHeader h;
  Layout lay;
  uint32_t status;
  uint32_t esc_at[kColMaxEscapeLevels + 1];  // byte offset of each escape level's array
  uint32_t tot[2][kColWarps];
  uint64_t tot64[4][kColWarps];
  uint8_t table[272];  // the symbol table, zero past its end (8-byte windows stay inside)
};

// Offsets in the column kernel's dynamic shared memory (bytes, computed by the host).
struct ColSmem {
  uint32_t ring;  // kSlots slots of kColUnit elements of the widest dtype
  uint32_t rows;  // u32 per (row, thread): first escape entry | escape mask << 16
  uint32_t esc;   // the escape levels' byte arrays
  uint32_t esc_cap;
};

// Barrier helpers for the 128 decoding threads and the ring with the hashing warp.
ENEC_DEV void col_bar() { bar_sync_c<kBarDec>(kColThreads); }

ENEC_DEV void col_ring_wait(uint32_t k) {
  if (k >= kSlots) bar_sync_slot<kBarEmpty>(k % kSlots, kColAll);
}

ENEC_DEV void col_ring_done(uint32_t k) { bar_arrive_slot<kBarFull>(k % kSlots, kColAll); }

// Exclusive prefix sum over the 128 decoding threads.
ENEC_DEV uint32_t col_scan(uint32_t v, uint32_t (&tot)[2][kColWarps], uint32_t& parity,
                           uint32_t& total) {
  const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  uint32_t incl = v;
#pragma unroll
  for (uint32_t d = 1; d < 32; d <<= 1) {
    const uint32_t t = __shfl_up_sync(kFull, incl, d);
    if (lane >= d) incl += t;
  }
  if (lane == 31) tot[parity][warp] = incl;
  col_bar();
  uint32_t before = 0, all = 0;
#pragma unroll
  for (uint32_t w = 0; w < kColWarps; w++) {
    const uint32_t t = tot[parity][w];
    all += t;
    before += w < warp ? t : 0;
  }
  parity ^= 1;
  total = all;
  return before + incl - v;
}

// Fields of elements (r, 8g .. 8g+7) of a column-laid plane whose values fit 16 bits, two per
// word (element 2q in the low half of v[q], 2q+1 in the high half). skip16: leave out a 16-bit
// sub-plane (the caller adds it: fp32 residuals wider than 16 bits).
template <bool SKIP16>
ENEC_DEV void col_fields(const uint8_t* fb, const Plane& pl, uint32_t C, uint32_t r, uint32_t g,
                         uint32_t (&v)[4]) {
  v[0] = v[1] = v[2] = v[3] = 0;
  const uint32_t len = pl.len;
  for (uint32_t si = 0; si < len; si++) {
    const uint32_t p = pl.s[si].bits;
    if (SKIP16 && p == 16) continue;
    const uint32_t set = r & (p - 1), bit = r & (0u - p), sh = pl.s[si].shift;
    const uint32_t mask = ((1u << p) - 1) * 0x10001u;
    const uint4 w = *(const uint4*)(fb + pl.s[si].offset + 2 * (8 * g + C * set));
    v[0] |= ((w.x >> bit) & mask) << sh;
    v[1] |= ((w.y >> bit) & mask) << sh;
    v[2] |= ((w.z >> bit) & mask) << sh;
    v[3] |= ((w.w >> bit) & mask) << sh;
  }
}

// Escape mask of 8 level-1 codes (bit q: element q escaped, its code all ones in m1 bits).
ENEC_DEV uint32_t col_escapes(const uint32_t (&c)[4], uint32_t m1) {
  uint32_t m = 0;
#pragma unroll
  for (uint32_t q = 0; q < 4; q++) m |= (((c[q] + 0x10001u) >> m1) & 0x10001u) << (2 * q);
  return (m | (m >> 15)) & 0xffu;
}

// Escape mask of 8 codes held one per byte (lo: codes 0-3, hi: 4-7) of width w: bit q set
// when code q is all ones.
ENEC_DEV uint32_t col_escapes8(uint32_t lo, uint32_t hi, uint32_t w) {
  if (w <= 3) {  // code + 1 stays inside its byte
    const uint32_t ml = ((lo + 0x01010101u) >> w) & 0x01010101u;
    const uint32_t mh = ((hi + 0x01010101u) >> w) & 0x01010101u;
    return ((ml * 0x10204080u) >> 28) | (((mh * 0x10204080u) >> 28) << 4);
  }
  const uint32_t ec = (1u << w) - 1;
  uint32_t m = 0;
#pragma unroll
  for (uint32_t q = 0; q < 4; q++) {
    m |= (((lo >> (8 * q)) & 0xffu) == ec ? 1u : 0u) << q;
    m |= (((hi >> (8 * q)) & 0xffu) == ec ? 1u : 0u) << (q + 4);
  }
  return m;
}

// Byte_perm selector of four byte-sized codes below 8.
ENEC_DEV uint32_t nibbles4(uint32_t bytes) {
  const uint32_t y = (bytes | (bytes >> 4)) & 0x00ff00ffu;
  return (y | (y >> 8)) & 0xffffu;
}

// Bytes of the escaped elements: escaped element q takes byte `rank` (its count of escaped
// elements before it) of the 8-byte window w0:w1; other bytes keep x.
ENEC_DEV void col_take_escapes(uint32_t mask8, uint32_t w0, uint32_t w1, uint32_t& xlo,
                               uint32_t& xhi) {
  uint32_t nb = mask8;  // bit q -> bit 4q
  nb = (nb | (nb << 12)) & 0x000F000Fu;
  nb = (nb | (nb << 6)) & 0x03030303u;
  nb = (nb | (nb << 3)) & 0x11111111u;
  const uint32_t ranks = nb * 0x11111111u - nb;  // nibble q: escaped elements before q
  const uint32_t elo = byte_perm(w0, w1, ranks & 0xffffu);
  const uint32_t ehi = byte_perm(w0, w1, ranks >> 16);
  const uint32_t blo = ((((mask8 & 15u) * 0x00204081u) & 0x01010101u) * 0xffu);
  const uint32_t bhi = ((((mask8 >> 4) * 0x00204081u) & 0x01010101u) * 0xffu);
  xlo = (xlo & ~blo) | (elo & blo);
  xhi = (xhi & ~bhi) | (ehi & bhi);
}

// Output words of 8 elements from their exponent bytes and residuals, 16-bit dtypes: two
// elements per word.
template <int DT>
ENEC_DEV void col_merge16(uint32_t xlo, uint32_t xhi, const uint32_t (&rr)[4], uint32_t k,
                          uint32_t (&out)[4]) {
  constexpr uint32_t M = DT_<DT>::M;
  const uint32_t live = M - k, lm = ((1u << live) - 1) * 0x10001u;
  const uint32_t xp[4] = {byte_perm(xlo, 0, 0x4140), byte_perm(xlo, 0, 0x4342),
                          byte_perm(xhi, 0, 0x4140), byte_perm(xhi, 0, 0x4342)};
#pragma unroll
  for (int q = 0; q < 4; q++)
    out[q] = (((rr[q] >> live) & 0x10001u) << 15) | (xp[q] << M) | ((rr[q] & lm) << k);
}

// Stores n_words 32-bit words at dst (16-byte aligned when vec; any alignment otherwise).
template <int NW>
ENEC_DEV void col_store(uint8_t* dst, bool vec, const uint32_t (&w)[NW]) {
  if (vec) {
#pragma unroll
    for (int i = 0; i < NW; i += 4) *(uint4*)(dst + 4 * i) = make_uint4(w[i], w[i + 1], w[i + 2], w[i + 3]);
  } else {
#pragma unroll
    for (int i = 0; i < NW; i++)
      for (int b = 0; b < 4; b++) dst[4 * i + b] = (uint8_t)(w[i] >> (8 * b));
  }
}

template <int NW>
ENEC_DEV void col_ring_put(uint8_t* slot, const uint32_t (&w)[NW]) {
#pragma unroll
  for (int i = 0; i < NW; i += 4) *(uint4*)(slot + 4 * i) = make_uint4(w[i], w[i + 1], w[i + 2], w[i + 3]);
}

// The hashing warp: h32 of `units` ring slots of unit_bytes each (a multiple of 128), total bytes.
ENEC_DEV uint32_t col_hash(const uint8_t* ring, uint32_t slot_bytes, uint32_t units,
                           uint32_t unit_bytes, uint32_t total) {
  const uint32_t lane = threadIdx.x & 31;
  uint32_t acc = kP5 + lane;
  const uint32_t blocks = unit_bytes / 128;
  for (uint32_t k = 0; k < units; k++) {
    const uint32_t slot = k % kSlots;
    bar_sync_slot<kBarFull>(slot, kColAll);
    const uint32_t* w = (const uint32_t*)(ring + slot * slot_bytes);
    uint32_t blk = 0;
    for (; blk + 4 <= blocks; blk += 4) {
      const uint32_t w0 = w[(blk + 0) * 32 + lane], w1 = w[(blk + 1) * 32 + lane];
      const uint32_t w2 = w[(blk + 2) * 32 + lane], w3 = w[(blk + 3) * 32 + lane];
      acc = h32_round(acc, w0);
      acc = h32_round(acc, w1);
      acc = h32_round(acc, w2);
      acc = h32_round(acc, w3);
    }
    for (; blk < blocks; blk++) acc = h32_round(acc, w[blk * 32 + lane]);
    if (k + kSlots < units) bar_arrive_slot<kBarEmpty>(slot, kColAll);
  }
  const uint32_t h = warp_h32_finish(acc, total);
  return h;
}

// The fields of one p-bit sub-plane (W words, count fields) into the byte array T, shifted by
// sh: stored by the first sub-plane of a plane, ORed by the others; by a group of THREADS
// threads (this one: `me`), the 16 / p fields of each word unrolled.
template <uint32_t P, uint32_t THREADS>
ENEC_DEV void scatter_fields(const uint16_t* w16, uint32_t W, uint32_t count, uint32_t sh,
                             bool first, uint8_t* T, uint32_t me) {
  // A warp alone needs several loads in flight; a block of 128 threads has them already (with
  // four, the column kernel decoded the H100 benchmark about 10 % slower).
  constexpr uint32_t K = THREADS <= 32 ? 4 : 1;
  for (uint32_t j0 = 0; j0 < W; j0 += K * THREADS) {
    uint32_t w[K];
#pragma unroll
    for (uint32_t i = 0; i < K; i++) {
      const uint32_t j = j0 + THREADS * i + me;
      w[i] = j < W ? w16[j] : 0;
    }
#pragma unroll
    for (uint32_t i = 0; i < K; i++) {
      const uint32_t j = j0 + THREADS * i + me;
#pragma unroll
      for (uint32_t rr = 0; rr < 16 / P; rr++) {
        const uint32_t e = rr * W + j;
        if (j < W && e < count) {
          const uint32_t v = ((w[i] >> (rr * P)) & ((1u << P) - 1)) << sh;
          T[e] = (uint8_t)(first ? v : (T[e] | v));
        }
      }
    }
  }
}

// (1) The escape levels: planes 1..L of the layout (levels 2..L, then the exponent level) into
// byte arrays, resolved deepest first, so that entry e of the level-2 array holds the exponent of
// the e-th level-1 escape. By a group of THREADS threads (this one: `me`); scan(v, total): the
// group's exclusive prefix sum; sync(): the group's barrier. S: the frame's header, layout,
// table and esc_at. Returns false on corrupt escape counts (uniform).
template <uint32_t THREADS, class Shared, class ScanFn, class SyncFn>
ENEC_DEV bool escape_levels(const uint8_t* fb, const Shared& S, uint8_t* esc, uint32_t me,
                            ScanFn scan, SyncFn sync) {
  const uint32_t levels = S.h.levels;
  for (uint32_t si = 0; si < 4; si++) {
    bool any = false;
    for (uint32_t idx = 1; idx <= levels; idx++) {
      const Plane& pl = S.lay.planes[idx];
      if (si >= pl.len) continue;
      any = true;
      uint8_t* T = esc + S.esc_at[idx];
      const uint32_t W = pl.s[si].words, p = pl.s[si].bits, sh = pl.s[si].shift;
      const uint32_t count = pl.count;
      const uint16_t* w16 = (const uint16_t*)(fb + pl.s[si].offset);
      switch (p) {
        case 1: scatter_fields<1, THREADS>(w16, W, count, sh, si == 0, T, me); break;
        case 2: scatter_fields<2, THREADS>(w16, W, count, sh, si == 0, T, me); break;
        case 4: scatter_fields<4, THREADS>(w16, W, count, sh, si == 0, T, me); break;
        case 8: scatter_fields<8, THREADS>(w16, W, count, sh, si == 0, T, me); break;
        default: scatter_fields<16, THREADS>(w16, W, count, sh, si == 0, T, me); break;
      }
    }
    if (!any) break;
    sync();
  }
  // Levels L .. 2 (plane L-1 .. 1): codes to exponents, escapes take the next array's entries.
  // Each thread takes 32 consecutive entries of a chunk, 8 at a time as in the rows.
  for (uint32_t idx = levels - 1; idx >= 1 && idx < levels; idx--) {
    const uint32_t count = S.lay.planes[idx].count, next = S.lay.planes[idx + 1].count;
    const uint32_t w = S.h.widths[idx], start = S.lay.starts[idx];
    const bool small = w <= 3;
    const uint32_t* tw = (const uint32_t*)S.table + (start >> 2);
    const uint32_t t0 = funnel_r(tw[0], tw[1], 8 * (start & 3));
    const uint32_t t1 = funnel_r(tw[1], tw[2], 8 * (start & 3));
    uint8_t* T = esc + S.esc_at[idx];
    const uint8_t* Tn = esc + S.esc_at[idx + 1];
    uint32_t carry = 0;
    for (uint32_t c0 = 0; c0 < count; c0 += 32 * THREADS) {
      uint32_t lo[4], hi[4], m[4], n = 0;
#pragma unroll
      for (uint32_t i = 0; i < 4; i++) {
        const uint32_t e0 = c0 + (4 * me + i) * 8;
        const uint32_t valid = e0 < count ? (count - e0 < 8 ? count - e0 : 8) : 0;
        const uint2 raw = valid ? *(const uint2*)(T + e0) : make_uint2(0, 0);
        lo[i] = raw.x;
        hi[i] = raw.y;
        m[i] = col_escapes8(raw.x, raw.y, w) & ((1u << valid) - 1);
        n += __popc(m[i]);
      }
      uint32_t total;
      uint32_t pos = carry + scan(n, total);
      if (carry + total > next) return false;  // uniform
      carry += total;
#pragma unroll
      for (uint32_t i = 0; i < 4; i++) {
        const uint32_t e0 = c0 + (4 * me + i) * 8;
        if (e0 < count) {
          uint32_t xlo, xhi;
          if (small) {
            xlo = byte_perm(t0, t1, nibbles4(lo[i]));
            xhi = byte_perm(t0, t1, nibbles4(hi[i]));
          } else {
            xlo = xhi = 0;
#pragma unroll
            for (uint32_t q = 0; q < 4; q++) {
              xlo |= (uint32_t)S.table[(start + ((lo[i] >> (8 * q)) & 0xffu)) & 0xffu] << (8 * q);
              xhi |= (uint32_t)S.table[(start + ((hi[i] >> (8 * q)) & 0xffu)) & 0xffu] << (8 * q);
            }
          }
          if (m[i]) {
            const uint32_t* wp = (const uint32_t*)(Tn + (pos & ~3u));
            const uint32_t sh = 8 * (pos & 3);
            col_take_escapes(m[i], funnel_r(wp[0], wp[1], sh), funnel_r(wp[1], wp[2], sh), xlo, xhi);
          }
          *(uint2*)(T + e0) = make_uint2(xlo, xhi);
          pos += __popc(m[i]);
        }
      }
    }
    if (carry != next) return false;
    sync();
  }
  return true;
}

// (2) and (3) for a ranked frame; returns false on corrupt escape counts (uniform). With
// `hashing`, every row goes through the ring whatever happens.
template <int DT>
ENEC_DEV void col_ranked(const uint8_t* fb, ColShared& S, const ColSmem& L, uint32_t N,
                         uint8_t* dst, bool vec, bool hashing) {
  constexpr int EB = DT_<DT>::EB;
  constexpr int NW = 2 * EB;  // output words per thread and row
  const uint32_t tid = threadIdx.x;
  uint8_t* smem = dyn_smem();
  uint8_t* esc = smem + L.esc;
  uint32_t* rows = (uint32_t*)(smem + L.rows);
  uint8_t* ring = smem + L.ring;
  const uint32_t C = N / 16;
  const bool act = tid < C / 8;
  uint32_t par = 0;
  bool ok = escape_levels<kColThreads>(
      fb, S, esc, tid, [&](uint32_t v, uint32_t& total) { return col_scan(v, S.tot, par, total); },
      [] { col_bar(); });
  const Plane& l1 = S.lay.planes[0];
  const uint32_t m1 = S.h.widths[0];
  // (2) Escape masks of every row, and the first escape entry of each (row, octet).
  if (ok) {
    // Rows 4b .. 4b+3 in msk[b] (a byte each) and cnt[b] (16-bit counters), shifted in so
    // that the row loop needs no run-time register index.
    uint64_t cnt[4] = {0, 0, 0, 0};
    uint32_t msk[4] = {0, 0, 0, 0};
    for (uint32_t b = 0; b < 4; b++) {
      uint32_t mb = 0;
      uint64_t cb = 0;
      if (act) {
#pragma unroll
        for (uint32_t q = 0; q < 4; q++) {
          uint32_t c[4];
          col_fields<false>(fb, l1, C, 4 * b + q, tid, c);
          const uint32_t m = col_escapes(c, m1);
          mb |= m << (8 * q);
          cb |= (uint64_t)__popc(m) << (16 * q);
        }
      }
      msk[0] = msk[1]; msk[1] = msk[2]; msk[2] = msk[3]; msk[3] = mb;
      cnt[0] = cnt[1]; cnt[1] = cnt[2]; cnt[2] = cnt[3]; cnt[3] = cb;
    }
    const uint32_t lane = tid & 31, warp = tid >> 5;
    uint64_t incl[4];
#pragma unroll
    for (int b = 0; b < 4; b++) {
      incl[b] = cnt[b];
#pragma unroll
      for (uint32_t d = 1; d < 32; d <<= 1) {
        const uint64_t t = __shfl_up_sync(kFull, incl[b], d);
        if (lane >= d) incl[b] += t;
      }
      if (lane == 31) S.tot64[b][warp] = incl[b];
    }
    col_bar();
    uint64_t before[4], all[4];
#pragma unroll
    for (int b = 0; b < 4; b++) {
      before[b] = all[b] = 0;
#pragma unroll
      for (uint32_t w = 0; w < kColWarps; w++) {
        const uint64_t t = S.tot64[b][w];
        all[b] += t;
        before[b] += w < warp ? t : 0;
      }
    }
    uint32_t base = 0;
#pragma unroll
    for (uint32_t r = 0; r < kColRows; r++) {
      const uint32_t sh = 16 * (r & 3);
      const uint32_t mine = (uint32_t)(((before[r >> 2] + incl[r >> 2] - cnt[r >> 2]) >> sh) & 0xffff);
      if (act) rows[r * kColThreads + tid] = (base + mine) | (((msk[r >> 2] >> (8 * (r & 3))) & 0xff) << 16);
      base += (uint32_t)((all[r >> 2] >> sh) & 0xffff);
    }
    ok = base == S.lay.planes[1].count;  // uniform
    col_bar();
  }
  if (!ok && tid == 0) atomicOr(&S.status, (uint32_t)kErrEscapes);
  // (3) Rows.
  const Plane& res = S.lay.residual;
  const uint32_t k = S.h.dead_bits;
  const bool small = m1 <= 3;
  const uint32_t t0 = ((const uint32_t*)S.table)[0], t1 = ((const uint32_t*)S.table)[1];
  const uint8_t* X = esc + S.esc_at[1];
  for (uint32_t r = 0; r < kColRows; r++) {
    if (hashing) col_ring_wait(r);
    if (ok && act) {
      const uint32_t rb = rows[r * kColThreads + tid];
      const uint32_t first = rb & 0xffff, mask8 = rb >> 16;
      uint32_t c[4];
      col_fields<false>(fb, l1, C, r, tid, c);
      uint32_t xlo, xhi;
      if (small) {
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
      if (mask8) {
        const uint32_t* wp = (const uint32_t*)(X + (first & ~3u));
        const uint32_t a = wp[0], b = wp[1], d = wp[2];
        const uint32_t sh = 8 * (first & 3);
        col_take_escapes(mask8, funnel_r(a, b, sh), funnel_r(b, d, sh), xlo, xhi);
      }
      uint32_t out[NW];
      if (EB == 2) {
        uint32_t rr[4], o4[4];
        col_fields<false>(fb, res, C, r, tid, rr);
        col_merge16<DT>(xlo, xhi, rr, k, o4);
#pragma unroll
        for (int q = 0; q < 4; q++) out[q] = o4[q];
      } else {
        uint32_t rr[4];
        col_fields<true>(fb, res, C, r, tid, rr);
        uint32_t hi16[4] = {0, 0, 0, 0}, o16 = 0;
        const uint32_t top = res.len - 1;
        if (res.s[top].bits == 16) {
          const uint4 w = *(const uint4*)(fb + res.s[top].offset + 2 * (8 * tid + C * r));
          hi16[0] = w.x; hi16[1] = w.y; hi16[2] = w.z; hi16[3] = w.w;
          o16 = res.s[top].shift;
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
      col_store<NW>(dst + (size_t)(r * C + 8 * tid) * EB, vec, out);
      if (hashing) col_ring_put<NW>(ring + (r % kSlots) * kColUnit * EB + tid * 8 * EB, out);
    }
    if (hashing) col_ring_done(r);
  }
}

template <int DT, bool VERIFY>
ENEC_DEV void col_frame(const enec_cuda_frame& fr, uint32_t f, const ColSmem& L,
                        uint32_t* status, ColShared& S) {
  constexpr int EB = DT_<DT>::EB;
  const uint32_t tid = threadIdx.x;
  const uint8_t* gsrc = (const uint8_t*)fr.src;
  DtypeInfo d = {8, 7, 2};
  dtype_info(DT, &d);
  if (tid == 0) {
    uint32_t err = frame_prologue(fr, gsrc, d, S.h, S.lay);
    if (!err && S.h.coding == kRanked) err = escape_layout(S.h, S.lay, S.esc_at, L.esc_cap);
    S.status = err;
  }
  __syncthreads();
  if (S.status != 0) {
    if (tid == 0) status[f] = S.status;
    return;
  }
  const uint32_t N = fr.elements;
  if (S.h.coding == kRanked) {
    for (uint32_t t = tid; t < sizeof S.table; t += blockDim.x) {
      const uint8_t x = t < S.lay.table_len ? gsrc[S.lay.table_at + t] : 0;
      S.table[t] = x;
      if (x >> d.e) atomicOr(&S.status, (uint32_t)kErrTable);
    }
    __syncthreads();
    if (S.status != 0) {
      if (tid == 0) status[f] = S.status;
      return;
    }
  }
  const bool hashing = VERIFY && fr.checksums;
  uint8_t* dst = (uint8_t*)fr.dst;
  const bool vec = (((uintptr_t)dst) & 15) == 0;
  if (tid < kColThreads) {
    if (S.h.coding == kRanked) {
      col_ranked<DT>(gsrc, S, L, N, dst, vec, hashing);
    } else {
      uint8_t* ring = dyn_smem() + L.ring;
      const uint8_t* body = gsrc + kFrameHeaderBytes;
      for (uint32_t u = 0; u < N / kColUnit; u++) {
        if (hashing) col_ring_wait(u);
        const uint32_t i0 = u * kColUnit + tid * 8;
        uint32_t w[2 * EB];
#pragma unroll
        for (int i = 0; i < 2 * EB; i += 4) {
          const uint4 v = *(const uint4*)(body + (size_t)i0 * EB + 4 * i);
          w[i] = v.x; w[i + 1] = v.y; w[i + 2] = v.z; w[i + 3] = v.w;
        }
        col_store<2 * EB>(dst + (size_t)i0 * EB, vec, w);
        if (hashing) {
          col_ring_put<2 * EB>(ring + (u % kSlots) * kColUnit * EB + tid * 8 * EB, w);
          col_ring_done(u);
        }
      }
    }
  } else if (hashing) {
    const uint32_t C = N / 16;
    const bool ranked = S.h.coding == kRanked;
    const uint32_t units = ranked ? kColRows : N / kColUnit;
    const uint32_t unit_bytes = (ranked ? C : kColUnit) * EB;
    const uint32_t h = col_hash(dyn_smem() + L.ring, kColUnit * EB, units, unit_bytes, N * EB);
    if ((tid & 31) == 0 && h != S.h.checksum) atomicOr(&S.status, (uint32_t)kErrChecksum);
  }
  __syncthreads();
  if (tid == 0) status[f] = S.status;
}

template <bool VERIFY>
__global__ void __launch_bounds__(VERIFY ? kColAll : kColThreads, VERIFY ? 6 : 8)
    decode_columns_kernel(const enec_cuda_frame* frames, uint32_t n, ColSmem L, uint32_t* status) {
  __shared__ ColShared S;
  const uint32_t f = blockIdx.x;
  if (f >= n) return;
  const enec_cuda_frame fr = frames[f];
  if (!column_frame(fr.dtype, fr.elements, fr.coding)) return;  // the general kernel's
  if (fr.dtype == ENEC_CUDA_BF16) {
    col_frame<1, VERIFY>(fr, f, L, status, S);
  } else if (fr.dtype == ENEC_CUDA_FP16) {
    col_frame<2, VERIFY>(fr, f, L, status, S);
  } else if (fr.dtype == ENEC_CUDA_FP32) {
    col_frame<3, VERIFY>(fr, f, L, status, S);
  } else if (threadIdx.x == 0) {
    status[f] = kErrHeader;
  }
}

}  // namespace dev
}  // namespace enec

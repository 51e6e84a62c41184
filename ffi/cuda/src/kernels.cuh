// The enec block kernels in CUDA: one thread block per frame, mirroring the Rust src/kernels/
// and src/frame/ (FORMAT.md sections 4, 5 and 7).
//
// Decode (decode_kernel): 256 decoding threads, each producing 8 consecutive elements per step
// (2,048 elements per step), plus, when checksums are verified, one hashing warp that consumes
// each step's output from a ring of kSlots slots in shared memory (named barriers,
// producer/consumer), so h32's 32 sequential lanes run beside the decoding. A coded frame is first copied whole into
// shared memory with cp.async (one aligned copy: every section starts at a multiple of 32), so
// the escape planes' gathers hit shared memory. Escapes are expanded with block-wide prefix
// sums: per thread a mask of its escaped elements, popcount, a warp shuffle scan, warp totals in
// shared memory; the groups coding's flags with a warp ballot + popcount scan.
//
// Encode (encode_kernel): one block per frame (frames taken in order from a ticket counter), a
// statistics pass (exponents to shared memory, histogram, mantissa OR), the parameter search of
// FORMAT.md section 7 spread over the threads (every ranked width tuple and every groups (b, m)
// evaluated in parallel, first minimum by an atomicMin on (size, enumeration index)), a
// decoupled look-back over the frames' sizes for the frame's offset in the stream, then the
// planes are written word by word (each thread gathers the fields of 8 consecutive u16 words and
// writes 16 bytes), compacted escape planes through a prefix scan and a scatter into shared
// memory. A hashing warp computes the frame checksum from global memory meanwhile.
#pragma once

#include "../include/enec_cuda.h"
#include "compat.h"
#include "format.h"

namespace enec {
namespace dev {

constexpr uint32_t kWarps = 8;
constexpr uint32_t kDecThreads = 256;
constexpr uint32_t kHashThreads = 32;
constexpr uint32_t kAllThreads = kDecThreads + kHashThreads;
constexpr uint32_t kChunk = kDecThreads * 8;  // elements per step

// Named barriers: 0 is __syncthreads.
constexpr unsigned kBarDec = 1;    // the 256 working threads
constexpr unsigned kSlots = 4;     // ring slots between the decoding threads and the hash warp
constexpr unsigned kBarFull = 2;   // 2..5: ring slot filled (256 arrive, hash warp waits)
constexpr unsigned kBarEmpty = 6;  // 6..9: ring slot consumed (hash warp arrives, 256 wait)

// Named barrier `base + slot` with the id as an immediate (slot < 4).
template <unsigned BASE>
ENEC_DEV void bar_sync_slot(uint32_t slot, unsigned n) {
  switch (slot) {
    case 0: bar_sync_c<BASE>(n); break;
    case 1: bar_sync_c<BASE + 1>(n); break;
    case 2: bar_sync_c<BASE + 2>(n); break;
    default: bar_sync_c<BASE + 3>(n); break;
  }
}
template <unsigned BASE>
ENEC_DEV void bar_arrive_slot(uint32_t slot, unsigned n) {
  switch (slot) {
    case 0: bar_arrive_c<BASE>(n); break;
    case 1: bar_arrive_c<BASE + 1>(n); break;
    case 2: bar_arrive_c<BASE + 2>(n); break;
    default: bar_arrive_c<BASE + 3>(n); break;
  }
}

// h32 of `len` bytes from the 32 lane accumulators of a warp (FORMAT.md section 6: the final
// fold over the lanes, then the avalanche); every lane gets it.
ENEC_DEV uint32_t warp_h32_finish(uint32_t acc, uint32_t len) {
  uint32_t h = len + kP5;
  for (int j = 0; j < 32; j++) h = rotl32(h + __shfl_sync(kFull, acc, j) * kP3, 17) * kP4;
  return h32_avalanche(h);
}

// Where each escape level's byte array starts (esc_at, from 0), each padded so that 8-byte
// windows and 8-byte groups stay inside; kErrSize if they exceed cap (which cannot happen for
// frames the host indexed), else 0.
ENEC_DEV uint32_t escape_layout(const FrameHeader& h, const Layout& lay, uint32_t* esc_at,
                                uint32_t cap) {
  uint32_t at = 0;
  for (uint32_t idx = 1; idx <= h.levels; idx++) {
    esc_at[idx] = at;
    at += (lay.planes[idx].count + 16 + 15) & ~15u;
  }
  return at > cap ? (uint32_t)kErrSize : 0u;
}

struct Scan {
  uint32_t tot[2][kWarps];
  uint64_t tot64[2][kWarps];
};

// Exclusive prefix sum of v over the 256 working threads; *total gets the sum of all.
ENEC_DEV uint32_t block_excl_scan(uint32_t v, Scan& s, uint32_t& parity, uint32_t& total) {
  const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  uint32_t incl = v;
#pragma unroll
  for (uint32_t d = 1; d < 32; d <<= 1) {
    uint32_t t = __shfl_up_sync(kFull, incl, d);
    if (lane >= d) incl += t;
  }
  if (lane == 31) s.tot[parity][warp] = incl;
  bar_sync_c<kBarDec>(kDecThreads);
  uint32_t before = 0, all = 0;
#pragma unroll
  for (uint32_t w = 0; w < kWarps; w++) {
    uint32_t t = s.tot[parity][w];
    all += t;
    before += w < warp ? t : 0;
  }
  parity ^= 1;
  total = all;
  return before + incl - v;
}

// The same over 64-bit values (several counters packed in bit fields).
ENEC_DEV uint64_t block_excl_scan64(uint64_t v, Scan& s, uint32_t& parity, uint64_t& total) {
  const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  uint64_t incl = v;
#pragma unroll
  for (uint32_t d = 1; d < 32; d <<= 1) {
    uint64_t t = __shfl_up_sync(kFull, incl, d);
    if (lane >= d) incl += t;
  }
  if (lane == 31) s.tot64[parity][warp] = incl;
  bar_sync_c<kBarDec>(kDecThreads);
  uint64_t before = 0, all = 0;
#pragma unroll
  for (uint32_t w = 0; w < kWarps; w++) {
    uint64_t t = s.tot64[parity][w];
    all += t;
    before += w < warp ? t : 0;
  }
  parity ^= 1;
  total = all;
  return before + incl - v;
}

// Exclusive prefix count of one flag per thread (ballot + popcount per warp).
ENEC_DEV uint32_t block_excl_count(bool flag, Scan& s, uint32_t& parity, uint32_t& total) {
  const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const uint32_t bal = __ballot_sync(kFull, flag);
  if (lane == 0) s.tot[parity][warp] = __popc(bal);
  bar_sync_c<kBarDec>(kDecThreads);
  uint32_t before = 0, all = 0;
#pragma unroll
  for (uint32_t w = 0; w < kWarps; w++) {
    uint32_t t = s.tot[parity][w];
    all += t;
    before += w < warp ? t : 0;
  }
  parity ^= 1;
  total = all;
  return before + __popc(bal & ((1u << lane) - 1));
}

ENEC_DEV uint32_t merge(uint32_t x, uint32_t r, uint32_t e, uint32_t m, uint32_t k) {
  const uint32_t live = m - k;
  return ((r >> live) << (e + m)) | (x << m) | ((r & ((1u << live) - 1)) << k);
}

ENEC_DEV uint32_t groups_inverse(uint32_t y, uint32_t base, uint32_t n, uint32_t e) {
  const uint32_t half = 1u << (n - 1);
  const uint32_t sgn = (y ^ half) - half;
  return (base - sgn) & ((1u << e) - 1);
}

// Values i0 .. i0+7 of a plane (valid of them inside the plane; the rest are not read, or are
// read from inside the sub-plane and ignored).
ENEC_DEV void unpack8(const uint8_t* fb, const Plane& pl, uint32_t i0, uint32_t valid,
                      uint32_t (&out)[8]) {
#pragma unroll
  for (int q = 0; q < 8; q++) out[q] = 0;
  const uint32_t len = pl.len;
  for (uint32_t si = 0; si < len; si++) {
    const uint32_t W = pl.s[si].words, p = pl.s[si].bits, sh = pl.s[si].shift;
    const uint32_t mask = (1u << p) - 1;
    const uint32_t row = fast_div(i0, pl.s[si].magic);
    const uint32_t j0 = i0 - row * W;
    const uint8_t* base = fb + pl.s[si].offset;
    uint32_t bit = row * p;
    if ((W & 7) == 0) {
      // j0 is a multiple of 8 and j0 + 8 <= W: one aligned 16-byte load.
      const uint4 v = *(const uint4*)(base + 2 * j0);
      const uint32_t w4[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int q = 0; q < 8; q++) {
        const uint32_t word = (w4[q >> 1] >> ((q & 1) * 16)) & 0xffffu;
        out[q] |= ((word >> bit) & mask) << sh;
      }
    } else {
      uint32_t j = j0;
      const uint16_t* w16 = (const uint16_t*)base;
#pragma unroll
      for (uint32_t q = 0; q < 8; q++) {
        if (q < valid) {
          out[q] |= (((uint32_t)w16[j] >> bit) & mask) << sh;
          if (++j == W) {
            j = 0;
            bit += p;
          }
        }
      }
    }
  }
}

// Entries e0, e0+1, ... of a compacted plane, one for each set bit of `sel` (in order of q).
// The caller guarantees e0 + popc(sel) <= pl.count.
ENEC_DEV void read_entries(const uint8_t* fb, const Plane& pl, uint32_t e0, uint32_t sel,
                           uint32_t (&vals)[8]) {
#pragma unroll
  for (int q = 0; q < 8; q++) vals[q] = 0;
  const uint32_t len = pl.len;
  for (uint32_t si = 0; si < len; si++) {
    const uint32_t W = pl.s[si].words, p = pl.s[si].bits, sh = pl.s[si].shift;
    const uint32_t mask = (1u << p) - 1;
    const uint32_t row = fast_div(e0, pl.s[si].magic);
    uint32_t j = e0 - row * W, bit = row * p;
    const uint16_t* w16 = (const uint16_t*)(fb + pl.s[si].offset);
#pragma unroll
    for (int q = 0; q < 8; q++) {
      if ((sel >> q) & 1) {
        vals[q] |= (((uint32_t)w16[j] >> bit) & mask) << sh;
        if (++j == W) {
          j = 0;
          bit += p;
        }
      }
    }
  }
}

ENEC_DEV uint32_t read_entry(const uint8_t* fb, const Plane& pl, uint32_t e) {
  uint32_t v = 0;
  const uint32_t len = pl.len;
  for (uint32_t si = 0; si < len; si++) {
    const uint32_t W = pl.s[si].words, p = pl.s[si].bits;
    const uint32_t row = fast_div(e, pl.s[si].magic);
    const uint32_t j = e - row * W;
    const uint16_t* w16 = (const uint16_t*)(fb + pl.s[si].offset);
    v |= (((uint32_t)w16[j] >> (row * p)) & ((1u << p) - 1)) << pl.s[si].shift;
  }
  return v;
}

// One element of EB bytes at index i (aligned to its size).
template <int EB>
ENEC_DEV uint32_t load_el(const uint8_t* src, uint32_t i) {
  return EB == 1 ? (uint32_t)src[i] : EB == 2 ? (uint32_t)((const uint16_t*)src)[i] : ((const uint32_t*)src)[i];
}

template <int EB>
ENEC_DEV void load_el8(const uint8_t* src, uint32_t i0, uint32_t valid, uint32_t (&u)[8]) {
  if (valid == 8) {
    if (EB == 1) {
      const uint2 v = *(const uint2*)(src + i0);
#pragma unroll
      for (int q = 0; q < 8; q++) u[q] = ((q < 4 ? v.x : v.y) >> (8 * (q & 3))) & 0xffu;
    } else if (EB == 2) {
      const uint4 v = *(const uint4*)(src + 2 * i0);
      const uint32_t w4[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int q = 0; q < 8; q++) u[q] = (w4[q >> 1] >> ((q & 1) * 16)) & 0xffffu;
    } else {
      const uint4 a = *(const uint4*)(src + 4 * i0);
      const uint4 b = *(const uint4*)(src + 4 * i0 + 16);
      u[0] = a.x; u[1] = a.y; u[2] = a.z; u[3] = a.w;
      u[4] = b.x; u[5] = b.y; u[6] = b.z; u[7] = b.w;
    }
  } else {
#pragma unroll
    for (uint32_t q = 0; q < 8; q++) {
      u[q] = 0;
      if (q < valid) u[q] = load_el<EB>(src, i0 + q);
    }
  }
}

template <int EB>
ENEC_DEV void store8(uint8_t* dst, uint32_t i0, uint32_t valid, bool vec, const uint32_t (&u)[8]) {
  if (valid == 8 && vec) {
    if (EB == 1) {
      uint2 v;
      v.x = u[0] | (u[1] << 8) | (u[2] << 16) | (u[3] << 24);
      v.y = u[4] | (u[5] << 8) | (u[6] << 16) | (u[7] << 24);
      *(uint2*)(dst + i0) = v;
    } else if (EB == 2) {
      uint4 v;
      v.x = u[0] | (u[1] << 16); v.y = u[2] | (u[3] << 16);
      v.z = u[4] | (u[5] << 16); v.w = u[6] | (u[7] << 16);
      *(uint4*)(dst + 2 * i0) = v;
    } else {
      uint4 a, b;
      a.x = u[0]; a.y = u[1]; a.z = u[2]; a.w = u[3];
      b.x = u[4]; b.y = u[5]; b.z = u[6]; b.w = u[7];
      *(uint4*)(dst + 4 * i0) = a;
      *(uint4*)(dst + 4 * i0 + 16) = b;
    }
  } else {
#pragma unroll
    for (uint32_t q = 0; q < 8; q++) {
      if (q < valid) {
        uint8_t* p = dst + EB * (i0 + q);
        if (EB == 1) {
          *p = (uint8_t)u[q];
        } else if (EB == 2) {
          if ((((uintptr_t)p) & 1) == 0) {
            *(uint16_t*)p = (uint16_t)u[q];
          } else {
            p[0] = (uint8_t)u[q];
            p[1] = (uint8_t)(u[q] >> 8);
          }
        } else {
          if ((((uintptr_t)p) & 3) == 0) {
            *(uint32_t*)p = u[q];
          } else {
            for (int b = 0; b < 4; b++) p[b] = (uint8_t)(u[q] >> (8 * b));
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Decode
// ---------------------------------------------------------------------------------------------

// Parses and checks a frame's header against its index entry and computes its layout (one
// thread); 0 or the frame's error.
ENEC_DEV uint32_t frame_prologue(const enec_cuda_frame& fr, const uint8_t* gsrc, const DtypeInfo& d,
                                 FrameHeader& h, Layout& lay) {
  uint8_t hb[32];
  const uint4 a = ((const uint4*)gsrc)[0], b = ((const uint4*)gsrc)[1];
  memcpy(hb, &a, 16);
  memcpy(hb + 16, &b, 16);
  uint32_t err = parse_frame_header(hb, d, &h);
  if (!err && (h.elements != fr.elements || fr.elements == 0)) err = kErrElements;
  if (!err && h.coding != fr.coding) err = kErrHeader;
  if (!err) {
    layout_new(d, fr.elements, h, &lay);
    if (lay.bytes != h.frame_bytes || h.frame_bytes != fr.frame_bytes) err = kErrSize;
  }
  if (!err && !fr.checksums && h.checksum != 0) err = kErrChecksumField;
  return err;
}

struct DecShared {
  FrameHeader h;
  Layout lay;
  uint64_t gmagic;  // groups: ceil(2^40 / G)
  uint32_t status;
  uint32_t staged;
  Scan scan;
  uint8_t table[256];
};

// Where the decoder's dynamic shared memory goes (offsets in bytes, computed by the host).
struct DecSmem {
  uint32_t region;    // groups: the staged frame (when it fits); ranked: the buffers below
  uint32_t stage_cap; // largest frame staged
  uint32_t sym;       // ranked: exponent of every element of the frame (u8 x N)
  uint32_t vals;      // ranked: decoded entries of the current escape level (u8 x entries)
  uint32_t list_a;    // ranked: element of each entry of a level (u16 x entries), ping
  uint32_t list_b;    // pong
  uint32_t ring;      // two slots of decoded bytes for the hashing warp
  uint32_t pre;       // groups: prefix count of the flags (u16 x G)
};

// A plane of one sub-plane, its constants held in registers for the frame (the common case:
// bf16's 8-bit residual, 1/2/4/8-bit code planes). vec: W % 8 == 0 (aligned 16-byte loads).
struct FastPlane {
  uint32_t off, W, p;
  uint64_t magic;
  bool one, vec;
};

ENEC_DEV FastPlane fast_plane(const Plane& pl) {
  FastPlane f;
  f.one = pl.len == 1;
  f.off = pl.s[0].offset;
  f.W = pl.s[0].words;
  f.p = pl.s[0].bits;
  f.magic = pl.s[0].magic;
  f.vec = f.one && (f.W & 7) == 0;
  return f;
}

// Values i0 .. i0+7 of a one-sub-plane plane with W % 8 == 0: one aligned 16-byte load.
ENEC_DEV void unpack8_fast(const uint8_t* fb, const FastPlane& f, uint32_t i0, uint32_t (&out)[8]) {
  const uint32_t row = fast_div(i0, f.magic);
  const uint32_t j0 = i0 - row * f.W, bit = row * f.p, mask = (1u << f.p) - 1;
  const uint4 v = *(const uint4*)(fb + f.off + 2 * j0);
  const uint32_t w4[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int q = 0; q < 8; q++) out[q] = (w4[q >> 1] >> ((q & 1) * 16 + bit)) & mask;
}

ENEC_DEV void unpack8_any(const uint8_t* fb, const FastPlane& f, const Plane& pl, uint32_t i0,
                          uint32_t valid, uint32_t (&out)[8]) {
  if (f.vec) unpack8_fast(fb, f, i0, out);
  else unpack8(fb, pl, i0, valid, out);
}

// Element fields of a dtype as constants.
template <int DT>
struct DT_ {
  static constexpr uint32_t E = DT == 4 ? 4 : DT == 2 || DT == 5 ? 5 : 8;
  static constexpr uint32_t M = DT == 1 ? 7 : DT == 2 ? 10 : DT == 3 ? 23 : DT == 4 ? 3 : 2;
  static constexpr int EB = DT == 3 ? 4 : DT >= 4 ? 1 : 2;
};

template <int DT>
ENEC_DEV uint32_t merge_k(uint32_t x, uint32_t r, uint32_t k) {
  constexpr uint32_t E = DT_<DT>::E, M = DT_<DT>::M;
  const uint32_t live = M - k;
  return ((r >> live) << (E + M)) | (x << M) | ((r & ((1u << live) - 1)) << k);
}

template <int DT>
ENEC_DEV uint32_t merge0(uint32_t x, uint32_t r) {
  constexpr uint32_t E = DT_<DT>::E, M = DT_<DT>::M;
  return ((r >> M) << (E + M)) | (x << M) | (r & ((1u << M) - 1));
}

// Hands one step's decoded bytes to the hashing warp (two ring slots, named barriers).
template <int EB>
ENEC_DEV void ring_put(uint8_t* ring, uint32_t k, uint32_t valid, uint32_t (&u)[8]) {
  const uint32_t slot = k % kSlots;
#pragma unroll
  for (uint32_t q = 0; q < 8; q++)
    if (q >= valid) u[q] = 0;
  store8<EB>(ring + slot * kChunk * EB, threadIdx.x * 8, 8, true, u);
  bar_arrive_slot<kBarFull>(slot, kAllThreads);
}

ENEC_DEV void ring_wait(uint32_t k) {
  if (k >= kSlots) bar_sync_slot<kBarEmpty>(k % kSlots, kAllThreads);
}

// The ranked coding, one level at a time (the dependency-decoupled scan of the paper, on a
// block): (A) level-1 codes of every element: exponents of the resolved ones go to sym[], the
// escaped ones are listed in element order (their list position is their entry in plane 2,
// from a block prefix sum); (B) per level, the threads split the level's entries, resolve them
// (exponent to sym[]) or list them for the next level (a prefix sum again); (C) residuals merged
// with sym[] and written, 8 elements per thread, one step of 2,048 elements at a time.
template <int DT, bool VERIFY>
ENEC_DEV bool ranked_frame(const uint8_t* fb, DecShared& S, const DecSmem& L, uint32_t N,
                           uint8_t* dst, bool vec, bool hashing, uint32_t& par) {
  constexpr int EB = DT_<DT>::EB;
  const uint32_t tid = threadIdx.x;
  uint8_t* smem = dyn_smem();
  uint8_t* sym = smem + L.region + L.sym;
  uint8_t* vals = smem + L.region + L.vals;
  uint16_t* lin = (uint16_t*)(smem + L.region + L.list_a);
  uint16_t* lout = (uint16_t*)(smem + L.region + L.list_b);
  const uint32_t levels = S.h.levels;
  const uint32_t c2 = S.lay.planes[1].count;
  // (A) level 1.
  {
    const FastPlane l1 = fast_plane(S.lay.planes[0]);
    const uint32_t esc1 = (1u << S.h.widths[0]) - 1;
    const bool small = S.h.widths[0] <= 3;
    const uint32_t tlo = ((const uint32_t*)S.table)[0], thi = ((const uint32_t*)S.table)[1];
    uint32_t carry = 0;
    for (uint32_t s0 = 0; s0 < N; s0 += 8 * kChunk) {
      uint32_t masks[2] = {0, 0};
      uint64_t cnt[2] = {0, 0};
#pragma unroll
      for (uint32_t r = 0; r < 8; r++) {
        const uint32_t i0 = s0 + r * kChunk + tid * 8;
        const uint32_t valid = i0 < N ? (N - i0 < 8 ? N - i0 : 8) : 0;
        if (valid) {
          uint32_t c[8];
          unpack8_any(fb, l1, S.lay.planes[0], i0, valid, c);
          uint32_t esc = 0, xlo = 0, xhi = 0;
#pragma unroll
          for (uint32_t q = 0; q < 8; q++) {
            const bool e = c[q] >= esc1;
            const uint32_t ci = e ? 0 : c[q];
            const uint32_t x = small ? (byte_perm(tlo, thi, ci) & 0xffu) : (uint32_t)S.table[ci];
            esc |= (e && q < valid) ? 1u << q : 0;
            if (q < 4) xlo |= x << (8 * q);
            else xhi |= x << (8 * (q - 4));
          }
          if (valid == 8) {
            *(uint2*)(sym + i0) = make_uint2(xlo, xhi);
          } else {
            for (uint32_t q = 0; q < valid; q++) sym[i0 + q] = (uint8_t)((q < 4 ? xlo : xhi) >> (8 * (q & 3)));
          }
          masks[r >> 2] |= esc << (8 * (r & 3));
          cnt[r >> 2] += (uint64_t)__popc(esc) << (16 * (r & 3));
        }
      }
      uint64_t tot[2];
      const uint64_t pos0 = block_excl_scan64(cnt[0], S.scan, par, tot[0]);
      const uint64_t pos1 = block_excl_scan64(cnt[1], S.scan, par, tot[1]);
      uint64_t all = 0;
#pragma unroll
      for (uint32_t r = 0; r < 8; r++) all += (tot[r >> 2] >> (16 * (r & 3))) & 0xffff;
      if (carry + all > c2) return false;  // uniform: more escapes than plane-2 entries
      uint32_t base = carry;
#pragma unroll
      for (uint32_t r = 0; r < 8; r++) {
        const uint32_t sh = 16 * (r & 3);
        uint32_t pos = base + (uint32_t)(((r < 4 ? pos0 : pos1) >> sh) & 0xffff);
        const uint32_t esc = (masks[r >> 2] >> (8 * (r & 3))) & 0xff;
        const uint32_t i0 = s0 + r * kChunk + tid * 8;
#pragma unroll
        for (uint32_t q = 0; q < 8; q++)
          if ((esc >> q) & 1) lin[pos++] = (uint16_t)(i0 + q);
        base += (uint32_t)((tot[r >> 2] >> sh) & 0xffff);
      }
      carry = base;
    }
    if (carry != c2) return false;
  }
  bar_sync_c<kBarDec>(kDecThreads);
  // (B) levels 2 .. L, then the exponent level.
  for (uint32_t j = 1; j <= levels; j++) {
    const Plane& pl = S.lay.planes[j];
    const uint32_t count = pl.count;
    const bool last = j == levels;
    const uint32_t ec = last ? 0x100u : (1u << S.h.widths[j]) - 1;
    const uint32_t start = S.lay.starts[j];
    const uint32_t per = (count + kDecThreads - 1) / kDecThreads;
    const uint32_t e0 = tid * per < count ? tid * per : count;
    const uint32_t e1 = e0 + per < count ? e0 + per : count;
    uint32_t nesc = 0;
    if (pl.len == 1 && e0 < e1) {
      const uint32_t W = pl.s[0].words, p = pl.s[0].bits, mask = (1u << p) - 1;
      const uint16_t* w16 = (const uint16_t*)(fb + pl.s[0].offset);
      const uint32_t row = fast_div(e0, pl.s[0].magic);
      uint32_t jj = e0 - row * W, bit = row * p;
      for (uint32_t e = e0; e < e1; e++) {
        const uint32_t v = ((uint32_t)w16[jj] >> bit) & mask;
        if (++jj == W) {
          jj = 0;
          bit += p;
        }
        vals[e] = (uint8_t)v;
        nesc += v == ec ? 1 : 0;
      }
    } else {
      for (uint32_t e = e0; e < e1; e++) {
        const uint32_t v = read_entry(fb, pl, e);
        vals[e] = (uint8_t)v;
        nesc += v == ec ? 1 : 0;
      }
    }
    uint32_t total;
    uint32_t pos = block_excl_scan(nesc, S.scan, par, total);
    if (total != (last ? 0 : S.lay.planes[j + 1].count)) return false;  // uniform
    for (uint32_t e = e0; e < e1; e++) {
      const uint32_t v = vals[e], i = lin[e];
      if (last) sym[i] = (uint8_t)v;
      else if (v == ec) lout[pos++] = (uint16_t)i;
      else sym[i] = S.table[start + v];
    }
    bar_sync_c<kBarDec>(kDecThreads);
    uint16_t* t = lin;
    lin = lout;
    lout = t;
  }
  // (C) merge and write.
  const FastPlane rp = fast_plane(S.lay.residual);
  const uint32_t k = S.h.dead_bits;
  uint8_t* ring = smem + L.ring;
  const uint32_t iters = (N + kChunk - 1) / kChunk;
  for (uint32_t s = 0; s < iters; s++) {
    if (hashing) ring_wait(s);
    const uint32_t i0 = s * kChunk + tid * 8;
    const uint32_t valid = i0 < N ? (N - i0 < 8 ? N - i0 : 8) : 0;
    uint32_t u[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (valid) {
      uint32_t r[8];
      unpack8_any(fb, rp, S.lay.residual, i0, valid, r);
      uint32_t xlo, xhi;
      if (valid == 8) {
        const uint2 xv = *(const uint2*)(sym + i0);
        xlo = xv.x;
        xhi = xv.y;
      } else {
        xlo = xhi = 0;
        for (uint32_t q = 0; q < valid; q++) {
          if (q < 4) xlo |= (uint32_t)sym[i0 + q] << (8 * q);
          else xhi |= (uint32_t)sym[i0 + q] << (8 * (q - 4));
        }
      }
      if (k == 0) {
#pragma unroll
        for (uint32_t q = 0; q < 8; q++) u[q] = merge0<DT>(((q < 4 ? xlo : xhi) >> (8 * (q & 3))) & 0xff, r[q]);
      } else {
#pragma unroll
        for (uint32_t q = 0; q < 8; q++) u[q] = merge_k<DT>(((q < 4 ? xlo : xhi) >> (8 * (q & 3))) & 0xff, r[q], k);
      }
    }
    store8<EB>(dst, i0, valid, vec, u);
    if (hashing) ring_put<EB>(ring, s, valid, u);
  }
  return true;
}

template <int DT>
ENEC_DEV void groups8(const uint8_t* fb, DecShared& S, const FastPlane& res, const FastPlane& lowp,
                      const FastPlane& high, const uint16_t* pre, uint32_t i0, uint32_t valid,
                      uint32_t (&u)[8]) {
  if (!valid) return;
  uint32_t r[8], lo[8];
  unpack8_any(fb, res, S.lay.residual, i0, valid, r);
  unpack8_any(fb, lowp, S.lay.planes[1], i0, valid, lo);
  const uint32_t G = S.lay.planes[0].count, F = S.h.flagged, low = S.h.low, n = S.h.width;
  const uint32_t base = S.h.base, k = S.h.dead_bits;
  uint32_t row = fast_div(i0, S.gmagic);
  uint32_t t = i0 - row * G;
  const uint16_t* hw = (const uint16_t*)(fb + high.off);
  const uint32_t hmask = (1u << high.p) - 1;
#pragma unroll
  for (uint32_t q = 0; q < 8; q++) {
    if (q < valid) {
      const uint32_t pf = pre[t];
      uint32_t y = lo[q];
      if (pf >> 15) {
        const uint32_t e = row * F + (pf & 0x7fffu);
        uint32_t v;
        if (high.one) {
          const uint32_t hr = fast_div(e, high.magic);
          v = ((uint32_t)hw[e - hr * high.W] >> (hr * high.p)) & hmask;
        } else {
          v = read_entry(fb, S.lay.planes[2], e);
        }
        y |= v << low;
      }
      u[q] = merge_k<DT>(groups_inverse(y, base, n, DT_<DT>::E), r[q], k);
      if (++t == G) {
        t = 0;
        row++;
      }
    }
  }
}

template <int DT, bool VERIFY>
ENEC_DEV void decode_frame(const enec_cuda_frame& fr, uint32_t f, const DecSmem& L,
                           uint32_t* status, DecShared& S) {
  constexpr int EB = DT_<DT>::EB;
  const uint32_t tid = threadIdx.x;
  const uint32_t nthreads = blockDim.x;
  const uint8_t* gsrc = (const uint8_t*)fr.src;
  DtypeInfo d = {8, 7, 2};
  dtype_info(DT, &d);
  if (tid == 0) {
    const uint32_t err = frame_prologue(fr, gsrc, d, S.h, S.lay);
    S.status = err;
    S.staged = (!err && S.h.coding == kGroups && fr.frame_bytes <= L.stage_cap) ? 1 : 0;
  }
  __syncthreads();
  if (S.status != 0) {
    if (tid == 0) status[f] = S.status;
    return;
  }
  const uint32_t coding = S.h.coding;
  const uint32_t N = fr.elements;
  // Division constants, one sub-plane per thread (while the frame is copied in).
  if (coding != kStored) {
    if (tid < 25) layout_magic(&S.lay, tid);
    if (tid == 25 && coding == kGroups) S.gmagic = div_magic(S.lay.planes[0].count);
  }
  const uint8_t* fb = gsrc;
  if (S.staged) {
    uint8_t* st = dyn_smem() + L.region;
    for (uint32_t o = tid * 16; o < fr.frame_bytes; o += nthreads * 16) cp_async16(st + o, gsrc + o);
    cp_async_wait_all();
    fb = st;
  }
  if (coding == kRanked) {
    for (uint32_t t = tid; t < S.lay.table_len; t += nthreads) {
      const uint8_t x = gsrc[S.lay.table_at + t];
      S.table[t] = x;
      if (x >> d.e) atomicOr(&S.status, (uint32_t)kErrTable);
    }
  }
  __syncthreads();
  uint16_t* pre = (uint16_t*)(dyn_smem() + L.pre);
  const bool working = !VERIFY || tid < kDecThreads;
  uint32_t par = 0;
  if (coding == kGroups && S.status == 0) {
    if (working) {
      // Exclusive prefix count of the group flags (ballot + popcount), flag in bit 15.
      const uint32_t G = S.lay.planes[0].count;
      const SubPlane fp = S.lay.planes[0].s[0];
      const uint16_t* fw = (const uint16_t*)(fb + fp.offset);
      uint32_t carry = 0;
      for (uint32_t t0 = 0; t0 < G; t0 += kDecThreads) {
        const uint32_t t = t0 + tid;
        uint32_t flag = 0;
        if (t < G) {
          const uint32_t row = fast_div(t, fp.magic);
          flag = (fw[t - row * fp.words] >> row) & 1;
        }
        uint32_t total;
        const uint32_t before = block_excl_count(flag != 0, S.scan, par, total);
        if (t < G) pre[t] = (uint16_t)((flag << 15) | (carry + before));
        carry += total;
      }
      if (tid == 0 && carry != S.h.flagged) atomicOr(&S.status, (uint32_t)kErrFlags);
    }
    __syncthreads();
  }
  if (S.status != 0) {
    if (tid == 0) status[f] = S.status;
    return;
  }

  const bool hashing = VERIFY && fr.checksums;
  uint8_t* ring = dyn_smem() + L.ring;
  const uint32_t iters = (N + kChunk - 1) / kChunk;
  if (working) {
    uint8_t* dst = (uint8_t*)fr.dst;
    const bool vec = (((uintptr_t)dst) & 15) == 0;
    if (coding == kRanked) {
      if (!ranked_frame<DT, VERIFY>(fb, S, L, N, dst, vec, hashing, par)) {
        // Corrupt escape counts (uniform). The hashing warp still expects every step.
        atomicOr(&S.status, (uint32_t)kErrEscapes);
        for (uint32_t s = 0; s < iters && hashing; s++) {
          uint32_t u[8] = {0, 0, 0, 0, 0, 0, 0, 0};
          ring_wait(s);
          ring_put<EB>(ring, s, 0, u);
        }
      }
    } else {
      FastPlane res, lowp, high;
      if (coding == kGroups) {
        res = fast_plane(S.lay.residual);
        lowp = fast_plane(S.lay.planes[1]);
        high = fast_plane(S.lay.planes[2]);
      }
      for (uint32_t s = 0; s < iters; s++) {
        if (hashing) ring_wait(s);
        const uint32_t i0 = s * kChunk + tid * 8;
        const uint32_t valid = i0 < N ? (N - i0 < 8 ? N - i0 : 8) : 0;
        uint32_t u[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        if (coding == kGroups) groups8<DT>(fb, S, res, lowp, high, pre, i0, valid, u);
        else load_el8<EB>(gsrc + kFrameHeaderBytes, i0, valid, u);
        store8<EB>(dst, i0, valid, vec, u);
        if (hashing) ring_put<EB>(ring, s, valid, u);
      }
    }
  } else if (hashing) {
    // The hashing warp: h32 of the decoded bytes, one 128-byte block per round.
    const uint32_t lane = tid & 31;
    uint32_t acc = kP5 + lane;
    const uint32_t total = N * EB;
    for (uint32_t k = 0; k < iters; k++) {
      const uint32_t slot = k % kSlots;
      bar_sync_slot<kBarFull>(slot, kAllThreads);
      const uint32_t* w = (const uint32_t*)(ring + slot * kChunk * EB);
      const uint32_t left = total - k * kChunk * EB;
      const uint32_t bytes = left < kChunk * EB ? left : kChunk * EB;
      const uint32_t blocks = (bytes + 127) / 128;
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
      if (k + kSlots < iters) bar_arrive_slot<kBarEmpty>(slot, kAllThreads);
    }
    const uint32_t h = warp_h32_finish(acc, total);
    if (lane == 0 && h != S.h.checksum) atomicOr(&S.status, (uint32_t)kErrChecksum);
  }
  __syncthreads();
  if (tid == 0) status[f] = S.status;
}

}  // namespace dev
}  // namespace enec

// The column kernel, which takes every frame the general kernel below leaves.
#include "decode_columns.cuh"
// The warp kernel, which takes column frames when their escape arrays fit.
#include "decode_warp.cuh"

namespace enec {
namespace dev {

// Two instances: FP8 frames take their own (their paths would make the others spill at the
// register budget of three blocks per SM), every other frame the first.
template <bool VERIFY, bool FP8>
__global__ void __launch_bounds__(kAllThreads, FP8 ? 2 : 3)
    decode_kernel(const enec_cuda_frame* frames, uint32_t n, DecSmem L, uint32_t* status) {
  __shared__ DecShared S;
  const uint32_t f = blockIdx.x;
  if (f >= n) return;
  const enec_cuda_frame fr = frames[f];
  if (column_frame(fr.dtype, fr.elements, fr.coding)) return;  // decode_columns_kernel's
  if (FP8 != (fr.dtype >= ENEC_CUDA_E4M3)) return;               // the other instance's
  if (!FP8 && fr.dtype == ENEC_CUDA_BF16) {
    decode_frame<1, VERIFY>(fr, f, L, status, S);
  } else if (!FP8 && fr.dtype == ENEC_CUDA_FP16) {
    decode_frame<2, VERIFY>(fr, f, L, status, S);
  } else if (!FP8 && fr.dtype == ENEC_CUDA_FP32) {
    decode_frame<3, VERIFY>(fr, f, L, status, S);
  } else if (FP8 && fr.dtype == ENEC_CUDA_E4M3) {
    decode_frame<4, VERIFY>(fr, f, L, status, S);
  } else if (FP8 && fr.dtype == ENEC_CUDA_E5M2) {
    decode_frame<5, VERIFY>(fr, f, L, status, S);
  } else if (threadIdx.x == 0) {
    status[f] = kErrHeader;
  }
}

// ---------------------------------------------------------------------------------------------
// Encode
// ---------------------------------------------------------------------------------------------

struct StreamHeaderWords {
  uint32_t w[8];
};

struct EncShared {
  uint32_t f;
  uint32_t hash;
  uint32_t mant_or;
  uint32_t lo, hi, modekey;
  uint32_t k;
  uint32_t size;
  uint64_t offset;
  unsigned long long rkey, gkey;
  uint32_t unflag[12][9];
  uint32_t hist[256];
  uint32_t covered[257];
  uint8_t order[256];
  uint8_t rank[256];
  uint8_t nzx[256];
  uint64_t fmagic;
  FrameHeader h;
  Layout lay;
  Scan scan;
};

// Value sources for the plane writer: load8(i0, count, v) gives values i0 .. i0+7 (0 past count).
template <int EB>
struct ResidualSrc {
  const uint8_t* src;
  uint32_t e, m, k;
  ENEC_DEV void load8(uint32_t i0, uint32_t count, uint32_t (&v)[8]) const {
    const uint32_t valid = i0 < count ? (count - i0 < 8 ? count - i0 : 8) : 0;
    uint32_t u[8];
    if (valid == 8 && (i0 & 7) == 0) {
      load_el8<EB>(src, i0, 8, u);
    } else {
#pragma unroll
      for (uint32_t q = 0; q < 8; q++)
        u[q] = q < valid ? load_el<EB>(src, i0 + q) : 0;
    }
    const uint32_t mmask = (1u << m) - 1;
#pragma unroll
    for (int q = 0; q < 8; q++) v[q] = ((u[q] >> (e + m)) << (m - k)) | ((u[q] & mmask) >> k);
  }
};

struct Level1Src {
  const uint8_t* xs;
  const uint8_t* rank;
  uint32_t esc;
  ENEC_DEV void load8(uint32_t i0, uint32_t count, uint32_t (&v)[8]) const {
#pragma unroll
    for (uint32_t q = 0; q < 8; q++) {
      const uint32_t r = i0 + q < count ? (uint32_t)rank[xs[i0 + q]] : 0;
      v[q] = r < esc ? r : esc;
    }
  }
};

struct BytesSrc {
  const uint8_t* b;
  ENEC_DEV void load8(uint32_t i0, uint32_t count, uint32_t (&v)[8]) const {
#pragma unroll
    for (uint32_t q = 0; q < 8; q++) v[q] = i0 + q < count ? (uint32_t)b[i0 + q] : 0;
  }
};

struct LowSrc {
  const uint8_t* xs;
  uint32_t n_el, base, nmask, lmask;
  ENEC_DEV void load8(uint32_t i0, uint32_t count, uint32_t (&v)[8]) const {
#pragma unroll
    for (uint32_t q = 0; q < 8; q++) {
      const uint32_t i = i0 + q;
      v[q] = (i < count && i < n_el) ? ((base - xs[i]) & nmask) & lmask : 0;
    }
  }
};

struct HighSrc {
  const uint8_t* xs;
  const uint16_t* list;
  uint64_t fmagic;
  uint32_t n_el, G, F, base, nmask, low;
  ENEC_DEV void load8(uint32_t i0, uint32_t count, uint32_t (&v)[8]) const {
#pragma unroll
    for (uint32_t q = 0; q < 8; q++) {
      const uint32_t e = i0 + q;
      v[q] = 0;
      if (e < count) {
        const uint32_t r = fast_div(e, fmagic);
        const uint32_t i = list[e - r * F] + r * G;
        v[q] = i < n_el ? ((base - xs[i]) & nmask) >> low : 0;
      }
    }
  }
};

// Writes every word of a plane, padding included: each thread builds 8 consecutive u16 words
// from their fields (word j holds fields j, j + W, j + 2W, ...) and stores 16 bytes.
template <class Src>
ENEC_DEV void write_plane(uint8_t* fb, const Plane& pl, const Src& src) {
  const uint32_t len = pl.len, count = pl.count;
  for (uint32_t si = 0; si < len; si++) {
    const uint32_t W = pl.s[si].words, p = pl.s[si].bits, sh = pl.s[si].shift;
    const uint32_t mask = (1u << p) - 1, rows = 16 / p;
    const uint32_t Wp = pad32(2 * W) / 2;
    uint8_t* out = fb + pl.s[si].offset;
    for (uint32_t j0 = threadIdx.x * 8; j0 < Wp; j0 += kDecThreads * 8) {
      uint32_t w[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      if (j0 < W) {
        for (uint32_t row = 0; row < rows; row++) {
          const uint32_t i0 = j0 + row * W;
          if (i0 >= count) break;
          uint32_t v[8];
          src.load8(i0, count, v);
#pragma unroll
          for (uint32_t q = 0; q < 8; q++)
            if (j0 + q < W) w[q] |= ((v[q] >> sh) & mask) << (row * p);
        }
      }
      uint4 o;
      o.x = w[0] | (w[1] << 16);
      o.y = w[2] | (w[3] << 16);
      o.z = w[4] | (w[5] << 16);
      o.w = w[6] | (w[7] << 16);
      *(uint4*)(out + 2 * j0) = o;
    }
  }
}

ENEC_DEV uint32_t bitlen(uint32_t v) { return 32 - __clz(v); }

// Smem layout of the encoder (dynamic part), for frames of up to n elements.
struct EncSmem {
  uint32_t xs, comp, gmin, gmax, flag, list, total;
};

ENEC_HD uint32_t a16(uint32_t x) { return (x + 15u) & ~15u; }

ENEC_HD EncSmem enc_smem_layout(uint32_t n) {
  EncSmem s;
  const uint32_t g = (n + 15) / 16;
  s.xs = 0;
  s.comp = a16(n);
  const uint32_t comp = n > 8192 ? n : 8192;  // also the per-warp histograms (8 x 256 x 4)
  s.gmin = s.comp + a16(comp);
  s.gmax = s.gmin + a16(g);
  s.flag = s.gmax + a16(g);
  s.list = s.flag + a16(g);
  s.total = s.list + a16(2 * g);
  return s;
}

template <int EB>
__global__ void __launch_bounds__(kAllThreads, 4)
    encode_kernel(const uint8_t* in, uint64_t elements, uint32_t dtype, uint32_t frame_log2,
                  uint32_t coding, uint32_t checksums, uint8_t* out, uint64_t* out_bytes,
                  uint64_t* scratch, uint32_t frames, StreamHeaderWords sh) {
  __shared__ EncShared S;
  const uint32_t tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  if (frames == 0) {
    if (tid < 8) ((uint32_t*)out)[tid] = sh.w[tid];
    if (tid == 0) *out_bytes = kStreamHeaderBytes;
    return;
  }
  DtypeInfo d = {8, 7, 2};
  dtype_info(dtype, &d);
  const uint32_t A = 1u << d.e;
  const uint32_t frame_len = 1u << frame_log2;
  uint8_t* smem = dyn_smem();
  const EncSmem L = enc_smem_layout(elements < frame_len ? (uint32_t)elements : frame_len);
  uint8_t* xs = smem + L.xs;
  uint8_t* comp = smem + L.comp;
  uint32_t* hw = (uint32_t*)(smem + L.comp);
  uint8_t* gmin_a = smem + L.gmin;
  uint8_t* gmax_a = smem + L.gmax;
  uint8_t* flag_a = smem + L.flag;
  uint16_t* list = (uint16_t*)(smem + L.list);

  if (tid == 0) {
    S.f = atomicAdd((unsigned int*)scratch, 1u);
    S.mant_or = 0;
    S.lo = 255;
    S.hi = 0;
    S.modekey = 0;
    S.rkey = ~0ull;
    S.gkey = ~0ull;
    S.hash = 0;
  }
  if (tid < kDecThreads) {
    for (uint32_t i = tid; i < kWarps * 256; i += kDecThreads) hw[i] = 0;
    for (uint32_t i = tid; i < 12 * 9; i += kDecThreads) (&S.unflag[0][0])[i] = 0;
  }
  __syncthreads();
  const uint32_t f = S.f;
  const uint64_t first_el = (uint64_t)f << frame_log2;
  const uint32_t N = (uint32_t)(elements - first_el < frame_len ? elements - first_el : frame_len);
  const uint8_t* src = in + first_el * EB;

  if (tid >= kDecThreads) {
    // The hashing warp: h32 of the frame's input bytes.
    const uint32_t len = N * EB;
    const uint32_t full = len / 128;
    uint32_t acc = kP5 + lane;
    uint32_t blk = 0;
    for (; blk + 4 <= full; blk += 4) {
      const uint32_t* w = (const uint32_t*)(src + blk * 128) + lane;
      const uint32_t w0 = w[0], w1 = w[32], w2 = w[64], w3 = w[96];
      acc = h32_round(acc, w0);
      acc = h32_round(acc, w1);
      acc = h32_round(acc, w2);
      acc = h32_round(acc, w3);
    }
    for (; blk < full; blk++) acc = h32_round(acc, ((const uint32_t*)(src + blk * 128))[lane]);
    if (len > full * 128) {
      uint32_t w = 0;
      const uint32_t off = full * 128 + 4 * lane;
      for (uint32_t b = 0; b < 4; b++)
        if (off + b < len) w |= (uint32_t)src[off + b] << (8 * b);
      acc = h32_round(acc, w);
    }
    const uint32_t h = warp_h32_finish(acc, len);
    if (lane == 0) S.hash = h;
  } else {
    // 1. Statistics: exponents to shared memory, per-warp histograms, mantissa OR.
    const uint32_t emask = A - 1, mmask = (1u << d.m) - 1;
    uint32_t mor = 0;
    uint32_t* myh = hw + warp * 256;
    for (uint32_t i0 = tid * 8; i0 < N; i0 += kChunk) {
      const uint32_t valid = N - i0 < 8 ? N - i0 : 8;
      uint32_t u[8];
      load_el8<EB>(src, i0, valid, u);
      uint32_t xw[2] = {0, 0};
#pragma unroll
      for (uint32_t q = 0; q < 8; q++) {
        if (q < valid) {
          const uint32_t x = (u[q] >> d.m) & emask;
          mor |= u[q];
          atomicAdd(&myh[x], 1u);
          xw[q >> 2] |= x << (8 * (q & 3));
        }
      }
      if (valid == 8) {
        *(uint2*)(xs + i0) = make_uint2(xw[0], xw[1]);
      } else {
        for (uint32_t q = 0; q < valid; q++) xs[i0 + q] = (uint8_t)(xw[q >> 2] >> (8 * (q & 3)));
      }
    }
    mor = __reduce_or_sync(kFull, mor & mmask);
    if (lane == 0) atomicOr(&S.mant_or, mor);
    bar_sync_c<kBarDec>(kDecThreads);
    if (tid < A) {
      uint32_t c = 0;
#pragma unroll
      for (uint32_t w = 0; w < kWarps; w++) c += hw[w * 256 + tid];
      S.hist[tid] = c;
      if (c) {
        atomicMin(&S.lo, tid);
        atomicMax(&S.hi, tid);
        atomicMax(&S.modekey, (c << 8) | (255 - tid));
      }
    }
    bar_sync_c<kBarDec>(kDecThreads);
    // 2. Ranking: count descending, value ascending on ties (FORMAT.md 7.2). The symbols that
    // occur are listed first (a prefix count), so each rank is a loop over those only.
    uint32_t par = 0;
    {
      const uint32_t c = tid < A ? S.hist[tid] : 0;
      uint32_t nz;
      const uint32_t before = block_excl_count(c > 0, S.scan, par, nz);
      if (c > 0) S.nzx[before] = (uint8_t)tid;
      bar_sync_c<kBarDec>(kDecThreads);
      if (tid < A) {
        uint32_t rk;
        if (c > 0) {
          rk = 0;
          for (uint32_t i = 0; i < nz; i++) {
            const uint32_t y = S.nzx[i], hy = S.hist[y];
            rk += (hy > c || (hy == c && y < tid)) ? 1 : 0;
          }
        } else {
          rk = nz + (tid - before);
        }
        S.rank[tid] = (uint8_t)rk;
        S.order[rk] = (uint8_t)tid;
      }
    }
    bar_sync_c<kBarDec>(kDecThreads);
    {
      const uint32_t v = tid < A ? S.hist[S.order[tid]] : 0;
      uint32_t total;
      const uint32_t before = block_excl_scan(v, S.scan, par, total);
      S.covered[tid + 1] = before + v;
      if (tid == 0) {
        S.covered[0] = 0;
        const uint32_t mo = S.mant_or;
        S.k = mo ? ((uint32_t)(__ffs(mo) - 1) < d.m ? (uint32_t)(__ffs(mo) - 1) : d.m) : d.m;
      }
    }
    bar_sync_c<kBarDec>(kDecThreads);
    const uint32_t k = S.k;
    // 3a. Ranked candidates: L = 1..3, widths lexicographic over 1..E.
    if (coding != ENEC_CUDA_GROUPS) {
      const uint32_t E = d.e, E2 = E * E, total = E + E2 + E2 * E;
      for (uint32_t idx = tid; idx < total; idx += kDecThreads) {
        uint32_t levels, lex;
        if (idx < E) {
          levels = 1;
          lex = idx;
        } else if (idx < E + E2) {
          levels = 2;
          lex = idx - E;
        } else {
          levels = 3;
          lex = idx - E - E2;
        }
        uint32_t widths[3] = {0, 0, 0}, counts[3] = {0, 0, 0};
        for (int j = (int)levels - 1; j >= 0; j--) {
          widths[j] = lex % E + 1;
          lex /= E;
        }
        uint32_t start = 0;
        for (uint32_t j = 0; j < levels; j++) {
          start += (1u << widths[j]) - 1;
          counts[j] = N - S.covered[start < A ? start : A];
        }
        if (start > A) continue;
        const uint32_t size = ranked_size(d, k, N, levels, widths, counts, start);
        atomicMin(&S.rkey, ((unsigned long long)size << 20) | idx);
      }
    }
    // 3b. Groups candidates: b around the mode, every m; flagged groups counted by ballots.
    const uint32_t lo = S.lo, hi = S.hi, mode = 255 - (S.modekey & 0xff);
    const uint32_t firstb = lo > (mode >= 3 ? mode - 3 : 0) ? lo : (mode >= 3 ? mode - 3 : 0);
    const uint32_t lastb = hi < mode + 8 ? hi : mode + 8;
    const uint32_t nc = lastb - firstb + 1;
    const uint32_t G = (N + 15) / 16;
    if (coding != ENEC_CUDA_RANKED) {
      for (uint32_t tb = 0; tb < G; tb += kDecThreads) {
        const uint32_t t = tb + tid;
        uint32_t gmin = 255, gmax = 0;
        if (t < G) {
          for (uint32_t r = 0; r < 16; r++) {
            const uint32_t i = t + r * G;
            if (i < N) {
              const uint32_t x = xs[i];
              gmin = x < gmin ? x : gmin;
              gmax = x > gmax ? x : gmax;
            }
          }
          gmin_a[t] = (uint8_t)gmin;
          gmax_a[t] = (uint8_t)gmax;
        }
        // Histogram of the low width each group needs, per base candidate (summed below).
        if (t < G) {
          for (uint32_t c = 0; c < nc; c++) {
            const uint32_t base = firstb + c;
            if (gmax <= base) {
              const uint32_t m = bitlen(base - gmin);
              if (m <= 8) atomicAdd(&S.unflag[c][m], 1u);
            }
          }
        }
      }
    }
    bar_sync_c<kBarDec>(kDecThreads);
    if (coding != ENEC_CUDA_RANKED && tid < nc) {
      // Cumulative: a group needing m bits is unflagged for every larger m.
      for (uint32_t m = 1; m <= 8; m++) S.unflag[tid][m] += S.unflag[tid][m - 1];
    }
    bar_sync_c<kBarDec>(kDecThreads);
    if (coding != ENEC_CUDA_RANKED && tid < nc * 9) {
      const uint32_t c = tid / 9, m = tid % 9;
      const uint32_t base = firstb + c;
      const uint32_t n = groups_width(base, lo, hi, d.e);
      if (m <= n) {
        const uint32_t F = m == n ? 0 : G - S.unflag[c][m];
        const uint32_t size = groups_size(d, k, N, n, m, F);
        atomicMin(&S.gkey, ((unsigned long long)size << 20) | tid);
      }
    }
    bar_sync_c<kBarDec>(kDecThreads);
    // 4. Choice (FORMAT.md 7.5), header, layout, and the frame's offset by look-back.
    if (tid == 0) {
      FrameHeader& h = S.h;
      uint32_t best = kFrameHeaderBytes + pad32(N * EB);
      uint32_t chosen = kStored;
      if (coding != ENEC_CUDA_RANKED && (uint32_t)(S.gkey >> 20) <= best) {
        best = (uint32_t)(S.gkey >> 20);
        chosen = kGroups;
      }
      if (coding != ENEC_CUDA_GROUPS && (uint32_t)(S.rkey >> 20) <= best) {
        best = (uint32_t)(S.rkey >> 20);
        chosen = kRanked;
      }
      h.frame_bytes = best;
      h.checksum = 0;
      h.elements = N;
      h.coding = chosen;
      h.dead_bits = chosen == kStored ? 0 : k;
      h.base = h.width = h.low = h.flagged = h.levels = 0;
      for (int j = 0; j < 3; j++) h.widths[j] = h.counts[j] = 0;
      if (chosen == kGroups) {
        const uint32_t idx = (uint32_t)(S.gkey & 0xfffff);
        const uint32_t c = idx / 9, m = idx % 9;
        h.base = firstb + c;
        h.width = groups_width(h.base, lo, hi, d.e);
        h.low = m;
        h.flagged = m == h.width ? 0 : G - S.unflag[c][m];
      } else if (chosen == kRanked) {
        const uint32_t E = d.e, E2 = E * E;
        uint32_t idx = (uint32_t)(S.rkey & 0xfffff), lex;
        if (idx < E) {
          h.levels = 1;
          lex = idx;
        } else if (idx < E + E2) {
          h.levels = 2;
          lex = idx - E;
        } else {
          h.levels = 3;
          lex = idx - E - E2;
        }
        for (int j = (int)h.levels - 1; j >= 0; j--) {
          h.widths[j] = lex % E + 1;
          lex /= E;
        }
        uint32_t start = 0;
        for (uint32_t j = 0; j < h.levels; j++) {
          start += (1u << h.widths[j]) - 1;
          h.counts[j] = N - S.covered[start < A ? start : A];
        }
      }
      layout_new(d, N, h, &S.lay);
      S.fmagic = div_magic(h.flagged);
      S.size = best;
      // Decoupled look-back: flag 1 = this frame's size, flag 2 = inclusive prefix.
      uint64_t* st = scratch + 1;
      const uint64_t kAgg = 1ull << 62, kInc = 2ull << 62, kVal = kAgg - 1;
      uint64_t excl = 0;
      if (f == 0) {
        st_volatile_u64(&st[0], kInc | best);
      } else {
        st_volatile_u64(&st[f], kAgg | best);
        int64_t j = (int64_t)f - 1;
        while (true) {
          const uint64_t v = ld_volatile_u64(&st[j]);
          if ((v >> 62) == 0) {
            spin_pause();
            continue;
          }
          excl += v & kVal;
          if ((v >> 62) == 2) break;
          j--;
        }
        st_volatile_u64(&st[f], kInc | (excl + best));
      }
      S.offset = excl;
    }
    bar_sync_c<kBarDec>(kDecThreads);
    // 5. Write the frame body.
    uint8_t* fb = out + kStreamHeaderBytes + S.offset;
    const uint32_t chosen = S.h.coding;
    if (chosen == kStored) {
      const uint32_t bytes = N * EB, padded = pad32(bytes);
      for (uint32_t o = tid * 16; o < padded; o += kDecThreads * 16) {
        uint4 v;
        if (o + 16 <= bytes) {
          v = *(const uint4*)(src + o);
        } else {
          uint32_t w[4] = {0, 0, 0, 0};
          for (uint32_t b = 0; b < 16; b++)
            if (o + b < bytes) w[b >> 2] |= (uint32_t)src[o + b] << (8 * (b & 3));
          v = make_uint4(w[0], w[1], w[2], w[3]);
        }
        *(uint4*)(fb + kFrameHeaderBytes + o) = v;
      }
    } else {
      const ResidualSrc<EB> rs{src, d.e, d.m, k};
      write_plane(fb, S.lay.residual, rs);
      if (chosen == kRanked) {
        const uint32_t T = S.lay.table_len;
        for (uint32_t t = tid; t < pad32(T); t += kDecThreads)
          fb[S.lay.table_at + t] = t < T ? S.order[t] : 0;
        const Level1Src l1{xs, S.rank, (1u << S.h.widths[0]) - 1};
        write_plane(fb, S.lay.planes[0], l1);
        const uint32_t levels = S.h.levels;
        const uint32_t c2 = S.h.counts[0], c3 = S.h.counts[1], c4 = S.h.counts[2];
        const uint32_t cap = N > 8192 ? N : 8192;
        if (c2 + c3 + c4 <= cap) {
          // One sweep: every compacted plane's positions from one packed prefix sum
          // (21-bit fields), values scattered into shared memory, then each plane written.
          const uint32_t offs[3] = {0, c2, c2 + c3};
          uint64_t carry = 0;
          for (uint32_t i00 = 0; i00 < N; i00 += kChunk) {
            const uint32_t i0 = i00 + tid * 8;
            const uint32_t valid = i0 < N ? (N - i0 < 8 ? N - i0 : 8) : 0;
            uint32_t xq[8], rq[8];
            uint64_t cnt = 0;
#pragma unroll
            for (uint32_t q = 0; q < 8; q++) {
              xq[q] = q < valid ? xs[i0 + q] : 0;
              rq[q] = q < valid ? S.rank[xq[q]] : 0;
              for (uint32_t j = 1; j <= levels; j++)
                if (q < valid && rq[q] >= S.lay.starts[j]) cnt += 1ull << (21 * (j - 1));
            }
            uint64_t total;
            uint64_t pos = block_excl_scan64(cnt, S.scan, par, total) + carry;
            carry += total;
#pragma unroll
            for (uint32_t q = 0; q < 8; q++) {
              if (q >= valid) continue;
              for (uint32_t j = 1; j <= levels; j++) {
                const uint32_t start = S.lay.starts[j];
                if (rq[q] < start) break;
                const uint32_t sh = 21 * (j - 1);
                const uint32_t at = (uint32_t)((pos >> sh) & 0x1fffff);
                pos += 1ull << sh;
                uint32_t v;
                if (j < levels) {
                  const uint32_t ec = (1u << S.h.widths[j]) - 1;
                  v = rq[q] - start < ec ? rq[q] - start : ec;
                } else {
                  v = xq[q];
                }
                comp[offs[j - 1] + at] = (uint8_t)v;
              }
            }
          }
          bar_sync_c<kBarDec>(kDecThreads);
          for (uint32_t j = 1; j <= levels; j++)
            if (S.lay.planes[j].count) write_plane(fb, S.lay.planes[j], BytesSrc{comp + offs[j - 1]});
        } else {
          for (uint32_t j = 1; j <= levels; j++) {
            const Plane& pl = S.lay.planes[j];
            if (pl.count == 0) break;
            const uint32_t start = S.lay.starts[j];
            const uint32_t ec = j < levels ? (1u << S.h.widths[j]) - 1 : 0;
            uint32_t carry = 0;
            for (uint32_t i00 = 0; i00 < N; i00 += kChunk) {
              const uint32_t i0 = i00 + tid * 8;
              const uint32_t valid = i0 < N ? (N - i0 < 8 ? N - i0 : 8) : 0;
              uint32_t sel = 0, vals[8];
  #pragma unroll
              for (uint32_t q = 0; q < 8; q++) {
                vals[q] = 0;
                if (q < valid) {
                  const uint32_t x = xs[i0 + q], rk = S.rank[x];
                  if (rk >= start) {
                    sel |= 1u << q;
                    vals[q] = j < levels ? (rk - start < ec ? rk - start : ec) : x;
                  }
                }
              }
              uint32_t total;
              uint32_t pos = block_excl_scan(__popc(sel), S.scan, par, total) + carry;
              carry += total;
  #pragma unroll
              for (uint32_t q = 0; q < 8; q++)
                if ((sel >> q) & 1) comp[pos++] = (uint8_t)vals[q];
            }
            bar_sync_c<kBarDec>(kDecThreads);
            write_plane(fb, pl, BytesSrc{comp});
            bar_sync_c<kBarDec>(kDecThreads);
          }
        }
      } else {
        const uint32_t base = S.h.base, n = S.h.width, low = S.h.low, F = S.h.flagged;
        const uint32_t nmask = (1u << n) - 1;
        uint32_t carry = 0;
        for (uint32_t tb = 0; tb < G; tb += kDecThreads) {
          const uint32_t t = tb + tid;
          bool flagged = false;
          if (t < G && low < n)
            flagged = gmax_a[t] > base || (int32_t)gmin_a[t] <= (int32_t)base - (1 << low);
          uint32_t total;
          const uint32_t before = block_excl_count(flagged, S.scan, par, total);
          if (t < G) {
            flag_a[t] = flagged ? 1 : 0;
            if (flagged) list[carry + before] = (uint16_t)t;
          }
          carry += total;
        }
        bar_sync_c<kBarDec>(kDecThreads);
        write_plane(fb, S.lay.planes[0], BytesSrc{flag_a});
        write_plane(fb, S.lay.planes[1], LowSrc{xs, N, base, nmask, (1u << low) - 1});
        if (F) {
          const HighSrc hs{xs, list, S.fmagic, N, G, F, base, nmask, low};
          write_plane(fb, S.lay.planes[2], hs);
        }
      }
    }
  }
  __syncthreads();
  if (tid == 0) {
    uint8_t* fb = out + kStreamHeaderBytes + S.offset;
    const FrameHeader& h = S.h;
    uint32_t w[8];
    w[0] = h.frame_bytes;
    w[1] = checksums ? S.hash : 0;
    w[2] = h.elements;
    w[3] = h.coding | (h.dead_bits << 8);
    if (h.coding == kGroups) {
      w[4] = h.base | (h.width << 8) | (h.low << 16);
      w[5] = h.flagged;
      w[6] = w[7] = 0;
    } else if (h.coding == kRanked) {
      w[4] = h.levels | (h.widths[0] << 8) | (h.widths[1] << 16) | (h.widths[2] << 24);
      w[5] = h.counts[0];
      w[6] = h.counts[1];
      w[7] = h.counts[2];
    } else {
      w[4] = w[5] = w[6] = w[7] = 0;
    }
    uint4* o = (uint4*)fb;
    o[0] = make_uint4(w[0], w[1], w[2], w[3]);
    o[1] = make_uint4(w[4], w[5], w[6], w[7]);
    if (f == frames - 1) *out_bytes = kStreamHeaderBytes + S.offset + S.size;
  }
  if (f == 0 && tid < 8) ((uint32_t*)out)[tid] = sh.w[tid];
}

}  // namespace dev
}  // namespace enec

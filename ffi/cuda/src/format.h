// enec format version 1: the fixed-layout parts a kernel reads (FORMAT.md sections 2-6).
//
// Host and device share this file: frame-header parsing, the frame layout (where every section
// and sub-plane lies), the frame size of a parameter set, and h32. It mirrors src/format.rs and
// the Plane type of src/kernels.rs one to one; every rule that a Rust `FrameHeader::parse`
// enforces is enforced here too (the host walk and the kernels both call it).
#pragma once

#include <stdint.h>

#if defined(ENEC_SIM)
#include "../sim/cuda_sim.h"
#endif

#if defined(__CUDACC__) || defined(ENEC_SIM)
#define ENEC_HD __host__ __device__ __forceinline__
#else
#define ENEC_HD inline
#endif

namespace enec {

constexpr uint32_t kStreamHeaderBytes = 32;
constexpr uint32_t kFrameHeaderBytes = 32;
constexpr uint32_t kMinFrameLog2 = 10;
constexpr uint32_t kMaxFrameLog2 = 16;
constexpr uint32_t kMaxFrameLen = 1u << kMaxFrameLog2;
constexpr uint32_t kGroupLen = 16;
constexpr uint32_t kMaxLevels = 3;

enum Coding : uint8_t { kStored = 0, kGroups = 1, kRanked = 2 };

// Error codes of the C API (negative) and of per-frame statuses (positive).
enum FrameError : uint32_t {
  kOk = 0,
  kErrHeader = 1,         // a frame-header field is out of range / reserved bytes not zero
  kErrSize = 2,           // frame_bytes does not match the parameters
  kErrElements = 3,       // element count differs from the stream header's
  kErrTable = 4,          // symbol table entry exceeds the exponent width
  kErrEscapes = 5,        // escape counts do not match the level planes
  kErrFlags = 6,          // flag count differs from the header's
  kErrChecksum = 7,       // decoded bytes do not match the frame checksum
  kErrChecksumField = 8,  // checksum present in a stream without checksums
  kErrCoding = 9,         // unsupported coding id
};

ENEC_HD uint32_t pad32(uint32_t x) { return (x + 31u) & ~31u; }

struct DtypeInfo {
  uint32_t e;   // exponent bits
  uint32_t m;   // mantissa bits
  uint32_t eb;  // element bytes
};

ENEC_HD bool dtype_info(uint32_t code, DtypeInfo* d) {
  switch (code) {
    case 1: d->e = 8; d->m = 7; d->eb = 2; return true;    // bf16
    case 2: d->e = 5; d->m = 10; d->eb = 2; return true;   // fp16
    case 3: d->e = 8; d->m = 23; d->eb = 4; return true;   // fp32
    case 4: d->e = 4; d->m = 3; d->eb = 1; return true;    // e4m3 (format 1.1)
    case 5: d->e = 5; d->m = 2; d->eb = 1; return true;    // e5m2 (format 1.1)
    default: return false;
  }
}

// The stream minor version that brought a dtype (FORMAT.md section 3): streams carry it, and a
// stream whose minor is older than its dtype's is refused.
ENEC_HD uint32_t dtype_minor(uint32_t code) { return code >= 4 ? 1 : 0; }

// One power-of-two-wide slice of a plane (FORMAT.md 4.5): field i sits in u16 word i mod words
// at bit (i div words) * bits. `magic` = ceil(2^40 / words) makes i div words a multiply.
struct SubPlane {
  uint32_t offset;  // bytes from the frame start (multiple of 32)
  uint32_t words;   // W = ceil(count * bits / 16)
  uint32_t bits;    // p
  uint32_t shift;   // o: position of this field inside the plane's values
  uint64_t magic;
};

struct Plane {
  SubPlane s[5];
  uint32_t len;    // sub-planes in use
  uint32_t count;  // values
  uint32_t width;  // bits per value (0..24)
  uint32_t end;    // offset just past the last sub-plane's padding
};

// ceil(2^40 / d) for 0 < d < 2^20, without a 64-bit integer division (slow on a GPU): a double
// quotient, then an exact correction.
ENEC_HD uint64_t div_magic(uint32_t d) {
  if (d == 0) return 0;
  uint64_t q = (uint64_t)(1099511627776.0 / (double)d);
  int64_t r = (int64_t)((1ull << 40) - q * d);
  while (r < 0) {
    q--;
    r += d;
  }
  while (r >= (int64_t)d) {
    q++;
    r -= d;
  }
  return q + (r != 0 ? 1 : 0);
}

// n / d for n, d < 2^20 (exact: see README.md, "fast division").
ENEC_HD uint32_t fast_div(uint32_t n, uint64_t magic) {
  return (uint32_t)(((uint64_t)n * magic) >> 40);
}

ENEC_HD void plane_at(Plane* p, uint32_t offset, uint32_t width, uint32_t count) {
  p->count = count;
  p->width = width;
  p->len = 0;
  p->end = offset;
  for (uint32_t bits = 1; bits <= 16; bits <<= 1) {
    if (width & bits) {
      uint32_t words = (count * bits + 15) / 16;
      SubPlane& s = p->s[p->len];
      s.offset = p->end;
      s.words = words;
      s.bits = bits;
      s.shift = width & (bits - 1);
      s.magic = 0;  // filled by layout_magic (kernels need it; sizes do not)
      p->len++;
      p->end += pad32(2 * words);
    }
  }
}

// Bytes a plane occupies, padding included.
ENEC_HD uint32_t plane_bytes(uint32_t width, uint32_t count) {
  uint32_t total = 0;
  for (uint32_t bits = 1; bits <= 16; bits <<= 1) {
    if (width & bits) total += pad32(2 * ((count * bits + 15) / 16));
  }
  return total;
}

// A parsed frame header (FORMAT.md section 4).
struct FrameHeader {
  uint32_t frame_bytes;
  uint32_t checksum;
  uint32_t elements;
  uint32_t coding;
  uint32_t dead_bits;
  // groups
  uint32_t base, width, low, flagged;
  // ranked
  uint32_t levels;
  uint32_t widths[3];
  uint32_t counts[3];  // c2, c3, c4
};

ENEC_HD uint32_t rd32(const uint8_t* b) {
  return (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) | ((uint32_t)b[3] << 24);
}

// Parses and range-checks a frame header exactly as src/format.rs FrameHeader::parse does.
ENEC_HD uint32_t parse_frame_header(const uint8_t* b, const DtypeInfo& d, FrameHeader* h) {
  h->frame_bytes = rd32(b);
  h->checksum = rd32(b + 4);
  h->elements = rd32(b + 8);
  h->coding = b[12];
  h->dead_bits = b[13];
  h->base = h->width = h->low = h->flagged = 0;
  h->levels = 0;
  for (int j = 0; j < 3; j++) h->widths[j] = h->counts[j] = 0;
  const uint32_t e = d.e;
  if (h->dead_bits > d.m) return kErrHeader;
  if (b[14] != 0 || b[15] != 0) return kErrHeader;
  if (h->coding == kStored) {
    if (h->dead_bits != 0) return kErrHeader;
    for (int i = 16; i < 32; i++)
      if (b[i] != 0) return kErrHeader;
    return kOk;
  }
  if (h->coding == kGroups) {
    h->base = b[16];
    h->width = b[17];
    h->low = b[18];
    h->flagged = rd32(b + 20);
    if (h->base >= (1u << e) || h->width == 0 || h->width > e || h->low > h->width) return kErrHeader;
    if (b[19] != 0) return kErrHeader;
    for (int i = 24; i < 32; i++)
      if (b[i] != 0) return kErrHeader;
    if (h->flagged > (h->elements + 15) / 16) return kErrHeader;
    if (h->low == h->width && h->flagged != 0) return kErrHeader;
    return kOk;
  }
  if (h->coding == kRanked) {
    h->levels = b[16];
    for (int j = 0; j < 3; j++) {
      h->widths[j] = b[17 + j];
      h->counts[j] = rd32(b + 20 + 4 * j);
    }
    if (h->levels < 1 || h->levels > kMaxLevels) return kErrHeader;
    uint32_t table = 0;
    for (uint32_t j = 0; j < kMaxLevels; j++) {
      uint32_t w = h->widths[j];
      bool used = j < h->levels;
      if ((used && (w == 0 || w > e)) || (!used && w != 0)) return kErrHeader;
      if (j >= h->levels && h->counts[j] != 0) return kErrHeader;
      if (used) table += (1u << w) - 1;
    }
    if (table > (1u << e)) return kErrHeader;
    uint32_t prev = h->elements;
    for (uint32_t j = 0; j < h->levels; j++) {
      if (h->counts[j] > prev) return kErrHeader;
      prev = h->counts[j];
    }
    return kOk;
  }
  return kErrCoding;
}

// Where each section of a frame lies (src/format.rs FrameLayout).
struct Layout {
  uint32_t table_at, table_len;
  uint32_t starts[4];  // ranked: S_0..S_L
  Plane residual;
  Plane planes[4];     // groups: flags, low, high. ranked: level 1..L, exponent level.
  uint32_t plane_count;
  uint32_t bytes;
};

ENEC_HD void layout_new(const DtypeInfo& d, uint32_t elements, const FrameHeader& h, Layout* l) {
  uint32_t at = kFrameHeaderBytes;
  l->table_at = 0;
  l->table_len = 0;
  l->plane_count = 0;
  for (int j = 0; j < 4; j++) l->starts[j] = 0;
  const uint32_t rw = 1 + d.m - h.dead_bits;
  if (h.coding == kStored) {
    l->residual.len = 0;
    l->residual.count = 0;
    at += pad32(elements * d.eb);
  } else if (h.coding == kGroups) {
    plane_at(&l->residual, at, rw, elements);
    at = l->residual.end;
    uint32_t groups = (elements + kGroupLen - 1) / kGroupLen;
    plane_at(&l->planes[0], at, 1, groups);
    at = l->planes[0].end;
    plane_at(&l->planes[1], at, h.low, kGroupLen * groups);
    at = l->planes[1].end;
    uint32_t high = h.width - (h.low < h.width ? h.low : h.width);
    plane_at(&l->planes[2], at, high, kGroupLen * h.flagged);
    at = l->planes[2].end;
    l->plane_count = 3;
  } else {
    uint32_t s = 0;
    for (uint32_t j = 0; j < h.levels; j++) {
      s += (1u << h.widths[j]) - 1;
      l->starts[j + 1] = s;
    }
    l->table_at = at;
    l->table_len = s;
    at += pad32(s);
    plane_at(&l->residual, at, rw, elements);
    at = l->residual.end;
    uint32_t count = elements;
    for (uint32_t j = 0; j < h.levels; j++) {
      plane_at(&l->planes[j], at, h.widths[j], count);
      at = l->planes[j].end;
      count = h.counts[j];
    }
    plane_at(&l->planes[h.levels], at, d.e, count);
    at = l->planes[h.levels].end;
    l->plane_count = h.levels + 1;
  }
  l->bytes = at;
}

// The division constants of sub-plane `i` (0..24: plane i / 5, sub-plane i % 5; plane 4 is the
// residual); threads fill them in parallel.
ENEC_HD void layout_magic(Layout* l, uint32_t i) {
  if (i >= 25) return;
  Plane* p = i / 5 < 4 ? &l->planes[i / 5] : &l->residual;
  if (i / 5 < 4 && i / 5 >= l->plane_count) return;
  if (i % 5 < p->len) p->s[i % 5].magic = div_magic(p->s[i % 5].words);
}

// Frame size of a ranked parameter set (FORMAT.md 4.4), without building the layout.
ENEC_HD uint32_t ranked_size(const DtypeInfo& d, uint32_t k, uint32_t n, uint32_t levels,
                             const uint32_t* widths, const uint32_t* counts, uint32_t table) {
  uint32_t size = kFrameHeaderBytes + pad32(table) + plane_bytes(1 + d.m - k, n);
  uint32_t count = n;
  for (uint32_t j = 0; j < levels; j++) {
    size += plane_bytes(widths[j], count);
    count = counts[j];
  }
  return size + plane_bytes(d.e, count);
}

ENEC_HD uint32_t groups_size(const DtypeInfo& d, uint32_t k, uint32_t n, uint32_t width,
                             uint32_t low, uint32_t flagged) {
  uint32_t groups = (n + kGroupLen - 1) / kGroupLen;
  return kFrameHeaderBytes + plane_bytes(1 + d.m - k, n) + plane_bytes(1, groups) +
         plane_bytes(low, kGroupLen * groups) + plane_bytes(width - low, kGroupLen * flagged);
}

// Smallest n in 1..=E whose window [b - 2^(n-1) + 1, b + 2^(n-1)] holds lo..=hi, else E.
ENEC_HD uint32_t groups_width(uint32_t base, uint32_t lo, uint32_t hi, uint32_t e) {
  for (uint32_t n = 1; n < e; n++) {
    int32_t half = 1 << (n - 1);
    if ((int32_t)base - half < (int32_t)lo && (int32_t)hi <= (int32_t)base + half) return n;
  }
  return e;
}

// h32 (FORMAT.md section 6), host version.
constexpr uint32_t kP1 = 0x9E3779B1u, kP2 = 0x85EBCA77u, kP3 = 0xC2B2AE3Du, kP4 = 0x27D4EB2Fu,
                   kP5 = 0x165667B1u;

ENEC_HD uint32_t rotl32(uint32_t x, uint32_t r) { return (x << r) | (x >> (32 - r)); }

ENEC_HD uint32_t h32_round(uint32_t acc, uint32_t w) { return rotl32(acc + w * kP2, 13) * kP1; }

// The last step of h32, after the lanes are folded in.
ENEC_HD uint32_t h32_avalanche(uint32_t h) {
  h ^= h >> 15;
  h *= kP2;
  h ^= h >> 13;
  h *= kP3;
  return h ^ (h >> 16);
}

ENEC_HD uint32_t h32_finish(const uint32_t* acc, uint64_t len) {
  uint32_t h = (uint32_t)len + kP5;
  for (int j = 0; j < 32; j++) h = rotl32(h + acc[j] * kP3, 17) * kP4;
  return h32_avalanche(h);
}

inline uint32_t h32_host(const uint8_t* p, uint64_t len) {
  uint32_t acc[32];
  for (int j = 0; j < 32; j++) acc[j] = kP5 + (uint32_t)j;
  uint64_t full = len / 128;
  for (uint64_t b = 0; b < full; b++) {
    const uint8_t* q = p + 128 * b;
    for (int j = 0; j < 32; j++) acc[j] = h32_round(acc[j], rd32(q + 4 * j));
  }
  uint64_t rest = len - 128 * full;
  if (rest) {
    uint8_t last[128] = {0};
    for (uint64_t i = 0; i < rest; i++) last[i] = p[128 * full + i];
    for (int j = 0; j < 32; j++) acc[j] = h32_round(acc[j], rd32(last + 4 * j));
  }
  return h32_finish(acc, len);
}

}  // namespace enec

// Host-side helpers shared by the real launcher (enec_launch.asc) and the CPU-model driver:
// read the 32-byte stream header, walk the frame headers to find every frame's offset (FORMAT.md
// section 1: frame i + 1 starts at offset(i) + frame_bytes(i)), and size the kernels' buffers.
// Plain C++17, no AscendC.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "../kernel/enec_tiling.h"

namespace enec_host {

inline uint32_t rd32(const uint8_t* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }
inline uint64_t rd64(const uint8_t* p) { uint64_t v; std::memcpy(&v, p, 8); return v; }

// h32 (FORMAT.md section 6), for the stream header check.
inline uint32_t h32(const uint8_t* bytes, size_t len) {
    const uint32_t P1 = 0x9E3779B1u, P2 = 0x85EBCA77u, P3 = 0xC2B2AE3Du, P4 = 0x27D4EB2Fu, P5 = 0x165667B1u;
    auto rotl = [](uint32_t x, int r) { return (x << r) | (x >> (32 - r)); };
    uint32_t acc[32];
    for (uint32_t j = 0; j < 32; j++) acc[j] = P5 + j;
    for (size_t at = 0; at < len; at += 128) {
        uint8_t block[128] = {};
        std::memcpy(block, bytes + at, len - at < 128 ? len - at : 128);
        for (int j = 0; j < 32; j++) acc[j] = rotl(acc[j] + rd32(block + 4 * j) * P2, 13) * P1;
    }
    uint32_t h = uint32_t(len) + P5;
    for (int j = 0; j < 32; j++) h = rotl(h + acc[j] * P3, 17) * P4;
    h ^= h >> 15; h *= P2; h ^= h >> 13; h *= P3; h ^= h >> 16;
    return h;
}

// FORMAT.md section 2: 1 bf16, 2 fp16, 3 fp32, 4 e4m3, 5 e5m2.
inline uint32_t element_bytes(uint32_t dtype) { return dtype == 3 ? 4 : dtype >= 4 ? 1 : 2; }
// The format minor version that brought the dtype (section 3): a stream must carry at least it.
inline uint32_t dtype_minor(uint32_t dtype) { return dtype >= 4 ? 1 : 0; }

struct StreamInfo {
    uint32_t dtype = 0, frameLog2 = 0, checksums = 0, frameCount = 0;
    uint64_t elementCount = 0;
    uint32_t elementBytes() const { return element_bytes(dtype); }
};

inline bool read_header(const uint8_t* s, size_t n, StreamInfo& info, std::string& err) {
    if (n < 32) { err = "truncated stream header"; return false; }
    if (std::memcmp(s, "ENEC", 4) != 0) { err = "bad magic"; return false; }
    if (s[4] != 1) { err = "unsupported major version"; return false; }
    if (rd32(s + 28) != h32(s, 28)) { err = "stream header check does not match"; return false; }
    if (s[6] < 1 || s[6] > 5) { err = "unknown dtype"; return false; }
    if (s[5] < dtype_minor(s[6])) { err = "dtype is newer than the stream's minor version"; return false; }
    if (s[7] < 10 || s[7] > 16) { err = "frame length out of range"; return false; }
    if (s[8] & ~1u) { err = "unknown flags"; return false; }
    if (s[9] | s[10] | s[11] | s[24] | s[25] | s[26] | s[27]) { err = "reserved bytes are not zero"; return false; }
    info.dtype = s[6];
    info.frameLog2 = s[7];
    info.checksums = s[8] & 1;
    info.frameCount = rd32(s + 12);
    info.elementCount = rd64(s + 16);
    uint64_t frames = (info.elementCount + (uint64_t(1) << info.frameLog2) - 1) >> info.frameLog2;
    if (frames != info.frameCount) { err = "frame count does not match element count"; return false; }
    return true;
}

// Offsets of every frame, from the frame headers alone (no decoding).
inline bool frame_offsets(const uint8_t* s, size_t n, const StreamInfo& info, std::vector<uint64_t>& offsets,
                          std::string& err) {
    offsets.clear();
    uint64_t at = 32;
    for (uint32_t f = 0; f < info.frameCount; f++) {
        if (at + 32 > n) { err = "truncated frame header"; return false; }
        uint32_t bytes = rd32(s + at);
        uint64_t first = uint64_t(f) << info.frameLog2;
        uint64_t left = info.elementCount - first, len = uint64_t(1) << info.frameLog2;
        if (rd32(s + at + 8) != (left < len ? left : len) || bytes < 32 || bytes % 32 != 0) {
            err = "frame header inconsistent";
            return false;
        }
        if (at + bytes > n) { err = "truncated frame"; return false; }
        offsets.push_back(at);
        at += bytes;
    }
    if (at != n) { err = "trailing data after the last frame"; return false; }
    return true;
}

inline uint32_t slot_bytes(uint32_t dtype, uint32_t frameLog2) {
    uint32_t eb = element_bytes(dtype);
    return 32 + (((uint32_t(1) << frameLog2) * eb + 31) & ~31u);
}

inline const char* status_name(uint32_t s) {
    switch (s) {
        case ENEC_FRAME_OK: return "ok";
        case ENEC_FRAME_CORRUPT: return "corrupt frame";
        case ENEC_FRAME_CHECKSUM_MISMATCH: return "checksum mismatch";
        case ENEC_FRAME_UNSUPPORTED_CODING: return "unsupported coding";
        case ENEC_FRAME_TRUNCATED: return "truncated";
        default: return "unknown status";
    }
}

}  // namespace enec_host

// Tiling structs and status codes shared by the AscendC kernels (device) and their launchers
// (host). Plain fixed-width fields only: the struct is passed to the kernel by value.
#pragma once

#include <cstdint>

// Arguments of enec_decode: one frame per core step, frames spread over cores by index.
struct EnecDecodeTiling {
    uint32_t dtype;          // 1 bf16, 2 fp16, 3 fp32, 4 e4m3, 5 e5m2 (FORMAT.md section 2)
    uint32_t frameLog2;      // 10 ..= 16
    uint32_t checksums;      // stream header flag bit 0
    uint32_t frameCount;     // frames in the stream
    uint64_t elementCount;   // elements in the stream
    uint64_t streamBytes;    // bytes of the stream buffer (frames must lie inside it)
};

// Arguments of enec_encode. Frame f is written to `slots + f * slotBytes`, its size to sizes[f];
// enec_concat then packs the frames behind the stream header.
struct EnecEncodeTiling {
    uint32_t dtype;          // 1 bf16, 2 fp16, 3 fp32, 4 e4m3, 5 e5m2
    uint32_t frameLog2;      // 10 ..= 16
    uint32_t coding;         // 0 auto, 1 groups, 2 ranked (FORMAT.md section 7.5)
    uint32_t checksums;      // 1: write h32 of each frame's input
    uint32_t frameCount;
    uint32_t slotBytes;      // 32 + pad32(frame_len * element_bytes): the largest frame
    uint64_t elementCount;
    uint64_t workspaceBytesPerCore;  // enec_encode_workspace_bytes(frameLog2)
};

// Arguments of enec_concat: copy frame f (sizes[f] bytes at slots + f * slotBytes) to
// out + offsets[f].
struct EnecConcatTiling {
    uint32_t frameCount;
    uint32_t slotBytes;
};

// Per-frame status written by enec_decode (0 = the frame decoded and, if present, its checksum
// matched).
enum EnecFrameStatus : uint32_t {
    ENEC_FRAME_OK = 0,
    ENEC_FRAME_CORRUPT = 1,
    ENEC_FRAME_CHECKSUM_MISMATCH = 2,
    ENEC_FRAME_UNSUPPORTED_CODING = 3,
    ENEC_FRAME_TRUNCATED = 4,
};

// Staging area enec_encode needs per core: 6 planes of unpacked u16 values.
constexpr uint32_t ENEC_ENCODE_STAGES = 6;
inline uint64_t enec_encode_stage_elems(uint32_t frameLog2) { return (uint64_t(1) << frameLog2) + 16; }
inline uint64_t enec_encode_workspace_bytes(uint32_t frameLog2) {
    return ENEC_ENCODE_STAGES * enec_encode_stage_elems(frameLog2) * 2;
}

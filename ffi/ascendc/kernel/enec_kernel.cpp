// enec format v1 on Ascend AI Vector cores (Atlas A2, dav-2201): decode and encode kernels for
// every dtype (bf16, fp16, fp32; format 1.1's e4m3 and e5m2).
//
// This file is the device side. It mirrors src/kernels/ function by function (same names,
// snake_case): split / merge, unpack_range / pack_halving, groups_forward / groups_inverse /
// groups_width / group_flagged, ranking_new / choose_ranked, frame_stats (FrameStats::gather),
// h32; and src/format/'s frame layout (plane_at, frame_layout) and header checks
// (parse_frame_header). frame.rs's sequencing is KernelDecode::DecodeFrame and
// KernelEncode::EncodeFrame. ffi/README.md has the table.
//
// Layout of the work:
//   * one frame per core step; core b takes frames b, b + blockNum, ... (GetBlockIdx/GetBlockNum);
//     the host computes every frame's offset by walking the 32-byte frame headers (FORMAT.md 1)
//     and passes them in GM, so no core depends on another;
//   * a frame is processed in tiles of TILE elements, so any frame length (up to 65,536 fp32
//     elements = 256 KiB) fits the 192 KB Unified Buffer;
//   * the decoder copies a coded frame of up to 64 KiB past its header into UB whole (one DMA;
//     each byte comes in once) and gathers each tile's plane words from there; of a larger
//     frame it caches the narrowest sub-planes that fit and brings the other runs in per tile
//     through a VECIN TQue of depth 2 (double buffering); decoded elements leave through a
//     VECOUT TQue of depth 2;
//   * bit-plane unpacking and packing, the groups transform, field split and merge are vector
//     ops on uint16 (And/Or only on 16-bit integers, as A2 requires; 32-bit lanes only for
//     shifts, which A2 supports on uint32). FP8 elements take one uint16 lane each (no byte
//     lanes): widened from bytes by shifts and an interleaving Gather (widen_bytes), narrowed
//     back by Gathers of the even and odd lanes. Table lookups and fp32 lane (de)interleaving
//     are Gather. Compare (half) builds the escape masks.
//   * scalar code is used where A2 has no vector form, and says so where it is: header parsing
//     and parameter choice (a few hundred operations per frame), and the checksum's last partial
//     block and avalanche. The checksum's full blocks are H32Vector in both kernels (no
//     documented wrapping 32-bit vector multiply: it splits the products so that none
//     overflows). The encoder's histograms, group ranges and compaction are Compare
//     + GatherMask (and its kept count); the decoder expands escapes with vector prefix sums and
//     Gather;
//   * pipes are ordered by queue events and targeted SetFlag/WaitFlag pairs (sync_pipes), and
//     per-frame words reach GM through UB and DataCopyPad (store_word): the CPU model checks
//     both (ffi/ascendc/sim/sim_engine.h, rules R1-R7).
//
// Everything here compiles unmodified against CANN's kernel_operator.h and against the CPU
// model in ffi/ascendc/sim/kernel_operator.h.

#include "enec_common.h"
#include "enec_decode.h"
#include "enec_encode.h"
#include "enec_concat.h"

extern "C" __global__ __aicore__ void enec_decode(GM_ADDR stream, GM_ADDR frameOffsets, GM_ADDR out,
                                                  GM_ADDR status, EnecDecodeTiling tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    enec::KernelDecode op;
    op.Init(stream, frameOffsets, out, status, tiling);
    op.Process();
}

extern "C" __global__ __aicore__ void enec_encode(GM_ADDR input, GM_ADDR slots, GM_ADDR sizes,
                                                  GM_ADDR streamHeader, GM_ADDR workspace,
                                                  EnecEncodeTiling tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    enec::KernelEncode op;
    op.Init(input, slots, sizes, streamHeader, workspace, tiling);
    op.Process();
}

extern "C" __global__ __aicore__ void enec_concat(GM_ADDR slots, GM_ADDR sizes, GM_ADDR offsets, GM_ADDR out,
                                                  EnecConcatTiling tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    enec::KernelConcat op;
    op.Init(slots, sizes, offsets, out, tiling);
    op.Process();
}

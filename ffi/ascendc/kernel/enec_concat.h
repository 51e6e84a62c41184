// The enec concatenation kernel: packs the encoded frames behind the stream header. See
// enec_kernel.cpp.
#pragma once

#include "enec_common.h"

namespace enec {

// Moves each encoded frame from its slot to its place in the stream (offsets from the host's
// prefix sum of the sizes), CHUNK bytes at a time through the Unified Buffer. GM -> UB -> GM is a
// VECIN -> VECOUT queue: EnQue/DeQue orders MTE2 before MTE3, FreeTensor/AllocTensor MTE3 before
// the buffer's next MTE2 fill; with two buffers, chunk i + 1 comes in while chunk i goes out.
class KernelConcat {
public:
    __aicore__ inline KernelConcat() {}
    __aicore__ inline void Init(GM_ADDR slots, GM_ADDR sizes, GM_ADDR offsets, GM_ADDR out,
                                const EnecConcatTiling& t) {
        tiling = t;
        slotsGm.SetGlobalBuffer((__gm__ uint8_t*)slots, uint64_t(t.frameCount) * t.slotBytes);
        sizesGm.SetGlobalBuffer((__gm__ uint32_t*)sizes, t.frameCount);
        offsetsGm.SetGlobalBuffer((__gm__ uint64_t*)offsets, t.frameCount);
        outGm.SetGlobalBuffer((__gm__ uint8_t*)out);
        pipe.InitBuffer(que, BUFFER_NUM, CHUNK);
    }
    __aicore__ inline void Process() {
        for (uint32_t f = uint32_t(AscendC::GetBlockIdx()); f < tiling.frameCount;
             f += uint32_t(AscendC::GetBlockNum())) {
            uint32_t size = sizesGm.GetValue(f);
            uint64_t src = uint64_t(f) * tiling.slotBytes, dst = offsetsGm.GetValue(f);
            for (uint32_t at = 0; at < size; at += CHUNK) {
                uint32_t n = min_u32(CHUNK, size - at);  // frame sizes are multiples of 32
                LocalTensor<uint8_t> buf = que.AllocTensor<uint8_t>();
                AscendC::DataCopy(buf, slotsGm[src + at], n);
                que.EnQue(buf);
                buf = que.DeQue<uint8_t>();
                AscendC::DataCopy(outGm[dst + at], buf, n);
                que.FreeTensor(buf);
            }
        }
    }

private:
    static constexpr uint32_t CHUNK = 8192;
    AscendC::TPipe pipe;
    AscendC::TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> que;
    GlobalTensor<uint8_t> slotsGm, outGm;
    GlobalTensor<uint32_t> sizesGm;
    GlobalTensor<uint64_t> offsetsGm;
    EnecConcatTiling tiling;
};

}  // namespace enec

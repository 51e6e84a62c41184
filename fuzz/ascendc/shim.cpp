// In-process bridge from the `ascendc_diff` fuzz target to the AscendC kernels of
// ffi/ascendc/kernel/, run UNMODIFIED on the CPU model of ffi/ascendc/sim/ (the same build as
// ffi/ascendc/sim/sim_driver.cpp, which tests/ascendc.rs uses, but on memory instead of files).
// Compiled by fuzz/build.rs when ffi/ascendc exists.
//
// A kernel that breaks an AscendC API rule, or races between pipes, queue positions or cores (a
// hazard, rules R1-R3 of ffi/ascendc/sim/sim_engine.h), makes the model abort(): the fuzzer
// reports it as a crash, which is what we want.
#include "kernel_operator.h"  // the model (ffi/ascendc/sim first on the include path)

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../../ffi/ascendc/host/enec_host.h"
#include "../../ffi/ascendc/kernel/enec_kernel.cpp"

namespace {

// Hazards are fatal here (the driver only counts them).
const bool hazards_fatal = (ascendc_sim::hazard_abort() = true);

struct GmBuffer {
    uint8_t* p = nullptr;
    size_t n = 0;
    explicit GmBuffer(size_t bytes) : n(bytes) {
        size_t alloc = (bytes + 63) / 64 * 64;
        if (alloc == 0) alloc = 64;
        p = static_cast<uint8_t*>(std::aligned_alloc(64, alloc));
        std::memset(p, 0xCD, alloc);  // device memory is not zeroed
        ascendc_sim::gm_register(p, bytes);
    }
    ~GmBuffer() { std::free(p); }
    GmBuffer(const GmBuffer&) = delete;
    GmBuffer& operator=(const GmBuffer&) = delete;
};

}  // namespace

extern "C" {

// Result codes.
enum : int32_t { SHIM_OK = 0, SHIM_HEADER = 1, SHIM_FRAME = 2, SHIM_TOO_LARGE = 3, SHIM_BAD_INPUT = 4 };

// Decodes `stream` with the host helpers and the enec_decode kernel on `blocks` model cores.
// SHIM_OK: `out_len` bytes written to `out`. SHIM_HEADER: the host-side checks (stream header,
// frame walk) refused it. SHIM_FRAME: a frame's status is not OK (`*bad_frame` = the first one,
// `*status` its code). SHIM_TOO_LARGE: the output would exceed `out_cap`.
int32_t enec_fuzz_ascendc_decode(const uint8_t* stream, size_t len, uint8_t* out, size_t out_cap,
                                 size_t* out_len, uint32_t blocks, uint32_t* bad_frame, uint32_t* status) {
    ascendc_sim::gm_clear();
    *out_len = 0;
    enec_host::StreamInfo info;
    std::vector<uint64_t> offsets;
    std::string err;
    if (!enec_host::read_header(stream, len, info, err) || !enec_host::frame_offsets(stream, len, info, offsets, err))
        return SHIM_HEADER;
    if (info.elementCount > out_cap / info.elementBytes()) return SHIM_TOO_LARGE;
    size_t out_bytes = size_t(info.elementCount) * info.elementBytes();
    if (info.frameCount == 0) return SHIM_OK;
    int32_t rc = SHIM_OK;
    {
        GmBuffer streamGm(len), offsetsGm(offsets.size() * 8), outGm(out_bytes), statusGm(size_t(info.frameCount) * 4);
        std::memcpy(streamGm.p, stream, len);
        std::memcpy(offsetsGm.p, offsets.data(), offsets.size() * 8);
        EnecDecodeTiling tiling{info.dtype, info.frameLog2, info.checksums, info.frameCount, info.elementCount, len};
        ascendc_sim::launch(blocks, [&] { enec_decode(streamGm.p, offsetsGm.p, outGm.p, statusGm.p, tiling); });
        for (uint32_t f = 0; f < info.frameCount; f++) {
            uint32_t st = enec_host::rd32(statusGm.p + 4 * size_t(f));
            if (st != ENEC_FRAME_OK) {
                *bad_frame = f;
                *status = st;
                rc = SHIM_FRAME;
                break;
            }
        }
        if (rc == SHIM_OK) {
            std::memcpy(out, outGm.p, out_bytes);
            *out_len = out_bytes;
        }
    }
    ascendc_sim::gm_clear();
    return rc;
}

// Encodes `input` with the enec_encode and enec_concat kernels (as sim_driver does).
// SHIM_OK: `*out_len` stream bytes in `out`. SHIM_TOO_LARGE: `out_cap` too small.
// SHIM_BAD_INPUT: partial element or a frame size the kernels should never produce
// (`*bad_frame`, `*status` = the size).
int32_t enec_fuzz_ascendc_encode(uint32_t dtype, uint32_t frameLog2, uint32_t coding, uint32_t checksums,
                                 const uint8_t* input, size_t len, uint8_t* out, size_t out_cap, size_t* out_len,
                                 uint32_t blocks, uint32_t* bad_frame, uint32_t* status) {
    ascendc_sim::gm_clear();
    *out_len = 0;
    if (dtype < 1 || dtype > 5) return SHIM_BAD_INPUT;
    uint32_t eb = enec_host::element_bytes(dtype);
    if (len % eb != 0) return SHIM_BAD_INPUT;
    uint64_t elements = len / eb;
    uint32_t frames = uint32_t((elements + (uint64_t(1) << frameLog2) - 1) >> frameLog2);
    uint32_t slot = enec_host::slot_bytes(dtype, frameLog2);
    uint64_t wsPerCore = enec_encode_workspace_bytes(frameLog2);
    int32_t rc = SHIM_OK;
    {
        GmBuffer inGm(len), headerGm(32), sizesGm(size_t(frames) * 4 + 4), slotsGm(size_t(frames) * slot + 32),
            wsGm(size_t(blocks) * wsPerCore);
        std::memcpy(inGm.p, input, len);
        EnecEncodeTiling tiling{dtype, frameLog2, coding, checksums, frames, slot, elements, wsPerCore};
        ascendc_sim::launch(blocks, [&] { enec_encode(inGm.p, slotsGm.p, sizesGm.p, headerGm.p, wsGm.p, tiling); });
        std::vector<uint64_t> offsets(frames);
        uint64_t total = 32;
        for (uint32_t f = 0; f < frames; f++) {
            uint32_t size = enec_host::rd32(sizesGm.p + 4 * size_t(f));
            if (size == 0 || size % 32 != 0 || size > slot) {
                *bad_frame = f;
                *status = size;
                rc = SHIM_BAD_INPUT;
                break;
            }
            offsets[f] = total;
            total += size;
        }
        if (rc == SHIM_OK && total > out_cap) rc = SHIM_TOO_LARGE;
        if (rc == SHIM_OK) {
            GmBuffer streamGm(total), offsetsGm(size_t(frames) * 8 + 8);
            std::memcpy(streamGm.p, headerGm.p, 32);
            if (frames > 0) {
                std::memcpy(offsetsGm.p, offsets.data(), size_t(frames) * 8);
                EnecConcatTiling ct{frames, slot};
                ascendc_sim::launch(blocks, [&] { enec_concat(slotsGm.p, sizesGm.p, offsetsGm.p, streamGm.p, ct); });
            }
            std::memcpy(out, streamGm.p, total);
            *out_len = total;
        }
    }
    ascendc_sim::gm_clear();
    return rc;
}

}  // extern "C"

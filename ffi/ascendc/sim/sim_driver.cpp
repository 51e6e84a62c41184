// Host driver for the CPU model: runs the UNMODIFIED kernels of ffi/ascendc/kernel/ on the CPU.
// It plays the role of ffi/ascendc/host/enec_launch.asc: the aclrtMalloc'd buffers are
// 64-byte-aligned host buffers registered as GM, and `kernel<<<blockDim, ...>>>(args)` is
// ascendc_sim::launch(blockDim, ...), which runs the blocks one after another.
//
//   sim_driver decode STREAM OUT [BLOCKS]
//   sim_driver encode DTYPE(1 bf16|2 fp16|3 fp32|4 e4m3|5 e5m2) FRAME_LOG2 CODING(0 auto|1 groups|2 ranked) CHECKSUMS(0|1) IN OUT [BLOCKS]
//
// Exit status 0 on success; 1 with a message on a decode error (per-frame status) or bad input;
// 3 if the model saw hazards (rules R1-R3 of sim_engine.h; ENEC_SIM_HAZARDS=report makes them
// non-fatal, =abort stops at the first); the model itself aborts (SIGABRT) with
// "ascendc-sim: misuse: ..." if a kernel breaks an API rule.
//
// On stderr, after the run, one line of counters (R7) that ffi/ascendc/check.sh turns into costs:
//   ascendc-sim: stats <decode|encode> elements N stream_bytes S tiles T hazards H r1 .. r2 .. r3 .. vector_instr .. vector_repeats ..
//   dma_ops .. dma_bytes .. dma_in_bytes .. scalar_ub .. scalar_gm .. scalar_ops .. pipe_all .. flag_pairs .. vector_with_copy_in ..
//   vector_with_copy_out .. ub_peak ..
// With ENEC_SIM_BREAKDOWN=FILE it also appends to FILE the vector instructions, repeats and
// cycles (10 per instruction + 1 per repeat, check.sh's constants) per element of each
// instruction kind: where the vector cycles go.
//
// Build (what tests/ascendc.rs does):
//   c++ -std=c++17 -O2 -I ffi/ascendc/sim -I ffi/ascendc/kernel ffi/ascendc/sim/sim_driver.cpp -o sim_driver
#include "kernel_operator.h"  // the model (ffi/ascendc/sim first on the include path)

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../host/enec_host.h"
#include "../kernel/enec_kernel.cpp"

namespace {

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

// Tiles of TILE elements over every frame (the unit of "per tile" counts).
uint64_t tiles_of(uint64_t elements, uint32_t frameLog2) {
    uint64_t frame = uint64_t(1) << frameLog2, full = elements / frame, rest = elements % frame;
    return full * ((frame + enec::TILE - 1) / enec::TILE) + (rest + enec::TILE - 1) / enec::TILE;
}

// Prints the counters; turns hazards into exit status 3 unless ENEC_SIM_HAZARDS=report.
int report(const char* what, uint64_t elements, uint32_t frameLog2, uint64_t streamBytes, int rc) {
    const ascendc_sim::Stats& s = ascendc_sim::stats();
    std::fprintf(stderr,
                 "ascendc-sim: stats %s elements %llu stream_bytes %llu tiles %llu hazards %llu r1 %llu r2 %llu r3 %llu vector_instr %llu vector_repeats %llu "
                 "dma_ops %llu dma_bytes %llu dma_in_bytes %llu scalar_ub %llu scalar_gm %llu scalar_ops %llu pipe_all %llu flag_pairs %llu "
                 "vector_with_copy_in %llu vector_with_copy_out %llu ub_peak %u\n",
                 what, (unsigned long long)elements, (unsigned long long)streamBytes,
                 (unsigned long long)tiles_of(elements, frameLog2),
                 (unsigned long long)s.hazards, (unsigned long long)s.by_rule[1], (unsigned long long)s.by_rule[2],
                 (unsigned long long)s.by_rule[3], (unsigned long long)s.vector_instr,
                 (unsigned long long)s.vector_repeats, (unsigned long long)s.dma_ops, (unsigned long long)s.dma_bytes,
                 (unsigned long long)s.dma_in_bytes,
                 (unsigned long long)s.scalar_ub, (unsigned long long)s.scalar_gm, (unsigned long long)s.scalar_ops, (unsigned long long)s.pipe_all,
                 (unsigned long long)s.flag_pairs, (unsigned long long)s.vector_with_copy_in,
                 (unsigned long long)s.vector_with_copy_out, ascendc_sim::world().ub_peak);
    if (const char* path = std::getenv("ENEC_SIM_BREAKDOWN")) {  // vector instructions per kind
        if (FILE* f = std::fopen(path, "a")) {
            std::fprintf(f, "%s elements %llu\n", what, (unsigned long long)elements);
            for (const auto& [name, k] : s.by_kind)
                std::fprintf(f, "  %-28s instr/elem %.4f repeats/elem %.4f cycles/elem %.3f\n", name.c_str(),
                             double(k.first) / elements, double(k.second) / elements,
                             (10.0 * k.first + k.second) / elements);
            std::fclose(f);
        }
    }
    const char* policy = std::getenv("ENEC_SIM_HAZARDS");
    if (s.hazards > 0 && !(policy && std::string(policy) == "report")) {
        std::fprintf(stderr, "ascendc-sim: %s: %llu hazards (rules R1-R3): failing\n", what,
                     (unsigned long long)s.hazards);
        return rc != 0 ? rc : 3;
    }
    return rc;
}

std::vector<uint8_t> read_file(const char* path) {
    FILE* f = std::fopen(path, "rb");
    if (!f) { std::fprintf(stderr, "cannot open %s\n", path); std::exit(1); }
    std::vector<uint8_t> v;
    uint8_t buf[1 << 16];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) v.insert(v.end(), buf, buf + n);
    std::fclose(f);
    return v;
}

void write_file(const char* path, const uint8_t* p, size_t n) {
    FILE* f = std::fopen(path, "wb");
    if (!f || std::fwrite(p, 1, n, f) != n) { std::fprintf(stderr, "cannot write %s\n", path); std::exit(1); }
    std::fclose(f);
}

int decode(const char* in, const char* out, uint32_t blocks) {
    std::vector<uint8_t> stream = read_file(in);
    enec_host::StreamInfo info;
    std::vector<uint64_t> offsets;
    std::string err;
    if (!enec_host::read_header(stream.data(), stream.size(), info, err) ||
        !enec_host::frame_offsets(stream.data(), stream.size(), info, offsets, err)) {
        std::fprintf(stderr, "decode: %s\n", err.c_str());
        return 1;
    }
    size_t outBytes = info.elementCount * info.elementBytes();
    if (info.frameCount == 0) { write_file(out, nullptr, 0); return report("decode", 0, info.frameLog2, stream.size(), 0); }
    GmBuffer streamGm(stream.size()), offsetsGm(offsets.size() * 8), outGm(outBytes), statusGm(info.frameCount * 4);
    std::memcpy(streamGm.p, stream.data(), stream.size());  // aclrtMemcpy host -> device
    std::memcpy(offsetsGm.p, offsets.data(), offsets.size() * 8);
    EnecDecodeTiling tiling{info.dtype, info.frameLog2, info.checksums, info.frameCount, info.elementCount,
                            stream.size()};
    ascendc_sim::launch(blocks, [&] { enec_decode(streamGm.p, offsetsGm.p, outGm.p, statusGm.p, tiling); });
    int rc = 0;
    for (uint32_t f = 0; f < info.frameCount; f++) {
        uint32_t st = enec_host::rd32(statusGm.p + 4 * f);
        if (st != ENEC_FRAME_OK) {
            std::fprintf(stderr, "decode: frame %u: %s\n", f, enec_host::status_name(st));
            rc = 1;
        }
    }
    if (rc == 0) write_file(out, outGm.p, outBytes);
    return report("decode", info.elementCount, info.frameLog2, stream.size(), rc);
}

int encode(uint32_t dtype, uint32_t frameLog2, uint32_t coding, uint32_t checksums, const char* in, const char* out,
           uint32_t blocks) {
    std::vector<uint8_t> input = read_file(in);
    if (dtype < 1 || dtype > 5) { std::fprintf(stderr, "encode: unknown dtype %u\n", dtype); return 1; }
    uint32_t eb = enec_host::element_bytes(dtype);
    if (input.size() % eb != 0) { std::fprintf(stderr, "encode: partial element\n"); return 1; }
    uint64_t elements = input.size() / eb;
    uint32_t frames = uint32_t((elements + (uint64_t(1) << frameLog2) - 1) >> frameLog2);
    uint32_t slot = enec_host::slot_bytes(dtype, frameLog2);
    uint64_t wsPerCore = enec_encode_workspace_bytes(frameLog2);
    GmBuffer inGm(input.size()), headerGm(32), sizesGm(size_t(frames) * 4 + 4),
        slotsGm(size_t(frames) * slot + 32), wsGm(size_t(blocks) * wsPerCore);
    std::memcpy(inGm.p, input.data(), input.size());
    EnecEncodeTiling tiling{dtype, frameLog2, coding, checksums, frames, slot, elements, wsPerCore};
    ascendc_sim::launch(blocks, [&] { enec_encode(inGm.p, slotsGm.p, sizesGm.p, headerGm.p, wsGm.p, tiling); });
    // Host: prefix sum of the sizes (32-byte multiples) gives every frame's place.
    std::vector<uint64_t> offsets(frames);
    uint64_t total = 32;
    for (uint32_t f = 0; f < frames; f++) {
        uint32_t size = enec_host::rd32(sizesGm.p + 4 * f);
        if (size == 0 || size % 32 != 0 || size > slot) {
            std::fprintf(stderr, "encode: frame %u: bad size %u\n", f, size);
            return 1;
        }
        offsets[f] = total;
        total += size;
    }
    GmBuffer streamGm(total), offsetsGm(size_t(frames) * 8 + 8);
    std::memcpy(streamGm.p, headerGm.p, 32);  // aclrtMemcpy device -> device
    if (frames > 0) {
        std::memcpy(offsetsGm.p, offsets.data(), size_t(frames) * 8);
        EnecConcatTiling ct{frames, slot};
        ascendc_sim::launch(blocks, [&] { enec_concat(slotsGm.p, sizesGm.p, offsetsGm.p, streamGm.p, ct); });
    }
    write_file(out, streamGm.p, total);
    return report("encode", elements, frameLog2, total, 0);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc >= 4 && std::string(argv[1]) == "decode") {
        uint32_t blocks = argc > 4 ? uint32_t(std::atoi(argv[4])) : 8;
        return decode(argv[2], argv[3], blocks);
    }
    if (argc >= 8 && std::string(argv[1]) == "encode") {
        uint32_t blocks = argc > 8 ? uint32_t(std::atoi(argv[8])) : 8;
        return encode(uint32_t(std::atoi(argv[2])), uint32_t(std::atoi(argv[3])), uint32_t(std::atoi(argv[4])),
                      uint32_t(std::atoi(argv[5])), argv[6], argv[7], blocks);
    }
    std::fprintf(stderr,
                 "usage: sim_driver decode STREAM OUT [BLOCKS]\n"
                 "       sim_driver encode DTYPE FRAME_LOG2 CODING CHECKSUMS IN OUT [BLOCKS]\n");
    return 2;
}

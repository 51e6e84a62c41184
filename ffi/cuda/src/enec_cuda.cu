// The extern "C" host API of the enec CUDA kernels (include/enec_cuda.h). Nothing here
// allocates or synchronises: it walks headers on the host, enqueues one memset (encode scratch)
// and one kernel launch on the caller's stream.
#include "../include/enec_cuda.h"
#include "kernels.cuh"

using namespace enec;

namespace {

// Largest coded frame staged whole in shared memory; bigger frames are read from global memory.
constexpr uint32_t kMaxStageBytes = 96 * 1024;

uint64_t rd64(const uint8_t* b) { return (uint64_t)rd32(b) | ((uint64_t)rd32(b + 4) << 32); }

int parse_stream_header(const uint8_t* b, size_t len, enec_cuda_stream_info* info) {
  if (len < kStreamHeaderBytes) return ENEC_CUDA_ERR_TRUNCATED;
  if (b[0] != 'E' || b[1] != 'N' || b[2] != 'E' || b[3] != 'C') return ENEC_CUDA_ERR_MAGIC;
  if (b[4] != 1) return ENEC_CUDA_ERR_VERSION;
  if (rd32(b + 28) != h32_host(b, 28)) return ENEC_CUDA_ERR_HEADER;
  DtypeInfo d = {8, 7, 2};
  if (!dtype_info(b[6], &d) || b[5] < dtype_minor(b[6])) return ENEC_CUDA_ERR_HEADER;
  const uint32_t log2 = b[7];
  if (log2 < kMinFrameLog2 || log2 > kMaxFrameLog2) return ENEC_CUDA_ERR_HEADER;
  if (b[8] & ~1u) return ENEC_CUDA_ERR_HEADER;
  if (b[9] | b[10] | b[11] | b[24] | b[25] | b[26] | b[27]) return ENEC_CUDA_ERR_HEADER;
  const uint64_t count = rd64(b + 16);
  const uint64_t frames = (count + (1ull << log2) - 1) >> log2;
  if (frames > 0xffffffffull || rd32(b + 12) != frames) return ENEC_CUDA_ERR_HEADER;
  info->element_count = count;
  info->decoded_bytes = count * d.eb;
  info->frame_count = (uint32_t)frames;
  info->frame_len = 1u << log2;
  info->dtype = b[6];
  info->checksums = b[8] & 1;
  info->version_major = b[4];
  info->version_minor = b[5];
  return ENEC_CUDA_OK;
}

// The general decode kernel over every frame of a batch (it takes the frames that are its own).
template <bool VERIFY, bool FP8>
void launch_general(const enec_cuda_batch* batch, const enec_cuda_frame* d_frames,
                    const dev::DecSmem& L, uint32_t smem, cudaStream_t s, uint32_t* d_status) {
  const auto kernel = dev::decode_kernel<VERIFY, FP8>;
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, 100);
  const uint32_t threads = VERIFY ? dev::kAllThreads : dev::kDecThreads;
  ENEC_LAUNCH(kernel, batch->frames, threads, smem, s, d_frames, batch->frames, L, d_status);
}

}  // namespace

extern "C" int enec_cuda_stream_info_read(const void* host_stream, size_t host_len,
                                          enec_cuda_stream_info* info) {
  if (!host_stream || !info) return ENEC_CUDA_ERR_ARGUMENT;
  return parse_stream_header((const uint8_t*)host_stream, host_len, info);
}

extern "C" int enec_cuda_index_frames(const enec_cuda_stream_info* info, uint32_t first_frame,
                                      const void* host, size_t host_len, const void* dev,
                                      void* dev_out, enec_cuda_frame* frames,
                                      size_t frames_capacity, enec_cuda_batch* batch,
                                      uint32_t* frames_done, size_t* bytes_done) {
  if (frames_done) *frames_done = 0;
  if (bytes_done) *bytes_done = 0;
  if (!info || !host || !dev || !frames || !batch) return ENEC_CUDA_ERR_ARGUMENT;
  if (((uintptr_t)dev) & 15) return ENEC_CUDA_ERR_ARGUMENT;
  if (info->decoded_bytes && !dev_out) return ENEC_CUDA_ERR_ARGUMENT;
  DtypeInfo d = {8, 7, 2};
  if (!dtype_info(info->dtype, &d) || info->frame_len == 0) return ENEC_CUDA_ERR_ARGUMENT;
  const uint8_t* s = (const uint8_t*)host;
  uint64_t at = 0;
  uint32_t n = 0, i = first_frame;
  uint32_t max_el = batch->max_elements, max_coded = batch->max_coded_bytes;
  uint32_t max_entries = batch->max_entries;
  uint32_t general = batch->general_frames;
  uint64_t decoded = 0;
  int rc = ENEC_CUDA_OK;
  for (; i < info->frame_count && batch->frames + (uint64_t)n < frames_capacity; i++) {
    if (host_len - at < kFrameHeaderBytes) break;
    FrameHeader h;
    const uint64_t start = (uint64_t)i * info->frame_len;
    const uint32_t elements = (uint32_t)(info->element_count - start < info->frame_len
                                             ? info->element_count - start
                                             : info->frame_len);
    if (parse_frame_header(s + at, d, &h) != kOk || h.elements != elements) {
      rc = ENEC_CUDA_ERR_FRAME;
      break;
    }
    Layout lay;
    layout_new(d, elements, h, &lay);
    if (lay.bytes != h.frame_bytes || (!info->checksums && h.checksum != 0)) {
      rc = ENEC_CUDA_ERR_FRAME;
      break;
    }
    if (host_len - at < h.frame_bytes) break;
    enec_cuda_frame& f = frames[batch->frames + n];
    f.src = (const uint8_t*)dev + at;
    f.dst = (uint8_t*)dev_out + start * d.eb;
    f.frame_bytes = h.frame_bytes;
    f.elements = elements;
    f.index = i;
    f.dtype = info->dtype;
    f.checksums = info->checksums;
    f.coding = (uint8_t)h.coding;
    f.reserved = 0;
    if (elements > max_el) max_el = elements;
    if (h.coding != kStored && h.frame_bytes > max_coded) max_coded = h.frame_bytes;
    if (h.coding == kRanked) {
      const uint32_t entries = h.counts[0] + h.counts[1] + h.counts[2];
      if (entries > max_entries) max_entries = entries;
    }
    if (!dev::column_frame(info->dtype, elements, h.coding)) general++;
    decoded += (uint64_t)elements * d.eb;
    at += h.frame_bytes;
    n++;
  }
  // The frames before a fault are indexed: the caller learns where the fault is.
  if (n) {
    batch->frames += n;
    batch->max_elements = max_el;
    batch->max_coded_bytes = max_coded;
    batch->max_entries = max_entries;
    batch->general_frames = general;
    batch->dtype_mask |= 1u << info->dtype;
    batch->decoded_bytes += decoded;
  }
  if (frames_done) *frames_done = n;
  if (bytes_done) *bytes_done = at;
  return rc;
}

extern "C" int enec_cuda_index_stream(const void* host_stream, size_t host_len,
                                      const void* dev_stream, void* dev_out, size_t out_capacity,
                                      enec_cuda_frame* frames, size_t frames_capacity,
                                      enec_cuda_batch* batch, uint32_t* bad_frame) {
  if (!host_stream || !dev_stream || !frames || !batch) return ENEC_CUDA_ERR_ARGUMENT;
  if (((uintptr_t)dev_stream) & 15) return ENEC_CUDA_ERR_ARGUMENT;
  if (bad_frame) *bad_frame = 0;
  const uint8_t* s = (const uint8_t*)host_stream;
  enec_cuda_stream_info info;
  int rc = parse_stream_header(s, host_len, &info);
  if (rc) return rc;
  if (info.decoded_bytes > out_capacity) return ENEC_CUDA_ERR_CAPACITY;
  if (info.decoded_bytes && !dev_out) return ENEC_CUDA_ERR_ARGUMENT;
  if (batch->frames + (uint64_t)info.frame_count > frames_capacity) return ENEC_CUDA_ERR_CAPACITY;
  // Indexed into a copy of the totals, so that a failed stream leaves the batch as it was.
  enec_cuda_batch b = *batch;
  uint32_t done = 0;
  size_t used = 0;
  rc = enec_cuda_index_frames(&info, 0, s + kStreamHeaderBytes, host_len - kStreamHeaderBytes,
                              (const uint8_t*)dev_stream + kStreamHeaderBytes, dev_out, frames,
                              frames_capacity, &b, &done, &used);
  if (bad_frame) *bad_frame = done;
  if (rc) return rc;
  if (done < info.frame_count) return ENEC_CUDA_ERR_TRUNCATED;
  if (bad_frame) *bad_frame = 0;
  if (kStreamHeaderBytes + used != host_len) return ENEC_CUDA_ERR_TRAILING;
  b.dtype_mask |= 1u << info.dtype;
  *batch = b;
  return ENEC_CUDA_OK;
}

extern "C" int enec_cuda_decode(const enec_cuda_frame* d_frames, const enec_cuda_batch* batch,
                                int verify_checksums, uint32_t* d_status, void* stream) {
  if (!batch || (batch->frames && (!d_frames || !d_status))) return ENEC_CUDA_ERR_ARGUMENT;
  if (batch->frames == 0) return ENEC_CUDA_OK;
  auto a16 = [](uint32_t x) { return (x + 15u) & ~15u; };
  const bool verify = verify_checksums != 0;
  const uint32_t eb = (batch->dtype_mask & (1u << ENEC_CUDA_FP32)) ? 4 : 2;
  cudaStream_t s = (cudaStream_t)stream;
  // Escape arrays of a column frame: at most three levels, each padded by up to 31 bytes.
  const uint32_t esc_cap = a16(batch->max_entries + 32 * dev::kColMaxEscapeLevels);
  if (batch->general_frames < batch->frames && esc_cap <= dev::kWarpEscapeCap) {
    // The warp kernel: per warp, a step's staging area, then the escape arrays.
    dev::WarpSmem W;
    W.esc = dev::kWarpStage * eb;
    W.esc_cap = esc_cap;
    W.stride = W.esc + W.esc_cap;
    const uint32_t smem = dev::kWarpFrames * W.stride;
    const uint32_t blocks = (batch->frames + dev::kWarpFrames - 1) / dev::kWarpFrames;
    if (verify) {
      cudaFuncSetAttribute(dev::decode_warp_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
      cudaFuncSetAttribute(dev::decode_warp_kernel<true>, cudaFuncAttributePreferredSharedMemoryCarveout, 100);
      ENEC_LAUNCH(dev::decode_warp_kernel<true>, blocks, dev::kWarpThreads, smem, s, d_frames,
                  batch->frames, W, d_status);
    } else {
      cudaFuncSetAttribute(dev::decode_warp_kernel<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
      cudaFuncSetAttribute(dev::decode_warp_kernel<false>, cudaFuncAttributePreferredSharedMemoryCarveout, 100);
      ENEC_LAUNCH(dev::decode_warp_kernel<false>, blocks, dev::kWarpThreads, smem, s, d_frames,
                  batch->frames, W, d_status);
    }
  } else if (batch->general_frames < batch->frames) {
    // The column kernel: ring, per-(row, thread) escape starts, the escape levels' arrays (at
    // most three of up to kColMaxElements entries, each padded by up to 31 bytes).
    dev::ColSmem C;
    C.ring = 0;
    C.rows = dev::kSlots * dev::kColUnit * eb;
    C.esc = C.rows + dev::kColRows * dev::kColThreads * 4;
    const uint32_t cap = dev::kColMaxEscapeLevels * dev::kColMaxElements;
    C.esc_cap = a16((batch->max_entries < cap ? batch->max_entries : cap) + 32 * dev::kColMaxEscapeLevels);
    const uint32_t smem = C.esc + C.esc_cap;
    if (verify) {
      cudaFuncSetAttribute(dev::decode_columns_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
      ENEC_LAUNCH(dev::decode_columns_kernel<true>, batch->frames, dev::kColAll, smem, s, d_frames,
                  batch->frames, C, d_status);
    } else {
      cudaFuncSetAttribute(dev::decode_columns_kernel<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
      ENEC_LAUNCH(dev::decode_columns_kernel<false>, batch->frames, dev::kColThreads, smem, s, d_frames,
                  batch->frames, C, d_status);
    }
  }
  if (batch->general_frames == 0) return cudaGetLastError() == cudaSuccess ? ENEC_CUDA_OK : ENEC_CUDA_ERR_LAUNCH;
  dev::DecSmem L;
  // Region: a staged groups frame, or the ranked level buffers.
  L.stage_cap = a16(batch->max_coded_bytes < kMaxStageBytes ? batch->max_coded_bytes : kMaxStageBytes);
  L.region = 0;
  L.sym = 0;
  L.vals = a16(batch->max_elements);
  L.list_a = L.vals + a16(batch->max_entries);
  L.list_b = L.list_a + a16(2 * batch->max_entries);
  const uint32_t ranked = L.list_b + a16(2 * batch->max_entries);
  const uint32_t region = ranked > L.stage_cap ? ranked : L.stage_cap;
  L.ring = region;
  L.pre = L.ring + (verify ? dev::kSlots * dev::kChunk * eb : 0);
  const uint32_t smem = L.pre + a16(2 * ((batch->max_elements + 15) / 16));
  // The FP8 frames' instance, and the other frames', each where the batch has such frames.
  const uint32_t fp8 = (1u << ENEC_CUDA_E4M3) | (1u << ENEC_CUDA_E5M2);
  if (batch->dtype_mask & fp8) {
    if (verify) launch_general<true, true>(batch, d_frames, L, smem, s, d_status);
    else launch_general<false, true>(batch, d_frames, L, smem, s, d_status);
  }
  if (batch->dtype_mask & ~fp8) {
    if (verify) launch_general<true, false>(batch, d_frames, L, smem, s, d_status);
    else launch_general<false, false>(batch, d_frames, L, smem, s, d_status);
  }
  return cudaGetLastError() == cudaSuccess ? ENEC_CUDA_OK : ENEC_CUDA_ERR_LAUNCH;
}

extern "C" uint64_t enec_cuda_max_encoded_bytes(int dtype, uint64_t element_count, int frame_log2) {
  DtypeInfo d = {8, 7, 2};
  if (!dtype_info((uint32_t)dtype, &d) || frame_log2 < (int)kMinFrameLog2 ||
      frame_log2 > (int)kMaxFrameLog2)
    return 0;
  const uint64_t len = 1ull << frame_log2;
  const uint64_t frames = (element_count + len - 1) / len;
  if (frames == 0) return kStreamHeaderBytes;
  const uint64_t last = element_count - (frames - 1) * len;
  auto body = [&](uint64_t n) { return ((n * d.eb + 31) & ~31ull) + kFrameHeaderBytes; };
  return kStreamHeaderBytes + (frames - 1) * body(len) + body(last);
}

extern "C" uint64_t enec_cuda_encode_scratch_bytes(uint64_t element_count, int frame_log2) {
  if (frame_log2 < (int)kMinFrameLog2 || frame_log2 > (int)kMaxFrameLog2) return 0;
  const uint64_t frames = (element_count + (1ull << frame_log2) - 1) >> frame_log2;
  return 8 * (frames + 1);
}

extern "C" int enec_cuda_encode(const void* d_in, uint64_t element_count, int dtype,
                                int frame_log2, int coding, int checksums, void* d_out,
                                uint64_t out_capacity, uint64_t* d_out_bytes, void* d_scratch,
                                uint64_t scratch_bytes, void* stream) {
  DtypeInfo d = {8, 7, 2};
  if (!dtype_info((uint32_t)dtype, &d) || frame_log2 < (int)kMinFrameLog2 ||
      frame_log2 > (int)kMaxFrameLog2 || coding < 0 || coding > 2)
    return ENEC_CUDA_ERR_ARGUMENT;
  if (!d_out || !d_out_bytes || !d_scratch || (element_count && !d_in))
    return ENEC_CUDA_ERR_ARGUMENT;
  if ((((uintptr_t)d_in) & 15) || (((uintptr_t)d_out) & 15) || (((uintptr_t)d_scratch) & 7))
    return ENEC_CUDA_ERR_ARGUMENT;
  const uint64_t frames64 = (element_count + (1ull << frame_log2) - 1) >> frame_log2;
  if (frames64 > 0x7fffffffull) return ENEC_CUDA_ERR_ARGUMENT;
  const uint32_t frames = (uint32_t)frames64;
  if (out_capacity < enec_cuda_max_encoded_bytes(dtype, element_count, frame_log2))
    return ENEC_CUDA_ERR_CAPACITY;
  if (scratch_bytes < enec_cuda_encode_scratch_bytes(element_count, frame_log2))
    return ENEC_CUDA_ERR_CAPACITY;
  // The stream header (FORMAT.md section 3), passed by value.
  uint8_t hb[32] = {'E', 'N', 'E', 'C', 1, (uint8_t)dtype_minor((uint32_t)dtype), (uint8_t)dtype,
                    (uint8_t)frame_log2, (uint8_t)(checksums ? 1 : 0)};
  for (int i = 0; i < 4; i++) hb[12 + i] = (uint8_t)(frames >> (8 * i));
  for (int i = 0; i < 8; i++) hb[16 + i] = (uint8_t)(element_count >> (8 * i));
  const uint32_t check = h32_host(hb, 28);
  for (int i = 0; i < 4; i++) hb[28 + i] = (uint8_t)(check >> (8 * i));
  dev::StreamHeaderWords sh;
  for (int i = 0; i < 8; i++) sh.w[i] = rd32(hb + 4 * i);

  cudaStream_t s = (cudaStream_t)stream;
  cudaMemsetAsync(d_scratch, 0, 8 * (frames64 + 1), s);
  const uint32_t frame_len = 1u << frame_log2;
  const uint32_t nmax = element_count < frame_len ? (uint32_t)element_count : frame_len;
  const uint32_t smem = dev::enc_smem_layout(nmax).total;
  const uint32_t threads = checksums ? dev::kAllThreads : dev::kDecThreads;
  const uint32_t grid = frames ? frames : 1;
  const uint8_t* in = (const uint8_t*)d_in;
  uint8_t* out = (uint8_t*)d_out;
  uint64_t* scr = (uint64_t*)d_scratch;
  const uint32_t cs = checksums ? 1 : 0;
  if (d.eb == 4) {
    cudaFuncSetAttribute(dev::encode_kernel<4>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    cudaFuncSetAttribute(dev::encode_kernel<4>, cudaFuncAttributePreferredSharedMemoryCarveout, 100);
    ENEC_LAUNCH(dev::encode_kernel<4>, grid, threads, smem, s, in, element_count, (uint32_t)dtype,
                (uint32_t)frame_log2, (uint32_t)coding, cs, out, d_out_bytes, scr, frames, sh);
  } else if (d.eb == 1) {
    cudaFuncSetAttribute(dev::encode_kernel<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    cudaFuncSetAttribute(dev::encode_kernel<1>, cudaFuncAttributePreferredSharedMemoryCarveout, 100);
    ENEC_LAUNCH(dev::encode_kernel<1>, grid, threads, smem, s, in, element_count, (uint32_t)dtype,
                (uint32_t)frame_log2, (uint32_t)coding, cs, out, d_out_bytes, scr, frames, sh);
  } else {
    cudaFuncSetAttribute(dev::encode_kernel<2>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    cudaFuncSetAttribute(dev::encode_kernel<2>, cudaFuncAttributePreferredSharedMemoryCarveout, 100);
    ENEC_LAUNCH(dev::encode_kernel<2>, grid, threads, smem, s, in, element_count, (uint32_t)dtype,
                (uint32_t)frame_log2, (uint32_t)coding, cs, out, d_out_bytes, scr, frames, sh);
  }
  return cudaGetLastError() == cudaSuccess ? ENEC_CUDA_OK : ENEC_CUDA_ERR_LAUNCH;
}

extern "C" int enec_cuda_check_device(int device, int* cuda_error) {
  cudaError_t e = cudaSetDevice(device);
  // A kernel's attributes exist only where this build has an image the device can run.
  cudaFuncAttributes a;
  if (e == cudaSuccess) e = cudaFuncGetAttributes(&a, dev::decode_columns_kernel<true>);
  if (e == cudaSuccess) e = cudaFuncGetAttributes(&a, dev::decode_kernel<true, false>);
  if (cuda_error) *cuda_error = (int)e;
  return e == cudaSuccess ? ENEC_CUDA_OK : ENEC_CUDA_ERR_CUDA;
}

extern "C" const char* enec_cuda_error_string(int cuda_error) {
  return cudaGetErrorString((cudaError_t)cuda_error);
}

// The H200 benchmark of issue 7: real MiniLM bf16 weights tiled to about 1 GiB, in one run:
// device-to-device copy, nvCOMP 6 ANS (data type FLOAT16, the C API's name for "<f2") and
// Bitcomp, enec encode and decode for both codings. Ratios, and GB/s of uncompressed bytes
// per second (CUDA events, warm-up runs excluded, mean of the timed runs).
//
// usage: bench MINILM_DIR [--tiles N] [--iters N] [--profile] [--md FILE]
// MINILM_DIR holds minilm.tsv and the Rust-encoded minilm_bf16.auto.f14.enec written by
// ffi/cuda/gen. The raw weights are recovered by decoding that stream on the GPU (checked against
// the generator's digest), then tiled. Every enec stream encoded here is checked against the
// Rust encoder's digest of the same tiled input, and every decode against the input.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "../include/enec_cuda.h"
#include "../src/compat.h"
#include "../src/format.h"

#ifdef ENEC_WITH_NVCOMP
#include <nvcomp/ans.h>
#include <nvcomp/bitcomp.h>
#endif

using Bytes = std::vector<uint8_t>;

#define CK(call)                                                                             \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                 \
      fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
      exit(2);                                                                               \
    }                                                                                        \
  } while (0)

static int g_fail = 0;
static void check(bool ok, const std::string& what) {
  printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
  fflush(stdout);
  if (!ok) g_fail++;
}

static bool read_file(const std::string& path, Bytes& out) {
  FILE* f = fopen(path.c_str(), "rb");
  if (!f) return false;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  out.resize((size_t)n);
  size_t got = n ? fread(out.data(), 1, (size_t)n, f) : 0;
  fclose(f);
  return got == (size_t)n;
}

__global__ void count_diff(const uint4* a, const uint4* b, size_t n16, unsigned long long* diff) {
  unsigned long long d = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n16; i += (size_t)gridDim.x * blockDim.x) {
    const uint4 x = a[i], y = b[i];
    d += (x.x != y.x) + (x.y != y.y) + (x.z != y.z) + (x.w != y.w);
  }
  if (d) atomicAdd(diff, d);
}

static unsigned long long* g_diff = nullptr;
static bool same_device_bytes(const void* a, const void* b, size_t n) {
  // n is a multiple of 16 here (tiled bf16 data padded by the caller).
  CK(cudaMemset(g_diff, 0, 8));
  ENEC_LAUNCH(count_diff, 1024, 256, 0, (cudaStream_t)0, (const uint4*)a, (const uint4*)b, n / 16, g_diff);
  unsigned long long d = 1;
  CK(cudaMemcpy(&d, g_diff, 8, cudaMemcpyDeviceToHost));
  return d == 0;
}

struct Timing {
  double mean_ms, min_ms;
};

template <class F>
static Timing time_it(cudaStream_t s, int warm, int iters, F f) {
  for (int i = 0; i < warm; i++) f();
  CK(cudaStreamSynchronize(s));
  std::vector<cudaEvent_t> ev(iters + 1);
  for (auto& e : ev) CK(cudaEventCreate(&e));
  CK(cudaEventRecord(ev[0], s));
  for (int i = 0; i < iters; i++) {
    f();
    CK(cudaEventRecord(ev[i + 1], s));
  }
  CK(cudaStreamSynchronize(s));
  Timing t{0, 1e30};
  float total = 0;
  CK(cudaEventElapsedTime(&total, ev[0], ev[iters]));
  for (int i = 0; i < iters; i++) {
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, ev[i], ev[i + 1]));
    t.min_ms = std::min(t.min_ms, (double)ms);
  }
  t.mean_ms = total / iters;
  for (auto& e : ev) CK(cudaEventDestroy(e));
  return t;
}

struct Row {
  std::string name;
  double ratio;
  Timing comp, decomp;
  std::string note;
};

static std::vector<Row> g_rows;
static double g_bytes = 0;

static std::string gbs(const Timing& t) {
  if (t.mean_ms <= 0) return "-";
  char b[64];
  snprintf(b, sizeof b, "%.0f (best %.0f)", g_bytes / (t.mean_ms * 1e6), g_bytes / (t.min_ms * 1e6));
  return b;
}

struct Digest {
  uint64_t bytes = 0;
  uint32_t h32 = 0;
  bool found = false;
};

// minilm.tsv: name dtype frame_log2 coding checksums raw raw_bytes raw_h32 stream stream_bytes stream_h32 frames
static Digest find_digest(const std::string& tsv, const std::string& name, const std::string& coding,
                          bool raw) {
  Digest d;
  size_t at = 0;
  while (at < tsv.size()) {
    size_t end = tsv.find('\n', at);
    if (end == std::string::npos) end = tsv.size();
    std::string line = tsv.substr(at, end - at);
    at = end + 1;
    std::vector<std::string> c;
    size_t a = 0;
    while (true) {
      size_t b = line.find('\t', a);
      c.push_back(line.substr(a, b == std::string::npos ? std::string::npos : b - a));
      if (b == std::string::npos) break;
      a = b + 1;
    }
    if (c.size() < 12 || c[0] != name || c[3] != coding) continue;
    d.found = true;
    d.bytes = strtoull(c[raw ? 6 : 9].c_str(), nullptr, 10);
    d.h32 = (uint32_t)strtoul(c[raw ? 7 : 10].c_str(), nullptr, 16);
  }
  return d;
}

// Decoding setup of one stream held in device memory (index built on the host once).
struct DecodeSetup {
  enec_cuda_batch batch;
  enec_cuda_frame* d_frames = nullptr;
  uint32_t* d_status = nullptr;
  double index_ms = 0;
};

static DecodeSetup index_stream(const Bytes& host, const void* d_stream, void* d_out, size_t cap) {
  DecodeSetup s;
  memset(&s.batch, 0, sizeof s.batch);
  enec_cuda_stream_info info;
  if (enec_cuda_stream_info_read(host.data(), host.size(), &info)) {
    fprintf(stderr, "bad stream header\n");
    exit(2);
  }
  std::vector<enec_cuda_frame> frames(info.frame_count);
  auto t0 = std::chrono::steady_clock::now();
  uint32_t bad = 0;
  int rc = enec_cuda_index_stream(host.data(), host.size(), d_stream, d_out, cap, frames.data(),
                                  frames.size(), &s.batch, &bad);
  s.index_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (rc) {
    fprintf(stderr, "index failed rc %d at frame %u\n", rc, bad);
    exit(2);
  }
  CK(cudaMalloc(&s.d_frames, sizeof(enec_cuda_frame) * frames.size()));
  CK(cudaMalloc(&s.d_status, 4 * frames.size()));
  CK(cudaMemcpy(s.d_frames, frames.data(), sizeof(enec_cuda_frame) * frames.size(), cudaMemcpyHostToDevice));
  return s;
}

static bool statuses_ok(const DecodeSetup& s) {
  std::vector<uint32_t> st(s.batch.frames);
  CK(cudaMemcpy(st.data(), s.d_status, 4 * st.size(), cudaMemcpyDeviceToHost));
  for (uint32_t v : st)
    if (v) return false;
  return true;
}

#ifdef ENEC_WITH_NVCOMP
#define NV(call)                                                                   \
  do {                                                                             \
    nvcompStatus_t s_ = (call);                                                    \
    if (s_ != nvcompSuccess) {                                                     \
      fprintf(stderr, "nvCOMP error %d at %s:%d\n", (int)s_, __FILE__, __LINE__); \
      return false;                                                                \
    }                                                                              \
  } while (0)

// One nvCOMP batched codec over the tiled input cut into chunks of `chunk` bytes.
template <class COpts, class DOpts>
static bool run_nvcomp(const char* name, const void* d_in, size_t bytes, size_t chunk, COpts copts,
                       DOpts dopts, cudaStream_t st, int iters,
                       nvcompStatus_t (*comp_temp)(size_t, size_t, COpts, size_t*, size_t, cudaStream_t),
                       nvcompStatus_t (*max_out)(size_t, COpts, size_t*),
                       nvcompStatus_t (*compress)(const void* const*, const size_t*, size_t, size_t, void*,
                                                  size_t, void* const*, size_t*, COpts, nvcompStatus_t*,
                                                  cudaStream_t),
                       nvcompStatus_t (*decomp_temp)(size_t, size_t, DOpts, size_t*, size_t, cudaStream_t),
                       nvcompStatus_t (*decompress)(const void* const*, const size_t*, const size_t*,
                                                    size_t*, size_t, void* const, size_t, void* const*,
                                                    DOpts, nvcompStatus_t*, cudaStream_t)) {
  const size_t n = (bytes + chunk - 1) / chunk;
  size_t max_chunk_out = 0, ctemp = 0, dtemp = 0;
  NV(max_out(chunk, copts, &max_chunk_out));
  const size_t slot = (max_chunk_out + 255) & ~(size_t)255;
  NV(comp_temp(n, chunk, copts, &ctemp, bytes, st));
  NV(decomp_temp(n, chunk, dopts, &dtemp, bytes, st));
  std::vector<void*> in_ptrs(n), comp_ptrs(n), out_ptrs(n);
  std::vector<size_t> in_sizes(n);
  uint8_t *d_comp, *d_out, *d_ctemp, *d_dtemp;
  CK(cudaMalloc(&d_comp, slot * n));
  CK(cudaMalloc(&d_out, bytes + 16));
  CK(cudaMalloc(&d_ctemp, ctemp + 1));
  CK(cudaMalloc(&d_dtemp, dtemp + 1));
  for (size_t i = 0; i < n; i++) {
    in_ptrs[i] = (uint8_t*)d_in + i * chunk;
    in_sizes[i] = std::min(chunk, bytes - i * chunk);
    comp_ptrs[i] = d_comp + i * slot;
    out_ptrs[i] = d_out + i * chunk;
  }
  void **d_in_ptrs, **d_comp_ptrs, **d_out_ptrs;
  size_t *d_in_sizes, *d_comp_sizes, *d_out_sizes;
  nvcompStatus_t* d_st;
  CK(cudaMalloc(&d_in_ptrs, 8 * n));
  CK(cudaMalloc(&d_comp_ptrs, 8 * n));
  CK(cudaMalloc(&d_out_ptrs, 8 * n));
  CK(cudaMalloc(&d_in_sizes, 8 * n));
  CK(cudaMalloc(&d_comp_sizes, 8 * n));
  CK(cudaMalloc(&d_out_sizes, 8 * n));
  CK(cudaMalloc(&d_st, sizeof(nvcompStatus_t) * n));
  CK(cudaMemcpy(d_in_ptrs, in_ptrs.data(), 8 * n, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_comp_ptrs, comp_ptrs.data(), 8 * n, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_out_ptrs, out_ptrs.data(), 8 * n, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_in_sizes, in_sizes.data(), 8 * n, cudaMemcpyHostToDevice));
  bool ok = true;
  Timing tc = time_it(st, 2, iters, [&] {
    if (compress((const void* const*)d_in_ptrs, d_in_sizes, chunk, n, d_ctemp, ctemp, d_comp_ptrs,
                 d_comp_sizes, copts, d_st, st) != nvcompSuccess)
      ok = false;
  });
  std::vector<size_t> comp_sizes(n);
  CK(cudaMemcpy(comp_sizes.data(), d_comp_sizes, 8 * n, cudaMemcpyDeviceToHost));
  double comp_total = 0;
  for (size_t v : comp_sizes) comp_total += (double)v;
  Timing td = time_it(st, 2, iters, [&] {
    if (decompress((const void* const*)d_comp_ptrs, d_comp_sizes, d_in_sizes, d_out_sizes, n, d_dtemp,
                   dtemp, d_out_ptrs, dopts, d_st, st) != nvcompSuccess)
      ok = false;
  });
  std::vector<nvcompStatus_t> sts(n);
  CK(cudaMemcpy(sts.data(), d_st, sizeof(nvcompStatus_t) * n, cudaMemcpyDeviceToHost));
  for (auto s : sts) ok = ok && s == nvcompSuccess;
  const bool same = same_device_bytes(d_in, d_out, bytes);
  char note[160];
  snprintf(note, sizeof note, "%zu chunks of %zu KiB; ratio counts chunk payloads only", n, chunk >> 10);
  check(ok && same, std::string(name) + ": round trip identical");
  g_rows.push_back({name, bytes / comp_total, tc, td, note});
  cudaFree(d_comp); cudaFree(d_out); cudaFree(d_ctemp); cudaFree(d_dtemp);
  cudaFree(d_in_ptrs); cudaFree(d_comp_ptrs); cudaFree(d_out_ptrs);
  cudaFree(d_in_sizes); cudaFree(d_comp_sizes); cudaFree(d_out_sizes); cudaFree(d_st);
  return ok && same;
}
#endif

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench MINILM_DIR [--tiles N] [--iters N] [--profile] [--md FILE]\n");
    return 2;
  }
  const std::string dir = argv[1];
  int tiles = 24, iters = 10;
  bool profile = false;
  std::string md;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--tiles") && i + 1 < argc) tiles = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--profile")) profile = true;
    else if (!strcmp(argv[i], "--md") && i + 1 < argc) md = argv[++i];
  }
  Bytes tsvb, rust;
  if (!read_file(dir + "/minilm.tsv", tsvb) || !read_file(dir + "/minilm_bf16.auto.f14.enec", rust)) {
    fprintf(stderr, "missing %s/minilm.tsv or minilm_bf16.auto.f14.enec (run ffi/cuda/gen)\n", dir.c_str());
    return 2;
  }
  const std::string tsv(tsvb.begin(), tsvb.end());
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("device: %s, %d SMs, %.0f MB L2, %.1f GB\n", prop.name, prop.multiProcessorCount,
         prop.l2CacheSize / 1e6, prop.totalGlobalMem / 1e9);
  CK(cudaMalloc(&g_diff, 8));
  cudaStream_t st;
  CK(cudaStreamCreate(&st));

  // 1. The raw weights: GPU decode of the Rust stream.
  enec_cuda_stream_info info;
  enec_cuda_stream_info_read(rust.data(), rust.size(), &info);
  const size_t raw_bytes = info.decoded_bytes;
  void *d_rust, *d_raw;
  CK(cudaMalloc(&d_rust, rust.size()));
  CK(cudaMalloc(&d_raw, raw_bytes + 16));
  CK(cudaMemcpy(d_rust, rust.data(), rust.size(), cudaMemcpyHostToDevice));
  {
    DecodeSetup s = index_stream(rust, d_rust, d_raw, raw_bytes);
    enec_cuda_decode(s.d_frames, &s.batch, 1, s.d_status, st);
    CK(cudaStreamSynchronize(st));
    Bytes raw(raw_bytes);
    CK(cudaMemcpy(raw.data(), d_raw, raw_bytes, cudaMemcpyDeviceToHost));
    const Digest want = find_digest(tsv, "minilm_bf16", "auto", true);
    check(statuses_ok(s) && want.found && want.bytes == raw_bytes &&
              enec::h32_host(raw.data(), raw.size()) == want.h32,
          "MiniLM bf16 recovered by GPU decode of the Rust stream (" + std::to_string(raw_bytes) + " bytes)");
  }
  // 2. Tile to about 1 GiB.
  const size_t bytes = raw_bytes * (size_t)tiles;
  const size_t elements = bytes / 2;
  g_bytes = (double)bytes;
  uint8_t *d_u, *d_u2, *d_dec;
  CK(cudaMalloc(&d_u, bytes + 16));
  CK(cudaMalloc(&d_u2, bytes + 16));
  CK(cudaMalloc(&d_dec, bytes + 16));
  CK(cudaMemset(d_u, 0, bytes + 16));
  CK(cudaMemset(d_dec, 0, bytes + 16));
  for (int t = 0; t < tiles; t++) CK(cudaMemcpy(d_u + t * raw_bytes, d_raw, raw_bytes, cudaMemcpyDeviceToDevice));
  printf("input: MiniLM bf16 x %d = %zu bytes (%.3f GiB), %zu elements\n", tiles, bytes, bytes / 1073741824.0, elements);
  const std::string tname = "minilm_bf16_x" + std::to_string(tiles);
  const size_t padded = (bytes + 15) & ~(size_t)15;

  // 3. enec encode, then decode.
  const uint64_t cap = enec_cuda_max_encoded_bytes(ENEC_CUDA_BF16, elements, 14);
  const uint64_t scratch = enec_cuda_encode_scratch_bytes(elements, 14);
  void* d_scr;
  uint64_t* d_len;
  CK(cudaMalloc(&d_scr, scratch));
  CK(cudaMalloc(&d_len, 8));
  struct Coded {
    const char* name;
    int coding;
    uint8_t* d_stream;
    Bytes host;
  };
  std::vector<Coded> codings = {{"ranked", ENEC_CUDA_RANKED, nullptr, {}},
                                {"groups", ENEC_CUDA_GROUPS, nullptr, {}},
                                {"auto", ENEC_CUDA_AUTO, nullptr, {}}};
  if (profile) codings.resize(1);
  for (auto& c : codings) {
    CK(cudaMalloc(&c.d_stream, cap));
    auto enc = [&] {
      enec_cuda_encode(d_u, elements, ENEC_CUDA_BF16, 14, c.coding, 1, c.d_stream, cap, d_len, d_scr, scratch, st);
    };
    Timing te{0, 0};
    if (profile) {
      enc();
      CK(cudaStreamSynchronize(st));
    } else {
      te = time_it(st, 2, iters, enc);
    }
    CK(cudaGetLastError());
    uint64_t len = 0;
    CK(cudaMemcpy(&len, d_len, 8, cudaMemcpyDeviceToHost));
    c.host.resize(len);
    CK(cudaMemcpy(c.host.data(), c.d_stream, len, cudaMemcpyDeviceToHost));
    const Digest want = find_digest(tsv, tname, c.name, false);
    if (want.found) {
      check(want.bytes == len && enec::h32_host(c.host.data(), len) == want.h32,
            std::string("GPU encode (") + c.name + ") == Rust encoder (length " + std::to_string(len) + " and h32)");
    } else {
      printf("note: no Rust digest for %s %s (generator run with other tiles)\n", tname.c_str(), c.name);
    }
    Row row{std::string("enec ") + c.name, (double)bytes / len, te, {0, 0}, ""};
    if (c.coding != ENEC_CUDA_AUTO) {
      DecodeSetup s = index_stream(c.host, c.d_stream, d_dec, bytes);
      if (profile) {
        enec_cuda_decode(s.d_frames, &s.batch, 1, s.d_status, st);
        CK(cudaStreamSynchronize(st));
        check(statuses_ok(s) && same_device_bytes(d_u, d_dec, padded), "profiled decode identical");
        return g_fail ? 1 : 0;
      }
      Timing tv = time_it(st, 2, iters, [&] { enec_cuda_decode(s.d_frames, &s.batch, 1, s.d_status, st); });
      check(statuses_ok(s) && same_device_bytes(d_u, d_dec, padded),
            std::string("GPU decode (") + c.name + ", checksums verified) identical, all frames status 0");
      CK(cudaMemset(d_dec, 0, bytes));
      Timing tn = time_it(st, 2, iters, [&] { enec_cuda_decode(s.d_frames, &s.batch, 0, s.d_status, st); });
      check(statuses_ok(s) && same_device_bytes(d_u, d_dec, padded),
            std::string("GPU decode (") + c.name + ", no verification) identical");
      row.decomp = tv;
      char note[200];
      snprintf(note, sizeof note, "decode with h32 verification; host frame index %.1f ms for %u frames", s.index_ms, s.batch.frames);
      row.note = note;
      g_rows.push_back(row);
      Row nv{std::string("enec ") + c.name + " (decode without h32 check)", (double)bytes / len, {0, 0}, tn, ""};
      g_rows.push_back(nv);
      if (c.coding == ENEC_CUDA_RANKED) {
        // The same frames through the column kernel (one block per frame), which
        // enec_cuda_decode takes when a batch's escape arrays exceed the warp kernel's bound.
        enec_cuda_batch wide = s.batch;
        // Just past the warp kernel's bound (12 KiB of escape arrays a frame, padding included).
        wide.max_entries = 12 * 1024 - 3 * 32 + 1;
        CK(cudaMemset(d_dec, 0, bytes));
        Timing tc = time_it(st, 2, iters, [&] { enec_cuda_decode(s.d_frames, &wide, 1, s.d_status, st); });
        check(statuses_ok(s) && same_device_bytes(d_u, d_dec, padded),
              "GPU decode (ranked, column kernel, checksums verified) identical");
        g_rows.push_back({"enec ranked, column kernel", (double)bytes / len, {0, 0}, tc,
                          "decode with h32 verification, one block per frame"});
      }
      cudaFree(s.d_frames);
      cudaFree(s.d_status);
    } else {
      row.note = "per frame the smaller of ranked/groups/stored";
      g_rows.push_back(row);
    }
  }
  // 4. Device-to-device copy.
  {
    Timing tc = time_it(st, 2, iters, [&] { CK(cudaMemcpyAsync(d_u2, d_u, bytes, cudaMemcpyDeviceToDevice, st)); });
    g_rows.insert(g_rows.begin(), {"cudaMemcpy device to device", 1.0, tc, tc, "GB/s of copied bytes (reads + writes = 2x)"});
  }
#ifdef ENEC_WITH_NVCOMP
  {
    nvcompBatchedANSCompressOpts_t ac = nvcompBatchedANSCompressDefaultOpts;
    ac.data_type = NVCOMP_TYPE_FLOAT16;
    nvcompBatchedANSDecompressOpts_t ad = nvcompBatchedANSDecompressDefaultOpts;
    for (size_t chunk : {(size_t)65536, (size_t)1 << 20}) {
      std::string name = "nvCOMP 6 ANS <f2, " + std::to_string(chunk >> 10) + " KiB chunks";
      run_nvcomp(name.c_str(), d_u, bytes, chunk, ac, ad, st, iters,
                 nvcompBatchedANSCompressGetTempSize, nvcompBatchedANSCompressGetMaxOutputChunkSize,
                 nvcompBatchedANSCompressAsync, nvcompBatchedANSDecompressGetTempSize,
                 nvcompBatchedANSDecompressAsync);
    }
    nvcompBatchedBitcompCompressOpts_t bc = nvcompBatchedBitcompCompressDefaultOpts;
    bc.data_type = NVCOMP_TYPE_USHORT;
    nvcompBatchedBitcompDecompressOpts_t bd = nvcompBatchedBitcompDecompressDefaultOpts;
    run_nvcomp("nvCOMP 6 Bitcomp (ushort), 64 KiB chunks", d_u, bytes, 65536, bc, bd, st, iters,
               nvcompBatchedBitcompCompressGetTempSize, nvcompBatchedBitcompCompressGetMaxOutputChunkSize,
               nvcompBatchedBitcompCompressAsync, nvcompBatchedBitcompDecompressGetTempSize,
               nvcompBatchedBitcompDecompressAsync);
  }
#else
  printf("note: built without nvCOMP (ENEC_WITH_NVCOMP undefined)\n");
#endif
  // 5. The table.
  std::string out;
  char line[512];
  snprintf(line, sizeof line, "| codec | ratio | compress GB/s | decompress GB/s | notes |\n|---|---|---|---|---|\n");
  out += line;
  for (auto& r : g_rows) {
    snprintf(line, sizeof line, "| %s | %.4f | %s | %s | %s |\n", r.name.c_str(), r.ratio, gbs(r.comp).c_str(),
             gbs(r.decomp).c_str(), r.note.c_str());
    out += line;
  }
  printf("\nGB/s = uncompressed bytes (%zu) / time; mean of %d timed runs after 2 warm-up runs (best run in parentheses)\n\n%s",
         bytes, iters, out.c_str());
  if (!md.empty()) {
    FILE* f = fopen(md.c_str(), "w");
    if (f) {
      fputs(out.c_str(), f);
      fclose(f);
    }
  }
  printf("\nbench checks: %s\n", g_fail ? "SOME FAILED" : "all passed");
  return g_fail ? 1 : 0;
}

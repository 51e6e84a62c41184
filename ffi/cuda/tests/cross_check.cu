// Cross-checks of the CUDA kernels against the Rust encoder (the reference):
//   * GPU decode of every Rust-encoded stream equals the original bytes (all frames status 0);
//   * GPU encode of every input equals the Rust-encoded stream byte for byte (or its h32 digest
//     and length where the stream does not travel), for auto, groups and ranked;
//   * the golden files of tests/golden/v1 and v1.1 (decode and re-encode);
//   * one batched launch over streams of every dtype;
//   * corrupted streams are reported, never returned as good;
//   * enec_cuda_load reads many streams from a file and from memory through small slots (streams
//     cut between slots) into device memory, and names the stream and frame of every fault.
//
// usage: cross_check REPO_ROOT DATA_DIR [--skip-large]
// Inputs come from ffi/cuda/gen (see README.md). Builds with nvcc, or with g++ -DENEC_SIM -x c++
// against the CPU model in sim/ (then large inputs are skipped).
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include "../include/enec_cuda.h"
#include "../src/compat.h"
#include "../src/format.h"

using Bytes = std::vector<uint8_t>;

static int g_pass = 0, g_fail = 0;

#define CK(call)                                                                      \
  do {                                                                                \
    cudaError_t e_ = (call);                                                          \
    if (e_ != cudaSuccess) {                                                          \
      fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
      exit(2);                                                                        \
    }                                                                                 \
  } while (0)

static void report(bool ok, const std::string& what, const std::string& detail = "") {
  if (ok) {
    g_pass++;
    printf("PASS %s\n", what.c_str());
  } else {
    g_fail++;
    printf("FAIL %s %s\n", what.c_str(), detail.c_str());
  }
  fflush(stdout);
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

static std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t a = 0;
  while (true) {
    size_t b = s.find(sep, a);
    out.push_back(s.substr(a, b == std::string::npos ? std::string::npos : b - a));
    if (b == std::string::npos) break;
    a = b + 1;
  }
  return out;
}

// Round-to-nearest-even conversions exactly as the `half` crate's from_f32.
static uint16_t bf16_from_f32(uint32_t x) {
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
  const uint32_t round = 0x8000u;
  if ((x & round) && (x & (3 * round - 1))) return (uint16_t)((x >> 16) + 1);
  return (uint16_t)(x >> 16);
}

static uint16_t f16_from_f32(uint32_t x) {
  const uint32_t sign = x & 0x80000000u, exp = x & 0x7f800000u, man = x & 0x007fffffu;
  if (exp == 0x7f800000u) {
    const uint32_t nan_bit = man == 0 ? 0 : 0x0200u;
    return (uint16_t)((sign >> 16) | 0x7c00u | nan_bit | (man >> 13));
  }
  const uint32_t half_sign = sign >> 16;
  const int32_t half_exp = (int32_t)(exp >> 23) - 127 + 15;
  if (half_exp >= 0x1f) return (uint16_t)(half_sign | 0x7c00u);
  if (half_exp <= 0) {
    if (14 - half_exp > 24) return (uint16_t)half_sign;
    const uint32_t m = man | 0x00800000u;
    uint32_t half_man = m >> (14 - half_exp);
    const uint32_t round = 1u << (13 - half_exp);
    if ((m & round) && (m & (3 * round - 1))) half_man += 1;
    return (uint16_t)(half_sign | half_man);
  }
  const uint32_t he = (uint32_t)half_exp << 10, hm = man >> 13, round = 0x1000u;
  if ((man & round) && (man & (3 * round - 1))) return (uint16_t)((half_sign | he | hm) + 1);
  return (uint16_t)(half_sign | he | hm);
}

static int dtype_code(const std::string& s) {
  if (s == "bf16") return ENEC_CUDA_BF16;
  if (s == "fp16") return ENEC_CUDA_FP16;
  if (s == "fp32") return ENEC_CUDA_FP32;
  if (s == "e4m3") return ENEC_CUDA_E4M3;
  if (s == "e5m2") return ENEC_CUDA_E5M2;
  return 0;
}

static uint64_t element_bytes(int dtype) {
  enec::DtypeInfo d = {8, 7, 2};
  return enec::dtype_info((uint32_t)dtype, &d) ? d.eb : 1;
}

static int coding_code(const std::string& s) {
  if (s == "auto" || s == "Auto") return ENEC_CUDA_AUTO;
  if (s == "groups" || s == "Groups") return ENEC_CUDA_GROUPS;
  if (s == "ranked" || s == "Ranked") return ENEC_CUDA_RANKED;
  return -1;
}

// Decodes one or more streams in ONE launch. Returns "" on success, else what went wrong.
// min_entries: raise the batch's escape-entry bound to at least this (past the warp kernel's
// 12 KiB a frame, column frames take the column kernel).
static std::string decode_batch(const std::vector<const Bytes*>& streams, std::vector<Bytes>& outs,
                                bool verify, std::vector<uint32_t>* statuses = nullptr,
                                uint32_t min_entries = 0) {
  size_t total_frames = 0;
  std::vector<enec_cuda_stream_info> infos(streams.size());
  for (size_t i = 0; i < streams.size(); i++) {
    int rc = enec_cuda_stream_info_read(streams[i]->data(), streams[i]->size(), &infos[i]);
    if (rc) return "stream header rc " + std::to_string(rc);
    total_frames += infos[i].frame_count;
  }
  std::vector<void*> dsrc(streams.size()), ddst(streams.size());
  std::vector<enec_cuda_frame> frames(total_frames ? total_frames : 1);
  enec_cuda_batch batch;
  memset(&batch, 0, sizeof batch);
  for (size_t i = 0; i < streams.size(); i++) {
    CK(cudaMalloc(&dsrc[i], streams[i]->size() + 16));
    CK(cudaMemcpy(dsrc[i], streams[i]->data(), streams[i]->size(), cudaMemcpyHostToDevice));
    CK(cudaMalloc(&ddst[i], infos[i].decoded_bytes + 16));
    uint32_t bad = 0;
    int rc = enec_cuda_index_stream(streams[i]->data(), streams[i]->size(), dsrc[i], ddst[i],
                                    infos[i].decoded_bytes, frames.data(), frames.size(), &batch, &bad);
    if (rc) return "index rc " + std::to_string(rc) + " frame " + std::to_string(bad);
  }
  enec_cuda_frame* dframes = nullptr;
  uint32_t* dstatus = nullptr;
  CK(cudaMalloc(&dframes, sizeof(enec_cuda_frame) * frames.size()));
  CK(cudaMalloc(&dstatus, 4 * frames.size()));
  CK(cudaMemcpy(dframes, frames.data(), sizeof(enec_cuda_frame) * frames.size(), cudaMemcpyHostToDevice));
  if (batch.max_entries < min_entries) batch.max_entries = min_entries;
  int rc = enec_cuda_decode(dframes, &batch, verify ? 1 : 0, dstatus, 0);
  CK(cudaDeviceSynchronize());
  std::string err;
  if (rc) err = "decode rc " + std::to_string(rc);
  std::vector<uint32_t> st(batch.frames);
  if (batch.frames) CK(cudaMemcpy(st.data(), dstatus, 4 * batch.frames, cudaMemcpyDeviceToHost));
  for (uint32_t f = 0; f < batch.frames && err.empty(); f++)
    if (st[f]) err = "frame " + std::to_string(frames[f].index) + " status " + std::to_string(st[f]);
  if (statuses) *statuses = st;
  outs.resize(streams.size());
  for (size_t i = 0; i < streams.size(); i++) {
    outs[i].resize(infos[i].decoded_bytes);
    if (infos[i].decoded_bytes)
      CK(cudaMemcpy(outs[i].data(), ddst[i], infos[i].decoded_bytes, cudaMemcpyDeviceToHost));
    CK(cudaFree(dsrc[i]));
    CK(cudaFree(ddst[i]));
  }
  CK(cudaFree(dframes));
  CK(cudaFree(dstatus));
  return err;
}

static std::string decode_one(const Bytes& stream, Bytes& out, bool verify) {
  std::vector<Bytes> outs;
  std::string e = decode_batch({&stream}, outs, verify);
  out = outs.empty() ? Bytes() : outs[0];
  return e;
}

static std::string encode_one(const Bytes& raw, int dtype, int log2, int coding, int checksums,
                              Bytes& stream) {
  const uint64_t n = raw.size() / element_bytes(dtype);
  const uint64_t cap = enec_cuda_max_encoded_bytes(dtype, n, log2);
  const uint64_t scratch = enec_cuda_encode_scratch_bytes(n, log2);
  void *din, *dout, *dscr;
  uint64_t* dlen;
  CK(cudaMalloc(&din, raw.size() + 16));
  CK(cudaMalloc(&dout, cap));
  CK(cudaMalloc(&dscr, scratch));
  CK(cudaMalloc(&dlen, 8));
  if (raw.size()) CK(cudaMemcpy(din, raw.data(), raw.size(), cudaMemcpyHostToDevice));
  int rc = enec_cuda_encode(din, n, dtype, log2, coding, checksums, dout, cap, dlen, dscr, scratch, 0);
  CK(cudaDeviceSynchronize());
  std::string err;
  if (rc) err = "encode rc " + std::to_string(rc);
  uint64_t len = 0;
  CK(cudaMemcpy(&len, dlen, 8, cudaMemcpyDeviceToHost));
  if (err.empty() && len > cap) err = "encoded length " + std::to_string(len) + " above capacity";
  stream.resize(err.empty() ? len : 0);
  if (!stream.empty()) CK(cudaMemcpy(stream.data(), dout, len, cudaMemcpyDeviceToHost));
  CK(cudaFree(din));
  CK(cudaFree(dout));
  CK(cudaFree(dscr));
  CK(cudaFree(dlen));
  return err;
}

// Where two streams first differ: byte offset and frame number.
static std::string first_difference(const Bytes& a, const Bytes& b) {
  size_t n = a.size() < b.size() ? a.size() : b.size(), i = 0;
  while (i < n && a[i] == b[i]) i++;
  if (i == n && a.size() == b.size()) return "";
  std::string where = "lengths " + std::to_string(a.size()) + " vs " + std::to_string(b.size()) +
                      ", first difference at byte " + std::to_string(i);
  size_t at = 32, frame = 0;
  while (at + 32 <= a.size()) {
    size_t fb = enec::rd32(&a[at]);
    if (fb == 0 || at + fb > i) break;
    at += fb;
    frame++;
  }
  char buf[160];
  snprintf(buf, sizeof buf, " (frame %zu at offset %zu, byte %zu of it)", frame, at, i - at);
  return where + buf;
}

struct Case {
  std::string name, dtype, coding, raw, stream;
  int log2, checksums;
  uint64_t raw_bytes, stream_bytes;
  uint32_t raw_h32, stream_h32;
};

static std::vector<Case> read_manifest(const std::string& path) {
  std::vector<Case> out;
  Bytes text;
  if (!read_file(path, text)) return out;
  std::string s(text.begin(), text.end());
  auto lines = split(s, '\n');
  for (size_t i = 1; i < lines.size(); i++) {
    if (lines[i].empty()) continue;
    auto c = split(lines[i], '\t');
    if (c.size() < 12) continue;
    Case k;
    k.name = c[0];
    k.dtype = c[1];
    k.log2 = atoi(c[2].c_str());
    k.coding = c[3];
    k.checksums = atoi(c[4].c_str());
    k.raw = c[5];
    k.raw_bytes = strtoull(c[6].c_str(), nullptr, 10);
    k.raw_h32 = (uint32_t)strtoul(c[7].c_str(), nullptr, 16);
    k.stream = c[8];
    k.stream_bytes = strtoull(c[9].c_str(), nullptr, 10);
    k.stream_h32 = (uint32_t)strtoul(c[10].c_str(), nullptr, 16);
    out.push_back(k);
  }
  return out;
}

static std::map<std::string, Bytes> g_raw;  // raw inputs by case name (decoded or loaded)

static bool get_raw(const std::string& repo, const std::string& dir, const Case& c, Bytes& raw) {
  auto it = g_raw.find(c.name);
  if (it != g_raw.end()) {
    raw = it->second;
    return true;
  }
  const std::string& src = c.raw;
  if (src == "-") return false;
  if (src.rfind("repo:", 0) == 0) {
    if (!read_file(repo + "/" + src.substr(5), raw)) return false;
  } else if (src.rfind("derive:", 0) == 0) {
    auto parts = split(src, ':');  // derive:bf16:repo:PATH
    Bytes f32;
    if (!read_file(repo + "/" + parts[3], f32)) return false;
    raw.resize(f32.size() / 2);
    for (size_t i = 0; i < f32.size() / 4; i++) {
      const uint32_t x = enec::rd32(&f32[4 * i]);
      const uint16_t h = parts[1] == "bf16" ? bf16_from_f32(x) : f16_from_f32(x);
      raw[2 * i] = (uint8_t)h;
      raw[2 * i + 1] = (uint8_t)(h >> 8);
    }
  } else if (src.rfind("tile:", 0) == 0) {
    return false;  // the benchmark handles the tiled input
  } else {
    if (!read_file(dir + "/" + src, raw)) return false;
  }
  g_raw[c.name] = raw;
  return true;
}

static void run_manifest(const std::string& repo, const std::string& top, const std::string& file,
                         bool skip_large) {
  const size_t slash = file.rfind('/');
  const std::string dir = slash == std::string::npos ? top : top + "/" + file.substr(0, slash);
  auto cases = read_manifest(top + "/" + file);
  if (cases.empty()) {
    printf("(no cases in %s/%s)\n", top.c_str(), file.c_str());
    return;
  }
  for (const Case& c : cases) {
    if (c.raw.rfind("tile:", 0) == 0) continue;
    if (skip_large && c.raw_bytes > (8u << 20)) continue;
    char id[256];
    snprintf(id, sizeof id, "%s %s f%d %s%s", c.name.c_str(), c.dtype.c_str(), c.log2,
             c.coding.c_str(), c.checksums ? "" : " nock");
    const int dtype = dtype_code(c.dtype), coding = coding_code(c.coding);
    Bytes rust;
    const bool have_stream = c.stream != "-" && read_file(dir + "/" + c.stream, rust);
    Bytes raw;
    bool have_raw = get_raw(repo, dir, c, raw);
    // 1. GPU decode of the Rust stream.
    if (have_stream) {
      Bytes out;
      std::string e = decode_one(rust, out, true);
      const uint32_t h = enec::h32_host(out.data(), out.size());
      bool ok = e.empty() && out.size() == c.raw_bytes && h == c.raw_h32;
      if (ok && have_raw) ok = out == raw;
      report(ok, std::string("decode(rust) ") + id, e.empty() ? "decoded bytes differ" : e);
      if (ok && !have_raw) {
        raw = out;
        have_raw = true;
        g_raw[c.name] = raw;
      }
      Bytes out2;
      e = decode_one(rust, out2, false);
      report(e.empty() && out2 == out, std::string("decode(rust, no verify) ") + id, e);
    }
    if (!have_raw) {
      report(false, std::string("raw input ") + id, "not available");
      continue;
    }
    if (raw.size() != c.raw_bytes || enec::h32_host(raw.data(), raw.size()) != c.raw_h32) {
      report(false, std::string("raw input ") + id, "digest differs from the generator's");
      continue;
    }
    // 2. GPU encode equals the Rust encoder's bytes.
    Bytes gpu;
    std::string e = encode_one(raw, dtype, c.log2, coding, c.checksums, gpu);
    if (!e.empty()) {
      report(false, std::string("encode ") + id, e);
      continue;
    }
    if (have_stream) {
      std::string diff = first_difference(gpu, rust);
      report(diff.empty(), std::string("encode==rust ") + id, diff);
    } else {
      const bool ok = gpu.size() == c.stream_bytes &&
                      enec::h32_host(gpu.data(), gpu.size()) == c.stream_h32;
      char d[128];
      snprintf(d, sizeof d, "length %zu vs %llu", gpu.size(), (unsigned long long)c.stream_bytes);
      report(ok, std::string("encode==rust(h32) ") + id, d);
      // The GPU stream is the Rust stream: decode it too.
      Bytes out;
      e = decode_one(gpu, out, true);
      report(e.empty() && out == raw, std::string("decode(gpu) ") + id, e);
    }
  }
}

// The rows of a golden-file folder's MANIFEST.tsv (name, dtype, frame_len, coding, checksums,
// ...), its header line left out; none (said once) where the folder has no manifest.
static std::vector<std::vector<std::string>> golden_rows(const std::string& dir) {
  std::vector<std::vector<std::string>> rows;
  Bytes text;
  if (!read_file(dir + "/MANIFEST.tsv", text)) {
    printf("(no golden files in %s)\n", dir.c_str());
    return rows;
  }
  auto lines = split(std::string(text.begin(), text.end()), '\n');
  for (size_t i = 1; i < lines.size(); i++) {
    auto c = split(lines[i], '\t');
    if (c.size() >= 5) rows.push_back(c);
  }
  return rows;
}

// The golden files of one format version (folder v1 or v1.1): decode, and encode again.
static void run_golden(const std::string& repo, const std::string& version) {
  const std::string dir = repo + "/tests/golden/" + version;
  for (const auto& c : golden_rows(dir)) {
    Bytes stream, raw;
    if (!read_file(dir + "/" + c[0] + ".enec", stream) || !read_file(dir + "/" + c[0] + ".bin", raw)) {
      report(false, "golden " + version + " " + c[0], "files missing");
      continue;
    }
    Bytes out;
    std::string e = decode_one(stream, out, true);
    report(e.empty() && out == raw, "golden " + version + " decode " + c[0], e);
    int log2 = 0;
    for (unsigned v = (unsigned)atoi(c[2].c_str()); v > 1; v >>= 1) log2++;
    Bytes gpu;
    e = encode_one(raw, dtype_code(c[1]), log2, coding_code(c[3]), c[4] == "true", gpu);
    std::string diff = e.empty() ? first_difference(gpu, stream) : e;
    report(diff.empty(), "golden " + version + " encode " + c[0], diff);
  }
}

// An FP8 stream whose header claims minor version 0 (older than its dtype) is refused.
static void run_fp8_minor_refused(const std::string& repo) {
  Bytes stream;
  if (!read_file(repo + "/tests/golden/v1.1/e4m3_ranked.enec", stream) || stream.size() < 32) {
    report(false, "fp8 stream with minor 0", "golden file missing");
    return;
  }
  stream[5] = 0;
  const uint32_t check = enec::h32_host(stream.data(), 28);
  for (int i = 0; i < 4; i++) stream[28 + i] = (uint8_t)(check >> (8 * i));
  enec_cuda_stream_info info;
  const int rc = enec_cuda_stream_info_read(stream.data(), stream.size(), &info);
  report(rc == ENEC_CUDA_ERR_HEADER, "fp8 stream with minor 0 refused", "rc " + std::to_string(rc));
}

// An escape-entry bound that sends column frames to the column kernel.
static constexpr uint32_t kColumnKernelEntries = 12 * 1024;

static void run_batch_and_corruption() {
  // One launch over streams of every dtype (raw inputs loaded by the manifest run).
  std::vector<std::string> names = {"normal_bf16", "special_fp16", "skew_fp32",   "rand_bf16",
                                    "tiny1025_fp32", "normal_e4m3", "special_e5m2"};
  std::vector<Bytes> streams;
  std::vector<Bytes> raws;
  for (auto& n : names) {
    if (!g_raw.count(n)) continue;
    const int dtype = dtype_code(n.substr(n.rfind('_') + 1));
    Bytes s;
    for (int coding : {ENEC_CUDA_AUTO, ENEC_CUDA_GROUPS}) {
      if (!encode_one(g_raw[n], dtype, 12, coding, 1, s).empty()) continue;
      streams.push_back(s);
      raws.push_back(g_raw[n]);
    }
  }
  if (!streams.empty()) {
    std::vector<const Bytes*> ptrs;
    for (auto& s : streams) ptrs.push_back(&s);
    for (uint32_t entries : {0u, kColumnKernelEntries}) {
      std::vector<Bytes> outs;
      std::string e = decode_batch(ptrs, outs, true, nullptr, entries);
      bool ok = e.empty();
      for (size_t i = 0; ok && i < outs.size(); i++) ok = outs[i] == raws[i];
      report(ok, "batched decode of " + std::to_string(streams.size()) + " streams (5 dtypes) in one launch" +
                     (entries ? ", column kernel" : ""), e);
    }
  }
  // Corruption: a flipped bit inside a coded frame's planes must be reported.
  if (g_raw.count("normal_bf16")) {
    Bytes s;
    encode_one(g_raw["normal_bf16"], 1, 14, ENEC_CUDA_AUTO, 1, s);
    int detected = 0, tried = 0;
    for (size_t off : {size_t(32 + 32 + 300), size_t(32 + 1000), size_t(32 + 5000), size_t(32 + 9000)}) {
      if (off >= s.size()) continue;
      Bytes bad = s;
      bad[off] ^= 0x10;
      Bytes out;
      std::vector<uint32_t> st;
      std::vector<Bytes> outs;
      for (uint32_t entries : {0u, kColumnKernelEntries}) {
        std::string e = decode_batch({&bad}, outs, true, &st, entries);
        tried++;
        if (!e.empty()) detected++;
      }
    }
    report(tried > 0 && detected == tried,
           "corrupted streams reported by the warp and column kernels (" + std::to_string(detected) + "/" +
               std::to_string(tried) + ")");
    // Bad header check: the index walk refuses it.
    Bytes bad = s;
    bad[7] ^= 1;
    enec_cuda_frame fr[8];
    enec_cuda_batch b;
    memset(&b, 0, sizeof b);
    int rc = enec_cuda_index_stream(bad.data(), bad.size(), (void*)16, (void*)16, 1 << 30, fr, 8, &b, nullptr);
    report(rc != 0, "corrupted stream header refused");
  }
}


// Loads `streams` (laid out in `file` at `offsets`) into fresh device buffers with enec_cuda_load;
// returns its code, the decoded bytes in `outs` and the report.
// Streams named raw_*, or any stream at an index in `raw`, are loaded as verbatim pieces.
static int load_streams(const Bytes& file, const std::vector<uint64_t>& offsets,
                        const std::vector<Bytes>& streams, const std::vector<uint64_t>& out_bytes,
                        bool from_fd, const enec_cuda_load_options* o, std::vector<Bytes>& outs,
                        enec_cuda_load_report& rep, const std::vector<bool>& raw = {}) {
  std::vector<enec_cuda_load_job> jobs(streams.size());
  for (size_t i = 0; i < streams.size(); i++) {
    jobs[i].offset = offsets[i];
    jobs[i].length = streams[i].size();
    jobs[i].dst_bytes = out_bytes[i];
    jobs[i].kind = i < raw.size() && raw[i] ? ENEC_CUDA_JOB_RAW : ENEC_CUDA_JOB_STREAM;
    jobs[i].checksum = enec::h32_host(streams[i].data(), streams[i].size());
    CK(cudaMalloc(&jobs[i].dst, out_bytes[i] + 1));
  }
  int fd = -1;
  if (from_fd) {
    char path[] = "/tmp/enec-load-XXXXXX";
    fd = mkstemp(path);
    unlink(path);
    if (fd < 0 || write(fd, file.data(), file.size()) != (ssize_t)file.size()) {
      fprintf(stderr, "cannot write %s\n", path);
      exit(2);
    }
  }
  const int rc = enec_cuda_load(fd, from_fd ? nullptr : file.data(), jobs.data(), jobs.size(), o, &rep);
  if (fd >= 0) close(fd);
  outs.assign(streams.size(), Bytes());
  for (size_t i = 0; i < streams.size(); i++) {
    outs[i].resize(out_bytes[i]);
    if (out_bytes[i]) CK(cudaMemcpy(outs[i].data(), jobs[i].dst, out_bytes[i], cudaMemcpyDeviceToHost));
    CK(cudaFree(jobs[i].dst));
  }
  return rc;
}

static void run_loader(const std::string& top) {
  // Every small stream of the manifest, several dtypes, codings and frame lengths, each at an
  // odd offset of one file after some bytes that are no stream.
  std::vector<Bytes> streams, raws;
  for (const Case& c : read_manifest(top + "/manifest.tsv")) {
    Bytes st;
    if (c.stream == "-" || !g_raw.count(c.name) || c.raw_bytes > (1u << 20)) continue;
    if (!read_file(top + "/" + c.stream, st) || g_raw[c.name].size() != c.raw_bytes) continue;
    streams.push_back(st);
    raws.push_back(g_raw[c.name]);
  }
  if (streams.size() < 4) {
    report(false, "enec_cuda_load", "too few streams in the manifest");
    return;
  }
  // Verbatim pieces between them: every third original again, raw (checked by h32, copied), and
  // one of 3 MiB + 100 bytes that spans slots.
  std::vector<bool> is_raw(streams.size(), false);
  const size_t coded = streams.size();
  for (size_t i = 0; i < coded; i += 3) {
    streams.push_back(raws[i]);
    raws.push_back(raws[i]);
    is_raw.push_back(true);
  }
  Bytes big_raw((3u << 20) + 100);
  for (size_t i = 0; i < big_raw.size(); i++) big_raw[i] = (uint8_t)(i * 2654435761u >> 13);
  streams.insert(streams.begin() + coded / 2, big_raw);
  raws.insert(raws.begin() + coded / 2, big_raw);
  is_raw.insert(is_raw.begin() + coded / 2, true);
  Bytes file;
  std::vector<uint64_t> offsets, sizes;
  for (size_t i = 0; i < streams.size(); i++) {
    file.resize(file.size() + 1 + i % 7, 0xEE);
    offsets.push_back(file.size());
    sizes.push_back(raws[i].size());
    file.insert(file.end(), streams[i].begin(), streams[i].end());
  }
  uint64_t total = 0;
  for (const Bytes& r : raws) total += r.size();
  enec_cuda_load_options small;
  memset(&small, 0, sizeof small);
  small.verify_checksums = 1;
  small.threads = 3;
  small.slots = 2;
  small.staging_bytes = 1u << 20;
  for (int from_fd = 0; from_fd < 2; from_fd++) {
    for (const enec_cuda_load_options* o : {(const enec_cuda_load_options*)nullptr, (const enec_cuda_load_options*)&small}) {
      std::vector<Bytes> outs;
      enec_cuda_load_report rep;
      const int rc = load_streams(file, offsets, streams, sizes, from_fd, o, outs, rep, is_raw);
      bool ok = rc == 0 && rep.bytes_decoded == total;
      for (size_t i = 0; ok && i < outs.size(); i++) ok = outs[i] == raws[i];
      char what[200];
      snprintf(what, sizeof what, "enec_cuda_load of %zu streams and raw pieces (%s, %s slots, %u batches)", streams.size(),
               from_fd ? "file" : "memory", o ? "1 MiB" : "default", rep.batches);
      report(ok && (o != &small || rep.batches > 1), what,
             "rc " + std::to_string(rc) + " job " + std::to_string(rep.job));
    }
  }
  // Faults, each named: a flipped bit in a late stream's frame (checksum, on the device), a
  // stream cut short, bytes after a stream's last frame, a wrong output size, a source that ends.
  // The largest stream with checksums, not the last in the file.
  size_t big = 0;
  for (size_t i = 0; i + 1 < streams.size(); i++)
    if (!is_raw[i] && (streams[i][8] & 1) && streams[i].size() > streams[big].size()) big = i;
  // A byte of its middle frame's body.
  size_t body = 32;
  while (body + enec::rd32(&streams[big][body]) < streams[big].size() / 2) body += enec::rd32(&streams[big][body]);
  body += 32 + 8;
  {  // a flipped bit in the raw piece that spans slots
    Bytes bad = file;
    const size_t r = coded / 2;
    bad[offsets[r] + big_raw.size() - 7] ^= 0x20;
    std::vector<Bytes> outs;
    enec_cuda_load_report rep;
    const int rc = load_streams(bad, offsets, streams, sizes, true, &small, outs, rep, is_raw);
    report(rc == ENEC_CUDA_ERR_CHECKSUM && rep.job == r, "enec_cuda_load names a fault: raw piece checksum",
           "rc " + std::to_string(rc) + " job " + std::to_string(rep.job));
  }
  struct Fault {
    const char* what;
    int want;
  };
  for (Fault f : {Fault{"flipped bit", ENEC_CUDA_ERR_DECODE}, Fault{"stream cut short", ENEC_CUDA_ERR_TRUNCATED},
                  Fault{"trailing bytes", ENEC_CUDA_ERR_TRAILING}, Fault{"wrong output size", ENEC_CUDA_ERR_CAPACITY},
                  Fault{"source ends early", ENEC_CUDA_ERR_READ}}) {
    Bytes bad = file;
    std::vector<Bytes> st = streams;
    std::vector<uint64_t> sz = sizes;
    const std::string w = f.what;
    if (w == "flipped bit") bad[offsets[big] + body] ^= 0x08;
    if (w == "stream cut short") st[big].resize(st[big].size() - 32);
    if (w == "trailing bytes") st[big].resize(st[big].size() + 32);
    if (w == "wrong output size") sz[big] += 2;
    if (w == "source ends early") bad.resize(offsets[big] + st[big].size() / 2);
    std::vector<Bytes> outs;
    enec_cuda_load_report rep;
    const int rc = load_streams(bad, offsets, st, sz, w == "source ends early", &small, outs, rep, is_raw);
    report(rc == f.want && rep.job == big, std::string("enec_cuda_load names a fault: ") + f.what,
           "rc " + std::to_string(rc) + " job " + std::to_string(rep.job) + " (want " +
               std::to_string(f.want) + " job " + std::to_string(big) + ")");
  }
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: cross_check REPO_ROOT DATA_DIR [--skip-large]\n");
    return 2;
  }
  const std::string repo = argv[1], dir = argv[2];
  const bool skip_large = argc > 3 && !strcmp(argv[3], "--skip-large");
  run_golden(repo, "v1");
  run_golden(repo, "v1.1");
  run_fp8_minor_refused(repo);
  run_manifest(repo, dir, "manifest.tsv", skip_large);
  run_manifest(repo, dir, "minilm/minilm.tsv", skip_large);
  run_batch_and_corruption();
  run_loader(dir);
  printf("cross-checks: %d passed, %d failed\n", g_pass, g_fail);
  return g_fail ? 1 : 0;
}

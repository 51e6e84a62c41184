// enec_cuda_load (include/enec_cuda.h): streams read from a file or host memory into pinned
// slots by a few threads, each slot copied to the device and decoded there by one launch while
// the next slot is read. Host code only: the kernels are reached through enec_cuda_decode.
#if defined(ENEC_SIM)
#include "../sim/cuda_sim.h"
#else
#include <cuda_runtime.h>
#endif

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <fcntl.h>
#include <stdint.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "../include/enec_cuda.h"
#include "format.h"

namespace {

constexpr uint64_t kStreamHeader = 32;
constexpr uint64_t kMinStaging = 1u << 20;  // above the largest frame (FORMAT.md 4.4)
constexpr uint64_t kSmallestFrame = 64;     // a header and at least one 32-byte block
constexpr uint64_t kReadPiece = 1u << 20;   // one pread
constexpr uint64_t kReadAhead = 256u << 20; // read-ahead asked of the kernel beyond the readers

uint64_t pad32(uint64_t x) { return (x + 31) & ~uint64_t{31}; }

// One read into a slot: `length` bytes of the source at `offset` (of stream `job`), to `to`.
struct Read {
  uint64_t offset, length;
  uint8_t* to;
  size_t job;
};

// Reading threads that stay for the whole load: each call of read() splits its reads into
// pieces, shares them among the threads (the caller too) and returns when all are done.
class Readers {
 public:
  Readers(int fd, const uint8_t* host, uint32_t threads) : fd_(fd), host_(host) {
    for (uint32_t t = 1; t < threads; t++) pool_.emplace_back([this] { serve(); });
  }
  ~Readers() {
    {
      std::lock_guard<std::mutex> l(m_);
      stop_ = true;
    }
    go_.notify_all();
    for (std::thread& t : pool_) t.join();
  }

  // Returns 0, or the errno of a failed read (-1 when the source ended early); *failed_job is
  // the first stream (in job order) that could not be read.
  int read(const std::vector<Read>& reads, size_t* failed_job) {
    pieces_.clear();
    for (const Read& r : reads)
      for (uint64_t at = 0; at < r.length; at += kReadPiece)
        pieces_.push_back({r.offset + at, std::min(kReadPiece, r.length - at), r.to + at, r.job});
    next_ = 0;
    error_ = 0;
    error_job_ = SIZE_MAX;
    {
      std::lock_guard<std::mutex> l(m_);
      busy_ = pool_.size();
      generation_++;
    }
    go_.notify_all();
    work();
    std::unique_lock<std::mutex> l(m_);
    done_.wait(l, [this] { return busy_ == 0; });
    *failed_job = error_job_;
    return error_;
  }

 private:
  void serve() {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> l(m_);
        go_.wait(l, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
      }
      work();
      std::lock_guard<std::mutex> l(m_);
      if (--busy_ == 0) done_.notify_one();
    }
  }

  void work() {
    for (size_t i; (i = next_.fetch_add(1)) < pieces_.size();) {
      const Read& p = pieces_[i];
      if (host_) {
        memcpy(p.to, host_ + p.offset, p.length);
        continue;
      }
      uint64_t done = 0;
      while (done < p.length) {
        const ssize_t got = pread(fd_, p.to + done, p.length - done, (off_t)(p.offset + done));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
          std::lock_guard<std::mutex> l(fail_);
          if (p.job < error_job_) {
            error_job_ = p.job;
            error_ = got < 0 ? errno : -1;
          }
          break;
        }
        done += (uint64_t)got;
      }
    }
  }

  int fd_;
  const uint8_t* host_;
  std::vector<std::thread> pool_;
  std::vector<Read> pieces_;
  std::atomic<size_t> next_{0};
  std::mutex m_, fail_;
  std::condition_variable go_, done_;
  uint64_t generation_ = 0;
  size_t busy_ = 0;
  bool stop_ = false;
  int error_ = 0;
  size_t error_job_ = SIZE_MAX;
};

// Asks the kernel to read the streams' bytes ahead (posix_fadvise WILLNEED), at most `window`
// bytes beyond what the readers have taken, so that the storage stays busy while a slot is
// indexed and handed to the device: a cold file is read at the device's speed.
class ReadAhead {
 public:
  ReadAhead(int fd, const enec_cuda_load_job* jobs, size_t n, uint64_t window)
      : fd_(fd), jobs_(jobs), n_(n), window_(window) {
    if (fd >= 0 && n) thread_ = std::thread([this] { run(); });
  }
  ~ReadAhead() {
    {
      std::lock_guard<std::mutex> l(m_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  // The readers have taken `bytes` bytes of the streams (in job order).
  void taken(uint64_t bytes) {
    {
      std::lock_guard<std::mutex> l(m_);
      taken_ = bytes;
    }
    cv_.notify_all();
  }

 private:
  void run() {
    uint64_t ahead = 0;  // bytes of the streams (in job order) asked for
    for (size_t j = 0; j < n_; j++) {
      for (uint64_t at = 0; at < jobs_[j].length;) {
        const uint64_t len = std::min<uint64_t>(kAdvice, jobs_[j].length - at);
        {
          std::unique_lock<std::mutex> l(m_);
          cv_.wait(l, [&] { return stop_ || ahead < taken_ + window_; });
          if (stop_) return;
        }
        posix_fadvise(fd_, (off_t)(jobs_[j].offset + at), (off_t)len, POSIX_FADV_WILLNEED);
        at += len;
        ahead += len;
      }
    }
  }

  static constexpr uint64_t kAdvice = 4u << 20;
  int fd_;
  const enec_cuda_load_job* jobs_;
  size_t n_;
  uint64_t window_;
  std::thread thread_;
  std::mutex m_;
  std::condition_variable cv_;
  uint64_t taken_ = 0;
  bool stop_ = false;
};

// A staging slot: pinned bytes and their device copy, the frame index of its batch, statuses.
struct Slot {
  uint8_t* pinned = nullptr;
  uint8_t* dev = nullptr;
  enec_cuda_frame* frames = nullptr;     // pinned
  enec_cuda_frame* dev_frames = nullptr;
  uint32_t* status = nullptr;            // pinned
  uint32_t* dev_status = nullptr;
  cudaEvent_t done = nullptr;
  std::vector<uint32_t> job_of;          // the job of each frame of the batch
  uint32_t frames_used = 0;
  uint64_t decoded = 0;                  // bytes its frames decode to
  bool busy = false;
};

// A stream being loaded: its header, and how far the slots have got through it.
struct Cursor {
  size_t job = 0;
  uint64_t at = 0;      // bytes of the stream indexed (header included), or of raw bytes copied
  uint32_t frame = 0;   // next frame
  enec_cuda_stream_info info{};
  uint32_t acc[32];     // raw bytes: the h32 state (FORMAT.md section 6) of the bytes so far
};

// h32 over a raw piece that arrives in parts, each but the last a multiple of 128 bytes.
void h32_start(uint32_t* acc) {
  for (uint32_t j = 0; j < 32; j++) acc[j] = enec::kP5 + j;
}
void h32_blocks(uint32_t* acc, const uint8_t* p, uint64_t len) {
  for (uint64_t b = 0; b + 128 <= len; b += 128)
    for (int j = 0; j < 32; j++) acc[j] = enec::h32_round(acc[j], enec::rd32(p + b + 4 * j));
}
uint32_t h32_end(uint32_t* acc, const uint8_t* p, uint64_t len, uint64_t total) {
  h32_blocks(acc, p, len);
  const uint64_t rest = len % 128;
  if (rest) {
    uint8_t last[128] = {0};
    memcpy(last, p + len - rest, rest);
    h32_blocks(acc, last, 128);
  }
  return enec::h32_finish(acc, total);
}

class Loader {
 public:
  Loader(int fd, const uint8_t* host, const enec_cuda_load_job* jobs, size_t n,
         const enec_cuda_load_options& o, enec_cuda_load_report* r)
      : fd_(fd), host_(host), jobs_(jobs), n_(n), o_(o), r_(r), readers_(fd, host, o.threads),
        ahead_(host ? -1 : fd, jobs, n, std::max<uint64_t>(o.staging_bytes * o.slots, kReadAhead)) {}

  ~Loader() {
    if (stream_) cudaStreamSynchronize(stream_);
    for (Slot& s : slots_) {
      if (s.done) cudaEventDestroy(s.done);
      cudaFreeHost(s.pinned);
      cudaFreeHost(s.frames);
      cudaFreeHost(s.status);
      cudaFree(s.dev);
      cudaFree(s.dev_frames);
      cudaFree(s.dev_status);
    }
    if (stream_) cudaStreamDestroy(stream_);
  }

  int run() {
    for (size_t j = 0; j < n_; j++) {
      r_->job = (uint32_t)j;
      if (jobs_[j].kind > ENEC_CUDA_JOB_RAW) return ENEC_CUDA_ERR_ARGUMENT;
      if (jobs_[j].kind == ENEC_CUDA_JOB_STREAM && jobs_[j].length < kStreamHeader)
        return ENEC_CUDA_ERR_TRUNCATED;
      if (jobs_[j].dst_bytes && !jobs_[j].dst) return ENEC_CUDA_ERR_ARGUMENT;
    }
    r_->job = 0;
    if (n_ == 0) return ENEC_CUDA_OK;
    start_.assign(n_ + 1, 0);
    for (size_t j = 0; j < n_; j++) start_[j + 1] = start_[j] + jobs_[j].length;
    if (int rc = cuda(cudaSetDevice(o_.device))) return rc;
    if (int rc = cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking))) return rc;
    frames_cap_ = (uint32_t)(o_.staging_bytes / kSmallestFrame + 1);
    slots_.resize(o_.slots);
    for (Slot& s : slots_) {
      if (int rc = cuda(cudaHostAlloc((void**)&s.pinned, o_.staging_bytes, cudaHostAllocDefault))) return rc;
      if (int rc = cuda(cudaHostAlloc((void**)&s.frames, sizeof(enec_cuda_frame) * frames_cap_, cudaHostAllocDefault))) return rc;
      if (int rc = cuda(cudaHostAlloc((void**)&s.status, 4 * frames_cap_, cudaHostAllocDefault))) return rc;
      if (int rc = cuda(cudaMalloc((void**)&s.dev, o_.staging_bytes))) return rc;
      if (int rc = cuda(cudaMalloc((void**)&s.dev_frames, sizeof(enec_cuda_frame) * frames_cap_))) return rc;
      if (int rc = cuda(cudaMalloc((void**)&s.dev_status, 4 * frames_cap_))) return rc;
      if (int rc = cuda(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming))) return rc;
    }
    Cursor c;
    for (uint64_t k = 0; c.job < n_; k++) {
      Slot& s = slots_[k % slots_.size()];
      if (int rc = finish(s)) return rc;
      if (int rc = fill(s, c)) return rc;
    }
    for (Slot& s : slots_)
      if (int rc = finish(s)) return rc;
    return ENEC_CUDA_OK;
  }

 private:
  int cuda(cudaError_t e) {
    if (e == cudaSuccess) return ENEC_CUDA_OK;
    r_->cuda_error = (int)e;
    return ENEC_CUDA_ERR_CUDA;
  }

  // Waits for the slot's batch and checks every frame's status.
  int finish(Slot& s) {
    if (!s.busy) return ENEC_CUDA_OK;
    s.busy = false;
    if (int rc = cuda(cudaEventSynchronize(s.done))) return rc;
    for (uint32_t f = 0; f < s.frames_used; f++) {
      if (s.status[f] == 0) continue;
      r_->job = s.job_of[f];
      r_->frame = s.frames[f].index;
      r_->status = s.status[f];
      return ENEC_CUDA_ERR_DECODE;
    }
    r_->bytes_decoded += s.decoded;
    return ENEC_CUDA_OK;
  }

  // Reads the next bytes of the streams into the slot, indexes the whole frames among them,
  // and enqueues the copy, the decode and the status copy. Advances the cursor.
  int fill(Slot& s, Cursor& c) {
    // Plan: the rest of each stream in turn, each at a 32-byte multiple of the slot; only the
    // last may be cut by the slot's end (its last, partial frame is read again next time).
    struct Piece {
      size_t job;
      uint64_t at, length, slot_at;
    };
    std::vector<Piece> plan;
    std::vector<Read> reads;
    uint64_t used = 0;
    for (size_t j = c.job; j < n_ && used < o_.staging_bytes; j++) {
      const uint64_t at = j == c.job ? c.at : 0;
      uint64_t want = std::min(jobs_[j].length - at, o_.staging_bytes - used);
      if (jobs_[j].kind == ENEC_CUDA_JOB_RAW) {
        if (want < jobs_[j].length - at) want &= ~uint64_t{127};  // cut at whole h32 blocks
        if (want == 0 && jobs_[j].length > at) break;
      } else if (at == 0 && want < kStreamHeader) {
        break;  // the header comes whole, next time
      }
      plan.push_back({j, at, want, used});
      reads.push_back({jobs_[j].offset + at, want, s.pinned + used, j});
      used = pad32(used + want);
    }
    size_t failed_job = 0;
    const int err = readers_.read(reads, &failed_job);
    if (err) {
      r_->job = (uint32_t)failed_job;
      r_->os_error = err > 0 ? err : 0;
      return ENEC_CUDA_ERR_READ;
    }
    enec_cuda_batch batch;
    memset(&batch, 0, sizeof batch);
    s.job_of.clear();
    s.decoded = 0;
    const size_t job0 = c.job;
    const uint64_t at0 = c.at;
    for (const Piece& p : plan) {
      r_->job = (uint32_t)p.job;
      const enec_cuda_load_job& job = jobs_[p.job];
      const uint8_t* host = s.pinned + p.slot_at;
      if (job.kind == ENEC_CUDA_JOB_RAW) {
        // Verbatim bytes: checked on the host, copied to their place.
        if (p.at == 0) {
          c = Cursor{p.job, 0, 0, {}, {}};
          h32_start(c.acc);
          if (job.length != job.dst_bytes) return ENEC_CUDA_ERR_CAPACITY;
        }
        const bool last = p.at + p.length == job.length;
        if (last && h32_end(c.acc, host, p.length, job.length) != job.checksum) return ENEC_CUDA_ERR_CHECKSUM;
        if (!last) h32_blocks(c.acc, host, p.length);
        if (int rc = cuda(cudaMemcpyAsync((uint8_t*)job.dst + p.at, host, p.length, cudaMemcpyHostToDevice, stream_)))
          return rc;
        s.decoded += p.length;
        c.at += p.length;
        if (!last) break;
        c = Cursor{p.job + 1, 0, 0, {}, {}};
        continue;
      }
      uint64_t skip = 0;
      if (p.at == 0) {
        c = Cursor{p.job, 0, 0, {}, {}};
        if (int rc = enec_cuda_stream_info_read(host, kStreamHeader, &c.info)) return rc;
        if (c.info.decoded_bytes != job.dst_bytes) return ENEC_CUDA_ERR_CAPACITY;
        skip = kStreamHeader;
        c.at = kStreamHeader;
      }
      uint32_t done = 0;
      size_t bytes = 0;
      const int rc = enec_cuda_index_frames(&c.info, c.frame, host + skip, p.length - skip,
                                            s.dev + p.slot_at + skip, job.dst, s.frames,
                                            frames_cap_, &batch, &done, &bytes);
      s.job_of.resize(batch.frames, (uint32_t)p.job);
      c.frame += done;
      c.at += bytes;
      if (rc) {
        r_->frame = c.frame;
        return rc;
      }
      if (c.frame == c.info.frame_count) {
        if (c.at != job.length) return ENEC_CUDA_ERR_TRAILING;
        c = Cursor{p.job + 1, 0, 0, {}, {}};
        continue;
      }
      // Frames are left: the slot ended inside this stream (or it is truncated).
      if (p.at + p.length == job.length) {
        r_->frame = c.frame;
        return ENEC_CUDA_ERR_TRUNCATED;
      }
      break;
    }
    // No progress (a frame larger than the slot, which the header checks rule out) would read
    // the same bytes forever.
    if (c.job == job0 && c.at == at0) {
      r_->frame = c.frame;
      return ENEC_CUDA_ERR_FRAME;
    }
    r_->job = 0;
    r_->batches++;
    for (const Read& x : reads) r_->bytes_read += x.length;
    ahead_.taken(start_[c.job] + c.at);
    s.frames_used = batch.frames;
    s.decoded += batch.decoded_bytes;
    if (batch.frames == 0) {  // raw bytes and headers of empty streams only
      if (int rc = cuda(cudaEventRecord(s.done, stream_))) return rc;
      s.busy = true;
      return ENEC_CUDA_OK;
    }
    if (int rc = cuda(cudaMemcpyAsync(s.dev, s.pinned, used, cudaMemcpyHostToDevice, stream_))) return rc;
    if (int rc = cuda(cudaMemcpyAsync(s.dev_frames, s.frames, sizeof(enec_cuda_frame) * batch.frames,
                                      cudaMemcpyHostToDevice, stream_)))
      return rc;
    if (int rc = enec_cuda_decode(s.dev_frames, &batch, o_.verify_checksums, s.dev_status, stream_)) {
      r_->cuda_error = (int)cudaGetLastError();
      return rc;
    }
    if (int rc = cuda(cudaMemcpyAsync(s.status, s.dev_status, 4 * batch.frames, cudaMemcpyDeviceToHost, stream_)))
      return rc;
    if (int rc = cuda(cudaEventRecord(s.done, stream_))) return rc;
    s.busy = true;
    return ENEC_CUDA_OK;
  }

  int fd_;
  const uint8_t* host_;
  const enec_cuda_load_job* jobs_;
  size_t n_;
  enec_cuda_load_options o_;
  enec_cuda_load_report* r_;
  Readers readers_;
  ReadAhead ahead_;
  cudaStream_t stream_ = nullptr;
  std::vector<Slot> slots_;
  uint32_t frames_cap_ = 0;
  std::vector<uint64_t> start_;  // where each stream starts in the streams' bytes, in job order
};

}  // namespace

extern "C" int enec_cuda_load(int fd, const void* host, const enec_cuda_load_job* jobs, size_t n_jobs,
                              const enec_cuda_load_options* options, enec_cuda_load_report* report) {
  enec_cuda_load_report local;
  enec_cuda_load_report* r = report ? report : &local;
  memset(r, 0, sizeof *r);
  if (n_jobs && !jobs) return ENEC_CUDA_ERR_ARGUMENT;
  enec_cuda_load_options o;
  memset(&o, 0, sizeof o);
  o.verify_checksums = 1;
  if (options) o = *options;
  if (o.threads == 0) o.threads = 8;
  if (o.slots == 0) o.slots = 4;
  if (o.staging_bytes == 0) o.staging_bytes = 16u << 20;
  if (o.slots < 2 || o.slots > 64 || o.threads > 1024 || o.staging_bytes < kMinStaging ||
      o.staging_bytes > (uint64_t{1} << 34) || (!host && fd < 0))
    return ENEC_CUDA_ERR_ARGUMENT;
  // No more staging than the streams need (one tensor at a time stays cheap).
  uint64_t total = 0;
  for (size_t j = 0; j < n_jobs; j++) total += pad32(jobs[j].length);
  o.staging_bytes = std::min(o.staging_bytes, std::max(kMinStaging, total)) & ~uint64_t{31};
  Loader loader(fd, (const uint8_t*)host, jobs, n_jobs, o, r);
  return loader.run();
}

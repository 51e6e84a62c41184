// A small CPU model of the CUDA subset the enec kernels use, to run them bit-exactly where no GPU
// is (build with -DENEC_SIM, compile the .cu files as C++). Every thread of a block is a fiber
// (ucontext); blocks run one after another. The model is strict where the kernels could go
// wrong: barriers (__syncthreads, named bar.sync/bar.arrive) count arrivals and fail on a
// count mismatch, a deadlock, or arrivals left pending at block exit; warp intrinsics require all
// 32 lanes; threads resume in a random order at every barrier (races show up as wrong bytes);
// shared and device memory start as garbage.
//
// What it proves: the kernels' logic (indexing, scans, barriers, bytes). What it does not: that
// nvcc compiles them, their speed, or memory-model subtleties beyond barrier ordering.
#pragma once

#include <setjmp.h>
#include <ucontext.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __align__(n) alignas(n)
#define __launch_bounds__(...)

struct uint4 {
  unsigned x, y, z, w;
};
struct uint2 {
  unsigned x, y;
};
inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return uint4{a, b, c, d}; }
inline uint2 make_uint2(unsigned a, unsigned b) { return uint2{a, b}; }
struct dim3 {
  unsigned x, y, z;
  dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct sim_uint3 {
  unsigned x, y, z;
};

namespace sim {

[[noreturn]] inline void fail(const char* what) {
  fprintf(stderr, "cuda_sim: %s\n", what);
  abort();
}

struct Fiber {
  ucontext_t ctx;  // only to start the fiber; switches use _setjmp/_longjmp (no syscalls)
  jmp_buf jb;
  bool started = false;
  std::vector<char> stack;
  bool done = false, blocked = false;
  sim_uint3 tid{0, 0, 0};
  unsigned linear = 0;
  unsigned warp_calls = 0;
};

struct Barrier {
  unsigned arrived = 0, expected = 0;
  std::vector<int> waiters;
};

struct Warp {
  uint64_t slot[2][32];
  unsigned arrived = 0;
  std::vector<int> waiters;
};

struct State {
  std::vector<Fiber> fibers;
  ucontext_t main;
  jmp_buf main_jb;
  int cur = -1;
  sim_uint3 bid{0, 0, 0}, bdim{1, 1, 1}, gdim{1, 1, 1};
  std::function<void()> body;
  Barrier bars[16];
  std::vector<Warp> warps;
  std::vector<uint8_t> dsmem;
  std::mt19937 rng{12345};
  int last_error = 0;
  size_t smem_limit = 48 * 1024;
};

inline State& st() {
  static State s;
  return s;
}

inline Fiber& me() { return st().fibers[st().cur]; }

inline void to_scheduler() {
  State& s = st();
  if (!_setjmp(s.fibers[s.cur].jb)) _longjmp(s.main_jb, 1);
}

inline void block_current() {
  State& s = st();
  s.fibers[s.cur].blocked = true;
  to_scheduler();
}

inline void yield() {
  State& s = st();
  if (s.cur < 0) return;
  to_scheduler();
}

inline void release(std::vector<int>& waiters) {
  for (int w : waiters) st().fibers[w].blocked = false;
  waiters.clear();
}

inline void bar_arrive_impl(unsigned id, unsigned n, bool wait) {
  State& s = st();
  if (id >= 16) fail("barrier id out of range");
  if (n == 0 || n % 32 || n > s.bdim.x) fail("barrier thread count not a multiple of 32 / too large");
  Barrier& b = s.bars[id];
  if (b.arrived == 0) b.expected = n;
  else if (b.expected != n) fail("barrier used with two thread counts at once");
  b.arrived++;
  if (b.arrived == n) {
    b.arrived = 0;
    release(b.waiters);
  } else if (wait) {
    b.waiters.push_back(s.cur);
    block_current();
  }
}

inline void bar_sync(unsigned id, unsigned n) { bar_arrive_impl(id, n, true); }
inline void bar_arrive(unsigned id, unsigned n) { bar_arrive_impl(id, n, false); }
inline void syncthreads() { bar_sync(0, st().bdim.x); }

// All 32 lanes of the caller's warp exchange one 64-bit value; returns the 32 values.
inline const uint64_t* warp_exchange(unsigned mask, uint64_t v) {
  if (mask != 0xffffffffu) fail("warp intrinsic with a partial mask");
  State& s = st();
  Fiber& f = s.fibers[s.cur];
  Warp& w = s.warps[f.linear / 32];
  const unsigned par = f.warp_calls++ & 1;
  w.slot[par][f.linear % 32] = v;
  w.arrived++;
  if (w.arrived == 32) {
    w.arrived = 0;
    release(w.waiters);
  } else {
    w.waiters.push_back(s.cur);
    block_current();
  }
  return w.slot[par];
}

inline void* dyn_smem() { return st().dsmem.data(); }

inline void fiber_entry() {
  State& s = st();
  s.body();
  s.fibers[s.cur].done = true;
  _longjmp(s.main_jb, 1);
}

inline void run_block() {
  State& s = st();
  const unsigned n = s.bdim.x * s.bdim.y * s.bdim.z;
  if (n % 32) fail("block size not a multiple of 32");
  s.fibers.resize(n);
  s.warps.assign(n / 32, Warp());
  for (unsigned i = 0; i < n; i++) {
    Fiber& f = s.fibers[i];
    f.stack.resize(256 * 1024);
    f.done = f.blocked = false;
    f.linear = i;
    f.tid = sim_uint3{i % s.bdim.x, (i / s.bdim.x) % s.bdim.y, i / (s.bdim.x * s.bdim.y)};
    f.warp_calls = 0;
    f.started = false;
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack.data();
    f.ctx.uc_stack.ss_size = f.stack.size();
    f.ctx.uc_link = nullptr;
    makecontext(&f.ctx, fiber_entry, 0);
  }
  std::vector<int> order(n);
  while (true) {
    order.clear();
    bool all_done = true;
    for (unsigned i = 0; i < n; i++) {
      if (!s.fibers[i].done) all_done = false;
      if (!s.fibers[i].done && !s.fibers[i].blocked) order.push_back((int)i);
    }
    if (all_done) break;
    if (order.empty()) fail("deadlock: every live thread waits at a barrier");
    std::shuffle(order.begin(), order.end(), s.rng);
    for (int i : order) {
      if (s.fibers[i].done || s.fibers[i].blocked) continue;
      s.cur = i;
      Fiber& f = s.fibers[i];
      if (!_setjmp(s.main_jb)) {
        if (!f.started) {
          f.started = true;
          swapcontext(&s.main, &f.ctx);
        } else {
          _longjmp(f.jb, 1);
        }
      }
    }
  }
  s.cur = -1;
  for (auto& b : s.bars)
    if (b.arrived) fail("block exited with barrier arrivals pending");
  for (auto& w : s.warps)
    if (w.arrived) fail("block exited inside a warp intrinsic");
}

inline void launch(dim3 grid, dim3 block, size_t smem, std::function<void()> body) {
  State& s = st();
  if (smem > s.smem_limit) fail("dynamic shared memory above the limit set by cudaFuncSetAttribute");
  if (block.x * block.y * block.z > 1024) fail("more than 1024 threads per block");
  s.body = std::move(body);
  s.bdim = sim_uint3{block.x, block.y, block.z};
  s.gdim = sim_uint3{grid.x, grid.y, grid.z};
  for (unsigned z = 0; z < grid.z; z++)
    for (unsigned y = 0; y < grid.y; y++)
      for (unsigned x = 0; x < grid.x; x++) {
        s.bid = sim_uint3{x, y, z};
        s.dsmem.assign(smem + 16, 0xA5);
        run_block();
      }
  s.smem_limit = 48 * 1024;
}

}  // namespace sim

#define threadIdx (sim::me().tid)
#define blockIdx (sim::st().bid)
#define blockDim (sim::st().bdim)
#define gridDim (sim::st().gdim)

inline void __syncthreads() { sim::syncthreads(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { sim::warp_exchange(mask, 0); }
inline void __threadfence() {}
inline void __threadfence_block() {}
inline void __nanosleep(unsigned) { sim::yield(); }

template <class T>
inline uint64_t sim_bits(T v) {
  static_assert(sizeof(T) <= 8, "shuffle of a type wider than 8 bytes");
  uint64_t b = 0;
  memcpy(&b, &v, sizeof(T));
  return b;
}
template <class T>
inline T sim_from(uint64_t b) {
  T v;
  memcpy(&v, &b, sizeof(T));
  return v;
}
inline unsigned sim_lane() { return sim::me().linear % 32; }

template <class T>
inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  (void)width;
  return sim_from<T>(sim::warp_exchange(mask, sim_bits(v))[src & 31]);
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = 32) {
  (void)width;
  const unsigned lane = sim_lane();
  const uint64_t* s = sim::warp_exchange(mask, sim_bits(v));
  return lane >= d ? sim_from<T>(s[lane - d]) : v;
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32) {
  (void)width;
  const unsigned lane = sim_lane();
  const uint64_t* s = sim::warp_exchange(mask, sim_bits(v));
  return lane + d < 32 ? sim_from<T>(s[lane + d]) : v;
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T v, int x, int width = 32) {
  (void)width;
  return sim_from<T>(sim::warp_exchange(mask, sim_bits(v))[(sim_lane() ^ x) & 31]);
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
  const uint64_t* s = sim::warp_exchange(mask, pred ? 1 : 0);
  unsigned b = 0;
  for (int i = 0; i < 32; i++) b |= (s[i] ? 1u : 0u) << i;
  return b;
}
inline int __any_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) != 0; }
inline int __all_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) == 0xffffffffu; }
inline unsigned __reduce_or_sync(unsigned mask, unsigned v) {
  const uint64_t* s = sim::warp_exchange(mask, v);
  unsigned r = 0;
  for (int i = 0; i < 32; i++) r |= (unsigned)s[i];
  return r;
}
inline unsigned __reduce_add_sync(unsigned mask, unsigned v) {
  const uint64_t* s = sim::warp_exchange(mask, v);
  unsigned r = 0;
  for (int i = 0; i < 32; i++) r += (unsigned)s[i];
  return r;
}
inline unsigned __match_any_sync(unsigned mask, unsigned v) {
  const uint64_t* s = sim::warp_exchange(mask, v);
  unsigned b = 0;
  for (int i = 0; i < 32; i++) b |= (s[i] == v ? 1u : 0u) << i;
  return b;
}

inline int __popc(unsigned v) { return __builtin_popcount(v); }
inline int __popcll(unsigned long long v) { return __builtin_popcountll(v); }
inline int __clz(unsigned v) { return v ? __builtin_clz(v) : 32; }
inline int __ffs(unsigned v) { return __builtin_ffs((int)v); }

template <class T>
inline T atomicAdd(T* p, T v) {
  T o = *p;
  *p = o + v;
  return o;
}
template <class T>
inline T atomicOr(T* p, T v) {
  T o = *p;
  *p = o | v;
  return o;
}
template <class T>
inline T atomicMin(T* p, T v) {
  T o = *p;
  *p = v < o ? v : o;
  return o;
}
template <class T>
inline T atomicMax(T* p, T v) {
  T o = *p;
  *p = v > o ? v : o;
  return o;
}

// The CUDA runtime subset the host code uses. Device memory is host memory here.
typedef int cudaError_t;
typedef void* cudaStream_t;
typedef void* cudaEvent_t;
enum { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2 };
enum cudaMemcpyKind {
  cudaMemcpyHostToHost,
  cudaMemcpyHostToDevice,
  cudaMemcpyDeviceToHost,
  cudaMemcpyDeviceToDevice,
  cudaMemcpyDefault
};
enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize,
  cudaFuncAttributePreferredSharedMemoryCarveout
};

inline cudaError_t cudaMalloc(void** p, size_t n) {
  size_t r = (n + 255) & ~(size_t)255;
  *p = aligned_alloc(256, r ? r : 256);
  if (!*p) return cudaErrorMemoryAllocation;
  memset(*p, 0xCD, r ? r : 256);
  return cudaSuccess;
}
template <class T>
inline cudaError_t cudaMalloc(T** p, size_t n) {
  return cudaMalloc((void**)p, n);
}
inline cudaError_t cudaFree(void* p) {
  free(p);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind) {
  memmove(d, s, n);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind k, cudaStream_t = 0) {
  return cudaMemcpy(d, s, n, k);
}
inline cudaError_t cudaMemset(void* d, int v, size_t n) {
  memset(d, v, n);
  return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void* d, int v, size_t n, cudaStream_t = 0) { return cudaMemset(d, v, n); }
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
inline cudaError_t cudaGetLastError() { return cudaSuccess; }
inline const char* cudaGetErrorString(cudaError_t) { return "cuda_sim error"; }
template <class F>
inline cudaError_t cudaFuncSetAttribute(F, cudaFuncAttribute a, int v) {
  if (a != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaSuccess;
  if (v > 227 * 1024) return cudaErrorInvalidValue;
  sim::st().smem_limit = (size_t)v > 48 * 1024 ? (size_t)v : 48 * 1024;
  return cudaSuccess;
}

// Events, streams and device properties (for compiling the benchmark on the CPU; no timing).
inline cudaError_t cudaEventCreate(cudaEvent_t* e) {
  *e = nullptr;
  return cudaSuccess;
}
inline cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t = 0) { return cudaSuccess; }
inline cudaError_t cudaEventDestroy(cudaEvent_t) { return cudaSuccess; }
inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t, cudaEvent_t) {
  *ms = 1.0f;
  return cudaSuccess;
}
inline cudaError_t cudaStreamCreate(cudaStream_t* s) {
  *s = nullptr;
  return cudaSuccess;
}
// Pinned memory, devices, streams and events as the loader uses them (everything synchronous).
enum { cudaHostAllocDefault = 0, cudaStreamNonBlocking = 1, cudaEventDisableTiming = 2 };
inline cudaError_t cudaHostAlloc(void** p, size_t n, unsigned) {
  *p = malloc(n ? n : 1);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
inline cudaError_t cudaFreeHost(void* p) {
  free(p);
  return cudaSuccess;
}
inline cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : cudaErrorInvalidValue; }
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) {
  *s = nullptr;
  return cudaSuccess;
}
inline cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned) {
  *e = nullptr;
  return cudaSuccess;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
struct cudaFuncAttributes {
  int numRegs;
};
template <class F>
inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* a, F) {
  a->numRegs = 0;
  return cudaSuccess;
}

struct cudaDeviceProp {
  char name[256];
  int multiProcessorCount;
  int l2CacheSize;
  size_t totalGlobalMem;
};
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int) {
  snprintf(p->name, sizeof p->name, "cuda_sim (CPU model)");
  p->multiProcessorCount = 1;
  p->l2CacheSize = 0;
  p->totalGlobalMem = 0;
  return cudaSuccess;
}

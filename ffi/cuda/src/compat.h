// The few device primitives the kernels use beyond plain CUDA C++, with a CPU model of each for
// the simulator build (-DENEC_SIM, see sim/cuda_sim.h): named barriers, byte_perm, funnel shifts,
// cp.async, look-back loads/stores, dynamic shared memory, and the kernel launch.
#pragma once

#if defined(ENEC_SIM)
#include "../sim/cuda_sim.h"
#else
#include <cuda_runtime.h>
#endif

#include <stdint.h>

#define ENEC_DEV __device__ __forceinline__
// Out of line on the GPU: a cold path whose registers stay out of its caller's loops.
#if defined(ENEC_SIM)
#define ENEC_DEV_OUTLINE __device__
#else
#define ENEC_DEV_OUTLINE __device__ __noinline__
#endif

namespace enec {
namespace dev {

constexpr unsigned kFull = 0xffffffffu;

#if defined(ENEC_SIM)

ENEC_DEV void bar_sync(unsigned id, unsigned n) { sim::bar_sync(id, n); }
ENEC_DEV void bar_arrive(unsigned id, unsigned n) { sim::bar_arrive(id, n); }
template <unsigned ID>
ENEC_DEV void bar_sync_c(unsigned n) { sim::bar_sync(ID, n); }
template <unsigned ID>
ENEC_DEV void bar_arrive_c(unsigned n) { sim::bar_arrive(ID, n); }
ENEC_DEV uint32_t byte_perm(uint32_t a, uint32_t b, uint32_t s) {
  const uint64_t v = ((uint64_t)b << 32) | a;
  uint32_t r = 0;
  for (int i = 0; i < 4; i++) r |= (uint32_t)((v >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
  return r;
}
ENEC_DEV uint32_t funnel_r(uint32_t lo, uint32_t hi, uint32_t sh) {
  return (uint32_t)((((uint64_t)hi << 32) | lo) >> (sh & 31));
}
ENEC_DEV void cp_async16(void* smem, const void* gmem) { memcpy(smem, gmem, 16); }
ENEC_DEV void cp_async_wait_all() {}
ENEC_DEV void prefetch_l1(const void*) {}
ENEC_DEV uint64_t ld_volatile_u64(const uint64_t* p) { return *(const volatile uint64_t*)p; }
ENEC_DEV void st_volatile_u64(uint64_t* p, uint64_t v) { *(volatile uint64_t*)p = v; }
ENEC_DEV void spin_pause() { sim::yield(); }
ENEC_DEV uint8_t* dyn_smem() { return (uint8_t*)sim::dyn_smem(); }
#define ENEC_LAUNCH(kernel, grid, block, smem, stream, ...) \
  ((void)(stream), sim::launch(grid, block, smem, [=]() { kernel(__VA_ARGS__); }))

#else

ENEC_DEV void bar_sync(unsigned id, unsigned n) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory");
}
ENEC_DEV void bar_arrive(unsigned id, unsigned n) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(n) : "memory");
}
// Barrier ids as immediates, so ptxas counts only the barriers really used (occupancy).
template <unsigned ID>
ENEC_DEV void bar_sync_c(unsigned n) {
  asm volatile("bar.sync %0, %1;" ::"n"(ID), "r"(n) : "memory");
}
template <unsigned ID>
ENEC_DEV void bar_arrive_c(unsigned n) {
  asm volatile("bar.arrive %0, %1;" ::"n"(ID), "r"(n) : "memory");
}
ENEC_DEV uint32_t byte_perm(uint32_t a, uint32_t b, uint32_t s) { return __byte_perm(a, b, s); }
ENEC_DEV uint32_t funnel_r(uint32_t lo, uint32_t hi, uint32_t sh) { return __funnelshift_r(lo, hi, sh); }
ENEC_DEV void cp_async16(void* smem, const void* gmem) {
  unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
}
ENEC_DEV void cp_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }
// Starts bringing a line into L1 without a register to wait on (generic address).
ENEC_DEV void prefetch_l1(const void* p) { asm volatile("prefetch.L1 [%0];" ::"l"(p)); }
ENEC_DEV uint64_t ld_volatile_u64(const uint64_t* p) { return *(const volatile uint64_t*)p; }
ENEC_DEV void st_volatile_u64(uint64_t* p, uint64_t v) { *(volatile uint64_t*)p = v; }
ENEC_DEV void spin_pause() { __nanosleep(64); }
ENEC_DEV uint8_t* dyn_smem() {
  extern __shared__ __align__(16) uint8_t enec_dyn_smem_[];
  return enec_dyn_smem_;
}
#define ENEC_LAUNCH(kernel, grid, block, smem, stream, ...) \
  kernel<<<grid, block, smem, stream>>>(__VA_ARGS__)

#endif

}  // namespace dev
}  // namespace enec

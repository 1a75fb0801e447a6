// Raw PTX wrappers for sm_90 bulk tensor copies (TMA), mbarriers and thread-block clusters:
// what the TMA pipeline of gemm_sm90a_tma.cuh is made of.
#pragma once
#include "apnn_types.cuh"

namespace apnn {

// A CUtensorMap (cuda.h), opaque here: 128 bytes, 64-byte aligned, passed by value as a
// __grid_constant__ kernel parameter so that its address is a valid TMA operand.
struct alignas(64) TmaMap {
  u64 opaque[16];
};

}  // namespace apnn

namespace apnn::ptx {

__device__ __forceinline__ u32 cluster_ctarank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}

// All threads of all blocks of the cluster; release/acquire orders shared memory (and
// mbarrier initialization) across the cluster's blocks.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void mbar_init(u32 bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// Makes mbarrier initializations visible to the other blocks of the cluster (and to TMA).
__device__ __forceinline__ void fence_mbar_init() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }

// One arrival that also announces `bytes` more to come from bulk copies in this phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

// One arrival on the barrier at the same offset in block `cta` of the cluster (itself too).
// The default semantics (release at CTA scope), as CUTLASS's ClusterBarrier::arrive: the
// arriving warps only read shared memory through wgmma, already complete, and a
// cluster-scope release made every arrival wait on a memory barrier (ERRBAR: 35% of the
// consumers' stall samples, session 4 device call 9).
__device__ __forceinline__ void mbar_arrive_cluster(u32 bar, u32 cta) {
  asm volatile(
      "{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [ra];\n}\n" ::"r"(bar),
      "r"(cta)
      : "memory");
}

// Spins until the phase of parity `parity` has completed (a fresh barrier is in phase 0,
// so waiting for parity 1 returns at once). The default semantics, as CUTLASS's waits.
__device__ __forceinline__ void mbar_wait(u32 bar, u32 parity) {
  asm volatile(
      "{\n.reg .pred done;\nwait_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_%=;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}

// L2 policies of the bulk copies, made once per loop by the issuing thread and passed to
// each copy: operand tiles, read by many blocks, stay (evict_last); output boxes, written
// once, go first (evict_first; the cp.async core's staged stores use them too). Measured on
// the TMA core in session 6 at 4096x4096x8192 (NOTES-wgmma.md): w1a1 43.2 -> 39.9 us, w1a2
// 62.0 -> 60.2, w2a2 94.4 -> 93.5.
__device__ __forceinline__ u64 policy_evict_last() {
  u64 p;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(p));
  return p;
}
__device__ __forceinline__ u64 policy_evict_first() {
  u64 p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
  return p;
}

// A 3-D box of `map` at (c0, c1, c2) into shared memory at dst, completing on mbarrier bar.
__device__ __forceinline__ void tma_load_3d(u32 dst, const TmaMap* map, int c0, int c1, int c2, u32 bar, u64 policy) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%2, "
      "%3, %4}], [%5], %6;\n" ::"r"(dst),
      "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "l"(policy)
      : "memory");
}

// A 4-D box of `map` at (c0, c1, c2, c3) into shared memory at dst, completing on mbarrier bar.
__device__ __forceinline__ void tma_load_4d(u32 dst, const TmaMap* map, int c0, int c1, int c2, int c3, u32 bar,
                                            u64 policy) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%2, "
      "%3, %4, %5}], [%6], %7;\n" ::"r"(dst),
      "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar), "l"(policy)
      : "memory");
}

// The same box into dst (and onto bar's complete_tx) of every block of the cluster in `mask`.
__device__ __forceinline__ void tma_load_3d_multicast(u32 dst, const TmaMap* map, int c0, int c1, int c2, u32 bar,
                                                      unsigned short mask, u64 policy) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster.L2::cache_hint "
      "[%0], [%1, {%2, %3, %4}], [%5], %6, %7;\n" ::"r"(dst),
      "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "h"(mask), "l"(policy)
      : "memory");
}

__device__ __forceinline__ void prefetch_tma_map(const TmaMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(map) : "memory");
}

}  // namespace apnn::ptx

namespace apnn::ptx {

// A 2-D box of shared memory at src to `map` at (c0, c1), as one bulk group of this thread;
// elements outside the tensor are not written.
__device__ __forceinline__ void tma_store_2d(const TmaMap* map, int c0, int c1, u32 src, u64 policy) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group.L2::cache_hint [%0, {%1, %2}], [%3], %4;\n" ::"l"(map),
               "r"(c0), "r"(c1), "r"(src), "l"(policy)
               : "memory");
}
// A 3-D box of shared memory at src to `map` at (c0, c1, c2), likewise.
__device__ __forceinline__ void tma_store_3d(const TmaMap* map, int c0, int c1, int c2, u32 src) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];\n" ::"l"(map), "r"(c0),
               "r"(c1), "r"(c2), "r"(src)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// This thread's bulk groups but the newest N have finished reading their shared memory.
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
// ... and finished writing global memory.
template <int N>
__device__ __forceinline__ void bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}

// Per-thread register budget of the executing warpgroup (every warp of it runs the same one):
// a producer gives registers back to the block's pool, the consumers take them.
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}

// Named barrier `id` (1..15; 0 is __syncthreads) over `threads` threads, e.g. one warpgroup.
__device__ __forceinline__ void named_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
// An arrival on named barrier `id` that does not wait (the waiting side calls named_barrier).
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

}  // namespace apnn::ptx

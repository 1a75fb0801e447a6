// Raw PTX wrappers for sm_80+: asynchronous copies and the binary MMA.
#pragma once
#include "apnn_types.cuh"

namespace apnn::ptx {

__device__ __forceinline__ u32 smem_addr(const void* p) {
  u64 a;
  asm("cvta.to.shared.u64 %0, %1;\n" : "=l"(a) : "l"(p));
  return static_cast<u32>(a);
}

// 16-byte global->shared copy; src_bytes = 0 writes zeros (out-of-range rows and K tails).
__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem)), "l"(gmem), "r"(src_bytes));
}
// The same through L1 (.ca): a conv's gather reads each input pixel once per kernel
// position it falls under, and L1 serves the repeats that L2 would otherwise (session 11).
__device__ __forceinline__ void cp_async_16_l1(void* smem, const void* gmem, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem)), "l"(gmem), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// D += popc(A & B) over 256 bits of K: A 16x256 (a0..a3), B 256x8 (b0, b1), D 16x8 int32.
// AND only: on Hopper the XOR form is emulated and 6.6x slower.
__device__ __forceinline__ void bmma_and_16x8x256(i32 (&d)[4], u32 a0, u32 a1, u32 a2, u32 a3, u32 b0, u32 b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

}  // namespace apnn::ptx

// Fixed-width types and small helpers for generated kernels. The generated
// source includes no CUDA or standard headers so that NVRTC compiles it fast.
#pragma once

namespace apnn {

typedef unsigned int u32;
typedef int i32;
typedef short i16;
typedef unsigned long long u64;
typedef long long i64;

struct alignas(16) u32x4 { u32 x, y, z, w; };
struct alignas(8) u32x2 { u32 x, y; };
struct alignas(8) i32x2 { i32 x, y; };

// Encoding codes, the same numbering as the host's apnn::Encoding.
enum : int { kEncUnsigned = 0, kEncPm1 = 1, kEncSigned = 2 };

// alpha_s of include/apnn/encoding.h: the weight of bit plane s.
__device__ __forceinline__ constexpr i32 plane_weight(int bits, int enc, int s) {
  return enc == kEncPm1 ? (1 << (s + 1)) : (enc == kEncSigned && s == bits - 1 ? -(1 << s) : (1 << s));
}

// The plane bits of a value (bit s = b_s); the value is valid by contract.
template <int BITS, int ENC>
__device__ __forceinline__ u32 value_code(i32 v) {
  constexpr u32 kMask = (1u << BITS) - 1u;
  return ENC == kEncPm1 ? (static_cast<u32>(v + static_cast<i32>(kMask)) >> 1) & kMask : static_cast<u32>(v) & kMask;
}

// The sm_90a cores' accumulators, [sets][row slices][8-column chunks][4]: pins them in place,
// so that the compiler may not move a read of them across this point (a read hoisted above a
// wgmma wait would serialize every wgmma, ptxas C7514).
template <int G, int M, int N>
__device__ __forceinline__ void fence_acc(i32 (&acc)[G][M][N][4]) {
#pragma unroll
  for (int g = 0; g < G; ++g)
#pragma unroll
    for (int m = 0; m < M; ++m)
#pragma unroll
      for (int n = 0; n < N; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(acc[g][m][n][e])::"memory");
}

// Whether plane pair (s, t) is the first, in issue order, of its accumulator set (traits T's
// group_of): its wgmma at a tile's first K step overwrites instead of accumulating (no zeroing
// moves, which would make ptxas wait for the wgmmas in flight).
template <class T>
__device__ constexpr bool first_of_group(int s, int t) {
  for (int i = 0; i < s * T::kXBits + t; ++i)
    if (T::group_of(i / T::kXBits, i % T::kXBits) == T::group_of(s, t)) return false;
  return true;
}

}  // namespace apnn

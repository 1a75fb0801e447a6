// Fixed-width types and small helpers for generated kernels. The generated
// source includes no CUDA or standard headers so that NVRTC compiles it fast.
#pragma once

namespace apnn {

typedef unsigned int u32;
typedef int i32;
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

}  // namespace apnn

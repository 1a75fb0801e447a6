// Bit decomposition: int16 values (row-major rows x K) -> BITS packed 1-bit planes
// in the layout of include/apnn/bitplane_layout.h, plus each row's plane-weighted
// popcount, which the GEMM epilogue uses for the +-1 / offset corrections.
#pragma once
#include "apnn_types.cuh"

namespace apnn {

// The paper's packing step: the warp's 32 lanes each hold one value's code; a ballot per
// plane turns their bits into one word, which lane s stores at planes[s * plane_stride +
// offset]. Returns the 32 values' plane-weighted popcount (the same in every lane).
template <int BITS, int ENC>
__device__ __forceinline__ i32 ballot_planes(u32 code, int lane, u32* __restrict__ planes, i64 plane_stride, i64 offset) {
  i32 sum = 0;
#pragma unroll
  for (int s = 0; s < BITS; ++s) {
    const u32 word = __ballot_sync(0xffffffffu, (code >> s) & 1u);
    if (lane == s) planes[s * plane_stride + offset] = word;
    sum += plane_weight(BITS, ENC, s) * __popc(word);
  }
  return sum;
}

// One warp per row.
template <int BITS, int ENC>
__device__ __forceinline__ void pack_bitplanes(const short* __restrict__ src, i64 rows, int K, int ld,
                                               u32* __restrict__ planes, i32* __restrict__ rowsum) {
  const int lane = threadIdx.x & 31;
  const i64 row = static_cast<i64>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (row >= rows) return;  // uniform per warp: the ballots below see full warps
  const short* in = src + row * K;
  i32 sum = 0;
  for (int w = 0; w < ld; ++w) {
    const int k = w * 32 + lane;
    const u32 code = k < K ? value_code<BITS, ENC>(in[k]) : 0u;  // K tail and padding words are zero
    sum += ballot_planes<BITS, ENC>(code, lane, planes, rows * ld, row * ld + w);
  }
  if (lane == 0) rowsum[row] = sum;
}

}  // namespace apnn

namespace apnn {

// APConv activations: NCHW int16 -> channel-major planes (conv_layout.h), one warp per
// pixel; pixsum = the pixel's plane-weighted popcount over all channels.
template <int BITS, int ENC>
__device__ __forceinline__ void pack_conv_activations(const short* __restrict__ src, int N, int C, int H, int W, int CW,
                                                      u32* __restrict__ planes, i32* __restrict__ pixsum) {
  const int lane = threadIdx.x & 31;
  const i64 pixel = static_cast<i64>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
  const i64 HW = static_cast<i64>(H) * W;
  if (pixel >= N * HW) return;  // uniform per warp
  const i64 n = pixel / HW, hw = pixel % HW;
  i32 sum = 0;
  for (int cw = 0; cw < CW; ++cw) {
    const int c = cw * 32 + lane;
    const u32 code = c < C ? value_code<BITS, ENC>(src[(n * C + c) * HW + hw]) : 0u;
    sum += ballot_planes<BITS, ENC>(code, lane, planes, HW * CW, (n * BITS * HW + hw) * CW + cw);
  }
  if (lane == 0) pixsum[pixel] = sum;
}

// APConv weights: OCKhKw int16 -> planes [s][o][kh][kw][cw], one warp per (o, kh, kw);
// possum per position, rowsum per output channel (rowsum must be zeroed first).
template <int BITS, int ENC>
__device__ __forceinline__ void pack_conv_weights(const short* __restrict__ src, int O, int C, int KHW, int CW,
                                                  u32* __restrict__ planes, i32* __restrict__ possum,
                                                  i32* __restrict__ rowsum) {
  const int lane = threadIdx.x & 31;
  const i64 item = static_cast<i64>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (item >= static_cast<i64>(O) * KHW) return;  // uniform per warp
  const i64 o = item / KHW, pos = item % KHW;
  i32 sum = 0;
  for (int cw = 0; cw < CW; ++cw) {
    const int c = cw * 32 + lane;
    const u32 code = c < C ? value_code<BITS, ENC>(src[(o * C + c) * KHW + pos]) : 0u;
    sum += ballot_planes<BITS, ENC>(code, lane, planes, static_cast<i64>(O) * KHW * CW, (o * KHW + pos) * CW + cw);
  }
  if (lane == 0) {
    possum[item] = sum;
    atomicAdd(rowsum + o, sum);
  }
}

// Inverse of pack_conv_activations (tests and debugging): planes -> NCHW values.
template <int BITS, int ENC>
__device__ __forceinline__ void unpack_conv_activations(const u32* __restrict__ planes, int N, int C, int H, int W,
                                                        int CW, short* __restrict__ dst) {
  const i64 i = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x;
  const i64 HW = static_cast<i64>(H) * W;
  if (i >= N * C * HW) return;
  const i64 n = i / (C * HW), c = (i / HW) % C, hw = i % HW;
  i32 v = ENC == kEncPm1 ? -((1 << BITS) - 1) : 0;
#pragma unroll
  for (int s = 0; s < BITS; ++s)
    if ((planes[((n * BITS + s) * HW + hw) * CW + c / 32] >> (c % 32)) & 1u) v += plane_weight(BITS, ENC, s);
  dst[i] = static_cast<short>(v);
}

}  // namespace apnn

// The unfused baseline of a chain, for the fusion benchmark: the conv (or APMM: one image of
// M channels by N pixels) writes int32 NCHW, then one kernel per stage reads and writes global
// memory (as the paper's "w/o Fusion"):
//   unfused_pre:      int32 -> Staged    (the ops before pool: scale_bias, relu)
//   unfused_pool:     Staged -> Pooled   (N, O, Hp, Wp)
//   unfused_quantize: Pooled -> packed planes + pixsum (conv_layout.h), post ops first
// Same arithmetic and order as the fused path (epilogue.cuh), so the outputs are equal.
#pragma once
#include "epilogue.cuh"

namespace apnn {

template <class E>
__device__ __forceinline__ void unfused_pre(const i32* __restrict__ y, typename E::Staged* __restrict__ out, i64 count,
                                            int O, int hw, EpilogueArgs a) {
  const i64 i = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const int o = static_cast<int>((i / hw) % O);
  out[i] = E::pre(y[i], o, a);
}

template <class E>
__device__ __forceinline__ void unfused_pool(const typename E::Staged* __restrict__ in, typename E::Pooled* __restrict__ out,
                                             int N, int O, int H, int W, int Hp, int Wp) {
  const i64 i = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<i64>(N) * O * Hp * Wp) return;
  const int wp = static_cast<int>(i % Wp), hp = static_cast<int>(i / Wp % Hp);
  const i64 plane = i / (static_cast<i64>(Hp) * Wp);  // n * O + o
  constexpr int kS = E::kPoolSize, kSS = kS * kS;
  const typename E::Staged* base = in + (plane * H + hp * E::kPoolStride) * W + wp * E::kPoolStride;
  if constexpr (E::kPoolMax) {
    typename E::Staged v = base[0];
    for (int k = 1; k < kSS; ++k) {
      const typename E::Staged w = base[(k / kS) * W + k % kS];
      v = w > v ? w : v;
    }
    out[i] = v;
  } else {
    float s = static_cast<float>(base[0]);
    for (int k = 1; k < kSS; ++k) s = s + static_cast<float>(base[(k / kS) * W + k % kS]);
    out[i] = s / static_cast<float>(kSS);
  }
}

// One warp per output pixel: lane = channel within each 32-channel word.
template <class E>
__device__ __forceinline__ void unfused_quantize(const typename E::Pooled* __restrict__ in, int N, int O, int HW, int CW,
                                                 EpilogueArgs a) {
  const int lane = threadIdx.x & 31;
  const i64 q = (static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  if (q >= static_cast<i64>(N) * HW) return;
  const i64 n = q / HW, pix = q - n * HW;
  u32* planes = static_cast<u32*>(a.out);
  i32 sum = 0;
  for (int cw = 0; cw < CW; ++cw) {
    const int o = cw * 32 + lane;
    u32 code = 0;
    if (o < O) code = quantize_code<E>(static_cast<float>(E::post(in[(n * O + o) * HW + pix], o, a)), o, a);
#pragma unroll
    for (int s = 0; s < E::kQBits; ++s) {
      const u32 word = __ballot_sync(0xffffffffu, (code >> s) & 1u);
      sum += plane_weight(E::kQBits, E::kQEnc, s) * __popc(word);
      if (lane == s) planes[((n * E::kQBits + s) * HW + pix) * CW + cw] = word;
    }
  }
  if (lane == 0) a.out_sum[q] = sum;
}

}  // namespace apnn

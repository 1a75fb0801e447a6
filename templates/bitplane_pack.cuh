// Bit decomposition: int16 values (row-major rows x K) -> BITS packed 1-bit planes
// in the layout of include/apnn/bitplane_layout.h, plus each row's plane-weighted
// popcount, which the GEMM epilogue uses for the +-1 / offset corrections.
#pragma once
#include "apnn_types.cuh"

namespace apnn {

// One warp per row; a ballot turns 32 lanes' bits into one word (the paper's packing).
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
#pragma unroll
    for (int s = 0; s < BITS; ++s) {
      const u32 word = __ballot_sync(0xffffffffu, (code >> s) & 1u);
      if (lane == s) planes[(static_cast<i64>(s) * rows + row) * ld + w] = word;
      sum += plane_weight(BITS, ENC, s) * __popc(word);
    }
  }
  if (lane == 0) rowsum[row] = sum;
}

}  // namespace apnn

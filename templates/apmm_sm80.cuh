// APMM: Y (M x N) = W (M x K) . X (N x K)^T on packed bit planes (bitplane_layout.h).
// X tiles are plain rows like W's; the epilogue adds the offset-encoding corrections
//   Y = sum_g w_g*acc_g + beta_w*SX[n] + beta_x*SW[m] + K*beta_w*beta_x
// (SW, SX: the rows' plane-weighted popcounts from packing) and stores int32.
#pragma once
#include "gemm_sm80.cuh"

namespace apnn {

template <class T>
struct ApmmProblem {
  using Core = GemmSm80<T>;
  const u32* __restrict__ a_planes;
  i64 a_plane_stride;
  int a_rows, a_ld, k_words;
  const u32* __restrict__ xp;
  const i32* __restrict__ wsum;
  const i32* __restrict__ xsum;
  i32* __restrict__ y;
  int M, N, K;

  __device__ __forceinline__ void load_b(u32* dst, int n0, int kword0) const {
    Core::template load_operand<Core::kRowsB, T::kBN>(dst, xp, static_cast<i64>(N) * a_ld, N, n0, a_ld, kword0);
  }

  __device__ __forceinline__ void store(const i32 (&acc)[T::kGroups][Core::kMI][Core::kNI][4], int m_base, int n_base,
                                        int g, int tig) const {
#pragma unroll
    for (int mi = 0; mi < Core::kMI; ++mi)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int m = m_base + mi * 16 + g + half * 8;
        if (m >= M) continue;
        u32 row_term = 0;
        if (T::kOffsetX != 0) row_term += static_cast<u32>(T::kOffsetX) * static_cast<u32>(wsum[m]);
        if (T::kOffsetW != 0 && T::kOffsetX != 0)
          row_term += static_cast<u32>(T::kOffsetW * T::kOffsetX) * static_cast<u32>(K);
#pragma unroll
        for (int ni = 0; ni < Core::kNI; ++ni) {
          const int n = n_base + ni * 8 + 2 * tig;
          u32 v[2];
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            v[e] = row_term + Core::combine(acc, mi, ni, half * 2 + e);
            if (T::kOffsetW != 0 && n + e < N) v[e] += static_cast<u32>(T::kOffsetW) * static_cast<u32>(xsum[n + e]);
          }
          i32* out = y + static_cast<i64>(m) * N + n;
          if ((N & 1) == 0 && n + 1 < N) {
            *reinterpret_cast<i32x2*>(out) = i32x2{static_cast<i32>(v[0]), static_cast<i32>(v[1])};
          } else {
            if (n < N) out[0] = static_cast<i32>(v[0]);
            if (n + 1 < N) out[1] = static_cast<i32>(v[1]);
          }
        }
      }
  }
};

template <class T>
__device__ __forceinline__ void apmm_sm80(u32* smem, const u32* wp, const i32* wsum, const u32* xp, const i32* xsum,
                                          i32* y, int M, int N, int K, int ld) {
  const ApmmProblem<T> prob{wp, static_cast<i64>(M) * ld, M, ld, ld, xp, wsum, xsum, y, M, N, K};
  GemmSm80<T>::run(smem, prob);
}

}  // namespace apnn

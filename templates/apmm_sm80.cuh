// APMM: Y (M x N) = W (M x K) . X (N x K)^T on packed bit planes (bitplane_layout.h).
// X tiles are plain rows like W's; the epilogue adds the offset-encoding corrections
//   Y = sum_g w_g*acc_g + beta_w*SX[n] + beta_x*SW[m] + K*beta_w*beta_x
// (SW, SX: the rows' plane-weighted popcounts from packing), then runs the spec's fused
// chain (epilogue.cuh): output channel o = m, output pixel q = n (out_hw = N), so a
// quantized output is the next GEMM's X operand: N rows of K' = M values.
#pragma once
#include "epilogue.cuh"
#include "gemm_sm80.cuh"

namespace apnn {

template <class T>
struct ApmmProblem {
  using Core = GemmSm80<T>;
  using E = typename T::Epi;
  const u32* __restrict__ a_planes;
  i64 a_plane_stride;
  int a_rows, a_ld, k_words;
  const u32* __restrict__ xp;
  const i32* __restrict__ wsum;
  const i32* __restrict__ xsum;
  EpilogueArgs epi;
  u32* smem;
  int M, N, K;
  int out_pixels, out_hw, out_cw;  // N, N, ld of M bits (bitplane_layout.h)

  __device__ __forceinline__ void load_b(u32* dst, int n0, int kword0) const {
    Core::template load_operand<Core::kRowsB, T::kBN>(dst, xp, static_cast<i64>(N) * a_ld, N, n0, a_ld, kword0);
  }

  __device__ __forceinline__ bool column_valid(int c) const { return blockIdx.y * T::kBN + c < N; }
  // epilogue.cuh's quantized_store reads a column once for all of a thread's rows: its index
  // and its offset-weight term (xsum once a column, not once an output: session 42).
  struct Column {
    int c;
    u32 term;
  };
  static constexpr bool kColumnsFirst = T::kOffsetW != 0;  // the handle loads the term
  static constexpr bool kRowTerms = T::kOffsetX != 0;      // value() loads a term of row o
  __device__ __forceinline__ Column column(int c) const { return column_at(c, blockIdx.y * T::kBN); }
  __device__ __forceinline__ bool valid(const Column& col) const { return column_valid(col.c); }
  // Tile column c of the tile whose first column is n0. The term's load has no branch (past
  // N it reads column N - 1's, which valid() then rejects), so that a thread's loads all
  // issue before the first is used: one latency, not one a column (session 42).
  __device__ __forceinline__ Column column_at(int c, int n0) const {
    Column col{c, 0u};
    if (T::kOffsetW != 0) col.term = static_cast<u32>(T::kOffsetW) * static_cast<u32>(xsum[min(n0 + c, N - 1)]);
    return col;
  }
  // The terms of row o: the offset-activation one and the constant.
  __device__ __forceinline__ u32 row_term(int o) const {
    u32 v = 0;
    if (T::kOffsetX != 0) v += static_cast<u32>(T::kOffsetX) * static_cast<u32>(wsum[o]);
    if (T::kOffsetW != 0 && T::kOffsetX != 0) v += static_cast<u32>(T::kOffsetW * T::kOffsetX) * static_cast<u32>(K);
    return v;
  }

  // The corrected int32 product of row o and tile column c (wrapping u32 arithmetic).
  template <class Acc>
  __device__ __forceinline__ u32 value(const Acc& acc, int mi, int ni, int e, int o, int c) const {
    u32 v = Core::combine(acc, mi, ni, e) + row_term(o);
    if (T::kOffsetW != 0) v += static_cast<u32>(T::kOffsetW) * static_cast<u32>(xsum[blockIdx.y * T::kBN + c]);
    return v;
  }
  template <class Acc>
  __device__ __forceinline__ u32 value(const Acc& acc, int mi, int ni, int e, int o, const Column& col) const {
    return Core::combine(acc, mi, ni, e) + row_term(o) + col.term;
  }

  __device__ __forceinline__ void store(const i32 (&acc)[T::kGroups][Core::kMI][Core::kNI][4], int m_base, int n_base,
                                        int g, int tig) const {
    if constexpr (E::kStaged) {
      staged_store<T, Core>(*this, acc, m_base, n_base, g, tig, blockIdx.x * T::kBM, blockIdx.y);
    } else {
      using Final = typename E::Final;
      using Out = typename E::Out;  // Final, or i16 for the plain int16 output
      Out* y = static_cast<Out*>(epi.out);
      const int c_base = n_base - blockIdx.y * T::kBN;
#pragma unroll
      for (int mi = 0; mi < Core::kMI; ++mi)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int m = m_base + mi * 16 + g + half * 8;
          if (m >= M) continue;
#pragma unroll
          for (int ni = 0; ni < Core::kNI; ++ni) {
            const int c = c_base + ni * 8 + 2 * tig, n = n_base + ni * 8 + 2 * tig;
            if (n >= N) continue;
            Final v[2] = {0, 0};
#pragma unroll
            for (int e = 0; e < 2; ++e)
              if (n + e < N) v[e] = E::post(E::pre(static_cast<i32>(value(acc, mi, ni, half * 2 + e, m, c + e)), m, epi), m, epi);
            store_pair(y + static_cast<i64>(m) * N + n, v[0], v[1], (N & 1) == 0 && n + 1 < N, n + 1 < N);
          }
        }
    }
  }
};

template <class T>
__device__ __forceinline__ void apmm_sm80(u32* smem, const u32* wp, const i32* wsum, const u32* xp, const i32* xsum,
                                          const EpilogueArgs& epi, int M, int N, int K, int ld) {
  const int out_cw = (M + 127) / 128 * 4;
  const ApmmProblem<T> prob{wp, static_cast<i64>(M) * ld, M, ld, ld, xp, wsum, xsum, epi, smem, M, N, K, N, N, out_cw};
  GemmSm80<T>::run(smem, prob);
}

}  // namespace apnn

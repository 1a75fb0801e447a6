// APMM on the sm_90a wgmma core: the operands and the epilogue arithmetic of apmm_sm80.cuh
// (ApmmProblem, whose accumulator fragment has the same shape), with the X tile loaded
// in the wgmma core's swizzled K-major layout. Plain int32 output only: specs with a fused
// epilogue chain stay on the mma.sync core (rules::use_wgmma).
#pragma once
#include "apmm_sm80.cuh"
#include "gemm_sm90a.cuh"

namespace apnn {

template <class T>
struct ApmmProblemSm90a : ApmmProblem<T> {
  using Core90 = GemmSm90a<T>;
  using Core80 = GemmSm80<T>;
  static constexpr int kNI = Core90::kNI;
  // The plain int32 output only (rules::use_wgmma): fused chains read blockIdx.y and stage
  // through shared memory, which this persistent core's pipeline still fills.
  static_assert(!T::Epi::kStaged, "the wgmma core has no fused epilogue yet");

  __device__ __forceinline__ void load_b(u32* dst, int n0, int kword0) const {
    Core90::template load_operand<Core90::kRowsB, T::kBN>(dst, this->xp, static_cast<i64>(this->N) * this->a_ld, this->N,
                                                         n0, this->a_ld, kword0);
  }

  static __device__ __forceinline__ u32 load_nc(const i32* p) {  // read-only: free to move past stores
    u32 v;
    asm("ld.global.nc.b32 %0, [%1];" : "=r"(v) : "l"(p));
    return v;
  }

  // ApmmProblem::store's arithmetic, with the correction terms loaded a chunk of columns
  // ahead of their stores (the compiler cannot tell y from wsum/xsum, so a load after a
  // store would wait for it: a memory latency per column pair of the warp's slice).
  __device__ __forceinline__ void store(const i32 (&acc)[T::kGroups][1][kNI][4], int m_base, int n_base, int g,
                                        int tig) const {
    constexpr int kChunk = kNI < 4 ? kNI : 4;
    u32 row_term[2];
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int m = m_base + g + half * 8;
      row_term[half] = 0;
      if (T::kOffsetX != 0 && m < this->M) row_term[half] += static_cast<u32>(T::kOffsetX) * load_nc(this->wsum + m);
      if (T::kOffsetW != 0 && T::kOffsetX != 0)
        row_term[half] += static_cast<u32>(T::kOffsetW * T::kOffsetX) * static_cast<u32>(this->K);
    }
#pragma unroll
    for (int ni0 = 0; ni0 < kNI; ni0 += kChunk) {
      u32 col[kChunk][2];
#pragma unroll
      for (int c = 0; c < kChunk; ++c)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int n = n_base + (ni0 + c) * 8 + 2 * tig + e;
          col[c][e] = T::kOffsetW != 0 && n < this->N ? static_cast<u32>(T::kOffsetW) * load_nc(this->xsum + n) : 0u;
        }
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int m = m_base + g + half * 8;
        if (m >= this->M) continue;
        i32* row = static_cast<i32*>(this->epi.out) + static_cast<i64>(m) * this->N;
#pragma unroll
        for (int c = 0; c < kChunk; ++c) {
          const int ni = ni0 + c;
          const int n = n_base + ni * 8 + 2 * tig;
          const u32 v0 = row_term[half] + col[c][0] + Core80::combine(acc, 0, ni, half * 2);
          const u32 v1 = row_term[half] + col[c][1] + Core80::combine(acc, 0, ni, half * 2 + 1);
          if ((this->N & 1) == 0 && n + 1 < this->N) {
            *reinterpret_cast<i32x2*>(row + n) = i32x2{static_cast<i32>(v0), static_cast<i32>(v1)};
          } else {
            if (n < this->N) row[n] = static_cast<i32>(v0);
            if (n + 1 < this->N) row[n + 1] = static_cast<i32>(v1);
          }
        }
      }
    }
  }
};

template <class T>
__device__ __forceinline__ void apmm_sm90a(u32* smem, const u32* wp, const i32* wsum, const u32* xp, const i32* xsum,
                                           const EpilogueArgs& epi, int M, int N, int K, int ld) {
  const int out_cw = (M + 127) / 128 * 4;
  const ApmmProblemSm90a<T> prob{{wp, static_cast<i64>(M) * ld, M, ld, ld, xp, wsum, xsum, epi, smem, M, N, K, N, N, out_cw}};
  GemmSm90a<T>::run(smem, prob);
}

}  // namespace apnn

// APMM on the sm_90a wgmma core: the operands and the epilogue of apmm_sm80.cuh
// (ApmmProblem, whose accumulator fragment has the same shape), with the X tile loaded
// in the wgmma core's swizzled K-major layout.
#pragma once
#include "apmm_sm80.cuh"
#include "gemm_sm90a.cuh"

namespace apnn {

template <class T>
struct ApmmProblemSm90a : ApmmProblem<T> {
  using Core90 = GemmSm90a<T>;
  __device__ __forceinline__ void load_b(u32* dst, int n0, int kword0) const {
    Core90::template load_operand<Core90::kRowsB, T::kBN>(dst, this->xp, static_cast<i64>(this->N) * this->a_ld, this->N,
                                                         n0, this->a_ld, kword0);
  }
};

template <class T>
__device__ __forceinline__ void apmm_sm90a(u32* smem, const u32* wp, const i32* wsum, const u32* xp, const i32* xsum,
                                           i32* y, int M, int N, int K, int ld) {
  const ApmmProblemSm90a<T> prob{{wp, static_cast<i64>(M) * ld, M, ld, ld, xp, wsum, xsum, y, M, N, K}};
  GemmSm90a<T>::run(smem, prob);
}

}  // namespace apnn

// APMM on the TMA-fed wgmma core (gemm_sm90a_tma.cuh): a cluster of blocks shares operand
// tiles through multicast. The epilogue is ApmmProblemSm90a's: a chain's values or codes, or
// the plain int32 or int16 output (staged bulk stores of the whole tile where
// T::kOutputStagingBytes says so, else of a pipeline slot where its kTmaStore does, when the
// runner passes the output's map);
// the operands reach the core as tensor maps that the runner encodes over the packed planes
// (engine/apmm_runner.cpp), so the problem's operand pointers stay null.
#pragma once
#include "apmm_sm90a.cuh"
#include "gemm_sm90a_tma.cuh"

namespace apnn {

template <class T>
__device__ __forceinline__ void apmm_sm90a_tma(u32* smem, const TmaMap* wmap, const TmaMap* xmap, const i32* wsum,
                                               const i32* xsum, const EpilogueArgs& epi, int M, int N, int K, int ld,
                                               const TmaMap* ymap) {
  const int out_cw = (M + 127) / 128 * 4;
  const ApmmProblemSm90a<T> prob{
      {nullptr, static_cast<i64>(M) * ld, M, ld, ld, nullptr, wsum, xsum, epi, smem, M, N, K, N, N, out_cw}, {}, ymap};
  GemmSm90aTma<T>::run(smem, wmap, xmap, prob);
}

}  // namespace apnn

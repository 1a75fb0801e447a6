// APConv on the sm_90a wgmma core: conv_sm80.cuh's implicit GEMM (the same gather plan,
// column table and corrections), with the X tile gathered into the wgmma core's swizzled
// K-major layout. Plain int32 output only, like apmm_sm90a.cuh: chains stay on mma.sync.
//
// One output tile per block (the grid is the tile count, not persistent): the gather plan
// and the column table belong to one tile, and GemmSm90a::run starts loading a block's next
// tile while it stores the last, which would need both tiles' tables at once.
#pragma once
#include "conv_sm80.cuh"
#include "gemm_sm90a.cuh"

namespace apnn {

template <class T>
struct ConvProblemSm90a : ConvProblem<T, GemmSm90a<T>> {
  static_assert(!T::Epi::kStaged, "the wgmma core has no fused epilogue yet");
  static constexpr bool kTmaStore = false;  // NCHW rows of Ho*Wo pixels: plain stores
  int N;  // rows of B for GemmSm90a::run: the conv output pixels
};

template <class T>
__device__ __forceinline__ void conv_sm90a(u32* smem, const u32* wp, const i32* rowsum, const i32* possum, const u32* xp,
                                           const i32* pixsum, const EpilogueArgs& epi, int O, int N, int C, int H, int W,
                                           int Ho, int Wo, int CW) {
  const int ld = ConvProblem<T>::kKHW * CW;
  const int P = N * Ho * Wo;
  const int tiles_m = (O + T::kBM - 1) / T::kBM;
  ConvProblemSm90a<T> prob{{wp, static_cast<i64>(O) * ld, O, ld, ld, xp, rowsum, possum, pixsum, epi, smem, C, H, W, Ho,
                            Wo, CW, P, Ho, Wo, P, Ho * Wo, (O + 127) / 128 * 4, static_cast<int>(blockIdx.x) / tiles_m},
                           P};
  prob.fill_column_table(prob.col_tile);
  prob.plan_columns(prob.col_tile * T::kBN, N);
  GemmSm90a<T>::run(smem, prob);
}

}  // namespace apnn

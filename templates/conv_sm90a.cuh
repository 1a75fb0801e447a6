// APConv on the sm_90a wgmma core: conv_sm80.cuh's implicit GEMM (the same gather plan,
// column table, corrections and epilogues, fused chains included), with the X tile gathered
// into the wgmma core's swizzled K-major layout.
//
// One output tile per block (the grid is the tile count, not persistent): the gather plan
// and the column table belong to one tile, and GemmSm90a::run starts loading a block's next
// tile while it stores the last, which would need both tiles' tables at once. Block b
// computes M tile b % tiles_m of column tile b / tiles_m; with a fused pool a column tile
// is kOutPerTile whole pooling windows (conv_sm80.cuh).
#pragma once
#include "conv_sm80.cuh"
#include "gemm_sm90a.cuh"

namespace apnn {

template <class T>
struct ConvProblemSm90a : ConvProblem<T, GemmSm90a<T>> {
  static constexpr bool kTmaStore = false;  // NCHW rows of Ho*Wo pixels: plain stores
  int N;  // rows of B for GemmSm90a::run: column tiles * kBN
};

template <class T>
__device__ __forceinline__ void conv_sm90a(u32* smem, const u32* wp, const i32* rowsum, const i32* possum, const u32* xp,
                                           const i32* pixsum, const EpilogueArgs& epi, int O, int N, int C, int H, int W,
                                           int Ho, int Wo, int CW) {
  using E = typename T::Epi;
  using Prob = ConvProblem<T, GemmSm90a<T>>;
  const int ld = Prob::kKHW * CW;
  const int P = N * Ho * Wo;
  const int Hp = E::kPool ? (Ho - E::kPoolSize) / E::kPoolStride + 1 : Ho;
  const int Wp = E::kPool ? (Wo - E::kPoolSize) / E::kPoolStride + 1 : Wo;
  const int out_pixels = N * Hp * Wp;
  const int col_tiles = E::kPool ? (out_pixels + Prob::kOutPerTile - 1) / Prob::kOutPerTile : (P + T::kBN - 1) / T::kBN;
  const int tiles_m = (O + T::kBM - 1) / T::kBM;
  const int tile = static_cast<int>(blockIdx.x);
  ConvProblemSm90a<T> prob{{wp, static_cast<i64>(O) * ld, O, ld, ld, xp, rowsum, possum, pixsum, epi, smem, C, H, W, Ho,
                            Wo, CW, P, Hp, Wp, out_pixels, Hp * Wp, (O + 127) / 128 * 4, tile / tiles_m, tile % tiles_m},
                           col_tiles * T::kBN};
  // Launched with early_start (conv_runner.cpp): the index arithmetic above and the gather
  // plan overlap the previous kernel's end; global memory only after the wait.
  prob.plan_columns(prob.col_tile * T::kBN, N);
  ptx::grid_dependency_wait();
  prob.fill_column_table(prob.col_tile);
  GemmSm90a<T>::run(smem, prob);
}

}  // namespace apnn

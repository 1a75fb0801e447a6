// APConv on the sm_90a wgmma core: conv_sm80.cuh's implicit GEMM (the same gather plan,
// column table, corrections and epilogues, fused chains included), with the X tile gathered
// into the wgmma core's swizzled K-major layout.
//
// Block b computes a contiguous share of the tiles (M tiles fastest), so consecutive tiles
// of a block mostly share their column tile: the gather plan (load side, which runs ahead
// into the next tile) and the column table (epilogue side) are worked out again only where
// the column tile changes. The runner launches either one block per tile, or, where
// rules::conv_persistent says so, a persistent grid of at most a wave of blocks, whose
// successive tiles form one pipeline (session 9: 1.1-1.7x for w2a8 at batch 128, about
// even for lighter precisions, bench/NOTES.md). Chains that stage their output in the
// pipeline's buffers (E::kStaged) always get one block per tile: the staging would
// overwrite the next tile's first stages in flight. With a fused pool a column tile is
// kOutPerTile whole pooling windows (conv_sm80.cuh).
#pragma once
#include "conv_sm80.cuh"
#include "gemm_sm90a.cuh"

namespace apnn {

template <class T>
struct ConvProblemSm90a : ConvProblem<T, GemmSm90a<T>> {
  using Base = ConvProblem<T, GemmSm90a<T>>;
  static constexpr bool kTmaStore = false;  // NCHW rows of Ho*Wo pixels: plain stores
  static constexpr bool kUniformLoop = false;  // prefetch_tile and begin_tile branch per thread
  int N;                       // rows of B for GemmSm90a::run: column tiles * kBN
  int batch;                   // images
  int first_tile, tile_count;  // the block's contiguous share of the tiles, M tiles fastest
  mutable int plan_n0;         // the first column of the tile whose gather plan is loaded, -1 for none
  mutable int table_tile;      // the column tile whose column table is in shared memory, -1 for none
  mutable typename Base::ColumnLoads first_loads;  // this thread's column of the first tile (prefetch_tile)
  mutable int loaded_tile;                         // the column tile of first_loads, -1 for none

  // Consecutive tiles mostly share a column tile, whose plan and table are then worked out once.
  __device__ __forceinline__ void block_tiles(int, int& first, int& stride, int& count) const {
    first = first_tile;
    stride = 1;
    count = tile_count;
  }
  // Tile -> (M tile, column tile) for GemmSm90a::run, with the launch's divisor (dv.tiles_m
  // divides by tiles_m, both ceil(O / kBM)).
  __device__ __forceinline__ void split_tile(int tile, int tiles_m, int& tm, int& tn) const {
    tn = this->dv.tiles_m.div(tile);
    tm = tile - tn * tiles_m;
  }

  // The loads run up to kStages steps ahead, into the next tile: plan its columns on the way.
  __device__ __forceinline__ void load_b(u32* dst, int n0, int kword0) const {
    if (n0 != plan_n0) {
      this->plan_columns(n0, batch);
      plan_n0 = n0;
    }
    Base::load_b(dst, n0, kword0);
  }

  // The plain (unstaged) epilogue of a block's only tile, where an output row Ho*Wo is odd,
  // goes through shared memory: nothing loads into the pipeline's buffers any more, so the
  // values land there row-major, and the warps then write whole output rows, consecutive
  // columns (pixels) in consecutive lanes. Stored straight from the accumulator fragments,
  // each warp store covers 8 rows of 2-4 columns, and with Ho*Wo odd half the rows cannot
  // take 8-byte pairs: at batch 128, 7x7 outputs, the stores used 11 of the 32 bytes of each
  // sector they touched and the epilogue took 40% of the stall samples (session 9, device
  // call 5). Staging every one-tile block (call 6) was 0.82-0.93x on the even 28x28 and
  // 56x56 outputs, whose pairs align; staging only odd rows (call 7): 1.12-1.78x on the
  // batch-128 7x7 outputs, 0.97-1.05x elsewhere.
  static constexpr int kRowLd = T::kBN + 8;  // 8 rows of a fragment's 64-bit stores fill the 16 double banks twice
  static constexpr bool kRowStaging = !Base::E::kStaged && T::kBM * kRowLd * 4 <= GemmSm90a<T>::kSmemBytes;

  __device__ __forceinline__ void store(const i32 (&acc)[T::kGroups][1][Base::Frag::kNI][4], int m_base, int n_base,
                                        int g, int tig) const {
    if constexpr (kRowStaging) {
      if (tile_count == 1 && (this->Ho * this->Wo) % 2 == 1) {
        store_rows_staged(acc, m_base, n_base - this->col_tile * T::kBN, g, tig);
        return;
      }
    }
    Base::store(acc, m_base, n_base, g, tig);
  }

  __device__ __forceinline__ void store_rows_staged(const i32 (&acc)[T::kGroups][1][Base::Frag::kNI][4], int m_base,
                                                    int c_base, int g, int tig) const {
    using E = typename Base::E;
    using Final = typename E::Final;
    Final* st = reinterpret_cast<Final*>(this->smem);
    const ConvColumn* table = this->column_table();
    const int O = this->a_rows, m0 = this->m_tile * T::kBM;
    ptx::cp_async_wait<0>();
    __syncthreads();  // every warpgroup's wgmmas are done reading the pipeline's buffers
#pragma unroll
    for (int ni = 0; ni < Base::Frag::kNI; ++ni) {
      const int c = c_base + ni * 8 + 2 * tig;
      const ConvColumn a = table[c], b = table[c + 1];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int r = m_base - m0 + g + half * 8, o = m0 + r, e = half * 2;
        if (o >= O) continue;
        // Columns without a pixel are not read back (their out is -1).
        store_pair(st + r * kRowLd + c, a.out >= 0 ? this->output(acc, 0, ni, e, o, a) : Final{},
                   b.out >= 0 ? this->output(acc, 0, ni, e + 1, o, b) : Final{}, true, true);
      }
    }
    __syncthreads();
    using Out = typename E::Out;  // Final, or i16 for the plain int16 output
    Out* y = static_cast<Out*>(this->epi.out);
    const int HoWo = this->Ho * this->Wo;
    constexpr int kThreads = GemmSm90a<T>::kThreads;
    // Each thread keeps its columns (their output pixels read once) and walks their rows
    // kRowStep apart: a load, a store and a pointer step an element. Re-deriving row, column
    // and pixel for every element took 19 instructions each, the largest part of the 7x7
    // convs' tiles (session 12, device call 1). kBN and kThreads are powers of two.
    constexpr int kRowStep = kThreads >= T::kBN ? kThreads / T::kBN : 1;
    constexpr int kColStep = kThreads >= T::kBN ? T::kBN : kThreads;
    static_assert(kThreads % T::kBN == 0 || T::kBN % kThreads == 0, "columns split evenly over the threads");
    const int r0 = static_cast<int>(threadIdx.x) / kColStep, rows = min(T::kBM, O - m0);
    for (int c = static_cast<int>(threadIdx.x) % kColStep; c < T::kBN; c += kColStep) {
      const int out = table[c].out;
      if (out < 0) continue;
      // Output indexes are int32: every one is below 2^31 (conv_runner.cpp checks N*O*Ho*Wo).
      Out* dst = y + ((m0 + r0) * HoWo + out);
      const Final* src = st + (r0 * kRowLd + c);
#pragma unroll 4
      for (int r = r0; r < rows; r += kRowStep, dst += kRowStep * HoWo, src += kRowStep * kRowLd) *dst = static_cast<Out>(*src);
    }
  }

  // Before the pipeline's first copies (every thread), given the first tile's M tile and
  // column tile: that column tile's loads, one column per thread, summed into the table by
  // begin_tile.
  __device__ __forceinline__ void prefetch_tile(int, int tn) const {
    if constexpr (Base::kPrefetchColumns && T::kBN <= GemmSm90a<T>::kThreads) {
      if (static_cast<int>(threadIdx.x) < T::kBN) this->load_column(tn, threadIdx.x, first_loads);
      loaded_tile = tn;
    }
  }

  // Before tile `tile`'s mainloop (every thread): the epilogue's tile, and its column table
  // where the column tile changed. The tile's first barrier publishes the table; the one here
  // keeps it from overwriting the table that slower warps still read in the last epilogue.
  __device__ __forceinline__ void begin_tile(int tile, int tiles_m, bool first) const {
    split_tile(tile, tiles_m, this->m_tile, this->col_tile);
    if (this->col_tile == table_tile) return;
    if (!first) __syncthreads();
    if (this->col_tile == loaded_tile) {
      if (static_cast<int>(threadIdx.x) < T::kBN) this->store_column(threadIdx.x, first_loads);
      loaded_tile = -1;
    } else {
      this->fill_column_table(this->col_tile);
    }
    table_tile = this->col_tile;
  }
  __device__ __forceinline__ void end_tiles() const {}  // quantize chains are not persistent (rules::conv_persistent)
};

template <class T>
__device__ __forceinline__ void conv_sm90a(u32* smem, const u32* wp, const i32* rowsum, const i32* possum, const u32* xp,
                                           const i32* pixsum, const EpilogueArgs& epi, int O, int N, int C, int H, int W,
                                           int Ho, int Wo, int CW, const ConvDivisors& dv) {
  using E = typename T::Epi;
  using Prob = ConvProblemSm90a<T>;
  const int ld = Prob::kKHW * CW;
  const int P = N * Ho * Wo;
  const int Hp = E::kPool ? (Ho - E::kPoolSize) / E::kPoolStride + 1 : Ho;
  const int Wp = E::kPool ? (Wo - E::kPoolSize) / E::kPoolStride + 1 : Wo;
  const int out_pixels = N * Hp * Wp;
  const int col_tiles = E::kPool ? (out_pixels + Prob::kOutPerTile - 1) / Prob::kOutPerTile : (P + T::kBN - 1) / T::kBN;
  Prob prob{{wp, static_cast<i64>(O) * ld, O, ld, ld, xp, rowsum, possum, pixsum, epi, smem, C, H, W, Ho, Wo, CW, P, Hp,
             Wp, out_pixels, Hp * Wp, (O + 127) / 128 * 4, 0, 0, dv},
            col_tiles * T::kBN,
            N,
            0,
            0,
            -1,
            -1,
            {},
            -1};
  // Launched with early_start (conv_runner.cpp): the block's share and its first gather plan
  // overlap the previous kernel's end; global memory only after the wait.
  const int tiles_m = (O + T::kBM - 1) / T::kBM;
  GemmSm90a<T>::contiguous_tiles(tiles_m * col_tiles, prob.first_tile, prob.tile_count);
  prob.plan_n0 = dv.tiles_m.div(prob.first_tile) * T::kBN;
  prob.plan_columns(prob.plan_n0, N);
  ptx::grid_dependency_wait();
  GemmSm90a<T>::run(smem, prob);
}

}  // namespace apnn

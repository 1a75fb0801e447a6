// APMM on the sm_90a wgmma core: the operands and the epilogue arithmetic of apmm_sm80.cuh
// (ApmmProblem, whose accumulator fragment has the same shape), with the X tile loaded
// in the wgmma core's swizzled K-major layout. On both wgmma cores a fused chain without a
// quantize stores through store(); a quantize chain through epilogue.cuh's quantized_store, its
// codes staged in a region of their own after the pipeline (rules::apmm_code_staging_bytes;
// on the TMA core after its barriers, synchronized by the consumer warps alone), so that the
// persistent block's next tile keeps loading meanwhile.
#pragma once
#include "apmm_sm80.cuh"
#include "gemm_sm90a.cuh"
#include "ptx_tma.cuh"

namespace apnn {

// A quantize chain's pending pixel-sum adds a thread on the cp.async core (ApmmProblemSm90a).
template <class T>
constexpr int apmm_pending_sums() {
  return T::Epi::kQuantize && T::kClusterM * T::kClusterN == 1 ? quantized_items_per_thread<T, GemmSm80<T>>() : 0;
}

template <class T>
struct ApmmProblemSm90a : ApmmProblem<T>, PixelSumAdds<apmm_pending_sums<T>()> {
  using Core90 = GemmSm90a<T>;
  using Core80 = GemmSm80<T>;
  static constexpr int kNI = Core90::kNI;
  // The output as a 2-D int32 (or int16) tensor (N columns, M rows) for bulk tensor stores, or
  // null: the runner passes one when a row's bytes are a multiple of 16 (a TMA row stride).
  const TmaMap* ymap;

  // Staged stores (store_staged): each warpgroup writes its 64 rows a box (32 int32 or 64 int16
  // columns) at a time into one of two 8 KB buffers (rows of 128 bytes, the 128-byte swizzle) and
  // one thread hands the buffer to the copy engine, so the warps go on to the next tile while the
  // output drains. The buffers live in the pipeline slot of the tile's last K step, which the next
  // tile refills only after the next block-wide barrier (the TMA core releases that slot after the
  // copy engine read it). Measured on the cp.async core (bench/NOTES-wgmma.md, session 4): 9-10%
  // faster for 256-column warpgroups (w1a1), 3-5% slower at 64 and 128 columns, so only the former
  // stage. The TMA core gives the two buffers their own place beside the pipeline where it has room
  // (store_staged<true>; session 18: w1a1 1.03-1.05x, and w1a2's 128x128 tile keeps 4 stages), and
  // uses the slot only where it has none.
  static constexpr int kStagingBytes = 2 * 64 * 128;  // per warpgroup
  static constexpr bool kTmaCore = T::kClusterM * T::kClusterN > 1;  // gemm_sm90a_tma.cuh
  // A quantize chain's codes (store): after the cp.async core's pipeline, or after the TMA
  // core's pipeline, output staging and barriers.
  static constexpr int kCodesOffsetBytes = kTmaCore ? tma_codes_offset<T>() : Core90::kSmemBytes;
  static constexpr int kWarpgroups = T::kWarpsM * T::kWarpsN / 4;
  using E = typename T::Epi;
  static constexpr bool kTmaStore = E::kPlain && Core90::kWN == 256 && Core90::kStageBytes >= kWarpgroups * kStagingBytes;
  // No per-thread branches in the hooks: GemmSm90a::run's loop stays warp-uniform (the
  // deferred adds below branch per thread, but reconverge before the tile's mainloop, whose
  // descriptors stay in uniform registers: SASS checked).
  static constexpr bool kUniformLoop = true;
  // A quantize chain on the cp.async core defers its pixel-sum adds into the scratch
  // (epilogue.cuh's PixelSumAdd), one a thread's item of quantized_store: stashed at a tile's
  // store, issued at the block's next tile's start (begin_tile), settled at that tile's store
  // or after the block's last tile (end_tiles), so that persistent blocks of any number of
  // tiles take the scratch (rules::quantize_sums_path).
  static constexpr int kPendingSums = apmm_pending_sums<T>();  // the PixelSumAdds base's
  static constexpr bool kDeferredSums = kPendingSums > 0;
  // GemmSm90a::run's tile order (every gridDim.x-th tile) and per-tile hooks.
  __device__ __forceinline__ void block_tiles(int ntiles, int& first, int& stride, int& count) const {
    Core90::strided_tiles(ntiles, first, stride, count);
  }
  __device__ __forceinline__ void prefetch_tile(int, int) const {}
  __device__ __forceinline__ void begin_tile(int, int, bool) const {
    if constexpr (kDeferredSums) {
#pragma unroll
      for (int k = 0; k < kPendingSums; ++k) this->pending[k].issue(this->epi);
    }
  }
  __device__ __forceinline__ void end_tiles() const {
    if constexpr (kDeferredSums) {
#pragma unroll
      for (int k = 0; k < kPendingSums; ++k) {
        this->pending[k].issue(this->epi);
        this->pending[k].settle(this->epi, (this->a_rows + T::kBM - 1) / T::kBM);
      }
    }
  }
  __device__ __forceinline__ void split_tile(int tile, int tiles_m, int& tm, int& tn) const {
    tm = tile % tiles_m;
    tn = tile / tiles_m;
  }

  __device__ __forceinline__ void load_b(u32* dst, int n0, int kword0) const {
    Core90::template load_operand<Core90::kRowsB, T::kBN>(dst, this->xp, static_cast<i64>(this->N) * this->a_ld, this->N,
                                                         n0, this->a_ld, kword0);
  }

  static __device__ __forceinline__ u32 load_nc(const i32* p) {  // read-only: free to move past stores
    u32 v;
    asm("ld.global.nc.b32 %0, [%1];" : "=r"(v) : "l"(p));
    return v;
  }

  // The tile a staged chain stores (epilogue.cuh's quantized_store): ApmmProblem's tile
  // columns, counted from the tile's first column n0 rather than from blockIdx.y (every
  // member that takes a tile column is redefined here, so that none of the base's reaches it).
  struct StagedTile : ApmmProblem<T> {
    int n0;
    using Column = typename ApmmProblem<T>::Column;
    using ApmmProblem<T>::value;  // by Column
    __device__ __forceinline__ bool column_valid(int c) const { return n0 + c < this->N; }
    __device__ __forceinline__ Column column(int c) const { return this->column_at(c, n0); }
    __device__ __forceinline__ bool valid(const Column& col) const { return column_valid(col.c); }
    template <class Acc>
    __device__ __forceinline__ u32 value(const Acc& acc, int mi, int ni, int e, int o, int c) const {
      return this->value(acc, mi, ni, e, o, column(c));
    }
  };
  // The chain's output of row m's corrected product v (v itself for the plain int32 output).
  __device__ __forceinline__ typename E::Final chained(u32 v, int m) const {
    return E::post(E::pre(static_cast<i32>(v), m, this->epi), m, this->epi);
  }

  // The offset-encoding corrections of ApmmProblem::value, split by what they depend on: the
  // thread's two rows (m_base + g, + 8) ...
  __device__ __forceinline__ void row_terms(int m_base, int g, u32 (&row_term)[2]) const {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int m = m_base + g + half * 8;
      row_term[half] = 0;
      if (T::kOffsetX != 0 && m < this->M) row_term[half] += static_cast<u32>(T::kOffsetX) * load_nc(this->wsum + m);
      if (T::kOffsetW != 0 && T::kOffsetX != 0)
        row_term[half] += static_cast<u32>(T::kOffsetW * T::kOffsetX) * static_cast<u32>(this->K);
    }
  }
  // ... and its columns': with pm1 (offset) weights, kOffsetW * xsum per column. On the TMA core
  // they are loaded at each patch's start (load_column_terms) by lane l for the warpgroup's columns
  // l, l + 32, ... (a 16-bit output's packed pairs: below), so that the load's latency passes under
  // the mainloop, and the epilogue gathers a thread's columns with shuffles. Loaded 8 columns at a
  // time in the epilogue they cost a memory latency per 32 columns: in the bench, against that,
  // w1a2 8192^3 267.07 -> 246.31 us, w1a3 and w1a4 1.13-1.24x at 1024^3 to 8192x4096^2 (session 16,
  // device call 9). The cp.async core keeps the epilogue's loads: its 8x2 w1a2 tile at
  // 1024x4096x4096 was 4% slower with them at the tile's start (same call).
  static constexpr bool kTermsAtTileStart = kTmaCore;
  // With a 16-bit output only a term's low 16 bits matter, so lane l holds the terms of
  // columns 2l and 2l + 1 of each 64 as one word, and a thread's column pair takes one
  // shuffle instead of two.
  static constexpr bool kPackedTerms = E::kPlain && sizeof(typename E::Out) == 2;
  static constexpr int kTermCols = kPackedTerms ? 64 : 32;  // columns a register holds across the warp
  static constexpr int kTermRegs = (Core90::kWN + kTermCols - 1) / kTermCols;
  mutable u32 col_terms[kTermRegs];
  __device__ __forceinline__ u32 column_term(int c, int n) const {
    return c < Core90::kWN && n < this->N ? static_cast<u32>(T::kOffsetW) * load_nc(this->xsum + n) : 0u;
  }
  __device__ __forceinline__ void load_column_terms(int n_base) const {
    if constexpr (T::kOffsetW != 0 && kTermsAtTileStart) {
      const int lane = threadIdx.x & 31;
#pragma unroll
      for (int j = 0; j < kTermRegs; ++j) {
        if constexpr (kPackedTerms) {
          const int c = 2 * lane + 64 * j, n = n_base + c;
          col_terms[j] = __byte_perm(column_term(c, n), column_term(c + 1, n + 1), 0x5410);
        } else {
          const int c = lane + 32 * j;
          col_terms[j] = column_term(c, n_base + c);
        }
      }
    }
  }
  // The packed terms of a thread's column pair in fragment ni (kPackedTerms).
  __device__ __forceinline__ u32 column_pair(int ni, int tig) const {
    return __shfl_sync(0xffffffffu, col_terms[ni / 8], (ni % 8) * 4 + tig);
  }
  // The column pairs of kCount fragments of 8 columns from fragment ni0 (a compile-time
  // constant once unrolled) of the warpgroup's columns from n_base; on the TMA core every
  // lane of the warp takes part. Packed terms come back as the pair's word and the word
  // shifted down: each right in its low 16 bits.
  template <int kCount>
  __device__ __forceinline__ void column_terms(int n_base, int ni0, int tig, u32 (&col)[kCount][2]) const {
#pragma unroll
    for (int c = 0; c < kCount; ++c)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        if constexpr (T::kOffsetW == 0) {
          col[c][e] = 0u;
        } else if constexpr (kTermsAtTileStart && kPackedTerms) {
          if (e == 0) col[c][0] = column_pair(ni0 + c, tig);
          else col[c][1] = col[c][0] >> 16;
        } else if constexpr (kTermsAtTileStart) {
          col[c][e] = __shfl_sync(0xffffffffu, col_terms[(ni0 + c) / 4], ((ni0 + c) % 4) * 8 + 2 * tig + e);
        } else {
          const int n = n_base + (ni0 + c) * 8 + 2 * tig + e;
          col[c][e] = n < this->N ? static_cast<u32>(T::kOffsetW) * load_nc(this->xsum + n) : 0u;
        }
      }
  }

  // ApmmProblem::store's arithmetic, the column terms gathered a chunk of columns at a time
  // (column_terms) and the row terms loaded before the first store (the compiler cannot tell
  // y from wsum, so a load after a store would wait for it).
  __device__ __forceinline__ void store(const i32 (&acc)[T::kGroups][1][kNI][4], int m_base, int n_base, int g,
                                        int tig) const {
    if constexpr (E::kStaged) {
      // The codes go to their own region after the pipeline, which the next tile is filling;
      // with one M tile the column sums are stored, else added up across M tiles (epilogue.cuh's
      // quantized_store). On the TMA core only the consumer warps synchronize, and a cluster's
      // tile may lie wholly past M (its pair shares the X tile): it would pack zero words (its
      // rows are all masked) into the next pixel's words and store zero sums over the real
      // ones, so the whole block skips it, barriers included (and counts for no M tile).
      if (kTmaCore && m_base / T::kBM * T::kBM >= this->M) return;
      StagedTile tile{*this, n_base / T::kBN * T::kBN};
      tile.smem = this->smem + kCodesOffsetBytes / 4;
      PixelSumAdd* pending = nullptr;
      if constexpr (kDeferredSums) pending = this->pending;
      quantized_store<T, Core80, false, kTmaCore ? kTmaConsumersBarrier : 0, kTmaCore ? Core80::kThreads : 0, kPendingSums>(
          tile, acc, m_base, n_base, g, tig, m_base / T::kBM * T::kBM, n_base / T::kBN, pending);
      return;
    }
    using Out = typename E::Out;  // Final, or i16 for the plain int16 output
    constexpr int kChunk = kNI < 4 ? kNI : 4;
    u32 row_term[2];
    row_terms(m_base, g, row_term);
#pragma unroll
    for (int ni0 = 0; ni0 < kNI; ni0 += kChunk) {
      u32 col[kChunk][2];
      column_terms(n_base, ni0, tig, col);
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int m = m_base + g + half * 8;
        if (m >= this->M) continue;
        Out* row = static_cast<Out*>(this->epi.out) + static_cast<i64>(m) * this->N;
#pragma unroll
        for (int c = 0; c < kChunk; ++c) {
          const int ni = ni0 + c;
          const int n = n_base + ni * 8 + 2 * tig;
          const u32 v0 = row_term[half] + col[c][0] + Core80::combine(acc, 0, ni, half * 2);
          const u32 v1 = row_term[half] + col[c][1] + Core80::combine(acc, 0, ni, half * 2 + 1);
          if constexpr (E::kPlain) {
            if (n < this->N)
              store_pair(row + n, static_cast<i32>(v0), static_cast<i32>(v1), (this->N & 1) == 0 && n + 1 < this->N,
                         n + 1 < this->N);
          } else if (n < this->N) {
            store_pair(row + n, chained(v0, m), chained(v1, m), (this->N & 1) == 0 && n + 1 < this->N, n + 1 < this->N);
          }
        }
      }
    }
  }

  // Output boxes: 64 rows of 128 bytes with the 128-byte swizzle of the output's tensor map,
  // 32 int32 or 64 int16 columns (kBoxFrags fragments of 8). Where the warpgroup's columns
  // are not whole int16 boxes (kWN a multiple of 32 but not 64), the plain stores take over.
  static constexpr int kBoxBytes = 64 * 128;
  static constexpr int kOutBytes = sizeof(typename E::Out);
  static constexpr int kBoxCols = 128 / kOutBytes, kBoxFrags = kBoxCols / 8;
  static constexpr int kBoxes = kNI / kBoxFrags;
  static constexpr bool kWholeBoxes = kNI % kBoxFrags == 0;

  // The warp's values of box c (columns from n_base + kBoxCols*c) into `buf`.
  __device__ __forceinline__ void stage_box(const i32 (&acc)[T::kGroups][1][kNI][4], int c, const u32 (&row_term)[2],
                                            u32 buf, int n_base, int row0, int g, int tig) const {
    static_assert(E::kPlain, "bulk-stored boxes hold the plain output");
    if constexpr (kOutBytes == 2) {
      stage_box16(acc, c, row_term, buf, n_base, row0, tig);
    } else {
#pragma unroll
      for (int f0 = 0; f0 < kBoxFrags; f0 += 4) {  // column terms 4 fragments at a time: fewer live registers
        u32 col[4][2];
        column_terms(n_base, c * kBoxFrags + f0, tig, col);
#pragma unroll
        for (int f = f0; f < f0 + 4; ++f)
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            const int r = row0 + g + half * 8;
            const u32 v0 = row_term[half] + col[f - f0][0] + Core80::combine(acc, 0, c * kBoxFrags + f, half * 2);
            const u32 v1 = row_term[half] + col[f - f0][1] + Core80::combine(acc, 0, c * kBoxFrags + f, half * 2 + 1);
            const int chunk = f * 2 + (tig >> 1);  // 16-byte chunk of the 128-byte row
            const u32 addr = buf + r * 128 + ((chunk ^ (r & 7)) << 4) + (tig & 1) * 8;
            asm volatile("st.shared.v2.b32 [%0], {%1, %2};\n" ::"r"(addr), "r"(v0), "r"(v1) : "memory");
          }
      }
    }
  }

  // stage_box for int16: a fragment's 8 columns are one 16-byte chunk of a row, and a thread's
  // column pair packed into one word is its part of an 8x8 matrix of 16-bit elements, so one
  // stmatrix stores two fragments' rows g and g + 8 (four matrices): a quarter of the shared
  // stores of a pair at a time. Sums are taken mod 2^16 in each half of the word: the first
  // column's in the low half (what lies above it is dropped), the second's in the high half
  // (every term shifted up 16 bits; the low half holds only the first column's term, so
  // nothing carries into the high half).
  __device__ __forceinline__ void stage_box16(const i32 (&acc)[T::kGroups][1][kNI][4], int c, const u32 (&row_term)[2],
                                              u32 buf, int n_base, int row0, int tig) const {
    const int lane = threadIdx.x & 31;
    // Lane l addresses row l%8 of matrix l/8: matrices 0 and 1 are the first fragment's rows
    // g and g + 8, 2 and 3 the second's. Row r's chunk f lies at chunk f ^ (r & 7), and
    // r & 7 == l & 7 (row0 is a multiple of 16).
    const u32 row_addr = buf + (row0 + (lane & 7) + ((lane >> 3) & 1) * 8) * 128;
    const int swz = lane & 7, second = lane >> 4;
#pragma unroll
    for (int f = 0; f < kBoxFrags; f += 2) {
      u32 packed[2][2];  // [fragment][half]
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        const int ni = c * kBoxFrags + f + k;
        u32 col = 0u;
        if constexpr (T::kOffsetW != 0 && kTermsAtTileStart) {
          col = column_pair(ni, tig);
        } else if constexpr (T::kOffsetW != 0) {
          u32 cols[1][2];
          column_terms(n_base, ni, tig, cols);
          col = __byte_perm(cols[0][0], cols[0][1], 0x5410);
        }
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const u32 lo = row_term[half] + col + Core80::combine(acc, 0, ni, half * 2);
          const u32 hi = (row_term[half] << 16) + col + (Core80::combine(acc, 0, ni, half * 2 + 1) << 16);
          packed[k][half] = __byte_perm(lo, hi, 0x7610);
        }
      }
      ptx::stmatrix_x4(row_addr + (((f + second) ^ swz) << 4), packed[0][0], packed[0][1], packed[1][0], packed[1][1]);
    }
  }

  // The TMA core's whole-tile staging (T::kOutputStagingBytes, rules::tma_output_staging_bytes):
  // the warpgroup's 64 x kWN outputs go into its own `region` of kWN/32 boxes, handed to the
  // copy engine as one bulk group, and the warps go on to the next tile's mainloop while the
  // output drains; they wait for the copy engine only before they overwrite the region, a
  // tile later. Without a tensor map it is store(). (Measured in session 6: 3-4% faster for
  // w2a2 at 8192^3, where it fits beside 4 stages; the output's writes still do not overlap
  // the operand reads, NOTES-wgmma.md.)
  __device__ __forceinline__ void store_tile_staged(const i32 (&acc)[T::kGroups][1][kNI][4], int m_base, int n_base,
                                                    int g, int tig, u32 region) const {
    if (ymap == nullptr || !kWholeBoxes) {
      store(acc, m_base, n_base, g, tig);
      return;
    }
    const int row0 = ((threadIdx.x >> 5) & 3) * 16;  // the warp's first row in its warpgroup's 64
    const int wg = threadIdx.x >> 7;
    const bool leader = (threadIdx.x & 127) == 0;
    u32 row_term[2];
    row_terms(m_base, g, row_term);
    if (leader) ptx::bulk_wait_read<0>();  // the previous tile's boxes have been read out
    ptx::named_barrier(1 + wg, 128);
#pragma unroll
    for (int c = 0; c < kBoxes; ++c) stage_box(acc, c, row_term, region + c * kBoxBytes, n_base, row0, g, tig);
    ptx::fence_proxy_async();  // the copy engine reads what these threads wrote
    ptx::named_barrier(1 + wg, 128);
    if (leader) {
      const u64 first = ptx::policy_evict_first();
#pragma unroll
      for (int c = 0; c < kBoxes; ++c)
        ptx::tma_store_2d(ymap, n_base + c * kBoxCols, m_base - row0, region + c * kBoxBytes, first);
      ptx::bulk_commit();
    }
  }

  // store()'s values through the copy engine (see kTmaStore); `staging` is this warpgroup's
  // pair of buffers. Without a tensor map it is store(). kRegion: the buffers are the TMA
  // core's own (T::kOutputStagingBytes of two boxes per warpgroup, where the whole tile does
  // not fit beside the pipeline), not a pipeline slot: each box waits for the read-out of
  // the box that last used its buffer, this tile's or the previous one's, and the warps
  // leave without waiting for the last ones.
  template <bool kRegion = false>
  __device__ __forceinline__ void store_staged(const i32 (&acc)[T::kGroups][1][kNI][4], int m_base, int n_base, int g,
                                               int tig, u32 staging) const {
    // A box waits for the one two boxes before it: with a single box a tile, the previous
    // tile's would not have been waited for (rules::tma_output_staging_bytes stages such
    // tiles whole).
    static_assert(!kRegion || kOutBytes != 4 || kBoxes >= 2, "two-box staging needs 64 columns or more per warpgroup");
    if (ymap == nullptr || !kWholeBoxes || (kRegion && kBoxes < 2)) {
      store(acc, m_base, n_base, g, tig);
      return;
    }
    const int row0 = ((threadIdx.x >> 5) & 3) * 16;  // the warp's first row in its warpgroup's 64
    const int wg = threadIdx.x >> 7;
    const bool leader = (threadIdx.x & 127) == 0;
    u32 row_term[2];
    row_terms(m_base, g, row_term);
    const u64 first = ptx::policy_evict_first();
#pragma unroll
    for (int c = 0; c < kBoxes; ++c) {
      const u32 buf = staging + (c & 1) * kBoxBytes;
      if (kRegion || c >= 2) {  // the buffer's previous chunk has been read out
        // With an odd number of boxes (96 or 192 columns), a tile's first box takes the
        // buffer of the previous tile's last box: the latest store, so wait for all.
        if (leader) {
          if (kRegion && c == 0 && kBoxes % 2 == 1)
            ptx::bulk_wait_read<0>();
          else
            ptx::bulk_wait_read<1>();
        }
        ptx::named_barrier(1 + wg, 128);
      }
      stage_box(acc, c, row_term, buf, n_base, row0, g, tig);
      ptx::fence_proxy_async();  // the copy engine reads what these threads wrote
      ptx::named_barrier(1 + wg, 128);
      if (leader) {
        ptx::tma_store_2d(ymap, n_base + c * kBoxCols, m_base - row0, buf, first);
        ptx::bulk_commit();
      }
    }
    if (!kRegion && leader) ptx::bulk_wait_read<0>();  // before the next block-wide barrier lets the slot refill
  }

  // The output's tensor map, where there is one, fetched ahead of the first bulk store (a
  // kernel parameter: before the dependency wait).
  __device__ __forceinline__ void prefetch_output_map() const {
    if (ymap != nullptr) ptx::prefetch_tma_map(ymap);
  }

  // After the block's last tile: its bulk stores have reached global memory.
  __device__ __forceinline__ void finish_stores() const {
    if (ymap != nullptr && (threadIdx.x & 127) == 0) ptx::bulk_wait<0>();
  }
};

template <class T>
__device__ __forceinline__ void apmm_sm90a(u32* smem, const u32* wp, const i32* wsum, const u32* xp, const i32* xsum,
                                           const EpilogueArgs& epi, int M, int N, int K, int ld, const TmaMap* ymap) {
  const int out_cw = (M + 127) / 128 * 4;
  const ApmmProblemSm90a<T> prob{{wp, static_cast<i64>(M) * ld, M, ld, ld, xp, wsum, xsum, epi, smem, M, N, K, N, N, out_cw},
                                 {},
                                 ymap};
  if (threadIdx.x == 0) prob.prefetch_output_map();
  // Launched with early_start (apmm_runner.cpp): global memory only after the wait.
  ptx::grid_dependency_wait();
  GemmSm90a<T>::run(smem, prob);
}

}  // namespace apnn

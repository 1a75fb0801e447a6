// The binary GEMM core on wgmma, fed by TMA in a thread-block cluster of 2 (sm_90a): the
// tile mapping, shared-memory layout and wgmma batches of gemm_sm90a.cuh, with the operand
// tiles brought in by bulk tensor copies that a producer warp issues, and the two blocks of a
// cluster sharing one operand through multicast.
//
// Why: the cp.async core moves (p*bm + q*bn) * bk bits from L2 into each block per K step,
// and at 128x256 that is about twice what L2 delivers at the wgmma peak (NOTES-wgmma.md).
// The blocks of a cluster compute neighbouring tiles that need the same tile of one operand
// (T::kClusterSharesX: the same X tile, M tiles 2u and 2u+1; else the same W tile, N tiles
// 2u and 2u+1); each loads half of that tile's rows and multicasts it to both, so the L2
// traffic of that operand halves.
//
// Warps: kWarpsM*kWarpsN consumer warps (warpgroups as in gemm_sm90a.cuh), then one
// producer warp whose lane 0 issues every copy. Pipeline: kStages slots, each with a "full"
// mbarrier (the producer's arrival + the copies' bytes: the whole stage lands in both blocks)
// and an "empty" mbarrier that every consumer warp of both blocks arrives on once its
// warpgroup's wgmmas reading the slot are done (the partner's producer writes into this
// block's slot too). Persistent: cluster c takes tile pairs c, c + clusters, ...; both
// blocks walk the same pairs, so their pipelines stay in step. The operand tiles are 1024
// bits of K (one 128-byte row per operand row, the TMA box's inner extent, copied with the
// 128-byte swizzle the wgmma descriptors use); rows past M or N and words past the packed
// row are zero-filled by the copy engine.
#pragma once
#include "gemm_sm90a.cuh"
#include "ptx_tma.cuh"

namespace apnn {

template <class T>
struct GemmSm90aTma {
  using Base = GemmSm90a<T>;
  static constexpr int kConsumerWarps = T::kWarpsM * T::kWarpsN;
  static constexpr int kThreads = 32 * kConsumerWarps + 32;
  static constexpr int kRowBytes = Base::kRowBytes;
  static constexpr int kStageBytes = Base::kStageBytes;
  static constexpr bool kShareX = T::kClusterSharesX;
  static constexpr int kConsumersBarrier = 8;  // named barrier of all consumer warps (1..4: store_staged's)
  // The pipeline, then 2*kStages mbarriers (host: rules::kTmaBarrierBytes covers 16 stages).
  static constexpr int kSmemBytes = Base::kSmemBytes + 2 * T::kStages * 8;
  static_assert(T::kBK == 1024, "TMA core: one 128-byte row per operand row and K step");
  static_assert((kShareX ? T::kBN : T::kBM) % 16 == 0, "TMA core: the shared tile's half must be whole 8-row atoms");

  // Tile pairs and where pair u's tile lies for this block (rank 0 or 1 of the cluster).
  struct Pairs {
    int tiles_m, tiles_n, count;
    __device__ __forceinline__ Pairs(int M, int N) {
      tiles_m = (M + T::kBM - 1) / T::kBM;
      tiles_n = (N + T::kBN - 1) / T::kBN;
      count = kShareX ? (tiles_m + 1) / 2 * tiles_n : tiles_m * ((tiles_n + 1) / 2);
    }
    __device__ __forceinline__ int m0(int u, int rank) const {
      return (kShareX ? (u % ((tiles_m + 1) / 2)) * 2 + rank : u % tiles_m) * T::kBM;
    }
    __device__ __forceinline__ int n0(int u, int rank) const {
      return (kShareX ? u / ((tiles_m + 1) / 2) : (u / tiles_m) * 2 + rank) * T::kBN;
    }
  };

  // Lane 0 of the producer warp: every (pair, K step) of this block, kStages ahead.
  static __device__ __forceinline__ void produce(u32 smem_base, u32 full0, u32 empty0, const TmaMap* wmap,
                                                 const TmaMap* xmap, const Pairs& pairs, int ktiles, u32 rank) {
    ptx::prefetch_tma_map(wmap);
    ptx::prefetch_tma_map(xmap);
    int i = 0;
    for (int u = blockIdx.x / 2; u < pairs.count; u += gridDim.x / 2) {
      const int m0 = pairs.m0(u, rank), n0 = pairs.n0(u, rank);
      for (int kt = 0; kt < ktiles; ++kt, ++i) {
        const int slot = i % T::kStages;
        const u32 full = full0 + slot * 8;
        ptx::mbar_wait(empty0 + slot * 8, ((i / T::kStages) & 1) ^ 1);  // both blocks' consumers freed it
        ptx::mbar_arrive_expect_tx(full, kStageBytes);
        const u32 a = smem_base + slot * kStageBytes;
        const u32 b = a + Base::kRowsA * kRowBytes;
        if (kShareX) {
          ptx::tma_load_3d(a, wmap, kt * 32, m0, 0, full);  // all p planes of the W tile
#pragma unroll
          for (int t = 0; t < T::kXBits; ++t)  // this block's half of each X plane, to both blocks
            ptx::tma_load_3d_multicast(b + (t * T::kBN + rank * (T::kBN / 2)) * kRowBytes, xmap, kt * 32,
                                       n0 + rank * (T::kBN / 2), t, full, 0x3);
        } else {
#pragma unroll
          for (int s = 0; s < T::kWBits; ++s)
            ptx::tma_load_3d_multicast(a + (s * T::kBM + rank * (T::kBM / 2)) * kRowBytes, wmap, kt * 32,
                                       m0 + rank * (T::kBM / 2), s, full, 0x3);
          ptx::tma_load_3d(b, xmap, kt * 32, n0, 0, full);
        }
      }
    }
  }

  // Problem: m/n bounds and store() as for GemmSm90a (ApmmProblemSm90a); its operand
  // pointers are not read (the tensor maps describe the operands).
  template <class Problem>
  static __device__ __forceinline__ void run(u32* smem_raw, const TmaMap* wmap, const TmaMap* xmap, const Problem& prob) {
    const u32 raw_addr = ptx::smem_addr(smem_raw);
    const u32 smem_base = raw_addr + ((1024u - (raw_addr & 1023u)) & 1023u);
    const u32 full0 = smem_base + T::kStages * kStageBytes, empty0 = full0 + T::kStages * 8;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const u32 rank = ptx::cluster_ctarank();
    const Pairs pairs(prob.a_rows, prob.N);
    const int ktiles = (prob.k_words + 31) / 32;

    if (threadIdx.x == 0) {
      for (int s = 0; s < T::kStages; ++s) {
        ptx::mbar_init(full0 + s * 8, 1);
        ptx::mbar_init(empty0 + s * 8, 2 * kConsumerWarps);
      }
      ptx::fence_mbar_init();
    }
    ptx::cluster_sync();  // the partner's barriers exist before any copy or arrival reaches them

    if (warp == kConsumerWarps) {
      if (lane == 0 && ktiles > 0) produce(smem_base, full0, empty0, wmap, xmap, pairs, ktiles, rank);
      __syncwarp();
    } else if (ktiles > 0) {
      consume(smem_base, full0, empty0, pairs, ktiles, rank, prob);
    }
    ptx::cluster_sync();  // neither block leaves while the other may still write into it
  }

  template <class Problem>
  static __device__ __forceinline__ void consume(u32 smem_base, u32 full0, u32 empty0, const Pairs& pairs, int ktiles,
                                                 u32 rank, const Problem& prob) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int wg = warp >> 2;
    const int wg_m = wg / Base::kWgN, wg_n = wg % Base::kWgN;
    const int g = lane >> 2, tig = lane & 3;
    const u64 desc_a = ptx::wgmma_desc(smem_base + wg_m * 64 * kRowBytes, 16, 8 * kRowBytes, Base::kSwizzle);
    const u64 desc_b =
        ptx::wgmma_desc(smem_base + Base::kRowsA * kRowBytes + wg_n * Base::kWN * kRowBytes, 16, 8 * kRowBytes, Base::kSwizzle);
    // This warp's arrival on a slot's empty barrier in both blocks.
    auto release = [&](int slot) {
      if (lane == 0) {
        ptx::mbar_arrive_cluster(empty0 + slot * 8, 0);
        ptx::mbar_arrive_cluster(empty0 + slot * 8, 1);
      }
    };

    i32 acc[T::kGroups][1][Base::kNI][4];
    Base::zero_acc(acc);
    int i = 0;
    for (int u = blockIdx.x / 2; u < pairs.count; u += gridDim.x / 2) {
      for (int kt = 0; kt < ktiles; ++kt, ++i) {
        const int slot = i % T::kStages;
        ptx::mbar_wait(full0 + slot * 8, (i / T::kStages) & 1);
        const u64 off = static_cast<u64>(slot * (kStageBytes >> 4));
        Base::fence_acc(acc);
        ptx::wgmma_fence();
        Base::mma_step(acc, desc_a + off, desc_b + off, kt > 0);
        ptx::wgmma_commit();
        Base::fence_acc(acc);
        ptx::wgmma_wait<1>();  // the previous step's wgmmas are done: its slot may be refilled
        if (kt > 0) release((i - 1) % T::kStages);
      }
      ptx::wgmma_wait<0>();
      Base::fence_acc(acc);
      const int slot = (i - 1) % T::kStages;
      const int m_base = pairs.m0(u, rank) + wg_m * 64 + (warp & 3) * 16, n_base = pairs.n0(u, rank) + wg_n * Base::kWN;
      if constexpr (Problem::kTmaStore) {
        // Stage the output in the last step's slot (as gemm_sm90a.cuh), released to the
        // producers only once the copy engine has read it.
        ptx::named_barrier(kConsumersBarrier, 32 * kConsumerWarps);  // all wgmmas are done with the slot
        prob.store_staged(acc, m_base, n_base, g, tig, smem_base + slot * kStageBytes + wg * Problem::kStagingBytes);
        ptx::named_barrier(1 + wg, 128);  // the warpgroup's leader has seen its buffers read out
        release(slot);
      } else {
        release(slot);
        prob.store(acc, m_base, n_base, g, tig);
      }
    }
    if constexpr (Problem::kTmaStore) prob.finish_stores();
  }
};

}  // namespace apnn

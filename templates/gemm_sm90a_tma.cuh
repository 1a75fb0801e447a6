// The binary GEMM core on wgmma, fed by TMA in a thread-block cluster (sm_90a): the tile
// mapping, shared-memory layout and wgmma batches of gemm_sm90a.cuh, with the operand tiles
// brought in by bulk tensor copies that a producer warp issues, and the blocks of a cluster
// sharing operand tiles through multicast.
//
// Why: the cp.async core moves (p*bm + q*bn) * bk bits from L2 into each block per K step,
// and at 128x256 that is about twice what L2 delivers at the wgmma peak (NOTES-wgmma.md).
// A cluster of kCM x kCN blocks computes a kCM x kCN patch of neighbouring tiles: the kCN
// blocks of one M tile need the same W tile, the kCM blocks of one N tile the same X tile.
// Each block loads 1/kCN of its W tile's rows and 1/kCM of its X tile's rows and multicasts
// them to the blocks that share them, so the L2 traffic of W drops kCN-fold and that of X
// kCM-fold. Block rank r of the cluster sits at (r % kCM, r / kCM) in the patch.
//
// Warps: kWarpsM*kWarpsN consumer warps (warpgroups as in gemm_sm90a.cuh), then the producer
// warp (or warpgroup: kProducerWarps) whose first lane issues every copy. Pipeline: kStages
// slots, each with a "full" mbarrier (the producer's arrival + the copies' bytes: the whole
// stage lands in every block) and an "empty" mbarrier. A block's producer writes into the
// slots of the blocks in its patch row and column, so every consumer warp arrives on the
// empty barrier of each of those kCM + kCN - 1 blocks (itself included) once its warpgroup's
// wgmmas reading the slot are done. Persistent: cluster c takes patches c, c + clusters, ...;
// all blocks walk the same patches, so their pipelines stay in step. The operand tiles are
// 1024 bits of K (one 128-byte row per operand row, the TMA box's inner extent, copied with
// the 128-byte swizzle the wgmma descriptors use), or 512 bits (64-byte rows, the 64-byte
// swizzle) where a 1024-bit stage does not fit twice (w8a8's W tile alone is 128 KB); rows
// past M or N and words past the packed row are zero-filled by the copy engine.
#pragma once
#include "gemm_sm90a.cuh"
#include "ptx_tma.cuh"
#include "timeline.cuh"

namespace apnn {

template <class T>
struct GemmSm90aTma {
  using Base = GemmSm90a<T>;
  static constexpr int kConsumerWarps = T::kWarpsM * T::kWarpsN;
  // One producer warp, or (rules::tma_producer_warps) a warpgroup whose registers go to 8
  // consumer warps with more than 128 accumulators: the 12 warps launch with 168 registers a
  // thread (__launch_bounds__(kThreads, 1): without a known entry count ptxas would drop the
  // setmaxnreg, C7508), the producers keep 40 and the consumers take 232. 40 + 2 x 232 =
  // 3 x 168: the consumers' increase waits for exactly what the producers give up.
  static constexpr bool kRegsToConsumers = T::kProducerWarps == 4;
  static constexpr int kThreads = 32 * (kConsumerWarps + T::kProducerWarps);
  static_assert(T::kProducerWarps == 1 || (kRegsToConsumers && kConsumerWarps == 8), "TMA core: producer warps");
  static constexpr int kRowBytes = Base::kRowBytes;
  static constexpr int kStageBytes = Base::kStageBytes;
  static constexpr int kCM = T::kClusterM, kCN = T::kClusterN, kCluster = kCM * kCN;
  static constexpr int kPeers = kCM + kCN - 1;  // blocks whose producers write into this block
  static constexpr int kConsumersBarrier = kTmaConsumersBarrier;
  static constexpr int kWarpgroups = kConsumerWarps / 4;
  // The pipeline, the output staging (T::kOutputStagingBytes, 0 where the output is stored
  // otherwise), then 2*kStages mbarriers and a word for the timeline's record index
  // (timeline.cuh; host: rules::kTmaBarrierBytes covers 15 stages and the word), then a
  // quantize chain's codes (T::kCodeStagingBytes at tma_codes_offset).
  static constexpr int kSmemBytes = tma_codes_offset<T>() + T::kCodeStagingBytes;
  static_assert(T::kBK == 1024 || T::kBK == 512, "TMA core: one 128- or 64-byte row per operand row and K step");
  static constexpr int kRowWords = Base::kRowWords;  // the TMA box's inner extent
  static_assert(T::kBM % (8 * kCN) == 0 && T::kBN % (8 * kCM) == 0, "TMA core: multicast parts must be whole 8-row atoms");
  static_assert(kCluster >= 2 && kCluster <= 8, "TMA core: clusters of 2..8 blocks");

  // The word after the empty barriers: the block's timeline record (timeline.cuh; profiling only).
  static __device__ __forceinline__ u32 timeline_slot(u32 empty0) { return empty0 + T::kStages * 8; }

  // Patches of kCM x kCN tiles and where patch u's tile lies for block (rm, rn).
  struct Patches {
    int patches_m, count;
    __device__ __forceinline__ Patches(int M, int N) {
      patches_m = ((M + T::kBM - 1) / T::kBM + kCM - 1) / kCM;
      count = patches_m * (((N + T::kBN - 1) / T::kBN + kCN - 1) / kCN);
    }
    __device__ __forceinline__ int m0(int u, int rm) const { return ((u % patches_m) * kCM + rm) * T::kBM; }
    __device__ __forceinline__ int n0(int u, int rn) const { return ((u / patches_m) * kCN + rn) * T::kBN; }
  };

  // Lane 0 of the producer warp: every (patch, K step) of this block, kStages ahead.
  static __device__ __forceinline__ void produce(u32 smem_base, u32 full0, u32 empty0, const TmaMap* wmap,
                                                 const TmaMap* xmap, const Patches& patches, int ktiles, int rm, int rn) {
    // Multicast masks: the blocks of this patch row (same M tile) and column (same N tile).
    unsigned short row_mask = 0, col_mask = 0;
#pragma unroll
    for (int j = 0; j < kCN; ++j) row_mask |= 1u << (rm + kCM * j);
#pragma unroll
    for (int i = 0; i < kCM; ++i) col_mask |= 1u << (i + kCM * rn);
    constexpr int kWPart = T::kBM / kCN, kXPart = T::kBN / kCM;  // rows this block loads per plane
    const u64 keep = ptx::policy_evict_last();
    int i = 0;
    for (int u = blockIdx.x / kCluster; u < patches.count; u += gridDim.x / kCluster) {
      const int m0 = patches.m0(u, rm), n0 = patches.n0(u, rn);
      for (int kt = 0; kt < ktiles; ++kt, ++i) {
        const int slot = i % T::kStages;
        const u32 full = full0 + slot * 8;
        ptx::mbar_wait(empty0 + slot * 8, ((i / T::kStages) & 1) ^ 1);  // every peer's consumers freed it
        ptx::mbar_arrive_expect_tx(full, kStageBytes);
        if (i == 0) APNN_TIMELINE_MARK(timeline_slot(empty0), kTlFirstCopy);
        const u32 a = smem_base + slot * kStageBytes;
        const u32 b = a + Base::kRowsA * kRowBytes;
        if constexpr (kCN == 1) {
          ptx::tma_load_3d(a, wmap, kt * kRowWords, m0, 0, full, keep);  // all p planes of the W tile
        } else {
#pragma unroll
          for (int s = 0; s < T::kWBits; ++s)  // this block's part of each W plane, to its patch row
            ptx::tma_load_3d_multicast(a + (s * T::kBM + rn * kWPart) * kRowBytes, wmap, kt * kRowWords, m0 + rn * kWPart, s,
                                       full, row_mask, keep);
        }
        if constexpr (kCM == 1) {
          ptx::tma_load_3d(b, xmap, kt * kRowWords, n0, 0, full, keep);  // all q planes of the X tile
        } else {
#pragma unroll
          for (int t = 0; t < T::kXBits; ++t)  // this block's part of each X plane, to its patch column
            ptx::tma_load_3d_multicast(b + (t * T::kBN + rm * kXPart) * kRowBytes, xmap, kt * kRowWords, n0 + rm * kXPart, t,
                                       full, col_mask, keep);
        }
      }
    }
  }

  // Problem: m/n bounds, prefetch_output_map(), load_column_terms(n_base) (before each patch's
  // mainloop, with the warpgroup's first column), store(), store_staged(), store_tile_staged()
  // and finish_stores() (ApmmProblemSm90a); its operand pointers are not read (the tensor maps
  // describe the operands).
  template <class Problem>
  static __device__ __forceinline__ void run(u32* smem_raw, const TmaMap* wmap, const TmaMap* xmap, const Problem& prob) {
    const u32 raw_addr = ptx::smem_addr(smem_raw);
    const u32 smem_base = raw_addr + ((1024u - (raw_addr & 1023u)) & 1023u);
    const u32 full0 = smem_base + T::kStages * kStageBytes + T::kOutputStagingBytes, empty0 = full0 + T::kStages * 8;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int rank = static_cast<int>(ptx::cluster_ctarank());
    const int rm = rank % kCM, rn = rank / kCM;
    const Patches patches(prob.a_rows, prob.N);
    const int ktiles = (prob.k_words + kRowWords - 1) / kRowWords;

    if (threadIdx.x == 0) {
      APNN_TIMELINE_BEGIN(timeline_slot(empty0));
      for (int s = 0; s < T::kStages; ++s) {
        ptx::mbar_init(full0 + s * 8, 1);
        ptx::mbar_init(empty0 + s * 8, kPeers * kConsumerWarps);
      }
      ptx::fence_mbar_init();
      // The tensor maps are kernel parameters, which no earlier kernel writes: fetched before
      // the dependency wait, they are at hand for the first copy after it (the output's for
      // the first bulk store).
      ptx::prefetch_tma_map(wmap);
      ptx::prefetch_tma_map(xmap);
      prob.prefetch_output_map();
    }
    ptx::cluster_sync();  // the peers' barriers exist before any copy or arrival reaches them
    // Launched with early_start (apmm_runner.cpp): the launch, the barrier setup and the
    // cluster's first sync overlap the previous kernel's end; global memory only after this.
    ptx::grid_dependency_wait();
    if (threadIdx.x == 0) APNN_TIMELINE_MARK(timeline_slot(empty0), kTlDepWait);

    // (With one producer warp both tests are the same; `==` keeps those kernels' code as it was.)
    if (kRegsToConsumers ? warp >= kConsumerWarps : warp == kConsumerWarps) {
      if constexpr (kRegsToConsumers) ptx::setmaxnreg_dec<40>();
      if (warp == kConsumerWarps && lane == 0 && ktiles > 0)
        produce(smem_base, full0, empty0, wmap, xmap, patches, ktiles, rm, rn);
      __syncwarp();
    } else if (ktiles > 0) {
      if constexpr (kRegsToConsumers) ptx::setmaxnreg_inc<232>();
      consume(smem_base, full0, empty0, patches, ktiles, rm, rn, prob);
    }
    ptx::cluster_sync();  // no block leaves while a peer may still write into it
    if (threadIdx.x == 0) APNN_TIMELINE_MARK(timeline_slot(empty0), kTlExit);
  }

  // Folded sets (rules::folds_sets: where the exact sets do not fit, or fill the registers without
  // stacking on a narrow tile), each K step's wgmmas of W plane s go into a temporary of its q
  // stacked sets (one wgmma of N = q*kWN a K slice, the sets' columns plane after plane), added
  // into the one result set with the pairs' weights once they are done; the other warpgroup's
  // wgmmas keep the tensor cores busy during a fold. (A second temporary, so that plane s's wgmmas
  // ran during plane s-1's fold, was exact, but ptxas serialized the wgmmas, C7514: session 37.)
  static constexpr bool kFold = T::kFold;
  static_assert(!kFold || (Base::kStack == T::kXBits && Base::kWgN == 1 && !Base::kRegA),
                "folded sets: all q X planes stacked in one wgmma, one warpgroup along N");
  using FoldTmp = i32[1][1][kFold ? Base::kStack * Base::kNI : 1][4];
  // One K step of a folded tile: each W plane's wgmmas (A at desc_a, B's low word b_lo), then
  // its temporary into the result (s a constant where the planes' loop unrolls, and with it
  // the weights). The previous step's wgmmas are all done: release() may free its slot.
  template <class Release>
  static __device__ __forceinline__ void fold_step(i32 (&acc)[T::kGroups][1][Base::kNI][4], FoldTmp& tmp,
                                                   ptx::WgmmaDesc desc_a, u32 b_lo, Release&& release) {
    release();
#pragma unroll
    for (int s = 0; s < T::kWBits; ++s) {
      apnn::fence_acc(tmp);
      ptx::wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < Base::kKSteps; ++ks)
        ptx::WgmmaB1<Base::kMmaN>::mma(tmp[0][0], desc_a.lo + static_cast<u32>((s * T::kBM * kRowBytes + ks * 32) >> 4),
                                       b_lo + static_cast<u32>((ks * 32) >> 4), desc_a.hi, ks > 0);
      ptx::wgmma_commit();
      apnn::fence_acc(tmp);
      ptx::wgmma_wait<0>();
      apnn::fence_acc(tmp);
#pragma unroll
      for (int t = 0; t < T::kXBits; ++t)
#pragma unroll
        for (int ni = 0; ni < Base::kNI; ++ni)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            acc[0][0][ni][e] = static_cast<i32>(static_cast<u32>(acc[0][0][ni][e]) +
                                                static_cast<u32>(T::pair_weight(s, t)) *
                                                    static_cast<u32>(tmp[0][0][t * Base::kNI + ni][e]));
    }
  }

  template <class Problem>
  static __device__ __forceinline__ void consume(u32 smem_base, u32 full0, u32 empty0, const Patches& patches,
                                                 int ktiles, int rm, int rn, const Problem& prob) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int wg = warp >> 2;  // not GemmSm90a::warpgroup_index: 2-5% slower here (session 12, device call 3)
    const int wg_m = wg / Base::kWgN, wg_n = wg % Base::kWgN;
    const int g = lane >> 2, tig = lane & 3;
    const ptx::WgmmaDesc desc_a = ptx::wgmma_desc(smem_base + wg_m * 64 * kRowBytes, 16, 8 * kRowBytes, Base::kSwizzle);
    const ptx::WgmmaDesc desc_b =
        ptx::wgmma_desc(smem_base + Base::kRowsA * kRowBytes + wg_n * Base::kWN * kRowBytes, 16, 8 * kRowBytes, Base::kSwizzle);
    // This warp's arrival on a slot's empty barrier in each peer: lane j < kCN arrives at
    // patch-row block j, lane kCN + i at the other blocks of the patch column.
    const int peer = lane < kCN ? rm + kCM * lane : (lane - kCN + (lane - kCN >= rm ? 1 : 0)) + kCM * rn;
    auto release = [&](int slot) {
      if (lane < kPeers) ptx::mbar_arrive_cluster(empty0 + slot * 8, static_cast<u32>(peer));
    };

    i32 acc[T::kGroups][1][Base::kNI][4];
    Base::zero_acc(acc);
    FoldTmp tmp;  // folded tiles: a W plane's q stacked sets (fold_step)
    typename Base::AFrags a;  // Base::kRegA: this group of K slices' A fragments
    const int a_row0 = wg_m * 64 + (warp & 3) * 16;
    TimelineCycles cycles;  // thread 0's account (profiling only)
    int i = 0;
    for (int u = blockIdx.x / kCluster; u < patches.count; u += gridDim.x / kCluster) {
      prob.load_column_terms(patches.n0(u, rn) + wg_n * Base::kWN);  // the epilogue's, loaded under the mainloop
      if constexpr (kFold) Base::zero_acc(acc);  // the folds add into it
      for (int kt = 0; kt < ktiles; ++kt, ++i) {
        const int slot = i % T::kStages;
        cycles.begin();
        ptx::mbar_wait(full0 + slot * 8, (i / T::kStages) & 1);
        cycles.wait_end();
        if (i == 0 && threadIdx.x == 0) APNN_TIMELINE_MARK(timeline_slot(empty0), kTlFirstFull);
        const u32 off = static_cast<u32>(slot * (kStageBytes >> 4));
        if constexpr (kFold) {
          fold_step(acc, tmp, {desc_a.lo + off, desc_a.hi}, desc_b.lo + off, [&] {
            if (kt > 0) release((i - 1) % T::kStages);
          });
        } else if constexpr (Base::kRegA) {
          // Per group of K slices: the warpgroup's previous wgmmas are done (their A registers
          // may be overwritten; at a step's first group, the previous step's slot is released)
          // before the group's fragments load. The other warpgroup's wgmmas keep the tensor
          // cores busy meanwhile.
#pragma unroll
          for (int ks0 = 0; ks0 < Base::kKSteps; ks0 += Base::kASlices) {
            ptx::wgmma_wait<0>();
            Base::fence_acc(acc);
            Base::fence_a(a);
            if (ks0 == 0 && kt > 0) release((i - 1) % T::kStages);
            Base::load_a(a, smem_base + slot * kStageBytes, a_row0, ks0, lane);
            ptx::wgmma_fence();
            Base::mma_slices_rs(acc, a, {desc_b.lo + off, desc_b.hi}, ks0, kt > 0);
            ptx::wgmma_commit();
            Base::fence_acc(acc);
          }
        } else {
          Base::fence_acc(acc);
          ptx::wgmma_fence();
          Base::mma_step(acc, {desc_a.lo + off, desc_a.hi}, {desc_b.lo + off, desc_b.hi}, kt > 0);
          ptx::wgmma_commit();
          Base::fence_acc(acc);
          ptx::wgmma_wait<1>();  // the previous step's wgmmas are done: its slot may be refilled
          if (kt > 0) release((i - 1) % T::kStages);
        }
      }
      // As on the cp.async core (gemm_sm90a.cuh): the stream's next kernel may start
      // launching once every block has a warp past its first mainloop.
      if (i == ktiles) ptx::allow_dependent_launch();
      ptx::wgmma_wait<0>();
      Base::fence_acc(acc);
      if constexpr (Base::kRegA) Base::fence_a(a);
      if (threadIdx.x == 0) APNN_TIMELINE_MARK(timeline_slot(empty0), i == ktiles ? kTlFirstPatch : kTlLastPatch);
      cycles.begin();
      const int slot = (i - 1) % T::kStages;
      const int m_base = patches.m0(u, rm) + wg_m * 64 + (warp & 3) * 16, n_base = patches.n0(u, rn) + wg_n * Base::kWN;
      if constexpr (T::kOutputStagingBytes > 0) {
        release(slot);
        const u32 staging = smem_base + T::kStages * kStageBytes + wg * (T::kOutputStagingBytes / kWarpgroups);
        if constexpr (T::kOutputStagingWhole)
          prob.store_tile_staged(acc, m_base, n_base, g, tig, staging);
        else
          prob.template store_staged<true>(acc, m_base, n_base, g, tig, staging);
      } else if constexpr (Problem::kTmaStore) {
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
      cycles.epilogue_end();
    }
    if constexpr (Problem::kTmaStore || T::kOutputStagingBytes > 0) prob.finish_stores();
    if (threadIdx.x == 0) {
      APNN_TIMELINE_MARK(timeline_slot(empty0), kTlStored);
      cycles.write(timeline_slot(empty0));
    }
  }
};

}  // namespace apnn

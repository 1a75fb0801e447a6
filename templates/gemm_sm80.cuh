// The binary GEMM core on mma.sync m16n8k256 .b1 AND+popc (sm_80 and later): the
// paper's batch-based double caching, shared by APMM and APConv. A block owns a BM x BN output tile; all its warps cp.async the
// W tile of every weight plane and the X tile of every activation plane into shared
// memory once per K step (the "virtual batch": a (p*BM) x (q*BN) binary product),
// several stages deep. Each warp keeps its accumulators in registers across the
// whole K loop, one accumulator set per distinct plane-pair weight, and combines
// them (plus the popcount corrections) in registers before a single store.
//
// Traits T, emitted by the generator from a validated spec:
//   kWBits kXBits kBM kBN kBK kWarpsM kWarpsN kStages kGroups kOffsetW kOffsetX
//   group_of(s, t): accumulator set of plane pair (s, t); group_weight(g): its alpha_s*gamma_t
// What differs between ops (how the X tile is gathered, the epilogue) is a Problem
// policy passed to run(): see apmm_sm80.cuh and conv_sm80.cuh.
#pragma once
#include "apnn_types.cuh"
#include "operand_copy.cuh"
#include "ptx_sm80.cuh"

namespace apnn {

template <class T>
struct GemmSm80 {
  static constexpr int kThreads = 32 * T::kWarpsM * T::kWarpsN;
  static constexpr int kRowWords = T::kBK / 32;               // one shared-memory tile row
  static constexpr int kUnitWords = T::kBK >= 512 ? 16 : 8;   // what a thread quad reads of a row at once
  static constexpr int kUnits = kRowWords / kUnitWords;
  static constexpr int kSteps = kUnitWords / 8;               // m16n8k256 steps per unit
  static constexpr int kRowsA = T::kWBits * T::kBM;
  static constexpr int kRowsB = T::kXBits * T::kBN;
  static constexpr int kStageWords = (kRowsA + kRowsB) * kRowWords;
  static constexpr int kWM = T::kBM / T::kWarpsM;
  static constexpr int kWN = T::kBN / T::kWarpsN;
  static constexpr int kMI = kWM / 16;
  static constexpr int kNI = kWN / 8;
  static constexpr int kChunksPerRow = kRowWords / 4;         // 16-byte cp.async chunks
  static constexpr int kSmemBytes = T::kStages * kStageWords * 4;  // the pipeline's buffers

  // Row units are XOR-swizzled by row parity: the two rows one quarter-warp reads
  // with 16-byte loads then fall into different bank halves.
  static __device__ __forceinline__ int swz(int row, int word) {
    if (kUnits == 1) return row * kRowWords + word;
    const int unit = word / kUnitWords;
    return row * kRowWords + (unit ^ (row & 1)) * kUnitWords + word % kUnitWords;
  }

  // Where 16-byte chunk `col` of tile row `row` of an operand tile starting at dst goes.
  static __device__ __forceinline__ u32* chunk(u32* dst, int row, int col) { return dst + swz(row, col * 4); }

  // Rows past the matrix and words past the packed row are zero-filled, so any M, N, K work
  // (operand_copy.cuh); the swizzle repeats every 2 rows, and a thread's rows are
  // kThreads/kChunksPerRow >= 4 apart.
  template <int kRows, int kTileRows>
  static __device__ __forceinline__ void load_operand(u32* dst, const u32* __restrict__ planes, i64 plane_stride,
                                                      int rows, int row0, int ld, int kword0) {
    copy_operand_rows<kThreads, kChunksPerRow, kRowWords * 4, kRows, kTileRows>(
        reinterpret_cast<char*>(dst), [](int row, int col) { return swz(row, col * 4) * 4; }, planes, plane_stride, rows,
        row0, ld, kword0);
  }

  // Thread (g, tig) takes words [tig*2*kSteps, +2*kSteps) of a unit. Pairing the same
  // words in A and B only permutes K inside the unit, which AND+popc does not see.
  static __device__ __forceinline__ void load_frag(const u32* s, int row, int unit, int tig, u32 (&f)[2 * kSteps]) {
    const u32* p = s + swz(row, unit * kUnitWords + tig * 2 * kSteps);
    if constexpr (kSteps == 2) {
      const u32x4 v = *reinterpret_cast<const u32x4*>(p);
      f[0] = v.x; f[1] = v.y; f[2] = v.z; f[3] = v.w;
    } else {
      const u32x2 v = *reinterpret_cast<const u32x2*>(p);
      f[0] = v.x; f[1] = v.y;
    }
  }

  static __device__ __forceinline__ void compute_stage(const u32* stage, i32 (&acc)[T::kGroups][kMI][kNI][4],
                                                       int warp_m, int warp_n, int g, int tig) {
    const u32* sa = stage;
    const u32* sb = stage + kRowsA * kRowWords;
#pragma unroll
    for (int unit = 0; unit < kUnits; ++unit) {
      u32 b[T::kXBits][kNI][2 * kSteps];
#pragma unroll
      for (int t = 0; t < T::kXBits; ++t)
#pragma unroll
        for (int ni = 0; ni < kNI; ++ni) load_frag(sb, t * T::kBN + warp_n * kWN + ni * 8 + g, unit, tig, b[t][ni]);
#pragma unroll
      for (int s = 0; s < T::kWBits; ++s) {
        u32 lo[kMI][2 * kSteps], hi[kMI][2 * kSteps];
#pragma unroll
        for (int mi = 0; mi < kMI; ++mi) {
          const int row = s * T::kBM + warp_m * kWM + mi * 16 + g;
          load_frag(sa, row, unit, tig, lo[mi]);
          load_frag(sa, row + 8, unit, tig, hi[mi]);
        }
#pragma unroll
        for (int step = 0; step < kSteps; ++step)
#pragma unroll
          for (int t = 0; t < T::kXBits; ++t)
#pragma unroll
            for (int mi = 0; mi < kMI; ++mi)
#pragma unroll
              for (int ni = 0; ni < kNI; ++ni)
#pragma unroll
                for (int r = 0; r < T::repeat(s, t); ++r)  // 1 unless the generator merged sets
                  ptx::bmma_and_16x8x256(acc[T::group_of(s, t)][mi][ni], lo[mi][2 * step], hi[mi][2 * step],
                                         lo[mi][2 * step + 1], hi[mi][2 * step + 1], b[t][ni][2 * step],
                                         b[t][ni][2 * step + 1]);
      }
    }
  }

  // The mainloop. Problem supplies the operands' geometry and two policies:
  //   a_planes, a_plane_stride, a_rows, a_ld: the A (weight) planes, rows of ld words
  //   k_words: words of K to reduce over; load_b(dst, row0, kword0): the X tile;
  //   store(acc, m_base, n_base, g, tig): the epilogue.
  template <class Problem>
  static __device__ __forceinline__ void run(u32* smem, const Problem& prob) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int warp_m = warp / T::kWarpsN, warp_n = warp % T::kWarpsN;
    const int g = lane >> 2, tig = lane & 3;
    const int m0 = blockIdx.x * T::kBM, n0 = blockIdx.y * T::kBN;
    const int ktiles = (prob.k_words + kRowWords - 1) / kRowWords;

    auto load_stage = [&](int slot, int kt) {
      u32* st = smem + slot * kStageWords;
      load_operand<kRowsA, T::kBM>(st, prob.a_planes, prob.a_plane_stride, prob.a_rows, m0, prob.a_ld, kt * kRowWords);
      prob.load_b(st + kRowsA * kRowWords, n0, kt * kRowWords);
    };

    i32 acc[T::kGroups][kMI][kNI][4];
#pragma unroll
    for (int grp = 0; grp < T::kGroups; ++grp)
#pragma unroll
      for (int mi = 0; mi < kMI; ++mi)
#pragma unroll
        for (int ni = 0; ni < kNI; ++ni)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[grp][mi][ni][e] = 0;

#pragma unroll
    for (int st = 0; st < T::kStages - 1; ++st) {
      if (st < ktiles) load_stage(st, st);
      ptx::cp_async_commit();
    }
    for (int kt = 0; kt < ktiles; ++kt) {
      ptx::cp_async_wait<T::kStages - 2>();
      __syncthreads();  // stage kt landed for everyone, and stage kt-1 is no longer read
      const int next = kt + T::kStages - 1;
      if (next < ktiles) load_stage(next % T::kStages, next);
      ptx::cp_async_commit();
      compute_stage(smem + (kt % T::kStages) * kStageWords, acc, warp_m, warp_n, g, tig);
    }
    prob.store(acc, m0 + warp_m * kWM, n0 + warp_n * kWN, g, tig);
  }

  // Sum of the accumulator sets, each weighted by its plane pair's alpha_s*gamma_t, in
  // wrapping 32-bit arithmetic: exact whenever the true result fits int32. With kShift, the
  // weights over 2^kShift (which must divide each): the sum over 2^kShift, modulo 2^32.
  template <int kShift = 0>
  static __device__ __forceinline__ u32 combine(const i32 (&acc)[T::kGroups][kMI][kNI][4], int mi, int ni, int e) {
    u32 sum = 0;
#pragma unroll
    for (int grp = 0; grp < T::kGroups; ++grp)
      sum += static_cast<u32>(T::group_weight(grp) / (1 << kShift)) * static_cast<u32>(acc[grp][mi][ni][e]);
    return sum;
  }
};

}  // namespace apnn

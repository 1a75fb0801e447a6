// The binary GEMM core on wgmma.mma_async m64nNk256 .b1 AND+popc (sm_90a only): the same
// batch-based double caching as gemm_sm80.cuh, with the tensor cores reading both
// operands straight from shared memory through descriptors.
//
// Tile mapping (kernel_rules.h, wgmma_tile_error): the block's warps form warpgroups of 4
// consecutive warps; kWarpsM/4 warpgroups stack along M (64 rows each, warp w of a
// warpgroup owns rows 16w..16w+15), kWarpsN along N (kWN = kBN/kWarpsN columns each of
// every X plane; a wgmma covers kStack planes: kMmaN columns). So kBM == 16*kWarpsM, and
// every warp holds one 16-row slice: the accumulator fragment has exactly the shape of
// GemmSm80's with kMI == 1, and the epilogues (ApmmProblem::store, ConvProblem::store) are
// shared.
//
// Shared memory: per stage, the W tiles of all p planes then the X tiles of all q planes,
// rows of kBK bits (32, 64 or 128 bytes) back to back, K-major, swizzled in the
// hardware's 32/64/128-byte mode matching the row width (16-byte chunk c of row r goes to
// chunk c ^ ((r*rowbytes/128) % (rowbytes/16))); the base is aligned to 1024 bytes
// (callers allocate kSmemSlack extra bytes). One K step of 256 bits is 32 bytes of a row:
// the descriptor's start address advances by 32 bytes inside the swizzle atom.
//
// Pipeline: kStages slots filled by cp.async (zero-fill past M, N and K). With 3 or more
// stages, step i waits for its slot and for its warpgroup's step i-2 wgmmas (wait_group 1),
// passes one block barrier, refills step i-2's slot with step i+kStages-2, and issues the
// slot's wgmmas (p*q/kStack a K slice: one may cover kStack X planes): two steps of wgmmas
// may be in flight while the copies of kStages-2 steps fly. Where the wgmmas take A from
// registers (kRegA: 32 columns or fewer, several wgmmas per W fragment, 4 or more a slice)
// one group of K slices is in flight per warpgroup.
// A second barrier a step was 16% of the N=1 convs' stall samples
// (session 7, call 3). With 2 stages: issue, wait for step i-1, barrier, refill. APMM
// launches a persistent grid (at most a wave of blocks), whose successive tiles form one
// pipeline; APConv does where rules::conv_persistent says so, else one block per tile
// (conv_sm90a.cuh).
#pragma once
#include "apnn_types.cuh"
#include "operand_copy.cuh"
#include "ptx_sm80.cuh"
#include "ptx_sm90a.cuh"

namespace apnn {

// The TMA core's named barrier of all its consumer warps (its producer warps take no part;
// 1..4 are the warpgroups' stores).
inline constexpr int kTmaConsumersBarrier = 8;

template <class T>
struct GemmSm90a;
// Where the TMA core (gemm_sm90a_tma.cuh) puts a quantize chain's codes, 16-byte aligned: after
// the pipeline, the output staging (T::kOutputStagingBytes), 2*kStages mbarriers and the
// timeline's word. ApmmProblemSm90a stores them there.
template <class T>
constexpr int tma_codes_offset() {
  return (GemmSm90a<T>::kSmemBytes + T::kOutputStagingBytes + 2 * T::kStages * 8 + 8 + 15) / 16 * 16;
}

template <class T>
struct GemmSm90a {
  static constexpr int kThreads = 32 * T::kWarpsM * T::kWarpsN;
  static constexpr int kWgN = T::kWarpsN;                  // warpgroups along N
  static constexpr int kWN = T::kBN / T::kWarpsN;          // a warpgroup's columns of one X plane
  static constexpr int kMI = 1;
  static constexpr int kNI = kWN / 8;
  static constexpr int kRowBytes = T::kBK / 8;             // 32, 64 or 128: also the swizzle width
  static constexpr int kRowWords = T::kBK / 32;
  static constexpr int kChunksPerRow = kRowBytes / 16;
  static constexpr int kKSteps = T::kBK / 256;             // wgmma K steps per stage
  static constexpr int kRowsA = T::kWBits * T::kBM;
  static constexpr int kRowsB = T::kXBits * T::kBN;
  static constexpr int kStageBytes = (kRowsA + kRowsB) * kRowBytes;
  static constexpr u32 kSwizzle = kRowBytes == 128 ? 1 : (kRowBytes == 64 ? 2 : 3);
  static constexpr int kSmemSlack = 1024;                  // for aligning the base
  static constexpr int kSmemBytes = kSmemSlack + T::kStages * kStageBytes;  // all the pipeline may touch
  // With 3 or more stages, one block barrier a step: steps kStages-2 ahead load while two
  // steps of wgmmas may be in flight. With 2 stages, two barriers a step (one step ahead).
  static constexpr bool kOneBarrier = T::kStages >= 3;
  static constexpr int kAhead = kOneBarrier ? T::kStages - 2 : T::kStages - 1;  // K steps loaded ahead
  static_assert(T::kWarpsM % 4 == 0 && T::kBM == 16 * T::kWarpsM, "wgmma tile: 4 warps of 16 rows per warpgroup");
  static_assert(kWN == 8 || kWN == 16 || kWN == 32 || kWN == 64 || kWN == 96 || kWN == 128 || kWN == 192 || kWN == 256,
                "wgmma N");
  static_assert(kRowBytes == 32 || kRowBytes == 64 || kRowBytes == 128, "bk must be 256, 512 or 1024");

  // Byte offset of 16-byte chunk `col` of tile row `row` (the hardware's swizzle of address
  // bits [4, 4+log2(kChunksPerRow)) by bits [7, ...)).
  static __device__ __forceinline__ int swz(int row, int col) {
    return row * kRowBytes + ((col ^ (((row * kRowBytes) >> 7) & (kChunksPerRow - 1))) << 4);
  }

  // Where 16-byte chunk `col` of tile row `row` of an operand tile starting at dst goes.
  static __device__ __forceinline__ u32* chunk(u32* dst, int row, int col) {
    return reinterpret_cast<u32*>(reinterpret_cast<char*>(dst) + swz(row, col));
  }

  // kRows rows (kRows/kTileRows planes of kTileRows rows) of kBK bits from word kword0 on
  // (operand_copy.cuh); the swizzle repeats every 8 rows, and a thread's rows are
  // kThreads/kChunksPerRow >= 16 apart.
  template <int kRows, int kTileRows>
  static __device__ __forceinline__ void load_operand(u32* dst, const u32* __restrict__ planes, i64 plane_stride,
                                                      int rows, int row0, int ld, int kword0) {
    copy_operand_rows<kThreads, kChunksPerRow, kRowBytes, kRows, kTileRows>(
        reinterpret_cast<char*>(dst), [](int row, int col) { return swz(row, col); }, planes, plane_stride, rows, row0, ld,
        kword0);
  }

  // apnn_types.cuh's, for this core's accumulators and traits.
  static __device__ __forceinline__ void fence_acc(i32 (&acc)[T::kGroups][kMI][kNI][4]) { apnn::fence_acc(acc); }
  static __device__ constexpr bool first_of_group(int s, int t) { return apnn::first_of_group<T>(s, t); }

  // X planes stacked into one wgmma (T::kXStack, chosen by rules::wgmma_x_stack). A
  // warpgroup's columns of X plane t sit at rows t*kBN + wg_n*kWN of the stage; with one
  // warpgroup along N, kStack consecutive planes form one B operand of kStack*kWN rows, and
  // where pair (s, t) has set s*q + t, the sets of (s, t..t+kStack-1) are consecutive in acc:
  // one D. One wide wgmma reads W plane s's A tile once where kStack narrow ones read it
  // kStack times, and replaces kStack narrow wgmmas by one. Same-call bench (session 14,
  // device call 2): 8192^3 w2a8 2344 -> 1421 us, w4a4 2469 -> 1939, w2a4 885 -> 711, w2a2
  // 383 -> 372 (the rule and the rest: rules::wgmma_x_stack).
  static constexpr int kStack = T::kXStack;
  static __device__ constexpr bool stackable() {
    for (int s = 0; s < T::kWBits; ++s)
      for (int t = 0; t < T::kXBits; ++t)
        if (T::group_of(s, t) != s * T::kXBits + t || T::repeat(s, t) != 1) return false;
    return kWgN == 1 && T::kXBits % kStack == 0;
  }
  static constexpr int kMmaN = kStack * kWN;  // the wgmma's N
  static_assert(kMmaN == 8 || kMmaN == 16 || kMmaN == 24 || (kMmaN % 16 == 0 && kMmaN <= 256), "wgmma N");
  // Sets g .. g+kStack-1 as one wgmma's D (they are consecutive in acc).
  static __device__ __forceinline__ i32 (&stacked(i32 (&acc)[T::kGroups][kMI][kNI][4], int g))[kStack * kNI][4] {
    static_assert(kStack == 1 || stackable(), "kXStack needs one warpgroup along N and a set per plane pair");
    return reinterpret_cast<i32(&)[kStack * kNI][4]>(acc[g][0]);
  }

  static __device__ __forceinline__ void zero_acc(i32 (&acc)[T::kGroups][kMI][kNI][4]) {
#pragma unroll
    for (int grp = 0; grp < T::kGroups; ++grp)
#pragma unroll
      for (int ni = 0; ni < kNI; ++ni)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[grp][0][ni][e] = 0;
  }

  // Calls mma(ks, j, s, t, accumulate) for every wgmma of K slices ks0 .. ks0 + kSlices - 1
  // in issue order: slice ks = ks0 + j, W plane s, X planes t..t+kStack-1, T::repeat(s, t)
  // times into their set (a merged set's weight is its smallest pair weight,
  // rules::kernel_plane_groups); `accumulate` false for a set's first wgmma of a tile (its
  // first stage has `accumulate` false).
  template <int kSlices, class Mma>
  static __device__ __forceinline__ void for_each_mma(int ks0, bool accumulate, Mma&& mma) {
#pragma unroll
    for (int j = 0; j < kSlices; ++j)
#pragma unroll
      for (int s = 0; s < T::kWBits; ++s)
#pragma unroll
        for (int t = 0; t < T::kXBits; t += kStack)
#pragma unroll
          for (int r = 0; r < T::repeat(s, t); ++r)
            mma(ks0 + j, j, s, t, ks0 + j > 0 || r > 0 || !first_of_group(s, t) || accumulate);
  }
  // B's descriptor (low word) for X planes t.. at K slice ks.
  static __device__ __forceinline__ u32 b_desc(ptx::WgmmaDesc desc_b, int t, int ks) {
    return desc_b.lo + static_cast<u32>((t * T::kBN * kRowBytes + ks * 32) >> 4);
  }

  // One stage's wgmmas, the stage's W and X tiles at the descriptors' start addresses.
  static __device__ __forceinline__ void mma_step(i32 (&acc)[T::kGroups][kMI][kNI][4], ptx::WgmmaDesc desc_a,
                                                  ptx::WgmmaDesc desc_b, bool accumulate) {
    for_each_mma<kKSteps>(0, accumulate, [&](int ks, int, int s, int t, bool acc_in) {
      const u32 da = desc_a.lo + static_cast<u32>((s * T::kBM * kRowBytes + ks * 32) >> 4);
      ptx::WgmmaB1<kMmaN>::mma(stacked(acc, T::group_of(s, t)), da, b_desc(desc_b, t, ks), desc_a.hi, acc_in);
    });
  }

  // The register-A form: the warp's A fragments, its 16 rows (from row0 of each W plane) as
  // four 32-bit words per 256-bit K slice, read once with ldmatrix and used by every X
  // plane's wgmma, where from shared memory each wgmma reads its A tile again. Narrow wgmmas
  // read more A per MMA: at 8, 16 and 32 columns (w8a8's untuned tiles; w4a4's and w2a4's
  // before their planes stacked) the A reads and the copies' writes exceed what shared
  // memory delivers a cycle. kASlices
  // K slices load at a time (kARegs registers for w1 and w2, one slice of 4*p registers for
  // wider weights), each group after the warpgroup's previous wgmmas are done.
  // Same-call bench (session 13): on the TMA core (device call 3) w4a4 1.19-1.22x, w2a4
  // 1.04-1.07x; on this core (call 5) w8a8's 128x8 GEMM tiles 1.16-1.21x and w2a8's 64x32 4x2
  // conv tiles 1.03-1.21x at batch 128. At 64 columns and more the waits cost more than the
  // reads (w2a2 128x64 0.86-0.90x, w1a2 128x128 0.99x; with 16 registers a group, which
  // spilled, 0.73x). And only where a slice has at least 4 plane-pair wgmmas to cover a
  // group's wait: w1a2's 128x32 TMA tile (2 a slice) was 0.93-0.94x with the form and
  // 1.07-1.12x back without it (calls 3 and 12).
  // All of this counts the wgmmas after stacking (kMmaN columns, kMmasPerA per W fragment).
  static constexpr int kMmasPerA = T::kXBits / kStack;  // wgmmas that read one W fragment
  static constexpr bool kRegA = kMmasPerA > 1 && T::kWBits * kMmasPerA >= 4 && kMmaN <= 32;
  static constexpr int kARegs = 8;
  static constexpr int kASlices = 4 * T::kWBits >= kARegs ? 1 : (kARegs / (4 * T::kWBits) < kKSteps ? kARegs / (4 * T::kWBits) : kKSteps);
  static_assert(kKSteps % kASlices == 0, "whole groups of K slices");
  using AFrags = u32[T::kWBits][kASlices][4];
  // Slices ks0 .. ks0 + kASlices - 1 of the stage whose W tile starts at a_tile.
  static __device__ __forceinline__ void load_a(AFrags& a, u32 a_tile, int row0, int ks0, int lane) {
    const int m = lane >> 3;  // lane's matrix: rows +0/+8 (bit 0), 16-byte chunk +0/+1 (bit 1)
    const int row = row0 + (m & 1) * 8 + (lane & 7);
#pragma unroll
    for (int s = 0; s < T::kWBits; ++s)
#pragma unroll
      for (int j = 0; j < kASlices; ++j)
        ptx::ldmatrix_x4(a[s][j], a_tile + swz(s * T::kBM + row, 2 * (ks0 + j) + (m >> 1)));
  }
  // Keeps the A fragments' registers as they are until this point (a wgmma reading them may
  // still be in flight before it).
  static __device__ __forceinline__ void fence_a(AFrags& a) {
#pragma unroll
    for (int s = 0; s < T::kWBits; ++s)
#pragma unroll
      for (int j = 0; j < kASlices; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(a[s][j][e])::"memory");
  }
  // mma_step's wgmmas of slices ks0 .. ks0 + kASlices - 1, A from registers.
  static __device__ __forceinline__ void mma_slices_rs(i32 (&acc)[T::kGroups][kMI][kNI][4], const AFrags& a,
                                                       ptx::WgmmaDesc desc_b, int ks0, bool accumulate) {
    for_each_mma<kASlices>(ks0, accumulate, [&](int ks, int j, int s, int t, bool acc_in) {
      ptx::WgmmaB1<kMmaN>::mma(stacked(acc, T::group_of(s, t)), a[s][j], b_desc(desc_b, t, ks), desc_b.hi, acc_in);
    });
  }


  // The thread's warpgroup, broadcast from lane 0 so that the compiler knows it is the same
  // across the warp. Where the problem's hooks keep the (tile, K step) loop uniform too
  // (Problem::kUniformLoop), ptxas then holds every descriptor in uniform registers: 3
  // uniform instructions a wgmma instead of about 10 (1024x4096x4096 w1a2 7% faster, session
  // 12, device calls 3-4). The conv's hooks branch per thread, its step counter stays in
  // vector registers, and the broadcast alone made 7x7x512 3-7% slower.
  static __device__ __forceinline__ int warpgroup_index() {
    return __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x) >> 7, 0);
  }

  // Output tiles, M fastest: ceil(M/kBM) * ceil(N/kBN).
  static __host__ __device__ __forceinline__ int tiles(int M, int N) {
    return ((M + T::kBM - 1) / T::kBM) * ((N + T::kBN - 1) / T::kBN);
  }

  // Block blockIdx.x's tiles b, b + gridDim.x, ... of ntiles (APMM: the blocks running at
  // once share operand rows in L2).
  static __device__ __forceinline__ void strided_tiles(int ntiles, int& first, int& stride, int& count) {
    first = static_cast<int>(blockIdx.x);
    stride = static_cast<int>(gridDim.x);
    count = first < ntiles ? (ntiles - 1 - first) / stride + 1 : 0;
  }
  // Block blockIdx.x's contiguous share of ntiles tiles: `count` from `first`, the first
  // ntiles % gridDim.x blocks one more. With one block per tile, no division: every
  // dependent instruction shows in the N=1 convs' few microseconds.
  static __device__ __forceinline__ void contiguous_tiles(int ntiles, int& first, int& count) {
    const int b = static_cast<int>(blockIdx.x), grid = static_cast<int>(gridDim.x);
    if (grid >= ntiles) {
      first = b;
      count = b < ntiles ? 1 : 0;
      return;
    }
    const int share = ntiles / grid, extra = ntiles - share * grid;
    first = b * share + (b < extra ? b : extra);
    count = share + (b < extra ? 1 : 0);
  }

  // Persistent: each block computes the tiles that Problem::block_tiles gives it (any 1-D
  // grid works). The (tile, K step) sequence is one pipeline, so the next tile's first
  // stages load while this one finishes and stores. Problem: as GemmSm80::run (a_planes,
  // a_plane_stride, a_rows, a_ld, k_words, load_b, store) plus N, the rows of B,
  // block_tiles(ntiles, first, stride, count), split_tile(tile, tiles_m, tm, tn) (the tile's
  // M tile and column tile), prefetch_tile(tm, tn) of the first tile, called by every thread
  // before the first copies, begin_tile(tile, tiles_m, first), called by every thread
  // before a tile's mainloop, and end_tiles(), by every thread after its block's last tile;
  // load_b writes this core's layout; kUniformLoop (see warpgroup_index).
  template <class Problem>
  static __device__ __forceinline__ void run(u32* smem_raw, const Problem& prob) {
    const u32 raw_addr = ptx::smem_addr(smem_raw);
    const u32 pad = (1024u - (raw_addr & 1023u)) & 1023u;
    char* smem = reinterpret_cast<char*>(smem_raw) + pad;
    const u32 smem_base = raw_addr + pad;

    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int wg = Problem::kUniformLoop ? warpgroup_index() : warp >> 2;
    const int wg_m = wg / kWgN, wg_n = wg % kWgN;
    const int g = lane >> 2, tig = lane & 3;
    const int tiles_m = (prob.a_rows + T::kBM - 1) / T::kBM;
    const int ntiles = tiles(prob.a_rows, prob.N);
    const int ktiles = (prob.k_words + kRowWords - 1) / kRowWords;
    // The block's tiles: `count` tiles from `first`, `stride` apart (the problem's choice).
    int first = 0, stride = 1, count = 0;
    prob.block_tiles(ntiles, first, stride, count);
    if (count <= 0 || ktiles == 0) return;
    const int steps = count * ktiles;

    // The next (tile, K step) to load, and the tile's origin (divided out once per tile, not
    // once per K step).
    int ld_tile = first, ld_kt = 0, ld_tm = 0, ld_tn = 0;
    prob.split_tile(ld_tile, tiles_m, ld_tm, ld_tn);
    auto load_next = [&](int slot) {
      u32* st = reinterpret_cast<u32*>(smem + slot * kStageBytes);
      load_operand<kRowsA, T::kBM>(st, prob.a_planes, prob.a_plane_stride, prob.a_rows, ld_tm * T::kBM, prob.a_ld,
                                   ld_kt * kRowWords);
      prob.load_b(reinterpret_cast<u32*>(smem + slot * kStageBytes + kRowsA * kRowBytes), ld_tn * T::kBN, ld_kt * kRowWords);
      if (++ld_kt == ktiles) {
        ld_kt = 0;
        ld_tile += stride;
        prob.split_tile(ld_tile, tiles_m, ld_tm, ld_tn);
      }
    };

    // Descriptors of this warpgroup's slices in slot 0 at K step 0; other slots, planes and
    // K steps add their byte offset / 16 to the start address field.
    const ptx::WgmmaDesc desc_a = ptx::wgmma_desc(smem_base + wg_m * 64 * kRowBytes, 16, 8 * kRowBytes, kSwizzle);
    const ptx::WgmmaDesc desc_b =
        ptx::wgmma_desc(smem_base + kRowsA * kRowBytes + wg_n * kWN * kRowBytes, 16, 8 * kRowBytes, kSwizzle);

    i32 acc[T::kGroups][kMI][kNI][4];
    zero_acc(acc);
    AFrags a;  // kRegA: the current group of K slices' A fragments
    const int a_row0 = wg_m * 64 + (warp & 3) * 16;

    prob.prefetch_tile(ld_tm, ld_tn);  // loads whose latency should overlap the first copies'
#pragma unroll
    for (int st = 0; st < kAhead; ++st) {
      if (st < steps) load_next(st);
      ptx::cp_async_commit();
    }
    int i = 0;  // steps done, over all of this block's tiles
    for (int n = 0, tile = first; n < count; ++n, tile += stride) {
      prob.begin_tile(tile, tiles_m, n == 0);  // before the tile's first barrier, which publishes what it writes
      for (int kt = 0; kt < ktiles; ++kt, ++i) {
        ptx::cp_async_wait<kAhead - 1>();
        ptx::fence_proxy_async();
        if constexpr (kOneBarrier) ptx::wgmma_wait<1>();  // this warpgroup's step i-2 is done
        // Step i landed, from every thread, visible to the tensor cores; with one barrier a
        // step, every warpgroup is also done with step i-2's slot, refilled here.
        __syncthreads();
        if constexpr (kOneBarrier) {
          if (i + kAhead < steps) load_next((i + kAhead) % T::kStages);
          ptx::cp_async_commit();
        }
        const u32 slot = static_cast<u32>((i % T::kStages) * (kStageBytes >> 4));
        if constexpr (kRegA) {
          // As the TMA core (gemm_sm90a_tma.cuh): each group of K slices after the
          // warpgroup's previous wgmmas, which read the A registers, are done. The two loops
          // differ in the slot release; merged into one helper they compiled to different
          // SASS (session 13), not measured, so they stay apart.
#pragma unroll
          for (int ks0 = 0; ks0 < kKSteps; ks0 += kASlices) {
            ptx::wgmma_wait<0>();
            fence_acc(acc);
            fence_a(a);
            load_a(a, smem_base + (i % T::kStages) * kStageBytes, a_row0, ks0, lane);
            ptx::wgmma_fence();
            mma_slices_rs(acc, a, {desc_b.lo + slot, desc_b.hi}, ks0, kt > 0);
            ptx::wgmma_commit();
          }
        } else {
          fence_acc(acc);
          ptx::wgmma_fence();
          mma_step(acc, {desc_a.lo + slot, desc_a.hi}, {desc_b.lo + slot, desc_b.hi}, kt > 0);
          ptx::wgmma_commit();
        }
        fence_acc(acc);
        if constexpr (!kOneBarrier) {
          ptx::wgmma_wait<1>();  // this warpgroup's step i-1 is done
          __syncthreads();       // everyone's is: slot (i-1) % kStages may be refilled
          if (i + kAhead < steps) load_next((i + kAhead) % T::kStages);
          ptx::cp_async_commit();
        }
      }
      // The stream's next kernel may start launching once every block has a warp past its
      // first mainloop (one thread's trigger counts for its block): its blocks then wait
      // (grid_dependency_wait) through this epilogue rather than through the whole kernel. Triggered at the kernel's start instead, the paper's
      // convs and FC layer were 8-25% slower (session 7, device call 8).
      if (n == 0) ptx::allow_dependent_launch();
      // Store the tile while the next tile's first stages load.
      ptx::wgmma_wait<0>();
      fence_acc(acc);
      if constexpr (kRegA) fence_a(a);
      int tm = 0, tn = 0;
      prob.split_tile(tile, tiles_m, tm, tn);
      const int m_base = tm * T::kBM + wg_m * 64 + (warp & 3) * 16;
      const int n_base = tn * T::kBN + wg_n * kWN;
      if constexpr (Problem::kTmaStore) {
        // The last step's slot stages the output once every warpgroup's wgmmas are done with it.
        __syncthreads();
        const u32 slot = static_cast<u32>(((i - 1) % T::kStages) * kStageBytes);
        prob.store_staged(acc, m_base, n_base, g, tig, smem_base + slot + wg * Problem::kStagingBytes);
      } else {
        prob.store(acc, m_base, n_base, g, tig);
      }
    }
    if constexpr (Problem::kTmaStore) prob.finish_stores();
    prob.end_tiles();
  }
};

}  // namespace apnn

// Would TMA im2col loads make the batch-128 3x3 convs fast enough? A research probe for
// bench/NOTES.md (session 25), not part of the build. The wgmma conv kernels gather each
// X tile with per-thread cp.async (conv_sm80.cuh's gather plan): sessions 11-12 found the
// batch-128 layers bound by the gather's integer instructions and by L2. Here the copy
// engine does the gather instead: one `cp.async.bulk.tensor.5d ... .im2col` box per kernel
// position and X plane, issued by one producer thread, as the TMA GEMM core does for dense
// operands (gemm_sm90a_tma.cuh). conv_halo_probe.cu goes further for the same layers.
//
// The layer (conv_probe_harness.h): w1 pm1 x a2 unsigned, C = 256 (one 32-byte row of bits
// per pixel and plane), 3x3, pad 1, stride 1 or 2, NCHW int32 output. Layouts:
//   X  [n][plane t][h][w][8 words]: a 5-D uint8 tensor map {32 bytes, W, H, D = plane, N}.
//      A box is BN output pixels (the im2col traversal: wo fastest, then ho, then n, past
//      the last image into zero fill) x 32 bytes of one kernel position (offsets kw, kh)
//      and one plane (offset t on D, whose pixel box is a single position: lower corner
//      0, upper corner -1), written as 32-byte rows with the 32-byte swizzle.
//   W  [o][kernel position][8 words]: a 3-D uint8 map {32 bytes, 9 positions, O}, boxes
//      of 32 bytes x 1 position x 128 rows, 32-byte swizzle.
// A stage is 4 kernel positions (1024 bits of K): per position one W box and two X boxes
// (planes 0, 1 back to back: one wgmma m64 x (2*BN) x k256 covers both planes), so every
// operand is a 32-byte-row K-major tile and both descriptors share the 32B swizzle mode.
// K = 9 positions = 3 stages; the last step's positions 9-11 run on zero-filled W boxes.
// Block: 2 consumer warpgroups (rows 0-63, 64-127 of a 128-row tile) + a producer
// warpgroup whose registers go to them (setmaxnreg); persistent. Epilogue: y = 2*(popc0 +
// 2*popc1) - the window sum of x (pm1 weights: w = 2b - 1), the window sums loaded at each
// tile's start.
//
// Each configuration is checked (harness), then timed whole and, timing only, without its
// stores (a second kernel, CSKIP = 4, compiled without them: the window sums' loads go too),
// without its loads (bits 0-1 of Shape::skip: W, X) and without both.
//
// What it measured (session 25, bench/NOTES.md): the copy engine's gather alone is not
// enough. n128-14x14x256 3x3/1: 18.56 us at best (W resident, staged rows) against 28.0 for
// the shipped kernel (device call 17); the loads fetch each pixel 9 times per M tile (conv_halo_probe.cu
// fetches it once). Bulk tensor stores cannot start at a negative coordinate (a box at
// pix - Ho*Wo traps: illegal instruction), so a box running into the next image leaves its
// tail to the warpgroup's threads.
//
// Build (here) and run (sm_90a):
//   nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -I../.. conv_im2col_probe.cu -lcuda -o conv_im2col_probe
//   ./conv_im2col_probe O stride   (C = 256, 14x14: 256 1, 512 2); PROBE_ONLY=i runs configuration i alone
#include "bench/probes/conv_probe_harness.h"

using namespace probe;

constexpr int kBM = 128, kC = 256, kPixBytes = kC / 8;  // one 32-byte row of bits per pixel and plane
constexpr int kConsumerWarps = 8, kThreads = 32 * (kConsumerWarps + 4);  // + a producer warpgroup

__device__ __forceinline__ void im2col_load(u32 dst, const CUtensorMap* map, int w, int h, int n, unsigned short kw,
                                            unsigned short kh, unsigned short t, u32 bar, u64 policy) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%2, "
      "%3, %4, %5, %6}], [%7], {%8, %9, %10}, %11;\n" ::"r"(dst),
      "l"(map), "r"(0), "r"(w), "r"(h), "r"(0), "r"(n), "r"(bar), "h"(kw), "h"(kh), "h"(t), "l"(policy)
      : "memory");
}

template <int BN, int STAGES, bool WRES, int TSTORE, int CSKIP>
struct Probe {
  static constexpr int kWBytes = kBM * kPixBytes;  // one position's W box: 4 KB
  static constexpr int kXBytes = BN * kPixBytes;   // one position and plane's X box
  // W resident (WRES): the block keeps one M tile, its W (12 positions, 9-11 zero-filled)
  // loaded once; a stage is then X only. Else each stage holds per position [W][X0][X1].
  static constexpr int kWRegion = WRES ? 12 * kWBytes : 0;
  static constexpr int kPosBytes = (WRES ? 0 : kWBytes) + 2 * kXBytes;
  static constexpr int kStageBytes = 4 * kPosBytes;
  // TSTORE 0: stores straight from the accumulators (8-byte pairs where Ho*Wo is even).
  // TSTORE 1: each warpgroup stages its 64 x BN outputs in shared memory as boxes of 64 rows x
  // 32 pixels (128-byte rows, 128-byte swizzle) that its first thread hands to the copy
  // engine (tensor map {Ho*Wo, O, N}); the next tile's mainloop runs while they drain.
  // TSTORE 2: the same staging, then each thread walks one column's rows with st.global
  // (a warp store is 32 consecutive pixels of one row), leaving the copy engine to the loads.
  static constexpr int kStgBytes = TSTORE ? 64 * BN * 4 : 0;  // per warpgroup
  static constexpr int kSmem = 1024 + kWRegion + STAGES * kStageBytes + 2 * kStgBytes + (2 * STAGES + 1) * 8;
  static constexpr int kNI = 2 * BN / 8;  // accumulator chunks: plane 0's BN columns, then plane 1's
  static constexpr int kCols = BN / 8;    // this thread's column pairs

  // Tile walk: WRES blocks keep M tile blockIdx.x % tiles_m (the grid is a multiple of tiles_m).
  struct Walk {
    int tiles_m, col_tiles, first, step;
    __device__ Walk(const Shape& s) {
      tiles_m = s.O / kBM;
      col_tiles = (s.P + BN - 1) / BN;
      first = WRES ? static_cast<int>(blockIdx.x) / tiles_m : static_cast<int>(blockIdx.x);
      step = WRES ? static_cast<int>(gridDim.x) / tiles_m : static_cast<int>(gridDim.x);
    }
    __device__ int count() const { return WRES ? col_tiles : tiles_m * col_tiles; }
    __device__ int m0(int t) const { return (WRES ? static_cast<int>(blockIdx.x) % tiles_m : t % tiles_m) * kBM; }
    __device__ int p0(int t) const { return (WRES ? t : t / tiles_m) * BN; }
  };

  static __device__ void run(const CUtensorMap* wmap, const CUtensorMap* xmap, const CUtensorMap* ymap,
                             const i32* __restrict__ xsum,
                             i32* __restrict__ y, Shape s) {
    const u32 wbase = aligned_smem_base(), sbase = wbase + kWRegion;
    const u32 stg0 = sbase + STAGES * kStageBytes;
    const u32 full0 = stg0 + 2 * kStgBytes, empty0 = full0 + STAGES * 8, wfull = empty0 + STAGES * 8;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    init_pipeline(full0, empty0, wfull, STAGES, kConsumerWarps);
    const Walk walk(s);
    if (warp >= kConsumerWarps) {
      apnn::ptx::setmaxnreg_dec<40>();
      if (warp == kConsumerWarps && lane == 0) produce(wmap, xmap, wbase, sbase, full0, empty0, wfull, s, walk);
      return;
    }
    apnn::ptx::setmaxnreg_inc<232>();
    consume(wbase, sbase, stg0, full0, empty0, wfull, ymap, xsum, y, s, walk);
  }

  static __device__ void produce(const CUtensorMap* wmap, const CUtensorMap* xmap, u32 wbase, u32 sbase, u32 full0,
                                 u32 empty0, u32 wfull, const Shape& s, const Walk& walk) {
    const apnn::TmaMap* wm = reinterpret_cast<const apnn::TmaMap*>(wmap);
    apnn::ptx::prefetch_tma_map(wm);
    apnn::ptx::prefetch_tma_map(reinterpret_cast<const apnn::TmaMap*>(xmap));
    const u64 keep = apnn::ptx::policy_evict_last();
    const int HoWo = s.Ho * s.Wo;
    if constexpr (WRES) {
      const int m0 = walk.m0(0);
      apnn::ptx::mbar_arrive_expect_tx(wfull, s.skip & 1 ? 0 : 12 * kWBytes);
      if (!(s.skip & 1))
        for (int pos = 0; pos < 12; ++pos) apnn::ptx::tma_load_3d(wbase + pos * kWBytes, wm, 0, pos, m0, wfull, keep);
    }
    int i = 0;
    for (int t = walk.first; t < walk.count(); t += walk.step) {
      const int m0 = walk.m0(t), p0 = walk.p0(t);
      const int n = p0 / HoWo, r = p0 - n * HoWo, ho = r / s.Wo, wo = r - ho * s.Wo;
      const int w0 = wo * s.S - 1, h0 = ho * s.S - 1;
      for (int kt = 0; kt < 3; ++kt, ++i) {
        const int slot = i % STAGES;
        const u32 full = full0 + 8 * slot;
        apnn::ptx::mbar_wait(empty0 + 8 * slot, ((i / STAGES) & 1) ^ 1);
        // Positions 9-11 of the last step: W boxes past the tensor (zero-filled by the copy
        // engine, no reads), X not loaded (whatever is there ANDs with zeros). Every step then
        // runs 4 wgmmas: a step-dependent count made ptxas serialize them (C7520).
        const int npos = kt < 2 ? 4 : 1;
        const int w_bytes = WRES || (s.skip & 1) ? 0 : 4 * kWBytes, x_bytes = s.skip & 2 ? 0 : npos * 2 * kXBytes;
        apnn::ptx::mbar_arrive_expect_tx(full, w_bytes + x_bytes);
        const u32 st = sbase + slot * kStageBytes;
        for (int j = 0; j < 4; ++j) {
          const int pos = 4 * kt + j;
          const u32 at = st + j * kPosBytes;
          if (!WRES && !(s.skip & 1)) apnn::ptx::tma_load_3d(at, wm, 0, pos, m0, full, keep);
          const u32 xat = at + (WRES ? 0 : kWBytes);
          if (!(s.skip & 2) && j < npos)
            for (int t2 = 0; t2 < 2; ++t2)
              im2col_load(xat + t2 * kXBytes, xmap, w0, h0, n, static_cast<unsigned short>(pos % 3),
                          static_cast<unsigned short>(pos / 3), static_cast<unsigned short>(t2), full, keep);
        }
      }
    }
  }

  static __device__ void consume(u32 wbase, u32 sbase, u32 stg0, u32 full0, u32 empty0, u32 wfull,
                                 const CUtensorMap* ymap, const i32* __restrict__ xsum,
                                 i32* __restrict__ y, const Shape& s, const Walk& walk) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, wg = warp >> 2;
    const int g = lane >> 2, tig = lane & 3;
    // 32-byte rows, 32B swizzle: 8-row atoms of 256 bytes.
    const apnn::ptx::WgmmaDesc desc = apnn::ptx::wgmma_desc(sbase, 16, 256, 3);
    const u32 w_lo = desc.lo - (static_cast<u32>(kWRegion) >> 4);  // wbase's descriptor word
    const u32 a_off = static_cast<u32>(wg * 64 * kPixBytes) >> 4;
    const int HoWo = s.Ho * s.Wo;
    const bool pairs = HoWo % 2 == 0;  // a thread's two columns are consecutive pixels of one image
    if constexpr (WRES) apnn::ptx::mbar_wait(wfull, 0);
    i32 acc[kNI][4] = {};
    int i = 0;
    bool first = true;
    for (int t = walk.first; t < walk.count(); t += walk.step) {
      const int m0 = walk.m0(t), p0 = walk.p0(t);
      // The epilogue's column terms, loaded under the mainloop.
      i32 xs[kCols][2];
#pragma unroll
      for (int c = 0; c < kCols; ++c)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int p = p0 + 8 * c + 2 * tig + e;
          xs[c][e] = p < s.P ? __ldg(xsum + p) : 0;
        }
      for (int kt = 0; kt < 3; ++kt, ++i) {
        const int slot = i % STAGES;
        apnn::ptx::mbar_wait(full0 + 8 * slot, (i / STAGES) & 1);
        const u32 st = desc.lo + static_cast<u32>(slot * kStageBytes >> 4);
        fence(acc);
        apnn::ptx::wgmma_fence();
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const u32 a = WRES ? w_lo + static_cast<u32>((4 * kt + j) * kWBytes >> 4) + a_off
                             : st + static_cast<u32>(j * kPosBytes >> 4) + a_off;
          const u32 b = st + static_cast<u32>((j * kPosBytes + (WRES ? 0 : kWBytes)) >> 4);
          apnn::ptx::WgmmaB1<2 * BN>::mma(acc, a, b, desc.hi, kt > 0 || j > 0);
        }
        apnn::ptx::wgmma_commit();
        fence(acc);
        apnn::ptx::wgmma_wait<1>();
        if (kt > 0 && lane == 0) mbar_arrive_local(empty0 + 8 * ((i - 1) % STAGES));
      }
      apnn::ptx::wgmma_wait<0>();
      fence(acc);
      if (lane == 0) mbar_arrive_local(empty0 + 8 * ((i - 1) % STAGES));
      if (first) {
        apnn::ptx::allow_dependent_launch();
        first = false;
      }
      if constexpr (CSKIP & 4) continue;
      if constexpr (TSTORE) {
        store_staged(acc, xs, ymap, y, stg0 + wg * kStgBytes, m0 + wg * 64, p0, s);
        continue;
      }
      // Rows o, o + 8 of the warp's 16; columns 8c + 2 tig, + 1 of plane 0 (chunk c) and
      // plane 1 (chunk c + BN/8). Even Ho*Wo: one 8-byte store per row and column pair.
      const int o = m0 + wg * 64 + (warp & 3) * 16 + g;
      const int row = o * HoWo;
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        int cb[2];  // the columns' offsets in y less the row term (-1: past the last pixel)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int p = p0 + 8 * c + 2 * tig + e, n = p / HoWo;
          cb[e] = p < s.P ? n * s.O * HoWo + (p - n * HoWo) : -1;
        }
        i32 v[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) v[e] = 2 * (acc[c][e] + 2 * acc[c + kCols][e]) - xs[c][e & 1];
        if (pairs) {
          if (cb[0] < 0) continue;
          i32* d = y + (cb[0] + row);
          asm volatile("st.global.v2.b32 [%0], {%1, %2};\n" ::"l"(d), "r"(v[0]), "r"(v[1]) : "memory");
          asm volatile("st.global.v2.b32 [%0], {%1, %2};\n" ::"l"(d + 8 * HoWo), "r"(v[2]), "r"(v[3]) : "memory");
        } else {
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            if (cb[e] < 0) continue;
            y[cb[e] + row] = v[e];
            y[cb[e] + row + 8 * HoWo] = v[e + 2];
          }
        }
      }
    }
    if constexpr (TSTORE == 1)
      if ((threadIdx.x & 127) == 0) apnn::ptx::bulk_wait<0>();
  }

  static __device__ __forceinline__ void store_staged(const i32 (&acc)[kNI][4], const i32 (&xs)[kCols][2],
                                                      const CUtensorMap* ymap, i32* __restrict__ y, u32 stg, int row0,
                                                      int p0, const Shape& s) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, wg = warp >> 2, leader = (threadIdx.x & 127) == 0;
    const int g = lane >> 2, tig = lane & 3;
    if (TSTORE == 1 && leader) apnn::ptx::bulk_wait_read<0>();  // the last tile's boxes are read out
    apnn::ptx::named_barrier(1 + wg, 128);
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      const int col = 8 * c + 2 * tig, q = col / 32, cc = col % 32;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int r = (warp & 3) * 16 + g + 8 * half;
        const i32 v0 = 2 * (acc[c][2 * half] + 2 * acc[c + kCols][2 * half]) - xs[c][0];
        const i32 v1 = 2 * (acc[c][2 * half + 1] + 2 * acc[c + kCols][2 * half + 1]) - xs[c][1];
        const u32 addr = stg + q * (64 * 128) + r * 128 + ((((cc >> 2) ^ (r & 7))) << 4) + (cc & 3) * 4;
        asm volatile("st.shared.v2.b32 [%0], {%1, %2};\n" ::"r"(addr), "r"(v0), "r"(v1) : "memory");
      }
    }
    if constexpr (TSTORE == 2) {
      // Each thread keeps one column (its pixel's place found once) and walks its rows: a warp
      // store is 32 consecutive pixels of one row (128 bytes, or two runs across an image edge).
      apnn::ptx::named_barrier(1 + wg, 128);
      const int HoWo = s.Ho * s.Wo, tid = threadIdx.x & 127;
      constexpr int kRowStep = 128 / BN;
      const int col = tid % BN, r0 = tid / BN, p = p0 + col;
      if (p < s.P) {
        const int n = p / HoWo, pix = p - n * HoWo;
        i32* d = y + ((n * s.O + row0 + r0) * HoWo + pix);
        const u32 src = stg + (col / 32) * (64 * 128) + (col & 3) * 4;
        const int chunk = (col % 32) >> 2;
#pragma unroll 8
        for (int r = r0; r < 64; r += kRowStep, d += kRowStep * HoWo) {
          i32 v;
          asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(src + r * 128 + ((chunk ^ (r & 7)) << 4)) : "memory");
          *d = v;
        }
      }
      return;
    }
    apnn::ptx::fence_proxy_async();
    apnn::ptx::named_barrier(1 + wg, 128);
    if (leader) {
      const int HoWo = s.Ho * s.Wo;
      const u64 first = apnn::ptx::policy_evict_first();
#pragma unroll
      for (int q = 0; q < BN / 32; ++q) {
        const int p = p0 + 32 * q;
        if (p >= s.P) break;
        const int n = p / HoWo, pix = p - n * HoWo;
        // The box's pixels past the image are not written (out of the map's bounds); the
        // warpgroup stores those (the next image's first pixels) below.
        store_3d(ymap, pix, row0, n, stg + q * (64 * 128), first);
      }
      apnn::ptx::bulk_commit();
    }
    // A box that runs into the next image: its last `rem` pixels are that image's first ones.
    // The copy engine takes no negative coordinates (a box at pix - HoWo traps: illegal
    // instruction), so the warpgroup's threads write them from the staged box.
    const int HoWo = s.Ho * s.Wo, tid = threadIdx.x & 127;
#pragma unroll
    for (int q = 0; q < BN / 32; ++q) {
      const int p = p0 + 32 * q;
      if (p >= s.P) break;
      const int n = p / HoWo, pix = p - n * HoWo, rem = pix + 32 - HoWo;
      if (rem <= 0 || n + 1 >= s.N) continue;
      for (int idx = tid; idx < 64 * rem; idx += 128) {
        const int r = idx / rem, px = idx - r * rem, col = HoWo - pix + px;
        const u32 addr = stg + q * (64 * 128) + r * 128 + (((col >> 2) ^ (r & 7)) << 4) + (col & 3) * 4;
        i32 v;
        asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
        y[((n + 1) * s.O + row0 + r) * HoWo + px] = v;
      }
    }
  }
  static __device__ __forceinline__ void store_3d(const CUtensorMap* map, int c0, int c1, int c2, u32 src, u64 policy) {
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group.L2::cache_hint [%0, {%1, %2, %3}], [%4], %5;\n" ::"l"(map),
                 "r"(c0), "r"(c1), "r"(c2), "r"(src), "l"(policy)
                 : "memory");
  }

  static __device__ __forceinline__ void fence(i32 (&acc)[kNI][4]) {
#pragma unroll
    for (int c = 0; c < kNI; ++c)
#pragma unroll
      for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(acc[c][e])::"memory");
  }
  static __device__ __forceinline__ void mbar_arrive_local(u32 bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
  }
};

template <int BN, int STAGES, bool WRES, int TSTORE, int CSKIP>
__global__ void __launch_bounds__(kThreads, 1)
    conv_im2col(const __grid_constant__ CUtensorMap wmap, const __grid_constant__ CUtensorMap xmap,
                const __grid_constant__ CUtensorMap ymap,
                const i32* __restrict__ xsum, i32* __restrict__ y, Shape s) {
  Probe<BN, STAGES, WRES, TSTORE, CSKIP>::run(&wmap, &xmap, &ymap, xsum, y, s);
}


// ---- host ----

template <int BN, int STAGES, bool WRES, int TSTORE>
static void run(const Data& d, const char* what) {
  const Shape& s = d.s;
  // Bulk tensor stores need the output's row pitch (Ho*Wo int32) a multiple of 16 bytes.
  if (TSTORE == 1 && (s.Ho * s.Wo) % 4 != 0) {
    std::printf("bn %d, %s: skipped (Ho*Wo = %d: rows not 16-byte aligned for bulk tensor stores)\n", BN, what, s.Ho * s.Wo);
    return;
  }
  using K = Probe<BN, STAGES, WRES, TSTORE, 0>;
  CUtensorMap wmap;
  {
    const cuuint64_t dims[3] = {kPixBytes, kPos, static_cast<cuuint64_t>(s.O)};
    const cuuint64_t strides[2] = {kPixBytes, kPixBytes * kPos};
    const cuuint32_t box[3] = {kPixBytes, 1, kBM}, unit[3] = {1, 1, 1};
    check_encode(cuTensorMapEncodeTiled(&wmap, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, d.w, dims, strides, box, unit,
                                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_32B,
                                        CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                 "W");
  }
  std::vector<CUtensorMap> xmaps(d.sets()), ymaps(d.sets());
  for (int k = 0; k < d.sets(); ++k) {
    const cuuint64_t dims[5] = {kPixBytes, (cuuint64_t)s.W, (cuuint64_t)s.H, 2, (cuuint64_t)s.N};
    const cuuint64_t strides[4] = {kPixBytes, (cuuint64_t)s.W * kPixBytes, (cuuint64_t)s.H * s.W * kPixBytes,
                                   (cuuint64_t)2 * s.H * s.W * kPixBytes};
    const int lower[3] = {-1, -1, 0}, upper[3] = {-1, -1, -1};  // pad 1, 3x3: pad - (F-1); one plane position
    const cuuint32_t estr[5] = {1, (cuuint32_t)s.S, (cuuint32_t)s.S, 1, 1};
    check_encode(cuTensorMapEncodeIm2col(&xmaps[k], CU_TENSOR_MAP_DATA_TYPE_UINT8, 5, d.x[k], dims, strides, lower, upper,
                                         kPixBytes, BN, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_32B,
                                         CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                 "X (im2col)");
    if (TSTORE == 1) {
      const cuuint64_t ydims[3] = {(cuuint64_t)s.Ho * s.Wo, (cuuint64_t)s.O, (cuuint64_t)s.N};
      const cuuint64_t ystrides[2] = {(cuuint64_t)s.Ho * s.Wo * 4, (cuuint64_t)s.O * s.Ho * s.Wo * 4};
      const cuuint32_t box[3] = {32, 64, 1}, unit[3] = {1, 1, 1};
      check_encode(cuTensorMapEncodeTiled(&ymaps[k], CU_TENSOR_MAP_DATA_TYPE_INT32, 3, d.y[k], ydims, ystrides, box, unit,
                                          CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                          CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                   "Y");
    }
  }
  using Kernel = void (*)(const CUtensorMap, const CUtensorMap, const CUtensorMap, const i32*, i32*, Shape);
  const Kernel kerns[2] = {conv_im2col<BN, STAGES, WRES, TSTORE, 0>, conv_im2col<BN, STAGES, WRES, TSTORE, 4>};
  for (Kernel k : kerns) CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, K::kSmem));
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int tiles_m = s.O / kBM, tiles = tiles_m * ((s.P + BN - 1) / BN);
  const int grid = WRES ? std::min(tiles, sms / tiles_m * tiles_m) : std::min(tiles, sms);
  Launch l(grid, kThreads, K::kSmem);
  std::printf("n%d-%dx%dx%d-o%d 3x3/%d  bn %3d, %d stages, %s (grid %d, %d tiles):\n", s.N, s.H, s.W, kC, s.O, s.S, BN,
              STAGES, what, grid, tiles);
  for (int skip : {0, 4, 3, 7}) {
    Shape sk = s;
    sk.skip = skip & 3;  // the loads; the stores are left out by the CSKIP = 4 kernel
    auto launch = [&](int k) {
      CHECK(cudaLaunchKernelEx(&l.cfg, kerns[skip & 4 ? 1 : 0], wmap, xmaps[k], ymaps[k], (const i32*)d.xsum[k],
                               (i32*)d.y[k], sk));
    };
    if (skip == 0) {
      const auto [checked, bad] = d.check(launch);
      std::printf("    %s %lld/%lld checked, kernel %.2f us\n", bad ? "MISMATCH" : "exact", checked - bad, checked,
                  median_us(d.sets(), launch));
    } else {
      std::printf("    without%s%s (timing only): kernel %.2f us\n", skip & 3 ? " loads" : "", skip & 4 ? " stores" : "",
                  median_us(d.sets(), launch));
    }
  }
}

int main(int argc, char** argv) {
  const Shape layer = layer_from_args(argc, argv);
  if (layer.C != kC || layer.H != 14) {
    std::fprintf(stderr, "%s: this probe is for C = 256 on a 14x14 input\n", argv[0]);
    return 2;
  }
  CHECK(cudaFree(nullptr));
  const Data d(layer);
  const char* only = std::getenv("PROBE_ONLY");
  const int pick = only ? std::atoi(only) : -1;
  if (pick < 0 || pick == 0) run<64, 6, false, 0>(d, "W per stage, stores from registers");
  if (pick < 0 || pick == 1) run<128, 4, false, 0>(d, "W per stage, stores from registers");
  if (pick < 0 || pick == 2) run<64, 8, true, 0>(d, "W resident, stores from registers");
  if (pick < 0 || pick == 3) run<64, 4, true, 1>(d, "W resident, bulk tensor stores");
  if (pick < 0 || pick == 4) run<64, 4, true, 2>(d, "W resident, staged rows");
  if (pick < 0 || pick == 5) run<128, 3, true, 2>(d, "W resident, staged rows");
  return 0;
}

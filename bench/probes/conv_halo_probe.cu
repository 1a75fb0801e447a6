// A 3x3 conv (stride 1 or 2) that reads each input pixel into shared memory once per tile, not once
// per kernel position: a research probe for bench/NOTES.md (session 25), not part of the
// build. conv_im2col_probe.cu's im2col boxes fetch each pixel 9 times per M tile; here a tile
// is R output rows of one image, computed over a padded width of 16 columns, and its input
// is one box of R + 2 rows x 16 columns (from column -1; the copy engine zero-fills the
// padding). On that 16-wide grid the pixels kernel position (kh, kw) needs for output
// column j are input pixel j + 16 kh + kw of the box: the same rows shifted, so every
// position's B operand is a descriptor into the one box. With the non-swizzled K-major
// layout (8-row core matrices of 16-byte rows) a descriptor can start at any row: each
// plane's box is loaded as two boxes of 16 bytes of channels (K halves, LBO apart).
// Output columns 14 and 15 of each row are computed and dropped (16/14 of the MMAs).
//
// The layer (conv_probe_harness.h): batch 128, 14x14x256 -> O channels, 3x3 pad 1, w1 pm1 x
// a2 unsigned, NCHW int32 output. Stride 1: a tile is 7 rows (half an image) x 16 = 112
// columns; stride 2: the whole 7x7 output x 8 = 56 columns (a wgmma of 64).
// Block: 2 consumer warpgroups (rows 0-63, 64-127 of a 128-row M tile), a producer
// warpgroup that gives its registers to them; persistent; the M tile's W (9 positions x 2
// halves x 128 rows x 16 bytes) stays in shared memory; a stage is one tile's input box.
// Epilogue: each warpgroup stages 2*(popc0 + 2*popc1) as 64 rows x 112 columns (row pitch
// 136 words: conflict-free 8-byte writes), then each thread walks one column's rows,
// subtracting its window sum: a warp store is 28 consecutive output pixels.
//
// What it measured (session 25, bench/NOTES.md): n128-14x14x256 3x3/1 15.3 us with skewed
// warpgroups (16.5 without), against 28 us for the shipped kernel; 14x14x256-o512 3x3/2
// 11.4-11.9 us against 13.7.
//
// Build (here) and run (sm_90a):
//   nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -I../.. conv_halo_probe.cu -lcuda -o conv_halo_probe
//   ./conv_halo_probe O stride   (O a multiple of 128, stride 1 or 2)
#include "bench/probes/conv_probe_harness.h"
#include "templates/ptx_sm90a.cuh"
#include "templates/ptx_tma.cuh"

using namespace probe;

constexpr int kBM = 128;
constexpr int kConsumerWarps = 8, kThreads = 32 * (kConsumerWarps + 4);
constexpr int kHalfW = kBM * 16;       // W: one K half of one position, 128 rows x 16 bytes
constexpr int kPosW = 2 * kHalfW;      // W: one position
constexpr int kWBytes = kPos * kPosW;  // 36 KB

// S: the stride. R output rows a tile, computed over PW padded columns (PW > Wo).
// Stride 2: the input splits into 4 phase grids (rows 2i-1 / 2i x columns 2k-1 / 2k, boxes
// loaded with element strides of 2), and kernel position (kh, kw) reads phase (kh == 1, kw
// == 1) shifted by (kh == 2) rows and (kw == 2) columns of the PW-wide grid: again a
// uniform shift of one box.
// SKEW: warpgroup 1 starts its first tile once warpgroup 0's first wgmmas are done, so that
// one warpgroup's epilogue runs beside the other's wgmmas (the stages give it the slack).
template <int S, int R, int PW, int STAGES, bool SKEW = false>
struct Halo {
  // kBN: the wgmma's N, the grid's R*PW columns rounded up to a multiple of 16 (b1 wgmma
  // shapes above 8 are multiples of 16); the extra columns are computed and dropped.
  static constexpr int kRows = R, kPadW = PW, kGrid = R * PW, kBN = (kGrid + 15) / 16 * 16;
  static constexpr int kBoxRows = S == 1 ? R + 2 : R + 1, kBoxPix = kBoxRows * PW;
  static constexpr int kPhases = S == 1 ? 1 : 4;
  static constexpr int kHalfX = kBoxPix * 16;  // X: one K half of one phase box
  static constexpr int kPhaseX = 2 * kHalfX;
  static constexpr int kPlaneX = kPhases * kPhaseX;
  static constexpr int kStageBytes = 2 * kPlaneX;
  static constexpr int kStgPitch = kBN + (8 - kBN % 32 + 32) % 32;  // the least pitch >= kBN that is 8 mod 32
  static constexpr int kStgBytes = 64 * kStgPitch * 4;
  static_assert(kStgPitch >= kBN && kStgPitch % 32 == 8, "staging pitch: 8-byte writes of 8 rows in two wavefronts");
  static_assert(kBN % 8 == 0 && kBN <= 128, "tile columns: a wgmma N, at most one readout thread each");
  static constexpr int kSmem = 1024 + kWBytes + STAGES * kStageBytes + 2 * kStgBytes + (2 * STAGES + 1) * 8;

  static __device__ void run(const CUtensorMap* wmap, const CUtensorMap* xmap, const i32* __restrict__ xsum,
                             i32* __restrict__ y, Shape s) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const u32 raw = static_cast<u32>(__cvta_generic_to_shared(smem_raw));
    const u32 wbase = raw + ((1024u - (raw & 1023u)) & 1023u);
    const u32 sbase = wbase + kWBytes, stg0 = sbase + STAGES * kStageBytes;
    const u32 full0 = stg0 + 2 * kStgBytes, empty0 = full0 + STAGES * 8, wfull = empty0 + STAGES * 8;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (threadIdx.x == 0) {
      for (int i = 0; i < STAGES; ++i) {
        apnn::ptx::mbar_init(full0 + 8 * i, 1);
        apnn::ptx::mbar_init(empty0 + 8 * i, kConsumerWarps);
      }
      apnn::ptx::mbar_init(wfull, 1);
      apnn::ptx::fence_mbar_init();
    }
    __syncthreads();
    apnn::ptx::grid_dependency_wait();
    const int tiles_m = s.O / kBM, m0 = (static_cast<int>(blockIdx.x) % tiles_m) * kBM;
    const int first = static_cast<int>(blockIdx.x) / tiles_m, step = static_cast<int>(gridDim.x) / tiles_m;
    const int tiles = s.N * (s.Ho / kRows);  // (image, row block)
    if (warp >= kConsumerWarps) {
      apnn::ptx::setmaxnreg_dec<40>();
      if (warp == kConsumerWarps && lane == 0) {
        const apnn::TmaMap* wm = reinterpret_cast<const apnn::TmaMap*>(wmap);
        const apnn::TmaMap* xm = reinterpret_cast<const apnn::TmaMap*>(xmap);
        const u64 keep = apnn::ptx::policy_evict_last();
        apnn::ptx::mbar_arrive_expect_tx(wfull, kWBytes);
        for (int pos = 0; pos < kPos; ++pos)
          for (int h = 0; h < 2; ++h)
            apnn::ptx::tma_load_3d(wbase + pos * kPosW + h * kHalfW, wm, 16 * h, pos, m0, wfull, keep);
        int i = 0;
        for (int t = first; t < tiles; t += step, ++i) {
          const int slot = i % STAGES, n = t / (s.Ho / kRows), ho0 = (t % (s.Ho / kRows)) * kRows;
          apnn::ptx::mbar_wait(empty0 + 8 * slot, ((i / STAGES) & 1) ^ 1);
          const u32 full = full0 + 8 * slot, st = sbase + slot * kStageBytes;
          apnn::ptx::mbar_arrive_expect_tx(full, kStageBytes);
          for (int p = 0; p < 2; ++p)
            for (int ph = 0; ph < kPhases; ++ph)
              for (int h = 0; h < 2; ++h) {
                // Stride 1: rows ho0-1.., columns -1... Stride 2, phase (ra, cb): rows 2 ho0 - 1 + ra..,
                // columns -1 + cb.., every other one (the map's element strides).
                const int ra = ph / 2, cb = ph % 2;
                const int h0 = S == 1 ? ho0 - 1 : 2 * ho0 - 1 + ra, w0 = S == 1 ? -1 : -1 + cb;
                tma_load_4d(st + p * kPlaneX + ph * kPhaseX + h * kHalfX, xm, 16 * h, w0, h0, 2 * n + p, full, keep);
              }
        }
      }
      return;
    }
    apnn::ptx::setmaxnreg_inc<232>();
    consume(wbase, sbase, stg0, full0, empty0, wfull, xsum, y, s, m0, first, step, tiles);
  }

  static __device__ __forceinline__ void tma_load_4d(u32 dst, const apnn::TmaMap* map, int c0, int c1, int c2, int c3,
                                                     u32 bar, u64 policy) {
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%2, "
        "%3, %4, %5}], [%6], %7;\n" ::"r"(dst),
        "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar), "l"(policy)
        : "memory");
  }

  static __device__ void consume(u32 wbase, u32 sbase, u32 stg0, u32 full0, u32 empty0, u32 wfull,
                                 const i32* __restrict__ xsum, i32* __restrict__ y, const Shape& s, int m0, int first,
                                 int step, int tiles) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, wg = warp >> 2, tid = threadIdx.x & 127;
    const int g = lane >> 2, tig = lane & 3;
    // Non-swizzled K-major: core matrices of 8 rows x 16 bytes, SBO 128 between 8-row groups,
    // LBO between the two 16-byte K halves. Both operands share the high word (SBO, mode 0).
    const apnn::ptx::WgmmaDesc da = apnn::ptx::wgmma_desc(wbase + wg * 64 * 16, kHalfW, 128, 0);
    const apnn::ptx::WgmmaDesc db = apnn::ptx::wgmma_desc(sbase, kHalfX, 128, 0);
    const u32 stg = stg0 + wg * kStgBytes;
    const int HoWo = s.Ho * s.Wo, row0 = m0 + wg * 64;
    // This thread's readout column j of the grid (columns PW-Wo.. of each row dropped) and its
    // rows r0, r0 + kSplit, ...: kSplit threads a column where the grid is narrow.
    constexpr int kSplit = 128 / kGrid;
    const int j = tid % kGrid, r0 = tid / kGrid, jr = j / kPadW, jw = j % kPadW;
    const bool reads = r0 < kSplit && jw < s.Wo;
    apnn::ptx::mbar_wait(wfull, 0);
    if (SKEW && wg == 1) asm volatile("bar.sync 3, 256;\n" ::: "memory");
    i32 acc[2][kBN / 8][4];
    int i = 0;
    bool first_tile = true;
    for (int t = first; t < tiles; t += step, ++i) {
      const int slot = i % STAGES, n = t / (s.Ho / kRows), ho0 = (t % (s.Ho / kRows)) * kRows;
      const int pix = (ho0 + jr) * s.Wo + jw;
      const i32 xs = reads ? __ldg(xsum + n * HoWo + pix) : 0;  // loaded under the mainloop
      apnn::ptx::mbar_wait(full0 + 8 * slot, (i / STAGES) & 1);
      fence(acc);
      apnn::ptx::wgmma_fence();
      const u32 b_slot = db.lo + static_cast<u32>(slot * kStageBytes >> 4);
#pragma unroll
      for (int pos = 0; pos < kPos; ++pos) {
        const u32 a = da.lo + static_cast<u32>(pos * kPosW >> 4);
        const int kh = pos / 3, kw = pos % 3;
        const int phase = S == 1 ? 0 : (kh == 1) * 2 + (kw == 1);
        const int dr = S == 1 ? kh : kh == 2, dc = S == 1 ? kw : kw == 2;
        const u32 shift = static_cast<u32>((phase * kPhaseX + (dr * kPadW + dc) * 16) >> 4);
#pragma unroll
        for (int p = 0; p < 2; ++p)
          apnn::ptx::WgmmaB1<kBN>::mma(acc[p], a, b_slot + static_cast<u32>(p * kPlaneX >> 4) + shift, da.hi, pos > 0);
      }
      apnn::ptx::wgmma_commit();
      fence(acc);
      apnn::ptx::wgmma_wait<0>();
      fence(acc);
      if (lane == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(empty0 + 8 * slot) : "memory");
      if (SKEW && first_tile && wg == 0) asm volatile("bar.arrive 3, 256;\n" ::: "memory");
      if (first_tile) {
        apnn::ptx::allow_dependent_launch();
        first_tile = false;
      }
      apnn::ptx::named_barrier(1 + wg, 128);  // the last tile's readout is done with the staging
#pragma unroll
      for (int c = 0; c < kBN / 8; ++c)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int r = (warp & 3) * 16 + g + 8 * half, col = 8 * c + 2 * tig;
          const i32 v0 = 2 * (acc[0][c][2 * half] + 2 * acc[1][c][2 * half]);
          const i32 v1 = 2 * (acc[0][c][2 * half + 1] + 2 * acc[1][c][2 * half + 1]);
          asm volatile("st.shared.v2.b32 [%0], {%1, %2};\n" ::"r"(stg + (r * kStgPitch + col) * 4), "r"(v0), "r"(v1)
                       : "memory");
        }
      apnn::ptx::named_barrier(1 + wg, 128);
      if (reads) {
        i32* d = y + ((n * s.O + row0 + r0) * HoWo + pix);
#pragma unroll 8
        for (int r = r0; r < 64; r += kSplit, d += kSplit * HoWo) {
          i32 v;
          asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(stg + (r * kStgPitch + j) * 4) : "memory");
          *d = v - xs;
        }
      }
    }
  }

  static __device__ __forceinline__ void fence(i32 (&acc)[2][kBN / 8][4]) {
#pragma unroll
    for (int p = 0; p < 2; ++p)
#pragma unroll
      for (int c = 0; c < kBN / 8; ++c)
#pragma unroll
        for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(acc[p][c][e])::"memory");
  }
};

template <int S, int R, int PW, int STAGES, bool SKEW>
__global__ void __launch_bounds__(kThreads, 1)
    conv_halo(const __grid_constant__ CUtensorMap wmap, const __grid_constant__ CUtensorMap xmap,
              const i32* __restrict__ xsum, i32* __restrict__ y, Shape s) {
  Halo<S, R, PW, STAGES, SKEW>::run(&wmap, &xmap, xsum, y, s);
}

template <int S, int R, int PW, int STAGES, bool SKEW = false>
static void run(const Data& d) {
  const Shape& s = d.s;
  using K = Halo<S, R, PW, STAGES, SKEW>;
  if (s.S != S || s.Ho % R != 0 || PW <= s.Wo) return;
  CUtensorMap wmap;
  {
    const cuuint64_t dims[3] = {kPixBytes, kPos, static_cast<cuuint64_t>(s.O)};
    const cuuint64_t strides[2] = {kPixBytes, kPixBytes * kPos};
    const cuuint32_t box[3] = {16, 1, kBM}, unit[3] = {1, 1, 1};
    check_encode(cuTensorMapEncodeTiled(&wmap, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, d.w, dims, strides, box, unit,
                                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                        CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                 "W");
  }
  std::vector<CUtensorMap> xmaps(d.sets());
  for (int k = 0; k < d.sets(); ++k) {
    // {32 bytes of a pixel, W, H, image and plane (n*2 + t)}; boxes of 16 bytes x 16 x (R+2) x 1.
    const cuuint64_t dims[4] = {kPixBytes, (cuuint64_t)s.W, (cuuint64_t)s.H, (cuuint64_t)s.N * 2};
    const cuuint64_t strides[3] = {kPixBytes, (cuuint64_t)s.W * kPixBytes, (cuuint64_t)s.H * s.W * kPixBytes};
    const cuuint32_t box[4] = {16, PW * S, K::kBoxRows * S, 1}, step[4] = {1, S, S, 1};
    check_encode(cuTensorMapEncodeTiled(&xmaps[k], CU_TENSOR_MAP_DATA_TYPE_UINT8, 4, d.x[k], dims, strides, box, step,
                                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                        CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                 "X");
  }
  auto kern = conv_halo<S, R, PW, STAGES, SKEW>;
  CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, K::kSmem));
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int tiles_m = s.O / kBM, tiles = s.N * (s.Ho / R) * tiles_m;
  const int grid = std::min(tiles, sms / tiles_m * tiles_m);
  Launch l(grid, kThreads, K::kSmem);
  auto launch = [&](int k) {
    CHECK(cudaLaunchKernelEx(&l.cfg, kern, wmap, xmaps[k], (const i32*)d.xsum[k], (i32*)d.y[k], s));
  };
  launch(0);
  CHECK(cudaDeviceSynchronize());
  const auto [checked, bad] = d.check();
  const float us = median_us(d.sets(), launch);
  std::printf("n%d-%dx%dx%d-o%d 3x3/%d halo tiles (%d rows x %d, %d stages%s, grid %d, %d tiles): %s %lld/%lld checked, kernel %.2f us\n",
              s.N, s.H, s.W, kC, s.O, S, R, PW, STAGES, SKEW ? ", skewed warpgroups" : "", grid, tiles, bad ? "MISMATCH" : "exact", checked - bad, checked, us);
}

int main(int argc, char** argv) {
  if (argc != 3 || std::atoi(argv[1]) % kBM != 0 || (std::atoi(argv[2]) != 1 && std::atoi(argv[2]) != 2)) {
    std::fprintf(stderr, "usage: %s O stride   (O a multiple of 128, stride 1 or 2; input 14x14)\n", argv[0]);
    return 2;
  }
  CHECK(cudaFree(nullptr));
  const Data d(make_shape(128, 14, std::atoi(argv[1]), std::atoi(argv[2])), 8);
  run<1, 7, 16, 2>(d);
  run<1, 7, 16, 4>(d);
  run<1, 7, 16, 4, true>(d);
  run<1, 7, 16, 8, true>(d);
  run<2, 7, 8, 2>(d);
  run<2, 7, 8, 4>(d);
  run<2, 7, 8, 4, true>(d);
  run<2, 7, 8, 8, true>(d);
  return 0;
}

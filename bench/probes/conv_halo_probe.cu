// A 3x3 conv (stride 1 or 2) that reads each input pixel into shared memory once per tile, not once
// per kernel position: a research probe for bench/NOTES.md (session 25), not part of the
// build. conv_im2col_probe.cu's im2col boxes fetch each pixel 9 times per M tile; here a tile
// is R output rows of one image, computed over a padded width of 16 columns, and its input
// is one box of R + 2 rows x 16 columns (from column -1; the copy engine zero-fills the
// padding). On that 16-wide grid the pixels kernel position (kh, kw) needs for output
// column j are input pixel j + 16 kh + kw of the box: the same rows shifted, so every
// position's B operand is a descriptor into the one box. With the non-swizzled K-major
// layout (8-row core matrices of 16-byte rows) a descriptor can start at any row: each
// plane's box is loaded as boxes of 16 bytes of channels (K chunks, LBO apart; two make a
// k256 slice).
// Output columns Wo.. of each grid row are computed and dropped (16/14 of the MMAs at 14x14).
//
// The layer (conv_probe_harness.h): batch 128, 3x3 pad 1, w1 pm1 x a2 unsigned, NCHW int32
// output. 14x14x256, stride 1: a tile is 7 rows (half an image) x 16 = 112 columns; stride
// 2: the whole 7x7 output x 8 = 56 columns (a wgmma of 64); 7x7x512: 7 rows x 9 (64).
// Block: 2 consumer warpgroups (rows 0-63, 64-127 of a 128-row M tile), a producer
// warpgroup that gives its registers to them; persistent; the M tile's W (9 positions x 2
// halves x 128 rows x 16 bytes) stays in shared memory; a stage is one tile's input box.
// Epilogue: each warpgroup stages 2*(popc0 + 2*popc1) as 64 rows x 112 columns (row pitch
// 136 words: conflict-free 8-byte writes), then each thread walks one column's rows,
// subtracting its window sum: a warp store is 28 consecutive output pixels.
//
// What it measured (session 25, device call 17, bench/NOTES.md; cuDNN fp16 from `apnn bench`
// in the same call): n128-14x14x256 3x3/1 15.08 us with skewed warpgroups (16.04 without)
// against 28.02 shipped and 48.69 cuDNN (3.23x); 14x14x256-o512 3x3/2 11.10 against 13.54
// and 30.70; 7x7x512 (C = 512, a 7 x 9 grid) 14.41 against 16.86 and 50.68.
// Session 29 (device call 6): X in 32-byte rows of the 32-byte swizzle (XROW32), its
// descriptors shifted by whole rows, was exact with the base offset 0 and with it set from
// the address; 14x14x256 3x3/1 skewed 4 stages 15.13 -> 14.43 us, 3x3/2 2 stages 11.19 ->
// 10.48 (base offset set: 14.71, 10.75).
// Session 30: the aligned-line readout (LINE) at 3x3/2, written and compiled. Session 31
// (device calls 1-2): exact, but 10.85-10.87 us against the same kernel's 10.63-10.66; ncu
// counted 1.50 L2 sector writes per output sector for its whole aligned lines against 1.66,
// and 40% more instructions: partial-sector writes do not bound the layer's rounds.
//
// Build (here) and run (sm_90a):
//   nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -I../.. conv_halo_probe.cu -lcuda -o conv_halo_probe
//   ./conv_halo_probe O stride [C H]   (256 1, 512 2, 512 1 512 7)
#include "bench/probes/conv_probe_harness.h"

using namespace probe;

constexpr int kBM = 128;
constexpr int kConsumerWarps = 8, kThreads = 32 * (kConsumerWarps + 4);
constexpr int kHalfW = kBM * 16;  // W: one 16-byte K chunk (128 channels) of one position, 128 rows

// S: the stride. R output rows a tile, computed over PW padded columns (PW > Wo).
// Stride 2: the input splits into 4 phase grids (rows 2i-1 / 2i x columns 2k-1 / 2k, boxes
// loaded with element strides of 2), and kernel position (kh, kw) reads phase (kh == 1, kw
// == 1) shifted by (kh == 2) rows and (kw == 2) columns of the PW-wide grid: again a
// uniform shift of one box.
// SKEW: warpgroup 1 starts its first tile once warpgroup 0's first wgmmas are done, so that
// one warpgroup's epilogue runs beside the other's wgmmas (the stages give it the slack).
// HALVES: 16-byte K chunks of a pixel (C / 128); two make a k256 wgmma slice.
// XROW32 (session 29): X in rows of 32 bytes, both 16-byte K chunks of a pixel (HALVES 2)
// in one box of the 32-byte swizzle, so a phase is one copy of 32-byte elements instead of
// two of 16; the B descriptor reads it swizzled, its start shifted by whole 32-byte rows
// (BO: the descriptor's base offset set from the start address's bits 7-9, else 0).
// LINE (session 30; refuted in session 31, above): at stride 2 with whole 7x7 outputs, a warpgroup's 64
// channels x 49 pixels are one aligned run of the output; thread t writes its words t, t +
// 128, ..., so that each warp store is one whole 128-byte line (the committed readout's warp
// stores cover 28 words of a 196-byte channel row, most sectors reaching L2 in two partial
// writes). Word w = 49c + p reads staged row c at grid column p + p / 7, less that column's
// window sum, which the column's thread leaves in the staging rows' spare words.
template <int S, int R, int PW, int HALVES, int STAGES, bool SKEW = false, bool XROW32 = false, bool BO = false,
          bool LINE = false>
struct Halo {
  static_assert(!LINE || (S == 2 && R == 7 && PW == 8), "aligned-line readout: whole 7x7 outputs at stride 2");
  static_assert(HALVES % 2 == 0, "whole k256 slices: C a multiple of 256");
  static_assert(!XROW32 || HALVES == 2, "32-byte X rows: C = 256");
  static constexpr int kPosW = HALVES * kHalfW;  // W: one position
  static constexpr int kWBytes = kPos * kPosW;   // resident: 36 KB at C = 256
  // kBN: the wgmma's N, the grid's R*PW columns rounded up to a multiple of 16 (b1 wgmma
  // shapes above 8 are multiples of 16); the extra columns are computed and dropped.
  static constexpr int kRows = R, kPadW = PW, kGrid = R * PW, kBN = (kGrid + 15) / 16 * 16;
  static constexpr int kBoxRows = S == 1 ? R + 2 : R + 1, kBoxPix = kBoxRows * PW;
  static constexpr int kPhases = S == 1 ? 1 : 4;
  // X: one 16-byte K chunk of one phase box, its shared-memory slot rounded up to the 128
  // bytes a bulk copy's destination must be aligned to (7x7 inputs: 81 pixels, 1296 bytes).
  static constexpr int kBoxBytes = kBoxPix * (XROW32 ? 32 : 16);
  static constexpr int kHalfX = XROW32 ? (kBoxBytes + 255) / 256 * 256 : (kBoxBytes + 127) / 128 * 128;
  static constexpr int kPhaseX = XROW32 ? kHalfX : HALVES * kHalfX;
  static constexpr int kPlaneX = kPhases * kPhaseX;
  static constexpr int kStageBytes = 2 * kPlaneX;
  static constexpr int kStageTx = 2 * kPhases * (XROW32 ? 1 : HALVES) * kBoxBytes;  // the bytes its copies bring
  static constexpr int kStgPitch = kBN + (8 - kBN % 32 + 32) % 32;  // the least pitch >= kBN that is 8 mod 32
  static constexpr int kStgBytes = 64 * kStgPitch * 4;
  static_assert(kStgPitch >= kBN && kStgPitch % 32 == 8, "staging pitch: 8-byte writes of 8 rows in two wavefronts");
  static_assert(kBN % 8 == 0 && kBN <= 128, "tile columns: a wgmma N, at most one readout thread each");
  static constexpr int kSmem = 1024 + kWBytes + STAGES * kStageBytes + 2 * kStgBytes + (2 * STAGES + 1) * 8;

  static __device__ void run(const CUtensorMap* wmap, const CUtensorMap* xmap, const i32* __restrict__ xsum,
                             i32* __restrict__ y, Shape s) {
    const u32 wbase = aligned_smem_base();
    const u32 sbase = wbase + kWBytes, stg0 = sbase + STAGES * kStageBytes;
    const u32 full0 = stg0 + 2 * kStgBytes, empty0 = full0 + STAGES * 8, wfull = empty0 + STAGES * 8;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    init_pipeline(full0, empty0, wfull, STAGES, kConsumerWarps);
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
          for (int h = 0; h < HALVES; ++h)
            apnn::ptx::tma_load_3d(wbase + pos * kPosW + h * kHalfW, wm, 16 * h, pos, m0, wfull, keep);
        int i = 0;
        for (int t = first; t < tiles; t += step, ++i) {
          const int slot = i % STAGES, n = t / (s.Ho / kRows), ho0 = (t % (s.Ho / kRows)) * kRows;
          apnn::ptx::mbar_wait(empty0 + 8 * slot, ((i / STAGES) & 1) ^ 1);
          const u32 full = full0 + 8 * slot, st = sbase + slot * kStageBytes;
          apnn::ptx::mbar_arrive_expect_tx(full, kStageTx);
          for (int p = 0; p < 2; ++p)
            for (int ph = 0; ph < kPhases; ++ph)
              for (int h = 0; h < (XROW32 ? 1 : HALVES); ++h) {
                // Stride 1: rows ho0-1.., columns -1... Stride 2, phase (ra, cb): rows 2 ho0 - 1 + ra..,
                // columns -1 + cb.., every other one (the map's element strides).
                const int ra = ph / 2, cb = ph % 2;
                const int h0 = S == 1 ? ho0 - 1 : 2 * ho0 - 1 + ra, w0 = S == 1 ? -1 : -1 + cb;
                apnn::ptx::tma_load_4d(st + p * kPlaneX + ph * kPhaseX + h * kHalfX, xm, 16 * h, w0, h0, 2 * n + p, full, keep);
              }
        }
      }
      return;
    }
    apnn::ptx::setmaxnreg_inc<232>();
    consume(wbase, sbase, stg0, full0, empty0, wfull, xsum, y, s, m0, first, step, tiles);
  }

  static __device__ void consume(u32 wbase, u32 sbase, u32 stg0, u32 full0, u32 empty0, u32 wfull,
                                 const i32* __restrict__ xsum, i32* __restrict__ y, const Shape& s, int m0, int first,
                                 int step, int tiles) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, wg = warp >> 2, tid = threadIdx.x & 127;
    const int g = lane >> 2, tig = lane & 3;
    // Non-swizzled K-major: core matrices of 8 rows x 16 bytes, SBO 128 between 8-row groups,
    // LBO between the two 16-byte K halves. Both operands share the high word (SBO, mode 0).
    const apnn::ptx::WgmmaDesc da = apnn::ptx::wgmma_desc(wbase + wg * 64 * 16, kHalfW, 128, 0);
    const apnn::ptx::WgmmaDesc db =
        XROW32 ? apnn::ptx::wgmma_desc(sbase, 16, 256, 3) : apnn::ptx::wgmma_desc(sbase, kHalfX, 128, 0);
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
        const u32 shift = static_cast<u32>((phase * kPhaseX + (dr * kPadW + dc) * (XROW32 ? 32 : 16)) >> 4);
#pragma unroll
        for (int k = 0; k < HALVES / 2; ++k)
#pragma unroll
          for (int p = 0; p < 2; ++p) {
            const u32 b = b_slot + static_cast<u32>((p * kPlaneX + 2 * k * kHalfX) >> 4) + shift;
            if constexpr (XROW32) {
              // Base offset (bits 49-51): the start address's bits 7-9.
              const u32 hi = db.hi | (BO ? ((((b & 0x3FFF) << 4) >> 7) & 7) << 17 : 0u);
              apnn::ptx::WgmmaB1<kBN>::mma(acc[p], a + static_cast<u32>(2 * k * kHalfW >> 4), da.hi, b, hi, pos > 0 || k > 0);
            } else {
              apnn::ptx::WgmmaB1<kBN>::mma(acc[p], a + static_cast<u32>(2 * k * kHalfW >> 4), b, da.hi, pos > 0 || k > 0);
            }
          }
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
      if constexpr (LINE) {
        // Column j's window sum to row j / 8's spare words (the pitch leaves 8 past kBN = 64).
        if (r0 == 0)
          asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(stg + ((j >> 3) * kStgPitch + kBN + (j & 7)) * 4), "r"(xs)
                       : "memory");
      }
      apnn::ptx::named_barrier(1 + wg, 128);
      if constexpr (LINE) {
        i32* yb = y + (n * s.O + row0) * 49;
        int c = tid / 49, p = tid - 49 * c;
#pragma unroll 5
        for (int w = tid; w < 64 * 49; w += 128) {
          const int jj = p + ((p * 37) >> 8);  // p / 7 for p < 49
          i32 v, x;
          asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(stg + (c * kStgPitch + jj) * 4));
          asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(x) : "r"(stg + ((jj >> 3) * kStgPitch + kBN + (jj & 7)) * 4));
          yb[w] = v - x;
          p += 30;  // 128 words = 2 rows of 49 and 30
          c += 2;
          if (p >= 49) {
            p -= 49;
            ++c;
          }
        }
      } else if (reads) {
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

template <int S, int R, int PW, int HALVES, int STAGES, bool SKEW, bool XROW32, bool BO, bool LINE>
__global__ void __launch_bounds__(kThreads, 1)
    conv_halo(const __grid_constant__ CUtensorMap wmap, const __grid_constant__ CUtensorMap xmap,
              const i32* __restrict__ xsum, i32* __restrict__ y, Shape s) {
  Halo<S, R, PW, HALVES, STAGES, SKEW, XROW32, BO, LINE>::run(&wmap, &xmap, xsum, y, s);
}

// Returns whether the layer fits the configuration (else nothing runs).
template <int S, int R, int PW, int HALVES, int STAGES, bool SKEW = false, bool XROW32 = false, bool BO = false,
          bool LINE = false>
static bool run(const Data& d) {
  const Shape& s = d.s;
  using K = Halo<S, R, PW, HALVES, STAGES, SKEW, XROW32, BO, LINE>;
  if (LINE && s.Wo != 7) return false;
  // The grid: whole tiles of R rows, and PW columns that hold the box's columns -1..Wo (stride 1).
  if (s.S != S || s.C != 128 * HALVES || s.Ho % R != 0 || PW < s.Wo + (S == 1 ? 2 : 1)) return false;
  const cuuint64_t pix_bytes = s.C / 8;
  CUtensorMap wmap;
  {
    const cuuint64_t dims[3] = {pix_bytes, kPos, static_cast<cuuint64_t>(s.O)};
    const cuuint64_t strides[2] = {pix_bytes, pix_bytes * kPos};
    const cuuint32_t box[3] = {16, 1, kBM}, unit[3] = {1, 1, 1};
    check_encode(cuTensorMapEncodeTiled(&wmap, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, d.w, dims, strides, box, unit,
                                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                        CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                 "W");
  }
  std::vector<CUtensorMap> xmaps(d.sets());
  for (int k = 0; k < d.sets(); ++k) {
    // {a pixel's C/8 bytes, W, H, image and plane (n*2 + t)}; boxes of 16 bytes x PW x the
    // box rows x 1 (times the stride, with element strides of the stride).
    const cuuint64_t dims[4] = {pix_bytes, (cuuint64_t)s.W, (cuuint64_t)s.H, (cuuint64_t)s.N * 2};
    const cuuint64_t strides[3] = {pix_bytes, (cuuint64_t)s.W * pix_bytes, (cuuint64_t)s.H * s.W * pix_bytes};
    const cuuint32_t box[4] = {XROW32 ? 32u : 16u, PW * S, K::kBoxRows * S, 1}, step[4] = {1, S, S, 1};
    check_encode(cuTensorMapEncodeTiled(&xmaps[k], CU_TENSOR_MAP_DATA_TYPE_UINT8, 4, d.x[k], dims, strides, box, step,
                                        CU_TENSOR_MAP_INTERLEAVE_NONE,
                                        XROW32 ? CU_TENSOR_MAP_SWIZZLE_32B : CU_TENSOR_MAP_SWIZZLE_NONE,
                                        CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                 "X");
  }
  auto kern = conv_halo<S, R, PW, HALVES, STAGES, SKEW, XROW32, BO, LINE>;
  CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, K::kSmem));
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int tiles_m = s.O / kBM, tiles = s.N * (s.Ho / R) * tiles_m;
  const int grid = std::min(tiles, sms / tiles_m * tiles_m);
  Launch l(grid, kThreads, K::kSmem);
  auto launch = [&](int k) {
    CHECK(cudaLaunchKernelEx(&l.cfg, kern, wmap, xmaps[k], (const i32*)d.xsum[k], (i32*)d.y[k], s));
  };
  const auto [checked, bad] = d.check(launch);
  const float us = median_us(d.sets(), launch);
  std::printf("n%d-%dx%dx%d-o%d 3x3/%d halo tiles (%d rows x %d, %d stages%s%s%s, grid %d, %d tiles): %s %lld/%lld checked, kernel %.2f us\n",
              s.N, s.H, s.W, s.C, s.O, S, R, PW, STAGES, SKEW ? ", skewed warpgroups" : "",
              XROW32 ? (BO ? ", X in 32-byte rows, base offset" : ", X in 32-byte rows") : "",
              LINE ? ", aligned-line readout" : "", grid, tiles,
              bad ? "MISMATCH" : "exact", checked - bad, checked, us);
  return true;
}

int main(int argc, char** argv) {
  const Shape layer = layer_from_args(argc, argv);
  CHECK(cudaFree(nullptr));
  const Data d(layer);
  // Each runs where the layer fits it: 14x14 inputs at C = 256 (stride 1: half an image a
  // tile; stride 2: the whole 7x7 output), 7x7 inputs at C = 512 (stride 1, a whole image).
  const bool ran = run<1, 7, 16, 2, 2>(d) | run<1, 7, 16, 2, 4>(d) | run<1, 7, 16, 2, 4, true>(d) |
                  run<1, 7, 16, 2, 8, true>(d) | run<2, 7, 8, 2, 2>(d) | run<2, 7, 8, 2, 4>(d) |
                  run<2, 7, 8, 2, 4, true>(d) | run<2, 7, 8, 2, 8, true>(d) | run<1, 7, 9, 4, 2>(d) |
                  run<1, 7, 9, 4, 4>(d) | run<1, 7, 9, 4, 4, true>(d) |
                  // Session 29: X in 32-byte rows (C = 256), base offset 0 and from the address.
                  run<1, 7, 16, 2, 4, true, true, false>(d) | run<1, 7, 16, 2, 4, true, true, true>(d) |
                  run<2, 7, 8, 2, 2, false, true, false>(d) | run<2, 7, 8, 2, 2, false, true, true>(d) |
                  // Session 30: the aligned-line readout beside the same kernel (3x3/2, 14x14 inputs).
                  run<2, 7, 8, 2, 2, false, true, false, true>(d);
  if (!ran) {
    std::fprintf(stderr, "%s: no configuration fits this layer (C=%d, %dx%d, stride %d)\n", argv[0], d.s.C, d.s.H, d.s.W, d.s.S);
    return 2;
  }
  return 0;
}

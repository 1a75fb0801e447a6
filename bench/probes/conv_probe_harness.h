// Shared by the batch-128 conv probes (conv_im2col_probe.cu, conv_halo_probe.cu): their
// layer (w1 pm1 weights x a2 unsigned activations, C a multiple of 128, 3x3, pad 1, NCHW
// int32 output), its random inputs in the library's layouts (include/apnn/conv_layout.h), the check against a
// CPU conv, and a copy of the library's timing rule (runtime/steady_timing.h: a warm-up of at
// least 50 ms, 5 repeats of 50 back-to-back launches, twice, the lower median; input/output
// sets spanning 4x the L2 cache), with programmatic dependent launch as our kernels run.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

#include "bench/probes/probe_check.h"
#include "templates/apnn_types.cuh"
#include "templates/ptx_sm90a.cuh"
#include "templates/ptx_tma.cuh"

namespace probe {

using apnn::i32;

constexpr int kPos = 9;  // 3x3

struct Shape {
  int N, C, H, W, O, S, Ho, Wo, P;  // C: a multiple of 128 (whole 16-byte chunks of a pixel's bits)
  int skip;  // timing only (conv_im2col_probe.cu): bit 0 leaves out the W loads, bit 1 the X loads
};

inline Shape make_shape(int N, int C, int H, int O, int S) {
  Shape s{};
  s.N = N, s.C = C, s.H = s.W = H, s.O = O, s.S = S;
  s.Ho = s.Wo = (H + 2 - 3) / S + 1;
  s.P = N * s.Ho * s.Wo;
  return s;
}

// The probes' command line: O (a multiple of 128: whole M tiles), the stride, and optionally
// C and H (default 256 and 14), at batch 128. Exits with 2 and the usage on anything else.
inline Shape layer_from_args(int argc, char** argv) {
  const bool ok_count = argc == 3 || argc == 5;
  const int O = ok_count ? std::atoi(argv[1]) : 0, S = ok_count ? std::atoi(argv[2]) : 0;
  const int C = argc == 5 ? std::atoi(argv[3]) : 256, H = argc == 5 ? std::atoi(argv[4]) : 14;
  if (O <= 0 || O % 128 != 0 || (S != 1 && S != 2) || C <= 0 || C % 128 != 0 || H < 3) {
    std::fprintf(stderr, "usage: %s O stride [C H]   (O, C multiples of 128, stride 1 or 2, H >= 3; batch 128)\n", argv[0]);
    std::exit(2);
  }
  return make_shape(128, C, H, O, S);
}

// Device copies of the inputs: activation sets (each with its window sums and an output
// buffer; enough of them to span 4x the L2 cache, 2 to 32, as rotation_sets picks) and one
// weight tensor.
struct Data {
  Shape s;
  std::vector<unsigned char> xval0;  // set 0's values [n][h][w][c], for the check
  std::vector<signed char> wval;     // [o][kh][kw][c], +-1
  void* w = nullptr;                 // planes [o][kh][kw][C/32 words] (one plane: w1)
  std::vector<void*> x, xsum, y;     // per set: planes [n][t][h][w][C/32 words], window sums [n][ho][wo], output
  size_t ybytes = 0;

  explicit Data(const Shape& shape) : s(shape) {
    std::mt19937 rng(1);
    const int C = s.C, CW = s.C / 32;
    const size_t pixels = static_cast<size_t>(s.N) * s.H * s.W;
    ybytes = static_cast<size_t>(s.N) * s.O * s.Ho * s.Wo * 4;
    int l2 = 0;
    CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    const size_t set_bytes = pixels * 2 * CW * 4 + static_cast<size_t>(s.P) * 4 + ybytes;
    const int sets = static_cast<int>(std::clamp<size_t>((4 * static_cast<size_t>(l2) + set_bytes - 1) / set_bytes, 2, 32));
    for (int k = 0; k < sets; ++k) {
      std::vector<unsigned char> xv(pixels * C);
      for (auto& v : xv) v = rng() & 3;
      std::vector<u32> xp(pixels * 2 * CW, 0);
      for (int n = 0; n < s.N; ++n)
        for (int t = 0; t < 2; ++t)
          for (int hw = 0; hw < s.H * s.W; ++hw)
            for (int c = 0; c < C; ++c)
              if ((xv[(static_cast<size_t>(n) * s.H * s.W + hw) * C + c] >> t) & 1)
                xp[((static_cast<size_t>(n) * 2 + t) * s.H * s.W + hw) * CW + c / 32] |= 1u << (c % 32);
      std::vector<i32> sum(static_cast<size_t>(s.P), 0);
      for (int n = 0; n < s.N; ++n)
        for (int ho = 0; ho < s.Ho; ++ho)
          for (int wo = 0; wo < s.Wo; ++wo) {
            i32 acc = 0;
            for (int kh = 0; kh < 3; ++kh)
              for (int kw = 0; kw < 3; ++kw) {
                const int h = ho * s.S - 1 + kh, w = wo * s.S - 1 + kw;
                if (h < 0 || h >= s.H || w < 0 || w >= s.W) continue;
                for (int c = 0; c < C; ++c) acc += xv[((static_cast<size_t>(n) * s.H + h) * s.W + w) * C + c];
              }
            sum[(static_cast<size_t>(n) * s.Ho + ho) * s.Wo + wo] = acc;
          }
      x.push_back(upload(xp.data(), xp.size() * 4));
      xsum.push_back(upload(sum.data(), sum.size() * 4));
      void* out;
      CHECK(cudaMalloc(&out, ybytes));
      CHECK(cudaMemset(out, 0x7f, ybytes));
      y.push_back(out);
      if (k == 0) xval0 = std::move(xv);
    }
    wval.resize(static_cast<size_t>(s.O) * kPos * C);
    std::vector<u32> wp(static_cast<size_t>(s.O) * kPos * CW, 0);
    for (size_t i = 0; i < wval.size(); ++i) {
      const bool b = rng() & 1;
      wval[i] = b ? 1 : -1;
      if (b) wp[i / 32] |= 1u << (i % 32);
    }
    w = upload(wp.data(), wp.size() * 4);
  }
  ~Data() {
    for (size_t k = 0; k < x.size(); ++k) {
      cudaFree(x[k]);
      cudaFree(xsum[k]);
      cudaFree(y[k]);
    }
    cudaFree(w);
  }
  int sets() const { return static_cast<int>(x.size()); }

  static void* upload(const void* src, size_t bytes) {
    void* d;
    CHECK(cudaMalloc(&d, bytes));
    CHECK(cudaMemcpy(d, src, bytes, cudaMemcpyHostToDevice));
    return d;
  }

  // One launch on set 0, its output filled with 0x7f bytes first (so that no earlier
  // configuration's results can pass for this one's), against a CPU conv: images 0 and N-1
  // whole and 20000 random outputs. Prints up to 5 mismatches; returns (checked, mismatching).
  std::pair<long long, long long> check(const std::function<void(int)>& launch) const {
    CHECK(cudaMemset(y[0], 0x7f, ybytes));
    launch(0);
    CHECK(cudaDeviceSynchronize());
    const int C = s.C;
    std::vector<i32> yh(ybytes / 4);
    CHECK(cudaMemcpy(yh.data(), y[0], ybytes, cudaMemcpyDeviceToHost));
    long long checked = 0, bad = 0;
    auto one = [&](int n, int o, int ho, int wo) {
      i32 want = 0;
      for (int kh = 0; kh < 3; ++kh)
        for (int kw = 0; kw < 3; ++kw) {
          const int h = ho * s.S - 1 + kh, w = wo * s.S - 1 + kw;
          if (h < 0 || h >= s.H || w < 0 || w >= s.W) continue;
          const unsigned char* xv = &xval0[((static_cast<size_t>(n) * s.H + h) * s.W + w) * C];
          const signed char* wv = &wval[(static_cast<size_t>(o) * kPos + kh * 3 + kw) * C];
          for (int c = 0; c < C; ++c) want += wv[c] * xv[c];
        }
      const i32 got = yh[((static_cast<size_t>(n) * s.O + o) * s.Ho + ho) * s.Wo + wo];
      if (got != want && bad++ < 5) std::printf("  mismatch n%d o%d (%d,%d): got %d want %d\n", n, o, ho, wo, got, want);
      ++checked;
    };
    for (int n : {0, s.N - 1})
      for (int o = 0; o < s.O; ++o)
        for (int ho = 0; ho < s.Ho; ++ho)
          for (int wo = 0; wo < s.Wo; ++wo) one(n, o, ho, wo);
    std::mt19937 rng(7);
    for (int k = 0; k < 20000; ++k) one(rng() % s.N, rng() % s.O, rng() % s.Ho, rng() % s.Wo);
    return {checked, bad};
  }
};

// A launch configuration with programmatic dependent launch, as the library's kernels run.
struct Launch {
  cudaLaunchAttribute attr{};
  cudaLaunchConfig_t cfg{};
  Launch(int grid, int threads, int smem) {
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(threads);
    cfg.dynamicSmemBytes = smem;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
  }
};

// Median time of one launch (us) under runtime/steady_timing.h's rule (its defaults): a
// warm-up of doubling batches until 50 ms in all and one batch of 25 ms (the clocks drop
// during the CPU check), then 5 repeats of 50 back-to-back launches over the rotating sets;
// all of it twice, the lower median. launch(k) launches on set k.
inline float median_us(int sets, const std::function<void(int)>& launch) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  int next = 0;
  auto batch_ms = [&](int launches) {
    CHECK(cudaEventRecord(a));
    for (int k = 0; k < launches; ++k, next = (next + 1) % sets) launch(next);
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    return ms;
  };
  float best = 0;
  for (int round = 0; round < 2; ++round) {
    float total = 0;
    for (int n = 8; n < (1 << 22); n *= 2) {
      const float ms = batch_ms(n);
      total += ms;
      if (total >= 50 && ms >= 25) break;
    }
    std::vector<float> reps;
    for (int rep = 0; rep < 5; ++rep) reps.push_back(batch_ms(50) * 1000.f / 50);
    std::sort(reps.begin(), reps.end());
    best = round == 0 ? reps[2] : std::min(best, reps[2]);
  }
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  return best;
}

// The block's shared memory from its first 1024-byte boundary (the swizzled layouts' unit).
__device__ __forceinline__ u32 aligned_smem_base() {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const u32 raw = static_cast<u32>(__cvta_generic_to_shared(smem_raw));
  return raw + ((1024u - (raw & 1023u)) & 1023u);
}

// Thread 0 sets up the pipeline's barriers: per stage a full one (the producer's arrival and
// the copies' bytes) and an empty one (an arrival per consumer warp), and the resident W's.
// Then the block syncs and waits for the previous kernel (programmatic dependent launch).
__device__ __forceinline__ void init_pipeline(u32 full0, u32 empty0, u32 wfull, int stages, int consumer_warps) {
  if (threadIdx.x == 0) {
    for (int i = 0; i < stages; ++i) {
      apnn::ptx::mbar_init(full0 + 8 * i, 1);
      apnn::ptx::mbar_init(empty0 + 8 * i, consumer_warps);
    }
    apnn::ptx::mbar_init(wfull, 1);
    apnn::ptx::fence_mbar_init();
  }
  __syncthreads();
  apnn::ptx::grid_dependency_wait();
}

inline void check_encode(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "tensor map encode failed (%d): %s\n", static_cast<int>(r), what);
    std::exit(1);
  }
}

}  // namespace probe

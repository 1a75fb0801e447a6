// How fast can TMA move operands from L2 into shared memory, by copy shape? A research probe
// for bench/NOTES-wgmma.md (session 14), not part of the build: the GEMM's TMA core streams
// its operand boxes (rows of 128 bytes, 1024 bytes apart, 128-byte swizzle) at about 6 TB/s,
// while `apnn bench`'s overlap probe counted 16 KB contiguous bulk copies at about 14.7 TB/s.
// Every copy shape here moves 7.7-8.5 TB/s; ncu confirms the first case's bytes as L2 reads
// (41.78 of 43.25 GB at 91% of the L2's throughput), where it found the bench's probe served
// only 43% of the bytes it counted (bench/NOTES.md, "Session 15").
//
// One block per SM; one thread keeps `slots` stages of `stage` bytes in flight from a 24 MB
// L2-resident buffer into shared memory (mbarrier per stage, the GEMM's evict_last policy),
// each stage made of bulk copies or tensor-map boxes of 32 words x `rows` rows.
//
// Build and run (sm_90a; about 2 s): nvcc -std=c++17 -O2 -arch=sm_90a tma_read_probe.cu -lcuda -o tma_read_probe && ./tma_read_probe
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "probe_check.h"

// mode 0: bulk copies of `box_bytes` contiguous bytes; mode 1: tensor boxes of 32 words x
// `rows` rows (box_bytes = 128 * rows). A stage is stage / box_bytes copies.
// Thread `reader` of the block issues; the stages start `offset` bytes into shared memory.
__global__ void __launch_bounds__(512, 1) probe(const __grid_constant__ CUtensorMap map, const char* src, u64 src_bytes,
                                                long long map_rows, int mode, int slots, int stage, int box_bytes,
                                                int rows, int row_words, int spread, int iters, u64* counter,
                                                int reader, int offset) {
  extern __shared__ __align__(1024) unsigned char smem[];
  if ((int)threadIdx.x != reader) return;
  const u32 base = (u32)__cvta_generic_to_shared(smem) + offset;
  const u32 bar0 = base + slots * stage;
  for (int s = 0; s < slots; ++s) asm volatile("mbarrier.init.shared.b64 [%0], 1;\n" ::"r"(bar0 + 8 * s));
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  u64 last;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(last));
  const int per_stage = stage / box_bytes;
  const u64 chunks = src_bytes / box_bytes;
  u64 chunk = (blockIdx.x * (u64)spread) % chunks;
  long long row = (blockIdx.x * (long long)spread * rows) % (map_rows - rows);
  int word = 0;
  for (int it = 0; it < iters; ++it) {
    const int slot = it % slots;
    const u32 bar = bar0 + 8 * slot;
    if (it >= slots)
      asm volatile("{\n.reg .pred P;\nW_%=:\nmbarrier.try_wait.parity.shared.b64 P, [%0], %1;\n@!P bra W_%=;\n}\n" ::"r"(bar),
                   "r"((u32)((it / slots - 1) & 1))
                   : "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;\n" ::"r"(bar), "r"(stage) : "memory");
    for (int b = 0; b < per_stage; ++b) {
      const u32 dst = base + slot * stage + b * box_bytes;
      if (mode == 0) {
        asm volatile(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;\n" ::"r"(dst),
            "l"(src + chunk * box_bytes), "r"(box_bytes), "r"(bar), "l"(last)
            : "memory");
        chunk = chunk + 1 == chunks ? 0 : chunk + 1;
      } else {
        asm volatile(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%2, "
            "%3}], [%4], %5;\n" ::"r"(dst),
            "l"(&map), "r"(word), "r"((int)row), "r"(bar), "l"(last)
            : "memory");
        row += rows;
        if (row + rows > map_rows) {
          row = 0;
          word = (word + 32) % row_words;
        }
      }
    }
  }
  for (int j = iters > slots ? iters - slots : 0; j < iters; ++j)
    asm volatile("{\n.reg .pred P;\nW_%=:\nmbarrier.try_wait.parity.shared.b64 P, [%0], %1;\n@!P bra W_%=;\n}\n" ::"r"(bar0 + 8 * (j % slots)),
                 "r"((u32)((j / slots) & 1))
                 : "memory");
  atomicAdd(counter, (u64)iters * stage);
}

int main() {
  int dev = 0, sms = 0;
  CHECK(cudaSetDevice(dev));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const u64 src_bytes = 24ull << 20;
  char* src;
  u64* counter;
  CHECK(cudaMalloc(&src, src_bytes));
  CHECK(cudaMemset(src, 0x5a, src_bytes));
  CHECK(cudaMalloc(&counter, 8));
  CHECK(cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  struct Case {
    const char* what;
    int mode, slots, stage, box_bytes, pitch;  // pitch: bytes between a tensor box's rows
    int spread = 977;                           // block b starts at copy b * spread (of 24 MB / box)
    int threads = 32, reader = 0, offset = 0;   // the block, its issuing thread, where the stages start
    long long launch_bytes = 12ll << 30;
  } cases[] = {
      // apnn bench's overlap probe exactly: 512 threads, thread 384 reads, stages after 65 KB,
      // 20000 copies a block.
      {"bench's probe block: 512 threads, thread 384, stages at 65 KB, 20000 x 16 KB", 0, 4, 16384, 16384, 0, 7, 512,
       384, 65536 + 1024, 20000ll * 16384 * 132},
      {"bench's probe block, 12 GB a launch", 0, 4, 16384, 16384, 0, 7, 512, 384, 65536 + 1024},
      {"bulk 16 KB contiguous, 4 in flight, block b from chunk 7b (apnn bench's probe)", 0, 4, 16384, 16384, 0, 7},
      {"bulk 16 KB contiguous, 4 in flight, block b from chunk 977b (spread)", 0, 4, 16384, 16384, 0},
      {"bulk 48 KB stages of 3 x 16 KB, 4 in flight", 0, 4, 49152, 16384, 0},
      {"bulk 16 KB contiguous, 8 in flight", 0, 8, 16384, 16384, 0},
      {"tensor box 32 words x 128 rows, rows 1024 B apart, 4 x 16 KB, block b from box 7b", 1, 4, 16384, 16384, 1024, 7},
      {"tensor box 32 words x 128 rows, rows 1024 B apart, 4 x 16 KB", 1, 4, 16384, 16384, 1024},
      {"tensor box 32 words x 128 rows, rows 1024 B apart, 8 x 16 KB", 1, 8, 16384, 16384, 1024},
      {"tensor box 32 words x 64 rows, rows 1024 B apart, 4 x 48 KB (the w2a2 stage)", 1, 4, 49152, 8192, 1024},
      {"tensor box 32 words x 128 rows, rows 128 B apart (contiguous), 4 x 16 KB", 1, 4, 16384, 16384, 128},
      {"tensor box 32 words x 128 rows, rows 128 B apart (contiguous), 4 x 48 KB", 1, 4, 49152, 16384, 128},
  };
  for (const Case& c : cases) {
    const int rows = c.mode ? c.box_bytes / 128 : 1;
    const long long map_rows = c.mode ? (long long)(src_bytes / c.pitch) : 1;
    CUtensorMap map = {};
    if (c.mode) {
      const cuuint64_t dims[2] = {(cuuint64_t)(c.pitch / 4), (cuuint64_t)map_rows};
      const cuuint64_t strides[1] = {(cuuint64_t)c.pitch};
      const cuuint32_t box[2] = {32, (cuuint32_t)rows}, unit[2] = {1, 1};
      CUresult r = cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_UINT32, 2, src, dims, strides, box, unit,
                                          CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                          CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
      if (r != CUDA_SUCCESS) {
        std::fprintf(stderr, "cuTensorMapEncodeTiled failed (%d) for %s\n", (int)r, c.what);
        return 1;
      }
    }
    const int smem = c.offset + c.slots * c.stage + 8 * c.slots;
    // ~12 GB a launch (about 1.6 ms at 7.5 TB/s); the first launches of the first case also
    // bring the clocks up from idle (a run of a few milliseconds would be timed at them).
    const int iters = (int)std::max<long long>(64, c.launch_bytes / sms / c.stage);
    double best = 0;
    const int warm = &c == cases ? 100 : 1;
    for (int rep = 0; rep < warm + 3; ++rep) {
      CHECK(cudaMemset(counter, 0, 8));
      CHECK(cudaEventRecord(a));
      probe<<<sms, c.threads, smem>>>(map, src, src_bytes, map_rows, c.mode, c.slots, c.stage, c.box_bytes, rows,
                                      c.mode ? c.pitch / 4 : 1, c.spread, iters, counter, c.reader, c.offset);
      CHECK(cudaEventRecord(b));
      CHECK(cudaEventSynchronize(b));
      CHECK(cudaGetLastError());
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, a, b));
      u64 bytes = 0;
      CHECK(cudaMemcpy(&bytes, counter, 8, cudaMemcpyDeviceToHost));
      if (rep >= warm) best = std::max(best, bytes / (ms * 1e-3) / 1e9);
    }
    std::printf("%-80s %8.0f GB/s\n", c.what, best);
  }
  return 0;
}

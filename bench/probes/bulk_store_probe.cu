// How fast can one SM write shared memory out to global memory, alone and with every SM
// writing? A research probe for bench/NOTES.md (session 22), not part of the build. The TMA
// core's epilogue stages each warpgroup's int32 outputs in 8 KB boxes (64 rows of 128 bytes,
// 128-byte swizzle) that one thread a warpgroup hands to the copy engine; session 22 timed
// w1a2 128x192's epilogue at about 4000 SM cycles a patch, waiting for boxes to be read out.
//
// One block of 256 threads per SM, `blocks` SMs busy, each block writing 8 MB:
//   mode 0: tensor stores as the GEMM's epilogue (boxes of 32 int32 x `rows` rows into a
//           row-major int32 array of 8192 columns, evict_first), issued by lane 0 of the
//           first `issuers` warps, each with at most `depth` boxes not yet read out;
//   mode 1: 1D bulk copies of rows * 128 contiguous bytes, the same issue rule;
//   mode 2: st.global.v4 from registers by 128 threads (the LSU path).
// The destination is `dst_MB` MB walked in order: 32 MB stays in L2, 2048 MB goes to DRAM.
//
// What it found on the H100 (session 22, device calls 3-4): one issuing thread moves one box
// per about 750 cycles whatever its size (8 KB: 11 B/cycle; 2 KB: 2.7) and whatever its
// depth (2 or 4); issuers add up to about 32 B/cycle (60 GB/s) per SM at 4 issuers of 8 KB
// boxes; with all 132 SMs writing, 2.8-3.8 TB/s in all (21-29 GB/s per SM), the chip's
// limit, not the SM's.
//
// Build and run (sm_90a, a few seconds):
//   nvcc -std=c++17 -O2 -arch=sm_90a bulk_store_probe.cu -lcuda -o bulk_store_probe && ./bulk_store_probe
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "probe_check.h"

constexpr int kCols = 8192;          // int32 columns of the output array (the 8192^3 GEMM's)
constexpr int kBoxBytes = 64 * 128;  // 64 rows x 32 int32

__global__ void __launch_bounds__(256, 1) store_probe(const __grid_constant__ CUtensorMap map, char* dst, u64 dst_bytes,
                                                      int mode, int issuers, int depth, int box_rows, u64 bytes_per_block,
                                                      long long* cycles) {
  extern __shared__ __align__(1024) unsigned char smem[];
  const u32 base = (u32)__cvta_generic_to_shared(smem);
  for (int i = threadIdx.x; i < 4 * kBoxBytes / 4; i += blockDim.x) reinterpret_cast<u32*>(smem)[i] = i * 2654435761u;
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
  const long long t0 = clock64();
  const u64 boxes = bytes_per_block / kBoxBytes;
  const u64 rows_total = dst_bytes / (kCols * 4);
  u64 first;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(first));
  if (mode == 2) {
    // Every thread 16 bytes a store; a box is 64 rows of 128 bytes as in the tensor modes.
    for (u64 b = 0; b < boxes; ++b) {
      const u64 box = blockIdx.x * boxes + b;
      const u64 row0 = (box / (kCols / 32)) * 64 % rows_total, col0 = (box % (kCols / 32)) * 32;
      for (int i = threadIdx.x; i < 64 * 8 && threadIdx.x < 128; i += 128) {
        const int r = i / 8, c = i % 8;
        uint4 v = make_uint4((u32)b, (u32)i, (u32)r, (u32)c);
        *reinterpret_cast<uint4*>(dst + ((row0 + r) * kCols + col0) * 4 + c * 16) = v;
      }
    }
  } else if (threadIdx.x % 32 == 0 && (int)threadIdx.x / 32 < issuers) {  // lane 0 of the first `issuers` warps
    const int box_bytes = box_rows * 128;
    const u64 nbox = bytes_per_block / box_bytes;
    for (u64 b = threadIdx.x / 32; b < nbox; b += issuers) {
      if (b >= (u64)depth * issuers) {  // at most `depth` boxes of this thread not yet read out
        if (depth == 2)
          asm volatile("cp.async.bulk.wait_group.read 1;\n" ::: "memory");
        else
          asm volatile("cp.async.bulk.wait_group.read 3;\n" ::: "memory");
      }
      const u32 buf = base + ((b / issuers) % depth) * kBoxBytes;  // read only: the issuers may share them
      const u64 box = blockIdx.x * nbox + b;
      if (mode == 0) {
        const int row0 = (int)((box / (kCols / 32)) * box_rows % rows_total), col0 = (int)((box % (kCols / 32)) * 32);
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group.L2::cache_hint [%0, {%1, %2}], [%3], %4;\n" ::"l"(&map),
                     "r"(col0), "r"(row0), "r"(buf), "l"(first)
                     : "memory");
      } else {
        const u64 off = (box * box_bytes) % dst_bytes;
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group.L2::cache_hint [%0], [%1], %2, %3;\n" ::"l"(dst + off), "r"(buf),
                     "r"(box_bytes), "l"(first)
                     : "memory");
      }
      asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
    }
    asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) cycles[blockIdx.x] = clock64() - t0;
}

int main() {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const u64 max_bytes = 2048ull << 20;
  char* dst = nullptr;
  long long* cycles = nullptr;
  CHECK(cudaMalloc(&dst, max_bytes));
  CHECK(cudaMalloc(&cycles, sms * sizeof(long long)));
  CHECK(cudaFuncSetAttribute(store_probe, cudaFuncAttributeMaxDynamicSharedMemorySize, 4 * kBoxBytes + 1024));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  const char* names[] = {"tensor 64x128B", "bulk 8KB", "st.global.v4"};
  std::printf("mode              rows issuers depth dst_MB blocks   us     GB/s total  GB/s per SM  B/cycle per SM (SM clock)\n");
  for (int dst_mb : {32, 2048}) {
    const u64 dst_bytes = (u64)dst_mb << 20;
    for (int box_rows : {64, 16}) {
      CUtensorMap map;
      const cuuint64_t dims[2] = {kCols, dst_bytes / (kCols * 4)};
      const cuuint64_t strides[1] = {kCols * 4};
      const cuuint32_t box[2] = {32, (cuuint32_t)box_rows}, elem[2] = {1, 1};
      const CUresult r = cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_INT32, 2, dst, dims, strides, box, elem,
                                                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                                CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
      if (r != CUDA_SUCCESS) {
        std::fprintf(stderr, "cuTensorMapEncodeTiled failed (%d)\n", (int)r);
        return 1;
      }
      for (int mode : {0, 1, 2})
        for (int issuers : {1, 2, 4, 8})
          for (int depth : {2, 4})
          for (int blocks : {1, 66, 132}) {
            if (mode == 2 && (issuers != 1 || box_rows != 64 || depth != 2)) continue;
            if (depth == 4 && (mode != 0 || box_rows != 64)) continue;
            const u64 per_block = 8ull << 20;  // 8 MB a block: long enough to time
            auto launch = [&] {
              store_probe<<<blocks, 256, 4 * kBoxBytes + 1024>>>(map, dst, dst_bytes, mode, issuers, depth, box_rows, per_block,
                                                                 cycles);
            };
            launch();
            CHECK(cudaDeviceSynchronize());
            float best = 1e30f;
            for (int rep = 0; rep < 3; ++rep) {
              CHECK(cudaEventRecord(e0));
              launch();
              CHECK(cudaEventRecord(e1));
              CHECK(cudaEventSynchronize(e1));
              float ms = 0;
              CHECK(cudaEventElapsedTime(&ms, e0, e1));
              if (ms < best) best = ms;
            }
            long long cyc[256] = {};
            CHECK(cudaMemcpy(cyc, cycles, blocks * sizeof(long long), cudaMemcpyDeviceToHost));
            double mean_cycles = 0;
            for (int b = 0; b < blocks; ++b) mean_cycles += (double)cyc[b] / blocks;
            const double total = (double)per_block * blocks;
            std::printf("%-17s %4d %7d %5d %6d %6d %8.1f %11.0f %12.1f %8.1f\n", names[mode], box_rows,
                        mode == 2 ? 128 : issuers, depth, dst_mb, blocks, best * 1e3, total / (best * 1e-3) / 1e9, total / blocks / (best * 1e-3) / 1e9,
                        per_block / mean_cycles);
          }
    }
  }
  return 0;
}

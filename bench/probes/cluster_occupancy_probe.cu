// How many SMs can clusters of 2, 4, 8 and 16 blocks cover at once? A research probe for
// bench/NOTES.md (session 18), not part of the build. A cluster's blocks must sit in one GPC,
// so where a GPC's SM count is not a multiple of the cluster size, its remainder idles
// under a persistent grid of such clusters. The TMA core sizes its grid by
// cuOccupancyMaxActiveClusters (engine/apmm_runner.cpp); this prints that number for blocks
// shaped like the TMA core's (288 threads, ~200 KB of shared memory: one block per SM), then
// launches exactly that many clusters and counts the distinct SMs they ran on, and which SMs
// share a GPC (the SMs of each 16-block cluster).
//
// Build and run (sm_90a): nvcc -std=c++17 -O2 -gencode=arch=compute_90a,code=sm_90a cluster_occupancy_probe.cu -o cluster_occupancy_probe
//   && ./cluster_occupancy_probe
#include <cuda_runtime.h>

#include <cstdio>
#include <set>
#include <vector>

#include "probe_check.h"

__global__ void where(int* smid_of_block) {
  u32 smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  if (threadIdx.x == 0) smid_of_block[blockIdx.x] = static_cast<int>(smid);
  // Hold the SM a little so that every cluster of the launch is resident at once.
  u64 t0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  for (;;) {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (t - t0 > 2000000) break;  // 2 ms
  }
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
  const int threads = 288, smem = 200 * 1024;
  CHECK(cudaFuncSetAttribute(where, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CHECK(cudaFuncSetAttribute(where, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  for (int size : {1, 2, 4, 8, 16}) {
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = size;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.gridDim = dim3(size);
    cfg.blockDim = dim3(threads);
    cfg.dynamicSmemBytes = smem;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    int clusters = 0;
    CHECK(cudaOccupancyMaxActiveClusters(&clusters, where, &cfg));
    cfg.gridDim = dim3(size * clusters);
    int* d = nullptr;
    CHECK(cudaMalloc(&d, sizeof(int) * size * clusters));
    CHECK(cudaLaunchKernelEx(&cfg, where, d));
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    std::vector<int> h(size * clusters);
    CHECK(cudaMemcpy(h.data(), d, sizeof(int) * h.size(), cudaMemcpyDeviceToHost));
    CHECK(cudaFree(d));
    std::set<int> sms(h.begin(), h.end());
    std::printf("cluster %2d: max active clusters %3d -> %3d blocks on %3zu distinct SMs (%d idle)\n", size, clusters,
                size * clusters, sms.size(), prop.multiProcessorCount - static_cast<int>(sms.size()));
    if (size == 16) {
      for (int c = 0; c < clusters; ++c) {
        std::printf("  16-cluster %d SMs:", c);
        for (int b = 0; b < 16; ++b) std::printf(" %d", h[c * 16 + b]);
        std::printf("\n");
      }
    }
  }
  return 0;
}

// Is the binary wgmma peak sustainable? A research probe for bench/NOTES.md (session 15), not
// part of the build. `apnn bench`'s peak probe times 3 launches of a few milliseconds at the
// boost clock; an 8192^3 GEMM timed back to back runs for tenths of a second, long enough for
// the board's power cap to lower the SM clock. This probe issues the same kind of wgmma
// (m64n128k256 .b1 AND, operands in shared memory, 2 warpgroups per SM) back to back for
// `seconds` and prints the rate of each window of 300 launches (about 170 ms); run
// nvidia-smi beside it for clocks.
//
// Build and run (sm_90a): nvcc -std=c++17 -O2 -gencode=arch=compute_90a,code=sm_90a wgmma_sustained_probe.cu -o wgmma_sustained_probe
//   && ./wgmma_sustained_probe 3
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "probe_check.h"

// A no-swizzle shared-memory matrix descriptor: start, leading and stride byte offsets (>> 4).
__device__ u64 smem_desc(u32 addr, u32 lead, u32 stride) {
  return (u64)((addr >> 4) & 0x3FFF) | ((u64)((lead >> 4) & 0x3FFF) << 16) | ((u64)((stride >> 4) & 0x3FFF) << 32);
}

__global__ void __launch_bounds__(256, 1) mma_loop(int iters, int* sink) {
  extern __shared__ __align__(1024) unsigned char smem[];
  for (int i = threadIdx.x; i < 16384; i += blockDim.x) reinterpret_cast<u32*>(smem)[i] = i * 0x9E3779B1u;
  __syncthreads();
  const u32 base = (u32)__cvta_generic_to_shared(smem) + (threadIdx.x / 128) * 8192;
  const u64 a = smem_desc(base, 128, 256), b = smem_desc(base + 16384, 128, 256);
  int d[64] = {};
  for (int it = 0; it < iters; ++it) {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int r = 0; r < 4; ++r)
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                   "wgmma.mma_async.sync.aligned.m64n128k256.s32.b1.b1.and.popc {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p;\n}\n"
                   : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]), "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63])
                   : "l"(a), "l"(b));
    asm volatile("wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  }
  int s = 0;
  for (int i = 0; i < 64; ++i) s ^= d[i];
  if (s == 0x7fffffff) *sink = s;
}

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 2.0;
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  int* sink;
  CHECK(cudaMalloc(&sink, 4));
  CHECK(cudaFuncSetAttribute(mma_loop, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536));
  const int iters = 2000;  // 8.9e12 binary operations: about 0.57 ms a launch at 15.6 POPS
  const double ops = 2.0 * 64 * 128 * 256 * 4 * iters * 2 * sms;
  mma_loop<<<sms, 256, 65536>>>(10, sink);
  CHECK(cudaDeviceSynchronize());
  cudaEvent_t t0, t1;
  CHECK(cudaEventCreate(&t0));
  CHECK(cudaEventCreate(&t1));
  std::vector<double> rates;
  double total = 0;
  while (total < seconds) {
    // One window: 300 launches back to back, about 170 ms.
    CHECK(cudaEventRecord(t0));
    const int launches = 300;
    for (int l = 0; l < launches; ++l) mma_loop<<<sms, 256, 65536>>>(iters, sink);
    CHECK(cudaEventRecord(t1));
    CHECK(cudaEventSynchronize(t1));
    CHECK(cudaGetLastError());
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, t0, t1));
    total += ms * 1e-3;
    rates.push_back(ops * launches / (ms * 1e-3) / 1e12);
  }
  for (size_t w = 0; w < rates.size(); ++w) std::printf("window %2zu: %7.0f TOPS\n", w, rates[w]);
  return 0;
}

#include "bench/peak_probe.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include <fmt/format.h>

#include "apnn/error.h"
#include "compiler/nvrtc_compiler.h"
#include "runtime/device.h"
#include "runtime/device_buffer.h"
#include "runtime/module.h"
#include "runtime/steady_timing.h"

namespace apnn::bench {

namespace {

// Operands come from fixed registers / one shared-memory tile: only the issue rate matters.
constexpr const char* kCommon = R"(
typedef unsigned int u32;
typedef unsigned long long u64;
extern "C" __global__ void empty_launch(int* out) {}
extern "C" __global__ void mma_b1_peak(int iters, int* out) {
  u32 a0 = threadIdx.x * 2654435761u, a1 = a0 * 3, a2 = a0 * 5, a3 = a0 * 7, b0 = a0 * 11, b1 = a0 * 13;
  int c[16] = {};
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int j = 0; j < 16; j += 4)
      asm volatile("mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                   : "+r"(c[j]), "+r"(c[j + 1]), "+r"(c[j + 2]), "+r"(c[j + 3])
                   : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
  int s = 0;
#pragma unroll
  for (int j = 0; j < 16; ++j) s += c[j];
  if (s == 0x7fffffff) out[0] = s;
}
)";

constexpr int kWgmmaThreads = 256, kWgmmaSmem = 65536, kMmaThreads = 256;

std::string wgmma_kernel() {
  std::string regs, outs;
  for (int i = 0; i < 64; ++i) {
    regs += fmt::format("{}%{}", i ? "," : "", i);
    outs += fmt::format("{}\"+r\"(d[{}])", i ? ", " : "", i);
  }
  return fmt::format(R"(
__device__ __forceinline__ u64 smem_desc(const void* p) {{
  u64 g;
  asm("cvta.to.shared.u64 %0, %1;\n" : "=l"(g) : "l"(p));
  const u32 a = (u32)g;
  return (u64)((a >> 4) & 0x3FFF) | ((u64)(128 >> 4) << 16) | ((u64)(256 >> 4) << 32);  // no swizzle
}}
// The launch floor of a kernel launched as ours are (early start, runtime/module.h): it lets
// the next launch start at once, then waits for the previous one, and does nothing else.
extern "C" __global__ void empty_early_launch(int* out) {{
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
}}
// Warpgroup wg's wgmma loop over fixed shared-memory tiles, 4 x m64n128k256 per iteration;
// returns the sum of its accumulators (so that the loop is not dead code).
__device__ __forceinline__ int wgmma_b1_loop(unsigned char* smem, int wg, int iters) {{
  const u64 da = smem_desc(smem + wg * 8192), db = smem_desc(smem + 16384 + wg * 8192);
  int d[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) d[i] = 0;
  for (int it = 0; it < iters; ++it) {{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int r = 0; r < 4; ++r)
      asm volatile("{{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                   "wgmma.mma_async.sync.aligned.m64n128k256.s32.b1.b1.and.popc {{{}}}, %64, %65, p;\n}}\n"
                   : {} : "l"(da), "l"(db));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  }}
  int s = 0;
#pragma unroll
  for (int i = 0; i < 64; ++i) s += d[i];
  return s;
}}
extern "C" __global__ void __launch_bounds__(256, 1) wgmma_b1_peak(int iters, int* out) {{
  extern __shared__ __align__(1024) unsigned char smem[];
  for (int i = threadIdx.x; i < 16384; i += blockDim.x) ((u32*)smem)[i] = i * 2654435761u;
  __syncthreads();
  const int s = wgmma_b1_loop(smem, threadIdx.x / 128, iters);
  if (s == 0x7fffffff) out[0] = s;
}}

// The memory-overlap probe: one block of 4 warpgroups per SM. Warpgroups 0-1 issue wgmma as
// wgmma_b1_peak (flag 1); warpgroup 2 stores 16-byte vectors into the block's slice of a
// buffer far larger than the L2 (flag 2); one thread of warpgroup 3 keeps 4 bulk copies of
// 16 KB from an L2-resident buffer into shared memory in flight, as the TMA core's producer
// does (flag 4). The L2 policies are the GEMM's: reads evict_last, stores evict_first, so
// the stores do not push the read buffer out of L2. With wgmma on, the others run until it
// finishes; else for `fixed` rounds. counters[0] and [1] count the bytes stored and read.
// Block b starts 977 chunks after block b-1: when neighbouring blocks started 7 chunks apart
// (sessions 6-14) the probe counted 14.3-14.8 TB/s while ncu saw the L2 serve 18.55 of the
// 43.25 GB requested (6.3 TB/s, 72% of its throughput; session 15, device call 1). Spread,
// it counts 9.7-9.9 TB/s (call 4). The standalone probe (bench/probes/tma_read_probe.cu)
// counts 7.9 TB/s, which ncu confirms: 41.78 GB served in 5.22 ms at 91% L2 throughput
// (call 3). So these counts are bytes requested, an upper bound on what the L2 delivers.
extern "C" __global__ void __launch_bounds__(512, 1) overlap_probe(int iters, int flags, int fixed, u32* dst,
    unsigned long long dst_words, const u32* src, unsigned long long src_chunks, unsigned long long* counters,
    int* sink) {{
  extern __shared__ __align__(1024) unsigned char smem[];
  volatile int* done = (volatile int*)(smem + 65536);
  for (int i = threadIdx.x; i < 16384; i += blockDim.x) ((u32*)smem)[i] = i * 2654435761u;
  if (threadIdx.x == 0) *done = 0;
  __syncthreads();
  const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
  const bool mma_on = flags & 1;
  if (wg < 2) {{
    if (!mma_on) return;
    const int s = wgmma_b1_loop(smem, wg, iters);
    if (s == 0x7fffffff) sink[0] = s;
    __syncwarp();
    if (threadIdx.x == 0) *done = 1;
  }} else if (wg == 2) {{
    if (!(flags & 2)) return;
    const unsigned long long slice = dst_words / gridDim.x / 4 * 4;
    u32* base = dst + blockIdx.x * slice;
    unsigned long long pos = 4 * t, n = 0;
    u64 first;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(first));
    for (int it = 0;; ++it) {{
      if (mma_on ? (it % 16 == 0 && *done) : it >= fixed) break;
#pragma unroll
      for (int u = 0; u < 8; ++u) {{
        asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {{%1, %2, %3, %4}}, %5;\n" ::"l"(base + pos), "r"(it), "r"(u),
                     "r"((u32)pos), "r"(7u), "l"(first) : "memory");
        pos += 4 * 128;
        if (pos + 4 > slice) pos = 4 * t;
      }}
      n += 8 * 32 * 16;  // this warp's bytes
    }}
    if ((t & 31) == 0) atomicAdd(counters, n);
  }} else {{
    if (!(flags & 4) || t != 0) return;
    const u32 bar0 = (u32)__cvta_generic_to_shared(smem + 65536 + 64);
    const u32 buf0 = (u32)__cvta_generic_to_shared(smem + 65536 + 1024);
    for (int s = 0; s < 4; ++s) asm volatile("mbarrier.init.shared.b64 [%0], 1;\n" ::"r"(bar0 + 8 * s));
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    unsigned long long chunk = (blockIdx.x * 977ull) % src_chunks, n = 0;
    u64 last;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(last));
    int it = 0;
    for (;; ++it) {{
      if (mma_on ? (*done != 0) : it >= fixed) break;
      const u32 bar = bar0 + 8 * (it % 4);
      if (it >= 4)
        asm volatile("{{\n.reg .pred P;\nW_%=:\nmbarrier.try_wait.parity.shared.b64 P, [%0], %1;\n@!P bra W_%=;\n}}\n"
                     ::"r"(bar), "r"((u32)((it / 4 - 1) & 1)) : "memory");
      asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;\n" ::"r"(bar), "r"(16384) : "memory");
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;\n"
                   ::"r"(buf0 + (it % 4) * 16384), "l"(src + chunk * 4096), "r"(16384), "r"(bar), "l"(last) : "memory");
      chunk = chunk + 1 == src_chunks ? 0 : chunk + 1;
      n += 16384;
    }}
    for (int j = it < 4 ? 0 : it - 4; j < it; ++j)  // the copies in flight land before the block ends
      asm volatile("{{\n.reg .pred P;\nW_%=:\nmbarrier.try_wait.parity.shared.b64 P, [%0], %1;\n@!P bra W_%=;\n}}\n"
                   ::"r"(bar0 + 8 * (j % 4)), "r"((u32)((j / 4) & 1)) : "memory");
    atomicAdd(counters + 1, n);
  }}
}}
)",
                     regs, outs);
}

// The best of three timed launches (the first, untimed, loads and warms).
double probe_tops(LoadedModule& m, const char* kernel, const LaunchDims& d, int iters, double ops_per_iter) {
  DeviceBuffer out(4);
  CUdeviceptr out_ptr = out.ptr();
  int warm = 100;
  void* warm_args[] = {&warm, &out_ptr};
  m.launch(kernel, d, warm_args);
  void* args[] = {&iters, &out_ptr};
  EventTimer timer;
  double best = 0;
  for (int r = 0; r < 3; ++r) {
    timer.start();
    m.launch(kernel, d, args);
    best = std::max(best, ops_per_iter * iters / (timer.stop_ms() * 1e-3) / 1e12);
  }
  return best;
}

// The overlap probe (wgmma_kernel's overlap_probe) over every SM: bulk reads from a 24 MB
// L2-resident buffer alone, then wgmma, stores into `big` and reads at once. Best of three.
void measure_overlap(LoadedModule& m, DeviceBuffer& big, Peaks* p) {
  const unsigned sms = static_cast<unsigned>(current_device().sm_count);
  DeviceBuffer src(size_t{24} << 20), counters(16), sink(16);
  src.fill_u32(0x5a5a5a5a);
  sink.fill_u32(0);
  CUdeviceptr dst_ptr = big.ptr(), src_ptr = src.ptr(), counters_ptr = counters.ptr(), sink_ptr = sink.ptr();
  unsigned long long dst_words = big.bytes() / 4, src_chunks = src.bytes() / 16384;
  const LaunchDims d{sms, 1, 1, 512, 65536 + 1024 + 4 * 16384};
  EventTimer timer;
  auto run = [&](int iters, int flags, int fixed, double* seconds, uint64_t* bytes) {
    counters.fill_u32(0);
    void* args[] = {&iters, &flags, &fixed, &dst_ptr, &dst_words, &src_ptr, &src_chunks, &counters_ptr, &sink_ptr};
    timer.start();
    m.launch("overlap_probe", d, args);
    *seconds = timer.stop_ms() * 1e-3;
    counters.download(bytes, 16);
  };
  double s;
  uint64_t bytes[2];
  run(100, 7, 0, &s, bytes);  // loads the module's kernel and warms
  for (int r = 0; r < 3; ++r) {
    run(0, 4, 20000, &s, bytes);
    p->l2_read_gbs = std::max(p->l2_read_gbs, static_cast<double>(bytes[1]) / s / 1e9);
  }
  const int iters = 20000;
  const double wgmma_ops = 2.0 * 64 * 128 * 256 * 4 * 2 * sms * iters;
  for (int r = 0; r < 3; ++r) {
    run(iters, 7, 0, &s, bytes);
    const double tops = wgmma_ops / s / 1e12;
    if (tops > p->overlap_wgmma_tops) {
      p->overlap_wgmma_tops = tops;
      p->overlap_write_gbs = static_cast<double>(bytes[0]) / s / 1e9;
      p->overlap_read_gbs = static_cast<double>(bytes[1]) / s / 1e9;
    }
  }
}

}  // namespace

std::string peak_probe_source(bool with_wgmma) { return kCommon + (with_wgmma ? wgmma_kernel() : std::string()); }

Peaks measure_peaks(const TimingRule& rule) {
  const DeviceInfo& dev = current_device();
  const bool wgmma = dev.arch() == "sm_90a";
  GeneratedSource src;
  src.name = "apnn_peak_probe.cu";
  src.source = peak_probe_source(wgmma);
  src.kernels = {"mma_b1_peak", "empty_launch"};
  if (wgmma) {
    src.kernels.push_back("wgmma_b1_peak");
    src.kernels.push_back("overlap_probe");
    src.kernels.push_back("empty_early_launch");
  }
  LoadedModule m(compile_cubin(src, dev.arch()).cubin, "peak probe");
  Peaks p;
  const unsigned sms = static_cast<unsigned>(dev.sm_count);
  // mma.sync: 4 blocks of 8 warps per SM, 4 MMAs of 16x8x256 per warp and iteration.
  const double mma_ops = 2.0 * 16 * 8 * 256 * 4 * (4.0 * sms * kMmaThreads / 32);
  p.mma_sync_b1_tops = probe_tops(m, "mma_b1_peak", {4 * sms, 1, 1, kMmaThreads, 0}, 8000, mma_ops);
  if (wgmma) {
    // One block of 2 warpgroups per SM, 4 wgmma of 64x128x256 per warpgroup and iteration.
    const double wg_ops = 2.0 * 64 * 128 * 256 * 4 * sms * (kWgmmaThreads / 128);
    p.wgmma_b1_tops = probe_tops(m, "wgmma_b1_peak", {sms, 1, 1, kWgmmaThreads, kWgmmaSmem}, 4000, wg_ops);
  }
  // The launch floor: an empty kernel over one wave of blocks, launched back to back through
  // the same module path and timed by the same rule as every row.
  {
    DeviceBuffer out(4);
    CUdeviceptr out_ptr = out.ptr();
    void* args[] = {&out_ptr};
    p.launch_floor_us = time_rotated(rule, 1, [&](int) { m.launch("empty_launch", {sms, 1, 1, 128, 0}, args); }).us;
    // The same with early start, as our sm_90a kernels launch: the next kernel's blocks start
    // while this one's finish, so ours can go below the plain floor; this is what a launch of
    // ours costs doing nothing.
    if (wgmma) {
      LaunchDims early{sms, 1, 1, 128, 0};
      early.early_start = true;
      p.launch_floor_early_us = time_rotated(rule, 1, [&](int) { m.launch("empty_early_launch", early, args); }).us;
    }
  }
  // Write bandwidth: the driver's memset over 2 GiB (far past the L2), best of three; then on
  // sm_90a the overlap probe over the same buffer. 0 (not measured, said on stderr) where
  // 2 GiB cannot be allocated.
  DeviceBuffer big;
  try {
    big = DeviceBuffer(size_t{2} << 30);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Driver) throw;
    std::fprintf(stderr, "bench: memory bandwidth and overlap not measured: %s\n", e.what());
    return p;
  }
  {
    big.fill_u32_async(0);
    EventTimer timer;
    for (int r = 0; r < 3; ++r) {
      timer.start();
      big.fill_u32_async(static_cast<uint32_t>(r));
      p.dram_write_gbs = std::max(p.dram_write_gbs, static_cast<double>(big.bytes()) / (timer.stop_ms() * 1e-3) / 1e9);
    }
  }
  if (wgmma) measure_overlap(m, big, &p);
  return p;
}

}  // namespace apnn::bench

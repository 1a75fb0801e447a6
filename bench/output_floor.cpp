#include "bench/output_floor.h"

#include <algorithm>

#include <fmt/format.h>

#include "compiler/nvrtc_compiler.h"
#include "runtime/device.h"

namespace apnn::bench {

namespace {

constexpr unsigned kThreads = 512;
constexpr unsigned kBlocksPerSm = 2;  // 1024 threads an SM: 16-byte stores saturate the writes well before

}  // namespace

std::string output_floor_source() {
  return fmt::format(R"(
extern "C" __global__ void __launch_bounds__({}) write_only(unsigned* out, unsigned long long words, unsigned value) {{
#if __CUDA_ARCH__ >= 900
  // Launched with early start, as our kernels are: nothing is written before the previous
  // kernel has completed, and the next one may start launching at once.
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  const unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned long long vecs = words / 4;  // DeviceBuffer allocations are 256-byte aligned
  const uint4 v = make_uint4(value, value, value, value);
  for (unsigned long long i = first; i < vecs; i += stride) reinterpret_cast<uint4*>(out)[i] = v;
  for (unsigned long long i = vecs * 4 + first; i < words; i += stride) out[i] = value;
}}
)",
                     kThreads);
}

OutputFloor::OutputFloor() {
  const DeviceInfo& dev = current_device();
  GeneratedSource src;
  src.name = "apnn_output_floor.cu";
  src.source = output_floor_source();
  src.kernels = {"write_only"};
  module_ = std::make_unique<LoadedModule>(compile_cubin(src, dev.arch()).cubin, "output floor");
  max_blocks_ = kBlocksPerSm * static_cast<unsigned>(dev.sm_count);
  early_start_ = dev.cc_major >= 9;
}

void OutputFloor::write(DeviceBuffer& y, uint32_t value) {
  // One 16-byte store a thread where the output is smaller than that: fewer blocks to start.
  const uint64_t vecs = y.bytes() / 16;
  LaunchDims d{static_cast<unsigned>(std::clamp<uint64_t>((vecs + kThreads - 1) / kThreads, 1, max_blocks_)), 1, 1,
               kThreads, 0};
  d.early_start = early_start_;
  CUdeviceptr ptr = y.ptr();
  unsigned long long words = y.bytes() / 4;
  void* args[] = {&ptr, &words, &value};
  module_->launch("write_only", d, args);
}

OutputFloor::Result OutputFloor::time(const TimingRule& rule, int sets, const std::function<DeviceBuffer&(int)>& output) {
  Result r;
  r.memset_us = time_rotated(rule, sets, [&](int set) { output(set).fill_u32_async(static_cast<uint32_t>(set) + 1); }).us;
  r.kernel_us = time_rotated(rule, sets, [&](int set) { write(output(set), static_cast<uint32_t>(set) + 1); }).us;
  return r;
}

}  // namespace apnn::bench

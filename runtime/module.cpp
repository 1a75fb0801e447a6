#include "runtime/module.h"

#include <algorithm>

#include <fmt/format.h>

#include "runtime/device.h"
#include "runtime/driver_api.h"

namespace apnn {

LoadedModule::LoadedModule(const std::vector<char>& cubin, std::string context) : context_(std::move(context)) {
  current_device();
  driver::check(driver::api().ModuleLoadData(&module_, cubin.data()), "cuModuleLoadData", context_);
}

LoadedModule::~LoadedModule() {
  if (module_) driver::api().ModuleUnload(module_);
}

CUfunction LoadedModule::function(const std::string& name) {
  auto it = functions_.find(name);
  if (it != functions_.end()) return it->second;
  CUfunction f = nullptr;
  driver::check(driver::api().ModuleGetFunction(&f, module_, name.c_str()), "cuModuleGetFunction",
                fmt::format("kernel {}; {}", name, context_));
  functions_.emplace(name, f);
  return f;
}

LoadedModule::Global LoadedModule::global(const std::string& name) {
  Global g;
  const CUresult r = driver::api().ModuleGetGlobal(&g.ptr, &g.bytes, module_, name.c_str());
  if (r == CUDA_ERROR_NOT_FOUND) return {};
  driver::check(r, "cuModuleGetGlobal", [&] { return fmt::format("variable {}; {}", name, context_); });
  return g;
}

void LoadedModule::raise_smem_limit(const std::string& kernel, CUfunction f, unsigned bytes) {
  if (bytes <= 48 * 1024 || smem_limit_[kernel] >= bytes) return;
  driver::check(driver::api().FuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(bytes)),
                "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)",
                [&] { return fmt::format("kernel {}, {} bytes; {}", kernel, bytes, context_); });
  smem_limit_[kernel] = bytes;
}

namespace {

// The driver's launch configuration for d (default stream, no attributes).
CUlaunchConfig launch_config(const LaunchDims& d) {
  CUlaunchConfig config{};
  config.gridDimX = d.grid_x;
  config.gridDimY = d.grid_y;
  config.gridDimZ = d.grid_z;
  config.blockDimX = d.block_x;
  config.blockDimY = config.blockDimZ = 1;
  config.sharedMemBytes = d.smem_bytes;
  return config;
}

}  // namespace

void LoadedModule::launch(const std::string& kernel, const LaunchDims& d, void** args) {
  CUfunction f = function(kernel);
  const driver::Api& cu = driver::api();
  raise_smem_limit(kernel, f, d.smem_bytes);
  auto where = [&] {
    return fmt::format("kernel {}, grid ({},{},{}), block {}, smem {}{}; {}", kernel, d.grid_x, d.grid_y, d.grid_z,
                       d.block_x, d.smem_bytes, d.early_start ? ", early start" : "", context_);
  };
  if (d.early_start) {
    CUlaunchAttribute attr{};
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig config = launch_config(d);
    config.attrs = &attr;
    config.numAttrs = 1;
    driver::check(cu.LaunchKernelEx(&config, f, args, nullptr), "cuLaunchKernelEx", where);
    return;
  }
  driver::check(cu.LaunchKernel(f, d.grid_x, d.grid_y, d.grid_z, d.block_x, 1, 1, d.smem_bytes, nullptr, args, nullptr),
                "cuLaunchKernel", where);
}

int LoadedModule::max_active_clusters(const std::string& kernel, const LaunchDims& d) {
  auto it = clusters_.find(kernel);
  if (it != clusters_.end()) return it->second;
  CUfunction f = function(kernel);
  raise_smem_limit(kernel, f, d.smem_bytes);
  CUlaunchConfig config = launch_config(d);
  int clusters = 0;
  driver::check(driver::api().OccupancyMaxActiveClusters(&clusters, f, &config), "cuOccupancyMaxActiveClusters",
                [&] { return fmt::format("kernel {}, block {}, smem {}; {}", kernel, d.block_x, d.smem_bytes, context_); });
  clusters_.emplace(kernel, clusters);
  return clusters;
}

int LoadedModule::registers(const std::string& kernel) {
  auto it = registers_.find(kernel);
  if (it != registers_.end()) return it->second;
  int regs = 0;
  driver::check(driver::api().FuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, function(kernel)),
                "cuFuncGetAttribute(NUM_REGS)", [&] { return fmt::format("kernel {}; {}", kernel, context_); });
  registers_.emplace(kernel, regs);
  return regs;
}

unsigned LoadedModule::persistent_grid(const std::string& kernel, int threads, unsigned smem, int64_t tiles) {
  const DeviceInfo& dev = current_device();
  if (tiles <= dev.sm_count) return static_cast<unsigned>(tiles);
  const int regs = registers(kernel);
  const int by_regs = 65536 / (((std::max(regs, 1) + 7) / 8 * 8) * threads);  // registers go in units of 8 per thread
  const int by_smem = (228 * 1024) / static_cast<int>(smem + 1024);          // the driver reserves 1 KB per block
  const int by_threads = 2048 / threads;
  const int per_sm = std::max(1, std::min({by_regs, by_smem, by_threads, 32}));
  return static_cast<unsigned>(std::min<int64_t>(tiles, int64_t{dev.sm_count} * per_sm));
}

EventTimer::EventTimer() {
  current_device();
  driver::check(driver::api().EventCreate(&begin_, CU_EVENT_DEFAULT), "cuEventCreate");
  driver::check(driver::api().EventCreate(&end_, CU_EVENT_DEFAULT), "cuEventCreate");
}

EventTimer::~EventTimer() {
  if (begin_) driver::api().EventDestroy(begin_);
  if (end_) driver::api().EventDestroy(end_);
}

void EventTimer::start() { driver::check(driver::api().EventRecord(begin_, nullptr), "cuEventRecord"); }

float EventTimer::stop_ms() {
  const driver::Api& cu = driver::api();
  driver::check(cu.EventRecord(end_, nullptr), "cuEventRecord");
  driver::check(cu.EventSynchronize(end_), "cuEventSynchronize");
  float ms = 0;
  driver::check(cu.EventElapsedTime(&ms, begin_, end_), "cuEventElapsedTime");
  return ms;
}

void synchronize(const std::string& context) { driver::check(driver::api().CtxSynchronize(), "cuCtxSynchronize", context); }

}  // namespace apnn

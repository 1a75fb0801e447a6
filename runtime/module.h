// A cubin loaded into the current context, and launches of its kernels. Knows
// nothing about what the kernels compute: `context` strings (kernel + spec) are
// carried into every error message.
#pragma once
#include <cuda.h>

#include <string>
#include <unordered_map>
#include <vector>

namespace apnn {

struct LaunchDims {
  unsigned grid_x = 1, grid_y = 1, grid_z = 1;
  unsigned block_x = 1;
  unsigned smem_bytes = 0;
  // Programmatic dependent launch (sm_90): the kernel may start while the stream's previous
  // kernel finishes. Only for kernels that wait (griddepcontrol.wait) before their first
  // global memory access: the sm_90a wgmma conv, cp.async wgmma and TMA APMM kernels
  // (templates/conv_sm90a.cuh, apmm_sm90a.cuh, gemm_sm90a_tma.cuh).
  bool early_start = false;
};

class LoadedModule {
 public:
  // Throws Error(Driver) naming cuModuleLoadData and `context`.
  LoadedModule(const std::vector<char>& cubin, std::string context);
  ~LoadedModule();
  LoadedModule(const LoadedModule&) = delete;
  LoadedModule& operator=(const LoadedModule&) = delete;

  CUfunction function(const std::string& name);
  // A __device__ variable of the module: its address and size, or {0, 0} where the module
  // has none of that name (e.g. templates/timeline.cuh's, compiled in only on request).
  struct Global {
    CUdeviceptr ptr = 0;
    size_t bytes = 0;
  };
  Global global(const std::string& name);
  // Raises the dynamic shared-memory limit when above the 48 KB default, then launches
  // on the default stream. `args` are pointers to the kernel's parameters.
  void launch(const std::string& kernel, const LaunchDims& d, void** args);
  // Registers per thread of a kernel (asked of the driver once; launch geometry needs it).
  int registers(const std::string& kernel);
  // How many clusters of a kernel with compile-time cluster dimensions can be resident at
  // once with d's block and shared memory (asked once per kernel): a persistent grid's size.
  int max_active_clusters(const std::string& kernel, const LaunchDims& d);
  // A persistent grid for `tiles` tiles: at most as many blocks of `threads` threads and `smem`
  // bytes as the current device keeps resident at once (by registers, shared memory, threads).
  unsigned persistent_grid(const std::string& kernel, int threads, unsigned smem, int64_t tiles);
  const std::string& context() const { return context_; }

 private:
  CUmodule module_ = nullptr;
  std::string context_;
  std::unordered_map<std::string, CUfunction> functions_;
  std::unordered_map<std::string, unsigned> smem_limit_;
  std::unordered_map<std::string, int> registers_;
  std::unordered_map<std::string, int> clusters_;
  void raise_smem_limit(const std::string& kernel, CUfunction f, unsigned bytes);
};

// Elapsed time of device work between two recorded points (CUDA events).
class EventTimer {
 public:
  EventTimer();
  ~EventTimer();
  void start();
  float stop_ms();  // records, waits, returns milliseconds since start()

 private:
  CUevent begin_ = nullptr, end_ = nullptr;
};

void synchronize(const std::string& context);

}  // namespace apnn

// The front door: a spec in, a cached cubin and a launched kernel out.
//   compile(): spec -> generated source -> NVRTC cubin through the disk cache. No GPU needed.
//   kernel():  the module for the current GPU; loaded modules are kept in an in-process
//              table, so a repeated request touches neither the disk nor NVRTC.
//   apmm():    packs W and X into bit planes on the GPU and runs the GEMM.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "apnn/cache.h"
#include "apnn/conv_layout.h"
#include "apnn/epilogue.h"
#include "apnn/spec.h"

namespace apnn {

class LoadedModule;

struct CompileResult {
  KernelSpec spec;             // canonical
  std::string canonical;       // canonical JSON
  std::string arch;
  CacheKey key;
  enum class Source { Disk, Compiled } source = Source::Compiled;  // where the cubin came from
  double compile_ms = 0;       // NVRTC time when compiled now, else 0
  bool wgmma_core = false;     // the generator emitted the sm_90a wgmma core: the launch must match
  std::vector<char> cubin;
  const char* cache_state() const { return source == Source::Compiled ? "miss" : "hit"; }
};

// A kernel module loaded on the current device, ready to launch.
struct Kernel {
  CompileResult compiled;
  std::unique_ptr<LoadedModule> module;
};

class Engine {
 public:
  Engine();                              // disk cache from the environment
  explicit Engine(DiskCache cache);
  ~Engine();

  // Thread-safe; concurrent calls for different specs compile in parallel.
  CompileResult compile(const KernelSpec& spec, const std::string& arch);
  // The module for the current device (compiled or fetched, then loaded once per process).
  std::shared_ptr<Kernel> kernel(const KernelSpec& spec);

  DiskCache& cache() { return cache_; }
  CacheCounters counters();  // disk counters plus this engine's memory hits and load times

 private:
  CompileResult compile_locked_out(const KernelSpec& canonical, const std::string& arch);

  DiskCache cache_;
  std::mutex mu_;                                               // guards the maps and counters
  std::unordered_map<std::string, std::shared_ptr<Kernel>> loaded_;  // canonical + arch -> module
  CacheCounters local_;                                         // memory hits, load ms
};

struct ApmmShape {
  int64_t M = 0, N = 0, K = 0;
};

struct ConvShape {
  int64_t N = 0, C = 0, H = 0, W = 0;  // input activations (N, C, H, W)
  int64_t O = 0;                       // output channels
};

// A layer's output after its spec's epilogue chain (apnn/epilogue.h).
struct LayerResult {
  OutputType type = OutputType::Int32;
  std::vector<int64_t> shape;    // apmm (M, N); apconv (N, O, Ho', Wo'), after any pool
  std::vector<int32_t> i32;      // Int32, and Int16 widened
  std::vector<float> f32;        // Float32
  std::vector<uint32_t> planes;  // Packed: conv_layout.h activations with C = O; for apmm the
                                 // bitplane_layout.h operand of N rows x K' = M values
  std::vector<int32_t> sums;     // Packed: pixsum per output pixel (apmm: rowsum per row n)
  OperandFormat packed;          // Packed: the quantizer's format
};

// The integer values of a Packed result, in `shape` order.
std::vector<int16_t> unpack_layer(const LayerResult& r);

// The convolution of X (N, C, H, W) with W (O, C, Kh, Kw), every padded position holding the
// value 0 (kernel, stride and pad from the apconv spec), then the spec's chain with `params`.
LayerResult apconv_layer(Engine& engine, const KernelSpec& spec, const int16_t* W, const int16_t* X, const ConvShape& shape,
                         const EpilogueParams& params = {});
// W (M x K) . X (N x K)^T, then the spec's chain; values int16 row-major within the spec's
// encodings (checked: Error(InvalidInput) names the operand, index and value).
LayerResult apmm_layer(Engine& engine, const KernelSpec& spec, const int16_t* W, const int16_t* X, const ApmmShape& shape,
                       const EpilogueParams& params = {});

// The int32 outputs of specs without a chain: Y (N, O, Ho, Wo) and Y (M x N).
std::vector<int32_t> apconv(Engine& engine, const KernelSpec& spec, const int16_t* W, const int16_t* X,
                            const ConvShape& shape);
std::vector<int32_t> apmm(Engine& engine, const KernelSpec& spec, const int16_t* W, const int16_t* X,
                          const ApmmShape& shape);

}  // namespace apnn

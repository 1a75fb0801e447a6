// Prewarm: compile every distinct kernel of a model (include/apnn/model.h) into the disk
// cache ahead of its first inference, for a target GPU that need not be present.
#pragma once
#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apnn/engine.h"
#include "apnn/model.h"
#include "engine/tile_choice.h"

namespace apnn {

// One distinct kernel of the model: layers whose resolved specs have the same canonical JSON share it.
struct PrewarmKernel {
  KernelSpec spec;                  // the layer's spec with the tile resolved for the target
  std::string canonical;            // canonical JSON: the deduplication key
  std::vector<std::string> layers;  // the layers that use it, in model order
  std::string key;                  // cache key (hex), once compiled
  bool hit = false;                 // found in the cache: no NVRTC run
  double compile_ms = 0;            // NVRTC time when compiled now, else 0
  double wall_ms = 0;               // the whole engine.compile call (hash, cache, NVRTC)
  nlohmann::json to_json() const;
};

struct PrewarmReport {
  std::string model, arch, device;
  size_t layers = 0, kernels = 0, hits = 0, misses = 0;  // kernels = distinct; hits + misses == kernels
  unsigned threads = 0;                                  // compile threads used
  double seconds = 0;                                    // wall time of the whole prewarm
  std::vector<PrewarmKernel> rows;                       // one per distinct kernel, in order of first use
  nlohmann::json to_json() const;
};

struct PrewarmEvent {
  enum class Kind { Started, Finished } kind = Kind::Started;
  size_t index = 0;                       // the kernel's row in the report
  size_t done = 0, total = 0;             // kernels finished (this one included when Finished), distinct kernels
  const PrewarmKernel* kernel = nullptr;  // its row (key, hit, times are set when Finished)
  bool failed = false;                    // Finished: the compile threw (reported when prewarm returns)
};
// Called on the pool's threads, one call at a time; an exception it throws is rethrown by prewarm().
using PrewarmProgress = std::function<void(const PrewarmEvent&)>;

// Resolves each layer's tile for `target` with resolve_tile() (the recorded winner of `apnn tune`
// where there is one, else the heuristic), deduplicates the resolved specs by canonical JSON and
// compiles the distinct kernels for target.arch with `threads` threads (0: the hardware's
// concurrency) through engine.compile(). A kernel that fails does not stop the others: once the
// pool has joined, the first failure (in model order) is rethrown with its ErrorKind, naming the
// layers that use the kernel.
PrewarmReport prewarm(Engine& engine, const Model& model, const Target& target, unsigned threads = 0,
                      const PrewarmProgress& progress = {});

}  // namespace apnn

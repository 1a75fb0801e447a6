// apnn_bench_lookup: what a kernel request costs at each level of the cache, on the GPU.
//   cold:       NVRTC compile (empty cache) and module load
//   disk hit:   a fresh Engine on a warm cache: read + verify the entry + cuModuleLoadData
//   in-process: Engine::kernel for a module already loaded (the launch-path lookup), and the
//               same for a spec without a tile (tile resolution included)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <vector>

#include <stdlib.h>

#include "apnn/engine.h"
#include "apnn/error.h"
#include "apnn/tuning.h"
#include "engine/tile_choice.h"

using namespace apnn;
using Clock = std::chrono::steady_clock;

static double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main() {
  try {
    char tmpl[] = "/tmp/apnn-bench-lookup-XXXXXX";
    const std::filesystem::path dir = mkdtemp(tmpl);
    setenv("APNN_CACHE_DIR", dir.c_str(), 1);
    std::vector<KernelSpec> specs;
    for (int q : {1, 2, 3, 4, 5}) {
      KernelSpec s;
      s.w = {1, Encoding::Pm1};
      s.x = {q, Encoding::Unsigned};
      specs.push_back(canonicalize(s));
    }
    std::vector<double> cold_ms, nvrtc_ms, disk_ms;
    {
      Engine engine;
      for (const KernelSpec& s : specs) {
        const auto t0 = Clock::now();
        auto k = engine.kernel(s);
        cold_ms.push_back(ms_since(t0));
        nvrtc_ms.push_back(k->compiled.compile_ms);
      }
    }
    {
      Engine engine;  // a new process would see the same: nothing loaded, a warm disk cache
      for (const KernelSpec& s : specs) {
        const auto t0 = Clock::now();
        auto k = engine.kernel(s);
        disk_ms.push_back(ms_since(t0));
        if (k->compiled.source != CompileResult::Source::Disk) throw Error(ErrorKind::Cache, "expected a disk hit");
      }
      const int n = 200000;
      auto t0 = Clock::now();
      for (int i = 0; i < n; ++i) engine.kernel(specs[i % specs.size()]);
      const double hit_us = ms_since(t0) * 1e3 / n;
      KernelSpec untiled = specs[1];
      untiled.tile.reset();
      const Problem p = apmm_problem({1024, 4096, 4096});
      engine.kernel(with_tile_for(untiled, p));
      const int m = 20000;
      t0 = Clock::now();
      for (int i = 0; i < m; ++i) engine.kernel(with_tile_for(untiled, p));
      const double untiled_us = ms_since(t0) * 1e3 / m;
      // A winner recorded meanwhile (apnn tune in another process) must be picked up.
      const Tile recorded{32, 64, 512, 2, 2, 2};
      const Target target = current_target();
      TuningDb(TuningDb::default_path()).record(make_tune_key(untiled, target.arch, target.device, p.shape), {recorded, 1.0});
      const bool picked_up = *with_tile_for(untiled, p).tile == recorded;
      std::printf("tuning database change picked up by the next request: %s\n", picked_up ? "yes" : "NO");
      if (!picked_up) return 1;
      std::printf("cold request (NVRTC + load): median %.1f ms, of which NVRTC %.1f ms (%zu kernels)\n", median(cold_ms),
                  median(nvrtc_ms), specs.size());
      std::printf("warm disk hit (read, verify, cuModuleLoadData): median %.3f ms\n", median(disk_ms));
      std::printf("in-process hit, spec with tile: %.3f us per request\n", hit_us);
      std::printf("in-process hit, spec without tile (tuned-or-heuristic resolution included): %.3f us per request\n",
                  untiled_us);
    }
    std::filesystem::remove_all(dir);
  } catch (const Error& e) {
    std::fprintf(stderr, "apnn_bench_lookup: %s\n", e.what());
    return 1;
  }
  return 0;
}

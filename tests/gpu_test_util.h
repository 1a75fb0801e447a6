// Shared pieces of the GPU suites: a private cache per test, parallel prewarm, the
// 576 precision x encoding combinations, and the golden vector folders.
#pragma once
#include <stdlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "apnn/engine.h"
#include "runtime/device.h"
#include "test_util.h"

struct TempCache {
  ScratchDir scratch{"apnn-gpu-test"};
  const std::filesystem::path& dir = scratch.path();
  TempCache() { setenv("APNN_CACHE_DIR", dir.c_str(), 1); }
};

// For test cases of the sm_90a-only cores: true (after saying so) when this GPU is not sm_90a.
inline bool skipped_without_sm90a(const char* core) {
  const std::string arch = apnn::current_device().arch();
  if (arch == "sm_90a") return false;
  MESSAGE("skipped: the " << core << " needs sm_90a, this GPU is " << arch);
  return true;
}

// Every (w_bits, x_bits) in 1..8 x 1..8 and every (w_enc, x_enc) pair: 576 apmm specs, each
// with its default tile pinned (so a prewarm covers every shape they later run on).
inline std::vector<apnn::KernelSpec> all_precisions() {
  using apnn::Encoding;
  std::vector<apnn::KernelSpec> specs;
  for (int p = 1; p <= 8; ++p)
    for (int q = 1; q <= 8; ++q)
      for (Encoding we : {Encoding::Unsigned, Encoding::Pm1, Encoding::Signed})
        for (Encoding xe : {Encoding::Unsigned, Encoding::Pm1, Encoding::Signed}) {
          apnn::KernelSpec s;
          s.w = {p, we};
          s.x = {q, xe};
          s.tile = apnn::canonicalize(s).tile;
          specs.push_back(s);
        }
  return specs;
}

// Compiles specs into the disk cache on all cores, one Engine per thread.
inline void prewarm(const std::vector<apnn::KernelSpec>& specs, const std::string& arch) {
  parallel_for(specs.size(), std::max(1u, std::thread::hardware_concurrency()), [&](size_t i) {
    thread_local apnn::Engine engine;  // one per worker thread
    engine.compile(specs[i], arch);
  });
}

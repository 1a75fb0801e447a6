// One timing rule for every kernel in the benchmark, ours and the vendor's: warm-up,
// then the median of 5 repeats of `launches` back-to-back launches between CUDA events.
#pragma once
#include <algorithm>
#include <functional>
#include <vector>

#include "runtime/module.h"

namespace apnn::bench {

inline double median_us(int launches, const std::function<void()>& launch) {
  for (int i = 0; i < 3; ++i) launch();
  EventTimer timer;
  std::vector<double> per_launch;
  for (int r = 0; r < 5; ++r) {
    timer.start();
    for (int i = 0; i < launches; ++i) launch();
    per_launch.push_back(timer.stop_ms() * 1e3 / launches);
  }
  std::sort(per_launch.begin(), per_launch.end());
  return per_launch[per_launch.size() / 2];
}

}  // namespace apnn::bench

// One timing rule for every kernel we report, ours and the vendor's: a warm-up long
// enough for the clocks to leave idle (the H100 idles near 345 MHz), then the median of
// 5 repeats of `launches` back-to-back launches between CUDA events.
#pragma once
#include <algorithm>
#include <functional>
#include <vector>

#include "runtime/module.h"

namespace apnn {

// warmup_ms: how long to run before timing; a sweep that already warmed the GPU passes less.
inline double median_launch_us(int launches, const std::function<void()>& launch, float warmup_ms = 50.0f) {
  EventTimer timer;
  timer.start();
  do {
    for (int i = 0; i < launches; ++i) launch();
  } while (timer.stop_ms() < warmup_ms);
  std::vector<double> per_launch;
  for (int r = 0; r < 5; ++r) {
    timer.start();
    for (int i = 0; i < launches; ++i) launch();
    per_launch.push_back(timer.stop_ms() * 1e3 / launches);
  }
  std::sort(per_launch.begin(), per_launch.end());
  return per_launch[per_launch.size() / 2];
}

}  // namespace apnn

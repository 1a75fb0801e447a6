#include "bench/timing.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/device.h"
#include "runtime/driver_api.h"
#include "runtime/module.h"

namespace apnn::bench {

Timing plan_timing(const TimingRule& rule, double est_us) {
  Timing t;
  const double fit = est_us > 0 ? rule.max_repeat_ms * 1e3 / est_us : rule.launches;
  t.launches = std::clamp(static_cast<int>(fit), std::min(3, rule.launches), rule.launches);
  t.repeats = est_us > 10e3 ? std::min(3, rule.repeats) : rule.repeats;
  return t;
}

int rotation_sets(size_t set_bytes, size_t l2) {
  const double want = 4.0 * static_cast<double>(l2) / static_cast<double>(std::max<size_t>(set_bytes, 1));
  return std::clamp(static_cast<int>(std::ceil(want)), 2, 32);
}

size_t l2_bytes() {
  const driver::Api& cu = driver::api();
  CUdevice dev;
  driver::check(cu.DeviceGet(&dev, current_device().ordinal), "cuDeviceGet");
  int v = 0;
  driver::check(cu.DeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev), "cuDeviceGetAttribute(L2)");
  return static_cast<size_t>(v);
}

Timing time_rotated(const TimingRule& rule, int sets, const std::function<void(int)>& launch) {
  EventTimer timer;
  int next = 0;
  auto run = [&](int n) {
    timer.start();
    for (int i = 0; i < n; ++i) {
      launch(next);
      next = (next + 1) % sets;
    }
    return timer.stop_ms();
  };
  // Warm-up in doubling batches, so that a 25 ms kernel is not launched 50 times to warm up.
  double warm_ms = 0, est_us = 0;
  for (int batch = 1; warm_ms < rule.warmup_ms; batch = std::min(batch * 2, rule.launches)) {
    const double ms = run(batch);
    warm_ms += ms;
    est_us = ms * 1e3 / batch;
  }
  Timing t = plan_timing(rule, est_us);
  t.sets = sets;
  std::vector<double> per_launch;
  for (int r = 0; r < t.repeats; ++r) per_launch.push_back(run(t.launches) * 1e3 / t.launches);
  std::sort(per_launch.begin(), per_launch.end());
  t.us = per_launch[per_launch.size() / 2];
  return t;
}

}  // namespace apnn::bench

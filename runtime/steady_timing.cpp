#include "runtime/steady_timing.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "apnn/error.h"
#include "runtime/device.h"
#include "runtime/driver_api.h"
#include "runtime/module.h"

namespace apnn {

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

namespace {

// Launches n times, cycling through the sets; returns the GPU time of the batch.
struct Runner {
  int sets;
  const std::function<void(int)>& launch;
  EventTimer timer{};
  int next = 0;
  double operator()(int n) {
    timer.start();
    for (int i = 0; i < n; ++i) {
      launch(next);
      next = (next + 1) % sets;
    }
    return timer.stop_ms();
  }
};

// Returns the per-launch estimate of the last batch.
double warm_up(Runner& run, double warmup_ms) {
  double total = 0;
  for (int batch = 1;; batch *= 2) {
    const double ms = run(batch);
    total += ms;
    if (total >= warmup_ms && ms >= warmup_ms / 2) return ms * 1e3 / batch;
  }
}

}  // namespace

bool unsteady(std::vector<double> v) {
  if (v.size() < 2) return false;
  std::sort(v.begin(), v.end());
  return v.back() > 1.2 * v.front();
}

Timing time_rotated(const TimingRule& rule, int sets, const std::function<void(int)>& launch, double give_up_us) {
  Runner run{sets, launch};
  Timing best;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const double est_us = warm_up(run, rule.warmup_ms);
    if (attempt == 0 && give_up_us > 0 && est_us > give_up_us) return Timing{est_us, 0, 0, sets};
    Timing t = plan_timing(rule, est_us);
    std::vector<double> per_launch;
    for (int r = 0; r < t.repeats; ++r) per_launch.push_back(run(t.launches) * 1e3 / t.launches);
    const bool shaky = unsteady(per_launch);
    std::sort(per_launch.begin(), per_launch.end());
    t.us = per_launch[per_launch.size() / 2];
    if (attempt == 0 || t.us < best.us) best = t;
    if (attempt >= 1 && !shaky) break;
  }
  best.sets = sets;
  return best;
}

int fastest_candidate(const TimingRule& rule, int candidates, int sets, const std::function<void(int)>& use,
                      const std::function<void(int)>& launch) {
  if (candidates <= 1) return 0;
  Runner run{sets, launch};
  use(0);
  const double est_us = warm_up(run, rule.warmup_ms);
  const int n = std::clamp(static_cast<int>(2e3 / std::max(est_us, 1e-3)), 3, std::max(3, rule.launches));  // ~2 ms
  std::vector<std::vector<double>> us(candidates);
  std::vector<bool> failed(candidates, false);
  std::string first_error;
  for (int round = 0; round < 3; ++round)
    for (int c = 0; c < candidates; ++c) {
      if (failed[c]) continue;
      try {
        use(c);
        run(1);  // a first launch of an algorithm may set it up
        us[c].push_back(run(n) * 1e3 / n);
      } catch (const Error& e) {  // offered by the library but cannot run here: skip it
        if (e.kind() != ErrorKind::Driver) throw;
        failed[c] = true;
        if (first_error.empty()) first_error = e.what();
      }
    }
  int best = -1;
  double best_us = 0;
  for (int c = 0; c < candidates; ++c) {
    if (failed[c]) continue;
    std::sort(us[c].begin(), us[c].end());
    if (best < 0 || us[c][1] < best_us) best = c, best_us = us[c][1];
  }
  if (best < 0) throw Error(ErrorKind::Driver, "no candidate ran: " + first_error);
  return best;
}

}  // namespace apnn

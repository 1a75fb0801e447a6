#include "bench/clock_sampler.h"

#include <algorithm>

namespace apnn::bench {

ClockStats summarize(const std::vector<GpuSample>& samples) {
  ClockStats s;
  if (samples.empty()) return s;
  s.samples = static_cast<int>(samples.size());
  s.sm_mhz_min = samples.front().sm_mhz;
  int slowed = 0;
  for (const GpuSample& g : samples) {
    s.sm_mhz_mean += g.sm_mhz;
    s.sm_mhz_min = std::min(s.sm_mhz_min, g.sm_mhz);
    s.watts_mean += g.watts;
    slowed += g.slowed ? 1 : 0;
  }
  s.sm_mhz_mean /= s.samples;
  s.watts_mean /= s.samples;
  s.slowed_share = static_cast<double>(slowed) / s.samples;
  return s;
}

nlohmann::json clock_json(const ClockStats& s) {
  return {{"samples", s.samples},
          {"sm_mhz_mean", s.sm_mhz_mean},
          {"sm_mhz_min", s.sm_mhz_min},
          {"watts_mean", s.watts_mean},
          {"slowed_share", s.slowed_share}};
}

ClockSampler::ClockSampler(Source source, std::chrono::microseconds period) : source_(std::move(source)), period_(period) {}

ClockSampler::~ClockSampler() { stop(); }

void ClockSampler::start() {
  stop();
  {
    std::lock_guard<std::mutex> lock(mu_);
    samples_.clear();
  }
  running_ = true;
  thread_ = std::thread([this] {
    auto next = std::chrono::steady_clock::now();
    do {  // at least one reading per start, however short the row
      GpuSample g;
      if (source_(&g)) {
        std::lock_guard<std::mutex> lock(mu_);
        samples_.push_back(g);
      }
      // The next period from now where a reading ran late: no burst of catch-up readings.
      next = std::max(next + period_, std::chrono::steady_clock::now());
      std::this_thread::sleep_until(next);
    } while (running_);
  });
}

ClockStats ClockSampler::stop() {
  if (!thread_.joinable()) return {};
  running_ = false;
  thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  return summarize(samples_);
}

}  // namespace apnn::bench

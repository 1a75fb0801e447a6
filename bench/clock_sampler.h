// The GPU's SM clock and power while a row is timed. Back to back, the large GEMMs run at the
// board's power cap with the SM clock well under its boost (bench/NOTES.md, session 15), which
// a time alone does not show; each row records what the clock did while it was timed. No GPU
// needed here: the readings come from a source (NVML in `apnn bench`, bench/nvml_lib.h).
#pragma once
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/nvml_lib.h"

namespace apnn::bench {

struct ClockStats {
  int samples = 0;           // 0: nothing was sampled (no source, or every reading failed)
  double sm_mhz_mean = 0, sm_mhz_min = 0;
  double watts_mean = 0;      // of NVML's power readings, each itself an average over the last second
  double slowed_share = 0;   // of the samples, those taken while a power or thermal limit slowed the clocks
};

ClockStats summarize(const std::vector<GpuSample>& samples);
nlohmann::json clock_json(const ClockStats& s);

// Reads `source` every `period` on a thread of its own between start() and stop(), at least
// once per start.
class ClockSampler {
 public:
  using Source = std::function<bool(GpuSample*)>;
  ClockSampler(Source source, std::chrono::microseconds period);
  ~ClockSampler();
  ClockSampler(const ClockSampler&) = delete;
  ClockSampler& operator=(const ClockSampler&) = delete;

  void start();       // drops what an earlier start() gathered
  ClockStats stop();  // what was read since start(); a stopped sampler returns empty stats

 private:
  Source source_;
  std::chrono::microseconds period_;
  std::atomic<bool> running_{false};
  std::thread thread_;
  std::mutex mu_;
  std::vector<GpuSample> samples_;
};

}  // namespace apnn::bench

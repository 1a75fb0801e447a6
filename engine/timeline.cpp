#include "engine/timeline.h"

#include <algorithm>
#include <map>
#include <string>

#include <fmt/format.h>

#include "apnn/error.h"
#include "runtime/device.h"
#include "runtime/driver_api.h"

namespace apnn {

const char* timeline_event_name(int event) {
  static const char* const kNames[kTimelineEvents] = {"entry",       "dep_wait",   "first_copy", "first_full",
                                                      "first_patch", "last_patch", "stored",     "exit"};
  return event >= 0 && event < kTimelineEvents ? kNames[event] : "?";
}

TimelineRecorder::TimelineRecorder(LoadedModule& module, uint32_t capacity)
    : buffer_ptr_(module.global("apnn_timeline")),
      capacity_(module.global("apnn_timeline_capacity")),
      count_(module.global("apnn_timeline_count")),
      capacity_value_(capacity) {
  if (buffer_ptr_.ptr == 0 || capacity_.ptr == 0 || count_.ptr == 0)
    throw Error(ErrorKind::InvalidInput,
                "--timeline: the kernel records no timeline; set APNN_TIMELINE=1 (compiled apart in the cache) and "
                "use a tile with cluster > 1 (only the TMA core has the hooks)");
  if (capacity == 0) throw Error(ErrorKind::InvalidInput, "timeline capacity must be positive");
  records_ = DeviceBuffer(static_cast<size_t>(capacity) * sizeof(TimelineRecord));
  const uint32_t zero = 0;
  const CUdeviceptr ptr = records_.ptr();
  set(count_, &zero, sizeof zero);
  set(capacity_, &capacity_value_, sizeof capacity_value_);
  set(buffer_ptr_, &ptr, sizeof ptr);
}

TimelineRecorder::~TimelineRecorder() {
  const CUdeviceptr null = 0;
  // A destructor must not throw: a failure here leaves a module that is about to be unused.
  driver::api().MemcpyHtoD(buffer_ptr_.ptr, &null, sizeof null);
}

void TimelineRecorder::set(const LoadedModule::Global& g, const void* value, size_t bytes) const {
  if (g.bytes != bytes)
    throw Error(ErrorKind::Driver, fmt::format("timeline variable of {} bytes, expected {}", g.bytes, bytes));
  driver::check(driver::api().MemcpyHtoD(g.ptr, value, bytes), "cuMemcpyHtoD", "timeline variable");
}

std::vector<TimelineRecord> TimelineRecorder::read() const {
  synchronize("timeline");
  uint32_t count = 0;
  driver::check(driver::api().MemcpyDtoH(&count, count_.ptr, sizeof count), "cuMemcpyDtoH", "timeline count");
  const size_t n = std::min<size_t>(count, capacity_value_);
  return records_.to_vector<TimelineRecord>(n);
}

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

struct Launch {
  std::vector<const TimelineRecord*> blocks;
  uint64_t start = UINT64_MAX, end = 0;
};

}  // namespace

nlohmann::json summarize_timeline(const std::vector<TimelineRecord>& records, int skip) {
  std::map<uint64_t, Launch> by_grid;
  uint32_t grid_blocks = 0;
  for (const TimelineRecord& r : records) {
    Launch& l = by_grid[r.grid];
    l.blocks.push_back(&r);
    l.start = std::min(l.start, r.t[0]);
    l.end = std::max(l.end, r.t[kTimelineEvents - 1]);
    grid_blocks = std::max(grid_blocks, r.block + 1);
  }
  std::vector<Launch> launches;
  for (auto& [grid, l] : by_grid)
    if (l.blocks.size() == grid_blocks && l.end > 0) launches.push_back(std::move(l));
  std::sort(launches.begin(), launches.end(), [](const Launch& a, const Launch& b) { return a.start < b.start; });

  nlohmann::json per_launch = nlohmann::json::array();
  std::map<std::string, std::vector<double>> across;  // statistic -> its value per launch after `skip`
  for (size_t i = 0; i < launches.size(); ++i) {
    const Launch& l = launches[i];
    auto us = [&](uint64_t t) { return (static_cast<double>(t) - static_cast<double>(l.start)) / 1e3; };
    nlohmann::json j = {{"blocks", l.blocks.size()}};
    // A statistic of this launch, counted into the summary after the first `skip` launches.
    auto put = [&](const std::string& key, double value) {
      if (static_cast<int>(i) >= skip) across[key].push_back(value);
      return value;
    };
    j["duration_us"] = put("duration_us", us(l.end));
    if (i > 0) j["gap_us"] = put("gap_us", (static_cast<double>(l.start) - static_cast<double>(launches[i - 1].end)) / 1e3);
    for (int e = 1; e < kTimelineEvents; ++e) {
      std::vector<double> v;
      for (const TimelineRecord* r : l.blocks)
        if (r->t[e] != 0) v.push_back(us(r->t[e]));
      if (v.empty()) continue;
      const std::string name = timeline_event_name(e);
      j[name] = {{"median_us", put(name + ".median_us", median(v))},
                 {"last_us", put(name + ".last_us", *std::max_element(v.begin(), v.end()))}};
    }
    std::vector<double> per_patch, wait_share, epilogue_share;
    for (const TimelineRecord* r : l.blocks) {
      if (r->patches == 0 || r->consumer_cycles == 0) continue;
      const double total = static_cast<double>(r->consumer_cycles);
      per_patch.push_back(total / r->patches);
      wait_share.push_back(static_cast<double>(r->wait_cycles) / total);
      epilogue_share.push_back(static_cast<double>(r->epilogue_cycles) / total);
    }
    if (!per_patch.empty())
      j["consumer"] = {{"blocks", per_patch.size()},
                       {"cycles_per_patch", put("consumer.cycles_per_patch", median(per_patch))},
                       {"full_wait_share", put("consumer.full_wait_share", median(wait_share))},
                       {"epilogue_share", put("consumer.epilogue_share", median(epilogue_share))}};
    per_launch.push_back(std::move(j));
  }
  nlohmann::json summary = nlohmann::json::object();
  for (const auto& [k, v] : across) summary[k] = median(v);
  return {{"launches", launches.size()},
          {"blocks_per_launch", grid_blocks},
          {"records", records.size()},
          {"summary", summary},
          {"per_launch", per_launch}};
}

}  // namespace apnn

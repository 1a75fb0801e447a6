// Per-block phase timestamps of a kernel compiled with APNN_TIMELINE (templates/timeline.cuh,
// the TMA core's hooks): a recorder that arms the module's ring buffer before timing and
// reads it back after, and a per-launch summary of where the time goes between and inside
// launches (`apnn verify --timeline FILE`).
#pragma once
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/device_buffer.h"
#include "runtime/module.h"

namespace apnn {

// Mirrors templates/timeline.cuh's TimelineRecord and its events.
inline constexpr int kTimelineEvents = 8;
struct TimelineRecord {
  uint64_t grid = 0;  // %gridid: one launch
  uint32_t block = 0, smid = 0;
  uint64_t t[kTimelineEvents] = {};  // %globaltimer ns, 0 where the block did not reach the event
  // Thread 0's SM cycles (templates/timeline.cuh's TimelineCycles): the consumer loop's
  // patches, its whole time, and of that the full-stage waits and the epilogues.
  uint32_t patches = 0, unused = 0;
  uint64_t consumer_cycles = 0, wait_cycles = 0, epilogue_cycles = 0;
};
static_assert(sizeof(TimelineRecord) == 112, "the device's record layout");
// "entry", "dep_wait", "first_copy", "first_full", "first_patch", "last_patch", "stored", "exit".
const char* timeline_event_name(int event);

class TimelineRecorder {
 public:
  // Throws Error(InvalidInput) when the module has no timeline: compiled without
  // APNN_TIMELINE, or a core without hooks (only the TMA core, tile.cluster > 1, has them).
  TimelineRecorder(LoadedModule& module, uint32_t capacity = 1u << 16);
  ~TimelineRecorder();  // detaches the buffer (later launches record nothing)
  TimelineRecorder(const TimelineRecorder&) = delete;
  TimelineRecorder& operator=(const TimelineRecorder&) = delete;

  // The ring's records after the launches so far (synchronizes): the last `capacity` blocks.
  std::vector<TimelineRecord> read() const;

 private:
  void set(const LoadedModule::Global& g, const void* value, size_t bytes) const;
  LoadedModule::Global buffer_ptr_, capacity_, count_;
  DeviceBuffer records_;
  uint32_t capacity_value_;
};

// Groups records by launch (in order of first entry), keeps launches whose every block was
// recorded (the ring's oldest may be cut), and reports per launch, in microseconds from the
// launch's first entry: the median and the last block's time of each event, the launch's
// duration (first entry to last exit) and its gap after the previous launch's last exit
// (negative where a launch starts before the previous one ends: early start); and, over the
// blocks that ran patches, the medians of thread 0's cycles a patch and of the shares of its
// cycles spent waiting for full stages and in epilogues (`consumer`). `summary` holds the
// medians of those over the launches after the first `skip`.
nlohmann::json summarize_timeline(const std::vector<TimelineRecord>& records, int skip = 1);

}  // namespace apnn

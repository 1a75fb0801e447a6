// summarize_timeline: records of blocks grouped into launches, incomplete launches dropped,
// times relative to each launch's first entry (engine/timeline.h). The recorder itself needs
// a GPU: test_cli's timeline case runs it end to end.
#include <doctest/doctest.h>

#include <vector>

#include "engine/timeline.h"

namespace {

using apnn::TimelineRecord;

// Block b of launch `grid`, entering at base + b us, every later event 1 us after the one
// before (events [2, 8) absent where `short_block`).
TimelineRecord block(uint64_t grid, uint32_t b, uint64_t base_ns, bool short_block = false) {
  TimelineRecord r;
  r.grid = grid;
  r.block = b;
  r.smid = 100 + b;
  for (int e = 0; e < apnn::kTimelineEvents; ++e) r.t[e] = base_ns + 1000 * b + 1000 * e;
  if (short_block)
    for (int e = 2; e < apnn::kTimelineEvents - 1; ++e) r.t[e] = 0;
  return r;
}

}  // namespace

TEST_CASE("timeline: event names follow the device's order") {
  CHECK(std::string(apnn::timeline_event_name(0)) == "entry");
  CHECK(std::string(apnn::timeline_event_name(1)) == "dep_wait");
  CHECK(std::string(apnn::timeline_event_name(3)) == "first_full");
  CHECK(std::string(apnn::timeline_event_name(7)) == "exit");
  CHECK(std::string(apnn::timeline_event_name(8)) == "?");
  CHECK(std::string(apnn::timeline_event_name(-1)) == "?");
}

TEST_CASE("timeline: launches in order of entry, medians and last blocks, gaps between launches") {
  std::vector<TimelineRecord> recs;
  // Launch B (grid id 5) starts at 20 us, launch A (grid id 9) at 0: order by time, not id.
  for (uint32_t b = 0; b < 3; ++b) recs.push_back(block(5, b, 20000));
  for (uint32_t b = 0; b < 3; ++b) recs.push_back(block(9, b, 0));
  const nlohmann::json j = apnn::summarize_timeline(recs, 0);
  CHECK(j["launches"] == 2);
  CHECK(j["blocks_per_launch"] == 3);
  CHECK(j["records"] == 6);
  const nlohmann::json& first = j["per_launch"][0];
  CHECK(first["blocks"] == 3);
  // Blocks enter at 0, 1, 2 us; block 2 exits at 2 + 7 = 9 us.
  CHECK(first["duration_us"].get<double>() == doctest::Approx(9.0));
  CHECK_FALSE(first.contains("gap_us"));
  CHECK(first["dep_wait"]["median_us"].get<double>() == doctest::Approx(2.0));  // 1, 2, 3
  CHECK(first["dep_wait"]["last_us"].get<double>() == doctest::Approx(3.0));
  CHECK(first["exit"]["last_us"].get<double>() == doctest::Approx(9.0));
  const nlohmann::json& second = j["per_launch"][1];
  CHECK(second["gap_us"].get<double>() == doctest::Approx(20.0 - 9.0));
  // The summary: medians over launches after `skip` (here none skipped).
  CHECK(j["summary"]["duration_us"].get<double>() == doctest::Approx(9.0));
  CHECK(j["summary"]["gap_us"].get<double>() == doctest::Approx(11.0));
  CHECK(j["summary"]["stored.median_us"].get<double>() == doctest::Approx(7.0));
}

TEST_CASE("timeline: events a block did not reach are left out; skip drops the first launches from the summary") {
  std::vector<TimelineRecord> recs;
  for (uint32_t b = 0; b < 2; ++b) recs.push_back(block(1, b, 0, b == 1));
  for (uint32_t b = 0; b < 2; ++b) recs.push_back(block(2, b, 50000));
  const nlohmann::json j = apnn::summarize_timeline(recs, 1);
  REQUIRE(j["launches"] == 2);
  // Launch 1: only block 0 reached first_copy (2 us); both reached dep_wait.
  CHECK(j["per_launch"][0]["first_copy"]["median_us"].get<double>() == doctest::Approx(2.0));
  CHECK(j["per_launch"][0]["dep_wait"]["median_us"].get<double>() == doctest::Approx(1.5));
  // The summary sees launch 2 only: its gap after launch 1's last exit (block 1 at 1 + 7 us).
  CHECK(j["summary"]["gap_us"].get<double>() == doctest::Approx(50.0 - 8.0));
  CHECK(j["summary"]["first_copy.median_us"].get<double>() == doctest::Approx(2.5));
}

TEST_CASE("timeline: launches the ring cut or that have not ended are left out; a block not yet out adds no exit") {
  std::vector<TimelineRecord> recs;
  recs.push_back(block(1, 2, 0));  // the ring kept only block 2 of launch 1
  for (uint32_t b = 0; b < 3; ++b) recs.push_back(block(2, b, 30000));
  TimelineRecord running = block(3, 0, 60000);
  running.t[apnn::kTimelineEvents - 1] = 0;  // block 0 of launch 3 has not exited
  recs.push_back(running);
  recs.push_back(block(3, 1, 60000));
  recs.push_back(block(3, 2, 60000));
  for (uint32_t b = 0; b < 3; ++b) {  // launch 4: no block has exited
    TimelineRecord r = block(4, b, 90000);
    r.t[apnn::kTimelineEvents - 1] = 0;
    recs.push_back(r);
  }
  const nlohmann::json j = apnn::summarize_timeline(recs, 0);
  CHECK(j["launches"] == 2);  // launches 2 and 3
  CHECK(j["per_launch"][0]["duration_us"].get<double>() == doctest::Approx(9.0));
  CHECK(j["per_launch"][1]["exit"]["median_us"].get<double>() == doctest::Approx(8.5));  // blocks 1 and 2: 8, 9
  CHECK(apnn::summarize_timeline({}, 0)["launches"] == 0);
}

TEST_CASE("timeline: thread 0's cycle account gives cycles a patch and the wait and epilogue shares, median over blocks") {
  std::vector<TimelineRecord> recs;
  // Three blocks: 10 patches of 2000 cycles (10% waiting, 20% epilogue), 20 of 1000 (5%, 25%),
  // and one that ran no patch (no account: left out of the medians).
  for (uint32_t b = 0; b < 3; ++b) {
    TimelineRecord r = block(7, b, 0);
    if (b < 2) {
      r.patches = b == 0 ? 10 : 20;
      r.consumer_cycles = 20000;
      r.wait_cycles = b == 0 ? 2000 : 1000;
      r.epilogue_cycles = b == 0 ? 4000 : 5000;
    }
    recs.push_back(r);
  }
  const nlohmann::json j = apnn::summarize_timeline(recs, 0);
  REQUIRE(j["launches"] == 1);
  const nlohmann::json& c = j["per_launch"][0]["consumer"];
  CHECK(c["blocks"] == 2);
  CHECK(c["cycles_per_patch"].get<double>() == doctest::Approx(1500.0));  // 2000, 1000
  CHECK(c["full_wait_share"].get<double>() == doctest::Approx(0.075));
  CHECK(c["epilogue_share"].get<double>() == doctest::Approx(0.225));
  CHECK(j["summary"]["consumer.epilogue_share"].get<double>() == doctest::Approx(0.225));
  // Records without an account (a core that keeps none) add no consumer entry.
  std::vector<TimelineRecord> plain;
  for (uint32_t b = 0; b < 2; ++b) plain.push_back(block(8, b, 0));
  const nlohmann::json p = apnn::summarize_timeline(plain, 0);
  CHECK_FALSE(p["per_launch"][0].contains("consumer"));
  CHECK_FALSE(p["summary"].contains("consumer.cycles_per_patch"));
}

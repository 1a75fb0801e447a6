// engine/quantize_thresholds.h against the CPU reference: for pool-free quantize chains the
// level from the per-channel thresholds equals the reference's for every accumulator tried
// (each threshold and its neighbours, the int32 ends, random values), with rising, falling
// and flat channels, saturating scales and every encoding; and bad chains are refused.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "apnn/epilogue_reference.h"
#include "apnn/error.h"
#include "engine/quantize_thresholds.h"
#include "spec/epilogue.h"

using namespace apnn;

namespace {

Epilogue chain(const char* json) { return parse_epilogue(nlohmann::json::parse(json), false, "test"); }

// Random finite parameters of either sign (scale 0: a flat channel), some far out of the
// accumulators' range so that levels saturate or overflow to +-inf before the quantizer.
EpilogueParams random_params(const Epilogue& e, int64_t channels, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  EpilogueParams p;
  const float extremes[] = {0.0f, 1e30f, -1e30f, 1e-30f, 3.0e38f};
  if (e.has(EpilogueOpKind::ScaleBias))
    for (int64_t o = 0; o < channels; ++o) {
      p.scale.push_back(o < 5 ? extremes[o] : static_cast<float>(u(rng) * 1e-3));
      p.bias.push_back(static_cast<float>(u(rng) * 10));
    }
  if (const EpilogueOp* q = e.quantize()) {
    const int64_t n = q->scale == QuantScale::PerChannel ? channels : 1;
    for (int64_t i = 0; i < n; ++i) {
      p.q_scale.push_back(i == 1 ? 1e-38f : static_cast<float>(0.05 + (u(rng) + 1) * 2));
      p.q_zero.push_back(i == 2 ? 1e30f : static_cast<float>(u(rng) * 4));
    }
  }
  return p;
}

void check_chain(const char* json, uint64_t seed) {
  const Epilogue e = chain(json);
  std::mt19937_64 rng(seed);
  const int64_t channels = 24;
  const EpilogueParams p = random_params(e, channels, rng);
  const std::vector<int32_t> table = quantize_thresholds(e, p, channels);
  const int words = quantize_threshold_words(e);
  REQUIRE(table.size() == static_cast<size_t>(channels * words));
  std::uniform_int_distribution<int32_t> any(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
  std::uniform_int_distribution<int32_t> near(-100000, 100000);
  int steps_seen = 0;
  for (int64_t o = 0; o < channels; ++o) {
    const int32_t* t = table.data() + o * words;
    std::vector<int32_t> ys = {std::numeric_limits<int32_t>::min(), -1, 0, 1, std::numeric_limits<int32_t>::max()};
    for (int k = 0; k < words - 1; ++k)
      for (int32_t d : {-1, 0, 1})
        if (t[k] != std::numeric_limits<int32_t>::max() || d <= 0) ys.push_back(t[k] + d);
    for (int i = 0; i < 300; ++i) ys.push_back(i % 2 ? any(rng) : near(rng));
    for (int32_t y : ys) {
      const int want = quantize_level(*e.quantize(), quantized_element(e, p, y, o));
      const int got = threshold_level(t, words, y);
      if (got != want) FAIL(json << " channel " << o << " y=" << y << ": level " << got << ", reference " << want);
    }
    steps_seen += (t[words - 1] >> 8) & 0xff;
  }
  CHECK(steps_seen > 0);  // not every channel flat
}

}  // namespace

TEST_CASE("quantize thresholds reproduce the reference's levels") {
  check_chain(R"([{"op":"quantize","bits":2,"enc":"unsigned"}])", 1);
  check_chain(R"([{"op":"scale_bias"},{"op":"relu"},{"op":"quantize","bits":2,"enc":"unsigned"}])", 2);
  check_chain(R"([{"op":"relu"},{"op":"scale_bias"},{"op":"quantize","bits":3,"enc":"pm1","scale":"per_channel"}])", 3);
  check_chain(R"([{"op":"scale_bias"},{"op":"quantize","bits":3,"enc":"signed","scale":"per_channel"}])", 4);
  check_chain(R"([{"op":"scale_bias"},{"op":"quantize","bits":1,"enc":"pm1"}])", 5);
  check_chain(R"([{"op":"scale_bias"},{"op":"relu"},{"op":"quantize","bits":8,"enc":"signed","scale":"per_channel"}])", 6);
}

TEST_CASE("quantize thresholds: falling channels count down from the level at the lowest accumulator") {
  const Epilogue e = chain(R"([{"op":"scale_bias"},{"op":"quantize","bits":2,"enc":"unsigned"}])");
  const EpilogueParams p{{-1.0f}, {0.0f}, {1.0f}, {0.0f}};  // level = clamp(floor(-y), 0, 3)
  const std::vector<int32_t> t = quantize_thresholds(e, p, 1);
  REQUIRE(t.size() == 4);
  CHECK(t[0] == -2);  // level 2 from y = -2 up
  CHECK(t[1] == -1);
  CHECK(t[2] == 0);
  CHECK(t[3] == (3 | 3 << 8 | 1 << 16));
  CHECK(threshold_level(t.data(), 4, -5) == 3);
  CHECK(threshold_level(t.data(), 4, -1) == 1);
  CHECK(threshold_level(t.data(), 4, 7) == 0);
}

TEST_CASE("quantize thresholds: which chains use them, and bad input") {
  CHECK(quantize_by_thresholds(chain(R"([{"op":"quantize","bits":3,"enc":"unsigned"}])")));
  CHECK_FALSE(quantize_by_thresholds(chain(R"([{"op":"quantize","bits":4,"enc":"unsigned"}])")));
  CHECK_FALSE(quantize_by_thresholds(chain(R"([{"op":"relu"}])")));
  CHECK_FALSE(quantize_by_thresholds(parse_epilogue(
      nlohmann::json::parse(R"([{"op":"pool","kind":"max","size":2,"stride":2},{"op":"quantize","bits":2,"enc":"unsigned"}])"),
      true, "test")));
  const Epilogue relu = chain(R"([{"op":"relu"}])");
  CHECK_THROWS_WITH_AS(quantize_thresholds(relu, {}, 4), doctest::Contains("needs a quantize op and no pool"), Error);
  const Epilogue pooled = parse_epilogue(
      nlohmann::json::parse(R"([{"op":"pool","kind":"max","size":2,"stride":2},{"op":"quantize","bits":2,"enc":"unsigned"}])"),
      true, "test");
  CHECK_THROWS_WITH_AS(quantize_thresholds(pooled, {{}, {}, {1.0f}, {0.0f}}, 4), doctest::Contains("no pool"), Error);
  // Parameters are checked as for the kernel: a quantizer scale of 0 is refused.
  const Epilogue q = chain(R"([{"op":"quantize","bits":2,"enc":"unsigned"}])");
  CHECK_THROWS_WITH_AS(quantize_thresholds(q, {{}, {}, {0.0f}, {0.0f}}, 4), doctest::Contains("q_scale"), Error);
}

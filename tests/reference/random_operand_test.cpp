// random_operand: only valid values, all of them reachable, deterministic per seed.
#include <doctest/doctest.h>

#include <map>

#include "apnn/reference.h"
#include "formats.h"

TEST_CASE("random_operand: only valid values, and every valid value (min and max included) appears") {
  for (const apnn::OperandFormat& f : reference_test::all_formats()) {
    INFO(f.describe());
    const size_t valid = size_t{1} << f.bits;  // each encoding has 2^bits values
    const auto values = apnn::random_operand(f, 64 * valid, 7);
    std::map<int16_t, int> seen;
    for (int16_t v : values) {
      CHECK(f.is_valid(v));
      ++seen[v];
    }
    CHECK(seen.size() == valid);
    CHECK(seen.begin()->first == f.min_value());
    CHECK(seen.rbegin()->first == f.max_value());
  }
}

TEST_CASE("random_operand: roughly uniform") {
  const apnn::OperandFormat f{2, apnn::Encoding::Pm1};
  std::map<int16_t, int> counts;
  for (int16_t v : apnn::random_operand(f, 40000, 3)) ++counts[v];
  for (const auto& [value, count] : counts) {
    CAPTURE(value);
    CHECK(count > 9000);  // 10000 expected; a 10-sigma margin keeps this deterministic test meaningful
    CHECK(count < 11000);
  }
}

TEST_CASE("random_operand: deterministic for a seed, different across seeds") {
  const apnn::OperandFormat f{5, apnn::Encoding::Signed};
  CHECK(apnn::random_operand(f, 100, 11) == apnn::random_operand(f, 100, 11));
  CHECK(apnn::random_operand(f, 100, 11) != apnn::random_operand(f, 100, 12));
  CHECK(apnn::random_operand(f, 0, 11).empty());
}

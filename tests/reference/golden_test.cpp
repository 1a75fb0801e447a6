// Both references reproduce every APMM golden vector (computed independently with numpy).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "apnn/npy.h"
#include "golden_case.h"
#include "apnn/reference.h"

namespace fs = std::filesystem;

namespace {


void check_case(const fs::path& dir) {
  INFO("golden vector " << dir.string());
  const GoldenCase c = load_golden_case(dir);
  const nlohmann::json& spec = c.spec;
  REQUIRE(spec.at("op") == "apmm");
  const apnn::OperandFormat wf = format_of(spec, "w");
  const apnn::OperandFormat xf = format_of(spec, "x");
  const apnn::NpyArray &w = c.w, &x = c.x, &y = c.y;
  REQUIRE(w.shape.size() == 2);
  REQUIRE(x.shape.size() == 2);
  const int64_t M = w.shape[0], K = w.shape[1], N = x.shape[0];
  REQUIRE(x.shape[1] == K);
  REQUIRE(y.shape == std::vector<int64_t>{M, N});
  const std::vector<int16_t> W = as_int16(w), X = as_int16(x);
  const std::vector<int64_t> expected = y.values;

  const auto direct = apnn::apmm_reference_direct(W.data(), X.data(), M, N, K);
  CHECK(std::vector<int64_t>(direct.begin(), direct.end()) == expected);
  const auto bitserial = apnn::apmm_reference_bitserial(wf, xf, W.data(), X.data(), M, N, K);
  CHECK(std::vector<int64_t>(bitserial.begin(), bitserial.end()) == expected);
}

}  // namespace

TEST_CASE("reference: both references reproduce every APMM golden vector") {
  int cases = 0;
  for (const fs::path& dir : golden_dirs("apmm_")) {
    check_case(dir);
    ++cases;
  }
  CHECK(cases > 0);
}

// Both convolution references reproduce every APConv golden vector (computed independently with
// numpy); the layout round trip and sums are checked on the same data.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "apnn/conv_reference.h"
#include "apnn/npy.h"
#include "golden_case.h"
#include "conv_test_util.h"

namespace fs = std::filesystem;

namespace {

// The values as int16, each checked valid in its format (a vector that is not would test nothing).
std::vector<int16_t> as_int16(const apnn::NpyArray& a, const apnn::OperandFormat& f, const char* name) {
  std::vector<int16_t> out;
  out.reserve(a.values.size());
  for (size_t i = 0; i < a.values.size(); ++i) {
    const int64_t v = a.values[i];
    REQUIRE_MESSAGE(f.is_valid(v), name << " value " << v << " at flat index " << i << " is not a valid " << f.describe() << " value");
    out.push_back(static_cast<int16_t>(v));
  }
  return out;
}

// [a, b] from a two-element array (or one integer for both).
std::pair<int, int> pair_of(const nlohmann::json& spec, const char* key) {
  const nlohmann::json& v = spec.at(key);
  if (v.is_number_integer()) return {v.get<int>(), v.get<int>()};
  REQUIRE_MESSAGE((v.is_array() && v.size() == 2), key << " must be [h, w], got " << v.dump());
  return {v.at(0).get<int>(), v.at(1).get<int>()};
}

void check_case(const fs::path& dir) {
  INFO("golden vector " << dir.string());
  const GoldenCase c = load_golden_case(dir);
  const nlohmann::json& spec = c.spec;
  REQUIRE(spec.at("op") == "apconv");
  const apnn::OperandFormat wf = format_of(spec, "w");
  const apnn::OperandFormat xf = format_of(spec, "x");
  const apnn::NpyArray &w = c.w, &x = c.x, &y = c.y;
  REQUIRE(w.shape.size() == 4);
  REQUIRE(x.shape.size() == 4);
  apnn::ConvGeometry g;
  g.O = w.shape[0], g.C = w.shape[1];
  g.N = x.shape[0], g.H = x.shape[2], g.W = x.shape[3];
  REQUIRE(x.shape[1] == g.C);
  std::tie(g.kh, g.kw) = pair_of(spec, "kernel");
  std::tie(g.sh, g.sw) = pair_of(spec, "stride");
  std::tie(g.ph, g.pw) = pair_of(spec, "pad");
  REQUIRE(w.shape[2] == g.kh);
  REQUIRE(w.shape[3] == g.kw);
  INFO(conv_test::describe(g));
  REQUIRE(y.shape == std::vector<int64_t>{g.N, g.O, g.Ho(), g.Wo()});
  const std::vector<int16_t> W = as_int16(w, wf, "W"), X = as_int16(x, xf, "X");

  const auto direct = apnn::conv_reference_direct(g, W.data(), X.data());
  CHECK(std::vector<int64_t>(direct.begin(), direct.end()) == y.values);
  const auto im2col = apnn::conv_reference_im2col(g, W.data(), X.data());
  CHECK(std::vector<int64_t>(im2col.begin(), im2col.end()) == y.values);

  const auto packed = apnn::pack_activations_reference(xf, X.data(), g.N, g.C, g.H, g.W);
  CHECK(apnn::unpack_activations_reference(xf, packed.planes.data(), g.N, g.C, g.H, g.W) == X);
}

}  // namespace

TEST_CASE("conv reference: both references reproduce every APConv golden vector") {
  int cases = 0;
  for (const fs::path& dir : golden_dirs("apconv_")) {
    check_case(dir);
    ++cases;
  }
  CHECK(cases >= 6);  // the six in shared/vectors when this suite was written
}

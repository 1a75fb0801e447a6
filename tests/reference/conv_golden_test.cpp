// Both convolution references reproduce every APConv golden vector (computed independently with
// numpy); the layout round trip and sums are checked on the same data.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "apnn/conv_reference.h"
#include "apnn/npy.h"
#include "conv_test_util.h"

namespace fs = std::filesystem;

namespace {

apnn::OperandFormat format_of(const nlohmann::json& spec, const std::string& side) {
  apnn::OperandFormat f;
  f.bits = spec.at(side + "_bits").get<int>();
  REQUIRE_MESSAGE(apnn::parse_encoding(spec.at(side + "_enc").get<std::string>(), &f.enc),
                  "unknown encoding " << spec.at(side + "_enc"));
  return f;
}

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
  const nlohmann::json spec = nlohmann::json::parse(std::ifstream(dir / "spec.json"));
  REQUIRE(spec.at("op") == "apconv");
  const apnn::OperandFormat wf = format_of(spec, "w");
  const apnn::OperandFormat xf = format_of(spec, "x");
  const apnn::NpyArray w = apnn::read_npy_int((dir / "w.npy").string());
  const apnn::NpyArray x = apnn::read_npy_int((dir / "x.npy").string());
  const apnn::NpyArray y = apnn::read_npy_int((dir / "y.npy").string());
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
  const fs::path root = APNN_VECTORS_DIR;
  // A missing directory must fail loudly: skipping would let a broken checkout pass.
  REQUIRE_MESSAGE(fs::is_directory(root), "golden vectors directory APNN_VECTORS_DIR = " << root
                                              << " does not exist (configure with -DAPNN_VECTORS_DIR=...)");
  int cases = 0;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (!entry.is_directory() || entry.path().filename().string().rfind("apconv_", 0) != 0) continue;
    check_case(entry.path());
    ++cases;
  }
  INFO("apconv_* folders found in " << root);
  CHECK(cases >= 6);  // the six in shared/vectors when this suite was written
}

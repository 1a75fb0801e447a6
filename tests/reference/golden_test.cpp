// Both references reproduce every APMM golden vector (computed independently with numpy).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "apnn/npy.h"
#include "apnn/reference.h"

namespace fs = std::filesystem;

namespace {

apnn::OperandFormat format_of(const nlohmann::json& spec, const std::string& side) {
  apnn::OperandFormat f;
  f.bits = spec.at(side + "_bits").get<int>();
  REQUIRE_MESSAGE(apnn::parse_encoding(spec.at(side + "_enc").get<std::string>(), &f.enc),
                  "unknown encoding " << spec.at(side + "_enc"));
  return f;
}

std::vector<int16_t> as_int16(const apnn::NpyArray& a) {
  std::vector<int16_t> out;
  for (int64_t v : a.values) {
    REQUIRE((v >= INT16_MIN && v <= INT16_MAX));
    out.push_back(static_cast<int16_t>(v));
  }
  return out;
}

void check_case(const fs::path& dir) {
  INFO("golden vector " << dir.string());
  const nlohmann::json spec = nlohmann::json::parse(std::ifstream(dir / "spec.json"));
  REQUIRE(spec.at("op") == "apmm");
  const apnn::OperandFormat wf = format_of(spec, "w");
  const apnn::OperandFormat xf = format_of(spec, "x");
  const apnn::NpyArray w = apnn::read_npy_int((dir / "w.npy").string());
  const apnn::NpyArray x = apnn::read_npy_int((dir / "x.npy").string());
  const apnn::NpyArray y = apnn::read_npy_int((dir / "y.npy").string());
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
  const fs::path root = APNN_VECTORS_DIR;
  // A missing directory must fail loudly: skipping would let a broken checkout pass.
  REQUIRE_MESSAGE(fs::is_directory(root), "golden vectors directory APNN_VECTORS_DIR = " << root
                                              << " does not exist (configure with -DAPNN_VECTORS_DIR=...)");
  int cases = 0;
  for (const auto& entry : fs::directory_iterator(root)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || name.rfind("apconv_", 0) == 0) continue;  // convolutions are tested elsewhere
    check_case(entry.path());
    ++cases;
  }
  CHECK(cases > 0);
}

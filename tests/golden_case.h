// The golden vectors of shared/vectors (computed independently of this code): folder
// discovery and loading, for the CPU reference suites and the GPU suites alike.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "apnn/encoding.h"
#include "apnn/npy.h"
#include "test_util.h"

struct GoldenCase {
  std::filesystem::path dir;
  std::string spec_text;
  nlohmann::json spec;
  apnn::NpyArray w, x, y;
};

// Folders whose name starts with prefix; $APNN_VECTORS_DIR overrides the configured path.
// A missing directory fails the test: a golden check must never pass by being skipped.
inline std::vector<std::filesystem::path> golden_dirs(const std::string& prefix) {
  const char* env = std::getenv("APNN_VECTORS_DIR");
  const std::filesystem::path root = env ? env : APNN_VECTORS_DIR;
  REQUIRE_MESSAGE(std::filesystem::is_directory(root), "golden vectors not found at ", root.string(),
                  " (configure with -DAPNN_VECTORS_DIR=... or set APNN_VECTORS_DIR)");
  std::vector<std::filesystem::path> dirs;
  for (const auto& d : std::filesystem::directory_iterator(root))
    if (d.path().filename().string().rfind(prefix, 0) == 0) dirs.push_back(d.path());
  REQUIRE_MESSAGE(!dirs.empty(), "no golden vectors named ", prefix, "* in ", root.string());
  return dirs;
}

inline GoldenCase load_golden_case(const std::filesystem::path& dir) {
  GoldenCase c;
  c.dir = dir;
  c.spec_text = read_file(dir / "spec.json");
  c.spec = nlohmann::json::parse(c.spec_text);
  c.w = apnn::read_npy_int((dir / "w.npy").string());
  c.x = apnn::read_npy_int((dir / "x.npy").string());
  c.y = apnn::read_npy_int((dir / "y.npy").string());
  return c;
}

// The operand format a golden spec names for side "w" or "x".
inline apnn::OperandFormat format_of(const nlohmann::json& spec, const std::string& side) {
  apnn::OperandFormat f;
  f.bits = spec.at(side + "_bits").get<int>();
  REQUIRE_MESSAGE(apnn::parse_encoding(spec.at(side + "_enc").get<std::string>(), &f.enc),
                  "unknown encoding " << spec.at(side + "_enc"));
  return f;
}

inline std::vector<int16_t> as_int16(const apnn::NpyArray& a) {
  std::vector<int16_t> out;
  for (int64_t v : a.values) {
    REQUIRE((v >= INT16_MIN && v <= INT16_MAX));
    out.push_back(static_cast<int16_t>(v));
  }
  return out;
}

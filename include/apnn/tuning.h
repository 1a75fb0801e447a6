// Empirical tuning results, persisted next to the kernel cache: the winning tile of a
// (device, spec without tile, shape bucket) measured by `apnn tune`. Requests without a
// tile use the recorded winner when there is one, else the paper's heuristic.
#pragma once
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "apnn/spec.h"

namespace apnn {

// What a tuning result is valid for. The shape bucket rounds each dimension up to a power
// of two, so nearby shapes share a winner.
struct TuneKey {
  std::string arch, device;
  std::string spec;          // canonical JSON of the spec without its tile
  std::string shape_bucket;  // e.g. "m1024_n4096_k4096" or "n8_c256_h16_w16_o256"
  std::string generator;     // generator version: a new generator invalidates old winners
  std::string str() const;   // the database key
};

TuneKey make_tune_key(const KernelSpec& spec, const std::string& arch, const std::string& device,
                      const nlohmann::json& shape);
std::string shape_bucket(const nlohmann::json& shape);

struct TuneRecord {
  Tile tile;
  double us = 0;
};

// tuning.json: {"version": 1, "entries": {key: {"tile": {...}, "us": t}}}. Written
// atomically (temp file + rename) under an flock; a corrupt file warns once and reads as empty.
class TuningDb {
 public:
  static std::filesystem::path default_path();  // <cache root>/tuning.json ($APNN_TUNING_DB overrides)
  explicit TuningDb(std::filesystem::path path);
  std::optional<TuneRecord> lookup(const TuneKey& key) const;
  void record(const TuneKey& key, const TuneRecord& r);  // read-modify-write under the lock
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace apnn

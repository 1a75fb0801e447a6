#include "cache/counters.h"

#include <cerrno>
#include <utility>

#include "cache/posix_file.h"

namespace apnn {
namespace {

// One table drives to_json, parsing and +=, so a new counter is added in one place.
constexpr std::pair<const char*, uint64_t CacheCounters::*> kCounts[] = {
    {"memory_hits", &CacheCounters::memory_hits},   {"disk_hits", &CacheCounters::disk_hits},
    {"misses", &CacheCounters::misses},             {"compiles", &CacheCounters::compiles},
    {"corrupt_entries", &CacheCounters::corrupt_entries}, {"evictions", &CacheCounters::evictions},
    {"bytes_written", &CacheCounters::bytes_written}, {"bytes_read", &CacheCounters::bytes_read},
};
constexpr std::pair<const char*, double CacheCounters::*> kTimes[] = {
    {"compile_ms", &CacheCounters::compile_ms},
    {"load_ms", &CacheCounters::load_ms},
};

// Missing fields read as 0 so files written by older versions stay usable.
bool from_json(const nlohmann::json& j, CacheCounters* out, std::string* why) {
  if (!j.is_object()) {
    *why = "not a JSON object";
    return false;
  }
  for (auto [name, field] : kCounts) {
    auto it = j.find(name);
    if (it == j.end()) continue;
    if (!it->is_number_unsigned()) {
      *why = std::string(name) + " is not an unsigned integer";
      return false;
    }
    out->*field = it->get<uint64_t>();
  }
  for (auto [name, field] : kTimes) {
    auto it = j.find(name);
    if (it == j.end()) continue;
    if (!it->is_number()) {
      *why = std::string(name) + " is not a number";
      return false;
    }
    out->*field = it->get<double>();
  }
  return true;
}

}  // namespace

nlohmann::json CacheCounters::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (auto [name, field] : kCounts) j[name] = this->*field;
  for (auto [name, field] : kTimes) j[name] = this->*field;
  return j;
}

CacheCounters& CacheCounters::operator+=(const CacheCounters& o) {
  for (auto [name, field] : kCounts) this->*field += o.*field;
  for (auto [name, field] : kTimes) this->*field += o.*field;
  return *this;
}

namespace cache_counters {

bool is_zero(const CacheCounters& c) {
  for (auto [name, field] : kCounts)
    if (c.*field != 0) return false;
  for (auto [name, field] : kTimes)
    if (c.*field != 0) return false;
  return true;
}

CacheCounters read_file(const std::filesystem::path& file) {
  CacheCounters c;
  std::vector<char> bytes;
  std::string why;
  if (int err = posix::read_file(file, &bytes)) {
    if (err == ENOENT) return c;
    why = posix::error_text(err);
  } else {
    auto j = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) why = "invalid JSON";
    else if (from_json(j, &c, &why)) return c;
  }
  posix::warn("cache counters file " + file.string() + " is corrupt (" + why + "); counting from zero");
  return CacheCounters{};
}

}  // namespace cache_counters
}  // namespace apnn

#include <cerrno>
#include <cstdlib>
#include <map>

#include <fmt/format.h>

#include "apnn/cache.h"
#include "apnn/error.h"
#include "apnn/tuning.h"
#include "cache/posix_file.h"
#include "generator/generate.h"

namespace apnn {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

int64_t round_up_pow2(int64_t v) {
  int64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

json read_db(const fs::path& path) {
  std::vector<char> bytes;
  if (int err = posix::read_file(path, &bytes)) {
    if (err != ENOENT) posix::warn(fmt::format("tuning database {} unreadable ({}); using the heuristic", path.string(),
                                               posix::error_text(err)));
    return json::object();
  }
  try {
    json j = json::parse(bytes.begin(), bytes.end());
    if (j.is_object() && j.value("version", 0) == 1 && j.contains("entries") && j["entries"].is_object()) return j;
  } catch (const json::exception&) {
  }
  posix::warn(fmt::format("tuning database {} is corrupt; ignoring it (re-run apnn tune)", path.string()));
  return json::object();
}

}  // namespace

std::string TuneKey::str() const { return fmt::format("{}|{}|{}|{}|{}", arch, device, spec, shape_bucket, generator); }

std::string shape_bucket(const json& shape) {
  std::string out;
  for (const char* k : {"m", "n", "k", "batch", "in_channels", "height", "width", "out_channels"}) {
    if (!shape.contains(k)) continue;
    static const std::map<std::string, std::string> abbrev = {{"batch", "n"}, {"in_channels", "c"}, {"height", "h"},
                                                              {"width", "w"}, {"out_channels", "o"}};
    const auto a = abbrev.find(k);
    out += fmt::format("{}{}{}", out.empty() ? "" : "_", a == abbrev.end() ? k : a->second,
                       round_up_pow2(shape.at(k).get<int64_t>()));
  }
  return out;
}

TuneKey make_tune_key(const KernelSpec& spec, const std::string& arch, const std::string& device, const json& shape) {
  KernelSpec untiled = spec;
  untiled.tile.reset();
  return {arch, device, to_json(untiled).dump(), shape_bucket(shape), kGeneratorVersion};
}

fs::path TuningDb::default_path() {
  if (const char* p = std::getenv("APNN_TUNING_DB"); p && *p) return p;
  const fs::path root = DiskCache::default_root();
  return root.empty() ? fs::path() : root / "tuning.json";
}

TuningDb::TuningDb(fs::path path) : path_(std::move(path)) {}

std::optional<TuneRecord> TuningDb::lookup(const TuneKey& key) const {
  if (path_.empty()) return std::nullopt;
  const json db = read_db(path_);
  if (!db.contains("entries") || !db["entries"].contains(key.str())) return std::nullopt;
  try {
    const json& e = db["entries"][key.str()];
    TuneRecord r{tile_from_json_unchecked(e.at("tile")), e.at("us").get<double>()};
    return r;
  } catch (const json::exception&) {
    posix::warn(fmt::format("tuning database {}: bad entry for {}; using the heuristic", path_.string(), key.str()));
    return std::nullopt;
  }
}

void TuningDb::record(const TuneKey& key, const TuneRecord& r) {
  if (path_.empty()) throw Error(ErrorKind::Io, "tuning database: no cache directory ($APNN_CACHE_DIR, XDG_CACHE_HOME, HOME)");
  std::error_code ec;
  fs::create_directories(path_.parent_path(), ec);
  posix::FileLock lock;
  if (int err = lock.lock(path_.string() + ".lock"))
    throw Error(ErrorKind::Io, fmt::format("{}: cannot lock ({})", path_.string(), posix::error_text(err)));
  json db = read_db(path_);
  db["version"] = 1;
  if (!db.contains("entries")) db["entries"] = json::object();
  const Tile& t = r.tile;
  db["entries"][key.str()] = {
      {"tile", tile_to_json(t)},
      {"us", r.us}};
  const std::string text = db.dump(1) + "\n";
  if (int err = posix::write_file_atomic(path_, {text.begin(), text.end()}))
    throw Error(ErrorKind::Io, fmt::format("{}: cannot write ({})", path_.string(), posix::error_text(err)));
}

}  // namespace apnn

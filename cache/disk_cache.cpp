#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <tuple>
#include <utility>

#include "apnn/cache.h"
#include "apnn/error.h"
#include "cache/counters.h"
#include "cache/entry_format.h"
#include "cache/posix_file.h"

namespace apnn {
namespace fs = std::filesystem;
namespace {

constexpr uint64_t kDefaultMaxBytes = uint64_t{1} << 30;
constexpr const char* kCountersFile = "counters.json";
constexpr const char* kCountersLock = "counters.lock";
constexpr std::string_view kLockSuffix = ".lock";

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

bool is_bucket_name(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

uint64_t parse_max_bytes(const std::string& s) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);  // digits only, no sign
  if (ec != std::errc() || end != s.data() + s.size())
    throw Error(ErrorKind::InvalidInput, "APNN_CACHE_MAX_BYTES: '" + s + "' is not a decimal byte count");
  return v;
}

}  // namespace

struct DiskCache::EntryFile {
  fs::path path;
  std::string bucket;
  std::optional<CacheKey> key;  // unset for temp and lock files
  uint64_t bytes = 0;
  timespec mtime{};
};

fs::path DiskCache::default_root() {
  if (std::string dir = env("APNN_CACHE_DIR"); !dir.empty()) return dir;
  // The XDG base directory spec says to ignore relative paths.
  if (fs::path xdg = env("XDG_CACHE_HOME"); xdg.is_absolute()) return xdg / "apnn";
  if (std::string home = env("HOME"); !home.empty()) return fs::path(home) / ".cache" / "apnn";
  return {};
}

DiskCache DiskCache::from_environment() {
  std::string cap = env("APNN_CACHE_MAX_BYTES");
  return DiskCache(default_root(), cap.empty() ? kDefaultMaxBytes : parse_max_bytes(cap));
}

DiskCache::DiskCache(fs::path root, uint64_t max_bytes) : root_(std::move(root)), max_bytes_(max_bytes) {
  if (root_.empty()) {
    degrade("none of APNN_CACHE_DIR, XDG_CACHE_HOME, HOME is set");
    return;
  }
  std::error_code ec;
  fs::create_directories(root_, ec);  // also fails (ENOTDIR) when root_ or a parent is a file
  if (ec) {
    degrade(ec.message());
    return;
  }
  // An existing root can still be read-only (permissions, read-only mount): find out now
  // rather than at the first store.
  if (::access(root_.c_str(), W_OK | X_OK) != 0) degrade(posix::error_text(errno));
}

DiskCache::DiskCache(DiskCache&& o) noexcept
    : root_(std::move(o.root_)), max_bytes_(o.max_bytes_), persistent_(o.persistent_.load()),
      counters_(std::exchange(o.counters_, {})) {}  // o's destructor must not flush them again

DiskCache::~DiskCache() {
  try {
    flush_counters();
  } catch (const std::exception& e) {  // a destructor must not throw; counters are not worth dying for
    posix::warn(std::string("cache counters not saved (") + e.what() + ")");
  }
}

void DiskCache::degrade(const std::string& why) {
  if (!persistent_.exchange(false)) return;  // one warning per object
  posix::warn("cache directory " + root_.string() + " is not usable (" + why + "); compiling in memory");
}

fs::path DiskCache::bucket_dir(std::string_view bucket) const {
  if (!is_bucket_name(bucket))
    throw Error(ErrorKind::InvalidInput, "cache bucket '" + std::string(bucket) + "' is not [A-Za-z0-9_]+");
  return root_ / bucket;
}

bool DiskCache::ensure_dir(const fs::path& dir) {
  if (::mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST) return true;
  degrade(posix::error_text(errno));
  return false;
}

std::optional<std::vector<char>> DiskCache::read_entry(const fs::path& file, const CacheKey& key) {
  std::vector<char> bytes;
  struct stat st;
  if (int err = posix::read_file(file, &bytes, &st)) {
    if (err != ENOENT) degrade(posix::error_text(err));
    return std::nullopt;
  }
  std::string why;
  auto decoded = cache_format::decode(bytes, key, &why);
  if (!decoded) {
    posix::warn("cache entry " + file.string() + " is corrupt (" + why + "); recompiling");
    count([](CacheCounters& c) { ++c.corrupt_entries; });
    // Delete only the inode we read: another process may already have published a good entry.
    struct stat now;
    if (::stat(file.c_str(), &now) == 0 && now.st_ino == st.st_ino && now.st_dev == st.st_dev &&
        ::unlink(file.c_str()) != 0 && errno != ENOENT)
      degrade(posix::error_text(errno));
    return std::nullopt;
  }
  count([&](CacheCounters& c) { c.bytes_read += bytes.size(); });
  // Refresh the mtime for LRU eviction. A failure is ignored on purpose: a read-only shared
  // cache still serves hits, only its eviction order suffers.
  (void)::utimensat(AT_FDCWD, file.c_str(), nullptr, 0);
  bytes.erase(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(decoded->payload_offset));
  return bytes;
}

std::optional<std::vector<char>> DiskCache::load(std::string_view bucket, const CacheKey& key) {
  fs::path dir = bucket_dir(bucket);
  std::optional<std::vector<char>> payload;
  if (persistent_) payload = read_entry(dir / cache_format::entry_file_name(key), key);
  count([&](CacheCounters& c) { ++(payload ? c.disk_hits : c.misses); });
  return payload;
}

void DiskCache::store(std::string_view bucket, const CacheKey& key, const std::vector<char>& payload,
                      std::string_view label) {
  fs::path dir = bucket_dir(bucket);
  if (label.size() > UINT32_MAX) throw Error(ErrorKind::InvalidInput, "cache label longer than 4 GiB");
  if (!persistent_ || !ensure_dir(dir)) return;
  fs::path file = dir / cache_format::entry_file_name(key);
  std::vector<char> bytes = cache_format::encode(key, label, payload);
  if (int err = posix::write_file_atomic(file, bytes)) {
    degrade(posix::error_text(err));
    return;
  }
  count([&](CacheCounters& c) { c.bytes_written += bytes.size(); });
  enforce_cap(file);
}

std::vector<char> DiskCache::produce_counted(const std::function<std::vector<char>()>& produce) {
  auto t0 = std::chrono::steady_clock::now();
  std::vector<char> payload = produce();
  std::chrono::duration<double, std::milli> elapsed = std::chrono::steady_clock::now() - t0;
  count([&](CacheCounters& c) {
    c.compile_ms += elapsed.count();
    ++c.compiles;
    ++c.misses;
  });
  return payload;
}

DiskCache::Fetched DiskCache::get_or_create(std::string_view bucket, const CacheKey& key,
                                            std::string_view label,
                                            const std::function<std::vector<char>()>& produce) {
  fs::path dir = bucket_dir(bucket);
  fs::path file = dir / cache_format::entry_file_name(key);
  auto hit = [&](std::vector<char> payload) {
    count([](CacheCounters& c) { ++c.disk_hits; });
    return Fetched{std::move(payload), true};
  };
  if (!persistent_) return {produce_counted(produce), false};
  if (auto payload = read_entry(file, key)) return hit(std::move(*payload));

  posix::FileLock lock;  // released on return and on throw
  if (!ensure_dir(dir)) return {produce_counted(produce), false};
  if (int err = lock.lock(dir / (key.hex() + std::string(kLockSuffix)))) {
    degrade(posix::error_text(err));
    return {produce_counted(produce), false};
  }
  if (auto payload = read_entry(file, key)) return hit(std::move(*payload));
  std::vector<char> payload = produce_counted(produce);
  store(bucket, key, payload, label);
  return {std::move(payload), false};
}

void DiskCache::enforce_cap(const fs::path& keep) {
  std::vector<EntryFile> files;
  if (int err = scan(&files)) {
    degrade(posix::error_text(err));
    return;
  }
  files.erase(std::remove_if(files.begin(), files.end(), [](const EntryFile& f) { return !f.key; }),
              files.end());
  uint64_t total = 0;
  for (const EntryFile& f : files) total += f.bytes;
  if (total <= max_bytes_) return;
  std::sort(files.begin(), files.end(), [](const EntryFile& a, const EntryFile& b) {
    return std::tie(a.mtime.tv_sec, a.mtime.tv_nsec) < std::tie(b.mtime.tv_sec, b.mtime.tv_nsec);
  });
  for (const EntryFile& f : files) {
    if (total <= max_bytes_) break;
    if (f.path == keep) continue;
    if (::unlink(f.path.c_str()) == 0) {
      count([](CacheCounters& c) { ++c.evictions; });
    } else if (errno != ENOENT) {  // ENOENT: another process evicted it first
      degrade(posix::error_text(errno));
      return;
    }
    total -= f.bytes;
  }
}

int DiskCache::scan(std::vector<EntryFile>* out) const {
  auto add = [&](const fs::path& path, const std::string& bucket, std::optional<CacheKey> key) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return errno == ENOENT ? 0 : errno;  // ENOENT: just evicted
    out->push_back({path, bucket, key, static_cast<uint64_t>(st.st_size), st.st_mtim});
    return 0;
  };
  if (root_.empty()) return 0;  // degraded without a directory
  std::vector<std::string> top;
  if (int err = posix::list_dir(root_, &top)) return err == ENOENT || err == ENOTDIR ? 0 : err;
  for (const std::string& bucket : top) {
    const fs::path dir = root_ / bucket;
    if (bucket.find(posix::kTempMarker) != std::string::npos) {  // a crashed counters flush
      if (int err = add(dir, "", std::nullopt)) return err;
      continue;
    }
    if (!is_bucket_name(bucket)) continue;
    std::vector<std::string> names;
    if (int err = posix::list_dir(dir, &names)) {
      if (err == ENOTDIR || err == ENOENT) continue;
      return err;
    }
    for (const std::string& name : names) {
      auto key = cache_format::parse_entry_file_name(name);
      bool stray = name.find(posix::kTempMarker) != std::string::npos || ends_with(name, kLockSuffix);
      if (!key && !stray) continue;  // not ours
      if (int err = add(dir / name, bucket, key)) return err;
    }
  }
  return 0;
}

std::vector<DiskCache::EntryFile> DiskCache::scan_or_throw() const {
  std::vector<EntryFile> files;
  if (int err = scan(&files))
    throw Error(ErrorKind::Io, "cache directory " + root_.string() + ": " + posix::error_text(err));
  return files;
}

std::vector<CacheEntryInfo> DiskCache::list() const {
  std::vector<CacheEntryInfo> infos;
  for (const EntryFile& f : scan_or_throw()) {
    if (!f.key) continue;
    CacheEntryInfo info{f.bucket, *f.key, 0, "", f.mtime.tv_sec, false};
    std::vector<char> bytes;
    std::string why;
    int err = posix::read_file(f.path, &bytes);
    if (err == ENOENT) continue;  // evicted meanwhile
    if (err == 0) {
      if (auto d = cache_format::decode(bytes, *f.key, &why)) {
        info.payload_bytes = d->payload_bytes;
        info.label = std::move(d->label);
        info.valid = true;
      }
    }
    infos.push_back(std::move(info));
  }
  std::sort(infos.begin(), infos.end(), [](const CacheEntryInfo& a, const CacheEntryInfo& b) {
    return std::tie(a.bucket, a.key.hi, a.key.lo) < std::tie(b.bucket, b.key.hi, b.key.lo);
  });
  return infos;
}

uint64_t DiskCache::clear() {
  uint64_t removed = 0;
  // Removing a lock file another process holds would let a third one lock a new inode;
  // clear() is meant for an idle cache, where that cannot happen.
  for (const EntryFile& f : scan_or_throw()) {
    if (::unlink(f.path.c_str()) == 0) removed += f.key ? 1 : 0;
    else if (errno != ENOENT)
      throw Error(ErrorKind::Io, "cache clear: cannot remove " + f.path.string() + ": " +
                                     posix::error_text(errno));
  }
  return removed;
}

uint64_t DiskCache::total_bytes() const {
  uint64_t total = 0;
  for (const EntryFile& f : scan_or_throw()) total += f.key ? f.bytes : 0;
  return total;
}

CacheCounters DiskCache::persisted_counters() const {
  CacheCounters total;
  if (persistent_) total = cache_counters::read_file(root_ / kCountersFile);
  total += counters();
  return total;
}

CacheCounters DiskCache::counters() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  return counters_;
}

void DiskCache::add_counters(const CacheCounters& delta) {
  std::lock_guard<std::mutex> lock(stats_mu_);
  counters_ += delta;
}

void DiskCache::flush_counters() {
  std::lock_guard<std::mutex> stats(stats_mu_);
  if (!persistent_ || cache_counters::is_zero(counters_)) return;
  posix::FileLock lock;
  if (int err = lock.lock(root_ / kCountersLock)) {
    degrade(posix::error_text(err));
    return;
  }
  CacheCounters total = cache_counters::read_file(root_ / kCountersFile);
  total += counters_;
  std::string text = total.to_json().dump(2) + "\n";
  if (int err = posix::write_file_atomic(root_ / kCountersFile, {text.begin(), text.end()})) {
    degrade(posix::error_text(err));
    return;
  }
  counters_ = {};
}

}  // namespace apnn

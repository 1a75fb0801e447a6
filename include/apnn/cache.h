// Disk cache of verified byte blobs, shared by processes. It stores and verifies bytes and
// knows nothing about kernels: callers pick the bucket (e.g. "sm_90a") and the key.
//
// Layout: <root>/<bucket>/<keyhex>.apnnc, one file per entry, plus <keyhex>.lock (per-key
// flock, never deleted while in use) and <root>/counters.json (+ counters.lock).
//
// Entry file format, version 1 (all integers little-endian, no padding):
//   offset  size  field
//        0     8  magic "APNNCACH"
//        8     4  uint32 format version (1)
//       12     4  uint32 label length L
//       16     8  uint64 key.hi
//       24     8  uint64 key.lo
//       32     8  uint64 payload size P
//       40     8  uint64 XXH3-64 of the payload
//       48     L  label (free text, for humans: `apnn cache list`)
//     48+L     P  payload
// A file is valid only if every field checks out and its size is exactly 48 + L + P.
//
// Entries are published atomically (temp file + fsync + rename), so readers never lock;
// get_or_create() serialises producers of one key across processes with flock().
// One DiskCache may be used by several threads: producers of different keys run in
// parallel (each call takes its own flock), counters are guarded.
#pragma once
#include <cstdint>
#include <filesystem>
#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace apnn {

struct CacheKey {
  uint64_t hi = 0, lo = 0;
  std::string hex() const;  // 32 lowercase hex chars: hi then lo
  bool operator==(const CacheKey& o) const { return hi == o.hi && lo == o.lo; }
  bool operator!=(const CacheKey& o) const { return !(*this == o); }
};

// XXH3-128 over the parts, each prefixed by its length (so ("ab","c") != ("a","bc")).
CacheKey hash_key(const std::vector<std::string_view>& parts);
uint64_t checksum64(const void* data, size_t size);  // XXH3-64

struct CacheCounters {  // cumulative
  uint64_t memory_hits = 0, disk_hits = 0, misses = 0, compiles = 0, corrupt_entries = 0,
           evictions = 0, bytes_written = 0, bytes_read = 0;
  double compile_ms = 0, load_ms = 0;
  nlohmann::json to_json() const;
  CacheCounters& operator+=(const CacheCounters& o);
};

struct CacheEntryInfo {
  std::string bucket;
  CacheKey key;                // from the file name; a valid entry's header holds the same
  uint64_t payload_bytes = 0;  // 0 when !valid
  std::string label;
  int64_t mtime_unix = 0;
  bool valid = false;          // header, size and checksum all ok
};

class DiskCache {
 public:
  // $APNN_CACHE_DIR, else $XDG_CACHE_HOME/apnn (if absolute), else $HOME/.cache/apnn;
  // empty when none is set (such a cache degrades to memory-only). Empty variables count as unset.
  static std::filesystem::path default_root();
  // Root as above; cap from $APNN_CACHE_MAX_BYTES (decimal bytes), default 1 GiB.
  // Throws Error(InvalidInput) on a malformed cap.
  static DiskCache from_environment();

  // Creates root if needed. An unusable root is not an error: the cache warns once and
  // degrades to memory-only (persistent() == false).
  DiskCache(std::filesystem::path root, uint64_t max_bytes);
  DiskCache(DiskCache&& o) noexcept;
  DiskCache& operator=(DiskCache&&) = delete;
  DiskCache(const DiskCache&) = delete;
  DiskCache& operator=(const DiskCache&) = delete;
  ~DiskCache();  // flushes counters (errors only warn)

  const std::filesystem::path& root() const { return root_; }
  uint64_t max_bytes() const { return max_bytes_; }
  bool persistent() const { return persistent_; }

  // Verified read; nullopt if absent. A corrupt entry warns once, is counted and deleted, and
  // is never returned. A hit refreshes the entry's mtime (eviction is least-recently-used).
  // Bucket names must match [A-Za-z0-9_]+ (else Error(InvalidInput)), here and below.
  std::optional<std::vector<char>> load(std::string_view bucket, const CacheKey& key);
  // Atomic publish (no-op once degraded), then evicts least-recently-used entries down to the cap.
  void store(std::string_view bucket, const CacheKey& key, const std::vector<char>& payload,
             std::string_view label);

  struct Fetched {
    std::vector<char> payload;
    bool hit;  // came from disk
  };
  // load(); on a miss take the key's lock, load() again (another process may have published),
  // else produce() and store(). If produce() throws, nothing is published and it propagates.
  Fetched get_or_create(std::string_view bucket, const CacheKey& key, std::string_view label,
                        const std::function<std::vector<char>()>& produce);

  // These three throw Error(Io) when the directory cannot be read (a missing root is empty).
  std::vector<CacheEntryInfo> list() const;  // every entry of every bucket, not modified
  uint64_t clear();                           // removes entries, temp and lock files; returns #entries
  uint64_t total_bytes() const;               // file bytes of all entries

  // This object's unflushed counters. The cache counts all but memory_hits and load_ms, which
  // the engine adds with add_counters().
  CacheCounters counters() const;
  void add_counters(const CacheCounters& delta);
  // <root>/counters.json (all flushed processes) plus this object's unflushed counters.
  CacheCounters persisted_counters() const;
  // Adds the local counters into <root>/counters.json under <root>/counters.lock, then zeroes
  // them. Keeps them local if the cache is not persistent or the write fails.
  void flush_counters();

 private:
  struct EntryFile;
  int scan(std::vector<EntryFile>* out) const;  // entries and stray temp/lock files; 0 or errno
  std::vector<EntryFile> scan_or_throw() const;  // Error(Io) instead of an errno
  std::filesystem::path bucket_dir(std::string_view bucket) const;
  bool ensure_dir(const std::filesystem::path& dir);
  std::optional<std::vector<char>> read_entry(const std::filesystem::path& file, const CacheKey& key);
  std::vector<char> produce_counted(const std::function<std::vector<char>()>& produce);
  void enforce_cap(const std::filesystem::path& keep);
  void degrade(const std::string& why);
  template <class F>
  void count(F&& update) {
    std::lock_guard<std::mutex> lock(stats_mu_);
    update(counters_);
  }

  std::filesystem::path root_;
  uint64_t max_bytes_ = 0;
  std::atomic<bool> persistent_{true};
  mutable std::mutex stats_mu_;  // guards counters_
  CacheCounters counters_;
};

}  // namespace apnn

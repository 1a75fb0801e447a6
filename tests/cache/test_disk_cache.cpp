// DiskCache on a healthy directory: round trips, LRU eviction, list/clear, counters, environment.
#include <doctest/doctest.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "apnn/cache.h"
#include "apnn/error.h"
#include "cache/cache_test_util.h"

using apnn::CacheKey;
using apnn::DiskCache;
using apnn::hash_key;
using namespace apnn_test;

namespace {

void set_mtime(const fs::path& p, time_t seconds) {
  const timespec times[2] = {{seconds, 0}, {seconds, 0}};
  REQUIRE(::utimensat(AT_FDCWD, p.c_str(), times, 0) == 0);
}

template <class F>
void check_invalid_input(F&& f) {
  try {
    f();
    FAIL("expected apnn::Error");
  } catch (const apnn::Error& e) {
    CHECK(e.kind() == apnn::ErrorKind::InvalidInput);
  }
}

}  // namespace

TEST_CASE("store then load round-trips the payload") {
  TempDir tmp;
  DiskCache cache(tmp.path(), 1 << 20);
  CHECK(cache.persistent());
  const CacheKey key = hash_key({"k"});
  CHECK_FALSE(cache.load("sm_90a", key));
  std::vector<char> payload(1000);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>(i * 7);
  cache.store("sm_90a", key, payload, "apmm w1 x2");
  auto loaded = cache.load("sm_90a", key);
  REQUIRE(loaded);
  CHECK(*loaded == payload);
  CHECK_FALSE(cache.load("sm_90a", hash_key({"other"})));
  CHECK_FALSE(cache.load("sm_80", key));  // buckets are separate
  cache.store("sm_90a", key, {}, "");    // empty payload, replacing the old one
  CHECK(cache.load("sm_90a", key)->empty());
  CHECK(cache.counters().disk_hits == 2);
  CHECK(cache.counters().misses == 3);
}

TEST_CASE("get_or_create produces once, then hits from disk") {
  TempDir tmp;
  const CacheKey key = hash_key({"k"});
  int calls = 0;
  auto produce = [&] {
    ++calls;
    return bytes_of("cubin");
  };
  {
    DiskCache cache(tmp.path(), 1 << 20);
    auto first = cache.get_or_create("sm_90a", key, "label", produce);
    CHECK_FALSE(first.hit);
    CHECK(str_of(first.payload) == "cubin");
    auto second = cache.get_or_create("sm_90a", key, "label", produce);
    CHECK(second.hit);
    CHECK(str_of(second.payload) == "cubin");
    CHECK(calls == 1);
    CHECK(cache.counters().compiles == 1);
    CHECK(cache.counters().misses == 1);
    CHECK(cache.counters().disk_hits == 1);
    CHECK(cache.counters().bytes_written > 0);
    CHECK(cache.counters().bytes_read == cache.counters().bytes_written);
  }
  DiskCache again(tmp.path(), 1 << 20);  // a new process would see the same
  CHECK(again.get_or_create("sm_90a", key, "label", produce).hit);
  CHECK_FALSE(again.get_or_create("sm_90a", hash_key({"k2"}), "label", produce).hit);
  CHECK(calls == 2);
}

TEST_CASE("a throwing produce() publishes nothing and releases the lock") {
  TempDir tmp;
  DiskCache cache(tmp.path(), 1 << 20);
  const CacheKey key = hash_key({"k"});
  auto fail = []() -> std::vector<char> { throw std::runtime_error("nvrtc failed"); };
  CHECK_THROWS_WITH(cache.get_or_create("sm_90a", key, "", fail), "nvrtc failed");
  CHECK_FALSE(fs::exists(entry_path(tmp.path(), "sm_90a", key)));
  CHECK(files_under(tmp.path()) == std::vector<std::string>{"sm_90a/" + key.hex() + ".lock"});
  int fd = ::open((tmp.path() / "sm_90a" / (key.hex() + ".lock")).c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  CHECK(::flock(fd, LOCK_EX | LOCK_NB) == 0);
  ::close(fd);
  CHECK_FALSE(cache.get_or_create("sm_90a", key, "", [] { return bytes_of("ok"); }).hit);
  CHECK(cache.get_or_create("sm_90a", key, "", fail).hit);
}

TEST_CASE("bucket names must be [A-Za-z0-9_]+") {
  TempDir tmp;
  DiskCache cache(tmp.path(), 1 << 20);
  const CacheKey key = hash_key({"k"});
  for (std::string bad : {"", "..", "sm/90", "sm-90", "sm 90", "sm.90"}) {
    CAPTURE(bad);
    check_invalid_input([&] { cache.load(bad, key); });
    check_invalid_input([&] { cache.store(bad, key, {}, ""); });
    check_invalid_input([&] { cache.get_or_create(bad, key, "", [] { return std::vector<char>(); }); });
  }
  cache.store("Sm_90a_2", key, {}, "");
  CHECK(cache.load("Sm_90a_2", key));
}

TEST_CASE("eviction removes least-recently-used entries; a load refreshes an entry") {
  TempDir tmp;
  const uint64_t entry_bytes = 48 + 100;  // header + 100-byte payload, no label
  DiskCache cache(tmp.path(), 3 * entry_bytes);
  const CacheKey a = hash_key({"a"}), b = hash_key({"b"}), c = hash_key({"c"}), d = hash_key({"d"});
  const std::vector<char> payload(100, 'p');
  cache.store("sm_90a", a, payload, "");
  cache.store("sm_90a", b, payload, "");
  cache.store("sm_80", c, payload, "");  // eviction spans buckets
  CHECK(cache.total_bytes() == 3 * entry_bytes);
  CHECK(cache.counters().evictions == 0);
  // Explicit ages: file timestamps can be too coarse to order stores made within a millisecond.
  set_mtime(entry_path(tmp.path(), "sm_90a", a), 1000);
  set_mtime(entry_path(tmp.path(), "sm_90a", b), 2000);
  set_mtime(entry_path(tmp.path(), "sm_80", c), 3000);
  CHECK(cache.load("sm_90a", a));  // a becomes the most recently used
  cache.store("sm_90a", d, payload, "");
  CHECK(cache.counters().evictions == 1);
  CHECK(cache.load("sm_90a", a));
  CHECK_FALSE(cache.load("sm_90a", b));
  CHECK(cache.load("sm_80", c));
  CHECK(cache.load("sm_90a", d));
  CHECK(cache.total_bytes() == 3 * entry_bytes);

  // An entry larger than the cap evicts everything else but is itself kept.
  const CacheKey big = hash_key({"big"});
  cache.store("sm_90a", big, std::vector<char>(4 * entry_bytes, 'b'), "");
  CHECK(cache.counters().evictions == 4);
  CHECK(cache.load("sm_90a", big));
  CHECK(cache.list().size() == 1);
}

TEST_CASE("list reports every entry; clear removes entries and stray files") {
  TempDir tmp;
  DiskCache cache(tmp.path(), 1 << 20);
  const CacheKey a = hash_key({"a"}), b = hash_key({"b"}), c = hash_key({"c"});
  cache.store("sm_90a", a, bytes_of("aaaa"), "apmm a");
  cache.get_or_create("sm_90a", b, "apmm b", [] { return bytes_of("bb"); });  // leaves b's lock file
  cache.store("sm_80", c, bytes_of("c"), "apconv c");
  std::string damaged = read_text(entry_path(tmp.path(), "sm_80", c));
  damaged.back() ^= 1;
  write_text(entry_path(tmp.path(), "sm_80", c), damaged);
  write_text(tmp.path() / "sm_90a" / (a.hex() + ".apnnc.tmp.Ab12Cd"), "half");  // a crashed writer
  write_text(tmp.path() / "sm_90a" / "notes.txt", "not the cache's");

  const auto entries = cache.list();
  REQUIRE(entries.size() == 3);
  CHECK(entries[0].bucket == "sm_80");
  CHECK(entries[0].key == c);
  CHECK_FALSE(entries[0].valid);
  for (size_t i = 1; i < 3; ++i) {
    const auto& e = entries[i];
    CHECK(e.bucket == "sm_90a");
    CHECK(e.valid);
    CHECK(e.label == (e.key == a ? "apmm a" : "apmm b"));
    CHECK(e.payload_bytes == (e.key == a ? 4u : 2u));
    CHECK(std::abs(e.mtime_unix - static_cast<int64_t>(::time(nullptr))) < 60);
  }
  CHECK(cache.total_bytes() == (48 + 6 + 4) + (48 + 6 + 2) + (48 + 8 + 1));
  CHECK(cache.counters().corrupt_entries == 0);  // list() only looks

  CHECK(cache.clear() == 3);
  CHECK(cache.list().empty());
  CHECK(cache.total_bytes() == 0);
  CHECK(files_under(tmp.path()) == std::vector<std::string>{"sm_90a/notes.txt"});
}

TEST_CASE("flush_counters accumulates the counters of several objects") {
  TempDir tmp;
  {
    DiskCache one(tmp.path(), 1 << 20);
    {
      apnn::CacheCounters d;
      d.compiles = 2;
      one.add_counters(d);
    }
    {
      apnn::CacheCounters d;
      d.compile_ms = 1.5;
      one.add_counters(d);
    }
    one.flush_counters();
    CHECK(one.counters().compiles == 0);  // flushed counters are zeroed locally
    DiskCache two(tmp.path(), 1 << 20);
    {
      apnn::CacheCounters d;
      d.compiles = 3;
      two.add_counters(d);
    }
    {
      apnn::CacheCounters d;
      d.memory_hits = 4;
      two.add_counters(d);
    }
    {
      apnn::CacheCounters d;
      d.load_ms = 2;
      two.add_counters(d);
    }
    two.flush_counters();
    {
      apnn::CacheCounters d;
      d.evictions = 7;
      one.add_counters(d);
    }  // flushed by the destructor
    DiskCache moved(std::move(one));  // the moved-from object must not flush them twice
  }
  DiskCache reader(tmp.path(), 1 << 20);
  {
      apnn::CacheCounters d;
      d.disk_hits = 5;
      reader.add_counters(d);
    }  // unflushed counters are included
  const apnn::CacheCounters total = reader.persisted_counters();
  CHECK(total.compiles == 5);
  CHECK(total.memory_hits == 4);
  CHECK(total.evictions == 7);
  CHECK(total.disk_hits == 5);
  CHECK(total.compile_ms == doctest::Approx(1.5));
  CHECK(total.load_ms == doctest::Approx(2));
  const auto json = nlohmann::json::parse(read_text(tmp.path() / "counters.json"));
  CHECK(json.at("compiles") == 5);
  CHECK(json.at("disk_hits") == 0);
  CHECK(json.size() == 10);
}

TEST_CASE("a corrupt counters.json counts as zeros, with a warning") {
  TempDir tmp;
  write_text(tmp.path() / "counters.json", "{\"compiles\": ");
  DiskCache cache(tmp.path(), 1 << 20);
  {
      apnn::CacheCounters d;
      d.misses = 1;
      cache.add_counters(d);
    }
  {
    StderrCapture err(tmp.path() / "stderr.txt");
    CHECK(cache.persisted_counters().misses == 1);
    CHECK(err.warnings() == 1);
    CHECK(count_lines_with(err.text(), "counters.json is corrupt") == 1);
    cache.flush_counters();  // rewrites the file
  }
  CHECK(nlohmann::json::parse(read_text(tmp.path() / "counters.json")).at("misses") == 1);
  write_text(tmp.path() / "counters.json", "{\"compiles\": -3}");  // valid JSON, wrong type
  StderrCapture err(tmp.path() / "stderr.txt");
  CHECK(cache.persisted_counters().compiles == 0);
  CHECK(err.warnings() == 1);
}

TEST_CASE("the root comes from APNN_CACHE_DIR, XDG_CACHE_HOME or HOME") {
  EnvGuard env;
  env.set("APNN_CACHE_DIR", "/a/b");
  env.set("XDG_CACHE_HOME", "/xdg");
  env.set("HOME", "/home/u");
  CHECK(DiskCache::default_root() == "/a/b");
  env.set("APNN_CACHE_DIR", "");  // empty counts as unset
  CHECK(DiskCache::default_root() == "/xdg/apnn");
  env.unset("APNN_CACHE_DIR");
  env.set("XDG_CACHE_HOME", "relative");  // the XDG spec says to ignore it
  CHECK(DiskCache::default_root() == "/home/u/.cache/apnn");
  env.unset("XDG_CACHE_HOME");
  CHECK(DiskCache::default_root() == "/home/u/.cache/apnn");
  env.unset("HOME");
  CHECK(DiskCache::default_root().empty());
  TempDir tmp;
  StderrCapture err(tmp.path() / "stderr.txt");
  DiskCache none = DiskCache::from_environment();
  CHECK_FALSE(none.persistent());
  CHECK(err.warnings() == 1);
}

TEST_CASE("from_environment reads APNN_CACHE_MAX_BYTES") {
  TempDir tmp;
  EnvGuard env;
  env.set("APNN_CACHE_DIR", (tmp.path() / "cache").string());
  env.unset("APNN_CACHE_MAX_BYTES");
  DiskCache by_default = DiskCache::from_environment();
  CHECK(by_default.root() == tmp.path() / "cache");
  CHECK(by_default.persistent());
  CHECK(by_default.max_bytes() == (uint64_t{1} << 30));
  env.set("APNN_CACHE_MAX_BYTES", "12345");
  CHECK(DiskCache::from_environment().max_bytes() == 12345);
  env.set("APNN_CACHE_MAX_BYTES", "18446744073709551615");
  CHECK(DiskCache::from_environment().max_bytes() == UINT64_MAX);
  for (std::string bad : {"12k", "-1", " 5", "1e9", "18446744073709551616", "0x10"}) {
    CAPTURE(bad);
    env.set("APNN_CACHE_MAX_BYTES", bad);
    check_invalid_input([] { DiskCache::from_environment(); });
  }
}

TEST_CASE("one DiskCache shared by threads: each key produced once, counters exact") {
  TempDir tmp;
  DiskCache cache(tmp.path(), 1 << 20);
  std::atomic<int> produced{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < 4; ++t)
    pool.emplace_back([&] {
      for (int k = 0; k < 6; ++k) {
        const apnn::CacheKey key = apnn::hash_key({"thread-test", std::to_string(k)});
        const auto f = cache.get_or_create("sm_90a", key, "label", [&] {
          ++produced;
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
          return std::vector<char>(100, static_cast<char>(k));
        });
        CHECK(f.payload == std::vector<char>(100, static_cast<char>(k)));
      }
    });
  for (auto& t : pool) t.join();
  CHECK(produced == 6);  // flock excludes threads of one process too (one open file each)
  const apnn::CacheCounters c = cache.counters();
  CHECK(c.compiles == 6);
  CHECK(c.disk_hits == 18);
}

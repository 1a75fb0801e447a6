// DiskCache under damage: corrupt entries are never returned; unusable directories degrade.
#include <doctest/doctest.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <csignal>
#include <functional>

#include "apnn/cache.h"
#include "cache/cache_test_util.h"

using apnn::CacheKey;
using apnn::DiskCache;
using apnn::hash_key;
using namespace apnn_test;

namespace {

struct Damage {
  const char* name;
  std::function<void(std::string& file, const std::string& other_keys_file)> apply;
};

const Damage kDamages[] = {
    {"flipped payload byte", [](std::string& f, auto&) { f.back() ^= 0x20; }},
    {"truncated", [](std::string& f, auto&) { f.pop_back(); }},
    {"truncated header", [](std::string& f, auto&) { f.resize(20); }},
    {"extra trailing byte", [](std::string& f, auto&) { f += '!'; }},
    {"bad magic", [](std::string& f, auto&) { f[0] = 'X'; }},
    {"unknown format version", [](std::string& f, auto&) { f[8] = 2; }},
    {"huge payload size", [](std::string& f, auto&) { f[39] = '\x7f'; }},
    {"zero-length file", [](std::string& f, auto&) { f.clear(); }},
    {"another key's entry", [](std::string& f, const std::string& other) { f = other; }},
};

}  // namespace

TEST_CASE("a damaged entry warns, is not returned, and is replaced by a valid one") {
  for (const Damage& damage : kDamages) {
    for (bool via_get_or_create : {false, true}) {
      CAPTURE(damage.name);
      CAPTURE(via_get_or_create);
      TempDir tmp;
      DiskCache cache(tmp.path(), 1 << 20);
      const CacheKey key = hash_key({"k"}), other = hash_key({"other"});
      cache.store("sm_90a", key, bytes_of("good payload"), "label");
      cache.store("sm_90a", other, bytes_of("good payload"), "label");
      const fs::path file = entry_path(tmp.path(), "sm_90a", key);
      std::string bytes = read_text(file);
      damage.apply(bytes, read_text(entry_path(tmp.path(), "sm_90a", other)));
      write_text(file, bytes);

      StderrCapture err(tmp.path() / "stderr.txt");
      if (via_get_or_create) {
        int calls = 0;
        auto fetched = cache.get_or_create("sm_90a", key, "label", [&] {
          ++calls;
          return bytes_of("recompiled");
        });
        CHECK_FALSE(fetched.hit);
        CHECK(calls == 1);
        CHECK(str_of(fetched.payload) == "recompiled");
        CHECK(str_of(*cache.load("sm_90a", key)) == "recompiled");
      } else {
        CHECK_FALSE(cache.load("sm_90a", key));
        CHECK_FALSE(fs::exists(file));  // deleted, so the next reader recompiles without a warning
      }
      CHECK(cache.counters().corrupt_entries == 1);
      CHECK(err.warnings() == 1);
      const std::string warning = "apnn: warning: cache entry " + file.string() + " is corrupt (";
      CHECK(count_lines_with(err.text(), warning) == 1);
      CHECK(cache.persistent());
    }
  }
}

namespace {

void check_degraded_cache_still_compiles(const fs::path& root, const fs::path& stderr_file) {
  StderrCapture err(stderr_file);
  DiskCache cache(root, 1 << 20);
  CHECK_FALSE(cache.persistent());
  const CacheKey key = hash_key({"k"});
  int calls = 0;
  auto produce = [&] {
    ++calls;
    return bytes_of("in memory");
  };
  for (int i = 0; i < 2; ++i) {
    auto fetched = cache.get_or_create("sm_90a", key, "", produce);
    CHECK_FALSE(fetched.hit);
    CHECK(str_of(fetched.payload) == "in memory");
  }
  cache.store("sm_90a", key, bytes_of("x"), "");
  CHECK_FALSE(cache.load("sm_90a", key));
  cache.flush_counters();
  CHECK(calls == 2);
  CHECK(cache.counters().compiles == 2);
  CHECK(cache.list().empty());
  CHECK(err.warnings() == 1);
  const std::string warning = "apnn: warning: cache directory " + root.string() + " is not usable (";
  CHECK(count_lines_with(err.text(), warning) == 1);
  CHECK(count_lines_with(err.text(), "); compiling in memory") == 1);
}

}  // namespace

TEST_CASE("a cache directory that cannot be created degrades to memory-only") {
  TempDir tmp;
  write_text(tmp.path() / "file", "a regular file");  // blocks mkdir even for root
  check_degraded_cache_still_compiles(tmp.path() / "file" / "sub", tmp.path() / "stderr.txt");
  CHECK(files_under(tmp.path()).size() == 2);  // file and stderr.txt
}

TEST_CASE("a read-only cache directory degrades to memory-only") {
  if (::geteuid() == 0) {
    MESSAGE("running as root, where mode 0555 does not stop writes: covered by the uncreatable case");
    return;
  }
  TempDir tmp;
  const fs::path ro = tmp.path() / "ro";
  fs::create_directory(ro);
  fs::permissions(ro, fs::perms(0555));
  check_degraded_cache_still_compiles(ro, tmp.path() / "stderr.txt");  // exists, read-only
  check_degraded_cache_still_compiles(ro / "sub", tmp.path() / "stderr.txt");  // cannot be created
  CHECK(files_under(ro).empty());
}

TEST_CASE("a failing write degrades and leaves no temp file behind") {
  TempDir tmp;
  const fs::path root = tmp.path() / "cache", log = tmp.path() / "stderr.txt";
  fs::create_directories(root);  // before the file size limit
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // The child writes under a 512-byte file size limit (room for the captured warning), so
    // writing the 1048-byte entry fails with EFBIG.
    int ok = 0;
    {
      StderrCapture err(log);
      const rlimit limit{512, 512};
      std::signal(SIGXFSZ, SIG_IGN);
      if (::setrlimit(RLIMIT_FSIZE, &limit) == 0) {
        DiskCache cache(root, 1 << 20);
        auto produce = [] { return std::vector<char>(1000, 'x'); };
        ok = cache.persistent() && !cache.get_or_create("sm_90a", hash_key({"k"}), "", produce).hit &&
             !cache.persistent() && !cache.get_or_create("sm_90a", hash_key({"k"}), "", produce).hit &&
             cache.counters().compiles == 2;
      }
    }
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  const std::string text = read_text(log);
  CAPTURE(text);
  CHECK(count_lines_with(text, "apnn: warning: ") == 1);
  CHECK(count_lines_with(text, "is not usable (File too large); compiling in memory") == 1);
  const CacheKey key = hash_key({"k"});
  CHECK(files_under(root) == std::vector<std::string>{"sm_90a/" + key.hex() + ".lock"});
}

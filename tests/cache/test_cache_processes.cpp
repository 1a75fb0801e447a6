// Several processes sharing one cache: each key is produced once, and a producer that dies
// while holding a key's lock does not block the others.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <functional>
#include <thread>

#include "apnn/cache.h"
#include "cache/cache_test_util.h"

using apnn::CacheKey;
using apnn::DiskCache;
using apnn::hash_key;
using namespace apnn_test;

namespace {

// Appends one line with a single O_APPEND write, so lines of concurrent processes stay whole.
void append_line(const fs::path& log, const std::string& line) {
  int fd = ::open(log.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd < 0) ::_exit(3);
  const std::string text = line + "\n";
  if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) ::_exit(3);
  ::close(fd);
}

std::vector<char> payload_for(const std::string& name) { return bytes_of("cubin of " + name); }

// Runs body in a child process; the child exits 0 if body returns true. alarm() turns a
// deadlock into a failure instead of a hung test.
pid_t spawn(const std::function<bool()>& body) {
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::alarm(10);
  bool ok = false;
  try {
    ok = body();
  } catch (...) {
  }
  ::_exit(ok ? 0 : 1);
}

bool exited_ok(pid_t pid) {
  int status = 0;
  return ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// A producer that logs its call, takes a while (so other processes pile up on the lock) and
// returns the deterministic payload for name.
std::function<std::vector<char>()> slow_producer(const fs::path& log, const std::string& name) {
  return [log, name] {
    append_line(log, name);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return payload_for(name);
  };
}

void check_only_valid_entries(const fs::path& root, size_t expected) {
  DiskCache cache(root, 1 << 20);
  const auto entries = cache.list();
  CHECK(entries.size() == expected);
  CHECK(std::all_of(entries.begin(), entries.end(), [](const auto& e) { return e.valid; }));
  for (const std::string& f : files_under(root)) {
    CAPTURE(f);
    CHECK(f.find(".tmp.") == std::string::npos);
  }
}

}  // namespace

TEST_CASE("4 processes racing on 3 keys produce each key exactly once") {
  TempDir tmp;
  const fs::path root = tmp.path() / "cache", log = tmp.path() / "produced.log";
  const std::vector<std::string> names = {"k0", "k1", "k2"};
  int start[2];
  REQUIRE(::pipe(start) == 0);
  std::vector<pid_t> children;
  for (int c = 0; c < 4; ++c) {
    children.push_back(spawn([&, c] {
      ::close(start[1]);
      char byte;
      if (::read(start[0], &byte, 1) != 0) return false;  // EOF: every child starts at once
      DiskCache cache(root, 1 << 20);
      for (size_t i = 0; i < names.size(); ++i) {
        const std::string& name = names[(i + static_cast<size_t>(c)) % names.size()];
        auto fetched = cache.get_or_create("sm_90a", hash_key({name}), name, slow_producer(log, name));
        if (fetched.payload != payload_for(name)) return false;
      }
      return true;
    }));
    REQUIRE(children.back() > 0);
  }
  ::close(start[0]);
  ::close(start[1]);
  for (pid_t pid : children) CHECK(exited_ok(pid));

  const std::string produced = read_text(log);
  for (const std::string& name : names) CHECK(count_lines_with(produced, name) == 1);
  check_only_valid_entries(root, names.size());
  // Every child flushed its counters on exit, under the counters lock.
  const apnn::CacheCounters total = DiskCache(root, 1 << 20).persisted_counters();
  CHECK(total.compiles == 3);
  CHECK(total.misses == 3);
  CHECK(total.disk_hits == 4 * 3 - 3);
}

TEST_CASE("a producer killed while holding the lock does not block the others") {
  TempDir tmp;
  const fs::path root = tmp.path() / "cache", log = tmp.path() / "produced.log";
  const CacheKey key = hash_key({"k"});
  pid_t stuck = spawn([&] {
    DiskCache cache(root, 1 << 20);
    cache.get_or_create("sm_90a", key, "", [&]() -> std::vector<char> {
      append_line(log, "stuck");
      ::pause();  // holds the lock until killed
      return {};
    });
    return false;
  });
  REQUIRE(stuck > 0);
  for (int i = 0; i < 500 && read_text(log).empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(read_text(log) == "stuck\n");

  std::vector<pid_t> waiters;
  for (int c = 0; c < 2; ++c) {
    waiters.push_back(spawn([&] {
      DiskCache cache(root, 1 << 20);
      auto fetched = cache.get_or_create("sm_90a", key, "", slow_producer(log, "fresh"));
      return fetched.payload == payload_for("fresh");
    }));
    REQUIRE(waiters.back() > 0);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  for (pid_t pid : waiters) CHECK(::waitpid(pid, nullptr, WNOHANG) == 0);  // blocked on the lock

  REQUIRE(::kill(stuck, SIGKILL) == 0);
  int status = 0;
  REQUIRE(::waitpid(stuck, &status, 0) == stuck);
  CHECK(WIFSIGNALED(status));
  for (pid_t pid : waiters) CHECK(exited_ok(pid));
  CHECK(count_lines_with(read_text(log), "fresh") == 1);  // one waiter produced, the other hit
  check_only_valid_entries(root, 1);
}

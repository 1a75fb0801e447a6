// Helpers shared by the cache tests: a fresh temp dir per test, stderr capture, env overrides.
#pragma once
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "apnn/cache.h"
#include "test_util.h"

namespace apnn_test {
namespace fs = std::filesystem;

inline std::vector<char> bytes_of(std::string_view s) { return {s.begin(), s.end()}; }
inline std::string str_of(const std::vector<char>& v) { return {v.begin(), v.end()}; }

inline std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_text(const fs::path& p, std::string_view s) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(s.data(), static_cast<std::streamsize>(s.size()));
}

inline size_t count_lines_with(const std::string& text, std::string_view needle) {
  size_t n = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) n += line.find(needle) != std::string::npos;
  return n;
}

// Every file name under dir, recursively, relative to dir.
inline std::vector<std::string> files_under(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (!e.is_directory()) out.push_back(fs::relative(e.path(), dir).string());
  return out;
}

// Tests make directories read-only: ScratchDir makes them removable again first.
class TempDir : public ScratchDir {
 public:
  TempDir() : ScratchDir("apnn-cache-test") {}
  fs::path operator/(const std::string& s) const { return path() / s; }
};

// Redirects fd 2 into a file for the object's lifetime; text() returns what was written.
class StderrCapture {
 public:
  explicit StderrCapture(fs::path file) : file_(std::move(file)) {
    std::fflush(stderr);
    saved_ = ::dup(2);
    int fd = ::open(file_.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (saved_ < 0 || fd < 0 || ::dup2(fd, 2) < 0) std::abort();
    ::close(fd);
  }
  ~StderrCapture() {
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
  }
  std::string text() const {
    std::fflush(stderr);
    return read_text(file_);
  }
  size_t warnings() const { return count_lines_with(text(), "apnn: warning: "); }

 private:
  fs::path file_;
  int saved_ = -1;
};

// Sets or unsets environment variables; restores the previous values on destruction.
class EnvGuard {
 public:
  ~EnvGuard() {
    for (const auto& [name, value] : saved_) {
      if (value) ::setenv(name.c_str(), value->c_str(), 1);
      else ::unsetenv(name.c_str());
    }
  }
  void set(const std::string& name, const std::string& value) {
    remember(name);
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  void unset(const std::string& name) {
    remember(name);
    ::unsetenv(name.c_str());
  }

 private:
  void remember(const std::string& name) {
    if (saved_.count(name)) return;
    const char* v = std::getenv(name.c_str());
    saved_[name] = v ? std::optional<std::string>(v) : std::nullopt;
  }
  std::map<std::string, std::optional<std::string>> saved_;
};

inline fs::path entry_path(const fs::path& root, const std::string& bucket, const apnn::CacheKey& key) {
  return root / bucket / (key.hex() + ".apnnc");
}

}  // namespace apnn_test

// Helpers for the .npy tests: a scratch directory, raw file bytes, and error expectations.
#pragma once
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "apnn/error.h"

namespace npy_test {

// A fresh directory under the system temp dir, removed with everything in it.
class ScratchDir {
 public:
  ScratchDir() {
    std::random_device rd;
    dir_ = std::filesystem::temp_directory_path() / ("apnn-npy-test-" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(dir_);
  }
  ~ScratchDir() { std::filesystem::remove_all(dir_); }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A .npy file by hand: magic, version major.0, little-endian header length, header text, data.
inline std::string npy_bytes(const std::string& header, const std::string& data, int major = 1) {
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  const int length_size = major == 1 ? 2 : 4;
  for (int i = 0; i < length_size; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

// Runs f, which must throw apnn::Error of `kind` with a one-line message that starts with
// "<path>: " and contains `fragment`.
template <class F>
void check_error(F&& f, apnn::ErrorKind kind, const std::string& path, const std::string& fragment) {
  try {
    f();
    FAIL("no apnn::Error thrown; expected one containing: " << fragment);
  } catch (const apnn::Error& e) {
    const std::string msg = e.what();
    INFO("message: " << msg);
    CHECK(e.kind() == kind);
    CHECK(msg.rfind(path + ": ", 0) == 0);
    CHECK(msg.find('\n') == std::string::npos);
    CHECK(msg.find(fragment) != std::string::npos);
  }
}

}  // namespace npy_test

// Small helpers shared by the test suites.
#pragma once
#include <atomic>
#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

// Calls fn(i) for i in [0, n) on `threads` threads (independent jobs, e.g. NVRTC compiles).
inline void parallel_for(size_t n, unsigned threads, const std::function<void(size_t)>& fn) {
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (size_t i; (i = next++) < n;) fn(i);
    });
  for (auto& t : pool) t.join();
}

inline bool contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Kernel entries (*.apnnc) under a cache directory; 0 when it does not exist.
inline size_t cache_entries(const std::filesystem::path& cache) {
  size_t n = 0;
  std::error_code ec;
  if (!std::filesystem::exists(cache)) return 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(cache, ec))
    if (e.path().extension() == ".apnnc") ++n;
  return n;
}


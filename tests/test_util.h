// Small helpers shared by the test suites.
#pragma once
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

inline bool contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
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


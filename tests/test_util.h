// Small helpers shared by the test suites.
#pragma once
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

inline bool contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

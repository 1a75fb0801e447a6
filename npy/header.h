// The .npy header: a Python dict literal {'descr': ..., 'fortran_order': ..., 'shape': (...)}.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace apnn::npy {

struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// Parses the dict text that follows the preamble (trailing spaces and '\n' allowed). Accepts
// what numpy's own reader accepts for these three keys; anything else is Error(InvalidInput).
Header parse_header(std::string_view text, const std::string& path);

// Elements in `shape`, checked: no negative dimension, and the byte size fits int64.
int64_t element_count(const std::vector<int64_t>& shape, int element_size, const std::string& path);

// The dict text exactly as numpy writes it, padding and final '\n' included, for a header
// that starts `preamble_size` bytes into the file (so the data starts 64-byte aligned).
std::string format_header(const Header& h, size_t preamble_size);

}  // namespace apnn::npy

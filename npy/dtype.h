// The integer dtypes a .npy descr can name ("<i4", ">u2", "|b1", ...) and their byte layout.
#pragma once
#include <cstdint>
#include <string>

namespace apnn::npy {

struct IntDType {
  char kind = 'i';  // 'b' bool, 'i' signed, 'u' unsigned
  int size = 4;     // bytes: 1, 2, 4 or 8
  bool big_endian = false;

  // The descr numpy itself writes for this dtype: '|' for one byte, else '<' or '>'.
  std::string descr() const;
  bool fits(int64_t v) const;
  // The raw bits of one element, zero-extended; the caller interprets them by kind.
  uint64_t load(const unsigned char* p) const;
  void store(int64_t v, unsigned char* p) const;
};

// Parses an integer descr; anything else is Error(InvalidInput) naming the path.
IntDType parse_int_dtype(const std::string& descr, const std::string& path);

}  // namespace apnn::npy

// How a p-bit operand value is spread over 1-bit planes.
//
// Every encoding is an affine map of its plane bits b_s:
//     value = sum_s alpha_s * b_s + beta
//   unsigned: alpha_s = 2^s,                      beta = 0          (0 .. 2^p-1)
//   signed:   alpha_s = 2^s, alpha_{p-1} = -2^{p-1}, beta = 0      (two's complement)
//   pm1:      alpha_s = 2^{s+1},                  beta = -(2^p-1)   (odd values, each plane +-1)
// so a W.X^T product reduces to AND+popcount products of planes plus row/column
// sums (the "corrections"), which is what lets every encoding run on AND only.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace apnn {

enum class Encoding { Unsigned, Pm1, Signed };

inline constexpr int kMaxBits = 8;

inline const char* encoding_name(Encoding e) {
  switch (e) {
    case Encoding::Unsigned: return "unsigned";
    case Encoding::Pm1: return "pm1";
    case Encoding::Signed: return "signed";
  }
  return "?";
}

inline bool parse_encoding(std::string_view s, Encoding* out) {
  if (s == "unsigned") { *out = Encoding::Unsigned; return true; }
  if (s == "pm1") { *out = Encoding::Pm1; return true; }
  if (s == "signed") { *out = Encoding::Signed; return true; }
  return false;
}

struct OperandFormat {
  int bits = 1;  // 1..8
  Encoding enc = Encoding::Unsigned;

  int64_t min_value() const {
    switch (enc) {
      case Encoding::Unsigned: return 0;
      case Encoding::Pm1: return -((int64_t{1} << bits) - 1);
      case Encoding::Signed: return -(int64_t{1} << (bits - 1));
    }
    return 0;
  }
  int64_t max_value() const {
    switch (enc) {
      case Encoding::Unsigned: return (int64_t{1} << bits) - 1;
      case Encoding::Pm1: return (int64_t{1} << bits) - 1;
      case Encoding::Signed: return (int64_t{1} << (bits - 1)) - 1;
    }
    return 0;
  }
  // pm1 values are the odd integers of the range only.
  bool is_valid(int64_t v) const {
    if (v < min_value() || v > max_value()) return false;
    return enc != Encoding::Pm1 || (v & 1) != 0;
  }
  // The plane bits of a valid value: bit s of the result is b_s.
  uint32_t code(int64_t v) const {
    const uint32_t mask = (1u << bits) - 1;
    switch (enc) {
      case Encoding::Unsigned: return static_cast<uint32_t>(v) & mask;
      case Encoding::Signed: return static_cast<uint32_t>(v) & mask;
      case Encoding::Pm1: return static_cast<uint32_t>((v + static_cast<int64_t>(mask)) / 2) & mask;
    }
    return 0;
  }
  int64_t plane_weight(int s) const {  // alpha_s
    switch (enc) {
      case Encoding::Unsigned: return int64_t{1} << s;
      case Encoding::Signed: return s == bits - 1 ? -(int64_t{1} << s) : (int64_t{1} << s);
      case Encoding::Pm1: return int64_t{1} << (s + 1);
    }
    return 0;
  }
  int64_t offset() const {  // beta
    return enc == Encoding::Pm1 ? -((int64_t{1} << bits) - 1) : 0;
  }
  std::string describe() const { return std::to_string(bits) + "-bit " + encoding_name(enc); }
};

}  // namespace apnn

// Value checks of user operands against their encodings, before anything reaches the GPU.
#pragma once
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "apnn/encoding.h"
#include "apnn/error.h"

namespace apnn {

inline std::string allowed_values(const OperandFormat& f) {
  return fmt::format("{}integers in {}..{}", f.enc == Encoding::Pm1 ? "odd " : "", f.min_value(), f.max_value());
}

// Throws Error(InvalidInput) naming the operand, the first bad (row, col) and its value.
template <class T>
void check_operand_values(const char* name, const OperandFormat& f, const T* v, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows * cols; ++i)
    if (!f.is_valid(static_cast<int64_t>(v[i])))
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("{}: value {} at index ({}, {}) is outside {} ({})", name, static_cast<int64_t>(v[i]),
                              i / cols, i % cols, f.describe(), allowed_values(f)));
}

}  // namespace apnn

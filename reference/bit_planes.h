// Operand rows split into 1-bit planes, packed as the GPU kernels pack them.
#pragma once
#include <cstdint>
#include <vector>

#include "apnn/encoding.h"

namespace apnn::reference {

// Plane s of row r holds bit s of code(value[r][k]) at bit k%64 of word k/64, which is the
// GPU's K-major 32-bit layout read two words at a time. Rows are zero-padded to a multiple of
// 128 bits; padding bits are 0 in every plane, so they add nothing to any popcount.
class BitPlanes {
 public:
  static constexpr int64_t kRowAlignBits = 128;

  // Throws Error(InvalidInput) naming `who` and `name` for a value not valid in `f`.
  BitPlanes(const OperandFormat& f, const int16_t* values, int64_t rows, int64_t K, const char* who,
            const char* name);

  int bits() const { return bits_; }
  int64_t words_per_row() const { return words_per_row_; }
  const uint64_t* row(int plane, int64_t r) const {
    return words_.data() + (plane * rows_ + r) * words_per_row_;
  }

 private:
  int bits_;
  int64_t rows_;
  int64_t words_per_row_;
  std::vector<uint64_t> words_;  // [plane][row][word]
};

}  // namespace apnn::reference

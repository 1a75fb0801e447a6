#include "reference/bit_planes.h"

#include <string>

#include "apnn/error.h"

namespace apnn::reference {

BitPlanes::BitPlanes(const OperandFormat& f, const int16_t* values, int64_t rows, int64_t K, const char* who,
                     const char* name)
    : bits_(f.bits),
      rows_(rows),
      words_per_row_((K + kRowAlignBits - 1) / kRowAlignBits * (kRowAlignBits / 64)),
      words_(static_cast<size_t>(f.bits * rows * words_per_row_)) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < K; ++k) {
      const int16_t v = values[r * K + k];
      if (!f.is_valid(v))
        throw Error(ErrorKind::InvalidInput, std::string(who) + ": " + name + "[" + std::to_string(r) + "][" +
                                                 std::to_string(k) + "] = " + std::to_string(v) +
                                                 " is not a valid " + f.describe() + " value");
      const uint32_t code = f.code(v);
      for (int s = 0; s < bits_; ++s)
        words_[(s * rows + r) * words_per_row_ + k / 64] |= uint64_t{(code >> s) & 1u} << (k % 64);
    }
  }
}

}  // namespace apnn::reference

#include "apnn/reference.h"

#include <random>

#include "reference/checks.h"

namespace apnn {

std::vector<int16_t> random_operand(const OperandFormat& f, size_t count, uint64_t seed) {
  // Every encoding maps its 2^bits codes one-to-one onto its valid values, so a uniform code
  // (the top bits of one 64-bit draw) is a uniform valid value; the value is the encoding's
  // affine map sum_s alpha_s b_s + beta of the code's bits.
  reference::check_format("random_operand", f);
  std::mt19937_64 rng(seed);
  std::vector<int16_t> out(count);
  for (auto& v : out) {
    const uint64_t code = rng() >> (64 - f.bits);
    int64_t value = f.offset();
    for (int s = 0; s < f.bits; ++s) value += f.plane_weight(s) * static_cast<int64_t>((code >> s) & 1);
    v = static_cast<int16_t>(value);
  }
  return out;
}

}  // namespace apnn

// The host side of templates/fast_div.cuh: the multiply-shift constants of a division by a
// launch-wide divisor, passed to kernels inside their parameter structs (the layout mirrors
// apnn::FastDiv there: two u32).
#pragma once
#include <cstdint>

namespace apnn {

struct FastDivArgs {
  uint32_t mul = 1, shr = 0;  // divisor 1
};

// Constants for dividing 0 <= n < 2^31 by d; Error(InvalidInput) unless 1 <= d < 2^31.
FastDivArgs fast_div(int64_t d);

// What the kernel computes with them (tests compare it with n / d).
inline uint32_t fast_div_apply(const FastDivArgs& f, uint32_t n) {
  const uint32_t hi = static_cast<uint32_t>((static_cast<uint64_t>(n) * f.mul) >> 32);
  return (hi + n) >> f.shr;
}

}  // namespace apnn

#include "engine/fast_div.h"

#include <fmt/format.h>

#include "apnn/error.h"

namespace apnn {

FastDivArgs fast_div(int64_t d) {
  if (d < 1 || d >= (int64_t{1} << 31))
    throw Error(ErrorKind::InvalidInput, fmt::format("fast_div: divisor {} outside 1..2^31-1", d));
  uint32_t shr = 0;
  while ((int64_t{1} << shr) < d) ++shr;  // ceil(log2 d)
  // floor(2^32 * (2^shr - d) / d) + 1 < 2^32, since 2^shr - d < d.
  const uint64_t mul = (((uint64_t{1} << shr) - static_cast<uint64_t>(d)) << 32) / static_cast<uint64_t>(d) + 1;
  return {static_cast<uint32_t>(mul), shr};
}

}  // namespace apnn

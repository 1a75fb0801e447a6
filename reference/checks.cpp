#include "reference/checks.h"

#include <limits>
#include <string>

#include "apnn/error.h"

namespace apnn::reference {

void check_format(const char* who, const OperandFormat& f) {
  if (f.bits < 1 || f.bits > kMaxBits)
    throw Error(ErrorKind::InvalidInput, std::string(who) + ": " + std::to_string(f.bits) + "-bit operands are not supported (1.." +
                                             std::to_string(kMaxBits) + ")");
}

void check_sizes(const char* who, int64_t M, int64_t N, int64_t K) {
  if (M < 0 || N < 0 || K < 0)
    throw Error(ErrorKind::InvalidInput, std::string(who) + ": negative size M=" + std::to_string(M) +
                                             " N=" + std::to_string(N) + " K=" + std::to_string(K));
}

int32_t narrow_result(const char* who, int64_t y, int64_t m, int64_t n) {
  if (y < std::numeric_limits<int32_t>::min() || y > std::numeric_limits<int32_t>::max())
    throw Error(ErrorKind::InvalidInput, std::string(who) + ": Y[" + std::to_string(m) + "][" + std::to_string(n) +
                                             "] = " + std::to_string(y) + " does not fit int32");
  return static_cast<int32_t>(y);
}

}  // namespace apnn::reference

// Argument and result checks the two references share, so they fail alike.
#pragma once
#include <cstdint>

#include "apnn/encoding.h"

namespace apnn::reference {

// A format outside 1..kMaxBits bits would make shifts and plane counts meaningless.
void check_format(const char* who, const OperandFormat& f);
void check_sizes(const char* who, int64_t M, int64_t N, int64_t K);
// Y[m][n] as int32, or Error(InvalidInput) naming the element if it does not fit.
int32_t narrow_result(const char* who, int64_t y, int64_t m, int64_t n);

}  // namespace apnn::reference

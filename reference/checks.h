// Argument and result checks the two references share, so they fail alike.
#pragma once
#include <cstdint>

#include "apnn/conv_layout.h"
#include "apnn/encoding.h"

namespace apnn::reference {

// A format outside 1..kMaxBits bits would make shifts and plane counts meaningless.
void check_format(const char* who, const OperandFormat& f);
void check_sizes(const char* who, int64_t M, int64_t N, int64_t K);
// Y[m][n] as int32, or Error(InvalidInput) naming the element if it does not fit.
int32_t narrow_result(const char* who, int64_t y, int64_t m, int64_t n);

// The convolution references' arguments (conv_geometry.cpp): validates g, returns {Ho, Wo},
// then rejects a null W or X; both references accept and reject alike.
void check_conv_args(const char* who, const ConvGeometry& g, const void* W, const void* X, int64_t* Ho, int64_t* Wo);

}  // namespace apnn::reference

// Argument checks the two convolution references share (declared in checks.h), so they
// accept and reject alike. This is the only code conv_direct.cpp and conv_im2col.cpp share.
#include <cstdint>
#include <string>

#include "apnn/conv_layout.h"
#include "apnn/error.h"
#include "reference/checks.h"

namespace apnn::reference {

namespace {

[[noreturn]] void fail(const char* who, const std::string& what) {
  throw Error(ErrorKind::InvalidInput, std::string(who) + ": invalid convolution geometry: " + what);
}

void at_least(const char* who, const char* field, int64_t value, int64_t min, const char* meaning) {
  if (value < min)
    fail(who, std::string(field) + " = " + std::to_string(value) + " (" + meaning + " must be >= " +
                  std::to_string(min) + ")");
}

int64_t checked_mul(const char* who, const char* what, int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) fail(who, std::string(what) + " overflows int64");
  return out;
}

// (in + 2 * pad - k) / stride + 1, or an error naming the fields when it is below 1.
// Computed in int64 with the numerator checked for sign first: ConvGeometry::Ho() computes
// 2 * ph in int and divides a possibly negative numerator, which truncates toward zero and so
// yields 1 instead of an invalid size when in + 2 * pad - k lies in (-stride, 0).
int64_t output_size(const char* who, const char* out_name, int64_t in, const char* in_name, int pad,
                    const char* pad_name, int k, const char* k_name, int stride) {
  int64_t padded = 0;
  if (__builtin_add_overflow(in, 2 * int64_t{pad}, &padded)) fail(who, std::string(in_name) + " + 2 * " + pad_name + " overflows int64");
  if (padded < k)
    fail(who, std::string(out_name) + " < 1: kernel " + k_name + " = " + std::to_string(k) + " exceeds the padded input " +
                  in_name + " + 2 * " + pad_name + " = " + std::to_string(in) + " + 2 * " + std::to_string(pad) + " = " +
                  std::to_string(padded));
  return (padded - k) / stride + 1;
}

}  // namespace

// Validates g and returns {Ho, Wo}. Every size must be >= 1, kernel and stride >= 1, padding
// >= 0, the kernel must fit the padded input, and the element counts of W, X and Y must fit int64.
// A padding as large as (or larger than) the kernel is accepted: the output pixels whose window
// lies entirely in the padding are 0.
void check_conv_args(const char* who, const ConvGeometry& g, const void* W, const void* X, int64_t* Ho, int64_t* Wo) {
  at_least(who, "N", g.N, 1, "batch size");
  at_least(who, "C", g.C, 1, "input channels");
  at_least(who, "H", g.H, 1, "input height");
  at_least(who, "W", g.W, 1, "input width");
  at_least(who, "O", g.O, 1, "output channels");
  at_least(who, "kh", g.kh, 1, "kernel height");
  at_least(who, "kw", g.kw, 1, "kernel width");
  at_least(who, "sh", g.sh, 1, "vertical stride");
  at_least(who, "sw", g.sw, 1, "horizontal stride");
  at_least(who, "ph", g.ph, 0, "vertical padding");
  at_least(who, "pw", g.pw, 0, "horizontal padding");
  *Ho = output_size(who, "Ho", g.H, "H", g.ph, "ph", g.kh, "kh", g.sh);
  *Wo = output_size(who, "Wo", g.W, "W", g.pw, "pw", g.kw, "kw", g.sw);
  checked_mul(who, "N * C * H * W", checked_mul(who, "N * C * H * W", checked_mul(who, "N * C * H * W", g.N, g.C), g.H), g.W);
  checked_mul(who, "O * C * kh * kw", checked_mul(who, "O * C * kh * kw", checked_mul(who, "O * C * kh * kw", g.O, g.C), g.kh), g.kw);
  const int64_t out = checked_mul(who, "N * O * Ho * Wo",
                                  checked_mul(who, "N * O * Ho * Wo", checked_mul(who, "N * O * Ho * Wo", g.N, g.O), *Ho), *Wo);
  const int64_t K = checked_mul(who, "C * kh * kw", checked_mul(who, "C * kh * kw", g.C, g.kh), g.kw);
  checked_mul(who, "N * Ho * Wo * C * kh * kw", out / g.O, K);  // the im2col matrix
  if (W == nullptr || X == nullptr)
    throw Error(ErrorKind::InvalidInput, std::string(who) + ": " + (W == nullptr ? "W" : "X") + " is null");
}

}  // namespace apnn::reference

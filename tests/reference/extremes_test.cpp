// Extreme values, the int32 boundary, empty shapes and rejected inputs, for both references.
#include <doctest/doctest.h>

#include <string>

#include "apnn/error.h"
#include "apnn/reference.h"

using apnn::Encoding;
using apnn::OperandFormat;

namespace {

// Y of an M x N product whose operands are constant, by both references (which must agree).
std::vector<int32_t> constant_product(const OperandFormat& wf, int16_t w, const OperandFormat& xf, int16_t x,
                                      int64_t M, int64_t N, int64_t K) {
  const std::vector<int16_t> W(static_cast<size_t>(M * K), w), X(static_cast<size_t>(N * K), x);
  const auto direct = apnn::apmm_reference_direct(W.data(), X.data(), M, N, K);
  CHECK(apnn::apmm_reference_bitserial(wf, xf, W.data(), X.data(), M, N, K) == direct);
  return direct;
}

template <class F>
void check_invalid_input(F&& f, const std::string& fragment) {
  try {
    f();
    FAIL("no apnn::Error thrown; expected one containing: " << fragment);
  } catch (const apnn::Error& e) {
    INFO("message: " << e.what());
    CHECK(e.kind() == apnn::ErrorKind::InvalidInput);
    CHECK(std::string(e.what()).find(fragment) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("reference extremes: each encoding's min and max values") {
  const OperandFormat pm1{8, Encoding::Pm1}, sgn{8, Encoding::Signed}, uns{8, Encoding::Unsigned};
  const int64_t K = 300;
  CHECK(constant_product(pm1, -255, pm1, 255, 3, 2, K) == std::vector<int32_t>(6, -255 * 255 * K));
  CHECK(constant_product(pm1, -255, pm1, -255, 2, 2, K) == std::vector<int32_t>(4, 255 * 255 * K));
  CHECK(constant_product(sgn, -128, sgn, -128, 2, 3, K) == std::vector<int32_t>(6, 128 * 128 * K));
  CHECK(constant_product(sgn, -128, sgn, 127, 1, 1, K) == std::vector<int32_t>(1, -128 * 127 * K));
  CHECK(constant_product(uns, 255, uns, 255, 1, 2, K) == std::vector<int32_t>(2, 255 * 255 * K));
  CHECK(constant_product(pm1, 255, sgn, -128, 2, 1, K) == std::vector<int32_t>(2, -255 * 128 * K));
  CHECK(constant_product(OperandFormat{1, Encoding::Pm1}, -1, OperandFormat{1, Encoding::Signed}, -1, 1, 1, K) ==
        std::vector<int32_t>(1, K));
}

TEST_CASE("reference extremes: results at the int32 limit fit, one step past it throws") {
  const OperandFormat pm1{8, Encoding::Pm1};
  const int64_t K_fits = 33025;  // 255 * 255 * 33025 = 2147450625 <= INT32_MAX < 255 * 255 * 33026
  CHECK(constant_product(pm1, 255, pm1, 255, 1, 1, K_fits) == std::vector<int32_t>{2147450625});
  CHECK(constant_product(pm1, -255, pm1, 255, 1, 1, K_fits) == std::vector<int32_t>{-2147450625});

  const int64_t K = K_fits + 1;
  const std::vector<int16_t> W(K, -255), X(K, 255);
  check_invalid_input([&] { apnn::apmm_reference_direct(W.data(), X.data(), 1, 1, K); },
                      "Y[0][0] = -2147515650 does not fit int32");
  check_invalid_input([&] { apnn::apmm_reference_bitserial(pm1, pm1, W.data(), X.data(), 1, 1, K); },
                      "Y[0][0] = -2147515650 does not fit int32");
}

TEST_CASE("reference extremes: empty shapes") {
  const OperandFormat f{3, Encoding::Signed};
  CHECK(constant_product(f, 3, f, -4, 2, 3, 0) == std::vector<int32_t>(6, 0));  // K = 0: empty sums
  CHECK(constant_product(f, 3, f, -4, 0, 3, 5).empty());
  CHECK(constant_product(f, 3, f, -4, 3, 0, 5).empty());
}

TEST_CASE("reference extremes: invalid arguments are InvalidInput") {
  const OperandFormat pm1{2, Encoding::Pm1};
  const int16_t W[2] = {1, 2}, X[2] = {1, 1};
  check_invalid_input([&] { apnn::apmm_reference_bitserial(pm1, pm1, W, X, 1, 1, 2); },
                      "W[0][1] = 2 is not a valid 2-bit pm1 value");
  check_invalid_input([&] { apnn::apmm_reference_bitserial(pm1, OperandFormat{1, Encoding::Unsigned}, X, W, 1, 1, 2); },
                      "X[0][1] = 2 is not a valid 1-bit unsigned value");
  check_invalid_input([&] { apnn::apmm_reference_direct(W, X, 1, -1, 2); }, "negative size");
  check_invalid_input([&] { apnn::apmm_reference_bitserial(pm1, pm1, W, X, -1, 1, 2); }, "negative size");
  check_invalid_input([&] { apnn::apmm_reference_bitserial(OperandFormat{9, Encoding::Unsigned}, pm1, W, X, 1, 1, 2); },
                      "9-bit operands are not supported");
  check_invalid_input([&] { apnn::random_operand(OperandFormat{0, Encoding::Signed}, 4, 1); },
                      "0-bit operands are not supported");
}

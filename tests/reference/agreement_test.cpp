// The two references share nothing but the inputs: agreement over every format pair and
// ragged shapes checks the bit-plane algebra (codes, plane weights, offsets, padding).
#include <doctest/doctest.h>

#include <string>

#include "apnn/reference.h"
#include "formats.h"

namespace {

struct Shape {
  int64_t M, N, K;
};

// K straddles the 32-bit word, 64-bit word and 128-bit row-padding boundaries.
constexpr Shape kShapes[] = {{1, 1, 1},  {3, 5, 33},   {7, 13, 300}, {17, 9, 257},
                             {2, 3, 31}, {4, 2, 64},   {3, 3, 127},  {2, 2, 128},
                             {1, 4, 129}, {5, 1, 255}, {2, 6, 256},  {3, 2, 0}};

}  // namespace

TEST_CASE("reference: direct and bit-serial agree for all 64 bit pairs x 9 encoding pairs") {
  const auto formats = reference_test::all_formats();
  uint64_t seed = 1;
  int compared = 0;
  for (const apnn::OperandFormat& w : formats) {
    for (const apnn::OperandFormat& x : formats) {
      for (const Shape& s : kShapes) {
        const auto W = apnn::random_operand(w, static_cast<size_t>(s.M * s.K), seed++);
        const auto X = apnn::random_operand(x, static_cast<size_t>(s.N * s.K), seed++);
        const auto direct = apnn::apmm_reference_direct(W.data(), X.data(), s.M, s.N, s.K);
        const auto bitserial = apnn::apmm_reference_bitserial(w, x, W.data(), X.data(), s.M, s.N, s.K);
        INFO("W " << w.describe() << ", X " << x.describe() << ", M,N,K = " << s.M << "," << s.N << "," << s.K);
        REQUIRE(direct.size() == static_cast<size_t>(s.M * s.N));
        CHECK(bitserial == direct);
        ++compared;
      }
    }
  }
  CHECK(compared == 24 * 24 * static_cast<int>(std::size(kShapes)));
}

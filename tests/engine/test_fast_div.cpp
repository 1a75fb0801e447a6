// The multiply-shift constants of engine/fast_div.h against integer division: every divisor
// the conv kernels pass (image sizes, row widths, channel words, tile counts) divides every
// index below 2^31 exactly, and a bad divisor is refused.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "apnn/error.h"
#include "engine/fast_div.h"

using namespace apnn;

namespace {

void check_divisor(int64_t d, std::mt19937_64& rng) {
  const FastDivArgs f = fast_div(d);
  std::vector<uint32_t> ns = {0, 1, 2, 0x7ffffffeu, 0x7fffffffu};
  // Around multiples of d (where a wrong rounding shows first), small and near the top.
  for (uint64_t m : {uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{0x7fffffff} / d})
    for (int64_t e = -1; e <= 1; ++e) {
      const int64_t n = static_cast<int64_t>(m * d) + e;
      if (n >= 0 && n < (int64_t{1} << 31)) ns.push_back(static_cast<uint32_t>(n));
    }
  std::uniform_int_distribution<uint32_t> any(0, 0x7fffffffu);
  for (int i = 0; i < 200; ++i) ns.push_back(any(rng));
  for (uint32_t n : ns) {
    const uint32_t want = n / static_cast<uint32_t>(d), got = fast_div_apply(f, n);
    if (got != want) FAIL("n=" << n << " d=" << d << ": " << got << " instead of " << want);
  }
}

}  // namespace

TEST_CASE("fast_div: exact for every index below 2^31") {
  std::mt19937_64 rng(20261123);
  int checked = 0;
  for (int64_t d = 1; d <= 4096; ++d, ++checked) check_divisor(d, rng);
  // Powers of two and their neighbours up to 2^31-1, and random large divisors.
  for (int s = 12; s <= 31; ++s)
    for (int64_t d : {(int64_t{1} << s) - 1, int64_t{1} << s, (int64_t{1} << s) + 1})
      if (d < (int64_t{1} << 31)) check_divisor(d, rng), ++checked;
  std::uniform_int_distribution<int64_t> big(4097, 0x7fffffff);
  for (int i = 0; i < 2000; ++i, ++checked) check_divisor(big(rng), rng);
  CHECK(checked == 4096 + 58 + 2000);  // 2^31 and 2^31+1 are out of range
  // The divisor 1 and the shapes of the bench's convs take the expected constants.
  CHECK(fast_div(1).mul == 1);
  CHECK(fast_div(1).shr == 0);
  CHECK(fast_div(49).shr == 6);
  CHECK(fast_div(64).shr == 6);
  CHECK(fast_div(64).mul == 1);
}

TEST_CASE("fast_div: every n in 128 windows of 4096 across the range, for three divisors") {
  for (int64_t d : {int64_t{7}, int64_t{3136}, int64_t{0x7fffffff}}) {
    const FastDivArgs f = fast_div(d);
    for (uint32_t n = 0; n < (1u << 31) - (1u << 24); n += (1u << 24) - 1)  // 128 strides across the range
      for (uint32_t k = 0; k < 4096; ++k) {
        const uint32_t x = n + k;
        if (fast_div_apply(f, x) != x / static_cast<uint32_t>(d)) FAIL("n=" << x << " d=" << d);
      }
  }
}

TEST_CASE("fast_div: divisors outside 1..2^31-1 are refused") {
  for (int64_t d : {int64_t{0}, int64_t{-1}, int64_t{1} << 31, int64_t{1} << 40}) {
    try {
      fast_div(d);
      FAIL("accepted divisor " << d);
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::InvalidInput);
      CHECK(std::string(e.what()).find(std::to_string(d)) != std::string::npos);
    }
  }
}

// Write then read back every integer dtype over shapes from 0-d to 3-d, empty ones included.
#include <doctest/doctest.h>

#include <limits>

#include "apnn/npy.h"
#include "npy_test_util.h"

namespace {

struct DType {
  const char* descr;
  int64_t lo, hi;
};

constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max();

const DType kDTypes[] = {
    {"|b1", 0, 1},           {"|i1", -128, 127},       {"|u1", 0, 255},
    {"<i2", -32768, 32767},  {">i2", -32768, 32767},   {"<u2", 0, 65535},
    {">u2", 0, 65535},       {"<i4", INT32_MIN, INT32_MAX}, {">i4", INT32_MIN, INT32_MAX},
    {"<u4", 0, UINT32_MAX},  {">u4", 0, UINT32_MAX},   {"<i8", kMin64, kMax64},
    {">i8", kMin64, kMax64}, {"<u8", 0, kMax64},       {">u8", 0, kMax64},
};

// The extremes first, then a spread of values in between.
std::vector<int64_t> values_for(const DType& t, int64_t count) {
  std::vector<int64_t> v(static_cast<size_t>(count));
  std::mt19937_64 rng(42);
  for (int64_t i = 0; i < count; ++i) {
    const uint64_t span = static_cast<uint64_t>(t.hi) - static_cast<uint64_t>(t.lo);
    const uint64_t r = span == UINT64_MAX ? rng() : rng() % (span + 1);
    v[i] = i == 0 ? t.lo : i == 1 ? t.hi : static_cast<int64_t>(static_cast<uint64_t>(t.lo) + r);
  }
  return v;
}

int64_t count_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace

TEST_CASE("npy round trip: every integer dtype and shape") {
  npy_test::ScratchDir tmp;
  const std::vector<std::vector<int64_t>> shapes = {{}, {0}, {1}, {5}, {2, 3}, {2, 0, 3}, {3, 1, 4}, {0, 0}};
  for (const DType& t : kDTypes) {
    for (const auto& shape : shapes) {
      CAPTURE(t.descr);
      CAPTURE(shape.size());
      const std::vector<int64_t> values = values_for(t, count_of(shape));
      const std::string path = tmp.path("rt.npy");
      apnn::write_npy_int(path, shape, values.data(), t.descr);
      const apnn::NpyArray back = apnn::read_npy_int(path);
      CHECK(back.shape == shape);
      CHECK(back.values == values);
    }
  }
}

TEST_CASE("npy round trip: write_npy_int32 keeps int32 extremes") {
  npy_test::ScratchDir tmp;
  const int32_t data[4] = {INT32_MIN, -1, 0, INT32_MAX};
  apnn::write_npy_int32(tmp.path("y.npy"), {2, 2}, data);
  const apnn::NpyArray back = apnn::read_npy_int(tmp.path("y.npy"));
  CHECK(back.shape == std::vector<int64_t>{2, 2});
  CHECK(back.values == std::vector<int64_t>{INT32_MIN, -1, 0, INT32_MAX});
}

TEST_CASE("npy round trip: big-endian data is stored most significant byte first") {
  npy_test::ScratchDir tmp;
  const int64_t v[1] = {0x0102};
  apnn::write_npy_int(tmp.path("be.npy"), {1}, v, ">i2");
  const std::string bytes = npy_test::slurp(tmp.path("be.npy"));
  CHECK(bytes.substr(128) == std::string("\x01\x02", 2));
}

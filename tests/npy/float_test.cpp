// Float .npy files (the CLI's epilogue parameters and float32 outputs): read_npy_float for
// each float dtype, byte order and layout, and write_npy_float32 bit for bit.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "apnn/npy.h"
#include "npy_test_util.h"

using apnn::ErrorKind;
using npy_test::check_error;
using npy_test::npy_bytes;
using npy_test::ScratchDir;
using npy_test::slurp;
using npy_test::spit;

namespace {

// numpy's header for a dtype and shape literal, padded so the data starts 64-byte aligned
// after a preamble of `preamble` bytes (10 for version 1.0, 12 for 2.0 and 3.0).
std::string header(const std::string& descr, const std::string& shape, bool fortran = false, size_t preamble = 10) {
  std::string h = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': " + shape + ", }";
  h += std::string((64 - (preamble + h.size() + 1) % 64) % 64, ' ');
  return h + "\n";
}

// The version 1.0 preamble for a header of `length` bytes.
std::string preamble(size_t length) {
  return std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(length & 0xff) + static_cast<char>(length >> 8);
}

std::string f4_bytes(const std::vector<float>& v, bool big) {
  std::string out;
  for (float f : v) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    for (int i = 0; i < 4; ++i) out += static_cast<char>((b >> (8 * (big ? 3 - i : i))) & 0xff);
  }
  return out;
}

std::string f8_bytes(const std::vector<double>& v, bool big) {
  std::string out;
  for (double d : v) {
    uint64_t b;
    std::memcpy(&b, &d, 8);
    for (int i = 0; i < 8; ++i) out += static_cast<char>((b >> (8 * (big ? 7 - i : i))) & 0xff);
  }
  return out;
}

apnn::NpyFloatArray read_bytes(const ScratchDir& tmp, const std::string& bytes) {
  spit(tmp.path("f.npy"), bytes);
  return apnn::read_npy_float(tmp.path("f.npy"));
}

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

}  // namespace

TEST_CASE("npy float: <f4, >f4, native f4, <f8 and >f8 read as the same values") {
  ScratchDir tmp;
  const std::vector<float> f = {1.5f, -0.25f, 3.0e38f, 1.0e-40f, 0.1f, -7.0f};
  const std::vector<double> d = {1.5, -0.25, 1e300, 4.9e-324, 0.1, -7.0};
  for (const char* descr : {"<f4", ">f4", "f4", "=f4"}) {
    INFO(descr);
    const auto a = read_bytes(tmp, npy_bytes(header(descr, "(2, 3)"), f4_bytes(f, descr[0] == '>')));
    CHECK(a.shape == std::vector<int64_t>{2, 3});
    REQUIRE(a.values.size() == 6);
    for (size_t i = 0; i < 6; ++i) CHECK(bits_of(static_cast<float>(a.values[i])) == bits_of(f[i]));
    CHECK(a.values[4] == static_cast<double>(0.1f));  // widened exactly, not re-rounded from decimal
  }
  for (const char* descr : {"<f8", ">f8"}) {
    INFO(descr);
    const auto a = read_bytes(tmp, npy_bytes(header(descr, "(6,)"), f8_bytes(d, descr[0] == '>')));
    CHECK(a.shape == std::vector<int64_t>{6});
    CHECK(a.values == d);
  }
  // Versions 2.0 and 3.0 (4-byte header length) as well.
  const auto v3 = read_bytes(tmp, npy_bytes(header("<f4", "(2,)", false, 12), f4_bytes({2.0f, -2.0f}, false), 3));
  CHECK(v3.values == std::vector<double>{2.0, -2.0});
}

TEST_CASE("npy float: Fortran order is returned in C order; scalars and empty arrays") {
  ScratchDir tmp;
  // a = [[1, 2, 3], [4, 5, 6]] stored column by column.
  const auto f2 = read_bytes(tmp, npy_bytes(header("<f4", "(2, 3)", true), f4_bytes({1, 4, 2, 5, 3, 6}, false)));
  CHECK(f2.shape == std::vector<int64_t>{2, 3});
  CHECK(f2.values == std::vector<double>{1, 2, 3, 4, 5, 6});
  // (2, 2, 2): element [i][j][k] = 100i + 10j + k, first index fastest on disk.
  std::vector<double> disk;
  for (int k = 0; k < 2; ++k)
    for (int j = 0; j < 2; ++j)
      for (int i = 0; i < 2; ++i) disk.push_back(100 * i + 10 * j + k);
  const auto f3 = read_bytes(tmp, npy_bytes(header(">f8", "(2, 2, 2)", true), f8_bytes(disk, true)));
  CHECK(f3.values == std::vector<double>{0, 1, 10, 11, 100, 101, 110, 111});
  // 1-D Fortran order is C order.
  const auto f1 = read_bytes(tmp, npy_bytes(header("<f8", "(3,)", true), f8_bytes({1, 2, 3}, false)));
  CHECK(f1.values == std::vector<double>{1, 2, 3});
  // A 0-d array: shape (), one value.
  const auto s = read_bytes(tmp, npy_bytes(header("<f4", "()"), f4_bytes({0.75f}, false)));
  CHECK(s.shape.empty());
  CHECK(s.values == std::vector<double>{0.75});
  const auto e = read_bytes(tmp, npy_bytes(header("<f8", "(0, 4)"), ""));
  CHECK(e.shape == std::vector<int64_t>{0, 4});
  CHECK(e.values.empty());
}

TEST_CASE("npy float: non-float dtypes and inconsistent files are named") {
  ScratchDir tmp;
  const std::string path = tmp.path("f.npy");
  for (const char* descr : {"<i4", "|u1", "<f2", "<c8", "|b1", "<f16"}) {
    INFO(descr);
    spit(path, npy_bytes(header(descr, "(1,)"), std::string(16, '\0')));
    check_error([&] { apnn::read_npy_float(path); }, ErrorKind::InvalidInput, path,
                std::string("dtype '") + descr + "' is not a float type (float32 '<f4' or float64 '<f8')");
  }
  spit(path, npy_bytes(header("<f4", "(3,)"), f4_bytes({1, 2}, false)));
  check_error([&] { apnn::read_npy_float(path); }, ErrorKind::InvalidInput, path, "data is shorter than the shape says");
  spit(path, npy_bytes(header("<f8", "(1,)"), f8_bytes({1, 2}, false)));
  check_error([&] { apnn::read_npy_float(path); }, ErrorKind::InvalidInput, path, "data is longer than the shape says");
  check_error([&] { apnn::read_npy_float(tmp.path("missing.npy")); }, ErrorKind::Io, tmp.path("missing.npy"), "cannot open");
  // And the integer reader refuses float files by name.
  spit(path, npy_bytes(header("<f4", "(1,)"), f4_bytes({1}, false)));
  check_error([&] { apnn::read_npy_int(path); }, ErrorKind::InvalidInput, path, "'<f4'");
}

TEST_CASE("npy float: write_npy_float32 writes numpy's layout and every bit pattern back") {
  ScratchDir tmp;
  const std::string path = tmp.path("w.npy");
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> v = {0.0f,
                                -0.0f,
                                1.0f,
                                -1.5f,
                                std::numeric_limits<float>::min(),
                                std::numeric_limits<float>::denorm_min(),
                                from_bits(0x007fffffu),  // largest subnormal
                                from_bits(0x80000001u),  // negative subnormal
                                std::numeric_limits<float>::max(),
                                -std::numeric_limits<float>::max(),
                                inf,
                                -inf,
                                from_bits(0x7fc00000u),  // quiet NaN
                                from_bits(0xffc12345u),  // negative NaN with a payload
                                0.1f,
                                16777217.0f};
  apnn::write_npy_float32(path, {2, 8}, v.data());
  const std::string bytes = slurp(path);
  const std::string h = header("<f4", "(2, 8)");
  REQUIRE(h.size() + 10 == 128);
  REQUIRE(bytes.size() == 128 + 4 * v.size());
  CHECK(bytes.substr(0, 128) == preamble(h.size()) + h);
  CHECK(bytes.substr(128) == f4_bytes(v, false));  // little-endian, payloads included
  const apnn::NpyFloatArray back = apnn::read_npy_float(path);
  CHECK(back.shape == std::vector<int64_t>{2, 8});
  REQUIRE(back.values.size() == v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    INFO("index " << i);
    if (std::isnan(v[i])) {
      CHECK(std::isnan(back.values[i]));
      CHECK(std::signbit(back.values[i]) == std::signbit(v[i]));
    } else {
      CHECK(bits_of(static_cast<float>(back.values[i])) == bits_of(v[i]));
    }
  }
  CHECK(std::signbit(back.values[1]));
  // 0-d and empty arrays.
  const float one = 0.5f;
  apnn::write_npy_float32(path, {}, &one);
  CHECK(slurp(path).substr(0, 128) == preamble(118) + header("<f4", "()"));
  CHECK(apnn::read_npy_float(path).values == std::vector<double>{0.5});
  CHECK(apnn::read_npy_float(path).shape.empty());
  apnn::write_npy_float32(path, {0}, nullptr);
  CHECK(slurp(path) == preamble(118) + header("<f4", "(0,)"));
  CHECK(apnn::read_npy_float(path).shape == std::vector<int64_t>{0});
}

TEST_CASE("npy float: write_npy_float32 failures leave nothing behind") {
  ScratchDir tmp;
  const float v[2] = {1, 2};
  const std::string missing_dir = tmp.path("no/such/dir/w.npy");
  check_error([&] { apnn::write_npy_float32(missing_dir, {2}, v); }, ErrorKind::Io, missing_dir, "cannot");
  const std::string path = tmp.path("w.npy");
  check_error([&] { apnn::write_npy_float32(path, {-1}, v); }, ErrorKind::InvalidInput, path, "");
  CHECK_FALSE(std::filesystem::exists(path));
  // A failed write does not replace an existing file.
  apnn::write_npy_float32(path, {2}, v);
  const std::string before = slurp(path);
  check_error([&] { apnn::write_npy_float32(path, {2, -3}, v); }, ErrorKind::InvalidInput, path, "");
  CHECK(slurp(path) == before);
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(tmp.dir())) files += e.is_regular_file();
  CHECK(files == 1);
}

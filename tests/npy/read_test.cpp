// Reading files numpy (or another writer) may produce: golden vectors, every format version,
// Fortran order, big endian, and the header spellings Python's literal syntax allows.
#include <doctest/doctest.h>

#include <filesystem>

#include "apnn/npy.h"
#include "npy_test_util.h"

using npy_test::npy_bytes;
using npy_test::ScratchDir;
using npy_test::spit;

namespace {

std::string le16(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out += {static_cast<char>(v & 0xff), static_cast<char>((v >> 8) & 0xff)};
  return out;
}

apnn::NpyArray read_bytes(const ScratchDir& tmp, const std::string& bytes) {
  spit(tmp.path("r.npy"), bytes);
  return apnn::read_npy_int(tmp.path("r.npy"));
}

}  // namespace

TEST_CASE("npy read: the golden vectors' files") {
  const std::filesystem::path dir = std::filesystem::path(APNN_VECTORS_DIR) / "apmm_w1pm1_x1pm1";
  REQUIRE_MESSAGE(std::filesystem::is_directory(dir), "golden vectors not found at " << dir);
  const apnn::NpyArray w = apnn::read_npy_int((dir / "w.npy").string());
  const apnn::NpyArray x = apnn::read_npy_int((dir / "x.npy").string());
  const apnn::NpyArray y = apnn::read_npy_int((dir / "y.npy").string());
  REQUIRE(w.shape.size() == 2);
  REQUIRE(x.shape.size() == 2);
  CHECK(y.shape == std::vector<int64_t>{w.shape[0], x.shape[0]});
  CHECK(w.shape[1] == x.shape[1]);
  CHECK(static_cast<int64_t>(w.values.size()) == w.shape[0] * w.shape[1]);
  for (int64_t v : w.values) CHECK((v == -1 || v == 1));
}

TEST_CASE("npy read: fortran_order True is returned in C order") {
  ScratchDir tmp;
  // Element (i, j, k) = 100i + 10j + k of shape (2, 3, 4), stored with i varying fastest.
  std::string data;
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 2; ++i) data += le16({100 * i + 10 * j + k});
  const apnn::NpyArray a =
      read_bytes(tmp, npy_bytes("{'descr': '<i2', 'fortran_order': True, 'shape': (2, 3, 4), }\n", data));
  CHECK(a.shape == std::vector<int64_t>{2, 3, 4});
  std::vector<int64_t> expected;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) expected.push_back(100 * i + 10 * j + k);
  CHECK(a.values == expected);

  const apnn::NpyArray m =
      read_bytes(tmp, npy_bytes("{'descr': '<i2', 'fortran_order': True, 'shape': (2, 3), }", le16({1, 4, 2, 5, 3, 6})));
  CHECK(m.values == std::vector<int64_t>{1, 2, 3, 4, 5, 6});
}

TEST_CASE("npy read: big-endian and native byte orders") {
  ScratchDir tmp;
  const apnn::NpyArray be = read_bytes(
      tmp, npy_bytes("{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }", std::string("\xff\xff\xff\xfe\x00\x00\x01\x00", 8)));
  CHECK(be.values == std::vector<int64_t>{-2, 256});
  const apnn::NpyArray u = read_bytes(
      tmp, npy_bytes("{'descr': '>u2', 'fortran_order': False, 'shape': (1,), }", std::string("\xff\xfe", 2)));
  CHECK(u.values == std::vector<int64_t>{0xfffe});
  const apnn::NpyArray native =
      read_bytes(tmp, npy_bytes("{'descr': '=i2', 'fortran_order': False, 'shape': (1,), }", le16({-3})));
  CHECK(native.values == std::vector<int64_t>{-3});
}

TEST_CASE("npy read: format versions 2.0 and 3.0 have a 4-byte header length") {
  ScratchDir tmp;
  for (int major : {2, 3}) {
    CAPTURE(major);
    const apnn::NpyArray a =
        read_bytes(tmp, npy_bytes("{'descr': '<i2', 'fortran_order': False, 'shape': (3,), }\n", le16({7, -8, 9}), major));
    CHECK(a.values == std::vector<int64_t>{7, -8, 9});
  }
}

TEST_CASE("npy read: 0-d, empty, bool and u8 up to INT64_MAX") {
  ScratchDir tmp;
  const apnn::NpyArray scalar =
      read_bytes(tmp, npy_bytes("{'descr': '<i2', 'fortran_order': False, 'shape': (), }", le16({-5})));
  CHECK(scalar.shape.empty());
  CHECK(scalar.values == std::vector<int64_t>{-5});
  const apnn::NpyArray empty = read_bytes(tmp, npy_bytes("{'descr': '<i8', 'fortran_order': True, 'shape': (3, 0), }", ""));
  CHECK(empty.shape == std::vector<int64_t>{3, 0});
  CHECK(empty.values.empty());
  const apnn::NpyArray b =
      read_bytes(tmp, npy_bytes("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", std::string("\x00\x01\x02", 3)));
  CHECK(b.values == std::vector<int64_t>{0, 1, 1});  // any non-zero byte is True, as in numpy
  const apnn::NpyArray u8 = read_bytes(
      tmp, npy_bytes("{'descr': '<u8', 'fortran_order': False, 'shape': (1,), }", std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8)));
  CHECK(u8.values == std::vector<int64_t>{INT64_MAX});
}

TEST_CASE("npy read: header spellings Python's literal syntax allows") {
  ScratchDir tmp;
  const char* headers[] = {
      "{'shape': (2,), 'fortran_order': False, 'descr': '<i2'}",          // any key order, no trailing comma
      "{\"descr\": \"<i2\", \"fortran_order\": False, \"shape\": (2,)}",  // double quotes
      "{ 'descr' :'<i2','fortran_order':False,'shape':( 2 , ) , }  \n",   // odd spacing
      "{'descr': '<i2', 'fortran_order': False, 'shape': (2L,), }",       // Python 2 long
      "{'descr': 'i2', 'fortran_order': False, 'shape': (2,), }",         // no byte-order char
  };
  for (const char* h : headers) {
    CAPTURE(h);
    const apnn::NpyArray a = read_bytes(tmp, npy_bytes(h, le16({1, 2})));
    CHECK(a.shape == std::vector<int64_t>{2});
    CHECK(a.values == std::vector<int64_t>{1, 2});
  }
}

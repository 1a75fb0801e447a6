// The writer's headers must be byte-identical to numpy's, so files diff cleanly against
// numpy-made ones. Expected bytes follow numpy.lib.format._write_array_header.
#include <doctest/doctest.h>

#include <filesystem>

#include "apnn/npy.h"
#include "npy_test_util.h"

namespace {

using npy_test::ScratchDir;
using npy_test::slurp;

// Preamble (magic, version 1.0, header length) + dict + spaces + '\n', `total` bytes in all.
std::string numpy_file_start(const std::string& dict, size_t total) {
  const size_t header = total - 10;
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header & 0xff);
  out += static_cast<char>(header >> 8);
  return out + dict + std::string(header - dict.size() - 1, ' ') + '\n';
}

}  // namespace

TEST_CASE("npy header: int32 (2, 3) is numpy's 128-byte header, then the data") {
  ScratchDir tmp;
  const int32_t data[6] = {0, 1, -2, 3, 2147483647, -2147483647 - 1};
  apnn::write_npy_int32(tmp.path("a.npy"), {2, 3}, data);
  const std::string bytes = slurp(tmp.path("a.npy"));
  const std::string expected_start =
      numpy_file_start("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }", 128);
  REQUIRE(bytes.size() == 128 + 6 * 4);
  CHECK(bytes.substr(0, 128) == expected_start);
  CHECK(bytes.substr(128) == std::string(reinterpret_cast<const char*>(data), sizeof data));  // '<i4' on x86
}

TEST_CASE("npy header: 0-d and 1-d shapes are written as () and (n,)") {
  ScratchDir tmp;
  const int64_t v[1] = {7};
  apnn::write_npy_int(tmp.path("scalar.npy"), {}, v, "<i2");
  CHECK(slurp(tmp.path("scalar.npy")).substr(0, 128) ==
        numpy_file_start("{'descr': '<i2', 'fortran_order': False, 'shape': (), }", 128));
  apnn::write_npy_int(tmp.path("vec.npy"), {1}, v, "|u1");
  CHECK(slurp(tmp.path("vec.npy")).substr(0, 128) ==
        numpy_file_start("{'descr': '|u1', 'fortran_order': False, 'shape': (1,), }", 128));
}

TEST_CASE("npy header: numpy's spare room for the growth axis is reproduced") {
  // Without the 21 - len("0") = 20 spare spaces this header would fit in 128 bytes.
  ScratchDir tmp;
  std::vector<int64_t> shape(15, 7);
  shape[0] = 0;  // no data needed
  apnn::write_npy_int(tmp.path("g.npy"), shape, nullptr, "<i4");
  CHECK(slurp(tmp.path("g.npy")) ==
        numpy_file_start("{'descr': '<i4', 'fortran_order': False, 'shape': (0, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, "
                         "7, 7, 7), }",
                         192));
}

TEST_CASE("npy header: an already aligned header still gets 64 spaces, as numpy pads") {
  ScratchDir tmp;
  apnn::write_npy_int(tmp.path("p.npy"), {0, 1, 1, 100, 100, 100, 100, 100, 100, 100}, nullptr, "<i4");
  const std::string dict =
      "{'descr': '<i4', 'fortran_order': False, 'shape': (0, 1, 1, 100, 100, 100, 100, 100, 100, 100), }";
  CHECK(10 + dict.size() + 20 + 1 == 128);  // 20 growth spaces; numpy adds 64 more, not 0
  CHECK(slurp(tmp.path("p.npy")) == numpy_file_start(dict, 192));
}

TEST_CASE("npy header: descrs are written the way numpy spells them") {
  ScratchDir tmp;
  const int64_t v[1] = {1};
  const std::pair<const char*, const char*> cases[] = {
      {"<i1", "|i1"}, {">u1", "|u1"}, {"=b1", "|b1"}, {"=i4", "<i4"}, {">i8", ">i8"}, {"u2", "<u2"}};
  for (const auto& [given, written] : cases) {
    INFO("given descr " << given);
    apnn::write_npy_int(tmp.path("d.npy"), {1}, v, given);
    CHECK(slurp(tmp.path("d.npy")).substr(10, 15) == std::string("{'descr': '") + written + "'");
  }
}

TEST_CASE("npy header: rewriting every golden vector file reproduces numpy's bytes exactly") {
  const std::filesystem::path root = APNN_VECTORS_DIR;
  REQUIRE_MESSAGE(std::filesystem::is_directory(root), "golden vectors not found at " << root);
  ScratchDir tmp;
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    if (!entry.is_directory()) continue;
    for (const char* name : {"w.npy", "x.npy", "y.npy"}) {
      const std::string src = (entry.path() / name).string();
      CAPTURE(src);
      const apnn::NpyArray a = apnn::read_npy_int(src);
      apnn::write_npy_int(tmp.path("copy.npy"), a.shape, a.values.data(), name[0] == 'y' ? "<i4" : "<i2");
      CHECK(slurp(tmp.path("copy.npy")) == slurp(src));
      ++files;
    }
  }
  CHECK(files > 0);
}

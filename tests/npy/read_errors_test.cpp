// Every malformed file is one Error line "<path>: <what is wrong>": Io when the file cannot
// be read, InvalidInput for anything wrong inside it.
#include <doctest/doctest.h>

#include "apnn/npy.h"
#include "npy_test_util.h"

using apnn::ErrorKind;
using npy_test::npy_bytes;

namespace {

const std::string kGoodDict = "{'descr': '<i2', 'fortran_order': False, 'shape': (2,), }\n";
const std::string kGoodData("\x01\x00\x02\x00", 4);

// Writes `bytes` to a scratch file and expects reading it to fail with InvalidInput.
void check_bad(const std::string& bytes, const std::string& fragment) {
  npy_test::ScratchDir tmp;
  const std::string path = tmp.path("bad.npy");
  npy_test::spit(path, bytes);
  npy_test::check_error([&] { apnn::read_npy_int(path); }, ErrorKind::InvalidInput, path, fragment);
}

void check_bad_header(const std::string& dict, const std::string& fragment) {
  CAPTURE(dict);
  check_bad(npy_bytes(dict, kGoodData), fragment);
}

}  // namespace

TEST_CASE("npy read errors: a missing file is Io") {
  npy_test::ScratchDir tmp;
  const std::string path = tmp.path("missing.npy");
  npy_test::check_error([&] { apnn::read_npy_int(path); }, ErrorKind::Io, path, "No such file or directory");
}

TEST_CASE("npy read errors: the preamble") {
  check_bad("", "bad magic");
  check_bad("\x93NUM", "bad magic");
  check_bad("PK\x03\x04 a zip file, not a .npy", "bad magic");
  check_bad(std::string("\x93NUMPY", 6), "truncated header");
  check_bad(std::string("\x93NUMPY\x01", 7), "truncated header");
  check_bad(std::string("\x93NUMPY\x01\x00\x10", 9), "truncated header");
  check_bad(std::string("\x93NUMPY\x02\x00\x10\x00\x00", 11), "truncated header");
  check_bad(std::string("\x93NUMPY\x01\x00\x40\x00{'descr'", 17), "truncated header: 64 bytes announced, 7 present");
  check_bad(npy_bytes(kGoodDict, kGoodData, 4), "unsupported format version 4.0");
  check_bad(npy_bytes(kGoodDict, kGoodData, 0), "unsupported format version 0.0");
  std::string minor = npy_bytes(kGoodDict, kGoodData);
  minor[7] = 1;
  check_bad(minor, "unsupported format version 1.1");
}

TEST_CASE("npy read errors: a header that is not a valid dict") {
  check_bad_header("", "header is not a valid dict: expected '{'");
  check_bad_header("['descr', '<i2']", "header is not a valid dict: expected '{'");
  check_bad_header("{'descr': '<i2', 'fortran_order': False, 'shape': (2,), ", "header is not a valid dict: expected a string");
  check_bad_header("{'descr': '<i2' 'fortran_order': False, 'shape': (2,)}", "expected '}'");
  check_bad_header("{'descr' '<i2', 'fortran_order': False, 'shape': (2,)}", "expected ':'");
  check_bad_header("{'descr': '<i2, 'fortran_order': False, 'shape': (2,)}", "header is not a valid dict");
  check_bad_header("{'descr': '<i2', 'fortran_order': False, 'shape': (2,)} x", "unexpected text after the dict");
  check_bad_header("{'descr': '<i2', 'fortran_order': None, 'shape': (2,)}", "unsupported value");
  check_bad_header("{'descr': '<i2', 'fortran_order': Falsey, 'shape': (2,)}", "unsupported value");
  check_bad_header("{'descr': '<i2', 'fortran_order': False, 'shape': (2,,)}", "expected an integer");
  check_bad_header("{'descr': '<i2', 'fortran_order': False, 'shape': (99999999999999999999,)}", "integer out of range");
  check_bad_header("{'descr': 'a\nb', 'fortran_order': False, 'shape': (2,)}", "unsupported character in a string");
  check_bad_header("{descr: '<i2', 'fortran_order': False, 'shape': (2,)}", "expected a string");
}

TEST_CASE("npy read errors: wrong, missing, repeated and unknown keys") {
  check_bad_header("{'descr': '<i2', 'fortran_order': False, 'shape': (2,), 'extra': 1}", "header has unknown key 'extra'");
  check_bad_header("{'descr': '<i2', 'fortran_order': False}", "header lacks key 'shape'");
  check_bad_header("{'descr': '<i2', 'descr': '<i2', 'fortran_order': False, 'shape': (2,)}", "header repeats key 'descr'");
  check_bad_header("{'descr': 2, 'fortran_order': False, 'shape': (2,)}", "header 'descr' is not a string");
  check_bad_header("{'descr': '<i2', 'fortran_order': 0, 'shape': (2,)}", "header 'fortran_order' is not True or False");
  check_bad_header("{'descr': '<i2', 'fortran_order': False, 'shape': (2)}", "header 'shape' is not a tuple");
  check_bad_header("{'descr': '<i2', 'fortran_order': False, 'shape': (2, -1)}", "shape has a negative dimension -1");
  check_bad_header("{'descr': '<i2', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", "shape is too large");
}

TEST_CASE("npy read errors: non-integer dtypes") {
  for (const char* descr : {"<f4", "<f8", "<c16", "|O", "<U3", "|S5", "<M8[ns]", "<f2"}) {
    CAPTURE(descr);
    check_bad_header(std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (2,)}",
                     std::string("dtype '") + descr + "' is not an integer type");
  }
  check_bad_header("{'descr': '<i3', 'fortran_order': False, 'shape': (2,)}", "dtype '<i3' has an unsupported size");
  check_bad_header("{'descr': '<b2', 'fortran_order': False, 'shape': (2,)}", "dtype '<b2' has an unsupported size");
  check_bad_header("{'descr': '', 'fortran_order': False, 'shape': (2,)}", "dtype '' is not an integer type");
}

TEST_CASE("npy read errors: data shorter or longer than the shape says") {
  check_bad(npy_bytes(kGoodDict, kGoodData.substr(0, 3)), "data is shorter than the shape says: 4 bytes expected, 3 present");
  check_bad(npy_bytes(kGoodDict, ""), "data is shorter than the shape says");
  check_bad(npy_bytes(kGoodDict, kGoodData + "x"), "data is longer than the shape says: 4 bytes expected, 5 present");
  check_bad(npy_bytes("{'descr': '<i2', 'fortran_order': False, 'shape': (1000000000000,)}", kGoodData),
            "data is shorter than the shape says");
}

TEST_CASE("npy read errors: u8 values above INT64_MAX") {
  const std::string data = std::string(8, '\0') + std::string("\x00\x00\x00\x00\x00\x00\x00\x80", 8);
  check_bad(npy_bytes("{'descr': '<u8', 'fortran_order': False, 'shape': (2,)}", data),
            "value 9223372036854775808 at index 1 does not fit int64");
}

// Writer failures: refused before anything touches the disk, or undone without leftovers.
#include <doctest/doctest.h>

#include <filesystem>

#include "apnn/npy.h"
#include "npy_test_util.h"

using apnn::ErrorKind;
using npy_test::check_error;
using npy_test::ScratchDir;
using npy_test::slurp;

namespace {

size_t entries(const std::filesystem::path& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

}  // namespace

TEST_CASE("npy write: a directory that does not exist is an Io error naming the path") {
  const std::string path = "/nonexistent-apnn-dir/y.npy";
  const int32_t v[1] = {1};
  check_error([&] { apnn::write_npy_int32(path, {1}, v); }, ErrorKind::Io, path, "No such file or directory");
}

TEST_CASE("npy write: a parent that is a file is an Io error") {
  ScratchDir tmp;
  npy_test::spit(tmp.path("file"), "x");
  const std::string path = tmp.path("file") + "/y.npy";
  const int32_t v[1] = {1};
  check_error([&] { apnn::write_npy_int32(path, {1}, v); }, ErrorKind::Io, path, "Not a directory");
}

TEST_CASE("npy write: a failed rename removes the temporary file") {
  ScratchDir tmp;
  std::filesystem::create_directory(tmp.path("target"));  // a file cannot replace a directory
  const int32_t v[1] = {1};
  check_error([&] { apnn::write_npy_int32(tmp.path("target"), {1}, v); }, ErrorKind::Io, tmp.path("target"),
              "cannot write");
  CHECK(entries(tmp.dir()) == 1);
}

TEST_CASE("npy write: a value outside the dtype is refused and the old file is kept") {
  ScratchDir tmp;
  const std::string path = tmp.path("old.npy");
  npy_test::spit(path, "old contents");
  const int64_t v[2] = {1, 256};
  check_error([&] { apnn::write_npy_int(path, {2}, v, "|u1"); }, ErrorKind::InvalidInput, path,
              "value 256 at index 1 does not fit dtype '|u1'");
  CHECK(slurp(path) == "old contents");
  CHECK(entries(tmp.dir()) == 1);
}

TEST_CASE("npy write: a successful write replaces the old file") {
  ScratchDir tmp;
  const std::string path = tmp.path("old.npy");
  npy_test::spit(path, "old contents");
  const int32_t v[1] = {5};
  apnn::write_npy_int32(path, {1}, v);
  CHECK(apnn::read_npy_int(path).values == std::vector<int64_t>{5});
  CHECK(entries(tmp.dir()) == 1);
}

TEST_CASE("npy write: bad descr and bad shape are InvalidInput") {
  ScratchDir tmp;
  const std::string path = tmp.path("a.npy");
  const int64_t v[1] = {0};
  check_error([&] { apnn::write_npy_int(path, {1}, v, "<f4"); }, ErrorKind::InvalidInput, path,
              "dtype '<f4' is not an integer type");
  check_error([&] { apnn::write_npy_int(path, {1}, v, "<i3"); }, ErrorKind::InvalidInput, path,
              "dtype '<i3' has an unsupported size");
  check_error([&] { apnn::write_npy_int(path, {2, -1}, v, "<i4"); }, ErrorKind::InvalidInput, path,
              "negative dimension -1");
  check_error([&] { apnn::write_npy_int(path, {1LL << 40, 1LL << 40}, v, "<i4"); }, ErrorKind::InvalidInput, path,
              "shape is too large");
  CHECK(entries(tmp.dir()) == 0);
}

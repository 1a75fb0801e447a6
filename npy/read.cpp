// read_npy_int: preamble, header, then the data widened to int64 in C order.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "apnn/npy.h"
#include "npy/dtype.h"
#include "npy/fail.h"
#include "npy/header.h"

namespace apnn {

namespace {

using npy::fail;

std::string read_file(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) fail(ErrorKind::Io, path, std::string("cannot open: ") + std::strerror(errno));
  std::string bytes;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f.get())) > 0) bytes.append(buf, n);
  if (std::ferror(f.get())) fail(ErrorKind::Io, path, std::string("cannot read: ") + std::strerror(errno));
  return bytes;
}

uint32_t little_endian(const std::string& bytes, size_t at, int size) {
  uint32_t v = 0;
  for (int i = size - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
  return v;
}

// Splits off the preamble; returns the header text and sets `data_at` to where the data starts.
std::string_view header_text(const std::string& bytes, const std::string& path, size_t* data_at) {
  static constexpr char kMagic[] = "\x93NUMPY";
  constexpr size_t kMagicSize = sizeof kMagic - 1;
  if (bytes.compare(0, kMagicSize, kMagic) != 0) fail(ErrorKind::InvalidInput, path, "bad magic: not a .npy file");
  if (bytes.size() < kMagicSize + 2) fail(ErrorKind::InvalidInput, path, "truncated header: no format version");
  const int major = static_cast<unsigned char>(bytes[kMagicSize]);
  const int minor = static_cast<unsigned char>(bytes[kMagicSize + 1]);
  if (minor != 0 || major < 1 || major > 3)
    fail(ErrorKind::InvalidInput, path,
         "unsupported format version " + std::to_string(major) + "." + std::to_string(minor));
  // Version 1.0 stores the header length in 2 bytes; 2.0 and 3.0 (UTF-8 header) in 4.
  const int length_size = major == 1 ? 2 : 4;
  const size_t header_at = kMagicSize + 2 + length_size;
  if (bytes.size() < header_at) fail(ErrorKind::InvalidInput, path, "truncated header: no header length");
  const size_t length = little_endian(bytes, kMagicSize + 2, length_size);
  if (bytes.size() - header_at < length)
    fail(ErrorKind::InvalidInput, path,
         "truncated header: " + std::to_string(length) + " bytes announced, " +
             std::to_string(bytes.size() - header_at) + " present");
  *data_at = header_at + length;
  return std::string_view(bytes).substr(header_at, length);
}

// Fortran order stores the first index fastest; walk it with an odometer and scatter to C order.
std::vector<int64_t> fortran_to_c(const std::vector<int64_t>& f, const std::vector<int64_t>& shape) {
  const size_t nd = shape.size();
  std::vector<int64_t> c_stride(nd, 1);
  for (size_t d = nd; d-- > 1;) c_stride[d - 1] = c_stride[d] * shape[d];
  std::vector<int64_t> c(f.size()), index(nd, 0);
  int64_t at = 0;  // C offset of `index`
  for (int64_t v : f) {
    c[at] = v;
    for (size_t d = 0; d < nd; ++d) {
      at += c_stride[d];
      if (++index[d] < shape[d]) break;
      at -= c_stride[d] * shape[d];
      index[d] = 0;
    }
  }
  return c;
}

}  // namespace

NpyArray read_npy_int(const std::string& path) {
  const std::string bytes = read_file(path);
  size_t data_at = 0;
  const npy::Header h = npy::parse_header(header_text(bytes, path, &data_at), path);
  const npy::IntDType t = npy::parse_int_dtype(h.descr, path);
  const int64_t count = npy::element_count(h.shape, t.size, path);
  const auto expected = static_cast<size_t>(count) * t.size;
  const size_t present = bytes.size() - data_at;
  if (present != expected)
    fail(ErrorKind::InvalidInput, path,
         std::string("data is ") + (present < expected ? "shorter" : "longer") + " than the shape says: " +
             std::to_string(expected) + " bytes expected, " + std::to_string(present) + " present");

  NpyArray out;
  out.shape = h.shape;
  out.values.resize(count);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data()) + data_at;
  const int shift = 64 - 8 * t.size;  // sign-extends 'i' values from their width
  for (int64_t i = 0; i < count; ++i, p += t.size) {
    const uint64_t bits = t.load(p);
    if (t.kind == 'b') {
      out.values[i] = bits != 0;
    } else if (t.kind == 'i') {
      out.values[i] = static_cast<int64_t>(bits << shift) >> shift;
    } else {
      if (bits > uint64_t{INT64_MAX})
        fail(ErrorKind::InvalidInput, path,
             "value " + std::to_string(bits) + " at index " + std::to_string(i) + " does not fit int64");
      out.values[i] = static_cast<int64_t>(bits);
    }
  }
  if (h.fortran_order && h.shape.size() > 1) out.values = fortran_to_c(out.values, h.shape);
  return out;
}

}  // namespace apnn

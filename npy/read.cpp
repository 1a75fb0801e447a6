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

namespace {

// The header and the data bytes of a file, checked against each other.
struct Raw {
  npy::Header header;
  std::string bytes;
  size_t data_at = 0;
  int64_t count = 0;
};

Raw read_raw(const std::string& path, int element_size_of_descr(const std::string&, const std::string&)) {
  Raw r;
  r.bytes = read_file(path);
  r.header = npy::parse_header(header_text(r.bytes, path, &r.data_at), path);
  const int size = element_size_of_descr(r.header.descr, path);
  r.count = npy::element_count(r.header.shape, size, path);
  const auto expected = static_cast<size_t>(r.count) * size;
  const size_t present = r.bytes.size() - r.data_at;
  if (present != expected)
    fail(ErrorKind::InvalidInput, path,
         std::string("data is ") + (present < expected ? "shorter" : "longer") + " than the shape says: " +
             std::to_string(expected) + " bytes expected, " + std::to_string(present) + " present");
  return r;
}

int int_size(const std::string& descr, const std::string& path) { return npy::parse_int_dtype(descr, path).size; }

// '<f4', '>f8', 'f4' (native): the float dtypes; 0 when descr is not one.
int float_size(const std::string& descr) {
  std::string rest = descr;
  if (!rest.empty() && (rest[0] == '<' || rest[0] == '>' || rest[0] == '=')) rest = rest.substr(1);
  return rest == "f4" ? 4 : rest == "f8" ? 8 : 0;
}

}  // namespace

NpyArray read_npy_int(const std::string& path) {
  const Raw raw = read_raw(path, int_size);
  const npy::IntDType t = npy::parse_int_dtype(raw.header.descr, path);
  NpyArray out;
  out.shape = raw.header.shape;
  out.values.resize(raw.count);
  const auto* p = reinterpret_cast<const unsigned char*>(raw.bytes.data()) + raw.data_at;
  const int shift = 64 - 8 * t.size;  // sign-extends 'i' values from their width
  for (int64_t i = 0; i < raw.count; ++i, p += t.size) {
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
  if (raw.header.fortran_order && raw.header.shape.size() > 1) out.values = fortran_to_c(out.values, raw.header.shape);
  return out;
}

NpyFloatArray read_npy_float(const std::string& path) {
  const Raw raw = read_raw(path, [](const std::string& descr, const std::string& p) {
    if (const int size = float_size(descr)) return size;
    fail(ErrorKind::InvalidInput, p, "dtype '" + descr + "' is not a float type (float32 '<f4' or float64 '<f8')");
  });
  const int size = float_size(raw.header.descr);
  const bool big = raw.header.descr[0] == '>';
  NpyFloatArray out;
  out.shape = raw.header.shape;
  out.values.resize(raw.count);
  const auto* p = reinterpret_cast<const unsigned char*>(raw.bytes.data()) + raw.data_at;
  for (int64_t i = 0; i < raw.count; ++i, p += size) {
    uint64_t bits = 0;
    for (int b = 0; b < size; ++b) bits |= uint64_t{p[big ? size - 1 - b : b]} << (8 * b);
    if (size == 4) {
      float f;
      const uint32_t b32 = static_cast<uint32_t>(bits);
      std::memcpy(&f, &b32, 4);
      out.values[i] = f;
    } else {
      double d;
      std::memcpy(&d, &bits, 8);
      out.values[i] = d;
    }
  }
  if (raw.header.fortran_order && raw.header.shape.size() > 1) {
    // Reorder through the integer helper's index map: values are moved, not converted.
    std::vector<int64_t> index(out.values.size());
    for (size_t i = 0; i < index.size(); ++i) index[i] = static_cast<int64_t>(i);
    const std::vector<int64_t> order = fortran_to_c(index, raw.header.shape);
    std::vector<double> c(out.values.size());
    for (size_t i = 0; i < c.size(); ++i) c[i] = out.values[static_cast<size_t>(order[i])];
    out.values = std::move(c);
  }
  return out;
}

}  // namespace apnn

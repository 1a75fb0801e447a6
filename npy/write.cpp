// write_npy_int*: validate everything first, then write a temporary file and rename it over
// the target, so readers never see a partial file and failures leave nothing behind.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "apnn/npy.h"
#include "npy/dtype.h"
#include "npy/fail.h"
#include "npy/header.h"

namespace apnn {

namespace {

using npy::fail;

[[noreturn]] void fail_io(const std::string& path, const std::string& what) {
  fail(ErrorKind::Io, path, what + ": " + std::strerror(errno));
}

// O_EXCL with a per-process counter instead of mkstemp, so the file gets the usual
// umask-derived permissions rather than mkstemp's 0600.
int create_temp(const std::string& path, std::string* temp) {
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    *temp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    const int fd = ::open(temp->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

void write_atomically(const std::string& path, const std::string& bytes) {
  std::string temp;
  const int fd = create_temp(path, &temp);
  if (fd < 0) fail_io(path, "cannot create a temporary file beside it");
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int saved = errno;
      ::close(fd);
      ::unlink(temp.c_str());
      errno = saved;
      fail_io(path, "cannot write");
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0 || std::rename(temp.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temp.c_str());
    errno = saved;
    fail_io(path, "cannot write");
  }
}

// Preamble and header of a version 1.0 file, then room for the data; *data_at is where it starts.
std::string start_file(const std::string& path, const std::string& descr, const std::vector<int64_t>& shape, int size,
                       int64_t* count, size_t* data_at) {
  *count = npy::element_count(shape, size, path);
  constexpr size_t kPreamble = 10;  // magic, version 1.0, 2-byte header length
  const std::string header = npy::format_header({descr, false, shape}, kPreamble);
  if (header.size() > 0xffff) fail(ErrorKind::InvalidInput, path, "shape is too long for a version 1.0 header");
  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  *data_at = bytes.size();
  bytes.resize(*data_at + static_cast<size_t>(*count) * size);
  return bytes;
}

}  // namespace

void write_npy_int(const std::string& path, const std::vector<int64_t>& shape, const int64_t* data,
                   const std::string& descr) {
  const npy::IntDType t = npy::parse_int_dtype(descr, path);
  int64_t count = 0;
  size_t data_at = 0;
  std::string bytes = start_file(path, t.descr(), shape, t.size, &count, &data_at);
  auto* p = reinterpret_cast<unsigned char*>(bytes.data()) + data_at;
  for (int64_t i = 0; i < count; ++i, p += t.size) {
    if (!t.fits(data[i]))
      fail(ErrorKind::InvalidInput, path,
           "value " + std::to_string(data[i]) + " at index " + std::to_string(i) + " does not fit dtype '" +
               t.descr() + "'");
    t.store(data[i], p);
  }
  write_atomically(path, bytes);
}

void write_npy_int32(const std::string& path, const std::vector<int64_t>& shape, const int32_t* data) {
  const std::vector<int64_t> wide(data, data + npy::element_count(shape, sizeof(int32_t), path));
  write_npy_int(path, shape, wide.data(), "<i4");
}

void write_npy_float32(const std::string& path, const std::vector<int64_t>& shape, const float* data) {
  int64_t count = 0;
  size_t data_at = 0;
  std::string bytes = start_file(path, "<f4", shape, 4, &count, &data_at);
  for (int64_t i = 0; i < count; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &data[i], 4);
    for (int b = 0; b < 4; ++b) bytes[data_at + static_cast<size_t>(i) * 4 + b] = static_cast<char>((bits >> (8 * b)) & 0xff);
  }
  write_atomically(path, bytes);
}

}  // namespace apnn

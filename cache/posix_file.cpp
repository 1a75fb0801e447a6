#include "cache/posix_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace apnn::posix {
namespace {

// Closes on scope exit; close() errors are reported by the writers that care (close_checked).
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  int close_checked() {
    int rc = ::close(fd);
    fd = -1;
    return rc == 0 ? 0 : errno;
  }
};

int write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return 0;
}

}  // namespace

std::string error_text(int err) { return std::strerror(err); }

void warn(const std::string& message) {
  // One fputs on unbuffered stderr: lines of concurrent processes do not interleave.
  std::fputs(("apnn: warning: " + message + "\n").c_str(), stderr);
}

int read_file(const std::filesystem::path& file, std::vector<char>* out, struct stat* st) {
  Fd f{::open(file.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) return errno;
  struct stat local;
  if (!st) st = &local;
  if (::fstat(f.fd, st) != 0) return errno;
  out->resize(static_cast<size_t>(st->st_size));
  size_t done = 0;
  while (done < out->size()) {
    ssize_t r = ::read(f.fd, out->data() + done, out->size() - done);
    if (r < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (r == 0) break;  // shrank under us: the caller sees a short file
    done += static_cast<size_t>(r);
  }
  out->resize(done);
  return 0;
}

int list_dir(const std::filesystem::path& dir, std::vector<std::string>* names) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return errno;
  names->clear();
  int err = 0;
  for (;;) {
    errno = 0;  // readdir reports errors only through errno
    const dirent* e = ::readdir(d);
    if (!e) {
      err = errno;
      break;
    }
    std::string_view name = e->d_name;
    if (name != "." && name != "..") names->emplace_back(name);
  }
  if (::closedir(d) != 0 && err == 0) err = errno;
  return err;
}

int write_file_atomic(const std::filesystem::path& target, const std::vector<char>& bytes) {
  std::string temp = target.string() + kTempMarker + "XXXXXX";
  Fd f{::mkostemp(temp.data(), O_CLOEXEC)};
  if (f.fd < 0) return errno;
  int err = write_all(f.fd, bytes.data(), bytes.size());
  // mkstemp creates 0600; the files are readable by others like any other cache file.
  if (err == 0 && ::fchmod(f.fd, 0644) != 0) err = errno;
  if (err == 0 && ::fsync(f.fd) != 0) err = errno;
  if (err == 0) err = f.close_checked();
  if (err == 0 && ::rename(temp.c_str(), target.c_str()) != 0) err = errno;
  if (err != 0) ::unlink(temp.c_str());  // best effort: the error being reported is err
  return err;
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

int FileLock::lock(const std::filesystem::path& file) {
  // Never O_EXCL and never unlinked while in use: every process must lock the same inode.
  fd_ = ::open(file.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (fd_ < 0) return errno;
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR) return errno;
  }
  return 0;
}

}  // namespace apnn::posix

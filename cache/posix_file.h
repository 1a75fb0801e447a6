// Small POSIX file helpers for the cache. They report failures as an errno value (0 = ok)
// because the cache degrades on I/O errors instead of throwing.
#pragma once
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

namespace apnn::posix {

std::string error_text(int err);                           // strerror(err)
void warn(const std::string& message);                     // one "apnn: warning: ..." line on stderr

// *st (optional) identifies the inode that was read.
int read_file(const std::filesystem::path& file, std::vector<char>* out, struct stat* st = nullptr);
int list_dir(const std::filesystem::path& dir, std::vector<std::string>* names);  // without . and ..
// Writes a temp file beside target (mkstemp), fsyncs it and renames it over target. On failure
// the temp file is removed, so a reader sees the old file or the whole new one.
int write_file_atomic(const std::filesystem::path& target, const std::vector<char>& bytes);
inline constexpr const char* kTempMarker = ".tmp.";        // in every temp file's name

// flock(LOCK_EX) on a plain lock file, held until destruction (or the process dies).
class FileLock {
 public:
  FileLock() = default;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();
  int lock(const std::filesystem::path& file);  // blocks; 0 or errno

 private:
  int fd_ = -1;
};

}  // namespace apnn::posix

// One way to report a bad .npy file: a one-line Error that starts with the file's path.
#pragma once
#include <string>

#include "apnn/error.h"

namespace apnn::npy {

[[noreturn]] inline void fail(ErrorKind kind, const std::string& path, const std::string& what) {
  throw Error(kind, path + ": " + what);
}

}  // namespace apnn::npy

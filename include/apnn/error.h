// Errors carry their kind so callers (the CLI) can map them to exit codes,
// and their context (field, spec, log) is already in the message.
#pragma once
#include <stdexcept>
#include <string>

namespace apnn {

enum class ErrorKind {
  InvalidSpec,   // a kernel spec that fails validation (names the field)
  InvalidInput,  // bad user data: shapes, values out of range, malformed .npy, unknown arch
  Io,            // a file that cannot be read or written
  Compile,       // NVRTC rejected the generated source (log + dumped source path)
  Cache,         // the disk cache failed in a way that cannot be degraded
  NoDriver,      // libcuda.so.1 could not be loaded
  NoDevice,      // the driver loaded but reports no CUDA device
  Driver,        // a CUDA driver call failed (names the call, kernel, spec)
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

}  // namespace apnn

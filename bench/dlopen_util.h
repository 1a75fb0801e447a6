// dlopen helpers of the vendor libraries (cublaslt_lib.h, cudnn_lib.h).
#pragma once
#include <dlfcn.h>

#include <initializer_list>
#include <string>

#include <fmt/format.h>

#include "apnn/error.h"

namespace apnn::bench {

// The first of `names` that loads; an error naming all of them otherwise.
inline void* open_any(std::initializer_list<const char*> names, const char* what) {
  std::string tried;
  for (const char* n : names) {
    if (void* h = dlopen(n, RTLD_NOW | RTLD_LOCAL)) return h;
    tried += (tried.empty() ? "" : ", ") + std::string(n);
  }
  throw Error(ErrorKind::InvalidInput,
              fmt::format("{} could not be loaded ({}): put its directory on LD_LIBRARY_PATH", what, tried));
}

template <class Fn>
void bind(void* lib, const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (!*fn) throw Error(ErrorKind::InvalidInput, fmt::format("{} not found in the loaded library", name));
}

}  // namespace apnn::bench

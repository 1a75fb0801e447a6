#include "runtime/driver_api.h"

#include <dlfcn.h>

#include <mutex>

#include <fmt/format.h>

#include "apnn/error.h"

namespace apnn::driver {

namespace {

Api load() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) throw Error(ErrorKind::NoDriver, fmt::format("no CUDA driver: cannot load libcuda.so.1 ({})", dlerror()));
  Api a;
#define APNN_RESOLVE(name, sym)                                                                        \
  a.name = reinterpret_cast<decltype(a.name)>(dlsym(lib, sym));                                        \
  if (!a.name) throw Error(ErrorKind::NoDriver, fmt::format("no CUDA driver: libcuda.so.1 lacks {} (driver too old)", sym));
  APNN_DRIVER_FUNCTIONS(APNN_RESOLVE)
#undef APNN_RESOLVE
  const CUresult r = a.Init(0);
  if (r == CUDA_ERROR_NO_DEVICE) throw Error(ErrorKind::NoDevice, "no CUDA device: the driver reports none");
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    a.GetErrorName(r, &name);
    throw Error(ErrorKind::NoDevice, fmt::format("no CUDA device: cuInit failed ({})", name ? name : "unknown error"));
  }
  int count = 0;
  if (a.DeviceGetCount(&count) != CUDA_SUCCESS || count == 0)
    throw Error(ErrorKind::NoDevice, "no CUDA device: the driver reports none");
  return a;
}

}  // namespace

const Api& api() {
  // Not std::call_once alone: a failed load must throw the same error to every caller.
  static std::once_flag once;
  static Api loaded;
  static ErrorKind failure_kind = ErrorKind::NoDriver;
  static std::string failure;
  std::call_once(once, [] {
    try {
      loaded = load();
    } catch (const Error& e) {
      failure_kind = e.kind();
      failure = e.what();
    }
  });
  if (!failure.empty()) throw Error(failure_kind, failure);
  return loaded;
}

std::string describe(CUresult r, const char* call, const std::string& context) {
  const char* name = nullptr;
  const char* text = nullptr;
  api().GetErrorName(r, &name);
  api().GetErrorString(r, &text);
  return fmt::format("{} failed: {} ({}){}", call, name ? name : "?", text ? text : "?",
                     context.empty() ? "" : fmt::format(" [{}]", context));
}

void check(CUresult r, const char* call, const std::string& context) {
  if (r != CUDA_SUCCESS) throw Error(ErrorKind::Driver, describe(r, call, context));
}

}  // namespace apnn::driver

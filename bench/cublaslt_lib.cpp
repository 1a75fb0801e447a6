#include "bench/cublaslt_lib.h"

#include <mutex>

#include "bench/dlopen_util.h"

namespace apnn::bench {

const CublasLtApi& cublaslt() {
  static std::once_flag once;
  static CublasLtApi api;
  std::call_once(once, [] {
    void* lib = open_any({"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"}, "cuBLASLt");
#define APNN_BIND(name) bind(lib, #name, &api.name);
    APNN_CUBLASLT_FUNCTIONS(APNN_BIND)
#undef APNN_BIND
  });
  return api;
}

std::string cublaslt_version() {
  const size_t v = cublaslt().cublasLtGetVersion();
  return fmt::format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100);
}

}  // namespace apnn::bench

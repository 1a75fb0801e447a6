#include "bench/cudnn_lib.h"

#include <mutex>

#include "bench/dlopen_util.h"

namespace apnn::bench {

const CudnnApi& cudnn() {
  static std::once_flag once;
  static CudnnApi api;
  std::call_once(once, [] {
    void* lib = open_any({"libcudnn.so.9", "libcudnn.so"}, "cuDNN 9");
#define APNN_BIND(name) bind(lib, #name, &api.name);
    APNN_CUDNN_FUNCTIONS(APNN_BIND)
#undef APNN_BIND
  });
  return api;
}

std::string cudnn_version() {
  const size_t v = cudnn().cudnnGetVersion();
  return fmt::format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100);
}

}  // namespace apnn::bench

// cuDNN 9 is loaded with dlopen when `apnn bench` first needs it, never linked: the `apnn`
// binary then starts on machines without it (cuDNN often lives only inside a Python wheel),
// and only the benchmark asks for it. The header gives the types.
#pragma once
#include <cudnn.h>

#include <string>

namespace apnn::bench {

#define APNN_CUDNN_FUNCTIONS(X)                                                                          \
  X(cudnnCreate) X(cudnnDestroy) X(cudnnGetVersion) X(cudnnGetErrorString) X(cudnnGetLastErrorString)   \
  X(cudnnBackendCreateDescriptor) X(cudnnBackendDestroyDescriptor) X(cudnnBackendSetAttribute)          \
  X(cudnnBackendGetAttribute) X(cudnnBackendFinalize) X(cudnnBackendExecute)

struct CudnnApi {
#define APNN_DECLARE(name) decltype(&::name) name = nullptr;
  APNN_CUDNN_FUNCTIONS(APNN_DECLARE)
#undef APNN_DECLARE
};

// Loaded once; errors as cublaslt().
const CudnnApi& cudnn();
std::string cudnn_version();  // "9.10.2"

}  // namespace apnn::bench

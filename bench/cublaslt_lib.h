// cuBLASLt is loaded with dlopen when `apnn bench` first needs it, never linked: the `apnn`
// binary then starts on machines without it (cuDNN often lives only inside a Python wheel),
// and only the benchmark asks for it. The header gives the types.
#pragma once
#include <cublasLt.h>

#include <string>

namespace apnn::bench {

#define APNN_CUBLASLT_FUNCTIONS(X)                                                                     \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtGetVersion) X(cublasLtMatmulDescCreate)               \
  X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate)         \
  X(cublasLtMatrixLayoutDestroy) X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceDestroy) \
  X(cublasLtMatmulPreferenceSetAttribute) X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul)

struct CublasLtApi {
#define APNN_DECLARE(name) decltype(&::name) name = nullptr;
  APNN_CUBLASLT_FUNCTIONS(APNN_DECLARE)
#undef APNN_DECLARE
};

// Loaded once. Throws Error(InvalidInput) naming the library and LD_LIBRARY_PATH when it
// cannot be loaded, or the missing symbol.
const CublasLtApi& cublaslt();
std::string cublaslt_version();  // "13.0.0"

}  // namespace apnn::bench

// cuBLASLt's GEMM for Y (M x N) = W (M x K) . X (N x K)^T in int8 (int32 out), fp8 e4m3
// (bf16 out) and fp16 (fp16 out), with the library's first heuristic choice, on random
// inputs (never zeros). Benchmark-only: the library never links cuBLASLt.
#pragma once
#include <memory>
#include <string>

namespace apnn::bench {

enum class VendorType { Int8, Fp8, Fp16 };
const char* vendor_name(VendorType t);

class CublasLtGemm {
 public:
  CublasLtGemm(VendorType type, int64_t M, int64_t N, int64_t K);
  ~CublasLtGemm();
  void run();  // one GEMM on the default stream

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace apnn::bench

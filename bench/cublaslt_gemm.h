// cuBLASLt's GEMM for Y (M x N) = W (M x K) . X (N x K)^T in int8 (int32 out), fp8 e4m3
// (bf16 out) and fp16 (fp16 out, fp32 accumulate), on random inputs (never zeros), with
// several input sets to cycle through and the heuristic's top candidates to choose from.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "apnn/engine.h"

namespace apnn::bench {

enum class VendorType { Int8, Fp8, Fp16 };
const char* vendor_impl(VendorType t);  // "cublaslt-int8", ...
const char* vendor_prec(VendorType t);  // "int8", "fp8-e4m3", "fp16"

class CublasLtGemm {
 public:
  static constexpr int kCandidates = 4;
  // Throws Error(Driver) when cuBLASLt has no algorithm for the shape.
  CublasLtGemm(VendorType type, const ApmmShape& s, size_t l2_bytes);
  ~CublasLtGemm();
  int sets() const;
  int candidates() const;         // algorithms the heuristic returned (<= kCandidates)
  void use(int candidate);        // the algorithm launch() runs
  void launch(int set);           // one GEMM on the default stream
  std::string describe() const;   // the algorithm in use, for the report

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace apnn::bench

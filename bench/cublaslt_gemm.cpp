#include "bench/cublaslt_gemm.h"

#include <cublasLt.h>

#include <random>
#include <vector>

#include <fmt/format.h>

#include "apnn/error.h"
#include "runtime/device_buffer.h"

namespace apnn::bench {

namespace {

void check(cublasStatus_t st, const char* call) {
  if (st != CUBLAS_STATUS_SUCCESS) throw Error(ErrorKind::Driver, fmt::format("{} failed: status {}", call, static_cast<int>(st)));
}

// Random non-zero elements of each type: int8 in +-[1, 127], fp8 e4m3 and fp16 in +-[0.5, 1).
std::vector<uint8_t> random_bytes(VendorType t, size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  const size_t width = t == VendorType::Fp16 ? 2 : 1;
  std::vector<uint8_t> b(count * width);
  for (size_t i = 0; i < count; ++i) {
    const uint32_t r = rng();
    switch (t) {
      case VendorType::Int8: b[i] = static_cast<uint8_t>(static_cast<int8_t>((r % 127 + 1) * ((r >> 8) & 1 ? 1 : -1))); break;
      case VendorType::Fp8: b[i] = static_cast<uint8_t>(((r & 1u) << 7) | (6u << 3) | ((r >> 1) & 7u)); break;
      case VendorType::Fp16: {
        const uint16_t h = static_cast<uint16_t>(((r & 1u) << 15) | 0x3800u | ((r >> 1) & 0x3ffu));
        b[2 * i] = static_cast<uint8_t>(h & 0xff);
        b[2 * i + 1] = static_cast<uint8_t>(h >> 8);
        break;
      }
    }
  }
  return b;
}

}  // namespace

const char* vendor_name(VendorType t) {
  switch (t) {
    case VendorType::Int8: return "cublasLt int8";
    case VendorType::Fp8: return "cublasLt fp8";
    case VendorType::Fp16: return "cublasLt fp16";
  }
  return "?";
}

struct CublasLtGemm::State {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulHeuristicResult_t algo{};
  DeviceBuffer ab, bb, cb, workspace;
  VendorType type{};
  int32_t ialpha = 1, ibeta = 0;
  float falpha = 1.f, fbeta = 0.f;
};

// Column-major view: C (N x M) = X^T-as-stored (K x N, transposed) . W (K x M): the TN
// layout that int8 and fp8 tensor-core GEMMs require.
CublasLtGemm::CublasLtGemm(VendorType type, int64_t M, int64_t N, int64_t K) : s_(std::make_unique<State>()) {
  State& s = *s_;
  s.type = type;
  check(cublasLtCreate(&s.handle), "cublasLtCreate");
  cudaDataType_t in = CUDA_R_8I, out = CUDA_R_32I, scale = CUDA_R_32I;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32I;
  size_t out_bytes = 4;
  if (type == VendorType::Fp8) in = CUDA_R_8F_E4M3, out = CUDA_R_16BF, scale = CUDA_R_32F, compute = CUBLAS_COMPUTE_32F, out_bytes = 2;
  if (type == VendorType::Fp16) in = CUDA_R_16F, out = CUDA_R_16F, scale = CUDA_R_32F, compute = CUBLAS_COMPUTE_32F, out_bytes = 2;
  check(cublasLtMatmulDescCreate(&s.op, compute, scale), "cublasLtMatmulDescCreate");
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  check(cublasLtMatmulDescSetAttribute(s.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)), "set TRANSA");
  check(cublasLtMatmulDescSetAttribute(s.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)), "set TRANSB");
  check(cublasLtMatrixLayoutCreate(&s.a, in, K, N, K), "layout A");
  check(cublasLtMatrixLayoutCreate(&s.b, in, K, M, K), "layout B");
  check(cublasLtMatrixLayoutCreate(&s.c, out, N, M, N), "layout C");
  s.ab = DeviceBuffer::from(random_bytes(type, static_cast<size_t>(N * K), 1));
  s.bb = DeviceBuffer::from(random_bytes(type, static_cast<size_t>(M * K), 2));
  s.cb = DeviceBuffer(static_cast<size_t>(M * N) * out_bytes);
  const size_t ws = 64u << 20;
  s.workspace = DeviceBuffer(ws);
  cublasLtMatmulPreference_t pref = nullptr;
  check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
        "set workspace");
  int found = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(s.handle, s.op, s.a, s.b, s.c, s.c, pref, 1, &s.algo, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  check(st, "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0) throw Error(ErrorKind::Driver, fmt::format("{}: no algorithm for {}x{}x{}", vendor_name(type), M, N, K));
}

CublasLtGemm::~CublasLtGemm() {
  cublasLtMatrixLayoutDestroy(s_->a);
  cublasLtMatrixLayoutDestroy(s_->b);
  cublasLtMatrixLayoutDestroy(s_->c);
  cublasLtMatmulDescDestroy(s_->op);
  cublasLtDestroy(s_->handle);
}

void CublasLtGemm::run() {
  State& s = *s_;
  const void* alpha = s.type == VendorType::Int8 ? static_cast<const void*>(&s.ialpha) : &s.falpha;
  const void* beta = s.type == VendorType::Int8 ? static_cast<const void*>(&s.ibeta) : &s.fbeta;
  void* c = reinterpret_cast<void*>(s.cb.ptr());
  check(cublasLtMatmul(s.handle, s.op, alpha, reinterpret_cast<void*>(s.ab.ptr()), s.a, reinterpret_cast<void*>(s.bb.ptr()),
                       s.b, beta, c, s.c, c, s.c, &s.algo.algo, reinterpret_cast<void*>(s.workspace.ptr()),
                       s.workspace.bytes(), nullptr),
        "cublasLtMatmul");
}

}  // namespace apnn::bench

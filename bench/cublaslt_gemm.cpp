#include "bench/cublaslt_gemm.h"

#include <random>
#include <vector>

#include <fmt/format.h>

#include "apnn/error.h"
#include "bench/cublaslt_lib.h"
#include "runtime/steady_timing.h"
#include "runtime/device_buffer.h"

namespace apnn::bench {

namespace {

constexpr size_t kShift = 1031, kMaxSets = 32;  // as in ours.cpp: set i starts at element i * kShift

void check(cublasStatus_t st, const char* call) {
  if (st != CUBLAS_STATUS_SUCCESS) throw Error(ErrorKind::Driver, fmt::format("{} failed: status {}", call, static_cast<int>(st)));
}

size_t element_bytes(VendorType t) { return t == VendorType::Fp16 ? 2 : 1; }

// Random non-zero elements of each type: int8 in +-[1, 127], fp8 e4m3 and fp16 in +-[0.5, 1).
std::vector<uint8_t> random_bytes(VendorType t, size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> b(count * element_bytes(t));
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

const char* vendor_impl(VendorType t) {
  switch (t) {
    case VendorType::Int8: return "cublaslt-int8";
    case VendorType::Fp8: return "cublaslt-fp8";
    case VendorType::Fp16: return "cublaslt-fp16";
  }
  return "?";
}

const char* vendor_prec(VendorType t) {
  switch (t) {
    case VendorType::Int8: return "int8";
    case VendorType::Fp8: return "fp8-e4m3";
    case VendorType::Fp16: return "fp16";
  }
  return "?";
}

struct CublasLtGemm::State {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulHeuristicResult_t algos[kCandidates]{};
  int found = 0, chosen = 0;
  std::vector<DeviceBuffer> ab, bb, cb;
  DeviceBuffer workspace;
  VendorType type{};
  int32_t ialpha = 1, ibeta = 0;
  float falpha = 1.f, fbeta = 0.f;
};

// Column-major view: C (N x M) = X^T-as-stored (K x N, transposed) . W (K x M): the TN
// layout that int8 and fp8 tensor-core GEMMs require.
CublasLtGemm::CublasLtGemm(VendorType type, const ApmmShape& sh, size_t l2) : s_(std::make_unique<State>()) {
  const CublasLtApi& lt = cublaslt();
  State& s = *s_;
  s.type = type;
  const int64_t M = sh.M, N = sh.N, K = sh.K;
  check(lt.cublasLtCreate(&s.handle), "cublasLtCreate");
  cudaDataType_t in = CUDA_R_8I, out = CUDA_R_32I, scale = CUDA_R_32I;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32I;
  size_t out_bytes = 4;
  if (type == VendorType::Fp8) in = CUDA_R_8F_E4M3, out = CUDA_R_16BF, scale = CUDA_R_32F, compute = CUBLAS_COMPUTE_32F, out_bytes = 2;
  if (type == VendorType::Fp16) in = CUDA_R_16F, out = CUDA_R_16F, scale = CUDA_R_32F, compute = CUBLAS_COMPUTE_32F, out_bytes = 2;
  check(lt.cublasLtMatmulDescCreate(&s.op, compute, scale), "cublasLtMatmulDescCreate");
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  check(lt.cublasLtMatmulDescSetAttribute(s.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)), "set TRANSA");
  check(lt.cublasLtMatmulDescSetAttribute(s.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)), "set TRANSB");
  check(lt.cublasLtMatrixLayoutCreate(&s.a, in, K, N, K), "layout A");
  check(lt.cublasLtMatrixLayoutCreate(&s.b, in, K, M, K), "layout B");
  check(lt.cublasLtMatrixLayoutCreate(&s.c, out, N, M, N), "layout C");
  const size_t ws = 64u << 20;
  s.workspace = DeviceBuffer(ws);
  cublasLtMatmulPreference_t pref = nullptr;
  check(lt.cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  check(lt.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
        "set workspace");
  const cublasStatus_t st =
      lt.cublasLtMatmulAlgoGetHeuristic(s.handle, s.op, s.a, s.b, s.c, s.c, pref, kCandidates, s.algos, &s.found);
  lt.cublasLtMatmulPreferenceDestroy(pref);
  check(st, "cublasLtMatmulAlgoGetHeuristic");
  if (s.found == 0) throw Error(ErrorKind::Driver, fmt::format("{}: no algorithm for {}x{}x{}", vendor_impl(type), M, N, K));

  const size_t an = static_cast<size_t>(N * K), bn = static_cast<size_t>(M * K), eb = element_bytes(type);
  const std::vector<uint8_t> A = random_bytes(type, an + kMaxSets * kShift, 1), B = random_bytes(type, bn + kMaxSets * kShift, 2);
  const size_t c_bytes = static_cast<size_t>(M * N) * out_bytes;
  const int sets = rotation_sets((an + bn) * eb + c_bytes, l2);
  for (int i = 0; i < sets; ++i) {
    s.ab.emplace_back(an * eb);
    s.ab.back().upload(A.data() + i * kShift * eb, an * eb);
    s.bb.emplace_back(bn * eb);
    s.bb.back().upload(B.data() + i * kShift * eb, bn * eb);
    s.cb.emplace_back(c_bytes);
  }
}

CublasLtGemm::~CublasLtGemm() {
  const CublasLtApi& lt = cublaslt();
  lt.cublasLtMatrixLayoutDestroy(s_->a);
  lt.cublasLtMatrixLayoutDestroy(s_->b);
  lt.cublasLtMatrixLayoutDestroy(s_->c);
  lt.cublasLtMatmulDescDestroy(s_->op);
  lt.cublasLtDestroy(s_->handle);
}

int CublasLtGemm::sets() const { return static_cast<int>(s_->ab.size()); }
int CublasLtGemm::candidates() const { return s_->found; }
void CublasLtGemm::use(int candidate) { s_->chosen = candidate; }

std::string CublasLtGemm::describe() const {
  return fmt::format("heuristic candidate {} of {}, {} bytes of workspace", s_->chosen, s_->found,
                     s_->algos[s_->chosen].workspaceSize);
}

void CublasLtGemm::launch(int set) {
  State& s = *s_;
  const void* alpha = s.type == VendorType::Int8 ? static_cast<const void*>(&s.ialpha) : &s.falpha;
  const void* beta = s.type == VendorType::Int8 ? static_cast<const void*>(&s.ibeta) : &s.fbeta;
  void* c = reinterpret_cast<void*>(s.cb[set].ptr());
  check(cublaslt().cublasLtMatmul(s.handle, s.op, alpha, reinterpret_cast<void*>(s.ab[set].ptr()), s.a,
                                  reinterpret_cast<void*>(s.bb[set].ptr()), s.b, beta, c, s.c, c, s.c,
                                  &s.algos[s.chosen].algo, reinterpret_cast<void*>(s.workspace.ptr()),
                                  s.workspace.bytes(), nullptr),
        "cublasLtMatmul");
}

}  // namespace apnn::bench

#include "bench/cublaslt_gemm.h"

#include <vector>

#include <fmt/format.h>

#include "apnn/error.h"
#include "bench/cublaslt_lib.h"
#include "bench/vendor_inputs.h"
#include "runtime/steady_timing.h"
#include "runtime/device_buffer.h"

namespace apnn::bench {

namespace {

void check(cublasStatus_t st, const char* call) {
  if (st != CUBLAS_STATUS_SUCCESS) throw Error(ErrorKind::Driver, fmt::format("{} failed: status {}", call, static_cast<int>(st)));
}

Element element_of(VendorType t) {
  return t == VendorType::Int8 ? Element::Int8 : t == VendorType::Fp8 ? Element::Fp8E4M3 : Element::Fp16;
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

  const Element e = element_of(type);
  const size_t an = static_cast<size_t>(N * K), bn = static_cast<size_t>(M * K), eb = element_bytes(e);
  const size_t c_bytes = static_cast<size_t>(M * N) * out_bytes;
  const int sets = rotation_sets((an + bn) * eb + c_bytes, l2);
  s.ab = upload_sets(draw_for_sets(e, an, 1), e, an, sets);
  s.bb = upload_sets(draw_for_sets(e, bn, 2), e, bn, sets);
  for (int i = 0; i < sets; ++i) s.cb.emplace_back(c_bytes);
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

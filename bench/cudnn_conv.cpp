#include "bench/cudnn_conv.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "apnn/error.h"
#include "bench/cudnn_lib.h"
#include "bench/vendor_inputs.h"
#include "runtime/steady_timing.h"
#include "runtime/device_buffer.h"

namespace apnn::bench {

namespace {

constexpr int64_t kMaxWorkspace = int64_t{1} << 30;
enum : int64_t { kUidX = 1, kUidW = 2, kUidY = 3 };

std::string last_error() {
  char buf[512] = {};
  cudnn().cudnnGetLastErrorString(buf, sizeof(buf));
  return buf;
}

void check(cudnnStatus_t st, const char* what) {
  if (st != CUDNN_STATUS_SUCCESS)
    throw Error(ErrorKind::Driver, fmt::format("cuDNN {} failed: {} {}", what, cudnn().cudnnGetErrorString(st), last_error()));
}

// A backend descriptor that destroys itself.
struct Desc {
  cudnnBackendDescriptor_t d = nullptr;
  explicit Desc(cudnnBackendDescriptorType_t type) { check(cudnn().cudnnBackendCreateDescriptor(type, &d), "create descriptor"); }
  ~Desc() {
    if (d) cudnn().cudnnBackendDestroyDescriptor(d);
  }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  template <class T>
  Desc& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t n, const T* v, const char* what) {
    check(cudnn().cudnnBackendSetAttribute(d, name, type, n, v), what);
    return *this;
  }
  void finalize(const char* what) { check(cudnn().cudnnBackendFinalize(d), what); }
};

using DescPtr = std::unique_ptr<Desc>;

// NHWC strides for logical dims (n, c, h, w).
DescPtr tensor(int64_t uid, cudnnDataType_t type, int64_t n, int64_t c, int64_t h, int64_t w) {
  auto t = std::make_unique<Desc>(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const int64_t dims[] = {n, c, h, w}, strides[] = {h * w * c, 1, w * c, c}, align = 16;
  t->set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type, "tensor data type")
      .set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims, "tensor dims")
      .set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides, "tensor strides")
      .set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, "tensor uid")
      .set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align, "tensor alignment");
  t->finalize("tensor finalize");
  return t;
}

size_t type_bytes(cudnnDataType_t t) { return t == CUDNN_DATA_HALF ? 2 : t == CUDNN_DATA_INT8 ? 1 : 4; }

Element element_of(cudnnDataType_t t) { return t == CUDNN_DATA_INT8 ? Element::Int8 : Element::Fp16; }

struct Variant {
  cudnnDataType_t in, out, compute;
  const char* name;
};

}  // namespace

const char* conv_impl(ConvType t) { return t == ConvType::Fp16 ? "cudnn-fp16-nhwc" : "cudnn-int8-nhwc"; }
const char* conv_prec(ConvType t) { return t == ConvType::Fp16 ? "fp16" : "int8"; }

struct CudnnConv::State {
  cudnnHandle_t handle = nullptr;
  std::vector<DescPtr> keep;  // the graph the plans were made from
  struct Plan {
    DescPtr plan;
    int64_t workspace = 0, engine = -1;
    const char* heuristic = "";
  };
  std::vector<Plan> plans;
  int chosen = 0;
  const char* variant = "";
  std::string why;
  std::vector<DeviceBuffer> x, w, y;
  DeviceBuffer workspace;
  std::vector<DescPtr> packs;  // one variant pack per set
};

CudnnConv::CudnnConv(ConvType type, const ConvGeometry& g, size_t l2) : s_(std::make_unique<State>()) {
  State& s = *s_;
  check(cudnn().cudnnCreate(&s.handle), "cudnnCreate");
  const std::vector<Variant> variants =
      type == ConvType::Fp16
          ? std::vector<Variant>{{CUDNN_DATA_HALF, CUDNN_DATA_HALF, CUDNN_DATA_FLOAT, "fp16 -> fp16, fp32 accumulate"}}
          : std::vector<Variant>{{CUDNN_DATA_INT8, CUDNN_DATA_INT32, CUDNN_DATA_INT32, "int8 -> int32"},
                                 {CUDNN_DATA_INT8, CUDNN_DATA_FLOAT, CUDNN_DATA_INT32, "int8 -> float, int32 accumulate"}};
  const Variant* picked = nullptr;
  std::vector<std::string> tried;
  for (const Variant& v : variants) {
    std::vector<DescPtr> keep;
    keep.push_back(tensor(kUidX, v.in, g.N, g.C, g.H, g.W));
    keep.push_back(tensor(kUidW, v.in, g.O, g.C, g.kh, g.kw));
    keep.push_back(tensor(kUidY, v.out, g.N, g.O, g.Ho(), g.Wo()));
    auto conv = std::make_unique<Desc>(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    const int64_t dims = 2, pad[] = {g.ph, g.pw}, stride[] = {g.sh, g.sw}, dil[] = {1, 1};
    const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    conv->set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims, "conv spatial dims")
        .set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &v.compute, "conv compute type")
        .set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode, "conv mode")
        .set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad, "conv pre padding")
        .set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad, "conv post padding")
        .set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil, "conv dilations")
        .set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride, "conv strides");
    conv->finalize("conv finalize");
    auto op = std::make_unique<Desc>(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
    const float alpha = 1.0f, beta = 0.0f;
    op->set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &keep[0]->d, "op X")
        .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &keep[1]->d, "op W")
        .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &keep[2]->d, "op Y")
        .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv->d, "op conv")
        .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha, "op alpha")
        .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta, "op beta");
    op->finalize("convolution operation finalize");
    auto graph = std::make_unique<Desc>(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    graph->set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op->d, "graph ops")
        .set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &s.handle, "graph handle");
    if (cudnn().cudnnBackendFinalize(graph->d) != CUDNN_STATUS_SUCCESS) {
      tried.push_back(fmt::format("{}: graph not supported", v.name));
      continue;
    }
    // Heuristics A first; the fallback list only when A yields nothing that finalizes.
    std::vector<State::Plan> plans;
    for (auto [mode_id, mode_name] : {std::pair{CUDNN_HEUR_MODE_A, "heuristics A"}, {CUDNN_HEUR_MODE_FALLBACK, "fallback"}}) {
      Desc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
      const cudnnBackendHeurMode_t hm = mode_id;
      heur.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph->d, "heuristics graph")
          .set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &hm, "heuristics mode");
      if (cudnn().cudnnBackendFinalize(heur.d) != CUDNN_STATUS_SUCCESS) continue;
      int64_t count = 0;
      if (cudnn().cudnnBackendGetAttribute(heur.d, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                                           nullptr) != CUDNN_STATUS_SUCCESS)
        continue;
      std::vector<DescPtr> cfgs;
      std::vector<cudnnBackendDescriptor_t> raw;
      for (int64_t i = 0; i < count; ++i) {
        cfgs.push_back(std::make_unique<Desc>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
        raw.push_back(cfgs.back()->d);
      }
      int64_t got = 0;
      if (count == 0 || cudnn().cudnnBackendGetAttribute(heur.d, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                                         count, &got, raw.data()) != CUDNN_STATUS_SUCCESS)
        continue;
      for (int64_t i = 0; i < got && static_cast<int>(plans.size()) < kCandidates; ++i) {
        auto plan = std::make_unique<Desc>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
        plan->set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &s.handle, "plan handle")
            .set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw[i], "plan config");
        if (cudnn().cudnnBackendFinalize(plan->d) != CUDNN_STATUS_SUCCESS) continue;
        State::Plan p;
        int64_t n = 0;
        check(cudnn().cudnnBackendGetAttribute(plan->d, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n,
                                               &p.workspace),
              "plan workspace size");
        if (p.workspace > kMaxWorkspace) continue;
        Desc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
        if (cudnn().cudnnBackendGetAttribute(raw[i], CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                                             &engine.d) == CUDNN_STATUS_SUCCESS)
          cudnn().cudnnBackendGetAttribute(engine.d, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &p.engine);
        p.plan = std::move(plan);
        p.heuristic = mode_name;
        plans.push_back(std::move(p));
      }
      if (!plans.empty()) break;
    }
    if (plans.empty()) {
      tried.push_back(fmt::format("{}: no engine", v.name));
      continue;
    }
    keep.push_back(std::move(conv));
    keep.push_back(std::move(op));
    keep.push_back(std::move(graph));
    s.keep = std::move(keep);
    s.plans = std::move(plans);
    picked = &v;
    break;
  }
  if (!picked) {
    s.why = fmt::format("cuDNN {} offers no engine for this shape ({})", cudnn_version(), fmt::join(tried, "; "));
    return;
  }
  s.variant = picked->name;
  int64_t ws = 0;
  for (const State::Plan& p : s.plans) ws = std::max(ws, p.workspace);
  s.workspace = DeviceBuffer(static_cast<size_t>(std::max<int64_t>(ws, 256)));
  const size_t xn = static_cast<size_t>(g.N * g.C * g.H * g.W), wn = static_cast<size_t>(g.O * g.C * g.kh * g.kw);
  const size_t ib = type_bytes(picked->in), y_bytes = static_cast<size_t>(g.N * g.O * g.Ho() * g.Wo()) * type_bytes(picked->out);
  const int sets = rotation_sets((xn + wn) * ib + y_bytes, l2);
  const Element e = element_of(picked->in);
  s.x = upload_sets(draw_for_sets(e, xn, 1), e, xn, sets);
  s.w = upload_sets(draw_for_sets(e, wn, 2), e, wn, sets);
  for (int i = 0; i < sets; ++i) {
    s.y.emplace_back(y_bytes);
    const int64_t uids[] = {kUidX, kUidW, kUidY};
    void* ptrs[] = {reinterpret_cast<void*>(s.x[i].ptr()), reinterpret_cast<void*>(s.w[i].ptr()),
                    reinterpret_cast<void*>(s.y.back().ptr())};
    void* wsp = reinterpret_cast<void*>(s.workspace.ptr());
    auto pack = std::make_unique<Desc>(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    pack->set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids, "variant pack uids")
        .set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs, "variant pack pointers")
        .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &wsp, "variant pack workspace");
    pack->finalize("variant pack finalize");
    s.packs.push_back(std::move(pack));
  }
}

CudnnConv::~CudnnConv() {
  s_->packs.clear();
  s_->plans.clear();
  s_->keep.clear();
  if (s_->handle) cudnn().cudnnDestroy(s_->handle);
}

bool CudnnConv::available() const { return !s_->plans.empty(); }
std::string CudnnConv::why() const { return s_->why; }
int CudnnConv::sets() const { return static_cast<int>(s_->packs.size()); }
int CudnnConv::candidates() const { return static_cast<int>(s_->plans.size()); }
void CudnnConv::use(int candidate) { s_->chosen = candidate; }

std::string CudnnConv::describe() const {
  const State::Plan& p = s_->plans[s_->chosen];
  return fmt::format("{}; engine {} ({}, candidate {} of {}), {} bytes of workspace", s_->variant, p.engine, p.heuristic,
                     s_->chosen, s_->plans.size(), p.workspace);
}

void CudnnConv::launch(int set) {
  check(cudnn().cudnnBackendExecute(s_->handle, s_->plans[s_->chosen].plan->d, s_->packs[set]->d), "execute");
}

}  // namespace apnn::bench

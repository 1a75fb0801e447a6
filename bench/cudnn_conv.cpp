#include "bench/cudnn_conv.h"

#include <cudnn.h>

#include <random>
#include <vector>

#include <fmt/format.h>

#include "apnn/error.h"
#include "runtime/device_buffer.h"

namespace apnn::bench {

namespace {

void check(cudnnStatus_t st, const char* call) {
  if (st != CUDNN_STATUS_SUCCESS)
    throw Error(ErrorKind::Driver, fmt::format("{} failed: {}", call, cudnnGetErrorString(st)));
}

// fp16 bit patterns of random values in +-[0.5, 1): no zeros, no denormals.
std::vector<uint16_t> random_halves(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint16_t> v(n);
  for (auto& h : v) h = static_cast<uint16_t>(((rng() & 1u) << 15) | 0x3800u | (rng() & 0x3ffu));
  return v;
}

}  // namespace

struct CudnnConv::State {
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t algo{};
  DeviceBuffer xb, wb, yb, workspace;
  size_t workspace_bytes = 0;
  double find_us = 0;
};

CudnnConv::CudnnConv(const ConvGeometry& g) : s_(std::make_unique<State>()) {
  State& s = *s_;
  check(cudnnCreate(&s.handle), "cudnnCreate");
  check(cudnnCreateTensorDescriptor(&s.x), "cudnnCreateTensorDescriptor");
  check(cudnnCreateTensorDescriptor(&s.y), "cudnnCreateTensorDescriptor");
  check(cudnnCreateFilterDescriptor(&s.w), "cudnnCreateFilterDescriptor");
  check(cudnnCreateConvolutionDescriptor(&s.conv), "cudnnCreateConvolutionDescriptor");
  const int n = static_cast<int>(g.N), c = static_cast<int>(g.C), h = static_cast<int>(g.H), wd = static_cast<int>(g.W);
  const int o = static_cast<int>(g.O), ho = static_cast<int>(g.Ho()), wo = static_cast<int>(g.Wo());
  check(cudnnSetTensor4dDescriptor(s.x, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, n, c, h, wd), "cudnnSetTensor4dDescriptor(x)");
  check(cudnnSetFilter4dDescriptor(s.w, CUDNN_DATA_HALF, CUDNN_TENSOR_NHWC, o, c, g.kh, g.kw), "cudnnSetFilter4dDescriptor");
  check(cudnnSetTensor4dDescriptor(s.y, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, n, o, ho, wo), "cudnnSetTensor4dDescriptor(y)");
  check(cudnnSetConvolution2dDescriptor(s.conv, g.ph, g.pw, g.sh, g.sw, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
        "cudnnSetConvolution2dDescriptor");
  check(cudnnSetConvolutionMathType(s.conv, CUDNN_TENSOR_OP_MATH), "cudnnSetConvolutionMathType");
  s.xb = DeviceBuffer::from(random_halves(static_cast<size_t>(n) * c * h * wd, 1));
  s.wb = DeviceBuffer::from(random_halves(static_cast<size_t>(o) * c * g.kh * g.kw, 2));
  s.yb = DeviceBuffer(static_cast<size_t>(n) * o * ho * wo * 2);
  cudnnConvolutionFwdAlgoPerf_t perf[16];
  int found = 0;
  check(cudnnFindConvolutionForwardAlgorithm(s.handle, s.x, s.w, s.conv, s.y, 16, &found, perf),
        "cudnnFindConvolutionForwardAlgorithm");
  int best = -1;
  for (int i = 0; i < found; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && (best < 0 || perf[i].time < perf[best].time)) best = i;
  if (best < 0) throw Error(ErrorKind::Driver, "cuDNN found no working fp16 NHWC algorithm");
  s.algo = perf[best].algo;
  s.find_us = perf[best].time * 1e3;
  check(cudnnGetConvolutionForwardWorkspaceSize(s.handle, s.x, s.w, s.conv, s.y, s.algo, &s.workspace_bytes),
        "cudnnGetConvolutionForwardWorkspaceSize");
  s.workspace = DeviceBuffer(s.workspace_bytes);
}

CudnnConv::~CudnnConv() {
  cudnnDestroyConvolutionDescriptor(s_->conv);
  cudnnDestroyFilterDescriptor(s_->w);
  cudnnDestroyTensorDescriptor(s_->x);
  cudnnDestroyTensorDescriptor(s_->y);
  cudnnDestroy(s_->handle);
}

void CudnnConv::run() {
  const float alpha = 1.0f, beta = 0.0f;
  State& s = *s_;
  check(cudnnConvolutionForward(s.handle, &alpha, s.x, reinterpret_cast<void*>(s.xb.ptr()), s.w,
                                reinterpret_cast<void*>(s.wb.ptr()), s.conv, s.algo,
                                reinterpret_cast<void*>(s.workspace.ptr()), s.workspace_bytes, &beta, s.y,
                                reinterpret_cast<void*>(s.yb.ptr())),
        "cudnnConvolutionForward");
}

double CudnnConv::find_us() const { return s_->find_us; }

std::string CudnnConv::algorithm() const { return std::to_string(static_cast<int>(s_->algo)); }

}  // namespace apnn::bench

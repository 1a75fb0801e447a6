// cuDNN's forward convolution through the backend (graph) API, NHWC: fp16 (fp32 accumulate,
// fp16 out) or int8 (int32 accumulate, int32 or float out, whichever cuDNN takes). Engine
// configurations come from heuristics mode A (instant), then the fallback list; the caller
// times the finalized candidates and keeps the fastest (the legacy cudnnFind path picked
// engines 2-6x slower than PyTorch's on the H100). Random inputs, never zeros; several input
// sets to cycle through.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "apnn/conv_layout.h"

namespace apnn::bench {

enum class ConvType { Fp16, Int8 };
const char* conv_impl(ConvType t);  // "cudnn-fp16-nhwc", "cudnn-int8-nhwc"
const char* conv_prec(ConvType t);  // "fp16", "int8"

class CudnnConv {
 public:
  static constexpr int kCandidates = 5;
  // No engine for the shape is not an error: available() is false and why() says so.
  // A failing cuDNN call is Error(Driver).
  CudnnConv(ConvType type, const ConvGeometry& g, size_t l2_bytes);
  ~CudnnConv();
  bool available() const;
  std::string why() const;
  int sets() const;
  int candidates() const;
  void use(int candidate);
  void launch(int set);  // one convolution on the default stream
  std::string describe() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace apnn::bench

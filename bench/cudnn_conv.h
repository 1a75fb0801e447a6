// cuDNN's best fp16 NHWC convolution for a shape (the fastest algorithm cudnnFind
// reports), for timing beside ours. Benchmark-only: the library never links cuDNN.
#pragma once
#include <memory>
#include <string>

#include "apnn/conv_layout.h"

namespace apnn::bench {

class CudnnConv {
 public:
  explicit CudnnConv(const ConvGeometry& g);  // random fp16 inputs, never zeros
  ~CudnnConv();
  void run();                  // one forward convolution on the default stream
  std::string algorithm() const;
  double find_us() const;  // cuDNN's own time for the chosen algorithm (cudnnFind)

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace apnn::bench

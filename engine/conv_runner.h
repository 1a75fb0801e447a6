// Runs one APConv kernel module: packs NCHW / OCKhKw int16 tensors into the channel-major
// bit-plane layout (include/apnn/conv_layout.h) on the GPU and launches the implicit GEMM.
#pragma once
#include <cstdint>
#include <memory>

#include "apnn/conv_layout.h"
#include "apnn/engine.h"
#include "engine/epilogue_device.h"
#include "runtime/device_buffer.h"
#include "runtime/module.h"

namespace apnn {

struct PackedConvWeights {
  DeviceBuffer planes, possum, rowsum;
  int64_t O = 0, C = 0;
};

struct PackedConvActivations {
  DeviceBuffer planes, pixsum;
  int64_t N = 0, C = 0, H = 0, W = 0;
};

// The geometry of a spec and a shape; throws Error(InvalidInput) naming the bad size
// (0, an empty output, int32 overflow risk, sizes beyond the kernel's index range).
ConvGeometry conv_geometry(const KernelSpec& spec, const ConvShape& shape);

class ConvRunner {
 public:
  explicit ConvRunner(std::shared_ptr<Kernel> kernel);

  PackedConvWeights pack_w(const DeviceBuffer& values, const ConvGeometry& g);
  PackedConvActivations pack_x(const DeviceBuffer& values, const ConvGeometry& g);
  DeviceBuffer unpack_x(const PackedConvActivations& x);  // N*C*H*W int16
  // The output through the spec's chain (EpilogueDevice::allocate(dims(g))). One kernel
  // launch (a quantized output's sums are zeroed first where rules::quantize_sums_path says
  // so); asynchronous.
  void conv(const PackedConvWeights& w, const PackedConvActivations& x, const ConvGeometry& g, const EpilogueDevice& ep,
            LayerBuffers& out);
  // (N, O, Ho', Wo'): after the chain's pool; Error(InvalidInput) when the window does not fit.
  static OutputDims dims(const KernelSpec& spec, const ConvGeometry& g);
  const Kernel& kernel() const { return *kernel_; }

 private:
  std::shared_ptr<Kernel> kernel_;
};

}  // namespace apnn

// The run-time side of a fused epilogue on the GPU: the chain's parameters copied to the
// device, the layer's output buffers, and the kernel parameter that points at both.
#pragma once
#include <cstdint>

#include "apnn/epilogue.h"
#include "apnn/spec.h"
#include "runtime/device_buffer.h"

namespace apnn {

// The output of a layer as (images, channels, height, width): apconv (N, O, Ho', Wo'),
// apmm (1, M, 1, N) (see apnn/epilogue_reference.h).
struct OutputDims {
  int64_t N = 0, C = 0, H = 0, W = 0;
  int64_t pixels() const { return N * H * W; }
};

struct LayerBuffers {
  DeviceBuffer values;  // int32 / float32 values, or the packed planes of a quantize
  DeviceBuffer sums;    // quantize: per output pixel sum_s alpha_s*popc (pixsum / rowsum)
  // quantize: a 64-bit word a pixel that M tiles add their sums and arrivals to where
  // rules::quantize_sums_path says Scratch; zeroed here once, and left zero by every launch
  // (templates/epilogue.cuh, add_pixel_sum and PixelSumAdd)
  DeviceBuffer sum_scratch;
};

// Mirrors apnn::EpilogueArgs of templates/epilogue.cuh, passed by value to the kernel.
struct EpilogueKernelArgs {
  // sum_scratch: set by the runner where the kernel takes that path (rules::quantize_sums_path)
  CUdeviceptr scale = 0, bias = 0, q_scale = 0, q_zero = 0, out = 0, out_sum = 0, thresholds = 0, sum_scratch = 0;
};

class EpilogueDevice {
 public:
  EpilogueDevice() = default;
  // Checks the parameters (check_epilogue_params) and uploads them, with the quantize
  // thresholds where the kernel compares against them (quantize_thresholds.h).
  EpilogueDevice(const Epilogue& e, const EpilogueParams& p, int64_t channels);

  // Buffers of the right size for `dims` (the poison value fills value buffers, for checks).
  static LayerBuffers allocate(const Epilogue& e, const OutputDims& dims);
  EpilogueKernelArgs args(const LayerBuffers& out) const;

 private:
  DeviceBuffer scale_, bias_, q_scale_, q_zero_, thresholds_;
};

// Readies a quantized output's sums for a launch of spec's kernel over O output channels whose
// blocks run at most tiles_per_block tiles (rules::quantize_sums_path): points the kernel at
// the output's sum_scratch, or zeroes the sums on the stream; nothing on the other paths.
void prepare_sums(const KernelSpec& spec, int64_t O, int64_t tiles_per_block, LayerBuffers& out,
                  EpilogueKernelArgs& epi);

}  // namespace apnn

#include "engine/epilogue_device.h"

#include "apnn/conv_layout.h"
#include "engine/quantize_thresholds.h"
#include "spec/epilogue.h"
#include "spec/kernel_rules.h"

namespace apnn {

EpilogueDevice::EpilogueDevice(const Epilogue& e, const EpilogueParams& p, int64_t channels) {
  check_epilogue_params(e, p, channels);
  if (!p.scale.empty()) scale_ = DeviceBuffer::from(p.scale);
  if (!p.bias.empty()) bias_ = DeviceBuffer::from(p.bias);
  if (!p.q_scale.empty()) q_scale_ = DeviceBuffer::from(p.q_scale);
  if (!p.q_zero.empty()) q_zero_ = DeviceBuffer::from(p.q_zero);
  if (quantize_by_thresholds(e)) thresholds_ = DeviceBuffer::from(quantize_thresholds(e, p, channels));
}

LayerBuffers EpilogueDevice::allocate(const Epilogue& e, const OutputDims& d) {
  LayerBuffers b;
  if (const EpilogueOp* q = e.quantize()) {
    // apmm's (1, M, 1, N) in conv_layout.h is exactly the bitplane_layout.h operand of N rows x M.
    b.values = DeviceBuffer(static_cast<size_t>(conv_activation_words(q->out.bits, d.N, d.C, d.H, d.W)) * 4);
    b.sums = DeviceBuffer(static_cast<size_t>(d.pixels()) * 4);
    b.sum_scratch = DeviceBuffer(static_cast<size_t>(d.pixels()) * 8);
    b.sum_scratch.fill_u32(0);
  } else if (e.int16_out) {  // whole words, so that the buffer can be filled word by word
    b.values = DeviceBuffer((static_cast<size_t>(d.N * d.C * d.H * d.W) * 2 + 3) / 4 * 4);
  } else {
    b.values = DeviceBuffer(static_cast<size_t>(d.N * d.C * d.H * d.W) * 4);
  }
  return b;
}

EpilogueKernelArgs EpilogueDevice::args(const LayerBuffers& out) const {
  return {scale_.ptr(), bias_.ptr(), q_scale_.ptr(), q_zero_.ptr(), out.values.ptr(), out.sums.ptr(), thresholds_.ptr()};
}

void prepare_sums(const KernelSpec& spec, int64_t O, int64_t tiles_per_block, LayerBuffers& out,
                  EpilogueKernelArgs& epi) {
  switch (rules::quantize_sums_path(spec, O, tiles_per_block)) {
    case rules::SumsPath::Scratch: epi.sum_scratch = out.sum_scratch.ptr(); break;
    case rules::SumsPath::ZeroedFirst: out.sums.fill_u32_async(0); break;
    case rules::SumsPath::None:
    case rules::SumsPath::Stored: break;
  }
}

}  // namespace apnn

#include "engine/layer_result.h"

#include <fmt/format.h>

#include "apnn/conv_layout.h"
#include "apnn/conv_reference.h"
#include "apnn/error.h"

namespace apnn {

LayerResult download_layer(const Epilogue& e, const OutputDims& d, const LayerBuffers& out, std::vector<int64_t> shape) {
  LayerResult r;
  r.type = e.output_type();
  r.shape = std::move(shape);
  const size_t count = static_cast<size_t>(d.N * d.C * d.H * d.W);
  switch (r.type) {
    case OutputType::Int32: r.i32 = out.values.to_vector<int32_t>(count); break;
    case OutputType::Int16: {  // widened: LayerResult keeps integer outputs as int32
      const std::vector<int16_t> v = out.values.to_vector<int16_t>(count);
      r.i32.assign(v.begin(), v.end());
      break;
    }
    case OutputType::Float32: r.f32 = out.values.to_vector<float>(count); break;
    case OutputType::Packed:
      r.packed = e.quantize()->out;
      r.planes = out.values.to_vector<uint32_t>(out.values.bytes() / 4);
      r.sums = out.sums.to_vector<int32_t>(static_cast<size_t>(d.pixels()));
      break;
  }
  return r;
}

std::vector<int16_t> unpack_layer(const LayerResult& r) {
  if (r.type != OutputType::Packed) throw Error(ErrorKind::InvalidInput, "unpack_layer: the result is not packed");
  // apmm's (M, N) is the (1, M, 1, N) activation tensor of conv_layout.h.
  if (r.shape.size() == 2) return unpack_activations_reference(r.packed, r.planes.data(), 1, r.shape[0], 1, r.shape[1]);
  return unpack_activations_reference(r.packed, r.planes.data(), r.shape[0], r.shape[1], r.shape[2], r.shape[3]);
}

void require_int32_output(const KernelSpec& spec, const char* api) {
  if (spec.epilogue.output_type() != OutputType::Int32)
    throw Error(ErrorKind::InvalidInput, fmt::format("{}(): the spec's epilogue does not output int32; use {}_layer()", api,
                                                     api));
}

}  // namespace apnn

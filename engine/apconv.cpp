#include "apnn/engine.h"
#include "engine/conv_runner.h"
#include "engine/layer_result.h"
#include "engine/operand_check.h"
#include "engine/tile_choice.h"

namespace apnn {

LayerResult apconv_layer(Engine& engine, const KernelSpec& spec, const int16_t* W, const int16_t* X, const ConvShape& shape,
                         const EpilogueParams& params) {
  const ConvGeometry g = conv_geometry(spec, shape);
  check_operand_values("W", spec.w, W, g.O, g.C * g.kh * g.kw);
  check_operand_values("X", spec.x, X, g.N, g.C * g.H * g.W);
  const OutputDims dims = ConvRunner::dims(spec, g);  // a pool window that does not fit: before any GPU work
  const EpilogueDevice ep(spec.epilogue, params, g.O);
  ConvRunner runner(engine.kernel(with_tile_for(spec, conv_problem(spec, shape))));
  DeviceBuffer w(static_cast<size_t>(g.O * g.C * g.kh * g.kw) * 2), x(static_cast<size_t>(g.N * g.C * g.H * g.W) * 2);
  w.upload(W, w.bytes());
  x.upload(X, x.bytes());
  const PackedConvWeights pw = runner.pack_w(w, g);
  const PackedConvActivations px = runner.pack_x(x, g);
  LayerBuffers out = EpilogueDevice::allocate(spec.epilogue, dims);
  runner.conv(pw, px, g, ep, out);
  synchronize(runner.kernel().module->context());
  return download_layer(spec.epilogue, dims, out, {dims.N, dims.C, dims.H, dims.W});
}

std::vector<int32_t> apconv(Engine& engine, const KernelSpec& spec, const int16_t* W, const int16_t* X,
                            const ConvShape& shape) {
  require_int32_output(spec, "apconv");
  return apconv_layer(engine, spec, W, X, shape).i32;
}

}  // namespace apnn

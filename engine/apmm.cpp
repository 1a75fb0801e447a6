#include <fmt/format.h>

#include "apnn/engine.h"
#include "engine/apmm_runner.h"
#include "engine/layer_result.h"
#include "engine/operand_check.h"
#include "engine/tile_choice.h"

namespace apnn {

LayerResult apmm_layer(Engine& engine, const KernelSpec& spec, const int16_t* W, const int16_t* X, const ApmmShape& shape,
                       const EpilogueParams& params) {
  check_apmm_shape(spec, shape);
  check_operand_values("W", spec.w, W, shape.M, shape.K);
  check_operand_values("X", spec.x, X, shape.N, shape.K);
  const EpilogueDevice ep(spec.epilogue, params, shape.M);
  ApmmRunner runner(engine.kernel(with_tile_for(spec, apmm_problem(shape))));
  DeviceBuffer w(static_cast<size_t>(shape.M * shape.K) * 2), x(static_cast<size_t>(shape.N * shape.K) * 2);
  w.upload(W, w.bytes());
  x.upload(X, x.bytes());
  const PackedOperand pw = runner.pack_w(w, shape.M, shape.K);
  const PackedOperand px = runner.pack_x(x, shape.N, shape.K);
  const OutputDims dims = ApmmRunner::dims(shape.M, shape.N);
  LayerBuffers out = EpilogueDevice::allocate(spec.epilogue, dims);
  runner.gemm(pw, px, ep, out);
  synchronize(runner.kernel().module->context());
  return download_layer(spec.epilogue, dims, out, {shape.M, shape.N});
}

std::vector<int32_t> apmm(Engine& engine, const KernelSpec& spec, const int16_t* W, const int16_t* X,
                          const ApmmShape& shape) {
  require_int32_output(spec, "apmm");
  return apmm_layer(engine, spec, W, X, shape).i32;
}

}  // namespace apnn

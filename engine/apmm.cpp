#include <fmt/format.h>

#include "apnn/engine.h"
#include "engine/tile_choice.h"
#include "engine/apmm_runner.h"
#include "engine/operand_check.h"

namespace apnn {

std::vector<int32_t> apmm(Engine& engine, const KernelSpec& spec, const int16_t* W, const int16_t* X,
                          const ApmmShape& shape) {
  check_apmm_shape(spec, shape);
  check_operand_values("W", spec.w, W, shape.M, shape.K);
  check_operand_values("X", spec.x, X, shape.N, shape.K);
  ApmmRunner runner(engine.kernel(with_tile_for(spec, apmm_problem(shape))));
  DeviceBuffer w(static_cast<size_t>(shape.M * shape.K) * 2), x(static_cast<size_t>(shape.N * shape.K) * 2);
  w.upload(W, w.bytes());
  x.upload(X, x.bytes());
  const PackedOperand pw = runner.pack_w(w, shape.M, shape.K);
  const PackedOperand px = runner.pack_x(x, shape.N, shape.K);
  DeviceBuffer y(static_cast<size_t>(shape.M * shape.N) * 4);
  runner.gemm(pw, px, y);
  synchronize(runner.kernel().module->context());
  return y.to_vector<int32_t>(static_cast<size_t>(shape.M * shape.N));
}

}  // namespace apnn

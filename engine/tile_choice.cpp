#include "engine/tile_choice.h"

#include "runtime/device.h"
#include "spec/kernel_rules.h"

namespace apnn {

KernelSpec with_tile_for(const KernelSpec& spec, int64_t M, int64_t N, int64_t K_bits) {
  if (spec.tile) return spec;
  KernelSpec s = spec;
  // Two blocks per SM keep the SMs busy while one waits on memory.
  const int64_t threshold = 2 * current_device().sm_count;
  s.tile = rules::heuristic_tile(s.w, s.x, M, N, K_bits, threshold);
  return s;
}

}  // namespace apnn

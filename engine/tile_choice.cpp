#include "engine/tile_choice.h"

#include <fmt/format.h>

#include "apnn/error.h"
#include "runtime/device.h"
#include "spec/kernel_rules.h"

namespace apnn {

KernelSpec with_tile_for(const KernelSpec& spec, int64_t M, int64_t N, int64_t K_bits) {
  if (spec.tile) return spec;
  KernelSpec s = spec;
  // Two blocks per SM keep the SMs busy while one waits on memory.
  const int64_t threshold = 2 * current_device().sm_count;
  s.tile = rules::heuristic_tile(s.w, s.x, M, N, K_bits, threshold, current_device().max_smem_optin);
  return s;
}

void check_tile_fits_device(const KernelSpec& spec) {
  const DeviceInfo& dev = current_device();
  const Tile& t = *spec.tile;
  const int smem = rules::shared_bytes(t, spec.w, spec.x);
  if (smem > dev.max_smem_optin)
    throw Error(ErrorKind::InvalidInput,
                fmt::format("tile bm={} bn={} bk={} stages={} needs {} bytes of shared memory for w{}a{}; {} allows {} per "
                            "block: use a smaller tile, bk or fewer stages",
                            t.bm, t.bn, t.bk, t.stages, smem, spec.w.bits, spec.x.bits, dev.name, dev.max_smem_optin));
}

}  // namespace apnn

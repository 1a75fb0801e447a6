// Fills the tile of a spec that has none, for a concrete problem on the current device:
// the paper's TLP/CI heuristic (spec/kernel_rules.h). A spec with a tile is returned as is.
#pragma once
#include <cstdint>

#include "apnn/spec.h"

namespace apnn {

// GEMM view of the problem: M rows of W, N columns (rows of X / output pixels), K in bits.
KernelSpec with_tile_for(const KernelSpec& spec, int64_t M, int64_t N, int64_t K_bits);

// Tiles are validated against the H100's 227 KB; other GPUs allow less (sm_86: 99 KB).
// Throws Error(InvalidInput) naming the tile and the device's limit before any launch.
void check_tile_fits_device(const KernelSpec& canonical);

}  // namespace apnn

// What the untuned tile rules (engine/tile_choice.cpp, untuned_apmm_tile.cpp,
// untuned_conv_tile.cpp) ask of a candidate tile on a target. Internal to engine/.
#pragma once
#include <cstdint>

#include "apnn/spec.h"
#include "engine/tile_choice.h"

namespace apnn::tile_fit {

KernelSpec with_tile(const KernelSpec& s, const Tile& tile);
// The tile runs on a wgmma core (rules::use_wgmma) / launches on the target (rules::launchable).
bool on_wgmma(const KernelSpec& s, const Tile& tile, const Target& t);
bool fits(const KernelSpec& s, const Tile& tile, const Target& t);
// Output tiles of bm x bn that cover the problem: the blocks of a one-tile-per-block grid.
int64_t tile_count(const Problem& p, int bm, int bn);
// Blocks of a conv tile's kernel per SM on the wgmma core (rules::conv_blocks_per_sm, with the
// accumulator sets the generator would emit); 1 off it.
int conv_blocks(const KernelSpec& s, const Tile& tile, const Target& t);
// A wgmma tile's 3 stages as 4 where that fits (deeper_stages in tile_fit.cpp says why).
Tile deeper_stages(const KernelSpec& s, const Tile& c, const Target& t);

}  // namespace apnn::tile_fit

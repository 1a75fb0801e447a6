#include "engine/tile_fit.h"

#include "spec/kernel_rules.h"

namespace apnn::tile_fit {

KernelSpec with_tile(const KernelSpec& s, const Tile& tile) {
  KernelSpec w = s;
  w.tile = tile;
  return w;
}

bool on_wgmma(const KernelSpec& s, const Tile& tile, const Target& t) { return rules::use_wgmma(with_tile(s, tile), t.arch); }

bool fits(const KernelSpec& s, const Tile& tile, const Target& t) {
  return rules::launchable(with_tile(s, tile), t.arch, t.max_smem);
}

int64_t tile_count(const Problem& p, int bm, int bn) { return ((p.M + bm - 1) / bm) * ((p.N + bn - 1) / bn); }

int conv_blocks(const KernelSpec& s, const Tile& tile, const Target& t) {
  const KernelSpec k = with_tile(s, tile);
  if (!rules::use_wgmma(k, t.arch)) return 1;
  return rules::conv_blocks_per_sm(k, t.arch, rules::kernel_plane_groups(k, t.arch));
}

// The wgmma core loads kStages-2 K steps ahead (one block barrier a step, gemm_sm90a.cuh):
// the heuristic's 3 stages become 4 where they fit, the same depth of copies in flight. Not
// for a conv where the fourth stage leaves shared memory for fewer blocks per SM than its
// registers allow (rules::conv_min_blocks): the blocks' setup and epilogue then overlap
// less. n128-7x7x512 w1a2 128x64/1024: 3 stages 20.48 / 20.49 us, 4 stages 23.25 / 23.20,
// apnn tune (session 9 call 13, session 10 call 1).
Tile deeper_stages(const KernelSpec& s, const Tile& c, const Target& t) {
  Tile d = c;
  if (c.stages == 3) d.stages = 4;
  const bool loses_block = s.op == Op::Apconv && conv_blocks(s, d, t) < conv_blocks(s, c, t);
  return fits(s, d, t) && on_wgmma(s, d, t) && !loses_block ? d : c;
}

}  // namespace apnn::tile_fit

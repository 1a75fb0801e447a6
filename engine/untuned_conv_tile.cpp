// The untuned tile of an APConv: the halo core's (sm_90a, the 3x3 and 1x1 convs it runs
// faster) and the default cores' (engine/tile_choice.h: untuned_halo_tile,
// untuned_default_core_tile).
#include <algorithm>
#include <optional>
#include <string>

#include "engine/conv_runner.h"
#include "engine/tile_choice.h"
#include "engine/tile_fit.h"
#include "spec/kernel_rules.h"

namespace apnn {

using namespace tile_fit;

namespace {

// The share of the waves' slots that hold a tile.
double wave_fill(int64_t tiles, int64_t slots) {
  const int64_t waves = (tiles + slots - 1) / slots;
  return static_cast<double>(tiles) / static_cast<double>(waves * slots);
}

// A 3x3 (or wider) conv over a wave on a tall tile (128 rows, 8x1 warps), from the tile so
// far (`base`): 1024-bit K steps become 512, and the deepest pipeline (at most 6 stages)
// that keeps its blocks per SM is taken where it holds at least `base`'s bits in flight
// (stages x bk); or, where the kernel of three blocks per SM (rules::conv_three_blocks: 4
// stages of 512 bits) fills the waves better by more than 0.05 of the slots, that one. K =
// Kh*Kw*C bits is 4.5 steps of 1024 for C = 512 (2.25 for C = 256), and at 3 stages a
// block's loads run 1 step ahead of its wgmmas; 6 of 512 run 4 ahead with the same bytes.
// apnn verify and bench, w1a2 batch 128 (session 24, device calls 2-5), us:
//   7x7x512 128x64/1024 3 stages 19.49 -> 512-bit steps, 6 stages 17.43 -> three blocks
//   of 4 stages 16.81-16.98 (392 tiles: one wave of three rather than 1.48 of two);
//   14x14x256-o512 3x3/2 14.92 -> 14.17 -> 13.69 (the same tiles);
//   28x28x128-o256 3x3/2 (784 tiles) 25.70 -> 24.69 with 6 stages; 14x14x256 27.50 -> 27.96;
//   w1a4 batch 128 0.99-1.03x, w2a8 1.02-1.03x.
// A rule without the bits-in-flight test lost on w2a2 7x7x512: 128x64/1024 with 4 stages
// (one block) 24.63 -> 26.85 us as 4 stages of 512 (two blocks, merged sets); the 6 stages
// of 512 this code would try there hold fewer bits than `base` too, so `base` stays.
Tile deep_conv_tile(const KernelSpec& s, const Problem& p, const Target& t, const Tile& base) {
  // The blocks `base` keeps on its own sets: at 4 stages of 512 bits it may itself be a tile
  // of three, which lost where it did not fill the waves better (28x28x128-o256 above).
  const int keep = std::min(conv_blocks(s, base, t), 2);
  Tile c = base;
  c.bk = std::min(c.bk, 512);
  std::optional<Tile> deep, three;
  int deep_blocks = 0;
  for (int stages = 3; stages <= 6; ++stages) {
    Tile d = c;
    d.stages = stages;
    if (!fits(s, d, t) || !on_wgmma(s, d, t)) break;
    const int blocks = conv_blocks(s, d, t);
    if (blocks >= 3) three = d;
    if (blocks >= keep) {
      deep = d;
      deep_blocks = blocks;
    }
  }
  const int64_t tiles = tile_count(p, c.bm, c.bn);
  // Every stage count that fits three blocks keeps `keep` (at most two) as well, so `deep`
  // is set wherever `three` is.
  if (three && wave_fill(tiles, int64_t{3} * t.sm_count) > wave_fill(tiles, int64_t{deep_blocks} * t.sm_count) + 0.05)
    return *three;
  if (deep && deep->stages * deep->bk >= base.stages * base.bk) return *deep;
  return base;
}

// A conv problem's geometry, from the shape conv_problem recorded.
ConvGeometry problem_geometry(const KernelSpec& s, const Problem& p) {
  const auto dim = [&](const char* k) { return p.shape.at(k).get<int64_t>(); };
  return conv_geometry(s, ConvShape{dim("batch"), dim("in_channels"), dim("height"), dim("width"), dim("out_channels")});
}

}  // namespace

std::string halo_problem_error(const KernelSpec& s, const Problem& p, const Target& t) {
  const ConvGeometry g = problem_geometry(s, p);
  return rules::halo_launch_error(s, g.C, g.O, g.Ho(), g.Wo(), t.max_smem, t.sm_count);
}

std::optional<Tile> untuned_halo_tile(const KernelSpec& s, const Problem& p, const Target& t) {
  // APNN_DISABLE_WGMMA (comparisons against mma.sync) keeps every untuned tile off wgmma.
  // Chains without a pool too (halo_kernel_error refuses pools): the network's bn+relu+q2
  // at batch 128 ran 1.12-1.37x faster than on the default core, bn+relu with a float output
  // 1.84x, a 4-bit quantize through the float ops 1.02x (session 28, calls 2-3).
  if (t.arch != "sm_90a" || s.op != Op::Apconv || rules::wgmma_disabled_by_env()) return std::nullopt;
  // Up to 4 plane pairs, as measured (w1a2, w2a2, w1a4); w2a4, w1a8 and up were not.
  if (s.w.bits * s.x.bits > 4) return std::nullopt;
  Tile c{128, 128, 256, 2, 8, 1};
  c.halo = true;
  // bn: the widest the accumulators allow (w2a2 at n128-14x14x256: bn 64 / 48 / 32 took
  // 23.5 / 25.1 / 26.8 us: a wider wgmma reads W once for more columns), then the fewest
  // grid rows that make as many tiles an image (14x14 at stride 1: 8 rows of 16 columns
  // make tiles of 8 and 6 rows; 7 rows make two of 7 in 112 columns).
  while (c.bn > 16 && !rules::halo_tile_error(c, s.w, s.x).empty()) c.bn -= 16;
  // Not a 3x3 pad-1 or 1x1 pad-0 conv of stride 1 or 2, or too many accumulators for bn 32 (w2a8's 16
  // groups allow bn 16, which ran 1.2-2.4x slower than the default core's stacked tile: n128
  // 14x14x256 110.4 against 93.3 us, 7x7x512 186.0 against 77.1; session 26 call 6). A small
  // image's grid may still round to bn 16 below.
  if (c.bn < 32 || !rules::halo_kernel_error(c, s).empty()) return std::nullopt;
  const ConvGeometry g = problem_geometry(s, p);
  const rules::HaloGeometry widest = rules::halo_geometry(s.conv, g.Ho(), g.Wo(), c.bn);
  if (widest.rows <= 0) return std::nullopt;
  const int64_t rows = (g.Ho() + widest.row_tiles - 1) / widest.row_tiles;
  c.bn = static_cast<int>((rows * widest.pw + 15) / 16 * 16);
  // Stages: 4 at stride 1 where a tile has under 36 wgmmas a warpgroup (9 positions x C/256
  // slices, or 5 position pairs at one chunk, x plane pairs): its loads must run further
  // ahead of its short mainloop; else 2.
  // apnn verify, batch 128 (session 26 calls 3, 4, 8): n128-14x14x256 w1a2 (18 wgmmas) 4
  // stages 15.51-15.86 us against 2 stages' 16.04-16.33; with 36 (7x7x512 w1a2, w2a2 and
  // w1a4 at 14x14x256) and at stride 2 (four strided phase boxes a plane) 2 stages were
  // 0.6-6% faster than 4. A 1x1 kernel at stride 2 reads one phase box a plane: `apnn tune
  // --core wgmma-halo` of ResNet-18's three shortcuts, w1a2 (session 33, call 1): 4 stages
  // 13.25 us against 3 stages' 13.49 and 2 stages' 13.77 at 28x28x128-o256, 8.08 against
  // 8.16 at 14x14x256-o512, 25.62 against 25.46 and 25.65 at 56x56x64-o128.
  const int64_t chunks = rules::halo_chunks(g.C), positions = int64_t{s.conv.kh} * s.conv.kw;
  // One chunk: the positions in pairs.
  const int64_t wgmmas = (chunks == 1 ? (positions + 1) / 2 : positions * chunks / 2) * s.w.bits * s.x.bits;
  // O <= 64 too, whose warpgroups take alternate tiles: session 28 (call 9) had 56x56x64
  // plain at 48.6 us with 2 stages against 51.0-51.3 with 4, but since its output leaves
  // through the tensor map (13d2aa0), 4 stages are the faster (H200, session 52 call 3, two
  // rounds, 2 / 4 stages): int32 40.74-40.96 / 40.14-40.42, int16 31.51-31.76 / 31.02-31.05,
  // bn+relu+q2 43.94-44.48 / 43.74-44.03, w2a2 (bn 64) 56.39-56.58 / 55.09-55.24 us.
  if ((s.conv.sh == 1 || positions == 1) && wgmmas < 36) {
    c.stages = 4;
    if (!halo_problem_error(with_tile(s, c), p, t).empty()) c.stages = 2;
  }
  if (!halo_problem_error(with_tile(s, c), p, t).empty()) return std::nullopt;
  // Where the tiles of an M tile number at least half the SMs it may have (a block an SM,
  // conv_runner.cpp's grid). Against the default core (apnn verify, session 26 calls 4-6):
  // batch 128 (3.9 tiles an SM) 1.05-1.8x faster on every layer and precision it takes,
  // batch 64 1.06-1.5x, batch 32 (about one tile an SM) 1.01-1.33x; batch 8 (a quarter
  // of the SMs get a tile) 1.2-2.0x slower.
  const int64_t tiles = g.N * widest.row_tiles;  // bn's rounding above keeps the widest tile's row tiles
  if (2 * tiles < rules::halo_sms_per_m_tile(g.O, t.sm_count)) return std::nullopt;
  return c;
}

Tile untuned_conv_tile(const KernelSpec& s, const Problem& p, const Target& t) {
  const Tile h = rules::heuristic_tile(s, p.M, p.N, p.K_bits, t.sm_count, t.max_smem);
  if (t.arch != "sm_90a" || !on_wgmma(s, h, t)) return h;
  // APConv on the wgmma core: one warpgroup column (wgmma N = bn) for narrow tiles, and
  // the widest K step when the tiles do not fill a wave (latency-bound layers) and K fills
  // it (a 1x1 conv of 128 channels would pad K 8x). Fitted to
  // the every-tile sweep of 10 bench convs (session 3, device run 9; measured in run 10).
  Tile w = h;
  if (w.bn <= 32) w.warps_n = 1;
  const bool under_wave = tile_count(p, w.bm, w.bn) < t.sm_count;
  if (p.K_bits >= 1024 && under_wave) w.bk = 1024;
  // Under a wave, one warpgroup of 64 rows rather than two of 128: twice the blocks, each
  // warp's instruction chain (what these layers' time is) half as long. n1-16x16 C=O=1024:
  // 64x16 6.71 us against 128x16 8.14 in apnn tune (w1a2, session 7, device call 10); in
  // the bench (call 12) w1a2 / w2a2 / w1a4 6.84 / 8.78 / 8.71 us (128x16 in call 7: 8.66 /
  // 9.26 / 11.21), but w2a8, whose 16 plane pairs make it MMA-heavy, 24.35 (19.60).
  if (under_wave && w.bm == 128 && w.warps_m == 8 && s.w.bits * s.x.bits <= 4) {
    w.bm = 64;
    w.warps_m = 4;
  }
  // Over a wave even at 128 rows, two warpgroups of 128 rows rather than the heuristic's
  // 64 (it takes 128 only for M > 512): every M tile gathers its X windows again, so taller
  // tiles gather each window fewer times. apnn tune at batch 128 (w1a2, session 8, device
  // call 2) put 128-row tiles first on each layer it finished (7x7 C=O=512 128x64 25.5 us
  // against the untuned 64x128's 28.0; 14x14 C=O=256 128x128 29.3 / 30.7; 28x28 C=O=128
  // 128x128 44.3 / 53.0), and the bench's 3x3 layers took 1.01-1.21x less time on 17 of 18 rows (calls 4, 6).
  // A 1x1 conv gathers each pixel once per M tile anyway: its tiles were 0.89-1.09x.
  // bn: the heuristic's, or half of it where 128 x bn needs more accumulators than a thread
  // holds (w2a2, w1a4) or where the last wave would run less full (7x7 C=O=512: 196 tiles
  // of 128x128, 1.48 waves, 30.2 us; 128x64 fills 2.97 waves of one block per SM, and
  // with the 3 stages deeper_stages() then keeps, 1.48 of two: 19.8 us; deep_conv_tile then runs
  // it as 4 stages of 512 bits, three blocks per SM: 16.98 us in session 24).
  if (!under_wave && w.bm == 64 && p.M > 64 && s.conv.kh * s.conv.kw > 1) {
    auto tall = [&](int bn) {
      Tile c = w;
      c.bm = 128;
      c.bn = bn;
      c.warps_m = 8;
      c.warps_n = 1;
      return c;
    };
    // The share of the waves' slots that hold a tile (0 under a wave), with a slot per SM
    // (the fit above) or, where merged accumulator sets let blocks share an SM
    // (rules::kernel_plane_groups), as many as the tile's kernel fits with 4 stages (deeper_stages()
    // may keep 3 where a fourth costs a block; this count is not told of that), at most
    // two (the rule was fitted with two; deep_conv_tile decides on a third): 392 tiles of
    // 128x128 then run 1.48 waves of two, and took 0.84-0.85x the time of one a SM
    // (n128-14x14x256 and 28x28x128-o256 3x3/2, w1a2, session 10 device call 6).
    auto fill = [&](int bn, bool shared_sm) {
      const int64_t tiles = tile_count(p, 128, bn);
      Tile c = tall(bn);
      c.stages = 4;
      const int64_t slots = int64_t{t.sm_count} * (shared_sm && fits(s, c, t) ? std::min(conv_blocks(s, c, t), 2) : 1);
      return tiles < t.sm_count ? 0.0 : wave_fill(tiles, slots);
    };
    auto fills_better = [&](int bn) {  // bn/2 fills the waves better than bn
      for (bool shared_sm : {false, true})
        if (fill(bn, shared_sm) > 0 && fill(bn / 2, shared_sm) > fill(bn, shared_sm) + 0.05) return true;
      return false;
    };
    int bn = rules::check_tile(tall(w.bn), s.w, s.x).empty() ? w.bn : w.bn / 2;
    if (bn == w.bn && bn >= 64 && fills_better(bn)) bn /= 2;
    if (bn >= 32 && fill(bn, false) > 0 && rules::check_tile(tall(bn), s.w, s.x).empty()) w = tall(bn);
  }
  // Four or more X planes under 2+ W planes, 16 or more plane pairs (measured on w2a8) and
  // K of 2048 bits or more: a tile whose one warpgroup column of 16 lets a wgmma cover all
  // X planes (rules::wgmma_x_stack, N = 16q), where the tile chosen so far does not (the
  // heuristic's 64x32 with two warpgroups along N; one column of 32 holds too many
  // accumulators). Same-call bench, w2a8 (session 15, device call 1): batch 128 7x7x512
  // 107.03 -> 77.76 us, 14x14x256 125.26 -> 93.75, 14x14x256-o512 3x3/2 64.15 -> 52.04,
  // batch 8 14x14x256 12.39 -> 9.08; with shorter K (C <= 128 at 3x3, every 1x1) the narrow
  // tile's extra gathers cost more than the stacked wgmma saves: 0.66-0.96x.
  if (!under_wave && s.w.bits >= 2 && s.x.bits >= 4 && s.w.bits * s.x.bits >= 16 && p.K_bits >= 2048) {
    auto stacks_all = [&](const Tile& c) {
      return rules::check_tile(c, s.w, s.x).empty() && fits(s, c, t) && on_wgmma(s, c, t) &&
             rules::wgmma_x_stack(c, s.w, s.x, rules::kernel_plane_groups(with_tile(s, c), t.arch)) == s.x.bits;
    };
    Tile c = w;
    c.bm = p.M > 64 ? 128 : 64;  // 64 output channels fill one warpgroup's rows
    c.bn = 16;
    c.warps_m = c.bm / 16;
    c.warps_n = 1;
    if (!stacks_all(w) && stacks_all(c)) w = c;
  }
  w.stages = 3;
  // Fewer, wider K steps where the padding adds at most a third of K: a 3x3 conv of 64 or
  // 128 channels (K = 1152 bits) in 3 steps of 512 rather than 5 of 256. Each step costs
  // two block barriers: n128-56x56x64 w1a2 135.4 -> 118.9 us (bk 1024, 78% padding:
  // 139.5 us), session 5 device call 13; the heuristic's quarter rule keeps 1024-bit steps.
  // Where the wider stages do not fit shared memory, the 256-bit tile.
  Tile wide = w;
  if (w.bk == 256 && (p.K_bits + 511) / 512 * 512 * 3 <= p.K_bits * 4) wide.bk = 512;
  for (const Tile& c : {wide, w})
    if (fits(s, c, t) && on_wgmma(s, c, t)) {
      const Tile base = deeper_stages(s, c, t);
      const bool tall = c.bm == 128 && c.warps_m == 8 && c.warps_n == 1;
      if (!under_wave && tall && s.epilogue.empty() && s.conv.kh * s.conv.kw > 1 && p.K_bits > 1024)
        return deep_conv_tile(s, p, t, base);
      return base;
    }
  return deeper_stages(s, h, t);
}

}  // namespace apnn

#include "engine/tile_choice.h"

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include <fmt/format.h>

#include "apnn/error.h"
#include "apnn/tuning.h"
#include "compiler/nvrtc_compiler.h"
#include "engine/conv_runner.h"
#include "runtime/device.h"
#include "spec/kernel_rules.h"

namespace apnn {

Target current_target() {
  const DeviceInfo& d = current_device();
  return {d.arch(), d.name, d.sm_count, d.max_smem_optin};
}

Target nominal_target(const std::string& arch) {
  check_arch(arch);
  if (arch == "sm_80") return {arch, "nominal A100", 108, 163 * 1024};
  if (arch == "sm_86") return {arch, "nominal RTX 3090", 82, 99 * 1024};
  if (arch == "sm_89") return {arch, "nominal RTX 4090", 128, 99 * 1024};
  return {arch, "nominal H100 SXM", 132, 227 * 1024};
}

Problem apmm_problem(const ApmmShape& s) { return {s.M, s.N, s.K, {{"m", s.M}, {"n", s.N}, {"k", s.K}}}; }

Problem conv_problem(const KernelSpec& spec, const ConvShape& s) {
  const ConvGeometry g = conv_geometry(spec, s);
  // K as loaded: channels are padded to 128 bits per pixel (conv_layout.h).
  return {g.O, g.N * g.Ho() * g.Wo(), g.kh * g.kw * conv_channel_words(g.C) * 32,
          {{"batch", s.N}, {"in_channels", s.C}, {"height", s.H}, {"width", s.W}, {"out_channels", s.O}}};
}

const char* tile_source_name(TileSource s) {
  switch (s) {
    case TileSource::Spec: return "spec";
    case TileSource::Tuned: return "tuned";
    case TileSource::Untuned: return "untuned";
  }
  return "?";
}

namespace {

KernelSpec with_tile(const KernelSpec& s, const Tile& tile) {
  KernelSpec w = s;
  w.tile = tile;
  return w;
}

bool on_wgmma(const KernelSpec& s, const Tile& tile, const Target& t) { return rules::use_wgmma(with_tile(s, tile), t.arch); }

bool fits(const KernelSpec& s, const Tile& tile, const Target& t) {
  return rules::launchable(with_tile(s, tile), t.arch, t.max_smem);
}

// Output tiles of bm x bn that cover the problem: the blocks of a one-tile-per-block grid.
int64_t tile_count(const Problem& p, int bm, int bn) { return ((p.M + bm - 1) / bm) * ((p.N + bn - 1) / bn); }

// Blocks of a conv tile's kernel per SM on the wgmma core (rules::conv_blocks_per_sm, with the
// accumulator sets the generator would emit); 1 off it.
int conv_blocks(const KernelSpec& s, const Tile& tile, const Target& t) {
  const KernelSpec k = with_tile(s, tile);
  if (!rules::use_wgmma(k, t.arch)) return 1;
  return rules::conv_blocks_per_sm(k, t.arch, rules::kernel_plane_groups(k, t.arch));
}

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

}  // namespace

KernelSpec resolve_tile(const KernelSpec& spec, const Problem& p, const Target& t, TileSource* source) {
  TileSource ignored;
  TileSource& from = source ? *source : ignored;
  from = TileSource::Spec;
  if (spec.tile) return spec;
  const TuningDb db(TuningDb::default_path());
  if (auto tuned = db.lookup(make_tune_key(spec, t.arch, t.device, p.shape)); tuned && fits(spec, tuned->tile, t)) {
    from = TileSource::Tuned;
    return with_tile(spec, tuned->tile);
  }
  from = TileSource::Untuned;
  return with_tile(spec, untuned_tile(spec, p, t));
}

namespace {

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
  // Not where O <= 64, whose warpgroups take alternate tiles (a slot each at 2 stages):
  // n128-56x56x64 plain ran 48.6 us with 2 stages against 51.0-51.3 with 4 (bn+relu+q2
  // 48.1-48.4 against 47.5-48.1; session 28, call 9).
  if ((s.conv.sh == 1 || positions == 1) && wgmmas < 36 && g.O > 64) {
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

Tile untuned_tile(const KernelSpec& s, const Problem& p, const Target& t) {
  if (const std::optional<Tile> halo = untuned_halo_tile(s, p, t)) return *halo;
  return untuned_default_core_tile(s, p, t);
}

namespace {

// Whether cluster tile c2, the cp.async core's tile shape, beats that core: from a wave of its
// tiles (w8a8 128x1024x1024, 128 tiles of 128x8: 7.83-7.89 us on the cp.async core, 8.54 with a
// cluster; session 39, call 3), and where its consumers hold the accumulators without
// spilling: kMaxAccumulatorRegs or fewer (above rules::kTmaOneWarpUnstackedRegs in merged sets,
// where a set per plane pair would not fit 128, a producer warpgroup gives them 232 registers:
// rules::tma_producer_warps), or one wgmma for all q planes. With one producer warp the tiles
// above 96 registers spilled and lost (session 39, call 5); with the warpgroup they won (session
// 41, call 2, apnn verify, exact, us, cp.async against cluster): unsigned w4a5 128x32 with 128
// registers 1024x4096x4096 87.32-87.53 against 59.77-59.95; unsigned w7a2 128x32 with 128 at
// 1024x1024x1024 9.01-9.14 against 7.83-7.90; unsigned w6a2 128x32 with 112 there 8.14-8.21
// against 7.46-7.50; at 256x2048x2048, 128x16 with 128, signed w8a3 x signed 15.85-16.03 against
// 12.34-12.37, unsigned w7a4 x signed 15.83-16.06 against 12.88-12.91. With one wgmma for all q
// planes signed w8a1 (128 registers) and signed w8a2 (a stacked set per pair, 128) won (session
// 39, calls 2-3, above unfolded_wide_tile).
bool cluster_beats_cp_async(const KernelSpec& s, const Problem& p, const Target& t, const Tile& c2) {
  if (tile_count(p, c2.bm, c2.bn) < t.sm_count) return false;
  const rules::PlaneGroups g = rules::kernel_plane_groups(with_tile(s, c2), t.arch);
  return rules::accumulator_regs(c2, static_cast<int>(g.weight.size())) <= rules::kMaxAccumulatorRegs ||
         rules::wgmma_x_stack(c2, s.w, s.x, g) == s.x.bits;  // q = 1: always one B operand
}

// The exact sets (rules::plane_groups) fit the TMA core's registers at tile f.
bool exact_sets_fit(const KernelSpec& s, const Tile& f) {
  const int exact = static_cast<int>(rules::plane_groups(s.w, s.x).weight.size());
  return rules::accumulator_regs(f, exact) <= rules::kTmaMaxAccumulatorRegs;
}

// The widest tile whose q stacked sets are one wgmma: N = 256 for q = 2, 4, 8, else 160..224.
int folded_width(int q) { return q <= 2 ? 128 : (q <= 4 ? 64 : 32); }

// A cluster tile's pair spans two tiles along the operand it does not share
// (rules::cluster_shares_x).
bool pairs_up(const KernelSpec& s, const Problem& p, const Tile& f) {
  return (rules::cluster_shares_x(f, s.w, s.x) ? (p.M + f.bm - 1) / f.bm : (p.N + f.bn - 1) / f.bn) >= 2;
}

// pairs_up, and its tiles fill half the SMs.
bool pairs_and_fills(const KernelSpec& s, const Problem& p, const Target& t, const Tile& f) {
  return pairs_up(s, p, f) && 2 * tile_count(p, f.bm, f.bn) >= t.sm_count;
}

// The 32-column tile with 3 stages for a 128-column cluster tile c2 (w1a2, w2a1) at short K,
// where it fits and the TMA core stages its output rows (32 int32 columns a warpgroup make a
// staging box, 64 int16 ones): unstaged, they cost the 32-column w1a2-i16 tile 22.43 us at
// 8192x1024x1024 against 12.07 on 128x128 (apnn tune, session 40, call 5).
std::optional<Tile> narrow_tile(const KernelSpec& s, const Target& t, const Tile& c2) {
  if (c2.bn != 128) return std::nullopt;
  Tile n = c2;
  n.bn = 32;
  n.stages = 3;
  if (rules::tma_output_staging_bytes(n, s.w, s.x, rules::output_element_bytes(s)) == 0 || !fits(s, n, t))
    return std::nullopt;
  return n;
}

// The TMA core's folded sets (rules::folds_sets) where the cluster tile is 32 columns or
// narrower and its wgmmas 64 or fewer: the widest tile whose wgmmas take all q X planes at once
// (N = 256 for q = 2, 4, 8; 192 for q = 3, 6; 160 and 224 for q = 5, 7), with 2 stages of 1024
// bits where they fit, else of 512 (p = 6..8; w8a8's W tile alone is 64 KB at 512), where its
// tiles fill half the SMs (as the cluster tile's rule). Shared memory reads per MMA (A's 64
// rows and B's N rows a wgmma) fall by about 40% from N = 64, and the W tile is read from L2
// once for 2-8x the columns. Same calls (session 37; bench/NOTES.md): apnn bench, w4a4 (128x16,
// a set per pair, N = 64) against the folded 128x64, two rounds each (call 6), 8192^3 1901-1904
// us against 1438-1439, 8192x4096x4096 475-481 against 357-362, 1024x4096x4096 63.4-63.8
// against 47.2-47.4, 1024x1024x1024 8.30-8.33 against 7.80-7.84; apnn verify, w4a8
// 1024x4096x4096 (call 5) 128x8 118.9-119.1 us against the folded 128x32's 87.6-88.4. Where the
// tile's wgmmas were already N = 128, folding to 256 lost (call 3): w2a8 128x32 52.7-53.2 us
// against 128x16's 50.7-51.6, w2a4 128x64 30.4-30.8 against 128x32's 25.7-26.2. Untuned, before
// against after (call 7), 1024x4096x4096 / 8192x4096x4096: w4a2 (128x32) 34.4 / 243.5 against
// 27.9 / 192.3 (pm1 weights 38.6 / 259.3 against 29.4 / 197.6), w3a4 (128x16) 43.9 / 318.3
// against 38.1 / 279.3; w3a2, whose 128x64 tile is already wide, 21.7 / 153.7 against 23.4 /
// 148.5 folded at 128x128: not taken there. Session 38 (call 1), apnn verify at 1024x4096x4096,
// the cp.async core's tiles (or w3a3's unfolded cluster tile) against these, us: w8a8 663.2 ->
// 218.7, w8a4 241.2 -> 111.0, w8a2 179.8 -> 61.6, w7a7 552.4 -> 168.9, w6a8 528.6 -> 166.5,
// w6a6 238.8 -> 137.5, w5a5 179.9 -> 74.2, w5a4 145.5 -> 58.0, w4a6 161.9 -> 71.6, unsigned
// w4a4 80.9 -> 46.3, w3a3 35.9 -> 32.4; apnn bench, w8a8 8192^3 20303 -> 6903 (66% of the wgmma
// peak). A third 512-bit stage where it fits was even (w6a6 136.0-137.3 against 138.6, w7a7
// 168.8-169.6 against 165.9).
std::optional<Tile> folded_tile(const KernelSpec& s, const Problem& p, const Target& t, const Tile& c2) {
  const rules::PlaneGroups groups = rules::kernel_plane_groups(with_tile(s, c2), t.arch);
  const int n = c2.bn * rules::wgmma_x_stack(c2, s.w, s.x, groups);
  if (c2.bn > 32 || n > 64) return std::nullopt;
  Tile f = c2;
  f.bn = folded_width(s.x.bits);
  f.bk = 1024;
  f.stages = 2;
  if (!fits(s, f, t)) {
    f.bk = 512;  // 64-byte rows: w8a8 128x32 2 x 80 KB
    if (!fits(s, f, t)) return std::nullopt;
  }
  if (!rules::folds_sets(f, s.w, s.x) || !pairs_and_fills(s, p, t, f)) return std::nullopt;
  return f;
}

// Where rules::wgmma_tile fits no 3 or 4 stages of 1024 bits and the sets do not fold: the folded
// tile's width (q = 1: 64) with 2 stages of 1024 bits where they fit, else 3 of 512; for q = 1, 3
// of 512 first. Else (nullopt) the caller's cluster tile of the cp.async core's shape (c2) where
// that beats the core (cluster_beats_cp_async). apnn verify, 1024x4096x4096 / 8192x4096x4096,
// exact, us (session 39, calls 2-3; bench/NOTES.md), the cp.async core's tile -> c2 -> this:
// unsigned w4a6 161.45 / 1223.09 -> 117.80 / 894.96 -> 128x32/1024 68.69 / 521.45 (3 stages of 512:
// 69.21 / 525.59); unsigned w5a5 175.88 / 1348.70 -> 119.67 / 916.83 -> 71.54 / 551.04 (73.28 /
// 565.16); w5a1 (signed W, pm1 X) 45.99 / 411.98 -> 37.26 / 269.68 -> 128x64/512 26.35 / 186.07 (2
// stages of 1024: 31.37 / 214.95); signed w8a1 85.87 / 751.33 -> c2 52.55 / 459.09 (its 128x64
// needs 256 registers; c2 with 2 stages instead of 3: 83.14 / 635.18); signed w6a1 53.18 / 501.46
// -> 128x64/512 28.28 / 210.33; unsigned w6a6 226.24 / 1744.94 -> 128x32/512 99.17 / 777.38. At
// 1024x1024x1024 (call 3): signed w8a2 13.13-13.37 -> c2 10.44-10.53, unsigned w5a5 14.55-14.74 ->
// 9.79-9.83, signed w8a1 7.92-7.97 -> c2 7.15-7.19.
std::optional<Tile> unfolded_wide_tile(const KernelSpec& s, const Problem& p, const Target& t, const Tile& c2) {
  Tile first = c2;
  first.bn = s.x.bits == 1 ? 64 : folded_width(s.x.bits);
  if (first.bn <= c2.bn) return std::nullopt;
  Tile second = first;
  first.bk = 1024;
  first.stages = 2;
  second.bk = 512;
  second.stages = 3;
  if (s.x.bits == 1) std::swap(first, second);
  Tile f = first;
  if (!fits(s, f, t) && !fits(s, f = second, t)) return std::nullopt;
  if (rules::folds_sets(f, s.w, s.x) || !pairs_and_fills(s, p, t, f)) return std::nullopt;
  return f;
}

// APMM with K under one 1024-bit stage, where the rule below would put it on mma.sync (w1a1,
// w1a2, w1a3, w1a4, w2a2 and their like): the wgmma cores won at every shape apnn tune measured.
// apnn tune --core wgmma-tma,wgmma (session 40, calls 3-5; bench/NOTES.md), the mma.sync tile ->
// this rule's -> the best of 382-606 tiles, us: 8192x512x512 w1a1 8.70 -> 7.43 (64x256/512, one
// warpgroup of 256 columns, whose output the cp.async core stages: rules::wgmma_stages_output),
// w1a1-i16 9.82 -> 4.72 (the same), w1a2 11.51 -> 9.25 (the TMA core's 128x32/512 cluster 2) ->
// 8.81, w1a2-i16 11.84 -> 7.48 (128x128/512 cluster 2; the 32-column tile cannot stage int16
// rows) -> 6.66, w1a3 14.12 -> 9.59 -> 8.98, w1a4 14.43 -> 10.48 -> 9.71, w2a2 13.35 -> 8.84
// (128x64/512 cluster 2, the best), w2a2-i16 13.23 -> 6.85 (the best); 8192x256x256 (64x64/256,
// 4 stages, the cp.async core) w1a1 5.50 -> 5.08 (the best), w1a2 6.41 -> 5.33 (the best), w2a2
// 6.43 -> 5.72 -> 5.09; at M of 2048 and less (64x64, one 512-bit step) 1024x512x512 w1a1 4.86 ->
// 3.32, w1a2 5.41 -> 4.03, 2048x512x512 w1a2 5.14 -> 4.36, 64x512x512 w1a2 4.41 -> 3.32,
// 1024x256x256 w2a2 5.40 -> 4.57 (single timings of tune's first pass at these few-microsecond
// shapes).
std::optional<Tile> short_k_tile(const KernelSpec& s, const Problem& p, const Target& t) {
  // An int16 output at K of 256 bits and less keeps the mma.sync tile: the 64x64 tile below
  // stores it unstaged, which lost there (8192x256x256 w1a1-i16 5.08 -> 7.12 us, apnn bench,
  // call 6), and the cluster tile, though it won at 8192x256x256 (w1a2-i16 7.00 -> 5.96,
  // w2a2-i16 6.98 -> 5.78), lost at 8192x128x128 (w2a2-i16 5.69 -> 6.36, against call 2's run).
  // At one 512-bit step the unstaged 64x64 tile won at M of 1024 (w1a1-i16 / w1a2-i16 /
  // w2a2-i16 1.15x / 1.14x / 1.26x, call 7) and was even at 64 (0.93-1.08x).
  if (s.epilogue.int16_out && p.K_bits <= 256) return std::nullopt;
  Tile wt;
  if (!rules::wgmma_tile(&wt, s.w, s.x)) return std::nullopt;
  auto on_core = [&](const Tile& c) { return fits(s, c, t) && on_wgmma(s, c, t); };
  if (p.K_bits > 256) {  // one 512-bit step (two where K is over 512 bits)
    if (wt.bn == 256) {  // w1a1: its single warpgroup of 256 columns stages the output
      const Tile wide{64, 256, 512, 4, 4, 1, 1};
      if (tile_count(p, wide.bm, wide.bn) >= t.sm_count && on_core(wide)) return wide;
    } else {
      // The TMA core, which stages the output; the 128-column tiles (w1a2, w2a1) take the
      // narrow one as at K of one 1024-bit stage (untuned_default_core_tile) where its rows
      // stage.
      Tile c2 = wt;
      c2.bk = 512;
      c2.cluster = 2;
      if (pairs_and_fills(s, p, t, c2) && fits(s, c2, t)) return narrow_tile(s, t, c2).value_or(c2);
    }
  }
  const Tile small{64, 64, p.K_bits > 256 ? 512 : 256, 4, 4, 1, 1};
  if (on_core(small)) return small;
  return std::nullopt;
}

}  // namespace

Tile untuned_default_core_tile(const KernelSpec& s, const Problem& p, const Target& t) {
  const bool sm90a = t.arch == "sm_90a";
  // sm_90a: the wgmma core's tile once it gives at least half a wave of blocks and K fills
  // its 1024-bit stage. At 8192x256x256 its bk-1024 tile took 9.5 us, the heuristic's bk-256
  // tile 8.3 (session 3, device run 5).
  if (sm90a && s.op == Op::Apmm && p.K_bits >= 1024) {
    Tile wt;
    if (rules::wgmma_tile(&wt, s.w, s.x) && rules::wgmma_shared_bytes(wt, s.w, s.x) <= t.max_smem &&
        2 * tile_count(p, wt.bm, wt.bn) >= t.sm_count) {
      // A fused chain runs on the cp.async core: on the TMA core (an explicit tile; its
      // quantize chains spill 64-88 bytes at 168 registers) its quantized store lost for w1a2
      // (session 41, call 7: apnn verify, w1a2 + bn+relu+q2, 1024x4096x4096 21.7-21.9 us here,
      // 26.9-27.3 on 128x128 or 128x64 cluster tiles; 8192x4096x4096 128.7-128.9 against
      // 152.8-168.8) and won for w2a2 only on 128x96 (29.0 against 30.0 and 168.5 against
      // 202.4-204.8).
      // w1a2 + bn+relu+q2 (session 20, device call 3, H200): this 128x128 tile with two
      // warpgroups along N 22.10 us at 1024x4096x4096 and 137.42 at 8192x4096x4096, the
      // heuristic's 8x1 warps 24.78 and 148.99 (128x64: 26.97, 168.05).
      if (!s.epilogue.empty()) {
        // Except a w2a2 quantize chain whose blocks run 10 or more tiles: the TMA core's wide
        // tile (128x96, a cluster of 2; its sums then zeroed first: rules::quantize_sums_path).
        // apnn verify, signed w2 x unsigned a2 + bn+relu+q2 (session 45, calls 2-3), us,
        // against the 128x64 tile below: 8192x4096x4096 144.0-145.1 against 172.4-173.0,
        // 8192x8192x1024 157.2 against 180.2-180.7 (41.6 tiles a block), 8192x4096x1024
        // 84.2-85.1 against 92.1-92.2 (20.8), 4096x4096x4096 76.1 against 86.8-87.6 (10.4);
        // fewer lost or drew (2048x4096x1024, 5.2: 26.9-27.7 against 24.6-25.0; 1024x4096x4096,
        // 2.6: 23.7 against 23.1; 1024^3: 7.1 against 4.7). The 128x128 and 128x64 cluster
        // tiles were no better (152.4 and 148.4 at 8192x4096x4096). Other encodings of w2a2
        // take it unmeasured; chains without a quantize, and w1a2 (session 41), do not.
        Tile wide = wt;
        wide.cluster = 2;
        wide.bn = wt.bn * 3 / 2;
        wide.stages = 3;
        if (s.epilogue.quantize() && s.w.bits == 2 && s.x.bits == 2 && wt.bn == 64 && pairs_up(s, p, wide) &&
            rules::tma_tile_error(wide, s).empty() && fits(s, wide, t) &&
            rules::tma_patches(wide, s.w, s.x, p.M, p.N) >= 10 * (t.sm_count / 2))
          return wide;
        Tile split = wt;
        split.warps_n = 2;
        if (wt.bn >= 128 && rules::wgmma_tile_error(split, s.w, s.x).empty() && fits(s, split, t)) return split;
        if (fits(s, wt, t)) return wt;
        return rules::heuristic_tile(s, p.M, p.N, p.K_bits, t.sm_count, t.max_smem);
      }
      // The TMA core with a cluster of 2 sharing the larger operand tile, when the tiles pair
      // up: faster than the cp.async core at 1024x4096x4096 and 8192x4096x4096 by 1.05x (w1a1),
      // 1.09-1.15x (w1a2) and 1.26-1.40x (w2a2) (session 4 device calls 10-11;
      // bench/NOTES-wgmma.md). w1a2's tile is refined below.
      Tile c2 = wt;
      c2.cluster = 2;
      const bool pairs = pairs_up(s, p, c2) && fits(s, c2, t);
      // M of 64 or fewer: half of every 128-row tile would be empty, so the heuristic's 64-row
      // tile below. apnn verify at M = 64, N = K, two rounds each (session 38, call 5), us, this
      // tile against the heuristic's: w8a8 1024 7.31-7.33 against 5.26-5.27, 2048 22.29-22.37
      // against 12.99-13.13; w4a4 2048 7.88-7.92 against 5.33-5.36, 4096 20.74-20.77 against
      // 8.93; w2a8 2048 6.47-6.52 against 5.77-5.80, 4096 14.29-14.33 against 9.69-9.71; w2a4
      // 4096 9.19-9.20 against 6.50-6.61. Measured for 8 or more plane pairs only: fewer take
      // the heuristic's tile at these shapes anyway (their 128-row tile is under half a wave),
      // and at larger N, where they take the 128-row tile, M = 64 is unmeasured.
      const bool short_m = p.M <= wt.bm / 2;
      const bool half_empty = short_m && s.w.bits * s.x.bits >= 8;
      // The folded tile even so where not even the exact sets would fit it (w8a8 at 4096:
      // 41.84-41.96 against the heuristic's 43.93-44.08), not where they would (session 39,
      // call 4: signed w5a5 x signed 17.50-17.60 folded against 11.46-11.56, unsigned w8a5
      // 38.64-38.65 against 19.13-19.16).
      if (pairs)
        if (const std::optional<Tile> f = folded_tile(s, p, t, c2); f && (!half_empty || !exact_sets_fit(s, *f)))
          return *f;
      if (pairs && !half_empty) {
        // rules::wgmma_tile fits no 3 or 4 stages of 1024 bits (p of 5 or more, some w4).
        if (c2.bk != 1024) {
          if (short_m) return wt;  // 128-row tiles half empty either way: unmeasured
          if (const std::optional<Tile> u = unfolded_wide_tile(s, p, t, c2)) return *u;
          return cluster_beats_cp_async(s, p, t, c2) ? c2 : wt;
        }
        // K over 4096 bits: the tile half again as wide (w1a2 128x192, w1a3, w1a4, w2a2 128x96;
        // rules::tma_producer_warps), whose patches read a sixth fewer operand bytes per MMA,
        // where its last round of patches costs no more (clusters of 2 on every SM: ceil of
        // wide patches over them, x 1.5, against the same for this tile). apnn verify, same
        // calls (session 21, calls 1-2; bench/NOTES.md): 8192^3 w2a2 366.9 / 365.0 us ->
        // 354.4 / 356.8, w1a2 223.4 / 228.0 -> 215.9 / 220.3, w1a3 334.6 / 334.5 -> 319.0 /
        // 316.6, w1a4 407.6 / 401.7 -> 402.6 / 402.7; where the rounds cost more it lost
        // (1024x8192x8192 w2a2 47.9 -> 50.4, w1a2 33.8 -> 36.8; 4096x4096x8192 w1a2 61.5 ->
        // 64.5), and at K of 4096 bits w2a2 lost (8192x8192x4096 191.5 -> 195.4).
        Tile wide = c2;
        wide.bn = c2.bn * 3 / 2;
        wide.stages = 3;
        const int64_t clusters = t.sm_count / 2;
        auto rounds = [&](const Tile& x) { return (rules::tma_patches(x, s.w, s.x, p.M, p.N) + clusters - 1) / clusters; };
        if (p.K_bits > 4096 && clusters > 0 && rules::tma_tile_error(wide, s).empty() && fits(s, wide, t) &&
            3 * rounds(wide) <= 2 * rounds(c2))
          return wide;
        // w1a2's 128x128 tile (no wider with one producer warp) with 3 stages rather than 4:
        // the 64 KB freed hold the whole output tile, whose bulk stores then leave the tensor
        // cores running. With pm1 weights' column terms loaded at each patch's
        // start (generator 21), apnn bench, w1a2 pm1 (session 17, device call 3), against the
        // tiles this rule took before: 8192x4096x4096 74.63 us against 92.39 (cp.async 8x2),
        // 8192x2048x2048 28.57 against 32.96 (128x32), 8192^3 236.24 against 251.35 (4
        // stages), 1024x4096x4096 14.09 against 14.96.
        Tile staged = c2;
        staged.stages = 3;
        // K over 4096 bits: 4 stages again, the output staged two 32-column boxes per
        // warpgroup at a time beside them (rules::tma_output_staging_bytes): the deeper
        // pipeline pays where a patch has 8 or more K steps to amortize its epilogue over.
        // verify, w1a2 pm1, same call (session 18, call 6): 8192^3 224.55 / 223.85 us against
        // 233.87 / 235.36 for the 3 stages; at K of 4096 bits the 3 stages stay ahead
        // (8192x4096x4096 72.78 / 73.30 against 75.64 / 75.38, 1024x4096x4096 14.19 / 14.13
        // against 14.36 / 14.39).
        // With an int16 output the 4 stages also hold the whole output tile (32 KB beside them),
        // so the deeper pipeline costs the output nothing. apnn bench, w1a2-i16, two runs each,
        // same call (session 32, call 3), us, 4 stages against 3: 1024x4096x4096 11.89 / 11.88
        // against 12.34 / 12.38, 8192x4096x4096 65.96 / 65.96 against 69.21 / 69.62,
        // 8192x2048x2048 25.08 / 25.10 against 25.67 / 25.54, 1024x2048x2048 6.71 / 6.71 against
        // 6.70 / 6.78. Measured with pm1 weights; the other formats of this 128x128 tile (two
        // plane pairs: unsigned or signed w1a2, w2a1) take the rule unmeasured.
        const bool whole_beside_4 = rules::tma_output_staged_whole(c2, s.w, s.x, rules::output_element_bytes(s));
        if (c2.bn == 128) {
          // K of one 1024-bit stage: 128x32 with 3 stages, more tiles for the short mainloop;
          // 8192x1024x1024 15.18 us against the staged tile's 15.69 (same call; apnn tune in
          // session 8 device call 5: 17.27 against 23.20 for 128x128 with 4 stages). Not for an
          // int16 output (narrow_tile), which takes the 4 stages below. Also where N holds one
          // 32-column tile, though its cluster pairs along N and so has no pair there: at
          // 16384x32x1024 it took 5.12-5.18 us, 128x128 (pairing along M) 6.46-6.53, and at 512
          // bits 4.94-4.96 against 5.92-5.96 (apnn verify, session 40, calls 8-9).
          if (p.K_bits <= 1024)
            if (const std::optional<Tile> n = narrow_tile(s, t, c2)) return *n;
          if ((p.K_bits > 4096 || whole_beside_4) && fits(s, c2, t)) return c2;
          if (fits(s, staged, t)) return staged;
        }
        return c2;
      }
      if (!half_empty) return wt;
    }
  }
  const Tile h = rules::heuristic_tile(s, p.M, p.N, p.K_bits, t.sm_count, t.max_smem);
  if (!sm90a || !on_wgmma(s, h, t)) return h;
  // The wgmma core loads kStages-2 K steps ahead (one block barrier a step, gemm_sm90a.cuh):
  // the heuristic's 3 stages become 4 where they fit, the same depth of copies in flight. Not
  // for a conv where the fourth stage leaves shared memory for fewer blocks per SM than its
  // registers allow (rules::conv_min_blocks): the blocks' setup and epilogue then overlap
  // less. n128-7x7x512 w1a2 128x64/1024: 3 stages 20.48 / 20.49 us, 4 stages 23.25 / 23.20,
  // apnn tune (session 9 call 13, session 10 call 1).
  auto deeper = [&](Tile c) {
    Tile d = c;
    if (c.stages == 3) d.stages = 4;
    const bool loses_block = s.op == Op::Apconv && conv_blocks(s, d, t) < conv_blocks(s, c, t);
    return fits(s, d, t) && on_wgmma(s, d, t) && !loses_block ? d : c;
  };
  if (s.op == Op::Apmm && p.K_bits < 1024) {
    // APMM with K under one 1024-bit stage: warps side by side along N keep the tile on
    // mma.sync, which won there before the TMA core (session 3, device run 5's every-tile
    // sweep: 8192x256x256 128x128/256 6.56 us with 1x8 warps, 8.30 us with 8x1 on wgmma;
    // 1024x256x256 128x16/256 1.07x of the winner with 1x2, 1.15x with 8x2). A plain output
    // now takes short_k_tile's instead, except an int16 one at K of 256 bits and less; a fused
    // chain keeps this one (unmeasured there).
    Tile n = h;
    n.warps_m = 1;
    n.warps_n = std::min(8, n.bn / 8);
    if (fits(s, n, t) && !on_wgmma(s, n, t)) {
      if (s.epilogue.empty())
        if (const std::optional<Tile> k = short_k_tile(s, p, t)) return *k;
      return n;
    }
    return deeper(h);
  } else if (s.op == Op::Apconv) {
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
    // with the 3 stages deeper() then keeps, 1.48 of two: 19.8 us; deep_conv_tile then runs
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
      // (rules::kernel_plane_groups), as many as the tile's kernel fits with 4 stages (deeper()
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
        const Tile base = deeper(c);
        const bool tall = c.bm == 128 && c.warps_m == 8 && c.warps_n == 1;
        if (!under_wave && tall && s.epilogue.empty() && s.conv.kh * s.conv.kw > 1 && p.K_bits > 1024)
          return deep_conv_tile(s, p, t, base);
        return base;
      }
  }
  return deeper(h);
}

namespace {

// Resolutions already made by this process, dropped whenever the tuning database file
// changes (another process ran apnn tune): the launch path then costs a stat, not a
// database read and a heuristic search.
struct TileMemo {
  std::mutex mu;
  std::unordered_map<std::string, Tile> tiles;
  std::filesystem::path db;
  std::filesystem::file_time_type stamp{};
  int stat_error = -1;
};

}  // namespace

KernelSpec with_tile_for(const KernelSpec& spec, const Problem& p) {
  if (spec.tile) return spec;
  static TileMemo memo;
  const std::filesystem::path db = TuningDb::default_path();
  std::error_code ec;
  const auto stamp = std::filesystem::last_write_time(db, ec);
  const std::string key = spec_id(spec) + p.shape.dump();
  {
    std::lock_guard<std::mutex> lock(memo.mu);
    if (db != memo.db || stamp != memo.stamp || ec.value() != memo.stat_error) {
      memo.tiles.clear();
      memo.db = db;
      memo.stamp = stamp;
      memo.stat_error = ec.value();
    }
    if (auto it = memo.tiles.find(key); it != memo.tiles.end()) {
      KernelSpec s = spec;
      s.tile = it->second;
      return s;
    }
  }
  KernelSpec s = resolve_tile(spec, p, current_target());
  std::lock_guard<std::mutex> lock(memo.mu);
  memo.tiles.emplace(key, *s.tile);
  return s;
}

void check_tile_fits_device(const KernelSpec& spec) {
  const DeviceInfo& dev = current_device();
  const Tile& t = *spec.tile;
  const int smem = rules::launch_shared_bytes(spec, dev.arch());
  if (smem > dev.max_smem_optin)
    throw Error(ErrorKind::InvalidInput,
                fmt::format("tile bm={} bn={} bk={} stages={} needs {} bytes of shared memory for w{}a{}; {} allows {} per "
                            "block: use a smaller tile, bk or fewer stages",
                            t.bm, t.bn, t.bk, t.stages, smem, spec.w.bits, spec.x.bits, dev.name, dev.max_smem_optin));
}

}  // namespace apnn

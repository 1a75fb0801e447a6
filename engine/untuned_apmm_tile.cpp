// The untuned tile of an APMM on the default cores (engine/tile_choice.h,
// untuned_default_core_tile): the TMA core's cluster tiles, folded, wide and narrow, the
// cp.async wgmma core's, or the paper's heuristic adjusted for K under one 1024-bit stage.
#include <algorithm>
#include <optional>

#include "engine/tile_choice.h"
#include "engine/tile_fit.h"
#include "spec/kernel_rules.h"

namespace apnn {

using namespace tile_fit;

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

Tile untuned_apmm_tile(const KernelSpec& s, const Problem& p, const Target& t) {
  const bool sm90a = t.arch == "sm_90a";
  // sm_90a: the wgmma core's tile once it gives at least half a wave of blocks and K fills
  // its 1024-bit stage. At 8192x256x256 its bk-1024 tile took 9.5 us, the heuristic's bk-256
  // tile 8.3 (session 3, device run 5).
  if (sm90a && p.K_bits >= 1024) {
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
        // Except a w2a2 quantize chain whose blocks run 7 or more tiles: the TMA core's wide
        // tile (128x96, a cluster of 2; its sums then zeroed first: rules::quantize_sums_path).
        // apnn verify, signed w2 x unsigned a2 + bn+relu+q2 (session 45, calls 2-3), us,
        // against the 128x64 tile below: 8192x4096x4096 144.0-145.1 against 172.4-173.0,
        // 8192x8192x1024 157.2 against 180.2-180.7 (41.6 tiles a block), 8192x4096x1024
        // 84.2-85.1 against 92.1-92.2 (20.8), 4096x4096x4096 76.1 against 86.8-87.6 (10.4);
        // session 46, calls 1-2: 3072x4096x1024 (7.8) 34.3-35.0 against 36.1-36.6, 2688x4096x1024
        // (7.0) 30.7-31.4 against 32.9-33.2; fewer drew or lost (2560x4096x1024, 6.5: 30.7-30.9
        // against 30.6-31.0; 2048x4096x1024, 5.2: 26.9-27.7 against 24.6-25.2; 1024x4096x4096,
        // 2.6: 23.7 against 23.1; 1024^3: 7.1 against 4.7). The 128x128 and 128x64 cluster
        // tiles were no better (152.4 and 148.4 at 8192x4096x4096). Other encodings and
        // quantizes won on it too (session 46, call 5, against 128x64 c1 st4): unsigned and
        // signed w2 x a2 + bn+relu+q2 at 8192x4096x4096 138.9-139.5 against 173.4-173.5, at
        // 3072x4096x1024 32.4-33.2 against 36.2-36.4; a signed per-channel q4 without relu
        // 246.4 against 283.5 and 72.1 against 77.7; with its rows' parameters held for the
        // store (generator 63), which spills 16 bytes there, still 47.8-48.0 against 50.9-51.1
        // at 2688x4096x1024 and 52.8-53.6 against 55.3-55.4 at 3072, 135.1-135.4 against 142.9
        // at 8192x4096x1024, and an 8-bit one 51.5-51.6 against 56.9-57.6 and 58.1 against
        // 63.0-63.1 (session 47, calls 1-2). Chains without a quantize, and w1a2
        // (session 41), do not take it; nor do 3-bit codes, whose 7 thresholds a row spill
        // there with signed weights (16 bytes, test_compiler; unmeasured).
        Tile wide = wt;
        wide.cluster = 2;
        wide.bn = wt.bn * 3 / 2;
        wide.stages = 3;
        const EpilogueOp* q = s.epilogue.quantize();
        if (q && q->out.bits != 3 && s.w.bits == 2 && s.x.bits == 2 && wt.bn == 64 && pairs_up(s, p, wide) &&
            fits(s, wide, t) && rules::tma_patches(wide, s.w, s.x, p.M, p.N) >= 7 * (t.sm_count / 2))
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
  if (p.K_bits >= 1024) return deeper_stages(s, h, t);
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
  return deeper_stages(s, h, t);
}

}  // namespace apnn

// APMM on the GPU, bit-exact against the CPU reference: every bit pair x encoding
// pair on odd and paper shapes, explicit tiles, extremes, and the golden vectors.
#include "gpu_main.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "apnn/engine.h"
#include "apnn/npy.h"
#include "engine/verify.h"
#include "golden_case.h"
#include "spec/kernel_rules.h"
#include "gpu_test_util.h"

namespace fs = std::filesystem;
using namespace apnn;

namespace {

std::string name_of(const KernelSpec& s) {
  return fmt::format("w{}{} x{}{}", s.w.bits, encoding_name(s.w.enc), s.x.bits, encoding_name(s.x.enc));
}

const Encoding kEncodings[] = {Encoding::Unsigned, Encoding::Pm1, Encoding::Signed};

// Every spec on every shape, each on fresh inputs (seeds from seed0 on), exact.
template <size_t kShapes>
void verify_every_shape(Engine& engine, const std::vector<KernelSpec>& specs, const ApmmShape (&shapes)[kShapes],
                        uint64_t seed0, const char* label) {
  uint64_t cases = 0, mismatches = 0, seed = seed0;
  for (const KernelSpec& s : specs)
    for (const ApmmShape& sh : shapes) {
      const VerifyReport r = verify_apmm(engine, s, sh, ++seed, 0);
      INFO(r.canonical, " ", sh.M, "x", sh.N, "x", sh.K, ": ", r.first_mismatch);
      CHECK(r.mismatches == 0);
      ++cases;
      mismatches += r.mismatches;
    }
  std::printf("%s: %lu cases, %lu mismatching elements\n", label, static_cast<unsigned long>(cases),
              static_cast<unsigned long>(mismatches));
}

// W (3 x K) all -w but W[0][0] = w, X (5 x K) all x: every output is -w*x*K, but row 0's
// -w*x*(K-2). K is the largest the spec's output type allows.
void expect_largest_k(Engine& engine, const KernelSpec& s, int64_t K, int16_t w, int16_t x) {
  const int64_t M = 3, N = 5;
  std::vector<int16_t> W(M * K, static_cast<int16_t>(-w)), X(N * K, x);
  W[0] = w;
  const LayerResult r = apmm_layer(engine, s, W.data(), X.data(), {M, N, K});
  REQUIRE(r.type == s.epilogue.output_type());
  for (int64_t i = 0; i < M * N; ++i) CHECK(r.i32[i] == -int64_t{w} * x * (i < N ? K - 2 : K));
}

}  // namespace

TEST_CASE("every bit pair x encoding pair is bit-exact on odd and paper shapes") {
  TempCache cache;
  const std::vector<KernelSpec> specs = all_precisions();
  prewarm(specs, current_device().arch());
  Engine engine;
  const ApmmShape shapes[] = {{1, 1, 1}, {7, 13, 300}, {64, 1024, 1024}, {333, 517, 1000}};
  uint64_t cases = 0, mismatches = 0, seed = 1000;
  for (const KernelSpec& s : specs)
    for (const ApmmShape& sh : shapes) {
      const VerifyReport r = verify_apmm(engine, s, sh, ++seed, 0);
      INFO(name_of(s), " ", sh.M, "x", sh.N, "x", sh.K, ": ", r.first_mismatch);
      CHECK(r.mismatches == 0);
      ++cases;
      mismatches += r.mismatches;
    }
  std::printf("apmm all precisions: %lu cases (64 bit pairs x 9 encoding pairs x 4 shapes), %lu mismatching elements\n",
              static_cast<unsigned long>(cases), static_cast<unsigned long>(mismatches));
}

TEST_CASE("explicit tiles on shapes that are not tile multiples") {
  TempCache cache;
  Engine engine;
  struct Case { int p, q; Tile t; };
  const Case cases[] = {
      {1, 2, {16, 8, 256, 2, 1, 1}},   {1, 2, {32, 32, 256, 4, 2, 2}},   {1, 1, {128, 128, 1024, 3, 2, 2}},
      {2, 2, {64, 128, 512, 2, 2, 4}}, {3, 5, {64, 32, 1024, 3, 4, 2}},  {1, 4, {128, 64, 512, 4, 4, 2}},
      {8, 8, {32, 32, 256, 2, 2, 4}},  {2, 4, {128, 32, 256, 2, 8, 2}},
      // Pipelines deeper than the tuner sweeps (tile.stages allows 2..8): mma.sync, and the
      // wgmma core on sm_90a.
      {1, 2, {32, 16, 256, 8, 2, 1}},  {2, 2, {64, 16, 512, 7, 4, 1}},
  };
  const ApmmShape shapes[] = {{1, 1, 1}, {129, 65, 257}, {300, 200, 1500}, {17, 1000, 4097}};
  for (const Case& c : cases)
    for (Encoding we : kEncodings)
      for (Encoding xe : {Encoding::Unsigned, Encoding::Pm1}) {
        KernelSpec s;
        s.w = {c.p, we};
        s.x = {c.q, xe};
        s.tile = c.t;
        for (const ApmmShape& sh : shapes) {
          const VerifyReport r = verify_apmm(engine, s, sh, 7, 0);
          INFO(r.canonical, " ", sh.M, "x", sh.N, "x", sh.K, ": ", r.first_mismatch);
          CHECK(r.mismatches == 0);
        }
      }
}

TEST_CASE("extremes: the largest K whose result fits the output (int32, int16) is exact; past int16's, refused") {
  TempCache cache;
  Engine engine;
  KernelSpec s;
  s.w = {8, Encoding::Pm1};
  s.x = {8, Encoding::Pm1};
  expect_largest_k(engine, s, 33025, 255, 255);  // 33025 * 255 * 255 = 2147450625 <= INT32_MAX
  s.w = {1, Encoding::Pm1};
  s.x = {2, Encoding::Unsigned};
  s.epilogue.int16_out = true;
  const int64_t K = 10922, M = 3, N = 5;
  expect_largest_k(engine, s, K, 1, 3);  // 10922 * 3 = 32766 <= INT16_MAX
  const std::vector<int16_t> W1(M * (K + 1), 1), X1(N * (K + 1), 3);
  CHECK_THROWS_WITH_AS(apmm_layer(engine, s, W1.data(), X1.data(), {M, N, K + 1}, {}),
                       doctest::Contains("K=10923 can overflow the int16 output"), Error);
}

TEST_CASE("golden vectors (shared/vectors) on the GPU") {
  TempCache cache;
  Engine engine;
  int checked = 0;
  for (const fs::path& dir : golden_dirs("apmm_")) {
    const GoldenCase c = load_golden_case(dir);
    const KernelSpec s = parse_spec_text(c.spec_text, (dir / "spec.json").string());
    const std::vector<int16_t> W(c.w.values.begin(), c.w.values.end()), X(c.x.values.begin(), c.x.values.end());
    const std::vector<int32_t> got = apmm(engine, s, W.data(), X.data(), {c.w.shape[0], c.x.shape[0], c.w.shape[1]});
    INFO(dir.filename().string());
    REQUIRE(got.size() == c.y.values.size());
    CHECK(std::equal(got.begin(), got.end(), c.y.values.begin()));
    ++checked;
  }
  CHECK(checked >= 50);
  std::printf("golden vectors: %d APMM cases checked on the GPU\n", checked);
}

TEST_CASE("sm_90a wgmma core: bit-exact for every encoding pair on shapes that are not tile multiples") {
  if (skipped_without_sm90a("wgmma core")) return;
  TempCache cache;
  std::vector<KernelSpec> specs;
  const int pairs[][2] = {{1, 1}, {1, 2}, {2, 2}, {1, 4}, {4, 4}, {8, 8}};
  for (const auto& pq : pairs)
    for (Encoding we : kEncodings)
      for (Encoding xe : kEncodings) {
        KernelSpec s;
        s.w = {pq[0], we};
        s.x = {pq[1], xe};
        Tile t;
        REQUIRE(rules::wgmma_tile(&t, s.w, s.x));
        s.tile = t;
        specs.push_back(s);
      }
  // Other warpgroup arrangements and K steps: one warpgroup along M and two along N (bk 256),
  // two by two (bk 512, 512 threads), a single warpgroup with N = 8, and w1a2's untuned tile
  // for long K within two waves (two by two, 64 columns each, engine/untuned_apmm_tile.cpp).
  const struct { int p, q; Tile t; } odd[] = {{1, 3, {64, 64, 256, 2, 4, 2}},
                                              {2, 1, {128, 64, 512, 3, 8, 2}},
                                              {3, 2, {64, 8, 1024, 3, 4, 1}},
                                              {1, 2, {128, 128, 1024, 4, 8, 2}},
                                              // wgmmas over 3 and 5 X planes: N = 192 and 80
                                              {1, 3, {128, 64, 1024, 4, 8, 1}},
                                              {2, 5, {128, 16, 512, 3, 8, 1}},
                                              // K under one 1024-bit stage (short_k_tile): w1a1's 64x256
                                              // (one warpgroup of 256 columns), 64x64 at 256 and 512 bits
                                              {1, 1, {64, 256, 512, 4, 4, 1}},
                                              {1, 2, {64, 64, 256, 4, 4, 1}},
                                              {2, 2, {64, 64, 512, 4, 4, 1}}};
  for (const auto& o : odd)
    for (Encoding e : kEncodings) {
      KernelSpec s;
      s.w = {o.p, e};
      s.x = {o.q, Encoding::Pm1};
      s.tile = o.t;
      specs.push_back(s);
    }
  prewarm(specs, "sm_90a");
  Engine engine;
  // The last two have more tiles than the persistent grid has blocks: blocks run several tiles,
  // with one K step each (K=130) and with several.
  const ApmmShape shapes[] = {{1, 1, 1},       {7, 13, 300},    {333, 517, 1000}, {128, 256, 4096},
                              {129, 65, 1025}, {4100, 1100, 130}, {300, 2000, 1100}};
  for (const KernelSpec& s : specs) REQUIRE(rules::use_wgmma(canonicalize(s), "sm_90a"));
  verify_every_shape(engine, specs, shapes, 9000, "apmm wgmma core");
}

TEST_CASE("sm_90a TMA core (tile.cluster 2, 4, 8): bit-exact on shapes that are not tile multiples") {
  if (skipped_without_sm90a("TMA core")) return;
  TempCache cache;
  std::vector<KernelSpec> specs;
  // The default wgmma tiles at bk 1024 (cluster 2: the X tile shared for w1a1 and w1a2, the W
  // tile for w2a2 and w4a4: q*bn < p*bm), each with three encoding pairs; clusters 4 (2 x 2)
  // and 8 (the larger tile shared four ways) with one.
  const int pairs[][2] = {{1, 1}, {1, 2}, {2, 2}, {4, 4}, {2, 8}};
  const Encoding encs[][2] = {{Encoding::Unsigned, Encoding::Unsigned}, {Encoding::Pm1, Encoding::Unsigned},
                              {Encoding::Signed, Encoding::Pm1}};
  for (const auto& pq : pairs)
    for (const auto& e : encs) {
      KernelSpec s;
      s.w = {pq[0], e[0]};
      s.x = {pq[1], e[1]};
      Tile t;
      REQUIRE(rules::wgmma_tile(&t, s.w, s.x));
      t.cluster = 2;
      t.bk = 1024;  // w4a4, w2a8: the widest wgmma tile's K step is 512; shallower pipelines fit 1024
      while (t.stages > 2 && !rules::tma_tile_error(t, s).empty()) --t.stages;
      s.tile = t;
      specs.push_back(s);
      if (e[0] != Encoding::Pm1) continue;
      for (int cluster : {4, 8}) {
        s.tile->cluster = cluster;
        INFO("w", pq[0], "a", pq[1], " cluster ", cluster, ": ", rules::tma_tile_error(*s.tile, s));
        REQUIRE(rules::tma_tile_error(*s.tile, s).empty());
        specs.push_back(s);
      }
    }
  // Other arrangements: two warpgroups along N, one warpgroup (bm 64), 3 stages, bn 32.
  const struct { int p, q; Tile t; } odd[] = {{1, 1, {64, 256, 1024, 3, 4, 2, 2}}, {1, 2, {64, 128, 1024, 4, 4, 1, 2}},
                                              {3, 1, {64, 32, 1024, 3, 4, 1, 2}},  {1, 1, {64, 256, 1024, 3, 4, 2, 4}},
                                              {1, 2, {64, 128, 1024, 4, 4, 1, 8}}, {3, 1, {64, 32, 1024, 3, 4, 1, 8}},
                                              {1, 2, {64, 32, 1024, 8, 4, 1, 2}},
                                              {1, 2, {128, 32, 1024, 3, 8, 1, 2}},  // w1a2's untuned tile at short K
                                              {2, 4, {128, 32, 1024, 4, 8, 1, 4}},  // 4 X planes a wgmma, 2 x 2 cluster
                                              {2, 3, {128, 32, 1024, 4, 8, 1, 2}},  // 3 X planes a wgmma: N = 96
                                              // 192 accumulators: a producer warpgroup (rules::tma_producer_warps)
                                              {2, 2, {128, 96, 1024, 3, 8, 1, 2}},   {1, 2, {128, 192, 1024, 3, 8, 1, 2}},
                                              {1, 4, {128, 96, 1024, 3, 8, 1, 2}},   {2, 2, {128, 96, 1024, 3, 8, 1, 4}},
                                              {1, 3, {128, 96, 1024, 3, 8, 1, 8}},
                                              // three 32-column output boxes a warpgroup, staged two at a time
                                              // across tiles; one warpgroup with 144 accumulators
                                              {2, 2, {64, 192, 1024, 3, 4, 2, 2}},   {2, 2, {64, 96, 1024, 4, 4, 1, 2}}};
  for (const auto& o : odd) {
    KernelSpec s;
    s.w = {o.p, Encoding::Pm1};
    s.x = {o.q, Encoding::Unsigned};
    s.tile = o.t;
    specs.push_back(s);
  }
  // Explicit tiles over encoding pairs whose pair weights differ in sign and size, each with
  // whether rules::folds_sets folds it.
  const struct { int p, q; Encoding we, xe; Tile t; bool folds; } listed[] = {
      // Folded: the untuned w4a4 128x64 (also with a cluster of 4), w4a2 128x128 (192
      // accumulators) and w4a8 128x32, w3a4 128x64 and w3a3 (odd p), w2a8 at N = 256, w4a2
      // with signed X, w5a5 at N = 160.
      {4, 4, Encoding::Signed, Encoding::Unsigned, {128, 64, 1024, 2, 8, 1, 2}, true},
      {4, 4, Encoding::Pm1, Encoding::Signed, {128, 64, 1024, 2, 8, 1, 2}, true},
      {4, 4, Encoding::Signed, Encoding::Unsigned, {128, 64, 1024, 2, 8, 1, 4}, true},
      {4, 2, Encoding::Pm1, Encoding::Unsigned, {128, 128, 1024, 2, 8, 1, 2}, true},
      {4, 2, Encoding::Signed, Encoding::Signed, {128, 64, 1024, 2, 8, 1, 2}, true},
      {3, 4, Encoding::Signed, Encoding::Pm1, {128, 64, 1024, 2, 8, 1, 2}, true},
      {3, 3, Encoding::Signed, Encoding::Unsigned, {128, 64, 1024, 2, 8, 1, 2}, true},
      {2, 8, Encoding::Signed, Encoding::Unsigned, {128, 32, 1024, 2, 8, 1, 2}, true},
      {4, 8, Encoding::Signed, Encoding::Unsigned, {128, 32, 1024, 2, 8, 1, 2}, true},
      {5, 5, Encoding::Signed, Encoding::Unsigned, {128, 32, 1024, 2, 8, 1, 2}, true},
      // 512-bit K steps (64-byte rows, the 64-byte swizzle): folded tiles of p = 6..8, whose
      // 1024-bit stage does not fit twice (w8a8's untuned 128x32; w8a4 with a cluster of 4; 3
      // stages; w7a7's N = 224, w6a6's 192), w5a4 at 512 bits for coverage, and unfolded tiles
      // with each operand shared (cluster 2 sharing X, 4 sharing both, 8).
      {8, 8, Encoding::Signed, Encoding::Unsigned, {128, 32, 512, 2, 8, 1, 2}, true},
      {8, 8, Encoding::Signed, Encoding::Signed, {128, 32, 512, 2, 8, 1, 2}, true},
      {8, 4, Encoding::Pm1, Encoding::Unsigned, {128, 64, 512, 2, 8, 1, 4}, true},
      {8, 2, Encoding::Signed, Encoding::Pm1, {128, 128, 512, 2, 8, 1, 2}, true},
      {5, 4, Encoding::Unsigned, Encoding::Unsigned, {128, 64, 512, 2, 8, 1, 2}, true},
      {6, 8, Encoding::Signed, Encoding::Unsigned, {128, 32, 512, 3, 8, 1, 2}, true},
      {7, 7, Encoding::Signed, Encoding::Unsigned, {128, 32, 512, 3, 8, 1, 2}, true},
      {6, 6, Encoding::Signed, Encoding::Unsigned, {128, 32, 512, 2, 8, 1, 2}, true},
      {1, 2, Encoding::Pm1, Encoding::Unsigned, {128, 128, 512, 4, 8, 1, 2}, false},
      {2, 2, Encoding::Signed, Encoding::Unsigned, {128, 96, 512, 4, 8, 1, 4}, false},
      {1, 1, Encoding::Unsigned, Encoding::Unsigned, {64, 256, 512, 4, 4, 2, 8}, false},
      // session 21's deep 512-bit pipelines (an uncommitted version of them once mismatched):
      // 192 accumulators with a producer warpgroup, 6 and 8 stages
      {1, 2, Encoding::Pm1, Encoding::Unsigned, {128, 192, 512, 6, 8, 1, 2}, false},
      {1, 2, Encoding::Pm1, Encoding::Unsigned, {128, 128, 512, 8, 8, 1, 2}, false},
      {2, 2, Encoding::Pm1, Encoding::Unsigned, {128, 96, 512, 6, 8, 1, 2}, false},
      {2, 2, Encoding::Pm1, Encoding::Unsigned, {128, 64, 512, 8, 8, 1, 2}, false},
      // Folded above rules::kTmaFoldAboveRegs where the exact sets do not stack (w4a3, w8a5
      // unsigned), but not on the wide tile (w3a2 unsigned, 192 registers); the untuned
      // unfolded tiles of 512-bit wgmma tiles (w5a5 unsigned at 1024 bits, q = 1 at 64 columns
      // with 5 and 6 sets, w8a1 and w8a8 on their cp.async tile's shape with a cluster).
      {4, 3, Encoding::Unsigned, Encoding::Unsigned, {128, 64, 1024, 2, 8, 1, 2}, true},
      {8, 5, Encoding::Unsigned, Encoding::Unsigned, {128, 32, 512, 2, 8, 1, 2}, true},
      {3, 2, Encoding::Unsigned, Encoding::Unsigned, {128, 96, 1024, 3, 8, 1, 2}, false},
      {5, 5, Encoding::Unsigned, Encoding::Unsigned, {128, 32, 1024, 2, 8, 1, 2}, false},
      {5, 1, Encoding::Signed, Encoding::Pm1, {128, 64, 512, 3, 8, 1, 2}, false},
      {6, 1, Encoding::Unsigned, Encoding::Signed, {128, 64, 512, 3, 8, 1, 2}, false},
      {8, 1, Encoding::Signed, Encoding::Unsigned, {128, 32, 512, 3, 8, 1, 2}, false},
      {8, 8, Encoding::Signed, Encoding::Unsigned, {128, 8, 512, 3, 8, 1, 2}, false},
      // The untuned tiles of K under one 1024-bit stage (short_k_tile): w1a2's narrow 128x32,
      // w1a3's and w2a2's 128x64 with 4 stages, w4a1's with 3.
      {1, 2, Encoding::Pm1, Encoding::Unsigned, {128, 32, 512, 3, 8, 1, 2}, false},
      {1, 3, Encoding::Pm1, Encoding::Unsigned, {128, 64, 512, 4, 8, 1, 2}, false},
      {2, 2, Encoding::Signed, Encoding::Unsigned, {128, 64, 512, 4, 8, 1, 2}, false},
      {4, 1, Encoding::Signed, Encoding::Unsigned, {128, 64, 512, 3, 8, 1, 2}, false},
      // Sets a wgmma per X plane above 96 registers, held by a producer warpgroup's registers
      // (rules::kTmaOneWarpUnstackedRegs): unsigned w4a5 128x32 and signed w8a3 x signed 128x16
      // with 128 (they spilled with one producer warp), unsigned w2a3 128x64 (untuned at
      // 1024x4096x4096).
      {4, 5, Encoding::Unsigned, Encoding::Unsigned, {128, 32, 512, 4, 8, 1, 2}, false},
      {8, 3, Encoding::Signed, Encoding::Signed, {128, 16, 512, 3, 8, 1, 2}, false},
      {2, 3, Encoding::Unsigned, Encoding::Unsigned, {128, 64, 1024, 4, 8, 1, 2}, false}};
  for (const auto& l : listed) {
    KernelSpec s;
    s.w = {l.p, l.we};
    s.x = {l.q, l.xe};
    s.tile = l.t;
    INFO("w", l.p, "a", l.q, " bn ", l.t.bn, " bk ", l.t.bk);
    REQUIRE(rules::folds_sets(l.t, s.w, s.x) == l.folds);
    specs.push_back(s);
  }
  KernelSpec wide_signed;  // the bench's w2a2 on its wide tile: signed W, 4 sets
  wide_signed.w = {2, Encoding::Signed};
  wide_signed.x = {2, Encoding::Unsigned};
  wide_signed.tile = Tile{128, 96, 1024, 3, 8, 1, 2};
  specs.push_back(wide_signed);
  for (const KernelSpec& s : specs) REQUIRE(rules::tma_tile_error(*s.tile, s) == "");
  prewarm(specs, "sm_90a");
  Engine engine;
  // M=100: one M tile, so a cluster sharing X has blocks whose rows all lie past M.
  // K=130 and 300: a single K step shorter than the 1024- or 512-bit box. The last three have more
  // tile patches than the persistent grid has clusters (for cluster 8, the last one).
  const ApmmShape shapes[] = {{1, 1, 1},         {7, 13, 300},      {100, 517, 1000}, {333, 517, 1000},
                              {129, 65, 1025},   {4100, 1100, 130}, {300, 2000, 2100}, {1000, 3000, 3000},
                              {1500, 2600, 2100}};
  verify_every_shape(engine, specs, shapes, 12000, "apmm TMA core");
}

TEST_CASE("int16 output (spec \"output\": \"int16\"): every core, bit-exact on shapes that are not tile multiples") {
  TempCache cache;
  struct Case { int p, q; Encoding we; Tile t; };
  // mma.sync tiles; the cp.async wgmma core (128x256/1024 8x1: 256 columns a warpgroup,
  // staged 64-column boxes in a pipeline slot, with and without pm1 weights' column terms);
  // the TMA core with two-box staging (128x192, and 128x256 st4: the bench's w1a2-i16 and
  // w1a1-i16 tiles at 8192^3), whole-tile staging (128x128 st4: 32 KB of int16 beside the pipeline), and warpgroups whose
  // columns are not whole int16 boxes (64x192 4x2 and 128x96: 96; 128x32: plain stores).
  const Case cases[] = {
      {1, 2, Encoding::Pm1, {16, 8, 256, 2, 1, 1}},        {2, 2, Encoding::Signed, {64, 128, 512, 2, 2, 4}},
      {1, 1, Encoding::Unsigned, {128, 256, 512, 3, 2, 4}}, {1, 2, Encoding::Pm1, {128, 192, 1024, 3, 8, 1, 2}},
      {1, 1, Encoding::Unsigned, {128, 256, 1024, 3, 8, 1}}, {1, 1, Encoding::Pm1, {128, 256, 1024, 3, 8, 1}},
      {1, 2, Encoding::Pm1, {128, 128, 1024, 4, 8, 1, 2}}, {2, 2, Encoding::Pm1, {64, 192, 1024, 3, 4, 2, 2}},
      {2, 2, Encoding::Signed, {128, 96, 1024, 3, 8, 1, 2}}, {1, 2, Encoding::Pm1, {128, 32, 1024, 3, 8, 1, 2}},
      {1, 1, Encoding::Pm1, {64, 256, 1024, 3, 4, 2, 4}},   {1, 1, Encoding::Pm1, {128, 256, 1024, 4, 8, 1, 2}},
      // K under one 1024-bit stage (short_k_tile): w1a1's 64x256 (staged), 64x64 (plain stores),
      // w1a2's and w2a2's cluster tiles of 512-bit steps (whole-tile staging).
      {1, 1, Encoding::Unsigned, {64, 256, 512, 4, 4, 1}},  {1, 2, Encoding::Pm1, {64, 64, 512, 4, 4, 1}},
      {1, 2, Encoding::Pm1, {128, 128, 512, 4, 8, 1, 2}},  {2, 2, Encoding::Signed, {128, 64, 512, 4, 8, 1, 2}},
  };
  // Odd N, N*2 bytes not a multiple of 16 (no tensor map: plain stores), N a multiple of 8 but
  // not of a box's 64 columns, several patches per cluster (the last for the wide tiles too),
  // and one short K step over many tiles.
  const ApmmShape shapes[] = {{1, 1, 1},          {129, 517, 1000},   {300, 1100, 2100}, {333, 2600, 3000},
                              {1000, 3000, 1025}, {2100, 4104, 1030}, {4100, 1100, 500}};
  std::vector<KernelSpec> specs;
  for (const Case& c : cases) {
    KernelSpec s;
    s.w = {c.p, c.we};
    s.x = {c.q, Encoding::Unsigned};
    s.tile = c.t;
    s.epilogue.int16_out = true;
    if (c.t.cluster > 1 && skipped_without_sm90a("TMA core, int16 output")) continue;
    specs.push_back(s);
  }
  Engine engine;
  verify_every_shape(engine, specs, shapes, 21000, "apmm int16 output");
}

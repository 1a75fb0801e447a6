// The tuning database (include/apnn/tuning.h) and tuned-or-heuristic tile resolution
// (engine/tile_choice.h), without a GPU.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <tuple>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <thread>
#include <vector>

#include "apnn/error.h"
#include "apnn/tuning.h"
#include "engine/tile_choice.h"
#include "engine/tune.h"
#include "spec/epilogue.h"
#include "spec/kernel_rules.h"
#include "test_util.h"

namespace fs = std::filesystem;
using namespace apnn;

namespace {

struct TempDb {
  ScratchDir scratch{"apnn-tuning-test"};
  const fs::path& dir = scratch.path();
  TempDb() { setenv("APNN_TUNING_DB", (dir / "tuning.json").c_str(), 1); }
  ~TempDb() { unsetenv("APNN_TUNING_DB"); }
  fs::path path() const { return dir / "tuning.json"; }
};

KernelSpec w1a2() {
  KernelSpec s;
  s.w = {1, Encoding::Pm1};
  s.x = {2, Encoding::Unsigned};
  return s;
}

KernelSpec w2a2() {
  KernelSpec s;
  s.w = {2, Encoding::Signed};
  s.x = {2, Encoding::Unsigned};
  return s;
}

const nlohmann::json kShape = {{"m", 1000}, {"n", 4096}, {"k", 4096}};

}  // namespace

TEST_CASE("tuning keys: bucketed shapes, spec without its tile, arch, device and generator") {
  CHECK(shape_bucket(kShape) == "m1024_n4096_k4096");
  CHECK(shape_bucket({{"batch", 3}, {"in_channels", 65}, {"height", 16}, {"width", 17}, {"out_channels", 256}}) ==
        "n4_c128_h16_w32_o256");
  KernelSpec tiled = w1a2();
  tiled.tile = rules::default_tile(tiled.w, tiled.x);
  const TuneKey a = make_tune_key(w1a2(), "sm_90a", "H100", kShape);
  CHECK(make_tune_key(tiled, "sm_90a", "H100", kShape).str() == a.str());
  CHECK(make_tune_key(w1a2(), "sm_80", "H100", kShape).str() != a.str());
  CHECK(make_tune_key(w1a2(), "sm_90a", "H200", kShape).str() != a.str());
  CHECK(make_tune_key(w1a2(), "sm_90a", "H100", {{"m", 2000}, {"n", 4096}, {"k", 4096}}).str() != a.str());
  KernelSpec other = w1a2();
  other.x.bits = 3;
  CHECK(make_tune_key(other, "sm_90a", "H100", kShape).str() != a.str());
  CHECK(contains(a.str(), "apnn-generator-"));
}

TEST_CASE("tuning database: record and lookup round trip, written atomically") {
  TempDb tmp;
  TuningDb db(TuningDb::default_path());
  CHECK(db.path() == tmp.path());
  const TuneKey key = make_tune_key(w1a2(), "sm_90a", "H100", kShape);
  CHECK_FALSE(db.lookup(key));
  const Tile t{128, 64, 512, 4, 2, 4};
  db.record(key, {t, 12.5});
  const auto got = db.lookup(key);
  REQUIRE(got);
  CHECK(got->tile == t);
  CHECK(got->us == 12.5);
  const TuneKey other = make_tune_key(w1a2(), "sm_90a", "H100", {{"m", 64}, {"n", 1024}, {"k", 1024}});
  db.record(other, {Tile{16, 16, 512, 3, 1, 2}, 3.0});
  CHECK(db.lookup(key)->tile == t);  // earlier entries survive a later record
  for (const auto& e : fs::directory_iterator(tmp.dir))
    CHECK_MESSAGE(!contains(e.path().filename().string(), ".tmp."), "temp file left: ", e.path());
}

TEST_CASE("tuning database: a corrupt file is ignored with a warning and replaced by the next record") {
  TempDb tmp;
  const TuneKey key = make_tune_key(w1a2(), "sm_90a", "H100", kShape);
  for (const char* junk : {"{not json", "[]", "{\"version\": 2, \"entries\": {}}", ""}) {
    std::ofstream(tmp.path()) << junk;
    TuningDb db(tmp.path());
    CHECK_FALSE(db.lookup(key));
    db.record(key, {Tile{64, 64, 512, 3, 2, 2}, 1.0});
    REQUIRE(db.lookup(key));
  }
  // A parseable file with a broken entry: that entry is ignored, the file stays usable.
  std::ofstream(tmp.path()) << "{\"version\": 1, \"entries\": {\"" << key.str() << "\": {\"tile\": {\"bm\": 64}}}}";
  CHECK_FALSE(TuningDb(tmp.path()).lookup(key));
}

TEST_CASE("tuning database: concurrent records from several threads all land") {
  TempDb tmp;
  std::vector<std::thread> pool;
  for (int t = 0; t < 4; ++t)
    pool.emplace_back([&, t] {
      TuningDb db(tmp.path());
      for (int i = 0; i < 5; ++i)
        db.record(make_tune_key(w1a2(), "sm_90a", "H100", {{"m", 1 << (t * 5 + i)}, {"n", 8}, {"k", 8}}),
                  {Tile{64, 64, 512, 3, 2, 2}, 1.0 * i});
    });
  for (auto& th : pool) th.join();
  TuningDb db(tmp.path());
  for (int t = 0; t < 4; ++t)
    for (int i = 0; i < 5; ++i)
      CHECK(db.lookup(make_tune_key(w1a2(), "sm_90a", "H100", {{"m", 1 << (t * 5 + i)}, {"n", 8}, {"k", 8}})));
}

TEST_CASE("resolve_tile: the recorded winner when legal, else the heuristic; an explicit tile always wins") {
  TempDb tmp;
  const Target target = nominal_target("sm_90");  // sm_90a's heuristic prefers wgmma tiles (below)
  const Problem p = apmm_problem({1000, 4096, 4096});
  const Tile heuristic = *resolve_tile(w1a2(), p, target).tile;
  CHECK(heuristic == rules::heuristic_tile(w1a2().w, w1a2().x, p.M, p.N, p.K_bits, target.sm_count, target.max_smem));
  const Tile tuned{32, 128, 1024, 2, 2, 4};
  REQUIRE(rules::check_tile(tuned, w1a2().w, w1a2().x).empty());
  TuningDb(tmp.path()).record(make_tune_key(w1a2(), target.arch, target.device, p.shape), {tuned, 9.0});
  TileSource from = TileSource::Spec;
  CHECK(*resolve_tile(w1a2(), p, target, &from).tile == tuned);
  CHECK(from == TileSource::Tuned);
  CHECK(std::string(tile_source_name(from)) == "tuned");
  // Another device does not see it.
  Target other = target;
  other.device = "another GPU";
  CHECK(*resolve_tile(w1a2(), p, other, &from).tile == heuristic);
  CHECK(from == TileSource::Untuned);
  // An illegal recorded tile (hand-edited database) falls back to the heuristic.
  TuningDb(tmp.path()).record(make_tune_key(w1a2(), target.arch, target.device, p.shape), {Tile{48, 64, 512, 3, 2, 2}, 1});
  CHECK(*resolve_tile(w1a2(), p, target, &from).tile == heuristic);
  CHECK(from == TileSource::Untuned);
  KernelSpec explicit_tile = w1a2();
  explicit_tile.tile = Tile{64, 64, 512, 3, 2, 2};
  CHECK(*resolve_tile(explicit_tile, p, target, &from).tile == *explicit_tile.tile);
  CHECK(from == TileSource::Spec);
}

TEST_CASE("resolve_tile on sm_90a: the wgmma core's tile for APMM problems of at least half a wave") {
  TempDb tmp;
  const Target target = nominal_target("sm_90a");
  Tile wt;
  REQUIRE(rules::wgmma_tile(&wt, w1a2().w, w1a2().x));
  const Problem big = apmm_problem({4000, 4096, 4096});
  // ... on the TMA core with a cluster of 2 (the X tile shared: 32 M tiles pair up); w1a2's
  // 128x128 tile with 3 stages, which leave room for the whole output tile's staging.
  Tile staged = wt;
  staged.cluster = 2;
  staged.stages = 3;
  CHECK(*resolve_tile(w1a2(), big, target).tile == staged);
  CHECK(rules::use_wgmma(resolve_tile(w1a2(), big, target), "sm_90a"));
  CHECK(rules::tma_tile_error(staged, w1a2()).empty());
  CHECK(rules::tma_output_staging_bytes(staged, w1a2().w, w1a2().x) == 128 * 128 * 4);
  for (const ApmmShape& shape : {ApmmShape{8192, 2048, 2048}, ApmmShape{1024, 4096, 4096}, ApmmShape{8192, 4096, 4096}})
    CHECK(*resolve_tile(w1a2(), apmm_problem(shape), target).tile == staged);
  // K over 4096 bits: 4 stages, the output staged two boxes per warpgroup at a time...
  Tile deep = staged;
  deep.stages = 4;
  for (const ApmmShape& shape : {ApmmShape{4000, 4096, 8192}, ApmmShape{1024, 8192, 8192}})
    CHECK(*resolve_tile(w1a2(), apmm_problem(shape), target).tile == deep);
  // ... and with an int16 output, whose whole tile (32 KB) fits beside 4 stages, at K over one
  // 1024-bit stage (at one stage the narrow tile below).
  KernelSpec w1a2_i16 = w1a2();
  w1a2_i16.epilogue.int16_out = true;
  CHECK(rules::tma_output_staging_bytes(deep, w1a2().w, w1a2().x, 2) == 128 * 128 * 2);
  for (const ApmmShape& shape : {ApmmShape{8192, 2048, 2048}, ApmmShape{1024, 4096, 4096}, ApmmShape{8192, 4096, 4096}})
    CHECK(*resolve_tile(w1a2_i16, apmm_problem(shape), target).tile == deep);
  // At one 1024-bit stage too: the narrow tile below cannot stage 32 int16 columns (a box
  // is 64).
  CHECK(*resolve_tile(w1a2_i16, apmm_problem({8192, 1024, 1024}), target).tile == deep);
  CHECK(rules::tma_output_staging_bytes(Tile{128, 32, 1024, 3, 8, 1, 2}, w1a2().w, w1a2().x, 2) == 0);
  // ... or, where its last round of patches costs no more, the tile half again as wide (a
  // producer warpgroup hands its registers to the 192 accumulators): 8192^3 has 21 rounds of
  // 128x192 patches (x 1.5 = 31.5) against 32 of 128x128; 4000x4096 has 6 (9) against 8, and
  // 1024x8192 3 (4.5) against 4.
  Tile wide = staged;
  wide.bn = 192;
  CHECK(*resolve_tile(w1a2(), apmm_problem({8192, 8192, 8192}), target).tile == wide);
  CHECK(rules::tma_producer_warps(wide, w1a2().w, w1a2().x) == 4);
  Tile wide22 = staged;
  wide22.bn = 96;
  CHECK(*resolve_tile(w2a2(), apmm_problem({8192, 8192, 8192}), target).tile == wide22);
  CHECK(resolve_tile(w2a2(), apmm_problem({8192, 8192, 4096}), target).tile->bn == 64);  // K of 4096 bits
  CHECK(resolve_tile(w2a2(), apmm_problem({1024, 8192, 8192}), target).tile->bn == 64);  // 6 rounds (9) against 8
  CHECK(rules::tma_output_staging_bytes(deep, w1a2().w, w1a2().x) == 2 * 2 * rules::kTmaStagingBoxBytes);
  CHECK(rules::tma_tile_error(deep, w1a2()).empty());
  // K of one 1024-bit stage: 128x32, more tiles for the short mainloop; w2a2's 128x64 keeps
  // its 4 stages.
  Tile narrow = staged;
  narrow.bn = 32;
  CHECK(*resolve_tile(w1a2(), apmm_problem({8192, 1024, 1024}), target).tile == narrow);
  CHECK(rules::tma_tile_error(narrow, w1a2()).empty());
  CHECK(resolve_tile(w2a2(), apmm_problem({8192, 1024, 1024}), target).tile->bn == 64);
  CHECK(resolve_tile(w2a2(), apmm_problem({8192, 4096, 4096}), target).tile->stages == 4);
  CHECK(resolve_tile(w2a2(), apmm_problem({1024, 4096, 4096}), target).tile->cluster == 2);
  // w4a4, whose cluster tile (128x16, a set per pair) issues 64-column wgmmas: the folded
  // 128x64 tile with 2 stages (rules::folds_sets: N = 256), where its tiles fill half the SMs
  // and its cluster pair spans two N tiles; w2a8 and w2a4, whose tiles are already 128 columns
  // a wgmma, keep them.
  KernelSpec w4a4;
  w4a4.w = {4, Encoding::Signed};
  w4a4.x = {4, Encoding::Unsigned};
  for (const ApmmShape& shape : {ApmmShape{8192, 8192, 8192}, ApmmShape{1024, 4096, 4096}, ApmmShape{8192, 1024, 1024}}) {
    const Tile f = *resolve_tile(w4a4, apmm_problem(shape), target).tile;
    CHECK(f == Tile{128, 64, 1024, 2, 8, 1, 2});
    CHECK(rules::folds_sets(f, w4a4.w, w4a4.x));
  }
  // M of 64 or fewer: not a 128-row tile, half of it empty, but the heuristic's 64-row one
  // (at 8 or more plane pairs, where measured); the folded tile still where it fills half the
  // SMs (w8a8 at N = 4096: 128 tiles of 32 columns).
  const Tile w4a4_m64 = *resolve_tile(w4a4, apmm_problem({64, 4096, 4096}), target).tile;
  CHECK(w4a4_m64.bm == 64);
  CHECK(w4a4_m64.cluster == 1);
  CHECK(resolve_tile(w4a4, apmm_problem({65, 4096, 4096}), target).tile->bm == 128);
  CHECK(resolve_tile(w4a4, apmm_problem({16384, 64, 4096}), target).tile->bn == 16);  // one N tile of 64: no pair
  KernelSpec w2a8 = w4a4, w2a4 = w4a4;
  w2a8.w.bits = w2a4.w.bits = 2;
  w2a8.x.bits = 8;
  CHECK(*resolve_tile(w2a8, apmm_problem({8192, 8192, 8192}), target).tile == Tile{128, 16, 1024, 4, 8, 1, 2});
  CHECK(*resolve_tile(w2a4, apmm_problem({8192, 8192, 8192}), target).tile == Tile{128, 32, 1024, 4, 8, 1, 2});
  // p of 8, whose 1024-bit stage does not fit twice: the folded tiles with 512-bit steps; where
  // they would not fill half the SMs, the cp.async core's narrow tile as before.
  KernelSpec w8a8 = w4a4, w8a4 = w4a4;
  w8a8.w.bits = w8a8.x.bits = w8a4.w.bits = 8;
  for (const ApmmShape& shape : {ApmmShape{8192, 8192, 8192}, ApmmShape{1024, 4096, 4096}}) {
    CHECK(*resolve_tile(w8a8, apmm_problem(shape), target).tile == Tile{128, 32, 512, 2, 8, 1, 2});
    CHECK(*resolve_tile(w8a4, apmm_problem(shape), target).tile == Tile{128, 64, 512, 2, 8, 1, 2});
  }
  // 512-bit steps also where a third would fit (w6a6: 60 KB a stage); where two 1024-bit
  // stages fit, those (w5a4: 2 x 112 KB), as for w4a4 with unsigned weights (whose cluster
  // tile's widest stage is 512 bits).
  KernelSpec w6a6 = w4a4, w5a4 = w4a4, u4a4 = w4a4;
  w6a6.w.bits = w6a6.x.bits = 6;
  w5a4.w.bits = 5;
  u4a4.w.enc = Encoding::Unsigned;
  CHECK(*resolve_tile(w6a6, apmm_problem({1024, 4096, 4096}), target).tile == Tile{128, 32, 512, 2, 8, 1, 2});
  CHECK(*resolve_tile(w5a4, apmm_problem({1024, 4096, 4096}), target).tile == Tile{128, 64, 1024, 2, 8, 1, 2});
  CHECK(*resolve_tile(u4a4, apmm_problem({1024, 4096, 4096}), target).tile == Tile{128, 64, 1024, 2, 8, 1, 2});
  CHECK(*resolve_tile(w8a8, apmm_problem({64, 1024, 1024}), target).tile == Tile{64, 8, 1024, 3, 4, 1});
  CHECK(*resolve_tile(w8a8, apmm_problem({64, 4096, 4096}), target).tile == Tile{128, 32, 512, 2, 8, 1, 2});
  CHECK(resolve_tile(w1a2(), apmm_problem({64, 16384, 16384}), target).tile->bm == 128);  // 2 plane pairs: unmeasured
  const Tile w8a4_small = *resolve_tile(w8a4, apmm_problem({256, 1024, 1024}), target).tile;  // 32 tiles of 128x64
  CHECK(w8a4_small.cluster == 1);
  CHECK(w8a4_small.bk == 512);
  // Where rules::wgmma_tile's stage is 512 bits: the folded tile where the sets fold there
  // (unsigned w4a3 at the 192-register boundary); else the TMA core at the folded width (q = 1:
  // 64) with 2 stages of 1024 bits where they fit, else 3 of 512 (q = 1: 3 of 512 first); else
  // the cp.async tile's shape with a cluster from a wave of its tiles, where its consumers hold
  // 128 accumulator registers or fewer (above 96 in sets a wgmma per X plane, with a producer
  // warpgroup) or one wgmma covers all q planes.
  KernelSpec u5a5 = w4a4, u6a6 = w4a4, u4a3 = w4a4, w5a1 = w4a4, w8a1 = w4a4, w8a2 = w4a4;
  u5a5.w = u5a5.x = {5, Encoding::Unsigned};
  u6a6.w = u6a6.x = {6, Encoding::Unsigned};
  u4a3.w = {4, Encoding::Unsigned};
  u4a3.x = {3, Encoding::Unsigned};
  w5a1.w.bits = 5;
  w5a1.x = {1, Encoding::Pm1};
  w8a1.w.bits = w8a2.w.bits = 8;
  w8a1.x.bits = 1;
  w8a2.x.bits = 2;
  const Problem mid = apmm_problem({1024, 4096, 4096});
  CHECK(*resolve_tile(u5a5, mid, target).tile == Tile{128, 32, 1024, 2, 8, 1, 2});
  CHECK(*resolve_tile(u6a6, mid, target).tile == Tile{128, 32, 512, 3, 8, 1, 2});
  CHECK(*resolve_tile(u4a3, mid, target).tile == Tile{128, 64, 1024, 2, 8, 1, 2});
  CHECK(*resolve_tile(w5a1, mid, target).tile == Tile{128, 64, 512, 3, 8, 1, 2});
  CHECK(*resolve_tile(w8a1, mid, target).tile == Tile{128, 32, 512, 3, 8, 1, 2});  // 128x64: 256 registers
  CHECK_FALSE(rules::folds_sets(Tile{128, 32, 1024, 2, 8, 1, 2}, u5a5.w, u5a5.x));
  CHECK_FALSE(rules::folds_sets(Tile{128, 32, 512, 3, 8, 1, 2}, u6a6.w, u6a6.x));
  CHECK(rules::folds_sets(Tile{128, 64, 1024, 2, 8, 1, 2}, u4a3.w, u4a3.x));  // folded_tile's, at 192 registers
  CHECK(*resolve_tile(w8a2, apmm_problem({1024, 1024, 1024}), target).tile == Tile{128, 16, 512, 3, 8, 1, 2});
  // Also where the cluster tile's consumers hold over 96 accumulator registers beside a B
  // operand per X plane (unsigned w4a5 at 128x32: 8 sets of 16, 5 planes): with one producer
  // warp ptxas spilled them, a producer warpgroup holds them (rules::kTmaOneWarpUnstackedRegs).
  KernelSpec u4a5 = u5a5;
  u4a5.w.bits = 4;
  const Tile u4a5_tile{128, 32, 512, 4, 8, 1, 2};
  CHECK(*resolve_tile(u4a5, mid, target).tile == u4a5_tile);
  CHECK(rules::tma_producer_warps(u4a5_tile, u4a5.w, u4a5.x) == 4);
  KernelSpec u7a2 = u5a5;  // 8 sets of 16 at 128x32 (3 stages of 512 bits)
  u7a2.w.bits = 7;
  u7a2.x.bits = 2;
  CHECK(*resolve_tile(u7a2, apmm_problem({1024, 1024, 1024}), target).tile == Tile{128, 32, 512, 3, 8, 1, 2});
  // At M = 64 the folded tile only where the exact sets would not fit it (w8a8 above).
  KernelSpec u8a5 = u5a5;
  u8a5.w.bits = 8;
  CHECK(rules::folds_sets(Tile{128, 32, 512, 2, 8, 1, 2}, u8a5.w, u8a5.x));  // 12 exact sets: 192 registers
  CHECK(resolve_tile(u8a5, apmm_problem({64, 4096, 4096}), target).tile->bm == 64);
  CHECK(*resolve_tile(u8a5, mid, target).tile == Tile{128, 32, 512, 2, 8, 1, 2});
  KernelSpec u5a2 = u5a5;  // 6 unstacked sets of 16 at 128x32: 96 registers
  u5a2.x.bits = 2;
  CHECK(*resolve_tile(u5a2, apmm_problem({1024, 1024, 1024}), target).tile == Tile{128, 32, 512, 4, 8, 1, 2});
  const Tile w8a8_one_m = *resolve_tile(w8a8, apmm_problem({128, 1024, 1024}), target).tile;  // 128 tiles of 128x8
  CHECK(w8a8_one_m.cluster == 1);
  CHECK(w8a8_one_m.bn == 8);
  // A single M tile cannot pair along M: the cp.async wgmma core (N=16384: 128 tiles of 128
  // columns, over half a wave).
  const Problem one_m = apmm_problem({128, 16384, 4096});
  CHECK(*resolve_tile(w1a2(), one_m, target).tile == wt);
  // w2a2 shares the W tile (2 planes x 128 rows against 2 x 64): pairs along N.
  Tile w22;
  REQUIRE(rules::wgmma_tile(&w22, w2a2().w, w2a2().x));
  CHECK_FALSE(rules::cluster_shares_x(w22, w2a2().w, w2a2().x));
  CHECK(resolve_tile(w2a2(), apmm_problem({8192, 4096, 4096}), target).tile->cluster == 2);
  // APNN_DISABLE_WGMMA (the mma.sync core on sm_90a, for comparisons): never the TMA core,
  // which only the wgmma core's generator emits.
  setenv("APNN_DISABLE_WGMMA", "1", 1);
  CHECK(resolve_tile(w1a2(), big, target).tile->cluster == 1);
  CHECK(resolve_tile(w2a2(), apmm_problem({8192, 4096, 4096}), target).tile->cluster == 1);
  const std::vector<Tile> off = legal_tiles(w1a2(), "sm_90a", target.max_smem);
  CHECK(std::none_of(off.begin(), off.end(), [](const Tile& t) { return t.cluster != 1; }));
  unsetenv("APNN_DISABLE_WGMMA");
  // Too few blocks: the paper's heuristic (many small tiles); where its tile runs on the
  // wgmma core, 4 stages for its 3 (that core loads stages-2 K steps ahead).
  const Problem small = apmm_problem({64, 1024, 1024});
  KernelSpec heuristic = w1a2();
  heuristic.tile = rules::heuristic_tile(w1a2().w, w1a2().x, 64, 1024, 1024, target.sm_count, target.max_smem);
  Tile expected = *heuristic.tile;
  if (rules::use_wgmma(heuristic, "sm_90a") && expected.stages == 3) expected.stages = 4;
  CHECK(*resolve_tile(w1a2(), small, target).tile == expected);
  // Enough blocks but K below one 1024-bit stage (short_k_tile, where the heuristic's tile
  // with its warps side by side along N would run on mma.sync): one 512-bit step on the TMA
  // core where the cluster tiles pair up and fill half the SMs (w1a2: the narrow 128x32 for
  // an int32 output, 128x128 for int16; w2a2 its 128x64), w1a1's 64x256 on the cp.async core
  // from a wave of them (its one warpgroup of 256 columns stages the output), else 64x64 on
  // the cp.async core with 4 stages (256-bit steps at K of 256 bits and less).
  KernelSpec w1a2_i16k = w1a2();
  w1a2_i16k.epilogue.int16_out = true;
  KernelSpec w1a1 = w1a2();
  w1a1.w = {1, Encoding::Unsigned};
  w1a1.x = {1, Encoding::Unsigned};
  const Tile narrow512{128, 32, 512, 3, 8, 1, 2}, wide512{128, 128, 512, 4, 8, 1, 2};
  CHECK(*resolve_tile(w1a2(), apmm_problem({8192, 512, 512}), target).tile == narrow512);
  CHECK(*resolve_tile(w1a2(), apmm_problem({8191, 500, 500}), target).tile == narrow512);
  CHECK(*resolve_tile(w1a2_i16k, apmm_problem({8192, 512, 512}), target).tile == wide512);
  // ... not at K of 256 bits and less, where an int16 output keeps the mma.sync tile.
  CHECK_FALSE(rules::use_wgmma(resolve_tile(w1a2_i16k, apmm_problem({8192, 256, 256}), target), "sm_90a"));
  CHECK(*resolve_tile(w2a2(), apmm_problem({8192, 512, 512}), target).tile == Tile{128, 64, 512, 4, 8, 1, 2});
  CHECK(*resolve_tile(w1a2(), apmm_problem({8192, 768, 768}), target).tile == narrow512);  // two steps
  const Tile w1a1_wide{64, 256, 512, 4, 4, 1, 1};
  CHECK(*resolve_tile(w1a1, apmm_problem({8192, 512, 512}), target).tile == w1a1_wide);
  CHECK(rules::wgmma_stages_output(w1a1_wide, w1a1.w, w1a1.x));
  const Tile small256{64, 64, 256, 4, 4, 1, 1}, small512{64, 64, 512, 4, 4, 1, 1};
  for (const KernelSpec& s : {w1a2(), w2a2(), w1a1}) {
    CHECK(*resolve_tile(s, apmm_problem({8192, 256, 256}), target).tile == small256);
    CHECK(*resolve_tile(s, apmm_problem({8192, 128, 128}), target).tile == small256);
  }
  for (const ApmmShape& sh : {ApmmShape{1024, 512, 512}, ApmmShape{2048, 512, 512}, ApmmShape{64, 512, 512}}) {
    CHECK(*resolve_tile(w1a2(), apmm_problem(sh), target).tile == small512);
    CHECK(*resolve_tile(w1a1, apmm_problem(sh), target).tile == small512);
  }
  CHECK(*resolve_tile(w2a2(), apmm_problem({1024, 256, 256}), target).tile == small256);
  CHECK(rules::tma_tile_error(narrow512, w1a2()).empty());
  CHECK(rules::tma_tile_error(wide512, w1a2_i16k).empty());
  CHECK(rules::use_wgmma(resolve_tile(w1a2(), apmm_problem({8192, 256, 256}), target), "sm_90a"));
  // An int16 output at one 512-bit step under half a wave of cluster tiles: 64x64 too; w1a1's
  // at K of 256 bits keeps the mma.sync tile like w1a2's.
  CHECK(*resolve_tile(w1a2_i16k, apmm_problem({1024, 512, 512}), target).tile == small512);
  KernelSpec w1a1_i16 = w1a1;
  w1a1_i16.epilogue.int16_out = true;
  CHECK(*resolve_tile(w1a1_i16, apmm_problem({8192, 512, 512}), target).tile == w1a1_wide);
  CHECK_FALSE(rules::use_wgmma(resolve_tile(w1a1_i16, apmm_problem({8192, 256, 256}), target), "sm_90a"));
  // The narrow tile's cluster pairs along N (it shares W: 2 planes x 32 columns against 128
  // rows); with one 32-column N tile it has no pair, and still beat the 128-column tile,
  // which pairs along M (session 40, calls 8-9): kept there too.
  CHECK_FALSE(rules::cluster_shares_x(narrow512, w1a2().w, w1a2().x));
  CHECK(*resolve_tile(w1a2(), apmm_problem({16384, 32, 512}), target).tile == narrow512);
  CHECK(resolve_tile(w1a2(), apmm_problem({16384, 32, 1024}), target).tile->bn == 32);
  // APNN_DISABLE_WGMMA: short K stays on mma.sync.
  setenv("APNN_DISABLE_WGMMA", "1", 1);
  CHECK_FALSE(rules::use_wgmma(resolve_tile(w1a2(), apmm_problem({8192, 512, 512}), target), "sm_90a"));
  CHECK(resolve_tile(w1a2(), apmm_problem({8192, 512, 512}), target).tile->cluster == 1);
  unsetenv("APNN_DISABLE_WGMMA");
  // Other targets never get it.
  CHECK(*resolve_tile(w1a2(), big, nominal_target("sm_90")).tile ==
        rules::heuristic_tile(w1a2().w, w1a2().x, 1000, 4096, 4096, 132, 227 * 1024));
}

TEST_CASE("untuned tile of an sm_90a APMM chain: the cp.async wgmma core (no cluster; w2a2 quantize chains of 7 or more tiles a block: a cluster), two warpgroups along N at 128 columns") {
  TempDb tmp;
  const Target target = nominal_target("sm_90a");
  for (const char* c : {R"([{"op":"scale_bias"},{"op":"relu"},{"op":"quantize","bits":2,"enc":"unsigned"}])",
                        R"([{"op":"scale_bias"},{"op":"relu"}])"}) {
    INFO(c);
    KernelSpec q = w1a2();
    q.epilogue = parse_epilogue(nlohmann::json::parse(c), false, "test");
    Tile wt;
    REQUIRE(rules::wgmma_tile(&wt, q.w, q.x));
    REQUIRE(wt.bn == 128);
    Tile split = wt;
    split.warps_n = 2;
    for (const ApmmShape& sh : {ApmmShape{1024, 4096, 4096}, ApmmShape{8192, 8192, 8192}}) {
      const KernelSpec k = resolve_tile(q, apmm_problem(sh), target);
      CHECK(*k.tile == split);
      CHECK(k.tile->cluster == 1);
      CHECK(rules::use_wgmma(k, "sm_90a"));
    }
    // w2a2's 128x64 tile keeps one warpgroup column; K under a stage, the heuristic's tile
    // with its warps side by side along N (mma.sync; the plain output's short_k_tile is
    // unmeasured for chains).
    KernelSpec q22 = w2a2();
    q22.epilogue = q.epilogue;
    Tile wt22;
    REQUIRE(rules::wgmma_tile(&wt22, q22.w, q22.x));
    CHECK(*resolve_tile(q22, apmm_problem({1024, 4096, 4096}), target).tile == wt22);
    CHECK(*resolve_tile(q22, apmm_problem({2048, 4096, 1024}), target).tile == wt22);
    // Its quantize chain takes the TMA core's wide tile where blocks run 7 or more tiles
    // (8192x4096: 20.8 tiles of 128x96, 4096x4096: 10.4, 3072x4096: 7.8; 2048x4096: 5.2 keeps
    // the 128x64 tile above); its other chains keep the 128x64 tile.
    const Tile big22 = *resolve_tile(q22, apmm_problem({8192, 4096, 4096}), target).tile;
    if (q.epilogue.quantize()) {
      CHECK(big22 == Tile{128, 96, 1024, 3, 8, 1, 2});
      CHECK(*resolve_tile(q22, apmm_problem({8192, 4096, 1024}), target).tile == big22);
      CHECK(*resolve_tile(q22, apmm_problem({4096, 4096, 4096}), target).tile == big22);
      // The threshold: 21 M tiles x 22 pairs of the 43 column tiles of 128x96 are 462
      // patches, 7 rounds of 66 clusters; 20 M tiles give 440.
      CHECK(*resolve_tile(q22, apmm_problem({3072, 4096, 1024}), target).tile == big22);
      CHECK(*resolve_tile(q22, apmm_problem({2688, 4096, 1024}), target).tile == big22);
      CHECK(*resolve_tile(q22, apmm_problem({2560, 4096, 1024}), target).tile == wt22);
      // 3-bit codes keep the 128x64 tile (they spill on the cluster tile: test_compiler).
      KernelSpec q3 = q22;
      q3.epilogue = parse_epilogue(
          nlohmann::json::parse(R"([{"op":"scale_bias"},{"op":"quantize","bits":3,"enc":"signed","scale":"per_channel"}])"),
          false, "test");
      CHECK(*resolve_tile(q3, apmm_problem({8192, 4096, 4096}), target).tile == wt22);
    } else {
      CHECK(big22 == wt22);
    }
    const KernelSpec short_k = resolve_tile(q, apmm_problem({8192, 256, 256}), target);
    const Tile hk = rules::heuristic_tile(q.w, q.x, 8192, 256, 256, target.sm_count, target.max_smem);
    CHECK(short_k.tile->bm == hk.bm);
    CHECK(short_k.tile->bn == hk.bn);
    CHECK(short_k.tile->bk == 256);
    CHECK(short_k.tile->warps_m == 1);
    CHECK(short_k.tile->warps_n == std::min(8, hk.bn / 8));
    CHECK_FALSE(rules::use_wgmma(short_k, "sm_90a"));
  }
}

TEST_CASE("untuned tile of an sm_90a APConv on the wgmma core: narrow tiles get one warpgroup column, short grids bk 1024") {
  const KernelSpec conv = parse_spec_text(
      R"({"op":"apconv","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned","kernel":[3,3],"stride":[1,1],"pad":[1,1]})");
  const Target h100 = nominal_target("sm_90a");
  // The default cores' rules (untuned_tile takes the halo core first where it applies: the
  // next test case), checked on the bench's layers, the halo's batch-128 ones included.
  // The paper's N=1 16x16 layer at C=O=256: 4 x 32 tiles of 64x8, under one wave of 132.
  const Problem paper = conv_problem(conv, {1, 256, 16, 16, 256});
  const Tile h = rules::heuristic_tile(conv, paper.M, paper.N, paper.K_bits, h100.sm_count, h100.max_smem);
  const Tile u = untuned_default_core_tile(conv, paper, h100);
  CHECK(u.bm == h.bm);
  CHECK(u.bn == h.bn);
  CHECK(u.warps_n == 1);
  CHECK(u.bk == 1024);
  KernelSpec with = conv;
  with.tile = u;
  CHECK(rules::use_wgmma(with, "sm_90a"));
  // C=O=1024: the heuristic's 128-row tiles give 128 blocks, under a wave: one warpgroup of
  // 64 rows instead, for up to 4 plane pairs (w2a8's 16 keep 128 rows).
  const Problem wide = conv_problem(conv, {1, 1024, 16, 16, 1024});
  REQUIRE(rules::heuristic_tile(conv, wide.M, wide.N, wide.K_bits, h100.sm_count, h100.max_smem).bm == 128);
  const Tile uw = untuned_default_core_tile(conv, wide, h100);
  CHECK(uw.bm == 64);
  CHECK(uw.warps_m == 4);
  const KernelSpec w2a8 = parse_spec_text(
      R"({"op":"apconv","w_bits":2,"w_enc":"signed","x_bits":8,"x_enc":"unsigned","kernel":[3,3],"stride":[1,1],"pad":[1,1]})");
  CHECK(untuned_default_core_tile(w2a8, conv_problem(w2a8, {1, 1024, 16, 16, 1024}), h100).bm == 128);
  // A batch-8 56x56x64 layer fills the GPU: no 1024-bit steps, but K = 1152 bits runs as 3
  // steps of 512 (33% padding) instead of the heuristic's 5 of 256.
  const Problem batch = conv_problem(conv, {8, 64, 56, 56, 64});
  CHECK(batch.K_bits == 1152);
  const Tile hb = rules::heuristic_tile(conv, batch.M, batch.N, batch.K_bits, h100.sm_count, h100.max_smem);
  KernelSpec on_core = conv;
  on_core.tile = hb;
  REQUIRE(rules::use_wgmma(on_core, "sm_90a"));  // else the rule would not apply at all
  CHECK(hb.bk == 256);
  CHECK(untuned_default_core_tile(conv, batch, h100).bk == 512);
  // K = 2304 (256 channels) keeps 512 (1024 would pad a third: 41.1 vs 31.0 us measured);
  // K = 4608 (512 channels) too: its tall tile's 1024-bit steps become 512 (deep_conv_tile).
  CHECK(untuned_default_core_tile(conv, conv_problem(conv, {128, 256, 14, 14, 256}), h100).bk == 512);
  CHECK(untuned_default_core_tile(conv, conv_problem(conv, {128, 512, 7, 7, 512}), h100).bk == 512);
  // Batch 128 fills the GPU even with 128-row tiles: two warpgroups along O (each M tile
  // gathers its X columns again); w2a2's four accumulator groups halve bn to fit. O = 64
  // keeps 64 rows, and batch 8 (O = 128: 98 tiles of 128 x 64) keeps the heuristic's.
  // 28x28 C=O=128 takes 128x128 (784 tiles, merged sets: two blocks per SM, 2.97 waves);
  // 14x14 C=O=256 128x64, where 392 tiles of 128x128 would run 1.48 waves of two.
  const Tile tall = untuned_default_core_tile(conv, conv_problem(conv, {128, 128, 28, 28, 128}), h100);
  CHECK(tall.bm == 128);
  CHECK(tall.warps_m == 8);
  CHECK(tall.warps_n == 1);
  CHECK(tall.bn == 128);
  const Tile half = untuned_default_core_tile(conv, conv_problem(conv, {128, 256, 14, 14, 256}), h100);
  CHECK(half.bm == 128);
  CHECK(half.bn == 64);
  const KernelSpec w2a2 = parse_spec_text(
      R"({"op":"apconv","w_bits":2,"w_enc":"signed","x_bits":2,"x_enc":"unsigned","kernel":[3,3],"stride":[1,1],"pad":[1,1]})");
  const Tile tall2 = untuned_default_core_tile(w2a2, conv_problem(w2a2, {128, 256, 14, 14, 256}), h100);
  CHECK(tall2.bm == 128);
  CHECK(tall2.bn == 64);
  CHECK(untuned_default_core_tile(conv, conv_problem(conv, {128, 64, 56, 56, 64}), h100).bm == 64);
  CHECK(untuned_default_core_tile(conv, conv_problem(conv, {8, 128, 28, 28, 128}), h100).bm == 64);
  // w2a8 with K >= 2048 bits over a wave: 128x16 of one warpgroup column, whose wgmma covers
  // all 8 X planes; K = 1152 (C = 128) keeps the heuristic's 64x32 with two along N.
  auto stacked_planes = [&](const KernelSpec& s, const Tile& t) {
    KernelSpec k = s;
    k.tile = t;
    if (!rules::use_wgmma(k, "sm_90a")) return 0;  // stacking is a wgmma-core property
    return rules::wgmma_x_stack(t, s.w, s.x, rules::kernel_plane_groups(k, "sm_90a"));
  };
  for (const ConvShape& shape : {ConvShape{128, 512, 7, 7, 512}, ConvShape{128, 256, 14, 14, 256}, ConvShape{8, 256, 14, 14, 256}}) {
    CAPTURE(shape.N);
    CAPTURE(shape.C);
    const Tile t8 = untuned_default_core_tile(w2a8, conv_problem(w2a8, shape), h100);
    CHECK(t8.bm == 128);
    CHECK(t8.bn == 16);
    CHECK(t8.warps_n == 1);
    CHECK(stacked_planes(w2a8, t8) == 8);
  }
  const Tile short_k = untuned_default_core_tile(w2a8, conv_problem(w2a8, {128, 128, 28, 28, 128}), h100);
  CHECK(short_k.bm == 64);
  CHECK(short_k.bn == 32);
  CHECK(short_k.warps_n == 2);
  CHECK(stacked_planes(w2a8, short_k) == 1);
  // w2a4 (8 plane pairs) was not measured with this tile and keeps its own.
  const KernelSpec w2a4 = parse_spec_text(
      R"({"op":"apconv","w_bits":2,"w_enc":"signed","x_bits":4,"x_enc":"unsigned","kernel":[3,3],"stride":[1,1],"pad":[1,1]})");
  CHECK_FALSE(untuned_default_core_tile(w2a4, conv_problem(w2a4, {128, 512, 7, 7, 512}), h100).bn == 16);
  // Stages: 4 where they fit, and on the tall tiles of 3x3 convs over a wave, 512-bit steps
  // with the deepest pipeline that keeps the blocks per SM (deep_conv_tile): 14x14 C=O=256's
  // 784 tiles of 128x64 take 6 stages (two blocks). 7x7 C=O=512's 392 tiles, one wave of three
  // blocks against 1.48 of two, take the 4 stages where three fit (merged w1a2 sets); so do
  // 14x14x256-o512 3x3/2's. 28x28 C=O=128's 128x128 keeps 4: a fifth costs its second block.
  auto blocks_of = [&](const KernelSpec& s, const Tile& t) {
    KernelSpec k = s;
    k.tile = t;
    const KernelSpec ck = canonicalize(k);
    return rules::conv_blocks_per_sm(ck, "sm_90a", rules::kernel_plane_groups(ck, "sm_90a"));
  };
  const Tile seven = untuned_default_core_tile(conv, conv_problem(conv, {128, 512, 7, 7, 512}), h100);
  CHECK(seven.bm == 128);
  CHECK(seven.bn == 64);
  CHECK(seven.stages == 4);
  CHECK(blocks_of(conv, seven) == 3);
  CHECK(half.stages == 6);
  CHECK(blocks_of(conv, half) == 2);
  KernelSpec conv_s2 = conv;
  conv_s2.conv.sh = conv_s2.conv.sw = 2;
  const Tile s2 = untuned_default_core_tile(conv_s2, conv_problem(conv_s2, {128, 256, 14, 14, 512}), h100);
  CHECK(s2 == Tile{128, 64, 512, 4, 8, 1});
  CHECK(blocks_of(conv_s2, s2) == 3);
  CHECK(untuned_default_core_tile(conv_s2, conv_problem(conv_s2, {128, 128, 28, 28, 256}), h100) == Tile{128, 64, 512, 6, 8, 1});
  CHECK(tall.stages == 4);
  // w2a2's 7x7 C=O=512 tile keeps its 1024-bit steps: the deepest 512-bit tile that keeps
  // its one block (6 x 512) holds fewer bits in flight than 4 x 1024 (a rule without that
  // test ran 4 x 512 with two blocks there: 26.85 against 24.63 us).
  const Tile seven2 = untuned_default_core_tile(w2a2, conv_problem(w2a2, {128, 512, 7, 7, 512}), h100);
  CHECK(seven2.bk == 1024);
  CHECK(seven2.stages == 4);
  // A fused chain keeps the tile before this rule (its registers stay at two blocks).
  KernelSpec chain = conv;
  chain.epilogue = parse_spec_text(
      R"({"op":"apconv","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned","kernel":[3,3],"stride":[1,1],"pad":[1,1],
          "epilogue":[{"op":"scale_bias"},{"op":"relu"},{"op":"quantize","bits":2,"enc":"unsigned"}]})").epilogue;
  const Tile seven_chain = untuned_default_core_tile(chain, conv_problem(chain, {128, 512, 7, 7, 512}), h100);
  CHECK(seven_chain.bk == 1024);
  CHECK(seven_chain.stages == 3);
  const KernelSpec w1a4 = parse_spec_text(
      R"({"op":"apconv","w_bits":1,"w_enc":"pm1","x_bits":4,"x_enc":"unsigned","kernel":[3,3],"stride":[1,1],"pad":[1,1]})");
  const Tile wide4 = untuned_default_core_tile(w1a4, conv_problem(w1a4, {128, 64, 56, 56, 64}), h100);
  CHECK(wide4.bn == 128);
  CHECK(wide4.stages == 4);
  // Where 512-bit stages do not fit the device's shared memory, the 256-bit wgmma tile.
  const Target small{"sm_90a", "small shared memory", 132, 48 * 1024};
  const Tile narrow = untuned_default_core_tile(conv, batch, small);
  KernelSpec on_small = conv;
  on_small.tile = narrow;
  CHECK(narrow.bk == 256);
  CHECK(rules::use_wgmma(on_small, "sm_90a"));
  CHECK(rules::launch_shared_bytes(on_small, "sm_90a") <= small.max_smem);
  // A 1x1 conv of 128 channels under one wave: K is 128 bits, so no 1024-bit steps.
  const KernelSpec conv1 = parse_spec_text(
      R"({"op":"apconv","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned","kernel":[1,1],"stride":[1,1],"pad":[0,0]})");
  const Problem small_k = conv_problem(conv1, {1, 128, 16, 16, 128});
  CHECK(small_k.K_bits == 128);
  CHECK(untuned_default_core_tile(conv1, small_k, h100).bk < 1024);
  // Other archs: the heuristic as it is.
  CHECK(untuned_default_core_tile(conv, paper, nominal_target("sm_90")) ==
        rules::heuristic_tile(conv, paper.M, paper.N, paper.K_bits, 132, 227 * 1024));
}

TEST_CASE("untuned tile of an sm_90a APConv: the halo core for 3x3 and 1x1 convs with tiles for half the SMs") {
  const KernelSpec w1a2 = parse_spec_text(
      R"({"op":"apconv","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned","kernel":[3,3],"stride":[1,1],"pad":[1,1]})");
  KernelSpec s2 = w1a2;
  s2.conv.sh = s2.conv.sw = 2;
  const KernelSpec w2a2 = parse_spec_text(
      R"({"op":"apconv","w_bits":2,"w_enc":"signed","x_bits":2,"x_enc":"unsigned","kernel":[3,3],"stride":[1,1],"pad":[1,1]})");
  const Target h100 = nominal_target("sm_90a");
  auto halo = [](int bn, int stages = 2) {
    Tile t{128, bn, 256, stages, 8, 1};
    t.halo = true;
    return t;
  };
  // The bench's batch-128 layers: 14x14 at stride 1 in two tiles of 7 rows x 16 columns (the
  // widest bn, 128, would make tiles of 8 and 6 rows); 7x7 at stride 1 (9 columns) and 7x7
  // out of 14x14 at stride 2 (8 columns) a whole image in 64.
  // Stages: 4 where a tile's mainloop is short (w1a2 at C = 256, stride 1: 18 wgmmas).
  CHECK(untuned_tile(w1a2, conv_problem(w1a2, {128, 256, 14, 14, 256}), h100) == halo(112, 4));
  CHECK(untuned_tile(w1a2, conv_problem(w1a2, {128, 512, 7, 7, 512}), h100) == halo(64));
  CHECK(untuned_tile(s2, conv_problem(s2, {128, 256, 14, 14, 512}), h100) == halo(64));
  // w2a2's four accumulator groups cap bn at 64: 14x14 as four tiles of 4 rows (64 columns).
  CHECK(untuned_tile(w2a2, conv_problem(w2a2, {128, 256, 14, 14, 256}), h100) == halo(64));
  CHECK(untuned_tile(w2a2, conv_problem(w2a2, {128, 512, 7, 7, 512}), h100) == halo(64));
  // C = 128 (pairs of positions a k256 slice): 28x28 at stride 1 in 4 rows of 30 columns
  // (bn 128, 4 stages: 24.5 us against the default core's 32.0), at stride 2 in two tiles of
  // 7 rows of 15 (bn 112; bn 128's 8 + 6 rows ran 16.3 us against the default core's 24.6:
  // session 28, call 6).
  CHECK(untuned_tile(w1a2, conv_problem(w1a2, {128, 128, 28, 28, 128}), h100) == halo(128, 4));
  CHECK(untuned_tile(s2, conv_problem(s2, {128, 128, 28, 28, 256}), h100) == halo(112));
  // C = 64 pads to one chunk as well: 56x56x64 in 2 rows of 58 columns, its warpgroups on
  // alternate tiles (O = 64) with 4 stages (session 52: 1.5% faster than 2), 3x3/2 to 128
  // in 4 rows of 29 (31.3 against the default core's 35.8; session 28, calls 7 and 9).
  CHECK(untuned_tile(w1a2, conv_problem(w1a2, {128, 64, 56, 56, 64}), h100) == halo(128, 4));
  CHECK(untuned_tile(w2a2, conv_problem(w2a2, {128, 64, 56, 56, 64}), h100) == halo(64, 4));
  CHECK(untuned_tile(s2, conv_problem(s2, {128, 64, 56, 56, 128}), h100) == halo(128));
  // 1x1 kernels at stride 2 (ResNet-18's shortcuts): rows of Wo columns, one or two wgmmas
  // a tile, so 4 stages. 28x28 in 4 rows (112 columns), 14x14 in two tiles of 7 rows (98
  // columns in bn 112), 7x7 a whole image in 64.
  KernelSpec k1 = w1a2;
  k1.conv = {1, 1, 2, 2, 0, 0};
  CHECK(untuned_tile(k1, conv_problem(k1, {128, 64, 56, 56, 128}), h100) == halo(112, 4));
  CHECK(untuned_tile(k1, conv_problem(k1, {128, 128, 28, 28, 256}), h100) == halo(112, 4));
  CHECK(untuned_tile(k1, conv_problem(k1, {128, 256, 14, 14, 512}), h100) == halo(64, 4));
  // Every halo choice launches (rules::halo_launch_error on the output size: C, M tiles,
  // the grid row in bn and a box, shared memory), at both strides.
  for (const KernelSpec& s : {w1a2, s2, k1})
    for (const ConvShape& shape : {ConvShape{128, 256, 14, 14, 256}, ConvShape{128, 512, 7, 7, 512},
                                   ConvShape{256, 768, 7, 7, 256}, ConvShape{512, 256, 28, 28, 256}}) {
      const Problem p = conv_problem(s, shape);
      INFO(canonical_json(s), " ", p.shape.dump());
      const std::optional<Tile> t = untuned_halo_tile(s, p, h100);
      REQUIRE(t);
      KernelSpec k = s;
      k.tile = *t;
      CHECK(rules::launchable(k, "sm_90a", h100.max_smem));
      CHECK(halo_problem_error(k, p, h100) == "");
    }
  // Where 4 stages do not fit the device's shared memory (144456 bytes at 14x14x256), 2.
  const Target small{"sm_90a", "130 KB shared memory", 132, 130000};
  CHECK(untuned_tile(w1a2, conv_problem(w1a2, {128, 256, 14, 14, 256}), small) == halo(112, 2));
  // Batch 32 puts 32 tiles on 7x7x512's 33 SMs an M tile (4 M tiles); batch 16, under half.
  CHECK(untuned_halo_tile(w1a2, conv_problem(w1a2, {32, 512, 7, 7, 512}), h100));
  // Where it does not apply, the default cores' tile: batch 8 or 16 (tiles for under half
  // the SMs), C = 300 or 1024 (3 or 8 chunks), w2a8 (bn 16 at most) and w2a4 (8 plane pairs,
  // not measured), a pooled chain, 5x5, pad 0, stride 3 or 2x1, a row wider than bn, other
  // archs, O past 128 rows an SM, and APNN_DISABLE_WGMMA.
  auto not_halo = [&](const KernelSpec& s, const ConvShape& shape, const Target& t) {
    const Problem p = conv_problem(s, shape);
    INFO(canonical_json(s), " on ", t.arch, ": ", p.shape.dump());
    CHECK_FALSE(untuned_halo_tile(s, p, t));
    CHECK(untuned_tile(s, p, t) == untuned_default_core_tile(s, p, t));
  };
  not_halo(w1a2, {8, 256, 14, 14, 256}, h100);
  not_halo(w1a2, {16, 512, 7, 7, 512}, h100);
  not_halo(w1a2, {1, 256, 16, 16, 256}, h100);
  not_halo(w1a2, {128, 1024, 7, 7, 1024}, h100);
  not_halo(w1a2, {128, 300, 14, 14, 256}, h100);
  not_halo(parse_spec_text(
               R"({"op":"apconv","w_bits":2,"w_enc":"signed","x_bits":8,"x_enc":"unsigned","kernel":[3,3],"stride":[1,1],"pad":[1,1]})"),
           {128, 256, 14, 14, 256}, h100);
  // Chains without a pool take the halo core as the plain conv does (the network's
  // bn+relu+q2 ran 1.1-1.4x faster there than on the default core: bench/NOTES.md session 28);
  // a pool needs windows across the readout's pixels.
  auto with_chain = [&](const KernelSpec& s, const char* chain) {
    KernelSpec c = s;
    c.epilogue = parse_spec_text(fmt::format(R"({{"op":"apconv","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned",
                                                "kernel":[3,3],"stride":[1,1],"pad":[1,1],"epilogue":{}}})",
                                             chain))
                     .epilogue;
    return c;
  };
  const char* q2 = R"([{"op":"scale_bias"},{"op":"relu"},{"op":"quantize","bits":2,"enc":"unsigned"}])";
  CHECK(untuned_tile(with_chain(w1a2, q2), conv_problem(w1a2, {128, 256, 14, 14, 256}), h100) == halo(112, 4));
  CHECK(untuned_tile(with_chain(s2, q2), conv_problem(s2, {128, 256, 14, 14, 512}), h100) == halo(64));
  CHECK(untuned_tile(with_chain(w1a2, R"([{"op":"relu"}])"), conv_problem(w1a2, {128, 512, 7, 7, 512}), h100) == halo(64));
  not_halo(with_chain(w1a2, R"([{"op":"relu"},{"op":"pool","kind":"max","size":2,"stride":2}])"), {128, 256, 14, 14, 256},
           h100);
  not_halo(with_chain(w1a2, q2), {8, 256, 14, 14, 256}, h100);
  KernelSpec k5 = w1a2;
  k5.conv.kh = k5.conv.kw = 5;
  k5.conv.ph = k5.conv.pw = 2;
  not_halo(k5, {128, 256, 14, 14, 256}, h100);
  KernelSpec pad0 = w1a2;
  pad0.conv.ph = pad0.conv.pw = 0;
  not_halo(pad0, {128, 256, 14, 14, 256}, h100);
  not_halo(w1a2, {128, 256, 14, 14, 256}, nominal_target("sm_90"));
  not_halo(w1a2, {128, 256, 14, 14, 256}, nominal_target("sm_80"));
  not_halo(w1a2, {128, 256, 14, 14, 128 * 133}, h100);
  not_halo(parse_spec_text(
               R"({"op":"apconv","w_bits":2,"w_enc":"signed","x_bits":4,"x_enc":"unsigned","kernel":[3,3],"stride":[1,1],"pad":[1,1]})"),
           {128, 256, 14, 14, 256}, h100);
  KernelSpec s3 = w1a2;
  s3.conv.sh = s3.conv.sw = 3;
  not_halo(s3, {128, 256, 14, 14, 256}, h100);
  KernelSpec s21 = w1a2;
  s21.conv.sh = 2;
  not_halo(s21, {128, 256, 14, 14, 256}, h100);
  not_halo(w1a2, {128, 256, 4, 300, 256}, h100);  // a grid row of 302 columns
  setenv("APNN_DISABLE_WGMMA", "1", 1);
  not_halo(w1a2, {128, 256, 14, 14, 256}, h100);
  unsetenv("APNN_DISABLE_WGMMA");
}

TEST_CASE("legal_tiles: the halo core's tiles for a 3x3 pad-1 or 1x1 pad-0 conv on sm_90a only") {
  const KernelSpec conv = parse_spec_text(
      R"({"op":"apconv","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned","kernel":[3,3],"stride":[1,1],"pad":[1,1]})");
  auto halos = [](const std::vector<Tile>& tiles) {
    return std::count_if(tiles.begin(), tiles.end(), [](const Tile& t) { return t.halo; });
  };
  const int limit = 227 * 1024;
  CHECK(halos(legal_tiles(conv, "sm_90a", limit)) == 8 * 3);  // bn 16..128 x 2-4 stages
  CHECK(halos(legal_tiles(conv, "sm_90", limit)) == 0);
  CHECK(halos(legal_tiles(conv, "sm_80", limit)) == 0);
  CHECK(halos(legal_tiles(w1a2(), "sm_90a", limit)) == 0);  // an APMM
  KernelSpec k5 = conv;
  k5.conv.kh = k5.conv.kw = 5;
  k5.conv.ph = k5.conv.pw = 2;
  CHECK(halos(legal_tiles(k5, "sm_90a", limit)) == 0);
  KernelSpec k1 = conv;
  k1.conv = {1, 1, 2, 2, 0, 0};
  CHECK(halos(legal_tiles(k1, "sm_90a", limit)) == 8 * 3);
  k1.conv.ph = k1.conv.pw = 1;
  CHECK(halos(legal_tiles(k1, "sm_90a", limit)) == 0);
  setenv("APNN_DISABLE_WGMMA", "1", 1);  // mma.sync comparisons: no wgmma-only core
  CHECK(halos(legal_tiles(conv, "sm_90a", limit)) == 0);
  unsetenv("APNN_DISABLE_WGMMA");
}

TEST_CASE("legal_tiles: every candidate fits its core's launch; the TMA core's tiles only on sm_90a") {
  const int limit = 227 * 1024;
  const std::vector<Tile> h100 = legal_tiles(w1a2(), "sm_90a", limit);
  const std::vector<Tile> a100 = legal_tiles(w1a2(), "sm_80", limit);
  Tile tma;
  REQUIRE(rules::wgmma_tile(&tma, w1a2().w, w1a2().x));
  for (int cluster : {2, 4, 8}) {  // each cluster size of the default wgmma tile, once
    tma.cluster = cluster;
    CHECK(std::count(h100.begin(), h100.end(), tma) == 1);
  }
  // Every legal TMA tile: a producer warpgroup exactly where 8 consumer warps hold the
  // kernel's accumulator sets in more than 128 registers, or in more than 96 of merged sets
  // (unfolded, where a set per plane pair would not fit 128) (the generator, the launch and the
  // register budget all follow rules::tma_producer_warps).
  // Unsigned x unsigned pairs merge sets of equal weight (fewer sets than pairs).
  for (auto [p, q, u] : {std::tuple{1, 2, false}, {2, 2, false}, {1, 4, false}, {2, 4, false}, {4, 4, false}, {2, 8, false},
                         {2, 3, true}, {4, 5, true}}) {
    KernelSpec s;
    s.w = {p, u ? Encoding::Unsigned : (p > 1 ? Encoding::Signed : Encoding::Pm1)};
    s.x = {q, Encoding::Unsigned};
    for (const Tile& t : legal_tiles(s, "sm_90a", limit)) {
      if (t.cluster == 1) continue;
      s.tile = t;
      // Folded tiles (rules::folds_sets) hold a temporary of q sets beside the result.
      const rules::PlaneGroups g = rules::kernel_plane_groups(s, "sm_90a");
      const int regs = rules::accumulator_regs(t, g.folded ? q + 1 : static_cast<int>(g.weight.size()));
      INFO(canonical_json(s), " accumulators ", regs);
      CHECK((rules::tma_producer_warps(t, s.w, s.x) == 4) ==
            (t.warps_m * t.warps_n == 8 && (regs > 128 || (regs > 96 && !g.folded && rules::accumulator_regs(t, p * q) > 128))));
      CHECK(regs <= rules::kTmaMaxAccumulatorRegs);
    }
  }
  Tile wide{128, 192, 1024, 3, 8, 1, 2};  // the TMA core's wide tile; not without a cluster
  CHECK(std::count(h100.begin(), h100.end(), wide) == 1);
  wide.cluster = 1;
  CHECK(std::count(h100.begin(), h100.end(), wide) == 0);
  CHECK(std::none_of(a100.begin(), a100.end(), [](const Tile& t) { return t.cluster != 1; }));
  // sm_90a: the cluster-1 tiles plus their TMA variants.
  CHECK(h100.size() > a100.size());
  for (const auto* tiles : {&h100, &a100})
    for (const Tile& t : *tiles) {
      KernelSpec s = w1a2();
      s.tile = t;
      INFO(canonical_json(s));
      CHECK(rules::check_kernel_tile(t, s).empty());
      CHECK(rules::launch_shared_bytes(s, tiles == &h100 ? "sm_90a" : "sm_80") <= limit);
    }
}

TEST_CASE("core_family names each legal tile's core; tune's --core names are checked against them") {
  const int limit = 227 * 1024;
  const KernelSpec conv = parse_spec_text(
      R"({"op":"apconv","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned","kernel":[3,3],"stride":[1,1],"pad":[1,1]})");
  std::map<std::string, int> seen;
  for (const KernelSpec& base : {w1a2(), conv})
    for (const Tile& t : legal_tiles(base, "sm_90a", limit)) {
      KernelSpec s = base;
      s.tile = t;
      const std::string family = rules::core_family(s, "sm_90a");
      INFO(canonical_json(s), " on ", family);
      ++seen[family];
      CHECK((family == "wgmma-halo") == t.halo);
      CHECK((family == "wgmma-tma") == (t.cluster > 1));
      CHECK((family == "mma.sync") == !rules::use_wgmma(s, "sm_90a"));
      CHECK(rules::core_family(s, "sm_80") == "mma.sync");
    }
  for (const char* family : rules::kCoreFamilies) CHECK(seen[family] > 0);
  CHECK(seen.size() == std::size(rules::kCoreFamilies));
  CHECK_NOTHROW(check_core_names({}));
  CHECK_NOTHROW(check_core_names({"mma.sync", "wgmma", "wgmma-tma", "wgmma-halo"}));
  for (const char* bad : {"tma", "WGMMA", "", "wgmma-tma2"}) {
    INFO(bad);
    try {
      check_core_names({"wgmma", bad});
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::InvalidInput);
      CHECK(std::string(e.what()).find(fmt::format("'{}'", bad)) != std::string::npos);
    }
  }
}

TEST_CASE("tune_candidates: the legal tiles on the listed cores, or one error naming the cores and the arch") {
  const Target h100 = nominal_target("sm_90a");
  const Problem p = apmm_problem({1000, 4096, 4096});
  const std::vector<Tile> all = tune_candidates(w1a2(), p, h100, {});
  CHECK(all == legal_tiles(w1a2(), "sm_90a", h100.max_smem));  // an APMM: no halo tiles to fit
  const std::vector<Tile> tma = tune_candidates(w1a2(), p, h100, {"wgmma-tma"});
  CHECK_FALSE(tma.empty());
  for (const Tile& t : tma) CHECK(t.cluster > 1);
  const std::vector<Tile> rest = tune_candidates(w1a2(), p, h100, {"mma.sync", "wgmma"});
  CHECK(rest.size() + tma.size() == all.size());
  for (const Tile& t : rest) CHECK(t.cluster == 1);
  auto error_of = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::InvalidInput);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // An APMM has no halo tiles; sm_80 no TMA core; an unknown name is named.
  const std::string halo = error_of([&] { tune_candidates(w1a2(), p, h100, {"wgmma-halo"}); });
  CHECK(halo.find("--core wgmma-halo") != std::string::npos);
  CHECK(halo.find("sm_90a") != std::string::npos);
  const std::string a100 = error_of([&] { tune_candidates(w1a2(), p, nominal_target("sm_80"), {"wgmma-tma", "wgmma"}); });
  CHECK(a100.find("--core wgmma-tma,wgmma") != std::string::npos);
  CHECK(a100.find("sm_80") != std::string::npos);
  CHECK(error_of([&] { tune_candidates(w1a2(), p, h100, {"tma"}); }).find("'tma'") != std::string::npos);
  CHECK_FALSE(tune_candidates(w1a2(), p, nominal_target("sm_80"), {"mma.sync"}).empty());

  // A conv of 64 out-channels (the warpgroups on alternate tiles) sweeps every stage count.
  KernelSpec conv = w1a2();
  conv.op = Op::Apconv;
  conv.conv = {3, 3, 1, 1, 1, 1};
  const std::vector<Tile> halo64 = tune_candidates(conv, conv_problem(conv, {128, 64, 56, 56, 64}), h100, {"wgmma-halo"});
  CHECK_FALSE(halo64.empty());
  for (const Tile& t : halo64) CHECK(t.halo);
  CHECK(std::count_if(halo64.begin(), halo64.end(), [](const Tile& t) { return t.stages == 3; }) > 0);
  const std::vector<Tile> halo128 = tune_candidates(conv, conv_problem(conv, {128, 64, 56, 56, 128}), h100, {"wgmma-halo"});
  CHECK(std::count_if(halo128.begin(), halo128.end(), [](const Tile& t) { return t.stages == 3; }) > 0);
}

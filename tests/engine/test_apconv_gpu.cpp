// APConv on the GPU, bit-exact against the CPU reference: every bit pair x encoding
// pair on a small conv, the paper's layer settings, strided / unpadded / 1x1 / odd
// shapes, the golden vectors, and the packed layout against its CPU reference.
#include "gpu_main.h"

#include <atomic>
#include <optional>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "apnn/conv_reference.h"
#include "apnn/engine.h"
#include "apnn/npy.h"
#include "apnn/reference.h"
#include "engine/conv_runner.h"
#include "engine/verify.h"
#include "golden_case.h"
#include "spec/kernel_rules.h"
#include "gpu_test_util.h"

namespace fs = std::filesystem;
using namespace apnn;

namespace {

KernelSpec conv_spec(OperandFormat w, OperandFormat x, ConvParams c) {
  KernelSpec s;
  s.op = Op::Apconv;
  s.w = w;
  s.x = x;
  s.conv = c;
  return s;
}

void expect_exact(Engine& engine, const KernelSpec& s, const ConvShape& sh, uint64_t seed) {
  const VerifyReport r = verify_apconv(engine, s, sh, seed, 0);
  INFO(r.canonical, " ", r.shape.dump(), ": ", r.first_mismatch);
  CHECK(r.checked > 0);
  CHECK(r.mismatches == 0);
}

}  // namespace

TEST_CASE("every bit pair x encoding pair on a small padded conv") {
  TempCache cache;
  std::vector<KernelSpec> specs;
  for (const KernelSpec& s : all_precisions()) {
    specs.push_back(conv_spec(s.w, s.x, {3, 3, 1, 1, 1, 1}));
    specs.back().tile = s.tile;
  }
  prewarm(specs, current_device().arch());
  Engine engine;
  uint64_t seed = 1;
  for (const KernelSpec& s : specs) expect_exact(engine, s, {2, 35, 9, 7, 19}, ++seed);
  std::printf("apconv all precisions: %zu specs (64 bit pairs x 9 encoding pairs) on N=2 C=35 9x7 O=19 3x3/1 pad 1\n",
              specs.size());
}

TEST_CASE("the paper's layer settings: N=1, 16x16, 3x3/1 pad 1, C=O in 128..1024") {
  TempCache cache;
  Engine engine;
  const OperandFormat pairs[][2] = {{{1, Encoding::Pm1}, {2, Encoding::Unsigned}},
                                    {{2, Encoding::Signed}, {2, Encoding::Unsigned}},
                                    {{1, Encoding::Pm1}, {4, Encoding::Unsigned}},
                                    {{2, Encoding::Signed}, {8, Encoding::Unsigned}},
                                    {{1, Encoding::Pm1}, {2, Encoding::Pm1}}};
  int cases = 0;
  for (const auto& p : pairs)
    for (int64_t c : {128, 256, 512, 1024}) {
      expect_exact(engine, conv_spec(p[0], p[1], {3, 3, 1, 1, 1, 1}), {1, c, 16, 16, c}, static_cast<uint64_t>(c));
      ++cases;
    }
  std::printf("apconv paper layers: %d cases exact\n", cases);
}

TEST_CASE("sm_90a wgmma conv: every K step width, 1-8 weight planes, O and K past the tile") {
  if (skipped_without_sm90a("wgmma conv")) return;
  TempCache cache;
  Engine engine;
  // bk 256 / 512 / 1024 are the 32-, 64- and 128-byte swizzles; O = 100 and 130 leave rows of
  // the last M tile past the weights (zero-filled); C = 200 pads K; 2 stages take the core's
  // two-barrier pipeline. The third shape has an even Ho*Wo (140: conv_sm80.cuh's
  // store_column_pairs) whose P = 420 ends in a part column tile, and C = 96, one chunk per
  // pixel: tiles of 32 or more columns gather through L1 there (gather_chunk).
  const struct { int p, q; Encoding we; Tile t; } cases[] = {
      {1, 2, Encoding::Pm1, {64, 16, 256, 3, 4, 1}},     {3, 2, Encoding::Signed, {64, 32, 512, 4, 4, 1}},
      {8, 1, Encoding::Unsigned, {64, 8, 1024, 3, 4, 1}}, {2, 2, Encoding::Signed, {128, 16, 1024, 4, 8, 1}},
      {1, 2, Encoding::Pm1, {64, 64, 512, 2, 4, 2}},
      // The untuned batch-128 tiles (engine/untuned_conv_tile.cpp): 128 rows in one warpgroup column.
      {1, 2, Encoding::Pm1, {128, 128, 512, 4, 8, 1}},  {2, 2, Encoding::Signed, {128, 64, 1024, 4, 8, 1}},
      // Merged accumulator sets (rules::kernel_plane_groups): w1a2 128x128 (and the first
      // above) one set, plane 1 issued twice; w2a2 two sets of weights 1 and -2.
      {1, 2, Encoding::Unsigned, {128, 128, 512, 4, 8, 1}}, {2, 2, Encoding::Signed, {64, 128, 512, 4, 4, 2}},
      {2, 2, Encoding::Signed, {128, 64, 512, 4, 8, 1}},
      // deep_conv_tile's tiles: w1a2 128x64/512 with 4 stages runs merged, three blocks per SM
      // (80 registers a thread); with 6 stages, exact sets, two blocks.
      {1, 2, Encoding::Pm1, {128, 64, 512, 4, 8, 1}},   {1, 2, Encoding::Pm1, {128, 64, 512, 6, 8, 1}},
  };
  int n = 0, merged = 0;
  for (const auto& c : cases) {
    KernelSpec s = conv_spec({c.p, c.we}, {c.q, Encoding::Unsigned}, {3, 3, 1, 1, 1, 1});
    s.tile = c.t;
    REQUIRE(rules::use_wgmma(s, "sm_90a"));
    merged += rules::kernel_plane_groups(s, "sm_90a").weight.size() < rules::plane_groups(s.w, s.x).weight.size();
    for (const ConvShape& sh :
         {ConvShape{1, 200, 9, 11, 100}, ConvShape{2, 64, 5, 5, 130}, ConvShape{3, 96, 10, 14, 72}}) {
      expect_exact(engine, s, sh, static_cast<uint64_t>(++n));
    }
  }
  CHECK(merged == 5);
  std::printf("apconv wgmma core, explicit tiles: %d cases exact (%d tiles with merged accumulator sets)\n", n, merged);
}

TEST_CASE("sm_90a halo core: 3x3 and 1x1, strides 1 and 2, C 64-768, O and output rows past the tile, every correction") {
  if (skipped_without_sm90a("halo core")) return;
  TempCache cache;
  Engine engine;
  // O = 200, 130, 136 leave rows of the last M tile past the weights (zero-filled boxes);
  // 13 output rows take a full and a part tile of 7 (and 5 rows in bn 16 a part of 2); 10x13
  // is not square; C = 512 and 768 run 2 and 3 k256 slices a position (W in one 64-byte or
  // three 32-byte swizzled boxes); pm1 activations add the border's weight sums
  // (conv_sm80.cuh's correction), unsigned weights none.
  struct Case { int p; Encoding we; int q; Encoding xe; int stride, bn, stages; std::vector<ConvShape> shapes; int kernel = 3; };
  const Case cases[] = {
      {1, Encoding::Pm1, 2, Encoding::Unsigned, 1, 112, 4,
       {{3, 256, 13, 13, 200}, {2, 256, 14, 14, 128}, {1, 512, 7, 7, 130}, {2, 256, 10, 13, 64}}},
      {1, Encoding::Pm1, 2, Encoding::Unsigned, 2, 64, 2, {{5, 256, 15, 15, 136}, {2, 256, 14, 14, 256}, {1, 512, 11, 11, 128}}},
      {1, Encoding::Pm1, 2, Encoding::Unsigned, 1, 64, 2, {{2, 768, 9, 9, 130}}},
      // C = 768 at stride 2: W's three 32-byte boxes a position against four phase grids.
      {1, Encoding::Pm1, 2, Encoding::Unsigned, 2, 48, 2, {{2, 768, 9, 9, 130}}},
      {2, Encoding::Signed, 2, Encoding::Unsigned, 1, 64, 3, {{4, 256, 7, 7, 128}, {2, 512, 7, 7, 136}}},
      {1, Encoding::Unsigned, 4, Encoding::Unsigned, 2, 48, 2, {{2, 256, 9, 9, 64}}},
      {1, Encoding::Pm1, 2, Encoding::Pm1, 1, 16, 8, {{1, 256, 5, 5, 128}, {2, 512, 3, 4, 16}}},
      // Blocks of several tiles: 600 images of 3x3 are 600 tiles on the 132 blocks of one M
      // tile, so a block's pipeline slots (2 or 4) and staging are reused several times.
      {1, Encoding::Pm1, 2, Encoding::Unsigned, 1, 16, 2, {{600, 256, 3, 3, 16}}},
      {2, Encoding::Signed, 2, Encoding::Unsigned, 2, 16, 4, {{600, 256, 5, 5, 24}}},
      // C = 128: five k256 slices of two positions each (the last with a zero box), strides
      // 1 and 2, pm1 activations' border terms, O past the tile.
      {1, Encoding::Pm1, 2, Encoding::Unsigned, 1, 128, 4, {{3, 128, 28, 28, 128}, {2, 128, 13, 13, 200}}},
      {1, Encoding::Pm1, 2, Encoding::Unsigned, 2, 64, 2, {{3, 128, 28, 28, 256}, {2, 128, 15, 15, 130}}},
      {2, Encoding::Signed, 2, Encoding::Unsigned, 1, 64, 3, {{2, 128, 9, 11, 136}}},
      {1, Encoding::Pm1, 2, Encoding::Pm1, 2, 32, 2, {{4, 128, 7, 7, 64}}},
      // C padded to whole chunks (conv_layout.h): 64 and 96 take the pairs of one chunk, 200
      // one k256 slice of two chunks; 56 columns need bn 128 for 2 rows.
      {1, Encoding::Pm1, 2, Encoding::Unsigned, 1, 128, 4, {{2, 64, 56, 56, 64}, {3, 96, 9, 9, 70}}},
      {2, Encoding::Signed, 2, Encoding::Unsigned, 2, 64, 2, {{2, 200, 14, 14, 130}, {3, 64, 15, 15, 128}}},
      // 1x1 kernels, pad 0 (grid rows of Wo columns, one phase at stride 2): ResNet-18's
      // shortcuts (C 64, 128: the one chunk paired with the zero box; 256: one k256 slice), odd
      // inputs (15 -> 8 at stride 2), a part row tile (14 rows in 8 + 6 at bn 112), C = 512
      // and 768 (a 64-byte box, three 32-byte ones), O <= 64 (alternate tiles), many tiles a
      // block, and stride 1.
      {1, Encoding::Pm1, 2, Encoding::Unsigned, 2, 112, 4, {{2, 64, 56, 56, 128}, {3, 64, 15, 15, 130}}, 1},
      {1, Encoding::Pm1, 2, Encoding::Unsigned, 2, 112, 4, {{3, 128, 28, 28, 256}, {2, 256, 14, 14, 512}}, 1},
      {1, Encoding::Pm1, 2, Encoding::Unsigned, 2, 64, 2, {{2, 256, 13, 13, 200}, {2, 512, 9, 9, 136}, {2, 768, 7, 7, 64}}, 1},
      {2, Encoding::Signed, 2, Encoding::Unsigned, 2, 64, 3, {{2, 200, 14, 14, 130}}, 1},
      {2, Encoding::Signed, 2, Encoding::Unsigned, 2, 64, 4, {{3, 96, 10, 10, 64}}, 1},
      // O <= 64 at 3 stages (the warpgroups' own full barriers), a shape that faulted before:
      // 13-14 tiles a block, so each warpgroup's barriers change phase.
      {1, Encoding::Pm1, 2, Encoding::Unsigned, 1, 64, 3, {{32, 64, 56, 56, 64}}},
      {1, Encoding::Pm1, 2, Encoding::Pm1, 2, 16, 4, {{600, 64, 6, 6, 24}}, 1},
      {1, Encoding::Unsigned, 4, Encoding::Unsigned, 1, 32, 2, {{2, 256, 14, 14, 136}, {2, 96, 9, 11, 70}}, 1},
      // The plain output through a tensor map (rules::halo_output_map): 30x30 in 4-row boxes
      // of 120 pixels (a part tile of 2 rows), O = 200 and 136 past the last warpgroup's rows,
      // signed weights (no column term) in 2-row boxes of rows padded from 30 to 32 columns.
      {1, Encoding::Pm1, 2, Encoding::Unsigned, 1, 128, 4, {{2, 64, 30, 30, 200}}},
      {2, Encoding::Signed, 2, Encoding::Unsigned, 1, 64, 3, {{2, 128, 28, 28, 136}}},
  };
  int n = 0, by_map = 0;
  for (const auto& c : cases) {
    const int pad = c.kernel / 2;
    KernelSpec s = conv_spec({c.p, c.we}, {c.q, c.xe}, {c.kernel, c.kernel, c.stride, c.stride, pad, pad});
    s.tile = Tile{128, c.bn, 256, c.stages, 8, 1, 1, true};
    REQUIRE(rules::check_kernel_tile(*s.tile, s).empty());
    for (const ConvShape& sh : c.shapes) {
      const ConvGeometry g = conv_geometry(s, sh);
      by_map += rules::halo_output_map(s, g.Ho(), g.Wo(), rules::halo_launch_geometry(s, g.Ho(), g.Wo()));
      expect_exact(engine, s, sh, static_cast<uint64_t>(++n));
    }
  }
  // Rows padded to 8 columns where that keeps a tile's rows: 56x56 in 2-row boxes (O 64,
  // alternate tiles) and 1-row ones (32 images, 3 stages), 28x28 in 4 rows, 3x3/2 outputs 6x6
  // and 14x14 (a part tile of 2 rows), the 1x1/2 outputs 8x8 (O 130) and 4x4, the 1x1/1 14x14
  // of unsigned 1-bit x 4-bit in 2 rows, and the two above.
  CHECK(by_map == 10);
  std::printf("apconv halo core: %d of the cases through the output's tensor map\n", by_map);
  // A size the halo core cannot run is an error naming it, not another core's result.
  KernelSpec s = conv_spec({1, Encoding::Pm1}, {2, Encoding::Unsigned}, {3, 3, 1, 1, 1, 1});
  s.tile = Tile{128, 112, 256, 4, 8, 1, 1, true};
  try {
    (void)verify_apconv(engine, s, {1, 300, 14, 14, 128}, 1, 0);
    FAIL("C = 300 ran on the halo core");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::InvalidInput);
    CHECK(std::string(e.what()).find("in-channels 300") != std::string::npos);
  }
  std::printf("apconv halo core: %d cases exact\n", n);
}

TEST_CASE("sm_90a persistent conv: blocks take several tiles and change column tile inside their share") {
  if (skipped_without_sm90a("wgmma conv")) return;
  TempCache cache;
  Engine engine;
  // p*q >= 8 runs persistent (rules::conv_persistent). Tiles of 1024-bit K steps and 3-4
  // stages fill an SM's shared memory, so the grid is one block per SM and each block takes
  // 2-5 tiles: O = 70 leaves a part M tile, P = 64*13*11 a part column tile, C = 70 pads K;
  // with one M tile (128 rows) every tile changes the column tile.
  const struct { int p, q; Encoding we, xe; Tile t; } cases[] = {
      {2, 8, Encoding::Signed, Encoding::Unsigned, {64, 32, 1024, 4, 4, 2}},
      {2, 4, Encoding::Signed, Encoding::Signed, {128, 32, 1024, 3, 8, 1}},
  };
  const ConvShape sh{64, 70, 13, 11, 70};
  int n = 0;
  for (const auto& c : cases) {
    KernelSpec s = conv_spec({c.p, c.we}, {c.q, c.xe}, {3, 3, 1, 1, 1, 1});
    s.tile = c.t;
    REQUIRE(rules::use_wgmma(s, "sm_90a"));
    REQUIRE(rules::conv_persistent(s));
    const int64_t tiles = (sh.O + c.t.bm - 1) / c.t.bm * ((sh.N * sh.H * sh.W + c.t.bn - 1) / c.t.bn);
    REQUIRE(tiles > 2 * current_device().sm_count);
    expect_exact(engine, s, sh, static_cast<uint64_t>(++n));
  }
  std::printf("apconv persistent wgmma core: %d cases exact\n", n);
}

TEST_CASE("strided, unpadded, 1x1 and the AlexNet / VGG / ResNet-18 kernels on odd shapes") {
  TempCache cache;
  Engine engine;
  struct Case { ConvParams c; ConvShape s; };
  const Case cases[] = {
      {{3, 3, 2, 2, 1, 1}, {2, 64, 15, 15, 33}},   // ResNet downsampling 3x3/2
      {{3, 3, 1, 1, 0, 0}, {1, 65, 10, 12, 17}},   // unpadded
      {{1, 1, 1, 1, 0, 0}, {3, 129, 7, 7, 40}},    // 1x1
      {{1, 1, 2, 2, 0, 0}, {2, 96, 14, 14, 24}},   // ResNet shortcut 1x1/2
      {{11, 11, 4, 4, 2, 2}, {1, 3, 63, 63, 16}},  // AlexNet conv1
      {{5, 5, 1, 1, 2, 2}, {1, 48, 13, 13, 20}},   // AlexNet conv2
      {{7, 7, 2, 2, 3, 3}, {2, 3, 32, 30, 16}},    // ResNet conv1
      {{3, 3, 1, 1, 1, 1}, {4, 65, 1, 1, 9}},      // H = W = 1: only the centre tap is inside
      {{3, 3, 2, 2, 0, 0}, {1, 32, 3, 3, 8}},      // Ho = Wo = 1
      {{3, 3, 1, 1, 3, 3}, {1, 16, 2, 3, 5}},      // padding larger than the image
  };
  const OperandFormat pairs[][2] = {{{1, Encoding::Pm1}, {2, Encoding::Unsigned}},
                                    {{2, Encoding::Signed}, {2, Encoding::Pm1}},
                                    {{1, Encoding::Pm1}, {1, Encoding::Pm1}},
                                    {{3, Encoding::Unsigned}, {4, Encoding::Signed}}};
  for (const Case& c : cases)
    for (const auto& p : pairs) expect_exact(engine, conv_spec(p[0], p[1], c.c), c.s, 11);
}

TEST_CASE("packed layout matches the CPU reference, and unpack inverts pack") {
  TempCache cache;
  Engine engine;
  for (int bits : {1, 2, 5, 8})
    for (Encoding e : {Encoding::Unsigned, Encoding::Pm1, Encoding::Signed}) {
      const OperandFormat f{bits, e};
      const KernelSpec s = conv_spec(f, f, {3, 3, 1, 1, 1, 1});
      ConvRunner runner(engine.kernel(s));
      const ConvGeometry g = conv_geometry(s, {2, 131, 5, 6, 7});
      const std::vector<int16_t> X = random_operand(f, static_cast<size_t>(g.N * g.C * g.H * g.W), 3);
      const std::vector<int16_t> W = random_operand(f, static_cast<size_t>(g.O * g.C * 9), 4);
      const PackedConvActivations px = runner.pack_x(DeviceBuffer::from(X), g);
      const PackedConvWeights pw = runner.pack_w(DeviceBuffer::from(W), g);
      const PackedActivations rx = pack_activations_reference(f, X.data(), g.N, g.C, g.H, g.W);
      const PackedWeights rw = pack_weights_reference(f, W.data(), g.O, g.C, g.kh, g.kw);
      INFO(f.describe());
      CHECK(px.planes.to_vector<uint32_t>(rx.planes.size()) == rx.planes);
      CHECK(px.pixsum.to_vector<int32_t>(rx.pixsum.size()) == rx.pixsum);
      CHECK(pw.planes.to_vector<uint32_t>(rw.planes.size()) == rw.planes);
      CHECK(pw.possum.to_vector<int32_t>(rw.possum.size()) == rw.possum);
      CHECK(pw.rowsum.to_vector<int32_t>(rw.rowsum.size()) == rw.rowsum);
      CHECK(runner.unpack_x(px).to_vector<int16_t>(X.size()) == X);
    }
}

TEST_CASE("golden APConv vectors (shared/vectors) on the GPU") {
  TempCache cache;
  Engine engine;
  int checked = 0;
  for (const fs::path& dir : golden_dirs("apconv_")) {
    const GoldenCase c = load_golden_case(dir);
    const KernelSpec s = parse_spec_text(c.spec_text, (dir / "spec.json").string());
    const std::vector<int16_t> W(c.w.values.begin(), c.w.values.end()), X(c.x.values.begin(), c.x.values.end());
    const std::vector<int32_t> got =
        apconv(engine, s, W.data(), X.data(), {c.x.shape[0], c.x.shape[1], c.x.shape[2], c.x.shape[3], c.w.shape[0]});
    INFO(dir.filename().string());
    REQUIRE(got.size() == c.y.values.size());
    CHECK(std::equal(got.begin(), got.end(), c.y.values.begin()));
    ++checked;
  }
  CHECK(checked >= 6);
  std::printf("golden vectors: %d APConv cases checked on the GPU\n", checked);
}

TEST_CASE("int16 output (spec \"output\": \"int16\"): halo, wgmma and mma.sync conv cores, exact; a K past int16 refused") {
  TempCache cache;
  Engine engine;
  // Odd Ho*Wo (single int16 stores), even (pairs as one 4-byte store), row-staged stores on
  // the wgmma core (one column tile of odd Ho*Wo), strides 1 and 2, O past the tile.
  struct Case { OperandFormat w, x; ConvParams c; std::optional<Tile> t; ConvShape s; bool sm90a; };
  const Case cases[] = {
      {{1, Encoding::Pm1}, {2, Encoding::Unsigned}, {3, 3, 1, 1, 1, 1}, Tile{128, 112, 256, 4, 8, 1, 1, true}, {3, 256, 13, 13, 200}, true},
      {{1, Encoding::Pm1}, {2, Encoding::Unsigned}, {3, 3, 2, 2, 1, 1}, Tile{128, 64, 256, 2, 8, 1, 1, true}, {5, 256, 15, 15, 136}, true},
      {{2, Encoding::Signed}, {2, Encoding::Unsigned}, {3, 3, 1, 1, 1, 1}, Tile{128, 64, 256, 3, 8, 1, 1, true}, {2, 128, 9, 11, 136}, true},
      {{1, Encoding::Pm1}, {2, Encoding::Unsigned}, {1, 1, 2, 2, 0, 0}, Tile{128, 64, 512, 3, 8, 1}, {3, 256, 14, 14, 130}, true},
      {{1, Encoding::Pm1}, {2, Encoding::Unsigned}, {1, 1, 2, 2, 0, 0}, Tile{128, 112, 256, 4, 8, 1, 1, true}, {3, 64, 56, 56, 130}, true},
      {{1, Encoding::Pm1}, {2, Encoding::Unsigned}, {3, 3, 1, 1, 1, 1}, Tile{64, 64, 512, 3, 4, 1}, {1, 64, 7, 7, 70}, true},
      // Through the halo core's output map (rules::halo_output_map): 56x56 in 2-row boxes
      // (the table's entries four pairs ahead), 28x28 in 4 rows with O past the tile.
      {{1, Encoding::Pm1}, {2, Encoding::Unsigned}, {3, 3, 1, 1, 1, 1}, Tile{128, 128, 256, 2, 8, 1, 1, true}, {2, 64, 56, 56, 64}, true},
      {{1, Encoding::Pm1}, {2, Encoding::Unsigned}, {3, 3, 1, 1, 1, 1}, Tile{128, 128, 256, 4, 8, 1, 1, true}, {2, 128, 28, 28, 136}, true},
      {{1, Encoding::Pm1}, {2, Encoding::Unsigned}, {3, 3, 1, 1, 1, 1}, Tile{64, 32, 256, 2, 2, 2}, {2, 65, 10, 12, 17}, false},
      {{1, Encoding::Pm1}, {2, Encoding::Pm1}, {3, 3, 2, 2, 1, 1}, std::nullopt, {2, 64, 15, 15, 33}, false},
      {{1, Encoding::Pm1}, {1, Encoding::Pm1}, {1, 1, 1, 1, 0, 0}, std::nullopt, {3, 129, 7, 7, 40}, false},
  };
  int n = 0, by_map = 0;
  for (const Case& c : cases) {
    if (c.sm90a && skipped_without_sm90a("int16 conv on the halo and wgmma cores")) continue;
    KernelSpec s = conv_spec(c.w, c.x, c.c);
    s.tile = c.t;
    s.epilogue.int16_out = true;
    if (s.tile) REQUIRE(rules::check_kernel_tile(*s.tile, s).empty());
    if (s.tile && s.tile->halo) {
      const ConvGeometry g = conv_geometry(s, c.s);
      by_map += rules::halo_output_map(s, g.Ho(), g.Wo(), rules::halo_launch_geometry(s, g.Ho(), g.Wo()));
    }
    expect_exact(engine, s, c.s, static_cast<uint64_t>(300 + ++n));
  }
  if (n > 0) CHECK(by_map == 2);
  std::printf("apconv int16 output: %d cases exact (%d through the halo core's output map)\n", n, by_map);
  // 1-bit pm1 x 2-bit unsigned: |w*x| <= 3, so in-channels*kernel may reach 10922.
  KernelSpec s = conv_spec({1, Encoding::Pm1}, {2, Encoding::Unsigned}, {3, 3, 1, 1, 1, 1});
  s.epilogue.int16_out = true;
  CHECK_THROWS_WITH_AS((void)conv_geometry(s, {1, 1214, 4, 4, 8}), doctest::Contains("can overflow the int16 output"), Error);
  CHECK_NOTHROW((void)conv_geometry(s, {1, 1213, 4, 4, 8}));  // 1213 * 9 = 10917
}

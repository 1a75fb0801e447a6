// Fused epilogue chains on the GPU, bit-exact against the CPU reference (the same float32
// operations in the same order): each op alone and the full chains for w1a2, w2a2 and w1a4
// on VGG / ResNet-like layers, odd shapes and explicit tiles; then a quantized layer's
// packed output fed straight into the next layer.
#include "gpu_main.h"

#include <array>
#include <vector>

#include <fmt/format.h>

#include "apnn/conv_reference.h"
#include "apnn/engine.h"
#include "apnn/epilogue_reference.h"
#include "apnn/reference.h"
#include "engine/apmm_runner.h"
#include "engine/conv_runner.h"
#include "engine/verify.h"
#include "gpu_test_util.h"
#include "spec/epilogue.h"
#include "spec/kernel_rules.h"

using namespace apnn;

namespace {

Epilogue chain(const char* json) { return parse_epilogue(nlohmann::json::parse(json), true, "test"); }

const OperandFormat kPrecisions[][2] = {{{1, Encoding::Pm1}, {2, Encoding::Unsigned}},
                                        {{2, Encoding::Signed}, {2, Encoding::Unsigned}},
                                        {{1, Encoding::Pm1}, {4, Encoding::Unsigned}}};

// Each op alone, then chains; the two the issue names come first among the chains.
const char* const kConvChains[] = {
    R"([{"op":"scale_bias"}])",
    R"([{"op":"relu"}])",
    R"([{"op":"pool","kind":"max","size":2,"stride":2}])",
    R"([{"op":"pool","kind":"avg","size":3,"stride":2}])",
    R"([{"op":"quantize","bits":2,"enc":"unsigned"}])",
    R"([{"op":"quantize","bits":4,"enc":"signed","scale":"per_channel"}])",
    R"([{"op":"scale_bias"},{"op":"relu"},{"op":"quantize","bits":2,"enc":"unsigned"}])",
    R"([{"op":"scale_bias"},{"op":"relu"},{"op":"pool","kind":"max","size":2,"stride":2},{"op":"quantize","bits":2,"enc":"unsigned"}])",
    R"([{"op":"scale_bias"},{"op":"relu"},{"op":"pool","kind":"avg","size":2,"stride":2},{"op":"quantize","bits":4,"enc":"unsigned","scale":"per_channel"}])",
    R"([{"op":"relu"},{"op":"pool","kind":"max","size":3,"stride":2},{"op":"scale_bias"},{"op":"quantize","bits":2,"enc":"pm1"}])",
    R"([{"op":"scale_bias"},{"op":"pool","kind":"avg","size":2,"stride":1},{"op":"relu"}])",
};

KernelSpec conv_spec(const OperandFormat* wx, const Epilogue& e, ConvParams c = {3, 3, 1, 1, 1, 1}) {
  KernelSpec s;
  s.op = Op::Apconv;
  s.w = wx[0];
  s.x = wx[1];
  s.conv = c;
  s.epilogue = e;
  return s;
}

// levels: the quantizer's levels that must appear (3 of 2^q, both of a 1-bit one's).
void expect_exact(const VerifyReport& r, int levels = 3) {
  INFO(r.canonical, " ", r.shape.dump(), ": ", r.first_mismatch);
  CHECK(r.checked > 0);
  CHECK(r.mismatches == 0);
  // A quantizer that maps everything to one level would pass trivially.
  if (r.output.find("packed") != std::string::npos) CHECK(r.distinct >= levels);
}

}  // namespace

TEST_CASE("conv chains: each op alone and whole chains, w1a2 / w2a2 / w1a4, VGG and ResNet-like layers") {
  TempCache cache;
  std::vector<KernelSpec> specs;
  for (const auto& p : kPrecisions)
    for (const char* c : kConvChains) specs.push_back(canonicalize(conv_spec(p, chain(c))));
  prewarm(specs, current_device().arch());
  Engine engine;
  // VGG-like 64->128 at 28x28 (batch 2), ResNet-like 128->256 at 14x14, and an odd one whose
  // output channels and pixels fill no tile (O=45: a partial 32-channel word).
  const ConvShape shapes[] = {{2, 64, 28, 28, 128}, {2, 128, 14, 14, 256}, {3, 35, 9, 7, 45}};
  int cases = 0;
  uint64_t seed = 100;
  for (const KernelSpec& s : specs)
    for (const ConvShape& sh : shapes) {
      KernelSpec untiled = s;
      untiled.tile.reset();  // the heuristic's tile for the shape
      expect_exact(verify_apconv(engine, untiled, sh, ++seed, 0));
      ++cases;
    }
  std::printf("epilogue conv chains: %d cases exact (%zu chains x 3 precisions x 3 shapes)\n", cases,
              std::size(kConvChains));
}

TEST_CASE("conv chains on explicit tiles: windows per tile, warps per task, strided and 1x1 convs") {
  TempCache cache;
  Engine engine;
  const Epilogue full = chain(kConvChains[7]);  // scale_bias relu pool(max 2/2) quantize
  const Epilogue avg3 = chain(kConvChains[9]);  // relu pool(max 3/2) scale_bias quantize pm1
  // Without a pool each thread quantizes its own outputs and packs words per column
  // (templates/epilogue.cuh, quantized_store): 32, 64 and 128 rows a tile; 2 and 3 bits by
  // thresholds (unsigned, signed with falling channels), 4 bits by the float ops.
  const Epilogue q2 = chain(kConvChains[6]);  // scale_bias relu quantize 2-bit unsigned
  const Epilogue q4 = chain(kConvChains[5]);  // quantize 4-bit signed per channel (float ops)
  const Epilogue q3 = chain(R"([{"op":"scale_bias"},{"op":"quantize","bits":3,"enc":"signed","scale":"per_channel"}])");
  // The last two are warpgroup tiles: the wgmma core on sm_90a (the batch-128 convs' tiles).
  const Tile tiles[] = {{32, 16, 256, 2, 2, 1},   {64, 64, 512, 3, 2, 2},  {128, 128, 512, 2, 2, 4},
                        {32, 128, 1024, 2, 1, 4}, {64, 128, 512, 4, 4, 2}, {128, 64, 1024, 3, 8, 1}};
  int cases = 0;
  uint64_t seed = 500;
  for (const Epilogue* e : {&full, &avg3, &q2, &q4, &q3})
    for (const Tile& t : tiles) {
      KernelSpec s = conv_spec(kPrecisions[0], *e);
      s.tile = t;
      expect_exact(verify_apconv(engine, s, {2, 70, 13, 11, 70}, ++seed, 0));
      ++cases;
    }
  for (const ConvParams c : {ConvParams{1, 1, 2, 2, 0, 0}, ConvParams{3, 3, 2, 2, 1, 1}, ConvParams{7, 7, 2, 2, 3, 3}}) {
    expect_exact(verify_apconv(engine, conv_spec(kPrecisions[1], full, c), {2, 64, 30, 30, 96}, ++seed, 0));
    ++cases;
  }
  std::printf("epilogue conv tiles and strides: %d cases exact\n", cases);
}

TEST_CASE("conv chains on the halo core: per-element ops and quantize, strides 1 and 2, 1x1, O past the tile") {
  if (skipped_without_sm90a("halo core chains")) return;
  TempCache cache;
  Engine engine;
  // Every chain without a pool (the halo core refuses pools). O = 130 leaves the last M
  // tile's second warpgroup without a channel (its words are zero bits) and O = 200 one
  // with 8; 13 output rows take a full and a part tile; C = 512 two k256 slices a position.
  const char* const chains[] = {
      R"([{"op":"scale_bias"}])",
      R"([{"op":"relu"}])",
      R"([{"op":"scale_bias"},{"op":"relu"}])",
      R"([{"op":"quantize","bits":2,"enc":"unsigned"}])",
      R"([{"op":"quantize","bits":4,"enc":"signed","scale":"per_channel"}])",
      R"([{"op":"scale_bias"},{"op":"relu"},{"op":"quantize","bits":2,"enc":"unsigned"}])",
      R"([{"op":"scale_bias"},{"op":"quantize","bits":3,"enc":"signed","scale":"per_channel"}])",
      R"([{"op":"relu"},{"op":"scale_bias"},{"op":"quantize","bits":1,"enc":"pm1"}])",
  };
  // w2a2 (two weight planes) with bn 64 at most (its accumulator sets) and C = 256 (W of C =
  // 512 and the stride-2 phases' stages pass the shared memory).
  struct Launch { int stride, bn, stages; ConvShape shape; int kernel = 3; };
  // C of 64 and 96 pad to one chunk (position pairs); O = 64 puts the warpgroups on
  // alternate tiles, at stride 2 with several tiles each. 1x1 kernels at stride 2 (pad 0):
  // one chunk (the position paired with the zero box) and two.
  const std::vector<Launch> w1a2 = {{1, 112, 4, {3, 256, 13, 13, 200}}, {2, 64, 2, {2, 512, 14, 14, 130}},
                                    {1, 64, 3, {2, 512, 7, 7, 256}},    {1, 16, 2, {40, 256, 3, 3, 64}},
                                    {1, 128, 2, {40, 64, 30, 30, 64}},  {2, 64, 2, {300, 96, 15, 15, 64}},
                                    {2, 112, 4, {3, 128, 28, 28, 130}, 1}, {2, 64, 4, {4, 256, 14, 14, 64}, 1},
                                    // O = 90: the second warpgroup's first 32-row chunk has 26
                                    // rows, a 2-bit code's partial chunk past row 16.
                                    {1, 112, 4, {2, 256, 13, 13, 90}}};
  const std::vector<Launch> w2a2 = {{1, 64, 4, {3, 256, 13, 13, 200}}, {2, 64, 2, {2, 256, 14, 14, 130}},
                                    {1, 16, 2, {40, 256, 3, 3, 64}}, {2, 64, 4, {2, 64, 15, 15, 130}, 1}};
  int cases = 0;
  uint64_t seed = 900;
  for (const char* c : chains)
    for (const OperandFormat* p : {kPrecisions[0], kPrecisions[1]})
      for (const Launch& l : p == kPrecisions[0] ? w1a2 : w2a2) {
        const int pad = l.kernel / 2;
        KernelSpec s = conv_spec(p, chain(c), {l.kernel, l.kernel, l.stride, l.stride, pad, pad});
        s.tile = Tile{128, l.bn, 256, l.stages, 8, 1, 1, true};
        REQUIRE(rules::check_kernel_tile(*s.tile, s).empty());
        const EpilogueOp* q = s.epilogue.quantize();
        expect_exact(verify_apconv(engine, s, l.shape, ++seed, 0), q && q->out.bits == 1 ? 2 : 3);
        ++cases;
      }
  std::printf("epilogue conv chains on the halo core: %d cases exact\n", cases);
}

TEST_CASE("apmm chains: scale_bias, relu, quantize per tensor and per channel, odd shapes") {
  TempCache cache;
  Engine engine;
  const char* const chains[] = {
      R"([{"op":"scale_bias"}])",
      R"([{"op":"relu"}])",
      R"([{"op":"quantize","bits":2,"enc":"unsigned"}])",
      R"([{"op":"scale_bias"},{"op":"relu"},{"op":"quantize","bits":2,"enc":"unsigned"}])",
      R"([{"op":"scale_bias"},{"op":"quantize","bits":4,"enc":"signed","scale":"per_channel"}])",
      R"([{"op":"relu"},{"op":"scale_bias"},{"op":"quantize","bits":3,"enc":"pm1","scale":"per_channel"}])",
      R"([{"op":"scale_bias"},{"op":"quantize","bits":2,"enc":"signed"}])",
      R"([{"op":"scale_bias"},{"op":"quantize","bits":1,"enc":"pm1"}])",
  };
  const ApmmShape shapes[] = {{64, 1024, 1024}, {333, 517, 1000}, {7, 13, 300}, {1, 1, 1}};
  // kPrecisions, and pm1 x pm1 (a binary network's layer): its offset activations add the row
  // terms (wsum and the K constant) to every output.
  std::vector<std::array<OperandFormat, 2>> precisions;
  for (const auto& p : kPrecisions) precisions.push_back({p[0], p[1]});
  precisions.push_back({OperandFormat{1, Encoding::Pm1}, OperandFormat{1, Encoding::Pm1}});
  int cases = 0;
  uint64_t seed = 900;
  for (const auto& p : precisions)
    for (const char* c : chains)
      for (const ApmmShape& sh : shapes) {
        KernelSpec s;
        s.w = p[0];
        s.x = p[1];
        s.epilogue = parse_epilogue(nlohmann::json::parse(c), false, "test");
        const VerifyReport r = verify_apmm(engine, s, sh, ++seed, 0);
        INFO(r.canonical, " ", r.shape.dump(), ": ", r.first_mismatch);
        CHECK(r.mismatches == 0);
        const EpilogueOp* q = s.epilogue.quantize();
        if (sh.M * sh.N >= 64 && q) CHECK(r.distinct >= (q->out.bits == 1 ? 2 : 3));
        ++cases;
      }
  std::printf("epilogue apmm chains: %d cases exact\n", cases);
}

TEST_CASE("apmm chains on warpgroup tiles: the wgmma core's stores and staged codes, more tiles than a wave") {
  TempCache cache;
  Engine engine;
  // On sm_90a these tiles run on the cp.async wgmma core (templates/apmm_sm90a.cuh): chains
  // without a quantize store through the chain in registers (float and int32 outputs), a
  // quantize stages its codes in a region beside the pipeline of the persistent block. 64x32
  // takes A from registers; 128x128 has two warpgroups along N.
  const char* const chains[] = {
      R"([{"op":"scale_bias"}])",
      R"([{"op":"relu"}])",
      R"([{"op":"scale_bias"},{"op":"relu"},{"op":"quantize","bits":2,"enc":"unsigned"}])",
      R"([{"op":"scale_bias"},{"op":"quantize","bits":4,"enc":"signed","scale":"per_channel"}])",
      R"([{"op":"relu"},{"op":"scale_bias"},{"op":"quantize","bits":3,"enc":"pm1","scale":"per_channel"}])",
      R"([{"op":"scale_bias"},{"op":"quantize","bits":2,"enc":"signed"}])",
  };
  const Tile tiles[] = {{128, 128, 1024, 4, 8, 2}, {64, 32, 512, 3, 4, 1}, {128, 64, 1024, 3, 8, 1}, {64, 128, 256, 4, 4, 2}};
  int cases = 0;
  uint64_t seed = 1300;
  auto run = [&](const OperandFormat* p, const char* c, const Tile& t, ApmmShape sh) {
    KernelSpec s;
    s.w = p[0];
    s.x = p[1];
    s.epilogue = parse_epilogue(nlohmann::json::parse(c), false, "test");
    s.tile = t;
    REQUIRE(rules::check_kernel_tile(t, canonicalize(s)).empty());
    const VerifyReport r = verify_apmm(engine, s, sh, ++seed, 0);
    INFO(r.canonical, " ", r.shape.dump(), ": ", r.first_mismatch);
    if (r.arch == "sm_90a") CHECK(rules::use_wgmma(canonicalize(s), r.arch));
    CHECK(r.checked > 0);
    CHECK(r.mismatches == 0);
    if (r.output.find("packed") != std::string::npos) CHECK(r.distinct >= 3);
    ++cases;
  };
  for (const char* c : chains)
    for (const Tile& t : tiles) run(kPrecisions[0], c, t, {333, 517, 3000});
  // 512 tiles of 64x32, several a block: the next tile loads while a tile's codes are staged.
  for (const char* c : {chains[2], chains[4]}) run(kPrecisions[0], c, tiles[1], {512, 2048, 1024});
  for (const auto* p : {kPrecisions[1], kPrecisions[2]})
    for (const char* c : {chains[0], chains[2], chains[3]})
      for (const Tile& t : {tiles[1], tiles[2]}) run(p, c, t, {200, 300, 1500});
  run(kPrecisions[0], chains[2], tiles[0], {7, 13, 300});
  // Blocks of 4-5 tiles (128x128: 585 tiles, 128x64: 1170), M and N past a tile: each
  // thread's pixel-sum adds are settled a tile after they are issued (PixelSumAdd), the
  // last after the block's loop; O of 9 M tiles.
  for (const char* c : {chains[2], chains[3]})
    for (const Tile& t : {tiles[0], tiles[2]}) run(kPrecisions[0], c, t, {1100, 8300, 130});
  run(kPrecisions[1], chains[2], tiles[2], {1100, 8300, 130});
  std::printf("epilogue apmm chains on warpgroup tiles: %d cases exact\n", cases);
}

TEST_CASE("apmm chains on the TMA core (tile.cluster 2): per-element ops and staged codes behind the consumers' barrier") {
  if (skipped_without_sm90a("TMA core")) return;
  TempCache cache;
  Engine engine;
  // templates/apmm_sm90a.cuh: a chain's values are stored from registers; a quantize chain's
  // codes are staged after the core's barriers and synchronized by its consumer warps only
  // (the producer warps keep loading the next patch). w1a2 128x128 and 128x64, w2a2 128x64 and
  // its 128x96 with a producer warpgroup; more patches than the grid has clusters; one M tile.
  const char* const chains[] = {
      R"([{"op":"scale_bias"},{"op":"relu"}])",
      R"([{"op":"scale_bias"},{"op":"relu"},{"op":"quantize","bits":2,"enc":"unsigned"}])",
      R"([{"op":"scale_bias"},{"op":"quantize","bits":4,"enc":"signed","scale":"per_channel"}])",
      R"([{"op":"relu"},{"op":"scale_bias"},{"op":"quantize","bits":3,"enc":"pm1","scale":"per_channel"}])",
  };
  const struct { const OperandFormat* p; Tile t; } tiles[] = {{kPrecisions[0], {128, 128, 1024, 3, 8, 1, 2}},
                                                              {kPrecisions[0], {128, 64, 1024, 4, 8, 1, 2}},
                                                              {kPrecisions[1], {128, 64, 1024, 4, 8, 1, 2}},
                                                              {kPrecisions[1], {128, 96, 1024, 3, 8, 1, 2}}};
  const ApmmShape shapes[] = {{333, 517, 3000}, {1000, 3000, 2100}, {100, 517, 1000}};
  int cases = 0;
  uint64_t seed = 1700;
  for (const char* c : chains)
    for (const auto& pt : tiles)
      for (const ApmmShape& sh : shapes) {
        KernelSpec s;
        s.w = pt.p[0];
        s.x = pt.p[1];
        s.epilogue = parse_epilogue(nlohmann::json::parse(c), false, "test");
        s.tile = pt.t;
        REQUIRE(rules::tma_tile_error(pt.t, canonicalize(s)).empty());
        CHECK(rules::core_family(canonicalize(s), "sm_90a") == "wgmma-tma");
        expect_exact(verify_apmm(engine, s, sh, ++seed, 0));
        ++cases;
      }
  std::printf("epilogue apmm chains on the TMA core: %d cases exact\n", cases);
}

TEST_CASE("a quantized layer's packed output is the next layer's input, without repacking") {
  TempCache cache;
  Engine engine;
  // conv1: w1a2 3x3 pad 1, chain scale_bias relu pool(max 2/2) quantize(2-bit unsigned);
  // conv2 reads conv1's planes and pixsum as its packed activations.
  const ConvGeometry g1{2, 64, 20, 20, 96, 3, 3, 1, 1, 1, 1};
  KernelSpec s1 = conv_spec(kPrecisions[0], chain(kConvChains[7]));
  KernelSpec s2 = conv_spec(kPrecisions[0], {});
  const std::vector<int16_t> W1 = random_operand(s1.w, static_cast<size_t>(g1.O * g1.C * 9), 1);
  const std::vector<int16_t> X1 = random_operand(s1.x, static_cast<size_t>(g1.N * g1.C * g1.H * g1.W), 2);
  const std::vector<int32_t> y1 = reference_conv(g1, W1, X1);
  const EpilogueParams params = verify_params(s1.epilogue, y1, {g1.N, g1.O, g1.Ho(), g1.Wo()}, 3);
  const EpilogueResult q1 = epilogue_reference(s1.epilogue, params, y1.data(), g1.N, g1.O, g1.Ho(), g1.Wo());
  const ConvGeometry g2{q1.N, q1.C, q1.H, q1.W, 80, 3, 3, 1, 1, 1, 1};
  const std::vector<int16_t> W2 = random_operand(s2.w, static_cast<size_t>(g2.O * g2.C * 9), 4);
  const std::vector<int32_t> want = reference_conv(g2, W2, q1.values);

  ConvRunner r1(engine.kernel(canonicalize(s1))), r2(engine.kernel(canonicalize(s2)));
  const EpilogueDevice ep1(s1.epilogue, params, g1.O), none;
  const PackedConvWeights pw1 = r1.pack_w(DeviceBuffer::from(W1), g1);
  const PackedConvActivations px1 = r1.pack_x(DeviceBuffer::from(X1), g1);
  LayerBuffers out1 = EpilogueDevice::allocate(s1.epilogue, ConvRunner::dims(s1, g1));
  r1.conv(pw1, px1, g1, ep1, out1);

  PackedConvActivations px2;
  px2.planes = std::move(out1.values);
  px2.pixsum = std::move(out1.sums);
  px2.N = g2.N, px2.C = g2.C, px2.H = g2.H, px2.W = g2.W;
  const PackedConvWeights pw2 = r2.pack_w(DeviceBuffer::from(W2), g2);
  LayerBuffers out2 = EpilogueDevice::allocate(s2.epilogue, ConvRunner::dims(s2, g2));
  r2.conv(pw2, px2, g2, none, out2);
  const std::vector<int32_t> got = out2.values.to_vector<int32_t>(want.size());
  size_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) bad += got[i] != want[i];
  CHECK(bad == 0);

  // apmm: Y1 = W1.X^T quantized is the X' (N rows x K' = M) of the next GEMM.
  KernelSpec m1;
  m1.w = {1, Encoding::Pm1};
  m1.x = {2, Encoding::Unsigned};
  m1.epilogue = parse_epilogue(nlohmann::json::parse(kConvChains[6]), false, "test");
  KernelSpec m2;
  m2.w = {1, Encoding::Pm1};
  m2.x = {2, Encoding::Unsigned};
  const ApmmShape a1{300, 77, 500};  // M=300 features out, N=77 samples
  const std::vector<int16_t> A = random_operand(m1.w, static_cast<size_t>(a1.M * a1.K), 5);
  const std::vector<int16_t> B = random_operand(m1.x, static_cast<size_t>(a1.N * a1.K), 6);
  const std::vector<int32_t> z1 = reference_apmm(A, B, a1);
  const EpilogueParams mp = verify_params(m1.epilogue, z1, ApmmRunner::dims(a1.M, a1.N), 7);
  const EpilogueResult qz = epilogue_reference(m1.epilogue, mp, z1.data(), 1, a1.M, 1, a1.N);  // values (M, N)
  std::vector<int16_t> x2(static_cast<size_t>(a1.N * a1.M));  // next X: (N, K' = M)
  for (int64_t m = 0; m < a1.M; ++m)
    for (int64_t n = 0; n < a1.N; ++n) x2[static_cast<size_t>(n * a1.M + m)] = qz.values[static_cast<size_t>(m * a1.N + n)];
  const ApmmShape a2{50, a1.N, a1.M};
  const std::vector<int16_t> A2 = random_operand(m2.w, static_cast<size_t>(a2.M * a2.K), 8);
  const std::vector<int32_t> want2 = reference_apmm(A2, x2, a2);

  ApmmRunner q1r(engine.kernel(canonicalize(m1))), q2r(engine.kernel(canonicalize(m2)));
  const EpilogueDevice mep(m1.epilogue, mp, a1.M);
  const PackedOperand pa = q1r.pack_w(DeviceBuffer::from(A), a1.M, a1.K), pb = q1r.pack_x(DeviceBuffer::from(B), a1.N, a1.K);
  LayerBuffers z = EpilogueDevice::allocate(m1.epilogue, ApmmRunner::dims(a1.M, a1.N));
  q1r.gemm(pa, pb, mep, z);
  PackedOperand next;
  next.planes = std::move(z.values);
  next.rowsum = std::move(z.sums);
  next.rows = a2.N, next.K = a2.K, next.ld = (a2.K + 127) / 128 * 4;
  const PackedOperand pa2 = q2r.pack_w(DeviceBuffer::from(A2), a2.M, a2.K);
  LayerBuffers z2 = EpilogueDevice::allocate(m2.epilogue, ApmmRunner::dims(a2.M, a2.N));
  q2r.gemm(pa2, next, none, z2);
  const std::vector<int32_t> got2 = z2.values.to_vector<int32_t>(want2.size());
  size_t bad2 = 0;
  for (size_t i = 0; i < want2.size(); ++i) bad2 += got2[i] != want2[i];
  CHECK(bad2 == 0);
  std::printf("layer to layer without repacking: conv %zu and apmm %zu outputs, %zu mismatches\n", want.size(),
              want2.size(), bad + bad2);
}

// The TLP/CI tile heuristic and warp-grid choice (spec/kernel_rules.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "apnn/spec.h"
#include "spec/kernel_rules.h"

using namespace apnn;
using namespace apnn::rules;

namespace {
const OperandFormat kW1{1, Encoding::Pm1}, kA2{2, Encoding::Unsigned};
int64_t blocks(const Tile& t, int64_t M, int64_t N) { return ((M + t.bm - 1) / t.bm) * ((N + t.bn - 1) / t.bn); }
}  // namespace

// The H100 tuning winners the rule was fitted to (bench/NOTES.md, "Heuristic"), on 132 SMs.
TEST_CASE("heuristic: bm from M, warps along M, the widest bn that still fills a wave") {
  // FC layer 64x1024x1024: one row of blocks; bn 8 gives 128 blocks, bn 16 only 64.
  const Tile fc = heuristic_tile(kW1, kA2, 64, 1024, 1024, 132);
  CHECK(fc == Tile{64, 8, 1024, 3, 4, 1});
  // 64x4096x4096: bn 32 gives 128 blocks (a wave), bn 64 only 64.
  CHECK(heuristic_tile(kW1, kA2, 64, 4096, 4096, 132) == Tile{64, 32, 1024, 3, 4, 2});
  // The paper's conv layers, M = O channels, N = 256 pixels, K = 9*C bits.
  CHECK(heuristic_tile(kW1, kA2, 256, 256, 9 * 256, 132) == Tile{64, 8, 512, 3, 4, 1});
  CHECK(heuristic_tile(kW1, kA2, 512, 256, 9 * 512, 132) == Tile{64, 16, 1024, 3, 4, 2});
  CHECK(heuristic_tile(kW1, kA2, 1024, 256, 9 * 1024, 132) == Tile{128, 16, 1024, 3, 8, 2});
  // Plenty of work: the widest candidate.
  const Tile big = heuristic_tile(kW1, kA2, 8192, 8192, 8192, 132);
  CHECK(big == Tile{128, 128, 1024, 3, 8, 1});
  // ResNet-like batch 8, 56x56x64: 64x64 tiles of 4x4 warps... capped at 8 warps: 4x2.
  CHECK(heuristic_tile(kW1, kA2, 64, 8 * 56 * 56, 9 * 128, 132) == Tile{64, 128, 256, 3, 4, 2});
}

TEST_CASE("heuristic: below a wave it takes the most parallel bn; a short M gets a short tile") {
  const Tile t = heuristic_tile(kW1, kA2, 64, 64, 1024, 132);
  CHECK(t.bm == 64);
  CHECK(t.bn == 8);
  CHECK(heuristic_tile(kW1, kA2, 20, 4096, 1024, 132).bm == 32);
  CHECK(heuristic_tile(kW1, kA2, 1, 4096, 1024, 132).bm == 16);
}

TEST_CASE("heuristic: the widest bk whose padding adds at most 25% to K") {
  CHECK(heuristic_tile(kW1, kA2, 512, 512, 200, 132).bk == 256);
  CHECK(heuristic_tile(kW1, kA2, 512, 512, 600, 132).bk == 256);   // 1024 and 512 both pad to 1024
  CHECK(heuristic_tile(kW1, kA2, 512, 512, 9 * 128, 132).bk == 256);  // 1152: 2048 or 1536 padded
  CHECK(heuristic_tile(kW1, kA2, 512, 512, 9 * 256, 132).bk == 512);  // 2304: 2560 with 512
  CHECK(heuristic_tile(kW1, kA2, 512, 512, 4096, 132).bk == 1024);
}

TEST_CASE("heuristic: chosen tiles are legal for every precision and respect a smaller shared-memory limit") {
  for (int p = 1; p <= 8; ++p)
    for (int q = 1; q <= 8; ++q)
      for (Encoding e : {Encoding::Unsigned, Encoding::Pm1, Encoding::Signed}) {
        const OperandFormat w{p, e}, x{q, e};
        for (int64_t mn : {1, 100, 4096}) {
          const Tile t = heuristic_tile(w, x, mn, mn, 1000, 132, 99 * 1024);
          INFO("w", p, " x", q, " ", encoding_name(e), " M=N=", mn);
          CHECK(check_tile(t, w, x).empty());
          CHECK(shared_bytes(t, w, x) <= 99 * 1024);
        }
      }
}

TEST_CASE("choose_warps: at least 4 warps when the tile allows, fewer only for tiny tiles") {
  Tile t;
  t.bm = 64;
  t.bn = 64;
  REQUIRE(choose_warps(&t, kW1, kA2));
  CHECK(t.warps_m * t.warps_n >= 4);
  t.bm = 16;
  t.bn = 8;
  REQUIRE(choose_warps(&t, kW1, kA2));
  CHECK(t.warps_m * t.warps_n == 1);
}

TEST_CASE("heuristic: a small batch (fc layer, N=8) gets no tile side wider than it needs") {
  const Tile t = heuristic_tile(kW1, kA2, 1000, 8, 512, 132);
  CHECK(t.bn == 8);
  CHECK(check_tile(t, kW1, kA2).empty());
}

TEST_CASE("spec_id: equal for equal canonical specs, different when any field differs") {
  KernelSpec a;
  a.w = kW1;
  a.x = kA2;
  a = canonicalize(a);
  CHECK(spec_id(a) == spec_id(canonicalize(a)));
  std::vector<KernelSpec> variants(8, a);
  variants[0].w.bits = 2;
  variants[1].x.enc = Encoding::Signed;
  variants[2].tile->bk = 256;
  variants[3].tile->stages = 2;
  variants[4].op = Op::Apconv;
  variants[5] = variants[4];
  variants[5].conv.ph = 1;
  variants[6].tile->warps_m = 1;
  variants[7].x.bits = 3;
  std::vector<std::string> ids = {spec_id(a)};
  for (const KernelSpec& v : variants) ids.push_back(spec_id(v));
  std::sort(ids.begin(), ids.end());
  CHECK(std::adjacent_find(ids.begin(), ids.end()) == ids.end());
}

TEST_CASE("conv_persistent: APConv with p*q >= 8 and an unstaged chain only") {
  auto spec = [](const char* text) { return parse_spec_text(text); };
  const char* conv = R"({"op":"apconv","w_bits":2,"w_enc":"signed","x_bits":8,"x_enc":"unsigned","kernel":[3,3]})";
  CHECK(conv_persistent(spec(conv)));
  CHECK(conv_persistent(spec(R"({"op":"apconv","w_bits":2,"w_enc":"signed","x_bits":4,"x_enc":"unsigned","kernel":[1,1],
                                  "epilogue":[{"op":"relu"}]})")));
  // Lighter precisions ran slower persistent (bench/NOTES.md, session 9).
  CHECK_FALSE(conv_persistent(spec(R"({"op":"apconv","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned","kernel":[3,3]})")));
  CHECK_FALSE(conv_persistent(spec(R"({"op":"apconv","w_bits":2,"w_enc":"signed","x_bits":2,"x_enc":"unsigned","kernel":[3,3]})")));
  // A pool or quantize stages the output in the pipeline's buffers.
  CHECK_FALSE(conv_persistent(spec(R"({"op":"apconv","w_bits":2,"w_enc":"signed","x_bits":8,"x_enc":"unsigned","kernel":[3,3],
                                       "epilogue":[{"op":"pool","kind":"max","size":2,"stride":2}]})")));
  CHECK_FALSE(conv_persistent(spec(R"({"op":"apmm","w_bits":2,"w_enc":"signed","x_bits":8,"x_enc":"unsigned"})")));
}

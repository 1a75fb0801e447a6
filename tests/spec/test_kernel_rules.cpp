// The paper's TLP/CI tile heuristic and warp-grid choice (spec/kernel_rules.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "spec/kernel_rules.h"

using namespace apnn;
using namespace apnn::rules;

namespace {
const OperandFormat kW1{1, Encoding::Pm1}, kA2{2, Encoding::Unsigned};
int64_t blocks(const Tile& t, int64_t M, int64_t N) { return ((M + t.bm - 1) / t.bm) * ((N + t.bn - 1) / t.bn); }
}  // namespace

TEST_CASE("heuristic: below the TLP threshold it takes the most parallel tile") {
  const Tile t = heuristic_tile(kW1, kA2, 64, 64, 1024, 264);
  CHECK(t.bm == 16);
  CHECK(t.bn == 16);
  CHECK(check_tile(t, kW1, kA2).empty());
}

TEST_CASE("heuristic: above the threshold it raises compute intensity while TLP stays above it") {
  const Tile big = heuristic_tile(kW1, kA2, 8192, 8192, 8192, 264);
  CHECK(big.bm == 128);
  CHECK(big.bn == 128);
  // The paper's 16x16 conv layer at C=O=1024: M = 1024 channels, N = 256 pixels.
  const Tile layer = heuristic_tile(kW1, kA2, 1024, 256, 9 * 1024, 264);
  CHECK(blocks(layer, 1024, 256) >= 264);
  const double ci = 2.0 * layer.bm * layer.bn / (layer.bm + layer.bn);
  for (int bm : {16, 32, 64, 128})
    for (int bn : {16, 32, 64, 128}) {
      Tile c = layer;
      c.bm = bm;
      c.bn = bn;
      if (blocks(c, 1024, 256) >= 264 && choose_warps(&c, kW1, kA2)) CHECK(2.0 * bm * bn / (bm + bn) <= ci);
    }
}

TEST_CASE("heuristic: K that fits one 256-bit step gets bk 256, else 512") {
  CHECK(heuristic_tile(kW1, kA2, 512, 512, 200, 264).bk == 256);
  CHECK(heuristic_tile(kW1, kA2, 512, 512, 4096, 264).bk == 512);
}

TEST_CASE("heuristic: chosen tiles are legal for every precision and respect a smaller shared-memory limit") {
  for (int p = 1; p <= 8; ++p)
    for (int q = 1; q <= 8; ++q)
      for (Encoding e : {Encoding::Unsigned, Encoding::Pm1, Encoding::Signed}) {
        const OperandFormat w{p, e}, x{q, e};
        for (int64_t mn : {1, 100, 4096}) {
          const Tile t = heuristic_tile(w, x, mn, mn, 1000, 264, 99 * 1024);
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
  const Tile t = heuristic_tile(kW1, kA2, 1000, 8, 512, 264);
  CHECK(t.bn <= 16);  // 16 is the smallest candidate
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

// The two convolution references (direct loops; im2col + APMM direct) share nothing but the
// geometry checks: agreement over the kernel/stride/pad combinations of AlexNet, VGG and
// ResNet-18, odd shapes and several format pairs checks both, and a hand-computed case and
// an explicitly zero-padded input pin down what the padding means.
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "apnn/conv_reference.h"
#include "apnn/reference.h"
#include "conv_test_util.h"

using apnn::ConvGeometry;
using apnn::Encoding;
using apnn::OperandFormat;

namespace {

struct Conv {
  int k, s, p;
};
// AlexNet conv1 11x11/4 p2, conv2 5x5/1 p2; VGG and ResNet 3x3/1 p1; ResNet 3x3/2 p1,
// 1x1/2 p0 (downsample) and 7x7/2 p3 (stem).
constexpr Conv kConvs[] = {{11, 4, 2}, {5, 1, 2}, {3, 1, 1}, {3, 2, 1}, {1, 2, 0}, {7, 2, 3}};

struct FormatPair {
  OperandFormat w, x;
};
const FormatPair kPairs[] = {
    {{1, Encoding::Pm1}, {2, Encoding::Unsigned}}, {{2, Encoding::Signed}, {2, Encoding::Pm1}},
    {{1, Encoding::Pm1}, {1, Encoding::Pm1}},      {{8, Encoding::Unsigned}, {8, Encoding::Signed}},
    {{3, Encoding::Pm1}, {5, Encoding::Pm1}},      {{4, Encoding::Signed}, {3, Encoding::Signed}},
    {{2, Encoding::Unsigned}, {1, Encoding::Pm1}},
};

// Shapes for one convolution: C = 3, 65, 129 and others; non-square inputs; Ho = Wo = 1
// (smallest input, and one that leaves stride - 1 unused rows/columns); H = W = 1 where the
// padding makes it legal.
std::vector<ConvGeometry> shapes(const Conv& cv) {
  const int64_t m = std::max<int64_t>(1, cv.k - 2 * cv.p);  // smallest legal H (Ho = 1)
  struct S {
    int64_t N, C, H, W, O;
  };
  std::vector<S> list = {{1, 3, m + 5, m + 5, 4}, {2, 65, m + 2, m + 7, 3},           {1, 129, m, m + cv.s - 1, 2},
                         {3, 32, m + 3, m + 1, 5}, {1, 128, m + cv.s - 1, m + 4, 1}, {2, 1, m + 1, m + 2, 2}};
  if (1 + 2 * cv.p >= cv.k) list.push_back({2, 5, 1, 1, 3});  // H = W = 1
  std::vector<ConvGeometry> out;
  for (const S& s : list) {
    ConvGeometry g;
    g.N = s.N, g.C = s.C, g.H = s.H, g.W = s.W, g.O = s.O;
    g.kh = g.kw = cv.k, g.sh = g.sw = cv.s, g.ph = g.pw = cv.p;
    out.push_back(g);
  }
  return out;
}

// Y of the same convolution computed with pad 0 on X explicitly surrounded by zeros.
std::vector<int32_t> conv_of_zero_padded(const ConvGeometry& g, const std::vector<int16_t>& W,
                                         const std::vector<int16_t>& X) {
  ConvGeometry q = g;
  q.H = g.H + 2 * g.ph, q.W = g.W + 2 * g.pw, q.ph = q.pw = 0;
  std::vector<int16_t> Xp(static_cast<size_t>(q.N * q.C * q.H * q.W), 0);
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t c = 0; c < g.C; ++c)
      for (int64_t h = 0; h < g.H; ++h)
        for (int64_t w = 0; w < g.W; ++w)
          Xp[((n * q.C + c) * q.H + h + g.ph) * q.W + w + g.pw] = X[((n * g.C + c) * g.H + h) * g.W + w];
  return apnn::conv_reference_direct(q, W.data(), Xp.data());
}

}  // namespace

TEST_CASE("conv reference: direct and im2col agree on the AlexNet/VGG/ResNet-18 convolutions, odd shapes, 7 format pairs") {
  uint64_t seed = 1000;
  int compared = 0;
  for (const Conv& cv : kConvs) {
    for (const ConvGeometry& g : shapes(cv)) {
      for (const FormatPair& fp : kPairs) {
        const auto W = apnn::random_operand(fp.w, static_cast<size_t>(g.O * g.C * g.kh * g.kw), seed++);
        const auto X = apnn::random_operand(fp.x, static_cast<size_t>(g.N * g.C * g.H * g.W), seed++);
        INFO(conv_test::describe(g) << ", W " << fp.w.describe() << ", X " << fp.x.describe());
        const auto direct = apnn::conv_reference_direct(g, W.data(), X.data());
        REQUIRE(direct.size() == static_cast<size_t>(g.N * g.O * g.Ho() * g.Wo()));
        CHECK(apnn::conv_reference_im2col(g, W.data(), X.data()) == direct);
        if (g.ph > 0) CHECK(conv_of_zero_padded(g, W, X) == direct);
        ++compared;
      }
    }
  }
  CHECK(compared == 7 * (6 * 6 + 5));  // H = W = 1 is legal for all but 11x11/4 p2 (1 + 4 < 11)
}

TEST_CASE("conv reference: non-square kernels, strides and paddings agree too") {
  struct G {
    int kh, kw, sh, sw, ph, pw;
    int64_t H, W;
  };
  const G cases[] = {{3, 1, 1, 2, 1, 0, 5, 4}, {1, 3, 2, 1, 0, 1, 6, 2}, {2, 4, 3, 1, 0, 2, 7, 3}, {5, 2, 2, 3, 3, 1, 4, 9}};
  const FormatPair fp{{2, Encoding::Signed}, {3, Encoding::Pm1}};
  uint64_t seed = 77;
  for (const G& c : cases) {
    ConvGeometry g;
    g.N = 2, g.C = 33, g.H = c.H, g.W = c.W, g.O = 3;
    g.kh = c.kh, g.kw = c.kw, g.sh = c.sh, g.sw = c.sw, g.ph = c.ph, g.pw = c.pw;
    const auto W = apnn::random_operand(fp.w, static_cast<size_t>(g.O * g.C * g.kh * g.kw), seed++);
    const auto X = apnn::random_operand(fp.x, static_cast<size_t>(g.N * g.C * g.H * g.W), seed++);
    INFO(conv_test::describe(g));
    const auto direct = apnn::conv_reference_direct(g, W.data(), X.data());
    CHECK(apnn::conv_reference_im2col(g, W.data(), X.data()) == direct);
    CHECK(conv_of_zero_padded(g, W, X) == direct);
  }
}

TEST_CASE("conv reference: padded positions hold 0 even for pm1 and signed (hand-computed)") {
  // 3x3 input of -1 (pm1 and signed), 3x3 kernel of +1, pad 1: each output is minus the number
  // of in-bounds taps (4 at corners, 6 at edges, 9 in the middle). Treating padding as the
  // encoding's code 0 (-1 in 1-bit pm1 and signed) would give -9 everywhere.
  ConvGeometry g;
  g.N = 1, g.C = 1, g.H = 3, g.W = 3, g.O = 1, g.kh = g.kw = 3, g.ph = g.pw = 1;
  const std::vector<int16_t> W(9, 1), X(9, -1);
  const std::vector<int32_t> expected = {-4, -6, -4, -6, -9, -6, -4, -6, -4};
  CHECK(apnn::conv_reference_direct(g, W.data(), X.data()) == expected);
  CHECK(apnn::conv_reference_im2col(g, W.data(), X.data()) == expected);

  // Stride 2, two channels, two output channels, non-square: Ho = (3 + 2 - 3) / 2 + 1 = 2, Wo = (4 + 2 - 3) / 2 + 1 = 2.
  g.C = 2, g.O = 2, g.W = 4, g.sh = g.sw = 2;
  std::vector<int16_t> W2(2 * 2 * 9), X2(2 * 3 * 4);
  for (size_t i = 0; i < W2.size(); ++i) W2[i] = i < 18 ? 1 : -3;  // o = 0: all 1; o = 1: all -3
  for (size_t i = 0; i < X2.size(); ++i) X2[i] = static_cast<int16_t>(i);  // X[c][h][w] = 12c + 4h + w
  // Window (ho, wo) covers rows 2ho-1..2ho+1 and columns 2wo-1..2wo+1 inside 3x4.
  // Sum over both channels of X inside the window (channel 1 adds 12 per tap):
  //   (0,0): rows 0-1, cols 0-1: c0 = 0+1+4+5 = 10, c1 = 10 + 48 = 58 -> 68
  //   (0,1): rows 0-1, cols 1-3: c0 = 1+2+3+5+6+7 = 24, c1 = 24 + 72 = 96 -> 120
  //   (1,0): rows 1-2, cols 0-1: c0 = 4+5+8+9 = 26, c1 = 26 + 48 = 74 -> 100
  //   (1,1): rows 1-2, cols 1-3: c0 = 5+6+7+9+10+11 = 48, c1 = 48 + 72 = 120 -> 168
  const std::vector<int32_t> expected2 = {68, 120, 100, 168, -204, -360, -300, -504};
  CHECK(apnn::conv_reference_direct(g, W2.data(), X2.data()) == expected2);
  CHECK(apnn::conv_reference_im2col(g, W2.data(), X2.data()) == expected2);
}

// Layout v1 (include/apnn/conv_layout.h) on the CPU: every bit where the documented word
// formula puts it, zero channel padding, the sums, the round trip, and enough information for
// the implicit GEMM (a bit-serial convolution computed from the packed tensors alone equals
// the direct reference, zero padding included).
#include <doctest/doctest.h>

#include <vector>

#include "apnn/conv_reference.h"
#include "apnn/reference.h"
#include "conv_test_util.h"
#include "formats.h"

using apnn::ConvGeometry;
using apnn::Encoding;
using apnn::OperandFormat;

namespace {

constexpr int64_t kChannels[] = {1, 3, 31, 33, 65, 128, 129, 300};

// The documented index formulas, written out again here.
int64_t act_word(int p, int64_t H, int64_t W, int64_t CW, int64_t n, int s, int64_t h, int64_t w, int64_t cw) {
  return (((n * p + s) * H + h) * W + w) * CW + cw;
}
int64_t wgt_word(int64_t O, int64_t Kh, int64_t Kw, int64_t CW, int s, int64_t o, int64_t kh, int64_t kw, int64_t cw) {
  return (((s * O + o) * Kh + kh) * Kw + kw) * CW + cw;
}

// Every element's plane bits sit at (word, bit c % 32) of the formula, and no other bit is set
// (the total popcount equals the sum of the codes' popcounts): this also covers the padding.
// `word(s, a, b, d, cw)` is the word of element [a][c][b][d] in plane s.
template <class Word>
void check_bits(const OperandFormat& f, const std::vector<int16_t>& v, const std::vector<uint32_t>& planes, int64_t A,
                int64_t C, int64_t B, int64_t D, Word word) {
  int64_t expected_pop = 0, bad = 0;
  for (int64_t a = 0; a < A; ++a)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t d = 0; d < D; ++d) {
          const uint32_t code = f.code(v[((a * C + c) * B + b) * D + d]);
          expected_pop += __builtin_popcount(code);
          for (int s = 0; s < f.bits; ++s)
            if (((planes[word(s, a, b, d, c / 32)] >> (c % 32)) & 1u) != ((code >> s) & 1u)) ++bad;
        }
  int64_t pop = 0;
  for (uint32_t x : planes) pop += __builtin_popcount(x);
  CHECK(bad == 0);
  CHECK(pop == expected_pop);
}

// Every bit of a channel >= C is 0, in every word of every plane of every pixel.
void check_padding_zero(const std::vector<uint32_t>& planes, int64_t C) {
  const int64_t CW = apnn::conv_channel_words(C);
  REQUIRE(planes.size() % CW == 0);
  int64_t bad = 0;
  for (size_t i = 0; i < planes.size(); ++i) {
    const int64_t first = static_cast<int64_t>(i % CW) * 32;
    for (int j = 0; j < 32; ++j)
      if (first + j >= C && ((planes[i] >> j) & 1u)) ++bad;
  }
  CHECK_MESSAGE(bad == 0, bad << " channel-padding bits set");
}

// Every value with code 2^p - 1: all plane bits of the real channels are 1.
int16_t all_ones_value(const OperandFormat& f) {
  int64_t v = f.offset();
  for (int s = 0; s < f.bits; ++s) v += f.plane_weight(s);
  return static_cast<int16_t>(v);
}

}  // namespace

TEST_CASE("conv layout: activations, all 24 formats x C = 1..300: bits, padding, pixsum, round trip") {
  const int64_t N = 2, H = 2, W = 3;
  uint64_t seed = 500;
  for (const OperandFormat& f : reference_test::all_formats()) {
    for (int64_t C : kChannels) {
      for (int fill = 0; fill < 2; ++fill) {  // random values, then every code 2^p - 1
        INFO(f.describe() << ", N,C,H,W = " << N << "," << C << "," << H << "," << W << (fill ? ", all ones" : ", random"));
        std::vector<int16_t> X = apnn::random_operand(f, static_cast<size_t>(N * C * H * W), seed++);
        if (fill) X.assign(X.size(), all_ones_value(f));
        const auto packed = apnn::pack_activations_reference(f, X.data(), N, C, H, W);
        const int64_t CW = apnn::conv_channel_words(C);
        CHECK(CW == (C + 127) / 128 * 4);
        REQUIRE(packed.planes.size() == static_cast<size_t>(N * f.bits * H * W * CW));
        REQUIRE(packed.pixsum.size() == static_cast<size_t>(N * H * W));
        check_bits(f, X, packed.planes, N, C, H, W, [&](int s, int64_t n, int64_t h, int64_t w, int64_t cw) {
          return act_word(f.bits, H, W, CW, n, s, h, w, cw);
        });
        check_padding_zero(packed.planes, C);
        // pixsum = sum over the pixel's channels of (value - beta), from the values directly.
        std::vector<int32_t> pixsum(static_cast<size_t>(N * H * W), 0);
        for (int64_t n = 0; n < N; ++n)
          for (int64_t c = 0; c < C; ++c)
            for (int64_t h = 0; h < H; ++h)
              for (int64_t w = 0; w < W; ++w)
                pixsum[(n * H + h) * W + w] += static_cast<int32_t>(X[((n * C + c) * H + h) * W + w] - f.offset());
        CHECK(packed.pixsum == pixsum);
        CHECK(apnn::unpack_activations_reference(f, packed.planes.data(), N, C, H, W) == X);
      }
    }
  }
}

TEST_CASE("conv layout: weights, all 24 formats x C = 1..300: bits, padding, possum, rowsum") {
  const int64_t O = 2, Kh = 3, Kw = 2;
  uint64_t seed = 900;
  for (const OperandFormat& f : reference_test::all_formats()) {
    for (int64_t C : kChannels) {
      for (int fill = 0; fill < 2; ++fill) {
        INFO(f.describe() << ", O,C,Kh,Kw = " << O << "," << C << "," << Kh << "," << Kw << (fill ? ", all ones" : ", random"));
        std::vector<int16_t> Wt = apnn::random_operand(f, static_cast<size_t>(O * C * Kh * Kw), seed++);
        if (fill) Wt.assign(Wt.size(), all_ones_value(f));
        const auto packed = apnn::pack_weights_reference(f, Wt.data(), O, C, Kh, Kw);
        const int64_t CW = apnn::conv_channel_words(C);
        REQUIRE(packed.planes.size() == static_cast<size_t>(apnn::conv_weight_words(f.bits, O, C, Kh, Kw)));
        REQUIRE(packed.planes.size() == static_cast<size_t>(f.bits * O * Kh * Kw * CW));
        REQUIRE(packed.possum.size() == static_cast<size_t>(O * Kh * Kw));
        REQUIRE(packed.rowsum.size() == static_cast<size_t>(O));
        check_bits(f, Wt, packed.planes, O, C, Kh, Kw, [&](int s, int64_t o, int64_t kh, int64_t kw, int64_t cw) {
          return wgt_word(O, Kh, Kw, CW, s, o, kh, kw, cw);
        });
        check_padding_zero(packed.planes, C);
        std::vector<int32_t> possum(static_cast<size_t>(O * Kh * Kw), 0), rowsum(static_cast<size_t>(O), 0);
        for (int64_t o = 0; o < O; ++o)
          for (int64_t c = 0; c < C; ++c)
            for (int64_t i = 0; i < Kh; ++i)
              for (int64_t j = 0; j < Kw; ++j) {
                const int32_t d = static_cast<int32_t>(Wt[((o * C + c) * Kh + i) * Kw + j] - f.offset());
                possum[(o * Kh + i) * Kw + j] += d;
                rowsum[o] += d;
              }
        CHECK(packed.possum == possum);
        CHECK(packed.rowsum == rowsum);
      }
    }
  }
}

TEST_CASE("conv layout: word-level spot checks of the index formulas") {
  SUBCASE("activations: one nonzero unsigned value") {
    // 3-bit unsigned, N,C,H,W = 2,300,3,4: CW = ceil(300/128)*4 = 12. X[1][261][2][1] = 5 = 0b101
    // sets bit 261 % 32 = 5 of word cw = 261 / 32 = 8 in planes 0 and 2:
    //   s = 0: (((1*3 + 0)*3 + 2)*4 + 1)*12 + 8 = 548;  s = 2: (((1*3 + 2)*3 + 2)*4 + 1)*12 + 8 = 836.
    const OperandFormat f{3, Encoding::Unsigned};
    const int64_t N = 2, C = 300, H = 3, W = 4;
    std::vector<int16_t> X(static_cast<size_t>(N * C * H * W), 0);
    X[((1 * C + 261) * H + 2) * W + 1] = 5;
    const auto p = apnn::pack_activations_reference(f, X.data(), N, C, H, W);
    REQUIRE(p.planes.size() == 864u);  // 2 * 3 * 3 * 4 * 12
    for (size_t i = 0; i < p.planes.size(); ++i) {
      INFO("word " << i);
      CHECK(p.planes[i] == (i == 548 || i == 836 ? 1u << 5 : 0u));
    }
    for (size_t i = 0; i < p.pixsum.size(); ++i) CHECK(p.pixsum[i] == (i == (1 * 3 + 2) * 4 + 1 ? 5 : 0));  // pixel 21
    CHECK(apnn::unpack_activations_reference(f, p.planes.data(), N, C, H, W) == X);
  }
  SUBCASE("weights: one nonzero unsigned value") {
    // 2-bit unsigned, O,C,Kh,Kw = 3,40,3,2: CW = 4. W[2][37][1][0] = 2 = 0b10 sets bit 37 % 32 = 5
    // of word (((1*3 + 2)*3 + 1)*2 + 0)*4 + 37/32 = 129 in plane 1 only.
    const OperandFormat f{2, Encoding::Unsigned};
    const int64_t O = 3, C = 40, Kh = 3, Kw = 2;
    std::vector<int16_t> Wt(static_cast<size_t>(O * C * Kh * Kw), 0);
    Wt[((2 * C + 37) * Kh + 1) * Kw + 0] = 2;
    const auto p = apnn::pack_weights_reference(f, Wt.data(), O, C, Kh, Kw);
    REQUIRE(p.planes.size() == 144u);  // 2 * 3 * 3 * 2 * 4
    for (size_t i = 0; i < p.planes.size(); ++i) {
      INFO("word " << i);
      CHECK(p.planes[i] == (i == 129 ? 1u << 5 : 0u));
    }
    for (size_t i = 0; i < p.possum.size(); ++i) CHECK(p.possum[i] == (i == (2 * 3 + 1) * 2 + 0 ? 2 : 0));  // position 14
    CHECK(p.rowsum == std::vector<int32_t>{0, 0, 2});
  }
  SUBCASE("activations: pm1 -1 is code 0, +1 is code 1 with alpha_0 = 2") {
    // 1-bit pm1, N,C,H,W = 1,129,1,2 (CW = 8): all -1 but X[0][128][0][1] = +1, which sets
    // bit 0 of word (0*1*2 + 1)*8 + 4 = 12. pixsum = sum (x + 1) = 2 there, 0 elsewhere.
    const OperandFormat f{1, Encoding::Pm1};
    std::vector<int16_t> X(129 * 2, -1);
    X[128 * 2 + 1] = 1;
    const auto p = apnn::pack_activations_reference(f, X.data(), 1, 129, 1, 2);
    REQUIRE(p.planes.size() == 16u);
    for (size_t i = 0; i < p.planes.size(); ++i) CHECK(p.planes[i] == (i == 12 ? 1u : 0u));
    CHECK(p.pixsum == std::vector<int32_t>{0, 2});
  }
  SUBCASE("activations: signed -1 sets every plane, the top one weighted -2^(p-1)") {
    const OperandFormat f{4, Encoding::Signed};
    const std::vector<int16_t> X = {-1, 0, -8, 7};  // N,C,H,W = 1,1,2,2: codes 1111, 0000, 1000, 0111
    const auto p = apnn::pack_activations_reference(f, X.data(), 1, 1, 2, 2);
    REQUIRE(p.planes.size() == 4u * 4 * 4);
    // word(0, s, h, w, 0) = ((s*2 + h)*2 + w)*4; only word 0 of each pixel holds channel 0.
    for (int s = 0; s < 4; ++s) {
      CHECK(p.planes[((s * 2 + 0) * 2 + 0) * 4] == 1u);
      CHECK(p.planes[((s * 2 + 0) * 2 + 1) * 4] == 0u);
      CHECK(p.planes[((s * 2 + 1) * 2 + 0) * 4] == (s == 3 ? 1u : 0u));
      CHECK(p.planes[((s * 2 + 1) * 2 + 1) * 4] == (s == 3 ? 0u : 1u));
    }
    CHECK(p.pixsum == std::vector<int32_t>{-1, 0, -8, 7});
  }
}

TEST_CASE("conv layout: the packed tensors alone give the convolution (bit-serial implicit GEMM, zero padding)") {
  // y = sum over in-bounds taps of [sum_{s,t} alpha_s gamma_t popc(W_s & X_t) + beta_w pixsum
  //     + beta_x possum + C beta_w beta_x]: padded taps contribute nothing, which is why possum
  //     (per kernel position), not rowsum, carries the activation offset at the borders.
  struct Case {
    OperandFormat w, x;
    int k, s, p;
    int64_t N, C, H, W, O;
  };
  const Case cases[] = {
      {{1, Encoding::Pm1}, {2, Encoding::Unsigned}, 3, 1, 1, 2, 33, 5, 4, 3},
      {{2, Encoding::Signed}, {2, Encoding::Pm1}, 3, 2, 1, 1, 129, 6, 5, 2},
      {{1, Encoding::Pm1}, {1, Encoding::Pm1}, 7, 2, 3, 1, 3, 9, 8, 2},
      {{8, Encoding::Unsigned}, {8, Encoding::Signed}, 1, 2, 0, 2, 65, 4, 3, 2},
      {{3, Encoding::Pm1}, {5, Encoding::Pm1}, 5, 1, 2, 1, 300, 3, 4, 2},
      {{4, Encoding::Signed}, {3, Encoding::Signed}, 11, 4, 2, 1, 3, 15, 12, 2},
  };
  uint64_t seed = 4242;
  for (const Case& cs : cases) {
    ConvGeometry g;
    g.N = cs.N, g.C = cs.C, g.H = cs.H, g.W = cs.W, g.O = cs.O;
    g.kh = g.kw = cs.k, g.sh = g.sw = cs.s, g.ph = g.pw = cs.p;
    INFO(conv_test::describe(g) << ", W " << cs.w.describe() << ", X " << cs.x.describe());
    const auto Wt = apnn::random_operand(cs.w, static_cast<size_t>(g.O * g.C * g.kh * g.kw), seed++);
    const auto X = apnn::random_operand(cs.x, static_cast<size_t>(g.N * g.C * g.H * g.W), seed++);
    const auto pw = apnn::pack_weights_reference(cs.w, Wt.data(), g.O, g.C, g.kh, g.kw);
    const auto px = apnn::pack_activations_reference(cs.x, X.data(), g.N, g.C, g.H, g.W);
    const int64_t CW = apnn::conv_channel_words(g.C), Ho = g.Ho(), Wo = g.Wo();
    const int64_t bw = cs.w.offset(), bx = cs.x.offset();
    std::vector<int32_t> Y(static_cast<size_t>(g.N * g.O * Ho * Wo));
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t o = 0; o < g.O; ++o)
        for (int64_t ho = 0; ho < Ho; ++ho)
          for (int64_t wo = 0; wo < Wo; ++wo) {
            int64_t acc = 0;
            for (int i = 0; i < g.kh; ++i)
              for (int j = 0; j < g.kw; ++j) {
                const int64_t h = ho * g.sh - g.ph + i, w = wo * g.sw - g.pw + j;
                if (h < 0 || h >= g.H || w < 0 || w >= g.W) continue;
                for (int s = 0; s < cs.w.bits; ++s)
                  for (int t = 0; t < cs.x.bits; ++t) {
                    int64_t pop = 0;
                    for (int64_t cw = 0; cw < CW; ++cw)
                      pop += __builtin_popcount(pw.planes[wgt_word(g.O, g.kh, g.kw, CW, s, o, i, j, cw)] &
                                                px.planes[act_word(cs.x.bits, g.H, g.W, CW, n, t, h, w, cw)]);
                    acc += cs.w.plane_weight(s) * cs.x.plane_weight(t) * pop;
                  }
                acc += bw * px.pixsum[(n * g.H + h) * g.W + w] + bx * pw.possum[(o * g.kh + i) * g.kw + j] + g.C * bw * bx;
              }
            Y[((n * g.O + o) * Ho + ho) * Wo + wo] = static_cast<int32_t>(acc);
          }
    CHECK(Y == apnn::conv_reference_direct(g, Wt.data(), X.data()));
    // Away from the borders every tap is in bounds, so rowsum[o] stands for the sum of possum.
    for (int64_t o = 0; o < g.O; ++o) {
      int64_t sum = 0;
      for (int64_t q = 0; q < g.kh * g.kw; ++q) sum += pw.possum[o * g.kh * g.kw + q];
      CHECK(pw.rowsum[o] == sum);
    }
  }
}

TEST_CASE("conv layout: empty tensors and rejected inputs") {
  const OperandFormat pm1{2, Encoding::Pm1}, uns{1, Encoding::Unsigned};
  SUBCASE("empty tensors pack to nothing (C = 0 gives CW = 0 and zero sums)") {
    CHECK(apnn::pack_activations_reference(pm1, nullptr, 0, 5, 2, 2).planes.empty());
    const auto c0 = apnn::pack_activations_reference(pm1, nullptr, 1, 0, 2, 3);
    CHECK(c0.planes.empty());
    CHECK(c0.pixsum == std::vector<int32_t>(6, 0));
    const auto w0 = apnn::pack_weights_reference(pm1, nullptr, 2, 0, 1, 1);
    CHECK(w0.planes.empty());
    CHECK(w0.rowsum == std::vector<int32_t>{0, 0});
    CHECK(apnn::unpack_activations_reference(pm1, nullptr, 0, 3, 3, 3).empty());
  }
  SUBCASE("the first invalid value is named by index and value") {
    std::vector<int16_t> X(2 * 3 * 2 * 2, 1);
    X[((1 * 3 + 2) * 2 + 0) * 2 + 1] = 2;  // X[1][2][0][1], flat 21: even, not pm1
    X[((1 * 3 + 2) * 2 + 1) * 2 + 1] = 5;  // later and also invalid: not the one reported
    conv_test::check_invalid_input([&] { apnn::pack_activations_reference(pm1, X.data(), 2, 3, 2, 2); },
                                   {"pack_activations_reference", "X[1][2][0][1] (flat index 21) = 2",
                                    "not a valid 2-bit pm1 value"});
    std::vector<int16_t> W(2 * 3 * 1 * 2, 0);
    W[(1 * 3 + 0) * 2 + 1] = -1;  // W[1][0][0][1], flat 7
    conv_test::check_invalid_input([&] { apnn::pack_weights_reference(uns, W.data(), 2, 3, 1, 2); },
                                   {"pack_weights_reference", "W[1][0][0][1] (flat index 7) = -1",
                                    "not a valid 1-bit unsigned value"});
  }
  SUBCASE("bad formats and sizes") {
    const int16_t one = 1;
    conv_test::check_invalid_input([&] { apnn::pack_activations_reference({9, Encoding::Unsigned}, &one, 1, 1, 1, 1); },
                                   {"9-bit operands are not supported"});
    conv_test::check_invalid_input([&] { apnn::pack_weights_reference({0, Encoding::Pm1}, &one, 1, 1, 1, 1); },
                                   {"0-bit operands are not supported"});
    conv_test::check_invalid_input([&] { apnn::pack_activations_reference(uns, &one, 1, 1, -1, 1); },
                                   {"negative size H = -1"});
    conv_test::check_invalid_input([&] { apnn::pack_weights_reference(uns, &one, 1, 1, 1, -2); },
                                   {"negative size Kw = -2"});
    conv_test::check_invalid_input([&] { apnn::unpack_activations_reference(uns, nullptr, -1, 1, 1, 1); },
                                   {"negative size N = -1"});
    conv_test::check_invalid_input([&] { apnn::pack_activations_reference(uns, nullptr, 1, 1, 1, 1); }, {"X is null"});
  }
  SUBCASE("unpacking rejects a set channel-padding bit") {
    const int64_t C = 33;  // CW = 4: channels 33..127 are padding
    std::vector<int16_t> X(static_cast<size_t>(2 * C), 1);  // N,C,H,W = 1,33,1,2
    auto p = apnn::pack_activations_reference(uns, X.data(), 1, C, 1, 2);
    CHECK(apnn::unpack_activations_reference(uns, p.planes.data(), 1, C, 1, 2) == X);
    p.planes[4 + 1] |= 1u << 1;  // pixel w = 1, word 1, bit 1: channel 33
    conv_test::check_invalid_input([&] { apnn::unpack_activations_reference(uns, p.planes.data(), 1, C, 1, 2); },
                                   {"planes[5]", "w=1, cw=1", "nonzero channel-padding bits"});
    p.planes[5] = 1u;  // channel 32 is real: accepted
    CHECK(apnn::unpack_activations_reference(uns, p.planes.data(), 1, C, 1, 2) == X);
    p.planes[7] = 0x80000000u;  // word 3, channel 127
    conv_test::check_invalid_input([&] { apnn::unpack_activations_reference(uns, p.planes.data(), 1, C, 1, 2); },
                                   {"planes[7]", "cw=3"});
  }
}

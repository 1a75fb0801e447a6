// The convolution references at the edges: invalid geometry (each field named, both references
// alike), the int32 boundary, and legal but unusual geometry.
#include <doctest/doctest.h>

#include <functional>
#include <vector>

#include "apnn/conv_reference.h"
#include "conv_test_util.h"

using apnn::ConvGeometry;

namespace {

ConvGeometry small() {
  ConvGeometry g;
  g.N = 1, g.C = 2, g.H = 4, g.W = 5, g.O = 3, g.kh = g.kw = 3, g.sh = g.sw = 1, g.ph = g.pw = 1;
  return g;
}

// Both references must reject g with an InvalidInput error containing every fragment.
void check_rejected(const ConvGeometry& g, std::initializer_list<std::string> fragments) {
  INFO(conv_test::describe(g));
  const std::vector<int16_t> buf(4096, 1);  // large enough for every geometry used here
  conv_test::check_invalid_input([&] { apnn::conv_reference_direct(g, buf.data(), buf.data()); }, fragments);
  conv_test::check_invalid_input([&] { apnn::conv_reference_im2col(g, buf.data(), buf.data()); }, fragments);
}

}  // namespace

TEST_CASE("conv reference edges: invalid geometry names the field, in both references") {
  using Edit = std::function<void(ConvGeometry&)>;
  const std::pair<Edit, std::string> cases[] = {
      {[](ConvGeometry& g) { g.N = 0; }, "N = 0 (batch size must be >= 1)"},
      {[](ConvGeometry& g) { g.C = -1; }, "C = -1 (input channels must be >= 1)"},
      {[](ConvGeometry& g) { g.H = 0; }, "H = 0 (input height must be >= 1)"},
      {[](ConvGeometry& g) { g.W = -5; }, "W = -5 (input width must be >= 1)"},
      {[](ConvGeometry& g) { g.O = 0; }, "O = 0 (output channels must be >= 1)"},
      {[](ConvGeometry& g) { g.kh = 0; }, "kh = 0 (kernel height must be >= 1)"},
      {[](ConvGeometry& g) { g.kw = -3; }, "kw = -3 (kernel width must be >= 1)"},
      {[](ConvGeometry& g) { g.sh = 0; }, "sh = 0 (vertical stride must be >= 1)"},
      {[](ConvGeometry& g) { g.sw = -1; }, "sw = -1 (horizontal stride must be >= 1)"},
      {[](ConvGeometry& g) { g.ph = -1; }, "ph = -1 (vertical padding must be >= 0)"},
      {[](ConvGeometry& g) { g.pw = -2; }, "pw = -2 (horizontal padding must be >= 0)"},
      // Kernel larger than the padded input: H + 2ph = 4 + 2 < 7.
      {[](ConvGeometry& g) { g.kh = 7; }, "Ho < 1: kernel kh = 7 exceeds the padded input H + 2 * ph = 4 + 2 * 1 = 6"},
      {[](ConvGeometry& g) { g.kw = 8; }, "Wo < 1: kernel kw = 8 exceeds the padded input W + 2 * pw = 5 + 2 * 1 = 7"},
      // H + 2ph - kh = -1 with stride 2: ConvGeometry::Ho() truncates (-1) / 2 to 0 and says 1.
      {[](ConvGeometry& g) { g.H = 1, g.ph = 0, g.kh = 2, g.sh = 2; }, "Ho < 1: kernel kh = 2 exceeds"},
      {[](ConvGeometry& g) { g.N = int64_t{1} << 40, g.C = int64_t{1} << 30; }, "N * C * H * W overflows int64"},
  };
  for (const auto& [edit, fragment] : cases) {
    ConvGeometry g = small();
    edit(g);
    check_rejected(g, {"invalid convolution geometry", fragment});
  }
  // The direct and im2col references say who they are.
  ConvGeometry g = small();
  g.N = 0;
  check_rejected(g, {});
  const std::vector<int16_t> buf(64, 1);
  conv_test::check_invalid_input([&] { apnn::conv_reference_direct(g, buf.data(), buf.data()); }, {"conv_reference_direct: "});
  conv_test::check_invalid_input([&] { apnn::conv_reference_im2col(g, buf.data(), buf.data()); }, {"conv_reference_im2col: "});
  conv_test::check_invalid_input([&] { apnn::conv_reference_direct(small(), nullptr, buf.data()); }, {"W is null"});
  conv_test::check_invalid_input([&] { apnn::conv_reference_im2col(small(), buf.data(), nullptr); }, {"X is null"});
}

TEST_CASE("conv reference edges: results at the int32 limit fit, one past it throws naming Y[n][o][ho][wo]") {
  // 1x1 kernel, N,C,H,W = 1,2,1,3, O = 2. Output channel 1 has weights -32768 on both channels;
  // X is -32768 on both channels at w = 2 only (and 32767 on channel 1 at w = 1).
  ConvGeometry g;
  g.N = 1, g.C = 2, g.H = 1, g.W = 3, g.O = 2;
  const std::vector<int16_t> W = {0, 0, -32768, -32768};
  std::vector<int16_t> X = {0, 0, -32768, 0, 32767, -32768};  // X[c][0][w]
  // Y[0][1][0][2] = 2 * 2^30 = 2^31 = INT32_MAX + 1.
  conv_test::check_invalid_input([&] { apnn::conv_reference_direct(g, W.data(), X.data()); },
                                 {"conv_reference_direct: Y[0][1][0][2] = 2147483648 does not fit int32"});
  conv_test::check_invalid_input([&] { apnn::conv_reference_im2col(g, W.data(), X.data()); },
                                 {"conv_reference_im2col: ", "Y[1][2] = 2147483648 does not fit int32",
                                  "row = output channel o"});
  // One step back: 2^30 + (-32768)(-32767) = 2147450880 fits; and 2^30 - 32768 * 32767 at w = 1.
  X[5] = -32767;
  const std::vector<int32_t> expected = {0, 0, 0, 0, -32768 * 32767, 2147450880};
  CHECK(apnn::conv_reference_direct(g, W.data(), X.data()) == expected);
  CHECK(apnn::conv_reference_im2col(g, W.data(), X.data()) == expected);
}

TEST_CASE("conv reference edges: legal but unusual geometry") {
  SUBCASE("padding larger than the kernel: border outputs see only zeros") {
    ConvGeometry g;  // 1x1 kernel, pad 2 on a 1x2 input: Ho = 5, Wo = 6, only (2, 2..3) see data
    g.N = 1, g.C = 1, g.H = 1, g.W = 2, g.O = 1, g.ph = g.pw = 2;
    const std::vector<int16_t> W = {-3}, X = {5, -7};
    std::vector<int32_t> expected(30, 0);
    expected[2 * 6 + 2] = -15, expected[2 * 6 + 3] = 21;
    CHECK(apnn::conv_reference_direct(g, W.data(), X.data()) == expected);
    CHECK(apnn::conv_reference_im2col(g, W.data(), X.data()) == expected);
  }
  SUBCASE("stride larger than the input: one output") {
    ConvGeometry g;
    g.N = 2, g.C = 1, g.H = 2, g.W = 2, g.O = 1, g.kh = g.kw = 2, g.sh = g.sw = 5;
    const std::vector<int16_t> W = {1, 2, 3, 4}, X = {1, 1, 1, 1, -1, 0, 0, 2};
    CHECK(apnn::conv_reference_direct(g, W.data(), X.data()) == std::vector<int32_t>{10, 7});
    CHECK(apnn::conv_reference_im2col(g, W.data(), X.data()) == std::vector<int32_t>{10, 7});
  }
  SUBCASE("the kernel exactly covers the padded input") {
    ConvGeometry g;
    g.N = 1, g.C = 1, g.H = 1, g.W = 1, g.O = 2, g.kh = g.kw = 3, g.ph = g.pw = 1;
    const std::vector<int16_t> W = {9, 9, 9, 9, 2, 9, 9, 9, 9, 0, 0, 0, 0, -5, 0, 0, 0, 0}, X = {3};
    CHECK(apnn::conv_reference_direct(g, W.data(), X.data()) == std::vector<int32_t>{6, -15});
    CHECK(apnn::conv_reference_im2col(g, W.data(), X.data()) == std::vector<int32_t>{6, -15});
  }
}

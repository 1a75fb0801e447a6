// The CPU reference of fused epilogue chains against small examples computed by hand, op by op
// and as chains (the arithmetic of include/apnn/epilogue.h), pooled sizes, and the random
// parameters that tests and verification use.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "apnn/epilogue.h"
#include "apnn/epilogue_reference.h"
#include "apnn/error.h"
#include "spec/epilogue.h"

namespace {

using apnn::Encoding;
using apnn::Epilogue;
using apnn::EpilogueOp;
using apnn::EpilogueOpKind;
using apnn::EpilogueParams;
using apnn::EpilogueResult;
using apnn::OutputType;
using apnn::PoolKind;
using apnn::QuantScale;

EpilogueOp scale_bias() {
  EpilogueOp op;
  op.kind = EpilogueOpKind::ScaleBias;
  return op;
}
EpilogueOp relu() {
  EpilogueOp op;
  op.kind = EpilogueOpKind::Relu;
  return op;
}
EpilogueOp pool(PoolKind kind, int size, int stride) {
  EpilogueOp op;
  op.kind = EpilogueOpKind::Pool;
  op.pool = kind;
  op.size = size;
  op.stride = stride;
  return op;
}
EpilogueOp quantize(int bits, Encoding enc, QuantScale scale = QuantScale::PerTensor) {
  EpilogueOp op;
  op.kind = EpilogueOpKind::Quantize;
  op.out = {bits, enc};
  op.scale = scale;
  return op;
}
Epilogue chain(std::initializer_list<EpilogueOp> ops) { return Epilogue{ops}; }

EpilogueResult run(const Epilogue& e, const EpilogueParams& p, const std::vector<int32_t>& y, int64_t N, int64_t C,
                   int64_t H, int64_t W) {
  REQUIRE(static_cast<int64_t>(y.size()) == N * C * H * W);
  return apnn::epilogue_reference(e, p, y.data(), N, C, H, W);
}

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// Float results compared bit for bit (the GPU must match them exactly).
void check_floats(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("index " << i << ": got " << got[i] << ", want " << want[i]);
    CHECK(bits_of(got[i]) == bits_of(want[i]));
  }
}

// Quantizes a row of int32 values with a per-tensor quantizer (C = 1, H = 1).
std::vector<int16_t> quantized(const EpilogueOp& q, float s, float z, const std::vector<int32_t>& y) {
  const EpilogueResult r = run(chain({q}), {{}, {}, {s}, {z}}, y, 1, 1, 1, static_cast<int64_t>(y.size()));
  CHECK(r.type == OutputType::Packed);
  CHECK(r.i32.empty());
  CHECK(r.f32.empty());
  return r.values;
}

template <class F>
void check_invalid_input(F&& f, std::initializer_list<std::string> fragments) {
  try {
    f();
    FAIL("no apnn::Error thrown");
  } catch (const apnn::Error& e) {
    const std::string msg = e.what();
    INFO("message: " << msg);
    CHECK(e.kind() == apnn::ErrorKind::InvalidInput);
    for (const auto& s : fragments) CHECK_MESSAGE(msg.find(s) != std::string::npos, "missing '" << s << "'");
  }
}

// 5x5 int32 plane used by the pooling examples.
const std::vector<int32_t> k5x5 = {
    1,  -2, 3,  0,  9,   //
    4,  8,  -1, 2,  7,   //
    -5, 6,  5,  -3, 1,   //
    0,  2,  11, 4,  -6,  //
    3,  -7, 1,  10, 2,
};

}  // namespace

TEST_CASE("epilogue reference: no chain passes the int32 output through") {
  const std::vector<int32_t> y = {7, -3, 0, 2147483647, -2147483647 - 1, 5};
  const EpilogueResult r = run(Epilogue{}, {}, y, 1, 2, 1, 3);
  CHECK(r.type == OutputType::Int32);
  CHECK(r.i32 == y);
  CHECK((r.N == 1 && r.C == 2 && r.H == 1 && r.W == 3));
}

TEST_CASE("epilogue reference: scale_bias is fmaf(float(x), scale[o], bias[o]) per channel") {
  // Two channels of two values: 3*0.5+1, -5*0.5+1 | 7*-2+0.25, 0*-2+0.25.
  const EpilogueResult r = run(chain({scale_bias()}), {{0.5f, -2.0f}, {1.0f, 0.25f}, {}, {}}, {3, -5, 7, 0}, 1, 2, 1, 2);
  CHECK(r.type == OutputType::Float32);
  CHECK(r.i32.empty());
  check_floats(r.f32, {2.5f, -1.5f, -13.75f, 0.25f});
  // Fused, not rounded twice: (2^24-1)*(1+2^-23) = 2^24 + 1 - 2^-23 exactly, minus 2^24 leaves
  // 1 - 2^-23; rounding the product first gives 2^24 and so 0.
  const EpilogueResult fused = run(chain({scale_bias()}), {{0x1.000002p0f}, {-16777216.0f}, {}, {}}, {16777215}, 1, 1, 1, 1);
  check_floats(fused.f32, {0x1.fffffcp-1f});
  // The int32 is converted to float first (round to nearest even): 2^24+1 -> 2^24, 2^24+3 -> 2^24+4.
  const EpilogueResult conv = run(chain({scale_bias()}), {{1.0f}, {0.0f}, {}, {}}, {16777217, 16777219}, 1, 1, 1, 2);
  check_floats(conv.f32, {16777216.0f, 16777220.0f});
}

TEST_CASE("epilogue reference: relu in int32 and in float32") {
  // Int: two images, one channel each; stays int32.
  const EpilogueResult i = run(chain({relu()}), {}, {-3, 0, 5, -2147483647 - 1, 1, 2147483647}, 2, 1, 1, 3);
  CHECK(i.type == OutputType::Int32);
  CHECK(i.i32 == std::vector<int32_t>{0, 0, 5, 0, 1, 2147483647});
  // Float after scale_bias: -1.5 -> 0, 2.5 stays, and -0.0 (0*-1 + -0) becomes +0.
  const EpilogueResult f = run(chain({scale_bias(), relu()}), {{0.5f}, {1.0f}, {}, {}}, {-5, 3}, 1, 1, 1, 2);
  check_floats(f.f32, {0.0f, 2.5f});
  const EpilogueResult z = run(chain({scale_bias(), relu()}), {{-1.0f}, {-0.0f}, {}, {}}, {0}, 1, 1, 1, 1);
  const EpilogueResult z_raw = run(chain({scale_bias()}), {{-1.0f}, {-0.0f}, {}, {}}, {0}, 1, 1, 1, 1);
  check_floats(z_raw.f32, {-0.0f});
  check_floats(z.f32, {0.0f});
  CHECK_FALSE(std::signbit(z.f32[0]));
  // relu then scale_bias: the relu is on the int32.
  const EpilogueResult rs = run(chain({relu(), scale_bias()}), {{2.0f}, {-1.0f}, {}, {}}, {-4, 3}, 1, 1, 1, 2);
  check_floats(rs.f32, {-1.0f, 5.0f});
}

TEST_CASE("epilogue reference: max pooling, 2x2/2 and 3x3/2, floor of the output size") {
  // 5x5 -> 2x2 for both (the last row and column are dropped by 2x2/2).
  const EpilogueResult p2 = run(chain({pool(PoolKind::Max, 2, 2)}), {}, k5x5, 1, 1, 5, 5);
  CHECK(p2.type == OutputType::Int32);
  CHECK((p2.H == 2 && p2.W == 2));
  CHECK(p2.i32 == std::vector<int32_t>{8, 3, 6, 11});
  const EpilogueResult p3 = run(chain({pool(PoolKind::Max, 3, 2)}), {}, k5x5, 1, 1, 5, 5);
  CHECK((p3.H == 2 && p3.W == 2));
  CHECK(p3.i32 == std::vector<int32_t>{8, 9, 11, 11});
  // 3x3/1 over the top-left 4x4 of the plane... as its own 4x4 input: rows 0..3, cols 0..3.
  std::vector<int32_t> y4;
  for (int h = 0; h < 4; ++h)
    for (int w = 0; w < 4; ++w) y4.push_back(k5x5[static_cast<size_t>(h * 5 + w)]);
  const EpilogueResult p31 = run(chain({pool(PoolKind::Max, 3, 1)}), {}, y4, 1, 1, 4, 4);
  CHECK((p31.H == 2 && p31.W == 2));
  CHECK(p31.i32 == std::vector<int32_t>{8, 8, 11, 11});
  // All-negative windows keep their maximum; relu after the pool makes it 0.
  const std::vector<int32_t> neg = {-5, -2, -7, -1, -9, -3, -4, -8};  // 2x4: windows {-5,-2,-9,-3}, {-7,-1,-4,-8}
  CHECK(run(chain({pool(PoolKind::Max, 2, 2)}), {}, neg, 1, 1, 2, 4).i32 == std::vector<int32_t>{-2, -1});
  CHECK(run(chain({pool(PoolKind::Max, 2, 2), relu()}), {}, neg, 1, 1, 2, 4).i32 == std::vector<int32_t>{0, 0});
  // Float max after a negative scale: the smallest int becomes the largest float.
  const EpilogueResult f = run(chain({scale_bias(), pool(PoolKind::Max, 2, 2)}), {{-0.5f}, {0.0f}, {}, {}}, neg, 1, 1, 2, 4);
  CHECK(f.type == OutputType::Float32);
  check_floats(f.f32, {4.5f, 4.0f});
  // Channels and images pool separately: (2, 2, 2, 2) -> (2, 2, 1, 1).
  const std::vector<int32_t> many = {1, 2, 3, 4, -1, -2, -3, -4, 10, 0, 0, 0, 0, 0, 0, -10};
  const EpilogueResult m = run(chain({pool(PoolKind::Max, 2, 2)}), {}, many, 2, 2, 2, 2);
  CHECK((m.N == 2 && m.C == 2 && m.H == 1 && m.W == 1));
  CHECK(m.i32 == std::vector<int32_t>{4, -1, 10, 0});
}

TEST_CASE("epilogue reference: average pooling sums in row-major order, then divides") {
  const EpilogueResult a2 = run(chain({pool(PoolKind::Avg, 2, 2)}), {}, k5x5, 1, 1, 5, 5);
  CHECK(a2.type == OutputType::Float32);
  CHECK((a2.H == 2 && a2.W == 2));
  // Sums 11, 4, 3, 17 over 4.
  check_floats(a2.f32, {2.75f, 1.0f, 0.75f, 4.25f});
  // Sums 19, 23, 16, 25 over 9, each correctly rounded (IEEE division: multiplying 25 by
  // 1/9.0f instead rounds to a different float).
  const EpilogueResult a3 = run(chain({pool(PoolKind::Avg, 3, 2)}), {}, k5x5, 1, 1, 5, 5);
  check_floats(a3.f32, {0x1.0e38e4p+1f, 0x1.471c72p+1f, 0x1.c71c72p+0f, 0x1.638e38p+1f});
  // Order: 2^24 + 1 rounds back to 2^24, then -2^24 gives 0, then + 1: 1 / 4. Any other order
  // (or an exact sum) would give 2 / 4.
  const EpilogueResult order = run(chain({pool(PoolKind::Avg, 2, 2)}), {}, {16777216, 1, -16777216, 1}, 1, 1, 2, 2);
  check_floats(order.f32, {0.25f});
  // relu on the int32 before the pool, scale_bias on the average after it.
  const EpilogueResult ra = run(chain({relu(), pool(PoolKind::Avg, 2, 2)}), {}, {-4, 2, 3, -1}, 1, 1, 2, 2);
  check_floats(ra.f32, {1.25f});
  const EpilogueResult as = run(chain({pool(PoolKind::Avg, 2, 2), scale_bias()}), {{2.0f}, {-0.5f}, {}, {}}, {1, 2, 3, 5},
                                1, 1, 2, 2);
  check_floats(as.f32, {5.0f});
  // Average of floats: scale_bias first (x*0.5 + 0.25 of 1, 2, 3, 4 = 0.75, 1.25, 1.75, 2.25).
  const EpilogueResult sa = run(chain({scale_bias(), pool(PoolKind::Avg, 2, 2)}), {{0.5f}, {0.25f}, {}, {}}, {1, 2, 3, 4},
                                1, 1, 2, 2);
  check_floats(sa.f32, {1.5f});
}

TEST_CASE("epilogue reference: quantize per tensor, each encoding, clamped at both ends, floor of negatives") {
  // unsigned 2-bit, s = 2, z = 1: floor((x-1)/2) in 0..3.
  CHECK(quantized(quantize(2, Encoding::Unsigned), 2.0f, 1.0f, {-7, 0, 1, 2, 3, 6, 7, 8, 1000}) ==
        std::vector<int16_t>{0, 0, 0, 0, 1, 2, 3, 3, 3});
  // signed 2-bit, s = 2, z = 0: -2..1; -1/2 floors to -1, not 0.
  CHECK(quantized(quantize(2, Encoding::Signed), 2.0f, 0.0f, {-5, -4, -3, -1, 0, 1, 2, 3, 9}) ==
        std::vector<int16_t>{-2, -2, -2, -1, 0, 0, 1, 1, 1});
  // signed 8-bit, s = 1, z = 0.5: -128..127.
  CHECK(quantized(quantize(8, Encoding::Signed), 1.0f, 0.5f, {-1000, -128, 0, 127, 128, 500}) ==
        std::vector<int16_t>{-128, -128, -1, 126, 127, 127});
  // pm1 2-bit, s = 1, z = -2: k = floor(x+2) in 0..3, y = 2k - 3.
  CHECK(quantized(quantize(2, Encoding::Pm1), 1.0f, -2.0f, {-10, -2, -1, 0, 1, 7}) ==
        std::vector<int16_t>{-3, -3, -1, 1, 3, 3});
  // pm1 1-bit, s = 4, z = 0: k in 0..1, y = -1 or 1.
  CHECK(quantized(quantize(1, Encoding::Pm1), 4.0f, 0.0f, {-1, 3, 4, 100}) == std::vector<int16_t>{-1, -1, 1, 1});
  // signed 1-bit: -1..0.
  CHECK(quantized(quantize(1, Encoding::Signed), 1.0f, 0.0f, {-5, -1, 0, 5}) == std::vector<int16_t>{-1, -1, 0, 0});
  // unsigned 1-bit: 0..1.
  CHECK(quantized(quantize(1, Encoding::Unsigned), 1.0f, 0.0f, {-5, 0, 1, 5}) == std::vector<int16_t>{0, 0, 1, 1});
  // unsigned 8-bit, s = 0.1f: 3/0.1f is 30 in float32 (29.99999955... in double, whose floor is 29).
  CHECK(quantized(quantize(8, Encoding::Unsigned), 0.1f, 0.0f, {-1, 3, 100}) == std::vector<int16_t>{0, 30, 255});
  // pm1 8-bit: the ends are -255 and 255.
  CHECK(quantized(quantize(8, Encoding::Pm1), 1.0f, 0.0f, {-1, 0, 1, 254, 255, 256}) ==
        std::vector<int16_t>{-255, -255, -253, 253, 255, 255});
}

TEST_CASE("epilogue reference: per-channel quantizer scales and zero points") {
  // Three channels of [2, 5]: s = 1, 2, 4 and z = 0, 1, -4.
  //   c0: 2, 5 -> 2, 3 (clamped)   c1: 0.5, 2 -> 0, 2   c2: 1.5, 2.25 -> 1, 2
  const std::vector<int32_t> y = {2, 5, 2, 5, 2, 5};
  const EpilogueResult pc = run(chain({quantize(2, Encoding::Unsigned, QuantScale::PerChannel)}),
                                {{}, {}, {1.0f, 2.0f, 4.0f}, {0.0f, 1.0f, -4.0f}}, y, 1, 3, 1, 2);
  CHECK(pc.values == std::vector<int16_t>{2, 3, 0, 2, 1, 2});
  // Per tensor (s = 2, z = 1) every channel is like c1.
  const EpilogueResult pt = run(chain({quantize(2, Encoding::Unsigned)}), {{}, {}, {2.0f}, {1.0f}}, y, 1, 3, 1, 2);
  CHECK(pt.values == std::vector<int16_t>{0, 2, 0, 2, 0, 2});
  // The apmm layout (1, M, 1, N): channel m of pixel n; per channel means per row m.
  const EpilogueResult mm = run(chain({scale_bias(), quantize(2, Encoding::Signed, QuantScale::PerChannel)}),
                                {{1.0f, -1.0f}, {0.0f, 0.0f}, {1.0f, 3.0f}, {0.0f, 0.0f}}, {1, -1, 3, 1, -1, 3}, 1, 2, 1, 3);
  // m0: 1, -1, 3 -> 1, -1, 1 (clamped)   m1: -1, 1, -3 over 3 -> -1, 0, -1
  CHECK(mm.values == std::vector<int16_t>{1, -1, 1, -1, 0, -1});
}

TEST_CASE("epilogue reference: whole chains") {
  // (1, 2, 2, 4): scale [0.5, -0.25], bias [1, 2], relu, max 2x2/2, quantize unsigned 2-bit s = 1, z = 0.5.
  //   c0 after scale_bias and relu: 1.5 0 2.5 3 / 3.5 1 0.5 0   -> max 3.5, 3
  //   c1 after scale_bias and relu: 0 0 9.5 2 / 1.5 1 0.5 0     -> max 1.5, 9.5
  const std::vector<int32_t> y = {1, -2, 3, 4, 5, 0, -1, -6, 10, 20, -30, 0, 2, 4, 6, 8};
  const EpilogueParams sb{{0.5f, -0.25f}, {1.0f, 2.0f}, {}, {}};
  const EpilogueResult f = run(chain({scale_bias(), relu(), pool(PoolKind::Max, 2, 2)}), sb, y, 1, 2, 2, 4);
  CHECK(f.type == OutputType::Float32);
  CHECK((f.N == 1 && f.C == 2 && f.H == 1 && f.W == 2));
  check_floats(f.f32, {3.5f, 3.0f, 1.5f, 9.5f});
  EpilogueParams q = sb;
  q.q_scale = {1.0f};
  q.q_zero = {0.5f};
  // floor(3.5-0.5) = 3, floor(2.5) = 2, floor(1) = 1, floor(9) = 9 -> 3.
  const EpilogueResult p =
      run(chain({scale_bias(), relu(), pool(PoolKind::Max, 2, 2), quantize(2, Encoding::Unsigned)}), q, y, 1, 2, 2, 4);
  CHECK(p.type == OutputType::Packed);
  CHECK((p.H == 1 && p.W == 2));
  CHECK(p.values == std::vector<int16_t>{3, 2, 1, 3});
  // Without pool (apmm-like): the same chain element-wise, quantized to signed 2-bit.
  //   c0: 1.5 0 2.5 3 3.5 1 0.5 0 -> floor(x-0.5): 1 -1 2 2 3 0 0 -1 -> clamp to -2..1
  q.q_zero = {0.5f};
  const EpilogueResult s = run(chain({scale_bias(), relu(), quantize(2, Encoding::Signed)}), q, y, 1, 2, 1, 8);
  CHECK(s.values == std::vector<int16_t>{1, -1, 1, 1, 1, 0, 0, -1,  //
                                         -1, -1, 1, 1, 1, 0, 0, -1});
  // Pool first, then scale_bias and relu: c0 max of ints (5, 4) -> 3.5, 3; c1 (20, 8) -> -3, 0 -> relu 0, 0.
  const EpilogueResult pf = run(chain({pool(PoolKind::Max, 2, 2), scale_bias(), relu()}), sb, y, 1, 2, 2, 4);
  check_floats(pf.f32, {3.5f, 3.0f, 0.0f, 0.0f});
}

TEST_CASE("epilogue reference: pooled sizes, and windows that do not fit") {
  auto size_of = [](const Epilogue& e, int64_t H, int64_t W) {
    int64_t hp = -1, wp = -1;
    apnn::pooled_size(e, H, W, &hp, &wp);
    return std::make_pair(hp, wp);
  };
  const Epilogue p22 = chain({pool(PoolKind::Max, 2, 2)}), p32 = chain({pool(PoolKind::Avg, 3, 2)});
  const Epilogue p21 = chain({pool(PoolKind::Max, 2, 1)}), p31 = chain({pool(PoolKind::Max, 3, 1)});
  CHECK(size_of(Epilogue{}, 7, 5) == std::make_pair<int64_t, int64_t>(7, 5));
  CHECK(size_of(chain({relu(), quantize(2, Encoding::Unsigned)}), 1, 1) == std::make_pair<int64_t, int64_t>(1, 1));
  CHECK(size_of(p22, 5, 5) == std::make_pair<int64_t, int64_t>(2, 2));
  CHECK(size_of(p22, 4, 7) == std::make_pair<int64_t, int64_t>(2, 3));
  CHECK(size_of(p22, 2, 2) == std::make_pair<int64_t, int64_t>(1, 1));
  CHECK(size_of(p32, 6, 6) == std::make_pair<int64_t, int64_t>(2, 2));
  CHECK(size_of(p32, 7, 3) == std::make_pair<int64_t, int64_t>(3, 1));
  CHECK(size_of(p32, 112, 112) == std::make_pair<int64_t, int64_t>(55, 55));
  CHECK(size_of(p21, 3, 3) == std::make_pair<int64_t, int64_t>(2, 2));
  CHECK(size_of(p31, 4, 3) == std::make_pair<int64_t, int64_t>(2, 1));
  check_invalid_input([&] { size_of(p32, 2, 5); }, {"3x3 pool", "2x5"});
  check_invalid_input([&] { size_of(p32, 5, 2); }, {"3x3 pool", "5x2"});
  check_invalid_input([&] { size_of(p22, 1, 1); }, {"2x2 pool", "1x1"});
  // The reference checks the same before computing anything.
  check_invalid_input([&] { run(p22, {}, {1, 2, 3}, 1, 1, 1, 3); }, {"2x2 pool", "1x3"});
}

TEST_CASE("epilogue reference: parameters are checked") {
  check_invalid_input([] { run(chain({scale_bias()}), {{1.0f}, {}, {}, {}}, {1, 2}, 1, 2, 1, 1); }, {"'scale'", "needs 2"});
  check_invalid_input([] { run(chain({quantize(2, Encoding::Unsigned)}), {{}, {}, {0.0f}, {0.0f}}, {1}, 1, 1, 1, 1); },
                      {"'q_scale'", "> 0"});
  check_invalid_input([] { run(chain({relu()}), {{}, {}, {1.0f}, {0.0f}}, {1}, 1, 1, 1, 1); }, {"'q_scale'", "no quantize"});
}

TEST_CASE("fitted_epilogue_params: parameters pass the checks and spread 2-bit outputs over the levels") {
  const std::vector<std::pair<const char*, Epilogue>> chains = {
      {"quantize unsigned", chain({quantize(2, Encoding::Unsigned)})},
      {"quantize signed", chain({quantize(2, Encoding::Signed)})},
      {"quantize pm1", chain({quantize(2, Encoding::Pm1)})},
      {"quantize unsigned per channel", chain({quantize(2, Encoding::Unsigned, QuantScale::PerChannel)})},
      {"scale_bias quantize unsigned", chain({scale_bias(), quantize(2, Encoding::Unsigned)})},
      {"scale_bias quantize signed per channel",
       chain({scale_bias(), quantize(2, Encoding::Signed, QuantScale::PerChannel)})},
      {"scale_bias quantize pm1", chain({scale_bias(), quantize(2, Encoding::Pm1)})},
      {"scale_bias max pool quantize pm1 per channel",
       chain({scale_bias(), pool(PoolKind::Max, 2, 1), quantize(2, Encoding::Pm1, QuantScale::PerChannel)})},
  };
  const struct {
    double mean, spread;
  } moments[] = {{500.0, 40.0}, {-3000.0, 700.0}, {0.0, 5.0}, {12.0, 0.0}};
  const int64_t C = 8, H = 8, W = 8;
  for (const auto& [name, e] : chains)
    for (const auto& m : moments) {
      INFO(name << ", mean " << m.mean << ", spread " << m.spread);
      std::mt19937_64 rng(7);
      std::normal_distribution<double> dist(m.mean, m.spread > 0 ? m.spread : 1.0);
      std::vector<int32_t> y(static_cast<size_t>(C * H * W));
      for (auto& v : y) v = m.spread > 0 ? static_cast<int32_t>(std::lround(dist(rng))) : static_cast<int32_t>(m.mean);
      const EpilogueParams p = apnn::fitted_epilogue_params(e, y.data(), 1, C, H, W, 42);
      CHECK_NOTHROW(apnn::check_epilogue_params(e, p, C));
      const bool scaled = e.has(EpilogueOpKind::ScaleBias);
      CHECK(p.scale.size() == static_cast<size_t>(scaled ? C : 0));
      CHECK(p.bias.size() == p.scale.size());
      const size_t q_len = e.quantize()->scale == QuantScale::PerChannel ? static_cast<size_t>(C) : 1;
      CHECK(p.q_scale.size() == q_len);
      CHECK(p.q_zero.size() == q_len);
      if (m.spread == 0.0) continue;  // a constant tensor has one level; only the parameters are checked
      const EpilogueResult r = apnn::epilogue_reference(e, p, y.data(), 1, C, H, W);
      const std::set<int16_t> levels(r.values.begin(), r.values.end());
      INFO("levels used: " << levels.size());
      CHECK(levels.size() >= 3);
      const apnn::OperandFormat f = e.quantize()->out;
      for (int16_t v : levels) CHECK(f.is_valid(v));
    }
  // Deterministic in the seed, different across seeds; chains without quantize get no quantizer.
  const Epilogue e = chain({scale_bias(), relu(), quantize(3, Encoding::Signed, QuantScale::PerChannel)});
  std::vector<int32_t> y(16 * 4);
  for (size_t i = 0; i < y.size(); ++i) y[i] = 100 + static_cast<int32_t>(i % 21) - 10;
  const EpilogueParams a = apnn::fitted_epilogue_params(e, y.data(), 1, 16, 2, 2, 1);
  const EpilogueParams b = apnn::fitted_epilogue_params(e, y.data(), 1, 16, 2, 2, 1);
  const EpilogueParams c = apnn::fitted_epilogue_params(e, y.data(), 1, 16, 2, 2, 2);
  CHECK((a.scale == b.scale && a.bias == b.bias && a.q_scale == b.q_scale && a.q_zero == b.q_zero));
  CHECK((a.scale != c.scale && a.q_scale != c.q_scale));
  const EpilogueParams sb = apnn::fitted_epilogue_params(chain({scale_bias(), relu()}), y.data(), 1, 4, 4, 4, 3);
  CHECK(sb.scale.size() == 4);
  CHECK(sb.q_scale.empty());
  CHECK(sb.q_zero.empty());
  CHECK_NOTHROW(apnn::check_epilogue_params(chain({scale_bias(), relu()}), sb, 4));
  const EpilogueParams none = apnn::fitted_epilogue_params(chain({relu()}), y.data(), 1, 4, 4, 4, 3);
  CHECK((none.scale.empty() && none.bias.empty() && none.q_scale.empty() && none.q_zero.empty()));
}

TEST_CASE("fitted_epilogue_params: every chain's quantized outputs use all its levels, whatever the data's offset") {
  const char* const chains[] = {
      R"([{"op":"quantize","bits":2,"enc":"unsigned"}])",
      R"([{"op":"scale_bias"},{"op":"relu"},{"op":"pool","kind":"max","size":2,"stride":2},{"op":"quantize","bits":2,"enc":"unsigned"}])",
      R"([{"op":"relu"},{"op":"pool","kind":"max","size":3,"stride":2},{"op":"scale_bias"},{"op":"quantize","bits":2,"enc":"pm1"}])",
      R"([{"op":"relu"},{"op":"scale_bias"},{"op":"quantize","bits":3,"enc":"pm1","scale":"per_channel"}])",
      R"([{"op":"scale_bias"},{"op":"quantize","bits":4,"enc":"signed","scale":"per_channel"}])"};
  // A strongly negative mean (signed weights x unsigned activations): relu leaves a quarter.
  std::vector<int32_t> y(2 * 8 * 10 * 10);
  for (size_t i = 0; i < y.size(); ++i) y[i] = -300 + static_cast<int32_t>((i * 7919) % 401);
  for (const char* c : chains) {
    INFO(c);
    const apnn::Epilogue e = apnn::parse_epilogue(nlohmann::json::parse(c), true, "test");
    const apnn::EpilogueParams p = apnn::fitted_epilogue_params(e, y.data(), 2, 8, 10, 10, 5);
    CHECK_NOTHROW(apnn::check_epilogue_params(e, p, 8));
    const apnn::EpilogueResult r = apnn::epilogue_reference(e, p, y.data(), 2, 8, 10, 10);
    const std::set<int16_t> levels(r.values.begin(), r.values.end());
    CHECK(static_cast<int>(levels.size()) >= (1 << e.quantize()->out.bits) - 1);
  }
}

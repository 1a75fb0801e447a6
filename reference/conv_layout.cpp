// Layout v1 of conv_layout.h on the CPU, written straight from its word formulas: what the
// GPU packing kernels and the fused epilogues must produce bit for bit.
#include <limits>
#include <string>

#include "apnn/conv_reference.h"
#include "apnn/error.h"
#include "reference/checks.h"

namespace apnn {

namespace {

[[noreturn]] void fail(const char* who, const std::string& what) {
  throw Error(ErrorKind::InvalidInput, std::string(who) + ": " + what);
}

// Sizes may be 0 (an empty tensor), not negative; every element and word count must fit int64.
void check_dims(const char* who, const char* names[4], const int64_t dims[4], int bits) {
  int64_t count = bits;
  for (int i = 0; i < 4; ++i) {
    if (dims[i] < 0) fail(who, std::string("negative size ") + names[i] + " = " + std::to_string(dims[i]));
    if (dims[i] > 0 && __builtin_mul_overflow(count, dims[i], &count))
      fail(who, std::string("tensor too large: ") + names[0] + "*" + names[1] + "*" + names[2] + "*" + names[3] +
                    " words overflow int64");
  }
  if (__builtin_mul_overflow(count, conv_channel_words(dims[1]), &count))
    fail(who, std::string("tensor too large: the packed word count overflows int64"));
}

std::string index4(const char* name, int64_t a, int64_t b, int64_t c, int64_t d) {
  return std::string(name) + "[" + std::to_string(a) + "][" + std::to_string(b) + "][" + std::to_string(c) + "][" +
         std::to_string(d) + "]";
}

// The code of value v at NCHW-like position (a, b, c, d), or an error naming it.
uint32_t code_of(const char* who, const OperandFormat& f, int16_t v, const char* name, int64_t a, int64_t b, int64_t c,
                 int64_t d, int64_t flat) {
  if (!f.is_valid(v))
    fail(who, index4(name, a, b, c, d) + " (flat index " + std::to_string(flat) + ") = " + std::to_string(v) +
                  " is not a valid " + f.describe() + " value");
  return f.code(v);
}

int32_t narrow(const char* who, const std::string& what, int64_t v) {
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
    fail(who, what + " = " + std::to_string(v) + " does not fit int32");
  return static_cast<int32_t>(v);
}

// sum_s alpha_s * popc(plane s), where plane s of one pixel / kernel position starts at
// words + s * plane_stride and spans CW words.
int64_t weighted_popcount(const OperandFormat& f, const uint32_t* words, int64_t plane_stride, int64_t CW) {
  int64_t sum = 0;
  for (int s = 0; s < f.bits; ++s) {
    int64_t pop = 0;
    for (int64_t cw = 0; cw < CW; ++cw) pop += __builtin_popcount(words[s * plane_stride + cw]);
    sum += f.plane_weight(s) * pop;
  }
  return sum;
}

}  // namespace

PackedActivations pack_activations_reference(const OperandFormat& f, const int16_t* X, int64_t N, int64_t C, int64_t H,
                                             int64_t W) {
  constexpr const char* kWho = "pack_activations_reference";
  reference::check_format(kWho, f);
  const char* names[4] = {"N", "C", "H", "W"};
  const int64_t dims[4] = {N, C, H, W};
  check_dims(kWho, names, dims, f.bits);
  const int64_t p = f.bits, CW = conv_channel_words(C);
  if (X == nullptr && N * C * H * W > 0) fail(kWho, "X is null");

  PackedActivations out;
  out.planes.assign(static_cast<size_t>(conv_activation_words(f.bits, N, C, H, W)), 0u);
  out.pixsum.assign(static_cast<size_t>(N * H * W), 0);
  // word(n, s, h, w, cw) = planes[(((n * p + s) * H + h) * W + w) * CW + cw]; channel c is bit c % 32 of cw = c / 32.
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) {
          const int64_t flat = ((n * C + c) * H + h) * W + w;
          const uint32_t code = code_of(kWho, f, X[flat], "X", n, c, h, w, flat);
          for (int64_t s = 0; s < p; ++s)
            out.planes[static_cast<size_t>((((n * p + s) * H + h) * W + w) * CW + c / 32)] |= ((code >> s) & 1u) << (c % 32);
        }
  // pixsum[(n * H + h) * W + w] = sum_s alpha_s * popc(plane s at that pixel, all words); planes of one
  // pixel are H * W * CW words apart.
  for (int64_t n = 0; n < N; ++n)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t w = 0; w < W; ++w) {
        const uint32_t* first = out.planes.data() + (((n * p) * H + h) * W + w) * CW;
        out.pixsum[static_cast<size_t>((n * H + h) * W + w)] =
            narrow(kWho, "pixsum[" + std::to_string((n * H + h) * W + w) + "]", weighted_popcount(f, first, H * W * CW, CW));
      }
  return out;
}

PackedWeights pack_weights_reference(const OperandFormat& f, const int16_t* Wt, int64_t O, int64_t C, int64_t Kh,
                                     int64_t Kw) {
  constexpr const char* kWho = "pack_weights_reference";
  reference::check_format(kWho, f);
  const char* names[4] = {"O", "C", "Kh", "Kw"};
  const int64_t dims[4] = {O, C, Kh, Kw};
  check_dims(kWho, names, dims, f.bits);
  const int64_t CW = conv_channel_words(C);
  if (Wt == nullptr && O * C * Kh * Kw > 0) fail(kWho, "W is null");

  PackedWeights out;
  out.planes.assign(static_cast<size_t>(conv_weight_words(f.bits, O, C, Kh, Kw)), 0u);
  out.possum.assign(static_cast<size_t>(O * Kh * Kw), 0);
  out.rowsum.assign(static_cast<size_t>(O), 0);
  // word(s, o, kh, kw, cw) = planes[(((s * O + o) * Kh + kh) * Kw + kw) * CW + cw].
  for (int64_t o = 0; o < O; ++o)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < Kh; ++i)
        for (int64_t j = 0; j < Kw; ++j) {
          const int64_t flat = ((o * C + c) * Kh + i) * Kw + j;
          const uint32_t code = code_of(kWho, f, Wt[flat], "W", o, c, i, j, flat);
          for (int64_t s = 0; s < f.bits; ++s)
            out.planes[static_cast<size_t>((((s * O + o) * Kh + i) * Kw + j) * CW + c / 32)] |= ((code >> s) & 1u) << (c % 32);
        }
  // possum[(o * Kh + kh) * Kw + kw] = sum_s alpha_s * popc(plane s at (o, kh, kw)); planes are
  // O * Kh * Kw * CW words apart. rowsum[o] = sum over (kh, kw) of possum.
  for (int64_t o = 0; o < O; ++o) {
    int64_t row = 0;
    for (int64_t i = 0; i < Kh; ++i)
      for (int64_t j = 0; j < Kw; ++j) {
        const int64_t pos = (o * Kh + i) * Kw + j;
        const int64_t sum = weighted_popcount(f, out.planes.data() + pos * CW, O * Kh * Kw * CW, CW);
        out.possum[static_cast<size_t>(pos)] = narrow(kWho, "possum[" + std::to_string(pos) + "]", sum);
        row += sum;
      }
    out.rowsum[static_cast<size_t>(o)] = narrow(kWho, "rowsum[" + std::to_string(o) + "]", row);
  }
  return out;
}

std::vector<int16_t> unpack_activations_reference(const OperandFormat& f, const uint32_t* planes, int64_t N, int64_t C,
                                                  int64_t H, int64_t W) {
  constexpr const char* kWho = "unpack_activations_reference";
  reference::check_format(kWho, f);
  const char* names[4] = {"N", "C", "H", "W"};
  const int64_t dims[4] = {N, C, H, W};
  check_dims(kWho, names, dims, f.bits);
  const int64_t p = f.bits, CW = conv_channel_words(C);
  if (planes == nullptr && conv_activation_words(f.bits, N, C, H, W) > 0) fail(kWho, "planes is null");

  // A packed tensor's channel-padding bits are 0 (conv_layout.h); anything else is not layout v1,
  // and would corrupt every popcount of the implicit GEMM, so it is rejected, not ignored.
  for (int64_t n = 0; n < N; ++n)
    for (int64_t s = 0; s < p; ++s)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w)
          for (int64_t cw = C / 32; cw < CW; ++cw) {
            const int64_t first = cw * 32;  // the first channel of this word
            const uint32_t pad_mask = first >= C ? 0xffffffffu : ~((1u << (C - first)) - 1u);
            const int64_t idx = (((n * p + s) * H + h) * W + w) * CW + cw;
            if ((planes[idx] & pad_mask) != 0)
              fail(kWho, "planes[" + std::to_string(idx) + "] (n=" + std::to_string(n) + ", s=" + std::to_string(s) +
                             ", h=" + std::to_string(h) + ", w=" + std::to_string(w) + ", cw=" + std::to_string(cw) +
                             ") has nonzero channel-padding bits (channels >= C = " + std::to_string(C) + ")");
          }

  std::vector<int16_t> X(static_cast<size_t>(N * C * H * W));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) {
          int64_t value = f.offset();  // sum_s alpha_s b_s + beta: every code is a valid value
          for (int64_t s = 0; s < p; ++s)
            value += f.plane_weight(static_cast<int>(s)) *
                     ((planes[(((n * p + s) * H + h) * W + w) * CW + c / 32] >> (c % 32)) & 1u);
          X[static_cast<size_t>(((n * C + c) * H + h) * W + w)] = static_cast<int16_t>(value);
        }
  return X;
}

}  // namespace apnn

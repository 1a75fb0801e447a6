// The channel-major bit-plane layout of APConv tensors on the GPU (the paper's NPHWC),
// version 1. The fused epilogues write activations in this format directly, so the
// next layer reads them without repacking.
//
// Activations, N x C x H x W values of p bits:
//   word(n, s, h, w, cw) = planes[(((n * p + s) * H + h) * W + w) * CW + cw],  CW = ceil(C / 128) * 4
//   bit j of word cw holds b_s of channel c = 32 * cw + j; channels >= C are zero bits.
//   pixsum[(n * H + h) * W + w] = sum_s alpha_s * popc(plane s at that pixel, all words)
// Weights, O x C x Kh x Kw values of p bits, the GEMM's A operand (one row per output channel):
//   word(s, o, kh, kw, cw) = planes[(((s * O + o) * Kh + kh) * Kw + kw) * CW + cw]
//   possum[(o * Kh + kh) * Kw + kw] = sum_s alpha_s * popc(plane s at (o, kh, kw))
//   rowsum[o] = sum over (kh, kw) of possum
// All of a pixel's channels are contiguous and 16-byte aligned: every load of the
// implicit GEMM is an aligned, coalesced 128-bit chunk of one pixel.
#pragma once
#include <cstdint>

namespace apnn {

inline constexpr int kConvLayoutVersion = 1;

inline constexpr int64_t conv_channel_words(int64_t C) { return (C + 127) / 128 * 4; }
inline constexpr int64_t conv_activation_words(int bits, int64_t N, int64_t C, int64_t H, int64_t W) {
  return N * bits * H * W * conv_channel_words(C);
}
inline constexpr int64_t conv_weight_words(int bits, int64_t O, int64_t C, int64_t Kh, int64_t Kw) {
  return bits * O * Kh * Kw * conv_channel_words(C);
}

struct ConvGeometry {
  int64_t N = 0, C = 0, H = 0, W = 0;  // input
  int64_t O = 0;                       // output channels
  int kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;
  int64_t Ho() const { return (H + 2 * ph - kh) / sh + 1; }
  int64_t Wo() const { return (W + 2 * pw - kw) / sw + 1; }
};

}  // namespace apnn

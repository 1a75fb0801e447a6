// The packed bit-plane format of APMM operands on the GPU, version 1.
//
// An operand of `rows` x K values with p bits is stored as p planes, plane-major:
//   word(s, r, w) = planes[(s * rows + r) * ld + w],   ld = ceil(K / 128) * 4 words
// Bit j of word w of plane s of row r is b_s of element k = 32*w + j (see encoding.h for
// how a value maps to its bits b_s). Bits for k >= K are zero, so rows are 128-bit aligned
// and 16-byte loads never straddle rows. Beside the planes, one int32 per row:
//   rowsum[r] = sum_s alpha_s * popc(plane s of row r)  ( = sum_k (value - beta) )
// which the GEMM uses for the corrections of offset encodings (pm1) without XOR.
// Any change to this layout bumps kBitplaneLayoutVersion.
#pragma once
#include <cstdint>

namespace apnn {

inline constexpr int kBitplaneLayoutVersion = 1;
inline constexpr int kBitplaneRowAlignBits = 128;

inline constexpr int64_t bitplane_ld_words(int64_t K) {
  return (K + kBitplaneRowAlignBits - 1) / kBitplaneRowAlignBits * (kBitplaneRowAlignBits / 32);
}
inline constexpr int64_t bitplane_words(int bits, int64_t rows, int64_t K) { return bits * rows * bitplane_ld_words(K); }

}  // namespace apnn

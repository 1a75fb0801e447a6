// CPU references of APMM, Y = W.X^T with W (M,K) and X (N,K) row-major int16 and Y (M,N) int32.
// Two independent ones: a direct product, and a bit-serial emulation of the GPU algorithm.
// Agreement between them checks the encoding algebra; the golden vectors check both.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "apnn/encoding.h"

namespace apnn {

// Y[m*N+n] = sum_k W[m*K+k] * X[n*K+k], accumulated exactly in int64. Throws
// Error(InvalidInput) for a negative size or a result that does not fit int32.
std::vector<int32_t> apmm_reference_direct(const int16_t* W, const int16_t* X, int64_t M, int64_t N, int64_t K);

// Encodes each value to its plane bits (OperandFormat::code), packs each plane K-major into
// 128-bit-padded rows, and combines AND+popcount plane products with the formats' plane
// weights and offsets, multiplying no values. Throws Error(InvalidInput) for a value not
// valid in its format, a negative size, or a result that does not fit int32.
std::vector<int32_t> apmm_reference_bitserial(const OperandFormat& w, const OperandFormat& x, const int16_t* W,
                                              const int16_t* X, int64_t M, int64_t N, int64_t K);

// `count` values drawn uniformly from the valid values of `f`; the same for the same seed on
// every platform (std::mt19937_64, no library distribution).
std::vector<int16_t> random_operand(const OperandFormat& f, size_t count, uint64_t seed);

}  // namespace apnn

// Convolution as the GPU computes it, an implicit GEMM, here made explicit: the im2col matrix
// of X (one row per output pixel (n, ho, wo), columns in (kh, kw, c) order, zeros at padded
// taps), the weights as an O x (Kh*Kw*C) matrix in the same column order, the APMM direct
// reference, and a permutation of its (O, N*Ho*Wo) result to (N, O, Ho, Wo).
#include <string>

#include "apnn/conv_reference.h"
#include "apnn/error.h"
#include "reference/checks.h"
#include "apnn/reference.h"

namespace apnn {

std::vector<int32_t> conv_reference_im2col(const ConvGeometry& g, const int16_t* W, const int16_t* X) {
  constexpr const char* kWho = "conv_reference_im2col";
  int64_t Ho = 0, Wo = 0;
  reference::check_conv_args(kWho, g, W, X, &Ho, &Wo);

  const int64_t K = g.kh * g.kw * g.C;  // column k = (i * kw + j) * C + c
  const int64_t P = g.N * Ho * Wo;      // row p = (n * Ho + ho) * Wo + wo

  // A: O x K, A[o][(i, j, c)] = W[o][c][i][j].
  std::vector<int16_t> A(static_cast<size_t>(g.O * K));
  for (int64_t o = 0; o < g.O; ++o)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j)
        for (int64_t c = 0; c < g.C; ++c) A[o * K + (i * g.kw + j) * g.C + c] = W[((o * g.C + c) * g.kh + i) * g.kw + j];

  // B: P x K, B[(n, ho, wo)][(i, j, c)] = X[n][c][ho*sh - ph + i][wo*sw - pw + j], or 0 outside X.
  std::vector<int16_t> B(static_cast<size_t>(P * K), 0);
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t ho = 0; ho < Ho; ++ho)
      for (int64_t wo = 0; wo < Wo; ++wo) {
        int16_t* row = B.data() + ((n * Ho + ho) * Wo + wo) * K;
        for (int64_t i = 0; i < g.kh; ++i) {
          const int64_t h = ho * g.sh - g.ph + i;
          if (h < 0 || h >= g.H) continue;
          for (int64_t j = 0; j < g.kw; ++j) {
            const int64_t w = wo * g.sw - g.pw + j;
            if (w < 0 || w >= g.W) continue;
            for (int64_t c = 0; c < g.C; ++c) row[(i * g.kw + j) * g.C + c] = X[((n * g.C + c) * g.H + h) * g.W + w];
          }
        }
      }

  std::vector<int32_t> G;  // O x P
  try {
    G = apmm_reference_direct(A.data(), B.data(), g.O, P, K);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::InvalidInput) throw;
    throw Error(ErrorKind::InvalidInput, std::string(kWho) + ": " + e.what() +
                                             " (GEMM row = output channel o, column = (n * Ho + ho) * Wo + wo with Ho = " +
                                             std::to_string(Ho) + ", Wo = " + std::to_string(Wo) + ")");
  }

  std::vector<int32_t> Y(static_cast<size_t>(g.N * g.O * Ho * Wo));
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t o = 0; o < g.O; ++o)
      for (int64_t q = 0; q < Ho * Wo; ++q) Y[(n * g.O + o) * Ho * Wo + q] = G[o * P + n * Ho * Wo + q];
  return Y;
}

}  // namespace apnn

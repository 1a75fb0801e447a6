// The obvious nested loops over the output, skipping the taps that fall in the zero padding:
// the convolution reference that shares no code path with im2col or the bit planes.
#include <limits>
#include <string>

#include "apnn/conv_reference.h"
#include "apnn/error.h"
#include "reference/checks.h"

namespace apnn {

std::vector<int32_t> conv_reference_direct(const ConvGeometry& g, const int16_t* W, const int16_t* X) {
  constexpr const char* kWho = "conv_reference_direct";
  int64_t Ho = 0, Wo = 0;
  reference::check_conv_args(kWho, g, W, X, &Ho, &Wo);

  std::vector<int32_t> Y(static_cast<size_t>(g.N * g.O * Ho * Wo));
  for (int64_t n = 0; n < g.N; ++n) {
    for (int64_t o = 0; o < g.O; ++o) {
      for (int64_t ho = 0; ho < Ho; ++ho) {
        for (int64_t wo = 0; wo < Wo; ++wo) {
          int64_t acc = 0;
          for (int64_t c = 0; c < g.C; ++c) {
            for (int64_t i = 0; i < g.kh; ++i) {
              const int64_t h = ho * g.sh - g.ph + i;
              if (h < 0 || h >= g.H) continue;  // padded row: the value is 0
              for (int64_t j = 0; j < g.kw; ++j) {
                const int64_t w = wo * g.sw - g.pw + j;
                if (w < 0 || w >= g.W) continue;  // padded column: the value is 0
                acc += int64_t{W[((o * g.C + c) * g.kh + i) * g.kw + j]} * X[((n * g.C + c) * g.H + h) * g.W + w];
              }
            }
          }
          if (acc < std::numeric_limits<int32_t>::min() || acc > std::numeric_limits<int32_t>::max())
            throw Error(ErrorKind::InvalidInput, std::string(kWho) + ": Y[" + std::to_string(n) + "][" +
                                                     std::to_string(o) + "][" + std::to_string(ho) + "][" +
                                                     std::to_string(wo) + "] = " + std::to_string(acc) +
                                                     " does not fit int32");
          Y[((n * g.O + o) * Ho + ho) * Wo + wo] = static_cast<int32_t>(acc);
        }
      }
    }
  }
  return Y;
}

}  // namespace apnn

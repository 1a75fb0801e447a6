// The obvious triple loop: the reference that shares no code path with the bit planes.
#include "apnn/reference.h"
#include "reference/checks.h"

namespace apnn {

std::vector<int32_t> apmm_reference_direct(const int16_t* W, const int16_t* X, int64_t M, int64_t N, int64_t K) {
  constexpr const char* kWho = "apmm_reference_direct";
  reference::check_sizes(kWho, M, N, K);
  std::vector<int32_t> Y(static_cast<size_t>(M * N));
  for (int64_t m = 0; m < M; ++m) {
    const int16_t* w = W + m * K;
    for (int64_t n = 0; n < N; ++n) {
      const int16_t* x = X + n * K;
      int64_t acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += int64_t{w[k]} * x[k];
      Y[m * N + n] = reference::narrow_result(kWho, acc, m, n);
    }
  }
  return Y;
}

}  // namespace apnn

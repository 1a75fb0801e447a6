// Bit-serial APMM, step for step what the GPU kernels compute:
//   Y = sum_{s,t} alpha_s gamma_t P_st + beta_w SX[n] + beta_x SW[m] + K beta_w beta_x
// with P_st[m][n] = popc(W_s[m] & X_t[n]), SW[m] = sum_s alpha_s popc(W_s[m]) and
// SX[n] = sum_t gamma_t popc(X_t[n]), which expands sum_k (sum_s alpha_s w_sk + beta_w)(sum_t gamma_t x_tk + beta_x).
#include "apnn/reference.h"
#include "reference/bit_planes.h"
#include "reference/checks.h"

namespace apnn {

namespace {

int64_t popc_and(const uint64_t* a, const uint64_t* b, int64_t words) {
  int64_t sum = 0;
  for (int64_t i = 0; i < words; ++i) sum += __builtin_popcountll(a[i] & b[i]);
  return sum;
}

int64_t popc(const uint64_t* a, int64_t words) {
  int64_t sum = 0;
  for (int64_t i = 0; i < words; ++i) sum += __builtin_popcountll(a[i]);
  return sum;
}

// sum_s alpha_s popc(plane_s[r]) for every row r.
std::vector<int64_t> row_sums(const OperandFormat& f, const reference::BitPlanes& planes, int64_t rows) {
  std::vector<int64_t> sums(static_cast<size_t>(rows), 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int s = 0; s < f.bits; ++s) sums[r] += f.plane_weight(s) * popc(planes.row(s, r), planes.words_per_row());
  return sums;
}

}  // namespace

std::vector<int32_t> apmm_reference_bitserial(const OperandFormat& w, const OperandFormat& x, const int16_t* W,
                                              const int16_t* X, int64_t M, int64_t N, int64_t K) {
  constexpr const char* kWho = "apmm_reference_bitserial";
  reference::check_format(kWho, w);
  reference::check_format(kWho, x);
  reference::check_sizes(kWho, M, N, K);
  const reference::BitPlanes Wp(w, W, M, K, kWho, "W");
  const reference::BitPlanes Xp(x, X, N, K, kWho, "X");
  const std::vector<int64_t> SW = row_sums(w, Wp, M);
  const std::vector<int64_t> SX = row_sums(x, Xp, N);

  std::vector<int64_t> weight(static_cast<size_t>(w.bits * x.bits));  // alpha_s * gamma_t
  for (int s = 0; s < w.bits; ++s)
    for (int t = 0; t < x.bits; ++t) weight[s * x.bits + t] = w.plane_weight(s) * x.plane_weight(t);
  const int64_t words = Wp.words_per_row();
  const int64_t constant = K * w.offset() * x.offset();

  std::vector<int32_t> Y(static_cast<size_t>(M * N));
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      int64_t acc = 0;
      for (int s = 0; s < w.bits; ++s)
        for (int t = 0; t < x.bits; ++t) acc += weight[s * x.bits + t] * popc_and(Wp.row(s, m), Xp.row(t, n), words);
      acc += w.offset() * SX[n] + x.offset() * SW[m] + constant;
      Y[m * N + n] = reference::narrow_result(kWho, acc, m, n);
    }
  }
  return Y;
}

}  // namespace apnn

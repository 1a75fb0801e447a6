#include "engine/quantize_thresholds.h"

#include <algorithm>
#include <cstdlib>
#include <limits>

#include "apnn/epilogue_reference.h"
#include "apnn/error.h"

namespace apnn {

int quantize_threshold_words(const Epilogue& e) {
  const EpilogueOp* q = e.quantize();
  if (!q) throw Error(ErrorKind::InvalidInput, "quantize thresholds: the chain has no quantize op");
  return 1 << q->out.bits;
}

int quantize_level(const EpilogueOp& q, int16_t value) {
  // pm1 values step by 2 (odd integers), the others by 1.
  return static_cast<int>((value - q.out.min_value()) / (q.out.enc == Encoding::Pm1 ? 2 : 1));
}

std::vector<int32_t> quantize_thresholds(const Epilogue& e, const EpilogueParams& p, int64_t channels) {
  if (!e.quantize() || e.pool())
    throw Error(ErrorKind::InvalidInput, "quantize thresholds: the chain needs a quantize op and no pool");
  check_epilogue_params(e, p, channels);
  const EpilogueOp& q = *e.quantize();
  const int words = quantize_threshold_words(e);
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min(), kMax = std::numeric_limits<int32_t>::max();
  std::vector<int32_t> table(static_cast<size_t>(channels * words), kMax);
  for (int64_t o = 0; o < channels; ++o) {
    auto level = [&](int32_t y) { return quantize_level(q, quantized_element(e, p, y, o)); };
    const int base = level(kMin), top = level(kMax);
    const int steps = std::abs(top - base);
    int32_t* t = table.data() + o * words;
    for (int k = 1; k <= steps; ++k) {
      // The smallest y whose level is k steps from base: level(lo) is fewer, level(hi) enough.
      int64_t lo = kMin, hi = kMax;
      while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        (std::abs(level(static_cast<int32_t>(mid)) - base) >= k ? hi : lo) = mid;
      }
      t[k - 1] = static_cast<int32_t>(hi);
    }
    t[words - 1] = base | steps << 8 | (top < base ? 1 << 16 : 0);
  }
  return table;
}

int threshold_level(const int32_t* channel, int words, int32_t y) {
  const int32_t header = channel[words - 1];
  const int base = header & 0xff, steps = (header >> 8) & 0xff;
  int count = 0;
  for (int k = 0; k < words - 1; ++k) count += y >= channel[k];
  count = std::min(count, steps);
  return (header >> 16) ? base - count : base + count;
}

}  // namespace apnn

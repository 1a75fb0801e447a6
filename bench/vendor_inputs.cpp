#include "bench/vendor_inputs.h"

#include <random>

#include "engine/input_sets.h"

namespace apnn::bench {

size_t element_bytes(Element e) { return e == Element::Fp16 ? 2 : 1; }

std::vector<uint8_t> draw_for_sets(Element e, size_t count, uint32_t seed) {
  const size_t n = count + kMaxInputSets * kInputSetShift;
  std::mt19937 rng(seed);
  std::vector<uint8_t> b(n * element_bytes(e));
  for (size_t i = 0; i < n; ++i) {
    const uint32_t r = rng();
    switch (e) {
      case Element::Int8: b[i] = static_cast<uint8_t>(static_cast<int8_t>((r % 127 + 1) * ((r >> 8) & 1 ? 1 : -1))); break;
      case Element::Fp8E4M3: b[i] = static_cast<uint8_t>(((r & 1u) << 7) | (6u << 3) | ((r >> 1) & 7u)); break;
      case Element::Fp16: {
        const uint16_t h = static_cast<uint16_t>(((r & 1u) << 15) | 0x3800u | ((r >> 1) & 0x3ffu));
        b[2 * i] = static_cast<uint8_t>(h & 0xff);
        b[2 * i + 1] = static_cast<uint8_t>(h >> 8);
        break;
      }
    }
  }
  return b;
}

std::vector<DeviceBuffer> upload_sets(const std::vector<uint8_t>& draw, Element e, size_t count, int sets) {
  const size_t eb = element_bytes(e);
  std::vector<DeviceBuffer> out;
  for (int i = 0; i < sets; ++i) {
    out.emplace_back(count * eb);
    out.back().upload(draw.data() + static_cast<size_t>(i) * kInputSetShift * eb, count * eb);
  }
  return out;
}

}  // namespace apnn::bench

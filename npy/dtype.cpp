#include "npy/dtype.h"

#include "npy/fail.h"

namespace apnn::npy {

namespace {
constexpr bool kHostBigEndian = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__;
}

std::string IntDType::descr() const {
  const char order = size == 1 ? '|' : (big_endian ? '>' : '<');
  return std::string{order, kind} + std::to_string(size);
}

bool IntDType::fits(int64_t v) const {
  if (kind == 'b') return v == 0 || v == 1;
  if (kind == 'u') return v >= 0 && (size == 8 || v < (int64_t{1} << (8 * size)));
  if (size == 8) return true;
  const int64_t half = int64_t{1} << (8 * size - 1);
  return v >= -half && v < half;
}

uint64_t IntDType::load(const unsigned char* p) const {
  uint64_t bits = 0;
  for (int i = 0; i < size; ++i) {
    const int byte = big_endian ? i : size - 1 - i;  // most significant byte first
    bits = (bits << 8) | p[byte];
  }
  return bits;
}

void IntDType::store(int64_t v, unsigned char* p) const {
  auto bits = static_cast<uint64_t>(v);
  for (int i = 0; i < size; ++i, bits >>= 8) p[big_endian ? size - 1 - i : i] = bits & 0xff;
}

IntDType parse_int_dtype(const std::string& descr, const std::string& path) {
  // numpy always writes a byte-order character, but accepts a descr without one as native.
  std::string rest = descr;
  char order = '=';
  if (!rest.empty() && (rest[0] == '<' || rest[0] == '>' || rest[0] == '|' || rest[0] == '=')) {
    order = rest[0];
    rest.erase(0, 1);
  }
  if (rest.empty() || (rest[0] != 'b' && rest[0] != 'i' && rest[0] != 'u'))
    fail(ErrorKind::InvalidInput, path, "dtype '" + descr + "' is not an integer type");
  IntDType t;
  t.kind = rest[0];
  const std::string size = rest.substr(1);
  const bool known = t.kind == 'b' ? size == "1" : (size == "1" || size == "2" || size == "4" || size == "8");
  if (!known) fail(ErrorKind::InvalidInput, path, "dtype '" + descr + "' has an unsupported size");
  t.size = size[0] - '0';
  // '|' (byte order not applicable) and '=' (native) both mean the writer's order; numpy
  // treats them as this machine's.
  t.big_endian = order == '>' || ((order == '|' || order == '=') && kHostBigEndian);
  return t;
}

}  // namespace apnn::npy

#include <xxhash.h>

#include "apnn/cache.h"
#include "apnn/error.h"

namespace apnn {

std::string CacheKey::hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(32, '0');
  for (int i = 0; i < 16; ++i) {
    s[15 - i] = kDigits[(hi >> (4 * i)) & 15];
    s[31 - i] = kDigits[(lo >> (4 * i)) & 15];
  }
  return s;
}

CacheKey hash_key(const std::vector<std::string_view>& parts) {
  XXH3_state_t state;
  bool ok = XXH3_128bits_reset(&state) == XXH_OK;
  for (std::string_view part : parts) {
    // The length is hashed as 8 little-endian bytes so keys are the same on every host.
    unsigned char len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(uint64_t{part.size()} >> (8 * i));
    ok = ok && XXH3_128bits_update(&state, len, sizeof len) == XXH_OK &&
         XXH3_128bits_update(&state, part.data(), part.size()) == XXH_OK;
  }
  if (!ok) throw Error(ErrorKind::Cache, "hash_key: XXH3 streaming update failed");
  XXH128_hash_t h = XXH3_128bits_digest(&state);
  return CacheKey{h.high64, h.low64};
}

uint64_t checksum64(const void* data, size_t size) { return XXH3_64bits(data, size); }

}  // namespace apnn

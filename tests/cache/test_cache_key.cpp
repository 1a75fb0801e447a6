// Cache keys, checksums and the entry file format (golden bytes catch accidental changes).
#include <doctest/doctest.h>

#include "apnn/cache.h"
#include "cache/cache_test_util.h"

using apnn::CacheKey;
using apnn::hash_key;
using namespace apnn_test;

TEST_CASE("hash_key is deterministic and changes with every part") {
  const CacheKey k = hash_key({"spec", "options", "sm_90a"});
  CHECK(k == hash_key({"spec", "options", "sm_90a"}));
  CHECK(k != hash_key({"spec!", "options", "sm_90a"}));
  CHECK(k != hash_key({"spec", "option", "sm_90a"}));
  CHECK(k != hash_key({"spec", "options", "sm_80"}));
  CHECK(k != hash_key({"spec", "options"}));
  CHECK(k != hash_key({"spec", "options", "sm_90a", ""}));
}

TEST_CASE("hash_key prefixes each part with its length") {
  CHECK(hash_key({"ab", "c"}) != hash_key({"a", "bc"}));
  CHECK(hash_key({"abc"}) != hash_key({"ab", "c"}));
  CHECK(hash_key({"", "a"}) != hash_key({"a", ""}));
}

TEST_CASE("hash_key values are stable (golden)") {
  CHECK(hash_key({}).hex() == "99aa06d3014798d86001c324468d497f");  // XXH3-128 of nothing
  CHECK(hash_key({"apnn", "sm_90a"}).hex() == "35be104848935dd5940937cc356e2897");
}

TEST_CASE("CacheKey::hex is 32 lowercase hex digits, hi first") {
  CHECK(CacheKey{0x0123456789abcdefULL, 0xfedcba9876543210ULL}.hex() == "0123456789abcdeffedcba9876543210");
  CHECK(CacheKey{}.hex() == std::string(32, '0'));
  const std::string h = hash_key({"x"}).hex();
  CHECK(h.size() == 32);
  CHECK(h.find_first_not_of("0123456789abcdef") == std::string::npos);
}

TEST_CASE("checksum64 is XXH3-64") {
  CHECK(apnn::checksum64("xyz", 3) == 0x6276d2656f411f1fULL);
  CHECK(apnn::checksum64("xyz", 3) != apnn::checksum64("xyZ", 3));
}

TEST_CASE("entry file format is stable (golden bytes)") {
  TempDir tmp;
  apnn::DiskCache cache(tmp.path(), 1 << 20);
  const CacheKey key{0x0123456789abcdefULL, 0xfedcba9876543210ULL};
  cache.store("sm_90a", key, bytes_of("xyz"), "lbl");
  const std::string expected = std::string("APNNCACH") +
                               std::string("\x01\0\0\0", 4) +                          // version
                               std::string("\x03\0\0\0", 4) +                          // label length
                               std::string("\xef\xcd\xab\x89\x67\x45\x23\x01", 8) +    // key.hi
                               std::string("\x10\x32\x54\x76\x98\xba\xdc\xfe", 8) +    // key.lo
                               std::string("\x03\0\0\0\0\0\0\0", 8) +                  // payload size
                               std::string("\x1f\x1f\x41\x6f\x65\xd2\x76\x62", 8) +    // XXH3-64("xyz")
                               "lbl" + "xyz";
  CHECK(read_text(entry_path(tmp.path(), "sm_90a", key)) == expected);
}

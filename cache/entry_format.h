// Byte layout and file naming of one cache entry (format documented in include/apnn/cache.h).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "apnn/cache.h"

namespace apnn::cache_format {

inline constexpr uint32_t kVersion = 1;
inline constexpr size_t kHeaderBytes = 48;
inline constexpr std::string_view kEntrySuffix = ".apnnc";

std::string entry_file_name(const CacheKey& key);  // <keyhex>.apnnc
// The key named by an entry file name; nullopt for any other file (temp, lock, foreign).
std::optional<CacheKey> parse_entry_file_name(std::string_view name);

std::vector<char> encode(const CacheKey& key, std::string_view label, const std::vector<char>& payload);

struct Decoded {
  std::string label;
  size_t payload_offset = 0;
  uint64_t payload_bytes = 0;
};
// Checks magic, version, key, exact size and payload checksum. On failure returns nullopt and
// sets *why to a short reason.
std::optional<Decoded> decode(const std::vector<char>& file, const CacheKey& expected, std::string* why);

}  // namespace apnn::cache_format

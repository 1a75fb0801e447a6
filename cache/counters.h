// CacheCounters as persisted in <root>/counters.json.
#pragma once
#include <filesystem>

#include "apnn/cache.h"

namespace apnn::cache_counters {

bool is_zero(const CacheCounters& c);
// The counters in file: zeros if it does not exist; zeros and one warning if it is unreadable
// or corrupt (the next flush rewrites it).
CacheCounters read_file(const std::filesystem::path& file);

}  // namespace apnn::cache_counters

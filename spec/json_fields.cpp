#include "spec/json_fields.h"

#include <fmt/format.h>

#include "apnn/error.h"

namespace apnn::spec_json {

void fail(std::string_view origin, const std::string& msg) {
  throw Error(ErrorKind::InvalidSpec, fmt::format("{}: {}", origin, msg));
}

int get_int(const nlohmann::json& obj, const char* key, const std::string& field, int lo, int hi, std::string_view origin) {
  if (!obj.contains(key)) fail(origin, fmt::format("missing field '{}' (an integer in {}..{})", field, lo, hi));
  const nlohmann::json& v = obj.at(key);
  if (!v.is_number_integer())
    fail(origin, fmt::format("field '{}' must be an integer in {}..{}, got {}", field, lo, hi, v.dump()));
  // A uint64 above INT64_MAX would wrap as long long: quote the value as written.
  const bool huge = v.is_number_unsigned() && v.get<unsigned long long>() > static_cast<unsigned long long>(hi);
  const long long n = huge ? hi + 1LL : v.get<long long>();
  if (n < lo || n > hi) fail(origin, fmt::format("field '{}' must be an integer in {}..{}, got {}", field, lo, hi, v.dump()));
  return static_cast<int>(n);
}

}  // namespace apnn::spec_json

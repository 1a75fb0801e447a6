// Reading fields of a spec's JSON with errors that name the field (ErrorKind::InvalidSpec,
// prefixed by `origin`): shared by the spec and epilogue parsers.
#pragma once
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace apnn::spec_json {

[[noreturn]] void fail(std::string_view origin, const std::string& msg);

// obj[key], an integer in lo..hi; `field` is how messages name it ("tile.bm", "epilogue[2].size").
int get_int(const nlohmann::json& obj, const char* key, const std::string& field, int lo, int hi, std::string_view origin);

}  // namespace apnn::spec_json

// Internal helpers of epilogue chains shared by the spec parser, the generator and the
// references: parsing, the canonical JSON, an identity string and the value types.
#pragma once
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "apnn/epilogue.h"

namespace apnn {

// Throws Error(InvalidSpec) naming the element ("epilogue[2].size") and the rule it breaks.
Epilogue parse_epilogue(const nlohmann::json& j, bool conv, std::string_view origin);
nlohmann::json to_json(const Epilogue& e);
std::string epilogue_id(const Epilogue& e);

// Whether the value is float32 (else int32) where it is staged for pooling (after the ops
// before pool), after pooling, and at the end of the chain (before any quantize).
struct EpilogueTypes {
  bool staged_float = false, pooled_float = false, final_float = false;
};
EpilogueTypes epilogue_types(const Epilogue& e);

// Whether the kernel quantizes with per-channel accumulator thresholds (engine/
// quantize_thresholds.h) rather than the float ops: chains with quantize and no pool, up to
// 3 bits (2^q - 1 integer compares an output; at 4 bits and more the float ops cost less).
bool quantize_by_thresholds(const Epilogue& e);

}  // namespace apnn

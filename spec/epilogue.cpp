// Parsing, validation and the value types of fused epilogue chains (include/apnn/epilogue.h).
#include "spec/epilogue.h"

#include <cmath>

#include <fmt/format.h>

#include "apnn/error.h"
#include "spec/json_fields.h"

namespace apnn {

namespace {

using nlohmann::json;

using spec_json::fail;

// The op's fields other than "op": unknown ones are errors naming the element.
void reject_unknown(const json& op, std::initializer_list<const char*> allowed, const std::string& where,
                    std::string_view origin) {
  for (auto it = op.begin(); it != op.end(); ++it) {
    if (it.key() == "op") continue;
    bool known = false;
    for (const char* a : allowed) known = known || it.key() == a;
    if (!known) {
      std::string list;
      for (const char* a : allowed) list += fmt::format("{}{}", list.empty() ? "" : ", ", a);
      fail(origin, fmt::format("unknown field '{}.{}' ({})", where, it.key(),
                               list.empty() ? "this op takes no fields" : "allowed: " + list));
    }
  }
}

// op[key] as an integer in lo..hi, named "<where>.<key>" in messages.
int get_int(const json& op, const char* key, const std::string& where, int lo, int hi, std::string_view origin) {
  return spec_json::get_int(op, key, fmt::format("{}.{}", where, key), lo, hi, origin);
}

std::string get_choice(const json& op, const char* key, const std::string& where, std::initializer_list<const char*> allowed,
                       const char* dflt, std::string_view origin) {
  const std::string field = fmt::format("{}.{}", where, key);
  std::string list;
  for (const char* a : allowed) list += fmt::format("{}\"{}\"", list.empty() ? "" : ", ", a);
  if (!op.contains(key)) {
    if (dflt) return dflt;
    fail(origin, fmt::format("missing field '{}' (one of {})", field, list));
  }
  const json& v = op.at(key);
  if (v.is_string())
    for (const char* a : allowed)
      if (v.get<std::string>() == a) return a;
  fail(origin, fmt::format("field '{}' must be one of {}, got {}", field, list, v.dump()));
}

EpilogueOp parse_op(const json& j, const std::string& where, std::string_view origin) {
  if (!j.is_object())
    fail(origin, fmt::format("'{}' must be an object {{\"op\": ...}}, got {}", where, j.dump()));
  const std::string kind = get_choice(j, "op", where, {"scale_bias", "relu", "pool", "quantize"}, nullptr, origin);
  EpilogueOp op;
  if (kind == "scale_bias") {
    op.kind = EpilogueOpKind::ScaleBias;
    reject_unknown(j, {}, where, origin);
  } else if (kind == "relu") {
    op.kind = EpilogueOpKind::Relu;
    reject_unknown(j, {}, where, origin);
  } else if (kind == "pool") {
    op.kind = EpilogueOpKind::Pool;
    reject_unknown(j, {"kind", "size", "stride"}, where, origin);
    op.pool = get_choice(j, "kind", where, {"max", "avg"}, nullptr, origin) == "max" ? PoolKind::Max : PoolKind::Avg;
    op.size = get_int(j, "size", where, 2, 3, origin);
    op.stride = j.contains("stride") ? get_int(j, "stride", where, 1, op.size, origin) : op.size;
  } else {
    op.kind = EpilogueOpKind::Quantize;
    reject_unknown(j, {"bits", "enc", "scale"}, where, origin);
    op.out.bits = get_int(j, "bits", where, 1, kMaxBits, origin);
    parse_encoding(get_choice(j, "enc", where, {"unsigned", "pm1", "signed"}, nullptr, origin), &op.out.enc);
    op.scale = get_choice(j, "scale", where, {"per_tensor", "per_channel"}, "per_tensor", origin) == "per_tensor"
                   ? QuantScale::PerTensor
                   : QuantScale::PerChannel;
  }
  return op;
}

}  // namespace

const char* epilogue_op_name(EpilogueOpKind k) {
  switch (k) {
    case EpilogueOpKind::ScaleBias: return "scale_bias";
    case EpilogueOpKind::Relu: return "relu";
    case EpilogueOpKind::Pool: return "pool";
    case EpilogueOpKind::Quantize: return "quantize";
  }
  return "?";
}

Epilogue parse_epilogue(const json& j, bool conv, std::string_view origin) {
  if (!j.is_array()) fail(origin, fmt::format("field 'epilogue' must be an array of ops, got {}", j.dump()));
  Epilogue e;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string where = fmt::format("epilogue[{}]", i);
    const EpilogueOp op = parse_op(j[i], where, origin);
    for (size_t k = 0; k < e.ops.size(); ++k)
      if (e.ops[k].kind == op.kind)
        fail(origin, fmt::format("{}: '{}' appears twice (also epilogue[{}]); each op may appear once", where,
                                 epilogue_op_name(op.kind), k));
    if (!e.ops.empty() && e.ops.back().kind == EpilogueOpKind::Quantize)
      fail(origin, fmt::format("{}: '{}' follows 'quantize'; quantize must be the last op of the chain", where,
                               epilogue_op_name(op.kind)));
    if (op.kind == EpilogueOpKind::Pool && !conv)
      fail(origin, fmt::format("{}: 'pool' needs op \"apconv\" (an apmm output has no spatial window)", where));
    e.ops.push_back(op);
  }
  return e;
}

json to_json(const Epilogue& e) {
  json a = json::array();
  for (const EpilogueOp& op : e.ops) {
    json j = {{"op", epilogue_op_name(op.kind)}};
    if (op.kind == EpilogueOpKind::Pool) {
      j["kind"] = op.pool == PoolKind::Max ? "max" : "avg";
      j["size"] = op.size;
      j["stride"] = op.stride;
    } else if (op.kind == EpilogueOpKind::Quantize) {
      j["bits"] = op.out.bits;
      j["enc"] = encoding_name(op.out.enc);
      j["scale"] = op.scale == QuantScale::PerTensor ? "per_tensor" : "per_channel";
    }
    a.push_back(j);
  }
  return a;
}

std::string epilogue_id(const Epilogue& e) {
  std::string id = e.int16_out ? "i16;" : "";
  for (const EpilogueOp& op : e.ops)
    id += fmt::format("{}.{}.{}.{}.{}.{}.{};", static_cast<int>(op.kind), static_cast<int>(op.pool), op.size, op.stride,
                      op.out.bits, static_cast<int>(op.out.enc), static_cast<int>(op.scale));
  return id;
}

EpilogueTypes epilogue_types(const Epilogue& e) {
  EpilogueTypes t;
  bool is_float = false, before_pool = true;
  for (const EpilogueOp& op : e.ops) {
    if (op.kind == EpilogueOpKind::ScaleBias) is_float = true;
    if (op.kind == EpilogueOpKind::Pool) {
      t.staged_float = is_float;
      before_pool = false;
      if (op.pool == PoolKind::Avg) is_float = true;
      t.pooled_float = is_float;
    }
  }
  if (before_pool) t.staged_float = t.pooled_float = is_float;
  t.final_float = is_float;
  return t;
}

OutputType Epilogue::output_type() const {
  if (quantize()) return OutputType::Packed;
  if (int16_out && ops.empty()) return OutputType::Int16;  // with a chain, refused (rules::output_error)
  return epilogue_types(*this).final_float ? OutputType::Float32 : OutputType::Int32;
}

void check_epilogue_params(const Epilogue& e, const EpilogueParams& p, int64_t channels) {
  auto check = [&](const char* name, const std::vector<float>& v, bool wanted, int64_t length, const char* what,
                   bool positive) {
    if (!wanted) {
      if (!v.empty())
        throw Error(ErrorKind::InvalidInput,
                    fmt::format("epilogue parameter '{}' was given but the chain has no {}", name, what));
      return;
    }
    if (static_cast<int64_t>(v.size()) != length)
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("epilogue parameter '{}' needs {} value{} ({}), got {}", name, length, length == 1 ? "" : "s",
                              length == 1 ? "per tensor" : "one per output channel", v.size()));
    for (size_t i = 0; i < v.size(); ++i) {
      if (!std::isfinite(v[i]))
        throw Error(ErrorKind::InvalidInput, fmt::format("epilogue parameter '{}'[{}] is {}: it must be finite", name, i, v[i]));
      if (positive && !(v[i] > 0))
        throw Error(ErrorKind::InvalidInput, fmt::format("epilogue parameter '{}'[{}] is {}: it must be > 0", name, i, v[i]));
    }
  };
  const EpilogueOp* q = e.quantize();
  const int64_t q_len = q && q->scale == QuantScale::PerChannel ? channels : 1;
  check("scale", p.scale, e.has(EpilogueOpKind::ScaleBias), channels, "scale_bias op", false);
  check("bias", p.bias, e.has(EpilogueOpKind::ScaleBias), channels, "scale_bias op", false);
  check("q_scale", p.q_scale, q != nullptr, q_len, "quantize op", true);
  check("q_zero", p.q_zero, q != nullptr, q_len, "quantize op", false);
}

bool quantize_by_thresholds(const Epilogue& e) {
  const EpilogueOp* q = e.quantize();
  return q && !e.pool() && q->out.bits <= 3;
}

}  // namespace apnn

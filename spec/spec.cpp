#include "apnn/spec.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "apnn/error.h"
#include "spec/epilogue.h"
#include "spec/json_fields.h"
#include "spec/kernel_rules.h"

namespace apnn {

namespace {

using nlohmann::json;

using spec_json::fail;
using spec_json::get_int;

void reject_unknown(const json& obj, std::initializer_list<const char*> allowed, std::string_view where,
                    std::string_view origin) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool known = false;
    for (const char* a : allowed) known = known || it.key() == a;
    if (!known) fail(origin, fmt::format("unknown field '{}{}' (allowed: {})", where, it.key(), fmt::join(allowed, ", ")));
  }
}

Encoding get_encoding(const json& obj, const char* key, std::string_view origin) {
  if (!obj.contains(key)) fail(origin, fmt::format("missing field '{}' (one of unsigned, pm1, signed)", key));
  const json& v = obj.at(key);
  Encoding e;
  if (!v.is_string() || !parse_encoding(v.get<std::string>(), &e))
    fail(origin, fmt::format("field '{}' must be one of \"unsigned\", \"pm1\", \"signed\", got {}", key, v.dump()));
  return e;
}

Tile parse_tile(const json& t, const OperandFormat& w, const OperandFormat& x, std::string_view origin) {
  if (!t.is_object()) fail(origin, fmt::format("field 'tile' must be an object {{\"bm\", \"bn\", \"bk\"}}, got {}", t.dump()));
  reject_unknown(t, {"bm", "bn", "bk", "stages", "warps_m", "warps_n", "cluster", "core"}, "tile.", origin);
  Tile tile;
  if (t.contains("core")) {
    const json& c = t.at("core");
    if (!c.is_string() || c.get<std::string>() != "halo")
      fail(origin, fmt::format("field 'tile.core' must be \"halo\" (the APConv halo core), got {}", c.dump()));
    tile.halo = true;
  }
  tile.bm = get_int(t, "bm", "tile.bm", 1, 1 << 20, origin);
  tile.bn = get_int(t, "bn", "tile.bn", 1, 1 << 20, origin);
  tile.bk = get_int(t, "bk", "tile.bk", 1, 1 << 20, origin);
  if (t.contains("stages")) tile.stages = get_int(t, "stages", "tile.stages", 2, 8, origin);
  if (t.contains("cluster")) tile.cluster = get_int(t, "cluster", "tile.cluster", 1, 8, origin);
  const bool has_wm = t.contains("warps_m"), has_wn = t.contains("warps_n");
  if (has_wm != has_wn) fail(origin, "fields 'tile.warps_m' and 'tile.warps_n' must be given together");
  if (has_wm) {
    tile.warps_m = get_int(t, "warps_m", "tile.warps_m", 1, 16, origin);
    tile.warps_n = get_int(t, "warps_n", "tile.warps_n", 1, 16, origin);
  } else if (tile.halo) {
    tile.warps_m = 8;  // the halo core's two consumer warpgroups
    tile.warps_n = 1;
  } else if (tile.cluster > 1 && rules::choose_wgmma_warps(&tile, w, x)) {
    // The TMA core's warps are warpgroups: chosen by the wgmma rule, not choose_warps.
  } else {
    // No warp grid fits: report what no number of warps can fix (a field's value, shared
    // memory) before what more warps would (registers: the largest grid's message).
    if (!rules::choose_warps(&tile, w, x)) {
      Tile probe = tile;
      probe.warps_m = 1;
      probe.warps_n = 1;
      std::string why = rules::check_tile(probe, w, x);
      if (why.find("accumulator") == std::string::npos) fail(origin, why.empty() ? "tile: no warp grid fits this tile" : why);
      if (const int smem = rules::shared_bytes(probe, w, x); smem > rules::kMaxSharedBytes)
        fail(origin, fmt::format("tile needs {} bytes of shared memory for w{}a{} (stages*(p*bm+q*bn)*bk/8), limit {}: use "
                                 "a smaller bk, tile or fewer stages",
                                 smem, w.bits, x.bits, rules::kMaxSharedBytes));
      probe.warps_m = std::min(8, std::max(1, probe.bm / 16));
      probe.warps_n = std::min(512 / 32 / probe.warps_m, std::max(1, probe.bn / 8));
      why = rules::check_tile(probe, w, x);
      fail(origin, why.empty() ? "tile: no warp grid fits this tile" : why);
    }
  }
  if (std::string why = rules::check_tile(tile, w, x); !why.empty()) fail(origin, why);
  return tile;
}

// [a, b] with each in lo..hi: kernel, stride and pad of apconv.
void get_pair(const json& obj, const char* key, int lo, int hi, int* a, int* b, std::string_view origin) {
  const json& v = obj.at(key);
  const std::string want = fmt::format("an array of 2 integers in {}..{}", lo, hi);
  if (!v.is_array() || v.size() != 2) fail(origin, fmt::format("field '{}' must be {}, got {}", key, want, v.dump()));
  for (int i = 0; i < 2; ++i) {
    const bool huge = v[i].is_number_unsigned() && v[i].get<unsigned long long>() > static_cast<unsigned long long>(hi);
    if (!v[i].is_number_integer() || huge || v[i].get<long long>() < lo || v[i].get<long long>() > hi)
      fail(origin, fmt::format("field '{}[{}]' must be an integer in {}..{}, got {}", key, i, lo, hi, v[i].dump()));
  }
  *a = v[0].get<int>();
  *b = v[1].get<int>();
}

ConvParams parse_conv(const json& j, std::string_view origin) {
  ConvParams c;
  // 1..11: AlexNet's first layer is 11x11/4.
  if (!j.contains("kernel")) fail(origin, "missing field 'kernel' (apconv: an array of 2 integers in 1..11)");
  get_pair(j, "kernel", 1, 11, &c.kh, &c.kw, origin);
  if (j.contains("stride")) get_pair(j, "stride", 1, 4, &c.sh, &c.sw, origin);
  if (j.contains("pad")) get_pair(j, "pad", 0, 3, &c.ph, &c.pw, origin);
  return c;
}

// Whether the plain output's element is "int16" rather than "int32" (the default); what the
// spec then needs is rules::output_error's, and the launch checks the reduction's length.
bool parse_int16_output(const json& j, std::string_view origin) {
  const json& v = j.at("output");
  if (!v.is_string() || (v != "int32" && v != "int16"))
    fail(origin, fmt::format("field 'output' must be \"int32\" or \"int16\", got {}", v.dump()));
  return v == "int16";
}

}  // namespace

const char* op_name(Op op) {
  switch (op) {
    case Op::Apmm: return "apmm";
    case Op::Apconv: return "apconv";
  }
  return "?";
}

KernelSpec parse_spec(const json& j, std::string_view origin) {
  if (!j.is_object()) fail(origin, fmt::format("a kernel spec must be a JSON object, got {}", j.type_name()));
  KernelSpec s;
  if (!j.contains("op")) fail(origin, "missing field 'op' (one of \"apmm\", \"apconv\")");
  if (j.at("op") == "apmm") {
    s.op = Op::Apmm;
    for (const char* conv_only : {"kernel", "stride", "pad"})
      if (j.contains(conv_only)) fail(origin, fmt::format("field '{}' belongs to op \"apconv\", not \"apmm\"", conv_only));
    reject_unknown(j, {"op", "w_bits", "w_enc", "x_bits", "x_enc", "tile", "epilogue", "output"}, "", origin);
  } else if (j.at("op") == "apconv") {
    s.op = Op::Apconv;
    reject_unknown(j, {"op", "w_bits", "w_enc", "x_bits", "x_enc", "kernel", "stride", "pad", "tile", "epilogue", "output"},
                   "", origin);
  } else {
    fail(origin, fmt::format("field 'op' must be one of \"apmm\", \"apconv\", got {}", j.at("op").dump()));
  }
  s.w.bits = get_int(j, "w_bits", "w_bits", 1, kMaxBits, origin);
  s.w.enc = get_encoding(j, "w_enc", origin);
  s.x.bits = get_int(j, "x_bits", "x_bits", 1, kMaxBits, origin);
  s.x.enc = get_encoding(j, "x_enc", origin);
  if (s.op == Op::Apconv) s.conv = parse_conv(j, origin);
  if (j.contains("epilogue")) s.epilogue = parse_epilogue(j.at("epilogue"), s.op == Op::Apconv, origin);
  if (j.contains("output")) s.epilogue.int16_out = parse_int16_output(j, origin);
  if (std::string why = rules::output_error(s); !why.empty()) fail(origin, why);
  if (j.contains("tile")) {
    s.tile = parse_tile(j.at("tile"), s.w, s.x, origin);
    if (std::string why = rules::check_kernel_tile(*s.tile, s); !why.empty()) fail(origin, why);
  }
  return s;
}

KernelSpec parse_spec_text(std::string_view text, std::string_view origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    // nlohmann's message names the byte offset: enough to find the mistake.
    std::string what = e.what();
    if (auto p = what.find("parse error"); p != std::string::npos) what = what.substr(p);
    fail(origin, fmt::format("malformed JSON: {}", what));
  }
  return parse_spec(j, origin);
}

KernelSpec load_spec_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::Io, fmt::format("{}: cannot read the spec file", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_spec_text(ss.str(), path);
}

KernelSpec canonicalize(const KernelSpec& spec) {
  KernelSpec c = spec;
  if (!c.tile) c.tile = rules::default_tile(c);
  return c;
}

nlohmann::json to_json(const KernelSpec& spec) {
  json j = {{"op", op_name(spec.op)},
            {"w_bits", spec.w.bits},
            {"w_enc", encoding_name(spec.w.enc)},
            {"x_bits", spec.x.bits},
            {"x_enc", encoding_name(spec.x.enc)}};
  if (spec.op == Op::Apconv) {
    j["kernel"] = {spec.conv.kh, spec.conv.kw};
    j["stride"] = {spec.conv.sh, spec.conv.sw};
    j["pad"] = {spec.conv.ph, spec.conv.pw};
  }
  if (spec.tile) j["tile"] = tile_to_json(*spec.tile);
  // Absent when empty: specs without a chain keep the canonical form (and cache keys) they had.
  if (!spec.epilogue.empty()) j["epilogue"] = to_json(spec.epilogue);
  if (spec.epilogue.int16_out) j["output"] = "int16";  // likewise absent for int32
  return j;
}

nlohmann::json tile_to_json(const Tile& t) {
  json j = {{"bm", t.bm}, {"bn", t.bn}, {"bk", t.bk}, {"stages", t.stages}, {"warps_m", t.warps_m}, {"warps_n", t.warps_n}};
  if (t.cluster != 1) j["cluster"] = t.cluster;  // tiles without one keep their canonical form
  if (t.halo) j["core"] = "halo";
  return j;
}

Tile tile_from_json_unchecked(const nlohmann::json& t) {
  Tile tile;
  tile.bm = t.at("bm").get<int>();
  tile.bn = t.at("bn").get<int>();
  tile.bk = t.at("bk").get<int>();
  tile.stages = t.at("stages").get<int>();
  tile.warps_m = t.at("warps_m").get<int>();
  tile.warps_n = t.at("warps_n").get<int>();
  tile.cluster = t.value("cluster", 1);
  tile.halo = t.value("core", std::string()) == "halo";
  return tile;
}

std::string canonical_json(const KernelSpec& spec) { return to_json(canonicalize(spec)).dump(); }

std::string spec_id(const KernelSpec& s) {
  const Tile t = s.tile.value_or(Tile{0, 0, 0, 0, 0, 0, 0, false});
  const ConvParams& c = s.conv;
  return fmt::format("{}|{}{}|{}{}|{},{},{},{},{},{},{}{}|{},{},{},{},{},{}|{}", static_cast<int>(s.op), s.w.bits,
                     static_cast<int>(s.w.enc), s.x.bits, static_cast<int>(s.x.enc), t.bm, t.bn, t.bk, t.stages, t.warps_m,
                     t.warps_n, t.cluster, t.halo ? ",halo" : "", c.kh, c.kw, c.sh, c.sw, c.ph, c.pw, epilogue_id(s.epilogue));
}

}  // namespace apnn

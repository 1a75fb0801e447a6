// Model files (include/apnn/model.h): strict parsing, every error one line naming the file,
// the layer (1-based index and name) and the field.
#include "apnn/model.h"

#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "apnn/error.h"
#include "engine/apmm_runner.h"
#include "engine/conv_runner.h"

namespace apnn {

namespace {

using nlohmann::json;

constexpr int64_t kMaxDim = (int64_t{1} << 31) - 1;

[[noreturn]] void fail(std::string_view where, const std::string& msg) {
  throw Error(ErrorKind::InvalidSpec, fmt::format("{}: {}", where, msg));
}

void reject_unknown(const json& obj, std::initializer_list<const char*> allowed, std::string_view prefix,
                    std::string_view where) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool known = false;
    for (const char* a : allowed) known = known || it.key() == a;
    if (!known)
      fail(where, fmt::format("unknown field '{}{}' (allowed: {})", prefix, it.key(), fmt::join(allowed, ", ")));
  }
}

// A name fit for one-line messages and progress lines: non-empty, no control characters.
std::string get_name(const json& v, const char* field, std::string_view where) {
  if (!v.is_string() || v.get<std::string>().empty())
    fail(where, fmt::format("field '{}' must be a non-empty string, got {}", field, v.dump()));
  const std::string s = v.get<std::string>();
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f)
      fail(where, fmt::format("field '{}' must not contain control characters, got {}", field, v.dump()));
  return s;
}

int64_t get_dim(const json& shape, const char* key, std::string_view where) {
  const std::string field = fmt::format("shape.{}", key);
  if (!shape.contains(key)) fail(where, fmt::format("missing field '{}' (an integer in 1..{})", field, kMaxDim));
  const json& v = shape.at(key);
  const bool huge = v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(kMaxDim);
  if (!v.is_number_integer() || huge || v.get<int64_t>() < 1 || v.get<int64_t>() > kMaxDim)
    fail(where, fmt::format("field '{}' must be an integer in 1..{}, got {}", field, kMaxDim, v.dump()));
  return v.get<int64_t>();
}

// The runners' shape checks speak of CLI options ("in-channels", "M"); a model file has fields.
std::string field_names(std::string msg, bool conv) {
  const std::pair<const char*, const char*> conv_names[] = {{"in-channels", "shape.in_channels"},
                                                            {"out-channels", "shape.out_channels"}};
  const std::pair<const char*, const char*> apmm_names[] = {
      {"shape: M", "shape: shape.m"}, {"shape: N", "shape: shape.n"}, {"shape: K", "shape: shape.k"}};
  auto replace = [&](const char* from, const char* to) {
    if (auto p = msg.find(from); p != std::string::npos) msg.replace(p, std::string_view(from).size(), to);
  };
  if (conv)
    for (const auto& [from, to] : conv_names) replace(from, to);
  else
    for (const auto& [from, to] : apmm_names) replace(from, to);
  return msg;
}

ModelLayer parse_layer(const json& j, size_t index, std::string_view origin) {
  std::string where = fmt::format("{}: layer {}", origin, index + 1);
  if (!j.is_object())
    fail(where, fmt::format("a layer must be a JSON object {{\"name\", \"spec\", \"shape\"}}, got {}", j.type_name()));
  ModelLayer layer;
  // The name first, so that every later message can carry it.
  if (j.contains("name")) {
    layer.name = get_name(j.at("name"), "name", where);
    where = fmt::format("{} '{}'", where, layer.name);
  }
  reject_unknown(j, {"name", "spec", "shape"}, "", where);
  if (layer.name.empty()) fail(where, "missing field 'name' (a non-empty string, unique in the model)");

  if (!j.contains("spec")) fail(where, "missing field 'spec' (a kernel spec object, see include/apnn/spec.h)");
  if (!j.at("spec").is_object())
    fail(where, fmt::format("field 'spec' must be a kernel spec object, got {}", j.at("spec").dump()));
  layer.spec = parse_spec(j.at("spec"), where + ": spec");

  const bool conv = layer.spec.op == Op::Apconv;
  const char* fields =
      conv ? "\"batch\", \"in_channels\", \"height\", \"width\", \"out_channels\"" : "\"m\", \"n\", \"k\"";
  if (!j.contains("shape"))
    fail(where, fmt::format("missing field 'shape' (for op \"{}\": an object {{{}}})", op_name(layer.spec.op), fields));
  const json& shape = j.at("shape");
  if (!shape.is_object())
    fail(where, fmt::format("field 'shape' must be an object {{{}}} for op \"{}\", got {}", fields,
                            op_name(layer.spec.op), shape.dump()));
  const char* other_fields[] = {"batch", "in_channels", "height", "width", "out_channels", "m", "n", "k"};
  for (const char* f : other_fields) {
    const bool conv_field = std::string_view(f).size() > 1;
    if (conv_field != conv && shape.contains(f))
      fail(where, fmt::format("field 'shape.{}' belongs to op \"{}\", not \"{}\" (an {} shape is {{{}}})", f,
                              conv ? "apmm" : "apconv", op_name(layer.spec.op), op_name(layer.spec.op), fields));
  }
  try {
    if (conv) {
      reject_unknown(shape, {"batch", "in_channels", "height", "width", "out_channels"}, "shape.", where);
      layer.conv.N = get_dim(shape, "batch", where);
      layer.conv.C = get_dim(shape, "in_channels", where);
      layer.conv.H = get_dim(shape, "height", where);
      layer.conv.W = get_dim(shape, "width", where);
      layer.conv.O = get_dim(shape, "out_channels", where);
      conv_geometry(layer.spec, layer.conv);
    } else {
      reject_unknown(shape, {"m", "n", "k"}, "shape.", where);
      layer.apmm.M = get_dim(shape, "m", where);
      layer.apmm.N = get_dim(shape, "n", where);
      layer.apmm.K = get_dim(shape, "k", where);
      check_apmm_shape(layer.spec, layer.apmm);
    }
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::InvalidSpec) throw;
    fail(where, field_names(e.what(), conv));  // the runners' InvalidInput: "shape: ..."
  }
  layer.shape = shape;
  return layer;
}

}  // namespace

Model parse_model(const json& j, std::string_view origin) {
  if (!j.is_object())
    fail(origin,
         fmt::format("a model must be a JSON object {{\"model\", \"version\", \"layers\"}}, got {}", j.type_name()));
  reject_unknown(j, {"model", "version", "layers"}, "", origin);
  Model m;
  if (!j.contains("model")) fail(origin, "missing field 'model' (the model's name, a non-empty string)");
  m.name = get_name(j.at("model"), "model", origin);
  if (!j.contains("version")) fail(origin, "missing field 'version' (1)");
  if (const json& v = j.at("version"); !v.is_number_integer() || v.get<int64_t>() != 1)
    fail(origin, fmt::format("field 'version' must be 1 (the only format version), got {}", v.dump()));
  if (!j.contains("layers")) fail(origin, "missing field 'layers' (a non-empty array of layers)");
  const json& layers = j.at("layers");
  if (!layers.is_array() || layers.empty())
    fail(origin, fmt::format("field 'layers' must be a non-empty array of layers, got {}",
                             layers.is_array() ? std::string("[]") : layers.dump()));
  std::unordered_map<std::string, size_t> seen;
  for (size_t i = 0; i < layers.size(); ++i) {
    ModelLayer layer = parse_layer(layers[i], i, origin);
    if (auto [it, fresh] = seen.emplace(layer.name, i); !fresh)
      fail(fmt::format("{}: layer {} '{}'", origin, i + 1, layer.name),
           fmt::format("field 'name' duplicates layer {}'s name '{}'", it->second + 1, layer.name));
    m.layers.push_back(std::move(layer));
  }
  return m;
}

Model load_model_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(ErrorKind::Io, fmt::format("{}: cannot read the model file: it is a directory", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::Io, fmt::format("{}: cannot read the model file", path));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error(ErrorKind::Io, fmt::format("{}: cannot read the model file", path));
  json j;
  try {
    j = json::parse(ss.str());
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    if (auto p = what.find("parse error"); p != std::string::npos) what = what.substr(p);
    fail(path, fmt::format("malformed JSON: {}", what));
  }
  return parse_model(j, path);
}

}  // namespace apnn

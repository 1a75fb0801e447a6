// Model files (include/apnn/model.h): the example models in models/ parse with their real
// shapes, and every invalid file is one InvalidSpec line naming the layer and the field.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "apnn/error.h"
#include "apnn/model.h"
#include "engine/conv_runner.h"
#include "test_util.h"

namespace {

namespace fs = std::filesystem;
using apnn::Error;
using apnn::ErrorKind;
using nlohmann::json;

std::string model_path(const std::string& name) { return std::string(APNN_SOURCE_DIR) + "/models/" + name; }

const apnn::ModelLayer& layer(const apnn::Model& m, const std::string& name) {
  for (const auto& l : m.layers)
    if (l.name == name) return l;
  FAIL("no layer " << name);
  return m.layers.front();
}

json conv_layer(const std::string& name) {
  return {{"name", name},
          {"spec",
           {{"op", "apconv"},
            {"w_bits", 1},
            {"w_enc", "pm1"},
            {"x_bits", 2},
            {"x_enc", "unsigned"},
            {"kernel", {3, 3}},
            {"stride", {1, 1}},
            {"pad", {1, 1}}}},
          {"shape", {{"batch", 8}, {"in_channels", 64}, {"height", 56}, {"width", 56}, {"out_channels", 64}}}};
}

json fc_layer(const std::string& name) {
  return {{"name", name},
          {"spec", {{"op", "apmm"}, {"w_bits", 1}, {"w_enc", "pm1"}, {"x_bits", 2}, {"x_enc", "unsigned"}}},
          {"shape", {{"m", 1000}, {"n", 8}, {"k", 512}}}};
}

// A valid three-layer model: layers 1 'a' (conv), 2 'b' (conv), 3 'fc' (apmm).
json base() {
  return {{"model", "tiny"}, {"version", 1}, {"layers", {conv_layer("a"), conv_layer("b"), fc_layer("fc")}}};
}

// parse_model must fail with InvalidSpec in one line that names the file and contains every needle.
std::string error_of(const json& j, std::initializer_list<std::string> needles) {
  try {
    apnn::parse_model(j, "m.json");
  } catch (const Error& e) {
    const std::string msg = e.what();
    INFO("message: " << msg);
    CHECK(e.kind() == ErrorKind::InvalidSpec);
    CHECK(msg.rfind("m.json: ", 0) == 0);
    CHECK(msg.find('\n') == std::string::npos);
    for (const auto& n : needles) CHECK_MESSAGE(contains(msg, n), "message lacks '" << n << "'");
    return msg;
  }
  FAIL("parse_model accepted " << j.dump());
  return {};
}

}  // namespace

TEST_CASE("model: ResNet-18 w1a2 has 20 convolutions and the fc, with the real shapes") {
  const apnn::Model m = apnn::load_model_file(model_path("resnet18_w1a2.json"));
  CHECK(m.name == "resnet18_w1a2");
  REQUIRE(m.layers.size() == 21);
  size_t convs = 0;
  std::set<std::string> names;
  for (const auto& l : m.layers) {
    convs += l.spec.op == apnn::Op::Apconv;
    names.insert(l.name);
    CHECK_FALSE(l.spec.tile.has_value());  // the library chooses
    CHECK(l.spec.w.bits == 1);
    CHECK(l.spec.w.enc == apnn::Encoding::Pm1);
    CHECK(l.spec.x.enc == apnn::Encoding::Unsigned);
    CHECK(l.spec.x.bits == (l.name == "conv1" ? 8 : 2));
  }
  CHECK(convs == 20);
  CHECK(names.size() == 21);

  const auto& c1 = m.layers.front();
  CHECK(c1.name == "conv1");
  CHECK(c1.spec.conv == apnn::ConvParams{7, 7, 2, 2, 3, 3});
  CHECK(c1.conv.N == 8);
  CHECK(c1.conv.C == 3);
  CHECK(c1.conv.H == 224);
  CHECK(c1.conv.W == 224);
  CHECK(c1.conv.O == 64);
  CHECK(c1.shape == json{{"batch", 8}, {"in_channels", 3}, {"height", 224}, {"width", 224}, {"out_channels", 64}});
  CHECK(apnn::conv_geometry(c1.spec, c1.conv).Ho() == 112);

  const auto& ds = layer(m, "layer2.0.downsample");
  CHECK(ds.spec.conv == apnn::ConvParams{1, 1, 2, 2, 0, 0});
  CHECK((ds.conv.C == 64 && ds.conv.O == 128 && ds.conv.H == 56 && ds.conv.W == 56));
  const auto& l3 = layer(m, "layer3.0.conv1");
  CHECK(l3.spec.conv == apnn::ConvParams{3, 3, 2, 2, 1, 1});
  CHECK((l3.conv.C == 128 && l3.conv.O == 256 && l3.conv.H == 28));
  const auto& last = layer(m, "layer4.1.conv2");
  CHECK((last.conv.C == 512 && last.conv.O == 512 && last.conv.H == 7));
  CHECK(apnn::conv_geometry(last.spec, last.conv).Wo() == 7);

  const auto& fc = m.layers.back();
  CHECK(fc.name == "fc");
  CHECK(fc.spec.op == apnn::Op::Apmm);
  CHECK((fc.apmm.M == 1000 && fc.apmm.N == 8 && fc.apmm.K == 512));
}

TEST_CASE("model: AlexNet and the VGG-variant w1a2 parse with their real shapes") {
  const apnn::Model a = apnn::load_model_file(model_path("alexnet_w1a2.json"));
  CHECK(a.name == "alexnet_w1a2");
  REQUIRE(a.layers.size() == 8);  // 5 convolutions, 3 fully connected
  const auto& a1 = a.layers.front();
  CHECK(a1.spec.conv == apnn::ConvParams{11, 11, 4, 4, 2, 2});
  CHECK((a1.conv.C == 3 && a1.conv.O == 64 && a1.conv.H == 224 && a1.spec.x.bits == 8));
  CHECK(apnn::conv_geometry(a1.spec, a1.conv).Ho() == 55);
  CHECK((layer(a, "conv2").spec.conv == apnn::ConvParams{5, 5, 1, 1, 2, 2}));
  CHECK((layer(a, "fc6").apmm.M == 4096 && layer(a, "fc6").apmm.K == 256 * 6 * 6 && layer(a, "fc6").apmm.N == 8));
  CHECK((layer(a, "fc8").apmm.M == 1000 && layer(a, "fc8").apmm.K == 4096));

  const apnn::Model v = apnn::load_model_file(model_path("vgg_variant_w1a2.json"));
  CHECK(v.name == "vgg_variant_w1a2");
  REQUIRE(v.layers.size() == 13);  // 10 convolutions, 3 fully connected
  const auto& v1 = v.layers.front();
  CHECK(v1.spec.conv == apnn::ConvParams{7, 7, 2, 2, 3, 3});
  CHECK((v1.conv.C == 3 && v1.conv.O == 96 && v1.conv.H == 224 && v1.spec.x.bits == 8));
  CHECK((layer(v, "conv2_1").conv.C == 96 && layer(v, "conv2_1").conv.O == 256 && layer(v, "conv2_1").conv.H == 56));
  CHECK((layer(v, "conv4_3").conv.C == 512 && layer(v, "conv4_3").conv.H == 14));
  CHECK((layer(v, "fc5").apmm.K == 512 * 7 * 7 && layer(v, "fc5").apmm.M == 4096));
  CHECK((layer(v, "fc7").apmm.M == 1000 && layer(v, "fc7").apmm.N == 8));
  for (const auto* m : {&a, &v})
    for (const auto& l : m->layers) {
      CHECK_FALSE(l.spec.tile.has_value());
      CHECK(l.spec.x.bits == (&l == &m->layers.front() ? 8 : 2));
    }
}

TEST_CASE("model: the top level is strict: object, fields, version 1, non-empty layers") {
  CHECK_NOTHROW(apnn::parse_model(base(), "m.json"));
  error_of(json::array({1}), {"JSON object", "array"});
  error_of(json("resnet"), {"JSON object"});
  json j = base();
  j["note"] = "x";
  error_of(j, {"unknown field 'note'", "model, version, layers"});
  j = base();
  j.erase("model");
  error_of(j, {"missing field 'model'"});
  j = base();
  j["model"] = "";
  error_of(j, {"field 'model'"});
  j = base();
  j["version"] = 2;
  error_of(j, {"field 'version' must be 1", "got 2"});
  j = base();
  j["version"] = "1";
  error_of(j, {"field 'version'"});
  j = base();
  j.erase("version");
  error_of(j, {"missing field 'version'"});
  j = base();
  j["layers"] = json::array();
  error_of(j, {"field 'layers' must be a non-empty array"});
  j = base();
  j["layers"] = json::object();
  error_of(j, {"field 'layers'"});
  j = base();
  j.erase("layers");
  error_of(j, {"missing field 'layers'"});
}

TEST_CASE("model: layer errors name the layer (index from 1 and name) and the field") {
  json j = base();
  j["layers"][1] = 7;
  error_of(j, {"layer 2", "JSON object"});

  j = base();
  j["layers"][1].erase("name");
  error_of(j, {"layer 2", "missing field 'name'"});
  j = base();
  j["layers"][1]["name"] = 3;
  error_of(j, {"layer 2", "field 'name' must be a non-empty string"});
  j = base();
  j["layers"][1]["name"] = "";
  error_of(j, {"layer 2", "field 'name'"});
  j = base();
  j["layers"][1]["name"] = "two\nlines";
  error_of(j, {"layer 2", "field 'name'", "control"});
  j = base();
  j["layers"][2]["name"] = "a";
  error_of(j, {"layer 3 'a'", "field 'name'", "layer 1"});
  j = base();
  j["layers"][1].erase("name");
  j["layers"][1]["nam"] = "b";  // a typo is named rather than reported as a missing name
  error_of(j, {"layer 2", "unknown field 'nam'"});

  j = base();
  j["layers"][1]["epilogue"] = json::array();
  error_of(j, {"layer 2 'b'", "unknown field 'epilogue'", "name, spec, shape"});
  j = base();
  j["layers"][1].erase("spec");
  error_of(j, {"layer 2 'b'", "missing field 'spec'"});
  j = base();
  j["layers"][1]["spec"] = "w1a2";
  error_of(j, {"layer 2 'b'", "field 'spec'"});
}

TEST_CASE("model: a bad spec inside a layer is named with the layer and the spec's field") {
  json j = base();
  j["layers"][1]["spec"]["w_bits"] = 9;
  error_of(j, {"layer 2 'b'", "spec", "'w_bits'"});
  j = base();
  j["layers"][0]["spec"]["tiles"] = json::object();
  error_of(j, {"layer 1 'a'", "spec", "unknown field 'tiles'"});
  j = base();
  j["layers"][2]["spec"]["kernel"] = {3, 3};
  error_of(j, {"layer 3 'fc'", "spec", "'kernel'"});
  j = base();
  j["layers"][0]["spec"]["stride"] = {5, 1};
  error_of(j, {"layer 1 'a'", "spec", "'stride[0]'"});
  j = base();
  j["layers"][1]["spec"].erase("x_enc");
  error_of(j, {"layer 2 'b'", "spec", "missing field 'x_enc'"});
  j = base();
  j["layers"][1]["spec"]["tile"] = {{"bm", 64}, {"bn", 64}, {"bk", 100}};
  error_of(j, {"layer 2 'b'", "spec", "bk"});
}

TEST_CASE("model: shapes must be exactly the op's fields, integers >= 1, and fit the kernel") {
  json j = base();
  j["layers"][1].erase("shape");
  error_of(j, {"layer 2 'b'", "missing field 'shape'", "in_channels"});
  j = base();
  j["layers"][2].erase("shape");
  error_of(j, {"layer 3 'fc'", "missing field 'shape'", "\"m\""});
  j = base();
  j["layers"][1]["shape"] = {8, 64, 56, 56, 64};
  error_of(j, {"layer 2 'b'", "field 'shape' must be an object"});

  for (const char* f : {"batch", "in_channels", "height", "width", "out_channels"}) {
    INFO(f);
    j = base();
    j["layers"][1]["shape"].erase(f);
    error_of(j, {"layer 2 'b'", std::string("missing field 'shape.") + f + "'"});
    j = base();
    j["layers"][1]["shape"][f] = 0;
    error_of(j, {"layer 2 'b'", std::string("field 'shape.") + f + "'", "got 0"});
    j = base();
    j["layers"][1]["shape"][f] = -3;
    error_of(j, {"layer 2 'b'", std::string("field 'shape.") + f + "'", "got -3"});
    j = base();
    j["layers"][1]["shape"][f] = 2.5;
    error_of(j, {"layer 2 'b'", std::string("field 'shape.") + f + "'", "2.5"});
  }
  for (const char* f : {"m", "n", "k"}) {
    INFO(f);
    j = base();
    j["layers"][2]["shape"].erase(f);
    error_of(j, {"layer 3 'fc'", std::string("missing field 'shape.") + f + "'"});
    j = base();
    j["layers"][2]["shape"][f] = 0;
    error_of(j, {"layer 3 'fc'", std::string("field 'shape.") + f + "'", "got 0"});
    j = base();
    j["layers"][2]["shape"][f] = "8";
    error_of(j, {"layer 3 'fc'", std::string("field 'shape.") + f + "'"});
  }
  j = base();
  j["layers"][2]["shape"]["k"] = 4294967296ULL;
  error_of(j, {"layer 3 'fc'", "field 'shape.k'", "4294967296"});
  j = base();
  j["layers"][2]["shape"]["k"] = 18446744073709551615ULL;
  error_of(j, {"layer 3 'fc'", "field 'shape.k'"});

  // Extra fields, and the other op's fields.
  j = base();
  j["layers"][1]["shape"]["depth"] = 3;
  error_of(j, {"layer 2 'b'", "unknown field 'shape.depth'"});
  j = base();
  j["layers"][2]["shape"]["batch"] = 8;
  error_of(j, {"layer 3 'fc'", "'shape.batch'", "apconv"});
  j = base();
  j["layers"][1]["shape"] = {{"m", 64}, {"n", 64}, {"k", 576}};
  error_of(j, {"layer 2 'b'", "'shape.m'", "apmm"});
  j = base();
  j["layers"][2]["shape"] = {{"batch", 8}, {"in_channels", 512}, {"height", 1}, {"width", 1}, {"out_channels", 1000}};
  error_of(j, {"layer 3 'fc'", "'shape.", "apconv"});

  // The kernel must fit the padded input (conv_geometry's rule).
  j = base();
  j["layers"][1]["spec"]["kernel"] = {7, 7};
  j["layers"][1]["spec"]["pad"] = {0, 0};
  j["layers"][1]["shape"]["height"] = 5;
  error_of(j, {"layer 2 'b'", "shape", "7x7", "does not fit"});
  j = base();
  j["layers"][1]["spec"]["kernel"] = {3, 3};
  j["layers"][1]["spec"]["pad"] = {1, 1};
  j["layers"][1]["shape"]["width"] = 1;  // 1 + 2 >= 3: fits
  CHECK_NOTHROW(apnn::parse_model(j, "m.json"));
  // int32 overflow of the output is refused with the field, as the runners would.
  j = base();
  j["layers"][2]["spec"] = {{"op", "apmm"}, {"w_bits", 8}, {"w_enc", "signed"}, {"x_bits", 8}, {"x_enc", "signed"}};
  j["layers"][2]["shape"]["k"] = 2000000;
  error_of(j, {"layer 3 'fc'", "shape.k", "overflow"});
  j = base();
  j["layers"][1]["spec"]["w_bits"] = 8;
  j["layers"][1]["spec"]["w_enc"] = "signed";
  j["layers"][1]["spec"]["x_bits"] = 8;
  j["layers"][1]["shape"] = {{"batch", 1}, {"in_channels", 1000000}, {"height", 3}, {"width", 3}, {"out_channels", 8}};
  error_of(j, {"layer 2 'b'", "shape.in_channels", "overflow"});
}

TEST_CASE("model: load_model_file: unreadable files are Io, malformed JSON names the file") {
  const fs::path dir = fs::temp_directory_path() / ("apnn-model-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  try {
    apnn::load_model_file((dir / "absent.json").string());
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Io);
    CHECK(contains(e.what(), "absent.json"));
  }
  try {
    apnn::load_model_file(dir.string());
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Io);
  }
  const std::string bad = write("bad.json", "{\"model\": \"x\", ");
  try {
    apnn::load_model_file(bad);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::InvalidSpec);
    CHECK(contains(e.what(), bad + ": malformed JSON"));
  }
  json j = base();
  j["layers"][1]["shape"]["height"] = 0;
  const std::string zero = write("zero.json", j.dump(1));
  try {
    apnn::load_model_file(zero);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::InvalidSpec);
    CHECK(std::string(e.what()).rfind(zero + ": layer 2 'b': field 'shape.height'", 0) == 0);
  }
  fs::remove_all(dir);
}

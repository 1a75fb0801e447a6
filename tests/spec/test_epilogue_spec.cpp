// Fused epilogue chains in kernel specs: every illegal chain names its element and rule, legal
// chains in any allowed order, the canonical form, the tile rules a chain adds, the value types
// and the run-time parameter checks (include/apnn/epilogue.h, spec/epilogue.h).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "apnn/epilogue.h"
#include "apnn/error.h"
#include "apnn/spec.h"
#include "spec/epilogue.h"
#include "spec/kernel_rules.h"

namespace {

using apnn::Encoding;
using apnn::Epilogue;
using apnn::EpilogueOpKind;
using apnn::EpilogueParams;
using apnn::ErrorKind;
using apnn::KernelSpec;
using apnn::OutputType;
using apnn::Tile;
using nlohmann::json;

const char* const kOrigin = "layers/conv2.json";

json apmm(const json& chain) {
  json j = {{"op", "apmm"}, {"w_bits", 1}, {"w_enc", "pm1"}, {"x_bits", 2}, {"x_enc", "unsigned"}};
  if (!chain.is_null()) j["epilogue"] = chain;
  return j;
}

json apconv(const json& chain) {
  json j = {{"op", "apconv"}, {"w_bits", 1},      {"w_enc", "pm1"}, {"x_bits", 2},
            {"x_enc", "unsigned"}, {"kernel", {3, 3}}, {"pad", {1, 1}}};
  if (!chain.is_null()) j["epilogue"] = chain;
  return j;
}

const json kScaleBias = {{"op", "scale_bias"}};
const json kRelu = {{"op", "relu"}};
const json kMaxPool2 = {{"op", "pool"}, {"kind", "max"}, {"size", 2}, {"stride", 2}};
const json kQuant2 = {{"op", "quantize"}, {"bits", 2}, {"enc", "unsigned"}, {"scale", "per_tensor"}};

bool contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

std::string parse_message(const json& j) {
  try {
    apnn::parse_spec(j, kOrigin);
  } catch (const apnn::Error& e) {
    CHECK(e.kind() == ErrorKind::InvalidSpec);
    return e.what();
  }
  return "";
}

// Rejected as InvalidSpec with a one-line message that starts with the origin and names every needle.
void expect_rejected(const json& j, std::initializer_list<std::string> needles) {
  const std::string msg = parse_message(j);
  INFO("spec: " << j.dump());
  INFO("message: " << msg);
  REQUIRE_FALSE(msg.empty());
  CHECK(msg.rfind(std::string(kOrigin) + ": ", 0) == 0);
  CHECK(msg.find('\n') == std::string::npos);
  for (const auto& n : needles) CHECK_MESSAGE(contains(msg, n), "missing '" << n << "'");
}

Epilogue chain_of(const json& chain, bool conv = true) { return apnn::parse_epilogue(chain, conv, kOrigin); }

KernelSpec spec_with(const json& chain, bool conv, int wb = 1, Encoding we = Encoding::Pm1, int xb = 2,
                     Encoding xe = Encoding::Unsigned) {
  KernelSpec s;
  s.op = conv ? apnn::Op::Apconv : apnn::Op::Apmm;
  s.w = {wb, we};
  s.x = {xb, xe};
  s.epilogue = chain_of(chain, conv);
  return s;
}

Tile tile(int bm, int bn, int bk, int stages, int wm, int wn) { return Tile{bm, bn, bk, stages, wm, wn}; }

std::string params_message(const Epilogue& e, const EpilogueParams& p, int64_t channels) {
  try {
    apnn::check_epilogue_params(e, p, channels);
  } catch (const apnn::Error& err) {
    CHECK(err.kind() == ErrorKind::InvalidInput);
    return err.what();
  }
  return "";
}

}  // namespace

TEST_CASE("epilogue spec: the chain's shape and each element's op are checked, naming the element") {
  expect_rejected(apconv(json::object({{"op", "relu"}})), {"field 'epilogue'", "must be an array"});
  expect_rejected(apconv("relu"), {"field 'epilogue'", "must be an array", "\"relu\""});
  expect_rejected(apconv(json::array({kRelu, 3})), {"'epilogue[1]'", "must be an object", "got 3"});
  expect_rejected(apconv(json::array({json::array({"relu"})})), {"'epilogue[0]'", "must be an object"});
  expect_rejected(apconv(json::array({kScaleBias, json::object()})), {"missing field 'epilogue[1].op'", "\"relu\""});
  expect_rejected(apconv(json::array({{{"kind", "max"}}})), {"missing field 'epilogue[0].op'"});
  expect_rejected(apconv(json::array({{{"op", "gelu"}}})),
                  {"field 'epilogue[0].op'", "\"scale_bias\", \"relu\", \"pool\", \"quantize\"", "got \"gelu\""});
  expect_rejected(apconv(json::array({{{"op", 1}}})), {"field 'epilogue[0].op'", "got 1"});
  expect_rejected(apconv(json::array({{{"op", "RELU"}}})), {"field 'epilogue[0].op'", "got \"RELU\""});
}

TEST_CASE("epilogue spec: fields an op does not take are named with the op's allowed fields") {
  expect_rejected(apconv(json::array({{{"op", "relu"}, {"size", 2}}})),
                  {"unknown field 'epilogue[0].size'", "this op takes no fields"});
  expect_rejected(apconv(json::array({kRelu, {{"op", "scale_bias"}, {"scale", 0.5}}})),
                  {"unknown field 'epilogue[1].scale'", "this op takes no fields"});
  json quant_kind = kQuant2;
  quant_kind["kind"] = "max";
  expect_rejected(apconv(json::array({quant_kind})), {"unknown field 'epilogue[0].kind'", "allowed: bits, enc, scale"});
  json pool_bits = kMaxPool2;
  pool_bits["bits"] = 2;
  expect_rejected(apconv(json::array({kRelu, pool_bits})), {"unknown field 'epilogue[1].bits'", "allowed: kind, size, stride"});
}

TEST_CASE("epilogue spec: pool fields and where pool may appear") {
  expect_rejected(apmm(json::array({kMaxPool2})), {"epilogue[0]", "'pool' needs op \"apconv\""});
  expect_rejected(apmm(json::array({kScaleBias, kRelu, kMaxPool2})), {"epilogue[2]", "'pool' needs op \"apconv\""});
  auto pool = [](const json& fields) {
    json p = {{"op", "pool"}};
    p.update(fields);
    return apconv(json::array({kRelu, p}));
  };
  expect_rejected(pool({{"kind", "min"}, {"size", 2}}), {"field 'epilogue[1].kind'", "\"max\", \"avg\"", "got \"min\""});
  expect_rejected(pool({{"kind", "MAX"}, {"size", 2}}), {"field 'epilogue[1].kind'", "got \"MAX\""});
  expect_rejected(pool({{"size", 2}}), {"missing field 'epilogue[1].kind'", "\"max\", \"avg\""});
  expect_rejected(pool({{"kind", "max"}}), {"missing field 'epilogue[1].size'", "2..3"});
  expect_rejected(pool({{"kind", "max"}, {"size", 1}}), {"field 'epilogue[1].size'", "2..3", "got 1"});
  expect_rejected(pool({{"kind", "avg"}, {"size", 4}}), {"field 'epilogue[1].size'", "2..3", "got 4"});
  expect_rejected(pool({{"kind", "avg"}, {"size", -2}}), {"field 'epilogue[1].size'", "got -2"});
  expect_rejected(pool({{"kind", "avg"}, {"size", 2.0}}), {"field 'epilogue[1].size'", "got 2.0"});
  expect_rejected(pool({{"kind", "avg"}, {"size", "2"}}), {"field 'epilogue[1].size'", "got \"2\""});
  expect_rejected(pool({{"kind", "max"}, {"size", 18446744073709551615ULL}}),
                  {"field 'epilogue[1].size'", "got 18446744073709551615"});
  // stride: 1..size.
  expect_rejected(pool({{"kind", "max"}, {"size", 2}, {"stride", 0}}), {"field 'epilogue[1].stride'", "1..2", "got 0"});
  expect_rejected(pool({{"kind", "max"}, {"size", 2}, {"stride", 3}}), {"field 'epilogue[1].stride'", "1..2", "got 3"});
  expect_rejected(pool({{"kind", "max"}, {"size", 3}, {"stride", 4}}), {"field 'epilogue[1].stride'", "1..3", "got 4"});
  expect_rejected(pool({{"kind", "max"}, {"size", 3}, {"stride", -1}}), {"field 'epilogue[1].stride'", "got -1"});
}

TEST_CASE("epilogue spec: quantize fields") {
  auto quant = [](const json& fields) {
    json q = {{"op", "quantize"}};
    q.update(fields);
    return apmm(json::array({kScaleBias, kRelu, q}));
  };
  expect_rejected(quant({{"bits", 0}, {"enc", "unsigned"}}), {"field 'epilogue[2].bits'", "1..8", "got 0"});
  expect_rejected(quant({{"bits", 9}, {"enc", "unsigned"}}), {"field 'epilogue[2].bits'", "1..8", "got 9"});
  expect_rejected(quant({{"bits", "2"}, {"enc", "unsigned"}}), {"field 'epilogue[2].bits'", "got \"2\""});
  expect_rejected(quant({{"bits", 2.5}, {"enc", "unsigned"}}), {"field 'epilogue[2].bits'", "got 2.5"});
  expect_rejected(quant({{"bits", true}, {"enc", "unsigned"}}), {"field 'epilogue[2].bits'", "got true"});
  expect_rejected(quant({{"enc", "unsigned"}}), {"missing field 'epilogue[2].bits'", "1..8"});
  expect_rejected(quant({{"bits", 2}}), {"missing field 'epilogue[2].enc'", "\"unsigned\", \"pm1\", \"signed\""});
  expect_rejected(quant({{"bits", 2}, {"enc", "twos"}}),
                  {"field 'epilogue[2].enc'", "\"unsigned\", \"pm1\", \"signed\"", "got \"twos\""});
  expect_rejected(quant({{"bits", 2}, {"enc", 0}}), {"field 'epilogue[2].enc'", "got 0"});
  expect_rejected(quant({{"bits", 2}, {"enc", "signed"}, {"scale", "per_row"}}),
                  {"field 'epilogue[2].scale'", "\"per_tensor\", \"per_channel\"", "got \"per_row\""});
  expect_rejected(quant({{"bits", 2}, {"enc", "signed"}, {"scale", nullptr}}), {"field 'epilogue[2].scale'", "got null"});
}

TEST_CASE("epilogue spec: each op at most once, and nothing after quantize") {
  expect_rejected(apconv(json::array({kRelu, kScaleBias, kRelu})),
                  {"epilogue[2]", "'relu' appears twice", "also epilogue[0]", "each op may appear once"});
  expect_rejected(apconv(json::array({kScaleBias, kScaleBias})), {"epilogue[1]", "'scale_bias' appears twice", "epilogue[0]"});
  json avg = kMaxPool2;
  avg["kind"] = "avg";
  expect_rejected(apconv(json::array({kMaxPool2, kRelu, avg})), {"epilogue[2]", "'pool' appears twice", "epilogue[0]"});
  expect_rejected(apconv(json::array({kQuant2, kQuant2})), {"epilogue[1]", "'quantize' appears twice"});
  expect_rejected(apconv(json::array({kQuant2, kRelu})),
                  {"epilogue[1]", "'relu' follows 'quantize'", "quantize must be the last op"});
  expect_rejected(apconv(json::array({kScaleBias, kQuant2, kMaxPool2})), {"epilogue[2]", "'pool' follows 'quantize'"});
  expect_rejected(apmm(json::array({kQuant2, kScaleBias})), {"epilogue[1]", "'scale_bias' follows 'quantize'"});
}

TEST_CASE("epilogue spec: legal chains in the orders the rules allow parse to their ops") {
  struct Case {
    const char* what;
    json spec;
    std::vector<EpilogueOpKind> kinds;
  };
  using K = EpilogueOpKind;
  json avg3 = {{"op", "pool"}, {"kind", "avg"}, {"size", 3}, {"stride", 2}};
  const std::vector<Case> cases = {
      {"empty", apconv(json::array()), {}},
      {"relu then pool", apconv(json::array({kRelu, kMaxPool2})), {K::Relu, K::Pool}},
      {"pool then relu", apconv(json::array({kMaxPool2, kRelu})), {K::Pool, K::Relu}},
      {"pool then scale_bias", apconv(json::array({kMaxPool2, kScaleBias})), {K::Pool, K::ScaleBias}},
      {"relu then scale_bias", apmm(json::array({kRelu, kScaleBias})), {K::Relu, K::ScaleBias}},
      {"quantize alone", apmm(json::array({kQuant2})), {K::Quantize}},
      {"full conv chain", apconv(json::array({kScaleBias, kRelu, kMaxPool2, kQuant2})),
       {K::ScaleBias, K::Relu, K::Pool, K::Quantize}},
      {"pool first, quantize last", apconv(json::array({avg3, kRelu, kScaleBias, kQuant2})),
       {K::Pool, K::Relu, K::ScaleBias, K::Quantize}},
  };
  for (const Case& c : cases) {
    INFO(c.what << ": " << c.spec.dump());
    KernelSpec s;
    REQUIRE_NOTHROW(s = apnn::parse_spec(c.spec, kOrigin));
    REQUIRE(s.epilogue.ops.size() == c.kinds.size());
    for (size_t i = 0; i < c.kinds.size(); ++i) CHECK(s.epilogue.ops[i].kind == c.kinds[i]);
  }
  const Epilogue e = chain_of(json::array({avg3, kRelu, kScaleBias, {{"op", "quantize"}, {"bits", 3}, {"enc", "pm1"}}}));
  REQUIRE(e.pool() != nullptr);
  CHECK(e.pool()->pool == apnn::PoolKind::Avg);
  CHECK(e.pool()->size == 3);
  CHECK(e.pool()->stride == 2);
  REQUIRE(e.quantize() != nullptr);
  CHECK(e.quantize()->out.bits == 3);
  CHECK(e.quantize()->out.enc == Encoding::Pm1);
  CHECK(e.quantize()->scale == apnn::QuantScale::PerTensor);
  CHECK(e.staged());
  CHECK_FALSE(chain_of(json::array({kScaleBias, kRelu})).staged());
  CHECK(chain_of(json::array({kQuant2})).staged());
  CHECK(chain_of(json::array({kMaxPool2})).staged());
}

TEST_CASE("epilogue spec: canonical JSON fills defaults and round-trips") {
  const json chains[] = {
      json::array({kRelu}),
      json::array({kScaleBias, kRelu, kMaxPool2, kQuant2}),
      json::array({{{"op", "pool"}, {"kind", "max"}, {"size", 3}}, kScaleBias}),
      json::array({kRelu, {{"op", "pool"}, {"kind", "avg"}, {"size", 2}, {"stride", 1}}}),
      json::array({kScaleBias, {{"op", "quantize"}, {"bits", 8}, {"enc", "signed"}, {"scale", "per_channel"}}}),
  };
  for (const json& chain : chains) {
    for (const bool conv : {true, false}) {
      if (!conv && contains(chain.dump(), "pool")) continue;
      INFO(chain.dump() << (conv ? " apconv" : " apmm"));
      const KernelSpec s = apnn::canonicalize(apnn::parse_spec(conv ? apconv(chain) : apmm(chain), kOrigin));
      const json j = apnn::to_json(s);
      REQUIRE(j.contains("epilogue"));
      CHECK(j.at("epilogue") == apnn::to_json(s.epilogue));
      const KernelSpec back = apnn::parse_spec(j, kOrigin);
      CHECK(back.epilogue == s.epilogue);
      REQUIRE(back.tile.has_value());
      CHECK(*back.tile == *s.tile);
      CHECK(apnn::canonical_json(back) == apnn::canonical_json(s));
      CHECK(apnn::spec_id(back) == apnn::spec_id(s));
      CHECK(apnn::epilogue_id(back.epilogue) == apnn::epilogue_id(s.epilogue));
    }
  }
  // Defaults spelled out: pool stride = size, quantize scale = per_tensor; the order is kept.
  const Epilogue e = chain_of(json::array(
      {{{"op", "pool"}, {"kind", "max"}, {"size", 3}}, kRelu, {{"op", "quantize"}, {"bits", 4}, {"enc", "signed"}}}));
  CHECK(apnn::to_json(e) ==
        json::parse(R"([{"op":"pool","kind":"max","size":3,"stride":3},{"op":"relu"},
                        {"op":"quantize","bits":4,"enc":"signed","scale":"per_tensor"}])"));
  CHECK(apnn::to_json(chain_of(json::array({kScaleBias}))) == json::parse(R"([{"op":"scale_bias"}])"));
  CHECK(apnn::to_json(Epilogue{}) == json::array());
  // Written with or without the defaults: the same spec, the same key.
  const KernelSpec implicit = apnn::parse_spec(
      apconv(json::array({{{"op", "pool"}, {"kind", "avg"}, {"size", 2}}, {{"op", "quantize"}, {"bits", 2}, {"enc", "pm1"}}})));
  const KernelSpec explicit_ = apnn::parse_spec(apconv(json::array(
      {{{"op", "pool"}, {"kind", "avg"}, {"size", 2}, {"stride", 2}},
       {{"op", "quantize"}, {"bits", 2}, {"enc", "pm1"}, {"scale", "per_tensor"}}})));
  CHECK(implicit.epilogue == explicit_.epilogue);
  CHECK(apnn::canonical_json(implicit) == apnn::canonical_json(explicit_));
  CHECK(apnn::spec_id(apnn::canonicalize(implicit)) == apnn::spec_id(apnn::canonicalize(explicit_)));
}

TEST_CASE("epilogue spec: chains that differ in any op or field give different keys") {
  const json tile = {{"bm", 64}, {"bn", 64}, {"bk", 512}, {"stages", 3}, {"warps_m", 2}, {"warps_n", 2}};
  auto q = [&](const char* field, const json& v) {
    json c = kQuant2;
    c[field] = v;
    return c;
  };
  auto p = [&](const char* field, const json& v) {
    json c = kMaxPool2;
    c[field] = v;
    return c;
  };
  const std::vector<json> chains = {
      nullptr,
      json::array({kRelu}),
      json::array({kScaleBias}),
      json::array({kScaleBias, kRelu}),
      json::array({kRelu, kScaleBias}),
      json::array({kRelu, kMaxPool2}),
      json::array({kMaxPool2, kRelu}),
      json::array({p("kind", "avg"), kRelu}),
      json::array({p("stride", 1), kRelu}),
      json::array({p("size", 3), kRelu}),
      json::array({kQuant2}),
      json::array({q("bits", 3)}),
      json::array({q("enc", "signed")}),
      json::array({q("enc", "pm1")}),
      json::array({q("scale", "per_channel")}),
      json::array({kRelu, kQuant2}),
  };
  std::set<std::string> canon, ids;
  for (const json& chain : chains) {
    json j = apconv(chain);
    j["tile"] = tile;
    INFO(j.dump());
    const KernelSpec s = apnn::canonicalize(apnn::parse_spec(j, kOrigin));
    CHECK(*s.tile == Tile{64, 64, 512, 3, 2, 2});
    CHECK(canon.insert(apnn::canonical_json(s)).second);
    CHECK(ids.insert(apnn::spec_id(s)).second);
  }
}

TEST_CASE("epilogue spec: a spec without a chain keeps its canonical JSON (no epilogue key)") {
  const std::string before =
      R"({"op":"apmm","tile":{"bk":512,"bm":64,"bn":64,"stages":3,"warps_m":2,"warps_n":2},)"
      R"("w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned"})";
  CHECK(apnn::canonical_json(apnn::parse_spec(apmm(nullptr))) == before);
  // An empty chain is no chain.
  const KernelSpec empty = apnn::parse_spec(apmm(json::array()));
  CHECK(empty.epilogue.empty());
  CHECK(apnn::canonical_json(empty) == before);
  CHECK(apnn::spec_id(apnn::canonicalize(empty)) == apnn::spec_id(apnn::canonicalize(apnn::parse_spec(apmm(nullptr)))));
  CHECK_FALSE(apnn::to_json(apnn::canonicalize(empty)).contains("epilogue"));
  const std::string conv = apnn::canonical_json(apnn::parse_spec(apconv(nullptr)));
  CHECK_FALSE(contains(conv, "epilogue"));
  CHECK(conv == apnn::canonical_json(apnn::parse_spec(apconv(json::array()))));
}

TEST_CASE("epilogue spec: tile rules of a chain") {
  // quantize: 32 output channels per packed word and 128 per packed row, so bm is 32, 64
  // or 128 (bm = 256 would own words past a 4-word row when O mod 256 is in 1..128).
  json q16 = apmm(json::array({kScaleBias, kQuant2}));
  q16["tile"] = {{"bm", 16}, {"bn", 64}, {"bk", 512}};
  expect_rejected(q16, {"tile.bm", "32, 64 or 128", "quantize", "32 output", "got 16"});
  q16["tile"]["bm"] = 256;
  expect_rejected(q16, {"tile.bm", "32, 64 or 128", "quantize", "got 256"});
  for (int bm : {32, 64, 128}) {
    q16["tile"]["bm"] = bm;
    CHECK_NOTHROW(apnn::parse_spec(q16, kOrigin));
  }
  // Without quantize, bm = 16 is fine.
  json r16 = apmm(json::array({kScaleBias, kRelu}));
  r16["tile"] = {{"bm", 16}, {"bn", 64}, {"bk", 512}};
  CHECK_NOTHROW(apnn::parse_spec(r16, kOrigin));

  // pool: a whole window per bn.
  json p3 = apconv(json::array({{{"op", "pool"}, {"kind", "max"}, {"size", 3}, {"stride", 2}}}));
  p3["tile"] = {{"bm", 64}, {"bn", 8}, {"bk", 512}};
  expect_rejected(p3, {"tile.bn", "3x3 pooling window", "9 columns", "got 8"});
  p3["tile"]["bn"] = 16;
  CHECK_NOTHROW(apnn::parse_spec(p3, kOrigin));
  json p2 = apconv(json::array({kMaxPool2}));
  p2["tile"] = {{"bm", 64}, {"bn", 8}, {"bk", 512}};
  CHECK_NOTHROW(apnn::parse_spec(p2, kOrigin));
  // The mainloop's rules come first (a bad bm is named as such, not as a chain problem).
  json bad = apmm(json::array({kQuant2}));
  bad["tile"] = {{"bm", 48}, {"bn", 64}, {"bk", 512}};
  expect_rejected(bad, {"tile.bm must be one of"});

  // Staging: bn*(bm+4) 4-byte values, the larger of it and the pipeline's buffers.
  const KernelSpec quant = spec_with(json::array({kQuant2}), false);
  const KernelSpec relu = spec_with(json::array({kRelu}), false);
  const KernelSpec pool = spec_with(json::array({kMaxPool2}), true, 1, Encoding::Unsigned, 1, Encoding::Unsigned);
  CHECK(apnn::rules::staging_bytes(tile(64, 64, 512, 3, 2, 2), quant.epilogue) == 64 * 68 * 4);
  CHECK(apnn::rules::staging_bytes(tile(32, 128, 512, 3, 2, 2), pool.epilogue) == 128 * 36 * 4);
  CHECK(apnn::rules::staging_bytes(tile(64, 64, 512, 3, 2, 2), relu.epilogue) == 0);
  CHECK(apnn::rules::staging_bytes(tile(64, 64, 512, 3, 2, 2), Epilogue{}) == 0);
  // w1a2, 64x64x512, 3 stages: 3*(64+2*64)*64 = 36864 > 17408 staged.
  CHECK(apnn::rules::kernel_shared_bytes(tile(64, 64, 512, 3, 2, 2), quant) == 36864);
  // w1a1, 128x128x256, 2 stages: 2*(128+128)*32 = 16384 < 128*132*4 staged; an apconv adds
  // its column table, 16 bytes per tile column.
  CHECK(apnn::rules::kernel_shared_bytes(tile(128, 128, 256, 2, 4, 4), pool) == 128 * 132 * 4 + 128 * 16);
  CHECK(apnn::rules::kernel_shared_bytes(tile(128, 128, 256, 2, 4, 4), relu) == 2 * (128 + 256) * 32);
  // 256x256 stages 256*260*4 = 266240 bytes, + 4096 of column table > 227 KiB. (No tile the
  // mainloop accepts gets there, so this is the rule itself.)
  const std::string why = apnn::rules::check_epilogue_tile(tile(256, 256, 256, 2, 4, 4), pool);
  CHECK(contains(why, "270336 bytes"));
  CHECK(contains(why, "staging"));
  CHECK(contains(why, "limit 232448"));
  CHECK(apnn::rules::check_epilogue_tile(tile(256, 256, 256, 2, 4, 4), relu).empty());
  CHECK(apnn::rules::check_epilogue_tile(tile(256, 128, 256, 2, 4, 4), pool).empty());
  CHECK(contains(apnn::rules::check_kernel_tile(tile(16, 64, 512, 3, 1, 4), quant), "32, 64 or 128"));
  CHECK(contains(apnn::rules::check_kernel_tile(tile(256, 16, 256, 2, 8, 1), quant), "got 256"));
  CHECK(apnn::rules::check_kernel_tile(tile(32, 64, 512, 3, 2, 2), quant).empty());
}

TEST_CASE("epilogue spec: default and heuristic tiles satisfy every chain at every precision") {
  const std::vector<std::pair<const char*, json>> chains = {
      {"none", json::array()},
      {"relu", json::array({kRelu})},
      {"scale_bias relu", json::array({kScaleBias, kRelu})},
      {"quantize 2 unsigned", json::array({kQuant2})},
      {"quantize 8 signed per_channel",
       json::array({kScaleBias, {{"op", "quantize"}, {"bits", 8}, {"enc", "signed"}, {"scale", "per_channel"}}})},
      {"max pool 2", json::array({kMaxPool2})},
      {"avg pool 3/2", json::array({{{"op", "pool"}, {"kind", "avg"}, {"size", 3}, {"stride", 2}}})},
      {"conv full", json::array({kScaleBias, kRelu, kMaxPool2, kQuant2})},
      {"conv full 3x3/1", json::array({kScaleBias, kRelu, {{"op", "pool"}, {"kind", "max"}, {"size", 3}, {"stride", 1}},
                                       {{"op", "quantize"}, {"bits", 1}, {"enc", "pm1"}}})},
  };
  struct Precision {
    int wb;
    Encoding we;
    int xb;
    Encoding xe;
  };
  const std::vector<Precision> precisions = {
      {1, Encoding::Unsigned, 1, Encoding::Unsigned}, {1, Encoding::Pm1, 1, Encoding::Pm1},
      {1, Encoding::Pm1, 2, Encoding::Unsigned},      {2, Encoding::Signed, 2, Encoding::Signed},
      {3, Encoding::Pm1, 4, Encoding::Unsigned},      {4, Encoding::Unsigned, 4, Encoding::Signed},
      {1, Encoding::Pm1, 8, Encoding::Unsigned},      {8, Encoding::Signed, 8, Encoding::Signed},
      {8, Encoding::Pm1, 8, Encoding::Pm1},           {8, Encoding::Unsigned, 8, Encoding::Unsigned},
      {8, Encoding::Signed, 8, Encoding::Pm1},        {7, Encoding::Signed, 5, Encoding::Pm1},
  };
  struct Problem {
    int64_t M, N, K_bits, tlp;
    int max_smem;
  };
  const std::vector<Problem> problems = {
      {64, 64, 128, 1, apnn::rules::kMaxSharedBytes},    {4096, 8, 4096, 264, apnn::rules::kMaxSharedBytes},
      {512, 50176, 1152, 264, apnn::rules::kMaxSharedBytes}, {16, 16, 64, 528, apnn::rules::kMaxSharedBytes},
      {1024, 1024, 2048, 264, 48 * 1024},                {256, 3136, 576, 132, 16 * 1024},
  };
  int checked = 0;
  for (const auto& [name, chain] : chains) {
    const bool pool = contains(chain.dump(), "pool");
    for (const bool conv : {true, false}) {
      if (pool && !conv) continue;
      for (const Precision& pr : precisions) {
        const KernelSpec s = spec_with(chain, conv, pr.wb, pr.we, pr.xb, pr.xe);
        INFO(name << (conv ? " apconv " : " apmm ") << "w" << pr.wb << apnn::encoding_name(pr.we) << " a" << pr.xb
                  << apnn::encoding_name(pr.xe));
        const Tile d = apnn::rules::default_tile(s);
        CHECK_MESSAGE(apnn::rules::check_kernel_tile(d, s).empty(), apnn::rules::check_kernel_tile(d, s));
        // The canonical spec, with that tile spelled out, parses again.
        const KernelSpec c = apnn::canonicalize(s);
        CHECK(*c.tile == d);
        CHECK_NOTHROW(apnn::parse_spec(apnn::to_json(c), kOrigin));
        for (const Problem& p : problems) {
          const Tile h = apnn::rules::heuristic_tile(s, p.M, p.N, p.K_bits, p.tlp, p.max_smem);
          INFO("problem " << p.M << "x" << p.N << "x" << p.K_bits << " max_smem " << p.max_smem);
          CHECK_MESSAGE(apnn::rules::check_kernel_tile(h, s).empty(), apnn::rules::check_kernel_tile(h, s));
          ++checked;
        }
      }
    }
  }
  CHECK(checked == (5 * 2 + 4) * 12 * 6);
}

TEST_CASE("epilogue spec: value types along the chain and the output type") {
  struct Case {
    const char* what;
    json chain;
    bool staged, pooled, final_;
    OutputType out;
  };
  json avg2 = kMaxPool2;
  avg2["kind"] = "avg";
  const std::vector<Case> cases = {
      {"empty", json::array(), false, false, false, OutputType::Int32},
      {"relu", json::array({kRelu}), false, false, false, OutputType::Int32},
      {"scale_bias", json::array({kScaleBias}), true, true, true, OutputType::Float32},
      {"relu scale_bias", json::array({kRelu, kScaleBias}), true, true, true, OutputType::Float32},
      {"relu max", json::array({kRelu, kMaxPool2}), false, false, false, OutputType::Int32},
      {"max relu", json::array({kMaxPool2, kRelu}), false, false, false, OutputType::Int32},
      {"max scale_bias", json::array({kMaxPool2, kScaleBias}), false, false, true, OutputType::Float32},
      {"scale_bias max", json::array({kScaleBias, kMaxPool2}), true, true, true, OutputType::Float32},
      {"avg", json::array({avg2}), false, true, true, OutputType::Float32},
      {"relu avg", json::array({kRelu, avg2}), false, true, true, OutputType::Float32},
      {"scale_bias avg", json::array({kScaleBias, avg2}), true, true, true, OutputType::Float32},
      {"quantize", json::array({kQuant2}), false, false, false, OutputType::Packed},
      {"max quantize", json::array({kMaxPool2, kQuant2}), false, false, false, OutputType::Packed},
      {"scale_bias relu max quantize", json::array({kScaleBias, kRelu, kMaxPool2, kQuant2}), true, true, true,
       OutputType::Packed},
      {"avg relu quantize", json::array({avg2, kRelu, kQuant2}), false, true, true, OutputType::Packed},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const Epilogue e = chain_of(c.chain);
    const apnn::EpilogueTypes t = apnn::epilogue_types(e);
    CHECK(t.staged_float == c.staged);
    CHECK(t.pooled_float == c.pooled);
    CHECK(t.final_float == c.final_);
    CHECK(e.output_type() == c.out);
  }
}

TEST_CASE("epilogue spec: check_epilogue_params names the parameter and the rule") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const Epilogue full = chain_of(json::array({kScaleBias, kRelu, kQuant2}));
  const Epilogue per_channel =
      chain_of(json::array({{{"op", "quantize"}, {"bits", 2}, {"enc", "signed"}, {"scale", "per_channel"}}}));
  const Epilogue relu = chain_of(json::array({kRelu}));
  const EpilogueParams ok{{1, 2, 3}, {0, 0, 0}, {0.5f}, {0}};
  CHECK(params_message(full, ok, 3).empty());
  CHECK(params_message(relu, {}, 3).empty());
  CHECK(params_message(Epilogue{}, {}, 3).empty());
  // Scales of scale_bias may be negative or zero; biases and zero points any finite value.
  CHECK(params_message(full, {{-1, 0, -0.0f}, {-5, 1e30f, 0}, {1e-30f}, {-100}}, 3).empty());
  CHECK(params_message(per_channel, {{}, {}, {1, 2, 3}, {0, -1, 1}}, 3).empty());

  struct Case {
    const char* what;
    const Epilogue* e;
    EpilogueParams p;
    std::vector<std::string> needles;
  };
  const std::vector<Case> cases = {
      {"missing scale", &full, {{}, {0, 0, 0}, {0.5f}, {0}}, {"'scale'", "needs 3 values", "one per output channel", "got 0"}},
      {"missing bias", &full, {{1, 2, 3}, {}, {0.5f}, {0}}, {"'bias'", "needs 3 values", "got 0"}},
      {"missing q_scale", &full, {{1, 2, 3}, {0, 0, 0}, {}, {0}}, {"'q_scale'", "needs 1 value (per tensor)", "got 0"}},
      {"missing q_zero", &full, {{1, 2, 3}, {0, 0, 0}, {0.5f}, {}}, {"'q_zero'", "needs 1 value", "got 0"}},
      {"extra scale", &relu, {{1, 2, 3}, {}, {}, {}}, {"'scale'", "was given", "no scale_bias op"}},
      {"extra bias", &relu, {{}, {1, 2, 3}, {}, {}}, {"'bias'", "was given", "no scale_bias op"}},
      {"extra q_scale", &relu, {{}, {}, {1}, {}}, {"'q_scale'", "was given", "no quantize op"}},
      {"extra q_zero", &relu, {{}, {}, {}, {0}}, {"'q_zero'", "was given", "no quantize op"}},
      {"short scale", &full, {{1, 2}, {0, 0, 0}, {0.5f}, {0}}, {"'scale'", "needs 3 values", "got 2"}},
      {"long bias", &full, {{1, 2, 3}, {0, 0, 0, 0}, {0.5f}, {0}}, {"'bias'", "needs 3 values", "got 4"}},
      {"per-tensor q_scale of 3", &full, {{1, 2, 3}, {0, 0, 0}, {1, 1, 1}, {0}}, {"'q_scale'", "needs 1 value", "got 3"}},
      {"per-channel q_scale of 1", &per_channel, {{}, {}, {1}, {0, 0, 0}},
       {"'q_scale'", "needs 3 values", "one per output channel", "got 1"}},
      {"per-channel q_zero of 1", &per_channel, {{}, {}, {1, 1, 1}, {0}}, {"'q_zero'", "needs 3 values", "got 1"}},
      {"nan scale", &full, {{1, nan, 3}, {0, 0, 0}, {0.5f}, {0}}, {"'scale'[1]", "nan", "must be finite"}},
      {"inf bias", &full, {{1, 2, 3}, {0, 0, inf}, {0.5f}, {0}}, {"'bias'[2]", "inf", "must be finite"}},
      {"-inf q_zero", &full, {{1, 2, 3}, {0, 0, 0}, {0.5f}, {-inf}}, {"'q_zero'[0]", "-inf", "must be finite"}},
      {"inf q_scale", &full, {{1, 2, 3}, {0, 0, 0}, {inf}, {0}}, {"'q_scale'[0]", "inf", "must be finite"}},
      {"nan q_scale", &per_channel, {{}, {}, {1, 1, nan}, {0, 0, 0}}, {"'q_scale'[2]", "nan", "must be finite"}},
      {"zero q_scale", &full, {{1, 2, 3}, {0, 0, 0}, {0}, {0}}, {"'q_scale'[0]", "is 0", "must be > 0"}},
      {"-0 q_scale", &full, {{1, 2, 3}, {0, 0, 0}, {-0.0f}, {0}}, {"'q_scale'[0]", "must be > 0"}},
      {"negative q_scale", &per_channel, {{}, {}, {1, -0.25f, 1}, {0, 0, 0}}, {"'q_scale'[1]", "-0.25", "must be > 0"}},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const std::string msg = params_message(*c.e, c.p, 3);
    INFO("message: " << msg);
    REQUIRE_FALSE(msg.empty());
    CHECK(contains(msg, "epilogue parameter"));
    CHECK(msg.find('\n') == std::string::npos);
    for (const auto& n : c.needles) CHECK_MESSAGE(contains(msg, n), "missing '" << n << "'");
  }
}

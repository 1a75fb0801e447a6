// The CUDA source generator: entry points, includes, what reaches the source, and what changes it.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "apnn/error.h"
#include "apnn/spec.h"
#include "generator/embedded_templates.h"
#include "generator/generate.h"
#include "spec/kernel_rules.h"

namespace {

using apnn::Encoding;
using apnn::ErrorKind;
using apnn::GeneratedSource;
using apnn::KernelSpec;
using apnn::Tile;

const Encoding kEncodings[] = {Encoding::Unsigned, Encoding::Pm1, Encoding::Signed};

KernelSpec make_spec(int wb, Encoding we, int xb, Encoding xe) {
  KernelSpec s;
  s.w = {wb, we};
  s.x = {xb, xe};
  return apnn::canonicalize(s);
}

KernelSpec with_tile(KernelSpec s, int bm, int bn, int bk, int stages, int wm, int wn) {
  s.tile = Tile{bm, bn, bk, stages, wm, wn};
  return s;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

bool contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every #include directive's argument ("x" or <x>), in order.
std::vector<std::string> includes_of(const std::string& text) {
  static const std::regex re(R"(^\s*#\s*include\s*(.*?)\s*$)");
  std::vector<std::string> out;
  for (const auto& line : lines_of(text)) {
    std::smatch m;
    if (std::regex_match(line, m, re)) out.push_back(m[1]);
  }
  return out;
}

int template_enum_value(const std::string& name) {
  for (const auto& t : apnn::embedded::templates()) {
    const std::string content(t.content);
    const std::regex re(name + R"(\s*=\s*(\d+))");
    std::smatch m;
    if (std::regex_search(content, m, re)) return std::stoi(m[1]);
  }
  return -1;
}

}  // namespace

TEST_CASE("generator: the source defines the three extern \"C\" entry points and lists them") {
  const GeneratedSource g = apnn::generate(make_spec(1, Encoding::Pm1, 2, Encoding::Unsigned));
  REQUIRE(g.kernels.size() == 3);
  CHECK(g.kernels[0] == apnn::kApmmKernel);
  CHECK(g.kernels[1] == apnn::kPackWKernel);
  CHECK(g.kernels[2] == apnn::kPackXKernel);
  CHECK(std::set<std::string>(g.kernels.begin(), g.kernels.end()).size() == 3);
  for (const auto& k : g.kernels) {
    INFO(k);
    const std::regex def(R"(extern "C" __global__ void __launch_bounds__\([^)]*\)\s*)" + k + R"(\()");
    CHECK(std::regex_search(g.source, def));
    // Defined once.
    const std::regex call("\\b" + k + "\\(");
    CHECK(std::distance(std::sregex_iterator(g.source.begin(), g.source.end(), call), std::sregex_iterator()) == 1);
  }
  CHECK(contains(g.source, fmt::format("__launch_bounds__({})", apnn::kPackThreads)));
  CHECK(contains(g.source, apnn::kGeneratorVersion));
  CHECK(g.name == "apmm_w1pm1_x2unsigned.cu");
}

TEST_CASE("generator: headers are exactly the embedded templates, identical to templates/*.cuh") {
  const GeneratedSource g = apnn::generate(make_spec(2, Encoding::Signed, 3, Encoding::Pm1));
  const auto& tpl = apnn::embedded::templates();
  REQUIRE(g.headers.size() == tpl.size());
  std::set<std::string> on_disk;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(APNN_SOURCE_DIR) / "templates"))
    if (e.path().extension() == ".cuh") on_disk.insert(e.path().filename().string());
  std::set<std::string> embedded;
  for (size_t i = 0; i < tpl.size(); ++i) {
    INFO(tpl[i].name);
    CHECK(g.headers[i].first == tpl[i].name);
    CHECK(g.headers[i].second == tpl[i].content);
    CHECK_FALSE(g.headers[i].second.empty());
    embedded.insert(std::string(tpl[i].name));
    // The embedded copy is the file (a stale or truncated embedding would differ).
    CHECK(read_file(std::filesystem::path(APNN_SOURCE_DIR) / "templates" / std::string(tpl[i].name)) == tpl[i].content);
  }
  CHECK(embedded == on_disk);
  CHECK(embedded.size() == tpl.size());  // no duplicate names
}

TEST_CASE("generator: every #include resolves to an embedded template; no <...> includes anywhere") {
  const GeneratedSource g = apnn::generate(make_spec(4, Encoding::Unsigned, 4, Encoding::Signed));
  std::set<std::string> names;
  for (const auto& [name, content] : g.headers) names.insert(name);
  std::vector<std::pair<std::string, std::string>> files = {{g.name, g.source}};
  files.insert(files.end(), g.headers.begin(), g.headers.end());
  std::set<std::string> reached;
  for (const auto& [file, text] : files) {
    const auto incs = includes_of(text);
    if (file == g.name) CHECK(incs.size() >= 1);
    for (const auto& inc : incs) {
      INFO(file << ": #include " << inc);
      REQUIRE(inc.size() >= 3);
      CHECK(inc.front() == '"');
      CHECK(inc.back() == '"');
      const std::string name = inc.substr(1, inc.size() - 2);
      CHECK(names.count(name) == 1);
      reached.insert(name);
    }
    CHECK_FALSE(std::regex_search(text, std::regex(R"(#\s*include\s*<)")));
  }
  // The source instantiates templates, so it reaches some of them.
  CHECK_FALSE(reached.empty());
}

TEST_CASE("generator: no string from the spec reaches the source, only integers") {
  for (Encoding we : kEncodings)
    for (Encoding xe : kEncodings)
      for (auto [wb, xb] : {std::pair{1, 1}, std::pair{1, 2}, std::pair{3, 5}, std::pair{8, 8}}) {
        const GeneratedSource g = apnn::generate(make_spec(wb, we, xb, xe));
        INFO(g.name);
        int includes = 0, extern_c = 0;
        for (const auto& line : lines_of(g.source)) {
          if (line.find('"') == std::string::npos && line.find('\'') == std::string::npos) continue;
          INFO(line);
          if (std::regex_match(line, std::regex(R"(#include "[a-z0-9_]+\.cuh")"))) {
            ++includes;
          } else {
            // The only other quoted text is the C linkage of the entry points.
            CHECK(line.rfind("extern \"C\" __global__ ", 0) == 0);
            CHECK(std::count(line.begin(), line.end(), '"') == 2);
            CHECK(line.find('\'') == std::string::npos);
            ++extern_c;
          }
        }
        CHECK(includes >= 1);
        CHECK(extern_c == static_cast<int>(g.kernels.size()));
      }
}

TEST_CASE("generator: the traits carry the spec's integers and the plane groups") {
  for (Encoding we : kEncodings)
    for (Encoding xe : kEncodings)
      for (auto [wb, xb] : {std::pair{1, 2}, std::pair{3, 2}, std::pair{2, 7}, std::pair{8, 8}}) {
        const KernelSpec s = with_tile(make_spec(wb, we, xb, xe), 32, 32, 256, 2, 2, 4);
        REQUIRE(apnn::rules::check_tile(*s.tile, s.w, s.x) == "");
        const GeneratedSource g = apnn::generate(s);
        INFO(g.name);
        const auto groups = apnn::rules::plane_groups(s.w, s.x);
        CHECK(contains(g.source, fmt::format("kWBits = {}, kXBits = {};", wb, xb)));
        CHECK(contains(g.source, "kBM = 32, kBN = 32, kBK = 256;"));
        CHECK(contains(g.source, "kWarpsM = 2, kWarpsN = 4, kStages = 2;"));
        CHECK(contains(g.source, fmt::format("kGroups = {};", groups.weight.size())));
        CHECK(contains(g.source, fmt::format("kOffsetW = {}, kOffsetX = {};", s.w.offset(), s.x.offset())));
        std::vector<int> table;
        for (const auto& row : groups.group_of) table.insert(table.end(), row.begin(), row.end());
        CHECK(contains(g.source, fmt::format("kTable[{} * {}] = {{{}}};", wb, xb, fmt::join(table, ", "))));
        CHECK(contains(g.source, fmt::format("kWeight[{}] = {{{}}};", groups.weight.size(), fmt::join(groups.weight, ", "))));
        // An APMM's sets are never merged: every pair once.
        CHECK(contains(g.source, fmt::format("kRepeat[{} * {}] = {{{}}};", wb, xb, fmt::join(std::vector<int>(wb * xb, 1), ", "))));
        // Encodings are passed as the template's own enum values.
        auto code = [](Encoding e) {
          return template_enum_value(e == Encoding::Unsigned ? "kEncUnsigned" : e == Encoding::Pm1 ? "kEncPm1" : "kEncSigned");
        };
        REQUIRE(code(we) >= 0);
        REQUIRE(code(xe) >= 0);
        CHECK(contains(g.source, fmt::format("pack_bitplanes<{}, {}>", wb, code(we))));
        CHECK(contains(g.source, fmt::format("pack_bitplanes<{}, {}>", xb, code(xe))));
        CHECK(g.name == fmt::format("apmm_w{}{}_x{}{}.cu", wb, apnn::encoding_name(we), xb, apnn::encoding_name(xe)));
      }
  // The template's enum numbers the encodings distinctly.
  CHECK(std::set<int>{template_enum_value("kEncUnsigned"), template_enum_value("kEncPm1"), template_enum_value("kEncSigned")}.size() == 3);
}

TEST_CASE("generator: deterministic, and any change of bits, encoding or tile changes the source") {
  const KernelSpec base = with_tile(make_spec(2, Encoding::Unsigned, 2, Encoding::Unsigned), 64, 64, 512, 3, 2, 2);
  CHECK(apnn::generate(base).source == apnn::generate(base).source);
  std::vector<KernelSpec> variants = {base};
  auto vary = [&](auto f) {
    KernelSpec v = base;
    f(v);
    REQUIRE(apnn::rules::check_tile(*v.tile, v.w, v.x) == "");
    variants.push_back(v);
  };
  vary([](KernelSpec& v) { v.tile->bm = 32; });
  vary([](KernelSpec& v) { v.tile->bn = 32; });
  vary([](KernelSpec& v) { v.tile->bk = 256; });
  vary([](KernelSpec& v) { v.tile->bk = 1024; });
  vary([](KernelSpec& v) { v.tile->stages = 2; });
  vary([](KernelSpec& v) { v.tile->stages = 4; });
  vary([](KernelSpec& v) { v.tile->warps_m = 1; v.tile->warps_n = 4; });
  vary([](KernelSpec& v) { v.tile->warps_m = 4; v.tile->warps_n = 2; });
  vary([](KernelSpec& v) { v.w.bits = 3; });
  vary([](KernelSpec& v) { v.x.bits = 1; });
  vary([](KernelSpec& v) { v.w.enc = Encoding::Pm1; });
  vary([](KernelSpec& v) { v.x.enc = Encoding::Signed; });
  vary([](KernelSpec& v) { v.w.bits = 1; v.x.bits = 3; });  // same plane total and group count as the base
  std::set<std::string> sources;
  for (const auto& v : variants) sources.insert(apnn::generate(v).source);
  CHECK(sources.size() == variants.size());
  // Swapping operands' roles is a different kernel too.
  const KernelSpec a = with_tile(make_spec(1, Encoding::Pm1, 2, Encoding::Unsigned), 64, 64, 512, 3, 2, 2);
  const KernelSpec b = with_tile(make_spec(2, Encoding::Unsigned, 1, Encoding::Pm1), 64, 64, 512, 3, 2, 2);
  CHECK(apnn::generate(a).source != apnn::generate(b).source);
  CHECK(apnn::generate(a).name != apnn::generate(b).name);
}

TEST_CASE("generator: every format pair generates from its canonical spec") {
  for (int wb = 1; wb <= 8; ++wb)
    for (int xb = 1; xb <= 8; ++xb)
      for (Encoding we : kEncodings)
        for (Encoding xe : kEncodings) {
          const KernelSpec s = make_spec(wb, we, xb, xe);
          INFO(apnn::canonical_json(s));
          GeneratedSource g;
          REQUIRE_NOTHROW(g = apnn::generate(s));
          CHECK(contains(g.source, fmt::format("kTable[{} * {}]", wb, xb)));
          CHECK(contains(g.source, fmt::format("kBM = {}, kBN = {}, kBK = {};", s.tile->bm, s.tile->bn, s.tile->bk)));
        }
}

TEST_CASE("generator: a spec without a tile or with an illegal tile is InvalidSpec") {
  KernelSpec raw;  // parse_spec() output before canonicalize(): no tile
  raw.w = {1, Encoding::Pm1};
  raw.x = {2, Encoding::Unsigned};
  CHECK_FALSE(raw.tile.has_value());
  try {
    apnn::generate(raw);
    FAIL("generate() accepted a spec without a tile");
  } catch (const apnn::Error& e) {
    CHECK(e.kind() == ErrorKind::InvalidSpec);
    CHECK(contains(e.what(), "tile"));
  }
  const KernelSpec parsed = apnn::parse_spec_text(R"({"op":"apmm","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned"})");
  CHECK_THROWS_AS(apnn::generate(parsed), apnn::Error);
  CHECK_NOTHROW(apnn::generate(apnn::canonicalize(parsed)));

  // Specs built in code bypass parse_spec: generate() re-checks the tile.
  struct Bad {
    KernelSpec spec;
    const char* field;
  };
  const KernelSpec ok = make_spec(1, Encoding::Pm1, 2, Encoding::Unsigned);
  const std::vector<Bad> bad = {
      {with_tile(ok, 48, 64, 512, 3, 2, 2), "tile.bm"},
      {with_tile(ok, 64, 12, 512, 3, 2, 2), "tile.bn"},
      {with_tile(ok, 64, 64, 128, 3, 2, 2), "tile.bk"},
      {with_tile(ok, 64, 64, 512, 9, 2, 2), "tile.stages"},
      {with_tile(ok, 64, 64, 512, 3, 3, 2), "tile.warps_m"},
      {with_tile(make_spec(8, Encoding::Signed, 8, Encoding::Signed), 128, 128, 512, 3, 2, 2), "accumulator"},
  };
  for (const auto& b : bad) {
    INFO(b.field);
    try {
      apnn::generate(b.spec);
      FAIL("generate() accepted an illegal tile");
    } catch (const apnn::Error& e) {
      CHECK(e.kind() == ErrorKind::InvalidSpec);
      CHECK(contains(e.what(), b.field));
    }
  }
}

TEST_CASE("generator: apconv sources define the conv entry points and carry the geometry") {
  const KernelSpec s = apnn::canonicalize(apnn::parse_spec_text(
      R"({"op":"apconv","w_bits":2,"w_enc":"signed","x_bits":3,"x_enc":"unsigned","kernel":[5,3],"stride":[2,1],"pad":[2,1]})"));
  const GeneratedSource g = apnn::generate(s);
  INFO(g.name);
  const std::vector<std::string> want = {apnn::kConvKernel, apnn::kPackWKernel, apnn::kPackXKernel, apnn::kUnpackXKernel};
  CHECK(g.kernels == want);
  for (const auto& k : g.kernels) {
    INFO(k);
    const std::regex def(R"(extern "C" __global__ void __launch_bounds__\([^)]*\)\s*)" + k + R"(\()");
    CHECK(std::regex_search(g.source, def));
  }
  CHECK_FALSE(contains(g.source, std::string(apnn::kApmmKernel) + "("));
  CHECK(contains(g.source, "kKh = 5, kKw = 3, kSh = 2, kSw = 1, kPh = 2, kPw = 1;"));
  CHECK(g.name != apnn::generate(make_spec(2, Encoding::Signed, 3, Encoding::Unsigned)).name);
  // Same rule as apmm: only include names and the C linkage are quoted.
  for (const auto& line : lines_of(g.source))
    if (line.find('"') != std::string::npos) {
      INFO(line);
      CHECK((std::regex_match(line, std::regex(R"(#include "[a-z0-9_]+\.cuh")")) ||
             line.rfind("extern \"C\" __global__ ", 0) == 0));
    }
  // Every include resolves to an embedded template.
  std::set<std::string> names;
  for (const auto& [name, content] : g.headers) names.insert(name);
  for (const auto& inc : includes_of(g.source)) CHECK(names.count(inc.substr(1, inc.size() - 2)) == 1);
  // The geometry changes the source.
  KernelSpec other = s;
  other.conv.sh = 1;
  CHECK(apnn::generate(other).source != g.source);
  // And a conv spec without a tile is refused like an apmm one.
  KernelSpec raw = s;
  raw.tile.reset();
  CHECK_THROWS_AS(apnn::generate(raw), apnn::Error);
}

TEST_CASE("generator: a w1a2 conv on the wgmma core with 128x128 tiles accumulates into one merged set") {
  KernelSpec s = apnn::parse_spec_text(
      R"({"op":"apconv","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned","kernel":[3,3],"stride":[1,1],"pad":[1,1],)"
      R"("tile":{"bm":128,"bn":128,"bk":512,"stages":4,"warps_m":8,"warps_n":1}})");
  s = apnn::canonicalize(s);
  const GeneratedSource g = apnn::generate(s, "sm_90a");
  CHECK(contains(g.source, "kGroups = 1;"));
  CHECK(contains(g.source, "kWeight[1] = {2};"));
  CHECK(contains(g.source, "kRepeat[1 * 2] = {1, 2};"));
  CHECK(contains(g.source, "__launch_bounds__(kThreads, 2)"));  // 64 accumulator registers: two blocks
  // The same tile in an APMM on sm_90a (the wgmma core, bound by its MMAs) keeps both sets.
  KernelSpec gemm = apnn::canonicalize(apnn::parse_spec_text(
      R"({"op":"apmm","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned",)"
      R"("tile":{"bm":128,"bn":128,"bk":1024,"stages":4,"warps_m":8,"warps_n":1}})"));
  REQUIRE(apnn::rules::use_wgmma(gemm, "sm_90a"));
  const GeneratedSource gg = apnn::generate(gemm, "sm_90a");
  CHECK(contains(gg.source, "kGroups = 2;"));
  CHECK(contains(gg.source, "kRepeat[1 * 2] = {1, 1};"));
  // The same spec on sm_80 keeps the two exact sets, one block per SM.
  const GeneratedSource g80 = apnn::generate(s, "sm_80");
  CHECK(contains(g80.source, "kGroups = 2;"));
  CHECK(contains(g80.source, "kRepeat[1 * 2] = {1, 1};"));
  CHECK(contains(g80.source, "__launch_bounds__(kThreads, 1)"));
}

TEST_CASE("generator: on sm_90a, APMM tiles that suit the wgmma core get it; everything else keeps mma.sync") {
  const KernelSpec base = make_spec(1, Encoding::Pm1, 2, Encoding::Unsigned);
  const KernelSpec suits = with_tile(base, 128, 128, 1024, 4, 8, 1);  // 2 warpgroups of 64 x 128
  REQUIRE(apnn::rules::wgmma_tile_error(*suits.tile, suits.w, suits.x).empty());
  const GeneratedSource g = apnn::generate(suits, "sm_90a");
  CHECK(contains(g.source, "#include \"apmm_sm90a.cuh\""));
  CHECK(contains(g.source, "apnn::apmm_sm90a<Traits>("));
  CHECK(g.wgmma_core);  // the runners launch by this, not by the environment at launch time
  CHECK_FALSE(apnn::generate(suits, "sm_80").wgmma_core);
  CHECK(g.kernels == apnn::generate(suits).kernels);
  // Other targets, or no target, keep the portable core for the same spec.
  for (const char* arch : {"", "sm_80", "sm_86", "sm_89", "sm_90"}) {
    INFO(arch);
    const GeneratedSource o = apnn::generate(suits, arch);
    CHECK(contains(o.source, "#include \"apmm_sm80.cuh\""));
    CHECK(contains(o.source, "apnn::apmm_sm80<Traits>("));
  }
  CHECK(apnn::generate(suits).source == apnn::generate(suits, "sm_80").source);
  // Tiles whose warps are not warpgroups of 16-row warps stacked along M stay on mma.sync.
  for (const KernelSpec& s : {with_tile(base, 64, 64, 512, 3, 2, 2), with_tile(base, 128, 64, 512, 4, 4, 2),
                              with_tile(base, 32, 64, 256, 2, 2, 2)}) {
    INFO(apnn::canonical_json(s));
    CHECK_FALSE(apnn::rules::wgmma_tile_error(*s.tile, s.w, s.x).empty());
    CHECK(contains(apnn::generate(s, "sm_90a").source, "apnn::apmm_sm80<Traits>("));
  }
  // An APMM chain runs on the cp.async wgmma core without a cluster (and on the TMA core with
  // one), with or without a quantize; the Epi struct says whether the output is plain, which
  // keeps the bulk-stored boxes off chains.
  KernelSpec fused = apnn::parse_spec_text(
      R"({"op":"apmm","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned","epilogue":[{"op":"scale_bias"},{"op":"relu"}],
          "tile":{"bm":128,"bn":128,"bk":1024,"stages":4,"warps_m":8,"warps_n":1}})",
      "test");
  CHECK(apnn::rules::use_wgmma(apnn::canonicalize(fused), "sm_90a"));
  CHECK(contains(apnn::generate(apnn::canonicalize(fused), "sm_90a").source, "apnn::apmm_sm90a<Traits>("));
  CHECK(contains(apnn::generate(apnn::canonicalize(fused), "sm_90a").source, "kPlain = false"));
  CHECK(contains(apnn::generate(apnn::canonicalize(fused), "sm_90").source, "apnn::apmm_sm80<Traits>("));
  const KernelSpec quantized = apnn::parse_spec_text(
      R"({"op":"apmm","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned",
          "epilogue":[{"op":"scale_bias"},{"op":"quantize","bits":2,"enc":"unsigned"}],
          "tile":{"bm":128,"bn":128,"bk":1024,"stages":4,"warps_m":8,"warps_n":1}})",
      "test");
  CHECK(apnn::rules::use_wgmma(apnn::canonicalize(quantized), "sm_90a"));
  CHECK(contains(apnn::generate(apnn::canonicalize(quantized), "sm_90a").source, "apnn::apmm_sm90a<Traits>("));
  KernelSpec plain = fused;
  plain.epilogue.ops.clear();
  CHECK(contains(apnn::generate(apnn::canonicalize(plain), "sm_90a").source, "kPlain = true"));
  // With a cluster, the TMA core: a chain stages no output, a quantize its codes after the
  // barriers (rules::apmm_code_staging_bytes: 128 columns of 128 + 16 rows).
  KernelSpec clustered = fused;
  clustered.tile->cluster = 2;
  CHECK(apnn::rules::use_wgmma(clustered, "sm_90a"));
  const std::string tma_fused = apnn::generate(apnn::canonicalize(clustered), "sm_90a").source;
  CHECK(contains(tma_fused, "apnn::apmm_sm90a_tma<Traits>("));
  CHECK(contains(tma_fused, "kOutputStagingBytes = 0;"));
  CHECK(contains(tma_fused, "kCodeStagingBytes = 0;"));
  KernelSpec tma_quantized = quantized;
  tma_quantized.tile->cluster = 2;
  CHECK(contains(apnn::generate(apnn::canonicalize(tma_quantized), "sm_90a").source, "kCodeStagingBytes = 18432;"));
  // APConv: the same rule, with or without a chain.
  const KernelSpec conv = apnn::parse_spec_text(
      R"({"op":"apconv","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned","kernel":[3,3],"stride":[1,1],"pad":[1,1],
          "tile":{"bm":64,"bn":64,"bk":512,"stages":3,"warps_m":4,"warps_n":1}})",
      "test");
  CHECK(contains(apnn::generate(apnn::canonicalize(conv), "sm_90a").source, "apnn::conv_sm90a<Traits>("));
  CHECK(contains(apnn::generate(apnn::canonicalize(conv), "sm_90").source, "apnn::conv_sm80<Traits>("));
  KernelSpec conv_chain = conv;
  conv_chain.epilogue = fused.epilogue;
  CHECK(contains(apnn::generate(apnn::canonicalize(conv_chain), "sm_90a").source, "apnn::conv_sm90a<Traits>("));
  // A pool + quantize chain too; its launch asks for the larger of the pipeline and the
  // staging (bn x (bm+4) values), plus the column table.
  KernelSpec conv_pq = apnn::parse_spec_text(
      R"({"op":"apconv","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned","kernel":[3,3],"stride":[1,1],"pad":[1,1],
          "epilogue":[{"op":"pool","kind":"max","size":2,"stride":2},{"op":"quantize","bits":2,"enc":"unsigned"}],
          "tile":{"bm":128,"bn":128,"bk":256,"stages":2,"warps_m":8,"warps_n":2}})",
      "test");
  const KernelSpec pq = apnn::canonicalize(conv_pq);
  REQUIRE(apnn::rules::use_wgmma(pq, "sm_90a"));
  CHECK(contains(apnn::generate(pq, "sm_90a").source, "apnn::conv_sm90a<Traits>("));
  CHECK(apnn::rules::wgmma_shared_bytes(*pq.tile, pq.w, pq.x) < 128 * 132 * 4);
  CHECK(apnn::rules::launch_shared_bytes(pq, "sm_90a") == 128 * 132 * 4 + 128 * 16);
  // Conv kernels of <= 256 threads with <= 64 accumulator registers ask for 2 blocks per SM.
  auto min_blocks = [&](const KernelSpec& base, Tile t, int groups, const char* arch = "sm_90a") {
    KernelSpec k = base;
    k.tile = t;
    return apnn::rules::conv_min_blocks(apnn::canonicalize(k), arch, groups);
  };
  CHECK(min_blocks(conv, Tile{64, 128, 512, 3, 4, 2}, 2) == 2);   // 2 groups x 32
  CHECK(min_blocks(conv, Tile{64, 256, 256, 2, 4, 2}, 2) == 1);   // 2 groups x 64
  CHECK(min_blocks(conv, Tile{128, 128, 256, 2, 8, 2}, 2) == 1);  // 512 threads
  // Three for 8 warps in one column with <= 32 accumulator registers, where three blocks'
  // shared memory fits, on the wgmma core, for the plain output only.
  const Tile three{128, 64, 512, 4, 8, 1};
  CHECK(min_blocks(conv, three, 1) == 3);  // merged w1a2 sets: 32 registers, 3 x 66 KB
  CHECK(min_blocks(conv, three, 2) == 2);  // 64 registers
  CHECK(min_blocks(conv, Tile{128, 64, 512, 6, 8, 1}, 1) == 2);   // 98 KB: two fit
  CHECK(min_blocks(conv, Tile{64, 128, 512, 3, 4, 2}, 1) == 2);   // two warpgroup columns
  CHECK(min_blocks(conv, three, 1, "sm_90") == 2);                // the mma.sync core
  CHECK(min_blocks(conv_chain, three, 1) == 2);                   // a fused chain holds more
  // Only the measured kernel: ptxas spilled at 80 registers with pm1 activations, fewer
  // stages and other precisions (test_compiler compiles every tile of three).
  CHECK(min_blocks(conv, Tile{128, 64, 512, 3, 8, 1}, 1) == 2);
  CHECK(min_blocks(conv, Tile{128, 64, 256, 4, 8, 1}, 1) == 2);
  {
    KernelSpec pm1_x = conv;
    pm1_x.x.enc = apnn::Encoding::Pm1;
    CHECK(min_blocks(pm1_x, three, 1) == 2);
    KernelSpec w1a1 = conv;
    w1a1.x.bits = 1;
    CHECK(min_blocks(w1a1, three, 1) == 2);
  }
  {
    KernelSpec k = conv;
    k.tile = three;
    const KernelSpec ck = apnn::canonicalize(k);
    CHECK(apnn::rules::kernel_plane_groups(ck, "sm_90a").weight.size() == 1);  // merged: a third block
    CHECK(apnn::rules::conv_blocks_per_sm(ck, "sm_90a", apnn::rules::kernel_plane_groups(ck, "sm_90a")) == 3);
    CHECK(contains(apnn::generate(ck, "sm_90a").source, "__launch_bounds__(kThreads, 3)"));
    CHECK(contains(apnn::generate(ck, "sm_90").source, "__launch_bounds__(kThreads, 2)"));
  }
  CHECK(contains(apnn::generate(pq, "sm_90a").source, "__launch_bounds__(kThreads, 1)"));
  KernelSpec narrow = conv_pq;
  narrow.tile = Tile{64, 128, 512, 3, 4, 2};
  CHECK(contains(apnn::generate(apnn::canonicalize(narrow), "sm_90a").source, "__launch_bounds__(kThreads, 2)"));
  // Its launch asks for the core's aligned buffers plus the column table.
  const KernelSpec cc = apnn::canonicalize(conv);
  CHECK(apnn::rules::launch_shared_bytes(cc, "sm_90a") ==
        apnn::rules::wgmma_shared_bytes(*cc.tile, cc.w, cc.x) + cc.tile->bn * 16);
  CHECK(apnn::rules::launch_shared_bytes(cc, "sm_90") == apnn::rules::kernel_shared_bytes(*cc.tile, cc));
  // The environment switch turns it off (for comparisons of the two cores on one tile).
  setenv("APNN_DISABLE_WGMMA", "1", 1);
  CHECK(contains(apnn::generate(suits, "sm_90a").source, "apnn::apmm_sm80<Traits>("));
  setenv("APNN_DISABLE_WGMMA", "0", 1);
  CHECK(contains(apnn::generate(suits, "sm_90a").source, "apnn::apmm_sm90a<Traits>("));
  unsetenv("APNN_DISABLE_WGMMA");
}

TEST_CASE("generator: tile.cluster 2, 4, 8 emit the TMA core's cluster kernel on sm_90a, and nothing elsewhere") {
  KernelSpec tma = with_tile(make_spec(1, Encoding::Pm1, 2, Encoding::Unsigned), 128, 128, 1024, 4, 8, 1);
  tma.tile->cluster = 2;
  const GeneratedSource g = apnn::generate(tma, "sm_90a");
  CHECK(g.wgmma_core);
  CHECK(contains(g.source, "#include \"apmm_sm90a_tma.cuh\""));
  CHECK(contains(g.source, "__cluster_dims__(2, 1, 1)"));
  CHECK(contains(g.source, "const __grid_constant__ apnn::TmaMap wmap"));
  CHECK(contains(g.source, "apnn::apmm_sm90a_tma<Traits>("));
  CHECK(contains(g.source, "kClusterM = 2, kClusterN = 1"));  // 2 planes x 128 X rows >= 128 W rows: X shared
  // 192 KB of stages + 64 KB of output do not fit; two 8 KB boxes per warpgroup do.
  CHECK(contains(g.source, "kOutputStagingBytes = 32768"));
  CHECK(contains(g.source, "kOutputStagingWhole = false"));
  CHECK(g.kernels == apnn::generate(make_spec(1, Encoding::Pm1, 2, Encoding::Unsigned)).kernels);  // packers too
  KernelSpec w2a2 = with_tile(make_spec(2, Encoding::Signed, 2, Encoding::Unsigned), 128, 64, 1024, 4, 8, 1);
  w2a2.tile->cluster = 2;
  const std::string w2a2_src = apnn::generate(w2a2, "sm_90a").source;
  CHECK(contains(w2a2_src, "kClusterM = 1, kClusterN = 2"));  // W shared
  CHECK(contains(w2a2_src, "kOutputStagingBytes = 32768"));   // 192 KB of stages + 32 KB of output fit
  CHECK(contains(w2a2_src, "kOutputStagingWhole = true"));
  for (int cluster : {4, 8}) {
    w2a2.tile->cluster = cluster;
    const std::string src = apnn::generate(w2a2, "sm_90a").source;
    CHECK(contains(src, fmt::format("__cluster_dims__({}, 1, 1)", cluster)));
    CHECK(contains(src, cluster == 4 ? "kClusterM = 2, kClusterN = 2" : "kClusterM = 2, kClusterN = 4"));
  }
  // Up to 128 accumulators a thread: one producer warp; w2a2 128x96's 192: a producer
  // warpgroup handing its registers to the consumers.
  CHECK(contains(g.source, "kProducerWarps = 1;"));
  KernelSpec wide = with_tile(make_spec(2, Encoding::Signed, 2, Encoding::Unsigned), 128, 96, 1024, 3, 8, 1);
  wide.tile->cluster = 2;
  CHECK(contains(apnn::generate(wide, "sm_90a").source, "kProducerWarps = 4;"));
  CHECK(contains(apnn::generate(make_spec(1, Encoding::Pm1, 2, Encoding::Unsigned), "sm_90a").source,
                 "kProducerWarps = 0;"));
  // Cluster 1 on the same tile is the cp.async wgmma core; its source differs.
  KernelSpec plain = tma;
  plain.tile->cluster = 1;
  CHECK(contains(apnn::generate(plain, "sm_90a").source, "apnn::apmm_sm90a<Traits>("));
  // No sm_90a wgmma core, no TMA core: an error naming the field, never a silent fallback.
  for (const char* arch : {"", "sm_80", "sm_89", "sm_90"}) {
    INFO(arch);
    try {
      apnn::generate(tma, arch);
      FAIL("generated a cluster-2 tile without the wgmma core");
    } catch (const apnn::Error& e) {
      CHECK(e.kind() == apnn::ErrorKind::InvalidSpec);
      CHECK(contains(e.what(), "tile.cluster 2"));
    }
  }
  setenv("APNN_DISABLE_WGMMA", "1", 1);
  CHECK_THROWS_AS(apnn::generate(tma, "sm_90a"), apnn::Error);
  unsetenv("APNN_DISABLE_WGMMA");
  // Its launch asks for the pipeline, the alignment slack and the barriers.
  CHECK(apnn::rules::launch_shared_bytes(tma, "sm_90a") == apnn::rules::tma_shared_bytes(*tma.tile, tma.w, tma.x));
}

TEST_CASE("rules: the wgmma APMM core stages its output for bulk stores only at 256 columns per warpgroup") {
  const apnn::OperandFormat w1{1, Encoding::Unsigned}, a1{1, Encoding::Unsigned}, a2{2, Encoding::Unsigned};
  Tile t;
  REQUIRE(apnn::rules::wgmma_tile(&t, w1, a1));  // 128x256: 2 warpgroups of 256 columns
  CHECK(apnn::rules::wgmma_stages_output(t, w1, a1));
  Tile c2 = t;
  c2.cluster = 2;  // the TMA core stages the same way
  CHECK(apnn::rules::wgmma_stages_output(c2, w1, a1));
  REQUIRE(apnn::rules::wgmma_tile(&t, w1, a2));  // 128x128
  CHECK_FALSE(apnn::rules::wgmma_stages_output(t, w1, a2));
  // The staging (16 KB per warpgroup) must fit in one pipeline slot: 64x256 at bk 256 is 10 KB.
  CHECK_FALSE(apnn::rules::wgmma_stages_output(Tile{64, 256, 256, 4, 4, 1}, w1, a1));
  CHECK(apnn::rules::wgmma_stages_output(Tile{64, 256, 1024, 4, 4, 1}, w1, a1));
}

TEST_CASE("rules: every precision has a wgmma tile, within the register and shared-memory budgets") {
  for (int p = 1; p <= 8; ++p)
    for (int q = 1; q <= 8; ++q)
      for (Encoding we : kEncodings)
        for (Encoding xe : kEncodings) {
          const apnn::OperandFormat w{p, we}, x{q, xe};
          Tile t;
          INFO("w", p, " x", q, " ", static_cast<int>(we), "/", static_cast<int>(xe));
          REQUIRE(apnn::rules::wgmma_tile(&t, w, x));
          CHECK(apnn::rules::check_tile(t, w, x).empty());
          CHECK(apnn::rules::wgmma_tile_error(t, w, x).empty());
          CHECK(t.bm == 128);
          CHECK(t.warps_m * t.warps_n == 8);
          CHECK(apnn::rules::wgmma_shared_bytes(t, w, x) <= apnn::rules::kMaxSharedBytes);
        }
  Tile t;
  REQUIRE(apnn::rules::wgmma_tile(&t, {1, Encoding::Pm1}, {1, Encoding::Pm1}));
  CHECK(t == Tile{128, 256, 1024, 4, 8, 1});
  REQUIRE(apnn::rules::wgmma_tile(&t, {1, Encoding::Pm1}, {2, Encoding::Unsigned}));
  CHECK(t == Tile{128, 128, 1024, 4, 8, 1});
  REQUIRE(apnn::rules::wgmma_tile(&t, {2, Encoding::Signed}, {2, Encoding::Unsigned}));
  CHECK(t == Tile{128, 64, 1024, 4, 8, 1});
}

TEST_CASE("generator: a halo tile emits the halo core's entry on sm_90a and is refused elsewhere") {
  KernelSpec s;
  s.op = apnn::Op::Apconv;
  s.conv = {3, 3, 1, 1, 1, 1};
  s.w = {1, apnn::Encoding::Pm1};
  s.x = {2, apnn::Encoding::Unsigned};
  s.tile = apnn::Tile{128, 112, 256, 4, 8, 1, 1, true};
  const GeneratedSource g = apnn::generate(s, "sm_90a");
  CHECK(g.wgmma_core);
  CHECK(g.source.find("#include \"conv_sm90a_halo.cuh\"") != std::string::npos);
  CHECK(g.source.find("apnn::conv_sm90a_halo<Traits>") != std::string::npos);
  CHECK(g.source.find("apnn::HaloGeometry geo") != std::string::npos);
  CHECK(g.source.find("ConvSm90aHalo<Traits>::kThreads") != std::string::npos);
  CHECK(g.kernels.size() == 4);  // the conv entry and the three packing kernels
  for (const char* arch : {"sm_80", "sm_90"}) {
    try {
      (void)apnn::generate(s, arch);
      FAIL("a halo tile generated for ", arch);
    } catch (const apnn::Error& e) {
      CHECK(std::string(e.what()).find("tile.core \"halo\"") != std::string::npos);
      CHECK(std::string(e.what()).find(arch) != std::string::npos);
    }
  }
}

TEST_CASE("generator: a spec built in code with an int16 output it cannot have is InvalidSpec naming 'output'") {
  // parse_spec refuses these; a KernelSpec filled in code reaches the generator unparsed.
  KernelSpec chain = with_tile(make_spec(1, Encoding::Pm1, 2, Encoding::Unsigned), 64, 64, 512, 3, 2, 2);
  chain.epilogue.int16_out = true;
  chain.epilogue.ops.push_back(apnn::EpilogueOp{apnn::EpilogueOpKind::Relu});
  CHECK(chain.epilogue.output_type() == apnn::OutputType::Int32);  // the chain's, never int16
  CHECK_THROWS_WITH_AS(apnn::generate(chain), doctest::Contains("'output' \"int16\" needs a spec without an epilogue chain"),
                       apnn::Error);
  KernelSpec wide = with_tile(make_spec(8, Encoding::Pm1, 8, Encoding::Pm1), 32, 32, 256, 2, 2, 4);
  wide.epilogue.int16_out = true;
  CHECK_THROWS_WITH_AS(apnn::generate(wide), doctest::Contains("cannot hold one product"), apnn::Error);
  wide.epilogue.int16_out = false;
  CHECK_NOTHROW(apnn::generate(wide));
  KernelSpec plain = with_tile(make_spec(1, Encoding::Pm1, 2, Encoding::Unsigned), 64, 64, 512, 3, 2, 2);
  plain.epilogue.int16_out = true;
  CHECK(apnn::generate(plain).source.find("typedef apnn::i16 Out;") != std::string::npos);
  plain.epilogue.int16_out = false;
  CHECK(apnn::generate(plain).source.find("typedef apnn::i32 Out;") != std::string::npos);
}

TEST_CASE("rules: the int16 GPU test's tiles take the store paths it names") {
  // test_apmm_gpu's int16 cases: 128x256/1024 8x1 (w1a1) stages boxes in a pipeline slot on
  // the cp.async wgmma core; 128x128 st4 (w1a2, cluster 2) stages its whole int16 tile; 128x192
  // two boxes a warpgroup; 128x96 none (96 columns are not whole 64-column int16 boxes).
  KernelSpec slot = with_tile(make_spec(1, Encoding::Unsigned, 1, Encoding::Unsigned), 128, 256, 1024, 3, 8, 1);
  slot.epilogue.int16_out = true;
  CHECK(apnn::rules::use_wgmma(slot, "sm_90a"));
  CHECK(apnn::rules::wgmma_stages_output(*slot.tile, slot.w, slot.x));
  const auto staging = [](int bn, int stages) {
    KernelSpec s = make_spec(1, Encoding::Pm1, 2, Encoding::Unsigned);
    s.tile = Tile{128, bn, 1024, stages, 8, 1, 2};
    return apnn::rules::tma_output_staging_bytes(*s.tile, s.w, s.x, 2);
  };
  CHECK(staging(128, 4) == 128 * 128 * 2);
  CHECK(staging(192, 3) == 2 * 2 * apnn::rules::kTmaStagingBoxBytes);
  CHECK(staging(96, 3) == 0);
}

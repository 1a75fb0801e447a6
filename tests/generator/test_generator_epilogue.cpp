// Generated source of specs with fused epilogue chains: the struct Epi the generator emits
// (types, constants, straight-line ops) and that it compiles with NVRTC (no GPU needed).
#include <doctest/doctest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "apnn/spec.h"
#include "compiler/nvrtc_compiler.h"
#include "generator/generate.h"
#include "test_util.h"

namespace {

using apnn::GeneratedSource;
using apnn::KernelSpec;

const char* const kMm = R"("op":"apmm","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned")";
const char* const kConv = R"("op":"apconv","w_bits":1,"w_enc":"pm1","x_bits":2,"x_enc":"unsigned","kernel":[3,3],"pad":[1,1])";

KernelSpec spec_of(const char* head, const std::string& chain) {
  std::string text = std::string("{") + head;
  if (!chain.empty()) text += ",\"epilogue\":" + chain;
  return apnn::canonicalize(apnn::parse_spec_text(text + "}", "test"));
}

bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

// The struct Epi block of a generated source.
std::string epi_of(const GeneratedSource& g) {
  const size_t at = g.source.find("struct Epi {");
  REQUIRE(at != std::string::npos);
  const size_t end = g.source.find("\n};\n", at);
  REQUIRE(end != std::string::npos);
  return g.source.substr(at, end - at + 3);
}

const std::string kFullConv =
    R"([{"op":"scale_bias"},{"op":"relu"},{"op":"pool","kind":"max","size":2,"stride":2},{"op":"quantize","bits":2,"enc":"unsigned"}])";
const std::string kFullMm = R"([{"op":"scale_bias"},{"op":"relu"},{"op":"quantize","bits":2,"enc":"unsigned"}])";
const std::string kAvg3 = R"([{"op":"pool","kind":"avg","size":3,"stride":2}])";

}  // namespace

TEST_CASE("generator epilogue: struct Epi carries the chain's types, constants and ops") {
  {
    const GeneratedSource g = apnn::generate(spec_of(kMm, ""));
    const std::string epi = epi_of(g);
    CHECK(has(g.source, "// epilogue chain: none: int32 output"));
    CHECK(has(epi, "typedef apnn::i32 Staged;"));
    CHECK(has(epi, "typedef apnn::i32 Final;"));
    CHECK(has(epi, "kStaged = false, kPool = false"));
    CHECK(has(epi, "kQuantize = false"));
    CHECK_FALSE(has(epi, "fmaf"));
  }
  {
    const std::string epi = epi_of(apnn::generate(spec_of(kConv, kFullConv)));
    INFO(epi);
    CHECK(has(epi, "typedef float Staged;"));
    CHECK(has(epi, "typedef float Pooled;"));
    CHECK(has(epi, "typedef float Final;"));
    CHECK(has(epi, "kStaged = true, kPool = true, kPoolMax = true;"));
    CHECK(has(epi, "kPoolSize = 2, kPoolStride = 2;"));
    // With a pool the quantizer runs after it, on the pooled float: no thresholds.
    CHECK(has(epi, "kQuantize = true, kQPerChannel = false, kQThresholds = false;"));
    CHECK(has(epi, "kQBits = 2, kQEnc = 0;"));
    // pre: scale_bias then relu, in that order; post: nothing.
    const size_t fma = epi.find("const float x1 = fmaf(static_cast<float>(x0), a.scale[o], a.bias[o]);");
    const size_t relu = epi.find("const float x2 = x1 > 0.0f ? x1 : 0.0f;");
    CHECK(fma != std::string::npos);
    CHECK(relu != std::string::npos);
    CHECK(fma < relu);
    CHECK(has(epi, "return x2;"));
    CHECK(has(epi, "return x0;"));
  }
  {
    // Pool first: relu after it works on the pooled int32; avg makes the pooled value float.
    const std::string max_relu = epi_of(apnn::generate(
        spec_of(kConv, R"([{"op":"pool","kind":"max","size":3,"stride":1},{"op":"relu"}])")));
    CHECK(has(max_relu, "typedef apnn::i32 Pooled;"));
    CHECK(has(max_relu, "const apnn::i32 x1 = x0 > 0 ? x0 : 0;"));
    CHECK(has(max_relu, "kPoolSize = 3, kPoolStride = 1;"));
    const std::string avg = epi_of(apnn::generate(spec_of(kConv, kAvg3)));
    CHECK(has(avg, "typedef apnn::i32 Staged;"));
    CHECK(has(avg, "typedef float Pooled;"));
    CHECK(has(avg, "kPoolMax = false;"));
    CHECK(has(avg, "kPoolSize = 3, kPoolStride = 2;"));
    const std::string q = epi_of(apnn::generate(
        spec_of(kMm, R"([{"op":"quantize","bits":3,"enc":"signed","scale":"per_channel"}])")));
    CHECK(has(q, "kStaged = true, kPool = false"));
    // Without a pool, up to 3 bits: compares against per-channel accumulator thresholds.
    CHECK(has(q, "kQuantize = true, kQPerChannel = true, kQThresholds = true;"));
    CHECK(has(q, "kQBits = 3, kQEnc = 2;"));
    const std::string q4 = epi_of(apnn::generate(spec_of(kMm, R"([{"op":"quantize","bits":4,"enc":"unsigned"}])")));
    CHECK(has(q4, "kQThresholds = false;"));
  }
}

TEST_CASE("generator epilogue: the chain changes the source; defaults spelled out do not") {
  const std::vector<std::string> chains = {
      "", R"([{"op":"relu"}])", R"([{"op":"scale_bias"}])", kFullMm,
      R"([{"op":"scale_bias"},{"op":"relu"},{"op":"quantize","bits":2,"enc":"pm1"}])",
      R"([{"op":"scale_bias"},{"op":"relu"},{"op":"quantize","bits":2,"enc":"unsigned","scale":"per_channel"}])",
  };
  std::vector<GeneratedSource> gs;
  for (const auto& c : chains) gs.push_back(apnn::generate(spec_of(kMm, c)));
  for (size_t i = 0; i < gs.size(); ++i)
    for (size_t j = i + 1; j < gs.size(); ++j) {
      INFO(chains[i] << " vs " << chains[j]);
      CHECK(gs[i].source != gs[j].source);
    }
  const GeneratedSource spelled = apnn::generate(spec_of(
      kMm, R"([{"op":"scale_bias"},{"op":"relu"},{"op":"quantize","bits":2,"enc":"unsigned","scale":"per_tensor"}])"));
  CHECK(spelled.source == gs[3].source);
  // The Epi block is all the chain adds: the sources differ nowhere else.
  std::string plain = gs[0].source, relu = gs[1].source;
  plain.erase(plain.find("// epilogue chain:"), epi_of(gs[0]).size() + plain.find("struct Epi {") - plain.find("// epilogue chain:"));
  relu.erase(relu.find("// epilogue chain:"), epi_of(gs[1]).size() + relu.find("struct Epi {") - relu.find("// epilogue chain:"));
  CHECK(plain == relu);
}

TEST_CASE("generator epilogue: chain specs compile with NVRTC for sm_80 and sm_90a") {
  struct Job {
    const char* label;
    KernelSpec spec;
    const char* arch;
    apnn::CompiledCubin out;
    std::string error;
  };
  const std::string full_conv_no_pool =
      R"([{"op":"scale_bias"},{"op":"relu"},{"op":"quantize","bits":2,"enc":"unsigned"}])";
  std::vector<Job> jobs = {
      {"apmm scale_bias", spec_of(kMm, R"([{"op":"scale_bias"}])"), "sm_80", {}, {}},
      {"apmm relu", spec_of(kMm, R"([{"op":"relu"}])"), "sm_90a", {}, {}},
      {"apconv max pool 2/2", spec_of(kConv, R"([{"op":"pool","kind":"max","size":2,"stride":2}])"), "sm_80", {}, {}},
      {"apmm per-channel quantize",
       spec_of(kMm, R"([{"op":"scale_bias"},{"op":"quantize","bits":3,"enc":"signed","scale":"per_channel"}])"), "sm_90a", {},
       {}},
      {"apconv avg pool 3/2", spec_of(kConv, kAvg3), "sm_90a", {}, {}},
  };
  // Each op alone above (quantize inside the apmm chain: per-tensor quantize is the same code
  // with a constant changed); the two full conv chains; the pooled one on both targets. Eight
  // compiles of about 0.4 s: enough to catch a chain the templates cannot instantiate.
  jobs.push_back({"apconv scale_bias relu quantize", spec_of(kConv, full_conv_no_pool), "sm_80", {}, {}});
  for (const char* arch : {"sm_80", "sm_90a"})
    jobs.push_back({"apconv scale_bias relu pool quantize", spec_of(kConv, kFullConv), arch, {}, {}});
  const auto t0 = std::chrono::steady_clock::now();
  parallel_for(jobs.size(), 2, [&](size_t i) {
    try {
      jobs[i].out = apnn::compile_cubin(apnn::generate(jobs[i].spec), jobs[i].arch);
    } catch (const std::exception& e) {
      jobs[i].error = e.what();
    }
  });
  MESSAGE(jobs.size() << " NVRTC compiles in "
                      << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s");
  for (const Job& j : jobs) {
    INFO(j.label << " @ " << j.arch << ": " << apnn::canonical_json(j.spec));
    REQUIRE_MESSAGE(j.error.empty(), j.error);
    const std::vector<char>& c = j.out.cubin;
    REQUIRE(c.size() > 64);
    CHECK(std::memcmp(c.data(), "\x7f" "ELF", 4) == 0);
    const std::string bytes(c.begin(), c.end());
    for (const auto& k : apnn::generate(j.spec).kernels) CHECK(has(bytes, k));
  }
}

// The unfused baseline of a chain (the fusion benchmark's comparison) is generated from the
// same Epi as the fused kernel and compiles with NVRTC without a GPU.
#include <doctest/doctest.h>

#include "apnn/error.h"
#include "compiler/nvrtc_compiler.h"
#include "generator/generate.h"
#include "spec/epilogue.h"

TEST_CASE("unfused epilogue stages compile for a full chain and for pool+quantize") {
  apnn::KernelSpec s;
  s.op = apnn::Op::Apconv;
  s.conv = {3, 3, 1, 1, 1, 1};
  for (const char* chain :
       {R"([{"op":"scale_bias"},{"op":"relu"},{"op":"pool","kind":"max","size":2,"stride":2},{"op":"quantize","bits":2,"enc":"unsigned"}])",
        R"([{"op":"pool","kind":"avg","size":3,"stride":2},{"op":"quantize","bits":3,"enc":"pm1","scale":"per_channel"}])"}) {
    s.epilogue = apnn::parse_epilogue(nlohmann::json::parse(chain), true, "test");
    const apnn::GeneratedSource src = apnn::generate_unfused_epilogue(s);
    CHECK(src.kernels.size() == 3);
    CHECK(src.source.find("struct Epi") != std::string::npos);
    CHECK_FALSE(apnn::compile_cubin(src, "sm_90a").cubin.empty());
  }
}

TEST_CASE("unfused epilogue needs a chain that ends in quantize, of a conv or an APMM") {
  apnn::KernelSpec s;
  s.op = apnn::Op::Apconv;
  s.epilogue = apnn::parse_epilogue(nlohmann::json::parse(R"([{"op":"relu"}])"), true, "test");
  CHECK_THROWS_WITH_AS(apnn::generate_unfused_epilogue(s), doctest::Contains("ends in quantize"), apnn::Error);
  // APMM's M x N output is one image of M channels by N pixels: the same stages take it.
  s.op = apnn::Op::Apmm;
  s.conv = {};
  s.epilogue = apnn::parse_epilogue(
      nlohmann::json::parse(R"([{"op":"scale_bias"},{"op":"quantize","bits":4,"enc":"signed","scale":"per_channel"}])"),
      false, "test");
  const apnn::GeneratedSource src = apnn::generate_unfused_epilogue(s);
  CHECK(src.kernels.size() == 3);
  CHECK_FALSE(apnn::compile_cubin(src, "sm_90a").cubin.empty());
  s.epilogue = {};
  CHECK_THROWS_AS(apnn::generate_unfused_epilogue(s), apnn::Error);
}

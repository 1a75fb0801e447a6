// Turns a validated, canonical spec into self-contained CUDA source: a short
// instantiation of a device template (templates/*.cuh) with the spec's integers.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "apnn/spec.h"

namespace apnn {

struct GeneratedSource {
  std::string name;                                          // e.g. "apmm_w1pm1_x2unsigned.cu"
  std::string source;
  std::vector<std::pair<std::string, std::string>> headers;  // (include name, content): the templates
  std::vector<std::string> kernels;                          // extern "C" entry points it defines
  bool wgmma_core = false;  // the sm_90a wgmma core was emitted (its launch differs: runners read this)
};

// Bumped whenever the generator or a template changes what it emits for the same spec.
inline constexpr const char* kGeneratorVersion = "apnn-generator-84";

// Entry points: APMM modules have the GEMM and both packers; APConv modules the conv,
// both packers and the activation unpacker.
inline constexpr const char* kApmmKernel = "apnn_apmm";
inline constexpr const char* kConvKernel = "apnn_conv";
inline constexpr const char* kPackWKernel = "apnn_pack_w";
inline constexpr const char* kPackXKernel = "apnn_pack_x";
inline constexpr const char* kUnpackXKernel = "apnn_unpack_x";
inline constexpr int kPackThreads = 256;

// `spec` must be canonical (tile filled): throws Error(InvalidSpec) otherwise. `arch` is the
// target: on sm_90a an APMM or APConv tile that suits it gets the wgmma core (rules::use_wgmma),
// everywhere else the mma.sync core; empty means no arch-specific core.
GeneratedSource generate(const KernelSpec& spec, const std::string& arch = "");

// The unfused baseline of a conv or APMM spec's chain (templates/unfused_epilogue.cuh; APMM's
// M x N output is one image of M channels), one kernel per stage, for the fusion benchmark.
// The chain must end in quantize.
inline constexpr const char* kUnfusedPreKernel = "apnn_unfused_pre";
inline constexpr const char* kUnfusedPoolKernel = "apnn_unfused_pool";
inline constexpr const char* kUnfusedQuantizeKernel = "apnn_unfused_quantize";
GeneratedSource generate_unfused_epilogue(const KernelSpec& spec);

}  // namespace apnn

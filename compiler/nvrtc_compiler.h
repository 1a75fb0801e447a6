// NVRTC: generated source -> cubin for a named architecture. No GPU needed.
#pragma once
#include <string>
#include <vector>

#include "generator/generate.h"

namespace apnn {

struct CompiledCubin {
  std::vector<char> cubin;
  std::string log;   // NVRTC's log (warnings), may be empty
  double ms = 0.0;   // wall time of nvrtcCompileProgram + nvrtcGetCUBIN
};

// "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a".
const std::vector<std::string>& supported_archs();
bool is_supported_arch(const std::string& arch);
// Throws Error(InvalidInput) naming the arch and the allowed ones.
void check_arch(const std::string& arch);

std::string nvrtc_version();                                    // e.g. "13.0"
// Whether environment variable `name` is set and not "0".
bool env_flag(const char* name);
// NVRTC options for arch (with --generate-line-info when APNN_LINEINFO is set and not "0",
// -DAPNN_TIMELINE=1 when APNN_TIMELINE is, ptxas's -v when APNN_PTXAS_INFO is).
std::vector<std::string> compile_options(const std::string& arch);

// Throws Error(Compile) carrying NVRTC's log and the path of a directory holding the
// dumped source and headers (so the failure can be reproduced with nvcc).
CompiledCubin compile_cubin(const GeneratedSource& src, const std::string& arch);

}  // namespace apnn

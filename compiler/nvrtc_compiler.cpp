#include "compiler/nvrtc_compiler.h"

#include <nvrtc.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "apnn/error.h"

namespace apnn {

namespace {

// Owns an nvrtcProgram so every exit path destroys it.
struct Program {
  nvrtcProgram prog = nullptr;
  ~Program() {
    if (prog) nvrtcDestroyProgram(&prog);
  }
};

std::string dump_failed_source(const GeneratedSource& src) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = (fs::path(tmp ? tmp : "/tmp") / "apnn-failed-XXXXXX").string();
  if (!mkdtemp(pattern.data())) return "(could not dump the source)";
  const fs::path dir(pattern);
  std::ofstream(dir / src.name) << src.source;
  for (const auto& [name, content] : src.headers) std::ofstream(dir / name) << content;
  return (dir / src.name).string();
}

std::string program_log(nvrtcProgram prog) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(prog, &size) != NVRTC_SUCCESS || size <= 1) return {};
  std::string log(size, '\0');
  nvrtcGetProgramLog(prog, log.data());
  log.resize(size - 1);
  return log;
}

void check(nvrtcResult r, const char* call) {
  if (r != NVRTC_SUCCESS) throw Error(ErrorKind::Compile, fmt::format("{} failed: {}", call, nvrtcGetErrorString(r)));
}

}  // namespace

const std::vector<std::string>& supported_archs() {
  static const std::vector<std::string> archs = {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"};
  return archs;
}

bool is_supported_arch(const std::string& arch) {
  for (const auto& a : supported_archs())
    if (a == arch) return true;
  return false;
}

void check_arch(const std::string& arch) {
  if (!is_supported_arch(arch))
    throw Error(ErrorKind::InvalidInput,
                fmt::format("arch '{}' is not supported (one of {})", arch, fmt::join(supported_archs(), ", ")));
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return fmt::format("{}.{}", major, minor);
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

std::vector<std::string> compile_options(const std::string& arch) {
  std::vector<std::string> o = {"--gpu-architecture=" + arch, "-std=c++17", "-default-device", "--extra-device-vectorization"};
  // APNN_LINEINFO set and not "0": source line tables in the cubin, for Nsight Compute's
  // source view (the options are part of the cache key, so such cubins are cached apart).
  if (env_flag("APNN_LINEINFO")) o.push_back("--generate-line-info");
  // APNN_TIMELINE likewise: per-block phase timestamps in the TMA core (templates/timeline.cuh),
  // read by `apnn verify --timeline`.
  if (env_flag("APNN_TIMELINE")) o.push_back("-DAPNN_TIMELINE=1");
  // APNN_PTXAS_INFO: ptxas's register and spill counts per kernel in the compile log
  // (test_compiler checks that the kernels of three blocks per SM spill nothing).
  if (env_flag("APNN_PTXAS_INFO")) o.push_back("--ptxas-options=-v");
  return o;
}

CompiledCubin compile_cubin(const GeneratedSource& src, const std::string& arch) {
  check_arch(arch);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<const char*> header_src, header_names;
  for (const auto& [name, content] : src.headers) {
    header_names.push_back(name.c_str());
    header_src.push_back(content.c_str());
  }
  Program p;
  check(nvrtcCreateProgram(&p.prog, src.source.c_str(), src.name.c_str(), static_cast<int>(header_src.size()),
                           header_src.data(), header_names.data()),
        "nvrtcCreateProgram");
  const std::vector<std::string> opts = compile_options(arch);
  std::vector<const char*> opt_ptrs;
  for (const auto& o : opts) opt_ptrs.push_back(o.c_str());
  const nvrtcResult r = nvrtcCompileProgram(p.prog, static_cast<int>(opt_ptrs.size()), opt_ptrs.data());
  CompiledCubin out;
  out.log = program_log(p.prog);
  if (r != NVRTC_SUCCESS) {
    const std::string where = dump_failed_source(src);
    throw Error(ErrorKind::Compile, fmt::format("NVRTC failed to compile {} for {} ({}); source dumped to {}\n{}", src.name,
                                                arch, nvrtcGetErrorString(r), where, out.log));
  }
  size_t size = 0;
  check(nvrtcGetCUBINSize(p.prog, &size), "nvrtcGetCUBINSize");
  out.cubin.resize(size);
  check(nvrtcGetCUBIN(p.prog, out.cubin.data()), "nvrtcGetCUBIN");
  out.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace apnn

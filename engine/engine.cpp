#include "apnn/engine.h"

#include <chrono>

#include <fmt/format.h>

#include "apnn/bitplane_layout.h"
#include "compiler/nvrtc_compiler.h"
#include "generator/generate.h"
#include "runtime/device.h"
#include "runtime/module.h"

namespace apnn {

Engine::Engine() : cache_(DiskCache::from_environment()) {}
Engine::Engine(DiskCache cache) : cache_(std::move(cache)) {}
// The disk cache flushes counters when it is destroyed (after this body): hand it ours first.
Engine::~Engine() { cache_.add_counters(local_); }

CompileResult Engine::compile(const KernelSpec& spec, const std::string& arch) {
  check_arch(arch);
  return compile_locked_out(canonicalize(spec), arch);
}

CompileResult Engine::compile_locked_out(const KernelSpec& canonical, const std::string& arch) {
  CompileResult r;
  r.spec = canonical;
  r.canonical = to_json(canonical).dump();
  r.arch = arch;
  const GeneratedSource src = generate(canonical, arch);
  r.wgmma_core = src.wgmma_core;

  // Everything that changes the binary, and nothing NVRTC produced (PTX is not deterministic).
  const std::string options = fmt::format("{}", fmt::join(compile_options(arch), " "));
  const std::string nvrtc = nvrtc_version();
  const std::string layout = std::to_string(kBitplaneLayoutVersion);
  std::vector<std::string_view> parts = {kGeneratorVersion, r.canonical, src.source, arch, nvrtc, options, layout};
  for (const auto& [name, content] : src.headers) {
    parts.push_back(name);
    parts.push_back(content);
  }
  r.key = hash_key(parts);

  bool compiled = false;
  DiskCache::Fetched f = cache_.get_or_create(arch, r.key, r.canonical, [&] {
    CompiledCubin c = compile_cubin(src, arch);
    r.compile_ms = c.ms;
    compiled = true;
    return std::move(c.cubin);
  });
  r.source = compiled ? CompileResult::Source::Compiled : CompileResult::Source::Disk;
  r.cubin = std::move(f.payload);
  return r;
}

std::shared_ptr<Kernel> Engine::kernel(const KernelSpec& spec) {
  const DeviceInfo& dev = current_device();
  const KernelSpec canonical = spec.tile ? spec : canonicalize(spec);
  const std::string id = spec_id(canonical) + "@" + dev.arch();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = loaded_.find(id);
    if (it != loaded_.end()) {
      ++local_.memory_hits;
      return it->second;
    }
  }
  auto k = std::make_shared<Kernel>();
  k->compiled = compile_locked_out(canonical, dev.arch());
  const auto t0 = std::chrono::steady_clock::now();
  k->module = std::make_unique<LoadedModule>(k->compiled.cubin,
                                             fmt::format("spec {} on {} ({})", k->compiled.canonical, dev.name, dev.arch()));
  const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::lock_guard<std::mutex> lock(mu_);
  local_.load_ms += load_ms;
  return loaded_.emplace(id, std::move(k)).first->second;  // a racing thread's module wins; ours is dropped
}

CacheCounters Engine::counters() {
  CacheCounters c = cache_.counters();
  std::lock_guard<std::mutex> lock(mu_);
  c += local_;
  return c;
}

}  // namespace apnn
